/* SPDX-License-Identifier: MIT */
/*
 * ipc/ring.h: single-producer single-consumer rings of buffer handles in
 * shared memory. One ring per edge of the service graph, each in its own
 * memfd, mapped by its two ends only. The producer and the consumer each
 * keep a private copy of their own index and a cached copy of the other
 * side's, so the shared indices are read only when the cache says "full" or
 * "empty", and written once per batch.
 *
 * The verbs are libxdp's, with its meaning, as in drivers/afxdp/xskq.h:
 * the producer reserves slots (nothing moves), writes them, and submits
 * (its index moves and is published); the consumer peeks (nothing moves),
 * reads, and releases (its index moves and is published).
 *
 * Shared memory is input in both directions: the other side's index is
 * whatever its process wrote, so it is checked against the ring's size
 * before any arithmetic uses it, as xskq.h checks the kernel's. An index
 * more than a ring away from our own private one is a lie, which no sound
 * peer tells: we give it no room and show nothing, count it on our own
 * line (prod_lie, cons_lie), store our own index again in case the liar
 * wrote over it too, and never write the liar's. The supervisor sees the
 * count in its health tick, restarts the liar, and puts the liar's index
 * back once it is dead (supervisor/policy.c). The producer's owner id, which
 * the consumer checks every handle against, is the consumer's private copy,
 * taken at attach, never the header's.
 *
 *  producer                          consumer
 *  LOAD.acq  cons          (A)       LOAD.acq  prod          (C)
 *  STORE     slots[prod..]           LOAD      slots[cons..]
 *  STORE.rel prod          (B)       STORE.rel cons          (D)
 *
 *  (A) pairs with (D): the producer reuses a slot only after the consumer
 *      has finished reading it.
 *  (B) pairs with (C): the consumer reads a slot only after the producer
 *      has finished writing it (and the buffer metadata it names).
 *
 * Indices are free-running uint32_t, masked on access; prod - cons is the
 * occupancy even across the 2^32 wrap. The wake-up protocol on top of this
 * is in ipc/wake.h.
 */
#ifndef IPC_RING_H
#define IPC_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic.h"
#include "shm.h"

typedef uint32_t ipc_buf;
#define IPC_BUF_NONE UINT32_MAX

#define IPC_RING_VERSION 1
#define IPC_RING_MIN 2u
#define IPC_RING_MAX (1u << 24)

/* Counters a single writer bumps without a locked instruction. */
#define ipc_count(p, n) ipc_st_rlx((p), ipc_ld_rlx(p) + (n))

/*
 * The shared part. Each group that one side writes sits on its own cache
 * line, so a producer publishing never invalidates the line the consumer
 * writes, and the wake word (written by both, rarely) disturbs neither.
 */
struct ipc_ring_shared {
    struct ipc_shm_hdr shm;
    /* Immutable after creation. */
    _Alignas(IPC_CACHELINE) uint32_t size;
    uint32_t mask;
    uint32_t id;         /* supervisor's ring number, for stats */
    uint16_t prod_owner; /* pool owner id of the producer's service */
    uint16_t cons_owner; /* pool owner id of the consumer's service */

    /* Producer's line: its index and the counters only it writes. */
    _Alignas(IPC_CACHELINE) _Atomic uint32_t prod;
    _Atomic uint64_t enq_handles; /* handles published */
    _Atomic uint64_t enq_bytes;   /* packet bytes published, if the producer counts them */
    _Atomic uint64_t full_drops;  /* handles the producer could not place: ring full */
    _Atomic uint64_t wake_sent;   /* eventfd writes for this ring */
    _Atomic uint64_t cons_lie;    /* reads of cons more than a ring away from prod: the consumer lied */

    /* Consumer's line. */
    _Alignas(IPC_CACHELINE) _Atomic uint32_t cons;
    _Atomic uint64_t sleeps;          /* times the consumer armed the wake word and blocked */
    _Atomic uint64_t drop_bad_handle; /* index out of range */
    _Atomic uint64_t drop_bad_owner;  /* buffer not owned by this ring's producer */
    _Atomic uint64_t drop_bad_frame;  /* offset or length outside the frame */
    _Atomic uint64_t drop_bad_chain;  /* chain too long, looping, or with a bad frame */
    _Atomic uint64_t prod_lie;        /* reads of prod more than a ring away from cons: the producer lied */

    /*
     * Wake word: 0 = the consumer is running; 1 = it sleeps and wants an
     * eventfd write once a handle is waiting. Written by the consumer to
     * arm, and cleared by whoever sends the wake-up.
     */
    _Alignas(IPC_CACHELINE) _Atomic uint32_t need_wake;

    _Alignas(IPC_CACHELINE) uint32_t slots[];
};

_Static_assert(offsetof(struct ipc_ring_shared, size) == 64, "ring: immutable fields on line 1");
_Static_assert(offsetof(struct ipc_ring_shared, prod) == 128, "ring: producer line");
_Static_assert(offsetof(struct ipc_ring_shared, cons) == 192, "ring: consumer line");
_Static_assert(offsetof(struct ipc_ring_shared, need_wake) == 256, "ring: wake line");
_Static_assert(offsetof(struct ipc_ring_shared, slots) == 320, "ring: slots after the wake line");

/*
 * A ring as its creator knows it: the shared header, and a private copy of
 * the geometry and owners it wrote there. The header is writable by the
 * ring's two ends, so code that must not trust them (the supervisor's reclaim
 * and census) reads the copy, and ipc_ring_ref_repair() puts the header back.
 * Take the copy when the ring is created, before any service maps it.
 */
struct ipc_ring_ref {
    struct ipc_ring_shared *sh;
    struct ipc_shm_hdr shm; /* what a service checks when it maps the ring */
    uint32_t size;          /* a power of two; the slot array's length */
    uint16_t prod_owner, cons_owner;
    char name[40]; /* for the supervisor's log lines: not the header's, which the ends can rewrite */
};

static inline struct ipc_ring_ref ipc_ring_ref_take(struct ipc_ring_shared *sh)
{
    struct ipc_ring_ref r = {
        .sh = sh, .shm = sh->shm, .size = sh->size, .prod_owner = sh->prod_owner, .cons_owner = sh->cons_owner};
    for (size_t i = 0; i + 1 < sizeof(r.name) && i < sizeof(sh->shm.name) && sh->shm.name[i]; i++)
        r.name[i] = sh->shm.name[i] >= 0x20 && sh->shm.name[i] < 0x7f ? sh->shm.name[i] : '?';
    return r;
}

/**
 * Rewrite @r's immutable header fields from the private copy if someone
 * changed them. Returns true if they had been changed (corruption, to count
 * and log), false if they were intact.
 */
bool ipc_ring_ref_repair(const struct ipc_ring_ref *r);

/** Unmap @r's ring by the size it was created with, never by its header's. */
void ipc_ring_ref_detach(const struct ipc_ring_ref *r);

/* Producer end, private to the producing process. Do not touch the fields. */
struct ipc_ring_prod {
    struct ipc_ring_shared *sh;
    uint32_t *slots;
    uint32_t mask;
    uint32_t size;
    uint32_t head;        /* next slot to reserve; the value last stored to sh->prod */
    uint32_t cached_cons; /* last value read from sh->cons */
    int wake_fd;          /* the consumer's eventfd, or -1 */
};

/* Consumer end, private to the consuming process. */
struct ipc_ring_cons {
    struct ipc_ring_shared *sh;
    uint32_t *slots;
    uint32_t mask;
    uint32_t size;
    uint32_t head;        /* next slot to peek; the value last stored to sh->cons */
    uint32_t cached_prod; /* last value read from sh->prod */
    uint16_t from;        /* the producer's pool owner id: the handles' owner (ipc_ring_recv) */
};

static inline size_t ipc_ring_region_size(uint32_t size)
{
    return sizeof(struct ipc_ring_shared) + (size_t)size * sizeof(uint32_t);
}

/**
 * Create a ring of @size slots (a power of two, IPC_RING_MIN..IPC_RING_MAX)
 * in a new memfd. @start seeds both indices (tests start near UINT32_MAX to
 * cross the wrap). Returns 0 with *fd and *sh set, or -errno with @err.
 */
int ipc_ring_create(const char *name, uint32_t size, uint32_t id, uint16_t prod_owner, uint16_t cons_owner,
                    uint32_t start, int *fd, struct ipc_ring_shared **sh, struct ipc_err *err);

/** Map a ring created by ipc_ring_create() and check its header and size. */
int ipc_ring_attach(int fd, struct ipc_ring_shared **sh, struct ipc_err *err);

/** Unmap by the header's recorded size: a service's own ring at exit (see ipc_ring_ref_detach). */
void ipc_ring_detach(struct ipc_ring_shared *sh);

/**
 * Bind a producer end to a mapped ring, continuing from the published index
 * (a restarted producer picks up where its predecessor published).
 * @wake_fd is the consumer's eventfd, or -1 for a consumer that never sleeps.
 */
void ipc_ring_prod_init(struct ipc_ring_prod *p, struct ipc_ring_shared *sh, int wake_fd);

/**
 * Bind a consumer end, continuing from the released index. The producer's
 * owner id is copied from the header as it is now (a service passes the
 * supervisor's sealed copy instead: ipc_ring_cons_from).
 */
void ipc_ring_cons_init(struct ipc_ring_cons *c, struct ipc_ring_shared *sh);

/** The producer's owner id that every handle from @c must carry, from a source the producer cannot write. */
static inline void ipc_ring_cons_from(struct ipc_ring_cons *c, uint16_t from)
{
    c->from = from;
}

/* The peer's index was a lie: count it on our own line and publish
 * our own index again, in case the liar wrote over it as well. Out of line:
 * the data path never comes here from a sound peer. */
void ipc_ring_prod_lied(struct ipc_ring_prod *p);
void ipc_ring_cons_lied(struct ipc_ring_cons *c);

/* Free slots as the cache says: none if the consumer's index is more than a
 * ring away from ours, which no sound consumer writes. */
static inline uint32_t ipc_ring_free_cached(const struct ipc_ring_prod *p)
{
    uint32_t used = p->head - p->cached_cons;
    return used <= p->size ? p->size - used : 0;
}

/**
 * Free slots, at least @want of them if they exist: the shared consumer index
 * is read (A) only when the cached one shows fewer than @want.
 */
static inline uint32_t ipc_ring_free_count(struct ipc_ring_prod *p, uint32_t want)
{
    uint32_t free = ipc_ring_free_cached(p);
    if (free >= want)
        return free;
    p->cached_cons = ipc_ld_acq(&p->sh->cons); /* (A) pairs with (D) */
    if (ipc_unlikely(p->head - p->cached_cons > p->size))
        ipc_ring_prod_lied(p);
    return ipc_ring_free_cached(p);
}

/**
 * Reserve up to @n slots from *idx = head; returns how many (0 when full).
 * Nothing moves: write them with ipc_ring_prod_slot(), then publish as many
 * as were written (any number up to that) with ipc_ring_submit().
 */
static inline uint32_t ipc_ring_reserve(struct ipc_ring_prod *p, uint32_t n, uint32_t *idx)
{
    uint32_t free = ipc_ring_free_count(p, n);
    *idx = p->head;
    return n < free ? n : free;
}

static inline uint32_t *ipc_ring_prod_slot(struct ipc_ring_prod *p, uint32_t idx)
{
    return &p->slots[idx & p->mask];
}

/** Publish the @n slots written from head (reserved): one store-release for the batch (B). */
static inline void ipc_ring_submit(struct ipc_ring_prod *p, uint32_t n)
{
    p->head += n;
    ipc_st_rel(&p->sh->prod, p->head); /* (B) pairs with (C) */
    ipc_count(&p->sh->enq_handles, n);
}

/* Handles waiting as the cache says: none if the producer's index is more
 * than a ring ahead of ours, which no sound producer writes. */
static inline uint32_t ipc_ring_avail_cached(const struct ipc_ring_cons *c)
{
    uint32_t avail = c->cached_prod - c->head;
    return avail <= c->size ? avail : 0;
}

/**
 * Handles waiting, at least @want of them if there are: the shared producer
 * index is read (C) only when the cached one shows fewer than @want.
 */
static inline uint32_t ipc_ring_avail(struct ipc_ring_cons *c, uint32_t want)
{
    uint32_t avail = ipc_ring_avail_cached(c);
    if (avail >= want)
        return avail;
    c->cached_prod = ipc_ld_acq(&c->sh->prod); /* (C) pairs with (B) */
    if (ipc_unlikely(c->cached_prod - c->head > c->size))
        ipc_ring_cons_lied(c);
    return ipc_ring_avail_cached(c);
}

/**
 * Peek at up to @n handles from *idx = head; returns how many. Nothing
 * moves: read them with ipc_ring_cons_slot(), then hand back as many as
 * were read with ipc_ring_release().
 */
static inline uint32_t ipc_ring_peek(struct ipc_ring_cons *c, uint32_t n, uint32_t *idx)
{
    uint32_t avail = ipc_ring_avail(c, n);
    *idx = c->head;
    return n < avail ? n : avail;
}

static inline uint32_t ipc_ring_cons_slot(const struct ipc_ring_cons *c, uint32_t idx)
{
    return c->slots[idx & c->mask];
}

/** Hand the @n slots from head (peeked) back to the producer: one store-release (D). */
static inline void ipc_ring_release(struct ipc_ring_cons *c, uint32_t n)
{
    c->head += n;
    ipc_st_rel(&c->sh->cons, c->head); /* (D) pairs with (A) */
}

/**
 * Enqueue as many of @bufs as fit (up to @n); returns the number enqueued.
 * The rest stay the caller's, neither dropped nor counted here: a driver
 * keeps a backlog, a service drops and counts them. Ownership does not
 * change on the way in; the consumer re-owns each buffer as it takes it
 * (ipc_ring_recv, ipc/pool.h).
 */
static inline uint32_t ipc_ring_enq_burst(struct ipc_ring_prod *p, const ipc_buf *bufs, uint32_t n)
{
    uint32_t idx;
    n = ipc_ring_reserve(p, n, &idx);
    /* Locals: with -fno-strict-aliasing the compiler would otherwise reload
     * slots and mask from *p after every store. At most two runs: up to the
     * end of the array, then from its start. */
    uint32_t *slots = p->slots, mask = p->mask, first = idx & mask;
    uint32_t run = n < p->size - first ? n : p->size - first;
    for (uint32_t i = 0; i < run; i++)
        slots[first + i] = bufs[i];
    for (uint32_t i = run; i < n; i++)
        slots[i - run] = bufs[i];
    if (n)
        ipc_ring_submit(p, n);
    return n;
}

/** Handles in the ring as the shared indices say now: prod - cons, more than the size if an end lied. */
static inline uint32_t ipc_ring_count(const struct ipc_ring_shared *sh)
{
    uint32_t cons = ipc_ld_acq(&((struct ipc_ring_shared *)sh)->cons);
    uint32_t prod = ipc_ld_acq(&((struct ipc_ring_shared *)sh)->prod);
    return prod - cons;
}

/**
 * The same for display (stats), for a ring of @size slots (the size its
 * reader keeps, not the header's): never more than @size. Indices further
 * apart than that are a lie, shown as a full ring.
 */
static inline uint32_t ipc_ring_occupancy(const struct ipc_ring_shared *sh, uint32_t size)
{
    uint32_t n = ipc_ring_count(sh);
    return n <= size ? n : size;
}

#endif
