#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_standby_stopped.sh: a warm standby that someone stopped
# (SIGSTOP) is not promoted when its service dies (supervisor/spawn.c): the
# supervisor says so, starts a new instance instead, and the service is back
# in well under the 5 s ready timeout a stopped standby used to cost (a
# port down 5.4 s, with a log that claimed ready in 20 ms). The stopped
# standby is ended, not left behind; a new standby is parked again; census
# clean.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_standby_stopped

sup_netns
NS=$SUP_NS
sup_manifest "$SUP_T/m.ini"
sup_start "$NS" "$SUP_T/m.ini"

parked() { sup_status && [[ ${SUP_STANDBY[driver-a]} =~ ^[0-9]+$ ]]; }
sup_wait 5 parked || sup_fail "driver-a has no parked standby within 5 s (status: ${SUP_STANDBY[driver-a]:-?})"
old=${SUP_PIDS[driver-a]} sb=${SUP_STANDBY[driver-a]}
kill -STOP "$sb"
# A stop takes effect when the standby is next scheduled: wait for its state.
stopped() { [ "$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$sb/stat" 2>/dev/null)" = T ]; }
sup_wait 2 stopped || sup_fail "the standby $sb was not stopped within 2 s of SIGSTOP"
sup_now
t0=$SUP_NOW
kill -KILL "$old"
back() { sup_status && [ "${SUP_STATE[driver-a]}" = up ] && [ "${SUP_PIDS[driver-a]}" != "$old" ]; }
sup_wait 4 back || sup_fail "driver-a was not up again within 4 s of kill -9 with its standby stopped"
sup_now
ms=$(((SUP_NOW - t0) / 1000))
echo "driver-a up again $ms ms after kill -9, pid ${SUP_PIDS[driver-a]} (the stopped standby was $sb)"
[ "${SUP_PIDS[driver-a]}" != "$sb" ] || sup_bad "the stopped standby $sb was promoted"
grep -qx "ringrouter: driver-a: standby pid $sb is stopped; starting a new instance instead" "$SUP_LOG" ||
    sup_bad "no \"standby pid $sb is stopped\" line"
! grep -q "^ringrouter: driver-a: standby pid $sb takes over$" "$SUP_LOG" || sup_bad "the log says standby $sb took over"
[ ! -d "/proc/$sb" ] || sup_bad "the stopped standby $sb is still there"
[ "$ms" -lt 3000 ] || sup_timing_bad "$ms ms to come back (bound 3000)"
sup_wait 5 parked || sup_bad "no new standby parked for driver-a within 5 s"

sup_stop TERM 10
[ "$SUP_RC" = 0 ] || sup_bad "the supervisor exited with status $SUP_RC"
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "census: $out"
sup_verdict sup_standby_stopped
