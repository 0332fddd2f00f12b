#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_hostile_stats.sh: a service's stats region is the
# service's to write, and the supervisor reads it for `stats`, `stats
# --stages` and `shaper show`. driver-a runs as rr-null-evil-stats
# (tests/svc/nulldrv.c), which fills every counter and stage name with 32
# and 40 bytes of no NUL, quotes, backslashes, control and non-ASCII bytes,
# and claims 2^32 - 1 counters and stages. The supervisor must stay up, print
# only what the region holds, and keep `--json` valid JSON (the old code
# printed the names as they were); the other services are untouched; census
# clean.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_hostile_stats

cp "$SUP_T/bin/rr-null" "$SUP_T/bin/rr-null-evil-stats" || sup_fail "cannot copy rr-null"
sup_netns
SUP_ROUTER_KEYS="stages = on" sup_manifest "$SUP_T/m.ini" driver-a.binary=rr-null-evil-stats
sup_start "$SUP_NS" "$SUP_T/m.ini"
sup_wait 5 grep -q 'evil-stats mode' "$SUP_LOG" || sup_fail "driver-a did not say it spoiled its stats"

for args in "stats --json" "stats --all --json" "stats --stages --json"; do
    # shellcheck disable=SC2086
    out=$("$RR" $args -S "$SUP_SOCK" 2>&1) || sup_bad "$args: exit $?: $(head -c 200 <<<"$out")"
    "$SUP_PY" -c '
import json, sys
d = json.loads(sys.stdin.buffer.read().decode("ascii"))
names = [s["name"] for s in d["services"]]
assert "driver-a" in names and "router" in names, names' <<<"$out" 2>"$SUP_T/json.err" ||
        sup_bad "$args: not ASCII JSON with every service: $(tail -n 1 "$SUP_T/json.err")"
done
out=$("$RR" stats --all -S "$SUP_SOCK" 2>&1) || sup_bad "stats --all: exit $?"
# At most the region's IPC_SVC_MAX_CTR (192) counters, each name cut at 32
# bytes, printable: nothing read past the names.
n=$(awk '/^driver-a \(/ { on = 1; next } on && /^[a-z]/ { on = 0 } on && /^  / { n++ } END { print n + 0 }' <<<"$out")
[ "$n" -le 192 ] || sup_bad "stats --all lists $n counters for driver-a, past the region's 192"
LC_ALL=C grep -q '[^[:print:][:space:]]' <<<"$out" && sup_bad "stats printed a non-printable byte"
"$RR" stats --stages -S "$SUP_SOCK" >/dev/null 2>&1 || sup_bad "stats --stages: exit $?"
sup_alive "$SUP_PID" || sup_fail "the supervisor died"
sup_all_up || sup_bad "a service is not up"
sup_stop TERM 10
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "$out"
sup_verdict sup_hostile_stats
