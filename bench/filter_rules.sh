# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154,SC2034 # the globals are bench/filter's and forward_dut.sh's
# bench/filter_rules.sh: bench/filter's rulesets and devices under test,
# sourced after bench/forward_dut.sh: issue 47's ruleset for nftables
# (nft_rules) and for rr-filter (rr_rules), each with or without
# masquerade on the sink's side; loading them (nft_load, rr_variant); and
# Linux's NAPI placement for both Linux kinds (dut_napi, lnapi_on).

BLOCK="192.0.2.0/24, 198.18.0.0/24, 198.19.7.0/24" # TEST-NET-1 and benchmarking space: no traffic here uses them

# edge_rules NET: the set and the forward chain, in the words nft and
# rr-filter share (docs/filter.md), towards NET.2.0/24 (the sink's side).
edge_rules() {
    cat <<EOF
set blocklist {
    type ipv4_addr; flags interval
    elements = { $BLOCK }
}
chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    ct state invalid drop
    ip saddr @blocklist drop
    ip daddr @blocklist drop
    ip daddr $1.2.0/24 ct state new tcp dport { 22, 80, 443, 5201 } accept
    ip daddr $1.2.0/24 ct state new udp dport { 9, 53, 123, 5201 } accept
    icmp type echo-request accept
}
EOF
}
nft_rules() { # NAT(0|1): for the nftables dut, in a table of its own
    printf 'table inet rrfl {\n%s\n}\n' "$(edge_rules "${NET[nftables]}")"
    [ "$1" = 0 ] || printf 'table ip rrflnat {\n    chain postrouting {\n        type nat hook postrouting priority srcnat; policy accept;\n        oifname "%s" masquerade\n    }\n}\n' "${BDEV[nftables]}"
}
rr_rules() { # NAT(0|1): for rr-filter
    echo "# bench/filter: issue 47's ruleset"
    edge_rules "${NET[ringrouter]}"
    [ "$1" = 0 ] || printf 'chain postrouting {\n    oif "b" masquerade\n}\n'
}

nft_setup() { :; } # mk_mode's hook: the rules come per variant (nft_load)
nft_load() { # nft | nft-nat
    local nat=0
    [ "$1" = nft ] || nat=1
    nft_rules "$nat" >"$tmp/$1.nft"
    ip netns exec "${DUT[nftables]}" nft flush ruleset
    ip netns exec "${DUT[nftables]}" nft -f "$tmp/$1.nft" || die "nft refused $tmp/$1.nft"
    ip netns exec "${DUT[nftables]}" conntrack -F >/dev/null 2>&1 || true
}

# rr_variant rr | rr-filter | rr-nat: ringrouter restarted on a manifest
# with no [filter], or with one on every port and its own service on CPU 1
# beside the others (bench/forward_dut.sh's rr_up writes the rest), its
# table bounded as nftables' (CT_MAX).
rr_cur=rr # mk_mode's rr_up starts the plain one
rr_variant() {
    [ "$1" != "$rr_cur" ] || return 0
    rr_cur=$1
    if [ -n "${RR_SUP[ringrouter]:-}" ]; then
        stop "${RR_SUP[ringrouter]}" TERM
        unset 'RR_SUP[ringrouter]'
    fi
    FWD_RR_ROUTER_EXTRA=
    if [ "$1" != rr ]; then
        rr_rules "$([ "$1" = rr-nat ] && echo 1 || echo 0)" >"$tmp/$1.rules"
        chmod 644 "$tmp/$1.rules"
        mkdir -p "$tmp/bin"
        cp build/bin/rr-filter "$tmp/bin/" && chmod 755 "$tmp/bin/rr-filter"
        FWD_RR_ROUTER_EXTRA="\n[filter]\nrules = $tmp/$1.rules\nconntrack_max = $CT_MAX\n\n[service filter]\ncpu = 1\nsched = $SCHED\nhang_ms = 2000\n"
    fi
    rr_up ringrouter
    place ringrouter 0
}

# Linux's veths with a NAPI thread each (GRO on) and a NIC's interrupt
# coalescing, for linux and nftables alike (bench/forward's "Linux NAPI").
dut_napi() {
    dut_xdp "$1" || { [ "$LNAPI" = 1 ] && { [ "$1" = linux ] || [ "$1" = nftables ]; }; }
}
lnapi_on() { # MODE
    [ "${FILTER_LNAPI:-1}" = 1 ] || return 0
    local d ns=${DUT[$1]}
    for d in "${ADEV[$1]}" "${BDEV[$1]}"; do
        ip netns exec "$ns" ethtool -K "$d" gro on >/dev/null
        ip netns exec "$ns" sh -c "echo 2 > /sys/class/net/$d/napi_defer_hard_irqs && echo 200000 > /sys/class/net/$d/gro_flush_timeout" ||
            die "cannot set $d's interrupt coalescing"
    done
    LNAPI=1
    place "$1" 0
    LNAPI=0
}
