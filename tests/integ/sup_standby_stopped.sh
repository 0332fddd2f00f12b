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
fails=0
bad() {
    echo "  BAD: $*"
    fails=$((fails + 1))
}

parked() { sup_status && [[ ${SUP_STANDBY[driver-a]} =~ ^[0-9]+$ ]]; }
sup_wait 5 parked || sup_fail "driver-a has no parked standby within 5 s (status: ${SUP_STANDBY[driver-a]:-?})"
old=${SUP_PIDS[driver-a]} sb=${SUP_STANDBY[driver-a]}
kill -STOP "$sb"
sup_now
t0=$SUP_NOW
kill -KILL "$old"
back() { sup_status && [ "${SUP_STATE[driver-a]}" = up ] && [ "${SUP_PIDS[driver-a]}" != "$old" ]; }
sup_wait 4 back || sup_fail "driver-a was not up again within 4 s of kill -9 with its standby stopped"
sup_now
ms=$(((SUP_NOW - t0) / 1000))
echo "driver-a up again $ms ms after kill -9, pid ${SUP_PIDS[driver-a]} (the stopped standby was $sb)"
[ "${SUP_PIDS[driver-a]}" != "$sb" ] || bad "the stopped standby $sb was promoted"
grep -qx "ringrouter: driver-a: standby pid $sb is stopped; starting a new instance instead" "$SUP_LOG" ||
    bad "no \"standby pid $sb is stopped\" line"
! grep -q "^ringrouter: driver-a: standby pid $sb takes over$" "$SUP_LOG" || bad "the log says standby $sb took over"
[ ! -d "/proc/$sb" ] || bad "the stopped standby $sb is still there"
if [ "$ms" -ge 3000 ]; then
    echo "  TIMING: $ms ms to come back (bound 3000)"
    timing=1
fi
sup_wait 5 parked || bad "no new standby parked for driver-a within 5 s"

sup_stop TERM 10
[ "$SUP_RC" = 0 ] || bad "the supervisor exited with status $SUP_RC"
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || bad "census: $out"
[ "$fails" -eq 0 ] || sup_fail "$fails problems (above)"
[ -z "${timing:-}" ] || { echo "FAIL (timing): sup_standby_stopped"; exit 75; }
echo "PASS: sup_standby_stopped"
