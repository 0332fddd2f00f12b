#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_restart_limit.sh: a service whose binary exits at once
# (driver-b = /bin/false, restart_limit 3, restart_window 10s) is given up
# after the limit: status says "failed" with 3 restarts, the log says
# "failed: 4 deaths within 10000 ms exceed restart_limit 3", nothing restarts
# it afterwards, and the supervisor and the other services keep running
# (same pids, still answering, still beating). `restart driver-b` tries again.
# `status` (and --json) exits 3 while driver-b is failed, with the whole
# table all the same (sup_control.sh: 0 when all are up); `link b` says its
# port is failed.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_restart_limit

sup_netns
sup_manifest "$SUP_T/m.ini" driver-b.binary=/bin/false driver-b.restart_limit=3 driver-b.restart_window=10s
sup_start_nowait "$SUP_NS" "$SUP_T/m.ini"

failed() { sup_status && [ "${SUP_STATE[driver-b]}" = failed ]; }
sup_now
t0=$SUP_NOW
sup_wait 5 failed || sup_fail "driver-b is not failed within 5 s (state ${SUP_STATE[driver-b]:-?}); it was started $(grep -c "^ringrouter: driver-b: started, pid" "$SUP_LOG") times"
sup_now
echo "driver-b failed $(((SUP_NOW - t0) / 1000)) ms after the supervisor answered"
sup_wait 10 eval 'sup_status && [ "${SUP_STATE[router]}" = up ] && [ "${SUP_STATE[driver-a]}" = up ]' ||
    sup_fail "router and driver-a are not up (router ${SUP_STATE[router]:-?}, driver-a ${SUP_STATE[driver-a]:-?})"

"$RR" status -S "$SUP_SOCK" >"$SUP_T/st.out" 2>"$SUP_T/st.err"
rc=$?
sed 's/^/  /' "$SUP_T/st.out"
[ "$rc" = 3 ] || sup_fail "status with driver-b failed: exit $rc, expected 3 ($(cat "$SUP_T/st.err"))"
[ -s "$SUP_T/st.err" ] && sup_fail "status with driver-b failed wrote to stderr: $(cat "$SUP_T/st.err")"
[ "$(grep -cE '^(router|driver-a) +up |^driver-b +failed ' "$SUP_T/st.out")" = 3 ] || sup_fail "status did not print every row"
"$RR" status --json -S "$SUP_SOCK" >"$SUP_T/st.json"
rc=$?
[ "$rc" = 3 ] || sup_fail "status --json with driver-b failed: exit $rc, expected 3"
"$SUP_PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$SUP_T/st.json" || sup_fail "status --json with a failed service is not JSON"
link_state() { "$RR" link "$1" --json -S "$SUP_SOCK" | "$SUP_PY" -c 'import json, sys; l = json.load(sys.stdin)["links"][0]; print(l["state"], *(s["name"] + ":" + s["state"] for s in l["services"]))'; }
[ "$(link_state b)" = "failed driver-b:failed" ] && [ "$(link_state a)" = "up driver-a:up" ] ||
    sup_fail "link: b \"$(link_state b)\", a \"$(link_state a)\""
echo "status and status --json exit 3 with driver-b failed (every row printed); link b: failed, link a: up"
[ "${SUP_RESTARTS[driver-b]}" = 3 ] || sup_fail "driver-b was restarted ${SUP_RESTARTS[driver-b]} times, expected 3"
line=$(grep "^ringrouter: driver-b: .*failed: " "$SUP_LOG")
echo "  log: $line"
grep -q "^ringrouter: driver-b: exited with status 1; failed: 4 deaths within 10000 ms exceed restart_limit 3; not restarting$" \
    "$SUP_LOG" || sup_fail "no \"driver-b: exited with status 1; failed: 4 deaths ... exceed restart_limit 3\" line in the log"
[ "$(grep -c "^ringrouter: driver-b: started, pid" "$SUP_LOG")" = 4 ] ||
    sup_fail "driver-b was started $(grep -c "^ringrouter: driver-b: started, pid" "$SUP_LOG") times, expected 4"
last_exit=$("$RR" status --json -S "$SUP_SOCK" | "$SUP_PY" -c '
import json, sys
print([s for s in json.load(sys.stdin)["services"] if s["name"] == "driver-b"][0]["last_exit"])')
[ "$last_exit" = "exited with status 1" ] || sup_fail "driver-b last_exit is \"$last_exit\""

# Given up means given up: one second later nothing has changed, and the
# others are the same processes, still beating.
router=${SUP_PIDS[router]} driver_a=${SUP_PIDS[driver-a]}
lines=$(wc -l <"$SUP_LOG")
loops() { "$RR" stats -S "$SUP_SOCK" | awk -v s="$1" '$1 == s && $2 ~ /^\(/ { sub(",", "", $4); print $4 }'; }
l1=$(loops router)
sleep 1 # observing that nothing happens for a while
sup_status || sup_fail "the supervisor stopped answering"
sup_alive "$SUP_PID" || sup_fail "the supervisor is gone"
[ "${SUP_STATE[driver-b]}" = failed ] || sup_fail "driver-b is ${SUP_STATE[driver-b]} a second later"
[ "${SUP_PIDS[router]}" = "$router" ] && [ "${SUP_STATE[router]}" = up ] ||
    sup_fail "the router changed: pid $router -> ${SUP_PIDS[router]}, ${SUP_STATE[router]}"
[ "${SUP_PIDS[driver-a]}" = "$driver_a" ] && [ "${SUP_STATE[driver-a]}" = up ] ||
    sup_fail "driver-a changed: pid $driver_a -> ${SUP_PIDS[driver-a]}, ${SUP_STATE[driver-a]}"
[ "$(wc -l <"$SUP_LOG")" = "$lines" ] || sup_fail "the log grew while driver-b was failed: $(tail -n +"$((lines + 1))" "$SUP_LOG")"
l2=$(loops router)
[ -n "$l1" ] && [ -n "$l2" ] && [ "$l2" -gt "$l1" ] || sup_fail "the router's loop counter did not move ($l1 -> $l2)"
echo "one second later: driver-b still failed, router (pid $router) and driver-a (pid $driver_a) unchanged and running"

# An operator's restart of a failed service tries again (and it fails again).
"$RR" restart -S "$SUP_SOCK" driver-b >/dev/null || sup_fail "restart driver-b was refused"
sup_wait 10 eval 'sup_status && [ "${SUP_STATE[driver-b]}" = failed ] && [ "$(grep -c "driver-b: started, pid" "$SUP_LOG")" -ge 8 ]' ||
    sup_fail "after restart driver-b: not started 4 more times and failed again"
echo "restart driver-b: started again, failed again after the limit"

sup_stop TERM 10
sup_census_ok "after SIGTERM"
echo "PASS: sup_restart_limit"
