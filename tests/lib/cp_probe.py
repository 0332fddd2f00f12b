# SPDX-License-Identifier: MIT
"""tests/lib/cp_probe.py: the ends of the control-traffic tests
(tests/integ/cp_*.sh), each run inside a namespace with `ip netns exec`:

  serve PORT                 TCP and UDP echo on [::]:PORT (IPv4 too):
                             each TCP line or UDP datagram comes back as
                             "echo:" + it; runs until SIGTERM
  tcp HOST PORT MSG          connect (5 s), send MSG, expect "echo:MSG"
  udp HOST PORT MSG          send MSG, expect "echo:MSG" (3 tries of 2 s)
  raw-recv GROUP IFADDR PROTO  join GROUP on the interface of IFADDR, wait
                             (10 s) for one datagram of IP protocol PROTO
                             to GROUP, print its payload
  raw-send GROUP IFADDR PROTO MSG  send MSG to GROUP from IFADDR, TTL 1,
                             every 200 ms until SIGTERM
  refused tcp|udp HOST PORT  expect "connection refused" (a reset, a port
                             unreachable) within 5 s

HOST may be a link-local address with its scope (fe80::1%eth0). Exit 0 on
success, 1 with the reason on stderr.
"""
import signal
import socket
import struct
import sys
import threading
import time


def addr(host, port, kind):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    return fam, socket.getaddrinfo(host, port, fam, kind)[0][4]


def serve(port):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    t = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    t.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind(("::", port))
    t.listen(8)
    u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    u.bind(("::", port))

    def tcp_loop():
        while True:
            c, _ = t.accept()
            c.settimeout(10)
            try:
                line = c.recv(4096)
                if line:
                    c.sendall(b"echo:" + line)
            except OSError:
                pass
            c.close()

    threading.Thread(target=tcp_loop, daemon=True).start()
    while True:
        data, peer = u.recvfrom(4096)
        u.sendto(b"echo:" + data, peer)


def tcp(host, port, msg):
    fam, sa = addr(host, port, socket.SOCK_STREAM)
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sa)
    s.sendall(msg.encode())
    got = b""
    while not got.endswith(msg.encode()):
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    if got != b"echo:" + msg.encode():
        sys.exit(f"tcp {host} {port}: got {got!r}")


def udp(host, port, msg):
    fam, sa = addr(host, port, socket.SOCK_DGRAM)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(2)
    for _ in range(3):
        try:
            s.sendto(msg.encode(), sa)
            got = s.recv(4096)
        except socket.timeout:
            continue
        except OSError:  # no source address yet (a link-local one still tentative)
            time.sleep(1)
            continue
        if got == b"echo:" + msg.encode():
            return
        sys.exit(f"udp {host} {port}: got {got!r}")
    sys.exit(f"udp {host} {port}: no answer in 3 tries")


def raw_recv(group, ifaddr, proto):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, proto)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 socket.inet_aton(group) + socket.inet_aton(ifaddr))
    s.settimeout(10)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        pkt, _ = s.recvfrom(65535)
        ihl = (pkt[0] & 0x0F) * 4
        if pkt[16:20] == socket.inet_aton(group) and pkt[9] == proto:
            print(pkt[ihl:].decode(errors="replace"))
            return
    sys.exit(f"raw-recv {group}: nothing in 10 s")


def raw_send(group, ifaddr, proto, msg):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, proto)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(ifaddr))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, struct.pack("B", 1))
    while True:
        s.sendto(msg.encode(), (group, 0))
        time.sleep(0.2)


def refused(kind, host, port):
    st = socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM
    fam, sa = addr(host, port, st)
    s = socket.socket(fam, st)
    s.settimeout(5)
    try:
        s.connect(sa)
        if kind == "udp":
            s.send(b"anyone?")
            s.recv(4096)
    except ConnectionRefusedError:
        return
    except socket.timeout:
        sys.exit(f"refused {kind} {host} {port}: no answer within 5 s")
    sys.exit(f"refused {kind} {host} {port}: it was not refused")


def main(a):
    cmd = a[0]
    if cmd == "serve":
        serve(int(a[1]))
    elif cmd == "tcp":
        tcp(a[1], int(a[2]), a[3])
    elif cmd == "udp":
        udp(a[1], int(a[2]), a[3])
    elif cmd == "raw-recv":
        raw_recv(a[1], a[2], int(a[3]))
    elif cmd == "raw-send":
        raw_send(a[1], a[2], int(a[3]), a[4])
    elif cmd == "refused":
        refused(a[1], a[2], int(a[3]))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv[1:])
