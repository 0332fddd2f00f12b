#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tests/fuzz/routes_seeds.py: writes the seed corpus of fuzz_routes
# (tests/fuzz/corpus_routes/, in the tree): rtnetlink route messages as the
# kernel and zebra send them, alone and in FPM frames (byte 0: 0 netlink, 1
# FPM). Run it again after changing a seed; the files are its output.
import os, socket, struct, sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus_routes")
os.makedirs(out, exist_ok=True)
RTM_NEWROUTE, RTM_DELROUTE, NLMSG_DONE, NLMSG_ERROR = 24, 25, 3, 2
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_MULTIPATH, RTA_TABLE, RTA_NH_ID = 1, 4, 5, 9, 15, 30

def attr(t, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, t) + payload + b"\0" * ((4 - n % 4) % 4)

def addr(fam, a):
    return socket.inet_pton(fam, a)

def route(typ, fam, dst, plen, gw=None, table=100, proto=4, rtype=1, extra=b"", flags=0):
    body = struct.pack("=BBBBBBBBI", fam, plen, 0, 0, table if table < 256 else 0, proto, 0, rtype, 0)
    body += attr(RTA_DST, addr(fam, dst))
    if gw:
        body += attr(RTA_GATEWAY, addr(fam, gw))
    body += attr(RTA_TABLE, struct.pack("=I", table)) + extra
    return struct.pack("=IHHII", 16 + len(body), typ, flags, 1, 0) + body

def multipath(fam, gws):
    out = b""
    for i, g in enumerate(gws):
        inner = attr(RTA_GATEWAY, addr(fam, g))
        out += struct.pack("=HBBi", 8 + len(inner), 0, i, 2) + inner
    return attr(RTA_MULTIPATH, out)

def fpm(msg):
    return struct.pack("!BBH", 1, 1, 4 + len(msg)) + msg

V4, V6 = socket.AF_INET, socket.AF_INET6
msgs = {
    "add4": route(RTM_NEWROUTE, V4, "10.50.0.0", 16, "10.1.0.2"),
    "add4_self": route(RTM_NEWROUTE, V4, "10.51.0.0", 16, "10.1.0.1"),
    "add4_offlink": route(RTM_NEWROUTE, V4, "10.52.0.0", 16, "10.9.0.1"),
    "add4_martian": route(RTM_NEWROUTE, V4, "127.0.0.0", 8, "10.1.0.2"),
    "add4_default": route(RTM_NEWROUTE, V4, "0.0.0.0", 0, "10.2.0.9"),
    "add4_host": route(RTM_NEWROUTE, V4, "10.53.1.7", 32, "10.2.0.9", proto=186),
    "del4": route(RTM_DELROUTE, V4, "10.50.0.0", 16),
    "add6": route(RTM_NEWROUTE, V6, "2001:db8:50::", 48, "2001:db8:1::2"),
    "del6": route(RTM_DELROUTE, V6, "2001:db8:50::", 48),
    "kernel": route(RTM_NEWROUTE, V4, "10.1.0.0", 24, proto=2),
    "main": route(RTM_NEWROUTE, V4, "10.54.0.0", 16, "10.1.0.2", table=254),
    "bigtable": route(RTM_NEWROUTE, V4, "10.55.0.0", 16, "10.1.0.2", table=100000),
    "blackhole": route(RTM_NEWROUTE, V4, "10.56.0.0", 16, rtype=6),
    "mp4": route(RTM_NEWROUTE, V4, "10.57.0.0", 16, extra=multipath(V4, ["10.1.0.2", "10.2.0.2"])),
    "nhid": route(RTM_NEWROUTE, V4, "10.58.0.0", 16, extra=attr(RTA_NH_ID, struct.pack("=I", 7))),
    "done": struct.pack("=IHHII", 20, NLMSG_DONE, 2, 1, 0) + struct.pack("=i", 0),
    "error": struct.pack("=IHHII", 36, NLMSG_ERROR, 0, 1, 0) + struct.pack("=i", -16) + b"\0" * 16,
    "intr": route(RTM_NEWROUTE, V4, "10.59.0.0", 16, "10.1.0.2", flags=0x10 | 0x2),
}
seeds = {}
for k, m in msgs.items():
    seeds["nl_" + k] = b"\0" + m
    seeds["fpm_" + k] = b"\1" + fpm(m)
seeds["nl_dump"] = b"\0" + msgs["add4"] + msgs["add6"] + msgs["mp4"] + msgs["done"]
seeds["nl_truncated"] = b"\0" + msgs["add4"][:-3]
seeds["fpm_stream"] = b"\1" + fpm(msgs["add4"]) + fpm(msgs["del4"]) + fpm(msgs["add6"]) + fpm(msgs["add4"])[:10]
seeds["fpm_badversion"] = b"\1" + b"\2" + fpm(msgs["add4"])[1:]
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print("%d seeds in %s" % (len(seeds), out))
