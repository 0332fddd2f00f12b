#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_dad.sh: Duplicate Address Detection of the router's own
# IPv6 addresses (RFC 4862 §5.4, issue 17). The real router between two TAP
# ports; host A takes the router's address on port a (2001:db8:67:N::1)
# besides its own, then the router restarts (a start probes every address):
#   - the log says, naming the port, the address and the MAC that has it,
#     that the router does not use it; nd_dad_conflict is 1;
#   - the router no longer answers for it (A's kernel does), and still
#     forwards A <-> B through its other addresses (link-local, port b's);
#   - B's address on port b, held by no one else, is kept;
#   - a clean census.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_dad

n=$(($$ % 250 + 1))
P6_A=2001:db8:67:$(printf '%x' "$n")
P6_B=2001:db8:68:$(printf '%x' "$n")
RR_ADDR6_A=$P6_A::1/64 RR_ADDR6_B=$P6_B::1/64
rr_topology
rr_start
rr_hosts_ipv6 "$P6_A" "$P6_B"
# B's way back to A goes through the router; A reaches B by the router's link-local address.
ip -n "$RR_NS_B" -6 route add default via "$P6_B::1" dev "$RR_IF_B" || rr_fail "B's IPv6 default route"
ll_r=fe80::72:72ff:fe00:1 # port a's link-local address: the EUI-64 of its default MAC 02:72:72:00:00:01
ip -n "$RR_NS_A" -6 route add default via "$ll_r" dev "$RR_IF_A" || rr_fail "A's IPv6 default route via $ll_r"
# A takes the router's address.
ip -n "$RR_NS_A" -6 addr add "$P6_A::1/64" dev "$RR_IF_A" nodad || rr_fail "A takes $P6_A::1"
rr_ok "host A holds the router's own $P6_A::1; restarting the router"

lines=$(wc -l <"$RR_LOG")
"$RR" restart router -S "$RR_SOCK" >/dev/null || rr_fail "restart router"
want="rr-router: port a: DAD: $P6_A::1 is already in use on the link (advertised by "
rr_wait 5 eval 'tail -n +$((lines + 1)) "$RR_LOG" | grep -qF "$want"' ||
    rr_fail "no DAD conflict line for $P6_A::1 within 5 s of the restart: $(tail -n +$((lines + 1)) "$RR_LOG")"
line=$(tail -n +$((lines + 1)) "$RR_LOG" | grep -F "$want" | head -n 1)
grep -qF "$(rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/address")); the router does not use it" <<<"$line" ||
    rr_fail "the DAD line does not name A's MAC: $line"
grep -q "DAD: $P6_B::1 " "$RR_LOG" && rr_fail "port b's $P6_B::1, held by no one else, was reported: $(grep DAD "$RR_LOG")"
rr_stats || rr_fail "stats"
[ "$(rr_ctr router.nd_dad_conflict)" = 1 ] || rr_fail "nd_dad_conflict is $(rr_ctr router.nd_dad_conflict), expected 1"
rr_ok "logged: $line"

e0=$(rr_ctr router.icmp6_echo_reply_tx)
out=$(rr_in "$RR_NS_B" ping -6 -n -c 3 -i 0.2 -W 2 "$P6_A::2" 2>&1) || rr_fail "ping -6 B -> A's ::2 after the conflict: $out"
out=$(rr_in "$RR_NS_B" ping -6 -n -c 3 -i 0.2 -W 2 "$P6_B::1" 2>&1) || rr_fail "ping -6 the router's $P6_B::1: $out"
rr_stats || rr_fail "stats"
[ $(($(rr_ctr router.icmp6_echo_reply_tx) - e0)) = 3 ] ||
    rr_fail "the router answered $(($(rr_ctr router.icmp6_echo_reply_tx) - e0)) echoes, expected 3 (its $P6_B::1 only)"
rr_ok "B -> A's ::2 forwarded; the router still answers on $P6_B::1"
rr_stop
rr_census_ok
echo "PASS router_dad"
