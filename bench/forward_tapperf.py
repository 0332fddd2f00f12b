#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/forward tap's FWD_PERF: where the forwarders' CPU goes, from a
`perf record -g -C CPU` of each UDP maximum's window.

    forward_tapperf.py record DATA TEST PATH RUN PKTS T0 T1   (a line to stdout)
    forward_tapperf.py report KERNEL_TSV METRIC_FILE   (the "# kernel:" lines)

record reads the profile DATA of the forwarder's CPU (ringrouter's three
processes, onefwd's bench/tapfwd, or Linux's forwarding) over a window in
which PKTS packets reached B between the times T0 and T1 (s), and prints
one tab-separated line: TEST PATH RUN, the packets a second at B, then per
forwarded packet, in µs of that CPU: busy (every sample not of the idle
task), the TAP read (`tun_chr_read_iter` and
all below it), the TAP write (`tun_chr_write_iter`) and, within the write,
B's receive (`netif_receive_skb`: a TAP write runs the receiver's stack).
cpu-clock samples cover the wall time of the CPU, busy or not, so a
function's share of the samples is its share of that time.

report prints, per path and test, the medians over the runs, and writes to
METRIC_FILE the line `tap_udp64_bound_vs_linux R`, per run then the median.
A forwarder that must read every frame from one TAP and write it to
another spends at least the kernel's read and write on its CPU, so on one
CPU it forwards at most 1 / (read + write) packets a second, with read +
write the least of the TAP forwarders profiled in the run (ringrouter,
onefwd). Over the rate of the better Linux in the same run (RPS or NAPI,
the faster, as `tap_udp64_vs_linux` takes it), that is the most
`tap_udp64_vs_linux` could have been for any design that moves frames
through TAP system calls, as both do.
"""
import statistics
import subprocess
import sys

TAP_PATHS = ("ringrouter", "onefwd")
LINUX_PATHS = ("linux", "linuxnapi")

READ = "tun_chr_read_iter"
WRITE = "tun_chr_write_iter"
B_RECV = "netif_receive_skb"


def perf_report(data, *args):
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "-g", "none", "--percent-limit", "0", *args],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0].endswith("%"):
            rows.append(f)
    return rows


def record(data, test, path, run, pkts, t0, t1):
    pps = float(pkts) / max(float(t1) - float(t0), 1e-9)
    # --children: a function's share with everything it called.
    share = {}
    for f in perf_report(data, "--children", "--sort", "sym"):
        if len(f) >= 4:
            share.setdefault(f[-1], float(f[0][:-1]))
    idle = sum(float(f[0][:-1]) for f in perf_report(data, "--no-children", "--sort", "comm")
               if f[1].startswith("swapper"))
    us = 1e6 / max(float(pps), 1.0) / 100.0
    vals = [100.0 - idle, share.get(READ, 0.0), share.get(WRITE, 0.0), share.get(B_RECV, 0.0)]
    print("\t".join([test, path, run, "%.0f" % pps] + ["%.4f" % (v * us) for v in vals]))


def report(tsv, metric_file):
    rows = [line.rstrip("\n").split("\t") for line in open(tsv) if line.strip()]
    by = {}
    for r in rows:
        by.setdefault((r[0], r[1]), []).append([float(v) for v in r[4:8]])
    for (test, path), vals in sorted(by.items()):
        med = [statistics.median(v[i] for v in vals) for i in range(4)]
        if path in TAP_PATHS:
            print("# kernel: %s %s, CPU µs a packet (perf, median of %d): busy %.2f, TAP read %.2f, TAP write %.2f "
                  "(of which B's receive %.2f), the rest %.2f" %
                  (test, path, len(vals), med[0], med[1], med[2], med[3], med[0] - med[1] - med[2]))
        else:
            print("# kernel: %s %s, CPU µs a packet (perf, median of %d): busy %.2f" % (test, path, len(vals), med[0]))
    calls = {}  # (test, run): the least TAP read + write of the TAP forwarders, µs
    linux = {}  # (test, run): the better Linux's rate, packets a second
    for r in rows:
        key = (r[0], r[2])
        if r[1] in TAP_PATHS and float(r[5]) + float(r[6]) > 0:
            calls[key] = min(calls.get(key, float("inf")), float(r[5]) + float(r[6]))
        if r[1] in LINUX_PATHS and float(r[3]) > 0:
            linux[key] = max(linux.get(key, 0.0), float(r[3]))
    bounds = [1e6 / calls[key] / linux[key] for key in sorted(linux) if key[0] == "udp1" and key in calls]
    value = "%.3f" % statistics.median(bounds) if bounds else "nan"
    if bounds:
        print("# kernel: udp1, at most 1 / (TAP read + write) a second over the better Linux's rate, per run: " +
              ", ".join("%.3f" % b for b in bounds))
    with open(metric_file, "w") as f:
        f.write("tap_udp64_bound_vs_linux %s\n" % value)


if __name__ == "__main__":
    if len(sys.argv) == 9 and sys.argv[1] == "record":
        record(*sys.argv[2:9])
    elif len(sys.argv) == 4 and sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
