/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_map.c: the routes the sources named, by prefix: an
 * open-addressing hash table with linear probing and backward-shift
 * deletion (no tombstones), at most half full. The supervisor's own
 * memory: sizeof(struct sup_rte) bytes a slot, two to four slots a route.
 *
 * Growing moves the entries a few at a time: a table of a million routes is
 * 96 MB, and moving half a million entries at once would stop the event
 * loop (and `status`) for longer than a slice. A grow makes the new table
 * and keeps the old one beside it; each insert then moves RT_MOVE_STEP of
 * the old table's slots, so the move ends well before the new table is
 * half full. Meanwhile a lookup that misses the new table looks in the old
 * one, where a moved or removed entry leaves a tombstone (the old table
 * takes no insert, so its probe runs only shorten). A sweep (routes.c)
 * walks the one table: it finishes the move first, a slice at a time
 * (sup_rtmap_settle_some).
 */
#include "supervisor/routes.h"

#include <string.h>
#include <sys/mman.h>

#define RT_MOVE_STEP 4u  /* old slots moved per insert: twice what the new table's room needs */
#define RT_TOMB 0xffu    /* in an old table's family: an entry was there; probing goes on */

/* The slots in pages of their own, zeroed by the kernel as they are first
 * touched. Not MADV_HUGEPAGE: a huge page's fault may compact memory in
 * place (the kernel's `defrag = madvise`), which stopped the loop for over
 * 100 ms on a busy machine. */
static struct sup_rte *rt_alloc(size_t cap)
{
    void *p = mmap(NULL, cap * sizeof(struct sup_rte), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void rt_release(struct sup_rte *e, size_t cap)
{
    if (e)
        munmap(e, cap * sizeof(struct sup_rte));
}

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

static bool rt_in_old(const struct sup_rtmap *m, const struct sup_rte *e)
{
    return m->old && e >= m->old && e < m->old + m->old_cap;
}

/* The old table's search: past tombstones, at most its size. */
static struct sup_rte *rt_find_old(const struct sup_rtmap *m, uint8_t family, const uint8_t *dst, uint8_t plen)
{
    size_t mask = m->old_cap - 1, i = rt_hash(family, dst, plen) & mask;
    for (size_t k = 0; k < m->old_cap; k++, i = (i + 1) & mask) {
        struct sup_rte *e = &m->old[i];
        if (!e->used && e->family != RT_TOMB)
            return NULL;
        if (rt_is(e, family, dst, plen))
            return e;
    }
    return NULL;
}

struct sup_rte *sup_rtmap_find(const struct sup_rtmap *m, uint8_t family, const uint8_t *dst, uint8_t plen)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = rt_hash(family, dst, plen) & mask;; i = (i + 1) & mask) {
        struct sup_rte *e = &m->e[i];
        if (!e->used)
            break;
        if (rt_is(e, family, dst, plen))
            return e;
    }
    return m->old ? rt_find_old(m, family, dst, plen) : NULL;
}

/* Put a copy of @x in the new table's first free slot from its home (the
 * table has room: it is at most half full). */
static struct sup_rte *rt_place(struct sup_rtmap *m, const struct sup_rte *x)
{
    size_t mask = m->cap - 1, i = rt_hash(x->family, x->dst, x->plen) & mask;
    while (m->e[i].used)
        i = (i + 1) & mask;
    m->e[i] = *x;
    return &m->e[i];
}

/* Move the old table's next @k slots into the new one; drop it when done. */
static void rt_move(struct sup_rtmap *m, size_t k)
{
    for (; m->old && k; k--) {
        struct sup_rte *o = &m->old[m->moved];
        if (o->used) {
            rt_place(m, o);
            memset(o, 0, sizeof(*o));
            o->family = RT_TOMB;
        }
        if (++m->moved == m->old_cap) {
            rt_release(m->old, m->old_cap);
            m->old = NULL;
            m->old_cap = m->moved = 0;
        }
    }
}

void sup_rtmap_settle(struct sup_rtmap *m)
{
    rt_move(m, m->old_cap);
}

bool sup_rtmap_settle_some(struct sup_rtmap *m, size_t k)
{
    rt_move(m, k);
    return !m->old;
}

static int rt_grow(struct sup_rtmap *m)
{
    sup_rtmap_settle(m); /* never two old tables (the step makes this rare) */
    size_t cap = m->cap ? m->cap * 2 : 1024;
    struct sup_rte *n = rt_alloc(cap);
    if (!n)
        return -1;
    if (m->cap && m->n) {
        m->old = m->e;
        m->old_cap = m->cap;
        m->moved = 0;
    } else {
        rt_release(m->e, m->cap);
    }
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
    rt_move(m, RT_MOVE_STEP);
    struct sup_rte x;
    memset(&x, 0, sizeof(x));
    memcpy(x.dst, dst, 16);
    x.family = family;
    x.plen = plen;
    x.used = 1;
    m->n++;
    return rt_place(m, &x);
}

void sup_rtmap_remove(struct sup_rtmap *m, struct sup_rte *e)
{
    m->n--;
    if (rt_in_old(m, e)) {
        memset(e, 0, sizeof(*e));
        e->family = RT_TOMB;
        return;
    }
    size_t mask = m->cap - 1, hole = (size_t)(e - m->e);
    memset(e, 0, sizeof(*e));
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

void sup_rtmap_prefetch(const struct sup_rtmap *m, uint8_t family, const uint8_t *dst, uint8_t plen)
{
    if (m->cap)
        __builtin_prefetch(&m->e[rt_hash(family, dst, plen) & (m->cap - 1)], 1);
}

void sup_rtmap_free(struct sup_rtmap *m)
{
    rt_release(m->e, m->cap);
    rt_release(m->old, m->old_cap);
    memset(m, 0, sizeof(*m));
}
