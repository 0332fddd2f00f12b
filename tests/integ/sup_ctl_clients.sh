#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_ctl_clients.sh: no control client can hold the supervisor's
# event loop (supervisor/ctl_conn.c). Against a running supervisor:
#   - six clients trickle a byte every 150 ms and never end their line: the
#     supervisor closes each at its 1 s deadline, and meanwhile `status`
#     answers and a kill -9 of a driver is seen and the driver restarted
#     (the old loop read each client synchronously, 200 ms per byte, and a
#     trickle held it for as long as it went on: a dead service unnoticed);
#   - twenty idle connections of root's: sixteen (SUP_CTL_CONNS) are kept,
#     each closed at its deadline, and four are turned away at once as busy
#     (readers' limits: guard_ctl.sh);
#   - a request longer than 511 bytes, one with more than 72 words, and one
#     ending in CRLF (the same request as with LF);
#   - SIGTERM with a client trickling: the supervisor stops, census clean.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_ctl_clients

sup_netns
NS=$SUP_NS
sup_manifest "$SUP_T/m.ini"
sup_start "$NS" "$SUP_T/m.ini"
CLIENTS=("$SUP_PY" "$SUP_ROOT/tests/lib/ctl_clients.py")
between() { awk -v t="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(t >= lo && t <= hi) }'; }

# 1. Trickling clients.
"${CLIENTS[@]}" trickle "$SUP_SOCK" 6 6 >"$SUP_T/trickle" 2>&1 &
trickle=$!
SUP_EXTRA_PIDS+=("$trickle")
sup_msleep 300
sup_now
t0=$SUP_NOW
"$RR" status -S "$SUP_SOCK" >"$SUP_T/st" 2>&1 || sup_bad "status while six clients trickle: $(cat "$SUP_T/st")"
sup_now
echo "status while six clients trickle: $(((SUP_NOW - t0) / 1000)) ms"
[ $(((SUP_NOW - t0) / 1000)) -lt 2000 ] || sup_timing_bad "status took $(((SUP_NOW - t0) / 1000)) ms while six clients trickle"
sup_status
old=${SUP_PIDS[driver-a]}
kill -KILL "$old"
sup_wait 3 eval 'sup_status && [ "${SUP_STATE[driver-a]}" = up ] && [ "${SUP_PIDS[driver-a]}" != "$old" ]' ||
    sup_bad "driver-a (pid $old) was not restarted within 3 s of kill -9 while clients trickle"
grep -q "^ringrouter: driver-a: killed by signal 9 (Killed); restarting now$" "$SUP_LOG" ||
    sup_bad "no \"driver-a: killed by signal 9\" line"
wait "$trickle"
rc=$?
cat "$SUP_T/trickle"
[ "$rc" = 0 ] || sup_bad "a trickling client was still open after 6 s"
for t in $(sed -n 's/^trickle: open for //p' "$SUP_T/trickle"); do
    between "$t" 0.8 3.0 || sup_bad "a trickling client was kept open $t s (its deadline is 1 s)"
done

# 2. Idle connections: SUP_CTL_CONNS (16) kept until their deadline, the rest busy.
out=$("${CLIENTS[@]}" idle "$SUP_SOCK" 20 2>&1)
echo "$out"
[[ $out =~ ^idle:\ busy\ 4,\ kept\ 16,\ closed\ after\ (.*),\ still\ open\ 0$ ]] ||
    sup_bad "twenty idle connections: expected 4 busy and 16 closed at their deadline: $out"
for t in ${BASH_REMATCH[1]:-}; do
    between "$t" 0.8 3.0 || sup_bad "an idle connection was kept $t s (its deadline is 1 s)"
done
"$RR" status -S "$SUP_SOCK" >/dev/null 2>&1 || sup_bad "status after the idle connections were closed"

# 3. Malformed requests.
long=$(printf 'a%.0s' $(seq 600) | od -An -v -tx1 | tr -d ' \n')
out=$("${CLIENTS[@]}" send "$SUP_SOCK" "$long")
[ "$out" = $'ERR\nrequest: longer than 511 bytes' ] || sup_bad "a 600-byte request got: $out"
out=$("${CLIENTS[@]}" send "$SUP_SOCK" "$( (printf 'status'; printf ' a%.0s' $(seq 72); printf '\n') | od -An -v -tx1 | tr -d ' \n')")
[ "$out" = $'ERR\nrequest: more than 72 words' ] || sup_bad "a 73-word request got: $out"
out=$("${CLIENTS[@]}" send "$SUP_SOCK" "$(printf 'status json\r\n' | od -An -v -tx1 | tr -d ' \n')")
head -n 1 <<<"$out" | grep -qx OK || sup_bad "\"status json\" with CRLF got: $(head -n 2 <<<"$out")"
sed -n 2p <<<"$out" | "$SUP_PY" -c 'import json, sys; json.load(sys.stdin)' 2>/dev/null ||
    sup_bad "\"status json\" with CRLF: the answer is not JSON: $(sed -n 2p <<<"$out")"

# 4. SIGTERM with a client trickling.
"${CLIENTS[@]}" trickle "$SUP_SOCK" 1 3 >/dev/null 2>&1 &
SUP_EXTRA_PIDS+=("$!")
sup_msleep 200
sup_stop TERM 5
[ "$SUP_RC" = 0 ] || sup_bad "the supervisor exited with status $SUP_RC after SIGTERM with a client connected"
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "census: $out"

sup_verdict sup_ctl_clients
