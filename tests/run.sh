#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run.sh [all|unit|integ]: run every test binary ninja built and every
# integration script, each under a timeout, and print one summary line.
#   build/bin/tests/test_*   unit tests (cmocka), plain build
#   build/bin/asan/test_*    the same under AddressSanitizer + UBSan
#   build/bin/tsan/test_*    thread tests under ThreadSanitizer
#   tests/integ/*.sh         namespace tests (root); exit 77 = skipped
# tests/timeouts sets a test's timeout in seconds by its name ("NAME SECS"),
# and a third word "retry" marks a test that asserts timing or throughput
# bounds (restart latency, TCP rates under a shaper) on this noisy 2-vCPU
# machine: when it fails it runs once more, and the summary says
# so ("PASS ... on its second run"), so a slow moment is visible, not hidden.
set -u
cd "$(dirname "$0")/.."
suite=${1:-all}
default_timeout=${TEST_TIMEOUT:-300}
log_dir=build/test-logs
mkdir -p "$log_dir"

pass=0 fail=0 skip=0
failed=()

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

retries_for() {
    awk -v n="$1" '$1 == n && $3 == "retry" { found = 1 } END { print found ? 1 : 0 }' tests/timeouts 2>/dev/null
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
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ "$(retries_for "$base")" = 1 ]; then
        mv "$log" "$log.first"
        printf 'RETRY %-43s exit %d on its first run; its log: %s.first\n' "$label" "$rc" "$log"
        sed 's/^/    | /' "$log.first" | grep -E 'BAD|FAIL' | head -n 10
        run_isolated "$log" timeout --kill-after=10 "$t" "$@"
        rc=$?
        note=" on its second run"
    fi
    end=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    case $rc in
    0)
        pass=$((pass + 1))
        printf 'PASS %-44s %6ss%s\n' "$label" "$secs" "$note"
        ;;
    77)
        skip=$((skip + 1))
        printf 'SKIP %-44s %s\n' "$label" "$(tail -n 1 "$log")"
        ;;
    124 | 137)
        fail=$((fail + 1))
        failed+=("$label")
        printf 'FAIL %-44s timed out after %ss\n' "$label" "$t"
        sed 's/^/    | /' "$log" | tail -n 40
        ;;
    *)
        fail=$((fail + 1))
        failed+=("$label")
        printf 'FAIL %-44s exit %d\n' "$label" "$rc"
        sed 's/^/    | /' "$log" | tail -n 60
        ;;
    esac
}

if [ "$suite" = all ] || [ "$suite" = unit ]; then
    for variant in tests asan tsan; do
        for t in build/bin/$variant/test_*; do
            [ -x "$t" ] || continue
            run_one "$variant/$(basename "$t")" "$t"
        done
    done
fi
if [ "$suite" = all ] || [ "$suite" = integ ]; then
    for t in tests/integ/*.sh; do
        [ -x "$t" ] || continue
        run_one "integ/$(basename "$t")" "$t"
    done
fi

echo
if [ "$fail" -gt 0 ]; then
    echo "failed: ${failed[*]} (logs in $log_dir/)"
fi
echo "tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
