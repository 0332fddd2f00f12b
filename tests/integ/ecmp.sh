#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/ecmp.sh: routes with several next hops (ECMP) through the real
# router, IPv4 and IPv6 at once. Port b's TAP is bridged, in namespace B, to
# four next-hop namespaces NH1..NH4 (10.62.N.11..14, 2001:db8:62::11..14),
# each of which takes 10.70.N.0/24 and 2001:db8:70::/64 as its own and
# records, per datagram to UDP port 9, the flow it belongs to (a sink per
# namespace: the capture on each next hop's link; tests/lib/ecmp.sh). Host A
# sends 64 UDP flows of each family, one datagram per flow per round.
#   - `route add PREFIX via NH1 via NH2` (both families): every flow arrives
#     at one next hop, the same in every round, both next hops get flows;
#     the router's forwarded counters count every datagram;
#   - `route replace ... nexthop via ... weight W` with four: every next hop
#     gets flows, each flow stays on one; `route show` and --json print the
#     group (four next hops and their weights); `route save` writes it in a
#     line that reads back;
#   - the supervisor killed and another adopting the services: the groups
#     are rebuilt in the new FIBs, runtime, and every flow keeps its next hop;
#   - NH2's link down: its neighbour fails (reachable, then stale, probes
#     unanswered: the manifest's short neighbour timers, neigh_reachable_ms
#     2000, neigh_retrans_ms 300, neigh_delay_ms 500, bound it at about
#     4 s; the test allows 12), and from then on its flows arrive at the
#     other three, each at one, while the other flows stay where they were;
#     NH2's link up again: its flows come back (within 10 s: the router asks
#     for it every retransmit round);
#   - `route del` removes both groups; a new `up` adds back what `route
#     save` wrote, groups and all.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init ecmp
rr_need ip

n=$(($$ % 250 + 1))
P4=10.70.$n.0/24 D4=10.70.$n.1 P6=2001:db8:70::/64 D6=2001:db8:70::1
RR_ADDR6_A=2001:db8:61::1/64 RR_ADDR6_B=2001:db8:62::1/64
RR_ROUTER_EXTRA='neigh_reachable_ms = 2000\nneigh_retrans_ms = 300\nneigh_delay_ms = 500'
rr_topology
rr_start
rr_hosts_ipv6 2001:db8:61 2001:db8:62 routes

. "$(dirname "$0")/../lib/ecmp.sh"
ecmp_next_hops

# ---- two next hops ----
rr_c route add "$P4" via "$RR_NET_B.11" via "$RR_NET_B.12"
rr_said "route add $P4 via NH1 via NH2" "added $P4"
rr_c route add "$P6" via 2001:db8:62::11 via 2001:db8:62::12
rr_said "route add $P6 via NH1 via NH2" "added $P6"
rr_stats || rr_fail stats
settle "two next hops"
rr_stats || rr_fail stats
f0=$(rr_ctr router.forwarded) g0=$(rr_ctr router.forwarded_ipv6)
m=$(marks)
for r in 1 2 3; do
    round
    rr_wait 10 all_arrived "$m" || rr_fail "round $r: not every flow arrived: $(seen_since "$m" | wc -l) of 128"
done
map2=$(seen_since "$m")
check_map "$map2" "1 2" 8 "two next hops"
rr_stats || rr_fail stats
[ $(($(rr_ctr router.forwarded) - f0)) -ge 192 ] && [ $(($(rr_ctr router.forwarded_ipv6) - g0)) -ge 192 ] ||
    rr_fail "forwarded counters: $(($(rr_ctr router.forwarded) - f0)) IPv4, $(($(rr_ctr router.forwarded_ipv6) - g0)) IPv6, expected 192 each"
rr_ok "two next hops: 64 flows a family over both ($(awk '$1 == 4 { print $3 }' <<<"$map2" | sort | uniq -c | tr -s ' \n' ' ')), each flow at one in 3 rounds"

# ---- four next hops, weights ----
rr_c route replace "$P4" nexthop via "$RR_NET_B.11" weight 1 nexthop via "$RR_NET_B.12" weight 1 \
    nexthop via "$RR_NET_B.13" weight 2 nexthop via "$RR_NET_B.14" weight 1
rr_said "route replace $P4 with four" "replaced $P4"
rr_c route replace "$P6" via 2001:db8:62::11 via 2001:db8:62::12 via 2001:db8:62::13 weight 2 via 2001:db8:62::14
rr_said "route replace $P6 with four" "replaced $P6"
settle "four next hops"
m=$(marks)
for r in 1 2 3; do
    round
    rr_wait 10 all_arrived "$m" || rr_fail "four: round $r: not every flow arrived"
done
map4=$(seen_since "$m")
check_map "$map4" "1 2 3 4" 4 "four next hops"
rr_ok "four next hops: every one gets flows ($(awk '$1 == 4 { print $3 }' <<<"$map4" | sort | uniq -c | tr -s ' \n' ' ')), each flow at one"

rr_c route show "$P4"
grep -q "^$P4 *$RR_NET_B.11 *b *runtime *weight 1$" <<<"$out" && grep -q "^ *$RR_NET_B.13 *b *weight 2$" <<<"$out" ||
    rr_fail "route show $P4: $out"
rr_c route show --json
"$RR_PY" -c '
import json, sys
d = json.loads(sys.argv[1])
for key, pfx in (("routes", sys.argv[2]), ("routes6", sys.argv[3])):
    r = [x for x in d[key] if x["prefix"] == pfx]
    assert len(r) == 1, (key, r)
    nh = r[0]["nexthops"]
    assert len(nh) == 4 and sorted(x["weight"] for x in nh) == [1, 1, 1, 2], nh
    assert all(x["port"] == "b" for x in nh), nh
' "$out" "$P4" "$P6" || rr_fail "route show --json: $out"
rr_c route save
[ "$rc" = 0 ] || rr_fail "route save: $err"
grep -qxF "$P4 via $RR_NET_B.11 weight 1 via $RR_NET_B.12 weight 1 via $RR_NET_B.13 weight 2 via $RR_NET_B.14 weight 1" "$RR_T/run/routes" ||
    rr_fail "route save: no line for the group: $(cat "$RR_T/run/routes")"
grep -qxF "$P6 via 2001:db8:62::11 weight 1 via 2001:db8:62::12 weight 1 via 2001:db8:62::13 weight 2 via 2001:db8:62::14 weight 1" "$RR_T/run/routes" ||
    rr_fail "route save: no line for the IPv6 group: $(cat "$RR_T/run/routes")"
rr_ok "route show, --json and route save print the groups"

# ---- the supervisor dies; the next one adopts the services, the groups stay ----
ecmp_adopt
rr_c route show "$P4"
[ "$(grep -c "weight" <<<"$out")" = 4 ] && grep -q "^$P4 .* runtime *weight 1$" <<<"$out" ||
    rr_fail "after adoption, route show $P4: $out"
settle "after adoption"
m=$(marks)
round
rr_wait 10 all_arrived "$m" || rr_fail "after adoption: not every flow arrived"
[ "$(seen_since "$m")" = "$map4" ] || rr_fail "after adoption, flows moved: $(diff <(echo "$map4") <(seen_since "$m") | head -5)"
rr_ok "a new supervisor adopted the services: both groups kept (runtime), every flow on its next hop"

# ---- NH2 fails, then comes back ----
all128() { [ "$(awk '{ print $1, $2 }' <<<"$now_map" | sort -u | wc -l)" = 128 ]; }
as_before() { all128 && [ "$now_map" = "$map4" ]; }
# Rounds, half a second apart, until CHECK holds of the round's map
# ($now_map), at most SECS; 1 if it never did. $took: the milliseconds.
rounds_until() { # rounds_until SECS CHECK
    local t0
    rr_now
    t0=$RR_NOW
    while :; do
        m=$(marks)
        round
        rr_msleep 500
        now_map=$(seen_since "$m")
        rr_now
        took=$(((RR_NOW - t0) / 1000))
        "$2" && return 0
        [ "$took" -lt $(($1 * 1000)) ] || return 1
    done
}

ip -n "${NH_NS[2]}" link set eth0 down
# Every flow arrives again: NH2's at the others, each at one; the others stay.
rounds_until 12 all128 ||
    rr_fail "NH2's flows did not move within 12 s: $(wc -l <<<"$now_map") of 128 flows arrive; $("$RR" neigh show -S "$RR_SOCK")"
check_map "$now_map" "1 3 4" 1 "NH2 down"
while read -r fam port nh; do
    was=$(awk -v f="$fam" -v p="$port" '$1 == f && $2 == p { print $3 }' <<<"$map4")
    [ "$was" = 2 ] || [ "$was" = "$nh" ] || rr_fail "NH2 down: flow IPv$fam $port moved from NH$was to NH$nh"
done <<<"$now_map"
rr_ok "NH2's link down: its flows at the others within $took ms, the others' flows where they were"

ip -n "${NH_NS[2]}" link set eth0 up
rounds_until 10 as_before ||
    rr_fail "NH2's flows did not come back within 10 s: $(diff <(echo "$map4") <(echo "$now_map") | head -5)"
rr_ok "NH2's link up: every flow back on its next hop within $took ms"

rr_c route del "$P4"
rr_said "route del $P4" "deleted $P4"
rr_c route del "$P6"
rr_said "route del $P6" "deleted $P6"
rr_c route show "$P4"
! grep -q "$P4" <<<"$out" || rr_fail "route del: $P4 still shown: $out"
rr_stop
rr_census_ok

# ---- a new start adds back what route save wrote, groups and all ----
rr_up
rr_c route show
grep -q "^$P4 *$RR_NET_B.11 *b *runtime *weight 1$" <<<"$out" && [ "$(grep -c "weight" <<<"$out")" = 8 ] ||
    rr_fail "after a new up, route show: $out"
grep -q "2 saved routes added" "$RR_LOG" || rr_fail "no \"2 saved routes added\" in the log"
rr_ok "a new up added both saved groups back (runtime, four next hops each)"
rr_stop
rr_census_ok
t_pass ecmp
