# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# tests/lib/filter.sh: the shared steps of the filter tests
# (tests/integ/filter_*.sh), on top of tests/lib/router.sh. Source it, then:
#
#   flt_init NAME          rr_init NAME, rr-filter in the snapshot of the
#                          binaries, $PROBE (tests/lib/filter_probe.py), and
#                          RR_SERVICES with the filter
#   flt_rules FILE         the rules from stdin into FILE (root's, 0644)
#   flt_serve NS KIND ADDR PORT
#                          a filter_probe.py server (tcp or udp) logging each
#                          peer to $RR_T/KIND-PORT.log, ended by pid at exit;
#                          waits (bounded) until it is bound
#   flt_verdict NS KIND DST PORT WANT WHAT
#                          one probe (tcp or udp, 2 s) from NS: its exit
#                          status must be WANT (0 answered, 2 nothing came
#                          back, 3 refused), else rr_fail
. "$(dirname "${BASH_SOURCE[0]}")/router.sh"

flt_init() {
    rr_init "$1"
    [ -x "$RR_BIN_DIR/rr-filter" ] || rr_fail "$RR_BIN_DIR/rr-filter is missing: build with ninja first"
    cp "$RR_BIN_DIR/rr-filter" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-filter" || rr_fail "cannot copy rr-filter"
    PROBE=$RR_ROOT/tests/lib/filter_probe.py
    RR_SERVICES=(router driver-a driver-b filter)
}

flt_rules() {
    cat >"$1" && chmod 644 "$1" || rr_fail "cannot write $1"
}

flt_serve() {
    ip netns exec "$1" "$RR_PY" "$PROBE" "serve-$2" "$3" "$4" "$RR_T/$2-$4.log" 2>>"$RR_T/serve.err" &
    RR_EXTRA_PIDS+=($!)
    local flag=-Hltn
    [ "$2" = udp ] && flag=-Hlun
    rr_wait 5 eval "rr_in $1 ss $flag 'sport = :$4' | grep -q ." || rr_fail "the $2 server on $3:$4 did not bind"
}

flt_verdict() {
    local o rc
    o=$(rr_in "$1" "$RR_PY" "$PROBE" "$2" "$3" "$4" 2 2>&1)
    rc=$?
    [ "$rc" = "$5" ] || rr_fail "$6: $2 to $3:$4 exited $rc, expected $5 ($o)"
    rr_ok "$6: $2 to $3:$4: $(case $5 in 0) echo answered ;; 2) echo 'no answer' ;; *) echo refused ;; esac)"
}
