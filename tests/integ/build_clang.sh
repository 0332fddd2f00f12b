#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/build_clang.sh: the whole tree builds with clang as it does
# with gcc (./configure's CC), every target, with the same -Wall -Wextra
# -Werror: the project is C17 for both compilers, and clang warns where gcc
# does not (bench/lpm.c and bench/lpm6.c stepped their argument loop twice,
# -Wfor-loop-analysis, and the tree did not build with clang unnoticed).
# Builds a copy of the sources (not build/, not .git) in a directory of its
# own, removed on exit. Exit 0 pass, 1 fail, 77 skip (no clang).
# timeout: 900
set -u
cd "$(dirname "$0")/../.." || exit 1
command -v clang >/dev/null || { echo "SKIP: clang not installed (apt-get install -y clang)"; exit 77; }
command -v ninja >/dev/null || { echo "FAIL: ninja not installed"; exit 1; }
T=$(mktemp -d /tmp/rrt-clang.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }
trap 'rm -rf "$T"' EXIT
tar --exclude=./build --exclude=./.git --exclude=./config.ninja -cf - . | tar -xf - -C "$T" ||
    { echo "FAIL: cannot copy the sources to $T"; exit 1; }
cd "$T" || exit 1
if ! CC=clang ./configure >configure.log 2>&1; then
    echo "FAIL: CC=clang ./configure:"
    tail -20 configure.log
    exit 1
fi
grep -qx "cc = clang" config.ninja || { echo "FAIL: ./configure did not take CC=clang: $(grep '^cc' config.ninja)"; exit 1; }
if ! ninja -k 0 >ninja.log 2>&1; then
    echo "FAIL: the tree does not build with clang ($(grep -c '^FAILED' ninja.log) targets failed):"
    grep -A12 '^FAILED' ninja.log | head -60
    exit 1
fi
n=$(find build/bin -type f -perm -u+x | wc -l)
[ "$n" -gt 0 ] || { echo "FAIL: ninja succeeded but build/bin holds no executable"; exit 1; }
echo "PASS: build_clang: every target built with $(clang --version | head -1) ($n executables)"
