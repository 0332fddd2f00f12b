/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh.c: the neighbour table (open addressing on the IPv4 address,
 * linear probing, backward-shift deletion): mapping a region, lookups, the
 * seqlocked copy `neigh show` takes, and the inserts and removals the router
 * makes as ARP runs. The supervisor's half (create, static entries) is
 * tables/neigh_write.c.
 */
#include "tables/neigh.h"

#include <errno.h>
#include <string.h>

uint32_t neigh_impl_hash(uint32_t ip)
{
    return (ip * 0x9e3779b1u) ^ (ip >> 16);
}

void neigh_impl_bind(struct neigh_table *nt, void *base, size_t size)
{
    nt->sh = base;
    nt->e = (struct neigh_entry *)((uint8_t *)base + NEIGH_HDR_BYTES);
    nt->mask = nt->sh->cap - 1;
    nt->size = size;
}

int neigh_attach(struct neigh_table *nt, int fd, struct ipc_err *err)
{
    void *base;
    size_t size;
    int ret = ipc_shm_attach(fd, NEIGH_SHM_KIND, NEIGH_VERSION, &base, &size, err);
    if (ret < 0)
        return ret;
    const struct neigh_shared *sh = base;
    if (sh->cap < 16 || (sh->cap & (sh->cap - 1)) || NEIGH_HDR_BYTES + (size_t)sh->cap * sizeof(struct neigh_entry) != size) {
        ipc_shm_unmap(base, size);
        return ipc_errf(err, -EPROTO, "neighbour region: capacity %u does not match its size %zu", sh->cap, size);
    }
    neigh_impl_bind(nt, base, size);
    return 0;
}

void neigh_detach(struct neigh_table *nt)
{
    ipc_shm_unmap(nt->sh, nt->size);
    memset(nt, 0, sizeof(*nt));
}

int neigh_read(const struct neigh_table *nt, uint32_t i, struct neigh_entry *out, uint32_t *budget)
{
    struct neigh_entry *e = &nt->e[i & nt->mask];
    /* Bounded: the supervisor reads from its event loop, and a router that
     * died inside a write leaves the sequence odd until its successor
     * repairs it. Such an entry reads as busy meanwhile. */
    for (;;) {
        uint32_t s = ipc_ld_acq(&e->seq);
        if (!(s & 1)) {
            memcpy((uint8_t *)out + sizeof(out->seq), (uint8_t *)e + sizeof(e->seq), sizeof(*e) - sizeof(e->seq));
            atomic_thread_fence(memory_order_acquire);
            if (ipc_ld_rlx(&e->seq) == s)
                return out->ip != 0;
        }
        if (*budget == 0) {
            out->ip = 0;
            return -EBUSY;
        }
        (*budget)--;
    }
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

/* A new entry for @ip (not present), or NULL when the table is 3/4 full. */
struct neigh_entry *neigh_insert(struct neigh_table *nt, uint32_t ip)
{
    if (ip == 0 || nt->sh->count >= (nt->mask + 1) / 4 * 3)
        return NULL;
    uint32_t i = neigh_impl_hash(ip) & nt->mask;
    while (nt->e[i].ip)
        i = (i + 1) & nt->mask;
    struct neigh_entry *e = &nt->e[i];
    neigh_wbegin(e);
    memset((uint8_t *)e + sizeof(e->seq), 0, sizeof(*e) - sizeof(e->seq));
    e->ip = ip;
    neigh_wend(e);
    nt->sh->count++;
    return e;
}

void neigh_remove(struct neigh_table *nt, struct neigh_entry *e)
{
    uint32_t i = (uint32_t)(e - nt->e), j = i;
    for (;;) {
        neigh_wbegin(&nt->e[i]);
        nt->e[i].ip = 0;
        nt->e[i].state = NEIGH_FREE;
        nt->e[i].qlen = 0;
        neigh_wend(&nt->e[i]);
        for (;;) {
            j = (j + 1) & nt->mask;
            if (nt->e[j].ip == 0)
                goto out;
            uint32_t home = neigh_impl_hash(nt->e[j].ip) & nt->mask;
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        neigh_wbegin(&nt->e[i]);
        memcpy((uint8_t *)&nt->e[i] + sizeof(e->seq), (uint8_t *)&nt->e[j] + sizeof(e->seq),
               sizeof(*e) - sizeof(e->seq));
        neigh_wend(&nt->e[i]);
        i = j;
    }
out:
    nt->sh->count--;
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
