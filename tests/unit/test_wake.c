/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_wake.c: the wake-up protocol of ipc/wake.h against a real
 * eventfd, in one process: arming, one consumer over several
 * rings, wake sets shared by producers, and the bounded block. White-box:
 * the tests read the shared wake words directly. The cross-process stress
 * is in test_exchange.c.
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

/* --- wake-up protocol --- */

static int t_eventfd(void)
{
    int fd = ipc_wake_eventfd();
    if (fd < 0)
        fail_msg("ipc_wake_eventfd: %s", strerror(-fd));
    return fd;
}

static void t_enq1(struct t_ring *r, uint32_t v)
{
    ipc_buf b = t_val(v);
    assert_int_equal(ipc_ring_enq_burst(&r->p, &b, 1), 1);
}

static void test_ring_wake_arm_and_wake(void **state)
{
    (void)state;
    int efd = t_eventfd();
    struct t_ring r;
    t_ring_open(&r, 8, UINT32_MAX - 1, efd);
    struct ipc_ring_cons *cs[1] = {&r.c};

    assert_true(ipc_wake_arm(cs, 1));
    assert_int_equal(ipc_ld_rlx(&r.sh->need_wake), 1);
    assert_int_equal(ipc_ld_rlx(&r.sh->sleeps), 1);
    assert_int_equal(ipc_wake_block(efd, 0), 0); /* nothing written yet */

    t_enq1(&r, 0);
    assert_int_equal(ipc_wake_one(&r.p), 1);
    assert_int_equal(ipc_ld_rlx(&r.sh->need_wake), 0);
    assert_int_equal(ipc_ld_rlx(&r.sh->wake_sent), 1);
    assert_int_equal(ipc_wake_block(efd, 0), 1);
    assert_int_equal(ipc_wake_block(efd, 0), 0); /* the read reset the counter */

    /* Not re-armed: no second wake-up. */
    t_enq1(&r, 1);
    assert_int_equal(ipc_wake_one(&r.p), 0);
    assert_int_equal(ipc_ld_rlx(&r.sh->wake_sent), 1);
    assert_int_equal(ipc_wake_block(efd, 0), 0);

    /* Arming with work waiting: refuse and leave the word clear. */
    assert_false(ipc_wake_arm(cs, 1));
    assert_int_equal(ipc_ld_rlx(&r.sh->need_wake), 0);
    assert_int_equal(ipc_ld_rlx(&r.sh->sleeps), 1);
    assert_int_equal(ipc_wake_one(&r.p), 0);

    /* Drained: arming sleeps, and a disarmed ring is not woken. */
    ipc_buf out[8];
    assert_int_equal(t_ring_deq_burst(&r.c, out, 8), 2);
    assert_true(ipc_wake_arm(cs, 1));
    assert_int_equal(ipc_ld_rlx(&r.sh->need_wake), 1);
    ipc_wake_disarm(cs, 1);
    assert_int_equal(ipc_ld_rlx(&r.sh->need_wake), 0);
    t_enq1(&r, 2);
    assert_int_equal(ipc_wake_one(&r.p), 0); /* disarmed: no write */
    assert_int_equal(ipc_wake_block(efd, 0), 0);
    t_ring_close(&r);
    close(efd);
}

/* A producer without a wake fd never writes, even to an armed consumer. */
static void test_ring_wake_no_fd(void **state)
{
    (void)state;
    struct t_ring r;
    t_ring_open(&r, 8, 0, -1);
    struct ipc_ring_cons *cs[1] = {&r.c};
    assert_true(ipc_wake_arm(cs, 1));
    t_enq1(&r, 0);
    assert_int_equal(ipc_wake_one(&r.p), 0);
    assert_int_equal(ipc_ld_rlx(&r.sh->wake_sent), 0);
    struct ipc_wake_set ws;
    ipc_wake_set_init(&ws);
    ipc_wake_mark(&ws, &r.p);
    assert_int_equal(ipc_wake_flush(&ws), 0);
    t_ring_close(&r);
}

/* One consumer arming two rings: work on either refuses the sleep and disarms both. */
static void test_ring_wake_arm_multi(void **state)
{
    (void)state;
    int efd = t_eventfd();
    struct t_ring a, b;
    t_ring_open(&a, 8, 0, efd);
    t_ring_open(&b, 8, UINT32_MAX, efd);
    struct ipc_ring_cons *cs[2] = {&a.c, &b.c};

    t_enq1(&b, 0);
    assert_false(ipc_wake_arm(cs, 2));
    assert_int_equal(ipc_ld_rlx(&a.sh->need_wake), 0);
    assert_int_equal(ipc_ld_rlx(&b.sh->need_wake), 0);
    ipc_buf out[1];
    assert_int_equal(t_ring_deq_burst(&b.c, out, 1), 1);
    assert_true(ipc_wake_arm(cs, 2));
    assert_int_equal(ipc_ld_rlx(&a.sh->need_wake), 1);
    assert_int_equal(ipc_ld_rlx(&b.sh->need_wake), 1);
    assert_int_equal(ipc_ld_rlx(&a.sh->sleeps), 1);
    assert_int_equal(ipc_ld_rlx(&b.sh->sleeps), 1);
    t_ring_close(&a);
    t_ring_close(&b);
    close(efd);
}

static void test_ring_wake_set_shared_eventfd(void **state)
{
    (void)state;
    int efd = t_eventfd();
    struct t_ring a, b;
    t_ring_open(&a, 8, 0, efd);
    t_ring_open(&b, 8, 0, efd);
    struct ipc_ring_cons *cs[2] = {&a.c, &b.c};
    struct ipc_wake_set ws;
    ipc_wake_set_init(&ws);

    assert_int_equal(ipc_wake_flush(&ws), 0); /* empty set */

    assert_true(ipc_wake_arm(cs, 2));
    t_enq1(&a, 0);
    t_enq1(&b, 0);
    ipc_wake_mark(&ws, &a.p);
    ipc_wake_mark(&ws, &b.p);
    ipc_wake_mark(&ws, &a.p); /* idempotent */
    assert_int_equal(ws.n, 2);
    assert_int_equal(ipc_wake_flush(&ws), 1); /* one write for one consumer */
    assert_int_equal(ws.n, 0);
    assert_int_equal(ipc_ld_rlx(&a.sh->wake_sent) + ipc_ld_rlx(&b.sh->wake_sent), 1);
    assert_int_equal(ipc_ld_rlx(&a.sh->need_wake), 0);
    assert_int_equal(ipc_ld_rlx(&b.sh->need_wake), 0);
    uint64_t v = 0;
    assert_int_equal(read(efd, &v, sizeof(v)), (ssize_t)sizeof(v));
    assert_int_equal(v, 1); /* exactly one write */

    /* Marked, but nobody armed: no write. */
    ipc_wake_mark(&ws, &a.p);
    ipc_wake_mark(&ws, &b.p);
    assert_int_equal(ipc_wake_flush(&ws), 0);
    assert_int_equal(ipc_wake_block(efd, 0), 0);
    t_ring_close(&a);
    t_ring_close(&b);
    close(efd);
}

static void test_ring_wake_set_two_consumers(void **state)
{
    (void)state;
    int efd1 = t_eventfd(), efd2 = t_eventfd();
    struct t_ring a, b;
    t_ring_open(&a, 8, 0, efd1);
    t_ring_open(&b, 8, 0, efd2);
    struct ipc_ring_cons *ca[1] = {&a.c}, *cb[1] = {&b.c};
    struct ipc_wake_set ws;
    ipc_wake_set_init(&ws);

    assert_true(ipc_wake_arm(ca, 1));
    assert_true(ipc_wake_arm(cb, 1));
    t_enq1(&a, 0);
    t_enq1(&b, 0);
    ipc_wake_mark(&ws, &a.p);
    ipc_wake_mark(&ws, &b.p);
    ipc_wake_mark(&ws, &b.p);
    assert_int_equal(ws.n, 2);
    assert_int_equal(ipc_wake_flush(&ws), 2);
    assert_int_equal(ipc_ld_rlx(&a.sh->wake_sent), 1);
    assert_int_equal(ipc_ld_rlx(&b.sh->wake_sent), 1);
    assert_int_equal(ipc_wake_block(efd1, 0), 1);
    assert_int_equal(ipc_wake_block(efd2, 0), 1);

    /* Only one of them armed: one write, to that one. */
    ipc_buf out[1];
    assert_int_equal(t_ring_deq_burst(&a.c, out, 1), 1);
    assert_int_equal(t_ring_deq_burst(&b.c, out, 1), 1);
    assert_true(ipc_wake_arm(cb, 1));
    t_enq1(&a, 1);
    t_enq1(&b, 1);
    ipc_wake_mark(&ws, &a.p);
    ipc_wake_mark(&ws, &b.p);
    assert_int_equal(ipc_wake_flush(&ws), 1);
    assert_int_equal(ipc_ld_rlx(&a.sh->wake_sent), 1);
    assert_int_equal(ipc_ld_rlx(&b.sh->wake_sent), 2);
    assert_int_equal(ipc_wake_block(efd1, 0), 0);
    assert_int_equal(ipc_wake_block(efd2, 0), 1);
    t_ring_close(&a);
    t_ring_close(&b);
    close(efd1);
    close(efd2);
}

static void test_ring_wake_block_timeout(void **state)
{
    (void)state;
    int efd = t_eventfd();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(ipc_wake_block(efd, 20), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 19);
    /* Written before the wait: returns at once, however long the bound. */
    uint64_t one = 1;
    assert_int_equal(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
    assert_int_equal(ipc_wake_block(efd, 60000), 1);
    assert_int_equal(ipc_wake_block(efd, 0), 0);
    close(efd);
    /* A closed fd is an error, not a wake-up. */
    assert_true(ipc_wake_block(efd, 0) < 0);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_wake_arm_and_wake),
        cmocka_unit_test(test_ring_wake_no_fd),
        cmocka_unit_test(test_ring_wake_arm_multi),
        cmocka_unit_test(test_ring_wake_set_shared_eventfd),
        cmocka_unit_test(test_ring_wake_set_two_consumers),
        cmocka_unit_test(test_ring_wake_block_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
