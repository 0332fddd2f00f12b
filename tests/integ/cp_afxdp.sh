#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/cp_afxdp.sh: control traffic on AF_XDP ports is what it is on
# TAP ports (issue 45, item 1; docs/routing.md, "Control traffic"): the
# router between two AF_XDP ports on veth, [router] control_netns set; a
# daemon there (a TCP and UDP echo on port 179) answers hosts A and B on the
# router's addresses (IPv4, and UDP to its IPv6 link-local address of port
# a), through the ports' sockets both ways, and the
# router counts it (punt_to_host, punt_from_host). The host's own addresses
# on the veths stay the kernel's (steer = forward-only), as before.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init cp_afxdp
rr_afxdp_init
rr_need ss ethtool
PROBE=$RR_ROOT/tests/lib/cp_probe.py

rr_three_ns 63 64 cx
rr_netns cxc
NS_C=$RR_NS
P=cx$$
rr_veth_host "$NS_A" "${P}a0" "${P}a1" "$NS_R" "$HOST_A" "$GW_A"
rr_veth_host "$NS_B" "${P}b0" "${P}b1" "$NS_R" "$HOST_B" "$GW_B"
RR_SERVICES=(router driver-a driver-b cp-a cp-b)
{
    printf '[router]\nname = cx%s\npool_buffers = 8192\nrun_dir = %s/run\ncontrol_netns = %s\n\n' "$$" "$RR_T" "$NS_C"
    printf '[port a]\ndriver = afxdp\nifname = %sa1\naddress = %s/24\n\n' "$P" "$GW_A"
    printf '[port b]\ndriver = afxdp\nifname = %sb1\naddress = %s/24\n' "$P" "$GW_B"
    for s in "${RR_SERVICES[@]}"; do
        printf '\n[service %s]\nhang_ms = 3000\n' "$s"
    done
} >"$RR_T/m.ini"
rr_up_in "$NS_R" "$RR_T/m.ini"
out=$(rr_in "$NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
ip -n "$NS_C" -4 -br addr show dev cp-a | grep -q "$GW_A/24" || rr_fail "no cp-a with $GW_A in $NS_C"

ip netns exec "$NS_C" "$RR_PY" "$PROBE" serve 179 2>"$RR_T/serve.err" &
RR_EXTRA_PIDS+=($!)
rr_wait 5 rr_listening "$NS_C" 179 || rr_fail "the listener in $NS_C did not start: $(cat "$RR_T/serve.err")"
out=$(rr_in "$NS_A" "$RR_PY" "$PROBE" tcp "$GW_A" 179 bgp-afxdp 2>&1) || rr_fail "TCP A -> $GW_A:179: $out"
out=$(rr_in "$NS_B" "$RR_PY" "$PROBE" udp "$GW_B" 179 udp-afxdp 2>&1) || rr_fail "UDP B -> $GW_B:179: $out"
LL=$(ip -n "$NS_C" -6 -br addr show dev cp-a scope link | awk '{ print $3 }')
LL=${LL%/64}
out=$(rr_in "$NS_A" "$RR_PY" "$PROBE" udp "$LL%${P}a0" 179 ll-afxdp 2>&1) || rr_fail "UDP A -> [$LL%${P}a0]:179: $out"
rr_stats || rr_fail "stats"
to=$(rr_ctr router.punt_to_host) from=$(rr_ctr router.punt_from_host)
[ "$to" -ge 4 ] && [ "$from" -ge 4 ] || rr_fail "punt_to_host $to, punt_from_host $from: expected at least 4 each"
rr_ok "AF_XDP ports: TCP and UDP to the router's addresses (link-local $LL too) reach the control namespace and back (punt_to_host $to, punt_from_host $from)"
rr_stop
rr_census_ok
echo "PASS cp_afxdp"
