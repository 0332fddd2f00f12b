#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/cp_bgp.sh: a BGP session through a TAP port (issue 45, item
# 1; docs/routing.md, "Control traffic"): BIRD 2 in host A's namespace
# (AS 65002) and BIRD 2 in the control namespace (AS 65001, on the router's
# address of port a) reach Established, and the prefix A announces is in
# the control namespace's BIRD. Each BIRD runs with its own config, socket
# and log in the test's directory and is ended by its pid.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init cp_bgp
rr_need_hard bird birdc
rr_netns c
NS_C=$RR_NS
RR_SERVICES=(router driver-a driver-b cp-a cp-b)
RR_ROUTER_EXTRA="control_netns = $NS_C"
rr_topology
rr_start

# bird_conf NAME ROUTER_ID LOCAL_AS PEER PEER_AS EXPORT: $RR_T/bird-NAME.conf
bird_conf() {
    {
        printf 'log "%s/bird-%s.log" all;\nrouter id %s;\nprotocol device {}\n' "$RR_T" "$1" "$2"
        [ "$6" = none ] || printf 'protocol static { ipv4; route %s blackhole; }\n' "$6"
        printf 'protocol bgp peer {\n  local as %s;\n  neighbor %s as %s;\n' "$3" "$4" "$5"
        printf '  hold time 9;\n  connect retry time 1;\n'
        printf '  ipv4 { import all; export %s; };\n}\n' "$([ "$6" = none ] && echo none || echo all)"
    } >"$RR_T/bird-$1.conf"
}
bird_start() { # bird_start NAME NS
    # Not rr_in: $! must be bird itself (-f: it stays in the foreground).
    ip netns exec "$2" bird -f -c "$RR_T/bird-$1.conf" -s "$RR_T/bird-$1.ctl" -P "$RR_T/bird-$1.pid" \
        2>"$RR_T/bird-$1.err" &
    RR_EXTRA_PIDS+=($!)
}
bird_conf c "$RR_GW_A" 65001 "$RR_HOST_A" 65002 none
bird_conf a "$RR_HOST_A" 65002 "$RR_GW_A" 65001 198.51.100.0/24
bird_start c "$NS_C"
bird_start a "$RR_NS_A"
established() { birdc -s "$RR_T/bird-$1.ctl" show protocols peer 2>/dev/null | grep -q Established; }
rr_wait 30 eval 'established c && established a' ||
    rr_fail "no BGP session within 30 s: $(birdc -s "$RR_T/bird-c.ctl" show protocols all peer 2>&1 | tail -n 20)"
rr_wait 10 eval 'birdc -s "$RR_T/bird-c.ctl" show route 198.51.100.0/24 2>/dev/null | grep -q "198.51.100.0/24"' ||
    rr_fail "the control namespace's BIRD has not 198.51.100.0/24: $(birdc -s "$RR_T/bird-c.ctl" show route 2>&1)"
rr_stats || rr_fail "stats"
rr_ok "BGP Established between A (AS 65002) and the control namespace (AS 65001) through port a; 198.51.100.0/24 learnt (punt_to_host $(rr_ctr router.punt_to_host), punt_from_host $(rr_ctr router.punt_from_host))"
rr_stop
rr_census_ok
echo "PASS cp_bgp"
