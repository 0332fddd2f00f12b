/* SPDX-License-Identifier: MIT */
/*
 * supervisor/zones.h: trust zones for packet memory (docs/security.md). A
 * zone is a pool of its own: its ports' drivers and shapers map that pool
 * alone, the router maps every zone's and copies a packet that crosses
 * from one to another. Zone 0 is sup.pool; the others are sup.zone_pool[].
 * A ring carries the handles of one zone, its port's, so each pool is
 * reclaimed, drained and counted with its own zone's rings only: a handle
 * means nothing in another zone's pool.
 */
#ifndef SUP_ZONES_H
#define SUP_ZONES_H

#include "supervisor/sup.h"

static inline struct ipc_pool *sup_zone_pool(struct sup *s, unsigned z)
{
    return z ? &s->zone_pool[z] : &s->pool;
}

/* The pool ring @r's handles are in. */
static inline struct ipc_pool *sup_ring_pool(struct sup *s, int r)
{
    return sup_zone_pool(s, s->rings[r].zone);
}

/* The zones the manifest names: one more than its ports' largest index. */
unsigned sup_zones_count(const struct sup_manifest *m);

/* The zones service @v maps, as bits: the router every one, a driver or a
 * shaper its port's. */
uint32_t sup_svc_zones(const struct sup *s, const struct sup_svc *v);

/* Create (or, adopting, take back from the router's fds) the pools of zones
 * 1 .. nzones - 1; zone 0's is setup.c's. */
int sup_zones_setup(struct sup *s, int router, int first_fd, struct ipc_err *err);
void sup_zones_teardown(struct sup *s);

/* The fds of zones 1 .. nzones - 1 into @src from @n on (the router's);
 * returns the new count. */
int sup_zones_fds(const struct sup *s, int *src, int n);

/* Each zone's pool header back as created, if a service rewrote it. */
void sup_zones_hdr_repair(struct sup *s);

/* The refs of those of rings @idx[0..n) (NULL: every ring) in zone @z. */
unsigned sup_zone_refs(const struct sup *s, unsigned z, const int *idx, unsigned n, struct ipc_ring_ref *out);

/* ipc_pool_held and ipc_pool_reclaim for owner @who over each zone of
 * @zones, with that zone's rings among @idx[0..n). The sum, or the first
 * -errno. */
int sup_zones_held(struct sup *s, uint32_t zones, uint16_t who, const int *idx, unsigned n);
int sup_zones_reclaim(struct sup *s, uint32_t zones, uint16_t who, const int *idx, unsigned n);

/* A reload that changes a kept port's zone, or adds a port in a zone no port
 * of @o is in (its pool would not exist): refused, why in @why. */
bool sup_zones_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len);

#endif
