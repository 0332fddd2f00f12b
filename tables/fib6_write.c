/* SPDX-License-Identifier: MIT */
/*
 * tables/fib6_write.c: the IPv6 FIB's writer half, linked by the supervisor
 * alone: create, add, replace, delete, iterate, and the deferred reuse of
 * groups and next hops. The layout and the memory-ordering argument are in
 * fib6.h; here each table store is tagged with the step of that argument it
 * implements.
 *
 * Defence in depth. The tables are sealed, so only this process writes
 * them; still, every pointer here is derived from the sizes the writer keeps
 * in its own memory (fib->lim), never from the region's layout page, and
 * every index read back from the region is checked before it is followed:
 * a group index in an entry, a next-hop index in a hash slot, a free-stack
 * or retire-queue slot, the counters of the layout page. A failed check
 * (FIB6_OK) counts in fib->corrupt and fails the update with -EUCLEAN,
 * leaving the region dirty: the supervisor rebuilds it from its routes.
 * Hash probes are bounded by the table's size, and walks down the trie by
 * its 14 levels, so a corrupt region can neither send a loop past the
 * mapping nor keep it spinning.
 *
 * Every capacity check (prefixes, groups, next hops) is made before the
 * first store of an update, so an update either happens whole or changes
 * nothing; only a failed bounds check can stop one half-way.
 */
#include "tables/fib6_impl.h"
#include "tables/fib6_write.h"

#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * Called as a group (@tbl8 true) or a next-hop slot is taken for a new life,
 * before anything is written to it. A test that includes this file defines
 * it to stamp the object (tests/unit/test_rt_fib6_section.c); in every build
 * of the supervisor it is nothing.
 */
#ifndef FIB6_ON_NEW_LIFE
#define FIB6_ON_NEW_LIFE(tbl8, idx) ((void)0)
#endif

#define FIB6_TOP_LEVEL 13u /* the last group level: bits 120..127 */

static bool fib6_corrupt(struct fib6 *fib)
{
    fib->corrupt++;
    return false;
}

/* A bounds check on something read back from the region. */
#define FIB6_OK(fib, cond) (ipc_likely(cond) ? true : fib6_corrupt(fib))

/* Process-local pointers into the writer arrays, from the writer's own sizes. */
struct fib6_w {
    uint32_t *nh_ref;
    struct fib6_hslot *pfx, *nhh;
    uint32_t *tbl8_free, *tbl8_rq_idx, *nh_free, *nh_rq_idx;
    uint64_t *tbl8_rq_gen, *nh_rq_gen;
};

static struct fib6_w fib6_w(const struct fib6 *fib)
{
    struct fib6_params p = {
        .max_prefixes = fib->lim.max_prefixes, .tbl8_groups = fib->lim.tbl8_groups, .max_nh = fib->lim.max_nh};
    struct fib6_layout l;
    fib6_impl_layout(&l, &p);
    uint8_t *b = fib->base;
    struct fib6_w w = {
        .nh_ref = (uint32_t *)(b + l.off_nh_ref),
        .pfx = (struct fib6_hslot *)(b + l.off_pfx),
        .nhh = (struct fib6_hslot *)(b + l.off_nhh),
        .tbl8_free = (uint32_t *)(b + l.off_tbl8_free),
        .tbl8_rq_idx = (uint32_t *)(b + l.off_tbl8_rq_idx),
        .tbl8_rq_gen = (uint64_t *)(b + l.off_tbl8_rq_gen),
        .nh_free = (uint32_t *)(b + l.off_nh_free),
        .nh_rq_idx = (uint32_t *)(b + l.off_nh_rq_idx),
        .nh_rq_gen = (uint64_t *)(b + l.off_nh_rq_gen),
    };
    return w;
}

/* The layout page's counters, checked against the writer's own sizes. */
static bool fib6_state_ok(struct fib6 *fib)
{
    const struct fib6_layout *l = fib->lay;
    const struct fib6_limits *m = &fib->lim;
    return FIB6_OK(fib, l->n_prefixes <= m->max_prefixes && l->n_nh <= m->max_nh && l->tbl8_hwm <= m->tbl8_groups &&
                            l->tbl8_nfree <= l->tbl8_hwm && l->tbl8_rq_head < m->tbl8_groups &&
                            l->tbl8_rq_len <= l->tbl8_hwm - l->tbl8_nfree && l->nh_hwm <= m->max_nh &&
                            l->nh_nfree <= l->nh_hwm && l->nh_rq_head < m->max_nh &&
                            l->nh_rq_len <= l->nh_hwm - l->nh_nfree);
}

int fib6_create(const char *name, const struct fib6_params *p, int readers_fd, struct fib6 *fib, int *fd, int *rfd,
                struct ipc_err *err)
{
    struct fib6_params def = {.max_prefixes = 524288, .tbl8_groups = 262144, .max_nh = 65536};
    if (!p)
        p = &def;
    if (p->max_prefixes == 0 || p->max_prefixes > FIB6_MAX_PREFIXES || p->tbl8_groups == 0 ||
        p->tbl8_groups > FIB6_MAX_GROUPS || p->max_nh == 0 || p->max_nh > FIB6_MAX_NH)
        return ipc_errf(err, -EINVAL, "fib6 %s: bad sizes (prefixes %u, groups %u, next hops %u)", name,
                        p->max_prefixes, p->tbl8_groups, p->max_nh);
    struct fib6_layout l;
    uint64_t size = fib6_impl_layout(&l, p);
    void *base, *rbase;
    int ret;
    if (readers_fd < 0) {
        char rname[64];
        snprintf(rname, sizeof(rname), "%.50s-readers", name);
        ret = ipc_shm_create(rname, IPC_SHM_FIB_READERS, FIB_READERS_VERSION, sizeof(struct fib_shared), rfd, &rbase,
                             err);
        if (ret < 0)
            return ret;
    } else {
        /* The IPv4 FIB's: its generation and slots are already live. */
        ret = ipc_shm_attach_fixed(readers_fd, IPC_SHM_FIB_READERS, FIB_READERS_VERSION, sizeof(struct fib_shared),
                                   &rbase, err);
        if (ret < 0)
            return ret;
        *rfd = readers_fd;
    }
    ret = ipc_shm_create(name, IPC_SHM_FIB6, FIB6_VERSION, size, fd, &base, err);
    if (ret < 0)
        goto out_readers;
    /* Our mapping is writable; from here on no other can be. */
    if ((ret = ipc_shm_seal_writes(*fd, name, err)) < 0)
        goto out_tables;
    memset(fib, 0, sizeof(*fib));
    memcpy((uint8_t *)base + FIB6_PAGE, &l, sizeof(l));
    fib6_impl_bind(fib, base, size);
    fib->sh = rbase;
    fib->sh_size = sizeof(struct fib_shared);
    fib->writer = true;
    fib->lim = (struct fib6_limits){.max_prefixes = p->max_prefixes,
                                    .tbl8_groups = p->tbl8_groups,
                                    .max_nh = p->max_nh,
                                    .pfx_mask = l.pfx_mask,
                                    .nhh_mask = l.nhh_mask};
    if (readers_fd < 0)
        ipc_st_rel(&fib->sh->gen, 1);
    return 0;

out_tables:
    ipc_shm_unmap(base, size);
    close(*fd);
out_readers:
    ipc_shm_unmap(rbase, sizeof(struct fib_shared));
    if (readers_fd < 0)
        close(*rfd);
    return ret;
}

/* ---- addresses ---- */

struct fib6_key {
    uint64_t hi, lo; /* the address as two host-order halves */
};

static struct fib6_key fib6_key(const uint8_t *a)
{
    struct fib6_key k;
    uint64_t h, l;
    memcpy(&h, a, 8);
    memcpy(&l, a + 8, 8);
    k.hi = be64toh(h);
    k.lo = be64toh(l);
    return k;
}

static void fib6_key_bytes(struct fib6_key k, uint8_t *a)
{
    uint64_t h = htobe64(k.hi), l = htobe64(k.lo);
    memcpy(a, &h, 8);
    memcpy(a + 8, &l, 8);
}

static struct fib6_key fib6_key_mask(struct fib6_key k, unsigned len)
{
    uint64_t mh = len == 0 ? 0 : len >= 64 ? ~0ull : ~0ull << (64 - len);
    uint64_t ml = len <= 64 ? 0 : len >= 128 ? ~0ull : ~0ull << (128 - len);
    k.hi &= mh;
    k.lo &= ml;
    return k;
}

/* ---- hashes (writer only; linear probing, backward-shift deletion) ---- */

static uint32_t fib6_hash(uint64_t a, uint64_t b, uint32_t c)
{
    uint64_t k = a * 0x9e3779b97f4a7c15ull ^ (b + c) * 0xc2b2ae3d27d4eb4full ^ c;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (uint32_t)k;
}

static uint32_t fib6_slot_hash(const struct fib6_hslot *s)
{
    return fib6_hash(s->k0, s->k1, s->k2);
}

/* The slot holding the key, or NULL. At most one pass over the table. */
static struct fib6_hslot *fib6_h_find(struct fib6_hslot *t, uint32_t mask, uint64_t k0, uint64_t k1, uint32_t k2)
{
    uint32_t i = fib6_hash(k0, k1, k2) & mask;
    for (uint32_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
        if (!t[i].used)
            return NULL;
        if (t[i].k0 == k0 && t[i].k1 == k1 && t[i].k2 == k2)
            return &t[i];
    }
    return NULL;
}

/* Insert a key known to be absent; false if the table has no empty slot
 * (never, at half load, unless the region is corrupt). */
static bool fib6_h_insert(struct fib6_hslot *t, uint32_t mask, uint64_t k0, uint64_t k1, uint32_t k2, uint32_t val)
{
    uint32_t i = fib6_hash(k0, k1, k2) & mask;
    for (uint32_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
        if (!t[i].used) {
            t[i] = (struct fib6_hslot){.k0 = k0, .k1 = k1, .k2 = k2, .val = val, .used = 1};
            return true;
        }
    }
    return false;
}

static void fib6_h_remove(struct fib6_hslot *t, uint32_t mask, struct fib6_hslot *s)
{
    uint32_t i = (uint32_t)(s - t);
    uint32_t j = i;
    for (uint32_t n = 0; n <= mask; n++) {
        t[i].used = 0;
        for (;;) {
            j = (j + 1) & mask;
            if (!t[j].used || j == i)
                return;
            uint32_t home = fib6_slot_hash(&t[j]) & mask;
            /* Move j back into the hole at i unless its home lies cyclically in (i, j]. */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        t[i] = t[j];
        i = j;
    }
}

/* ---- deferred reuse ---- */

/* Unlinking is done: bump gen (W2 side) and return the retire stamp. */
static uint64_t fib6_retire_gen(struct fib6 *fib)
{
    return atomic_fetch_add_explicit(&fib->sh->gen, 1, memory_order_seq_cst) + 1;
}

/* Can an object retired at @g be reused? */
static bool fib6_quiet_since(struct fib6 *fib, uint64_t g)
{
    ipc_fence_sc(); /* W2: pairs with R2 in fib6_read_begin (and fib_read_begin when shared) */
    for (unsigned r = 0; r < FIB_MAX_READERS; r++) {
        uint64_t a = ipc_ld_acq(&fib->sh->reader[r].active);
        if (a != 0 && a < g)
            return false;
    }
    return true;
}

/* One retire queue (groups or next hops): a ring of @cap in the region. */
struct fib6_rq {
    uint32_t cap;
    uint32_t *nfree, *head, *len, *free_stack, *idx;
    uint64_t *gen;
};

static struct fib6_rq fib6_rq_tbl8(struct fib6 *fib, const struct fib6_w *w)
{
    struct fib6_layout *l = fib->lay;
    return (struct fib6_rq){fib->lim.tbl8_groups, &l->tbl8_nfree, &l->tbl8_rq_head, &l->tbl8_rq_len,
                            w->tbl8_free,         w->tbl8_rq_idx, w->tbl8_rq_gen};
}

static struct fib6_rq fib6_rq_nh(struct fib6 *fib, const struct fib6_w *w)
{
    struct fib6_layout *l = fib->lay;
    return (struct fib6_rq){fib->lim.max_nh, &l->nh_nfree, &l->nh_rq_head, &l->nh_rq_len,
                            w->nh_free,      w->nh_rq_idx, w->nh_rq_gen};
}

/* Move what no reader can hold from @q's retire queue to its free stack. */
static unsigned fib6_rq_reclaim(struct fib6 *fib, const struct fib6_rq *q)
{
    unsigned n = 0;
    while (*q->len > 0) {
        uint32_t h = *q->head;
        if (!FIB6_OK(fib, h < q->cap && *q->len <= q->cap && *q->nfree < q->cap && q->idx[h] < q->cap))
            break;
        if (!fib6_quiet_since(fib, q->gen[h]))
            break;
        q->free_stack[(*q->nfree)++] = q->idx[h];
        *q->head = (h + 1) % q->cap;
        (*q->len)--;
        n++;
    }
    return n;
}

static bool fib6_rq_push(struct fib6 *fib, const struct fib6_rq *q, uint32_t i, uint64_t gen)
{
    if (!FIB6_OK(fib, *q->head < q->cap && *q->len < q->cap))
        return false;
    uint32_t tail = (uint32_t)(((uint64_t)*q->head + *q->len) % q->cap);
    q->idx[tail] = i;
    q->gen[tail] = gen;
    (*q->len)++;
    return true;
}

unsigned fib6_reclaim(struct fib6 *fib)
{
    if (!fib->writer)
        return 0;
    struct fib6_w w = fib6_w(fib);
    struct fib6_rq g = fib6_rq_tbl8(fib, &w), h = fib6_rq_nh(fib, &w);
    return fib6_rq_reclaim(fib, &g) + fib6_rq_reclaim(fib, &h);
}

void fib6_reader_reset(struct fib6 *fib, unsigned slot)
{
    if (slot < FIB_MAX_READERS)
        ipc_st_rel(&fib->sh->reader[slot].active, 0);
}

/*
 * Wait briefly until @want objects are free (free stack @nfree plus the
 * never-used ones above the high-water mark), for when they are needed now.
 * Readers hold a slot for one batch (microseconds), so 10 ms is ample unless
 * one is stopped; then the caller gets -EAGAIN.
 */
static bool fib6_wait_free(struct fib6 *fib, const struct fib6_rq *q, const uint32_t *hwm, uint32_t want)
{
    struct timespec t0, t;
    uint64_t bad = fib->corrupt;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if ((uint64_t)*q->nfree + (q->cap - *hwm) >= want)
            return true;
        if (*q->len == 0)
            return false;
        fib6_rq_reclaim(fib, q);
        if (fib->corrupt != bad)
            return false; /* the queue failed a check: the caller says -EUCLEAN */
        if ((uint64_t)*q->nfree + (q->cap - *hwm) >= want)
            return true;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000l + (t.tv_nsec - t0.tv_nsec) > 10000000l)
            return false;
        sched_yield();
    }
}

/* Take a free object (fib6_wait_free said there is one); UINT32_MAX if the
 * free stack holds an impossible index. */
static uint32_t fib6_take(struct fib6 *fib, const struct fib6_rq *q, uint32_t *hwm)
{
    if (*q->nfree == 0)
        return (*hwm)++;
    uint32_t i = q->free_stack[--(*q->nfree)];
    return FIB6_OK(fib, i < *hwm) ? i : UINT32_MAX;
}

/* ---- next hops ---- */

static void fib6_nh_words(const struct fib6_nh *nh, uint64_t v[3])
{
    memcpy(&v[0], nh->gw, 8);
    memcpy(&v[1], nh->gw + 8, 8);
    v[2] = (uint64_t)nh->port | (uint64_t)nh->flags << 16;
}

/* Is there a slot for @nh, existing or free? (The check before the update.) */
static int fib6_nh_room(struct fib6 *fib, const struct fib6_w *w, const struct fib6_nh *nh)
{
    uint64_t v[3];
    fib6_nh_words(nh, v);
    if (fib6_h_find(w->nhh, fib->lim.nhh_mask, v[0], v[1], (uint32_t)v[2]))
        return 0;
    struct fib6_rq q = fib6_rq_nh(fib, w);
    uint64_t bad = fib->corrupt;
    bool ok = fib6_wait_free(fib, &q, &fib->lay->nh_hwm, 1);
    if (fib->corrupt != bad) /* a retire-queue slot failed its check */
        return -EUCLEAN;
    return ok ? 0 : *q.len ? -EAGAIN : -ENOSPC;
}

/* Find or create the next hop @nh (fib6_nh_room said it can); takes a reference. */
static int fib6_nh_get(struct fib6 *fib, const struct fib6_w *w, const struct fib6_nh *nh, uint32_t *idx)
{
    struct fib6_layout *l = fib->lay;
    uint64_t v[3];
    fib6_nh_words(nh, v);
    struct fib6_hslot *s = fib6_h_find(w->nhh, fib->lim.nhh_mask, v[0], v[1], (uint32_t)v[2]);
    if (s) {
        if (!FIB6_OK(fib, s->val < fib->lim.max_nh && w->nh_ref[s->val] > 0))
            return -EUCLEAN;
        w->nh_ref[s->val]++;
        *idx = s->val;
        return 0;
    }
    struct fib6_rq q = fib6_rq_nh(fib, w);
    uint32_t i = fib6_take(fib, &q, &l->nh_hwm);
    if (i == UINT32_MAX)
        return -EUCLEAN;
    FIB6_ON_NEW_LIFE(false, i);
    /* Before any entry names it: entries are stored with release. */
    _Atomic uint64_t *slot = &fib->nh[(size_t)i * FIB6_NH_WORDS];
    for (unsigned k = 0; k < 3; k++)
        ipc_st_rlx(&slot[k], v[k]);
    ipc_st_rlx(&slot[3], 0);
    if (!FIB6_OK(fib, fib6_h_insert(w->nhh, fib->lim.nhh_mask, v[0], v[1], (uint32_t)v[2], i)))
        return -EUCLEAN;
    w->nh_ref[i] = 1;
    l->n_nh++;
    *idx = i;
    return 0;
}

/* Drop a reference to next hop @i; the last one retires it, stamped with
 * @gen (0: a stamp of its own, taken now that no entry names it). */
static int fib6_nh_put(struct fib6 *fib, const struct fib6_w *w, uint32_t i, uint64_t gen)
{
    struct fib6_layout *l = fib->lay;
    if (!FIB6_OK(fib, i < fib->lim.max_nh && w->nh_ref[i] > 0 && l->n_nh > 0))
        return -EUCLEAN;
    if (--w->nh_ref[i] > 0)
        return 0;
    const _Atomic uint64_t *slot = &fib->nh[(size_t)i * FIB6_NH_WORDS];
    struct fib6_hslot *s = fib6_h_find(w->nhh, fib->lim.nhh_mask, ipc_ld_rlx(&slot[0]), ipc_ld_rlx(&slot[1]),
                                       (uint32_t)ipc_ld_rlx(&slot[2]));
    if (s)
        fib6_h_remove(w->nhh, fib->lim.nhh_mask, s);
    /* The slot keeps its value for readers that still hold the index. */
    struct fib6_rq q = fib6_rq_nh(fib, w);
    if (!fib6_rq_push(fib, &q, i, gen ? gen : fib6_retire_gen(fib)))
        return -EUCLEAN;
    l->n_nh--;
    return 0;
}

/* ---- the trie ---- */

static uint32_t fib6_entry(uint32_t nh, unsigned len)
{
    return FIB6_E_VALID | (uint32_t)len << FIB6_E_DEPTH_SHIFT | nh;
}

static int fib6_entry_depth(uint32_t e)
{
    return (e & FIB6_E_VALID) ? (int)((e >> FIB6_E_DEPTH_SHIFT) & 0xff) : -1;
}

/* The level a prefix of @len lives at: 0 (tbl24) for /0../24, then one per 8 bits. */
static unsigned fib6_level(unsigned len)
{
    return len <= 24 ? 0 : (len - 17) / 8;
}

/* The index of @a's entry in its table at @level. */
static uint32_t fib6_index(const uint8_t *a, unsigned level)
{
    return level == 0 ? fib6_idx24(a) : a[2 + level];
}

/* The group a link entry @e names, checked; NULL (counted) if impossible. */
static _Atomic uint32_t *fib6_group(struct fib6 *fib, uint32_t e, unsigned level)
{
    uint32_t g = e & FIB6_E_IDX;
    if (!FIB6_OK(fib, level <= FIB6_TOP_LEVEL && g < fib->lay->tbl8_hwm && g < fib->lim.tbl8_groups))
        return NULL;
    return &fib->tbl8[(size_t)g << 8];
}

/* The range of entries a prefix of @len (host bits zero) covers in its table. */
static void fib6_range(const uint8_t *a, unsigned len, uint32_t *lo, uint32_t *hi)
{
    unsigned level = fib6_level(len), span = 24 + 8 * level;
    *lo = fib6_index(a, level);
    *hi = *lo + (1u << (span - len)) - 1;
}

/*
 * Write @e over the entries [lo, hi] of @t (at @level) that a prefix no
 * longer than @len wrote, and over those of every group linked from the
 * range, all of whose entries lie inside it. (@len's own entries are among
 * them: this is also the replace.)
 */
static int fib6_fill(struct fib6 *fib, _Atomic uint32_t *t, unsigned level, uint32_t lo, uint32_t hi, uint32_t e,
                     int len)
{
    for (uint32_t j = lo; j <= hi; j++) {
        uint32_t x = ipc_ld_rlx(&t[j]);
        if (x & FIB6_E_EXT) {
            _Atomic uint32_t *g = fib6_group(fib, x, level + 1);
            int ret = g ? fib6_fill(fib, g, level + 1, 0, 255, e, len) : -EUCLEAN;
            if (ret < 0)
                return ret;
        } else if (fib6_entry_depth(x) <= len) {
            ipc_st_rel(&t[j], e);
        }
    }
    return 0;
}

/* The delete's fill: the entries that the /@len prefix wrote become @r. */
static int fib6_unfill(struct fib6 *fib, _Atomic uint32_t *t, unsigned level, uint32_t lo, uint32_t hi, uint32_t r,
                       int len)
{
    for (uint32_t j = lo; j <= hi; j++) {
        uint32_t x = ipc_ld_rlx(&t[j]);
        if (x & FIB6_E_EXT) {
            _Atomic uint32_t *g = fib6_group(fib, x, level + 1);
            int ret = g ? fib6_unfill(fib, g, level + 1, 0, 255, r, len) : -EUCLEAN;
            if (ret < 0)
                return ret;
        } else if (fib6_entry_depth(x) == len) {
            ipc_st_rel(&t[j], r);
        }
    }
    return 0;
}

/* The path from tbl24 down to a prefix's level: each level's table and the
 * entry in it that the address goes through. */
struct fib6_path {
    _Atomic uint32_t *t[FIB6_LEVELS];
    uint32_t i[FIB6_LEVELS];
    uint32_t g[FIB6_LEVELS]; /* the group index of t[k], k >= 1 */
};

/*
 * Walk @a's path down to @level as far as links go. Returns the level it
 * reached (== @level when every link on the way exists), or -EUCLEAN.
 */
static int fib6_walk(struct fib6 *fib, const uint8_t *a, unsigned level, struct fib6_path *p)
{
    p->t[0] = fib->tbl24;
    p->i[0] = fib6_idx24(a);
    for (unsigned k = 0; k < level; k++) {
        uint32_t x = ipc_ld_rlx(&p->t[k][p->i[k]]);
        if (!(x & FIB6_E_EXT))
            return (int)k;
        _Atomic uint32_t *g = fib6_group(fib, x, k + 1);
        if (!g)
            return -EUCLEAN;
        p->t[k + 1] = g;
        p->g[k + 1] = x & FIB6_E_IDX;
        p->i[k + 1] = fib6_index(a, k + 1);
    }
    return (int)level;
}

/* Is there room for @want new groups? (The check before the update.) */
static int fib6_groups_room(struct fib6 *fib, const struct fib6_w *w, uint32_t want)
{
    if (want == 0)
        return 0;
    struct fib6_rq q = fib6_rq_tbl8(fib, w);
    uint64_t bad = fib->corrupt;
    bool ok = fib6_wait_free(fib, &q, &fib->lay->tbl8_hwm, want);
    if (fib->corrupt != bad) /* a retire-queue slot failed its check */
        return -EUCLEAN;
    return ok ? 0 : *q.len ? -EAGAIN : -ENOSPC;
}

static int fib6_group_new(struct fib6 *fib, const struct fib6_w *w, uint32_t *g)
{
    struct fib6_rq q = fib6_rq_tbl8(fib, w);
    uint32_t i = fib6_take(fib, &q, &fib->lay->tbl8_hwm);
    if (i == UINT32_MAX)
        return -EUCLEAN;
    FIB6_ON_NEW_LIFE(true, i);
    *g = i;
    return 0;
}

static bool fib6_args_ok(const struct fib6 *fib, const uint8_t *addr, unsigned len)
{
    if (!fib->writer || len > 128)
        return false;
    struct fib6_key k = fib6_key(addr), m = fib6_key_mask(k, len);
    return k.hi == m.hi && k.lo == m.lo;
}

static int fib6_set(struct fib6 *fib, const uint8_t *a, unsigned len, const struct fib6_nh *nh, bool replace)
{
    if (!fib6_args_ok(fib, a, len) || nh->port == 0xffff || nh->flags != 0)
        return -EINVAL;
    struct fib6_layout *l = fib->lay;
    if (l->dirty || !fib6_state_ok(fib))
        return -EUCLEAN;
    struct fib6_w w = fib6_w(fib);
    struct fib6_key k = fib6_key(a);
    struct fib6_hslot *s = fib6_h_find(w.pfx, fib->lim.pfx_mask, k.hi, k.lo, len);
    if (s && !replace)
        return -EEXIST;
    if (!s && l->n_prefixes >= fib->lim.max_prefixes)
        return -ENOSPC;

    /* What the update needs, before anything is written: the groups from
     * the last link on the path down to the prefix's level, and a next hop. */
    unsigned level = fib6_level(len);
    struct fib6_path p;
    int reached = fib6_walk(fib, a, level, &p);
    if (reached < 0)
        return reached;
    int ret = fib6_groups_room(fib, &w, level - (unsigned)reached);
    if (ret == 0)
        ret = fib6_nh_room(fib, &w, nh);
    if (ret < 0)
        return ret;

    l->dirty = 1;
    uint32_t ni;
    if ((ret = fib6_nh_get(fib, &w, nh, &ni)) < 0)
        return ret;
    uint32_t e = fib6_entry(ni, len), lo, hi;
    fib6_range(a, len, &lo, &hi);
    if ((unsigned)reached == level) {
        ret = fib6_fill(fib, p.t[level], level, lo, hi, e, (int)len);
    } else {
        /* A chain of new groups, from the prefix's level up to the one below
         * the last link: each is filled whole (the value of the entry it
         * replaces, and the prefix's entries or the link to the group below),
         * then the top one is published with one store. */
        unsigned top = (unsigned)reached;
        _Atomic uint32_t *at = &p.t[top][p.i[top]];
        uint32_t v = ipc_ld_rlx(at), child = 0;
        for (unsigned lv = level; lv > top && ret == 0; lv--) {
            uint32_t g;
            if ((ret = fib6_group_new(fib, &w, &g)) < 0)
                break;
            _Atomic uint32_t *grp = &fib->tbl8[(size_t)g << 8];
            uint32_t link = fib6_index(a, lv);
            for (unsigned j = 0; j < 256; j++) {
                uint32_t x = v;
                if (lv == level && j >= lo && j <= hi)
                    x = e;
                else if (lv != level && j == link)
                    x = FIB6_E_VALID | FIB6_E_EXT | child;
                ipc_st_rlx(&grp[j], x);
            }
            child = g;
        }
        if (ret == 0)
            ipc_st_rel(at, FIB6_E_VALID | FIB6_E_EXT | child); /* W1 */
    }
    if (ret < 0)
        return ret; /* corrupt: stays dirty */
    if (s) {
        uint32_t old = s->val;
        s->val = ni;
        if ((ret = fib6_nh_put(fib, &w, old, 0)) < 0)
            return ret;
    } else {
        if (!FIB6_OK(fib, fib6_h_insert(w.pfx, fib->lim.pfx_mask, k.hi, k.lo, len, ni)))
            return -EUCLEAN;
        l->n_prefixes++;
    }
    l->dirty = 0;
    return 0;
}

int fib6_add(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    return fib6_set(fib, addr, len, nh, false);
}

int fib6_replace(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    return fib6_set(fib, addr, len, nh, true);
}

/*
 * Can group @t (at @level) fold back into its parent entry: do all its 256
 * entries hold one value, with no link, written by a prefix that covers the
 * whole group (no longer than the parent entry's span)? The last condition
 * matters: sibling prefixes with the same next hop (two /33s, say) also
 * write 256 equal entries, but the parent entry cannot hold them (its span
 * is /32), and deleting one of them must find its group.
 */
static bool fib6_group_flat(const _Atomic uint32_t *t, unsigned level)
{
    uint32_t v = ipc_ld_rlx(&t[0]);
    if ((v & FIB6_E_EXT) || fib6_entry_depth(v) > (int)(16 + 8 * level))
        return false;
    for (unsigned j = 1; j < 256; j++)
        if (ipc_ld_rlx(&t[j]) != v)
            return false;
    return true;
}

int fib6_del(struct fib6 *fib, const uint8_t *a, unsigned len)
{
    if (!fib6_args_ok(fib, a, len))
        return -EINVAL;
    struct fib6_layout *l = fib->lay;
    if (l->dirty || !fib6_state_ok(fib))
        return -EUCLEAN;
    struct fib6_w w = fib6_w(fib);
    struct fib6_key k = fib6_key(a);
    struct fib6_hslot *s = fib6_h_find(w.pfx, fib->lim.pfx_mask, k.hi, k.lo, len);
    if (!s)
        return -ENOENT;
    uint32_t ni = s->val;
    unsigned level = fib6_level(len);
    struct fib6_path p;
    /* A prefix's level always has its group: the prefix's entries keep it
     * from folding. A path that stops short is a corrupt region. */
    if (!FIB6_OK(fib, ni < fib->lim.max_nh && l->n_prefixes > 0 && fib6_walk(fib, a, level, &p) == (int)level))
        return -EUCLEAN;

    /* The covering route: the longest shorter prefix still in the list. */
    uint32_t r = 0;
    for (int cl = (int)len - 1; cl >= 0; cl--) {
        struct fib6_key c = fib6_key_mask(k, (unsigned)cl);
        struct fib6_hslot *cs = fib6_h_find(w.pfx, fib->lim.pfx_mask, c.hi, c.lo, (uint32_t)cl);
        if (cs) {
            if (!FIB6_OK(fib, cs->val < fib->lim.max_nh))
                return -EUCLEAN;
            r = fib6_entry(cs->val, (unsigned)cl);
            break;
        }
    }
    l->dirty = 1;
    fib6_h_remove(w.pfx, fib->lim.pfx_mask, s);
    l->n_prefixes--;
    uint32_t lo, hi;
    fib6_range(a, len, &lo, &hi);
    int ret = fib6_unfill(fib, p.t[level], level, lo, hi, r, (int)len);
    if (ret < 0)
        return ret;

    /* Fold back, bottom up, each group on the path that is one value again
     * (fib6_group_flat): its parent entry takes the value (a reader still
     * inside the group reads the same), and the group retires once the
     * links are gone. */
    uint32_t retired[FIB6_LEVELS];
    unsigned nret = 0;
    for (unsigned kk = level; kk >= 1 && fib6_group_flat(p.t[kk], kk); kk--) {
        ipc_st_rel(&p.t[kk - 1][p.i[kk - 1]], ipc_ld_rlx(&p.t[kk][0]));
        retired[nret++] = p.g[kk];
    }
    uint64_t gen = 0;
    if (nret > 0) {
        gen = fib6_retire_gen(fib);
        struct fib6_rq q = fib6_rq_tbl8(fib, &w);
        for (unsigned i = 0; i < nret; i++)
            if (!fib6_rq_push(fib, &q, retired[i], gen))
                return -EUCLEAN;
    }
    /* The entries that named ni are gone; the same stamp covers it. */
    if ((ret = fib6_nh_put(fib, &w, ni, gen)) < 0)
        return ret;
    l->dirty = 0;
    return 0;
}

int fib6_get(struct fib6 *fib, const uint8_t *addr, unsigned len, struct fib6_nh *nh)
{
    if (!fib6_args_ok(fib, addr, len))
        return -ENOENT;
    struct fib6_w w = fib6_w(fib);
    struct fib6_key k = fib6_key(addr);
    struct fib6_hslot *s = fib6_h_find(w.pfx, fib->lim.pfx_mask, k.hi, k.lo, len);
    if (!s)
        return -ENOENT;
    if (!FIB6_OK(fib, s->val < fib->lim.max_nh))
        return -EUCLEAN;
    *nh = fib6_nh_at(fib, s->val);
    return 0;
}

int fib6_iterate(struct fib6 *fib, int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh),
                 void *arg)
{
    if (!fib->writer)
        return -EINVAL;
    struct fib6_w w = fib6_w(fib);
    for (uint32_t i = 0; i <= fib->lim.pfx_mask; i++) {
        const struct fib6_hslot *s = &w.pfx[i];
        if (!s->used)
            continue;
        if (!FIB6_OK(fib, s->val < fib->lim.max_nh && s->k2 <= 128))
            return -EUCLEAN;
        uint8_t a[16];
        fib6_key_bytes((struct fib6_key){s->k0, s->k1}, a);
        struct fib6_nh nh = fib6_nh_at(fib, s->val);
        int ret = cb(arg, a, s->k2, &nh);
        if (ret)
            return ret;
    }
    return 0;
}

int fib6_snapshot(int fd, int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh),
                  void *arg, bool *dirty, struct ipc_err *err)
{
    const void *cbase;
    size_t size;
    int ret = ipc_shm_attach_ro(fd, IPC_SHM_FIB6, FIB6_VERSION, &cbase, &size, err);
    if (ret < 0)
        return ret;
    struct fib6_layout l, want;
    if (size < 2 * FIB6_PAGE) {
        ipc_shm_unmap((void *)cbase, size);
        return ipc_errf(err, -EPROTO, "fib6 region: %zu bytes, too small for its layout page", size);
    }
    memcpy(&l, (const uint8_t *)cbase + FIB6_PAGE, sizeof(l));
    struct fib6_params p = {.max_prefixes = l.max_prefixes, .tbl8_groups = l.tbl8_groups, .max_nh = l.max_nh};
    if (p.tbl8_groups > FIB6_MAX_GROUPS || p.max_nh > FIB6_MAX_NH || p.max_prefixes > FIB6_MAX_PREFIXES ||
        fib6_impl_layout(&want, &p) != size || want.pfx_mask != l.pfx_mask || want.nhh_mask != l.nhh_mask ||
        memcmp(&want.off_tbl24, &l.off_tbl24, 12 * sizeof(uint64_t)) != 0) {
        ipc_shm_unmap((void *)cbase, size);
        return ipc_errf(err, -EPROTO, "fib6 region: layout does not match its size %zu", size);
    }
    *dirty = l.dirty != 0;
    struct fib6 f;
    memset(&f, 0, sizeof(f));
    fib6_impl_bind(&f, (void *)cbase, size);
    /* fib6_iterate is the writer's, and reads only; every index it reads
     * back is bounded by these limits, taken from the size we mapped. */
    f.writer = true;
    f.lim = (struct fib6_limits){.max_prefixes = p.max_prefixes,
                                 .tbl8_groups = p.tbl8_groups,
                                 .max_nh = p.max_nh,
                                 .pfx_mask = want.pfx_mask,
                                 .nhh_mask = want.nhh_mask};
    ret = fib6_iterate(&f, cb, arg);
    ipc_shm_unmap((void *)cbase, size);
    return ret == -EUCLEAN ? ipc_errf(err, ret, "fib6 region: an entry out of bounds") : ret;
}

void fib6_get_stats(const struct fib6 *fib, struct fib6_stats *st)
{
    const struct fib6_layout *l = fib->lay;
    st->prefixes = l->n_prefixes;
    st->nh = l->n_nh;
    st->tbl8_used = l->tbl8_hwm - l->tbl8_nfree - l->tbl8_rq_len;
    st->tbl8_retired = l->tbl8_rq_len;
    st->tbl8_groups = fib->lim.tbl8_groups ? fib->lim.tbl8_groups : l->tbl8_groups;
    st->nh_retired = l->nh_rq_len;
    st->region_bytes = fib->size;
    st->gen = ipc_ld_rlx(&fib->sh->gen);
    st->corrupt = fib->corrupt;
}
