#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_neigh6.sh: static IPv6 neighbours, from the manifest
# and at run time, over TAP ports (router_ipv6.sh's topology: the router has
# 2001:db8:61:N::1/64 on port a, 2001:db8:62:N::1/64 on port b). Each
# neighbour has a made-up MAC that no host owns; a packet capture (AF_PACKET)
# on B's side of port b shows which MAC the router sends to.
#   - the manifest's [neigh 2001:db8:62:N::99] mac M1: `neigh show` lists it
#     static (text and --json), and A's pings to it leave port b for M1,
#     without a solicitation for it;
#   - `neigh add 2001:db8:62:N::98 mac M3`: listed static on port b, pings
#     go to M3 without a solicitation; `neigh del` removes it: the next
#     pings are solicited for, and none reaches M3;
#   - errors as clear as IPv4's: a link-local address without port, a
#     non-canonical spelling, the router's own address, an address on no
#     port's network, deleting the manifest's entry without --force;
#   - `reload` with M1 changed to M2: the entry changes in place (its line
#     in the answer), and pings go to M2; a reload without the section
#     removes it;
#   - no service restarted, and every buffer is back in the pool at the end.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_neigh6

n=$(($$ % 250 + 1))
P6_A=2001:db8:61:$(printf '%x' "$n") P6_B=2001:db8:62:$(printf '%x' "$n")
RR_ADDR6_A=$P6_A::1/64 RR_ADDR6_B=$P6_B::1/64
S6=$P6_B::99 R6=$P6_B::98
M1=02:00:5e:61:00:01 M2=02:00:5e:61:00:02 M3=02:00:5e:61:00:03
rr_topology "$(printf '%s\n' "[neigh $S6]" "mac = $M1")"
rr_start
rr_hosts_ipv6 "$P6_A" "$P6_B" routes
# What reaches B's side of port b: one line per IPv6 frame, "DSTMAC DST6 NEXTHDR".
ip netns exec "$RR_NS_B" "$RR_PY" -u -c '
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86dd))
s.bind((sys.argv[1], 0))
print("ready", flush=True)
while True:
    f = s.recv(65535)
    if len(f) >= 54:
        print(":".join("%02x" % b for b in f[:6]), socket.inet_ntop(socket.AF_INET6, f[38:54]), f[20], flush=True)
' "$RR_IF_B" >"$RR_T/cap" 2>"$RR_T/cap.err" &
RR_EXTRA_PIDS+=($!)
rr_wait 5 grep -q '^ready$' "$RR_T/cap" || rr_fail "the capture on $RR_IF_B did not start: $(cat "$RR_T/cap.err")"
rr_ok "router up: A ($P6_A::2) -- [router] -- B ($P6_B::2); the manifest's static neighbour $S6 is $M1"

cap_count() { grep -c "^$1 $2 58\$" "$RR_T/cap"; } # cap_count MAC DST6: ICMPv6 frames seen
cap_has() { [ "$(cap_count "$1" "$2")" -ge "$3" ]; }
pings() { rr_in "$RR_NS_A" ping -6 -n -c 3 -i 0.2 -W 1 "$1" >/dev/null 2>&1 || true; } # nobody answers
nrr() { "$RR" "$@" -S "$RR_SOCK" 2>&1; }
expect_err() { # expect_err MESSAGE ARGS...: the command fails with exactly MESSAGE
    local want=$1 out
    shift
    out=$(nrr "$@") && rr_fail "$* succeeded: $out"
    [ "$out" = "ringrouter: $want" ] || rr_fail "$*: \"$out\", expected \"ringrouter: $want\""
}
solicits() { rr_stats || rr_fail "no stats"; rr_ctr router.nd_solicit_tx; }

# ---- the manifest's entry ----
out=$(nrr neigh show "$S6") || rr_fail "neigh show $S6: $out"
grep -Eq "^$S6 +$M1 +b +static +0\$" <<<"$out" || rr_fail "neigh show $S6: $out"
out=$(nrr neigh show --json) || rr_fail "neigh show --json: $out"
"$RR_PY" -c '
import json, sys
e = [x for x in json.loads(sys.argv[1])["neighbours6"] if x["address"] == sys.argv[2]]
assert len(e) == 1 and e[0]["mac"] == sys.argv[3] and e[0]["state"] == "static" and e[0]["port"] == "b", e' \
    "$out" "$S6" "$M1" || rr_fail "neigh show --json: $out"
ns0=$(solicits)
pings "$S6"
rr_wait 5 cap_has "$M1" "$S6" 3 || rr_fail "A's pings to $S6 did not reach $M1: $(tail -5 "$RR_T/cap")"
[ "$(solicits)" = "$ns0" ] || rr_fail "the router solicited for a static neighbour (nd_solicit_tx $ns0 -> $(solicits))"
rr_ok "manifest [neigh $S6]: static in neigh show (text, --json); A's pings leave port b for $M1, no solicitation"

# ---- errors ----
expect_err "neigh add: fe80::5 is link-local: add port NAME to say which link it is on" neigh add fe80::5 mac "$M3"
expect_err "neigh add: \"${P6_B^^}::98\" is not in canonical form (RFC 5952); write $R6" neigh add "${P6_B^^}::98" mac "$M3"
expect_err "neigh add: $P6_B::1 is the router's own address on port b" neigh add "$P6_B::1" mac "$M3"
expect_err "neigh add: 2001:db8:99::1 is on none of the ports' IPv6 networks" neigh add 2001:db8:99::1 mac "$M3"
expect_err "neigh add: $R6 is on port b's network, not port a's" neigh add "$R6" mac "$M3" port a
expect_err "neigh add: mac 01:00:5e:00:00:01 is not a unicast MAC address" neigh add "$R6" mac 01:00:5e:00:00:01
line=$(grep -n "^\[neigh $S6\]" "$RR_T/m.ini" | cut -d: -f1)
expect_err "neigh del: $S6 is the manifest's [neigh $S6] (line $line); with --force it is deleted until the next start" \
    neigh del "$S6"
rr_ok "neigh add/del errors: link-local without port, non-canonical, the router's own, off every network, wrong port, group MAC, the manifest's"

# ---- at run time ----
out=$(nrr neigh add "$R6" mac "$M3") || rr_fail "neigh add $R6: $out"
[ "$out" = "added $R6 mac $M3 port b" ] || rr_fail "neigh add $R6: \"$out\""
out=$(nrr neigh show "$R6") || rr_fail "neigh show $R6: $out"
grep -Eq "^$R6 +$M3 +b +static +0\$" <<<"$out" || rr_fail "neigh show $R6: $out"
ns0=$(solicits)
pings "$R6"
rr_wait 5 cap_has "$M3" "$R6" 3 || rr_fail "A's pings to $R6 did not reach $M3: $(tail -5 "$RR_T/cap")"
[ "$(solicits)" = "$ns0" ] || rr_fail "the router solicited for $R6 after neigh add"
expect_err "neigh add: $R6 is a static neighbour with another MAC or port; neigh replace changes it" \
    neigh add "$R6" mac "$M2"
rr_ok "neigh add $R6 mac $M3: static on port b, A's pings reach $M3 without a solicitation; add over it with another MAC refused"
out=$(nrr neigh del "$R6") || rr_fail "neigh del $R6: $out"
[ "$out" = "deleted $R6" ] || rr_fail "neigh del $R6: \"$out\""
out=$(nrr neigh show "$R6") || rr_fail "neigh show $R6: $out"
[ "$(tr -s ' ' <<<"$out")" = "ADDRESS6 MAC PORT STATE QUEUED" ] || rr_fail "neigh show $R6 after del: $out"
expect_err "neigh del: no neighbour $R6" neigh del "$R6"
seen=$(cap_count "$M3" "$R6")
ns0=$(solicits)
pings "$R6"
rr_wait 5 eval '[ "$(solicits)" -gt "$ns0" ]' || rr_fail "no solicitation for $R6 after neigh del"
[ "$(cap_count "$M3" "$R6")" = "$seen" ] || rr_fail "pings to $R6 still reached $M3 after neigh del"
rr_ok "neigh del $R6: gone from neigh show, again: no neighbour; the next pings are solicited for, none reaches $M3"

# ---- reload ----
sed -i "s/^mac = $M1\$/mac = $M2/" "$RR_T/m.ini"
out=$(nrr reload) || rr_fail "reload: $out"
grep -qxF "neigh $S6: mac $M1 port b -> mac $M2 port b" <<<"$out" || rr_fail "reload: no line for $S6: $out"
grep -q "^reload: done" <<<"$out" || rr_fail "reload: $out"
out=$(nrr neigh show "$S6")
grep -Eq "^$S6 +$M2 +b +static +0\$" <<<"$out" || rr_fail "neigh show $S6 after reload: $out"
pings "$S6"
rr_wait 5 cap_has "$M2" "$S6" 3 || rr_fail "after reload, A's pings to $S6 did not reach $M2: $(tail -5 "$RR_T/cap")"
rr_ok "reload with $S6's mac $M1 -> $M2: changed in place, A's pings reach $M2"
sed -i "/^\[neigh $S6\]\$/,/^mac = $M2\$/d" "$RR_T/m.ini"
out=$(nrr reload) || rr_fail "reload: $out"
grep -qxF "neigh $S6: removed" <<<"$out" || rr_fail "reload without [neigh $S6]: $out"
out=$(nrr neigh show "$S6")
[ "$(tr -s ' ' <<<"$out")" = "ADDRESS6 MAC PORT STATE QUEUED" ] || rr_fail "neigh show $S6 after its section went: $out"
rr_ok "reload without [neigh $S6]: removed"

rr_no_restarts
rr_stop
rr_census_ok
echo "PASS router_neigh6"
