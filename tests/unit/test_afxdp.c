/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_afxdp.c: the AF_XDP driver's ownership protocol with the
 * kernel (drivers/afxdp/afxdp.c), on rings in plain memory standing in for
 * the XSK's: lending to the fill ring (slots, give, poisoned window,
 * publish), a successor taking back what a killed predecessor lent but never
 * published, completion slots a predecessor took but never released
 * (refused as stale, released, not freed twice), multi-buffer frames
 * (XDP_PKT_CONTD) chained, and malformed ones dropped whole with every
 * buffer back in the pool, a driver group's ports each on their own rings,
 * and the census throughout.
 * The driver's ring views (drivers/afxdp/xskq.h) are bound to these rings
 * through xskq_bind, the call the driver makes on the mmapped ones.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#define UNIT_TESTING 1
#include "../../drivers/afxdp/afxdp.c"
#include "../../drivers/afxdp/umem.c"

#define T_NBUFS 4096u
#define T_SELF 5u
#define T_PORT 1u

/* A ring's shared part as the kernel lays it out, in plain memory. */
struct t_ring {
    _Atomic uint32_t prod, cons, flags;
    uint64_t slots[AFXDP_FILL_SIZE * 2]; /* room for xdp_desc slots too */
};

struct t_fix {
    int pool_fd;
    struct ipc_pool pool;
    struct t_ring rings[4]; /* rx, tx, fill, completion */
    _Atomic uint64_t ctr[2][C_N];
    struct ipc_ring_shared *bad;  /* by pointer: both end in a flexible array */
    struct ipc_svc_config *cfg;
    struct ipc_svc svc;
};

/* A producer view keeps the lend window free; a consumer view has no cap. */
static void t_bind(struct t_ring *r, struct xskq *q, uint32_t size, bool producer)
{
    const struct xdp_ring_offset o = {
        .producer = offsetof(struct t_ring, prod),
        .consumer = offsetof(struct t_ring, cons),
        .flags = offsetof(struct t_ring, flags),
        .desc = offsetof(struct t_ring, slots),
    };
    xskq_bind(q, r, &o, size, producer ? size - AFXDP_WINDOW : 0);
}

/* A driver instance on the fixture's rings, as afxdp_init binds one, then
 * its recovery (afxdp_recover: before anything is lent). */
static void t_instance(struct t_fix *f, struct afxdp *x, int gen)
{
    memset(x, 0, sizeof(*x));
    snprintf(f->cfg->name, sizeof(f->cfg->name), "t-driver");
    f->svc.cfg = f->cfg;
    drv_init(&x->d, &f->svc, f->ctr[gen], &afxdp_drv_ids);
    x->d.pool = &f->pool;
    x->svc = &f->svc;
    x->pool = &f->pool;
    x->fd = -1;
    x->port = T_PORT;
    x->kown = (uint16_t)(IPC_OWNER_KERNEL | T_PORT);
    x->fs = f->pool.frame_size;
    x->fill_target = 256;
    x->bad = f->bad;
    x->out = &f->svc.out[0];
    t_bind(&f->rings[0], &x->rx, AFXDP_RX_SIZE, false);
    t_bind(&f->rings[1], &x->tx, AFXDP_TX_SIZE, true);
    t_bind(&f->rings[2], &x->fq, AFXDP_FILL_SIZE, true);
    t_bind(&f->rings[3], &x->cq, AFXDP_COMP_SIZE, false);
    memset(f->ctr[gen], 0, sizeof(f->ctr[gen]));
    comp_step(x);
    recover_limbo(x);
}

static int t_setup(void **state)
{
    struct t_fix *f = calloc(1, sizeof(*f));
    struct ipc_err err;
    assert_non_null(f);
    f->bad = calloc(1, sizeof(*f->bad));
    f->cfg = calloc(1, sizeof(*f->cfg));
    assert_non_null(f->bad);
    assert_non_null(f->cfg);
    assert_int_equal(ipc_pool_create("t-afxdp", T_NBUFS, IPC_FRAME_DEFAULT, &f->pool_fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&f->pool, f->pool_fd, T_SELF, &err), 0);
    *state = f;
    return 0;
}

static int t_teardown(void **state)
{
    struct t_fix *f = *state;
    ipc_pool_detach(&f->pool);
    close(f->pool_fd);
    free(f->bad);
    free(f->cfg);
    free(f);
    return 0;
}

static struct ipc_census t_census(struct t_fix *f)
{
    struct ipc_census c;
    ipc_pool_flush(&f->pool);
    assert_int_equal(ipc_pool_census(&f->pool, NULL, 0, &c), 0);
    return c;
}

/* The kernel's side of copy-mode TX: consume @n TX descriptors and complete them. */
static void t_kernel_tx(struct t_fix *f, uint32_t n)
{
    struct t_ring *tx = &f->rings[1], *cq = &f->rings[3];
    const struct xdp_desc *d = (const struct xdp_desc *)tx->slots;
    uint32_t c = ipc_ld_acq(&tx->cons), p = ipc_ld_acq(&cq->prod);
    for (uint32_t i = 0; i < n; i++)
        cq->slots[(p + i) & (AFXDP_COMP_SIZE - 1)] = d[(c + i) & (AFXDP_TX_SIZE - 1)].addr;
    ipc_st_rel(&tx->cons, c + n);
    ipc_st_rel(&cq->prod, p + n);
}

/* The fill stock never exceeds the RX ring's room beside what waits in it:
 * an overflow must meet an empty fill ring (a drop before the copy), not a
 * full RX ring (a copy, then a drop). */
static void test_afxdp_fill_bounded_by_rx_room(void **state)
{
    struct t_fix *f = *state;
    struct afxdp x;
    t_instance(f, &x, 0);
    const uint32_t waiting = AFXDP_RX_SIZE - 248; /* the kernel published these: room for 248 */
    x.fill_target = 1900;
    ipc_st_rel(&f->rings[0].prod, waiting);
    fill_step(&x);
    assert_int_equal(ipc_ld_acq(&f->rings[2].prod), 248);
    fill_step(&x); /* nothing more while they wait */
    assert_int_equal(ipc_ld_acq(&f->rings[2].prod), 248);
    /* The driver consumed them (their buffers are not the point here):
     * the whole stock again. */
    x.rx.head = waiting;
    ipc_st_rel(&f->rings[0].cons, waiting);
    fill_step(&x);
    assert_int_equal(ipc_ld_acq(&f->rings[2].prod), 1900);
    assert_int_equal(ipc_ld_acq(&f->rings[0].prod) - x.rx.head + ipc_ld_acq(&f->rings[2].prod), 1900);
}

static void test_afxdp_fill_lends_in_order(void **state)
{
    struct t_fix *f = *state;
    struct afxdp x;
    t_instance(f, &x, 0);
    fill_step(&x);
    uint32_t prod = ipc_ld_acq(&f->rings[2].prod);
    assert_int_equal(prod, 256);
    for (uint32_t i = 0; i < prod; i++) {
        uint64_t a = f->rings[2].slots[i];
        assert_int_equal(a % x.fs, 0);
        assert_int_equal(ipc_pool_owner(&f->pool, (ipc_buf)(a / x.fs)), x.kown);
    }
    for (uint32_t i = 0; i < AFXDP_WINDOW; i++)
        assert_true(f->rings[2].slots[prod + i] == AFXDP_POISON);
    struct ipc_census c = t_census(f);
    assert_int_equal(c.kernel, 256);
    assert_int_equal(c.free, T_NBUFS - 256);
    assert_int_equal(ipc_ld_rlx(&x.d.ctr[C_FILL_STOCK]), 256);
}

/* Killed between the give and the publish: the successor takes the lent,
 * unpublished buffers back; what was published stays lent. */
static void test_afxdp_limbo_taken_back(void **state)
{
    struct t_fix *f = *state;
    struct afxdp x, y;
    t_instance(f, &x, 0);
    fill_step(&x);
    /* The kernel uses 100 fill slots, so the next batch has room. */
    ipc_st_rel(&f->rings[2].cons, 100);
    /* A batch cut short: 40 slots written, given, not published. */
    ipc_buf bufs[40];
    assert_int_equal(ipc_pool_alloc(&f->pool, bufs, 40), 40);
    for (uint32_t i = 0; i < 40; i++)
        *xskq_addr(&x.fq, x.fq.head + i) = (uint64_t)bufs[i] * x.fs;
    ipc_pool_give(&f->pool, bufs, 40, x.kown);
    /* ... and a TX batch of 5 likewise, with the router's offset and length. */
    ipc_buf tb[5];
    assert_int_equal(ipc_pool_alloc(&f->pool, tb, 5), 5);
    for (uint32_t i = 0; i < 5; i++) {
        ipc_pool_meta(&f->pool, tb[i])->len = 60;
        struct xdp_desc *d = xskq_desc(&x.tx, x.tx.head + i);
        d->addr = (uint64_t)tb[i] * x.fs + IPC_HEADROOM;
        d->len = 60;
    }
    ipc_pool_give(&f->pool, tb, 5, x.kown);
    struct ipc_census c = t_census(f);
    assert_int_equal(c.kernel, 256 + 45); /* 100 of the 256 are "in the kernel's RX path" */

    t_instance(f, &y, 1);
    assert_int_equal(ipc_ld_rlx(&y.d.ctr[C_LIMBO_RECOVERED]), 45);
    c = t_census(f);
    assert_int_equal(c.kernel, 256);
    assert_int_equal(c.free, T_NBUFS - 256);
    for (uint32_t i = 0; i < AFXDP_WINDOW; i++) {
        assert_true(*xskq_addr(&y.fq, y.fq.head + i) == AFXDP_POISON);
        assert_true(xskq_desc(&y.tx, y.tx.head + i)->addr == AFXDP_POISON);
    }
    /* A second successor finds nothing more. */
    t_instance(f, &x, 0);
    assert_int_equal(ipc_ld_rlx(&x.d.ctr[C_LIMBO_RECOVERED]), 0);
}

/* Published slots are never taken as limbo: stale entries from an earlier lap
 * of the ring were poisoned before the window reached them. */
static void test_afxdp_window_never_names_published(void **state)
{
    struct t_fix *f = *state;
    struct afxdp x, y;
    t_instance(f, &x, 0);
    /* Many laps: the kernel consumes everything each time, the buffers stay lent. */
    for (int lap = 0; lap < 40; lap++) {
        fill_step(&x);
        ipc_st_rel(&f->rings[2].cons, x.fq.head);
    }
    fill_step(&x);
    struct ipc_census c = t_census(f);
    uint32_t lent = c.kernel;
    t_instance(f, &y, 1);
    assert_int_equal(ipc_ld_rlx(&y.d.ctr[C_LIMBO_RECOVERED]), 0);
    assert_int_equal(t_census(f).kernel, lent);
}

/* TX lent, completed by the kernel; a predecessor took the completions and
 * died before releasing the slots: the successor refuses them as stale and
 * frees nothing twice. */
static void test_afxdp_stale_completions(void **state)
{
    struct t_fix *f = *state;
    struct afxdp x, y;
    t_instance(f, &x, 0);
    ipc_buf b[32];
    assert_int_equal(ipc_pool_alloc(&f->pool, b, 32), 32);
    for (uint32_t i = 0; i < 32; i++) {
        ipc_pool_meta(&f->pool, b[i])->len = 100;
        assert_true(drv_backlog_push(&x.d, b[i]));
    }
    tx_push(&x);
    assert_int_equal(ipc_ld_rlx(&x.d.ctr[C_TX_PKTS]), 32);
    assert_int_equal(t_census(f).kernel, 32);
    t_kernel_tx(f, 32);

    /* The predecessor takes 20 completions back and dies before the release;
     * the supervisor's reclaim frees what it held. */
    uint64_t addr[20];
    uint32_t idx[20];
    ipc_buf got[20];
    for (uint32_t i = 0; i < 20; i++)
        addr[i] = f->rings[3].slots[i];
    assert_int_equal(take_from_kernel(&x, addr, 20, got, idx), 20);
    ipc_pool_free(&f->pool, got, 20);

    t_instance(f, &y, 1); /* its recovery drains the completion ring */
    assert_int_equal(ipc_ld_rlx(&y.d.ctr[C_STALE_DESC]), 20);
    assert_int_equal(ipc_ld_rlx(&y.d.ctr[C_TX_DONE]), 12);
    assert_int_equal(ipc_ld_acq(&f->rings[3].cons), 32);
    struct ipc_census c = t_census(f);
    assert_int_equal(c.kernel, 0);
    assert_int_equal(c.free, T_NBUFS);
    assert_int_equal(ipc_ld_rlx(&f->pool.hdr->free_bad), 0);
}

/* The TX ring never publishes past size - window: the rest waits in the backlog. */
static void test_afxdp_tx_backlog_when_full(void **state)
{
    struct t_fix *f = *state;
    struct afxdp x;
    t_instance(f, &x, 0);
    uint32_t cap = AFXDP_TX_SIZE - AFXDP_WINDOW, total = cap + 100;
    ipc_buf b[64];
    for (uint32_t done = 0; done < total; done += 64) {
        uint32_t n = total - done < 64 ? total - done : 64;
        assert_int_equal(ipc_pool_alloc(&f->pool, b, n), n);
        for (uint32_t i = 0; i < n; i++) {
            ipc_pool_meta(&f->pool, b[i])->len = 60;
            assert_true(drv_backlog_push(&x.d, b[i]));
        }
        tx_push(&x);
    }
    assert_int_equal(x.tx.head, cap);
    assert_int_equal(drv_backlog_depth(&x.d), 100);
    assert_true(ipc_ld_rlx(&x.d.ctr[C_TX_RING_FULL]) > 0);
    t_kernel_tx(f, cap);
    comp_step(&x);
    tx_push(&x);
    assert_int_equal(drv_backlog_depth(&x.d), 0);
    assert_int_equal(x.tx.head, total);
}

/* The ring views read the kernel's index only when their cache says empty
 * (consumer) or full (producer), and never offer a producer more than the
 * ring less the lend window. */
static void test_afxdp_cached_indices(void **state)
{
    struct t_fix *f = *state;
    struct afxdp x;
    uint32_t idx;
    t_instance(f, &x, 0);

    ipc_st_rel(&f->rings[0].prod, 10); /* the kernel receives 10 frames */
    assert_int_equal(xskq_cons_peek(&x.rx, 4, &idx), 4);
    assert_int_equal(x.rx.cached, 10); /* the cache was empty: one read */
    ipc_st_rel(&f->rings[0].prod, 20);
    assert_int_equal(xskq_cons_peek(&x.rx, 8, &idx), 8);
    assert_int_equal(x.rx.cached, 10); /* the cache had 8: no read */
    assert_int_equal(xskq_cons_peek(&x.rx, 16, &idx), 16);
    assert_int_equal(x.rx.cached, 20);
    xskq_cons_release(&x.rx, 16);
    assert_int_equal(ipc_ld_acq(&f->rings[0].cons), 16);

    uint32_t cap = AFXDP_TX_SIZE - AFXDP_WINDOW;
    assert_int_equal(xskq_prod_reserve(&x.tx, AFXDP_TX_SIZE, &idx), cap);
    xskq_prod_submit(&x.tx, cap);
    assert_int_equal(ipc_ld_acq(&f->rings[1].prod), cap);
    ipc_st_rel(&f->rings[1].cons, 100); /* the kernel sends 100 */
    assert_int_equal(xskq_prod_reserve(&x.tx, 1, &idx), 1);
    assert_int_equal(x.tx.cached, 100); /* the cache said full: one read */
    ipc_st_rel(&f->rings[1].cons, 200);
    assert_int_equal(xskq_prod_reserve(&x.tx, 50, &idx), 50);
    assert_int_equal(x.tx.cached, 100); /* room for 50 in the cache: no read */
    assert_int_equal(xskq_prod_reserve(&x.tx, 150, &idx), 150);
    assert_int_equal(x.tx.cached, 200);
    assert_int_equal(idx, cap);
}

/* The kernel's side of receive: frame after frame from the fill ring's
 * buffers into RX descriptors, @lens[i] bytes each, XDP_PKT_CONTD where
 * @contd[i]. */
static void t_kernel_rx(struct t_fix *f, const uint32_t *lens, const bool *contd, uint32_t n)
{
    struct t_ring *rx = &f->rings[0], *fq = &f->rings[2];
    struct xdp_desc *d = (struct xdp_desc *)rx->slots;
    uint32_t c = ipc_ld_acq(&fq->cons), p = ipc_ld_acq(&rx->prod);
    for (uint32_t i = 0; i < n; i++) {
        struct xdp_desc *e = &d[(p + i) & (AFXDP_RX_SIZE - 1)];
        e->addr = fq->slots[(c + i) & (AFXDP_FILL_SIZE - 1)] + IPC_HEADROOM;
        e->len = lens[i];
        e->options = contd[i] ? XDP_PKT_CONTD : 0;
    }
    ipc_st_rel(&fq->cons, c + n);
    ipc_st_rel(&rx->prod, p + n);
}

/* Multi-buffer receive: a 3-buffer frame becomes one chain, a single one
 * stays single; a frame missing a buffer (a predecessor took it) and one
 * longer than IPC_CHAIN_MAX buffers are dropped whole and counted, and
 * every buffer comes back. */
static void test_afxdp_rx_chains(void **state)
{
    struct t_fix *f = *state;
    struct afxdp x;
    struct ipc_ring_shared *sh;
    struct ipc_ring_cons cons;
    struct ipc_err err;
    int rfd;
    assert_int_equal(ipc_ring_create("t-afxdp-out", 256, 1, T_SELF, T_SELF, 0, &rfd, &sh, &err), 0);
    ipc_ring_prod_init(&f->svc.out[0], sh, -1);
    ipc_ring_cons_init(&cons, sh);
    t_instance(f, &x, 0);
    fill_step(&x);

    /* Frames: 3 buffers, 1 buffer, 2 buffers of which a predecessor took
     * the second, then IPC_CHAIN_MAX + 6 buffers, then 1 buffer. */
    enum { N = 3 + 1 + 2 + IPC_CHAIN_MAX + 6 + 1 };
    uint32_t lens[N];
    bool contd[N];
    for (uint32_t i = 0; i < N; i++) {
        lens[i] = 1000;
        contd[i] = true;
    }
    lens[2] = 100;
    contd[2] = contd[3] = contd[5] = contd[N - 2] = contd[N - 1] = false;
    lens[3] = 60;
    t_kernel_rx(f, lens, contd, N);
    const struct xdp_desc *d = (const struct xdp_desc *)f->rings[0].slots;
    ipc_buf gone = (ipc_buf)(d[5].addr / x.fs);
    assert_int_equal(ipc_pool_take(&f->pool, x.kown, &gone, 1, f->bad), 1);
    ipc_pool_free(&f->pool, &gone, 1);

    uint32_t done = 0;
    for (int k = 0; k < 8 && done < N; k++)
        done += rx_step(&x);
    assert_int_equal(done, N);
    assert_int_equal(ipc_ld_acq(&f->rings[0].cons), N);
    assert_false(x.rx_skip);

    ipc_buf got[8];
    uint32_t cidx;
    assert_int_equal(ipc_ring_peek(&cons, 8, &cidx), 3);
    for (uint32_t i = 0; i < 3; i++)
        got[i] = ipc_ring_cons_slot(&cons, cidx + i);
    ipc_ring_release(&cons, 3);
    const struct ipc_meta *m = ipc_pool_meta(&f->pool, got[0]);
    assert_int_equal(m->pkt_len, 2100);
    assert_int_equal(m->off, IPC_HEADROOM);
    assert_int_equal(m->in_port, T_PORT);
    assert_true(m->next != IPC_BUF_NONE);
    m = ipc_pool_meta(&f->pool, m->next);
    assert_int_equal(m->len, 1000);
    m = ipc_pool_meta(&f->pool, m->next);
    assert_int_equal(m->len, 100);
    assert_true(m->next == IPC_BUF_NONE);
    assert_true(ipc_pool_meta(&f->pool, got[1])->next == IPC_BUF_NONE);
    assert_int_equal(ipc_pool_meta(&f->pool, got[1])->len, 60);
    assert_int_equal(ipc_pool_meta(&f->pool, got[2])->len, 1000);
    assert_int_equal(ipc_ld_rlx(&x.d.ctr[C_RX_PKTS]), 3);
    assert_int_equal(ipc_ld_rlx(&x.d.ctr[C_RX_MB_PKTS]), 1);
    assert_int_equal(ipc_ld_rlx(&x.d.ctr[C_RX_MB_DESCS]), 3);
    assert_int_equal(ipc_ld_rlx(&x.d.ctr[C_RX_MB_BAD]), 2);
    assert_int_equal(ipc_ld_rlx(&x.d.ctr[C_STALE_DESC]), 1);

    ipc_pool_free(&f->pool, got, 3);
    struct ipc_census c = t_census(f);
    assert_int_equal(c.kernel, 256 - N);
    assert_int_equal(c.free, T_NBUFS - (256 - N));
    assert_int_equal(ipc_ld_rlx(&f->pool.hdr->free_bad), 0);
    ipc_ring_detach(sh);
    close(rfd);
}

/* A driver group: each port's instance sends on the output ring of its own
 * port and pulls only the input rings of its own port (port_rings maps
 * them by the port the config names for each ring), so a packet for one
 * port never leaves by another's socket. */
static void test_afxdp_group_rings(void **state)
{
    struct t_fix *f = *state;
    struct ipc_ring_shared *sh[4];
    struct ipc_ring_prod to[2];
    struct ipc_err err;
    int rfd[4];
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(ipc_ring_create("t-afxdp-group", 256, i, T_SELF, T_SELF, 0, &rfd[i], &sh[i], &err), 0);
    /* Input rings for ports 1 and 2; output rings listed as 2, then 1. */
    f->svc.cfg = f->cfg;
    f->svc.n_in = f->svc.n_out = 2;
    for (uint32_t k = 0; k < 2; k++) {
        ipc_ring_prod_init(&to[k], sh[k], -1);
        ipc_ring_cons_init(&f->svc.in[k], sh[k]);
        f->cfg->in[k].port = (uint16_t)(1 + k);
        ipc_ring_prod_init(&f->svc.out[k], sh[2 + k], -1);
        f->cfg->out[k].port = (uint16_t)(2 - k);
    }
    struct afxdp x, y;
    t_instance(f, &x, 0);
    t_instance(f, &y, 1);
    y.port = 2;
    assert_int_equal(x.d.n_in, 2); /* drv_init: every ring, until port_rings */
    assert_int_equal(port_rings(&x, &err), 0);
    assert_int_equal(port_rings(&y, &err), 0);
    assert_ptr_equal(x.out, &f->svc.out[1]);
    assert_ptr_equal(y.out, &f->svc.out[0]);
    assert_int_equal(x.d.n_in, 1);
    assert_ptr_equal(x.d.in[0], &f->svc.in[0]);
    assert_int_equal(y.d.n_in, 1);
    assert_ptr_equal(y.d.in[0], &f->svc.in[1]);

    ipc_buf b[5];
    assert_int_equal(ipc_pool_alloc(&f->pool, b, 5), 5);
    for (uint32_t i = 0; i < 5; i++) {
        ipc_pool_meta(&f->pool, b[i])->len = 60;
        ipc_pool_meta(&f->pool, b[i])->off = IPC_HEADROOM;
        ipc_pool_meta(&f->pool, b[i])->next = IPC_BUF_NONE;
    }
    assert_int_equal(ipc_ring_enq_burst(&to[0], b, 3), 3);
    assert_int_equal(ipc_ring_enq_burst(&to[1], b + 3, 2), 2);
    assert_int_equal(drv_tx_pull(&y.d, tx_check), 2);
    assert_int_equal(drv_backlog_depth(&y.d), 2);
    assert_int_equal(drv_backlog_peek(&y.d, 0), b[3]);
    assert_int_equal(drv_tx_pull(&x.d, tx_check), 3);
    assert_int_equal(drv_backlog_peek(&x.d, 0), b[0]);
    assert_int_equal(drv_tx_pull(&y.d, tx_check), 0);

    /* A port with no ring of its own in the config is refused. */
    struct afxdp z = y;
    z.port = 3;
    assert_int_equal(port_rings(&z, &err), -EINVAL);

    drv_backlog_drop(&x.d, C_TX_DROP_BACKLOG);
    drv_backlog_drop(&y.d, C_TX_DROP_BACKLOG);
    drv_dead_flush(&x.d);
    drv_dead_flush(&y.d);
    assert_int_equal(ipc_ld_rlx(&f->pool.hdr->free_bad), 0);
    for (uint32_t i = 0; i < 4; i++) {
        ipc_ring_detach(sh[i]);
        close(rfd[i]);
    }
    f->svc.n_in = f->svc.n_out = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_afxdp_fill_lends_in_order, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_afxdp_fill_bounded_by_rx_room, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_afxdp_limbo_taken_back, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_afxdp_window_never_names_published, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_afxdp_stale_completions, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_afxdp_tx_backlog_when_full, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_afxdp_cached_indices, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_afxdp_rx_chains, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_afxdp_group_rings, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
