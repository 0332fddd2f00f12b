# SPDX-License-Identifier: MIT
# tests/lib/ecmp.sh: the next hops of tests/integ/ecmp*.sh, sourced after
# tests/lib/router.sh, rr_topology and rr_start. Port b's TAP is bridged, in
# namespace B, to four next-hop namespaces NH1..NH4 ($RR_NET_B.11..14,
# 2001:db8:62::11..14), each of which takes $P4 and $P6 as its own and
# records, per datagram to UDP port 9, the flow it belongs to (a sink per
# namespace: the capture on each next hop's link). Host A sends 64 UDP flows
# of each family to $D4 and $D6, one datagram per flow per round.
#   ecmp_next_hops         the bridge, NH1..NH4 ($NH_NS[i]) and their sinks
#   round                  one round of 128 flows
#   marks, seen_since M    the sinks' line counts; the flows "FAMILY SPORT NH" seen since
#   all_arrived M, settle WHAT   every flow since M; rounds until one arrives whole
#   check_map MAP "NHS" MIN WHAT [FAMILIES]   each flow at one next hop, NHS each with MIN flows
#   ecmp_adopt             the supervisor killed, another adopting its services

ecmp_next_hops() {
    local i
    ip -n "$RR_NS_B" addr flush dev "$RR_IF_B"
    ip -n "$RR_NS_B" link add br0 type bridge || rr_fail "bridge in B"
    ip -n "$RR_NS_B" link set "$RR_IF_B" master br0 || rr_fail "TAP into the bridge"
    ip -n "$RR_NS_B" link set br0 up
    NH_NS=()
    for i in 1 2 3 4; do
        rr_netns "nh$i"
        NH_NS[$i]=$RR_NS
        ip -n "$RR_NS_B" link add "vnh$i" type veth peer name eth0 netns "$RR_NS" || rr_fail "veth for NH$i"
        ip -n "$RR_NS_B" link set "vnh$i" master br0 up || rr_fail "vnh$i up"
        rr_in "$RR_NS" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
            net.ipv6.conf.eth0.accept_dad=0 net.ipv6.conf.eth0.accept_ra=0 net.ipv6.conf.eth0.keep_addr_on_down=1 ||
            rr_fail "sysctl NH$i" # (its IPv6 address must outlive a link down)
        ip -n "$RR_NS" addr add "$RR_NET_B.1$i/24" dev eth0 || rr_fail "addr NH$i"
        ip -n "$RR_NS" -6 addr add "2001:db8:62::1$i/64" dev eth0 nodad || rr_fail "addr6 NH$i"
        ip -n "$RR_NS" link set eth0 up
        ip -n "$RR_NS" link set lo up
        ip -n "$RR_NS" route add local "$P4" dev lo || rr_fail "local $P4 in NH$i"
        ip -n "$RR_NS" -6 route add local "$P6" dev lo || rr_fail "local $P6 in NH$i"
        # The sink: one line per datagram, "SOURCE SPORT". Not rr_in: $! must be it.
        ip netns exec "$RR_NS" "$RR_PY" -u -c '
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind(("::", 9))
print("ready", flush=True)
while True:
    d, a = s.recvfrom(2048)
    print(a[0].replace("::ffff:", ""), a[1], flush=True)' >"$RR_T/nh$i" 2>"$RR_T/nh$i.err" &
        RR_EXTRA_PIDS+=($!)
    done
    for i in 1 2 3 4; do
        rr_wait 5 grep -q ready "$RR_T/nh$i" || rr_fail "NH$i's sink did not start: $(cat "$RR_T/nh$i.err")"
    done
}

# One round: flows 0..63 of each family, one datagram each, from A.
round() {
    rr_in "$RR_NS_A" "$RR_PY" -c '
import socket, sys
for fam, dst in ((socket.AF_INET, sys.argv[1]), (socket.AF_INET6, sys.argv[2])):
    for i in range(64):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.bind(("", 20000 + i))
        s.sendto(b"ecmp", (dst, 9))
        s.close()' "$D4" "$D6" || rr_fail "A could not send a round"
}
marks() { local i m=(); for i in 1 2 3 4; do m+=("$(wc -l <"$RR_T/nh$i")"); done; echo "${m[*]}"; }
seen_since() { # seen_since "M1 M2 M3 M4": flows seen after those line counts
    local i m
    read -ra m <<<"$1"
    for i in 1 2 3 4; do
        tail -n +"$((m[i - 1] + 1))" "$RR_T/nh$i" | awk -v nh="$i" '$1 != "ready" { print ($1 ~ /:/ ? 6 : 4), $2, nh }'
    done | sort -u
}
# Wait (bounded) until all 128 flows of the rounds since M have arrived.
all_arrived() { [ "$(seen_since "$1" | awk '{ print $1, $2 }' | sort -u | wc -l)" = 128 ]; }
# Rounds until one arrives whole: new next hops' neighbours resolve first
# (a neighbour holds at most 16 packets while ARP or ND asks), 10 s at most.
settle() { # settle WHAT
    local m t
    for t in $(seq 10); do
        m=$(marks)
        round
        rr_wait 1 all_arrived "$m" && return 0
    done
    rr_fail "$1: no round arrived whole in 10 s: $(seen_since "$m" | wc -l) of 128 flows"
}
# Check a map "FAMILY SPORT NH": each flow at one next hop, NHS each with at
# least MIN flows of each of FAMILIES (default both), and no flow of those
# families at any other next hop.
check_map() { # check_map MAP "NHS" MIN WHAT [FAMILIES]
    local dup nh fam c
    dup=$(awk '{ print $1, $2 }' <<<"$1" | sort | uniq -d | head -3)
    [ -z "$dup" ] || rr_fail "$4: flows at more than one next hop: $dup"
    for fam in ${5:-4 6}; do
        for nh in $2; do
            c=$(awk -v f="$fam" -v h="$nh" '$1 == f && $3 == h' <<<"$1" | wc -l)
            [ "$c" -ge "$3" ] || rr_fail "$4: IPv$fam: next hop $nh got $c flows, expected at least $3: $(awk '{ print $3 }' <<<"$1" | sort | uniq -c | tr '\n' ' ')"
        done
        c=$(awk -v f="$fam" -v l=" $2 " '$1 == f && index(l, " " $3 " ") == 0' <<<"$1" | wc -l)
        [ "$c" = 0 ] || rr_fail "$4: IPv$fam: $c flows at next hops other than $2"
    done
}

# The supervisor killed (its services stay, ended by pid at exit) and a new
# one adopting them, the router moved to the new FIBs; bounded.
ecmp_adopt() {
    local s mark
    rr_status || rr_fail status
    for s in "${RR_SERVICES[@]}"; do RR_EXTRA_PIDS+=("${RR_PIDS[$s]}"); done
    kill -KILL "$RR_PID"
    wait "$RR_PID" 2>/dev/null
    RR_PID=
    mark=$(wc -l <"$RR_LOG")
    rr_up
    rr_wait 10 eval 'tail -n +$mark "$RR_LOG" | grep -q "router: standby pid [0-9]* takes over"' ||
        rr_fail "the router did not move to the new FIBs: $(tail -n +"$mark" "$RR_LOG")"
    rr_wait 10 rr_all_up || rr_fail "not every service up after adoption"
}
