#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/cp_bgp.sh: BGP routes through a port into the FIB (issue 45's
# BGP test; docs/routing.md, "BIRD end to end"). BIRD 2 in the peer's
# namespace (host A, AS 65002) announces 1,000 IPv4 prefixes
# (172.16.0.0/24 ... 172.19.231.0/24, static protocol s4) and, over a
# second session on IPv6, 100 IPv6 ones (2001:db8:a0:X::/64, s6) to BIRD 2
# in the control namespace (AS 65001) through port a; that BIRD's kernel
# protocols write them to table 100 there, which [routes] mirrors. Its own
# static routes (10.252.N.0/24, 2001:db8:252::/48, via host B) are in the
# table throughout, so that a withdrawal of the peer's routes is a
# withdrawal, not a daemon's flush.
#   - the prefixes appear in `route show` (origin daemon, via A on port a);
#   - traffic from B to an address in the first and the last of each family
#     is forwarded: ping with TTL 2 answered, TTL 1 "Time to live exceeded"
#     (ICMPv6 "Time exceeded") from the router;
#   - `birdc disable s4`, `disable s6` in the peer: all 1,100 leave `route
#     show` within 1 s (timing-bound), the traffic stops, the anchors stay;
#   - `inject routes kill` as s4 and s6 come back and a third static
#     protocol (10 IPv4 prefixes) is enabled: the mirrored routes stay
#     meanwhile, the new rr-routes dumps the table (syncs + 1), and all are
#     there;
#   - the peer dies (its namespace's output dropped, its BIRD killed): the
#     routes stay until the hold time (6 s, keepalive 1 s, less BIRD's
#     jitter) runs out (both sessions end by "Hold timer expired", within
#     4 s of the hold time), then leave within 1 s (timing-bound).
# CP_BGP_MODE=afxdp (tests/integ/cp_bgp_afxdp.sh): the same over two AF_XDP
# ports on veth. Each BIRD has its own config, socket and log in the test's
# directory and is ended by its pid; the namespaces are the test's own.
set -u
. "$(dirname "$0")/../lib/router.sh"
MODE=${CP_BGP_MODE:-tap}
rr_init "cp_bgp_$MODE"
rr_need_hard bird birdc nft
[ -x "$RR_BIN_DIR/rr-routes" ] || rr_fail "$RR_BIN_DIR/rr-routes is missing: build with ninja first"
cp "$RR_BIN_DIR/rr-routes" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-routes" || rr_fail "cannot copy rr-routes"
N=$(($$ % 250 + 1))
HOLD=6
GRACE=30 # a flush would keep the routes this long: longer than every bound below
ROUTES_INI=$(printf '[routes]\nnetns = %%s\ntable = 100\ngrace_s = %s\n' "$GRACE")
RR_SERVICES=(router driver-a driver-b cp-a cp-b routes)
P6A=2001:db8:61 P6B=2001:db8:62

if [ "$MODE" = afxdp ]; then
    rr_afxdp_init
    rr_need ethtool
    rr_three_ns 63 64 bx
    rr_netns bxc
    NS_C=$RR_NS
    X=bx$$
    rr_veth_host "$NS_A" "${X}a0" "${X}a1" "$NS_R" "$HOST_A" "$GW_A"
    rr_veth_host "$NS_B" "${X}b0" "${X}b1" "$NS_R" "$HOST_B" "$GW_B"
    {
        printf '[router]\nname = bx%s\npool_buffers = 8192\nrun_dir = %s/run\ncontrol_netns = %s\n\n' "$$" "$RR_T" "$NS_C"
        printf '[port a]\ndriver = afxdp\nifname = %sa1\naddress = %s/24\naddress6 = %s::1/64\n\n' "$X" "$GW_A" "$P6A"
        printf '[port b]\ndriver = afxdp\nifname = %sb1\naddress = %s/24\naddress6 = %s::1/64\n\n' "$X" "$GW_B" "$P6B"
        # shellcheck disable=SC2059
        printf "$ROUTES_INI\n" "$NS_C"
        for s in "${RR_SERVICES[@]}"; do
            printf '\n[service %s]\nhang_ms = 3000\n' "$s"
        done
    } >"$RR_T/m.ini"
    rr_up_in "$NS_R" "$RR_T/m.ini"
    for x in a b; do
        if [ $x = a ]; then ns=$NS_A p=$P6A; else ns=$NS_B p=$P6B; fi
        ip -n "$ns" -6 addr add "$p::2/64" dev "$X${x}0" nodad && ip -n "$ns" -6 route add default via "$p::1" ||
            rr_fail "IPv6 on host $x"
    done
    PEER_NS=$NS_A PEER=$HOST_A GW=$GW_A SRC_NS=$NS_B SRC=$HOST_B SRC_GW=$GW_B
else
    rr_netns c
    NS_C=$RR_NS
    RR_ROUTER_EXTRA="control_netns = $NS_C"
    RR_ADDR6_A=$P6A::1/64 RR_ADDR6_B=$P6B::1/64
    # shellcheck disable=SC2059
    rr_topology "$(printf "$ROUTES_INI" "$NS_C")"
    rr_start
    rr_hosts_ipv6 "$P6A" "$P6B" routes
    PEER_NS=$RR_NS_A PEER=$RR_HOST_A GW=$RR_GW_A SRC_NS=$RR_NS_B SRC=$RR_HOST_B SRC_GW=$RR_GW_B
fi
ANCHOR=10.252.$N.0/24 ANCHOR6=2001:db8:252::/48
# Every address of the prefixes is the peer's own.
ip -n "$PEER_NS" route add local 172.16.0.0/12 dev lo && ip -n "$PEER_NS" -6 route add local 2001:db8:a0::/48 dev lo ||
    rr_fail "the local routes in the peer"

# ---- the two BIRDs ----
{
    printf 'log "%s/bird-p.log" all;\nrouter id %s;\nprotocol device {}\n' "$RR_T" "$PEER"
    printf 'protocol static s4 {\n  ipv4;\n'
    for ((i = 0; i < 1000; i++)); do
        printf '  route 172.%d.%d.0/24 blackhole;\n' $((16 + i / 256)) $((i % 256))
    done
    printf '}\nprotocol static s6 {\n  ipv6;\n'
    for ((i = 0; i < 100; i++)); do
        printf '  route 2001:db8:a0:%d::/64 blackhole;\n' "$i"
    done
    printf '}\nprotocol static s4x {\n  disabled;\n  ipv4;\n'
    for ((i = 0; i < 10; i++)); do
        printf '  route 172.20.%d.0/24 blackhole;\n' "$i"
    done
    printf '}\nprotocol bgp up {\n  local as 65002;\n  neighbor %s as 65001;\n' "$GW"
    printf '  hold time %s;\n  keepalive time 1;\n  connect retry time 1;\n' "$HOLD"
    printf '  ipv4 { import none; export all; };\n}\n'
    printf 'protocol bgp up6 {\n  local as 65002;\n  neighbor %s::1 as 65001;\n' "$P6A"
    printf '  hold time %s;\n  keepalive time 1;\n  connect retry time 1;\n' "$HOLD"
    printf '  ipv6 { import none; export all; };\n}\n'
} >"$RR_T/bird-p.conf"
cat >"$RR_T/bird-c.conf" <<EOF
log "$RR_T/bird-c.log" all;
router id $GW;
protocol device {}
protocol static anchor {
  ipv4;
  route $ANCHOR via $SRC;
}
protocol static anchor6 {
  ipv6;
  route $ANCHOR6 via $P6B::2;
}
protocol kernel k4 {
  kernel table 100;
  ipv4 { import none; export all; };
}
protocol kernel k6 {
  kernel table 100;
  ipv6 { import none; export all; };
}
protocol bgp peer {
  local as 65001;
  neighbor $PEER as 65002;
  hold time $HOLD;
  keepalive time 1;
  connect retry time 1;
  ipv4 { import all; export none; };
}
protocol bgp peer6 {
  local as 65001;
  neighbor $P6A::2 as 65002;
  hold time $HOLD;
  keepalive time 1;
  connect retry time 1;
  ipv6 { import all; export none; };
}
EOF
bird_start() { # bird_start NAME NS
    # Not rr_in: $! must be bird itself (-f: it stays in the foreground).
    ip netns exec "$2" bird -f -c "$RR_T/bird-$1.conf" -s "$RR_T/bird-$1.ctl" -P "$RR_T/bird-$1.pid" \
        2>"$RR_T/bird-$1.err" &
    RR_EXTRA_PIDS+=($!)
    eval "BIRD_$1=$!"
}
bc() { birdc -s "$RR_T/bird-$1.ctl" "${@:2}" 2>&1; } # bc NAME CMD...
bird_start c "$NS_C"
bird_start p "$PEER_NS"
rr_wait 10 eval '[ -S "$RR_T/bird-c.ctl" ] && [ -S "$RR_T/bird-p.ctl" ]' ||
    rr_fail "BIRD did not start: $(cat "$RR_T"/bird-*.err)"

rows() { "$RR" "$@" -S "$RR_SOCK" | tr -s ' '; }
routes_json() { "$RR" routes --json -S "$RR_SOCK" | "$RR_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# How many of the peer's prefixes (172.16-20.x.0/24) the FIB has, via the peer on port a.
PEER_RE="^172\.(1[6-9]|20)\.[0-9]+\.0/24 +$PEER +a +daemon\$"
count() { "$RR" route show -S "$RR_SOCK" | grep -cE "$PEER_RE"; }
# ... and of its 100 IPv6 prefixes (2001:db8:a0:X::/64), via its global or link-local address.
count6() { "$RR" route show -S "$RR_SOCK" | grep -cE '^2001:db8:a0:([0-9]+:)?:/64 +[0-9a-f:]+ +a +daemon$'; }
anchored() {
    [ "$(rows route show "$ANCHOR")" = "PREFIX VIA PORT ORIGIN
$ANCHOR $SRC b daemon" ] && [ "$(rows route show "$ANCHOR6")" = "PREFIX VIA PORT ORIGIN
$ANCHOR6 $P6B::2 b daemon" ]
}
established() { bc c show protocols "${1:-peer}" | grep -q Established; }

rr_now
t0=$RR_NOW
rr_wait 30 eval 'established && established peer6' || rr_fail "no BGP sessions within 30 s: $(bc c show protocols all | tail -n 40)"
all() { [ "$(count)" = "$1" ] && [ "$(count6)" = "${2:-100}" ]; }
rr_wait 60 all 1000 || rr_fail "$(count) of the 1,000 IPv4 and $(count6) of the 100 IPv6 prefixes in route show 60 s after the start: $("$RR" routes -S "$RR_SOCK"); table 100: $(ip -n "$NS_C" route show table 100 | wc -l) routes"
rr_now
conv=$(((RR_NOW - t0) / 1000))
anchored || rr_fail "the control BIRD's own route is not in the FIB: $(rows route show "$ANCHOR")"
via6=$(rows route show 2001:db8:a0::/64 | awk 'NR == 2 { print $2 }')
rr_ok "BGP Established (AS 65002 -> 65001, over IPv4 and IPv6) through port a ($MODE); 1,000 IPv4 prefixes in route show via $PEER and 100 IPv6 ones via $via6, origin daemon, $conv ms after BIRD's start"

# ---- forwarded, TTL - 1 (an answer of 3: this machine's load has lost one) ----
for d in 172.16.0.1 172.19.231.1; do
    o=$(rr_in "$SRC_NS" ping -n -c 3 -i 0.2 -W 2 -t 2 "$d" 2>&1) && grep -qE " [1-3] received" <<<"$o" ||
        rr_fail "ping -t 2 from B to $d (a BGP route): $o"
    o=$(rr_in "$SRC_NS" ping -n -c 1 -W 2 -t 1 "$d" 2>&1)
    grep -q "From $SRC_GW .*Time to live exceeded" <<<"$o" || rr_fail "ping -t 1 to $d: no time exceeded from the router: $o"
done
for d in 2001:db8:a0::1 2001:db8:a0:99::1; do
    o=$(rr_in "$SRC_NS" ping -6 -n -c 3 -i 0.2 -W 2 -t 2 "$d" 2>&1) && grep -qE " [1-3] received" <<<"$o" ||
        rr_fail "ping -6 -t 2 from B to $d (a BGP route): $o"
    o=$(rr_in "$SRC_NS" ping -6 -n -c 1 -W 2 -t 1 "$d" 2>&1)
    grep -q "From $P6B::1 .*Time exceeded" <<<"$o" || rr_fail "ping -6 -t 1 to $d: no time exceeded from the router: $o"
done
rr_ok "traffic to the first and the last prefix of each family forwarded with TTL - 1 (TTL 2 answered, TTL 1 expires at the router)"

# ---- withdrawn: gone within 1 s ----
rr_now
t0=$RR_NOW
o=$(bc p disable s4) && o=$(bc p disable s6) || rr_fail "birdc disable s4, s6: $o"
rr_wait 10 all 0 0 || rr_fail "$(count) of the peer's prefixes still in the FIB 10 s after the withdrawal"
rr_now
el=$(((RR_NOW - t0) / 1000))
[ "$el" -le 1000 ] || t_timing_fail "the 1,100 withdrawn prefixes left route show after $el ms (bound 1000)"
anchored || rr_fail "the anchor route went with the peer's"
o=$(rr_in "$SRC_NS" ping -n -c 1 -W 1 172.16.0.1 2>&1) && rr_fail "ping to 172.16.0.1 answered after the withdrawal: $o"
rr_ok "birdc disable s4 and s6 in the peer: the 1,100 prefixes left route show in $el ms (bound 1000), traffic to them stops; the anchors stay"

# ---- rr-routes killed while BGP changes the table ----
o=$(bc p enable s4) && o=$(bc p enable s6) || rr_fail "birdc enable s4, s6: $o"
rr_wait 30 all 1000 || rr_fail "$(count) of the 1,000 prefixes and $(count6) of the 100 back 30 s after birdc enable s4, s6"
rr_status || rr_fail "status"
pid0=${RR_PIDS[routes]}
syncs0=$(routes_json 'd["syncs"]')
"$RR" inject routes kill -S "$RR_SOCK" >/dev/null || rr_fail "inject routes kill"
o=$(bc p enable s4x) || rr_fail "birdc enable s4x: $o"
[ "$(count)" -ge 1000 ] || rr_fail "the mirrored routes left when rr-routes died: $(count)"
newpid() { rr_status && [ "${RR_STATE[routes]}" = up ] && [ "${RR_PIDS[routes]}" != "$pid0" ]; }
rr_wait 10 newpid || rr_fail "rr-routes did not come back after the kill"
resynced() { [ "$(routes_json 'd["syncs"]')" -gt "$syncs0" ] && all 1010; }
rr_wait 20 resynced || rr_fail "after the restart: syncs $(routes_json 'd["syncs"]') (was $syncs0), $(count) of 1,010 prefixes"
anchored || rr_fail "the anchor route went through rr-routes' restart"
o=$(rr_in "$SRC_NS" ping -n -c 3 -i 0.2 -W 2 172.20.9.1 2>&1) && grep -qE " [1-3] received" <<<"$o" || rr_fail "ping 172.20.9.1: $o"
rr_ok "inject routes kill under the BGP feed: the routes stayed, the new rr-routes resynchronised (syncs $syncs0 -> $(routes_json 'd["syncs"]')), the 10 announced meanwhile are in"

# ---- the peer dies: its routes go after the hold time ----
printf 'table inet rrdead {\n  chain out { type filter hook output priority 0; policy drop; }\n}\n' |
    ip netns exec "$PEER_NS" nft -f - || rr_fail "nft in the peer's namespace"
rr_now
t0=$RR_NOW
kill -KILL "$BIRD_p"
rr_wait $((HOLD + 15)) eval '! established && ! established peer6' || rr_fail "the control BIRD's session still Established $((HOLD + 15)) s after the peer died"
rr_now
hold=$(((RR_NOW - t0) / 1000))
rr_wait 15 all 0 0 || rr_fail "$(count) of the peer's prefixes still in the FIB 15 s after its session ended: $(bc c show protocols peer)"
rr_now
el=$(((RR_NOW - t0) / 1000))
# The hold timer runs from the last keepalive, at most 1 s before the kill,
# and BIRD may start it up to a quarter short (RFC 4271's jitter, 10).
[ "$hold" -ge $((HOLD * 750 - 1200)) ] || rr_fail "the session ended $hold ms after the peer died: before its hold time ($HOLD s, keepalive 1 s)"
[ "$el" -le $((hold + 1000)) ] || t_timing_fail "the peer's routes left $((el - hold)) ms after its session ended (bound 1000)"
[ "$hold" -le $(((HOLD + 4) * 1000)) ] || t_timing_fail "the session ended $hold ms after the peer died (bound: hold time $HOLD s + 4 s)"
anchored || rr_fail "the anchor route went with the peer"
o=$(bc c show protocols all peer; bc c show protocols all peer6)
[ "$(grep -c "Last error: *BGP Error: Hold timer expired" <<<"$o")" = 2 ] || rr_fail "the control BIRD's session did not end by its hold timer: $o"
rr_status || rr_fail "status"
for s in router driver-a driver-b cp-a cp-b; do
    [ "${RR_RESTARTS[$s]}" = 0 ] || rr_fail "$s restarted during the test"
done
rr_ok "the peer died (output dropped, BIRD killed): its session ended by the hold timer $hold ms later (hold time $HOLD s), its 1,110 prefixes left route show $((el - hold)) ms after that"

rr_stop
rr_census_ok
t_pass "cp_bgp_$MODE"
