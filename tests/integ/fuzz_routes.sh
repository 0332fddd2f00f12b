#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/fuzz_routes.sh: run the libFuzzer target over rr-routes'
# netlink and FPM parsers and the supervisor's checks of their records
# (build/bin/fuzz/fuzz_routes, tests/fuzz/fuzz_routes.c) over 5,000 inputs
# from the seed corpus in the tree (tests/fuzz/corpus_routes, written by
# tests/fuzz/routes_seeds.py). Fails on any crash, sanitizer report,
# timeout or failed oracle (a malformed message that emits a record or
# changes the FIB); a crashing input is kept in build/test-logs/. Not a
# namespace test. Every seed runs first; RR_FUZZ_SECS sets a time instead
# of the count (fuzz_budget): a longer search is RR_FUZZ_SECS=600.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/fuzz_verdict.sh
fuzz_budget 5000
BIN=build/bin/fuzz/fuzz_routes
KEEP=build/test-logs

if [ ! -x "$BIN" ]; then
    command -v clang >/dev/null || { echo "SKIP: fuzz_routes: needs clang (libFuzzer)"; exit 77; }
    echo "FAIL: fuzz_routes: $BIN is missing: build with ninja (target fuzz) first"
    exit 1
fi
T=$(mktemp -d /tmp/rrfuzzrt.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
cp "$BIN" "$T/fuzz_routes" || exit 1
mkdir -p "$T/corpus" "$KEEP"
cp tests/fuzz/corpus_routes/* "$T/corpus/" || { echo "FAIL: fuzz_routes: no seed corpus in tests/fuzz/corpus_routes"; exit 1; }
[ "$(ls "$T/corpus" | wc -l)" -ge 20 ] || { echo "FAIL: fuzz_routes: fewer than 20 seeds"; exit 1; }

echo "fuzz_routes: $FUZZ_SAID over $(ls "$T/corpus" | wc -l) seeds"
"$T/fuzz_routes" "${FUZZ_LIMITS[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=3072 \
    -print_final_stats=1 -artifact_prefix="$T/" "$T/corpus" >"$T/log" 2>&1
rc=$?
fuzz_verdict fuzz_routes "$T/log" "$rc" "$T" "$KEEP" "$BIN" "fuzz_routes: "
