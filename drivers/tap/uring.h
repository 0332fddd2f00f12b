/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/uring.h: the TAP driver's io_uring, made restricted. No
 * driver state here, so the unit test (tests/unit/test_tap_uring.c) builds
 * the very ring the driver runs on and probes what it refuses.
 */
#ifndef TAP_URING_H
#define TAP_URING_H

#include <liburing.h>

#include "ipc/shm.h"

/**
 * Create the driver's ring of @entries SQEs the only way it is made:
 * disabled (IORING_SETUP_R_DISABLED), then restricted (IORING_REGISTER_
 * RESTRICTIONS) to the opcodes and SQE flags the loop (tap.c) issues and to
 * no register operation at all, then enabled. Any other opcode completes
 * with -EACCES, any io_uring_register() fails with -EACCES. @p receives the
 * kernel's answer (features). A kernel that refuses a step is an error, not
 * an unrestricted ring. Returns 0, or -errno with @err naming the step (and
 * @who, for the log).
 */
int tap_uring_init(struct io_uring *ring, unsigned entries, int dev_fd, struct io_uring_params *p, const char *who,
                   struct ipc_err *err);

#endif
