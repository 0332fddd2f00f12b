#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_leak.sh: the shutdown census counts leaks.
#   1. The stand-in graph (rr-null drivers, rr-passthru router) under its own
#      traffic, stopped with SIGTERM: exit 0, "census: all 4096 buffers
#      free", no LEAK line (the census rule, sup_census_ok).
#   2. The same with driver-a run as rr-null-leak-N (rr-null's test-only leak
#      mode: it allocates N buffers once ready and keeps them until its clean
#      exit): exactly one "census: LEAK: driver-a held N buffers at exit"
#      line, no other service named, driver-a stopped with status 0, the
#      final census line a LEAK, and exit status 101; the leaked buffers are
#      still freed (no buffer lost to the next census). Before the stop,
#      `inject driver-a leak 3` makes it take 3 more: those are named as
#      taken by inject, not counted in the LEAK (still N).
#   3. rr-null driver-a told `inject driver-a leak 5`, then `restart
#      driver-a` (a clean exit holding them: reclaimed): the shutdown census
#      is clean, exit 0, no LEAK line, and the log says the 5 were inject's.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_leak

N=7
sup_netns
cp "$SUP_T/bin/rr-null" "$SUP_T/bin/rr-null-leak-$N" || sup_fail "cannot copy rr-null"

# 1. No leak: exit 0 and a clean census.
sup_manifest "$SUP_T/clean.ini"
sup_start "$SUP_NS" "$SUP_T/clean.ini"
sup_stop TERM 10
echo "without a leak: exit $SUP_RC"
sup_census_ok "without a leak" # not in $(...): its sup_fail must end the test

# 2. driver-a leaks N buffers.
: >"$SUP_LOG"
sup_manifest "$SUP_T/leak.ini" driver-a.binary="rr-null-leak-$N"
sup_start "$SUP_NS" "$SUP_T/leak.ini"
out=$("$RR" inject -S "$SUP_SOCK" driver-a leak 3 2>&1) || sup_fail "inject driver-a leak 3: $out"
sup_stop TERM 10
grep -q '^ringrouter: driver-a: census: 3 buffers held at exit were taken by `inject leak`; reclaimed, not a leak$' \
    "$SUP_LOG" || sup_fail "the 3 buffers inject took are not named as inject's"
echo "with driver-a leaking $N buffers: exit $SUP_RC; the census lines:"
grep '^ringrouter: census' "$SUP_LOG" | sed 's/^/  /'
[ "$SUP_RC" = 101 ] || sup_fail "exit status $SUP_RC, expected 101 (SUP_EXIT_INTERNAL)"
grep -q '^ringrouter: driver-a: stopped (exited with status 0)$' "$SUP_LOG" ||
    sup_fail "driver-a did not stop cleanly: a leak is counted only at a clean exit"
leaks=$(grep -c '^ringrouter: census: LEAK: [a-z-]* held' "$SUP_LOG")
[ "$leaks" = 1 ] || sup_fail "$leaks per-service LEAK lines, expected exactly 1"
grep -q "^ringrouter: census: LEAK: driver-a held $N buffers at exit$" "$SUP_LOG" ||
    sup_fail "no \"census: LEAK: driver-a held $N buffers at exit\" line"
last=$(grep '^ringrouter: census: ' "$SUP_LOG" | tail -n 1)
[[ $last =~ ^ringrouter:\ census:\ LEAK:\ $N\ buffers\ left\ held\ by\ services\ at\ exit.*\ all\ 4096\ free\ after\ reclaim$ ]] ||
    sup_fail "the final census line is not the leak summary with every buffer freed: $last"
# The census rule itself must reject this run.
out=$(t_census_check "$SUP_LOG" "$SUP_RC") && sup_fail "t_census_check accepted a leaking run: $out"
echo "t_census_check rejects it: $(head -n 1 <<<"$out")"

# 3. Only what inject took, reclaimed at a restart: no leak at shutdown.
: >"$SUP_LOG"
sup_start "$SUP_NS" "$SUP_T/clean.ini"
out=$("$RR" inject -S "$SUP_SOCK" driver-a leak 5 2>&1) || sup_fail "inject driver-a leak 5: $out"
# shellcheck disable=SC2034 # used in the eval below
old=$(sup_status && echo "${SUP_PIDS[driver-a]}")
"$RR" restart -S "$SUP_SOCK" driver-a >/dev/null 2>&1 || sup_fail "restart driver-a"
sup_wait 5 eval 'sup_all_up && [ "${SUP_PIDS[driver-a]}" != "$old" ]' || sup_fail "driver-a not up again after its restart"
grep -q '^ringrouter: driver-a: census: 5 buffers held at exit were taken by `inject leak`; reclaimed, not a leak$' \
    "$SUP_LOG" || sup_fail "the restart did not say the 5 buffers were inject's"
sup_stop TERM 10
echo "inject leak 5, then restart driver-a: exit $SUP_RC"
sup_census_ok "after inject leak and a restart"

t_pass "sup_leak: a leak of $N buffers is named and fails the census (exit 101), inject's are not; a clean run exits 0"
