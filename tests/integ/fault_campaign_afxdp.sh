#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/fault_campaign_afxdp.sh: fault_campaign.sh's campaign on the
# AF_XDP topology of faults_afxdp.sh (two rr-afxdp drivers on veth, copy
# mode, the supervisor in its own namespace R), so that every
# `ringrouter inject` kind is proved on rr-afxdp too: about 150 faults of
# every kind into driver-a, driver-b and the router, under the numbered
# stream A -> B (bench/faultflow, 2,000 datagrams a second). The same
# assertions: every fault carried out, its target back with the restart
# count its kind implies, no isolation break, every leak reclaimed, every
# kind into every service, the garbage counted where it was refused, a clean
# census (the buffers the kernel held across the restarts come back); loss
# per fault at p99 timing-bound. Skips (77) without root or AF_XDP.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init fault_campaign_afxdp
rr_need ss ethtool
rr_afxdp_init
rr_faultflow_init
rr_seed

HANG_MS=500
FAULTS=${CAMPAIGN_FAULTS:-150}
LOSS_P99=${CAMPAIGN_LOSS_P99:-50}
rr_three_ns 75 76
rr_veth_host "$NS_A" ya0 ya1 "$NS_R" "$HOST_A" "$GW_A"
rr_veth_host "$NS_B" yb0 yb1 "$NS_R" "$HOST_B" "$GW_B"
{
    printf '[router]\nname = fc%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
    printf '[port a]\ndriver = afxdp\nifname = ya1\naddress = %s/24\n\n' "$GW_A"
    printf '[port b]\ndriver = afxdp\nifname = yb1\naddress = %s/24\n' "$GW_B"
    for s in "${RR_SERVICES[@]}"; do
        printf '\n[service %s]\nhang_ms = %s\nrestart_limit = 1000\nrestart_window = 10s\n' "$s" $HANG_MS
    done
} >"$RR_T/m.ini"
"$RR" check -c "$RR_T/m.ini" >/dev/null || rr_fail "the manifest does not check: $(cat "$RR_T/m.ini")"
# Not through rr_in: $! must be the supervisor (ip netns exec execs it).
ip netns exec "$NS_R" "$RR" up -c "$RR_T/m.ini" 2>>"$RR_LOG" &
RR_PID=$!
rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "not every service was up within 10 s"
rr_alive "$RR_PID" || rr_fail "the supervisor exited at start"
rr_ok "up: A $HOST_A -- ya1 [driver-a, router, driver-b] yb1 -- B $HOST_B (AF_XDP)"
out=$(rr_in "$NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B: $out"

rr_ff_start "$NS_A" "$NS_B" "$HOST_B" 2000
rr_msleep 500

"$RR_PY" "$RR_ROOT/tests/lib/faultcamp.py" run "$RR_SOCK" "$RR_LOG" "$RR_T/faults.tsv" \
    --services router,driver-a,driver-b --faults "$FAULTS" --seed "$RR_SEED" --hang-ms $HANG_MS \
    --deadline-s 80 2>&1 | sed 's/^/  /'
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || rr_fail "the campaign stopped (exit $rc)"
rr_campaign_check router,driver-a,driver-b 120 rx-a rx-b tx-a tx-b
total=$CAMPAIGN_TOTAL

rr_stop
rr_census_ok
t_pass "fault_campaign_afxdp: $total faults, every kind into rr-afxdp drivers and the router, no isolation break, no leak, clean census"
