#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/afxdp_sup_crash.sh: AF_XDP ports after a supervisor that did
# not stop (kill -9), whose services outlive it (supervisor/adopt.c,
# supervisor/xsk.c):
#   - the dead one's steering program is still on the devices, its NAPI
#     knobs still set, RUN_DIR/napi.PORT holds the originals, and the
#     services still run;
#   - the next `up` with the same manifest adopts them: the drivers keep
#     their pids, each AF_XDP socket and the program on each device are
#     taken over (said in the log), and A still reaches B;
#   - a clean stop then restores the ORIGINAL knob values (not the dead
#     supervisor's, which it found on the device), removes the state files
#     and leaves no XDP program;
#   - killed again, then `up` with another manifest (busy_poll = no and
#     other knob values on port a): the orphans are ended, the stale
#     programs detached (said in the log) instead of failing with "Device
#     or resource busy", port a's knobs are the new manifest's while it
#     runs (they coalesce its NAPI without busy polling too), and its
#     originals, not the dead one's, come back at the stop.
#
#   ns A --veth xa0|xa1-- [ns R: ringrouter] --veth xb1|xb0-- ns B
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init afxdp_sup_crash
rr_afxdp_init

rr_three_ns 73 74
rr_veth_host "$NS_A" xa0 xa1 "$NS_R" "$HOST_A" "$GW_A"
rr_veth_host "$NS_B" xb0 xb1 "$NS_R" "$HOST_B" "$GW_B"
knobs() { # knobs DEV: "napi_defer_hard_irqs gro_flush_timeout" of DEV in R
    echo "$(rr_in "$NS_R" cat /sys/class/net/"$1"/napi_defer_hard_irqs) $(rr_in "$NS_R" cat /sys/class/net/"$1"/gro_flush_timeout)"
}
link_xdp() { ip -n "$NS_R" link show "$1" | head -n 1 | grep -Eo ' xdp[a-z]* ' | tr -d ' '; }
orig_a=$(knobs xa1)
orig_b=$(knobs xb1)

# manifest LABEL PORT_A_KEYS: both ports AF_XDP, busy polling as the keys say.
manifest() {
    {
        printf '[router]\nname = as%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
        printf '[port a]\ndriver = afxdp\nifname = xa1\naddress = %s/24\n%s\n\n' "$GW_A" "$2"
        printf '[port b]\ndriver = afxdp\nifname = xb1\naddress = %s/24\n' "$GW_B"
    } >"$RR_T/$1.ini"
}
up() { # up LABEL: start on LABEL's manifest, wait until every service is up
    ip netns exec "$NS_R" "$RR" up -c "$RR_T/$1.ini" 2>>"$RR_LOG" &
    RR_PID=$!
    rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "$1: not every service was up within 10 s"
    rr_alive "$RR_PID" || rr_fail "$1: the supervisor exited at start: $(tail -n 3 "$RR_LOG")"
}
ping_ok() {
    local out
    out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "$1: ping A -> B: $out"
}
logged() { grep -qxF "ringrouter: $1" "$RR_LOG" || rr_fail "no log line \"ringrouter: $1\""; }

# 1. Up with busy polling; then kill -9 the supervisor.
manifest busy ''
up busy
ping_ok "first up"
set_a=$(knobs xa1)
[ "$set_a" != "$orig_a" ] || rr_fail "busy polling did not change xa1's NAPI knobs ($set_a)"
rr_status
pids=("${RR_PIDS[@]}")
da=${RR_PIDS[driver-a]} db=${RR_PIDS[driver-b]}
kill -KILL "$RR_PID"
wait "$RR_PID" 2>/dev/null
RR_PID=
RR_EXTRA_PIDS+=("${pids[@]}")
gone() { local p; for p in "${pids[@]}"; do [ ! -d /proc/"$p" ] || return 1; done; }
rr_msleep 200
for p in "${pids[@]}"; do [ -d /proc/"$p" ] || rr_fail "service pid $p died with the supervisor"; done
[ -n "$(link_xdp xa1)" ] || rr_fail "after kill -9 no program is left on xa1: nothing to test"
[ "$(knobs xa1)" = "$set_a" ] || rr_fail "after kill -9 xa1's knobs are $(knobs xa1), expected the dead one's $set_a"
[ "$(cat "$RR_T/run/napi.a")" = "$orig_a" ] || rr_fail "RUN_DIR/napi.a holds \"$(cat "$RR_T/run/napi.a" 2>&1)\", expected \"$orig_a\""
rr_ok "kill -9: program and knobs ($set_a) left on xa1, the originals ($orig_a) in RUN_DIR/napi.a"

# 2. The next up adopts them.
: >"$RR_LOG"
up busy
grep -q "adopting 3 running services" "$RR_LOG" || rr_fail "the next up did not adopt: $(tail -n 5 "$RR_LOG")"
grep -q "port a: adopted the AF_XDP socket on xa1 queue 0" "$RR_LOG" || rr_fail "port a's socket not adopted"
grep -q "port b: adopted the AF_XDP socket on xb1 queue 0" "$RR_LOG" || rr_fail "port b's socket not adopted"
rr_status
[ "${RR_PIDS[driver-a]}" = "$da" ] && [ "${RR_PIDS[driver-b]}" = "$db" ] ||
    rr_fail "the drivers' pids changed at adoption: $da $db -> ${RR_PIDS[driver-a]} ${RR_PIDS[driver-b]}"
ping_ok "second up"
rr_stop
rr_census_ok
for d in xa1 xb1; do
    [ -z "$(link_xdp $d)" ] || rr_fail "an XDP program is still on $d after a clean stop"
done
[ "$(knobs xa1)" = "$orig_a" ] || rr_fail "xa1's knobs are $(knobs xa1) after a clean stop, expected the originals $orig_a"
[ "$(knobs xb1)" = "$orig_b" ] || rr_fail "xb1's knobs are $(knobs xb1) after a clean stop, expected the originals $orig_b"
[ ! -e "$RR_T/run/napi.a" ] && [ ! -e "$RR_T/run/napi.b" ] || rr_fail "state files left after a clean stop: $(ls "$RR_T/run")"
rr_ok "second up: adopted (drivers' pids $da $db kept), forwarding, a clean stop restored $orig_a / $orig_b"

# 3. Killed again, then up with busy_poll = no and other knobs on port a:
# the new knobs while up, the originals after the stop.
: >"$RR_LOG"
up busy
rr_status
pids=("${RR_PIDS[@]}")
kill -KILL "$RR_PID"
wait "$RR_PID" 2>/dev/null
RR_PID=
RR_EXTRA_PIDS+=("${pids[@]}")
manifest nobusy $'busy_poll = no\nnapi_defer_hard_irqs = 3\ngro_flush_timeout = 100000'
: >"$RR_LOG"
up nobusy
rr_wait 10 gone || rr_fail "the dead supervisor's services still run after the next up (another manifest)"
grep -q "cannot adopt the running services: they were started from another manifest" "$RR_LOG" ||
    rr_fail "no refusal to adopt under another manifest: $(tail -n 5 "$RR_LOG")"
logged "port a: detached a steering program a supervisor that did not stop left on xa1"
logged "port b: detached a steering program a supervisor that did not stop left on xb1"
[ "$(knobs xa1)" = "3 100000" ] || rr_fail "busy_poll = no: xa1's knobs are $(knobs xa1) while up, expected the manifest's 3 100000"
ping_ok "busy_poll = no"
rr_stop
rr_census_ok
[ "$(knobs xa1)" = "$orig_a" ] || rr_fail "busy_poll = no: xa1's knobs are $(knobs xa1) after the stop, expected the originals $orig_a"
[ ! -e "$RR_T/run/napi.a" ] || rr_fail "busy_poll = no: RUN_DIR/napi.a is still there after the stop"
[ "$(knobs xb1)" = "$orig_b" ] || rr_fail "xb1's knobs are $(knobs xb1) after the last stop, expected $orig_b"
rr_ok "busy_poll = no after a kill -9: xa1's knobs 3 100000 while up, the originals $orig_a restored at the stop"
echo "PASS afxdp_sup_crash"
