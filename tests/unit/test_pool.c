/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_pool.c: the packet buffer pool: layout and attach checks,
 * exhaustion and refill, chains, double free, hand-off through a ring with
 * validation of every malformed handle, reclaim, and the census after every
 * step. What a hostile service can write into the pool's shared words:
 * test_pool_hostile.c.
 */
#include "tests/unit/t_pool.h"

static void test_pool_layout(void **state)
{
    struct t_fix *f = *state;
    assert_int_equal((uintptr_t)f->a.frames % 4096, 0);
    assert_int_equal(f->a.hdr->frames_off % 4096, 0);
    assert_int_equal(f->a.nbufs, T_NBUFS);
    assert_int_equal(f->a.frame_size, 2048);
    assert_true(f->a.hdr->frames_off + (uint64_t)T_NBUFS * 2048 == f->a.map_size);
    struct ipc_census c = t_census(f);
    assert_int_equal(c.free, T_NBUFS);
    /* Two processes see the same frame memory. */
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(&f->a, &b, 1), 1);
    memcpy(ipc_pool_data(&f->a, b), "ringrouter", 10);
    assert_memory_equal(ipc_pool_data(&f->b, b), "ringrouter", 10);
    assert_int_equal(ipc_pool_meta(&f->a, b)->off, IPC_HEADROOM);
    assert_int_equal(ipc_pool_free(&f->a, &b, 1), 1);
}

/* 32 KB frames: a 64 KB GSO packet is a chain of 3, every frame's off + len
 * still fits the 16-bit fields, and a ring hand-off validates it whole. */
static void test_pool_large_frames(void **state)
{
    (void)state;
    struct ipc_err err = {{0}};
    int fd, rfd;
    struct ipc_pool a, b;
    struct ipc_ring_shared *ring;
    struct ipc_ring_prod prod;
    struct ipc_ring_cons cons;
    assert_int_equal(ipc_pool_create("t-large", 100, IPC_FRAME_MAX, &fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&a, fd, T_A, &err), 0);
    assert_int_equal(ipc_pool_attach(&b, fd, T_B, &err), 0);
    assert_int_equal(a.frame_size, 32768);
    assert_int_equal(a.hdr->frames_off % 4096, 0);
    assert_int_equal(ipc_ring_create("t-lring", 64, 1, T_A, T_B, 0, &rfd, &ring, &err), 0);
    ipc_ring_prod_init(&prod, ring, -1);
    ipc_ring_cons_init(&cons, ring);

    ipc_buf h;
    const uint32_t bytes = 65536 + 14 + 4; /* the longest frame a TAP hands over */
    assert_int_equal(ipc_pool_alloc_chain(&a, bytes, &h), 0);
    uint32_t n = 0, total = 0;
    for (ipc_buf f = h; f != IPC_BUF_NONE; f = ipc_pool_meta(&a, f)->next) {
        const struct ipc_meta *m = ipc_pool_meta(&a, f);
        assert_true((uint32_t)m->off + m->len <= 32768);
        memset(ipc_pool_data(&a, f), (int)n, m->len);
        total += m->len;
        n++;
    }
    assert_int_equal(n, 3);
    assert_int_equal(total, bytes);
    assert_int_equal(ipc_pool_meta(&a, h)->len, 32768 - IPC_HEADROOM);

    assert_int_equal(ipc_ring_enq_burst(&prod, &h, 1), 1);
    ipc_buf got;
    assert_int_equal(ipc_ring_recv(&cons, &b, &got, 1), 1);
    assert_int_equal(got, h);
    assert_int_equal(ipc_pool_meta(&b, h)->pkt_len, bytes);
    /* The last frame's data reached the other process as written. */
    ipc_buf last = ipc_pool_meta(&b, ipc_pool_meta(&b, h)->next)->next;
    assert_int_equal(ipc_pool_data(&b, last)[0], 2);
    assert_int_equal(ipc_pool_free(&b, &got, 1), 3);

    ipc_ring_detach(ring);
    close(rfd);
    ipc_pool_detach(&a);
    ipc_pool_detach(&b);
    close(fd);
}

static void test_pool_create_and_attach_errors(void **state)
{
    struct t_fix *f = *state;
    struct ipc_err err = {{0}};
    int fd;
    assert_int_equal(ipc_pool_create("t-bad", 1000, 3000, &fd, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "frame size 3000 is not a power of two from 2048 to 32768"));
    assert_int_equal(ipc_pool_create("t-bad", 1000, 65536, &fd, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "frame size 65536 is not"));
    assert_int_equal(ipc_pool_create("t-bad", 1000, 1024, &fd, &err), -EINVAL);
    assert_int_equal(ipc_pool_create("t-bad", 0, 2048, &fd, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "0 buffers is out of range"));

    struct ipc_pool p;
    assert_int_equal(ipc_pool_attach(&p, f->pool_fd, 0, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "owner id 0"));
    assert_int_equal(ipc_pool_attach(&p, f->ring_fd, T_A, &err), -EPROTO);
    assert_non_null(strstr(err.msg, "kind is ring, expected pool"));

    /* A pool of another layout version is refused, naming both versions. */
    int fd2;
    assert_int_equal(ipc_pool_create("t-ver", 64, 2048, &fd2, &err), 0);
    struct ipc_shm_hdr *h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
    assert_true(h != MAP_FAILED);
    h->version = IPC_POOL_VERSION + 1;
    assert_int_equal(ipc_pool_attach(&p, fd2, T_A, &err), -EPROTO);
    assert_non_null(strstr(err.msg, "layout version 2, this build reads version 1"));
    h->version = IPC_POOL_VERSION;
    ((struct ipc_pool_hdr *)h)->ndepot++;
    assert_int_equal(ipc_pool_attach(&p, fd2, T_A, &err), -EPROTO);
    assert_non_null(strstr(err.msg, "differs from this build's"));
    h->magic = 42;
    assert_int_equal(ipc_pool_attach(&p, fd2, T_A, &err), -EPROTO);
    assert_non_null(strstr(err.msg, "is not ringrouter's"));
    munmap(h, 4096);
    close(fd2);
}

static void test_pool_exhaust_and_refill(void **state)
{
    struct t_fix *f = *state;
    static ipc_buf bufs[T_NBUFS + 10];
    uint32_t got = 0;
    /* Uneven batches cross magazine boundaries at every alignment. */
    for (uint32_t step = 1; got < T_NBUFS; step = step % 97 + 7)
        got += ipc_pool_alloc(&f->a, bufs + got, step < T_NBUFS - got ? step : T_NBUFS - got);
    assert_int_equal(got, T_NBUFS);
    struct ipc_census c = t_census(f);
    assert_int_equal(c.held_by[T_A], T_NBUFS);
    assert_int_equal(c.free, 0);

    uint64_t fails = ipc_ld_rlx(&f->a.hdr->alloc_fail);
    assert_int_equal(ipc_pool_alloc(&f->a, bufs + got, 1), 0);
    assert_int_equal(ipc_pool_alloc(&f->b, bufs + got, 5), 0);
    assert_int_equal(ipc_ld_rlx(&f->a.hdr->alloc_fail), fails + 2);

    /* No handle twice. */
    static uint8_t seen[T_NBUFS];
    memset(seen, 0, sizeof(seen));
    for (uint32_t i = 0; i < T_NBUFS; i++) {
        assert_true(bufs[i] < T_NBUFS);
        assert_int_equal(seen[bufs[i]], 0);
        seen[bufs[i]] = 1;
    }

    /* Free half through A; B can allocate exactly what A gave back, once A
     * has flushed the magazines it caches. */
    assert_int_equal(ipc_pool_free(&f->a, bufs, T_NBUFS / 2), T_NBUFS / 2);
    c = t_census(f);
    assert_int_equal(c.free, T_NBUFS / 2);
    ipc_pool_flush(&f->a);
    got = ipc_pool_alloc(&f->b, bufs, T_NBUFS);
    assert_int_equal(got, T_NBUFS / 2);
    c = t_census(f);
    assert_int_equal(c.held_by[T_B], T_NBUFS / 2);
    assert_int_equal(c.held_by[T_A], T_NBUFS / 2);
    assert_int_equal(ipc_pool_free(&f->b, bufs, got), got);
    assert_int_equal(ipc_pool_free(&f->a, bufs + T_NBUFS / 2, T_NBUFS / 2), T_NBUFS / 2);
    c = t_census(f);
    assert_int_equal(c.free, T_NBUFS);
}

/*
 * A pool run dry and refilled from another service: after a scan of the
 * depot finds nothing, a magazine released meanwhile, full or part-full, is
 * found at the next ask (the hint names it); of two, the earlier within
 * IPC_POOL_CLAIM_SKIP + 1 asks. Nothing is lost or handed out twice on the
 * way.
 */
static void test_pool_short_then_refilled(void **state)
{
    struct t_fix *f = *state;
    static ipc_buf bufs[T_NBUFS];
    uint32_t got = 0;
    while (got < T_NBUFS) {
        uint32_t n = ipc_pool_alloc(&f->a, bufs + got, T_NBUFS - got);
        assert_true(n > 0);
        got += n;
    }
    ipc_buf one;
    for (unsigned i = 0; i < 3 * IPC_POOL_CLAIM_SKIP; i++)
        assert_int_equal(ipc_pool_alloc(&f->a, &one, 1), 0);

    /* B frees a full magazine's worth that A handed it: found at once. */
    assert_int_equal(ipc_pool_give(&f->a, bufs, IPC_MAG, T_B), IPC_MAG);
    assert_int_equal(ipc_pool_free(&f->b, bufs, IPC_MAG), IPC_MAG);
    ipc_pool_flush(&f->b);
    assert_int_equal(ipc_pool_alloc(&f->a, bufs, IPC_MAG), IPC_MAG);
    assert_int_equal(ipc_pool_alloc(&f->a, &one, 1), 0);

    /* Ten buffers, a part-full magazine (B's flush): found at once. */
    assert_int_equal(ipc_pool_give(&f->a, bufs, 10, T_B), 10);
    assert_int_equal(ipc_pool_free(&f->b, bufs, 10), 10);
    ipc_pool_flush(&f->b);
    assert_int_equal(ipc_pool_alloc(&f->a, bufs, 10), 10);
    assert_int_equal(ipc_pool_alloc(&f->a, &one, 1), 0);

    /* Two handed back, a full one and then 5 (one free each, B flushing
     * between): the hint names the 5, a scan finds the full one. */
    const uint32_t two = IPC_MAG + 5;
    assert_int_equal(ipc_pool_give(&f->a, bufs, two, T_B), two);
    assert_int_equal(ipc_pool_free(&f->b, bufs, IPC_MAG), IPC_MAG);
    ipc_pool_flush(&f->b);
    assert_int_equal(ipc_pool_free(&f->b, bufs + IPC_MAG, 5), 5);
    ipc_pool_flush(&f->b);
    assert_int_equal(t_free_mags(&f->a), 2);
    unsigned asks = 0;
    got = 0;
    while (got < two && asks <= IPC_POOL_CLAIM_SKIP + 1) {
        got += ipc_pool_alloc(&f->a, bufs + got, two - got);
        asks++;
    }
    assert_int_equal(got, two);
    assert_true(asks <= IPC_POOL_CLAIM_SKIP + 1);
    assert_int_equal(t_free_mags(&f->a), 0);

    struct ipc_census c = t_census(f);
    assert_int_equal(c.held_by[T_A], T_NBUFS);
    assert_int_equal(c.free, 0);
    assert_int_equal(c.lost, 0);
    assert_int_equal(c.dup, 0);
}

static void test_pool_chains(void **state)
{
    struct t_fix *f = *state;
    ipc_buf head;
    assert_int_equal(ipc_pool_alloc_chain(&f->a, 65535, &head), 0);
    uint32_t frames = 0, bytes = 0;
    for (ipc_buf b = head; b != IPC_BUF_NONE; b = ipc_pool_meta(&f->a, b)->next) {
        const struct ipc_meta *m = ipc_pool_meta(&f->a, b);
        assert_true(m->off + m->len <= 2048);
        frames++;
        bytes += m->len;
    }
    assert_int_equal(frames, 1 + (65535 - (2048 - IPC_HEADROOM) + 2047) / 2048);
    assert_int_equal(bytes, 65535);
    assert_int_equal(ipc_pool_meta(&f->a, head)->pkt_len, 65535);
    struct ipc_census c = t_census(f);
    assert_int_equal(c.held_by[T_A], frames);

    /* A chain crosses a ring whole; the consumer owns every frame. */
    assert_int_equal(ipc_ring_enq_burst(&f->prod, &head, 1), 1);
    c = t_census(f);
    assert_int_equal(c.in_rings, frames);
    ipc_buf got;
    assert_int_equal(ipc_ring_recv(&f->cons, &f->b, &got, 1), 1);
    assert_int_equal(got, head);
    c = t_census(f);
    assert_int_equal(c.held_by[T_B], frames);
    assert_int_equal(ipc_pool_free(&f->b, &got, 1), frames);
    c = t_census(f);
    assert_int_equal(c.free, T_NBUFS);

    assert_int_equal(ipc_pool_alloc_chain(&f->a, IPC_CHAIN_MAX * 2048, &head), -EMSGSIZE);
    /* Not enough frames: nothing stays allocated. B's cached magazines go
     * back to the depot first, so that A can reach every free buffer. */
    ipc_pool_flush(&f->b);
    static ipc_buf hold[T_NBUFS];
    uint32_t n = ipc_pool_alloc(&f->a, hold, T_NBUFS - 3);
    assert_int_equal(n, T_NBUFS - 3);
    assert_int_equal(ipc_pool_alloc_chain(&f->a, 9000, &head), -ENOBUFS);
    c = t_census(f);
    assert_int_equal(c.held_by[T_A], T_NBUFS - 3);
    assert_int_equal(ipc_pool_free(&f->a, hold, n), n);
}

static void test_pool_double_free_caught(void **state)
{
    struct t_fix *f = *state;
    ipc_buf b[4];
    assert_int_equal(ipc_pool_alloc(&f->a, b, 4), 4);
    uint64_t bad = ipc_ld_rlx(&f->a.hdr->free_bad);
    assert_int_equal(ipc_pool_free(&f->a, b, 4), 4);
    assert_int_equal(ipc_pool_free(&f->a, &b[1], 1), 0);
    assert_int_equal(ipc_ld_rlx(&f->a.hdr->free_bad), bad + 1);
    /* Twice in one batch. */
    ipc_buf c2[3];
    assert_int_equal(ipc_pool_alloc(&f->a, c2, 1), 1);
    c2[1] = c2[0];
    c2[2] = T_NBUFS + 7; /* out of range */
    assert_int_equal(ipc_pool_free(&f->a, c2, 3), 1);
    assert_int_equal(ipc_ld_rlx(&f->a.hdr->free_bad), bad + 3);
    /* Freeing another owner's buffer is refused too. */
    ipc_buf theirs;
    assert_int_equal(ipc_pool_alloc(&f->b, &theirs, 1), 1);
    assert_int_equal(ipc_pool_free(&f->a, &theirs, 1), 0);
    assert_int_equal(ipc_pool_owner(&f->a, theirs), T_B);
    struct ipc_census c = t_census(f);
    assert_int_equal(c.held_by[T_B], 1);
    assert_int_equal(c.free, T_NBUFS - 1);
    assert_int_equal(ipc_pool_free(&f->b, &theirs, 1), 1);
    t_census(f);
}

/* Malformed handles in a ring: each rejected, counted under its reason. */
enum t_bad { T_GOOD, T_RANGE, T_OWNER, T_FRAME, T_LEN, T_LOOP, T_LONG, T_TAIL_RANGE, T_TAIL_OWNER, T_PKT_LEN };

struct t_case {
    const char *name;
    enum t_bad kind;
    _Atomic uint64_t *(*counter)(struct ipc_ring_shared *);
};

static _Atomic uint64_t *c_handle(struct ipc_ring_shared *r) { return &r->drop_bad_handle; }
static _Atomic uint64_t *c_owner(struct ipc_ring_shared *r) { return &r->drop_bad_owner; }
static _Atomic uint64_t *c_frame(struct ipc_ring_shared *r) { return &r->drop_bad_frame; }
static _Atomic uint64_t *c_chain(struct ipc_ring_shared *r) { return &r->drop_bad_chain; }

static const struct t_case t_cases[] = {
    {"good single frame", T_GOOD, NULL},
    {"handle out of range", T_RANGE, c_handle},
    {"owned by another service", T_OWNER, c_owner},
    {"offset past the frame", T_FRAME, c_frame},
    {"length past the frame", T_LEN, c_frame},
    {"chain that loops", T_LOOP, c_chain},
    {"chain longer than IPC_CHAIN_MAX", T_LONG, c_chain},
    {"chain to a handle out of range", T_TAIL_RANGE, c_chain},
    {"chain into another owner's frame", T_TAIL_OWNER, c_chain},
    {"chain whose lengths disagree with pkt_len", T_PKT_LEN, c_chain},
};

/* Build the malformed packet; returns its handle (A owns what it allocated). */
static ipc_buf t_make_bad(struct t_fix *f, enum t_bad kind, ipc_buf *theirs)
{
    ipc_buf b, chain[IPC_CHAIN_MAX + 2];
    struct ipc_meta *m;
    switch (kind) {
    case T_GOOD:
        ipc_pool_alloc(&f->a, &b, 1);
        ipc_pool_meta(&f->a, b)->len = 60;
        return b;
    case T_RANGE:
        return T_NBUFS + 5;
    case T_OWNER:
        ipc_pool_alloc(&f->b, theirs, 1);
        return *theirs;
    case T_FRAME:
        ipc_pool_alloc(&f->a, &b, 1);
        ipc_pool_meta(&f->a, b)->off = 2040;
        ipc_pool_meta(&f->a, b)->len = 60;
        return b;
    case T_LEN:
        ipc_pool_alloc(&f->a, &b, 1);
        ipc_pool_meta(&f->a, b)->len = 2000;
        return b;
    case T_LOOP:
        ipc_pool_alloc(&f->a, chain, 3);
        for (int i = 0; i < 3; i++) {
            ipc_pool_meta(&f->a, chain[i])->len = 100;
            ipc_pool_meta(&f->a, chain[i])->next = chain[(i + 1) % 3];
        }
        ipc_pool_meta(&f->a, chain[0])->pkt_len = 300;
        return chain[0];
    case T_LONG:
        ipc_pool_alloc(&f->a, chain, IPC_CHAIN_MAX + 1);
        for (uint32_t i = 0; i <= IPC_CHAIN_MAX; i++) {
            m = ipc_pool_meta(&f->a, chain[i]);
            m->len = 10;
            m->next = i < IPC_CHAIN_MAX ? chain[i + 1] : IPC_BUF_NONE;
        }
        ipc_pool_meta(&f->a, chain[0])->pkt_len = 10 * (IPC_CHAIN_MAX + 1);
        return chain[0];
    case T_TAIL_RANGE:
        ipc_pool_alloc(&f->a, &b, 1);
        m = ipc_pool_meta(&f->a, b);
        m->len = 100;
        m->pkt_len = 200;
        m->next = T_NBUFS;
        return b;
    case T_TAIL_OWNER:
        ipc_pool_alloc(&f->a, &b, 1);
        ipc_pool_alloc(&f->b, theirs, 1);
        m = ipc_pool_meta(&f->a, b);
        m->len = 100;
        m->pkt_len = 200;
        m->next = *theirs;
        ipc_pool_meta(&f->b, *theirs)->len = 100;
        return b;
    case T_PKT_LEN:
        assert_int_equal(ipc_pool_alloc_chain(&f->a, 5000, &b), 0);
        ipc_pool_meta(&f->a, b)->pkt_len = 4999;
        return b;
    }
    return IPC_BUF_NONE;
}

static void test_pool_validation_table(void **state)
{
    struct t_fix *f = *state;
    for (size_t i = 0; i < sizeof(t_cases) / sizeof(t_cases[0]); i++) {
        const struct t_case *tc = &t_cases[i];
        ipc_buf theirs = IPC_BUF_NONE;
        ipc_buf bad = t_make_bad(f, tc->kind, &theirs);
        ipc_buf good;
        assert_int_equal(ipc_pool_alloc(&f->a, &good, 1), 1);
        ipc_pool_meta(&f->a, good)->len = 64;
        uint64_t before = tc->counter ? ipc_ld_rlx(tc->counter(f->ring)) : 0;
        /* The bad handle sits between two copies of traffic that must pass. */
        ipc_buf out[2] = {bad, good};
        assert_int_equal(ipc_ring_enq_burst(&f->prod, out, 2), 2);
        ipc_buf in[4];
        uint32_t n = ipc_ring_recv(&f->cons, &f->b, in, 4);
        if (tc->kind == T_GOOD) {
            assert_int_equal(n, 2);
        } else {
            if (n != 1 || in[0] != good)
                fail_msg("%s: expected only the good packet to pass, got %u", tc->name, n);
            if (ipc_ld_rlx(tc->counter(f->ring)) != before + 1)
                fail_msg("%s: its drop counter did not move", tc->name);
        }
        assert_int_equal(ipc_ring_count(f->ring), 0);
        ipc_pool_free(&f->b, in, n);
        if (theirs != IPC_BUF_NONE) {
            assert_int_equal(ipc_pool_owner(&f->b, theirs), T_B); /* left alone */
            ipc_pool_free(&f->b, &theirs, 1);
        }
        /* A bad chain's tail frames stay with the producer that built them;
         * the producer's reclaim is what returns them. */
        struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
        int r = ipc_pool_reclaim(&f->sup, T_A, rings, 1);
        assert_true(r >= 0);
        struct ipc_census c = t_census(f);
        if (c.free != T_NBUFS)
            fail_msg("%s: %u of %u buffers free afterwards", tc->name, c.free, T_NBUFS);
    }
}

static void test_pool_reclaim_spares_rings(void **state)
{
    struct t_fix *f = *state;
    /* B -> A ring, so that A is a consumer too. */
    struct ipc_err err;
    int fd2;
    struct ipc_ring_shared *back;
    assert_int_equal(ipc_ring_create("t-back", 64, 2, T_B, T_A, UINT32_MAX - 2, &fd2, &back, &err), 0);
    struct ipc_ring_prod bprod;
    struct ipc_ring_cons acons;
    ipc_ring_prod_init(&bprod, back, -1);
    ipc_ring_cons_init(&acons, back);

    ipc_buf priv[10], sent[5], inb[6];
    assert_int_equal(ipc_pool_alloc(&f->a, priv, 10), 10);
    assert_int_equal(ipc_pool_alloc(&f->a, sent, 5), 5);
    assert_int_equal(ipc_ring_enq_burst(&f->prod, sent, 5), 5); /* A published these */
    assert_int_equal(ipc_pool_alloc(&f->b, inb, 6), 6);
    assert_int_equal(ipc_ring_enq_burst(&bprod, inb, 6), 6);
    /* A peeks and takes 3 of B's but dies before releasing them. */
    uint32_t idx;
    assert_int_equal(ipc_ring_peek(&acons, 3, &idx), 3);
    ipc_buf taken[3];
    for (int i = 0; i < 3; i++)
        taken[i] = ipc_ring_cons_slot(&acons, idx + i);
    assert_int_equal(ipc_pool_take(&f->a, T_B, taken, 3, back), 3);

    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring), ipc_ring_ref_take(back)};
    struct ipc_census c;
    assert_int_equal(ipc_pool_census(&f->sup, rings, 2, &c), 0);
    assert_int_equal(c.in_rings, 11);
    assert_int_equal(c.held_by[T_A], 10);

    /* What the census counts as A's at a clean exit: its 10 private buffers,
     * not what it published nor the 3 it took without releasing. */
    assert_int_equal(ipc_pool_held(&f->sup, T_A, rings, 2), 10);
    /* A dies. Only its 10 private buffers come back. */
    assert_int_equal(ipc_pool_reclaim(&f->sup, T_A, rings, 2), 10);
    assert_int_equal(ipc_pool_held(&f->sup, T_A, rings, 2), 0);
    assert_int_equal(ipc_pool_census(&f->sup, rings, 2, &c), 0);
    assert_int_equal(c.held_by[T_A], 0);
    assert_int_equal(c.in_rings, 11);
    assert_int_equal(c.free, T_NBUFS - 11);

    /* A's successor re-reads the unreleased slots and owns them. */
    struct ipc_ring_cons acons2;
    ipc_ring_cons_init(&acons2, back);
    ipc_buf got[16];
    assert_int_equal(ipc_ring_recv(&acons2, &f->a, got, 8), 6);
    assert_int_equal(ipc_ring_recv(&f->cons, &f->b, got + 6, 8), 5);
    assert_int_equal(ipc_pool_free(&f->a, got, 6), 6);
    assert_int_equal(ipc_pool_free(&f->b, got + 6, 5), 5);
    assert_int_equal(ipc_pool_census(&f->sup, rings, 2, &c), 0);
    assert_int_equal(c.free, T_NBUFS);
    ipc_ring_detach(back);
    close(fd2);
}

static void test_pool_lend_to_kernel(void **state)
{
    struct t_fix *f = *state;
    ipc_buf b[8];
    assert_int_equal(ipc_pool_alloc(&f->a, b, 8), 8);
    assert_int_equal(ipc_pool_give(&f->a, b, 8, IPC_OWNER_KERNEL | 3), 8);
    struct ipc_census c = t_census(f);
    assert_int_equal(c.kernel, 8);
    /* Lent buffers survive their driver's death. */
    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
    assert_int_equal(ipc_pool_reclaim(&f->sup, T_A, rings, 1), 0);
    c = t_census(f);
    assert_int_equal(c.kernel, 8);
    /* The driver's successor takes them back from the kernel. */
    assert_int_equal(ipc_pool_take(&f->a, IPC_OWNER_KERNEL | 3, b, 8, f->ring), 8);
    assert_int_equal(ipc_pool_free(&f->a, b, 8), 8);
    c = t_census(f);
    assert_int_equal(c.free, T_NBUFS);
}

/* stats' "who holds the pool": owner words counted, packets in a ring for
 * their producer, a word that names nobody apart. */
static void test_pool_owners(void **state)
{
    struct t_fix *f = *state;
    ipc_buf a[10], b[5];
    assert_int_equal(ipc_pool_alloc(&f->a, a, 10), 10);
    assert_int_equal(ipc_pool_alloc(&f->b, b, 5), 5);
    assert_int_equal(ipc_pool_give(&f->a, a, 3, IPC_OWNER_KERNEL | 1), 3);
    assert_int_equal(ipc_ring_enq_burst(&f->prod, a + 3, 2), 2);
    ipc_st_rlx(&f->sup.meta[b[4]].owner, (uint16_t)0x300); /* scribbled */
    struct ipc_owners o;
    ipc_pool_owners(&f->sup, &o);
    assert_int_equal(o.kernel, 3);
    assert_int_equal(o.held[T_A], 7);
    assert_int_equal(o.held[T_B], 4);
    assert_int_equal(o.other, 1);
    assert_int_equal(o.free, T_NBUFS - 15);
    uint32_t held = 0;
    for (unsigned k = 0; k <= IPC_OWNER_SERVICE_MAX; k++)
        held += o.held[k];
    assert_int_equal(held, 11);
}

static void test_pool_census_detects_loss_and_dup(void **state)
{
    struct t_fix *f = *state;
    struct ipc_census c;
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(&f->a, &b, 1), 1);
    /* Forge the owner word: a buffer marked free but on no magazine. */
    ipc_st_rlx(&ipc_pool_meta(&f->a, b)->owner, IPC_OWNER_FREE);
    assert_int_equal(ipc_pool_census(&f->sup, NULL, 0, &c), -EUCLEAN);
    assert_int_equal(c.lost, 1);
    ipc_st_rlx(&ipc_pool_meta(&f->a, b)->owner, T_A);
    /* The same buffer in a ring twice. */
    ipc_buf two[2] = {b, b};
    assert_int_equal(ipc_ring_enq_burst(&f->prod, two, 2), 2);
    struct ipc_ring_ref rings[] = {ipc_ring_ref_take(f->ring)};
    assert_int_equal(ipc_pool_census(&f->sup, rings, 1, &c), -EUCLEAN);
    assert_int_equal(c.dup, 1);
    ipc_buf in[2];
    assert_int_equal(ipc_ring_recv(&f->cons, &f->b, in, 2), 1); /* second copy: bad owner */
    assert_int_equal(ipc_ld_rlx(&f->ring->drop_bad_owner), 1);
    assert_int_equal(ipc_pool_free(&f->b, in, 1), 1);
    t_census(f);
}

/*
 * A ring's two ends can write its header, so a dead (or hostile) one may have
 * changed the size, mask and owners that reclaim and the census follow. They
 * read the creator's private copy instead: a mask of all ones or a size of
 * 2^31 must not send them past the slot array (ASan would see it), and owners
 * swapped must not make them hand A's buffers to B. The repair puts the
 * header back and says it had to.
 */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pool_layout, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_create_and_attach_errors, t_setup, t_teardown),
        cmocka_unit_test(test_pool_large_frames),
        cmocka_unit_test_setup_teardown(test_pool_exhaust_and_refill, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_short_then_refilled, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_chains, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_double_free_caught, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_validation_table, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_reclaim_spares_rings, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_lend_to_kernel, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_owners, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_pool_census_detects_loss_and_dup, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
