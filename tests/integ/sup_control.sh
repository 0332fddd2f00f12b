#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_control.sh: the control CLI against a running supervisor.
#   - `restart router`: a new pid, ready, planned restarts + 1 (restarts,
#     which count deaths, + 0), the old one exited 0
#   - `restart nosuch`: exit 100, the message lists the services
#   - `status` and `stats`: their headers; `--json` of both parses
#   - a client with no supervisor: exit 111, "cannot reach the supervisor"
#   - `up` with a bad manifest: exit 100, FILE:LINE: [section] key: message
#   - a second `up` on the same run_dir: fails, "another ringrouter is
#     running there", and the first one is unharmed
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_control

sup_netns
NS=$SUP_NS
sup_manifest "$SUP_T/m.ini"
sup_start "$NS" "$SUP_T/m.ini"
fails=0
bad() {
    echo "  BAD: $*"
    fails=$((fails + 1))
}
run() { # run CMD...: sets $out, $err, $rc
    "$@" >"$SUP_T/out" 2>"$SUP_T/err"
    rc=$?
    out=$(cat "$SUP_T/out")
    err=$(cat "$SUP_T/err")
}

# restart router
sup_status
old=${SUP_PIDS[router]} r0=${SUP_RESTARTS[router]} p0=${SUP_PLANNED[router]}
run "$RR" restart -S "$SUP_SOCK" router
[ "$rc" = 0 ] || bad "restart router: exit $rc: $err"
[ "$out" = "restarting router" ] || bad "restart router printed \"$out\""
if sup_wait 5 eval 'sup_status && [ "${SUP_STATE[router]}" = up ] && [ "${SUP_PIDS[router]}" != "$old" ]'; then
    [ "${SUP_PLANNED[router]}" = $((p0 + 1)) ] && [ "${SUP_RESTARTS[router]}" = "$r0" ] ||
        bad "restart router: planned $p0 -> ${SUP_PLANNED[router]}, restarts $r0 -> ${SUP_RESTARTS[router]}"
    grep -q "^ringrouter: router: ready, pid ${SUP_PIDS[router]}, " "$SUP_LOG" || bad "no ready line for the new router"
    grep -q "^ringrouter: router: exited with status 0; restarting as asked$" "$SUP_LOG" ||
        bad "the old router did not exit 0 on the restart (log above)"
    echo "restart router: pid $old -> ${SUP_PIDS[router]}, planned restarts $p0 -> ${SUP_PLANNED[router]}"
else
    bad "restart router: no new ready router within 5 s"
fi

# restart nosuch
run "$RR" restart -S "$SUP_SOCK" nosuch
[ "$rc" = 100 ] || bad "restart nosuch: exit $rc, expected 100"
[ "$err" = 'ringrouter: restart: no service "nosuch"; the services are: router driver-a driver-b' ] ||
    bad "restart nosuch said: $err"
echo "restart nosuch: exit $rc: $err"
run "$RR" restart -S "$SUP_SOCK"
[ "$rc" = 100 ] || bad "restart with no service: exit $rc, expected 100"

# status, stats: human headers; --json parses
run "$RR" status -S "$SUP_SOCK"
[ "$rc" = 0 ] || bad "status: exit $rc"
read -ra h <<<"$(head -n 1 <<<"$out")"
[ "${h[*]}" = "SERVICE STATE PID STANDBY RESTARTS PLANNED UPTIME STARTED BUILD BINARY LAST EXIT" ] || bad "status header: ${h[*]}"
# The stand-ins are built with ELF build ids: 12 hex digits of it, and the path they run from.
[ "$(grep -cE '^(router|driver-a|driver-b) +up +[0-9]+ +([0-9]+\*?|-) +[0-9]+ +[0-9]+ +[0-9.]+s +[0-9]{2}:[0-9]{2}:[0-9]{2} +[0-9a-f]{12} +/[^ ]+/rr-(passthru|null) ' <<<"$out")" = 3 ] ||
    bad "status rows: $out"
run "$RR" stats -S "$SUP_SOCK"
[ "$rc" = 0 ] || bad "stats: exit $rc"
for re in '^router \(up\): loops [0-9]+, sleeps [0-9]+, wake-ups sent [0-9]+, buffers held [0-9]+$' '^  fwd_pkts +[0-9]+$' \
    '^driver-a \(up\): loops' '^  sink_pkts +[0-9]+$' \
    '^RING +FROM -> TO +OCCUPANCY enq_handles full_drops wake_sent sleeps drop_bad_handle drop_bad_owner drop_bad_frame drop_bad_chain prod_lie cons_lie$' \
    '^rx-a +driver-a -> router +[0-9]+/1024 ' '^tx-b +router -> driver-b +[0-9]+/1024 ' \
    '^pool: 4096 buffers of 2048 bytes, [0-9]+ free, 0 lent to the kernel, alloc_fail [0-9]+, free_bad [0-9]+, mag_bad [0-9]+$'; do
    grep -qE "$re" <<<"$out" || bad "stats: no line matching /$re/"
done
"$RR" status --json -S "$SUP_SOCK" >"$SUP_T/status.json" || bad "status --json failed"
"$RR" stats --json -S "$SUP_SOCK" >"$SUP_T/stats.json" || bad "stats --json failed"
"$SUP_PY" - "$SUP_T/status.json" "$SUP_T/stats.json" <<'EOF' || bad "the --json output is not what it should be"
import json, sys
st = json.load(open(sys.argv[1]))
names = [s["name"] for s in st["services"]]
assert names == ["router", "driver-a", "driver-b"], names
for s in st["services"]:
    assert set(s) >= {"name", "state", "pid", "restarts", "uptime_ms", "ready_ms", "last_exit"}, s
    assert s["state"] == "up" and s["pid"] > 0, s
sx = json.load(open(sys.argv[2]))
assert [s["name"] for s in sx["services"]] == names
assert sx["services"][0]["counters"]["fwd_pkts"] > 0, sx["services"][0]
assert [r["name"] for r in sx["rings"]] == ["rx-a", "tx-a", "rx-b", "tx-b"], sx["rings"]
assert sx["pool"]["buffers"] == 4096, sx["pool"]
# Who holds the pool: every buffer free or some service's (TAP ports lend
# the kernel none), and at rest most of them free.
held = {s["name"]: s["buffers_held"] for s in sx["services"]}
assert sx["pool"]["kernel"] == 0, sx["pool"]
assert sx["pool"]["free"] + sum(held.values()) == 4096, (sx["pool"], held)
assert sx["pool"]["free"] >= 4096 // 2, (sx["pool"], held)
print("status --json and stats --json parse: %d services, %d rings" % (len(names), len(sx["rings"])))
EOF

# A bad manifest: exit 100, FILE:LINE: [section] key: message; nothing started.
sed 's|^address = 10.91.0.1/24$|address = 10.91.0.1/33|' "$SUP_T/m.ini" >"$SUP_T/bad.ini"
line=$(grep -n '10.91.0.1/33' "$SUP_T/bad.ini" | cut -d: -f1)
sup_netns
NS2=$SUP_NS
run ip netns exec "$NS2" "$RR" up -c "$SUP_T/bad.ini"
[ "$rc" = 100 ] || bad "up with a bad manifest: exit $rc, expected 100"
[ "$err" = "$SUP_T/bad.ini:$line: [port a] address: \"10.91.0.1/33\" is not an IPv4 prefix" ] ||
    bad "up with a bad manifest said: $err"
echo "up -c bad.ini: exit $rc: $err"
[ "$(ip -n "$NS2" -o link show | wc -l)" = 1 ] || bad "up with a bad manifest left links in $NS2"

# A second `up` on the same run_dir (in another namespace, so its TAPs can be
# created): refused at the socket; the first supervisor is unharmed.
: >"$SUP_T/log2"
run ip netns exec "$NS2" timeout 10 "$RR" up -c "$SUP_T/m.ini"
[ "$rc" != 0 ] && [ "$rc" != 124 ] || bad "a second up on the same run_dir: exit $rc"
grep -q "^ringrouter: $SUP_SOCK: another ringrouter is running there$" <<<"$err" ||
    bad "a second up said: $err"
echo "second up on the same run_dir: exit $rc: $(grep another <<<"$err")"
[ "$(ip -n "$NS2" -o link show | wc -l)" = 1 ] || bad "the second up left links in $NS2: $(ip -n "$NS2" -o link show)"
sup_alive "$SUP_PID" || bad "the first supervisor is gone"
sup_all_up || bad "the first supervisor no longer answers, or a service is down"
[ -S "$SUP_SOCK" ] || bad "the first supervisor's socket file is gone"

# No supervisor: exit 111, "cannot reach the supervisor".
sup_stop TERM 10
census=$(t_census_check "$SUP_LOG" "$SUP_RC") || bad "$census"
run "$RR" status -S "$SUP_SOCK"
[ "$rc" = 111 ] || bad "status with no supervisor: exit $rc, expected 111"
grep -q "cannot reach the supervisor at $SUP_SOCK" <<<"$err" || bad "status with no supervisor said: $err"
echo "status with no supervisor: exit $rc: $err"
run "$RR" restart -S "$SUP_T/nothing.sock" router
[ "$rc" = 111 ] || bad "restart with no supervisor: exit $rc, expected 111"

[ "$fails" -eq 0 ] || sup_fail "$fails problems (above)"
echo "PASS: sup_control"
