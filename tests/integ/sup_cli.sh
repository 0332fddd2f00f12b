#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_cli.sh: `ringrouter up` with no -c (the built-in manifest,
# docs/manifest.md), $RINGROUTER_SOCKET, and SIGHUP.
# The built-in manifest names fixed namespaces (rr-demo-a, rr-demo-b) and
# the default run_dir /run/ringrouter, so the supervisor runs in a private
# mount namespace (and network namespace) of its own, with a fresh tmpfs on
# /run: those names are this test's alone and go away with it.
#   - check without -c: "<built-in>: ok";
#   - up without -c: the log line "<built-in>: 3 services, 4 rings, 4096
#     buffers of 32768 bytes; control socket /run/ringrouter/control.sock";
#     router, driver-a, driver-b up; rr-a in rr-demo-a and rr-b in rr-demo-b;
#     route show: 10.1.0.0/24 on a and 10.2.0.0/24 on b; the pool 4096 x
#     32768; and it forwards: 10.1.0.2 in rr-demo-a pings 10.2.0.2 in rr-demo-b;
#   - the CLI finds the supervisor through $RINGROUTER_SOCKET (no -S); -S wins
#     over it; a $RINGROUTER_SOCKET with nothing there: exit 111, "cannot reach
#     the supervisor at PATH"; with neither, the default
#     /run/ringrouter/control.sock (the CLI run inside the mount namespace);
#   - the command line (issue 19, item 5): --version, -V and `version` print
#     "ringrouter VERSION (git DESCRIBE)" naming a commit of this tree, and
#     tools/version.sh outside git writes VERSION alone; unique prefixes
#     (`ro sh` is `route show`, `li a` is `link a`), ambiguous ones refused
#     with both candidates (`st`, `stat`: status, stats; `route s`: show,
#     save), typos answered with "did you mean" (rotue, route shwo, --jsn);
#     `help` (= --help) lists every command, `help CMD` = `CMD --help` =
#     an abbreviation's --help, for each command; options before or after
#     the command (-S, --socket=, --json), -c FILE finds the socket in the
#     manifest's run_dir (over $RINGROUTER_SOCKET; -S over -c); options a
#     command does not take refused by name (`restart router --json`, and
#     the router not restarted; check --json; status --force);
#   - SIGHUP reloads, and with the built-in manifest there is no file to
#     read: "Hangup: reloading <built-in>", the reason logged, every service
#     still up with the same pid; `reload` answers the same reason, exit 100;
#   - SIGTERM then stops it (docs/supervisor.md, "Shutdown"): "Terminated:
#     stopping every service", each service "stopped (exited with status
#     0)", a clean census, "down", exit 0, no service left.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_cli
command -v unshare >/dev/null && command -v nsenter >/dev/null || sup_skip "needs unshare and nsenter (util-linux)"
sup_bins rr-tap rr-router

out=$("$RR" check 2>&1)
rc=$?
[ "$rc" = 0 ] && [ "$out" = "<built-in>: ok" ] || sup_bad "check without -c: exit $rc: $out"

# up, no -c, in its own mount and network namespace with a private /run.
unshare --mount --net --propagation private sh -c '
    mount -t tmpfs -o mode=755 rrt-run /run || exit 111
    for ns in rr-demo-a rr-demo-b; do ip netns add $ns && ip -n $ns link set lo up || exit 111; done
    exec "$0" up' "$RR" 2>>"$SUP_LOG" &
SUP_PID=$!
# Outside, the supervisor's socket is at this path (its root, its mounts).
SOCK=/proc/$SUP_PID/root/run/ringrouter/control.sock
SUP_SOCK=$SOCK
inside() { nsenter -t "$SUP_PID" -m -- "$@"; } # in its mount namespace
env_all_up() {
    RINGROUTER_SOCKET=$SOCK "$RR" status --json 2>/dev/null | "$SUP_PY" -c '
import json, sys
s = json.load(sys.stdin)["services"]
sys.exit(0 if [x["name"] for x in s] == ["router", "driver-a", "driver-b"] and all(x["state"] == "up" for x in s) else 1)' 2>/dev/null
}
sup_wait 10 eval 'env_all_up || ! sup_alive $SUP_PID' || sup_fail "up without -c: not every service up within 10 s"
sup_alive "$SUP_PID" || sup_fail "up without -c: the supervisor exited"
echo "up without -c: router, driver-a, driver-b up (status --json through \$RINGROUTER_SOCKET)"
sup_log_line 'ringrouter: <built-in>: 3 services, 4 rings, 4096 buffers of 32768 bytes; control socket /run/ringrouter/control.sock' ||
    sup_bad "no \"<built-in>: 3 services, 4 rings, 4096 buffers of 32768 bytes; control socket /run/ringrouter/control.sock\" line"
for x in a b; do
    l=$(inside ip -n "rr-demo-$x" -o link show "rr-$x" 2>&1) || sup_bad "no rr-$x in rr-demo-$x: $l"
    grep -q " mtu 1500 " <<<"$l" || sup_bad "rr-$x: $l"
done
routes=$(RINGROUTER_SOCKET=$SOCK "$RR" route show | tr -s ' ')
[ "$routes" = "PREFIX VIA PORT ORIGIN
10.1.0.0/24 - a connected
10.2.0.0/24 - b connected" ] || sup_bad "route show: $routes"
pool=$(RINGROUTER_SOCKET=$SOCK "$RR" stats --json | "$SUP_PY" -c 'import json, sys; p = json.load(sys.stdin)["pool"]; print(p["buffers"], p["frame_size_bytes"])')
[ "$pool" = "4096 32768" ] || sup_bad "the pool is \"$pool\", expected 4096 buffers of 32768 bytes"
# The demo's hosts, and a ping from one namespace to the other through it.
inside sh -c 'ip -n rr-demo-a addr add 10.1.0.2/24 dev rr-a && ip -n rr-demo-a link set rr-a up &&
    ip -n rr-demo-a route add default via 10.1.0.1 && ip -n rr-demo-b addr add 10.2.0.2/24 dev rr-b &&
    ip -n rr-demo-b link set rr-b up && ip -n rr-demo-b route add default via 10.2.0.1' || sup_fail "host setup in rr-demo-a/b"
p=$(inside ip netns exec rr-demo-a ping -n -c 3 -i 0.2 -W 2 10.2.0.2 2>&1)
grep -q " 3 received" <<<"$p" && grep -q "ttl=63" <<<"$p" || sup_bad "ping 10.2.0.2 from rr-demo-a: $p"
echo "built-in manifest: rr-a in rr-demo-a, rr-b in rr-demo-b, 10.1.0.0/24 and 10.2.0.0/24 connected, 4096 x 32768, ping a -> b 3/3"

# ---- where the CLI looks ----
run() { "$@" >"$SUP_T/out" 2>"$SUP_T/err"; rc=$?; out=$(cat "$SUP_T/out"); err=$(cat "$SUP_T/err"); }
run env RINGROUTER_SOCKET="$SOCK" "$RR" status
[ "$rc" = 0 ] && [ "$(head -c 7 <<<"$out")" = SERVICE ] || sup_bad "\$RINGROUTER_SOCKET: status exit $rc: $err"
run env RINGROUTER_SOCKET="$SUP_T/nothing.sock" "$RR" status -S "$SOCK"
[ "$rc" = 0 ] || sup_bad "-S with a wrong \$RINGROUTER_SOCKET: exit $rc: $err (-S should win)"
run env RINGROUTER_SOCKET="$SUP_T/nothing.sock" "$RR" status
[ "$rc" = 111 ] || sup_bad "\$RINGROUTER_SOCKET with nothing there: exit $rc, expected 111"
[[ $err == "ringrouter: cannot reach the supervisor at $SUP_T/nothing.sock: "* ]] ||
    sup_bad "\$RINGROUTER_SOCKET with nothing there said: $err"
run inside env -u RINGROUTER_SOCKET "$RR" status
[ "$rc" = 0 ] && [ "$(head -c 7 <<<"$out")" = SERVICE ] || sup_bad "no -S, no \$RINGROUTER_SOCKET (inside): exit $rc: $err"
echo "\$RINGROUTER_SOCKET found it; -S wins over it; a dead one: exit 111; neither: /run/ringrouter/control.sock"

# ---- the command line ----
expect() { # expect RC STDERR CMD...: exit RC and exactly STDERR, nothing on stdout unless RC is 0
    local want_rc=$1 want_err=$2
    shift 2
    run "$@"
    [ "$rc" = "$want_rc" ] && [ "$err" = "$want_err" ] || {
        sup_bad "${*#"$RR" }: exit $rc, said \"$err\"; expected exit $want_rc, \"$want_err\""
        return 1
    }
}
vre='^ringrouter [0-9]+\.[0-9]+\.[0-9]+( \(git [^ ()]+\))?$'
for form in --version -V version; do
    run "$RR" $form
    [ "$rc" = 0 ] && [[ $out =~ $vre ]] || sup_bad "ringrouter $form: exit $rc, \"$out\""
done
version=$out
if command -v git >/dev/null && git -C "$SUP_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    d=${version#*(git }
    d=${d%)}
    d=${d%-dirty}
    [[ $d == *-g* ]] && d=${d##*-g}
    [[ $version == *"(git "* ]] && git -C "$SUP_ROOT" cat-file -e "$d^{commit}" 2>/dev/null ||
        sup_bad "--version \"$version\" names no commit of $SUP_ROOT"
fi
mkdir -p "$SUP_T/vt/tools" && cp "$SUP_ROOT/tools/version.sh" "$SUP_T/vt/tools/" && cp "$SUP_ROOT/VERSION" "$SUP_T/vt/" ||
    sup_fail "copy tools/version.sh"
sh "$SUP_T/vt/tools/version.sh" "$SUP_T/vt/v.h" && [ "$(cat "$SUP_T/vt/v.h")" = "#define RR_VERSION \"$(cat "$SUP_ROOT/VERSION")\"" ] ||
    sup_bad "tools/version.sh outside git wrote: $(cat "$SUP_T/vt/v.h" 2>&1)"
echo "--version, -V, version: \"$version\"; outside git: \"$(cat "$SUP_ROOT/VERSION")\""

full=$("$RR" route show -S "$SOCK")
run "$RR" ro sh -S "$SOCK"
[ "$rc" = 0 ] && [ "$out" = "$full" ] || sup_bad "ro sh: exit $rc: $out $err"
run "$RR" li a --json -S "$SOCK"
[ "$rc" = 0 ] && [ "$("$SUP_PY" -c 'import json, sys; print([l["name"] for l in json.load(sys.stdin)["links"]])' <<<"$out")" = "['a']" ] ||
    sup_bad "li a --json: exit $rc: $out $err"
expect 100 'ringrouter: "st" is ambiguous: status, stats (see ringrouter --help)' "$RR" st -S "$SOCK"
expect 100 'ringrouter: "stat" is ambiguous: status, stats (see ringrouter --help)' "$RR" stat -S "$SOCK"
expect 100 'ringrouter: route: "s" is ambiguous: show, save (see ringrouter help route)' "$RR" route s -S "$SOCK"
[ "$("$RR" sh --help)" = "$("$RR" help show)" ] && [ "$("$RR" sha --help)" = "$("$RR" help shaper)" ] ||
    sup_bad "sh is not show, or sha not shaper"
expect 100 'ringrouter: unknown command "rotue"; did you mean "route"? (see ringrouter --help)' "$RR" rotue show -S "$SOCK"
expect 100 'ringrouter: unknown route subcommand "shwo"; did you mean "show"? (see ringrouter help route)' "$RR" route shwo -S "$SOCK"
expect 100 'ringrouter: unknown option "--jsn"; did you mean "--json"? (see ringrouter --help)' "$RR" status --jsn -S "$SOCK"
expect 100 'ringrouter: unknown command "frobnicate" (see ringrouter --help)' "$RR" frobnicate
echo "abbreviations: ro sh = route show, li a = link a, sh = show, sha = shaper; st, stat, route s ambiguous (both named); rotue, shwo, --jsn: did you mean"

run "$RR" help
top=$out
[ "$rc" = 0 ] && [ "$top" = "$("$RR" --help)" ] || sup_bad "help: exit $rc, or not the same as --help"
for c in check up status stats link restart route neigh shaper help version; do
    grep -qE "^  $c +[a-z]" <<<"$top" || sup_bad "help does not list $c"
    run "$RR" help "$c"
    [ "$rc" = 0 ] && [ "$(head -n 1 <<<"$out" | cut -d' ' -f1-3)" = "usage: ringrouter $c" ] && [ "$(grep -c '' <<<"$out")" -ge 4 ] ||
        sup_bad "help $c: exit $rc: $out"
    [ "$("$RR" "$c" --help)" = "$out" ] || sup_bad "$c --help is not help $c"
done
[ "$("$RR" ro --help)" = "$("$RR" help route)" ] && [ "$("$RR" help port)" = "$("$RR" help link)" ] ||
    sup_bad "ro --help / help port"
grep -q "replace PREFIX via GATEWAY" <<<"$("$RR" help route)" || sup_bad "help route says nothing of replace"
expect 100 'ringrouter: unknown command "nosuch" (see ringrouter --help)' "$RR" help nosuch
echo "help: every command listed, help CMD = CMD --help for each, and for an abbreviation"

run "$RR" -S "$SOCK" status
[ "$rc" = 0 ] && [ "$(head -c 7 <<<"$out")" = SERVICE ] || sup_bad "-S before the command: exit $rc: $err"
for form in "--json -S $SOCK status" "status --json --socket=$SOCK" "-j status -S $SOCK"; do
    # shellcheck disable=SC2086
    run "$RR" $form
    [ "$rc" = 0 ] && "$SUP_PY" -c 'import json, sys; assert json.load(sys.stdin)["services"]' <<<"$out" ||
        sup_bad "ringrouter $form: exit $rc: $out $err"
done
printf '[router]\nname = demo\nframe_size = 32768\npool_buffers = 4096\n\n[port a]\ndriver = tap\nifname = rr-a\nnetns = rr-demo-a\naddress = 10.1.0.1/24\n\n[port b]\ndriver = tap\nifname = rr-b\nnetns = rr-demo-b\naddress = 10.2.0.1/24\n' >"$SUP_T/demo.ini"
run inside env RINGROUTER_SOCKET=/nonexistent.sock "$RR" -c "$SUP_T/demo.ini" status
[ "$rc" = 0 ] && [ "$(head -c 7 <<<"$out")" = SERVICE ] || sup_bad "-c FILE (run_dir /run/ringrouter) over \$RINGROUTER_SOCKET: exit $rc: $err"
run inside "$RR" status -c "$SUP_T/demo.ini" -S /nonexistent.sock
[ "$rc" = 111 ] || sup_bad "-S over -c: exit $rc, expected 111 (the wrong socket)"
for form in "-c $SUP_T/demo.ini check" "check -c $SUP_T/demo.ini" "check --config=$SUP_T/demo.ini"; do
    # shellcheck disable=SC2086
    run "$RR" $form
    [ "$rc" = 0 ] && [ "$out" = "$SUP_T/demo.ini: ok" ] || sup_bad "ringrouter $form: exit $rc: $out $err"
done
echo "options before or after the command: -S, --socket=, --json, -j; -c finds the socket (over \$RINGROUTER_SOCKET, under -S)"

router_pid=$(RINGROUTER_SOCKET=$SOCK "$RR" status --json | "$SUP_PY" -c 'import json, sys; print([s["pid"] for s in json.load(sys.stdin)["services"] if s["name"] == "router"][0])')
expect 100 'ringrouter: restart: --json is not one of its options (it prints one line)' "$RR" restart router --json -S "$SOCK"
sup_msleep 300
[ "$(RINGROUTER_SOCKET=$SOCK "$RR" status --json | "$SUP_PY" -c 'import json, sys; print([(s["pid"], s["restarts"]) for s in json.load(sys.stdin)["services"] if s["name"] == "router"][0])')" = "($router_pid, 0)" ] ||
    sup_bad "restart router --json was refused, yet the router restarted"
expect 100 'ringrouter check: --json is not one of its options (see ringrouter help check)' "$RR" check --json
expect 100 'ringrouter status: --force is not one of its options (see ringrouter help status)' "$RR" status --force -S "$SOCK"
expect 100 'ringrouter route: --all is not one of its options (see ringrouter help route)' "$RR" route show --all -S "$SOCK"
echo "options a command does not take: refused by name, never ignored (restart router --json: not restarted)"

# ---- SIGHUP reloads; SIGTERM stops ----
sup_status || sup_fail "status"
pids="${SUP_PIDS[router]} ${SUP_PIDS[driver-a]} ${SUP_PIDS[driver-b]}"
nofile='reload: the supervisor runs the built-in manifest (`up` without -c): there is no file to read again'
kill -HUP "$SUP_PID"
sup_wait 5 sup_log_line "ringrouter: $nofile" || sup_bad "SIGHUP: no \"$nofile\" line"
sup_log_line 'ringrouter: Hangup: reloading <built-in>' || sup_bad "SIGHUP: no \"Hangup: reloading <built-in>\" line"
sup_alive "$SUP_PID" || sup_fail "SIGHUP stopped the supervisor"
sup_status || sup_fail "status after SIGHUP"
[ "${SUP_PIDS[router]} ${SUP_PIDS[driver-a]} ${SUP_PIDS[driver-b]}" = "$pids" ] || sup_bad "SIGHUP changed a pid: $pids"
expect 100 "ringrouter: $nofile" "$RR" reload -S "$SOCK"
echo "SIGHUP: reloads, and with the built-in manifest says there is no file; every service kept its pid"
sup_stop TERM 10
[ "$SUP_RC" = 0 ] || sup_bad "SIGTERM: exit status $SUP_RC, expected 0"
sup_log_line 'ringrouter: Terminated: stopping every service' || sup_bad "SIGTERM: no \"Terminated: stopping every service\" line"
for s in "${SUP_SERVICES[@]}"; do
    sup_log_line "ringrouter: $s: stopped (exited with status 0)" || sup_bad "SIGTERM: no \"$s: stopped (exited with status 0)\" line"
done
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "SIGTERM: $out"
sup_log_line 'ringrouter: down' || sup_bad "SIGTERM: no \"down\" line"
for p in $pids; do
    sup_alive "$p" && sup_bad "SIGTERM: service pid $p is still there"
done
echo "SIGTERM: exit $SUP_RC, every service stopped with status 0, census clean"
sup_verdict sup_cli
