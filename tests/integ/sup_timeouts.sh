#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_timeouts.sh: the supervisor's two fixed timeouts
# (docs/supervisor.md; SUP_READY_TIMEOUT_MS and act_stop in policy.c).
#   ready: a service that never reports ready (rr-null-never-ready,
#     which sets up but never writes its readiness pipe) is killed after 5 s:
#     "NAME: not ready after 5 s; killing pid N", then handled as a death by
#     its policy: restart = always -> "killed by signal 9 (Killed);
#     restarting now" and started again; restart = never -> "...; not
#     restarting (restart = never)" and down. Not before 4.9 s after the
#     supervisor answered (the start is before that); by 6.5 s (timing).
#   stop: a service that does not end on SIGTERM (the router, SIGSTOPped,
#     hang_ms 60000) is killed 2 s into the shutdown: "router: did not stop
#     within 2 s; killing pid N", "router: stopped (killed by signal 9
#     (Killed))"; it is gone no sooner than 1.9 s after SIGTERM and the
#     supervisor exits 0 with a clean census by 4 s (timing).
# Exit 75 when only a timing upper bound failed.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_timeouts

cp "$SUP_T/bin/rr-null" "$SUP_T/bin/rr-null-never-ready" || sup_fail "cannot copy rr-null"
sup_netns
sup_manifest "$SUP_T/m.ini" router.hang_ms=60000 driver-a.binary="$SUP_T/bin/rr-null-never-ready" \
    driver-b.binary="$SUP_T/bin/rr-null-never-ready" driver-b.restart=never
sup_start_nowait "$SUP_NS" "$SUP_T/m.ini"
sup_now
t0=$SUP_NOW

# ---- ready timeout ----
pid_a=$(sed -n 's/^ringrouter: driver-a: started, pid \([0-9]*\)$/\1/p' "$SUP_LOG" | head -n 1)
pid_b=$(sed -n 's/^ringrouter: driver-b: started, pid \([0-9]*\)$/\1/p' "$SUP_LOG" | head -n 1)
[ -n "$pid_a" ] && [ -n "$pid_b" ] || sup_fail "no \"started, pid N\" lines for driver-a and driver-b"
sup_wait 3 eval 'sup_status && [ "${SUP_STATE[router]}" = up ]' || sup_fail "the router is not up"
[ "${SUP_STATE[driver-a]}" = starting ] && [ "${SUP_STATE[driver-b]}" = starting ] ||
    sup_bad "before 5 s: driver-a ${SUP_STATE[driver-a]}, driver-b ${SUP_STATE[driver-b]}, expected starting"
sup_wait 10 sup_log_line "ringrouter: driver-b: not ready after 5 s; killing pid $pid_b" ||
    sup_fail "no \"driver-b: not ready after 5 s; killing pid $pid_b\" line within 10 s"
sup_now
t_kill=$((SUP_NOW - t0))
sup_wait 2 sup_log_line "ringrouter: driver-a: not ready after 5 s; killing pid $pid_a" ||
    sup_fail "no \"driver-a: not ready after 5 s; killing pid $pid_a\" line"
echo "not ready after 5 s: killed, seen $((t_kill / 1000)) ms after the supervisor answered"
[ "$t_kill" -ge 4900000 ] || sup_bad "driver-b was killed $((t_kill / 1000)) ms after the supervisor answered, before 5 s"
[ "$t_kill" -le 6500000 ] || sup_timing_bad "driver-b was killed $((t_kill / 1000)) ms after the supervisor answered, expected ~5000"
# restart = never: down, once.
sup_wait 2 sup_log_line 'ringrouter: driver-b: killed by signal 9 (Killed); not restarting (restart = never)' ||
    sup_bad "no \"driver-b: killed by signal 9 (Killed); not restarting (restart = never)\" line"
# restart = always (the default): started again at once, starting again.
sup_wait 2 sup_log_line 'ringrouter: driver-a: killed by signal 9 (Killed); restarting now' ||
    sup_bad "no \"driver-a: killed by signal 9 (Killed); restarting now\" line"
sup_wait 2 eval '[ "$(sup_log_count "ringrouter: driver-a: started, pid [0-9]+")" = 2 ]' ||
    sup_bad "driver-a was started $(sup_log_count 'ringrouter: driver-a: started, pid [0-9]+') times, expected 2"
sup_status || sup_fail "status"
[ "${SUP_STATE[driver-b]}" = down ] || sup_bad "driver-b is ${SUP_STATE[driver-b]}, expected down"
[ "$(sup_svc_json driver-b last_exit)" = "killed by signal 9 (Killed)" ] || sup_bad "driver-b last_exit \"$(sup_svc_json driver-b last_exit)\""
[ "${SUP_STATE[driver-a]}" = starting ] || sup_bad "driver-a is ${SUP_STATE[driver-a]}, expected starting (its second try)"
[ "${SUP_RESTARTS[driver-a]}" = 1 ] || sup_bad "driver-a restarts ${SUP_RESTARTS[driver-a]}, expected 1"
[ "$(sup_log_count 'ringrouter: driver-b: started, pid [0-9]+')" = 1 ] || sup_bad "driver-b (restart = never) was started again"
sup_alive "$pid_a" && sup_bad "driver-a's first instance (pid $pid_a) is still there"
sup_alive "$pid_b" && sup_bad "driver-b (pid $pid_b) is still there"
echo "policy after the kill: always -> started again (${SUP_STATE[driver-a]}), never -> down"

# ---- stop timeout: SIGKILL 2 s after SIGTERM ----
router=${SUP_PIDS[router]}
kill -STOP "$router" || sup_fail "kill -STOP $router"
sup_now
t_term=$SUP_NOW
kill -TERM "$SUP_PID"
t_gone=
while :; do
    sup_now
    if ! sup_alive "$router"; then
        t_gone=$((SUP_NOW - t_term))
        break
    fi
    [ $((SUP_NOW - t_term)) -gt 10000000 ] && break
    sup_msleep 5
done
[ -n "$t_gone" ] || sup_fail "the SIGSTOPped router (pid $router) was still there 10 s after SIGTERM"
sup_stop TERM 10
sup_now
t_exit=$((SUP_NOW - t_term))
echo "stop: the SIGSTOPped router gone $((t_gone / 1000)) ms after SIGTERM; the supervisor exited with status $SUP_RC after $((t_exit / 1000)) ms"
[ "$SUP_RC" = 0 ] || sup_bad "the supervisor exited with status $SUP_RC, expected 0"
sup_log_line 'ringrouter: Terminated: stopping every service' || sup_bad "no \"Terminated: stopping every service\" line"
sup_log_line "ringrouter: router: did not stop within 2 s; killing pid $router" ||
    sup_bad "no \"router: did not stop within 2 s; killing pid $router\" line"
sup_log_line 'ringrouter: router: stopped (killed by signal 9 (Killed))' || sup_bad "no \"router: stopped (killed by signal 9 (Killed))\" line"
sup_log_line 'ringrouter: driver-a: stopped (exited with status 0)' ||
    sup_bad "no \"driver-a: stopped (exited with status 0)\" line (a starting service gets SIGTERM too, and ends on it)"
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "$out"
sup_log_line 'ringrouter: down' || sup_bad "no \"down\" line"
[ "$t_gone" -ge 1900000 ] || sup_bad "the router was gone $((t_gone / 1000)) ms after SIGTERM, before the 2 s grace"
[ "$t_gone" -le 3000000 ] || sup_timing_bad "the router was gone $((t_gone / 1000)) ms after SIGTERM, expected ~2000"
[ "$t_exit" -le 4000000 ] || sup_timing_bad "the stop took $((t_exit / 1000)) ms, expected ~2000"
sup_verdict sup_timeouts
