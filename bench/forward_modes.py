#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bench/forward_modes.py RESULTS OUTDIR SECS RUNS RATE: bench/forward's tables,
# plots (OUTDIR/forward.png and OUTDIR/sweep.png, with gnuplot) and ratio
# lines from its results file: one line per test and run, tab-separated:
#   mode test run value offered cpu1_cores delivered [target]
# mode: ringrouter@50 for ringrouter with its dut's NAPI threads at
# SCHED_FIFO 50 (@0: SCHED_OTHER), ringrouter-default@50 for it with the
# default manifest; linux with its veths' receive in CPU 1's
# backlog (RPS), linux@50 and linux@0 with a NAPI thread per veth at that
# priority and interrupt coalescing; nftables as it is; pair-plain
# and pair-xdp the bare veth pairs (ceiling, solo); nothing, machine and
# ringrouter for the idle figures. value: packets/s at the sink (maxN, fixN,
# sweepN, solo, ceiling), Gbit/s (tcpN, tcpr, udp1g), % (udp1g_loss), ms
# (udp1g_jitter), frames lost (burstN), µs (rtt_*), CPU 1's context switches
# per 1,000 packets at the sink (fixN_cs, maxN_cs), CPU 0's busy cores
# (maxN_cpu0, fixN_cpu0, ceiling_cpu0; offered as for maxN), ringrouter's processes'
# CPU in % of a core (idle); offered: the generator's rate; cpu1_cores: CPU 1 (the
# dut's) busy time over the window, in cores, steal left out; delivered: the
# fraction of what was sent that reached the sink (rtt: pings answered);
# target: the rate asked for (0: as fast as the generator can).
#
# Ratios are per run, then the median over the runs. A run counts only when
# both sides were offered at least 95 % of the target (the fixed rate; the
# generator's ceiling for the maximum; the load beside the pings), and for
# CPU per packet when both delivered at least 99 % of what they were
# offered. For the maximum rate, a run where Linux reached less than 80 % of
# the ceiling counts neither: its baseline was starved. Every run left out
# is named with its reason. Each of ringrouter's NAPI priorities is set
# against each of Linux's placements, and the worse ratio is printed: the
# best Linux (a placement with no run that counts is passed over), the
# worse ringrouter (nan when a priority has no run that counts).
import math
import os
import statistics
import subprocess
import sys

import forward_sweep

path, outdir, secs, runs, rate = sys.argv[1:6]
RATE = float(rate)
BASES = ["ringrouter", "ringrouter-group", "ringrouter-default", "onexsk", "twoxsk", "linux", "nftables", "xdp", "dpdk"]
LABEL = {"ringrouter": "ringrouter (AF_XDP)", "ringrouter-group": "ringrouter, ports in one driver group",
         "ringrouter-default": "ringrouter, default manifest",
         "linux": "Linux forwarding",
         "nftables": "nftables + conntrack", "xdp": "XDP (fib_lookup)", "dpdk": "DPDK testpmd",
         "onexsk": "one-process AF_XDP", "twoxsk": "two-process AF_XDP"}
PAIR = {"xdp": "pair-xdp"}  # the modes whose sink has XDP_PASS (bench/forward: ep_xdp)
OFFERED_MIN, DELIVERED_MIN, BASELINE_MIN = 0.95, 0.99, 0.80

data = {}  # (mode, test) -> {run: (value, offered, cpu1, delivered, target)}
order = []
for line in open(path):
    if line.strip():
        m, t, r, *vals = line.rstrip("\n").split("\t")
        vals = [float(x) for x in vals] + [0.0] * (5 - len(vals))
        data.setdefault((m, t), {})[int(r)] = tuple(vals)
        if m not in order:
            order.append(m)


def base(m):
    return m.split("@")[0]


# The table's columns: every mode, each NAPI priority of it in the order run
# ("ringrouter" alone is its idle figure).
cols = [m for b in BASES for m in order
        if base(m) == b and ("@" in m or m == b != "ringrouter")
        and any(k[0] == m and k[1] != "idle" for k in data)]
rr = [m for m in cols if base(m) == "ringrouter"]


def label(m):
    if m == "linux" and any(base(x) == "linux" and "@" in x for x in cols):
        return "Linux forwarding, RPS backlog"
    if "@" not in m:
        return LABEL[m]
    p = m.split("@")[1]
    return f"{LABEL[base(m)]}, NAPI {'SCHED_OTHER' if p == '0' else 'FIFO ' + p}"


def per_run(mode, test, f):
    """{run: f(value, offered, cpu1, delivered, target, run)} where f is defined."""
    out = {}
    for r, row in data.get((mode, test), {}).items():
        try:
            out[r] = f(*row, r)
        except (ZeroDivisionError, KeyError, TypeError, ValueError):
            pass
    return out


def val(v, o, c, d, t, r):
    return v


def us_per_pkt(v, o, c, d, t, r):
    return 1e6 * c / v


def solo_us(mode):
    pair = per_run(PAIR.get(base(mode), "pair-plain"), "solo", val)
    return lambda v, o, c, d, t, r: 1e6 * (1 / v - 1 / pair[r])


ceil = per_run("pair-plain", "ceiling", val)


def share_of_ceiling(v, o, c, d, t, r):
    return 100 * v / ceil[r]


def fmt_num(fmt, x):
    return "inf" if math.isinf(x) else fmt % x


def cell(vals, fmt):
    v = list(vals.values())
    if not v:
        return "-"
    return f"{fmt_num(fmt, statistics.median(v))} ({fmt_num(fmt, min(v))}–{fmt_num(fmt, max(v))})"


def scaled(d, k):
    return {r: x * k for r, x in d.items()}


def plural(n, word):
    return f"{n} {word}{'s' if n != '1' else ''}"


kr = int(RATE) // 1000
rows = []  # (label, {mode: {run: value}}, fmt)
for n in ("1", "16"):
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: max kpps at the sink",
                 {m: scaled(per_run(m, "max" + n, val), 1e-3) for m in cols}, "%.0f"))
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: max, % of the generator's ceiling",
                 {m: per_run(m, "max" + n, share_of_ceiling) for m in cols}, "%.0f"))
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: at the max, CPU 0 (generator, sink) busy, cores",
                 {m: per_run(m, f"max{n}_cpu0", val) for m in cols}, "%.2f"))
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: at the max, CPU 1 (dut) busy, cores",
                 {m: per_run(m, "max" + n, lambda v, o, c, d, t, r: c) for m in cols}, "%.2f"))
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: at the max, CPU 0 µs a frame offered",
                 {m: per_run(m, f"max{n}_cpu0", lambda v, o, c, d, t, r: 1e6 * v / o) for m in cols}, "%.2f"))
for n in ("1", "16"):
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: dut CPU µs/packet at {kr} kpps",
                 {m: per_run(m, "fix" + n, us_per_pkt) for m in cols}, "%.2f"))
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: offered kpps (the generator) at {kr} kpps",
                 {m: per_run(m, "fix" + n, lambda v, o, c, d, t, r: o / 1e3) for m in cols}, "%.0f"))
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: delivered at {kr} kpps, % of sent",
                 {m: per_run(m, "fix" + n, lambda v, o, c, d, t, r: 100 * d) for m in cols}, "%.1f"))
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: CPU 0 (generator, sink) µs a frame offered at {kr} kpps",
                 {m: per_run(m, f"fix{n}_cpu0", lambda v, o, c, d, t, r: 1e6 * v / o) for m in cols}, "%.2f"))
for n in ("1", "16"):
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: CPU 1 context switches per 1,000 packets at {kr} kpps",
                 {m: per_run(m, f"fix{n}_cs", val) for m in cols}, "%.1f"))
    rows.append((f"UDP 64 B, {plural(n, 'flow')}: CPU 1 context switches per 1,000 packets at the max",
                 {m: per_run(m, f"max{n}_cs", val) for m in cols}, "%.1f"))
for n in ("1", "2", "4", "8"):
    rows.append((f"TCP {plural(n, 'stream')}: Gbit/s", {m: per_run(m, "tcp" + n, val) for m in cols}, "%.2f"))
rows.append(("TCP 1 stream: dut CPU, cores", {m: per_run(m, "tcp1", lambda v, o, c, d, t, r: c) for m in cols}, "%.2f"))
rows.append(("TCP 1 stream reversed (-R): Gbit/s", {m: per_run(m, "tcpr", val) for m in cols}, "%.2f"))
rows.append(("UDP 1 Gbit/s, 1,470 B: Gbit/s sent", {m: per_run(m, "udp1g", lambda v, o, c, d, t, r: o) for m in cols}, "%.3f"))
rows.append(("UDP 1 Gbit/s, 1,470 B: Gbit/s received", {m: per_run(m, "udp1g", val) for m in cols}, "%.3f"))
rows.append(("UDP 1 Gbit/s, 1,470 B: loss %", {m: per_run(m, "udp1g_loss", val) for m in cols}, "%.3f"))
rows.append(("UDP 1 Gbit/s, 1,470 B: jitter ms", {m: per_run(m, "udp1g_jitter", val) for m in cols}, "%.4f"))
bursts = sorted({int(t[5:]) for (_, t) in data if t.startswith("burst")})
for k in bursts:
    rows.append((f"trains of {k:,} frames every 100 ms: frames lost, % of sent",
                 {m: per_run(m, f"burst{k}", lambda v, o, c, d, t, r: 100 * v / o) for m in cols}, "%.2f"))
# FWD_RTT_LOAD (bench/forward) replaces the load beside the pings.
load_what = "beside %s pps" % os.environ.get("FWD_RTT_LOAD", rate)
for cond, what in (("idle", "idle"), ("load", load_what)):
    for p, pl in (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")):
        rows.append((f"ping RTT {what}: {pl} µs", {m: per_run(m, f"rtt_{cond}_{p}", val) for m in cols}, "%.0f"))
    rows.append((f"ping RTT {what}: answered %",
                 {m: per_run(m, f"rtt_{cond}_p50", lambda v, o, c, d, t, r: 100 * d) for m in cols}, "%.2f"))
rows.append(("ping RTT beside: offered kpps",
             {m: per_run(m, "rtt_load_p50", lambda v, o, c, d, t, r: o / 1e3) for m in cols}, "%.0f"))
rows.append(("solo (one CPU), 1 flow: kpps at the sink",
             {m: scaled(per_run(m, "solo", val), 1e-3) for m in cols}, "%.0f"))
rows.append(("solo: dut µs/packet (1/rate − 1/rate without dut)",
             {m: per_run(m, "solo", solo_us(m)) for m in cols}, "%.2f"))
rows = [r for r in rows if any(r[1].values())]

print(f"bench/forward: median (min–max) of {runs} runs x {secs} s; dut on CPU 1, generator and sink on CPU 0; "
      "CPU busy time without steal")
print()
print("| test | " + " | ".join(label(m) for m in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for lab, d, fmt in rows:
    print(f"| {lab} | " + " | ".join(cell(d[m], fmt) for m in cols) + " |")
print()
if ceil:
    cpu0 = per_run("pair-plain", "ceiling_cpu0", lambda v, o, c, d, t, r: 1e6 * v / o)
    print(f"generator's ceiling (as fast as it can into a bare veth pair, the sink's receive on CPU 0): "
          f"{cell(scaled(ceil, 1e-3), '%.0f')} kpps"
          + (f", CPU 0 {cell(cpu0, '%.2f')} µs a frame" if cpu0 else ""))
for p in ("pair-plain", "pair-xdp"):
    if (p, "solo") in data:
        print(f"solo without dut ({p}: gen and sink on one veth pair, CPU 1): "
              f"{cell(scaled(per_run(p, 'solo', val), 1e-3), '%.0f')} kpps")
nothing = per_run("nothing", "idle", lambda v, o, c, d, t, r: c)
busy = per_run("machine", "idle", lambda v, o, c, d, t, r: c)
idle = per_run("ringrouter", "idle", val)
if nothing:
    print(f"CPU 1 busy with nothing of ours on it (other load): {cell(nothing, '%.4f')} cores")
if busy:
    print(f"CPU 1 busy with ringrouter up and no traffic: {cell(busy, '%.4f')} cores")
if idle:
    print(f"ringrouter's processes and NAPI threads with no traffic: {cell(idle, '%.2f')} % of a core")

# ---- the sweep (bench/forward_sweep.py) -------------------------------------
sweep_modes = [m for m in cols if (m, "sweep1") in data]


def sweep_of(m):
    return {s: {r: forward_sweep.Step(v, o, d, t, (forward_sweep.per_packet_us(c, v),))
                for r, (v, o, c, d, t) in data[(m, s)].items()}
            for s in forward_sweep.STEPS if (m, s) in data}


if sweep_modes:
    print("\noffered-load sweep, 64-byte UDP, 1 flow (median of the runs; the last step as fast as the generator can):")
    for m in sweep_modes:
        forward_sweep.table(label(m), sweep_of(m), ["dut CPU"])
    forward_sweep.plot(outdir, [(label(m), sweep_of(m)) for m in sweep_modes], "64-byte UDP, 1 flow",
                       "dut CPU per delivered packet", "µs of CPU 1")

# ---- the plot of the headline figures ----------------------------------------
cpu1 = {n: {m: per_run(m, "fix" + n, us_per_pkt) for m in cols} for n in ("1", "16")}
mx = {m: per_run(m, "max1", val) for m in cols}
dat = os.path.join(outdir, "forward.dat")
with open(dat, "w") as f:
    f.write("# mode us1 us16 kpps1 kpps16\n")
    for m in cols:
        med = [statistics.median(d.values()) if d else float("nan")
               for d in (cpu1["1"][m], cpu1["16"][m], per_run(m, "max1", val), per_run(m, "max16", val))]
        f.write(f'"{label(m)}" {med[0]:.4f} {med[1]:.4f} {med[2] / 1e3:.1f} {med[3] / 1e3:.1f}\n')
png = os.path.join(outdir, "forward.png")


def series(col):
    """gnuplot's plot list for columns col (1 flow) and col+1 (16 flows), those with data."""
    s = [f"'{dat}' using {col}:xtic(1) title '1 flow'"]
    if any(per_run(m, ("fix16", "max16")[col > 3], val) for m in cols):
        s.append(f"'' using {col + 1} title '16 flows'")
    return ", ".join(s)


gp = f"""set terminal pngcairo size 1400,520 noenhanced
set output '{png}'
set multiplot layout 1,2
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left
set xtics rotate by -20 font ',8'
set yrange [0:*]
set title 'dut CPU per 64-byte packet at {kr} kpps (lower is better)'
set ylabel 'µs of CPU 1 per packet'
plot {series(2)}
set title 'maximum rate at the sink, 64-byte UDP'
set ylabel 'kpps'
plot {series(4)}
unset multiplot
"""
if any(mx.values()):
    try:
        r = subprocess.run(["gnuplot"], input=gp, text=True, capture_output=True, timeout=60)
        print(f"plot: {png}" if r.returncode == 0 else f"plot: gnuplot failed: {r.stderr.strip()[:200]}")
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"plot: gnuplot failed: {e}")

# ---- ratios --------------------------------------------------------------------
print()
why = []  # the runs left out of a ratio, and why
bound = {}  # test -> [runs of a maximum's ratio counted, of them CPU 0-bound, CPU 1 busy at most]
upper = {}  # (test, mode, linux) -> {run: ratio over a Linux maximum that CPU 0 held down}
SATURATED, UNSATURATED = 0.97, 0.95  # cores: CPU 0 the limit, CPU 1 not


def median_or_nan(d):
    return statistics.median(d.values()) if d else float("nan")


def worse(name, per_variant, higher_is_better):
    """The worse of the variants' ratios; nan (said why) when one has none."""
    if not per_variant:
        return float("nan")
    missing = [m for m, x in per_variant.items() if math.isnan(x)]
    if missing:
        why.append(f"{name}: no run counts for {', '.join(missing)}: no ratio")
        return float("nan")
    if len(per_variant) > 1:
        print(f"# {name}: " + ", ".join(f"{m} {x:.3f}" for m, x in per_variant.items()))
    return (min if higher_is_better else max)(per_variant.values())


def max_ratio(a, b, test="max1"):
    out = {}
    for r in sorted(data.get((a, test), {})):
        ra, rb = data[(a, test)][r], data.get((b, test), {}).get(r)
        if rb is None or r not in ceil:
            continue
        c = ceil[r]
        if base(b) == "linux" and rb[0] < BASELINE_MIN * c:
            cpu = rb[2]
            cpu0 = data.get((b, test + "_cpu0"), {}).get(r, (0,))[0]
            cause = ("CPU 1 was busy %.2f cores (steal left out): other load on it took Linux's cycles" % cpu
                     if cpu > 0.9 else "CPU 1 was busy only %.2f cores: the limit was not the dut's CPU but the "
                     "generator's or the sink's (CPU 0, %s)" % (cpu, "busy %.2f cores" % cpu0 if cpu0 else "other load"))
            why.append(f"{test} run {r}: {b}'s maximum {rb[0] / 1e3:.0f} kpps is {100 * rb[0] / c:.0f} % of the "
                       f"generator's ceiling {c / 1e3:.0f} kpps (under 80 %): a starved baseline; {cause}")
            if cpu0 >= SATURATED and cpu < UNSATURATED and ra[1] >= OFFERED_MIN * c:
                # Held by CPU 0, Linux could have forwarded more: the
                # ratio over its maximum is a bound from above.
                upper.setdefault((test, a, b), {})[r] = ra[0] / rb[0]
            continue
        short = [m for m, x in ((a, ra), (b, rb)) if x[1] < OFFERED_MIN * c]
        if short:
            why.append(f"{test} run {r}: {', '.join(short)} offered under 95 % of the ceiling {c / 1e3:.0f} kpps")
            continue
        out[r] = ra[0] / rb[0]
        cpu0 = [data.get((m, test + "_cpu0"), {}).get(r, (0,))[0] for m in (a, b)]
        n = bound.setdefault(test, [0, 0, 0.0])
        n[0] += 1
        if min(cpu0) >= SATURATED and max(ra[2], rb[2]) < UNSATURATED:
            n[1] += 1
            n[2] = max(n[2], ra[2], rb[2])
    return median_or_nan(out)


def cpu_ratio(a, b, test):
    out = {}
    for r in sorted(data.get((a, test), {})):
        ra, rb = data[(a, test)][r], data.get((b, test), {}).get(r)
        if rb is None:
            continue
        bad = [f"{m} offered {x[1] / 1e3:.0f} kpps" for m, x in ((a, ra), (b, rb)) if x[1] < OFFERED_MIN * RATE]
        bad += [f"{m} delivered {100 * x[3]:.1f} %" for m, x in ((a, ra), (b, rb)) if x[3] < DELIVERED_MIN]
        if bad:
            why.append(f"{test} run {r}: {'; '.join(bad)} (needs 95 % of {RATE / 1e3:.0f} kpps offered and 99 % "
                       "delivered): no CPU ratio")
            continue
        out[r] = (1e6 * ra[2] / ra[0]) / (1e6 * rb[2] / rb[0])
    return median_or_nan(out)


def sweep_min_delivered(m):
    """The least delivered % up to 90 % of the mode's maximum (its max1, else
    its best sweep step); bench/forward_sweep.py."""
    return forward_sweep.min_delivered(m, sweep_of(m), {r: x[0] for r, x in data.get((m, "max1"), {}).items()}, why)


def livelock(m):
    return forward_sweep.livelock(m, sweep_of(m), why)


def rtt_ratio(a, b, cond, p):
    out = {}
    test = f"rtt_{cond}_{p}"
    for r in sorted(data.get((a, test), {})):
        ra, rb = data[(a, test)][r], data.get((b, test), {}).get(r)
        if rb is None:
            continue
        short = [m for m, x in ((a, ra), (b, rb)) if x[4] > 0 and x[1] < OFFERED_MIN * x[4]]
        if short:
            why.append(f"{test} run {r}: {', '.join(short)} offered under 95 % of {ra[4] / 1e3:.0f} kpps beside the pings")
            continue
        if math.isinf(rb[0]) or rb[0] <= 0:
            why.append(f"{test} run {r}: {b} lost over {100 - float(p[1:3])} % of the pings: no ratio")
            continue
        out[r] = ra[0] / rb[0]
    return median_or_nan(out)


linuxes = [m for m in cols if base(m) == "linux"]


def vs_linux(name, f, higher_is_better):
    """f(Linux placement) against each of Linux's placements: the worse of
    those that have a ratio (the best Linux), nan when none has."""
    per = {b: f(b) for b in linuxes}
    have = {b: x for b, x in per.items() if not math.isnan(x)}
    if len(per) > 1:
        print(f"#   {name}: " + ", ".join(f"vs {b} {x:.3f}" for b, x in per.items()))
    if not have:
        return float("nan")
    return (min if higher_is_better else max)(have.values())


def lines():
    have_linux = bool(linuxes)
    res = {}
    if have_linux:
        res["fwd64_max_vs_linux"] = worse("fwd64_max_vs_linux", {
            m: vs_linux(f"fwd64_max_vs_linux {m}", lambda b: max_ratio(m, b), True) for m in rr}, True)
    for n, suf in (("1", ""), ("16", "_16")):
        res[f"fwd64_cpu_per_pkt_vs_linux{suf}"] = worse(
            f"fwd64_cpu_per_pkt_vs_linux{suf}",
            {m: vs_linux(f"fwd64_cpu_per_pkt_vs_linux{suf} {m}", lambda b: cpu_ratio(m, b, "fix" + n), False)
             for m in rr if (m, "fix" + n) in data}, False) if have_linux else math.nan
    sw = [m for m in rr if m in sweep_modes]
    res["fwd64_sweep_min_delivered_pct"] = worse("fwd64_sweep_min_delivered_pct",
                                                 {m: sweep_min_delivered(m) for m in sw}, True)
    res["fwd64_livelock_drop_pct"] = worse("fwd64_livelock_drop_pct", {m: livelock(m) for m in sw}, False)
    for m in sweep_modes:
        if m not in rr:
            print(f"# {m}: sweep least delivered {sweep_min_delivered(m):.2f} %, largest fall {livelock(m):.2f} %")
    n, b = median_or_nan(nothing), median_or_nan(busy)
    res["idle_cpu_percent"] = 100 * (b - n)
    for p in ("p50", "p99"):
        per = {}
        for m in rr:
            for cond in ("idle", "load"):
                if (m, f"rtt_{cond}_{p}") in data and have_linux:
                    per[f"{m} {cond}"] = vs_linux(f"rtt_{p}_vs_linux {m} {cond}",
                                                  lambda b: rtt_ratio(m, b, cond, p), False)
        res[f"rtt_{p}_vs_linux"] = worse(f"rtt_{p}_vs_linux", per, False)
    # The default manifest's tail against Linux, idle and loaded apart
    # (issue 49: each at most 2).
    for cond in ("idle", "load"):
        name = f"rtt_default_p99_vs_linux_{cond}"
        per = {m: vs_linux(f"{name} {m}", lambda b: rtt_ratio(m, b, cond, "p99"), False)
               for m in cols if base(m) == "ringrouter-default" and (m, f"rtt_{cond}_p99") in data}
        if per and have_linux:
            res[name] = worse(name, per, False)
    extra = {}
    first = rr[:1]
    for m in first:
        if have_linux:
            for t in ("tcpr", "udp1g"):
                q = {}
                for r, a in data.get((m, t), {}).items():
                    b = data.get(("linux", t), {}).get(r)
                    if b is None or b[0] <= 0:
                        continue
                    short = [x for x, y in ((m, a), ("linux", b)) if t == "udp1g" and y[1] < OFFERED_MIN * y[4]]
                    if short:
                        why.append(f"{t} run {r}: iperf3 sent under 95 % of 1 Gbit/s through {', '.join(short)}")
                        continue
                    q[r] = a[0] / b[0]
                if (m, t) in data:
                    extra[f"{t}_vs_linux"] = median_or_nan(q)
        dp = [x for x in cols if base(x) == "dpdk" and x.split("@")[-1] == m.split("@")[-1]]
        if dp:
            q = {r: data[(m, "max1")][r][0] / data[(dp[0], "max1")][r][0] for r in data.get((m, "max1"), {})
                 if data.get((dp[0], "max1"), {}).get(r, (0,))[0] > 0}
            extra["fwd64_max_vs_dpdk"] = median_or_nan(q)
    extra.update(floor_lines(have_linux))
    extra.update(tcp_lines(have_linux))
    return res, extra


def floor_lines(have_linux):
    """The one-process AF_XDP forwarder (onexsk, bench/xskfwd.c) as the floor:
    its maximum, CPU per packet and idle ping against Linux (what AF_XDP on
    these devices costs), and ringrouter's against it at the same NAPI
    priority (what ringrouter's design costs above the sockets; ringrouter-group:
    with its ports in one driver group), and so the
    two-process split (twoxsk, bench/xsksplit.c: what a second address space
    on the path costs at least). Worse priority."""
    ox = [m for m in cols if base(m) == "onexsk"]
    out = {}
    for key, test, f, hib in (("fwd64_max", "max1", max_ratio, True),
                              ("fwd64_cpu_per_pkt", "fix1", lambda a, b: cpu_ratio(a, b, "fix1"), False),
                              ("rtt_p50", "rtt_idle_p50", lambda a, b: rtt_ratio(a, b, "idle", "p50"), False),
                              ("rtt_p99", "rtt_idle_p99", lambda a, b: rtt_ratio(a, b, "idle", "p99"), False),
                              ("rtt_p99_load", "rtt_load_p99", lambda a, b: rtt_ratio(a, b, "load", "p99"), False)):
        have = [m for m in ox if (m, test) in data]
        if not have:
            continue
        if have_linux:  # rtt_p99: the floor under rtt_default_p99_vs_linux's bound
            out[f"{key}_onexsk_vs_linux"] = worse(f"{key}_onexsk_vs_linux", {
                m: vs_linux(f"{key}_onexsk_vs_linux {m}", lambda b: f(m, b), hib) for m in have}, hib)
        for who, name in (("ringrouter", f"{key}_vs_onexsk"), ("ringrouter-group", f"{key}_group_vs_onexsk"),
                          ("twoxsk", f"{key}_twoxsk_vs_onexsk")):
            same = {m: x for m in cols if base(m) == who for x in have if m.split("@")[-1] == x.split("@")[-1]}
            if any((m, test) in data for m in same):
                out[name] = worse(name, {m: f(m, x) for m, x in same.items() if (m, test) in data}, hib)
    return out


def tcp_lines(have_linux):
    """TCP over AF_XDP against its floor (issue 49): ringrouter's iperf3
    Gbit/s over the one-process forwarder's (onexsk, multi-buffer with
    FWD_GEN_TSO=1) at the same NAPI priority, per run, the median, the worse
    priority: tcpN_vs_onexsk; beside them each against the best Linux:
    tcpN_onexsk_vs_linux and tcpN_vs_linux. A run where the baseline got
    nothing (iperf3 failed) is left out; one where ringrouter got nothing
    counts as 0."""
    out = {}

    def ratio(a, b, test):
        q = {}
        for r, x in sorted(data.get((a, test), {}).items()):
            y = data.get((b, test), {}).get(r)
            if y is None:
                continue
            if y[0] <= 0:
                why.append(f"{test} run {r}: iperf3 through {b} failed: no {a} over {b} ratio")
                continue
            q[r] = x[0] / y[0]
        return median_or_nan(q)

    ox = [m for m in cols if base(m) == "onexsk"]
    for n in ("1", "2", "4", "8"):
        t = "tcp" + n
        have = [m for m in ox if (m, t) in data]
        rr_have = [m for m in rr if (m, t) in data]
        same = {m: x for m in rr_have for x in have if m.split("@")[-1] == x.split("@")[-1]}
        if same:
            out[f"{t}_vs_onexsk"] = worse(f"{t}_vs_onexsk", {m: ratio(m, x, t) for m, x in same.items()}, True)
        if not have_linux:
            continue
        for name, modes in ((f"{t}_onexsk_vs_linux", have), (f"{t}_vs_linux", rr_have)):
            if modes:
                out[name] = worse(name, {m: vs_linux(f"{name} {m}", lambda b: ratio(m, b, t), True)
                                         for m in modes}, True)
    return out


res, extra = lines()
for w in dict.fromkeys(why):  # once each, in order (a Linux run is left out for every priority)
    print(f"# left out: {w}")
for (test, a, b), v in upper.items():
    print(f"# note: {test}: {a} against {b} at most {statistics.median(v.values()):.3f} (median of "
          f"{len(v)} run(s) left out above where CPU 0 held {b} under 80 % of the ceiling and CPU 1 was not "
          "saturated: its maximum is a lower bound)")
for test, (n, k, c1) in bound.items():
    if k:
        print(f"# note: {test}: in {k} of the {n} pairs of runs its maximum's ratios counted, CPU 0 (the "
              f"generator and the sink) was busy {SATURATED} cores or more for both modes and CPU 1 (the dut) "
              f"at most {c1:.2f}: the generator's CPU set both maxima, so such a ratio is what each dut's "
              "frames cost CPU 0, not what each dut can forward")
if nothing and median_or_nan(nothing) > 0.05:
    print(f"# idle_cpu_percent: CPU 1 had {100 * median_or_nan(nothing):.1f} % of a core of other load with nothing "
          "of ours on it: the difference is noise of that size")
for k, x in extra.items():
    print(f"{k} {x:.3f}")
for k in ("fwd64_max_vs_linux", "fwd64_sweep_min_delivered_pct", "fwd64_livelock_drop_pct",
          "fwd64_cpu_per_pkt_vs_linux", "fwd64_cpu_per_pkt_vs_linux_16", "idle_cpu_percent",
          "rtt_p50_vs_linux", "rtt_p99_vs_linux", "rtt_default_p99_vs_linux_idle", "rtt_default_p99_vs_linux_load"):
    x = res.get(k, float("nan"))
    print(f"{k} {x:.{2 if k.endswith(('pct', 'percent')) else 3}f}")
