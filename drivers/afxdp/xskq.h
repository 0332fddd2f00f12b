/* SPDX-License-Identifier: MIT */
/*
 * drivers/afxdp/xskq.h: the driver's view of one of the XSK's four rings
 * (fill, completion, RX, TX), mapped from the socket the supervisor keeps.
 * Like ipc/ring.h and libxdp's xsk_ring_prod/xsk_ring_cons, the view keeps a
 * private index for our side and a cached copy of the kernel's, and reads
 * the kernel's shared index only when the cache says "full" (producer) or
 * "empty" (consumer), or after a syscall that exists to move it (a kick).
 *
 *  we produce (fill, TX)                 we consume (RX, completion)
 *  LOAD.acq  cons   (A)                  LOAD.acq  prod   (C)
 *  STORE     slots[head..]               LOAD      slots[head..]
 *  STORE.rel prod   (B)                  STORE.rel cons   (D)
 *
 *  (A) pairs with the kernel's release of cons (its (D)): we rewrite a slot
 *      only after the kernel has finished reading it.
 *  (B) pairs with the kernel's acquire of prod (its (C)): the kernel reads a
 *      slot, and the frame it names, only after we have written them.
 *  (C) and (D) are the same pairs with the roles swapped.
 *
 * Why not libxdp's accessors: its producer view offers the whole ring, and
 * the driver must never publish more than size - AFXDP_WINDOW slots (the
 * poisoned window that crash recovery scans, afxdp.c "Restart"); here the
 * producer's capacity is the ring less that window. And the driver binds to
 * the raw indices the kernel kept across a restart, which this view does in
 * xskq_bind, in the open.
 *
 * Crash safety: the cache is process-local and only ever lags the kernel
 * (each refresh is an acquire load of an index that only grows), so a stale
 * cache can make us see less room or fewer descriptors than there are,
 * never more: we never publish past the window, nor read an unpublished
 * slot. What a successor needs lives in the shared indices and slots alone,
 * and xskq_bind rebuilds the cache from them.
 */
#ifndef AFXDP_XSKQ_H
#define AFXDP_XSKQ_H

#include <errno.h>
#include <linux/if_xdp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "ipc/atomic.h"

struct xskq {
    _Atomic uint32_t *prod;
    _Atomic uint32_t *cons;
    _Atomic uint32_t *flags;
    void *slots;
    uint32_t size, mask;
    uint32_t cap;    /* producer: slots we may keep published (size less the lend window) */
    uint32_t head;   /* our private index: prod for fill/TX, cons for RX/completion */
    uint32_t cached; /* the kernel's index as last read: cons for fill/TX, prod for RX/completion */
    void *map;
    size_t map_len;
};

/**
 * Bind @q to a ring laid out at @base as @o says, of @size slots (a power of
 * two), continuing from the indices found there: a producer (@cap: at most
 * this many published) from prod, a consumer (@cap 0) from cons.
 */
static inline void xskq_bind(struct xskq *q, void *base, const struct xdp_ring_offset *o, uint32_t size, uint32_t cap)
{
    uint8_t *b = base;
    q->prod = (_Atomic uint32_t *)(b + o->producer);
    q->cons = (_Atomic uint32_t *)(b + o->consumer);
    q->flags = (_Atomic uint32_t *)(b + o->flags);
    q->slots = b + o->desc;
    q->size = size;
    q->mask = size - 1;
    q->cap = cap;
    if (cap) {
        q->head = ipc_ld_acq(q->prod);
        q->cached = ipc_ld_acq(q->cons); /* (A) */
    } else {
        q->head = ipc_ld_acq(q->cons);
        q->cached = q->head; /* "empty": the first peek reads prod */
    }
}

/** mmap the ring at @pgoff of the XSK @fd (slots of @slot bytes) and bind it. */
static inline int xskq_map(struct xskq *q, int fd, const struct xdp_ring_offset *o, uint32_t size, size_t slot,
                           off_t pgoff, uint32_t cap)
{
    q->map_len = o->desc + (size_t)size * slot;
    q->map = mmap(NULL, q->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, pgoff);
    if (q->map == MAP_FAILED) {
        q->map = NULL;
        return -errno;
    }
    xskq_bind(q, q->map, o, size, cap);
    return 0;
}

static inline void xskq_unmap(struct xskq *q)
{
    if (q->map)
        munmap(q->map, q->map_len);
    q->map = NULL;
}

/* ---- producer: fill, TX ------------------------------------------------- */

/** Producer: read the kernel's consumer index into the cache (A). */
static inline void xskq_prod_refresh(struct xskq *q)
{
    q->cached = ipc_ld_acq(q->cons); /* (A) pairs with the kernel's release of cons */
}

/**
 * Producer: slots we may still publish (the capacity less what is published
 * and not consumed), at least @want of them if they exist: the kernel's
 * index is read only when the cache shows fewer than @want.
 */
static inline uint32_t xskq_prod_free(struct xskq *q, uint32_t want)
{
    uint32_t used = q->head - q->cached;
    if (used < q->cap && q->cap - used >= want)
        return q->cap - used;
    xskq_prod_refresh(q);
    used = q->head - q->cached;
    return used < q->cap ? q->cap - used : 0;
}

/**
 * Producer: reserve up to @n slots from *idx = head; returns how many (0 when
 * full). Write them with xskq_addr/xskq_desc, then publish as many as were
 * written (any number up to that) with xskq_prod_submit.
 */
static inline uint32_t xskq_prod_reserve(struct xskq *q, uint32_t n, uint32_t *idx)
{
    uint32_t free = xskq_prod_free(q, n);
    *idx = q->head;
    return n < free ? n : free;
}

/** Producer: published slots the kernel has not consumed, as the cache says. */
static inline uint32_t xskq_prod_queued(const struct xskq *q)
{
    return q->head - q->cached;
}

/** Publish the @n slots written from head (reserved): one store-release (B). */
static inline void xskq_prod_submit(struct xskq *q, uint32_t n)
{
    q->head += n;
    ipc_st_rel(q->prod, q->head); /* (B) pairs with the kernel's acquire of prod */
}

/** Does the kernel ask for a syscall to look at this ring (XDP_USE_NEED_WAKEUP)? */
static inline bool xskq_needs_wakeup(const struct xskq *q)
{
    return (ipc_ld_rlx(q->flags) & XDP_RING_NEED_WAKEUP) != 0;
}

/* ---- consumer: RX, completion ------------------------------------------- */

/**
 * Consumer: descriptors waiting, at least @want of them if there are: the
 * kernel's producer index is read (C) only when the cache shows fewer.
 */
static inline uint32_t xskq_cons_avail(struct xskq *q, uint32_t want)
{
    uint32_t avail = q->cached - q->head;
    if (avail >= want)
        return avail;
    q->cached = ipc_ld_acq(q->prod); /* (C) pairs with the kernel's release of prod */
    return q->cached - q->head;
}

/**
 * Consumer: peek at up to @n descriptors from *idx = head; returns how many.
 * Read them, then hand them back with xskq_cons_release.
 */
static inline uint32_t xskq_cons_peek(struct xskq *q, uint32_t n, uint32_t *idx)
{
    uint32_t avail = xskq_cons_avail(q, n);
    *idx = q->head;
    return n < avail ? n : avail;
}

/** Consumer: hand the @n slots from head (peeked) back to the kernel: one store-release (D). */
static inline void xskq_cons_release(struct xskq *q, uint32_t n)
{
    q->head += n;
    ipc_st_rel(q->cons, q->head); /* (D) pairs with the kernel's acquire of cons */
}

/* ---- slots -------------------------------------------------------------- */

/** Fill and completion slots: a UMEM address. */
static inline uint64_t *xskq_addr(const struct xskq *q, uint32_t i)
{
    return (uint64_t *)q->slots + (i & q->mask);
}

/** RX and TX slots: a descriptor. */
static inline struct xdp_desc *xskq_desc(const struct xskq *q, uint32_t i)
{
    return (struct xdp_desc *)q->slots + (i & q->mask);
}

#endif
