/* SPDX-License-Identifier: MIT */
/*
 * services/router/neigh.h: the neighbour (ARP) table and ARP itself
 * (RFC 826). The table lives in its own shared-memory region, created by the
 * supervisor, so a restarted router starts with every neighbour resolved.
 * The router is its only writer once it runs; the supervisor writes static
 * entries (manifest) before the router starts, and `neigh show` reads entries
 * under a per-entry sequence lock.
 *
 * Each entry holds a bounded queue of packets waiting for the address to
 * resolve. The queued handles stay owned by the router's owner id, so when
 * the router dies the supervisor's ipc_pool_reclaim() frees them with the
 * rest of what it held; the handles left in the table are then stale, and
 * the next instance's rt_neigh_attach_router() forgets them (counting them
 * as drop_pending_restart) before it uses the table. Packets waiting for ARP
 * at a crash are lost (a few per unresolved next hop, at most RT_NEIGH_QMAX);
 * the alternative, handing them to the supervisor, would need a second owner
 * word per buffer for a case TCP recovers from anyway.
 *
 * States: incomplete (request sent, packets queue), reachable (confirmed by
 * a reply within reachable_ns), stale (usable; the first use sends a unicast
 * probe, and max_retries unanswered probes remove it), static (manifest,
 * never changed by ARP). Time is passed in (tests use a virtual clock).
 */
#ifndef RT_NEIGH_H
#define RT_NEIGH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/atomic.h"
#include "ipc/shm.h"
#include "rt.h"

#define RT_NEIGH_SHM_KIND IPC_SHM_NEIGH
#define RT_NEIGH_VERSION 0x4e420001u /* "NB" 1 */
#define RT_NEIGH_QMAX 16u

enum rt_neigh_state {
    RT_NEIGH_FREE = 0,
    RT_NEIGH_INCOMPLETE,
    RT_NEIGH_REACHABLE,
    RT_NEIGH_STALE,
    RT_NEIGH_STATIC,
};

struct rt_neigh_entry {
    _Atomic uint32_t seq; /* odd while the router rewrites the entry */
    uint32_t ip;          /* host byte order; 0 = free slot */
    uint8_t mac[6];
    uint16_t port;
    uint8_t state;   /* enum rt_neigh_state */
    uint8_t retries; /* requests or probes sent without an answer */
    uint16_t qlen;
    uint32_t pad;
    uint64_t confirmed_ns; /* last reply (or learning) */
    uint64_t probe_ns;     /* last request sent */
    uint64_t used_ns;      /* last forwarding use */
    ipc_buf q[RT_NEIGH_QMAX];
};

struct rt_neigh_shared {
    struct ipc_shm_hdr shm;
    _Alignas(IPC_CACHELINE) uint32_t cap; /* power of two */
    uint32_t count;
    uint32_t queued; /* packets in all pending queues */
};

struct rt_neigh {
    struct rt_neigh_shared *sh;
    struct rt_neigh_entry *e;
    uint32_t mask;
    size_t size;
};

/** Supervisor: create a table of @cap entries (rounded up to a power of two). */
int rt_neigh_create(const char *name, uint32_t cap, struct rt_neigh *nt, int *fd, struct ipc_err *err);

/** Map the table behind @fd (supervisor or `neigh show`). */
int rt_neigh_attach(struct rt_neigh *nt, int fd, struct ipc_err *err);

/**
 * Router start: map the table and forget the pending queues a previous
 * instance left (their buffers were reclaimed, see top), counting them in
 * @ctr. Returns 0 or -errno.
 */
int rt_neigh_attach_router(struct rt_neigh *nt, int fd, struct rt_counters *ctr, struct ipc_err *err);

void rt_neigh_detach(struct rt_neigh *nt);

/** Add or overwrite a static entry. Returns 0, -ENOSPC or -EINVAL. */
int rt_neigh_add_static(struct rt_neigh *nt, uint32_t ip, const uint8_t mac[6], uint16_t port);

/** Remove @ip (its queued packets are freed into @pool). Returns 0 or -ENOENT. */
int rt_neigh_del(struct rt_neigh *nt, struct ipc_pool *pool, uint32_t ip);

/** The entry for @ip, or NULL. */
struct rt_neigh_entry *rt_neigh_find(const struct rt_neigh *nt, uint32_t ip);

/** Consistent copy of slot @i for `neigh show`; false if the slot is free. */
bool rt_neigh_read(const struct rt_neigh *nt, uint32_t i, struct rt_neigh_entry *out);

static inline bool rt_neigh_usable(const struct rt_neigh_entry *e)
{
    return e && e->state >= RT_NEIGH_REACHABLE;
}

/* ---- router side ---- */

/**
 * A forwarding use of usable entry @e at @now: a stale entry gets one
 * unicast probe (appended to @tx).
 */
void rt_neigh_touch(struct rt_ctx *ctx, struct rt_neigh_entry *e, uint64_t now, struct rt_burst *tx);

/**
 * Hold packet @b (meta out_port set, not yet rewritten) until @ip on @port
 * resolves: creates an incomplete entry and broadcasts a request if there is
 * none. A full queue or table drops and counts @b.
 */
void rt_neigh_hold(struct rt_ctx *ctx, uint32_t ip, uint16_t port, ipc_buf b, uint64_t now, struct rt_burst *tx);

/**
 * An ARP frame @b arrived: learn, answer requests for the port's address in
 * place, release queued packets of a neighbour that resolved. Consumes @b.
 */
void rt_arp_input(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx);

/**
 * Timers: retransmit requests, give up on neighbours that never answered
 * (their packets get ICMP host unreachable), age reachable to stale, probe
 * and remove stale entries. Call every ~100 ms.
 */
void rt_neigh_tick(struct rt_ctx *ctx, uint64_t now, struct rt_burst *tx);

/** Build an ARP request for @tip out of @port (to @dmac, or broadcast if NULL). */
int rt_arp_request(struct rt_ctx *ctx, uint16_t port, uint32_t tip, const uint8_t *dmac, struct rt_burst *tx);

#endif
