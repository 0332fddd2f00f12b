/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_filter_fast.c: rr-filter's burst entry points give what
 * one call a hook gives. The same random traffic (TCP with random flags
 * and sequence numbers both ways, UDP, ICMP echo, ICMP errors quoting the
 * flows, fragments, truncated frames, packets for the router, a blocklist,
 * port forwarding, masquerade, a rate limit) goes in bursts through two
 * tables with the same rules: one with flt_process at each hook, packet by
 * packet, as rr-filter did; the other as rr-filter does now, prerouting
 * (and input) over the burst with flt_process_many, then forward and
 * postrouting with flt_process_out. Every verdict, ct state, rewritten
 * frame and the tables' counts must be equal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tests/unit/test_filter_common.h"

#define BURST 40 /* more than one of flt_process_many's chunks */

static const char *rules =
    "set bl { type ipv4_addr; flags interval; elements = { 192.0.2.0/24 } }\n"
    "chain prerouting {\n  iif \"wan\" tcp dport 2222 dnat to 10.0.0.3:22\n}\n"
    "chain input {\n  policy drop\n  ct state established,related accept\n  ct state invalid drop\n"
    "  tcp dport 22 ct state new accept\n  icmp type echo-request limit rate 50/second burst 5 packets accept\n}\n"
    "chain forward {\n  policy drop\n  ct state established,related accept\n  ct state invalid drop\n"
    "  ip saddr @bl drop\n  ip daddr @bl drop\n  iif \"lan\" ct state new accept\n"
    "  ct state new tcp dport { 22, 80 } accept\n  icmp type echo-request accept\n}\n"
    "chain postrouting {\n  oif \"wan\" masquerade\n}\n";

static uint32_t rs = 2463534242u;
static uint32_t rnd(uint32_t n)
{
    rs ^= rs << 13;
    rs ^= rs >> 17;
    rs ^= rs << 5;
    return rs % n;
}

struct gen {
    uint8_t buf[2048];
    uint32_t len;
    uint16_t iif, oif;
    bool for_router;
};

static const char *inside[] = {"10.0.0.2", "10.0.0.3", "10.0.0.4"};
static const char *outside[] = {"198.51.100.7", "198.51.100.8", "192.0.2.9"};

/* One random frame; a few ports and hosts, so that flows recur. */
static void make(struct gen *g)
{
    static const uint8_t flags[] = {TH_SYN, TH_SYN | TH_ACK, TH_ACK, TH_ACK | TH_PSH, TH_FIN | TH_ACK, TH_RST};
    static const uint16_t ports[] = {22, 80, 2222, 9, 40000, 40001};
    struct tpkt tp = {.fam = 4, .wscale = -1, .win = 65535};
    unsigned kind = rnd(10), dir = rnd(3);
    tp.proto = kind < 5 ? 6 : kind < 8 ? 17 : 1;
    const char *in = inside[rnd(3)], *out = outside[rnd(3)];
    g->for_router = dir == 2;
    if (dir == 0) { /* lan -> wan */
        tp.src = in;
        tp.dst = out;
        g->iif = 0;
        g->oif = 1;
    } else { /* wan -> lan, or wan -> the router (its masquerade address, port forwarding) */
        tp.src = out;
        tp.dst = dir == 1 ? in : "203.0.113.1";
        g->iif = 1;
        g->oif = 0;
    }
    tp.sport = ports[rnd(6)];
    tp.dport = ports[rnd(6)];
    tp.flags = flags[rnd(6)];
    tp.seq = rnd(4) ? 1000 + rnd(3) * 100 : rnd(1u << 31);
    tp.ack = rnd(4) ? 1000 + rnd(3) * 100 : rnd(1u << 31);
    tp.paylen = rnd(3) * 50;
    if (tp.proto == 1) {
        tp.icmp_type = rnd(2) ? 8 : 0;
        tp.sport = tp.dport = (uint16_t)(7 + rnd(2));
    }
    g->len = t_build(g->buf, &tp);
    switch (rnd(20)) {
    case 0: { /* an ICMP error about this frame, back the way it came */
        uint8_t q[2048];
        uint32_t ql = g->len < 14 + 40 ? g->len : 14 + 40;
        memcpy(q, g->buf, ql);
        g->len = t_build_error(g->buf, 4, tp.dst, tp.src, 3, 3, q, ql);
        uint16_t t = g->iif;
        g->iif = g->oif;
        g->oif = t;
        g->for_router = false;
        break;
    }
    case 1: /* a fragment */
        g->buf[14 + 6] |= 0x20;
        break;
    case 2: /* truncated */
        g->len = 14 + rnd(30);
        break;
    default:
        break;
    }
}

static bool router_dst(const uint8_t *d)
{
    return !memcmp(d + 30, "\xcb\x00\x71\x01", 4) || !memcmp(d + 30, "\x0a\x00\x00\x01", 4);
}

static bool cb_router(void *ctx, const struct flt_pkt *p)
{
    (void)ctx;
    return p->len >= 34 && router_dst(p->data);
}

static void test_bursts_as_single(void **state)
{
    (void)state;
    struct tfix a, b;
    assert_int_equal(t_fix_init(&a, 256, rules), 0);
    assert_int_equal(t_fix_init(&b, 256, rules), 0);
    static struct gen g[BURST];
    static uint8_t ba[BURST][2048], bb[BURST][2048];
    struct flt_pkt pa[BURST], pb[BURST];
    unsigned accepted = 0, dropped = 0;
    for (unsigned round = 0; round < 400; round++) {
        uint64_t now = 1000 + round * 37;
        unsigned n = 1 + rnd(BURST);
        for (unsigned k = 0; k < n; k++) {
            make(&g[k]);
            memcpy(ba[k], g[k].buf, g[k].len);
            memcpy(bb[k], g[k].buf, g[k].len);
            pa[k] = (struct flt_pkt){.data = ba[k], .len = g[k].len, .cap = 2048, .iif = g[k].iif, .oif = 0xffff};
            pb[k] = pa[k];
            pb[k].data = bb[k];
        }
        /* one call a hook: the ingress's prerouting and input, then the egress's */
        enum flt_verdict va[BURST];
        bool local[BURST];
        for (unsigned k = 0; k < n; k++) {
            va[k] = flt_process(a.f, &pa[k], FLT_PRE, now);
            local[k] = va[k] == FLT_ACCEPT && cb_router(NULL, &pa[k]);
            if (local[k])
                va[k] = flt_process(a.f, &pa[k], FLT_INPUT, now);
        }
        enum flt_verdict va_in[BURST];
        struct flt_pkt pa_in[BURST];
        memcpy(va_in, va, n * sizeof *va);
        memcpy(pa_in, pa, n * sizeof *pa);
        for (unsigned k = 0; k < n; k++) {
            if (va[k] != FLT_ACCEPT || local[k])
                continue;
            pa[k].oif = g[k].oif;
            va[k] = flt_process(a.f, &pa[k], FLT_FWD, now);
            if (va[k] == FLT_ACCEPT)
                va[k] = flt_process(a.f, &pa[k], FLT_POST, now);
        }
        /* the burst entry points */
        unsigned acc = flt_process_many(b.f, pb, n, FLT_PRE, now, cb_router, NULL);
        unsigned acc_a = 0;
        for (unsigned k = 0; k < n; k++) { /* the ingress's verdicts, before the egress's */
            assert_int_equal(pb[k].verdict, va_in[k]);
            assert_int_equal(pb[k].ctstate, pa_in[k].ctstate);
            assert_int_equal(pb[k].ct, pa_in[k].ct);
            acc_a += va_in[k] == FLT_ACCEPT;
        }
        assert_int_equal(acc, acc_a);
        for (unsigned k = 0; k < n; k++) {
            enum flt_verdict vb = (enum flt_verdict)pb[k].verdict;
            if (vb == FLT_ACCEPT && !local[k]) {
                pb[k].oif = g[k].oif;
                vb = flt_process_out(b.f, &pb[k], now);
            }
            assert_int_equal(vb, va[k]);
            assert_int_equal(pb[k].ctstate, pa[k].ctstate);
            assert_int_equal(pb[k].reason, pa[k].reason);
            assert_int_equal(pb[k].len, pa[k].len);
            assert_memory_equal(bb[k], ba[k], pa[k].len);
            accepted += vb == FLT_ACCEPT;
            dropped += vb == FLT_DROP;
        }
        assert_int_equal(flt_ct_count(b.region), flt_ct_count(a.region));
        if (round % 50 == 49) {
            flt_ct_sweep(a.f, now + 40000, 256);
            flt_ct_sweep(b.f, now + 40000, 256);
        }
    }
    /* the traffic exercised both verdicts, and the stats agree */
    assert_true(accepted > 100 && dropped > 100);
    const struct flt_stats *sa = flt_get_stats(a.f), *sb = flt_get_stats(b.f);
    assert_memory_equal(sa, sb, sizeof *sa);
    t_fix_fini(&a);
    t_fix_fini(&b);
}

/* A ct word that names nothing (a stale one, or a hostile buffer's) is
 * only a hint to prefetch: no read past the table. */
static void test_prefetch_bounds(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 16, NULL), 0);
    flt_prefetch_ct(x.f, 0);
    flt_prefetch_ct(x.f, 17);
    flt_prefetch_ct(x.f, 0x0fffffffu);
    flt_prefetch_ct(x.f, 0xffffffffu);
    t_fix_fini(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bursts_as_single),
        cmocka_unit_test(test_prefetch_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
