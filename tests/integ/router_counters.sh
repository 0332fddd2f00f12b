#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_counters.sh: each router counter below is provoked with
# traffic from a host and must move by exactly the amount sent, in
# `ringrouter stats --json`. Two TAP ports: port a 10.61.N.1/20 (a network
# big enough to fill the neighbour table from), port b 10.62.N.1/24 with
# mtu = 1000. The hosts pin the router's MAC (permanent neighbour entries),
# so their kernels send no ARP of their own while we count.
#   - local_echo, icmp_echo_reply_tx: 5 pings to the router's own address;
#   - drop_echo_chain: 3 echo requests whose ICMP header is cut short (IP
#     total length 24: the header does not fit the reply path);
#   - arp_request_rx, arp_reply_tx: 4 ARP requests for the router's address;
#   - frag_packets, frag_created: 3 pings of 1428 bytes without DF from A to
#     B through mtu 1000 (2 fragments each; B answers, so they reassemble);
#     drop_frag_needed, icmp_frag_needed_tx: 1 such ping with DF;
#   - drop_neigh_table_full: gratuitous ARP from (3/4 of the table's 4096
#     entries - the entries present + 40) new addresses on port a's network:
#     neigh_learned rises by exactly the free room, drop_neigh_table_full by
#     40, `neigh show` lists 3072 entries; then 2 pings from B to an unknown
#     address on port a's network: drop_neigh_table_full rises by 2 more
#     (the forwarding path's insert refused);
#   - drop_tx_full and drop_bad_nexthop cannot be provoked from outside and
#     stay 0 (docs/testing.md, "Router counters that cannot be provoked
#     from outside");
#   - no malformed-input counter moved; no restarts; a clean census.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_counters

NEIGH_ROOM=3072 # tables/neigh.c: entries past 3/4 of SUP_NEIGH_ENTRIES (4096) are refused
RR_PLEN_A=20 RR_MTU_B=1000
rr_topology
rr_start
rr_ok "router up: A $RR_HOST_A (port a $RR_GW_A/20) -- [router] -- B $RR_HOST_B (port b mtu 1000)"

rr_resolve
mac_a=$RR_MAC_A
ip -n "$RR_NS_A" neigh replace "$RR_GW_A" lladdr "$RR_MAC_A" dev "$RR_IF_A" nud permanent || rr_fail "neigh replace in A"
ip -n "$RR_NS_B" neigh replace "$RR_GW_B" lladdr "$RR_MAC_B" dev "$RR_IF_B" nud permanent || rr_fail "neigh replace in B"
host_mac=$RR_HMAC_A

# delta NAME: the counter's rise since the last snap.
declare -A SNAP
snap() {
    rr_stats || rr_fail "stats"
    local k
    SNAP=()
    for k in "${!RRS[@]}"; do SNAP[$k]=${RRS[$k]}; done
}
delta() { echo $(($(rr_ctr "router.$1") - ${SNAP[router.$1]:-0})); }
# expect NAME=N...: wait (bounded) until the first reaches its N, then every
# one must have risen by exactly its N.
reached() {
    rr_stats || return 1
    [ "$(delta "${1%%=*}")" -ge "${1#*=}" ]
}
expect() {
    rr_wait 5 reached "$1" || true
    rr_stats || rr_fail "stats"
    local kv got msg=
    for kv in "$@"; do
        got=$(delta "${kv%%=*}")
        [ "$got" = "${kv#*=}" ] || rr_fail "${kv%%=*} rose by $got, expected ${kv#*=}"
        msg+="${kv%%=*} +$got "
    done
    rr_ok "$msg"
}

# Raw frames from A's side of port a.
cat >"$RR_T/frames.py" <<'PY'
import ipaddress, os, sys
sys.path.insert(0, os.environ["RR_PYLIB"])
from rrpkt import arp, ipv4, mac, raw

ifname, rmac, hmac, gw, host, kind = sys.argv[1:7]
rmac, hmac = mac(rmac), mac(hmac)
s = raw(ifname)
out = []
if kind == "echo_short":  # an echo request cut after 4 bytes of ICMP header
    for i in range(int(sys.argv[7])):
        out.append(rmac + hmac + b"\x08\x00" + ipv4(host, gw, 1, b"\x08\x00\xf7\xff", ident=0x1000 + i))
elif kind == "arp_req":  # who-has GW tell HOST, unicast to the router as Linux re-probes
    for i in range(int(sys.argv[7])):
        out.append(arp(1, b"\xff" * 6 if i % 2 else rmac, hmac, host, b"\0" * 6, gw))
elif kind == "garp":  # gratuitous ARP from new addresses FIRST..FIRST+COUNT-1 of GW's network
    first, count, plen = int(sys.argv[7]), int(sys.argv[8]), sys.argv[9]
    net = ipaddress.ip_network(gw + "/" + plen, strict=False)
    skip = {ipaddress.ip_address(gw), ipaddress.ip_address(host)}
    hosts = [h for h in net.hosts() if h not in skip]
    for h in hosts[first:first + count]:
        hw = b"\x02\x5a" + h.packed
        out.append(arp(1, b"\xff" * 6, hw, str(h), b"\0" * 6, str(h)))
elif kind == "unused":  # print an address of the network no garp used
    net = ipaddress.ip_network(gw + "/" + sys.argv[7], strict=False)
    print(list(net.hosts())[-1])
    sys.exit(0)
for f in out:
    s.send(f)
print(len(out))
PY
frames() { # frames KIND ARGS...: the number of frames sent
    rr_in "$RR_NS_A" "$RR_PY" "$RR_T/frames.py" "$RR_IF_A" "$mac_a" "$host_mac" "$RR_GW_A" "$RR_HOST_A" "$@" ||
        rr_fail "frames.py $1 failed"
}

# ---- local_echo ----
snap
out=$(rr_in "$RR_NS_A" ping -n -c 5 -i 0.2 -W 2 "$RR_GW_A" 2>&1) || rr_fail "ping the router: $out"
grep -q " 5 received" <<<"$out" || rr_fail "ping the router lost replies: $out"
expect local_echo=5 icmp_echo_reply_tx=5 forwarded=0

# ---- drop_echo_chain ----
snap
[ "$(frames echo_short 3)" = 3 ] || rr_fail "echo_short: not 3 frames sent"
expect drop_echo_chain=3 local_echo=0 icmp_echo_reply_tx=0 drop_icmp_bad_checksum=0

# ---- arp_request_rx ----
snap
[ "$(frames arp_req 4)" = 4 ] || rr_fail "arp_req: not 4 frames sent"
expect arp_request_rx=4 arp_reply_tx=4 arp_bad=0 arp_gratuitous_rx=0

# ---- frag_packets ----
snap
out=$(rr_in "$RR_NS_A" ping -n -c 3 -i 0.2 -W 2 -M dont -s 1400 "$RR_HOST_B" 2>&1) || rr_fail "1428-byte pings A -> B: $out"
grep -q " 3 received" <<<"$out" || rr_fail "1428-byte pings A -> B lost replies (fragments not reassembled?): $out"
expect frag_packets=3 frag_created=6 drop_frag_needed=0
snap
# One: A's kernel then knows the path MTU and fragments (or refuses) itself.
out=$(rr_in "$RR_NS_A" ping -n -c 1 -W 1 -M "do" -s 1400 "$RR_HOST_B" 2>&1)
grep -q "Frag needed and DF set (mtu = 1000)" <<<"$out" || rr_fail "DF pings through mtu 1000: no frag needed from the router: $out"
expect drop_frag_needed=1 icmp_frag_needed_tx=1 frag_packets=0

# ---- drop_neigh_table_full ----
neigh_count() {
    "$RR" neigh show --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
d = json.load(sys.stdin)
if isinstance(d, dict):
    d = next(v for v in d.values() if isinstance(v, list))
print(len(d))'
}
n0=$(neigh_count) || rr_fail "neigh show --json"
room=$((NEIGH_ROOM - n0))
total=$((room + 40))
snap
sent=0
garp_seen() { rr_stats && [ "$(delta arp_gratuitous_rx)" -ge "$sent" ]; }
while [ "$sent" -lt "$total" ]; do
    k=$((total - sent))
    [ "$k" -le 250 ] || k=250 # below the TAP's queue (500): wait for the router between chunks
    [ "$(frames garp "$sent" "$k" 20)" = "$k" ] || rr_fail "garp: not $k frames sent"
    sent=$((sent + k))
    rr_wait 10 garp_seen || rr_fail "the router saw $(delta arp_gratuitous_rx) of $sent gratuitous ARPs"
done
expect arp_gratuitous_rx=$total neigh_learned=$room drop_neigh_table_full=40
n1=$(neigh_count) || rr_fail "neigh show --json"
[ "$n1" = "$NEIGH_ROOM" ] || rr_fail "neigh show lists $n1 entries, expected $NEIGH_ROOM (3/4 of 4096)"
rr_ok "neighbour table: $n0 -> $n1 entries after $total gratuitous ARPs"
unused=$(rr_in "$RR_NS_A" "$RR_PY" "$RR_T/frames.py" "$RR_IF_A" "$mac_a" "$host_mac" "$RR_GW_A" "$RR_HOST_A" unused 20) ||
    rr_fail "frames.py unused"
snap
rr_in "$RR_NS_B" ping -n -c 2 -i 0.2 -W 1 "$unused" >/dev/null 2>&1 && rr_fail "ping $unused answered: nothing should be there"
expect drop_neigh_table_full=2 neigh_learned=0 arp_request_tx=0 forwarded=0

# ---- not provokable from outside: stay 0 ----
rr_stats || rr_fail "stats"
rr_zero router.drop_tx_full router.drop_bad_nexthop
rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
rr_ok "drop_tx_full, drop_bad_nexthop and every malformed-input counter 0; no restarts"

rr_stop
rr_census_ok
echo "PASS router_counters"
