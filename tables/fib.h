/* SPDX-License-Identifier: MIT */
/*
 * tables/fib.h: the IPv4 forwarding table, a DIR-24-8 longest-prefix
 * match in shared memory. The supervisor is the only writer (manifest
 * routes, connected routes, `ringrouter route add|del`); each router
 * instance maps the tables read-only and looks up bursts of addresses. The
 * prefix list and the next-hop table live in the same region, so `route
 * show` reads them back from there.
 *
 * Two regions. The tables' region is sealed against writes once the
 * supervisor has it mapped (ipc_shm_seal_writes): no process can map it
 * writable or write() it again, even one that opens a router's fd through
 * /proc, so no service can rewrite a route, nor the words the supervisor
 * follows as indices when it writes. The readers' region (struct
 * fib_shared: the generation counter and one slot per router instance) is
 * the only part a reader writes; the writer only compares what it reads
 * there.
 *
 * The tables' region (each part page-aligned):
 *   page 0   the shm header.
 *   page 1   struct fib_layout: sizes, offsets and the writer's state.
 *   tbl24    2^24 x uint32_t entries, indexed by the address's top 24 bits.
 *   tbl8     tbl8_groups x 256 x uint32_t, one group per /24 that holds a
 *            prefix longer than 24 bits.
 *   nh       max_nh x uint64_t packed next hops {gw, port, flags}.
 *   mp       next-hop groups (ECMP), FIB_MP_WORDS words each: a route with
 *            several next hops names a header next hop (flags
 *            FIB_NH_F_GROUP, gw the group's index) whose group lists its
 *            members and maps 256 hash buckets onto them by weight
 *            (tables/fib_group.h).
 *   writer   next-hop refcounts, prefix hash, next-hop hash, free stacks and
 *            retire queues; readers never look at them.
 *
 * Entry: bit 31 valid, bit 30 "points to a tbl8 group" (tbl24 only), bits
 * 24..29 the length of the prefix that wrote it, bits 0..23 the next-hop
 * index (or the group index). Keeping the length in the entry lets an add
 * overwrite only entries of shorter prefixes and a delete find exactly the
 * entries its prefix wrote, which it rewrites with the covering prefix's.
 *
 * Why a reader never sees a torn or impossible next hop:
 *  - Every entry and every next hop is one naturally aligned word, written
 *    with one atomic store, so a lookup reads the old or the new value.
 *  - A new tbl8 group is filled completely, then published with one release
 *    store of its tbl24 entry (W1); the reader loads tbl24 with acquire (R1),
 *    so it sees the group's contents. A next hop is written before any entry
 *    naming it is stored (release), and entries are loaded with acquire.
 *  - A group (or next hop) that is unlinked is not reused until no reader can
 *    still hold the old link. Readers announce themselves per batch
 *    (fib_read_begin: slot = gen; fence_sc (R2) ... fib_read_end:
 *    slot = 0). The writer unlinks, then bumps gen (seq_cst) to R and
 *    records R with the object, and reuses the object only when every slot
 *    reads 0 or >= R after its own fence_sc (W2). A reader whose slot is
 *    >= R loaded gen after the unlink, so its loads see the unlink; a slot
 *    the writer reads as 0 is outside a batch, or its announcement is ordered
 *    after the writer's fence (R2/W2 are the Dekker pair), so its lookups
 *    too see the unlink. A batch of updates may share one bump
 *    (fib_gen_defer): each object is stamped with the generation that bump
 *    will make, and the bump follows every unlink of the batch; until it no
 *    slot can read >= the stamp, so only slots at 0 let the object be
 *    reused, as above. A reader that dies inside a batch would pin its
 *    slot: the supervisor resets it (fib_reader_reset) as it reclaims the
 *    dead router (supervisor/policy.c), and the next instance's attach
 *    clears it again.
 *
 * Groups keep the same guarantees: a group is written whole before its
 * header next hop, and the header before any entry naming it (one release
 * store publishes the lot); a group never changes during its life (a route
 * changes its members by naming another group); its header's last reference
 * retires the header, the group and the group's references on its members
 * with one stamp, so none is reused while a reader may still hold it; and
 * the writer checks every group index, member index and count it reads
 * back (tables/fib_group.c).
 *
 * Writer crashes: each update sets `dirty` first and clears it last. A
 * supervisor that finds a dirty FIB on attach (-EUCLEAN) builds a fresh
 * region from its routes; readers were never affected. The writer checks
 * every index it reads back from the region before it follows it, as the
 * IPv6 FIB's does (tables/fib6.h; the checks are fib_common.c's): a failed
 * one stops the update with -EUCLEAN and leaves the FIB dirty.
 */
#ifndef TABLES_FIB_H
#define TABLES_FIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/atomic.h"
#include "ipc/shm.h"

#define FIB_VERSION 0x46420003u /* "FB" 3: next-hop groups (tables/fib_group.h) */
#define FIB_READERS_VERSION 1u
#define FIB_MAX_READERS 16u
#define FIB_WRITER (-1)
#define FIB_ROUTER_SLOT 0u /* every router instance's: one runs at a time (services/router/main.c) */
#define FIB_MISS UINT32_MAX
#define FIB_MAX_NH (1u << 24)

#define FIB_E_VALID 0x80000000u
#define FIB_E_EXT 0x40000000u
#define FIB_E_IDX 0x00ffffffu

/* A next hop: egress port and gateway; gw 0 = directly connected. */
struct fib_nh {
    uint32_t gw; /* host byte order */
    uint16_t port;
    uint16_t flags; /* reserved, 0 */
};

struct fib_params {
    uint32_t max_prefixes; /* default 1,100,000 */
    uint32_t tbl8_groups;  /* default 65,536 (64 MB) */
    uint32_t max_nh;       /* default 65,536 */
};

struct fib_reader_slot {
    _Alignas(IPC_CACHELINE) _Atomic uint64_t active; /* 0: outside a batch; else gen at batch start */
};

struct fib_shared {
    struct ipc_shm_hdr shm;
    _Alignas(IPC_CACHELINE) _Atomic uint64_t gen; /* starts at 1; bumped when something is unlinked */
    struct fib_reader_slot reader[FIB_MAX_READERS];
};
_Static_assert(sizeof(struct fib_shared) <= 4096, "the readers' region is one page");

struct fib_layout; /* tables/fib_impl.h: one layout for both families */

/* The writer's bounds, in its own memory: what every index it reads back
 * from the region is checked against. Set at create; unused by readers. */
struct fib_limits {
    uint32_t max_prefixes, tbl8_groups, max_nh;
    uint32_t pfx_mask, nhh_mask;
    uint32_t mp_groups, mph_mask; /* next-hop groups (tables/fib_group.h) */
};

/*
 * Process-local view of a FIB region, either family: the IPv4 FIB and the
 * IPv6 FIB (tables/fib6.h) are mapped, sized, attached and recycled by the
 * same code (tables/fib.c, fib_common.c); only the entries' meaning and
 * the lookups differ.
 */
struct fib_map {
    struct fib_shared *sh; /* the readers' region */
    size_t sh_size;
    struct fib_layout *lay;
    _Atomic uint32_t *tbl24;
    _Atomic uint32_t *tbl8;
    _Atomic uint64_t *nh; /* the family's words per next hop */
    _Atomic uint32_t *mp; /* next-hop groups, FIB_MP_WORDS words each (tables/fib_group.h) */
    void *base;
    size_t size;
    struct fib_reader_slot *slot; /* readers only */
    struct fib_limits lim;        /* writer only */
    uint64_t corrupt;             /* writer only: bounds checks that failed */
    uint8_t *pfx;                 /* writer only: the prefix hash's slots (fib_prefetch) */
    bool gen_defer;               /* writer only: retirements wait for one switch (fib_gen_defer) */
    bool gen_pending;             /* writer only: a retirement waits for that switch */
};

/* An IPv4 FIB, as mapped by this process. */
struct fib {
    struct fib_map m;
    bool writer;
};

/* The writers' hashes' last step (MurmurHash3's finaliser), and the
 * router's flow hash's (services/router/ecmp.c). */
static inline uint32_t fib_mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (uint32_t)k;
}

/* Read sections, for both families (the wrappers below and in fib6.h). */
static inline void fib_map_read_begin(struct fib_map *m)
{
    uint64_t g = ipc_ld_acq(&m->sh->gen);
    ipc_st_rlx(&m->slot->active, g);
    ipc_fence_sc(); /* R2: pairs with W2 in the writer's reclaim */
}

static inline void fib_map_read_end(struct fib_map *m)
{
    ipc_st_rel(&m->slot->active, 0);
}

static inline bool fib_map_read_held(const struct fib_map *m)
{
    return ipc_ld_rlx(&m->slot->active) != 0;
}

/* ---- both halves ---- */

/**
 * Map the FIB behind @fd (the tables) and @rfd (the readers' region).
 * @reader_slot 0..15 maps the tables read-only and takes that reader slot
 * (assigned by the supervisor, one per router instance; a dead predecessor's
 * announcement in it is cleared). FIB_WRITER is refused: the tables are
 * sealed against writes, so their one writer is the supervisor that made them
 * (-EUCLEAN first if that writer died mid-update: rebuild). Returns 0 or
 * -errno with @err filled.
 */
int fib_attach(struct fib *fib, int fd, int rfd, int reader_slot, struct ipc_err *err);

void fib_detach(struct fib *fib);

/* ---- reader (router), per batch ---- */

/*
 * A read section is opened once per batch by the loop that owns the batch,
 * and closed when nothing the batch read (an entry, a group, a next-hop
 * index) is used any more: after the burst, the neighbour timers and the
 * flush. Sections do not nest: the slot holds one generation, so an inner
 * begin would move it past groups the outer section may still hold, and an
 * inner end would clear it under the outer section's remaining reads.
 * Functions that look up assert fib_read_held() instead of opening one.
 * Close the section before the process sleeps: an open one holds back every
 * group and next hop retired since it began.
 */

/** Enter a batch of lookups: pins what the batch may see (see top). */
static inline void fib_read_begin(struct fib *fib)
{
    fib_map_read_begin(&fib->m);
}

/** Leave the batch: nothing read since fib_read_begin is used after this. */
static inline void fib_read_end(struct fib *fib)
{
    fib_map_read_end(&fib->m);
}

/** Is this reader inside a section? For callees that look up to assert. */
static inline bool fib_read_held(const struct fib *fib)
{
    return fib_map_read_held(&fib->m);
}

/** Longest-prefix match of @addr (host byte order): next-hop index or FIB_MISS. */
static inline uint32_t fib_lookup(const struct fib *fib, uint32_t addr)
{
    uint32_t e = ipc_ld_acq(&fib->m.tbl24[addr >> 8]); /* R1: pairs with W1 */
    if (e & FIB_E_EXT)
        e = ipc_ld_acq(&fib->m.tbl8[(size_t)(e & FIB_E_IDX) << 8 | (addr & 0xff)]);
    return (e & FIB_E_VALID) ? (e & FIB_E_IDX) : FIB_MISS;
}

#define FIB_PREFETCH_SPAN 64u

/**
 * Look up @n addresses: @out[i] = fib_lookup(@addrs[i]). First prefetches
 * the tbl24 entries of (up to 64 of) the addresses, then looks them up one by
 * one: a prefetch retires without waiting for its line, so all of the
 * batch's cache and TLB misses are in flight together, where loads would
 * fill the reorder buffer and stall after a dozen or so.
 */
static inline void fib_lookup_burst(const struct fib *fib, const uint32_t *addrs, uint32_t *out, uint32_t n)
{
    _Atomic uint32_t *tbl24 = fib->m.tbl24, *tbl8 = fib->m.tbl8;
    for (uint32_t base = 0; base < n; base += FIB_PREFETCH_SPAN) {
        uint32_t end = n - base > FIB_PREFETCH_SPAN ? base + FIB_PREFETCH_SPAN : n;
        for (uint32_t i = base; i < end; i++)
            __builtin_prefetch((const void *)&tbl24[addrs[i] >> 8]);
        for (uint32_t i = base; i < end; i++) {
            uint32_t e = ipc_ld_acq(&tbl24[addrs[i] >> 8]); /* R1 */
            if (ipc_unlikely(e & FIB_E_EXT))
                e = ipc_ld_acq(&tbl8[(size_t)(e & FIB_E_IDX) << 8 | (addrs[i] & 0xff)]);
            out[i] = (e & FIB_E_VALID) ? (e & FIB_E_IDX) : FIB_MISS;
        }
    }
}

/** The next hop named by a lookup result (one atomic load: never torn). */
static inline struct fib_nh fib_nh_at(const struct fib *fib, uint32_t idx)
{
    uint64_t v = ipc_ld_rlx(&fib->m.nh[idx]);
    struct fib_nh nh = {.gw = (uint32_t)v, .port = (uint16_t)(v >> 32), .flags = (uint16_t)(v >> 48)};
    return nh;
}

static inline uint64_t fib_nh_pack(const struct fib_nh *nh)
{
    return (uint64_t)nh->gw | (uint64_t)nh->port << 32 | (uint64_t)nh->flags << 48;
}

#endif
