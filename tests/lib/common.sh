# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# tests/lib/common.sh: what every integration test shares with tests/run.sh,
# the exit-code convention and the census rule (docs/testing.md). Sourced by
# tests/lib/sup.sh and tests/lib/router.sh; a test that uses neither sources
# it itself.
#
#   exit 0   passed
#   exit 75  every check passed except one or more marked timing-bound
#            (t_timing_fail): run.sh reruns the test once with the same
#            RR_TEST_SEED and counts it flaky if the rerun passes
#   exit 77  skipped (not root, a tool missing, ...)
#   other    failed
#
#   t_seed                 $T_SEED: $RR_TEST_SEED (run.sh sets it, the same on
#                          a rerun), else a fresh one; printed; seeds $RANDOM
#   t_timing_fail MSG      a check that is timing-bound (a latency, a rate on
#                          this noisy 2-vCPU machine) failed: print it,
#                          remember it, go on with the other checks
#   t_pass WHAT            the end of a test: "PASS: WHAT", or exit 75 if a
#                          timing-bound check failed
#   t_within GOT EXPECT PCT   is GOT within +-PCT % of EXPECT (numbers)?
#   t_rate GOT EXPECT PCT WHAT
#                          a measured rate: over EXPECT by more than 25 % (a
#                          limit not applied) or under a quarter of it (a flow
#                          starved) returns 1, a plain failure for the caller;
#                          else off by more than PCT % is printed as a note,
#                          not a failure: a rate's accuracy is bench/'s
#   t_exit_rc RC           for an EXIT trap: RC, but 75 for a 0 after a timing
#                          failure (a test that forgot t_pass cannot pass)
#   t_census_check LOG RC  the census rule, after `ringrouter up` (log LOG)
#                          exited with status RC: RC is 0, the last census line
#                          is "^ringrouter: census: all N buffers free", no
#                          line says "census: LEAK", and none says the
#                          supervisor found corrupt shared memory (no test
#                          but the hostile ones writes any; they set
#                          T_CORRUPT_EXPECTED=1 and check it). Prints the
#                          census line ($T_CENSUS) or what is wrong; returns
#                          0 or 1

T_TIMING_FAILS=0
T_SEED=
T_CENSUS=

t_seed() {
    T_SEED=${RR_TEST_SEED:-$((($$ ^ ${EPOCHSECONDS:-0}) & 32767))}
    RANDOM=$T_SEED
    echo "seed $T_SEED (RR_TEST_SEED=$T_SEED reproduces it)"
}

t_timing_fail() {
    T_TIMING_FAILS=$((T_TIMING_FAILS + 1))
    echo "  TIMING: $*"
}

t_pass() {
    if [ "$T_TIMING_FAILS" -gt 0 ]; then
        echo "TIMING-FAIL: $*: $T_TIMING_FAILS timing-bound check(s) failed, every other check passed (exit 75)"
        exit 75
    fi
    echo "PASS: $*"
}

t_within() {
    awk -v g="$1" -v e="$2" -v p="$3" 'BEGIN { exit !(g >= e * (1 - p / 100) && g <= e * (1 + p / 100)) }'
}

# t_rate GOT EXPECTED PCT WHAT: a rate that the behaviour bounds (a shaper
# that shapes: at most 125 % of EXPECTED; traffic that flows: at least a
# quarter) returns 1 outside them. Within them, how close it came is a
# figure, printed, never a failure: on a loaded machine it is a benchmark's
# to judge (bench/shaper), not a test's.
t_rate() {
    awk -v g="$1" -v e="$2" 'BEGIN { exit !(g <= e * 1.25 && g >= e / 4) }' || return 1
    t_within "$1" "$2" "$3" || echo "  note: $4: $1, outside $2 +- $3 % (a figure here; bench/shaper measures it)"
    return 0
}

t_exit_rc() {
    if [ "$1" = 0 ] && [ "$T_TIMING_FAILS" -gt 0 ]; then
        echo 75
    else
        echo "$1"
    fi
}

t_census_check() { # t_census_check LOG RC
    local log=$1 rc=$2 leaks
    T_CENSUS=$(grep '^ringrouter: census: ' "$log" | grep -v 'corrupt words were found' | tail -n 1)
    leaks=$(grep -c '^ringrouter: census: LEAK' "$log")
    if [ "$rc" != 0 ]; then
        echo "the supervisor exited with status $rc, expected 0 (census: ${T_CENSUS:-none})"
        grep '^ringrouter: census: LEAK' "$log" | sed 's/^/  /'
        return 1
    fi
    if [ "$leaks" != 0 ]; then
        echo "the census found leaks:"
        grep '^ringrouter: census: LEAK' "$log" | sed 's/^/  /'
        return 1
    fi
    if [ "${T_CORRUPT_EXPECTED:-0}" != 1 ] && grep -q '^ringrouter: census: [0-9]* corrupt words were found' "$log"; then
        echo "the supervisor found corrupt shared memory:"
        grep -E '^ringrouter: (census: [0-9]+ corrupt|pool |ring .*overwritten|.*: mailbox )' "$log" | head -n 20 | sed 's/^/  /'
        return 1
    fi
    if ! [[ $T_CENSUS =~ ^ringrouter:\ census:\ all\ [0-9]+\ buffers\ free ]]; then
        echo "census: ${T_CENSUS:-no census line}"
        return 1
    fi
    echo "${T_CENSUS#ringrouter: }"
}
