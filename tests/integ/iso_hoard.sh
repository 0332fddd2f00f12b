#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/iso_hoard.sh: a service that hoards the pool and steals the
# owner words of buffers in flight is restarted within [router] hoard_ms,
# its buffers reclaimed, and the other ports recover (issue 44, attack 9;
# docs/security.md, "Hoarding").
#
# The real router forwards between TAP ports a and b; port hog is driven by
# rr-rings-evil (tests/svc/rings_evil.c), which behaves until the test's
# SIGUSR1, then allocates every buffer it can get and, every 2 ms, writes
# its own id into the owner word of every buffer another service holds or
# has in a ring. With the manifest's defaults (hoard_pct 50, hoard_ms 1000).
# Asserted:
#   - the supervisor logs that driver-hog holds more than its share for
#     hoard_ms and restarts it (a new pid, up again), within a bounded wait;
#   - a ping flow A -> B through the router (100 a second, with one B -> A
#     beside it) answers again after the restart, and the longest gap
#     between its answers is at most hoard_ms + 1500 ms (timing-bound: the
#     share is scanned every hoard_ms / 4; then kill, reclaim, and the
#     buffers the drivers had posted to their devices, whose owner words
#     were stolen, are spent);
#   - the router and drivers a and b keep their pids, no restart;
#   - the shutdown census is clean, and charges no one but driver-hog.
# On the old code (d0d932c) nothing noticed: the flow stayed cut.
set -u
. "$(dirname "$0")/../lib/router.sh"
. "$(dirname "$0")/../lib/rings_iso.sh"
iso_init iso_hoard
iso_port hog 65
rr_topology "$ISO_TEXT"
rr_start
iso_pids0
rr_wait 10 eval 'rr_status && [[ "${RR_PIDS[driver-hog]:-}" =~ ^[1-9][0-9]*$ ]] && [ "${RR_STATE[driver-hog]}" = up ]' ||
    rr_fail "driver-hog (rr-rings-evil) is not up: ${RR_STATE[driver-hog]:-none}"
hog=${RR_PIDS[driver-hog]}
[ "$(cat "/proc/$hog/comm" 2>/dev/null)" = rr-rings-evil ] || rr_fail "pid $hog is not rr-rings-evil"
hoard_ms=1000

rr_in "$RR_NS_A" ping -c 1 -W 2 "$RR_HOST_B" >/dev/null || rr_fail "no first ping A -> B"
ip netns exec "$RR_NS_B" ping -i 0.01 -W 1 "$RR_HOST_A" >/dev/null 2>&1 &
RR_EXTRA_PIDS+=("$!")
ip netns exec "$RR_NS_A" ping -D -i 0.01 -W 1 "$RR_HOST_B" >"$RR_T/ping.log" 2>&1 &
ping_pid=$!
RR_EXTRA_PIDS+=("$ping_pid")
rr_msleep 500

kill -USR1 "$hog" || rr_fail "cannot signal driver-hog (pid $hog)"
rr_wait 15 grep -q "ringrouter: driver-hog: holds [0-9]* of the pool's 8192 buffers, more than hoard_pct 50 % for hoard_ms $hoard_ms ms" "$RR_LOG" ||
    rr_fail "driver-hog was not caught hoarding within 15 s: $(grep -E 'rr-rings-evil|driver-hog' "$RR_LOG" | tail -n 5)
$("$RR" stats -S "$RR_SOCK" 2>&1 | grep -E 'held|^pool')"
grep "ringrouter: driver-hog: holds" "$RR_LOG" | head -n 1
rr_wait 10 eval 'rr_status && [ "${RR_STATE[driver-hog]}" = up ] && [ "${RR_PIDS[driver-hog]}" != "$hog" ]' ||
    rr_fail "driver-hog was not restarted (pid $hog -> ${RR_PIDS[driver-hog]:-none}, ${RR_STATE[driver-hog]:-none})"
grep -qE "ringrouter: driver-hog: reclaimed [0-9]+ buffers" "$RR_LOG" || rr_fail "no reclaim of driver-hog's buffers in the log"
echo "driver-hog restarted, pid $hog -> ${RR_PIDS[driver-hog]}; $(grep -oE 'driver-hog: reclaimed [0-9]+ buffers' "$RR_LOG" | head -n 1)"

# The flow answers again (bounded), then runs a while longer.
answers() { grep -c ' icmp_seq=' "$RR_T/ping.log"; }
a0=$(answers)
rr_wait 10 eval '[ "$(answers)" -gt "$((a0 + 20))" ]' || rr_fail "the flow A -> B did not recover after driver-hog's restart"
rr_msleep 1000
kill -INT "$ping_pid"
wait "$ping_pid" 2>/dev/null
# The longest silence between two answers, in ms.
gap=$(awk '/ icmp_seq=/ { t = substr($1, 2, length($1) - 2) + 0; if (p && t - p > g) g = t - p; p = t }
    END { printf "%d", g * 1000 }' "$RR_T/ping.log")
echo "the flow A -> B: longest gap between answers $gap ms (bound hoard_ms + 1500 = $((hoard_ms + 1500)) ms)"
[ "$gap" -le $((hoard_ms + 1500)) ] || t_timing_fail "the flow A -> B was silent for $gap ms, over hoard_ms + 1500 ms"

iso_unhurt

rr_stop
iso_census 'driver-hog'
t_pass "iso_hoard"
