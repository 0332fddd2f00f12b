#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/fuzz_filter.sh: run the two libFuzzer targets over rr-filter
# (issue 47's fuzzing): the rule language (build/bin/fuzz/fuzz_filter_rules,
# tests/fuzz/fuzz_filter_rules.c: any input compiles or is refused naming
# its line, and a compiled ruleset runs over packets at every hook) and the
# per-packet path (build/bin/fuzz/fuzz_filter_pkt, tests/fuzz/fuzz_filter_pkt.c:
# every hook, NAT, rejects, a table that fills up, and after every input the
# table must still pass the adoption check). They run 600,000 and 300,000
# inputs (RR_FUZZ_SECS: a time instead; fuzz_budget) from seeds written
# here: rulesets in the language docs/filter.md describes, and TCP, UDP,
# ICMP and IPv6 packets at each hook. Fails on any crash,
# sanitizer report, timeout or failed oracle (an abort); a crashing input is
# kept in build/test-logs/. Not a namespace test.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/fuzz_verdict.sh
KEEP=build/test-logs
for b in fuzz_filter_rules fuzz_filter_pkt; do
    if [ ! -x "build/bin/fuzz/$b" ]; then
        command -v clang >/dev/null || { echo "SKIP: fuzz_filter: needs clang (libFuzzer)"; exit 77; }
        echo "FAIL: fuzz_filter: build/bin/fuzz/$b is missing: build with ninja (target fuzz) first"
        exit 1
    fi
done
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
T=$(mktemp -d /tmp/rrfuzzflt.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/rules" "$T/pkt" "$KEEP"
cp build/bin/fuzz/fuzz_filter_rules build/bin/fuzz/fuzz_filter_pkt "$T/" || exit 1

"$PY" - "$T" "$PWD/tests/lib" <<'EOF'
import os, struct, sys
out, lib = sys.argv[1], sys.argv[2]
sys.path.insert(0, lib)
from rrpkt import csum
rules = [
    "chain forward {\n  policy drop\n  ct state established,related accept\n  ct state invalid drop\n"
    "  tcp dport { 22, 80, 443 } ct state new accept\n  udp dport 53 accept\n}\n",
    "set bl { type ipv4_addr; flags interval; elements = { 192.0.2.0/24, 198.51.100.0/24 } }\n"
    "chain input {\n  policy drop\n  ip saddr @bl drop\n  icmp type echo-request limit rate 5/second accept\n"
    "  tcp dport 23 reject with tcp reset\n  udp dport 9 reject\n}\n",
    "chain prerouting {\n  iif wan tcp dport 8080 dnat to 10.0.0.10:80\n}\n"
    "chain postrouting {\n  oif wan masquerade\n}\n",
    "chain forward {\n  iif lan oif wan tcp flags & (syn|rst) == syn counter accept\n"
    "  ip6 saddr fd00::/8 icmpv6 type echo-request accept\n  tcp dport 1000-2000 drop\n}\n",
    "chain forward {\n  policy accept\n  ip daddr 10.1.0.0/16 udp sport 1-1023 drop\n}\n",
]
for i, r in enumerate(rules):
    open(os.path.join(out, "rules", f"seed{i}"), "w").write(r)

def ip(a):
    return bytes(int(x) for x in a.split("."))
def v4(src, dst, proto, payload, ttl=64):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, ttl, proto, 0, ip(src), ip(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload
def v6(src_last, dst_last, nh, payload):
    s = bytes([0xfd] + [0] * 14 + [src_last]); d = bytes([0x20, 0x01] + [0] * 13 + [dst_last])
    return struct.pack("!IHBB", 0x60000000, len(payload), nh, 64) + s + d + payload
def tcp(sp, dp, flags, seq=1000, ack=0):
    return struct.pack("!HHIIBBHHH", sp, dp, seq, ack, 0x50, flags, 65535, 0, 0)
def udp(sp, dp, n=8):
    return struct.pack("!HHHH", sp, dp, 8 + n, 0) + bytes(n)
def icmp(t, c=0, body=b"\0" * 8):
    return struct.pack("!BBH", t, c, 0) + body
def rec(flags, pkt):
    return bytes([flags, len(pkt) & 255]) + pkt
LAN_TO_WAN, WAN_TO_LAN, INPUT, V6 = 0, 1, 4, 8
seeds = [
    [rec(LAN_TO_WAN, v4("10.0.0.5", "198.18.1.1", 6, tcp(40000, 443, 0x02))),
     rec(WAN_TO_LAN, v4("198.18.1.1", "203.0.113.1", 6, tcp(443, 40000, 0x12, 5000, 1001))),
     rec(LAN_TO_WAN, v4("10.0.0.5", "198.18.1.1", 6, tcp(40000, 443, 0x10, 1001, 5001)))],
    [rec(LAN_TO_WAN, v4("10.0.0.6", "192.0.2.9", 17, udp(5000, 53))),
     rec(WAN_TO_LAN, v4("192.0.2.9", "203.0.113.1", 17, udp(53, 5000)))],
    [rec(WAN_TO_LAN | INPUT, v4("198.18.0.7", "203.0.113.1", 1, icmp(8))),
     rec(WAN_TO_LAN | INPUT, v4("198.18.0.7", "203.0.113.1", 6, tcp(1234, 23, 0x02))),
     rec(WAN_TO_LAN | INPUT, v4("198.18.0.7", "203.0.113.1", 17, udp(1234, 9)))],
    [rec(WAN_TO_LAN, v4("198.18.0.8", "203.0.113.1", 6, tcp(5555, 8080, 0x02)))],
    [rec(WAN_TO_LAN, v4("198.18.0.9", "203.0.113.1", 1,
                        icmp(3, 3, b"\0" * 4 + v4("203.0.113.1", "198.18.0.9", 17, udp(2000, 33434)))))],
    [rec(LAN_TO_WAN | V6, v6(5, 9, 6, tcp(40001, 22, 0x02))),
     rec(WAN_TO_LAN | V6 | INPUT, v6(9, 1, 58, icmp(128)))],
]
for i, s in enumerate(seeds):
    open(os.path.join(out, "pkt", f"seed{i}"), "wb").write(bytes([3]) + b"".join(s))
EOF
[ "$(ls "$T/rules" | wc -l)" -ge 5 ] && [ "$(ls "$T/pkt" | wc -l)" -ge 6 ] || { echo "FAIL: fuzz_filter: the seeds were not written"; exit 1; }

rc_all=0
for b in fuzz_filter_rules:rules:600000 fuzz_filter_pkt:pkt:300000; do
    IFS=: read -r name dir runs <<<"$b"
    dir=$T/$dir
    fuzz_budget "$runs"
    echo "$name: $FUZZ_SAID over $(ls "$dir" | wc -l) seeds"
    mkdir -p "$T/art-$name"
    "$T/$name" "${FUZZ_LIMITS[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=3072 \
        -print_final_stats=1 -artifact_prefix="$T/art-$name/" "$dir" >"$T/$name.log" 2>&1
    rc=$?
    fuzz_verdict "$name" "$T/$name.log" "$rc" "$T/art-$name" "$KEEP" "build/bin/fuzz/$name" "$name: " || rc_all=1
done
exit $rc_all
