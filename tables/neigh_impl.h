/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh_impl.h: what the two neighbour tables' halves share and no
 * one else sees: the family as a parameter (struct neigh_kind) of the code
 * written once for both (tables/neigh_common.c, neigh_write.c), and the
 * binding of a table to its region.
 */
#ifndef TABLES_NEIGH_IMPL_H
#define TABLES_NEIGH_IMPL_H

#include <stddef.h>

#include "tables/neigh.h"
#include "tables/neigh6.h"

/* The part of page 0 both families lay out alike. */
struct neigh_hdr {
    struct ipc_shm_hdr shm;
    _Alignas(IPC_CACHELINE) uint32_t cap; /* power of two */
    uint32_t count;
    uint32_t queued;
};
_Static_assert(offsetof(struct neigh_shared, cap) == offsetof(struct neigh_hdr, cap) &&
                   offsetof(struct neigh6_shared, cap) == offsetof(struct neigh_hdr, cap),
               "both tables' page 0 starts alike");

/* One family's entries: what the shared code needs to probe, copy and clear them. */
struct neigh_kind {
    const char *what; /* for messages */
    uint32_t shm_kind, version;
    size_t entry_bytes;
    const void *(*key)(const void *e);
    uint32_t (*hash)(const void *key);
    bool (*used)(const void *e);
    void (*set)(void *e, const void *key); /* a free entry becomes @key's */
    void (*clear)(void *e);                /* free, its queue forgotten */
};

extern const struct neigh_kind neigh_kind4, neigh_kind6;

/* Point table @nt (either family's) at the region at @base of @size bytes. */
#define NEIGH_BIND(nt, base, sz)                                                                                   \
    do {                                                                                                           \
        (nt)->sh = (void *)(base);                                                                                 \
        (nt)->e = (void *)((uint8_t *)(base) + NEIGH_HDR_BYTES);                                                   \
        (nt)->mask = (nt)->sh->cap - 1;                                                                            \
        (nt)->size = (sz);                                                                                         \
    } while (0)

#endif
