#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/shaper_match.sh: shaper class matching on the wire, and prio.
# Port b shaped at 20mbit with the classes (in this order):
#   ef    rate 1mbit   match = dscp 46
#   from3 rate 1mbit   match = src 10.61.N.3/32   (a second address of A)
#   to3   rate 1mbit   match = dst 10.62.N.3/32   (a second address of B)
#   net6  rate 1mbit   match = src 2001:db8:61:N::/64 (A's IPv6 network)
#   hi    rate 2mbit   prio 1, match = proto udp, dport 5301
#   lo    rate 2mbit   prio 6, match = proto udp, dport 5302
#   rest  rate 1mbit   default
# Each check counts per-class tx_pkts in `shaper show --json` and wants the
# exact number of packets sent in the class that should take them and none
# in the other matching classes:
#   - 5 pings A -> B with DSCP 46 (ping -Q 184): ef +5;
#   - 5 pings from A's 10.61.N.3: from3 +5;
#   - 5 pings to B's 10.62.N.3: to3 +5;
#   - 4 pings from 10.61.N.3 with DSCP 46: ef +4, from3 +0 (the first match wins);
#   - unmarked pings A -> B: rest, none of the above (net6, an IPv6
#     prefix, never takes IPv4);
#   - 5 ping -6 A -> B: net6 +5; 3 with traffic class DSCP 46: ef +3,
#     net6 +0 (the first match wins, DSCP takes both families);
#   - UDP to 5301 and 5302: hi and lo.
# Then prio: UDP at 20 Mbit/s to each of hi and lo together (both over their
# rates, borrowing from the same 20mbit port): hi (prio 1) borrows first, so
# it gets at least 3 times lo's rate, and lo still gets about its guaranteed
# 2mbit. That is a throughput measurement: missing it alone exits 75.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init shaper_match
rr_need iperf3 ss
rr_shaper_init

SECS=${RR_SHAPER_SECS:-4}
RR_SERVICES=(router driver-a driver-b shaper-b)
n=$(($$ % 250 + 1))
A3=10.61.$n.3 B3=10.62.$n.3
P6_A=2001:db8:61:$(printf '%x' "$n") P6_B=2001:db8:62:$(printf '%x' "$n")
RR_ADDR6_A=$P6_A::1/64 RR_ADDR6_B=$P6_B::1/64
rr_topology "$(printf '%s\n' '[shaper b]' 'rate = 20mbit' '' \
    '[class b ef]' 'rate = 1mbit' 'match = dscp 46' '' \
    '[class b from3]' 'rate = 1mbit' "match = src $A3/32" '' \
    '[class b to3]' 'rate = 1mbit' "match = dst $B3/32" '' \
    '[class b net6]' 'rate = 1mbit' "match = src $P6_A::/64" '' \
    '[class b hi]' 'rate = 2mbit' 'prio = 1' 'match = proto udp, dport 5301' '' \
    '[class b lo]' 'rate = 2mbit' 'prio = 6' 'match = proto udp, dport 5302' '' \
    '[class b rest]' 'rate = 1mbit' 'default = yes')"
rr_start
ip -n "$RR_NS_A" addr add "$A3/24" dev "$RR_IF_A" || rr_fail "addr $A3"
ip -n "$RR_NS_B" addr add "$B3/24" dev "$RR_IF_B" || rr_fail "addr $B3"
rr_resolve
rr_hosts_ipv6 "$P6_A" "$P6_B" routes
# The router resolves the second addresses before we count.
for x in "-I $A3 $RR_HOST_B" "$B3"; do
    # shellcheck disable=SC2086
    out=$(rr_in "$RR_NS_A" ping -n -c 1 -W 2 $x 2>&1) || rr_fail "ping $x: $out"
done
out=$(rr_in "$RR_NS_A" ping -6 -n -c 1 -W 2 "$P6_B::2" 2>&1) || rr_fail "ping -6 $P6_B::2: $out"
out=$("$RR" shaper show b -S "$RR_SOCK" 2>&1) || rr_fail "shaper show b: $out"
grep -Eq "^  net6 .*  src $P6_A::/64\$" <<<"$out" || rr_fail "shaper show b does not show net6's match: $out"
grep -Eq "^  rest .*  default\$" <<<"$out" || rr_fail "shaper show b does not show rest as the default: $out"
rr_ok "router up, port b shaped at 20mbit: classes ef (dscp 46), from3 (src $A3), to3 (dst $B3), net6 (src $P6_A::/64), hi/lo (udp 5301/5302, prio 1/6), rest"

declare -A C0 C1
classes() { rr_shaper_classes b "$1"; } # classes ARRAY: every class's tx_pkts and tx_bytes
moved() { [ $((${C1[$1]} - ${C0[$1]})) -ge "$2" ]; } # after classes C1
reached() { classes C1 && moved "$1" "$2"; }
# expect LABEL CLASS=N...: the first reaches its N (bounded), then each moved exactly by its N
expect() {
    local label=$1 kv got msg=
    shift
    rr_wait 5 reached "${1%%=*}" "${1#*=}" || true
    classes C1
    for kv in "$@"; do
        got=$((${C1[${kv%%=*}]} - ${C0[${kv%%=*}]}))
        [ "$got" = "${kv#*=}" ] || rr_fail "$label: class ${kv%%=*} released $got packets, expected ${kv#*=}"
        msg+="${kv%%=*} +$got "
    done
    rr_ok "$label: $msg"
}
pings() { # pings COUNT ARGS...: from A, every echo answered
    local c=$1 out
    shift
    out=$(rr_in "$RR_NS_A" ping -n -c "$c" -i 0.2 -W 2 "$@" 2>&1) || rr_fail "ping $*: $out"
    grep -q " $c received" <<<"$out" || rr_fail "ping $*: lost replies: $out"
}

classes C0
pings 5 -Q 184 "$RR_HOST_B"
expect "dscp 46" ef=5 from3=0 to3=0 net6=0 hi=0 lo=0
classes C0
pings 5 -I "$A3" "$RR_HOST_B"
expect "src $A3" from3=5 ef=0 to3=0 hi=0 lo=0
classes C0
pings 5 "$B3"
expect "dst $B3" to3=5 ef=0 from3=0 hi=0 lo=0
classes C0
pings 4 -Q 184 -I "$A3" "$RR_HOST_B"
expect "dscp 46 from $A3, first match" ef=4 from3=0 to3=0 hi=0 lo=0
# The router's own ARP and ND frames to B (a refresh of B's entry, or a
# router advertisement: port b has an IPv6 address, may fall in the
# window) leave through the shaper too, in rest: they are counted, and
# allowed on top of the 3 pings, not more.
arp_tx() {
    rr_stats || rr_fail "no stats"
    echo $(($(rr_ctr router.arp_request_tx) + $(rr_ctr router.arp_reply_tx) + $(rr_ctr router.nd_solicit_tx) +
        $(rr_ctr router.nd_advert_tx) + $(rr_ctr router.nd_router_advert_tx)))
}
arp0=$(arp_tx)
classes C0
pings 3 "$RR_HOST_B"
expect "unmarked" ef=0 from3=0 to3=0 net6=0 hi=0 lo=0
classes C1
arp=$(($(arp_tx) - arp0))
got=$((${C1[rest]} - ${C0[rest]}))
[ "$got" -ge 3 ] && [ "$got" -le $((3 + arp)) ] ||
    rr_fail "unmarked: class rest released $got packets, expected the 3 pings and at most the router's $arp ARP and ND frames"
rr_ok "unmarked: rest +$got (3 pings, $arp ARP and ND frames sent by the router meanwhile)"
classes C0
pings 5 -6 "$P6_B::2"
expect "ping -6 from $P6_A::2" net6=5 ef=0 from3=0 to3=0 hi=0 lo=0
classes C0
pings 3 -6 -Q 184 "$P6_B::2"
expect "ping -6 from $P6_A::2 with DSCP 46, first match" ef=3 net6=0 from3=0 to3=0 hi=0 lo=0

# ---- prio ----
rr_iperf_server "$RR_NS_B" "$RR_HOST_B" 5301
rr_iperf_server "$RR_NS_B" "$RR_HOST_B" 5302
classes C0
pids=()
for port in 5301 5302; do
    rr_in "$RR_NS_A" timeout $((SECS + 30)) iperf3 -c "$RR_HOST_B" -p $port -u -b 20M -l 1200 -t "$SECS" \
        --connect-timeout 3000 -J >"$RR_T/udp-$port.json" 2>"$RR_T/udp-$port.err" &
    pids+=($!)
    RR_EXTRA_PIDS+=($!)
done
for i in 0 1; do
    wait "${pids[$i]}" || rr_fail "iperf3 UDP to $((5301 + i)) failed: $(head -c 1000 "$RR_T/udp-$((5301 + i)).json") $(cat "$RR_T/udp-$((5301 + i)).err")"
done
classes C1
hi=$(((${C1[hi.bytes]} - ${C0[hi.bytes]}) * 8 / SECS / 1000)) # kbit/s on the wire
lo=$(((${C1[lo.bytes]} - ${C0[lo.bytes]}) * 8 / SECS / 1000))
moved hi 100 && moved lo 100 || rr_fail "prio: hi released $((${C1[hi]} - ${C0[hi]})), lo $((${C1[lo]} - ${C0[lo]})) packets: the UDP flows did not land in their classes"
rr_stats || rr_fail "stats"
rr_no_restarts
rr_stop
rr_census_ok
rr_ok "prio: hi (prio 1) ${hi} kbit/s, lo (prio 6) ${lo} kbit/s on the wire, both offered 20 Mbit/s"
if [ "$hi" -lt $((3 * lo)) ] || [ "$lo" -lt 1500 ]; then
    echo "TIMING: shaper_match: prio: hi $hi kbit/s should be at least 3 x lo ($lo kbit/s), and lo at least 1500 kbit/s (its rate 2mbit)"
    exit 75
fi
echo "PASS shaper_match: prio hi $hi kbit/s, lo $lo kbit/s"
