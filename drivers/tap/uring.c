/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/uring.c: the TAP driver's restricted io_uring (uring.h).
 *
 * The seccomp filter (ipc/sandbox.h) lets the driver call io_uring_enter,
 * but it cannot see what the SQEs ask for: an io_uring can open files,
 * connect sockets, send, splice ... on the process's behalf, past any system
 * call filter. So the ring itself is restricted to what tap.c submits:
 *
 *   READV   a receive slot: vnet header + the slot's frames (rx_arm)
 *   READ    reset our eventfd after its poll fired (tap_wake_arm)
 *   WRITEV  a chain to the device: header + frames (tap_tx_push)
 *   WRITE   a small packet to the device, header and frame copied into the
 *           write slot (tap_tx_push); the wake-up we owe the router: its eventfd (rx_kick)
 *   POLL_ADD     the device (while its queue is empty), our eventfd, the signalfd
 *   POLL_REMOVE  the device's poll while the router's ring is full
 *   ASYNC_CANCEL the reads at stop, then everything (tap_fini)
 *
 * SQE flags: IO_LINK (eventfd poll -> read), CQE_SKIP_SUCCESS and
 * FIXED_FILE. The TAP fd is registered as fixed file 0 before the
 * restrictions: every read, write and poll of the device names it so, which
 * spares each one a file lookup and its reference (fget/fput, which perf
 * showed on the forwarding CPU at 64-byte line rate). No register operation is
 * allowed once the ring is enabled, and the driver waits with
 * IORING_ENTER_EXT_ARG, so it needs no TIMEOUT opcode either.
 * The restrictions can be registered only on a ring created disabled, and
 * once; enabling it seals them. IORING_SETUP_SINGLE_ISSUER binds the ring to
 * the task that enables it: this one. IORING_SETUP_DEFER_TASKRUN (which
 * needs it) runs the work that completes a request (a poll that fired, a
 * read retried) only when this task enters to wait or reap, in one batch,
 * rather than as task work queued at each wake-up from another CPU.
 */
#include "uring.h"

#include <errno.h>
#include <string.h>

static const unsigned char tap_uring_ops[] = {
    IORING_OP_READV,    IORING_OP_READ,        IORING_OP_WRITEV,       IORING_OP_WRITE,
    IORING_OP_POLL_ADD, IORING_OP_POLL_REMOVE, IORING_OP_ASYNC_CANCEL,
};
#define TAP_URING_NOPS (sizeof(tap_uring_ops) / sizeof(tap_uring_ops[0]))
#define TAP_URING_SQE_FLAGS (IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS | IOSQE_FIXED_FILE)

int tap_uring_init(struct io_uring *ring, unsigned entries, int dev_fd, struct io_uring_params *p, const char *who,
                   struct ipc_err *err)
{
    /* A kernel before 6.1 lacks DEFER_TASKRUN, before 6.0 some of the other
     * tuning flags; never the restriction (5.10, before EXT_ARG, which the
     * driver needs). */
    static const unsigned tuning[] = {
        IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SINGLE_ISSUER |
            IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SINGLE_ISSUER,
        0,
    };
    int ret = -EINVAL;
    for (unsigned i = 0; i < sizeof(tuning) / sizeof(tuning[0]) && ret == -EINVAL; i++) {
        memset(p, 0, sizeof(*p));
        p->flags = IORING_SETUP_R_DISABLED | tuning[i];
        ret = io_uring_queue_init_params(entries, ring, p);
    }
    if (ret < 0)
        return ipc_errf(err, ret, "%s: io_uring_queue_init(%u, R_DISABLED): %s", who, entries, strerror(-ret));

    ret = io_uring_register_files(ring, &dev_fd, 1);
    if (ret < 0) {
        ret = ipc_errf(err, ret, "%s: registering the TAP fd with the io_uring (IORING_REGISTER_FILES): %s", who,
                       strerror(-ret));
        goto out_ring;
    }

    struct io_uring_restriction res[TAP_URING_NOPS + 1];
    memset(res, 0, sizeof(res));
    for (unsigned i = 0; i < TAP_URING_NOPS; i++) {
        res[i].opcode = IORING_RESTRICTION_SQE_OP;
        res[i].sqe_op = tap_uring_ops[i];
    }
    res[TAP_URING_NOPS].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
    res[TAP_URING_NOPS].sqe_flags = TAP_URING_SQE_FLAGS;
    /* io_uring_register_restrictions() and io_uring_enable_rings() are
     * missing from liburing 2.3's shared library (its version script left
     * them out), so the register calls are made directly. */
    ret = io_uring_register((unsigned)ring->ring_fd, IORING_REGISTER_RESTRICTIONS, res, TAP_URING_NOPS + 1);
    if (ret < 0) {
        ret = ipc_errf(err, ret,
                       "%s: the kernel refuses io_uring restrictions (IORING_REGISTER_RESTRICTIONS): %s; "
                       "the TAP driver runs only on a restricted ring",
                       who, strerror(-ret));
        goto out_ring;
    }
    ret = io_uring_register((unsigned)ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
    if (ret < 0) {
        ret = ipc_errf(err, ret, "%s: enabling the restricted io_uring (IORING_REGISTER_ENABLE_RINGS): %s", who,
                       strerror(-ret));
        goto out_ring;
    }
    return 0;

out_ring:
    io_uring_queue_exit(ring);
    return ret;
}
