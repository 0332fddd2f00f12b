/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_inject.c: the service's half of fault injection
 * (ipc/inject.c), through the real fast path, ipc_svc_beat(). A service
 * (pool owner 2) with one output ring to a consumer (owner 3) in the same
 * process; the test writes commands into the stats region's inject block
 * as the supervisor does (kind, arguments, then seq) and checks the answer
 * (ack, result, ring, handle, count), what the consumer's ipc_ring_recv and
 * the pool make of the fault, and a census after it: nothing lost, nothing
 * held that should not be. The crash runs in a child, which must die of
 * SIGSEGV after answering.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/inject.h"
#include "ipc/svc.h"

#define T_BUFS 256u
#define T_RING 64u
#define T_SELF 2u
#define T_PEER 3u

struct t_fix {
    struct ipc_svc svc;
    struct ipc_pool peer; /* the consumer's view */
    struct ipc_ring_cons cons;
    struct ipc_ring_shared *sh;
    int pool_fd, ring_fd, stats_fd;
    uint64_t seq;
};

static int t_setup(void **state)
{
    struct t_fix *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    struct ipc_err err;
    if (ipc_pool_create("t_inj", T_BUFS, 2048, &x->pool_fd, &err) < 0 ||
        ipc_pool_attach(&x->svc.pool, x->pool_fd, T_SELF, &err) < 0 ||
        ipc_pool_attach(&x->peer, x->pool_fd, T_PEER, &err) < 0 ||
        ipc_stats_create("t_inj", &x->stats_fd, &x->svc.stats, &err) < 0 ||
        ipc_ring_create("t_inj", T_RING, 1, T_SELF, T_PEER, 0, &x->ring_fd, &x->sh, &err) < 0)
        fail_msg("setup: %s", err.msg);
    ipc_ring_prod_init(&x->svc.out[0], x->sh, -1);
    x->svc.n_out = 1;
    ipc_ring_cons_init(&x->cons, x->sh);
    *state = x;
    return 0;
}

static int t_teardown(void **state)
{
    struct t_fix *x = *state;
    ipc_ring_detach(x->sh);
    ipc_shm_unmap(x->svc.stats, sizeof(*x->svc.stats));
    ipc_pool_detach(&x->svc.pool);
    ipc_pool_detach(&x->peer);
    close(x->pool_fd);
    close(x->ring_fd);
    close(x->stats_fd);
    free(x);
    return 0;
}

/* The supervisor's half: the command, then seq (release). */
static uint64_t t_cmd(struct t_fix *x, uint32_t kind, uint64_t a0, uint64_t a1)
{
    struct ipc_inject *in = &x->svc.stats->inject;
    ipc_st_rlx(&in->kind, kind);
    ipc_st_rlx(&in->arg[0], a0);
    ipc_st_rlx(&in->arg[1], a1);
    ipc_st_rel(&in->seq, ++x->seq);
    return x->seq;
}

/* One loop of the service, then: did it answer @seq, and with what result? */
static uint32_t t_beat_answer(struct t_fix *x, uint64_t seq)
{
    ipc_svc_beat(&x->svc);
    assert_int_equal(ipc_ld_acq(&x->svc.stats->inject.ack), seq);
    return ipc_ld_rlx(&x->svc.stats->inject.result);
}

/* The consumer takes what the ring holds: the number of good packets. */
static uint32_t t_consume(struct t_fix *x)
{
    ipc_buf b[T_RING];
    uint32_t n = ipc_ring_recv(&x->cons, &x->peer, b, T_RING);
    ipc_pool_free(&x->peer, b, n);
    return n;
}

static void t_census(struct t_fix *x, uint32_t held_by_self)
{
    ipc_pool_flush(&x->svc.pool);
    ipc_pool_flush(&x->peer);
    struct ipc_ring_ref ref = ipc_ring_ref_take(x->sh);
    struct ipc_census c;
    assert_int_equal(ipc_pool_census(&x->svc.pool, &ref, 1, &c), 0);
    assert_int_equal(c.held_by[T_SELF], held_by_self);
    assert_int_equal(c.free + c.held, T_BUFS);
    assert_int_equal(c.in_rings, 0);
}

static void test_inject_idle_loop_does_nothing(void **state)
{
    struct t_fix *x = *state;
    for (int i = 0; i < 10; i++)
        ipc_svc_beat(&x->svc);
    assert_int_equal(ipc_ld_rlx(&x->svc.stats->inject.ack), 0);
    assert_int_equal(ipc_ld_rlx(&x->svc.stats->loops), 10);
    assert_false(x->svc.inj.busy);
}

static void test_inject_bad_handle_dropped_by_consumer(void **state)
{
    struct t_fix *x = *state;
    uint64_t s = t_cmd(x, IPC_INJ_BAD_HANDLE, 0, 0);
    assert_int_equal(t_beat_answer(x, s), 0);
    struct ipc_inject *in = &x->svc.stats->inject;
    assert_int_equal(ipc_ld_rlx(&in->ring), 0);
    assert_true(ipc_ld_rlx(&in->handle) >= T_BUFS);
    assert_int_equal(ipc_ring_count(x->sh), 1);
    assert_int_equal(t_consume(x), 0);
    assert_int_equal(ipc_ld_rlx(&x->sh->drop_bad_handle), 1);
    /* Carried out once: the next loops do nothing more. */
    ipc_svc_beat(&x->svc);
    assert_int_equal(ipc_ring_count(x->sh), 0);
    t_census(x, 0);
}

static void test_inject_bad_meta_both_variants(void **state)
{
    struct t_fix *x = *state;
    for (int i = 0; i < 2; i++) {
        uint64_t s = t_cmd(x, IPC_INJ_BAD_META, 0, 0);
        assert_int_equal(t_beat_answer(x, s), 0);
        uint32_t v = ipc_ld_rlx(&x->svc.stats->inject.variant);
        assert_int_equal(v, s & 1);
        assert_int_equal(t_consume(x), 0);
    }
    assert_int_equal(ipc_ld_rlx(&x->sh->drop_bad_frame), 1);
    assert_int_equal(ipc_ld_rlx(&x->sh->drop_bad_chain), 1);
    t_census(x, 0); /* the consumer freed both first frames */
}

static void test_inject_bad_meta_without_a_ring_is_freed(void **state)
{
    struct t_fix *x = *state;
    uint64_t s = t_cmd(x, IPC_INJ_BAD_META, IPC_INJ_RING_NONE, 0);
    assert_int_equal(t_beat_answer(x, s), 0);
    assert_int_equal(ipc_ld_rlx(&x->svc.stats->inject.ring), IPC_INJ_RING_NONE);
    assert_int_equal(ipc_ring_count(x->sh), 0);
    assert_int_equal(ipc_ld_rlx(&x->svc.pool.hdr->free_bad), 0);
    t_census(x, 0);
}

static void test_inject_chain_loop_refused(void **state)
{
    struct t_fix *x = *state;
    uint64_t s = t_cmd(x, IPC_INJ_CHAIN_LOOP, 0, 0);
    assert_int_equal(t_beat_answer(x, s), 0);
    ipc_buf b = ipc_ld_rlx(&x->svc.stats->inject.handle);
    assert_int_equal(ipc_pool_meta(&x->svc.pool, b)->next, b);
    assert_int_equal(t_consume(x), 0);
    assert_int_equal(ipc_ld_rlx(&x->sh->drop_bad_chain), 1);
    t_census(x, 0);
}

static void test_inject_double_free_refused(void **state)
{
    struct t_fix *x = *state;
    uint64_t s = t_cmd(x, IPC_INJ_DOUBLE_FREE, 0, 0);
    assert_int_equal(t_beat_answer(x, s), 0);
    assert_int_equal(ipc_ld_rlx(&x->svc.stats->inject.count), 0);
    assert_int_equal(ipc_ld_rlx(&x->svc.pool.hdr->free_bad), 1);
    t_census(x, 0);
}

static void test_inject_leak_held_until_reclaimed(void **state)
{
    struct t_fix *x = *state;
    uint64_t s = t_cmd(x, IPC_INJ_LEAK, 12, 0);
    assert_int_equal(t_beat_answer(x, s), 0);
    struct ipc_inject *in = &x->svc.stats->inject;
    assert_int_equal(ipc_ld_rlx(&in->count), 12);
    for (uint32_t i = 0; i < IPC_INJ_SHOW; i++)
        assert_int_equal(ipc_pool_owner(&x->svc.pool, ipc_ld_rlx(&in->bufs[i])), T_SELF);
    t_census(x, 12);
    /* What the supervisor does at its death: they all come back. */
    struct ipc_ring_ref ref = ipc_ring_ref_take(x->sh);
    assert_int_equal(ipc_pool_reclaim(&x->peer, T_SELF, &ref, 1), 12);
    t_census(x, 0);
}

static void test_inject_bad_arguments_refused(void **state)
{
    struct t_fix *x = *state;
    assert_int_equal(t_beat_answer(x, t_cmd(x, IPC_INJ_BAD_HANDLE, 1, 0)), EINVAL); /* no ring 1 */
    assert_int_equal(t_beat_answer(x, t_cmd(x, IPC_INJ_CHAIN_LOOP, IPC_INJ_RING_NONE, 0)), EINVAL);
    assert_int_equal(t_beat_answer(x, t_cmd(x, IPC_INJ_BAD_META, 5, 0)), EINVAL);
    assert_int_equal(t_beat_answer(x, t_cmd(x, IPC_INJ_LEAK, 0, 0)), EINVAL);
    assert_int_equal(t_beat_answer(x, t_cmd(x, IPC_INJ_LEAK, IPC_INJ_LEAK_MAX + 1, 0)), EINVAL);
    assert_int_equal(t_beat_answer(x, t_cmd(x, IPC_INJ_SLOW, IPC_INJ_SLOW_US_MAX + 1, 10)), EINVAL);
    assert_int_equal(t_beat_answer(x, t_cmd(x, 999, 0, 0)), EINVAL);
    assert_int_equal(t_beat_answer(x, t_cmd(x, IPC_INJ_NONE, 0, 0)), EINVAL);
    assert_int_equal(ipc_ring_count(x->sh), 0);
    t_census(x, 0);
}

static uint64_t t_ms(void)
{
    return ipc_svc_now_ns() / 1000000u;
}

static void test_inject_slow_spins_then_stops(void **state)
{
    struct t_fix *x = *state;
    assert_int_equal(t_beat_answer(x, t_cmd(x, IPC_INJ_SLOW, 2000, 40)), 0);
    assert_true(x->svc.inj.busy);
    uint64_t t0 = ipc_svc_now_ns();
    ipc_svc_beat(&x->svc);
    assert_true(ipc_svc_now_ns() - t0 >= 2000000u); /* one loop: at least 2 ms */
    uint64_t end = t_ms() + 1000;
    while (x->svc.inj.busy && t_ms() < end)
        ipc_svc_beat(&x->svc);
    assert_false(x->svc.inj.busy);
    t0 = ipc_svc_now_ns();
    ipc_svc_beat(&x->svc);
    assert_true(ipc_svc_now_ns() - t0 < 2000000u);
}

/* A successor binds to the seq it finds: its predecessor's command is not
 * carried out twice (ipc_svc_open sets seen the same way). */
static void test_inject_successor_skips_old_command(void **state)
{
    struct t_fix *x = *state;
    t_cmd(x, IPC_INJ_LEAK, 3, 0);
    x->svc.inj.seen = ipc_ld_acq(&x->svc.stats->inject.seq);
    ipc_svc_beat(&x->svc);
    assert_int_equal(ipc_ld_rlx(&x->svc.stats->inject.ack), 0);
    t_census(x, 0);
}

/* An empty pool: tried again each loop, answered once a buffer is there, or
 * with ENOBUFS after IPC_INJ_RETRY_NS. */
static void test_inject_empty_pool_retried(void **state)
{
    struct t_fix *x = *state;
    static ipc_buf all[T_BUFS];
    uint32_t n = ipc_pool_alloc(&x->peer, all, T_BUFS);
    assert_int_equal(n, T_BUFS);
    uint64_t s = t_cmd(x, IPC_INJ_CHAIN_LOOP, 0, 0);
    ipc_svc_beat(&x->svc);
    ipc_svc_beat(&x->svc);
    assert_int_equal(ipc_ld_rlx(&x->svc.stats->inject.ack), s - 1);
    ipc_pool_free(&x->peer, all, 1);
    ipc_pool_flush(&x->peer);
    assert_int_equal(t_beat_answer(x, s), 0);
    assert_int_equal(t_consume(x), 0);
    /* Still empty for longer than the retry window: ENOBUFS. */
    s = t_cmd(x, IPC_INJ_DOUBLE_FREE, 0, 0);
    uint64_t end = t_ms() + 2000;
    while (ipc_ld_acq(&x->svc.stats->inject.ack) != s && t_ms() < end) {
        ipc_svc_beat(&x->svc);
        usleep(1000);
    }
    assert_int_equal(ipc_ld_acq(&x->svc.stats->inject.ack), s);
    assert_int_equal(ipc_ld_rlx(&x->svc.stats->inject.result), ENOBUFS);
    ipc_pool_free(&x->peer, all + 1, T_BUFS - 1);
    t_census(x, 0);
}

static void test_inject_crash_answers_then_segfaults(void **state)
{
    struct t_fix *x = *state;
    uint64_t s = t_cmd(x, IPC_INJ_CRASH, 0, 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* cmocka catches it to report a test's crash */
        ipc_svc_beat(&x->svc);
        _exit(0); /* not a crash: the parent fails */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer's SEGV handler reports and exits instead. */
    assert_true((WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) || (WIFEXITED(st) && WEXITSTATUS(st) != 0));
#else
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
#endif
    /* The stats region is shared: the answer came before the death. */
    assert_int_equal(ipc_ld_acq(&x->svc.stats->inject.ack), s);
    assert_int_equal(ipc_ld_rlx(&x->svc.stats->inject.result), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_inject_idle_loop_does_nothing, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_bad_handle_dropped_by_consumer, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_bad_meta_both_variants, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_bad_meta_without_a_ring_is_freed, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_chain_loop_refused, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_double_free_refused, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_leak_held_until_reclaimed, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_bad_arguments_refused, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_slow_spins_then_stops, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_successor_skips_old_command, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_empty_pool_retried, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_inject_crash_answers_then_segfaults, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
