#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/cp_unreach.sh: with no control namespace, the router answers
# for its own addresses as Linux does with nothing listening (issue 45,
# item 1; docs/routing.md, "Control traffic"): TCP gets a reset and UDP a
# port unreachable, IPv4 and IPv6, counted (tcp_rst_tx,
# icmp_port_unreach_tx, icmp6_unreach_tx), and traceroute to the router
# ends at it; and within the ICMP limit: with
# icmp_rate 1 and icmp_burst 2, a burst of 20 UDP datagrams draws at most
# 3 answers and icmp_rate_limited counts the rest. Before, TCP hung and UDP
# went unanswered (drop_local_other).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init cp_unreach
rr_need_hard traceroute
PROBE=$RR_ROOT/tests/lib/cp_probe.py
N=$(($$ % 250 + 1))
P6A=fd00:71:$N

RR_ADDR6_A=$P6A::1/64
rr_topology
rr_start
rr_hosts_ipv6 "$P6A" fd00:72:$N
for t in "tcp $RR_GW_A" "udp $RR_GW_A" "tcp $P6A::1" "udp $P6A::1"; do
    read -r kind host <<<"$t"
    out=$(rr_in "$RR_NS_A" "$RR_PY" "$PROBE" refused "$kind" "$host" 179 2>&1) || rr_fail "$kind to $host:179: $out"
done
rr_stats || rr_fail "stats"
for c in tcp_rst_tx icmp_port_unreach_tx icmp6_unreach_tx; do
    v=$(rr_ctr "router.$c")
    [ "$v" -ge 1 ] || rr_fail "router.$c = $v after the refusals"
done
[ "$(rr_ctr router.tcp_rst_tx)" -ge 2 ] || rr_fail "router.tcp_rst_tx = $(rr_ctr router.tcp_rst_tx), expected one per family"
# traceroute to the router ends at it (before: a line of stars).
out=$(rr_in "$RR_NS_A" traceroute -n -w 2 -q 1 -m 3 "$RR_GW_A" 2>&1) || rr_fail "traceroute $RR_GW_A: $out"
[ "$(awk '$1 == 1 { print $2 }' <<<"$out")" = "$RR_GW_A" ] || rr_fail "traceroute to the router: $out"
rr_ok "refused: TCP reset and UDP port unreachable, IPv4 and IPv6 (tcp_rst_tx $(rr_ctr router.tcp_rst_tx), icmp_port_unreach_tx $(rr_ctr router.icmp_port_unreach_tx), icmp6_unreach_tx $(rr_ctr router.icmp6_unreach_tx))"

# The rate limit: 20 datagrams at once draw the bucket's 2 and maybe 1 more.
sed -i '/^\[router\]$/a icmp_rate = 1\nicmp_burst = 2' "$RR_T/m.ini"
rr_c reload
[ "$rc" = 0 ] || rr_fail "reload with icmp_rate 1: $out $err"
rr_wait 10 eval 'rr_all_up && [ "${RR_PLANNED[router]}" -ge 1 ]' || rr_fail "the router did not restart with icmp_rate 1 within 10 s"
rr_stats || rr_fail "stats"
u0=$(rr_ctr router.icmp_port_unreach_tx) l0=$(rr_ctr router.icmp_rate_limited)
rr_in "$RR_NS_A" "$RR_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(20):
    s.sendto(b"x", (sys.argv[1], 9))' "$RR_GW_A" || rr_fail "the burst"
rr_wait 5 eval 'rr_stats && [ $(($(rr_ctr router.icmp_port_unreach_tx) + $(rr_ctr router.icmp_rate_limited) - u0 - l0)) -ge 20 ]' ||
    rr_fail "20 datagrams: $(($(rr_ctr router.icmp_port_unreach_tx) - u0)) answered, $(($(rr_ctr router.icmp_rate_limited) - l0)) limited"
u=$(($(rr_ctr router.icmp_port_unreach_tx) - u0))
[ "$u" -ge 1 ] && [ "$u" -le 3 ] || rr_fail "20 datagrams with icmp_burst 2: $u port unreachables sent"
rr_ok "rate-limited: 20 datagrams, $u port unreachables, $(($(rr_ctr router.icmp_rate_limited) - l0)) limited"
rr_stop
rr_census_ok
echo "PASS cp_unreach"
