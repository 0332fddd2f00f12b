#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/afxdp_group.sh: a driver group (docs/drivers.md, "Driver
# groups"): `group = g` on both AF_XDP ports puts them under one rr-afxdp
# process, driver-g; port b is shaped (shaper-b feeds the group's driver).
#   - up: the services are router and driver-g (no driver-a, no driver-b),
#     one process holds both ports' sockets, under a uid of its own and
#     seccomp, pings go both ways, and the
#     group's per-port counters (driver-g.a.rx_pkts, driver-g.b.tx_pkts...)
#     move with the traffic, as `link` shows them per port;
#   - `upgrade driver-g` under a stream A -> B: a new pid, and every
#     datagram arrives, once and in order;
#   - kill -9 of driver-g under the stream: it is restarted (its standby
#     takes over both ports), and the stream resumes: its last datagram
#     arrives, none twice;
#   - `inject driver-g crash` restarts it; `inject driver-g corrupt-meta`
#     puts a scribbled buffer on one of its rings, which the router refuses;
#   - the supervisor killed -9: the next `up` adopts driver-g (same pid)
#     and both its sockets, and forwards both ways;
#   - stop: the census finds every buffer free (none lost to the kills, the
#     kernel's included).
#
#   ns A --veth gra0|gra1-- [ns R: router, driver-g, shaper-b] --veth grb1|grb0-- ns B
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init afxdp_group
rr_afxdp_init
rr_faultflow_init
rr_shaper_init
rr_need ss

# Port b shaped: its egress comes to the group's driver from shaper-b.
RR_SERVICES=(router driver-g shaper-b)
RR_AFXDP_A_EXTRA='group = g'
RR_AFXDP_B_EXTRA='group = g\n\n[shaper b]\nrate = 1gbit\nburst = 256k'
rr_afxdp_up 77 78 g gr

# 1. One process for both ports.
rr_status || rr_fail "status"
[ -z "${RR_STATE[driver-a]:-}" ] && [ -z "${RR_STATE[driver-b]:-}" ] ||
    rr_fail "a group's ports still have drivers of their own: ${!RR_STATE[*]}"
pid=${RR_PIDS[driver-g]}
[ "$(readlink /proc/"$pid"/exe)" = "$RR_T/bin/rr-afxdp" ] || rr_fail "driver-g (pid $pid) is not rr-afxdp"
nxsk=$(find /proc/"$pid"/fd -lname 'socket:*' -printf . 2>/dev/null | wc -c)
[ "$nxsk" -ge 2 ] || rr_fail "driver-g holds $nxsk sockets, expected both ports' XSKs"
# Isolation as one service: its own uid (not root's, not the router's), under seccomp.
uid_of() { awk '/^Uid:/ { print $2 }' /proc/"$1"/status; }
guid=$(uid_of "$pid") ruid=$(uid_of "${RR_PIDS[router]}")
[ "$guid" != 0 ] && [ "$guid" != "$ruid" ] || rr_fail "driver-g runs as uid $guid (the router as $ruid)"
grep -q "^Seccomp:[[:space:]]*2" /proc/"$pid"/status || rr_fail "driver-g (pid $pid) is not under a seccomp filter"
out=$(rr_in "$NS_B" ping -n -c 3 -i 0.2 -W 2 "$HOST_A" 2>&1) || rr_fail "ping B -> A: $out"
out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
rr_stats || rr_fail "stats"
for k in a.rx_pkts a.tx_pkts b.rx_pkts b.tx_pkts rx_pkts; do
    [ "$(rr_ctr "driver-g.$k")" -ge 5 ] || rr_fail "driver-g.$k is $(rr_ctr "driver-g.$k") after 10 pings through the group"
done
[ "$(rr_ctr driver-g.rx_pkts)" -eq $(($(rr_ctr driver-g.a.rx_pkts) + $(rr_ctr driver-g.b.rx_pkts))) ] ||
    rr_fail "driver-g.rx_pkts $(rr_ctr driver-g.rx_pkts) is not its ports' sum"
# `link b`: its driver is driver-g, and its driver counters are b's own.
out=$("$RR" link b --json -S "$RR_SOCK" 2>&1) || rr_fail "link b: $out"
"$RR_PY" -c '
import json, sys
l = json.loads(sys.argv[1])["links"][0]
ok = [s["name"] for s in l["services"]] == ["driver-g", "shaper-b"] and 0 < int(sys.argv[2]) <= l["rx"]["packets"] < int(sys.argv[3])
sys.exit(0 if ok else 1)' "$out" "$(rr_ctr driver-g.b.rx_pkts)" "$(rr_ctr driver-g.rx_pkts)" ||
    rr_fail "link b: not driver-g's, or not b's own counters (b.rx_pkts $(rr_ctr driver-g.b.rx_pkts)): $out"
# capture rx of a group's port: refused, naming the group (its one region holds both ports' frames).
# (to a file that exists: the refusal must leave it, as it must /dev/null).
: >"$RR_T/cap.keep"
out=$(timeout 10 "$RR" capture a rx -c 1 -w "$RR_T/cap.keep" -S "$RR_SOCK" 2>&1)
rc=$?
[ $rc = 100 ] && grep -q "port a is in driver group g" <<<"$out" || rr_fail "capture a rx: exit $rc: $out"
[ -f "$RR_T/cap.keep" ] || rr_fail "a refused capture removed its -w file, which was there before"
rr_ok "one process (pid $pid, $nxsk sockets) serves a and b; pings both ways; per-port counters a.* and b.*"

# 2. Upgrade under a stream: nothing lost.
rr_ff_start "$NS_A" "$NS_B" "$HOST_B" 2000
rr_msleep 300
out=$("$RR" upgrade driver-g -S "$RR_SOCK" 2>&1) || rr_fail "upgrade driver-g: $out"
grep -q "^upgraded driver-g: pid $pid " <<<"$out" || rr_fail "upgrade driver-g: unexpected answer: $out"
rr_status || rr_fail "status"
[ "${RR_STATE[driver-g]}" = up ] && [ "${RR_PIDS[driver-g]}" != "$pid" ] ||
    rr_fail "after the upgrade driver-g is ${RR_STATE[driver-g]}, pid ${RR_PIDS[driver-g]} (was $pid)"
rr_msleep 300
rr_ff_whole "through the group's upgrade"
rr_ok "$out; the stream: all $RR_FF_SENT datagrams, once and in order"

# 3. kill -9 under a stream: the standby takes both ports over.
pid=${RR_PIDS[driver-g]}
rr_ff_start "$NS_A" "$NS_B" "$HOST_B" 2000
rr_msleep 300
kill -KILL "$pid"
rr_wait 5 eval 'rr_status && [ "${RR_STATE[driver-g]}" = up ] && [ "${RR_PIDS[driver-g]}" != "$pid" ]' ||
    rr_fail "driver-g was not up again within 5 s of its kill"
[ "${RR_RESTARTS[driver-g]}" = 1 ] || rr_fail "driver-g's restarts: ${RR_RESTARTS[driver-g]}, expected 1"
rr_msleep 500
rr_ff_counts
[ "$RR_FF_TOP" = $((RR_FF_SENT - 1)) ] && [ "$RR_FF_DUP" = 0 ] ||
    rr_fail "the stream did not resume after driver-g's kill: $RR_FF_SAID"
out=$(rr_in "$NS_B" ping -n -c 2 -i 0.2 -W 2 "$HOST_A" 2>&1) || rr_fail "ping B -> A after the kill: $out"
rr_ok "kill -9 of driver-g: restarted, the stream resumed ($RR_FF_SAID)"

# 4. inject: the group is one target. A crash in its loop restarts it; a
# scribbled buffer on one of its output rings is refused by the router.
out=$("$RR" inject driver-g crash -S "$RR_SOCK" 2>&1) || rr_fail "inject driver-g crash: $out"
grep -q "^driver-g: crash: SIGSEGV raised in its loop" <<<"$out" || rr_fail "inject driver-g crash: $out"
rr_wait 5 eval 'rr_status && [ "${RR_STATE[driver-g]}" = up ] && [ "${RR_RESTARTS[driver-g]}" = 2 ]' ||
    rr_fail "driver-g was not up again, restarts 2, within 5 s of its crash"
out=$("$RR" inject driver-g corrupt-meta -S "$RR_SOCK" 2>&1) || rr_fail "inject driver-g corrupt-meta: $out"
ring=$(sed -n 's/.* published on \([a-z.-]*\) at batch .*/\1/p' <<<"$out")
[ "$ring" = rx-a ] || [ "$ring" = rx-b ] || rr_fail "inject driver-g corrupt-meta: not on the group's rings: $out"
rr_wait 2 eval 'rr_stats && [ $(($(rr_ctr ring.$ring.drop_bad_frame) + $(rr_ctr ring.$ring.drop_bad_chain))) = 1 ]' ||
    rr_fail "the router did not refuse the scribbled buffer on $ring: $out"
out=$(rr_in "$NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B after the injections: $out"
rr_ok "inject: driver-g crashed and restarted; its scribbled buffer refused on $ring"

# 5. The supervisor killed: the next up adopts the group's driver, both
# sockets taken over from its fds.
rr_status || rr_fail "status"
pid=${RR_PIDS[driver-g]}
rr_remember_services
kill -KILL "$RR_PID"
wait "$RR_PID" 2>/dev/null
RR_PID=
: >"$RR_LOG"
ip netns exec "$NS_R" "$RR" up -c "$RR_T/x.ini" 2>>"$RR_LOG" &
RR_PID=$!
rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "the next up: not every service was up within 10 s"
rr_alive "$RR_PID" || rr_fail "the next up exited: $(tail -n 3 "$RR_LOG")"
for l in "adopting 3 running services" "port a: adopted the AF_XDP socket on gra1 queue 0" \
    "port b: adopted the AF_XDP socket on grb1 queue 0"; do
    grep -q "$l" "$RR_LOG" || rr_fail "the next up: no \"$l\" in the log: $(tail -n 5 "$RR_LOG")"
done
rr_status || rr_fail "status"
[ "${RR_PIDS[driver-g]}" = "$pid" ] || rr_fail "driver-g's pid changed at adoption: $pid -> ${RR_PIDS[driver-g]}"
out=$(rr_in "$NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B after adoption: $out"
out=$(rr_in "$NS_B" ping -n -c 2 -i 0.2 -W 2 "$HOST_A" 2>&1) || rr_fail "ping B -> A after adoption: $out"
rr_ok "supervisor killed: the next up adopted driver-g (pid $pid) and both its sockets"

rr_stop
rr_census_ok
rr_ok "stop: census clean"
echo "PASS afxdp_group"
