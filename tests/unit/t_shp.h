/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/t_shp.h: the shaper tests' fixture (test_shp.c,
 * test_shp_classify.c): a pool and a shaper on a virtual clock, frames of
 * a flow, and a run that dequeues on a timer and counts what left. Include
 * after <cmocka.h>.
 */
#ifndef T_SHP_H
#define T_SHP_H

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

static inline int t_setup(void **state)
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

static inline int t_teardown(void **state)
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

static inline void t_init(struct t_shp *t, const struct shp_cfg *cfg)
{
    struct ipc_err err = {{0}};
    if (shp_init(&t->s, &t->pool, cfg, 0, &err) != 0)
        fail_msg("%s", err.msg);
}

static inline uint16_t t_csum(const uint8_t *p, unsigned n)
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
static inline ipc_buf t_frame(struct t_shp *t, const struct t_pkt *p)
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

static inline struct t_pkt t_flow(unsigned i, uint16_t len)
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

static inline unsigned t_flow_of(const struct t_run *r, const uint8_t *d)
{
    uint16_t sport = (uint16_t)(d[34] << 8 | d[35]);
    uint32_t src = (uint32_t)d[26] << 24 | (uint32_t)d[27] << 16 | (uint32_t)d[28] << 8 | d[29];
    for (unsigned i = 0; i < r->nf; i++)
        if (r->flows[i].sport == sport && r->flows[i].src == src)
            return i;
    fail_msg("unknown flow");
    return 0;
}

static inline void t_run(struct t_shp *t, struct t_run *r)
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

static inline uint32_t t_queue_of(const struct t_pkt *p)
{
    struct shp_pkt pk = {.ipv4 = true, .proto = p->proto, .src = p->src, .dst = p->dst, .sport = p->sport, .dport = p->dport};
    return shp_flow_of(&pk, 0);
}

static inline double t_rate(uint64_t wire, uint64_t ns)
{
    return (double)wire * 8.0 * 1e9 / (double)ns;
}

#endif
