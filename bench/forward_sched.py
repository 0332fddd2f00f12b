#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bench/forward_sched.py DIR [NAME...] [--slow US]: what ran on the dut's CPU
# while the slow pings of bench/forward's rtt test waited. bench/forward
# with FWD_PERF=DIR FWD_PERF_SCHED=1 leaves per ping window NAME.data (`perf
# sched record -k mono -a`: a wake-up is traced on the waker's CPU),
# NAME.ping (ping -D: each reply's arrival, CLOCK_REALTIME) and NAME.clock
# (CLOCK_REALTIME less CLOCK_MONOTONIC, the clock perf recorded in). A ping is slow at US µs or more (default 1000,
# or the window's p99 if that is lower and over 300). For each window:
#   - CPU 1's time by task over the slow pings' round trips, against its
#     time over all the pings': what is there when a ping is slow;
#   - the longest waits of the path's tasks (rr-afxdp, rr-router, the NAPI
#     threads, the forwarders of the other modes): from a wake-up, or a
#     preemption, to the switch to it, who ran meanwhile, and inside a slow
#     ping or not;
#   - who ran while the path waited, in all (the mode's own tasks by name);
#   - the slowest pings one by one: their three largest occupants of CPU 1
#     and their path's longest wait.
# Tasks are named by comm, a NAPI thread's without its NAPI id; those not of
# the mode (NAME.pids: its namespace's threads and its NAPI threads) as
# "other:COMM" (this machine is shared).
import collections
import glob
import math
import os
import re
import subprocess
import sys

PATH = re.compile(r"^(rr-afxdp|rr-router|rr-filter|rr-shaper|napi/.*|xskfwd|xsksplit|dpdk-.*|lcore-.*)$")
SW = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> "
                r"next_comm=(.*?) next_pid=(\d+) next_prio=(\d+)")
WK = re.compile(r"comm=(.*?) pid=(\d+) prio=(\d+)(?: success=\d+)? target_cpu=(\d+)")
HEAD = re.compile(r"^\s*(.*?)\s+(\d+)\s+\[(\d+)\]\s+([0-9.]+):\s+(\S+):\s+(.*)$")


def name(comm):
    return re.sub(r"-\d+$", "", comm) if comm.startswith("napi/") else comm


def events(data):
    out = subprocess.run(["perf", "script", "--ns", "-i", data], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"forward_sched: perf script -i {data}: {out.stderr.strip()[:300]}")
    for line in out.stdout.splitlines():
        m = HEAD.match(line)
        if m:
            yield int(m.group(3)), float(m.group(4)), m.group(5), m.group(6)


def timeline(data, ours):
    """CPU 1's segments (start, end, task, prio) and the path's waits
    (woken, ran, task). A task not of the mode (ours: its thread ids, None
    when not known) is named "other:" and its comm."""
    segs, waits, woken = [], [], {}
    cur, since, prio = None, None, None

    def path(comm, pid):
        return PATH.match(comm) and (ours is None or pid in ours)

    for cpu, t, ev, rest in events(data):
        if ev.endswith("sched_switch") and cpu == 1:
            m = SW.search(rest)
            if not m:
                continue
            if cur is not None:
                segs.append((since, t, cur, prio))
            if m.group(4).startswith("R") and path(m.group(1), m.group(2)):  # preempted: it waits from here
                woken.setdefault(m.group(2), t)
            pid = m.group(6)
            cur, since, prio = name(m.group(5)), t, int(m.group(7))
            if ours is not None and pid not in ours and not cur.startswith("swapper"):
                cur = "other:" + cur
            if pid in woken:
                w = woken.pop(pid)
                waits.append((w, t, cur))
        elif ev.endswith(("sched_wakeup", "sched_wakeup_new")):
            m = WK.search(rest)
            if m and int(m.group(4)) == 1 and path(m.group(1), m.group(2)) and m.group(2) not in woken:
                woken[m.group(2)] = t
    return segs, waits


def occupancy(segs, a, b, into):
    """Adds each task's time on CPU 1 within [a, b] to into; the segments
    are sorted, so a bisection finds the first."""
    lo, hi = 0, len(segs)
    while lo < hi:
        mid = (lo + hi) // 2
        if segs[mid][1] < a:
            lo = mid + 1
        else:
            hi = mid
    for s, e, task, _ in segs[lo:]:
        if s > b:
            break
        x = min(e, b) - max(s, a)
        if x > 0:
            into[task] += x


def pings(path, off):
    """(arrival on CLOCK_MONOTONIC, rtt seconds, seq) of each answered ping."""
    out = []
    for line in open(path):
        m = re.match(r"\[([0-9.]+)\].*icmp_seq=(\d+).*time=([0-9.]+) ms", line)
        if m:
            out.append((float(m.group(1)) - off, float(m.group(3)) / 1e3, int(m.group(2))))
    return out


def fmt_share(d, total, n=6):
    """The n largest, the tasks not of the mode ("other:") also summed."""
    top = sorted(d.items(), key=lambda kv: -kv[1])[:n]
    if total <= 0:
        return "-"
    other = sum(v for k, v in d.items() if k.startswith("other:"))
    return ", ".join(f"{k} {100 * v / total:.1f} %" for k, v in top) + (
        f"; all others {100 * other / total:.1f} %" if other else "")


def report(base, slow_us):
    off = float(open(base + ".clock").read())
    ps = pings(base + ".ping", off)
    if not ps:
        print(f"## {os.path.basename(base)}: no answered ping with a time of arrival")
        return
    rtts = sorted(p[1] for p in ps)
    p99 = rtts[max(0, math.ceil(0.99 * len(rtts)) - 1)]
    thr = slow_us / 1e6
    if 300e-6 < p99 < thr:
        thr = p99
    ours = set(open(base + ".pids").read().split()) if os.path.exists(base + ".pids") else None
    segs, waits = timeline(base + ".data", ours)
    slow = [p for p in ps if p[1] >= thr]
    print(f"## {os.path.basename(base)}: {len(ps)} pings answered, p50 {1e6 * rtts[len(rtts) // 2]:.0f} µs, "
          f"p99 {1e6 * p99:.0f} µs; slow (≥ {1e6 * thr:.0f} µs): {len(slow)}")
    if not segs:
        print("no switches on CPU 1 recorded")
        return
    every, over = collections.Counter(), collections.Counter()
    for t, r, _ in ps:
        occupancy(segs, t - r, t, every)
    for t, r, _ in slow:
        occupancy(segs, t - r, t, over)
    print(f"CPU 1 over every ping's round trip: {fmt_share(every, sum(every.values()))}")
    if slow:
        print(f"CPU 1 over the slow pings' round trips: {fmt_share(over, sum(over.values()))}")
    spans = sorted((t - r, t) for t, r, _ in slow)

    def in_slow(a, b):
        return any(s < b and a < e for s, e in spans)

    long = sorted(waits, key=lambda w: w[0] - w[1])[:10]  # the longest first
    print("the path's longest waits on CPU 1 (wake-up to run): "
          + ("; ".join(f"{who} {1e6 * (ran - w):.0f} µs at {w:.6f}{' (slow ping)' if in_slow(w, ran) else ''}, "
                       f"meanwhile {fmt_share(mw, ran - w, 3)}"
                       for w, ran, who in long
                       for mw in [occ(segs, w, ran)]) or "none"))
    behind = collections.Counter()
    for w, ran, _ in waits:
        occupancy(segs, w, ran, behind)
    print("the path's waits on CPU 1 in all, behind whom: " + fmt_share(behind, sum(behind.values()), 8)
          + f" (of {1e3 * sum(behind.values()):.1f} ms)")
    byw = collections.defaultdict(list)
    for w, ran, who in waits:
        byw[who].append(ran - w)
    for who, d in sorted(byw.items()):
        d.sort()
        b = collections.Counter()
        for w, ran, x in waits:
            if x == who:
                occupancy(segs, w, ran, b)
        print(f"  {who}: {len(d)} waits, p50 {1e6 * d[len(d) // 2]:.0f} µs, "
              f"p99 {1e6 * d[max(0, math.ceil(0.99 * len(d)) - 1)]:.0f} µs, max {1e6 * d[-1]:.0f} µs; "
              f"behind {fmt_share(b, sum(b.values()), 4)}")
    for t, r, seq in sorted(slow, key=lambda p: -p[1])[:10]:
        o = occ(segs, t - r, t)
        pw = [ran - w for w, ran, _ in waits if t - r <= w and ran <= t]
        print(f"  ping {seq}: {1e6 * r:.0f} µs, arrived {t:.6f}: {fmt_share(o, r, 3)}; "
              f"the path's longest wait {1e6 * max(pw, default=0):.0f} µs")
    longest = sorted((s - e, task, s) for s, e, task, _ in segs if not task.startswith("swapper"))[:5]
    print("CPU 1's longest runs of the mode's own tasks: " + ", ".join(
        f"{task} {1e6 * -d:.0f} µs at {s:.6f}" for d, task, s in
        sorted((s - e, task, s) for s, e, task, _ in segs if not task.startswith(("swapper", "other:")))[:5]))
    print("CPU 1's longest runs: " + ", ".join(f"{task} {1e6 * -d:.0f} µs at {s:.6f}" for d, task, s in longest))


def occ(segs, a, b):
    c = collections.Counter()
    occupancy(segs, a, b, c)
    return c


def main():
    args = sys.argv[1:]
    slow_us = 1000.0
    if "--slow" in args:
        i = args.index("--slow")
        slow_us = float(args[i + 1])
        del args[i:i + 2]
    if not args:
        sys.exit("usage: bench/forward_sched.py DIR [NAME...] [--slow US]")
    d, names = args[0], args[1:]
    bases = [os.path.join(d, n) for n in names] or sorted(p[:-5] for p in glob.glob(os.path.join(d, "*.ping")))
    if not bases:
        sys.exit(f"forward_sched: no NAME.ping in {d} (bench/forward with FWD_PERF={d} FWD_PERF_SCHED=1)")
    for b in bases:
        report(b, slow_us)
        print()


main()
