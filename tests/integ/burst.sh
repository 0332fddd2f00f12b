#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/burst.sh: bursts at a low average rate (issue 15). Real traffic
# comes in trains (TSO, microbursts): a router loaded at a few percent of its
# capacity must absorb a train as long as its rings, as Linux's backlog does.
#
# Trains of TRAIN_LEN (1,000) back-to-back 64-byte numbered datagrams every
# 100 ms, TRAINS (20) of them, 10,000 a second on average, A -> B through
# the router (bench/faultflow train / recv); then half as many trains twice
# as long, longer than a ring (1,024 slots): the router's hold queue and the
# driver's backlog take what the ring cannot (docs/drivers.md, "Bursts"):
#   1. over TAP ports (rr_topology, the demo's kind of manifest); then one
#      train of 7,000 into a B slowed by tc filters: the router's
#      backpressure (rx_paused) keeps what its hold queue cannot take in
#      the TAP's queue, and nothing is dropped;
#   2. over AF_XDP ports on veth (copy mode, busy_poll = no: see there),
#      the supervisor in its own namespace R.
# The TAP devices' queues are queue_len's default, 4096 frames long.
# Each asserts that every datagram arrived, once; that nothing was dropped
# inside ringrouter (no ring-full, backlog or fill-ring drop counted); no
# restart; a clean census. Losses are printed with the counters that show
# where they happened. Skips (77) without root; the AF_XDP half also without
# AF_XDP sockets.
# TRAIN_LEN, TRAINS: to try other trains by hand.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init burst
rr_need ss
rr_faultflow_init

LEN=${TRAIN_LEN:-1000}
TRAINS=${TRAINS:-20}
UPORT=9300

# Where a loss happened: ringrouter's nonzero drop counters, and the
# devices' own drops (a TAP's queue overflowing shows as tx_dropped on the
# host's side).
drops() {
    local k where="" ns d
    rr_stats
    for k in "${!RRS[@]}"; do
        case $k in
        *drop* | *full* | *empty* | *nobufs* | *dropped* | *backlog_max | *eagain*) [ "${RRS[$k]}" = 0 ] || where+=" $k=${RRS[$k]}" ;;
        esac
    done
    for ns in "${RR_NETNS[@]}"; do
        for d in $(ip -n "$ns" -o link show | awk -F': ' '$2 != "lo" { sub("@.*", "", $2); print $2 }'); do
            where+=" $ns/$d:$(ip -n "$ns" -s -j link show "$d" | "$RR_PY" -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]; print("rx_drop=%d,tx_drop=%d" % (s["rx"]["dropped"], s["tx"]["dropped"]))')"
        done
    done
    echo "nonzero drop counters:${where:- none}"
}

# ringrouter's own drops (rings, the router, the drivers' backlogs), as
# sorted "key=value" words; not the kernel's side of an XSK.
inside_drops() {
    local k
    rr_stats
    for k in "${!RRS[@]}"; do
        case $k in
        *xsk_* | *fill_empty | *tx_empty | *drop6*) ;; # the kernel's side of an XSK; IPv6 (the hosts' own multicast)
        *drop* | *full* | *nobufs*) [ "${RRS[$k]}" = 0 ] || echo "$k=${RRS[$k]}" ;;
        esac
    done | sort | tr '\n' ' '
}

# ns_tx_drops NS: frames NS's own links could not hand to their peers, summed.
# On an AF_XDP port's sending host that is the veth's receive ring (the
# peer's NAPI queue, 256 frames) full: the NAPI, which driver-a runs by busy
# polling, was not run in time, as a NIC's overrun RX ring.
ns_tx_drops() {
    ip -n "$1" -s -j link show | "$RR_PY" -c 'import json,sys
print(sum(l["stats64"]["tx"]["dropped"] for l in json.load(sys.stdin) if l["ifname"] != "lo"))'
}

# trains LABEL NS_SRC NS_DST DST TX_COUNTER: the trains, then the checks.
trains() {
    local label=$1 src=$2 dst=$3 to=$4 txc=$5 tx0 recv
    local TOTAL=$((LEN * TRAINS)) fe0 inside0 sd0
    rr_stats || rr_fail "$label: stats"
    sd0=$(ns_tx_drops "$src")
    tx0=$(rr_ctr "$txc")
    fe0=$(rr_ctr driver-a.xsk_fill_empty)
    inside0=$(inside_drops)
    ip netns exec "$dst" "$RR_T/bin/faultflow" recv "$to" $UPORT "$RR_T/$label.bits" 2>"$RR_T/$label.recv" &
    recv=$!
    RR_EXTRA_PIDS+=("$recv")
    rr_wait 5 eval "rr_in $dst ss -Hlun 'sport = :$UPORT' | grep -q ." || rr_fail "$label: the sink did not bind"
    ip netns exec "$src" "$RR_T/bin/faultflow" train "$to" $UPORT "$LEN" 100 "$TRAINS" 2>"$RR_T/$label.send"
    local rc=$?
    [ $rc = 0 ] || rr_fail "$label: faultflow train exited $rc: $(cat "$RR_T/$label.send")"
    grep -q "^sent $TOTAL errors 0$" "$RR_T/$label.send" ||
        rr_fail "$label: the sender did not send every datagram: $(cat "$RR_T/$label.send")"
    # What ringrouter sent out is in flight to the sink: wait for the count
    # (bounded); a loss shows as a count that stops short.
    delivered() { rr_stats && [ $(($(rr_ctr "$txc") - tx0)) -ge "$TOTAL" ]; }
    rr_wait 5 delivered
    kill -TERM "$recv"
    rr_wait 5 eval "! rr_alive $recv" || rr_fail "$label: the sink did not stop"
    wait "$recv" || rr_fail "$label: the sink exited with status $?"
    local got dup
    read -r got dup < <(awk '{ print $2, $6 }' "$RR_T/$label.recv")
    if [ "$got" != "$TOTAL" ] || [ "$dup" != 0 ]; then
        rr_stats
        local fe=$(($(rr_ctr driver-a.xsk_fill_empty) - fe0))
        local sd=$(($(ns_tx_drops "$src") - sd0))
        # Every loss where the kernel found no frame to receive into or its
        # device queue full, and no drop inside ringrouter: driver-a was not
        # run in time to lend the kernel more frames than its fill ring
        # holds (a train is longer) or to poll the NAPI, a loaded machine's
        # doing. Only for AF_XDP: a TAP's queue is ringrouter's to drain.
        if [ "$dup" = 0 ] && [ "$label" != "${label#afxdp}" ] &&
            [ $((fe + sd)) -ge $((TOTAL - got)) ] && [ "$(inside_drops)" = "$inside0" ]; then
            t_timing_fail "$label: $((TOTAL - got)) of $TOTAL datagrams lost, all in the kernel before ringrouter (xsk_fill_empty +$fe, the sender's veth tx_dropped +$sd) and none inside ringrouter: driver-a was not scheduled in time"
            FILL_LATE=1 # no_drops below: the kernel's count of them is no news
            return
        fi
        rr_fail "$label: $got of $TOTAL datagrams arrived ($dup duplicates) in trains of $LEN; sent out $(($(rr_ctr "$txc") - tx0)); xsk_fill_empty +$fe; the sender's veth tx_dropped +$sd; ringrouter's drops [$inside0] -> [$(inside_drops)]; $(drops)"
    fi
    rr_ok "$label: all $TOTAL datagrams of $TRAINS trains of $LEN arrived, none twice ($(cat "$RR_T/$label.send"))"
}

# Drops counted inside ringrouter: none may be nonzero after the trains.
no_drops() { # no_drops LABEL COUNTER...
    local label=$1 c
    shift
    rr_stats || rr_fail "$label: stats"
    for c in "$@"; do
        [ -n "${RRS[$c]+x}" ] || rr_fail "$label: no counter $c in stats --json"
        [ "${RRS[$c]}" = 0 ] || rr_fail "$label: $c = ${RRS[$c]} after the trains, expected 0"
    done
}

# ---- 1. TAP ----
rr_topology
rr_start
rr_ok "up: A $RR_HOST_A -- [TAP a, router, TAP b] -- B $RR_HOST_B"
for x in "$RR_NS_A $RR_IF_A" "$RR_NS_B $RR_IF_B"; do
    read -r ns ifn <<<"$x"
    q=$(rr_in "$ns" cat "/sys/class/net/$ifn/tx_queue_len")
    [ "$q" = 4096 ] || rr_fail "$ifn's queue is $q frames long, expected queue_len's default 4096"
done
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
trains tap "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" driver-b.tx_pkts
LEN=$((LEN * 2)) TRAINS=$((TRAINS / 2)) trains tap2 "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" driver-b.tx_pkts
no_drops tap driver-a.rx_drop_ring_full driver-b.tx_drop_backlog router.drop_tx_full

# A receiver slower than the router: B's receive (which a TAP write runs,
# in driver-b) through u32 filters that match nothing (no action: this
# kernel may have no action modules), then one train of SLOW_LEN datagrams,
# more than the router's input ring, hold queue and output ring together
# (1,024 + 2,048 + 1,024). The router's backpressure (services/router/
# main.c) leaves the excess in its input ring and A's TAP queue, and what
# that queue cannot take the kernel drops there, before ringrouter: the
# ring to driver-b drops none, nothing is dropped inside ringrouter, and
# every datagram either arrives or is counted in A's TAP's tx_dropped.
# rx_paused must grow. How slow SLOW_FILTERS filters make B depends on the
# machine, so an attempt where rx_paused did not grow (B no slower than the
# router) adds SLOW_STEP filters and sends the train again, SLOW_TRIES
# attempts in all; after the last, a timing failure (the check did not
# happen, not a wrong result). Not too many: a B slower than the pause's
# bound can drain (512 frames in 20 ms) overflows the hold queue by design.
SLOW_FILTERS=${SLOW_FILTERS:-1500}
SLOW_STEP=${SLOW_STEP:-750}
SLOW_TRIES=${SLOW_TRIES:-3}
SLOW_LEN=${SLOW_LEN:-7000}
rr_in "$RR_NS_B" tc qdisc add dev "$RR_IF_B" ingress || rr_fail "tc ingress qdisc on $RR_IF_B"
nfilters=0
# add_filters N: N more filters on B's ingress, each on its own source.
add_filters() {
    local i
    for i in $(seq $((nfilters + 1)) $((nfilters + $1))); do
        echo "filter add dev $RR_IF_B parent ffff: protocol ip prio 1 u32 match ip src 198.$((51 + i / 62500)).$((i / 250 % 250 + 100)).$((i % 250 + 1))/32 classid ffff:1"
    done >"$RR_T/slow.tc"
    rr_in "$RR_NS_B" tc -batch "$RR_T/slow.tc" >/dev/null || rr_fail "tc: $1 filters on $RR_IF_B"
    nfilters=$((nfilters + $1))
}
tap_tx_dropped() { rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/statistics/tx_dropped"; }
rr_stats || rr_fail "stats"
[ -n "${RRS[router.rx_paused]+x}" ] || rr_fail "no counter router.rx_paused in stats --json"
# slow_train: one train into the slowed B; its accounting checks fail the
# test, and it returns 0 if the router paused A's ring.
slow_train() {
    local paused0 fd0 tx0 inside0 td0 recv got dup td fd
    paused0=$(rr_ctr router.rx_paused) fd0=$(rr_ctr ring.tx-b.full_drops) tx0=$(rr_ctr driver-b.tx_pkts)
    inside0=$(inside_drops) td0=$(tap_tx_dropped)
    ip netns exec "$RR_NS_B" "$RR_T/bin/faultflow" recv "$RR_HOST_B" $UPORT "$RR_T/slow.bits" 2>"$RR_T/slow.recv" &
    recv=$!
    RR_EXTRA_PIDS+=("$recv")
    rr_wait 5 eval "rr_in $RR_NS_B ss -Hlun 'sport = :$UPORT' | grep -q ." || rr_fail "tap-slow: the sink did not bind"
    ip netns exec "$RR_NS_A" "$RR_T/bin/faultflow" train "$RR_HOST_B" $UPORT "$SLOW_LEN" 100 1 2>"$RR_T/slow.send" ||
        rr_fail "tap-slow: faultflow train: $(cat "$RR_T/slow.send")"
    grep -q "^sent $SLOW_LEN errors 0$" "$RR_T/slow.send" || rr_fail "tap-slow: the sender did not send every datagram: $(cat "$RR_T/slow.send")"
    # Every datagram sent out by driver-b or dropped at A's TAP: the train is through.
    slow_done() { rr_stats && [ $(($(rr_ctr driver-b.tx_pkts) - tx0 + $(tap_tx_dropped) - td0)) -ge "$SLOW_LEN" ]; }
    rr_wait 10 slow_done
    kill -TERM "$recv"
    rr_wait 5 eval "! rr_alive $recv" || rr_fail "tap-slow: the sink did not stop"
    wait "$recv" || rr_fail "tap-slow: the sink exited with status $?"
    read -r got dup < <(awk '{ print $2, $6 }' "$RR_T/slow.recv")
    rr_stats || rr_fail "stats"
    td=$(($(tap_tx_dropped) - td0)) fd=$(($(rr_ctr ring.tx-b.full_drops) - fd0))
    [ "$fd" = 0 ] || rr_fail "tap-slow ($nfilters filters): the ring to driver-b dropped $fd at its full hold queue (held at most $(rr_ctr router.tx_held_max))"
    [ "$(inside_drops)" = "$inside0" ] || rr_fail "tap-slow ($nfilters filters): ringrouter dropped inside: [$inside0] -> [$(inside_drops)]"
    [ "$dup" = 0 ] && [ $((got + td)) = "$SLOW_LEN" ] ||
        rr_fail "tap-slow ($nfilters filters): of $SLOW_LEN datagrams $got arrived ($dup twice) and A's TAP dropped $td: $((SLOW_LEN - got - td)) unaccounted for; $(drops)"
    slow_what="$got of $SLOW_LEN arrived, $td dropped by the kernel at A's TAP queue"
    slow_paused=$(($(rr_ctr router.rx_paused) - paused0))
    [ "$slow_paused" -gt 0 ]
}
add_filters "$SLOW_FILTERS"
try=1
until slow_train; do
    if [ "$try" -ge "$SLOW_TRIES" ]; then
        t_timing_fail "tap-slow: rx_paused did not grow in $try trains, the last with $nfilters filters ($slow_what, at most $(rr_ctr router.tx_held_max) held): B's receive was not slower than the router on this machine, backpressure not exercised"
        break
    fi
    echo "tap-slow: rx_paused did not grow with $nfilters filters ($slow_what): $SLOW_STEP more"
    add_filters "$SLOW_STEP"
    try=$((try + 1))
done
[ "$slow_paused" -gt 0 ] &&
    rr_ok "tap-slow ($nfilters filters, train $try): $slow_what, none inside ringrouter; the router left A's ring unread $slow_paused times (at most $(rr_ctr router.tx_held_max) held)"
rr_in "$RR_NS_B" tc qdisc del dev "$RR_IF_B" ingress || rr_fail "tc: removing the filters"
rr_no_restarts
rr_stop
rr_census_ok

# ---- 2. AF_XDP ----
grep -qw '^XDP' /proc/net/protocols 2>/dev/null || rr_skip "TAP passed; the kernel has no AF_XDP sockets for the second half"
rr_afxdp_init
# The manifest's default pool (16,384 buffers: a fill-ring stock of 4,096
# frames per port, where 8,192 give 2,048, barely a train of 2,000).
# busy_poll = no and napi_defer_hard_irqs = 0: the device's NAPI runs on each
# frame's arrival, as Linux's receive does without coalescing. With busy
# polling (the default) it runs when driver-a polls or, deferred, after
# gro_flush_timeout (200 us, 20 us tried too); with the default coalescing
# (napi_defer_hard_irqs = 2, set with busy_poll = no too since a68e54c) it
# waits for the same timer once it has found frames. veth's receive ring
# holds only 256 frames (a NIC's 1,024 to 4,096): a faster sender overflows
# it within the 200 us, before ringrouter, which bench/forward's burst test
# measures (with the default coalescing, 778 to 2,076 of 20,000 lost here in
# every run, all at the sender's veth, on a machine whose sender was fast).
# Under load this setting costs twice the CPU per packet and livelocks
# (docs/drivers.md, "Bursts"): a test setting, not a recommendation.
RR_AFXDP_POOL=16384 RR_AFXDP_A_EXTRA="busy_poll = no\nnapi_defer_hard_irqs = 0" RR_AFXDP_B_EXTRA="busy_poll = no\nnapi_defer_hard_irqs = 0" \
    rr_afxdp_up 73 74 x b
trains afxdp "$NS_A" "$NS_B" "$HOST_B" driver-b.tx_pkts
LEN=$((LEN * 2)) TRAINS=$((TRAINS / 2)) trains afxdp2 "$NS_A" "$NS_B" "$HOST_B" driver-b.tx_pkts
no_drops afxdp driver-a.rx_drop_ring_full driver-a.xsk_rx_ring_full \
    driver-b.tx_drop_backlog router.drop_tx_full
# The kernel drops a frame it has no fill-ring buffer for (xsk_rx_dropped,
# and xsk_fill_empty with it): when no datagram was lost, that was one of
# the hosts' own frames (IPv6 multicast) met while driver-a was late, a
# loaded machine's doing. Any other kernel drop (a frame too big for a
# buffer) is a failure.
xrd=${RRS[driver-a.xsk_rx_dropped]:?no counter driver-a.xsk_rx_dropped}
xfe=${RRS[driver-a.xsk_fill_empty]:?no counter driver-a.xsk_fill_empty}
[ "$xrd" -le "$xfe" ] ||
    rr_fail "afxdp: driver-a.xsk_rx_dropped = $xrd, more than its empty-fill-ring count $xfe: the kernel dropped frames for another reason"
[ "$xrd" = 0 ] || [ "${FILL_LATE:-0}" = 1 ] ||
    echo "note: afxdp: the kernel dropped $xrd frame(s) other than the datagrams at an empty fill ring (xsk_fill_empty $xfe)"
rr_no_restarts
rr_stop
rr_census_ok
t_pass burst
