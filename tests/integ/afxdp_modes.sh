#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/afxdp_modes.sh: the AF_XDP port keys and poll_us, each one
# forwarding and each one seen to take effect.
#
#   ns A (10.71.N.2) --veth xa0|xa1-- [ns R: ringrouter; R's kernel has
#   10.71.N.3 on xa1] --veth xb1|xb0-- ns B (10.72.N.2)
#
# Run 1, xdp_mode = copy on both ports; port a busy_poll_us = 50,
# busy_poll_budget = 16; [router] stages = on, [service router] poll_us = 200,
# [service driver-b] poll_us = 50:
#   - the log says "copy, XDP native", `ip link` shows xdp (not xdpgeneric);
#   - ping A -> B through the router;
#   - steer = forward-only (default): R's own 10.71.N.3 answers A's pings
#     (its kernel, passed_host rises by at least the pings);
#   - driver-a's socket has SO_BUSY_POLL 50, SO_BUSY_POLL_BUDGET 16 and
#     SO_PREFER_BUSY_POLL 1 (read from the driver's fd with pidfd_getfd; the
#     budget only where the kernel can read it back), driver-b's the
#     defaults 20 and 64; xa1's napi_defer_hard_irqs is 2
#     while up; driver-a counts busy_polls, or none where the log says its
#     socket names no NAPI (Linux 6.13+ on a veth: polls_ok);
#   - the router's poll stage (stats --stages) ran: poll_us took effect.
# Run 2, xdp_mode = skb on both ports; port a steer = all, busy_poll = no:
#   - the log says "skb"/"XDP generic", "steer = all", "busy_poll = no";
#     `ip link` shows xdpgeneric;
#   - ping A -> B through the router;
#   - steer = all: A's pings to 10.71.N.3 go to the router (redirected rises,
#     passed_host does not; the router sees A's ARP requests for it) and R's
#     kernel never answers them;
#   - busy_poll = no: driver-a's socket has SO_BUSY_POLL 0 and no preference,
#     its busy_polls stay 0 under traffic; xa1's napi_defer_hard_irqs is
#     still set, to port a's napi_defer_hard_irqs = 4, while up (it
#     coalesces the NAPI without busy polling too), and back to its own
#     value after; port b (busy_poll yes) counts busy polls (polls_ok);
#   - the router's poll stage never ran (poll_us 0).
# Each run: no restarts, no malformed-input counter, a clean census, no XDP
# program left. Skips (77) when not root, a tool is missing, or no AF_XDP.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init afxdp_modes
rr_need ethtool
rr_afxdp_init

rr_three_ns 71 72
R_ADDR=$NET_A.3 # R's kernel's own address on xa1
rr_veth_host "$NS_A" xa0 xa1 "$NS_R" "$HOST_A" "$GW_A"
rr_veth_host "$NS_B" xb0 xb1 "$NS_R" "$HOST_B" "$GW_B"
ip -n "$NS_R" addr add "$R_ADDR/24" dev xa1 || rr_fail "addr $R_ADDR on xa1"
knob() { rr_in "$NS_R" cat /sys/class/net/xa1/napi_defer_hard_irqs; }
knob0=$(knob) || rr_fail "cannot read xa1's napi_defer_hard_irqs"

# The busy-poll socket options of a driver's AF_XDP socket, read through a
# duplicate of its fd (pidfd_getfd): "SO_BUSY_POLL SO_BUSY_POLL_BUDGET SO_PREFER_BUSY_POLL"
# (the budget "-" where the kernel has no getsockopt for it).
cat >"$RR_T/xskopt.py" <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
pfd = libc.syscall(434, pid, 0)  # pidfd_open
if pfd < 0:
    sys.exit("pidfd_open: %s" % os.strerror(ctypes.get_errno()))
def opt(fd, name, optional=False):
    v, n = ctypes.c_int(0), ctypes.c_uint(4)
    if libc.getsockopt(fd, 1, name, ctypes.byref(v), ctypes.byref(n)) < 0:  # SOL_SOCKET
        if optional and ctypes.get_errno() == 92:  # ENOPROTOOPT: this kernel cannot read it back
            return "-"
        sys.exit("getsockopt %d: %s" % (name, os.strerror(ctypes.get_errno())))
    return v.value
found = []
for fd in os.listdir("/proc/%d/fd" % pid):
    try:
        if not os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"):
            continue
    except OSError:
        continue
    dup = libc.syscall(438, pfd, int(fd), 0)  # pidfd_getfd
    if dup < 0:
        sys.exit("pidfd_getfd: %s" % os.strerror(ctypes.get_errno()))
    if opt(dup, 39) == 44:  # SO_DOMAIN == AF_XDP
        found.append("%s %s %s %s" % (opt(dup, 46), opt(dup, 70, True), opt(dup, 69), opt(dup, 56)))  # 56: SO_INCOMING_NAPI_ID
    os.close(dup)
if len(found) != 1:
    sys.exit("%d AF_XDP sockets in pid %d" % (len(found), pid))
print(found[0])
EOF
xskopt() { # xskopt SERVICE: sets US BUDGET PREFER NAPI from its socket
    local o
    o=$("$RR_PY" "$RR_T/xskopt.py" "${RR_PIDS[$1]}" 2>&1) || rr_fail "cannot read $1's socket options: $o"
    read -r US BUDGET PREFER NAPI <<<"$o"
}
# Linux 6.13+, where a socket takes its NAPI id at bind (supervisor/xsk.c)?
kmaj=$(uname -r | cut -d. -f1) kmin=$(uname -r | cut -d. -f2 | tr -cd 0-9)
NAPI_AT_BIND=$([ "$kmaj" -gt 6 ] || { [ "$kmaj" = 6 ] && [ "${kmin:-0}" -ge 13 ]; } && echo 1 || echo 0)
budget_ok() { [ "$BUDGET" = - ] || [ "$BUDGET" = "$1" ]; } # budget_ok N
# polls_ok LABEL PORT SERVICE: a port with busy_poll = yes busy-polls under
# traffic, unless the supervisor found its socket names no NAPI (Linux
# 6.13+ on a veth), when the driver must not poll at all: a poll would
# cost a system call and poll nothing.
polls_ok() {
    local n noted=0
    n=$(rr_ctr "$3.busy_polls")
    grep -q "port $2: busy_poll = yes, but the AF_XDP socket on .* names no NAPI" "$RR_LOG" && noted=1
    # The notice against the socket itself: on 6.13+ exactly when its
    # SO_INCOMING_NAPI_ID is 0; before, never (the id comes with a frame).
    xskopt "$3"
    [ "$noted" = "$([ "$NAPI_AT_BIND" = 1 ] && [ "$NAPI" = 0 ] && echo 1 || echo 0)" ] ||
        rr_fail "$1: $3's socket has NAPI id $NAPI (Linux $(uname -r)), yet the no-NAPI notice is $([ "$noted" = 1 ] && echo there || echo missing)"
    if [ "$noted" = 1 ]; then
        [ "$n" = 0 ] || rr_fail "$1: port $2's socket names no NAPI, yet $3 made $n busy polls"
        NONAPI=" (no NAPI id on this kernel: no polls)"
    else
        [ "$n" -gt 0 ] || rr_fail "$1: $3 counted no busy polls"
        NONAPI=""
    fi
}

# run LABEL PORT_A_KEYS PORT_B_KEYS EXTRA: write the manifest, start, wait.
run() {
    local label=$1
    : >"$RR_LOG"
    {
        printf '[router]\nname = am%s\npool_buffers = 8192\nrun_dir = %s/run\nstages = on\n\n' "$$" "$RR_T"
        printf '[port a]\ndriver = afxdp\nifname = xa1\naddress = %s/24\n%s\n\n' "$GW_A" "$2"
        printf '[port b]\ndriver = afxdp\nifname = xb1\naddress = %s/24\n%s\n\n' "$GW_B" "$3"
        printf '%s\n' "$4"
    } >"$RR_T/$label.ini"
    "$RR" check -c "$RR_T/$label.ini" >/dev/null || rr_fail "$label: the manifest does not check: $(cat "$RR_T/$label.ini")"
    ip netns exec "$NS_R" "$RR" up -c "$RR_T/$label.ini" 2>>"$RR_LOG" & # not rr_in: $! must be the supervisor
    RR_PID=$!
    rr_wait 10 eval 'rr_all_up || ! rr_alive $RR_PID' || rr_fail "$label: not every service was up within 10 s"
    rr_alive "$RR_PID" || rr_fail "$label: the supervisor exited at start"
}
ping_ok() { # ping_ok NS DST
    local out
    out=$(rr_in "$1" ping -n -c 3 -i 0.2 -W 2 "$2" 2>&1) || rr_fail "ping $2 from $1: $out"
    grep -q " 3 received" <<<"$out" || rr_fail "ping $2 from $1 lost replies: $out"
}
xdp() { # xdp PORT FIELD: a steering counter of stats --json
    "$RR" stats --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
print(next(x for x in json.load(sys.stdin)["xdp"] if x["port"] == sys.argv[1])[sys.argv[2]])' "$1" "$2" ||
        rr_fail "no xdp counters for port $1"
}
poll_cycles() { # the router's poll stage cycles (stats --stages --json)
    "$RR" stats --stages --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
r = next(s for s in json.load(sys.stdin)["services"] if s["name"] == "router")
print(next(st for st in r["stages"] if st["name"] == "poll")["cycles"])' || rr_fail "stats --stages --json"
}
link_xdp() { # the XDP attach kind on DEV in R: xdp (native), xdpgeneric, or nothing
    ip -n "$NS_R" link show "$1" | head -n 1 | grep -Eo ' xdp[a-z]* ' | tr -d ' '
}
finish() { # finish LABEL
    rr_stats || rr_fail "stats"
    rr_zero "${RR_MALFORMED[@]}"
    rr_no_restarts
    rr_stop
    rr_census_ok
    local d
    for d in xa1 xb1; do
        [ -z "$(link_xdp $d)" ] || rr_fail "$1: an XDP program is still on $d after shutdown"
    done
}

# ---- run 1: copy (native XDP), forward-only, busy polling tuned, poll_us ----
run copy $'xdp_mode = copy\nbusy_poll_us = 50\nbusy_poll_budget = 16' 'xdp_mode = copy' \
    $'[service router]\npoll_us = 200\n\n[service driver-b]\npoll_us = 50'
grep -q 'port a: AF_XDP on xa1 queue 0: copy, XDP native, steer = forward-only .*busy_poll = yes' "$RR_LOG" ||
    rr_fail "copy: no 'copy, XDP native, steer = forward-only ... busy_poll = yes' line for port a: $(grep AF_XDP "$RR_LOG")"
[ "$(link_xdp xa1)" = xdp ] && [ "$(link_xdp xb1)" = xdp ] ||
    rr_fail "copy: ip link shows '$(link_xdp xa1)' / '$(link_xdp xb1)', expected xdp (native) on both"
ping_ok "$NS_A" "$HOST_B"
ping_ok "$NS_B" "$HOST_A"
h0=$(xdp a passed_host)
ping_ok "$NS_A" "$R_ADDR"
h1=$(xdp a passed_host)
[ $((h1 - h0)) -ge 3 ] || rr_fail "copy: forward-only: passed_host rose by $((h1 - h0)) for 3 pings to $R_ADDR"
rr_ok "copy: native XDP on both veths; A <-> B; forward-only: R's $R_ADDR answered by its kernel (passed_host +$((h1 - h0)))"
rr_status || rr_fail "status"
xskopt driver-a
[ "$US $PREFER" = "50 1" ] && budget_ok 16 || rr_fail "copy: driver-a's socket: SO_BUSY_POLL $US, BUDGET $BUDGET, PREFER $PREFER; expected 50 16 1"
a_opts="$US/$BUDGET"
xskopt driver-b
[ "$US $PREFER" = "20 1" ] && budget_ok 64 || rr_fail "copy: driver-b's socket: SO_BUSY_POLL $US, BUDGET $BUDGET, PREFER $PREFER; expected the defaults 20 64 1"
[ "$(knob)" = 2 ] || rr_fail "copy: xa1's napi_defer_hard_irqs is $(knob) while up, expected 2"
rr_stats || rr_fail "stats"
b_opts="$US/$BUDGET"
polls_ok copy a driver-a
pc=$(poll_cycles)
[ "$pc" -gt 0 ] || rr_fail "copy: the router's poll stage never ran with poll_us = 200"
rr_ok "copy: driver-a SO_BUSY_POLL/BUDGET $a_opts, driver-b $b_opts ('-': not readable on this kernel); napi_defer_hard_irqs 2; busy_polls $(rr_ctr driver-a.busy_polls)$NONAPI; router poll stage $pc cycles"
finish copy
[ "$(knob)" = "$knob0" ] || rr_fail "copy: xa1's napi_defer_hard_irqs is $(knob) after shutdown, was $knob0"

# ---- run 2: skb (generic XDP), steer = all, busy_poll = no ----
run skb $'xdp_mode = skb\nsteer = all\nbusy_poll = no\nnapi_defer_hard_irqs = 4' 'xdp_mode = skb' ''
grep -q 'port a: AF_XDP on xa1 queue 0: .*XDP generic, steer = all .*busy_poll = no' "$RR_LOG" ||
    rr_fail "skb: no 'XDP generic, steer = all ... busy_poll = no' line for port a: $(grep AF_XDP "$RR_LOG")"
[ "$(link_xdp xa1)" = xdpgeneric ] && [ "$(link_xdp xb1)" = xdpgeneric ] ||
    rr_fail "skb: ip link shows '$(link_xdp xa1)' / '$(link_xdp xb1)', expected xdpgeneric on both"
ping_ok "$NS_A" "$HOST_B"
ping_ok "$NS_B" "$HOST_A"
rr_in "$NS_A" ip neigh flush dev xa0 >/dev/null 2>&1
rr_stats || rr_fail "stats"
arp0=$(rr_ctr router.rx_arp)
h0=$(xdp a passed_host) r0=$(xdp a redirected)
out=$(rr_in "$NS_A" ping -n -c 3 -i 0.2 -W 1 "$R_ADDR" 2>&1) && rr_fail "skb: steer = all, yet $R_ADDR answered: $out"
h1=$(xdp a passed_host) r1=$(xdp a redirected)
rr_stats || rr_fail "stats"
[ "$h1" = "$h0" ] || rr_fail "skb: steer = all passed $((h1 - h0)) frames to R's kernel"
[ $((r1 - r0)) -ge 1 ] && [ "$(rr_ctr router.rx_arp)" -gt "$arp0" ] ||
    rr_fail "skb: steer = all: redirected +$((r1 - r0)), router rx_arp $arp0 -> $(rr_ctr router.rx_arp): A's ARP for $R_ADDR did not reach the router"
rr_ok "skb: generic XDP on both veths; A <-> B; steer = all: A's traffic for $R_ADDR went to the router (redirected +$((r1 - r0)), passed_host +0), unanswered"
rr_status || rr_fail "status"
xskopt driver-a
[ "$US $PREFER" = "0 0" ] || rr_fail "skb: busy_poll = no, yet driver-a's socket has SO_BUSY_POLL $US, PREFER $PREFER"
[ "$(knob)" = 4 ] || rr_fail "skb: busy_poll = no, napi_defer_hard_irqs = 4: xa1's is $(knob) while up"
[ "$(rr_ctr driver-a.busy_polls)" = 0 ] || rr_fail "skb: busy_poll = no, yet driver-a counted $(rr_ctr driver-a.busy_polls) busy polls"
[ "$(rr_ctr driver-a.rx_pkts)" -gt 0 ] || rr_fail "skb: driver-a received nothing"
polls_ok skb b driver-b
pc=$(poll_cycles)
[ "$pc" = 0 ] || rr_fail "skb: the router's poll stage ran ($pc cycles) with poll_us = 0"
rr_ok "skb: busy_poll = no: driver-a's socket without busy polling, 0 busy polls for $(rr_ctr driver-a.rx_pkts) frames, napi_defer_hard_irqs 4; driver-b $(rr_ctr driver-b.busy_polls) busy polls$NONAPI; router poll stage idle"
finish skb
[ "$(knob)" = "$knob0" ] || rr_fail "skb: xa1's napi_defer_hard_irqs is $(knob) after shutdown, was $knob0"

echo "PASS afxdp_modes"
