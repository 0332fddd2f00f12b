#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/forward_irq.py DIR [NAME...]: the interrupts, softirqs and NAPI
thread wake-ups of each measuring window that bench/forward saved with
FWD_PERF=DIR (NAME.0.irq and NAME.1.irq, irq_snap), per second, by CPU.
Only what moved: what a mode makes each CPU do besides its own work."""
import glob
import os
import sys


def parse(path):
    """(time, {(kind, cpu): count}, {thread: voluntary switches})"""
    with open(path) as f:
        lines = f.read().splitlines()
    t = float(lines[0])
    counts, threads, ncpu = {}, {}, 0
    for line in lines[1:]:
        w = line.split()
        if not w:
            continue
        if w[0].startswith("CPU"):
            ncpu = len(w)
            continue
        if w[0] == "thread" and len(w) >= 4:
            threads[w[2]] = int(w[3])
            continue
        kind = w[0].rstrip(":")
        vals = w[1 : 1 + ncpu]
        if len(vals) == ncpu and all(v.isdigit() for v in vals):
            for cpu, v in enumerate(vals):
                counts[(kind, cpu)] = counts.get((kind, cpu), 0) + int(v)
    return t, counts, threads


def report(d, name):
    t0, c0, th0 = parse(os.path.join(d, name + ".0.irq"))
    t1, c1, th1 = parse(os.path.join(d, name + ".1.irq"))
    secs = t1 - t0
    if secs <= 0:
        return
    moved = {k: (c1[k] - c0.get(k, 0)) / secs for k in c1 if c1[k] - c0.get(k, 0) > 0}
    kinds = sorted({k for k, _ in moved}, key=lambda k: -sum(moved.get((k, c), 0) for c in range(8)))
    print(f"{name} ({secs:.1f} s): per second")
    for k in kinds:
        per = [moved.get((k, c), 0) for c in range(max(c for _, c in moved) + 1)]
        if sum(per) >= 10:
            print(f"  {k:10s} " + " ".join(f"cpu{c} {v:9.0f}" for c, v in enumerate(per)))
    for th in sorted(th1):
        if th in th0 and th1[th] > th0[th]:
            print(f"  woken     {th:24s} {(th1[th] - th0[th]) / secs:9.0f}")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench/forward_irq.py DIR [NAME...]")
    d = sys.argv[1]
    names = sys.argv[2:] or sorted(os.path.basename(p)[: -len(".0.irq")] for p in glob.glob(os.path.join(d, "*.0.irq")))
    for n in names:
        report(d, n)


if __name__ == "__main__":
    main()
