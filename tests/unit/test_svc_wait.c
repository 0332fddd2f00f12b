/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_svc_wait.c: ipc_svc_wait() and its lost wake-up counter.
 * A consumer sleeps on one ring; a producer thread waits until the consumer
 * has armed the ring's wake word, then publishes a handle. Done right (the
 * producer flushes its wake-up), the sleep ends by its eventfd and wake_missed stays
 * 0; a producer that publishes and never wakes (the bug the counter exists to
 * show) leaves the sleep to run out with a handle waiting, and wake_missed
 * counts it. A sleep that runs out with nothing waiting counts nothing.
 * ipc_svc_nap_us(): the sleep that arms only the rings it is given.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc/svc.h"
#include "ipc/wake.h"

#define T_RING 256u
#define T_SLEEP_MS 50 /* the consumer's timeout */

struct t_fix {
    struct ipc_svc svc;
    struct ipc_svc_stats *st;
    struct ipc_ring_shared *sh;
    struct ipc_ring_prod prod;
    int ring_fd, efd;
    bool wake; /* the producer thread flushes its wake-up */
};

static uint64_t t_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int t_setup(void **state)
{
    struct t_fix *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    x->st = aligned_alloc(IPC_CACHELINE, sizeof(*x->st));
    assert_non_null(x->st);
    memset(x->st, 0, sizeof(*x->st));
    struct ipc_err err;
    int ret = ipc_ring_create("t_wait", T_RING, 1, 2, 3, 0, &x->ring_fd, &x->sh, &err);
    if (ret < 0)
        fail_msg("ipc_ring_create: %s", err.msg);
    x->efd = ipc_wake_eventfd();
    assert_true(x->efd >= 0);
    ipc_ring_prod_init(&x->prod, x->sh, x->efd);
    ipc_ring_cons_init(&x->svc.in[0], x->sh);
    x->svc.in_ptr[0] = &x->svc.in[0];
    x->svc.n_in = 1;
    x->svc.wake_fd = x->efd;
    x->svc.stats = x->st;
    *state = x;
    return 0;
}

static int t_teardown(void **state)
{
    struct t_fix *x = *state;
    ipc_ring_detach(x->sh);
    close(x->ring_fd);
    close(x->efd);
    free(x->st);
    free(x);
    return 0;
}

/* The producer: wait (bounded) for the consumer to arm, publish one handle,
 * and wake it or not. */
static void *t_producer(void *arg)
{
    struct t_fix *x = arg;
    uint64_t deadline = t_now_ms() + 5000;
    while (ipc_ld_acq(&x->sh->need_wake) == 0 && t_now_ms() < deadline)
        usleep(100);
    ipc_buf b = 7;
    ipc_ring_enq_burst(&x->prod, &b, 1);
    if (x->wake)
        ipc_wake_one(&x->prod);
    return NULL;
}

static void t_sleep_with_producer(struct t_fix *x, bool wake, int *ret, uint64_t *ms)
{
    x->wake = wake;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, t_producer, x), 0);
    uint64_t t0 = t_now_ms();
    *ret = ipc_svc_wait(&x->svc, T_SLEEP_MS);
    *ms = t_now_ms() - t0;
    assert_int_equal(pthread_join(th, NULL), 0);
}

static void test_woken_counts_nothing(void **state)
{
    struct t_fix *x = *state;
    int ret;
    uint64_t ms;
    t_sleep_with_producer(x, true, &ret, &ms);
    assert_int_equal(ret, 1); /* the eventfd ended it: 0 would be the timeout */
    (void)ms;
    assert_int_equal(ipc_ld_rlx(&x->st->sleeps), 1);
    assert_int_equal(ipc_ld_rlx(&x->st->wake_missed), 0);
    assert_int_equal(ipc_ring_avail(&x->svc.in[0], 1), 1);
    assert_int_equal(ipc_ld_rlx(&x->sh->need_wake), 0); /* disarmed after the sleep */
}

static void test_lost_wake_is_counted(void **state)
{
    struct t_fix *x = *state;
    int ret;
    uint64_t ms;
    t_sleep_with_producer(x, false, &ret, &ms);
    assert_int_equal(ret, 0); /* ran out */
    assert_true(ms >= T_SLEEP_MS - 1);
    assert_int_equal(ipc_ld_rlx(&x->st->wake_missed), 1);
    assert_int_equal(ipc_ld_rlx(&x->sh->need_wake), 0);
}

static void test_idle_timeout_counts_nothing(void **state)
{
    struct t_fix *x = *state;
    assert_int_equal(ipc_svc_wait(&x->svc, 5), 0);
    assert_int_equal(ipc_ld_rlx(&x->st->sleeps), 1);
    assert_int_equal(ipc_ld_rlx(&x->st->wake_missed), 0);
}

/* Work already waiting: no sleep at all, so nothing to count either; and a
 * sleep that ended by a wake-up is never counted, whatever the rings hold. */
static void test_no_sleep_and_woken_sleep(void **state)
{
    struct t_fix *x = *state;
    ipc_buf b = 9;
    assert_int_equal(ipc_ring_enq_burst(&x->prod, &b, 1), 1);
    assert_int_equal(ipc_svc_wait(&x->svc, T_SLEEP_MS), 1);
    assert_int_equal(ipc_ld_rlx(&x->st->sleeps), 0);
    ipc_svc_slept(&x->svc, false);
    assert_int_equal(ipc_ld_rlx(&x->st->wake_missed), 0);
    ipc_svc_slept(&x->svc, true);
    assert_int_equal(ipc_ld_rlx(&x->st->wake_missed), 1);
}

/* A nap leaves a ring that holds work unarmed on purpose (the router's
 * paused input) and sleeps on the rings it is given: work already in one of
 * those ends it at once, unslept; a handle published to one with its
 * wake-up flushed ends the sleep by the eventfd, with the rest of the
 * timeout unspent. */
static void test_nap_wakes_on_open_rings_only(void **state)
{
    struct t_fix *x = *state;
    ipc_buf b = 11;
    /* The fixture's ring is the paused input: work waits there. */
    assert_int_equal(ipc_ring_enq_burst(&x->prod, &b, 1), 1);
    assert_int_equal(ipc_svc_nap_us(&x->svc, NULL, 0, 2000), 0); /* nothing armed: runs out */
    assert_int_equal(ipc_ld_rlx(&x->sh->need_wake), 0);
    assert_int_equal(ipc_ld_rlx(&x->st->sleeps), 1);

    /* A second input, open. */
    struct ipc_ring_shared *sh2;
    int fd2;
    struct ipc_err err;
    if (ipc_ring_create("t_wait2", T_RING, 1, 2, 3, 0, &fd2, &sh2, &err) < 0)
        fail_msg("ipc_ring_create: %s", err.msg);
    struct ipc_ring_cons c2;
    ipc_ring_cons_init(&c2, sh2);
    struct ipc_ring_cons *open[1] = {&c2};
    struct t_fix y = *x; /* the producer thread's view: ring 2, our eventfd */
    y.sh = sh2;
    ipc_ring_prod_init(&y.prod, sh2, x->efd);
    y.wake = true;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, t_producer, &y), 0);
    uint64_t t0 = t_now_ms();
    int ret = ipc_svc_nap_us(&x->svc, open, 1, 5 * 1000000);
    uint64_t ms = t_now_ms() - t0;
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(ret, 1);                           /* the eventfd ended it */
    assert_true(ms < 5000);                             /* not the timeout */
    assert_int_equal(ipc_ld_rlx(&sh2->need_wake), 0);   /* disarmed after */
    assert_int_equal(ipc_ld_rlx(&x->sh->need_wake), 0); /* the paused ring never armed */
    assert_int_equal(ipc_ld_rlx(&x->st->sleeps), 2);

    /* Work waiting on the open ring: no sleep at all. */
    assert_int_equal(ipc_svc_nap_us(&x->svc, open, 1, 5 * 1000000), 1);
    assert_int_equal(ipc_ld_rlx(&x->st->sleeps), 2);
    assert_int_equal(ipc_ld_rlx(&sh2->need_wake), 0);
    ipc_ring_detach(sh2);
    close(fd2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_woken_counts_nothing, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_lost_wake_is_counted, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_idle_timeout_counts_nothing, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_no_sleep_and_woken_sleep, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_nap_wakes_on_open_rings_only, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
