#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/filter_shaper.sh: rr-filter and rr-shaper on one port, in
# Linux's order (the forward and postrouting hooks, then the egress qdisc),
# with the filter's mark choosing the shaper's class as nftables' `meta mark
# set` feeds tc's fw filter (docs/filter.md, "Marks and the shaper"). Port b
# is filtered and shaped at 20mbit, classes (in this order):
#   marked  rate 2mbit, ceil 2mbit   match = mark 1 (forward: udp dport 5301, 5309, 5311)
#   pre     rate 1mbit               match = mark 2 (prerouting: from a, udp dport 5303)
#   rest    rate 10mbit              default
# Checks, each by the classes' counts of packets released (rest also takes
# the router's own ARP frames to B: at least, for it):
#   - 5 datagrams A -> B to 5301: marked +5; to 5303 (marked in prerouting,
#     carried to the egress): pre +5; to 5302 (no mark): rest +5 or more,
#     the others +0;
#   - the rules drop before the shaper: A's UDP to 5309 (marked 1, then a
#     drop rule) and B's TCP to A (the default drop) go unanswered, their
#     servers see nothing, and class marked releases nothing;
#   - `shaper show` spells the mark match;
#   - the shaper limits what the mark chose: UDP at 10 Mbit/s to 5311 for
#     3 s leaves at no more than the class's ceil (2mbit, and its burst),
#     while the same to 5312 (rest, 10mbit) gets more than twice that
#     (missing that alone is a throughput measurement: exit 75);
#   - no restarts, and the census is clean after `down`;
#   - then with [filter] ports = a, b shaped and not filtered: what A sends
#     B reaches b's shaper through the filter's egress (a second input
#     ring), and forward's mark still chooses the class.
set -u
. "$(dirname "$0")/../lib/filter.sh"
flt_init filter_shaper
rr_need iperf3 ss
rr_shaper_init
RR_SERVICES+=(shaper-b)
SECS=${RR_SHAPER_SECS:-3}

flt_rules "$RR_T/rules.nft" <<EOF
# filter_shaper's policy: marks for the shaper's classes
chain prerouting {
    iif "a" udp dport 5303 meta mark set 2
}
chain forward {
    type filter hook forward priority 0; policy drop;
    udp dport { 5301, 5309, 5311 } meta mark set 1
    ct state established,related accept
    ct state invalid drop
    udp dport 5309 drop
    iif "a" ct state new accept
}
EOF
rr_topology "$(printf '%s\n' '[filter]' "rules = $RR_T/rules.nft" '' '[shaper b]' 'rate = 20mbit' '' \
    '[class b marked]' 'rate = 2mbit' 'ceil = 2mbit' 'match = mark 1' '' \
    '[class b pre]' 'rate = 1mbit' 'match = mark 2' '' \
    '[class b rest]' 'rate = 10mbit' 'default = yes')"
rr_start
out=$("$RR" shaper show b -S "$RR_SOCK" 2>&1) || rr_fail "shaper show b: $out"
grep -Eq "^  marked .*  mark 1\$" <<<"$out" || rr_fail "shaper show b does not show marked's match: $out"
rr_ok "router up: A -- [filter, then shaper b at 20mbit: marked (mark 1), pre (mark 2), rest] -- B"

declare -A C0 C1
classes() { rr_shaper_classes b "$1"; } # classes ARRAY: every class of b's tx_pkts and tx_bytes
moved() { [ $((${C1[$1]} - ${C0[$1]})) -ge "$2" ]; }
# counted LABEL CLASS=N... [rest]: the first reaches its N (bounded), then
# each moved by exactly its N; rest, if named, by at least the first's N
counted() {
    local label=$1 first=${2%%=*} n=${2#*=} kv got msg=
    shift
    rr_wait 5 eval "classes C1 && moved $first $n" || true
    classes C1
    for kv in "$@"; do
        [ "$kv" = rest ] && kv=rest=$n
        got=$((${C1[${kv%%=*}]} - ${C0[${kv%%=*}]}))
        if [ "${kv%%=*}" = rest ] && [ "$got" -ge "${kv#*=}" ]; then
            :
        elif [ "$got" != "${kv#*=}" ]; then
            rr_fail "$label: class ${kv%%=*} released $got packets, expected ${kv#*=}"
        fi
        msg+="${kv%%=*} +$got "
    done
    rr_ok "$label: $msg"
}
datagrams() { # datagrams PORT: 5 answered UDP probes from A to B's PORT
    local i
    for i in 1 2 3 4 5; do flt_verdict "$RR_NS_A" udp "$RR_HOST_B" "$1" 0 "datagram $i to $1"; done
}

for port in 5301 5302 5303 5309; do flt_serve "$RR_NS_B" udp "$RR_HOST_B" $port; done
flt_serve "$RR_NS_A" tcp "$RR_HOST_A" 7002

# 1. The mark chooses the class: forward's, prerouting's, none.
classes C0
datagrams 5301
counted "forward's meta mark set 1" marked=5 pre=0
classes C0
datagrams 5303
counted "prerouting's meta mark set 2, carried to the egress" pre=5 marked=0
classes C0
datagrams 5302
counted "no mark" rest=5 marked=0 pre=0

# 2. Dropped by the rules, before the shaper.
classes C0
flt_verdict "$RR_NS_A" udp "$RR_HOST_B" 5309 2 "A to B's UDP 5309: the drop rule"
flt_verdict "$RR_NS_B" tcp "$RR_HOST_A" 7002 2 "B to A's TCP 7002: forward's policy drop"
[ ! -s "$RR_T/udp-5309.log" ] || rr_fail "B's UDP 5309 saw a peer: $(cat "$RR_T/udp-5309.log")"
[ ! -s "$RR_T/tcp-7002.log" ] || rr_fail "A's TCP 7002 saw a peer: $(cat "$RR_T/tcp-7002.log")"
classes C1
[ "${C1[marked]}" = "${C0[marked]}" ] ||
    rr_fail "marked, then dropped by the filter, yet class marked released $((${C1[marked]} - ${C0[marked]})) packets"
rr_ok "what the rules drop never reaches the shaper: its class released nothing"

# 3. The shaper limits what the mark chose.
rate() { # rate PORT CLASS: UDP at 10 Mbit/s from A to PORT for SECS; RATE: CLASS's kbit/s on the wire
    rr_iperf_server "$RR_NS_B" "$RR_HOST_B" "$1"
    classes C0
    rr_in "$RR_NS_A" timeout $((SECS + 30)) iperf3 -c "$RR_HOST_B" -p "$1" -u -b 10M -l 1200 -t "$SECS" \
        --connect-timeout 3000 -J >"$RR_T/udp-$1.json" 2>"$RR_T/udp-$1.err" ||
        rr_fail "iperf3 UDP to $1: $(head -c 1000 "$RR_T/udp-$1.json") $(cat "$RR_T/udp-$1.err")"
    classes C1
    moved "$2" 100 || rr_fail "iperf3 UDP to $1: class $2 released $((${C1[$2]} - ${C0[$2]})) packets"
    RATE=$(((${C1[$2.bytes]} - ${C0[$2.bytes]}) * 8 / SECS / 1000))
}
rate 5311 marked
marked=$RATE
rate 5312 rest
rest=$RATE
[ "$marked" -le 2600 ] || rr_fail "marked: $marked kbit/s on the wire, over its ceil of 2mbit (and its burst)"
rr_ok "the marked flow left at $marked kbit/s (ceil 2mbit), the unmarked one at $rest kbit/s"

rr_stats || rr_fail "stats"
rr_zero shm_corrupt pool.free_bad filter.drop_malformed shaper-b.full_drops
[ "$(rr_ctr filter.drop_rule)" -ge 2 ] || rr_fail "filter.drop_rule is $(rr_ctr filter.drop_rule): the drops were not the rules'"
rr_no_restarts
rr_stop
rr_census_ok

# 4. Port b shaped but not filtered ([filter] ports = a): what came in by a
# leaves through the filter's egress into the shaper, a second input ring
# beside the router's, with its mark.
sed -i "/^rules = /a ports = a" "$RR_T/m.ini"
RR_LOG=$RR_T/log2
# the TAP devices go with their last fd, once the drivers' io_urings let go
rr_wait 10 eval "! ip -n $RR_NS_A link show $RR_IF_A >/dev/null 2>&1 && ! ip -n $RR_NS_B link show $RR_IF_B >/dev/null 2>&1" ||
    rr_fail "the TAP devices are still there 10 s after down"
rr_start
classes C0
datagrams 5301
counted "b unfiltered: forward's mark 1 through the filter's egress to the shaper" marked=5 pre=0
classes C0
datagrams 5302
counted "b unfiltered: no mark" rest=5 marked=0 pre=0
rr_no_restarts
rr_stop
rr_census_ok
if [ "$rest" -lt $((2 * marked)) ]; then
    echo "TIMING: filter_shaper: the unmarked flow ($rest kbit/s) should get more than twice the marked one ($marked kbit/s)"
    exit 75
fi
t_pass "filter_shaper: marks choose the class (forward and prerouting), drops before the shaper, marked $marked kbit/s, unmarked $rest kbit/s"
