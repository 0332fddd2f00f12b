#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/link.sh: `ringrouter link` (and its alias `port`) and `stats
# PORT` against the real router between two TAP ports (issue 19, item 3).
# The hosts send nothing but what the test sends: IPv6 is off in both
# namespaces, each host pins the router's MAC (read from `link --json`),
# and the router has both hosts as static neighbours (`neigh add`), so no
# ARP crosses either port while we count.
#   - link --json: per port its name, ifname, netns, driver tap, 1 queue, the
#     router's MAC on it, mtu, address, state up, its services (driver-PORT
#     up); the human form's lines; `port b` the same as `link b`;
#   - ping -c 50 from A to B: exact deltas, both ways, side by side: on a,
#     the driver received 50 frames of 98 bytes and sent 50, and the router
#     took 50 from a and gave 50 to it; on b the same the other way; no
#     drops anywhere;
#   - stats PORT: only that port's driver and rings (and --json the same);
#   - link nosuch, stats nosuch: exit 100, the port named and the ports
#     listed; stats PORT --stages refused; link a extra refused;
#   - no malformed-input counter moved, no restarts, clean census.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init link

rr_topology
for ns in "$RR_NS_A" "$RR_NS_B"; do
    rr_in "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 ||
        rr_fail "cannot turn IPv6 off in $ns"
done
rr_start

c() { # c ARGS...: sets $out $err $rc
    "$RR" "$@" -S "$RR_SOCK" >"$RR_T/out" 2>"$RR_T/err"
    rc=$?
    out=$(cat "$RR_T/out")
    err=$(cat "$RR_T/err")
}
# link_get PORT: one line "rx_pkts rx_bytes rx_drops tx_pkts tx_bytes tx_drops r_rx r_rxb r_tx r_txb"
link_get() {
    "$RR" link "$1" --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
(l,) = json.load(sys.stdin)["links"]
print(l["rx"]["packets"], l["rx"]["bytes"], l["rx"]["drops"], l["tx"]["packets"], l["tx"]["bytes"], l["tx"]["drops"],
      l["router"]["rx_packets"], l["router"]["rx_bytes"], l["router"]["tx_packets"], l["router"]["tx_bytes"])'
}

# ---- what link says about each port ----
"$RR" link --json -S "$RR_SOCK" >"$RR_T/link.json" || rr_fail "link --json"
"$RR_PY" - "$RR_T/link.json" "$RR_IF_A" "$RR_NS_A" "$RR_GW_A" "$RR_IF_B" "$RR_NS_B" "$RR_GW_B" <<'EOF' || rr_fail "link --json: $(cat "$RR_T/link.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, dict) and [l["name"] for l in d["links"]] == ["a", "b"], d
for l, (ifn, ns, gw) in zip(d["links"], [sys.argv[2:5], sys.argv[5:8]]):
    want = {"ifname": ifn, "netns": ns, "driver": "tap", "queues": 1, "mtu_bytes": 1500, "addresses": [gw + "/24"],
            "state": "up", "services": [{"name": "driver-" + l["name"], "state": "up"}]}
    for k, v in want.items():
        assert l[k] == v, (k, l[k], v)
    assert len(l["mac"]) == 17 and int(l["mac"][:2], 16) & 1 == 0, l["mac"]
    for side in ("rx", "tx"):
        assert set(l[side]) == {"packets", "bytes", "drops"}, l[side]
    assert set(l["router"]) == {"rx_packets", "rx_bytes", "tx_packets", "tx_bytes"}, l["router"]
print("link --json: a and b with ifname, netns, driver, queues, mac, mtu, addresses, state, services, counters")
EOF
mac_a=$("$RR_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["links"][0]["mac"])' "$RR_T/link.json")
mac_b=$("$RR_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["links"][1]["mac"])' "$RR_T/link.json")
c link a
[ "$rc" = 0 ] || rr_fail "link a: exit $rc: $err"
grep -qxE "a: $RR_IF_A  netns $RR_NS_A  driver tap  queues 1  state up" <<<"$out" || rr_fail "link a, first line: $out"
grep -qxE "    mac $mac_a  mtu 1500  address $RR_GW_A/24" <<<"$out" || rr_fail "link a, second line: $out"
grep -qxE "    services: driver-a up" <<<"$out" || rr_fail "link a, services: $out"
grep -qE "^ +RX packets +bytes +drops +TX packets +bytes +drops$" <<<"$out" || rr_fail "link a, header: $out"
grep -qE "^    driver( +[0-9]+){6}$" <<<"$out" && grep -qE "^    router +[0-9]+ +[0-9]+ +- +[0-9]+ +[0-9]+ +-$" <<<"$out" ||
    rr_fail "link a, counter rows: $out"
[ "$(grep -c '' <<<"$out")" = 6 ] || rr_fail "link a printed $(grep -c '' <<<"$out") lines: $out"
c port b
[ "$rc" = 0 ] && grep -q "^b: $RR_IF_B " <<<"$out" && ! grep -q "^a: " <<<"$out" || rr_fail "port b: exit $rc: $out $err"
rr_ok "link: each port's ifname, netns, driver, queues, mac, mtu, address, state and services; port is link"

# ---- counters match the traffic ----
ok=$("$RR" neigh add "$RR_HOST_A" mac "$(rr_in "$RR_NS_A" cat "/sys/class/net/$RR_IF_A/address")" -S "$RR_SOCK") &&
    ok=$("$RR" neigh add "$RR_HOST_B" mac "$(rr_in "$RR_NS_B" cat "/sys/class/net/$RR_IF_B/address")" -S "$RR_SOCK") ||
    rr_fail "neigh add for the hosts"
ip -n "$RR_NS_A" neigh replace "$RR_GW_A" lladdr "$mac_a" dev "$RR_IF_A" nud permanent || rr_fail "neigh in A"
ip -n "$RR_NS_B" neigh replace "$RR_GW_B" lladdr "$mac_b" dev "$RR_IF_B" nud permanent || rr_fail "neigh in B"
# Whatever the hosts sent while they came up has arrived: the counters hold still.
steady() {
    local x y
    x="$(link_get a) $(link_get b)"
    rr_msleep 300
    y="$(link_get a) $(link_get b)"
    [ "$x" = "$y" ]
}
rr_wait 10 steady || rr_fail "the link counters do not hold still with no traffic"
read -r a0 <<<"$(link_get a)"
read -r b0 <<<"$(link_get b)"
o=$(rr_in "$RR_NS_A" ping -n -c 50 -i 0.02 -W 2 "$RR_HOST_B" 2>&1)
grep -q " 50 received" <<<"$o" || rr_fail "ping -c 50 A -> B: $o"
want_a="50 4900 0 50 4900 0 50 4900 50 4900" # 98-byte frames: 14 + 20 + 8 + 56
want_b=$want_a
deltas() { # deltas BEFORE NOW: field-wise NOW - BEFORE
    local -a x y
    read -ra x <<<"$1"
    read -ra y <<<"$2"
    local i r=()
    for i in "${!x[@]}"; do r+=($((y[i] - x[i]))); done
    echo "${r[*]}"
}
done_counting() { [ "$(deltas "$a0" "$(link_get a)")" = "$want_a" ] && [ "$(deltas "$b0" "$(link_get b)")" = "$want_b" ]; }
rr_wait 5 done_counting ||
    rr_fail "link deltas after ping -c 50 (rx pkts bytes drops, tx pkts bytes drops, router rx pkts bytes, tx pkts bytes): a $(deltas "$a0" "$(link_get a)"), b $(deltas "$b0" "$(link_get b)"), expected $want_a on both"
rr_stats || rr_fail "stats"
[ "$(rr_ctr router.arp_request_tx)" = 0 ] || rr_fail "the router sent ARP: the counts above may include it"
rr_ok "ping -c 50 A -> B: link a and b both moved by exactly: driver rx 50/4900 B, tx 50/4900 B, no drops; router 50/4900 B each way"
c link a
grep -qE "^    driver +$((${a0%% *} + 50)) " <<<"$out" || rr_fail "link a (human) after the pings: $out"

# ---- stats PORT ----
for p in a b; do
    got=$("$RR" stats "$p" --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join(s["name"] for s in d["services"]), "|", " ".join(r["name"] for r in d["rings"]), "|", d["pool"]["buffers"])') ||
        rr_fail "stats $p --json"
    [ "$got" = "driver-$p | rx-$p tx-$p | 8192" ] || rr_fail "stats $p --json: $got"
    c stats "$p"
    [ "$rc" = 0 ] && grep -q "^driver-$p (up): " <<<"$out" && ! grep -qE "^(router|driver-[^$p]) \(" <<<"$out" &&
        grep -qE "^rx-$p " <<<"$out" && ! grep -qE "^(rx|tx)-[^$p] " <<<"$out" || rr_fail "stats $p: exit $rc: $out"
done
rr_ok "stats a and stats b: only that port's driver and rings, in text and --json"

# ---- bad input ----
bad() { # bad "EXPECTED STDERR" ARGS...
    local want=$1
    shift
    c "$@"
    [ "$rc" = 100 ] && [ "$err" = "$want" ] && [ -z "$out" ] || rr_fail "$*: exit $rc, said \"$err\" (expected \"$want\"), printed \"$out\""
    echo "  $*: exit 100: $err"
}
bad 'ringrouter: link: no port "nosuch"; the ports are: a b' link nosuch
bad 'ringrouter: stats: no port "nosuch"; the ports are: a b' stats nosuch
bad 'ringrouter: stats: --stages covers every service; it takes no PORT' stats a --stages
bad 'ringrouter link: unexpected argument "extra" (name one port)' link a extra
rr_ok "bad ports and arguments: exit 100, named"

rr_zero "${RR_MALFORMED[@]}"
rr_no_restarts
rr_stop
rr_census_ok
t_pass link
