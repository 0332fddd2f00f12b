/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/setup.c: the TAP driver's start and stop (tap.h). Start: check
 * the config, size the receive slots from the port's offloads and the pool,
 * set up the io_uring (restricted to what the loop submits: uring.c) and
 * the signal fd, name the counters, and arm the first reads. Stop: cancel
 * what is in flight, wait for the kernel to let go of every buffer it may
 * still write, and hand the rest back to the pool.
 * The loop in between is tap.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "ipc/stage.h"
#include "tables/config.h"
#include "tap_impl.h"
#include "uring.h"

static const char *const tap_ctr_names[C_N] = {
    [C_RX_PKTS] = "rx_pkts",
    [C_RX_BYTES] = "rx_bytes",
    [C_RX_GSO_PKTS] = "rx_gso_pkts",
    [C_RX_CSUM_PARTIAL] = "rx_csum_partial",
    [C_RX_CHAIN_FRAMES] = "rx_chain_frames",
    [C_RX_CHAIN_MAX] = "rx_chain_max",
    [C_RX_DROP_RING_FULL] = "rx_drop_ring_full",
    [C_RX_DROP_SHORT] = "rx_drop_short",
    [C_RX_DROP_LONG] = "rx_drop_long",
    [C_RX_DROP_BAD_GSO] = "rx_drop_bad_gso",
    [C_RX_DROP_BAD_CSUM] = "rx_drop_bad_csum",
    [C_RX_DROP_NOBUFS] = "rx_drop_nobufs",
    [C_RX_NOBUFS] = "rx_nobufs",
    [C_RX_ERR] = "rx_err",
    [C_TX_PKTS] = "tx_pkts",
    [C_TX_BYTES] = "tx_bytes",
    [C_TX_GSO_PKTS] = "tx_gso_pkts",
    [C_TX_CHAIN_FRAMES] = "tx_chain_frames",
    [C_TX_DROP_BACKLOG] = "tx_drop_backlog",
    [C_TX_DROP_SHORT] = "tx_drop_short",
    [C_TX_DROP_LONG] = "tx_drop_long",
    [C_TX_DROP_BAD_GSO] = "tx_drop_bad_gso",
    [C_TX_DROP_BAD_CSUM] = "tx_drop_bad_csum",
    [C_TX_DROP_STOP] = "tx_drop_stop",
    [C_TX_ERR_EINVAL] = "tx_err_einval",
    [C_TX_ERR] = "tx_err",
    [C_TX_SHORT] = "tx_short",
    [C_TX_EAGAIN] = "tx_eagain",
    [C_BACKLOG_DEPTH] = "backlog_depth",
    [C_BACKLOG_MAX] = "backlog_max",
    [C_RX_INFLIGHT] = "rx_inflight",
    [C_TX_INFLIGHT] = "tx_inflight",
    [C_WAKE_ERR] = "wake_err",
    [C_URING_ERR] = "uring_err",
};

static const struct drv_ids tap_drv_ids = {
    .tx_drop_backlog = C_TX_DROP_BACKLOG,
    .backlog_depth = C_BACKLOG_DEPTH,
    .backlog_max = C_BACKLOG_MAX,
};

/* Stage names (ipc/stage.h, docs/stats.md), in the loop's order. */
static const char *const tap_stage_names[S_N] = {
    [S_RX] = "rx", [S_WAKE] = "wake", [S_TX] = "tx", [S_REARM] = "rearm", [S_SYSCALL] = "syscall",
};

int tap_init(struct ipc_svc *svc, struct tap **out, struct ipc_err *err)
{
    const struct ipc_svc_config *cfg = svc->cfg;
    const struct tbl_driver_cfg *dc;
    int ret = drv_config(svc, "TAP", &dc, err);
    if (ret < 0)
        return ret;
    const struct ipc_svc_port *pp = &cfg->ports[cfg->port];

    int fl = fcntl(dc->dev_fd, F_GETFL);
    if (fl < 0)
        return ipc_errf(err, -errno, "%s: TAP fd %d: %s", cfg->name, dc->dev_fd, strerror(errno));
    if ((fl & O_NONBLOCK) && fcntl(dc->dev_fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
        return ipc_errf(err, -errno, "%s: clearing O_NONBLOCK on the TAP fd: %s", cfg->name, strerror(errno));

    struct tap *t = calloc(1, sizeof(*t));
    if (!t)
        return ipc_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
    t->svc = svc;
    t->pool = &svc->pool;
    t->dev_fd = dc->dev_fd;
    t->sig_fd = -1;
    t->port = cfg->port;
    t->frame_size = svc->pool.frame_size;
    t->headroom = svc->pool.headroom;
    t->first_room = t->frame_size - t->headroom;
    t->rx_nowait = true;
    t->idle_ms = ipc_svc_idle_ms(svc);
    t->n_rx = pp->rx_inflight ? pp->rx_inflight : TAP_RX_INFLIGHT_DEFAULT;
    t->rx_window = TAP_RX_WINDOW_MIN;
    if (t->n_rx > TAP_RX_INFLIGHT_MAX)
        t->n_rx = TAP_RX_INFLIGHT_MAX;

    /* The longest frame the kernel will hand us: 64 KB with any segmentation
     * offload on, one MTU-sized frame (plus two VLAN tags) without. */
    uint32_t mtu = pp->mtu ? pp->mtu : 1500;
    uint32_t maxlen = pp->offloads & (TAP_OFFLOAD_TSO4 | TAP_OFFLOAD_TSO6 | TAP_OFFLOAD_USO)
                          ? TAP_FRAME_MAX
                          : mtu + TAP_ETH_HLEN + 2 * 4;
    t->rx_frames = ipc_pool_chain_frames(&svc->pool, maxlen);
    if (t->rx_frames > IPC_CHAIN_MAX)
        t->rx_frames = IPC_CHAIN_MAX;
    /* The receive reserve (slots x frames) never takes more than a quarter
     * of the pool: the other ports, the rings and the packets in flight need
     * the rest, or receive slots end up holding every free buffer. */
    uint32_t cap = svc->pool.nbufs / (4 * t->rx_frames);
    if (cap < 1)
        cap = 1;
    if (t->n_rx > cap) {
        fprintf(stderr, "%s: rx_inflight %u x %u frames is more than a quarter of the pool (%u buffers); using %u\n",
                cfg->name, t->n_rx, t->rx_frames, svc->pool.nbufs, cap);
        t->n_rx = cap;
    }

    t->rx = calloc(t->n_rx, sizeof(*t->rx));
    t->tx = calloc(TAP_TX_INFLIGHT, sizeof(*t->tx));
    if (!t->rx || !t->tx) {
        ret = ipc_errf(err, -ENOMEM, "%s: out of memory", cfg->name);
        goto out_free;
    }
    for (uint32_t i = 0; i < TAP_TX_INFLIGHT; i++)
        t->tx_free[i] = TAP_TX_INFLIGHT - 1 - i;
    t->n_tx_free = TAP_TX_INFLIGHT;

    /* SQ room for every read and write in flight plus the polls and the
     * wake-up; the CQ (twice that) can then never overflow. */
    unsigned entries = 8;
    while (entries < t->n_rx + TAP_TX_INFLIGHT + 8)
        entries <<= 1;
    /* Restricted to the opcodes the loop issues (uring.c). */
    struct io_uring_params p;
    ret = tap_uring_init(&t->ring, entries, t->dev_fd, &p, cfg->name, err);
    if (ret < 0)
        goto out_free;
    if (!(p.features & IORING_FEAT_EXT_ARG)) {
        ret = ipc_errf(err, -ENOSYS, "%s: the kernel's io_uring lacks IORING_FEAT_EXT_ARG (5.11+)", cfg->name);
        goto out_ring;
    }

    /* The stop signalfd (ipc_svc_catch_stop), polled through the ring: a
     * busy loop sees its completion as it reaps, so the service's own
     * reads of it (ipc_svc_stop_poll) are not needed. */
    t->sig_fd = ipc_svc_stop_fd();
    if (t->sig_fd < 0) {
        ret = ipc_errf(err, -EBADF, "%s: no stop signalfd (ipc_svc_catch_stop)", cfg->name);
        goto out_ring;
    }
    ipc_svc_stop_.watched = true;
    if ((ret = drv_vlan_init(&t->vlan, cfg, dc, t->port, err)) < 0)
        goto out_ring;
    const char *const *names;
    unsigned nctr = drv_vlan_counter_names(&t->vlan, cfg, tap_ctr_names, C_N, &names);
    drv_init(&t->d, svc, ipc_svc_counters(svc, names, nctr), &tap_drv_ids);
    ipc_stage_names(svc, tap_stage_names, S_N);

    /* Fill and arm the receive slots now, so that a pool too small for them
     * shows at start (rx_drop_nobufs) rather than under load. */
    tap_rx_refill(t);
    tap_rx_poll_arm(t);
    tap_wake_arm(t);
    io_uring_submit(&t->ring);
    *out = t;
    return 0;

out_ring:
    io_uring_queue_exit(&t->ring);
out_free:
    free(t->rx);
    free(t->tx);
    free(t);
    return ret;
}

/* Wait up to @ms for the reads, writes and polls in flight to complete,
 * after cancelling every one of them first if @cancel_all. */
static void tap_settle(struct tap *t, int ms, bool cancel_all)
{
    if (cancel_all) {
        struct io_uring_sqe *sqe = tap_sqe(t);
        if (sqe) {
            /* ALL: ANY alone cancels the first match only, and the rest
             * (the eventfd's poll and read, the device poll) would hold
             * the stop for the whole budget. */
            io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
            io_uring_sqe_set_data64(sqe, UD(UD_CANCEL, 0));
        }
    }
    uint64_t deadline = ipc_svc_now_ns() + (uint64_t)ms * 1000000u;
    for (;;) {
        tap_reap(t);
        tap_tx_push(t);
        drv_dead_flush(&t->d);
        bool busy = t->rx_armed || t->tx_inflight ||
                    (cancel_all && (t->wake_armed || t->sig_armed || t->rx_poll_armed));
        uint64_t now = ipc_svc_now_ns();
        if (!busy || now >= deadline)
            break;
        struct __kernel_timespec ts = tap_timeout(deadline - now);
        struct io_uring_cqe *cqe;
        io_uring_submit_and_wait_timeout(&t->ring, &cqe, 1, &ts, NULL);
    }
}

void tap_fini(struct tap *t)
{
    struct ipc_svc *svc = t->svc;
    ipc_st_rlx(&svc->stats->state, IPC_SVC_STOPPING);

    /* 1. Stop receiving: cancel every read (what completes with data before
     * the cancel still goes to the router), keep writing the backlog out. */
    for (uint32_t i = 0; i < t->n_rx; i++) {
        if (!t->rx[i].armed)
            continue;
        struct io_uring_sqe *sqe = tap_sqe(t);
        if (!sqe)
            break;
        io_uring_prep_cancel64(sqe, UD(UD_RX, i), 0);
        io_uring_sqe_set_data64(sqe, UD(UD_CANCEL, 0));
    }
    tap_settle(t, TAP_STOP_MS, false);
    tap_rx_flush(t);
    if (svc->out[0].wake_fd >= 0)
        ipc_wake_one(&svc->out[0]);
    /* 2. Whatever is still in flight (a write the device never took, the
     * polls): cancel it all and wait for the completions, so that no buffer
     * is returned to the pool while the kernel may still write into it. */
    tap_settle(t, TAP_STOP_MS, true);
    drv_backlog_drop(&t->d, C_TX_DROP_STOP);
    bool settled = !t->rx_armed && !t->tx_inflight;
    for (uint32_t i = 0; i < t->n_rx; i++) {
        struct tap_rx_slot *s = &t->rx[i];
        if (s->armed)
            continue; /* still the kernel's: left to the supervisor's reclaim */
        for (uint32_t k = 0; k < s->nfr; k++)
            drv_dead_add(&t->d, s->fr[k]);
        s->nfr = 0;
    }
    drv_dead_flush(&t->d);
    tap_gauges(t);
    if (!settled)
        fprintf(stderr, "%s: %u reads and %u writes did not complete at exit; their buffers stay ours\n",
                svc->cfg->name, t->rx_armed, t->tx_inflight);
    io_uring_queue_exit(&t->ring);
    free(t->rx);
    free(t->tx);
    free(t);
}
