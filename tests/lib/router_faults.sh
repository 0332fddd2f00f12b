# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034
# tests/lib/router_faults.sh: the fault-under-traffic helpers of
# tests/lib/router.sh, which sources it (not run alone).

# --- Faults under traffic (tests/integ/faults_*.sh) --------------------------
#
#   rr_flow_start NS_SRC NS_DST DST PORT INTERVAL_US
#                          tests/lib/seqflow.py: a sink on DST:PORT in NS_DST
#                          timestamping every arrival ($RR_FLOW_LOG), a sender
#                          in NS_SRC, one datagram every INTERVAL_US
#   rr_flow_stop           SIGTERM to both; each must exit 0 (else rr_fail)
#   rr_flow_gap T_US       RR_GAP_MS: the first arrival of a datagram sent at
#                          or after T_US, in ms after T_US; RR_GAP_LOST the
#                          sequence numbers before it not (yet) arrived; 1 if none yet
#   rr_standby_parked SVC  SVC has a warm standby, exec'd and parked; sets
#                          RR_SB_PID
#   rr_fault SVC KIND BOUND_MS
#                          KIND kill (-9), stop (SIGSTOP: the hang detector
#                          must kill it) or restart (`ringrouter restart`),
#                          under the flow; asserts the exact log lines (the
#                          standby that was parked takes over), the peers
#                          untouched, restarts +1, traffic back. Traffic back
#                          later than BOUND_MS after the fault is a timing
#                          failure: RR_TIMING_FAILS += 1, and rr_timing_exit
#                          ends the test with 75 if that is all that failed.
RR_FLOW_S= RR_FLOW_R= RR_FLOW_LOG= RR_FLOW_OFF=0 RR_GAP_MS= RR_GAP_LOST= RR_SB_PID=
RR_TIMING_FAILS=0
RR_FLOW_PY=$RR_ROOT/tests/lib/seqflow.py

rr_flow_start() { # rr_flow_start NS_SRC NS_DST DST PORT INTERVAL_US
    RR_FLOW_LOG=$RR_T/flow.log
    : >"$RR_FLOW_LOG"
    # Not rr_in: $! must be python itself (ip netns exec execs it).
    ip netns exec "$2" "$RR_PY" "$RR_FLOW_PY" recv "$3" "$4" "$RR_FLOW_LOG" 2>"$RR_T/flow-recv.err" &
    RR_FLOW_R=$!
    RR_EXTRA_PIDS+=("$RR_FLOW_R")
    rr_wait 5 eval "rr_in $2 ss -Hlun 'sport = :$4' | grep -q ." || rr_fail "the flow's sink did not bind: $(cat "$RR_T/flow-recv.err")"
    ip netns exec "$1" "$RR_PY" "$RR_FLOW_PY" send "$3" "$4" "$5" 2>"$RR_T/flow-send.err" &
    RR_FLOW_S=$!
    RR_EXTRA_PIDS+=("$RR_FLOW_S")
    rr_wait 5 eval '[ -s "$RR_FLOW_LOG" ]' || rr_fail "no datagram of the flow arrived within 5 s"
}

rr_flow_stop() {
    local p rc what
    for p in "$RR_FLOW_S" "$RR_FLOW_R"; do
        [ "$p" = "$RR_FLOW_S" ] && what=sender || what=sink
        kill -TERM "$p" 2>/dev/null
        rr_wait 5 eval "! rr_alive $p" || rr_fail "the flow's $what (pid $p) did not stop within 5 s of SIGTERM"
        wait "$p"
        rc=$?
        [ "$rc" = 0 ] || rr_fail "the flow's $what exited with status $rc: $(cat "$RR_T/flow-$( [ $what = sender ] && echo send || echo recv).err")"
    done
    rr_ok "flow: $(cat "$RR_T/flow-send.err"); $(cat "$RR_T/flow-recv.err"); $("$RR_PY" "$RR_FLOW_PY" summary "$RR_FLOW_LOG")"
}

rr_flow_gap() { # rr_flow_gap T_US
    local out
    # Only the log's tail from the last mark on: the whole of it grows by
    # ~1,000 lines a second.
    out=$(tail -c +"$((RR_FLOW_OFF + 1))" "$RR_FLOW_LOG" | "$RR_PY" "$RR_FLOW_PY" gap /dev/stdin "$1") || return 1
    read -r RR_GAP_MS RR_GAP_LOST <<<"$out"
}

# One service's line of the human `status` (one fork, no python: fast enough
# to catch a successor inside its 100 ms stable period): RR_L_STATE,
# RR_L_PID (0 while none runs), RR_L_SB (the standby: pid, pid* while it
# starts, or -).
rr_svc_line() { # rr_svc_line SVC
    local out name
    local rc
    out=$("$RR" status -S "$RR_SOCK" 2>/dev/null)
    rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 3 ] || return 1 # 3: a service is failed
    while read -r name RR_L_STATE RR_L_PID RR_L_SB _; do
        [ "$name" = "$1" ] && return 0
    done <<<"$out"
    return 1
}

rr_standby_parked() { # rr_standby_parked SVC: sets RR_SB_PID
    rr_svc_line "$1" && [[ $RR_L_SB =~ ^[0-9]+$ ]] && RR_SB_PID=$RR_L_SB
}

# The exact line LINE (an ERE without anchors) is in TEXT, else rr_fail.
rr_log_has() { # rr_log_has TEXT LINE WHAT
    grep -Eq "^ringrouter: $2\$" <<<"$1" && return 0
    echo "--- the log since the fault:"
    sed 's/^/    /' <<<"$1"
    rr_fail "$3: no line \"ringrouter: $2\" in the log"
}

declare -A RR_FAULT_MS
rr_fault() { # rr_fault SVC KIND BOUND_MS
    local svc=$1 kind=$2 bound=$3 s sb old new lines t chunk hang
    declare -A peers=()
    # A missing standby fails here: every timed fault is a standby takeover.
    rr_wait 5 rr_standby_parked "$svc" || rr_fail "$kind $svc: no parked standby within 5 s of its last start"
    sb=$RR_SB_PID
    rr_status || rr_fail "status"
    for s in "${RR_SERVICES[@]}"; do
        [ "${RR_STATE[$s]}" = up ] || rr_fail "$kind $svc: $s is ${RR_STATE[$s]} before the fault"
        peers[$s]=${RR_PIDS[$s]}
    done
    old=${RR_PIDS[$svc]}
    local restarts=${RR_RESTARTS[$svc]} planned=${RR_PLANNED[$svc]}
    # Traffic is flowing right now: a datagram sent after this moment arrived.
    RR_FLOW_OFF=$(stat -c %s "$RR_FLOW_LOG")
    rr_now
    t=$RR_NOW
    rr_wait 5 rr_flow_gap "$t" || rr_fail "$kind $svc: no traffic before the fault"
    lines=$(wc -l <"$RR_LOG")
    rr_now
    t=$RR_NOW
    case $kind in
    kill) kill -KILL "$old" || rr_fail "kill -9 $svc (pid $old)" ;;
    stop) kill -STOP "$old" || rr_fail "kill -STOP $svc (pid $old)" ;;
    restart) "$RR" restart -S "$RR_SOCK" "$svc" >"$RR_T/restart.out" 2>&1 || rr_fail "restart $svc: $(cat "$RR_T/restart.out")" ;;
    esac
    rr_wait 5 eval 'rr_status && [ "${RR_STATE[$svc]}" = up ] && [ "${RR_PIDS[$svc]}" != "$old" ]' ||
        rr_fail "$kind $svc (pid $old): not up again with a new pid within 5 s"
    new=${RR_PIDS[$svc]}
    rr_wait 5 rr_flow_gap "$t" || rr_fail "$kind $svc: no traffic within 5 s of the fault"
    chunk=$(tail -n +"$((lines + 1))" "$RR_LOG")
    case $kind in
    kill) rr_log_has "$chunk" "$svc: killed by signal 9 \\(Killed\\); restarting now" "kill -9 $svc" ;;
    stop)
        hang=$(awk -v s="[service $svc]" '$0 == s { f = 1; next } /^\[/ { f = 0 } f && $1 == "hang_ms" { print $3 }' "$RR_T/m.ini")
        rr_log_has "$chunk" "$svc: no heartbeat for ${hang:-?} ms \\(hang_ms\\); killing pid $old" "SIGSTOP $svc"
        rr_log_has "$chunk" "$svc: killed by signal 9 \\(Killed\\); restarting now" "SIGSTOP $svc"
        ;;
    restart) rr_log_has "$chunk" "$svc: exited with status 0; restarting as asked" "restart $svc" ;;
    esac
    rr_log_has "$chunk" "$svc: standby pid $sb takes over" "$kind $svc (the parked standby was pid $sb)"
    [ "$new" = "$sb" ] || rr_fail "$kind $svc: the new instance is pid $new, not the parked standby $sb"
    rr_log_has "$chunk" "$svc: ready, pid $new, [0-9.]+ ms after its predecessor died \\(.*\\)" "$kind $svc"
    if [ "$kind" = restart ]; then # asked for: planned, not a failure
        [ "${RR_PLANNED[$svc]}" = $((planned + 1)) ] && [ "${RR_RESTARTS[$svc]}" = "$restarts" ] ||
            rr_fail "$kind $svc: planned restarts $planned -> ${RR_PLANNED[$svc]}, restarts $restarts -> ${RR_RESTARTS[$svc]}, expected +1 and +0"
    else
        [ "${RR_RESTARTS[$svc]}" = $((restarts + 1)) ] || rr_fail "$kind $svc: restarts $restarts -> ${RR_RESTARTS[$svc]}, expected +1"
    fi
    for s in "${RR_SERVICES[@]}"; do
        [ "$s" = "$svc" ] && continue
        [ "${RR_PIDS[$s]}" = "${peers[$s]}" ] && [ "${RR_STATE[$s]}" = up ] ||
            rr_fail "$kind $svc: peer $s changed (pid ${peers[$s]} -> ${RR_PIDS[$s]}, ${RR_STATE[$s]})"
    done
    RR_FAULT_MS[$svc.$kind]=$RR_GAP_MS
    if awk -v g="$RR_GAP_MS" -v b="$bound" 'BEGIN { exit !(g <= b) }'; then
        rr_ok "$kind $svc: pid $old -> standby $new; traffic back $RR_GAP_MS ms after the fault (bound $bound ms), $RR_GAP_LOST datagrams lost"
    else
        RR_TIMING_FAILS=$((RR_TIMING_FAILS + 1))
        echo "TIMING: $kind $svc: traffic back $RR_GAP_MS ms after the fault, over the bound of $bound ms ($RR_GAP_LOST lost)"
    fi
}

# Every fault of rr_fault on every service of RR_SERVICES, in an order from
# the seed (a Fisher-Yates shuffle, left in RR_ORDER): kill -9 and restart
# bounded by KILL_MS, SIGSTOP by STOP_MS.
rr_fault_rounds() { # rr_fault_rounds KILL_MS STOP_MS
    local i j x kind svc bound
    RR_ORDER=("${RR_SERVICES[@]}")
    for ((i = ${#RR_ORDER[@]} - 1; i > 0; i--)); do
        j=$((RANDOM % (i + 1)))
        x=${RR_ORDER[i]} RR_ORDER[i]=${RR_ORDER[j]} RR_ORDER[j]=$x
    done
    echo "order: ${RR_ORDER[*]}"
    for kind in kill stop restart; do
        [ $kind = stop ] && bound=$2 || bound=$1
        for svc in "${RR_ORDER[@]}"; do
            # The first death after a stable period (ready for 100 ms)
            # restarts at once; these faults are about that branch, so each
            # waits out the stable period of the one before, plus a random
            # 0..50 ms.
            rr_msleep $((150 + RANDOM % 51))
            rr_fault "$svc" $kind "$bound"
        done
    done
}

# The end of a fault test, after rr_census_ok: the figures, then 75 if a
# timing bound was missed, else PASS.
rr_fault_end() {
    local kind svc summary=
    for kind in kill stop restart; do
        for svc in "${RR_SERVICES[@]}"; do summary+=" $svc.$kind ${RR_FAULT_MS[$svc.$kind]:-}"; done
    done
    echo "fault -> traffic back, ms:$summary"
    rr_timing_exit
    echo "PASS $RR_NAME"
}
