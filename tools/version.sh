#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/version.sh OUT: write the version header that `ringrouter --version`
# prints (supervisor/cli.c): VERSION, and `git describe` of the tree when it
# is a git checkout of its own (not a tarball unpacked inside some other
# repository). Run by ninja at every build (rules.ninja, rule version); OUT
# is rewritten only when its text changes.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
base=$(cat "$root/VERSION" 2>/dev/null || echo unknown)
v=$base
top=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null || true)
if [ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$(cd "$root" && pwd -P)" ]; then
    g=$(git -C "$root" describe --tags --always --dirty 2>/dev/null || true)
    [ -z "$g" ] || v="$base (git $g)"
fi
new="#define RR_VERSION \"$v\""
if [ ! -f "$1" ] || [ "$(cat "$1")" != "$new" ]; then
    printf '%s\n' "$new" >"$1.tmp"
    mv "$1.tmp" "$1"
fi
