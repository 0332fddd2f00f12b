/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_fib6.c: the IPv6 FIB (tables/fib6.h, fib6_write.c, and
 * the plumbing both FIBs share: fib.c, fib_common.c) against a simple
 * reference LPM (a hash of prefixes probed at every length that has
 * one): the edge cases (/0, /128, nested prefixes, a delete restoring the
 * covering route, replace, next-hop sharing, every capacity running out
 * with a clean error and nothing changed), the sealed mapping, a readers'
 * region shared with the IPv4 FIB, and a corrupt region (every bounds
 * check). Random sets, the DFZ-sized table and the concurrent reader:
 * test_rt_fib6_bulk.c (both also built under ThreadSanitizer, -DT_TSAN).
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
#include "t_fib6_ref.h"

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
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
