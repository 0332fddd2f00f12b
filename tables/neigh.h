/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh.h: the neighbour (ARP) table, one shared-memory region created
 * by the supervisor, so a restarted router starts with every neighbour
 * resolved. The supervisor writes static entries (manifest) before the router
 * starts (tables/neigh_write.h); once it runs, the router is the only writer
 * (ARP learning, the pending queues, ageing: services/router/neigh.c), and
 * `neigh show` reads entries under a per-entry sequence lock.
 *
 * Each entry holds a bounded queue of packets waiting for the address to
 * resolve. The queued handles stay owned by the router's owner id, so when
 * the router dies the supervisor's ipc_pool_reclaim() frees them with the
 * rest of what it held; the handles left in the table are then stale, and
 * the next instance forgets them (rt_neigh_attach_router) before it uses the
 * table.
 *
 * Commands: the supervisor changes static entries while the router runs
 * (`ringrouter neigh add|replace|del|flush`) through a mailbox in page 0,
 * so the table keeps one writer. The mailbox serves the IPv6 table
 * (tables/neigh6.h) too: its ops (NEIGH_OP_*6) carry the address in ip6,
 * and the router applies them there. The supervisor writes op, ip (or ip6), port and mac,
 * then seq (release), and wakes the router; the router applies the command
 * within a loop, writes result (0 or an errno) and count, then ack = seq
 * (release). A router that starts with seq != ack applies the command its
 * predecessor left unanswered (add and flush are idempotent). Each word has
 * one writer, and the two writers' words sit on separate cache lines. The
 * router can write the whole region, so the supervisor keeps its own copy
 * of seq and takes ack, result and count only as what they can be, as it
 * does with a shaper's mailbox (tables/shaper.h).
 *
 * States: incomplete (request sent, packets queue), reachable (confirmed by
 * a reply within reachable_ns), stale (usable; the first use sends a unicast
 * probe, and max_retries unanswered probes remove it), static (manifest,
 * never changed by ARP). When the table is full, the router evicts an
 * incomplete entry to make room for a new one, never a complete one
 * (services/router/neigh.c).
 */
#ifndef TABLES_NEIGH_H
#define TABLES_NEIGH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/atomic.h"
#include "ipc/pool.h"
#include "ipc/shm.h"

#define NEIGH_SHM_KIND IPC_SHM_NEIGH
#define NEIGH_VERSION 0x4e420004u /* "NB" 4: queues of 128 packets */
/* A neighbour's pending queue: what a new flow sends during the ARP round
 * trip (two wake-ups of the port's driver and one of the router) waits
 * here, and a busy machine makes that trip long. Linux holds 200 KiB of
 * packets (unres_qlen_bytes): a hundred full frames, more small ones;
 * 128 are 64 ms of a flow of 2,000 packets a second. The router bounds it
 * by the port's share too (rt_neigh_qlimit). */
#define NEIGH_QMAX 128u
#define NEIGH_HDR_BYTES 4096u /* page 0: struct neigh_shared; the entries follow */

enum neigh_state {
    NEIGH_FREE = 0,
    NEIGH_INCOMPLETE,
    NEIGH_REACHABLE,
    NEIGH_STALE,
    NEIGH_STATIC,
};

struct neigh_entry {
    _Atomic uint32_t seq; /* odd while the router rewrites the entry */
    uint32_t ip;          /* host byte order; 0 = free slot */
    uint8_t mac[6];
    uint16_t port;
    uint8_t state;   /* enum neigh_state */
    uint8_t retries; /* requests or probes sent without an answer */
    uint16_t qlen;
    uint32_t pad;
    uint64_t confirmed_ns; /* last reply (or learning) */
    uint64_t probe_ns;     /* last request sent */
    uint64_t used_ns;      /* last forwarding use */
    ipc_buf q[NEIGH_QMAX];
};

enum neigh_op {
    NEIGH_OP_ADD = 1, /* a static entry; refused (EEXIST) over a static one with another MAC or port */
    NEIGH_OP_REPLACE, /* a static entry, whatever was there */
    NEIGH_OP_DEL,     /* remove the entry, whatever its state (ENOENT: none) */
    NEIGH_OP_FLUSH,   /* remove every entry that is not static; count says how many */
    NEIGH_OP_ADD6,    /* the same three for the IPv6 table, the address in ip6 */
    NEIGH_OP_REPLACE6,
    NEIGH_OP_DEL6,
};

struct neigh_mbox {
    /* Written by the supervisor. */
    _Alignas(IPC_CACHELINE) _Atomic uint64_t seq;
    _Atomic uint64_t op;   /* enum neigh_op */
    _Atomic uint64_t ip;   /* host byte order */
    _Atomic uint64_t port;
    _Atomic uint64_t mac;  /* mac[i] in bits 8i..8i+7 */
    _Atomic uint64_t ip6[2]; /* IPv6 ops: bytes 0..7 and 8..15 of the address, big-endian (neigh_ip6_pack) */
    /* Written by the router. */
    _Alignas(IPC_CACHELINE) _Atomic uint64_t ack;
    _Atomic uint64_t result; /* 0 or an errno */
    _Atomic uint64_t count;  /* flush: entries removed; del: packets that were waiting */
};

struct neigh_shared {
    struct ipc_shm_hdr shm;
    _Alignas(IPC_CACHELINE) uint32_t cap; /* power of two */
    uint32_t count;
    uint32_t queued; /* packets in all pending queues */
    struct neigh_mbox cmd;
};
_Static_assert(sizeof(struct neigh_shared) <= NEIGH_HDR_BYTES, "the header and mailbox fit page 0");

static inline uint64_t neigh_mac_pack(const uint8_t mac[6])
{
    uint64_t v = 0;
    for (int i = 0; i < 6; i++)
        v |= (uint64_t)mac[i] << (8 * i);
    return v;
}

static inline void neigh_ip6_pack(const uint8_t ip[16], uint64_t w[2])
{
    w[0] = w[1] = 0;
    for (int i = 0; i < 16; i++)
        w[i / 8] = w[i / 8] << 8 | ip[i];
}

static inline void neigh_ip6_unpack(const uint64_t w[2], uint8_t ip[16])
{
    for (int i = 0; i < 16; i++)
        ip[i] = (uint8_t)(w[i / 8] >> (56 - 8 * (i % 8)));
}

static inline void neigh_mac_unpack(uint64_t v, uint8_t mac[6])
{
    for (int i = 0; i < 6; i++)
        mac[i] = (uint8_t)(v >> (8 * i));
}

struct neigh_table {
    struct neigh_shared *sh;
    struct neigh_entry *e;
    uint32_t mask;
    size_t size;
};

/** Map the table behind @fd (the router, or the supervisor for `neigh show`). */
int neigh_attach(struct neigh_table *nt, int fd, struct ipc_err *err);

void neigh_detach(struct neigh_table *nt);

/** The entry for @ip, or NULL. */
struct neigh_entry *neigh_find(const struct neigh_table *nt, uint32_t ip);

/* Retries one `neigh show` may spend on entries that do not hold still. */
#define NEIGH_READ_BUDGET 100000u

/**
 * Consistent copy of slot @i for `neigh show`: 1 with @out filled, 0 if the
 * slot is free, -EBUSY if it was being rewritten and did not hold still
 * before *@budget ran out. A read that finds the entry still costs nothing;
 * each retry costs one from *@budget, which the caller shares over the whole
 * table, so a router that keeps every sequence odd (or died in a write) costs
 * one `neigh show` NEIGH_READ_BUDGET retries, not that many per entry.
 */
int neigh_read(const struct neigh_table *nt, uint32_t i, struct neigh_entry *out, uint32_t *budget);

static inline bool neigh_usable(const struct neigh_entry *e)
{
    return e && e->state >= NEIGH_REACHABLE;
}

/* ---- updates (the router at run time; the supervisor before it starts) ---- */

/* Seqlock for `neigh show`: odd while an entry (either family's) changes. */
static inline void neigh_seq_begin(_Atomic uint32_t *seq)
{
    ipc_st_rlx(seq, ipc_ld_rlx(seq) + 1);
    atomic_thread_fence(memory_order_release);
}

static inline void neigh_seq_end(_Atomic uint32_t *seq)
{
    ipc_st_rel(seq, ipc_ld_rlx(seq) + 1);
}

static inline void neigh_wbegin(struct neigh_entry *e)
{
    neigh_seq_begin(&e->seq);
}

static inline void neigh_wend(struct neigh_entry *e)
{
    neigh_seq_end(&e->seq);
}

/** A new, empty entry for @ip (which must be absent), or NULL when the table is 3/4 full. */
struct neigh_entry *neigh_insert(struct neigh_table *nt, uint32_t ip);

/** Remove entry @e (its queue must be empty or already accounted for). */
void neigh_remove(struct neigh_table *nt, struct neigh_entry *e);

/** Remove @ip (its queued packets are freed into @pool). Returns 0 or -ENOENT. */
int neigh_del(struct neigh_table *nt, struct ipc_pool *pool, uint32_t ip);

/* The table's hash (tables/neigh.c). */
uint32_t neigh_impl_hash(uint32_t ip);

#endif
