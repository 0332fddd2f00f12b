/* SPDX-License-Identifier: MIT */
/*
 * tables/fib_write.c: the IPv4 FIB's writer half, linked by the supervisor
 * alone: add, replace, delete, match and iterate on the DIR-24-8 tables.
 * Creating the region, the deferred reuse of tbl8 groups and next hops, the
 * hashes and the bounds checks are both families' (tables/fib_common.c).
 * The memory-ordering argument is in fib.h; here each table store is tagged
 * with the step of that argument it implements. Every capacity check is
 * made before the first store of an update, so an update either happens
 * whole or changes nothing; only a failed bounds check (-EUCLEAN, the
 * region left dirty) can stop one half-way.
 */
#include "tables/fib_impl.h"
#include "tables/fib_write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>

/*
 * Called as a tbl8 group (@tbl8 true) or a next-hop slot is taken for a new
 * life, before anything is written to it. A test that includes this file
 * defines it to stamp the object, so that a reader can tell that a link it
 * still holds was reused under it (tests/unit/test_rt_fib_section.c); in
 * every build of the supervisor it is nothing.
 */
#ifndef FIB_ON_NEW_LIFE
#define FIB_ON_NEW_LIFE(tbl8, idx) ((void)0)
#endif

/* ---- the family's plumbing ---- */

static uint32_t fib4_hash(const void *key)
{
    uint64_t k;
    memcpy(&k, key, sizeof(k));
    return fib_mix64(k);
}

static const struct fib_hkind fib4_hkind = {sizeof(struct fib_hslot), sizeof(uint64_t), offsetof(struct fib_hslot, val),
                                            offsetof(struct fib_hslot, used), fib4_hash};

static void fib4_nh_store(struct fib_map *m, uint32_t i, const void *key)
{
    uint64_t v;
    memcpy(&v, key, sizeof(v));
    ipc_st_rlx(&m->nh[i], v);
}

static void fib4_nh_key(const struct fib_map *m, uint32_t i, void *key)
{
    uint64_t v = ipc_ld_rlx(&m->nh[i]);
    memcpy(key, &v, sizeof(v));
}

static void fib4_new_life(bool tbl8, uint32_t idx)
{
    FIB_ON_NEW_LIFE(tbl8, idx);
}

static void fib4_mp_hdr_key(uint32_t g, void *key)
{
    struct fib_nh h = {.gw = g, .flags = FIB_NH_F_GROUP};
    uint64_t v = fib_nh_pack(&h);
    memcpy(key, &v, sizeof(v));
}

static bool fib4_mp_is_hdr(const void *key, uint32_t *g)
{
    uint64_t v;
    memcpy(&v, key, sizeof(v));
    *g = (uint32_t)v;
    return (v >> 48) & FIB_NH_F_GROUP;
}

static const struct fib_wops fib4_ops = {&fib_family4,  &fib4_hkind,      fib4_nh_store, fib4_nh_key,
                                         fib4_new_life, fib4_mp_hdr_key, fib4_mp_is_hdr};

static uint64_t fib_pfx_key(uint32_t addr, unsigned len)
{
    return (uint64_t)addr << 6 | len;
}

/* ---- table updates ---- */

static uint32_t fib_entry(uint32_t nh, unsigned len)
{
    return FIB_E_VALID | (uint32_t)len << 24 | nh;
}

static int fib_entry_depth(uint32_t e)
{
    return (e & FIB_E_VALID) ? (int)((e >> 24) & 0x3f) : -1;
}

static uint32_t fib_mask(unsigned len)
{
    return len == 0 ? 0 : ~0u << (32 - len);
}

/* The group a tbl24 link @t names, checked; NULL (counted) if impossible. */
static _Atomic uint32_t *fib_group(struct fib_map *m, uint32_t t)
{
    uint32_t g = t & FIB_E_IDX;
    if (!FIB_OK(m, g < m->lay->tbl8_hwm && g < m->lim.tbl8_groups))
        return NULL;
    return &m->tbl8[(size_t)g << 8];
}

/*
 * Over the /24s at tbl24 indices [first, first + count), and within each
 * the entries [lo, hi] (all 256 of a group when the range is whole), write
 * @e where the entry's depth passes: <= @len for an add (@add), == @len for
 * a delete (which rewrites a prefix's own entries with the covering
 * route's). A tbl24 entry is rewritten only when the range is its whole /24.
 */
static int fib_fill(struct fib_map *m, uint32_t first, uint32_t count, unsigned lo, unsigned hi, uint32_t e, int len,
                    bool add)
{
    for (uint32_t i = first; i < first + count; i++) {
        uint32_t t = ipc_ld_rlx(&m->tbl24[i]);
        if (!(t & FIB_E_EXT)) {
            int d = fib_entry_depth(t);
            if (lo == 0 && hi == 255 && (add ? d <= len : d == len))
                ipc_st_rel(&m->tbl24[i], e);
            continue;
        }
        _Atomic uint32_t *grp = fib_group(m, t);
        if (!grp)
            return -EUCLEAN;
        for (unsigned j = lo; j <= hi; j++) {
            int d = fib_entry_depth(ipc_ld_rlx(&grp[j]));
            if (add ? d <= len : d == len)
                ipc_st_rel(&grp[j], e);
        }
    }
    return 0;
}

/* The tbl24 indices a prefix covers, and its range within a group when longer than /24. */
static void fib_range(uint32_t addr, unsigned len, uint32_t *first, uint32_t *count, unsigned *lo, unsigned *hi)
{
    *first = addr >> 8;
    *count = len <= 24 ? 1u << (24 - len) : 1;
    *lo = len <= 24 ? 0 : (addr & 0xff);
    *hi = len <= 24 ? 255 : *lo + (1u << (32 - len)) - 1;
}

static bool fib_args_ok(const struct fib *fib, uint32_t addr, unsigned len)
{
    return fib->writer && len <= 32 && !(addr & ~fib_mask(len));
}

/* An add or replace via next hop @nh, or via the group of @mp's members when not NULL. */
static int fib_set(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nh,
                   const struct fib_mp_req *mp, bool replace)
{
    struct fib_map *m = &fib->m;
    if (!fib_args_ok(fib, addr, len) || (!mp && (nh->port == 0xffff || nh->flags != 0)))
        return -EINVAL;
    struct fib_w w;
    uint64_t key = fib_pfx_key(addr, len), nk = mp ? 0 : fib_nh_pack(nh);
    void *s;
    int ret = fib_set_begin(&fib4_ops, m, &w, &key, replace, &s);
    if (ret < 0)
        return ret;
    uint32_t first, count, ni;
    unsigned lo, hi;
    fib_range(addr, len, &first, &count, &lo, &hi);
    /* A group when a prefix longer than /24 finds none. */
    bool need_group = len > 24 && !(ipc_ld_rlx(&m->tbl24[first]) & FIB_E_EXT);
    ret = mp ? fib_mp_set_nh(&fib4_ops, m, &w, need_group, mp, &ni)
             : fib_set_nh(&fib4_ops, m, &w, need_group, &nk, &ni);
    if (ret < 0)
        return ret;
    uint32_t e = fib_entry(ni, len);
    if (need_group) {
        uint32_t g = fib_group_new(&fib4_ops, m, &w), t = ipc_ld_rlx(&m->tbl24[first]);
        if (g == UINT32_MAX)
            return -EUCLEAN;
        _Atomic uint32_t *grp = &m->tbl8[(size_t)g << 8];
        for (unsigned j = 0; j < 256; j++)
            ipc_st_rlx(&grp[j], (j >= lo && j <= hi) ? e : t);
        ipc_st_rel(&m->tbl24[first], FIB_E_VALID | FIB_E_EXT | g); /* W1 */
    }
    if (!need_group)
        ret = fib_fill(m, first, count, lo, hi, e, (int)len, true);
    /* corrupt: stays dirty */
    return ret < 0 ? ret : fib_pfx_commit(&fib4_ops, m, &w, s, &key, ni);
}

int fib_add(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    return fib_set(fib, addr, len, nh, NULL, false);
}

int fib_replace(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    return fib_set(fib, addr, len, nh, NULL, true);
}

static int fib_set_multi(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nhs,
                         const uint16_t *weights, unsigned n, bool replace)
{
    if (n == 1)
        return fib_set(fib, addr, len, nhs, NULL, replace);
    struct fib_mp_req r = {.n = n};
    if (n > FIB_MP_MAX)
        return -EINVAL;
    for (unsigned k = 0; k < n; k++) {
        if (nhs[k].gw == 0 || nhs[k].port == 0xffff || nhs[k].flags != 0)
            return -EINVAL;
        uint64_t v = fib_nh_pack(&nhs[k]);
        memcpy(r.key[k], &v, sizeof(v));
        r.weight[k] = weights ? weights[k] : 1;
    }
    int ret = fib_mp_prepare(&fib4_ops, &r);
    return ret < 0 ? ret : fib_set(fib, addr, len, NULL, &r, replace);
}

int fib_add_multi(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nhs, const uint16_t *weights,
                  unsigned n)
{
    return fib_set_multi(fib, addr, len, nhs, weights, n, false);
}

int fib_replace_multi(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nhs,
                      const uint16_t *weights, unsigned n)
{
    return fib_set_multi(fib, addr, len, nhs, weights, n, true);
}

int fib_group_members(const struct fib *fib, const struct fib_nh *hdr, struct fib_nh *nhs, uint16_t *weights)
{
    struct fib_map *m = (struct fib_map *)&fib->m; /* a failed check counts in it */
    uint64_t hkey = fib_nh_pack(hdr), keys[FIB_MP_MAX][FIB_KEY_MAX / 8];
    int n = fib_mp_members(&fib4_ops, m, &hkey, keys, weights);
    for (int k = 0; k < n; k++)
        nhs[k] = (struct fib_nh){.gw = (uint32_t)keys[k][0], .port = (uint16_t)(keys[k][0] >> 32),
                                 .flags = (uint16_t)(keys[k][0] >> 48)};
    return n;
}

/* The entry of @addr/@len's covering route: the longest shorter prefix still in the list (0: none). */
static int fib_cover(struct fib_map *m, const struct fib_w *w, uint32_t addr, unsigned len, uint32_t *r)
{
    *r = 0;
    for (int cl = (int)len - 1; cl >= 0; cl--) {
        uint64_t key = fib_pfx_key(addr & fib_mask((unsigned)cl), (unsigned)cl);
        uint32_t nh;
        if (fib_pfx_find(&fib4_ops, m, w, &key, &nh)) {
            *r = fib_entry(nh, (unsigned)cl);
            return nh == UINT32_MAX ? -EUCLEAN : 0;
        }
    }
    return 0;
}

/* A delete's group: with no entry longer than /24 left it holds one value,
 * and folds back into its tbl24 entry; returns the retire stamp (0: none). */
static int fib_fold(struct fib_map *m, const struct fib_w *w, uint32_t i, uint64_t *gen)
{
    uint32_t t = ipc_ld_rlx(&m->tbl24[i]);
    if (!(t & FIB_E_EXT))
        return 0;
    _Atomic uint32_t *grp = fib_group(m, t);
    if (!grp)
        return -EUCLEAN;
    for (unsigned j = 0; j < 256; j++)
        if (fib_entry_depth(ipc_ld_rlx(&grp[j])) > 24)
            return 0;
    ipc_st_rel(&m->tbl24[i], ipc_ld_rlx(&grp[0]));
    *gen = fib_retire_gen(m);
    return fib_rq_push(m, &w->groups, t & FIB_E_IDX, *gen) ? 0 : -EUCLEAN;
}

int fib_del(struct fib *fib, uint32_t addr, unsigned len)
{
    struct fib_map *m = &fib->m;
    if (!fib->writer || len > 32)
        return -EINVAL;
    struct fib_w w;
    uint64_t key = fib_pfx_key(addr, len);
    uint32_t ni, r;
    void *s;
    int ret = fib_del_begin(&fib4_ops, m, &w, &key, &s, &ni);
    if (ret < 0)
        return ret;
    if (fib_cover(m, &w, addr, len, &r) < 0)
        return -EUCLEAN;
    fib_del_unlink(&fib4_ops, m, &w, s);
    uint32_t first, count;
    unsigned lo, hi;
    fib_range(addr, len, &first, &count, &lo, &hi);
    ret = fib_fill(m, first, count, lo, hi, r, (int)len, false);
    uint64_t gen = 0;
    if (ret == 0 && len > 24)
        ret = fib_fold(m, &w, first, &gen);
    /* The entries that named ni are gone; the same stamp covers it. */
    if (ret == 0)
        ret = fib_nh_put(&fib4_ops, m, &w, ni, gen);
    if (ret == 0)
        m->lay->dirty = 0;
    return ret;
}

int fib_get(const struct fib *fib, uint32_t addr, unsigned len, struct fib_nh *nh)
{
    struct fib_map *m = (struct fib_map *)&fib->m; /* a failed check counts in it */
    if (!fib_args_ok(fib, addr, len))
        return -ENOENT;
    struct fib_w w = fib_map_w(&fib_family4, m);
    uint64_t key = fib_pfx_key(addr, len);
    uint32_t ni;
    if (!fib_pfx_find(&fib4_ops, m, &w, &key, &ni))
        return -ENOENT;
    if (ni == UINT32_MAX)
        return -EUCLEAN;
    *nh = fib_nh_at(fib, ni);
    return 0;
}

void fib_prefetch(const struct fib *fib, uint32_t addr, unsigned len)
{
    if (!fib->writer || len > 32)
        return;
    addr &= fib_mask(len);
    uint64_t key = fib_pfx_key(addr, len);
    uint32_t i = fib4_hash(&key) & fib->m.lim.pfx_mask;
    __builtin_prefetch(fib->m.pfx + (size_t)i * sizeof(struct fib_hslot), 1);
    __builtin_prefetch((const void *)&fib->m.tbl24[addr >> 8], 1);
}

int fib_match(const struct fib *fib, uint32_t addr, uint32_t *pfx, unsigned *len, struct fib_nh *nh)
{
    /* The writer's own tables: nothing changes them under this read. */
    uint32_t e = ipc_ld_rlx(&fib->m.tbl24[addr >> 8]);
    if (e & FIB_E_EXT) {
        if ((e & FIB_E_IDX) >= fib->m.lim.tbl8_groups)
            return -ENOENT;
        e = ipc_ld_rlx(&fib->m.tbl8[(size_t)(e & FIB_E_IDX) << 8 | (addr & 0xff)]);
    }
    int depth = fib_entry_depth(e);
    if (depth < 0 || (e & FIB_E_EXT) || (e & FIB_E_IDX) >= fib->m.lim.max_nh)
        return -ENOENT;
    *len = (unsigned)depth;
    *pfx = addr & fib_mask((unsigned)depth);
    *nh = fib_nh_at(fib, e & FIB_E_IDX);
    return 0;
}

int fib_iterate(const struct fib *fib, int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh),
                void *arg)
{
    struct fib_map *m = (struct fib_map *)&fib->m;
    if (!fib->writer)
        return -EINVAL;
    struct fib_w w = fib_map_w(&fib_family4, m);
    const struct fib_hslot *s;
    uint32_t ni;
    int ret = 0;
    for (uint32_t i = 0; ret == 0 && (s = fib_pfx_next(&fib4_ops, m, &w, &i, &ni)); i++) {
        if (!FIB_OK(m, ni < m->lim.max_nh && (s->key & 63) <= 32))
            return -EUCLEAN;
        struct fib_nh nh = fib_nh_at(fib, ni);
        ret = cb(arg, (uint32_t)(s->key >> 6), (unsigned)(s->key & 63), &nh);
    }
    return ret;
}

struct fib_snap {
    int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh);
    void *arg;
};

static int fib_snap_walk(struct fib_map *m, void *ctx)
{
    const struct fib_snap *x = ctx;
    struct fib f = {.m = *m, .writer = true}; /* fib_iterate only loads */
    return fib_iterate(&f, x->cb, x->arg);
}

int fib_snapshot(int fd, int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh), void *arg,
                 bool *dirty, struct ipc_err *err)
{
    struct fib_snap x = {cb, arg};
    return fib_map_snapshot(&fib_family4, fd, fib_snap_walk, &x, dirty, err);
}

struct fib_snap_multi {
    int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nhs, const uint16_t *weights, unsigned n);
    void *arg;
    struct fib *f;
};

static int fib_snap_multi_route(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    struct fib_snap_multi *x = arg;
    struct fib_nh nhs[FIB_MP_MAX];
    uint16_t wt[FIB_MP_MAX] = {1};
    if (!(nh->flags & FIB_NH_F_GROUP))
        return x->cb(x->arg, addr, len, nh, wt, 1);
    int n = fib_group_members(x->f, nh, nhs, wt);
    return n < 0 ? n : x->cb(x->arg, addr, len, nhs, wt, (unsigned)n);
}

static int fib_snap_multi_walk(struct fib_map *m, void *ctx)
{
    struct fib_snap_multi *x = ctx;
    struct fib f = {.m = *m, .writer = true}; /* fib_iterate and fib_group_members only load */
    x->f = &f;
    return fib_iterate(&f, fib_snap_multi_route, x);
}

int fib_snapshot_multi(int fd,
                       int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nhs,
                                 const uint16_t *weights, unsigned n),
                       void *arg, bool *dirty, struct ipc_err *err)
{
    struct fib_snap_multi x = {cb, arg, NULL};
    return fib_map_snapshot(&fib_family4, fd, fib_snap_multi_walk, &x, dirty, err);
}
