#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/show_running.sh: `ringrouter show running` (issue 48) after a
# sequence of runtime changes, fed to a fresh `up`, reproduces them:
#   - up with ports a and b (b shaped, with two classes), a manifest route
#     R1 via B, another R2 via B, a static neighbour on a;
#   - at run time: a route R3 added via B, R1 replaced via A, R2 deleted
#     (--force), an IPv6 route added, a neighbour added (IPv4 and IPv6) and
#     the manifest's deleted, shaper set b (the port and a class), an IPv6
#     address added to a, b's MTU set to 1400;
#   - show running checks (`ringrouter check`), `save FILE` writes the same
#     text, root's, 0644; refused: a relative path outside the client, a
#     directory others can write;
#   - the supervisor stopped and started again on that file: the same
#     routes (route show), static neighbours, shaper rates (shaper show),
#     addresses (addr show) and MTUs (link) as before it stopped.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init show_running
rr_shaper_init

n=$(($$ % 250 + 1))
RR_SERVICES=(router driver-a driver-b shaper-b)
RR_ADDR6_A=2001:db8:a$((n % 10))::1/64 RR_ADDR6_B=2001:db8:b$((n % 10))::1/64
NA=10.61.$n NB=10.62.$n # rr_topology's networks
HA=$NA.2 HB=$NB.2
R1=10.81.$n.0/24 R2=10.82.$n.0/24 R3=10.83.$n.0/24 R6=2001:db8:f$((n % 10))::/48
rr_topology "$(printf '[shaper b]\nrate = 400mbit\n\n[class b bulk]\nrate = 100mbit\nmatch = proto udp\n\n[class b rest]\nrate = 100mbit\ndefault = yes\n\n[route %s]\nvia = %s\n\n[route %s]\nvia = %s\n\n[neigh %s]\nmac = 02:00:00:00:00:01\n' \
    "$R1" "$HB" "$R2" "$HB" "$NA.7")"
M=$RR_T/m.ini
c() { rr_c "$@"; }
rr_start
rr_ok "up: A -- [driver-a, router, shaper-b, driver-b] -- B"

c route add "$R3" via "$HB"
[ "$rc" = 0 ] || rr_fail "route add $R3: $err"
c route replace "$R1" via "$HA"
[ "$rc" = 0 ] || rr_fail "route replace $R1: $err"
c route del "$R2" --force
[ "$rc" = 0 ] || rr_fail "route del $R2 --force: $err"
c route add "$R6" port b
[ "$rc" = 0 ] || rr_fail "route add $R6 port b: $err"
c neigh add "$NB.9" mac 02:00:00:00:00:09
[ "$rc" = 0 ] || rr_fail "neigh add $NB.9: $err"
c neigh add fe80::9 mac 02:00:00:00:00:0a port b
[ "$rc" = 0 ] || rr_fail "neigh add fe80::9: $err"
c neigh del "$NA.7" --force
[ "$rc" = 0 ] || rr_fail "neigh del $NA.7 --force: $err"
c shaper set b rate 300mbit
[ "$rc" = 0 ] || rr_fail "shaper set b rate 300mbit: $err"
c shaper set b bulk rate 50mbit ceil 200mbit
[ "$rc" = 0 ] || rr_fail "shaper set b bulk: $err"
c addr add "2001:db8:e$((n % 10))::1/64" port a
[ "$rc" = 0 ] || rr_fail "addr add on a: $err $out"
c link set b mtu 1400
[ "$rc" = 0 ] || rr_fail "link set b mtu 1400: $err $out"
rr_ok "runtime changes: routes added, replaced, deleted; neighbours added and deleted; shaper rates; an address; an MTU"

# What a fresh `up` must show again.
snapshot() {
    # (Not the origin: what was runtime is the manifest's after a fresh up.)
    "$RR" route show -S "$RR_SOCK" | awk '{ print $1, $2, $3 }'
    "$RR" neigh show -S "$RR_SOCK" | awk '$4 == "static" || $5 == "static" { print $1, $2, $3 }' | sort
    "$RR" shaper show b --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
def walk(x):
    if isinstance(x, dict):
        if "rate_bits_per_second" in x:
            print(x.get("port", x.get("name")), x["rate_bits_per_second"], x.get("ceil_bits_per_second", ""))
        for v in x.values():
            walk(v)
    elif isinstance(x, list):
        for v in x:
            walk(v)
walk(json.load(sys.stdin))'
    "$RR" addr show -S "$RR_SOCK"
    "$RR" link -S "$RR_SOCK" --json | "$RR_PY" -c 'import json, sys; print([(l["name"], l["mtu_bytes"]) for l in json.load(sys.stdin)["links"]])'
}
BEFORE=$(snapshot)
grep -q "^$R3 $HB b$" <<<"$BEFORE" && grep -q "^$R1 $HA a$" <<<"$BEFORE" &&
    ! grep -q "^$R2 " <<<"$BEFORE" && grep -q "^$NB.9 02:00:00:00:00:09 b$" <<<"$BEFORE" &&
    grep -q "^fe80::9 02:00:00:00:00:0a b$" <<<"$BEFORE" && ! grep -q "^$NA.7 " <<<"$BEFORE" &&
    grep -q "^bulk 50000000 200000000$" <<<"$BEFORE" && grep -q "^b 300000000 $" <<<"$BEFORE" &&
    grep -q "('b', 1400)" <<<"$BEFORE" && grep -q "2001:db8:e$((n % 10))::1/64" <<<"$BEFORE" ||
    rr_fail "what the runtime changes left, before: $BEFORE"

c show running
[ "$rc" = 0 ] || rr_fail "show running: exit $rc: $err"
RUNNING=$out
printf '%s\n' "$RUNNING" >"$RR_T/running.ini"
"$RR" check -c "$RR_T/running.ini" >/dev/null || rr_fail "show running's output does not check: $("$RR" check -c "$RR_T/running.ini" 2>&1)
$RUNNING"
grep -q "^rate = 300mbit$" <<<"$RUNNING" && grep -q "^mtu = 1400$" <<<"$RUNNING" && grep -q "^\[route $R3\]$" <<<"$RUNNING" &&
    ! grep -q "^\[route $R2\]$" <<<"$RUNNING" && ! grep -q "^\[neigh $NA.7\]$" <<<"$RUNNING" || rr_fail "show running: $RUNNING"
rr_ok "show running checks, with the runtime changes in it"

# save: the same text; refusals
c save "$RR_T/saved.ini"
[ "$rc" = 0 ] && [ "$(cat "$RR_T/saved.ini")" = "$RUNNING" ] && [ "$(stat -c '%u %a' "$RR_T/saved.ini")" = "0 644" ] ||
    rr_fail "save $RR_T/saved.ini: exit $rc: $err $out; $(stat -c '%u %a' "$RR_T/saved.ini" 2>&1)"
mkdir -m 1777 "$RR_T/open" && chmod 0777 "$RR_T/open" || rr_fail "mkdir"
c save "$RR_T/open/m.ini"
[ "$rc" = 100 ] && [[ "$err" == *"save: $RR_T/open/m.ini: $RR_T/open is writable by others than root"* ]] &&
    [ ! -e "$RR_T/open/m.ini" ] || rr_fail "save into a directory anyone can write: exit $rc: $err $out"
(cd "$RR_T" && "$RR" save rel.ini -S "$RR_SOCK" >/dev/null 2>&1) && [ -f "$RR_T/rel.ini" ] ||
    rr_fail "save rel.ini from $RR_T did not write $RR_T/rel.ini"
rr_ok "save FILE: the same text, root's, 0644; a relative FILE is the client's; a directory others can write refused"

# ---- a fresh up on it ----
rr_stop
rr_census_ok
cp "$RR_T/saved.ini" "$M"
rr_up
# The hosts keep their addresses; traffic first, so that what the router learns is as before.
AFTER=$(snapshot)
[ "$AFTER" = "$BEFORE" ] || rr_fail "a fresh up on show running's output differs:
before:
$BEFORE
after:
$AFTER"
rr_ok "a fresh up on the saved manifest: the same routes, static neighbours, shaper rates, addresses and MTUs"
rr_stop
rr_census_ok
t_pass "show_running: runtime routes, neighbours, rates, an address and an MTU in show running; checked, saved, and reproduced by a fresh up"
