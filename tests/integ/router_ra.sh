#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_ra.sh: Router Advertisements (RFC 4861 §6, issue 17).
# The real router between two TAP ports; port a has `ra = yes`, port b not.
# Host A has no IPv6 address of its own but its link-local one: it learns
# everything from the router, as a host on a real LAN does (RFC 4862):
#   - A's solicitation is answered (nd_router_solicit_rx, nd_router_advert_tx)
#     and A configures an address in the port's /64 by itself (SLAAC), a
#     default route via the router's link-local address, and the port's MTU;
#   - ping -6 from that address to B's (static) one, through the router;
#   - the router advertises nothing on port b (B learns no default route);
#   - unsolicited advertisements keep coming on a's period (ra_interval = 4:
#     at least one more within 6 s);
#   - no malformed-input drop, no restart, a clean census.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_ra

n=$(($$ % 250 + 1))
P6_A=2001:db8:65:$(printf '%x' "$n")
P6_B=2001:db8:66:$(printf '%x' "$n")
RR_ADDR6_A=$P6_A::1/64 RR_ADDR6_B=$P6_B::1/64
rr_netns_sysctls() { # before the TAP devices exist: they take the namespace's defaults
    rr_in "$1" sysctl -qw net.ipv6.conf.all.forwarding=0 net.ipv6.conf.default.forwarding=0 \
        net.ipv6.conf.default.accept_ra="$2" net.ipv6.conf.default.autoconf="$2" net.ipv6.conf.default.accept_dad=0 ||
        rr_fail "IPv6 sysctls in $1"
}
rr_topology
# rr_topology wrote the port sections; the switch goes into port a's.
sed -i "/^\\[port a\\]\$/a ra = yes\\nra_interval = 4" "$RR_T/m.ini"
"$RR" check -c "$RR_T/m.ini" >/dev/null || rr_fail "the manifest with ra = yes does not check: $(cat "$RR_T/m.ini")"
rr_netns_sysctls "$RR_NS_A" 1
rr_netns_sysctls "$RR_NS_B" 1
rr_start
ip -n "$RR_NS_B" -6 addr add "$P6_B::2/64" dev "$RR_IF_B" nodad || rr_fail "B's IPv6 address"
ip -n "$RR_NS_B" -6 route add "$P6_A::/64" via "$P6_B::1" dev "$RR_IF_B" || rr_fail "B's route to A's network"
rr_ok "router up: port a ($P6_A::1/64) with ra = yes, ra_interval = 4; port b ($P6_B::1/64) without"

slaac() { # A's autoconfigured global address in P6_A::/64
    rr_in "$RR_NS_A" ip -6 -o addr show dev "$RR_IF_A" scope global | awk '{ sub("/.*", "", $4); print $4 }' |
        grep "^${P6_A}:" | head -n 1
}
rr_wait 10 eval '[ -n "$(slaac)" ]' ||
    rr_fail "A configured no address in $P6_A::/64 within 10 s: $(rr_in "$RR_NS_A" ip -6 addr show dev "$RR_IF_A")"
addr_a=$(slaac)
ll_r=$(rr_in "$RR_NS_A" ip -6 route show default | awk '/via fe80/ { print $3; exit }')
[ -n "$ll_r" ] || rr_fail "A has no default route via a link-local address: $(rr_in "$RR_NS_A" ip -6 route show)"
mtu=$(rr_in "$RR_NS_A" sysctl -n "net.ipv6.conf.$RR_IF_A.mtu")
[ "$mtu" = 1500 ] || rr_fail "A's IPv6 MTU on the port is $mtu, not the advertised 1500"
rr_stats || rr_fail "stats"
[ "$(rr_ctr router.nd_router_advert_tx)" -ge 1 ] || rr_fail "nd_router_advert_tx is 0"
rr_ok "A autoconfigured $addr_a and a default route via $ll_r (the router's link-local); RAs sent $(rr_ctr router.nd_router_advert_tx), solicitations received $(rr_ctr router.nd_router_solicit_rx)"

out=$(rr_in "$RR_NS_A" ping -6 -n -c 5 -i 0.2 -W 2 -I "$addr_a" "$P6_B::2" 2>&1) || rr_fail "ping -6 A -> B: $out"
grep -q " 5 received" <<<"$out" || rr_fail "ping -6 A -> B lost replies: $out"
rr_ok "ping -6 $addr_a -> $P6_B::2 through the router: 5 of 5"

# B is on a port without ra: no default route learned there.
! rr_in "$RR_NS_B" ip -6 route show default | grep -q . ||
    rr_fail "B learned a default route from a port with ra = no: $(rr_in "$RR_NS_B" ip -6 route show default)"
# Unsolicited ones keep coming (period 4 s, jittered down to 3 s).
ra0=$(rr_ctr router.nd_router_advert_tx)
rr_wait 6 eval 'rr_stats && [ "$(rr_ctr router.nd_router_advert_tx)" -gt "$ra0" ]' ||
    rr_fail "no unsolicited advertisement within 6 s (ra_interval = 4)"
rr_ok "port b advertised nothing; on port a another advertisement came unsolicited"

rr_zero "${RR_MALFORMED[@]}" router.nd_bad
rr_no_restarts
rr_stop
rr_census_ok
echo "PASS router_ra"
