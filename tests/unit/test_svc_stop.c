/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_svc_stop.c: the one stop path of every service
 * (ipc_svc_catch_stop, ipc/svc.h). A stop signal that arrives after the
 * loop's last look at its flag and before the sleep must end the sleep at
 * once, not after the idle period: the signal is sent right in that window
 * (the flag was just read as 0) and the sleep that follows must return
 * within a bound far below its timeout, with the flag set. A handler that
 * only sets the flag fails this: the sleep runs its whole timeout. Also: a
 * signal during the sleep ends it, and a loop that never sleeps sees the
 * signal within IPC_SVC_STOP_LOOPS beats.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/svc.h"
#include "ipc/wake.h"

#define T_TIMEOUT_US 3000000 /* the sleep's timeout: what a missed stop costs */
#define T_BOUND_MS 1000      /* a stop that ends the sleep ends it well within this */
#define T_ROUNDS 50

static volatile sig_atomic_t t_stop;

struct t_fix {
    struct ipc_svc svc;
    struct ipc_svc_stats *st;
};

static uint64_t t_now_ms(void)
{
    return ipc_svc_now_ns() / 1000000u;
}

static int t_setup(void **state)
{
    struct t_fix *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    x->st = aligned_alloc(IPC_CACHELINE, sizeof(*x->st));
    assert_non_null(x->st);
    memset(x->st, 0, sizeof(*x->st));
    x->svc.stats = x->st;
    x->svc.wake_fd = ipc_wake_eventfd();
    assert_true(x->svc.wake_fd >= 0);
    ipc_svc_catch_stop(&t_stop);
    t_stop = 0;
    *state = x;
    return 0;
}

static int t_teardown(void **state)
{
    struct t_fix *x = *state;
    close(x->svc.wake_fd);
    free(x->st);
    free(x);
    return 0;
}

/* The race, forced: the loop has looked (stop is 0) and is about to sleep
 * when the signal comes. */
static void t_signal_in_window(struct t_fix *x, int sig)
{
    for (int i = 0; i < T_ROUNDS; i++) {
        t_stop = 0;
        if (t_stop) /* the loop's last look before the sleep */
            fail_msg("stop set before the signal");
        kill(getpid(), sig);
        uint64_t t0 = t_now_ms();
        ipc_svc_wait_us(&x->svc, T_TIMEOUT_US);
        uint64_t ms = t_now_ms() - t0;
        if (ms > T_BOUND_MS)
            fail_msg("round %d: signal %d just before the sleep: slept %llu ms (timeout %d ms); the stop was missed", i,
                     sig, (unsigned long long)ms, T_TIMEOUT_US / 1000);
        if (!t_stop)
            fail_msg("round %d: the sleep ended, but the stop flag is not set", i);
    }
}

static void test_sigterm_before_sleep_wakes(void **state)
{
    t_signal_in_window(*state, SIGTERM);
}

static void test_sigint_before_sleep_wakes(void **state)
{
    t_signal_in_window(*state, SIGINT);
}

static void *t_killer(void *arg)
{
    (void)arg;
    struct timespec d = {0, 50 * 1000000L};
    nanosleep(&d, NULL);
    kill(getpid(), SIGTERM);
    return NULL;
}

/* A signal while asleep ends the sleep. The thread inherits the blocked
 * mask, so the signal goes to the signalfd, not to a default action. */
static void test_sigterm_during_sleep_wakes(void **state)
{
    struct t_fix *x = *state;
    pthread_t th;
    uint64_t t0 = t_now_ms();
    assert_int_equal(pthread_create(&th, NULL, t_killer, NULL), 0);
    while (!t_stop && t_now_ms() - t0 < 2 * T_TIMEOUT_US / 1000)
        ipc_svc_wait_us(&x->svc, T_TIMEOUT_US);
    uint64_t ms = t_now_ms() - t0;
    pthread_join(th, NULL);
    assert_true(t_stop);
    if (ms > T_BOUND_MS)
        fail_msg("signal during the sleep: it ended after %llu ms", (unsigned long long)ms);
}

/* A loop that never sleeps: its beats take the signal. */
static void test_busy_loop_sees_stop(void **state)
{
    struct t_fix *x = *state;
    kill(getpid(), SIGTERM);
    unsigned loops = 0;
    while (!t_stop && loops < 4 * 256)
        ipc_svc_beat(&x->svc), loops++;
    assert_true(t_stop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sigterm_before_sleep_wakes, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_sigint_before_sleep_wakes, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_during_sleep_wakes, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_busy_loop_sees_stop, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
