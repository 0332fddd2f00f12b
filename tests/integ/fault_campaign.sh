#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/fault_campaign.sh: a short fault campaign (issue 18), about
# 300 faults of every `ringrouter inject` kind into every real service, one
# after another, under a numbered UDP stream A -> B of 2,000 datagrams a
# second (bench/faultflow) through all of them: rr-tap drivers a and b,
# rr-router, rr-shaper on b. The campaign (tests/lib/faultcamp.py) picks the
# kinds and services from the seed, every pair in turn, with random
# arguments (stop 10-250 ms, and one in eight past hang_ms; slow 20-300 us for
# 20-150 ms; exhaust 10-80 ms; leak 1-32, then a kill), waits for each
# fault's recovery (a kind that kills: a new pid up; others: the same pid up
# once the fault is over) and stops starting faults after 100 s.
#
# Asserted:
#   - every fault was carried out (each answer OK) and its target recovered
#     with the restart count the kind implies;
#   - no isolation break: no other service changed its pid or restart count
#     during any fault;
#   - no leak: each leak's death reclaimed at least what the service held,
#     and the shutdown census is clean (exit 0, every buffer free, nothing
#     corrupt found);
#   - at least 250 faults, and every kind went into every service;
#   - the consumers and the pool answered every garbage fault: the rings'
#     drop_bad_handle, drop_bad_frame + drop_bad_chain and the pool's
#     free_bad counted at least as many as were injected;
#   - the stream lost at most LOSS_P99 datagrams per fault at the 99th
#     percentile: timing-bound (exit 75 alone).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init fault_campaign
rr_need ss
rr_shaper_init
rr_faultflow_init
rr_seed

HANG_MS=500
FAULTS=${CAMPAIGN_FAULTS:-300}
LOSS_P99=${CAMPAIGN_LOSS_P99:-50}
RR_SERVICES=(router driver-a driver-b shaper-b)
RR_HANG_MS=$HANG_MS
RR_SVC_EXTRA='restart_limit = 1000\nrestart_window = 10s'
rr_topology $'[shaper b]\nrate = 1gbit\nburst = 256k'
rr_start
rr_ok "up: A $RR_HOST_A -- [driver-a, router, shaper-b, driver-b] -- B $RR_HOST_B"
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"

# The stream (tests/lib/router.sh rr_ff_start).
rr_ff_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" 2000
RECV=$RR_FF_RECV SEND=$RR_FF_SEND
rr_msleep 500

"$RR_PY" "$RR_ROOT/tests/lib/faultcamp.py" run "$RR_SOCK" "$RR_LOG" "$RR_T/faults.tsv" \
    --services router,driver-a,driver-b,shaper-b --faults "$FAULTS" --seed "$RR_SEED" --hang-ms $HANG_MS \
    --deadline-s 100 2>&1 | sed 's/^/  /'
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || rr_fail "the campaign stopped (exit $rc)"

rr_msleep 300
stop_tool() { # stop_tool PID WHAT
    kill -TERM "$1" 2>/dev/null
    rr_wait 5 eval "! rr_alive $1" || rr_fail "$2 did not stop"
    wait "$1" || rr_fail "$2 exited with status $?"
}
stop_tool "$SEND" "the sender"
rr_msleep 500 # what is in flight arrives
stop_tool "$RECV" "the sink"
rr_ok "stream: $(cat "$RR_T/send.err"); $(cat "$RR_T/recv.err")"

rep=$("$RR_PY" "$RR_ROOT/tests/lib/faultcamp.py" report "$RR_T/faults.tsv" \
    --flow ab "$RR_T/ab.send" "$RR_T/ab.bits" router,driver-a,driver-b,shaper-b --table) || rr_fail "report: $rep"
sed 's/^/  /' <<<"$rep"
val() { sed -n "s/^$1 //p" <<<"$rep"; }
total=$(val faults_total)
[ "$total" -ge 250 ] || rr_fail "only $total faults in the time given, expected at least 250"
[ "$(val faults_not_carried_out)" = 0 ] || rr_fail "$(val faults_not_carried_out) faults were not carried out (see NOTOK)"
[ "$(val faults_isolation_breaks)" = 0 ] || rr_fail "$(val faults_isolation_breaks) isolation breaks"
[ "$(val faults_leaked_buffers)" = 0 ] || rr_fail "$(val faults_leaked_buffers) buffers leaked by leak faults"
for k in kill stop crash corrupt-ring corrupt-meta double-free chain-loop leak slow exhaust; do
    for s in "${RR_SERVICES[@]}"; do
        awk -F'\t' -v k="$k" -v s="$s" '$3 == s && $4 == k { f = 1 } END { exit !f }' "$RR_T/faults.tsv" ||
            rr_fail "kind $k was never injected into $s"
    done
done
p99=$(val faults_lost_per_fault_p99)
[ "$p99" -le "$LOSS_P99" ] || t_timing_fail "the stream lost $p99 datagrams per fault at p99 (bound $LOSS_P99)"

# Every garbage fault was refused where it should be, and counted.
rr_stats || rr_fail "stats"
count() { awk -F'\t' -v k="$1" '$4 == k && $6 == 1 { n++ } END { print n + 0 }' "$RR_T/faults.tsv"; }
sum() { local c n=0 r; for r in rx-a rx-b tx-a tx-b sh-b; do for c in "$@"; do n=$((n + $(rr_ctr "ring.$r.$c"))); done; done; echo $n; }
h=$(sum drop_bad_handle) m=$(sum drop_bad_frame drop_bad_chain) fb=$(rr_ctr pool.free_bad)
[ "$h" -ge "$(count corrupt-ring)" ] || rr_fail "drop_bad_handle $h < $(count corrupt-ring) corrupt-ring faults"
[ "$m" -ge $(($(count corrupt-meta) + $(count chain-loop))) ] ||
    rr_fail "drop_bad_frame + drop_bad_chain $m < $(count corrupt-meta) corrupt-meta + $(count chain-loop) chain-loop faults"
[ "$fb" -ge "$(count double-free)" ] || rr_fail "free_bad $fb < $(count double-free) double-free faults"
rr_ok "refused and counted: $h bad handles, $m bad frames or chains, $fb double frees"

rr_stop
rr_census_ok
t_pass "fault_campaign: $total faults, every kind into every service, no isolation break, no leak, clean census"
