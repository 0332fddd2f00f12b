/* SPDX-License-Identifier: MIT */
/*
 * drivers/common/drv.h: the scaffolding every driver process shares, so that
 * a driver writes only its device verbs (receive into pool buffers, send the
 * backlog, sleep on its device). Peers: the service contract (ipc/svc.h) for
 * the counters, the input rings and the idle protocol; the pool for what a
 * driver frees. What is here:
 *
 *   counters   drv_ctr_add/drv_ctr_set on the array named at init, and the
 *              backlog gauges (backlog_depth, backlog_max);
 *   TX pull    the input rings -> a per-packet check of the driver's own ->
 *              a FIFO backlog of DRV_BACKLOG packets that the device drains
 *              at its own pace (no busy-wait on a full device:
 *              docs/drivers.md, "Transmit: a backlog, no busy-wait"),
 *              dropping and counting past it;
 *   dead list  buffers to free at the end of the loop, in one ipc_pool_free;
 *   idle       the poll budget (poll_us) and the arm / re-check / disarm
 *              steps of ipc/wake.h around a sleep the driver does itself.
 *
 * Why drivers do not call ipc_svc_wait: it blocks on the eventfd alone,
 * while a driver must also wake for its device (TAP: inside io_uring_enter,
 * with its device poll armed; AF_XDP: a ppoll on the XSK fd). The protocol
 * around the sleep is the same, so it is split here into drv_sleep_arm and
 * drv_sleep_end, with the driver's own blocking call between them:
 *
 *     if (!drv_polling(d, work) && drv_sleep_arm(d)) {   (W) (F1) (R)
 *         ... block on the device and the eventfd ...
 *         drv_sleep_end(d, timed_out);                   wake_missed, disarm
 *     }
 */
#ifndef DRV_DRV_H
#define DRV_DRV_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/capture.h"
#include "ipc/svc.h"
#include "ipc/trace.h"
#include "ipc/wake.h"

#define DRV_BURST 64u      /* handles taken from one input ring per loop */
#define DRV_BACKLOG 1024u  /* packets waiting for the device; a power of two */
#define DRV_DEAD_MAX 512u  /* buffers freed at once */
#define DRV_KEEP UINT32_MAX /* a TX check's verdict: the packet may go to the backlog */

/* The driver's counter numbers for what this file counts. */
struct drv_ids {
    unsigned tx_drop_backlog;
    unsigned backlog_depth;
    unsigned backlog_max;
};

/* A driver's shared state, embedded in its own struct. Fields are the
 * driver's to read; the backlog and the dead list change only through the
 * functions below. */
struct drv {
    struct ipc_svc *svc;
    struct ipc_pool *pool;
    _Atomic uint64_t *ctr;
    struct drv_ids id;
    uint64_t poll_ns;   /* poll_us: keep polling this long after the last work */
    uint64_t last_work; /* when a loop last found work */
    uint64_t backlog_max;
    uint32_t bl_head, bl_tail; /* free-running backlog indices */
    uint32_t n_dead;
    /* The input rings drv_tx_pull takes from: all of the service's (drv_init),
     * or the ones of this driver's port when one process serves several
     * (an AF_XDP driver group: drivers/afxdp/afxdp.c). */
    unsigned n_in;
    struct ipc_ring_cons *in[IPC_SVC_MAX_RINGS];
    ipc_buf backlog[DRV_BACKLOG];
    ipc_buf dead[DRV_DEAD_MAX];
};

struct tbl_driver_cfg;

/**
 * The driver's typed config (tables/config.h) from @svc's blob, checked as
 * every driver needs it: a device fd (@what names it in errors: "TAP",
 * "XSK"), one output ring, a port in range. Returns 0 with *out, or -errno
 * with @err naming what is wrong.
 */
int drv_config(struct ipc_svc *svc, const char *what, const struct tbl_driver_cfg **out, struct ipc_err *err);

/**
 * Bind @d to the service @svc and the counter array @ctr (ipc_svc_counters,
 * or plain memory in a unit test), with @ids naming the counters this file
 * bumps. Empties the backlog and the dead list; starts the poll budget now.
 */
void drv_init(struct drv *d, struct ipc_svc *svc, _Atomic uint64_t *ctr, const struct drv_ids *ids);

static inline void drv_ctr_add(struct drv *d, unsigned c, uint64_t n)
{
    ipc_count(&d->ctr[c], n);
}

/** Set a gauge (a counter that goes down as well as up). */
static inline void drv_ctr_set(struct drv *d, unsigned c, uint64_t v)
{
    ipc_st_rlx(&d->ctr[c], v);
}

/* ---- buffers to free ---------------------------------------------------- */

/** Free what the dead list holds, in one ipc_pool_free. */
void drv_dead_flush(struct drv *d);

/** Queue @b (a whole packet) to be freed at the next drv_dead_flush. */
static inline void drv_dead_add(struct drv *d, ipc_buf b)
{
    if (d->n_dead == DRV_DEAD_MAX)
        drv_dead_flush(d);
    d->dead[d->n_dead++] = b;
}

/* ---- the TX backlog ----------------------------------------------------- */

static inline uint32_t drv_backlog_depth(const struct drv *d)
{
    return d->bl_tail - d->bl_head;
}

/** The @i-th packet from the backlog's head (i < depth). */
static inline ipc_buf drv_backlog_peek(const struct drv *d, uint32_t i)
{
    return d->backlog[(d->bl_head + i) & (DRV_BACKLOG - 1)];
}

/** Drop @n packets from the head: they have gone to the device. */
static inline void drv_backlog_advance(struct drv *d, uint32_t n)
{
    d->bl_head += n;
}

/** Take the head packet (the backlog is not empty). */
static inline ipc_buf drv_backlog_pop(struct drv *d)
{
    return d->backlog[d->bl_head++ & (DRV_BACKLOG - 1)];
}

/** Append @b at the tail; false (and @b still the caller's) when full. */
static inline bool drv_backlog_push(struct drv *d, ipc_buf b)
{
    if (ipc_unlikely(drv_backlog_depth(d) >= DRV_BACKLOG))
        return false;
    d->backlog[d->bl_tail++ & (DRV_BACKLOG - 1)] = b;
    return true;
}

/** Put @b back at the head, first to go next time (the device refused it
 * for now); false (and @b still the caller's) when the backlog is full. */
static inline bool drv_backlog_requeue(struct drv *d, ipc_buf b)
{
    if (drv_backlog_depth(d) >= DRV_BACKLOG)
        return false;
    d->backlog[--d->bl_head & (DRV_BACKLOG - 1)] = b;
    return true;
}

/**
 * Stopping: move every packet still in the backlog to the dead list and
 * count them in counter @c. Returns how many.
 */
uint32_t drv_backlog_drop(struct drv *d, unsigned c);

/**
 * A driver's TX check: DRV_KEEP for a packet its device can send, or the
 * counter to bump when it drops it. Called once per packet, inlined into
 * drv_tx_pull.
 */
typedef uint32_t drv_tx_check_fn(const struct drv *d, ipc_buf b);

/* Capture or trace on (the caller's one branch found a bit of @dir or
 * IPC_CAP_TRACE): copy the frames, mark or record the traced ones. */
static inline void drv_cap_hook(struct drv *d, const ipc_buf *bufs, uint32_t n, unsigned dir)
{
    unsigned on = ipc_ld_rlx(&ipc_cap_.cap->on);
    if (on & dir)
        ipc_cap_frames(d->pool, bufs, n, dir, ipc_cap_.port);
    if (on & IPC_CAP_TRACE)
        (dir == IPC_CAP_RX ? ipc_trace_rx : ipc_trace_tx)(d->pool, bufs, n, ipc_cap_.port);
}

/**
 * Take what the input rings hold (ipc_ring_recv validates handles, owners
 * and chains) into the backlog, checking each packet with @check first. A
 * packet the check refuses, or that finds the backlog full
 * (tx_drop_backlog), goes to the dead list. Returns the packets taken off
 * the rings.
 *
 * Each ring is emptied as far as the backlog has room, not one DRV_BURST a
 * loop: a device slower than the router (a TAP write runs the host's whole
 * receive path) spends most of a loop in its system call, and the ring
 * alone would then have to hold a burst's excess. Taken at once, the ring
 * and the backlog hold it together, and the router's producer finds room.
 */
static inline uint32_t drv_tx_pull(struct drv *d, drv_tx_check_fn *check)
{
    ipc_buf bufs[DRV_BURST];
    uint32_t total = 0;
    for (unsigned r = 0; r < d->n_in; r++) {
        /* At most a backlog's worth a ring, whatever the check refuses: a
         * producer that keeps the ring full of refused packets cannot hold
         * us here. */
        for (uint32_t taken = 0; taken < DRV_BACKLOG;) {
            uint32_t room = DRV_BACKLOG - drv_backlog_depth(d);
            uint32_t n = ipc_ring_recv(d->in[r], d->pool, bufs, room < DRV_BURST ? room : DRV_BURST);
            if (ipc_cap_on(IPC_CAP_TX | IPC_CAP_TRACE))
                drv_cap_hook(d, bufs, n, IPC_CAP_TX);
            for (uint32_t i = 0; i < n; i++) {
                uint32_t why = check(d, bufs[i]);
                if (ipc_likely(why == DRV_KEEP)) {
                    if (ipc_likely(drv_backlog_push(d, bufs[i])))
                        continue;
                    why = d->id.tx_drop_backlog;
                }
                drv_ctr_add(d, why, 1);
                drv_dead_add(d, bufs[i]);
            }
            total += n;
            taken += n;
            if (n < DRV_BURST)
                break; /* the ring is empty, or the backlog full */
        }
    }
    return total;
}

/**
 * Every driver calls this with the packets it received, before it hands
 * them to the router (after, they are the router's): `ringrouter capture
 * PORT rx` copies them here, and `ringrouter trace` marks the ones it
 * follows (ipc/trace.h). Off, one load and one branch per batch for both.
 */
static inline void drv_rx_capture(struct drv *d, const ipc_buf *bufs, uint32_t n)
{
    if (ipc_cap_on(IPC_CAP_RX | IPC_CAP_TRACE))
        drv_cap_hook(d, bufs, n, IPC_CAP_RX);
}

/** The backlog gauges: its depth now and the deepest it has been. */
static inline void drv_gauges(struct drv *d)
{
    uint32_t depth = drv_backlog_depth(d);
    drv_ctr_set(d, d->id.backlog_depth, depth);
    if (depth > d->backlog_max) {
        d->backlog_max = depth;
        drv_ctr_set(d, d->id.backlog_max, depth);
    }
}

/* ---- idle: poll, arm, sleep, disarm ------------------------------------- */

/**
 * End of a loop that found @work (or not): true while the poll budget
 * (poll_us after the last loop with work) runs, and the caller should look
 * again rather than sleep. Reads the clock only with a budget set.
 */
static inline bool drv_polling(struct drv *d, bool work)
{
    if (!d->poll_ns)
        return false;
    uint64_t now = ipc_svc_now_ns();
    if (work)
        d->last_work = now;
    return now - d->last_work < d->poll_ns;
}

/**
 * About to sleep: arm every input ring's wake word and re-check the rings
 * (ipc/wake.h (W), (F1), (R)). Returns true when the driver may block
 * (counted in the service's sleeps), false when work arrived meanwhile and
 * the wake words are disarmed again: run the loop instead.
 */
static inline bool drv_sleep_arm(struct drv *d)
{
    struct ipc_svc *svc = d->svc;
    if (svc->n_in && !ipc_wake_arm(svc->in_ptr, svc->n_in))
        return false;
    ipc_count(&svc->stats->sleeps, 1);
    return true;
}

/**
 * After the driver's own blocking call, which ended by its timeout when
 * @timed_out: count a lost wake-up (ipc_svc_slept), then disarm the wake
 * words, since a running driver needs no eventfd write.
 */
static inline void drv_sleep_end(struct drv *d, bool timed_out)
{
    struct ipc_svc *svc = d->svc;
    ipc_svc_slept(svc, timed_out);
    if (svc->n_in)
        ipc_wake_disarm(svc->in_ptr, svc->n_in);
}

#endif
