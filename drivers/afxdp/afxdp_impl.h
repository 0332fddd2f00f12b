/* SPDX-License-Identifier: MIT */
/*
 * drivers/afxdp/afxdp_impl.h: what the AF_XDP driver's two halves share:
 * afxdp.c (receive, send, the loop) and umem.c (the UMEM's lending: the
 * fill ring, the completion ring, and what a predecessor left lent).
 * Private to them and to tests/unit/test_afxdp.c.
 */
#ifndef AFXDP_IMPL_H
#define AFXDP_IMPL_H

#include <linux/if_xdp.h>
#include <stdbool.h>
#include <stdint.h>

#include "afxdp.h"
#include "drivers/common/drv.h"
#include "drivers/common/vlan.h"
#include "tables/config.h"
#include "xskq.h"

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0) /* linux/if_xdp.h, 6.6+: more buffers of this frame follow */
#endif

#define AFXDP_BURST 64u    /* descriptors handled per step */
#define AFXDP_RX_BUDGET 4u /* RX bursts per loop */
#define AFXDP_KICKS 8u     /* TX kicks per loop at most */
#define AFXDP_XSTATS_LOOPS 1024u
#define AFXDP_BP_IDLE 2u /* empty busy polls before we stop polling a quiet device */
#define AFXDP_YIELD_FAILS 4u   /* yields in a row after which nothing came back to send: stop yielding */
#define AFXDP_YIELD_PROBE 256u /* wake-ups sent without a yield before we try one again */

enum afxdp_ctr {
    C_RX_PKTS,
    C_RX_BYTES,
    C_RX_DROP_RING_FULL,
    C_TX_PKTS,
    C_TX_BYTES,
    C_TX_DONE,
    C_TX_DROP_BACKLOG,
    C_TX_DROP_CHAIN,
    C_TX_DROP_LONG,
    C_TX_RING_FULL,
    C_TX_WAKEUP,
    C_TX_WAKEUP_ERR,
    C_TX_STALLED,
    C_RX_WAKEUP,
    C_FILL_EMPTY,
    C_FILL_NOBUFS,
    C_FILL_STOCK,
    C_KERNEL_HELD,
    C_BACKLOG_DEPTH,
    C_BACKLOG_MAX,
    C_STALE_DESC,
    C_LIMBO_RECOVERED,
    C_XSK_RX_DROPPED,
    C_XSK_RX_INVALID,
    C_XSK_TX_INVALID,
    C_XSK_RX_RING_FULL,
    C_XSK_FILL_EMPTY,
    C_XSK_TX_EMPTY,
    C_BUSY_POLLS,
    C_WAKEUP_SYSCALLS_PER_KPKT,
    C_RX_BACKPRESSURE,
    C_RX_MB_PKTS,
    C_RX_MB_DESCS,
    C_RX_MB_BAD,
    C_WAKE_YIELDS,
    C_N
};

/* A driver group's counters for each of its ports, after the group's own
 * (afxdp_init): PORT.rx_pkts and so on, the VLAN ports' names. */
enum { AFXDP_PC_RX_PKTS, AFXDP_PC_RX_BYTES, AFXDP_PC_TX_PKTS, AFXDP_PC_TX_BYTES, AFXDP_PC_N };

/* One port's socket and its share of the loop: a driver serves one, or
 * (a driver group) up to TBL_GROUP_MAX, each its own struct afxdp. */
struct afxdp {
    struct drv d; /* counters, TX backlog, idle: drivers/common/drv.h */
    struct drv_vlan vlan; /* the VLAN sub-interfaces we serve (drivers/common/vlan.h) */
    struct ipc_svc *svc;
    struct ipc_pool *pool;
    struct ipc_ring_prod *out; /* the ring to the router that carries this port's frames */
    unsigned pc;               /* a group's: this port's first AFXDP_PC_* counter; 0: none */
    int fd;
    uint16_t port;
    uint16_t kown; /* the owner of what we lend the kernel: IPC_OWNER_KERNEL | our socket's number */
    uint32_t fs;
    uint32_t fill_target;
    struct xskq rx, tx, fq, cq;
    struct ipc_ring_shared *bad; /* take's drop counters for kernel descriptors */
    uint64_t loops;
    bool tx_stuck;
    bool fill_short;
    bool busy;         /* the socket busy-polls the device's NAPI (IPC_PORT_F_BUSY_POLL) */
    bool rx_blocked;   /* frames wait in the RX ring and the router's ring is full */
    bool rx_skip;      /* dropping the rest of a frame longer than IPC_CHAIN_MAX buffers */
    uint32_t bp_empty; /* busy polls in a row that brought no frame */
};

/* The process: its ports, and what the loop keeps for all of them. */
struct afxdp_set {
    struct ipc_svc *svc;
    unsigned n;
    struct afxdp *x[TBL_GROUP_MAX];
    int idle_ms;
    uint64_t loops;
    uint64_t backlog_max;
    /* The yield after a wake-up (afxdp_run): yields in a row that brought
     * nothing to send, and wake-ups left to send without one. */
    uint32_t yield_fails;
    uint32_t yield_off;
    const char *names[IPC_SVC_MAX_CTR];
    char name_buf[TBL_GROUP_MAX * AFXDP_PC_N][IPC_CTR_NAME];
};

static inline void fill_poison(struct afxdp *x, uint32_t from, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        *xskq_addr(&x->fq, from + i) = AFXDP_POISON;
}

static inline void tx_poison(struct afxdp *x, uint32_t from, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        xskq_desc(&x->tx, from + i)->addr = AFXDP_POISON;
}

/* umem.c */
uint32_t take_from_kernel(struct afxdp *x, const uint64_t *addr, uint32_t n, ipc_buf *bufs, uint32_t *idx);
uint32_t comp_step(struct afxdp *x);
uint32_t fill_step(struct afxdp *x);
void recover_limbo(struct afxdp *x);

#endif
