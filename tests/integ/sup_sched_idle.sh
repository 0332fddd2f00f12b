#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_sched_idle.sh: a new instance does not take the path's CPU
# until it serves (issue 43; supervisor/spawn.c), with the stand-ins and
# router.sched = batch, driver-a.nice = -5:
#   - every warm standby, exec'd and parked, is in SCHED_IDLE (policy 5 in
#     /proc/PID/stat), driver-a's at nice -5 still;
#   - every running instance is in its configured class: the router in
#     SCHED_BATCH (3), the others SCHED_OTHER (0);
#   - `restart router` promotes its standby: the new running pid is the
#     former standby, now in SCHED_BATCH, and its own new standby is idle;
#   - `restart driver-a`: the new instance serves in SCHED_OTHER at nice -5
#     (an upgrade is this restart with a standby of another binary,
#     upgrade.sh; the stand-ins carry no layout stamp to upgrade to);
#   - a kill -9 of driver-b: its successor serves in SCHED_OTHER;
#   - a clean census.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_sched_idle

# field PID N: field N of /proc/PID/stat (after the command's parentheses).
field() { awk -v n="$2" '{ sub(/^.*\) /, ""); print $(n - 2) }' "/proc/$1/stat" 2>/dev/null; }
want_policy() { # want_policy SVC: the class its manifest gives it
    case $1 in router) echo 3 ;; *) echo 0 ;; esac
}
# Every service up with a parked standby (status shows its pid without '*').
all_parked() {
    sup_all_up || return 1
    local s
    for s in "${SUP_SERVICES[@]}"; do
        [[ ${SUP_STANDBY[$s]:-} =~ ^[0-9]+$ ]] || return 1
    done
}
check_all() { # check_all WHEN
    local s p sb
    for s in "${SUP_SERVICES[@]}"; do
        p=${SUP_PIDS[$s]} sb=${SUP_STANDBY[$s]}
        [ "$(field "$p" 41)" = "$(want_policy "$s")" ] ||
            sup_fail "$1: $s pid $p serves with policy $(field "$p" 41), not $(want_policy "$s")"
        [ "$(field "$sb" 41)" = 5 ] ||
            sup_fail "$1: $s's parked standby pid $sb has policy $(field "$sb" 41), not 5 (SCHED_IDLE)"
    done
    [ "$(field "${SUP_STANDBY[driver-a]}" 19)" = -5 ] ||
        sup_fail "$1: driver-a's standby is at nice $(field "${SUP_STANDBY[driver-a]}" 19), not -5"
    echo "ok: $1: every standby in SCHED_IDLE, every running instance in its own class"
}

sup_netns
sup_manifest "$SUP_T/m.ini" driver-a.nice=-5 router.sched=batch
sup_start "$SUP_NS" "$SUP_T/m.ini"
sup_wait 10 all_parked || sup_fail "not every service up with a parked standby within 10 s"
check_all "after up"

sb=${SUP_STANDBY[router]}
out=$("$RR" restart router -S "$SUP_SOCK" 2>&1) || sup_fail "restart router: $out"
sup_wait 10 eval 'all_parked && [ "${SUP_PIDS[router]}" = "$sb" ]' ||
    sup_fail "the router's standby pid $sb did not take over with a new standby parked within 10 s"
check_all "restart router (standby $sb promoted)"

a=${SUP_PIDS[driver-a]}
out=$("$RR" restart driver-a -S "$SUP_SOCK" 2>&1) || sup_fail "restart driver-a: $out"
sup_wait 10 eval 'all_parked && [ "${SUP_PIDS[driver-a]}" != "$a" ]' ||
    sup_fail "driver-a was not restarted with a new standby parked within 10 s"
[ "$(field "${SUP_PIDS[driver-a]}" 19)" = -5 ] || sup_fail "driver-a's new instance runs at nice $(field "${SUP_PIDS[driver-a]}" 19)"
check_all "restart driver-a"

b=${SUP_PIDS[driver-b]}
kill -KILL "$b"
sup_wait 10 eval 'all_parked && [ "${SUP_PIDS[driver-b]}" != "$b" ]' ||
    sup_fail "driver-b was not back with a new standby parked within 10 s of its kill"
check_all "kill -9 driver-b"

sup_stop
sup_census_ok
echo "PASS sup_sched_idle"
