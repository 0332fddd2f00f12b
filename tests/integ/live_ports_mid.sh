#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/live_ports_mid.sh: any port removed live, not only the last,
# and a swap of two ports in one reload (issue 48), under a numbered flow on
# every port: a stream A -> B of 2,000 datagrams a second (bench/
# faultflow) through a and b, and flows C -> B, D -> B and F -> B of 1,000
# a second (tests/lib/seqflow.py) through c, d and f. Ports in the file:
# a, b, c, d, f. A port keeps its index (its slot) for its life
# (supervisor/port_slots.c). In turn:
#   - c removed (d and f stay after it): driver-c stops, the router
#     restarts through its warm standby, c's rings, TAP, routes and static
#     neighbour go; d's static neighbour and routes stay d's; `link` lists
#     a b d f; every other driver keeps its pid;
#   - the supervisor killed, `up` again: it adopts the services with c's
#     slot still vacant (the state file keeps the slots), and d and f
#     forward on;
#   - d removed and e added in one reload (f stays after both): e takes
#     c's slot (`link` lists a b e f), not d's, freed in that reload; A
#     reaches E;
#   - the flows through the ports no reload touched (A -> B; D -> B until
#     d goes; F -> B throughout) lost, duplicated and reordered nothing,
#     driver-a, driver-b and driver-f never restarted, and the census is
#     clean. Each reload prints the longest silence of the flow F -> B
#     while it ran, and the swap how long after its start E's first
#     datagram reached B (e's device made, the host side configured).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init live_ports_mid
rr_need ss
rr_faultflow_init

n=$(($$ % 250 + 1))
RR_SERVICES=(router driver-a driver-b driver-c driver-d driver-f)
RR_ROUTER_EXTRA='orphan_grace_ms = 30000'
declare -A NS IF GW HOST
for p in c d e f; do
    rr_netns "$p"
    NS[$p]=$RR_NS IF[$p]=rrt$$$p
done
GW[c]=10.63.$n.1 HOST[c]=10.63.$n.2
GW[d]=10.64.$n.1 HOST[d]=10.64.$n.2
GW[e]=10.65.$n.1 HOST[e]=10.65.$n.2
GW[f]=10.66.$n.1 HOST[f]=10.66.$n.2
R_C=10.73.$n.0/24 R_D=10.74.$n.0/24 NB_C=10.63.$n.9 NB_D=10.64.$n.9
# port_text NAME: a TAP port's section (its [service] is rr_topology's, RR_SERVICES)
port_text() {
    printf '[port %s]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\n' "$1" "${IF[$1]}" "${NS[$1]}" "${GW[$1]}"
}
# (Each section ends with an empty line: the test removes them with sed.)
rr_topology "$(port_text c)

$(port_text d)

$(port_text f)

[route $R_C]
via = ${HOST[c]}

[neigh $NB_C]
mac = 02:00:00:00:00:0c

[route $R_D]
via = ${HOST[d]}

[neigh $NB_D]
mac = 02:00:00:00:00:0d"
M=$RR_T/m.ini
cp "$M" "$RR_T/all.ini"
c() { rr_c "$@"; }
routes() { "$RR" route show -S "$RR_SOCK" | tr -s ' '; }
links() { "$RR" link --json -S "$RR_SOCK" | "$RR_PY" -c 'import json, sys; print(*(l["name"] for l in json.load(sys.stdin)["links"]))'; }
neigh_of() { "$RR" neigh show "$1" -S "$RR_SOCK" | awk -v a="$1" '$1 == a { print $3, $4 }'; }
rr_start
for p in c d f; do
    rr_host_side "${NS[$p]}" "${IF[$p]}" "${HOST[$p]}" "${GW[$p]}"
done

# flow_start NAME: a seqflow from host NAME to B, port 9100 + its letter's rank
declare -A FS FR
flow_port() { echo $((9100 + $(printf '%d' "'$1") - 96)); }
flow_start() {
    local log=$RR_T/flow-$1.log port
    port=$(flow_port "$1")
    : >"$log"
    ip netns exec "$RR_NS_B" "$RR_PY" "$RR_FLOW_PY" recv "$RR_HOST_B" "$port" "$log" 2>"$RR_T/flow-$1-recv.err" &
    FR[$1]=$!
    RR_EXTRA_PIDS+=("$!")
    rr_wait 5 eval "rr_in $RR_NS_B ss -Hlun 'sport = :$port' | grep -q ." || rr_fail "flow $1: its sink did not bind"
    ip netns exec "${NS[$1]}" "$RR_PY" "$RR_FLOW_PY" send "$RR_HOST_B" "$port" 1000 2>"$RR_T/flow-$1-send.err" &
    FS[$1]=$!
    RR_EXTRA_PIDS+=("$!")
    rr_wait 5 eval "[ -s $log ]" || rr_fail "flow $1: no datagram arrived within 5 s"
}
# flow_stop NAME: sender, then sink; FLOW_SAID its summary (missing and dup
# count only up to the last datagram that arrived: none is in flight then)
flow_stop() {
    local p
    for p in "${FS[$1]}" "${FR[$1]}"; do
        kill -TERM "$p" 2>/dev/null
        rr_wait 5 eval "! rr_alive $p" || rr_fail "flow $1: pid $p did not stop within 5 s of SIGTERM"
        wait "$p" || rr_fail "flow $1: pid $p exited with $?"
    done
    FLOW_SAID=$("$RR_PY" "$RR_FLOW_PY" summary "$RR_T/flow-$1.log")
}
# silence NAME T0_US: the flow's longest silence (ms) among arrivals from T0 on
silence() {
    awk -v a="$2" '$3 >= a { if (p) { d = $3 - p; if (d > m) m = d } p = $3 } END { printf "%d", m / 1000 }' "$RR_T/flow-$1.log"
}
# back NAME T_US: a datagram of the flow sent at or after T has arrived
back() { awk -v t="$2" '$2 >= t { f = 1 } END { exit !f }' "$RR_T/flow-$1.log"; }

qdrop() { rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/statistics/tx_dropped"; }
rcvbuf() { rr_in "$RR_NS_B" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp; }
QD0=$(qdrop) RB0=$(rcvbuf)
rr_ff_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" 2000
for p in c d f; do flow_start "$p"; done
rr_status || rr_fail "status"
A0=${RR_PIDS[driver-a]} B0=${RR_PIDS[driver-b]} D0=${RR_PIDS[driver-d]} F0=${RR_PIDS[driver-f]}
[ "$(links)" = "a b c d f" ] || rr_fail "link: $(links)"
[ "$(neigh_of "$NB_D")" = "d static" ] || rr_fail "neighbour $NB_D: $(neigh_of "$NB_D")"
rr_ok "up: ports a b c d f; flows A -> B, C -> B, D -> B, F -> B"

# reload_timed WHAT: reload must succeed; T0 its start, MS how long it took
# to answer, SIL the flow F -> B's longest silence from T0 until it is back
PAUSES=
reload_timed() {
    local t1
    rr_now
    T0=$RR_NOW
    c reload
    [ "$rc" = 0 ] || rr_fail "$1: reload: exit $rc: $err; said: $out"
    rr_now
    t1=$RR_NOW
    rr_wait 5 back f "$t1" || rr_fail "$1: the flow F -> B did not come back within 5 s"
    MS=$(((t1 - T0) / 1000)) SIL=$(silence f "$T0")
    PAUSES+="$1: answered in $MS ms, F -> B's longest silence $SIL ms; "
}

# ---- c, a middle port, removed ----
flow_stop c
{
    sed '/^\[port c\]/,/^$/d; /^\[service driver-c\]/,/^$/d; /^\[route '"${R_C%/*}"'\//,/^$/d; /^\[neigh '"$NB_C"'\]/,/^$/d' "$RR_T/all.ini"
} >"$M"
"$RR" check -c "$M" >/dev/null || rr_fail "the manifest without c does not check: $(cat "$M")"
before=$(rr_status && echo "${RR_PIDS[router]}")
c check --diff
rr_said "check --diff with c removed" "port c: removed, tap ${IF[c]} in netns ${NS[c]} (stops driver-c; its device goes; restarts router)
route $R_C: removed
neigh $NB_C: removed with port c
restart router: port c removed: the router takes its rings at start
3 changes, 1 restart"
reload_timed "c removed"
grep -qxF "stopping driver-c" <<<"$out" && grep -qxF "restarting router (pid $before) through its warm standby" <<<"$out" &&
    grep -q "^port c: released, [0-9]* packets\? drained from its rings, TAP ${IF[c]} removed$" <<<"$out" &&
    [ "$(tail -1 <<<"$out")" = "reload: done, 3 changes" ] || rr_fail "reload with c removed said: $out"
RR_SERVICES=(router driver-a driver-b driver-d driver-f)
rr_status || rr_fail "status"
[ -z "${RR_STATE[driver-c]:-}" ] || rr_fail "driver-c is still listed: ${RR_STATE[driver-c]}"
[ "${RR_PIDS[router]}" != "$before" ] || rr_fail "the router kept pid $before"
[ "${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]} ${RR_PIDS[driver-d]} ${RR_PIDS[driver-f]}" = "$A0 $B0 $D0 $F0" ] ||
    rr_fail "removing c restarted a driver that stays: $A0 $B0 $D0 $F0 -> ${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]} ${RR_PIDS[driver-d]} ${RR_PIDS[driver-f]}"
[ "$(links)" = "a b d f" ] || rr_fail "link after c's removal: $(links)"
r=$(routes)
! awk '$3 == "c" || $2 == "c" { f = 1 } END { exit !f }' <<<"$r" || rr_fail "routes through c are left: $r"
grep -q "^$R_D ${HOST[d]} d manifest" <<<"$r" && grep -q "^10.64.$n.0/24 - d connected" <<<"$r" &&
    grep -q "^10.66.$n.0/24 - f connected" <<<"$r" || rr_fail "d's or f's routes after c's removal: $r"
[ -z "$(neigh_of "$NB_C")" ] || rr_fail "neighbour $NB_C is left: $(neigh_of "$NB_C")"
[ "$(neigh_of "$NB_D")" = "d static" ] || rr_fail "neighbour $NB_D after c's removal: $(neigh_of "$NB_D")"
! ip -n "${NS[c]}" link show "${IF[c]}" >/dev/null 2>&1 || rr_fail "the TAP ${IF[c]} is left"
p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "${HOST[d]}" 2>&1) || rr_fail "ping A -> D after c's removal: $p"
rr_ok "c, a middle port, removed in $MS ms: driver-c stopped, the router restarted, its TAP, routes and neighbour gone; d's kept; link: a b d f; the flow F -> B's longest silence $SIL ms"

# ---- the supervisor killed: the next one adopts, c's slot still vacant ----
rr_remember_services
kill -KILL "$RR_PID"
wait "$RR_PID" 2>/dev/null
RR_PID=
mark=$(wc -l <"$RR_LOG")
rr_up
grep -q "adopting 5 running services" <(tail -n +"$mark" "$RR_LOG") ||
    rr_fail "the new supervisor did not adopt: $(tail -n +"$mark" "$RR_LOG")"
rr_wait 10 eval 'tail -n +$mark "$RR_LOG" | grep -q "router: standby pid [0-9]* takes over"' ||
    rr_fail "the router did not move to the new FIBs: $(tail -n +"$mark" "$RR_LOG")"
rr_wait 10 rr_all_up || rr_fail "not every service up after the adoption"
[ "${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]} ${RR_PIDS[driver-d]} ${RR_PIDS[driver-f]}" = "$A0 $B0 $D0 $F0" ] ||
    rr_fail "a driver changed pid across the adoption: $A0 $B0 $D0 $F0 -> ${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]} ${RR_PIDS[driver-d]} ${RR_PIDS[driver-f]}"
[ "$(links)" = "a b d f" ] || rr_fail "link after the adoption: $(links)"
rr_now
t=$RR_NOW
rr_wait 5 eval "back d $t && back f $t" || rr_fail "the flows D -> B and F -> B did not go on after the adoption"
rr_ok "supervisor killed and started again: it adopted the 5 services, c's slot vacant; D -> B and F -> B go on"

# ---- d removed and e added in one reload ----
flow_stop d
D_SAID=$FLOW_SAID
{
    sed '/^\[port d\]/,/^$/d; /^\[service driver-d\]/,/^$/d; /^\[route '"${R_D%/*}"'\//,/^$/d; /^\[neigh '"$NB_D"'\]/,/^$/d' "$M"
    printf '\n'
    port_text e
    printf '\n[service driver-e]\nhang_ms = 3000\n'
} >"$RR_T/swap.ini"
mv "$RR_T/swap.ini" "$M"
"$RR" check -c "$M" >/dev/null || rr_fail "the manifest with e for d does not check: $(cat "$M")"
reload_timed "d swapped for e"
grep -qxF "stopping driver-d" <<<"$out" && grep -qxF "starting driver-e" <<<"$out" &&
    grep -q "^port d: released, [0-9]* packets\? drained from its rings, TAP ${IF[d]} removed$" <<<"$out" ||
    rr_fail "reload swapping d for e said: $out"
rr_wait 5 eval 'ip -n "${NS[e]}" link show "${IF[e]}" >/dev/null 2>&1' || rr_fail "no TAP ${IF[e]} after the swap"
rr_host_side "${NS[e]}" "${IF[e]}" "${HOST[e]}" "${GW[e]}"
flow_start e
E_MS=$(awk -v t="$T0" 'NR == 1 { printf "%d", ($3 - t) / 1000 }' "$RR_T/flow-e.log")
PAUSES+="e's first datagram $E_MS ms after the swap began; "
RR_SERVICES=(router driver-a driver-b driver-f driver-e)
rr_status || rr_fail "status"
[ -z "${RR_STATE[driver-d]:-}" ] && [ "${RR_STATE[driver-e]:-}" = up ] || rr_fail "after the swap: driver-d ${RR_STATE[driver-d]:-gone}, driver-e ${RR_STATE[driver-e]:-missing}"
[ "${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]} ${RR_PIDS[driver-f]}" = "$A0 $B0 $F0" ] || rr_fail "the swap restarted a driver that stays"
[ "$(links)" = "a b e f" ] || rr_fail "link after the swap (e in c's slot): $(links)"
r=$(routes)
grep -q "^10.65.$n.0/24 - e connected" <<<"$r" && ! awk '$3 == "d" || $2 == "d" { f = 1 } END { exit !f }' <<<"$r" ||
    rr_fail "routes after the swap: $r"
[ -z "$(neigh_of "$NB_D")" ] || rr_fail "neighbour $NB_D is left: $(neigh_of "$NB_D")"
p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "${HOST[e]}" 2>&1) || rr_fail "ping A -> E after the swap: $p"
rr_ok "d swapped for e in one reload (answered in $MS ms): e took c's slot (link: a b e f), A pings E, E's first datagram $E_MS ms after the reload began; F -> B's longest silence $SIL ms"

# ---- the flows through the ports no reload touched: nothing lost ----
flow_stop f
F_SAID=$FLOW_SAID
flow_stop e
rr_ff_counts
lost=
for s in "D -> B (until d went): $D_SAID" "F -> B: $F_SAID"; do
    [[ $s == *" missing 0 dup 0" ]] || lost+="$s; "
done
[ -n "$RR_FF_WHOLE" ] || lost+="A -> B: $RR_FF_SAID; "
if [ -n "$lost" ]; then
    qd=$(($(qdrop) - QD0)) rb=$(($(rcvbuf) - RB0))
    drops=$(rr_stats && for k in "${!RRS[@]}"; do
        [[ $k == *drop* || $k == *full* ]] && [ "${RRS[$k]}" != 0 ] && echo "$k ${RRS[$k]}"
    done | sort | paste -sd ' ')
    if [ -z "$drops" ] && [ $((qd + rb)) -gt 0 ]; then
        t_timing_fail "lost in the hosts' queues (A's TAP queue $qd, B's socket $rb), none in ringrouter: ${lost%; }"
    else
        rr_fail "the unchanged ports lost traffic: ${lost%; }; A's TAP queue dropped $qd, B's socket $rb; drop counters: ${drops:-none}"
    fi
else
    rr_ok "nothing lost, twice or out of order: A -> B $RR_FF_SENT datagrams; D -> B $D_SAID; F -> B $F_SAID"
fi
rr_status || rr_fail "status"
[ "${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]} ${RR_PIDS[driver-f]}" = "$A0 $B0 $F0" ] &&
    [ "${RR_RESTARTS[driver-a]}" = 0 ] && [ "${RR_RESTARTS[driver-b]}" = 0 ] && [ "${RR_RESTARTS[driver-f]}" = 0 ] ||
    rr_fail "driver-a, driver-b or driver-f restarted"
rr_stop
rr_census_ok
t_pass "live_ports_mid: a middle port removed, the supervisor's successor adopting the vacant slot, a swap in one reload; ${PAUSES%; }"
