#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/docs_symbols.sh: the docs name only what exists. Every file,
# function, symbol and manifest key that README.md, bench/README.md and
# docs/*.md put in backticks is looked up in the tree
# (tests/lib/docs_symbols.py has the rules, tests/lib/docs_symbols.allow the
# names that are not ours), the way tests/expected pins the test list: a
# rename or a removal that leaves a doc naming the old thing fails here,
# with the doc's file, line and name. It also keeps the docs reference:
# bench/README.md and docs/drivers.md at most 600 lines, no table line over
# 500 characters, no dated runs (they go to bench/results/). No root, no
# network; a few seconds.
# Exit 0 pass, 1 fail, 77 skip (no python3 or git).
set -u
cd "$(dirname "$0")/../.." || exit 1
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "SKIP: not a git checkout (the check lists the tree with git ls-files)"; exit 77; }
if ! python3 tests/lib/docs_symbols.py; then
    echo "FAIL: the docs name things the tree does not have, or are not reference (above)"
    exit 1
fi
echo "PASS: every backticked file, function, symbol and manifest key in the docs exists; the docs are reference"
