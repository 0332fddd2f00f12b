#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/reload_port.sh: `ringrouter reload` removing and adding a TAP
# port (issue 19) under a numbered stream A -> B of 2,000 datagrams a second
# (bench/faultflow) between two ports that no reload touches, a and b
# (shaped: shaper-b comes after driver-c in the supervisor's table, so
# removing c moves it):
#   - up with port c (an IPv6 address, a route via host C, a static
#     neighbour on it); A pings C; a runtime route through c is added;
#   - refused, nothing changed: c's ifname changed (its mtu changes live:
#     live_ports.sh; a middle port's removal: live_ports_mid.sh), naming
#     the port;
#   - port c removed: check --diff's exact lines, then the reload: driver-c
#     stops, the router restarts through its warm standby, the port's rings
#     are drained, its TAP is gone, no route (manifest, runtime, connected
#     IPv4 and IPv6) and no neighbour of c is left, driver-a, driver-b and
#     shaper-b keep their pids, A still reaches B; shaper-b, moved in the
#     table, still takes `shaper set` and restarts as asked (its events
#     keyed by its new place);
#   - port c added back with persist = yes and a shaper: driver-c and
#     shaper-c start, the router restarts, A pings C; removed again (both
#     stop): the TAP stays;
#   - the stream lost, duplicated and reordered nothing; driver-a and
#     driver-b never restarted, the router once per port reload; a clean
#     census at the end (the removed ports' buffers all came back).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init reload_port
rr_need ss
rr_faultflow_init

n=$(($$ % 250 + 1))
rr_shaper_init
RR_SERVICES=(router driver-a driver-b shaper-b)
rr_topology $'[shaper b]\nrate = 1gbit\nburst = 256k'
M=$RR_T/m.ini
cp "$M" "$RR_T/base.ini"
rr_netns c
NS_C=$RR_NS IF_C=rrt$$c
GW_C=10.63.$n.1 HOST_C=10.63.$n.2
R_C=10.73.$n.0/24 R_RT=10.74.$n.0/24 NB_C=10.63.$n.9
c() { rr_c "$@"; }
pid_of() { rr_status || rr_fail "status"; echo "${RR_PIDS[$1]:-}"; }
routes() { "$RR" route show -S "$RR_SOCK" | tr -s ' '; }
# manifest [EXTRA PORT C KEYS] [MTU]: the base with port c, its route and neighbour
with_c() {
    {
        cat "$RR_T/base.ini"
        printf '\n[port c]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\naddress6 = 2001:db8:c%s::1/64\n' \
            "$IF_C" "$NS_C" "$GW_C" "$((n % 10))"
        [ -z "${2:-}" ] || printf 'mtu = %s\n' "$2"
        printf '%b' "${1:-}"
        printf '\n[route %s]\nvia = %s\n\n[neigh %s]\nmac = 02:00:00:00:00:09\n' "$R_C" "$HOST_C" "$NB_C"
        printf '\n[service driver-c]\nhang_ms = 3000\n'
        [ -z "$SHAPER_C" ] || printf '\n[shaper c]\nrate = 100mbit\n\n[service shaper-c]\nhang_ms = 3000\n'
    } >"$M"
}
without_c() { cp "$RR_T/base.ini" "$M"; }
SHAPER_C=
NET6_C=2001:db8:c$((n % 10))::/64
no_c_routes() {
    local r
    r=$(routes)
    ! awk '$3 == "c" || $2 == "c" { f = 1 } END { exit !f }' <<<"$r" || rr_fail "routes through c are left: $r"
    ! grep -q "^$R_RT \|^$R_C \|^10.63.$n.0/24 \|^$NET6_C " <<<"$r" || rr_fail "a route of port c is left: $r"
}

add_host_c() {
    ip -n "$NS_C" addr flush dev "$IF_C"
    rr_host_side "$NS_C" "$IF_C" "$HOST_C" "$GW_C"
    local p
    p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_C" 2>&1) || rr_fail "ping A -> C: $p"
}
with_c
rr_start
add_host_c
routes | grep -q "^$R_C $HOST_C c manifest" || rr_fail "no route $R_C via c: $(routes)"
routes | grep -q "^$NET6_C " || rr_fail "no connected IPv6 route $NET6_C: $(routes)"
c route add "$R_RT" via "$HOST_C"
[ "$rc" = 0 ] || rr_fail "route add $R_RT via $HOST_C: $err"
nb=$("$RR" neigh show "$NB_C" -S "$RR_SOCK" | awk -v a="$NB_C" '$1 == a { print $3, $4 }')
[ "$nb" = "c static" ] || rr_fail "neighbour $NB_C: \"$nb\", expected a static one on c"
rr_ok "up: A $RR_HOST_A -- [driver-a, router, shaper-b, driver-b] -- B $RR_HOST_B, and port c: A pings C"

# Where a datagram can be lost outside ringrouter: A's TAP queue (driver-a
# not reading it in time) and B's socket (the sink not reading in time).
qdrop() { rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/statistics/tx_dropped"; }
rcvbuf() { rr_in "$RR_NS_B" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp; }
QD0=$(qdrop) RB0=$(rcvbuf)
rr_ff_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" 2000
rr_msleep 300
A0=$(pid_of driver-a) B0=$(pid_of driver-b) SB0=$(pid_of shaper-b)

# ---- refused: a port changed ----
P1="$(pid_of router) $(pid_of driver-a) $(pid_of driver-b) $(pid_of driver-c)"
with_c
sed -i "s/^ifname = $IF_C\$/ifname = ${IF_C}x/" "$M"
c reload
[ "$rc" = 100 ] && [[ "$err" == *"ports changed (port c: ifname changed (or remove the port in one reload and add it back in the next)); nothing changed" ]] ||
    rr_fail "reload with c's ifname changed: exit $rc: $err $out"
[ "$P1" = "$(pid_of router) $(pid_of driver-a) $(pid_of driver-b) $(pid_of driver-c)" ] || rr_fail "a refused reload changed a pid"
routes | grep -q "^$R_C $HOST_C c manifest" || rr_fail "a refused reload changed the routes: $(routes)"
rr_ok "refused by name, nothing changed: c's ifname changed"

# ---- port c removed ----
remove_c() { # remove_c "removed"|"kept (persist = yes)"
    local before dev
    before=$(pid_of router)
    without_c
    c reload
    [ "$rc" = 0 ] || rr_fail "reload with port c removed: exit $rc: $err; out: $out"
    grep -qxF "stopping driver-c" <<<"$out" && grep -qxF "restarting router (pid $before) through its warm standby" <<<"$out" &&
        { [ -z "$SHAPER_C" ] || grep -qxF "stopping shaper-c" <<<"$out"; } &&
        grep -q "^port c: released, [0-9]* packets\? drained from its rings, TAP $IF_C $1$" <<<"$out" &&
        [ "$(tail -1 <<<"$out")" = "reload: done, 3 changes" ] || rr_fail "reload with port c removed said: $out"
    RELEASED=$(grep '^port c: released' <<<"$out")
    rr_status || rr_fail "status"
    [ -z "${RR_STATE[driver-c]:-}" ] && [ -z "${RR_STATE[shaper-c]:-}" ] ||
        rr_fail "driver-c or shaper-c is still listed (${RR_STATE[driver-c]:-} ${RR_STATE[shaper-c]:-}) after port c was removed"
    [ "${RR_PIDS[router]}" != "$before" ] || rr_fail "the router kept pid $before: it still has port c's rings"
    no_c_routes
    [ -z "$("$RR" neigh show "$NB_C" -S "$RR_SOCK" | awk -v a="$NB_C" '$1 == a')" ] || rr_fail "neighbour $NB_C is left"
    c link c
    [ "$rc" != 0 ] || rr_fail "link c answers after port c was removed: $out"
    c stats
    ! grep -q "^rx-c \|^tx-c \|^sh-c \|^driver-c\|^shaper-c" <<<"$out" || rr_fail "stats still shows port c: $out"
    dev=$(ip -n "$NS_C" -o link show "$IF_C" 2>/dev/null)
    if [ "$1" = removed ]; then
        [ -z "$dev" ] || rr_fail "the TAP $IF_C is still in $NS_C: $dev"
    else
        [ -n "$dev" ] || rr_fail "the persistent TAP $IF_C is gone from $NS_C"
    fi
    local p
    p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B after port c was removed: $p"
}
without_c
c check --diff
want="port c: removed, tap $IF_C in netns $NS_C (stops driver-c; its device goes; restarts router)
route $R_C: removed
route $R_RT: withdrawn with port c (a runtime route)
neigh $NB_C: removed with port c
restart router: port c removed: the router takes its rings at start
3 changes, 1 restart"
rr_said "check --diff with port c removed" "$want"
remove_c removed
[ "${RR_PIDS[driver-a]}" = "$A0" ] && [ "${RR_PIDS[driver-b]}" = "$B0" ] && [ "${RR_PIDS[shaper-b]}" = "$SB0" ] ||
    rr_fail "removing port c restarted another service: $A0 $B0 $SB0 -> ${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]} ${RR_PIDS[shaper-b]}"
rr_ok "port c removed live: driver-c stopped, the router restarted (pid $(pid_of router)), its TAP, routes (IPv4, IPv6, runtime) and neighbour gone; $RELEASED"

# ---- shaper-b, moved down the table: its mailbox ----
c shaper set b rate 900mbit
[ "$rc" = 0 ] || rr_fail "shaper set b after the removal: exit $rc: $err $out"
"$RR" shaper show b -S "$RR_SOCK" | head -1 | grep -q "rate 900mbit" || rr_fail "shaper show b: $("$RR" shaper show b -S "$RR_SOCK")"
rr_ok "shaper-b, moved down the table by the removal: shaper set b rate 900mbit answered"

# ---- added back with persist = yes, removed again: the TAP stays ----
add_c() { # add_c [EXTRA PORT C KEYS]
    local before
    before=$(pid_of router)
    with_c "${1:-}"
    c reload
    [ "$rc" = 0 ] || rr_fail "reload with port c added: exit $rc: $err; out: $out"
    grep -qxF "starting driver-c" <<<"$out" && grep -qxF "restarting router (pid $before) through its warm standby" <<<"$out" ||
        rr_fail "the answer does not start driver-c and restart the router through its standby: $out"
    rr_status || rr_fail "status"
    [ "${RR_STATE[driver-c]:-}" = up ] || rr_fail "driver-c is ${RR_STATE[driver-c]:-missing} after the reload"
    ip -n "$NS_C" link show "$IF_C" >/dev/null 2>&1 || rr_fail "no TAP $IF_C in $NS_C after the reload"
    add_host_c
}
SHAPER_C=1
add_c 'persist = yes\n'
[ "${RR_STATE[shaper-c]:-}" = up ] || rr_fail "shaper-c is ${RR_STATE[shaper-c]:-missing} after the reload"
rr_ok "port c added back live, shaped: driver-c pid $(pid_of driver-c), shaper-c pid $(pid_of shaper-c), the router restarted (pid $(pid_of router)), A pings C"
remove_c "kept (persist = yes)"
ip -n "$NS_C" link del "$IF_C" || rr_fail "ip link del $IF_C"
rr_ok "persist = yes: port c removed again, with its shaper, its TAP kept"

# ---- the stream: nothing lost ----
rr_ff_counts
if [ -z "$RR_FF_WHOLE" ]; then
    qd=$(($(qdrop) - QD0)) rb=$(($(rcvbuf) - RB0))
    rr_stats || rr_fail "stats"
    # The drops on the stream's path inside ringrouter.
    drops=$(for k in "${!RRS[@]}"; do
        [[ $k =~ ^(router|driver-a|driver-b|shaper-b|ring\.rx-a|ring\.sh-b|ring\.tx-b)\. ]] &&
            [[ $k == *drop* || $k == *full* ]] && [[ $k != *drop6* ]] && [ "${RRS[$k]}" != 0 ] && printf '%s=%s ' "$k" "${RRS[$k]}"
    done)
    missing=$((RR_FF_SENT - RR_FF_GOT))
    # All of them in the hosts' queues, none in ringrouter: the machine did
    # not run driver-a or the sink in time (other work on its 2 CPUs).
    if [ "$RR_FF_DUP" = 0 ] && [ "$RR_FF_REORD" = 0 ] && [ "$missing" -le $((qd + rb)) ] && [ -z "$drops" ]; then
        t_timing_fail "the stream A -> B lost $missing datagrams, all in the hosts' queues (A's TAP queue $qd, B's socket $rb): not scheduled in time"
    else
        rr_fail "the stream A -> B through three port reloads: $RR_FF_SAID; A's TAP queue dropped $qd, B's socket $rb; drop counters: ${drops:-none}"
    fi
else
    rr_ok "the stream A -> B: all $RR_FF_SENT datagrams arrived, none twice, none out of order"
fi
rr_status || rr_fail "status"
[ "${RR_PIDS[driver-a]}" = "$A0" ] && [ "${RR_PIDS[driver-b]}" = "$B0" ] && [ "${RR_PIDS[shaper-b]}" = "$SB0" ] &&
    [ "${RR_RESTARTS[driver-a]}" = 0 ] && [ "${RR_RESTARTS[driver-b]}" = 0 ] ||
    rr_fail "driver-a, driver-b or shaper-b restarted: pids $A0 $B0 $SB0 -> ${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]} ${RR_PIDS[shaper-b]}"
[ "${RR_PLANNED[router]}" = 3 ] && [ "${RR_RESTARTS[router]}" = 0 ] ||
    rr_fail "the router restarted ${RR_PLANNED[router]} times as planned (expected 3, one a port reload) and ${RR_RESTARTS[router]} after a death (expected 0)"
rr_stats || rr_fail "stats"
rr_zero "${RR_MALFORMED[@]}"

# ---- shaper-b's events, keyed by its new place: a restart (lossy: after the stream) ----
c restart shaper-b
[ "$rc" = 0 ] || rr_fail "restart shaper-b after the removal: exit $rc: $err $out"
rr_wait 5 eval 'rr_status && [ "${RR_STATE[shaper-b]}" = up ] && [ "${RR_PIDS[shaper-b]}" != "$SB0" ]' ||
    rr_fail "shaper-b did not come back from its restart: ${RR_STATE[shaper-b]:-?} pid ${RR_PIDS[shaper-b]:-?} (was $SB0)"
p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B after shaper-b's restart: $p"
rr_ok "shaper-b restarted as asked (pid $SB0 -> ${RR_PIDS[shaper-b]}); A pings B"
rr_stop
rr_census_ok
t_pass "reload_port: refused changes, port c removed (TAP gone, routes and neighbour withdrawn, shaper-b moved), added back and removed with persist (TAP kept); stream A -> B: $RR_FF_SENT datagrams, none lost"
