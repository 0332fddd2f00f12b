#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/faults_real.sh: the real services under faults, with traffic
# crossing all of them: the two-namespace TAP topology (rr-tap drivers,
# rr-router) with an rr-shaper on port b (1 Gbit/s, far above the flow), and
# a steady UDP flow A -> B of 1,000 datagrams a second with sequence numbers
# and send times (tests/lib/seqflow.py), timestamped on arrival in B.
#
# For each service (router, driver-a, driver-b, shaper-b; order from the
# seed) and each fault:
#   - kill -9;
#   - SIGSTOP: the hang detector (hang_ms 500) must kill it;
#   - `ringrouter restart NAME`: a clean exit (status 0), then the standby;
# the supervisor logs exactly the death (or hang, or requested restart) and
# "standby pid N takes over" for the standby that was parked before the
# fault, the new instance is that standby, the peers keep their pids, the
# restart count goes up by one, and traffic flows again. Measured from
# outside: the first datagram sent after the fault (the time taken just
# before kill(2)) that arrives in B. Bounds (a missed one alone exits 75):
# 100 ms for kill -9 and restart, hang_ms + 150 ms for SIGSTOP.
# Then the back-off branch, forced: each service killed again as soon as its
# successor exists (inside the 100 ms stable period), three deaths in a row:
# the log says "restarting in 10 ms (death 2 in a row)" and "restarting in
# 20 ms (death 3 in a row)", the last successor is ready no sooner than its
# back-off, the service comes back and is not failed (restart_limit 10).
# At the end: both flow tools exit 0, no malformed-input or bad-handle
# counter moved, and a clean census.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init faults_real
rr_need ss
[ -x "$RR_BIN_DIR/rr-shaper" ] || rr_fail "$RR_BIN_DIR/rr-shaper is missing: build with ninja first"
cp "$RR_BIN_DIR/rr-shaper" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-shaper" || rr_fail "cannot copy rr-shaper"
rr_seed

HANG_MS=500
KILL_BOUND_MS=${RR_FAULT_BOUND_MS:-100}
STOP_BOUND_MS=$((HANG_MS + 150))
FLOW_PORT=9000

RR_SERVICES=(router driver-a driver-b shaper-b)
RR_HANG_MS=$HANG_MS
# restart_limit above what the back-off phase needs (3 deaths, plus the
# faults before it within the window), so that the service is never failed.
RR_SVC_EXTRA='restart_limit = 10\nrestart_window = 10s'
rr_topology $'[shaper b]\nrate = 1gbit\nburst = 256k'
rr_start
rr_ok "up: A $RR_HOST_A -- [driver-a, router, shaper-b, driver-b] -- B $RR_HOST_B"

# Resolve both ways first: the flow's first datagram must not wait for ARP.
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
rr_flow_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" $FLOW_PORT 1000
rr_stats || rr_fail "stats"
fwd0=$(rr_ctr router.forwarded)

rr_fault_rounds "$KILL_BOUND_MS" "$STOP_BOUND_MS"

# The back-off branch, on purpose.
# shellcheck disable=SC2034 # read in the evals
backoff() { # backoff SVC
    local svc=$1 k n old lines chunk t x
    rr_wait 5 rr_standby_parked "$svc" || rr_fail "back-off $svc: no parked standby"
    rr_msleep 150 # stable: the first kill restarts at once
    rr_status || rr_fail "status"
    local restarts=${RR_RESTARTS[$svc]}
    old=${RR_PIDS[$svc]}
    lines=$(wc -l <"$RR_LOG")
    RR_FLOW_OFF=$(stat -c %s "$RR_FLOW_LOG")
    rr_now
    t=$RR_NOW
    for k in 1 2 3; do
        kill -KILL "$old" || rr_fail "back-off $svc: kill $k of pid $old"
        # The successor exists (starting or up): kill it at once, inside
        # its stable period, so that the next death is one more in a row.
        [ $k = 3 ] && break
        # Polled without a pause: the successor must die well inside the
        # 100 ms after its readiness.
        for ((n = 0; n < 2000; n++)); do
            rr_svc_line "$svc" && [ "$RR_L_PID" != 0 ] && [ "$RR_L_PID" != "$old" ] && break
        done
        [ "$RR_L_PID" != 0 ] && [ "$RR_L_PID" != "$old" ] || rr_fail "back-off $svc: no successor of pid $old after 2000 status queries"
        old=$RR_L_PID
    done
    rr_wait 5 eval 'rr_status && [ "${RR_STATE[$svc]}" = up ] && [ "${RR_PIDS[$svc]}" != "$old" ]' ||
        rr_fail "back-off $svc: not up again within 5 s of its third death (${RR_STATE[$svc]:-?})"
    rr_wait 5 rr_flow_gap "$t" || rr_fail "back-off $svc: no traffic within 5 s"
    chunk=$(tail -n +"$((lines + 1))" "$RR_LOG")
    rr_log_has "$chunk" "$svc: killed by signal 9 \\(Killed\\); restarting now" "back-off $svc, death 1"
    rr_log_has "$chunk" "$svc: killed by signal 9 \\(Killed\\); restarting in 10 ms \\(death 2 in a row\\)" "back-off $svc, death 2"
    rr_log_has "$chunk" "$svc: killed by signal 9 \\(Killed\\); restarting in 20 ms \\(death 3 in a row\\)" "back-off $svc, death 3"
    ! grep -q "^ringrouter: $svc: .*failed" <<<"$chunk" || rr_fail "back-off $svc: marked failed: $(grep "failed" <<<"$chunk")"
    # The last successor waited out its 20 ms: its ready line counts from the death.
    x=$(grep -E "^ringrouter: $svc: ready, pid ${RR_PIDS[$svc]}, " <<<"$chunk" | sed -n 's/.*, \([0-9.]*\) ms after its predecessor died.*/\1/p')
    [ -n "$x" ] || rr_fail "back-off $svc: no ready line for pid ${RR_PIDS[$svc]}"
    awk -v x="$x" 'BEGIN { exit !(x >= 20) }' || rr_fail "back-off $svc: ready $x ms after its third death, before its 20 ms back-off"
    [ "${RR_RESTARTS[$svc]}" = $((restarts + 3)) ] || rr_fail "back-off $svc: restarts $restarts -> ${RR_RESTARTS[$svc]}, expected +3"
    rr_ok "back-off $svc: 3 deaths in a row: now, 10 ms, 20 ms; ready $x ms after the last; traffic back $RR_GAP_MS ms after the first kill"
}
for svc in "${RR_ORDER[@]}"; do
    backoff "$svc"
done

rr_stats || rr_fail "stats"
fwd1=$(rr_ctr router.forwarded)
[ $((fwd1 - fwd0)) -gt 1000 ] || rr_fail "the router forwarded only $((fwd1 - fwd0)) packets under the faults"
rr_flow_stop
MALFORMED=("${RR_MALFORMED[@]}")
for c in drop_bad_handle drop_bad_owner drop_bad_frame drop_bad_chain; do MALFORMED+=("ring.sh-b.$c"); done
rr_zero "${MALFORMED[@]}"
rr_ok "router forwarded $((fwd1 - fwd0)) packets; no malformed-input drops, no bad handles"

rr_stop
rr_census_ok
rr_fault_end
