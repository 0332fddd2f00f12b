#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/afxdp_ipv6.sh: IPv6 through the router over AF_XDP ports (issue
# 17), with the steering program's IPv6 rules (drivers/afxdp/steer.bpf.c):
#
#   ns A (2001:db8:73:N::2) --veth-- [ns R: ports a, b, AF_XDP copy mode;
#   R's own kernel has 2001:db8:73:N::fe on a's veth] --veth-- ns B (...:74:N::2)
#
# The router has ::1 on each network and its own link-local address (from
# its MAC, not the device's: no clash with R's kernel). Asserts:
#   - ping -6 of the router's address on A's side and on B's side, answered
#     by the router (its echo counter moves); the hosts' solicitations for it
#     reach the router, which resolves them;
#   - ping -6 A -> B and B -> A through the router: the router forwarded
#     them (forwarded6 moves), Linux's IPv6 forwarding is off everywhere;
#   - ping -6 from A of R's own address on a's veth: answered by R's kernel
#     (the frames stay with the host: the steering's passed_host moves, the
#     router's echo counter does not);
#   - no malformed-input drop, no restart, a clean census.
# Skips (77) without root or AF_XDP.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init afxdp_ipv6
rr_afxdp_init

n=$(($$ % 250 + 1))
P6_A=2001:db8:73:$(printf '%x' "$n")
P6_B=2001:db8:74:$(printf '%x' "$n")
# The hosts' addresses first: R's must be there when the supervisor reads
# them for the steering program, at start.
rr_three_ns 73 74 ""
for ns in "$NS_A" "$NS_B" "$NS_R"; do
    rr_in "$ns" sysctl -qw net.ipv6.conf.all.forwarding=0 net.ipv6.conf.default.forwarding=0 \
        net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.default.accept_ra=0 ||
        rr_fail "cannot set IPv6 sysctls in $ns"
done
# The veths and addresses before `up` (not rr_afxdp_up): R's must be there first.
rr_veth_host "$NS_A" 6a0 6a1 "$NS_R" "$HOST_A" "$GW_A"
rr_veth_host "$NS_B" 6b0 6b1 "$NS_R" "$HOST_B" "$GW_B"
ip -n "$NS_A" -6 addr add "$P6_A::2/64" dev 6a0 nodad || rr_fail "A's IPv6 address"
ip -n "$NS_B" -6 addr add "$P6_B::2/64" dev 6b0 nodad || rr_fail "B's IPv6 address"
ip -n "$NS_R" -6 addr add "$P6_A::fe/64" dev 6a1 nodad || rr_fail "R's IPv6 address"
ip -n "$NS_A" -6 route add default via "$P6_A::1" dev 6a0 || rr_fail "A's IPv6 default route"
ip -n "$NS_B" -6 route add default via "$P6_B::1" dev 6b0 || rr_fail "B's IPv6 default route"
{
    printf '[router]\nname = 6x%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
    printf '[port a]\ndriver = afxdp\nifname = 6a1\naddress = %s/24\naddress6 = %s::1/64\n\n' "$GW_A" "$P6_A"
    printf '[port b]\ndriver = afxdp\nifname = 6b1\naddress = %s/24\naddress6 = %s::1/64\n' "$GW_B" "$P6_B"
    for s in "${RR_SERVICES[@]}"; do
        printf '\n[service %s]\nhang_ms = 3000\n' "$s"
    done
} >"$RR_T/x.ini"
"$RR" check -c "$RR_T/x.ini" >/dev/null || rr_fail "the manifest does not check: $(cat "$RR_T/x.ini")"
ip netns exec "$NS_R" "$RR" up -c "$RR_T/x.ini" 2>>"$RR_LOG" &
RR_PID=$!
rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "not every service was up within 10 s"
rr_alive "$RR_PID" || rr_fail "the supervisor exited at start"
rr_ok "up: A $P6_A::2 -- 6a1 [driver-a, router, driver-b] 6b1 -- B $P6_B::2 (AF_XDP); R has $P6_A::fe"

ping6_ok() { # ping6_ok NS DST COUNT
    local out
    out=$(rr_in "$1" ping -6 -n -c "$3" -i 0.1 -W 2 "$2" 2>&1) || rr_fail "ping -6 $2 from $1: $out"
    grep -q " $3 received" <<<"$out" || rr_fail "ping -6 $2 from $1 lost replies: $out"
}
xdp_passed() { # the steering program's passed_host count on port a
    "$RR" stats --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
print(next(x for x in json.load(sys.stdin)["xdp"] if x["port"] == "a")["passed_host"])'
}

rr_stats || rr_fail "stats"
e0=$(rr_ctr router.icmp6_echo_reply_tx)
ping6_ok "$NS_A" "$P6_A::1" 5
ping6_ok "$NS_A" "$P6_B::1" 5
rr_stats || rr_fail "stats"
[ $(($(rr_ctr router.icmp6_echo_reply_tx) - e0)) -ge 10 ] ||
    rr_fail "the router answered $(($(rr_ctr router.icmp6_echo_reply_tx) - e0)) of the 10 echoes to its own addresses"
[ "$(rr_ctr router.nd_learned)" -ge 1 ] || rr_fail "the router learned no IPv6 neighbour (nd_learned 0)"
rr_ok "ping -6 the router's addresses on both sides from A: the router answered (icmp6_echo_reply_tx +$(($(rr_ctr router.icmp6_echo_reply_tx) - e0)))"

f0=$(rr_ctr router.forwarded_ipv6)
ping6_ok "$NS_A" "$P6_B::2" 10
ping6_ok "$NS_B" "$P6_A::2" 10
rr_stats || rr_fail "stats"
[ $(($(rr_ctr router.forwarded_ipv6) - f0)) -ge 40 ] ||
    rr_fail "the router forwarded $(($(rr_ctr router.forwarded_ipv6) - f0)) IPv6 packets for 20 echoes each way"
rr_ok "ping -6 A -> B and B -> A through the router: forwarded_ipv6 +$(($(rr_ctr router.forwarded_ipv6) - f0))"

p0=$(xdp_passed)
e0=$(rr_ctr router.icmp6_echo_reply_tx)
ping6_ok "$NS_A" "$P6_A::fe" 5
rr_stats || rr_fail "stats"
p1=$(xdp_passed)
[ $((p1 - p0)) -ge 5 ] || rr_fail "the steering passed $((p1 - p0)) frames to R's kernel for 5 echoes to its address"
[ "$(rr_ctr router.icmp6_echo_reply_tx)" = "$e0" ] || rr_fail "the router answered echoes to R's own address"
rr_ok "ping -6 R's own $P6_A::fe from A: R's kernel answered (passed_host +$((p1 - p0))), the router saw none"

rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
rr_stop
rr_census_ok
echo "PASS afxdp_ipv6"
