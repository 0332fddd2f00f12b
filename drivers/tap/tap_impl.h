/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/tap_impl.h: what the TAP driver's two files share, and no one
 * else includes: the driver's state (struct tap), its counters and stages,
 * and the loop's functions that setup and teardown (setup.c) call. The loop
 * itself (receive, transmit, the one wait) is tap.c; the scaffolding every
 * driver shares is drivers/common/drv.h.
 */
#ifndef TAP_TAP_IMPL_H
#define TAP_TAP_IMPL_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "drivers/common/drv.h"
#include "drivers/common/vlan.h"
#include "tap.h"
#include "vnet.h"

#define TAP_RX_INFLIGHT_DEFAULT 32u
#define TAP_RX_INFLIGHT_MAX 1024u
#define TAP_TX_INFLIGHT 256u         /* writes in flight at most */
#define TAP_TX_SMALL 256u            /* a frame up to this long leaves from a private copy (tap_tx_push) */
#define TAP_CQE_BATCH 256u
#define TAP_RX_ERR_REST 64u          /* failed reads in a row before we stop re-arming at once */
#define TAP_RX_WINDOW_MIN 4u         /* reads armed at least after the queue was found empty */
#define TAP_STOP_MS 1000             /* drain budget at SIGTERM */
#define TAP_DEV_FIXED 0              /* the TAP fd's index in the ring's registered files (uring.c) */
#define TAP_THROTTLE_US 200          /* wait while the router's ring has no room for another read */

/* user_data: kind in the high word, slot index in the low word. */
enum tap_ud { UD_RX = 1, UD_TX, UD_WAKE, UD_SIG, UD_KICK, UD_CANCEL, UD_RXPOLL };
#define UD(kind, idx) (((uint64_t)(kind) << 32) | (uint32_t)(idx))
#define UD_KIND(u) ((uint32_t)((u) >> 32))
#define UD_IDX(u) ((uint32_t)(u))

/* Counters, exported by name in the stats region (setup.c, docs/drivers.md). */
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

/* Stage counters (ipc/stage.h, docs/stats.md), in the loop's order. */
enum tap_stage { S_RX, S_WAKE, S_TX, S_REARM, S_SYSCALL, S_N };

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
    uint8_t small[TAP_VNET_HDR_LEN + TAP_TX_SMALL]; /* header + a small frame, written whole */
};

struct tap {
    struct drv d; /* counters, TX backlog, dead list, idle: drivers/common/drv.h */
    struct drv_vlan vlan; /* the VLAN sub-interfaces we serve (drivers/common/vlan.h) */
    struct ipc_svc *svc;
    struct ipc_pool *pool;
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
    bool rx_poll_armed; /* the one-shot POLLIN on the device (while its queue is empty) */
    bool rx_empty;      /* a read found the device's queue empty: wait for the poll */
    bool rx_nowait;     /* reads are RWF_NOWAIT (single waiter); off if the kernel refuses */
    bool rx_missed;     /* this reap saw a read find the queue empty */
    bool rx_throttled;  /* the output ring had no room for another read: receive paused */
    bool rx_poll_stop;  /* the POLLIN is being cancelled (receive paused) */
    uint32_t rx_window; /* reads to keep armed: what the device's queue has been holding */
    uint32_t rx_hits;   /* reads that got a frame in this reap */
    uint32_t tx_inflight;
    uint32_t n_tx_free;
    uint32_t n_out;
    int idle_ms;
    uint64_t wake_val;
    struct tap_rx_slot *rx;
    struct tap_tx_slot *tx;
    uint32_t tx_free[TAP_TX_INFLIGHT];
    ipc_buf out[TAP_RX_INFLIGHT_MAX];
    uint32_t out_len[TAP_RX_INFLIGHT_MAX];
    uint8_t out_nfr[TAP_RX_INFLIGHT_MAX];
    uint8_t out_flag[TAP_RX_INFLIGHT_MAX]; /* OUT_GSO, OUT_CSUM */
};

#define OUT_GSO 1u
#define OUT_CSUM 2u

/* The loop's steps that setup.c also runs (tap.c). */

/** An SQE, submitting what is queued first if the SQ is full; NULL (counted) if still none. */
struct io_uring_sqe *tap_sqe(struct tap *t);

/** Re-arm idle receive slots up to the window; returns the slots it could not arm (starved). */
uint32_t tap_rx_refill(struct tap *t);

/** Arm the device's POLLIN while its queue is empty, or cancel it while receive is paused. */
void tap_rx_poll_arm(struct tap *t);

/** Keep our eventfd watched: a poll linked to the read that resets it. */
void tap_wake_arm(struct tap *t);

/** Hand this loop's received packets to the router in one submit; returns how many it took. */
uint32_t tap_rx_flush(struct tap *t);

/** Turn the backlog's head into writevs, as many as there are write slots. */
uint32_t tap_tx_push(struct tap *t);

/** Handle every completion there is; returns how many. */
uint32_t tap_reap(struct tap *t);

/** The gauges: backlog, reads and writes in flight. */
void tap_gauges(struct tap *t);

/** A relative timeout of @ns for io_uring_submit_and_wait_timeout. */
static inline struct __kernel_timespec tap_timeout(uint64_t ns)
{
    return (struct __kernel_timespec){.tv_sec = (long long)(ns / 1000000000u),
                                      .tv_nsec = (long long)(ns % 1000000000u)};
}

#endif
