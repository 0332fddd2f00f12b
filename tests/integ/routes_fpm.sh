#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/routes_fpm.sh: FRR's FPM (issue 45, item 3). zebra with
# dplane_fpm_nl, and staticd with two static routes, run in the control
# namespace rrt-PID-cp (their own pid files, sockets and vty directory in
# the test's temp dir, ended by PID); the manifest's [routes] has no table,
# only fpm = 127.0.0.1:PORT there.
#   - zebra connects; the static routes (two IPv4, one IPv6) appear in
#     `route show` (origin daemon, in both families) and forward (ping from
#     host A to an address behind host B);
#   - a static route removed with vtysh: withdrawn;
#   - zebra killed (SIGKILL: it withdraws nothing): the routes stay for
#     grace_s, then go;
#   - a client that sends a route, then a frame of another version: the
#     route comes in, the frame is counted (fpm_bad_frames), the connection
#     closed, the route kept for grace_s, then gone.
# Skips (77) without FRR (/usr/lib/frr/zebra).
set -u
. "$(dirname "$0")/../lib/router.sh"
FRR=${RR_FRR_DIR:-/usr/lib/frr}
[ -x "$FRR/zebra" ] && [ -x "$FRR/staticd" ] || rr_skip "needs FRR ($FRR/zebra, staticd)"
rr_init routes_fpm
# zebra's -N makes /var/run/frr/rrtPID: gone at exit, whatever the outcome.
trap 'rc=$?; rm -rf "/var/run/frr/rrt$$"; (exit $rc); rr_cleanup' EXIT
[ -x "$RR_BIN_DIR/rr-routes" ] || rr_fail "$RR_BIN_DIR/rr-routes is missing: build with ninja first"
cp "$RR_BIN_DIR/rr-routes" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-routes" || rr_fail "cannot copy rr-routes"
n=$(($$ % 250 + 1))
PORT=$((27000 + $$ % 1000))
GRACE=3
rr_netns cp
CP=$RR_NS
RR_SERVICES+=(routes)
RR_ADDR6_A=2001:db8:61::1/64 RR_ADDR6_B=2001:db8:62::1/64
rr_topology "$(printf '[routes]\nnetns = %s\nfpm = 127.0.0.1:%s\ngrace_s = %s\n' "$CP" "$PORT" "$GRACE")"
ip -n "$CP" link add rrt$$f type veth peer name rrt$$fp && ip -n "$CP" link set rrt$$f up && ip -n "$CP" link set rrt$$fp up &&
    ip -n "$CP" addr add "$RR_NET_B.254/24" dev rrt$$f &&
    ip -n "$CP" -6 addr add 2001:db8:62::254/64 dev rrt$$f nodad || rr_fail "dummy in $CP"
rr_start
rr_hosts_ipv6 2001:db8:61 2001:db8:62 routes
ip -n "$RR_NS_B" addr add "10.90.$n.1/32" dev lo || rr_fail "addr on B's lo"
ip -n "$RR_NS_B" -6 addr add 2001:db8:90::1/128 dev lo || rr_fail "addr6 on B's lo"

F=$RR_T/frr
mkdir -p "$F" && chmod 777 "$F"
cat >"$F/zebra.conf" <<EOF
fpm address 127.0.0.1 port $PORT
no fpm use-next-hop-groups
EOF
: >"$F/vtysh.conf"
cat >"$F/staticd.conf" <<EOF
ip route 10.90.$n.0/24 $RR_HOST_B
ip route 10.91.$n.0/24 $RR_HOST_B
ipv6 route 2001:db8:90::/64 2001:db8:62::2
EOF
frr() { # frr DAEMON ARGS...: in CP, in the foreground of a background job
    ip netns exec "$CP" "$FRR/$1" -N "rrt$$" -i "$F/$1.pid" -z "$F/zserv.api" --vty_socket "$F" \
        -f "$F/$1.conf" -u frr -g frr "${@:2}" >"$F/$1.log" 2>&1 &
    RR_EXTRA_PIDS+=($!)
    eval "PID_$1=$!"
}
frr zebra -M dplane_fpm_nl
rr_wait 5 test -S "$F/zserv.api" || rr_fail "zebra did not start: $(cat "$F/zebra.log")"
frr staticd
rows() { "$RR" "$@" -S "$RR_SOCK" | tr -s ' '; }
shown() { [ "$(rows route show "$1")" = "PREFIX VIA PORT ORIGIN
$1 $RR_HOST_B b daemon" ]; }
absent() { [ "$(rows route show "$1")" = "PREFIX VIA PORT ORIGIN" ]; }
shown6() { [ "$(rows route show 2001:db8:90::/64)" = "PREFIX VIA PORT ORIGIN
2001:db8:90::/64 2001:db8:62::2 b daemon" ]; }
both() { shown "10.90.$n.0/24" && shown "10.91.$n.0/24" && shown6; }
rr_wait 15 both || rr_fail "zebra's static routes not in the FIB: $(rows route show); $("$RR" routes -S "$RR_SOCK"); zebra: $(tail -5 "$F/zebra.log")"
rr_stats || rr_fail "stats"
[ "$(rr_ctr routes.fpm_connects)" -ge 1 ] || rr_fail "no FPM connection counted"
o=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "10.90.$n.1" 2>&1) && grep -q " 2 received" <<<"$o" || rr_fail "ping through an FPM route: $o"
o=$(rr_in "$RR_NS_A" ping -6 -n -c 2 -i 0.2 -W 2 2001:db8:90::1 2>&1) && grep -q " 2 received" <<<"$o" || rr_fail "ping -6 through an FPM route: $o"
rr_ok "zebra + staticd over FPM: the three static routes in route show (origin daemon, IPv4 and IPv6), pings forwarded"

if command -v vtysh >/dev/null; then
    o=$(ip netns exec "$CP" vtysh --config_dir "$F" --vty_socket "$F" -d staticd -c "conf t" -c "no ip route 10.91.$n.0/24 $RR_HOST_B" 2>&1) ||
        rr_fail "vtysh: no ip route: $o"
    rr_wait 5 absent "10.91.$n.0/24" || rr_fail "a static route removed in FRR is still in the FIB"
    shown "10.90.$n.0/24" || rr_fail "the other static route went too"
    rr_ok "no ip route in vtysh: withdrawn over FPM, the other route stays"
fi

kill -KILL "$PID_zebra" # the daemon dies: nothing is withdrawn, the connection closes
rr_now
t0=$RR_NOW
lost() { [ "$("$RR" routes --json -S "$RR_SOCK" | "$RR_PY" -c 'import json,sys; print(json.load(sys.stdin)["sources_lost"])')" -ge 1 ]; }
rr_wait 5 lost || rr_fail "zebra gone: the source is not counted lost"
gone() { absent "10.90.$n.0/24"; }
rr_wait $((GRACE + 4)) gone || rr_fail "zebra's routes still there $((GRACE + 4)) s after it ended"
rr_now
el=$(((RR_NOW - t0) / 1000))
[ "$el" -ge $((GRACE * 1000 - 500)) ] || rr_fail "zebra's routes went after $el ms, before grace_s"
rr_ok "zebra ended: its routes stayed for grace_s ($GRACE s) and left after $el ms"

# ---- a malformed frame: counted, the connection closed, the routes kept ----
cat >"$RR_T/fpmbad.py" <<'EOF'
import socket, struct, sys
port, gw, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def attr(t, b):
    return struct.pack("=HH", 4 + len(b), t) + b + b"\0" * ((4 - len(b) % 4) % 4)
body = struct.pack("=BBBBBBBBI", socket.AF_INET, 24, 0, 0, 254, 11, 0, 1, 0)
body += attr(1, bytes([10, 92, n, 0])) + attr(5, socket.inet_aton(gw))
msg = struct.pack("=IHHII", 16 + len(body), 24, 0x401, 1, 0) + body
s = socket.create_connection(("127.0.0.1", port))
s.sendall(struct.pack("!BBH", 1, 1, 4 + len(msg)) + msg)
sys.stdin.readline()  # the route is in: now a frame of version 9
s.sendall(struct.pack("!BBH", 9, 1, 4 + len(msg)) + msg)
s.settimeout(5)
print("closed" if s.recv(1) == b"" else "open")
EOF
coproc BAD { ip netns exec "$CP" "$RR_PY" "$RR_T/fpmbad.py" "$PORT" "$RR_HOST_B" "$n" 2>&1; }
RR_EXTRA_PIDS+=("$BAD_PID")
rr_wait 5 shown "10.92.$n.0/24" || rr_fail "a well-formed frame's route is not in the FIB"
echo >&"${BAD[1]}"
read -r -t 10 said <&"${BAD[0]}" || rr_fail "the client of the malformed frame said nothing"
[ "$said" = closed ] || rr_fail "after a malformed frame the connection is $said"
# rr-routes closes the socket inside its pump and publishes its counters
# at the end of the turn: the client can see the close first.
bad_counted() { rr_stats && [ "$(rr_ctr routes.fpm_bad_frames)" = 1 ]; }
rr_wait 3 bad_counted || rr_fail "fpm_bad_frames = $(rr_ctr routes.fpm_bad_frames), expected 1"
shown "10.92.$n.0/24" || rr_fail "a malformed frame withdrew the route at once"
rr_wait $((GRACE + 4)) absent "10.92.$n.0/24" || rr_fail "10.92.$n.0/24 still there after the grace"
rr_ok "a malformed FPM frame: counted, the connection closed, its routes kept for grace_s, then gone"
rr_stop
rr_census_ok
t_pass
