#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/routes_load.sh: `ringrouter route load FILE|- [--merge]`
# (issue 45, item 5) against the real router between two TAP ports.
#   - a file of `ip route` lines (with ip's proto and metric words, a #
#     comment, a blank line): every route added, origin runtime, and traffic
#     follows one of them;
#   - what `route show` prints, loaded back: nothing changes (the connected
#     and manifest rows are skipped, the header too);
#   - replace (no --merge): the runtime routes the file does not name are
#     deleted, a replaced manifest route gets its own next hop back;
#     --merge keeps them; from stdin (-);
#   - a bad line: exit 100, the answer names the line, nothing changed;
#     a prefix twice: both lines named;
#   - 20,000 routes in one load; one next hop loaded over a group replaces it;
#   - IPv6 (ports with address6): `ip -6 route` lines (pref, a link-local
#     gateway with its dev) merged, runtime and forwarding; route show's
#     output of both families loaded back changes nothing; a replacing load
#     deletes the runtime routes of both families it does not name; a bad
#     IPv6 line is named and changes nothing.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init routes_load
n=$(($$ % 250 + 1))
RR_ADDR6_A=2001:db8:61::1/64 RR_ADDR6_B=2001:db8:62::1/64
rr_topology "$(printf '[route 10.65.%s.0/24]\nvia = 10.62.%s.2\n' "$n" "$n")"
rr_start
rr_hosts_ipv6 2001:db8:61 2001:db8:62 routes
ip -n "$RR_NS_B" addr add "10.70.$n.1/32" dev lo || rr_fail "addr on B's lo"
ip -n "$RR_NS_B" -6 addr add 2001:db8:70::1/128 dev lo || rr_fail "addr6 on B's lo"
rows() { "$RR" "$@" -S "$RR_SOCK" | tr -s ' '; }
count() { "$RR" route show --json -S "$RR_SOCK" | "$RR_PY" -c "import json,sys; d=json.load(sys.stdin); print(sum(1 for r in d['routes'] if r['origin'] == '$1'))"; }
load() { "$RR" route load "$@" -S "$RR_SOCK" >"$RR_T/out" 2>"$RR_T/err"; rc=$?; out=$(cat "$RR_T/out"); err=$(cat "$RR_T/err"); }

cat >"$RR_T/r1" <<EOF
# three routes, as ip route prints them
10.70.$n.0/24 via $RR_HOST_B dev b proto bird metric 32
10.71.$n.0/24 via $RR_HOST_A

route add 10.72.$n.0/24 port b
EOF
load "$RR_T/r1"
[ "$rc" = 0 ] && [ "$out" = "loaded 3 routes: 3 added, 0 changed, 0 unchanged, 0 deleted" ] || rr_fail "load r1: exit $rc: $out $err"
[ "$(rows route show "10.70.$n.0/24")" = "PREFIX VIA PORT ORIGIN
10.70.$n.0/24 $RR_HOST_B b runtime" ] || rr_fail "route show after load: $(rows route show)"
o=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "10.70.$n.1" 2>&1) && grep -q " 2 received" <<<"$o" || rr_fail "ping through a loaded route: $o"
rr_ok "route load of 3 ip-route lines: added, runtime, and forwarding"

"$RR" route show -S "$RR_SOCK" >"$RR_T/shown" || rr_fail "route show"
load "$RR_T/shown"
[ "$rc" = 0 ] && [ "$out" = "loaded 3 routes: 0 added, 0 changed, 3 unchanged, 0 deleted" ] || rr_fail "load of route show's output: exit $rc: $out $err"
rr_ok "route show's output loaded back: nothing changed"

# replace, with the manifest's route replaced at run time first
"$RR" route replace "10.65.$n.0/24" via "$RR_HOST_A" -S "$RR_SOCK" >/dev/null || rr_fail "route replace"
printf '10.73.%s.0/24 via %s\n10.70.%s.0/24 via %s\n' "$n" "$RR_HOST_B" "$n" "$RR_HOST_A" >"$RR_T/r2"
load "$RR_T/r2"
[ "$rc" = 0 ] && [ "$out" = "loaded 2 routes: 1 added, 1 changed, 0 unchanged, 3 deleted" ] || rr_fail "load r2: exit $rc: $out $err"
[ "$(count runtime)" = 2 ] || rr_fail "after a replacing load: $(rows route show)"
[ "$(rows route show "10.65.$n.0/24")" = "PREFIX VIA PORT ORIGIN
10.65.$n.0/24 $RR_HOST_B b manifest" ] || rr_fail "the manifest route did not get its next hop back: $(rows route show "10.65.$n.0/24")"
printf '10.74.%s.0/24 via %s\n' "$n" "$RR_HOST_B" | "$RR" route load - --merge -S "$RR_SOCK" >"$RR_T/out" || rr_fail "load - --merge"
[ "$(cat "$RR_T/out")" = "loaded 1 routes (merge): 1 added, 0 changed, 0 unchanged, 0 deleted" ] || rr_fail "merge: $(cat "$RR_T/out")"
[ "$(count runtime)" = 3 ] || rr_fail "after --merge: $(rows route show)"
rr_ok "replace: unnamed runtime routes deleted, the manifest's next hop back; --merge from stdin keeps them"

# errors: the line named, nothing changed
before=$(rows route show)
printf '10.75.%s.0/24 via %s\n10.76.%s.0/24 via %s\n10.77.%s.1/24 via %s\n' "$n" "$RR_HOST_B" "$n" "$RR_HOST_B" "$n" "$RR_HOST_B" >"$RR_T/bad"
load "$RR_T/bad"
[ "$rc" = 100 ] && [ "$err" = "ringrouter: route load: line 3: 10.77.$n.1/24 has host bits set; did you mean 10.77.$n.0/24?; nothing changed" ] ||
    rr_fail "a bad line: exit $rc: $err"
printf '10.75.%s.0/24 via 10.99.1.1\n' "$n" >"$RR_T/bad"
load "$RR_T/bad"
[ "$rc" = 100 ] && [ "$err" = "ringrouter: route load: line 1: gateway 10.99.1.1 is on none of the ports' networks; nothing changed" ] ||
    rr_fail "an off-network gateway: exit $rc: $err"
printf '10.75.%s.0/24 via %s\n\n10.75.%s.0/24 port a\n' "$n" "$RR_HOST_B" "$n" >"$RR_T/bad"
load "$RR_T/bad"
[ "$rc" = 100 ] && [ "$err" = "ringrouter: route load: line 3: 10.75.$n.0/24 again (first on line 1); nothing changed" ] ||
    rr_fail "a prefix twice: exit $rc: $err"
load "$RR_T/nosuchfile"
[ "$rc" = 100 ] && grep -q "nosuchfile: No such file" <<<"$err" || rr_fail "a missing file: exit $rc: $err"
[ "$(rows route show)" = "$before" ] || rr_fail "a refused load changed the FIB"
rr_ok "bad lines (host bits, off-network gateway, a prefix twice), a missing file: exit 100, the line named, nothing changed"

"$RR_PY" -c "
for i in range(20000):
    print('10.%d.%d.0/24 via $RR_HOST_B' % (128 + i // 256, i % 256))" >"$RR_T/big"
load "$RR_T/big"
[ "$rc" = 0 ] && [ "$out" = "loaded 20000 routes: 20000 added, 0 changed, 0 unchanged, 3 deleted" ] || rr_fail "20,000 routes: exit $rc: $out $err"
[ "$(count runtime)" = 20000 ] || rr_fail "20,000 loaded, $(count runtime) runtime routes shown"
rr_ok "20,000 routes in one load"

# One next hop over a group: a group's header (its index, port 0) must not
# pass for the route to port a, whatever index the group has.
"$RR" route add "10.79.$n.0/24" via "$RR_HOST_B" via "$RR_NET_B.9" -S "$RR_SOCK" >/dev/null || rr_fail "route add, a group"
printf '10.79.%s.0/24 port a\n' "$n" | "$RR" route load - --merge -S "$RR_SOCK" >"$RR_T/out" || rr_fail "load over a group"
[ "$(cat "$RR_T/out")" = "loaded 1 routes (merge): 0 added, 1 changed, 0 unchanged, 0 deleted" ] ||
    rr_fail "one next hop over a group: $(cat "$RR_T/out")"
[ "$(rows route show "10.79.$n.0/24")" = "PREFIX VIA PORT ORIGIN
10.79.$n.0/24 - a runtime" ] || rr_fail "one next hop over a group: $(rows route show "10.79.$n.0/24")"
"$RR" route del "10.79.$n.0/24" -S "$RR_SOCK" >/dev/null || rr_fail "route del"
rr_ok "a route load's one next hop replaces a group, not taken for it"

# ---- IPv6 ----
cat >"$RR_T/r6" <<EOF
2001:db8:70::/64 via 2001:db8:62::2 dev b proto static metric 1024 pref medium
2001:db8:71::/64 via fe80::1 dev a
route replace 2001:db8:72::/64 dev b
10.80.$n.0/24 via $RR_HOST_B
EOF
load "$RR_T/r6" --merge
[ "$rc" = 0 ] && [ "$out" = "loaded 4 routes (merge): 4 added, 0 changed, 0 unchanged, 0 deleted" ] || rr_fail "load r6: exit $rc: $out $err"
[ "$(rows route show 2001:db8:70::/64)" = "PREFIX VIA PORT ORIGIN
2001:db8:70::/64 2001:db8:62::2 b runtime" ] || rr_fail "route show after the IPv6 load: $(rows route show 2001:db8:70::/64)"
[ "$(rows route show 2001:db8:71::/64)" = "PREFIX VIA PORT ORIGIN
2001:db8:71::/64 fe80::1 a runtime" ] || rr_fail "the link-local route: $(rows route show 2001:db8:71::/64)"
o=$(rr_in "$RR_NS_A" ping -6 -n -c 2 -i 0.2 -W 2 2001:db8:70::1 2>&1) && grep -q " 2 received" <<<"$o" || rr_fail "ping -6 through a loaded route: $o"
"$RR" route show -S "$RR_SOCK" >"$RR_T/shown6" || rr_fail "route show"
load "$RR_T/shown6"
[ "$rc" = 0 ] && [ "$out" = "loaded 20004 routes: 0 added, 0 changed, 20004 unchanged, 0 deleted" ] ||
    rr_fail "load of route show's output with IPv6: exit $rc: $out $err"
rr_ok "IPv6 ip-route lines merged (a link-local gateway with its dev): runtime, forwarding; route show's output of both families loaded back: nothing changed"
before=$(rows route show)
printf '2001:db8:73::/64 via 2001:db8:62::2\n2001:db8:75::1/64 via 2001:db8:62::2\n' >"$RR_T/bad6"
load "$RR_T/bad6"
[ "$rc" = 100 ] && [ "$err" = "ringrouter: route load: line 2: 2001:db8:75::1/64 has host bits set; did you mean 2001:db8:75::/64?; nothing changed" ] ||
    rr_fail "a bad IPv6 line: exit $rc: $err"
printf '2001:db8:73::/64 via 2001:db8:99::1\n' >"$RR_T/bad6"
load "$RR_T/bad6"
[ "$rc" = 100 ] && [ "$err" = "ringrouter: route load: line 1: gateway 2001:db8:99::1 is on none of the ports' IPv6 networks; nothing changed" ] ||
    rr_fail "an IPv6 gateway off every network: exit $rc: $err"
[ "$(rows route show)" = "$before" ] || rr_fail "a refused IPv6 load changed the FIB"
printf '2001:db8:70::/64 via 2001:db8:62::2\n10.80.%s.0/24 via %s\n' "$n" "$RR_HOST_B" >"$RR_T/r7"
load "$RR_T/r7"
[ "$rc" = 0 ] && [ "$out" = "loaded 2 routes: 0 added, 0 changed, 2 unchanged, 20002 deleted" ] || rr_fail "load r7: exit $rc: $out $err"
[ "$(rows route show 2001:db8:71::/64)" = "PREFIX VIA PORT ORIGIN" ] || rr_fail "2001:db8:71::/64 not deleted by a replacing load"
[ "$(count runtime)" = 1 ] || rr_fail "after the replacing load: $(count runtime) IPv4 runtime routes, expected 1"
rr_ok "bad IPv6 lines named, nothing changed; a replacing load deleted the unnamed runtime routes of both families"
rr_status || rr_fail "status"
for s in "${RR_SERVICES[@]}"; do
    [ "${RR_RESTARTS[$s]}" = 0 ] || rr_fail "$s restarted"
done
rr_stop
rr_census_ok
t_pass
