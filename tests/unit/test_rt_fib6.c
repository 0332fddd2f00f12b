/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_fib6.c: the IPv6 FIB (tables/fib6.h, fib6_write.c, and
 * the plumbing both FIBs share: fib.c, fib_common.c) against a simple
 * reference LPM (a hash of prefixes probed at every length that has
 * one): the edge cases (/0, /128, nested prefixes, a delete restoring the
 * covering route, replace, next-hop sharing, every capacity running out
 * with a clean error and nothing changed), the sealed mapping, a readers'
 * region shared with the IPv4 FIB, a corrupt region (every bounds check),
 * random sets with adds, deletes and replaces interleaved and checked after
 * each phase, a 200,000-prefix table with the IPv6 DFZ's length mix, and a
 * reader thread that must never see a torn or wrong next hop while the
 * writer churns (also built under ThreadSanitizer with -DT_TSAN).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

/* The writer half compiled in, so that the bounds test can reach its hashes. */
#include "../../tables/fib6_write.c"
#include "tables/fib_write.h"
#include "t_fib6.h"
#include "t_reader.h"

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

static uint32_t t_h(struct t6 a, unsigned len)
{
    return (uint32_t)(t6_mix(a.hi ^ t6_mix(a.lo + len)) >> 20);
}

static void t_ref_init(struct t_ref *r, uint32_t cap)
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

static bool t_ref_get(const struct t_ref *r, struct t6 a, unsigned len, struct fib6_nh *nh)
{
    struct t_ref_slot *s = t_ref_slot(r, a, len, false);
    if (!s || s->dead)
        return false;
    if (nh)
        *nh = s->nh;
    return true;
}

static void t_ref_set(struct t_ref *r, struct t6 a, unsigned len, const struct fib6_nh *nh)
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

static void t_ref_del(struct t_ref *r, struct t6 a, unsigned len)
{
    struct t_ref_slot *s = t_ref_slot(r, a, len, false);
    assert_non_null(s);
    assert_false(s->dead);
    s->dead = 1;
    r->n--;
    r->count[len]--;
}

static bool t_ref_lookup(const struct t_ref *r, struct t6 a, struct fib6_nh *nh)
{
    for (int l = 128; l >= 0; l--)
        if (r->count[l] && t_ref_get(r, t6_mask(a, (unsigned)l), (unsigned)l, nh))
            return true;
    return false;
}

/* ---- checks ---- */

static void t_expect(struct t_fib6 *f, struct t6 a, const struct fib6_nh *want)
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
static void t_check(struct t_fib6 *f, const struct t_ref *ref, const struct t6 *addrs, size_t n, const char *phase)
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

static void t_stats(struct t_fib6 *f, struct fib_stats *st)
{
    fib6_get_stats(&f->w, st);
    assert_int_equal(st->corrupt, 0);
}

#define A6(h, l) ((struct t6){(h), (l)})

/* ---- edge cases ---- */

__attribute__((unused)) static void test_rt_fib6_default_and_host(void **state)
{
    struct t_fib6 *f = t_fib6_new(1024, 64, 64);
    struct fib6_nh d = t6_nh_of(A6(0, 0), 0, 0, 0), h1 = t6_nh_of(A6(0, 1), 128, 0, 0),
                   hf = t6_nh_of(A6(~0ull, ~0ull), 128, 0, 0), hm = t6_nh_of(A6(0x20010db8ull << 32, 5), 128, 0, 0);
    t_expect(f, A6(0, 0), NULL);
    t_expect(f, A6(~0ull, ~0ull), NULL);
    assert_int_equal(t_add(&f->w, A6(0, 0), 0, &d), 0);
    t_expect(f, A6(0, 0), &d);
    t_expect(f, A6(~0ull, ~0ull), &d);
    t_expect(f, A6(0x20010db8ull << 32, 1), &d);
    /* Host routes at both ends and in the middle: thirteen groups each. */
    assert_int_equal(t_add(&f->w, A6(0, 1), 128, &h1), 0);
    assert_int_equal(t_add(&f->w, A6(~0ull, ~0ull), 128, &hf), 0);
    assert_int_equal(t_add(&f->w, A6(0x20010db8ull << 32, 5), 128, &hm), 0);
    struct fib_stats st;
    t_stats(f, &st);
    assert_int_equal(st.tbl8_used, 39);
    t_expect(f, A6(0, 1), &h1);
    t_expect(f, A6(0, 0), &d);
    t_expect(f, A6(0, 2), &d);
    t_expect(f, A6(~0ull, ~0ull), &hf);
    t_expect(f, A6(~0ull, ~0ull - 1), &d);
    t_expect(f, A6(0x20010db8ull << 32, 5), &hm);
    t_expect(f, A6(0x20010db8ull << 32, 4), &d);
    t_expect(f, A6(0x20010db8ull << 32, 6), &d);
    /* The default goes; the host routes stay, and nothing else routes. */
    assert_int_equal(t_del(&f->w, A6(0, 0), 0), 0);
    t_expect(f, A6(0, 0), NULL);
    t_expect(f, A6(0, 2), NULL);
    t_expect(f, A6(0, 1), &h1);
    t_expect(f, A6(~0ull, ~0ull), &hf);
    assert_int_equal(t_del(&f->w, A6(0, 1), 128), 0);
    assert_int_equal(t_del(&f->w, A6(~0ull, ~0ull), 128), 0);
    assert_int_equal(t_del(&f->w, A6(0x20010db8ull << 32, 5), 128), 0);
    t_expect(f, A6(0, 1), NULL);
    t_stats(f, &st);
    assert_int_equal(st.prefixes, 0);
    assert_int_equal(st.nh, 0);
    assert_int_equal(st.tbl8_used, 0); /* every group folded back */
    assert_int_equal(st.tbl8_retired, 39);
    t_fib6_free(f);
}

static void test_rt_fib6_nested_delete_restores(void **state)
{
    struct t_fib6 *f = t_fib6_new(1024, 256, 64);
    static const unsigned lens[] = {3, 16, 24, 29, 32, 40, 44, 48, 56, 64, 127, 128};
    enum { N = sizeof(lens) / sizeof(lens[0]) };
    /* One address, every prefix of it in lens[] nested inside the shorter ones. */
    struct t6 x = A6(0x2a0312340056789aull, 0xbcdef01234567899ull);
    struct fib6_nh nh[N];
    for (unsigned i = 0; i < N; i++)
        nh[i] = t6_nh_of(t6_mask(x, lens[i]), lens[i], 0, 0);
    /* Added in a scrambled order: a longer one first must not be overwritten by a covering one. */
    static const unsigned order[N] = {7, 2, 11, 0, 9, 4, 10, 1, 5, 8, 3, 6};
    for (unsigned k = 0; k < N; k++)
        assert_int_equal(t_add(&f->w, t6_mask(x, lens[order[k]]), lens[order[k]], &nh[order[k]]), 0);
    /* Just inside each prefix but outside the next longer one: that prefix. */
    for (unsigned i = 0; i < N; i++) {
        if (i + 1 < N) {
            /* Flip the first bit after lens[i]: inside /lens[i], outside /lens[i+1]. */
            unsigned bit = lens[i];
            struct t6 y = x;
            if (bit < 64)
                y.hi ^= 1ull << (63 - bit);
            else
                y.lo ^= 1ull << (127 - bit);
            t_expect(f, y, &nh[i]);
            t_expect(f, t6_last(t6_mask(y, lens[i + 1]), lens[i + 1]), &nh[i]);
        }
    }
    t_expect(f, x, &nh[N - 1]);
    t_expect(f, A6(0x4000000000000000ull, 0), NULL); /* outside the /3 */
    struct t6 y = x;
    y.lo ^= 1;
    t_expect(f, y, &nh[N - 2]); /* the /127 */
    /* Delete from the middle out: each delete restores the covering prefix in its range only. */
    static const unsigned del[N] = {6, 8, 4, 10, 11, 9, 7, 5, 3, 2, 1, 0};
    bool gone[N] = {false};
    for (unsigned k = 0; k < N; k++) {
        unsigned i = del[k];
        assert_int_equal(t_del(&f->w, t6_mask(x, lens[i]), lens[i]), 0);
        assert_int_equal(t_del(&f->w, t6_mask(x, lens[i]), lens[i]), -ENOENT);
        gone[i] = true;
        /* x itself: the longest prefix left. */
        int best = -1;
        for (unsigned j = 0; j < N; j++)
            if (!gone[j])
                best = (int)j;
        t_expect(f, x, best < 0 ? NULL : &nh[best]);
        /* The first address after each prefix's range still inside the shorter ones. */
        for (unsigned j = 0; j < N; j++) {
            if (lens[j] == 0)
                continue;
            struct t6 z = t6_last(t6_mask(x, lens[j]), lens[j]);
            int b2 = -1;
            for (unsigned q = 0; q < N; q++)
                if (!gone[q] && (t6_mask(z, lens[q]).hi == t6_mask(x, lens[q]).hi &&
                                 t6_mask(z, lens[q]).lo == t6_mask(x, lens[q]).lo))
                    b2 = (int)q;
            t_expect(f, z, b2 < 0 ? NULL : &nh[b2]);
        }
    }
    struct fib_stats st;
    t_stats(f, &st);
    assert_int_equal(st.prefixes, 0);
    assert_int_equal(st.tbl8_used, 0);
    assert_int_equal(st.nh, 0);
    t_fib6_free(f);
}

/*
 * Sibling prefixes with the same next hop write equal entries: two /33s fill
 * a whole level-2 group, two /25s a level-1 group, 256 /40s another level-2
 * group, each with one value. None of those groups may fold into its parent
 * entry (which spans only a /32 or /24), or deleting one sibling would not
 * find its entries.
 */
static void test_rt_fib6_siblings_same_nh(void **state)
{
    struct t_fib6 *f = t_fib6_new(1024, 64, 64);
    struct fib6_nh a = t6_nh_of(A6(1, 0), 1, 0, 0);
    struct t6 x0 = A6(0x2001000000000000ull, 0), x1 = A6(0x2001000080000000ull, 0); /* 2001:0::/33, 2001:0:8000::/33 */
    struct t6 y0 = A6(0x2a00120000000000ull, 0), y1 = A6(0x2a00128000000000ull, 0); /* two /25s */
    assert_int_equal(t_add(&f->w, x0, 33, &a), 0);
    assert_int_equal(t_add(&f->w, x1, 33, &a), 0);
    assert_int_equal(t_add(&f->w, y0, 25, &a), 0);
    assert_int_equal(t_add(&f->w, y1, 25, &a), 0);
    for (uint64_t i = 0; i < 256; i++)
        assert_int_equal(t_add(&f->w, A6(0x2600000100000000ull | i << 24, 0), 40, &a), 0);
    t_expect(f, A6(0x2001000012345678ull, 1), &a);
    t_expect(f, A6(0x2001000092345678ull, 1), &a);
    /* A longer prefix inside each; deleting it is when a group is tested for folding. */
    struct fib6_nh b = t6_nh_of(A6(2, 0), 2, 0, 0);
    static const uint64_t deeper[] = {0x2001000012340000ull, 0x2a00120012340000ull, 0x2600000105340000ull};
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(t_add(&f->w, A6(deeper[i], 0), 48, &b), 0);
        t_expect(f, A6(deeper[i], 9), &b);
        assert_int_equal(t_del(&f->w, A6(deeper[i], 0), 48), 0);
        t_expect(f, A6(deeper[i], 9), &a);
    }
    /* Replace one sibling with the same next hop: the group stays. */
    assert_int_equal(t_replace(&f->w, x0, 33, &a), 0);
    assert_int_equal(t_del(&f->w, x0, 33), 0);
    t_expect(f, A6(0x2001000012345678ull, 1), NULL);
    t_expect(f, A6(0x2001000092345678ull, 1), &a);
    assert_int_equal(t_del(&f->w, y1, 25), 0);
    t_expect(f, A6(0x2a00128000000000ull, 1), NULL);
    t_expect(f, A6(0x2a00120000000000ull, 1), &a);
    assert_int_equal(t_del(&f->w, A6(0x2600000100000000ull | 77ull << 24, 0), 40), 0);
    t_expect(f, A6(0x260000014d000000ull, 1), NULL);
    t_expect(f, A6(0x260000014e000000ull, 1), &a);
    for (uint64_t i = 0; i < 256; i++)
        assert_int_equal(t_del(&f->w, A6(0x2600000100000000ull | i << 24, 0), 40), i == 77 ? -ENOENT : 0);
    assert_int_equal(t_del(&f->w, x1, 33), 0);
    assert_int_equal(t_del(&f->w, y0, 25), 0);
    struct fib_stats st;
    t_stats(f, &st);
    assert_int_equal(st.prefixes, 0);
    assert_int_equal(st.tbl8_used, 0);
    t_fib6_free(f);
}

static void test_rt_fib6_args_replace_get(void **state)
{
    struct t_fib6 *f = t_fib6_new(1024, 64, 64);
    struct fib6_nh a = t6_nh_of(A6(1, 0), 1, 0, 0), b = t6_nh_of(A6(2, 0), 2, 0, 0);
    struct t6 p = A6(0x20010db800000000ull, 0);
    assert_int_equal(t_add(&f->w, A6(0x20010db800000001ull, 0), 32, &a), -EINVAL); /* host bits */
    assert_int_equal(t_add(&f->w, A6(0x20010db800000000ull, 1), 64, &a), -EINVAL);
    assert_int_equal(t_add(&f->w, A6(0, 0), 129, &a), -EINVAL);
    assert_int_equal(t_del(&f->w, p, 129), -EINVAL);
    struct fib6_nh bad = a;
    bad.port = 0xffff;
    assert_int_equal(t_add(&f->w, p, 32, &bad), -EINVAL);
    bad = a;
    bad.flags = 1;
    assert_int_equal(t_add(&f->w, p, 32, &bad), -EINVAL);
    assert_int_equal(t_add(&f->r, p, 32, &a), -EINVAL); /* a reader writes nothing */
    assert_int_equal(t_del(&f->w, p, 32), -ENOENT);
    assert_int_equal(t_add(&f->w, p, 32, &a), 0);
    assert_int_equal(t_add(&f->w, p, 32, &b), -EEXIST);
    t_expect(f, A6(0x20010db812345678ull, 9), &a);
    /* Replace switches the prefix's entries to another next hop; the old one is released. */
    assert_int_equal(t_add(&f->w, A6(0x20010db800010000ull, 0), 48, &a), 0);
    assert_int_equal(t_replace(&f->w, p, 32, &b), 0);
    t_expect(f, A6(0x20010db812345678ull, 9), &b);
    t_expect(f, A6(0x20010db800010000ull, 9), &a);
    struct fib_stats st;
    t_stats(f, &st);
    assert_int_equal(st.nh, 2);
    assert_int_equal(t_replace(&f->w, A6(0x20010db800010000ull, 0), 48, &b), 0);
    t_stats(f, &st);
    assert_int_equal(st.nh, 1); /* two routes, one shared next hop */
    assert_int_equal(st.nh_retired, 1);
    /* Replace of an absent prefix adds it. */
    assert_int_equal(t_replace(&f->w, A6(0x20010db900000000ull, 0), 32, &a), 0);
    t_expect(f, A6(0x20010db9ffffffffull, ~0ull), &a);
    uint8_t pb[16];
    struct fib6_nh got;
    t6_bytes(p, pb);
    assert_int_equal(fib6_get(&f->w, pb, 32, &got), 0);
    assert_true(t6_nh_eq(&got, &b));
    assert_int_equal(fib6_get(&f->w, pb, 33, &got), -ENOENT);
    assert_int_equal(fib6_get(&f->w, pb, 31, &got), -ENOENT);
    t_fib6_free(f);
}

struct t_iter {
    unsigned n, lens;
};

static int t_iter_cb(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    struct t_iter *it = arg;
    struct fib6_nh want = t6_nh_of(t6_from(addr), len, 0, 0);
    if (!t6_nh_eq(nh, &want))
        return -1;
    it->n++;
    it->lens += len;
    return 0;
}

/* Six prefixes of one address, /0 to /128, each with a next hop named after
 * it (t_iter_cb checks it); returns the sum of their lengths. */
static unsigned t_six_prefixes(struct t_fib6 *f)
{
    static const unsigned lens[] = {0, 19, 32, 48, 64, 128};
    unsigned sum = 0;
    for (unsigned i = 0; i < 6; i++) {
        struct t6 a = t6_mask(A6(0x2600123456789abcull, 0xdef0123456789abcull), lens[i]);
        struct fib6_nh nh = t6_nh_of(a, lens[i], 0, 0);
        assert_int_equal(t_add(&f->w, a, lens[i], &nh), 0);
        sum += lens[i];
    }
    return sum;
}

static void test_rt_fib6_iterate(void **state)
{
    struct t_fib6 *f = t_fib6_new(1024, 64, 64);
    unsigned sum = t_six_prefixes(f);
    struct t_iter it = {0};
    assert_int_equal(fib6_iterate(&f->w, t_iter_cb, &it), 0);
    assert_int_equal(it.n, 6);
    assert_int_equal(it.lens, sum);
    t_fib6_free(f);
}

/* The same prefixes read back through fib6_snapshot: a read-only mapping of
 * the sealed region, as a new supervisor reads a dead one's (adopt.c). */
static void test_rt_fib6_snapshot(void **state)
{
    struct t_fib6 *f = t_fib6_new(1024, 64, 64);
    unsigned sum = t_six_prefixes(f);
    struct t_iter it = {0};
    bool dirty = true;
    struct ipc_err err = {{0}};
    assert_int_equal(fib6_snapshot(f->fd, t_iter_cb, &it, &dirty, &err), 0);
    assert_int_equal(it.n, 6);
    assert_int_equal(it.lens, sum);
    assert_false(dirty);
    t_fib6_free(f);
}

static void test_rt_fib6_capacity(void **state)
{
    struct t_fib6 *f = t_fib6_new(8, 3, 4);
    struct fib6_nh a = t6_nh_of(A6(1, 0), 1, 0, 0);
    /* Prefixes: 8 at most. */
    for (uint64_t i = 0; i < 8; i++)
        assert_int_equal(t_add(&f->w, A6(0x2001000000000000ull | i << 32, 0), 32 - 8, &a), i < 1 ? 0 : -EINVAL);
    for (uint64_t i = 0; i < 8; i++)
        assert_int_equal(t_add(&f->w, A6(0x2001000000000000ull | i << 40, 0), 24, &a), i < 1 ? -EEXIST : 0);
    assert_int_equal(t_add(&f->w, A6(0x2002000000000000ull, 0), 24, &a), -ENOSPC);
    struct fib_stats st;
    t_stats(f, &st);
    assert_int_equal(st.prefixes, 8);
    assert_int_equal(st.nh, 1); /* eight routes, one next hop */
    for (uint64_t i = 0; i < 8; i++)
        assert_int_equal(t_del(&f->w, A6(0x2001000000000000ull | i << 40, 0), 24), 0);

    /* Groups: 3. A /48 under a /24 needs three; a second /48 elsewhere fails
     * cleanly and changes nothing: no group taken, no next hop, no entry. */
    struct fib6_nh b = t6_nh_of(A6(2, 0), 2, 0, 0);
    assert_int_equal(t_add(&f->w, A6(0x2001000000000000ull, 0), 16, &a), 0);
    assert_int_equal(t_add(&f->w, A6(0x2001000100010000ull, 0), 48, &a), 0);
    assert_int_equal(t_add(&f->w, A6(0x2001000200010000ull, 0), 48, &b), -ENOSPC);
    t_stats(f, &st);
    assert_int_equal(st.tbl8_used, 3);
    assert_int_equal(st.nh, 1);
    assert_int_equal(st.prefixes, 2);
    t_expect(f, A6(0x2001000200010000ull, 1), &a); /* the /16 */
    /* A /48 beside the first one shares its three groups: it fits. */
    assert_int_equal(t_add(&f->w, A6(0x2001000100020000ull, 0), 48, &b), 0);
    t_expect(f, A6(0x2001000100020000ull, 1), &b);
    /* Freed groups come back once no reader can be inside them. */
    assert_int_equal(t_del(&f->w, A6(0x2001000100010000ull, 0), 48), 0);
    assert_int_equal(t_del(&f->w, A6(0x2001000100020000ull, 0), 48), 0);
    t_stats(f, &st);
    assert_int_equal(st.tbl8_used, 0);
    assert_int_equal(st.tbl8_retired, 3);
    assert_int_equal(t_add(&f->w, A6(0x2001000200010000ull, 0), 48, &b), 0);
    t_expect(f, A6(0x2001000200010000ull, 1), &b);
    /* A reader inside a batch that began before the unlink pins the groups. */
    fib6_read_begin(&f->r);
    assert_int_equal(t_del(&f->w, A6(0x2001000200010000ull, 0), 48), 0);
    assert_int_equal(t_add(&f->w, A6(0x2001000300010000ull, 0), 48, &b), -EAGAIN);
    t_expect(f, A6(0x2001000300010000ull, 1), &a);
    fib6_read_end(&f->r);
    assert_int_equal(t_add(&f->w, A6(0x2001000300010000ull, 0), 48, &b), 0);
    /* A dead reader's slot is released by the supervisor. */
    fib6_read_begin(&f->r);
    assert_int_equal(t_del(&f->w, A6(0x2001000300010000ull, 0), 48), 0);
    assert_int_equal(t_add(&f->w, A6(0x2001000400010000ull, 0), 48, &b), -EAGAIN);
    fib6_reader_reset(&f->w, 0);
    assert_int_equal(t_add(&f->w, A6(0x2001000400010000ull, 0), 48, &b), 0);
    assert_int_equal(t_del(&f->w, A6(0x2001000400010000ull, 0), 48), 0);

    /* Next hops: 4 at most; a fifth distinct one is refused, and nothing changed. */
    for (uint64_t i = 0; i < 3; i++) {
        struct fib6_nh x = t6_nh_of(A6(10 + i, 0), 10, 0, 0);
        assert_int_equal(t_add(&f->w, A6(0x2400000000000000ull | i << 40, 0), 24, &x), 0);
    }
    t_stats(f, &st);
    assert_int_equal(st.nh, 4);
    struct fib6_nh y = t6_nh_of(A6(99, 0), 10, 0, 0);
    assert_int_equal(t_add(&f->w, A6(0x2500000000000000ull, 0), 24, &y), -ENOSPC);
    t_expect(f, A6(0x2500000000000000ull, 0), NULL);
    t_stats(f, &st);
    assert_int_equal(st.nh, 4);
    assert_int_equal(st.prefixes, 4);
    /* A next hop already there costs nothing: it fits. */
    assert_int_equal(t_add(&f->w, A6(0x2500000000000000ull, 0), 24, &a), 0);
    /* Replacing with a fifth next hop is refused too, and the old one stays. */
    assert_int_equal(t_replace(&f->w, A6(0x2500000000000000ull, 0), 24, &y), -ENOSPC);
    t_expect(f, A6(0x2500000000000000ull, 0), &a);
    t_fib6_free(f);
}

static void test_rt_fib6_attach_checks(void **state)
{
    struct t_fib6 *f = t_fib6_new(64, 4, 4);
    struct fib6 x;
    struct ipc_err err = {{0}};
    assert_int_equal(fib6_attach(&x, f->fd, f->rfd, 16, &err), -EINVAL);
    assert_int_equal(fib6_attach(&x, f->fd, f->rfd, -2, &err), -EINVAL);
    /* The tables are sealed: no second writer. */
    assert_int_equal(fib6_attach(&x, f->fd, f->rfd, FIB6_WRITER, &err), -EPERM);
    /* The wrong regions are refused. */
    assert_true(fib6_attach(&x, f->rfd, f->rfd, 0, &err) < 0);
    assert_true(fib6_attach(&x, f->fd, f->fd, 0, &err) < 0);
    /* Writer died mid-update: whoever attaches next is told to rebuild. */
    f->w.m.lay->dirty = 1;
    assert_int_equal(fib6_attach(&x, f->fd, f->rfd, FIB6_WRITER, &err), -EUCLEAN);
    struct fib6_nh nh = t6_nh_of(A6(1, 0), 1, 0, 0);
    assert_int_equal(t_add(&f->w, A6(0x2001000000000000ull, 0), 16, &nh), -EUCLEAN);
    f->w.m.lay->dirty = 0;
    /* Sealed means sealed for everyone, whatever way they got the fd. */
    size_t sz = f->w.m.size;
    assert_true(mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0) == MAP_FAILED);
    assert_int_equal(errno, EPERM);
    assert_int_equal(pwrite(f->fd, "x", 1, 8192), -1);
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
    int again = open(path, O_RDWR);
    assert_true(again >= 0);
    assert_true(mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, again, 0) == MAP_FAILED);
    close(again);
    /* The writer's own mapping still writes, and a second reader sees it. */
    assert_int_equal(t_add(&f->w, A6(0x2001000000000000ull, 0), 16, &nh), 0);
    assert_int_equal(fib6_attach(&x, f->fd, f->rfd, 3, &err), 0);
    assert_true(t_lookup(&x, A6(0x2001123400000000ull, 0)) != FIB6_MISS);
    fib6_detach(&x);
    t_fib6_free(f);
}

/* One read section covers both FIBs when they share the readers' region. */
static void test_rt_fib6_shared_readers(void **state)
{
    struct ipc_err err = {{0}};
    struct fib_params p4 = {.max_prefixes = 64, .tbl8_groups = 4, .max_nh = 4};
    struct fib fw, fr;
    int fd4, rfd4, fd6, rfd6;
    if (fib_create("t-fib4", &p4, &fw, &fd4, &rfd4, &err) != 0 || fib_attach(&fr, fd4, rfd4, 2, &err) != 0)
        fail_msg("fib: %s", err.msg);
    struct fib6_params p6 = {.max_prefixes = 64, .tbl8_groups = 3, .max_nh = 4};
    struct fib6 w, r;
    if (fib6_create("t-fib6", &p6, rfd4, &w, &fd6, &rfd6, &err) != 0 || fib6_attach(&r, fd6, rfd6, 2, &err) != 0)
        fail_msg("fib6: %s", err.msg);
    assert_int_equal(rfd6, rfd4);
    struct fib6_nh nh = t6_nh_of(A6(1, 0), 1, 0, 0);
    struct t6 p = A6(0x2001000100010000ull, 0), q = A6(0x2001000200010000ull, 0);
    assert_int_equal(t_add(&w, p, 48, &nh), 0);
    /* The router opens its batch through the IPv4 FIB ... */
    fib_read_begin(&fr);
    assert_true(fib6_read_held(&r));
    assert_int_equal(t_del(&w, p, 48), 0);
    /* ... and the IPv6 groups it may hold are not reused under it. */
    assert_int_equal(t_add(&w, q, 48, &nh), -EAGAIN);
    fib_read_end(&fr);
    assert_int_equal(t_add(&w, q, 48, &nh), 0);
    assert_true(t_lookup(&r, A6(0x2001000200010000ull, 7)) != FIB6_MISS);
    /* Both writers stamp the same generation. */
    uint64_t g0 = ipc_ld_rlx(&fw.m.sh->gen);
    assert_int_equal(t_del(&w, q, 48), 0);
    assert_true(ipc_ld_rlx(&fw.m.sh->gen) > g0);
    fib6_detach(&r);
    fib6_detach(&w);
    fib_detach(&fr);
    fib_detach(&fw);
    close(fd6);
    close(fd4);
    close(rfd4);
}

/*
 * The writer checks what it reads back: a region corrupted under it (here
 * through the writer's own mapping, the only writable one) fails the update
 * with -EUCLEAN, is counted, and is never followed out of bounds (ASan
 * would see it).
 */
static void test_rt_fib6_bounds_checked(void **state)
{
    struct fib6_nh nh = t6_nh_of(A6(1, 0), 1, 0, 0), nh2 = t6_nh_of(A6(2, 0), 2, 0, 0);
    struct t6 p = A6(0x2001000100010000ull, 0);
    struct fib_stats st;
    for (int what = 0; what < 9; what++) {
        struct t_fib6 *f = t_fib6_new(64, 8, 8);
        assert_int_equal(t_add(&f->w, p, 48, &nh), 0);
        assert_int_equal(t_add(&f->w, A6(0x2001000000000000ull, 0), 32, &nh), 0);
        _Atomic uint32_t *e24 = &f->w.m.tbl24[0x200100];
        uint32_t g1 = ipc_ld_rlx(e24) & FIB6_E_IDX;
        struct fib_w w = fib_map_w(&fib_family6, &f->w.m);
        struct fib6_hslot *nhh = (struct fib6_hslot *)w.nhh;
        struct fib6_hslot key = fib6_pfx_key((struct fib6_key){p.hi, p.lo}, 48);
        int want = -EUCLEAN;
        switch (what) {
        case 0: /* a group link past the groups */
            ipc_st_rlx(e24, FIB6_E_VALID | FIB6_E_EXT | (f->w.m.lim.tbl8_groups + 5));
            break;
        case 1: /* a link to a group never handed out */
            ipc_st_rlx(e24, FIB6_E_VALID | FIB6_E_EXT | 7);
            break;
        case 2: /* the prefix hash names a next hop past the table */
            ((struct fib6_hslot *)fib_h_find(&fib6_hkind, w.pfx, f->w.m.lim.pfx_mask, &key))->val = FIB6_E_IDX;
            break;
        case 3: /* the layout page's counters */
            f->w.m.lay->tbl8_hwm = f->w.m.lim.tbl8_groups + 1;
            break;
        case 4:
            f->w.m.lay->nh_rq_head = 1u << 30;
            break;
        case 5: /* a link chain deeper than 13 levels: every group links to the first */
            for (unsigned j = 0; j < 256; j++)
                ipc_st_rlx(&f->w.m.tbl8[(size_t)g1 << 8 | j], FIB6_E_VALID | FIB6_E_EXT | g1);
            break;
        case 6: { /* the free stack holds an index past the high-water mark */
            assert_int_equal(t_del(&f->w, p, 48), 0);
            f->w.m.lay->tbl8_rq_len = 0;
            f->w.m.lay->tbl8_nfree = 1;
            w.groups.free_stack[0] = 1000000;
            break;
        }
        case 8: { /* a retired group's queue slot names a group past the table */
            assert_int_equal(t_del(&f->w, p, 48), 0);
            w.groups.idx[f->w.m.lay->tbl8_rq_head] = 1u << 20;
            /* Use up the never-used groups, so that the next add must reclaim. */
            assert_int_equal(t_add(&f->w, A6(0x2001000300010000ull, 0), 48, &nh2), 0);
            assert_int_equal(t_add(&f->w, A6(0x2001000400010000ull, 0), 48, &nh2), 0);
            break;
        }
        case 7: /* the next-hop hash names a slot past the table */
            for (uint32_t i = 0; i <= f->w.m.lim.nhh_mask; i++)
                if (nhh[i].used)
                    nhh[i].val = 1u << 24;
            break;
        }
        int ret;
        if (what == 2)
            ret = t_del(&f->w, p, 48);
        else if (what == 6)
            ret = t_add(&f->w, A6(0x2001000100020000ull, 0), 48, &nh2);
        else if (what == 8) /* needs more groups than the high-water mark has left: reclaims */
            ret = t_add(&f->w, A6(0x2001000500010000ull, 0), 48, &nh2);
        else if (what == 7)
            ret = t_add(&f->w, A6(0x2001000100020000ull, 0), 48, &nh);
        else if (what == 5)
            ret = t_add(&f->w, A6(0x2000000000000000ull, 0), 8, &nh2);
        else
            ret = t_add(&f->w, A6(0x2001000100020000ull, 0), 48, &nh2);
        if (ret != want)
            fail_msg("corruption %d: %d, expected -EUCLEAN", what, ret);
        fib6_get_stats(&f->w, &st);
        assert_true(st.corrupt > 0);
        t_fib6_free(f);
    }
}

/* ---- random sets against the reference ---- */

struct t_pfx {
    struct t6 a;
    unsigned len;
    uint64_t salt; /* the next hop it has now: t6_nh_of(a, len, salt, spread) */
};

/* Random lengths with many nested and long prefixes (a stress mix, not the DFZ's). */
static unsigned t_rand_len(uint64_t *s)
{
    unsigned r = (unsigned)(t_rand64(s) % 100);
    if (r < 3)
        return (unsigned)(t_rand64(s) % 24); /* big ranges, /0 among them */
    if (r < 40)
        return 24 + (unsigned)(t_rand64(s) % 25);
    if (r < 90)
        return 48 + (unsigned)(t_rand64(s) % 17);
    return 64 + (unsigned)(t_rand64(s) % 65);
}

/* An address in one of a few /20s, with the low 64 bits from a few values: prefixes overlap a lot. */
static struct t6 t_rand_addr(uint64_t *s)
{
    static const uint64_t tops[] = {0x2001000000000000ull, 0x2a0e000000000000ull, 0x2600000000000000ull};
    uint64_t hi = tops[t_rand64(s) % 3] | (t_rand64(s) & 0x00000fffffffffffull);
    if (t_rand64(s) % 2)
        hi &= ~0xfffffull; /* a cluster: the same /44 */
    uint64_t lo = t_rand64(s) % 4 == 0 ? t_rand64(s) : (t_rand64(s) % 8) << 56;
    return (struct t6){hi, lo};
}

/* Lookup addresses: a third uniform, a third inside a live prefix, a third at a live prefix's edges (and one past). */
static void t_lookups(uint64_t *s, const struct t_pfx *p, uint32_t np, struct t6 *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned k = (unsigned)(t_rand64(s) % 3);
        if (np == 0 || k == 0) {
            out[i] = t_rand64(s) % 2 ? t_rand_addr(s) : (struct t6){t_rand64(s), t_rand64(s)};
            continue;
        }
        const struct t_pfx *q = &p[t_rand64(s) % np];
        struct t6 last = t6_last(q->a, q->len);
        if (k == 1) {
            struct t6 r = {t_rand64(s), t_rand64(s)};
            out[i] = (struct t6){q->a.hi | (r.hi & (last.hi ^ q->a.hi)), q->a.lo | (r.lo & (last.lo ^ q->a.lo))};
        } else {
            switch (t_rand64(s) % 4) {
            case 0:
                out[i] = q->a;
                break;
            case 1:
                out[i] = last;
                break;
            case 2: /* one before the first */
                out[i] = (struct t6){q->a.hi - (q->a.lo == 0), q->a.lo - 1};
                break;
            default: /* one past the last */
                out[i] = (struct t6){last.hi + (last.lo == ~0ull), last.lo + 1};
                break;
            }
        }
    }
}

struct t_set {
    struct t_fib6 *f;
    struct t_ref ref;
    struct t_pfx *p;
    uint32_t np, cap;
    uint64_t spread;
    uint32_t adds, dels, replaces;
};

static void t_set_init(struct t_set *x, uint32_t cap, uint32_t groups, uint32_t nhs, uint64_t spread)
{
    memset(x, 0, sizeof(*x));
    x->f = t_fib6_new(cap, groups, nhs);
    t_ref_init(&x->ref, cap);
    x->p = calloc(cap, sizeof(*x->p));
    assert_non_null(x->p);
    x->cap = cap;
    x->spread = spread;
}

static void t_set_fini(struct t_set *x)
{
    free(x->p);
    free(x->ref.s);
    t_fib6_free(x->f);
}

/* Add @a/@len unless it is there (then false). */
static bool t_set_add(struct t_set *x, struct t6 a, unsigned len)
{
    a = t6_mask(a, len);
    if (t_ref_get(&x->ref, a, len, NULL) || x->np >= x->cap)
        return false;
    struct fib6_nh nh = t6_nh_of(a, len, 0, x->spread);
    int ret = t_add(&x->f->w, a, len, &nh);
    if (ret != 0) {
        char s[64];
        fail_msg("add %s/%u: %d (%u prefixes)", t6_str(a, s, sizeof(s)), len, ret, x->np);
    }
    t_ref_set(&x->ref, a, len, &nh);
    x->p[x->np++] = (struct t_pfx){a, len, 0};
    x->adds++;
    return true;
}

static void t_set_del(struct t_set *x, uint32_t k)
{
    struct t_pfx q = x->p[k];
    assert_int_equal(t_del(&x->f->w, q.a, q.len), 0);
    t_ref_del(&x->ref, q.a, q.len);
    x->p[k] = x->p[--x->np];
    x->dels++;
}

static void t_set_replace(struct t_set *x, uint32_t k, uint64_t salt)
{
    struct t_pfx *q = &x->p[k];
    struct fib6_nh nh = t6_nh_of(q->a, q->len, salt, x->spread);
    assert_int_equal(t_replace(&x->f->w, q->a, q->len, &nh), 0);
    t_ref_set(&x->ref, q->a, q->len, &nh);
    q->salt = salt;
    x->replaces++;
}

static void t_set_check(struct t_set *x, uint64_t *s, size_t n, const char *phase)
{
    struct t6 *a = malloc(n * sizeof(*a));
    assert_non_null(a);
    t_lookups(s, x->p, x->np, a, n);
    t_check(x->f, &x->ref, a, n, phase);
    free(a);
    struct fib_stats st;
    t_stats(x->f, &st);
    assert_int_equal(st.prefixes, x->np);
}

/* Empty the set: the FIB must be as new (no prefix, next hop or group; tbl24 all zero). */
static void t_set_drain(struct t_set *x)
{
    while (x->np > 0)
        t_set_del(x, x->np - 1);
    struct fib_stats st;
    t_stats(x->f, &st);
    assert_int_equal(st.prefixes, 0);
    assert_int_equal(st.nh, 0);
    assert_int_equal(st.tbl8_used, 0);
    for (uint32_t i = 0; i < (1u << 24); i += 4099)
        assert_int_equal(ipc_ld_rlx(&x->f->r.m.tbl24[i]), 0);
    assert_int_equal(ipc_ld_rlx(&x->f->r.m.tbl24[0x200100]), 0);
}

/* @spread: how many distinct next hops; few make siblings share theirs (equal entries). */
static void t_random_rounds(uint32_t n, unsigned rounds, size_t lookups, uint64_t seed, uint64_t spread)
{
    struct t_set x;
    t_set_init(&x, n, n * 6 + 64, 4096, spread);
    uint64_t s = seed;
    char phase[64];
    for (unsigned round = 0; round < rounds; round++) {
        /* Phase 1: adds (the first round fills half), then check. */
        uint32_t ops = round == 0 ? n / 2 : n / 6;
        for (uint32_t op = 0; op < ops; op++)
            t_set_add(&x, t_rand_addr(&s), t_rand_len(&s));
        snprintf(phase, sizeof(phase), "round %u adds", round);
        t_set_check(&x, &s, lookups, phase);
        /* Phase 2: deletes, replaces and adds interleaved, then check. */
        for (uint32_t op = 0; op < n / 4 && x.np > 0; op++) {
            uint32_t k = (uint32_t)(t_rand64(&s) % x.np);
            switch (t_rand64(&s) % 3) {
            case 0:
                t_set_del(&x, k);
                break;
            case 1:
                t_set_replace(&x, k, t_rand64(&s) % 5 + 1);
                break;
            default:
                t_set_add(&x, t_rand_addr(&s), t_rand_len(&s));
                break;
            }
        }
        snprintf(phase, sizeof(phase), "round %u mixed", round);
        t_set_check(&x, &s, lookups, phase);
        /* Phase 3: delete a third, then check. */
        for (uint32_t op = 0, m = x.np / 3; op < m; op++)
            t_set_del(&x, (uint32_t)(t_rand64(&s) % x.np));
        snprintf(phase, sizeof(phase), "round %u deletes", round);
        t_set_check(&x, &s, lookups, phase);
    }
    t_set_drain(&x);
    t_set_fini(&x);
}

__attribute__((unused)) static void test_rt_fib6_random_small(void **state)
{
    uint64_t seed = t_seed();
    for (unsigned i = 0; i < (T_SLOW ? 2u : 5u); i++)
        t_random_rounds(2000, 4, 20000, seed + i * 0x5bd1e995u, i % 2 ? 1000 : 3);
}

__attribute__((unused)) static void test_rt_fib6_random_20k(void **state)
{
    t_random_rounds(20000, 3, T_SLOW ? 30000 : 100000, t_seed() ^ 0xabcdefu, 8);
}

/* ---- a full table with the DFZ's length mix ---- */

/*
 * Prefix lengths per 100,000 of a 2024-25 IPv6 DFZ (approximately, our own
 * round numbers after the public BGP table reports): half /48, then /32,
 * /44, /40, /29, /36 and the lengths between, a few /49../64 (not filtered
 * everywhere), a few /128 (a FIB also holds host routes), /0 and a handful
 * of short ones.
 */
static const struct {
    unsigned len, per100k;
} t_dfz[] = {
    {0, 1},     {8, 1},      {12, 2},    {16, 8},     {19, 20},   {20, 30},   {22, 40},   {24, 60},   {28, 120},
    {29, 4200}, {30, 500},   {31, 400},  {32, 13000}, {33, 900},  {34, 1200}, {35, 700},  {36, 3000}, {37, 500},
    {38, 900},  {39, 500},   {40, 6000}, {41, 500},   {42, 1300}, {43, 500},  {44, 8000}, {45, 1200}, {46, 2500},
    {47, 2600}, {48, 50000}, {52, 60},   {56, 250},   {60, 30},   {64, 300},  {96, 20},   {127, 10},  {128, 150},
};

/* An address the way the DFZ's are spread: in the RIRs' blocks, longer
 * prefixes mostly inside an allocation (a /19../32 already in the table),
 * else in one of a few dense PI blocks. */
static struct t6 t_dfz_addr(uint64_t *s, unsigned len, const struct t_pfx *alloc, uint32_t nalloc)
{
    static const uint64_t rir[] = {0x2001, 0x2400, 0x2600, 0x2800, 0x2a00, 0x2a10, 0x2c00, 0x2404, 0x2604, 0x2a02};
    static const uint64_t pi[] = {0x20010678, 0x2a0e0b00, 0x26200000, 0x2a0c9a40,
                                  0x2001067c, 0x24050000, 0x2a0f8000, 0x26020000};
    struct t6 a = {t_rand64(s), t_rand64(s)};
    if (len <= 32 || nalloc == 0) {
        a.hi = rir[t_rand64(s) % 10] << 48 | (a.hi & 0x000fffffffffffffull);
        return a;
    }
    if (t_rand64(s) % 100 < 80) {
        const struct t_pfx *q = &alloc[t_rand64(s) % nalloc];
        /* Inside q: the sub-prefix number skewed to the low ones, as de-aggregates are. */
        unsigned bits = len - q->len;
        uint64_t sub = t_rand64(s) % 2 ? t_rand64(s) % 16 : t_rand64(s);
        if (bits < 64)
            sub &= (1ull << bits) - 1;
        struct t6 r = {q->a.hi, q->a.lo};
        /* Place sub at bits [q->len, len). */
        unsigned sh = 128 - len;
        if (sh >= 64)
            r.hi |= sub << (sh - 64);
        else {
            r.lo |= sub << sh;
            if (sh > 0)
                r.hi |= sub >> (64 - sh);
        }
        return r;
    }
    a.hi = pi[t_rand64(s) % 8] << 32 | (a.hi & 0xffffffffull);
    return a;
}

__attribute__((unused)) static void test_rt_fib6_dfz_200k(void **state)
{
    const uint32_t n = 200000;
    struct t_set x;
    t_set_init(&x, n + 20000, 200000, 4096, 64);
    uint64_t s = t_seed() ^ 0x200000u;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Allocations (/32 and shorter) first, so that longer prefixes can nest in them. */
    uint32_t want[129] = {0}, total = 0;
    for (unsigned i = 0; i < sizeof(t_dfz) / sizeof(t_dfz[0]); i++)
        want[t_dfz[i].len] = (uint32_t)((uint64_t)t_dfz[i].per100k * n / 100000);
    want[0] = 1; /* there is one ::/0 */
    for (unsigned len = 0; len <= 128; len++)
        total += want[len];
    want[48] += n - total;
    for (unsigned len = 0; len <= 128; len++) {
        uint64_t tries = 0;
        for (uint32_t i = 0; i < want[len]; tries++) {
            if (tries > 100 * (uint64_t)want[len] + 1000)
                fail_msg("the generator finds no new /%u", len);
            if (t_set_add(&x, t_dfz_addr(&s, len, x.p, x.np), len))
                i++;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct fib_stats st;
    t_stats(x.f, &st);
    print_message("%u prefixes in %.2f s: %u next hops, %u groups (%.1f MB of tbl8), region %.0f MB\n", st.prefixes,
                  (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, st.nh, st.tbl8_used,
                  st.tbl8_used * 1024.0 / 1048576.0, (double)st.region_bytes / 1048576.0);
    assert_int_equal(st.prefixes, n);
    size_t look = T_SLOW ? 100000 : 400000;
    t_set_check(&x, &s, look, "200k loaded");
    /* The first and last address of every prefix. */
    struct t6 *edge = malloc(2 * (size_t)x.np * sizeof(*edge));
    assert_non_null(edge);
    for (uint32_t i = 0; i < x.np; i++) {
        edge[2 * i] = x.p[i].a;
        edge[2 * i + 1] = t6_last(x.p[i].a, x.p[i].len);
    }
    t_check(x.f, &x.ref, edge, 2 * (size_t)x.np, "200k first/last");
    free(edge);

    /* Churn in phases, checked after each: delete a fifth, replace a fifth, add back new ones. */
    for (uint32_t op = 0; op < n / 5; op++)
        t_set_del(&x, (uint32_t)(t_rand64(&s) % x.np));
    t_set_check(&x, &s, look / 2, "200k after deletes");
    for (uint32_t op = 0; op < n / 5; op++)
        t_set_replace(&x, (uint32_t)(t_rand64(&s) % x.np), t_rand64(&s) % 7 + 1);
    t_set_check(&x, &s, look / 2, "200k after replaces");
    for (uint32_t op = 0; op < n / 5;) {
        unsigned len = t_dfz[t_rand64(&s) % (sizeof(t_dfz) / sizeof(t_dfz[0]))].len;
        len = t_rand64(&s) % 2 ? 48 : len;
        if (t_set_add(&x, t_dfz_addr(&s, len, x.p, x.np), len))
            op++;
    }
    t_set_check(&x, &s, look / 2, "200k after re-adds");
    /* Interleaved: every operation followed by lookups near it. */
    for (uint32_t op = 0; op < (T_SLOW ? 5000u : 20000u); op++) {
        uint32_t k = (uint32_t)(t_rand64(&s) % x.np);
        struct t_pfx q = x.p[k];
        switch (op % 3) {
        case 0:
            t_set_del(&x, k);
            break;
        case 1:
            t_set_replace(&x, k, q.salt + 1);
            break;
        default:
            t_set_add(&x, t_dfz_addr(&s, q.len, x.p, x.np), q.len);
            break;
        }
        struct t6 near[4] = {q.a,
                             t6_last(q.a, q.len),
                             {q.a.hi - (q.a.lo == 0), q.a.lo - 1},
                             {t6_last(q.a, q.len).hi + (t6_last(q.a, q.len).lo == ~0ull), t6_last(q.a, q.len).lo + 1}};
        t_check(x.f, &x.ref, near, 4, "200k interleaved");
    }
    t_set_check(&x, &s, look / 2, "200k after interleaved");
    print_message("%u adds, %u deletes, %u replaces\n", x.adds, x.dels, x.replaces);
    t_set_drain(&x);
    t_set_fini(&x);
}

/* ---- a reader thread during updates ---- */

/* The candidates: a few /32s, each with nested /40, /44, /48, /56, /64, /128 at a few places. */
static const unsigned t_cand_len[] = {32, 40, 44, 48, 56, 64, 128};
#define T_NCAND (sizeof(t_cand_len) / sizeof(t_cand_len[0]))

static struct t6 t_cand_addr(uint64_t *s)
{
    uint64_t hi = 0x2a0e000000000000ull | (t_rand64(s) % 3) << 32 | (t_rand64(s) % 4) << 20 | (t_rand64(s) % 3) << 16 |
                  (t_rand64(s) % 2) << 8;
    return (struct t6){hi, t_rand64(s) % 3};
}

struct t_race {
    struct fib6 *r;
    _Atomic int stop;
    _Atomic uint64_t checked;
    _Atomic int bad;
    char why[160];
};

static void *t_reader(void *arg)
{
    struct t_race *x = arg;
    uint64_t s = 0x1234567;
    uint8_t b[64][16];
    struct t6 a[64];
    uint32_t out[64];
    uint64_t checked = 0;
    while (!atomic_load(&x->stop)) {
        for (unsigned i = 0; i < 64; i++) {
            a[i] = t_cand_addr(&s);
            t6_bytes(a[i], b[i]);
        }
        fib6_read_begin(x->r);
        fib6_lookup_burst(x->r, (const uint8_t(*)[16])b, out, 64);
        for (unsigned i = 0; i < 64 && !atomic_load(&x->bad); i++) {
            /* The /16 never goes, so every address routes; the next hop must be
             * whole and be that of a prefix covering the address. */
            bool ok = false;
            struct fib6_nh got = {.port = 0};
            if (out[i] != FIB6_MISS) {
                got = fib6_nh_at(x->r, out[i]);
                struct fib6_nh base = t6_nh_of(t6_mask(a[i], 16), 16, 0, 0);
                ok = t6_nh_eq(&got, &base);
                for (unsigned k = 0; k < T_NCAND && !ok; k++)
                    for (uint64_t salt = 0; salt < 3 && !ok; salt++) {
                        struct fib6_nh c = t6_nh_of(t6_mask(a[i], t_cand_len[k]), t_cand_len[k], salt, 0);
                        ok = t6_nh_eq(&got, &c);
                    }
            }
            if (!ok) {
                char s6[64];
                snprintf(x->why, sizeof(x->why), "%s -> nh %u (port %u, %s), which no covering prefix routes to",
                         t6_str(a[i], s6, sizeof(s6)), out[i], got.port, t6_nh_sane(&got) ? "whole" : "torn");
                atomic_store(&x->bad, 1);
            }
        }
        fib6_read_end(x->r);
        checked += 64;
        atomic_store(&x->checked, checked); /* t_wait_reader waits on the first */
    }
    return NULL;
}

static void test_rt_fib6_concurrent_reader(void **state)
{
    /* Few groups and next hops, so that both are recycled all the time. */
    struct t_fib6 *f = t_fib6_new(8192, 96, 512);
    struct fib6_nh base = t6_nh_of(A6(0x2a0e000000000000ull, 0), 16, 0, 0);
    assert_int_equal(t_add(&f->w, A6(0x2a0e000000000000ull, 0), 16, &base), 0);
    struct t_race x = {.r = &f->r};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, t_reader, &x), 0);
    t_wait_reader(&x.checked);
    uint64_t s = t_seed() ^ 99;
    /* Up to 600,000 updates (40,000 under a sanitizer), 4 s at most: on a
     * loaded machine the writer waits for a descheduled reader to leave. */
    unsigned iters = T_SLOW ? 40000 : 600000, again = 0, full = 0, done = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 0; i < iters && !atomic_load(&x.bad); i++, done++) {
        if (i % 1024 == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (t1.tv_sec - t0.tv_sec >= 4)
                break;
        }
        unsigned len = t_cand_len[t_rand64(&s) % T_NCAND];
        struct t6 a = t6_mask(t_cand_addr(&s), len);
        struct fib6_nh nh = t6_nh_of(a, len, t_rand64(&s) % 3, 0);
        int ret = t_add(&f->w, a, len, &nh);
        if (ret == -EEXIST)
            ret = t_rand64(&s) % 2 ? t_del(&f->w, a, len) : t_replace(&f->w, a, len, &nh);
        if (ret == -EAGAIN)
            again++;
        else if (ret == -ENOSPC)
            full++;
        else
            assert_int_equal(ret, 0);
    }
    atomic_store(&x.stop, 1);
    pthread_join(th, NULL);
    if (atomic_load(&x.bad))
        fail_msg("reader: %s", x.why);
    struct fib_stats st;
    t_stats(f, &st);
    print_message("%u updates, %llu lookups checked, %u -EAGAIN, %u -ENOSPC; %u prefixes, %u groups, %u next hops\n",
                  done, (unsigned long long)atomic_load(&x.checked), again, full, st.prefixes, st.tbl8_used, st.nh);
    assert_true(atomic_load(&x.checked) > 0);
    assert_true(done >= 1000);
    t_fib6_free(f);
}

static struct timespec t_start;

static int t_time_setup(void **state)
{
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    return 0;
}

static int t_time_teardown(void **state)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    print_message("  %.2f s\n", (double)(t.tv_sec - t_start.tv_sec) + (double)(t.tv_nsec - t_start.tv_nsec) / 1e9);
    return 0;
}

int main(void)
{
    print_message("seed %llu (RR_TEST_SEED)\n", (unsigned long long)t_seed());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_fib6_nested_delete_restores, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_snapshot, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_siblings_same_nh, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_args_replace_get, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_iterate, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_capacity, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_attach_checks, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_shared_readers, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_bounds_checked, t_time_setup, t_time_teardown),
#ifndef T_TSAN /* 16M-entry /0 writes and big tables are slow under TSan and race nothing */
        cmocka_unit_test_setup_teardown(test_rt_fib6_default_and_host, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_random_small, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_random_20k, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib6_dfz_200k, t_time_setup, t_time_teardown),
#endif
        cmocka_unit_test_setup_teardown(test_rt_fib6_concurrent_reader, t_time_setup, t_time_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
