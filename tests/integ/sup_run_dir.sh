#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_run_dir.sh: the control socket's run_dir must be the
# supervisor's alone (supervisor/ctl.c). `up` refuses, with exit 100 and a
# message naming the directory and what is wrong, a run_dir that is
#   - owned by another user (nobody could replace the socket and answer
#     root's requests),
#   - writable by group or others,
#   - a symbolic link (even to a good directory);
# and it creates a missing one 0700 and runs.
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
    timeout 10 ip netns exec "$NS" "$RR" up -c "$SUP_T/m2.ini" 2>"$log"
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

sup_verdict sup_run_dir
