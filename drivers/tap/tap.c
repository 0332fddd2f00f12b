/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/tap.c: the TAP driver's loop (tap.h; setup and teardown are
 * setup.c, shared driver scaffolding drivers/common/drv.h). Peers: the kernel on the
 * TAP fd (io_uring reads and writes), the router on the output ring, the
 * router and the shaper on the input rings, and the supervisor, which reads
 * our stats region and sends SIGTERM.
 *
 * Receive: rx_inflight reads stay in flight. Each read is a readv into
 * [12-byte virtio-net header in the slot] + [the slot's first frame, from the
 * headroom] + [the slot's further frames, whole], so the kernel writes the
 * frame straight into pool buffers and a 64 KB GSO frame lands as a chain
 * (33 frames of 2048 bytes). Each slot owns enough frames for the longest
 * frame the port can carry (33 with TSO/USO on, 1 without). When a read
 * completes with k frames' worth of data, those k frames leave as the packet
 * and the slot keeps its unused tail; only k new frames are allocated to top
 * it up. So the steady state costs one allocation per frame received, no
 * more, and the reserve is rx_inflight * frames_per_slot buffers (1,056 at
 * the defaults), held by this driver and counted as such by the census.
 * Reads are armed only as far as the router's ring has room (one packet per
 * read): when it is full the driver pauses receiving (no reads, no device
 * poll, a short timed wait) and leaves the excess in the device's queue.
 *
 * Transmit: packets from every input ring (validated by ipc_ring_recv, and
 * their vnet fields by tap_vnet_check) go to drv.h's FIFO backlog; each loop turns
 * as much of the backlog as there are free write slots into writevs: the
 * header rebuilt from the metadata, one iovec per frame. A write completion
 * frees the chain. The backlog absorbs a device that stops taking packets
 * (writes that stay in flight, or come back -EAGAIN) without a busy-wait;
 * past DRV_BACKLOG packets we drop and count.
 *
 * One wait per loop: re-armed reads, new writes, the wake-up we owe the
 * router (an eventfd write, issued as an SQE) and the blocking wait all go
 * into one io_uring_enter. Our own eventfd is watched by a poll linked to a
 * read, the signal fd by a poll, and the heartbeat timeout is the enter's
 * timeout argument, so the process blocks in exactly one place.
 *
 * The TAP fd must be blocking: io_uring answers a read on an O_NONBLOCK file
 * with -EAGAIN instead of waiting (arming a poll) for data. We clear the flag
 * at start; writes to a TAP never block in practice (tun has no queue towards
 * the stack), and if they did io_uring would wait for POLLOUT, not us.
 */
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ipc/stage.h"
#include "tap_impl.h"

static const uint64_t tap_one = 1; /* what an eventfd wake-up writes */

/* The SQ is sized so that it is never full in a loop; the fallback keeps
 * it correct anyway. */
struct io_uring_sqe *tap_sqe(struct tap *t)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
    if (ipc_unlikely(!sqe)) {
        io_uring_submit(&t->ring);
        sqe = io_uring_get_sqe(&t->ring);
        if (!sqe)
            drv_ctr_add(&t->d, C_URING_ERR, 1);
    }
    return sqe;
}

/* ---- receive ------------------------------------------------------------ */

/*
 * Top the slot up to rx_frames frames and queue its readv. With the pool short
 * of buffers, a slot that got at least one frame is armed anyway ("short"):
 * small frames (ACKs, ARP, pings) still get in, and a frame too long for it
 * is dropped by the kernel (EFAULT, counted in rx_drop_nobufs). Holding out
 * for full slots instead could leave every free buffer parked in slots that
 * wait for traffic that cannot come. Once the pool had too few in a pass
 * (*@dry), the pass's later slots do not ask again: under overload the
 * queues hold every buffer, and each ask of a dry pool costs a look at the
 * depot for nothing.
 */
static bool rx_arm(struct tap *t, uint32_t i, bool *dry)
{
    struct tap_rx_slot *s = &t->rx[i];
    s->short_arm = false;
    if (s->nfr < t->rx_frames) {
        uint32_t need = t->rx_frames - s->nfr;
        uint32_t got = *dry ? 0 : ipc_pool_alloc(t->pool, &s->fr[s->nfr], need);
        s->nfr += got;
        if (got < need) {
            *dry = true;
            drv_ctr_add(&t->d, C_RX_NOBUFS, 1);
            if (s->nfr == 0)
                return false;
            s->short_arm = true;
        }
    }
    struct io_uring_sqe *sqe = tap_sqe(t);
    if (!sqe)
        return false;
    s->iov[0] = (struct iovec){.iov_base = &s->hdr, .iov_len = TAP_VNET_HDR_LEN};
    s->iov[1] = (struct iovec){.iov_base = ipc_pool_frame(t->pool, s->fr[0]) + t->headroom, .iov_len = t->first_room};
    for (uint32_t k = 1; k < s->nfr; k++)
        s->iov[k + 1] = (struct iovec){.iov_base = ipc_pool_frame(t->pool, s->fr[k]), .iov_len = t->frame_size};
    io_uring_prep_readv(sqe, TAP_DEV_FIXED, s->iov, s->nfr + 1, 0);
    sqe->flags |= IOSQE_FIXED_FILE;
    if (t->rx_nowait)
        sqe->rw_flags = RWF_NOWAIT;
    io_uring_sqe_set_data64(sqe, UD(UD_RX, i));
    s->armed = true;
    t->rx_armed++;
    return true;
}

/*
 * Re-arm idle slots, up to the window. Returns the number of slots the
 * window wanted armed and could not arm (starved).
 *
 * The window follows what the device's queue holds when we look: a reap in
 * which every armed read got a frame doubles it (up to rx_inflight: under
 * load, every read finds a frame and all stay armed), and one in which a
 * read found the queue empty sets it to the frames that reap got, plus a
 * margin. At part load a readiness event then arms a few reads, not
 * rx_inflight of which all but one come back -EAGAIN.
 */
uint32_t tap_rx_refill(struct tap *t)
{
    uint32_t idle = 0;
    if (t->rx_rest || t->rx_empty)
        return 0; /* not starved: waiting for the device (or resting) */
    /* Backpressure: a read in flight delivers at most one packet, so never
     * have more reads armed than the router's ring has room for. Reading a
     * frame only to drop it at a full ring spends the CPU the router needs
     * to drain it (on one CPU, a receive livelock); left in the device's
     * queue, an excess frame is dropped by the kernel at no cost to us. */
    uint32_t want = t->rx_window;
    uint32_t room = ipc_ring_free_count(&t->svc->out[0], want);
    if (room < want)
        want = room;
    t->rx_throttled = t->rx_armed >= want;
    bool dry = false;
    for (uint32_t i = 0; i < t->n_rx && t->rx_armed < want; i++)
        if (!t->rx[i].armed && !rx_arm(t, i, &dry))
            idle++;
    return idle;
}

static void rx_window_update(struct tap *t)
{
    if (!t->rx_nowait) {
        t->rx_window = t->n_rx; /* parked reads wait in the kernel: keep them all */
    } else if (t->rx_missed) {
        uint32_t w = t->rx_hits + TAP_RX_WINDOW_MIN / 2;
        t->rx_window = w < TAP_RX_WINDOW_MIN ? TAP_RX_WINDOW_MIN : w > t->n_rx ? t->n_rx : w;
    } else if (t->rx_hits && t->rx_hits + t->rx_armed >= t->rx_window) {
        t->rx_window = t->rx_window * 2 > t->n_rx ? t->n_rx : t->rx_window * 2;
    }
    t->rx_missed = false;
    t->rx_hits = 0;
}

static void rx_complete(struct tap *t, uint32_t i, int res)
{
    struct tap_rx_slot *s = &t->rx[i];
    s->armed = false;
    t->rx_armed--;
    if (res < 0) {
        if (res == -EAGAIN && t->rx_nowait) {
            t->rx_empty = true; /* the queue is empty: the poll tells us when it is not */
            t->rx_missed = true;
            return;
        }
        if (res == -EOPNOTSUPP && t->rx_nowait) {
            /* The file cannot do non-blocking reads: park the reads instead. */
            t->rx_nowait = false;
            t->rx_empty = false;
            return;
        }
        if (res == -ECANCELED || res == -EINTR || res == -EAGAIN)
            return;
        if (res == -EFAULT && s->short_arm) {
            drv_ctr_add(&t->d, C_RX_DROP_NOBUFS, 1); /* a frame longer than the slot: the kernel dropped it */
            return;
        }
        drv_ctr_add(&t->d, C_RX_ERR, 1);
        if (++t->rx_err_run >= TAP_RX_ERR_REST)
            t->rx_rest = true;
        return;
    }
    t->rx_err_run = 0;
    t->rx_hits++;
    struct ipc_vnet v;
    switch (tap_vnet_rx(&s->hdr, (uint32_t)res, &v)) {
    case TAP_VNET_OK:
        break;
    case TAP_VNET_SHORT:
        drv_ctr_add(&t->d, C_RX_DROP_SHORT, 1);
        return; /* the frames stay in the slot for the next read */
    case TAP_VNET_LONG:
        drv_ctr_add(&t->d, C_RX_DROP_LONG, 1);
        return;
    case TAP_VNET_BAD_GSO:
        drv_ctr_add(&t->d, C_RX_DROP_BAD_GSO, 1);
        return;
    case TAP_VNET_BAD_CSUM:
        drv_ctr_add(&t->d, C_RX_DROP_BAD_CSUM, 1);
        return;
    }
    uint32_t len = (uint32_t)res - TAP_VNET_HDR_LEN;
    uint32_t k = ipc_pool_chain_frames(t->pool, len);
    if (ipc_unlikely(k > s->nfr))
        abort(); /* the kernel wrote past our iovecs: a broken invariant */

    /* The first k frames become the packet, as the kernel filled them:
     * rx_arm's iovecs follow the pool's chain layout. */
    ipc_pool_chain_link(t->pool, s->fr, k, len);
    struct ipc_meta *m0 = ipc_pool_meta(t->pool, s->fr[0]);
    m0->vnet = v;
    m0->in_port = t->port;
    m0->out_port = IPC_PORT_NONE;
    if (t->vlan.n && !drv_vlan_rx_one(&t->d, &t->vlan, s->fr[0])) {
        /* Dropped (counted): its frames leave the slot all the same. */
        s->nfr -= k;
        memmove(s->fr, s->fr + k, s->nfr * sizeof(s->fr[0]));
        return;
    }
    t->out[t->n_out] = s->fr[0];
    t->out_len[t->n_out] = len;
    t->out_nfr[t->n_out] = (uint8_t)k;
    t->out_flag[t->n_out] = (uint8_t)((tap_vnet_is_gso(&v) ? OUT_GSO : 0) |
                                      (v.flags & TAP_VNET_F_NEEDS_CSUM ? OUT_CSUM : 0));
    t->n_out++;

    /* The slot keeps its unused tail; rx_arm tops it up with k new frames. */
    s->nfr -= k;
    memmove(s->fr, s->fr + k, s->nfr * sizeof(s->fr[0]));
}

/* Queue an eventfd write to the router if it asked for one: the one wake-up
 * this loop owes it, issued in the same io_uring_enter as everything else. */
static uint32_t rx_kick(struct tap *t)
{
    struct ipc_ring_prod *p = &t->svc->out[0];
    ipc_fence_sc(); /* (F2) pairs with the consumer's (F1), ipc/wake.h */
    if (p->wake_fd < 0 || !ipc_wake_wanted(p))
        return 0;
    struct io_uring_sqe *sqe = tap_sqe(t);
    if (!sqe)
        return ipc_wake_one(p); /* cannot happen; never lose a wake-up */
    io_uring_prep_write(sqe, p->wake_fd, &tap_one, sizeof(tap_one), 0);
    sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
    io_uring_sqe_set_data64(sqe, UD(UD_KICK, 0));
    ipc_count(&p->sh->wake_sent, 1);
    ipc_count(&t->svc->stats->wakes_sent, 1);
    return 1;
}

/* Hand this loop's received packets to the router in one ring submit
 * (the wake-up is rx_kick's). Returns the packets the ring took. */
uint32_t tap_rx_flush(struct tap *t)
{
    if (t->n_out == 0)
        return 0;
    drv_rx_capture(&t->d, t->out, t->n_out);
    uint32_t sent = ipc_ring_enq_burst(&t->svc->out[0], t->out, t->n_out);
    uint64_t bytes = 0, gso = 0, csum = 0, frames = 0, chain_max = ipc_ld_rlx(&t->d.ctr[C_RX_CHAIN_MAX]);
    /* Per-packet numbers were saved at completion: the metadata is the
     * router's the moment the ring publishes it. */
    for (uint32_t i = 0; i < sent; i++) {
        bytes += t->out_len[i];
        frames += t->out_nfr[i];
        if (t->out_nfr[i] > chain_max)
            chain_max = t->out_nfr[i];
        gso += t->out_flag[i] & OUT_GSO;
        csum += (t->out_flag[i] & OUT_CSUM) >> 1;
    }
    for (uint32_t i = sent; i < t->n_out; i++)
        drv_dead_add(&t->d, t->out[i]);
    if (sent < t->n_out)
        drv_ctr_add(&t->d, C_RX_DROP_RING_FULL, t->n_out - sent);
    drv_ctr_add(&t->d, C_RX_PKTS, sent);
    drv_ctr_add(&t->d, C_RX_GSO_PKTS, gso);
    drv_ctr_add(&t->d, C_RX_CSUM_PARTIAL, csum);
    drv_ctr_add(&t->d, C_RX_BYTES, bytes);
    drv_ctr_add(&t->d, C_RX_CHAIN_FRAMES, frames);
    drv_ctr_set(&t->d, C_RX_CHAIN_MAX, chain_max);
    t->n_out = 0;
    return sent;
}

/* ---- transmit ----------------------------------------------------------- */

static uint32_t pkt_len(const struct ipc_pool *pool, ipc_buf b)
{
    const struct ipc_meta *m = ipc_pool_meta(pool, b);
    return m->next == IPC_BUF_NONE ? m->len : m->pkt_len;
}

/* drv_tx_pull's check: the vnet fields against the packet, which the kernel
 * would refuse (EINVAL) or, worse, accept and mis-segment. */
static uint32_t tx_check(const struct drv *d, ipc_buf b)
{
    const struct tap *t = (const struct tap *)d; /* d is its first member */
    if (t->vlan.n) {
        uint32_t v = drv_vlan_tx_one(d, &t->vlan, b); /* the tags first: the vnet offsets then count them */
        if (v != DRV_KEEP)
            return v;
    }
    static const uint32_t why[] = {
        [TAP_VNET_OK] = DRV_KEEP,
        [TAP_VNET_SHORT] = C_TX_DROP_SHORT,
        [TAP_VNET_LONG] = C_TX_DROP_LONG,
        [TAP_VNET_BAD_GSO] = C_TX_DROP_BAD_GSO,
        [TAP_VNET_BAD_CSUM] = C_TX_DROP_BAD_CSUM,
    };
    return why[tap_vnet_check(&ipc_pool_meta(d->pool, b)->vnet, pkt_len(d->pool, b))];
}

/* A packet of several frames, or one frame longer than TAP_TX_SMALL: the
 * header from the slot, then one iovec per frame. */
static void tx_prep_writev(struct tap *t, struct io_uring_sqe *sqe, struct tap_tx_slot *s, ipc_buf b)
{
    s->iov[0] = (struct iovec){.iov_base = &s->hdr, .iov_len = TAP_VNET_HDR_LEN};
    uint32_t n = 0;
    /* ipc_ring_recv checked the chain: at most IPC_CHAIN_MAX frames. */
    for (ipc_buf f = b; f != IPC_BUF_NONE; f = ipc_pool_meta(t->pool, f)->next) {
        const struct ipc_meta *fm = ipc_pool_meta(t->pool, f);
        s->iov[++n] = (struct iovec){.iov_base = ipc_pool_data(t->pool, f), .iov_len = fm->len};
    }
    s->nfr = n;
    io_uring_prep_writev(sqe, TAP_DEV_FIXED, s->iov, n + 1, 0);
}

uint32_t tap_tx_push(struct tap *t)
{
    uint32_t done = 0;
    while (drv_backlog_depth(&t->d) && t->n_tx_free) {
        struct io_uring_sqe *sqe = tap_sqe(t);
        if (!sqe)
            break;
        ipc_buf b = drv_backlog_pop(&t->d);
        uint32_t si = t->tx_free[--t->n_tx_free];
        struct tap_tx_slot *s = &t->tx[si];
        const struct ipc_meta *m = ipc_pool_meta(t->pool, b);
        s->pkt = b;
        s->len = pkt_len(t->pool, b);
        tap_vnet_to_wire(&m->vnet, &s->hdr);
        /* Read once: the router can still write the metadata, and a length
         * that changed after the check must not size the copy. */
        const volatile struct ipc_meta *vm = m;
        uint32_t next = vm->next, off = vm->off, len = vm->len;
        if (next == IPC_BUF_NONE && len <= TAP_TX_SMALL && len == s->len && off + len <= t->frame_size) {
            /* A small frame (64-byte UDP, ACKs, DNS) goes out in a plain
             * write of a private copy of header and frame: copying it
             * costs less than the kernel's import of an iovec array for
             * a writev, and the kernel then gets exactly the header
             * tx_check passed and the frame it was checked against, which
             * in the pool the router could still be writing. */
            memcpy(s->small, &s->hdr, TAP_VNET_HDR_LEN);
            memcpy(s->small + TAP_VNET_HDR_LEN, ipc_pool_frame(t->pool, b) + off, len);
            s->nfr = 1;
            io_uring_prep_write(sqe, TAP_DEV_FIXED, s->small, len + TAP_VNET_HDR_LEN, 0);
        } else {
            tx_prep_writev(t, sqe, s, b);
        }
        sqe->flags |= IOSQE_FIXED_FILE;
        io_uring_sqe_set_data64(sqe, UD(UD_TX, si));
        t->tx_inflight++;
        done++;
    }
    return done;
}

static void tx_complete(struct tap *t, uint32_t si, int res)
{
    struct tap_tx_slot *s = &t->tx[si];
    t->tx_inflight--;
    t->tx_free[t->n_tx_free++] = si;
    if (ipc_likely(res == (int)(s->len + TAP_VNET_HDR_LEN))) {
        drv_ctr_add(&t->d, C_TX_PKTS, 1);
        drv_ctr_add(&t->d, C_TX_BYTES, s->len);
        drv_ctr_add(&t->d, C_TX_CHAIN_FRAMES, s->nfr);
        if (s->hdr.gso_type != TAP_VNET_GSO_NONE)
            drv_ctr_add(&t->d, C_TX_GSO_PKTS, 1);
        drv_dead_add(&t->d, s->pkt);
        return;
    }
    if (res == -EAGAIN && !t->stop && drv_backlog_requeue(&t->d, s->pkt)) {
        /* The device took nothing: retry first thing next loop. */
        drv_ctr_add(&t->d, C_TX_EAGAIN, 1);
        return;
    }
    if (res >= 0)
        drv_ctr_add(&t->d, C_TX_SHORT, 1); /* a TAP write is all or nothing; don't resend */
    else if (res == -EINVAL)
        drv_ctr_add(&t->d, C_TX_ERR_EINVAL, 1); /* the kernel refused the frame or its vnet header */
    else if (res == -ECANCELED || res == -EAGAIN)
        drv_ctr_add(&t->d, C_TX_DROP_STOP, 1);
    else
        drv_ctr_add(&t->d, C_TX_ERR, 1);
    drv_dead_add(&t->d, s->pkt);
}

/* ---- wake-ups and signals ----------------------------------------------- */

/*
 * Receive readiness: one POLLIN on the device, armed only while the device's
 * queue is known to be empty. Reads are issued with RWF_NOWAIT, so a read
 * that finds the queue empty completes at once with -EAGAIN instead of
 * parking a poll of its own: rx_inflight parked reads would all be woken by
 * every packet (tun wakes its whole wait queue) and all but one would
 * re-park, a thundering herd per packet. The poll is one-shot, not
 * multishot: a waiter on the device's queue is paid for by whoever queues a
 * frame there (tun's sk_data_ready takes the wait queue's lock and runs our
 * wake function for every frame, on the sender's CPU: docs/drivers.md,
 * "Receive: slots that own a 64 KB chain"), and while reads find
 * frames nobody needs to be told. Armed after an -EAGAIN, a poll finds the
 * frame that came in between (arming looks at the queue), and it ends with
 * its first event.
 */
void tap_rx_poll_arm(struct tap *t)
{
    if (t->rx_throttled && t->rx_poll_armed && !t->rx_poll_stop) {
        /* Paused: every frame the device queues would wake us for nothing. */
        struct io_uring_sqe *sqe = tap_sqe(t);
        if (sqe) {
            io_uring_prep_poll_remove(sqe, UD(UD_RXPOLL, 0));
            io_uring_sqe_set_data64(sqe, UD(UD_CANCEL, 0));
            sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
            t->rx_poll_stop = true;
        }
        return;
    }
    if (t->rx_poll_armed || !t->rx_empty || t->rx_throttled || t->stop || !t->rx_nowait)
        return;
    struct io_uring_sqe *sqe = tap_sqe(t);
    if (!sqe)
        return;
    io_uring_prep_poll_add(sqe, TAP_DEV_FIXED, POLLIN);
    sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, UD(UD_RXPOLL, 0));
    t->rx_poll_armed = true;
}

/* Watch our eventfd: a poll, then (linked) a read that resets the counter.
 * The eventfd is O_NONBLOCK (the supervisor's producers share its file), so a
 * bare read would come back -EAGAIN instead of waiting. */
void tap_wake_arm(struct tap *t)
{
    if (t->svc->wake_fd < 0 || t->wake_armed || t->stop)
        return;
    if (io_uring_sq_space_left(&t->ring) < 2)
        io_uring_submit(&t->ring);
    struct io_uring_sqe *p = io_uring_get_sqe(&t->ring);
    struct io_uring_sqe *r = p ? io_uring_get_sqe(&t->ring) : NULL;
    if (!r) {
        drv_ctr_add(&t->d, C_URING_ERR, 1);
        return;
    }
    io_uring_prep_poll_add(p, t->svc->wake_fd, POLLIN);
    p->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
    io_uring_sqe_set_data64(p, UD(UD_WAKE, 1));
    io_uring_prep_read(r, t->svc->wake_fd, &t->wake_val, sizeof(t->wake_val), 0);
    io_uring_sqe_set_data64(r, UD(UD_WAKE, 0));
    t->wake_armed = true;
}

static void sig_arm(struct tap *t)
{
    struct io_uring_sqe *sqe = tap_sqe(t);
    if (!sqe)
        return;
    io_uring_prep_poll_add(sqe, t->sig_fd, POLLIN);
    io_uring_sqe_set_data64(sqe, UD(UD_SIG, 0));
    t->sig_armed = true;
}

/* ---- the loop ----------------------------------------------------------- */

/* One cq_advance per batch. */
uint32_t tap_reap(struct tap *t)
{
    struct io_uring_cqe *cqes[TAP_CQE_BATCH];
    uint32_t total = 0;
    bool rx_ready = false;
    for (;;) {
        unsigned n = io_uring_peek_batch_cqe(&t->ring, cqes, TAP_CQE_BATCH);
        if (n == 0)
            break;
        for (unsigned i = 0; i < n; i++) {
            uint64_t ud = io_uring_cqe_get_data64(cqes[i]);
            int res = cqes[i]->res;
            switch (UD_KIND(ud)) {
            case UD_RX:
                rx_complete(t, UD_IDX(ud), res);
                break;
            case UD_TX:
                tx_complete(t, UD_IDX(ud), res);
                break;
            case UD_WAKE:
                /* The read ends the pair, success or not. So does a poll
                 * that fails (its success has no CQE): the linked read is
                 * then cancelled, and with the poll's CQE skipped on
                 * success the kernel posts none for it. */
                t->wake_armed = false;
                if (UD_IDX(ud) == 1 && res != -ECANCELED)
                    drv_ctr_add(&t->d, C_WAKE_ERR, 1);
                break;
            case UD_SIG:
                t->sig_armed = false;
                t->stop = true;
                ipc_svc_stop_seen();
                break;
            case UD_RXPOLL:
                t->rx_poll_armed = t->rx_poll_stop = false; /* one-shot: re-armed at the next -EAGAIN */
                if (res >= 0 || res == -ECANCELED)
                    rx_ready = true;
                else
                    drv_ctr_add(&t->d, C_URING_ERR, 1);
                break;
            case UD_KICK:
                if (res < 0 && res != -EAGAIN) /* EAGAIN: counter saturated, a wake-up is pending */
                    drv_ctr_add(&t->d, C_WAKE_ERR, 1);
                break;
            default:
                break;
            }
        }
        io_uring_cq_advance(&t->ring, n);
        total += n;
    }
    /* A poll event in this batch may be older than an -EAGAIN read in it;
     * trying once more then costs one -EAGAIN, while the other order would
     * strand a packet, so readiness wins. */
    if (rx_ready)
        t->rx_empty = false;
    rx_window_update(t);
    return total;
}

void tap_gauges(struct tap *t)
{
    drv_gauges(&t->d);
    drv_ctr_set(&t->d, C_RX_INFLIGHT, t->rx_armed);
    drv_ctr_set(&t->d, C_TX_INFLIGHT, t->tx_inflight);
}

int tap_run(struct tap *t)
{
    struct ipc_svc *svc = t->svc;

    sig_arm(t);
    while (!t->stop && !svc->orphan_stop) {
        uint64_t c = ipc_stage_start(svc);
        /* 1. Completions: received frames, finished writes, wake-ups. */
        uint32_t work = tap_reap(t);
        if (t->stop)
            break;
        /* 2. Received packets to the router, one submit, one wake-up. */
        uint32_t rx = tap_rx_flush(t);
        c = ipc_stage_end(svc, S_RX, c, rx);
        if (rx)
            c = ipc_stage_end(svc, S_WAKE, c, rx_kick(t));
        /* 3. Input rings into the backlog, the backlog into writes. */
        work += drv_tx_pull(&t->d, tx_check);
        uint32_t writes = tap_tx_push(t);
        c = ipc_stage_end(svc, S_TX, c, writes);
        /* 4. Re-arm the reads that completed; free what is done. */
        uint32_t armed = t->rx_armed;
        uint32_t starved = tap_rx_refill(t);
        drv_dead_flush(&t->d);
        tap_rx_poll_arm(t);
        tap_wake_arm(t);
        tap_gauges(t);
        ipc_svc_beat(svc);
        c = ipc_stage_end(svc, S_REARM, c, t->rx_armed - armed);

        /* 5. The one io_uring_enter of this loop. Only the ones that do not
         * block are a stage: the blocking one below is mostly sleep.
         *
         * A loop that did work does not submit and come round to look
         * again: it goes on to the wait, which returns at once if what it
         * submits completes inline (a TAP write does, so does a read that
         * finds a frame) or a completion is already there. That saves an
         * io_uring_enter per wake-up, and on a VM a system call costs about
         * a microsecond. */
        int sub;
        if (drv_polling(&t->d, work)) {
            sub = io_uring_submit_and_get_events(&t->ring); /* busy-poll: submit and reap, no wait */
            ipc_stage_end(svc, S_SYSCALL, c, sub > 0 ? (uint64_t)sub : 0);
            continue;
        }
        if (!drv_sleep_arm(&t->d)) {
            sub = io_uring_submit(&t->ring); /* work arrived while we armed */
            ipc_stage_end(svc, S_SYSCALL, c, sub > 0 ? (uint64_t)sub : 0);
            continue;
        }
        uint64_t ns = starved || t->rx_rest ? 1000000u : (uint64_t)t->idle_ms * 1000000u;
        if (t->rx_throttled) {
            ns = TAP_THROTTLE_US * 1000u;
            t->rx_empty = false; /* the poll is off: look at the device again after the pause */
        }
        struct __kernel_timespec ts = tap_timeout(ns);
        struct io_uring_cqe *cqe;
        int ret = io_uring_submit_and_wait_timeout(&t->ring, &cqe, 1, &ts, NULL);
        drv_sleep_end(&t->d, ret == -ETIME);
        t->rx_rest = false; /* a failing device is retried once per wait */
        if (ret == -ETIME)
            t->rx_empty = false; /* belt and braces: look again after an idle wait */
        t->rx_err_run = 0;
        if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
            drv_ctr_add(&t->d, C_URING_ERR, 1);
            return ret;
        }
    }
    return 0;
}
