#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_arp_queue.sh: a burst to a neighbour the router has
# not resolved yet waits whole for its ARP answer (services/router/neigh.c,
# tables/neigh.h NEIGH_QMAX), as Linux holds it (unres_qlen). The answer
# is made slow for sure, not by luck: driver-b is stopped (SIGSTOP) while
# A sends one train of 100 numbered datagrams to B, so that the router's
# broadcast request waits in driver-b's ring. The test waits (bounded)
# until the router holds all 100 for B (pending_arp), then lets driver-b
# go: B answers, and B receives all 100, once each and in order;
# drop_pending_full stays 0. A queue of 16 (what it was) held 16 and
# dropped 84 here.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_arp_queue
rr_faultflow_init
N=100

rr_topology
rr_start
# A resolves its gateway first: the train must reach the router whole.
p=$(rr_in "$RR_NS_A" ping -n -c 1 -W 2 "$RR_GW_A" 2>&1) || rr_fail "ping A -> router: $p"
[ -z "$("$RR" neigh show "$RR_HOST_B" -S "$RR_SOCK" | sed 1d)" ] ||
    rr_fail "the router knows B before anything was sent to it: $("$RR" neigh show "$RR_HOST_B" -S "$RR_SOCK")"
rr_status || rr_fail "status"
DB=${RR_PIDS[driver-b]}
rr_ok "up: A -- router -- B, B unresolved; driver-b pid $DB"

ip netns exec "$RR_NS_B" "$RR_T/bin/faultflow" recv "$RR_HOST_B" 9000 "$RR_T/bits" 2>"$RR_T/recv.err" &
RECV=$!
RR_EXTRA_PIDS+=("$RECV")
rr_wait 5 eval "rr_in $RR_NS_B ss -Hlun 'sport = :9000' | grep -q ." || rr_fail "the sink did not bind"

ctr() { rr_stats || rr_fail "stats"; rr_ctr "router.$1"; }
kill -STOP "$DB" || rr_fail "SIGSTOP driver-b ($DB)"
STOPPED=1
cont() { [ -z "${STOPPED:-}" ] || kill -CONT "$DB" 2>/dev/null; STOPPED=; }
rr_in "$RR_NS_A" "$RR_T/bin/faultflow" train "$RR_HOST_B" 9000 "$N" 1 1 2>"$RR_T/send.err" ||
    { cont; rr_fail "faultflow train: $(cat "$RR_T/send.err")"; }
held() { [ "$(ctr pending_arp)" = "$N" ]; }
# 2 s at most: driver-b's hang_ms (3 s) must not end its stop for us.
if ! rr_wait 2 held; then
    rr_stats || rr_fail "stats"
    got="pending_arp $(rr_ctr router.pending_arp), drop_pending_full $(rr_ctr router.drop_pending_full), drop_pending_limit $(rr_ctr router.drop_pending_limit), rx_ipv4 $(rr_ctr router.rx_ipv4)"
    cont
    rr_fail "the router did not hold the $N datagrams for B while its ARP answer could not come: $got"
fi
rr_ok "driver-b stopped: the router holds all $N datagrams for B ($(ctr pending_arp) pending, drop_pending_full $(rr_ctr router.drop_pending_full))"
cont
rr_wait 5 eval '[ "$(ctr pending_arp)" = 0 ] && rr_drained' ||
    rr_fail "the router still holds packets 5 s after driver-b went on: pending_arp $(ctr pending_arp)"
[ "$("$RR" neigh show "$RR_HOST_B" -S "$RR_SOCK" | awk 'NR == 2 { print $4 }')" = reachable ] ||
    rr_fail "B did not resolve: $("$RR" neigh show "$RR_HOST_B" -S "$RR_SOCK")"
kill -TERM "$RECV"
wait "$RECV" || rr_fail "the sink exited with $?: $(cat "$RR_T/recv.err")"
read -r _ got _ top _ dup <"$RR_T/recv.err"
reord=$(sed -n 's/^reordered //p' "$RR_T/recv.err")
[ "$got" = "$N" ] && [ "$top" = $((N - 1)) ] && [ "$dup" = 0 ] && [ "$reord" = 0 ] ||
    rr_fail "B received: $(paste -sd ' ' "$RR_T/recv.err"); drop_pending_full $(ctr drop_pending_full)"
[ "$(ctr drop_pending_full)" = 0 ] || rr_fail "drop_pending_full $(rr_ctr router.drop_pending_full)"
rr_ok "B answered once driver-b went on: all $N datagrams arrived, in order, none twice; drop_pending_full 0"

rr_stop
rr_census_ok
t_pass "router_arp_queue: a train of $N to an unresolved neighbour waited whole for its slow ARP answer"
