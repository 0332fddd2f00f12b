#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/routes_mirror.sh: routes from a kernel table in a control
# namespace (issue 45, item 2), with plain `ip route ... table 100` as the
# daemon. The manifest's [routes] names the namespace rrt-PID-cp, table 100
# and grace_s 4; the namespace has a veth pair on port b's network (so
# the kernel takes gateways there) and one on a network no port has.
#   - a [routes] netns that does not exist: `up` fails, naming its line;
#   - a route in the table before `up` is in the FIB once rr-routes is up
#     (the dump); one added after appears in `route show` (origin daemon)
#     and forwards: ping with TTL 2 from host A reaches host B's address
#     behind it, TTL 1 gets "Time to live exceeded" from the router;
#   - a route via a gateway on no connected network, and one via the
#     router's own address: refused, counted (routes --json), logged once
#     per prefix (a second announcement adds no line);
#   - `ip route del`: the route leaves the FIB, and the traffic stops;
#   - a route with two weighted next hops becomes a next-hop group;
#   - `inject routes kill` while the table changes: the routes stay in the
#     FIB meanwhile, the new instance dumps the table (syncs + 1), and what
#     changed while it was down is there (an add) or gone (a delete);
#   - `ip route flush table 100`: the routes stay (routes in grace), then
#     leave after grace_s;
#   - 64 withdrawals that each retire a second-level group: one FIB
#     generation switch a batch at most (routes --json fib_gen, batches);
#   - 200,000 routes added with `ip -batch`: all in the FIB, and `status`
#     answers within 100 ms each time while they load; no turn of the
#     channel's reader took over 50 ms (tick_max_us); no service restarted;
#     rr-routes read at least 2 messages a read (nl_reads);
#   - rr-routes runs as its own uid, under its seccomp filter (3 filters).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init routes_mirror
[ -x "$RR_BIN_DIR/rr-routes" ] || rr_fail "$RR_BIN_DIR/rr-routes is missing: build with ninja first"
cp "$RR_BIN_DIR/rr-routes" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-routes" || rr_fail "cannot copy rr-routes"
BIG=${RR_ROUTES_BIG:-200000}

n=$(($$ % 250 + 1))
GRACE=4
rr_netns cp
CP=$RR_NS
RR_SERVICES+=(routes)
rr_topology "$(printf '[routes]\nnetns = %s\ntable = 100\ngrace_s = %s\n' "$CP" "$GRACE")"
ip -n "$CP" link add rrt$$d0 type veth peer name rrt$$d0p && ip -n "$CP" link set rrt$$d0 up && ip -n "$CP" link set rrt$$d0p up || rr_fail "dummy in $CP"
ip -n "$CP" addr add "$RR_NET_B.254/24" dev rrt$$d0 || rr_fail "address on port b's network in $CP"
ip -n "$CP" link add rrt$$d1 type veth peer name rrt$$d1p && ip -n "$CP" link set rrt$$d1 up && ip -n "$CP" link set rrt$$d1p up || rr_fail "second dummy in $CP"
ip -n "$CP" addr add "10.99.$n.1/24" dev rrt$$d1 || rr_fail "address off every port in $CP"
cpr() { ip -n "$CP" route "$@" table 100 || rr_fail "ip route $* table 100 in $CP"; }
cpr add "10.78.$n.0/24" via "$RR_HOST_B" # before up: only the dump can bring it
# A control namespace that does not exist: `up` fails, naming the line.
sed "s/^netns = $CP\$/netns = rrt-$$-nosuch/" "$RR_T/m.ini" >"$RR_T/bad.ini"
line=$(grep -n "^netns = rrt-$$-nosuch" "$RR_T/bad.ini" | cut -d: -f1)
o=$(timeout 20 "$RR" up -c "$RR_T/bad.ini" 2>&1) && rr_fail "up with a missing control namespace succeeded"
grep -q "bad.ini: line $line: \[routes\] netns: netns rrt-$$-nosuch: No such file or directory" <<<"$o" ||
    rr_fail "up with a missing control namespace: $o"
rr_ok "a [routes] netns that does not exist: up fails naming line $line"
rr_start
for a in 10.77.$n.1 10.78.$n.1 10.81.$n.1; do
    ip -n "$RR_NS_B" addr add "$a/32" dev lo || rr_fail "addr $a on B's lo"
done

rows() { "$RR" "$@" -S "$RR_SOCK" | tr -s ' '; }
routes_json() { "$RR" routes --json -S "$RR_SOCK" | "$RR_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
shown() { [ "$(rows route show "$1")" = "PREFIX VIA PORT ORIGIN
$1 $RR_HOST_B b daemon" ]; }
absent() { [ "$(rows route show "$1")" = "PREFIX VIA PORT ORIGIN" ]; }

rr_wait 5 shown "10.78.$n.0/24" || rr_fail "a route in table 100 before up is not in the FIB: $(rows route show)"
rr_ok "the dump at start: 10.78.$n.0/24 (in the table before up) is in the FIB, origin daemon"

# ---- a route added: shown, and forwarding with TTL - 1 ----
cpr add "10.77.$n.0/24" via "$RR_HOST_B"
rr_wait 2 shown "10.77.$n.0/24" || rr_fail "10.77.$n.0/24 not in route show within 2 s: $(rows route show)"
o=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 -t 2 "10.77.$n.1" 2>&1) && grep -q " 2 received" <<<"$o" ||
    rr_fail "ping -t 2 to 10.77.$n.1 through the mirrored route: $o"
o=$(rr_in "$RR_NS_A" ping -n -c 1 -W 2 -t 1 "10.77.$n.1" 2>&1)
grep -q "From $RR_GW_A .*Time to live exceeded" <<<"$o" || rr_fail "ping -t 1: no time exceeded from the router: $o"
rr_ok "10.77.$n.0/24 added in table 100: in route show within 2 s; ping TTL 2 through it answered, TTL 1 expires at the router"

# ---- refusals: counted, logged once per prefix ----
cpr add "10.79.$n.0/24" via "10.99.$n.2"
cpr add "10.80.$n.0/24" via "$RR_GW_B"
cpr add "$RR_NET_A.0/24" via "$RR_HOST_B" # port a's connected network: not the daemon's to take
notcon() { [ "$(routes_json 'd["routes_refused_not_connected"], d["routes_refused_self"], d["routes_refused_taken"]')" = "1 1 1" ]; }
rr_wait 2 notcon || rr_fail "refusals not counted: $("$RR" routes -S "$RR_SOCK")"
cpr replace "10.79.$n.0/24" via "10.99.$n.3"
twice() { [ "$(routes_json 'd["routes_refused_not_connected"]')" = 2 ]; }
rr_wait 2 twice || rr_fail "the second announcement of 10.79.$n.0/24 was not counted"
absent "10.79.$n.0/24" && absent "10.80.$n.0/24" || rr_fail "a refused route is in the FIB: $(rows route show)"
[ "$(rows route show "$RR_NET_A.0/24")" = "PREFIX VIA PORT ORIGIN
$RR_NET_A.0/24 - a connected" ] || rr_fail "the daemon's route over a connected network changed it: $(rows route show "$RR_NET_A.0/24")"
[ "$(grep -c "routes: refused 10.79.$n.0/24 from the kernel table: via 10.99.$n.[23], on no connected network" "$RR_LOG")" = 1 ] ||
    rr_fail "10.79.$n.0/24's refusal not logged exactly once: $(grep refused "$RR_LOG")"
grep -q "routes: refused 10.80.$n.0/24 from the kernel table: via $RR_GW_B, the router itself" "$RR_LOG" ||
    rr_fail "10.80.$n.0/24's refusal not logged: $(grep refused "$RR_LOG")"
rr_ok "via a gateway on no connected network, via the router itself, over a connected network: refused, counted (twice for two announcements), logged once"

# ---- withdrawal ----
cpr del "10.77.$n.0/24"
rr_wait 2 absent "10.77.$n.0/24" || rr_fail "10.77.$n.0/24 still in the FIB 2 s after ip route del"
o=$(rr_in "$RR_NS_A" ping -n -c 1 -W 1 "10.77.$n.1" 2>&1) && rr_fail "ping to 10.77.$n.1 answered after the withdrawal: $o"
rr_ok "ip route del: 10.77.$n.0/24 left the FIB within 2 s and traffic to it stops"

# ---- several next hops: a next-hop group, as route add ... via A via B ----
ip -n "$CP" route add "10.82.$n.0/24" table 100 nexthop via "$RR_HOST_B" weight 1 nexthop via "$RR_NET_B.3" weight 2 ||
    rr_fail "ip route add 10.82.$n.0/24 with two next hops in $CP"
group() {
    local o
    o=$(rows route show "10.82.$n.0/24")
    grep -q "^10.82.$n.0/24 $RR_HOST_B b daemon weight 1$" <<<"$o" && grep -q "^ *$RR_NET_B.3 b weight 2$" <<<"$o" &&
        [ "$(routes_json 'd["routes_multipath"]')" = 1 ]
}
rr_wait 2 group || rr_fail "a route with two next hops is not a group in the FIB: $(rows route show "10.82.$n.0/24"); $("$RR" routes -S "$RR_SOCK")"
cpr del "10.82.$n.0/24"
rr_wait 2 absent "10.82.$n.0/24" || rr_fail "the group route is still in the FIB 2 s after ip route del"
rr_ok "nexthop via B weight 1 nexthop via .3 weight 2: a group with both weights in route show, routes_multipath 1; deleted within 2 s"

# ---- rr-routes killed while the table changes ----
rr_status || rr_fail "status"
pid0=${RR_PIDS[routes]}
syncs0=$(routes_json 'd["syncs"]')
"$RR" inject routes kill -S "$RR_SOCK" >/dev/null || rr_fail "inject routes kill"
shown "10.78.$n.0/24" || rr_fail "10.78.$n.0/24 left the FIB when rr-routes died"
cpr add "10.81.$n.0/24" via "$RR_HOST_B"
cpr del "10.78.$n.0/24"
newpid() { rr_status && [ "${RR_STATE[routes]}" = up ] && [ "${RR_PIDS[routes]}" != "$pid0" ]; }
rr_wait 5 newpid || rr_fail "rr-routes did not come back after the kill"
resynced() { [ "$(routes_json 'd["syncs"]')" -gt "$syncs0" ] && shown "10.81.$n.0/24" && absent "10.78.$n.0/24"; }
rr_wait 5 resynced || rr_fail "after the restart: syncs $(routes_json 'd["syncs"]') (was $syncs0); $(rows route show)"
o=$(rr_in "$RR_NS_A" ping -n -c 1 -W 2 "10.81.$n.1" 2>&1) && grep -q " 1 received" <<<"$o" || rr_fail "ping 10.81.$n.1: $o"
rr_ok "inject routes kill: the routes stayed, the new instance resynchronised (10.81 added and 10.78 deleted meanwhile: right)"

# ---- a flush: grace, then withdrawal ----
cpr add "10.82.$n.0/24" via "$RR_HOST_B"
rr_wait 2 shown "10.82.$n.0/24" || rr_fail "10.82.$n.0/24 not mirrored"
rr_now
t0=$RR_NOW
ip -n "$CP" route flush table 100 || rr_fail "ip route flush table 100"
instale() { [ "$(routes_json 'd["stale"]')" -ge 2 ]; }
rr_wait 2 instale || rr_fail "after the flush no route is in grace: $("$RR" routes -S "$RR_SOCK")"
shown "10.81.$n.0/24" && shown "10.82.$n.0/24" || rr_fail "a flush withdrew the routes at once: $(rows route show)"
gone() { absent "10.81.$n.0/24" && absent "10.82.$n.0/24"; }
rr_wait $((GRACE + 4)) gone || rr_fail "the flushed routes are still there $((GRACE + 4)) s later"
rr_now
el=$(((RR_NOW - t0) / 1000))
[ "$el" -ge $((GRACE * 1000 - 500)) ] || rr_fail "the flushed routes left after $el ms, before grace_s ($GRACE s)"
[ "$(routes_json 'd["routes_grace_expired"] >= 2')" = True ] || rr_fail "routes_grace_expired not counted"
rr_ok "ip route flush table 100: the routes stayed in grace and left after $el ms (grace_s $GRACE)"

# ---- a batch of withdrawals: one FIB generation switch, not one a route ----
# 64 /25s, each in a /24 of its own (a second-level group each, which its
# withdrawal retires), and a /24 that stays (so that this is no flush).
"$RR_PY" - "$RR_HOST_B" >"$RR_T/b25" <<'EOF'
import sys
for i in range(64):
    print("route add 20.%d.0.0/25 via %s table 100" % (i, sys.argv[1]))
EOF
sed 's/^route add \([^ ]*\) .*/route del \1 table 100/' "$RR_T/b25" >"$RR_T/b25del"
cpr add "20.200.0.0/24" via "$RR_HOST_B"
ip -n "$CP" -batch "$RR_T/b25" || rr_fail "ip -batch of 64 /25s in $CP"
have() { [ "$(routes_json 'd["routes"]')" = "$1" ]; }
rr_wait 5 have 65 || rr_fail "64 /25s and a /24 added, $(routes_json 'd["routes"]') in the FIB"
read -r g0 b0 <<<"$(routes_json 'd["fib_gen"], d["batches"]')"
ip -n "$CP" -batch "$RR_T/b25del" || rr_fail "ip -batch deleting the /25s in $CP"
rr_wait 5 have 1 || rr_fail "the /25s withdrawn, $(routes_json 'd["routes"]') in the FIB 5 s later"
read -r g1 b1 <<<"$(routes_json 'd["fib_gen"], d["batches"]')"
[ $((g1 - g0)) -ge 1 ] && [ $((g1 - g0)) -le $((b1 - b0)) ] ||
    rr_fail "64 withdrawals in $((b1 - b0)) batches made $((g1 - g0)) FIB generation switches (one a batch at most)"
rr_ok "64 withdrawals that each retire a group: $((b1 - b0)) batches, $((g1 - g0)) FIB generation switches"

# ---- a big load: status answers within 100 ms, nothing hangs ----
"$RR_PY" - "$BIG" "$RR_HOST_B" >"$RR_T/batch" <<'EOF'
import sys
n, gw = int(sys.argv[1]), sys.argv[2]
for i in range(n):
    a = (11 << 24) + (i << 8)
    print("route add %d.%d.%d.0/24 via %s table 100" % (a >> 24, (a >> 16) & 255, (a >> 8) & 255, gw))
EOF
# The poller: `status` every 20 ms, timed (tests/lib/status_poll.py).
"$RR_PY" "$RR_ROOT/tests/lib/status_poll.py" "$RR_SOCK" "$RR_T/poll.stop" >"$RR_T/poll.out" 2>&1 &
poller=$!
RR_EXTRA_PIDS+=("$poller")
rr_stats || rr_fail "stats"
msgs0=$(rr_ctr routes.nl_route_msgs) reads0=$(rr_ctr routes.nl_reads)
ip -n "$CP" -batch "$RR_T/batch" &
batch=$!
RR_EXTRA_PIDS+=("$batch")
loaded() { [ "$(routes_json 'd["routes"]')" -ge "$BIG" ]; }
wait "$batch" || rr_fail "ip -batch failed"
rr_wait 120 loaded || rr_fail "$BIG routes added, $(routes_json 'd["routes"]') in the FIB 120 s later"
touch "$RR_T/poll.stop"
wait "$poller" || rr_fail "the status poller: $(cat "$RR_T/poll.out")"
read -r polls worst p99 <"$RR_T/poll.out" || rr_fail "the status poller said: $(cat "$RR_T/poll.out")"
[ "$worst" -le 100000 ] || rr_fail "status took $((worst / 1000)) ms during the load (at most 100; p99 $((p99 / 1000)) ms, $polls polls)"
rr_no_restarts_but_routes() {
    rr_status || rr_fail "status"
    local s
    for s in router driver-a driver-b; do
        [ "${RR_RESTARTS[$s]}" = 0 ] || rr_fail "$s restarted during the test"
    done
    [ "${RR_RESTARTS[routes]}" = 1 ] || rr_fail "routes restarted ${RR_RESTARTS[routes]} times (1: the inject)"
}
rr_no_restarts_but_routes
# The supervisor's side of it: its longest turn of routes work, and the
# longest the loop took between a turn that left work and the next.
read -r tick gap <<<"$(routes_json 'd["tick_max_us"], d["busy_gap_max_us"]')"
[ "$tick" -le 50000 ] || rr_fail "a turn of the route channel's reader took $((tick / 1000)) ms (its slice is 4)"
# rr-routes reads a burst's notifications many at a time (it gathers them
# for a millisecond, then recvmmsg), not one a wake-up.
rr_stats || rr_fail "stats"
msgs=$(($(rr_ctr routes.nl_route_msgs) - msgs0)) reads=$(($(rr_ctr routes.nl_reads) - reads0))
[ "$reads" -gt 0 ] && [ "$msgs" -ge $((2 * reads)) ] ||
    rr_fail "rr-routes read $msgs route messages in $reads reads (at least 2 a read expected)"
rr_ok "$BIG routes by ip -batch: all in the FIB; status answered $polls times meanwhile, the slowest in $((worst / 1000)) ms (p99 $((p99 / 1000)) ms); nothing restarted; rr-routes read $msgs messages in $reads reads; the reader's longest turn $((tick / 1000)) ms, the loop's longest wait for the next $((gap / 1000)) ms"

# ---- privilege ----
pid=${RR_PIDS[routes]}
uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
filters=$(awk '/^Seccomp_filters:/ {print $2}' "/proc/$pid/status")
caps=$(awk '/^CapEff:/ {print $2}' "/proc/$pid/status")
[ "$uid" != 0 ] && [ "$caps" = 0000000000000000 ] || rr_fail "rr-routes runs as uid $uid with capabilities $caps"
[ -z "$filters" ] || [ "$filters" -ge 3 ] || rr_fail "rr-routes has $filters seccomp filters, not 3"
rr_ok "rr-routes: uid $uid, no capabilities, ${filters:-?} seccomp filters"

ip -n "$CP" route flush table 100
rr_stop
rr_census_ok
t_pass
