#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # RR_* settings are read by tests/lib/router.sh
# tests/integ/filter_flood.sh: a flood of new connections fills the
# filter's connection table only to its bound, and an established
# connection keeps flowing (docs/filter.md, "The bounded table"). The
# filter on b with conntrack_max = 256, masquerade there (so the stream
# lives only as long as its entry: without it B's segments would reach the
# router's own address), and a policy that accepts new TCP connections
# from b to A's port 8080; A's TCP stream to B runs while B
# sends 20,000 SYNs to A:8080 from as many source ports (A's kernel
# answers them, so each is a connection the table must hold or drop):
#   - the stream is never reset and B receives every byte;
#   - ct_count never exceeds 256, and the filter dropped connections early
#     or refused them (ct_early_drop or drop_table_full);
#   - the filter never restarted; a clean shutdown census.
set -u
. "$(dirname "$0")/../lib/filter.sh"
flt_init filter_flood
flt_rules "$RR_T/rules.nft" <<'R'
chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    ct state invalid drop
    iif "a" ct state new accept
    ct state new tcp dport 8080 accept
}
chain postrouting {
    oif "b" masquerade
}
R
rr_topology "$(printf '[filter]\nrules = %s\nconntrack_max = 256\nports = b' "$RR_T/rules.nft")"
rr_start
rr_ok "router up with rr-filter, conntrack_max 256: A $RR_HOST_A -- B $RR_HOST_B"

flt_serve "$RR_NS_A" tcp "$RR_HOST_A" 8080
ip netns exec "$RR_NS_B" "$RR_PY" "$PROBE" sink "$RR_HOST_B" 7100 >"$RR_T/sink.out" 2>&1 &
sink=$!
RR_EXTRA_PIDS+=($sink)
rr_wait 5 rr_listening "$RR_NS_B" 7100 || rr_fail "B's sink did not bind"
ip netns exec "$RR_NS_A" "$RR_PY" "$PROBE" stream "$RR_HOST_B" 7100 >"$RR_T/stream.out" 2>&1 &
stream=$!
RR_EXTRA_PIDS+=($stream)
rr_msleep 1000
rr_in "$RR_NS_B" "$RR_PY" "$PROBE" synflood "$RR_HOST_A" 8080 20000 || rr_fail "the SYN flood did not run"
rr_stats || rr_fail "stats"
count=$(rr_ctr filter.ct_count)
[ "$count" -le 256 ] || rr_fail "ct_count $count over conntrack_max 256"
early=$(rr_ctr filter.ct_early_drop) full=$(rr_ctr filter.drop_table_full)
[ $((early + full)) -gt 0 ] || rr_fail "20,000 new connections into 256 entries: no early drop, none refused"
rr_ok "after 20,000 SYNs: $count connections of 256, $early dropped early, $full refused (table full)"
rr_msleep 1000
rr_alive "$stream" || rr_fail "the stream ended during the flood: $(cat "$RR_T/stream.out")"
kill -TERM "$stream"
rr_wait 10 eval '! rr_alive $stream' || rr_fail "the stream did not end within 10 s"
wait "$stream" || rr_fail "the TCP stream through the flood failed: $(cat "$RR_T/stream.out")"
rr_wait 10 eval '! rr_alive $sink' || rr_fail "B's sink did not see the stream end"
sent=$(awk '{ print $2 }' "$RR_T/stream.out")
got=$(awk '/^bytes/ { print $2 }' "$RR_T/sink.out")
[ -n "$sent" ] && [ "$sent" -gt 0 ] && [ "$sent" = "$got" ] || rr_fail "the stream wrote '$sent' bytes, B received '$got'"
rr_ok "the established stream flowed through the flood: $sent bytes, all received"
rr_no_restarts
rr_stop
rr_census_ok
t_pass "filter_flood: $count of 256 entries after 20,000 SYNs ($early dropped early, $full refused), the stream unbroken"
