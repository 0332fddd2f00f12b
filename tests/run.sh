#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run.sh [all|unit|integ]: run every test binary ninja built and every
# integration script, each under a timeout, and print one summary line,
# "tests: N passed, N failed, N flaky, N skipped". docs/testing.md has the
# conventions; in short:
#   build/bin/tests/test_*   unit tests (cmocka), plain build
#   build/bin/asan/test_*    the same under AddressSanitizer + UBSan
#   build/bin/tsan/test_*    thread tests under ThreadSanitizer
#   tests/integ/*.sh         namespace tests (root)
# A test's exit status: 0 passed; 77 skipped (a failure when RR_NO_SKIP=1,
# as .ci/run sets); 75 only timing-bound checks failed (tests/lib/common.sh
# t_timing_fail): it runs once more with the same RR_TEST_SEED, and counts as
# flaky if that run passes, failed if not; anything else, or a timeout,
# failed. Every test gets RR_TEST_SEED (random, printed; set it to reproduce a
# run). tests/timeouts sets a test's timeout in seconds ("NAME SECS").
# tests/expected pins the test list (one label per line, sorted, as printed
# here): a label it names that is not built, or a test it does not name,
# fails the run.
set -u
cd "$(dirname "$0")/.."
suite=${1:-all}
default_timeout=${TEST_TIMEOUT:-300}
log_dir=build/test-logs
mkdir -p "$log_dir"

pass=0 fail=0 flaky=0 skip=0
failed=() flakies=() skipped=()
# One seed for the whole run, so that RR_TEST_SEED=N tests/run.sh repeats it.
RR_TEST_SEED=${RR_TEST_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
export RR_TEST_SEED
echo "run.sh: RR_TEST_SEED=$RR_TEST_SEED${RR_NO_SKIP:+, RR_NO_SKIP=$RR_NO_SKIP (a skip fails)}"

timeout_for() {
    local name=$1 t
    t=$(awk -v n="$name" '$1 == n { print $2 }' tests/timeouts 2>/dev/null)
    echo "${t:-$default_timeout}"
}

# Run a test in a session of its own with only fds 0-2, then end whatever it
# left behind in that session, by PID. A test that leaks a process must not
# outlive its run, nor hold a pipe of ours (a leaked iperf3 holding ninja's
# or CI's output pipe would stall the whole run).
run_isolated() { # run_isolated LOG CMD...
    local log=$1 pid rc left
    shift
    # A background job here is not a group leader, so setsid(1) makes it
    # the leader of a new session without forking: $! is the session id.
    setsid bash -c 'for f in /proc/$$/fd/*; do f=${f##*/}; [ "$f" -gt 2 ] && eval "exec $f>&-"; done 2>/dev/null
        exec "$@"' run_isolated "$@" </dev/null >"$log" 2>&1 &
    pid=$!
    wait "$pid"
    rc=$?
    left=$(ps -eo pid=,sid= | awk -v s="$pid" '$2 == s && $1 != s { print $1 }')
    if [ -n "$left" ]; then
        echo "run.sh: the test left processes behind: $(ps -o pid=,args= -p "${left//$'\n'/,}" | tr '\n' ';')" >>"$log"
        kill -KILL $left 2>/dev/null
    fi
    return "$rc"
}

run_one() { # run_one LABEL CMD...
    local label=$1
    shift
    local base t log rc start end
    base=$(basename "$1")
    t=$(timeout_for "$base")
    log="$log_dir/$(echo "$label" | tr '/ ' '__').log"
    start=$(date +%s.%N)
    run_isolated "$log" timeout --kill-after=10 "$t" "$@"
    rc=$?
    local note=""
    if [ "$rc" -eq 75 ]; then
        # Only timing-bound checks failed: once more, same seed. A pass then
        # is flaky, shown and counted apart, never a plain pass.
        mv "$log" "$log.first"
        printf 'RERUN %-43s exit 75 (timing) on its first run, RR_TEST_SEED=%s; its log: %s.first\n' "$label" "$RR_TEST_SEED" "$log"
        grep -E 'TIMING' "$log.first" | head -n 10 | sed 's/^/    | /'
        run_isolated "$log" timeout --kill-after=10 "$t" "$@"
        rc=$?
        [ "$rc" -eq 0 ] && rc=flaky
        note=" on its second run"
    fi
    if [ "$rc" = 77 ] && [ "${RR_NO_SKIP:-0}" = 1 ]; then
        printf 'FAIL %-44s skipped, and RR_NO_SKIP=1: %s\n' "$label" "$(tail -n 1 "$log")"
        fail=$((fail + 1))
        failed+=("$label")
        return
    fi
    end=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    case $rc in
    0)
        pass=$((pass + 1))
        printf 'PASS %-44s %6ss\n' "$label" "$secs"
        ;;
    flaky)
        flaky=$((flaky + 1))
        flakies+=("$label")
        printf 'FLAKY %-43s %6ss: passed only on its second run (same seed)\n' "$label" "$secs"
        ;;
    77)
        skip=$((skip + 1))
        skipped+=("$label")
        printf 'SKIP %-44s %s\n' "$label" "$(tail -n 1 "$log")"
        ;;
    124 | 137)
        fail=$((fail + 1))
        failed+=("$label")
        printf 'FAIL %-44s timed out after %ss%s\n' "$label" "$t" "$note"
        sed 's/^/    | /' "$log" | tail -n 40
        ;;
    *)
        fail=$((fail + 1))
        failed+=("$label")
        printf 'FAIL %-44s exit %d%s\n' "$label" "$rc" "$note"
        # The reason first: a log's tail can be long (the supervisor's log
        # follows a failure) and whoever shows this may fold its middle.
        grep -E '^(FAIL|FAILED|\[  FAILED  \]|ERROR|AddressSanitizer|==[0-9]+==ERROR)|: FAIL|Assertion|runtime error|^[A-Za-z]*Error: ' "$log" |
            head -n 8 | sed 's/^/    > /'
        sed 's/^/    | /' "$log" | tail -n 60
        ;;
    esac
}

# The pinned list: every label of the suites we run must be in
# tests/expected and every expected one must exist. A test that was not
# built (a missing library, a build rule lost) fails instead of vanishing.
declare -A expected=() seen=()
in_suite() { # in_suite LABEL
    case $1 in
    integ/*) [ "$suite" = all ] || [ "$suite" = integ ] ;;
    *) [ "$suite" = all ] || [ "$suite" = unit ] ;;
    esac
}
while read -r label; do
    [ -n "$label" ] && in_suite "$label" && expected[$label]=1
done <tests/expected
check_expected() { # check_expected LABEL: 0 if it may run
    seen[$1]=1
    [ -n "${expected[$1]+x}" ] && return 0
    printf 'FAIL %-44s not in tests/expected (add it, one label per line, sorted)\n' "$1"
    fail=$((fail + 1))
    failed+=("$1")
    return 1
}

if [ "$suite" = all ] || [ "$suite" = unit ]; then
    for variant in tests asan tsan; do
        for t in build/bin/$variant/test_*; do
            [ -x "$t" ] || continue
            check_expected "$variant/$(basename "$t")" && run_one "$variant/$(basename "$t")" "$t"
        done
    done
fi
if [ "$suite" = all ] || [ "$suite" = integ ]; then
    for t in tests/integ/*.sh; do
        [ -x "$t" ] || continue
        check_expected "integ/$(basename "$t")" && run_one "integ/$(basename "$t")" "$t"
    done
fi

for label in "${!expected[@]}"; do
    [ -n "${seen[$label]+x}" ] && continue
    printf 'FAIL %-44s in tests/expected but not built or not executable\n' "$label"
    fail=$((fail + 1))
    failed+=("$label")
done

echo
[ "$fail" -gt 0 ] && echo "failed: ${failed[*]} (logs in $log_dir/)"
[ "$flaky" -gt 0 ] && echo "flaky (passed only when rerun with RR_TEST_SEED=$RR_TEST_SEED): ${flakies[*]}"
[ "$skip" -gt 0 ] && echo "skipped: ${skipped[*]}"
echo "tests: $pass passed, $fail failed, $flaky flaky, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
