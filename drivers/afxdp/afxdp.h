/* SPDX-License-Identifier: MIT */
/*
 * drivers/afxdp/afxdp.h: the AF_XDP driver, one process per AF_XDP port, and
 * the few facts the supervisor (supervisor/xsk.c), which creates the socket,
 * and the driver, which maps its rings, must agree on.
 *
 * The supervisor creates the XSK, registers the pool's frame area as its
 * UMEM (chunk = frame, so a UMEM address is handle * frame_size + offset),
 * sizes the four rings with the constants below, binds it with
 * XDP_USE_NEED_WAKEUP, and passes the fd as the driver's dev_fd. The driver
 * mmaps the rings from that fd (no privilege needed) and continues from the
 * producer and consumer indices it finds there: the kernel keeps them, so a
 * restarted driver carries on where its predecessor stopped.
 *
 * Buffer ownership (ipc/pool.h): a buffer in any of the socket's rings, or
 * inside the kernel between them, is owned by IPC_OWNER_KERNEL | port. The
 * driver writes a buffer's address into a fill or TX slot, then gives it to
 * the kernel, then publishes the producer index; it takes a buffer back from
 * the kernel before releasing the RX or completion slot it came from. See
 * afxdp.c for why a kill at any instruction loses nothing.
 */
#ifndef AFXDP_AFXDP_H
#define AFXDP_AFXDP_H

#include <stdint.h>

#include "ipc/svc.h"

/* Ring sizes: the supervisor sets them, the driver maps them. */
#define AFXDP_FILL_SIZE 2048u
#define AFXDP_COMP_SIZE 2048u
#define AFXDP_RX_SIZE 2048u
#define AFXDP_TX_SIZE 2048u

/*
 * The lend window: the driver never writes more than AFXDP_WINDOW fill or TX
 * slots before publishing them, keeps at most size - AFXDP_WINDOW slots
 * published, and keeps the AFXDP_WINDOW slots past the producer index
 * poisoned (AFXDP_POISON). A successor scans that window to find buffers its
 * predecessor gave the kernel but never published (afxdp.c, "Restart").
 */
#define AFXDP_WINDOW 64u
#define AFXDP_POISON UINT64_MAX

/* Frames one copy-mode sendto may send (XDP_MAX_TX_SKB_BUDGET; the kernel's
 * default is 32, its limit the TX ring's size). */
#define AFXDP_TX_BUDGET 256u

/* The XSKMAP in steer.bpf.c: one slot per RX queue. */
#define AFXDP_MAX_QUEUES 64u

struct afxdp;

/**
 * Set up the driver on the service @svc (already opened): map the XSK rings
 * from dev_fd, recover what a predecessor left half done, name the counters.
 * Returns 0 with *out, or -errno with @err naming what failed.
 */
int afxdp_init(struct ipc_svc *svc, struct afxdp **out, struct ipc_err *err);

/**
 * Before anything is lent: handle the RX and completion slots a predecessor
 * took but did not release, and take back the buffers it lent the kernel but
 * never published. Call once, after afxdp_init.
 */
void afxdp_recover(struct afxdp *x);

/** Run until SIGTERM or SIGINT. Returns 0 on a clean stop. */
int afxdp_run(struct afxdp *x);

/**
 * Stop: return the buffers the driver holds to the pool. Buffers lent to the
 * kernel stay lent (the socket lives on in the supervisor) for the next
 * instance, or for the supervisor to free at shutdown.
 */
void afxdp_fini(struct afxdp *x);

#endif
