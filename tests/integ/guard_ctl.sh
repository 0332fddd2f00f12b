#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/guard_ctl.sh: readers of the control socket cannot lock root
# out (issue 44, attack 6; supervisor/ctl_conn.c). A uid in [router]
# control_group (a temporary group) floods the socket: 24 connections kept
# open, each trickling one byte every 0.3 s, each reopened at once when the
# supervisor closes it (tests/lib/guard_flood.py). Meanwhile:
#   - root's `route add` (and `route del`) succeeds 5 times out of 5, each
#     within 2 s (the old supervisor had 8 slots for all: busy every time);
#   - the trickling connections are closed at the 1 s deadline of the whole
#     exchange, however steadily they send: none is held past 3 s;
#   - the flooder is turned away as busy (it may hold SUP_CTL_CONNS_PER_UID
#     connections, 4);
#   - `status` of a second member, another uid, is answered too (the
#     readers' shared slots are not all one uid's);
#   - a socket a user put where root's client looks (here named with -S)
#     answers OK to anything: root's `route add` refuses to send it a
#     request (exit 111), since its listener is not root's.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init guard_ctl
sup_temp_group rrguard-g
# Uids in no passwd entry, below the services' range.
U1=$((1898000000 + $$ % 100000))
U2=$((U1 + 100000))

sup_netns
NS=$SUP_NS
SUP_ROUTER_KEYS="control_group = $SUP_GROUP"
sup_manifest "$SUP_T/m.ini"
sup_start "$NS" "$SUP_T/m.ini"

cp "$SUP_ROOT/tests/lib/guard_flood.py" "$SUP_T/flood.py" && chmod 644 "$SUP_T/flood.py" || sup_fail "cp flood.py"
setpriv --reuid="$U1" --regid="$U1" --groups="$SUP_GID" -- "$SUP_PY" "$SUP_T/flood.py" "$SUP_SOCK" 24 12 \
    >"$SUP_T/flood" 2>&1 &
flood=$!
SUP_EXTRA_PIDS+=("$flood")
# The flood is on once the supervisor has turned one of its connections away.
sup_msleep 1500

ok=0
for i in 1 2 3 4 5; do
    sup_now
    t0=$SUP_NOW
    out=$("$RR" route add "10.77.$i.0/24" via 10.91.0.2 -S "$SUP_SOCK" 2>&1)
    rc=$?
    sup_now
    ms=$(((SUP_NOW - t0) / 1000))
    echo "root: route add 10.77.$i.0/24 during the flood: exit $rc in $ms ms${out:+: $out}"
    if [ "$rc" = 0 ]; then
        ok=$((ok + 1))
        [ "$ms" -lt 2000 ] || sup_timing_bad "route add took $ms ms during the flood (bound 2000)"
    fi
    sup_msleep 300
done
[ "$ok" = 5 ] || sup_bad "root's route add succeeded $ok times of 5 while a reader flooded the socket"
out=$(setpriv --reuid="$U2" --regid="$U2" --groups="$SUP_GID" -- "$RR" status -S "$SUP_SOCK" 2>&1)
rc=$?
[ "$rc" = 0 ] || sup_bad "a second member's status during the flood: exit $rc: $out"
out=$("$RR" route del 10.77.1.0/24 -S "$SUP_SOCK" 2>&1) || sup_bad "root's route del during the flood: $out"

sup_wait 20 eval '! sup_alive $flood' || sup_bad "the flooder did not end"
wait "$flood"
cat "$SUP_T/flood"
res=$(cat "$SUP_T/flood")
[[ $res =~ ^flood:\ opened\ ([0-9]+),\ busy\ ([0-9]+),\ longest\ held\ ([0-9.]+)\ s ]] ||
    sup_fail "the flooder said: $res"
[ "${BASH_REMATCH[2]}" -gt 0 ] || sup_bad "the flooder (24 connections of one uid) was never turned away"
awk -v t="${BASH_REMATCH[3]}" 'BEGIN { exit !(t > 0.5 && t <= 3.0) }' ||
    sup_bad "a trickling connection was held ${BASH_REMATCH[3]} s (its deadline is 1 s from the accept)"
sup_status && [ "${SUP_STATE[router]}" = up ] || sup_bad "the router is not up after the flood"

# A fake supervisor of another uid's.
mkdir -m 0755 "$SUP_T/fake"
chown "$U1" "$SUP_T/fake"
cat >"$SUP_T/fake.py" <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(4)
print("ready", flush=True)
s.settimeout(10)
try:
    while True:
        c, _ = s.accept()
        if c.recv(512):
            print("fake: got a request", flush=True)
        c.sendall(b"OK\nadded 10.66.0.0/24\n")
        c.close()
except socket.timeout:
    pass
PY
setpriv --reuid="$U1" --regid="$U1" --clear-groups -- "$SUP_PY" "$SUP_T/fake.py" "$SUP_T/fake/control.sock" \
    >"$SUP_T/fake.out" 2>&1 &
SUP_EXTRA_PIDS+=("$!")
sup_wait 5 grep -q ready "$SUP_T/fake.out" || sup_fail "the fake server did not start: $(cat "$SUP_T/fake.out")"
out=$("$RR" route add 10.66.0.0/24 via 10.91.0.2 -S "$SUP_T/fake/control.sock" 2>&1)
rc=$?
echo "root's route add to a socket of uid $U1's: exit $rc: $out"
[ "$rc" = 111 ] && [[ $out == *"is not root's: not a ringrouter supervisor; no request sent"* ]] ||
    sup_bad "root's client took a non-root listener for the supervisor: exit $rc: $out"
sup_msleep 200
grep -q "got a request" "$SUP_T/fake.out" && sup_bad "root's client sent its request to a non-root listener"

sup_stop TERM 10
sup_census_ok >/dev/null
sup_verdict guard_ctl
