#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_ops.sh: what `status` and `inject` tell an operator, with
# the stand-ins (issue 42's operations defects):
#   1. `restart router` is a planned restart (PLANNED +1, RESTARTS +0), a
#      kill -9 of driver-a a failure (RESTARTS +1, PLANNED +0), in the table
#      and in --json (restarts, planned_restarts);
#   2. `status --json` has a supervisor block: its version (as `ringrouter
#      version` says it), pid, started_at and uptime_ms, which agree with
#      each other and with the clock;
#   3. `upgrade supervisor` (a re-exec that adopts the services): driver-a's
#      uptime goes on from where it was (not from the adoption), its
#      started_at + uptime agrees with the clock, and its counts are kept;
#   4. `inject driver-b kill` while driver-b is failed (/bin/false, given up
#      after restart_limit) is refused, exit 100, naming driver-b and its
#      state.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_ops
command -v "$SUP_PY" >/dev/null || sup_skip "needs python3"

sup_netns
sup_manifest "$SUP_T/m.ini"
sup_start "$SUP_NS" "$SUP_T/m.ini"

# json PY: status --json as d, PY's value printed ("False" fails the caller's test).
json() { "$RR" status --json -S "$SUP_SOCK" | "$SUP_PY" -c "import json, sys, time; d = json.load(sys.stdin); s = {v['name']: v for v in d['services']}; print($1)"; }

# 1. Planned apart from failures.
sup_status || sup_fail "status"
# shellcheck disable=SC2034 # old_r is used in the eval below
old_r=${SUP_PIDS[router]} old_a=${SUP_PIDS[driver-a]}
"$RR" restart -S "$SUP_SOCK" router >/dev/null || sup_fail "restart router"
sup_wait 5 eval 'sup_all_up && [ "${SUP_PIDS[router]}" != "$old_r" ]' || sup_fail "router not up again after its restart"
kill -KILL "$old_a"
sup_wait 5 eval 'sup_all_up && [ "${SUP_PIDS[driver-a]}" != "$old_a" ]' || sup_fail "driver-a not up again after kill -9"
[ "${SUP_RESTARTS[router]}/${SUP_PLANNED[router]}" = 0/1 ] ||
    sup_fail "router after \`restart\`: restarts ${SUP_RESTARTS[router]}, planned ${SUP_PLANNED[router]}; expected 0, 1"
[ "${SUP_RESTARTS[driver-a]}/${SUP_PLANNED[driver-a]}" = 1/0 ] ||
    sup_fail "driver-a after kill -9: restarts ${SUP_RESTARTS[driver-a]}, planned ${SUP_PLANNED[driver-a]}; expected 1, 0"
got=$(json '[(s[n]["restarts"], s[n]["planned_restarts"]) for n in ("router", "driver-a", "driver-b")]')
[ "$got" = "[(0, 1), (1, 0), (0, 0)]" ] || sup_fail "status --json (restarts, planned_restarts): $got"
echo "restart router: PLANNED 1, RESTARTS 0; kill -9 driver-a: RESTARTS 1, PLANNED 0 (table and --json)"

# 2. The supervisor block.
version=$("$RR" version)
version=${version#ringrouter }
got=$(json "(d['supervisor']['version'], d['supervisor']['pid'])")
[ "$got" = "('$version', $SUP_PID)" ] || sup_fail "status --json supervisor version and pid: $got, expected ('$version', $SUP_PID)"
# started_at is whole seconds, rounded down: with uptime_ms it is the
# answer's own timestamp, less up to 1 s (not this test's clock, which a
# loaded machine puts seconds later).
ok=$(json "-1.1 <= d['supervisor']['started_at'] + d['supervisor']['uptime_ms'] / 1000 - d['timestamp'] <= 0.1 and d['supervisor']['uptime_ms'] > 0")
[ "$ok" = True ] || sup_fail "supervisor block: started_at + uptime_ms is not now: $(json "d['supervisor']")"
echo "status --json supervisor: $(json "d['supervisor']")"

# 3. upgrade supervisor: driver-a's uptime goes on.
sup_wait 10 eval '[ "$(json "s[\"driver-a\"][\"uptime_ms\"] >= 1500")" = True ]' || sup_fail "driver-a not up 1.5 s"
up0=$(json 's["driver-a"]["uptime_ms"]')
mark=$(wc -l <"$SUP_LOG")
out=$("$RR" upgrade supervisor -S "$SUP_SOCK" 2>&1) || sup_fail "upgrade supervisor: $out"
sup_wait 10 eval 'tail -n +$mark "$SUP_LOG" | grep -q "adopting 3 running services"' ||
    sup_fail "the re-exec'd supervisor did not adopt: $(tail -n +"$mark" "$SUP_LOG")"
sup_wait 10 sup_all_up || sup_fail "not every service up after upgrade supervisor"
[ "${SUP_PIDS[driver-a]}" = "$(json 's["driver-a"]["pid"]')" ] || sup_fail "status and --json disagree on driver-a's pid"
got=$(json 's["driver-a"]')
ok=$(json "s['driver-a']['uptime_ms'] >= $up0 and -1.1 <= s['driver-a']['started_at'] + s['driver-a']['uptime_ms'] / 1000 - d['timestamp'] <= 0.1")
[ "$ok" = True ] || sup_fail "after upgrade supervisor, driver-a's uptime restarted or disagrees with started_at (before: $up0 ms): $got"
[ "${SUP_RESTARTS[driver-a]}/${SUP_PLANNED[driver-a]}" = 1/0 ] ||
    sup_fail "driver-a after upgrade supervisor: restarts ${SUP_RESTARTS[driver-a]}, planned ${SUP_PLANNED[driver-a]}; expected 1, 0"
echo "upgrade supervisor: driver-a up $up0 ms before, $(json 's["driver-a"]["uptime_ms"]') ms after; started_at agrees; counts kept"
sup_stop TERM 10
sup_census_ok "after upgrade supervisor"

# 4. A failed service refuses inject, naming itself.
: >"$SUP_LOG"
sup_manifest "$SUP_T/f.ini" driver-b.binary=/bin/false driver-b.restart_limit=1
sup_start_nowait "$SUP_NS" "$SUP_T/f.ini"
sup_wait 10 eval 'sup_status && [ "${SUP_STATE[driver-b]}" = failed ]' || sup_fail "driver-b is not failed"
out=$("$RR" inject -S "$SUP_SOCK" driver-b kill 2>&1)
rc=$?
[ "$rc" = 100 ] || sup_fail "inject driver-b kill while failed: exit $rc, expected 100: $out"
[[ $out == *"inject driver-b kill: driver-b is failed, not up; try again when it is" ]] ||
    sup_fail "inject driver-b kill while failed said: $out"
echo "inject into a failed service: $out"
sup_stop TERM 10
sup_census_ok "with driver-b failed"
t_pass "sup_ops: planned restarts apart, the supervisor block, uptime across upgrade supervisor, inject refusal named"
