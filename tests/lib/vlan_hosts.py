#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tests/lib/vlan_hosts.py: hosts on VLANs of one device, played on a raw
# socket, for tests/integ/vlan.sh on a kernel without 802.1Q devices (no
# `ip link add ... type vlan`: CONFIG_VLAN_8021Q off). The kernel still
# moves a received frame's outer tag beside it (PACKET_AUXDATA); any inner
# tag stays in the frame; what we send leaves as we wrote it.
#
#   vlan_hosts.py serve IFNAME HOST...        answer ARP and ICMP echo for
#                                             each HOST until killed; prints
#                                             "ready" once listening
#   vlan_hosts.py ping IFNAME HOST DST COUNT  resolve HOST's gateway, send
#                                             COUNT echo requests to DST;
#                                             a line per reply: "reply from
#                                             DST ttl=N tags=T"; exit 1 if
#                                             any is missing
#
# HOST is TAGS/ADDRESS/GATEWAY, TAGS "10" (802.1Q) or "100.40" (802.1ad,
# then 802.1Q); its MAC is 02:76:NN + the address's last three bytes.
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.environ.get("RR_PYLIB", os.path.dirname(os.path.abspath(__file__))))
from rrpkt import csum, ip4, ipv4  # noqa: E402

SOL_PACKET, PACKET_AUXDATA = 263, 8
TP_STATUS_VLAN_VALID, TP_STATUS_VLAN_TPID_VALID = 0x10, 0x40
AUX = struct.Struct("IIIHHHH")
VLAN_TPIDS = (0x8100, 0x88A8)
ECHO_ID = 0x7676


def host(spec):
    tags, addr, gw = spec.split("/")
    ids = [int(x) for x in tags.split(".")]
    tpids = [0x8100] if len(ids) == 1 else [0x88A8, 0x8100]
    return {"tags": list(zip(tpids, ids)), "ip": addr, "gw": gw, "mac": bytes([2, 0x76, len(ids)]) + ip4(addr)[1:]}


def tags_str(tags):
    return ".".join("%s%d" % ("s" if tp == 0x88A8 else "", vid) for tp, vid in tags) or "-"


def frame(dst, src, tags, ethertype, payload):
    return dst + src + b"".join(struct.pack("!HH", tp, vid) for tp, vid in tags) + struct.pack("!H", ethertype) + payload


def open_sock(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
    s.bind((ifname, 0))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    return s


def recv(s, deadline):
    """The next frame received (not sent) before deadline: (dst, src, tags, ethertype, payload), or None."""
    while True:
        left = deadline - time.time()
        if left <= 0:
            return None
        s.settimeout(left)
        try:
            data, anc, _, addr = s.recvmsg(65536, socket.CMSG_SPACE(AUX.size))
        except socket.timeout:
            return None
        if addr[2] == socket.PACKET_OUTGOING or len(data) < 14:
            continue
        tags = []
        for lvl, typ, d in anc:
            if lvl == SOL_PACKET and typ == PACKET_AUXDATA and len(d) >= AUX.size:
                st, _, _, _, _, tci, tpid = AUX.unpack_from(d)
                if st & TP_STATUS_VLAN_VALID:
                    tags.append((tpid if st & TP_STATUS_VLAN_TPID_VALID else 0x8100, tci & 0xFFF))
        off = 12
        while len(data) >= off + 6 and struct.unpack_from("!H", data, off)[0] in VLAN_TPIDS:
            tp, tci = struct.unpack_from("!HH", data, off)
            tags.append((tp, tci & 0xFFF))
            off += 4
        return data[:6], data[6:12], tags, struct.unpack_from("!H", data, off)[0], data[off + 2:]


def serve(ifname, hosts):
    s = open_sock(ifname)
    print("ready", flush=True)
    while True:
        r = recv(s, time.time() + 1)
        if not r:
            continue
        dst, src, tags, et, pl = r
        for h in hosts:
            if tags != h["tags"]:
                continue
            if et == 0x0806 and len(pl) >= 28 and struct.unpack_from("!H", pl, 6)[0] == 1 and pl[24:28] == ip4(h["ip"]):
                body = struct.pack("!HHBBH", 1, 0x800, 6, 4, 2) + h["mac"] + ip4(h["ip"]) + pl[8:18]
                s.send(frame(src, h["mac"], h["tags"], 0x0806, body))
            elif et == 0x0800 and len(pl) >= 28 and dst == h["mac"] and pl[9] == 1 and pl[16:20] == ip4(h["ip"]):
                ihl = (pl[0] & 15) * 4
                tot = struct.unpack_from("!H", pl, 2)[0]
                if pl[ihl] != 8 or tot > len(pl):
                    continue
                icmp = bytearray(pl[ihl:tot])
                icmp[0] = 0
                icmp[2:4] = b"\0\0"
                icmp[2:4] = struct.pack("!H", csum(bytes(icmp)))
                s.send(frame(src, h["mac"], h["tags"], 0x0800, ipv4(h["ip"], socket.inet_ntoa(pl[12:16]), 1, bytes(icmp))))


def ping(ifname, h, dst, count):
    s = open_sock(ifname)
    req = struct.pack("!HHBBH", 1, 0x800, 6, 4, 1) + h["mac"] + ip4(h["ip"]) + b"\0" * 6 + ip4(h["gw"])
    gwmac = None
    for _ in range(3):
        s.send(frame(b"\xff" * 6, h["mac"], h["tags"], 0x0806, req))
        deadline = time.time() + 1
        while gwmac is None:
            r = recv(s, deadline)
            if not r:
                break
            d, _, tags, et, pl = r
            if (et == 0x0806 and d == h["mac"] and tags == h["tags"] and len(pl) >= 28 and
                    struct.unpack_from("!H", pl, 6)[0] == 2 and pl[14:18] == ip4(h["gw"])):
                gwmac = pl[8:14]
        if gwmac:
            break
    if not gwmac:
        print("no ARP reply from %s in %s" % (h["gw"], tags_str(h["tags"])))
        return 1
    got = 0
    for seq in range(count):
        icmp = struct.pack("!BBHHH", 8, 0, 0, ECHO_ID, seq) + b"vlan_hosts" * 4
        icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
        s.send(frame(gwmac, h["mac"], h["tags"], 0x0800, ipv4(h["ip"], dst, 1, icmp)))
        deadline = time.time() + 2
        while True:
            r = recv(s, deadline)
            if not r:
                print("no reply %d from %s" % (seq, dst))
                break
            d, _, tags, et, pl = r
            if et != 0x0800 or d != h["mac"] or len(pl) < 28 or pl[9] != 1 or pl[12:16] != ip4(dst):
                continue
            ihl = (pl[0] & 15) * 4
            if pl[ihl] == 0 and struct.unpack_from("!HH", pl, ihl + 4) == (ECHO_ID, seq):
                print("reply from %s ttl=%d tags=%s" % (dst, pl[8], tags_str(tags)), flush=True)
                got += 1
                break
        time.sleep(0.1)
    return 0 if got == count else 1


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], [host(x) for x in sys.argv[3:]])
    elif len(sys.argv) == 6 and sys.argv[1] == "ping":
        sys.exit(ping(sys.argv[2], host(sys.argv[3]), sys.argv[4], int(sys.argv[5])))
    sys.exit("usage: vlan_hosts.py serve IFNAME HOST... | ping IFNAME HOST DST COUNT")


if __name__ == "__main__":
    main()
