/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_filter_rules.c: the rule language of services/filter/:
 * a whole ruleset parsed and run packet by packet (ct state, sets,
 * policies, counters, limit, TCP flags, negation, ports), bad input refused
 * with the exact line, column and expectation, sets of 100,000 addresses
 * against a reference, and 100,000 rules compiled into one verdict map.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "services/filter/flt_int.h"
#include "tests/unit/test_filter_common.h"

static uint8_t buf[2048];

/* the ruleset of issue 47's benchmark, as a Linux user would write it */
static const char *policy =
    "# edge policy\n"
    "set blocklist {\n"
    "    type ipv4_addr; flags interval\n"
    "    elements = { 192.0.2.0/24, 198.18.0.0/24,\n"
    "                 198.19.7.0/24 }\n"
    "}\n"
    "set services { type inet_service; elements = { 22, 80, 443, 5201 } }\n"
    "chain forward {\n"
    "    type filter hook forward priority 0; policy drop;\n"
    "    ct state established,related accept\n"
    "    ct state invalid counter drop\n"
    "    ip saddr @blocklist drop\n"
    "    ip daddr @blocklist drop\n"
    "    ct state new tcp dport @services accept\n"
    "    ct state new udp dport { 9, 53, 123, 5201 } accept\n"
    "    icmp type echo-request accept\n"
    "    icmpv6 type { echo-request, nd-neighbor-solicit } accept\n"
    "}\n";

static enum flt_verdict fwd(struct tfix *x, struct tpkt *tp, uint16_t iif, uint64_t now)
{
    uint32_t len = t_build(buf, tp);
    return t_forward(x, buf, &len, iif, !iif, now, NULL);
}

static void test_policy(void **state)
{
    (void)state;
    struct tfix x;
    int rc = t_fix_init(&x, 256, policy);
    if (rc)
        fprintf(stderr, "%s\n", x.err);
    assert_int_equal(rc, 0);
    assert_int_equal(flt_rules_count(x.rules, FLT_FWD), 8);
    assert_int_equal(flt_rules_count(x.rules, FLT_PRE), 0);
    struct tpkt syn = { .fam = 4, .proto = 6, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 40000,
                        .dport = 443, .flags = TH_SYN, .seq = 1, .win = 100, .wscale = -1 };
    assert_int_equal(fwd(&x, &syn, 0, 1000), FLT_ACCEPT);
    struct tpkt sa = { .fam = 4, .proto = 6, .src = "198.51.100.7", .dst = "10.0.0.2", .sport = 443,
                       .dport = 40000, .flags = TH_SYN | TH_ACK, .seq = 9, .ack = 2, .win = 100, .wscale = -1 };
    assert_int_equal(fwd(&x, &sa, 1, 1001), FLT_ACCEPT); /* established */
    /* not a service, blocklisted, out of window, unsolicited */
    syn.dport = 25;
    assert_int_equal(fwd(&x, &syn, 0, 1002), FLT_DROP);
    syn.dport = 22;
    syn.dst = "198.18.0.77";
    assert_int_equal(fwd(&x, &syn, 0, 1003), FLT_DROP);
    syn.dst = "198.18.1.77";
    assert_int_equal(fwd(&x, &syn, 0, 1004), FLT_ACCEPT);
    sa.seq = 900000000;
    sa.flags = TH_ACK;
    assert_int_equal(fwd(&x, &sa, 1, 1005), FLT_DROP);
    uint64_t pk, by;
    assert_int_equal(flt_rules_counter(x.rules, FLT_FWD, 1, &pk, &by), 0);
    assert_int_equal(pk, 1);
    assert_true(by > 0);
    struct tpkt u = { .fam = 4, .proto = 17, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 5, .dport = 53 };
    assert_int_equal(fwd(&x, &u, 0, 1006), FLT_ACCEPT);
    u.dport = 54;
    assert_int_equal(fwd(&x, &u, 0, 1007), FLT_DROP);
    /* the dropped first packet left no connection behind */
    struct flt_tuple t;
    t_tuple(&t, 4, 17, "10.0.0.2", "198.51.100.7", 5, 54);
    assert_int_equal(flt_ct_lookup(x.f, &t, 1007), 0);
    struct tpkt e = { .fam = 4, .proto = 1, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 1, .icmp_type = 8 };
    assert_int_equal(fwd(&x, &e, 0, 1008), FLT_ACCEPT);
    e.icmp_type = 13;
    assert_int_equal(fwd(&x, &e, 0, 1009), FLT_DROP);
    struct tpkt e6 = { .fam = 6, .proto = 58, .src = "fd00::2", .dst = "2001:db8:1::7", .sport = 1,
                       .icmp_type = 135 };
    assert_int_equal(fwd(&x, &e6, 0, 1010), FLT_ACCEPT);
    e6.icmp_type = 8; /* IPv4's echo-request number: not ICMPv6's */
    assert_int_equal(fwd(&x, &e6, 0, 1011), FLT_DROP);
    t_fix_fini(&x);
}

static void test_matches(void **state)
{
    (void)state;
    struct tfix x;
    const char *r = "chain input {\n"
                    "  policy drop\n"
                    "  iif lan tcp flags & (syn|ack) == syn tcp dport 1000-2000 accept\n"
                    "  iifname \"wan\" ip saddr != 10.0.0.0/8 udp sport 53 accept\n"
                    "  ip6 saddr fd00::/8 meta l4proto { tcp, udp } accept\n"
                    "  udp dport 7 limit rate 10/second burst 3 packets accept\n"
                    "}\n";
    int rc = t_fix_init(&x, 256, r);
    if (rc)
        fprintf(stderr, "%s\n", x.err);
    assert_int_equal(rc, 0);
    struct tpkt t = { .fam = 4, .proto = 6, .src = "10.0.0.2", .dst = "10.0.0.1", .sport = 5, .dport = 1500,
                      .flags = TH_SYN, .win = 9, .wscale = -1 };
    struct flt_pkt p = { .data = buf, .cap = sizeof buf, .iif = 0 };
#define IN(tp, i, now) (p.len = t_build(buf, tp), p.iif = (i), p.ct = 0, flt_process(x.f, &p, FLT_INPUT, now))
    assert_int_equal(IN(&t, 0, 1), FLT_ACCEPT);
    assert_int_equal(IN(&t, 1, 1), FLT_DROP); /* wrong port */
    t.dport = 2001;
    assert_int_equal(IN(&t, 0, 1), FLT_DROP);
    t.dport = 1000;
    t.flags = TH_ACK;
    assert_int_equal(IN(&t, 0, 1), FLT_DROP);
    struct tpkt u = { .fam = 4, .proto = 17, .src = "198.51.100.7", .dst = "203.0.113.1", .sport = 53, .dport = 9 };
    assert_int_equal(IN(&u, 1, 1), FLT_ACCEPT);
    u.src = "10.1.2.3";
    assert_int_equal(IN(&u, 1, 1), FLT_DROP);
    struct tpkt v6 = { .fam = 6, .proto = 17, .src = "fd12::5", .dst = "fd00::1", .sport = 1, .dport = 2 };
    assert_int_equal(IN(&v6, 0, 1), FLT_ACCEPT);
    v6.src = "2001:db8::5";
    assert_int_equal(IN(&v6, 0, 1), FLT_DROP);
    /* limit: the burst, then the rate */
    struct tpkt l = { .fam = 4, .proto = 17, .src = "10.0.0.9", .dst = "10.0.0.1", .sport = 1, .dport = 7 };
    for (int i = 0; i < 3; i++)
        assert_int_equal(IN(&l, 0, 0), FLT_ACCEPT); /* time 0 is a time like another */
    assert_int_equal(IN(&l, 0, 0), FLT_DROP);
    for (int i = 0; i < 3; i++)
        assert_int_equal(IN(&l, 0, 5000), FLT_ACCEPT); /* refilled to the burst, no more */
    assert_int_equal(IN(&l, 0, 5000), FLT_DROP);
    assert_int_equal(IN(&l, 0, 5050), FLT_DROP);
    assert_int_equal(IN(&l, 0, 5100), FLT_ACCEPT);
    assert_int_equal(IN(&l, 0, 5100), FLT_DROP);
#undef IN
    t_fix_fini(&x);
}

/* meta mark set: a statement the chain goes on after, the last one that
 * matched wins, a verdict after it still decides; a prerouting mark stays
 * with the packet to the later hooks (rr-filter carries it between them) */
static void test_mark(void **state)
{
    (void)state;
    struct tfix x;
    const char *r = "chain prerouting {\n"
                    "  iif wan udp dport 53 meta mark set 9\n"
                    "}\n"
                    "chain forward {\n"
                    "  policy drop\n"
                    "  tcp dport 5201 meta mark set 1\n"
                    "  tcp dport 5201 ip daddr 10.0.0.7 meta mark set 2 accept\n"
                    "  tcp dport { 5201, 22 } accept\n"
                    "  udp dport 53 accept\n"
                    "  udp dport 99 meta mark set 4 drop\n"
                    "}\n";
    int rc = t_fix_init(&x, 256, r);
    if (rc)
        fprintf(stderr, "%s\n", x.err);
    assert_int_equal(rc, 0);
    struct tpkt t = { .fam = 4, .proto = 6, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 5, .dport = 5201,
                      .flags = TH_SYN, .win = 9, .wscale = -1 };
    struct flt_pkt p = { .data = buf, .cap = sizeof buf };
#define RUN(tp, i, h) (p.len = t_build(buf, tp), p.iif = (i), p.oif = !(i), p.ct = 0, p.mark = 0, \
                       flt_process(x.f, &p, (h), 1))
    assert_int_equal(RUN(&t, 0, FLT_FWD), FLT_ACCEPT);
    assert_int_equal(p.mark, 1); /* the bare mark, then the set's accept */
    t.dst = "10.0.0.7";
    t.sport = 6;
    assert_int_equal(RUN(&t, 1, FLT_FWD), FLT_ACCEPT);
    assert_int_equal(p.mark, 2); /* the later mark overrides */
    t.dport = 22;
    t.sport = 7;
    assert_int_equal(RUN(&t, 0, FLT_FWD), FLT_ACCEPT);
    assert_int_equal(p.mark, 0);
    struct tpkt u = { .fam = 4, .proto = 17, .src = "198.51.100.7", .dst = "10.0.0.2", .sport = 5, .dport = 99 };
    assert_int_equal(RUN(&u, 1, FLT_FWD), FLT_DROP);
    assert_int_equal(p.mark, 4);
    u.dport = 53;
    assert_int_equal(RUN(&u, 1, FLT_PRE), FLT_ACCEPT);
    assert_int_equal(p.mark, 9);
    assert_int_equal(flt_process(x.f, &p, FLT_FWD, 1), FLT_ACCEPT);
    assert_int_equal(p.mark, 9); /* kept through a hook that sets none */
    assert_int_equal(RUN(&u, 0, FLT_PRE), FLT_ACCEPT);
    assert_int_equal(p.mark, 0); /* not from wan */
#undef RUN
    uint64_t pk, by;
    assert_int_equal(flt_rules_counter(x.rules, FLT_FWD, 0, &pk, &by), 0);
    assert_int_equal(pk, 2); /* a bare mark counts what it marked */
    t_fix_fini(&x);
}

static void test_parse_errors(void **state)
{
    (void)state;
    struct flt_port ports[2];
    t_ports(ports);
    ports[1].has_v4 = ports[1].has_v6 = 0;
    static const struct { const char *in, *err; } cases[] = {
        { "chain forward {\n  tcp dport 99999 accept\n}\n",
          "line 2, column 13: expected a port (0..65535) or range (lo-hi), got '99999'" },
        { "chain forward {\n  ip saddr 10.0.0.300 drop\n}\n",
          "line 2, column 12: expected an IPv4 address, prefix, @set or { list }, got '10.0.0.300'" },
        { "chain forward {\n  iif \"dmz\" accept\n}\n", "line 2, column 7: unknown port 'dmz'" },
        { "chain forward {\n  ct state new,old accept\n}\n",
          "line 2, column 16: expected a ct state (new, established, related, invalid, untracked), got 'old'" },
        { "chain forward {\n  accept drop\n}\n",
          "line 2, column 10: expected the end of the rule after its verdict, got 'drop'" },
        { "chain forward {\n  ip saddr @nope drop\n}\n", "line 2, column 13: unknown set 'nope'" },
        { "chain postrouting {\n  oif wan masquerade\n}\n",
          "line 2, column 11: masquerade on port 'wan', which has no address" },
        { "chain forward {\n  dnat to 10.0.0.1\n}\n", "line 2, column 3: dnat belongs in a prerouting chain" },
        { "chain forward {\n  accept\n", "line 3, column 1: expected '}' closing the chain, got end of input" },
        { "chain sideways {\n}\n",
          "line 1, column 7: expected a chain named prerouting, input, forward or postrouting, or a 'type "
          "filter hook HOOK' line" },
        { "chain forward {\n}\nchain forward {\n}\n", "line 3, column 7: hook forward already has a chain" },
        { "set s { type ipv4_addr; elements = { 10.0.0.1, fd00::1 } }\n",
          "line 1, column 48: expected an IPv4 address or prefix, got 'fd00::1'" },
        { "set s { type ipv6_addr; elements = { fd00::1 } }\nchain input {\n ip saddr @s drop\n}\n",
          "line 3, column 12: set 's' does not hold IPv4 addresses" },
        { "chain input {\n  tcp flags & (syn|ack) == fin drop\n}\n",
          "line 2, column 28: the flags compared are not all in the mask" },
        { "chain input {\n  limit rate 0/second accept\n}\n",
          "line 2, column 14: expected a rate (packets per unit, > 0), got '0'" },
        { "chain input {\n  udp dport 10-5 accept\n}\n",
          "line 2, column 13: expected a port (0..65535) or range (lo-hi), got '10-5'" },
        { "chain prerouting {\n  ip saddr 10.0.0.0/8 dnat to fd00::5\n}\n",
          "line 2, column 31: an IPv6 address in a rule for IPv4" },
        { "table inet filter {\n}\n", "line 1, column 1: expected 'set' or 'chain', got 'table'" },
        { "chain input {\n  tcp dport 22 $ accept\n}\n", "line 2, column 16: unexpected character '$'" },
        { "chain forward {\n  meta mark set x accept\n}\n",
          "line 2, column 17: expected a mark (0..4294967295), got 'x'" },
        { "chain forward {\n  meta mark set 1 meta mark set 2\n}\n",
          "line 2, column 33: the rule sets its mark twice" },
        { "chain input {\n  frobnicate\n}\n",
          "line 2, column 3: expected a match (iif, oif, ip, ip6, meta, tcp, udp, icmp, icmpv6, ct, limit), counter "
          "or a verdict (accept, drop, reject, dnat, snat, masquerade), got 'frobnicate'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        struct flt_rules *r = flt_rules_compile(cases[i].in, strlen(cases[i].in), ports, 2, err, sizeof err);
        if (r || strcmp(err, cases[i].err))
            fprintf(stderr, "case %zu: got \"%s\"\n", i, err);
        assert_null(r);
        assert_string_equal(err, cases[i].err);
    }
    /* and the empty ruleset is fine: every hook accepts */
    char err[64];
    struct flt_rules *r = flt_rules_compile("", 0, ports, 2, err, sizeof err);
    assert_non_null(r);
    flt_rules_free(r);
}

/* xorshift: the same addresses every run */
static uint32_t rnd_state = 2463534242u;
static uint32_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 17;
    rnd_state ^= rnd_state << 5;
    return rnd_state;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void test_big_sets(void **state)
{
    (void)state;
    enum { N = 100000 };
    uint32_t *addrs = malloc(N * sizeof *addrs);
    size_t cap = (size_t)N * 40 + 256;
    char *text = malloc(cap);
    size_t o = (size_t)snprintf(text, cap, "set big { type ipv4_addr; elements = {\n");
    for (int i = 0; i < N; i++) {
        addrs[i] = rnd();
        o += (size_t)snprintf(text + o, cap - o, "%u.%u.%u.%u,\n", addrs[i] >> 24, addrs[i] >> 16 & 255,
                              addrs[i] >> 8 & 255, addrs[i] & 255);
    }
    o += (size_t)snprintf(text + o, cap - o, "10.0.0.0/8 } }\nchain input {\n ip saddr @big drop\n}\n");
    struct flt_port ports[2];
    t_ports(ports);
    char err[256];
    struct flt_rules *r = flt_rules_compile(text, o, ports, 2, err, sizeof err);
    assert_non_null(r);
    qsort(addrs, N, sizeof *addrs, cmp_u32);
    int nu = 1;
    for (int i = 1; i < N; i++)
        if (addrs[i] != addrs[nu - 1])
            addrs[nu++] = addrs[i];
    const struct flt_set *s = &r->sets[0];
    uint8_t a[16] = { [10] = 0xff, [11] = 0xff };
    for (int i = 0; i < nu; i++) {
        uint32_t v = addrs[i];
        a[12] = (uint8_t)(v >> 24), a[13] = (uint8_t)(v >> 16), a[14] = (uint8_t)(v >> 8), a[15] = (uint8_t)v;
        assert_true(flt_set_has_addr(s, a));
    }
    /* non-members, checked against the sorted reference */
    for (int i = 0; i < N; i++) {
        uint32_t v = rnd();
        bool want = (v >> 24) == 10 || bsearch(&v, addrs, (size_t)nu, sizeof *addrs, cmp_u32) != NULL;
        a[12] = (uint8_t)(v >> 24), a[13] = (uint8_t)(v >> 16), a[14] = (uint8_t)(v >> 8), a[15] = (uint8_t)v;
        assert_int_equal(flt_set_has_addr(s, a), want);
    }
    /* the IPv6 side of the same form: not a member of an IPv4 set */
    uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8 };
    assert_false(flt_set_has_addr(s, v6));
    flt_rules_free(r);

    /* 100,000 rules of one shape: one verdict map, first match kept */
    o = (size_t)snprintf(text, cap, "chain forward {\n");
    for (int i = 0; i < nu; i++) {
        uint32_t v = addrs[i];
        o += (size_t)snprintf(text + o, cap - o, "ip saddr %u.%u.%u.%u %s\n", v >> 24, v >> 16 & 255, v >> 8 & 255,
                              v & 255, i % 2 ? "accept" : "drop");
    }
    o += (size_t)snprintf(text + o, cap - o, "ip saddr 1.2.3.4 accept\nip saddr %u.%u.%u.%u accept\n}\n",
                          addrs[0] >> 24, addrs[0] >> 16 & 255, addrs[0] >> 8 & 255, addrs[0] & 255);
    r = flt_rules_compile(text, o, ports, 2, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->c[FLT_FWD].nmaps, 1);
    assert_int_equal(r->c[FLT_FWD].maps[0].n, (uint32_t)nu + 1);
    struct flt_parsed pp = { .family = 4, .proto = 17 };
    memcpy(pp.t.src, a, 16);
    struct eval_in in = { .pp = &pp };
    for (int i = 0; i < nu; i += 97) {
        uint32_t v = addrs[i];
        pp.t.src[12] = (uint8_t)(v >> 24), pp.t.src[13] = (uint8_t)(v >> 16);
        pp.t.src[14] = (uint8_t)(v >> 8), pp.t.src[15] = (uint8_t)v;
        int k = flt_eval(r, FLT_FWD, &in);
        assert_true(k >= 0);
        assert_int_equal(r->c[FLT_FWD].r[k].m[1].addr[15], (uint8_t)v); /* the rule for this address */
        assert_int_equal(k, i);
    }
    /* the duplicate at the end is walked, after the map: rule 0 wins */
    pp.t.src[12] = (uint8_t)(addrs[0] >> 24), pp.t.src[13] = (uint8_t)(addrs[0] >> 16);
    pp.t.src[14] = (uint8_t)(addrs[0] >> 8), pp.t.src[15] = (uint8_t)addrs[0];
    assert_int_equal(flt_eval(r, FLT_FWD, &in), 0);
    flt_rules_free(r);
    free(text);
    free(addrs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_matches),
        cmocka_unit_test(test_mark),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_big_sets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
