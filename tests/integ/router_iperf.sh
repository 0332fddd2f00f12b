#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_iperf.sh: iperf3 through the real router (rr-router)
# between two TAP ports in two namespaces:
#   - TCP A -> B, 1 stream and 4 streams; TCP B -> A (reverse), 1 stream;
#   - UDP A -> B at 100 Mbit/s;
# each must carry data (above RR_IPERF_MIN_MBIT, default 20 Mbit/s; UDP also
# losing less than 20 % of what was sent). Then a ping still works, no
# counter of malformed input or bad handles moved, nothing restarted, and at
# shutdown every buffer is back in the pool. Before that, kill -9 of each
# TAP driver under an iperf3 TCP stream: the driver is replaced and the
# stream carries on. Then an unpaced 64-byte flood (trafgen): no frame is
# read only to be dropped at the router's full ring.
# RR_IPERF_SECS (default 2: two of iperf3's one-second reports) sets each
# run's length; RR_FRAME_SIZE the pool's frame_size (tap_large_frames.sh
# runs this with 32768).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_iperf
rr_need iperf3 ss trafgen

SECS=${RR_IPERF_SECS:-2}
MIN_MBIT=${RR_IPERF_MIN_MBIT:-20}
PORT=5201

rr_topology
rr_start
rr_ok "router up: A $RR_HOST_A -- [router] -- B $RR_HOST_B"

# With RR_SCHED=batch every service, and every replacement, runs SCHED_BATCH
# (the policy is field 41 of /proc/PID/stat; SCHED_BATCH is 3).
sched_ok() { # LABEL
    [ "${RR_SCHED:-}" = batch ] || return 0
    local label=$1 s f
    rr_status || rr_fail "status"
    for s in "${RR_SERVICES[@]}"; do
        f=$(cat "/proc/${RR_PIDS[$s]}/stat") || rr_fail "$s: no /proc/${RR_PIDS[$s]}/stat"
        f=${f##*) }
        set -- $f
        [ "${39}" = 3 ] || rr_fail "$label: $s (pid ${RR_PIDS[$s]}) runs scheduling policy ${39}, its [service] says sched = batch (3)"
    done
    rr_ok "$label: every service runs SCHED_BATCH"
}
sched_ok "at start"

# Resolve both ways first, so the first iperf3 connect does not wait for ARP.
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"

# iperf3 servers: one in each namespace, ours by PID (ip netns exec execs).
ip netns exec "$RR_NS_B" iperf3 -s -B "$RR_HOST_B" -p $PORT >"$RR_T/srv-b.log" 2>&1 &
RR_EXTRA_PIDS+=($!)
ip netns exec "$RR_NS_A" iperf3 -s -B "$RR_HOST_A" -p $PORT >"$RR_T/srv-a.log" 2>&1 &
RR_EXTRA_PIDS+=($!)
listening() { rr_in "$1" ss -Hltn "sport = :$PORT" | grep -q LISTEN; }
rr_wait 5 listening "$RR_NS_B" || rr_fail "iperf3 server in B did not listen: $(cat "$RR_T/srv-b.log")"
rr_wait 5 listening "$RR_NS_A" || rr_fail "iperf3 server in A did not listen: $(cat "$RR_T/srv-a.log")"

# iperf_run LABEL NS SERVER ARGS...: runs the client, sets IPERF_R to
# "RX_MBIT LOSS% TX_MBIT RETRANSMITS|LOST"; fails the test if the client fails.
iperf_run() {
    local label=$1 ns=$2 srv=$3
    shift 3
    local j=$RR_T/$label.json
    # A bounded client: timeout(1) for a stall, iperf3's own for connecting.
    if ! rr_in "$ns" timeout 60 iperf3 -c "$srv" -p $PORT -t "$SECS" --connect-timeout 3000 -J "$@" \
        >"$j" 2>"$RR_T/$label.err"; then
        rr_fail "iperf3 $label failed: $(head -c 2000 "$j") $(cat "$RR_T/$label.err")"
    fi
    IPERF_R=$("$RR_PY" - "$j" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["end"]
rx, tx = e["sum_received"], e["sum_sent"]
if d["start"]["test_start"]["protocol"] == "UDP":
    print("%.1f" % (rx["bits_per_second"] / 1e6), "%.2f" % rx["lost_percent"],
          "%.1f" % (tx["bits_per_second"] / 1e6), rx["lost_packets"])
else:
    print("%.1f" % (rx["bits_per_second"] / 1e6), "0",
          "%.1f" % (tx["bits_per_second"] / 1e6), tx.get("retransmits", 0))
EOF
) || rr_fail "iperf3 $label: cannot read $j: $(head -c 2000 "$j")"
}

rr_stats || rr_fail "stats"
fwd0=$(rr_ctr router.forwarded)
declare -A MBIT
check_tcp() { # check_tcp LABEL NS SERVER ARGS...
    local label=$1 rx loss tx retr
    iperf_run "$@"
    read -r rx loss tx retr <<<"$IPERF_R"
    awk -v r="$rx" -v m="$MIN_MBIT" 'BEGIN { exit !(r >= m) }' ||
        rr_fail "iperf3 $label: $rx Mbit/s received, expected >= $MIN_MBIT"
    MBIT[$label]=$rx
    rr_ok "iperf3 $label: $rx Mbit/s received ($tx sent, $retr retransmits)"
}
check_tcp tcp1 "$RR_NS_A" "$RR_HOST_B"
check_tcp tcp4 "$RR_NS_A" "$RR_HOST_B" -P 4
check_tcp tcp1-ba "$RR_NS_B" "$RR_HOST_A"

iperf_run udp "$RR_NS_A" "$RR_HOST_B" -u -b 100M -l 1400
read -r rx loss tx lost <<<"$IPERF_R"
# The sender may not reach 100 Mbit/s on a loaded machine; what it sent must
# mostly arrive.
awk -v r="$rx" -v l="$loss" -v m="$MIN_MBIT" 'BEGIN { exit !(r >= m && l < 20) }' ||
    rr_fail "iperf3 UDP 100M: $rx Mbit/s delivered ($loss% lost of $tx Mbit/s), expected >= $MIN_MBIT and < 20% lost"
MBIT[udp]=$rx
rr_ok "iperf3 UDP -b 100M: $rx Mbit/s delivered of $tx sent, $loss% lost ($lost datagrams)"

rr_stats || rr_fail "stats"
fwd1=$(rr_ctr router.forwarded)
[ $((fwd1 - fwd0)) -gt 10000 ] || rr_fail "the router forwarded only $((fwd1 - fwd0)) packets"
rr_ok "router forwarded $((fwd1 - fwd0)) packets; tx ring full_drops a $(rr_ctr ring.tx-a.full_drops) b $(rr_ctr ring.tx-b.full_drops), rx ring full_drops a $(rr_ctr ring.rx-a.full_drops) b $(rr_ctr ring.rx-b.full_drops), drop_gso_too_big $(rr_ctr router.drop_gso_too_big), pool alloc_fail $(rr_ctr pool.alloc_fail)"
# GSO frames crossed whole, as chains of pool frames no longer than the
# longest frame a TAP hands over (64 KB + headers) needs.
fs=${RR_FRAME_SIZE:-2048}
chain_bound=$((1 + (65554 - (fs - 256) + fs - 1) / fs))
gso=$(rr_ctr driver-b.tx_gso_pkts) cmax=$(rr_ctr driver-a.rx_chain_max)
[ "$gso" -gt 0 ] || rr_fail "no GSO packet crossed the router (driver-b tx_gso_pkts 0)"
[ "$cmax" -ge 2 ] && [ "$cmax" -le "$chain_bound" ] ||
    rr_fail "driver-a rx_chain_max $cmax: expected GSO chains of 2..$chain_bound frames of $fs bytes"
rr_ok "GSO: $gso packets written whole by driver-b; longest chain $cmax frames of $fs bytes (at most $chain_bound)"
rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
rr_ok "no malformed-input drops, no bad handles, no restarts"

out=$(rr_in "$RR_NS_B" ping -n -c 3 -i 0.2 -W 2 "$RR_HOST_A" 2>&1) || rr_fail "ping B -> A after iperf3: $out"
rr_ok "ping B -> A after the load: ok"

# kill -9 of each TAP driver under iperf3 TCP (A -> B): the supervisor
# restarts it on the same TAP fd, and the stream carries on to its end.
# The kill lands mid-stream: once 2000 more GSO packets have crossed.
streaming() { rr_stats && [ "$(rr_ctr driver-b.tx_gso_pkts)" -ge "$1" ]; }
replaced() { rr_status && [ "${RR_STATE[$1]}" = up ] && [ "${RR_PIDS[$1]}" != "$2" ]; }
for victim in driver-a driver-b; do
    rr_status || rr_fail "status"
    old=${RR_PIDS[$victim]}
    rr_stats || rr_fail "stats"
    gso0=$(rr_ctr driver-b.tx_gso_pkts)
    j=$RR_T/kill-$victim.json
    rr_in "$RR_NS_A" timeout 60 iperf3 -c "$RR_HOST_B" -p $PORT -t 3 --connect-timeout 3000 -J >"$j" 2>&1 &
    ipid=$!
    rr_wait 5 streaming $((gso0 + 2000)) || rr_fail "kill $victim: the iperf3 stream did not get going: $(head -c 2000 "$j")"
    kill -KILL "$old" || rr_fail "kill -9 $victim (pid $old) failed"
    rr_wait 5 replaced "$victim" "$old" || rr_fail "$victim (pid $old) was not replaced within 5 s"
    wait "$ipid" || rr_fail "iperf3 across the kill of $victim failed: $(head -c 2000 "$j")"
    rx=$("$RR_PY" -c 'import json,sys; print("%.1f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))' "$j") ||
        rr_fail "iperf3 across the kill of $victim: cannot read $j"
    awk -v r="$rx" -v m="$MIN_MBIT" 'BEGIN { exit !(r >= m) }' ||
        rr_fail "iperf3 across the kill of $victim: $rx Mbit/s, expected >= $MIN_MBIT"
    rr_ok "kill -9 $victim (pid $old) under iperf3 TCP: replaced by pid ${RR_PIDS[$victim]}, the stream carried on ($rx Mbit/s over 3 s)"
done

# An unpaced 64-byte flood from trafgen (on this machine more than the
# router forwards): driver-a arms no more reads than the router's ring has
# room for, so it never reads a frame only to drop it at a full ring
# (rx_drop_ring_full stays 0: the excess waits in, and overflows from, the
# TAP's own queue), and forwarding goes on.
mac_gw=$(rr_router_mac "$RR_NS_A" "$RR_GW_A")
mac_a=$(rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/address")
[ -n "$mac_gw" ] || rr_fail "no neighbour entry for the router's $RR_GW_A in A"
echo "{ eth(da=$mac_gw, sa=$mac_a, type=0x0800), ipv4(saddr=$RR_HOST_A, daddr=$RR_HOST_B, ttl=64, df), udp(sp=10000, dp=9), fill(0x00, 18) }" >"$RR_T/flood.cfg"
rr_stats || rr_fail "stats"
fwd0=$(rr_ctr router.forwarded) full0=$(rr_ctr driver-a.rx_drop_ring_full)
qdrop0=$(rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/statistics/tx_dropped")
# -n bounds it even if nobody stops it.
rr_trafgen_start "$RR_NS_A" "$RR_IF_A" "$RR_T/flood.cfg" -n 6000000
flooded() { rr_stats && [ $(($(rr_ctr router.forwarded) - fwd0)) -ge 300000 ]; }
rr_wait 20 flooded || rr_fail "the flood: only $(($(rr_ctr router.forwarded) - fwd0)) packets forwarded in 20 s: $(cat "$RR_T/trafgen.log")"
rr_trafgen_stop
rr_stats || rr_fail "stats"
full=$(($(rr_ctr driver-a.rx_drop_ring_full) - full0))
qdrop=$(($(rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/statistics/tx_dropped") - qdrop0))
[ "$full" = 0 ] || rr_fail "the flood: driver-a read $full frames only to drop them at the router's full ring"
out=$(rr_in "$RR_NS_A" ping -n -c 3 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B after the flood: $out"
rr_ok "64-byte flood: $(($(rr_ctr router.forwarded) - fwd0)) packets forwarded, none read to be dropped at a full ring; the TAP's queue dropped $qdrop; ping ok"

sched_ok "after the kills"

rr_stop
rr_census_ok
printf 'PASS router_iperf: TCP 1 stream %s Mbit/s, 4 streams %s Mbit/s, B->A %s Mbit/s, UDP %s Mbit/s\n' \
    "${MBIT[tcp1]}" "${MBIT[tcp4]}" "${MBIT[tcp1-ba]}" "${MBIT[udp]}"
