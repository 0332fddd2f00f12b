/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/t_fib6.h: what the IPv6 FIB's tests share: a random source,
 * addresses as two host-order halves (easy to mask) and as the 16 bytes the
 * FIB takes, a next hop that is a pure function of its prefix (so that a
 * reader can tell a right answer from a torn or stale one without asking
 * the writer), and the writer + reader fixture.
 */
#ifndef T_FIB6_H
#define T_FIB6_H

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tables/fib6_write.h"
#include "t_slow.h"

/* The run's seed: RR_TEST_SEED (tests/run.sh sets and prints it), else 1. */
static inline uint64_t t_seed(void)
{
    const char *e = getenv("RR_TEST_SEED");
    uint64_t s = e ? strtoull(e, NULL, 0) : 1;
    return (s + 1) * 0x9e3779b97f4a7c15ull;
}

struct t6 {
    uint64_t hi, lo;
};

static inline struct t6 t6_mask(struct t6 a, unsigned len)
{
    a.hi &= len == 0 ? 0 : len >= 64 ? ~0ull : ~0ull << (64 - len);
    a.lo &= len <= 64 ? 0 : len >= 128 ? ~0ull : ~0ull << (128 - len);
    return a;
}

/* The last address of @a/@len. */
static inline struct t6 t6_last(struct t6 a, unsigned len)
{
    struct t6 m = t6_mask((struct t6){~0ull, ~0ull}, len);
    a.hi |= ~m.hi;
    a.lo |= ~m.lo;
    return a;
}

static inline void t6_bytes(struct t6 a, uint8_t *b)
{
    uint64_t h = htobe64(a.hi), l = htobe64(a.lo);
    memcpy(b, &h, 8);
    memcpy(b + 8, &l, 8);
}

static inline struct t6 t6_from(const uint8_t *b)
{
    uint64_t h, l;
    memcpy(&h, b, 8);
    memcpy(&l, b + 8, 8);
    return (struct t6){be64toh(h), be64toh(l)};
}

static inline uint64_t t6_mix(uint64_t k)
{
    k ^= k >> 31;
    k *= 0x7fb5d329728ea185ull;
    k ^= k >> 27;
    k *= 0x81dadef4bc2dd44dull;
    k ^= k >> 33;
    return k;
}

/*
 * The next hop of @a/@len, a pure function of the prefix, @salt (a
 * replace's new next hop) and @spread (how many distinct next hops there are
 * at most; 0: as many as prefixes). Its four parts hang together (the
 * gateway's second half and the port are functions of its first half), so a
 * next hop read half from one slot and half from another fails t6_nh_sane.
 */
static inline struct fib6_nh t6_nh_of(struct t6 a, unsigned len, uint64_t salt, uint64_t spread)
{
    uint64_t h = t6_mix(a.hi * 31 + a.lo * 7 + len + salt * 0x9e3779b97f4a7c15ull);
    if (spread)
        h = h % spread + 1;
    uint64_t g0 = 0xfe80000000000000ull | (h & 0xffffffffffffull), g1 = t6_mix(g0);
    struct fib6_nh nh = {.port = (uint16_t)(1 + g1 % 7), .flags = 0};
    uint64_t b0 = htobe64(g0), b1 = htobe64(g1);
    memcpy(nh.gw, &b0, 8);
    memcpy(nh.gw + 8, &b1, 8);
    return nh;
}

/* Do the parts of @nh hang together as t6_nh_of makes them? */
static inline bool t6_nh_sane(const struct fib6_nh *nh)
{
    uint64_t b0, b1;
    memcpy(&b0, nh->gw, 8);
    memcpy(&b1, nh->gw + 8, 8);
    uint64_t g0 = be64toh(b0), g1 = be64toh(b1);
    return (g0 >> 48) == 0xfe80 && g1 == t6_mix(g0) && nh->port == 1 + g1 % 7 && nh->flags == 0;
}

static inline bool t6_nh_eq(const struct fib6_nh *x, const struct fib6_nh *y)
{
    return memcmp(x->gw, y->gw, 16) == 0 && x->port == y->port && x->flags == y->flags;
}

static inline const char *t6_str(struct t6 a, char *buf, size_t n)
{
    snprintf(buf, n, "%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x", (unsigned)(a.hi >> 48), (unsigned)(a.hi >> 32 & 0xffff),
             (unsigned)(a.hi >> 16 & 0xffff), (unsigned)(a.hi & 0xffff), (unsigned)(a.lo >> 48),
             (unsigned)(a.lo >> 32 & 0xffff), (unsigned)(a.lo >> 16 & 0xffff), (unsigned)(a.lo & 0xffff));
    return buf;
}

/* ---- fixture: a writer and a reader of one FIB ---- */

struct t_fib6 {
    int fd, rfd;
    struct fib6 w, r;
};

static inline struct t_fib6 *t_fib6_new(uint32_t prefixes, uint32_t groups, uint32_t nh)
{
    struct t_fib6 *f = calloc(1, sizeof(*f));
    struct ipc_err err = {{0}};
    struct fib6_params p = {.max_prefixes = prefixes, .tbl8_groups = groups, .max_nh = nh};
    if (!f) {
        fprintf(stderr, "t_fib6_new: out of memory\n");
        abort();
    }
    if (fib6_create("t-fib6", &p, -1, &f->w, &f->fd, &f->rfd, &err) != 0 ||
        fib6_attach(&f->r, f->fd, f->rfd, 0, &err) != 0) {
        fprintf(stderr, "t_fib6_new: %s\n", err.msg);
        abort();
    }
    return f;
}

static inline void t_fib6_free(struct t_fib6 *f)
{
    fib6_detach(&f->r);
    fib6_detach(&f->w);
    close(f->fd);
    close(f->rfd);
    free(f);
}

static inline int t_add(struct fib6 *w, struct t6 a, unsigned len, const struct fib6_nh *nh)
{
    uint8_t b[16];
    t6_bytes(a, b);
    return fib6_add(w, b, len, nh);
}

static inline int t_replace(struct fib6 *w, struct t6 a, unsigned len, const struct fib6_nh *nh)
{
    uint8_t b[16];
    t6_bytes(a, b);
    return fib6_replace(w, b, len, nh);
}

static inline int t_del(struct fib6 *w, struct t6 a, unsigned len)
{
    uint8_t b[16];
    t6_bytes(a, b);
    return fib6_del(w, b, len);
}

static inline uint32_t t_lookup(const struct fib6 *r, struct t6 a)
{
    uint8_t b[16];
    t6_bytes(a, b);
    return fib6_lookup(r, b);
}

#endif
