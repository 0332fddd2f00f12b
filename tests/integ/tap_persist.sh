#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/tap_persist.sh: `persist = yes` on a TAP port (issue 19,
# item 1). Port a has it, port b does not.
#   - after a clean stop, port a's device is still in namespace A with host
#     A's address and default route on it; port b's is gone;
#   - the next `up` takes port a's device back: A pings B again with no
#     address or route added on A's side (B's, recreated, needs its own);
#   - a reload to persist = no says so ("port a: persist yes -> no"), and
#     the next stop removes the device;
#   - clean census at each stop.
# And the single-queue steering program the supervisor attaches to each TAP
# (supervisor/setup.c, "rr_tap_q0"; it keeps no fd of it, so a program is
# live only while a device holds it): one per device while up, the persistent
# device's alone after the stop, that one replaced (not added to) when the
# next `up` takes the device back, none once both devices are gone.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init tap_persist
PROGS=$RR_BIN_DIR/tests/bpf_progs
[ -x "$PROGS" ] || rr_fail "$PROGS is missing: build with ninja first"
before=$("$PROGS" rr_tap_q0) || rr_fail "cannot list BPF programs"
# The steering programs loaded since the test began, one id a line.
steer_progs() {
    local now
    now=$("$PROGS" rr_tap_q0) || rr_fail "cannot list BPF programs"
    grep -vxF -e "${before:-none}" <<<"$now"
}
steer_count_is() { [ "$(steer_progs | grep -c .)" -eq "$1" ]; }

rr_topology
sed -i '/^\[port a\]$/a persist = yes' "$RR_T/m.ini"
"$RR" check -c "$RR_T/m.ini" >/dev/null || rr_fail "the manifest does not check: $(cat "$RR_T/m.ini")"
rr_start
ping_ab() { rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1; }
out=$(ping_ab) || rr_fail "ping A -> B: $out"
rr_ok "up: port a persist = yes, A pings B"
steer_count_is 2 || rr_fail "steering programs while up: $(steer_progs | tr '\n' ' ')(want one for each of 2 TAPs)"
first=$(steer_progs)

rr_stop
rr_census_ok
grep -qxF "ringrouter: driver-a: TAP $RR_IF_A kept (persist = yes)" "$RR_LOG" || rr_fail "no \"TAP $RR_IF_A kept\" log line"
ip -n "$RR_NS_A" link show "$RR_IF_A" >/dev/null 2>&1 || rr_fail "$RR_IF_A is gone after the stop, though persist = yes"
ip -n "$RR_NS_A" -4 addr show dev "$RR_IF_A" | grep -qw "$RR_HOST_A/24" || rr_fail "$RR_IF_A lost $RR_HOST_A/24: $(ip -n "$RR_NS_A" addr show dev "$RR_IF_A")"
ip -n "$RR_NS_A" route show default | grep -q "via $RR_GW_A dev $RR_IF_A" || rr_fail "A lost its default route: $(ip -n "$RR_NS_A" route)"
# The device goes when the kernel drops the last reference to its file,
# which the drivers' io_uring may hold a moment past their exit.
gone() { ! ip -n "$1" link show "$2" >/dev/null 2>&1; }
rr_wait 5 gone "$RR_NS_B" "$RR_IF_B" || rr_fail "$RR_IF_B (persist = no) is still there 5 s after the stop"
rr_ok "stopped: $RR_IF_A kept with $RR_HOST_A/24 and A's default route; $RR_IF_B gone"
# A device's program goes with it after an RCU grace period.
rr_wait 5 steer_count_is 1 || rr_fail "steering programs after the stop: $(steer_progs | tr '\n' ' ')(want $RR_IF_A's alone)"
kept=$(steer_progs)
grep -qxF "$kept" <<<"$first" || rr_fail "the program left after the stop ($kept) is not one attached at up ($first)"
rr_ok "steering: a program on each TAP while up; the persistent one's outlives the stop with its device"

rr_up
rr_host_side "$RR_NS_B" "$RR_IF_B" "$RR_HOST_B" "$RR_GW_B"
rr_wait 5 eval 'ip -n "$RR_NS_A" link show "$RR_IF_A" | grep -q LOWER_UP' || rr_fail "$RR_IF_A has no carrier after the second up"
out=$(ping_ab) || rr_fail "ping A -> B after the second up, A's side untouched: $out"
rr_ok "second up: $RR_IF_A taken back, A pings B with nothing added on A's side"
gone_kept() { steer_count_is 2 && ! steer_progs | grep -qxF "$kept"; }
rr_wait 5 gone_kept || rr_fail "steering programs after the second up: $(steer_progs | tr '\n' ' ')(want 2, not $kept, which $RR_IF_A had)"

sed -i '/^persist = yes$/d' "$RR_T/m.ini"
out=$("$RR" reload -S "$RR_SOCK" 2>&1) || rr_fail "reload to persist = no: $out"
[ "$out" = "port a: persist yes -> no
reload: done, 1 change" ] || rr_fail "reload said: $out"
rr_stop
rr_census_ok
rr_wait 5 gone "$RR_NS_A" "$RR_IF_A" || rr_fail "$RR_IF_A is still there 5 s after a stop with persist = no"
rr_wait 5 steer_count_is 0 || rr_fail "steering programs left after both TAPs went: $(steer_progs | tr '\n' ' ')"
t_pass "tap_persist: a persist = yes TAP and its host address outlive a stop; the next up takes it back; reload to no removes it at stop; a steering program on each TAP, none leaked"
