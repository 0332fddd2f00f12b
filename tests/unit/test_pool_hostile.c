/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_pool_hostile.c: the pool against a hostile service: ring
 * headers, depot counts and loops, magazine pointers, owners out of range,
 * chains in rings and unreleased, and the census's repair of every kind of
 * damage, each ending with every buffer free and allocatable once.
 */
#include "tests/unit/t_pool.h"

static void test_pool_reclaim_hostile_ring_header(void **state)
{
    struct t_fix *f = *state;
    struct ipc_ring_ref ref = ipc_ring_ref_take(f->ring); /* taken at creation: trusted */
    ipc_buf b[12];
    assert_int_equal(ipc_pool_alloc(&f->a, b, 12), 12);
    assert_int_equal(ipc_ring_enq_burst(&f->prod, b, 4), 4); /* 4 in the ring, 8 held by A */

    f->ring->size = 1u << 31;
    f->ring->mask = UINT32_MAX;
    f->ring->prod_owner = T_B;
    f->ring->cons_owner = T_A;
    ipc_st_rlx(&f->ring->prod, ipc_ld_rlx(&f->ring->cons) + (1u << 30)); /* far past the slots */

    /* A dies: the wild indices bound nothing, so no ring slot is followed;
     * its 8 private buffers and the 4 it published (nothing shows them in
     * the ring now) come back, and nothing is read out of bounds. */
    t_listen(f);
    assert_int_equal(ipc_pool_reclaim(&f->sup, T_A, &ref, 1), 12);
    assert_true(T_TOLD("ring t-ring: prod", "exceeds its 256 slots; no slot followed"));
    struct ipc_census c;
    ipc_st_rlx(&f->ring->prod, ipc_ld_rlx(&f->ring->cons));
    assert_true(ipc_ring_ref_repair(&ref));
    assert_false(ipc_ring_ref_repair(&ref));
    assert_int_equal(f->ring->size, 256);
    assert_int_equal(f->ring->mask, 255);
    assert_int_equal(f->ring->prod_owner, T_A);
    assert_int_equal(f->ring->cons_owner, T_B);
    assert_int_equal(ipc_pool_census(&f->sup, &ref, 1, &c), 0);
    assert_int_equal(c.free, T_NBUFS);
}

/*
 * A dead service's magazine word says 65535 buffers, and its chain loops
 * after three. Reclaim follows at most IPC_MAG links and never one buffer
 * twice: the word goes back with the three, the count and the loop are told
 * with the word's offset, and the buffers the loop cut off are found free on
 * no magazine and put back by the repair.
 */
static void test_pool_hostile_depot_count_and_loop(void **state)
{
    struct t_fix *f = *state;
    t_listen(f);
    ipc_buf b[10];
    assert_int_equal(ipc_pool_alloc(&f->a, b, 10), 10);
    uint32_t slot = f->a.mag[0].slot;
    ipc_buf head = f->a.mag[0].head;
    assert_true(slot != IPC_BUF_NONE && f->a.mag[0].cnt > 3);
    ipc_buf third = ipc_pool_meta(&f->a, ipc_pool_meta(&f->a, head)->link)->link;
    ipc_pool_meta(&f->a, third)->link = head; /* a loop of three */
    ipc_st_rlx(&f->a.depot[slot].word, t_word(T_A, 0xffff, head));
    t_gone(&f->a); /* A dies */

    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
    assert_int_equal(ipc_pool_reclaim(&f->sup, T_A, rings, 1), 10);
    uint64_t w = ipc_ld_rlx(&f->sup.depot[slot].word);
    assert_int_equal(w >> 48, IPC_OWNER_FREE);
    assert_int_equal((w >> 32) & 0xffff, 3);
    char off[32];
    snprintf(off, sizeof(off), "offset %#zx", (size_t)((uint8_t *)&f->sup.depot[slot] - (uint8_t *)f->sup.hdr));
    assert_true(T_TOLD("depot word", off, "count 65535"));
    assert_true(T_TOLD("depot word", off, "met a second time"));
    assert_true(f->sup.corrupt >= 2);
    struct ipc_census c;
    assert_int_equal(ipc_pool_census(&f->sup, rings, 1, &c), -EUCLEAN);
    t_accounted(&c);
    assert_true(c.lost > 0);
    t_repaired_all_free(f, rings, 1);
}

/*
 * Magazine pointers out of range: a dead service's word whose head is past
 * the pool, a FREE word whose head is past it too (a service claiming it
 * would read far outside the metadata), a FREE word with count 7 and head
 * IPC_BUF_NONE (2^32 - 1), and scan hints out of range. Nothing is followed;
 * the census names the words as bad, the repair empties them and puts their
 * buffers back, and a service then allocates the whole pool safely.
 */
static void test_pool_hostile_magazine_pointers(void **state)
{
    struct t_fix *f = *state;
    t_listen(f);
    ipc_buf b[4];
    assert_int_equal(ipc_pool_alloc(&f->a, b, 4), 4);
    uint32_t slot = f->a.mag[0].slot, a_cnt = f->a.mag[0].cnt;
    ipc_st_rlx(&f->a.depot[slot].word, t_word(T_A, a_cnt, 0x7ffffff0u));
    t_gone(&f->a);
    /* Two FREE words with full magazines on them (B has cached nothing yet). */
    uint32_t fw[2], nf = 0;
    for (uint32_t s = 0; s < f->sup.ndepot && nf < 2; s++) {
        uint64_t w = ipc_ld_rlx(&f->sup.depot[s].word);
        if (w >> 48 == IPC_OWNER_FREE && ((w >> 32) & 0xffff) == IPC_MAG && s != slot)
            fw[nf++] = s;
    }
    assert_int_equal(nf, 2);
    ipc_st_rlx(&f->sup.depot[fw[0]].word, t_word(IPC_OWNER_FREE, 5, 0x7ffffff0u));
    ipc_st_rlx(&f->sup.depot[fw[1]].word, t_word(IPC_OWNER_FREE, 7, IPC_BUF_NONE));
    ipc_st_rlx(&f->sup.hdr->hint_full, UINT32_MAX);
    ipc_st_rlx(&f->sup.hdr->hint_room, 0x7fffffffu);

    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
    assert_int_equal(ipc_pool_reclaim(&f->sup, T_A, rings, 1), 4);
    assert_true(T_TOLD("depot word", "out of range"));
    struct ipc_census c;
    assert_int_equal(ipc_pool_census(&f->sup, rings, 1, &c), -EUCLEAN);
    t_accounted(&c);
    assert_true(c.bad_depot >= 2);
    assert_int_equal(c.lost, 2 * IPC_MAG + a_cnt); /* the chains no word names any more */
    t_repaired_all_free(f, rings, 1);
    assert_true(T_TOLD("free, but on no magazine; put back"));
}

/*
 * Owner words that name no one (777, 0x200, 0xffff) on buffers a dead
 * service held, and on a free buffer in a magazine. Reclaim frees only what
 * names the dead service; the census counts the rest as bad owners, every
 * buffer still accounted for; the repair frees them, cutting the magazine
 * before the one that is no longer free, and tells each with its offset.
 */
static void test_pool_hostile_owner_out_of_range(void **state)
{
    struct t_fix *f = *state;
    t_listen(f);
    ipc_buf b[8];
    assert_int_equal(ipc_pool_alloc(&f->a, b, 8), 8);
    ipc_st_rlx(&ipc_pool_meta(&f->a, b[0])->owner, 777);
    ipc_st_rlx(&ipc_pool_meta(&f->a, b[1])->owner, 0x200);
    ipc_st_rlx(&ipc_pool_meta(&f->a, b[2])->owner, 0xffff);
    ipc_buf on_mag = ipc_pool_meta(&f->a, f->a.mag[0].head)->link; /* second on A's magazine */
    ipc_st_rlx(&ipc_pool_meta(&f->a, on_mag)->owner, 777);
    ipc_pool_flush(&f->a);

    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
    assert_int_equal(ipc_pool_held(&f->sup, T_A, rings, 1), 5);
    assert_int_equal(ipc_pool_reclaim(&f->sup, T_A, rings, 1), 5);
    struct ipc_census c;
    assert_int_equal(ipc_pool_census(&f->sup, rings, 1, &c), -EUCLEAN);
    t_accounted(&c);
    assert_int_equal(c.bad_owner, 4);
    assert_int_equal(c.bad_depot, 1);
    t_repaired_all_free(f, rings, 1);
    char off[32];
    snprintf(off, sizeof(off), "offset %#zx", (size_t)((uint8_t *)ipc_pool_meta(&f->sup, b[0]) - (uint8_t *)f->sup.hdr));
    assert_true(T_TOLD("buffer", off, "owner 777 names no one"));
    assert_true(T_TOLD("owner 65535 names no one"));
    assert_true(T_TOLD("owner 512 names no one"));
    assert_true(T_TOLD("depot word", "not free; cut there"));
}

/*
 * A packet in a ring whose chain goes where a packet's cannot: into a frame
 * another service holds, back into itself, or out of the pool. The frame
 * another service holds is counted as that service's (held, census), not as
 * the ring's; the loop and the bad link are counted as bad links, not as
 * buffers in two places; reclaim and held tell the link out of range.
 */
static void test_pool_hostile_ring_chain(void **state)
{
    struct t_fix *f = *state;
    t_listen(f);
    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
    struct ipc_census c;
    for (int kind = 0; kind < 3; kind++) {
        ipc_buf h, p;
        assert_int_equal(ipc_pool_alloc_chain(&f->a, 5000, &h), 0); /* three frames */
        assert_int_equal(ipc_pool_alloc(&f->b, &p, 1), 1);           /* B's, private */
        ipc_buf f2 = ipc_pool_meta(&f->a, h)->next, f3 = ipc_pool_meta(&f->a, f2)->next;
        if (kind == 0)
            ipc_pool_meta(&f->a, f3)->next = p;
        else if (kind == 1)
            ipc_pool_meta(&f->a, f3)->next = h;
        else
            ipc_pool_meta(&f->a, f2)->next = 0xfffffff0u;
        assert_int_equal(ipc_ring_enq_burst(&f->prod, &h, 1), 1);
        ipc_pool_flush(&f->a);
        ipc_pool_flush(&f->b);

        assert_int_equal(ipc_pool_held(&f->sup, T_B, rings, 1), 1);
        assert_int_equal(ipc_pool_census(&f->sup, rings, 1, &c), 0);
        t_accounted(&c);
        assert_int_equal(c.held_by[T_B], 1);
        assert_int_equal(c.in_rings, kind == 2 ? 2 : 3);
        assert_int_equal(c.bad_link, 1);
        assert_int_equal(c.dup, 0);
        if (kind == 2) {
            t_ntold = 0;
            assert_int_equal(ipc_pool_held(&f->sup, T_A, rings, 1), 1); /* the third frame, cut off */
            assert_true(T_TOLD("next 4294967280", "out of range", "t-ring"));
        }
        /* B takes it: a bad chain, dropped; its first frame is freed and the
         * rest stays A's until A's reclaim. */
        ipc_buf got[2];
        assert_int_equal(ipc_ring_recv(&f->cons, &f->b, got, 2), 0);
        assert_int_equal(ipc_pool_free(&f->b, &p, 1), 1);
        assert_true(ipc_pool_reclaim(&f->sup, T_A, rings, 1) >= 1);
        t_gone(&f->a);
        ipc_pool_flush(&f->b);
        assert_int_equal(ipc_pool_census(&f->sup, rings, 1, &c), 0);
        assert_int_equal(c.free, T_NBUFS);
    }
}

/*
 * B took a three-frame packet from A and died before releasing it; the
 * packet's last link was made to point into a buffer B held privately.
 * Handing the chain back whole would give A four frames it never had, and
 * keep them A's for good after B's successor drops the packet. Reclaim gives
 * back the first frame alone and frees the rest with what B held.
 */
static void test_pool_hostile_unreleased_chain(void **state)
{
    struct t_fix *f = *state;
    t_listen(f);
    ipc_buf h, p;
    assert_int_equal(ipc_pool_alloc_chain(&f->a, 5000, &h), 0);
    assert_int_equal(ipc_ring_enq_burst(&f->prod, &h, 1), 1);
    assert_int_equal(ipc_pool_alloc(&f->b, &p, 1), 1);
    ipc_pool_meta(&f->b, p)->len = 100;
    uint32_t idx;
    assert_int_equal(ipc_ring_peek(&f->cons, 1, &idx), 1);
    ipc_buf taken = ipc_ring_cons_slot(&f->cons, idx);
    assert_int_equal(ipc_pool_take(&f->b, T_A, &taken, 1, f->ring), 1);
    ipc_buf f3 = ipc_pool_meta(&f->b, ipc_pool_meta(&f->b, h)->next)->next;
    ipc_pool_meta(&f->b, f3)->next = p;
    ipc_pool_flush(&f->b);
    t_gone(&f->b); /* B dies, the slot unreleased */

    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
    assert_int_equal(ipc_pool_reclaim(&f->sup, T_B, rings, 1), 3);
    assert_true(T_TOLD("malformed chain", "t-ring"));
    struct ipc_census c;
    assert_int_equal(ipc_pool_census(&f->sup, rings, 1, &c), 0);
    assert_int_equal(c.in_rings, 1);
    assert_int_equal(c.held_by[T_A], 0);
    assert_int_equal(c.held_by[T_B], 0);
    /* B's successor takes the slot again: one frame that says 5000 bytes, dropped. */
    struct ipc_ring_cons cons2;
    ipc_ring_cons_init(&cons2, f->ring);
    ipc_buf got[2];
    assert_int_equal(ipc_ring_recv(&cons2, &f->b, got, 2), 0);
    ipc_pool_flush(&f->b);
    assert_int_equal(ipc_pool_census(&f->sup, rings, 1, &c), 0);
    if (c.free != T_NBUFS)
        fail_msg("%u of %u free: A holds %u it never had", c.free, T_NBUFS, c.held_by[T_A]);
}

/*
 * Every kind of depot word corruption at once in a quiet pool: a count of
 * 65535, a loop, a head past the pool, an owner that names no process, a
 * free buffer whose owner word names no one. The census reports them and
 * still puts every buffer in exactly one place; the repair tells each with
 * its offset and makes the census balance with all free.
 */
static void test_pool_census_repair_every_kind(void **state)
{
    struct t_fix *f = *state;
    t_listen(f);
    uint32_t fw[5], nf = 0;
    for (uint32_t s = 0; s < f->sup.ndepot && nf < 5; s++) {
        uint64_t w = ipc_ld_rlx(&f->sup.depot[s].word);
        if (w >> 48 == IPC_OWNER_FREE && ((w >> 32) & 0xffff) == IPC_MAG)
            fw[nf++] = s;
    }
    assert_int_equal(nf, 5);
    uint64_t w;
    w = ipc_ld_rlx(&f->sup.depot[fw[0]].word);
    ipc_st_rlx(&f->sup.depot[fw[0]].word, t_word(IPC_OWNER_FREE, 0xffff, (uint32_t)w));
    w = ipc_ld_rlx(&f->sup.depot[fw[1]].word);
    ipc_buf h1 = (uint32_t)w, x = h1;
    for (int i = 0; i < 4; i++)
        x = ipc_pool_meta(&f->sup, x)->link;
    ipc_pool_meta(&f->sup, x)->link = h1; /* the fifth links back to the first */
    ipc_st_rlx(&f->sup.depot[fw[2]].word, t_word(IPC_OWNER_FREE, 9, 0xfffffff0u));
    w = ipc_ld_rlx(&f->sup.depot[fw[3]].word);
    ipc_st_rlx(&f->sup.depot[fw[3]].word, t_word(0x300, IPC_MAG, (uint32_t)w));
    w = ipc_ld_rlx(&f->sup.depot[fw[4]].word);
    ipc_st_rlx(&ipc_pool_meta(&f->sup, (uint32_t)w)->owner, 0xffff);

    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
    struct ipc_census c;
    assert_int_equal(ipc_pool_census(&f->sup, rings, 1, &c), -EUCLEAN);
    t_accounted(&c);
    assert_int_equal(c.bad_depot, 5);
    assert_int_equal(c.bad_owner, 1);
    t_repaired_all_free(f, rings, 1);
    char off[32];
    snprintf(off, sizeof(off), "offset %#zx", (size_t)((uint8_t *)&f->sup.depot[fw[3]] - (uint8_t *)f->sup.hdr));
    assert_true(T_TOLD("depot word", off, "owner 768 names no process"));
    assert_true(T_TOLD("count 65535"));
    assert_true(T_TOLD("met a second time"));
    assert_true(T_TOLD("buffer 4294967280", "out of range"));
    assert_true(T_TOLD("owner 65535 names no one; freed"));
}

/*
 * The drain at shutdown reads the ring through the supervisor's copy: a
 * header with a mask of all ones, a size of 2^31 and the owners swapped
 * sends it nowhere outside the slots, and the packets are taken from the
 * real producer. Indices 2^32 - 1 apart empty the ring without a slot read.
 */
static void test_pool_drain_hostile_ring(void **state)
{
    struct t_fix *f = *state;
    t_listen(f);
    struct ipc_ring_ref ref = ipc_ring_ref_take(f->ring);
    ipc_buf b[5];
    assert_int_equal(ipc_pool_alloc(&f->a, b, 5), 5);
    assert_int_equal(ipc_ring_enq_burst(&f->prod, b, 5), 5);
    f->ring->size = 1u << 31;
    f->ring->mask = UINT32_MAX;
    f->ring->prod_owner = T_B;
    f->ring->cons_owner = T_A;
    ipc_st_rlx(&f->ring->cons, ipc_ld_rlx(&f->ring->cons) - (1u << 30)); /* 2^30 + 5 behind, far past the slots */
    assert_int_equal(ipc_pool_drain(&f->sup, &ref), 0);
    assert_true(T_TOLD("ring t-ring", "exceeds its 256 slots"));
    assert_int_equal(ipc_ring_count(f->ring), 0);
    /* What the corrupt indices hid A still holds; its reclaim frees them. */
    ipc_pool_flush(&f->a);
    assert_int_equal(ipc_pool_reclaim(&f->sup, T_A, &ref, 1), 5);
    t_gone(&f->a);

    assert_int_equal(ipc_pool_alloc(&f->a, b, 5), 5);
    ipc_ring_prod_init(&f->prod, f->ring, -1);
    assert_int_equal(ipc_ring_enq_burst(&f->prod, b, 5), 5);
    ipc_st_rlx(&f->ring->cons, ipc_ld_rlx(&f->ring->prod) + 1); /* prod - cons = 2^32 - 1 */
    assert_int_equal(ipc_pool_drain(&f->sup, &ref), 0);
    ipc_st_rlx(&f->ring->cons, ipc_ld_rlx(&f->ring->prod) - 5); /* the five again */
    assert_int_equal(ipc_pool_drain(&f->sup, &ref), 5);
    ipc_pool_flush(&f->a);
    struct ipc_census c;
    assert_true(ipc_ring_ref_repair(&ref));
    assert_int_equal(ipc_pool_census(&f->sup, &ref, 1, &c), 0);
    assert_int_equal(c.free, T_NBUFS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pool_reclaim_hostile_ring_header, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_hostile_depot_count_and_loop, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_hostile_magazine_pointers, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_hostile_owner_out_of_range, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_hostile_ring_chain, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_hostile_unreleased_chain, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_census_repair_every_kind, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_drain_hostile_ring, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
