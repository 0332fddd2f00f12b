#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/capture.sh: `ringrouter capture` (docs/capture.md) on the real
# router between two TAP ports:
#   - rx with a filter: exactly the matching frames, as tcpdump -r reads them;
#   - tx, both (requests in, replies out: epb_flags), drop (TTL 1: the
#     reason as each frame's comment);
#   - a port that does not exist, a filter that does not compile, a file that
#     cannot be written: a clear error, exit 100 or 111, the router untouched;
#   - a second capture while one runs: refused (busy);
#   - a reader that stops reading: captures lost (counted), not one packet of
#     a numbered flow;
#   - a client killed with SIGKILL: the supervisor ends the capture, and the
#     next one starts;
#   - `upgrade supervisor`: the old image's capture ends (its client says
#     so), and the adopted driver's region captures for the new one.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init capture
rr_need_hard tcpdump
PCAP_READ=$RR_ROOT/tests/lib/pcapng_read.py

rr_topology
rr_start
rr_resolve
rr_faultflow_init

cap_start() { # cap_start NAME ARGS...: a capture in the background, CAP_PID; waits until it runs
    local name=$1
    shift
    : >"$RR_T/$name.err"
    "$RR" capture "$@" -S "$RR_SOCK" 2>"$RR_T/$name.err" &
    CAP_PID=$!
    RR_EXTRA_PIDS+=("$CAP_PID")
    rr_wait 5 grep -q capturing "$RR_T/$name.err" || rr_fail "capture $name did not start: $(cat "$RR_T/$name.err")"
}
cap_done() { # cap_done NAME: the capture ends by itself (-c) within 10 s, exit 0
    rr_wait 10 eval "! rr_alive $CAP_PID" || rr_fail "capture $1 did not end: $(cat "$RR_T/$1.err")"
    wait "$CAP_PID" || rr_fail "capture $1 exited with $?: $(cat "$RR_T/$1.err")"
}
udp_to() { # udp_to NS DST PORT N
    rr_in "$1" bash -c "for i in \$(seq $4); do echo x$3 >/dev/udp/$2/$3; done" || rr_fail "udp to $2:$3"
}

# ---- rx, filtered ----
cap_start rx a rx -c 10 'udp port 9' -w "$RR_T/rx.pcapng"
for _ in 1 2 3 4 5 6; do
    udp_to "$RR_NS_A" "$RR_HOST_B" 10 2
    udp_to "$RR_NS_A" "$RR_HOST_B" 9 2
done
cap_done rx
all=$(tcpdump -nn -r "$RR_T/rx.pcapng" 2>/dev/null | wc -l)
match=$(tcpdump -nn -r "$RR_T/rx.pcapng" 'udp dst port 9' 2>/dev/null | wc -l)
[ "$all" = 10 ] && [ "$match" = 10 ] || rr_fail "rx 'udp port 9' -c 10: $all frames, $match to port 9"
"$PCAP_READ" "$RR_T/rx.pcapng" | grep -q "^idb a 2048$" || rr_fail "no interface block for port a (snaplen 2048): $("$PCAP_READ" "$RR_T/rx.pcapng" 2>&1 | sed -n 1,3p)"
[ "$("$PCAP_READ" "$RR_T/rx.pcapng" | grep -c '^epb .* in -$')" = 10 ] || rr_fail "rx frames not marked inbound"
rr_ok "rx 'udp port 9' -c 10: 10 frames, all to port 9, as tcpdump -r reads them"

# ---- tx ----
cap_start tx a tx -c 4 icmp -w "$RR_T/tx.pcapng"
rr_in "$RR_NS_B" ping -n -c 4 -i 0.1 -W 2 "$RR_HOST_A" >/dev/null || rr_fail "ping B -> A"
cap_done tx
n=$(tcpdump -nn -r "$RR_T/tx.pcapng" "icmp[icmptype] == icmp-echo and dst host $RR_HOST_A" 2>/dev/null | wc -l)
[ "$n" = 4 ] || rr_fail "tx icmp -c 4: $n echo requests to A: $(tcpdump -nn -r "$RR_T/tx.pcapng" 2>&1)"
rr_ok "tx icmp -c 4: the 4 echo requests B sent A"

# ---- both: to stdout, read by tcpdump -r - ----
cap_start both a both -c 40 icmp -w - >"$RR_T/both.pcapng"
rr_in "$RR_NS_A" ping -n -c 20 -i 0.05 -W 2 "$RR_HOST_B" >/dev/null || rr_fail "ping A -> B"
cap_done both
req=$(tcpdump -nn -r - icmp[icmptype] == icmp-echo <"$RR_T/both.pcapng" 2>/dev/null | wc -l)
rep=$(tcpdump -nn -r - icmp[icmptype] == icmp-echoreply <"$RR_T/both.pcapng" 2>/dev/null | wc -l)
[ "$req" = 20 ] && [ "$rep" = 20 ] || rr_fail "both icmp -c 40: $req requests, $rep replies"
dirs=$("$PCAP_READ" "$RR_T/both.pcapng" | awk '$1 == "epb" { print $4 }' | sort | uniq -c | tr -s ' \n' ' ')
[ "$dirs" = " 20 in 20 out " ] || rr_fail "both: directions $dirs"
if command -v tshark >/dev/null; then
    n=$(tshark -r "$RR_T/both.pcapng" -Y icmp 2>/dev/null | wc -l)
    [ "$n" = 40 ] || rr_fail "tshark -r reads $n ICMP frames of 40"
fi
rr_ok "both icmp -c 40 (-w -): 20 pings, 20 requests in, 20 replies out"

# ---- drop: TTL 1 ----
# icmp: the namespace's own IPv6 link-scope multicast (MLD, solicitations)
# is dropped too, at any moment, with its own reason.
cap_start drop a drop -c 3 icmp -w "$RR_T/drop.pcapng"
rr_in "$RR_NS_A" ping -n -c 3 -i 0.1 -W 1 -t 1 "$RR_HOST_B" >/dev/null
cap_done drop
n=$("$PCAP_READ" "$RR_T/drop.pcapng" | grep -c '^epb .* drop_ttl_exceeded$')
[ "$n" = 3 ] || rr_fail "drop -c 3 of TTL-1 pings: $n frames with reason drop_ttl_exceeded: $("$PCAP_READ" "$RR_T/drop.pcapng")"
if command -v tshark >/dev/null; then
    tshark -r "$RR_T/drop.pcapng" -T fields -e frame.comment 2>/dev/null | grep -q drop_ttl_exceeded ||
        rr_fail "tshark does not read the drop reason"
fi
rr_ok "drop -c 3 icmp: 3 TTL-1 echoes, each with its reason drop_ttl_exceeded"

# ---- bad input ----
bad() { # bad RC WHAT ARGS...
    local rc=$1 what=$2 out got
    shift 2
    out=$("$RR" capture "$@" -S "$RR_SOCK" 2>&1 >/dev/null)
    got=$?
    [ "$got" = "$rc" ] && grep -q "$what" <<<"$out" || rr_fail "capture $*: exit $got, '$out' (expected $rc, $what)"
}
bad 100 'no port "nope"' nope rx -w "$RR_T/x.pcapng"
bad 100 'syntax error' a rx 'udp port' -w "$RR_T/x.pcapng"
bad 111 'No such file' a rx -w "$RR_T/no/such/dir/x.pcapng"
bad 100 'a count' a -c 0 -w "$RR_T/x.pcapng"
rr_ok "bad port, filter, file: exit 100, 100, 111 with their messages"

# ---- a reader that stops reading ----
mkfifo "$RR_T/fifo"
: >"$RR_T/slow.err"
"$RR" capture a rx -S "$RR_SOCK" -w - >"$RR_T/fifo" 2>"$RR_T/slow.err" &
slow=$!
RR_EXTRA_PIDS+=("$slow")
sleep 600 <"$RR_T/fifo" &
reader=$!
RR_EXTRA_PIDS+=("$reader")
rr_wait 5 grep -q capturing "$RR_T/slow.err" || rr_fail "the slow capture did not start: $(cat "$RR_T/slow.err")"
bad 100 'busy' b tx -w "$RR_T/busy.pcapng"
rr_ok "a second capture while one runs: refused (busy)"
rr_ff_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" 3000
sleep 3 # the flow's length: what it asserts is the whole of it, not a timing
rr_ff_whole "under a capture whose reader stopped"
ended=$(grep -c "capture a: ended" "$RR_LOG")
kill -TERM "$reader"
rr_wait 10 eval "! rr_alive $slow" || rr_fail "the capture did not end when its reader went"
wait "$slow"
lost=$(sed -n 's/^\([0-9]*\) captures lost$/\1/p' "$RR_T/slow.err")
[ -n "$lost" ] && [ "$lost" -gt 0 ] || rr_fail "the stalled capture lost nothing? $(cat "$RR_T/slow.err")"
rr_ok "a stalled reader: $lost captures lost, the flow whole ($RR_FF_SAID)"

# ---- a killed client ----
ended_after() { [ "$(grep -c "capture a: ended" "$RR_LOG")" -gt "$1" ]; }
rr_wait 5 ended_after "$ended" || rr_fail "the supervisor did not end the slow capture"
ended=$(grep -c "capture a: ended" "$RR_LOG")
cap_start killed a rx -w "$RR_T/killed.pcapng"
kill -KILL "$CAP_PID"
wait "$CAP_PID" 2>/dev/null
rr_wait 5 ended_after "$ended" || rr_fail "a killed client's capture was not ended"
cap_start after b rx -c 1 -w "$RR_T/after.pcapng"
rr_in "$RR_NS_B" ping -n -c 1 -W 2 "$RR_HOST_A" >/dev/null || rr_fail "ping B -> A"
cap_done after
rr_ok "a client killed by SIGKILL: its capture ended, the next one ran"

# ---- upgrade supervisor: a capture of the old image ends, the regions are adopted ----
cap_start stale a rx -w "$RR_T/stale.pcapng"
mark=$(wc -l <"$RR_LOG")
out=$("$RR" upgrade supervisor -S "$RR_SOCK" 2>&1) || rr_fail "upgrade supervisor: $out"
rr_wait 10 eval 'tail -n +$mark "$RR_LOG" | grep -q "adopting [0-9]* running services"' ||
    rr_fail "the re-exec'd supervisor did not adopt: $(tail -n +"$mark" "$RR_LOG")"
rr_wait 10 rr_all_up || rr_fail "not every service up after upgrade supervisor"
rr_wait 5 eval "! rr_alive $CAP_PID" || rr_fail "the old image's capture client did not stop"
grep -q "the supervisor ended the capture" "$RR_T/stale.err" || rr_fail "the stale client said: $(cat "$RR_T/stale.err")"
cap_start adopted a rx -c 2 icmp -w "$RR_T/adopted.pcapng"
rr_in "$RR_NS_A" ping -n -c 2 -i 0.1 -W 2 "$RR_HOST_B" >/dev/null || rr_fail "ping A -> B after the re-exec"
cap_done adopted
rr_ok "upgrade supervisor: the old capture ended, the adopted driver's region captures"

rr_stop
rr_census_ok
t_pass capture
