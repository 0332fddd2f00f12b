/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_shp.c: the shaper library (services/shaper/shp.c) on a
 * virtual clock: rate accuracy, burst, class borrowing up to the ceil, DRR
 * fairness, CoDel under a standing queue and a short burst, ECN marking with
 * the checksum fixed, overflow from the fattest flow, classification, and
 * the pool census after every test (no buffer leaks).
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

#define T_NBUFS 8192u
#define T_SHAPER 2u
#define T_IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))
#define MS 1000000ull
#define SEC 1000000000ull
#define MBIT 1000000ull

struct t_shp {
    int pool_fd;
    struct ipc_pool sup, pool;
    struct shp s;
};

static int t_setup(void **state)
{
    struct t_shp *t = calloc(1, sizeof(*t));
    struct ipc_err err = {{0}};
    assert_non_null(t);
    assert_int_equal(ipc_pool_create("t-shp-pool", T_NBUFS, IPC_FRAME_DEFAULT, &t->pool_fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&t->sup, t->pool_fd, IPC_OWNER_SUPERVISOR, &err), 0);
    assert_int_equal(ipc_pool_attach(&t->pool, t->pool_fd, T_SHAPER, &err), 0);
    struct shp_cfg cfg;
    shp_cfg_default(&cfg, 1000000, 3000);
    assert_int_equal(shp_init(&t->s, &t->pool, &cfg, 0, &err), 0);
    *state = t;
    return 0;
}

static int t_teardown(void **state)
{
    struct t_shp *t = *state;
    struct ipc_census c;
    shp_purge(&t->s);
    ipc_pool_flush(&t->pool);
    if (ipc_pool_census(&t->sup, NULL, 0, &c) != 0)
        fail_msg("census: lost %u dup %u bad %u", c.lost, c.dup, c.bad_owner);
    if (c.held_by[T_SHAPER] != 0)
        fail_msg("the shaper still holds %u buffers", c.held_by[T_SHAPER]);
    assert_int_equal(c.free, T_NBUFS);
    ipc_pool_detach(&t->pool);
    ipc_pool_detach(&t->sup);
    close(t->pool_fd);
    free(t);
    return 0;
}

static void t_init(struct t_shp *t, const struct shp_cfg *cfg)
{
    struct ipc_err err = {{0}};
    if (shp_init(&t->s, &t->pool, cfg, 0, &err) != 0)
        fail_msg("%s", err.msg);
}

static uint16_t t_csum(const uint8_t *p, unsigned n)
{
    uint32_t sum = 0;
    for (unsigned i = 0; i + 1 < n; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

struct t_pkt {
    uint32_t src, dst;
    uint8_t proto, tos;
    uint16_t sport, dport;
    uint16_t len; /* frame bytes, Ethernet header on */
};

/* An Ethernet + IPv4 + UDP/TCP frame of p->len bytes in a new buffer. */
static ipc_buf t_frame(struct t_shp *t, const struct t_pkt *p)
{
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(&t->pool, &b, 1), 1);
    struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    uint8_t *d = ipc_pool_data(&t->pool, b);
    uint16_t len = p->len < 64 ? 64 : p->len;
    memset(d, 0, len);
    d[12] = 0x08;
    uint8_t *ip = d + 14;
    ip[0] = 0x45;
    ip[1] = p->tos;
    uint16_t tot = (uint16_t)(len - 14);
    ip[2] = (uint8_t)(tot >> 8);
    ip[3] = (uint8_t)tot;
    ip[8] = 64;
    ip[9] = p->proto;
    for (int i = 0; i < 4; i++) {
        ip[12 + i] = (uint8_t)(p->src >> (24 - 8 * i));
        ip[16 + i] = (uint8_t)(p->dst >> (24 - 8 * i));
    }
    uint16_t ck = t_csum(ip, 20);
    ip[10] = (uint8_t)(ck >> 8);
    ip[11] = (uint8_t)ck;
    uint8_t *l4 = ip + 20;
    l4[0] = (uint8_t)(p->sport >> 8);
    l4[1] = (uint8_t)p->sport;
    l4[2] = (uint8_t)(p->dport >> 8);
    l4[3] = (uint8_t)p->dport;
    if (p->proto == 6)
        l4[12] = 5 << 4;
    m->len = len;
    m->pkt_len = len;
    return b;
}

static struct t_pkt t_flow(unsigned i, uint16_t len)
{
    return (struct t_pkt){.src = T_IP(10, 0, 0, 2), .dst = T_IP(10, 1, 0, 2), .proto = 17,
                          .sport = (uint16_t)(10000 + i), .dport = 5001, .len = len};
}

/* Keep @nf flows backlogged with @depth packets each, dequeue every @step ns
 * from @t0 to @t1, and add each flow's sent wire bytes to @sent[] (from @from on). */
struct t_run {
    unsigned nf;
    const struct t_pkt *flows;
    unsigned depth;
    uint64_t step, t0, t1, from;
    uint64_t sent[16];
    uint64_t total;
};

static unsigned t_flow_of(const struct t_run *r, const uint8_t *d)
{
    uint16_t sport = (uint16_t)(d[34] << 8 | d[35]);
    uint32_t src = (uint32_t)d[26] << 24 | (uint32_t)d[27] << 16 | (uint32_t)d[28] << 8 | d[29];
    for (unsigned i = 0; i < r->nf; i++)
        if (r->flows[i].sport == sport && r->flows[i].src == src)
            return i;
    fail_msg("unknown flow");
    return 0;
}

static void t_run(struct t_shp *t, struct t_run *r)
{
    unsigned queued[16] = {0};
    for (uint64_t now = r->t0; now < r->t1; now += r->step) {
        for (unsigned i = 0; i < r->nf; i++)
            while (queued[i] < r->depth) {
                ipc_buf b = t_frame(t, &r->flows[i]);
                shp_enqueue(&t->s, &b, 1, now);
                queued[i]++;
            }
        ipc_buf out[256];
        uint32_t n;
        while ((n = shp_dequeue(&t->s, now, out, 256)) > 0) {
            for (uint32_t k = 0; k < n; k++) {
                struct ipc_meta *m = ipc_pool_meta(&t->pool, out[k]);
                unsigned f = t_flow_of(r, ipc_pool_data(&t->pool, out[k]));
                queued[f]--;
                if (now >= r->from) {
                    r->sent[f] += m->user[2];
                    r->total += m->user[2];
                }
            }
            ipc_pool_free(&t->pool, out, n);
        }
        /* What CoDel or overflow dropped is no longer queued. */
        for (unsigned i = 0; i < r->nf; i++) {
            unsigned c = 0;
            for (uint32_t fi = 0; fi < SHP_NFLOWS; fi++)
                for (uint32_t b = t->s.flow[fi].head; b != SHP_NONE;
                     b = (uint32_t)ipc_pool_meta(&t->pool, b)->user[1])
                    if (t_flow_of(r, ipc_pool_data(&t->pool, b)) == i)
                        c++;
            queued[i] = c;
        }
    }
}

static uint32_t t_queue_of(const struct t_pkt *p)
{
    struct shp_pkt pk = {.ipv4 = true, .proto = p->proto, .src = p->src, .dst = p->dst, .sport = p->sport, .dport = p->dport};
    return shp_flow_of(&pk, 0);
}

static double t_rate(uint64_t wire, uint64_t ns)
{
    return (double)wire * 8.0 * 1e9 / (double)ns;
}

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
        cmocka_unit_test_setup_teardown(test_classify, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_classify6, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_classify_mark, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_gso_cost, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_set_rate, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_drain, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_bad_cfg, t_setup, t_teardown),
    };
    return cmocka_run_group_tests_name("shaper", tests, NULL, NULL);
}
