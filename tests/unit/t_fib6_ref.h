/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/t_fib6_ref.h: the IPv6 FIB tests' reference LPM (a hash of
 * prefixes probed at every length that has one), the checks of a FIB
 * against it, and each test's timing. Shared by test_rt_fib6.c and
 * test_rt_fib6_bulk.c, which include the writer (fib6_write.c) first.
 */
#ifndef RR_TESTS_T_FIB6_REF_H
#define RR_TESTS_T_FIB6_REF_H

/* ---- the reference: a hash of (prefix, len) -> nh, probed at every length ---- */

struct t_ref_slot {
    struct t6 a;
    uint32_t len; /* len + 1; 0 = empty */
    int dead;
    struct fib6_nh nh;
};

struct t_ref {
    struct t_ref_slot *s;
    uint32_t mask, n;
    uint32_t count[129];
};

static inline uint32_t t_h(struct t6 a, unsigned len)
{
    return (uint32_t)(t6_mix(a.hi ^ t6_mix(a.lo + len)) >> 20);
}

static inline void t_ref_init(struct t_ref *r, uint32_t cap)
{
    uint32_t c = 1024;
    while (c < cap * 2)
        c <<= 1;
    r->s = calloc(c, sizeof(*r->s));
    assert_non_null(r->s);
    r->mask = c - 1;
    r->n = 0;
    memset(r->count, 0, sizeof(r->count));
}

static struct t_ref_slot *t_ref_slot(const struct t_ref *r, struct t6 a, unsigned len, bool for_insert)
{
    struct t_ref_slot *tomb = NULL;
    for (uint32_t i = t_h(a, len) & r->mask;; i = (i + 1) & r->mask) {
        struct t_ref_slot *s = &r->s[i];
        if (s->len == len + 1 && s->a.hi == a.hi && s->a.lo == a.lo)
            return s;
        if (s->len == 0)
            return for_insert ? (tomb ? tomb : s) : NULL;
        if (s->dead && !tomb)
            tomb = s;
    }
}

static inline bool t_ref_get(const struct t_ref *r, struct t6 a, unsigned len, struct fib6_nh *nh)
{
    struct t_ref_slot *s = t_ref_slot(r, a, len, false);
    if (!s || s->dead)
        return false;
    if (nh)
        *nh = s->nh;
    return true;
}

static inline void t_ref_set(struct t_ref *r, struct t6 a, unsigned len, const struct fib6_nh *nh)
{
    struct t_ref_slot *s = t_ref_slot(r, a, len, true);
    if (s->len == 0 || s->dead) {
        r->n++;
        r->count[len]++;
    }
    s->a = a;
    s->len = len + 1;
    s->nh = *nh;
    s->dead = 0;
}

static inline void t_ref_del(struct t_ref *r, struct t6 a, unsigned len)
{
    struct t_ref_slot *s = t_ref_slot(r, a, len, false);
    assert_non_null(s);
    assert_false(s->dead);
    s->dead = 1;
    r->n--;
    r->count[len]--;
}

static inline bool t_ref_lookup(const struct t_ref *r, struct t6 a, struct fib6_nh *nh)
{
    for (int l = 128; l >= 0; l--)
        if (r->count[l] && t_ref_get(r, t6_mask(a, (unsigned)l), (unsigned)l, nh))
            return true;
    return false;
}

/* ---- checks ---- */

static inline void t_expect(struct t_fib6 *f, struct t6 a, const struct fib6_nh *want)
{
    char s[64];
    uint32_t i = t_lookup(&f->r, a);
    if (!want) {
        if (i != FIB6_MISS)
            fail_msg("%s: expected no route, got nh %u", t6_str(a, s, sizeof(s)), i);
        return;
    }
    if (i == FIB6_MISS)
        fail_msg("%s: expected port %u, got no route", t6_str(a, s, sizeof(s)), want->port);
    struct fib6_nh got = fib6_nh_at(&f->r, i);
    if (!t6_nh_eq(&got, want))
        fail_msg("%s: expected port %u, got port %u (or another gateway)", t6_str(a, s, sizeof(s)), want->port,
                 got.port);
}

/* Look @n addresses up in bursts (of up to 64, the span) and singly, and compare both with the reference. */
static inline void t_check(struct t_fib6 *f, const struct t_ref *ref, const struct t6 *addrs, size_t n, const char *phase)
{
    uint8_t(*b)[16] = malloc(64 * 16);
    uint32_t out[64];
    assert_non_null(b);
    char s[64];
    for (size_t base = 0; base < n; base += 64) {
        uint32_t m = n - base < 64 ? (uint32_t)(n - base) : 64;
        for (uint32_t i = 0; i < m; i++)
            t6_bytes(addrs[base + i], b[i]);
        fib6_read_begin(&f->r);
        fib6_lookup_burst(&f->r, (const uint8_t(*)[16])b, out, m);
        for (uint32_t i = 0; i < m; i++) {
            struct t6 a = addrs[base + i];
            if (out[i] != fib6_lookup(&f->r, b[i]))
                fail_msg("%s: %s: burst %u, single %u", phase, t6_str(a, s, sizeof(s)), out[i],
                         fib6_lookup(&f->r, b[i]));
            struct fib6_nh want;
            bool has = t_ref_lookup(ref, a, &want);
            if (!has) {
                if (out[i] != FIB6_MISS)
                    fail_msg("%s: %s: expected no route, got nh %u", phase, t6_str(a, s, sizeof(s)), out[i]);
                continue;
            }
            if (out[i] == FIB6_MISS)
                fail_msg("%s: %s: expected a route, got none", phase, t6_str(a, s, sizeof(s)));
            struct fib6_nh got = fib6_nh_at(&f->r, out[i]);
            if (!t6_nh_eq(&got, &want))
                fail_msg("%s: %s: wrong next hop (port %u, want %u)", phase, t6_str(a, s, sizeof(s)), got.port,
                         want.port);
        }
        fib6_read_end(&f->r);
    }
    free(b);
}

static inline void t_stats(struct t_fib6 *f, struct fib_stats *st)
{
    fib6_get_stats(&f->w, st);
    assert_int_equal(st->corrupt, 0);
}

#define A6(h, l) ((struct t6){(h), (l)})

/* ---- edge cases ---- */

static struct timespec t_start;

static inline int t_time_setup(void **state)
{
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    return 0;
}

static inline int t_time_teardown(void **state)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    print_message("  %.2f s\n", (double)(t.tv_sec - t_start.tv_sec) + (double)(t.tv_nsec - t_start.tv_nsec) / 1e9);
    return 0;
}


#endif
