#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/fuzz_router.sh: run the libFuzzer target over the router's
# per-packet path (build/bin/fuzz/fuzz_router, tests/fuzz/fuzz_router.c)
# over 120,000 inputs from a seed corpus generated here: an ARP request and reply, pings to
# the router (one frame and a chain), forwardable UDP (resolved, via a
# gateway, and one that waits for ARP and is released by the reply), a first
# and a non-first fragment, packets with IP options to be fragmented, DF set
# and too big, TTL 1, no route, a 4000-byte chain, a GSO TCP chain, a burst
# of one flow. Fails on any crash, sanitizer report (ASan, UBSan, LSan),
# timeout or failed oracle; a crashing input is kept in build/test-logs/.
# Not a namespace test; it lives here because tests/run.sh runs every
# tests/integ/*.sh. Every seed runs first; RR_FUZZ_SECS sets a time
# instead of the count (tests/lib/fuzz_verdict.sh, fuzz_budget): a longer
# search is RR_FUZZ_SECS=600 bash tests/integ/fuzz_router.sh.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/fuzz_verdict.sh
fuzz_budget 120000
BIN=build/bin/fuzz/fuzz_router
KEEP=build/test-logs

if [ ! -x "$BIN" ]; then
    command -v clang >/dev/null || { echo "SKIP: fuzz_router: needs clang (libFuzzer)"; exit 77; }
    echo "FAIL: fuzz_router: $BIN is missing: build with ninja (target fuzz) first"
    exit 1
fi
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

T=$(mktemp -d /tmp/rrfuzz.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
cp "$BIN" "$T/fuzz_router" || exit 1 # a snapshot: a rebuild meanwhile does not touch the run
mkdir -p "$T/seeds" "$T/corpus" "$KEEP"

"$PY" - "$T/seeds" "$PWD/tests/lib" <<'EOF'
import os, struct, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from rrpkt import csum

def ip(a):
    return bytes(int(x) for x in a.split("."))

RMAC = [bytes([2, 0, 0, 0, 0, p]) for p in range(3)]   # the fuzzer's router ports
PEER = [bytes([2, 0, 0, 0, 1, p]) for p in range(3)]
BC = b"\xff" * 6

def eth(port, ethertype, payload, dst=None):
    return (dst or RMAC[port]) + PEER[port] + struct.pack("!H", ethertype) + payload

def ipv4(src, dst, proto, payload, ttl=64, frag=0, opts=b"", ident=0x1234):
    hl = 20 + len(opts)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | hl // 4, 0, hl + len(payload), ident, frag, ttl, proto, 0,
                    ip(src), ip(dst)) + opts
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload

def udp(n, sport=1234, dport=5678):
    return struct.pack("!HHHH", sport, dport, 8 + n, 0) + bytes((i * 7 + 3) & 255 for i in range(n))

def echo(n, ident=1, seq=1):
    body = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + bytes(i & 255 for i in range(n))
    return body[:2] + struct.pack("!H", csum(body)) + body[4:]

def arp(port, op, sha, spa, tha, tpa, dst=None):
    body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, sha, ip(spa), tha, ip(tpa))
    return eth(port, 0x0806, body, dst or BC)

def pkt(frame, port=0, fix=0xC0, vnet=None, layout=0, param=0):
    ctl = port | fix | (layout << 4) | (8 if vnet else 0)
    b = bytes([ctl]) + struct.pack("!H", len(frame))
    if vnet:
        b += struct.pack("!BBHHHH", *vnet)
    if layout in (1, 2):
        b += struct.pack("!H", param)
    return b + frame

def seed(name, pkts, adv=0, tick=False):
    h = (len(pkts) - 1) | (adv << 3) | (0x80 if tick else 0)
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([h]) + b"".join(pkts))

H0 = "10.0.0.5"
seed("arp-request", [pkt(arp(0, 1, PEER[0], H0, b"\0" * 6, "10.0.0.1"))])
seed("arp-gratuitous", [pkt(arp(1, 1, PEER[1], "10.1.0.40", b"\0" * 6, "10.1.0.40"))])
seed("echo-router", [pkt(eth(0, 0x0800, ipv4(H0, "10.0.0.1", 1, echo(56))))])
seed("echo-router-far", [pkt(eth(0, 0x0800, ipv4(H0, "10.2.0.1", 1, echo(56))))])
seed("echo-router-chain", [pkt(eth(0, 0x0800, ipv4(H0, "10.0.0.1", 1, echo(3000))))])
seed("udp-static-neigh", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 17, udp(100))))])
seed("udp-via-gateway", [pkt(eth(0, 0x0800, ipv4(H0, "10.3.9.9", 17, udp(100))))])
seed("udp-tbl8", [pkt(eth(1, 0x0800, ipv4("10.1.0.5", "192.168.1.200", 17, udp(64))), port=1)])
seed("udp-bad-nexthop", [pkt(eth(0, 0x0800, ipv4(H0, "10.99.1.1", 17, udp(10))))])
# Waits for ARP, then the reply (same burst) releases it; then a tick ages things.
seed("udp-arp-release", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.77", 17, udp(200)))),
                         pkt(arp(1, 2, bytes([2, 9, 9, 9, 9, 9]), "10.1.0.77", RMAC[1], "10.1.0.1", RMAC[1]), port=1)])
seed("udp-arp-timeout", [pkt(eth(0, 0x0800, ipv4(H0, "10.2.0.123", 17, udp(50))))], adv=15, tick=True)
seed("frag-first", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 17, udp(600), frag=0x2000)))])
seed("frag-later", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 17, udp(600)[:200], frag=0x0050)))])
rr = bytes([7, 11, 4]) + b"\0" * 8 + b"\x01"        # record route, then a NOP
seed("options-fragment", [pkt(eth(0, 0x0800, ipv4(H0, "10.2.0.9", 17, udp(1000), opts=rr)))])
seed("options-lsrr", [pkt(eth(0, 0x0800, ipv4(H0, "10.2.0.9", 17, udp(900), opts=bytes([0x83, 7, 4]) + ip("10.2.0.9") + b"\x00")))])
seed("df-too-big", [pkt(eth(0, 0x0800, ipv4(H0, "10.2.0.9", 17, udp(1200), frag=0x4000)))])
seed("ttl-1", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 17, udp(30), ttl=1)))])
seed("no-route", [pkt(eth(0, 0x0800, ipv4(H0, "10.250.0.1", 1, echo(56))))])
seed("chain-4000", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 17, udp(4000))))])
seed("chain-split", [pkt(eth(0, 0x0800, ipv4(H0, "10.2.0.9", 17, udp(3000))), layout=1, param=40)])
seed("chain-small-frames", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 17, udp(2500))), layout=2, param=700)])
tcp = struct.pack("!HHIIBBHHH", 40000, 5201, 1, 1, 0x50, 0x18, 65535, 0, 0) + bytes(9000)
seed("gso-tcp", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 6, tcp, frag=0x4000)),
                     vnet=(1, 1, 54, 1448, 34, 16))])
seed("gso-tcp-small-mtu", [pkt(eth(0, 0x0800, ipv4(H0, "10.2.0.9", 6, tcp, frag=0x4000)),
                               vnet=(1, 1, 54, 1448, 34, 16))])
seed("burst-one-flow", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 17, udp(64), ident=i))) for i in range(8)])
seed("burst-mixed", [pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 17, udp(64)))),
                     pkt(eth(1, 0x0800, ipv4("10.1.0.254", H0, 17, udp(64))), port=1),
                     pkt(arp(2, 1, PEER[2], "10.2.0.50", b"\0" * 6, "10.2.0.1"), port=2),
                     pkt(eth(2, 0x0800, ipv4("10.2.0.50", "10.0.0.1", 1, echo(20))), port=2),
                     pkt(eth(0, 0x0800, ipv4(H0, "10.0.0.255", 17, udp(10)))),
                     pkt(eth(0, 0x0800, ipv4(H0, "10.1.0.254", 17, udp(10)), dst=BC))])

# IPv6: the fuzzer's ports have 2001:db8:P::1/64 and fe80::P+1/64.
import ipaddress
def a6(s):
    return ipaddress.IPv6Address(s).packed

def ipv6(src, dst, nxt, payload, hlim=64):
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nxt, hlim, a6(src), a6(dst)) + payload

def icmp6(src, dst, body):
    ph = a6(src) + a6(dst) + struct.pack("!IxxxB", len(body), 58)
    return body[:2] + struct.pack("!H", csum(ph + body[:2] + b"\0\0" + body[4:])) + body[4:]

def echo6(src, dst, n):
    return icmp6(src, dst, struct.pack("!BBHHH", 128, 0, 0, 1, 1) + bytes(i & 255 for i in range(n)))

def ns6(src, dst, target, mac):
    return icmp6(src, dst, struct.pack("!BBHI16sBB6s", 135, 0, 0, 0, a6(target), 1, 1, mac))

def na6(src, dst, target, mac, flags=0x60):
    return icmp6(src, dst, struct.pack("!BBHI16sBB6s", 136, 0, 0, flags << 24, a6(target), 2, 1, mac))

G0, G1 = "2001:db8::5", "2001:db8:1::5"
SN1 = bytes([0x33, 0x33, 0xff, 0, 0, 1])
seed("v6-echo-router", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8::1", 58, echo6(G0, "2001:db8::1", 56))))])
seed("v6-echo-router-ll", [pkt(eth(0, 0x86DD, ipv6("fe80::5", "fe80::1", 58, echo6("fe80::5", "fe80::1", 56))))])
seed("v6-ns-router", [pkt(eth(0, 0x86DD, ipv6(G0, "ff02::1:ff00:1", 58, ns6(G0, "ff02::1:ff00:1", "2001:db8::1", PEER[0]), hlim=255), dst=SN1))])
seed("v6-udp-static", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8:30::9", 17, udp(100))))])
seed("v6-udp-nd-release", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8:2::77", 17, udp(100)))),
                           pkt(eth(2, 0x86DD, ipv6("2001:db8:2::77", "fe80::3", 58, na6("2001:db8:2::77", "fe80::3", "2001:db8:2::77", PEER[2]), hlim=255)), port=2)])
seed("v6-udp-nd-timeout", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8:31::1", 17, udp(50))))], adv=15, tick=True)
seed("v6-hlim-1", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8:30::9", 17, udp(30), hlim=1)))])
seed("v6-no-route", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8:99::1", 58, echo6(G0, "2001:db8:99::1", 20))))])
seed("v6-too-big", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8:2::9", 17, udp(1200))))])
seed("v6-ext-headers", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8:30::9", 0, bytes([60, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0]) + udp(40))))])
seed("v6-rh0", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8:30::9", 43, bytes([17, 2, 0, 1, 0, 0, 0, 0]) + a6("2001:db8:1::9") + udp(40))))])
seed("v6-chain", [pkt(eth(0, 0x86DD, ipv6(G0, "2001:db8:30::9", 17, udp(3000))), layout=1, param=60)])
EOF
[ "$(ls "$T/seeds" | wc -l)" -ge 20 ] || { echo "FAIL: fuzz_router: seed generation failed"; exit 1; }

echo "fuzz_router: $FUZZ_SAID over $(ls "$T/seeds" | wc -l) seeds"
# -max_len: big enough for a 64-frame chain's worth of GSO; -timeout: one
# input taking 10 s is a hang; -rss_limit_mb: ASan's quarantine included.
"$T/fuzz_router" "${FUZZ_LIMITS[@]}" -max_len=20000 -timeout=10 -rss_limit_mb=3072 \
    -print_final_stats=1 -artifact_prefix="$T/" "$T/corpus" "$T/seeds" >"$T/log" 2>&1
rc=$?
fuzz_verdict fuzz_router "$T/log" "$rc" "$T" "$KEEP" "$BIN" "fuzz_router: check failed"
