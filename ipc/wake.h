/* SPDX-License-Identifier: MIT */
/*
 * ipc/wake.h: the wake-up protocol on top of ipc/ring.h. One eventfd per
 * consuming process; every ring into that process carries a wake word.
 *
 *  consumer (about to sleep)                 producer (after publishing)
 *  STORE     need_wake = 1          (W)      STORE.rel prod             (B)
 *  FENCE.sc                         (F1)     FENCE.sc                   (F2)
 *  LOAD      prod  -> still empty?  (R)      LOAD      need_wake        (L)
 *  block on eventfd                          if set and the ring is not empty:
 *                                              xchg need_wake = 0, write eventfd
 *
 *  (F1) pairs with (F2). This is the store-buffering (Dekker) shape: each
 *  side stores, then loads what the other side stored. Acquire/release does
 *  not order a store before a later load, so both fences are full fences.
 *  With them, at least one side sees the other's store: either the consumer
 *  sees the new prod at (R) and does not sleep, or the producer sees the
 *  wake word at (L) and writes the eventfd. A wake-up is never lost.
 *
 * A producer marks the rings it submitted to during a loop in a
 * struct ipc_wake_set and flushes it once at the end of the loop: one fence
 * for all of them, and at most one eventfd write per consuming process, since
 * rings that share a consumer share its eventfd.
 *
 * docs/ipc.md has the whole protocol.
 */
#ifndef IPC_WAKE_H
#define IPC_WAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"

#define IPC_WAKE_SET_MAX 64

/**
 * Consumer: arm the wake word of each ring in @c[0..n), fence (F1) and
 * re-check them (R). Returns true when every ring is still empty and the
 * caller may block on its eventfd; false when work arrived, with the wake
 * words disarmed again, so the caller keeps draining.
 */
static inline bool ipc_wake_arm(struct ipc_ring_cons *const *c, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        ipc_st_rlx(&c[i]->sh->need_wake, 1); /* (W) */
    ipc_fence_sc();                           /* (F1) pairs with (F2) */
    for (unsigned i = 0; i < n; i++) {
        if (ipc_ring_avail(c[i], 1)) { /* (R) */
            for (unsigned j = 0; j < n; j++)
                ipc_st_rlx(&c[j]->sh->need_wake, 0);
            return false;
        }
    }
    for (unsigned i = 0; i < n; i++)
        ipc_count(&c[i]->sh->sleeps, 1);
    return true;
}

/** Consumer, after waking: stop asking for wake-ups while it runs. */
static inline void ipc_wake_disarm(struct ipc_ring_cons *const *c, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        ipc_st_rlx(&c[i]->sh->need_wake, 0);
}

/**
 * Producer, after its fence (F2): does this ring's consumer want a wake-up
 * now? Clears the wake word when it does, so that one wake-up answers one
 * request even with several producers feeding the same consumer.
 */
static inline bool ipc_wake_wanted(struct ipc_ring_prod *p)
{
    if (ipc_likely(ipc_ld_rlx(&p->sh->need_wake) == 0)) /* (L) */
        return false;
    if (p->head == ipc_ld_rlx(&p->sh->cons))
        return false; /* empty: the consumer has taken all, nothing to wake it for */
    return ipc_xchg(&p->sh->need_wake, 0) != 0;
}

unsigned ipc_wake_one(struct ipc_ring_prod *p);

/** The rings a producer submitted to during one loop. */
struct ipc_wake_set {
    unsigned n;
    struct ipc_ring_prod *ring[IPC_WAKE_SET_MAX];
};

static inline void ipc_wake_set_init(struct ipc_wake_set *ws)
{
    ws->n = 0;
}

/** Note that @p was submitted to in this loop (idempotent). */
static inline void ipc_wake_mark(struct ipc_wake_set *ws, struct ipc_ring_prod *p)
{
    for (unsigned i = 0; i < ws->n; i++)
        if (ws->ring[i] == p)
            return;
    if (ws->n < IPC_WAKE_SET_MAX)
        ws->ring[ws->n++] = p;
    else
        ipc_wake_one(p); /* a full set must not cost a lost wake-up */
}

/**
 * End of a producer's loop: one fence (F2), then at most one eventfd write
 * per consuming process among the marked rings. Returns the number of
 * eventfd writes made and empties the set.
 */
unsigned ipc_wake_flush(struct ipc_wake_set *ws);

/**
 * Send one wake-up to @p's consumer now, outside a wake set (a producer with
 * a single output, or a test). Returns 1 if an eventfd write was made.
 */
unsigned ipc_wake_one(struct ipc_ring_prod *p);

/**
 * Consumer: block on @efd until it is written or @timeout_ms passes (-1:
 * forever), then reset it. Returns 1 if woken, 0 on timeout, -errno on error
 * (-EINTR when a signal interrupted the wait).
 */
int ipc_wake_block(int efd, int timeout_ms);

/** ipc_wake_block for at most @timeout_us microseconds (-1: forever). */
int ipc_wake_block_us(int efd, int64_t timeout_us);

/** A new eventfd for a consumer (non-blocking, not close-on-exec). */
int ipc_wake_eventfd(void);

#endif
