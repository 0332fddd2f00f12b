# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# tests/lib/rings_iso.sh: the checks tests/integ/iso_rings.sh and
# iso_hoard.sh share, after tests/lib/router.sh. Source it, then:
#
#   iso_init NAME          rr_init, t_seed, rr-rings-evil in the snapshot
#   iso_port PORT NET      adds to $ISO_TEXT the manifest text of a TAP port
#                          PORT in a fresh namespace, 10.NET.N.1/24, driven
#                          by rr-rings-evil (restart_limit 1000 in 60 s)
#   iso_pids0              remember the router's and drivers a and b's pids
#   iso_unhurt             they kept them, and none restarted (else rr_fail)
#   iso_census CULPRITS    after rr_stop: the census is clean (corruption
#                          expected), names none of them as holding, leaking,
#                          charged or tampering, and every charge or
#                          unattributable line names one of CULPRITS (an ERE)

declare -A ISO_PID0
ISO_TEXT=''
ISO_INNOCENT=(router driver-a driver-b)

iso_init() {
    rr_init "$1"
    t_seed
    cp "$RR_BIN_DIR/rr-rings-evil" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-rings-evil" ||
        rr_fail "cannot copy rr-rings-evil"
}

iso_port() { # iso_port PORT NET: not in $(...), whose namespace would escape the cleanup
    local t
    rr_netns "$1"
    printf -v t '[port %s]\ndriver = tap\nifname = rrt%s%s\nnetns = %s\naddress = 10.%s.%s.1/24\n\n' \
        "$1" "$$" "$1" "$RR_NS" "$2" "$(($$ % 250 + 1))"
    ISO_TEXT+=$t
    printf -v t '[service driver-%s]\nbinary = rr-rings-evil\nrestart_limit = 1000\nrestart_window = 60s\nhang_ms = 3000\n\n' "$1"
    ISO_TEXT+=$t
}

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
