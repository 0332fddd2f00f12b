#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/lib/filter_probe.py: the traffic of the filter tests
(tests/integ/filter_*.sh), one verdict per run, by exit status:

  serve-tcp ADDR PORT LOG    accept connections; log "PEER_IP PEER_PORT" per
                             connection, echo what comes, until SIGTERM
                             (ADDR "::": IPv6 and IPv4)
  serve-udp ADDR PORT LOG    the same per datagram (logged once per peer)
  tcp DST PORT [TIMEOUT_S]   connect, send, read the echo: exit 0; 2 when
                             nothing answered in time; 3 when refused or reset
  udp DST PORT [TIMEOUT_S]   a connected UDP socket: send, read the echo:
                             exit 0; 2 when nothing answered; 3 refused (an
                             ICMP port unreachable reached us)
  rst DST PORT COUNT         COUNT bare TCP RSTs to DST:PORT from a raw socket
                             (conntrack calls them invalid: no connection)
  synflood DST PORT COUNT    COUNT SYNs to DST:PORT from as many source
                             ports, from a raw socket: new connections
  stream DST PORT            one TCP connection, written to (8 MB/s) until SIGTERM:
                             exit 0 if it was never reset nor stalled for
                             10 s; prints "bytes N"
  sink ADDR PORT             read one connection to its end; prints "bytes N"
  pingpong DST PORT MS       a datagram every MS until SIGTERM, each echoed
                             back (serve-udp): prints "sent N replies R"
                             after a last second for late replies
"""
import signal
import socket
import struct
import sys
import time

from rrpkt import csum  # tests/lib/rrpkt.py, beside this file


STOP = []


def flag_on_term():
    signal.signal(signal.SIGTERM, lambda *_: STOP.append(1))


def stop_on_term():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


def listener(addr, kind):
    """A socket for ADDR: "::" takes IPv6 and IPv4 both."""
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, kind)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    return s


def serve_tcp(addr, port, log):
    stop_on_term()
    s = listener(addr, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)
    with open(log, "a", buffering=1) as f:
        while True:
            c, peer = s.accept()
            f.write("%s %d\n" % peer[:2])
            c.settimeout(5)
            try:
                d = c.recv(4096)
                if d:
                    c.sendall(d)
            except OSError:
                pass
            c.close()


def serve_udp(addr, port, log):
    stop_on_term()
    s = listener(addr, socket.SOCK_DGRAM)
    s.bind((addr, port))
    seen = set()
    with open(log, "a", buffering=1) as f:
        while True:
            d, peer = s.recvfrom(2048)
            if peer not in seen:
                seen.add(peer)
                f.write("%s %d\n" % peer[:2])
            s.sendto(d, peer)


def tcp(dst, port, timeout):
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect((dst, port))
        s.sendall(b"hello")
        d = s.recv(16)
    except socket.timeout:
        return 2
    except OSError as e:
        print("tcp: %s" % e)
        return 3
    return 0 if d == b"hello" else 3


def udp(dst, port, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    s.connect((dst, port))
    try:
        s.send(b"hello")
        d = s.recv(16)
    except socket.timeout:
        return 2
    except ConnectionRefusedError:
        return 3
    return 0 if d == b"hello" else 3


def rst(dst, port, count, flags=0x04):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    # the source address the route to dst takes
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.connect((dst, port))
    src = u.getsockname()[0]
    for i in range(count):
        sport = 1024 + i % 64000
        hdr = struct.pack("!HHIIBBHHH", sport, port, 1000 + i, 0, 5 << 4, flags, 65535, 0, 0)
        pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(hdr))
        hdr = hdr[:16] + struct.pack("!H", csum(pseudo + hdr)) + hdr[18:]
        s.sendto(hdr, (dst, 0))
    return 0


def stream(dst, port):
    flag_on_term()
    s = socket.create_connection((dst, port), timeout=10)
    buf = b"x" * 8192
    n = 0
    nxt = time.monotonic()
    try:
        while not STOP:
            # paced: 8 MB/s, so that a fault's gap fills no ring with its ACKs
            nxt += 0.001
            d = nxt - time.monotonic()
            if d > 0:
                time.sleep(d)
            s.sendall(buf)
            n += len(buf)
        s.shutdown(socket.SHUT_WR)
        s.recv(1)
    except OSError as e:
        print("bytes %d, then %s" % (n, e))
        return 1
    print("bytes %d" % n)
    return 0


def sink(addr, port):
    stop_on_term()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    c, _ = s.accept()
    n = 0
    while True:
        d = c.recv(65536)
        if not d:
            break
        n += len(d)
    c.close()
    print("bytes %d" % n, flush=True)
    return 0


def pingpong(dst, port, ms):
    flag_on_term()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((dst, port))
    s.setblocking(False)
    sent = replies = 0
    end = None
    nxt = time.monotonic()
    while True:
        now = time.monotonic()
        if STOP and end is None:
            end = now
        if end is not None and now >= end + 1:
            break
        if end is None and now >= nxt:
            try:
                s.send(struct.pack("!Q", sent))
                sent += 1
            except OSError:
                pass
            nxt += ms / 1000.0
        try:
            while s.recv(64):
                replies += 1
        except (BlockingIOError, ConnectionRefusedError):
            pass
        time.sleep(0.001)
    print("sent %d replies %d" % (sent, replies))
    return 0


def main(a):
    cmd = a[0]
    if cmd == "serve-tcp":
        serve_tcp(a[1], int(a[2]), a[3])
    elif cmd == "serve-udp":
        serve_udp(a[1], int(a[2]), a[3])
    elif cmd == "tcp":
        return tcp(a[1], int(a[2]), float(a[3]) if len(a) > 3 else 3)
    elif cmd == "udp":
        return udp(a[1], int(a[2]), float(a[3]) if len(a) > 3 else 3)
    elif cmd == "rst":
        return rst(a[1], int(a[2]), int(a[3]))
    elif cmd == "synflood":
        return rst(a[1], int(a[2]), int(a[3]), 0x02)
    elif cmd == "stream":
        return stream(a[1], int(a[2]))
    elif cmd == "sink":
        return sink(a[1], int(a[2]))
    elif cmd == "pingpong":
        return pingpong(a[1], int(a[2]), float(a[3]))
    return 100


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
