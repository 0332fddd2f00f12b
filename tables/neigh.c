/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh.c: the IPv4 neighbour table's lookups, which the router makes
 * for every forwarded packet: the hash, the probe, and the delete of an
 * entry with its queue. Mapping, the seqlocked copy, inserts and removals
 * are both families' (tables/neigh_common.c); the supervisor's half is
 * tables/neigh_write.c.
 */
#include "tables/neigh.h"

#include <errno.h>
#include <string.h>

uint32_t neigh_impl_hash(uint32_t ip)
{
    return (ip * 0x9e3779b1u) ^ (ip >> 16);
}

struct neigh_entry *neigh_find(const struct neigh_table *nt, uint32_t ip)
{
    if (ip == 0)
        return NULL;
    for (uint32_t i = neigh_impl_hash(ip) & nt->mask, k = 0; k <= nt->mask; i = (i + 1) & nt->mask, k++) {
        struct neigh_entry *e = &nt->e[i];
        if (e->ip == ip)
            return e;
        if (e->ip == 0)
            return NULL;
    }
    return NULL;
}

int neigh_del(struct neigh_table *nt, struct ipc_pool *pool, uint32_t ip)
{
    struct neigh_entry *e = neigh_find(nt, ip);
    if (!e)
        return -ENOENT;
    ipc_pool_free(pool, e->q, e->qlen);
    nt->sh->queued -= e->qlen;
    neigh_remove(nt, e);
    return 0;
}
