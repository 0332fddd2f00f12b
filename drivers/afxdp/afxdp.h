/* SPDX-License-Identifier: MIT */
/*
 * drivers/afxdp/afxdp.h: the AF_XDP driver, one process per AF_XDP port, or
 * for the ports of a driver group (docs/drivers.md, "Driver groups"): each
 * port's socket is then served as below, one loop for all of them.
 *
 * The supervisor creates the XSK with the geometry of tables/xsk.h and
 * passes the fd as the driver's dev_fd. The driver
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
#include "tables/xsk.h"

/*
 * The lend window: the driver never writes more than AFXDP_WINDOW fill or TX
 * slots before publishing them, keeps at most size - AFXDP_WINDOW slots
 * published, and keeps the AFXDP_WINDOW slots past the producer index
 * poisoned (AFXDP_POISON). A successor scans that window to find buffers its
 * predecessor gave the kernel but never published (afxdp.c, "Restart").
 */
#define AFXDP_WINDOW 64u
#define AFXDP_POISON UINT64_MAX

struct afxdp_set;

/**
 * Set up the driver on the service @svc (already opened): map the XSK rings
 * from dev_fd, recover what a predecessor left half done, name the counters.
 * Returns 0 with *out, or -errno with @err naming what failed.
 */
int afxdp_init(struct ipc_svc *svc, struct afxdp_set **out, struct ipc_err *err);

/**
 * Before anything is lent: handle the RX and completion slots a predecessor
 * took but did not release, and take back the buffers it lent the kernel but
 * never published. Call once, after afxdp_init.
 */
void afxdp_recover(struct afxdp_set *g);

/** Run until SIGTERM or SIGINT. Returns 0 on a clean stop. */
int afxdp_run(struct afxdp_set *g);

/* Set by a stop signal (ipc_svc_catch_stop, which main calls first): afxdp_run returns. */
extern volatile sig_atomic_t afxdp_stop;

/**
 * Stop: return the buffers the driver holds to the pool. Buffers lent to the
 * kernel stay lent (the socket lives on in the supervisor) for the next
 * instance, or for the supervisor to free at shutdown.
 */
void afxdp_fini(struct afxdp_set *g);

#endif
