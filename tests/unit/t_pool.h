/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/t_pool.h: the pool tests' fixture (a pool, the supervisor's and
 * two services' views of it, a ring A -> B) and their checks: what the
 * supervisor's side told, the census, a repair that leaves every buffer
 * free. Shared by test_pool.c and test_pool_hostile.c.
 */
#ifndef RR_TESTS_T_POOL_H
#define RR_TESTS_T_POOL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipc/pool.h"
#include "ipc/ring.h"


#define T_NBUFS 1000u /* not a multiple of IPC_MAG: the last magazine is partial */
#define T_A 2u        /* owner ids of two services */
#define T_B 3u

struct t_fix {
    int pool_fd;
    struct ipc_pool sup, a, b;
    int ring_fd;
    struct ipc_ring_shared *ring; /* A -> B */
    struct ipc_ring_prod prod;
    struct ipc_ring_cons cons;
};

static inline int t_setup(void **state)
{
    struct t_fix *f = calloc(1, sizeof(*f));
    struct ipc_err err = {{0}};
    assert_non_null(f);
    assert_int_equal(ipc_pool_create("t-pool", T_NBUFS, IPC_FRAME_DEFAULT, &f->pool_fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&f->sup, f->pool_fd, IPC_OWNER_SUPERVISOR, &err), 0);
    assert_int_equal(ipc_pool_attach(&f->a, f->pool_fd, T_A, &err), 0);
    assert_int_equal(ipc_pool_attach(&f->b, f->pool_fd, T_B, &err), 0);
    assert_int_equal(ipc_ring_create("t-ring", 256, 1, T_A, T_B, 0, &f->ring_fd, &f->ring, &err), 0);
    ipc_ring_prod_init(&f->prod, f->ring, -1);
    ipc_ring_cons_init(&f->cons, f->ring);
    *state = f;
    return 0;
}

static inline int t_teardown(void **state)
{
    struct t_fix *f = *state;
    ipc_pool_detach(&f->a);
    ipc_pool_detach(&f->b);
    ipc_pool_detach(&f->sup);
    ipc_ring_detach(f->ring);
    close(f->ring_fd);
    close(f->pool_fd);
    free(f);
    return 0;
}

/* What the supervisor's side told (ipc_pool_set_report), for the hostile tests. */
static char t_told[64][400];
static unsigned t_ntold;

static inline void t_report(void *arg, const char *line)
{
    (void)arg;
    if (t_ntold < 64)
        snprintf(t_told[t_ntold], sizeof(t_told[0]), "%s", line);
    t_ntold++;
}

static inline void t_listen(struct t_fix *f)
{
    t_ntold = 0;
    ipc_pool_set_report(&f->sup, t_report, NULL);
}

/* Some line told contains every one of @words (NULL-terminated). */
static inline bool t_told_all(const char *const *words)
{
    for (unsigned i = 0; i < t_ntold && i < 64; i++) {
        bool all = true;
        for (const char *const *w = words; *w && all; w++)
            all = strstr(t_told[i], *w) != NULL;
        if (all)
            return true;
    }
    return false;
}

#define T_TOLD(...) t_told_all((const char *const[]){__VA_ARGS__, NULL})

static inline void t_print_told(void)
{
    for (unsigned i = 0; i < t_ntold && i < 64; i++)
        print_message("  told: %s\n", t_told[i]);
}

/* A process is gone: what its successor starts from is an empty cache. */
static inline void t_gone(struct ipc_pool *p)
{
    for (int i = 0; i < 2; i++)
        p->mag[i] = (struct ipc_mag){.slot = IPC_BUF_NONE, .head = IPC_BUF_NONE, .cnt = 0};
}

static inline uint64_t t_word(uint16_t owner, uint32_t cnt, uint32_t head)
{
    return ((uint64_t)owner << 48) | ((uint64_t)cnt << 32) | head;
}

/* Depot words FREE with buffers on them: magazines anyone may claim. */
static inline uint32_t t_free_mags(const struct ipc_pool *p)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < p->ndepot; s++) {
        uint64_t w = ipc_ld_rlx(&p->depot[s].word);
        n += (w >> 48) == IPC_OWNER_FREE && ((w >> 32) & 0xffff) > 0;
    }
    return n;
}

/* Every buffer is counted in exactly one of the census's places. */
static inline void t_accounted(const struct ipc_census *c)
{
    uint32_t sum = c->free + c->in_rings + c->held + c->kernel + c->lost + c->bad_owner;
    if (sum != c->total)
        fail_msg("census accounts for %u of %u buffers: free %u rings %u held %u kernel %u lost %u bad owner %u", sum,
                 c->total, c->free, c->in_rings, c->held, c->kernel, c->lost, c->bad_owner);
}

/* After the hostile step: repair in the quiet graph, and the census balances
 * with every buffer free; then a service can allocate every one of them,
 * each once, and give them back. */
static inline void t_repaired_all_free(struct t_fix *f, const struct ipc_ring_ref *rings, unsigned n)
{
    ipc_pool_flush(&f->a);
    ipc_pool_flush(&f->b);
    int fixed = ipc_pool_repair(&f->sup, rings, n);
    assert_true(fixed >= 0);
    struct ipc_census c;
    int ret = ipc_pool_census(&f->sup, rings, n, &c);
    if (ret != 0 || c.free != T_NBUFS) {
        t_print_told();
        fail_msg("after %d repairs: census %d, free %u rings %u held %u lost %u dup %u bad owner %u bad depot %u of %u",
                 fixed, ret, c.free, c.in_rings, c.held, c.lost, c.dup, c.bad_owner, c.bad_depot, c.total);
    }
    static ipc_buf all[T_NBUFS + 1];
    static uint8_t seen[T_NBUFS];
    memset(seen, 0, sizeof(seen));
    assert_int_equal(ipc_pool_alloc(&f->b, all, T_NBUFS + 1), T_NBUFS);
    for (uint32_t i = 0; i < T_NBUFS; i++) {
        assert_true(all[i] < T_NBUFS);
        assert_int_equal(seen[all[i]], 0);
        seen[all[i]] = 1;
    }
    assert_int_equal(ipc_pool_free(&f->b, all, T_NBUFS), T_NBUFS);
    ipc_pool_flush(&f->b);
    assert_int_equal(ipc_pool_census(&f->sup, rings, n, &c), 0);
    assert_int_equal(c.free, T_NBUFS);
}

/* The census must balance; returns it for further checks. */
static inline struct ipc_census t_census(struct t_fix *f)
{
    struct ipc_census c;
    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
    int ret = ipc_pool_census(&f->sup, rings, 1, &c);
    if (ret != 0)
        fail_msg("census does not balance: free %u rings %u held %u kernel %u lost %u dup %u bad %u of %u", c.free,
                 c.in_rings, c.held, c.kernel, c.lost, c.dup, c.bad_owner, c.total);
    assert_int_equal(c.total, T_NBUFS);
    return c;
}


#endif
