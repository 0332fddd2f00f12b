#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/filter_report.py RESULTS.TSV BUSY_MIN: bench/filter's table and
last lines from its results (VARIANT TEST RUN VALUE OFFERED CPU1 DUT [CPU0] a
line: pps at the sink, pps offered, CPU 1's busy cores, the dut's threads'
cores, CPU 0's busy cores (the generator and the sink; older results have
none); for `ping` VALUE is p50 and OFFERED p99, in µs; for a window of new
connections' table, TESTct, early drops and drops for a full table a
second, the connections at its end, new connections a second). VARIANT is
VARIANT@PRIO, its placement (the dut's NAPI threads at PRIO; older results
have one, unnamed). A table a placement, medians (min-max) over the runs;
ratios per run and placement, a baseline's run left out when its threads
were under BUSY_MIN cores busy at its maximum (starved, or held back by the
generator), and the worse placement's median printed."""
import math
import statistics
import sys

ALL_ROWS = {}  # (variant, placement, test, run) -> figures
ALL_CPU0 = {}
placements = []  # in the order run
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) < 7:
        continue
    v, _, p = f[0].partition("@")
    t, run = f[1], int(f[2])
    if v != "ceiling" and p not in placements:
        placements.append(p)
    ALL_ROWS[(v, p, t, run)] = tuple(float(x) for x in f[3:7])
    if len(f) >= 8:
        ALL_CPU0[(v, p, t, run)] = float(f[7])
busy_min = float(sys.argv[2])
runs = sorted({k[3] for k in ALL_ROWS})
variants = [v for v in ["linux", "nft", "nft-nat", "onexsk", "rr", "rr-filter", "rr-nat"] if any(k[0] == v for k in ALL_ROWS)]
rows, cpu0 = {}, {}  # (variant, test, run) -> figures, of one placement (use)


def use(p):
    """rows and cpu0 of placement p ("": the ceiling's, which has none)"""
    global rows, cpu0
    rows = {(k[0], k[2], k[3]): x for k, x in ALL_ROWS.items() if k[1] == p}
    cpu0 = {(k[0], k[2], k[3]): x for k, x in ALL_CPU0.items() if k[1] == p}


def place_name(p):
    return "one placement" if p == "" else "the dut's NAPI threads at %s" % (
        "SCHED_OTHER" if p == "0" else "SCHED_FIFO " + p)


def per_run(v, t, fn):
    """{run: fn(value, offered, cpu1, dut)} where there is a figure"""
    out = {}
    for r in runs:
        x = rows.get((v, t, r))
        if x is not None:
            y = fn(*x)
            if y is not None and not math.isnan(y):
                out[r] = y
    return out


def fmt(vals, scale=1.0, prec=0):
    if not vals:
        return "-"
    s = sorted(x * scale for x in vals)
    return "%.*f (%.*f-%.*f)" % (prec, statistics.median(s), prec, s[0], prec, s[-1])


kpps = lambda val, off, cpu1, dut: val / 1000
cpu_us = lambda val, off, cpu1, dut: (dut / val * 1e6) if val > 0 and val >= 0.99 * off else None
figs = [
    ("64 B max kpps, 1 flow", "max1", kpps, 0),
    ("the dut's threads' cores at it", "max1", lambda v, o, c, d: d, 2),
    ("CPU 1's busy cores (all load)", "max1", lambda v, o, c, d: c, 2),
    ("64 B max kpps, 16 flows", "max16", kpps, 0),
    ("the dut's threads' cores at it", "max16", lambda v, o, c, d: d, 2),
    ("CPU 0's busy cores (generator and sink)", "max16", None, 2),
    ("the dut's threads' µs a packet, fixed rate", "fix", cpu_us, 2),
    ("delivered % at the fixed rate", "fix", lambda v, o, c, d: 100 * v / o if o else None, 1),
    ("the same µs, XDP frames (the maxima's kind)", "fixxdp", cpu_us, 2),
    ("delivered % at it", "fixxdp", lambda v, o, c, d: 100 * v / o if o else None, 1),
    ("ping p50 µs, idle", "ping", lambda v, o, c, d: v, 0),
    ("ping p99 µs, idle", "ping", lambda v, o, c, d: o, 0),
    ("new connections/s at 99 % delivered, k", "nc99", None, 1),
    ("the least paced offer above it that lost over 1 %, k", "ncfail", None, 1),
    ("new connections/s, the most delivered, k", "ncmax", kpps, 1),
    ("the dut's threads' cores at it", "ncmax", lambda v, o, c, d: d, 2),
    ("early drops/s at it, k", "ncmaxct", kpps, 1),
    ("drops for a full table/s at it, k", "ncmaxct", lambda v, o, c, d: o / 1000, 1),
]


def nc99(v):
    """{run: the highest rate (pps) the sink received of v's windows of new
    connections that delivered 99 %}"""
    out = {}
    for (vv, t, r), x in rows.items():
        if vv == v and (t == "ncmax" or (t[:2] == "nc" and t[2:].isdigit())) and x[1] > 0 and x[0] >= 0.99 * x[1]:
            out[r] = max(out.get(r, 0.0), x[0])
    return out


def nc_fail(v):
    """{run: the least offer (pps) of v's paced windows above its nc99 that
    lost over 1 %}: where there is none, the paced generator never offered
    more than the dut took, and nc99 is the generator's, not the dut's"""
    best, out = nc99(v), {}
    for (vv, t, r), x in rows.items():
        if vv == v and t[:2] == "nc" and t[2:].isdigit() and r in best and x[1] > best[r] and x[0] < 0.99 * x[1]:
            out[r] = min(out.get(r, x[1]), x[1])
    return out
use("")
ceil = per_run("ceiling", "max1", kpps)
c0_of = lambda v, t: fmt([cpu0[k] for k in sorted(cpu0) if k[0] == v and k[1] == t], 1, 2)
print("generator ceiling (a bare veth pair): %s kpps; %d run(s)" % (fmt(list(ceil.values())), len(runs)))
if any(k[1] == "ncmax" for k in rows):
    print("generator ceiling, new connections (socket frames): %s kpps" % fmt(list(per_run("ceiling", "ncmax", kpps).values())))
for p in placements:
    use(p)
    print()
    if len(placements) > 1 or p:
        print("%s:" % place_name(p))
        print()
    print("| | " + " | ".join(variants) + " |")
    print("|---" * (len(variants) + 1) + "|")
    for label, t, fn, prec in figs:
        if t in ("nc99", "ncfail"):
            if any(k[1] == "ncmax" for k in rows):
                fig = nc99 if t == "nc99" else nc_fail
                print("| %s | %s |" % (label, " | ".join(fmt(list(fig(v).values()), 1 / 1000, prec) for v in variants)))
            continue
        if not any(k[1] == t for k in rows):
            continue
        if fn is None:
            if cpu0:
                print("| %s | %s |" % (label, " | ".join(c0_of(v, t) for v in variants)))
            continue
        print("| %s | %s |" % (label, " | ".join(fmt(list(per_run(v, t, fn).values()), 1, prec) for v in variants)))
        if t == "max1" and label.startswith("CPU 1") and cpu0:
            print("| CPU 0's busy cores (generator and sink) | %s |" % " | ".join(c0_of(v, "max1") for v in variants))
print()

max1, full, cpu, cpux = {}, {}, {}, {}  # variant -> {run: figure}, of one placement (figures_of)


def figures_of(p):
    global max1, full, cpu, cpux
    use(p)
    max1 = {v: per_run(v, "max1", kpps) for v in variants}
    full = {v: per_run(v, "max1", lambda val, off, c, d: val / 1000 if d >= busy_min else None) for v in variants}
    cpu = {v: per_run(v, "fix", cpu_us) for v in variants}
    cpux = {v: per_run(v, "fixxdp", cpu_us) for v in variants}


def why_not_full(v, t="max1"):
    """per run, why baseline v's maximum (of test t) did not count"""
    for r in runs:
        x = rows.get((v, t, r))
        if x is None or x[3] >= busy_min:
            continue
        val, off, c1, dut = x
        c0 = cpu0.get((v, t, r))
        held = "the generator and the sink (CPU 0 at %.2f cores)" % c0 if c0 is not None and c0 >= 0.95 else (
            "its offered load (%.0f%% of it delivered)" % (100 * val / off) if off and val >= 0.97 * off else "not found")
        print("#   run %d: %s %.0f kpps of %.0f offered, its threads %.2f cores, CPU 1 %.2f%s: held by %s" % (
            r, v, val / 1000, off / 1000, dut, c1, "" if c0 is None else ", CPU 0 %.2f" % c0, held))


def ratio(num, den, name, base_full=True):
    """the median over runs of num[r] / den[r]; den from `full` when
    base_full (a starved baseline's run left out)"""
    a, b = num, den
    rs = [a[r] / b[r] for r in runs if r in a and r in b and b[r] > 0]
    if not rs:
        why = "no run with both figures"
        if base_full:
            why += " and the baseline's threads at least %.2f cores busy at its maximum" % busy_min
        print("# %s: nan, %s" % (name, why))
        if base_full:
            ks = [k for k, d in full.items() if d is b]
            if ks:
                why_not_full(ks[0])
            allb = max1.get(ks[0], {}) if ks else {}
            rs = [a[r] / allb[r] for r in runs if r in a and r in allb and allb[r] > 0]
            if rs:
                print("#   over every run, the baseline not at full strength (not a ratio to quote): %s" % fmt(rs, 1, 3))
        return float("nan")
    ks = [k for k, d in full.items() if d is b] if base_full else []
    if ks and len(full[ks[0]]) < len(max1.get(ks[0], {})):
        print("# %s: %s's runs under %.2f cores at its maximum are left out:" % (name, ks[0], busy_min))
        why_not_full(ks[0])
    return statistics.median(rs)


def get(d, v):
    return d.get(v, {})


# name: (numerator, denominator, the figures (max: the maxima, the
# denominator's at full strength; cpu, cpux: µs a packet at the fixed rate,
# socket or XDP frames), higher is better for ringrouter). The floor's
# lines: onexsk's CPU a packet over nftables'; above 1.0 no filter on
# AF_XDP ports matches nftables' maximum at full strength, whatever it
# costs itself. XDP frames are the maxima's kind: their twins (`#` lines
# only) are the closer bound.
LINES = {
    "filter_max_vs_nft": ("rr-filter", "nft", "max", True),
    "nat_max_vs_nft_masquerade": ("rr-nat", "nft-nat", "max", True),
    "filter_cost_vs_nofilter": ("rr-filter", "rr", "cpu", False),
    "filter_cpu_per_pkt_vs_nft": ("rr-filter", "nft", "cpu", False),
    "filter_floor_cpu_per_pkt_vs_nft": ("onexsk", "nft", "cpu", False),
    "nat_floor_cpu_per_pkt_vs_nft_masquerade": ("onexsk", "nft-nat", "cpu", False),
    "filter_floor_cpu_per_pkt_vs_nft, XDP frames": ("onexsk", "nft", "cpux", False),
    "nat_floor_cpu_per_pkt_vs_nft_masquerade, XDP frames": ("onexsk", "nft-nat", "cpux", False),
}
BOUND = {"filter_floor_cpu_per_pkt_vs_nft": "filter_max_vs_nft",
         "nat_floor_cpu_per_pkt_vs_nft_masquerade": "nat_max_vs_nft_masquerade",
         "filter_floor_cpu_per_pkt_vs_nft, XDP frames": "filter_max_vs_nft",
         "nat_floor_cpu_per_pkt_vs_nft_masquerade, XDP frames": "nat_max_vs_nft_masquerade"}
per_place = {k: {} for k in LINES}  # name -> {placement: median ratio}
cpu_med = {}  # (figures, placement, variant) -> median µs a packet at the fixed rate
for p in placements:
    figures_of(p)
    for tab, d in (("cpu", cpu), ("cpux", cpux)):
        for v in variants:
            if d[v]:
                cpu_med[(tab, p, v)] = statistics.median(d[v].values())
    for k, (a, b, tab, _) in LINES.items():
        if tab == "cpux" and not any(k[1] == "fixxdp" for k in rows):
            continue  # not measured (FILTER_GEN=socket, FILTER_FIXXDP=0, older results)
        if tab == "max":
            num, den = get(max1, a), get(full, b)
        else:
            d = cpu if tab == "cpu" else cpux
            num, den = get(d, a), get(d, b)
        per_place[k][p] = ratio(num, den, k + ("@" + p if p else ""), tab == "max")


def worse(name):
    """the worse placement's ratio for ringrouter; nan (said why) when a
    placement has none"""
    d = per_place[name]
    if len(d) > 1:
        print("# %s by placement: %s" % (name, ", ".join(
            "@%s %s" % (p, "nan" if math.isnan(x) else "%.3f" % x) for p, x in d.items())))
    if not d or any(math.isnan(x) for x in d.values()):
        return float("nan")
    return (min if LINES[name][3] else max)(d.values())


out = {k: worse(k) for k in LINES}
for k, bound in BOUND.items():
    _, base, tab, _ = LINES[k]
    over = [p for p, x in per_place[k].items() if not math.isnan(x) and x > 1.0]
    if k.endswith("XDP frames") and per_place[k]:
        print("# %s: %s" % (k, "nan" if math.isnan(out[k]) else "%.3f" % out[k]))
    if not over:
        continue
    at = lambda p: "%sonexsk %.2f µs a packet, %s %.2f" % (
        "@" + p + ": " if p else "", cpu_med.get((tab, p, "onexsk"), math.nan), base,
        cpu_med.get((tab, p, base), math.nan))
    print("# the floor misses %s ≥ 1.0 by CPU a packet%s%s (%s)" % (
        bound, ", XDP frames" if tab == "cpux" else "",
        "" if len(over) == len(per_place[k]) else " at " + ", ".join("@" + p for p in over),
        "; ".join(at(p) for p in over)))


def nc_ratio(p, most=False):
    """rr-filter's new connections a second over nft's, the median over the
    runs of placement p where nft's threads were at least busy_min cores
    busy at its most (else it was held by the generator, or starved):
    at 99 % delivered, where a paced offer above each side's figure lost
    more (else the paced generator held it), or (most) the most delivered"""
    use(p)
    name = "filter_new_conn_per_s_vs_nft" + (", the most delivered" if most else "") + ("@" + p if p else "")
    fig = (lambda v: per_run(v, "ncmax", kpps)) if most else nc99
    num, den = fig("rr-filter"), fig("nft")
    strong = per_run("nft", "ncmax", lambda val, off, c, d: d >= busy_min or None)
    if not most:
        for v, held in (("nft", nc_fail("nft")), ("rr-filter", nc_fail("rr-filter"))):
            for r in runs:
                if r in num and r in den and r not in held:
                    print("#   %s run %d: %s's %.0f k at 99 %% was the paced generator's: no offer above it was lost" % (
                        name, r, v, fig(v)[r] / 1000))
                    strong.pop(r, None)
    rs = [num[r] / den[r] for r in runs if r in num and r in den and r in strong and den[r] > 0]
    left = [r for r in runs if r in num and r in den and r not in strong]
    if left:
        print("# %s: runs left out (nft under %.2f cores at its most, or a figure the generator's):" % (name, busy_min))
        why_not_full("nft", "ncmax")
    if not rs:
        print("# %s: nan, no run with both figures%s" % (name, " and nft at full strength" if left else ""))
        return float("nan")
    return statistics.median(rs)


nc, ncm = {}, {}  # placement -> ratio at 99 %, of the most delivered
if any(k[2] == "ncmax" for k in ALL_ROWS):
    for p in placements:
        nc[p] = nc_ratio(p)
        ncm[p] = nc_ratio(p, True)
    for name, d in (("", nc), (", the most delivered", ncm)):
        print("# filter_new_conn_per_s_vs_nft%s by placement: %s" % (name, ", ".join(
            "@%s %s" % (p, "nan" if math.isnan(x) else "%.3f" % x) for p, x in d.items())))
else:
    print("# filter_new_conn_per_s_vs_nft: not measured (FILTER_TESTS without newconn, or older results)")
nc_worse = float("nan") if not nc or any(math.isnan(x) for x in nc.values()) else min(nc.values())
if math.isnan(nc_worse) and ncm and not any(math.isnan(x) for x in ncm.values()):
    # The brief's other measure: the most delivered, both duts saturated.
    nc_worse = min(ncm.values())
    print("# filter_new_conn_per_s_vs_nft below: the most delivered's (no 99 % rate found in every placement)")
for k in ["filter_max_vs_nft", "nat_max_vs_nft_masquerade", "filter_cost_vs_nofilter", "filter_cpu_per_pkt_vs_nft"]:
    print("%s %s" % (k, "nan" if math.isnan(out[k]) else "%.3f" % out[k]))
print("filter_new_conn_per_s_vs_nft %s" % ("nan" if math.isnan(nc_worse) else "%.3f" % nc_worse))
for k in ["filter_floor_cpu_per_pkt_vs_nft", "nat_floor_cpu_per_pkt_vs_nft_masquerade"]:
    print("%s %s" % (k, "nan" if math.isnan(out[k]) else "%.3f" % out[k]))
