#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/vlan.sh: VLAN sub-interfaces (docs/drivers.md, "VLAN
# sub-interfaces"), two on a TAP port and two on an AF_XDP port, each routed
# to a plain port:
#
#   ns T: TAP rrtNt (port t, untagged = parent): the kernel's host
#         10.81.N.2; hosts of VLAN 10 (port t.10, 10.82.N.2) and VLAN 20
#         (port t.20, 10.83.N.2, shaped: its own shaper-t.20 feeds driver-t)
#   ns X: veth xv0, its peer xv1 in the router's namespace (port x, AF_XDP,
#         untagged frames dropped): hosts of VLAN 30 (port x.30, 10.85.N.2)
#         and of 802.1ad 100 then 802.1Q 40 (port x.40, 10.86.N.2)
#   ns P: TAP rrtNp (port p, plain): the kernel's host 10.87.N.2
#
# The VLAN hosts are played on a raw socket of their parent's device
# (tests/lib/vlan_hosts.py), which answers ARP and echo for them and pings
# from them: the kernel here may lack 802.1Q devices. Between two VLANs of
# one parent, a frame must cross the router.
# Checks: `check` refuses an AF_XDP parent whose device strips tags and
# names the ethtool command; every VLAN host pings the plain port's host;
# VLAN to VLAN of one parent (TAP and AF_XDP) is routed, TTL - 1; tcpdump -e
# on the parents' devices sees the router's frames with the VLAN's tags
# (802.1Q, and 802.1ad then 802.1Q); an unknown VLAN and untagged frames on
# a parent that drops them are counted in its driver and never reach the
# router (drop_vlan stays 0); `link` shows the VLAN ports with their
# driver's and the router's counters; `capture` of a VLAN port and a reload
# that adds or retags one are refused, named; a clean census at the end.
# Skips (77) when not root, a tool is missing, or the kernel has no AF_XDP.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init vlan
rr_need tcpdump ethtool
rr_afxdp_init
rr_shaper_init
RR_SERVICES=(router driver-t driver-x driver-p shaper-t.20)

n=$(($$ % 250 + 1))
net() { echo "10.$1.$n"; }
rr_netns r; NS_R=$RR_NS
for s in t x p; do
    rr_netns "$s"
    declare "NS_${s^^}=$RR_NS"
done
IF_T=rrt$$t IF_P=rrt$$p

ip -n "$NS_X" link add xv0 type veth peer name xv1 netns "$NS_R" || rr_fail "veth xv0"
# The host's checksums whole (tests/lib/router.sh, rr_veth_host).
rr_in "$NS_X" ethtool -K xv0 tx off >/dev/null 2>&1 || rr_fail "ethtool -K xv0 tx off"
ip -n "$NS_X" link set xv0 up && ip -n "$NS_R" link set xv1 up || rr_fail "veth up"

{
    printf '[router]\nname = vl%s\npool_buffers = 8192\nrun_dir = %s/run\n\n' "$$" "$RR_T"
    printf '[port t]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s.1/24\nuntagged = parent\n\n' "$IF_T" "$NS_T" "$(net 81)"
    printf '[port t.10]\nparent = t\nvlan = 10\naddress = %s.1/24\n\n' "$(net 82)"
    printf '[port t.20]\nparent = t\nvlan = 20\naddress = %s.1/24\n\n' "$(net 83)"
    printf '[port x]\ndriver = afxdp\nifname = xv1\naddress = %s.1/24\n\n' "$(net 84)"
    printf '[port x.30]\nparent = x\nvlan = 30\naddress = %s.1/24\n\n' "$(net 85)"
    printf '[port x.40]\nparent = x\nvlan = 100.40\naddress = %s.1/24\n\n' "$(net 86)"
    printf '[port p]\ndriver = tap\nifname = %s\nnetns = %s\naddress = %s.1/24\n\n' "$IF_P" "$NS_P" "$(net 87)"
    printf '[shaper t.20]\nrate = 10mbit\n' # its own shaper: sh-t.20, then tx-t.20 to driver-t
    for s in "${RR_SERVICES[@]}"; do
        printf '\n[service %s]\nhang_ms = 3000\n' "$s"
    done
} >"$RR_T/m.ini"

# A device that strips tags on receive hides them from XDP: refused, with
# the command that turns it off (veth has rxvlan on by default).
rr_in "$NS_R" ethtool -K xv1 rxvlan on rx-vlan-stag-hw-parse on >/dev/null 2>&1
out=$(ip netns exec "$NS_R" "$RR" check -c "$RR_T/m.ini" 2>&1) && rr_fail "check took a parent that strips tags: $out"
case $out in
*"[port x] port x's device xv1 strips 802.1Q tags on receive (rx-vlan-offload on)"*"set \`ethtool -K xv1 rxvlan off\`"*) ;;
*) rr_fail "check's error for rxvlan on: $out" ;;
esac
rr_in "$NS_R" ethtool -K xv1 rxvlan off >/dev/null 2>&1 || rr_fail "ethtool -K xv1 rxvlan off"
out=$(ip netns exec "$NS_R" "$RR" check -c "$RR_T/m.ini" 2>&1) && rr_fail "check took a parent that strips 802.1ad tags"
case $out in
*"strips 802.1ad tags"*"set \`ethtool -K xv1 rx-vlan-stag-hw-parse off\`"*) ;;
*) rr_fail "check's error for rx-vlan-stag-hw-parse on: $out" ;;
esac
rr_in "$NS_R" ethtool -K xv1 rx-vlan-stag-hw-parse off >/dev/null 2>&1 || rr_fail "ethtool -K xv1 rx-vlan-stag-hw-parse off"
out=$(ip netns exec "$NS_R" "$RR" check -c "$RR_T/m.ini" 2>&1) || rr_fail "check: $out"
rr_ok "check refuses a parent whose device strips tags, and names the ethtool command"

rr_up_in "$NS_R" "$RR_T/m.ini"

# The hosts: the untagged ones are the kernel's; the VLAN hosts are played
# on a raw socket of each parent's device (tests/lib/vlan_hosts.py: this
# kernel may have no 802.1Q devices), one process per device.
host() { # host NS DEV ADDR GW
    ip -n "$1" addr add "$3/24" dev "$2" && ip -n "$1" link set "$2" up && ip -n "$1" route add default via "$4" ||
        rr_fail "host $3 on $2 in $1"
}
host "$NS_T" "$IF_T" "$(net 81).2" "$(net 81).1"
host "$NS_P" "$IF_P" "$(net 87).2" "$(net 87).1"
H10=10/$(net 82).2/$(net 82).1 H20=20/$(net 83).2/$(net 83).1
H30=30/$(net 85).2/$(net 85).1 H40=100.40/$(net 86).2/$(net 86).1
VH=$RR_ROOT/tests/lib/vlan_hosts.py
serve() { # serve NS DEV HOST...
    local ns=$1 dev=$2 log=$RR_T/serve-$2
    shift 2
    ip netns exec "$ns" "$RR_PY" "$VH" serve "$dev" "$@" >"$log" 2>&1 & # not rr_in: $! must be python
    RR_EXTRA_PIDS+=($!)
    rr_wait 5 grep -q '^ready' "$log" || rr_fail "VLAN hosts on $dev: $(cat "$log")"
}
serve "$NS_T" "$IF_T" "$H10" "$H20"
serve "$NS_X" xv0 "$H30" "$H40"
vping() { # vping NS DEV HOST DST WHAT: 3 pings, every reply in $out
    out=$(rr_in "$1" "$RR_PY" "$VH" ping "$2" "$3" "$4" 3 2>&1) || rr_fail "ping $5: $out"
}
vping "$NS_T" "$IF_T" "$H10" "$(net 87).2" "T10 -> P"
vping "$NS_T" "$IF_T" "$H20" "$(net 87).2" "T20 -> P"
vping "$NS_X" xv0 "$H30" "$(net 87).2" "X30 -> P"
vping "$NS_X" xv0 "$H40" "$(net 87).2" "X40 -> P"
[ "$(grep -c 'ttl=63 tags=s100.40$' <<<"$out")" = 3 ] || rr_fail "X40 -> P: the replies came back otherwise: $out"
out=$(rr_in "$NS_P" ping -n -c 3 -i 0.2 -W 2 "$(net 86).2" 2>&1) || rr_fail "ping P -> X40: $out"
out=$(rr_in "$NS_T" ping -n -c 3 -i 0.2 -W 2 "$(net 87).2" 2>&1) || rr_fail "ping T (untagged) -> P: $out"
rr_ok "each VLAN host (TAP 10, 20; AF_XDP 30, 802.1ad 100.40) and the TAP parent's untagged host reach the plain port"

# VLAN to VLAN of one parent: through the router, one hop (the reply left
# its host with TTL 64), and back in the asking host's VLAN.
vping "$NS_T" "$IF_T" "$H10" "$(net 83).2" "T10 -> T20"
[ "$(grep -c 'ttl=63 tags=10$' <<<"$out")" = 3 ] || rr_fail "T10 -> T20 is not one routed hop: $out"
vping "$NS_X" xv0 "$H30" "$(net 86).2" "X30 -> X40"
[ "$(grep -c 'ttl=63 tags=30$' <<<"$out")" = 3 ] || rr_fail "X30 -> X40 is not one routed hop: $out"
rr_ok "VLAN to VLAN of one parent is routed with TTL - 1 (TAP 10 -> 20, AF_XDP 30 -> 802.1ad 100.40)"

# The tags on the wire: the router's frames on the parents' devices, as
# tcpdump -e shows them (no filter: a filter would look past one tag only).
# capture NS DEV FILE: tcpdump running, ready before it returns.
capture() {
    # Not through rr_in: $! must be timeout (ip netns exec execs it), which
    # hands our TERM on to tcpdump.
    ip netns exec "$1" timeout 30 tcpdump -i "$2" -e -nn -l >"$3" 2>"$3.err" &
    CAP_PID=$!
    RR_EXTRA_PIDS+=("$CAP_PID")
    rr_wait 5 grep -q 'listening on' "$3.err" || rr_fail "tcpdump on $2 did not start: $(cat "$3.err")"
}
# seen FILE WHAT PATTERN...: each pattern in the capture within 5 s, then tcpdump ends.
seen() {
    local f=$1 what=$2 p
    shift 2
    for p in "$@"; do
        rr_wait 5 grep -q "$p" "$f" || rr_fail "$what: no frame like /$p/ in: $(cat "$f")"
    done
    rr_kill_pid "$CAP_PID"
}
mac_t=02:72:72:00:00:01 # port t's, the manifest's first: its VLAN ports' too
mac_x=$(ip -n "$NS_R" link show xv1 | awk '/link\/ether/ { print $2 }')
[ -n "$mac_x" ] || rr_fail "the MAC of xv1"
capture "$NS_T" "$IF_T" "$RR_T/cap_t"
vping "$NS_T" "$IF_T" "$H10" "$(net 83).2" "T10 -> T20 under capture"
# The router's frames: the request to T20 in VLAN 20, the reply to T10 in VLAN 10.
seen "$RR_T/cap_t" "the router's frames on $IF_T" \
    "^[0-9:.]* $mac_t > .*ethertype 802.1Q (0x8100).* vlan 20, .*$(net 83).2: ICMP echo request" \
    "^[0-9:.]* $mac_t > .*ethertype 802.1Q (0x8100).* vlan 10, .*$(net 82).2: ICMP echo reply"
capture "$NS_X" xv0 "$RR_T/cap_x"
vping "$NS_X" xv0 "$H30" "$(net 86).2" "X30 -> X40 under capture"
seen "$RR_T/cap_x" "the router's frames on xv0" \
    "^[0-9:.]* $mac_x > .*ethertype 802.1Q-QinQ (0x88a8).* vlan 100, .*ethertype 802.1Q (0x8100).* vlan 40, .*$(net 86).2: ICMP echo request" \
    "^[0-9:.]* $mac_x > .*ethertype 802.1Q (0x8100).* vlan 30, .*$(net 85).2: ICMP echo reply"
rr_ok "on the wire: the router's frames carry VLAN 10 and 20 on the TAP, 30 and 802.1ad 100 then 40 on the veth"

# An unknown VLAN on the TAP parent, untagged frames on the AF_XDP parent
# (untagged = drop, the default): counted by the driver, never routed.
rr_stats || rr_fail "stats"
u0=$(rr_ctr driver-t.rx_drop_vlan_unknown) d0=$(rr_ctr driver-x.rx_drop_untagged)
ip -n "$NS_X" addr add "$(net 84).2/24" dev xv0 || rr_fail "untagged host on xv0"
out=$(rr_in "$NS_T" "$RR_PY" "$VH" ping "$IF_T" "99/$(net 89).2/$(net 89).1" "$(net 89).1" 1 2>&1) &&
    rr_fail "a host in VLAN 99, which no port is, was answered: $out"
rr_in "$NS_X" ping -n -c 3 -i 0.2 -W 1 "$(net 84).1" >/dev/null 2>&1 && rr_fail "an untagged ping on a parent that drops untagged frames was answered"
rr_stats || rr_fail "stats"
[ $(($(rr_ctr driver-t.rx_drop_vlan_unknown) - u0)) -ge 1 ] ||
    rr_fail "driver-t counted $(($(rr_ctr driver-t.rx_drop_vlan_unknown) - u0)) frames of VLAN 99"
[ $(($(rr_ctr driver-x.rx_drop_untagged) - d0)) -ge 1 ] ||
    rr_fail "driver-x counted $(($(rr_ctr driver-x.rx_drop_untagged) - d0)) untagged frames"
rr_zero router.drop_vlan router.drop_bad_port
rr_ok "an unknown VLAN ($(($(rr_ctr driver-t.rx_drop_vlan_unknown) - u0)) frames) and untagged frames ($(($(rr_ctr driver-x.rx_drop_untagged) - d0))) dropped and counted by the drivers"

# `link`: each VLAN port, its parent, its driver's and the router's figures.
rr_c link --json
[ "$rc" = 0 ] || rr_fail "link --json: $err"
"$RR_PY" -c '
import json, sys
links = {l["name"]: l for l in json.loads(sys.argv[1])["links"]}
want = {"t.10": ("t", "10", "802.1Q"), "t.20": ("t", "20", "802.1Q"), "x.30": ("x", "30", "802.1Q"),
        "x.40": ("x", "100.40", "802.1ad")}
for name, (parent, tags, proto) in want.items():
    l = links[name]
    v = l["vlan"]
    assert (v["parent"], v["tags"], v["protocol"]) == (parent, tags, proto), (name, v)
    assert l["rx"]["packets"] >= 3 and l["tx"]["packets"] >= 3, (name, l["rx"], l["tx"])
    assert l["router"]["rx_packets"] >= 3 and l["router"]["tx_packets"] >= 3, (name, l["router"])
    assert l["state"] == "up", (name, l["state"])
    shaper = ["shaper-t.20"] if name == "t.20" else []
    assert [s["name"] for s in l["services"]] == ["driver-" + parent] + shaper, (name, l["services"])
assert "vlan" not in links["t"] and "vlan" not in links["p"]
assert links["x"]["rx"]["drops"] >= 1, links["x"]["rx"]
' "$out" || rr_fail "link --json: $out"
rr_c link t.10
[ "$rc" = 0 ] && [ "${out%%:*}" = t.10 ] || rr_fail "link t.10: exit $rc: $out $err"
rr_c link
grep -q '^t.10: vlan 10 on t (rrt[0-9]*t)  netns rrt-[0-9]*-t  driver tap' <<<"$out" &&
    grep -q '^x.40: vlan 100.40 on x (xv1)  netns -  driver afxdp' <<<"$out" ||
    rr_fail "link: $out"
rr_ok "link shows the VLAN ports, their parents and counters"

# A VLAN port has no capture region of its own: said, with where to look.
rr_c capture t.10 rx -c 1 -w "$RR_T/cap.pcapng"
[ "$rc" != 0 ] && grep -q 'capture: port t.10 is a VLAN port: capture its parent t' <<<"$err$out" ||
    rr_fail "capture t.10: exit $rc: $out $err"
rr_ok "capture of a VLAN port: refused, naming its parent"

# A reload adding a shaped VLAN port, or retagging one, changes nothing
# (one without a shaper is added live: vlan_live.sh).
cp "$RR_T/m.ini" "$RR_T/m.up"
printf '\n[port t.30]\nparent = t\nvlan = 30\naddress = %s.1/24\n\n[shaper t.30]\nrate = 10mbit\n' "$(net 88)" >>"$RR_T/m.ini"
rr_c reload
[ "$rc" = 100 ] && [[ "$err" == *"VLAN port t.30 added with a [shaper]: only at up"* ]] ||
    rr_fail "reload adding VLAN port t.30: exit $rc: $err $out"
cp "$RR_T/m.up" "$RR_T/m.ini"
sed -i 's/^vlan = 20$/vlan = 21/' "$RR_T/m.ini"
rr_c reload
[ "$rc" = 100 ] && [[ "$err" == *"port t.20: parent or vlan changed (t 20 -> t 21)"* ]] ||
    rr_fail "reload retagging t.20: exit $rc: $err $out"
cp "$RR_T/m.up" "$RR_T/m.ini"
vping "$NS_T" "$IF_T" "$H10" "$(net 83).2" "T10 -> T20 after the refused reloads"
rr_ok "reload refuses a shaped VLAN port added, or one retagged, and changes nothing"

rr_no_restarts
rr_stop
rr_census_ok
printf 'PASS vlan: VLAN ports on TAP and AF_XDP, 802.1Q and 802.1ad, routed and tagged\n'
