#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/iso_rings.sh: a peer that lies about a ring's index is caught,
# restarted and repaired, and the census blames no one innocent (issue 44,
# attacks 7 and 8; docs/security.md, "Ring indices" and "Census blame").
#
# The real router forwards between TAP ports a and b. Ports lc and lp are
# driven by rr-rings-evil (tests/svc/rings_evil.c), which behaves until the
# test's SIGUSR1, then:
#   driver-lc rewrites the owner words of buffers in flight to another
#             driver's id, then moves cons of its input ring (tx-lc, which
#             the router produces into: a ping flow from A to lc's network
#             makes it try) far past prod and keeps it there;
#   driver-lp moves prod of its output ring (rx-lp) 2^31 past cons.
# Asserted:
#   - for each, the supervisor logs the ring and the liar, and restarts the
#     liar (a new pid, up again), within a bounded wait; the ring's honest
#     end counted the lie (cons_lie on tx-lc, prod_lie on rx-lp), and the
#     supervisor put the liar's index back;
#   - `stats` never showed a ring's occupancy above its size (polled every
#     50 ms through both attacks);
#   - the router and drivers a and b keep their pids, no restart; a ping
#     A -> B answers after the attacks;
#   - the shutdown census is clean (exit 0, every buffer free, no LEAK), and
#     the only services it charges are the liars: no census line says
#     router, driver-a or driver-b held, leaked or lied.
# On the old code (d0d932c) the router believed the lie: it wrote past its
# slots or walked 2^31 garbage slots, nothing was restarted, and the census
# blamed the router and a driver.
set -u
. "$(dirname "$0")/../lib/router.sh"
. "$(dirname "$0")/../lib/rings_iso.sh"
iso_init iso_rings
n=$(($$ % 250 + 1))
iso_port lc 63
iso_port lp 64
# The smallest rings the manifest allows: an honest end reads its peer's
# index when its cached copy runs out, after at most a ring's worth.
RR_ROUTER_EXTRA='ring_size = 64'
rr_topology "$ISO_TEXT$(printf '[neigh 10.63.%s.2]\nmac = 02:00:00:00:63:02\n' "$n")"
rr_start
iso_pids0
evil_up() { # evil_up SVC: up, with a pid (never 0 or empty: kill -USR1 0 signals this process group)
    rr_status && [[ "${RR_PIDS[$1]:-}" =~ ^[1-9][0-9]*$ ]] && [ "${RR_STATE[$1]}" = up ]
}
for s in driver-lc driver-lp; do
    rr_wait 10 evil_up "$s" || rr_fail "$s (rr-rings-evil) is not up: ${RR_STATE[$s]:-none}"
done

rr_in "$RR_NS_A" ping -c 1 -W 2 "$RR_HOST_B" >/dev/null || rr_fail "no first ping A -> B"
# Traffic from B: driver-lc's rewrite may hit the buffers driver-b keeps
# posted to its device, and each costs one packet B sends (the router
# refuses it): a steady flow from B spends them at once.
ip netns exec "$RR_NS_B" ping -i 0.01 -W 1 "$RR_HOST_A" >/dev/null 2>&1 &
RR_EXTRA_PIDS+=("$!")
# Traffic the router must send through tx-lc (to a static neighbour).
ip netns exec "$RR_NS_A" ping -i 0.01 -W 1 "10.63.$n.2" >/dev/null 2>&1 &
RR_EXTRA_PIDS+=("$!")

# stats, every 50 ms, until the flag file appears: the largest occupancy
# over size any ring showed.
"$RR_PY" - "$RR" "$RR_SOCK" "$RR_T/poll.done" >"$RR_T/poll.out" 2>&1 <<'EOF' &
import json, os, subprocess, sys, time
rr, sock, flag = sys.argv[1:4]
worst, polls = None, 0
while not os.path.exists(flag):
    p = subprocess.run([rr, "stats", "--json", "-S", sock], capture_output=True, text=True)
    if p.returncode == 0:
        polls += 1
        for r in json.loads(p.stdout)["rings"]:
            if worst is None or r["occupancy"] - r["size"] > worst[0]:
                worst = (r["occupancy"] - r["size"], r["name"], r["occupancy"], r["size"])
    time.sleep(0.05)
print(polls, *(worst or (0, "-", 0, 0)))
EOF
poll_pid=$!
RR_EXTRA_PIDS+=("$poll_pid")

attack() { # attack SVC RING INDEX
    local svc=$1 ring=$2 idx=$3 pid
    pid=${RR_PIDS[$svc]}
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = rr-rings-evil ] || rr_fail "pid $pid ($svc) is not rr-rings-evil"
    kill -USR1 "$pid" || rr_fail "cannot signal $svc (pid $pid)"
    rr_wait 10 grep -q "ringrouter: $svc: ring $ring: $svc lies about its $idx index" "$RR_LOG" ||
        rr_fail "no conviction of $svc for ring $ring within 10 s: $(grep -E "rr-rings-evil|$ring" "$RR_LOG" | tail -n 5)
$("$RR" stats -S "$RR_SOCK" 2>&1 | sed -n '/^RING/,$p')"
    rr_wait 10 eval 'evil_up $svc && [ "${RR_PIDS[$svc]}" != "$pid" ]' ||
        rr_fail "$svc was not restarted (pid $pid -> ${RR_PIDS[$svc]:-none}, ${RR_STATE[$svc]:-none})"
    rr_wait 5 grep -q "ringrouter: ring $ring: prod [0-9]* - cons [0-9]* .* $svc's $idx put back to" "$RR_LOG" ||
        rr_fail "the supervisor did not put $svc's $idx of ring $ring back: $(grep "$ring" "$RR_LOG" | tail -n 3)"
    grep "ringrouter: $svc: ring $ring:" "$RR_LOG" | head -n 1
    echo "$svc: restarted, pid $pid -> ${RR_PIDS[$svc]}"
}
attack driver-lc tx-lc cons
attack driver-lp rx-lp prod

rr_stats || rr_fail "no stats"
[ "$(rr_ctr ring.tx-lc.cons_lie)" -ge 1 ] || rr_fail "the router did not count driver-lc's lie: ring.tx-lc.cons_lie = $(rr_ctr ring.tx-lc.cons_lie)"
[ "$(rr_ctr ring.rx-lp.prod_lie)" -ge 1 ] || rr_fail "the router did not count driver-lp's lie: ring.rx-lp.prod_lie = $(rr_ctr ring.rx-lp.prod_lie)"
echo "counted by the router: tx-lc cons_lie $(rr_ctr ring.tx-lc.cons_lie), rx-lp prod_lie $(rr_ctr ring.rx-lp.prod_lie)"

touch "$RR_T/poll.done"
rr_wait 5 eval '! rr_alive $poll_pid' || rr_fail "the stats poller did not stop"
read -r polls over ring occ size <"$RR_T/poll.out" || rr_fail "the stats poller said: $(cat "$RR_T/poll.out")"
[ "${polls:-0}" -ge 5 ] || rr_fail "the stats poller got $polls answers: $(cat "$RR_T/poll.out")"
[ "$over" -le 0 ] || rr_fail "stats showed ring $ring with occupancy $occ over its $size slots"
echo "stats polled $polls times during the attacks: no ring above its size"

iso_unhurt
rr_wait 10 rr_in "$RR_NS_A" ping -c 1 -W 1 "$RR_HOST_B" >/dev/null || rr_fail "no ping A -> B after the attacks
$("$RR" stats -S "$RR_SOCK" 2>&1)"

rr_stop
iso_census 'driver-l[cp]'
t_pass "iso_rings"
