#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/filter_nat.sh: rr-filter's NAT through the router, with A as
# the inside host (port a) and B as the outside (port b, the uplink):
#   - masquerade: A's TCP and UDP to B arrive from the router's address on
#     b ($RR_GW_B), and their answers come back to A;
#   - port forwarding: B's TCP to the router's b address, port 8080, reaches
#     A's server on port 80 (from B's own address), and its answer comes
#     back; the same for UDP 5353 -> A's 53;
#   - an ICMP error for a NAT'd flow reaches the inside host: A's UDP to a
#     port of B where nothing listens is refused (B's port unreachable,
#     sent to the router's address, translated back to A's flow);
#   - the router's own ICMP errors for a port-forwarded flow quote it as
#     its sender sent it (Linux's conntrack translates the embedded
#     header back): B's UDP to the forwarded port with TTL 1 draws a time
#     exceeded, a forward to an address with no route a net unreachable,
#     and A's 1400-byte DF datagram forwarded to B (port b's MTU 1280) a
#     fragmentation needed; each reaches the sender's connected socket,
#     which the kernel gives only an error that quotes the socket's own
#     tuple (the router's address and the forwarded port, not the inside
#     host's); and A's masqueraded UDP, once mapped, with TTL 1 draws a
#     time exceeded that postrouting's invalid drop lets through: related,
#     though it quotes the packet before source NAT;
#   - without the mapping nothing of B's reaches A: B's TCP to A's own
#     address is dropped by forward.
set -u
. "$(dirname "$0")/../lib/filter.sh"
flt_init filter_nat

n=$(($$ % 250 + 1)) # rr_topology's addresses, known before it runs
HOST_A=10.61.$n.2
flt_rules "$RR_T/rules.nft" <<EOF
# filter_nat's policy: a is the inside, b the uplink
chain prerouting {
    iif "b" tcp dport 8080 dnat to $HOST_A:80
    iif "b" udp dport 5353 dnat to $HOST_A:53
    iif "b" udp dport 5354 dnat to 192.0.2.1:53
    iif "a" udp dport 5355 dnat to 10.62.$n.2:53
}
chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    iif "a" accept
    iif "b" ip daddr $HOST_A tcp dport 80 accept
    iif "b" ip daddr $HOST_A udp dport 53 accept
}
chain postrouting {
    ct state invalid counter drop
    oif "b" masquerade
}
EOF
RR_MTU_B=1280
rr_topology "$(printf '[filter]\nrules = %s' "$RR_T/rules.nft")"
[ "$RR_HOST_A" = "$HOST_A" ] || rr_fail "the topology's A is $RR_HOST_A, the rules say $HOST_A"
rr_start
rr_ok "router up with rr-filter: inside A $RR_HOST_A -- [router + filter, masquerade on b] -- outside B $RR_HOST_B"

flt_serve "$RR_NS_B" tcp "$RR_HOST_B" 7001
flt_serve "$RR_NS_B" udp "$RR_HOST_B" 7003
flt_serve "$RR_NS_A" tcp "$RR_HOST_A" 80
flt_serve "$RR_NS_A" udp "$RR_HOST_A" 53
flt_serve "$RR_NS_A" tcp "$RR_HOST_A" 7002

# 1. Masquerade.
flt_verdict "$RR_NS_A" tcp "$RR_HOST_B" 7001 0 "masquerade TCP"
flt_verdict "$RR_NS_A" udp "$RR_HOST_B" 7003 0 "masquerade UDP"
for f in tcp-7001 udp-7003; do
    grep -q "^$RR_GW_B " "$RR_T/$f.log" || rr_fail "B's $f saw $(cat "$RR_T/$f.log"), not the router's address $RR_GW_B"
    ! grep -q "^$RR_HOST_A " "$RR_T/$f.log" || rr_fail "B's $f saw A's own address: not translated"
done
rr_ok "B saw A's TCP and UDP from the router's address $RR_GW_B"

# 2. Port forwarding.
flt_verdict "$RR_NS_B" tcp "$RR_GW_B" 8080 0 "port forwarding TCP 8080 -> A:80"
flt_verdict "$RR_NS_B" udp "$RR_GW_B" 5353 0 "port forwarding UDP 5353 -> A:53"
grep -q "^$RR_HOST_B " "$RR_T/tcp-80.log" || rr_fail "A's TCP 80 saw $(cat "$RR_T/tcp-80.log"), not B ($RR_HOST_B)"
grep -q "^$RR_HOST_B " "$RR_T/udp-53.log" || rr_fail "A's UDP 53 saw $(cat "$RR_T/udp-53.log"), not B ($RR_HOST_B)"
rr_ok "A's servers saw B's own address through the forwarded ports"

# 3. An ICMP error for a NAT'd flow: refused, at A.
flt_verdict "$RR_NS_A" udp "$RR_HOST_B" 7999 3 "masqueraded UDP to a closed port: B's port unreachable reaches A"

# 4. The router's own errors for a forwarded flow, translated back.
# icmp_err NS DST PORT TTL SIZE WANT WHAT [warm]: one datagram from a
# connected UDP socket (IP_RECVERR; DF), and the ICMP error (TYPE/CODE) that
# reached it; warm: first one answered datagram, so that the flow has its
# mapping (masquerade's is made at postrouting)
icmp_err() {
    local got
    got=$(rr_in "$1" "$RR_PY" -c '
import select, socket, struct, sys
dst, port, ttl, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 11, 1)  # IP_RECVERR
s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER: IP_PMTUDISC_DO
s.connect((dst, port))
if sys.argv[5] == "warm":
    s.settimeout(3)
    s.send(b"warm")
    s.recv(16)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
s.send(b"e" * size)
if not any(select.select([s], [], [s], 3)):
    sys.exit("none")
try:
    anc = s.recvmsg(64, 256, socket.MSG_ERRQUEUE)[1]
except OSError as e:
    sys.exit("no error queued: %s" % e)
for lvl, typ, data in anc:
    if lvl == socket.IPPROTO_IP and typ == 11:
        print("%d/%d" % struct.unpack("=4xBBB", data[:7])[1:])
' "$2" "$3" "$4" "$5" "${8:-}" 2>&1)
    [ "$got" = "$6" ] || rr_fail "$7: the sender's socket got '$got', expected ICMP $6"
    rr_ok "$7: ICMP $got reached the sender's socket, quoting its own tuple"
}
icmp_err "$RR_NS_B" "$RR_GW_B" 5353 1 8 11/0 "B's UDP to forwarded 5353 with TTL 1: the router's time exceeded"
icmp_err "$RR_NS_B" "$RR_GW_B" 5354 64 8 3/0 "B's UDP to 5354, forwarded to 192.0.2.1 (no route): the router's net unreachable"
icmp_err "$RR_NS_A" "$RR_GW_A" 5355 64 1400 3/4 "A's 1400 bytes, DF, to 5355, forwarded to B (MTU 1280): the router's fragmentation needed"
# The router's error for a masqueraded flow quotes it before source NAT:
# related all the same (postrouting drops what is invalid).
icmp_err "$RR_NS_A" "$RR_HOST_B" 7003 1 8 11/0 "A's masqueraded UDP to B, then TTL 1: the router's time exceeded" warm

# 5. No mapping, no way in.
flt_verdict "$RR_NS_B" tcp "$RR_HOST_A" 7002 2 "B to A's own address, no mapping: forward's drop"
[ ! -s "$RR_T/tcp-7002.log" ] || rr_fail "A's TCP 7002 saw a peer: $(cat "$RR_T/tcp-7002.log")"

rr_stats || rr_fail "stats"
rr_zero shm_corrupt pool.free_bad filter.drop_nat_ports filter.drop_malformed
rr_ok "filter: accepted $(rr_ctr filter.accepted), dropped $(rr_ctr filter.dropped), connections $(rr_ctr filter.ct_count)"
rr_no_restarts
rr_stop
rr_census_ok
t_pass "filter_nat: masquerade, port forwarding and ICMP errors through NAT"
