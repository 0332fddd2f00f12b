#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_sched.sh: how a service is started on its CPU, from the
# manifest's [service] keys (supervisor/spawn.c), with the stand-ins:
#   - nice = -5 on driver-a: its nice value is -5 (/proc/PID/stat), the
#     router's, which sets none, the data path's default (-10,
#     SUP_PATH_NICE); so is the instance that replaces driver-a after a
#     kill -9 (its warm standby, started the same way);
#   - cpu = 1 on driver-b (with 2 CPUs or more): it may run on CPU 1 only;
#   - sched = batch on the router: SCHED_BATCH (policy 3).
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_sched

# field PID N: field N of /proc/PID/stat (after the command's parentheses).
field() { awk -v n="$2" '{ sub(/^.*\) /, ""); print $(n - 2) }' "/proc/$1/stat"; }

cpus=$(nproc)
extra=()
[ "$cpus" -ge 2 ] && extra=(driver-b.cpu=1)
sup_netns
sup_manifest "$SUP_T/m.ini" driver-a.nice=-5 router.sched=batch "${extra[@]}"
sup_start "$SUP_NS" "$SUP_T/m.ini"
sup_status || sup_fail "status"
a=${SUP_PIDS[driver-a]} r=${SUP_PIDS[router]} b=${SUP_PIDS[driver-b]}
[ "$(field "$a" 19)" = -5 ] || sup_fail "driver-a (nice = -5) runs at nice $(field "$a" 19)"
[ "$(field "$r" 19)" = -10 ] || sup_fail "the router (no nice: the data path's -10) runs at nice $(field "$r" 19)"
[ "$(field "$r" 41)" = 3 ] || sup_fail "the router (sched = batch) has policy $(field "$r" 41), not 3 (SCHED_BATCH)"
echo "ok: driver-a at nice -5, the router at nice -10 and SCHED_BATCH"
if [ "$cpus" -ge 2 ]; then
    allowed=$(awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$b/status")
    [ "$allowed" = 1 ] || sup_fail "driver-b (cpu = 1) may run on CPUs $allowed"
    echo "ok: driver-b on CPU 1 only"
fi
kill -KILL "$a"
sup_wait 5 eval 'sup_status && [ "${SUP_PIDS[driver-a]}" != "$a" ] && [ "${SUP_STATE[driver-a]}" = up ]' ||
    sup_fail "driver-a was not up again within 5 s of its kill"
a2=${SUP_PIDS[driver-a]}
[ "$(field "$a2" 19)" = -5 ] || sup_fail "driver-a's successor (pid $a2) runs at nice $(field "$a2" 19)"
echo "ok: driver-a's successor, pid $a2, at nice -5 too"
sup_stop
sup_census_ok
echo "PASS sup_sched"
