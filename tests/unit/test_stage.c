/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_stage.c: ipc/stage.h. With stage counters off nothing in
 * the stats region is touched and no TSC is read; on, each end adds the
 * cycles since its start, chained ends split a span without losing or
 * double-counting a cycle, a pass without packets adds cycles but no call,
 * a TSC that steps back adds no cycles, names are cut to fit, and the wake
 * stage counts the eventfd writes of ipc_svc_flush as its packets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/stage.h"

struct t_fix {
    struct ipc_svc svc;
    struct ipc_svc_stats *st;
};

static int t_setup(void **state)
{
    struct t_fix *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    x->st = aligned_alloc(IPC_CACHELINE, sizeof(*x->st));
    assert_non_null(x->st);
    memset(x->st, 0, sizeof(*x->st));
    x->svc.stats = x->st;
    ipc_wake_set_init(&x->svc.wake);
    *state = x;
    return 0;
}

static int t_teardown(void **state)
{
    struct t_fix *x = *state;
    free(x->st);
    free(x);
    return 0;
}

/* Burn some cycles the compiler cannot drop. */
static volatile unsigned t_sink;

static void t_spin(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        t_sink += i;
}

static void test_stage_off_touches_nothing(void **state)
{
    struct t_fix *x = *state;
    x->svc.stages_on = false;
    struct ipc_svc_stats *before = aligned_alloc(IPC_CACHELINE, sizeof(*before));
    assert_non_null(before);
    memcpy(before, x->st, sizeof(*before));
    uint64_t t = ipc_stage_start(&x->svc);
    assert_int_equal(t, 0);
    t_spin(1000);
    t = ipc_stage_end(&x->svc, 0, t, 32);
    assert_int_equal(t, 0);
    t = ipc_stage_end(&x->svc, 3, t, 0);
    assert_int_equal(t, 0);
    t = ipc_stage_flush(&x->svc, 4, t);
    assert_int_equal(t, 0);
    assert_memory_equal(before, x->st, sizeof(*before));
    free(before);
}

static void test_stage_on_counts(void **state)
{
    struct t_fix *x = *state;
    x->svc.stages_on = true;
    uint64_t t0 = ipc_stage_start(&x->svc);
    assert_true(t0 != 0);
    t_spin(10000);
    uint64_t t1 = ipc_stage_end(&x->svc, 2, t0, 32);
    assert_true(t1 > t0);
    struct ipc_stage *g = &x->st->stage[2];
    assert_int_equal(ipc_ld_rlx(&g->cycles), t1 - t0);
    assert_int_equal(ipc_ld_rlx(&g->pkts), 32);
    assert_int_equal(ipc_ld_rlx(&g->calls), 1);
    /* A second pass adds to the first. */
    uint64_t t2 = ipc_stage_end(&x->svc, 2, ipc_stage_start(&x->svc), 16);
    assert_true(ipc_ld_rlx(&g->cycles) > t1 - t0);
    assert_true(t2 >= t1);
    assert_int_equal(ipc_ld_rlx(&g->pkts), 48);
    assert_int_equal(ipc_ld_rlx(&g->calls), 2);
    /* Nothing else moved. */
    for (unsigned k = 0; k < IPC_STAGE_MAX; k++)
        if (k != 2)
            assert_int_equal(ipc_ld_rlx(&x->st->stage[k].cycles), 0);
    assert_int_equal(ipc_ld_rlx(&x->st->loops), 0);
}

/* Chained ends split the span from the start to the last end exactly. */
static void test_stage_chain(void **state)
{
    struct t_fix *x = *state;
    x->svc.stages_on = true;
    uint64_t t0 = ipc_stage_start(&x->svc);
    t_spin(2000);
    uint64_t t1 = ipc_stage_end(&x->svc, 0, t0, 8);
    t_spin(4000);
    uint64_t t2 = ipc_stage_end(&x->svc, 1, t1, 8);
    t_spin(1000);
    uint64_t t3 = ipc_stage_end(&x->svc, 2, t2, 4);
    assert_true(t0 <= t1 && t1 <= t2 && t2 <= t3);
    uint64_t sum = 0;
    for (unsigned k = 0; k < 3; k++)
        sum += ipc_ld_rlx(&x->st->stage[k].cycles);
    assert_int_equal(sum, t3 - t0);
    assert_int_equal(ipc_ld_rlx(&x->st->stage[0].cycles), t1 - t0);
    assert_int_equal(ipc_ld_rlx(&x->st->stage[1].cycles), t2 - t1);
    assert_int_equal(ipc_ld_rlx(&x->st->stage[2].pkts), 4);
}

/* A pass that found nothing costs cycles but is not a call: pkts/call stays the batch size. */
static void test_stage_empty_pass(void **state)
{
    struct t_fix *x = *state;
    x->svc.stages_on = true;
    uint64_t t = ipc_stage_start(&x->svc);
    t_spin(1000);
    t = ipc_stage_end(&x->svc, 5, t, 0);
    struct ipc_stage *g = &x->st->stage[5];
    assert_true(ipc_ld_rlx(&g->cycles) > 0);
    assert_int_equal(ipc_ld_rlx(&g->pkts), 0);
    assert_int_equal(ipc_ld_rlx(&g->calls), 0);
    ipc_stage_end(&x->svc, 5, t, 32);
    assert_int_equal(ipc_ld_rlx(&g->pkts), 32);
    assert_int_equal(ipc_ld_rlx(&g->calls), 1);
}

/* A TSC that steps back (one the kernel marked unstable, a VM restored from
 * a snapshot) between a start and its end: the stage counts its packets and
 * no cycles, not 2^64 less the step. */
static void test_stage_tsc_step_back(void **state)
{
    struct t_fix *x = *state;
    x->svc.stages_on = true;
    uint64_t ahead = ipc_cycles() + (1ull << 40); /* a start "read" before a step back */
    uint64_t t = ipc_stage_end(&x->svc, 2, ahead, 7);
    assert_true(t < ahead);
    assert_int_equal(x->st->stage[2].cycles, 0);
    assert_int_equal(x->st->stage[2].pkts, 7);
    assert_int_equal(x->st->stage[2].calls, 1);
    t_spin(1000);
    ipc_stage_end(&x->svc, 2, t, 1); /* and the next interval counts again */
    assert_true(x->st->stage[2].cycles > 0);
    assert_true(x->st->stage[2].cycles < (1ull << 40));
}

static void test_stage_names(void **state)
{
    struct t_fix *x = *state;
    const char *names[IPC_STAGE_MAX + 2];
    char buf[IPC_STAGE_MAX + 2][64];
    for (unsigned i = 0; i < IPC_STAGE_MAX + 2; i++) {
        snprintf(buf[i], sizeof buf[i], "stage%u", i);
        names[i] = buf[i];
    }
    memset(buf[1], 'x', 50); /* longer than a stage's name */
    buf[1][50] = 0;
    ipc_stage_names(&x->svc, names, IPC_STAGE_MAX + 2);
    assert_int_equal(ipc_ld_acq(&x->st->nstage), IPC_STAGE_MAX);
    assert_string_equal(x->st->stage[0].name, "stage0");
    assert_int_equal(strlen(x->st->stage[1].name), IPC_STAGE_NAME - 1);
    assert_memory_equal(x->st->stage[1].name, names[1], IPC_STAGE_NAME - 1);
    assert_string_equal(x->st->stage[IPC_STAGE_MAX - 1].name, "stage15");
    /* Naming is not counting: it works, and touches no counter, with stages off. */
    x->svc.stages_on = false;
    ipc_stage_names(&x->svc, names, 2);
    assert_int_equal(ipc_ld_acq(&x->st->nstage), 2);
    assert_int_equal(ipc_ld_rlx(&x->st->stage[0].cycles), 0);
}

/* The wake stage: eventfd writes are its packets, and wakes_sent still counts them. */
static void test_stage_flush(void **state)
{
    struct t_fix *x = *state;
    x->svc.stages_on = true;
    struct ipc_ring_shared *sh;
    int fd;
    struct ipc_err err;
    assert_int_equal(ipc_ring_create("t-stage", 64, 1, 1, 2, 0, &fd, &sh, &err), 0);
    int efd = ipc_wake_eventfd();
    assert_true(efd >= 0);
    struct ipc_ring_prod p;
    struct ipc_ring_cons c;
    ipc_ring_prod_init(&p, sh, efd);
    ipc_ring_cons_init(&c, sh);
    struct ipc_ring_cons *cp = &c;

    /* The consumer asks to be woken; a producer marks the ring and flushes. */
    assert_true(ipc_wake_arm(&cp, 1));
    ipc_buf b = 7;
    assert_int_equal(ipc_ring_enq_burst(&p, &b, 1), 1);
    ipc_wake_mark(&x->svc.wake, &p);
    uint64_t t = ipc_stage_flush(&x->svc, 4, ipc_stage_start(&x->svc));
    assert_true(t != 0);
    struct ipc_stage *g = &x->st->stage[4];
    assert_int_equal(ipc_ld_rlx(&g->pkts), 1);
    assert_int_equal(ipc_ld_rlx(&g->calls), 1);
    assert_true(ipc_ld_rlx(&g->cycles) > 0);
    assert_int_equal(ipc_ld_rlx(&x->st->wakes_sent), 1);

    /* Nobody asked: the flush costs cycles, sends nothing, is no call. */
    ipc_wake_mark(&x->svc.wake, &p);
    ipc_stage_flush(&x->svc, 4, ipc_stage_start(&x->svc));
    assert_int_equal(ipc_ld_rlx(&g->pkts), 1);
    assert_int_equal(ipc_ld_rlx(&g->calls), 1);
    assert_int_equal(ipc_ld_rlx(&x->st->wakes_sent), 1);
    close(efd);
    close(fd);
    ipc_ring_detach(sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stage_off_touches_nothing, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_stage_on_counts, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_stage_chain, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_stage_empty_pass, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_stage_tsc_step_back, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_stage_names, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_stage_flush, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
