#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/shaper_classes.sh: classes under a 100 Mbit/s shaper on port b,
# with real TCP traffic in namespaces:
#   [class b small] rate 20mbit, ceil 30mbit, match = proto tcp, dport 5202
#   [class b rest]  rate 50mbit, default
#   - small alone borrows up to its ceil and no further (~30 Mbit/s on the wire);
#   - small and rest together: small at its ceil, rest gets the remaining ~70;
#   - `shaper set b small ceil 50mbit` raises small's share live;
#   - `shaper show --json` reports both classes; the census balances at the end.
# Goodputs: over rate x 1448/1538 by more than 25 % (a class not limited) or
# under a quarter of it (starved) is a failure; how close they came (within
# +-6 % on a quiet machine) is printed, not asserted (bench/shaper).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init shaper_classes
rr_need iperf3 ss
[ -x "$RR_BIN_DIR/rr-shaper" ] || rr_fail "$RR_BIN_DIR/rr-shaper is missing: build with ninja first"
cp "$RR_BIN_DIR/rr-shaper" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-shaper" || rr_fail "cannot copy rr-shaper"

SECS=${RR_SHAPER_SECS:-5}
RR_SERVICES=(router driver-a driver-b shaper-b)
rr_topology $'[shaper b]\nrate = 100mbit\n\n[class b small]\nrate = 20mbit\nceil = 30mbit\nmatch = proto tcp, dport 5202\n\n[class b rest]\nrate = 50mbit\ndefault = yes'
rr_start
rr_ok "router up, port b shaped at 100mbit with classes small (20/30mbit, dport 5202) and rest (50mbit, default)"
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"

for port in 5201 5202; do
    ip netns exec "$RR_NS_B" iperf3 -s -B "$RR_HOST_B" -p $port >"$RR_T/srv-$port.log" 2>&1 & # $! must be iperf3
    RR_EXTRA_PIDS+=($!)
done
listening() { rr_in "$RR_NS_B" ss -Hltn "sport = :$1" | grep -q LISTEN; }
for port in 5201 5202; do
    rr_wait 5 listening $port || rr_fail "iperf3 server on $port did not listen"
done

# client PORT LABEL: iperf3 in the background, JSON to $RR_T/LABEL.json; sets CPID
client() {
    rr_in "$RR_NS_A" timeout $((SECS + 30)) iperf3 -c "$RR_HOST_B" -p "$1" -t "$SECS" -O 1 --connect-timeout 3000 -J \
        >"$RR_T/$2.json" 2>"$RR_T/$2.err" &
    CPID=$!
    RR_EXTRA_PIDS+=($CPID)
}
goodput() { # goodput LABEL
    "$RR_PY" -c '
import json, sys
print("%.2f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))' "$RR_T/$1.json" ||
        rr_fail "iperf3 $1: $(head -c 1000 "$RR_T/$1.json") $(cat "$RR_T/$1.err")"
}
near() { # near LABEL GOT RATE_MBIT: within +-6 % of RATE x 1448/1538
    local e
    e=$(awk -v r="$3" 'BEGIN { printf "%.2f", r * 1448 / 1538 }')
    t_rate "$2" "$e" 6 "$1, Mbit/s" || rr_fail "$1: $2 Mbit/s, expected $e, not over it by 25 % nor under a quarter"
    rr_ok "$1: $2 Mbit/s (expected $e)"
}

client 5202 small-alone
wait "$CPID" || rr_fail "iperf3 small alone: $(cat "$RR_T/small-alone.err")"
near "small alone, borrowing up to its ceil 30mbit" "$(goodput small-alone)" 30

client 5202 small-both
p1=$CPID
client 5201 rest-both
p2=$CPID
wait "$p1" || rr_fail "iperf3 small (both): $(cat "$RR_T/small-both.err")"
wait "$p2" || rr_fail "iperf3 rest (both): $(cat "$RR_T/rest-both.err")"
near "small beside rest, at its ceil" "$(goodput small-both)" 30
near "rest beside small, the remaining 70mbit" "$(goodput rest-both)" 70

out=$("$RR" shaper show --json -S "$RR_SOCK" 2>&1) || rr_fail "shaper show --json: $out"
"$RR_PY" -c '
import json, sys
d = json.loads(sys.argv[1])["shapers"]
c = {k["name"]: k for k in d[0]["classes"]}
assert set(c) == {"small", "rest"}, c
assert c["small"]["rate_bits_per_second"] == 20000000 and c["small"]["ceil_bits_per_second"] == 30000000, c
assert c["rest"]["rate_bits_per_second"] == 50000000 and c["rest"]["ceil_bits_per_second"] == 100000000, c
assert c["small"]["tx_pkts"] > 0 and c["rest"]["tx_pkts"] > 0, c' "$out" || rr_fail "shaper show --json: $out"
rr_ok "shaper show: classes small and rest with their rates, ceils and traffic"

out=$("$RR" shaper set b small ceil 50mbit -S "$RR_SOCK" 2>&1) || rr_fail "shaper set b small ceil 50mbit: $out"
rr_ok "shaper set: $out"
client 5202 small-50
wait "$CPID" || rr_fail "iperf3 small after set: $(cat "$RR_T/small-50.err")"
near "small alone after ceil 50mbit" "$(goodput small-50)" 50
"$RR" shaper set b small ceil 200mbit -S "$RR_SOCK" >/dev/null 2>&1 && rr_fail "a ceil above the port's rate was accepted"
rr_ok "a ceil above the port's rate is refused"
rr_no_restarts

rr_stop
rr_census_ok
t_pass shaper_classes
