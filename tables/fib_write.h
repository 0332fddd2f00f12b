/* SPDX-License-Identifier: MIT */
/*
 * tables/fib_write.h: the FIB's writer half (tables/fib_write.c), for the
 * supervisor alone: manifest and connected routes, `ringrouter route
 * add|replace|del|get|show`, and the reader-slot reset after a router dies
 * (supervisor/policy.c). The region's layout and the ordering argument that
 * makes the updates safe for readers that never lock are in tables/fib.h.
 */
#ifndef TABLES_FIB_WRITE_H
#define TABLES_FIB_WRITE_H

#include "tables/fib.h"

/* Either family's (fib_get_stats, fib6_get_stats). */
struct fib_stats {
    uint32_t prefixes, nh, tbl8_used, tbl8_retired, tbl8_groups, nh_retired;
    uint32_t nh_groups; /* next-hop groups (ECMP) in use */
    uint64_t region_bytes, gen;
    uint64_t corrupt; /* bounds checks that failed (every one also failed its update with -EUCLEAN) */
};

/**
 * Create a FIB sized by @p (NULL: defaults): the tables in a new memfd *@fd,
 * mapped as the writer and then sealed against any other write, and the
 * readers' region in *@rfd. Returns 0, or -errno with @err filled.
 */
int fib_create(const char *name, const struct fib_params *p, struct fib *fib, int *fd, int *rfd,
               struct ipc_err *err);

/**
 * Add @addr/@len (host byte order, host bits must be zero) via @nh. Returns
 * 0, -EINVAL (bad length, host bits set, port 0xffff), -EEXIST (the prefix is
 * there: use fib_replace), -ENOSPC (prefix, next-hop or tbl8 capacity) or
 * -EAGAIN (free groups exist but readers still may be inside them: retry)
 * or -EUCLEAN (the region failed a bounds check: rebuild it). Nothing
 * changes unless it returns 0.
 */
int fib_add(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nh);

/** As fib_add, but an existing prefix changes its next hop in place. */
int fib_replace(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nh);

/**
 * Delete @addr/@len: its range falls back to the longest covering prefix (or
 * to no route). Returns 0, -ENOENT, -EINVAL or -EUCLEAN.
 */
int fib_del(struct fib *fib, uint32_t addr, unsigned len);

/**
 * The route a packet to @addr takes: the longest prefix that covers it, read
 * from the tables the router reads (the length each entry carries), so it is
 * the router's answer, not a second computation. Returns 0 with *@pfx,
 * *@len and *@nh, or -ENOENT when no prefix covers @addr. Writer only.
 */
int fib_match(const struct fib *fib, uint32_t addr, uint32_t *pfx, unsigned *len, struct fib_nh *nh);

/** Exact-match query of the prefix list. Returns 0 with *nh, or -ENOENT. */
int fib_get(const struct fib *fib, uint32_t addr, unsigned len, struct fib_nh *nh);

/**
 * Call @cb for every prefix (unordered; `route show` sorts). Stops at and
 * returns the first non-zero return of @cb; 0 otherwise. Writer only.
 */
int fib_iterate(const struct fib *fib, int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh),
                   void *arg);

/**
 * Call @cb for every prefix of the FIB behind @fd, mapped read-only for the
 * call (a dead supervisor's, which a new one adopts: supervisor/adopt.c).
 * *@dirty: its writer died inside an update. Returns 0, @cb's first non-zero
 * return, or -errno with @err.
 */
int fib_snapshot(int fd, int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh), void *arg,
                 bool *dirty, struct ipc_err *err);

/** Recycle retired groups and next hops no reader can hold; returns how many. */
unsigned fib_reclaim(struct fib *fib);

/*
 * Batches. Each group or next hop an update unlinks is retired with a
 * generation switch (fib.h, W2): a bump of the readers' gen. While @on,
 * the updates of @fib retire theirs for one switch instead, which
 * fib_gen_commit makes at the batch's end: a batch of a thousand
 * withdrawals is one switch, not a thousand. Nothing is reused early: an
 * object stamped for a switch not made yet is reused only when no reader
 * is inside a batch (and an update that needs one makes the switch now).
 */
void fib_gen_defer(struct fib *fib, bool on);

struct fib6;
/** The switch for what @fib and @fib6 (NULL: none; it shares @fib's
 * readers' region) retired while deferring: one bump for both. True if
 * there was anything to switch for. */
bool fib_gen_commit(struct fib *fib, struct fib6 *fib6);

/** Start loading the cache lines an add or delete of @addr/@len touches
 * first (its prefix's hash slot, its tbl24 entry), so that a caller with
 * many updates overlaps their misses. A hint: any arguments are safe. */
void fib_prefetch(const struct fib *fib, uint32_t addr, unsigned len);

/** Supervisor, after the router using reader @slot died: it holds nothing. */
void fib_reader_reset(struct fib *fib, unsigned slot);

void fib_get_stats(const struct fib *fib, struct fib_stats *st);

#endif
