#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/afxdp_basic.sh: the router between two AF_XDP ports on veth.
#
#   ns A (host 10.71.N.2) --veth-- [ns R: ringrouter, ports a, b on the
#   veth ends, AF_XDP copy mode] --veth-- ns B (host 10.72.N.2)
#
# The supervisor runs inside R (ip netns exec R ringrouter up). R's own
# kernel also has an address on port a's veth (10.71.N.254): with the
# default steer = forward-only its frames stay with the host, so R keeps
# answering on it while everything else goes through the router.
# Checks: ping to the router and through it; the bifurcation; iperf3 TCP and
# UDP through the router; kill -9 of each AF_XDP driver under TCP traffic
# (the flow carries on, the restarted drivers keep the socket) and under a
# 64-byte UDP flood (forwarding resumes); a driver stopped (SIGSTOP) inside
# a lend, between giving buffers to the kernel and publishing them, and
# killed there until a successor takes them back (limbo_recovered > 0); a clean
# census at shutdown (the buffers the kernel held come back); no XDP program
# left on the veths; xdp_mode = zerocopy on veth refused with a clear message.
# Skips (77) when not root, a tool is missing, or the kernel has no AF_XDP.
# RR_TEST_PORT_EXTRA: manifest lines added to both ports (to try other
# settings by hand; the busy-polling checks are then skipped).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init afxdp_basic
rr_need iperf3 ss ethtool trafgen nm
rr_afxdp_init

SECS=${RR_IPERF_SECS:-3}
MIN_MBIT=${RR_IPERF_MIN_MBIT:-20}
PORT=5201
rr_three_ns 71 72
RHOST=$NET_A.254

rr_veth_host "$NS_A" xa0 xa1 "$NS_R" "$HOST_A" "$GW_A"
rr_veth_host "$NS_B" xb0 xb1 "$NS_R" "$HOST_B" "$GW_B"
ip -n "$NS_R" addr add "$RHOST/24" dev xa1 || rr_fail "R's host address"

manifest() { # manifest FILE [KEYS FOR PORT a]
    {
        printf '[router]\nname = ax%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
        printf '[port a]\ndriver = afxdp\nifname = xa1\naddress = %s/24\n%s\n%b\n\n' "$GW_A" "${2:-}" "${RR_TEST_PORT_EXTRA:-}"
        printf '[port b]\ndriver = afxdp\nifname = xb1\naddress = %s/24\n%b\n' "$GW_B" "${RR_TEST_PORT_EXTRA:-}"
        for s in "${RR_SERVICES[@]}"; do
            printf '\n[service %s]\nhang_ms = %s\n' "$s" "${RR_HANG_MS:-3000}"
        done
    } >"$1"
    "$RR" check -c "$1" >/dev/null || rr_fail "the manifest does not check: $(cat "$1")"
}

no_xdp() { # no XDP program left on R's veths
    ! ip -n "$NS_R" -d link show xa1 | grep -q 'prog/xdp' && ! ip -n "$NS_R" -d link show xb1 | grep -q 'prog/xdp'
}

# 1. xdp_mode = zerocopy: veth has no zero-copy; a clear error, nothing left behind.
manifest "$RR_T/zc.ini" "xdp_mode = zerocopy"
out=$(rr_in "$NS_R" timeout 20 "$RR" up -c "$RR_T/zc.ini" 2>&1)
rc=$?
[ $rc -ne 0 ] || rr_fail "xdp_mode = zerocopy on veth started (expected a refusal)"
grep -q 'Address family not supported' <<<"$out" && rr_skip "AF_XDP sockets unavailable: $out"
grep -q 'port a: xdp_mode = zerocopy is not available on xa1' <<<"$out" ||
    rr_fail "xdp_mode = zerocopy: unexpected message (exit $rc): $out"
no_xdp || rr_fail "a refused start left an XDP program behind"
rr_ok "xdp_mode = zerocopy refused: $(grep -o 'port a: xdp_mode = zerocopy[^;]*' <<<"$out" | head -1)"

# 2. The router, copy mode by xdp_mode = auto, busy polling by default.
knobs() { # knobs IFNAME: the device's NAPI knobs as "defer/timeout"
    rr_in "$NS_R" sh -c "echo \$(cat /sys/class/net/$1/napi_defer_hard_irqs)/\$(cat /sys/class/net/$1/gro_flush_timeout)"
}
KNOBS0=$(knobs xa1)
manifest "$RR_T/m.ini"
# Not through rr_in: a backgrounded function is a subshell, and $! must be
# the supervisor itself (ip netns exec execs it).
ip netns exec "$NS_R" "$RR" up -c "$RR_T/m.ini" 2>>"$RR_LOG" &
RR_PID=$!
rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "not every service was up within 10 s"
rr_alive "$RR_PID" || rr_fail "the supervisor exited at start"
grep -q 'port a: AF_XDP on xa1 queue 0: copy, XDP native' "$RR_LOG" || rr_fail "port a: no AF_XDP copy-mode line in the log"
ip -n "$NS_R" -d link show xa1 | grep -q 'prog/xdp' || rr_fail "no XDP program on xa1"
rr_ok "up: AF_XDP copy mode, native XDP on xa1 and xb1"
for d in xa1 xb1; do
    k=$(knobs $d)
    [ -n "${RR_TEST_PORT_EXTRA:-}" ] || [ "$k" = 2/200000 ] || rr_fail "busy_poll = yes: $d's napi_defer_hard_irqs/gro_flush_timeout are $k, expected 2/200000"
done

out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$GW_A" 2>&1) || rr_fail "ping A -> router: $out"
out=$(rr_in "$NS_A" ping -n -c 5 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
rr_ok "ping A -> router and A -> B through the router: $(tail -n 1 <<<"$out")"
rr_stats || rr_fail "stats"
# A busy poll needs the NAPI id the socket takes at bind on Linux 6.13+,
# which a veth does not give: the supervisor says so, and the driver makes
# no poll (afxdp_modes.sh checks both cases).
if [ -z "${RR_TEST_PORT_EXTRA:-}" ] && ! grep -q "port a: busy_poll = yes, but the AF_XDP socket on xa1 queue 0 names no NAPI" "$RR_LOG"; then
    [ "$(rr_ctr driver-a.busy_polls)" -gt 0 ] || rr_fail "busy_poll = yes, but driver-a made no busy-poll call"
fi

# ARP both ways: A resolved the router's address to xa1's MAC (the router
# answered its request), and the router resolved B (B answered the router's).
mac_xa1=$(rr_in "$NS_R" cat /sys/class/net/xa1/address)
mac_xb0=$(rr_in "$NS_B" cat /sys/class/net/xb0/address)
got=$(rr_router_mac "$NS_A" "$GW_A")
[ "$got" = "$mac_xa1" ] || rr_fail "ARP: A resolved $GW_A to '$got', expected xa1's $mac_xa1"
out=$("$RR" neigh show --json -S "$RR_SOCK") || rr_fail "neigh show"
got=$("$RR_PY" -c '
import json, sys
for n in json.load(sys.stdin)["neighbours"]:
    if n["address"] == sys.argv[1]:
        print(n["mac"], n["state"])' "$HOST_B" <<<"$out")
[ "${got%% *}" = "$mac_xb0" ] || rr_fail "ARP: the router's entry for $HOST_B is '$got', expected $mac_xb0: $out"
rr_ok "ARP: A has $GW_A at $mac_xa1, the router has $HOST_B at $got"

# traceroute (ICMP and UDP probes): hop 1 is the router, hop 2 is B.
if command -v traceroute >/dev/null; then
    for mode in -I ""; do
        # shellcheck disable=SC2086
        out=$(rr_in "$NS_A" traceroute -n $mode -w 2 -q 1 -m 5 "$HOST_B" 2>&1) || rr_fail "traceroute $mode: $out"
        hop1=$(awk '$1 == "1" { print $2 }' <<<"$out")
        hop2=$(awk '$1 == "2" { print $2 }' <<<"$out")
        [ "$hop1" = "$GW_A" ] && [ "$hop2" = "$HOST_B" ] ||
            rr_fail "traceroute ${mode:-(UDP)}: hops '$hop1' '$hop2', expected $GW_A $HOST_B: $out"
        rr_ok "traceroute ${mode:-(UDP)}: 1 $hop1, 2 $hop2"
    done
else
    rr_fail "traceroute is missing (./run deps installs it)"
fi

# 3. Bifurcation: R's own address on the same veth is answered by R's kernel.
rr_stats || rr_fail "stats"
echo0=$(rr_ctr router.icmp_echo_reply_tx)
out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$RHOST" 2>&1) || rr_fail "ping A -> R's host address $RHOST: $out"
rr_stats || rr_fail "stats"
[ "$(rr_ctr router.icmp_echo_reply_tx)" = "$echo0" ] || rr_fail "the router answered pings for the host's address"
xdp=$("$RR" stats --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
for x in json.load(sys.stdin)["xdp"]:
    if x["port"] == "a":
        print(x["redirected"], x["passed_host"])') || rr_fail "stats --json: no xdp counters"
read -r redir passed <<<"$xdp"
[ "${redir:-0}" -gt 0 ] && [ "${passed:-0}" -ge 3 ] ||
    rr_fail "port a's XDP counters: redirected '$redir', passed to the host '$passed' (expected > 0 and >= 3 pings)"
rr_ok "steer = forward-only: R's kernel answers on $RHOST, the router forwards the rest (XDP on xa1: $redir redirected, $passed passed to the host)"

# 4. iperf3 through the router.
rr_iperf_server "$NS_B" "$HOST_B" $PORT

iperf_run() { # iperf_run LABEL SECS ARGS...: IPERF_R = "RX_MBIT LOSS% TX_MBIT RETR|LOST"
    local label=$1 secs=$2
    shift 2
    local j=$RR_T/$label.json
    rr_in "$NS_A" timeout 60 iperf3 -c "$HOST_B" -p $PORT -t "$secs" --connect-timeout 3000 -J "$@" \
        >"$j" 2>"$RR_T/$label.err" || rr_fail "iperf3 $label failed: $(head -c 2000 "$j") $(cat "$RR_T/$label.err")"
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
# the smallest one-second interval: a stalled flow shows as a zero
print("%.1f" % min(i["sum"]["bits_per_second"] / 1e6 for i in d["intervals"]))
EOF
) || rr_fail "iperf3 $label: cannot read $j"
}
declare -A MBIT
iperf_run tcp "$SECS"
read -r rx _ tx retr <<<"$(head -n 1 <<<"$IPERF_R")"
awk -v r="$rx" -v m="$MIN_MBIT" 'BEGIN { exit !(r >= m) }' || rr_fail "TCP: $rx Mbit/s, expected >= $MIN_MBIT"
MBIT[tcp]=$rx
rr_ok "iperf3 TCP A -> B: $rx Mbit/s ($retr retransmits)"

iperf_run udp "$SECS" -u -b 200M -l 1400
read -r rx loss tx _ <<<"$(head -n 1 <<<"$IPERF_R")"
awk -v r="$rx" -v l="$loss" -v m="$MIN_MBIT" 'BEGIN { exit !(r >= m && l < 20) }' ||
    rr_fail "UDP 200M: $rx Mbit/s delivered ($loss% lost of $tx Mbit/s)"
MBIT[udp]=$rx
rr_ok "iperf3 UDP A -> B -b 200M: $rx Mbit/s delivered, $loss% lost"

# 5. kill -9 of each driver under TCP traffic: the flow carries on.
rr_status || rr_fail "status"
KSECS=6
(
    rr_msleep 1500
    kill -KILL "${RR_PIDS[driver-a]}"
    rr_msleep 1500
    kill -KILL "${RR_PIDS[driver-b]}"
) &
killer=$!
iperf_run kill "$KSECS"
wait "$killer"
read -r rx _ _ retr <<<"$(head -n 1 <<<"$IPERF_R")"
minint=$(tail -n 1 <<<"$IPERF_R")
awk -v r="$rx" -v m="$MIN_MBIT" 'BEGIN { exit !(r >= m) }' || rr_fail "TCP under kills: $rx Mbit/s"
awk -v r="$minint" 'BEGIN { exit !(r > 0) }' || rr_fail "TCP under kills: a one-second interval carried nothing"
rr_wait 5 rr_all_up || rr_fail "not every service came back up"
[ "${RR_RESTARTS[driver-a]}" -ge 1 ] && [ "${RR_RESTARTS[driver-b]}" -ge 1 ] ||
    rr_fail "drivers not restarted: a ${RR_RESTARTS[driver-a]} b ${RR_RESTARTS[driver-b]}"
out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B after the kills: $out"
rr_ok "kill -9 driver-a and driver-b under TCP: $rx Mbit/s over ${KSECS} s, slowest second $minint Mbit/s, ping ok"

# 5b. `ringrouter restart driver-a` (SIGTERM, a clean stop): the successor
# maps the same socket, and forwarding carries on.
rr_status || rr_fail "status"
# shellcheck disable=SC2034 # used in the eval below
old_pid=${RR_PIDS[driver-a]}
lines=$(wc -l <"$RR_LOG")
out=$("$RR" restart -S "$RR_SOCK" driver-a 2>&1) || rr_fail "restart driver-a: $out"
rr_wait 5 eval 'rr_all_up && [ "${RR_PIDS[driver-a]}" != "$old_pid" ]' || rr_fail "driver-a did not come back after restart"
out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B after restart driver-a: $out"
# The exact line of this restart, in the log since it was asked for.
tail -n +"$((lines + 1))" "$RR_LOG" | grep -q "^ringrouter: driver-a: exited with status 0; restarting as asked$" ||
    rr_fail "driver-a did not exit 0 on its restart: $(tail -n +"$((lines + 1))" "$RR_LOG" | grep driver-a)"
rr_ok "ringrouter restart driver-a: clean exit, new pid ${RR_PIDS[driver-a]}, ping ok"

# 6. kill -9 under a 64-byte flood from trafgen (200 kpps, paced): forwarding
# resumes after each restart, and once the flood stops the census will find
# every buffer (checked at shutdown).
rx_b() { rr_in "$NS_B" cat /sys/class/net/xb0/statistics/rx_packets; }
mac_xa0=$(rr_in "$NS_A" cat /sys/class/net/xa0/address)
echo "{ eth(da=$mac_xa1, sa=$mac_xa0, type=0x0800), ipv4(saddr=$HOST_A, daddr=$HOST_B, ttl=64, df), udp(sp=10000, dp=9), fill(0x00, 18) }" >"$RR_T/flood.cfg"
rr_stats || rr_fail "stats"
fwd0=$(rr_ctr router.forwarded)
rr_status || rr_fail "status"
# -n bounds it to 20 s even if nobody stops it.
rr_trafgen_start "$NS_A" xa0 "$RR_T/flood.cfg" -b 200000pps -n 4000000
b0=$(rx_b)
rr_wait 5 eval '[ $(($(rx_b) - b0)) -gt 10000 ]' || rr_fail "trafgen's flood did not arrive at B: $(cat "$RR_T/trafgen.log")"
for d in driver-b driver-a; do
    kill -KILL "${RR_PIDS[$d]}"
    rr_wait 5 eval 'rr_status && [ "${RR_STATE[$d]}" = up ] && [ "${RR_RESTARTS[$d]}" -ge 1 ]' ||
        rr_fail "$d did not come back under the flood"
    b0=$(rx_b)
    rr_wait 5 eval '[ $(($(rx_b) - b0)) -gt 10000 ]' || rr_fail "forwarding did not resume after the kill of $d"
done
rr_trafgen_stop
rr_stats || rr_fail "stats"
fwd1=$(rr_ctr router.forwarded)
out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B after the flood: $out"
rr_ok "kill -9 driver-b then driver-a under a 200 kpps 64-byte trafgen flood: forwarding resumed after each, $((fwd1 - fwd0)) packets forwarded, ping ok (limbo_recovered a $(rr_ctr driver-a.limbo_recovered) b $(rr_ctr driver-b.limbo_recovered), stale_desc a $(rr_ctr driver-a.stale_desc) b $(rr_ctr driver-b.stale_desc))"

# 6b. Crash recovery proven: a driver killed while it holds buffers it lent
# to the kernel but did not publish (docs/drivers.md, "Restart": between
# the give and the publish). That window is a few hundred ns a batch, too
# narrow to hit by the timing of a kill, so the test stops the driver at
# random moments under the flood (SIGSTOP), reads where it stopped
# (/proc/PID/syscall: no syscall, and the PC inside ipc_pool_give, the
# give of a lend) and kills it there, else lets it go on (SIGCONT). Retried,
# bounded, until a successor reports limbo_recovered > 0.
nm -S "$RR_T/bin/rr-afxdp" >"$RR_T/nm" 2>/dev/null || rr_fail "nm rr-afxdp (binutils)"
read -r give_at give_len _ <<<"$(awk '$4 == "ipc_pool_give" { print $1, $2 }' "$RR_T/nm")"
[ -n "$give_at" ] && [ -n "$give_len" ] || rr_fail "no symbol ipc_pool_give in rr-afxdp"
give_lo=$((16#$give_at)) give_hi=$((16#$give_at + 16#$give_len))
exe_base() { # exe_base PID: where rr-afxdp's first segment is mapped
    local range perms off rest
    while read -r range perms off _ _ rest; do
        [ "$off" = 00000000 ] && [ "$rest" = "$RR_T/bin/rr-afxdp" ] && { echo $((16#${range%%-*})); return 0; }
    done <"/proc/$1/maps"
    return 1
}
stopped() { # state T in /proc/PID/stat (comm has no spaces)
    local st
    read -r _ _ st _ <"/proc/$1/stat" 2>/dev/null && [ "$st" = T ]
}
rr_trafgen_start "$NS_A" xa0 "$RR_T/flood.cfg" -b 200000pps -n 12000000
limbo=0 kills=0 stops=0
rr_now
limbo_end=$((RR_NOW + 60000000))
while [ "$limbo" = 0 ] && [ "$kills" -lt 200 ]; do
    rr_now
    [ "$RR_NOW" -lt "$limbo_end" ] || break
    rr_status || rr_fail "status"
    victim=driver-$([ $((kills % 2)) = 0 ] && echo a || echo b) # both: TX lends on b, fill on both
    vp=${RR_PIDS[$victim]}
    base=$(exe_base "$vp") || rr_fail "no mapping of rr-afxdp in pid $vp"
    hit=0
    for ((i = 0; i < 5000; i++)); do
        kill -STOP "$vp" 2>/dev/null || break
        stops=$((stops + 1))
        for ((w = 0; w < 1000; w++)); do stopped "$vp" && break; done
        read -r nr _ pc _ <"/proc/$vp/syscall" || pc=0
        if [ "$nr" = -1 ] && [ $((pc - base)) -ge $give_lo ] && [ $((pc - base)) -lt $give_hi ]; then
            kill -KILL "$vp"
            hit=1
            break
        fi
        kill -CONT "$vp"
    done
    [ "$hit" = 1 ] || continue
    kills=$((kills + 1))
    rr_wait 5 eval 'rr_status && [ "${RR_STATE[$victim]}" = up ] && [ "${RR_PIDS[$victim]}" != "$vp" ]' ||
        rr_fail "limbo: $victim (pid $vp) not back within 5 s"
    rr_stats || rr_fail "stats"
    limbo=$(rr_ctr "$victim.limbo_recovered")
done
rr_trafgen_stop
# No stop inside the window in 60 s says nothing of the recovery: how
# often a stop lands there depends on what else the machine runs (930 to
# 121,844 stops a hit in CI; none in 285,871 once, beside the fuzzers and
# ASan tests at idle priority): timing-bound, rerun alone. A kill there
# that nothing recovers is a failure.
if [ "$kills" = 0 ]; then
    t_timing_fail "limbo: no stop of $stops landed inside ipc_pool_give within 60 s"
elif ! [ "$limbo" -gt 0 ] 2>/dev/null; then
    rr_fail "limbo: no successor recovered a lent, unpublished buffer ($kills kills inside ipc_pool_give, $stops stops)"
else
    rr_ok "limbo: $victim stopped inside a lend $kills times ($stops stops) and killed there: its successor took back $limbo lent, unpublished buffers (limbo_recovered); stale_desc a $(rr_ctr driver-a.stale_desc) b $(rr_ctr driver-b.stale_desc)"
fi
out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B after the limbo kills: $out"

rr_zero "${RR_MALFORMED[@]}"
rr_ok "no malformed-input drops or bad handles"

# 7. Shutdown: census clean (the kernel's buffers come back), no XDP left.
rr_stop
rr_census_ok
no_xdp || rr_fail "an XDP program is still attached after shutdown"
rr_ok "shutdown removed the XDP programs"
for d in xa1 xb1; do
    k=$(knobs $d)
    [ "$k" = "$KNOBS0" ] || rr_fail "after shutdown $d's NAPI knobs are $k, not $KNOBS0 as before the start"
done
rr_ok "busy polling: the devices' NAPI knobs set while up ($(knobs xa1) -> 2/200000) and restored at shutdown"
t_pass "afxdp_basic: TCP ${MBIT[tcp]} Mbit/s, UDP ${MBIT[udp]} Mbit/s"
