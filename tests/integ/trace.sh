#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/trace.sh: `ringrouter trace` (docs/observability.md, "Packet
# trace") on the real router between two TAP ports, a shaper on b, and a
# route 10.199.0.0/16 via B added at run time:
#   - a trace of 3 pings to 10.199.x.y: 3 blocks, each with the stages in
#     order (driver-a rx, router route, shaper-b shape, driver-b tx), the
#     route naming the FIB prefix 10.199.0.0/16, the next hop B and port b;
#   - a filtered trace ('udp port 9', beside UDP to port 10 and pings):
#     only matching packets;
#   - a TTL-1 ping: the route's verdict, the ICMP time exceeded sent, the
#     drop and its reason;
#   - bad input: a filter that does not compile (libpcap's message), N out
#     of range, no supervisor, a second trace while one runs: exit 100 or
#     111 with a clear message;
#   - a client killed with SIGKILL: the supervisor ends the trace, and the
#     next one runs; the router restarted nothing and forwards;
#   - `capture b drop` holds the shaper's drops, each with its reason;
#   - a capture whose reader stalls: its lost captures in `stats`, `stats
#     --json` and `metrics`.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init trace
rr_need_hard tcpdump
rr_shaper_init
PCAP_READ=$RR_ROOT/tests/lib/pcapng_read.py

RR_SERVICES=(router driver-a driver-b shaper-b)
rr_topology $'[shaper b]\nrate = 20mbit'
rr_start
rr_resolve
FAR=10.199.$(($$ % 250 + 1)).9
rr_c route add 10.199.0.0/16 via "$RR_HOST_B"
[ "$rc" = 0 ] || rr_fail "route add 10.199.0.0/16 via $RR_HOST_B: $err"

tr_start() { # tr_start NAME ARGS...: a trace in the background (TR_PID); waits until it runs
    local name=$1
    shift
    : >"$RR_T/$name.err"
    "$RR" trace "$@" -S "$RR_SOCK" >"$RR_T/$name.out" 2>"$RR_T/$name.err" &
    TR_PID=$!
    RR_EXTRA_PIDS+=("$TR_PID")
    rr_wait 5 grep -q "tracing" "$RR_T/$name.err" || rr_fail "trace $name did not start: $(cat "$RR_T/$name.err")"
}
tr_done() { # tr_done NAME: the trace ends by itself (N packets) within 10 s, exit 0
    rr_wait 10 eval "! rr_alive $TR_PID" || rr_fail "trace $1 did not end: $(cat "$RR_T/$1.err") $(cat "$RR_T/$1.out")"
    wait "$TR_PID" || rr_fail "trace $1 exited with $?: $(cat "$RR_T/$1.err")"
}
stages() { # stages FILE: each block's SERVICE:STAGE sequence, one line a block
    awk '/^Packet / { if (s != "") print s; s = ""; next }
         $1 ~ /^-?[0-9.]+$/ && NF >= 4 { s = s (s == "" ? "" : " ") $3 ":" $4 }
         END { if (s != "") print s }' "$1"
}
udp_to() { # udp_to NS DST PORT N
    rr_in "$1" bash -c "for i in \$(seq $4); do echo x$3 >/dev/udp/$2/$3; done" || rr_fail "udp to $2:$3"
}

# ---- pings to a known route: prefix, next hop, the stages in order ----
tr_start ping 3 icmp and dst host "$FAR"
rr_in "$RR_NS_A" ping -n -c 3 -i 0.2 -W 1 "$FAR" >/dev/null # no one answers: B is not $FAR
tr_done ping
out=$(cat "$RR_T/ping.out")
[ "$(grep -c '^Packet ' <<<"$out")" = 3 ] || rr_fail "trace 3 icmp: not 3 blocks: $out"
want="driver-a:rx router:route shaper-b:shape driver-b:tx"
[ "$(stages "$RR_T/ping.out" | sort | uniq -c | tr -s ' ')" = " 3 $want" ] ||
    rr_fail "the stages are not $want in each block: $(stages "$RR_T/ping.out")"
n=$(grep -cE "route +forward: fib 10\.199\.0\.0/16 via $RR_HOST_B port b, neighbour (reachable|stale)" <<<"$out")
[ "$n" = 3 ] || rr_fail "the route lines do not name 10.199.0.0/16 via $RR_HOST_B port b: $out"
[ "$(grep -cE "rx +port a queue 0, [0-9]+ bytes: IPv4 $RR_HOST_A > $FAR ttl [0-9]+ ICMP type 8" <<<"$out")" = 3 ] ||
    rr_fail "the rx lines do not show the echo requests: $out"
grep -qE "route .*; [0-9]+ cycles/packet" <<<"$out" || rr_fail "no cycles per packet on the route lines: $out"
grep -qE "^ +[0-9.]+ +[-0-9]+ +shaper-b +shape +port b class default" <<<"$out" || rr_fail "no shaper class: $out"
rr_ok "trace 3 pings to $FAR: 3 blocks, $want, fib 10.199.0.0/16 via $RR_HOST_B port b"
sed -n '1,6p' "$RR_T/ping.out"

# ---- a filtered trace: only what matches ----
tr_start udp 4 udp port 9
for _ in 1 2 3; do
    udp_to "$RR_NS_A" "$RR_HOST_B" 10 2
    rr_in "$RR_NS_A" ping -n -c 1 -W 1 "$RR_HOST_B" >/dev/null
    udp_to "$RR_NS_A" "$RR_HOST_B" 9 2
done
tr_done udp
out=$(cat "$RR_T/udp.out")
[ "$(grep -c '^Packet ' <<<"$out")" = 4 ] || rr_fail "trace 4 udp port 9: not 4 blocks: $out"
[ "$(grep -cE " rx +port a .* UDP [0-9]+ > 9$" <<<"$out")" = 4 ] && ! grep -qE "ICMP|> 10$" <<<"$out" ||
    rr_fail "trace 4 'udp port 9' shows other packets: $out"
rr_ok "trace 4 'udp port 9' beside UDP to port 10 and pings: the 4 datagrams to port 9 alone"

# ---- TTL 1: the verdict, the ICMP sent, the drop ----
tr_start ttl 1 icmp
rr_in "$RR_NS_A" ping -n -c 1 -t 1 -W 1 "$RR_HOST_B" >/dev/null
tr_done ttl
out=$(cat "$RR_T/ttl.out")
[ "$(stages "$RR_T/ttl.out")" = "driver-a:rx router:route router:icmp router:drop" ] ||
    rr_fail "TTL 1: stages $(stages "$RR_T/ttl.out")"
grep -qE "route +ttl expires" <<<"$out" && grep -qE "icmp +type 11 code 0 to port a: sent" <<<"$out" &&
    grep -qE "drop +drop_ttl_exceeded" <<<"$out" || rr_fail "TTL 1: $out"
rr_ok "a TTL-1 ping: ttl expires, ICMP time exceeded sent, drop_ttl_exceeded"

# ---- bad input ----
bad() { # bad RC WHAT ARGS...
    local rc=$1 what=$2 out got
    shift 2
    out=$("$RR" trace "$@" 2>&1 >/dev/null)
    got=$?
    [ "$got" = "$rc" ] && grep -q "$what" <<<"$out" || rr_fail "trace $*: exit $got, '$out' (expected $rc, $what)"
}
bad 100 'syntax error' 1 udp port -S "$RR_SOCK"
bad 100 '1 to 1000 packets' 0 -S "$RR_SOCK"
bad 100 '1 to 1000 packets' 1001 icmp -S "$RR_SOCK"
bad 100 '1 to 1000 packets' x -S "$RR_SOCK"
bad 100 'how many packets' -S "$RR_SOCK"
bad 111 'cannot reach the supervisor' 1 -S "$RR_T/no.sock"
tr_start held 5 udp port 7
bad 100 'busy' 1 icmp -S "$RR_SOCK"
rr_ok "bad filter, N 0, 1001 and x, no N, no supervisor, a second trace: exit 100 or 111 with their messages"

# ---- a killed client: the trace ends, the next runs, the router untouched ----
ended=$(grep -c "trace: ended" "$RR_LOG")
kill -KILL "$TR_PID"
wait "$TR_PID" 2>/dev/null
rr_wait 5 eval '[ "$(grep -c "trace: ended" "$RR_LOG")" -gt "$ended" ]' || rr_fail "a killed client's trace was not ended"
tr_start after 1 icmp
rr_in "$RR_NS_B" ping -n -c 1 -W 2 "$RR_HOST_A" >/dev/null || rr_fail "ping B -> A"
tr_done after
grep -q "^Packet 1:" "$RR_T/after.out" || rr_fail "the trace after a killed one: $(cat "$RR_T/after.out")"
rr_status || rr_fail "no status"
for s in "${RR_SERVICES[@]}"; do
    [ "${RR_RESTARTS[$s]:-0}" = 0 ] && [ "${RR_STATE[$s]}" = up ] || rr_fail "$s: ${RR_STATE[$s]}, ${RR_RESTARTS[$s]} restarts"
done
rr_ok "a client killed by SIGKILL: its trace ended, the next one ran, nothing restarted"

# ---- capture b drop: the shaper's drops, with their reason ----
: >"$RR_T/sdrop.err"
"$RR" capture b drop -c 5 udp -S "$RR_SOCK" -w "$RR_T/sdrop.pcapng" 2>"$RR_T/sdrop.err" &
CAP_PID=$!
RR_EXTRA_PIDS+=("$CAP_PID")
rr_wait 5 grep -q capturing "$RR_T/sdrop.err" || rr_fail "capture b drop did not start: $(cat "$RR_T/sdrop.err")"
# Far more than 20 Mbit/s for a second: the shaper's queue stands, CoDel drops.
flood() {
    rr_in "$RR_NS_A" "$RR_PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.time() + 1.0
while time.time() < end:
    for _ in range(200):
        s.sendto(b"x" * 1400, (sys.argv[1], 12))' "$RR_HOST_B" 2>/dev/null
}
for _ in 1 2 3 4 5; do
    rr_alive "$CAP_PID" || break
    flood
done
rr_wait 10 eval "! rr_alive $CAP_PID" || rr_fail "capture b drop did not see 5 drops: $(cat "$RR_T/sdrop.err")"
wait "$CAP_PID" || rr_fail "capture b drop exited with $?"
n=$("$PCAP_READ" "$RR_T/sdrop.pcapng" | grep -cE '^epb .* (codel_drops|overflow_drops)$')
[ "$n" = 5 ] || rr_fail "capture b drop -c 5: $n frames with the shaper's reason: $("$PCAP_READ" "$RR_T/sdrop.pcapng")"
rr_ok "capture b drop: 5 of the shaper's drops, each with its reason ($("$PCAP_READ" "$RR_T/sdrop.pcapng" | awk '$1 == "epb" { print $5 }' | sort -u | tr '\n' ' '))"

# ---- a stalled capture reader: the lost captures in stats and metrics ----
mkfifo "$RR_T/fifo"
: >"$RR_T/slow.err"
"$RR" capture a rx -S "$RR_SOCK" -w - >"$RR_T/fifo" 2>"$RR_T/slow.err" &
slow=$!
RR_EXTRA_PIDS+=("$slow")
sleep 600 <"$RR_T/fifo" &
reader=$!
RR_EXTRA_PIDS+=("$reader")
rr_wait 5 grep -q capturing "$RR_T/slow.err" || rr_fail "the slow capture did not start: $(cat "$RR_T/slow.err")"
udp_to "$RR_NS_A" "$RR_HOST_B" 10 1500
lost_text() { "$RR" stats -S "$RR_SOCK" | sed -n 's/^driver-a (up):.*captures lost \([0-9]*\).*/\1/p'; }
rr_wait 5 eval '[ -n "$(lost_text)" ]' || rr_fail "stats does not show driver-a's lost captures: $("$RR" stats -S "$RR_SOCK" | grep '^driver-a')"
lj=$("$RR" stats --json -S "$RR_SOCK" | "$RR_PY" -c 'import json, sys; print(*(s["capture_lost"] for s in json.load(sys.stdin)["services"] if s["name"] == "driver-a"))')
lm=$("$RR" metrics -S "$RR_SOCK" | sed -n 's/^ringrouter_capture_lost_total{service="driver-a"} \([0-9]*\)$/\1/p')
[ "$lj" -gt 0 ] && [ "$lm" -gt 0 ] || rr_fail "lost captures: stats --json $lj, metrics $lm"
kill -TERM "$reader"
rr_wait 10 eval "! rr_alive $slow" || rr_fail "the capture did not end when its reader went"
wait "$slow"
rr_ok "a stalled capture reader: driver-a's lost captures in stats ($(lost_text)), stats --json ($lj), metrics ($lm)"

rr_stop
rr_census_ok
t_pass trace
