# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# tests/lib/rings_iso.sh: the checks tests/integ/iso_rings.sh and
# iso_hoard.sh share, after tests/lib/router.sh. Source it, then:
#
#   iso_pids0              remember the router's and drivers a and b's pids
#   iso_unhurt             they kept them, and none restarted (else rr_fail)
#   iso_census CULPRITS    after rr_stop: the census is clean (corruption
#                          expected), names none of them as holding, leaking,
#                          charged or tampering, and every charge or
#                          unattributable line names one of CULPRITS (an ERE)

declare -A ISO_PID0
ISO_INNOCENT=(router driver-a driver-b)

iso_pids0() {
    local s
    for s in "${ISO_INNOCENT[@]}"; do ISO_PID0[$s]=${RR_PIDS[$s]}; done
}

iso_unhurt() {
    local s
    rr_status || rr_fail "no status"
    for s in "${ISO_INNOCENT[@]}"; do
        [ "${RR_PIDS[$s]}" = "${ISO_PID0[$s]}" ] && [ "${RR_RESTARTS[$s]}" = 0 ] ||
            rr_fail "$s was hurt: pid ${ISO_PID0[$s]} -> ${RR_PIDS[$s]}, ${RR_RESTARTS[$s]} restarts"
    done
    echo "${ISO_INNOCENT[*]}: same pids, no restart"
}

iso_census() { # iso_census CULPRITS_ERE
    local s charges
    T_CORRUPT_EXPECTED=1 rr_census_ok
    for s in "${ISO_INNOCENT[@]}"; do
        if grep -E "^ringrouter: census: .*($s (held|holds)|charged to $s|LEAK: $s|: $s rewrote)" "$RR_LOG"; then
            rr_fail "the census blamed $s, which only suffered the attacks"
        fi
    done
    charges=$(grep -E '^ringrouter: census: .*(charged to|unattributable)' "$RR_LOG")
    [ -z "$charges" ] || sed 's/^/  /' <<<"$charges"
    if [ -n "$charges" ] && grep -vqE "$1" <<<"$charges"; then
        rr_fail "a census charge names none of $1"
    fi
}
