/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_pool_kill.c: a kill at any instruction loses no buffer.
 * A child allocates, frees, builds chains, sends to one ring and receives
 * from another in a tight loop, and is killed with SIGKILL at a random
 * moment, KILL_ROUNDS (default 1000) times. After each kill the supervisor's
 * reclaim must make the census balance with nothing held by the dead child,
 * and every free buffer must still be reachable by allocation.
 * The seed is printed; KILL_SEED reproduces a run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/pool.h"
#include "ipc/ring.h"

#define T_NBUFS 4096u
#define T_CHILD 2u  /* the service that gets killed */
#define T_PEER 3u   /* its live peer, played by the test */
#define T_HELD 600u /* most the child holds privately */

struct t_world {
    int pool_fd, out_fd, in_fd;
    struct ipc_pool sup, peer;
    struct ipc_ring_shared *out; /* child -> peer */
    struct ipc_ring_shared *in;  /* peer -> child */
    struct ipc_ring_prod peer_prod;
    struct ipc_ring_cons peer_cons;
};

static uint64_t t_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The victim: never returns. */
static void t_child(struct t_world *w, int ready_fd, uint64_t seed)
{
    struct ipc_pool pool;
    struct ipc_err err;
    if (ipc_pool_attach(&pool, w->pool_fd, T_CHILD, &err) < 0)
        _exit(2);
    struct ipc_ring_prod prod;
    struct ipc_ring_cons cons;
    ipc_ring_prod_init(&prod, w->out, -1);
    ipc_ring_cons_init(&cons, w->in);
    static ipc_buf held[T_HELD + 64];
    uint32_t nheld = 0;
    if (write(ready_fd, "r", 1) != 1)
        _exit(3);
    for (;;) {
        uint64_t r = t_rand(&seed);
        switch (r % 6) {
        case 0: { /* allocate a batch */
            uint32_t want = 1 + (uint32_t)(r >> 8) % 64;
            if (nheld + want <= T_HELD)
                nheld += ipc_pool_alloc(&pool, held + nheld, want);
            break;
        }
        case 1: { /* a chained packet */
            ipc_buf h;
            if (nheld < T_HELD && ipc_pool_alloc_chain(&pool, 1 + (uint32_t)(r >> 8) % 20000, &h) == 0)
                held[nheld++] = h;
            break;
        }
        case 2: { /* free a batch from the end */
            uint32_t k = (uint32_t)(r >> 8) % (nheld + 1);
            ipc_pool_free(&pool, held + nheld - k, k);
            nheld -= k;
            break;
        }
        case 3: { /* send a batch */
            uint32_t k = (uint32_t)(r >> 8) % (nheld + 1);
            uint32_t first = nheld - k;
            uint32_t sent = ipc_ring_enq_burst(&prod, held + first, k);
            /* What did not fit stays held. */
            memmove(held + first, held + first + sent, (k - sent) * sizeof(held[0]));
            nheld = first + (k - sent);
            break;
        }
        case 4: /* receive what the peer sent */
            if (nheld + 64 <= T_HELD)
                nheld += ipc_ring_recv(&cons, &pool, held + nheld, 64);
            break;
        case 5: /* give magazines back now and then */
            if ((r >> 8) % 16 == 0)
                ipc_pool_flush(&pool);
            break;
        }
    }
}

static struct ipc_census t_census_ok(struct t_world *w, unsigned round)
{
    struct ipc_census c;
    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(w->out), ipc_ring_ref_take(w->in)};
    if (ipc_pool_census(&w->sup, rings, 2, &c) != 0)
        fail_msg("round %u: census does not balance: free %u rings %u held %u lost %u dup %u bad %u", round, c.free,
                 c.in_rings, c.held, c.lost, c.dup, c.bad_owner);
    return c;
}

static void test_pool_kill_at_any_instruction(void **state)
{
    (void)state;
    struct t_world w;
    struct ipc_err err;
    memset(&w, 0, sizeof(w));
    assert_int_equal(ipc_pool_create("kill-pool", T_NBUFS, IPC_FRAME_DEFAULT, &w.pool_fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&w.sup, w.pool_fd, IPC_OWNER_SUPERVISOR, &err), 0);
    assert_int_equal(ipc_pool_attach(&w.peer, w.pool_fd, T_PEER, &err), 0);
    assert_int_equal(ipc_ring_create("kill-out", 256, 1, T_CHILD, T_PEER, UINT32_MAX - 100, &w.out_fd, &w.out, &err), 0);
    assert_int_equal(ipc_ring_create("kill-in", 256, 2, T_PEER, T_CHILD, 0, &w.in_fd, &w.in, &err), 0);
    ipc_ring_prod_init(&w.peer_prod, w.in, -1);
    ipc_ring_cons_init(&w.peer_cons, w.out);

    const char *s = getenv("KILL_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) * 2654435761u + (uint64_t)getpid();
    if (seed == 0)
        seed = 1;
    const char *rs = getenv("KILL_ROUNDS");
    unsigned rounds = rs ? (unsigned)atoi(rs) : 1000;
    printf("kill test: %u rounds, KILL_SEED=%llu\n", rounds, (unsigned long long)seed);

    static ipc_buf all[T_NBUFS];
    uint64_t reclaimed_total = 0;
    for (unsigned round = 0; round < rounds; round++) {
        /* The peer keeps the child's input ring stocked. */
        ipc_buf b[32];
        uint32_t n = ipc_pool_alloc(&w.peer, b, 32);
        for (uint32_t i = 0; i < n; i++)
            ipc_pool_meta(&w.peer, b[i])->len = 60;
        uint32_t sent = ipc_ring_enq_burst(&w.peer_prod, b, n);
        ipc_pool_free(&w.peer, b + sent, n - sent);

        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        uint64_t child_seed = t_rand(&seed);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pfd[0]);
            t_child(&w, pfd[1], child_seed);
        }
        close(pfd[1]);
        char c;
        ssize_t rd = read(pfd[0], &c, 1);
        close(pfd[0]);
        /* A random moment inside the child's loop: 0 to 2 ms after ready. */
        struct timespec ts = {0, (long)(t_rand(&seed) % 2000000)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (rd != 1)
            fail_msg("round %u: child failed before ready (status %#x)", round, status);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

        struct ipc_ring_ref rings[] = {ipc_ring_ref_take(w.out), ipc_ring_ref_take(w.in)};
        int rec = ipc_pool_reclaim(&w.sup, T_CHILD, rings, 2);
        assert_true(rec >= 0);
        reclaimed_total += (uint64_t)rec;
        struct ipc_census cs = t_census_ok(&w, round);
        if (cs.held_by[T_CHILD] != 0)
            fail_msg("round %u: the dead child still holds %u buffers", round, cs.held_by[T_CHILD]);
        /* A kill at any instruction leaves nothing the supervisor's checks
         * take for corruption: no false alarm, nothing "repaired". */
        if (w.sup.corrupt != 0 || cs.bad_depot != 0 || cs.bad_link != 0)
            fail_msg("round %u: reclaim found %llu corrupt words, the census %u bad depot words and %u bad links "
                     "after a plain kill", round, (unsigned long long)w.sup.corrupt, cs.bad_depot, cs.bad_link);

        /* The peer drains what the child published: every packet valid. */
        uint32_t got;
        while ((got = ipc_ring_recv(&w.peer_cons, &w.peer, b, 32)) > 0)
            ipc_pool_free(&w.peer, b, got);
        uint64_t bad = ipc_ld_rlx(&w.out->drop_bad_handle) + ipc_ld_rlx(&w.out->drop_bad_owner) +
                       ipc_ld_rlx(&w.out->drop_bad_frame) + ipc_ld_rlx(&w.out->drop_bad_chain);
        if (bad)
            fail_msg("round %u: %llu bad packets came out of the dead child's ring", round, (unsigned long long)bad);

        /* Allocation still works: every free buffer is reachable. */
        ipc_pool_flush(&w.peer);
        cs = t_census_ok(&w, round);
        uint32_t want = cs.free;
        uint32_t all_n = ipc_pool_alloc(&w.peer, all, T_NBUFS);
        if (all_n != want)
            fail_msg("round %u: %u buffers free but %u allocatable", round, want, all_n);
        assert_int_equal(ipc_pool_free(&w.peer, all, all_n), all_n);
        ipc_pool_flush(&w.peer);
    }
    struct ipc_census cs = t_census_ok(&w, rounds);
    printf("kill test: %llu buffers reclaimed from %u dead children; %u in the child's input ring, %u free\n",
           (unsigned long long)reclaimed_total, rounds, cs.in_rings, cs.free);
    assert_int_equal(cs.held, 0);
    assert_int_equal(cs.free + cs.in_rings, T_NBUFS);
    ipc_pool_detach(&w.peer);
    ipc_pool_detach(&w.sup);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_kill_at_any_instruction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
