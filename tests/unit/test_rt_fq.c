/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_fq.c: the router's egress queue (services/router/fq.h):
 * a packet of a second flow leaves after at most a quantum of a train
 * queued before it, not after the train; each flow keeps its order; turns
 * go round in quanta, also across pops smaller than a quantum; a full queue
 * drops the oldest of its longest flow (the newcomer itself when its flow is
 * that one), and a bucket a drop empties loses its turn without stalling
 * the others.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ipc/ring.h"
#include "services/router/fq.h"

#define T_BUFS 4096u

static ipc_buf t_next[T_BUFS];

/* Pop everything, in order, into @out; returns how many. */
static uint32_t t_drain(struct rt_fq *q, ipc_buf *out, uint32_t max)
{
    uint32_t n = 0, got;
    while ((got = rt_fq_pop(q, t_next, out + n, max - n < 5 ? max - n : 5)) > 0)
        n += got; /* pops of 5: fewer than a quantum, so turns span pops */
    return n;
}

static void test_rt_fq_second_flow_passes_train(void **state)
{
    (void)state;
    struct rt_fq q;
    rt_fq_init(&q, 2048);
    for (ipc_buf b = 0; b < 1000; b++) /* a train of flow A */
        assert_int_equal(rt_fq_push(&q, t_next, 3, b), IPC_BUF_NONE);
    assert_int_equal(rt_fq_push(&q, t_next, 40, 3000), IPC_BUF_NONE); /* a ping */
    assert_int_equal(q.held, 1001);
    ipc_buf out[1001];
    assert_int_equal(t_drain(&q, out, 1001), 1001);
    assert_int_equal(q.held, 0);
    /* A's first quantum, then the ping, then the rest of A in order. */
    for (uint32_t i = 0; i < RT_FQ_QUANTUM; i++)
        assert_int_equal(out[i], i);
    assert_int_equal(out[RT_FQ_QUANTUM], 3000);
    for (uint32_t i = RT_FQ_QUANTUM + 1; i < 1001; i++)
        assert_int_equal(out[i], i - 1);
    assert_int_equal(rt_fq_pop(&q, t_next, out, 8), 0);
}

static void test_rt_fq_round_robin(void **state)
{
    (void)state;
    struct rt_fq q;
    rt_fq_init(&q, 2048);
    /* Flows A (bucket 0: even handles) and B (bucket 63: odd), 40 each. */
    for (ipc_buf b = 0; b < 80; b++)
        assert_int_equal(rt_fq_push(&q, t_next, b % 2 ? 63 : 0, b), IPC_BUF_NONE);
    ipc_buf out[80];
    assert_int_equal(t_drain(&q, out, 80), 80);
    ipc_buf last[2] = {IPC_BUF_NONE, IPC_BUF_NONE};
    for (uint32_t i = 0; i < 80; i++) {
        /* Turns of a quantum each, A first. */
        assert_int_equal(out[i] % 2, (i / RT_FQ_QUANTUM) % 2);
        unsigned f = out[i] % 2;
        if (last[f] != IPC_BUF_NONE)
            assert_true(out[i] > last[f]); /* each flow in order */
        last[f] = out[i];
    }
    /* Emptied and pushed again: a new round starts with a whole turn. */
    for (ipc_buf b = 0; b < 3; b++)
        rt_fq_push(&q, t_next, 7, 100 + b);
    rt_fq_push(&q, t_next, 8, 200);
    assert_int_equal(t_drain(&q, out, 80), 4);
    assert_int_equal(out[0], 100);
    assert_int_equal(out[2], 102);
    assert_int_equal(out[3], 200);
}

static void test_rt_fq_full_drops_longest(void **state)
{
    (void)state;
    struct rt_fq q;
    rt_fq_init(&q, 10);
    for (ipc_buf b = 0; b < 9; b++)
        assert_int_equal(rt_fq_push(&q, t_next, 1, b), IPC_BUF_NONE);
    assert_int_equal(rt_fq_push(&q, t_next, 2, 100), IPC_BUF_NONE);
    /* Full: B's newcomer pushes out A's oldest, not itself. */
    assert_int_equal(rt_fq_push(&q, t_next, 2, 101), 0);
    assert_int_equal(rt_fq_push(&q, t_next, 2, 102), 1);
    assert_int_equal(q.held, 10);
    ipc_buf out[16];
    assert_int_equal(t_drain(&q, out, 16), 10);
    /* A's 7 left fit in its turn, then B's 3. */
    static const ipc_buf want[10] = {2, 3, 4, 5, 6, 7, 8, 100, 101, 102};
    for (unsigned i = 0; i < 10; i++)
        assert_int_equal(out[i], want[i]);
}

static void test_rt_fq_full_own_flow(void **state)
{
    (void)state;
    struct rt_fq q;
    rt_fq_init(&q, 4);
    for (ipc_buf b = 0; b < 3; b++)
        assert_int_equal(rt_fq_push(&q, t_next, 5, b), IPC_BUF_NONE);
    assert_int_equal(rt_fq_push(&q, t_next, 6, 50), IPC_BUF_NONE);
    /* The newcomer's flow is the longest: its own oldest goes. */
    assert_int_equal(rt_fq_push(&q, t_next, 5, 3), 0);
    assert_int_equal(rt_fq_push(&q, t_next, 5, 4), 1);
    ipc_buf out[8];
    assert_int_equal(t_drain(&q, out, 8), 4);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 3);
    assert_int_equal(out[2], 4);
    assert_int_equal(out[3], 50);
}

static void test_rt_fq_emptied_by_drop(void **state)
{
    (void)state;
    struct rt_fq q;
    rt_fq_init(&q, 1);
    assert_int_equal(rt_fq_push(&q, t_next, 9, 7), IPC_BUF_NONE);
    /* As long as 9's: the newcomer goes, and its bucket is listed empty. */
    assert_int_equal(rt_fq_push(&q, t_next, 10, 8), 8);
    /* Again: 9 with two is the longest and loses its oldest; then 12's
     * newcomer ties 9 and goes, leaving 12 listed empty behind 9. */
    rt_fq_init(&q, 1);
    assert_int_equal(rt_fq_push(&q, t_next, 9, 7), IPC_BUF_NONE);
    assert_int_equal(rt_fq_push(&q, t_next, 9, 11), 7);
    assert_int_equal(rt_fq_push(&q, t_next, 12, 13), 13);
    ipc_buf out[4];
    assert_int_equal(rt_fq_pop(&q, t_next, out, 4), 1);
    assert_int_equal(out[0], 11);
    assert_int_equal(q.held, 0);
    /* The empty listed bucket gave up its turn: a new packet leaves next. */
    assert_int_equal(rt_fq_push(&q, t_next, 12, 14), IPC_BUF_NONE);
    assert_int_equal(rt_fq_pop(&q, t_next, out, 4), 1);
    assert_int_equal(out[0], 14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rt_fq_second_flow_passes_train),
        cmocka_unit_test(test_rt_fq_round_robin),
        cmocka_unit_test(test_rt_fq_full_drops_longest),
        cmocka_unit_test(test_rt_fq_full_own_flow),
        cmocka_unit_test(test_rt_fq_emptied_by_drop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
