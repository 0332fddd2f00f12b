#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tests/lib/guard_flood.py: a reader of the control socket who tries to hold
# every connection, for tests/integ/guard_ctl.sh (issue 44, attack 6).
#
#   guard_flood.py SOCK N SECS
#
# Keeps N connections open for SECS seconds: each sends one byte ("s")
# every 0.3 s and never a newline; one the supervisor closes (its deadline,
# or "busy" at once) is opened again at once (after 20 ms if it was turned
# away, so that the loop does not spin). Prints one line:
#   flood: opened O, busy B, longest held T s, still open K
# T is the longest a connection that was not turned away stayed open: the
# supervisor's deadline must close a trickler, however steady its bytes.
import select
import socket
import sys
import time

BUSY = b"ERR\nbusy"


def main():
    path, n, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    start = time.monotonic()
    conns = {}  # socket -> [opened at, last byte sent at, first bytes read]
    retry = [start] * n  # when each of the n to open again
    opened = busy = 0
    longest = 0.0
    while time.monotonic() - start < secs:
        now = time.monotonic()
        for i in range(n):
            if len(conns) >= n or retry[i] > now:
                continue
            retry[i] = float("inf")
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.setblocking(False)
                s.connect(path)
            except OSError:
                retry[i] = now + 0.02
                continue
            opened += 1
            conns[s] = [now, 0.0, b"", i]
        for s, st in list(conns.items()):
            if now - st[1] >= 0.3:
                try:
                    s.send(b"s")
                    st[1] = now
                except OSError:
                    pass
        r, _, _ = select.select(list(conns), [], [], 0.01)
        now = time.monotonic()
        for s in r:
            st = conns[s]
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data:
                st[2] += data
                continue
            del conns[s]
            s.close()
            if st[2].startswith(BUSY):
                busy += 1
                retry[st[3]] = now + 0.02
            else:
                longest = max(longest, now - st[0])
                retry[st[3]] = now
    print("flood: opened %d, busy %d, longest held %.2f s, still open %d" % (opened, busy, longest, len(conns)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
