#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/mixed_ports.sh: a TAP port and an AF_XDP port on one router.
#
#   ns A (10.75.N.2) --TAP rrt$$a (TSO, checksum offload)-- [ns R: ringrouter]
#       --veth, AF_XDP-- ns B (10.76.N.2)
#
# A's TCP hands the TAP 64 KB segments with partial checksums; the AF_XDP
# port sends frames as they are, so the router segments and checksums them
# in software (services/router/gso.c). Checks: ping both ways; iperf3 TCP
# A -> B arrives (B's kernel would drop a segment with a bad checksum, and
# an unsegmented 64 KB frame cannot leave an AF_XDP socket), the router's
# gso_sw_packets and gso_sw_segments grow and the AF_XDP driver dropped no
# chain; iperf3 TCP B -> A (plain frames into the TAP); UDP A -> B with
# checksum offload (csum_sw); the same over IPv6 (TSO6 segmented, UDP
# checksums finished); a clean census at shutdown.
# Skips (77) when not root, a tool is missing, or the kernel has no AF_XDP.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init mixed_ports
rr_need iperf3 ss ethtool
rr_afxdp_init

PORT=5201
rr_three_ns 75 76
IF_A=rrt$$a
P6_A=2001:db8:75:$(printf '%x' $(($$ % 250 + 1))) P6_B=2001:db8:76:$(printf '%x' $(($$ % 250 + 1)))

rr_veth_host "$NS_B" xb0 xb1 "$NS_R" "$HOST_B" "$GW_B"

{
    printf '[router]\nname = mx%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
    printf '[port a]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\naddress6 = %s::1/64\n\n' "$IF_A" "$NS_A" "$GW_A" "$P6_A"
    printf '[port b]\ndriver = afxdp\nifname = xb1\naddress = %s/24\naddress6 = %s::1/64\n' "$GW_B" "$P6_B"
} >"$RR_T/m.ini"
rr_up_in "$NS_R" "$RR_T/m.ini"
ip -n "$NS_A" addr add "$HOST_A/24" dev "$IF_A" || rr_fail "addr $HOST_A"
ip -n "$NS_A" link set "$IF_A" up || rr_fail "link up $IF_A"
ip -n "$NS_A" route add default via "$GW_A" || rr_fail "default route in A"
rr_in "$NS_A" sysctl -qw "net.ipv6.conf.$IF_A.accept_dad=0" "net.ipv6.conf.$IF_A.accept_ra=0" || rr_fail "sysctl $IF_A"
ip -n "$NS_A" -6 addr add "$P6_A::2/64" dev "$IF_A" nodad && ip -n "$NS_A" -6 route add default via "$P6_A::1" dev "$IF_A" &&
    ip -n "$NS_B" -6 addr add "$P6_B::2/64" dev xb0 nodad && ip -n "$NS_B" -6 route add default via "$P6_B::1" dev xb0 ||
    rr_fail "the hosts' IPv6 addresses and routes"
rr_in "$NS_A" ethtool -k "$IF_A" 2>/dev/null | grep -q '^tcp-segmentation-offload: on' ||
    rr_fail "TSO is not on for $IF_A: the test needs A to send GSO frames"

out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
out=$(rr_in "$NS_B" ping -n -c 3 -i 0.2 -W 2 "$HOST_A" 2>&1) || rr_fail "ping B -> A: $out"
rr_ok "ping A -> B and B -> A across TAP and AF_XDP"

rr_iperf_server "$NS_B" "$HOST_B" $PORT
rr_iperf_server "$NS_A" "$HOST_A" $PORT
iperf() { # iperf NS DST ARGS...: MBIT
    local ns=$1 dst=$2
    shift 2
    local j=$RR_T/iperf.json
    rr_in "$ns" timeout 60 iperf3 -c "$dst" -p $PORT -t 3 --connect-timeout 3000 -J "$@" >"$j" 2>&1 ||
        rr_fail "iperf3 $* to $dst failed: $(head -c 2000 "$j")"
    MBIT=$("$RR_PY" -c 'import json, sys; print("%.1f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))' "$j") ||
        rr_fail "iperf3: cannot read $j"
}

rr_stats || rr_fail "stats"
p0=$(rr_ctr router.gso_sw_packets) s0=$(rr_ctr router.gso_sw_segments)
iperf "$NS_A" "$HOST_B"
rr_stats || rr_fail "stats"
p1=$(rr_ctr router.gso_sw_packets) s1=$(rr_ctr router.gso_sw_segments)
awk -v r="$MBIT" 'BEGIN { exit !(r >= 20) }' || rr_fail "TCP A -> B (TAP to AF_XDP): $MBIT Mbit/s"
[ $((p1 - p0)) -gt 100 ] && [ $((s1 - s0)) -gt $((2 * (p1 - p0))) ] ||
    rr_fail "TCP A -> B: the router segmented $((p1 - p0)) GSO packets into $((s1 - s0)) segments"
[ "$(rr_ctr driver-b.tx_drop_chain)" = 0 ] || rr_fail "driver-b dropped $(rr_ctr driver-b.tx_drop_chain) chains"
[ "$(rr_ctr router.drop_gso_bad)" = 0 ] || rr_fail "the router dropped $(rr_ctr router.drop_gso_bad) packets it could not segment"
rr_ok "TCP A -> B, TAP to AF_XDP: $MBIT Mbit/s; the router segmented $((p1 - p0)) GSO packets into $((s1 - s0)) frames"

iperf "$NS_B" "$HOST_A"
awk -v r="$MBIT" 'BEGIN { exit !(r >= 20) }' || rr_fail "TCP B -> A (AF_XDP to TAP): $MBIT Mbit/s"
rr_ok "TCP B -> A, AF_XDP to TAP: $MBIT Mbit/s"

c0=$(rr_ctr router.csum_sw)
iperf "$NS_A" "$HOST_B" -u -b 50M -l 1200
rr_stats || rr_fail "stats"
awk -v r="$MBIT" 'BEGIN { exit !(r >= 20) }' || rr_fail "UDP A -> B: $MBIT Mbit/s delivered"
[ "$(rr_ctr router.csum_sw)" -gt "$c0" ] || rr_fail "UDP A -> B: no checksum completed in software (csum_sw $c0 -> $(rr_ctr router.csum_sw))"
rr_ok "UDP A -> B: $MBIT Mbit/s delivered, $(($(rr_ctr router.csum_sw) - c0)) checksums finished by the router"

# IPv6: A's TCP hands the TAP TSO6 segments; UDP with checksum offload.
ip netns exec "$NS_B" iperf3 -s -B "$P6_B::2" -p $((PORT + 1)) >"$RR_T/srv6.log" 2>&1 &
RR_EXTRA_PIDS+=($!)
rr_wait 5 eval "rr_in $NS_B ss -Hltn 'sport = :$((PORT + 1))' | grep -q LISTEN" || rr_fail "iperf3 -6 server did not listen"
rr_stats || rr_fail "stats"
p0=$(rr_ctr router.gso_sw_packets) s0=$(rr_ctr router.gso_sw_segments) c0=$(rr_ctr router.csum_sw)
PORT=$((PORT + 1)) iperf "$NS_A" "$P6_B::2" -6
rr_stats || rr_fail "stats"
p1=$(rr_ctr router.gso_sw_packets) s1=$(rr_ctr router.gso_sw_segments)
awk -v r="$MBIT" 'BEGIN { exit !(r >= 20) }' || rr_fail "TCP -6 A -> B (TAP to AF_XDP): $MBIT Mbit/s"
[ $((p1 - p0)) -gt 100 ] && [ $((s1 - s0)) -gt $((2 * (p1 - p0))) ] ||
    rr_fail "TCP -6 A -> B: the router segmented $((p1 - p0)) TSO6 packets into $((s1 - s0)) segments"
[ "$(rr_ctr router.drop_gso_bad)" = 0 ] || rr_fail "the router dropped $(rr_ctr router.drop_gso_bad) packets it could not segment"
rr_ok "TCP -6 A -> B, TAP to AF_XDP: $MBIT Mbit/s; the router segmented $((p1 - p0)) TSO6 packets into $((s1 - s0)) frames"
c1=$(rr_ctr router.csum_sw)
PORT=$((PORT + 1)) iperf "$NS_A" "$P6_B::2" -6 -u -b 50M -l 1200
rr_stats || rr_fail "stats"
awk -v r="$MBIT" 'BEGIN { exit !(r >= 20) }' || rr_fail "UDP -6 A -> B: $MBIT Mbit/s delivered"
[ "$(rr_ctr router.csum_sw)" -gt "$c1" ] || rr_fail "UDP -6 A -> B: no checksum completed in software"
rr_ok "UDP -6 A -> B: $MBIT Mbit/s delivered, $(($(rr_ctr router.csum_sw) - c1)) checksums finished by the router"

rr_zero "${RR_MALFORMED[@]}"
rr_stop
rr_census_ok
printf 'PASS mixed_ports: TCP TAP -> AF_XDP through software segmentation\n'
