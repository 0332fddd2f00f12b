#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/filter_cp.sh: rr-filter beside [router] control_netns (issues
# 45 and 47): the input chain guards the control plane's punt path as
# Linux's input hook guards a routing daemon's sockets. Ports a and b are
# filtered; the control namespace C holds TCP and UDP servers, as BGP's
# and other daemons' sockets would. The input chain allows BGP (TCP 179)
# from A on port a, and what C's own connections get back:
#   - A's TCP to the router's address, port 179, reaches C's server, which
#     logs A's own address;
#   - B's TCP 179 (port b), A's TCP 180 and A's UDP 179 are dropped by
#     input: no answer, and C's servers see nothing;
#   - C's own TCP connection out to B's server (a daemon's active open)
#     is answered: its reply meets input as established;
#   - the input chain's counters show the accept, filter.drop_rule the
#     drops, the router the punted frames; no restarts, a clean census.
set -u
. "$(dirname "$0")/../lib/filter.sh"
flt_init filter_cp
rr_need ss
rr_netns c
NS_C=$RR_NS
RR_SERVICES=(router driver-a driver-b cp-a cp-b filter)
RR_ROUTER_EXTRA="control_netns = $NS_C"

n=$(($$ % 250 + 1)) # rr_topology's addresses, known before it runs
flt_rules "$RR_T/rules.nft" <<EOF
# filter_cp's policy: the control plane takes BGP from A only
chain input {
    type filter hook input priority 0; policy drop;
    ct state established,related accept
    ct state invalid drop
    iif "a" ip saddr 10.61.$n.2 tcp dport 179 counter accept
}
EOF
rr_topology "$(printf '[filter]\nrules = %s' "$RR_T/rules.nft")"
[ "$RR_HOST_A" = "10.61.$n.2" ] || rr_fail "the topology's A is $RR_HOST_A, the rules say 10.61.$n.2"
rr_start
rr_ok "router up with rr-filter and control namespace $NS_C: A -- [a, filter, router, b] -- B; cp-a, cp-b in C"

flt_serve "$NS_C" tcp 0.0.0.0 179
flt_serve "$NS_C" tcp 0.0.0.0 180
flt_serve "$NS_C" udp 0.0.0.0 179
flt_serve "$RR_NS_B" tcp "$RR_HOST_B" 7001

# 1. BGP from A: through the input chain to C.
flt_verdict "$RR_NS_A" tcp "$RR_GW_A" 179 0 "A's BGP to the router"
grep -q "^$RR_HOST_A " "$RR_T/tcp-179.log" || rr_fail "C's TCP 179 saw $(cat "$RR_T/tcp-179.log"), not A ($RR_HOST_A)"
rr_ok "C's BGP server saw A's own address"

# 2. What input drops never reaches C.
: >"$RR_T/tcp-179.log"
flt_verdict "$RR_NS_B" tcp "$RR_GW_B" 179 2 "B's BGP (port b): input's policy drop"
flt_verdict "$RR_NS_A" tcp "$RR_GW_A" 180 2 "A's TCP 180: input's policy drop"
flt_verdict "$RR_NS_A" udp "$RR_GW_A" 179 2 "A's UDP 179: input's policy drop"
for f in tcp-179 tcp-180 udp-179; do
    [ ! -s "$RR_T/$f.log" ] || rr_fail "C's $f saw a peer: $(cat "$RR_T/$f.log")"
done
rr_ok "C's servers saw nothing that input dropped"

# 3. C's own connection out: its answer is established at input.
flt_verdict "$NS_C" tcp "$RR_HOST_B" 7001 0 "C's TCP to B (a daemon's active open)"
grep -q "^$RR_GW_B " "$RR_T/tcp-7001.log" || rr_fail "B's TCP 7001 saw $(cat "$RR_T/tcp-7001.log"), not the router ($RR_GW_B)"

rr_stats || rr_fail "stats"
rr_zero shm_corrupt pool.free_bad filter.drop_malformed
[ "$(rr_ctr filter.rule.input.2.pkts)" -ge 1 ] || rr_fail "input's BGP rule counted $(rr_ctr filter.rule.input.2.pkts) packets"
[ "$(rr_ctr filter.drop_rule)" -ge 3 ] || rr_fail "filter.drop_rule is $(rr_ctr filter.drop_rule): expected the 3 probes' drops"
[ "$(rr_ctr router.punt_to_host)" -ge 3 ] || rr_fail "router.punt_to_host is $(rr_ctr router.punt_to_host)"
rr_ok "filter: BGP rule $(rr_ctr filter.rule.input.2.pkts) packets, drop_rule $(rr_ctr filter.drop_rule); router punt_to_host $(rr_ctr router.punt_to_host)"
rr_no_restarts
rr_stop
rr_census_ok
t_pass "filter_cp: the input chain guards the control namespace's punt path"
