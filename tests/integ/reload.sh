#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/reload.sh: `ringrouter reload`, `check --diff` and SIGHUP
# (issue 19, item 1) on the real router with three TAP ports: a, b (shaped,
# classes bulk and rest) and c, each in its own namespace, while a numbered
# UDP flow runs from host A to host C (tests/lib/seqflow.py, one datagram
# every 500 us) through the ports that no reload touches.
#   - check --diff: the exact lines a reload would apply (a route removed,
#     one added, one over a runtime route, a neighbour removed and one
#     added, a class added, which restarts shaper-b, a service option);
#   - reload: the same lines, then each neighbour command's answer, the
#     restart and the new pid; router, driver-a, driver-b and driver-c keep
#     their pids, shaper-b has a new one; the FIB (origins too), the
#     neighbour table and the shaper's classes are the new manifest's; a
#     runtime route stays, the one the manifest now has is the manifest's;
#   - rates only (port b's and a class's): no restart, the shaper's rates
#     change (shaper show); class voice removed: shaper-b alone restarts,
#     the other classes at their rates; driver-b's hang_ms: driver-b alone
#     restarts;
#   - a manifest that does not check: exit 100, the error names its line,
#     nothing changed (pids, routes);
#   - a port d added (check --diff, then reload): driver-d starts, the
#     router restarts through its warm standby (it takes rings only at
#     start), every other service keeps its pid, A pings D through it; port
#     d's ifname changed: refused by name, nothing changed (ports removed:
#     reload_port.sh; a port's mtu and address change live: live_ports.sh);
#   - SIGHUP reloads (a route removed) and the supervisor keeps running;
#   - after `shaper set b rate 150mbit`, check --diff and reload name each
#     rate set at run time against the manifest's and keep it; once the
#     manifest's rate changes, they say the manifest's applies, and it does;
#   - the flow lost not one datagram (across the router's restart too),
#     nothing restarted but shaper-b and the router (once), no
#     malformed-input counter moved, clean census.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init reload
rr_shaper_init
rr_need ss

n=$(($$ % 250 + 1))
rr_netns a; RR_NS_A=$RR_NS
rr_netns b; RR_NS_B=$RR_NS
rr_netns c; NS_C=$RR_NS
rr_netns d; NS_D=$RR_NS
RR_IF_A=rrt$$a RR_IF_B=rrt$$b IF_C=rrt$$c IF_D=rrt$$d
RR_GW_A=10.61.$n.1 RR_HOST_A=10.61.$n.2
RR_GW_B=10.62.$n.1 RR_HOST_B=10.62.$n.2
GW_C=10.63.$n.1 HOST_C=10.63.$n.2
GW_D=10.64.$n.1 HOST_D=10.64.$n.2
PORT_D=0 MTU_D=
HANG_B=3000
R65=10.65.$n.0/24 R66=10.66.$n.0/24 R70=10.70.$n.0/24 R71=10.71.$n.0/24 R72=10.72.$n.0/24
NB9=10.62.$n.9 NB10=10.62.$n.10
RR_SERVICES=(router driver-a driver-b driver-c shaper-b)
M=$RR_T/m.ini

# manifest ROUTES NEIGHS CLASSES [PORT_B_RATE] [EXTRA]: the test's manifest with those sections
manifest() {
    {
        printf '[router]\nname = rt%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
        printf '[port a]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\n\n' "$RR_IF_A" "$RR_NS_A" "$RR_GW_A"
        printf '[port b]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\n\n' "$RR_IF_B" "$RR_NS_B" "$RR_GW_B"
        printf '[port c]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\naddress6 = 2001:db8:63::1/64\n\n' "$IF_C" "$NS_C" "$GW_C"
        [ "$PORT_D" = 0 ] || printf '[port d]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\n%s\n' "${IFX_D:-$IF_D}" "$NS_D" "$GW_D" "${MTU_D:+mtu = $MTU_D
}"
        printf '[shaper b]\nrate = %s\n\n%b\n' "${4:-100mbit}" "$3"
        printf '%b\n%b\n' "$1" "$2"
        local s
        for s in "${RR_SERVICES[@]}"; do
            if [ "$s" = driver-b ]; then printf '[service %s]\nhang_ms = %s\n' "$s" "$HANG_B"; else printf '[service %s]\nhang_ms = 3000\n' "$s"; fi
            [ "$s" != driver-c ] || printf '%b' "${6:-}"
            printf '\n'
        done
        printf '%b\n' "${5:-}"
    } >"$M"
}
CLASSES1='[class b bulk]\nrate = 10mbit\nmatch = proto udp\n\n[class b rest]\nrate = 20mbit\ndefault = yes\n'
CLASSES2="${CLASSES1}\n[class b voice]\nrate = 5mbit\nceil = 10mbit\nmatch = dscp 46\n"
CLASSES3='[class b bulk]\nrate = 15mbit\nceil = 60mbit\nmatch = proto udp\n\n[class b rest]\nrate = 20mbit\ndefault = yes\n\n[class b voice]\nrate = 5mbit\nceil = 10mbit\nmatch = dscp 46\n'
ROUTES1="[route $R65]\nvia = $HOST_C\n\n[route $R70]\nvia = $HOST_C\n"
V6R=2001:db8:99::/48
ROUTES2="[route $R66]\nvia = $HOST_C\n\n[route $R71]\nvia = $HOST_C\n\n[route $R70]\nvia = $HOST_C\n\n[route $V6R]\nvia = 2001:db8:63::2\n"
ROUTES3="[route $R66]\nvia = $HOST_C\n\n[route $R71]\nvia = $HOST_C\n"
NEIGHS1="[neigh $NB9]\nmac = 02:00:00:00:00:09\n"
NEIGHS2="[neigh $NB10]\nmac = 02:00:00:00:00:0a\n"
manifest "$ROUTES1" "$NEIGHS1" "$CLASSES1"
"$RR" check -c "$M" >/dev/null || rr_fail "the first manifest does not check: $(cat "$M")"

rr_start
rr_host_side "$NS_C" "$IF_C" "$HOST_C" "$GW_C"
rr_ok "router up: ports a, b (shaped: bulk, rest), c; routes $R65, $R70; neighbour $NB9"

c() { # c ARGS...: one ringrouter command against this supervisor; sets $out $err $rc
    "$RR" "$@" -S "$RR_SOCK" >"$RR_T/out" 2>"$RR_T/err"
    rc=$?
    out=$(cat "$RR_T/out")
    err=$(cat "$RR_T/err")
}
pids() { rr_status || rr_fail "status"; local s; for s in "${RR_SERVICES[@]}"; do printf '%s=%s ' "$s" "${RR_PIDS[$s]}"; done; }
routes() { "$RR" route show -S "$RR_SOCK" | tr -s ' '; }
route_is() { # route_is PREFIX "VIA PORT ORIGIN"
    local got
    got=$(routes | awk -v p="$1" '$1 == p { print $2, $3, $4 }')
    [ "$got" = "$2" ] || rr_fail "route $1: \"$got\", expected \"$2\""
}
no_route() { routes | awk -v p="$1" '$1 == p { exit 1 }' || rr_fail "route $1 is still there: $(routes)"; }
neigh_state() { "$RR" neigh show "$1" -S "$RR_SOCK" | awk -v a="$1" '$1 == a { print $2, $3, $4 }'; }

# Where a datagram can be lost outside the router: A's TAP queue (driver-a
# not reading it in time) and C's socket (the sink not reading in time).
qdrop() { rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/statistics/tx_dropped"; }
rcvbuf() { rr_in "$NS_C" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp; }
QD0=$(qdrop) RB0=$(rcvbuf)
rr_flow_start "$RR_NS_A" "$NS_C" "$HOST_C" 7000 500
rr_ok "flow A -> C running (500 us a datagram)"

c route add "$R71" via "$HOST_C"
[ "$rc" = 0 ] || rr_fail "route add $R71: $err"
c route replace "$R70" via "$HOST_C"
[ "$rc" = 0 ] || rr_fail "route replace $R70: $err"
route_is "$R71" "$HOST_C c runtime"
route_is "$R70" "$HOST_C c runtime"
P0=$(pids)

# ---- check --diff, then reload: routes, neighbours, a class (a restart), a service option ----
manifest "$ROUTES2" "$NEIGHS2" "$CLASSES2" 100mbit "" 'restart_limit = 7\n'
c check --diff
[ "$rc" = 0 ] || rr_fail "check --diff: exit $rc: $err"
want="route $R65: removed
route $R66: added, via $HOST_C
route $R71: added, via $HOST_C (over the runtime route, which it replaces)
route $V6R: added, via 2001:db8:63::2
neigh $NB9: removed
neigh $NB10: added, mac 02:00:00:00:00:0a port b
class b voice: added, rate 5mbit ceil 10mbit (restarts shaper-b)
service driver-c: restart_limit 5 -> 7
restart shaper-b: class voice added
8 changes, 1 restart"
[ "$out" = "$want" ] || rr_fail "check --diff said:
$out
expected:
$want"
[ "$(pids)" = "$P0" ] || rr_fail "check --diff changed a pid: $P0 -> $(pids)"
route_is "$R65" "$HOST_C c manifest"
rr_ok "check --diff: 8 changes, restart shaper-b (class voice added), nothing applied"

c reload
[ "$rc" = 0 ] || rr_fail "reload: exit $rc: $err; out: $out"
sb_new=$(sed -n 's/^shaper-b: ready, pid \([0-9]*\)$/\1/p' <<<"$out")
want="${want%$'\n'*}
restarting shaper-b (pid ${RR_PIDS[shaper-b]}) through its warm standby
shaper-b: ready, pid $sb_new
deleted $NB9
replaced $NB10 mac 02:00:00:00:00:0a port b
reload: done, 8 changes"
[ "$out" = "$want" ] || rr_fail "reload said:
$out
expected:
$want"
P1=$(pids)
rr_status || rr_fail "status"
for s in router driver-a driver-b driver-c; do
    grep -q " $s=${RR_PIDS[$s]} \|^$s=${RR_PIDS[$s]} " <<<" $P0" || rr_fail "$s changed pid: $P0 -> $P1"
done
[ "$sb_new" = "${RR_PIDS[shaper-b]}" ] && grep -vq "shaper-b=$sb_new " <<<"$P0" || rr_fail "shaper-b: pid $sb_new in the answer, status ${RR_PIDS[shaper-b]}, before: $P0"
no_route "$R65"
route_is "$R66" "$HOST_C c manifest"
route_is "$R71" "$HOST_C c manifest"
route_is "$R70" "$HOST_C c runtime"
routes | grep -q "^$V6R 2001:db8:63::2 c" || rr_fail "no IPv6 route $V6R via 2001:db8:63::2 on c: $(routes)"
[ -z "$(neigh_state "$NB9")" ] || rr_fail "neighbour $NB9 is still there: $(neigh_state "$NB9")"
[ "$(neigh_state "$NB10")" = "02:00:00:00:00:0a b static" ] || rr_fail "neighbour $NB10: $(neigh_state "$NB10")"
"$RR" shaper show b -S "$RR_SOCK" | grep -q '^  voice ' || rr_fail "shaper show b has no class voice: $("$RR" shaper show b -S "$RR_SOCK")"
grep -qxF "ringrouter: reload: restart shaper-b: class voice added" "$RR_LOG" || rr_fail "the log does not say why shaper-b restarts"
rr_ok "reload: routes, neighbours, class voice (shaper-b restarted: pid ${RR_PIDS[shaper-b]}), the others kept their pids"

# ---- rates only: no restart ----
P1=$(pids)
manifest "$ROUTES2" "$NEIGHS2" "$CLASSES3" 200mbit "" 'restart_limit = 7\n'
c reload
[ "$rc" = 0 ] || rr_fail "reload of rates: exit $rc: $err; out: $out"
[ "$(pids)" = "$P1" ] || rr_fail "a rate change restarted something: $P1 -> $(pids)"
line=$("$RR" shaper show b -S "$RR_SOCK" | head -1)
[[ "$line" == "port b (shaper-b): rate 200mbit,"* ]] || rr_fail "shaper show b: \"$line\""
bulk=$("$RR" shaper show b -S "$RR_SOCK" | awk '$1 == "bulk" { print $2, $3 }')
[ "$bulk" = "15mbit 60mbit" ] || rr_fail "class bulk: \"$bulk\", expected 15mbit 60mbit"
rr_ok "rates: port b 200mbit, class bulk 15mbit/60mbit, through the mailbox, no restart: $(head -3 <<<"$out" | tr '\n' ';')"

# ---- a class removed: shaper-b restarts, alone ----
CLASSES4='[class b bulk]\nrate = 15mbit\nceil = 60mbit\nmatch = proto udp\n\n[class b rest]\nrate = 20mbit\ndefault = yes\n'
manifest "$ROUTES2" "$NEIGHS2" "$CLASSES4" 200mbit "" 'restart_limit = 7\n'
c reload
[ "$rc" = 0 ] || rr_fail "reload with class voice removed: exit $rc: $err; out: $out"
P2=$(pids)
[ "$(sed 's/shaper-b=[0-9]* //' <<<"$P2")" = "$(sed 's/shaper-b=[0-9]* //' <<<"$P1")" ] && [ "$P2" != "$P1" ] ||
    rr_fail "class voice removed: pids $P1 -> $P2 (only shaper-b's should change)"
[ "$(head -2 <<<"$out")" = "class b voice: removed (restarts shaper-b)
restart shaper-b: class voice removed" ] || rr_fail "reload with class voice removed said: $out"
"$RR" shaper show b -S "$RR_SOCK" | grep -q '^  voice ' && rr_fail "shaper show b still has class voice"
bulk=$("$RR" shaper show b -S "$RR_SOCK" | awk '$1 == "bulk" { print $2, $3 }')
[ "$bulk" = "15mbit 60mbit" ] || rr_fail "class bulk after shaper-b's restart: \"$bulk\", expected 15mbit 60mbit"
rr_ok "class voice removed: shaper-b alone restarted, class bulk still 15mbit/60mbit"
P1=$P2

# ---- a service option read at start: that service restarts, alone ----
HANG_B=4000
manifest "$ROUTES2" "$NEIGHS2" "$CLASSES4" 200mbit "" 'restart_limit = 7\n'
c reload
[ "$rc" = 0 ] || rr_fail "reload of driver-b's hang_ms: exit $rc: $err; out: $out"
P2=$(pids)
rr_status || rr_fail "status"
[ "$(sed 's/driver-b=[0-9]* //' <<<"$P2")" = "$(sed 's/driver-b=[0-9]* //' <<<"$P1")" ] && [ "$P2" != "$P1" ] ||
    rr_fail "hang_ms of driver-b: pids $P1 -> $P2 (only driver-b's should change)"
[ "$(head -2 <<<"$out")" = "service driver-b: hang_ms 3000 -> 4000 (restarts driver-b)
restart driver-b: hang_ms 3000 -> 4000" ] || rr_fail "reload of driver-b's hang_ms said: $out"
out2=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B after driver-b's restart: $out2"
rr_ok "hang_ms of driver-b: driver-b alone restarted (pid ${RR_PIDS[driver-b]}), A pings B"
P1=$P2

# ---- refused: a manifest that does not check ----
cp "$M" "$RR_T/good.ini"
printf '\n[route %s]\nvia = 10.99.%s.1\n' "10.72.$n.0/24" "$n" >>"$M"
bad_line=$(wc -l <"$M")
c reload
[ "$rc" = 100 ] || rr_fail "reload of a bad manifest: exit $rc, expected 100"
grep -q "^ringrouter: $M:$((bad_line)): \[route 10.72.$n.0/24\] via: " <<<"$err" || rr_fail "the error does not name line $bad_line: $err"
[[ "$err" == *"reload: the manifest does not check; nothing changed" ]] || rr_fail "reload: $err"
[ "$(pids)" = "$P1" ] || rr_fail "a failed reload changed a pid: $P1 -> $(pids)"
route_is "$R66" "$HOST_C c manifest"
route_is "$R70" "$HOST_C c runtime"
rr_ok "a manifest that does not check: exit 100, $(head -1 <<<"$err")"
cp "$RR_T/good.ini" "$M"

# ---- a port added: its driver starts, the router restarts through its standby ----
PORT_D=1
RR_SERVICES=(router driver-a driver-b driver-c driver-d shaper-b)
manifest "$ROUTES2" "$NEIGHS2" "$CLASSES4" 200mbit "[route $R72]\nvia = $HOST_D\n" 'restart_limit = 7\n'
c check --diff
[ "$rc" = 0 ] && [ "$out" = "port d: added, tap $IF_D in netns $NS_D, address $GW_D/24 (starts driver-d; restarts router)
route $R72: added, via $HOST_D
restart router: port d added: the router takes its rings at start
2 changes, 1 restart" ] || rr_fail "check --diff with port d added: exit $rc: $out $err"
c reload
[ "$rc" = 0 ] || rr_fail "reload with port d added: exit $rc: $err; out: $out"
rr_status || rr_fail "status"
[ "${RR_STATE[driver-d]}" = up ] || rr_fail "driver-d is ${RR_STATE[driver-d]:-missing} after the reload"
for s in driver-a driver-b driver-c shaper-b; do
    grep -q "$s=${RR_PIDS[$s]} " <<<"$P1" || rr_fail "$s changed pid: $P1 -> $(pids)"
done
grep -q "router=${RR_PIDS[router]} " <<<"$P1" && rr_fail "the router kept its pid ${RR_PIDS[router]}: it cannot have taken port d's rings"
old_router=$(sed -n 's/^router=\([0-9]*\) .*/\1/p' <<<"$P1")
grep -qxF "restarting router (pid $old_router) through its warm standby" <<<"$out" &&
    grep -qxF "starting driver-d" <<<"$out" && grep -qxF "router: ready, pid ${RR_PIDS[router]}" <<<"$out" ||
    rr_fail "the answer does not start driver-d and restart the router through its standby: $out"
rr_host_side "$NS_D" "$IF_D" "$HOST_D" "$GW_D"
ping_out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_D" 2>&1) || rr_fail "ping A -> D through the new port: $ping_out"
route_is "$R72" "$HOST_D d manifest"
c link d
[ "$rc" = 0 ] && grep -q "$IF_D" <<<"$out" || rr_fail "link d after the reload: exit $rc: $out $err"
c stats d
[ "$rc" = 0 ] && grep -q "^driver-d (up)" <<<"$out" && grep -q "^rx-d " <<<"$out" || rr_fail "stats d after the reload: exit $rc: $out $err"
rr_ok "port d added live: driver-d up (pid ${RR_PIDS[driver-d]}), router restarted (pid ${RR_PIDS[router]}), A pings D; the other drivers and shaper-b kept their pids"
P1=$(pids)

# ---- a port changed: refused, nothing changed (removing one: reload_port.sh) ----
IFX_D=${IF_D}x
manifest "$ROUTES2" "$NEIGHS2" "$CLASSES4" 200mbit "[route $R72]\nvia = $HOST_D\n" 'restart_limit = 7\n'
c reload
[ "$rc" = 100 ] && [ "$err" = "ringrouter: reload: needs \`ringrouter up\` again: ports changed (port d: ifname changed (or remove the port in one reload and add it back in the next)); nothing changed" ] ||
    rr_fail "reload with port d's ifname changed: exit $rc: $err"
refused=$err
c check --diff
[ "$rc" = 100 ] && [[ "$err" == *"needs \`ringrouter up\` again: ports changed (port d: ifname changed"* ]] || rr_fail "check --diff with port d's ifname changed: exit $rc: $err"
IFX_D=
[ "$(pids)" = "$P1" ] || rr_fail "a refused reload changed a pid: $P1 -> $(pids)"
route_is "$R72" "$HOST_D d manifest"
rr_ok "a port changed: $refused"

# ---- SIGHUP reloads ----
PORT_D=1
manifest "$ROUTES3" "$NEIGHS2" "$CLASSES4" 200mbit "[route $R72]\nvia = $HOST_D\n" 'restart_limit = 7\n'
kill -HUP "$RR_PID"
rr_wait 5 eval 'grep -qxF "ringrouter: reload: done, 2 changes" "$RR_LOG"' || rr_fail "no \"reload: done, 2 changes\" in the log after SIGHUP"
rr_alive "$RR_PID" || rr_fail "SIGHUP stopped the supervisor"
grep -qxF "ringrouter: Hangup: reloading $M" "$RR_LOG" || rr_fail "no \"Hangup: reloading\" log line"
grep -qxF "ringrouter: reload: route $R70: removed (the runtime route for it stays)" "$RR_LOG" ||
    rr_fail "no \"route $R70: removed (the runtime route for it stays)\" log line"
route_is "$R70" "$HOST_C c runtime" # the runtime route the manifest's had been replaced by stays
grep -qxF "ringrouter: reload: route $V6R: removed" "$RR_LOG" || rr_fail "no \"route $V6R: removed\" log line"
! routes | grep -q "^$V6R " || rr_fail "the IPv6 route $V6R is still there: $(routes)"
[ "$(pids)" = "$P1" ] || rr_fail "SIGHUP changed a pid: $P1 -> $(pids)"
rr_ok "SIGHUP: reloaded, the supervisor runs on, every pid the same"

# ---- -c: the socket from the manifest's run_dir, and it must be the file up was given ----
out=$(cd "$RR_T" && "$RR" check --diff -c ./m.ini 2>&1) && [ "$out" = "no change" ] || rr_fail "check --diff -c ./m.ini: $out"
cp "$M" "$RR_T/other.ini"
out=$("$RR" reload -c "$RR_T/other.ini" 2>&1)
rc=$?
[ "$rc" = 100 ] && [ "$out" = "ringrouter: reload: the supervisor runs $M, not $RR_T/other.ini: reload reads the file \`up\` was given (leave out -c, or name the socket with -S)" ] ||
    rr_fail "reload -c another file: exit $rc: $out"
rr_ok "-c: the same file (by another path) answers \"no change\"; another file is refused by name"

# ---- a rate set at run time: check --diff and reload say it stays, until the manifest's changes ----
c shaper set b rate 150mbit
[ "$rc" = 0 ] || rr_fail "shaper set b rate 150mbit: exit $rc: $err"
OVR="shaper b: rate 150mbit set at run time, 200mbit in the manifest: reload keeps 150mbit
class b rest: ceil 150mbit set at run time, 200mbit in the manifest: reload keeps 150mbit"
c check --diff
[ "$rc" = 0 ] && [ "$out" = "$OVR
no change; 2 rates set at run time stay (above)" ] || rr_fail "check --diff after shaper set: exit $rc: $out $err"
c reload
[ "$rc" = 0 ] && [ "$out" = "$OVR
no change
reload: done, 0 changes" ] || rr_fail "reload after shaper set: exit $rc: $out $err"
line=$("$RR" shaper show b -S "$RR_SOCK" | head -1)
[[ "$line" == "port b (shaper-b): rate 150mbit,"* ]] || rr_fail "after the reload, shaper show b: \"$line\", expected 150mbit kept"
manifest "$ROUTES3" "$NEIGHS2" "$CLASSES4" 180mbit "[route $R72]\nvia = $HOST_D\n" 'restart_limit = 7\n'
c check --diff
[ "$rc" = 0 ] && [ "$(grep -c 'set at run time' <<<"$out")" = 2 ] &&
    grep -qxF "shaper b: rate 150mbit set at run time, 200mbit in the manifest: reload sets the manifest's 180mbit" <<<"$out" &&
    grep -qxF "class b rest: ceil 150mbit set at run time, 200mbit in the manifest: reload sets the manifest's 180mbit" <<<"$out" &&
    grep -qxF "shaper b: rate 200mbit -> 180mbit" <<<"$out" || rr_fail "check --diff with the manifest's rate changed: exit $rc: $out $err"
c reload
[ "$rc" = 0 ] || rr_fail "reload of port b's new rate: exit $rc: $out $err"
line=$("$RR" shaper show b -S "$RR_SOCK" | head -1)
[[ "$line" == "port b (shaper-b): rate 180mbit,"* ]] || rr_fail "after the reload to 180mbit, shaper show b: \"$line\""
out=$("$RR" check --diff -S "$RR_SOCK" 2>&1) && [ "$out" = "no change" ] || rr_fail "check --diff once the manifest's rate applies: $out"
rr_ok "a rate set at run time: check --diff and reload name it and keep it (150mbit), until the manifest's rate changes (180mbit)"

# ---- the flow: not one datagram lost ----
rr_flow_stop
sum=$("$RR_PY" "$RR_FLOW_PY" summary "$RR_FLOW_LOG")
read -r _ _ _ _ _ missing _ dup <<<"$sum"
rr_stats || rr_fail "stats"
# The drops on the flow's path: IPv4 in the router, driver-a, driver-c and their rings.
drops=$(for k in "${!RRS[@]}"; do
    [[ $k =~ ^(router|driver-a|driver-c|ring\.rx-a|ring\.tx-c)\. ]] && [[ $k == *drop* || $k == *full* ]] &&
        [[ $k != *drop6* ]] && [ "${RRS[$k]}" != 0 ] && printf '%s=%s ' "$k" "${RRS[$k]}"
done)
rr_ok "drop counters on the flow's path not zero: ${drops:-none}"
if [ "$missing" != 0 ] || [ "$dup" != 0 ]; then
    qd=$(($(qdrop) - QD0)) rb=$(($(rcvbuf) - RB0))
    # All of them in the hosts' queues, none in the router's: the machine
    # did not run driver-a or the sink in time (other work on its 2 CPUs).
    if [ "$dup" = 0 ] && [ "$missing" -le $((qd + rb)) ] && [ -z "$drops" ]; then
        t_timing_fail "the flow A -> C lost $missing datagrams, all in the hosts' queues (A's TAP queue $qd, C's socket $rb): not scheduled in time"
    else
        rr_fail "the flow A -> C lost datagrams across the reloads: $sum; A's TAP queue dropped $qd, C's socket $rb; drop counters: ${drops:-none}"
    fi
fi
rr_zero "${RR_MALFORMED[@]}"
rr_status || rr_fail "status"
# A reload's restarts are planned ones (PLANNED in status), never deaths.
for s in "${!RR_RESTARTS[@]}"; do
    [ "${RR_RESTARTS[$s]}" = 0 ] || rr_fail "$s: ${RR_RESTARTS[$s]} restarts after a death, expected none"
done
for s in driver-a driver-c driver-d; do
    [ "${RR_PLANNED[$s]}" = 0 ] || rr_fail "$s restarted ${RR_PLANNED[$s]} times"
done
[ "${RR_PLANNED[driver-b]}" = 1 ] || rr_fail "driver-b restarted ${RR_PLANNED[driver-b]} times, expected once (hang_ms)"
[ "${RR_PLANNED[router]}" = 1 ] || rr_fail "the router restarted ${RR_PLANNED[router]} times, expected once (port d)"
rr_stop
rr_census_ok
t_pass "reload: check --diff, live IPv4 and IPv6 routes, neighbours, a class added and removed (shaper-b restarted), rates, a service option (driver-b restarted), a port added (the router restarted), refusals and SIGHUP; flow A -> C: $sum"
