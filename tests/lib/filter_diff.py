#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/lib/filter_diff.py: the traffic and the records of
tests/integ/filter_diff.sh, the differential test of rr-filter against
nftables. Each client prints one outcome line "NAME answered|none|refused";
the sniffer records what reaches a host, so that both routers' verdicts
can be compared packet for packet:

  sniff IFNAME OUT            every IPv4 or IPv6 TCP, UDP or ICMP packet
                              that arrives on IFNAME (not the host's own),
                              one line each: "proto src sport dst dport
                              kind", kind a TCP segment's class (S, SA, R,
                              X for the out-of-window marker, . the rest),
                              or an ICMP error's type/code and the tuple
                              it quotes (ICMPv6: "icmp6", neighbour
                              discovery and MLD left out); until SIGTERM
  tcp NAME SRC SPORT DST DPORT [oow]
                              connect from SRC:SPORT, send, read the echo
                              (3 s). oow: after the handshake, first a raw
                              segment of the same connection half the
                              sequence space away, payload "OOW!"
  udp NAME SRC SPORT DST DPORT
                              one datagram, its echo awaited (3 s); refused
                              when an ICMP port unreachable came back
  raw SRC SPORT DST DPORT FLAGS
                              one bare TCP segment (flags S, A, R) that no
                              connection of SRC's owns
  scan SRC SPORT0 DST PORT... a SYN and a UDP datagram to each PORT, from
                              SPORT0, SPORT0+1, ..., by raw sockets: no
                              socket of SRC's owns those ports
  icmperr SRC DST QSRC QSPORT QDST QDPORT
                              a port unreachable quoting a UDP packet
                              QSRC:QSPORT -> QDST:QDPORT that nobody sent
Addresses with a ':' are IPv6: the same traffic, over ICMPv6.
"""
import os
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rrpkt import csum, ip4, ipv4  # noqa: E402  tests/lib/rrpkt.py

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def l4_tuple(ip):
    """(proto, src, sport, dst, dport, rest) of an IPv4 or IPv6 header and
    what follows (IPv6: no extension headers)."""
    if ip[0] >> 4 == 6:
        proto = ip[6]
        src = socket.inet_ntop(socket.AF_INET6, ip[8:24])
        dst = socket.inet_ntop(socket.AF_INET6, ip[24:40])
        l4 = ip[40:]
    else:
        ihl = (ip[0] & 15) * 4
        proto = ip[9]
        src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        l4 = ip[ihl:]
    if proto in (6, 17) and len(l4) >= 4:
        sp, dp = struct.unpack("!HH", l4[:4])
        return proto, src, sp, dst, dp, l4
    return proto, src, 0, dst, 0, l4


def describe(ip):
    proto, src, sp, dst, dp, l4 = l4_tuple(ip)
    if proto == 6 and len(l4) >= 20:
        fl = l4[13]
        pay = l4[(l4[12] >> 4) * 4:]
        kind = "R" if fl & 4 else "SA" if fl & 0x12 == 0x12 else "S" if fl & 2 else "X" if pay.startswith(b"OOW!") else "."
        return "tcp %s %d %s %d %s" % (src, sp, dst, dp, kind)
    if proto == 17:
        return "udp %s %d %s %d ." % (src, sp, dst, dp)
    if proto == 1 and len(l4) >= 8:
        t, c = l4[0], l4[1]
        if t in (3, 11, 12) and len(l4) >= 28:
            q = l4_tuple(l4[8:])
            return "icmp %s 0 %s 0 err%d/%d[%d %s:%d>%s:%d]" % (src, dst, t, c, q[0], q[1], q[2], q[3], q[4])
        return "icmp %s 0 %s 0 type%d" % (src, dst, t)
    if proto == 58 and len(l4) >= 8:
        t, c = l4[0], l4[1]
        if t < 128 and len(l4) >= 48:
            q = l4_tuple(l4[8:])
            return "icmp6 %s 0 %s 0 err%d/%d[%d %s:%d>%s:%d]" % (src, dst, t, c, q[0], q[1], q[2], q[3], q[4])
        if t in (128, 129):  # not neighbour discovery, MLD, router adverts: the routers' own
            return "icmp6 %s 0 %s 0 type%d" % (src, dst, t)
    return None


def sniff(ifname, out):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(out, "a", buffering=1) as f:
        f.write("ready\n")
        while True:
            fr, addr = s.recvfrom(65536)
            if addr[2] == PACKET_OUTGOING or len(fr) < (34 if fr[12:14] == b"\x08\x00" else 54) or \
                    fr[12:14] not in (b"\x08\x00", b"\x86\xdd"):
                continue
            d = describe(fr[14:])
            if d:
                f.write(d + "\n")


def fam(a):
    return socket.AF_INET6 if ":" in a else socket.AF_INET


def pseudo(src, dst, proto, n):
    if fam(src) == socket.AF_INET6:
        return (socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) +
                struct.pack("!I3xB", n, proto))
    return ip4(src) + ip4(dst) + struct.pack("!BBH", 0, proto, n)


def tcp_seg(src, sp, dst, dp, seq, ack, flags, pay=b""):
    hdr = struct.pack("!HHIIBBHHH", sp, dp, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0) + pay
    return hdr[:16] + struct.pack("!H", csum(pseudo(src, dst, 6, len(hdr)) + hdr)) + hdr[18:]


def udp_dgram(src, sp, dst, dp, pay):
    hdr = struct.pack("!HHHH", sp, dp, 8 + len(pay), 0) + pay
    return hdr[:6] + struct.pack("!H", csum(pseudo(src, dst, 17, len(hdr)) + hdr) or 0xFFFF) + hdr[8:]


def raw_send(src, dst, proto, body):
    """IPv6: the kernel writes the header, and sums only ICMPv6's checksum."""
    r = socket.socket(fam(src), socket.SOCK_RAW, proto)
    r.bind((src, 0))
    r.sendto(body, (dst, 0))
    r.close()


def handshake_seqs(cap, sport):
    """The SYN's and the SYN/ACK's sequence numbers, from a capture socket
    opened before the connect."""
    syn = synack = None
    cap.settimeout(1)
    end = time.monotonic() + 2
    while (syn is None or synack is None) and time.monotonic() < end:
        try:
            fr = cap.recv(65536)
        except socket.timeout:
            break
        if len(fr) < 54 or fr[12:14] not in (b"\x08\x00", b"\x86\xdd"):
            continue
        proto, _, _, _, _, l4 = l4_tuple(fr[14:])
        if proto != 6 or len(l4) < 20:
            continue
        sp, dp, seq = struct.unpack("!HHI", l4[:8])
        fl = l4[13]
        if sp == sport and fl & 0x12 == 0x02:
            syn = seq
        elif dp == sport and fl & 0x12 == 0x12:
            synack = seq
    return syn, synack


def oow_marker(cap, src, sport, dst, dport):
    """The segment half the sequence space ahead of the connection's."""
    syn, synack = handshake_seqs(cap, sport)
    if syn is None or synack is None:
        return False
    raw_send(src, dst, socket.IPPROTO_TCP,
             tcp_seg(src, sport, dst, dport, syn + 1 + (1 << 31), synack + 1, 0x18, b"OOW!"))
    time.sleep(0.2)  # the marker first, on its own
    return True


def client(name, kind, src, sport, dst, dport, oow=False):
    s = socket.socket(fam(src), socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((src, sport))
    s.settimeout(3)
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)) if oow else None
    res = "answered"
    try:
        s.connect((dst, dport))
        if oow and not oow_marker(cap, src, sport, dst, dport):
            print("%s: no handshake captured" % name, file=sys.stderr)
            return 1
        s.sendall(b"hello")
        if s.recv(16) != b"hello":
            res = "refused"
    except socket.timeout:
        res = "none"
    except OSError:  # reset, or (UDP) a port unreachable
        res = "refused"
    # One write(2) of the whole line: the clients run at once, appending
    # to one file, and print() may split a line across writes.
    os.write(1, ("%s %s\n" % (name, res)).encode())
    return 0


def raw(src, sport, dst, dport, flags):
    f = {"S": 0x02, "A": 0x10, "R": 0x04}[flags]
    raw_send(src, dst, socket.IPPROTO_TCP, tcp_seg(src, sport, dst, dport, 777777, 0 if flags == "S" else 4242, f))
    return 0


def scan(src, sport0, dst, ports):
    for i, p in enumerate(ports):
        raw_send(src, dst, socket.IPPROTO_TCP, tcp_seg(src, sport0 + i, dst, p, 1000 + i, 0, 0x02))
        # Raw, so that no socket owns the port: an answer always meets a
        # port unreachable, whatever the timing
        raw_send(src, dst, socket.IPPROTO_UDP, udp_dgram(src, sport0 + i, dst, p, b"scan"))
    return 0


def icmperr(src, dst, qsrc, qsport, qdst, qdport):
    udph = struct.pack("!HHHH", qsport, qdport, 12, 0) + b"quot"
    if fam(src) == socket.AF_INET6:  # the kernel sums ICMPv6
        inner = (struct.pack("!IHBB", 6 << 28, len(udph), 17, 64) + socket.inet_pton(socket.AF_INET6, qsrc) +
                 socket.inet_pton(socket.AF_INET6, qdst) + udph)
        raw_send(src, dst, socket.IPPROTO_ICMPV6, struct.pack("!BBHI", 1, 4, 0, 0) + inner)
        return 0
    inner = ipv4(qsrc, qdst, 17, udph)
    body = struct.pack("!BBHI", 3, 3, 0, 0) + inner
    body = body[:2] + struct.pack("!H", csum(body)) + body[4:]
    raw_send(src, dst, socket.IPPROTO_ICMP, body)
    return 0


def main(a):
    cmd = a[0]
    if cmd == "sniff":
        sniff(a[1], a[2])
    elif cmd in ("tcp", "udp"):
        return client(a[1], cmd, a[2], int(a[3]), a[4], int(a[5]), len(a) > 6 and a[6] == "oow")
    elif cmd == "raw":
        return raw(a[1], int(a[2]), a[3], int(a[4]), a[5])
    elif cmd == "scan":
        return scan(a[1], int(a[2]), a[3], [int(p) for p in a[4:]])
    elif cmd == "icmperr":
        return icmperr(a[1], a[2], a[3], int(a[4]), a[5], int(a[6]))
    return 100


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
