/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh6.c: the IPv6 neighbour table (open addressing on the 16-byte
 * address, linear probing, backward-shift deletion, as tables/neigh.c):
 * mapping, the seqlocked copy for `neigh show`, inserts and removals.
 * The hash and the lookup are inline in neigh6.h; the supervisor's half is
 * tables/neigh6_write.c.
 */
#include "tables/neigh6.h"

#include <errno.h>
#include <string.h>

void neigh6_impl_bind(struct neigh6_table *nt, void *base, size_t size)
{
    nt->sh = base;
    nt->e = (struct neigh6_entry *)((uint8_t *)base + NEIGH_HDR_BYTES);
    nt->mask = nt->sh->cap - 1;
    nt->size = size;
}

int neigh6_attach(struct neigh6_table *nt, int fd, struct ipc_err *err)
{
    void *base;
    size_t size;
    int ret = ipc_shm_attach(fd, NEIGH6_SHM_KIND, NEIGH6_VERSION, &base, &size, err);
    if (ret < 0)
        return ret;
    const struct neigh6_shared *sh = base;
    if (sh->cap < 16 || (sh->cap & (sh->cap - 1)) ||
        NEIGH_HDR_BYTES + (size_t)sh->cap * sizeof(struct neigh6_entry) != size) {
        ipc_shm_unmap(base, size);
        return ipc_errf(err, -EPROTO, "IPv6 neighbour region: capacity %u does not match its size %zu", sh->cap, size);
    }
    neigh6_impl_bind(nt, base, size);
    return 0;
}

void neigh6_detach(struct neigh6_table *nt)
{
    ipc_shm_unmap(nt->sh, nt->size);
    memset(nt, 0, sizeof(*nt));
}

int neigh6_read(const struct neigh6_table *nt, uint32_t i, struct neigh6_entry *out, uint32_t *budget)
{
    struct neigh6_entry *e = &nt->e[i & nt->mask];
    for (;;) {
        uint32_t s = ipc_ld_acq(&e->seq);
        if (!(s & 1)) {
            memcpy((uint8_t *)out + sizeof(out->seq), (uint8_t *)e + sizeof(e->seq), sizeof(*e) - sizeof(e->seq));
            atomic_thread_fence(memory_order_acquire);
            if (ipc_ld_rlx(&e->seq) == s)
                return out->used != 0;
        }
        if (*budget == 0) {
            out->used = 0;
            return -EBUSY;
        }
        (*budget)--;
    }
}

struct neigh6_entry *neigh6_insert(struct neigh6_table *nt, const uint8_t *ip)
{
    if (nt->sh->count >= (nt->mask + 1) / 4 * 3)
        return NULL;
    uint32_t i = neigh6_impl_hash(ip) & nt->mask;
    while (nt->e[i].used)
        i = (i + 1) & nt->mask;
    struct neigh6_entry *e = &nt->e[i];
    neigh6_wbegin(e);
    memset((uint8_t *)e + sizeof(e->seq), 0, sizeof(*e) - sizeof(e->seq));
    memcpy(e->ip, ip, 16);
    e->used = 1;
    neigh6_wend(e);
    nt->sh->count++;
    return e;
}

void neigh6_remove(struct neigh6_table *nt, struct neigh6_entry *e)
{
    uint32_t i = (uint32_t)(e - nt->e), j = i;
    for (;;) {
        neigh6_wbegin(&nt->e[i]);
        nt->e[i].used = 0;
        nt->e[i].state = NEIGH6_FREE;
        nt->e[i].qlen = 0;
        neigh6_wend(&nt->e[i]);
        for (;;) {
            j = (j + 1) & nt->mask;
            if (!nt->e[j].used)
                goto out;
            uint32_t home = neigh6_impl_hash(nt->e[j].ip) & nt->mask;
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        neigh6_wbegin(&nt->e[i]);
        memcpy((uint8_t *)&nt->e[i] + sizeof(e->seq), (uint8_t *)&nt->e[j] + sizeof(e->seq),
               sizeof(*e) - sizeof(e->seq));
        neigh6_wend(&nt->e[i]);
        i = j;
    }
out:
    nt->sh->count--;
}
