/* SPDX-License-Identifier: MIT */
/*
 * drivers/afxdp/afxdp.c: the AF_XDP driver's loop, receive and send (afxdp.h;
 * the fill and completion rings are umem.c's). Peers: the
 * kernel through the XSK's four rings (mapped from the fd the supervisor
 * created and keeps), the router on the output ring, the router or the
 * shaper on the input rings, and the supervisor (stats region, SIGTERM).
 *
 * The pool is the UMEM: a UMEM address is handle * frame_size + offset, so a
 * frame the kernel writes on one port leaves on another by handle.
 *
 * One loop:
 *   1. RX ring -> take from the kernel -> output ring (one submit, and the one
 *      wake-up we owe the router once step 2 is done);
 *   2. completion ring -> take from the kernel -> free;
 *   3. input rings -> backlog -> TX ring (lend to the kernel), then a kick
 *      (a zero-timeout ppoll on the XSK) only if the kernel's need_wakeup
 *      flag asks for one (in copy mode it always does: the copy-mode TX
 *      path runs inside the kick, at most AFXDP_TX_BUDGET frames a call
 *      where the kernel lets the supervisor raise it, 32 otherwise, so we
 *      kick again while the ring has frames);
 *   4. fill ring topped up to its target, in batches of AFXDP_WINDOW;
 *      (steps 1 and 2 run first for every port, then the wake-ups owed to
 *      the router are sent, with a yield of the CPU if one was
 *      (wake_and_yield), then steps 3 and 4 for every port)
 *   5. if none of that found work: arm the input rings' wake words and block
 *      in one ppoll on the XSK fd (RX), our eventfd and the stop signalfd
 *      (ipc/svc.h), for the idle period
 *      (1 ms while the TX ring is stuck or the pool is short).
 * A TX ring that is full leaves packets in the backlog for the next loop (no
 * busy-wait); past DRV_BACKLOG (drivers/common/drv.h) packets we drop and count.
 *
 * A driver group (docs/drivers.md, "Driver groups") serves several ports:
 * each has its own socket, struct afxdp, output ring, input rings and
 * backlog, and the loop runs steps 1-2 for each in turn, sends the
 * wake-ups it owes once for all of them (the supervisor gives rings into
 * one consumer one eventfd number, so the router is woken once a loop, not
 * once a port), runs steps 3-4 for each, and step 5 blocks in one ppoll on every port's XSK fd, our
 * eventfd and the stop signalfd. Nothing below is shared between ports but
 * the pool and the counters, so each argument holds per port.
 *
 * Restart. The kernel keeps the rings and their indices; a new instance
 * binds to them as it finds them. Ordering makes every kill point safe:
 *   - lend (fill, TX): write the slots, give the buffers to the kernel
 *     (IPC_OWNER_KERNEL | our socket's number, one per port and queue), poison the AFXDP_WINDOW slots past the new
 *     producer index, publish it. Killed before the give: the buffers are
 *     still ours and the supervisor's reclaim frees them (the slots are not
 *     published, the kernel never sees them). Killed between the give and the
 *     publish: the buffers are lent but in no published slot. The successor
 *     finds them: every slot in [prod, prod + AFXDP_WINDOW) is poisoned
 *     except those that batch wrote (we never publish more than size -
 *     AFXDP_WINDOW slots, so the window is always clear of slots the kernel
 *     may still read), and a slot naming a buffer lent to our kernel owner
 *     is exactly such a buffer: it takes it back (limbo_recovered).
 *   - take (RX, completion): take the buffers from the kernel owner, then
 *     release the slots. Killed in between: the slots come round again to
 *     the successor, whose take refuses them (they are no longer the
 *     kernel's: stale_desc) and who releases them. The successor handles
 *     those slots before it lends anything, so a stale slot can never name a
 *     buffer it has lent again.
 * So buffers the kernel holds stay counted as kernel-held across restarts,
 * and no buffer is lost. (Zero-copy drivers pull fill entries into a
 * private cache; the same ordering holds, the kernel just holds more.)
 *
 * The rings are read through xskq.h's views, which cache the kernel's index
 * and read it only when the cache says full or empty. The argument above
 * does not lean on the cache: every step still writes the slots, gives or
 * takes, then publishes our own index with one store-release, in that
 * order; the cache only ever lags the kernel, so it can hide room or
 * descriptors, never invent them (no slot past size - AFXDP_WINDOW is
 * published, no unpublished slot is read); and it is private, so a
 * successor rebuilds it from the shared indices when it binds.
 *
 * What is not AF_XDP (counters, the TX backlog and its pull from the input
 * rings, the idle protocol around our ppoll) is drivers/common/drv.h.
 */
#include "afxdp.h"
#include "afxdp_impl.h"

#include <errno.h>
#include <linux/if_xdp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "drivers/common/drv.h"
#include "ipc/stage.h"
#include "tables/config.h"
#include "xskq.h"

static const char *const afxdp_ctr_names[C_N] = {
    [C_RX_PKTS] = "rx_pkts",
    [C_RX_BYTES] = "rx_bytes",
    [C_RX_DROP_RING_FULL] = "rx_drop_ring_full",
    [C_TX_PKTS] = "tx_pkts",
    [C_TX_BYTES] = "tx_bytes",
    [C_TX_DONE] = "tx_done",
    [C_TX_DROP_BACKLOG] = "tx_drop_backlog",
    [C_TX_DROP_CHAIN] = "tx_drop_chain",
    [C_TX_DROP_LONG] = "tx_drop_long",
    [C_TX_RING_FULL] = "tx_ring_full",
    [C_TX_WAKEUP] = "tx_wakeup",
    [C_TX_WAKEUP_ERR] = "tx_wakeup_err",
    [C_TX_STALLED] = "tx_stalled",
    [C_RX_WAKEUP] = "rx_wakeup",
    [C_FILL_EMPTY] = "fill_empty",
    [C_FILL_NOBUFS] = "fill_nobufs",
    [C_FILL_STOCK] = "fill_stock",
    [C_KERNEL_HELD] = "kernel_held",
    [C_BACKLOG_DEPTH] = "backlog_depth",
    [C_BACKLOG_MAX] = "backlog_max",
    [C_STALE_DESC] = "stale_desc",
    [C_LIMBO_RECOVERED] = "limbo_recovered",
    [C_XSK_RX_DROPPED] = "xsk_rx_dropped",
    [C_XSK_RX_INVALID] = "xsk_rx_invalid",
    [C_XSK_TX_INVALID] = "xsk_tx_invalid",
    [C_XSK_RX_RING_FULL] = "xsk_rx_ring_full",
    [C_XSK_FILL_EMPTY] = "xsk_fill_empty",
    [C_XSK_TX_EMPTY] = "xsk_tx_empty",
    [C_BUSY_POLLS] = "busy_polls",
    [C_WAKEUP_SYSCALLS_PER_KPKT] = "wakeup_syscalls_per_kpkt",
    [C_RX_BACKPRESSURE] = "rx_backpressure",
    [C_RX_MB_PKTS] = "rx_mb_pkts",
    [C_RX_MB_DESCS] = "rx_mb_descs",
    [C_RX_MB_BAD] = "rx_mb_bad",
    [C_WAKE_YIELDS] = "wake_yields",
};

/* Stages of the loop, for `ringrouter stats --stages` (ipc/stage.h,
 * docs/stats.md): busy_poll is the recvfrom that runs the device's NAPI
 * (the XDP program and the copy into the pool included), kick the ppoll
 * that runs the copy-mode send. */
enum afxdp_stage { ST_BUSY_POLL, ST_RX, ST_COMPLETE, ST_TX, ST_KICK, ST_FILL, ST_WAKE, ST_N };
static const char *const afxdp_stage_names[ST_N] = {
    [ST_BUSY_POLL] = "busy_poll", [ST_RX] = "rx",     [ST_COMPLETE] = "complete", [ST_TX] = "tx",
    [ST_KICK] = "kick",           [ST_FILL] = "fill", [ST_WAKE] = "wake",
};

static const struct drv_ids afxdp_drv_ids = {
    .tx_drop_backlog = C_TX_DROP_BACKLOG,
    .backlog_depth = C_BACKLOG_DEPTH,
    .backlog_max = C_BACKLOG_MAX,
};

volatile sig_atomic_t afxdp_stop;

/* ---- receive ------------------------------------------------------------ */

/*
 * Can the kernel place frames for us: the router's ring has room and the
 * fill ring holds a burst of buffers? Not while the router is behind, nor
 * while the pool's buffers all wait downstream (in its rings, in the TX
 * ring: fill_step cannot lend). A busy poll then would copy frames only to
 * drop them at the socket (xsk_fill_empty), in our time. The kernel's
 * index is read only when our cache (which can only show more stock than
 * there is) allows a burst.
 */
static bool rx_open(struct afxdp *x)
{
    uint32_t low = x->fill_target / 2 < AFXDP_BURST ? x->fill_target / 2 : AFXDP_BURST;
    if (x->rx_blocked || xskq_prod_queued(&x->fq) < low)
        return false;
    xskq_prod_refresh(&x->fq);
    return xskq_prod_queued(&x->fq) >= low;
}

/*
 * Busy polling: a recvfrom runs one NAPI poll of the device (up to the
 * socket's SO_BUSY_POLL_BUDGET frames) here, on our CPU, and leaves the
 * device quiet for gro_flush_timeout (supervisor/xsk.c). Skipped while the
 * RX ring already holds a full loop's worth, or while the kernel has
 * nowhere to put frames (rx_open).
 */
static uint32_t rx_busy_poll(struct afxdp *x)
{
    if (!x->busy || !rx_open(x) ||
        xskq_cons_avail(&x->rx, AFXDP_BURST * AFXDP_RX_BUDGET) >= AFXDP_BURST * AFXDP_RX_BUDGET)
        return 0;
    /* A device with nothing to receive (the transmit side of a flow): each
     * poll would cost a syscall and defer the device's interrupts (a timer
     * that wakes its NAPI thread gro_flush_timeout later, for nothing).
     * After AFXDP_BP_IDLE empty polls we stop, until frames arrive again:
     * they still do, the NAPI's timer, then its interrupt, runs it, and
     * rx_step seeing them starts the polls again. */
    if (x->bp_empty >= AFXDP_BP_IDLE)
        return 0;
    recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
    drv_ctr_add(&x->d, C_BUSY_POLLS, 1);
    /* Counted as empty until rx_step finds a frame and resets it: no
     * second look at the kernel's index just to learn what rx_step will. */
    x->bp_empty++;
    return 1;
}

/*
 * Multi-buffer frames (XDP_USE_SG, supervisor/xsk.c): a frame the kernel
 * copies into several buffers comes as consecutive descriptors, XDP_PKT_CONTD
 * on all but the last, published together. We only ever release RX slots up
 * to the end of a frame, so a peek starts at a frame's first descriptor, and
 * the frame becomes one chain (ipc/pool.h: pkt_len on the first buffer, each
 * buffer keeping the kernel's offset). A frame that does not end within one
 * peek of AFXDP_BURST (= IPC_CHAIN_MAX) descriptors is longer than a chain
 * may be: its buffers are freed as they come, up to its last (rx_skip).
 */
_Static_assert(AFXDP_BURST == IPC_CHAIN_MAX, "a peek holds the longest chain");

/* The descriptors of one peek, and which of their buffers take_from_kernel
 * gave us: buf[i] (IPC_BUF_NONE if a predecessor had taken it). */
struct rx_peek {
    uint64_t addr[AFXDP_BURST];
    uint32_t len[AFXDP_BURST];
    uint32_t opt[AFXDP_BURST];
    ipc_buf buf[AFXDP_BURST];
};

/* Take @n descriptors' buffers from the kernel and release their slots. */
static void rx_take(struct afxdp *x, struct rx_peek *pk, uint32_t n)
{
    ipc_buf bufs[AFXDP_BURST];
    uint32_t idx[AFXDP_BURST];
    uint32_t good = take_from_kernel(x, pk->addr, n, bufs, idx);
    xskq_cons_release(&x->rx, n); /* the slots are free: the buffers are ours now */
    for (uint32_t i = 0; i < n; i++)
        pk->buf[i] = IPC_BUF_NONE;
    for (uint32_t j = 0; j < good; j++)
        pk->buf[idx[j]] = bufs[j];
}

/* Free the buffers we hold among descriptors [from, to), one by one. */
static void rx_free(struct afxdp *x, struct rx_peek *pk, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++)
        if (pk->buf[i] != IPC_BUF_NONE) {
            ipc_pool_meta(x->pool, pk->buf[i])->next = IPC_BUF_NONE;
            ipc_pool_free(x->pool, &pk->buf[i], 1);
        }
}

/*
 * The frame of descriptors [s, e) as one packet (a chain if e - s > 1).
 * Returns its first buffer, or IPC_BUF_NONE when it was dropped: a buffer
 * a predecessor had already taken (stale_desc counts those; a multi-buffer
 * frame missing some is rx_mb_bad, the rest freed).
 */
static ipc_buf rx_frame(struct afxdp *x, struct rx_peek *pk, uint32_t s, uint32_t e, uint64_t *bytes)
{
    uint32_t total = 0, have = 0;
    for (uint32_t i = s; i < e; i++) {
        have += pk->buf[i] != IPC_BUF_NONE;
        total += pk->len[i];
    }
    if (ipc_unlikely(have != e - s)) {
        if (have) {
            rx_free(x, pk, s, e);
            drv_ctr_add(&x->d, C_RX_MB_BAD, 1);
        }
        return IPC_BUF_NONE;
    }
    for (uint32_t i = s; i < e; i++) {
        struct ipc_meta *m = ipc_pool_meta(x->pool, pk->buf[i]);
        m->off = (uint16_t)(pk->addr[i] % x->fs);
        m->len = (uint16_t)pk->len[i];
        m->pkt_len = i == s ? total : 0;
        m->next = i + 1 < e ? pk->buf[i + 1] : IPC_BUF_NONE;
        m->in_port = x->port;
        m->out_port = IPC_PORT_NONE;
        m->flags = 0;
        memset(&m->vnet, 0, sizeof(m->vnet));
    }
    if (e - s > 1) {
        drv_ctr_add(&x->d, C_RX_MB_PKTS, 1);
        drv_ctr_add(&x->d, C_RX_MB_DESCS, e - s);
    }
    *bytes += total;
    return pk->buf[s];
}

/* rx_skip: free descriptors up to the end of the frame being dropped.
 * Returns the descriptors consumed. */
static uint32_t rx_skip_rest(struct afxdp *x, struct rx_peek *pk, uint32_t n)
{
    uint32_t e = 0;
    while (e < n && (pk->opt[e] & XDP_PKT_CONTD))
        e++;
    if (e < n) {
        e++; /* the frame's last */
        x->rx_skip = false;
    }
    rx_take(x, pk, e);
    rx_free(x, pk, 0, e);
    return e;
}

/*
 * Backpressure: no more frames leave the RX ring than the router's ring has
 * room for. Taking them and dropping them at a full ring would spend the CPU
 * the router needs to drain it (receive livelock); left in the RX ring they
 * wait, and what overflows it the kernel drops (xsk_rx_ring_full) at no cost
 * to us. Blocked, the loop sleeps 200 us on our eventfd only (afxdp_run).
 * Returns the descriptors consumed.
 */
static uint32_t rx_step(struct afxdp *x)
{
    struct xskq *q = &x->rx;
    uint32_t total = 0;
    ipc_buf out[AFXDP_BURST * AFXDP_RX_BUDGET];
    uint32_t nout = 0;
    uint64_t bytes = 0;
    struct ipc_ring_prod *p = x->out;
    uint32_t room = ipc_ring_free_count(p, AFXDP_BURST * AFXDP_RX_BUDGET);
    struct rx_peek pk;
    x->rx_blocked = false;
    for (unsigned round = 0; round < AFXDP_RX_BUDGET; round++) {
        uint32_t first, n = xskq_cons_peek(q, AFXDP_BURST, &first);
        if (n == 0)
            break;
        for (uint32_t i = 0; i < n; i++) {
            const struct xdp_desc *e = xskq_desc(q, first + i);
            pk.addr[i] = e->addr;
            pk.len[i] = e->len;
            pk.opt[i] = e->options;
        }
        if (ipc_unlikely(x->rx_skip)) {
            total += rx_skip_rest(x, &pk, n);
            continue;
        }
        /* Whole frames, as many as the router's ring has room for. */
        uint32_t cut = 0, frames = 0, want = room - nout;
        for (uint32_t i = 0; i < n && frames < want; i++)
            if (!(pk.opt[i] & XDP_PKT_CONTD)) {
                frames++;
                cut = i + 1;
            }
        if (cut == 0) {
            if (want == 0) {
                x->rx_blocked = true;
                drv_ctr_add(&x->d, C_RX_BACKPRESSURE, 1);
            } else if (n == AFXDP_BURST) {
                x->rx_skip = true; /* no end in a whole peek: longer than a chain */
                drv_ctr_add(&x->d, C_RX_MB_BAD, 1);
                continue;
            }
            break; /* otherwise the kernel publishes a frame's descriptors together: wait */
        }
        rx_take(x, &pk, cut);
        for (uint32_t s = 0, i = 0; i < cut; i++)
            if (!(pk.opt[i] & XDP_PKT_CONTD)) {
                ipc_buf b = rx_frame(x, &pk, s, i + 1, &bytes);
                if (b != IPC_BUF_NONE && (!x->vlan.n || drv_vlan_rx_one(&x->d, &x->vlan, b)))
                    out[nout++] = b;
                s = i + 1;
            }
        total += cut;
        if (cut < n && frames == want) {
            x->rx_blocked = xskq_cons_avail(q, 1) != 0;
            if (x->rx_blocked)
                drv_ctr_add(&x->d, C_RX_BACKPRESSURE, 1);
            break;
        }
        if (n < AFXDP_BURST)
            break;
    }
    if (nout) {
        drv_rx_capture(&x->d, out, nout);
        uint32_t sent = ipc_ring_enq_burst(p, out, nout);
        if (sent < nout) {
            ipc_pool_free(x->pool, out + sent, nout - sent);
            drv_ctr_add(&x->d, C_RX_DROP_RING_FULL, nout - sent);
        }
        if (sent) {
            ipc_count(&p->sh->enq_bytes, bytes);
            ipc_wake_mark(&x->svc->wake, p);
        }
        drv_ctr_add(&x->d, C_RX_PKTS, sent);
        drv_ctr_add(&x->d, C_RX_BYTES, bytes);
        if (x->pc) {
            drv_ctr_add(&x->d, x->pc + AFXDP_PC_RX_PKTS, sent);
            drv_ctr_add(&x->d, x->pc + AFXDP_PC_RX_BYTES, bytes);
        }
    }
    return total;
}

/* ---- lending: TX (the fill ring is umem.c's) ---------------------------- */

/* drv_tx_pull's check: one frame per packet (no multi-buffer AF_XDP yet),
 * its data inside the frame. */
static uint32_t tx_check(const struct drv *d, ipc_buf b)
{
    const struct ipc_meta *m = ipc_pool_meta(d->pool, b);
    if (ipc_unlikely(m->next != IPC_BUF_NONE))
        return C_TX_DROP_CHAIN;
    if (ipc_unlikely(m->len == 0 || (uint32_t)m->off + m->len > d->pool->frame_size))
        return C_TX_DROP_LONG;
    const struct afxdp *x = (const struct afxdp *)d; /* d is its first member */
    return x->vlan.n ? drv_vlan_tx_one(d, &x->vlan, b) : DRV_KEEP;
}

/* The backlog into the TX ring. Returns the packets published. */
static uint32_t tx_push(struct afxdp *x)
{
    struct xskq *q = &x->tx;
    uint32_t done = 0;
    uint64_t bytes = 0;
    while (drv_backlog_depth(&x->d)) {
        uint32_t n = drv_backlog_depth(&x->d), first;
        if (n > AFXDP_WINDOW)
            n = AFXDP_WINDOW;
        n = xskq_prod_reserve(q, n, &first);
        if (n == 0) {
            drv_ctr_add(&x->d, C_TX_RING_FULL, 1);
            break;
        }
        ipc_buf bufs[AFXDP_WINDOW];
        for (uint32_t i = 0; i < n; i++) {
            ipc_buf b = drv_backlog_peek(&x->d, i);
            const struct ipc_meta *m = ipc_pool_meta(x->pool, b);
            struct xdp_desc *d = xskq_desc(q, first + i);
            d->addr = (uint64_t)b * x->fs + m->off;
            d->len = m->len;
            d->options = 0;
            bytes += m->len;
            bufs[i] = b;
        }
        ipc_pool_give(x->pool, bufs, n, x->kown);
        tx_poison(x, first + AFXDP_WINDOW, n);
        xskq_prod_submit(q, n);
        drv_backlog_advance(&x->d, n);
        done += n;
    }
    drv_ctr_add(&x->d, C_TX_PKTS, done);
    drv_ctr_add(&x->d, C_TX_BYTES, bytes);
    if (x->pc && done) {
        drv_ctr_add(&x->d, x->pc + AFXDP_PC_TX_PKTS, done);
        drv_ctr_add(&x->d, x->pc + AFXDP_PC_TX_BYTES, bytes);
    }
    return done;
}

/*
 * Kick while the kernel has frames to send and asks for it (copy mode sends
 * at most AFXDP_TX_BUDGET frames per call). Returns the kicks made. The
 * consumer index is read around each kick, the call that moves it; a cache
 * that already shows the ring drained needs no read (it only lags).
 *
 * The kick is a ppoll with a zero timeout, not a sendto: the XSK's poll
 * runs the same copy-mode send (zero-copy: the same driver wake-up), but
 * a sendto on a busy-polling socket also busy-polls the device's receive
 * NAPI, which on a port that mostly sends finds nothing and defers the
 * device's interrupts, arming a timer that wakes its NAPI thread
 * gro_flush_timeout later, again for nothing. (poll busy-polls only where
 * the net.core.busy_poll sysctl asks for it, 0 by default.) The choice
 * rests on that, not on a measured speed-up (docs/drivers.md, "The loop").
 * A failed send is not reported by poll: a
 * kick that moved nothing is tx_stalled, as before.
 */
static uint32_t tx_kick(struct afxdp *x)
{
    struct xskq *q = &x->tx;
    uint32_t kicks = 0;
    x->tx_stuck = false;
    for (unsigned k = 0; k < AFXDP_KICKS; k++) {
        if (xskq_prod_queued(q) == 0)
            break;
        xskq_prod_refresh(q);
        uint32_t c0 = q->cached;
        if (c0 == q->head || !xskq_needs_wakeup(q))
            break;
        struct pollfd pfd = {.fd = x->fd, .events = POLLOUT};
        const struct timespec zero = {0, 0};
        int r = ppoll(&pfd, 1, &zero, NULL);
        drv_ctr_add(&x->d, C_TX_WAKEUP, 1);
        kicks++;
        if (r < 0 || (pfd.revents & (POLLERR | POLLNVAL)))
            drv_ctr_add(&x->d, C_TX_WAKEUP_ERR, 1);
        xskq_prod_refresh(q);
        if (q->cached == c0) {
            drv_ctr_add(&x->d, C_TX_STALLED, 1);
            x->tx_stuck = true; /* no progress: completions or the device must move first */
            break;
        }
    }
    return kicks;
}

/* ---- the loop ----------------------------------------------------------- */

/* The kernel's counters for the sockets, and the rates derived from ours:
 * every 1024 loops and when idle, not per loop. A group's are its ports'
 * sums. */
static void xsk_stats(struct afxdp_set *g)
{
    struct afxdp *x0 = g->x[0];
    /* Every syscall that wakes a peer or the kernel, per thousand packets
     * moved either way: what batching and need_wakeup are there to keep low. */
    uint64_t pkts = ipc_ld_rlx(&x0->d.ctr[C_RX_PKTS]) + ipc_ld_rlx(&x0->d.ctr[C_TX_PKTS]);
    uint64_t calls = ipc_ld_rlx(&g->svc->stats->wakes_sent) + ipc_ld_rlx(&x0->d.ctr[C_TX_WAKEUP]) +
                     ipc_ld_rlx(&x0->d.ctr[C_RX_WAKEUP]) + ipc_ld_rlx(&x0->d.ctr[C_BUSY_POLLS]);
    if (pkts)
        drv_ctr_set(&x0->d, C_WAKEUP_SYSCALLS_PER_KPKT, calls * 1000 / pkts);

    uint64_t sum[6] = {0};
    bool any = false, full = true;
    for (unsigned i = 0; i < g->n; i++) {
        struct xdp_statistics st;
        socklen_t len = sizeof(st);
        if (getsockopt(g->x[i]->fd, SOL_XDP, XDP_STATISTICS, &st, &len) < 0)
            continue;
        any = true;
        full = full && len >= sizeof(st);
        sum[0] += st.rx_dropped;
        sum[1] += st.rx_invalid_descs;
        sum[2] += st.tx_invalid_descs;
        if (len >= sizeof(st)) {
            sum[3] += st.rx_ring_full;
            sum[4] += st.rx_fill_ring_empty_descs;
            sum[5] += st.tx_ring_empty_descs;
        }
    }
    if (!any)
        return;
    drv_ctr_set(&x0->d, C_XSK_RX_DROPPED, sum[0]);
    drv_ctr_set(&x0->d, C_XSK_RX_INVALID, sum[1]);
    drv_ctr_set(&x0->d, C_XSK_TX_INVALID, sum[2]);
    if (full) {
        drv_ctr_set(&x0->d, C_XSK_RX_RING_FULL, sum[3]);
        drv_ctr_set(&x0->d, C_XSK_FILL_EMPTY, sum[4]);
        drv_ctr_set(&x0->d, C_XSK_TX_EMPTY, sum[5]);
    }
}

static void gauges(struct afxdp_set *g)
{
    /* Lent and not yet taken back, from the socket's own indices (they
     * count from the socket's creation, so this holds across restarts):
     * the fill stock, RX slots not yet consumed, and TX descriptors
     * published and not yet taken back from the completion ring (copy
     * mode completes each one exactly once). The kernel's indices as this
     * loop last read them (the caches): a gauge is no reason for more
     * reads of lines the kernel writes, and an idle loop has just looked. */
    uint64_t held = 0, stock = 0, depth = 0;
    for (unsigned i = 0; i < g->n; i++) {
        struct afxdp *x = g->x[i];
        stock += xskq_prod_queued(&x->fq);
        held += xskq_prod_queued(&x->fq) + (uint32_t)(x->rx.cached - x->rx.head) + (uint32_t)(x->tx.head - x->cq.head);
        depth += drv_backlog_depth(&x->d);
    }
    struct drv *d = &g->x[0]->d;
    drv_ctr_set(d, C_KERNEL_HELD, held);
    drv_ctr_set(d, C_FILL_STOCK, stock);
    drv_ctr_set(d, C_BACKLOG_DEPTH, depth);
    if (depth > g->backlog_max) {
        g->backlog_max = depth;
        drv_ctr_set(d, C_BACKLOG_MAX, depth);
    }
}

/* Steps 1 and 2 for one port. Returns the work found. */
static uint32_t port_rx(struct afxdp *x, uint64_t *t)
{
    struct ipc_svc *svc = x->svc;
    *t = ipc_stage_end(svc, ST_BUSY_POLL, *t, rx_busy_poll(x));
    uint32_t n = rx_step(x), work = n;
    if (n)
        x->bp_empty = 0;
    *t = ipc_stage_end(svc, ST_RX, *t, n);
    work += n = comp_step(x);
    *t = ipc_stage_end(svc, ST_COMPLETE, *t, n);
    return work;
}

/* Steps 3 and 4 for one port. Returns the packets taken off its input rings;
 * *pending: packets wait in its backlog for a TX ring that is not stuck. */
static uint32_t port_tx(struct afxdp *x, uint64_t *t, bool *pending)
{
    struct ipc_svc *svc = x->svc;
    uint32_t pulled = drv_tx_pull(&x->d, tx_check);
    drv_dead_flush(&x->d);
    *t = ipc_stage_end(svc, ST_TX, *t, tx_push(x));
    *t = ipc_stage_end(svc, ST_KICK, *t, tx_kick(x));
    *t = ipc_stage_end(svc, ST_FILL, *t, fill_step(x));
    *pending |= drv_backlog_depth(&x->d) && !x->tx_stuck;
    return pulled;
}

/*
 * The wake-ups we owe, sent between receive and transmit, then the CPU
 * given up once if we woke a peer: a router on our CPU (a driver group's,
 * whose ports' traffic comes back to us) routes now, and this pass sends
 * what it routed. Otherwise it runs only once we sleep, and each burst costs
 * a second sleep, its eventfd write and our read: three system calls for
 * one. AFXDP_YIELD_FAILS yields in a row that bring nothing back (the
 * router is on another CPU) turn them off for AFXDP_YIELD_PROBE wake-ups.
 */
static uint64_t wake_and_yield(struct afxdp_set *g, uint64_t t, bool *yielded)
{
    struct ipc_svc *svc = g->svc;
    unsigned w = ipc_svc_flush(svc);
    t = ipc_stage_end(svc, ST_WAKE, t, w);
    *yielded = false;
    if (!w)
        return t;
    if (g->yield_off) {
        g->yield_off--;
        return t;
    }
    sched_yield();
    drv_ctr_add(&g->x[0]->d, C_WAKE_YIELDS, 1);
    *yielded = true;
    return ipc_stage_end(svc, ST_WAKE, t, 0);
}

/* After a yield: did it bring packets to send? */
static void yield_result(struct afxdp_set *g, uint32_t pulled)
{
    if (pulled) {
        g->yield_fails = 0;
    } else if (++g->yield_fails >= AFXDP_YIELD_FAILS) {
        g->yield_fails = 0;
        g->yield_off = AFXDP_YIELD_PROBE;
    }
}

int afxdp_run(struct afxdp_set *g)
{
    struct ipc_svc *svc = g->svc;
    struct drv *d0 = &g->x[0]->d; /* the poll budget and the sleep: the service's */
    while (!afxdp_stop && !svc->orphan_stop) {
        uint64_t t = ipc_stage_start(svc);
        uint32_t work = 0, pulled = 0;
        bool pending = false, yielded;
        for (unsigned i = 0; i < g->n; i++)
            work += port_rx(g->x[i], &t);
        t = wake_and_yield(g, t, &yielded);
        for (unsigned i = 0; i < g->n; i++)
            pulled += port_tx(g->x[i], &t, &pending);
        work += pulled;
        if (yielded)
            yield_result(g, pulled);
        ipc_svc_beat(svc);
        if ((++g->loops & (AFXDP_XSTATS_LOOPS - 1)) == 0)
            xsk_stats(g);
        gauges(g);

        if (pending && !work)
            continue;
        if (drv_polling(d0, work) || work)
            continue;
        /* A stop signal that comes from here on keeps the stop signalfd
         * readable, which the ppoll below watches (ipc/svc.h). */
        if (afxdp_stop || !drv_sleep_arm(d0))
            continue; /* stopping, or work arrived while we armed */
        bool slow = false, blocked = false;
        struct pollfd pfd[TBL_GROUP_MAX + 2];
        for (unsigned i = 0; i < g->n; i++) {
            struct afxdp *x = g->x[i];
            slow |= x->tx_stuck || x->fill_short;
            /* A blocked port's XSK is readable and will stay so until the
             * router makes room, which it does not signal: we look again
             * in 200 us instead. */
            blocked |= x->rx_blocked;
            pfd[i] = (struct pollfd){.fd = x->rx_blocked ? -1 : x->fd, .events = POLLIN};
        }
        pfd[g->n] = (struct pollfd){.fd = svc->wake_fd, .events = POLLIN};
        pfd[g->n + 1] = (struct pollfd){.fd = ipc_svc_stop_fd(), .events = POLLIN};
        int ms = slow ? 1 : g->idle_ms;
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
        if (blocked)
            ts = (struct timespec){.tv_sec = 0, .tv_nsec = 200000};
        int r = ppoll(pfd, g->n + 2, &ts, NULL);
        if (r > 0 && (pfd[g->n].revents & POLLIN)) {
            uint64_t v;
            ssize_t rr = read(svc->wake_fd, &v, sizeof(v));
            (void)rr;
        }
        if (r > 0 && (pfd[g->n + 1].revents & POLLIN))
            ipc_svc_stop_poll();
        drv_sleep_end(d0, r == 0);
        if (r == 0 && !blocked)
            xsk_stats(g); /* idle: the kernel's counters, at no cost to traffic */
    }
    return 0;
}

static void port_unmap(struct afxdp *x)
{
    xskq_unmap(&x->rx);
    xskq_unmap(&x->tx);
    xskq_unmap(&x->fq);
    xskq_unmap(&x->cq);
    free(x->bad);
    free(x);
}

/* One port's socket: its rings mapped, its fill stock sized. */
static int port_init(struct afxdp_set *g, uint16_t port, int fd, uint16_t kown, struct afxdp **out,
                     struct ipc_err *err)
{
    struct ipc_svc *svc = g->svc;
    const struct ipc_svc_config *cfg = svc->cfg;
    int ret;
    if (kown < IPC_OWNER_KERNEL || kown > IPC_OWNER_KERNEL_MAX)
        return ipc_errf(err, -EINVAL, "%s: kernel owner id %#x is not one (%#x..%#x)", cfg->name, kown,
                        IPC_OWNER_KERNEL, IPC_OWNER_KERNEL_MAX);
    if (port >= cfg->nports || port >= IPC_MAX_PORTS || cfg->ports[port].driver != IPC_DRV_AFXDP)
        return ipc_errf(err, -EINVAL, "%s: port %u is not an AF_XDP port (%u ports)", cfg->name, port, cfg->nports);
    struct afxdp *x = calloc(1, sizeof(*x));
    if (!x)
        return ipc_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
    x->svc = svc;
    x->pool = &svc->pool;
    x->fd = fd;
    x->port = port;
    x->kown = kown;
    x->fs = svc->pool.frame_size;
    x->busy = (cfg->ports[port].flags & IPC_PORT_F_BUSY_POLL) != 0;
    /* The fill stock: most of the ring, but the AF_XDP ports share at most
     * half the pool (a quarter each when there are two or fewer), so that
     * the packets in flight and the TAP ports have the rest. */
    x->fill_target = AFXDP_FILL_SIZE - 2 * AFXDP_WINDOW;
    uint32_t nx = 0;
    for (uint32_t p = 0; p < cfg->nports && p < IPC_MAX_PORTS; p++)
        nx += cfg->ports[p].driver == IPC_DRV_AFXDP && !(cfg->ports[p].flags & IPC_PORT_F_VLAN);
    if (nx < 2)
        nx = 2;
    if (x->fill_target > svc->pool.nbufs / (2 * nx))
        x->fill_target = svc->pool.nbufs / (2 * nx);
    if (x->fill_target < AFXDP_WINDOW / 2)
        x->fill_target = AFXDP_WINDOW / 2;

    x->bad = calloc(1, sizeof(*x->bad));
    if (!x->bad) {
        free(x);
        return ipc_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
    }
    struct xdp_mmap_offsets off;
    socklen_t optlen = sizeof(off);
    if (getsockopt(x->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &optlen) < 0) {
        ret = ipc_errf(err, -errno, "%s: XDP_MMAP_OFFSETS on fd %d: %s", cfg->name, x->fd, strerror(errno));
        port_unmap(x);
        return ret;
    }
    /* Each view continues from the indices the kernel keeps: we produce
     * fill and TX (never more than size - AFXDP_WINDOW published), and
     * consume RX and completions. */
    if ((ret = xskq_map(&x->rx, x->fd, &off.rx, AFXDP_RX_SIZE, sizeof(struct xdp_desc), XDP_PGOFF_RX_RING, 0)) < 0 ||
        (ret = xskq_map(&x->tx, x->fd, &off.tx, AFXDP_TX_SIZE, sizeof(struct xdp_desc), XDP_PGOFF_TX_RING,
                        AFXDP_TX_SIZE - AFXDP_WINDOW)) < 0 ||
        (ret = xskq_map(&x->fq, x->fd, &off.fr, AFXDP_FILL_SIZE, sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING,
                        AFXDP_FILL_SIZE - AFXDP_WINDOW)) < 0 ||
        (ret = xskq_map(&x->cq, x->fd, &off.cr, AFXDP_COMP_SIZE, sizeof(uint64_t),
                        (off_t)XDP_UMEM_PGOFF_COMPLETION_RING, 0)) < 0) {
        ret = ipc_errf(err, ret, "%s: mapping the XSK rings of port %u: %s", cfg->name, port, strerror(-ret));
        port_unmap(x);
        return ret;
    }
    *out = x;
    return 0;
}

/*
 * A group's port's rings: its output ring and its input rings, by the
 * port each carries (the supervisor names it per ring).
 */
static int port_rings(struct afxdp *x, struct ipc_err *err)
{
    struct ipc_svc *svc = x->svc;
    const struct ipc_svc_config *cfg = svc->cfg;
    x->out = NULL;
    for (unsigned i = 0; i < svc->n_out; i++)
        if (cfg->out[i].port == x->port)
            x->out = &svc->out[i];
    if (!x->out)
        return ipc_errf(err, -EINVAL, "%s: no output ring for port %u", cfg->name, x->port);
    x->d.n_in = 0;
    for (unsigned i = 0; i < svc->n_in; i++)
        if (cfg->in[i].port == x->port)
            x->d.in[x->d.n_in++] = &svc->in[i];
    return 0;
}

/* The counter names: the driver's own (a group's: its ports' sums), then
 * a group's per port, or a VLAN parent's (drivers/common/vlan.c). */
static unsigned counter_names(struct afxdp_set *g, const char *const **names)
{
    const struct ipc_svc_config *cfg = g->svc->cfg;
    if (g->n == 1)
        return drv_vlan_counter_names(&g->x[0]->vlan, cfg, afxdp_ctr_names, C_N, names);
    static const char *const per[AFXDP_PC_N] = {"rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes"};
    unsigned n = 0;
    for (; n < C_N; n++)
        g->names[n] = afxdp_ctr_names[n];
    for (unsigned i = 0; i < g->n; i++) {
        g->x[i]->pc = n;
        for (unsigned c = 0; c < AFXDP_PC_N; c++) {
            char *b = g->name_buf[i * AFXDP_PC_N + c];
            snprintf(b, IPC_CTR_NAME, "%.15s.%s", cfg->ports[g->x[i]->port].name, per[c]);
            g->names[n++] = b;
        }
    }
    *names = g->names;
    return n;
}

int afxdp_init(struct ipc_svc *svc, struct afxdp_set **out, struct ipc_err *err)
{
    const struct ipc_svc_config *cfg = svc->cfg;
    const struct tbl_driver_cfg *dc;
    int ret = drv_config(svc, "XSK", &dc, err);
    if (ret < 0)
        return ret;
    if (dc->ngroup && dc->nvlan)
        return ipc_errf(err, -EINVAL, "%s: a driver group serves no VLAN ports", cfg->name);
    struct afxdp_set *g = calloc(1, sizeof(*g));
    if (!g)
        return ipc_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
    g->svc = svc;
    g->idle_ms = ipc_svc_idle_ms(svc);
    unsigned n = dc->ngroup ? dc->ngroup : 1;
    for (unsigned i = 0; i < n; i++) {
        uint16_t port = dc->ngroup ? dc->group[i].port : cfg->port;
        for (unsigned j = 0; j < i; j++)
            if (g->x[j]->port == port) {
                ret = ipc_errf(err, -EINVAL, "%s: port %u twice in the group", cfg->name, port);
                goto fail;
            }
        ret = port_init(g, port, dc->ngroup ? dc->group[i].dev_fd : dc->dev_fd,
                        dc->ngroup ? dc->group[i].kernel_owner : dc->kernel_owner, &g->x[i], err);
        if (ret < 0)
            goto fail;
        g->n++;
    }
    if ((ret = drv_vlan_init(&g->x[0]->vlan, cfg, dc, g->x[0]->port, err)) < 0)
        goto fail;
    const char *const *names;
    unsigned nctr = counter_names(g, &names);
    _Atomic uint64_t *ctr = ipc_svc_counters(svc, names, nctr);
    for (unsigned i = 0; i < g->n; i++) {
        struct afxdp *x = g->x[i];
        drv_init(&x->d, svc, ctr, &afxdp_drv_ids); /* a group's ports share the counters: sums */
        x->out = &svc->out[0];
        if (dc->ngroup && (ret = port_rings(x, err)) < 0)
            goto fail;
    }
    ipc_stage_names(svc, afxdp_stage_names, ST_N);
    *out = g;
    return 0;

fail:
    for (unsigned i = 0; i < g->n; i++)
        port_unmap(g->x[i]);
    free(g);
    return ret;
}

/*
 * Before anything is lent: the slots a predecessor took but did not release
 * (RX and completion: stale_desc), then the buffers it lent but did not
 * publish (limbo), port by port. Called by main after afxdp_init; with the
 * standby scheme, after the go signal (ipc_svc_open returns only then).
 */
void afxdp_recover(struct afxdp_set *g)
{
    for (unsigned i = 0; i < g->n; i++) {
        rx_step(g->x[i]);
        comp_step(g->x[i]);
        recover_limbo(g->x[i]);
    }
    ipc_svc_flush(g->svc);
}

void afxdp_fini(struct afxdp_set *g)
{
    struct ipc_svc *svc = g->svc;
    ipc_st_rlx(&svc->stats->state, IPC_SVC_STOPPING);
    /* What the router sent us and never reached the TX ring is ours to free;
     * what is in the kernel's rings stays lent. */
    for (unsigned i = 0; i < g->n; i++) {
        comp_step(g->x[i]);
        tx_push(g->x[i]);
        tx_kick(g->x[i]);
    }
    ipc_svc_flush(svc);
    for (unsigned i = 0; i < g->n; i++) {
        drv_backlog_drop(&g->x[i]->d, C_TX_DROP_BACKLOG);
        drv_dead_flush(&g->x[i]->d);
    }
    gauges(g);
    xsk_stats(g);
    for (unsigned i = 0; i < g->n; i++)
        port_unmap(g->x[i]);
    free(g);
}
