# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154 # the globals are bench/filter's
# bench/filter_net.sh: bench/filter's measuring, sourced by it: the helpers
# bench/forward_dut.sh expects of its host script (die and stop here;
# wait_for, rps, napi_pin and mac_of from bench/lib_net.sh, which
# bench/forward sources too), the generator's windows (bench/trainsend.c)
# and the pings. CPU busy time as bench/forward counts it (lib_net.sh).
HZ=$(getconf CLK_TCK)
die() { echo "bench/filter: $*" >&2; exit 111; }
record() { local IFS=$'\t'; echo "$*" >>"$res"; }
stop() { # PID SIGNAL: one process of ours, waited for at most 5 s
    kill "-$2" "$1" 2>/dev/null || return 0
    for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
cleanup() {
    set +e
    local p
    for p in "${bg_pids[@]}"; do stop "$p" INT; done
    for p in "${RR_SUP[@]}"; do stop "$p" TERM; done
    for ns in "${all_ns[@]}"; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$tmp"
}
. bench/lib_net.sh # cpu_ticks, busy_cores, now_s, wait_for, rx_packets, offered, mac_of, rps, napi_pin
xdp_load() { # NS PROG DEV...
    local ns=$1
    shift
    ip netns exec "$ns" build/bin/xdp_fwd_load build/bin/xdp_fwd.bpf.o "$@" || die "cannot attach $1"
}

# The ceiling's veth pair gen -- sink, the sink's receive on CPU 0.
ceiling_pair() {
    local g=gzp$id s=szp$id
    ip -n "$ns_gen" link add "$g" type veth peer name "$s" netns "$ns_sink"
    ip -n "$ns_gen" addr add 10.69.1.2/24 dev "$g"
    ip -n "$ns_sink" addr add 10.69.1.1/24 dev "$s"
    ip -n "$ns_gen" link set "$g" up
    ip -n "$ns_sink" link set "$s" up
    ip netns exec "$ns_gen" ethtool -K "$g" tx off >/dev/null
    ip netns exec "$ns_sink" ethtool -K "$s" tx off >/dev/null
    ip -n "$ns_gen" neigh replace 10.69.1.1 lladdr "$(mac_of "$ns_sink" "$s")" dev "$g" nud permanent
    rps "$ns_sink" "$s" 0
}
ceiling() { window ceiling max1 "$1" 1 0 "gzp$id" "szp$id" 10.69.1.2 10.69.1.1 "$(mac_of "$ns_sink" "szp$id")"; }

# The dut's own threads, for CPU time that other load on this shared CPU 1
# does not inflate: ringrouter's processes or xskfwd's (onexsk_up's
# ox_pid), and for every kind the NAPI threads of its veths (where Linux
# forwards, nftables included, and where the copy-mode AF_XDP receive
# runs). The ceiling has none.
dut_tids() { dut_tids_all "$1" | sort -u; } # VARIANT; status may list a pid that RR_PIDS has too
dut_tids_all() {
    [ "$1" != ceiling ] || return 0
    local m p t procs=
    m=$(kind_of "$1")
    case $m in ringrouter) procs=${RR_PIDS[ringrouter]:-} ;; onexsk) procs=$ox_pid ;; esac
    for p in $procs; do
        for t in /proc/"$p"/task/*; do [ -d "$t" ] && echo "${t#/proc/}"; done
    done
    for p in $(napi_pids "${ADEV[$m]}" "${BDEV[$m]}"); do echo "$p/task/$p"; done
}
# dut_ns TIDS...: "NOW NS": the time and their nanoseconds on CPU, read in
# one process, so that the interval the CPU time is divided by is its own
# (a fork a thread, on a loaded machine, stretched the reading by seconds).
dut_ns() {
    python3 -c 'import sys, time
t = 0
for f in sys.argv[1:]:
    try:
        t += int(open("/proc/%s/schedstat" % f).read().split()[0])
    except OSError:
        pass
print("%.6f %d" % (time.time(), t))' "$@"
}
sending() { [ "$(offered "$ns_gen" "$1")" -gt "$2" ]; }
# window VARIANT TEST RUN FLOWS PPS GDEV SDEV SRC DST DMAC, recorded as
# VARIANT$tag (bench/filter's placement): trainsend (with
# bench/filter's GEN_ARGS: the XDP generator's, or none) on CPU 0, as fast
# as it can (PPS 0: trains of 256 back to back) or paced (trains of 32
# evenly spaced); after it is sending and 1 s more, FILTER_SECONDS
# (WIN_SECS) of sink's packets, offered frames, CPU 1's busy cores, the
# dut's threads' and CPU 0's (the generator's and the sink's: 1.00 says
# they held the maximum). FLOWS -: none given (trainsend -N). WIN_HOOK,
# if set, is called with warm (after that second), begin and end (around
# the readings) and after (the generator stopped), and VARIANT.
window() {
    local v=$1 t=$2 run=$3 n=$4 pps=$5 g=$6 s=$7 train=256 gap=1ns o gpid t0 t1 c0 c1 g0 g1 p0 p1 o0 o1 d0 d1 tids
    local hook=${WIN_HOOK:-:} flows=("$4")
    [ "$n" != - ] || flows=()
    [ "$pps" -eq 0 ] || train=32 gap="$((32 * 1000000000 / pps))ns"
    o=$(offered "$ns_gen" "$g")
    ip netns exec "$ns_gen" taskset -c 0 build/bin/trainsend ${GEN_ARGS[@]+"${GEN_ARGS[@]}"} "$g" "${10}" "$8" "$9" "$train" 0 "$gap" \
        ${flows[@]+"${flows[@]}"} >"$tmp/tg.out" 2>&1 &
    gpid=$!
    bg_pids+=("$gpid")
    wait_for 100 sending "$g" $((o + 100)) || die "$v $t: the generator sent nothing in 10 s: $(cat "$tmp/tg.out")"
    sleep 1
    $hook warm "$v"
    $hook begin "$v"
    mapfile -t tids < <(dut_tids "$v")
    t0=$(now_s) c0=$(cpu_ticks 1) g0=$(cpu_ticks 0) p0=$(rx_packets "$ns_sink" "$s") o0=$(offered "$ns_gen" "$g") d0=$(dut_ns "${tids[@]}")
    sleep "${WIN_SECS:-$SECS}"
    t1=$(now_s) c1=$(cpu_ticks 1) g1=$(cpu_ticks 0) p1=$(rx_packets "$ns_sink" "$s") o1=$(offered "$ns_gen" "$g") d1=$(dut_ns "${tids[@]}")
    $hook end "$v"
    stop "$gpid" INT
    unset 'bg_pids[${#bg_pids[@]}-1]'
    $hook after "$v"
    # shellcheck disable=SC2046 # two words
    record "$v$tag" "$t" "$run" $(python3 -c "dt = $t1 - $t0; print('%.1f %.1f' % (($p1 - $p0) / dt, ($o1 - $o0) / dt))") \
        "$(busy_cores "$c0" "$c1" "$t0" "$t1")" "$(python3 -c "a, b = '$d0'.split(), '$d1'.split(); print('%.4f' % ((int(b[1]) - int(a[1])) / 1e9 / (float(b[0]) - float(a[0]))))")" \
        "$(busy_cores "$g0" "$g1" "$t0" "$t1")"
    sleep 0.3 # what is still on its way
}
udp_var() { # VARIANT TEST RUN FLOWS PPS
    local m
    m=$(kind_of "$1")
    window "$@" "${GDEV[$m]}" "${SDEV[$m]}" "${NET[$m]}.1.2" "${NET[$m]}.2.2" "$(mac_of "${DUT[$m]}" "${ADEV[$m]}")"
}
# ping_var VARIANT RUN: FILTER_PINGS pings 2 ms apart through the idle dut:
# p50 and p99 of their round trips, µs.
ping_var() {
    local m rtts
    m=$(kind_of "$1")
    rtts=$(ip netns exec "$ns_gen" taskset -c 0 ping -n -c "$PINGS" -i 0.002 -W 1 "${NET[$m]}.2.2" 2>/dev/null |
        sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p') || true
    [ -n "$rtts" ] || { echo "bench/filter: $1: no ping came back" >&2; return 0; }
    # shellcheck disable=SC2046 # two words
    record "$1$tag" ping "$2" $(python3 -c "import sys
r = sorted(float(x) * 1000 for x in sys.argv[1].split())
q = lambda p: r[min(len(r) - 1, int(p * len(r)))]
print('%.1f %.1f' % (q(0.5), q(0.99)))" "$rtts") 0 0
}
