#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_privileges.sh: every running service has no capability
# (effective, permitted, bounding, ambient, inheritable), NoNewPrivs, a uid
# and gid other than root, is the supervisor's child, and holds exactly the
# fds supervisor/setup.c gives it (sup_svc_fds, write_config):
#   0, 2 its log pipe (one pipe: 2 writes, 0 keeps it open for adoption,
#   supervisor/svclog.c)   1 /dev/null   3 memfd:cfg-NAME   (4, the readiness pipe,
#   closed once ready)   5 memfd:pool-NAME   6 memfd:stats-NAME
#   7 its own eventfd   8..12 the fds its kind's typed config names
#   (tables/config.h): 8 /dev/net/tun (drivers); 8 memfd:fib-NAME (sealed),
#   9 memfd:fib-NAME-readers, 10 memfd:neigh-NAME, 11 memfd:fib6-NAME and
#   12 memfd:neigh6-NAME (the router); 8 memfd:mbox-NAME (a shaper)
#   13.. its input rings, its output rings, then its consumers' eventfds,
#   then (drivers, the router, a shaper) its capture region, memfd:cap-NAME
#   (ipc/capture.h).
# The shared objects are checked to be the same ones across services (memfd
# inodes, eventfd ids), and the same again after a restart. No service is
# dumpable: another process of its uid cannot open its fds through /proc.
# Each service runs as a uid of its own (the default [router] uids), its gid
# the same number: no two services share a uid, before or after a restart.
# Then again with
# the real services (rr-router, rr-tap, rr-shaper on port b), before and
# after kill -9 of each, and a clean census at the end.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_privileges

sup_netns
NS=$SUP_NS
MANIFEST=$SUP_T/m.ini
sup_manifest "$MANIFEST"
sup_start "$NS" "$MANIFEST"

fails=0
bad() {
    echo "  BAD: $*"
    fails=$((fails + 1))
}

# The fd map a service must hold: "fd target" lines, sorted by fd.
expected_fds() { # expected_fds SVC
    local svc=$1 memfd_suffix=" (deleted)"
    echo "0 pipe"
    echo "1 /dev/null"
    echo "2 pipe"
    echo "3 /memfd:cfg-$svc$memfd_suffix"
    echo "5 /memfd:pool-t1$memfd_suffix"
    echo "6 /memfd:stats-$svc$memfd_suffix"
    echo "7 anon_inode:[eventfd]"
    case $svc in
    router)
        echo "8 /memfd:fib-t1$memfd_suffix"
        echo "9 /memfd:fib-t1-readers$memfd_suffix"
        echo "10 /memfd:neigh-t1$memfd_suffix"
        echo "11 /memfd:fib6-t1$memfd_suffix"
        echo "12 /memfd:neigh6-t1$memfd_suffix"
        # in: rx-a rx-b; out: tx-a tx-b; then driver-a's and driver-b's eventfds
        echo "13 /memfd:rx-a$memfd_suffix"
        echo "14 /memfd:rx-b$memfd_suffix"
        echo "15 /memfd:tx-a$memfd_suffix"
        echo "16 /memfd:tx-b$memfd_suffix"
        echo "17 anon_inode:[eventfd]"
        echo "18 anon_inode:[eventfd]"
        echo "19 /memfd:cap-router$memfd_suffix"
        ;;
    driver-?)
        local p=${svc#driver-}
        echo "8 /dev/net/tun"
        echo "13 /memfd:tx-$p$memfd_suffix"
        echo "14 /memfd:rx-$p$memfd_suffix"
        echo "15 anon_inode:[eventfd]" # the router's
        echo "16 /memfd:cap-$svc$memfd_suffix"
        ;;
    esac
}

# The same for the real services, router, rr-tap drivers and rr-shaper-b on
# port b (REAL=1): the router's second output ring is sh-b, not tx-b; the
# shaper gets sh-b in, tx-b out and driver-b's eventfd.
# Beside what the supervisor gives, a service makes fds of its own (own_fds):
# every one its stop signalfd (ipc_svc_catch_stop), rr-tap also its io_uring,
# each at whichever number was free first, which a standby's start moves.
# Nothing else: no file, socket, device or memfd the supervisor did not give.
expected_fds_real() { # expected_fds_real SVC
    local svc=$1 d=" (deleted)"
    case $svc in
    router)
        expected_fds router | sed "s|^16 /memfd:tx-b$d|16 /memfd:sh-b$d|"
        ;;
    driver-?)
        expected_fds "$svc"
        ;;
    shaper-b)
        expected_fds "$svc"
        echo "8 /memfd:mbox-shaper-b$d"
        echo "13 /memfd:sh-b$d"
        echo "14 /memfd:tx-b$d"
        echo "15 anon_inode:[eventfd]" # driver-b's
        echo "16 /memfd:cap-shaper-b$d"
        ;;
    esac
}

# The fds SVC makes itself, one line each, as readlink names them.
own_fds() { # own_fds SVC
    echo "anon_inode:[signalfd]"
    case ${REAL:-0}:$1 in 1:driver-?) echo "anon_inode:[io_uring]" ;; esac
}

actual_fds() { # actual_fds PID
    local f
    for f in /proc/"$1"/fd/*; do
        echo "${f##*/} $(readlink "$f")"
    done | sed 's/ pipe:\[[0-9]*\]$/ pipe/' | sort -n
}

# Identity of an fd's object: eventfd id, TAP interface, or memfd inode.
fd_id() { # fd_id PID FD
    local id
    id=$(awk '$1 == "eventfd-id:" { print "efd:" $2 } $1 == "iff:" { print "tap:" $2 }' "/proc/$1/fdinfo/$2" 2>/dev/null)
    [ -n "$id" ] && {
        echo "$id"
        return
    }
    echo "ino:$(stat -L -c %i "/proc/$1/fd/$2" 2>/dev/null)"
}

check_service() { # check_service SVC PID
    local svc=$1 pid=$2 k v
    echo "$svc (pid $pid):"
    [ -r "/proc/$pid/status" ] || {
        bad "$svc: /proc/$pid/status is not readable"
        return
    }
    [ "$(readlink "/proc/$pid/fd/0")" = "$(readlink "/proc/$pid/fd/2")" ] ||
        bad "$svc: fds 0 and 2 are not the same log pipe"
    declare -A st=()
    while IFS=$'\t' read -r k v; do
        k=${k%:}
        [ -n "$k" ] && st[$k]=$v
    done <<<"$(cat "/proc/$pid/status")" # one read: bash's read seeks, and the file changes
    for k in CapEff CapPrm CapBnd CapAmb CapInh; do
        [ "${st[$k]:-}" = 0000000000000000 ] || bad "$svc: $k is ${st[$k]:-missing}, expected 0000000000000000"
    done
    [ "${st[NoNewPrivs]:-}" = 1 ] || bad "$svc: NoNewPrivs is ${st[NoNewPrivs]:-missing}, expected 1"
    local uids gids
    read -ra uids <<<"${st[Uid]}"
    read -ra gids <<<"${st[Gid]}"
    for v in "${uids[@]}"; do [ "$v" != 0 ] || bad "$svc: a uid is 0 (Uid: ${st[Uid]})"; done
    for v in "${gids[@]}"; do [ "$v" != 0 ] || bad "$svc: a gid is 0 (Gid: ${st[Gid]})"; done
    [ -z "${st[Groups]// /}" ] || bad "$svc: supplementary groups ${st[Groups]}, expected none"
    [ "${st[PPid]:-}" = "$SUP_PID" ] || bad "$svc: parent is ${st[PPid]:-?}, not the supervisor $SUP_PID"
    # Not dumpable (ipc_svc_open): another process of the same uid can
    # neither open its fds through /proc (the pool at 5) nor read its memory.
    [ "$(stat -c %u "/proc/$pid/fd")" = 0 ] || bad "$svc: /proc/$pid/fd belongs to uid $(stat -c %u "/proc/$pid/fd"), not root: dumpable"
    if setpriv --reuid="${uids[0]}" --regid="${gids[0]}" --clear-groups -- head -c 1 "/proc/$pid/fd/5" >/dev/null 2>&1; then
        bad "$svc: a process of its uid ${uids[0]} opened its pool through /proc/$pid/fd/5"
    fi
    # Ignored signals are inherited across exec; a service should start with
    # default dispositions. Reported, not failed (see the report of issue 3).
    [ "${st[SigIgn]:-}" = 0000000000000000 ] || echo "  note: SigIgn ${st[SigIgn]:-?} (inherited ignored signals)"
    printf '  Uid %s Gid %s CapEff %s CapBnd %s NoNewPrivs %s\n' "${uids[0]}" "${gids[0]}" "${st[CapEff]}" \
        "${st[CapBnd]}" "${st[NoNewPrivs]}"

    local want have
    if [ "${REAL:-0}" = 1 ]; then want=$(expected_fds_real "$svc"); else want=$(expected_fds "$svc"); fi
    have=$(actual_fds "$pid")
    local own n
    while read -r own; do
        n=$(grep -c -F " $own" <<<"$have")
        [ "$n" = 1 ] || bad "$svc: $n fds $own, expected the one it makes itself"
        have=$(grep -v -F " $own" <<<"$have")
    done < <(own_fds "$svc")
    if [ "$want" != "$have" ]; then
        bad "$svc: fds differ from the layout (- expected, + found):"
        diff <(echo "$want") <(echo "$have") | grep '^[<>]' | sed 's/^</    -/; s/^>/    +/'
        checked=1
    else
        echo "  fds: exactly $(echo "$have" | wc -l) as given: $(echo "$have" | awk '{ printf "%s ", $1 }'), and its own"
        checked=1
    fi
}

same() { # same DESC PID1 FD1 PID2 FD2: the same object
    local x y
    x=$(fd_id "$2" "$3")
    y=$(fd_id "$4" "$5")
    [ "$x" = "$y" ] || bad "$1: $x in pid $2 fd $3, $y in pid $4 fd $5"
}

# Every service of $SUP_SERVICES, each running the binary its [service]
# in $MANIFEST names.
check_each() {
    sup_status || sup_fail "status did not answer"
    local s exe u
    declare -A owner=()
    for s in "${SUP_SERVICES[@]}"; do
        u=$(awk '$1 == "Uid:" { print $2 }' "/proc/${SUP_PIDS[$s]}/status")
        u=${u:-unknown}
        [ "$(awk '$1 == "Gid:" { print $2 }' "/proc/${SUP_PIDS[$s]}/status")" = "$u" ] || bad "$s: gid is not its uid $u"
        [ -z "${owner[$u]:-}" ] || bad "$s and ${owner[$u]} share uid $u"
        owner[$u]=$s
        checked=0
        check_service "$s" "${SUP_PIDS[$s]}"
        [ "$checked" = 1 ] || bad "$s: the check did not complete"
        exe=$SUP_T/bin/$(sed -n "/^\[service $s\]/,/^\[/s/^binary = //p" "$MANIFEST")
        [ "$(readlink "/proc/${SUP_PIDS[$s]}/exe")" = "$exe" ] ||
            bad "$s: runs $(readlink "/proc/${SUP_PIDS[$s]}/exe"), not $exe"
    done
}

check_all() {
    check_each
    # The shared objects are the same ones in every service.
    local r=${SUP_PIDS[router]} a=${SUP_PIDS[driver-a]} b=${SUP_PIDS[driver-b]}
    same "the pool" "$r" 5 "$a" 5
    same "the pool" "$r" 5 "$b" 5
    same "ring rx-a" "$r" 13 "$a" 14
    same "ring rx-b" "$r" 14 "$b" 14
    same "ring tx-a" "$r" 15 "$a" 13
    same "ring tx-b" "$r" 16 "$b" 13
    same "driver-a's eventfd" "$r" 17 "$a" 7
    same "driver-b's eventfd" "$r" 18 "$b" 7
    same "the router's eventfd" "$a" 15 "$r" 7
    same "the router's eventfd" "$b" 15 "$r" 7
    [ "$(fd_id "$a" 7)" != "$(fd_id "$b" 7)" ] || bad "driver-a and driver-b share an eventfd"
    [ "$(fd_id "$a" 8)" = tap:rrt-a ] || bad "driver-a's fd 8 is $(fd_id "$a" 8), expected the TAP rrt-a"
    [ "$(fd_id "$b" 8)" = tap:rrt-b ] || bad "driver-b's fd 8 is $(fd_id "$b" 8), expected the TAP rrt-b"
}

check_all
# A restarted instance gets the same, and only the same.
old=${SUP_PIDS[router]}
olda=${SUP_PIDS[driver-a]}
kill -KILL "$old" "$olda"
sup_wait 5 eval 'sup_all_up && [ "${SUP_PIDS[router]}" != "$old" ] && [ "${SUP_PIDS[driver-a]}" != "$olda" ]' ||
    sup_fail "router and driver-a were not back within 5 s of kill -9"
echo "after kill -9 of router and driver-a:"
check_all

sup_stop TERM 10
census=$(t_census_check "$SUP_LOG" "$SUP_RC") || bad "$census"
[ "$fails" -eq 0 ] || sup_fail "$fails problems (above)"
echo "stand-ins: ok"

# Phase 2: the same checks on the real services (rr-router, rr-tap, and an
# rr-shaper on port b), which parse packets from the network and so are the
# ones the checks are for; again after kill -9 of each.
for b in rr-router rr-tap rr-shaper; do
    cp "$RR_BIN_DIR/$b" "$SUP_T/bin/" && chmod 755 "$SUP_T/bin/$b" || sup_fail "cannot copy $RR_BIN_DIR/$b (build with ninja first)"
done
REAL=1
SUP_SERVICES=(router driver-a driver-b shaper-b)
SUP_MANIFEST_EXTRA='[shaper b]\nrate = 100mbit'
SUP_LOG=$SUP_T/log-real
sup_netns
MANIFEST=$SUP_T/real.ini
sup_manifest "$MANIFEST" router.binary=rr-router driver-a.binary=rr-tap driver-b.binary=rr-tap shaper-b.binary=rr-shaper
sup_start "$SUP_NS" "$MANIFEST"
check_all_real() {
    check_each
    local r=${SUP_PIDS[router]} a=${SUP_PIDS[driver-a]} b=${SUP_PIDS[driver-b]} h=${SUP_PIDS[shaper-b]}
    same "the pool" "$r" 5 "$h" 5
    same "the pool" "$r" 5 "$a" 5
    same "ring rx-a" "$r" 13 "$a" 14
    same "ring rx-b" "$r" 14 "$b" 14
    same "ring tx-a" "$r" 15 "$a" 13
    same "ring sh-b" "$r" 16 "$h" 13
    same "ring tx-b" "$h" 14 "$b" 13
    same "driver-a's eventfd" "$r" 17 "$a" 7
    same "shaper-b's eventfd" "$r" 18 "$h" 7
    same "driver-b's eventfd" "$h" 15 "$b" 7
    same "the router's eventfd" "$a" 15 "$r" 7
    same "the router's eventfd" "$b" 15 "$r" 7
    [ "$(fd_id "$a" 8)" = tap:rrt-a ] || bad "driver-a's fd 8 is $(fd_id "$a" 8), expected the TAP rrt-a"
    [ "$(fd_id "$b" 8)" = tap:rrt-b ] || bad "driver-b's fd 8 is $(fd_id "$b" 8), expected the TAP rrt-b"
}
check_all_real
sup_kill_all_wait 5 || sup_fail "the real services were not all back within 5 s of kill -9"
echo "after kill -9 of every real service:"
check_all_real
sup_stop TERM 10
[ "$SUP_RC" = 0 ] || bad "the supervisor (real services) exited with status $SUP_RC after SIGTERM"
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || bad "real services: $out"
[ "$fails" -eq 0 ] || sup_fail "$fails problems (above)"
echo "PASS: sup_privileges"
