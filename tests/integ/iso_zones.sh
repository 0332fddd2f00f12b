#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/iso_zones.sh: trust zones for packet memory (docs/security.md,
# "Trust zones"; issue 44, attack 1). The real router forwards between TAP
# ports a and b; port c's driver is rr-evil-zone (tests/svc/evil_zone.c), a
# compromised driver that scans every frame of the pool it maps for the
# marker a ping A -> B carries, and rewrites each one it finds.
#
# It runs twice:
#   shared  no zone keys: one zone, one pool for every port, as always. The
#           hostile driver finds the A -> B flow's marker: the limit of the
#           shared zone, documented.
#   split   zone = a, b and c: a pool per port. It scans as long, and finds
#           nothing; the ping's data comes back intact, the router counts
#           its copies between zones (zone_copies), and each zone's census
#           is clean.
# On a build without zones the split round fails: the manifest refuses the
# zone key (d0d932c), or, were it ignored, the marker would be found.
set -u
if [ -z "${ZONE_ROUND:-}" ]; then
    # Each round in a process of its own (rr_init's state and traps); the
    # second only if the first passed.
    ZONE_ROUND=shared bash "$0" || exit
    exec env ZONE_ROUND=split bash "$0"
fi
. "$(dirname "$0")/../lib/router.sh"
rr_init "iso_zones ($ZONE_ROUND)"
cp "$RR_BIN_DIR/rr-evil-zone" "$RR_T/bin/" && chmod 755 "$RR_T/bin/rr-evil-zone" || rr_fail "cannot copy rr-evil-zone"
rr_netns c
NS_C=$RR_NS
n=$(($$ % 250 + 1))
zc=
[ "$ZONE_ROUND" = split ] && zc='zone = c\n'
rr_topology "$(printf "[port c]\ndriver = tap\nifname = rrt%sc\nnetns = %s\naddress = 10.63.%s.1/24\n${zc}\n[service driver-c]\nbinary = rr-evil-zone\n" "$$" "$NS_C" "$n")"
if [ "$ZONE_ROUND" = split ]; then
    sed -i -e 's/^\[port a\]$/[port a]\nzone = a/' -e 's/^\[port b\]$/[port b]\nzone = b/' "$RR_T/m.ini"
    "$RR" check -c "$RR_T/m.ini" >"$RR_T/check.out" 2>&1 || rr_fail "the manifest with zone keys does not check: $(cat "$RR_T/check.out")"
fi
rr_start

# The marker, 16 bytes, which ping repeats through its data.
marker=RRZONE-MARK-0044
pattern=$(printf '%s' "$marker" | od -An -tx1 | tr -d ' \n')
rr_wait 5 grep -q 'rr-evil-zone: scanning a pool' "$RR_LOG" || rr_fail "rr-evil-zone did not start: $(tail -n 5 "$RR_LOG")"
rr_in "$RR_NS_A" ping -c 1 -W 2 "$RR_HOST_B" >/dev/null || rr_fail "no first ping A -> B"
rr_in "$RR_NS_A" ping -c 40 -i 0.05 -W 1 -s 200 -p "$pattern" "$RR_HOST_B" >"$RR_T/ping.log" 2>&1
received=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$RR_T/ping.log")
[ "${received:-0}" -ge 38 ] || rr_fail "ping A -> B: ${received:-0} of 40 replies: $(tail -n 3 "$RR_T/ping.log")"
# Two more reports from the scanner after the flow: its last scan saw it all.
seen=$(grep -c 'rr-evil-zone: scans' "$RR_LOG")
rr_wait 5 eval '[ "$(grep -c "rr-evil-zone: scans" "$RR_LOG")" -ge $((seen + 2)) ]' ||
    rr_fail "rr-evil-zone stopped reporting: $(grep 'rr-evil-zone' "$RR_LOG" | tail -n 3)"
last=$(grep 'rr-evil-zone: scans' "$RR_LOG" | tail -n 1)
scans=$(sed -n 's/.*scans \([0-9]*\):.*/\1/p' <<<"$last")
found=$(sed -n 's/.*marker found \([0-9]*\) times.*/\1/p' <<<"$last")
echo "rr-evil-zone: ${last#*rr-evil-zone: }"
[ "${scans:-0}" -ge 20 ] || rr_fail "rr-evil-zone scanned only ${scans:-0} times"
wrong=$(grep -c 'wrong data byte' "$RR_T/ping.log")
rr_stats || rr_fail "no stats"
copies=${RRS[router.zone_copies]:-0}
if [ "$ZONE_ROUND" = shared ]; then
    # The shared zone's limit: any driver reads (and rewrites) every port's frames.
    [ "${found:-0}" -gt 0 ] || rr_fail "in the shared zone the hostile driver found no marker: the test sees nothing"
    [ "$copies" = 0 ] || rr_fail "one zone, yet the router copied $copies packets between zones"
    [ "${RRS[pool.zones]:-}" = 1 ] && [ "${RRS[pool.buffers]:-}" = 8192 ] ||
        rr_fail "stats: pool of ${RRS[pool.buffers]:-?} buffers in ${RRS[pool.zones]:-?} zones, expected 8192 in 1"
    rr_ok "shared zone: driver-c found another port's marker ${found} times (the documented limit)"
else
    [ "${found:-x}" = 0 ] || rr_fail "zone c's driver found port a's marker $found times: zones do not isolate"
    [ "$wrong" = 0 ] || rr_fail "$wrong ping replies carried altered data"
    [ "${RRS[pool.zones]:-}" = 3 ] && [ "${RRS[pool.buffers]:-}" = $((3 * 8192)) ] ||
        rr_fail "stats: pool of ${RRS[pool.buffers]:-?} buffers in ${RRS[pool.zones]:-?} zones, expected $((3 * 8192)) in 3"
    [ "$copies" -ge 80 ] || rr_fail "the router counted $copies copies between zones; 40 pings and replies cross two"
    rr_ok "split zones: $scans scans of zone c's pool found no marker; $copies packets copied between zones; data intact"
    # Zones are made at up: a reload may neither move a port nor add a zone.
    cp "$RR_T/m.ini" "$RR_T/m.up"
    sed -i 's/^zone = c$/zone = a/' "$RR_T/m.ini"
    rr_c reload
    [ "$rc" = 100 ] && [[ "$err" == *"port c: zone changed (c -> a)"* ]] ||
        rr_fail "reload moving port c to zone a: exit $rc: $err $out"
    cp "$RR_T/m.up" "$RR_T/m.ini"
    printf '\n[port d]\ndriver = tap\nifname = rrt%sd\naddress = 10.64.%s.1/24\nzone = d\n' "$$" "$n" >>"$RR_T/m.ini"
    rr_c reload
    [ "$rc" = 100 ] && [[ "$err" == *"added d in zone d, which has no pool yet"* ]] ||
        rr_fail "reload adding port d in a new zone: exit $rc: $err $out"
    cp "$RR_T/m.up" "$RR_T/m.ini"
    rr_ok "reload refused a port moved to another zone, and a port in a new zone"
fi
rr_stop
rr_census_ok
if [ "$ZONE_ROUND" = split ]; then
    z=$(grep -c '^ringrouter: census: all [0-9]* buffers free in zone' "$RR_LOG")
    [ "$z" = 3 ] || rr_fail "expected a clean census for each of 3 zones, saw $z: $(grep 'census' "$RR_LOG")"
fi
t_pass "iso_zones ($ZONE_ROUND)"
