#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_user.sh: [router] user and group (docs/manifest.md,
# docs/supervisor.md "How it starts a service"). Every service process and
# every standby (/proc/PID/status) runs with exactly the uid and gid asked:
# real, effective, saved and filesystem ids, and no supplementary groups.
#   - user = nobody, group = users: uid 65534, gid 100 (not nobody's own);
#   - user = nobody, no group: gid = nobody's primary group;
#   - user = and group = empty: the default, "ringrouter" if that user
#     exists, else nobody, with its primary group.
# Refused, with exit 100 and nothing created (only lo in the namespace):
#   - an unknown user or group (check and up): FILE:LINE: [router] user: no
#     such user "NAME" / [router] group: no such group "NAME";
#   - a name that cannot be one: [router] user: "Bad!" is not a user or
#     group name;
#   - user = root (up): "setup: FILE: [router] user: services must not run
#     as root".
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_user

sup_netns
NS=$SUP_NS
ids() { # ids PID: "uid=R E S F gid=R E S F groups=..."
    awk '$1 == "Uid:" { u = $2 " " $3 " " $4 " " $5 } $1 == "Gid:" { g = $2 " " $3 " " $4 " " $5 }
         $1 == "Groups:" { $1 = ""; gr = substr($0, 2) } END { print "uid=" u " gid=" g " groups=" gr }' "/proc/$1/status"
}

round() { # round USER GROUP WANT_UID WANT_GID
    local user=$1 group=$2 uid=$3 gid=$4 s p n=0
    SUP_ROUTER_KEYS=$(printf 'user = %s\ngroup = %s' "$user" "$group")
    sup_manifest "$SUP_T/m.ini" router.hang_ms=3000 driver-a.hang_ms=3000 driver-b.hang_ms=3000
    : >"$SUP_LOG"
    sup_start "$NS" "$SUP_T/m.ini"
    # The standbys too: wait (bounded) until each is forked.
    sup_wait 5 eval 'sup_status && [[ "${SUP_STANDBY[router]}${SUP_STANDBY[driver-a]}${SUP_STANDBY[driver-b]}" != *-* ]]' ||
        sup_bad "user \"$user\" group \"$group\": not every service has a standby"
    local want="uid=$uid $uid $uid $uid gid=$gid $gid $gid $gid groups="
    for s in "${SUP_SERVICES[@]}"; do
        for p in "${SUP_PIDS[$s]}" "${SUP_STANDBY[$s]%\*}"; do
            [ "$p" != - ] || continue
            local got
            got=$(ids "$p") || { sup_bad "$s pid $p: no /proc/$p/status"; continue; }
            [ "$got" = "$want" ] || sup_bad "user \"$user\" group \"$group\": $s pid $p has $got, expected $want"
            n=$((n + 1))
        done
    done
    sup_stop TERM 10
    [ "$SUP_RC" = 0 ] || sup_bad "user \"$user\" group \"$group\": the supervisor exited with status $SUP_RC"
    echo "user \"$user\" group \"$group\": $n processes (services and standbys) run as uid $uid gid $gid, no supplementary groups"
}

id -u nobody >/dev/null 2>&1 || sup_skip "needs user nobody"
getent group users >/dev/null || sup_skip "needs group users"
nobody_uid=$(id -u nobody) nobody_gid=$(id -g nobody) users_gid=$(getent group users | cut -d: -f3)
[ "$users_gid" != "$nobody_gid" ] || sup_skip "group users is nobody's primary group"
round nobody users "$nobody_uid" "$users_gid"
round nobody "" "$nobody_uid" "$nobody_gid"
if id -u ringrouter >/dev/null 2>&1; then def=ringrouter; else def=nobody; fi
round "" "" "$(id -u "$def")" "$(id -g "$def")"
echo "  (the default user is $def)"

# ---- refused names ----
refused() { # refused USER GROUP WANT_ERR: check and up both exit 100 with WANT_ERR
    SUP_ROUTER_KEYS=$(printf 'user = %s\ngroup = %s' "$1" "$2")
    sup_manifest "$SUP_T/bad.ini"
    local want=$3 err rc
    err=$("$RR" check -c "$SUP_T/bad.ini" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" = 100 ] && [ "$err" = "$want" ] || sup_bad "check, user \"$1\" group \"$2\": exit $rc, \"$err\", expected 100, \"$want\""
    err=$(ip netns exec "$NS" "$RR" up -c "$SUP_T/bad.ini" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" = 100 ] && [ "$err" = "$want" ] || sup_bad "up, user \"$1\" group \"$2\": exit $rc, \"$err\", expected 100, \"$want\""
    [ "$(ip -n "$NS" -o link show | wc -l)" = 1 ] || sup_bad "up, user \"$1\" group \"$2\" left links in $NS"
    echo "user \"$1\" group \"$2\": check and up exit 100: $err"
}
B=$SUP_T/bad.ini
# user is line 5, group line 6 of sup_manifest's [router]
refused "rrt-nosuch-$$" "" "$B:5: [router] user: no such user \"rrt-nosuch-$$\""
refused nobody "rrt-nosuch-$$" "$B:6: [router] group: no such group \"rrt-nosuch-$$\""
refused 'Bad!' "" "$B:5: [router] user: \"Bad!\" is not a user or group name"
refused nobody 'Bad!' "$B:6: [router] group: \"Bad!\" is not a user or group name"
SUP_ROUTER_KEYS='user = root'
sup_manifest "$B"
err=$(ip netns exec "$NS" "$RR" up -c "$B" 2>&1 >/dev/null)
rc=$?
[ "$rc" = 100 ] && [ "$err" = "ringrouter: setup: $B: [router] user: services must not run as root" ] ||
    sup_bad "up, user root: exit $rc, \"$err\""
[ "$(ip -n "$NS" -o link show | wc -l)" = 1 ] || sup_bad "up, user root left links in $NS"
echo "user root: up exits $rc: $err"
sup_verdict sup_user
