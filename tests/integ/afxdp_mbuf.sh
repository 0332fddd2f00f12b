#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/afxdp_mbuf.sh: multi-buffer AF_XDP (issue 15, item 4): TCP
# aggregates larger than the MTU carried whole from the sender to the router.
#
#   ns A (TSO and checksum offload on) --veth-- [ns R: ringrouter, ports a, b
#   AF_XDP with xdp_mode = skb, port c TAP] --veth-- ns B (offloads off)
#                                          \--TAP-- ns C
#
# In generic XDP mode the frags-capable steering program sees the sender's
# TSO frames (up to 64 KB) whole, and the socket bound with XDP_USE_SG gets
# them as multi-buffer descriptors, which driver-a chains. The router gives
# them a GSO description (rx_agg_packets): for port b it segments them
# (gso_sw_segments), port c (TAP) takes them whole as GSO frames; it also
# completes the partial checksums the sender left on the small ones
# (csum_rx_partial). Asserts: the log says multi-buffer on; 16 MB sent
# A -> B and 16 MB A -> C over TCP arrive with the same SHA-256; driver-a
# counted multi-buffer frames (rx_mb_pkts), the router segmented aggregates
# for b and not for c, driver-c wrote GSO frames (tx_gso_pkts); nothing
# dropped as malformed (rx_mb_bad, drop_gso_bad, the TAP's bad GSO); iperf3
# TCP A -> B runs; a clean census.
# Skips (77) without root or AF_XDP.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init afxdp_mbuf
rr_need iperf3 ethtool
rr_afxdp_init

RR_SERVICES=(router driver-a driver-b driver-c)
rr_three_ns 75 76
rr_netns c
NS_C=$RR_NS NET_C=${NET_A%.*.*}.77.${NET_A##*.} IF_C=rrt$$c
rr_veth_host "$NS_A" mba0 mba1 "$NS_R" "$HOST_A" "$GW_A"
rr_veth_host "$NS_B" mbb0 mbb1 "$NS_R" "$HOST_B" "$GW_B"
{
    printf '[router]\nname = mb%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
    printf '[port a]\ndriver = afxdp\nifname = mba1\naddress = %s/24\nxdp_mode = skb\n\n' "$GW_A"
    printf '[port b]\ndriver = afxdp\nifname = mbb1\naddress = %s/24\nxdp_mode = skb\n\n' "$GW_B"
    printf '[port c]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s.1/24\n' "$IF_C" "$NS_C" "$NET_C"
    for s in "${RR_SERVICES[@]}"; do
        printf '\n[service %s]\nhang_ms = 3000\n' "$s"
    done
} >"$RR_T/m.ini"
rr_up_in "$NS_R" "$RR_T/m.ini"
ip -n "$NS_C" addr add "$NET_C.2/24" dev "$IF_C" && ip -n "$NS_C" link set "$IF_C" up &&
    ip -n "$NS_C" route add default via "$NET_C.1" || rr_fail "host C on $IF_C"
for h in "$HOST_B" "$NET_C.2"; do
    out=$(rr_in "$NS_A" ping -n -c 2 -i 0.2 -W 2 "$h" 2>&1) || rr_fail "ping A -> $h: $out"
done
rr_ok "up: A -- a [AF_XDP, skb] router [AF_XDP, skb] b -- B, and c [TAP] -- C; A pings B and C"
grep -q 'port a: AF_XDP on mba1 queue 0: copy, XDP generic, .*, multi-buffer on$' "$RR_LOG" ||
    rr_fail "port a: no multi-buffer in the log: $(grep 'AF_XDP on mba1' "$RR_LOG")"
rr_ok "port a: $(grep -o 'AF_XDP on mba1 queue 0: copy, XDP generic, .*, multi-buffer on$' "$RR_LOG" | head -1)"
# A sends as a stack with offloads does: TSO frames, partial checksums.
rr_in "$NS_A" ethtool -K mba0 tx on tso on >/dev/null 2>&1 || rr_fail "ethtool -K mba0 tx on tso on"
rr_in "$NS_A" ethtool -k mba0 | grep -q '^tcp-segmentation-offload: on' || rr_fail "mba0: TSO did not come on"

# A file of 16 MB, sent over TCP from A to NS:DST, must arrive with its SHA-256.
head -c 16777216 /dev/urandom >"$RR_T/data" || rr_fail "cannot make the data file"
WANT=$(sha256sum <"$RR_T/data" | cut -d' ' -f1)
send_file() { # send_file NS DST PORT
    local got n
    rm -f "$RR_T/got"
    ip netns exec "$1" "$RR_PY" - "$2" "$3" "$RR_T/got" <<'PY' &
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
open(sys.argv[3] + ".tmp", "w").write("%s %d\n" % (h.hexdigest(), n))
PY
    RR_EXTRA_PIDS+=($!)
    rr_wait 5 rr_listening "$1" "$3" || rr_fail "the receiver in $1 did not listen"
    rr_in "$NS_A" timeout 60 "$RR_PY" - "$2" "$3" "$RR_T/data" <<'PY' || rr_fail "the sender in A failed"
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
s.sendall(open(sys.argv[3], "rb").read())
s.close()
PY
    rr_wait 30 eval "mv '$RR_T/got.tmp' '$RR_T/got' 2>/dev/null" || rr_fail "$2 never finished receiving"
    read -r got n <"$RR_T/got"
    [ "$got" = "$WANT" ] && [ "$n" = 16777216 ] ||
        rr_fail "$2 received $n bytes with SHA-256 $got, expected 16777216 with $WANT"
}

# 1. A -> B: aggregates in, segments out.
rr_stats || rr_fail "stats"
mb0=$(rr_ctr driver-a.rx_mb_pkts) agg0=$(rr_ctr router.rx_agg_packets)
send_file "$NS_B" "$HOST_B" 5301
rr_stats || rr_fail "stats"
mb=$(($(rr_ctr driver-a.rx_mb_pkts) - mb0)) agg=$(($(rr_ctr router.rx_agg_packets) - agg0))
[ "$mb" -gt 0 ] || rr_fail "driver-a received no multi-buffer frame (rx_mb_pkts did not move)"
[ "$agg" -gt 0 ] && [ "$(rr_ctr router.gso_sw_segments)" -gt "$agg" ] ||
    rr_fail "the router segmented no aggregate: rx_agg_packets +$agg, gso_sw_segments $(rr_ctr router.gso_sw_segments)"
[ "$(rr_ctr router.csum_rx_partial)" -gt 0 ] || rr_fail "no partial checksum completed (csum_rx_partial = 0)"
rr_ok "16 MB A -> B intact (SHA-256 $WANT); driver-a: +$mb multi-buffer frames ($(rr_ctr driver-a.rx_mb_descs) descriptors in all), router: +$agg aggregates into $(rr_ctr router.gso_sw_segments) segments, $(rr_ctr router.csum_rx_partial) partial checksums completed"

# 2. A -> C: aggregates in, whole GSO frames out of the TAP.
seg0=$(rr_ctr router.gso_sw_packets) agg0=$(rr_ctr router.rx_agg_packets) g0=$(rr_ctr driver-c.tx_gso_pkts)
send_file "$NS_C" "$NET_C.2" 5302
rr_stats || rr_fail "stats"
agg=$(($(rr_ctr router.rx_agg_packets) - agg0)) g=$(($(rr_ctr driver-c.tx_gso_pkts) - g0))
[ "$agg" -gt 0 ] && [ "$g" -gt 0 ] || rr_fail "A -> C: rx_agg_packets +$agg, driver-c tx_gso_pkts +$g (expected both > 0)"
[ "$(rr_ctr router.gso_sw_packets)" = "$seg0" ] || rr_fail "A -> C: the router segmented for the TAP"
rr_ok "16 MB A -> C intact; +$agg aggregates, driver-c wrote $g GSO frames, none segmented by the router"
for k in driver-a.rx_mb_bad router.drop_gso_bad driver-a.stale_desc driver-c.tx_drop_bad_gso; do
    [ "$(rr_ctr $k)" = 0 ] || rr_fail "$k = $(rr_ctr $k)"
done

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
