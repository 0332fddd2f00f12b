#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bench/forward_report.py RESULTS SECS RUNS [OUTDIR]: the tables and the ratio
# lines of bench/forward tap from its results file (paths ringrouter, onefwd,
# linux, linuxnapi; pair, the generator's ceiling): test, path, run, value, fwd cores,
# machine cores per line, and for UDP offered packets/s, delivered (the
# fraction of what was offered that reached B) and target (packets/s asked
# for, 0: as fast as the generator can); value in Gbit/s for tcp*, packets/s for
# udp*, sweep* and ceiling. With OUTDIR, the sweep's plot OUTDIR/sweep.png
# (gnuplot).
#
# Ratios are per run (ours / Linux's within the run), then the median over
# the runs. A Linux TCP figure that falls under 90 % of its own figure with
# fewer streams in the same run (tcp8 under tcp4) is a starved baseline: that
# run's ratio is flagged and left out. Where Linux ran in both placements
# (linux, linuxnapi: UDP), each run's ratio is against the better of the two
# (the worse ratio for ringrouter).
import math
import statistics
import sys

import forward_sweep

rows = {}  # (test, path) -> {run: (value, fwd cores, machine cores[, offered, delivered, target])}
for line in open(sys.argv[1]):
    t, path, run, *vals = line.rstrip("\n").split("\t")
    rows.setdefault((t, path), {})[int(run)] = tuple(map(float, vals))
secs, runs = sys.argv[2], sys.argv[3]
BELOW = 0.9

order = [t for t in ("tcp1", "tcp2", "tcp4", "tcp8", "udp1", "udp16") if any(k[0] == t for k in rows)]


def per_unit(t, v, cores):
    """CPU per unit of work: % of a core per Gbit/s (TCP), µs per packet (UDP)."""
    return 100.0 * cores / v if t.startswith("tcp") else 1e6 * cores / v


def cpu_cols(t, vals):
    """Forwarder and machine CPU per unit of work, medians over the runs."""
    out = []
    for idx in (1, 2):
        per = [per_unit(t, x[0], x[idx]) for x in vals.values() if x[0] > 0]
        out.append(statistics.median(per) if per else float("nan"))
    return out


print(f"bench/forward tap: median and range of {runs} runs x {secs} s "
      f"(TCP: iperf3 receiver; UDP: 64-byte frames/s arriving at B)")
print(f"{'test':<6} {'router':<11} {'median':>14} {'min - max':>21} {'fwd cores':>9} {'fwd CPU':>11} {'machine CPU':>13}")
for t in order:
    unit = "Gbit/s" if t.startswith("tcp") else "kpps"
    scale = 1.0 if t.startswith("tcp") else 1e-3
    cunit = "%core/Gb" if t.startswith("tcp") else "us/pkt"
    for path in ("ringrouter", "onefwd", "linux", "linuxnapi"):
        vals = rows.get((t, path), {})
        if not vals:
            continue
        vs = [x[0] for x in vals.values()]
        m = statistics.median(vs)
        fc = statistics.median([x[1] for x in vals.values()])
        fwd, mach = cpu_cols(t, vals)
        print(f"{t:<6} {path:<11} {m * scale:>7.2f} {unit:<6} {min(vs) * scale:>9.2f} - {max(vs) * scale:<9.2f}"
              f" {fc:>9.2f} {fwd:>6.2f} {cunit:<4} {mach:>6.2f} {cunit}")
print("fwd cores: the forwarder's CPU in cores (ringrouter: its 3 processes; onefwd: bench/tapfwd; linux: machine minus generators,")
print("  a lower bound, see bench/forward). fwd/machine CPU: per Gbit/s (% of a core) or per packet (us).")
print("UDP: every path's forwarding on the services' CPU (linux: RPS of its router's veths there; linuxnapi: their NAPI threads),")
print("  the generator on another.")

# ---- the sweep (bench/forward_sweep.py) ----------------------------------------
PATHS = {"ringrouter": "ringrouter (TAP)", "onefwd": "onefwd (bench/tapfwd)", "linux": "Linux forwarding (veth, RPS)",
         "linuxnapi": "Linux forwarding (veth, NAPI threads)"}


def sweep_of(path):
    us = forward_sweep.per_packet_us
    return {s: {r: forward_sweep.Step(v, o, d, tg, (us(fwd, v), us(mach, v)))
                for r, (v, fwd, mach, o, d, tg) in rows[(s, path)].items()}
            for s in forward_sweep.STEPS if (s, path) in rows}


sweep_paths = [p for p in PATHS if ("sweep1", p) in rows]
if sweep_paths:
    ceil = [x[0] for x in rows.get(("ceiling", "pair"), {}).values()]
    print(f"\noffered-load sweep, 64-byte UDP, 1 flow (median of the runs; the 7th step at the generator's ceiling "
          f"{statistics.median(ceil) / 1e3 if ceil else math.nan:.0f} kpps, the generator into a bare veth pair; the last as "
          "fast as it can):")
    for p in sweep_paths:
        forward_sweep.table(PATHS[p], sweep_of(p), ["fwd CPU", "machine CPU"])
    if len(sys.argv) > 4:
        forward_sweep.plot(sys.argv[4], [(PATHS[p], sweep_of(p)) for p in sweep_paths], "64-byte UDP, 1 flow, TAP",
                           "machine CPU per delivered packet", "µs of all CPUs", cpu=1)
print()

flagged = set()  # (test, run) whose Linux baseline is starved
for t in order:
    if not t.startswith("tcp"):
        continue
    n = int(t[3:])
    for r, x in rows.get((t, "linux"), {}).items():
        lower = [(u, rows[(u, "linux")][r][0]) for u in order
                 if u.startswith("tcp") and int(u[3:]) < n and r in rows.get((u, "linux"), {})]
        for u, y in lower:
            if x[0] < BELOW * y:
                flagged.add((t, r))
                print(f"# flagged: run {r}: Linux {t} {x[0]:.2f} Gbit/s is under 90 % of its own {u} {y:.2f}: "
                      f"a starved baseline, {t}'s ratio of this run is not used")
                break


def ratio(t, a="ringrouter", b="linux", f=lambda x: x[0], higher_is_better=True):
    """Median over the runs of a/b within each run; nan when no run counts.
    Against Linux, b's run is the better of linux and linuxnapi where both
    ran (the worse ratio for a)."""
    A = rows.get((t, a), {})
    bs = [b] + (["linuxnapi"] if b == "linux" else [])
    q = []
    for r in A:
        per = [f(A[r]) / f(B[r]) for B in (rows.get((t, x), {}) for x in bs)
               if r in B and f(A[r]) > 0 and f(B[r]) > 0 and math.isfinite(f(A[r]) + f(B[r]))
               and not (b == "linux" and (t, r) in flagged)]
        if per:
            q.append(min(per) if higher_is_better else max(per))
    return statistics.median(q) if q else float("nan")


def machine_per_unit(t):
    return lambda x: per_unit(t, x[0], x[2]) if x[0] > 0 else math.nan


for t in order:
    if (t, "ringrouter") in rows and (t, "linux") in rows:
        print(f"tap_{t}_vs_linux_machine_cpu_per_unit {ratio(t, f=machine_per_unit(t), higher_is_better=False):.3f}")
if "tcp1" in order and any(k[1] == "onefwd" for k in rows):
    print(f"tap_onefwd_tcp1_vs_linux {ratio('tcp1', 'onefwd'):.3f}")
    print(f"tap_tcp1_vs_onefwd {ratio('tcp1', 'ringrouter', 'onefwd'):.3f}")
for t in ("tcp2", "tcp8", "udp16"):
    if t in order:
        print(f"tap_{t}_vs_linux {ratio(t):.3f}")
why = []  # what the sweep's figures leave out, and why


def sweep_figures(p):
    """The least delivered % (up to 90 % of the path's maximum: its udp1, else
    its best step) and the largest fall, bench/forward's rules."""
    sw = sweep_of(p)
    top = {r: x[0] for r, x in rows.get(("udp1", p), {}).items()}
    return forward_sweep.min_delivered(p, sw, top, why), forward_sweep.livelock(p, sw, why)


if sweep_paths:
    least, fall = sweep_figures("ringrouter") if "ringrouter" in sweep_paths else (math.nan, math.nan)
    for p in sweep_paths:
        if p != "ringrouter":
            print(f"# {p}: sweep least delivered %.2f %%, largest fall %.2f %%" % sweep_figures(p))
    for w in dict.fromkeys(why):
        print(f"# left out: {w}")
    print(f"tap_sweep_min_delivered_pct {least:.2f}")
    print(f"tap_livelock_drop_pct {fall:.2f}")
print(f"tap_tcp4_vs_linux {ratio('tcp4'):.3f}")
print(f"tap_tcp1_vs_linux {ratio('tcp1'):.3f}")
print(f"tap_udp64_vs_linux {ratio('udp1'):.3f}")
