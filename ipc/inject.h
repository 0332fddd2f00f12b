/* SPDX-License-Identifier: MIT */
/*
 * ipc/inject.h: fault injection into a running service, the service's half
 * (`ringrouter inject`; the supervisor's half is supervisor/inject.c). A
 * fault that must happen inside a service's loop (a crash at a batch, a
 * buffer leaked, a garbage handle published by a ring's producer) is a
 * command the supervisor writes into the service's stats region, which the
 * service reads once per loop in ipc_svc_beat():
 *
 *   supervisor                              service, end of a loop
 *   STORE     kind, arg[]                   LOAD.rlx  seq  == seen ? done  (1)
 *   STORE.rel seq = seq + 1      (A)        LOAD.acq  seq                  (B)
 *   write the service's eventfd             LOAD      kind, arg[]
 *                                           act; STORE loop, result, ...
 *   LOAD.acq  ack == seq ? answer (D)       STORE.rel ack = seq            (C)
 *
 *   (A) pairs with (B): the service reads the kind and arguments written
 *       with this seq. (C) pairs with (D): the supervisor reads the result
 *       written with this ack.
 *
 * The fast path is (1): one relaxed load of a line only the supervisor
 * writes (so it stays in the service's cache) and one compare with a local
 * copy, per loop. The supervisor wakes the service with its eventfd so an
 * idle one answers at once, not at its next heartbeat.
 *
 * Each word has one writer: the supervisor's line (seq, kind, arg) and the
 * service's line (ack and what it did) sit on separate cache lines. Both ends
 * map the region read-write, so each treats what it reads as input: the
 * service checks the kind and bounds every argument (a ring index against
 * its rings, a count against IPC_INJ_LEAK_MAX); the supervisor keeps its own
 * copy of seq, takes ack only as an equal compare, uses the ring index only
 * after bounding it and prints the other words as numbers.
 *
 * A successor binds to the seq it finds (ipc_svc_open): a command its
 * predecessor died before answering is not carried out twice, and the
 * supervisor answers that the instance it asked is gone.
 *
 * Nothing here makes a system call but the eventfd write that wakes a
 * ring's consumer (write(2), on every kind's seccomp list) and, for `slow`,
 * the clock (the vDSO; clock_gettime is on every list as its fallback). A
 * crash is a store through a null pointer: the kernel's SIGSEGV, no call.
 */
#ifndef IPC_INJECT_H
#define IPC_INJECT_H

#include <stdbool.h>
#include <stdint.h>

#include "atomic.h"
#include "shm.h"

/* The commands a service carries out (the supervisor does kill, stop and
 * exhaust itself). */
enum ipc_inj_kind {
    IPC_INJ_NONE = 0,
    IPC_INJ_CRASH = 1,       /* a store through a null pointer, in the loop: SIGSEGV */
    IPC_INJ_BAD_HANDLE = 2,  /* publish a handle past the pool on output ring arg[0] (corrupt-ring's producer) */
    IPC_INJ_BAD_META = 3,    /* a buffer's off/len (or next) out of bounds, published on output ring arg[0] */
    IPC_INJ_DOUBLE_FREE = 4, /* free one buffer twice */
    IPC_INJ_CHAIN_LOOP = 5,  /* a packet whose chain loops, published on output ring arg[0] */
    IPC_INJ_LEAK = 6,        /* allocate arg[0] buffers and keep them until the process ends */
    IPC_INJ_SLOW = 7,        /* busy-wait arg[0] us in every loop, for arg[1] ms */
    IPC_INJ_NKINDS
};

#define IPC_INJ_RING_NONE UINT32_MAX  /* arg[0] of a kind that may publish: no output ring, free instead */
#define IPC_INJ_SHOW 8u               /* buffers named in an answer */
#define IPC_INJ_LEAK_MAX 65536u       /* buffers one leak command may take */
#define IPC_INJ_SLOW_US_MAX 1000000u  /* 1 s a loop at most */
#define IPC_INJ_SLOW_MS_MAX 600000u   /* for 10 minutes at most */
#define IPC_INJ_RETRY_NS 200000000ull /* a command that found the pool empty is tried again this long */

/* What a service answers in `variant`. */
enum ipc_inj_variant {
    IPC_INJ_V_FRAME = 0, /* bad-meta: off + len past the frame */
    IPC_INJ_V_CHAIN = 1, /* bad-meta: next out of the pool */
};

/* The block at the end of a stats region (ipc/svc.h). */
struct ipc_inject {
    /* The supervisor's line: the command. */
    _Alignas(IPC_CACHELINE) _Atomic uint64_t seq; /* written last (A) */
    _Atomic uint32_t kind;                        /* enum ipc_inj_kind */
    uint32_t pad;
    _Atomic uint64_t arg[2];
    /* The service's line: what it did. */
    _Alignas(IPC_CACHELINE) _Atomic uint64_t ack; /* = seq once done, written last (C) */
    _Atomic uint64_t loop;                        /* its loop count (the batch) when it acted */
    _Atomic uint32_t result;                      /* 0, or the errno of why it could not */
    _Atomic uint32_t ring;                        /* the output ring it published on, or IPC_INJ_RING_NONE */
    _Atomic uint32_t handle;                      /* the handle it published or freed twice */
    _Atomic uint32_t count;                       /* buffers involved (leak: taken) */
    _Atomic uint32_t variant;                     /* enum ipc_inj_variant */
    _Atomic uint32_t pad2;
    _Atomic uint32_t bufs[IPC_INJ_SHOW]; /* leak: the first buffers taken */
};

/* A service's own state of injection, in struct ipc_svc. */
struct ipc_inj_local {
    uint64_t seen;       /* the last seq carried out (or found at start) */
    bool busy;           /* something to do every loop (slow) */
    uint64_t slow_ns;    /* busy-wait per loop */
    uint64_t slow_until; /* CLOCK_MONOTONIC ns */
    uint64_t retry_seq;  /* the command being tried again (the pool was empty) */
    uint64_t retry_until;
};

struct ipc_svc;

/**
 * Service, from ipc_svc_beat() when the command word moved or a fault is
 * in progress: carry out the new command (if any) and answer it, and the
 * per-loop part of one in progress. Never returns after a crash command.
 */
void ipc_inject_run(struct ipc_svc *svc);

/** The name of @kind as `ringrouter inject` says it ("crash", ...), or "?". */
const char *ipc_inject_kind_name(uint32_t kind);

#endif
