#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/cp_ospf.sh: OSPF routes through the ports into the FIB, and a
# reroute (issue 45's OSPF test; docs/routing.md, "A worked example: OSPF").
# Three TAP ports: a to peer A, b to peer B, c to a host S that sends the
# traffic. BIRD 2 runs in the control namespace (OSPFv2 and OSPFv3 on cp-a
# and cp-b, its kernel protocols writing table 100, which [routes]
# mirrors), and in A and in B. A and B both own 10.100.N.0/24 and
# 2001:db8:100::/64 (local routes) and export them into OSPF as external
# routes, A with metric 10000, B with 20000.
#   - the adjacencies reach Full (2 OSPFv2, 2 OSPFv3);
#   - the routes converge: `route show` has 10.100.N.0/24 via A's address
#     and 2001:db8:100::/64 via A's link-local address (OSPFv3's next hops
#     are link-local: the router takes them on the port of the control
#     namespace's interface they name), both on port a, origin daemon;
#     OSPF's routes to the ports' own networks (device routes) are refused
#     and the connected routes stay;
#   - S's pings to 10.100.N.1 and 2001:db8:100::1 are answered by A (its
#     echo counters move, B's do not);
#   - A's link goes down: after OSPF's dead interval (4 s) the routes move
#     to B (port b), and S's pings are answered by B.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init cp_ospf
rr_need_hard bird birdc
[ -x "$RR_BIN_DIR/rr-routes" ] || rr_fail "$RR_BIN_DIR/rr-routes is missing: build with ninja first"
cp "$RR_BIN_DIR/rr-routes" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-routes" || rr_fail "cannot copy rr-routes"
N=$(($$ % 250 + 1))
P4=10.100.$N.0/24 D4=10.100.$N.1 P6=2001:db8:100::/64 D6=2001:db8:100::1
rr_netns c
NS_C=$RR_NS
rr_netns s
NS_S=$RR_NS
IF_S=rrt$$c
RR_SERVICES=(router driver-a driver-b driver-c cp-a cp-b cp-c routes)
RR_ROUTER_EXTRA="control_netns = $NS_C"
RR_ADDR6_A=2001:db8:61::1/64 RR_ADDR6_B=2001:db8:62::1/64
rr_topology "$(printf '[port c]\ndriver = tap\nifname = %s\nnetns = %s\naddress = 10.65.%s.1/24\naddress6 = 2001:db8:65::1/64\n\n[routes]\nnetns = %s\ntable = 100\ngrace_s = 30\n' \
    "$IF_S" "$NS_S" "$N" "$NS_C")"
rr_start
rr_hosts_ipv6 2001:db8:61 2001:db8:62 routes
rr_host_side "$NS_S" "$IF_S" "10.65.$N.2" "10.65.$N.1"
rr_in "$NS_S" sysctl -qw "net.ipv6.conf.$IF_S.accept_dad=0" "net.ipv6.conf.$IF_S.accept_ra=0" || rr_fail "sysctl in S"
ip -n "$NS_S" -6 addr add 2001:db8:65::2/64 dev "$IF_S" nodad || rr_fail "addr6 in S"
ip -n "$NS_S" -6 route add default via 2001:db8:65::1 dev "$IF_S" || rr_fail "default6 in S"
for ns in "$RR_NS_A" "$RR_NS_B"; do
    ip -n "$ns" route add local "$P4" dev lo && ip -n "$ns" -6 route add local "$P6" dev lo ||
        rr_fail "the anycast prefixes in $ns"
done

# ---- the three BIRDs ----
cat >"$RR_T/bird-c.conf" <<EOF
log "$RR_T/bird-c.log" all;
router id $RR_GW_A;
protocol device {}
protocol kernel k4 {
  kernel table 100;
  ipv4 { import none; export all; };
}
protocol kernel k6 {
  kernel table 100;
  ipv6 { import none; export all; };
}
protocol ospf v2 o4 {
  ipv4 { import all; export none; };
  area 0 { interface "cp-a", "cp-b" { type ptp; hello 1; dead 4; }; };
}
protocol ospf v3 o6 {
  ipv6 { import all; export none; };
  area 0 { interface "cp-a", "cp-b" { type ptp; hello 1; dead 4; }; };
}
EOF
peer_conf() { # peer_conf NAME ROUTER_ID IFNAME METRIC
    cat >"$RR_T/bird-$1.conf" <<EOF
log "$RR_T/bird-$1.log" all;
router id $2;
protocol device {}
protocol static s4 { ipv4; route $P4 blackhole; }
protocol static s6 { ipv6; route $P6 blackhole; }
protocol ospf v2 o4 {
  ipv4 { import none; export filter { if proto = "s4" then { ospf_metric2 = $4; accept; } reject; }; };
  area 0 { interface "$3" { type ptp; hello 1; dead 4; }; };
}
protocol ospf v3 o6 {
  ipv6 { import none; export filter { if proto = "s6" then { ospf_metric2 = $4; accept; } reject; }; };
  area 0 { interface "$3" { type ptp; hello 1; dead 4; }; };
}
EOF
}
peer_conf a "$RR_HOST_A" "$RR_IF_A" 10000
peer_conf b "$RR_HOST_B" "$RR_IF_B" 20000
bird_start() { # bird_start NAME NS
    # Not rr_in: $! must be bird itself (-f: it stays in the foreground).
    ip netns exec "$2" bird -f -c "$RR_T/bird-$1.conf" -s "$RR_T/bird-$1.ctl" -P "$RR_T/bird-$1.pid" \
        2>"$RR_T/bird-$1.err" &
    RR_EXTRA_PIDS+=($!)
}
bc() { birdc -s "$RR_T/bird-$1.ctl" "${@:2}" 2>&1; } # bc NAME CMD...
bird_start c "$NS_C"
bird_start a "$RR_NS_A"
bird_start b "$RR_NS_B"
rr_wait 10 eval '[ -S "$RR_T/bird-c.ctl" ] && [ -S "$RR_T/bird-a.ctl" ] && [ -S "$RR_T/bird-b.ctl" ]' ||
    rr_fail "BIRD did not start: $(cat "$RR_T"/bird-*.err)"

full() { [ "$(bc c show ospf neighbors o4 | grep -c Full)" = 2 ] && [ "$(bc c show ospf neighbors o6 | grep -c Full)" = 2 ]; }
rr_wait 40 full || rr_fail "OSPF not Full with A and B within 40 s: $(bc c show ospf neighbors o4) $(bc c show ospf neighbors o6)"
rr_ok "OSPFv2 and OSPFv3 Full with A and B, through ports a and b"

rows() { "$RR" "$@" -S "$RR_SOCK" | tr -s ' '; }
# via PREFIX GATEWAY-RE PORT: the FIB's route for PREFIX is a daemon's, via GATEWAY-RE on PORT.
via() { rows route show "$1" | grep -qE "^$1 $2 $3 daemon\$"; }
ll() { ip -n "$1" -6 -br addr show dev "$2" scope link | awk '{ sub("/.*", "", $3); print $3 }'; } # ll NS IFNAME
LL_A=$(ll "$RR_NS_A" "$RR_IF_A") LL_B=$(ll "$RR_NS_B" "$RR_IF_B")
[ -n "$LL_A" ] && [ -n "$LL_B" ] || rr_fail "no link-local address on A's or B's link: '$LL_A' '$LL_B'"
converged() { via "$P4" "$RR_HOST_A" a && via "$P6" "$LL_A" a; }
rr_wait 30 converged || rr_fail "the OSPF routes are not in the FIB via A within 30 s: $(rows route show "$P4"); $(rows route show "$P6"); $("$RR" routes -S "$RR_SOCK"); table 100: $(ip -n "$NS_C" route show table 100; ip -n "$NS_C" -6 route show table 100)"
# OSPF's own routes to the ports' networks are device routes in the table: refused, the connected ones kept.
routes_json() { "$RR" routes --json -S "$RR_SOCK" | "$RR_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
refused=$(routes_json 'd["routes_refused_not_connected"]')
[ "$refused" -ge 1 ] || rr_fail "OSPF's routes to the ports' networks were not refused: $("$RR" routes -S "$RR_SOCK")"
[ "$(rows route show "$RR_NET_A.0/24")" = "PREFIX VIA PORT ORIGIN
$RR_NET_A.0/24 - a connected" ] || rr_fail "port a's connected route changed: $(rows route show "$RR_NET_A.0/24")"
rr_ok "converged: $P4 via $RR_HOST_A and $P6 via $LL_A, port a, origin daemon; OSPF's $refused routes to the ports' networks refused, the connected ones kept"

# echos NS: the ICMP and ICMPv6 echo requests NS has received, "V4 V6".
echos() {
    local v4 v6
    v4=$(rr_in "$1" awk '/^Icmp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "InEchos") c = i; h = 1 } else print $c }' /proc/net/snmp)
    v6=$(rr_in "$1" awk '$1 == "Icmp6InEchos" { print $2 }' /proc/net/snmp6)
    echo "$v4 $v6"
}
# answered_by NS: S's pings to D4 and D6 (2 each) answered, and NS received them.
answered_by() {
    local b4 b6 a4 a6 o
    read -r b4 b6 <<<"$(echos "$1")"
    o=$(rr_in "$NS_S" ping -n -c 2 -i 0.2 -W 2 "$D4" 2>&1) && grep -q " 2 received" <<<"$o" || rr_fail "ping $D4 from S: $o"
    o=$(rr_in "$NS_S" ping -6 -n -c 2 -i 0.2 -W 2 "$D6" 2>&1) && grep -q " 2 received" <<<"$o" || rr_fail "ping $D6 from S: $o"
    read -r a4 a6 <<<"$(echos "$1")"
    [ $((a4 - b4)) -ge 2 ] && [ $((a6 - b6)) -ge 2 ] ||
        rr_fail "S's pings were answered, but $1 received $((a4 - b4)) IPv4 and $((a6 - b6)) IPv6 of them"
}
read -r b4 b6 <<<"$(echos "$RR_NS_B")"
answered_by "$RR_NS_A"
read -r a4 a6 <<<"$(echos "$RR_NS_B")"
[ "$a4 $a6" = "$b4 $b6" ] || rr_fail "B received echo requests while the routes were via A"
rr_ok "S -> $D4 and $D6: forwarded to A (port a), answered"

# ---- A's link goes down: the traffic moves to B ----
rr_now
t0=$RR_NOW
ip -n "$RR_NS_A" link set "$RR_IF_A" down || rr_fail "link down in A"
moved() { via "$P4" "$RR_HOST_B" b && via "$P6" "$LL_B" b; }
rr_wait 30 moved || rr_fail "the routes did not move to B within 30 s of A's link going down: $(rows route show "$P4"); $(rows route show "$P6")"
rr_now
el=$(((RR_NOW - t0) / 1000))
answered_by "$RR_NS_B"
rr_status || rr_fail "status"
for s in "${RR_SERVICES[@]}"; do
    [ "${RR_RESTARTS[$s]}" = 0 ] || rr_fail "$s restarted during the test"
done
rr_ok "A's link down: $P4 via $RR_HOST_B and $P6 via $LL_B (port b) $el ms later (dead interval 4 s); S's pings answered by B"
rr_stop
rr_census_ok
t_pass cp_ospf
