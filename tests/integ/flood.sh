#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/flood.sh: a flood must not hurt (issue 15). trafgen's maximum
# rate of 64-byte UDP A -> B for FLOOD_SECS (10) seconds, beside a numbered
# stream of 1,000 datagrams a second A -> B (bench/faultflow); then the flood
# stops and the stream goes on for 3 s:
#   1. over TAP ports (rr_topology);
#   2. over AF_XDP ports on veth (copy mode, busy polling as by default),
#      the supervisor in its own namespace R.
# Each asserts: every datagram of the stream sent from 1 s after the flood's
# end on arrived (a router that recovers from overload recovers at once);
# the router forwarded during the flood (it did not livelock into
# forwarding nothing); no service restarted (none starved past its hang
# limit); a clean census (every buffer back). It asserts delivery, not a
# rate: bench/forward measures rates.
# Skips (77) without root or trafgen; the AF_XDP half also without AF_XDP.
# FLOOD_SECS: the flood's length; FLOOD_DEBUG=1: `ringrouter stats`, the
# source device's counters and trafgen's output after each flood.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init flood
rr_need ss trafgen
rr_faultflow_init

# 10 s: over three times the tests' hang_ms (3 s, tests/lib/router.sh) and
# millions of frames: a livelock shows as nothing forwarded, a starved
# service as a restart within one hang_ms, a leak as a census short of
# buffers, each well before the end; longer floods are bench/forward's.
SECS=${FLOOD_SECS:-10}
UPORT=9301

# flood LABEL NS_SRC DEV DST_MAC NS_DST DST: the flood and the stream, then
# the checks.
flood() {
    local label=$1 src=$2 dev=$3 dmac=$4 dst=$5 to=$6 smac saddr recv send fwd0 fwd1 t_end
    smac=$(rr_in "$src" cat "/sys/class/net/$dev/address")
    saddr=$(rr_in "$src" ip -4 -o addr show dev "$dev" | awk '{ sub("/.*", "", $4); print $4 }')
    # To the discard port: B's kernel answers nothing that could load the way back.
    echo "{ eth(da=$dmac, sa=$smac, type=0x0800), ipv4(saddr=$saddr, daddr=$to, ttl=64, df), udp(sp=10000, dp=$((UPORT + 1))), fill(0x00, 18) }" >"$RR_T/$label.cfg"
    ip netns exec "$dst" "$RR_T/bin/faultflow" recv "$to" $UPORT "$RR_T/$label.bits" 2>"$RR_T/$label.recv" &
    recv=$!
    RR_EXTRA_PIDS+=("$recv")
    rr_wait 5 eval "rr_in $dst ss -Hlun 'sport = :$UPORT' | grep -q ." || rr_fail "$label: the sink did not bind"
    # A sink for the flood too, so that B sends no port unreachable back.
    ip netns exec "$dst" "$RR_T/bin/faultflow" recv "$to" $((UPORT + 1)) "$RR_T/$label.fbits" 2>/dev/null &
    RR_EXTRA_PIDS+=($!)
    ip netns exec "$src" "$RR_T/bin/faultflow" send "$to" $UPORT 1000 "$RR_T/$label.send" 2>"$RR_T/$label.serr" &
    send=$!
    RR_EXTRA_PIDS+=("$send")
    rr_msleep 500
    rr_stats || rr_fail "$label: stats"
    fwd0=$(rr_ctr router.forwarded)
    # A rate above what it can reach: trafgen then sends at its maximum, one
    # frame a call, and goes on when the device pushes back (EAGAIN); its
    # TX_RING mode gives up on that.
    rr_trafgen_start "$src" "$dev" "$RR_T/$label.cfg" -b 10000000pps
    rr_msleep $((SECS * 1000))
    rr_stats || rr_fail "$label: stats during the flood"
    fwd1=$(rr_ctr router.forwarded)
    rr_trafgen_stop
    [ -z "${FLOOD_DEBUG:-}" ] || { "$RR" stats -S "$RR_SOCK"; ip -n "$src" -s link show "$dev"; cat "$RR_T/trafgen.log"; }
    t_end=${EPOCHREALTIME/[.,]/}
    rr_ok "$label: $SECS s of trafgen at its maximum: the router forwarded $((fwd1 - fwd0)) packets meanwhile"
    [ $((fwd1 - fwd0)) -gt $((SECS * 1000)) ] ||
        rr_fail "$label: the router forwarded $((fwd1 - fwd0)) packets in $SECS s of flood: fewer than the stream alone"
    rr_msleep 3000
    kill -TERM "$send"
    rr_wait 5 eval "! rr_alive $send" || rr_fail "$label: the sender did not stop"
    wait "$send" || rr_fail "$label: the sender exited with status $?"
    # What is in flight arrives: nothing left inside ringrouter (bounded),
    # then the sink, which reads what its socket holds before it stops.
    rr_wait 5 rr_drained || rr_fail "$label: ringrouter still held packets 5 s after the stream"
    kill -TERM "$recv"
    rr_wait 5 eval "! rr_alive $recv" || rr_fail "$label: the sink did not stop"
    wait "$recv" || rr_fail "$label: the sink exited with status $?"
    "$RR_PY" - "$RR_T/$label.send" "$RR_T/$label.bits" "$t_end" "$RR_T/$label.serr" >"$RR_T/$label.check" 2>&1 <<'EOF_PY' ||
import sys
log, bits, t_end = sys.argv[1], open(sys.argv[2], "rb").read(), int(sys.argv[3])
sent = int(open(sys.argv[4]).read().split()[1])  # "sent N errors E"
ticks = [tuple(map(int, l.split())) for l in open(log) if l.strip()]
# The first sequence number sent 1 s after the flood's end, and the last sent.
first = next((s for s, t in ticks if t >= t_end + 1000000), None)
assert first is not None, "the sender sent nothing 1 s after the flood's end"
last = sent - 1
have = lambda s: s // 8 < len(bits) and bits[s // 8] >> (s % 8) & 1
lost = [s for s in range(first, last + 1) if not have(s)]
during = sum(1 for s in range(0, first) if not have(s))
assert not lost, "%d of the %d datagrams sent from 1 s after the flood's end were lost (first %r)" % (
    len(lost), last - first + 1, lost[:5])
print("all %d datagrams sent from 1 s after the flood's end arrived (%d of the %d before were lost, in the flood)" % (
    last - first + 1, during, first))
EOF_PY
        rr_fail "$label: $(cat "$RR_T/$label.check")"
    rr_ok "$label: $(cat "$RR_T/$label.check")"
}

# ---- 1. TAP ----
rr_topology
rr_start
rr_ok "up: A $RR_HOST_A -- [TAP a, router, TAP b] -- B $RR_HOST_B"
rr_resolve
flood tap "$RR_NS_A" "$RR_IF_A" "$RR_MAC_A" "$RR_NS_B" "$RR_HOST_B"
rr_no_restarts
rr_ok "tap: no service restarted"
rr_stop
rr_census_ok

# ---- 2. AF_XDP ----
grep -qw '^XDP' /proc/net/protocols 2>/dev/null || rr_skip "TAP passed; the kernel has no AF_XDP sockets for the second half"
rr_afxdp_init
rr_afxdp_up 77 78 x f
xmac=$(rr_in "$NS_R" cat /sys/class/net/fa1/address)
flood afxdp "$NS_A" fa0 "$xmac" "$NS_B" "$HOST_B"
rr_no_restarts
rr_ok "afxdp: no service restarted"
rr_stop
rr_census_ok
echo "PASS flood"
