#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_adopt.sh: forwarding outlives the supervisor, and the next
# one adopts the services (issue 18, item 2), with the real router, TAP
# drivers a and b and a shaper on b, under a numbered stream A -> B of 2,000
# datagrams a second (bench/faultflow):
#   - kill -9 of the supervisor (after a reload of a changed manifest, the
#     one the next supervisor is started with): every service keeps its pid, and the stream
#     goes on through them with no supervisor at all (the sink's counter
#     moves by 1,000 more datagrams);
#   - `up` again with the same manifest adopts them: the log says so, the
#     drivers and the shaper keep their pids, the router moves to the new
#     supervisor's FIBs through its standby, and the routes added at run
#     time before the kill (IPv4 and IPv6) are still there, still "runtime";
#   - a second `up` while that one runs is refused with a clear message,
#     and adopts nothing;
#   - `upgrade supervisor`: the same pid execs again and adopts the services
#     (the drivers' and shaper's pids unchanged, and their uptime goes on
#     from where it was);
#   - restarts by cause go on across both adoptions (the router's move to
#     the new FIBs adds one "restart" each time);
#   - through all of it: no datagram of the stream lost, duplicated or
#     reordered, and a clean census when that supervisor stops;
#   - a supervisor killed, then `up` with a changed manifest: the services
#     it left are ended ("started from another manifest") and new ones start;
#   - orphans stop by themselves after orphan_grace_ms (what they say then
#     is in their stderr pipes, which only a next supervisor would read).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init sup_adopt
rr_need ss
rr_shaper_init
rr_faultflow_init

RR_SERVICES=(router driver-a driver-b shaper-b)
RR_ROUTER_EXTRA='orphan_grace_ms = 30000'
rr_topology $'[shaper b]\nrate = 1gbit\nburst = 256k'
rr_start
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"

# kill_supervisor: SIGKILL, then reaped (its services stay).
kill_supervisor() {
    kill -KILL "$RR_PID"
    wait "$RR_PID" 2>/dev/null
    RR_PID=
}

# rx_b: packets the sink's interface has received.
rx_b() { rr_in "$RR_NS_B" cat "/sys/class/net/$RR_IF_B/statistics/rx_packets"; }

out=$("$RR" route add 10.199.0.0/16 via "$RR_HOST_B" -S "$RR_SOCK" 2>&1) || rr_fail "route add: $out"
out=$("$RR" route add 2001:db8:199::/48 port b -S "$RR_SOCK" 2>&1) || rr_fail "route add: $out"
# The manifest a reload applied is the one a new supervisor must find.
printf '\n# reloaded before the kill\n' >>"$RR_T/m.ini"
out=$("$RR" reload -S "$RR_SOCK" 2>&1) || rr_fail "reload: $out"

rr_ff_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" 2000
RECV=$RR_FF_RECV SEND=$RR_FF_SEND
rr_msleep 300

# by_cause SERVICE CAUSE: status --json's restarts_by_cause, which the next
# supervisor must carry on from (the metrics' restarts_total is a counter).
by_cause() { "$RR" status --json -S "$RR_SOCK" | "$RR_PY" -c 'import json, sys; print(*(s["restarts_by_cause"][sys.argv[2]] for s in json.load(sys.stdin)["services"] if s["name"] == sys.argv[1]))' "$1" "$2"; }
rc0=$(by_cause router restart)

# 1. kill -9: the services stay, and forward.
rr_remember_services
declare -A PID0
for s in "${RR_SERVICES[@]}"; do PID0[$s]=${RR_PIDS[$s]}; done
kill_supervisor
for s in "${RR_SERVICES[@]}"; do
    rr_alive "${PID0[$s]}" || rr_fail "$s (pid ${PID0[$s]}) died with its supervisor"
done
rx0=$(rx_b)
rr_wait 10 eval '[ $(($(rx_b) - rx0)) -ge 1000 ]' ||
    rr_fail "with no supervisor, B received $(($(rx_b) - rx0)) packets in 10 s"
for s in "${RR_SERVICES[@]}"; do
    rr_alive "${PID0[$s]}" || rr_fail "$s (pid ${PID0[$s]}) died while no supervisor ran"
done
rr_ok "supervisor killed: every service kept its pid and B received $(($(rx_b) - rx0)) more packets"

# 2. A new supervisor adopts them.
mark=$(wc -l <"$RR_LOG")
rr_up
grep -q "adopting 4 running services" <(tail -n +"$mark" "$RR_LOG") ||
    rr_fail "the new supervisor did not say it adopts: $(tail -n +"$mark" "$RR_LOG")"
rr_wait 10 eval 'tail -n +$mark "$RR_LOG" | grep -q "router: standby pid [0-9]* takes over"' ||
    rr_fail "the router did not move to the new FIBs: $(tail -n +"$mark" "$RR_LOG")"
rr_wait 10 rr_all_up || rr_fail "not every service up after adoption"
for s in driver-a driver-b shaper-b; do
    [ "${RR_PIDS[$s]}" = "${PID0[$s]}" ] || rr_fail "$s: pid ${PID0[$s]} before, ${RR_PIDS[$s]} after adoption"
done
rr_remember_services
out=$("$RR" route show -S "$RR_SOCK" 2>&1) || rr_fail "route show: $out"
grep -q "^10.199.0.0/16 .*runtime" <<<"$out" || rr_fail "the runtime route is gone after adoption: $out"
grep -q "^2001:db8:199::/48 .*runtime$" <<<"$out" || rr_fail "the runtime IPv6 route is gone, or not runtime, after adoption: $out"
rr_wait 5 eval '[ "$(by_cause router restart)" = $((rc0 + 1)) ]'
rc1=$(by_cause router restart)
[ "$rc1" = $((rc0 + 1)) ] || rr_fail "router restarts by cause \"restart\": $rc0 before the adoption, $rc1 after (its move to the new FIBs is one)"
rr_ok "adopted: drivers and shaper kept their pids, the router moved through its standby, the runtime routes kept"

# 3. A second supervisor on the same run_dir is refused and touches nothing.
out=$(timeout 10 "$RR" up -c "$RR_T/m.ini" 2>&1)
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || rr_fail "a second up: exit $rc: $out"
grep -q "another ringrouter is running there" <<<"$out" || rr_fail "a second up said: $out"
grep -q adopt <<<"$out" && rr_fail "a second up adopted: $out"
rr_all_up || rr_fail "services down after a refused second up"
rr_ok "second up refused: $out"

# 4. upgrade supervisor: the same pid, a new image, adoption again.
rr_status
declare -A PID1
for s in "${RR_SERVICES[@]}"; do PID1[$s]=${RR_PIDS[$s]}; done
uptime() { "$RR" status --json -S "$RR_SOCK" | "$RR_PY" -c 'import json, sys; print(*(s["uptime_ms"] for s in json.load(sys.stdin)["services"] if s["name"] == sys.argv[1]))' "$1"; }
up0=$(uptime driver-a)
mark=$(wc -l <"$RR_LOG")
out=$("$RR" upgrade supervisor -S "$RR_SOCK" 2>&1) || rr_fail "upgrade supervisor: $out"
grep -q "^supervisor: pid $RR_PID re-execs " <<<"$out" || rr_fail "upgrade supervisor said: $out"
rr_wait 10 eval 'tail -n +$mark "$RR_LOG" | grep -q "adopting 4 running services"' ||
    rr_fail "the re-exec'd supervisor did not adopt: $(tail -n +"$mark" "$RR_LOG")"
rr_wait 10 eval 'tail -n +$mark "$RR_LOG" | grep -q "router: standby pid [0-9]* takes over"' ||
    rr_fail "the router did not move after the re-exec: $(tail -n +"$mark" "$RR_LOG")"
rr_wait 10 rr_all_up || rr_fail "not every service up after upgrade supervisor"
rr_alive "$RR_PID" || rr_fail "the supervisor's pid is gone after its re-exec"
for s in driver-a driver-b shaper-b; do
    [ "${RR_PIDS[$s]}" = "${PID1[$s]}" ] || rr_fail "$s: pid ${PID1[$s]} before, ${RR_PIDS[$s]} after upgrade supervisor"
done
up1=$(uptime driver-a)
[ -n "$up0" ] && [ -n "$up1" ] && [ "$up1" -ge "$up0" ] || rr_fail "driver-a's uptime went from $up0 ms to $up1 ms across upgrade supervisor"
rr_remember_services
rr_wait 5 eval '[ "$(by_cause router restart)" = $((rc1 + 1)) ]'
rc2=$(by_cause router restart)
[ "$rc2" = $((rc1 + 1)) ] || rr_fail "router restarts by cause \"restart\": $rc1 before upgrade supervisor, $rc2 after: not kept"
rr_ok "upgrade supervisor: pid $RR_PID re-exec'd and adopted every service; driver-a up $up0 ms before, $up1 ms after; the router's restarts by cause kept ($rc0, $rc1, $rc2)"

# The stream, whole.
kill -TERM "$SEND"
rr_wait 5 eval "! rr_alive $SEND" || rr_fail "the sender did not stop"
wait "$SEND" || rr_fail "the sender exited with status $?"
rr_wait 5 rr_drained || rr_fail "ringrouter still held packets 5 s after the sender stopped"
kill -TERM "$RECV"
rr_wait 5 eval "! rr_alive $RECV" || rr_fail "the sink did not stop"
wait "$RECV" || rr_fail "the sink exited with status $?"
read -r _ sent _ _ <"$RR_T/send.err"
read -r _ got _ top _ dup <"$RR_T/recv.err"
reord=$(sed -n 's/^reordered //p' "$RR_T/recv.err")
[ "$got" = "$sent" ] && [ "$dup" = 0 ] && [ "$top" = $((sent - 1)) ] && [ "$reord" = 0 ] ||
    rr_fail "the stream: sent $sent, received $got (highest $top), $dup duplicates, $reord reordered"
rr_ok "stream: all $sent datagrams arrived once, in order, across a kill -9, an adoption and an upgrade supervisor"
rr_stop
rr_census_ok

# 5. Killed, then `up` with another manifest: the orphans are ended.
sed -i 's/^orphan_grace_ms = 30000$/orphan_grace_ms = 2000/' "$RR_T/m.ini"
rr_up
rr_remember_services
declare -A PID2
for s in "${RR_SERVICES[@]}"; do PID2[$s]=${RR_PIDS[$s]}; done
kill_supervisor
sed -i 's/^orphan_grace_ms = 2000$/orphan_grace_ms = 2500/' "$RR_T/m.ini"
mark=$(wc -l <"$RR_LOG")
rr_up
grep -q "cannot adopt the running services: they were started from another manifest" <(tail -n +"$mark" "$RR_LOG") ||
    rr_fail "no refusal to adopt from another manifest: $(tail -n +"$mark" "$RR_LOG")"
for s in "${RR_SERVICES[@]}"; do
    rr_alive "${PID2[$s]}" && rr_fail "$s (pid ${PID2[$s]}) of the killed supervisor still runs"
done
rr_status
for s in "${RR_SERVICES[@]}"; do
    [ "${RR_PIDS[$s]}" != "${PID2[$s]}" ] || rr_fail "$s kept pid ${PID2[$s]} under another manifest"
done
rr_remember_services
rr_ok "another manifest: the old services were ended, new ones started"

# 6. Orphans stop after orphan_grace_ms (2.5 s).
for s in "${RR_SERVICES[@]}"; do PID2[$s]=${RR_PIDS[$s]}; done
mark=$(wc -l <"$RR_LOG")
kill_supervisor
gone() {
    local s
    for s in "${RR_SERVICES[@]}"; do rr_alive "${PID2[$s]}" && return 1; done
    return 0
}
rr_wait 20 gone || rr_fail "orphans still run 20 s after their supervisor died (orphan_grace_ms 2500)"
# What they said meanwhile went into their stderr pipes, which only a
# supervisor reads (supervisor/svclog.c): with none to adopt them, it is
# lost with them, and nothing of theirs is in the log unprefixed.
grep -qE "^(rr-|[a-z-]*: )?no supervisor for" <(tail -n +"$mark" "$RR_LOG") &&
    rr_fail "an orphan's line is in the log as if the supervisor wrote it: $(tail -n +"$mark" "$RR_LOG")"
rr_ok "orphans stopped by themselves after orphan_grace_ms"
echo "PASS"
