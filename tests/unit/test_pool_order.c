/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_pool_order.c: the memory order the pool's hot path asks
 * for, not the one the compiler happens to emit. On x86 every store is a
 * release store in hardware, so a relaxed store that C11 lets move above an
 * earlier release cannot be caught by running the code. Instead this file
 * compiles ipc/pool.c itself with the store wrappers of ipc/atomic.h
 * replaced by ones that log each store (address, value, memory order), and
 * checks the log against rule R2: on free, the store that clears a buffer's
 * owner word must be a release store, after the depot word's store that
 * took the buffer, so that no reordering lets the owner word say FREE while
 * no magazine holds the buffer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <unistd.h>

#include "ipc/atomic.h"

struct t_store {
    const volatile void *p;
    uint64_t v;
    memory_order mo;
};

static struct t_store t_log[4096];
static unsigned t_nlog;
static int t_on;

static void t_note(const volatile void *p, uint64_t v, memory_order mo)
{
    if (t_on && t_nlog < sizeof(t_log) / sizeof(t_log[0]))
        t_log[t_nlog++] = (struct t_store){p, v, mo};
}

#undef ipc_st_rel
#undef ipc_st_rlx
#define ipc_st_rel(p, v)                                                                                               \
    do {                                                                                                               \
        __typeof__(p) t_p_ = (p);                                                                                      \
        uint64_t t_v_ = (uint64_t)(v);                                                                                 \
        t_note(t_p_, t_v_, memory_order_release);                                                                      \
        atomic_store_explicit(t_p_, t_v_, memory_order_release);                                                       \
    } while (0)
#define ipc_st_rlx(p, v)                                                                                               \
    do {                                                                                                               \
        __typeof__(p) t_p_ = (p);                                                                                      \
        uint64_t t_v_ = (uint64_t)(v);                                                                                 \
        t_note(t_p_, t_v_, memory_order_relaxed);                                                                      \
        atomic_store_explicit(t_p_, t_v_, memory_order_relaxed);                                                       \
    } while (0)

#include "ipc/pool.c"

#define T_NBUFS 256u
#define T_SELF 2u

struct t_fix {
    int fd;
    struct ipc_pool sup, a;
};

static int t_setup(void **state)
{
    static struct t_fix f;
    struct ipc_err err = {{0}};
    assert_int_equal(ipc_pool_create("t-order", T_NBUFS, IPC_FRAME_DEFAULT, &f.fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&f.sup, f.fd, IPC_OWNER_SUPERVISOR, &err), 0);
    assert_int_equal(ipc_pool_attach(&f.a, f.fd, T_SELF, &err), 0);
    t_nlog = 0;
    t_on = 0;
    *state = &f;
    return 0;
}

static int t_teardown(void **state)
{
    struct t_fix *f = *state;
    t_on = 0;
    ipc_pool_detach(&f->a);
    ipc_pool_detach(&f->sup);
    close(f->fd);
    return 0;
}

static bool t_is_depot(const struct ipc_pool *pool, const volatile void *p)
{
    for (uint32_t s = 0; s < pool->ndepot; s++)
        if (p == (const volatile void *)&pool->depot[s].word)
            return true;
    return false;
}

/*
 * For each of @bufs[0..n): its owner word was set FREE in the log by a
 * release store, and a release store to a depot word came before it.
 */
static void t_check_free_order(const struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const volatile void *ow = &pool->meta[bufs[i]].owner;
        int at = -1;
        for (unsigned k = 0; k < t_nlog; k++)
            if (t_log[k].p == ow && t_log[k].v == IPC_OWNER_FREE)
                at = (int)k;
        if (at < 0)
            fail_msg("buffer %u: no store of FREE to its owner word was logged", bufs[i]);
        if (t_log[at].mo != memory_order_release)
            fail_msg("buffer %u: the store of FREE to its owner word is memory_order %d, not release (%d): "
                     "C11 lets it move above the depot word's store (R2)",
                     bufs[i], (int)t_log[at].mo, (int)memory_order_release);
        bool depot_before = false;
        for (int k = 0; k < at; k++)
            if (t_is_depot(pool, t_log[k].p) && t_log[k].mo == memory_order_release)
                depot_before = true;
        if (!depot_before)
            fail_msg("buffer %u: no depot word release store before its owner word went FREE", bufs[i]);
    }
}

/* ipc_pool_free: the data path's free. */
static void test_free_owner_store_is_release(void **state)
{
    struct t_fix *f = *state;
    ipc_buf b[8];
    assert_int_equal(ipc_pool_alloc(&f->a, b, 8), 8);
    t_on = 1;
    assert_int_equal(ipc_pool_free(&f->a, b, 8), 8);
    t_on = 0;
    t_check_free_order(&f->a, b, 8);
}

/* ipc_pool_flush: a detaching process merges its two magazines. */
static void test_flush_owner_store_is_release(void **state)
{
    struct t_fix *f = *state;
    ipc_buf b[8];
    /* Leave some on the allocation magazine and some on the free one, so that
     * the flush moves buffers from one to the other. */
    assert_int_equal(ipc_pool_alloc(&f->a, b, 8), 8);
    assert_int_equal(ipc_pool_free(&f->a, b, 4), 4);
    struct ipc_mag a = f->a.mag[0];
    assert_true(a.cnt > 0);
    ipc_buf moved[IPC_MAG];
    uint32_t nmoved = 0;
    for (ipc_buf x = a.head; nmoved < a.cnt && x < T_NBUFS; x = f->a.meta[x].link)
        moved[nmoved++] = x;
    t_on = 1;
    ipc_pool_flush(&f->a);
    t_on = 0;
    assert_true(nmoved > 0);
    t_check_free_order(&f->a, moved, nmoved);
    assert_int_equal(ipc_pool_free(&f->a, b + 4, 4), 4);
}

/* The instrumentation itself: the allocation's owner store is logged, so a
 * missing FREE store above is not a logging gap. */
static void test_log_sees_stores(void **state)
{
    struct t_fix *f = *state;
    ipc_buf b;
    t_on = 1;
    assert_int_equal(ipc_pool_alloc(&f->a, &b, 1), 1);
    t_on = 0;
    bool seen = false;
    for (unsigned k = 0; k < t_nlog; k++)
        if (t_log[k].p == (const volatile void *)&f->a.meta[b].owner && t_log[k].v == T_SELF)
            seen = true;
    assert_true(seen);
    assert_int_equal(ipc_pool_free(&f->a, &b, 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_log_sees_stores, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_free_owner_store_is_release, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_flush_owner_store_is_release, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
