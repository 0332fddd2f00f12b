#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_json.sh: every --json answer has one shape. The real
# router, two TAP ports and a shaper on b, then each of status, stats,
# stats PORT, stats --stages, link, link PORT, route show, route get, neigh
# show and shaper show with --json must be one JSON object (never a bare
# array) whose first key is "timestamp", unix seconds as a number within a
# minute of the test's clock; and the fields that have a unit carry it in
# their name (the renamed ones: frame_size_bytes, mtu_bytes,
# *_bits_per_second, backlog_packets, queued_packets). status --json opens
# with the supervisor's own block (version, pid, uptime_ms, started_at) and
# gives each service its planned_restarts beside its restarts.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_json
command -v "$SUP_PY" >/dev/null || sup_skip "needs python3"
sup_bins rr-router rr-tap rr-shaper
SUP_SERVICES=(router driver-a driver-b shaper-b)
sup_netns
NS=$SUP_NS
SUP_ROUTER_KEYS="stages = on"
SUP_MANIFEST_EXTRA="[shaper b]\nrate = 10mbit\n\n[route 10.93.0.0/16]\nvia = 10.92.0.9"
sup_manifest "$SUP_T/m.ini"
sed -i 's/^binary = .*$//' "$SUP_T/m.ini" # the real services
sup_start "$NS" "$SUP_T/m.ini"

check() { # check PY WORDS...: WORDS --json is one object with a timestamp first; PY (on d) holds
    local py=$1 out
    shift
    out=$("$RR" "$@" --json -S "$SUP_SOCK" 2>&1) || { sup_bad "$* --json: exit $?: $out"; return; }
    "$SUP_PY" -c '
import json, sys, time
text, py, what = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.loads(text)
assert isinstance(d, dict), "not an object: %r" % text[:80]
assert list(d)[0] == "timestamp", "first key %r, not timestamp" % list(d)[0]
ts = d["timestamp"]
assert isinstance(ts, float) and abs(ts - time.time()) < 60, "timestamp %r" % ts
assert eval("(" + py + ")"), "%s failed on %s" % (py, text[:300])
' "$out" "$py" "$*" || sup_bad "$* --json"
}
check '"services" in d and "uptime_ms" in d["services"][0] and "planned_restarts" in d["services"][0]' status
check 'list(d)[1] == "supervisor" and d["supervisor"]["pid"] == '"$SUP_PID"' and d["supervisor"]["uptime_ms"] > 0 and
    d["supervisor"]["version"] == "'"$("$RR" version | sed 's/^ringrouter //')"'" and
    -1.1 <= d["supervisor"]["started_at"] + d["supervisor"]["uptime_ms"] / 1000 - d["timestamp"] <= 0.1' status
check 'd["pool"]["frame_size_bytes"] == 2048 and "frame_size" not in d["pool"]' stats
check 'all(s["name"] in ("driver-b", "shaper-b") for s in d["services"])' stats b
check 'd["stages"] is True and "tsc_hz" in d' stats --stages
check '[l["name"] for l in d["links"]] == ["a", "b"] and d["links"][0]["mtu_bytes"] == 1500' link
check '[l["name"] for l in d["links"]] == ["b"]' link b
check 'any(r["prefix"] == "10.93.0.0/16" for r in d["routes"]) and "routes6" in d' route show
check '[r["prefix"] for r in d["routes"]] == ["10.93.0.0/16"]' route show 10.93.0.0/16
check 'd["address"] == "10.93.1.1" and d["route"]["prefix"] == "10.93.0.0/16"' route get 10.93.1.1
check '"neighbours" in d and "neighbours6" in d' neigh show
check 'd["shapers"][0]["rate_bits_per_second"] == 10000000 and "backlog_packets" in d["shapers"][0] and
    set(d["shapers"][0]["classes"][0]) >= {"rate_bits_per_second", "ceil_bits_per_second",
    "measured_bits_per_second", "backlog_packets"}' shaper show
check 'len(d["shapers"]) == 1' shaper show b
echo "status, stats (PORT, --stages), link (PORT), route show (PREFIX), route get, neigh show, shaper show (PORT): objects with a timestamp"

# A neighbour, so that queued_packets is seen too.
"$RR" neigh add 10.91.0.7 mac 02:00:00:00:00:07 -S "$SUP_SOCK" >/dev/null || sup_bad "neigh add"
check 'any(n["address"] == "10.91.0.7" and n["queued_packets"] == 0 for n in d["neighbours"])' neigh show

sup_stop TERM 10
sup_census_ok >/dev/null
sup_verdict sup_json
