/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/tap.h: the TAP driver, one process per TAP port. It receives
 * frames from the TAP fd into pool buffers with io_uring reads and hands them
 * to the router on its one output ring; it takes packets from its input rings
 * (router, shaper) and writes them to the TAP fd with io_uring writes. The
 * virtio-net header travels in the buffer metadata both ways, so a 64 KB TCP
 * segment crosses the router as one chain of frames, and the kernel segments
 * and checksums it on the far side. docs/drivers.md has the counters.
 */
#ifndef TAP_TAP_H
#define TAP_TAP_H

#include "ipc/svc.h"

struct tap;

/**
 * Set up the driver on the service @svc (already opened): the io_uring, the
 * receive slots with their frames, the signal fd. Returns 0 with *out, or
 * -errno with @err naming what failed.
 */
int tap_init(struct ipc_svc *svc, struct tap **out, struct ipc_err *err);

/**
 * Run until SIGTERM or SIGINT: receive, transmit, wait, in one io_uring_enter
 * per loop. Returns 0 on a clean stop, -errno if the io_uring broke.
 */
int tap_run(struct tap *t);

/** Cancel what is in flight, wait for it, and return every buffer the driver holds to the pool. */
void tap_fini(struct tap *t);

#endif
