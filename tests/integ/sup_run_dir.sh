#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_run_dir.sh: the control socket's run_dir must be the
# supervisor's alone (supervisor/ctl.c). `up` refuses, with exit 100 and a
# message naming the directory and what is wrong, a run_dir that is
#   - owned by another user (nobody could replace the socket and answer
#     root's requests),
#   - writable by group or others,
#   - a symbolic link (even to a good directory);
# and it creates a missing one 0700 and runs. The path is walked from "/"
# and opened once (issue 44, attack 5; supervisor/rundir.c):
#   - a symbolic link above run_dir is refused, the message naming it;
#   - a directory above run_dir owned by another user (nobody) is refused,
#     the message naming it and its owner (its owner could swap run_dir for
#     a link to a root-owned directory after `up`);
#   - one writable by others is refused; /tmp's kind (root's, sticky) is not;
#   - after `up`, run_dir is renamed and a link to a root-owned directory
#     ("victim", holding files named state and control.sock) put in its
#     place: a driver's restart (which writes the state file), `route save`
#     and the shutdown all act in the directory the supervisor opened, and
#     nothing in the victim is written, replaced or deleted.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_run_dir

sup_netns
NS=$SUP_NS
sup_manifest "$SUP_T/m.ini"

# up_refused DIR WANT: `up` with run_dir = DIR exits 100 at once, saying WANT.
up_refused() {
    local dir=$1 want=$2 log=$SUP_T/log.refused rc
    sed "s|^run_dir = .*|run_dir = $dir|" "$SUP_T/m.ini" >"$SUP_T/m2.ini"
    : >"$log"
    timeout 5 ip netns exec "$NS" "$RR" up -c "$SUP_T/m2.ini" 2>"$log"
    rc=$?
    [ "$rc" = 100 ] || sup_bad "run_dir $dir: up exited $rc, expected 100"
    grep -qxF "ringrouter: setup: $want" "$log" || sup_bad "run_dir $dir: expected \"ringrouter: setup: $want\", got: $(grep -v census "$log" | tail -n 3)"
    [ ! -e "$dir/control.sock" ] || sup_bad "run_dir $dir: a control.sock was made there"
    echo "run_dir $dir: exit $rc: $want"
}

nobody=$(id -u nobody)
mkdir "$SUP_T/theirs"
chown nobody "$SUP_T/theirs"
chmod 0700 "$SUP_T/theirs"
up_refused "$SUP_T/theirs" "run_dir $SUP_T/theirs: owned by uid $nobody, not by this supervisor (uid 0)"

mkdir "$SUP_T/open"
chmod 0777 "$SUP_T/open"
up_refused "$SUP_T/open" "run_dir $SUP_T/open: mode 0777 lets others write to it (at most 0755)"

mkdir -m 0700 "$SUP_T/real"
ln -s "$SUP_T/real" "$SUP_T/link"
up_refused "$SUP_T/link" "run_dir $SUP_T/link: a symbolic link; it must be a directory of its own"

# A missing run_dir is made 0700 and used.
sup_start "$NS" "$SUP_T/m.ini"
# The default control_group, ringrouter, if the machine has it, may search
# run_dir and use the socket (sup_group.sh).
dwant=700 swant=600
getent group ringrouter >/dev/null && dwant=710 swant=660
[ "$(stat -c %a "$SUP_T/run")" = $dwant ] || sup_bad "run_dir was made with mode $(stat -c %a "$SUP_T/run"), expected $dwant"
[ "$(stat -c %a "$SUP_SOCK")" = $swant ] || sup_bad "the socket has mode $(stat -c %a "$SUP_SOCK"), expected $swant"
sup_stop TERM 10
[ "$SUP_RC" = 0 ] || sup_bad "the supervisor exited with status $SUP_RC after SIGTERM"

# The path from "/".
mkdir -m 0755 "$SUP_T/real2"
ln -s real2 "$SUP_T/link2"
up_refused "$SUP_T/link2/run" \
    "run_dir $SUP_T/link2/run: $SUP_T/link2 is a symbolic link; every directory on the path must be a real one"
[ ! -e "$SUP_T/real2/run" ] || sup_bad "run_dir was made through the link"

mkdir -m 0755 "$SUP_T/theirs2"
chown nobody "$SUP_T/theirs2"
up_refused "$SUP_T/theirs2/run" "run_dir $SUP_T/theirs2/run: $SUP_T/theirs2: owned by uid $nobody: every directory above it must be root's or this supervisor's (uid 0)"

mkdir -m 0775 "$SUP_T/grp"
up_refused "$SUP_T/grp/run" "run_dir $SUP_T/grp/run: $SUP_T/grp: mode 0775 lets others write to it (at most 0755, or root's and sticky as /tmp)"

# Root's sticky directory, as /tmp: accepted (the tests' own run_dir is under /tmp).
mkdir -m 1777 "$SUP_T/sticky"
sed "s|^run_dir = .*|run_dir = $SUP_T/sticky/run|" "$SUP_T/m.ini" >"$SUP_T/m3.ini"
SUP_SOCK=$SUP_T/sticky/run/control.sock
sup_start "$NS" "$SUP_T/m3.ini"
sup_stop TERM 10
[ "$SUP_RC" = 0 ] || sup_bad "run_dir under a sticky directory of root's: exit $SUP_RC"

# The swap after `up`, done here by root in a root-owned parent: what the
# owner of a parent could do before the walk refused such a parent.
mkdir -m 0755 "$SUP_T/p" "$SUP_T/victim"
echo precious >"$SUP_T/victim/state"
echo precious >"$SUP_T/victim/control.sock"
sed "s|^run_dir = .*|run_dir = $SUP_T/p/run|" "$SUP_T/m.ini" >"$SUP_T/m4.ini"
SUP_SOCK=$SUP_T/p/run/control.sock
sup_start "$NS" "$SUP_T/m4.ini"
sup_status
mv "$SUP_T/p/run" "$SUP_T/p/run.moved"
ln -s "$SUP_T/victim" "$SUP_T/p/run"
SUP_SOCK=$SUP_T/p/run.moved/control.sock
old=${SUP_PIDS[driver-a]}
rm -f "$SUP_T/p/run.moved/state"
kill -KILL "$old"
sup_wait 5 eval 'sup_status && [ "${SUP_STATE[driver-a]}" = up ] && [ "${SUP_PIDS[driver-a]}" != "$old" ]' ||
    sup_bad "driver-a was not restarted after kill -9"
sup_wait 3 test -s "$SUP_T/p/run.moved/state" ||
    sup_bad "the state file was not written in the directory the supervisor opened (now run.moved)"
out=$("$RR" route add 10.78.0.0/24 via 10.91.0.2 -S "$SUP_SOCK" 2>&1) || sup_bad "route add: $out"
out=$("$RR" route save -S "$SUP_SOCK" 2>&1) || sup_bad "route save: $out"
[ -s "$SUP_T/p/run.moved/routes" ] || sup_bad "route save did not write run.moved/routes"
sup_stop TERM 10
[ "$SUP_RC" = 0 ] || sup_bad "the supervisor exited with status $SUP_RC"
for f in state control.sock; do
    [ "$(cat "$SUP_T/victim/$f" 2>/dev/null)" = precious ] || sup_bad "victim/$f was replaced or deleted"
done
extra=$(ls "$SUP_T/victim" | grep -vxE 'state|control.sock')
[ -z "$extra" ] || sup_bad "the supervisor wrote into the victim: $extra"
[ ! -e "$SUP_T/p/run.moved/control.sock" ] && [ ! -e "$SUP_T/p/run.moved/state" ] ||
    sup_bad "the shutdown did not remove its socket and state file from the directory it opened"
echo "swap after up: state file, routes and shutdown all in the directory opened at up; the victim untouched"
sup_verdict sup_run_dir
