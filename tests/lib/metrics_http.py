#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tests/lib/metrics_http.py: HTTP clients for tests/integ/metrics.sh, run
# inside the test's namespace against `ringrouter exporter`.
#
#   get PORT PATH [OUT]   one request; prints the status code, the body to OUT
#   query PORT EXPR       a Prometheus server's instant query: the first
#                         result's value, or "none"
#   hostile PORT          while scrapers attack, a plain scrape must still be
#                         answered: a client that connects and sends nothing,
#                         one that trickles a request a byte at a time, one
#                         that sends 10 MB of header, and 50 clients at once
#                         (all must get 200), and 70 silent ones (more than
#                         its slots); and a silent client is closed at the
#                         deadline; prints what happened, exit 1 if a
#                         check failed
import json
import socket
import sys
import urllib.parse
import urllib.request
import threading
import time

HOST = "127.0.0.1"


def request(port, path, timeout=5.0, method="GET"):
    """(status, body) of one request; (None, why) on failure."""
    try:
        s = socket.create_connection((HOST, port), timeout=timeout)
        s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\n\r\n" % (method, path)).encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
    except OSError as e:
        return None, str(e)
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ")[1])
    except (IndexError, ValueError):
        return None, "no status line in %r" % data[:80]
    return status, body


def cmd_get(port, path, out=None):
    st, body = request(port, path)
    print(st if st is not None else "error: %s" % body)
    if out and st is not None:
        with open(out, "wb") as f:
            f.write(body)
    return 0 if st is not None else 1


def timed_scrape(port, what, fails):
    t0 = time.monotonic()
    st, body = request(port, "/metrics", timeout=5.0)
    dt = time.monotonic() - t0
    ok = st == 200 and b"ringrouter_supervisor_up 1" in body and dt < 3.0
    print("%s: a scrape: %s in %.3f s" % (what, st, dt))
    if not ok:
        fails.append("%s: scrape %s in %.3f s" % (what, st, dt))


def cmd_hostile(port):
    fails = []
    # Silent: connects, sends nothing, holds the connection.
    silent = [socket.create_connection((HOST, port)) for _ in range(5)]
    timed_scrape(port, "5 silent clients connected", fails)
    # Slowloris: a byte of a request every 100 ms.
    stop = threading.Event()

    def trickle():
        s = socket.create_connection((HOST, port))
        req = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 200
        try:
            for c in req:
                if stop.is_set():
                    break
                s.send(bytes([c]))
                time.sleep(0.1)
        except OSError:
            pass  # closed by the exporter's deadline: as it should
        s.close()

    tr = threading.Thread(target=trickle)
    tr.start()
    time.sleep(0.3)
    timed_scrape(port, "a trickling client", fails)
    # 10 MB of header, as fast as the exporter takes it.
    big_result = {}

    def big():
        s = socket.create_connection((HOST, port), timeout=5)
        sent = 0
        chunk = b"GET /metrics HTTP/1.1\r\nX-Big: " + b"b" * 65536
        try:
            while sent < 10 << 20:
                s.sendall(chunk)
                sent += len(chunk)
                chunk = b"b" * 65536
        except OSError as e:
            big_result["closed"] = str(e)
        big_result["sent"] = sent
        try:
            big_result["answer"] = s.recv(200)
        except OSError as e:
            big_result["answer"] = str(e).encode()
        s.close()

    bt = threading.Thread(target=big)
    bt.start()
    timed_scrape(port, "a 10 MB request", fails)
    bt.join(10)
    print("10 MB request: sent %d bytes before %s; answer %r" % (
        big_result.get("sent", 0), big_result.get("closed", "the end"), big_result.get("answer", b"")[:40]))
    if big_result.get("sent", 0) >= 10 << 20 and b"431" not in big_result.get("answer", b""):
        fails.append("the 10 MB request was taken whole")
    # 50 at once.
    res = [None] * 50

    def one(i):
        res[i] = request(port, "/metrics", timeout=10)[0]

    th = [threading.Thread(target=one, args=(i,)) for i in range(50)]
    t0 = time.monotonic()
    for t in th:
        t.start()
    for t in th:
        t.join(15)
    n200 = sum(1 for r in res if r == 200)
    print("50 clients at once: %d answered 200 in %.3f s" % (n200, time.monotonic() - t0))
    if n200 != 50:
        fails.append("50 clients at once: only %d answered 200 (%r)" % (n200, sorted(set(map(str, res)))))
    # More silent clients than the exporter has slots (64): a scraper still
    # gets one, the oldest silent one's.
    crowd = [socket.create_connection((HOST, port)) for _ in range(70)]
    timed_scrape(port, "70 silent clients connected", fails)
    for s in crowd:
        s.close()
    # A silent client is closed at the request deadline (3 s), not held.
    s = socket.create_connection((HOST, port))
    s.settimeout(8)
    t0 = time.monotonic()
    try:
        got = s.recv(10)
    except OSError as e:
        got = str(e)
    dt = time.monotonic() - t0
    s.close()
    print("a silent client: closed by the exporter after %.1f s (%r)" % (dt, got))
    if got != b"" or dt > 5:
        fails.append("a silent client was not closed within 5 s: %r after %.1f s" % (got, dt))
    timed_scrape(port, "at the end", fails)
    stop.set()
    tr.join(30)
    for s in silent:
        s.close()
    for f in fails:
        print("BAD: " + f)
    return 1 if fails else 0


def cmd_query(port, expr):
    url = "http://%s:%d/api/v1/query?query=%s" % (HOST, port, urllib.parse.quote(expr))
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            d = json.load(r)
        res = d["data"]["result"]
        print(res[0]["value"][1] if res else "none")
    except (OSError, ValueError, KeyError) as e:
        print("none (%s)" % e)
    return 0


def main():
    if sys.argv[1] == "query":
        return cmd_query(int(sys.argv[2]), sys.argv[3])
    if sys.argv[1] == "get":
        return cmd_get(int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    if sys.argv[1] == "hostile":
        return cmd_hostile(int(sys.argv[2]))
    print("usage: metrics_http.py get PORT PATH [OUT] | query PORT EXPR | hostile PORT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
