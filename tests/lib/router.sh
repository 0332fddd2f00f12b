# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2016,SC2034,SC2119
# tests/lib/router.sh: shared steps of the router namespace tests
# (tests/integ/router_*.sh): the real rr-router between two TAP ports, each
# port's device in its own network namespace (as tools/demo.sh does). Source
# it, then:
#
#   rr_init NAME           root check (exit 77 if not root or a tool is
#                          missing), a snapshot of the binaries, temp dir $RR_T,
#                          EXIT trap that cleans up everything below
#   rr_topology            two fresh namespaces $RR_NS_A, $RR_NS_B; a manifest
#                          ($RR_T/m.ini): pool_buffers $RR_POOL (default
#                          8192), port a in A (10.61.N.1/24, device
#                          $RR_IF_A), port b in B (10.62.N.1/24, $RR_IF_B); no
#                          static neighbours, no default route in the router,
#                          hang_ms $RR_HANG_MS (default 3000) for every service,
#                          frame_size $RR_FRAME_SIZE and every service's
#                          sched $RR_SCHED if set; $RR_SVC_EXTRA (lines, with
#                          \n escapes) added to every [service] section; port
#                          a's prefix length $RR_PLEN_A (default 24), port b's
#                          mtu $RR_MTU_B, IPv6 addresses $RR_ADDR6_A and
#                          $RR_ADDR6_B (address6 values) if set; $RR_ROUTER_EXTRA
#                          (lines, with \n escapes) added to [router].
#                          Hosts: $RR_HOST_A (10.61.N.2), $RR_HOST_B; the
#                          router's addresses $RR_GW_A, $RR_GW_B
#   rr_start               `ringrouter up` (log $RR_LOG), sets $RR_PID, waits
#                          (bounded) until every service is up, then configures
#                          the hosts' side (address, link up, default route):
#                          rr_up, then rr_host_side NS IFNAME HOST GW for each
#   rr_stop                SIGTERM, bounded wait, SIGKILL; $RR_RC = exit status
#   rr_census_ok           after rr_stop: exit 0, the log's last census line
#                          says "census: all N buffers free", no "census: LEAK"
#                          line (else rr_fail); tests/lib/common.sh
#   t_seed, t_timing_fail, t_pass   the exit-code convention (common.sh)
#   rr_remember_services   each running service of RR_SERVICES ended by pid at
#                          exit (services outlive a supervisor's kill -9)
#   rr_status              $RR_STATE[svc], $RR_PIDS[svc], $RR_RESTARTS[svc] (after deaths),
#                          $RR_PLANNED[svc] (restart, upgrade, reload)
#   rr_stats               $RRS[svc.counter] from `stats --json` (every counter,
#                          zero or not) and $RRS[ring.NAME.counter]
#   rr_wait SECS CMD...    run CMD every 20 ms until it succeeds, at most SECS
#   rr_in NS CMD...        ip netns exec NS CMD...
#   rr_netns SUFFIX        a fresh namespace rrt-PID-SUFFIX ($RR_NS), deleted at
#                          exit, with IPv4 forwarding off (rr_no_forward)
#   rr_resolve             pings both ways; RR_MAC_A/B the router's MACs, RR_HMAC_A/B the hosts'
#   rr_need_hard TOOL...   fail (not skip) if a tool the test needs is missing
#   rr_shaper_init         rr-shaper joins the snapshot of the binaries
#   rr_trafgen_start NS DEV CFG [ARGS] / rr_trafgen_stop
#                          trafgen (and its forked worker) by PID
#   rr_fail MSG / rr_skip MSG / rr_ok MSG
#
# Everything this file starts is ended by the PID it recorded; the namespaces
# it made are deleted; the temp dir is removed. Nothing is matched by name.

set -u

RR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$RR_ROOT/tests/lib/common.sh"
RR_BIN_DIR=${RR_BIN_DIR:-$RR_ROOT/build/bin}
RR=
RR_T=
RR_PID=
RR_RC=
RR_LOG=
RR_SOCK=
RR_NAME=
RR_NETNS=()
RR_EXTRA_PIDS=()
RR_NS_A='' RR_NS_B='' RR_IF_A='' RR_IF_B=''
RR_NET_A='' RR_NET_B='' RR_GW_A='' RR_GW_B='' RR_HOST_A='' RR_HOST_B=''
declare -A RR_STATE RR_PIDS RR_RESTARTS RR_PLANNED RRS
RR_SERVICES=(router driver-a driver-b)
if [ -x /usr/bin/python3 ]; then RR_PY=/usr/bin/python3; else RR_PY=python3; fi
export RR_PYLIB=$RR_ROOT/tests/lib # tests/lib/rrpkt.py, for the tests' Python

rr_log_tail() {
    [ -n "$RR_LOG" ] && [ -f "$RR_LOG" ] || return 0
    echo "--- supervisor log ($RR_LOG), last 30 lines:"
    tail -n 30 "$RR_LOG" | sed 's/^/    /'
}

rr_fail() {
    echo "FAIL: $RR_NAME: $*"
    rr_log_tail
    exit 1
}

rr_skip() {
    echo "SKIP: $RR_NAME: $*"
    exit 77
}

rr_ok() { echo "ok: $*"; }

# Microseconds, from the shell itself (no fork).
rr_now() { RR_NOW=${EPOCHREALTIME//[.,]/}; }

rr_alive() { # a zombie counts as gone
    local st=
    [ -r "/proc/$1/stat" ] || return 1
    read -r _ _ st _ <"/proc/$1/stat" 2>/dev/null || return 1
    [ "$st" != Z ] && [ -n "$st" ]
}

# Sleep MS milliseconds without a fork: a read with a timeout on a FIFO that
# nobody writes (opened read-write, so it never sees EOF).
RR_SLEEP_FD=
rr_msleep() {
    if [ -z "$RR_SLEEP_FD" ]; then
        if ! { mkfifo "$RR_T/sleep.fifo" && exec {RR_SLEEP_FD}<>"$RR_T/sleep.fifo"; }; then
            sleep "$(awk -v m="$1" 'BEGIN { print m / 1000 }')"
            return 0
        fi
    fi
    local t
    printf -v t '%d.%03d' $(($1 / 1000)) $(($1 % 1000))
    read -r -t "$t" -u "$RR_SLEEP_FD" _
    return 0
}

rr_wait() { # rr_wait SECS CMD...
    local secs=$1
    shift
    local end
    rr_now
    end=$((RR_NOW + secs * 1000000))
    while :; do
        "$@" && return 0
        rr_now
        [ "$RR_NOW" -ge "$end" ] && return 1
        rr_msleep 20
    done
}

rr_in() { # rr_in NS CMD...
    local ns=$1
    shift
    ip netns exec "$ns" "$@"
}

rr_kill_pid() { # TERM, bounded wait, KILL; then reap if it is our child
    local p=$1
    if rr_alive "$p"; then
        kill -TERM "$p" 2>/dev/null
        rr_wait 10 eval "! rr_alive $p" || kill -KILL "$p" 2>/dev/null
    fi
    wait "$p" 2>/dev/null
}

rr_cleanup() {
    local rc=$?
    trap - EXIT
    local p
    for p in "${RR_EXTRA_PIDS[@]}"; do
        rr_kill_pid "$p"
    done
    if [ -n "$RR_PID" ]; then
        rr_kill_pid "$RR_PID"
        RR_PID=
    fi
    local ns
    for ns in "${RR_NETNS[@]}"; do
        ip netns del "$ns" 2>/dev/null
    done
    [ -n "$RR_SLEEP_FD" ] && exec {RR_SLEEP_FD}>&-
    # A failure that comes once in ten runs is read from its whole log.
    if [ "$rc" != 0 ] && [ -n "${RR_KEEP_LOGS:-}" ] && [ -n "$RR_LOG" ] && [ -f "$RR_LOG" ]; then
        mkdir -p "$RR_KEEP_LOGS" && cp "$RR_LOG" "$RR_KEEP_LOGS/$(basename "$RR_T").log" &&
            echo "kept: $RR_KEEP_LOGS/$(basename "$RR_T").log"
    fi
    [ -n "$RR_T" ] && [ -d "$RR_T" ] && rm -rf "$RR_T"
    exit "$(t_exit_rc "$rc")"
}

rr_need() { # rr_need TOOL...: skip if a tool is missing
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || rr_skip "needs $c"
    done
}

rr_need_hard() { # rr_need_hard TOOL...: a tool ./run installs; missing is a failure
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || rr_fail "needs $c (./run installs it): not found"
    done
}

rr_init() {
    RR_NAME=$1
    [ "$(id -u)" -eq 0 ] || rr_skip "needs root (creates network namespaces and TAP devices)"
    rr_need ip ping "$RR_PY"
    local b
    for b in ringrouter rr-tap rr-router; do
        [ -x "$RR_BIN_DIR/$b" ] || rr_fail "$RR_BIN_DIR/$b is missing: build with ninja first"
    done
    # Short: run_dir must be at most 80 characters, the socket path 107.
    RR_T=$(mktemp -d /tmp/rrt.XXXXXX) || rr_fail "mktemp"
    chmod 755 "$RR_T"
    trap rr_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # A snapshot of the binaries, so that a rebuild during the test cannot
    # start a service built against another layout. The supervisor finds the
    # services beside its own executable.
    mkdir -p "$RR_T/bin"
    for b in ringrouter rr-tap rr-router; do
        cp "$RR_BIN_DIR/$b" "$RR_T/bin/" || rr_fail "cannot copy $RR_BIN_DIR/$b"
    done
    chmod 755 "$RR_T/bin" "$RR_T"/bin/*
    RR=$RR_T/bin/ringrouter
    RR_LOG=$RR_T/log
    RR_SOCK=$RR_T/run/control.sock
}

# AF_XDP tests: skip without AF_XDP sockets; the driver and the XDP program
# join the snapshot of the binaries (rr_init).
rr_afxdp_init() {
    grep -qw '^XDP' /proc/net/protocols 2>/dev/null || rr_skip "the kernel has no AF_XDP sockets"
    local b
    for b in rr-afxdp steer.bpf.o; do
        [ -f "$RR_BIN_DIR/$b" ] || rr_fail "$RR_BIN_DIR/$b is missing: build with ninja first"
        cp "$RR_BIN_DIR/$b" "$RR_T/bin/" || rr_fail "cannot copy $b"
    done
    chmod 755 "$RR_T/bin/rr-afxdp"
    chmod 644 "$RR_T/bin/steer.bpf.o"
}

# rr_shaper_classes PORT ARRAY: each class of PORT's shaper into the
# associative ARRAY: NAME its tx_pkts, NAME.bytes its tx_bytes
rr_shaper_classes() {
    local out name p b
    out=$("$RR" shaper show "$1" --json -S "$RR_SOCK" 2>&1) || rr_fail "shaper show --json: $out"
    out=$("$RR_PY" -c '
import json, sys
for c in json.loads(sys.argv[1])["shapers"][0]["classes"]:
    print(c["name"], c["tx_pkts"], c["tx_bytes"])' "$out") || rr_fail "shaper show --json: $out"
    local -n arr=$2
    arr=()
    while read -r name p b; do
        arr[$name]=$p arr[$name.bytes]=$b
    done <<<"$out"
}

rr_shaper_init() {
    [ -x "$RR_BIN_DIR/rr-shaper" ] || rr_fail "$RR_BIN_DIR/rr-shaper is missing: build with ninja first"
    cp "$RR_BIN_DIR/rr-shaper" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-shaper" || rr_fail "cannot copy rr-shaper"
}

# A host in NS_HOST behind a veth whose other end (PEER) is in NS_R, for an
# AF_XDP port: HOST/24 on DEV, a default route via GW, TX checksum offload
# off (veth with XDP does not complete partially offloaded checksums, so the
# host computes its own; DESIGN.md, "What this machine allows"), both ends up.
rr_veth_host() { # rr_veth_host NS_HOST DEV PEER NS_R HOST GW [QUEUES]
    local q=()
    [ -z "${7:-}" ] || q=(numtxqueues "$7" numrxqueues "$7")
    ip -n "$1" link add "$2" "${q[@]}" type veth peer name "$3" "${q[@]}" netns "$4" || rr_fail "veth $2"
    ip -n "$1" addr add "$5/24" dev "$2" || rr_fail "addr $5 on $2"
    ip -n "$1" link set "$2" up || rr_fail "link up $2"
    ip -n "$1" route add default via "$6" || rr_fail "default route in $1"
    rr_in "$1" ethtool -K "$2" tx off >/dev/null 2>&1 || rr_fail "ethtool -K $2 tx off"
    ip -n "$4" link set "$3" up || rr_fail "link up $3"
}

# The three namespaces of a router test with its own supervisor namespace:
# NS_R (the supervisor), NS_A and NS_B (the hosts), and the hosts' networks
# 10.X.N.0/24 and 10.Y.N.0/24 (N from our PID): GW_* the router, HOST_* the host.
# TAG (default none) prefixes the namespaces' suffixes, for a test that
# builds a second topology beside rr_topology's.
rr_three_ns() { # rr_three_ns X Y [TAG]
    local n=$(($$ % 250 + 1)) t=${3:-}
    NET_A=10.$1.$n NET_B=10.$2.$n
    GW_A=$NET_A.1 GW_B=$NET_B.1 HOST_A=$NET_A.2 HOST_B=$NET_B.2
    rr_netns "${t}r"; NS_R=$RR_NS
    rr_netns "${t}a"; NS_A=$RR_NS
    rr_netns "${t}b"; NS_B=$RR_NS
}

# The supervisor started inside NS on the manifest FILE (checked first), and
# every service up; its PID in RR_PID.
rr_up_in() { # rr_up_in NS FILE
    "$RR" check -c "$2" >/dev/null || rr_fail "the manifest does not check: $(cat "$2")"
    # Not through rr_in: $! must be the supervisor (ip netns exec execs it).
    ip netns exec "$1" "$RR" up -c "$2" 2>>"$RR_LOG" &
    RR_PID=$!
    rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "not every service was up within 10 s"
    rr_alive "$RR_PID" || rr_fail "the supervisor exited at start"
}

# The router between two AF_XDP ports on veth, beside whatever rr_topology
# made: rr_three_ns X Y TAG, hosts A and B behind veths PFXa0/PFXa1 and
# PFXb0/PFXb1 (the *1 ends in NS_R are the ports), a manifest in
# $RR_T/x.ini, the supervisor started inside NS_R and every service up, and
# a ping A -> B through it. RR_AFXDP_A_EXTRA, RR_AFXDP_B_EXTRA: manifest
# lines for port a, b ("\n" separates them); RR_AFXDP_SVC_EXTRA: for each
# [service]; RR_AFXDP_POOL: pool_buffers (8192).
rr_afxdp_up() { # rr_afxdp_up X Y TAG PFX
    local s out
    rr_three_ns "$1" "$2" "$3"
    rr_veth_host "$NS_A" "${4}a0" "${4}a1" "$NS_R" "$HOST_A" "$GW_A"
    rr_veth_host "$NS_B" "${4}b0" "${4}b1" "$NS_R" "$HOST_B" "$GW_B"
    {
        printf '[router]\nname = %s%s\npool_buffers = %s\nrun_dir = %s/run\n\n' "$4" "$$" "${RR_AFXDP_POOL:-8192}" "$RR_T"
        printf '[port a]\ndriver = afxdp\nifname = %sa1\naddress = %s/24\n%b\n\n' "$4" "$GW_A" "${RR_AFXDP_A_EXTRA:-}"
        printf '[port b]\ndriver = afxdp\nifname = %sb1\naddress = %s/24\n%b\n' "$4" "$GW_B" "${RR_AFXDP_B_EXTRA:-}"
        for s in "${RR_SERVICES[@]}"; do
            printf '\n[service %s]\nhang_ms = 3000\n%b\n' "$s" "${RR_AFXDP_SVC_EXTRA:-}"
        done
    } >"$RR_T/x.ini"
    "$RR" check -c "$RR_T/x.ini" >/dev/null || rr_fail "the AF_XDP manifest does not check: $(cat "$RR_T/x.ini")"
    # Not through rr_in: $! must be the supervisor (ip netns exec execs it).
    ip netns exec "$NS_R" "$RR" up -c "$RR_T/x.ini" 2>>"$RR_LOG" &
    RR_PID=$!
    rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "AF_XDP: not every service was up within 10 s"
    rr_alive "$RR_PID" || rr_fail "AF_XDP: the supervisor exited at start"
    rr_ok "up: A $HOST_A -- ${4}a1 [driver-a, router, driver-b] ${4}b1 -- B $HOST_B (AF_XDP)"
    out=$(rr_in "$NS_A" ping -n -c 2 -i 0.2 -W 2 "$HOST_B" 2>&1) || rr_fail "AF_XDP: ping A -> B: $out"
}

# Nothing in flight inside ringrouter: every ring empty, no driver backlog,
# nothing held by the router (a condition to wait on before stopping a
# sink: what was sent has been written out to the hosts).
rr_drained() {
    local k
    rr_stats || return 1
    for k in "${!RRS[@]}"; do
        case $k in
        ring.*.occupancy | *.backlog_depth | router.tx_held) [ "${RRS[$k]}" = 0 ] || return 1 ;;
        esac
    done
}

# The end of a fault campaign (fault_campaign.sh, fault_campaign_afxdp.sh):
# the numbered stream stopped (sender, then, once nothing is in flight,
# the sink), tests/lib/faultcamp.py's report printed and checked: at least
# MIN faults, each carried out, no isolation break, no leak, every kind
# into every one of RR_SERVICES, loss per fault at p99 within $LOSS_P99
# (timing-bound); then every garbage fault refused and counted on the
# RINGS. Sets CAMPAIGN_TOTAL.
rr_campaign_check() { # rr_campaign_check SERVICES_CSV MIN RING...
    local svcs=$1 min=$2 rep total k s p99 h m fb
    shift 2
    rr_ff_stop
    rr_ok "stream: $(cat "$RR_T/send.err"); $(cat "$RR_T/recv.err")"
    rep=$("$RR_PY" "$RR_ROOT/tests/lib/faultcamp.py" report "$RR_T/faults.tsv" \
        --flow ab "$RR_T/ab.send" "$RR_T/ab.bits" "$svcs" --table) || rr_fail "report: $rep"
    sed 's/^/  /' <<<"$rep"
    val() { sed -n "s/^$1 //p" <<<"$rep"; }
    total=$(val faults_total)
    [ "$total" -ge "$min" ] || rr_fail "only $total faults in the time given, expected at least $min"
    [ "$(val faults_not_carried_out)" = 0 ] || rr_fail "$(val faults_not_carried_out) faults were not carried out (see NOTOK)"
    [ "$(val faults_isolation_breaks)" = 0 ] || rr_fail "$(val faults_isolation_breaks) isolation breaks"
    [ "$(val faults_leaked_buffers)" = 0 ] || rr_fail "$(val faults_leaked_buffers) buffers leaked by leak faults"
    for k in kill stop crash corrupt-ring corrupt-meta double-free chain-loop leak slow exhaust; do
        for s in "${RR_SERVICES[@]}"; do
            awk -F'\t' -v k="$k" -v s="$s" '$3 == s && $4 == k { f = 1 } END { exit !f }' "$RR_T/faults.tsv" ||
                rr_fail "kind $k was never injected into $s"
        done
    done
    p99=$(val faults_lost_per_fault_p99)
    [ "$p99" -le "$LOSS_P99" ] || t_timing_fail "the stream lost $p99 datagrams per fault at p99 (bound $LOSS_P99)"
    # Every garbage fault was refused where it should be, and counted.
    rr_stats || rr_fail "stats"
    count() { awk -F'\t' -v k="$1" '$4 == k && $6 == 1 { n++ } END { print n + 0 }' "$RR_T/faults.tsv"; }
    sum() { local c n=0 r; for r in "${rings[@]}"; do for c in "$@"; do n=$((n + $(rr_ctr "ring.$r.$c"))); done; done; echo $n; }
    local rings=("$@")
    h=$(sum drop_bad_handle) m=$(sum drop_bad_frame drop_bad_chain) fb=$(rr_ctr pool.free_bad)
    [ "$h" -ge "$(count corrupt-ring)" ] || rr_fail "drop_bad_handle $h < $(count corrupt-ring) corrupt-ring faults"
    [ "$m" -ge $(($(count corrupt-meta) + $(count chain-loop))) ] ||
        rr_fail "drop_bad_frame + drop_bad_chain $m < $(count corrupt-meta) corrupt-meta + $(count chain-loop) chain-loop faults"
    [ "$fb" -ge "$(count double-free)" ] || rr_fail "free_bad $fb < $(count double-free) double-free faults"
    rr_ok "refused and counted: $h bad handles, $m bad frames or chains, $fb double frees"
    CAMPAIGN_TOTAL=$total
}

# The numbered stream of bench/faultflow, SRC -> DST:9000 at PPS: the sink
# in NS_DST first ($RR_T/ab.bits, recv.err), then the sender in NS_SRC
# ($RR_T/ab.send, send.err); RR_FF_RECV and RR_FF_SEND are their PIDs.
# The binary must be in $RR_T/bin (rr_faultflow_init).
rr_faultflow_init() {
    [ -x "$RR_BIN_DIR/faultflow" ] || rr_fail "$RR_BIN_DIR/faultflow is missing: build with ninja first"
    cp "$RR_BIN_DIR/faultflow" "$RR_T/bin/" || rr_fail "cannot copy faultflow"
}
rr_ff_start() { # rr_ff_start NS_SRC NS_DST DST PPS
    # Not rr_in: $! must be the tool.
    ip netns exec "$2" "$RR_T/bin/faultflow" recv "$3" 9000 "$RR_T/ab.bits" 2>"$RR_T/recv.err" &
    RR_FF_RECV=$!
    RR_EXTRA_PIDS+=("$RR_FF_RECV")
    rr_wait 5 eval "rr_in $2 ss -Hlun 'sport = :9000' | grep -q ." || rr_fail "the sink did not bind"
    ip netns exec "$1" "$RR_T/bin/faultflow" send "$3" 9000 "$4" "$RR_T/ab.send" 2>"$RR_T/send.err" &
    RR_FF_SEND=$!
    RR_EXTRA_PIDS+=("$RR_FF_SEND")
}

# The stream of rr_ff_start stopped: the sender, then, once nothing is in
# flight inside ringrouter, the sink.
rr_ff_stop() {
    local p
    for p in "$RR_FF_SEND" "$RR_FF_RECV"; do
        kill -TERM "$p" 2>/dev/null
        rr_wait 5 eval "! rr_alive $p" || rr_fail "pid $p (a flow tool) did not stop"
        wait "$p" || rr_fail "a flow tool exited with status $?"
        [ "$p" != "$RR_FF_SEND" ] || rr_wait 5 rr_drained || rr_fail "ringrouter still held packets 5 s after the sender stopped"
    done
}

# rr_ff_counts: rr_ff_stop, then what the stream did: RR_FF_SENT, RR_FF_GOT,
# RR_FF_TOP (the highest number received), RR_FF_DUP, RR_FF_REORD, and
# RR_FF_WHOLE (all arrived, once and in order) or not.
rr_ff_counts() {
    rr_ff_stop
    read -r _ RR_FF_SENT _ _ <"$RR_T/send.err"
    read -r _ RR_FF_GOT _ RR_FF_TOP _ RR_FF_DUP <"$RR_T/recv.err"
    RR_FF_REORD=$(sed -n 's/^reordered //p' "$RR_T/recv.err")
    RR_FF_WHOLE=
    [ "$RR_FF_GOT" = "$RR_FF_SENT" ] && [ "$RR_FF_DUP" = 0 ] && [ "$RR_FF_TOP" = $((RR_FF_SENT - 1)) ] &&
        [ "$RR_FF_REORD" = 0 ] && RR_FF_WHOLE=1
    RR_FF_SAID="sent $RR_FF_SENT, received $RR_FF_GOT (highest $RR_FF_TOP), $RR_FF_DUP duplicates, $RR_FF_REORD reordered"
}

# rr_ff_whole WHAT: rr_ff_counts, and every datagram sent must have arrived,
# once and in order ("the stream WHAT: ..." otherwise).
rr_ff_whole() {
    rr_ff_counts
    [ -n "$RR_FF_WHOLE" ] || rr_fail "the stream $1: $RR_FF_SAID"
}

# After rr_start, IPv6 on the hosts' side of rr_topology's TAPs: no DAD, no
# RAs, PFX_A::2/64 on A's and PFX_B::2/64 on B's, and with ROUTES=routes a
# default route via the router's PFX::1 on each.
rr_hosts_ipv6() { # rr_hosts_ipv6 PFX_A PFX_B [routes]
    local x ns ifn p
    for x in a b; do
        if [ $x = a ]; then ns=$RR_NS_A ifn=$RR_IF_A p=$1; else ns=$RR_NS_B ifn=$RR_IF_B p=$2; fi
        rr_in "$ns" sysctl -qw "net.ipv6.conf.$ifn.accept_dad=0" "net.ipv6.conf.$ifn.accept_ra=0" || rr_fail "sysctl $ifn"
        ip -n "$ns" -6 addr add "$p::2/64" dev "$ifn" nodad || rr_fail "addr add $p::2 in $ns"
        [ "${3:-}" != routes ] || ip -n "$ns" -6 route add default via "$p::1" dev "$ifn" ||
            rr_fail "route add default via $p::1 in $ns"
    done
}

rr_listening() { rr_in "$1" ss -Hltn "sport = :$2" | grep -q LISTEN; } # rr_listening NS PORT

# iperf3 server in NS on ADDR:PORT, waited for (bounded); its PID is ended at exit.
rr_iperf_server() { # rr_iperf_server NS ADDR PORT
    ip netns exec "$1" iperf3 -s -B "$2" -p "$3" >"$RR_T/iperf-srv-$1.log" 2>&1 & # not rr_in: $! must be iperf3
    RR_EXTRA_PIDS+=($!)
    rr_wait 5 rr_listening "$1" "$3" || rr_fail "iperf3 server in $1 did not listen: $(cat "$RR_T/iperf-srv-$1.log")"
}

# rr_no_forward NS: Linux's own IPv4 forwarding off in NS, and checked off,
# so that the kernel can never forward what ringrouter should (a new
# namespace inherits the host's ip_forward and conf.all/default otherwise).
rr_no_forward() {
    local k v
    rr_in "$1" sysctl -qw net.ipv4.ip_forward=0 net.ipv4.conf.all.forwarding=0 net.ipv4.conf.default.forwarding=0 ||
        rr_fail "cannot turn IPv4 forwarding off in $1"
    for k in net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv4.conf.default.forwarding; do
        v=$(rr_in "$1" sysctl -n "$k") || rr_fail "sysctl $k in $1"
        [ "$v" = 0 ] || rr_fail "$k is $v in $1 after setting it to 0"
    done
}

rr_netns() { # rr_netns SUFFIX: prints nothing, sets $RR_NS (forwarding off: rr_no_forward)
    RR_NS=rrt-$$-$1
    ip netns add "$RR_NS" || rr_fail "ip netns add $RR_NS"
    RR_NETNS+=("$RR_NS")
    ip -n "$RR_NS" link set lo up
    rr_no_forward "$RR_NS"
}

rr_topology() { # rr_topology [EXTRA MANIFEST TEXT]
    local s
    local n=$(($$ % 250 + 1))
    rr_netns a
    RR_NS_A=$RR_NS
    rr_netns b
    RR_NS_B=$RR_NS
    RR_IF_A=rrt$$a
    RR_IF_B=rrt$$b
    RR_NET_A=10.61.$n
    RR_NET_B=10.62.$n
    RR_GW_A=$RR_NET_A.1 RR_HOST_A=$RR_NET_A.2
    RR_GW_B=$RR_NET_B.1 RR_HOST_B=$RR_NET_B.2
    {
        printf '[router]\nname = rt%s\npool_buffers = %s\nrun_dir = %s/run\n' "$$" "${RR_POOL:-8192}" "$RR_T"
        [ -z "${RR_FRAME_SIZE:-}" ] || printf 'frame_size = %s\n' "$RR_FRAME_SIZE"
        [ -z "${RR_ROUTER_EXTRA:-}" ] || printf '%b\n' "$RR_ROUTER_EXTRA"
        printf '\n'
        printf '[port a]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/%s\n' "$RR_IF_A" "$RR_NS_A" "$RR_GW_A" "${RR_PLEN_A:-24}"
        [ -z "${RR_ADDR6_A:-}" ] || printf 'address6 = %s\n' "$RR_ADDR6_A"
        printf '\n[port b]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s/24\n' "$RR_IF_B" "$RR_NS_B" "$RR_GW_B"
        [ -z "${RR_ADDR6_B:-}" ] || printf 'address6 = %s\n' "$RR_ADDR6_B"
        [ -z "${RR_MTU_B:-}" ] || printf 'mtu = %s\n' "$RR_MTU_B"
        # The machines here are 2 shared vCPUs; other tests' busy generators can
        # starve every process for more than the default 200 ms, which the
        # supervisor takes for a hang. These tests are about forwarding, and
        # assert that nothing restarted, so give the heartbeat room.
        for s in "${RR_SERVICES[@]}"; do
            printf '\n[service %s]\nhang_ms = %s\n' "$s" "${RR_HANG_MS:-3000}"
            [ -z "${RR_SCHED:-}" ] || printf 'sched = %s\n' "$RR_SCHED"
            [ -z "${RR_SVC_EXTRA:-}" ] || printf '%b\n' "$RR_SVC_EXTRA"
        done
        [ $# -gt 0 ] && printf '\n%s\n' "$1"
    } >"$RR_T/m.ini"
    "$RR" check -c "$RR_T/m.ini" >/dev/null || rr_fail "the manifest does not check: $(cat "$RR_T/m.ini")"
}

# rr_c ARGS...: one ringrouter command against this supervisor ($RR_SOCK);
# sets $out, $err and $rc.
rr_c() {
    "$RR" "$@" -S "$RR_SOCK" >"$RR_T/out" 2>"$RR_T/err"
    rc=$?
    out=$(cat "$RR_T/out")
    err=$(cat "$RR_T/err")
}

# rr_said WHAT WANT: the last rr_c exited 0 and printed exactly WANT.
rr_said() {
    [ "$rc" = 0 ] && [ "$out" = "$2" ] || rr_fail "$1: exit $rc: $err; said:
$out
expected:
$2"
}

# One status query: fills RR_STATE, RR_PIDS, RR_RESTARTS, RR_PLANNED. 1 if no answer.
# The human table, as tests/lib/sup.sh sup_status reads it: the same fields
# as --json's, without a Python start for every poll (tests poll it often).
rr_status() {
    local out
    local rc
    out=$("$RR" status -S "$RR_SOCK" 2>/dev/null)
    rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 3 ] || return 1 # 3: a service is failed
    [[ $out == SERVICE* ]] || return 1
    RR_STATE=() RR_PIDS=() RR_RESTARTS=() RR_PLANNED=()
    local name state pid standby restarts planned
    while read -r name state pid standby restarts planned _; do
        [ "$name" = SERVICE ] && continue
        RR_STATE[$name]=$state
        RR_PIDS[$name]=$pid
        RR_RESTARTS[$name]=$restarts
        RR_PLANNED[$name]=$planned
    done <<<"$out"
}

# rr_remember_services: services outlive a supervisor killed with -9; each
# running one of RR_SERVICES joins RR_EXTRA_PIDS, ended by pid at exit.
rr_remember_services() {
    rr_status || rr_fail "status"
    local s
    for s in "${RR_SERVICES[@]}"; do
        [ -n "${RR_PIDS[$s]:-}" ] && [ "${RR_PIDS[$s]}" != 0 ] && RR_EXTRA_PIDS+=("${RR_PIDS[$s]}")
    done
}

rr_all_up() {
    rr_status || return 1
    local s
    for s in "${RR_SERVICES[@]}"; do
        [ "${RR_STATE[$s]:-}" = up ] || return 1
    done
}

# Every counter of `stats --json` into RRS: "svc.counter" and
# "ring.NAME.counter", plus "pool.alloc_fail", "pool.free_bad" and
# "shm_corrupt" (what the supervisor found corrupt in shared memory).
rr_stats() {
    local out k v
    out=$("$RR" stats --json -S "$RR_SOCK" 2>/dev/null) || return 1
    out=$("$RR_PY" -c '
import json, sys
d = json.load(sys.stdin)
for s in d["services"]:
    for k, v in s["counters"].items():
        print(s["name"] + "." + k, v)
for r in d["rings"]:
    for k, v in r.items():
        if isinstance(v, int):
            print("ring." + r["name"] + "." + k, v)
for k, v in d["pool"].items():
    print("pool." + k, v)
print("shm_corrupt", d.get("shm_corrupt", 0))' <<<"$out") || return 1
    RRS=()
    while read -r k v; do
        RRS[$k]=$v
    done <<<"$out"
}

rr_ctr() { echo "${RRS[$1]:-0}"; } # rr_ctr KEY: a counter of the last rr_stats

# Counters that only malformed input (or a broken peer) raises.
RR_MALFORMED=(router.drop_runt router.drop_bad_version router.drop_bad_ihl router.drop_bad_checksum
    router.drop_bad_total_length router.drop_bad_port router.arp_bad router.drop_icmp_bad_checksum
    router.drop_bad_options pool.free_bad pool.mag_bad shm_corrupt)
for _r in rx-a rx-b tx-a tx-b; do
    for _c in drop_bad_handle drop_bad_owner drop_bad_frame drop_bad_chain; do
        RR_MALFORMED+=("ring.$_r.$_c")
    done
done
unset _r _c

# rr_zero KEY...: each counter of the last rr_stats exists and is 0.
rr_zero() {
    local c
    for c in "$@"; do
        [ -n "${RRS[$c]+x}" ] || rr_fail "no counter $c in stats --json"
        [ "${RRS[$c]}" = 0 ] || rr_fail "$c = ${RRS[$c]}, expected 0"
    done
}

# rr_no_restarts: every service is up and has never restarted.
rr_no_restarts() {
    rr_status || rr_fail "status"
    local s
    for s in "${RR_SERVICES[@]}"; do
        [ "${RR_STATE[$s]}" = up ] || rr_fail "$s is ${RR_STATE[$s]}"
        [ "${RR_RESTARTS[$s]}" = 0 ] || rr_fail "$s restarted ${RR_RESTARTS[$s]} times (last exit: see log)"
    done
}

# rr_up: `ringrouter up -c $RR_T/m.ini` (log $RR_LOG), sets $RR_PID, waits
# (bounded) until every service of $RR_SERVICES is up; nothing on the hosts.
rr_up() {
    "$RR" up -c "$RR_T/m.ini" 2>>"$RR_LOG" &
    RR_PID=$!
    RR_RC=
    rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "not every service was up within 10 s"
    if ! rr_alive "$RR_PID"; then
        wait "$RR_PID"
        RR_RC=$?
        RR_PID=
        rr_fail "the supervisor exited with status $RR_RC at start"
    fi
}

# rr_host_side NS IFNAME HOST GW: the host's side of a TAP: HOST/24 on it,
# up, and a default route via the router's GW.
rr_host_side() {
    ip -n "$1" link show "$2" >/dev/null 2>&1 || rr_fail "no device $2 in $1"
    ip -n "$1" addr add "$3/24" dev "$2" || rr_fail "addr add $3 in $1"
    ip -n "$1" link set "$2" up || rr_fail "link set $2 up in $1"
    ip -n "$1" route add default via "$4" || rr_fail "route add default via $4 in $1"
}

rr_start() {
    rr_up
    rr_host_side "$RR_NS_A" "$RR_IF_A" "$RR_HOST_A" "$RR_GW_A"
    rr_host_side "$RR_NS_B" "$RR_IF_B" "$RR_HOST_B" "$RR_GW_B"
}

rr_stop() { # rr_stop [SECS]
    local secs=${1:-10}
    [ -n "$RR_PID" ] || return 0
    kill -TERM "$RR_PID" 2>/dev/null
    if ! rr_wait "$secs" eval '! rr_alive $RR_PID'; then
        echo "the supervisor did not exit within $secs s of SIGTERM; killing it"
        kill -KILL "$RR_PID" 2>/dev/null
    fi
    wait "$RR_PID" 2>/dev/null
    RR_RC=$?
    RR_PID=
}

rr_census_ok() { # the census rule: tests/lib/common.sh t_census_check
    local out
    out=$(t_census_check "$RR_LOG" "$RR_RC") || rr_fail "$out"
    rr_ok "$out"
}

# The MAC a host resolved for the router's address GW in NS (after traffic).
rr_router_mac() { # rr_router_mac NS GW
    ip -n "$1" neigh show "$2" | awk '{ for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1) }'
}

# rr_resolve: pings A -> B and B -> A (so both hosts and the router resolve
# each other), then RR_MAC_A / RR_MAC_B: the router's MACs as A / B resolved
# them, RR_HMAC_A / RR_HMAC_B: the hosts' own MACs.
rr_resolve() {
    local d ns dst out
    for d in "$RR_NS_A $RR_HOST_B" "$RR_NS_B $RR_HOST_A"; do
        read -r ns dst <<<"$d"
        out=$(rr_in "$ns" ping -n -c 2 -i 0.2 -W 2 "$dst" 2>&1) || rr_fail "ping $dst from $ns: $out"
    done
    RR_MAC_A=$(rr_router_mac "$RR_NS_A" "$RR_GW_A")
    RR_MAC_B=$(rr_router_mac "$RR_NS_B" "$RR_GW_B")
    [ -n "$RR_MAC_A" ] && [ -n "$RR_MAC_B" ] || rr_fail "the hosts did not resolve the router's MACs"
    RR_HMAC_A=$(rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/address") || rr_fail "A's MAC"
    RR_HMAC_B=$(rr_in "$RR_NS_B" cat "/sys/class/net/$RR_IF_B/address") || rr_fail "B's MAC"
}

# rr_trafgen_start NS DEV CFG [TRAFGEN ARGS...]: trafgen on DEV in NS, its
# log in $RR_T/trafgen.log; sets RR_TG (the parent) and RR_TGW (its forked
# worker), both ended by PID at exit whatever happens.
RR_TG= RR_TGW=
rr_trafgen_start() {
    local ns=$1 dev=$2 cfg=$3
    shift 3
    ip netns exec "$ns" trafgen -o "$dev" -c "$cfg" -P 1 -q --no-sock-mem "$@" >"$RR_T/trafgen.log" 2>&1 &
    RR_TG=$! # not rr_in: $! must be trafgen
    RR_EXTRA_PIDS+=("$RR_TG")
    rr_wait 5 eval 'RR_TGW=$(cat /proc/$RR_TG/task/*/children 2>/dev/null); [ -n "$RR_TGW" ]' ||
        rr_fail "trafgen started no worker: $(cat "$RR_T/trafgen.log")"
    RR_EXTRA_PIDS+=($RR_TGW)
}

# rr_trafgen_stop: SIGINT to both, a bounded wait for them to go.
rr_trafgen_gone() {
    local w
    for w in $RR_TG $RR_TGW; do ! rr_alive "$w" || return 1; done
}
rr_trafgen_stop() {
    kill -INT "$RR_TG" $RR_TGW 2>/dev/null
    rr_wait 5 rr_trafgen_gone || rr_fail "trafgen did not stop"
    wait "$RR_TG" 2>/dev/null
}

# --- Faults under traffic (tests/integ/faults_*.sh): tests/lib/router_faults.sh
. "$RR_ROOT/tests/lib/router_faults.sh"

# The end of a test with timing bounds: 75 if one was missed (and, since
# every other failure has exited 1 already, nothing else failed).
rr_timing_exit() {
    [ "$RR_TIMING_FAILS" = 0 ] && return 0
    echo "FAIL (timing only): $RR_NAME: $RR_TIMING_FAILS timing bounds missed (TIMING lines above)"
    exit 75
}

# The seed of a test's randomness: the runner's RR_TEST_SEED, else our own, printed.
rr_seed() {
    RR_SEED=${RR_TEST_SEED:-$((($$ ^ ${EPOCHSECONDS:-0}) & 32767))}
    RANDOM=$RR_SEED
    echo "seed $RR_SEED (RR_TEST_SEED=$RR_SEED reproduces it)"
}
