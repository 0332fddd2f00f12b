#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bench/forward_report.py RESULTS SECS RUNS: the table and the ratio lines of
# bench/forward tap from its results file (paths ringrouter, onefwd, linux) (test, path, run, value, fwd cores,
# machine cores per line; value in Gbit/s for tcp*, packets/s for udp*).
import statistics
import sys

rows = {}
for line in open(sys.argv[1]):
    t, path, run, v, fwd, mach = line.split("\t")
    rows.setdefault((t, path), []).append((float(v), float(fwd), float(mach)))
secs, runs = sys.argv[2], sys.argv[3]

order = [t for t in ("tcp1", "tcp2", "tcp4", "tcp8", "udp1", "udp16") if any(k[0] == t for k in rows)]
med = {}


def cpu_cols(t, vals):
    """Forwarder and machine CPU per unit of work, medians over the runs."""
    out = []
    for idx in (1, 2):
        per = []
        for v, *c in vals:
            cores = c[idx - 1]
            if v <= 0:
                continue
            if t.startswith("tcp"):
                per.append(100.0 * cores / v)  # % of a core per Gbit/s
            else:
                per.append(1e6 * cores / v)  # µs of CPU per packet
        out.append(statistics.median(per) if per else float("nan"))
    return out


print(f"bench/forward tap: median and range of {runs} runs x {secs} s "
      f"(TCP: iperf3 receiver; UDP: 64-byte frames/s arriving at B)")
print(f"{'test':<6} {'router':<11} {'median':>14} {'min - max':>21} {'fwd cores':>9} {'fwd CPU':>11} {'machine CPU':>13}")
for t in order:
    unit = "Gbit/s" if t.startswith("tcp") else "kpps"
    scale = 1.0 if t.startswith("tcp") else 1e-3
    cunit = "%core/Gb" if t.startswith("tcp") else "us/pkt"
    for path in ("ringrouter", "onefwd", "linux"):
        vals = rows.get((t, path), [])
        if not vals:
            continue
        vs = [v for v, _, _ in vals]
        m = statistics.median(vs)
        med[(t, path)] = m
        fc = statistics.median([f for _, f, _ in vals])
        fwd, mach = cpu_cols(t, vals)
        print(f"{t:<6} {path:<11} {m * scale:>7.2f} {unit:<6} {min(vs) * scale:>9.2f} - {max(vs) * scale:<9.2f}"
              f" {fc:>9.2f} {fwd:>6.2f} {cunit:<4} {mach:>6.2f} {cunit}")
print("fwd cores: the forwarder's CPU in cores (ringrouter: its 3 processes; onefwd: bench/tapfwd; linux: machine minus generators,")
print("  a lower bound, see bench/forward). fwd/machine CPU: per Gbit/s (% of a core) or per packet (us).")
print()


def ratio(t, a="ringrouter", b="linux"):
    x, y = med.get((t, a)), med.get((t, b))
    return x / y if x is not None and y else float("nan")


for t in order:
    print(f"tap_{t}_vs_linux_machine_cpu_per_unit {cpu_cols(t, rows[(t, 'ringrouter')])[1] / cpu_cols(t, rows[(t, 'linux')])[1]:.3f}"
          if (t, "ringrouter") in rows and (t, "linux") in rows else "")
if "tcp1" in order and any(k[1] == "onefwd" for k in rows):
    print(f"tap_onefwd_tcp1_vs_linux {ratio('tcp1', 'onefwd'):.3f}")
    print(f"tap_tcp1_vs_onefwd {ratio('tcp1', 'ringrouter', 'onefwd'):.3f}")
for t in ("tcp2", "tcp8", "udp16"):
    if t in order:
        print(f"tap_{t}_vs_linux {ratio(t):.3f}")
print(f"tap_tcp4_vs_linux {ratio('tcp4'):.3f}")
print(f"tap_tcp1_vs_linux {ratio('tcp1'):.3f}")
print(f"tap_udp64_vs_linux {ratio('udp1'):.3f}")
