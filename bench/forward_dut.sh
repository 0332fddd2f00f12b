# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154,SC2004,SC2034 # the globals and maps are bench/forward's
# bench/forward_dut.sh: bench/forward's devices under test, sourced by it:
# which modes run XDP and NAPI threads on the dut's veths, each mode's
# namespace, veths, addresses and static neighbours (mk_mode), nftables'
# ruleset, and starting and stopping ringrouter, the one-process AF_XDP
# forwarders (onexsk, twoxsk) and DPDK's testpmd. The globals it reads and
# sets (tmp, ns_gen, ns_sink, the device maps, RR_SUP, RR_PIDS) are bench/forward's.
ep_xdp() { [ "$1" = xdp ]; } # XDP_PASS on the endpoints: XDP_REDIRECT into a veth needs it
# ringrouter's modes: its tuned manifest (ringrouter) and the defaults a user
# gets with only `cpu` set (ringrouter-default; rr_up).
# ringrouter-group: the tuned manifest with both ports in one driver group.
rr_mode() { [ "$1" = ringrouter ] || [ "$1" = ringrouter-group ] || [ "$1" = ringrouter-default ]; }
rr_tuned() { [ "$1" = ringrouter ] || [ "$1" = ringrouter-group ]; }
dut_xdp() { rr_mode "$1" || [ "$1" = onexsk ] || [ "$1" = twoxsk ] || [ "$1" = xdp ] || [ "$1" = dpdk ]; } # XDP on the dut's veths
# Linux forwarding has two placements: the veths' receive into CPU 1's
# backlog by RPS (LNAPI=0), one IPI per batch that finds CPU 1 idle; and a
# NAPI per veth (GRO on), a thread on CPU 1 at each NAPI priority, with the
# interrupt coalescing every NIC has: the napi_defer_hard_irqs and
# gro_flush_timeout that ringrouter sets on its own devices by default
# (LNAPI=1). On this VM the first can starve: each wake-up of a halted CPU 1
# costs the sender tens of µs, and a sender slowed so leaves CPU 1 idle.
LNAPI=0
dut_napi() { dut_xdp "$1" || { [ "$1" = linux ] && [ "$LNAPI" = 1 ]; }; } # the dut's veths have NAPI threads
xdp_load() { # NS PROG DEV...
    local ns=$1
    shift
    ip netns exec "$ns" build/bin/xdp_fwd_load build/bin/xdp_fwd.bpf.o "$@" || die "cannot attach $1"
}
place() { # MODE CPU: the mode's endpoints (receive side) on CPU; its dut on CPU 1
    local m=$1
    rps "$ns_gen" "${GDEV[$m]}" "$2"
    rps "$ns_sink" "${SDEV[$m]}" "$2"
    if ep_xdp "$m"; then
        napi_pin "$ns_gen" "${GDEV[$m]}" "$2" "$EP_PRIO"
        napi_pin "$ns_sink" "${SDEV[$m]}" "$2" "$EP_PRIO"
    fi
    rps "${DUT[$m]}" "${ADEV[$m]}" 1
    rps "${DUT[$m]}" "${BDEV[$m]}" 1
    if dut_napi "$m" && [ -z "${3:-}" ]; then
        napi_pin "${DUT[$m]}" "${ADEV[$m]}" 1 "$NAPI_PRIO"
        napi_pin "${DUT[$m]}" "${BDEV[$m]}" 1 "$NAPI_PRIO"
    fi
}

mk_mode() { # MODE: namespace, veths, addresses, routes, static neighbours
    local m=$1 k=${K[$1]} c=${1:0:1}
    [ "$m" != ringrouter-default ] || c=u # r is ringrouter's
    [ "$m" != ringrouter-group ] || c=k
    local ns=rrfw$id-$m net=10.6$k
    DUT[$m]=$ns NET[$m]=$net
    GDEV[$m]=g$c$id SDEV[$m]=s$c$id ADEV[$m]=a$c$id BDEV[$m]=b$c$id
    all_ns+=("$ns")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$ns_gen" link add "${GDEV[$m]}" type veth peer name "${ADEV[$m]}" netns "$ns"
    ip -n "$ns_sink" link add "${SDEV[$m]}" type veth peer name "${BDEV[$m]}" netns "$ns"
    ip -n "$ns_gen" addr add "$net.1.2/24" dev "${GDEV[$m]}"
    ip -n "$ns_sink" addr add "$net.2.2/24" dev "${SDEV[$m]}"
    if [ "$m" = linux ] || [ "$m" = nftables ] || [ "$m" = xdp ]; then
        ip -n "$ns" addr add "$net.1.1/24" dev "${ADEV[$m]}"
        ip -n "$ns" addr add "$net.2.1/24" dev "${BDEV[$m]}"
        ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
    fi
    ip -n "$ns_gen" link set "${GDEV[$m]}" up
    ip -n "$ns_sink" link set "${SDEV[$m]}" up
    ip -n "$ns" link set "${ADEV[$m]}" up
    ip -n "$ns" link set "${BDEV[$m]}" up
    [ "${FWD_GEN_TSO:-0}" = 1 ] || ip netns exec "$ns_gen" ethtool -K "${GDEV[$m]}" tx off >/dev/null
    ip netns exec "$ns_sink" ethtool -K "${SDEV[$m]}" tx off >/dev/null
    ip -n "$ns_gen" route add "$net.2.0/24" via "$net.1.1"
    ip -n "$ns_sink" route add "$net.1.0/24" via "$net.2.1"
    # Static neighbours everywhere: trafgen bypasses ARP, and under a flood
    # an expiring entry's re-probe loses to the flood (seen).
    ip -n "$ns_gen" neigh replace "$net.1.1" lladdr "$(mac_of "$ns" "${ADEV[$m]}")" dev "${GDEV[$m]}" nud permanent
    ip -n "$ns_sink" neigh replace "$net.2.1" lladdr "$(mac_of "$ns" "${BDEV[$m]}")" dev "${SDEV[$m]}" nud permanent
    if [ "$m" = linux ] || [ "$m" = nftables ] || [ "$m" = xdp ]; then
        ip -n "$ns" neigh replace "$net.1.2" lladdr "$(mac_of "$ns_gen" "${GDEV[$m]}")" dev "${ADEV[$m]}" nud permanent
        ip -n "$ns" neigh replace "$net.2.2" lladdr "$(mac_of "$ns_sink" "${SDEV[$m]}")" dev "${BDEV[$m]}" nud permanent
    fi
    if ep_xdp "$m"; then
        xdp_load "$ns_gen" xdp_pass "${GDEV[$m]}"
        xdp_load "$ns_sink" xdp_pass "${SDEV[$m]}"
    fi
    case $m in
    nftables) nft_setup ;;
    xdp) xdp_load "$ns" xdp_fwd "${ADEV[$m]}" "${BDEV[$m]}" ;;
    ringrouter | ringrouter-group | ringrouter-default)
        # Generic XDP alone gives a veth no NAPI to pin: GRO on does (GRO
        # itself is skipped while a generic XDP program is attached).
        if rr_tuned "$m" && [[ ${FWD_RR_PORT_EXTRA:-} == *"xdp_mode = skb"* ]]; then
            ip netns exec "$ns" ethtool -K "${ADEV[$m]}" gro on >/dev/null
            ip netns exec "$ns" ethtool -K "${BDEV[$m]}" gro on >/dev/null
        fi
        rr_up "$m"
        ;;
    onexsk) onexsk_up onexsk xskfwd ;;
    twoxsk) onexsk_up twoxsk xsksplit ;;
    esac
    place "$m" 0 "${dpdk_later:-}"
}

# A stateful firewall: conntrack on every packet, new connections only from
# the gen side, replies and related ICMP back.
nft_setup() {
    local a=${ADEV[nftables]} b=${BDEV[nftables]}
    ip netns exec "${DUT[nftables]}" nft -f - <<EOF
table inet rrfw {
    chain forward {
        type filter hook forward priority filter; policy drop;
        ct state established,related accept
        ct state invalid drop
        iifname "$a" oifname "$b" ct state new accept
        ip protocol icmp accept
    }
}
EOF
}

# Each of ringrouter's modes is an instance of its own: its run_dir (and so
# its control socket), manifest, log, supervisor (RR_SUP) and processes
# (RR_PIDS: the supervisor's and its services').
rr_sock() { echo "$tmp/run-$1/control.sock"; } # MODE
rr_status() { "$tmp/bin/ringrouter" status --json -S "$(rr_sock "$1")" 2>/dev/null; } # MODE
rr_all_up() { # MODE
    kill -0 "${RR_SUP[$1]}" 2>/dev/null || die "the supervisor of $1 exited: $(cat "$tmp/sup-$1.log")"
    rr_status "$1" | python3 -c 'import json,sys; s=json.load(sys.stdin)["services"]; sys.exit(0 if s and all(x["state"]=="up" for x in s) else 1)' 2>/dev/null
}
rr_pids() { rr_status "$1" | python3 -c 'import json,sys; print(" ".join(str(s["pid"]) for s in json.load(sys.stdin)["services"]))'; } # MODE
# rr_manifest MODE: the mode's manifest on stdout. ringrouter: the bench's
# tuning (pool_buffers, ring_size, FWD_SCHED, the FWD_RR_*_EXTRA lines).
# ringrouter-default: what a user gets from docs/manifest.md's defaults with
# only what the other harness of issue 49 added: `cpu = 1` and `hang_ms =
# 2000` per service and the hosts' static neighbours. FWD_RR_DEFAULT_EXTRA:
# lines appended to its every [service], to try a setting against the
# defaults (unset, the mode is the defaults).
rr_manifest() {
    local m=$1 net=${NET[$1]} extra_p extra_s s zone_a='' zone_b='' grp='' svcs="router driver-a driver-b"
    if rr_tuned "$m"; then
        extra_p=$(printf '%b' "${FWD_RR_PORT_EXTRA:-}")
        # ringrouter-group, or FWD_RR_GROUP=1 for ringrouter: both ports in one
        # driver group, one rr-afxdp for both (docs/drivers.md, "Driver groups")
        [ "$m" = ringrouter ] && [ "${FWD_RR_GROUP:-0}" = 0 ] || { grp=$'group = g\n' svcs="router driver-g"; }
        # FWD_RR_ZONES=1: a trust zone per port, so every packet is copied once (docs/security.md)
        [ "${FWD_RR_ZONES:-0}" = 0 ] || { zone_a=$'zone = a\n' zone_b=$'zone = b\n'; }
        extra_s=$(printf '%b' "${FWD_RR_SERVICE_EXTRA:-}")
        printf '[router]\nname = fw%s%s\npool_buffers = %s\nring_size = %s\nrun_dir = %s/run-%s\n' \
            "$([ "$m" = ringrouter ] || echo k)" "$id" "${FWD_POOL_BUFFERS:-16384}" "${FWD_RING_SIZE:-4096}" "$tmp" "$m"
        printf '%b\n' "${FWD_RR_ROUTER_EXTRA:-}"
    else
        extra_p='' extra_s=$(printf '%b' "${FWD_RR_DEFAULT_EXTRA:-}")
        printf '[router]\nname = fwd%s\nrun_dir = %s/run-%s\n' "$id" "$tmp" "$m"
    fi
    printf '\n[port a]\ndriver = afxdp\nifname = %s\naddress = %s.1.1/24\n%s\n%s%s' "${ADEV[$m]}" "$net" "$extra_p" "${zone_a:-}" "$grp"
    printf '\n[port b]\ndriver = afxdp\nifname = %s\naddress = %s.2.1/24\n%s\n%s%s' "${BDEV[$m]}" "$net" "$extra_p" "${zone_b:-}" "$grp"
    printf '\n[neigh %s.1.2]\nmac = %s\n' "$net" "$(mac_of "$ns_gen" "${GDEV[$m]}")"
    printf '\n[neigh %s.2.2]\nmac = %s\n' "$net" "$(mac_of "$ns_sink" "${SDEV[$m]}")"
    # hang_ms: a bench, not a hang test; on 2 noisy vCPUs a busy service
    # can miss the default heartbeat.
    for s in $svcs; do
        printf '\n[service %s]\ncpu = 1\n' "$s"
        ! rr_tuned "$m" || [[ $extra_s == *sched* ]] || echo "sched = $SCHED"
        [[ $extra_s == *hang_ms* ]] || echo "hang_ms = 2000"
        printf '%s\n' "$extra_s"
    done
}
rr_up() { # MODE
    local m=$1
    mkdir -p "$tmp/bin"
    if [ ! -x "$tmp/bin/rr-router" ]; then
        cp build/bin/ringrouter build/bin/rr-afxdp build/bin/rr-router build/bin/steer.bpf.o "$tmp/bin/"
        chmod 755 "$tmp/bin" "$tmp/bin/ringrouter" "$tmp/bin/rr-afxdp" "$tmp/bin/rr-router"
        chmod 644 "$tmp/bin/steer.bpf.o"
    fi
    rr_manifest "$m" >"$tmp/$m.ini"
    "$tmp/bin/ringrouter" check -c "$tmp/$m.ini" >/dev/null || die "the manifest $tmp/$m.ini is refused"
    ip netns exec "${DUT[$m]}" taskset -c 1 "$tmp/bin/ringrouter" up -c "$tmp/$m.ini" 2>"$tmp/sup-$m.log" &
    RR_SUP[$m]=$!
    wait_for 100 rr_all_up "$m" || die "$m did not come up in 10 s: $(cat "$tmp/sup-$m.log")"
    RR_PIDS[$m]="${RR_SUP[$m]} $(rr_pids "$m")"
}

# onexsk_up MODE BIN: bench/xskfwd (onexsk) or bench/xsksplit (twoxsk) on
# the dut's veths, on CPU 1, up for the whole run (it sleeps in poll() when
# idle), with the interrupt coalescing ringrouter's supervisor sets on its
# devices by default. FWD_GEN_TSO=1: onexsk multi-buffer in generic XDP
# (xskfwd -s), its veths with GRO on for a NAPI to pin, as ringrouter's
# with xdp_mode = skb (mk_mode).
ox_pid=""
tx_pid=""
onexsk_up() {
    local m=$1 d sg=()
    [ "${FWD_GEN_TSO:-0}" != 1 ] || [ "$m" != onexsk ] || sg=(-s build/bin/xskfwd.bpf.o)
    for d in "${ADEV[$m]}" "${BDEV[$m]}"; do
        ip netns exec "${DUT[$m]}" sh -c "echo 2 > /sys/class/net/$d/napi_defer_hard_irqs && echo 200000 > /sys/class/net/$d/gro_flush_timeout" ||
            die "cannot set $d's interrupt coalescing"
        [ ${#sg[@]} -eq 0 ] || ip netns exec "${DUT[$m]}" ethtool -K "$d" gro on >/dev/null
    done
    ip netns exec "${DUT[$m]}" taskset -c 1 "build/bin/$2" "${sg[@]}" "${ADEV[$m]}" "$(mac_of "$ns_gen" "${GDEV[$m]}")" \
        "${BDEV[$m]}" "$(mac_of "$ns_sink" "${SDEV[$m]}")" >"$tmp/$2.log" 2>&1 &
    ox_pid=$!
    [ "$m" != twoxsk ] || tx_pid=$ox_pid
    bg_pids+=("$ox_pid")
    wait_for 100 onexsk_ready "$2" || die "$2 did not start in 10 s: $(tail -5 "$tmp/$2.log")"
}
onexsk_ready() { # BIN
    kill -0 "$ox_pid" 2>/dev/null || die "$1 exited: $(tail -5 "$tmp/$1.log")"
    grep -qs ready "$tmp/$1.log"
}

dp_pid=
dpdk_ready() {
    kill -0 "$dp_pid" 2>/dev/null || die "dpdk-testpmd exited: $(tail -5 "$tmp/testpmd.log")"
    grep -qs "Port statistics" "$tmp/testpmd.log" &&
        ip -n "${DUT[dpdk]}" link show "${ADEV[dpdk]}" | grep -q "prog/xdp" &&
        ip -n "${DUT[dpdk]}" link show "${BDEV[dpdk]}" | grep -q "prog/xdp"
}
dpdk_start() { # testpmd, mac forwarding between two AF_XDP ports, on CPU 1
    local m=dpdk
    # Two lcores (main and forwarding) on CPU 1: testpmd does not forward on
    # its main lcore, and with -l 1 alone it has no forwarding core.
    ip netns exec "${DUT[$m]}" dpdk-testpmd --lcores '(0,1)@1' --no-huge -m 1024 --no-pci \
        --file-prefix="rrfw$id" --log-level=lib.eal:warning \
        --vdev "net_af_xdp0,iface=${ADEV[$m]}" --vdev "net_af_xdp1,iface=${BDEV[$m]}" -- \
        --forward-mode=mac --total-num-mbufs=32768 --stats-period 1 \
        --eth-peer="0,$(mac_of "$ns_gen" "${GDEV[$m]}")" --eth-peer="1,$(mac_of "$ns_sink" "${SDEV[$m]}")" \
        </dev/null >"$tmp/testpmd.log" 2>&1 &
    dp_pid=$!
    bg_pids+=("$dp_pid")
    wait_for 300 dpdk_ready || die "dpdk-testpmd did not start forwarding in 30 s: $(tail -5 "$tmp/testpmd.log")"
    place dpdk 0
    ip netns exec "$ns_gen" ping -q -c 2 -i 0.2 -W 2 "${NET[$m]}.2.2" >/dev/null || die "no ping through dpdk-testpmd"
}
dpdk_stop() {
    stop "$dp_pid" INT
    unset 'bg_pids[${#bg_pids[@]}-1]'
    dp_pid=
}
