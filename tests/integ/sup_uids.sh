#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_uids.sh: no service can touch another (issue 16, "a uid
# per service"; docs/supervisor.md "How it starts a service"). With the
# default manifest (no [router] user, no uids), from inside each service's
# uid -- as each running service and each parked standby in turn, with that
# process's own uid and gid and no groups (setpriv) -- every process of every
# OTHER service refuses, with EPERM:
#   kill -0, kill -STOP, prlimit (even to read a limit), ptrace attach;
# and so does the supervisor (kill -0). The same probe on the service's own
# standby (or running instance) is let through (kill -0): the probe did run
# as that uid, and the EPERMs are the uids' doing. From the supervisor's
# uid (root) kill -0 of every service works, and a kill -STOP
# stops driver-a (then SIGCONT resumes it).
# Then with [router] user = nobody, the old and weaker way (every service
# one uid): the same probe's kill -0 and prlimit of another service are let
# through. That is what this test finds on a supervisor without a uid per
# service, whose default was one shared user: it fails there.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_uids
command -v setpriv >/dev/null || sup_skip "needs setpriv (util-linux)"
[ -x "$SUP_PY" ] || sup_skip "needs $SUP_PY"
sup_netns
NS=$SUP_NS

# probe UID GID WHAT PID...: as UID and GID (no groups), try each of WHAT
# (comma list of kill0, stop, prlimit, ptrace) on each PID; one line per
# PID: "PID kill0=ok stop=EPERM ...".
probe() {
    local uid=$1 gid=$2 what=$3
    shift 3
    setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$SUP_PY" -c '
import ctypes, errno, os, resource, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH, PTRACE_DETACH = 16, 17
for q in map(int, sys.argv[2:]):
    res = []
    for what in sys.argv[1].split(","):
        try:
            if what == "kill0":
                os.kill(q, 0)
            elif what == "stop":
                os.kill(q, signal.SIGSTOP)
            elif what == "prlimit":
                resource.prlimit(q, resource.RLIMIT_NOFILE)
            elif what == "ptrace":
                if libc.ptrace(PTRACE_ATTACH, q, None, None) != 0:
                    e = ctypes.get_errno()
                    raise OSError(e, os.strerror(e))
                os.waitpid(q, 0x40000000)  # __WALL
                libc.ptrace(PTRACE_DETACH, q, None, None)
            res.append(what + "=ok")
        except OSError as e:
            res.append(what + "=" + errno.errorcode.get(e.errno, str(e.errno)))
    print(q, " ".join(res))
' "$what" "$@"
}

uid_of() { awk '$1 == "Uid:" { print $2 }' "/proc/$1/status"; }
gid_of() { awk '$1 == "Gid:" { print $2 }' "/proc/$1/status"; }

# Every service and its parked standby: PROC[pid]=service.
declare -A PROC
collect() {
    sup_wait 5 eval 'sup_status && [[ "${SUP_STANDBY[router]}${SUP_STANDBY[driver-a]}${SUP_STANDBY[driver-b]}" != *[-*]* ]]' ||
        sup_fail "not every service has a parked standby within 5 s"
    PROC=()
    local s
    for s in "${SUP_SERVICES[@]}"; do
        PROC[${SUP_PIDS[$s]}]=$s
        PROC[${SUP_STANDBY[$s]}]=$s
    done
}

# ---- each service its own uid (the default) ----
sup_manifest "$SUP_T/m.ini" router.hang_ms=3000 driver-a.hang_ms=3000 driver-b.hang_ms=3000
sup_start "$NS" "$SUP_T/m.ini"
collect
n=0
for p in "${!PROC[@]}"; do
    s=${PROC[$p]} u=$(uid_of "$p") g=$(gid_of "$p")
    [ -n "$u" ] && [ "$u" != 0 ] && [ -n "$g" ] || sup_fail "$s pid $p: uid \"$u\" gid \"$g\""
    mine=() others=()
    for q in "${!PROC[@]}"; do
        [ "$q" = "$p" ] && continue
        if [ "${PROC[$q]:-?}" = "$s" ]; then mine+=("$q"); else others+=("$q"); fi
    done
    [ ${#others[@]} = 4 ] && [ ${#mine[@]} = 1 ] || sup_fail "$s pid $p: ${#others[@]} processes of other services, ${#mine[@]} of its own"
    while read -r q res; do
        if [ "$res" != "kill0=EPERM stop=EPERM prlimit=EPERM ptrace=EPERM" ]; then
            sup_bad "$s (pid $p, uid $u) on ${PROC[$q]:-?} (pid $q): $res, expected EPERM for each"
            [[ $res != *stop=ok* ]] || kill -CONT "$q"
        fi
        n=$((n + 1))
    done < <(probe "$u" "$g" kill0,stop,prlimit,ptrace "${others[@]}")
    res=$(probe "$u" "$g" kill0 "$SUP_PID")
    [ "$res" = "$SUP_PID kill0=EPERM" ] || sup_bad "$s (uid $u) on the supervisor: $res, expected EPERM"
    res=$(probe "$u" "$g" kill0 "${mine[0]}")
    [ "$res" = "${mine[0]} kill0=ok" ] || sup_bad "$s (pid $p, uid $u) on its own other instance ${mine[0]}: $res, expected ok"
done
[ "$n" = 24 ] || sup_bad "$n probes of another service's process, expected 6 x 4"
echo "own uids: from each of 6 processes (3 services, 3 standbys), kill -0, kill -STOP, prlimit and ptrace of each of the 4 processes of the other services: EPERM; kill -0 of the supervisor: EPERM; kill -0 of its own other instance: ok"

# The supervisor's uid can: kill -0 everyone, stop and resume one. (Not
# prlimit: root may lack CAP_SYS_RESOURCE, as in some containers, and the
# supervisor has no use for it.)
for q in "${!PROC[@]}"; do
    kill -0 "$q" || sup_bad "root: kill -0 ${PROC[$q]} (pid $q) failed"
done
a=${SUP_PIDS[driver-a]}
kill -STOP "$a" || sup_bad "root: kill -STOP driver-a (pid $a) failed"
stopped() { [ "$(awk '{ print $3 }' "/proc/$a/stat" 2>/dev/null)" = T ]; }
sup_wait 2 stopped || sup_bad "root: driver-a (pid $a) did not stop"
kill -CONT "$a" || sup_bad "root: kill -CONT driver-a (pid $a) failed"
sup_wait 2 eval '! stopped' || sup_bad "root: driver-a (pid $a) did not resume"
sup_all_up && [ "${SUP_PIDS[driver-a]}" = "$a" ] || sup_bad "driver-a is not the same pid $a, up, after the stop and resume"
echo "root: kill -0 of each of the 6 processes, kill -STOP and -CONT of driver-a: ok"
sup_stop TERM 10
sup_census_ok "own uids"

# ---- one shared user: the weaker way ----
id -u nobody >/dev/null 2>&1 || sup_skip "needs user nobody for the shared-user round"
SUP_ROUTER_KEYS='user = nobody'
sup_manifest "$SUP_T/m.ini" router.hang_ms=3000 driver-a.hang_ms=3000 driver-b.hang_ms=3000
: >"$SUP_LOG"
sup_start "$NS" "$SUP_T/m.ini"
collect
r=${SUP_PIDS[router]}
nobody=$(id -u nobody)
[ "$(uid_of "$r")" = "$nobody" ] || sup_bad "user = nobody: the router runs as uid $(uid_of "$r")"
others=("${SUP_PIDS[driver-a]}" "${SUP_PIDS[driver-b]}" "${SUP_STANDBY[driver-a]}" "${SUP_STANDBY[driver-b]}")
while read -r q res; do
    [ "$res" = "kill0=ok prlimit=ok" ] ||
        sup_bad "user = nobody: the router's uid on ${PROC[$q]:-?} (pid $q): $res, expected ok (one shared uid)"
done < <(probe "$nobody" "$(gid_of "$r")" kill0,prlimit "${others[@]}")
echo "user = nobody: from the router's uid, kill -0 and prlimit of the 4 processes of the drivers: let through (a shared uid)"
sup_stop TERM 10
sup_census_ok "user = nobody"
sup_verdict sup_uids
