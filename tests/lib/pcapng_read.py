#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tests/lib/pcapng_read.py FILE: the blocks of a pcapng file as
# `ringrouter capture` writes them, one line each, checked as it reads
# (every block's two lengths agree, a Section Header first, little-endian):
#   shb
#   idb NAME SNAPLEN
#   epb CAPLEN WIRELEN DIR COMMENT   (DIR in/out/-, COMMENT or -)
# Exit 1 on a malformed file.
import struct
import sys


def opts(b):
    out, i = {}, 0
    while i + 4 <= len(b):
        code, ln = struct.unpack_from("<HH", b, i)
        if code == 0:
            break
        out[code] = b[i + 4:i + 4 + ln]
        i += 4 + ((ln + 3) & ~3)
    return out


def main():
    data = open(sys.argv[1], "rb").read()
    i = 0
    first = True
    while i < len(data):
        if i + 12 > len(data):
            sys.exit("truncated block at %d" % i)
        typ, ln = struct.unpack_from("<II", data, i)
        if ln < 12 or ln % 4 or i + ln > len(data) or struct.unpack_from("<I", data, i + ln - 4)[0] != ln:
            sys.exit("bad block length at %d" % i)
        body = data[i + 8:i + ln - 4]
        if first and (typ != 0x0A0D0D0A or struct.unpack_from("<I", body, 0)[0] != 0x1A2B3C4D):
            sys.exit("no section header first")
        first = False
        if typ == 0x0A0D0D0A:
            print("shb")
        elif typ == 1:
            lt, _, snap = struct.unpack_from("<HHI", body, 0)
            o = opts(body[8:])
            print("idb %s %d" % (o.get(2, b"?").decode(), snap))
        elif typ == 6:
            _, _, _, cap, wire = struct.unpack_from("<IIIII", body, 0)
            o = opts(body[20 + ((cap + 3) & ~3):])
            fl = struct.unpack("<I", o[2])[0] & 3 if 2 in o else 0
            print("epb %d %d %s %s" % (cap, wire, {1: "in", 2: "out"}.get(fl, "-"), o.get(1, b"-").decode()))
        i += ln


main()
