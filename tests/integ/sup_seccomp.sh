#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_seccomp.sh: every service runs under its seccomp allow-list
# (ipc/sandbox.h), and a service that makes a forbidden call dies of it, is
# named in the log and restarted like after any crash.
#
# 1. Stand-ins: driver-a runs as rr-null-evil-syscall (tests/svc/nulldrv.c),
#    which calls socket(AF_INET) once ready, the first time only (it keeps
#    the fact in its stats region). It must die of SIGSYS, the log must say
#    "driver-a: killed by SIGSYS: a forbidden system call (seccomp);
#    restarting now", its successor (the standby) must take over and carry
#    traffic again, `status` must show the restart and the reason, the other
#    services must not restart, the supervisor must stay up and the census at
#    shutdown must be clean. Without the filter the stand-in survives its
#    socket() and says so: the test fails.
# 2. Real services, the ones that parse packets from the network: rr-router,
#    rr-tap on port a (a TAP in namespace A), rr-afxdp on port b (a veth to
#    namespace B; a TAP port instead where the kernel has no AF_XDP) and
#    rr-shaper on port b. Each running instance shows "Seccomp: 2" (filter
#    mode) with three filters stacked (the supervisor's ceiling, then the
#    service's start and run, Seccomp_filters), "NoNewPrivs: 1" and its
#    /proc entries root's (not dumpable), each
#    parked standby "Seccomp: 2" with two (ceiling and start: it has not
#    reached ready). A ping crosses A -> router -> B. After kill -9 of every
#    service the promoted standbys show three filters, the ping crosses
#    again, no service died of SIGSYS, and the census is clean.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_seccomp

# "MODE FILTERS" of PID from /proc/PID/status ("2 2"; FILTERS "-" where the
# kernel does not report it).
seccomp_of() { # seccomp_of PID
    awk '$1 == "Seccomp:" { m = $2 } $1 == "Seccomp_filters:" { f = $2 }
         END { if (m == "") m = "?"; if (f == "") f = "-"; print m, f }' "/proc/$1/status" 2>/dev/null
}

# check_filters WHAT PID FILTERS: mode 2, and FILTERS filters where reported.
check_filters() {
    local what=$1 pid=$2 want=$3 m f
    read -r m f <<<"$(seccomp_of "$pid")"
    if [ "$m" != 2 ]; then
        sup_bad "$what (pid $pid): Seccomp: $m, expected 2 (filter)"
        return
    fi
    if [ "$f" != - ] && [ "$f" != "$want" ]; then
        sup_bad "$what (pid $pid): Seccomp_filters: $f, expected $want"
        return
    fi
    local nnp
    nnp=$(awk '$1 == "NoNewPrivs:" { print $2 }' "/proc/$pid/status" 2>/dev/null)
    [ "$nnp" = 1 ] || sup_bad "$what (pid $pid): NoNewPrivs: $nnp, expected 1"
    # Not dumpable: the kernel makes its /proc entries root's.
    local owner
    owner=$(stat -c %u "/proc/$pid/status" 2>/dev/null)
    [ "$owner" = 0 ] || sup_bad "$what (pid $pid): /proc/$pid/status is uid $owner's: dumpable"
    echo "  $what (pid $pid): Seccomp: $m, filters: $f, NoNewPrivs: $nnp, not dumpable"
}

# Every standby exec'd and parked (a pid without '*').
standbys_parked() {
    sup_status || return 1
    local s
    for s in "${SUP_SERVICES[@]}"; do
        [[ "${SUP_STANDBY[$s]:-}" =~ ^[0-9]+$ ]] || return 1
    done
}

# Every service and its standby under the filter: three filters running, two parked.
check_all() {
    sup_wait 10 standbys_parked || sup_bad "not every standby was parked within 10 s"
    sup_status || sup_fail "status did not answer"
    local s
    for s in "${SUP_SERVICES[@]}"; do
        check_filters "$s" "${SUP_PIDS[$s]}" 3
        [[ "${SUP_STANDBY[$s]:-}" =~ ^[0-9]+$ ]] && check_filters "$s standby" "${SUP_STANDBY[$s]}" 2
    done
}

counter() { # counter SVC NAME
    sup_counters | awk -v k="$1.$2" '$1 == k { print $2 }'
}

# ---- 1. the stand-ins, one of which makes a forbidden call ----
echo "stand-ins, driver-a as rr-null-evil-syscall:"
cp "$SUP_T/bin/rr-null" "$SUP_T/bin/rr-null-evil-syscall" || sup_fail "cannot copy rr-null"
sup_netns
sup_manifest "$SUP_T/m.ini" driver-a.binary=rr-null-evil-syscall
sup_start_nowait "$SUP_NS" "$SUP_T/m.ini"
died='ringrouter: driver-a: killed by SIGSYS: a forbidden system call (seccomp); restarting now'
sup_wait 10 sup_log_line "$died" ||
    sup_fail "no line \"$died\" within 10 s$(grep -h 'evil-syscall' "$SUP_LOG" | sed 's/^/; /' | tr -d '\n')"
echo "  log: $died"
grep -q 'evil-syscall mode: socket() returned' "$SUP_LOG" && sup_bad "the stand-in's socket() returned: no filter"
sup_wait 10 eval 'sup_all_up && [ "${SUP_RESTARTS[driver-a]}" = 1 ]' ||
    sup_fail "driver-a was not up again, restarted once, within 10 s"
n=$(grep -c 'rr-null: evil-syscall mode: socket(AF_INET) after ready' "$SUP_LOG")
[ "$n" = 1 ] || sup_bad "the stand-in tried its forbidden call $n times, expected once"
grep -qE '^ringrouter: driver-a: (standby pid [0-9]+ takes over|started, pid [0-9]+)$' "$SUP_LOG" ||
    sup_bad "no line says how driver-a came back"
last=$(sup_svc_json driver-a last_exit)
[ "$last" = "killed by SIGSYS: a forbidden system call (seccomp)" ] ||
    sup_bad "status: driver-a's last exit is \"$last\""
for s in router driver-b; do
    [ "${SUP_RESTARTS[$s]}" = 0 ] || sup_bad "$s restarted ${SUP_RESTARTS[$s]} times"
done
[ "$(counter driver-a evil_syscalls)" = 1 ] || sup_bad "driver-a's evil_syscalls is $(counter driver-a evil_syscalls), expected 1"
# The successor generates again: driver-b's sink counts its packets.
a=$(counter driver-b sink_pkts)
sup_msleep 300
b=$(counter driver-b sink_pkts)
[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] || sup_bad "no traffic after the restart (driver-b sink_pkts $a -> $b)"
[ "$(counter driver-b sink_bad_stamp)" = 0 ] || sup_bad "driver-b counted bad stamps"
check_all
sup_alive "$SUP_PID" || sup_fail "the supervisor died"
sup_stop TERM 10
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "stand-ins: $out"
echo "  $out"

# ---- 2. the real services ----
sup_bins rr-router rr-tap rr-shaper
afxdp=0
if grep -qw '^XDP' /proc/net/protocols 2>/dev/null && [ -x "$RR_BIN_DIR/rr-afxdp" ] && [ -f "$RR_BIN_DIR/steer.bpf.o" ]; then
    afxdp=1
    sup_bins rr-afxdp
    cp "$RR_BIN_DIR/steer.bpf.o" "$SUP_T/bin/" && chmod 644 "$SUP_T/bin/steer.bpf.o" || sup_fail "cannot copy steer.bpf.o"
fi
SUP_SERVICES=(router driver-a driver-b shaper-b)
SUP_LOG=$SUP_T/log-real
sup_netns
NS=$SUP_NS
sup_netns
NS_A=$SUP_NS
sup_netns
NS_B=$SUP_NS
n=$(($$ % 250 + 1))
GW_A=10.95.$n.1 HOST_A=10.95.$n.2 GW_B=10.96.$n.1 HOST_B=10.96.$n.2
{
    printf '[router]\nname = t2\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$SUP_T"
    printf '[port a]\ndriver = tap\nifname = rrt-sa\nnetns = %s\naddress = %s/24\n\n' "$NS_A" "$GW_A"
    if [ "$afxdp" = 1 ]; then
        ip -n "$NS_B" link add xb0 type veth peer name xb1 netns "$NS" || sup_fail "veth xb0/xb1"
        ip -n "$NS_B" addr add "$HOST_B/24" dev xb0 && ip -n "$NS_B" link set xb0 up &&
            ip -n "$NS_B" route add default via "$GW_B" && ip -n "$NS" link set xb1 up || sup_fail "host B on xb0"
        printf '[port b]\ndriver = afxdp\nifname = xb1\naddress = %s/24\nxdp_mode = copy\n\n' "$GW_B"
        bin_b=rr-afxdp
    else
        echo "  note: no AF_XDP here: port b is a TAP port"
        printf '[port b]\ndriver = tap\nifname = rrt-sb\nnetns = %s\naddress = %s/24\n\n' "$NS_B" "$GW_B"
        bin_b=rr-tap
    fi
    printf '[shaper b]\nrate = 100mbit\n'
    for s in router:rr-router driver-a:rr-tap driver-b:$bin_b shaper-b:rr-shaper; do
        printf '\n[service %s]\nbinary = %s\nhang_ms = 3000\nrestart_limit = 100\n' "${s%%:*}" "${s#*:}"
    done
} >"$SUP_T/real.ini"
"$RR" check -c "$SUP_T/real.ini" >/dev/null || sup_fail "the manifest does not check: $(cat "$SUP_T/real.ini")"
echo "real services: rr-router, rr-tap (a), $bin_b (b), rr-shaper (b):"
sup_start "$NS" "$SUP_T/real.ini"
ip -n "$NS_A" addr add "$HOST_A/24" dev rrt-sa && ip -n "$NS_A" link set rrt-sa up &&
    ip -n "$NS_A" route add default via "$GW_A" || sup_fail "host A on rrt-sa"
if [ "$afxdp" = 0 ]; then
    ip -n "$NS_B" addr add "$HOST_B/24" dev rrt-sb && ip -n "$NS_B" link set rrt-sb up &&
        ip -n "$NS_B" route add default via "$GW_B" || sup_fail "host B on rrt-sb"
fi
ping_ok() { # ping_ok WHAT
    local out
    out=$(ip netns exec "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$HOST_B" 2>&1)
    if grep -q ' 3 received' <<<"$out"; then
        echo "  ping A -> B through the router ($1): 3 of 3"
    else
        sup_bad "ping A -> B ($1): $(tail -n 2 <<<"$out" | head -n 1)"
    fi
}
ping_ok "first start"
check_all

sup_kill_all_wait 10 || sup_fail "the real services were not all back within 10 s of kill -9"
echo "after kill -9 of every service:"
check_all
ping_ok "after the restarts"
grep -q 'SIGSYS' "$SUP_LOG" && sup_bad "a real service died of its filter: $(grep -m 1 SIGSYS "$SUP_LOG")"
sup_status || sup_fail "status did not answer"
for s in "${SUP_SERVICES[@]}"; do
    [ "${SUP_RESTARTS[$s]}" = 1 ] || sup_bad "$s restarted ${SUP_RESTARTS[$s]} times, expected once (the kill)"
done
sup_alive "$SUP_PID" || sup_fail "the supervisor died"
sup_stop TERM 10
out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_bad "real services: $out"
echo "  $out"
sup_verdict sup_seccomp
