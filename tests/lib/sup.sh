# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# tests/lib/sup.sh: shared steps of the supervisor tests (tests/integ/sup_*.sh)
# and of bench/restart. Source it, then:
#
#   sup_init NAME          root check (exit 77 if not root), binaries, temp dir
#                          $SUP_T, EXIT trap that cleans up everything below
#   sup_netns              a fresh, uniquely named network namespace (IPv4
#                          forwarding off); sets $SUP_NS
#   sup_manifest FILE [SVC.KEY=VALUE ...]
#                          the stand-in manifest: two TAP ports, rr-passthru as
#                          router, rr-null as drivers, restart_limit 1000;
#                          arguments override or add [service SVC] keys
#                          (for each service of $SUP_SERVICES); $SUP_ROUTER_KEYS,
#                          if set, is added to [router], and the text in
#                          $SUP_MANIFEST_EXTRA before the services
#   sup_start NS MANIFEST [LOG]
#                          runs `ringrouter up` inside NS (log to LOG, default
#                          $SUP_T/log), sets $SUP_PID, waits until every
#                          service is up (sup_start_nowait: only the socket)
#   sup_stop [SIG] [SECS]  SIGTERM (or SIG), bounded wait, then SIGKILL; sets
#                          $SUP_RC to the exit status (137 if it had to be killed)
#   sup_status             refresh $SUP_STATE[svc], $SUP_PIDS[svc], $SUP_RESTARTS[svc]
#                          (after deaths), $SUP_PLANNED[svc] (restart, upgrade, reload)
#   sup_wait SECS CMD...   run CMD every 10 ms until it succeeds, at most SECS
#   sup_kill_all_wait SECS kill -9 every service, wait until all are up again
#   sup_msleep MS          sleep without a fork
#   sup_now                $SUP_NOW = wall clock in microseconds, no fork
#   sup_fail MSG           print FAIL and the log's tail, exit 1
#   sup_census_ok [WHAT]   after sup_stop: exit status 0, the last census line
#                          "census: all N buffers free", no "census: LEAK" line
#                          (tests/lib/common.sh t_census_check); else sup_fail
#   t_seed, t_timing_fail, t_pass   the exit-code convention (common.sh)
#
# Everything this file starts is ended by the PID it recorded; the namespaces
# it made are deleted; the temp dir is removed. Nothing is matched by name.

set -u

SUP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$SUP_ROOT/tests/lib/common.sh"
# RR_BIN_DIR: where ringrouter and the stand-ins are (default build/bin).
RR_BIN_DIR=${RR_BIN_DIR:-$SUP_ROOT/build/bin}
RR=$RR_BIN_DIR/ringrouter
SUP_T=
SUP_PID=
SUP_RC=
SUP_SOCK=
SUP_LOG=
SUP_NAME=
SUP_NETNS=()
SUP_EXTRA_PIDS=()
declare -A SUP_STATE SUP_PIDS SUP_RESTARTS SUP_PLANNED SUP_STANDBY
SUP_SERVICES=(router driver-a driver-b)
if [ -x /usr/bin/python3 ]; then SUP_PY=/usr/bin/python3; else SUP_PY=python3; fi

sup_log_tail() {
    [ -n "$SUP_LOG" ] && [ -f "$SUP_LOG" ] || return 0
    echo "--- supervisor log ($SUP_LOG), last 30 lines:"
    tail -n 30 "$SUP_LOG" | sed 's/^/    /'
}

sup_fail() {
    echo "FAIL: $SUP_NAME: $*"
    sup_log_tail
    exit 1
}

sup_skip() {
    echo "SKIP: $SUP_NAME: $*"
    exit 77
}

# Microseconds, realtime, from the shell itself (no fork): sets $SUP_NOW.
sup_now() { SUP_NOW=${EPOCHREALTIME//[.,]/}; }

# Is PID alive (a zombie counts as gone)?
sup_alive() {
    local st=
    [ -r "/proc/$1/stat" ] || return 1
    read -r _ _ st _ <"/proc/$1/stat" 2>/dev/null || return 1
    [ "$st" != Z ] && [ -n "$st" ]
}

# Sleep MS milliseconds without forking: read with a timeout on a FIFO that
# nobody writes (opened read-write, so it never sees EOF).
SUP_SLEEP_FD=
sup_msleep() {
    if [ -z "$SUP_SLEEP_FD" ]; then
        mkfifo "$SUP_T/sleep.fifo" && exec {SUP_SLEEP_FD}<>"$SUP_T/sleep.fifo" || {
            sleep "$(awk -v m="$1" 'BEGIN { print m / 1000 }')"
            return 0
        }
    fi
    local t
    printf -v t '%d.%03d' $(($1 / 1000)) $(($1 % 1000))
    read -r -t "$t" -u "$SUP_SLEEP_FD" _
    return 0
}

sup_wait() { # sup_wait SECS CMD...: poll CMD every 10 ms
    local secs=$1
    shift
    local end now
    sup_now
    end=$((SUP_NOW + secs * 1000000))
    while :; do
        "$@" && return 0
        sup_now
        [ "$SUP_NOW" -ge "$end" ] && return 1
        sup_msleep 10
    done
}

sup_cleanup() {
    local rc=$?
    trap - EXIT
    if [ -n "$SUP_PID" ] && sup_alive "$SUP_PID"; then
        kill -TERM "$SUP_PID" 2>/dev/null
        sup_wait 5 eval '! sup_alive $SUP_PID' || kill -KILL "$SUP_PID" 2>/dev/null
        wait "$SUP_PID" 2>/dev/null
    fi
    local p
    for p in "${SUP_EXTRA_PIDS[@]}"; do
        if sup_alive "$p"; then
            kill -TERM "$p" 2>/dev/null
            sup_wait 5 eval "! sup_alive $p" || kill -KILL "$p" 2>/dev/null
        fi
        wait "$p" 2>/dev/null
    done
    local ns
    for ns in "${SUP_NETNS[@]}"; do
        ip netns del "$ns" 2>/dev/null
    done
    [ -n "$SUP_SLEEP_FD" ] && exec {SUP_SLEEP_FD}>&-
    [ -n "$SUP_T" ] && [ -d "$SUP_T" ] && rm -rf "$SUP_T"
    exit "$(t_exit_rc "$rc")"
}

sup_init() {
    SUP_NAME=$1
    if [ "$(id -u)" -ne 0 ]; then
        sup_skip "needs root (creates network namespaces and TAP devices)"
    fi
    command -v ip >/dev/null || sup_skip "needs ip (iproute2)"
    local b
    for b in ringrouter rr-passthru rr-null; do
        [ -x "$RR_BIN_DIR/$b" ] || sup_fail "$RR_BIN_DIR/$b is missing: build with ninja first"
    done
    # Short: run_dir must be at most 80 characters, the socket path 107.
    SUP_T=$(mktemp -d /tmp/rrt.XXXXXX) || sup_fail "mktemp"
    chmod 755 "$SUP_T"
    trap sup_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # Run a snapshot of the binaries, so that a rebuild during the test
    # cannot start a service built against another layout. The supervisor
    # finds the services beside its own executable.
    mkdir -p "$SUP_T/bin"
    for b in ringrouter rr-passthru rr-null; do
        cp "$RR_BIN_DIR/$b" "$SUP_T/bin/" || sup_fail "cannot copy $RR_BIN_DIR/$b"
    done
    chmod 755 "$SUP_T/bin" "$SUP_T"/bin/*
    RR=$SUP_T/bin/ringrouter
    SUP_LOG=$SUP_T/log
    SUP_SOCK=$SUP_T/run/control.sock
}

SUP_NS_SEQ=0
sup_netns() { # sets $SUP_NS
    SUP_NS_SEQ=$((SUP_NS_SEQ + 1))
    SUP_NS=rrt-$$-$SUP_NS_SEQ
    ip netns add "$SUP_NS" || sup_fail "ip netns add $SUP_NS"
    SUP_NETNS+=("$SUP_NS")
    # The ports' TAPs live here: Linux's forwarding off, whatever the host's.
    ip netns exec "$SUP_NS" sysctl -qw net.ipv4.ip_forward=0 net.ipv4.conf.all.forwarding=0 ||
        sup_fail "cannot turn IPv4 forwarding off in $SUP_NS"
}

sup_manifest() { # sup_manifest FILE [SVC.KEY=VALUE ...]
    local file=$1
    shift
    declare -A keys
    local order=() kv svc key
    for svc in "${SUP_SERVICES[@]}"; do
        order+=("$svc")
        if [ "$svc" = router ]; then keys[$svc.binary]=rr-passthru; else keys[$svc.binary]=rr-null; fi
        keys[$svc.restart_limit]=1000
    done
    for kv in "$@"; do
        key=${kv%%=*}
        keys[$key]=${kv#*=}
    done
    {
        printf '[router]\nname = t1\npool_buffers = 4096\nrun_dir = %s/run\n' "$SUP_T"
        [ -z "${SUP_ROUTER_KEYS:-}" ] || printf '%s\n' "$SUP_ROUTER_KEYS"
        printf '\n'
        printf '[port a]\ndriver = tap\nifname = rrt-a\naddress = 10.91.0.1/24\n\n'
        printf '[port b]\ndriver = tap\nifname = rrt-b\naddress = 10.92.0.1/24\n'
        [ -z "${SUP_MANIFEST_EXTRA:-}" ] || printf '\n%b\n' "$SUP_MANIFEST_EXTRA"
        for svc in "${order[@]}"; do
            printf '\n[service %s]\n' "$svc"
            for key in binary restart restart_limit restart_window hang_ms cpu poll_us nice sched cpu_max_pct; do
                [ -n "${keys[$svc.$key]+x}" ] && printf '%s = %s\n' "$key" "${keys[$svc.$key]}"
            done
        done
    } >"$file"
}

# One status query: fills SUP_STATE, SUP_PIDS, SUP_RESTARTS. Returns 1 if the
# supervisor does not answer. (`status` exits 3 when a service is failed,
# with the whole table all the same.)
sup_status() {
    local out name state pid restarts planned rc
    out=$("$RR" status -S "$SUP_SOCK" 2>"$SUP_T/status.err")
    rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 3 ] || return 1
    SUP_STATE=() SUP_PIDS=() SUP_RESTARTS=() SUP_PLANNED=() SUP_STANDBY=()
    while read -r name state pid standby restarts planned _; do
        [ "$name" = SERVICE ] && continue
        SUP_STATE[$name]=$state
        SUP_PIDS[$name]=$pid
        SUP_STANDBY[$name]=$standby # pid, pid* while it starts, or -
        SUP_RESTARTS[$name]=$restarts
        SUP_PLANNED[$name]=$planned
    done <<<"$out"
    return 0
}

sup_all_up() {
    sup_status || return 1
    local s
    for s in "${SUP_SERVICES[@]}"; do
        [ "${SUP_STATE[$s]:-}" = up ] || return 1
    done
}

# Kill -9 every service at once and wait (bounded) until each is up again
# as a new process; 1 if not within SECS.
sup_kill_all_wait() { # sup_kill_all_wait SECS
    sup_status || return 1
    local -A was=()
    local s
    for s in "${SUP_SERVICES[@]}"; do was[$s]=${SUP_PIDS[$s]}; done
    kill -KILL "${was[@]}"
    _sup_all_new() {
        sup_all_up || return 1
        for s in "${SUP_SERVICES[@]}"; do [ "${SUP_PIDS[$s]}" != "${was[$s]}" ] || return 1; done
    }
    sup_wait "$1" _sup_all_new
}

sup_socket_answers() { # exit 3 (a service failed) is an answer too
    local rc
    "$RR" status -S "$SUP_SOCK" >/dev/null 2>&1
    rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 3 ]
}

sup_start_nowait() { # sup_start_nowait NS MANIFEST [LOG]
    local ns=$1 m=$2 log=${3:-$SUP_LOG}
    ip netns exec "$ns" "$RR" up -c "$m" 2>>"$log" &
    SUP_PID=$!
    SUP_RC=
    sup_wait 10 eval 'sup_socket_answers || ! sup_alive $SUP_PID' || sup_fail "the supervisor's socket did not answer within 10 s"
    sup_alive "$SUP_PID" || {
        wait "$SUP_PID"
        SUP_RC=$?
        sup_fail "the supervisor exited with status $SUP_RC at start"
    }
}

sup_start() {
    sup_start_nowait "$@"
    sup_wait 10 sup_all_up || sup_fail "not every service was up within 10 s"
}

sup_stop() { # sup_stop [SIG] [SECS]
    local sig=${1:-TERM} secs=${2:-10}
    [ -n "$SUP_PID" ] || return 0
    kill -"$sig" "$SUP_PID" 2>/dev/null
    if ! sup_wait "$secs" eval '! sup_alive $SUP_PID'; then
        echo "the supervisor did not exit within $secs s of SIG$sig; killing it"
        kill -KILL "$SUP_PID" 2>/dev/null
    fi
    wait "$SUP_PID" 2>/dev/null
    SUP_RC=$?
    SUP_PID=
}

sup_census_ok() { # sup_census_ok [WHAT]
    local out
    out=$(t_census_check "$SUP_LOG" "$SUP_RC") || sup_fail "${1:+$1: }$out"
    echo "$out"
}

# The counters of `ringrouter stats` (human form) as "svc.counter value" lines.
sup_counters() {
    "$RR" stats --all -S "$SUP_SOCK" 2>/dev/null | awk '
        /^[a-z][a-z0-9_-]* \(/ { svc = $1; next }
        /^  [a-z_]+ +[0-9]+$/ && svc != "" { print svc "." $1, $2; next }
        /^$/ { svc = "" }'
}

# Order statistics over numbers on stdin: "n N median M p99 P max X".
sup_dist() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "n 0"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        r = int(NR * 0.99); if (r < NR * 0.99) r++; if (r < 1) r = 1
        printf "n %d median %.1f p99 %.1f max %.1f min %.1f\n", NR, m, v[r], v[NR], v[1] }'
}

# ---- helpers of the coverage tests (sup_cli, sup_policy, sup_timeouts, sup_user) ----
#
#   sup_bins NAME...       add more binaries of $RR_BIN_DIR to the snapshot
#                          (rr-tap, rr-router for a test that runs the real ones)
#   sup_temp_group PREFIX  a group PREFIX$$ for the test, removed at exit
#                          ($SUP_GROUP, $SUP_GID)
#   sup_log_line LINE      the log has exactly this line (whole line, no regex)
#   sup_log_has RE         the log has a line matching the anchored ERE RE
#   sup_log_count RE       how many log lines match the anchored ERE RE
#   sup_svc_json SVC KEY   one field of SVC in `status --json`
#   sup_bad MSG / sup_timing_bad MSG / sup_verdict NAME
#                          count a failed check (a timing-bound one apart);
#                          exit 1 on any functional failure, 75 when the only
#                          failures are timing-bound, else print PASS

sup_bins() {
    local b
    for b in "$@"; do
        [ -x "$RR_BIN_DIR/$b" ] || sup_fail "$RR_BIN_DIR/$b is missing: build with ninja first"
        cp "$RR_BIN_DIR/$b" "$SUP_T/bin/" && chmod 755 "$SUP_T/bin/$b" || sup_fail "cannot copy $RR_BIN_DIR/$b"
    done
}

# sup_temp_group PREFIX: a temporary group PREFIX$$ (the test skips without
# setpriv or groupadd), removed at exit; sets $SUP_GROUP and $SUP_GID.
sup_temp_group() {
    command -v setpriv >/dev/null || sup_skip "needs setpriv (util-linux)"
    command -v groupadd >/dev/null || sup_skip "needs groupadd (passwd)"
    SUP_GROUP=$1$$
    groupadd -r "$SUP_GROUP" || sup_fail "groupadd $SUP_GROUP"
    trap 'groupdel "$SUP_GROUP" 2>/dev/null; sup_cleanup' EXIT
    SUP_GID=$(getent group "$SUP_GROUP" | cut -d: -f3)
}

sup_log_line() { grep -qxF -- "$1" "$SUP_LOG"; }
sup_log_has() { grep -qE "^($1)\$" "$SUP_LOG"; }
sup_log_count() { grep -cE "^($1)\$" "$SUP_LOG"; }

sup_svc_json() { # sup_svc_json SVC KEY
    "$RR" status --json -S "$SUP_SOCK" 2>/dev/null | "$SUP_PY" -c '
import json, sys
for s in json.load(sys.stdin)["services"]:
    if s["name"] == sys.argv[1]:
        print(s[sys.argv[2]])' "$1" "$2"
}

SUP_FAILS=0
sup_bad() {
    echo "  BAD: $*"
    SUP_FAILS=$((SUP_FAILS + 1))
}
sup_timing_bad() { t_timing_fail "$@"; } # tests/lib/common.sh: counted, exit 75 at the end
# The end of a test that counted its problems with sup_bad: a plain failure
# if any, else t_pass (PASS, or exit 75 after a timing-bound failure).
sup_verdict() {
    [ "$SUP_FAILS" -eq 0 ] || sup_fail "$SUP_FAILS problems (above)"
    t_pass "$1"
}
