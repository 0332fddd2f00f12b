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
# Every 10th frame is instead a valid UDP datagram A -> B (TTL 64, a marker
# and its sequence number in the payload). A raw AF_PACKET sniffer on B's
# side (python3; tcpdump may be missing) checks every frame that reaches B:
# from the router's MAC; ARP only from the router's address on port b; IPv4
# only to B's MAC, with a valid header checksum, and either one of the valid
# datagrams with TTL 63 (each exactly once, every one of them), or a garbage
# packet the generator addressed to B and the router may route (the same
# header with TTL one less: the generator records them), or an ICMP message
# with a valid ICMP checksum from the router's own address, or from A's
# kernel (TTL 63: it answers garbage the router delivered to A that claimed
# to come from B).
# The generator waits for the router to take each 250 frames before the
# next (so the TAP's queue never overflows). Afterwards: the router's port a
# received every frame written (none lost), the sniffer saw exactly the frames the router
# sent out of port b (b.tx_pkts), every frame the router received is
# accounted for (rx_arp + forwarded + local_echo + pending_arp + the sum of
# the drop_* counters, see below) and the drops hold at least half the garbage; valid
# traffic still flows both ways, the router process is the same one (same
# pid, no restarts), no ring counted a bad handle, and at shutdown every
# buffer is back in the pool.
# RR_GARBAGE_FRAMES (default 10000) and RR_GARBAGE_SEED (default
# RR_TEST_SEED, else random) override.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_garbage

FRAMES=${RR_GARBAGE_FRAMES:-10000}
SEED=${RR_GARBAGE_SEED:-${RR_TEST_SEED:-$((($$ ^ ${EPOCHSECONDS:-0}) & 32767))}}
echo "seed $SEED (RR_GARBAGE_SEED=$SEED reproduces the frames)"

rr_topology
rr_start
rr_ok "router up: A $RR_HOST_A -- [router] -- B $RR_HOST_B"

# Valid traffic first: both hosts resolve the router, the router both hosts.
rr_resolve
mac_a=$RR_MAC_A host_mac=$RR_HMAC_A

rr_status || rr_fail "status"
pid0=${RR_PIDS[router]}
rr_stats || rr_fail "stats"
rx0=$(rr_ctr router.a.rx_pkts)
drv_rx0=$(rr_ctr driver-a.rx_pkts)

cat >"$RR_T/garbage.py" <<'EOF'
import os, random, socket, struct, sys
sys.path.insert(0, os.environ["RR_PYLIB"])
from rrpkt import Pacer, csum, ipv4

ifname, router_mac, host_mac, gw_a, host_a, gw_b, host_b, frames, seed, expect = sys.argv[1:11]
drain = Pacer(sys.argv[11:]).drain  # `ringrouter stats --json -S SOCK`: the pace

frames, seed = int(frames), int(seed)
rnd = random.Random(seed)
rmac = bytes.fromhex(router_mac.replace(":", ""))
hmac = bytes.fromhex(host_mac.replace(":", ""))
bcast = b"\xff" * 6
ip4 = lambda s: socket.inet_aton(s)
net_a = gw_a.rsplit(".", 1)[0]

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
    if hdr[16:20] == ip4(host_b):  # the router may forward it to B: record it
        key = bytearray(hdr[:20])
        key[8] = key[10] = key[11] = 0
        rec.write("%s %d\n" % (bytes(key).hex(), ttl))
    return dmac + hmac + b"\x08\x00" + hdr + payload

def arp_frame(dmac):
    # Never claims to be a real host (it would poison the router's entry).
    spa = rnd.choice(["0.0.0.0", net_a + ".%d" % rnd.randrange(100, 132), socket.inet_ntoa(rbytes(4))])
    body = struct.pack("!HHBBH6s4s6s4s", rnd.choice([1, 1, 6, rnd.randrange(65536)]),
                       rnd.choice([0x800, 0x800, 0x86DD]), rnd.choice([6, 6, 0, 255]), rnd.choice([4, 4, 16]),
                       rnd.choice([1, 2, 3, 0, rnd.randrange(65536)]), rnd.choice([hmac, rbytes(6), bcast]),
                       ip4(spa), rbytes(6), ip4(rnd.choice([gw_a, gw_b, spa, host_b])))
    return dmac + hmac + b"\x08\x06" + body[:rnd.choice([len(body), rnd.randrange(len(body) + 1)])] + rbytes(rnd.randrange(20))

rec = open(expect, "w")
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
sent = refused = valid = 0
for i in range(frames):
    if i % 250 == 249:
        drain(sent + valid)
    r = rnd.random()
    if i % 10 == 9:  # a valid datagram A -> B, numbered
        udp = struct.pack("!HHHH", 40000, 9, 8 + 16, 0) + b"rr-valid%08d" % valid
        try:
            s.send(rmac + hmac + b"\x08\x00" + ipv4(host_a, host_b, 17, udp, ttl=64, ident=valid))
            valid += 1
        except OSError:
            refused += 1
        continue
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
rec.close()
print(sent, refused, valid)
EOF

# The sniffer on B's side of port b: every frame the router sends there.
cat >"$RR_T/sniff.py" <<'EOF'
import os, signal, socket, struct, sys
sys.path.insert(0, os.environ["RR_PYLIB"])
from rrpkt import csum, ip4, mac

ifname, router_mac, host_mac, gw_a, gw_b, host_a, host_b, expect, ready = sys.argv[1:10]
rmac, hmac = mac(router_mac), mac(host_mac)
router_ips = {ip4(gw_a), ip4(gw_b)}
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE: lose nothing
s.bind((ifname, 0))
s.settimeout(0.1)
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
open(ready, "w").write("ready\n")
frames = []
while not stop:
    try:
        f, a = s.recvfrom(65536)
    except (socket.timeout, InterruptedError):
        continue
    if a[2] != socket.PACKET_OUTGOING:
        frames.append(f)
while True:  # what arrived before the signal
    try:
        f, a = s.recvfrom(65536, socket.MSG_DONTWAIT)
    except (BlockingIOError, socket.timeout):
        break
    if a[2] != socket.PACKET_OUTGOING:
        frames.append(f)

allowed = {}
for line in open(expect):
    k, t = line.split()
    allowed.setdefault(bytes.fromhex(k), set()).add(int(t))
bad = []
valid = {}
n_ip = n_arp = n_fwd_garbage = n_icmp = n_icmp_a = 0
for f in frames:
    why = None
    et = f[12:14]
    if f[6:12] != rmac:
        why = "source MAC %s is not the router's" % f[6:12].hex()
    elif et == b"\x08\x06":
        n_arp += 1
        if len(f) < 42 or f[28:32] != ip4(gw_b):
            why = "ARP not from the router's address %s" % gw_b
    elif et != b"\x08\x00":
        why = "ethertype %s" % et.hex()
    elif f[0:6] != hmac:
        why = "IPv4 to MAC %s, not B's" % f[0:6].hex()
    else:
        n_ip += 1
        ip = f[14:]
        ihl = (ip[0] & 15) * 4
        if len(ip) < 20 or ip[0] >> 4 != 4 or ihl < 20 or len(ip) < ihl:
            why = "not an IPv4 header"
        elif csum(ip[:ihl]) != 0:
            why = "bad IPv4 header checksum"
        else:
            key = bytearray(ip[:20])
            ttl = key[8]
            key[8] = key[10] = key[11] = 0
            tot = struct.unpack("!H", ip[2:4])[0]
            icmp_ok = ip[9] == 1 and tot <= len(ip) and csum(ip[ihl:tot]) == 0
            if ttl + 1 in allowed.get(bytes(key), ()):
                n_fwd_garbage += 1  # garbage addressed to B, routable: forwarded intact
            elif (ip[9] == 17 and ip[12:16] == ip4(host_a) and ip[16:20] == ip4(host_b)
                  and ip[ihl + 8:ihl + 16] == b"rr-valid"):
                seq = int(ip[ihl + 16:ihl + 24])
                valid[seq] = valid.get(seq, 0) + 1
                if ttl != 63:
                    why = "valid datagram %d with TTL %d, not 63" % (seq, ttl)
            elif ip[12:16] in router_ips:
                n_icmp += 1  # the router's own ICMP (an error or an echo reply) to a garbage source B
                if not icmp_ok:
                    why = "from the router's address, neither forwarded nor a valid ICMP message"
            elif ip[12:16] == ip4(host_a) and icmp_ok and ttl == 63:
                n_icmp_a += 1  # A's kernel answering garbage the router delivered to A with B's address as source
            else:
                why = "not a packet any generator sent to B (with TTL one less), nor ICMP from the router or A"
    if why:
        bad.append("%s: %s" % (why, f[:48].hex()))
dup = [k for k, v in valid.items() if v > 1]
print(len(frames), n_ip, n_arp, len(valid), n_fwd_garbage, n_icmp, n_icmp_a)
for b in bad[:10]:
    print("BAD", b)
if dup:
    print("BAD valid datagrams seen more than once:", dup[:10])
sys.exit(1 if bad or dup else 0)
EOF
ip netns exec "$RR_NS_B" "$RR_PY" "$RR_T/sniff.py" "$RR_IF_B" "$RR_MAC_B" "$RR_HMAC_B" "$RR_GW_A" "$RR_GW_B" \
    "$RR_HOST_A" "$RR_HOST_B" "$RR_T/expect" "$RR_T/sniff.ready" >"$RR_T/sniff.out" 2>&1 & # not rr_in: $! must be python
sniff_pid=$!
RR_EXTRA_PIDS+=("$sniff_pid")
rr_wait 5 test -s "$RR_T/sniff.ready" || rr_fail "the sniffer did not start: $(cat "$RR_T/sniff.out")"
rr_stats || rr_fail "stats"
declare -A S0
for k in "${!RRS[@]}"; do S0[$k]=${RRS[$k]}; done


read -r sent refused valid < <(rr_in "$RR_NS_A" "$RR_PY" "$RR_T/garbage.py" "$RR_IF_A" "$mac_a" "$host_mac" \
    "$RR_GW_A" "$RR_HOST_A" "$RR_GW_B" "$RR_HOST_B" "$FRAMES" "$SEED" "$RR_T/expect" "$RR" stats --json -S "$RR_SOCK") ||
    rr_fail "the garbage generator failed"
[ -n "${sent:-}" ] || rr_fail "the garbage generator printed nothing"
rr_ok "garbage: $sent frames written to $RR_IF_A ($valid of them valid datagrams A -> B), $refused refused by the kernel"

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
# At least every frame written (A's kernel adds a few of its own: ARP, ICMP
# answers to garbage the router delivered to it).
[ "$got" -ge $((sent + valid)) ] || rr_fail "the router received $got of $((sent + valid)) frames (driver-a rx $((drv_rx1 - drv_rx0)))"
# What reached B: the sniffer's verdict, and as many frames as the router sent out of port b.
kill -TERM "$sniff_pid"
rr_wait 10 eval '! rr_alive $sniff_pid' || rr_fail "the sniffer did not stop"
wait "$sniff_pid"
src=$?
read -r s_all s_ip s_arp s_valid s_garb s_icmp s_icmp_a <"$RR_T/sniff.out"
[ "$src" = 0 ] || rr_fail "a frame that is not a valid forwarded packet reached B (sniffer exit $src): $(cat "$RR_T/sniff.out")"
b_tx=$(($(rr_ctr router.b.tx_pkts) - ${S0[router.b.tx_pkts]}))
[ "${s_all:-x}" = "$b_tx" ] || rr_fail "B saw ${s_all:-?} frames, the router sent $b_tx out of port b: $(cat "$RR_T/sniff.out")"
[ "$s_valid" = "$valid" ] || rr_fail "B got $s_valid of the $valid valid datagrams (driver-a rx_drop_ring_full $(rr_ctr driver-a.rx_drop_ring_full))"
rr_ok "B received $s_all frames, all valid: $s_valid/$valid valid datagrams (TTL 63), $s_garb routable garbage packets forwarded intact, $s_icmp ICMP from the router, $s_icmp_a ICMP from A's kernel, $s_arp ARP"
# Accounting: each frame the router received (on a, and B's kernel's few on
# b) is ARP (rx_arp), forwarded, answered (local_echo: the reply is the same
# buffer), still waiting for a neighbour (pending_arp) or dropped under
# exactly one drop_* counter. (No fragmenting here: both MTUs are 1500.)
# The hosts' kernels also send IPv6 (MLD reports, router and DAD
# solicitations), which the router takes on its IPv6 path: each such frame is
# counted once in rx_ipv6, or in drop6_runt or drop6_bad_version before it
# (none is forwarded or queued here: the router has no IPv6 route but its
# link-local scope).
d() { echo $(($(rr_ctr "$1") - ${S0[$1]:-0})); }
drops=0
for k in "${!RRS[@]}"; do
    case $k in router.drop_*) drops=$((drops + $(d "$k"))) ;; esac
done
rx=$(($(d router.a.rx_pkts) + $(d router.b.rx_pkts)))
v6=$(($(d router.rx_ipv6) + $(d router.drop6_runt) + $(d router.drop6_bad_version)))
acc=$(($(d router.rx_arp) + $(d router.forwarded) + $(d router.local_echo) + drops + $(d router.pending_arp) + v6))
moved=
for k in "${!RRS[@]}"; do
    case $k in router.*) [ "$(d "$k")" = 0 ] || moved+=" ${k#router.} $(d "$k")" ;; esac
done
[ "$acc" = "$rx" ] || rr_fail "the router's counters that moved:$moved; ports a and b received $rx frames; rx_arp $(d router.rx_arp) + forwarded $(d router.forwarded) + local_echo $(d router.local_echo) + drops $drops + pending_arp $(d router.pending_arp) + IPv6 $v6 = $acc"
[ $((drops * 2)) -ge $((rx - valid)) ] || rr_fail "only $drops of $((rx - valid)) garbage frames were counted as drops"
rr_ok "accounting: $rx received = rx_arp $(d router.rx_arp) + forwarded $(d router.forwarded) + local_echo $(d router.local_echo) + drop_* $drops + pending_arp $(d router.pending_arp) + IPv6 $v6"
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
    case $c in ring.* | pool.* | shm_corrupt) bad+=("$c") ;; esac
done
rr_zero "${bad[@]}"
rr_ok "no ring counted a bad handle, owner, frame or chain; pool free_bad 0; no corrupt shared memory"

rr_stop
rr_census_ok
echo "PASS router_garbage: $((sent + valid)) frames sent ($valid valid), $got received by the router, pid $pid0 throughout"
