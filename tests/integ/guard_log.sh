#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/guard_log.sh: a service cannot forge the supervisor's log
# (issue 44, attack 4; supervisor/svclog.c). driver-a is rr-null in its
# forged-log mode (tests/svc/nulldrv.c): once ready it writes a census line
# as the supervisor words it, escape sequences, a bell, a journal priority,
# a 1,000-byte line and a carriage return, then a tick every 500 ms.
#   - each line is in the log only behind "driver-a[PID]: ", escaped (\xNN,
#     '\' as "\\"), the long one cut at 512 bytes and marked;
#   - no line of the log starts with the forgery, and the log holds no
#     ESC, BEL or CR byte;
#   - kill -9 of the supervisor, 1.5 s with none, then `up` again: the
#     adopted driver's lines go on in the new log, prefixed, and the ticks
#     written while no supervisor ran are there, none lost;
#   - at SIGTERM its last words (no newline) are in the log, marked, before
#     the line that says it stopped;
#   - driver-b writes 100-byte lines as fast as it can for 3 s: `status`
#     answers meanwhile within 1 s, the log says it is over its 64 KiB a
#     second, and at most 450 KiB of its lines reach the log (the old
#     supervisor let some 20 MB through).
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init guard_log

cp "$SUP_T/bin/rr-null" "$SUP_T/bin/rr-null-evil-log" && cp "$SUP_T/bin/rr-null" "$SUP_T/bin/rr-null-evil-flood" ||
    sup_fail "cp rr-null"
sup_netns
NS=$SUP_NS
SUP_ROUTER_KEYS="orphan_grace_ms = 30000"
sup_manifest "$SUP_T/m.ini" driver-a.binary=rr-null-evil-log driver-b.binary=rr-null-evil-flood
sup_start "$NS" "$SUP_T/m.ini"
sup_now
t0=$SUP_NOW
"$RR" status -S "$SUP_SOCK" >/dev/null 2>&1 || sup_bad "status during driver-b's flood"
sup_now
echo "status during driver-b's flood: $(((SUP_NOW - t0) / 1000)) ms"
[ $(((SUP_NOW - t0) / 1000)) -lt 1000 ] || sup_timing_bad "status took $(((SUP_NOW - t0) / 1000)) ms during a log flood"
sup_status
pid=${SUP_PIDS[driver-a]}
bpid=${SUP_PIDS[driver-b]}
SUP_EXTRA_PIDS+=("${SUP_PIDS[router]}" "$pid" "$bpid")
P="driver-a\\[$pid\\]: "
sup_wait 5 sup_log_has "${P}evil-log: tick 2" || sup_fail "no \"driver-a[$pid]: evil-log: tick 2\" line within 5 s"

A512=$(printf 'A%.0s' $(seq 512))
want=(
    "${P}ringrouter: census: all 8192 buffers free \\(0 packets drained from rings\\)"
    "${P}\\\\x1b\\[2J\\\\x1b\\[31mred\\\\x1b\\[0m bell\\\\x07 tab\\\\x09 e-acute \\\\xc3\\\\xa9 backslash \\\\\\\\x1b"
    "${P}<3>ringrouter: a journal priority forged"
    "${P}$A512 \\[cut\\]"
    "${P}first\\\\x0dringrouter: after a carriage return"
)
for re in "${want[@]}"; do
    sup_log_has "$re" || sup_bad "no log line matching ^$re\$"
done
grep -nE '^(<[0-7]>)?ringrouter: (census: all 8192|a journal priority|after a carriage)' "$SUP_LOG" &&
    sup_bad "a line of the service's is in the log as the supervisor's"
grep -c $'[\x1b\x07\r]' "$SUP_LOG" | grep -qx 0 || sup_bad "the log holds an ESC, BEL or CR byte"
grep -qE "A{513}" "$SUP_LOG" && sup_bad "a line longer than 512 bytes of the service's is in the log"
echo "driver-a[$pid]: every forged line prefixed, escaped and cut"

sup_wait 5 sup_log_has "ringrouter: driver-b: pid $bpid wrote more than 65536 bytes to stderr within 1 s; .*" ||
    sup_bad "no line saying driver-b is over its log rate"
flood_bytes() { grep -a "^driver-b\[$bpid\]: flood" "$SUP_LOG" | wc -c; }
# Its 3 s are over once its lines stop growing (read at most 64 KiB a second).
prev=-1
sup_wait 15 eval 'cur=$(flood_bytes); [ "$cur" = "$prev" ] || { prev=$cur; sup_msleep 1500; false; }' ||
    sup_bad "driver-b's lines still grow after 15 s"
echo "driver-b's flood: $(flood_bytes) bytes of its lines in the log"
[ "$(flood_bytes)" -le 460800 ] || sup_bad "driver-b's flood put $(flood_bytes) bytes in the log (bound 450 KiB)"

# Adoption: the pipe outlives the supervisor; what is written meanwhile waits.
# The instance running now (a hang on a loaded machine may have replaced it).
sup_status
if [ "${SUP_PIDS[driver-a]}" != "$pid" ]; then
    echo "driver-a was replaced meanwhile: pid $pid, now ${SUP_PIDS[driver-a]}"
    pid=${SUP_PIDS[driver-a]}
    P="driver-a\\[$pid\\]: "
    SUP_EXTRA_PIDS+=("$pid")
fi
disown "$SUP_PID" # no "Killed" from the shell
kill -KILL "$SUP_PID"
sup_wait 5 eval '! sup_alive $SUP_PID' || sup_fail "the supervisor outlived kill -9"
SUP_PID=
last=$(sed -n "s/^driver-a\\[$pid\\]: evil-log: tick \\([0-9]*\\)\$/\\1/p" "$SUP_LOG" | tail -n 1)
sup_msleep 1500
sup_alive "$pid" || sup_fail "driver-a (pid $pid) died with its supervisor"
SUP_LOG=$SUP_T/log2
sup_start "$NS" "$SUP_T/m.ini" "$SUP_LOG"
sup_log_has "ringrouter: driver-a: adopted, pid $pid" || sup_fail "driver-a (pid $pid) was not adopted"
sup_wait 5 sup_log_has "${P}evil-log: tick $((last + 5))" ||
    sup_bad "the adopting supervisor's log has no \"driver-a[$pid]: evil-log: tick $((last + 5))\""
first=$(sed -n "s/^driver-a\\[$pid\\]: evil-log: tick \\([0-9]*\\)\$/\\1/p" "$SUP_LOG" | head -n 1)
echo "ticks: the last before kill -9 was $last, the first in the new supervisor's log $first"
[ "$first" = $((last + 1)) ] || sup_bad "ticks lost across the adoption: $last, then $first"
grep -qE '^(<[0-7]>)?evil-log: tick' "$SUP_LOG" && sup_bad "an adopted service's line without its prefix"

sup_stop TERM 10
[ "$SUP_RC" = 0 ] || sup_bad "the supervisor exited with status $SUP_RC"
words=$(grep -n "^driver-a\\[$pid\\]: evil-log: last words, no newline \\[no newline\\]\$" "$SUP_LOG" | cut -d: -f1)
stopped=$(grep -n "^ringrouter: driver-a: stopped" "$SUP_LOG" | cut -d: -f1)
[ -n "$words" ] || sup_bad "driver-a's last words are not in the log"
[ -n "$words" ] && [ -n "$stopped" ] && [ "$words" -lt "$stopped" ] ||
    sup_bad "driver-a's last words (line ${words:-none}) are not before its stop (line ${stopped:-none})"
sup_verdict guard_log
