# SPDX-License-Identifier: MIT
# bench/forward_sweep.py: the offered-load sweep's tables, plot and ratios,
# imported by bench/forward_modes.py (bench/forward, the AF_XDP modes) and
# bench/forward_report.py (bench/forward tap, the TAP paths), so that both
# benches read a sweep by the same rules.
#
# Run as `python3 bench/forward_sweep.py CEILING` (packets/s, as measured;
# empty or under 100 kpps: 100 kpps), it prints the 8 rates to offer, in
# packets/s: 7 evenly from 50 kpps to the ceiling, which is the 7th, and 0.
#
# A sweep of one mode or path is {step: {run: Step}}, steps sweep1..sweep8:
# 7 paced at rising targets, the 8th as fast as the generator can (target 0).
import collections
import math
import os
import statistics
import subprocess
import sys

STEPS = [f"sweep{i}" for i in range(1, 9)]
OFFERED_MIN = 0.95  # a step offered less than this share of its target is left out

# sink, offered: packets/s at the sink and offered by the generator, over the
# window; delivered: the fraction of what the generator offered over its whole
# life that reached the sink; target: the rate asked for (0: the maximum);
# cpu: µs of CPU per packet at the sink, one figure per CPU column.
Step = collections.namedtuple("Step", "sink offered delivered target cpu")


def rates(ceiling):
    """The 8 offered rates of a sweep below a generator's ceiling (packets/s)."""
    c = max(int(ceiling), 100000)
    return [50000 + i * (c - 50000) // 6 for i in range(7)] + [0]


def per_packet_us(cores, pps):
    """µs of CPU per packet; nan when nothing arrived."""
    return 1e6 * cores / pps if pps > 0 else math.nan


def median_or_nan(values):
    v = [x for x in values if math.isfinite(x)]
    return statistics.median(v) if v else float("nan")


def step_median(runs, f):
    """The median over the runs of f(Step), its undefined values left out."""
    return median_or_nan([f(x) for x in runs.values()])


def table(title, sweep, cpu_heads):
    """A markdown table of the medians of the runs, a line per step."""
    print(f"\n{title}\n")
    print("| step | target kpps | offered kpps | at the sink kpps | delivered % | " +
          " | ".join(f"{h} µs/packet" for h in cpu_heads) + " |")
    print("|---" * (5 + len(cpu_heads)) + "|")
    for i, s in enumerate(STEPS, 1):
        runs = sweep.get(s)
        if not runs:
            continue
        tgt = step_median(runs, lambda x: x.target / 1e3)
        cells = [f"{step_median(runs, lambda x: x.offered / 1e3):.0f}", f"{step_median(runs, lambda x: x.sink / 1e3):.0f}",
                 f"{step_median(runs, lambda x: 100 * x.delivered):.2f}"]
        cells += [f"{step_median(runs, lambda x, k=k: x.cpu[k]):.2f}" for k in range(len(cpu_heads))]
        print(f"| {i} | {'max' if tgt == 0 else '%.0f' % tgt} | " + " | ".join(cells) + " |")


def plot(outdir, sweeps, what, cpu_title, cpu_ylabel, cpu=0):
    """OUTDIR/sweep.png with gnuplot: kpps at the sink, delivered % and CPU per
    packet (column cpu of Step.cpu) against the offered rate, a line per
    (label, sweep) of sweeps; the points, medians of the runs, in
    OUTDIR/sweep/N.dat. what names the traffic in a title. Prints the plot's
    path or why there is none."""
    sdir = os.path.join(outdir, "sweep")
    os.makedirs(sdir, exist_ok=True)
    files = []
    for j, (lbl, sweep) in enumerate(sweeps):
        f = os.path.join(sdir, f"{j}.dat")
        with open(f, "w") as fh:
            fh.write("# offered_kpps delivered_pct us_per_pkt sink_kpps\n")
            for s in STEPS:
                runs = sweep.get(s)
                if runs:
                    fh.write(f"{step_median(runs, lambda x: x.offered / 1e3):.1f} "
                             f"{step_median(runs, lambda x: 100 * x.delivered):.3f} "
                             f"{step_median(runs, lambda x: x.cpu[cpu]):.4f} "
                             f"{step_median(runs, lambda x: x.sink / 1e3):.1f}\n")
        files.append((f, lbl))
    png = os.path.join(outdir, "sweep.png")
    gp = f"""set terminal pngcairo size 1800,480 noenhanced
set output '{png}'
set multiplot layout 1,3
set grid
set key top left
set xlabel 'offered kpps (generator)'
set title 'forwarded: kpps at the sink (falling: receive livelock)'
set ylabel 'kpps'
set yrange [0:*]
plot {", ".join(f"'{f}' using 1:4 with linespoints title '{t}'" for f, t in files)}, x title 'all of it' dashtype 2
set key bottom left
set title 'delivered, % of offered ({what})'
set ylabel '%'
set yrange [0:105]
plot {", ".join(f"'{f}' using 1:2 with linespoints title '{t}'" for f, t in files)}
set title '{cpu_title}'
set ylabel '{cpu_ylabel}'
set yrange [0:*]
set key top right
plot {", ".join(f"'{f}' using 1:3 with linespoints title '{t}'" for f, t in files)}
unset multiplot
"""
    try:
        r = subprocess.run(["gnuplot"], input=gp, text=True, capture_output=True, timeout=60)
        print(f"\nplot: {png}" if r.returncode == 0 else f"\nplot: gnuplot failed: {r.stderr.strip()[:200]}")
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"\nplot: gnuplot failed: {e}")


def runs_of(sweep):
    return sorted({r for s in STEPS for r in sweep.get(s, {})})


def min_delivered(name, sweep, maximum, why):
    """Per run, the least delivered % over the paced steps at most 90 % of
    the maximum (maximum[run], packets/s, else the best step of the run);
    the median. A step offered under 95 % of its target is left out, and said
    so in why."""
    out = []
    for r in runs_of(sweep):
        top = max([x[r].sink for x in sweep.values() if r in x] + [maximum.get(r, 0)])
        ds, lost50 = [], 0
        for s in STEPS:
            x = sweep.get(s, {}).get(r)
            if x is None or x.target == 0 or x.target > 0.9 * top:
                continue
            if x.offered < OFFERED_MIN * x.target:
                why.append(f"sweep {name} run {r} at {x.target / 1e3:.0f} kpps: offered only {x.offered / 1e3:.0f} kpps: "
                           "step left out")
                continue
            ds.append(100 * x.delivered)
            if x.target <= 0.5 * top and x.delivered < 1:
                lost50 += 1
        if ds:
            out.append(min(ds))
        if lost50:
            print(f"# sweep {name} run {r}: packets lost at {lost50} rate(s) up to 50 % of its maximum {top / 1e3:.0f} kpps")
    return median_or_nan(out)


def livelock(name, sweep, why):
    """Per run, the largest fall in delivered rate from one step to the next
    (as offered rises), % of the earlier; the median. A pair where the
    offered rate fell is left out, and said so in why; a run with no pair
    left has no figure (nan when no run has one)."""
    out = []
    for r in runs_of(sweep):
        xs = [sweep[s][r] for s in STEPS if r in sweep.get(s, {})]
        falls = []
        for a, b in zip(xs, xs[1:]):
            if b.offered < a.offered:
                why.append(f"livelock {name} run {r}: offered fell from {a.offered / 1e3:.0f} to {b.offered / 1e3:.0f} kpps: "
                           "pair left out")
                continue
            if a.sink > 0:
                falls.append(max(0.0, 100 * (a.sink - b.sink) / a.sink))
        if falls:
            out.append(max(falls))
        else:
            why.append(f"livelock {name} run {r}: no pair of steps counts: no figure for the run")
    return median_or_nan(out)


if __name__ == "__main__":
    print(" ".join(map(str, rates(float(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 0))))
