#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/metrics.sh: `ringrouter metrics`, `ringrouter exporter` and
# `ringrouter top` against the real router between two TAP ports, with a
# temporary group as [router] control_group:
#  - `promtool check metrics` passes on `ringrouter metrics` and on the
#    exporter's answer (exit 77 at the end, once everything else passed,
#    if promtool is missing);
#  - port and drop counters rise with traffic (20 pings A -> B, 5 with TTL 1);
#  - `ringrouter restart` counts as cause="restart", `inject kill` as
#    "crash", `upgrade` as "upgrade", a service stopped past hang_ms as "hang";
#  - the exporter, started by root with --user nobody:GROUP, runs as that
#    uid with no capability in any set and NoNewPrivs; started by root
#    without --user it refuses (exit 100); GET /other is 404;
#  - it keeps answering while clients stay silent, trickle, send 10 MB, or
#    come 50 at once, or 70 silent ones take more than its 64 slots
#    (tests/lib/metrics_http.py), closes a silent client at
#    its 3 s deadline, counts both, holds at most one
#    connection to the supervisor, and serves ringrouter_supervisor_up 0
#    while the supervisor is gone and 1 once a new one has adopted the
#    services;
#  - `top --once` and `top --once --json` show the ports and services, and
#    as a member of the group; under 400 pings at 100 a second its packet
#    rates on both ports match the stream's within 10 % (timing-bound).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init metrics
rr_need setpriv groupadd groupdel getent
getent passwd nobody >/dev/null || rr_skip "needs the user nobody"
PROMTOOL=$(command -v promtool || true)
G=rrtm$$
groupadd -r "$G" || rr_fail "groupadd $G"
trap 'rc=$?; groupdel "$G" 2>/dev/null; (exit $rc); rr_cleanup' EXIT
GID=$(getent group "$G" | cut -d: -f3)
HTTP="$RR_ROOT/tests/lib/metrics_http.py"
PORT=9423

RR_ROUTER_EXTRA="control_group = $G"
rr_topology
rr_start
rr_ok "up: A $RR_HOST_A -- [driver-a, router, driver-b] -- B $RR_HOST_B; control_group $G"
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"

m() { "$RR" metrics -S "$RR_SOCK"; }
# val FILE SERIES: the value of one series (name and labels exactly), or "".
val() { awk -v s="$2" '$1 == s { print $2 }' "$1"; }
promcheck() { # promcheck FILE WHAT
    [ -n "$PROMTOOL" ] || return 0
    local out
    out=$("$PROMTOOL" check metrics <"$1" 2>&1) || rr_fail "promtool check metrics on $2: $out"
    rr_ok "promtool check metrics: $2 passes"
}

# ---- ringrouter metrics ----
m >"$RR_T/m1" || rr_fail "ringrouter metrics: exit $?"
promcheck "$RR_T/m1" "ringrouter metrics"
for s in 'ringrouter_supervisor_up' 'ringrouter_port_rx_packets_total{port="a"}' 'ringrouter_ring_occupancy{ring="rx-a"}' \
    'ringrouter_service_up{service="router"}' 'ringrouter_service_restarts_total{service="router",cause="crash"}' \
    'ringrouter_drops_total{service="router",reason="ttl_exceeded"}' 'ringrouter_pool_buffers'; do
    [ -n "$(val "$RR_T/m1" "$s")" ] || rr_fail "ringrouter metrics has no $s"
done
awk '/^# TYPE/ { t[$3] = 1 } /^# HELP/ { h[$3] = 1 } /^[a-z]/ { n = $1; sub(/\{.*/, "", n); s[n] = 1 }
    END { for (n in s) if (!t[n] || !h[n]) { print n; bad = 1 } exit bad }' "$RR_T/m1" >"$RR_T/nohelp" ||
    rr_fail "families without HELP or TYPE: $(cat "$RR_T/nohelp")"
rr_ok "ringrouter metrics: $(grep -c '^# TYPE' "$RR_T/m1") families, $(grep -vc '^#' "$RR_T/m1") samples, each family with HELP and TYPE"

# Counters rise with traffic: 20 pings through, 5 that expire in the router.
out=$(rr_in "$RR_NS_A" ping -n -c 20 -i 0.05 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "20 pings A -> B: $out"
rr_in "$RR_NS_A" ping -n -c 5 -i 0.05 -W 1 -t 1 "$RR_HOST_B" >/dev/null 2>&1
risen() {
    m >"$RR_T/m2" || return 1
    local k a b
    for k in 'ringrouter_port_rx_packets_total{port="a"} 20' 'ringrouter_port_tx_packets_total{port="b"} 20' \
        'ringrouter_drops_total{service="router",reason="ttl_exceeded"} 5'; do
        a=$(val "$RR_T/m1" "${k% *}") b=$(val "$RR_T/m2" "${k% *}")
        [ -n "$b" ] && [ $((${b%.*} - ${a:-0})) -ge "${k##* }" ] || return 1
    done
}
rr_wait 5 risen || rr_fail "counters did not rise by the traffic sent: $(grep -E 'port_(rx|tx)_packets|ttl_exceeded' "$RR_T/m2")"
rr_ok "after 20 pings and 5 with TTL 1: $(grep -E 'port_rx_packets_total\{port="a"\}|reason="ttl_exceeded"' "$RR_T/m2" | tr '\n' ' ')"

# Restarts by cause.
"$RR" restart driver-b -S "$RR_SOCK" >/dev/null || rr_fail "restart driver-b"
"$RR" inject driver-a kill -S "$RR_SOCK" >/dev/null || rr_fail "inject driver-a kill"
caused() {
    rr_all_up && m >"$RR_T/m3" &&
        [ "$(val "$RR_T/m3" 'ringrouter_service_restarts_total{service="driver-b",cause="restart"}')" = 1 ] &&
        [ "$(val "$RR_T/m3" 'ringrouter_service_restarts_total{service="driver-a",cause="crash"}')" = 1 ] &&
        [ "$(val "$RR_T/m3" 'ringrouter_service_restarts_total{service="driver-a",cause="restart"}')" = 0 ] &&
        [ "$(val "$RR_T/m3" 'ringrouter_service_restarts_total{service="driver-b",cause="crash"}')" = 0 ]
}
rr_wait 10 caused || rr_fail "restarts by cause: $(grep "^ringrouter_service_restarts_total" "$RR_T/m3" | tr "\n" " ")"
rr_ok "restart driver-b counted as cause=\"restart\", inject driver-a kill as cause=\"crash\""
# An upgrade (to the same binary) and a hang (stopped past hang_ms, 3 s).
out=$("$RR" upgrade driver-b -S "$RR_SOCK" 2>&1) || rr_fail "upgrade driver-b: $out"
"$RR" inject router stop 5000 -S "$RR_SOCK" >/dev/null || rr_fail "inject router stop 5000"
caused2() {
    rr_all_up && m >"$RR_T/m3" &&
        [ "$(val "$RR_T/m3" 'ringrouter_service_restarts_total{service="driver-b",cause="upgrade"}')" = 1 ] &&
        [ "$(val "$RR_T/m3" 'ringrouter_service_restarts_total{service="driver-b",cause="restart"}')" = 1 ] &&
        [ "$(val "$RR_T/m3" 'ringrouter_service_restarts_total{service="router",cause="hang"}')" = 1 ] &&
        [ "$(val "$RR_T/m3" 'ringrouter_service_restarts_total{service="router",cause="crash"}')" = 0 ]
}
rr_wait 15 caused2 || rr_fail "restarts by cause: $(grep "^ringrouter_service_restarts_total" "$RR_T/m3" | tr "\n" " ")"
rr_ok "upgrade driver-b counted as cause=\"upgrade\", a router stopped past hang_ms as cause=\"hang\""

# ---- top ----
out=$("$RR" top --once -S "$RR_SOCK" 2>&1) || rr_fail "top --once: exit $?: $out"
for w in '^a +up ' '^b +up ' '^router +up ' '^driver-a +up ' '^rx-a '; do
    grep -Eq "$w" <<<"$out" || rr_fail "top --once has no line matching /$w/:
$out"
done
rr_ok "top --once: ports a and b, services, rings"
out=$(setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --groups="$GID" -- "$RR" top --once --json -S "$RR_SOCK" 2>&1) ||
    rr_fail "top --once --json as a member of $G: exit $?: $out"
"$RR_PY" -c '
import json, sys
d = json.loads(sys.argv[1])
assert [p["name"] for p in d["ports"]] == ["a", "b"], d["ports"]
names = [s["name"] for s in d["services"]]
assert {"router", "driver-a", "driver-b"} <= set(names), names
r = [s for s in d["services"] if s["name"] == "driver-a"][0]
assert r["restarts_by_cause"]["crash"] == 1 and r["state"] == "up", r
assert d["interval_seconds"] > 0.5 and "rx_packets_per_second" in d["ports"][0], d
' "$out" || rr_fail "top --once --json: $out"
rr_ok "top --once --json (as a member of $G): ports a, b; services; driver-a's crash"

# top's rates against a paced stream: 400 pings at 100 a second, A -> B,
# and one frame inside it; the stream's own rate from ping's count and time.
rr_in "$RR_NS_A" ping -n -q -c 400 -i 0.01 -W 2 "$RR_HOST_B" >"$RR_T/paced" 2>&1 &
PING=$!
RR_EXTRA_PIDS+=("$PING")
rr_msleep 1000
out=$("$RR" top --once --json -S "$RR_SOCK" 2>&1) || rr_fail "top --once --json under traffic: $out"
srate=$("$RR" stats --rate 1 --json -S "$RR_SOCK" 2>&1) || rr_fail "stats --rate 1 --json under traffic: $srate"
wait "$PING" || rr_fail "the paced ping: $(cat "$RR_T/paced")"
ms=$(sed -n 's/.* \([0-9]*\)ms$/\1/p' "$RR_T/paced" | head -1)
[ -n "$ms" ] && [ "$ms" -gt 0 ] || rr_fail "no time in ping's summary: $(cat "$RR_T/paced")"
rates=$("$RR_PY" -c '
import json, sys
d = json.loads(sys.argv[1])
p = {x["name"]: x for x in d["ports"]}
print(p["a"]["rx_packets_per_second"], p["b"]["tx_packets_per_second"], p["b"]["rx_packets_per_second"], p["a"]["tx_packets_per_second"])
' "$out") || rr_fail "top --once --json: $out"
want=$(awk -v ms="$ms" 'BEGIN { printf "%.1f", 399 * 1000 / ms }')
read -r ra tb rb ta <<<"$rates"
for r in "$ra" "$tb" "$rb" "$ta"; do
    awk -v r="$r" -v w="$want" 'BEGIN { exit !(r >= 0.9 * w && r <= 1.1 * w) }' ||
        t_timing_fail "top: $r packets/s on a port, the stream $want (ping: 400 in $ms ms): beyond 10 %"
done
rr_ok "top under 400 pings at $want a second: a rx $ra, b tx $tb, b rx $rb, a tx $ta packets/s (within 10 %)"
# stats --rate: every counter a second over the same stream; the router
# forwards each ping and its reply.
fwd=$("$RR_PY" -c 'import json, sys; print(json.loads(sys.argv[1])["rates"]["services/router/counters/forwarded"])' "$srate") ||
    rr_fail "stats --rate 1 --json: no rate of the router's forwarded: $srate"
awk -v r="$fwd" -v w="$want" 'BEGIN { exit !(r >= 1.8 * w && r <= 2.2 * w) }' ||
    t_timing_fail "stats --rate: the router forwarded $fwd a second, the stream twice $want: beyond 10 %"
out=$("$RR" stats --rate x -S "$RR_SOCK" 2>&1) && rr_fail "stats --rate x was taken: $out"
grep -q "0.1 to 3600" <<<"$out" || rr_fail "stats --rate x: $out"
out=$("$RR" stats a --rate 1 -S "$RR_SOCK" 2>&1) && rr_fail "stats PORT --rate was taken: $out"
rr_ok "stats --rate 1: the router forwarded $fwd a second (twice $want, within 10 %); --rate x and a PORT refused"

# ---- the exporter ----
out=$("$RR" exporter --listen 127.0.0.1:1 -S "$RR_SOCK" 2>&1)
rc=$?
[ "$rc" = 100 ] && [[ $out == *"refusing to run as root"* ]] || rr_fail "as root without --user: exit $rc: $out"
rr_ok "as root without --user: $out"
ip netns exec "$RR_NS_A" "$RR" exporter --listen "127.0.0.1:$PORT" --user "nobody:$G" -S "$RR_SOCK" 2>"$RR_T/exp.log" &
EXP=$!
RR_EXTRA_PIDS+=("$EXP")
rr_wait 5 rr_listening "$RR_NS_A" "$PORT" || rr_fail "the exporter did not listen: $(cat "$RR_T/exp.log")"
get() { rr_in "$RR_NS_A" "$RR_PY" "$HTTP" get "$PORT" "$@"; }
st=$(get /metrics "$RR_T/e1") && [ "$st" = 200 ] || rr_fail "GET /metrics: $st"
promcheck "$RR_T/e1" "the exporter's answer"
[ "$(val "$RR_T/e1" ringrouter_supervisor_up)" = 1 ] || rr_fail "the exporter's answer: supervisor_up is not 1"
[ -n "$(val "$RR_T/e1" 'ringrouter_port_tx_packets_total{port="b"}')" ] || rr_fail "the exporter's answer has no port metrics"
st=$(get /nope) && [ "$st" = 404 ] || rr_fail "GET /nope: $st, expected 404"
rr_ok "exporter: GET /metrics 200, GET /nope 404"

status=$(cat "/proc/$EXP/status")
uid=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' <<<"$status")
[ "$uid" = "$(id -u nobody) $(id -u nobody) $(id -u nobody) $(id -u nobody)" ] || rr_fail "the exporter's uids: $uid"
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
    v=$(awk -v c="$c:" '$1 == c { print $2 }' <<<"$status")
    [ "$v" = 0000000000000000 ] || rr_fail "the exporter's $c is $v"
done
[ "$(awk '/^NoNewPrivs:/ { print $2 }' <<<"$status")" = 1 ] || rr_fail "the exporter has no NoNewPrivs"
grep -qw "$GID" <<<"$(awk '/^Groups:/' <<<"$status")" || rr_fail "the exporter is not in $G"
rr_ok "exporter: uid $(id -u nobody) (nobody), in $G, no capability in any set, NoNewPrivs"

# A real Prometheus server, in the namespace, scrapes it (with promtool,
# Debian's prometheus package brings the server).
PROM=$(command -v prometheus || true)
if [ -n "$PROM" ]; then
    printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: ringrouter\n    static_configs:\n      - targets: ["127.0.0.1:%s"]\n' \
        "$PORT" >"$RR_T/prom.yml"
    ip netns exec "$RR_NS_A" "$PROM" --config.file="$RR_T/prom.yml" --storage.tsdb.path="$RR_T/prom" \
        --web.listen-address=127.0.0.1:9424 >"$RR_T/prom.log" 2>&1 &
    RR_EXTRA_PIDS+=($!)
    q() { rr_in "$RR_NS_A" "$RR_PY" "$HTTP" query 9424 "$1"; }
    scraped() { [ "$(q 'up{job="ringrouter"}')" = 1 ] && [ "$(q 'ringrouter_port_up{port="a"}')" = 1 ]; }
    rr_wait 30 scraped || rr_fail "Prometheus did not scrape the exporter: up $(q 'up{job="ringrouter"}'); $(tail -5 "$RR_T/prom.log")"
    rr_ok "Prometheus scraped the exporter: up 1, ringrouter_port_up{port=\"a\"} 1, $(q 'count({job="ringrouter"})') series"
elif [ -n "$PROMTOOL" ]; then
    rr_fail "promtool but no prometheus server: Debian's prometheus package has both"
fi

out=$(rr_in "$RR_NS_A" "$RR_PY" "$HTTP" hostile "$PORT" 2>&1) || rr_fail "hostile clients: $out"
sed 's/^/  /' <<<"$out"
# What the exporter holds once they left: its listening socket, and no
# more than the one connection to the supervisor of a snapshot under way.
socks() { find "/proc/$EXP/fd" -lname 'socket:*' 2>/dev/null | wc -l; }
rr_wait 5 eval '[ "$(socks)" -le 2 ]' || rr_fail "the exporter holds $(socks) sockets after the hostile clients left"
# Its own count of them (a snapshot is served for 0.5 s: wait for the next).
counted() { [ "$(get /metrics "$RR_T/e2")" = 200 ] &&
    [ "$(val "$RR_T/e2" 'ringrouter_exporter_dropped_connections_total{reason="too_large"}')" -ge 1 ] &&
    [ "$(val "$RR_T/e2" 'ringrouter_exporter_dropped_connections_total{reason="timeout"}')" -ge 1 ] &&
    [ "$(val "$RR_T/e2" 'ringrouter_exporter_dropped_connections_total{reason="evicted"}')" -ge 1 ]; }
rr_wait 5 counted || rr_fail "the 10 MB request, the silent client or the evictions are not counted: $(grep dropped_connections "$RR_T/e2")"
rr_ok "exporter: $(grep -E '^ringrouter_exporter_(dropped|scrapes)' "$RR_T/e2" | sed 's/^ringrouter_exporter_//' | tr '\n' ' ')"
rr_alive "$RR_PID" || rr_fail "the supervisor died"

# The supervisor dies (its services keep forwarding) and a new one adopts them.
kill -KILL "$RR_PID"
wait "$RR_PID" 2>/dev/null
RR_PID=
down() { [ "$(get /metrics "$RR_T/e3")" = 200 ] && [ "$(val "$RR_T/e3" ringrouter_supervisor_up)" = 0 ]; }
rr_wait 5 down || rr_fail "with no supervisor: the exporter did not answer supervisor_up 0"
rr_up
back() { [ "$(get /metrics "$RR_T/e4")" = 200 ] && [ "$(val "$RR_T/e4" ringrouter_supervisor_up)" = 1 ]; }
rr_wait 10 back || rr_fail "the exporter did not find the new supervisor: $(tail -3 "$RR_T/exp.log")"
rr_alive "$EXP" || rr_fail "the exporter died"
promcheck "$RR_T/e4" "the exporter's answer from the new supervisor"
rr_ok "supervisor killed: supervisor_up 0; a new one adopted the services: supervisor_up 1, same exporter (pid $EXP)"

kill -TERM "$EXP"
rr_wait 5 eval "! rr_alive $EXP" || rr_fail "the exporter did not stop on SIGTERM"
wait "$EXP"
rc=$?
[ "$rc" = 0 ] || rr_fail "the exporter exited $rc on SIGTERM"
rr_stop
rr_census_ok
[ -n "$PROMTOOL" ] || rr_skip "everything else passed; promtool (Debian's prometheus package) is missing"
t_pass metrics
