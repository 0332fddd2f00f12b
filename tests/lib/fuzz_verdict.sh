# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# tests/lib/fuzz_verdict.sh: the verdict of one libFuzzer run, shared by
# the fuzz scripts (tests/integ/fuzz_router.sh, fuzz_routes.sh, fuzz_filter.sh).
#
#   fuzz_verdict NAME LOG RC DIR KEEP BIN ORACLE
#
# LOG is the run's output, RC its exit status, DIR where libFuzzer wrote
# its artifacts (-artifact_prefix), BIN the target as the tree names it,
# ORACLE an extended regex of the target's own failure lines. Prints the
# run's summary lines, then PASS (returns 0) or FAIL with the reports and
# each crashing input kept in KEEP as NAME-crash-... (returns 1).
# fuzz_budget RUNS: libFuzzer's limits for one run, in $FUZZ_LIMITS and
# $FUZZ_SAID. By default RUNS inputs, seeds included, at most
# RR_FUZZ_CAP_SECS (120): tests/background runs the fuzz scripts at idle
# priority, where a time bound alone would buy fewer inputs the busier the
# machine. RR_FUZZ_SECS=N: N seconds instead, however many inputs (a
# longer search: RR_FUZZ_SECS=600).
fuzz_budget() {
    if [ -n "${RR_FUZZ_SECS:-}" ]; then
        FUZZ_LIMITS=(-max_total_time="$RR_FUZZ_SECS")
        FUZZ_SAID="${RR_FUZZ_SECS}s"
    else
        FUZZ_LIMITS=(-runs="$1" -max_total_time="${RR_FUZZ_CAP_SECS:-120}")
        FUZZ_SAID="$1 inputs (at most ${RR_FUZZ_CAP_SECS:-120}s)"
    fi
}

fuzz_verdict() {
    local name=$1 log=$2 rc=$3 dir=$4 keep=$5 bin=$6 oracle=$7 fail= a
    grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^Done|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" "$log"
    [ "$rc" -eq 0 ] || fail="libFuzzer exited with status $rc"
    if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|$oracle|^SUMMARY: " "$log"; then
        fail="${fail:+$fail; }a sanitizer, libFuzzer or oracle report"
    fi
    grep -q "^Done [0-9]* runs" "$log" || fail="${fail:+$fail; }no \"Done N runs\" line"
    if [ -n "$fail" ]; then
        echo "FAIL: $name: $fail"
        grep -nE "ERROR|runtime error|$oracle|SUMMARY|Test unit written|^    #[0-9]+ " "$log" | head -n 60
        for a in "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*; do
            [ -e "$a" ] || continue
            cp "$a" "$keep/$name-$(basename "$a")"
            echo "kept $keep/$name-$(basename "$a") (reproduce: $bin $keep/$name-$(basename "$a"))"
        done
        return 1
    fi
    echo "PASS $name: $(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' "$log"), no crash, no sanitizer report, no oracle failure"
}
