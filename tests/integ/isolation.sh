#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/isolation.sh: a compromised service cannot hurt the others or
# the supervisor (docs/security.md). The real router forwards between TAP
# ports a and b; port c's driver is rr-evil (tests/svc/evil.c), a hostile
# service with the fds a driver gets, which makes one attack after another
# and logs each: signal, ptrace and open its peers through /proc, kill the
# supervisor, write its sealed config, publish forged handles and hostile
# chains, scribble its stats, its rings' headers (then die holding buffers)
# and the pool's header, and make system calls no driver makes (socket,
# fork, open, exec).
#
# Asserted, for every attack: the log says "trying", and then either
# "contained: WHY" or the supervisor's record of its death (a seccomp kill
# is SIGSYS); never "BREACH". And meanwhile and after:
#   - the supervisor stays up, and the router and the drivers of a and b
#     keep their pids: not one restarted;
#   - a ping flow A -> B that runs through every attack loses nothing but
#     the ping still on its way when the flow is stopped (timing-bound: a
#     loaded machine may delay a reply past its deadline);
#   - iperf3 TCP A -> B after the attacks;
#   - the router's ring from c counts the forged handles and chains it
#     dropped, and the supervisor logs the ring headers it repaired;
#   - every death of rr-evil was followed by a restart (restart_limit 1000)
#     until it said "all N attacks made";
#   - the shutdown census is clean: nothing lost, nothing leaked.
#
# It runs twice: with the supervisor as built, then with its AddressSanitizer
# + UBSan build (build/bin/asan/ringrouter), which turns any read or write
# out of bounds in the supervisor into a failure.
set -u
if [ -z "${ISO_ROUND:-}" ]; then
    rc_all=0
    for round in plain asan; do
        echo "=== round: $round supervisor"
        ISO_ROUND=$round bash "$0"
        rc=$?
        case $rc in
        0) ;;
        75) [ "$rc_all" = 0 ] && rc_all=75 ;;
        *) rc_all=$rc ;;
        esac
        [ "$rc" = 0 ] || [ "$rc" = 75 ] || break
    done
    exit "$rc_all"
fi
. "$(dirname "$0")/../lib/router.sh"
rr_init "isolation ($ISO_ROUND)"
t_seed
rr_need_hard iperf3
cp "$RR_BIN_DIR/rr-evil" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-evil" || rr_fail "cannot copy rr-evil"
if [ "$ISO_ROUND" = asan ]; then
    [ -x "$RR_BIN_DIR/asan/ringrouter" ] || rr_fail "$RR_BIN_DIR/asan/ringrouter is missing: build with ninja first"
    cp "$RR_BIN_DIR/asan/ringrouter" "$RR_T/bin/ringrouter" || rr_fail "cannot copy the ASan supervisor"
    # Any report fails the supervisor's exit status, which the census check reads.
    export ASAN_OPTIONS=abort_on_error=0:exitcode=99:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:exitcode=99
fi

rr_netns c
NS_C=$RR_NS
n=$(($$ % 250 + 1))
rr_topology "$(printf '[port c]\ndriver = tap\nifname = rrt%sc\nnetns = %s\naddress = 10.63.%s.1/24\n\n[service driver-c]\nbinary = rr-evil\nrestart_limit = 1000\nrestart_window = 60s\nhang_ms = 3000\n' "$$" "$NS_C" "$n")"
rr_start
rr_status || rr_fail "no status"
declare -A pid0
for s in router driver-a driver-b; do pid0[$s]=${RR_PIDS[$s]}; done

# A flow through everything rr-evil does: 10 pings a second, from A to B.
rr_in "$RR_NS_A" ping -c 1 -W 2 "$RR_HOST_B" >/dev/null || rr_fail "no first ping A -> B"
ip netns exec "$RR_NS_A" ping -i 0.1 -W 1 "$RR_HOST_B" >"$RR_T/ping.log" 2>&1 &
ping_pid=$!
RR_EXTRA_PIDS+=("$ping_pid")
# A pid, never 0 or empty: kill -USR1 0 would signal this whole process group.
rr_wait 5 eval 'rr_status && [[ "${RR_PIDS[driver-c]:-}" =~ ^[1-9][0-9]*$ ]] && [ "${RR_STATE[driver-c]}" = up ]' ||
    rr_fail "rr-evil (driver-c) is not up: state ${RR_STATE[driver-c]:-none}, pid ${RR_PIDS[driver-c]:-none}"
evil_pid=${RR_PIDS[driver-c]}
[ "$(cat "/proc/$evil_pid/comm" 2>/dev/null)" = rr-evil ] || rr_fail "pid $evil_pid is not rr-evil"
kill -USR1 "$evil_pid" || rr_fail "cannot signal rr-evil (pid $evil_pid)"

rr_wait 60 grep -q 'rr-evil: all [0-9]* attacks made' "$RR_LOG" ||
    rr_fail "rr-evil did not get through its attacks within 60 s: $(grep 'rr-evil' "$RR_LOG" | tail -n 5)"
nattacks=$(sed -n 's/.*rr-evil: all \([0-9]*\) attacks made.*/\1/p' "$RR_LOG" | head -n 1)
rr_msleep 500
kill -INT "$ping_pid"
wait "$ping_pid" 2>/dev/null

# Each step's verdict is the first word about it after its "trying": its own
# "contained" or "BREACH" line, or the death of the process that tried it.
verdicts=$(awk '
    match($0, /rr-evil: step [0-9]+ [^ :]+: trying/) {
        split(substr($0, RSTART + 14), w, " "); cur = w[1]; name[cur] = substr(w[2], 1, length(w[2]) - 1)
        tried[cur] = 1; next }
    cur != "" && index($0, "rr-evil: step " cur " " name[cur] ": contained: ") {
        v[cur] = "contained: " substr($0, index($0, ": contained: ") + 13); cur = ""; next }
    cur != "" && index($0, "rr-evil: step " cur " " name[cur] ": BREACH: ") {
        v[cur] = "BREACH: " substr($0, index($0, ": BREACH: ") + 10); cur = ""; next }
    cur != "" && /driver-c: (killed by|exited with status)/ {
        v[cur] = "died: " substr($0, index($0, "driver-c: ") + 10); cur = ""; next }
    END { for (i = 1; i in tried; i++) print i, name[i], (i in v ? v[i] : "none") }' "$RR_LOG")
bad=0
n_seen=0
while read -r i name verdict; do
    n_seen=$((n_seen + 1))
    echo "step $i $name: $verdict"
    case $verdict in
    contained:* | died:*) ;;
    *) bad=1 ;;
    esac
done <<<"$verdicts"
[ "$n_seen" = "$nattacks" ] || { echo "BAD: $n_seen steps tried, rr-evil has $nattacks"; bad=1; }
if grep 'rr-evil: .*BREACH' "$RR_LOG"; then
    echo "BAD: the lines above are attacks that worked"
    bad=1
fi

rr_alive "$RR_PID" || rr_fail "the supervisor died"
rr_status || rr_fail "the supervisor does not answer status"
for s in router driver-a driver-b; do
    [ "${RR_PIDS[$s]}" = "${pid0[$s]}" ] && [ "${RR_RESTARTS[$s]}" = 0 ] ||
        rr_fail "$s was hurt: pid ${pid0[$s]} -> ${RR_PIDS[$s]}, ${RR_RESTARTS[$s]} restarts"
done
echo "supervisor, router, driver-a and driver-b: same pids, no restart"

sent=$(sed -n 's/^\([0-9]*\) packets transmitted, \([0-9]*\) received.*/\1/p' "$RR_T/ping.log")
recv=$(sed -n 's/^\([0-9]*\) packets transmitted, \([0-9]*\) received.*/\2/p' "$RR_T/ping.log")
[ -n "$sent" ] && [ "$sent" -ge 10 ] || rr_fail "the ping flow did not run: $(tail -n 3 "$RR_T/ping.log")"
echo "ping A -> B through the attacks: $recv of $sent answered"
# The last ping sent may still have been on its way when SIGINT stopped the
# flow (ping then counts it transmitted, never answered): not a loss. Every
# sequence number before it must have been answered.
lost=$(awk -v n="$sent" '/ icmp_seq=[0-9]+ / { s = $0; sub(/.* icmp_seq=/, "", s); sub(/ .*/, "", s); got[s + 0] = 1 }
    END { l = 0; for (i = 1; i < n; i++) if (!(i in got)) { l++; m = m " " i } print l m }' "$RR_T/ping.log")
[ "${lost%% *}" = 0 ] || t_timing_fail "ping A -> B lost ${lost%% *} of the $((sent - 1)) sent before the last during the attacks (icmp_seq ${lost#* })"

rr_iperf_server "$RR_NS_B" "$RR_HOST_B" 5201
rr_in "$RR_NS_A" iperf3 -c "$RR_HOST_B" -p 5201 -t 2 -J >"$RR_T/iperf.json" 2>&1 || rr_fail "iperf3 A -> B failed: $(tail -c 300 "$RR_T/iperf.json")"
gbps=$("$RR_PY" -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e9))' "$RR_T/iperf.json")
echo "iperf3 A -> B after the attacks: $gbps Gbit/s"

# The router dropped what rr-evil forged, and counted it on the ring from c.
rr_stats || rr_fail "no stats"
dropped=0
for k in "${!RRS[@]}"; do
    case $k in ring.rx-c.drop_bad_*) dropped=$((dropped + RRS[$k])) ;;
    esac
done
[ "$dropped" -ge 5 ] || rr_fail "the ring from c counted $dropped bad handles, frames or chains; rr-evil forged at least 5: $(for k in "${!RRS[@]}"; do [[ $k == ring.* ]] && echo "$k=${RRS[$k]}"; done | sort | tr '\n' ' ')"
echo "the router dropped $dropped forged handles and chains from c, and counted them"
for what in "ring rx-c: its header's size, mask or owners at offset" "ring tx-c: its header's size, mask or owners at offset" \
    "pool: its header (geometry, 8192 buffers of 2048 bytes) was overwritten; repaired"; do
    grep -qF "ringrouter: $what" "$RR_LOG" || rr_fail "the supervisor did not report what rr-evil scribbled: no \"$what\""
done
echo "the supervisor repaired the ring and pool headers rr-evil scribbled, and said so"

rr_stop
# rr-evil wrote where no service may: the census must say how much, and
# then find every buffer free.
grep -qE '^ringrouter: census: [0-9]+ corrupt words were found in shared memory during the run' "$RR_LOG" ||
    rr_fail "the census did not count the corruption: $(grep 'census' "$RR_LOG" | tail -n 3)"
T_CORRUPT_EXPECTED=1 rr_census_ok
[ "$bad" = 0 ] || rr_fail "isolation breached: the attacks above worked"
t_pass "isolation ($ISO_ROUND supervisor)"
