/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_self.c: the supervisor's own scheduling
 * (supervisor/sched_self.c), with the service states stubbed:
 *   - sup_pace naps between slices of a busy loop only while a service is
 *     runnable, and at most its cap in all;
 *   - sup_self_idle puts the calling thread in SCHED_IDLE, sup_self_serve
 *     back in SCHED_OTHER; held past its bound (a quarter of
 *     orphan_grace_ms), a thread of its own raises it meanwhile.
 * The last two need CAP_SYS_NICE (root), else they skip.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/sup.h"

static char state = 'S';

char sup_proc_state(pid_t pid)
{
    (void)pid;
    return state;
}

bool sup_sched_can_raise(void)
{
    return geteuid() == 0;
}

/* Work for @ms, calling sup_pace as a loop over items would. */
static void busy(struct sup_pace *p, unsigned ms)
{
    uint64_t end = sup_now_ns() + (uint64_t)ms * 1000000u;
    while (sup_now_ns() < end)
        sup_pace(p);
}

static void t_pace_idle_services(void **st)
{
    (void)st;
    struct sup_pace p = {.pid = {1234}, .npid = 1};
    state = 'S';
    busy(&p, 20);
    assert_int_equal(p.naps, 0);
    assert_int_equal(p.napped_ns, 0);
    struct sup_pace none = {.npid = 0};
    state = 'R';
    busy(&none, 20); /* no service given: nothing to yield to */
    assert_int_equal(none.naps, 0);
}

/* Work until @done or 10 s, calling sup_pace as a loop over items would. */
static bool busy_until(struct sup_pace *p, bool (*done)(const struct sup_pace *))
{
    uint64_t end = sup_now_ns() + 10000000000ull;
    while (!done(p) && sup_now_ns() < end)
        sup_pace(p);
    return done(p);
}
static bool three_naps(const struct sup_pace *p) { return p->naps >= 3; }
static bool capped(const struct sup_pace *p) { return p->napped_ns >= 50000000u; }

static void t_pace_runnable(void **st)
{
    (void)st;
    struct sup_pace p = {.pid = {1234}, .npid = 1};
    state = 'R';
    uint64_t t0 = sup_now_ns();
    assert_true(busy_until(&p, three_naps));
    /* A nap per ms of work at most: 3 naps took 3 ms of work or more. */
    assert_true(sup_now_ns() - t0 >= 3000000u + p.napped_ns);
    assert_true(p.napped_ns >= (uint64_t)p.naps * 150000u);
    /* Bounded: 50 ms of naps in all, then none. */
    assert_true(busy_until(&p, capped));
    unsigned naps = p.naps;
    busy(&p, 20);
    assert_int_equal(p.naps, naps);
}

static struct sup s_sup;

static void t_self(void **st)
{
    (void)st;
    if (geteuid() != 0)
        skip();
    s_sup.m.router.orphan_grace_ms = 20000;
    int before = sched_getscheduler(0);
    assert_true(before == SCHED_OTHER || before == SCHED_BATCH);
    sup_self_idle(&s_sup);
    assert_int_equal(sched_getscheduler(0), SCHED_IDLE);
    sup_self_serve(&s_sup);
    assert_int_equal(sched_getscheduler(0), before);
    sup_self_serve(&s_sup); /* twice: nothing */
    assert_int_equal(sched_getscheduler(0), before);
}

static void t_self_bound(void **st)
{
    (void)st;
    if (geteuid() != 0)
        skip();
    s_sup.m.router.orphan_grace_ms = 80; /* a bound of 20 ms */
    int before = sched_getscheduler(0);
    uint64_t t0 = sup_now_ns();
    sup_self_idle(&s_sup);
    /* In SCHED_IDLE on a busy machine this thread may run again only
     * after the bound raised it: then 20 ms have passed at least. */
    if (sched_getscheduler(0) != SCHED_IDLE)
        assert_true(sup_now_ns() - t0 >= 20000000u);
    uint64_t end = sup_now_ns() + 10000000000ull;
    while (sched_getscheduler(0) == SCHED_IDLE && sup_now_ns() < end) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(sched_getscheduler(0), before);
    sup_self_serve(&s_sup);
    assert_int_equal(sched_getscheduler(0), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_pace_idle_services),
        cmocka_unit_test(t_pace_runnable),
        cmocka_unit_test(t_self),
        cmocka_unit_test(t_self_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
