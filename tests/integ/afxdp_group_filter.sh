#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/afxdp_group_filter.sh: a driver group with rr-filter on one of
# its ports (`group = g` on both AF_XDP ports, `[filter] ports = b`): the
# group's driver sends b's frames to the filter and a's to the router, and
# takes a's egress from the filter's way out (ft-a) beside the router's:
#   - the rings: rx-b driver-g -> filter, rx-a driver-g -> router, ft-a
#     filter -> driver-g;
#   - new UDP from A to B: answered (the policy accepts what comes in by a);
#   - new UDP from B to A: dropped by the filter, A's server sees nothing;
#   - kill -9 of driver-g under that: restarted, the verdicts hold;
#   - a clean census at the stop.
set -u
. "$(dirname "$0")/../lib/filter.sh"
flt_init afxdp_group_filter
rr_afxdp_init
rr_need ss

flt_rules "$RR_T/rules.nft" <<'EOF'
chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    iif "a" ct state new accept
    icmp type echo-request accept
}
EOF
RR_SERVICES=(router driver-g filter)
RR_AFXDP_A_EXTRA='group = g'
RR_AFXDP_B_EXTRA="group = g\n\n[filter]\nrules = $RR_T/rules.nft\nports = b"
rr_afxdp_up 83 84 f gf

rr_stats || rr_fail "stats"
for r in rx-b:driver-g:filter rx-a:driver-g:router ft-a:filter:driver-g tx-b:filter:driver-g; do
    IFS=: read -r name from to <<<"$r"
    out=$("$RR" stats --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
r = [x for x in json.load(sys.stdin)["rings"] if x["name"] == sys.argv[1]]
print(r[0]["from"], r[0]["to"]) if r else print("none")' "$name")
    [ "$out" = "$from $to" ] || rr_fail "ring $name: $out, expected $from -> $to"
done
rr_ok "rings: rx-b and tx-b through the filter, rx-a to the router, ft-a from the filter's way out"

verdicts() { # verdicts WHEN
    flt_verdict "$NS_A" udp "$HOST_B" 9999 0 "$1: A -> B, new from a"
    flt_verdict "$NS_B" udp "$HOST_A" 9998 2 "$1: B -> A, new from b"
}
flt_serve "$NS_B" udp "$HOST_B" 9999
flt_serve "$NS_A" udp "$HOST_A" 9998
verdicts "up"
[ ! -s "$RR_T/udp-9998.log" ] || rr_fail "A's server saw B's dropped datagrams: $(cat "$RR_T/udp-9998.log")"

rr_status || rr_fail "status"
pid=${RR_PIDS[driver-g]}
kill -KILL "$pid"
rr_wait 5 eval 'rr_status && [ "${RR_STATE[driver-g]}" = up ] && [ "${RR_PIDS[driver-g]}" != "$pid" ]' ||
    rr_fail "driver-g was not up again within 5 s of its kill"
verdicts "after driver-g's kill"
[ ! -s "$RR_T/udp-9998.log" ] || rr_fail "A's server saw B's dropped datagrams: $(cat "$RR_T/udp-9998.log")"

rr_stop
rr_census_ok
echo "PASS afxdp_group_filter"
