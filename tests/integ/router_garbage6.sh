#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_garbage6.sh: 10,000 IPv6 garbage frames from a host into
# the real router (issue 17; router_garbage.sh does IPv4). From namespace A
# an AF_PACKET raw socket writes to A's TAP device (the router's port a),
# ethertype 0x86dd, to the router's MAC or to an IPv6 multicast MAC:
#   - random bytes after a version-6 nibble, random lengths;
#   - headers with garbage in every field: payload lengths that lie, hop
#     limits 0..255, sources and destinations from the interesting sets
#     (unspecified, loopback, multicast of every scope, link-local, the
#     router's own addresses, B's network, random);
#   - chains of extension headers (hop-by-hop, routing of type 0 and others,
#     fragment, destination options) with lengths that run off the frame;
#   - ICMPv6 of every type, Neighbor Discovery among them (solicitations and
#     advertisements for the router's addresses with garbage options, hop
#     limits other than 255, wrong checksums), and echo requests.
# The generator waits for the router to take each 250 frames (the TAP's queue
# never overflows). Afterwards: the router took every frame written (port
# a's rx_pkts), the router process is the same one (no restart, no service
# restarted), no ring counted a bad handle, IPv6 still flows both ways (ping
# -6 A -> B and back) and IPv4 too, and at shutdown every buffer is back in
# the pool.
# RR_GARBAGE_FRAMES (default 10000) and RR_GARBAGE_SEED (default
# RR_TEST_SEED, else random) override.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_garbage6

FRAMES=${RR_GARBAGE_FRAMES:-10000}
SEED=${RR_GARBAGE_SEED:-${RR_TEST_SEED:-$((($$ ^ ${EPOCHSECONDS:-0}) & 32767))}}
echo "seed $SEED (RR_GARBAGE_SEED=$SEED reproduces the frames)"

n=$(($$ % 250 + 1))
P6_A=2001:db8:63:$(printf '%x' "$n")
P6_B=2001:db8:64:$(printf '%x' "$n")
RR_ADDR6_A=$P6_A::1/64 RR_ADDR6_B=$P6_B::1/64
rr_topology
rr_start
rr_hosts_ipv6 "$P6_A" "$P6_B" routes
rr_resolve
ping6_both() {
    local out
    out=$(rr_in "$RR_NS_A" ping -6 -n -c 3 -i 0.2 -W 2 "$P6_B::2" 2>&1) || rr_fail "ping -6 A -> B: $out"
    out=$(rr_in "$RR_NS_B" ping -6 -n -c 3 -i 0.2 -W 2 "$P6_A::2" 2>&1) || rr_fail "ping -6 B -> A: $out"
}
ping6_both
rr_ok "router up, IPv6 both ways: A $P6_A::2 -- [router] -- B $P6_B::2"

rr_status || rr_fail "status"
pid0=${RR_PIDS[router]}
rr_stats || rr_fail "stats"
rx0=$(rr_ctr router.a.rx_pkts)

cat >"$RR_T/garbage6.py" <<'EOF'
import ipaddress, os, random, socket, struct, sys
sys.path.insert(0, os.environ["RR_PYLIB"])
from rrpkt import Pacer, csum

ifname, router_mac, gw6_a, gw6_b, host6_b, frames, seed = sys.argv[1:8]
drain = Pacer(sys.argv[8:]).drain

rnd = random.Random(int(seed))
rmac = bytes.fromhex(router_mac.replace(":", ""))
a6 = lambda s: ipaddress.IPv6Address(s).packed
addrs = [bytes(16), a6("::1"), a6("ff02::1"), a6("ff02::2"), a6("ff05::2"), a6("ff0e::1"), a6("fe80::1"),
         a6("fe80::72:72ff:fe00:1"), a6(gw6_a), a6(gw6_b), a6(host6_b), a6("ff02::1:ff00:1"),
         a6("::ffff:10.0.0.1"), a6("2001:db8::1")]
def addr():
    return rnd.choice(addrs) if rnd.random() < 0.8 else bytes(rnd.getrandbits(8) for _ in range(16))
def icmp6(src, dst, body, good):
    ph = src + dst + struct.pack("!I3xB", len(body), 58)
    c = csum(ph + body[:2] + b"\0\0" + body[4:])
    if not good:
        c ^= 1 + rnd.getrandbits(8)
    return body[:2] + struct.pack("!H", c) + body[4:]
def ext_chain():
    out, nxt = b"", []
    for _ in range(rnd.randrange(0, 4)):
        t = rnd.choice([0, 43, 44, 60])
        if t == 44:
            h = bytes([0, 0]) + struct.pack("!HI", rnd.getrandbits(16), rnd.getrandbits(32))
        elif t == 43:
            n = rnd.randrange(0, 4)
            h = bytes([0, n, rnd.choice([0, 2, 3, 4]), rnd.randrange(0, 4)]) + bytes(4 + 8 * n)
        else:
            n = rnd.randrange(0, 3)
            h = bytes([0, n if rnd.random() < 0.9 else 255]) + bytes(6 + 8 * n)
        nxt.append(t)
        out += h
    return nxt, out
def frame():
    dmac = rmac if rnd.random() < 0.8 else bytes([0x33, 0x33]) + bytes(rnd.getrandbits(8) for _ in range(4))
    eth = dmac + bytes([2, 0, 0, 0, 0, 9]) + b"\x86\xdd"
    r = rnd.random()
    if r < 0.15:  # random bytes after the version nibble
        body = bytes([0x60 | rnd.getrandbits(4)]) + bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 1400)))
        return eth + body
    src, dst = addr(), addr()
    hlim = rnd.choice([0, 1, 2, 64, 255, rnd.getrandbits(8)])
    chain, ext = ext_chain() if rnd.random() < 0.4 else ([], b"")
    if rnd.random() < 0.6:  # ICMPv6: ND, echo, or any type
        t = rnd.choice([128, 133, 134, 135, 136, 137, 1, 2, 3, 4, rnd.getrandbits(8)])
        if t in (135, 136):
            tgt = rnd.choice([a6(gw6_a), a6("fe80::72:72ff:fe00:1"), addr()])
            opts = b"".join(bytes([rnd.choice([1, 2, 3, 5, 0, 99]), rnd.randrange(0, 3)]) + bytes(6)
                            for _ in range(rnd.randrange(0, 3)))
            body = bytes([t, rnd.choice([0, 0, 1])]) + b"\0\0" + bytes([rnd.getrandbits(8), 0, 0, 0]) + tgt + opts
            if rnd.random() < 0.7:
                hlim = 255
        else:
            body = bytes([t, rnd.getrandbits(8) if rnd.random() < 0.3 else 0]) + b"\0\0" + \
                bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(4, 200)))
        payload = icmp6(src, dst, body, rnd.random() < 0.7)
        last = 58
    else:
        last = rnd.choice([6, 17, 59, rnd.getrandbits(8)])
        payload = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 600)))
    # Link the chain: each extension header's first byte names the next.
    ext = bytearray(ext)
    off, types = 0, chain + [last]
    for i, t in enumerate(chain):
        ext[off] = types[i + 1]
        off += 8 if t == 44 else (ext[off + 1] + 1) * 8 if off + 1 < len(ext) else 8
        if off >= len(ext):
            break
    plen = len(ext) + len(payload)
    if rnd.random() < 0.15:
        plen = rnd.choice([0, plen + 1, plen - 1 if plen else 0, 65535, rnd.getrandbits(16)])
    first = types[0]
    hdr = struct.pack("!IHBB", 0x60000000 | rnd.getrandbits(20) if rnd.random() < 0.9 else rnd.getrandbits(32),
                      plen & 0xffff, first, hlim) + src + dst
    return eth + hdr + bytes(ext) + payload

s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
n = 0
for i in range(int(frames)):
    f = frame()[:1514]
    try:
        s.send(f)
        n += 1
    except OSError:
        pass
    if n % 250 == 0:
        drain(n)
drain(n)
print(n)
EOF
sent=$(ip netns exec "$RR_NS_A" env "$RR_PY" "$RR_T/garbage6.py" "$RR_IF_A" "$RR_MAC_A" "$P6_A::1" "$P6_B::1" \
    "$P6_B::2" "$FRAMES" "$SEED" "$RR" stats --json -S "$RR_SOCK") || rr_fail "the generator failed"
rr_stats || rr_fail "stats"
got=$(($(rr_ctr router.a.rx_pkts) - rx0))
[ "$got" -ge "$sent" ] || rr_fail "the router took $got of the $sent frames written"
rr_ok "$sent IPv6 garbage frames written, the router took them all ($got with A's own traffic)"

rr_status || rr_fail "status"
[ "${RR_PIDS[router]}" = "$pid0" ] || rr_fail "the router's pid changed: $pid0 -> ${RR_PIDS[router]}"
rr_no_restarts
for r in rx-a rx-b tx-a tx-b; do
    for c in drop_bad_handle drop_bad_owner drop_bad_frame drop_bad_chain; do
        [ "$(rr_ctr "ring.$r.$c")" = 0 ] || rr_fail "ring $r counted $c = $(rr_ctr "ring.$r.$c")"
    done
done
ping6_both
out=$(rr_in "$RR_NS_A" ping -n -c 3 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B (IPv4) after the garbage: $out"
rr_ok "router pid $pid0 throughout, no restart, no bad handle; IPv6 both ways and IPv4 still flow; drops: $(rr_ctr router.nd_bad) nd_bad, $(rr_ctr router.drop6_bad_payload_length) bad payload lengths, $(rr_ctr router.drop6_routing_header_0) routing type 0"
rr_stop
rr_census_ok
echo "PASS router_garbage6"
