#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/loss_where.py: where a numbered stream's lost datagrams went, by
step and by queue (issue 43; bench/upgrade, bench/faults).

  loss_where.py STEPS SENDLOG BITMAP [--sent N] [--samples FILE --every-ms MS]
                [--json OUT] [--title TEXT]

STEPS: one interval a line, "T0_US T1_US GROUP STEP" (wall clock, us):
each a step of a restart, an upgrade or a fault (GROUP: what it belongs
to, a service or a fault kind). SENDLOG and BITMAP are bench/faultflow's
(send's LOG, recv's BITMAP); N, what the sender says it sent (its last
tick's count is not in its LOG).

  - Step: each lost datagram is charged to the step its sender sent it in
    (the latest-starting interval holding its send time; "outside" if
    none). A queue that is full drops what reaches it, so this is when it
    was dropped, give or take the time it took to reach that queue (a few
    ms, more behind a stalled service).
  - Queue: with SAMPLES (tests/lib/faultcamp.py sample: every drop counter
    on the way, every MS ms), each counter's rise between two samples is
    shared among the steps that period overlaps, in proportion. What the
    counters do not account for is "uncounted" (a drop no counter sees,
    or one in flight when the stream ended). The waits for a CPU that
    the sampler counts (NAME/cpu_starved_ms) get a table of their own.

Prints the tables (the loss by step, and by GROUP and step when there are
several groups); --json OUT writes {"lost": {STEP: N}, "by_group": {GROUP:
{STEP: N}}, "queues":
{QUEUE: {STEP: N}}, "starved_ms": {...}, "total_lost": N} for the bench's
summary lines.
"""
import bisect
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from faultcamp import GAUGES, Flow, read_samples  # noqa: E402


def queue_name(k):
    """A counter's name without what changes between runs (device names,
    ports): a/dev:rrf123a/tx_drop -> a/dev/tx_drop."""
    k = re.sub(r"/dev:[^/]*/", "/dev/", k)
    return re.sub(r"/sock:\d+/", "/sock/", k)


def main(a):
    if len(a) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    steps_path, sendlog, bitmap = a[:3]
    samples, every_us, out, title, sent = None, 50000, None, "", None
    i = 3
    while i < len(a):
        if a[i] == "--samples":
            samples = a[i + 1]
        elif a[i] == "--every-ms":
            every_us = int(float(a[i + 1]) * 1000)
        elif a[i] == "--json":
            out = a[i + 1]
        elif a[i] == "--title":
            title = a[i + 1]
        elif a[i] == "--sent":
            sent = int(a[i + 1])
        i += 2
    iv = []
    with open(steps_path) as f:
        for line in f:
            p = line.split()
            if len(p) == 4 and int(p[1]) > int(p[0]):
                iv.append((int(p[0]), int(p[1]), p[2], p[3]))
    iv.sort()
    order = []
    for _, _, _, st in iv:
        if st not in order:
            order.append(st)
    order.append("outside")
    fl = Flow("s", sendlog, bitmap, "-")
    if not fl.ticks:
        print("loss_where: no send log", file=sys.stderr)
        return 1

    # Cut the stream's time into pieces, each owned by the latest-starting
    # interval that holds it, so that every datagram counts once.
    t_first, t_last = fl.ticks[0][0], fl.ticks[-1][0] + 1000
    cuts = sorted({t_first, t_last} | {t for s in iv for t in s[:2] if t_first < t < t_last})
    starts = [s[0] for s in iv]
    pieces = []  # (t0, t1, step)
    for t0, t1 in zip(cuts, cuts[1:]):
        k = bisect.bisect_right(starts, t0) - 1
        owner, group = "outside", "-"
        while k >= 0:
            if iv[k][1] > t0:
                owner, group = iv[k][3], iv[k][2]
                break
            k -= 1
        if pieces and pieces[-1][2:] == (owner, group) and pieces[-1][1] == t0:
            pieces[-1] = (pieces[-1][0], t1, owner, group)
        else:
            pieces.append((t0, t1, owner, group))

    lost, by_group = {}, {}
    total = 0
    for t0, t1, st, group in pieces:
        s0, s1 = fl.seq_at(t0), fl.seq_at(t1)
        if s0 is None:
            continue
        if s1 is None:
            s1 = sent if sent is not None else fl.ticks[-1][1] + fl.per_ms()
        n = fl.lost(s0, s1)
        lost[st] = lost.get(st, 0) + n
        g = by_group.setdefault(group, {})
        g[st] = g.get(st, 0) + n
        total += n

    piece_starts = [p[0] for p in pieces]

    def share(t_a, t_b, d, into, key):
        """Spread d over the pieces [t_a, t_b) overlaps, by overlap."""
        span = t_b - t_a
        k = max(0, bisect.bisect_right(piece_starts, t_a) - 1)
        row = into.setdefault(key, {})
        left = d
        while k < len(pieces) and pieces[k][0] < t_b:
            p0, p1, st, _ = pieces[k]
            ov = min(p1, t_b) - max(p0, t_a)
            if ov > 0:
                part = d * ov / span
                row[st] = row.get(st, 0) + part
                left -= part
            k += 1
        if left > 1e-9:
            row["outside"] = row.get("outside", 0) + left

    queues, starved = {}, {}
    if samples:
        for k, ev in read_samples(samples).items():
            # A shaper's class.NAME.drops are its overflow and CoDel drops
            # again, by class.
            if k.endswith(GAUGES) or "/class." in k:
                continue
            into = starved if k.endswith("cpu_starved_ms") or k.endswith("steal_ms") else queues
            name = queue_name(k)
            for t, d in ev:
                if t_first <= t <= t_last + every_us:
                    share(t - every_us, t, d, into, name)

    cols = [st for st in order if any(p[2] == st for p in pieces)]
    width = max([len(c) for c in cols] + [8])
    print("%s: %d datagrams lost of %d sent" % (title or "stream", total,
                                                   sent if sent is not None else fl.ticks[-1][1]))
    print("  %-34s" % "STEP" + "".join(" %*s" % (width, c) for c in cols) + " %9s" % "TOTAL")
    dur = {}
    for t0, t1, st, _ in pieces:
        dur[st] = dur.get(st, 0) + (t1 - t0)
    print("  %-34s" % "time in the step (ms)" + "".join(" %*.0f" % (width, dur.get(c, 0) / 1000) for c in cols) +
          " %9.0f" % (sum(dur.values()) / 1000))
    print("  %-34s" % "lost (by send time)" + "".join(" %*d" % (width, lost.get(c, 0)) for c in cols) +
          " %9d" % total)
    groups = [g for g in by_group if g != "-"]
    if len(groups) > 1:  # and by what each step belonged to
        for g in sorted(groups, key=lambda g: -sum(by_group[g].values())):
            if sum(by_group[g].values()):
                print("  %-34s" % ("  lost in " + g)[:34] + "".join(" %*d" % (width, by_group[g].get(c, 0))
                                                                     for c in cols) + " %9d" % sum(by_group[g].values()))
    counted = {}
    for q in sorted(queues, key=lambda q: -sum(queues[q].values())):
        row = queues[q]
        if sum(row.values()) < 0.5:
            continue
        for c, v in row.items():
            counted[c] = counted.get(c, 0) + v
        print("  %-34s" % q[:34] + "".join(" %*.0f" % (width, row.get(c, 0)) for c in cols) +
              " %9.0f" % sum(row.values()))
    if samples:
        unc = {c: lost.get(c, 0) - counted.get(c, 0) for c in cols}
        print("  %-34s" % "uncounted (lost - counters)" + "".join(" %*.0f" % (width, unc[c]) for c in cols) +
              " %9.0f" % (total - sum(counted.values())))
        for q in sorted(starved, key=lambda q: -sum(starved[q].values())):
            row = starved[q]
            print("  %-34s" % ("cpu wait ms " + q.replace("/cpu_starved_ms", ""))[:34] +
                  "".join(" %*.0f" % (width, row.get(c, 0)) for c in cols) + " %9.0f" % sum(row.values()))
    if out:
        with open(out, "w") as f:
            json.dump({"lost": lost, "total_lost": total, "by_group": by_group, "queues": queues, "time_us": dur,
                       "starved_ms": starved}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
