#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_shutdown.sh: SIGTERM, and then SIGINT on a second `up`
# started right after the first one is gone. Each time: exit 0 within 10 s,
# a clean census, no TAP device left in the namespace (`ip link` shows only
# lo), no control socket file, no process left from this supervisor (the
# services' pids, checked by pid and start time, and no child of it).
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_shutdown

sup_netns
NS=$SUP_NS
sup_manifest "$SUP_T/m.ini"

starttime() { awk '{ print $22 }' "/proc/$1/stat" 2>/dev/null; }

round() { # round SIG
    local sig=$1 s
    : >"$SUP_LOG"
    sup_start "$NS" "$SUP_T/m.ini"
    local links
    links=$(ip -n "$NS" -o link show | awk -F': ' '{ print $2 }' | sort | tr '\n' ' ')
    [ "$links" = "lo rrt-a rrt-b " ] || sup_fail "SIG$sig round: links before shutdown: $links"
    [ -S "$SUP_SOCK" ] || sup_fail "SIG$sig round: no socket at $SUP_SOCK"
    local mode
    mode=$(stat -c %a "$SUP_SOCK")
    # 0660 when the machine has the default control_group, ringrouter (sup_group.sh)
    local want=600
    getent group ringrouter >/dev/null && want=660
    [ "$mode" = "$want" ] || sup_fail "SIG$sig round: the control socket has mode $mode, expected $want"
    declare -A pid st
    for s in "${SUP_SERVICES[@]}"; do
        pid[$s]=${SUP_PIDS[$s]}
        st[$s]=$(starttime "${SUP_PIDS[$s]}")
    done
    local sup=$SUP_PID
    sup_now
    local t0=$SUP_NOW
    sup_stop "$sig" 10
    sup_now
    echo "SIG$sig: the supervisor (pid $sup) exited with status $SUP_RC after $(((SUP_NOW - t0) / 1000)) ms"
    [ "$SUP_RC" = 0 ] || sup_fail "SIG$sig: exit status $SUP_RC, expected 0"
    grep -q "^ringrouter: $( [ "$sig" = TERM ] && echo Terminated || echo Interrupt): stopping every service$" "$SUP_LOG" ||
        sup_fail "SIG$sig: no \"stopping every service\" line for the signal"
    for s in "${SUP_SERVICES[@]}"; do
        grep -q "^ringrouter: $s: stopped (exited with status 0)$" "$SUP_LOG" ||
            sup_fail "SIG$sig: $s did not stop cleanly on SIGTERM"
    done
    sup_census_ok "SIG$sig" >/dev/null
    grep -q "^ringrouter: down$" "$SUP_LOG" || sup_fail "SIG$sig: no \"down\" line"
    links=$(ip -n "$NS" -o link show | awk -F': ' '{ print $2 }' | tr '\n' ' ')
    [ "$links" = "lo " ] || sup_fail "SIG$sig: links left in the namespace: $links"
    [ ! -e "$SUP_SOCK" ] || sup_fail "SIG$sig: the control socket $SUP_SOCK is still there"
    for s in "${SUP_SERVICES[@]}"; do
        if [ -e "/proc/${pid[$s]}" ] && [ "$(starttime "${pid[$s]}")" = "${st[$s]}" ]; then
            sup_fail "SIG$sig: $s (pid ${pid[$s]}) is still there"
        fi
    done
    # This test runs its own copy of the binaries: no process may run one.
    local left="" e
    for e in /proc/[0-9]*/exe; do
        case $(readlink "$e" 2>/dev/null) in "$SUP_T/bin/"*) left+=" ${e#/proc/}" ;; esac
    done
    [ -z "$left" ] || sup_fail "SIG$sig: processes still run this test's binaries: ${left//\/exe/}"
    echo "SIG$sig: exit 0, census clean, only lo in $NS, no socket, no process left"
}

round TERM
# A new `up` right after works, and SIGINT stops it the same way.
round INT
echo "PASS: sup_shutdown"
