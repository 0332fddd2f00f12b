#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_exec_trust.sh: what the supervisor runs as a service, and
# what it takes for one (supervisor/trust.c; issue 44, attacks 2 and 3).
#
# 1. A binary that skips the service contract's set-up is never taken for
#    up. Copies of rr-evil-nosetup (tests/svc/evil_nosetup.c) stand as
#    drivers, two at a time:
#      nosetup    no filter of its own, dumpable, says parked and ready
#      startonly  ipc_svc_open, then ready without ipc_svc_ready
#      dumpable   both stages, never PR_SET_DUMPABLE 0
#    Each must be refused: a log line naming the service, the binary and
#    what was missing ("it skipped ipc_svc_open", "it skipped
#    ipc_svc_ready", "dumpable"), and never a "ready" line. And the
#    supervisor's ceiling holds before any set-up: socket, fork and an open
#    for writing, each made first thing, die of SIGSYS ("killed by SIGSYS")
#    and never return ("rr-evil: socket() returned").
# 2. Binary trust, at `upgrade --binary`: refused, the answer naming the
#    path component and why, the service untouched: a file of mode 0777; a
#    file in a directory owned by another uid (65534); in a directory of
#    mode 0777; a file of another uid in a sticky directory; a script (#!). rr-evil-nosetup
#    itself: its standby is refused when parked, the upgrade rolled back.
#    A symbolic link
#    accepted, then swapped by root to a file in the other uid's directory:
#    the next standby is refused at its exec ("no standby: ... refusing
#    binary"), while the one exec'd before the swap serves.
# 3. At manifest load: a `binary` in the 0777 directory stops `up` with the
#    manifest line, the key and the component; and a `reload` to it is
#    refused, the service untouched.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_exec_trust
sup_bins rr-evil-nosetup rr-tap

OTHER=65534 # nobody: a uid that is neither root nor ours

# ---- 1. binaries that skip the set-up ----
# run_pair MODE_A MODE_B: driver-a and driver-b as those modes; wait until
# each has met its end, then stop.
declare -A WANT=(
    [nosetup]='refused (instance|standby) pid [0-9]+, binary [^ ]*/rr-evil-nosetup: .*it skipped ipc_svc_open; killed'
    [startonly]='refused instance pid [0-9]+, binary [^ ]*/rr-evil-startonly: .*it skipped ipc_svc_ready; killed'
    [dumpable]='refused (instance|standby) pid [0-9]+, binary [^ ]*/rr-evil-dumpable: dumpable .*; killed'
    [socket]='killed by SIGSYS: a forbidden system call \(seccomp\).*'
    [fork]='killed by SIGSYS: a forbidden system call \(seccomp\).*'
    [write]='killed by SIGSYS: a forbidden system call \(seccomp\).*'
)
run_pair() {
    local a=$1 b=$2 m svc
    sup_netns
    for m in "$a" "$b"; do
        [ "$m" = nosetup ] || cp "$SUP_T/bin/rr-evil-nosetup" "$SUP_T/bin/rr-evil-$m" || sup_fail "cp rr-evil-$m"
    done
    SUP_LOG=$SUP_T/log-$a-$b
    sup_manifest "$SUP_T/m.ini" driver-a.binary=rr-evil-$a driver-b.binary=rr-evil-$b
    sup_start_nowait "$SUP_NS" "$SUP_T/m.ini"
    for svc in driver-a:$a driver-b:$b; do
        m=${svc#*:} svc=${svc%%:*}
        if sup_wait 10 grep -qE "^ringrouter: $svc: ${WANT[$m]}\$" "$SUP_LOG"; then
            echo "  $svc as rr-evil-$m: $(grep -m 1 -oE "$svc: ${WANT[$m]}\$" "$SUP_LOG")"
        else
            sup_bad "$svc as rr-evil-$m: no line \"$svc: ${WANT[$m]}\" within 10 s$(grep -h "$svc\|rr-evil" "$SUP_LOG" | head -n 4 | sed 's/^/; /' | tr -d '\n')"
        fi
        grep -q "^ringrouter: $svc: ready, pid" "$SUP_LOG" && sup_bad "$svc as rr-evil-$m was taken for ready"
        grep -q "rr-evil: $m() returned" "$SUP_LOG" && sup_bad "$svc as rr-evil-$m: $(grep -m 1 "rr-evil: $m() returned" "$SUP_LOG")"
    done
    sup_alive "$SUP_PID" || sup_fail "the supervisor died"
    sup_stop TERM 10
}
echo "binaries that skip the set-up, or call what no service may first thing:"
run_pair nosetup startonly
run_pair dumpable socket
run_pair fork write

# ---- 2. upgrade --binary: who can write the path ----
echo "upgrade --binary:"
SUP_LOG=$SUP_T/log-upgrade
sup_netns
sup_manifest "$SUP_T/m.ini"
sup_start "$SUP_NS" "$SUP_T/m.ini"
D=$SUP_T/bin
cp "$D/rr-tap" "$D/rr-tap.0777" && chmod 0777 "$D/rr-tap.0777" || sup_fail "rr-tap.0777"
mkdir -m 0755 "$SUP_T/other" "$SUP_T/open" "$SUP_T/sticky" && chmod 0777 "$SUP_T/open" && chmod 1777 "$SUP_T/sticky" &&
    cp "$D/rr-tap" "$SUP_T/other/rr-tap" && cp "$D/rr-tap" "$SUP_T/open/rr-tap" &&
    cp "$D/rr-tap" "$SUP_T/sticky/rr-tap" && chmod 0755 "$SUP_T"/{other,open,sticky}/rr-tap &&
    printf '#!/bin/sh\nexec %s\n' "$D/rr-tap" >"$D/rr-tap.sh" && chmod 0755 "$D/rr-tap.sh" &&
    chown "$OTHER" "$SUP_T/other" "$SUP_T/sticky/rr-tap" || sup_fail "cannot make the unsafe directories"
sup_status || sup_fail "status"
pid0=${SUP_PIDS[driver-b]}
for c in "$D/rr-tap.0777|$D/rr-tap.0777 is writable by group and others (mode 0777)" \
    "$SUP_T/other/rr-tap|$SUP_T/other is owned by uid $OTHER, not by root" \
    "$SUP_T/open/rr-tap|$SUP_T/open is writable by group and others (mode 0777)" \
    "$SUP_T/sticky/rr-tap|$SUP_T/sticky/rr-tap is owned by uid $OTHER, not by root" \
    "$D/rr-tap.sh|$D/rr-tap.sh is a script (#!): under its kind's seccomp ceiling a shell can neither fork nor exec"; do
    IFS='|' read -r path want <<<"$c"
    out=$("$RR" upgrade driver-b --binary "$path" -S "$SUP_SOCK" 2>&1)
    rc=$?
    if [ "$rc" = 100 ] && grep -qF -- "upgrade driver-b: --binary refused: $path: $want" <<<"$out"; then
        echo "  $out"
    else
        sup_bad "upgrade driver-b --binary $path: exit $rc, expected 100 and \"$want\": $out"
    fi
done
sup_status && [ "${SUP_PIDS[driver-b]}" = "$pid0" ] && [ "${SUP_STATE[driver-b]}" = up ] ||
    sup_bad "the refused upgrades touched driver-b: ${SUP_STATE[driver-b]} pid ${SUP_PIDS[driver-b]} (was $pid0)"

# A binary that skips the set-up, by upgrade: its standby is refused when it
# says it is parked, and the upgrade rolled back.
out=$("$RR" upgrade driver-b --binary "$D/rr-evil-nosetup" -S "$SUP_SOCK" 2>&1)
rc=$?
want="driver-b: refused standby pid [0-9]+, binary $D/rr-evil-nosetup: .*it skipped ipc_svc_open; killed"
if [ "$rc" = 100 ] && grep -q "before it was ready to take over" <<<"$out" && grep -qE -- "$want" "$SUP_LOG"; then
    echo "  $(grep -m 1 -oE -- "$want" "$SUP_LOG")"
    echo "  $out"
else
    sup_bad "upgrade driver-b --binary $D/rr-evil-nosetup: exit $rc, expected 100, a rollback and \"$want\" in the log: $out"
fi
sup_status && [ "${SUP_PIDS[driver-b]}" = "$pid0" ] || sup_bad "the rolled-back upgrade touched driver-b"

# A link, accepted, then swapped by root to the other uid's file.
cp "$D/rr-tap" "$D/rr-tap.good" && ln -s rr-tap.good "$D/drv-b" || sup_fail "the link"
out=$("$RR" upgrade driver-b --binary "$D/drv-b" -S "$SUP_SOCK" 2>&1) || sup_fail "upgrade driver-b --binary $D/drv-b: $out"
echo "  $out"
sup_wait 10 eval 'sup_status && [[ "${SUP_STANDBY[driver-b]:-}" =~ ^[0-9]+$ ]]' || sup_bad "no parked standby of $D/drv-b"
ln -sfn "$SUP_T/other/rr-tap" "$D/drv-b" || sup_fail "swapping the link"
sup_status || sup_fail "status"
kill -KILL "${SUP_PIDS[driver-b]}"
want="driver-b: no standby: driver-b: refusing binary $D/drv-b: $SUP_T/other is owned by uid $OTHER, not by root"
if sup_wait 10 grep -qF -- "$want" "$SUP_LOG"; then
    echo "  after the swap: $want"
else
    sup_bad "after the swap: no line \"$want\"$(grep -h 'driver-b' "$SUP_LOG" | tail -n 3 | sed 's/^/; /' | tr -d '\n')"
fi
sup_wait 10 eval 'sup_status && [ "${SUP_STATE[driver-b]}" = up ]' ||
    sup_bad "driver-b is not up on the standby exec'd before the swap: ${SUP_STATE[driver-b]}"
sup_stop TERM 10

# ---- 3. the manifest's binary ----
echo "manifest:"
sup_manifest "$SUP_T/m.ini" driver-a.binary="$SUP_T/open/rr-tap"
line=$(grep -n "^binary = $SUP_T/open/rr-tap\$" "$SUP_T/m.ini" | cut -d: -f1)
out=$(timeout 10 ip netns exec "$SUP_NS" "$RR" up -c "$SUP_T/m.ini" 2>&1)
rc=$?
want="line $line: [service driver-a] binary: refused: $SUP_T/open/rr-tap: $SUP_T/open is writable by group and others (mode 0777)"
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -qF -- "$want" <<<"$out"; then
    echo "  up: exit $rc: $(grep -m 1 -F -- "$want" <<<"$out")"
else
    sup_bad "up with driver-a's binary in a 0777 directory: exit $rc, expected the line \"$want\": $out"
fi

# A reload that names it: refused, nothing changed.
sup_manifest "$SUP_T/m.ini"
sup_start "$SUP_NS" "$SUP_T/m.ini"
sup_status || sup_fail "status"
pid0=${SUP_PIDS[driver-a]}
sup_manifest "$SUP_T/m.ini" driver-a.binary="$SUP_T/open/rr-tap"
out=$("$RR" reload -S "$SUP_SOCK" 2>&1)
rc=$?
want="reload: line $line: [service driver-a] binary: refused: $SUP_T/open/rr-tap: $SUP_T/open is writable by group and others (mode 0777); nothing changed"
if [ "$rc" != 0 ] && grep -qF -- "$want" <<<"$out"; then
    echo "  reload: exit $rc: $(grep -m 1 -F -- "$want" <<<"$out")"
else
    sup_bad "reload with driver-a's binary in a 0777 directory: exit $rc, expected the line \"$want\": $out"
fi
sup_status && [ "${SUP_PIDS[driver-a]}" = "$pid0" ] || sup_bad "the refused reload touched driver-a"
sup_stop TERM 10
sup_verdict sup_exec_trust
