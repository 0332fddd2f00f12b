/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh6.h: the IPv6 neighbour table (RFC 4861 §5.1, the neighbour
 * cache), the IPv4 table's sibling (tables/neigh.h) with the same rules:
 * one shared-memory region created by the supervisor, static entries from
 * the manifest written before the router starts (tables/neigh6_write.h),
 * the router the only writer once it runs (services/router/nd.c; the
 * supervisor's `neigh add|replace|del` reach it through the IPv4 table's
 * mailbox, tables/neigh.h, as NEIGH_OP_*6), and
 * `neigh show` reading entries under a per-entry sequence lock. Each entry
 * holds a bounded queue of packets waiting for resolution, owned by the
 * router's owner id (a successor forgets them: rt_nd_attach_router).
 *
 * A sibling rather than a wider IPv4 table: a 16-byte key would make every
 * IPv4 entry, probe and hash wider for nothing, and the two protocols'
 * states differ (Neighbor Unreachability Detection has DELAY and PROBE).
 *
 * States (RFC 4861 §7.3.2): incomplete (solicitation sent, packets queue),
 * reachable (confirmed within reachable_ns), stale (usable, unconfirmed),
 * delay (used while stale: wait delay_ns for upper-layer confirmation, which
 * the router never has, then probe), probe (unicast solicitations, every
 * retrans_ns, max_retries of them, then the entry goes), static (manifest).
 */
#ifndef TABLES_NEIGH6_H
#define TABLES_NEIGH6_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ipc/atomic.h"
#include "ipc/pool.h"
#include "ipc/shm.h"
#include "tables/neigh.h" /* NEIGH_QMAX, NEIGH_HDR_BYTES, NEIGH_READ_BUDGET, neigh_seq_begin */

#define NEIGH6_SHM_KIND IPC_SHM_NEIGH6
#define NEIGH6_VERSION 0x4e360003u /* "N6" 3: queues of NEIGH_QMAX (128) packets */

enum neigh6_state {
    NEIGH6_FREE = 0,
    NEIGH6_INCOMPLETE,
    NEIGH6_REACHABLE,
    NEIGH6_STALE,
    NEIGH6_DELAY,
    NEIGH6_PROBE,
    NEIGH6_STATIC,
};

struct neigh6_entry {
    _Atomic uint32_t seq; /* odd while the router rewrites the entry */
    uint8_t used;         /* 0 = free slot */
    uint8_t state;        /* enum neigh6_state */
    uint8_t retries;      /* solicitations sent without an answer */
    uint8_t is_router;    /* the last advertisement's R flag */
    uint8_t ip[16];       /* network byte order */
    uint8_t mac[6];
    uint16_t port;
    uint16_t qlen;
    uint16_t pad;
    uint64_t confirmed_ns; /* last reachability confirmation (solicited advertisement) */
    uint64_t probe_ns;     /* last solicitation sent, or when DELAY began */
    uint64_t used_ns;      /* last forwarding use */
    ipc_buf q[NEIGH_QMAX];
};

struct neigh6_shared {
    struct ipc_shm_hdr shm;
    _Alignas(IPC_CACHELINE) uint32_t cap; /* power of two */
    uint32_t count;
    uint32_t queued; /* packets in all pending queues */
};

struct neigh6_table {
    struct neigh6_shared *sh;
    struct neigh6_entry *e;
    uint32_t mask;
    size_t size;
};

/** Map the table behind @fd (the router, or the supervisor for `neigh show`). */
int neigh6_attach(struct neigh6_table *nt, int fd, struct ipc_err *err);

void neigh6_detach(struct neigh6_table *nt);

/* The table's hash (writer and readers alike). The interface identifier
 * varies most; all four words count. Folded before the one multiply, not
 * mixed word by word: four dependent multiplies were most of a forwarded
 * packet's lookup. */
static inline uint32_t neigh6_impl_hash(const uint8_t *ip)
{
    uint64_t lo, hi;
    memcpy(&lo, ip, 8);
    memcpy(&hi, ip + 8, 8);
    uint64_t w = lo ^ hi;
    uint32_t h = ((uint32_t)w ^ (uint32_t)(w >> 32)) * 0x9e3779b1u;
    return h ^ (h >> 16);
}

/** The entry for @ip (16 bytes), or NULL. Inline: once per forwarded packet. */
static inline struct neigh6_entry *neigh6_find(const struct neigh6_table *nt, const uint8_t *ip)
{
    uint64_t lo, hi;
    memcpy(&lo, ip, 8);
    memcpy(&hi, ip + 8, 8);
    for (uint32_t i = neigh6_impl_hash(ip) & nt->mask, k = 0; k <= nt->mask; i = (i + 1) & nt->mask, k++) {
        struct neigh6_entry *e = &nt->e[i];
        if (!e->used)
            return NULL;
        uint64_t elo, ehi;
        memcpy(&elo, e->ip, 8);
        memcpy(&ehi, e->ip + 8, 8);
        if (((elo ^ lo) | (ehi ^ hi)) == 0)
            return e;
    }
    return NULL;
}

/**
 * Consistent copy of slot @i for `neigh show`, as neigh_read: 1 with @out
 * filled, 0 if free, -EBUSY when it did not hold still within *@budget.
 */
int neigh6_read(const struct neigh6_table *nt, uint32_t i, struct neigh6_entry *out, uint32_t *budget);

static inline bool neigh6_usable(const struct neigh6_entry *e)
{
    return e && e->state >= NEIGH6_REACHABLE;
}

static inline void neigh6_wbegin(struct neigh6_entry *e)
{
    neigh_seq_begin(&e->seq);
}

static inline void neigh6_wend(struct neigh6_entry *e)
{
    neigh_seq_end(&e->seq);
}

/** A new, empty entry for @ip (absent), or NULL when the table is 3/4 full. */
struct neigh6_entry *neigh6_insert(struct neigh6_table *nt, const uint8_t *ip);

/** Remove entry @e (its queue must be empty or already accounted for). */
void neigh6_remove(struct neigh6_table *nt, struct neigh6_entry *e);

#endif
