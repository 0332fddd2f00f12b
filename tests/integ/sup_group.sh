#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_group.sh: read-only access to the control socket for the
# members of [router] control_group. With a temporary group G named there:
#  - the socket is mode 0660, group G; run_dir gains G's search bit only;
#  - a uid with G as a supplementary group (no passwd entry: setpriv) may run
#    status, stats, link, route show/get, neigh show, shaper show, check --diff;
#  - it is refused route add, route del, neigh flush, restart, reload, with
#    "... needs root: members of group G may only read", and the FIB is as
#    it was;
#  - the same uid without G cannot connect at all (exit 111, a clear line);
#  - root still may do everything.
# The group is removed on exit.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_group
sup_temp_group rrt-g
G=$SUP_GROUP
GID=$SUP_GID
# Neither root nor a user: a uid below the services' range, in no passwd entry.
U=$((1899000000 + $$ % 100000))

sup_netns
NS=$SUP_NS
SUP_ROUTER_KEYS="control_group = $G"
sup_manifest "$SUP_T/m.ini"
sup_start "$NS" "$SUP_T/m.ini"

mode=$(stat -c '%a %G' "$SUP_SOCK")
[ "$mode" = "660 $G" ] || sup_bad "control socket: mode and group \"$mode\", expected \"660 $G\""
dmode=$(stat -c '%a %G' "$SUP_T/run")
[ "$dmode" = "710 $G" ] || sup_bad "run_dir: mode and group \"$dmode\", expected \"710 $G\""
sup_log_has "ringrouter: control socket $SUP_SOCK: group $G \\(gid $GID\\) may read: .*" ||
    sup_bad "no log line naming the group"

member() { setpriv --reuid="$U" --regid="$U" --groups="$GID" -- "$RR" "$@" -S "$SUP_SOCK"; }
stranger() { setpriv --reuid="$U" --regid="$U" --clear-groups -- "$RR" "$@" -S "$SUP_SOCK"; }

for cmd in "status" "status --json" "stats" "stats --json" "link" "route show" "route show --json" \
    "route get 10.91.0.5" "neigh show" "shaper show" "check --diff"; do
    # shellcheck disable=SC2086
    out=$(member $cmd 2>&1)
    rc=$?
    [ "$rc" = 0 ] || sup_bad "as a member of $G: $cmd: exit $rc: $out"
done
echo "member of $G: status, stats, link, route show/get, neigh show, shaper show, check --diff answered"

before=$("$RR" route show -S "$SUP_SOCK")
refused() { # refused WORDS...: a member is refused WORDS with the read-only message
    local out rc want
    out=$(member "$@" 2>&1)
    rc=$?
    want="ringrouter: $1${2:+ $2} needs root: members of group $G may only read (status, stats, link, route show|get, neigh show, shaper show, check --diff)"
    [ "$rc" = 100 ] && [ "$out" = "$want" ] || sup_bad "as a member: $*: exit $rc, \"$out\", expected 100, \"$want\""
}
refused route add 10.77.0.0/24 via 10.91.0.2
refused route del 10.91.0.0/24
refused neigh flush
refused restart router
refused reload
# capture: packets are root's (docs/security.md, "Packet capture"); no region's fd reaches a member
out=$(member capture a rx -w - 2>&1 >/dev/null)
rc=$?
[ "$rc" = 100 ] && grep -q "capture a needs root: members of group $G may only read" <<<"$out" ||
    sup_bad "as a member: capture a rx: exit $rc, \"$out\""
echo "member of $G: route add: $(member route add 10.77.0.0/24 via 10.91.0.2 2>&1)"
[ "$("$RR" route show -S "$SUP_SOCK")" = "$before" ] || sup_bad "a refused route add changed the FIB"
sup_status && [ "${SUP_RESTARTS[router]}" = 0 ] || sup_bad "a refused restart restarted the router"

out=$(stranger status 2>&1)
rc=$?
[ "$rc" = 111 ] && [[ $out == *"Permission denied: the control socket is root's"* ]] ||
    sup_bad "not a member: status: exit $rc, \"$out\", expected 111 and Permission denied"
echo "not a member: $out"

"$RR" route add 10.77.0.0/24 via 10.91.0.2 -S "$SUP_SOCK" >/dev/null || sup_bad "root: route add refused"
"$RR" route show -S "$SUP_SOCK" | grep -q '^10\.77\.0\.0/24 ' || sup_bad "root: the route is not in route show"

sup_stop TERM 10
sup_census_ok >/dev/null
sup_verdict sup_group
