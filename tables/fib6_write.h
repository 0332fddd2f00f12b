/* SPDX-License-Identifier: MIT */
/*
 * tables/fib6_write.h: the IPv6 FIB's writer half (tables/fib6_write.c), for
 * the supervisor alone: routes from the manifest, connected routes, the
 * route commands, and the reader-slot reset after a router dies. The
 * region's layout and the ordering argument that makes the updates safe for
 * readers that never lock are in tables/fib6.h.
 *
 * Addresses are 16 bytes in network byte order; a prefix's host bits must be
 * zero. Next hops are shared: the routes that name the same {gateway, port}
 * hold one next-hop slot, counted by reference, and a slot whose last route
 * goes is reused only once no reader can still hold its index (as the IPv4
 * FIB's next hops; the IPv6 FIB has a next-hop table of its own, since a
 * 16-byte gateway does not fit the IPv4 table's one-word slots).
 */
#ifndef TABLES_FIB6_WRITE_H
#define TABLES_FIB6_WRITE_H

#include "tables/fib6.h"
#include "tables/fib_write.h" /* struct fib_stats */

/**
 * Create an IPv6 FIB sized by @p (NULL: defaults): the tables in a new memfd
 * *@fd, mapped as the writer and then sealed against any other write. The
 * readers' region: with @readers_fd -1 a new one, returned in *@rfd; else
 * @readers_fd is an IPv4 FIB's (fib_create's *rfd), which this FIB then
 * shares, so that one read section per batch covers both tables (*@rfd is
 * set to @readers_fd itself, not a copy). Returns 0, or -errno with @err
 * filled.
 */
int fib6_create(const char *name, const struct fib6_params *p, int readers_fd, struct fib6 *fib, int *fd, int *rfd,
                struct ipc_err *err);

/**
 * Add @addr/@len via @nh. Returns 0, -EINVAL (length over 128, host bits
 * set, port 0xffff, flags not 0, not the writer), -EEXIST (the prefix is
 * there: use fib6_replace), -ENOSPC (prefix, next-hop or group capacity),
 * -EAGAIN (free groups or next hops exist but readers may still be inside
 * them: retry) or -EUCLEAN (the region failed a bounds check: rebuild it).
 * Nothing changes unless it returns 0.
 */
int fib6_add(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nh);

/** As fib6_add, but an existing prefix changes its next hop in place. */
int fib6_replace(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nh);

/**
 * Delete @addr/@len: its range falls back to the longest covering prefix (or
 * to no route), and the groups it alone needed fold back into their parent
 * entries. Returns 0, -ENOENT, -EINVAL or -EUCLEAN.
 */
int fib6_del(struct fib6 *fib, const uint8_t *addr, unsigned len);

/** Exact-match query of the prefix list. Returns 0 with *nh, or -ENOENT. */
int fib6_get(struct fib6 *fib, const uint8_t *addr, unsigned len, struct fib6_nh *nh);

/**
 * Call @cb for every prefix (unordered). Stops at and returns the first
 * non-zero return of @cb; 0 otherwise. Writer only.
 */
int fib6_iterate(struct fib6 *fib, int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh),
                 void *arg);

/** Recycle retired groups and next hops no reader can hold; returns how many. */
unsigned fib6_reclaim(struct fib6 *fib);

/** fib_gen_defer for the IPv6 FIB (tables/fib_write.h; fib_gen_commit switches both). */
void fib6_gen_defer(struct fib6 *fib, bool on);

/** As fib_snapshot (tables/fib_write.h), for an IPv6 FIB. */
int fib6_snapshot(int fd, int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh),
                  void *arg, bool *dirty, struct ipc_err *err);

/** Supervisor, after the router using reader @slot died: it holds nothing. */
void fib6_reader_reset(struct fib6 *fib, unsigned slot);

void fib6_get_stats(const struct fib6 *fib, struct fib_stats *st);

#endif
