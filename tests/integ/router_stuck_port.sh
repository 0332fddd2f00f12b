#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_stuck_port.sh: a port's driver that stops taking from
# its ring while the router holds packets for it (stopped, hung, hostile)
# must not keep the router busy, and nothing may be lost for good.
#
# Over TAP ports (rr_topology): A and B resolved, then driver-b stopped
# (SIGSTOP) and one train of TRAIN (4,000) datagrams A -> B, more than the
# ring (1,024) and the hold queue (2,048) together. Asserts:
#   - the router holds packets for B and drops the excess, counted on the
#     ring (full_drops): the hold queue (services/router/fq.h) is full;
#   - while the driver stays stopped, the router sleeps between its looks
#     at the ring: at most MAX_SLEEPS (1,500) sleeps in a 500 ms window.
#     It sleeps 50 µs while a ring drains and backs off to 1 ms once 20
#     looks in a row moved nothing (about 500 in the window); the 50 µs
#     sleeps alone would be 5,000 or more. A loaded machine only makes
#     them fewer. And at least one: it sleeps, it does not spin;
#   - driver-b continued (SIGCONT): everything held goes out (bounded
#     wait), no service restarted, a clean census.
# Skips (77) without root.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_stuck
rr_need ss
rr_faultflow_init

TRAIN=${TRAIN:-4000}
MAX_SLEEPS=1500
UPORT=9302

router_sleeps() {
    "$RR" stats --json -S "$RR_SOCK" 2>/dev/null |
        "$RR_PY" -c 'import json, sys
print(next(s["sleeps"] for s in json.load(sys.stdin)["services"] if s["name"] == "router"))'
}

rr_topology
rr_start
rr_resolve
rr_status || rr_fail "status"
pid_b=${RR_PIDS[driver-b]:-}
[ -n "$pid_b" ] || rr_fail "no pid for driver-b"

kill -STOP "$pid_b" || rr_fail "SIGSTOP driver-b ($pid_b)"
stopped=1
cont_b() { [ -z "${stopped:-}" ] || kill -CONT "$pid_b" 2>/dev/null; stopped=; }
# On any exit driver-b goes on first, or the cleanup's stop would wait on it.
trap 'rc=$?; cont_b; (exit $rc); rr_cleanup' EXIT

ip netns exec "$RR_NS_A" "$RR_T/bin/faultflow" train "$RR_HOST_B" $UPORT "$TRAIN" 100 1 2>"$RR_T/train.send" ||
    rr_fail "faultflow train: $(cat "$RR_T/train.send")"
held_full() { rr_stats && [ "$(rr_ctr router.tx_held)" -gt 0 ] && [ "$(rr_ctr ring.tx-b.full_drops)" -gt 0 ]; }
rr_wait 5 held_full || rr_fail "with driver-b stopped, the router held $(rr_ctr router.tx_held) and dropped $(rr_ctr ring.tx-b.full_drops) after a train of $TRAIN ($(cat "$RR_T/train.send"))"
# The router has read the whole train when its input stops moving.
settled() {
    rr_stats || return 1
    local n
    n=$(rr_ctr router.rx_ipv4)
    [ "$n" = "${last_rx:-}" ] && return 0
    last_rx=$n
    return 1
}
rr_wait 5 eval 'settled || { rr_msleep 50; false; }' || rr_fail "the router's input did not settle"
held=$(rr_ctr router.tx_held)
drops=$(rr_ctr ring.tx-b.full_drops)
rr_ok "driver-b stopped: the router holds $held packets for it and dropped $drops of the train's excess (ring tx-b full_drops)"

s0=$(router_sleeps) || rr_fail "stats --json"
rr_msleep 500 # the window the sleeps are counted over, not a wait for a condition
s1=$(router_sleeps) || rr_fail "stats --json"
rr_stats || rr_fail "stats"
[ "$(rr_ctr router.tx_held)" -gt 0 ] || rr_fail "the router held nothing at the window's end: the window did not measure a stuck port"
n=$((s1 - s0))
[ "$n" -le "$MAX_SLEEPS" ] ||
    rr_fail "with packets held for a stopped driver the router slept $n times in 500 ms (at most $MAX_SLEEPS: it should back off to 1 ms)"
[ "$n" -ge 1 ] || rr_fail "the router did not sleep in 500 ms with packets held for a stopped driver: it spins"
rr_ok "driver-b stopped, packets held: the router slept $n times in 500 ms"

cont_b
rr_wait 5 rr_drained || rr_fail "5 s after driver-b went on, the router still held $(rr_ctr router.tx_held)"
rr_no_restarts
rr_ok "driver-b went on: everything held went out, no service restarted"
rr_stop
rr_census_ok
t_pass router_stuck_port
