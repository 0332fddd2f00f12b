#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/cp_bird.sh: routing daemons talk through a TAP port (issue 45,
# item 1; docs/routing.md, "Control traffic"): BIRD 2 in host A's namespace
# and BIRD 2 in the control namespace, on the router's addresses of port a:
#   - BGP (AS 65002 to AS 65001) reaches Established, and the prefix A
#     announces is learnt in the control namespace;
#   - OSPFv2 (224.0.0.5, IP protocol 89) and OSPFv3 (ff02::5, link-local
#     addresses) reach Full, and A's external routes are learnt.
# Each BIRD runs with its own config, socket and log in the test's
# directory and is ended by its pid.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init cp_bird
rr_need_hard bird birdc
rr_netns c
NS_C=$RR_NS
N=$(($$ % 250 + 1))
P6A=fd00:81:$N
RR_SERVICES=(router driver-a driver-b cp-a cp-b)
RR_ROUTER_EXTRA="control_netns = $NS_C"
RR_ADDR6_A=$P6A::1/64
rr_topology
rr_start
rr_hosts_ipv6 "$P6A" fd00:82:$N

# bird_conf NAME ROUTER_ID LOCAL_AS PEER PEER_AS IFNAME ANNOUNCE: $RR_T/bird-NAME.conf;
# ANNOUNCE yes: a static IPv4 and IPv6 prefix, exported by BGP and OSPF.
bird_conf() {
    local exp=none
    {
        printf 'log "%s/bird-%s.log" all;\nrouter id %s;\nprotocol device {}\n' "$RR_T" "$1" "$2"
        if [ "$7" = yes ]; then
            exp=all
            printf 'protocol static { ipv4; route 198.51.100.0/24 blackhole; }\n'
            printf 'protocol static { ipv6; route 2001:db8:81::/48 blackhole; }\n'
        fi
        printf 'protocol bgp peer {\n  local as %s;\n  neighbor %s as %s;\n' "$3" "$4" "$5"
        printf '  hold time 9;\n  connect retry time 1;\n  ipv4 { import all; export %s; };\n}\n' "$exp"
        printf 'protocol ospf v2 o4 {\n  ipv4 { import all; export %s; };\n' "$exp"
        printf '  area 0 { interface "%s" { type ptp; hello 1; dead 4; }; };\n}\n' "$6"
        printf 'protocol ospf v3 o6 {\n  ipv6 { import all; export %s; };\n' "$exp"
        printf '  area 0 { interface "%s" { type ptp; hello 1; dead 4; }; };\n}\n' "$6"
    } >"$RR_T/bird-$1.conf"
}
bird_start() { # bird_start NAME NS
    # Not rr_in: $! must be bird itself (-f: it stays in the foreground).
    ip netns exec "$2" bird -f -c "$RR_T/bird-$1.conf" -s "$RR_T/bird-$1.ctl" -P "$RR_T/bird-$1.pid" \
        2>"$RR_T/bird-$1.err" &
    RR_EXTRA_PIDS+=($!)
}
bc() { birdc -s "$RR_T/bird-$1.ctl" "${@:2}" 2>&1; } # bc NAME CMD...
bird_conf c "$RR_GW_A" 65001 "$RR_HOST_A" 65002 cp-a no
bird_conf a "$RR_HOST_A" 65002 "$RR_GW_A" 65001 "$RR_IF_A" yes
bird_start c "$NS_C"
bird_start a "$RR_NS_A"
rr_wait 5 eval '[ -S "$RR_T/bird-c.ctl" ] && [ -S "$RR_T/bird-a.ctl" ]' ||
    rr_fail "BIRD did not start: $(cat "$RR_T"/bird-*.err)"

established() { bc "$1" show protocols peer | grep -q Established; }
rr_wait 30 eval 'established c && established a' ||
    rr_fail "no BGP session within 30 s: $(bc c show protocols all peer | tail -n 20)"
full() { bc c show ospf neighbors "$1" | grep -q Full; }
rr_wait 30 eval 'full o4 && full o6' ||
    rr_fail "OSPF not Full within 30 s: $(bc c show ospf neighbors o4) $(bc c show ospf neighbors o6) $(bc c show ospf interface)"
learnt() { bc c show route "$1" protocol "$2" | grep -q "${1%/*}"; } # learnt PREFIX PROTO
rr_wait 15 eval 'learnt 198.51.100.0/24 peer && learnt 198.51.100.0/24 o4 && learnt 2001:db8:81::/48 o6' ||
    rr_fail "the control namespace's BIRD has not A's routes: $(bc c show route all)"
rr_stats || rr_fail "stats"
rr_ok "through port a: BGP Established (AS 65002 -> 65001), OSPFv2 and OSPFv3 Full, A's prefixes learnt by each (punt_to_host $(rr_ctr router.punt_to_host), punt_from_host $(rr_ctr router.punt_from_host))"
rr_stop
rr_census_ok
echo "PASS cp_bird"
