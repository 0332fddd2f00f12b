/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_shp_classify.c: the shaper's classification
 * (services/shaper/shp.c): DSCP, protocol, port ranges, prefixes, first
 * match and the default class, IPv4 and IPv6, and a class chosen by the
 * mark a filter left (match = mark N); the pool census after every test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "t_shp.h"

/* Five classes at 10mbit, the last ("bulk") the default; the caller names the others and sets their matches. */
static struct shp_cfg_class *t_cfg_five(struct shp_cfg *cfg)
{
    shp_cfg_default(cfg, 100 * MBIT, 30000);
    cfg->nclasses = 5;
    cfg->default_class = 4;
    struct shp_cfg_class *c = cfg->classes;
    memset(c, 0, sizeof(cfg->classes));
    snprintf(c[4].name, SHP_NAME_MAX, "bulk");
    for (unsigned i = 0; i < 5; i++)
        c[i].rate = c[i].ceil = 10 * MBIT;
    return c;
}

/* Classification: DSCP, protocol, port ranges, prefixes, first match, default. */
static void test_classify(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    struct shp_cfg_class *c = t_cfg_five(&cfg);
    snprintf(c[0].name, SHP_NAME_MAX, "voice");
    c[0].match.fields = SHP_MATCH_DSCP;
    c[0].match.dscp = 46;
    snprintf(c[1].name, SHP_NAME_MAX, "web");
    c[1].match.fields = SHP_MATCH_PROTO | SHP_MATCH_DPORT;
    c[1].match.proto = 6;
    c[1].match.dport_lo = 80;
    c[1].match.dport_hi = 443;
    snprintf(c[2].name, SHP_NAME_MAX, "lan");
    c[2].match.fields = SHP_MATCH_SRC | SHP_MATCH_SPORT;
    c[2].match.src = T_IP(192, 168, 0, 0);
    c[2].match.src_len = 16;
    c[2].match.sport_lo = c[2].match.sport_hi = 53;
    snprintf(c[3].name, SHP_NAME_MAX, "net");
    c[3].match.fields = SHP_MATCH_DST;
    c[3].match.dst = T_IP(10, 9, 0, 0);
    c[3].match.dst_len = 24;
    t_init(t, &cfg);
    struct {
        struct t_pkt p;
        uint32_t want;
    } cases[] = {
        {{T_IP(1, 2, 3, 4), T_IP(5, 6, 7, 8), 17, 46 << 2, 1, 2, 100}, 0},
        {{T_IP(1, 2, 3, 4), T_IP(5, 6, 7, 8), 6, 46 << 2, 1, 80, 100}, 0}, /* first match wins */
        {{T_IP(1, 2, 3, 4), T_IP(5, 6, 7, 8), 6, 0, 1, 80, 100}, 1},
        {{T_IP(1, 2, 3, 4), T_IP(5, 6, 7, 8), 6, 0, 1, 443, 100}, 1},
        {{T_IP(1, 2, 3, 4), T_IP(5, 6, 7, 8), 6, 0, 1, 444, 100}, 4},
        {{T_IP(1, 2, 3, 4), T_IP(5, 6, 7, 8), 17, 0, 1, 80, 100}, 4},
        {{T_IP(192, 168, 7, 9), T_IP(5, 6, 7, 8), 17, 0, 53, 9, 100}, 2},
        {{T_IP(192, 169, 7, 9), T_IP(5, 6, 7, 8), 17, 0, 53, 9, 100}, 4},
        {{T_IP(192, 168, 7, 9), T_IP(5, 6, 7, 8), 17, 0, 54, 9, 100}, 4},
        {{T_IP(1, 1, 1, 1), T_IP(10, 9, 0, 200), 1, 0, 0, 0, 100}, 3},
        {{T_IP(1, 1, 1, 1), T_IP(10, 9, 1, 200), 1, 0, 0, 0, 100}, 4},
    };
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ipc_buf b = t_frame(t, &cases[i].p);
        struct shp_pkt pk;
        shp_parse(ipc_pool_data(&t->pool, b), ipc_pool_meta(&t->pool, b)->len, &pk);
        if (shp_classify(&t->s, &pk) != cases[i].want)
            fail_msg("case %u: class %u, want %u", i, shp_classify(&t->s, &pk), cases[i].want);
        shp_enqueue(&t->s, &b, 1, 0);
        assert_int_equal(t->s.cls[cases[i].want].pkts >= 1, 1);
    }
    /* A non-IP frame goes to the default class. */
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(&t->pool, &b, 1), 1);
    uint8_t *d = ipc_pool_data(&t->pool, b);
    memset(d, 0, 60);
    d[12] = 0x08;
    d[13] = 0x06;
    ipc_pool_meta(&t->pool, b)->len = ipc_pool_meta(&t->pool, b)->pkt_len = 60;
    uint32_t before = t->s.cls[4].pkts;
    shp_enqueue(&t->s, &b, 1, 0);
    assert_int_equal(t->s.cls[4].pkts, before + 1);
    assert_int_equal(shp_class_find(&t->s, "lan"), 2);
    assert_int_equal(shp_class_find(&t->s, "nope"), -1);

    /* IPv6: DSCP from the traffic class, protocol and ports from the header
     * after the fixed one; an IPv4 prefix never matches it. */
    struct {
        uint8_t tc, nxt;
        uint16_t sport, dport;
        uint32_t want;
    } c6[] = {
        {46 << 2, 17, 1, 2, 0},  /* voice by DSCP */
        {0, 6, 1, 443, 1},       /* web */
        {0, 17, 53, 9, 4},       /* "lan" wants an IPv4 source prefix: default */
        {0, 58, 0, 0, 4},        /* ICMPv6 */
        {0, 44, 1, 443, 4},      /* a fragment header first: no ports, default */
    };
    for (unsigned i = 0; i < sizeof(c6) / sizeof(c6[0]); i++) {
        uint8_t f[14 + 40 + 20];
        memset(f, 0, sizeof(f));
        f[12] = 0x86;
        f[13] = 0xdd;
        pkt_put32(f + 14, 6u << 28 | (uint32_t)c6[i].tc << 20 | 0x12345);
        f[14 + 6] = c6[i].nxt;
        f[14 + 8] = 0x20;
        f[14 + 24] = 0x20;
        f[14 + 39] = 9;
        pkt_put16(f + 54, c6[i].sport);
        pkt_put16(f + 56, c6[i].dport);
        struct shp_pkt pk;
        shp_parse(f, sizeof(f), &pk);
        assert_true(pk.ipv6);
        if (shp_classify(&t->s, &pk) != c6[i].want)
            fail_msg("IPv6 case %u: class %u, want %u", i, shp_classify(&t->s, &pk), c6[i].want);
    }
    /* ECN on IPv6: ECT(0) becomes CE, Not-ECT is left alone. */
    uint8_t h6[40] = {0};
    pkt_put32(h6, 6u << 28 | (46u << 2 | 2u) << 20);
    assert_true(shp_ecn_mark6(h6));
    assert_int_equal((pkt_get32(h6) >> 20) & 0xff, 46u << 2 | 3u);
    pkt_put32(h6, 6u << 28);
    assert_false(shp_ecn_mark6(h6));
    assert_int_equal(pkt_get32(h6), 6u << 28);
}

/* The filter's mark (ipc_meta.mark on enqueue): a class on mark 5 takes
 * marked packets of either family, another mark or none goes on down the
 * classes; the enqueue reads the mark before it makes it the flow index. */
static void test_classify_mark(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    struct shp_cfg_class *c = t_cfg_five(&cfg);
    snprintf(c[0].name, SHP_NAME_MAX, "marked");
    c[0].match.fields = SHP_MATCH_MARK;
    c[0].match.mark = 5;
    snprintf(c[1].name, SHP_NAME_MAX, "marked-udp");
    c[1].match.fields = SHP_MATCH_MARK | SHP_MATCH_PROTO;
    c[1].match.mark = 6;
    c[1].match.proto = 17;
    t_init(t, &cfg);
    struct {
        uint32_t mark;
        uint8_t proto;
        uint32_t want;
    } cases[] = {{5, 6, 0}, {5, 17, 0}, {6, 17, 1}, {6, 6, 4}, {0, 17, 4}, {7, 17, 4}};
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct t_pkt p = {T_IP(1, 2, 3, 4), T_IP(5, 6, 7, 8), cases[i].proto, 0, 1, 2, 100};
        ipc_buf b = t_frame(t, &p);
        ipc_pool_meta(&t->pool, b)->mark = cases[i].mark;
        uint32_t before = t->s.cls[cases[i].want].pkts;
        shp_enqueue(&t->s, &b, 1, 0);
        if (t->s.cls[cases[i].want].pkts != before + 1)
            fail_msg("case %u (mark %u, proto %u): not in class %u", i, cases[i].mark, cases[i].proto,
                     cases[i].want);
    }
    uint8_t f[14 + 40 + 20] = {0};
    f[12] = 0x86;
    f[13] = 0xdd;
    pkt_put32(f + 14, 6u << 28);
    f[14 + 6] = 17;
    struct shp_pkt pk;
    shp_parse(f, sizeof(f), &pk);
    assert_int_equal(pk.mark, 0);
    assert_int_equal(shp_classify(&t->s, &pk), 4);
    pk.mark = 5;
    assert_int_equal(shp_classify(&t->s, &pk), 0);
}

/* An Ethernet + IPv6 + UDP/TCP header, on the stack: classification reads no more. */
static void t_frame6(uint8_t f[74], const char *src, const char *dst, uint8_t nxt, uint8_t tc, uint16_t dport)
{
    memset(f, 0, 74);
    f[12] = 0x86;
    f[13] = 0xdd;
    pkt_put32(f + 14, 6u << 28 | (uint32_t)tc << 20);
    f[14 + 6] = nxt;
    assert_int_equal(inet_pton(AF_INET6, src, f + 14 + 8), 1);
    assert_int_equal(inet_pton(AF_INET6, dst, f + 14 + 24), 1);
    pkt_put16(f + 54, 1000);
    pkt_put16(f + 56, dport);
}

/* Classes with IPv6 prefixes: whole bytes and a partial one, source and
 * destination; they take IPv6 only, an IPv4 prefix IPv4 only, and a class
 * without prefixes both. */
static void test_classify6(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    struct shp_cfg_class *c = t_cfg_five(&cfg);
    snprintf(c[0].name, SHP_NAME_MAX, "site");
    c[0].match.fields = SHP_MATCH_SRC6 | SHP_MATCH_PROTO;
    c[0].match.proto = 17;
    assert_int_equal(inet_pton(AF_INET6, "2001:db8:1::", c[0].match.src6), 1);
    c[0].match.src_len = 48;
    snprintf(c[1].name, SHP_NAME_MAX, "odd");
    c[1].match.fields = SHP_MATCH_DST6;
    assert_int_equal(inet_pton(AF_INET6, "2001:db8:ff00::", c[1].match.dst6), 1);
    c[1].match.dst_len = 41; /* 2001:db8:ff00:: .. 2001:db8:ff7f:ffff:... */
    snprintf(c[2].name, SHP_NAME_MAX, "v4");
    c[2].match.fields = SHP_MATCH_SRC;
    c[2].match.src = T_IP(10, 0, 0, 0);
    c[2].match.src_len = 8;
    snprintf(c[3].name, SHP_NAME_MAX, "af");
    c[3].match.fields = SHP_MATCH_DSCP;
    c[3].match.dscp = 10;
    t_init(t, &cfg);
    struct {
        const char *src, *dst;
        uint8_t nxt, dscp;
        uint32_t want;
    } c6[] = {
        {"2001:db8:1:5::1", "2001:db8:9::1", 17, 0, 0},
        {"2001:db8:1:5::1", "2001:db8:9::1", 6, 0, 4},     /* site wants UDP */
        {"2001:db8:2::1", "2001:db8:9::1", 17, 0, 4},      /* outside the /48 */
        {"2001:db8:0:ffff::1", "2001:db8:9::1", 17, 0, 4}, /* just below it */
        {"2001:db8:2::1", "2001:db8:ff7f::1", 6, 0, 1},    /* inside the /41 */
        {"2001:db8:2::1", "2001:db8:ff00::", 6, 0, 1},
        {"2001:db8:2::1", "2001:db8:ff80::1", 6, 0, 4},    /* the bit after the /41 */
        {"::ffff:10.1.1.1", "2001:db8:9::1", 6, 0, 4},     /* an IPv4 prefix never takes IPv6 */
        {"2001:db8:2::1", "2001:db8:9::1", 6, 10, 3},      /* DSCP takes both families */
    };
    for (unsigned i = 0; i < sizeof(c6) / sizeof(c6[0]); i++) {
        uint8_t f[74];
        t_frame6(f, c6[i].src, c6[i].dst, c6[i].nxt, (uint8_t)(c6[i].dscp << 2), 80);
        struct shp_pkt pk;
        shp_parse(f, sizeof(f), &pk);
        assert_true(pk.ipv6);
        if (shp_classify(&t->s, &pk) != c6[i].want)
            fail_msg("IPv6 case %u (%s > %s): class %u, want %u", i, c6[i].src, c6[i].dst,
                     shp_classify(&t->s, &pk), c6[i].want);
    }
    /* IPv4: the IPv6 prefix classes never take it, even where their bytes would fit. */
    struct {
        struct t_pkt p;
        uint32_t want;
    } c4[] = {
        {{T_IP(32, 1, 13, 184), T_IP(5, 6, 7, 8), 17, 0, 1, 2, 100}, 4}, /* 2001:db8 as IPv4 */
        {{T_IP(10, 1, 1, 1), T_IP(5, 6, 7, 8), 17, 0, 1, 2, 100}, 2},
        {{T_IP(1, 1, 1, 1), T_IP(5, 6, 7, 8), 6, 10 << 2, 1, 2, 100}, 3},
    };
    for (unsigned i = 0; i < sizeof(c4) / sizeof(c4[0]); i++) {
        ipc_buf b = t_frame(t, &c4[i].p);
        struct shp_pkt pk;
        shp_parse(ipc_pool_data(&t->pool, b), ipc_pool_meta(&t->pool, b)->len, &pk);
        uint32_t got = shp_classify(&t->s, &pk);
        ipc_pool_free(&t->pool, &b, 1);
        if (got != c4[i].want)
            fail_msg("IPv4 case %u: class %u, want %u", i, got, c4[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_classify, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_classify6, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_classify_mark, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
