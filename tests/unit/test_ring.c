/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_ring.c: single-process edge cases of ipc/ring.h: empty and
 * full rings, partial bursts, indices crossing 2^32, when each end refreshes
 * its cached copy of the other's index, the two-phase reserve/submit and
 * peek/release API, create and attach errors, and restarted ends (the
 * wake-up protocol is test_wake.c). White-box:
 * the tests read the private cursors and the shared counters directly.
 * The cross-process stress is in test_exchange.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ipc/pool.h"
#include "ipc/ring.h"
#include "ipc/wake.h"
#include "tests/unit/t_ring.h"


static void test_ring_empty(void **state)
{
    (void)state;
    struct t_ring r;
    t_ring_open(&r, 8, 0, -1);
    uint32_t idx = 12345;
    ipc_buf out[4];

    assert_int_equal(ipc_ring_avail(&r.c, 1), 0);
    assert_int_equal(ipc_ring_peek(&r.c, 4, &idx), 0);
    assert_int_equal(idx, r.c.head); /* idx is set even when nothing is there */
    assert_int_equal(t_ring_deq_burst(&r.c, out, 4), 0);
    assert_int_equal(ipc_ring_count(r.sh), 0);
    assert_int_equal(ipc_ring_free_count(&r.p, 8), 8);
    /* An empty peek or deq must not move anything. */
    assert_int_equal(ipc_ld_rlx(&r.sh->cons), 0);
    assert_int_equal(r.c.head, 0);
    t_ring_close(&r);
}

static void test_ring_full(void **state)
{
    (void)state;
    const uint32_t size = 8;
    struct t_ring r;
    t_ring_open(&r, size, 100, -1);

    for (uint32_t i = 0; i < size; i++) {
        ipc_buf b = t_val(i);
        assert_int_equal(ipc_ring_enq_burst(&r.p, &b, 1), 1);
        assert_int_equal(ipc_ring_count(r.sh), i + 1);
    }
    ipc_buf extra = t_val(99);
    uint32_t idx;
    assert_int_equal(ipc_ring_enq_burst(&r.p, &extra, 1), 0);
    assert_int_equal(ipc_ring_reserve(&r.p, 1, &idx), 0);
    assert_int_equal(ipc_ring_reserve(&r.p, size, &idx), 0);
    assert_int_equal(ipc_ring_free_count(&r.p, 1), 0);
    assert_int_equal(ipc_ring_count(r.sh), size);
    /* A failed enqueue publishes nothing. */
    assert_int_equal(ipc_ld_rlx(&r.sh->prod), 100 + size);
    assert_int_equal(ipc_ld_rlx(&r.sh->enq_handles), size);

    ipc_buf out[16];
    assert_int_equal(t_ring_deq_burst(&r.c, out, 16), size);
    for (uint32_t i = 0; i < size; i++)
        assert_int_equal(out[i], t_val(i));
    assert_int_equal(ipc_ring_count(r.sh), 0);
    assert_int_equal(ipc_ring_free_count(&r.p, size), size);
    t_ring_close(&r);
}

static void test_ring_partial_bursts(void **state)
{
    (void)state;
    struct t_ring r;
    t_ring_open(&r, 8, 0, -1);
    ipc_buf in[12], out[12];
    for (uint32_t i = 0; i < 12; i++)
        in[i] = t_val(i);

    assert_int_equal(ipc_ring_enq_burst(&r.p, in, 5), 5);
    assert_int_equal(ipc_ring_enq_burst(&r.p, in + 5, 7), 3); /* only 3 fit */
    assert_int_equal(ipc_ring_enq_burst(&r.p, in + 8, 4), 0);
    assert_int_equal(ipc_ring_count(r.sh), 8);

    assert_int_equal(t_ring_deq_burst(&r.c, out, 3), 3);
    assert_int_equal(ipc_ring_enq_burst(&r.p, in + 8, 4), 3);   /* 3 slots came back */
    assert_int_equal(t_ring_deq_burst(&r.c, out + 3, 12), 8); /* more asked than there is */
    assert_int_equal(t_ring_deq_burst(&r.c, out + 11, 1), 0);
    for (uint32_t i = 0; i < 11; i++)
        assert_int_equal(out[i], in[i]);
    assert_int_equal(ipc_ld_rlx(&r.sh->enq_handles), 11);
    t_ring_close(&r);
}

/*
 * Push and pop across the 2^32 wrap of the free-running indices, in bursts
 * of varying size that keep the ring between empty and full, checking the
 * order, ipc_ring_count and the free count at every step.
 */
static void t_wrap_run(uint32_t size, uint32_t start)
{
    struct t_ring r;
    t_ring_open(&r, size, start, -1);
    uint32_t next_in = 0, next_out = 0;
    uint32_t rnd = 0x9e3779b9u;
    ipc_buf buf[64];
    bool wrapped = false;

    for (int step = 0; step < 4000; step++) {
        rnd ^= rnd << 13;
        rnd ^= rnd >> 17;
        rnd ^= rnd << 5;
        uint32_t n = 1 + rnd % (size + 2); /* sometimes more than fits */
        if (n > 64)
            n = 64;
        uint32_t occ = next_in - next_out;
        assert_int_equal(ipc_ring_count(r.sh), occ);
        assert_int_equal(ipc_ring_free_count(&r.p, size), size - occ);
        if (rnd & 0x100) {
            for (uint32_t i = 0; i < n; i++)
                buf[i] = t_val(next_in + i);
            uint32_t fit = n < size - occ ? n : size - occ;
            assert_int_equal(ipc_ring_enq_burst(&r.p, buf, n), fit);
            next_in += fit;
        } else {
            uint32_t got = n < occ ? n : occ;
            assert_int_equal(t_ring_deq_burst(&r.c, buf, n), got);
            for (uint32_t i = 0; i < got; i++)
                if (buf[i] != t_val(next_out + i))
                    fail_msg("start %u size %u: handle %u is %#x, expected %#x", start, size, next_out + i, buf[i],
                             t_val(next_out + i));
            next_out += got;
        }
        if (ipc_ld_rlx(&r.sh->cons) < start)
            wrapped = true;
    }
    /* Drain, so both indices are past the wrap. */
    uint32_t got;
    while ((got = t_ring_deq_burst(&r.c, buf, 64)) > 0) {
        for (uint32_t i = 0; i < got; i++)
            assert_int_equal(buf[i], t_val(next_out + i));
        next_out += got;
    }
    assert_int_equal(next_out, next_in);
    assert_true(wrapped);
    assert_int_equal(ipc_ld_rlx(&r.sh->prod), start + next_in);
    assert_int_equal(ipc_ld_rlx(&r.sh->cons), start + next_in);
    assert_int_equal(ipc_ring_count(r.sh), 0);
    assert_int_equal(ipc_ring_free_count(&r.p, size), size);
    t_ring_close(&r);
}

static void test_ring_wrap_2_32(void **state)
{
    (void)state;
    t_wrap_run(8, UINT32_MAX - 5);
    t_wrap_run(8, UINT32_MAX - 8 + 1);
    t_wrap_run(2, UINT32_MAX);
    t_wrap_run(64, UINT32_MAX - 64 + 1);
    t_wrap_run(16, UINT32_MAX - 3);
}

/* Exactly full and exactly empty at the wrap: prod = start + size wraps to 0. */
static void test_ring_wrap_full_at_boundary(void **state)
{
    (void)state;
    const uint32_t size = 8;
    struct t_ring r;
    t_ring_open(&r, size, UINT32_MAX - size + 1, -1);
    ipc_buf in[8], out[8];
    for (uint32_t i = 0; i < size; i++)
        in[i] = t_val(i);
    assert_int_equal(ipc_ring_enq_burst(&r.p, in, size), size);
    assert_int_equal(ipc_ld_rlx(&r.sh->prod), 0);
    assert_int_equal(ipc_ring_count(r.sh), size);
    assert_int_equal(ipc_ring_free_count(&r.p, 1), 0);
    assert_int_equal(ipc_ring_enq_burst(&r.p, in, 1), 0);
    assert_int_equal(t_ring_deq_burst(&r.c, out, size), size);
    assert_memory_equal(out, in, sizeof(in));
    assert_int_equal(ipc_ld_rlx(&r.sh->cons), 0);
    assert_int_equal(ipc_ring_count(r.sh), 0);
    t_ring_close(&r);
}

/*
 * The producer reads the shared consumer index only when its cached copy
 * shows fewer free slots than it asks for.
 */
static void test_ring_cached_cons_refresh(void **state)
{
    (void)state;
    const uint32_t size = 8, start = 1000;
    struct t_ring r;
    t_ring_open(&r, size, start, -1);
    ipc_buf in[8], out[8];
    for (uint32_t i = 0; i < size; i++)
        in[i] = t_val(i);

    assert_int_equal(ipc_ring_enq_burst(&r.p, in, 4), 4);
    assert_int_equal(t_ring_deq_burst(&r.c, out, 3), 3);
    assert_int_equal(ipc_ld_rlx(&r.sh->cons), start + 3);
    /* 4 free in the cache: asking for up to 4 is answered from it. */
    assert_int_equal(r.p.cached_cons, start);
    assert_int_equal(ipc_ring_free_count(&r.p, 4), 4);
    assert_int_equal(ipc_ring_free_count(&r.p, 1), 4);
    assert_int_equal(r.p.cached_cons, start);
    /* Asking for 5 refreshes: 7 free. */
    assert_int_equal(ipc_ring_free_count(&r.p, 5), 7);
    assert_int_equal(r.p.cached_cons, start + 3);

    /* A reservation the cache can satisfy does not look either. */
    assert_int_equal(t_ring_deq_burst(&r.c, out, 1), 1); /* shared cons = start + 4 */
    uint32_t idx;
    assert_int_equal(ipc_ring_reserve(&r.p, 7, &idx), 7);
    assert_int_equal(r.p.cached_cons, start + 3);
    ipc_ring_submit(&r.p, 7);
    /* Full by the cache, one slot free in truth: a reserve refreshes. */
    assert_int_equal(ipc_ring_free_count(&r.p, 0), 0);
    assert_int_equal(r.p.cached_cons, start + 3);
    assert_int_equal(ipc_ring_reserve(&r.p, 2, &idx), 1);
    assert_int_equal(r.p.cached_cons, start + 4);
    ipc_ring_submit(&r.p, 1);
    assert_int_equal(ipc_ring_count(r.sh), size);
    t_ring_close(&r);
}

/* Same for the consumer's cached copy of the producer index. */
static void test_ring_cached_prod_refresh(void **state)
{
    (void)state;
    const uint32_t size = 16, start = UINT32_MAX - 2;
    struct t_ring r;
    t_ring_open(&r, size, start, -1);
    ipc_buf in[16], out[16];
    for (uint32_t i = 0; i < size; i++)
        in[i] = t_val(i);

    assert_int_equal(ipc_ring_enq_burst(&r.p, in, 3), 3);
    assert_int_equal(r.c.cached_prod, start); /* nothing looked yet */
    assert_int_equal(ipc_ring_avail(&r.c, 1), 3);
    assert_int_equal(r.c.cached_prod, start + 3);

    assert_int_equal(ipc_ring_enq_burst(&r.p, in + 3, 5), 5); /* 8 in truth */
    /* 3 in the cache: asking for up to 3 does not look. */
    assert_int_equal(ipc_ring_avail(&r.c, 3), 3);
    assert_int_equal(ipc_ring_avail(&r.c, 0), 3);
    assert_int_equal(r.c.cached_prod, start + 3);
    uint32_t idx;
    assert_int_equal(ipc_ring_peek(&r.c, 2, &idx), 2);
    assert_int_equal(r.c.cached_prod, start + 3);
    ipc_ring_release(&r.c, 2);
    /* 1 left in the cache, asking for 2 refreshes: 6. */
    assert_int_equal(ipc_ring_avail(&r.c, 2), 6);
    assert_int_equal(r.c.cached_prod, start + 8);
    /* A deq of more than the cache shows refreshes too, and crosses the wrap. */
    assert_int_equal(ipc_ring_enq_burst(&r.p, in + 8, 4), 4);
    assert_int_equal(t_ring_deq_burst(&r.c, out, 16), 10);
    assert_int_equal(r.c.cached_prod, start + 12);
    for (uint32_t i = 0; i < 10; i++)
        assert_int_equal(out[i], in[i + 2]);
    t_ring_close(&r);
}

/*
 * The verbs' meaning, libxdp's: reserve and peek move nothing; submit and
 * release move the index and publish it. Reserved but unsubmitted slots are
 * invisible to the consumer, and the next reservation starts at them again.
 */
static void test_ring_reserve_submit_peek_release(void **state)
{
    (void)state;
    struct t_ring r;
    t_ring_open(&r, 8, UINT32_MAX - 1, -1);
    uint32_t idx, cidx;

    assert_int_equal(ipc_ring_reserve(&r.p, 3, &idx), 3);
    assert_int_equal(idx, UINT32_MAX - 1);
    assert_int_equal(r.p.head, UINT32_MAX - 1); /* reserve moves nothing */
    assert_int_equal(ipc_ring_reserve(&r.p, 3, &idx), 3);
    assert_int_equal(idx, UINT32_MAX - 1); /* so a second one is the same slots */
    for (uint32_t i = 0; i < 3; i++)
        *ipc_ring_prod_slot(&r.p, idx + i) = t_val(i);
    assert_int_equal(ipc_ring_avail(&r.c, 1), 0);
    assert_int_equal(ipc_ring_peek(&r.c, 8, &cidx), 0);
    assert_int_equal(ipc_ring_count(r.sh), 0);
    assert_int_equal(ipc_ld_rlx(&r.sh->enq_handles), 0);
    assert_int_equal(ipc_ring_free_count(&r.p, 8), 8);

    /* Submit 2 of the 3 written: the third stays private. */
    ipc_ring_submit(&r.p, 2);
    assert_int_equal(r.p.head, UINT32_MAX - 1 + 2);
    assert_int_equal(ipc_ld_rlx(&r.sh->prod), UINT32_MAX - 1 + 2);
    assert_int_equal(ipc_ring_count(r.sh), 2);
    assert_int_equal(ipc_ring_peek(&r.c, 8, &cidx), 2);
    assert_int_equal(cidx, UINT32_MAX - 1);
    assert_int_equal(ipc_ring_cons_slot(&r.c, cidx), t_val(0));
    assert_int_equal(ipc_ring_cons_slot(&r.c, cidx + 1), t_val(1));
    /* Peek moves nothing: again, the same two. */
    assert_int_equal(ipc_ring_peek(&r.c, 8, &cidx), 2);
    assert_int_equal(cidx, UINT32_MAX - 1);
    assert_int_equal(ipc_ld_rlx(&r.sh->cons), UINT32_MAX - 1);

    /* The next reservation starts at the unsubmitted third. */
    assert_int_equal(ipc_ring_reserve(&r.p, 3, &idx), 3);
    assert_int_equal(idx, UINT32_MAX - 1 + 2);
    assert_int_equal(*ipc_ring_prod_slot(&r.p, idx), t_val(2));
    *ipc_ring_prod_slot(&r.p, idx + 1) = t_val(3);
    *ipc_ring_prod_slot(&r.p, idx + 2) = t_val(4);
    ipc_ring_submit(&r.p, 3);
    assert_int_equal(ipc_ring_peek(&r.c, 8, &cidx), 5);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(ipc_ring_cons_slot(&r.c, cidx + i), t_val(i));
    ipc_ring_release(&r.c, 2);
    assert_int_equal(r.c.head, UINT32_MAX - 1 + 2);
    assert_int_equal(ipc_ld_rlx(&r.sh->cons), UINT32_MAX - 1 + 2);
    assert_int_equal(ipc_ring_peek(&r.c, 8, &cidx), 3);
    assert_int_equal(ipc_ring_cons_slot(&r.c, cidx), t_val(2));
    ipc_ring_release(&r.c, 3);
    assert_int_equal(ipc_ring_count(r.sh), 0);
    assert_int_equal(ipc_ld_rlx(&r.sh->enq_handles), 5);
    t_ring_close(&r);
}

/*
 * Shared memory is input: an index the other end wrote more than a ring away
 * from ours gives no room (producer) and shows nothing (consumer), rather
 * than room or handles past the ring.
 */
static void test_ring_hostile_index_capped(void **state)
{
    (void)state;
    const uint32_t size = 8;
    struct t_ring r;
    t_ring_open(&r, size, 1000, -1);
    uint32_t idx;
    ipc_buf b = t_val(0);

    /* The consumer says it took more than was ever published. */
    ipc_st_rlx(&r.sh->cons, 1000 + 3);
    assert_int_equal(ipc_ring_free_count(&r.p, size + 1), 0);
    assert_int_equal(ipc_ring_reserve(&r.p, 4, &idx), 0);
    assert_int_equal(ipc_ring_enq_burst(&r.p, &b, 1), 0);
    ipc_st_rlx(&r.sh->cons, 1000 - size - 1); /* ... or lags by more than a ring */
    assert_int_equal(ipc_ring_free_count(&r.p, size + 1), 0);
    ipc_st_rlx(&r.sh->cons, 1000);
    assert_int_equal(ipc_ring_free_count(&r.p, size + 1), size);

    /* The producer says it published more than a ring. */
    ipc_st_rlx(&r.sh->prod, 1000 + size + 1);
    assert_int_equal(ipc_ring_avail(&r.c, size + 1), 0);
    assert_int_equal(ipc_ring_peek(&r.c, 4, &idx), 0);
    ipc_st_rlx(&r.sh->prod, 0x80000000u);
    assert_int_equal(ipc_ring_avail(&r.c, 1), 0);
    ipc_st_rlx(&r.sh->prod, 1000 + size);
    assert_int_equal(ipc_ring_avail(&r.c, size + 1), size);
    t_ring_close(&r);
}

/* Peeked but unreleased slots are not reusable by the producer. */
static void test_ring_peek_release_not_reusable(void **state)
{
    (void)state;
    const uint32_t size = 8;
    struct t_ring r;
    t_ring_open(&r, size, 0, -1);
    ipc_buf in[8];
    for (uint32_t i = 0; i < size; i++)
        in[i] = t_val(i);
    uint32_t idx, cidx;

    assert_int_equal(ipc_ring_enq_burst(&r.p, in, size), size);
    assert_int_equal(ipc_ring_peek(&r.c, 5, &cidx), 5);
    assert_int_equal(ipc_ring_count(r.sh), size); /* peeked is still in the ring */
    assert_int_equal(ipc_ring_free_count(&r.p, 1), 0);
    assert_int_equal(ipc_ring_reserve(&r.p, 1, &idx), 0);

    ipc_ring_release(&r.c, 2);
    assert_int_equal(ipc_ring_free_count(&r.p, 1), 2);
    assert_int_equal(ipc_ring_reserve(&r.p, 4, &idx), 2);
    *ipc_ring_prod_slot(&r.p, idx) = t_val(100);
    *ipc_ring_prod_slot(&r.p, idx + 1) = t_val(101);
    ipc_ring_submit(&r.p, 2);
    /* The three peeked, unreleased slots still hold what was peeked. */
    for (uint32_t i = 2; i < 5; i++)
        assert_int_equal(ipc_ring_cons_slot(&r.c, cidx + i), t_val(i));
    ipc_ring_release(&r.c, 3);
    ipc_buf out[8];
    assert_int_equal(t_ring_deq_burst(&r.c, out, 8), 5);
    assert_int_equal(out[0], t_val(5));
    assert_int_equal(out[2], t_val(7));
    assert_int_equal(out[3], t_val(100));
    assert_int_equal(out[4], t_val(101));
    t_ring_close(&r);
}

static void test_ring_create_bad_size(void **state)
{
    (void)state;
    static const uint32_t bad[] = {0, 1, 3, 6, 100, 1000, IPC_RING_MAX + 1, IPC_RING_MAX * 2, 1u << 31, UINT32_MAX};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ipc_err err = {{0}};
        int fd = -1;
        struct ipc_ring_shared *sh = NULL;
        int ret = ipc_ring_create("t_bad", bad[i], 0, 2, 3, 0, &fd, &sh, &err);
        char want[32];
        snprintf(want, sizeof(want), "size %u ", bad[i]);
        if (ret != -EINVAL || strstr(err.msg, want) == NULL)
            fail_msg("size %u: ret %d (want %d), message \"%s\" should name \"%s\"", bad[i], ret, -EINVAL, err.msg,
                     want);
        assert_int_equal(fd, -1);
        assert_null(sh);
    }
    /* The bounds themselves are fine. */
    static const uint32_t good[] = {IPC_RING_MIN, 4, 1024, IPC_RING_MAX};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct t_ring r;
        t_ring_open(&r, good[i], 0, -1);
        assert_int_equal(r.sh->size, good[i]);
        assert_int_equal(r.sh->mask, good[i] - 1);
        assert_int_equal(r.sh->shm.size, ipc_ring_region_size(good[i]));
        assert_int_equal(r.sh->slots[good[i] - 1], IPC_BUF_NONE);
        t_ring_close(&r);
    }
}

/* Attach @fd and expect -EPROTO with @want in the message. */
static void t_attach_fails(int fd, const char *want)
{
    struct ipc_err err = {{0}};
    struct ipc_ring_shared *sh = NULL;
    int ret = ipc_ring_attach(fd, &sh, &err);
    if (ret != -EPROTO || strstr(err.msg, want) == NULL)
        fail_msg("attach: ret %d (want %d), message \"%s\" should contain \"%s\"", ret, -EPROTO, err.msg, want);
    assert_null(sh);
}

/* A fresh ring and a second, writable mapping of it to corrupt. */
static struct ipc_ring_shared *t_ring_corruptible(struct t_ring *r, uint32_t size)
{
    t_ring_open(r, size, 0, -1);
    void *m = mmap(NULL, ipc_ring_region_size(size), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    assert_true(m != MAP_FAILED);
    return m;
}

static void t_unmap(struct ipc_ring_shared *m)
{
    munmap(m, m->shm.size);
}

static void test_ring_attach_ok(void **state)
{
    (void)state;
    struct t_ring r;
    t_ring_open(&r, 32, 77, -1);
    struct ipc_err err = {{0}};
    struct ipc_ring_shared *sh = NULL;
    assert_int_equal(ipc_ring_attach(r.fd, &sh, &err), 0);
    assert_non_null(sh);
    assert_ptr_not_equal(sh, r.sh);
    assert_int_equal(sh->size, 32);
    assert_int_equal(sh->id, 7);
    assert_int_equal(sh->prod_owner, 2);
    assert_int_equal(sh->cons_owner, 3);
    /* Both mappings are the same memory. */
    ipc_buf b = t_val(1);
    assert_int_equal(ipc_ring_enq_burst(&r.p, &b, 1), 1);
    assert_int_equal(ipc_ring_count(sh), 1);
    ipc_ring_detach(sh);
    t_ring_close(&r);
}

static void test_ring_attach_bad_magic(void **state)
{
    (void)state;
    struct t_ring r;
    struct ipc_ring_shared *m = t_ring_corruptible(&r, 8);
    m->shm.magic ^= 1;
    t_attach_fails(r.fd, "magic");
    t_unmap(m);
    t_ring_close(&r);
}

static void test_ring_attach_wrong_kind(void **state)
{
    (void)state;
    struct ipc_err err = {{0}};
    int fd;
    assert_int_equal(ipc_pool_create("t_pool_not_ring", 64, IPC_FRAME_DEFAULT, &fd, &err), 0);
    t_attach_fails(fd, "kind is pool, expected ring");
    close(fd);

    /* A ring whose header kind was rewritten to an unknown value. */
    struct t_ring r;
    struct ipc_ring_shared *m = t_ring_corruptible(&r, 8);
    m->shm.kind = 99;
    t_attach_fails(r.fd, "kind is unknown, expected ring");
    t_unmap(m);
    t_ring_close(&r);
}

static void test_ring_attach_wrong_version(void **state)
{
    (void)state;
    struct t_ring r;
    struct ipc_ring_shared *m = t_ring_corruptible(&r, 8);
    m->shm.version = IPC_RING_VERSION + 1;
    char want[64];
    snprintf(want, sizeof(want), "layout version %u, this build reads version %u", IPC_RING_VERSION + 1,
             IPC_RING_VERSION);
    t_attach_fails(r.fd, want);
    t_unmap(m);
    t_ring_close(&r);
}

/*
 * A memfd written by hand: @len bytes with a ring header claiming @hdr_size
 * bytes and @slots slots. ipc_ring_create() seals its memfds against
 * resizing, so a size mismatch has to be built from scratch.
 */
static int t_handmade_ring(size_t len, uint64_t hdr_size, uint32_t slots)
{
    int fd = memfd_create("t_handmade", 0);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)len), 0);
    if (len < sizeof(struct ipc_ring_shared))
        return fd;
    struct ipc_ring_shared h;
    memset(&h, 0, sizeof(h));
    h.shm.magic = IPC_SHM_MAGIC;
    h.shm.kind = IPC_SHM_RING;
    h.shm.version = IPC_RING_VERSION;
    h.shm.size = hdr_size;
    snprintf(h.shm.name, sizeof(h.shm.name), "t_handmade");
    h.size = slots;
    h.mask = slots - 1;
    assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    return fd;
}

static void test_ring_attach_truncated(void **state)
{
    (void)state;
    /* Too short for even the shm header. */
    int fd = t_handmade_ring(16, 0, 0);
    t_attach_fails(fd, "too small for a header");
    close(fd);
    fd = t_handmade_ring(0, 0, 0);
    t_attach_fails(fd, "0 bytes, too small for a header");
    close(fd);

    /* The header claims more than the memfd holds. */
    size_t have = ipc_ring_region_size(8);
    fd = t_handmade_ring(have, ipc_ring_region_size(16), 16);
    char want[96];
    snprintf(want, sizeof(want), "header says %zu bytes, the memfd has %zu", ipc_ring_region_size(16), have);
    t_attach_fails(fd, want);
    close(fd);

    /* A consistent header, but the slot count needs a bigger region. */
    fd = t_handmade_ring(have, have, 16);
    snprintf(want, sizeof(want), "16 slots need %zu bytes, the region has %zu", ipc_ring_region_size(16), have);
    t_attach_fails(fd, want);
    close(fd);

    /* And a hand-made ring that is right attaches (the helper is sound). */
    fd = t_handmade_ring(have, have, 8);
    struct ipc_err err = {{0}};
    struct ipc_ring_shared *sh = NULL;
    assert_int_equal(ipc_ring_attach(fd, &sh, &err), 0);
    ipc_ring_detach(sh);
    close(fd);
}

static void test_ring_attach_bad_geometry(void **state)
{
    (void)state;
    struct t_ring r;
    struct ipc_ring_shared *m = t_ring_corruptible(&r, 8);

    m->size = 16; /* region holds 8 */
    m->mask = 15;
    t_attach_fails(r.fd, "16 slots need");
    m->size = 6;
    m->mask = 5;
    t_attach_fails(r.fd, "size 6 / mask 0x5 is not a power-of-two ring");
    m->size = 8;
    m->mask = 3;
    t_attach_fails(r.fd, "size 8 / mask 0x3");
    m->mask = 7;
    ipc_st_rlx(&m->prod, 100);
    ipc_st_rlx(&m->cons, 101); /* cons ahead of prod: a lie, for the cursors to catch (test_ring_peer) */
    struct ipc_err err = {{0}};
    struct ipc_ring_shared *sh = NULL;
    assert_int_equal(ipc_ring_attach(r.fd, &sh, &err), 0);
    struct ipc_ring_cons c;
    ipc_ring_cons_init(&c, sh);
    assert_int_equal(ipc_ring_avail(&c, 1), 0);
    assert_int_equal(ipc_ld_rlx(&sh->prod_lie), 1);
    ipc_ring_detach(sh);
    ipc_st_rlx(&m->cons, 92);
    assert_int_equal(ipc_ring_attach(r.fd, &sh, &err), 0);
    assert_int_equal(ipc_ring_count(sh), 8);
    ipc_ring_detach(sh);
    t_unmap(m);
    t_ring_close(&r);
}

/*
 * The supervisor unmaps a ring by the size it created it with
 * (ipc_ring_ref_detach), not by its header's, which either end can write: a
 * header claiming two pages more must not unmap the page after the ring.
 */
static void test_ring_ref_detach_hostile_size(void **state)
{
    (void)state;
    struct ipc_err err = {{0}};
    int fd;
    struct ipc_ring_shared *sh;
    assert_int_equal(ipc_ring_create("t_detach", 64, 0, 2, 3, 0, &fd, &sh, &err), 0);
    struct ipc_ring_ref ref = ipc_ring_ref_take(sh);
    size_t len = ipc_ring_region_size(64), page = (size_t)sysconf(_SC_PAGESIZE);
    assert_true(len <= page);
    ipc_shm_unmap(sh, len);
    /* The ring again, with a page of our own right after it. */
    uint8_t *base = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(base != MAP_FAILED);
    sh = mmap(base, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    assert_true((void *)sh == (void *)base);
    ref.sh = sh;
    uint8_t *after = base + page;
    after[0] = 42;
    sh->shm.size = 2 * (uint64_t)page;
    sh->size = 1u << 24;
    ipc_ring_ref_detach(&ref);
    unsigned char vec;
    if (mincore(after, page, &vec) != 0)
        fail_msg("the page after the ring was unmapped with it");
    assert_int_equal(after[0], 42);
    munmap(after, page);
    close(fd);
}

/* A restarted consumer continues from the released index. */
static void test_ring_restart_consumer(void **state)
{
    (void)state;
    struct t_ring r;
    t_ring_open(&r, 16, UINT32_MAX - 3, -1);
    ipc_buf in[10];
    for (uint32_t i = 0; i < 10; i++)
        in[i] = t_val(i);
    assert_int_equal(ipc_ring_enq_burst(&r.p, in, 10), 10);
    uint32_t idx;
    assert_int_equal(ipc_ring_peek(&r.c, 6, &idx), 6);
    ipc_ring_release(&r.c, 4); /* 4 and 5 peeked, never released: the consumer "dies" */

    struct ipc_ring_cons c2;
    ipc_ring_cons_init(&c2, r.sh);
    assert_int_equal(c2.head, UINT32_MAX - 3 + 4);
    ipc_buf out[16];
    assert_int_equal(t_ring_deq_burst(&c2, out, 16), 6);
    for (uint32_t i = 0; i < 6; i++)
        assert_int_equal(out[i], t_val(i + 4));
    assert_int_equal(ipc_ring_count(r.sh), 0);
    t_ring_close(&r);
}

/* A restarted producer continues from the published index; an unsubmitted reservation is gone. */
static void test_ring_restart_producer(void **state)
{
    (void)state;
    struct t_ring r;
    t_ring_open(&r, 8, UINT32_MAX, -1);
    ipc_buf in[3] = {t_val(0), t_val(1), t_val(2)};
    assert_int_equal(ipc_ring_enq_burst(&r.p, in, 3), 3);
    uint32_t idx;
    assert_int_equal(ipc_ring_reserve(&r.p, 4, &idx), 4);
    *ipc_ring_prod_slot(&r.p, idx) = t_val(66); /* never submitted */

    struct ipc_ring_prod p2;
    ipc_ring_prod_init(&p2, r.sh, -1);
    assert_int_equal(p2.head, UINT32_MAX + 3u);
    assert_int_equal(ipc_ring_free_count(&p2, 8), 5);
    ipc_buf b = t_val(3);
    assert_int_equal(ipc_ring_enq_burst(&p2, &b, 1), 1);
    ipc_buf out[8];
    assert_int_equal(t_ring_deq_burst(&r.c, out, 8), 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(out[i], t_val(i));
    t_ring_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_empty),
        cmocka_unit_test(test_ring_full),
        cmocka_unit_test(test_ring_partial_bursts),
        cmocka_unit_test(test_ring_wrap_2_32),
        cmocka_unit_test(test_ring_wrap_full_at_boundary),
        cmocka_unit_test(test_ring_cached_cons_refresh),
        cmocka_unit_test(test_ring_cached_prod_refresh),
        cmocka_unit_test(test_ring_reserve_submit_peek_release),
        cmocka_unit_test(test_ring_hostile_index_capped),
        cmocka_unit_test(test_ring_peek_release_not_reusable),
        cmocka_unit_test(test_ring_create_bad_size),
        cmocka_unit_test(test_ring_attach_ok),
        cmocka_unit_test(test_ring_attach_bad_magic),
        cmocka_unit_test(test_ring_attach_wrong_kind),
        cmocka_unit_test(test_ring_attach_wrong_version),
        cmocka_unit_test(test_ring_attach_truncated),
        cmocka_unit_test(test_ring_attach_bad_geometry),
        cmocka_unit_test(test_ring_ref_detach_hostile_size),
        cmocka_unit_test(test_ring_restart_consumer),
        cmocka_unit_test(test_ring_restart_producer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
