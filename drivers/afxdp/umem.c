/* SPDX-License-Identifier: MIT */
/*
 * drivers/afxdp/umem.c: the AF_XDP driver's UMEM half (afxdp_impl.h): taking
 * buffers back from the kernel, the completion ring, topping the fill ring
 * up, and at start the buffers a predecessor lent but never published. The
 * lend window and the kill-point rules these follow are in afxdp.c's
 * opening comment ("Restart").
 */
#include "afxdp_impl.h"

#include <stdio.h>
#include <sys/socket.h>

#include "ipc/pool.h"

/* ---- taking buffers back from the kernel -------------------------------- */

/*
 * Take the buffers named by @addr[0..n) from the kernel owner. Returns the
 * good ones compacted into @bufs, with @idx[j] the position of bufs[j] in
 * @addr. A slot whose buffer is not the kernel's (a predecessor took it and
 * died before releasing the slot) is counted and skipped.
 */
uint32_t take_from_kernel(struct afxdp *x, const uint64_t *addr, uint32_t n, ipc_buf *bufs, uint32_t *idx)
{
    ipc_buf all[AFXDP_BURST];
    for (uint32_t i = 0; i < n; i++)
        all[i] = bufs[i] = (ipc_buf)(addr[i] / x->fs);
    uint32_t good = ipc_pool_take(x->pool, x->kown, bufs, n, x->bad);
    if (ipc_unlikely(good < n))
        drv_ctr_add(&x->d, C_STALE_DESC, n - good);
    for (uint32_t i = 0, j = 0; i < n && j < good; i++)
        if (all[i] == bufs[j])
            idx[j++] = i;
    return good;
}

/* ---- completions -------------------------------------------------------- */

uint32_t comp_step(struct afxdp *x)
{
    struct xskq *q = &x->cq;
    uint32_t total = 0;
    for (;;) {
        uint32_t first;
        uint32_t n = xskq_cons_peek(q, AFXDP_BURST, &first);
        if (n == 0)
            break;
        uint64_t addr[AFXDP_BURST];
        uint32_t idx[AFXDP_BURST];
        ipc_buf bufs[AFXDP_BURST];
        for (uint32_t i = 0; i < n; i++)
            addr[i] = *xskq_addr(q, first + i);
        uint32_t good = take_from_kernel(x, addr, n, bufs, idx);
        xskq_cons_release(q, n);
        ipc_pool_free(x->pool, bufs, good);
        drv_ctr_add(&x->d, C_TX_DONE, good);
        total += n;
    }
    return total;
}

/* ---- lending: fill ------------------------------------------------------ */

/*
 * Top the fill ring up to its target, one window at a time. The stock is
 * counted against the cached consumer index, which lags the kernel: it is
 * refreshed when the cache says the stock is within a window of its target
 * (nothing to do as far as we know; in steady state that is one read per
 * loop, not one per batch) or after a loop short of buffers (then on a 1 ms
 * retry, not the hot path). A lagging cache shows more stock than there is,
 * so at worst we top up a loop late; it never lets us lend past the window.
 */
uint32_t fill_step(struct afxdp *x)
{
    struct xskq *q = &x->fq;
    uint32_t done = 0;
    /* The router is behind and the RX ring waits on it: lend the kernel no
     * more frames, so that what it cannot place is dropped before the copy
     * (the fill ring is empty: xsk_fill_empty), the cheapest point there is,
     * not copied into the pool to wait or be dropped at the RX ring. */
    if (x->rx_blocked)
        return 0;
    if (x->fill_short || xskq_prod_queued(q) + AFXDP_WINDOW > x->fill_target)
        xskq_prod_refresh(q);
    x->fill_short = false;
    /* Lend no more than the RX ring has room for, counting what waits in
     * it: a frame the kernel takes a buffer for and then finds the RX ring
     * full is copied first and dropped after (xsk_rx_ring_full), and its
     * buffer goes to the kernel's own free list, from which the next frame
     * is copied and dropped in turn, whatever the fill ring holds. Kept to
     * the RX ring's room, an overflow is dropped at the empty fill ring
     * instead, before the copy (xsk_fill_empty). Frames the kernel has
     * taken buffers for and not yet published still count as stock here
     * (it releases fill slots when it publishes), so the sum never falls
     * short of what the kernel may place. The RX producer is read fresh
     * (a cache shows fewer waiting, so more room), and only when there is
     * something to lend. */
    uint32_t target = x->fill_target;
    if (xskq_prod_queued(q) < target) {
        uint32_t rx_room = AFXDP_RX_SIZE - xskq_cons_avail(&x->rx, AFXDP_RX_SIZE);
        if (rx_room < target)
            target = rx_room;
    }
    for (;;) {
        uint32_t stock = xskq_prod_queued(q);
        if (stock == 0 && done == 0)
            drv_ctr_add(&x->d, C_FILL_EMPTY, 1);
        if (stock >= target)
            break;
        uint32_t n = target - stock, first;
        if (n > AFXDP_WINDOW)
            n = AFXDP_WINDOW;
        n = xskq_prod_reserve(q, n, &first);
        /* Refill in batches: a part window only when the stock runs low. */
        if (n == 0 || (n < AFXDP_WINDOW / 2 && stock > target / 2))
            break;
        ipc_buf bufs[AFXDP_WINDOW];
        uint32_t got = ipc_pool_alloc(x->pool, bufs, n);
        if (got < n) {
            drv_ctr_add(&x->d, C_FILL_NOBUFS, 1);
            x->fill_short = true;
        }
        if (got == 0)
            break;
        for (uint32_t i = 0; i < got; i++)
            *xskq_addr(q, first + i) = (uint64_t)bufs[i] * x->fs;
        ipc_pool_give(x->pool, bufs, got, x->kown);
        fill_poison(x, first + AFXDP_WINDOW, got);
        xskq_prod_submit(q, got); /* the kernel may read the slots and the frames */
        done += got;
        if (got < n)
            break;
    }
    drv_ctr_set(&x->d, C_FILL_STOCK, xskq_prod_queued(q));
    if (done && xskq_needs_wakeup(q)) {
        recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
        drv_ctr_add(&x->d, C_RX_WAKEUP, 1);
    }
    return done;
}

/* ---- restart ------------------------------------------------------------ */

/* Buffers a predecessor lent but never published: in the window past prod. */
void recover_limbo(struct afxdp *x)
{
    ipc_buf bufs[2 * AFXDP_WINDOW];
    uint32_t n = 0;
    for (uint32_t i = 0; i < AFXDP_WINDOW; i++) {
        uint64_t a = *xskq_addr(&x->fq, x->fq.head + i);
        if (a != AFXDP_POISON && a / x->fs < x->pool->nbufs && ipc_pool_owner(x->pool, (ipc_buf)(a / x->fs)) == x->kown)
            bufs[n++] = (ipc_buf)(a / x->fs);
        a = xskq_desc(&x->tx, x->tx.head + i)->addr;
        if (a != AFXDP_POISON && a / x->fs < x->pool->nbufs && ipc_pool_owner(x->pool, (ipc_buf)(a / x->fs)) == x->kown)
            bufs[n++] = (ipc_buf)(a / x->fs);
    }
    /* A lent TX buffer keeps the router's offset and length: take checks them. */
    uint32_t good = n ? ipc_pool_take(x->pool, x->kown, bufs, n, x->bad) : 0;
    if (good) {
        ipc_pool_free(x->pool, bufs, good);
        drv_ctr_add(&x->d, C_LIMBO_RECOVERED, good);
        fprintf(stderr, "%s: took back %u buffers a predecessor lent to the kernel but never published\n",
                x->svc->cfg->name, good);
    }
    fill_poison(x, x->fq.head, AFXDP_WINDOW);
    tx_poison(x, x->tx.head, AFXDP_WINDOW);
}
