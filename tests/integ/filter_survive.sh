#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/filter_survive.sh: connections and NAT mappings outlive the
# filter (docs/filter.md, "State that outlives the process"). A is inside,
# B outside, the filter on b (the uplink), masquerade there, forward
# accepting only what a opens (and its replies), invalid dropped. Through it:
#   - one TCP stream A -> B (tests/lib/filter_probe.py stream), written to
#     the whole time;
#   - a NAT'd UDP ping-pong A -> B, a datagram every 10 ms, each echoed.
# Meanwhile, ROUNDS times (RR_FILTER_ROUNDS, default 20): `inject filter
# crash`, kill -9 of the filter, `upgrade filter`, each waiting for the new
# instance; then `upgrade supervisor`, whose successor adopts the filter
# and its table's region. Then:
#   - the TCP stream was never reset, and B received every byte A wrote;
#   - B saw the UDP flow from one address and port, the whole time (the
#     mapping survived), and most of it was answered, not nothing after the
#     first fault as a lost table would give; at most 2 datagrams per fault
#     unanswered (what a killed instance held) is a timing bound (exit 75);
#   - each new instance adopted the table ("adopted the connection table:
#     N connections", N >= 2), none rebuilt it.
# Then the table is corrupted on purpose, through the supervisor's own fd:
#   - its buckets scribbled: the filter finds an index out of bounds on the
#     next lookup, ends (SIGABRT), and its successor rebuilds the table
#     empty, saying so; traffic flows again;
#   - its header scribbled: the supervisor's check before the next start
#     wipes it and says so; the successor starts an empty table.
set -u
. "$(dirname "$0")/../lib/filter.sh"
flt_init filter_survive
ROUNDS=${RR_FILTER_ROUNDS:-20}
RR_SVC_EXTRA='restart_limit = 1000\nrestart_window = 10s'

flt_rules "$RR_T/rules.nft" <<'EOF'
chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    ct state invalid drop
    iif "a" ct state new accept
}
chain postrouting {
    oif "b" masquerade
}
EOF
rr_topology "$(printf '[filter]\nrules = %s\nconntrack_max = 1024\nports = b' "$RR_T/rules.nft")"
rr_start
rr_ok "router up with rr-filter, masquerade on b: A $RR_HOST_A -- B $RR_HOST_B"

ip netns exec "$RR_NS_B" "$RR_PY" "$PROBE" serve-udp "$RR_HOST_B" 7200 "$RR_T/udp.log" 2>"$RR_T/udp.err" &
RR_EXTRA_PIDS+=($!)
ip netns exec "$RR_NS_B" "$RR_PY" "$PROBE" sink "$RR_HOST_B" 7100 >"$RR_T/sink.out" 2>&1 &
sink=$!
RR_EXTRA_PIDS+=($sink)
rr_wait 5 eval "rr_in $RR_NS_B ss -Hlun 'sport = :7200' | grep -q . && rr_in $RR_NS_B ss -Hltn 'sport = :7100' | grep -q ." ||
    rr_fail "B's servers did not bind"
ip netns exec "$RR_NS_A" "$RR_PY" "$PROBE" stream "$RR_HOST_B" 7100 >"$RR_T/stream.out" 2>&1 &
stream=$!
RR_EXTRA_PIDS+=($stream)
ip netns exec "$RR_NS_A" "$RR_PY" "$PROBE" pingpong "$RR_HOST_B" 7200 10 >"$RR_T/pp.out" 2>&1 &
pp=$!
RR_EXTRA_PIDS+=($pp)
rr_wait 5 eval '[ -s "$RR_T/udp.log" ]' || rr_fail "no datagram of the ping-pong reached B"
rr_msleep 500

# next_instance OLD: wait until the filter is up with a pid other than OLD
next_instance() {
    rr_wait 10 eval 'rr_status && [ "${RR_STATE[filter]}" = up ] && [ "${RR_PIDS[filter]}" != "$1" ]' ||
        rr_fail "$2: the filter (pid $1) was not up again with a new pid within 10 s"
}
faults=0
lines0=$(wc -l <"$RR_LOG")
for ((r = 1; r <= ROUNDS; r++)); do
    for kind in crash kill upgrade; do
        rr_status || rr_fail "status"
        old=${RR_PIDS[filter]}
        case $kind in
        crash) out=$("$RR" inject filter crash -S "$RR_SOCK" 2>&1) || rr_fail "inject filter crash: $out" ;;
        kill) kill -KILL "$old" || rr_fail "kill -9 filter (pid $old)" ;;
        upgrade) out=$("$RR" upgrade filter -S "$RR_SOCK" 2>&1) || rr_fail "upgrade filter: $out" ;;
        esac
        next_instance "$old" "round $r, $kind"
        faults=$((faults + 1))
        # the next death restarts at once only after 100 ms of stability
        rr_msleep $((150 + RANDOM % 51))
    done
    rr_alive "$stream" || rr_fail "round $r: the TCP stream ended: $(cat "$RR_T/stream.out")"
done
rr_ok "$ROUNDS rounds of inject crash, kill -9 and upgrade of the filter: $faults new instances"

# The supervisor itself re-exec'd: the new one adopts the filter and its
# table's region (the same instance goes on, the flows through it too).
rr_status || rr_fail "status"
fpid=${RR_PIDS[filter]}
out=$("$RR" upgrade supervisor -S "$RR_SOCK" 2>&1) || rr_fail "upgrade supervisor: $out"
rr_wait 15 eval 'rr_status && [ "${RR_STATE[filter]}" = up ]' || rr_fail "upgrade supervisor: no filter up within 15 s"
[ "${RR_PIDS[filter]}" = "$fpid" ] || rr_fail "upgrade supervisor: the filter is pid ${RR_PIDS[filter]}, not the adopted $fpid"
rr_msleep 500 # the flows go on through it; their checks below cover this too
rr_ok "upgrade supervisor: the filter (pid $fpid) and its table adopted"
rr_msleep 500
kill -TERM "$pp" "$stream"
rr_wait 10 eval '! rr_alive $pp && ! rr_alive $stream' || rr_fail "the ping-pong or the stream did not end within 10 s"
wait "$stream"
src=$?
wait "$pp"
[ "$src" = 0 ] || rr_fail "the TCP stream through the filter failed: $(cat "$RR_T/stream.out")"
rr_wait 10 eval '! rr_alive $sink' || rr_fail "B's sink did not see the stream end"
sent_bytes=$(awk '{ print $2 }' "$RR_T/stream.out")
got_bytes=$(awk '/^bytes/ { print $2 }' "$RR_T/sink.out")
[ -n "$sent_bytes" ] && [ "$sent_bytes" -gt 0 ] && [ "$sent_bytes" = "$got_bytes" ] ||
    rr_fail "the stream wrote '$sent_bytes' bytes, B received '$got_bytes'"
rr_ok "the TCP stream was never reset: $sent_bytes bytes written, all received"
read -r _ sent _ replies <"$RR_T/pp.out" || rr_fail "ping-pong: $(cat "$RR_T/pp.out")"
lost=$((sent - replies))
[ "$sent" -gt 100 ] && [ "$replies" -gt $((sent / 2)) ] ||
    rr_fail "ping-pong: $sent sent, $replies answered: the mapping did not carry the replies"
[ "$lost" -le $((2 * faults)) ] ||
    t_timing_fail "ping-pong: $lost of $sent unanswered over $faults faults, more than $((2 * faults))"
peers=$(wc -l <"$RR_T/udp.log")
[ "$peers" = 1 ] && grep -q "^$RR_GW_B " "$RR_T/udp.log" ||
    rr_fail "B saw the UDP flow from $peers sources, expected one, the router's: $(cat "$RR_T/udp.log")"
rr_ok "NAT'd UDP: $sent sent, $replies answered ($lost lost over $faults faults), one mapping: $(cat "$RR_T/udp.log")"

chunk=$(tail -n +"$((lines0 + 1))" "$RR_LOG")
adopted=$(grep -cE '^filter\[[0-9]+\]: filter: adopted the connection table: ([2-9]|[1-9][0-9]+) connections$' <<<"$chunk")
[ "$adopted" -ge "$faults" ] || {
    grep -E 'connection table' <<<"$chunk" | tail -n 5
    rr_fail "$adopted instances adopted the table with its connections, of $faults"
}
! grep -q 'rebuilt empty\|wiped' <<<"$chunk" || rr_fail "the table was rebuilt: $(grep 'rebuilt empty\|wiped' <<<"$chunk")"
rr_ok "every one of the $faults new instances adopted the table and its connections"

# The region, through the supervisor's own fd: ct-NAME, a memfd.
ctfd=
for f in /proc/"$RR_PID"/fd/*; do
    case $(readlink "$f") in "/memfd:ct-rt$$ (deleted)") ctfd=$f ;; esac
done
[ -n "$ctfd" ] || rr_fail "no memfd ct-rt$$ among the supervisor's fds"
scribble() { # scribble OFFSET BYTES
    "$RR_PY" -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); f.write(b"\xff" * int(sys.argv[3]))' \
        "$ctfd" "$1" "$2" || rr_fail "cannot write into $ctfd"
}

# Buckets out of bounds: the running filter ends; its successor rebuilds.
rr_status || rr_fail "status"
old=${RR_PIDS[filter]}
lines=$(wc -l <"$RR_LOG")
scribble 64 4096
rr_in "$RR_NS_A" ping -n -c 3 -i 0.2 -W 1 "$RR_HOST_B" >/dev/null 2>&1
next_instance "$old" "scribbled buckets"
chunk=$(tail -n +"$((lines + 1))" "$RR_LOG")
grep -q "^filter\[$old\]: filter: the connection table is corrupt" <<<"$chunk" || rr_fail "no line of pid $old finding the table corrupt"
grep -q '^filter\[[0-9]*\]: filter: the connection table failed its check: rebuilt empty' <<<"$chunk" ||
    rr_fail "no line of a successor rebuilding the table: $chunk"
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B after the rebuild: $out"
rr_ok "scribbled buckets: pid $old ended, its successor rebuilt the table empty; traffic flows"

# A header that fails the supervisor's check: wiped before the next start.
rr_msleep 200
rr_status || rr_fail "status"
old=${RR_PIDS[filter]}
lines=$(wc -l <"$RR_LOG")
scribble 0 8
kill -KILL "$old"
next_instance "$old" "scribbled header"
chunk=$(tail -n +"$((lines + 1))" "$RR_LOG")
grep -q "filter: connection table failed the supervisor's check (bad magic): wiped" <<<"$chunk" ||
    rr_fail "no line of the supervisor wiping the table: $chunk"
grep -q '^filter\[[0-9]*\]: filter: a new connection table of 1024 entries' <<<"$chunk" ||
    rr_fail "no line of the successor starting an empty table: $chunk"
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B after the wipe: $out"
rr_ok "scribbled header: wiped by the supervisor, a new empty table; traffic flows"

rr_stop
rr_census_ok
t_pass "filter_survive: $faults faults, no reset, one mapping, $lost of $sent datagrams lost"
