/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_map.c: the routes the sources named, by prefix: an
 * open-addressing hash table with linear probing and backward-shift
 * deletion (no tombstones), at most half full. The supervisor's own
 * memory: sizeof(struct sup_rte) bytes a slot, two to four slots a route.
 */
#include "supervisor/routes.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rt_hash(uint8_t family, const uint8_t *dst, uint8_t plen)
{
    uint64_t a, b;
    memcpy(&a, dst, 8);
    memcpy(&b, dst + 8, 8);
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    h ^= ((uint64_t)family << 8 | plen) * 0x165667b19e3779f9ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static bool rt_is(const struct sup_rte *e, uint8_t family, const uint8_t *dst, uint8_t plen)
{
    return e->used && e->family == family && e->plen == plen && memcmp(e->dst, dst, 16) == 0;
}

struct sup_rte *sup_rtmap_find(const struct sup_rtmap *m, uint8_t family, const uint8_t *dst, uint8_t plen)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = rt_hash(family, dst, plen) & mask;; i = (i + 1) & mask) {
        struct sup_rte *e = &m->e[i];
        if (!e->used)
            return NULL;
        if (rt_is(e, family, dst, plen))
            return e;
    }
}

static int rt_grow(struct sup_rtmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    struct sup_rte *n = calloc(cap, sizeof(*n));
    if (!n)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        const struct sup_rte *e = &m->e[i];
        if (!e->used)
            continue;
        size_t j = rt_hash(e->family, e->dst, e->plen) & (cap - 1);
        while (n[j].used)
            j = (j + 1) & (cap - 1);
        n[j] = *e;
    }
    free(m->e);
    m->e = n;
    m->cap = cap;
    return 0;
}

struct sup_rte *sup_rtmap_insert(struct sup_rtmap *m, uint8_t family, const uint8_t *dst, uint8_t plen)
{
    struct sup_rte *e = sup_rtmap_find(m, family, dst, plen);
    if (e)
        return e;
    if ((m->n + 1) * 2 > m->cap && rt_grow(m) < 0)
        return NULL;
    size_t mask = m->cap - 1, i = rt_hash(family, dst, plen) & mask;
    while (m->e[i].used)
        i = (i + 1) & mask;
    e = &m->e[i];
    memset(e, 0, sizeof(*e));
    memcpy(e->dst, dst, 16);
    e->family = family;
    e->plen = plen;
    e->used = 1;
    m->n++;
    return e;
}

void sup_rtmap_remove(struct sup_rtmap *m, struct sup_rte *e)
{
    size_t mask = m->cap - 1, hole = (size_t)(e - m->e);
    memset(e, 0, sizeof(*e));
    m->n--;
    /* Backward shift: pull each later entry of the run into the hole
     * unless its home lies cyclically in (hole, it]. */
    for (size_t j = (hole + 1) & mask; m->e[j].used; j = (j + 1) & mask) {
        size_t home = rt_hash(m->e[j].family, m->e[j].dst, m->e[j].plen) & mask;
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays)
            continue;
        m->e[hole] = m->e[j];
        memset(&m->e[j], 0, sizeof(m->e[j]));
        hole = j;
    }
}

void sup_rtmap_free(struct sup_rtmap *m)
{
    free(m->e);
    m->e = NULL;
    m->cap = m->n = 0;
}
