#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tests/lib/ctl_clients.py: misbehaving clients of the control socket, for
# tests/integ/sup_ctl_clients.sh. Each mode prints one result line and exits
# 0 when it saw what it was told to expect, 1 otherwise.
#
#   trickle SOCK N SECS   N clients each send one byte ("s") every 150 ms,
#                         never a newline, for up to SECS; prints how long
#                         the supervisor let each stay open (it must close
#                         them at its deadline, not keep reading)
#   idle SOCK N           open N connections and say nothing; prints how many
#                         the supervisor turned away at once as busy, and how
#                         long it kept the others
#   send SOCK HEX         send the bytes, shut the write side, print the answer
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def closed(s):
    # Non-blocking peek: has the server closed (b"") or answered?
    s.setblocking(False)
    try:
        return s.recv(4096, socket.MSG_PEEK) is not None
    except BlockingIOError:
        return False
    except OSError:
        return True


def trickle(path, n, secs):
    socks = [connect(path) for _ in range(n)]
    start = time.monotonic()
    open_for = [None] * n
    while time.monotonic() - start < secs and None in open_for:
        for i, s in enumerate(socks):
            if open_for[i] is not None:
                continue
            if closed(s):
                open_for[i] = time.monotonic() - start
                continue
            try:
                s.send(b"s")
            except OSError:
                open_for[i] = time.monotonic() - start
        time.sleep(0.15)
    held = [round(t, 2) if t is not None else -1 for t in open_for]
    print("trickle: open for", " ".join(str(t) for t in held))
    return 0 if -1 not in held else 1


def idle(path, n):
    socks = [connect(path) for _ in range(n)]
    start = time.monotonic()
    busy = 0
    # The busy answer is written before the accept loop moves on: give it a
    # bounded moment to arrive.
    time.sleep(0.3)
    kept = []
    for s in socks:
        s.setblocking(False)
        try:
            data = s.recv(4096)
        except BlockingIOError:
            kept.append(s)
            continue
        if data.startswith(b"ERR\nbusy:"):
            busy += 1
    ends = []
    while kept and time.monotonic() - start < 10:
        for s in list(kept):
            try:
                if s.recv(4096) == b"":
                    ends.append(time.monotonic() - start)
                    kept.remove(s)
            except BlockingIOError:
                pass
        time.sleep(0.02)
    print("idle: busy %d, kept %d, closed after %s, still open %d"
          % (busy, len(ends), " ".join("%.2f" % t for t in ends), len(kept)))
    return 0


def send(path, hexbytes):
    s = connect(path)
    s.sendall(bytes.fromhex(hexbytes))
    s.shutdown(socket.SHUT_WR)
    s.settimeout(5)
    out = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        out += d
    sys.stdout.write(out.decode(errors="replace"))
    return 0


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "trickle":
        return trickle(path, int(sys.argv[3]), float(sys.argv[4]))
    if mode == "idle":
        return idle(path, int(sys.argv[3]))
    if mode == "send":
        return send(path, sys.argv[3])
    print("usage: ctl_clients.py trickle|idle|send SOCK ...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
