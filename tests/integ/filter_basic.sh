#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/filter_basic.sh: rr-filter on port b of the two-namespace
# TAP topology (`ports = b`: port a has no rules and its own packets do not
# pass the filter), with a policy of the kind docs/filter.md shows: forward
# drops by default, accepts established and related, drops invalid (and
# counts it), accepts new connections from port a, TCP 8080 and UDP 9999
# towards A, and echo requests; input drops by default, accepts echo
# requests and what is established. Real TCP, UDP and ICMP through the
# router (tests/lib/filter_probe.py), each verdict checked:
#   - check: rulesets that cannot work (an unknown port, a bad prefix, a
#     port out of range) refused with the manifest's line and the rules'
#     line and column;
#   - A -> B TCP and UDP: answered (a's new connections, and their replies);
#   - B -> A TCP 7002 and UDP 9998: nothing comes back, and A's servers see
#     nothing (dropped, not refused);
#   - B -> A TCP 8080 and UDP 9999: answered;
#   - ping both ways, and ping of the router's address from B: answered;
#   - B -> the router's own TCP port 22: dropped by input; A -> the
#     router's TCP port 22 on a: the router's RST (a is not filtered);
#   - bare TCP RSTs from B: invalid, counted by the rule that drops them;
#   - the filter's counters (stats) and the rings: b's through the filter
#     both ways, a's straight to the router, and a's way through the
#     filter's egress (fo-a, ft-a) for what comes in by b;
#   - filter show (a rule's counter), conntrack show (a UDP flow) and count;
#   - filter reload: a bad ruleset refused with its line, nothing restarted;
#     a good one in force (TCP 7002 now accepted, UDP 9999 dropped) through
#     a planned restart that adopts the connections, and in force when the
#     command returns: its answer names the new pid, which status shows up
#     at once, and the probes follow without waiting;
#   - reload reads the rules again as well, and answers once the filter is
#     up on them, as filter reload; [filter] conntrack_max needs up;
#   - conntrack flush: the next instance starts empty, up when it returns,
#     traffic flows;
#   - no service restarted after a death; a clean shutdown census.
set -u
. "$(dirname "$0")/../lib/filter.sh"
flt_init filter_basic

flt_rules "$RR_T/rules.nft" <<'EOF'
# filter_basic's policy
chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    ct state invalid counter drop
    iif "a" ct state new accept
    ct state new tcp dport 8080 accept
    ct state new udp dport 9999 accept
    icmp type echo-request accept
}
chain input {
    type filter hook input priority 0; policy drop;
    ct state established,related accept
    icmp type echo-request accept
}
EOF
rr_topology "$(printf '[filter]\nrules = %s\nconntrack_max = 4096\nports = b' "$RR_T/rules.nft")"
# check: a ruleset that cannot work is refused with the manifest's line
# and the rules' line and column.
bad_check() { # bad_check RULE MESSAGE_ERE
    printf 'chain forward {\n    %s\n}\n' "$1" | flt_rules "$RR_T/bad.nft"
    sed "s|^rules = .*|rules = $RR_T/bad.nft|" "$RR_T/m.ini" >"$RR_T/bad.ini"
    local o rc
    o=$("$RR" check -c "$RR_T/bad.ini" 2>&1)
    rc=$?
    [ "$rc" = 100 ] && grep -qE "^$RR_T/bad.ini:[0-9]+: \[filter\] rules: $RR_T/bad.nft: line 2, column [0-9]+: $2\$" <<<"$o" ||
        rr_fail "check of '$1': exit $rc: $o"
    rr_ok "check refuses '$1': $o"
}
bad_check 'iif "dmz" accept' "unknown port 'dmz'"
bad_check 'ip saddr 10.0.0.0/33 drop' "expected an IPv4 address, prefix, .*, got '10.0.0.0/33'"
bad_check 'tcp dport 99999 accept' "expected a port \(0..65535\) or range \(lo-hi\), got '99999'"
o=$("$RR" check -c "$RR_T/m.ini" 2>&1) || rr_fail "check of the good manifest: $o"

rr_start
rr_ok "router up with rr-filter: A $RR_HOST_A -- [router + filter] -- B $RR_HOST_B"

flt_serve "$RR_NS_B" tcp "$RR_HOST_B" 7001
flt_serve "$RR_NS_B" udp "$RR_HOST_B" 7003
flt_serve "$RR_NS_A" tcp "$RR_HOST_A" 7002
flt_serve "$RR_NS_A" tcp "$RR_HOST_A" 8080
flt_serve "$RR_NS_A" udp "$RR_HOST_A" 9998
flt_serve "$RR_NS_A" udp "$RR_HOST_A" 9999

# flt_unanswered NS KIND DST PORT WHAT: a probe that the rules in force
# must drop. The kernel picks the probe's source port at random: one it
# already gave an accepted probe to this server is that connection, kept
# across a reload (as nftables keeps it) and so answered. The server's log
# names each new UDP peer once: an answer that adds no line came through
# such a connection, and the probe goes again from another port.
flt_unanswered() {
    local o rc n i
    for i in 1 2 3; do
        n=$(wc -l <"$RR_T/$2-$4.log")
        o=$(rr_in "$1" "$RR_PY" "$PROBE" "$2" "$3" "$4" 2 2>&1)
        rc=$?
        [ "$rc" = 0 ] && [ "$2" = udp ] && [ "$(wc -l <"$RR_T/$2-$4.log")" = "$n" ] || break
        rr_ok "$5: answered from a source port an earlier connection had: again ($i)"
    done
    [ "$rc" = 2 ] || rr_fail "$5: $2 to $3:$4 exited $rc, expected 2 ($o); A's $2 $4 saw: $(tr '\n' ' ' <"$RR_T/$2-$4.log")"
    rr_ok "$5: $2 to $3:$4: no answer"
}

out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"
out=$(rr_in "$RR_NS_B" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_A" 2>&1) || rr_fail "ping B -> A: $out"
out=$(rr_in "$RR_NS_B" ping -n -c 2 -i 0.2 -W 2 "$RR_GW_B" 2>&1) || rr_fail "ping B -> the router: $out"
rr_ok "ping A -> B, B -> A and B -> the router: answered (echo-request accept)"

flt_verdict "$RR_NS_A" tcp "$RR_HOST_B" 7001 0 "new from a"
flt_verdict "$RR_NS_A" udp "$RR_HOST_B" 7003 0 "new from a, its reply established"
flt_verdict "$RR_NS_B" tcp "$RR_HOST_A" 7002 2 "new from b to TCP 7002: default drop"
flt_verdict "$RR_NS_B" udp "$RR_HOST_A" 9998 2 "new from b to UDP 9998: default drop"
flt_verdict "$RR_NS_B" tcp "$RR_HOST_A" 8080 0 "new from b to TCP 8080: accepted"
flt_verdict "$RR_NS_B" udp "$RR_HOST_A" 9999 0 "new from b to UDP 9999: accepted"
flt_verdict "$RR_NS_B" tcp "$RR_GW_B" 22 2 "to the router's TCP 22 on b: input's default drop (no RST)"
flt_verdict "$RR_NS_A" tcp "$RR_GW_A" 22 3 "to the router's TCP 22 on a, not filtered: the router's RST"
for f in tcp-7002 udp-9998; do
    [ ! -s "$RR_T/$f.log" ] || rr_fail "A's server $f saw a peer through a drop: $(cat "$RR_T/$f.log")"
done
grep -q "^$RR_HOST_B " "$RR_T/tcp-8080.log" || rr_fail "A's TCP 8080 did not see B ($RR_HOST_B) itself"
rr_ok "A's servers behind drops saw nothing; TCP 8080 saw B's own address"

rr_stats || rr_fail "stats"
before=$(rr_ctr filter.rule.forward.1.pkts)
out=$(rr_in "$RR_NS_B" "$RR_PY" "$PROBE" rst "$RR_HOST_A" 7002 5 2>&1) || rr_fail "rst: $out"
counted() { rr_stats && [ "$(rr_ctr filter.rule.forward.1.pkts)" -ge $((before + 5)) ]; }
rr_wait 5 counted || rr_fail "5 bare RSTs: 'ct state invalid counter drop' counted $(rr_ctr filter.rule.forward.1.pkts) (was $before)"
rr_ok "5 bare RSTs from B: invalid, counted by its rule ($(rr_ctr filter.rule.forward.1.pkts) packets)"

rr_stats || rr_fail "stats"
[ "$(rr_ctr filter.dropped)" -ge 4 ] || rr_fail "filter.dropped = $(rr_ctr filter.dropped), expected at least 4"
[ "$(rr_ctr filter.drop_tcp_state)" -ge 5 ] || rr_fail "filter.drop_tcp_state = $(rr_ctr filter.drop_tcp_state), expected at least 5"
[ "$(rr_ctr filter.ct_count)" -ge 1 ] || rr_fail "filter.ct_count = $(rr_ctr filter.ct_count)"
for r in rx-a tx-a fo-a ft-a rx-b fi-b fo-b tx-b; do
    [ -n "${RRS[ring.$r.drop_bad_handle]+x}" ] || rr_fail "no ring $r in stats --json"
done
[ -z "${RRS[ring.fi-a.drop_bad_handle]+x}" ] || rr_fail "port a has a ring fi-a: its packets pass the filter"
edges=$("$RR" stats --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
print(" ".join("%s:%s>%s" % (r["name"], r["from"], r["to"]) for r in json.load(sys.stdin)["rings"]))') ||
    rr_fail "stats --json"
for e in 'rx-a:driver-a>router' 'tx-a:router>driver-a' 'fo-a:router>filter' 'ft-a:filter>driver-a' \
    'rx-b:driver-b>filter' 'fi-b:filter>router' 'fo-b:router>filter' 'tx-b:filter>driver-b'; do
    [[ " $edges " == *" $e "* ]] || rr_fail "no ring $e among: $edges"
done
rr_ok "rings: $edges"
rr_zero shm_corrupt pool.free_bad
rr_ok "counters: accepted $(rr_ctr filter.accepted), dropped $(rr_ctr filter.dropped), connections $(rr_ctr filter.ct_count)"

# filter show, conntrack show|count
rr_c filter show
[ "$rc" = 0 ] || rr_fail "filter show: exit $rc: $err"
grep -qE '^chain forward$' <<<"$out" && grep -qE '^ +[1-9][0-9]* +[0-9]+ +5  ct state invalid counter drop$' <<<"$out" ||
    rr_fail "filter show: no forward chain with its invalid rule (line 5) counted: $out"
rr_ok "filter show: $(grep -c '^  ' <<<"$out") lines of rules with counters"
rr_in "$RR_NS_A" "$RR_PY" "$PROBE" udp "$RR_HOST_B" 7003 2 >/dev/null || rr_fail "UDP A -> B before conntrack show"
rr_c conntrack show
[ "$rc" = 0 ] || rr_fail "conntrack show: exit $rc: $err"
grep -qE "^udp 17 expires=[0-9]+ src=$RR_HOST_A dst=$RR_HOST_B sport=[0-9]+ dport=7003 src=$RR_HOST_B dst=$RR_HOST_A sport=7003 dport=[0-9]+" <<<"$out" ||
    rr_fail "conntrack show: no line for A's UDP to B:7003: $out"
rr_c conntrack count
[ "$rc" = 0 ] && [ "$out" -ge 1 ] || rr_fail "conntrack count: exit $rc: $out $err"
rr_ok "conntrack show lists A's UDP flow; count $out"

# filter reload: a ruleset that does not compile changes nothing; one that
# does is in force without a restart's loss, its connections kept.
rr_status || rr_fail "status"
fpid=${RR_PIDS[filter]}
cp "$RR_T/rules.nft" "$RR_T/rules.good"
sed -i 's/iif "a" ct state new accept/iif "dmz" ct state new accept/' "$RR_T/rules.nft"
rr_c filter reload
[ "$rc" != 0 ] && grep -qE "rules.nft: line 6, column [0-9]+: unknown port 'dmz'" <<<"$err" ||
    rr_fail "filter reload of a bad ruleset: exit $rc: $out $err"
rr_status && [ "${RR_PIDS[filter]}" = "$fpid" ] || rr_fail "a refused reload restarted the filter"
rr_ok "filter reload refused a bad ruleset: $err"
sed 's/ct state new udp dport 9999 accept/ct state new tcp dport 7002 accept/' "$RR_T/rules.good" >"$RR_T/rules.nft"
rr_c filter reload
[ "$rc" = 0 ] || rr_fail "filter reload: exit $rc: $err"
# In force when it returns: no waiting here.
in_force() { # WHAT ANSWER_ERE: the answer names the new pid, which status shows up, and not the old one
    npid=$(sed -En "s/^$2, pid ([0-9]+)\$/\1/p" <<<"$out")
    [ -n "$npid" ] && [ "$npid" != "$fpid" ] || rr_fail "$1 answered before the filter was up on a new instance: $out"
    rr_status && [ "${RR_STATE[filter]}" = up ] && [ "${RR_PIDS[filter]}" = "$npid" ] ||
        rr_fail "$1 answered pid $npid, and then status says filter ${RR_STATE[filter]:-?}, pid ${RR_PIDS[filter]:-?}"
}
in_force "filter reload" "filter reload: the new rules are in force"
flt_verdict "$RR_NS_B" tcp "$RR_HOST_A" 7002 0 "after reload: new from b to TCP 7002 accepted"
flt_unanswered "$RR_NS_B" udp "$RR_HOST_A" 9999 "after reload: new from b to UDP 9999 dropped"
grep -qE '^filter\[[0-9]+\]: filter: adopted the connection table: [1-9][0-9]* connections$' "$RR_LOG" ||
    rr_fail "the reloaded filter did not adopt the table's connections"
rr_ok "filter reload: the new rules in force, the connections kept"

# `ringrouter reload` reads the rules again too: a ruleset that does not
# compile refuses the whole reload; a new one restarts the filter on it,
# its connections kept; [filter] conntrack_max needs `up`.
rr_status || rr_fail "status"
fpid=${RR_PIDS[filter]}
cp "$RR_T/rules.nft" "$RR_T/rules.now"
sed -i 's/iif "a" ct state new accept/iif "dmz" ct state new accept/' "$RR_T/rules.nft"
rr_c reload
[ "$rc" != 0 ] && grep -qE "unknown port 'dmz'" <<<"$out$err" && grep -q "nothing changed" <<<"$out$err" ||
    rr_fail "reload with a bad ruleset: exit $rc: $out $err"
rr_status && [ "${RR_PIDS[filter]}" = "$fpid" ] || rr_fail "a refused reload restarted the filter"
sed 's/ct state new tcp dport 7002 accept/ct state new udp dport 9999 accept/' "$RR_T/rules.now" >"$RR_T/rules.nft"
rr_c reload
[ "$rc" = 0 ] && grep -q "^\[filter\] rules: .* compiled ([0-9]* bytes); the filter restarts on it" <<<"$out" ||
    rr_fail "reload with new rules: exit $rc: $out $err"
in_force "reload with new rules" "filter: ready"
flt_verdict "$RR_NS_B" udp "$RR_HOST_A" 9999 0 "after reload: new from b to UDP 9999 accepted again"
flt_unanswered "$RR_NS_B" tcp "$RR_HOST_A" 7002 "after reload: new from b to TCP 7002 dropped again"
cp "$RR_T/m.ini" "$RR_T/m.keep"
sed -i 's/^conntrack_max = 4096$/conntrack_max = 8192/' "$RR_T/m.ini"
rr_c reload
[ "$rc" != 0 ] && grep -q "needs \`ringrouter up\` again: \[filter\] conntrack_max changed" <<<"$out$err" ||
    rr_fail "reload with another conntrack_max: exit $rc: $out $err"
cp "$RR_T/m.keep" "$RR_T/m.ini"
rr_ok "reload: a bad ruleset refused, new rules in force, conntrack_max refused (needs up)"

# conntrack flush: the next instance starts empty.
rr_status || rr_fail "status"
fpid=${RR_PIDS[filter]}
rr_c conntrack flush
[ "$rc" = 0 ] || rr_fail "conntrack flush: exit $rc: $err"
in_force "conntrack flush" "conntrack flush: the filter runs on the empty table"
grep -q "filter: connection table flushed" "$RR_LOG" || rr_fail "no log line of the flush"
flt_verdict "$RR_NS_A" udp "$RR_HOST_B" 7003 0 "after the flush: new from a"
rr_ok "conntrack flush: a new, empty table; traffic flows"
rr_no_restarts

rr_stop
rr_census_ok
t_pass "filter_basic: every verdict as the policy says; show, conntrack, reload, flush"
