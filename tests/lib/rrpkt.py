# SPDX-License-Identifier: MIT
# tests/lib/rrpkt.py: packet helpers shared by the router tests' Python
# (router.sh exports RR_PYLIB, the directory of this file):
#   csum(bytes)                 the Internet checksum (RFC 1071)
#   mac(str) / ip4(str)         "02:00:..." / "10.0.0.1" to bytes
#   ipv4(src, dst, proto, payload, ttl=64, ident=0, frag=0, tos=0, tot=None)
#                               an IPv4 header (right checksum) + payload
#   arp(op, dmac, sha, spa, tha, tpa)  an Ethernet frame with an ARP body
#   raw(ifname)                 an AF_PACKET raw socket bound to ifname
#   Pacer(stats_cmd)            .drain(sent): wait (at most 5 s) until the
#                               router's port a has taken `sent` frames
import json
import socket
import struct
import subprocess
import time


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac(s):
    return bytes.fromhex(s.replace(":", ""))


def ip4(s):
    return socket.inet_aton(s)


def ipv4(src, dst, proto, payload, ttl=64, ident=0, frag=0, tos=0, tot=None):
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(payload) if tot is None else tot, ident, frag, ttl,
                      proto, 0, ip4(src), ip4(dst))
    return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + payload


def arp(op, dmac, sha, spa, tha, tpa):
    return dmac + sha + b"\x08\x06" + struct.pack("!HHBBH6s4s6s4s", 1, 0x800, 6, 4, op, sha, ip4(spa), tha,
                                                     ip4(tpa))


def raw(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    return s


class Pacer:
    """Paces a generator writing into a TAP: `stats_cmd` is
    `ringrouter stats --json -S SOCK`. drain(sent) waits (at most 5 s) until
    the router has taken every frame written so far, so that the TAP's queue
    never overflows: nothing is lost before the router, and every frame
    written must reach it."""

    def __init__(self, stats_cmd):
        self.cmd = stats_cmd
        self.base = self.rx()

    def rx(self):
        d = json.loads(subprocess.run(self.cmd, check=True, capture_output=True).stdout)
        return next(s for s in d["services"] if s["name"] == "router")["counters"]["a.rx_pkts"]

    def drain(self, sent):
        end = time.monotonic() + 5
        while self.rx() - self.base < sent and time.monotonic() < end:
            time.sleep(0.005)
