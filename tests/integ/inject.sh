#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/inject.sh: `ringrouter inject` (docs/operations.md, "Fault
# injection"), every kind into every service, the real ones and the
# stand-ins.
#
# 1. The real services: rr-tap drivers a and b, rr-router, rr-shaper on b
#    (1 Gbit/s, far above the flow), a UDP flow A -> B of 1,000 numbered
#    datagrams a second (tests/lib/seqflow.py) through all four. Into each
#    service, in an order from the seed: kill, stop 100 (SIGCONT before
#    hang_ms 500), stop 1500 (the hang detector kills it first, with a
#    second to spare on a loaded machine), crash,
#    corrupt-ring, corrupt-meta twice (its two variants), double-free,
#    chain-loop, leak 7, slow 200 300, exhaust 200. For each:
#      - the answer (exit 0) says what was done and where, and the log has it;
#      - the target recovers: a kind that kills it (kill, crash, stop 1500)
#        brings up a new pid, restarts +1, and the log has the death as the
#        kind makes it (signal 9, signal 11, no heartbeat); any other kind
#        leaves it running with the same pid and restart count;
#      - isolation: no other service restarted or changed its pid;
#      - the fault was answered where it should be: the consumer of the ring
#        named in the answer counted the garbage handle (drop_bad_handle),
#        the scribbled buffer (drop_bad_frame, or drop_bad_chain for a bad
#        next) or the looping chain (drop_bad_chain); the pool refused the
#        second free (free_bad +1); the exhausted pool refused allocations;
#      - leak N: decided so: the buffers stay held while the instance lives,
#        go back when it dies (kill: "reclaimed M buffers", M >= N) and, at a
#        clean exit, are reclaimed as inject's, not a leak (phase 2);
#      - traffic flows again through the target, and for every kind but
#        exhaust (which hurts every service that allocates) at most
#        LOSS_MAX datagrams are lost: timing-bound (exit 75 alone).
#    Then the flow tools exit 0, and the shutdown census is clean.
#    Refusals, each exit 100 with the argument named: an unknown service, an
#    unknown kind, a missing or bad number, an extra argument, a ring the
#    service does not have; and a ring named on purpose is the one used.
# 2. The stand-ins: rr-passthru as the router, rr-null as drivers (they make
#    their own traffic): every kind into each, the same answers, recovery and
#    isolation; then leak 5 into driver-a and `ringrouter restart driver-a`:
#    its clean exit holding them says the 5 were inject's and reclaims them,
#    and the shutdown census is clean (exit 0, no LEAK: sup_leak.sh has a
#    real leak; sup_ops.sh, a refusal for a service that is not up).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init inject
rr_need ss
rr_shaper_init
for b in rr-null rr-passthru; do
    cp "$RR_BIN_DIR/$b" "$RR_T/bin/" && chmod 755 "$RR_T/bin/$b" || rr_fail "cannot copy $b"
done
rr_seed

HANG_MS=500
LOSS_MAX=${INJECT_LOSS_MAX:-20}
FLOW_PORT=9000
RR_SERVICES=(router driver-a driver-b shaper-b)
RR_HANG_MS=$HANG_MS
RR_SVC_EXTRA='restart_limit = 100\nrestart_window = 10s'
rr_topology $'[shaper b]\nrate = 1gbit\nburst = 256k'
rr_start
rr_ok "up: A $RR_HOST_A -- [driver-a, router, shaper-b, driver-b] -- B $RR_HOST_B"
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
rr_flow_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" $FLOW_PORT 1000

INJ_OUT=
inject() { # inject SVC KIND [ARGS]: the answer in INJ_OUT; 1 if refused
    INJ_OUT=$("$RR" inject -S "$RR_SOCK" "$@" 2>&1)
}

# The answer each kind must give (an ERE on the whole line).
answer_re() { # answer_re SVC KIND ARGS...
    local s=$1 k=$2 n=${3:-}
    case $k in
    kill) echo "^$s: kill: SIGKILL sent to pid [0-9]+$" ;;
    stop) echo "^$s: stop $n: SIGSTOP sent to pid [0-9]+; SIGCONT in $n ms.*$" ;;
    crash) echo "^$s: crash: SIGSEGV raised in its loop at batch [0-9]+ \\(pid [0-9]+\\): killed by signal 11 \\(Segmentation fault\\)$" ;;
    corrupt-ring) echo "^$s: corrupt-ring: handle [0-9]+ \\(past the pool's [0-9]+ buffers\\) placed in its input ring [a-z.-]+ by its producer [a-z.-]+ \\(pid [0-9]+\\) at [a-z.-]+'s batch [0-9]+$" ;;
    corrupt-meta) echo "^$s: corrupt-meta: buffer [0-9]+ scribbled \\((off [0-9]+ \\+ len 1000 past its [0-9]+-byte frame|next [0-9]+, outside the pool's [0-9]+ buffers)\\) and published on [a-z.-]+ at batch [0-9]+$" ;;
    double-free) echo "^$s: double-free: buffer [0-9]+ freed twice at batch [0-9]+; the pool refused the second \\(free_bad\\)$" ;;
    chain-loop) echo "^$s: chain-loop: buffer [0-9]+ linked to itself \\(a chain with no end\\) and published on [a-z.-]+ at batch [0-9]+$" ;;
    leak) echo "^$s: leak $n: holds $n buffers from batch [0-9]+ until it ends: [0-9,.]+$" ;;
    slow) echo "^$s: slow $n: every loop spins $n us for ${4:-1000} ms, from batch [0-9]+$" ;;
    exhaust) echo "^$s: exhaust: the supervisor holds [0-9]+ of the pool's [0-9]+ buffers .* for ${n:-1000} ms; .*$" ;;
    esac
}

# The ring counter a kind's answer says must move, as "ring.NAME.counter".
answer_ctr() { # answer_ctr KIND
    local r
    case $1 in
    corrupt-ring) r=$(sed -n 's/.* placed in its input ring \([a-z.-]*\) by .*/\1/p' <<<"$INJ_OUT") && echo "ring.$r.drop_bad_handle" ;;
    corrupt-meta)
        r=$(sed -n 's/.* and published on \([a-z.-]*\) at batch.*/\1/p' <<<"$INJ_OUT")
        if [[ $INJ_OUT == *"(next "* ]]; then echo "ring.$r.drop_bad_chain"; else echo "ring.$r.drop_bad_frame"; fi
        ;;
    chain-loop) r=$(sed -n 's/.* and published on \([a-z.-]*\) at batch.*/\1/p' <<<"$INJ_OUT") && echo "ring.$r.drop_bad_chain" ;;
    double-free) echo pool.free_bad ;;
    exhaust) echo pool.alloc_fail ;;
    esac
}

ctr_moved() { rr_stats && [ "$(rr_ctr "$1")" -gt "$2" ]; } # ctr_moved KEY BEFORE

declare -A SEEN
FAULTS=0
# One fault under the flow, with every check of the header.
fault() { # fault SVC KIND [ARGS]
    local svc=$1 kind=$2 s old restarts lines chunk t re ctr before=0 dies=0 what="$*" wait_ms=0 lost
    shift 2
    local n=${1:-}
    declare -A pids=() rst=()
    case $kind in kill | crash) dies=1 ;; stop) [ "$n" -ge $HANG_MS ] && dies=1 ;; esac
    rr_wait 10 rr_all_up || rr_fail "$what: not every service is up before the fault"
    [ $dies = 0 ] || rr_wait 5 rr_standby_parked "$svc" || rr_fail "$what: no parked standby"
    # Past the stable period, so that a death restarts at once (a kind that
    # does not kill has no restart to delay).
    [ $dies = 0 ] && [ "$kind" != leak ] || rr_msleep 150
    rr_status || rr_fail "status"
    for s in "${RR_SERVICES[@]}"; do pids[$s]=${RR_PIDS[$s]} rst[$s]=${RR_RESTARTS[$s]}; done
    old=${pids[$svc]} restarts=${rst[$svc]}
    ctr=
    if [ "$kind" = double-free ] || [ "$kind" = exhaust ]; then
        ctr=$(answer_ctr "$kind")
        rr_stats || rr_fail "stats"
        before=$(rr_ctr "$ctr")
    else
        rr_stats || rr_fail "stats" # the ring is known from the answer: every ring's figure now
        declare -A ring0=()
        for s in "${!RRS[@]}"; do [[ $s == ring.*.drop_bad_* ]] && ring0[$s]=${RRS[$s]}; done
    fi
    RR_FLOW_OFF=$(stat -c %s "$RR_FLOW_LOG")
    rr_now
    t=$RR_NOW
    rr_wait 5 rr_flow_gap "$t" || rr_fail "$what: no traffic before the fault"
    lines=$(wc -l <"$RR_LOG")
    rr_now
    t=$RR_NOW
    inject "$svc" "$kind" "$@" || rr_fail "inject $what refused: $INJ_OUT"
    re=$(answer_re "$svc" "$kind" "$@")
    [[ $INJ_OUT =~ $re ]] || rr_fail "inject $what: the answer \"$INJ_OUT\" is not /$re/"
    case $kind in stop) wait_ms=$((n + 100)) ;; slow) wait_ms=$((${2:-1000} + 100)) ;; exhaust) wait_ms=$((${n:-1000} + 100)) ;; esac
    [ $dies = 1 ] || [ $wait_ms = 0 ] || rr_msleep $wait_ms
    if [ $dies = 1 ]; then
        rr_wait 5 eval 'rr_status && [ "${RR_STATE[$svc]}" = up ] && [ "${RR_PIDS[$svc]}" != "$old" ]' ||
            rr_fail "$what: not up again with a new pid within 5 s"
        [ "${RR_RESTARTS[$svc]}" = $((restarts + 1)) ] || rr_fail "$what: restarts $restarts -> ${RR_RESTARTS[$svc]}, expected +1"
    else
        rr_status || rr_fail "status"
        [ "${RR_PIDS[$svc]}" = "$old" ] && [ "${RR_RESTARTS[$svc]}" = "$restarts" ] && [ "${RR_STATE[$svc]}" = up ] ||
            rr_fail "$what: the target changed (pid $old -> ${RR_PIDS[$svc]}, restarts $restarts -> ${RR_RESTARTS[$svc]}, ${RR_STATE[$svc]})"
    fi
    for s in "${RR_SERVICES[@]}"; do
        [ "$s" = "$svc" ] && continue
        [ "${RR_PIDS[$s]}" = "${pids[$s]}" ] && [ "${RR_RESTARTS[$s]}" = "${rst[$s]}" ] ||
            rr_fail "$what: isolation: $s changed (pid ${pids[$s]} -> ${RR_PIDS[$s]}, restarts ${rst[$s]} -> ${RR_RESTARTS[$s]})"
    done
    if [ -z "$ctr" ]; then
        ctr=$(answer_ctr "$kind")
        [ -z "$ctr" ] || before=${ring0[$ctr]:-x}
        [ "$before" != x ] || rr_fail "$what: no counter $ctr before the fault"
    fi
    if [ -n "$ctr" ]; then
        rr_wait 3 ctr_moved "$ctr" "$before" || rr_fail "$what: $ctr stayed at $before"
        [ "$kind" = exhaust ] || [ "$(rr_ctr "$ctr")" = $((before + 1)) ] ||
            rr_fail "$what: $ctr went from $before to $(rr_ctr "$ctr"), expected +1"
    fi
    rr_wait 5 rr_flow_gap "$t" || rr_fail "$what: no traffic within 5 s of the fault"
    chunk=$(tail -n +"$((lines + 1))" "$RR_LOG")
    rr_log_has "$chunk" "inject: ${INJ_OUT//[()+.]/.}" "$what"
    case $kind in
    kill) rr_log_has "$chunk" "$svc: killed by signal 9 \\(Killed\\); restarting now" "$what" ;;
    crash) rr_log_has "$chunk" "$svc: killed by signal 11 \\(Segmentation fault\\); restarting now" "$what" ;;
    stop)
        if [ $dies = 1 ]; then
            rr_log_has "$chunk" "$svc: no heartbeat for $HANG_MS ms \\(hang_ms\\); killing pid $old" "$what"
            rr_wait 2 eval 'grep -q "^ringrouter: inject: $svc: stop $n: pid $old ended before its SIGCONT was due$" "$RR_LOG"' ||
                rr_fail "$what: no line saying pid $old ended before its SIGCONT"
        else
            rr_log_has "$chunk" "inject: $svc: stop $n: SIGCONT sent to pid $old" "$what"
        fi
        ;;
    exhaust) rr_log_has "$chunk" "inject: $svc: exhaust: ([0-9]+) of \\1 buffers given back after $n ms" "$what" ;;
    leak)
        # Held while it lives; given back when it dies.
        inject "$svc" kill || rr_fail "$what: kill after the leak: $INJ_OUT"
        rr_wait 5 eval 'rr_status && [ "${RR_STATE[$svc]}" = up ] && [ "${RR_PIDS[$svc]}" != "$old" ]' ||
            rr_fail "$what: not up again after the kill that ends the leak"
        chunk=$(tail -n +"$((lines + 1))" "$RR_LOG")
        local m
        m=$(sed -n "s/^ringrouter: $svc: reclaimed \\([0-9]*\\) buffers$/\\1/p" <<<"$chunk" | head -n 1)
        [ -n "$m" ] && [ "$m" -ge "$n" ] || rr_fail "$what: its death reclaimed \"$m\" buffers, fewer than the $n leaked"
        INJ_OUT+=" (killed: reclaimed $m)"
        ;;
    esac
    lost=$RR_GAP_LOST
    if [ "$kind" != exhaust ] && [ "$lost" -gt "$LOSS_MAX" ]; then
        t_timing_fail "$what: $lost datagrams lost (bound $LOSS_MAX), traffic back $RR_GAP_MS ms after the fault"
    fi
    FAULTS=$((FAULTS + 1))
    SEEN[$svc.$kind]=1
    rr_ok "$what: $INJ_OUT; flow back $RR_GAP_MS ms after, $lost lost"
}

KINDS=("kill" "stop 100" "stop 1500" "crash" "corrupt-ring" "corrupt-meta" "corrupt-meta" "double-free" "chain-loop"
    "leak 7" "slow 200 300" "exhaust 200")
# The order of the services from the seed; each gets every kind.
ORDER=("${RR_SERVICES[@]}")
for ((i = ${#ORDER[@]} - 1; i > 0; i--)); do
    j=$((RANDOM % (i + 1)))
    x=${ORDER[i]} ORDER[i]=${ORDER[j]} ORDER[j]=$x
done
echo "order: ${ORDER[*]}"
for svc in "${ORDER[@]}"; do
    for k in "${KINDS[@]}"; do
        # shellcheck disable=SC2086 # KIND and its arguments
        fault "$svc" $k
    done
done

# Refusals (the real services are still up): exit 100, the argument named.
refused() { # refused RE ARGS...
    local re=$1 rc
    shift
    INJ_OUT=$("$RR" inject -S "$RR_SOCK" "$@" 2>&1)
    rc=$?
    [ $rc = 100 ] || rr_fail "inject $*: exit $rc, expected 100 ($INJ_OUT)"
    [[ $INJ_OUT =~ $re ]] || rr_fail "inject $*: \"$INJ_OUT\" does not say /$re/"
}
refused 'no service "nosuch"; the services are: router driver-a driver-b shaper-b' nosuch kill
refused 'unknown kind "explode"; the kinds are: kill, stop MS, crash' router explode
refused 'stop: missing argument' router stop
refused 'stop: MS "soon" is not a number' router stop soon
refused 'leak: N "0" is not a number of buffers from 1 to' router leak 0
refused 'slow: US "200x" is not a number' router slow 200x
refused 'slow: MS "0" is not a number' router slow 200 0
refused 'exhaust: MS "99999999" is not a number' router exhaust 99999999
refused 'kill: unexpected argument "now"' router kill now
refused 'corrupt-ring: no input ring "tx-a"; its input rings are: rx-a rx-b' router corrupt-ring tx-a
refused 'chain-loop: no output ring "rx-a"' router chain-loop rx-a
refused 'expected inject SERVICE KIND' router
rr_ok "refusals: 12 bad requests, each exit 100 naming what is wrong"
# A ring named on purpose reaches that ring.
inject router corrupt-ring rx-b && [[ $INJ_OUT == *"input ring rx-b by its producer driver-b"* ]] ||
    rr_fail "corrupt-ring rx-b: $INJ_OUT"
rr_ok "named ring: $INJ_OUT"

rr_stats || rr_fail "stats"
rr_flow_stop
rr_stop
rr_census_ok
rr_ok "phase 1: $FAULTS faults into ${#RR_SERVICES[@]} real services, every kind, no isolation break, clean census"

# 2. The stand-ins, in the same namespaces.
RR_SERVICES=(router driver-a driver-b)
# The same manifest without the shaper (its section and its service), the
# stand-ins in the real services' places.
awk '/^\[/ { skip = ($0 == "[shaper b]" || $0 == "[service shaper-b]") } !skip { print }
    /^\[service router\]$/ { print "binary = rr-passthru" } /^\[service driver-[ab]\]$/ { print "binary = rr-null" }' \
    "$RR_T/m.ini" >"$RR_T/m2.ini"
"$RR" check -c "$RR_T/m2.ini" >/dev/null || rr_fail "the stand-in manifest does not check: $(cat "$RR_T/m2.ini")"
cp "$RR_T/m2.ini" "$RR_T/m.ini"
: >"$RR_LOG"
rr_start # the devices are new: it configures the hosts' side again
standin() { # standin SVC KIND [ARGS]: answer, recovery and isolation
    local svc=$1 kind=$2 s old dies=0 re what="$*"
    shift 2
    declare -A pids=()
    case $kind in kill | crash) dies=1 ;; esac
    rr_wait 10 rr_all_up || rr_fail "$what: not every stand-in is up"
    [ $dies = 0 ] || rr_msleep 150 # past the stable period
    rr_status || rr_fail "status"
    for s in "${RR_SERVICES[@]}"; do pids[$s]=${RR_PIDS[$s]}; done
    old=${pids[$svc]}
    inject "$svc" "$kind" "$@" || rr_fail "inject $what refused: $INJ_OUT"
    re=$(answer_re "$svc" "$kind" "$@")
    [[ $INJ_OUT =~ $re ]] || rr_fail "inject $what: the answer \"$INJ_OUT\" is not /$re/"
    case $kind in stop) rr_msleep $(($1 + 100)) ;; slow) rr_msleep $((${2:-1000} + 100)) ;; exhaust) rr_msleep $((${1:-1000} + 100)) ;; esac
    if [ $dies = 1 ]; then
        rr_wait 5 eval 'rr_status && [ "${RR_STATE[$svc]}" = up ] && [ "${RR_PIDS[$svc]}" != "$old" ]' ||
            rr_fail "$what: not up again with a new pid"
    else
        rr_status && [ "${RR_PIDS[$svc]}" = "$old" ] || rr_fail "$what: the target's pid changed"
    fi
    for s in "${RR_SERVICES[@]}"; do
        [ "$s" = "$svc" ] || [ "${RR_PIDS[$s]}" = "${pids[$s]}" ] || rr_fail "$what: isolation: $s changed"
    done
    rr_ok "stand-in $what: $INJ_OUT"
}
for svc in router driver-a driver-b; do
    for k in "kill" "stop 100" "crash" "corrupt-ring" "corrupt-meta" "double-free" "chain-loop" "slow 200 200" "exhaust 100" "leak 3"; do
        # shellcheck disable=SC2086
        standin "$svc" $k
    done
    inject "$svc" kill || rr_fail "kill $svc after its leak: $INJ_OUT" # the leak of 3 goes back with it
done
# A clean exit holding what inject took: reclaimed, and not a leak.
rr_wait 10 rr_all_up || rr_fail "stand-ins not up before the leak"
rr_msleep 150
inject driver-a leak 5 || rr_fail "leak 5: $INJ_OUT"
"$RR" restart -S "$RR_SOCK" driver-a >/dev/null 2>&1 || rr_fail "restart driver-a"
rr_wait 5 eval 'grep -q "^ringrouter: driver-a: census: 5 buffers held at exit were taken by \`inject leak\`; reclaimed, not a leak$" "$RR_LOG"' ||
    rr_fail "no \"driver-a: census: 5 buffers held at exit were taken by \`inject leak\`\" after a clean restart of a leaking driver-a"
rr_wait 10 rr_all_up || rr_fail "stand-ins not up after the restart"
rr_stop
grep -q "census: LEAK" "$RR_LOG" && rr_fail "a LEAK for buffers inject took and the restart reclaimed: $(grep 'census: LEAK' "$RR_LOG")"
rr_census_ok
rr_ok "leak at a clean exit: reclaimed as inject's (driver-a, 5 buffers), clean census, exit 0"

for k in kill stop crash corrupt-ring corrupt-meta double-free chain-loop leak slow exhaust; do
    for s in router driver-a driver-b shaper-b; do
        [ -n "${SEEN[$s.$k]:-}" ] || rr_fail "kind $k was never injected into $s"
    done
done
t_pass "inject: $FAULTS faults, every kind into router, driver-a, driver-b, shaper-b under the flow; every kind into the stand-ins; refusals; leaks reclaimed at a death and at a clean exit"
