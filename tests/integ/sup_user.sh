#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_user.sh: who the services run as: [router] uids, user and
# group (docs/manifest.md, docs/supervisor.md "How it starts a service").
# Every service process and every standby (/proc/PID/status) runs with
# exactly the uid and gid asked: real, effective, saved and filesystem ids,
# and no supplementary groups.
#   - the default (neither user nor uids): each service its own uid from
#     1900000000 on, in the service table's order (router, driver-a,
#     driver-b), its gid the same number; a standby has its service's uid;
#     the log says each ("SVC: runs as uid U, gid U, its own") and so does
#     status --json (uid, gid);
#   - uids = F-(F+2), exactly one per service: F, F+1, F+2;
#   - user = nobody, group = users: every service uid 65534, gid 100 (not
#     nobody's own), and the log says that they share it;
#   - user = nobody, no group: gid = nobody's primary group.
# Refused by check and up, with exit 100 and nothing created (only lo in the
# namespace): an unknown user or group (FILE:LINE: [router] user: no such
# user "NAME" / [router] group: no such group "NAME"); a name that cannot be
# one ("Bad!" is not a user or group name); uids that cannot hold every
# service, both user and uids, uids with uid 0 or 65534, group without user
# (FILE:LINE: [router] uids|user|group: ...).
# Refused by up only (check, which does not look at the machine, says ok):
# uids with a uid that is a passwd user here (daemon's) or a gid that is a
# group here, naming it; the default range where a user namespace does not
# map it (unshare); a range /etc/subuid delegates (a private /etc in a mount
# namespace); user = root ("services must not run as root").
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_user

sup_netns
NS=$SUP_NS
ids() { # ids PID: "uid=R E S F gid=R E S F groups=..."
    awk '$1 == "Uid:" { u = $2 " " $3 " " $4 " " $5 } $1 == "Gid:" { g = $2 " " $3 " " $4 " " $5 }
         $1 == "Groups:" { $1 = ""; gr = substr($0, 2) } END { print "uid=" u " gid=" g " groups=" gr }' "/proc/$1/status"
}

# round LABEL KEYS UID:GID...: with KEYS in [router], each service of
# $SUP_SERVICES (in order) and its standby run as the UID:GID in its place.
round() {
    local label=$1 s p n=0 i=0
    SUP_ROUTER_KEYS=$2
    shift 2
    declare -A want=()
    for s in "${SUP_SERVICES[@]}"; do
        want[$s]=$1
        shift
    done
    sup_manifest "$SUP_T/m.ini" router.hang_ms=3000 driver-a.hang_ms=3000 driver-b.hang_ms=3000
    : >"$SUP_LOG"
    sup_start "$NS" "$SUP_T/m.ini"
    # The standbys too: wait (bounded) until each is forked.
    sup_wait 5 eval 'sup_status && [[ "${SUP_STANDBY[router]}${SUP_STANDBY[driver-a]}${SUP_STANDBY[driver-b]}" != *-* ]]' ||
        sup_bad "$label: not every service has a standby"
    for s in "${SUP_SERVICES[@]}"; do
        local uid=${want[$s]%:*} gid=${want[$s]#*:}
        local w="uid=$uid $uid $uid $uid gid=$gid $gid $gid $gid groups="
        for p in "${SUP_PIDS[$s]}" "${SUP_STANDBY[$s]%\*}"; do
            [ "$p" != - ] || continue
            local got
            got=$(ids "$p") || { sup_bad "$label: $s pid $p: no /proc/$p/status"; continue; }
            [ "$got" = "$w" ] || sup_bad "$label: $s pid $p has $got, expected $w"
            n=$((n + 1))
        done
        [ "$(sup_svc_json "$s" uid):$(sup_svc_json "$s" gid)" = "$uid:$gid" ] ||
            sup_bad "$label: status --json says $s has uid $(sup_svc_json "$s" uid) gid $(sup_svc_json "$s" gid)"
        i=$((i + 1))
    done
    LAST_LOG=$(cat "$SUP_LOG")
    sup_stop TERM 10
    [ "$SUP_RC" = 0 ] || sup_bad "$label: the supervisor exited with status $SUP_RC"
    echo "$label: $n processes (services and standbys) run as $(for s in "${SUP_SERVICES[@]}"; do printf '%s %s, ' "$s" "${want[$s]}"; done)no supplementary groups"
}

uid_free() { ! getent passwd "$1" >/dev/null && ! getent group "$1" >/dev/null; }

# ---- each service its own uid ----
D=1900000000
for u in $D $((D + 1)) $((D + 2)); do uid_free "$u" || sup_skip "uid $u of the default range is taken on this machine"; done
round "default" "" "$D:$D" "$((D + 1)):$((D + 1))" "$((D + 2)):$((D + 2))"
for s in router:0 driver-a:1 driver-b:2; do
    u=$((D + ${s#*:}))
    grep -qxF "ringrouter: ${s%:*}: runs as uid $u, gid $u, its own" <<<"$LAST_LOG" ||
        sup_bad "default: the log has no line \"ringrouter: ${s%:*}: runs as uid $u, gid $u, its own\""
done
F=1900300000
for u in $F $((F + 1)) $((F + 2)); do uid_free "$u" || sup_skip "uid $u is taken on this machine"; done
round "uids = $F-$((F + 2))" "uids = $F-$((F + 2))" "$F:$F" "$((F + 1)):$((F + 1))" "$((F + 2)):$((F + 2))"

# ---- one shared user ----
id -u nobody >/dev/null 2>&1 || sup_skip "needs user nobody"
getent group users >/dev/null || sup_skip "needs group users"
nobody_uid=$(id -u nobody) nobody_gid=$(id -g nobody) users_gid=$(getent group users | cut -d: -f3)
[ "$users_gid" != "$nobody_gid" ] || sup_skip "group users is nobody's primary group"
round "user = nobody, group = users" "$(printf 'user = nobody\ngroup = users')" \
    "$nobody_uid:$users_gid" "$nobody_uid:$users_gid" "$nobody_uid:$users_gid"
want="ringrouter: every service runs as user nobody (uid $nobody_uid, gid $users_gid): they share a uid, so each can signal the others; [router] uids gives each its own"
grep -qxF "$want" <<<"$LAST_LOG" || sup_bad "user = nobody: the log has no line \"$want\""
round "user = nobody" "user = nobody" "$nobody_uid:$nobody_gid" "$nobody_uid:$nobody_gid" "$nobody_uid:$nobody_gid"

# ---- refused ----
B=$SUP_T/bad.ini
nolinks() { [ "$(ip -n "$NS" -o link show | wc -l)" = 1 ] || sup_bad "$1 left links in $NS"; }
refused() { # refused KEYS WANT_ERR: check and up both exit 100 with WANT_ERR
    SUP_ROUTER_KEYS=$(printf '%b' "$1")
    sup_manifest "$B"
    local want=$2 err rc
    err=$("$RR" check -c "$B" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" = 100 ] && [ "$err" = "$want" ] || sup_bad "check, [router] $1: exit $rc, \"$err\", expected 100, \"$want\""
    err=$(ip netns exec "$NS" "$RR" up -c "$B" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" = 100 ] && [ "$err" = "$want" ] || sup_bad "up, [router] $1: exit $rc, \"$err\", expected 100, \"$want\""
    nolinks "up, [router] $1"
    echo "[router] $1: check and up exit 100: $err"
}
# [router] keys start on line 5 of sup_manifest's manifest
refused "user = rrt-nosuch-$$" "$B:5: [router] user: no such user \"rrt-nosuch-$$\""
refused "user = nobody\ngroup = rrt-nosuch-$$" "$B:6: [router] group: no such group \"rrt-nosuch-$$\""
refused 'user = Bad!' "$B:5: [router] user: \"Bad!\" is not a user or group name"
refused 'user = nobody\ngroup = Bad!' "$B:6: [router] group: \"Bad!\" is not a user or group name"
refused "uids = $F-$((F + 1))" "$B:5: [router] uids: $F-$((F + 1)) holds 2 uids, and the manifest has 3 services: each needs its own"
refused "user = nobody\nuids = $F-$((F + 9))" \
    "$B:6: [router] uids: give either user (every service runs as that one user) or uids (each service its own uid), not both"
refused "uids = 0-9" "$B:5: [router] uids: 0-9 includes uid 0, root"
refused "uids = 65530-65540" "$B:5: [router] uids: 65530-65540 includes uid 65534, nobody: the kernel's overflow uid"
refused "group = users" "$B:5: [router] group: only with user: without it, each service runs with its own uid as its gid"

# Refused by up, not by check: what depends on the machine.
up_refused() { # up_refused LABEL KEYS WANT_ERR RUNNER...: check says ok, up (through RUNNER) exits 100
    local label=$1 want=$3 err rc
    SUP_ROUTER_KEYS=$(printf '%b' "$2")
    shift 3
    sup_manifest "$B"
    err=$("$RR" check -c "$B" 2>&1)
    rc=$?
    [ "$rc" = 0 ] || sup_bad "check, $label: exit $rc, \"$err\", expected 0"
    err=$(timeout 10 "$@" "$RR" up -c "$B" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" = 100 ] && [ "$err" = "$want" ] || sup_bad "up, $label: exit $rc, \"$err\", expected 100, \"$want\""
    nolinks "up, $label"
    echo "$label: check ok, up exits 100: $err"
}
# The first passwd user (getpwent's order) with a uid in LO..HI.
first_user() { getent passwd | awk -F: -v lo="$1" -v hi="$2" '$3 >= lo && $3 <= hi { print $3 " " $1; exit }'; }
first_group() { getent group | awk -F: -v lo="$1" -v hi="$2" '$3 >= lo && $3 <= hi { print $3 " " $1; exit }'; }
d=$(id -u daemon 2>/dev/null) || sup_skip "needs user daemon"
read -r u name <<<"$(first_user "$d" $((d + 2)))"
up_refused "uids = $d-$((d + 2)), daemon's uid" "uids = $d-$((d + 2))" \
    "ringrouter: setup: $B:5: [router] uids: uid $u is user \"$name\" (passwd); the services' uids must be no one else's" \
    ip netns exec "$NS"
# A group whose gid no user has as uid (users' 100 is messagebus' uid here).
g=
while IFS=: read -r _ _ gid _; do
    [ "$gid" -gt 0 ] && [ "$gid" -lt 65000 ] && [ -z "$(first_user "$gid" $((gid + 2)))" ] && { g=$gid; break; }
done < <(getent group)
if [ -n "$g" ]; then
    read -r u name <<<"$(first_group "$g" $((g + 2)))"
    up_refused "uids = $g-$((g + 2)), a group's gid" "uids = $g-$((g + 2))" \
        "ringrouter: setup: $B:5: [router] uids: gid $u is group \"$name\"; the services' gids (their uids) must be no one else's" \
        ip netns exec "$NS"
else
    echo "(no group whose gid no user has: the group refusal is not tried)"
fi
# A user namespace that maps only root: setuid to a service's uid would fail.
if unshare --user --map-root-user true 2>/dev/null; then
    up_refused "the default uids in a user namespace that maps only root" "" \
        "ringrouter: setup: $B: [router] uids 1900000000-1900065535, the default: uid 1900000000 is not mapped in this user namespace (/proc/self/uid_map)" \
        unshare --user --map-root-user
else
    echo "(no user namespace here: the unmapped refusal is not tried)"
fi
# /etc/subuid gives part of the range to someone's user namespaces: in a
# mount namespace of its own, the test's copy of /etc has one that does.
mkdir -p "$SUP_T/etc"
for f in passwd group nsswitch.conf ld.so.cache; do
    [ -e "/etc/$f" ] && cp "/etc/$f" "$SUP_T/etc/"
done
echo "rrt-someone:$((F + 5)):65536" >"$SUP_T/etc/subuid"
: >"$SUP_T/etc/subgid"
cat >"$SUP_T/private-etc" <<EOF
#!/bin/sh
mount --bind "$SUP_T/etc" /etc && exec "\$@"
EOF
chmod 755 "$SUP_T/private-etc"
if unshare --mount --propagation private true 2>/dev/null; then
    up_refused "uids = $F-$((F + 9)), part of it in /etc/subuid" "uids = $F-$((F + 9))" \
        "ringrouter: setup: $B:5: [router] uids: /etc/subuid line 1 gives $((F + 5))-$((F + 5 + 65535)) to the user namespaces of \"rrt-someone\"" \
        unshare --mount --propagation private "$SUP_T/private-etc" ip netns exec "$NS"
else
    echo "(no mount namespace here: the /etc/subuid refusal is not tried)"
fi

SUP_ROUTER_KEYS='user = root'
sup_manifest "$B"
err=$(ip netns exec "$NS" "$RR" up -c "$B" 2>&1 >/dev/null)
rc=$?
[ "$rc" = 100 ] && [ "$err" = "ringrouter: setup: $B: [router] user: services must not run as root" ] ||
    sup_bad "up, user root: exit $rc, \"$err\""
nolinks "up, user root"
echo "user root: up exits $rc: $err"
sup_verdict sup_user
