#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/cp_punt.sh: control traffic reaches a daemon in the control
# namespace (issue 45, item 1; docs/routing.md, "Control traffic"), over two
# TAP ports a and b and [router] control_netns:
#   - a control namespace that does not exist is a manifest error naming
#     its line;
#   - each port has its interface there (cp-a, cp-b): the port's MAC, MTU,
#     IPv4 and IPv6 addresses (link-local included), up, shown by `link`;
#   - host A connects to the router's address on TCP 179 and data flows
#     both ways with a listener in the control namespace; UDP both ways;
#     IPv6 TCP to the router's global address and UDP to its link-local
#     one; IP protocol 89 to 224.0.0.5 (OSPF's group) reaches a raw socket
#     there; the router counts punt_to_host and punt_from_host;
#   - kill -9 of the supervisor, then `up`: cp-a and cp-b are adopted (their
#     services keep their pids, the devices their indices) and still carry
#     the traffic; `reload` refuses another control namespace; after `down`
#     they are gone, and the census is clean.
# Without the punt, the connections time out (the router dropped the frames
# as drop_local_other) and the interfaces do not exist.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init cp_punt
rr_need ss
PROBE=$RR_ROOT/tests/lib/cp_probe.py
N=$(($$ % 250 + 1))
P6A=fd00:61:$N
rr_netns c
NS_C=$RR_NS

# 1. A control namespace that does not exist: the manifest's error names its line.
printf '[router]\nname = cp%s\ncontrol_netns = rrt-%s-nosuch\nrun_dir = %s/run\n\n[port a]\ndriver = tap\nifname = rrcp%sa\naddress = 10.1.0.1/24\n' \
    "$$" "$$" "$RR_T" "$$" >"$RR_T/bad.ini"
out=$("$RR" check -c "$RR_T/bad.ini" 2>&1) && rr_fail "check accepted a control namespace that does not exist"
grep -q "bad.ini:3: \[router\] control_netns: .*ip netns add rrt-$$-nosuch" <<<"$out" ||
    rr_fail "the error for a missing control namespace: $out"
rr_ok "missing control namespace refused: $out"

RR_SERVICES=(router driver-a driver-b cp-a cp-b)
RR_ROUTER_EXTRA="control_netns = $NS_C\norphan_grace_ms = 30000"
RR_ADDR6_A=$P6A::1/64
rr_topology
rr_start
rr_hosts_ipv6 "$P6A" fd00:62:$N
rr_remember_services

# 2. The interfaces, as the ports.
rr_resolve
for x in a b; do
    [ $x = a ] && mac=$RR_MAC_A gw=$RR_GW_A || mac=$RR_MAC_B gw=$RR_GW_B
    out=$(ip -n "$NS_C" -o link show "cp-$x" 2>&1) || rr_fail "no cp-$x in $NS_C: $out"
    grep -q "[<,]UP[,>].* mtu 1500 .*link/ether $mac " <<<"$out" || rr_fail "cp-$x is not up with the port's MTU and MAC $mac: $out"
    out=$(ip -n "$NS_C" -4 -br addr show dev "cp-$x")
    grep -q "$gw/24" <<<"$out" || rr_fail "cp-$x has not $gw/24: $out"
done
LL=$(ip -n "$NS_C" -6 -br addr show dev cp-a scope link | awk '{ print $3 }')
LL=${LL%/64}
[ -n "$LL" ] || rr_fail "cp-a has no link-local address: $(ip -n "$NS_C" -6 addr show dev cp-a)"
ip -n "$NS_C" -6 -br addr show dev cp-a | grep -q "$P6A::1/64" || rr_fail "cp-a has not $P6A::1/64: $(ip -n "$NS_C" -6 addr show dev cp-a)"
[ "$(ip -n "$NS_C" -6 addr show dev cp-a scope link | grep -c inet6)" = 1 ] ||
    rr_fail "cp-a has another link-local address than the port's: $(ip -n "$NS_C" -6 addr show dev cp-a)"
rr_c link a
grep -q "control cp-a  netns $NS_C  cp-a up" <<<"$out" || rr_fail "link a does not show cp-a: $out"
rr_ok "cp-a and cp-b in $NS_C: the ports' MACs and addresses (link-local $LL), up; link shows them"

# 3. A daemon there: TCP 179 and UDP both ways, IPv6 too, OSPF's group.
ip netns exec "$NS_C" "$RR_PY" "$PROBE" serve 179 2>"$RR_T/serve.err" &
RR_EXTRA_PIDS+=($!)
rr_wait 5 rr_listening "$NS_C" 179 || rr_fail "the listener in $NS_C did not start: $(cat "$RR_T/serve.err")"
exchange() { # exchange WHAT: every flow through the control namespace, once
    local out
    out=$(rr_in "$RR_NS_A" "$RR_PY" "$PROBE" tcp "$RR_GW_A" 179 "bgp-$1" 2>&1) || rr_fail "$1: TCP A -> $RR_GW_A:179: $out"
    out=$(rr_in "$RR_NS_B" "$RR_PY" "$PROBE" udp "$RR_GW_B" 179 "udp-$1" 2>&1) || rr_fail "$1: UDP B -> $RR_GW_B:179: $out"
    out=$(rr_in "$RR_NS_A" "$RR_PY" "$PROBE" tcp "$P6A::1" 179 "v6-$1" 2>&1) || rr_fail "$1: TCP A -> [$P6A::1]:179: $out"
    out=$(rr_in "$RR_NS_A" "$RR_PY" "$PROBE" udp "$LL%$RR_IF_A" 179 "ll-$1" 2>&1) || rr_fail "$1: UDP A -> [$LL%$RR_IF_A]:179: $out"
}
exchange first
rr_ok "TCP and UDP, IPv4 and IPv6 (global and link-local), to the router's addresses reach the control namespace and back"

ip netns exec "$NS_C" "$RR_PY" "$PROBE" raw-recv 224.0.0.5 "$RR_GW_A" 89 >"$RR_T/ospf.out" 2>&1 &
recv=$!
RR_EXTRA_PIDS+=("$recv")
rr_msleep 300 # the receiver joins the group before the first datagram
ip netns exec "$RR_NS_A" "$RR_PY" "$PROBE" raw-send 224.0.0.5 "$RR_HOST_A" 89 hello-ospf 2>/dev/null &
RR_EXTRA_PIDS+=($!)
send=$!
rr_wait 12 eval '! rr_alive $recv' || rr_fail "the raw socket in $NS_C is still waiting"
wait "$recv" || rr_fail "224.0.0.5, protocol 89: $(cat "$RR_T/ospf.out")"
kill -TERM "$send"
grep -q hello-ospf "$RR_T/ospf.out" || rr_fail "224.0.0.5: got $(cat "$RR_T/ospf.out")"
rr_ok "IP protocol 89 to 224.0.0.5 reaches a raw socket in the control namespace"

rr_stats || rr_fail "stats"
to=$(rr_ctr router.punt_to_host) from=$(rr_ctr router.punt_from_host)
[ "$to" -ge 10 ] && [ "$from" -ge 8 ] || rr_fail "punt_to_host $to, punt_from_host $from: expected at least 10 and 8"
rr_ok "counted: punt_to_host $to, punt_from_host $from"

# 4. The supervisor killed: the interfaces stay, and the next one adopts them.
idx=$(ip -n "$NS_C" -o link show cp-a | cut -d: -f1)
pid_cp=${RR_PIDS[cp-a]}
kill -KILL "$RR_PID"
wait "$RR_PID" 2>/dev/null
RR_PID=
exchange orphaned
mark=$(wc -l <"$RR_LOG")
rr_up
grep -q "adopting 5 running services" <(tail -n +"$mark" "$RR_LOG") ||
    rr_fail "the new supervisor did not adopt: $(tail -n +"$mark" "$RR_LOG")"
rr_wait 10 rr_all_up || rr_fail "not every service up after adoption"
[ "${RR_PIDS[cp-a]}" = "$pid_cp" ] || rr_fail "cp-a: pid $pid_cp before, ${RR_PIDS[cp-a]} after adoption"
[ "$(ip -n "$NS_C" -o link show cp-a | cut -d: -f1)" = "$idx" ] || rr_fail "cp-a is another device after adoption"
rr_remember_services
exchange adopted
rr_c link a
grep -q "control cp-a  netns $NS_C  cp-a up" <<<"$out" || rr_fail "link a after adoption: $out"
rr_ok "supervisor killed: cp-a kept (pid $pid_cp, ifindex $idx), adopted, and still carries the traffic"

# 5. reload: a change of control_netns is refused, nothing changed.
cp "$RR_T/m.ini" "$RR_T/m.keep"
sed -i "s/^control_netns = .*/control_netns = $RR_NS_A/" "$RR_T/m.ini"
rr_c reload
[ "$rc" != 0 ] && grep -q "\[router\] control_netns changed ($NS_C -> $RR_NS_A); nothing changed" <<<"$out$err" ||
    rr_fail "reload with another control_netns: exit $rc: $out $err"
cp "$RR_T/m.keep" "$RR_T/m.ini"
exchange reloaded
rr_ok "reload refused a change of control_netns: $out$err"

# 6. down: the interfaces go.
rr_stop
rr_census_ok
for x in a b; do # the device goes with its last fd, once its driver's io_uring has let go
    rr_wait 10 eval "! ip -n $NS_C link show cp-$x >/dev/null 2>&1" || rr_fail "cp-$x is still in $NS_C 10 s after down"
done
rr_ok "down: cp-a and cp-b are gone"
echo "PASS cp_punt"
