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
}
chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    iif "a" accept
    iif "b" ip daddr $HOST_A tcp dport 80 accept
    iif "b" ip daddr $HOST_A udp dport 53 accept
}
chain postrouting {
    oif "b" masquerade
}
EOF
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

# 4. No mapping, no way in.
flt_verdict "$RR_NS_B" tcp "$RR_HOST_A" 7002 2 "B to A's own address, no mapping: forward's drop"
[ ! -s "$RR_T/tcp-7002.log" ] || rr_fail "A's TCP 7002 saw a peer: $(cat "$RR_T/tcp-7002.log")"

rr_stats || rr_fail "stats"
rr_zero shm_corrupt pool.free_bad filter.drop_nat_ports filter.drop_malformed
rr_ok "filter: accepted $(rr_ctr filter.accepted), dropped $(rr_ctr filter.dropped), connections $(rr_ctr filter.ct_count)"
rr_no_restarts
rr_stop
rr_census_ok
t_pass "filter_nat: masquerade, port forwarding and ICMP errors through NAT"
