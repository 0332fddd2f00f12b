#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/vlan_live.sh: VLAN ports added and removed by `reload` (issue
# 48), on a TAP parent t, under a numbered stream A -> B of 2,000 datagrams
# a second (bench/faultflow) through ports a and b, which no reload
# touches. The VLAN hosts are played on a raw socket of t's device
# (tests/lib/vlan_hosts.py, as in vlan.sh).
#   - up with t and t.10: the host of VLAN 10 reaches B;
#   - t.20 added by reload: the router and driver-t restart (its new map
#     and ring), driver-a and driver-b do not; the host of VLAN 20 reaches
#     B, VLAN 10 still does; `link` shows t.20;
#   - t.10 removed by reload: its ring is released, its connected route
#     goes, `link` no longer shows it; VLAN 20 still reaches B;
#   - refused, nothing changed: a VLAN port added with a [shaper] of its own;
#   - the stream lost, duplicated and reordered nothing, and the census is
#     clean. Each reload prints how long t's traffic (VLAN 20's pings) and
#     the reload took.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init vlan_live
rr_need ss
rr_faultflow_init

n=$(($$ % 250 + 1))
RR_SERVICES=(router driver-a driver-b driver-t)
rr_netns t
NS_T=$RR_NS IF_T=rrt$$t
net() { echo "10.$1.$n"; }
vlan_text() { printf '\n[port t.%s]\nparent = t\nvlan = %s\naddress = %s.1/24\n' "$1" "$1" "$(net "$2")"; }
rr_topology "$(printf '[port t]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s.1/24\n' "$IF_T" "$NS_T" "$(net 81)")
$(vlan_text 10 82)"
M=$RR_T/m.ini
cp "$M" "$RR_T/base.ini"
c() { rr_c "$@"; }
routes() { "$RR" route show -S "$RR_SOCK" | tr -s ' '; }
links() { "$RR" link --json -S "$RR_SOCK" | "$RR_PY" -c 'import json, sys; print(*(l["name"] for l in json.load(sys.stdin)["links"]))'; }
rr_start
ip -n "$NS_T" link set "$IF_T" up || rr_fail "link set $IF_T up"
H10=10/$(net 82).2/$(net 82).1 H20=20/$(net 83).2/$(net 83).1
VH=$RR_ROOT/tests/lib/vlan_hosts.py
serve() { # serve NAME HOST...
    local log=$RR_T/serve-$1
    shift
    ip netns exec "$NS_T" "$RR_PY" "$VH" serve "$IF_T" "$@" >"$log" 2>&1 & # not rr_in: $! must be python
    RR_EXTRA_PIDS+=($!)
    rr_wait 5 grep -q '^ready' "$log" || rr_fail "VLAN hosts on $IF_T: $(cat "$log")"
}
vping() { # vping HOST WHAT: 3 pings to B's host, every reply in $out
    out=$(rr_in "$NS_T" "$RR_PY" "$VH" ping "$IF_T" "$1" "$RR_HOST_B" 3 2>&1) || rr_fail "ping $2: $out"
}
serve 10 "$H10"
vping "$H10" "VLAN 10 -> B"
rr_ok "up: VLAN 10 on t reaches B"

qdrop() { rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/statistics/tx_dropped"; }
rcvbuf() { rr_in "$RR_NS_B" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp; }
QD0=$(qdrop) RB0=$(rcvbuf)
rr_ff_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" 2000
rr_status || rr_fail "status"
A0=${RR_PIDS[driver-a]} B0=${RR_PIDS[driver-b]}

# reload_ok WHAT: reload must succeed, restarting the router and driver-t
# and no other driver; MS how long it took to answer
reload_ok() {
    local t0 t1 r0 d0
    rr_status || rr_fail "status"
    r0=${RR_PIDS[router]} d0=${RR_PIDS[driver-t]}
    rr_now
    t0=$RR_NOW
    c reload
    rr_now
    t1=$RR_NOW
    [ "$rc" = 0 ] || rr_fail "$1: reload: exit $rc: $err; said: $out"
    MS=$(((t1 - t0) / 1000))
    rr_status || rr_fail "status"
    [ "${RR_PIDS[router]}" != "$r0" ] && [ "${RR_PIDS[driver-t]}" != "$d0" ] ||
        rr_fail "$1: the router or driver-t kept its pid ($r0 $d0): $out"
    [ "${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]}" = "$A0 $B0" ] || rr_fail "$1: driver-a or driver-b restarted"
}

# ---- t.20 added ----
{ cat "$RR_T/base.ini"; vlan_text 20 83; } >"$M"
c check --diff
rr_said "check --diff with t.20 added" "port t.20: added, VLAN 20 of t, address $(net 83).1/24 (restarts router and t's drivers)
restart router: port t.20 added: the router takes its rings at start
restart driver-t: VLAN port t.20 added
1 change, 2 restarts"
reload_ok "t.20 added"
serve 20 "$H20"
vping "$H20" "VLAN 20 -> B"
vping "$H10" "VLAN 10 -> B after t.20 was added"
[ "$(links)" = "a b t t.10 t.20" ] || rr_fail "link after t.20 was added: $(links)"
rr_ok "t.20 added live in $MS ms: the router and driver-t restarted, a and b did not; VLAN 20 and VLAN 10 reach B"

# ---- refused: a VLAN port with its own shaper ----
{ cat "$M"; vlan_text 30 84; printf '\n[shaper t.30]\nrate = 10mbit\n'; } >"$RR_T/shaped.ini"
cp "$M" "$RR_T/now.ini"
cp "$RR_T/shaped.ini" "$M"
c reload
[ "$rc" = 100 ] && [[ "$err" == *"VLAN port t.30 added with a [shaper]: only at up; nothing changed"* ]] ||
    rr_fail "reload adding a shaped VLAN port: exit $rc: $err $out"
cp "$RR_T/now.ini" "$M"
rr_ok "refused, nothing changed: a VLAN port added with a [shaper] of its own"

# ---- t.10 removed ----
{ sed '/^\[port t.10\]/,/^$/d' "$RR_T/now.ini"; } >"$M"
reload_ok "t.10 removed"
grep -q "^port t.10: released, [0-9]* packets\? drained from its rings, VLAN of t$" <<<"$out" ||
    rr_fail "reload removing t.10 said: $out"
[ "$(links)" = "a b t t.20" ] || rr_fail "link after t.10 was removed: $(links)"
! routes | grep -q "^$(net 82).0/24 " || rr_fail "t.10's connected route is left: $(routes)"
vping "$H20" "VLAN 20 -> B after t.10 was removed"
rr_ok "t.10 removed live in $MS ms: its ring released, its route gone; VLAN 20 reaches B"

# ---- the stream A -> B: nothing lost ----
rr_ff_counts
if [ -z "$RR_FF_WHOLE" ]; then
    qd=$(($(qdrop) - QD0)) rb=$(($(rcvbuf) - RB0)) missing=$((RR_FF_SENT - RR_FF_GOT))
    if [ "$RR_FF_DUP" = 0 ] && [ "$RR_FF_REORD" = 0 ] && [ "$missing" -le $((qd + rb)) ]; then
        t_timing_fail "the stream A -> B lost $missing datagrams, all in the hosts' queues (A's TAP queue $qd, B's socket $rb)"
    else
        rr_fail "the stream A -> B through the VLAN reloads: $RR_FF_SAID; A's TAP queue dropped $qd, B's socket $rb"
    fi
else
    rr_ok "the stream A -> B: all $RR_FF_SENT datagrams arrived, none twice, none out of order"
fi
rr_stop
rr_census_ok
t_pass "vlan_live: VLAN ports added and removed by reload on a TAP parent; stream A -> B: $RR_FF_SENT datagrams, none lost"
