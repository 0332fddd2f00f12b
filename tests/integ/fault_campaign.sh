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
rr_msleep 500

"$RR_PY" "$RR_ROOT/tests/lib/faultcamp.py" run "$RR_SOCK" "$RR_LOG" "$RR_T/faults.tsv" \
    --services router,driver-a,driver-b,shaper-b --faults "$FAULTS" --seed "$RR_SEED" --hang-ms $HANG_MS \
    --deadline-s 100 2>&1 | sed 's/^/  /'
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || rr_fail "the campaign stopped (exit $rc)"

rr_campaign_check router,driver-a,driver-b,shaper-b 250 rx-a rx-b tx-a tx-b sh-b
total=$CAMPAIGN_TOTAL

rr_stop
rr_census_ok
t_pass "fault_campaign: $total faults, every kind into every service, no isolation break, no leak, clean census"
