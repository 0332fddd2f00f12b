#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bench/forward_modes.py RESULTS OUTDIR SECS RUNS RATE: bench/forward's table,
# plot (OUTDIR/forward.png, with gnuplot) and ratio lines from its results
# file: one line per test and run, tab-separated:
#   mode test run value offered cpu1_cores delivered
# value: packets/s at the sink (maxN, fixN, solo), Gbit/s (tcpN) or ringrouter's
# CPU in % of a core (idle); offered: trafgen's rate; cpu1_cores: CPU 1 (the
# dut's) busy time over the window, in cores; delivered: the fraction of
# trafgen's packets that reached the sink.
import os
import statistics
import subprocess
import sys

path, outdir, secs, runs, rate = sys.argv[1:6]
MODES = ["ringrouter", "linux", "nftables", "xdp", "dpdk"]
LABEL = {"ringrouter": "ringrouter (AF_XDP)", "linux": "Linux forwarding",
         "nftables": "nftables + conntrack", "xdp": "XDP (fib_lookup)", "dpdk": "DPDK testpmd"}
# The bare pair whose rate the solo figure subtracts: the sink as in that mode.
PAIR = {"xdp": "pair-xdp"}  # the modes whose sink has XDP_PASS (bench/forward: ep_xdp)

data = {}  # (mode, test) -> {run: (value, offered, cpu1)}
for line in open(path):
    if line.strip():
        m, t, r, *vals = line.rstrip("\n").split("\t")
        data.setdefault((m, t), {})[int(r)] = tuple(map(float, vals))
modes = [m for m in MODES if any(k[0] == m for k in data)]


def per_run(mode, test, f):
    """{run: f(value, offered, cpu1, delivered, run)} for the runs where f is defined."""
    out = {}
    for r, row in data.get((mode, test), {}).items():
        try:
            out[r] = f(*row, r)
        except (ZeroDivisionError, KeyError, TypeError):
            pass
    return out


def sink_pps(v, o, c, d, r):
    return v


def us_per_pkt(v, o, c, d, r):
    return 1e6 * c / v


def solo_us(mode):
    base = per_run(PAIR.get(mode, "pair-plain"), "solo", sink_pps)
    return lambda v, o, c, d, r: 1e6 * (1 / v - 1 / base[r])


def cell(vals, fmt):
    v = list(vals.values())
    if not v:
        return "-"
    return f"{fmt % statistics.median(v)} ({fmt % min(v)}–{fmt % max(v)})"


def scaled(d, k):
    return {r: x * k for r, x in d.items()}


rows = []  # (label, {mode: {run: value}}, fmt)
for n in ("1", "16"):
    rows.append((f"UDP 64 B, {n} flow{'s' if n != '1' else ''}: max kpps at the sink",
                 {m: scaled(per_run(m, "max" + n, sink_pps), 1e-3) for m in modes}, "%.0f"))
for n in ("1", "16"):
    rows.append((f"UDP 64 B, {n} flow{'s' if n != '1' else ''}: dut CPU µs/packet at {int(rate) // 1000} kpps",
                 {m: per_run(m, "fix" + n, us_per_pkt) for m in modes}, "%.2f"))
    rows.append((f"UDP 64 B, {n} flow{'s' if n != '1' else ''}: offered kpps (trafgen) at {int(rate) // 1000} kpps",
                 {m: per_run(m, "fix" + n, lambda v, o, c, d, r: o / 1e3) for m in modes}, "%.0f"))
    rows.append((f"UDP 64 B, {n} flow{'s' if n != '1' else ''}: delivered at {int(rate) // 1000} kpps, % of sent",
                 {m: per_run(m, "fix" + n, lambda v, o, c, d, r: 100 * d) for m in modes}, "%.1f"))
for n in ("1", "2", "4", "8"):
    rows.append((f"TCP {n} stream{'s' if n != '1' else ''}: Gbit/s",
                 {m: per_run(m, "tcp" + n, sink_pps) for m in modes}, "%.2f"))
rows.append(("TCP 1 stream: dut CPU, cores", {m: per_run(m, "tcp1", lambda v, o, c, d, r: c) for m in modes}, "%.2f"))
rows.append(("solo (one CPU), 1 flow: kpps at the sink",
             {m: scaled(per_run(m, "solo", sink_pps), 1e-3) for m in modes}, "%.0f"))
rows.append(("solo: dut µs/packet (1/rate − 1/rate without dut)",
             {m: per_run(m, "solo", solo_us(m)) for m in modes}, "%.2f"))
rows = [r for r in rows if any(r[1].values())]

print(f"bench/forward: median (min–max) of {runs} runs x {secs} s; dut on CPU 1, generator and sink on CPU 0")
print()
print("| test | " + " | ".join(LABEL[m] for m in modes) + " |")
print("|---" * (len(modes) + 1) + "|")
for label, d, fmt in rows:
    print(f"| {label} | " + " | ".join(cell(d[m], fmt) for m in modes) + " |")
for p in ("pair-plain", "pair-xdp"):
    if (p, "solo") in data:
        print(f"\nsolo without dut ({p}: gen and sink on one veth pair, CPU 1): "
              f"{cell(scaled(per_run(p, 'solo', sink_pps), 1e-3), '%.0f')} kpps", end="")
short = sorted({m for m in modes for n in ("1", "16")
                for o in per_run(m, "fix" + n, lambda v, o, c, d, r: o).values() if o < 0.95 * float(rate)})
if short:
    print(f"\nNOTE: trafgen offered less than 95 % of {rate} pps in some fixed-rate runs ({', '.join(short)}): "
          "other load was running, and CPU 1's busy time then includes it too.", end="")
busy = per_run("machine", "idle", lambda v, o, c, d, r: c)
if busy:
    print(f"\nCPU 1 busy with no traffic at all (other load): {cell(busy, '%.3f')} cores", end="")
idle = per_run("ringrouter", "idle", sink_pps)
if idle:
    print(f"\nringrouter with no traffic: {cell(idle, '%.2f')} % of a core (supervisor and services)")
print()


def ratio(a, b):
    """Median over the runs of a/b within each run (nan when there is none)."""
    q = [a[r] / b[r] for r in a if r in b and b[r]]
    return statistics.median(q) if q else float("nan")


cpu1 = {n: {m: per_run(m, "fix" + n, us_per_pkt) for m in modes} for n in ("1", "16")}
mx = {m: per_run(m, "max1", sink_pps) for m in modes}

# The plot: dut CPU per packet at the fixed rate and the maximum rate, per mode.
dat = os.path.join(outdir, "forward.dat")
with open(dat, "w") as f:
    f.write("# mode us1 us16 kpps1 kpps16\n")
    for m in modes:
        med = [statistics.median(d.values()) if d else float("nan")
               for d in (cpu1["1"][m], cpu1["16"][m], per_run(m, "max1", sink_pps), per_run(m, "max16", sink_pps))]
        f.write(f'"{LABEL[m]}" {med[0]:.4f} {med[1]:.4f} {med[2] / 1e3:.1f} {med[3] / 1e3:.1f}\n')
png = os.path.join(outdir, "forward.png")


def series(col):
    """gnuplot's plot list for columns col (1 flow) and col+1 (16 flows), those with data."""
    s = [f"'{dat}' using {col}:xtic(1) title '1 flow'"]
    if any(per_run(m, ("fix16", "max16")[col > 3], sink_pps) for m in modes):
        s.append(f"'' using {col + 1} title '16 flows'")
    return ", ".join(s)


gp = f"""set terminal pngcairo size 1200,480 noenhanced
set output '{png}'
set multiplot layout 1,2
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left
set xtics rotate by -20
set yrange [0:*]
set title 'dut CPU per 64-byte packet at {int(rate) // 1000} kpps (lower is better)'
set ylabel 'µs of CPU 1 per packet'
plot {series(2)}
set title 'maximum rate at the sink, 64-byte UDP'
set ylabel 'kpps'
plot {series(4)}
unset multiplot
"""
if not any(mx.values()):
    print("plot: none (no 64-byte UDP test ran)")
else:
    try:
        r = subprocess.run(["gnuplot"], input=gp, text=True, capture_output=True, timeout=60)
        print(f"plot: {png}" if r.returncode == 0 else f"plot: gnuplot failed: {r.stderr.strip()[:200]}")
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"plot: gnuplot failed: {e}")

print(f"fwd64_cpu_per_pkt_vs_linux {ratio(cpu1['1'].get('ringrouter', {}), cpu1['1'].get('linux', {})):.3f}")
print(f"fwd64_cpu_per_pkt_vs_linux_16 {ratio(cpu1['16'].get('ringrouter', {}), cpu1['16'].get('linux', {})):.3f}")
print(f"fwd64_cpu_per_pkt_vs_dpdk {ratio(cpu1['1'].get('ringrouter', {}), cpu1['1'].get('dpdk', {})):.3f}")
print(f"fwd64_max_vs_linux {ratio(mx.get('ringrouter', {}), mx.get('linux', {})):.3f}")
print(f"idle_cpu_percent {statistics.median(idle.values()) if idle else float('nan'):.2f}")
