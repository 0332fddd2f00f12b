#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/faults_afxdp.sh: faults_real.sh's faults on the AF_XDP
# topology of afxdp_basic.sh (two rr-afxdp drivers on veth, copy mode, the
# supervisor in its own namespace R), under the same timestamped UDP flow
# A -> B (tests/lib/seqflow.py, 1,000 datagrams a second): kill -9, SIGSTOP
# (hang_ms 500: the hang detector kills it) and `ringrouter restart` of
# driver-a, driver-b and the router (order from the seed). After each: the
# exact log lines (death, hang or requested restart; the parked standby
# takes over), the new instance is that standby, the peers untouched,
# restarts +1, traffic back. Fault -> first datagram sent after it arriving
# in B: at most 100 ms (kill -9, restart) or hang_ms + 150 ms (SIGSTOP); a
# missed bound alone exits 75. Then both flow tools exit 0, no bad-handle
# counter moved, and a clean census (the buffers the kernel held across the
# restarts come back). Skips (77) without root or AF_XDP.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init faults_afxdp
rr_need ss ethtool
rr_afxdp_init
rr_seed

HANG_MS=500
KILL_BOUND_MS=${RR_FAULT_BOUND_MS:-100}
FLOW_PORT=9000
rr_three_ns 73 74
rr_veth_host "$NS_A" xa0 xa1 "$NS_R" "$HOST_A" "$GW_A"
rr_veth_host "$NS_B" xb0 xb1 "$NS_R" "$HOST_B" "$GW_B"
{
    printf '[router]\nname = fx%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
    printf '[port a]\ndriver = afxdp\nifname = xa1\naddress = %s/24\n\n' "$GW_A"
    printf '[port b]\ndriver = afxdp\nifname = xb1\naddress = %s/24\n' "$GW_B"
    for s in "${RR_SERVICES[@]}"; do
        printf '\n[service %s]\nhang_ms = %s\nrestart_limit = 10\n' "$s" $HANG_MS
    done
} >"$RR_T/m.ini"
"$RR" check -c "$RR_T/m.ini" >/dev/null || rr_fail "the manifest does not check: $(cat "$RR_T/m.ini")"
# Not through rr_in: $! must be the supervisor (ip netns exec execs it).
ip netns exec "$NS_R" "$RR" up -c "$RR_T/m.ini" 2>>"$RR_LOG" &
RR_PID=$!
rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "not every service was up within 10 s"
rr_alive "$RR_PID" || rr_fail "the supervisor exited at start"
rr_ok "up: A $HOST_A -- xa1 [driver-a, router, driver-b] xb1 -- B $HOST_B (AF_XDP)"

out=$(rr_in "$NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
rr_flow_start "$NS_A" "$NS_B" "$HOST_B" $FLOW_PORT 1000

rr_fault_rounds "$KILL_BOUND_MS" $((HANG_MS + 150))

rr_flow_stop
rr_stats || rr_fail "stats"
rr_zero "${RR_MALFORMED[@]}"
rr_ok "no malformed-input drops or bad handles; limbo_recovered a $(rr_ctr driver-a.limbo_recovered) b $(rr_ctr driver-b.limbo_recovered), stale_desc a $(rr_ctr driver-a.stale_desc) b $(rr_ctr driver-b.stale_desc)"
rr_stop
rr_census_ok
rr_fault_end
