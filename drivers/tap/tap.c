/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/tap.c: the TAP driver's loop (tap.h). Peers: the kernel on the
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
 * their vnet fields by tap_vnet_check) go to a FIFO backlog; each loop turns
 * as much of the backlog as there are free write slots into writevs: the
 * header rebuilt from the metadata, one iovec per frame. A write completion
 * frees the chain. The backlog absorbs a device that stops taking packets
 * (writes that stay in flight, or come back -EAGAIN) without a busy-wait;
 * past TAP_BACKLOG packets we drop and count.
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
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ipc/stage.h"
#include "tables/config.h"
#include "vnet.h"

#define TAP_BURST 64u                /* handles taken from one input ring per loop */
#define TAP_RX_INFLIGHT_DEFAULT 32u
#define TAP_RX_INFLIGHT_MAX 1024u
#define TAP_TX_INFLIGHT 256u         /* writes in flight at most */
#define TAP_BACKLOG 1024u            /* packets waiting for a write slot; a power of two */
#define TAP_CQE_BATCH 256u
#define TAP_DEAD_MAX 512u            /* buffers freed at once */
#define TAP_RX_ERR_REST 64u          /* failed reads in a row before we stop re-arming at once */
#define TAP_RX_WINDOW_MIN 4u         /* reads armed at least after the queue was found empty */
#define TAP_STOP_MS 1000             /* drain budget at SIGTERM */
#define TAP_THROTTLE_US 200          /* wait while the router's ring has no room for another read */

/* user_data: kind in the high word, slot index in the low word. */
enum tap_ud { UD_RX = 1, UD_TX, UD_WAKE, UD_SIG, UD_KICK, UD_CANCEL, UD_RXPOLL };
#define UD(kind, idx) (((uint64_t)(kind) << 32) | (uint32_t)(idx))
#define UD_KIND(u) ((uint32_t)((u) >> 32))
#define UD_IDX(u) ((uint32_t)(u))

/* Counters, exported by name in the stats region (docs/drivers.md). */
enum tap_ctr {
    C_RX_PKTS,
    C_RX_BYTES,
    C_RX_GSO_PKTS,
    C_RX_CSUM_PARTIAL,
    C_RX_CHAIN_FRAMES,
    C_RX_CHAIN_MAX,
    C_RX_DROP_RING_FULL,
    C_RX_DROP_SHORT,
    C_RX_DROP_LONG,
    C_RX_DROP_BAD_GSO,
    C_RX_DROP_BAD_CSUM,
    C_RX_DROP_NOBUFS,
    C_RX_NOBUFS,
    C_RX_ERR,
    C_TX_PKTS,
    C_TX_BYTES,
    C_TX_GSO_PKTS,
    C_TX_CHAIN_FRAMES,
    C_TX_DROP_BACKLOG,
    C_TX_DROP_SHORT,
    C_TX_DROP_LONG,
    C_TX_DROP_BAD_GSO,
    C_TX_DROP_BAD_CSUM,
    C_TX_DROP_STOP,
    C_TX_ERR_EINVAL,
    C_TX_ERR,
    C_TX_SHORT,
    C_TX_EAGAIN,
    C_BACKLOG_DEPTH,
    C_BACKLOG_MAX,
    C_RX_INFLIGHT,
    C_TX_INFLIGHT,
    C_WAKE_ERR,
    C_URING_ERR,
    C_N
};

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

/* Stage counters (ipc/stage.h, docs/stats.md), in the loop's order. */
enum tap_stage { S_RX, S_WAKE, S_TX, S_REARM, S_SYSCALL, S_N };
static const char *const tap_stage_names[S_N] = {
    [S_RX] = "rx", [S_WAKE] = "wake", [S_TX] = "tx", [S_REARM] = "rearm", [S_SYSCALL] = "syscall",
};

/* A read in flight, or waiting for frames to be re-armed. */
struct tap_rx_slot {
    struct tap_vnet_hdr hdr; /* the kernel writes the vnet header here */
    bool armed;
    bool short_arm; /* armed with fewer frames than the longest frame needs */
    uint32_t nfr;   /* frames held */
    ipc_buf fr[IPC_CHAIN_MAX];
    struct iovec iov[1 + IPC_CHAIN_MAX];
};

/* A write in flight. The iovecs stay put until the completion. */
struct tap_tx_slot {
    ipc_buf pkt;
    uint32_t len; /* frame bytes, vnet header not included */
    uint32_t nfr;
    struct tap_vnet_hdr hdr;
    struct iovec iov[1 + IPC_CHAIN_MAX];
};

struct tap {
    struct ipc_svc *svc;
    struct ipc_pool *pool;
    _Atomic uint64_t *ctr;
    struct io_uring ring;
    int dev_fd;
    int sig_fd;
    uint16_t port;
    uint32_t frame_size, headroom, first_room;
    uint32_t rx_frames; /* frames per receive slot */
    uint32_t n_rx;
    uint32_t rx_armed;
    uint32_t rx_err_run;
    bool rx_rest; /* too many failed reads in a row: re-arm only after a wait */
    bool wake_armed, sig_armed, stop;
    bool rx_poll_armed; /* the multishot POLLIN on the device */
    bool rx_empty;      /* a read found the device's queue empty: wait for the poll */
    bool rx_nowait;     /* reads are RWF_NOWAIT (single waiter); off if the kernel refuses */
    bool rx_missed;     /* this reap saw a read find the queue empty */
    bool rx_throttled;  /* the output ring had no room for another read: receive paused */
    bool rx_poll_stop;  /* the multishot POLLIN is being cancelled (receive paused) */
    uint32_t rx_window; /* reads to keep armed: what the device's queue has been holding */
    uint32_t rx_hits;   /* reads that got a frame in this reap */
    uint32_t tx_inflight;
    uint32_t n_tx_free;
    uint32_t bl_head, bl_tail; /* free-running backlog indices */
    uint32_t n_out, n_dead;
    uint32_t poll_us;
    int idle_ms;
    uint64_t wake_val;
    uint64_t backlog_max;
    struct tap_rx_slot *rx;
    struct tap_tx_slot *tx;
    uint32_t tx_free[TAP_TX_INFLIGHT];
    ipc_buf backlog[TAP_BACKLOG];
    ipc_buf out[TAP_RX_INFLIGHT_MAX];
    uint32_t out_len[TAP_RX_INFLIGHT_MAX];
    uint8_t out_nfr[TAP_RX_INFLIGHT_MAX];
    uint8_t out_flag[TAP_RX_INFLIGHT_MAX]; /* OUT_GSO, OUT_CSUM */
    ipc_buf dead[TAP_DEAD_MAX];
};

#define OUT_GSO 1u
#define OUT_CSUM 2u

static const uint64_t tap_one = 1; /* what an eventfd wake-up writes */

static inline void ctr_add(struct tap *t, enum tap_ctr c, uint64_t n)
{
    ipc_count(&t->ctr[c], n);
}

static inline void ctr_set(struct tap *t, enum tap_ctr c, uint64_t v)
{
    ipc_st_rlx(&t->ctr[c], v);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An SQE, submitting what is queued if the SQ is full (it is sized so that
 * this never happens in a loop; the fallback keeps it correct anyway). */
static struct io_uring_sqe *tap_sqe(struct tap *t)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
    if (ipc_unlikely(!sqe)) {
        io_uring_submit(&t->ring);
        sqe = io_uring_get_sqe(&t->ring);
        if (!sqe)
            ctr_add(t, C_URING_ERR, 1);
    }
    return sqe;
}

/* Buffers to free at the end of the loop, in one ipc_pool_free. */
static void dead_flush(struct tap *t)
{
    if (t->n_dead) {
        ipc_pool_free(t->pool, t->dead, t->n_dead);
        t->n_dead = 0;
    }
}

static inline void dead_add(struct tap *t, ipc_buf b)
{
    if (t->n_dead == TAP_DEAD_MAX)
        dead_flush(t);
    t->dead[t->n_dead++] = b;
}

/* ---- receive ------------------------------------------------------------ */

/*
 * Top the slot up to rx_frames frames and queue its readv. With the pool short
 * of buffers, a slot that got at least one frame is armed anyway ("short"):
 * small frames (ACKs, ARP, pings) still get in, and a frame too long for it
 * is dropped by the kernel (EFAULT, counted in rx_drop_nobufs). Holding out
 * for full slots instead could leave every free buffer parked in slots that
 * wait for traffic that cannot come.
 */
static bool rx_arm(struct tap *t, uint32_t i)
{
    struct tap_rx_slot *s = &t->rx[i];
    s->short_arm = false;
    if (s->nfr < t->rx_frames) {
        uint32_t need = t->rx_frames - s->nfr;
        uint32_t got = ipc_pool_alloc(t->pool, &s->fr[s->nfr], need);
        s->nfr += got;
        if (got < need) {
            ctr_add(t, C_RX_NOBUFS, 1);
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
    io_uring_prep_readv(sqe, t->dev_fd, s->iov, s->nfr + 1, 0);
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
static uint32_t rx_refill(struct tap *t)
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
    for (uint32_t i = 0; i < t->n_rx && t->rx_armed < want; i++)
        if (!t->rx[i].armed && !rx_arm(t, i))
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
            ctr_add(t, C_RX_DROP_NOBUFS, 1); /* a frame longer than the slot: the kernel dropped it */
            return;
        }
        ctr_add(t, C_RX_ERR, 1);
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
        ctr_add(t, C_RX_DROP_SHORT, 1);
        return; /* the frames stay in the slot for the next read */
    case TAP_VNET_LONG:
        ctr_add(t, C_RX_DROP_LONG, 1);
        return;
    case TAP_VNET_BAD_GSO:
        ctr_add(t, C_RX_DROP_BAD_GSO, 1);
        return;
    case TAP_VNET_BAD_CSUM:
        ctr_add(t, C_RX_DROP_BAD_CSUM, 1);
        return;
    }
    uint32_t len = (uint32_t)res - TAP_VNET_HDR_LEN;
    uint32_t k = 1;
    if (len > t->first_room)
        k += (len - t->first_room + t->frame_size - 1) / t->frame_size;
    if (ipc_unlikely(k > s->nfr))
        abort(); /* the kernel wrote past our iovecs: a broken invariant */

    /* The first k frames become the packet, as the kernel filled them. */
    uint32_t left = len;
    for (uint32_t f = 0; f < k; f++) {
        struct ipc_meta *m = ipc_pool_meta(t->pool, s->fr[f]);
        uint32_t room = f == 0 ? t->first_room : t->frame_size;
        m->off = (uint16_t)(f == 0 ? t->headroom : 0);
        m->len = (uint16_t)(left < room ? left : room);
        left -= m->len;
        m->next = f + 1 < k ? s->fr[f + 1] : IPC_BUF_NONE;
    }
    struct ipc_meta *m0 = ipc_pool_meta(t->pool, s->fr[0]);
    m0->pkt_len = len;
    m0->vnet = v;
    m0->in_port = t->port;
    m0->out_port = IPC_PORT_NONE;
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
static uint32_t rx_flush(struct tap *t)
{
    if (t->n_out == 0)
        return 0;
    uint32_t sent = ipc_ring_send(&t->svc->out[0], t->out, t->n_out);
    uint64_t bytes = 0, gso = 0, csum = 0, frames = 0, chain_max = ipc_ld_rlx(&t->ctr[C_RX_CHAIN_MAX]);
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
        dead_add(t, t->out[i]);
    if (sent < t->n_out)
        ctr_add(t, C_RX_DROP_RING_FULL, t->n_out - sent);
    ctr_add(t, C_RX_PKTS, sent);
    ctr_add(t, C_RX_GSO_PKTS, gso);
    ctr_add(t, C_RX_CSUM_PARTIAL, csum);
    ctr_add(t, C_RX_BYTES, bytes);
    ctr_add(t, C_RX_CHAIN_FRAMES, frames);
    ctr_set(t, C_RX_CHAIN_MAX, chain_max);
    t->n_out = 0;
    return sent;
}

/* ---- transmit ----------------------------------------------------------- */

static inline uint32_t backlog_depth(const struct tap *t)
{
    return t->bl_tail - t->bl_head;
}

static uint32_t pkt_len(const struct tap *t, ipc_buf b)
{
    const struct ipc_meta *m = ipc_pool_meta(t->pool, b);
    return m->next == IPC_BUF_NONE ? m->len : m->pkt_len;
}

/* Take what the input rings hold into the backlog, checking each packet's
 * vnet fields first. Returns the number of packets taken. */
static uint32_t tx_pull(struct tap *t)
{
    ipc_buf bufs[TAP_BURST];
    uint32_t total = 0;
    for (unsigned r = 0; r < t->svc->n_in; r++) {
        uint32_t n = ipc_ring_recv(&t->svc->in[r], t->pool, bufs, TAP_BURST);
        for (uint32_t i = 0; i < n; i++) {
            ipc_buf b = bufs[i];
            enum tap_verdict v = tap_vnet_check(&ipc_pool_meta(t->pool, b)->vnet, pkt_len(t, b));
            if (ipc_unlikely(v != TAP_VNET_OK)) {
                static const enum tap_ctr why[] = {
                    [TAP_VNET_SHORT] = C_TX_DROP_SHORT,
                    [TAP_VNET_LONG] = C_TX_DROP_LONG,
                    [TAP_VNET_BAD_GSO] = C_TX_DROP_BAD_GSO,
                    [TAP_VNET_BAD_CSUM] = C_TX_DROP_BAD_CSUM,
                };
                ctr_add(t, why[v], 1);
                dead_add(t, b);
                continue;
            }
            if (ipc_unlikely(backlog_depth(t) >= TAP_BACKLOG)) {
                ctr_add(t, C_TX_DROP_BACKLOG, 1);
                dead_add(t, b);
                continue;
            }
            t->backlog[t->bl_tail++ & (TAP_BACKLOG - 1)] = b;
        }
        total += n;
    }
    return total;
}

/* Turn the backlog's head into writevs, as many as there are write slots. */
static uint32_t tx_push(struct tap *t)
{
    uint32_t done = 0;
    while (backlog_depth(t) && t->n_tx_free) {
        struct io_uring_sqe *sqe = tap_sqe(t);
        if (!sqe)
            break;
        ipc_buf b = t->backlog[t->bl_head++ & (TAP_BACKLOG - 1)];
        uint32_t si = t->tx_free[--t->n_tx_free];
        struct tap_tx_slot *s = &t->tx[si];
        const struct ipc_meta *m = ipc_pool_meta(t->pool, b);
        s->pkt = b;
        s->len = pkt_len(t, b);
        tap_vnet_to_wire(&m->vnet, &s->hdr);
        s->iov[0] = (struct iovec){.iov_base = &s->hdr, .iov_len = TAP_VNET_HDR_LEN};
        uint32_t n = 0;
        /* ipc_ring_recv checked the chain: at most IPC_CHAIN_MAX frames. */
        for (ipc_buf f = b; f != IPC_BUF_NONE; f = ipc_pool_meta(t->pool, f)->next) {
            const struct ipc_meta *fm = ipc_pool_meta(t->pool, f);
            s->iov[++n] = (struct iovec){.iov_base = ipc_pool_data(t->pool, f), .iov_len = fm->len};
        }
        s->nfr = n;
        io_uring_prep_writev(sqe, t->dev_fd, s->iov, n + 1, 0);
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
        ctr_add(t, C_TX_PKTS, 1);
        ctr_add(t, C_TX_BYTES, s->len);
        ctr_add(t, C_TX_CHAIN_FRAMES, s->nfr);
        if (s->hdr.gso_type != TAP_VNET_GSO_NONE)
            ctr_add(t, C_TX_GSO_PKTS, 1);
        dead_add(t, s->pkt);
        return;
    }
    if (res == -EAGAIN && !t->stop && backlog_depth(t) < TAP_BACKLOG) {
        /* The device took nothing: retry first thing next loop. */
        ctr_add(t, C_TX_EAGAIN, 1);
        t->backlog[--t->bl_head & (TAP_BACKLOG - 1)] = s->pkt;
        return;
    }
    if (res >= 0)
        ctr_add(t, C_TX_SHORT, 1); /* a TAP write is all or nothing; don't resend */
    else if (res == -EINVAL)
        ctr_add(t, C_TX_ERR_EINVAL, 1); /* the kernel refused the frame or its vnet header */
    else if (res == -ECANCELED || res == -EAGAIN)
        ctr_add(t, C_TX_DROP_STOP, 1);
    else
        ctr_add(t, C_TX_ERR, 1);
    dead_add(t, s->pkt);
}

/* ---- wake-ups and signals ----------------------------------------------- */

/*
 * Receive readiness: one multishot POLLIN on the device. Reads are issued
 * with RWF_NOWAIT, so a read that finds the queue empty completes at once
 * with -EAGAIN instead of parking a poll of its own. rx_inflight parked reads
 * would all be woken by every packet (tun wakes its whole wait queue) and all
 * but one would re-park: a thundering herd per packet. With one waiter, an
 * empty queue costs one -EAGAIN read, and the next packet one poll event.
 */
static void rx_poll_arm(struct tap *t)
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
    if (t->rx_poll_armed || t->rx_throttled || t->stop || !t->rx_nowait)
        return;
    struct io_uring_sqe *sqe = tap_sqe(t);
    if (!sqe)
        return;
    io_uring_prep_poll_multishot(sqe, t->dev_fd, POLLIN);
    io_uring_sqe_set_data64(sqe, UD(UD_RXPOLL, 0));
    t->rx_poll_armed = true;
}

/* Watch our eventfd: a poll, then (linked) a read that resets the counter.
 * The eventfd is O_NONBLOCK (the supervisor's producers share its file), so a
 * bare read would come back -EAGAIN instead of waiting. */
static void wake_arm(struct tap *t)
{
    if (t->svc->wake_fd < 0 || t->wake_armed || t->stop)
        return;
    if (io_uring_sq_space_left(&t->ring) < 2)
        io_uring_submit(&t->ring);
    struct io_uring_sqe *p = io_uring_get_sqe(&t->ring);
    struct io_uring_sqe *r = p ? io_uring_get_sqe(&t->ring) : NULL;
    if (!r) {
        ctr_add(t, C_URING_ERR, 1);
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

/* Handle every completion there is; one cq_advance per batch. */
static uint32_t tap_reap(struct tap *t)
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
                if (UD_IDX(ud) == 0)
                    t->wake_armed = false; /* the read ends the pair, success or not */
                else if (res != -ECANCELED)
                    ctr_add(t, C_WAKE_ERR, 1); /* the poll failed (its success has no CQE) */
                break;
            case UD_SIG:
                t->sig_armed = false;
                t->stop = true;
                break;
            case UD_RXPOLL:
                if (!(cqes[i]->flags & IORING_CQE_F_MORE))
                    t->rx_poll_armed = t->rx_poll_stop = false; /* ended (or failed): re-armed below */
                if (res >= 0 || res == -ECANCELED)
                    rx_ready = true;
                else
                    ctr_add(t, C_URING_ERR, 1);
                break;
            case UD_KICK:
                if (res < 0 && res != -EAGAIN) /* EAGAIN: counter saturated, a wake-up is pending */
                    ctr_add(t, C_WAKE_ERR, 1);
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

static void tap_gauges(struct tap *t)
{
    uint32_t d = backlog_depth(t);
    ctr_set(t, C_BACKLOG_DEPTH, d);
    if (d > t->backlog_max) {
        t->backlog_max = d;
        ctr_set(t, C_BACKLOG_MAX, d);
    }
    ctr_set(t, C_RX_INFLIGHT, t->rx_armed);
    ctr_set(t, C_TX_INFLIGHT, t->tx_inflight);
}

int tap_run(struct tap *t)
{
    struct ipc_svc *svc = t->svc;
    uint64_t poll_ns = (uint64_t)t->poll_us * 1000u;
    uint64_t last_work = now_ns();

    sig_arm(t);
    while (!t->stop) {
        uint64_t c = ipc_stage_start(svc);
        /* 1. Completions: received frames, finished writes, wake-ups. */
        uint32_t work = tap_reap(t);
        if (t->stop)
            break;
        /* 2. Received packets to the router, one submit, one wake-up. */
        uint32_t rx = rx_flush(t);
        c = ipc_stage_end(svc, S_RX, c, rx);
        if (rx)
            c = ipc_stage_end(svc, S_WAKE, c, rx_kick(t));
        /* 3. Input rings into the backlog, the backlog into writes. */
        work += tx_pull(t);
        uint32_t writes = tx_push(t);
        c = ipc_stage_end(svc, S_TX, c, writes);
        /* 4. Re-arm the reads that completed; free what is done. */
        uint32_t armed = t->rx_armed;
        uint32_t starved = rx_refill(t);
        dead_flush(t);
        rx_poll_arm(t);
        wake_arm(t);
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
        if (work)
            last_work = now_ns();
        if (poll_ns && now_ns() - last_work < poll_ns) {
            sub = io_uring_submit_and_get_events(&t->ring); /* busy-poll: submit and reap, no wait */
            ipc_stage_end(svc, S_SYSCALL, c, sub > 0 ? (uint64_t)sub : 0);
            continue;
        }
        if (svc->n_in && !ipc_wake_arm(svc->in_ptr, svc->n_in, 1)) {
            sub = io_uring_submit(&t->ring); /* work arrived while we armed */
            ipc_stage_end(svc, S_SYSCALL, c, sub > 0 ? (uint64_t)sub : 0);
            continue;
        }
        ipc_count(&svc->stats->sleeps, 1);
        long long ns = starved || t->rx_rest ? 1000000ll : (long long)t->idle_ms * 1000000ll;
        if (t->rx_throttled) {
            ns = TAP_THROTTLE_US * 1000ll;
            t->rx_empty = false; /* the poll is off: look at the device again after the pause */
        }
        struct __kernel_timespec ts = {.tv_sec = ns / 1000000000ll, .tv_nsec = ns % 1000000000ll};
        struct io_uring_cqe *cqe;
        int ret = io_uring_submit_and_wait_timeout(&t->ring, &cqe, 1, &ts, NULL);
        ipc_svc_slept(svc, ret == -ETIME);
        if (svc->n_in)
            ipc_wake_disarm(svc->in_ptr, svc->n_in);
        t->rx_rest = false; /* a failing device is retried once per wait */
        if (ret == -ETIME)
            t->rx_empty = false; /* belt and braces: look again after an idle wait */
        t->rx_err_run = 0;
        if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
            ctr_add(t, C_URING_ERR, 1);
            return ret;
        }
    }
    return 0;
}

int tap_init(struct ipc_svc *svc, struct tap **out, struct ipc_err *err)
{
    const struct ipc_svc_config *cfg = svc->cfg;
    const struct tbl_driver_cfg *dc = tbl_cfg_get(svc, TBL_DRIVER_CFG_VERSION, sizeof(*dc), err);
    if (!dc)
        return -EPROTO;
    if (dc->dev_fd < 0)
        return ipc_errf(err, -EINVAL, "%s: no TAP fd in the config", cfg->name);
    if (svc->n_out != 1)
        return ipc_errf(err, -EINVAL, "%s: a TAP driver has one output ring, the config gives %u", cfg->name,
                        svc->n_out);
    if (cfg->port >= cfg->nports || cfg->port >= IPC_MAX_PORTS)
        return ipc_errf(err, -EINVAL, "%s: port %u out of range (%u ports)", cfg->name, cfg->port, cfg->nports);
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
    t->poll_us = cfg->poll_us;
    t->rx_nowait = true;
    t->idle_ms = ipc_svc_idle_ms(svc);
    t->n_rx = pp->rx_inflight ? pp->rx_inflight : TAP_RX_INFLIGHT_DEFAULT;
    t->rx_window = TAP_RX_WINDOW_MIN;
    if (t->n_rx > TAP_RX_INFLIGHT_MAX)
        t->n_rx = TAP_RX_INFLIGHT_MAX;

    /* The longest frame the kernel will hand us: 64 KB with any segmentation
     * offload on, one MTU-sized frame (plus a VLAN tag) without. */
    uint32_t mtu = pp->mtu ? pp->mtu : 1500;
    uint32_t maxlen = pp->offloads & (TAP_OFFLOAD_TSO4 | TAP_OFFLOAD_TSO6 | TAP_OFFLOAD_USO)
                          ? TAP_FRAME_MAX
                          : mtu + TAP_ETH_HLEN + 4;
    t->rx_frames = 1;
    if (maxlen > t->first_room)
        t->rx_frames += (maxlen - t->first_room + t->frame_size - 1) / t->frame_size;
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

    int ret;
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
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
              IORING_SETUP_SINGLE_ISSUER;
    ret = io_uring_queue_init_params(entries, &t->ring, &p);
    if (ret == -EINVAL) {
        memset(&p, 0, sizeof(p));
        ret = io_uring_queue_init_params(entries, &t->ring, &p);
    }
    if (ret < 0) {
        ret = ipc_errf(err, ret, "%s: io_uring_queue_init(%u): %s", cfg->name, entries, strerror(-ret));
        goto out_free;
    }
    if (!(p.features & IORING_FEAT_EXT_ARG)) {
        ret = ipc_errf(err, -ENOSYS, "%s: the kernel's io_uring lacks IORING_FEAT_EXT_ARG (5.11+)", cfg->name);
        goto out_ring;
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 || (t->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        ret = ipc_errf(err, -errno, "%s: signalfd: %s", cfg->name, strerror(errno));
        goto out_ring;
    }
    t->ctr = ipc_svc_counters(svc, tap_ctr_names, C_N);
    ipc_stage_names(svc, tap_stage_names, S_N);

    /* Fill and arm the receive slots now, so that a pool too small for them
     * shows at start (rx_drop_nobufs) rather than under load. */
    rx_refill(t);
    rx_poll_arm(t);
    wake_arm(t);
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

/* Cancel @ud (or everything, with @ud == 0) and wait up to @ms for the
 * reads, writes and polls to complete. */
static void tap_settle(struct tap *t, int ms, bool cancel_all)
{
    if (cancel_all) {
        struct io_uring_sqe *sqe = tap_sqe(t);
        if (sqe) {
            io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
            io_uring_sqe_set_data64(sqe, UD(UD_CANCEL, 0));
        }
    }
    uint64_t deadline = now_ns() + (uint64_t)ms * 1000000u;
    for (;;) {
        tap_reap(t);
        tx_push(t);
        dead_flush(t);
        bool busy = t->rx_armed || t->tx_inflight ||
                    (cancel_all && (t->wake_armed || t->sig_armed || t->rx_poll_armed));
        uint64_t now = now_ns();
        if (!busy || now >= deadline)
            break;
        uint64_t left = deadline - now;
        struct __kernel_timespec ts = {.tv_sec = (long long)(left / 1000000000u),
                                       .tv_nsec = (long long)(left % 1000000000u)};
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
    rx_flush(t);
    if (svc->out[0].wake_fd >= 0)
        ipc_wake_one(&svc->out[0]);
    /* 2. Whatever is still in flight (a write the device never took, the
     * polls): cancel it all and wait for the completions, so that no buffer
     * is returned to the pool while the kernel may still write into it. */
    tap_settle(t, TAP_STOP_MS, true);
    while (backlog_depth(t)) {
        ctr_add(t, C_TX_DROP_STOP, 1);
        dead_add(t, t->backlog[t->bl_head++ & (TAP_BACKLOG - 1)]);
    }
    bool settled = !t->rx_armed && !t->tx_inflight;
    for (uint32_t i = 0; i < t->n_rx; i++) {
        struct tap_rx_slot *s = &t->rx[i];
        if (s->armed)
            continue; /* still the kernel's: left to the supervisor's reclaim */
        for (uint32_t k = 0; k < s->nfr; k++)
            dead_add(t, s->fr[k]);
        s->nfr = 0;
    }
    dead_flush(t);
    tap_gauges(t);
    if (!settled)
        fprintf(stderr, "%s: %u reads and %u writes did not complete at exit; their buffers stay ours\n",
                svc->cfg->name, t->rx_armed, t->tx_inflight);
    io_uring_queue_exit(&t->ring);
    close(t->sig_fd);
    free(t->rx);
    free(t->tx);
    free(t);
}
