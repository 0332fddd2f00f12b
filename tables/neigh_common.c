/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh_common.c: what the IPv4 and IPv6 neighbour tables share,
 * written once with the family as a parameter (struct neigh_kind): both are
 * open addressing on the address with linear probing and backward-shift
 * deletion, an entry a seqlocked record whose first word is its sequence.
 * Mapping a region, the seqlocked copy `neigh show` takes, and the inserts
 * and removals the router makes as ARP or ND runs. The lookups stay the
 * families' own (neigh_find in tables/neigh.c, neigh6_find inline in
 * neigh6.h: once per forwarded packet); the supervisor's half is
 * tables/neigh_write.c.
 */
#include "tables/neigh_impl.h"

#include <errno.h>
#include <string.h>

static const void *neigh4_key(const void *e)
{
    return &((const struct neigh_entry *)e)->ip;
}

static uint32_t neigh4_hash(const void *key)
{
    uint32_t ip;
    memcpy(&ip, key, sizeof(ip));
    return neigh_impl_hash(ip);
}

static bool neigh4_used(const void *e)
{
    return ((const struct neigh_entry *)e)->ip != 0;
}

static void neigh4_set(void *e, const void *key)
{
    memcpy(&((struct neigh_entry *)e)->ip, key, sizeof(uint32_t));
}

static void neigh4_clear(void *e)
{
    struct neigh_entry *x = e;
    x->ip = 0;
    x->state = NEIGH_FREE;
    x->qlen = 0;
}

static const void *neigh6_key(const void *e)
{
    return ((const struct neigh6_entry *)e)->ip;
}

static uint32_t neigh6_hash(const void *key)
{
    return neigh6_impl_hash(key);
}

static bool neigh6_used(const void *e)
{
    return ((const struct neigh6_entry *)e)->used != 0;
}

static void neigh6_set(void *e, const void *key)
{
    struct neigh6_entry *x = e;
    memcpy(x->ip, key, 16);
    x->used = 1;
}

static void neigh6_clear(void *e)
{
    struct neigh6_entry *x = e;
    x->used = 0;
    x->state = NEIGH6_FREE;
    x->qlen = 0;
}

const struct neigh_kind neigh_kind4 = {"neighbour",  NEIGH_SHM_KIND, NEIGH_VERSION, sizeof(struct neigh_entry),
                                        neigh4_key,   neigh4_hash,    neigh4_used,   neigh4_set,
                                        neigh4_clear};

const struct neigh_kind neigh_kind6 = {"IPv6 neighbour", NEIGH6_SHM_KIND, NEIGH6_VERSION, sizeof(struct neigh6_entry),
                                        neigh6_key,       neigh6_hash,     neigh6_used,    neigh6_set,
                                        neigh6_clear};

static int neigh_map_attach(const struct neigh_kind *k, int fd, void **base, size_t *size, struct ipc_err *err)
{
    int ret = ipc_shm_attach(fd, k->shm_kind, k->version, base, size, err);
    if (ret < 0)
        return ret;
    uint32_t cap = ((const struct neigh_hdr *)*base)->cap;
    if (cap < 16 || (cap & (cap - 1)) || NEIGH_HDR_BYTES + (size_t)cap * k->entry_bytes != *size) {
        ipc_shm_unmap(*base, *size);
        return ipc_errf(err, -EPROTO, "%s region: capacity %u does not match its size %zu", k->what, cap, *size);
    }
    return 0;
}

int neigh_attach(struct neigh_table *nt, int fd, struct ipc_err *err)
{
    void *base;
    size_t size;
    int ret = neigh_map_attach(&neigh_kind4, fd, &base, &size, err);
    if (ret == 0)
        NEIGH_BIND(nt, base, size);
    return ret;
}

int neigh6_attach(struct neigh6_table *nt, int fd, struct ipc_err *err)
{
    void *base;
    size_t size;
    int ret = neigh_map_attach(&neigh_kind6, fd, &base, &size, err);
    if (ret == 0)
        NEIGH_BIND(nt, base, size);
    return ret;
}

void neigh_detach(struct neigh_table *nt)
{
    ipc_shm_unmap(nt->sh, nt->size);
    memset(nt, 0, sizeof(*nt));
}

void neigh6_detach(struct neigh6_table *nt)
{
    ipc_shm_unmap(nt->sh, nt->size);
    memset(nt, 0, sizeof(*nt));
}

/* The entry at @i of a table of @k's entries from @e. */
static uint8_t *neigh_at(const struct neigh_kind *k, void *e, uint32_t i)
{
    return (uint8_t *)e + (size_t)i * k->entry_bytes;
}

static _Atomic uint32_t *neigh_seq(void *e)
{
    return (_Atomic uint32_t *)e; /* every entry's first word */
}

/* Bounded: the supervisor reads from its event loop, and a router that died
 * inside a write leaves the sequence odd until its successor repairs it.
 * Such an entry reads as busy meanwhile. */
static int neigh_map_read(const struct neigh_kind *k, void *e, void *out, uint32_t *budget)
{
    size_t skip = sizeof(uint32_t);
    for (;;) {
        uint32_t s = ipc_ld_acq(neigh_seq(e));
        if (!(s & 1)) {
            memcpy((uint8_t *)out + skip, (uint8_t *)e + skip, k->entry_bytes - skip);
            atomic_thread_fence(memory_order_acquire);
            if (ipc_ld_rlx(neigh_seq(e)) == s)
                return k->used(out);
        }
        if (*budget == 0) {
            k->clear(out);
            return -EBUSY;
        }
        (*budget)--;
    }
}

int neigh_read(const struct neigh_table *nt, uint32_t i, struct neigh_entry *out, uint32_t *budget)
{
    return neigh_map_read(&neigh_kind4, &nt->e[i & nt->mask], out, budget);
}

int neigh6_read(const struct neigh6_table *nt, uint32_t i, struct neigh6_entry *out, uint32_t *budget)
{
    return neigh_map_read(&neigh_kind6, &nt->e[i & nt->mask], out, budget);
}

/* A new, empty entry for @key (absent), or NULL when the table is 3/4 full. */
static void *neigh_map_insert(const struct neigh_kind *k, void *tab, uint32_t mask, uint32_t *count, const void *key)
{
    if (*count >= (mask + 1) / 4 * 3)
        return NULL;
    uint32_t i = k->hash(key) & mask;
    while (k->used(neigh_at(k, tab, i)))
        i = (i + 1) & mask;
    uint8_t *e = neigh_at(k, tab, i);
    neigh_seq_begin(neigh_seq(e));
    memset(e + sizeof(uint32_t), 0, k->entry_bytes - sizeof(uint32_t));
    k->set(e, key);
    neigh_seq_end(neigh_seq(e));
    (*count)++;
    return e;
}

struct neigh_entry *neigh_insert(struct neigh_table *nt, uint32_t ip)
{
    return ip ? neigh_map_insert(&neigh_kind4, nt->e, nt->mask, &nt->sh->count, &ip) : NULL;
}

struct neigh6_entry *neigh6_insert(struct neigh6_table *nt, const uint8_t *ip)
{
    return neigh_map_insert(&neigh_kind6, nt->e, nt->mask, &nt->sh->count, ip);
}

/* Remove entry @x (its queue must be empty or already accounted for):
 * backward-shift deletion, each entry rewritten under its seqlock. */
static void neigh_map_remove(const struct neigh_kind *k, void *tab, uint32_t mask, uint32_t *count, void *x)
{
    size_t skip = sizeof(uint32_t);
    uint32_t i = (uint32_t)(((uint8_t *)x - (uint8_t *)tab) / k->entry_bytes), j = i;
    for (;;) {
        uint8_t *hole = neigh_at(k, tab, i), *e;
        neigh_seq_begin(neigh_seq(hole));
        k->clear(hole);
        neigh_seq_end(neigh_seq(hole));
        for (;;) {
            j = (j + 1) & mask;
            e = neigh_at(k, tab, j);
            if (!k->used(e))
                goto out;
            uint32_t home = k->hash(k->key(e)) & mask;
            /* Move j back into the hole at i unless its home lies cyclically in (i, j]. */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        neigh_seq_begin(neigh_seq(hole));
        memcpy(hole + skip, e + skip, k->entry_bytes - skip);
        neigh_seq_end(neigh_seq(hole));
        i = j;
    }
out:
    (*count)--;
}

void neigh_remove(struct neigh_table *nt, struct neigh_entry *e)
{
    neigh_map_remove(&neigh_kind4, nt->e, nt->mask, &nt->sh->count, e);
}

void neigh6_remove(struct neigh6_table *nt, struct neigh6_entry *e)
{
    neigh_map_remove(&neigh_kind6, nt->e, nt->mask, &nt->sh->count, e);
}
