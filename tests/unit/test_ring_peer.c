/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_ring_peer.c: a ring's end that lies about its index, as
 * each honest end sees it (issue 44, attack 7): the producer gives a
 * consumer whose cons is more than a ring away no room and writes no slot,
 * the consumer shows nothing from a producer whose prod is, each counts the
 * lie on its own line and stores its own index again; a sound peer is never
 * taken for a liar, across the 2^32 wrap and with the ring full. The
 * consumer checks handles against its own copy of the producer's owner id,
 * not the header's. The occupancy shown never exceeds the size, and the
 * supervisor counts what a lying consumer stranded (ipc_pool_stranded).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "ipc/pool.h"
#include "t_ring.h"

#define T_SIZE 64u

/* A consumer whose cons is far ahead of prod, or behind it by more than the
 * ring: no room, no slot written, counted, our prod stored again. */
static void test_prod_sees_lying_cons(void **state)
{
    (void)state;
    static const uint32_t lies[] = {0x80000000u, 0x40000000u, 1u, (uint32_t)-(int32_t)(T_SIZE + 1)};
    for (size_t k = 0; k < sizeof(lies) / sizeof(lies[0]); k++) {
        struct t_ring r;
        t_ring_open(&r, T_SIZE, UINT32_MAX - 5, -1); /* across the wrap */
        ipc_buf b[T_SIZE];
        for (uint32_t i = 0; i < T_SIZE; i++)
            b[i] = t_val(i);
        assert_int_equal(ipc_ring_enq_burst(&r.p, b, 10), 10);
        uint32_t head = ipc_ld_rlx(&r.sh->prod);
        /* The lie: cons moved past prod (or far behind it), and prod scribbled too. */
        ipc_st_rlx(&r.sh->cons, head + lies[k]);
        ipc_st_rlx(&r.sh->prod, 12345);
        uint32_t before[T_SIZE];
        memcpy(before, r.sh->slots, sizeof(before));
        /* The cache still allows the 54 slots it knew of: a lie shows at the next read. */
        assert_int_equal(ipc_ring_free_count(&r.p, T_SIZE), 0);
        assert_int_equal(ipc_ld_rlx(&r.sh->cons_lie), 1);
        assert_int_equal(ipc_ld_rlx(&r.sh->prod), head); /* ours, put back */
        assert_int_equal(ipc_ring_enq_burst(&r.p, b, T_SIZE), 0);
        assert_memory_equal(r.sh->slots, before, sizeof(before));
        assert_int_equal(ipc_ld_rlx(&r.sh->prod_lie), 0);
        assert_int_equal(ipc_ring_occupancy(r.sh, T_SIZE), T_SIZE);
        /* The supervisor puts the liar's word back (policy.c): room again. */
        ipc_st_rlx(&r.sh->cons, head);
        assert_int_equal(ipc_ring_free_count(&r.p, T_SIZE), T_SIZE);
        t_ring_close(&r);
    }
}

/* A producer whose prod is more than a ring ahead of our cons: nothing shown,
 * nothing peeked, counted, our cons stored again. */
static void test_cons_sees_lying_prod(void **state)
{
    (void)state;
    static const uint32_t lies[] = {0x80000000u, T_SIZE + 1, (uint32_t)-1};
    for (size_t k = 0; k < sizeof(lies) / sizeof(lies[0]); k++) {
        struct t_ring r;
        t_ring_open(&r, T_SIZE, UINT32_MAX - 5, -1);
        ipc_buf b[8] = {0};
        assert_int_equal(ipc_ring_enq_burst(&r.p, b, 8), 8);
        assert_int_equal(t_ring_deq_burst(&r.c, b, 3), 3);
        uint32_t cons = ipc_ld_rlx(&r.sh->cons);
        ipc_st_rlx(&r.sh->prod, cons + lies[k]);
        ipc_st_rlx(&r.sh->cons, 777);
        uint32_t idx;
        /* The cache still shows the 5 it knew of; asking for more reads the lie. */
        assert_int_equal(ipc_ring_peek(&r.c, 6, &idx), 0);
        assert_int_equal(ipc_ld_rlx(&r.sh->prod_lie), 1);
        assert_int_equal(ipc_ld_rlx(&r.sh->cons), cons);
        assert_int_equal(ipc_ring_avail(&r.c, 1), 0);
        assert_int_equal(ipc_ld_rlx(&r.sh->prod_lie), 2);
        assert_int_equal(ipc_ld_rlx(&r.sh->cons_lie), 0);
        assert_true(ipc_ring_occupancy(r.sh, T_SIZE) <= T_SIZE);
        t_ring_close(&r);
    }
}

/* Sound peers are never liars: a full ring, an empty one, across the wrap. */
static void test_sound_peers_no_lie(void **state)
{
    (void)state;
    struct t_ring r;
    t_ring_open(&r, T_SIZE, UINT32_MAX - T_SIZE / 2, -1);
    ipc_buf b[T_SIZE];
    for (int round = 0; round < 200; round++) {
        for (uint32_t i = 0; i < T_SIZE; i++)
            b[i] = t_val(i);
        ipc_ring_enq_burst(&r.p, b, T_SIZE); /* fills it */
        assert_int_equal(ipc_ring_free_count(&r.p, 1), 0);
        assert_int_equal(ipc_ring_count(r.sh), T_SIZE);
        uint32_t got = t_ring_deq_burst(&r.c, b, (uint32_t)(round % 7) * 9 + 1);
        assert_int_equal(ipc_ring_avail(&r.c, T_SIZE), T_SIZE - got);
    }
    assert_int_equal(ipc_ld_rlx(&r.sh->prod_lie), 0);
    assert_int_equal(ipc_ld_rlx(&r.sh->cons_lie), 0);
    t_ring_close(&r);
}

/* ipc_ring_recv checks each handle against the owner id the consumer was
 * given, not the one in the header, which both ends can rewrite. */
static void test_recv_owner_private(void **state)
{
    (void)state;
    struct ipc_err err = {{0}};
    int pool_fd;
    struct ipc_pool a, b, c;
    assert_int_equal(ipc_pool_create("t-pool", 256, IPC_FRAME_DEFAULT, &pool_fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&a, pool_fd, 2, &err), 0); /* the producer */
    assert_int_equal(ipc_pool_attach(&b, pool_fd, 3, &err), 0); /* the consumer */
    assert_int_equal(ipc_pool_attach(&c, pool_fd, 4, &err), 0); /* a third service */
    struct t_ring r;
    t_ring_open(&r, T_SIZE, 0, -1); /* producer 2, consumer 3 */
    ipc_ring_cons_from(&r.c, 2);     /* as ipc_svc_open does, from the sealed config */
    ipc_buf mine[2], theirs[2];
    assert_int_equal(ipc_pool_alloc(&a, mine, 2), 2);
    assert_int_equal(ipc_pool_alloc(&c, theirs, 2), 2);
    /* The producer names the third service as itself, and publishes its buffers. */
    r.sh->prod_owner = 4;
    ipc_buf pub[4] = {mine[0], theirs[0], mine[1], theirs[1]};
    assert_int_equal(ipc_ring_enq_burst(&r.p, pub, 4), 4);
    ipc_buf got[4];
    assert_int_equal(ipc_ring_recv(&r.c, &b, got, 4), 2);
    assert_int_equal(got[0], mine[0]);
    assert_int_equal(got[1], mine[1]);
    assert_int_equal(ipc_ld_rlx(&r.sh->drop_bad_owner), 2);
    assert_int_equal(ipc_pool_owner(&b, theirs[0]), 4); /* left alone: still the third's */
    assert_int_equal(ipc_pool_owner(&b, mine[0]), 3);
    ipc_pool_free(&b, got, 2);
    ipc_pool_free(&c, theirs, 2);
    t_ring_close(&r);
    ipc_pool_detach(&a);
    ipc_pool_detach(&b);
    ipc_pool_detach(&c);
    close(pool_fd);
}

/* The supervisor, after a lying consumer's death and its index put back:
 * the producer's packets left in the ring are counted as stranded, and only
 * those (not what it holds privately, not what the consumer took). */
static void test_pool_stranded(void **state)
{
    (void)state;
    struct ipc_err err = {{0}};
    int pool_fd;
    struct ipc_pool sup, a, b;
    assert_int_equal(ipc_pool_create("t-pool", 256, IPC_FRAME_DEFAULT, &pool_fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&sup, pool_fd, IPC_OWNER_SUPERVISOR, &err), 0);
    assert_int_equal(ipc_pool_attach(&a, pool_fd, 2, &err), 0);
    assert_int_equal(ipc_pool_attach(&b, pool_fd, 3, &err), 0);
    struct t_ring r;
    t_ring_open(&r, T_SIZE, 100, -1);
    struct ipc_ring_ref ref = ipc_ring_ref_take(r.sh);
    ipc_buf pub[10], priv[3], got[4];
    assert_int_equal(ipc_pool_alloc(&a, pub, 10), 10);
    assert_int_equal(ipc_pool_alloc(&a, priv, 3), 3);
    assert_int_equal(ipc_ring_enq_burst(&r.p, pub, 10), 10);
    assert_int_equal(ipc_ring_recv(&r.c, &b, got, 4), 4); /* taken: the consumer's */
    /* The lie, then the supervisor's repair: cons := prod. */
    ipc_st_rlx(&r.sh->cons, ipc_ld_rlx(&r.sh->prod) + 0x40000000u);
    ipc_st_rlx(&r.sh->cons, ipc_ld_rlx(&r.sh->prod));
    uint32_t per = 0;
    assert_int_equal(ipc_pool_stranded(&sup, 2, &ref, 1, &per), 6);
    assert_int_equal(per, 6);
    assert_int_equal(ipc_pool_held(&sup, 2, &ref, 1), 9); /* 6 stranded + 3 private */
    assert_int_equal(ipc_pool_stranded(&sup, 3, &ref, 1, &per), 0); /* the consumer produces nothing here */
    ipc_pool_free(&b, got, 4);
    ipc_pool_free(&a, priv, 3);
    ipc_pool_flush(&a); /* the producer's magazines back first: reclaim would take them from under it */
    ipc_pool_flush(&b);
    assert_int_equal(ipc_pool_reclaim(&sup, 2, &ref, 1), 6);
    struct ipc_census cen;
    assert_int_equal(ipc_pool_census(&sup, &ref, 1, &cen), 0);
    assert_int_equal(cen.free, 256);
    t_ring_close(&r);
    ipc_pool_detach(&a);
    ipc_pool_detach(&b);
    ipc_pool_detach(&sup);
    close(pool_fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prod_sees_lying_cons),
        cmocka_unit_test(test_cons_sees_lying_prod),
        cmocka_unit_test(test_sound_peers_no_lie),
        cmocka_unit_test(test_recv_owner_private),
        cmocka_unit_test(test_pool_stranded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
