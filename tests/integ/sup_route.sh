#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_route.sh: `ringrouter route show|add|del` against the real
# router between two TAP ports in the test's own namespaces (README,
# "Commands"). Host B also owns 10.63.N.1 and 10.64.N.1 (on its lo).
#   - route show [--json]: the two connected networks and the manifest's
#     [route 10.65.N.0/24] via host B, in prefix order, each with its origin
#     (connected, manifest);
#   - before any route, A -> 10.63.N.1 gets "Destination Net Unreachable";
#   - route add 10.63.N.0/24 via HOST_B: exit 0, "added ...", the log line
#     "ringrouter: route add 10.63.N.0/24 via HOST_B", the row (origin
#     runtime) in show and --json, and A's pings to 10.63.N.1 are answered
#     (TTL 63);
#   - route add 10.64.N.0/24 port b (no gateway): shown as a runtime route
#     with no gateway (not as connected); the router ARPs for the
#     destination itself and A's pings are answered;
#   - route del: exit 0, "deleted ...", the log line, the row gone, and A's
#     pings get "Destination Net Unreachable" again (icmp_net_unreach_tx up);
#     the manifest's route only with --force (refused without it, by name);
#   - bad input exits 100 with a message naming the argument and changes
#     nothing (show is the same, no log line): a prefix that is not one, host
#     bits, an unknown port, a gateway on no port's network or the router's
#     own address, a duplicate, deleting an absent route or a connected one,
#     missing words, an unknown subcommand, an extra argument, --json on
#     add, a gateway with another port's `dev`, -4 and -6 (with a hint);
#   - iproute2's words: a bare address is a /32, `dev` is `port`, `list`,
#     `ls` and `l` are show; `route flush dev a` deletes port a's runtime
#     route, `route flush` the rest and puts back the manifest's route that
#     --force deleted, never a connected one.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init sup_route

n=$(($$ % 250 + 1))
P63=10.63.$n.0/24 D63=10.63.$n.1
P64=10.64.$n.0/24 D64=10.64.$n.1
P65=10.65.$n.0/24
# The manifest's route: the gateway is host B (known once rr_topology ran).
RR_NET_B=10.62.$n
rr_topology "$(printf '[route %s]\nvia = %s.2\n' "$P65" "$RR_NET_B")"
rr_start
for a in "$D63" "$D64"; do
    ip -n "$RR_NS_B" addr add "$a/32" dev lo || rr_fail "addr $a on B's lo"
done
ip -n "$RR_NS_B" link set lo up

route() { # route ARGS...: sets $out $err $rc
    "$RR" route "$@" -S "$RR_SOCK" >"$RR_T/out" 2>"$RR_T/err"
    rc=$?
    out=$(cat "$RR_T/out")
    err=$(cat "$RR_T/err")
}
show_rows() { # the rows of `route show`, blanks squeezed
    "$RR" route show -S "$RR_SOCK" | tr -s ' ' 
}
json_rows() { # the routes of `route show --json` as "prefix via port origin" lines
    "$RR" route show --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
for r in json.load(sys.stdin)["routes"]:
    print(r["prefix"], r["via"] if r["via"] is not None else "null", r["port"], r["origin"])'
}
ping_ok() { # ping_ok DST: A's pings to DST are all answered, TTL 63
    local o
    o=$(rr_in "$RR_NS_A" ping -n -c 3 -i 0.2 -W 2 "$1" 2>&1) || rr_fail "ping $1 from A: $o"
    grep -q " 3 received" <<<"$o" && grep -q "ttl=63" <<<"$o" || { "$RR" neigh show -S "$RR_SOCK"; "$RR" stats -S "$RR_SOCK" | head -40; ip netns exec $RR_NS_B tcpdump -c 4 -eni $RR_IF_B -w - 2>/dev/null | true; ip -n $RR_NS_B neigh; rr_fail "ping $1 from A: $o"; }
}
ping_unreach() { # ping_unreach DST: "Destination Net Unreachable" from the router
    local o
    o=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 1 "$1" 2>&1)
    grep -q "^From $RR_GW_A .*Destination Net Unreachable" <<<"$o" || rr_fail "ping $1 from A: no net unreachable from $RR_GW_A: $o"
}
log_line() { grep -qxF -- "$1" "$RR_LOG"; }

# ---- show ----
want_show="PREFIX VIA PORT ORIGIN
$RR_NET_A.0/24 - a connected
$RR_NET_B.0/24 - b connected
$P65 $RR_HOST_B b manifest"
[ "$(show_rows)" = "$want_show" ] || rr_fail "route show: $(show_rows), expected: $want_show"
want_json="$RR_NET_A.0/24 null a connected
$RR_NET_B.0/24 null b connected
$P65 $RR_HOST_B b manifest"
[ "$(json_rows)" = "$want_json" ] || rr_fail "route show --json: $(json_rows)"
rr_ok "route show and --json: 2 connected networks and the manifest's $P65 via $RR_HOST_B"

# ---- add via a gateway ----
ping_unreach "$D63"
route add "$P63" via "$RR_HOST_B"
[ "$rc" = 0 ] && [ "$out" = "added $P63" ] || rr_fail "route add $P63 via $RR_HOST_B: exit $rc, out \"$out\", err \"$err\""
log_line "ringrouter: route add $P63 via $RR_HOST_B" || rr_fail "no \"route add $P63 via $RR_HOST_B\" log line"
grep -qxF "$P63 $RR_HOST_B b runtime" <<<"$(show_rows)" || rr_fail "route show has no row \"$P63 $RR_HOST_B b runtime\": $(show_rows)"
grep -qxF "$P63 $RR_HOST_B b runtime" <<<"$(json_rows)" || rr_fail "route show --json has no $P63 via $RR_HOST_B port b runtime"
ping_ok "$D63"
rr_ok "route add $P63 via $RR_HOST_B: shown, logged, A -> $D63 answered (ttl 63)"

# ---- add out of a port ----
ping_unreach "$D64"
route add "$P64" port b
[ "$rc" = 0 ] && [ "$out" = "added $P64" ] || rr_fail "route add $P64 port b: exit $rc, out \"$out\", err \"$err\""
log_line "ringrouter: route add $P64 port b" || rr_fail "no \"route add $P64 port b\" log line"
grep -qxF "$P64 - b runtime" <<<"$(show_rows)" || rr_fail "route show has no row \"$P64 - b runtime\": $(show_rows)"
grep -qxF "$P64 null b runtime" <<<"$(json_rows)" || rr_fail "route show --json has no $P64 via null port b runtime"
ping_ok "$D64"
rr_ok "route add $P64 port b: shown as a runtime route without a gateway (not connected), A -> $D64 answered"

# ---- bad input: exit 100, the argument named, nothing changed ----
before=$(show_rows)
lines=$(wc -l <"$RR_LOG")
bad_case() { # bad_case "EXPECTED STDERR" ARGS...
    local want=$1
    shift
    route "$@"
    [ "$rc" = 100 ] || rr_fail "route $*: exit $rc, expected 100 ($err)"
    [ "$err" = "$want" ] || rr_fail "route $*: said \"$err\", expected \"$want\""
    [ -z "$out" ] || rr_fail "route $*: printed \"$out\" on stdout"
    echo "  route $*: exit 100: $err"
}
bad_case 'ringrouter: route: "10.66.0.0/33" is not an IPv4 prefix (a.b.c.d/len, an address, or default)' add 10.66.0.0/33 via "$RR_HOST_B"
bad_case 'ringrouter: route: "bogus" is not an IPv4 prefix (a.b.c.d/len, an address, or default)' del bogus
bad_case "ringrouter: route: 10.66.0.1/16 has host bits set; did you mean 10.66.0.0/16?" add 10.66.0.1/16 port b
bad_case 'ringrouter: route add: no port "nosuch"' add 10.66.0.0/16 port nosuch
bad_case 'ringrouter: route add: via "10.66.0.300" is not an IPv4 address' add 10.66.0.0/16 via 10.66.0.300
bad_case "ringrouter: route add: gateway 10.99.0.1 is on none of the ports' networks" add 10.66.0.0/16 via 10.99.0.1
bad_case "ringrouter: route add: gateway $RR_GW_B is the router's own address on port b" add 10.66.0.0/16 via "$RR_GW_B"
bad_case "ringrouter: route add: gateway $RR_NET_B.0 is the network address of port b's network $RR_NET_B.0/24" \
    add 10.66.0.0/16 via "$RR_NET_B.0"
bad_case "ringrouter: route add: gateway $RR_NET_B.255 is the broadcast address of port b's network $RR_NET_B.0/24" \
    add 10.66.0.0/16 via "$RR_NET_B.255"
bad_case "ringrouter: route add: $P63 exists (runtime); route replace changes it" add "$P63" port b
bad_case "ringrouter: route add: $P65 exists (manifest); route replace changes it" add "$P65" port b
bad_case "ringrouter: route add: $RR_NET_A.0/24 is port a's connected network; change the manifest instead" add "$RR_NET_A.0/24" via "$RR_HOST_B"
bad_case 'ringrouter: route add: expected PREFIX via GATEWAY [port NAME], or PREFIX port NAME' add 10.66.0.0/16
bad_case 'ringrouter: route del: no route 10.66.0.0/16' del 10.66.0.0/16
bad_case "ringrouter: route del: $RR_NET_A.0/24 is a port's connected network; change the manifest instead" del "$RR_NET_A.0/24"
bad_case "ringrouter: route del: $P65 is the manifest's [route $P65] (line $(grep -n "^\[route $P65\]" "$RR_T/m.ini" | cut -d: -f1)); with --force it is deleted until the next start" del "$P65"
bad_case 'ringrouter: unknown route subcommand "frob"; route takes show, get, add, replace, del, flush, save or load (see ringrouter help route)' frob
bad_case 'ringrouter: route add: unexpected argument "extra"' add 10.66.0.0/16 port b extra
bad_case 'ringrouter: route add: --json is only for route show and route get' add 10.66.0.0/16 port b --json
bad_case "ringrouter: route add: gateway $RR_HOST_B is on port b, not a" add 10.66.0.0/16 via "$RR_HOST_B" dev a
bad_case 'ringrouter: -4 is not needed: the address family follows from the address or prefix (see ringrouter --help)' -4 show
bad_case 'ringrouter: -6 is not needed: the address family follows from the address or prefix (see ringrouter --help)' add 10.66.0.0/16 port b -6
[ "$(show_rows)" = "$before" ] || rr_fail "a refused request changed the FIB: $(show_rows)"
[ "$(wc -l <"$RR_LOG")" = "$lines" ] || rr_fail "a refused request was logged: $(tail -n +"$((lines + 1))" "$RR_LOG")"
rr_ok "22 bad requests: exit 100, each names its argument, the FIB and the log unchanged"

# ---- del ----
rr_stats || rr_fail "stats"
nu0=$(rr_ctr router.icmp_net_unreach_tx)
for p in "$P63" "$P64" "$P65"; do
    force=()
    [ "$p" = "$P65" ] && force=(--force)
    route del "$p" "${force[@]}"
    [ "$rc" = 0 ] && [ "$out" = "deleted $p" ] || rr_fail "route del $p ${force[*]}: exit $rc, out \"$out\", err \"$err\""
    want="ringrouter: route del $p"
    [ "$p" = "$P65" ] && want+=" (the manifest's, --force)"
    log_line "$want" || rr_fail "no \"$want\" log line"
done
want_show="PREFIX VIA PORT ORIGIN
$RR_NET_A.0/24 - a connected
$RR_NET_B.0/24 - b connected"
[ "$(show_rows)" = "$want_show" ] || rr_fail "route show after del: $(show_rows)"
[ "$(json_rows | wc -l)" = 2 ] || rr_fail "route show --json after del: $(json_rows)"
ping_unreach "$D63"
ping_unreach "$D64"
rr_stats || rr_fail "stats"
nu1=$(rr_ctr router.icmp_net_unreach_tx)
[ $((nu1 - nu0)) -ge 4 ] || rr_fail "icmp_net_unreach_tx rose by $((nu1 - nu0)), expected >= 4"
rr_ok "route del $P63, $P64 and (--force) the manifest's $P65: gone from show; A -> $D63, $D64 net unreachable again (icmp_net_unreach_tx $nu0 -> $nu1)"

# ---- iproute2's words: a bare address, dev, list and ls, flush ----
route add "$D63" via "$RR_HOST_B"
[ "$rc" = 0 ] && [ "$out" = "added $D63/32" ] || rr_fail "route add $D63 (bare) via $RR_HOST_B: exit $rc, out \"$out\", err \"$err\""
ping_ok "$D63"
route add "$P64" dev b
[ "$rc" = 0 ] && [ "$out" = "added $P64" ] || rr_fail "route add $P64 dev b: exit $rc, out \"$out\", err \"$err\""
route add 10.66.$n.0/24 via "$RR_HOST_B" dev b
[ "$rc" = 0 ] && [ "$out" = "added 10.66.$n.0/24" ] || rr_fail "route add via $RR_HOST_B dev b: exit $rc, out \"$out\", err \"$err\""
route add 10.67.$n.0/24 port a
for w in list ls l; do
    [ "$("$RR" route $w -S "$RR_SOCK" | tr -s ' ')" = "$(show_rows)" ] || rr_fail "route $w is not route show"
done
grep -qxF "$D63/32 $RR_HOST_B b runtime" <<<"$(show_rows)" || rr_fail "no $D63/32 row: $(show_rows)"
route flush dev a
[ "$rc" = 0 ] && [ "$out" = "flushed port a: 1 runtime route deleted, 0 manifest routes back as the manifest has them" ] ||
    rr_fail "route flush dev a: exit $rc, out \"$out\", err \"$err\""
route flush
[ "$rc" = 0 ] && [ "$out" = "flushed: 3 runtime routes deleted, 1 manifest route back as the manifest has it" ] ||
    rr_fail "route flush: exit $rc, out \"$out\", err \"$err\""
want_show="PREFIX VIA PORT ORIGIN
$RR_NET_A.0/24 - a connected
$RR_NET_B.0/24 - b connected
$P65 $RR_HOST_B b manifest"
[ "$(show_rows)" = "$want_show" ] || rr_fail "route show after route flush: $(show_rows), expected: $want_show"
ping_unreach "$D63"
rr_ok "iproute2's words: route add $D63 (a /32), dev b, via GW dev b, list/ls/l; route flush dev a (its 1 route), route flush (3 runtime routes gone, the manifest's $P65 deleted with --force back, connected kept)"

rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
rr_stop
rr_census_ok
echo "PASS sup_route"
