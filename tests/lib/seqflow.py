#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/lib/seqflow.py: a steady UDP flow with sequence numbers and send
times, and a sink that timestamps every arrival, so that a fault test can
measure from outside how long traffic stopped (tests/integ/faults_*.sh).

  seqflow.py send DST PORT INTERVAL_US
      one 64-byte datagram every INTERVAL_US to DST:PORT until SIGTERM; the
      payload is (seq, send time in us, realtime). A sender that fell behind
      (descheduled) skips ahead rather than bursting. Exit 0 on SIGTERM,
      with "sent N errors E" on stderr.
  seqflow.py recv ADDR PORT LOG
      "seq send_us recv_us" per datagram into LOG (flushed per line: the test
      reads it while it grows). Exit 0 on SIGTERM, "received N" on stderr.
  seqflow.py gap LOG T_US
      the first datagram sent at or after T_US (the moment of a fault, taken
      just before it) that arrived: prints "MS LOST", MS its arrival after
      T_US in ms, LOST the sequence numbers between the last arrival before
      T_US and it that have not arrived (so far). Exit 1 if none arrived yet.
  seqflow.py summary LOG
      "received N max_seq M missing K dup D" over the whole log.

Times are CLOCK_REALTIME in microseconds, the clock of bash's EPOCHREALTIME,
so the test's fault time and these compare directly (one host).
"""
import signal
import socket
import struct
import sys
import time

FMT = "!QQ"


def now_us():
    return time.time_ns() // 1000


def send(dst, port, interval_us):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pad = bytes(64 - struct.calcsize(FMT))
    seq = errors = 0
    nxt = now_us()
    while not stop:
        t = now_us()
        if t < nxt:
            time.sleep((nxt - t) / 1e6)
            continue
        try:
            s.sendto(struct.pack(FMT, seq, now_us()) + pad, (dst, port))
        except OSError:
            errors += 1  # the route may be gone for a moment: not our business
        seq += 1
        nxt = max(nxt + interval_us, t)  # behind: skip ahead, do not burst
    print("sent %d errors %d" % (seq, errors), file=sys.stderr)


def recv(addr, port, log):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind((addr, port))
    s.settimeout(0.1)  # so that a SIGTERM is seen within 100 ms
    n = 0
    with open(log, "w", buffering=1) as f:
        while not stop:
            try:
                b = s.recv(2048)
            except socket.timeout:
                continue
            t = now_us()
            if len(b) < struct.calcsize(FMT):
                continue
            seq, sent = struct.unpack_from(FMT, b)
            f.write("%d %d %d\n" % (seq, sent, t))
            n += 1
    print("received %d" % n, file=sys.stderr)


def rows(log):
    with open(log) as f:
        for line in f:
            p = line.split()
            if len(p) == 3:
                yield int(p[0]), int(p[1]), int(p[2])


def gap(log, t):
    last_before = -1
    first = None
    seen = set()
    for seq, sent, rcvd in rows(log):
        seen.add(seq)
        if rcvd < t:
            last_before = max(last_before, seq)
        elif sent >= t and first is None:
            first = (seq, rcvd)
    if first is None:
        return 1
    # lost: sent between the last arrival before T and the first sent after
    # it, and never arrived (a late arrival is not a loss)
    lost = sum(1 for q in range(last_before + 1, first[0]) if q not in seen) if last_before >= 0 else 0
    print("%.1f %d" % ((first[1] - t) / 1000.0, lost))
    return 0


def summary(log):
    seen = set()
    dup = 0
    for seq, _, _ in rows(log):
        if seq in seen:
            dup += 1
        seen.add(seq)
    top = max(seen) if seen else -1
    print("received %d max_seq %d missing %d dup %d" % (len(seen), top, top + 1 - len(seen), dup))
    return 0


def main(a):
    if a[0] == "send":
        send(a[1], int(a[2]), int(a[3]))
    elif a[0] == "recv":
        recv(a[1], int(a[2]), a[3])
    elif a[0] == "gap":
        return gap(a[1], int(a[2]))
    elif a[0] == "summary":
        return summary(a[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
