#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tests/lib/status_poll.py SOCK STOPFILE: `status` over the control socket
# every 20 ms until STOPFILE exists, each answer timed from connect to the
# end of its text (no process start in the measure); prints the polls, the
# slowest and the p99 in us (routes_mirror.sh, routes_load_big.sh).
import os, socket, sys, time
sock, stop = sys.argv[1], sys.argv[2]
times = []
while not os.path.exists(stop):
    t0 = time.monotonic()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(b"status\n")
    buf = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        buf += b
    s.close()
    times.append(time.monotonic() - t0)
    if not (buf.startswith(b"OK\n") or buf.startswith(b"FAILED\n")):
        print("bad answer", buf[:80])
        sys.exit(1)
    time.sleep(0.02)
times.sort()
print(len(times), int(times[-1] * 1e6), int(times[int(len(times) * 0.99)] * 1e6))
