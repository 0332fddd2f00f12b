#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_garbage.sh: 10,000 garbage frames from a host into the
# real router. From namespace A, an AF_PACKET raw socket writes to A's TAP
# device (the router's port a):
#   - random frames: random length 1..1514 (the kernel refuses those shorter
#     than an Ethernet header; they are counted, not sent), random bytes;
#   - crafted frames to the router's MAC: IPv4 headers with garbage in every
#     field (some with a right checksum, so they get past it), options,
#     fragments, odd lengths, pings to the router with garbage payloads,
#     malformed ARP;
#   - the same to the broadcast MAC.
# Afterwards: the router's port a received them (its rx counter rose by at
# least half of what was sent), valid traffic still flows both ways, the
# router process is the same one (same pid, no restarts), no ring counted a
# bad handle, and at shutdown every buffer is back in the pool.
# RR_GARBAGE_FRAMES (default 10000) and RR_GARBAGE_SEED (random) override.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_garbage

FRAMES=${RR_GARBAGE_FRAMES:-10000}
SEED=${RR_GARBAGE_SEED:-$((($$ ^ ${EPOCHSECONDS:-0}) & 32767))}
echo "seed $SEED (RR_GARBAGE_SEED=$SEED reproduces the frames)"

rr_topology
rr_start
rr_ok "router up: A $RR_HOST_A -- [router] -- B $RR_HOST_B"

# Valid traffic first: both hosts resolve the router, the router both hosts.
for d in "$RR_NS_A $RR_HOST_B" "$RR_NS_B $RR_HOST_A"; do
    read -r ns dst <<<"$d"
    out=$(rr_in "$ns" ping -n -c 2 -i 0.2 -W 2 "$dst" 2>&1) || rr_fail "ping $dst from $ns before the garbage: $out"
done
mac_a=$(rr_router_mac "$RR_NS_A" "$RR_GW_A")
[ -n "$mac_a" ] || rr_fail "A did not resolve the router's MAC"
host_mac=$(rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/address")

rr_status || rr_fail "status"
pid0=${RR_PIDS[router]}
rr_stats || rr_fail "stats"
rx0=$(rr_ctr router.a.rx_pkts)
drv_rx0=$(rr_ctr driver-a.rx_pkts)

cat >"$RR_T/garbage.py" <<'EOF'
import os, random, socket, struct, sys

ifname, router_mac, host_mac, gw_a, host_a, gw_b, host_b, frames, seed = sys.argv[1:10]
frames, seed = int(frames), int(seed)
rnd = random.Random(seed)
rmac = bytes.fromhex(router_mac.replace(":", ""))
hmac = bytes.fromhex(host_mac.replace(":", ""))
bcast = b"\xff" * 6
ip4 = lambda s: socket.inet_aton(s)
net_a = gw_a.rsplit(".", 1)[0]

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF

def rbytes(n):
    return rnd.getrandbits(8 * n).to_bytes(n, "big") if n > 0 else b""

def addr():
    # Addresses the router may act on; none leaves the two namespaces.
    return rnd.choice([gw_a, gw_b, host_a, host_b, "10.250.0.1", "255.255.255.255", "224.0.0.1",
                       "127.0.0.1", "0.0.0.0", "240.0.0.1", net_a + ".255", net_a + ".0"]
                      + [socket.inet_ntoa(rbytes(4))] * 3)

def ip_frame(dmac):
    ihl = rnd.choice([5, 5, 5, 6, 15, rnd.randrange(16)])
    opts = rbytes(max(0, ihl - 5) * 4)
    if opts and rnd.random() < 0.5:  # options that look like options: lengths 0, 1, 2, huge
        opts = bytes([rnd.choice([0, 1, 7, 0x44, 0x83, 0x89, 0x94]), rnd.choice([0, 1, 2, 3, 39, 255])]) + opts[2:]
    payload = rbytes(rnd.choice([0, 1, 7, 8, 28, rnd.randrange(1481)]))
    hl = 20 + len(opts)
    tot = rnd.choice([hl + len(payload)] * 4 + [0, 19, hl - 1, hl + len(payload) + 1, 65535, rnd.randrange(65536)])
    ver_ihl = rnd.choice([0x40 | (ihl & 15)] * 6 + [rnd.randrange(256)])
    frag = rnd.choice([0, 0, 0x4000, 0x2000, 0x2001, 0x1FFF, rnd.randrange(65536)])
    ttl = rnd.choice([0, 1, 2, 64, 255, rnd.randrange(256)])
    proto = rnd.choice([1, 1, 6, 17, rnd.randrange(256)])
    src = rnd.choice([host_a, host_a, addr()])
    hdr = struct.pack("!BBHHHBBH4s4s", ver_ihl, rnd.randrange(256), tot & 0xFFFF, rnd.randrange(65536),
                      frag, ttl, proto, 0, ip4(src), ip4(addr())) + opts
    if proto == 1 and payload and rnd.random() < 0.5:  # an ICMP echo request, sometimes with a right checksum
        body = bytearray(b"\x08\x00\x00\x00" + rbytes(4) + payload[8:])
        if rnd.random() < 0.7:
            struct.pack_into("!H", body, 2, csum(bytes(body)))
        payload = bytes(body)
    if rnd.random() < 0.7:  # a right header checksum, so the rest gets looked at
        hdr = hdr[:10] + struct.pack("!H", csum(hdr[:hl] if len(hdr) >= hl else hdr)) + hdr[12:]
    return dmac + hmac + b"\x08\x00" + hdr + payload

def arp_frame(dmac):
    # Never claims to be a real host (it would poison the router's entry).
    spa = rnd.choice(["0.0.0.0", net_a + ".%d" % rnd.randrange(100, 132), socket.inet_ntoa(rbytes(4))])
    body = struct.pack("!HHBBH6s4s6s4s", rnd.choice([1, 1, 6, rnd.randrange(65536)]),
                       rnd.choice([0x800, 0x800, 0x86DD]), rnd.choice([6, 6, 0, 255]), rnd.choice([4, 4, 16]),
                       rnd.choice([1, 2, 3, 0, rnd.randrange(65536)]), rnd.choice([hmac, rbytes(6), bcast]),
                       ip4(spa), rbytes(6), ip4(rnd.choice([gw_a, gw_b, spa, host_b])))
    return dmac + hmac + b"\x08\x06" + body[:rnd.choice([len(body), rnd.randrange(len(body) + 1)])] + rbytes(rnd.randrange(20))

s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
sent = refused = 0
for i in range(frames):
    r = rnd.random()
    if r < 0.4:
        f = rbytes(rnd.randint(1, 1514))
    elif r < 0.85:
        f = ip_frame(rmac if rnd.random() < 0.85 else bcast)
    else:
        f = arp_frame(rnd.choice([rmac, bcast]))
    f = f[:1514]
    try:
        s.send(f)
        sent += 1
    except OSError:
        refused += 1  # shorter than an Ethernet header, or the device queue is full
print(sent, refused)
EOF

read -r sent refused < <(rr_in "$RR_NS_A" "$RR_PY" "$RR_T/garbage.py" "$RR_IF_A" "$mac_a" "$host_mac" \
    "$RR_GW_A" "$RR_HOST_A" "$RR_GW_B" "$RR_HOST_B" "$FRAMES" "$SEED") || rr_fail "the garbage generator failed"
[ -n "${sent:-}" ] || rr_fail "the garbage generator printed nothing"
rr_ok "garbage: $sent frames written to $RR_IF_A, $refused refused by the kernel"

# Wait (bounded) until the router's rx count stops moving, then judge.
last=-1
settled() {
    rr_stats || return 1
    local now
    now=$(rr_ctr router.a.rx_pkts)
    [ "$now" = "$last" ] && return 0
    last=$now
    rr_msleep 200
    return 1
}
rr_wait 20 settled || rr_fail "the router's port a kept receiving for 20 s"
rx1=$(rr_ctr router.a.rx_pkts)
drv_rx1=$(rr_ctr driver-a.rx_pkts)
got=$((rx1 - rx0))
[ $((got * 2)) -ge "$sent" ] || rr_fail "the router received $got of $sent frames (driver-a rx $((drv_rx1 - drv_rx0)))"
summary=$("$RR" stats -S "$RR_SOCK" | awk '/^router /{on=1; next} /^[a-z].*\(/{on=0} on && /drop|arp|icmp|local|forwarded/ { printf "%s %s, ", $1, $2 }')
rr_ok "router port a received $got frames (driver-a $((drv_rx1 - drv_rx0))): ${summary%, }"

# Still the same router, and valid traffic still flows.
rr_no_restarts
[ "${RR_PIDS[router]}" = "$pid0" ] || rr_fail "the router's pid changed: $pid0 -> ${RR_PIDS[router]}"
for d in "$RR_NS_A $RR_HOST_B" "$RR_NS_B $RR_HOST_A" "$RR_NS_A $RR_GW_A"; do
    read -r ns dst <<<"$d"
    out=$(rr_in "$ns" ping -n -c 3 -i 0.2 -W 2 "$dst" 2>&1) || rr_fail "ping $dst from $ns after the garbage: $out"
    grep -q " 3 received" <<<"$out" || rr_fail "ping $dst from $ns after the garbage lost replies: $out"
done
rr_ok "after the garbage: ping A -> B, B -> A, A -> router ok; router pid $pid0 unchanged, no restarts"
rr_stats || rr_fail "stats"
bad=()
for c in "${RR_MALFORMED[@]}"; do
    case $c in ring.* | pool.*) bad+=("$c") ;; esac
done
rr_zero "${bad[@]}"
rr_ok "no ring counted a bad handle, owner, frame or chain; pool free_bad 0"

rr_stop
rr_census_ok
echo "PASS router_garbage: $sent frames sent, $got received by the router, pid $pid0 throughout"
