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
# t_timing_fail): it runs once more, alone, with the same RR_TEST_SEED, and
# counts as flaky if that run passes, failed if not; anything else, or a
# timeout, failed. Every test gets RR_TEST_SEED (random, printed; set it to
# reproduce a run). tests/timeouts sets a test's timeout in seconds ("NAME
# SECS").
# RR_TEST_JOBS (default 2) tests run at once, each in its own session with
# its own namespaces and temp dir. tests/serial ("NAME MODE reason") names
# the exceptions: MODE alone (its timing bounds need the machine to
# itself: it runs alone, after the others), heavy (it loads the machine
# but bears load: only unit tests, which have no timing bound, run beside
# it) or slot (a unit test that asserts a wall-clock bound or its
# scheduling class: it runs in a slot, never at idle priority). tests/background names tests (a build:
# CPU, no timing) that run from the start beside the others, at idle CPU
# priority, in no slot. Unit tests (CPU, no timing bound) run the same way,
# RR_TEST_IDLE_JOBS (default 2) at a time, and take a slot only when no
# namespace test can have it (beside a heavy one, or at the end). With
# RR_TEST_JOBS=1 every test runs alone. RR_TEST_BUILD (./run test): the
# rest of the build, the ASan and TSan unit tests, at idle priority beside
# the first tests (below). A line is printed as each test ends.
# tests/expected pins the test list (one label per line, sorted, as printed
# here): a label it names that is not built, or a test it does not name,
# fails the run.
set -u
cd "$(dirname "$0")/.."
suite=${1:-all}
default_timeout=${TEST_TIMEOUT:-300}
jobs=${RR_TEST_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: RR_TEST_JOBS must be a positive integer, not \"$jobs\"" >&2; exit 2; }
idle_jobs=${RR_TEST_IDLE_JOBS:-2}
[[ $idle_jobs =~ ^[0-9]+$ ]] || { echo "run.sh: RR_TEST_IDLE_JOBS must be a number, not \"$idle_jobs\"" >&2; exit 2; }
[ "$jobs" -gt 1 ] || idle_jobs=0
log_dir=build/test-logs
mkdir -p "$log_dir"
t_begin=$EPOCHREALTIME
: >"$log_dir/timeline"

pass=0 fail=0 flaky=0 skip=0
failed=() flakies=() skipped=()
# One seed for the whole run, so that RR_TEST_SEED=N tests/run.sh repeats it.
RR_TEST_SEED=${RR_TEST_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
export RR_TEST_SEED
echo "run.sh: RR_TEST_SEED=$RR_TEST_SEED${RR_NO_SKIP:+, RR_NO_SKIP=$RR_NO_SKIP (a skip fails)}, $jobs at a time (RR_TEST_JOBS)"

declare -A timeouts=()
while read -r name secs _; do
    [ -n "$name" ] && timeouts[$name]=$secs
done < <(cat tests/timeouts 2>/dev/null)
timeout_for() { echo "${timeouts[$1]:-$default_timeout}"; }

declare -A serial=() background=()
while read -r name mode _; do
    case $name in '' | '#'*) continue ;; esac
    case $mode in
    alone | heavy | slot) serial[$name]=$mode ;;
    *) echo "run.sh: tests/serial: $name: mode \"$mode\", expected alone, heavy or slot" >&2; exit 2 ;;
    esac
done < <(cat tests/serial 2>/dev/null)
while read -r name _; do
    case $name in '' | '#'*) continue ;; esac
    background[$name]=1
done < <(cat tests/background 2>/dev/null)

# Run a test in a session of its own with only fds 0-2, then end whatever it
# left behind in that session, by PID. A test that leaks a process must not
# outlive its run, nor hold a pipe of ours (a leaked iperf3 holding ninja's
# or CI's output pipe would stall the whole run). Each runs in a background
# job of run.sh, so $pid and the session are this job's alone.
run_isolated() { # run_isolated LOG CMD...
    local log=$1 pid rc left
    shift
    # A background job here is not a group leader, so setsid(1) makes it
    # the leader of a new session without forking: $! is the session id.
    setsid bash -c 'for f in /proc/$$/fd/*; do f=${f##*/}; [ "$f" -gt 2 ] && eval "exec $f>&-"; done 2>/dev/null
        exec "$@"' run_isolated "$@" </dev/null >"$log" 2>&1 &
    pid=$!
    # run.sh stopped (Ctrl-C, CI's timeout): the test too (timeout(1)
    # passes it on), then its leftovers below.
    trap 'kill -TERM "$pid" 2>/dev/null' TERM
    while :; do
        wait "$pid"
        rc=$?
        # A wait cut short by the trap returns > 128 with the test alive.
        if [ "$rc" -le 128 ] || ! kill -0 "$pid" 2>/dev/null; then break; fi
    done
    left=$(ps -eo pid=,sid= | awk -v s="$pid" '$2 == s && $1 != s { print $1 }')
    if [ -n "$left" ]; then
        echo "run.sh: the test left processes behind: $(ps -o pid=,args= -p "${left//$'\n'/,}" | tr '\n' ';')" >>"$log"
        kill -KILL $left 2>/dev/null
    fi
    return "$rc"
}

# The tests to run: T_LABEL[i], T_CMD[i] (one path), T_MODE[i] (alone,
# heavy, slot, background, or empty: parallel).
T_LABEL=() T_CMD=() T_MODE=()
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
add_test() { # add_test LABEL PATH
    check_expected "$1" || return 0
    local base=${2##*/} m=
    if [ -n "${serial[$1]+x}" ]; then
        m=${serial[$1]}
    elif [ -n "${serial[$base]+x}" ]; then
        m=${serial[$base]}
    elif [ "$jobs" -gt 1 ] && { [ -n "${background[$1]+x}" ] || [ -n "${background[$base]+x}" ]; }; then
        m=background
    fi
    T_LABEL+=("$1") T_CMD+=("$2") T_MODE+=("$m")
}

# RR_TEST_BUILD (./run test sets it to "ninja"): the rest of a build, run
# at idle priority beside the first tests. ./run builds everything but the
# ASan, TSan and fuzz builds (and the ASan supervisor) before it starts
# run.sh; the ASan and TSan unit tests join the run (and the check against
# tests/expected) once the build is done, and the background tests, the
# fuzzers among them, start after it.
build_cmd=${RR_TEST_BUILD:-}
[ "$suite" != integ ] || build_cmd=
late_variants=() # the unit variants the build still makes
[ -z "$build_cmd" ] || late_variants=(asan tsan)

add_units() { # add_units VARIANT...
    local variant t
    for variant in "$@"; do
        for t in build/bin/$variant/test_*; do
            [ -x "$t" ] || continue
            add_test "$variant/$(basename "$t")" "$t"
        done
    done
}
# missing skip|only [VARIANT...]: fail what tests/expected names and
# nothing built, but for (or only for) the labels of those variants.
missing() {
    local how=$1 label p late
    shift
    for label in "${!expected[@]}"; do
        [ -n "${seen[$label]+x}" ] && continue
        late=skip # (not one of them: reported by "skip")
        for p in "$@"; do [[ $label == "$p"/* ]] && late=only; done
        [ "$late" = "$how" ] || continue
        printf 'FAIL %-44s in tests/expected but not built or not executable\n' "$label"
        fail=$((fail + 1))
        failed+=("$label")
    done
}

if [ "$suite" = all ] || [ "$suite" = unit ]; then
    add_units tests
    [ -n "$build_cmd" ] || add_units asan tsan
fi
if [ "$suite" = all ] || [ "$suite" = integ ]; then
    for t in tests/integ/*.sh; do
        [ -x "$t" ] || continue
        add_test "integ/$(basename "$t")" "$t"
    done
fi
missing skip "${late_variants[@]}"

# The longest first, so that the last to end is a short one: each test's
# time in the last run (build/test-logs/durations), else its timeout.
declare -A last=()
[ -f "$log_dir/durations" ] && while read -r label secs; do last[$label]=$secs; done <"$log_dir/durations"
queue=() serial_queue=() bg_queue=()
enqueue() { # enqueue FIRST: tests FIRST.. of T_LABEL into their queues
    local i
    while read -r _ i; do
        case ${T_MODE[i]} in
        alone) serial_queue+=("$i:1") ;;
        background) bg_queue+=("$i:1") ;;
        *) queue+=("$i:1") ;;
        esac
    done < <(for ((i = $1; i < ${#T_LABEL[@]}; i++)); do
        printf '%s %s\n' "${last[${T_LABEL[i]}]:-$(timeout_for "${T_CMD[i]##*/}")}" "$i"
    done | sort -s -k1,1gr)
}
enqueue 0

is_unit() { [[ ${T_LABEL[$1]} != integ/* ]]; }
# May test I start now in a free slot? Beside a heavy test only unit
# tests without a wall-clock bound; a heavy test only beside those.
may_start() {
    if [ "$running_heavy" -gt 0 ]; then
        is_unit "$1" && [ "${T_MODE[$1]}" != slot ]
    elif [ "${T_MODE[$1]}" = heavy ]; then
        [ "$running_integ" = 0 ] && [ "$running_slot" = 0 ]
    fi
}

log_of() { echo "$log_dir/$(echo "$1" | tr '/ ' '__').log"; }

# A unit test the idle runner may take: CPU and no wall-clock bound.
idle_ok() { is_unit "$1" && [ -z "${T_MODE[$1]}" ]; }

declare -A J_TEST=() J_START=() J_BG=() J_IDLE=()
running=0 alone='' sum_secs=0 serial_secs=0 idle_secs=0
running_integ=0 running_heavy=0 running_slot=0 # in the slots: not unit tests; heavy ones; "slot" ones
running_idle=0                  # unit tests at idle priority, in no slot
declare -A first_secs=() durations=()

start() { # start I:ATTEMPT [idle]
    local i=${1%:*} a=${1#*:} label log t pid
    label=${T_LABEL[i]}
    log=$(log_of "$label")
    t=$(timeout_for "${T_CMD[i]##*/}")
    [ "$a" = 2 ] && mv "$log" "$log.first"
    if { [ "${T_MODE[i]}" = background ] && [ "$a" = 1 ]; } || [ "${2:-}" = idle ]; then
        # SCHED_IDLE: it takes only the CPU no other test wants, so that
        # it cannot delay anything timed beside it.
        run_isolated "$log" chrt --idle 0 timeout --kill-after=10 "$t" "${T_CMD[i]}" &
        pid=$!
        J_BG[$pid]=1
        if [ "${2:-}" = idle ]; then
            J_IDLE[$pid]=1
            running_idle=$((running_idle + 1))
        fi
    else
        run_isolated "$log" timeout --kill-after=10 "$t" "${T_CMD[i]}" &
        pid=$!
        running=$((running + 1))
        is_unit "$i" || running_integ=$((running_integ + 1))
        [ "${T_MODE[i]}" != heavy ] || running_heavy=$((running_heavy + 1))
        [ "${T_MODE[i]}" != slot ] || running_slot=$((running_slot + 1))
    fi
    J_TEST[$pid]=$1 J_START[$pid]=$EPOCHREALTIME
}

# A test ended with status RC after SECS: count it and print its line.
finish() { # finish I:ATTEMPT RC SECS [idle]
    local i=${1%:*} a=${1#*:} rc=$2 secs=$3 label log t note=""
    shift 3
    label=${T_LABEL[i]}
    log=$(log_of "$label")
    # Where the time went: LABEL START END HOW, in seconds from the start.
    awk -v l="$label" -v b="$t_begin" -v n="$EPOCHREALTIME" -v s="$secs" -v m="${1:-${T_MODE[i]:-slot}}" \
        'BEGIN { printf "%s %.1f %.1f %s\n", l, n - b - s, n - b, m }' >>"$log_dir/timeline"
    sum_secs=$(awk -v a="$sum_secs" -v b="$secs" 'BEGIN { print a + b }')
    [ "${1:-}" != idle ] || idle_secs=$(awk -v a="$idle_secs" -v b="$secs" 'BEGIN { print a + b }')
    [ "${T_MODE[i]}" = alone ] || [ "$a" = 2 ] && serial_secs=$(awk -v a="$serial_secs" -v b="$secs" 'BEGIN { print a + b }')
    if [ "$rc" -eq 75 ] && [ "$a" = 1 ]; then
        # Only timing-bound checks failed: once more, same seed, alone
        # (after the others). A pass then is flaky, shown and counted
        # apart, never a plain pass.
        printf 'RERUN %-43s exit 75 (timing) on its first run, RR_TEST_SEED=%s; its log: %s.first; it runs again alone\n' "$label" "$RR_TEST_SEED" "$log"
        grep -E 'TIMING' "$log" | head -n 10 | sed 's/^/    | /'
        first_secs[$i]=$secs
        serial_queue+=("$i:2")
        return
    fi
    if [ "$a" = 2 ]; then
        secs=$(awk -v a="${first_secs[$i]}" -v b="$secs" 'BEGIN { printf "%.1f", a + b }')
        [ "$rc" -eq 0 ] && rc=flaky
        note=" on its second run"
    fi
    durations[$label]=$secs
    if [ "$rc" = 77 ] && [ "${RR_NO_SKIP:-0}" = 1 ]; then
        printf 'FAIL %-44s skipped, and RR_NO_SKIP=1: %s\n' "$label" "$(tail -n 1 "$log")"
        fail=$((fail + 1))
        failed+=("$label")
        return
    fi
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
        t=$(timeout_for "${T_CMD[i]##*/}")
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

stop_all() {
    local p
    for p in "${!J_TEST[@]}" $build_pid; do kill -TERM "$p" 2>/dev/null; done
    wait
    echo "run.sh: stopped by a signal, with ${#J_TEST[@]} tests running"
    exit 130
}
trap stop_all INT TERM

# Three queues: the background tests, started at once; the parallel one,
# RR_TEST_JOBS at a time in the slots, its unit tests also
# RR_TEST_IDLE_JOBS at a time at idle priority; then the serial one
# (tests/serial, and every rerun), one at a time with nothing beside it
# but the background, once the parallel one is done.
build_pid=
if [ -n "$build_cmd" ]; then
    echo "run.sh: $build_cmd: the ASan, TSan and fuzz builds at idle priority beside the first tests"
    # shellcheck disable=SC2086 # a command and its arguments
    run_isolated "$log_dir/build.log" chrt --idle 0 $build_cmd &
    build_pid=$!
else
    for b in "${bg_queue[@]}"; do start "$b"; done
fi
while :; do
    while [ -z "$alone" ] && [ "$running" -lt "$jobs" ] && [ ${#queue[@]} -gt 0 ]; do
        pick='' held='' spare='' integ_left=''
        for k in "${!queue[@]}"; do
            is_unit "${queue[k]%:*}" || integ_left=1
        done
        for k in "${!queue[@]}"; do
            i=${queue[k]%:*}
            # A heavy test waiting for the integration tests in the slots
            # to end holds back the ones after it, or it would wait to the end.
            [ -n "$held" ] && ! is_unit "$i" && continue
            # A heavy test waits for the rest of the build: the ASan and
            # TSan unit tests it makes are what may run beside it.
            [ "${T_MODE[i]}" = heavy ] && [ -n "$build_pid" ] && continue
            if may_start "$i"; then
                # A unit test the idle runner can take waits for it: it
                # takes a slot beside a heavy test (which no other test may
                # have), or once every namespace test of the queue started.
                if [ "$idle_jobs" -gt 0 ] && [ "$running_heavy" = 0 ] && idle_ok "$i"; then
                    [ -n "$spare" ] || spare=$k
                    continue
                fi
                pick=$k
                break
            fi
            [ "${T_MODE[i]}" = heavy ] && held=1
        done
        [ -n "$pick" ] || [ -n "$integ_left" ] || pick=$spare
        [ -n "$pick" ] || break
        start "${queue[pick]}"
        unset "queue[pick]"
        queue=("${queue[@]}")
    done
    while [ "$running_idle" -lt "$idle_jobs" ]; do
        pick=''
        for k in "${!queue[@]}"; do
            idle_ok "${queue[k]%:*}" && { pick=$k; break; }
        done
        [ -n "$pick" ] || break
        start "${queue[pick]}" idle
        unset "queue[pick]"
        queue=("${queue[@]}")
    done
    # The alone tests once everything else is done, the unit tests too:
    # nothing but the background beside them (a new instance of a service
    # sets up at idle priority, and would share that CPU with them).
    if [ "$running" = 0 ] && [ "$running_idle" = 0 ] && [ ${#queue[@]} = 0 ] && [ -z "$build_pid" ] &&
        [ ${#serial_queue[@]} -gt 0 ]; then
        alone=1
        start "${serial_queue[0]}"
        serial_queue=("${serial_queue[@]:1}")
    fi
    [ ${#J_TEST[@]} = 0 ] && [ -z "$build_pid" ] && break
    done_pid=
    wait -n -p done_pid
    rc=$?
    if [ -n "$build_pid" ] && [ "$done_pid" = "$build_pid" ]; then
        build_pid=
        awk -v b="$t_begin" -v n="$EPOCHREALTIME" 'BEGIN { printf "build 0.0 %.1f idle\n", n - b }' >>"$log_dir/timeline"
        if [ "$rc" != 0 ]; then
            printf 'FAIL %-44s exit %d\n' "build: $build_cmd" "$rc"
            sed 's/^/    | /' "$log_dir/build.log" | tail -n 40
            fail=$((fail + 1))
            failed+=("build")
        fi
        n=${#T_LABEL[@]}
        add_units "${late_variants[@]}"
        enqueue "$n"
        missing only "${late_variants[@]}"
        late_variants=()
        for b in "${bg_queue[@]}"; do start "$b"; done
        continue
    fi
    if [ -z "$done_pid" ] || [ -z "${J_TEST[$done_pid]+x}" ]; then continue; fi
    job=${J_TEST[$done_pid]}
    secs=$(awk -v a="${J_START[$done_pid]}" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    how=
    if [ -n "${J_BG[$done_pid]+x}" ]; then
        unset "J_BG[$done_pid]"
        how=idle
        if [ -n "${J_IDLE[$done_pid]+x}" ]; then
            unset "J_IDLE[$done_pid]"
            running_idle=$((running_idle - 1))
        fi
    else
        running=$((running - 1))
        i=${job%:*}
        is_unit "$i" || running_integ=$((running_integ - 1))
        [ "${T_MODE[i]}" != heavy ] || running_heavy=$((running_heavy - 1))
        [ "${T_MODE[i]}" != slot ] || running_slot=$((running_slot - 1))
    fi
    unset "J_TEST[$done_pid]" "J_START[$done_pid]"
    [ "$running" = 0 ] && alone=
    finish "$job" "$rc" "$secs" $how
done

# Each test's time, for the next run's order (a test not run this time
# keeps its last one).
for label in "${!durations[@]}"; do last[$label]=${durations[$label]}; done
for label in "${!last[@]}"; do echo "$label ${last[$label]}"; done >"$log_dir/durations.new" &&
    mv "$log_dir/durations.new" "$log_dir/durations"

echo
[ "$fail" -gt 0 ] && echo "failed: ${failed[*]} (logs in $log_dir/)"
[ "$flaky" -gt 0 ] && echo "flaky (passed only when rerun with RR_TEST_SEED=$RR_TEST_SEED): ${flakies[*]}"
[ "$skip" -gt 0 ] && echo "skipped: ${skipped[*]}"
awk -v b="$t_begin" -v e="$EPOCHREALTIME" -v s="$sum_secs" -v a="$serial_secs" -v d="$idle_secs" -v j="$jobs" \
    'BEGIN { printf "run.sh: wall time %.0f s; the tests'"'"' own times add up to %.0f s, %.0f s of it alone (tests/serial, reruns), %.0f s at idle priority (tests/background, unit tests); %d at a time\n", e - b, s, a, d, j }'
echo "tests: $pass passed, $fail failed, $flaky flaky, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
