/* SPDX-License-Identifier: MIT */
/*
 * tables/fib_group.h: next-hop groups (ECMP) in either FIB family. A route
 * with several next hops names one next hop like any other route, its
 * group's header: flags FIB_NH_F_GROUP, and the group's index in the
 * gateway (IPv4: gw; IPv6: the first 8 bytes of gw, host order). The
 * group itself is FIB_MP_WORDS words in the region's mp array:
 *
 *   word 0        member count n (1..FIB_MP_MAX)
 *   words 1..16   each member's next-hop index (an ordinary next hop)
 *   words 17..32  each member's weight (1..FIB_MP_WEIGHT_MAX)
 *   words 33..35  the writer's: fingerprint, and whether it is hashed
 *   words 64..127 256 one-byte buckets, each a member number
 *
 * The buckets hold each member in proportion to its weight, interleaved
 * (smooth weighted round robin over the members in their canonical order),
 * so a flow's hash picks a bucket and so a member; a member the router
 * skips (its neighbour failed) costs only its own buckets' flows, which
 * rehash onto the others, and they come back when it does.
 *
 * The members are sorted by their next-hop keys, so the same set makes the
 * same group whatever order it was given in, and routes with the same set
 * share one group (the writer finds it by a fingerprint of the set).
 *
 * The ordering argument is tables/fib.h's (see "Groups keep the same
 * guarantees" there): a reader that loaded the entry with acquire sees the
 * header and the group as they were written, and neither is rewritten while
 * a reader may hold it.
 */
#ifndef TABLES_FIB_GROUP_H
#define TABLES_FIB_GROUP_H

#include "tables/fib6.h"
#include "tables/fib.h"

#define FIB_MP_MAX 16u         /* members per group */
#define FIB_MP_WEIGHT_MAX 256u /* as ip route's nexthop weight */
#define FIB_MP_BUCKETS 256u
#define FIB_NH_F_GROUP 0x8000u /* a next hop's flags: a group's header */

#define FIB_MP_WORDS 128u
#define FIB_MP_W_N 0u
#define FIB_MP_W_NH 1u
#define FIB_MP_W_WEIGHT 17u
#define FIB_MP_W_FP 33u
#define FIB_MP_W_HASHED 35u
#define FIB_MP_W_BUCKETS 64u

/* ---- reader (router) ---- */

/** Group @g's words (read within the section that found its header). */
static inline const _Atomic uint32_t *fib_mp_block(const struct fib_map *m, uint32_t g)
{
    return &m->mp[(size_t)g * FIB_MP_WORDS];
}

/** The group an IPv6 header next hop names. */
static inline uint32_t fib6_nh_group(const struct fib6_nh *nh)
{
    uint64_t v;
    memcpy(&v, nh->gw, sizeof(v));
    return (uint32_t)v;
}

/** Member number of bucket @b (0..255). */
static inline unsigned fib_mp_bucket(const _Atomic uint32_t *blk, unsigned b)
{
    return (ipc_ld_rlx(&blk[FIB_MP_W_BUCKETS + (b >> 2 & 63)]) >> ((b & 3) * 8)) & (FIB_MP_MAX - 1);
}

/** Member @k's next-hop index. */
static inline uint32_t fib_mp_member(const _Atomic uint32_t *blk, unsigned k)
{
    return ipc_ld_rlx(&blk[FIB_MP_W_NH + (k & (FIB_MP_MAX - 1))]);
}

/** The member count, at most FIB_MP_MAX. */
static inline unsigned fib_mp_count(const _Atomic uint32_t *blk)
{
    uint32_t n = ipc_ld_rlx(&blk[FIB_MP_W_N]);
    return n > FIB_MP_MAX ? FIB_MP_MAX : n;
}

/* ---- writer (supervisor) ---- */

/*
 * Add (or replace) @addr/@len with @n next hops @nhs, weighted @weights
 * (NULL: all 1; each 1..FIB_MP_WEIGHT_MAX). @n 1 is an ordinary route.
 * Members need a gateway and must differ. Returns as fib_add (tables/
 * fib_write.h); -EINVAL for a bad member list. Nothing changes unless it
 * returns 0.
 */
int fib_add_multi(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nhs, const uint16_t *weights,
                  unsigned n);
int fib_replace_multi(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nhs,
                      const uint16_t *weights, unsigned n);

/**
 * The members of group header @hdr (a next hop that fib_get, fib_iterate or
 * fib_match returned with FIB_NH_F_GROUP) into @nhs and @weights (room for
 * FIB_MP_MAX each): their count, or -EUCLEAN. Writer only.
 */
int fib_group_members(const struct fib *fib, const struct fib_nh *hdr, struct fib_nh *nhs, uint16_t *weights);

/* The IPv6 FIB's, likewise. */
int fib6_add_multi(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs,
                   const uint16_t *weights, unsigned n);
int fib6_replace_multi(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs,
                       const uint16_t *weights, unsigned n);
int fib6_group_members(const struct fib6 *fib, const struct fib6_nh *hdr, struct fib6_nh *nhs, uint16_t *weights);

/*
 * As fib_snapshot and fib6_snapshot, with every route's next hops: a
 * group's members and weights, or one next hop of weight 1. For the new
 * supervisor that rebuilds the FIBs of a dead one (supervisor/adopt.c).
 */
int fib_snapshot_multi(int fd,
                       int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nhs,
                                 const uint16_t *weights, unsigned n),
                       void *arg, bool *dirty, struct ipc_err *err);
int fib6_snapshot_multi(int fd,
                        int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs,
                                  const uint16_t *weights, unsigned n),
                        void *arg, bool *dirty, struct ipc_err *err);

#endif
