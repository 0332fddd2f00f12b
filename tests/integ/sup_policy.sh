#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_policy.sh: [service NAME] restart = on-failure and never
# (docs/supervisor.md, "Policy"). Stand-ins: /bin/true (exits 0 before it is
# ready), rr-null-exit-3 (exits 3 before its set-up), and rr-passthru as the router (up, then
# killed by SIGKILL, or ended by SIGTERM, which it answers with exit 0).
#   on-failure: exit 0 -> "NAME: exited with status 0; not restarting
#     (restart = on-failure)", down, started once; exit 3 -> "restarting
#     now", then "restarting in 10 ms (death 2 in a row)", started again;
#     SIGKILL -> restarted (new pid, restarts 1); then SIGTERM (exit 0) ->
#     not restarted.
#   never: exit 0, exit 3 and SIGKILL -> "...; not restarting (restart =
#     never)", down, started once, restarts 0, and no standby is kept.
# Each "not restarted" is also observed for 500 ms: nothing starts it again.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_policy

cp "$SUP_T/bin/rr-null" "$SUP_T/bin/rr-null-exit-3" || sup_fail "cannot copy rr-null"
sup_netns
NS=$SUP_NS

started() { sup_log_count "ringrouter: $1: started, pid [0-9]+"; }
state_is() { sup_status && [ "${SUP_STATE[$1]:-}" = "$2" ]; }
expect_down() { # expect_down SVC LAST_EXIT RESTARTS
    sup_status || sup_fail "status"
    [ "${SUP_STATE[$1]}" = down ] || sup_bad "$1 is ${SUP_STATE[$1]}, expected down"
    [ "${SUP_RESTARTS[$1]}" = "$3" ] || sup_bad "$1 restarts ${SUP_RESTARTS[$1]}, expected $3"
    local le
    le=$(sup_svc_json "$1" last_exit)
    [ "$le" = "$2" ] || sup_bad "$1 last_exit \"$le\", expected \"$2\""
}

# ---------------- restart = on-failure ----------------
# hang_ms 3000: a starved machine must not kill anything here but the test.
H=(router.hang_ms=3000 driver-a.hang_ms=3000 driver-b.hang_ms=3000)
sup_manifest "$SUP_T/m.ini" "${H[@]}" router.restart=on-failure driver-a.restart=on-failure driver-a.binary=/bin/true \
    driver-b.restart=on-failure driver-b.binary="$SUP_T/bin/rr-null-exit-3"
sup_start_nowait "$NS" "$SUP_T/m.ini"
sup_wait 5 sup_log_line 'ringrouter: driver-a: exited with status 0; not restarting (restart = on-failure)' ||
    sup_fail "on-failure: no \"driver-a: exited with status 0; not restarting (restart = on-failure)\" line within 5 s"
sup_wait 5 eval '[ "$(started driver-b)" -ge 3 ]' || sup_fail "on-failure: driver-b (exit 3) was not started 3 times within 5 s"
sup_log_line 'ringrouter: driver-b: exited with status 3; restarting now' ||
    sup_bad "on-failure: no \"driver-b: exited with status 3; restarting now\" line"
sup_log_line 'ringrouter: driver-b: exited with status 3; restarting in 10 ms (death 2 in a row)' ||
    sup_bad "on-failure: no \"driver-b: exited with status 3; restarting in 10 ms (death 2 in a row)\" line"
sup_wait 5 eval 'state_is router up' || sup_fail "on-failure: the router is not up"
sup_status
[ "${SUP_RESTARTS[driver-b]}" -ge 2 ] || sup_bad "on-failure: driver-b restarts ${SUP_RESTARTS[driver-b]}, expected >= 2"
[ "$(sup_svc_json driver-b last_exit)" = "exited with status 3" ] || sup_bad "on-failure: driver-b last_exit \"$(sup_svc_json driver-b last_exit)\""
echo "on-failure: /bin/true not restarted; exit 3 restarted ${SUP_RESTARTS[driver-b]} times so far"

# The router, up: SIGKILL is a failure (restarted), then SIGTERM -> exit 0 (not).
old=${SUP_PIDS[router]}
kill -KILL "$old"
sup_wait 5 eval 'sup_status && [ "${SUP_STATE[router]}" = up ] && [ "${SUP_PIDS[router]}" != "$old" ]' ||
    sup_fail "on-failure: the router was not up again with a new pid within 5 s of SIGKILL"
sup_log_line 'ringrouter: router: killed by signal 9 (Killed); restarting now' ||
    sup_bad "on-failure: no \"router: killed by signal 9 (Killed); restarting now\" line"
[ "${SUP_RESTARTS[router]}" = 1 ] || sup_bad "on-failure: router restarts ${SUP_RESTARTS[router]} after SIGKILL, expected 1"
echo "on-failure: router SIGKILL -> restarted, pid $old -> ${SUP_PIDS[router]}"
new=${SUP_PIDS[router]}
kill -TERM "$new"
sup_wait 5 sup_log_line 'ringrouter: router: exited with status 0; not restarting (restart = on-failure)' ||
    sup_fail "on-failure: no \"router: exited with status 0; not restarting (restart = on-failure)\" line within 5 s of SIGTERM"
n_router=$(started router) n_a=$(started driver-a)
sup_msleep 500 # observing that nothing restarts them
expect_down driver-a "exited with status 0" 0
expect_down router "exited with status 0" 1
[ "$n_a" = 1 ] && [ "$(started driver-a)" = 1 ] || sup_bad "on-failure: driver-a was started $(started driver-a) times, expected 1"
[ "$(started router)" = "$n_router" ] || sup_bad "on-failure: the router was started again after its exit 0"
sup_log_has 'ringrouter: router: standby pid [0-9]+ takes over' ||
    sup_bad "on-failure: the router's restart did not go through its standby"
echo "on-failure: router SIGTERM (exit 0) -> down, not restarted"
sup_stop TERM 10
[ "$SUP_RC" = 0 ] || sup_bad "on-failure: the supervisor exited with status $SUP_RC"
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "on-failure: $out"

# ---------------- restart = never ----------------
SUP_LOG=$SUP_T/log.never
sup_manifest "$SUP_T/m.ini" "${H[@]}" router.restart=never driver-a.restart=never driver-a.binary=/bin/true \
    driver-b.restart=never driver-b.binary="$SUP_T/bin/rr-null-exit-3"
sup_start_nowait "$NS" "$SUP_T/m.ini"
sup_wait 5 eval 'state_is router up && [ "${SUP_STATE[driver-a]}" = down ] && [ "${SUP_STATE[driver-b]}" = down ]' ||
    sup_fail "never: not (router up, driver-a down, driver-b down) within 5 s"
sup_log_line 'ringrouter: driver-a: exited with status 0; not restarting (restart = never)' ||
    sup_bad "never: no \"driver-a: exited with status 0; not restarting (restart = never)\" line"
sup_log_line 'ringrouter: driver-b: exited with status 3; not restarting (restart = never)' ||
    sup_bad "never: no \"driver-b: exited with status 3; not restarting (restart = never)\" line"
sup_msleep 100 # a standby would be forked right after ready: give it the time to show
sup_status
[ "${SUP_STANDBY[router]}" = - ] || sup_bad "never: the router has a standby (${SUP_STANDBY[router]}); restart = never keeps none"
old=${SUP_PIDS[router]}
kill -KILL "$old"
sup_wait 5 sup_log_line 'ringrouter: router: killed by signal 9 (Killed); not restarting (restart = never)' ||
    sup_fail "never: no \"router: killed by signal 9 (Killed); not restarting (restart = never)\" line within 5 s"
sup_msleep 500 # observing that nothing restarts them
expect_down router "killed by signal 9 (Killed)" 0
expect_down driver-a "exited with status 0" 0
expect_down driver-b "exited with status 3" 0
for s in router driver-a driver-b; do
    [ "$(started "$s")" = 1 ] || sup_bad "never: $s was started $(started "$s") times, expected 1"
done
echo "never: exit 0, exit 3 and SIGKILL -> down, each started once, no standby"
sup_stop TERM 10
[ "$SUP_RC" = 0 ] || sup_bad "never: the supervisor exited with status $SUP_RC"
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "never: $out"
sup_verdict sup_policy
