#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bench/forward_stats.py BEFORE.json AFTER.json LABEL: what ringrouter's
# services did during one bench/forward test, per packet forwarded: loops,
# sleeps, wake-ups sent, and packets per router loop (`ringrouter stats
# --json` before and after). Printed to stderr with FWD_VERBOSE=1.
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
sa = {s["name"]: s for s in a["services"]}
fwd = None
out = []
for s in b["services"]:
    p = sa.get(s["name"], {})
    d = {k: s.get(k, 0) - p.get(k, 0) for k in ("loops", "sleeps", "wakes_sent")}
    ca, cb = p.get("counters", {}), s.get("counters", {})
    dc = {k: cb.get(k, 0) - ca.get(k, 0) for k in cb}
    if s["name"] == "router":
        fwd = dc.get("forwarded", 0)
    out.append((s["name"], d, dc))
fwd = fwd or 1
line = [f"{sys.argv[3]}: {fwd} pkts forwarded"]
for name, d, dc in out:
    line.append(f"{name}: loops/pkt {d['loops'] / fwd:.2f} sleeps/pkt {d['sleeps'] / fwd:.3f} "
                f"wakes/pkt {d['wakes_sent'] / fwd:.3f}")
    drops = {k: v for k, v in dc.items() if "drop" in k and v}
    if drops:
        line.append(f"  {name} drops: {drops}")
print("\n  ".join(line), file=sys.stderr)
