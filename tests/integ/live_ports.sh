#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/live_ports.sh: ports that change while they run (issue 48),
# under a numbered stream A -> B of 2,000 datagrams a second (bench/
# faultflow) through ports a and b, which no change touches, and a numbered
# flow C -> B of 1,000 a second (tests/lib/seqflow.py) through port c,
# which each change touches. In turn:
#   - an address change on c by `addr add` (its /24 becomes a /25: the host
#     keeps its gateway): the connected route moves; an IPv6 address added
#     and removed (its connected route comes and goes); refused, nothing
#     changed, each naming the port and why: an address on a's network,
#     the IPv4 address deleted;
#   - an MTU change on c by `reload` (the file `save` wrote, edited): the
#     TAP's MTU follows, and so does the router's: A's 1,420-byte datagram
#     with DF set gets "fragmentation needed, mtu 1400"; back by `link set
#     c mtu 1500`; refused: an MTU out of range;
#   - `link set c down` and `up`: the device follows;
#   - a shaper added to c by reload, then removed: shaper-c starts and
#     stops, the router and driver-c restart, the others do not;
#   - port c swapped for a port d in one reload.
# Each change prints how long the C flow paused (its longest silence while
# the change was under way). At the end: the stream A -> B lost, duplicated
# and reordered nothing, driver-a and driver-b never restarted, and the
# census is clean. B is resolved before the streams start (a ping A -> B),
# so that nothing of A -> B waits for ARP: across the changes of c the
# router sent no broadcast ARP request for B (tests/lib/arp_watch.py on B's
# device: it kept B's entry through every restart), and no counter of
# packets that waited for a neighbour, or were dropped waiting, moved. A
# loss is charged to the change under way when it was sent
# (bench/loss_where.py), with the router's drop counters.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init live_ports
rr_need ss
rr_faultflow_init
rr_shaper_init

n=$(($$ % 250 + 1))
RR_SERVICES=(router driver-a driver-b)
rr_netns c
NS_C=$RR_NS IF_C=rrt$$c GW_C=10.63.$n.1 HOST_C=10.63.$n.2
rr_netns d
NS_D=$RR_NS IF_D=rrt$$d GW_D=10.64.$n.1
NET6_C=2001:db8:c$((n % 10))::
rr_topology "$(printf '[port c]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\n\n[service driver-c]\nhang_ms = 3000\n' \
    "$IF_C" "$NS_C" "$GW_C")"
M=$RR_T/m.ini
c() { rr_c "$@"; }
routes() { "$RR" route show -S "$RR_SOCK" | tr -s ' '; }
pid_of() { rr_status || rr_fail "status"; echo "${RR_PIDS[$1]:-}"; }
rr_start
rr_host_side "$NS_C" "$IF_C" "$HOST_C" "$GW_C"
p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_C" 2>&1) || rr_fail "ping A -> C: $p"
rr_ok "up: A, B and C behind ports a, b and c; A pings C"

# The router resolves B now: a stream's first datagrams to a neighbour
# nobody resolved yet wait for its ARP answer, whatever port c does.
p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $p"
[ "$("$RR" neigh show "$RR_HOST_B" -S "$RR_SOCK" | awk 'NR == 2 { print $4 }')" = reachable ] ||
    rr_fail "B is not reachable in the router's table after a ping: $("$RR" neigh show "$RR_HOST_B" -S "$RR_SOCK")"
ARPLOG=$RR_T/arp-b.log
ip netns exec "$RR_NS_B" "$RR_PY" "$RR_ROOT/tests/lib/arp_watch.py" "$RR_IF_B" "$RR_HOST_B" "$ARPLOG" 2>"$RR_T/arp-b.err" &
RR_EXTRA_PIDS+=($!)
rr_wait 5 test -e "$ARPLOG" || rr_fail "arp_watch.py did not start: $(cat "$RR_T/arp-b.err")"

qdrop() { rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/statistics/tx_dropped"; }
rcvbuf() { rr_in "$RR_NS_B" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp; }
# What a packet that waited for a neighbour can meet (docs/stats.md).
NEIGH_CTRS=(router.drop_pending_full router.drop_pending_limit router.drop_neigh_table_full router.drop_neigh_failed
    router.drop_neigh_evicted router.drop_neigh_removed router.drop_pending_restart)
neigh_ctrs() { rr_stats || rr_fail "stats"; for k in "${NEIGH_CTRS[@]}"; do echo "$k $(rr_ctr "$k")"; done; }
QD0=$(qdrop) RB0=$(rcvbuf) NC0=$(neigh_ctrs)
rr_now
T_FF=$RR_NOW
rr_ff_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" 2000
rr_flow_start "$NS_C" "$RR_NS_B" "$RR_HOST_B" 9100 1000
rr_msleep 300
rr_status || rr_fail "status"
A0=${RR_PIDS[driver-a]} B0=${RR_PIDS[driver-b]}
rr_now
STEPS=$RR_T/steps
echo "$T_FF $RR_NOW - start" >"$STEPS" # bench/loss_where.py: "T0_US T1_US GROUP STEP"

# change WHAT CMD...: CMD (a ringrouter command) must succeed; then the C
# flow must be back (a datagram sent after CMD answered has arrived), and
# its longest silence from CMD's start until then is the change's pause.
PAUSES=
change() {
    local what=$1 t0 t1 ms
    shift
    rr_now
    t0=$RR_NOW
    c "$@"
    [ "$rc" = 0 ] || rr_fail "$what: $* exit $rc: $err; said: $out"
    rr_now
    t1=$RR_NOW
    echo "$t0 $t1 c ${what// /_}" >>"$STEPS"
    rr_wait 5 eval "awk -v t=$t1 '\$2 >= t { f = 1 } END { exit !f }' \"\$RR_FLOW_LOG\"" ||
        rr_fail "$what: the flow C -> B did not come back within 5 s"
    ms=$(awk -v a="$t0" '$3 >= a { if (p) { d = $3 - p; if (d > m) m = d } p = $3 } END { printf "%d", m / 1000 }' "$RR_FLOW_LOG")
    PAUSES+="$what ${ms} ms; "
    rr_ok "$what: port c paused $ms ms (the longest silence of the flow C -> B)"
    [ "$ms" -lt 3000 ] || t_timing_fail "$what: port c paused $ms ms, over 3 s"
}
# refused WHAT EXPECTED CMD...: refused (exit 100) with EXPECTED in the error, no pid changed.
refused() {
    local what=$1 want=$2 before
    shift 2
    before="$(pid_of router) $(pid_of driver-c)"
    c "$@"
    [ "$rc" = 100 ] && [[ "$err" == *"$want"* ]] || rr_fail "$what: expected a refusal with \"$want\": exit $rc: $err $out"
    [ "$before" = "$(pid_of router) $(pid_of driver-c)" ] || rr_fail "$what: refused, but a pid changed"
}

# ---- an address change ----
change "addr add $GW_C/25 port c" addr add "$GW_C/25" port c
grep -q "^port c: address $GW_C/24 -> $GW_C/25 (restarts router)$" <<<"$out" &&
    [ "$(tail -1 <<<"$out")" = "addr add: done, 1 change" ] || rr_fail "addr add said: $out"
routes | grep -q "^10.63.$n.0/25 - c connected" && ! routes | grep -q "^10.63.$n.0/24 " ||
    rr_fail "the connected route of c did not move to /25: $(routes)"
c addr show c
[[ "$out" == "c "*" $GW_C/25"* ]] || rr_fail "addr show c: $out"
change "addr add ${NET6_C}1/64 port c" addr add "${NET6_C}1/64" port c
routes | grep -q "^${NET6_C}/64 - c connected" || rr_fail "no connected route ${NET6_C}/64 after addr add: $(routes)"
change "addr del ${NET6_C}1/64 port c" addr del "${NET6_C}1/64" port c
! routes | grep -q "^${NET6_C}/64 " || rr_fail "the connected route ${NET6_C}/64 is left after addr del: $(routes)"
refused "an address on a's network" "[port c] address: $RR_NET_A.9/24 overlaps port a's network $RR_NET_A.0/24" \
    addr add "$RR_NET_A.9/24" port c
refused "c's IPv4 address deleted" "port c: $GW_C/25 is its IPv4 address; a port has one IPv4 address" \
    addr del "$GW_C/25" port c
rr_ok "addresses live: $GW_C/25 and ${NET6_C}1/64 on c, connected routes moved; refused by name: an overlap, the IPv4 address deleted"

# ---- an MTU change by reload, of the file save wrote ----
c save
[ "$rc" = 0 ] && [ "$out" = "saved the running manifest to $M" ] || rr_fail "save: exit $rc: $err $out"
[ "$(stat -c '%u %a' "$M")" = "0 644" ] || rr_fail "the saved manifest is $(stat -c '%u %a' "$M"), not root's 644"
grep -q "^address = $GW_C/25$" "$M" || rr_fail "the saved manifest lacks c's new address: $(cat "$M")"
"$RR" check -c "$M" >/dev/null || rr_fail "the saved manifest does not check: $(cat "$M")"
sed -i "/^\[port c\]/a mtu = 1400" "$M"
c check --diff
rr_said "check --diff with c's mtu 1400" "port c: mtu 1500 -> 1400 (restarts router and the port's drivers)
restart router: port c: mtu 1500 -> 1400
restart driver-c: mtu 1500 -> 1400
1 change, 2 restarts"
change "reload: c's mtu 1400" reload
[ "$(ip -n "$NS_C" -o link show "$IF_C" | grep -o 'mtu [0-9]*')" = "mtu 1400" ] ||
    rr_fail "the TAP's MTU did not follow: $(ip -n "$NS_C" -o link show "$IF_C")"
p=$(rr_in "$RR_NS_A" ping -n -c 1 -W 2 -M do -s 1420 "$HOST_C" 2>&1)
grep -q "mtu = 1400" <<<"$p" || rr_fail "a 1,448-byte datagram with DF towards c did not get fragmentation needed, mtu 1400: $p"
refused "an MTU out of range" "[port c] mtu: " link set c mtu 60
change "link set c mtu 1500" link set c mtu 1500
[ "$(ip -n "$NS_C" -o link show "$IF_C" | grep -o 'mtu [0-9]*')" = "mtu 1500" ] || rr_fail "the TAP's MTU is not back to 1500"
# (From B: A has learnt the path MTU 1400 to C.)
p=$(rr_in "$RR_NS_B" ping -n -c 1 -W 2 -M do -s 1420 "$HOST_C" 2>&1) || rr_fail "1,448 bytes with DF towards c at mtu 1500: $p"
rr_ok "mtu live: 1400 by reload (the TAP's, and the router's fragmentation needed), 1500 by link set; 60 refused"

# ---- link set down, up ----
rr_now
T_LINK=$RR_NOW
c link set c down
[ "$rc" = 0 ] && ! ip -n "$NS_C" -o link show "$IF_C" | grep -q "[<,]UP[,>]" || rr_fail "link set c down: exit $rc: $err $out"
c link set c up
[ "$rc" = 0 ] && ip -n "$NS_C" -o link show "$IF_C" | grep -q "[<,]UP[,>]" || rr_fail "link set c up: exit $rc: $err $out"
ip -n "$NS_C" route replace default via "$GW_C" || rr_fail "C's default route back" # the kernel drops it with the link
rr_wait 5 eval "awk -v t=\$(date +%s%6N) '\$2 >= t { f = 1 } END { exit !f }' \"\$RR_FLOW_LOG\"" ||
    rr_fail "the flow C -> B did not come back within 5 s of link set c up"
rr_now
echo "$T_LINK $RR_NOW c link_set_c_down_up" >>"$STEPS"
rr_ok "link set c down, up: the device followed"

# ---- a shaper added to c and removed ----
c save
[ "$rc" = 0 ] || rr_fail "save: exit $rc: $err"
cp "$M" "$RR_T/noshaper.ini"
printf '\n[shaper c]\nrate = 500mbit\n\n[service shaper-c]\nhang_ms = 3000\n' >>"$M"
change "reload: a shaper added to c" reload
grep -qxF "starting shaper-c" <<<"$out" || rr_fail "reload with a shaper on c said: $out"
rr_status || rr_fail "status"
[ "${RR_STATE[shaper-c]:-}" = up ] || rr_fail "shaper-c is ${RR_STATE[shaper-c]:-missing}"
"$RR" shaper show c -S "$RR_SOCK" | head -1 | grep -q "rate 500mbit" || rr_fail "shaper show c: $("$RR" shaper show c -S "$RR_SOCK")"
cp "$RR_T/noshaper.ini" "$M"
change "reload: c's shaper removed" reload
grep -qxF "stopping shaper-c" <<<"$out" || rr_fail "reload with c's shaper removed said: $out"
rr_status || rr_fail "status"
[ -z "${RR_STATE[shaper-c]:-}" ] || rr_fail "shaper-c is still listed after its removal"
rr_ok "a shaper added to c (shaper-c started, rate 500mbit) and removed (stopped) by reload"

# ---- the stream A -> B: nothing lost, nothing waited for B ----
rr_flow_stop
rr_ff_counts
# A broadcast request: the router had no usable entry for B and resolved
# it afresh, with what it forwarded to B waiting meanwhile.
fresh=$(awk -v gw="$RR_GW_B" '$2 == "broadcast" && $3 == gw' "$ARPLOG")
[ -z "$fresh" ] || rr_fail "the router resolved B afresh under the changes of c (ARP requests: $(paste -sd ';' <<<"$fresh")); steps (us): $(paste -sd ';' "$STEPS")"
NC1=$(neigh_ctrs)
[ "$NC1" = "$NC0" ] || rr_fail "packets waited for a neighbour and were dropped under the changes of c: $(diff <(echo "$NC0") <(echo "$NC1") | sed -n 's/^> //p' | paste -sd ' ') (before: $(paste -sd ' ' <<<"$NC0"))"
rr_ok "B stayed resolved through every change of c: no broadcast ARP request for it ($(grep -c unicast "$ARPLOG") unicast probes), no packet dropped waiting for a neighbour (${NEIGH_CTRS[*]#router.} unchanged)"
# Where the losses were sent, step by step (start: the streams' first
# 300 ms, before any change).
where() { "$RR_PY" "$RR_ROOT/bench/loss_where.py" "$STEPS" "$RR_T/ab.send" "$RR_T/ab.bits" --sent "$RR_FF_SENT" --title "A -> B" 2>&1 | sed 's/^/    /'; }
if [ -z "$RR_FF_WHOLE" ]; then
    qd=$(($(qdrop) - QD0)) rb=$(($(rcvbuf) - RB0)) missing=$((RR_FF_SENT - RR_FF_GOT))
    if [ "$RR_FF_DUP" = 0 ] && [ "$RR_FF_REORD" = 0 ] && [ "$missing" -le $((qd + rb)) ]; then
        t_timing_fail "the stream A -> B lost $missing datagrams, all in the hosts' queues (A's TAP queue $qd, B's socket $rb): not scheduled in time"
        where
    else
        drops=$(rr_stats && for k in "${!RRS[@]}"; do
            [[ $k == *drop* || $k == *full* ]] && [ "${RRS[$k]}" != 0 ] && echo "$k ${RRS[$k]}"
        done | sort | paste -sd ' ')
        rr_fail "the stream A -> B through the changes of port c: $RR_FF_SAID; A's TAP queue dropped $qd, B's socket $rb; drop counters: ${drops:-none}
$(where)"
    fi
else
    rr_ok "the stream A -> B: all $RR_FF_SENT datagrams arrived, none twice, none out of order"
fi
rr_status || rr_fail "status"
[ "${RR_PIDS[driver-a]}" = "$A0" ] && [ "${RR_PIDS[driver-b]}" = "$B0" ] &&
    [ "${RR_RESTARTS[driver-a]}" = 0 ] && [ "${RR_RESTARTS[driver-b]}" = 0 ] && [ "${RR_RESTARTS[router]}" = 0 ] ||
    rr_fail "driver-a or driver-b restarted, or the router after a death: $A0 $B0 -> ${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]}"

# ---- port c swapped for d in one reload ----
{
    sed '/^\[port c\]/,/^$/d; /^\[service driver-c\]/,/^$/d' "$RR_T/noshaper.ini"
    printf '\n[port d]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\n\n[service driver-d]\nhang_ms = 3000\n' \
        "$IF_D" "$NS_D" "$GW_D"
} >"$M"
c reload
[ "$rc" = 0 ] && grep -qxF "stopping driver-c" <<<"$out" && grep -qxF "starting driver-d" <<<"$out" ||
    rr_fail "reload swapping c for d: exit $rc: $err; said: $out"
rr_status || rr_fail "status"
[ -z "${RR_STATE[driver-c]:-}" ] && [ "${RR_STATE[driver-d]:-}" = up ] || rr_fail "after the swap: driver-c ${RR_STATE[driver-c]:-gone}, driver-d ${RR_STATE[driver-d]:-missing}"
routes | grep -q "^10.64.$n.0/24 - d connected" && ! routes | grep -q "^10.63.$n.0/" || rr_fail "routes after the swap: $(routes)"
ip -n "$NS_C" link show "$IF_C" >/dev/null 2>&1 && rr_fail "the TAP $IF_C is left after c was removed"
ip -n "$NS_D" link show "$IF_D" >/dev/null 2>&1 || rr_fail "no TAP $IF_D after d was added"
p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B after the swap: $p"
rr_ok "port c swapped for d in one reload: driver-c stopped, driver-d started, routes follow, A pings B"

rr_stop
rr_census_ok
t_pass "live_ports: address, IPv6 address, mtu (reload and link set), link down/up, a shaper added and removed, a port swapped; pauses of port c: ${PAUSES%; }; stream A -> B: $RR_FF_SENT datagrams, none lost"
