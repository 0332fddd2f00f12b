/* SPDX-License-Identifier: MIT */
/*
 * tables/fib6.h: the IPv6 forwarding table, /0 to /128, a multibit trie in
 * shared memory: DIR-24-8 generalised to 128 bits. The supervisor is the
 * only writer (tables/fib6_write.h); each router instance maps the tables
 * read-only and looks up bursts of destination addresses with the inline
 * functions below. It follows the IPv4 FIB's rules (tables/fib.h) to the
 * letter: the same sealed tables region, the same readers' region (struct
 * fib_shared: a generation and one slot per router instance; it may even be
 * the IPv4 FIB's own, so that one read section covers both tables), the
 * same deferred reuse of unlinked groups and next hops.
 *
 * Strides: 24 bits, then thirteen of 8 bits (24 + 13 x 8 = 128).
 *
 *   addr byte:   0   1   2 | 3 | 4 | 5 | ... | 15
 *                  tbl24   | g | g | g | ... | g      level 0, then 1..13
 *
 *   tbl24  2^24 x uint32_t entries, indexed by the address's first 3 bytes.
 *   tbl8   tbl8_groups x 256 x uint32_t; a group at level j (1..13) is
 *          indexed by address byte 2 + j and exists below an entry only
 *          while some prefix longer than that entry's span lives there.
 *
 * A prefix of length L lives at level 0 when L <= 24, else at level
 * ceil((L - 24) / 8), where it writes 2^(span - L) consecutive entries of
 * one group (span = 24 + 8 x level). A /48 (most of the DFZ) is one tbl24
 * entry and three groups: four dependent loads.
 *
 * Entry (uint32_t): bit 31 valid, bit 30 "points to a group", bits 22..29
 * the length (0..128) of the prefix that wrote it, bits 0..21 the next-hop
 * index (or the group's). Keeping the length in each entry lets an add
 * overwrite only entries of shorter prefixes, a delete find exactly the
 * entries its prefix wrote (rewriting them with the covering prefix's), and
 * the writer fold a group back into its parent entry once its 256 entries
 * are one value again, written by a prefix no longer than the parent
 * entry's span (sibling prefixes with one next hop also make 256 equal
 * entries, but those must stay where their deletes will look for them).
 *
 * The tables' region (each part page-aligned):
 *   page 0   the shm header.
 *   page 1   struct fib_layout (the IPv4 FIB's: tables/fib_impl.h): sizes,
 *            offsets and the writer's state.
 *   tbl24, tbl8 as above.
 *   nh       max_nh x 4 x uint64_t: gateway (16 bytes), port and flags, 0.
 *   mp       next-hop groups (ECMP), as the IPv4 FIB's (tables/fib_group.h):
 *            a group's header next hop has flags FIB_NH_F_GROUP and the
 *            group's index in its gateway's first word.
 *   writer   next-hop refcounts, prefix hash, next-hop hash, free stacks and
 *            retire queues; readers never look at them.
 * Pages are allocated as they are first written (a memfd is sparse), so a
 * generous tbl8_groups or max_nh costs address space, not memory.
 *
 * Why a reader never sees a torn or impossible next hop (tables/fib.h has
 * the same argument with the same tags):
 *  - Every entry is one naturally aligned word written with one atomic
 *    store: a lookup reads the old or the new value of each.
 *  - A new group is filled completely, then published with one release
 *    store of the entry above it (W1); the reader loads every entry with
 *    acquire (R1), so it sees the contents of each group it follows. A chain
 *    of new groups is published the same way, top link last.
 *  - A next hop is four words, written (relaxed) before any entry naming it
 *    is stored with release, and never written again during its life: the
 *    reader that got its index through an acquire load sees all four words
 *    as written. A route's next hop changes by naming another slot, never by
 *    rewriting one.
 *  - A group or next-hop slot that is unlinked is not reused until no reader
 *    can still hold the old link: the writer bumps the readers' region's
 *    generation after unlinking, stamps the object with it, and reuses it
 *    only when every reader slot reads 0 or at least that stamp after its own
 *    fence (W2), which pairs with the reader's fence in fib6_read_begin (R2).
 *
 * Writer crashes: each update sets `dirty` first and clears it last; a FIB
 * whose writer died mid-update is rebuilt from the routes (-EUCLEAN on
 * attach). The writer bounds-checks every index it reads back from the
 * region before it follows it (a group index from an entry, a next-hop
 * index from its hashes, a free-stack or retire-queue slot), against sizes
 * it keeps in its own memory; a failed check stops the update with
 * -EUCLEAN and leaves the FIB marked dirty: rebuild it.
 *
 * Use (the router, services/router/main.c and ipv6.c):
 *
 *     fib6_attach(&fib6, fd, rfd, slot, &err);      at start-up
 *     fib6_read_begin(&fib6);                       once per batch
 *     fib6_lookup_burst(&fib6, dst, idx, n);        dst: uint8_t [n][16]
 *     nh = fib6_nh_at(&fib6, idx[i]);               for idx[i] != FIB6_MISS
 *     fib6_read_end(&fib6);                         when the batch is done
 *
 * Addresses are 16 bytes in network byte order, as in the packet.
 */
#ifndef TABLES_FIB6_H
#define TABLES_FIB6_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ipc/atomic.h"
#include "ipc/shm.h"
#include "tables/fib.h" /* struct fib_shared, struct fib_reader_slot, FIB_MAX_READERS */

#define FIB6_VERSION 0x36420002u /* "B6" 2: next-hop groups (tables/fib_group.h) */
#define FIB6_WRITER (-1)
#define FIB6_MISS UINT32_MAX
#define FIB6_LEVELS 14u            /* tbl24, then 13 group levels */
#define FIB6_MAX_NH (1u << 22)     /* next-hop indices fit the entry's 22 bits */
#define FIB6_MAX_GROUPS (1u << 22) /* so do group indices */
#define FIB6_MAX_PREFIXES (1u << 26)

#define FIB6_E_VALID 0x80000000u
#define FIB6_E_EXT 0x40000000u
#define FIB6_E_DEPTH_SHIFT 22
#define FIB6_E_IDX 0x003fffffu

#define FIB6_NH_WORDS 4u /* uint64_t words per next hop: 32 bytes, never across a cache line */

/* A next hop: egress port and gateway; an all-zero gateway = on-link. */
struct fib6_nh {
    uint8_t gw[16]; /* network byte order; fe80::/10 is fine: the port is its scope */
    uint16_t port;
    uint16_t flags; /* reserved, 0 */
};

struct fib6_params {
    uint32_t max_prefixes; /* default 524,288 */
    uint32_t tbl8_groups;  /* default 262,144 (256 MB of address space, touched as used) */
    uint32_t max_nh;       /* default 65,536 */
};

/* An IPv6 FIB, as mapped by this process: the IPv4 FIB's plumbing (struct
 * fib_map: its readers' region may even be the IPv4 FIB's own). */
struct fib6 {
    struct fib_map m;
    bool writer;
};

/* ---- both halves ---- */

/**
 * Map the IPv6 FIB behind @fd (the tables) and @rfd (the readers' region the
 * writer named at fib6_create: its own or the IPv4 FIB's). @reader_slot
 * 0..15 maps the tables read-only and takes that reader slot (the same slot
 * the router holds in the IPv4 FIB when the region is shared); a dead
 * predecessor's announcement in it is cleared. FIB6_WRITER is refused: the
 * tables are sealed against writes, so their one writer is the supervisor
 * that made them (-EUCLEAN first if that writer died mid-update: rebuild).
 * Returns 0 or -errno with @err filled.
 */
int fib6_attach(struct fib6 *fib, int fd, int rfd, int reader_slot, struct ipc_err *err);

void fib6_detach(struct fib6 *fib);

/* ---- reader (router), per batch ---- */

/*
 * Sections work as the IPv4 FIB's (tables/fib.h): opened once per batch by
 * the loop that owns it, closed when nothing the batch read is used any
 * more, never nested, closed before the process sleeps. When both FIBs share
 * one readers' region, one section covers both: open it with either
 * fib_read_begin or fib6_read_begin, not both (that would nest).
 */

/** Enter a batch of lookups: pins what the batch may see. */
static inline void fib6_read_begin(struct fib6 *fib)
{
    fib_map_read_begin(&fib->m);
}

/** Leave the batch: nothing read since fib6_read_begin is used after this. */
static inline void fib6_read_end(struct fib6 *fib)
{
    fib_map_read_end(&fib->m);
}

/** Is this reader inside a section? For callees that look up to assert. */
static inline bool fib6_read_held(const struct fib6 *fib)
{
    return fib_map_read_held(&fib->m);
}

static inline uint32_t fib6_idx24(const uint8_t *a)
{
    return (uint32_t)a[0] << 16 | (uint32_t)a[1] << 8 | a[2];
}

/* A final entry's result: its next hop, or a miss (invalid, or a group
 * link where none can be: past the last level). */
static inline uint32_t fib6_result(uint32_t e)
{
    return (e & (FIB6_E_VALID | FIB6_E_EXT)) == FIB6_E_VALID ? (e & FIB6_E_IDX) : FIB6_MISS;
}

/** Longest-prefix match of @addr (16 bytes, network order): next-hop index or FIB6_MISS. */
static inline uint32_t fib6_lookup(const struct fib6 *fib, const uint8_t *addr)
{
    uint32_t e = ipc_ld_acq(&fib->m.tbl24[fib6_idx24(addr)]); /* R1: pairs with W1 */
    for (unsigned b = 3; (e & FIB6_E_EXT) && b < 16; b++)
        e = ipc_ld_acq(&fib->m.tbl8[(size_t)(e & FIB6_E_IDX) << 8 | addr[b]]); /* R1 */
    return fib6_result(e);
}

#define FIB6_BURST_SPAN 64u

/**
 * Look up @n addresses: @out[i] = fib6_lookup(@addrs[i]). A chain walk is a
 * series of dependent loads, each a likely cache (and TLB) miss, so the
 * burst walks all its addresses one level at a time: first the tbl24 entries
 * of up to 64 addresses are prefetched, then loaded; each address that goes
 * on prefetches its next group's entry and waits for the next round, in
 * which all the addresses still walking take their next step. So the misses
 * of a level are all in flight together, and a round costs about one miss,
 * not one per address.
 */
static inline void fib6_lookup_burst(const struct fib6 *fib, const uint8_t (*addrs)[16], uint32_t *out, uint32_t n)
{
    _Atomic uint32_t *tbl24 = fib->m.tbl24, *tbl8 = fib->m.tbl8;
    for (uint32_t base = 0; base < n; base += FIB6_BURST_SPAN) {
        uint32_t m = n - base > FIB6_BURST_SPAN ? FIB6_BURST_SPAN : n - base;
        const uint8_t(*a)[16] = addrs + base;
        uint32_t *o = out + base;
        uint8_t walk[FIB6_BURST_SPAN];  /* the addresses still walking */
        uint32_t next[FIB6_BURST_SPAN]; /* each one's next entry, tbl8 index */
        unsigned nw = 0;
        for (uint32_t i = 0; i < m; i++)
            __builtin_prefetch((const void *)&tbl24[fib6_idx24(a[i])]);
        for (uint32_t i = 0; i < m; i++) {
            uint32_t e = ipc_ld_acq(&tbl24[fib6_idx24(a[i])]); /* R1 */
            o[i] = fib6_result(e);
            if (ipc_unlikely(e & FIB6_E_EXT)) {
                next[nw] = (e & FIB6_E_IDX) << 8 | a[i][3];
                __builtin_prefetch((const void *)&tbl8[next[nw]]);
                walk[nw++] = (uint8_t)i;
            }
        }
        for (unsigned b = 4; nw > 0; b++) {
            unsigned still = 0;
            for (unsigned k = 0; k < nw; k++) {
                uint32_t i = walk[k];
                uint32_t e = ipc_ld_acq(&tbl8[next[k]]); /* R1 */
                o[i] = fib6_result(e);
                if ((e & FIB6_E_EXT) && b < 16) {
                    next[still] = (e & FIB6_E_IDX) << 8 | a[i][b];
                    __builtin_prefetch((const void *)&tbl8[next[still]]);
                    walk[still++] = (uint8_t)i;
                }
            }
            nw = still;
        }
    }
}

/** The next hop named by a lookup result (read within the section that found it). */
static inline struct fib6_nh fib6_nh_at(const struct fib6 *fib, uint32_t idx)
{
    const _Atomic uint64_t *w = &fib->m.nh[(size_t)idx * FIB6_NH_WORDS];
    uint64_t g0 = ipc_ld_rlx(&w[0]), g1 = ipc_ld_rlx(&w[1]), pf = ipc_ld_rlx(&w[2]);
    struct fib6_nh nh;
    memcpy(nh.gw, &g0, 8);
    memcpy(nh.gw + 8, &g1, 8);
    nh.port = (uint16_t)pf;
    nh.flags = (uint16_t)(pf >> 16);
    return nh;
}

#endif
