/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_fib.c: the DIR-24-8 FIB against a brute-force reference
 * (random prefix sets with adds and deletes interleaved with lookups), the
 * edge cases (/0, /32, covering routes restored on delete, replace, next-hop
 * dedup, capacity), a 1M-prefix table, the read-only reader mapping, and a
 * reader thread that must never see a torn or impossible next hop while the
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
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tables/fib_write.h"
#include "t_reader.h"
#include "t_slow.h"

#define T_IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

static uint32_t t_mask(unsigned len)
{
    return len == 0 ? 0 : ~0u << (32 - len);
}

/* ---- the reference: a hash of (prefix, len) -> nh probed at every length ---- */

struct t_ref_slot {
    uint64_t key; /* addr << 6 | len, +1 so that 0 is empty */
    struct fib_nh nh;
    int dead;
};

struct t_ref {
    struct t_ref_slot *s;
    uint32_t mask;
    uint32_t n;
    uint32_t count[33];
};

static uint32_t t_h(uint64_t k)
{
    k *= 0x9e3779b97f4a7c15ull;
    return (uint32_t)(k >> 32);
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

static struct t_ref_slot *t_ref_slot(const struct t_ref *r, uint32_t addr, unsigned len, bool for_insert)
{
    uint64_t key = ((uint64_t)addr << 6 | len) + 1;
    struct t_ref_slot *tomb = NULL;
    for (uint32_t i = t_h(key) & r->mask;; i = (i + 1) & r->mask) {
        struct t_ref_slot *s = &r->s[i];
        if (s->key == key)
            return s;
        if (s->key == 0)
            return for_insert ? (tomb ? tomb : s) : NULL;
        if (s->dead && !tomb)
            tomb = s;
    }
}

static bool t_ref_get(const struct t_ref *r, uint32_t addr, unsigned len, struct fib_nh *nh)
{
    struct t_ref_slot *s = t_ref_slot(r, addr, len, false);
    if (!s || s->dead)
        return false;
    *nh = s->nh;
    return true;
}

static void t_ref_set(struct t_ref *r, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    struct t_ref_slot *s = t_ref_slot(r, addr, len, true);
    if (s->key == 0 || s->dead) {
        r->n++;
        r->count[len]++;
    }
    s->key = ((uint64_t)addr << 6 | len) + 1;
    s->nh = *nh;
    s->dead = 0;
}

static void t_ref_del(struct t_ref *r, uint32_t addr, unsigned len)
{
    struct t_ref_slot *s = t_ref_slot(r, addr, len, false);
    assert_non_null(s);
    s->dead = 1;
    r->n--;
    r->count[len]--;
}

static bool t_ref_lookup(const struct t_ref *r, uint32_t addr, struct fib_nh *nh)
{
    for (int l = 32; l >= 0; l--)
        if (r->count[l] && t_ref_get(r, addr & t_mask((unsigned)l), (unsigned)l, nh))
            return true;
    return false;
}

/* ---- fixture ---- */

struct t_fib {
    int fd, rfd;
    struct fib w, r;
};

static struct t_fib *t_fib_new(uint32_t prefixes, uint32_t groups, uint32_t nh)
{
    struct t_fib *f = calloc(1, sizeof(*f));
    struct ipc_err err = {{0}};
    struct fib_params p = {.max_prefixes = prefixes, .tbl8_groups = groups, .max_nh = nh};
    assert_non_null(f);
    if (fib_create("t-fib", &p, &f->w, &f->fd, &f->rfd, &err) != 0)
        fail_msg("create: %s", err.msg);
    if (fib_attach(&f->r, f->fd, f->rfd, 0, &err) != 0)
        fail_msg("attach: %s", err.msg);
    return f;
}

static void t_fib_free(struct t_fib *f)
{
    fib_detach(&f->r);
    fib_detach(&f->w);
    close(f->fd);
    close(f->rfd);
    free(f);
}

static struct fib_nh t_nh(uint16_t port, uint32_t gw)
{
    struct fib_nh nh = {.gw = gw, .port = port, .flags = 0};
    return nh;
}

static void t_expect(struct t_fib *f, uint32_t addr, const struct fib_nh *want)
{
    uint32_t i = fib_lookup(&f->r, addr);
    if (!want) {
        if (i != FIB_MISS)
            fail_msg("%08x: expected no route, got nh %u", addr, i);
        return;
    }
    if (i == FIB_MISS)
        fail_msg("%08x: expected port %u gw %08x, got no route", addr, want->port, want->gw);
    struct fib_nh got = fib_nh_at(&f->r, i);
    if (got.port != want->port || got.gw != want->gw)
        fail_msg("%08x: expected port %u gw %08x, got port %u gw %08x", addr, want->port, want->gw, got.port, got.gw);
}

/* ---- edge cases ---- */

__attribute__((unused)) static void test_rt_fib_default_and_host(void **state)
{
    struct t_fib *f = t_fib_new(1024, 64, 64);
    struct fib_nh a = t_nh(1, T_IP(10, 1, 0, 2)), b = t_nh(2, 0), c = t_nh(0, T_IP(10, 0, 0, 9));
    t_expect(f, 0, NULL);
    t_expect(f, 0xffffffffu, NULL);
    assert_int_equal(fib_add(&f->w, 0, 0, &a), 0);
    t_expect(f, 0, &a);
    t_expect(f, 0xffffffffu, &a);
    t_expect(f, T_IP(192, 168, 1, 1), &a);
    assert_int_equal(fib_add(&f->w, T_IP(192, 168, 1, 1), 32, &b), 0);
    t_expect(f, T_IP(192, 168, 1, 1), &b);
    t_expect(f, T_IP(192, 168, 1, 0), &a);
    t_expect(f, T_IP(192, 168, 1, 2), &a);
    assert_int_equal(fib_add(&f->w, 0xffffffffu, 32, &c), 0);
    t_expect(f, 0xffffffffu, &c);
    t_expect(f, 0xfffffffeu, &a);
    assert_int_equal(fib_del(&f->w, 0, 0), 0);
    t_expect(f, T_IP(192, 168, 1, 0), NULL);
    t_expect(f, T_IP(192, 168, 1, 1), &b);
    assert_int_equal(fib_del(&f->w, T_IP(192, 168, 1, 1), 32), 0);
    t_expect(f, T_IP(192, 168, 1, 1), NULL);
    assert_int_equal(fib_del(&f->w, 0xffffffffu, 32), 0);
    struct fib_stats st;
    fib_get_stats(&f->w, &st);
    assert_int_equal(st.prefixes, 0);
    assert_int_equal(st.nh, 0);
    assert_int_equal(st.tbl8_used, 0); /* both groups folded back */
    t_fib_free(f);
}

static void test_rt_fib_overlap_delete_restores(void **state)
{
    struct t_fib *f = t_fib_new(1024, 64, 64);
    struct fib_nh n8 = t_nh(0, T_IP(1, 0, 0, 8)), n16 = t_nh(1, T_IP(1, 0, 0, 16)), n24 = t_nh(2, T_IP(1, 0, 0, 24)),
                 n28 = t_nh(0, T_IP(1, 0, 0, 28)), n30 = t_nh(1, T_IP(1, 0, 0, 30));
    /* Added out of order: longer first, then the covering ones must not overwrite them. */
    assert_int_equal(fib_add(&f->w, T_IP(10, 1, 2, 16), 28, &n28), 0);
    assert_int_equal(fib_add(&f->w, T_IP(10, 1, 0, 0), 16, &n16), 0);
    assert_int_equal(fib_add(&f->w, T_IP(10, 0, 0, 0), 8, &n8), 0);
    assert_int_equal(fib_add(&f->w, T_IP(10, 1, 2, 0), 24, &n24), 0);
    assert_int_equal(fib_add(&f->w, T_IP(10, 1, 2, 20), 30, &n30), 0);
    assert_int_equal(fib_add(&f->w, T_IP(10, 1, 2, 0), 24, &n8), -EEXIST);
    assert_int_equal(fib_add(&f->w, T_IP(10, 1, 2, 1), 24, &n8), -EINVAL); /* host bits */
    assert_int_equal(fib_add(&f->w, T_IP(10, 1, 2, 0), 33, &n8), -EINVAL);
    t_expect(f, T_IP(10, 9, 9, 9), &n8);
    t_expect(f, T_IP(10, 1, 9, 9), &n16);
    t_expect(f, T_IP(10, 1, 2, 1), &n24);
    t_expect(f, T_IP(10, 1, 2, 17), &n28);
    t_expect(f, T_IP(10, 1, 2, 21), &n30);
    t_expect(f, T_IP(10, 1, 2, 31), &n28);
    t_expect(f, T_IP(10, 1, 2, 32), &n24);
    t_expect(f, T_IP(11, 0, 0, 0), NULL);

    /* Deleting the /16 restores the /8 in its range, but not over the /24. */
    assert_int_equal(fib_del(&f->w, T_IP(10, 1, 0, 0), 16), 0);
    assert_int_equal(fib_del(&f->w, T_IP(10, 1, 0, 0), 16), -ENOENT);
    t_expect(f, T_IP(10, 1, 9, 9), &n8);
    t_expect(f, T_IP(10, 1, 2, 1), &n24);
    /* Deleting the /24 restores the /8 inside the tbl8 group, around the /28 and /30. */
    assert_int_equal(fib_del(&f->w, T_IP(10, 1, 2, 0), 24), 0);
    t_expect(f, T_IP(10, 1, 2, 1), &n8);
    t_expect(f, T_IP(10, 1, 2, 17), &n28);
    t_expect(f, T_IP(10, 1, 2, 21), &n30);
    /* Deleting the /28 restores the /8 under it but keeps the /30. */
    assert_int_equal(fib_del(&f->w, T_IP(10, 1, 2, 16), 28), 0);
    t_expect(f, T_IP(10, 1, 2, 17), &n8);
    t_expect(f, T_IP(10, 1, 2, 21), &n30);
    assert_int_equal(fib_del(&f->w, T_IP(10, 1, 2, 20), 30), 0);
    t_expect(f, T_IP(10, 1, 2, 21), &n8);
    struct fib_stats st;
    fib_get_stats(&f->w, &st);
    assert_int_equal(st.tbl8_used, 0);
    assert_int_equal(st.prefixes, 1);
    assert_int_equal(st.nh, 1);
    /* Replace changes the next hop in place; the old one is released. */
    assert_int_equal(fib_replace(&f->w, T_IP(10, 0, 0, 0), 8, &n16), 0);
    t_expect(f, T_IP(10, 1, 2, 21), &n16);
    fib_get_stats(&f->w, &st);
    assert_int_equal(st.nh, 1);
    struct fib_nh got;
    assert_int_equal(fib_get(&f->w, T_IP(10, 0, 0, 0), 8, &got), 0);
    assert_int_equal(got.gw, n16.gw);
    assert_int_equal(fib_get(&f->w, T_IP(10, 0, 0, 0), 9, &got), -ENOENT);
    t_fib_free(f);
}

static int t_count_cb(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    (*(unsigned *)arg)++;
    return 0;
}

static void test_rt_fib_nh_dedup_and_capacity(void **state)
{
    struct t_fib *f = t_fib_new(8, 2, 4);
    struct fib_nh a = t_nh(1, T_IP(10, 1, 0, 2));
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(fib_add(&f->w, T_IP(20, i, 0, 0), 16, &a), 0);
    assert_int_equal(fib_add(&f->w, T_IP(21, 0, 0, 0), 16, &a), -ENOSPC); /* prefixes */
    struct fib_stats st;
    fib_get_stats(&f->w, &st);
    assert_int_equal(st.nh, 1); /* eight routes, one next hop */
    unsigned n = 0;
    assert_int_equal(fib_iterate(&f->w, t_count_cb, &n), 0);
    assert_int_equal(n, 8);
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(fib_del(&f->w, T_IP(20, i, 0, 0), 16), 0);
    /* tbl8 capacity: 2 groups; a third /25 in a new /24 fails cleanly. */
    assert_int_equal(fib_add(&f->w, T_IP(30, 0, 0, 0), 25, &a), 0);
    assert_int_equal(fib_add(&f->w, T_IP(30, 0, 1, 0), 25, &a), 0);
    assert_int_equal(fib_add(&f->w, T_IP(30, 0, 2, 0), 25, &a), -ENOSPC);
    t_expect(f, T_IP(30, 0, 2, 1), NULL);
    /* Freed groups come back once no reader can be inside them. */
    assert_int_equal(fib_del(&f->w, T_IP(30, 0, 0, 0), 25), 0);
    assert_int_equal(fib_add(&f->w, T_IP(30, 0, 2, 0), 25, &a), 0);
    t_expect(f, T_IP(30, 0, 2, 1), &a);
    /* A reader inside a batch that started before the unlink pins the group. */
    fib_read_begin(&f->r);
    assert_int_equal(fib_del(&f->w, T_IP(30, 0, 1, 0), 25), 0);
    assert_int_equal(fib_add(&f->w, T_IP(30, 0, 3, 0), 25, &a), -EAGAIN);
    fib_read_end(&f->r);
    assert_int_equal(fib_add(&f->w, T_IP(30, 0, 3, 0), 25, &a), 0);
    /* A dead reader's slot is released by the supervisor. */
    fib_read_begin(&f->r);
    assert_int_equal(fib_del(&f->w, T_IP(30, 0, 3, 0), 25), 0);
    assert_int_equal(fib_add(&f->w, T_IP(30, 0, 4, 0), 25, &a), -EAGAIN);
    fib_reader_reset(&f->w, 0);
    assert_int_equal(fib_add(&f->w, T_IP(30, 0, 4, 0), 25, &a), 0);
    /* Next hops: 4 at most, a fifth distinct one is refused. */
    for (unsigned i = 0; i < 3; i++) {
        struct fib_nh x = t_nh(2, T_IP(10, 2, 0, 10 + i));
        assert_int_equal(fib_add(&f->w, T_IP(40, i, 0, 0), 16, &x), 0);
    }
    struct fib_nh y = t_nh(2, T_IP(10, 2, 0, 99));
    assert_int_equal(fib_add(&f->w, T_IP(41, 0, 0, 0), 16, &y), -ENOSPC);
    t_fib_free(f);
}

/* Batches (fib_gen_defer): a batch's withdrawals retire for one generation
 * switch, made at its end (fib_gen_commit), where each makes its own
 * otherwise; what they retired is not reused while a reader that began
 * before the switch is inside a batch; and an update that needs such an
 * object makes the switch at once instead of waiting for the batch's end. */
static void test_rt_fib_gen_batch(void **state)
{
    (void)state;
    struct t_fib *f = t_fib_new(64, 8, 16);
    struct fib_stats st;
    struct fib_nh a = t_nh(1, T_IP(10, 1, 0, 2));
    for (unsigned round = 0; round < 2; round++) {
        for (unsigned i = 0; i < 8; i++) { /* a group and a next hop each */
            struct fib_nh x = t_nh(1, T_IP(10, 1, 0, 10 + i));
            assert_int_equal(fib_add(&f->w, T_IP(30, 0, i, 0), 25, &x), 0);
        }
        fib_get_stats(&f->w, &st);
        uint64_t g0 = st.gen;
        fib_gen_defer(&f->w, round == 1);
        fib_read_begin(&f->r); /* a reader inside a batch since before the withdrawals */
        for (unsigned i = 0; i < 8; i++)
            assert_int_equal(fib_del(&f->w, T_IP(30, 0, i, 0), 25), 0);
        fib_get_stats(&f->w, &st);
        assert_int_equal(st.tbl8_retired, 8);
        if (round == 0) {
            assert_int_equal(st.gen, g0 + 8); /* one switch a withdrawal */
            assert_false(fib_gen_commit(&f->w, NULL));
        } else {
            assert_int_equal(st.gen, g0); /* none yet */
            assert_true(fib_gen_commit(&f->w, NULL));
            fib_get_stats(&f->w, &st);
            assert_int_equal(st.gen, g0 + 1); /* one for the eight */
            assert_false(fib_gen_commit(&f->w, NULL));
        }
        /* The reader pins what was retired after it began. */
        assert_int_equal(fib_add(&f->w, T_IP(31, 0, 0, 0), 25, &a), -EAGAIN);
        fib_read_end(&f->r);
        assert_int_equal(fib_add(&f->w, T_IP(31, 0, 0, 0), 25, &a), 0);
        t_expect(f, T_IP(31, 0, 0, 1), &a);
        assert_int_equal(fib_del(&f->w, T_IP(31, 0, 0, 0), 25), 0);
        fib_gen_commit(&f->w, NULL);
        fib_reclaim(&f->w);
    }
    fib_gen_defer(&f->w, false);
    t_fib_free(f);

    /* One group: the update that needs the one a batch retired switches now. */
    f = t_fib_new(16, 1, 8);
    assert_int_equal(fib_add(&f->w, T_IP(40, 0, 0, 0), 25, &a), 0);
    fib_gen_defer(&f->w, true);
    assert_int_equal(fib_del(&f->w, T_IP(40, 0, 0, 0), 25), 0);
    fib_get_stats(&f->w, &st);
    uint64_t g = st.gen;
    fib_read_begin(&f->r); /* after the unlink, before any switch: its slot is g */
    assert_int_equal(fib_add(&f->w, T_IP(40, 0, 1, 0), 25, &a), -EAGAIN);
    fib_get_stats(&f->w, &st);
    assert_int_equal(st.gen, g + 1); /* the switch the add needed */
    fib_read_end(&f->r);
    fib_read_begin(&f->r); /* a batch from after the switch pins nothing of it */
    assert_int_equal(fib_add(&f->w, T_IP(40, 0, 1, 0), 25, &a), 0);
    fib_read_end(&f->r);
    t_expect(f, T_IP(40, 0, 1, 1), &a);
    assert_false(fib_gen_commit(&f->w, NULL));
    t_fib_free(f);
}

/* What a new supervisor reads back from a dead one's FIB (supervisor/adopt.c):
 * every prefix with its next hop, through a read-only mapping of the sealed
 * region, and a truncated or foreign region refused. */
struct t_snap {
    unsigned n, bad;
    const struct fib *w;
};

static int t_snap_cb(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    struct t_snap *t = arg;
    struct fib_nh want;
    t->n++;
    if (fib_get(t->w, addr, len, &want) != 0 || want.gw != nh->gw || want.port != nh->port)
        t->bad++;
    return 0;
}

static void test_rt_fib_snapshot(void **state)
{
    (void)state;
    struct t_fib *f = t_fib_new(4096, 128, 64);
    for (unsigned i = 0; i < 300; i++) { /* four /26s in each of 75 /24s */
        struct fib_nh nh = t_nh((uint16_t)(i % 5), T_IP(10, 0, i % 7, 1));
        assert_int_equal(fib_add(&f->w, T_IP(20, i >> 2, 0, (i & 3) << 6), 26, &nh), 0);
    }
    struct fib_nh d = t_nh(1, T_IP(10, 0, 0, 9));
    assert_int_equal(fib_add(&f->w, 0, 0, &d), 0);
    assert_int_equal(fib_del(&f->w, T_IP(20, 0, 0, 0), 26), 0);
    struct t_snap t = {.w = &f->w};
    bool dirty = true;
    struct ipc_err err = {{0}};
    assert_int_equal(fib_snapshot(f->fd, t_snap_cb, &t, &dirty, &err), 0);
    assert_int_equal(t.n, 300); /* 299 /26s and the default */
    assert_int_equal(t.bad, 0);
    assert_false(dirty);
    /* Another kind of region is refused, not walked. */
    assert_true(fib_snapshot(f->rfd, t_snap_cb, &t, &dirty, &err) < 0);
    assert_int_equal(t.n, 300);
    t_fib_free(f);
}

static void test_rt_fib_attach_checks(void **state)
{
    struct t_fib *f = t_fib_new(64, 4, 4);
    struct fib x;
    struct ipc_err err = {{0}};
    assert_int_equal(fib_attach(&x, f->fd, f->rfd, 16, &err), -EINVAL);
    /* The tables are sealed: no second writer, and a reader maps them read-only. */
    assert_int_equal(fib_attach(&x, f->fd, f->rfd, FIB_WRITER, &err), -EPERM);
    /* A reader cannot change what it maps. */
    assert_int_equal(fib_add(&f->r, 0, 0, &(struct fib_nh){0}), -EINVAL);
    /* Writer died mid-update: whoever attaches next is told to rebuild. */
    uint32_t *dirty = (uint32_t *)((uint8_t *)f->w.m.base + 4096 + 6 * 4 + 12 * 8);
    *dirty = 1;
    assert_int_equal(fib_attach(&x, f->fd, f->rfd, FIB_WRITER, &err), -EUCLEAN);
    *dirty = 0;
    /* Sealed means sealed for everyone, whatever way they got the fd: no
     * writable mapping, no write(), not through /proc either (how another
     * process of the services' uid reaches a router's fd). */
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
    /* The writer's own mapping still writes. */
    struct fib_nh nh = {.gw = T_IP(10, 0, 0, 9), .port = 1};
    assert_int_equal(fib_add(&f->w, T_IP(77, 0, 0, 0), 8, &nh), 0);
    assert_int_equal(fib_lookup(&f->r, T_IP(77, 1, 2, 3)) != FIB_MISS, 1);
    t_fib_free(f);
}

/* ---- random sets against the reference ---- */

static unsigned t_rand_len(uint64_t *s)
{
    unsigned r = (unsigned)(t_rand64(s) % 100);
    if (r < 2)
        return 6 + (unsigned)(t_rand64(s) % 7); /* a few short ones: big ranges */
    if (r < 60)
        return 13 + (unsigned)(t_rand64(s) % 12);
    return 25 + (unsigned)(t_rand64(s) % 8); /* tbl8 territory */
}

static void t_random_rounds(uint32_t nprefix, unsigned rounds, uint32_t lookups, uint64_t seed)
{
    struct t_fib *f = t_fib_new(nprefix, nprefix / 2 + 64, 1024);
    struct t_ref ref;
    t_ref_init(&ref, nprefix);
    uint64_t s = seed;
    /* Prefixes live in a few /8s so that they overlap a lot. */
    static const uint8_t tops[] = {10, 172, 192, 100};
    uint32_t *keys = calloc(nprefix, sizeof(uint32_t) * 2);
    uint32_t nkeys = 0;
    for (unsigned round = 0; round < rounds; round++) {
        uint32_t ops = round == 0 ? nprefix / 2 : nprefix / 8;
        for (uint32_t op = 0; op < ops; op++) {
            bool del = nkeys > 0 && (round > 0 && t_rand64(&s) % 3 == 0);
            if (del) {
                uint32_t k = (uint32_t)(t_rand64(&s) % nkeys);
                uint32_t addr = keys[2 * k], len = keys[2 * k + 1];
                assert_int_equal(fib_del(&f->w, addr, len), 0);
                t_ref_del(&ref, addr, len);
                keys[2 * k] = keys[2 * (nkeys - 1)];
                keys[2 * k + 1] = keys[2 * (nkeys - 1) + 1];
                nkeys--;
                continue;
            }
            if (nkeys >= nprefix)
                continue;
            unsigned len = t_rand_len(&s);
            uint32_t addr = ((uint32_t)tops[t_rand64(&s) % 4] << 24 | (uint32_t)(t_rand64(&s) & 0xffffff)) &
                            t_mask(len);
            struct fib_nh nh = t_nh((uint16_t)(t_rand64(&s) % 4), (uint32_t)(t_rand64(&s) % 200) + 1);
            struct fib_nh old;
            int ret = fib_add(&f->w, addr, len, &nh);
            if (t_ref_get(&ref, addr, len, &old)) {
                assert_int_equal(ret, -EEXIST);
                if (t_rand64(&s) % 2) {
                    assert_int_equal(fib_replace(&f->w, addr, len, &nh), 0);
                    t_ref_set(&ref, addr, len, &nh);
                }
                continue;
            }
            if (ret != 0)
                fail_msg("add %08x/%u: %d", addr, len, ret);
            t_ref_set(&ref, addr, len, &nh);
            keys[2 * nkeys] = addr;
            keys[2 * nkeys + 1] = len;
            nkeys++;
        }
        /* Lookups: half uniform in the /8s, half just inside or beside a live prefix. */
        uint32_t addrs[64], out[64];
        for (uint32_t done = 0; done < lookups; done += 64) {
            for (unsigned i = 0; i < 64; i++) {
                if (i & 1 || nkeys == 0) {
                    addrs[i] = (uint32_t)tops[t_rand64(&s) % 4] << 24 | (uint32_t)(t_rand64(&s) & 0xffffff);
                } else {
                    uint32_t k = (uint32_t)(t_rand64(&s) % nkeys);
                    uint32_t span = keys[2 * k + 1] == 0 ? ~0u : ~t_mask(keys[2 * k + 1]);
                    addrs[i] = keys[2 * k] + (uint32_t)(t_rand64(&s) & span) + (uint32_t)(t_rand64(&s) % 3) - 1;
                }
            }
            fib_read_begin(&f->r);
            fib_lookup_burst(&f->r, addrs, out, 64);
            for (unsigned i = 0; i < 64; i++) {
                struct fib_nh want;
                bool has = t_ref_lookup(&ref, addrs[i], &want);
                if (!has) {
                    if (out[i] != FIB_MISS)
                        fail_msg("round %u: %08x: expected no route, got %u", round, addrs[i], out[i]);
                    continue;
                }
                if (out[i] == FIB_MISS)
                    fail_msg("round %u: %08x: expected a route, got none", round, addrs[i]);
                struct fib_nh got = fib_nh_at(&f->r, out[i]);
                if (got.port != want.port || got.gw != want.gw)
                    fail_msg("round %u: %08x: want %u/%u got %u/%u", round, addrs[i], want.port, want.gw, got.port,
                             got.gw);
            }
            fib_read_end(&f->r);
        }
        struct fib_stats st;
        fib_get_stats(&f->w, &st);
        assert_int_equal(st.prefixes, ref.n);
    }
    /* Delete everything: the table must be empty again, every group folded back. */
    for (uint32_t k = 0; k < nkeys; k++)
        assert_int_equal(fib_del(&f->w, keys[2 * k], keys[2 * k + 1]), 0);
    struct fib_stats st;
    fib_get_stats(&f->w, &st);
    assert_int_equal(st.prefixes, 0);
    assert_int_equal(st.nh, 0);
    assert_int_equal(st.tbl8_used, 0);
    for (uint32_t i = 0; i < (1u << 24); i += 4099)
        assert_int_equal(ipc_ld_rlx(&f->r.m.tbl24[i]), 0);
    free(keys);
    free(ref.s);
    t_fib_free(f);
}

__attribute__((unused)) static void test_rt_fib_random_small(void **state)
{
    for (uint64_t seed = 1; seed <= 5; seed++)
        t_random_rounds(2000, 6, 20000, seed * 0x9e3779b97f4a7c15ull);
}

__attribute__((unused)) static void test_rt_fib_random_100k(void **state)
{
    /* The figure: 100,000 prefixes, 1,000,000 lookups, updates interleaved. */
    t_random_rounds(T_SLOW ? 20000 : 100000, 10, T_SLOW ? 20000 : 100000, 42);
}

/* ---- a full table ---- */

/*
 * Prefix lengths of a 2024 IPv4 BGP table (routeviews, ~950k prefixes):
 * /24 ~60 %, /23 ~9 %, /22 ~12 %, /21 ~5 %, /20 ~5 %, /19 ~3 %, /18 ~2 %,
 * /17 ~1 %, /16 ~1.5 %, /8../15 ~0.5 %, plus 1 % of /25../32 (a FIB also
 * holds connected and host routes) so that tbl8 groups are exercised.
 */
static unsigned t_bgp_len(uint64_t *s)
{
    unsigned r = (unsigned)(t_rand64(s) % 1000);
    static const struct {
        unsigned upto, len;
    } d[] = {{600, 24}, {690, 23}, {810, 22}, {860, 21}, {910, 20}, {940, 19}, {960, 18}, {970, 17}, {985, 16}};
    for (unsigned i = 0; i < sizeof(d) / sizeof(d[0]); i++)
        if (r < d[i].upto)
            return d[i].len;
    if (r < 990)
        return 8 + (unsigned)(t_rand64(s) % 8);
    return 25 + (unsigned)(t_rand64(s) % 8);
}

__attribute__((unused)) static void test_rt_fib_1m(void **state)
{
    uint32_t n = T_SLOW ? 200000 : 1000000;
    struct t_fib *f = t_fib_new(n + 1000, 16384, 4096);
    struct t_ref ref;
    t_ref_init(&ref, n);
    uint64_t s = 7;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t added = 0;
    while (added < n) {
        unsigned len = t_bgp_len(&s);
        uint32_t addr = (uint32_t)t_rand64(&s) & t_mask(len);
        if ((addr >> 24) == 0 || (addr >> 24) >= 224)
            continue;
        struct fib_nh nh = t_nh((uint16_t)(t_rand64(&s) % 4), (uint32_t)(t_rand64(&s) % 1000) + 1);
        int ret = fib_add(&f->w, addr, len, &nh);
        if (ret == -EEXIST)
            continue;
        if (ret != 0)
            fail_msg("add %u: %d", added, ret);
        t_ref_set(&ref, addr, len, &nh);
        added++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct fib_stats st;
    fib_get_stats(&f->w, &st);
    print_message("%u prefixes in %.2f s, %u next hops, %u tbl8 groups, region %.1f MB\n", st.prefixes,
                  (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, st.nh, st.tbl8_used,
                  (double)st.region_bytes / 1048576.0);
    assert_int_equal(st.prefixes, n);
    assert_true(st.region_bytes < 400u * 1048576u);
    uint32_t addrs[64], out[64];
    for (uint32_t done = 0; done < (T_SLOW ? 200000u : 1000000u); done += 64) {
        for (unsigned i = 0; i < 64; i++)
            addrs[i] = (uint32_t)t_rand64(&s);
        fib_read_begin(&f->r);
        fib_lookup_burst(&f->r, addrs, out, 64);
        fib_read_end(&f->r);
        for (unsigned i = 0; i < 64; i++) {
            struct fib_nh want;
            bool has = t_ref_lookup(&ref, addrs[i], &want);
            assert_int_equal(out[i] != FIB_MISS, has);
            if (has) {
                struct fib_nh got = fib_nh_at(&f->r, out[i]);
                assert_int_equal(got.gw, want.gw);
                assert_int_equal(got.port, want.port);
            }
        }
    }
    free(ref.s);
    t_fib_free(f);
}

/* ---- a reader thread during updates ---- */

/* The next hop each candidate prefix routes to: a pure function of the prefix. */
static struct fib_nh t_cand_nh(uint32_t addr, unsigned len)
{
    uint32_t h = t_h((uint64_t)addr << 6 | len);
    return t_nh((uint16_t)(len % 7), (h | 1) ^ len);
}

static const unsigned t_cand_len[] = {8, 16, 20, 24, 25, 26, 28, 30, 32};
#define T_NCAND (sizeof(t_cand_len) / sizeof(t_cand_len[0]))

struct t_race {
    struct fib *r;
    _Atomic int stop;
    _Atomic uint64_t checked;
    _Atomic int bad;
    uint32_t bad_addr, bad_gw;
    uint16_t bad_port;
};

static void *t_reader(void *arg)
{
    struct t_race *x = arg;
    uint64_t s = 0x1234567;
    uint32_t addrs[64], out[64];
    uint64_t checked = 0;
    while (!atomic_load(&x->stop)) {
        for (unsigned i = 0; i < 64; i++)
            addrs[i] = T_IP(10, t_rand64(&s) % 5, t_rand64(&s) % 25, t_rand64(&s) & 255);
        fib_read_begin(x->r);
        fib_lookup_burst(x->r, addrs, out, 64);
        for (unsigned i = 0; i < 64; i++) {
            bool ok = false;
            struct fib_nh got = {0};
            if (out[i] != FIB_MISS) {
                got = fib_nh_at(x->r, out[i]);
                for (unsigned k = 0; k < T_NCAND && !ok; k++) {
                    struct fib_nh c = t_cand_nh(addrs[i] & t_mask(t_cand_len[k]), t_cand_len[k]);
                    ok = c.gw == got.gw && c.port == got.port;
                }
            }
            if (!ok && !atomic_load(&x->bad)) {
                x->bad_addr = addrs[i];
                x->bad_gw = got.gw;
                x->bad_port = got.port;
                atomic_store(&x->bad, 1);
            }
        }
        fib_read_end(x->r);
        checked += 64;
        atomic_store(&x->checked, checked); /* t_wait_reader waits on the first */
    }
    return NULL;
}

static void test_rt_fib_concurrent_reader(void **state)
{
    /* Few groups and next hops, so that both are recycled all the time. */
    struct t_fib *f = t_fib_new(8192, 48, 8192);
    struct fib_nh base = t_cand_nh(T_IP(10, 0, 0, 0), 8);
    assert_int_equal(fib_add(&f->w, T_IP(10, 0, 0, 0), 8, &base), 0);
    struct t_race x = {.r = &f->r};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, t_reader, &x), 0);
    t_wait_reader(&x.checked);
    uint64_t s = 99;
    unsigned iters = T_SLOW ? 50000 : 1000000, again = 0, full = 0;
    for (unsigned i = 0; i < iters && !atomic_load(&x.bad); i++) {
        unsigned len = t_cand_len[1 + t_rand64(&s) % (T_NCAND - 1)];
        /* A few thousand candidates, so that adds and deletes balance and groups churn. */
        uint32_t addr = T_IP(10, t_rand64(&s) % 4, t_rand64(&s) % 24, (t_rand64(&s) % 16) * 16) & t_mask(len);
        struct fib_nh nh = t_cand_nh(addr, len);
        int ret = fib_add(&f->w, addr, len, &nh);
        if (ret == -EEXIST)
            ret = fib_del(&f->w, addr, len);
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
        fail_msg("reader saw %08x -> port %u gw %08x, which no prefix covering it routes to", x.bad_addr,
                 x.bad_port, x.bad_gw);
    print_message("%u updates, %llu lookups checked, %u -EAGAIN, %u -ENOSPC\n", iters,
                  (unsigned long long)atomic_load(&x.checked), again, full);
    assert_true(atomic_load(&x.checked) > 0);
    t_fib_free(f);
}

/* ---- route replace under a reader: no gap ---- */

struct t_flip {
    struct fib *r;
    _Atomic int stop;
    _Atomic uint64_t checked;
    _Atomic int bad;
    uint32_t bad_addr, bad_idx;
};

/* 10.0.5.0/24 always routes to port 3; the rest of 10.0.0.0/16 and all of
 * 10.1.0.0/28 to port 1 or port 2, whichever replace put there last: never
 * a miss, never anything else. */
static void *t_flip_reader(void *arg)
{
    struct t_flip *x = arg;
    uint64_t s = 0xfeed;
    uint32_t addrs[64], out[64];
    uint64_t checked = 0;
    while (!atomic_load(&x->stop)) {
        for (unsigned i = 0; i < 64; i++)
            addrs[i] = i % 2 ? T_IP(10, 0, t_rand64(&s) % 16, t_rand64(&s) & 255)
                             : T_IP(10, 1, 0, t_rand64(&s) % 16);
        fib_read_begin(x->r);
        fib_lookup_burst(x->r, addrs, out, 64);
        for (unsigned i = 0; i < 64; i++) {
            bool ok = out[i] != FIB_MISS;
            if (ok) {
                struct fib_nh nh = fib_nh_at(x->r, out[i]);
                bool deep = (addrs[i] & 0xffffff00u) == T_IP(10, 0, 5, 0);
                ok = deep ? nh.port == 3 : (nh.port == 1 || nh.port == 2) && nh.gw == T_IP(192, 0, 2, nh.port);
            }
            if (!ok && !atomic_load(&x->bad)) {
                x->bad_addr = addrs[i];
                x->bad_idx = out[i];
                atomic_store(&x->bad, 1);
            }
        }
        fib_read_end(x->r);
        checked += 64;
        atomic_store(&x->checked, checked); /* t_wait_reader waits on the first */
    }
    return NULL;
}

/*
 * `ringrouter route replace` moves a route with no moment of no route: a
 * reader looking up addresses of a /16 (tbl24 entries) and of a /28 (a tbl8
 * group) while the writer replaces both, back and forth between two next
 * hops, never misses and never sees a third next hop; a /24 inside the /16
 * keeps its own. Then fib_match (`route get`) names the longest prefix.
 */
static void test_rt_fib_replace_no_gap(void **state)
{
    struct t_fib *f = t_fib_new(64, 8, 16);
    struct fib_nh p1 = t_nh(1, T_IP(192, 0, 2, 1)), p2 = t_nh(2, T_IP(192, 0, 2, 2)), p3 = t_nh(3, T_IP(192, 0, 2, 3));
    assert_int_equal(fib_add(&f->w, T_IP(10, 0, 0, 0), 16, &p1), 0);
    assert_int_equal(fib_add(&f->w, T_IP(10, 0, 5, 0), 24, &p3), 0);
    assert_int_equal(fib_add(&f->w, T_IP(10, 1, 0, 0), 28, &p1), 0);
    struct t_flip x = {.r = &f->r};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, t_flip_reader, &x), 0);
    t_wait_reader(&x.checked);
    unsigned iters = T_SLOW ? 20000 : 200000;
    for (unsigned i = 0; i < iters && !atomic_load(&x.bad); i++) {
        const struct fib_nh *nh = i % 2 ? &p1 : &p2;
        /* -EAGAIN: a retired next hop is still under the reader's section
         * after the writer's 10 ms wait (the reader thread was descheduled
         * inside it, as on a loaded machine); the caller tries again. */
        int r;
        for (unsigned k = 0; (r = fib_replace(&f->w, T_IP(10, 0, 0, 0), 16, nh)) == -EAGAIN && k < 1000; k++)
            fib_reclaim(&f->w);
        assert_int_equal(r, 0);
        for (unsigned k = 0; (r = fib_replace(&f->w, T_IP(10, 1, 0, 0), 28, nh)) == -EAGAIN && k < 1000; k++)
            fib_reclaim(&f->w);
        assert_int_equal(r, 0);
        fib_reclaim(&f->w);
    }
    atomic_store(&x.stop, 1);
    pthread_join(th, NULL);
    if (atomic_load(&x.bad))
        fail_msg("reader saw %08x -> next hop %u during a replace", x.bad_addr, x.bad_idx);
    assert_true(atomic_load(&x.checked) > 0);
    print_message("%u replaces of each, %llu lookups checked\n", iters, (unsigned long long)atomic_load(&x.checked));

    uint32_t pfx;
    unsigned len;
    struct fib_nh nh;
    assert_int_equal(fib_match(&f->w, T_IP(10, 0, 5, 77), &pfx, &len, &nh), 0);
    assert_true(pfx == T_IP(10, 0, 5, 0) && len == 24 && nh.port == 3);
    assert_int_equal(fib_match(&f->w, T_IP(10, 0, 200, 1), &pfx, &len, &nh), 0);
    assert_true(pfx == T_IP(10, 0, 0, 0) && len == 16 && nh.port == 1);
    assert_int_equal(fib_match(&f->w, T_IP(10, 1, 0, 9), &pfx, &len, &nh), 0);
    assert_true(pfx == T_IP(10, 1, 0, 0) && len == 28 && nh.port == 1);
    assert_int_equal(fib_match(&f->w, T_IP(10, 1, 0, 16), &pfx, &len, &nh), -ENOENT);
    assert_int_equal(fib_add(&f->w, 0, 0, &p2), 0);
    assert_int_equal(fib_match(&f->w, T_IP(10, 1, 0, 16), &pfx, &len, &nh), 0);
    assert_true(pfx == 0 && len == 0 && nh.port == 2);
    assert_int_equal(fib_match(&f->w, T_IP(10, 1, 0, 15), &pfx, &len, &nh), 0);
    assert_true(pfx == T_IP(10, 1, 0, 0) && len == 28);
    t_fib_free(f);
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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_fib_overlap_delete_restores, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib_nh_dedup_and_capacity, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib_gen_batch, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib_attach_checks, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib_snapshot, t_time_setup, t_time_teardown),
#ifndef T_TSAN /* 16M-entry /0 writes are slow under TSan and race nothing */
        cmocka_unit_test_setup_teardown(test_rt_fib_default_and_host, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib_random_small, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib_random_100k, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib_1m, t_time_setup, t_time_teardown),
#endif
        cmocka_unit_test_setup_teardown(test_rt_fib_concurrent_reader, t_time_setup, t_time_teardown),
        cmocka_unit_test_setup_teardown(test_rt_fib_replace_no_gap, t_time_setup, t_time_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
