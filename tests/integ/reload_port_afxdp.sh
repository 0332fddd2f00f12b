#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/reload_port_afxdp.sh: `ringrouter reload` removing an AF_XDP
# port (issue 19) under a numbered stream A -> B of 2,000 datagrams a second
# (bench/faultflow) between two TAP ports that the reload does not touch:
#   - up with TAP ports a and b and an AF_XDP port x on a veth whose router
#     end is in a namespace of its own; A pings X;
#   - x's MTU (issue 48): 9000 refused, naming the frame it does not fit,
#     nothing changed; 1400 by `link set`: the router restarts on it;
#   - check --diff's exact lines for x removed, then the reload: driver-x
#     stops, the router restarts through its warm standby, the XDP program
#     is detached from the veth, the buffers the kernel held (the socket's
#     fill ring) come back to the pool, x's connected route is gone,
#     driver-a and driver-b keep their pids, A still reaches B;
#   - the stream lost, duplicated and reordered nothing; a clean census.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init reload_port_afxdp
rr_need ss ethtool
rr_afxdp_init
rr_faultflow_init

n=$(($$ % 250 + 1))
rr_netns x; NS_X=$RR_NS
rr_netns xr; NS_XR=$RR_NS
GW_X=10.75.$n.1 HOST_X=10.75.$n.2 IF_X=rrx$$r
rr_veth_host "$NS_X" "rrx$$h" "$IF_X" "$NS_XR" "$HOST_X" "$GW_X"
RR_SERVICES=(router driver-a driver-b driver-x)
rr_topology "$(printf '[port x]\ndriver = afxdp\nifname = %s\nnetns = %s\naddress = %s/24\n' "$IF_X" "$NS_XR" "$GW_X")"
M=$RR_T/m.ini
rr_start
p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_X" 2>&1) || rr_fail "ping A -> X (AF_XDP): $p"
ip -n "$NS_XR" link show "$IF_X" | grep -q " xdp" || rr_fail "no XDP program on $IF_X: $(ip -n "$NS_XR" link show "$IF_X")"
rr_ok "up: A -- [driver-a, router, driver-b] -- B, and X behind the AF_XDP port x ($IF_X in $NS_XR): A pings X"

c() { rr_c "$@"; }

rr_ff_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" 2000
rr_msleep 300
rr_status || rr_fail "status"
A0=${RR_PIDS[driver-a]} B0=${RR_PIDS[driver-b]} R0=${RR_PIDS[router]} X0=${RR_PIDS[driver-x]}

# ---- x's MTU (issue 48): more than its frames hold refused; 1400 live ----
c link set x mtu 9000
[ "$rc" = 100 ] && [[ "$err" == *"link set: [port x] mtu: 9000 does not fit a "*"-byte frame with driver = afxdp"*"nothing changed"* ]] ||
    rr_fail "link set x mtu 9000: expected a refusal naming the frame: exit $rc: $err $out"
rr_status || rr_fail "status"
[ "${RR_PIDS[router]}" = "$R0" ] || rr_fail "a refused MTU restarted the router"
c link set x mtu 1400
[ "$rc" = 0 ] && grep -qxF "port x: mtu 1500 -> 1400 (restarts router)" <<<"$out" &&
    [ "$(tail -1 <<<"$out")" = "link set: done, 1 change" ] || rr_fail "link set x mtu 1400: exit $rc: $err; said: $out"
mtu=$("$RR" link x --json -S "$RR_SOCK" | "$RR_PY" -c 'import json, sys; print(json.load(sys.stdin)["links"][0]["mtu_bytes"])')
[ "$mtu" = 1400 ] || rr_fail "link x says mtu $mtu after link set x mtu 1400"
rr_status || rr_fail "status"
[ "${RR_PIDS[router]}" != "$R0" ] && [ "${RR_PIDS[driver-x]}" = "$X0" ] ||
    rr_fail "link set x mtu 1400: the router kept pid $R0, or driver-x restarted ($X0 -> ${RR_PIDS[driver-x]})"
R0=${RR_PIDS[router]}
rr_ok "port x's MTU: 9000 refused (its frames hold less), 1400 live (the router restarted, driver-x did not)"

# ---- port x removed ----
sed -i '/^\[port x\]/,$d' "$M"
sed -i '/^\[service driver-x\]/,/^$/d' "$M"
"$RR" check -c "$M" >/dev/null || rr_fail "the manifest without port x does not check: $(cat "$M")"
c check --diff
want="port x: removed, afxdp $IF_X in netns $NS_XR (stops driver-x; its AF_XDP sockets and XDP program go; restarts router)
restart router: port x removed: the router takes its rings at start
1 change, 1 restart"
rr_said "check --diff with port x removed" "$want"
c reload
[ "$rc" = 0 ] || rr_fail "reload with port x removed: exit $rc: $err; out: $out"
grep -qxF "stopping driver-x" <<<"$out" && grep -qxF "restarting router (pid $R0) through its warm standby" <<<"$out" &&
    grep -q "^port x: released, [0-9]* packets\? drained from its rings, XDP program detached from $IF_X, [1-9][0-9]* buffers\? the kernel held returned$" <<<"$out" &&
    [ "$(tail -1 <<<"$out")" = "reload: done, 1 change" ] || rr_fail "reload with port x removed said: $out"
released=$(grep '^port x: released' <<<"$out")
rr_status || rr_fail "status"
[ -z "${RR_STATE[driver-x]:-}" ] || rr_fail "driver-x is still listed (${RR_STATE[driver-x]}) after its port was removed"
[ "${RR_PIDS[router]}" != "$R0" ] || rr_fail "the router kept pid $R0: it still has port x's rings"
[ "${RR_PIDS[driver-a]}" = "$A0" ] && [ "${RR_PIDS[driver-b]}" = "$B0" ] ||
    rr_fail "removing port x restarted a driver: $A0 $B0 -> ${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]}"
! ip -n "$NS_XR" link show "$IF_X" | grep -q " xdp" || rr_fail "the XDP program is still on $IF_X: $(ip -n "$NS_XR" link show "$IF_X")"
routes=$("$RR" route show -S "$RR_SOCK")
! grep -q "^10.75.$n.0/24 " <<<"$routes" || rr_fail "port x's connected route is left: $routes"
p=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B after port x was removed: $p"
rr_ok "port x removed live: driver-x stopped, the router restarted (pid ${RR_PIDS[router]}), the XDP program detached; $released"

# ---- the stream: nothing lost ----
rr_ff_whole "A -> B across the removal of port x"
rr_ok "the stream A -> B: all $RR_FF_SENT datagrams arrived, none twice, none out of order"
rr_status || rr_fail "status"
[ "${RR_RESTARTS[driver-a]}" = 0 ] && [ "${RR_RESTARTS[driver-b]}" = 0 ] && [ "${RR_RESTARTS[router]}" = 0 ] &&
    [ "${RR_PLANNED[router]}" = 2 ] ||
    rr_fail "restarts: driver-a ${RR_RESTARTS[driver-a]}, driver-b ${RR_RESTARTS[driver-b]}, router ${RR_RESTARTS[router]} (expected 0, 0, 0); the router's planned ${RR_PLANNED[router]} (expected 2: an MTU, a removal)"
rr_stats || rr_fail "stats"
rr_zero "${RR_MALFORMED[@]}"
rr_stop
rr_census_ok
t_pass "reload_port_afxdp: AF_XDP port x: an MTU refused and one set live, then removed live (XDP program detached, the kernel's buffers returned); stream A -> B: $RR_FF_SENT datagrams, none lost"
