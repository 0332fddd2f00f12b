#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/ecmp_manifest.sh: routes with several next hops in the
# manifest (`nexthop = ADDRESS [port NAME] [weight W]`), through the real
# router, on tests/lib/ecmp.sh's four next hops NH1..NH4 behind port b:
#   - `check` refuses a member given twice, naming its line and key;
#   - `up` with a 2-member IPv4 group (NH1, NH2) and a 3-member weighted
#     IPv6 one (NH1 weight 1, NH2 weight 2, NH3 weight 1): `route show`
#     prints them (origin manifest, the weights); 64 flows of each family
#     spread over every member and only them, each flow at one member in 3
#     rounds; the router's forwarded counters count every datagram;
#   - `reload` changes both groups' members and weights (IPv4: NH3, NH4
#     weight 3; IPv6: NH4, NH2) and adds a third group; the answer says each
#     change; the flows move to the new members and only them; a second
#     reload removes the third group;
#   - `route load --merge` of a group in route save's form and one in ip's
#     (`nexthop via A dev b weight 3 ...`): added, then unchanged; a member
#     twice refused with its line;
#   - `route load` without --merge: a bad line after two groups changes
#     nothing; a group's members changed, a group not named deleted, a
#     manifest group replaced by one next hop, then given its members back;
#   - a runtime group (`route add ... via A via B weight 4`): `show running`
#     writes it as a [route] with nexthop lines, and the text checks;
#   - the supervisor killed and another adopting the services: `route show`
#     the same, groups and all, and the flows on the same members;
#   - a fresh `up` on show running's text: `route show` the same as before
#     (the runtime group now the manifest's).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init ecmp_manifest
rr_need ip

n=$(($$ % 250 + 1))
P4=10.70.$n.0/24 D4=10.70.$n.1 P6=2001:db8:70::/64 D6=2001:db8:70::1
Q4=10.71.$n.0/24 R4=10.72.$n.0/24 L4=10.73.$n.0/24 L6=2001:db8:73::/64 G6=2001:db8:62
RR_ADDR6_A=2001:db8:61::1/64 RR_ADDR6_B=$G6::1/64
rr_topology
M=$RR_T/m.ini
cp "$M" "$RR_T/base.ini"
NB=$RR_NET_B
manifest() { # manifest ROUTES: the topology's manifest with these sections, checked
    { cat "$RR_T/base.ini"; printf '\n%s\n' "$1"; } >"$M"
    "$RR" check -c "$M" >/dev/null || rr_fail "the manifest does not check: $("$RR" check -c "$M" 2>&1)"
}

# A member twice: refused with its line and key.
{ cat "$RR_T/base.ini"; printf '\n[route %s]\nnexthop = %s.11\nnexthop = %s.11 weight 2\n' "$P4" "$NB" "$NB"; } >"$RR_T/bad.ini"
line=$(($(wc -l <"$RR_T/base.ini") + 4))
e=$("$RR" check -c "$RR_T/bad.ini" 2>&1) && rr_fail "check took a member given twice"
[[ "$e" == *"bad.ini:$line: [route $P4] nexthop: $NB.11 on port b is the next hop of line $((line - 1)) again"* ]] ||
    rr_fail "check, a member twice: $e"
rr_ok "check refuses a member given twice: $e"

manifest "[route $P4]
nexthop = $NB.11
nexthop = $NB.12

[route $P6]
nexthop = $G6::11 weight 1
nexthop = $G6::12 weight 2
nexthop = $G6::13 weight 1"
rr_start
rr_hosts_ipv6 2001:db8:61 $G6 routes
. "$(dirname "$0")/../lib/ecmp.sh"
ecmp_next_hops

# The groups in `route show`: MEMBERS "VIA WEIGHT ..." of PREFIX's rows.
shows() { # shows PREFIX ORIGIN "VIA WEIGHT VIA WEIGHT ..."
    local want=() got
    read -ra want <<<"$3"
    rr_c route show
    [ "$rc" = 0 ] || rr_fail "route show: $err"
    got=$(awk -v p="$1" -v o="$2" '
        $1 == p { on = 1; if ($4 != o) print "origin " $4; print $2, $6; next }
        on && NF == 4 && $3 == "weight" { print $1, $4; next }
        { on = 0 }' <<<"$out" | sort | tr '\n' ' ')
    [ "$got" = "$(printf '%s %s\n' "${want[@]}" | sort | tr '\n' ' ')" ] ||
        rr_fail "route show $1: expected $3 ($2), got $got in:
$out"
}
shows "$P4" manifest "$NB.11 1 $NB.12 1"
shows "$P6" manifest "$G6::11 1 $G6::12 2 $G6::13 1"
rr_ok "up: route show has the manifest's groups, 2 IPv4 members and 3 weighted IPv6 ones"

# Three rounds: every flow arrives, each at one next hop; MAP the flows.
rounds3() { # rounds3 WHAT
    local m r
    settle "$1"
    m=$(marks)
    for r in 1 2 3; do
        round
        rr_wait 10 all_arrived "$m" || rr_fail "$1: round $r: $(seen_since "$m" | wc -l) of 128 flows arrived"
    done
    MAP=$(seen_since "$m")
}
spread() { awk -v f="$1" '$1 == f { print "NH" $3 }' <<<"$MAP" | sort | uniq -c | tr -s ' \n' ' '; }

rr_stats || rr_fail stats
f0=$(rr_ctr router.forwarded) g0=$(rr_ctr router.forwarded_ipv6)
rounds3 "the manifest's groups"
check_map "$MAP" "1 2" 8 "IPv4 group" 4
check_map "$MAP" "1 2 3" 4 "IPv6 group" 6
rr_stats || rr_fail stats
[ $(($(rr_ctr router.forwarded) - f0)) -ge 192 ] && [ $(($(rr_ctr router.forwarded_ipv6) - g0)) -ge 192 ] ||
    rr_fail "forwarded counters: $(($(rr_ctr router.forwarded) - f0)) IPv4, $(($(rr_ctr router.forwarded_ipv6) - g0)) IPv6, expected at least 192 each"
rr_ok "64 flows a family over the members: IPv4$(spread 4), IPv6$(spread 6); each flow at one in 3 rounds"

# ---- reload: members and weights changed, a group added, then removed ----
NEW="[route $P4]
nexthop = $NB.13
nexthop = $NB.14 weight 3

[route $P6]
nexthop = $G6::14
nexthop = $G6::12"
manifest "$NEW

[route $Q4]
nexthop = $NB.11
nexthop = $NB.12"
rr_c reload
[ "$rc" = 0 ] || rr_fail "reload: exit $rc: $err $out"
for want in "route $P4: via $NB.11 weight 1 via $NB.12 weight 1 -> via $NB.13 weight 1 via $NB.14 weight 3" \
    "route $P6: via $G6::11 weight 1 via $G6::12 weight 2 via $G6::13 weight 1 -> via $G6::14 weight 1 via $G6::12 weight 1" \
    "route $Q4: added, via $NB.11 weight 1 via $NB.12 weight 1"; do
    grep -qxF "$want" <<<"$out" || rr_fail "reload: no line \"$want\" in:
$out"
done
shows "$P4" manifest "$NB.13 1 $NB.14 3"
shows "$P6" manifest "$G6::14 1 $G6::12 1"
shows "$Q4" manifest "$NB.11 1 $NB.12 1"
rounds3 "after the reload"
check_map "$MAP" "3 4" 4 "IPv4 group after the reload" 4
check_map "$MAP" "2 4" 8 "IPv6 group after the reload" 6
rr_ok "reload changed both groups in place and added one: IPv4$(spread 4), IPv6$(spread 6)"

manifest "$NEW"
rr_c reload
[ "$rc" = 0 ] && grep -qxF "route $Q4: removed" <<<"$out" || rr_fail "reload, a group removed: exit $rc: $err $out"
rr_c route show
! grep -q "^$Q4 " <<<"$out" || rr_fail "reload: $Q4 still shown: $out"
rr_ok "reload removed a group"

# ---- route load: a line with several next hops, route save's form and ip's ----
printf '%s via %s weight 1 via %s weight 2\nroute add %s nexthop via %s dev b weight 3 nexthop via %s dev b\n' \
    "$L4" "$NB.12" "$NB.13" "$L6" "$G6::11" "$G6::14" >"$RR_T/load.txt"
rr_c route load "$RR_T/load.txt" --merge
rr_said "route load, two groups" "loaded 2 routes (merge): 2 added, 0 changed, 0 unchanged, 0 deleted"
shows "$L4" runtime "$NB.12 1 $NB.13 2"
shows "$L6" runtime "$G6::11 3 $G6::14 1"
rr_c route load "$RR_T/load.txt" --merge
rr_said "route load, the same again" "loaded 2 routes (merge): 0 added, 0 changed, 2 unchanged, 0 deleted"
printf '%s via %s via %s via %s\n' "$L4" "$NB.12" "$NB.13" "$NB.12" >"$RR_T/twice.txt"
rr_c route load "$RR_T/twice.txt" --merge
[ "$rc" != 0 ] && [[ "$out$err" == *"line 1: $L4: next hops 1 and 3 are the same; nothing changed"* ]] ||
    rr_fail "route load, a member twice: exit $rc: $out $err"
rr_ok "route load takes groups in route save's form and ip's, and refuses a member twice"

# ---- route load without --merge: groups changed, deleted, a manifest group given back ----
printf '%s via %s weight 2 via %s\n%s via %s via %s\n10.99.0.1/24 via %s\n' \
    "$L4" "$NB.12" "$NB.14" "$Q4" "$NB.11" "$NB.12" "$NB.12" >"$RR_T/bad.txt"
rr_c route load "$RR_T/bad.txt"
[ "$rc" != 0 ] && [[ "$err" == *"line 3: 10.99.0.1/24 has host bits set"*"; nothing changed"* ]] ||
    rr_fail "route load, two groups then a bad line: exit $rc: $out $err"
shows "$L4" runtime "$NB.12 1 $NB.13 2"
printf '%s via %s\n%s via %s weight 2 via %s\n' "$P4" "$NB.12" "$L4" "$NB.12" "$NB.14" >"$RR_T/load2.txt"
rr_c route load "$RR_T/load2.txt"
rr_said "route load, a manifest group replaced and a group changed" \
    "loaded 2 routes: 0 added, 2 changed, 0 unchanged, 1 deleted"
shows "$L4" runtime "$NB.12 2 $NB.14 1"
rr_c route show
! grep -q "^$L6 " <<<"$out" || rr_fail "route load: $L6, not named, still shown: $out"
printf '%s via %s weight 2 via %s\n' "$L4" "$NB.12" "$NB.14" >"$RR_T/load3.txt"
rr_c route load "$RR_T/load3.txt"
rr_said "route load, the manifest's prefix not named" "loaded 1 routes: 0 added, 0 changed, 1 unchanged, 1 deleted"
shows "$P4" manifest "$NB.13 1 $NB.14 3"
rr_ok "route load without --merge: a group changed, one deleted, a manifest group's members back; a bad line after groups changes nothing"

# ---- a runtime group in show running ----
rr_c route add "$R4" via "$NB.11" via "$NB.13" weight 4
rr_said "route add $R4 with two" "added $R4"
rr_c show running
[ "$rc" = 0 ] || rr_fail "show running: exit $rc: $err"
RUNNING=$out
printf '%s\n' "$RUNNING" >"$RR_T/running.ini"
"$RR" check -c "$RR_T/running.ini" >/dev/null || rr_fail "show running's output does not check: $("$RR" check -c "$RR_T/running.ini" 2>&1)"
[[ "$RUNNING" == *"[route $R4]
nexthop = $NB.11 weight 1
nexthop = $NB.13 weight 4"* ]] || rr_fail "show running: no section for the runtime group: $RUNNING"
rr_ok "show running writes the runtime group as nexthop lines, and checks"

# ---- the supervisor dies; the next one adopts the services ----
BEFORE=$("$RR" route show -S "$RR_SOCK")
ecmp_adopt
AFTER=$("$RR" route show -S "$RR_SOCK")
[ "$AFTER" = "$BEFORE" ] || rr_fail "after adoption, route show differs: $(diff <(echo "$BEFORE") <(echo "$AFTER"))"
was=$MAP
rounds3 "after adoption"
[ "$MAP" = "$was" ] || rr_fail "after adoption, flows moved: $(diff <(echo "$was") <(echo "$MAP") | head -5)"
rr_ok "a new supervisor adopted the services: route show the same, groups and all; every flow on its member"

# ---- a fresh up on show running's text ----
rr_stop
rr_census_ok
norm() { sed -E 's/ (manifest|runtime)( +|$)/ /' | tr -s ' '; }
cp "$RR_T/running.ini" "$M"
rr_up
AFTER=$("$RR" route show -S "$RR_SOCK")
[ "$(norm <<<"$AFTER")" = "$(norm <<<"$BEFORE")" ] ||
    rr_fail "a fresh up on show running's text: route show differs: $(diff <(norm <<<"$BEFORE") <(norm <<<"$AFTER"))"
shows "$R4" manifest "$NB.11 1 $NB.13 4"
rr_ok "a fresh up on show running's text: the same groups (the runtime one now the manifest's)"
rr_stop
rr_census_ok
t_pass "ecmp_manifest: manifest groups installed, spread, changed and removed by reload, kept by adoption, and reproduced from show running"
