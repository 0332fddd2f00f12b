#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/bench_pacing.sh: the paced generator bench/forward's fixed
# rates come from (bench/trainsend.c, bench/README.md "The
# generator") holds its rate as short trains, not as a second's quota at once
# (what `trafgen -b` does), on a bare veth pair of its own:
#   1. 20 kpps as trains of 32 (one every 1.6 ms) for 2 s, the sink's
#      rx_packets read about every 20 ms: between any two readings no more
#      arrived than the trains due in that time and the 5 a late wake-up may
#      send at once (the generator never falls more than 4 intervals behind,
#      whatever the machine's load: a bound, not a rate); at least one
#      reading saw part of the run, not the whole of it; every frame the
#      pair took arrived;
#   2. FLOWS 1: every frame from one UDP source port; 3: three;
#   3. bad arguments end it with exit 100 naming the argument;
#   4. -x (XDP frames through the kernel's XDP generator): into a sink with
#      no NAPI (GRO off) not one frame arrives (the kernel drops them at
#      the redirect, within the run, counted by no device); with GRO on
#      every frame arrives and none of the earlier ones; FLOWS 3 gives
#      three source ports; and the program it attached to the namespace's
#      loopback (for the kernel's XDP dispatcher) is gone after it exits.
# Skips (77) without root.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/common.sh
t_seed
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
TS=build/bin/trainsend
[ -x "$TS" ] || { echo "FAIL: $TS is not built"; exit 1; }
id=$$
G=rrpace$id-g S=rrpace$id-s
T=$(mktemp -d /tmp/rr-pacing.XXXXXX)
gpid=
cleanup() {
    [ -z "$gpid" ] || kill -KILL "$gpid" 2>/dev/null
    ip netns del "$G" 2>/dev/null
    ip netns del "$S" 2>/dev/null
    rm -rf "$T"
}
trap 'rc=$?; cleanup; exit $(t_exit_rc $rc)' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for ns in "$G" "$S"; do
    ip netns add "$ns" || fail "cannot make namespace $ns"
    # No IPv6: its solicitations would be frames the sink counts.
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip link add pg0 netns "$G" type veth peer name ps0 netns "$S" || fail "cannot make a veth pair"
ip -n "$G" link set pg0 up || fail "cannot bring pg0 up"
ip -n "$S" link set ps0 up || fail "cannot bring ps0 up"
dmac=$(ip netns exec "$S" cat /sys/class/net/ps0/address)
rx() { ip netns exec "$S" cat /sys/class/net/ps0/statistics/rx_packets; }

# 1. The bound between readings.
TRAIN=32 PPS=20000
INTERVAL=$((TRAIN * 1000000000 / PPS)) # ns
r0=$(rx)
ip netns exec "$G" "$TS" pg0 "$dmac" 10.250.1.1 10.250.1.2 "$TRAIN" 0 "${INTERVAL}ns" 1 >"$T/out" 2>&1 &
gpid=$!
: >"$T/samples"
end=$(($(date +%s%N) + 2000000000))
while :; do
    # The count was read between the two clock readings around it.
    t0=$(date +%s%N)
    n=$(($(rx) - r0))
    t1=$(date +%s%N)
    echo "$t0 $t1 $n" >>"$T/samples"
    [ "$t1" -lt "$end" ] || break
    sleep 0.02
done
kill -INT "$gpid"
wait "$gpid" || fail "trainsend exited $? on SIGINT: $(cat "$T/out")"
gpid=
read -r sent refused late < <(awk '/^sent [0-9]+ refused [0-9]+ late [0-9]+$/ {print $2, $4, $6}' "$T/out")
[ -n "${sent:-}" ] || fail "no count from trainsend: $(cat "$T/out")"
# What is still on its way: until all of it arrived, 5 s at most.
for _ in $(seq 50); do
    got=$(($(rx) - r0))
    [ "$got" -lt "$sent" ] || break
    sleep 0.1
done
# A refusal (the sink's backlog full, on a machine too loaded to drain it)
# is the generator's to count, not a fault of its pacing.
[ "$refused" = 0 ] || echo "  note: the pair refused $refused frames"
[ "$got" = "$sent" ] || fail "$sent frames sent, $got arrived"
# Readings are (clock before, clock after, frames so far) in order; what
# arrived between two was sent within [before of the first, after of the
# second], which may hold no more than the trains due over it and
# MAX_LATE + 1 (bench/trainsend.c).
worst=$(awk -v tr="$TRAIN" -v iv="$INTERVAL" '
    NR > 1 { n = $3 - pn; w = $2 - pt; lim = (int(w / iv) + 6) * tr
             if (n > lim) { printf "%d frames in %.1f ms (at most %d)\n", n, w / 1e6, lim; exit } }
    { pt = $1; pn = $3 }' "$T/samples")
[ -z "$worst" ] || fail "a train longer than the pacing allows: $worst between two readings"
parts=$(awk -v all="$got" '$3 > 0 && $3 < all {n++} END {print n + 0}' "$T/samples")
[ "$parts" -gt 0 ] || fail "no reading saw part of the run: the frames came all at once or not during it"
[ "$sent" -gt $((PPS / 4)) ] || fail "only $sent frames in 2 s at $PPS pps"
echo "ok 1: $sent frames in trains of $TRAIN, $(wc -l <"$T/samples") readings, the most between two within the pacing; late $late"

# 2. Flows: the UDP source ports of 64 frames sent with FLOWS, read at the
#    sink by an AF_PACKET socket (python3, in the sink's namespace).
ports() { # FLOWS [OPTION...]: the distinct source ports, in order
    rm -f "$T/ready"
    ip netns exec "$S" python3 - "$T/ready" >"$T/ports" 2>&1 <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind(("ps0", 0))
s.settimeout(5)
open(sys.argv[1], "w").close()
seen = set()
try:
    for _ in range(64):
        f = s.recv(2048)
        if len(f) >= 36 and f[23] == 17:  # IPv4 (no options), UDP
            seen.add(int.from_bytes(f[34:36], "big"))
except socket.timeout:
    pass
print(" ".join(map(str, sorted(seen))))
EOF
    local lpid=$!
    for _ in $(seq 50); do [ -e "$T/ready" ] && break; sleep 0.1; done
    [ -e "$T/ready" ] || { kill "$lpid" 2>/dev/null; return 1; }
    ip netns exec "$G" "$TS" "${@:2}" pg0 "$dmac" 10.250.1.1 10.250.1.2 64 1 1 "$1" >/dev/null || return 1
    wait "$lpid" || return 1
    cat "$T/ports"
}
p1=$(ports 1) || fail "the flow capture failed"
[ "$p1" = 10000 ] || fail "FLOWS 1: source ports \"$p1\", want \"10000\""
p3=$(ports 3) || fail "the flow capture failed"
[ "$p3" = "10000 10001 10002" ] || fail "FLOWS 3: source ports \"$p3\", want \"10000 10001 10002\""
echo "ok 2: FLOWS 1 -> port $p1; FLOWS 3 -> ports $p3"

# 3. Bad arguments.
bad() { # WANT ARGS...: exit 100 and a message naming WANT
    local out rc
    out=$("$TS" "${@:2}" 2>&1)
    rc=$?
    [ "$rc" = 100 ] || fail "trainsend ${*:2}: exit $rc, want 100 ($out)"
    [[ $out == *"$1"* ]] || fail "trainsend ${*:2}: \"$out\" does not name $1"
}
bad INTERVAL lo 00:00:00:00:00:01 10.0.0.1 10.0.0.2 32 1 5xs
bad INTERVAL lo 00:00:00:00:00:01 10.0.0.1 10.0.0.2 32 1 0us
bad INTERVAL lo 00:00:00:00:00:01 10.0.0.1 10.0.0.2 32 1 us
bad FLOWS lo 00:00:00:00:00:01 10.0.0.1 10.0.0.2 32 1 1ms 0
bad TRAINS lo 00:00:00:00:00:01 10.0.0.1 10.0.0.2 32 -1
bad TRAIN lo 00:00:00:00:00:01 10.0.0.1 10.0.0.2 0 1
bad DST_MAC lo 00:00:00:00:00 10.0.0.1 10.0.0.2 32 1
echo "ok 3: bad INTERVAL, FLOWS, TRAINS, TRAIN and DST_MAC refused by name"

# 4. XDP frames (-x).
OBJ=build/bin/xdpgen.bpf.o
[ -f "$OBJ" ] || fail "$OBJ is not built"
lo_xdp() { ip -n "$G" link show lo | grep -c xdp; }
ip netns exec "$S" ethtool -K ps0 gro off >/dev/null
r0=$(rx)
ip netns exec "$G" "$TS" -x "$OBJ" pg0 "$dmac" 10.250.1.1 10.250.1.2 64 1 1 1 >"$T/out" 2>&1 ||
    fail "trainsend -x exited $?: $(cat "$T/out")"
grep -q '^sent 64 refused 0 late 0$' "$T/out" || fail "trainsend -x: \"$(cat "$T/out")\", want \"sent 64 refused 0 late 0\""
# The redirect enqueues or drops within the run, so nothing is on its way
# now; and should any of these 64 arrive later, the count below (from the
# same r0) ends at 1,088, not 1,024.
[ "$(($(rx) - r0))" = 0 ] || fail "XDP frames into a sink without NAPI: $(($(rx) - r0)) arrived, want 0"
ip netns exec "$S" ethtool -K ps0 gro on >/dev/null || fail "cannot turn GRO on at ps0"
ip netns exec "$G" "$TS" -x "$OBJ" pg0 "$dmac" 10.250.1.1 10.250.1.2 256 4 1ms 1 >"$T/out" 2>&1 ||
    fail "trainsend -x exited $?: $(cat "$T/out")"
for _ in $(seq 50); do
    [ "$(($(rx) - r0))" -lt 1024 ] || break
    sleep 0.1
done
[ "$(($(rx) - r0))" = 1024 ] || fail "trainsend -x: 64 frames without NAPI, then 4 trains of 256 with it: $(($(rx) - r0)) arrived, want 1024"
x3=$(ports 3 -x "$OBJ") || fail "the flow capture of -x failed"
[ "$x3" = "10000 10001 10002" ] || fail "-x FLOWS 3: source ports \"$x3\", want \"10000 10001 10002\""
[ "$(lo_xdp)" = 0 ] || fail "trainsend -x left its program on lo: $(ip -n "$G" link show lo)"
echo "ok 4: -x: no frame without NAPI, 1,024 of 1,024 with it, FLOWS 3 -> ports $x3, lo clean after"
t_pass "the paced generator: trains of $TRAIN at $PPS pps within the pacing, flows by source port, bad arguments named, XDP frames with -x"
