#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/route_ops.sh: routes and neighbours managed as with `ip`
# (issue 19, item 2), against the real router between two TAP ports. The
# manifest has [route 10.65.N.0/24] via host B, [neigh 10.62.N.9] and
# state_dir; host B also owns 10.62.N.3 on its port and 10.63.N.1, 10.65.N.1
# on its lo.
#   - neigh add HOST_A and HOST_B (their MACs) before any traffic: pings A ->
#     B 5/5 while the router sends no ARP request and learns nothing
#     (arp_request_tx 0, neigh_learned 0, shown static); then a ping to B's
#     second address makes it ARP (arp_request_tx rises): the counter sees it;
#   - route replace under a numbered UDP flow (A -> 10.63.N.1, one datagram
#     every 500 us, tests/lib/seqflow.py): 100 replaces between two gateways,
#     each "replaced ...", logged, and not one datagram missing; the same
#     flow across 50 `route del` + `route add` pairs does lose datagrams, so
#     the check can see a gap;
#   - route get picks the longest prefix: /25 over /24, /28 over /24, the
#     default for an address nothing else covers, a connected and a manifest
#     route by their origin; --json the same; no route: exit 100 by name;
#   - filters and --json on every show: route show PREFIX, default, a prefix
#     with no route (an empty table); neigh show ADDRESS, an absent one;
#   - neigh add over a static neighbour with another MAC refused (replace
#     takes it), neigh del, neigh flush (the learned entry goes, the static
#     ones stay), the manifest's neighbour only with --force;
#   - bad input: exit 100, a message naming the argument, nothing changed;
#   - IPv6 (the ports have 2001:db8:61:N::1/64 and 2001:db8:62:N::1/64, the
#     manifest [route 2001:db8:65:N::/64] via B): route add via a global and
#     via a link-local gateway, show's origin column (connected, manifest,
#     runtime) in text and --json, show PREFIX (an absent one: the header
#     alone), route get's origin, the manifest's route
#     deleted only with --force, replaced (then runtime);
#   - route save, then a new `up`: the runtime routes of both families are
#     back (origin runtime, a replaced manifest route of each included), a
#     line that no longer fits is logged with its line number and skipped;
#   - no malformed-input counter moved, no restarts, clean census each time.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init route_ops

n=$(($$ % 250 + 1))
P63=10.63.$n.0/24 D63=10.63.$n.1
P65=10.65.$n.0/24
NB9=10.62.$n.9
RR_NET_B=10.62.$n
HOST_B2=$RR_NET_B.3
X=$(printf '%x' "$n")
P6_A=2001:db8:61:$X P6_B=2001:db8:62:$X
Q63=2001:db8:63:$X::/64 Q64=2001:db8:64:$X::/64 Q65=2001:db8:65:$X::/64
RR_ADDR6_A=$P6_A::1/64 RR_ADDR6_B=$P6_B::1/64
RR_ROUTER_EXTRA="state_dir = $RR_T/state"
rr_topology "$(printf '[route %s]\nvia = %s.2\n\n[neigh %s]\nmac = 02:00:00:00:00:09\n\n[route %s]\nvia = %s::2\n' \
    "$P65" "$RR_NET_B" "$NB9" "$Q65" "$P6_B")"
rr_start
for a in "$D63" 10.65.$n.1; do
    ip -n "$RR_NS_B" addr add "$a/32" dev lo || rr_fail "addr $a on B's lo"
done
ip -n "$RR_NS_B" link set lo up
ip -n "$RR_NS_B" addr add "$HOST_B2/24" dev "$RR_IF_B" || rr_fail "addr $HOST_B2 in B"
MAC_A=$(rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/address") || rr_fail "A's MAC"
MAC_B=$(rr_in "$RR_NS_B" cat "/sys/class/net/$RR_IF_B/address") || rr_fail "B's MAC"

c() { # c ARGS...: one ringrouter command against this supervisor; sets $out $err $rc
    "$RR" "$@" -S "$RR_SOCK" >"$RR_T/out" 2>"$RR_T/err"
    rc=$?
    out=$(cat "$RR_T/out")
    err=$(cat "$RR_T/err")
}
ok() { # ok WANT ARGS...: exit 0 and exactly WANT on stdout
    local want=$1
    shift
    c "$@"
    [ "$rc" = 0 ] && [ "$out" = "$want" ] || rr_fail "$*: exit $rc, out \"$out\" (expected \"$want\"), err \"$err\""
}
log_line() { grep -qxF -- "$1" "$RR_LOG"; }
json() { # json PY ARGS...: run ringrouter ARGS --json, evaluate PY on it (d = the object)
    local py=$1
    shift
    "$RR" "$@" --json -S "$RR_SOCK" | "$RR_PY" -c "
import json, sys
d = json.load(sys.stdin)
assert isinstance(d, dict), d
print($py)"
}
rows() { "$RR" "$@" -S "$RR_SOCK" | tr -s ' '; } # human output, blanks squeezed

# ---- neigh add: traffic flows without ARP ----
rr_stats || rr_fail "stats"
[ "$(rr_ctr router.arp_request_tx)" = 0 ] || rr_fail "the router sent ARP before any traffic"
ok "added $RR_HOST_A mac $MAC_A port a" neigh add "$RR_HOST_A" mac "$MAC_A"
ok "added $RR_HOST_B mac $MAC_B port b" neigh add "$RR_HOST_B" mac "$MAC_B" port b
log_line "ringrouter: neigh add $RR_HOST_B mac $MAC_B port b" || rr_fail "no \"neigh add $RR_HOST_B ...\" log line"
[ "$(rows neigh show "$RR_HOST_B")" = "ADDRESS MAC PORT STATE QUEUED
$RR_HOST_B $MAC_B b static 0" ] || rr_fail "neigh show $RR_HOST_B: $(rows neigh show "$RR_HOST_B")"
o=$(rr_in "$RR_NS_A" ping -n -c 5 -i 0.1 -W 2 "$RR_HOST_B" 2>&1) && grep -q " 5 received" <<<"$o" || rr_fail "ping A -> B: $o"
rr_stats || rr_fail "stats"
for k in arp_request_tx neigh_learned pending_arp arp_reply_rx; do
    [ "$(rr_ctr router.$k)" = 0 ] || rr_fail "$k = $(rr_ctr router.$k) after pings to static neighbours, expected 0"
done
rr_ok "neigh add for both hosts: ping A -> B 5/5 with arp_request_tx 0, neigh_learned 0 (no ARP from the router)"
o=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_B2" 2>&1) && grep -q " 2 received" <<<"$o" || rr_fail "ping A -> $HOST_B2: $o"
rr_stats || rr_fail "stats"
[ "$(rr_ctr router.arp_request_tx)" -ge 1 ] || rr_fail "a ping to $HOST_B2 (no static entry) sent no ARP request: the check above proves nothing"
rr_ok "ping to $HOST_B2 without a static entry: arp_request_tx $(rr_ctr router.arp_request_tx) (the counter sees ARP)"

# ---- route replace under a flow: no gap ----
ok "added $P63" route add "$P63" via "$RR_HOST_B"
ok "added $HOST_B2 mac $MAC_B port b" neigh add "$HOST_B2" mac "$MAC_B" # over the learned entry
rr_flow_start "$RR_NS_A" "$RR_NS_B" "$D63" 5001 500
lines=$(wc -l <"$RR_LOG")
for ((i = 0; i < 100; i++)); do
    if ((i % 2 == 0)); then gw=$HOST_B2; else gw=$RR_HOST_B; fi
    ok "replaced $P63" route replace "$P63" via "$gw"
done
rr_msleep 200
rr_flow_stop
read -r _ got _ top _ missing _ dup <<<"$("$RR_PY" "$RR_FLOW_PY" summary "$RR_FLOW_LOG")"
[ "$got" -gt 500 ] || rr_fail "the flow carried only $got datagrams"
[ "$missing" = 0 ] && [ "$dup" = 0 ] || rr_fail "route replace left a gap: $missing of $((top + 1)) datagrams missing, $dup duplicated"
[ "$(tail -n +"$((lines + 1))" "$RR_LOG" | grep -cxE "ringrouter: route replace $P63 via ($RR_HOST_B|$HOST_B2)")" = 100 ] ||
    rr_fail "not 100 \"route replace $P63\" log lines"
ok "$D63: $P63 via $RR_HOST_B (runtime)" route get "$D63"
rr_ok "100 route replaces of $P63 under the flow: $got datagrams, none missing"
rr_flow_start "$RR_NS_A" "$RR_NS_B" "$D63" 5001 500
for ((i = 0; i < 50; i++)); do
    ok "deleted $P63" route del "$P63"
    ok "added $P63" route add "$P63" via "$RR_HOST_B"
done
rr_msleep 200
rr_flow_stop
read -r _ got _ top _ missing _ <<<"$("$RR_PY" "$RR_FLOW_PY" summary "$RR_FLOW_LOG")"
[ "$missing" -gt 0 ] || rr_fail "50 del + add pairs lost no datagram either: the flow cannot see a gap"
rr_ok "control: 50 route del + route add pairs lost $missing of $((top + 1)) datagrams"

# ---- route get: the longest prefix ----
ok "added 10.63.$n.0/25" route add "10.63.$n.0/25" via "$HOST_B2"
ok "added 10.63.$n.128/28" route add "10.63.$n.128/28" port b
ok "added 0.0.0.0/0" route add default via "$RR_HOST_B"
ok "10.63.$n.1: 10.63.$n.0/25 via $HOST_B2 (runtime)" route get "10.63.$n.1"
ok "10.63.$n.130: 10.63.$n.128/28 port b (runtime)" route get "10.63.$n.130"
ok "10.63.$n.200: $P63 via $RR_HOST_B (runtime)" route get "10.63.$n.200"
ok "10.99.1.1: 0.0.0.0/0 via $RR_HOST_B (runtime)" route get 10.99.1.1
ok "$RR_HOST_A: $RR_NET_A.0/24 port a (connected)" route get "$RR_HOST_A"
ok "10.65.$n.7: $P65 via $RR_HOST_B (manifest)" route get "10.65.$n.7"
[ "$(json 'd["address"], d["route"]["prefix"], d["route"]["via"], d["route"]["port"], d["route"]["origin"]' route get "10.63.$n.130")" = \
    "10.63.$n.130 10.63.$n.128/28 None b runtime" ] || rr_fail "route get 10.63.$n.130 --json"
[ "$(json 'd["route"]["prefix"], d["route"]["via"], d["route"]["origin"]' route get "10.63.$n.5")" = "10.63.$n.0/25 $HOST_B2 runtime" ] ||
    rr_fail "route get 10.63.$n.5 --json"
o=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$D63" 2>&1) && grep -q " 2 received" <<<"$o" || rr_fail "ping $D63 over the /25: $o"
rr_ok "route get: /25, /28, /24, default, connected and manifest routes by the longest prefix, in text and --json"

# ---- filters and --json on every show ----
[ "$(rows route show "$P63")" = "PREFIX VIA PORT ORIGIN
$P63 $RR_HOST_B b runtime" ] || rr_fail "route show $P63: $(rows route show "$P63")"
[ "$(rows route show default)" = "PREFIX VIA PORT ORIGIN
0.0.0.0/0 $RR_HOST_B b runtime" ] || rr_fail "route show default: $(rows route show default)"
[ "$(rows route show 10.77.0.0/16)" = "PREFIX VIA PORT ORIGIN" ] || rr_fail "route show 10.77.0.0/16: $(rows route show 10.77.0.0/16)"
[ "$(json '[(r["prefix"], r["via"], r["port"], r["origin"]) for r in d["routes"]]' route show "$P65")" = \
    "[('$P65', '$RR_HOST_B', 'b', 'manifest')]" ] || rr_fail "route show $P65 --json"
[ "$(json 'd["routes"]' route show 10.77.0.0/16)" = "[]" ] || rr_fail "route show 10.77.0.0/16 --json"
[ "$(json 'len(d["routes"])' route show)" = 7 ] || rr_fail "route show --json: $(json 'd["routes"]' route show)"
[ "$(json '[(x["address"], x["mac"], x["port"], x["state"]) for x in d["neighbours"]], d["busy"]' neigh show "$RR_HOST_A")" = \
    "[('$RR_HOST_A', '$MAC_A', 'a', 'static')] 0" ] || rr_fail "neigh show $RR_HOST_A --json"
[ "$(json 'd["neighbours"]' neigh show "$RR_NET_B.77")" = "[]" ] || rr_fail "neigh show $RR_NET_B.77 --json"
[ "$(rows neigh show "$RR_NET_B.77")" = "ADDRESS MAC PORT STATE QUEUED" ] || rr_fail "neigh show $RR_NET_B.77: $(rows neigh show "$RR_NET_B.77")"
[ "$(json 'len(d["neighbours"])' neigh show)" = 4 ] || rr_fail "neigh show --json: $(json 'd["neighbours"]' neigh show)"
rr_ok "route show PREFIX / default / an absent prefix, neigh show ADDRESS / an absent one: filtered, and --json objects"

# ---- neighbours: replace, del, flush, the manifest's ----
c neigh add "$RR_HOST_B" mac 02:00:00:00:00:42
[ "$rc" = 100 ] && [ "$err" = "ringrouter: neigh add: $RR_HOST_B is a static neighbour with another MAC or port; neigh replace changes it" ] ||
    rr_fail "neigh add over a static neighbour: exit $rc: $err"
ok "replaced $RR_HOST_B mac $MAC_B port b" neigh replace "$RR_HOST_B" mac "$MAC_B"
# A learned entry for flush to take: B asks for the router from 10.62.N.4
# (its ARP request, sent from that address, teaches the router).
ip -n "$RR_NS_B" addr add "$RR_NET_B.4/24" dev "$RR_IF_B" || rr_fail "addr .4 in B"
ip -n "$RR_NS_B" neigh flush dev "$RR_IF_B"
rr_in "$RR_NS_B" ping -n -c 1 -W 2 -I "$RR_NET_B.4" "$RR_GW_B" >/dev/null 2>&1 || rr_fail "ping from .4"
learned4() { [ "$(json 'd["neighbours"]' neigh show "$RR_NET_B.4")" != "[]" ]; }
rr_wait 5 learned4 || rr_fail "the router did not learn $RR_NET_B.4"
ok "flushed 1 neighbour" neigh flush
ok "flushed 0 neighbours" neigh flush all
# iproute2's words: lladdr for mac, dev for port, list and ls for show.
ok "replaced $RR_HOST_B mac $MAC_B port b" neigh replace "$RR_HOST_B" lladdr "$MAC_B" dev b
for w in list ls; do
    [ "$(rows neigh $w "$RR_HOST_B")" = "$(rows neigh show "$RR_HOST_B")" ] || rr_fail "neigh $w: $(rows neigh $w "$RR_HOST_B")"
done
[ "$(json 'len(d["neighbours"]), all(x["state"] == "static" for x in d["neighbours"])' neigh show)" = "4 True" ] ||
    rr_fail "after neigh flush: $(rows neigh show)"
ok "deleted $HOST_B2" neigh del "$HOST_B2"
[ "$(json 'd["neighbours"]' neigh show "$HOST_B2")" = "[]" ] || rr_fail "neigh del $HOST_B2: still shown"
line=$(grep -n "^\[neigh $NB9\]" "$RR_T/m.ini" | cut -d: -f1)
c neigh del "$NB9"
[ "$rc" = 100 ] && [ "$err" = "ringrouter: neigh del: $NB9 is the manifest's [neigh $NB9] (line $line); with --force it is deleted until the next start" ] ||
    rr_fail "neigh del of the manifest's neighbour: exit $rc: $err"
ok "deleted $NB9" neigh del "$NB9" --force
c neigh del "$NB9" --force
[ "$rc" = 100 ] && [ "$err" = "ringrouter: neigh del: no neighbour $NB9" ] || rr_fail "neigh del of an absent neighbour: exit $rc: $err"
rr_ok "neigh add over a static entry refused, replace (also as lladdr MAC dev NAME), flush (1 learned gone, statics kept), del, the manifest's with --force"

# ---- bad input ----
before_r=$(rows route show)
before_n=$(json 'sorted((x["address"], x["mac"]) for x in d["neighbours"])' neigh show)
lines=$(wc -l <"$RR_LOG")
bad() { # bad "EXPECTED STDERR" ARGS...
    local want=$1
    shift
    c "$@"
    [ "$rc" = 100 ] && [ "$err" = "ringrouter: $want" ] && [ -z "$out" ] ||
        rr_fail "$*: exit $rc, said \"$err\" (expected \"ringrouter: $want\"), printed \"$out\""
    echo "  $*: exit 100: $err"
}
bad 'neigh add: "10.62.1" is not an IPv4 or IPv6 address' neigh add 10.62.1 mac "$MAC_B"
bad 'neigh add: mac "02:00:00:00:00" is not a MAC address (xx:xx:xx:xx:xx:xx)' neigh add "$RR_NET_B.20" mac 02:00:00:00:00
bad 'neigh add: mac 01:00:5e:00:00:01 is not a unicast MAC address' neigh add "$RR_NET_B.20" mac 01:00:5e:00:00:01
bad 'neigh add: 10.99.0.1 is on none of the ports'"'"' networks' neigh add 10.99.0.1 mac "$MAC_B"
bad "neigh add: $RR_GW_B is the router's own address on port b" neigh add "$RR_GW_B" mac "$MAC_B"
bad "neigh add: $RR_NET_B.20 is on port b's network, not port a's" neigh add "$RR_NET_B.20" mac "$MAC_B" port a
bad 'neigh add: no port "nosuch"' neigh add "$RR_NET_B.20" mac "$MAC_B" port nosuch
bad 'neigh add: expected ADDRESS mac MAC [port NAME]' neigh add "$RR_NET_B.20" hwaddr "$MAC_B"
bad 'neigh add: --json is only for neigh show' neigh add "$RR_NET_B.20" mac "$MAC_B" --json
bad 'neigh del: unexpected argument "extra"' neigh del "$RR_NET_B.20" extra
bad 'neigh flush: unexpected argument "--json"' neigh flush --json
bad 'neigh show: "bogus" is not an IPv4 or IPv6 address' neigh show bogus
bad 'neigh show: unexpected argument "extra"' neigh show "$RR_HOST_B" extra
bad 'unknown neigh subcommand "frob"; neigh takes show, add, replace, del or flush (see ringrouter help neigh)' neigh frob
bad 'route get: "10.63.1" is not an IPv4 address' route get 10.63.1
bad 'route get: expected ADDRESS' route get
bad 'route get: unexpected argument "extra"' route get "$D63" extra
bad 'route: "bogus" is not an IPv4 prefix (a.b.c.d/len, an address, or default)' route show bogus
bad 'route show: unexpected argument "extra"' route show "$P63" extra
bad "route replace: $RR_NET_B.0/24 is port b's connected network; change the manifest instead" route replace "$RR_NET_B.0/24" via "$RR_HOST_B"
bad 'route replace: expected PREFIX via GATEWAY [port NAME], or PREFIX port NAME' route replace "$P63" nexthop b
bad 'route add: --force is only for route del' route add 10.70.0.0/16 port b --force
bad 'route save: unexpected argument "now"' route save now
ok "deleted 0.0.0.0/0" route del default
bad 'route get: no route to 10.99.1.1' route get 10.99.1.1
[ "$(rows route show)" = "$(grep -v '^0.0.0.0/0 ' <<<"$before_r")" ] || rr_fail "a refused request changed the FIB: $(rows route show)"
[ "$(json 'sorted((x["address"], x["mac"]) for x in d["neighbours"])' neigh show)" = "$before_n" ] || rr_fail "a refused request changed the neighbours"
[ "$(tail -n +"$((lines + 1))" "$RR_LOG")" = "ringrouter: route del 0.0.0.0/0" ] ||
    rr_fail "a refused request was logged: $(tail -n +"$((lines + 1))" "$RR_LOG")"
rr_ok "24 bad requests: exit 100, each names its argument, tables and log unchanged"

# ---- IPv6: origins, the manifest's route ----
ok "added $Q63" route add "$Q63" via "$P6_B::2"
ok "added $Q64" route add "$Q64" via fe80::2 port b
rows6() { rows route show | grep ':'; } # the IPv6 rows (the header has none)
want6="$P6_A::/64 - a connected
$P6_B::/64 - b connected
$Q63 $P6_B::2 b runtime
$Q64 fe80::2 b runtime
$Q65 $P6_B::2 b manifest"
[ "$(rows6)" = "$want6" ] || rr_fail "route show, IPv6 rows: $(rows6), expected: $want6"
[ "$(rows route show | grep -c '^PREFIX VIA PORT ORIGIN$')" = 2 ] || rr_fail "route show: no IPv6 header with ORIGIN: $(rows route show)"
[ "$(json '[(r["prefix"], r["via"], r["origin"]) for r in d["routes6"]]' route show)" = \
    "[('$P6_A::/64', None, 'connected'), ('$P6_B::/64', None, 'connected'), ('$Q63', '$P6_B::2', 'runtime'), ('$Q64', 'fe80::2', 'runtime'), ('$Q65', '$P6_B::2', 'manifest')]" ] ||
    rr_fail "route show --json, routes6: $(json 'd["routes6"]' route show)"
[ "$(rows route show "$Q63")" = "PREFIX VIA PORT ORIGIN
$Q63 $P6_B::2 b runtime" ] || rr_fail "route show $Q63: $(rows route show "$Q63")"
[ "$(rows route show 2001:db8:77::/48)" = "PREFIX VIA PORT ORIGIN" ] || rr_fail "route show 2001:db8:77::/48: $(rows route show 2001:db8:77::/48)"
[ "$(json 'd["routes"], [(r["prefix"], r["origin"]) for r in d["routes6"]]' route show "$Q65")" = "[] [('$Q65', 'manifest')]" ] ||
    rr_fail "route show $Q65 --json: $(json 'd' route show "$Q65")"
bad "route show: 2001:db8:77::1/48 has host bits set; did you mean 2001:db8:77::/48?" route show 2001:db8:77::1/48
ok "2001:db8:65:$X::7: $Q65 via $P6_B::2 port b (manifest)" route get "2001:db8:65:$X::7"
[ "$(json 'd["route"]["origin"]' route get "2001:db8:63:$X::7")" = runtime ] || rr_fail "route get 2001:db8:63:$X::7 --json"
line6=$(grep -n "^\[route $Q65\]" "$RR_T/m.ini" | cut -d: -f1)
bad "route del: $Q65 is the manifest's [route $Q65] (line $line6); with --force it is deleted until the next start" route del "$Q65"
bad "route add: $Q63 exists (runtime); route replace changes its next hop" route add "$Q63" port b
ok "deleted $Q64" route del "$Q64"
ok "added $Q64" route add "$Q64" via fe80::2 dev b
# A bare address is a host route, as in `ip -6 route add 2001:db8::7 via ...`.
ok "added 2001:db8:63:$X::7/128" route add "2001:db8:63:$X::7" via "$P6_B::2"
ok "2001:db8:63:$X::7: 2001:db8:63:$X::7/128 via $P6_B::2 port b (runtime)" route get "2001:db8:63:$X::7"
ok "deleted 2001:db8:63:$X::7/128" route del "2001:db8:63:$X::7"
rr_ok "IPv6 routes: origin connected, manifest, runtime in show (text, --json) and get; the manifest's not deleted without --force"

# ---- route save, and the next up adds them back ----
ok "replaced $P65" route replace "$P65" port b
ok "replaced $Q65" route replace "$Q65" port b
[ "$(rows6 | grep "^$Q65 ")" = "$Q65 - b runtime" ] || rr_fail "route show $Q65 after replace: $(rows6)"
ok "saved 7 routes to $RR_T/state/routes" route save
want_file="10.63.$n.0/24 via $RR_HOST_B
10.63.$n.0/25 via $HOST_B2
10.63.$n.128/28 port b
$P65 port b
$Q63 via $P6_B::2
$Q64 via fe80::2 port b
$Q65 port b"
[ "$(grep -v '^#' "$RR_T/state/routes")" = "$want_file" ] || rr_fail "$RR_T/state/routes: $(cat "$RR_T/state/routes")"
[ "$(stat -c %a "$RR_T/state")" = 700 ] || rr_fail "state_dir made with mode $(stat -c %a "$RR_T/state"), expected 700"
echo "10.70.0.0/16 port nosuch" >>"$RR_T/state/routes"
badline=$(wc -l <"$RR_T/state/routes")
echo "2001:db8:70::/48 via 2001:db8:99::1" >>"$RR_T/state/routes"
rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
want_show=$(rows route show)
rr_stop
rr_census_ok
rr_start
sfile=$RR_T/state/routes
log_line "ringrouter: $sfile:$badline: route: no port \"nosuch\"; skipped" || rr_fail "no log line for the bad line $badline of $sfile"
log_line "ringrouter: $sfile:$((badline + 1)): route replace: gateway 2001:db8:99::1 is on none of the ports' IPv6 networks; skipped" ||
    rr_fail "no log line for the bad IPv6 line $((badline + 1)) of $sfile"
log_line "ringrouter: $sfile: 7 saved routes added, some lines skipped (above)" || rr_fail "no \"7 saved routes added\" log line"
[ "$(rows route show)" = "$want_show" ] || rr_fail "route show after a new up: $(rows route show), expected: $want_show"
[ "$(rows6)" = "$P6_A::/64 - a connected
$P6_B::/64 - b connected
$Q63 $P6_B::2 b runtime
$Q64 fe80::2 b runtime
$Q65 - b runtime" ] || rr_fail "route show, IPv6 rows after a new up: $(rows6)"
rr_ok "route save: 7 runtime routes, 3 of them IPv6 (a replaced manifest route of each family among them) back after a new up, origin runtime; bad lines skipped by number"

# ---- route flush: back to the manifest's routes, connected ones untouched ----
ok "flushed: 5 runtime routes deleted, 2 manifest routes back as the manifest has them" route flush
log_line "ringrouter: route flush: 5 runtime routes deleted, 2 manifest routes back" || rr_fail "no route flush log line"
[ "$(rows route show)" = "PREFIX VIA PORT ORIGIN
$RR_NET_A.0/24 - a connected
$RR_NET_B.0/24 - b connected
$P65 $RR_HOST_B b manifest

PREFIX VIA PORT ORIGIN
$P6_A::/64 - a connected
$P6_B::/64 - b connected
$Q65 $P6_B::2 b manifest" ] || rr_fail "route show after route flush: $(rows route show)"
ok "flushed: 0 runtime routes deleted, 0 manifest routes back as the manifest has them" route flush
rr_ok "route flush: the 5 runtime routes of both families gone, the 2 replaced manifest routes back to the manifest's next hop, connected ones kept"

rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
rr_stop
rr_census_ok
t_pass route_ops
