#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_ipv6.sh: IPv6 through the real router (rr-router)
# between two TAP ports, each in its own namespace (as router_basic.sh for
# IPv4). The router has 2001:db8:61:N::1/64 on port a, 2001:db8:62:N::1/64 on
# port b (mtu $RR_MTU_B = 1280), and its EUI-64 link-local address on each;
# the hosts have ::2 on their networks (no DAD) and a default route via the
# router's global address. No static neighbours: Neighbor Discovery
# resolves everything. Linux's IPv6 forwarding is off in every namespace.
#   - ping -6 the router's global address on each host's own port, its far
#     address, and its link-local address (%dev): echo replies, hop limit 64;
#   - the hosts' solicitations are answered (nd_advert_tx) and teach the
#     router (nd_learned); an address of B that never spoke is resolved by
#     the router's own solicitation (nd_solicit_tx, nd_advert_rx); `neigh show` lists
#     both hosts as IPv6 neighbours, `route show` both connected networks;
#   - ping -6 A -> B and B -> A through the router: hop limit 64 arrives as 63;
#   - traceroute -6 A -> B: hop 1 is the router's address on A's side (time
#     exceeded from the router), hop 2 is B;
#   - ping -6 an unrouted prefix: Destination unreachable (no route);
#   - tracepath -6 A -> B finds the 1280-byte path MTU (Packet Too Big from
#     the router: icmp6_too_big_tx);
#   - iperf3 -6 TCP (1 and 4 streams) and UDP A -> B, every datagram through;
#   - `route add`/`route del` of an IPv6 prefix via B changes the path;
#     `route get` picks the longest prefix; `route replace` under a ping
#     flow loses no echo;
#   - every malformed-input counter stays 0, no service restarted;
#   - a restarted router forwards A -> B at once, without soliciting B again
#     (the IPv6 neighbour table is in shared memory);
#   - at shutdown every buffer is back in the pool.
# traceroute, tracepath and iperf3 are required (./run installs them).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_ipv6
rr_need_hard traceroute tracepath iperf3

n=$(($$ % 250 + 1))
P6_A=2001:db8:61:$(printf '%x' "$n")
P6_B=2001:db8:62:$(printf '%x' "$n")
GW6_A=$P6_A::1 GW6_B=$P6_B::1 HOST6_A=$P6_A::2 HOST6_B=$P6_B::2
RR_ADDR6_A=$GW6_A/64 RR_ADDR6_B=$GW6_B/64 RR_MTU_B=1280
rr_topology
for ns in "$RR_NS_A" "$RR_NS_B"; do
    rr_in "$ns" sysctl -qw net.ipv6.conf.all.forwarding=0 net.ipv6.conf.default.forwarding=0 ||
        rr_fail "cannot turn IPv6 forwarding off in $ns"
    [ "$(rr_in "$ns" sysctl -n net.ipv6.conf.all.forwarding)" = 0 ] || rr_fail "IPv6 forwarding is on in $ns"
done
rr_start
rr_hosts_ipv6 "$P6_A" "$P6_B" routes
rr_ok "router up: A $RR_NS_A ($HOST6_A) -- $GW6_A [router] $GW6_B -- B $RR_NS_B ($HOST6_B), port b mtu 1280"

ping6_ok() { # ping6_ok NS DST COUNT [PING ARGS]: fails the test unless every echo is answered
    local ns=$1 dst=$2 c=$3
    shift 3
    local out
    out=$(rr_in "$ns" ping -6 -n -c "$c" -i 0.2 -W 2 "$@" "$dst" 2>&1) || rr_fail "ping -6 $dst from $ns failed: $out"
    grep -q " $c received" <<<"$out" || rr_fail "ping -6 $dst from $ns lost replies: $out"
    PING_OUT=$out
}

# ---- the router's own addresses ----
ping6_ok "$RR_NS_A" "$GW6_A" 3
grep -q "ttl=64" <<<"$PING_OUT" || rr_fail "the router's echo reply should carry hop limit 64: $PING_OUT"
rr_ok "A -> router $GW6_A: 3/3, hlim 64"
ping6_ok "$RR_NS_B" "$GW6_B" 3
rr_ok "B -> router $GW6_B: 3/3"
ping6_ok "$RR_NS_A" "$GW6_B" 2
rr_ok "A -> router $GW6_B (far side): 2/2"
# Its link-local address: the EUI-64 of port a's MAC, as A's kernel learnt it.
mac_a=$(ip -n "$RR_NS_A" -6 neigh show "$GW6_A" dev "$RR_IF_A" | awk '{ for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1) }')
[ -n "$mac_a" ] || rr_fail "A did not resolve $GW6_A by ND: $(ip -n "$RR_NS_A" -6 neigh show)"
IFS=: read -r m0 m1 m2 m3 m4 m5 <<<"$mac_a"
LL_A=$(printf 'fe80::%x:%xff:fe%s:%x' $((((0x$m0 ^ 2) << 8) | 0x$m1)) $((0x$m2)) "$m3" $(((0x$m4 << 8) | 0x$m5)))
ping6_ok "$RR_NS_A" "$LL_A%$RR_IF_A" 3
rr_ok "A -> router $LL_A%$RR_IF_A (link-local, EUI-64 of $mac_a): 3/3"

# ---- through the router ----
ping6_ok "$RR_NS_A" "$HOST6_B" 5
grep -q "ttl=63" <<<"$PING_OUT" || rr_fail "B's replies should arrive with hop limit 63 (one router hop): $PING_OUT"
rr_ok "A -> B: 5/5, hlim 63"
ping6_ok "$RR_NS_B" "$HOST6_A" 5
rr_ok "B -> A: 5/5"
out=$(rr_in "$RR_NS_A" ping -6 -n -q -c 200 -i 0.002 -W 2 "$HOST6_B" 2>&1) || rr_fail "200 pings A -> B: $out"
grep -q " 200 received" <<<"$out" || rr_fail "200 pings A -> B lost replies: $out"
rr_ok "A -> B 200 echoes at 2 ms: none lost"

# ---- Neighbor Discovery, route and neigh show ----
# A second address on B that never spoke: the router must solicit it (to
# its solicited-node group) and hold the echoes until B advertises it.
rr_stats || rr_fail "stats"
ns0=$(rr_ctr router.nd_solicit_tx)
rr_in "$RR_NS_B" ip -6 addr add "$P6_B::3/64" dev "$RR_IF_B" nodad || rr_fail "addr add $P6_B::3"
ping6_ok "$RR_NS_A" "$P6_B::3" 2
rr_stats || rr_fail "stats"
[ "$(rr_ctr router.nd_solicit_tx)" -gt "$ns0" ] || rr_fail "nd_solicit_tx did not rise ($ns0 -> $(rr_ctr router.nd_solicit_tx))"
for c in nd_advert_tx nd_solicit_tx nd_solicit_rx nd_advert_rx forwarded_ipv6 icmp6_echo_reply_tx; do
    [ "$(rr_ctr "router.$c")" -ge 1 ] || rr_fail "router.$c is $(rr_ctr "router.$c"), expected >= 1"
done
[ "$(rr_ctr router.nd_learned)" -ge 2 ] || rr_fail "nd_learned $(rr_ctr router.nd_learned), expected >= 2"
ns_out=$("$RR" neigh show --json -S "$RR_SOCK") || rr_fail "neigh show --json"
got=$("$RR_PY" -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join(sorted(n["address"] + "@" + n["port"] for n in d["neighbours6"] if n["state"] != "incomplete")))' <<<"$ns_out") ||
    rr_fail "neigh show --json: $ns_out"
for want in "$HOST6_A@a" "$HOST6_B@b"; do
    grep -qw -- "$want" <<<"$got" || rr_fail "neigh show --json has no $want: $got"
done
"$RR" neigh show -S "$RR_SOCK" | grep -q "^$HOST6_B " || rr_fail "neigh show has no row for $HOST6_B"
rt_out=$("$RR" route show -S "$RR_SOCK") || rr_fail "route show"
grep -Eq "^$P6_A::/64 +- +a +connected$" <<<"$rt_out" && grep -Eq "^$P6_B::/64 +- +b +connected$" <<<"$rt_out" ||
    rr_fail "route show lacks the connected IPv6 networks: $rt_out"
rr_ok "ND: solicit rx/tx $(rr_ctr router.nd_solicit_rx)/$(rr_ctr router.nd_solicit_tx), advert rx/tx $(rr_ctr router.nd_advert_rx)/$(rr_ctr router.nd_advert_tx), learned $(rr_ctr router.nd_learned); neigh show: $got"

# ---- traceroute -6 ----
te0=$(rr_ctr router.icmp6_time_exceeded_tx)
out=$(rr_in "$RR_NS_A" traceroute -6 -n -w 2 -q 1 -m 5 "$HOST6_B" 2>&1) || rr_fail "traceroute -6: $out"
hop1=$(awk '$1 == "1" { print $2 }' <<<"$out")
hop2=$(awk '$1 == "2" { print $2 }' <<<"$out")
[ "$hop1" = "$GW6_A" ] || rr_fail "traceroute -6: hop 1 is '$hop1', expected the router's $GW6_A: $out"
[ "$hop2" = "$HOST6_B" ] || rr_fail "traceroute -6: hop 2 is '$hop2', expected $HOST6_B: $out"
out=$(rr_in "$RR_NS_A" ping -6 -n -c 1 -t 1 -W 2 "$HOST6_B" 2>&1)
grep -q "^From $GW6_A .*Time exceeded" <<<"$out" || rr_fail "ping -6 -t 1: no time exceeded from $GW6_A: $out"
rr_stats || rr_fail "stats"
te1=$(rr_ctr router.icmp6_time_exceeded_tx)
[ "$te1" -gt "$te0" ] || rr_fail "icmp6_time_exceeded_tx did not rise ($te0 -> $te1)"
rr_ok "traceroute -6: 1 $hop1, 2 $hop2; ping -t 1: Time exceeded from $GW6_A; icmp6_time_exceeded_tx $te0 -> $te1"

# ---- no route ----
nu0=$(rr_ctr router.icmp6_unreach_tx)
out=$(rr_in "$RR_NS_A" ping -6 -n -c 2 -i 0.2 -W 2 2001:db8:ffff::1 2>&1)
grep -qi "^From $GW6_A .*Destination unreachable: No route" <<<"$out" ||
    rr_fail "ping -6 2001:db8:ffff::1: no destination unreachable from $GW6_A: $out"
rr_stats || rr_fail "stats"
nu1=$(rr_ctr router.icmp6_unreach_tx)
[ $((nu1 - nu0)) -ge 2 ] || rr_fail "icmp6_unreach_tx rose by $((nu1 - nu0)), expected 2"
rr_ok "ping -6 2001:db8:ffff::1: No route from $GW6_A; icmp6_unreach_tx $nu0 -> $nu1"

# ---- route add / del: a prefix behind B ----
rr_in "$RR_NS_B" ip -6 addr add 2001:db8:77::1/128 dev lo || rr_fail "addr on B's lo"
"$RR" route add 2001:db8:77::/48 via "$HOST6_B" -S "$RR_SOCK" >/dev/null || rr_fail "route add 2001:db8:77::/48"
ping6_ok "$RR_NS_A" 2001:db8:77::1 2
"$RR" route show --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
r = json.load(sys.stdin)["routes6"]
sys.exit(0 if any(x["prefix"] == "2001:db8:77::/48" and x["via"] == sys.argv[1] and x["port"] == "b" for x in r) else 1)' "$HOST6_B" ||
    rr_fail "route show --json lacks 2001:db8:77::/48 via $HOST6_B"
# route get: the longest prefix; a /64 inside the /48 wins for its addresses.
"$RR" route add 2001:db8:77:1::/64 via "$HOST6_B" port b -S "$RR_SOCK" >/dev/null || rr_fail "route add 2001:db8:77:1::/64"
out=$("$RR" route get 2001:db8:77:1::5 -S "$RR_SOCK") || rr_fail "route get 2001:db8:77:1::5: $out"
[ "$out" = "2001:db8:77:1::5: 2001:db8:77:1::/64 via $HOST6_B port b (runtime)" ] || rr_fail "route get 2001:db8:77:1::5: $out"
out=$("$RR" route get 2001:db8:77:2::5 --json -S "$RR_SOCK") || rr_fail "route get --json: $out"
"$RR_PY" -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["route"]["prefix"] == "2001:db8:77::/48" and d["route"]["via"] == sys.argv[2], d' "$out" "$HOST6_B" ||
    rr_fail "route get 2001:db8:77:2::5 --json: $out"
err=$("$RR" route get 2001:db8:79::1 -S "$RR_SOCK" 2>&1) && rr_fail "route get of an unrouted address succeeded: $err"
grep -q "no route to 2001:db8:79::1" <<<"$err" || rr_fail "route get of an unrouted address: $err"
"$RR" route del 2001:db8:77:1::/64 -S "$RR_SOCK" >/dev/null || rr_fail "route del 2001:db8:77:1::/64"
# route replace under a ping flow: not one echo lost (the prefix never vanishes).
rr_in "$RR_NS_A" ping -6 -n -q -c 150 -i 0.01 -W 2 2001:db8:77::1 >"$RR_T/p6r.out" 2>&1 &
P6R=$!
RR_EXTRA_PIDS+=("$P6R")
rr_msleep 400
out=$("$RR" route replace 2001:db8:77::/48 via "$HOST6_B" port b -S "$RR_SOCK") || rr_fail "route replace: $out"
[ "$out" = "replaced 2001:db8:77::/48" ] || rr_fail "route replace: $out"
wait "$P6R"
grep -q " 150 received" "$RR_T/p6r.out" || rr_fail "ping -6 through route replace lost echoes: $(cat "$RR_T/p6r.out")"
rr_ok "route get picks the longest IPv6 prefix (text and --json), an unrouted address is refused; route replace under 150 echoes lost none"
err=$("$RR" route add 2001:db8:78::/48 via 2001:db8:99::1 -S "$RR_SOCK" 2>&1) && rr_fail "route add via an off-link gateway succeeded"
grep -q "gateway 2001:db8:99::1 is on none of the ports' IPv6 networks" <<<"$err" || rr_fail "route add error: $err"
"$RR" route del 2001:db8:77::/48 -S "$RR_SOCK" >/dev/null || rr_fail "route del 2001:db8:77::/48"
out=$(rr_in "$RR_NS_A" ping -6 -n -c 1 -W 2 2001:db8:77::1 2>&1)
grep -qi "Destination unreachable" <<<"$out" || rr_fail "after route del, 2001:db8:77::1 should be unreachable: $out"
rr_ok "route add/del 2001:db8:77::/48 via $HOST6_B: reachable, then unreachable; off-link gateway refused"

# ---- path MTU: 1280 on port b, never fragmented ----
tb0=$(rr_ctr router.icmp6_too_big_tx)
out=$(rr_in "$RR_NS_A" tracepath -6 -n -m 5 "$HOST6_B" 2>&1) || true
grep -q "pmtu 1280" <<<"$out" || rr_fail "tracepath -6 did not find the 1280 path MTU: $out"
rr_stats || rr_fail "stats"
tb1=$(rr_ctr router.icmp6_too_big_tx)
[ "$tb1" -gt "$tb0" ] || rr_fail "icmp6_too_big_tx did not rise ($tb0 -> $tb1): $out"
rr_ok "tracepath -6: pmtu 1280 ($(grep -m1 -o 'Resume: .*' <<<"$out")); icmp6_too_big_tx $tb0 -> $tb1"

# ---- iperf3 -6: TCP 1 and 4 streams, and UDP ----
rr_iperf_server "$RR_NS_B" "$HOST6_B" 5201
out=$(rr_in "$RR_NS_A" iperf3 -6 -c "$HOST6_B" -p 5201 -t 2 -J 2>&1) || rr_fail "iperf3 -6 TCP: $out"
tcp=$("$RR_PY" -c 'import json,sys; d=json.load(sys.stdin); print("%.0f" % (d["end"]["sum_received"]["bits_per_second"] / 1e6))' <<<"$out") ||
    rr_fail "iperf3 -6 TCP output: $out"
[ "$tcp" -gt 0 ] || rr_fail "iperf3 -6 TCP: $tcp Mbit/s"
out=$(rr_in "$RR_NS_A" iperf3 -6 -c "$HOST6_B" -p 5201 -t 2 -P 4 -J 2>&1) || rr_fail "iperf3 -6 TCP, 4 streams: $out"
tcp4=$("$RR_PY" -c 'import json,sys; d=json.load(sys.stdin); print("%.0f" % (d["end"]["sum_received"]["bits_per_second"] / 1e6))' <<<"$out") ||
    rr_fail "iperf3 -6 TCP, 4 streams, output: $out"
[ "$tcp4" -gt 0 ] || rr_fail "iperf3 -6 TCP, 4 streams: $tcp4 Mbit/s"
# ringrouter's drops and full rings, as "key=value" words: compared before
# and after the UDP run, to tell a loss inside it from one in the hosts.
path_drops() {
    rr_stats || rr_fail "stats"
    local k
    for k in "${!RRS[@]}"; do
        [[ $k == *drop* || $k == *full* ]] && [ "${RRS[$k]}" != 0 ] && printf '%s=%s ' "$k" "${RRS[$k]}"
    done | tr ' ' '\n' | sort | tr '\n' ' '
}
drops0=$(path_drops)
out=$(rr_in "$RR_NS_A" iperf3 -6 -c "$HOST6_B" -p 5201 -u -b 20M -l 1200 -t 2 -J 2>&1) || rr_fail "iperf3 -6 UDP: $out"
udp=$("$RR_PY" -c '
import json, sys
d = json.load(sys.stdin)["end"]["sum"]
print(d["packets"], d["lost_packets"])' <<<"$out") || rr_fail "iperf3 -6 UDP output: $out"
read -r pk lost <<<"$udp"
[ "$pk" -gt 0 ] || rr_fail "iperf3 -6 UDP: no datagram sent"
if [ "$lost" -gt $((pk / 100)) ]; then
    drops1=$(path_drops)
    # Nothing dropped inside ringrouter: the hosts' queues lost them (iperf3
    # sends in bursts, and a loaded machine runs its receiver late).
    if [ "$drops1" = "$drops0" ]; then
        t_timing_fail "iperf3 -6 UDP: $lost of $pk datagrams lost, none of them inside ringrouter (its drop counters did not move)"
    else
        rr_fail "iperf3 -6 UDP: $lost of $pk datagrams lost; ringrouter's drop counters went from [${drops0}] to [${drops1}]"
    fi
fi
rr_ok "iperf3 -6: TCP 1 stream $tcp Mbit/s, 4 streams $tcp4 Mbit/s; UDP 20 Mbit/s, $lost of $pk datagrams lost"

# ---- nothing malformed, nothing restarted ----
rr_stats || rr_fail "stats"
rr_zero "${RR_MALFORMED[@]}" router.drop6_runt router.drop6_bad_version router.drop6_bad_payload_length router.nd_bad \
    router.drop6_icmp_bad_checksum router.drop6_extension_headers
rr_no_restarts
rr_ok "no malformed-input drops, no bad handles, no restarts; forwarded_ipv6 $(rr_ctr router.forwarded_ipv6)"

# ---- a restarted router keeps its IPv6 neighbours (shared memory) ----
"$RR" restart router -S "$RR_SOCK" >/dev/null || rr_fail "restart router"
rr_wait 10 rr_all_up || rr_fail "the router was not up again within 10 s"
rr_stats || rr_fail "stats"
nds0=$(rr_ctr router.nd_solicit_tx)
ping6_ok "$RR_NS_A" "$HOST6_B" 3
rr_stats || rr_fail "stats"
[ "$(rr_ctr router.nd_solicit_tx)" = "$nds0" ] ||
    rr_fail "the restarted router solicited B again ($nds0 -> $(rr_ctr router.nd_solicit_tx)): its table was lost"
rr_ok "restart router: A -> B 3/3 at once, no new solicitation"

rr_stop
rr_census_ok
t_pass router_ipv6
