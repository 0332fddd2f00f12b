#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_basic.sh: the real router (rr-router) between two TAP
# ports, each in its own namespace, no static neighbours, no default route:
#   - ping the router's address on each host's own port (echo replies from
#     the router; both hosts' ARP requests teach it: neigh_learned >= 2);
#   - ping the router's far address from each side;
#   - ping A -> B and B -> A through the router (the router ARPs for the
#     hosts itself: arp_request_tx >= 1), TTL 64 arrives as 63;
#   - traceroute A -> B (ICMP and UDP): hop 1 is the router's address on A's
#     side, hop 2 is B (time exceeded from the router);
#   - ping -t 1 A -> B: "Time to live exceeded" from the router;
#   - ping an unrouted prefix: "Destination Net Unreachable" from the router;
#   - every counter of a malformed input stays 0, and at shutdown every
#     buffer is back in the pool.
# traceroute is required (./run installs it): missing, the test fails.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_basic
rr_need_hard traceroute # required: afxdp_basic fails without it too, so this one must not skip

rr_topology
rr_start
rr_ok "router up: A $RR_NS_A ($RR_HOST_A) -- $RR_GW_A [router] $RR_GW_B -- B $RR_NS_B ($RR_HOST_B)"

rr_stats || rr_fail "stats"
echo0=$(rr_ctr router.icmp_echo_reply_tx)

# ---- the router's own addresses ----
ping_ok() { # ping_ok NS DST COUNT: fails the test unless every echo is answered
    local out
    out=$(rr_in "$1" ping -n -c "$3" -i 0.2 -W 2 "$2" 2>&1) || rr_fail "ping $2 from $1 failed: $out"
    grep -q " $3 received" <<<"$out" || rr_fail "ping $2 from $1 lost replies: $out"
    PING_OUT=$out
}
rtt_avg() { sed -n 's|^rtt min/avg/max/mdev = [0-9.]*/\([0-9.]*\)/.*|\1|p' <<<"$PING_OUT"; }

ping_ok "$RR_NS_A" "$RR_GW_A" 3
rr_ok "A -> router $RR_GW_A: 3/3, avg $(rtt_avg) ms"
ping_ok "$RR_NS_B" "$RR_GW_B" 3
rr_ok "B -> router $RR_GW_B: 3/3, avg $(rtt_avg) ms"
ping_ok "$RR_NS_A" "$RR_GW_B" 2
rr_ok "A -> router $RR_GW_B (far side): 2/2"
ping_ok "$RR_NS_B" "$RR_GW_A" 2
rr_ok "B -> router $RR_GW_A (far side): 2/2"
grep -q "ttl=64" <<<"$PING_OUT" || rr_fail "the router's echo reply should carry TTL 64: $PING_OUT"
rr_stats || rr_fail "stats"
echo1=$(rr_ctr router.icmp_echo_reply_tx)
[ $((echo1 - echo0)) -ge 10 ] || rr_fail "icmp_echo_reply_tx rose by $((echo1 - echo0)), expected >= 10"
rr_ok "icmp_echo_reply_tx $echo0 -> $echo1"

# ---- through the router ----
ping_ok "$RR_NS_A" "$RR_HOST_B" 5
grep -q "ttl=63" <<<"$PING_OUT" || rr_fail "B's replies should arrive with TTL 63 (one router hop): $PING_OUT"
rtt_ab=$(rtt_avg)
rr_ok "A -> B: 5/5, ttl 63, avg $rtt_ab ms"
ping_ok "$RR_NS_B" "$RR_HOST_A" 5
rtt_ba=$(rtt_avg)
rr_ok "B -> A: 5/5, avg $rtt_ba ms"
# A flood-ish burst: 200 echoes, 2 ms apart, none lost.
out=$(rr_in "$RR_NS_A" ping -n -q -c 200 -i 0.002 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "200 pings A -> B: $out"
grep -q " 200 received" <<<"$out" || rr_fail "200 pings A -> B lost replies: $out"
rr_ok "A -> B 200 echoes at 2 ms: none lost ($(sed -n 's|^rtt min/avg/max/mdev = \(.*\)|\1|p' <<<"$out"))"

# ---- ARP with no static entries ----
rr_stats || rr_fail "stats"
learned=$(rr_ctr router.neigh_learned)
req_tx=$(rr_ctr router.arp_request_tx)
rep_tx=$(rr_ctr router.arp_reply_tx)
[ "$learned" -ge 2 ] || rr_fail "neigh_learned $learned, expected >= 2"
[ "$req_tx" -ge 1 ] || rr_fail "arp_request_tx $req_tx, expected >= 1"
[ "$rep_tx" -ge 2 ] || rr_fail "arp_reply_tx $rep_tx, expected >= 2"
mac_a=$(rr_router_mac "$RR_NS_A" "$RR_GW_A")
mac_b=$(rr_router_mac "$RR_NS_B" "$RR_GW_B")
if [ -z "$mac_a" ] || [ -z "$mac_b" ] || [ "$mac_a" = "$mac_b" ]; then rr_fail "the hosts did not resolve the router's two MACs: A '$mac_a', B '$mac_b'"; fi
rr_ok "ARP: neigh_learned $learned, arp_request_tx $req_tx, arp_reply_tx $rep_tx; router MACs $mac_a / $mac_b"

# ---- traceroute ----
te0=$(rr_ctr router.icmp_time_exceeded_tx)
for mode in -I ""; do
    # shellcheck disable=SC2086
    out=$(rr_in "$RR_NS_A" traceroute -n $mode -w 2 -q 1 -m 5 "$RR_HOST_B" 2>&1) || rr_fail "traceroute $mode: $out"
    hop1=$(awk '$1 == "1" { print $2 }' <<<"$out")
    hop2=$(awk '$1 == "2" { print $2 }' <<<"$out")
    [ "$hop1" = "$RR_GW_A" ] || rr_fail "traceroute ${mode:-(UDP)}: hop 1 is '$hop1', expected the router's $RR_GW_A: $out"
    [ "$hop2" = "$RR_HOST_B" ] || rr_fail "traceroute ${mode:-(UDP)}: hop 2 is '$hop2', expected $RR_HOST_B: $out"
    rr_ok "traceroute ${mode:-(UDP)}: 1 $hop1, 2 $hop2"
done

# ---- TTL expiry ----
out=$(rr_in "$RR_NS_A" ping -n -c 1 -t 1 -W 2 "$RR_HOST_B" 2>&1)
grep -q "^From $RR_GW_A .*Time to live exceeded" <<<"$out" || rr_fail "ping -t 1: no time exceeded from $RR_GW_A: $out"
rr_stats || rr_fail "stats"
te1=$(rr_ctr router.icmp_time_exceeded_tx)
[ "$te1" -gt "$te0" ] || rr_fail "icmp_time_exceeded_tx did not rise ($te0 -> $te1)"
rr_ok "ping -t 1: Time to live exceeded from $RR_GW_A; icmp_time_exceeded_tx $te0 -> $te1"

# ---- net unreachable ----
nu0=$(rr_ctr router.icmp_net_unreach_tx)
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 10.250.0.1 2>&1)
grep -q "^From $RR_GW_A .*Destination Net Unreachable" <<<"$out" ||
    rr_fail "ping 10.250.0.1: no net unreachable from $RR_GW_A: $out"
rr_stats || rr_fail "stats"
nu1=$(rr_ctr router.icmp_net_unreach_tx)
[ $((nu1 - nu0)) -ge 2 ] || rr_fail "icmp_net_unreach_tx rose by $((nu1 - nu0)), expected 2"
rr_ok "ping 10.250.0.1: Destination Net Unreachable from $RR_GW_A; icmp_net_unreach_tx $nu0 -> $nu1"

# ---- nothing malformed, nothing restarted ----
rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
rr_ok "no malformed-input drops, no bad handles, no restarts"

rr_stop
rr_census_ok
echo "PASS router_basic: rtt A->B $rtt_ab ms, B->A $rtt_ba ms"
