#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/afxdp_mbuf.sh: multi-buffer AF_XDP (issue 15, item 4): TCP
# aggregates larger than the MTU carried whole from the sender to the router.
#
#   ns A (TSO and checksum offload on) --veth-- [ns R: ports a, b, AF_XDP,
#   xdp_mode = skb] --veth-- ns B (offloads off)
#
# In generic XDP mode the frags-capable steering program sees the sender's
# TSO frames (up to 64 KB) whole, and the socket bound with XDP_USE_SG gets
# them as multi-buffer descriptors, which driver-a chains. The router gives
# them a GSO description (rx_agg_packets), segments them for port b
# (gso_sw_segments) and completes the partial checksums the sender left on
# the small ones (csum_rx_partial). Asserts: the log says multi-buffer on;
# 16 MB sent A -> B over TCP arrive with the same SHA-256; driver-a counted
# multi-buffer frames (rx_mb_pkts > 0, no rx_mb_bad), the router segmented
# aggregates and completed checksums, no drop for a bad GSO packet;
# iperf3 TCP A -> B runs; a clean census.
# Skips (77) without root or AF_XDP.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init afxdp_mbuf
rr_need iperf3 ethtool
rr_afxdp_init

RR_AFXDP_A_EXTRA="xdp_mode = skb" RR_AFXDP_B_EXTRA="xdp_mode = skb" rr_afxdp_up 75 76 "" mb
grep -q 'port a: AF_XDP on mba1 queue 0: copy, XDP generic, multi-buffer on' "$RR_LOG" ||
    rr_fail "port a: no multi-buffer in the log: $(grep 'AF_XDP on mba1' "$RR_LOG")"
rr_ok "port a: $(grep -o 'AF_XDP on mba1 queue 0: [^,]*, [^,]*, multi-buffer on' "$RR_LOG" | head -1)"
# A sends as a stack with offloads does: TSO frames, partial checksums.
rr_in "$NS_A" ethtool -K mba0 tx on tso on >/dev/null 2>&1 || rr_fail "ethtool -K mba0 tx on tso on"
rr_in "$NS_A" ethtool -k mba0 | grep -q '^tcp-segmentation-offload: on' || rr_fail "mba0: TSO did not come on"

# 1. 16 MB over TCP, A -> B, checked end to end.
PORT=5301
head -c 16777216 /dev/urandom >"$RR_T/data" || rr_fail "cannot make the data file"
want=$(sha256sum <"$RR_T/data" | cut -d' ' -f1)
ip netns exec "$NS_B" "$RR_PY" - "$HOST_B" $PORT "$RR_T/got" <<'PY' &
import hashlib, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
s.settimeout(30)
c, _ = s.accept()
c.settimeout(30)
h, n = hashlib.sha256(), 0
while True:
    d = c.recv(1 << 20)
    if not d:
        break
    h.update(d)
    n += len(d)
open(sys.argv[3], "w").write("%s %d\n" % (h.hexdigest(), n))
PY
RR_EXTRA_PIDS+=($!)
rr_wait 5 rr_listening "$NS_B" $PORT || rr_fail "the receiver in B did not listen"
rr_stats || rr_fail "stats"
mb0=$(rr_ctr driver-a.rx_mb_pkts) agg0=$(rr_ctr router.rx_agg_packets)
rr_in "$NS_A" timeout 60 "$RR_PY" - "$HOST_B" $PORT "$RR_T/data" <<'PY' || rr_fail "the sender in A failed"
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
s.sendall(open(sys.argv[3], "rb").read())
s.close()
PY
rr_wait 30 test -s "$RR_T/got" || rr_fail "B never finished receiving"
read -r got n <"$RR_T/got"
[ "$got" = "$want" ] && [ "$n" = 16777216 ] || rr_fail "B received $n bytes with SHA-256 $got, expected 16777216 with $want"
rr_stats || rr_fail "stats"
mb=$(($(rr_ctr driver-a.rx_mb_pkts) - mb0)) agg=$(($(rr_ctr router.rx_agg_packets) - agg0))
[ "$mb" -gt 0 ] || rr_fail "driver-a received no multi-buffer frame (rx_mb_pkts did not move)"
[ "$agg" -gt 0 ] && [ "$(rr_ctr router.gso_sw_segments)" -gt "$agg" ] ||
    rr_fail "the router segmented no aggregate: rx_agg_packets +$agg, gso_sw_segments $(rr_ctr router.gso_sw_segments)"
[ "$(rr_ctr router.csum_rx_partial)" -gt 0 ] || rr_fail "no partial checksum completed (csum_rx_partial = 0)"
for k in driver-a.rx_mb_bad router.drop_gso_bad driver-a.stale_desc; do
    [ "$(rr_ctr $k)" = 0 ] || rr_fail "$k = $(rr_ctr $k)"
done
rr_ok "16 MB A -> B intact (SHA-256 $got); driver-a: +$mb multi-buffer frames ($(rr_ctr driver-a.rx_mb_descs) descriptors in all), router: +$agg aggregates into $(rr_ctr router.gso_sw_segments) segments, $(rr_ctr router.csum_rx_partial) partial checksums completed"

# 2. iperf3 through it (no speed asserted: bench/forward measures).
rr_iperf_server "$NS_B" "$HOST_B" 5201
out=$(rr_in "$NS_A" timeout 30 iperf3 -c "$HOST_B" -p 5201 -t 2 --connect-timeout 3000 2>&1) ||
    rr_fail "iperf3 A -> B: $out"
rr_ok "iperf3 TCP A -> B: $(grep receiver <<<"$out" | awk '{ print $7, $8 }')"

rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
rr_stop
rr_census_ok
echo "PASS afxdp_mbuf"
