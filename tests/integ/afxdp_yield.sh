#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/afxdp_yield.sh: a driver group and the router on one CPU
# (docs/drivers.md, "The loop"): after a pass that woke the router, the
# group's driver yields the CPU, the router routes the burst at once, and the
# same pass sends it, so the router need not wake the driver back.
#   - a stream A -> B through it arrives whole, once and in order;
#   - driver-g.wake_yields counts the yields;
#   - the router's wake-ups of the driver (its rings to driver-g) are fewer
#     than half the driver's wake-ups of the router: without the yield, at
#     `sched = batch` (no wake-up preemption), each burst costs one of each.
#
#   ns A --veth yla0|yla1-- [ns R: router, driver-g, both on CPU 0] --veth ylb1|ylb0-- ns B
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init afxdp_yield
rr_afxdp_init
rr_faultflow_init

RR_SERVICES=(router driver-g)
RR_AFXDP_A_EXTRA='group = g'
RR_AFXDP_B_EXTRA='group = g'
RR_AFXDP_SVC_EXTRA='cpu = 0\nsched = batch'
rr_afxdp_up 91 92 y yl

rr_stats || rr_fail "stats"
y0=$(rr_ctr driver-g.wake_yields)
rr_ff_start "$NS_A" "$NS_B" "$HOST_B" 2000
rr_msleep 2000
rr_ff_whole "A -> B beside the yields"
rr_stats || rr_fail "stats"
up=0 down=0
for k in "${!RRS[@]}"; do
    case $k in
    ring.rx-*.wake_sent) up=$((up + RRS[$k])) ;;
    ring.*.wake_sent) down=$((down + RRS[$k])) ;;
    esac
done
y=$(($(rr_ctr driver-g.wake_yields) - y0))
[ "$y" -ge 100 ] || rr_fail "driver-g.wake_yields moved by $y over a stream of $RR_FF_SENT datagrams"
[ "$up" -ge 100 ] && [ $((2 * down)) -lt "$up" ] ||
    rr_fail "the router woke the driver $down times, the driver the router $up times (yields: $y)"
rr_ok "a stream of $RR_FF_SENT datagrams whole; $y yields; the driver woke the router $up times, the router the driver $down"

rr_stop
rr_census_ok
rr_ok "stop: census clean"
echo "PASS afxdp_yield"
