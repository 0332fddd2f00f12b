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
#   - SIGHUP stops it as SIGTERM does (docs/supervisor.md, "Shutdown"):
#     "Hangup: stopping every service", each service "stopped (exited with
#     status 0)", a clean census, "down", exit 0, no service left.
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
pool=$(RINGROUTER_SOCKET=$SOCK "$RR" stats --json | "$SUP_PY" -c 'import json, sys; p = json.load(sys.stdin)["pool"]; print(p["buffers"], p["frame_size"])')
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

# ---- SIGHUP ----
sup_status || sup_fail "status"
pids="${SUP_PIDS[router]} ${SUP_PIDS[driver-a]} ${SUP_PIDS[driver-b]}"
sup_stop HUP 10
[ "$SUP_RC" = 0 ] || sup_bad "SIGHUP: exit status $SUP_RC, expected 0"
sup_log_line 'ringrouter: Hangup: stopping every service' || sup_bad "SIGHUP: no \"Hangup: stopping every service\" line"
for s in "${SUP_SERVICES[@]}"; do
    sup_log_line "ringrouter: $s: stopped (exited with status 0)" || sup_bad "SIGHUP: no \"$s: stopped (exited with status 0)\" line"
done
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "SIGHUP: $out"
sup_log_line 'ringrouter: down' || sup_bad "SIGHUP: no \"down\" line"
for p in $pids; do
    sup_alive "$p" && sup_bad "SIGHUP: service pid $p is still there"
done
echo "SIGHUP: exit $SUP_RC, every service stopped with status 0, census clean"
sup_verdict sup_cli
