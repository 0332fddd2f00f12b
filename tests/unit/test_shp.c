/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_shp.c: the shaper library (services/shaper/shp.c) on a
 * virtual clock: rate accuracy, burst, class borrowing up to the ceil, DRR
 * fairness, CoDel under a standing queue and a short burst, ECN marking with
 * the checksum fixed, overflow from the fattest flow, and the pool census
 * after every test (no buffer leaks); classification: test_shp_classify.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/pkt.h"
#include "ipc/pool.h"
#include "services/shaper/shp.h"
#include "t_shp.h"

/* Rate: 100 Mbit/s over 1 s on a 1 ms timer, within 0.5 %; also with MTU-sized and small frames. */
static void test_rate(void **state)
{
    struct t_shp *t = *state;
    static const uint16_t sizes[] = {1514, 64, 600};
    for (unsigned k = 0; k < 3; k++) {
        struct shp_cfg cfg;
        shp_cfg_default(&cfg, 100 * MBIT, 125000); /* 10 ms */
        t_init(t, &cfg);
        struct t_pkt f = t_flow(0, sizes[k]);
        /* Start with an empty bucket: measure from the second 10 ms on, over 1 s. */
        struct t_run r = {.nf = 1, .flows = &f, .depth = 512, .step = 1 * MS, .t0 = 0, .t1 = 1020 * MS, .from = 20 * MS};
        t_run(t, &r);
        double rate = t_rate(r.total, 1000 * MS);
        double err = (rate - 100e6) / 100e6;
        print_message("frame %u: %.3f Mbit/s on the wire (%+.3f %%)\n", sizes[k], rate / 1e6, err * 100);
        assert_true(err < 0.005 && err > -0.005);
        shp_purge(&t->s);
    }
}

/* Burst: an idle port sends its burst at once (no more, less by under one frame), then the rate. */
static void test_burst(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    shp_cfg_default(&cfg, 10 * MBIT, 30000);
    cfg.overhead = 0;
    t_init(t, &cfg);
    struct t_pkt f = t_flow(0, 1000);
    for (unsigned i = 0; i < 100; i++) {
        ipc_buf b = t_frame(t, &f);
        shp_enqueue(&t->s, &b, 1, 0);
    }
    ipc_buf out[128];
    uint32_t n = shp_dequeue(&t->s, 0, out, 128);
    /* Tokens may go negative by one frame: 30 frames of 1000 bytes, +1 for the last partial. */
    assert_true(n >= 30 && n <= 31);
    ipc_pool_free(&t->pool, out, n);
    assert_int_equal(shp_dequeue(&t->s, 0, out, 128), 0);
    uint64_t next = shp_next_ns(&t->s, 0);
    assert_true(next > 0 && next <= 1 * MS); /* 1000 bytes at 10 Mbit/s = 800 us */
    n = shp_dequeue(&t->s, next, out, 128);
    assert_int_equal(n, 1);
    ipc_pool_free(&t->pool, out, n);
    /* Refilled for 3 ms: 3750 bytes = 3 or 4 frames. */
    n = shp_dequeue(&t->s, next + 3 * MS, out, 128);
    assert_true(n >= 3 && n <= 4);
    ipc_pool_free(&t->pool, out, n);
}

/* Two classes under 100 Mbit/s: A (udp dport 1000) rate 20 ceil 50 prio 0, B default rate 30 ceil 100. */
static void t_cfg_two(struct shp_cfg *cfg)
{
    shp_cfg_default(cfg, 100 * MBIT, 125000);
    cfg->nclasses = 2;
    cfg->default_class = 1;
    struct shp_cfg_class *a = &cfg->classes[0], *b = &cfg->classes[1];
    memset(a, 0, sizeof(*a));
    memset(b, 0, sizeof(*b));
    snprintf(a->name, SHP_NAME_MAX, "a");
    a->rate = 20 * MBIT;
    a->ceil = 50 * MBIT;
    a->prio = 0;
    a->match.fields = SHP_MATCH_PROTO | SHP_MATCH_DPORT;
    a->match.proto = 17;
    a->match.dport_lo = a->match.dport_hi = 1000;
    snprintf(b->name, SHP_NAME_MAX, "b");
    b->rate = 30 * MBIT;
    b->ceil = 100 * MBIT;
    b->prio = 4;
}

static void test_borrow(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    t_cfg_two(&cfg);
    struct t_pkt f[2] = {t_flow(0, 1514), t_flow(1, 1514)};
    f[0].dport = 1000;

    /* A alone: it borrows up to its ceil, 50, and no further. */
    t_init(t, &cfg);
    struct t_run r = {.nf = 1, .flows = f, .depth = 64, .step = 1 * MS, .t0 = 0, .t1 = 1100 * MS, .from = 100 * MS};
    t_run(t, &r);
    double ra = t_rate(r.sent[0], 1000 * MS);
    print_message("A alone: %.2f Mbit/s (ceil 50)\n", ra / 1e6);
    assert_true(ra <= 50e6 * 1.005 && ra >= 50e6 * 0.995);
    shp_purge(&t->s);

    /* B alone: its ceil is the port's. */
    t_init(t, &cfg);
    struct t_run rb = {.nf = 1, .flows = f + 1, .depth = 64, .step = 1 * MS, .t0 = 0, .t1 = 1100 * MS, .from = 100 * MS};
    t_run(t, &rb);
    double rbb = t_rate(rb.sent[0], 1000 * MS);
    print_message("B alone: %.2f Mbit/s (ceil 100)\n", rbb / 1e6);
    assert_true(rbb >= 100e6 * 0.995 && rbb <= 100e6 * 1.005);
    shp_purge(&t->s);

    /* Both: each has its rate; A borrows first (prio 0) up to its ceil; the port is full. */
    t_init(t, &cfg);
    struct t_run r2 = {.nf = 2, .flows = f, .depth = 64, .step = 1 * MS, .t0 = 0, .t1 = 1100 * MS, .from = 100 * MS};
    t_run(t, &r2);
    ra = t_rate(r2.sent[0], 1000 * MS);
    double rbr = t_rate(r2.sent[1], 1000 * MS);
    print_message("both: A %.2f B %.2f Mbit/s\n", ra / 1e6, rbr / 1e6);
    assert_true(ra >= 20e6 && ra <= 50e6 * 1.005);
    assert_true(rbr >= 30e6);
    assert_true(ra + rbr >= 100e6 * 0.995 && ra + rbr <= 100e6 * 1.005);
    assert_true(ra >= 50e6 * 0.99); /* prio 0 borrows first */
    shp_purge(&t->s);

    /* A at prio 7 now: B borrows first, A keeps its guaranteed 20. */
    cfg.classes[0].prio = 7;
    t_init(t, &cfg);
    struct t_run r3 = {.nf = 2, .flows = f, .depth = 64, .step = 1 * MS, .t0 = 0, .t1 = 1100 * MS, .from = 100 * MS};
    t_run(t, &r3);
    ra = t_rate(r3.sent[0], 1000 * MS);
    rbr = t_rate(r3.sent[1], 1000 * MS);
    print_message("A prio 7: A %.2f B %.2f Mbit/s\n", ra / 1e6, rbr / 1e6);
    assert_true(ra >= 20e6 * 0.99 && ra <= 20e6 * 1.02);
    assert_true(rbr >= 80e6 * 0.98);
}

/* DRR: 8 equal flows share fairly (Jain's index >= 0.99); also with frames of different sizes. */
static void test_drr(void **state)
{
    struct t_shp *t = *state;
    for (unsigned k = 0; k < 2; k++) {
        struct shp_cfg cfg;
        shp_cfg_default(&cfg, 100 * MBIT, 125000);
        t_init(t, &cfg);
        struct t_pkt f[8];
        bool used[SHP_FLOWS] = {false};
        for (unsigned i = 0, port = 0; i < 8; i++) {
            for (;; port++) { /* a flow queue of its own each: hash collisions are another test's matter */
                f[i] = t_flow(port, k == 0 ? 1514 : (uint16_t)(200 + i * 180));
                uint32_t q = t_queue_of(&f[i]);
                if (!used[q]) {
                    used[q] = true;
                    break;
                }
            }
        }
        struct t_run r = {.nf = 8, .flows = f, .depth = 16, .step = 1 * MS, .t0 = 0, .t1 = 1000 * MS, .from = 0};
        t_run(t, &r);
        double sum = 0, sq = 0;
        for (unsigned i = 0; i < 8; i++) {
            sum += (double)r.sent[i];
            sq += (double)r.sent[i] * (double)r.sent[i];
        }
        double jain = sum * sum / (8 * sq);
        print_message("DRR, %s sizes: Jain %.5f\n", k == 0 ? "equal" : "mixed", jain);
        assert_true(jain >= 0.99);
        shp_purge(&t->s);
    }
}

/* A sparse flow (a ping) among 8 backlogged bulk flows leaves next, not after a DRR round. */
static void test_sparse_first(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    shp_cfg_default(&cfg, 10 * MBIT, 3000);
    t_init(t, &cfg);
    struct t_pkt bulk[8], ping = t_flow(999, 98);
    ping.proto = 1;
    for (unsigned i = 0; i < 8; i++)
        bulk[i] = t_flow(i * 11, 1514);
    uint64_t now = 0;
    ipc_buf out[64];
    for (unsigned r = 0; r < 20; r++)
        for (unsigned i = 0; i < 8; i++) {
            ipc_buf b = t_frame(t, &bulk[i]);
            shp_enqueue(&t->s, &b, 1, now);
        }
    /* Let the bulk flows run a while: every one of them is on the old list. */
    for (; now < 50 * MS; now += 1 * MS) {
        uint32_t n = shp_dequeue(&t->s, now, out, 64);
        ipc_pool_free(&t->pool, out, n);
    }
    ipc_buf pb = t_frame(t, &ping);
    shp_enqueue(&t->s, &pb, 1, now);
    unsigned before = 0;
    bool seen = false;
    for (; now < 100 * MS && !seen; now += 1 * MS) {
        uint32_t n = shp_dequeue(&t->s, now, out, 64);
        for (uint32_t k = 0; k < n && !seen; k++) {
            if (out[k] == pb)
                seen = true;
            else
                before++;
        }
        ipc_pool_free(&t->pool, out, n);
    }
    assert_true(seen);
    print_message("sparse flow: %u bulk packets left before it\n", before);
    assert_true(before <= 1);
}

/* CoDel: a standing queue (offered 12.2 Mbit/s into 11.5) is dropped, or marked when ECN-capable. */
static void test_codel_standing(void **state)
{
    struct t_shp *t = *state;
    for (unsigned ecn = 0; ecn < 2; ecn++) {
        struct shp_cfg cfg;
        shp_cfg_default(&cfg, 11500000, 12500);
        t_init(t, &cfg);
        struct t_pkt f = t_flow(0, 1500);
        f.tos = ecn ? 0x02 : 0; /* ECT(0) */
        uint64_t max_sojourn_late = 0;
        /* 1000 frames per second of 1524 wire bytes = 12.2 Mbit/s, for 3 s: without
         * an AQM the queue would reach 180 ms by the end. */
        for (uint64_t now = 0; now < 3 * SEC; now += 1 * MS) {
            ipc_buf b = t_frame(t, &f);
            shp_enqueue(&t->s, &b, 1, now);
            ipc_buf out[64];
            uint32_t n = shp_dequeue(&t->s, now, out, 64);
            for (uint32_t k = 0; k < n; k++) {
                struct ipc_meta *m = ipc_pool_meta(&t->pool, out[k]);
                uint64_t soj = now - m->user[0];
                if (now > 2 * SEC && soj > max_sojourn_late)
                    max_sojourn_late = soj;
                if (ecn) {
                    uint8_t *ip = ipc_pool_data(&t->pool, out[k]) + 14;
                    assert_int_equal(t_csum(ip, 20), 0);
                }
            }
            ipc_pool_free(&t->pool, out, n);
        }
        uint64_t drops = t->s.p[SHP_P_CODEL_DROPS], marks = t->s.p[SHP_P_MARKS];
        print_message("standing queue, ecn %u: codel drops %llu marks %llu, late max sojourn %.1f ms\n", ecn,
                      (unsigned long long)drops, (unsigned long long)marks, (double)max_sojourn_late / 1e6);
        if (ecn) {
            assert_true(marks > 0);
            assert_int_equal(drops, 0);
        } else {
            assert_true(drops > 0);
            assert_int_equal(marks, 0);
        }
        assert_int_equal(t->s.p[SHP_P_OVERFLOW_DROPS], 0);
        assert_true(t->s.cls[0].c[SHP_C_DROPS] == drops);
        assert_true(t->s.cls[0].c[SHP_C_MARKS] == marks);
        /* Dropping, CoDel holds the queue well under what tail drop reaches (marks
         * alone do not shrink it: this sender ignores them). */
        if (!ecn)
            assert_true(max_sojourn_late < 90 * MS);
        shp_purge(&t->s);
    }
}

/* CoDel: a burst that drains within an interval is neither dropped nor marked. */
static void test_codel_burst(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    shp_cfg_default(&cfg, 100 * MBIT, 15000);
    t_init(t, &cfg);
    struct t_pkt f = t_flow(0, 1500);
    for (unsigned i = 0; i < 400; i++) { /* 48 ms of queue at 100 Mbit/s */
        ipc_buf b = t_frame(t, &f);
        shp_enqueue(&t->s, &b, 1, 0);
    }
    uint64_t sent = 0;
    for (uint64_t now = 0; now < 200 * MS; now += 1 * MS) {
        ipc_buf out[64];
        uint32_t n = shp_dequeue(&t->s, now, out, 64);
        sent += n;
        ipc_pool_free(&t->pool, out, n);
    }
    assert_int_equal(sent, 400);
    assert_int_equal(t->s.p[SHP_P_CODEL_DROPS], 0);
    assert_int_equal(t->s.p[SHP_P_MARKS], 0);
}

/* Overflow: over the packet limit, the fattest flow loses its head. */
static void test_overflow(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    shp_cfg_default(&cfg, 1 * MBIT, 3000);
    cfg.limit_pkts = 100;
    t_init(t, &cfg);
    struct t_pkt fat = t_flow(0, 1000), thin = t_flow(5, 1000);
    while (t_queue_of(&thin) == t_queue_of(&fat)) /* two flow queues, not one */
        thin.sport++;
    ipc_buf first_fat = IPC_BUF_NONE;
    for (unsigned i = 0; i < 30; i++) {
        ipc_buf b = t_frame(t, &thin);
        shp_enqueue(&t->s, &b, 1, 0);
    }
    for (unsigned i = 0; i < 80; i++) {
        ipc_buf b = t_frame(t, &fat);
        if (i == 0)
            first_fat = b;
        shp_enqueue(&t->s, &b, 1, 0);
    }
    assert_int_equal(t->s.pkts, 100);
    assert_int_equal(t->s.p[SHP_P_OVERFLOW_DROPS], 10);
    assert_int_equal(t->s.cls[0].c[SHP_C_DROPS], 10);
    /* The thin flow kept all 30; the fat one lost its 10 oldest. */
    unsigned nthin = 0, nfat = 0;
    bool first_there = false;
    for (uint32_t fi = 0; fi < SHP_NFLOWS; fi++)
        for (uint32_t b = t->s.flow[fi].head; b != SHP_NONE; b = (uint32_t)ipc_pool_meta(&t->pool, b)->user[1]) {
            const uint8_t *d = ipc_pool_data(&t->pool, b);
            uint16_t sport = (uint16_t)(d[34] << 8 | d[35]);
            if (sport == thin.sport)
                nthin++;
            else
                nfat++;
            if (b == first_fat)
                first_there = true;
        }
    assert_int_equal(nthin, 30);
    assert_int_equal(nfat, 70);
    assert_false(first_there);

    /* The byte limit too. */
    shp_purge(&t->s);
    cfg.limit_pkts = 0;
    cfg.limit_bytes = 50 * 1024;
    t_init(t, &cfg);
    for (unsigned i = 0; i < 100; i++) {
        ipc_buf b = t_frame(t, &fat);
        shp_enqueue(&t->s, &b, 1, 0);
    }
    assert_true(t->s.bytes <= 50 * 1024);
    assert_int_equal(t->s.pkts + t->s.p[SHP_P_OVERFLOW_DROPS], 100);
}

/* ECN: CE set, checksum still right, for every TOS with ECT and every checksum value's neighbourhood. */
static void test_ecn_checksum(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    shp_cfg_default(&cfg, 1 * MBIT, 3000);
    t_init(t, &cfg);
    for (unsigned tos = 0; tos < 256; tos++)
        for (unsigned id = 0; id < 64; id++) {
            uint8_t ip[20] = {0x45, (uint8_t)tos, 0, 40, (uint8_t)(id * 37), (uint8_t)(id * 101), 0, 0, 64, 6};
            ip[12] = 10;
            ip[15] = (uint8_t)id;
            ip[16] = 10;
            ip[19] = 2;
            uint16_t ck = t_csum(ip, 20);
            ip[10] = (uint8_t)(ck >> 8);
            ip[11] = (uint8_t)ck;
            bool m = shp_ecn_mark(ip);
            assert_int_equal(m, (tos & 3) != 0);
            if (m)
                assert_int_equal(ip[1] & 3, 3);
            else
                assert_int_equal(ip[1], tos);
            assert_int_equal(t_csum(ip, 20), 0);
        }
}

/* GSO: a 64 KB TCP packet costs the segments it becomes, each with its headers and the overhead. */
static void test_gso_cost(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    shp_cfg_default(&cfg, 100 * MBIT, 30000);
    t_init(t, &cfg);
    struct ipc_meta m = {0};
    m.pkt_len = 14 + 20 + 20 + 1448 * 10;
    m.vnet.gso_type = 1;
    m.vnet.gso_size = 1448;
    m.vnet.hdr_len = 54;
    struct shp_pkt pk = {.ipv4 = true, .hdr_end = 54};
    assert_int_equal(shp_wire_bytes(&t->s, &m, &pk), 10 * (1448 + 54 + 24));
    m.vnet.gso_type = 0;
    assert_int_equal(shp_wire_bytes(&t->s, &m, &pk), m.pkt_len + 24);
}

/* shp_set_rate: the new rate holds from the change on; a ceil below the rate is refused. */
static void test_set_rate(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    shp_cfg_default(&cfg, 100 * MBIT, 125000);
    t_init(t, &cfg);
    struct t_pkt f = t_flow(0, 1514);
    assert_int_equal(shp_set_rate(&t->s, -1, 50 * MBIT, 0, 0), 0);
    struct t_run r = {.nf = 1, .flows = &f, .depth = 64, .step = 1 * MS, .t0 = 0, .t1 = 1100 * MS, .from = 100 * MS};
    t_run(t, &r);
    double rate = t_rate(r.total, 1000 * MS);
    print_message("port set to 50: %.2f Mbit/s\n", rate / 1e6);
    assert_true(rate >= 50e6 * 0.995 && rate <= 50e6 * 1.005);
    assert_int_equal(shp_set_rate(&t->s, 0, 20 * MBIT, 10 * MBIT, 0), -EINVAL);
    assert_int_equal(shp_set_rate(&t->s, 0, 20 * MBIT, 30 * MBIT, 1100 * MS), 0);
    struct t_run r2 = {.nf = 1, .flows = &f, .depth = 64, .step = 1 * MS, .t0 = 1100 * MS, .t1 = 2200 * MS, .from = 1200 * MS};
    t_run(t, &r2);
    rate = t_rate(r2.total, 1000 * MS);
    print_message("class ceil set to 30: %.2f Mbit/s\n", rate / 1e6);
    assert_true(rate >= 30e6 * 0.995 && rate <= 30e6 * 1.005);
    assert_int_equal(shp_set_rate(&t->s, 5, 1, 1, 0), -EINVAL);
}

/* shp_drain: the queue comes out whatever the buckets say, and the shaper is reusable after. */
static void test_drain(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    shp_cfg_default(&cfg, 1 * MBIT, 3000);
    t_init(t, &cfg);
    for (unsigned i = 0; i < 50; i++) {
        struct t_pkt f = t_flow(i % 7, 1000);
        ipc_buf b = t_frame(t, &f);
        shp_enqueue(&t->s, &b, 1, 0);
    }
    ipc_buf out[64];
    uint32_t n = shp_dequeue(&t->s, 0, out, 64); /* the 3000-byte burst: 3 or 4 */
    ipc_pool_free(&t->pool, out, n);
    uint32_t total = n;
    while ((n = shp_drain(&t->s, out, 16)) > 0) {
        total += n;
        ipc_pool_free(&t->pool, out, n);
    }
    assert_int_equal(total, 50);
    assert_int_equal(t->s.pkts, 0);
    assert_int_equal(t->s.bytes, 0);
    struct t_pkt f = t_flow(3, 1000);
    ipc_buf b = t_frame(t, &f);
    shp_enqueue(&t->s, &b, 1, 10 * 1000 * MS);
    assert_int_equal(shp_dequeue(&t->s, 10 * 1000 * MS, out, 64), 1);
    assert_int_equal(out[0], b);
    ipc_pool_free(&t->pool, out, 1);
}

/* Bad configs are refused with a message. */
static void test_bad_cfg(void **state)
{
    struct t_shp *t = *state;
    struct shp_cfg cfg;
    struct ipc_err err = {{0}};
    shp_cfg_default(&cfg, 100 * MBIT, 30000);
    cfg.nclasses = 0;
    assert_int_equal(shp_init(&t->s, &t->pool, &cfg, 0, &err), -EINVAL);
    shp_cfg_default(&cfg, 100 * MBIT, 30000);
    cfg.burst = 0;
    assert_int_equal(shp_init(&t->s, &t->pool, &cfg, 0, &err), -EINVAL);
    shp_cfg_default(&cfg, 100 * MBIT, 30000);
    cfg.default_class = 3;
    assert_int_equal(shp_init(&t->s, &t->pool, &cfg, 0, &err), -EINVAL);
    /* A class with prefixes of both families could take nothing; a length past the family's is no prefix. */
    shp_cfg_default(&cfg, 100 * MBIT, 30000);
    cfg.classes[0].match.fields = SHP_MATCH_SRC | SHP_MATCH_DST6;
    assert_int_equal(shp_init(&t->s, &t->pool, &cfg, 0, &err), -EINVAL);
    cfg.classes[0].match.fields = SHP_MATCH_SRC6;
    cfg.classes[0].match.src_len = 129;
    assert_int_equal(shp_init(&t->s, &t->pool, &cfg, 0, &err), -EINVAL);
    cfg.classes[0].match.fields = SHP_MATCH_DST;
    cfg.classes[0].match.src_len = 0;
    cfg.classes[0].match.dst_len = 33;
    assert_int_equal(shp_init(&t->s, &t->pool, &cfg, 0, &err), -EINVAL);
    shp_cfg_default(&cfg, 100 * MBIT, 30000);
    t_init(t, &cfg); /* leaves a valid shaper for the teardown */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rate, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_burst, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_borrow, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_drr, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_sparse_first, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_codel_standing, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_codel_burst, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_overflow, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_ecn_checksum, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_gso_cost, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_set_rate, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_drain, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_bad_cfg, t_setup, t_teardown),
    };
    return cmocka_run_group_tests_name("shaper", tests, NULL, NULL);
}
