#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/afxdp_queues.sh: AF_XDP ports with two queues, one driver
# instance per queue.
#
#   ns A (10.73.N.2) --veth, 2 queues-- [ns R: ringrouter, ports a and b with
#   queues = 2: driver-a, driver-a.1, driver-b, driver-b.1] --veth, 2 queues-- ns B
#
# Checks: a start with a queue more than the veth has fails naming the port,
# the queue and the remedy; each queue gets its own socket and driver (the
# log, status), [service driver-a.1] overrides [service driver-a] (its cpu);
# iperf3 TCP with 16 streams through the router: both RX queues of port a
# receive (the sender's veth spreads flows over its TX queues) and the router
# spreads the flows over both queues of port b, and 16 IPv6 UDP flows
# as well; kill -9 of driver-a.1 under
# TCP: the flows carry on, it is restarted, the other instances are not;
# census clean at shutdown.
# Skips (77) when not root, a tool is missing, or the kernel has no AF_XDP.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init afxdp_queues
rr_need iperf3 ss ethtool
rr_afxdp_init

PORT=5201
rr_three_ns 73 74
RR_SERVICES=(router driver-a driver-a.1 driver-b driver-b.1)

rr_veth_host "$NS_A" xa0 xa1 "$NS_R" "$HOST_A" "$GW_A" 2
rr_veth_host "$NS_B" xb0 xb1 "$NS_R" "$HOST_B" "$GW_B" 2
# IPv6 too, for the flow hash's IPv6 half (section 3b).
P6_A=2001:db8:73:$(printf '%x' $(($$ % 250 + 1))) P6_B=2001:db8:74:$(printf '%x' $(($$ % 250 + 1)))
ip -n "$NS_A" -6 addr add "$P6_A::2/64" dev xa0 nodad && ip -n "$NS_A" -6 route add default via "$P6_A::1" dev xa0 &&
    ip -n "$NS_B" -6 addr add "$P6_B::2/64" dev xb0 nodad && ip -n "$NS_B" -6 route add default via "$P6_B::1" dev xb0 ||
    rr_fail "the hosts' IPv6 addresses and routes"

manifest() { # manifest FILE QUEUES
    {
        printf '[router]\nname = aq%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
        printf '[port a]\ndriver = afxdp\nifname = xa1\naddress = %s/24\naddress6 = %s::1/64\nqueues = %s\n\n' "$GW_A" "$P6_A" "$2"
        printf '[port b]\ndriver = afxdp\nifname = xb1\naddress = %s/24\naddress6 = %s::1/64\nqueues = 2\n\n' "$GW_B" "$P6_B"
        printf '[service driver-a]\ncpu = 1\nhang_ms = 3000\n\n'
        printf '[service driver-a.1]\ncpu = 0\n'
    } >"$1"
    "$RR" check -c "$1" >/dev/null || rr_fail "the manifest does not check: $(cat "$1")"
}

# 1. More queues than the device has: a clear error, nothing left behind.
manifest "$RR_T/q3.ini" 3
out=$(rr_in "$NS_R" timeout 20 "$RR" up -c "$RR_T/q3.ini" 2>&1)
rc=$?
[ $rc -ne 0 ] || rr_fail "queues = 3 on a 2-queue veth started"
grep -q 'Address family not supported' <<<"$out" && rr_skip "AF_XDP sockets unavailable: $out"
grep -q 'port a: AF_XDP socket on xa1 queue 2: bind: Invalid argument (queues = 3, but xa1 may have fewer RX queues: see ethtool -l xa1)' <<<"$out" ||
    rr_fail "queues = 3: unexpected message (exit $rc): $out"
ip -n "$NS_R" -d link show xa1 | grep -q 'prog/xdp' && rr_fail "a refused start left an XDP program on xa1"
rr_ok "queues = 3 on a 2-queue veth refused: $(grep -o 'port a: AF_XDP socket on xa1 queue 2[^)]*)' <<<"$out")"

# 2. Two queues per port.
manifest "$RR_T/m.ini" 2
ip netns exec "$NS_R" "$RR" up -c "$RR_T/m.ini" 2>>"$RR_LOG" & # not rr_in: $! must be the supervisor
RR_PID=$!
rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "not every service was up within 10 s"
rr_alive "$RR_PID" || rr_fail "the supervisor exited at start"
for q in 0 1; do
    grep -q "port a: AF_XDP on xa1 queue $q" "$RR_LOG" || rr_fail "no socket line for xa1 queue $q in the log"
done
cpus=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/${RR_PIDS[driver-a.1]}/status")
[ "$cpus" = 0 ] || rr_fail "driver-a.1 runs on CPUs $cpus, its [service driver-a.1] says cpu = 0"
cpus=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/${RR_PIDS[driver-a]}/status")
[ "$cpus" = 1 ] || rr_fail "driver-a runs on CPUs $cpus, its [service driver-a] says cpu = 1"
rr_ok "up: ${RR_SERVICES[*]}; driver-a on CPU 1, driver-a.1 on CPU 0 (its own section)"

out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
rr_ok "ping A -> B through the router: $(tail -n 1 <<<"$out")"

rr_iperf_server "$NS_B" "$HOST_B" $PORT

tcp() { # tcp LABEL SECS: MBIT and MININT (the slowest one-second interval)
    local j=$RR_T/$1.json
    rr_in "$NS_A" timeout 60 iperf3 -c "$HOST_B" -p $PORT -t "$2" -P 16 --connect-timeout 3000 -J \
        >"$j" 2>"$RR_T/$1.err" || rr_fail "iperf3 $1 failed: $(head -c 2000 "$j") $(cat "$RR_T/$1.err")"
    read -r MBIT MININT < <("$RR_PY" - "$j" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("%.1f" % (d["end"]["sum_received"]["bits_per_second"] / 1e6),
      "%.1f" % min(i["sum"]["bits_per_second"] / 1e6 for i in d["intervals"]))
EOF
) || rr_fail "iperf3 $1: cannot read $j"
}

# 3. Both queues carry traffic, each way.
rr_stats || rr_fail "stats"
declare -A c0
for k in driver-a.rx_pkts driver-a.1.rx_pkts driver-b.tx_pkts driver-b.1.tx_pkts; do c0[$k]=$(rr_ctr $k); done
tcp spread 3
rr_stats || rr_fail "stats"
for k in driver-a.rx_pkts driver-a.1.rx_pkts driver-b.tx_pkts driver-b.1.tx_pkts; do
    d=$(($(rr_ctr $k) - ${c0[$k]}))
    [ "$d" -gt 100 ] || rr_fail "16 TCP streams: $k grew by $d only (the flows did not spread over both queues)"
done
rr_ok "iperf3 TCP, 16 streams: $MBIT Mbit/s; RX on a's queues $(($(rr_ctr driver-a.rx_pkts) - ${c0[driver-a.rx_pkts]}))/$(($(rr_ctr driver-a.1.rx_pkts) - ${c0[driver-a.1.rx_pkts]})), TX on b's queues $(($(rr_ctr driver-b.tx_pkts) - ${c0[driver-b.tx_pkts]}))/$(($(rr_ctr driver-b.1.tx_pkts) - ${c0[driver-b.1.tx_pkts]})) packets"

# 3b. IPv6 flows spread over port b's queues too: 16 UDP flows A -> B.
rr_stats || rr_fail "stats"
for k in driver-b.tx_pkts driver-b.1.tx_pkts; do c0[$k]=$(rr_ctr $k); done
ip netns exec "$NS_B" iperf3 -s -1 -B "$P6_B::2" -p $((PORT + 1)) >"$RR_T/srv6.log" 2>&1 &
RR_EXTRA_PIDS+=($!)
rr_wait 5 eval "rr_in $NS_B ss -Hltn 'sport = :$((PORT + 1))' | grep -q LISTEN" || rr_fail "iperf3 -6 server did not listen"
rr_in "$NS_A" timeout 30 iperf3 -6 -c "$P6_B::2" -p $((PORT + 1)) -u -b 2M -l 200 -t 2 -P 16 --connect-timeout 3000 \
    >"$RR_T/udp6.out" 2>&1 || rr_fail "iperf3 -6 UDP: $(tail -n 5 "$RR_T/udp6.out")"
rr_stats || rr_fail "stats"
for k in driver-b.tx_pkts driver-b.1.tx_pkts; do
    d=$(($(rr_ctr $k) - ${c0[$k]}))
    [ "$d" -gt 100 ] || rr_fail "16 IPv6 UDP flows: $k grew by $d only (IPv6 flows did not spread over b's queues)"
done
rr_ok "iperf3 -6 UDP, 16 flows: TX on b's queues $(($(rr_ctr driver-b.tx_pkts) - ${c0[driver-b.tx_pkts]}))/$(($(rr_ctr driver-b.1.tx_pkts) - ${c0[driver-b.1.tx_pkts]})) packets"

# 4. kill -9 of one queue's driver under TCP: the flows carry on.
rr_status || rr_fail "status"
declare -A pid0
for s in "${RR_SERVICES[@]}"; do pid0[$s]=${RR_PIDS[$s]}; done
(
    rr_msleep 1500
    kill -KILL "${RR_PIDS[driver-a.1]}"
) &
killer=$!
tcp kill 5
wait "$killer"
awk -v r="$MININT" 'BEGIN { exit !(r > 0) }' || rr_fail "TCP under the kill: a one-second interval carried nothing"
rr_wait 5 rr_all_up || rr_fail "not every service came back up"
[ "${RR_RESTARTS[driver-a.1]}" -ge 1 ] || rr_fail "driver-a.1 was not restarted"
for s in router driver-a driver-b driver-b.1; do
    [ "${RR_PIDS[$s]}" = "${pid0[$s]}" ] || rr_fail "$s restarted when only driver-a.1 was killed"
done
out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B after the kill: $out"
rr_ok "kill -9 driver-a.1 under 16 TCP streams: $MBIT Mbit/s, slowest second $MININT Mbit/s; only driver-a.1 restarted"

rr_stats || rr_fail "stats"
for r in rx-a.1 rx-b.1 tx-a.1 tx-b.1; do
    for c in drop_bad_handle drop_bad_owner drop_bad_frame drop_bad_chain; do RR_MALFORMED+=("ring.$r.$c"); done
done
rr_zero "${RR_MALFORMED[@]}"
rr_ok "no malformed-input drops or bad handles"

# 5. Shutdown: every buffer back, including those the four sockets held.
rr_stop
rr_census_ok
ip -n "$NS_R" -d link show xa1 | grep -q 'prog/xdp' && rr_fail "an XDP program is still attached after shutdown"
printf 'PASS afxdp_queues: TCP 16 streams %s Mbit/s\n' "$MBIT"
