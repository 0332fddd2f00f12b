#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/stages.sh: stage counters (`ringrouter stats --stages`, issue 6)
# with the real router between two TAP ports in two namespaces:
#   - a manifest with [router] stages = on and a shaper on port b (at
#     1gbit, so that it shapes nothing here); pings, a 64-byte UDP stream and
#     a TCP stream A -> B through the router;
#   - `stats --stages` prints the table, and `stats --stages --json` parses:
#     the router, both drivers and the shaper show cycles and packets in
#     their receive, work and hand-off stages, the drivers' sent packets are
#     the "forwarded" count, and the per-forwarded-packet totals add up;
#   - plain `stats` is unchanged (parses, counters there);
#   - the same manifest with stages = off: `stats --stages` (and --json)
#     exits 100 saying the counters are off and how to turn them on;
#   - both runs end with every buffer back in the pool.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init stages
rr_need iperf3 ss
[ -x "$RR_BIN_DIR/rr-shaper" ] || rr_fail "$RR_BIN_DIR/rr-shaper is missing: build with ninja first"
{ cp "$RR_BIN_DIR/rr-shaper" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-shaper"; } || rr_fail "cannot copy rr-shaper"

PORT=5201
RR_SERVICES=(router driver-a driver-b shaper-b)
rr_topology $'[shaper b]\nrate = 1gbit'
# rr_topology writes [router] itself: the switch goes in there.
sed -i '/^\[router\]$/a stages = on' "$RR_T/m.ini"
"$RR" check -c "$RR_T/m.ini" >/dev/null || rr_fail "the manifest with stages = on does not check"
rr_start
rr_ok "router up with stages = on: A $RR_HOST_A -- [router] -- B $RR_HOST_B"

out=$(rr_in "$RR_NS_A" ping -n -q -c 100 -i 0.005 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
grep -q " 100 received" <<<"$out" || rr_fail "ping A -> B lost replies: $out"
rr_ok "A -> B 100 echoes: none lost"

ip netns exec "$RR_NS_B" iperf3 -s -B "$RR_HOST_B" -p $PORT >"$RR_T/srv-b.log" 2>&1 &
RR_EXTRA_PIDS+=($!)
listening() { rr_in "$RR_NS_B" ss -Hltn "sport = :$PORT" | grep -q LISTEN; }
rr_wait 5 listening || rr_fail "iperf3 server in B did not listen: $(cat "$RR_T/srv-b.log")"
for args in "-u -b 20M -l 64" ""; do
    # shellcheck disable=SC2086
    rr_in "$RR_NS_A" timeout 30 iperf3 -c "$RR_HOST_B" -p $PORT -t 2 --connect-timeout 3000 $args \
        >"$RR_T/iperf.out" 2>&1 || rr_fail "iperf3 $args: $(tail -n 5 "$RR_T/iperf.out")"
    rr_ok "iperf3 ${args:-TCP}: $(grep -E 'receiver' "$RR_T/iperf.out" | tail -n 1 | tr -s ' ')"
done

# ---- the table ----
table=$("$RR" stats --stages -S "$RR_SOCK" 2>&1) || rr_fail "stats --stages exited $?: $table"
echo "$table"
grep -q "^SERVICE .*STAGE .*CALLS .*PACKETS .*PKTS/CALL .*CYC/PKT .*CYC/FWD .*NS/FWD" <<<"$table" ||
    rr_fail "stats --stages: no table header"
for s in "${RR_SERVICES[@]}"; do
    grep -q "^$s  *total " <<<"$table" || rr_fail "stats --stages: no total row for $s"
done
grep -q "^all  *total " <<<"$table" || rr_fail "stats --stages: no overall total"

json=$("$RR" stats --stages --json -S "$RR_SOCK" 2>&1) || rr_fail "stats --stages --json exited $?: $json"
echo "$json" >"$RR_T/stages.json"
"$RR_PY" - "$RR_T/stages.json" "${RR_SERVICES[@]}" >"$RR_T/check.out" 2>&1 <<'EOF_PY' || rr_fail "stats --stages --json: $(cat "$RR_T/check.out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stages"] is True, "stages is not true"
assert d["tsc_hz"] > 1e7, "tsc_hz %r" % d["tsc_hz"]
fwd = d["forwarded"]
assert fwd >= 1000, "forwarded %r: the traffic should have sent thousands" % fwd
svcs = {s["name"]: s for s in d["services"]}
# The stage that does each service's main work, besides receiving.
# A TAP driver's "syscall" stage counts only the submits that do not wait
# (busy-poll, or work that came in while it armed its sleep): on a quiet
# driver there may be none, so it need only be there.
work = {"router": ["rx", "route", "handoff"], "driver-a": ["rx", "tx"],
        "driver-b": ["rx", "tx"], "shaper-b": ["enqueue", "dequeue", "handoff"]}
present = {"driver-a": ["syscall", "rearm"], "driver-b": ["syscall", "rearm"]}
total = 0
for name in sys.argv[2:]:
    s = svcs[name]
    st = {g["name"]: g for g in s["stages"]}
    for g in work[name]:
        assert g in st, "%s has no stage %s: %s" % (name, g, list(st))
        assert st[g]["cycles"] > 0 and st[g]["packets"] > 0 and st[g]["calls"] > 0, "%s.%s: %r" % (name, g, st[g])
        assert st[g]["pkts_per_call"] >= 1, "%s.%s: %r" % (name, g, st[g])
    for g in present.get(name, []):
        assert g in st, "%s has no stage %s: %s" % (name, g, list(st))
    assert s["cycles"] == sum(g["cycles"] for g in s["stages"]), name
    assert abs(s["cycles_per_fwd"] - s["cycles"] / fwd) < 0.01 + s["cycles"] / fwd * 1e-3, name
    total += s["cycles"]
assert d["total"]["cycles"] == sum(s["cycles"] for s in d["services"])
assert d["total"]["cycles_per_fwd"] > 0
ns = d["total"]["ns_per_fwd"]
assert abs(ns - d["total"]["cycles_per_fwd"] * 1e9 / d["tsc_hz"]) < 0.01 + ns * 1e-3
print("forwarded %d, %.0f cycles (%.2f us) per forwarded packet, router %.0f" % (
    fwd, d["total"]["cycles_per_fwd"], ns / 1000, svcs["router"]["cycles_per_fwd"]))
EOF_PY
rr_ok "stats --stages --json: $(cat "$RR_T/check.out")"

# Plain stats is what it was.
rr_stats || rr_fail "stats --json after stats --stages"
[ "$(rr_ctr router.forwarded)" -gt 0 ] || rr_fail "router.forwarded is 0"
"$RR" stats -S "$RR_SOCK" | grep -q "^router (up): loops" || rr_fail "plain stats lost its form"
rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
rr_ok "plain stats unchanged; no malformed-input drops, no restarts"
rr_stop
rr_census_ok

# ---- stages = off: the request says so, exit 100 ----
sed -i 's/^stages = on$/stages = off/' "$RR_T/m.ini"
rr_start
out=$(rr_in "$RR_NS_A" ping -n -q -c 200 -i 0.002 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B with stages off: $out"
grep -q " 200 received" <<<"$out" || rr_fail "ping A -> B with stages off lost replies: $out"
for j in "" --json; do
    # shellcheck disable=SC2086
    out=$("$RR" stats --stages $j -S "$RR_SOCK" 2>&1)
    rc=$?
    [ "$rc" = 100 ] || rr_fail "stats --stages $j with stages off exited $rc, expected 100: $out"
    grep -q "stage counters are off" <<<"$out" || rr_fail "stats --stages $j: no 'off' message: $out"
    grep -q 'stages = on' <<<"$out" || rr_fail "stats --stages $j: does not say how to turn them on: $out"
done
rr_ok "stages = off: stats --stages exits 100: $out"
"$RR" stats -S "$RR_SOCK" >/dev/null || rr_fail "plain stats with stages off"
rr_stop
rr_census_ok
echo "PASS stages"
