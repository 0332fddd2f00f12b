#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_systemd.sh: `ringrouter up` as systemd runs it (Type=notify,
# WatchdogSec=, stderr to the journal), with this test in systemd's place:
#  - NOTIFY_SOCKET names an abstract socket a python3 listener holds; READY=1
#    arrives once, and when it does `status` already has every service up;
#    WATCHDOG=1 repeats while WATCHDOG_USEC is set; SIGHUP (a reload) sends
#    RELOADING=1 with MONOTONIC_USEC, then READY=1; STOPPING=1 at SIGTERM;
#  - the unit's ExecReload= (`ringrouter reload`) exits 100 on a manifest the
#    supervisor refuses, and a refused reload, by it or by SIGHUP, sends no
#    RELOADING=1 or READY=1 (systemd would take that for a reload done);
#  - JOURNAL_STREAM names stderr's device and inode, so every log line starts
#    with its syslog priority: <6> for the start, <4> for a killed service's
#    restart; with stderr elsewhere the lines are plain (every other test).
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_systemd
command -v "$SUP_PY" >/dev/null || sup_skip "needs python3 (the notify socket's listener)"

sup_netns
NS=$SUP_NS
sup_manifest "$SUP_T/m.ini"

# The listener: one line per datagram ("KEY=VALUE|KEY=VALUE"), and after
# READY=1 the `status` it saw at that moment.
cat >"$SUP_T/listen.py" <<'PY'
import socket, subprocess, sys
name, out, rr, sock = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + name[1:])
open(out + ".bound", "w").close()
with open(out, "a", buffering=1) as f:
    while True:
        msg = s.recv(4096).decode()
        f.write(msg.rstrip("\n").replace("\n", "|") + "\n")
        if "READY=1" in msg.split("\n"):
            st = subprocess.run([rr, "status", "-S", sock], capture_output=True, text=True)
            for line in st.stdout.splitlines():
                f.write("AT-READY " + line + "\n")
PY
NAME="@rrt-notify-$$"
MSGS=$SUP_T/notify.msgs
# An abstract name belongs to a network namespace: the listener lives in the
# supervisor's, as systemd's socket does in the host's.
ip netns exec "$NS" "$SUP_PY" "$SUP_T/listen.py" "$NAME" "$MSGS" "$RR" "$SUP_SOCK" &
SUP_EXTRA_PIDS+=($!)
sup_wait 5 test -e "$MSGS.bound" || sup_fail "the listener did not bind $NAME"

# stderr is the log file; JOURNAL_STREAM says it is the journal.
: >"$SUP_LOG"
export NOTIFY_SOCKET=$NAME WATCHDOG_USEC=200000
JOURNAL_STREAM=$(stat -c '%d:%i' "$SUP_LOG")
export JOURNAL_STREAM
sup_start "$NS" "$SUP_T/m.ini"
unset NOTIFY_SOCKET WATCHDOG_USEC JOURNAL_STREAM

sup_wait 5 grep -q '^READY=1' "$MSGS" || sup_fail "no READY=1 within 5 s of every service being up"
echo "notify: $(grep -m1 '^READY=1' "$MSGS")"
# The listener writes READY=1 first, then runs `status`: its lines follow.
at_ready() { grep -c '^AT-READY ' "$MSGS"; }
sup_wait 5 eval '[ "$(at_ready)" -ge 4 ]'
n=$(at_ready)
[ "$n" = 4 ] || sup_bad "status at READY=1: $n lines, expected a header and 3 services"
not_up=$(grep '^AT-READY ' "$MSGS" | awk '$2 != "SERVICE" && $3 != "up"')
[ -z "$not_up" ] || sup_bad "READY=1 came before every service was up: $not_up"
grep -q '^READY=1|STATUS=3 services up$' "$MSGS" || sup_bad "READY=1 without STATUS=3 services up"

watchdogs() { grep -c '^WATCHDOG=1$' "$MSGS"; }
sup_wait 10 eval '[ "$(watchdogs)" -ge 5 ]' || sup_bad "WATCHDOG=1 did not repeat: $(watchdogs) in 10 s at WATCHDOG_USEC=200000"
echo "notify: $(watchdogs) WATCHDOG=1 so far"

# A killed service: STATUS= says so while it is away; its restart logs at <4>.
sup_status || sup_fail "status"
kill -KILL "${SUP_PIDS[driver-a]}"
sup_wait 10 eval 'grep -q "^<4>ringrouter: driver-a: killed by signal 9" "$SUP_LOG"' ||
    sup_bad "no <4> line for driver-a's death"
sup_wait 10 sup_all_up || sup_fail "driver-a did not come back"
sup_wait 5 eval '[ "$(tail -n 1 "$MSGS")" = "STATUS=3 services up" ] || tail -n 3 "$MSGS" | grep -q "^STATUS=3 services up$"' ||
    sup_bad "no STATUS=3 services up after driver-a came back"
[ "$(grep -c '^READY=1' "$MSGS")" = 1 ] || sup_bad "READY=1 was sent more than once"

# A reload by SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1 again
# once it has answered.
kill -HUP "$SUP_PID"
sup_wait 5 eval '[ "$(grep -c "^READY=1" "$MSGS")" = 2 ]' || sup_bad "no READY=1 after the reload: $(tail -n 5 "$MSGS")"
grep -qE '^RELOADING=1\|MONOTONIC_USEC=[0-9]+\|STATUS=reloading$' "$MSGS" || sup_bad "no RELOADING=1 with MONOTONIC_USEC at SIGHUP"
[ "$(grep -n '^RELOADING=1' "$MSGS" | head -n 1 | cut -d: -f1)" -lt "$(grep -n '^READY=1' "$MSGS" | tail -n 1 | cut -d: -f1)" ] ||
    sup_bad "READY=1 came before RELOADING=1"
echo "notify: SIGHUP: RELOADING=1, then READY=1"

# The unit's ExecReload= is `ringrouter reload`, which waits for the answer:
# its exit status is what `systemctl reload` reports. Run as the unit has it,
# with this test's binary and manifest.
UNIT=$SUP_ROOT/dist/ringrouter.service
exec_reload=$(sed -n 's/^ExecReload=//p' "$UNIT")
[[ $exec_reload == "/usr/local/bin/ringrouter reload "* ]] ||
    sup_fail "the unit's ExecReload= is \"$exec_reload\", not a \`ringrouter reload\` that waits for the answer"
read -r -a exec_reload <<<"${exec_reload//\/usr\/local\/bin\/ringrouter/$RR}"
exec_reload=("${exec_reload[@]//\/etc\/ringrouter\/manifest.ini/$SUP_T/m.ini}")
out=$("${exec_reload[@]}" 2>&1) || sup_bad "ExecReload (${exec_reload[*]}) of an unchanged manifest: exit $?: $out"
sup_wait 5 eval '[ "$(grep -c "^READY=1" "$MSGS")" = 3 ]' || sup_bad "no READY=1 after ExecReload's reload"
echo "ExecReload: ${exec_reload[*]}: exit 0, then READY=1"

# A manifest the running supervisor refuses (a new pool needs a new `up`):
# ExecReload fails, and nothing tells systemd a reload was done. Then the
# same by SIGHUP, whose refusal is logged; then a good reload, whose
# RELOADING=1 and READY=1 must be the only ones since the refusals (one
# socket: datagrams arrive in order).
cp "$SUP_T/m.ini" "$SUP_T/m.good"
sed -i 's/^pool_buffers = 4096$/pool_buffers = 8192/' "$SUP_T/m.ini"
mark=$(wc -l <"$MSGS")
out=$("${exec_reload[@]}" 2>&1)
rc=$?
[ "$rc" = 100 ] || sup_bad "ExecReload of a refused manifest: exit $rc, expected 100: $out"
grep -q 'needs `ringrouter up` again' <<<"$out" || sup_bad "ExecReload's refusal does not say why: $out"
echo "ExecReload refused: exit $rc: $out"
kill -HUP "$SUP_PID"
sup_wait 5 grep -q 'reload: needs `ringrouter up` again' "$SUP_LOG" || sup_bad "SIGHUP's refusal is not in the log"
# A manifest that does not parse: refused before the supervisor is asked.
printf 'bogus line\n' >>"$SUP_T/m.ini"
out=$("${exec_reload[@]}" 2>&1)
rc=$?
[ "$rc" = 100 ] || sup_bad "ExecReload of a manifest that does not check: exit $rc, expected 100: $out"
cp "$SUP_T/m.good" "$SUP_T/m.ini"
out=$("$RR" reload -S "$SUP_SOCK" 2>&1) || sup_bad "reload of the good manifest again: $out"
sup_wait 5 eval '[ "$(grep -c "^READY=1" "$MSGS")" -ge 4 ]' || sup_bad "no READY=1 after the good reload"
after=$(tail -n +"$((mark + 1))" "$MSGS" | grep -E '^(RELOADING|READY)=1' | cut -d'|' -f1 | tr '\n' ' ')
[ "$after" = "RELOADING=1 READY=1 " ] ||
    sup_bad "after the refused reloads, expected RELOADING=1 READY=1 of the good one alone; got: $after"
echo "notify: refused reloads: no RELOADING=1 nor READY=1; the good one after them: $after"

sup_stop TERM 10
sup_wait 5 grep -q '^STOPPING=1|STATUS=stopping: Terminated$' "$MSGS" || sup_bad "no STOPPING=1 at SIGTERM"

# Every line of the supervisor's is marked and prefixed.
# A service's lines are the supervisor's too, marked and behind their
# instance's name (supervisor/svclog.c).
bad=$(grep -vE '^<[0-7]>ringrouter: ' "$SUP_LOG" | grep -vE '^<6>[a-z][a-z0-9.-]*\[[0-9]+\]: ' | head -n 5)
[ -z "$bad" ] || sup_bad "log lines without a priority and the ringrouter: prefix: $bad"
grep -q '^<6>ringrouter: t1: 3 services' "$SUP_LOG" ||
    grep -q '^<6>ringrouter: .*: 3 services, ' "$SUP_LOG" || sup_bad "no <6> start line"
echo "journal: $(grep -c '^<6>' "$SUP_LOG") lines at <6>, $(grep -c '^<4>' "$SUP_LOG") at <4>, $(grep -c '^<3>' "$SUP_LOG") at <3>"
sed 's/^<[0-7]>//' "$SUP_LOG" >"$SUP_T/plain.log"
out=$(t_census_check "$SUP_T/plain.log" "$SUP_RC") || sup_fail "$out"
echo "$out"
sup_verdict sup_systemd
