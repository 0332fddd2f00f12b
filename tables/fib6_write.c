/* SPDX-License-Identifier: MIT */
/*
 * tables/fib6_write.c: the IPv6 FIB's writer half, linked by the supervisor
 * alone: add, replace, delete, get and iterate on the trie. Creating the
 * region, the deferred reuse of groups and next hops, the hashes and the
 * bounds checks on what the writer reads back are both families'
 * (tables/fib_common.c); here every group index in an entry and every
 * next-hop index in a hash slot is checked (FIB_OK) before it is followed,
 * and walks down the trie are bounded by its 14 levels, so a corrupt region
 * can neither send a loop past the mapping nor keep it spinning. The layout
 * and the memory-ordering argument are in fib6.h; here each table store is
 * tagged with the step of that argument it implements.
 *
 * Every capacity check (prefixes, groups, next hops) is made before the
 * first store of an update, so an update either happens whole or changes
 * nothing; only a failed bounds check can stop one half-way.
 */
#include "tables/fib_impl.h"
#include "tables/fib6_write.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

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

/* ---- the family's plumbing ---- */

static uint32_t fib6_hash(const void *key)
{
    const struct fib6_hslot *s = key; /* its key words only: k0, k1, k2 */
    return fib_mix64(s->k0 * 0x9e3779b97f4a7c15ull ^ (s->k1 + s->k2) * 0xc2b2ae3d27d4eb4full ^ s->k2);
}

static const struct fib_hkind fib6_hkind = {sizeof(struct fib6_hslot), offsetof(struct fib6_hslot, val),
                                            offsetof(struct fib6_hslot, val), offsetof(struct fib6_hslot, used),
                                            fib6_hash};

/* ---- next hops ---- */

/* A next hop's key: its three packed words (gateway halves, port | flags << 16). */
static struct fib6_hslot fib6_nh_words(const struct fib6_nh *nh)
{
    struct fib6_hslot k = {0};
    memcpy(&k.k0, nh->gw, 8);
    memcpy(&k.k1, nh->gw + 8, 8);
    k.k2 = (uint32_t)nh->port | (uint32_t)nh->flags << 16;
    return k;
}

static void fib6_nh_store(struct fib_map *m, uint32_t i, const void *key)
{
    const struct fib6_hslot *k = key;
    _Atomic uint64_t *slot = &m->nh[(size_t)i * FIB6_NH_WORDS];
    ipc_st_rlx(&slot[0], k->k0);
    ipc_st_rlx(&slot[1], k->k1);
    ipc_st_rlx(&slot[2], k->k2);
    ipc_st_rlx(&slot[3], 0);
}

static void fib6_nh_key(const struct fib_map *m, uint32_t i, void *key)
{
    struct fib6_hslot *k = key;
    const _Atomic uint64_t *slot = &m->nh[(size_t)i * FIB6_NH_WORDS];
    k->k0 = ipc_ld_rlx(&slot[0]);
    k->k1 = ipc_ld_rlx(&slot[1]);
    k->k2 = (uint32_t)ipc_ld_rlx(&slot[2]);
}

static void fib6_new_life(bool tbl8, uint32_t idx)
{
    FIB6_ON_NEW_LIFE(tbl8, idx);
}

static void fib6_mp_hdr_key(uint32_t g, void *key)
{
    struct fib6_hslot *k = key;
    k->k0 = g;
    k->k1 = 0;
    k->k2 = (uint32_t)FIB_NH_F_GROUP << 16;
}

static bool fib6_mp_is_hdr(const void *key, uint32_t *g)
{
    const struct fib6_hslot *k = key;
    *g = (uint32_t)k->k0;
    return (k->k2 >> 16) & FIB_NH_F_GROUP;
}

static const struct fib_wops fib6_ops = {&fib_family6,  &fib6_hkind,      fib6_nh_store, fib6_nh_key,
                                         fib6_new_life, fib6_mp_hdr_key, fib6_mp_is_hdr};

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
    if (!FIB_OK(&fib->m, level <= FIB6_TOP_LEVEL && g < fib->m.lay->tbl8_hwm && g < fib->m.lim.tbl8_groups))
        return NULL;
    return &fib->m.tbl8[(size_t)g << 8];
}

/* The range of entries a prefix of @len (host bits zero) covers in its table. */
static void fib6_range(const uint8_t *a, unsigned len, uint32_t *lo, uint32_t *hi)
{
    unsigned level = fib6_level(len), span = 24 + 8 * level;
    *lo = fib6_index(a, level);
    *hi = *lo + (1u << (span - len)) - 1;
}

/*
 * Write @e over the entries [lo, hi] of @t (at @level) whose depth passes,
 * and over those of every group linked from the range, all of whose entries
 * lie inside it: for an add (@add), the entries a prefix no longer than
 * @len wrote (@len's own are among them: this is also the replace); for a
 * delete, the entries the /@len prefix wrote, which become its covering
 * route's.
 */
static int fib6_fill(struct fib6 *fib, _Atomic uint32_t *t, unsigned level, uint32_t lo, uint32_t hi, uint32_t e,
                     int len, bool add)
{
    for (uint32_t j = lo; j <= hi; j++) {
        uint32_t x = ipc_ld_rlx(&t[j]);
        if (x & FIB6_E_EXT) {
            _Atomic uint32_t *g = fib6_group(fib, x, level + 1);
            int ret = g ? fib6_fill(fib, g, level + 1, 0, 255, e, len, add) : -EUCLEAN;
            if (ret < 0)
                return ret;
        } else if (add ? fib6_entry_depth(x) <= len : fib6_entry_depth(x) == len) {
            ipc_st_rel(&t[j], e);
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
    p->t[0] = fib->m.tbl24;
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

static bool fib6_args_ok(const struct fib6 *fib, const uint8_t *addr, unsigned len)
{
    if (!fib->writer || len > 128)
        return false;
    struct fib6_key k = fib6_key(addr), m = fib6_key_mask(k, len);
    return k.hi == m.hi && k.lo == m.lo;
}

/* A prefix's hash key: its address halves and its length. */
static struct fib6_hslot fib6_pfx_key(struct fib6_key k, unsigned len)
{
    return (struct fib6_hslot){.k0 = k.hi, .k1 = k.lo, .k2 = len};
}

/*
 * A chain of new groups for @a/@len at @level, from the prefix's level up
 * to the one below the last link on its path (at @top): each is filled
 * whole (the value of the entry it replaces, and the prefix's entries @e
 * over [lo, hi] or the link to the group below), then the top one is
 * published with one store.
 */
static int fib6_chain(struct fib6 *fib, const struct fib_w *w, const uint8_t *a, unsigned level, unsigned top,
                      _Atomic uint32_t *at, uint32_t e, uint32_t lo, uint32_t hi)
{
    uint32_t v = ipc_ld_rlx(at), child = 0;
    for (unsigned lv = level; lv > top; lv--) {
        uint32_t g = fib_group_new(&fib6_ops, &fib->m, w);
        if (g == UINT32_MAX)
            return -EUCLEAN;
        _Atomic uint32_t *grp = &fib->m.tbl8[(size_t)g << 8];
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
    ipc_st_rel(at, FIB6_E_VALID | FIB6_E_EXT | child); /* W1 */
    return 0;
}

/* An add or replace via next hop @nh, or via the group of @mp's members when not NULL. */
static int fib6_set(struct fib6 *fib, const uint8_t *a, unsigned len, const struct fib6_nh *nh,
                    const struct fib_mp_req *mp, bool replace)
{
    if (!fib6_args_ok(fib, a, len) || (!mp && (nh->port == 0xffff || nh->flags != 0)))
        return -EINVAL;
    struct fib_map *m = &fib->m;
    struct fib_w w;
    struct fib6_hslot key = fib6_pfx_key(fib6_key(a), len), nk = mp ? (struct fib6_hslot){0} : fib6_nh_words(nh);
    void *s;
    int ret = fib_set_begin(&fib6_ops, m, &w, &key, replace, &s);
    if (ret < 0)
        return ret;
    /* The groups from the last link on the path down to the prefix's level. */
    unsigned level = fib6_level(len);
    struct fib6_path p;
    int reached = fib6_walk(fib, a, level, &p);
    uint32_t ni;
    if (reached < 0)
        return reached;
    ret = mp ? fib_mp_set_nh(&fib6_ops, m, &w, level - (unsigned)reached, mp, &ni)
             : fib_set_nh(&fib6_ops, m, &w, level - (unsigned)reached, &nk, &ni);
    if (ret < 0)
        return ret;
    uint32_t e = fib6_entry(ni, len), lo, hi;
    fib6_range(a, len, &lo, &hi);
    if ((unsigned)reached == level)
        ret = fib6_fill(fib, p.t[level], level, lo, hi, e, (int)len, true);
    else
        ret = fib6_chain(fib, &w, a, level, (unsigned)reached, &p.t[reached][p.i[reached]], e, lo, hi);
    /* corrupt: stays dirty */
    return ret < 0 ? ret : fib_pfx_commit(&fib6_ops, m, &w, s, &key, ni);
}

int fib6_add(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    return fib6_set(fib, addr, len, nh, NULL, false);
}

int fib6_replace(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    return fib6_set(fib, addr, len, nh, NULL, true);
}

static int fib6_set_multi(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs,
                          const uint16_t *weights, unsigned n, bool replace)
{
    static const uint8_t zero[16];
    if (n == 1)
        return fib6_set(fib, addr, len, nhs, NULL, replace);
    struct fib_mp_req r = {.n = n};
    if (n > FIB_MP_MAX)
        return -EINVAL;
    for (unsigned k = 0; k < n; k++) {
        if (memcmp(nhs[k].gw, zero, 16) == 0 || nhs[k].port == 0xffff || nhs[k].flags != 0)
            return -EINVAL;
        struct fib6_hslot nk = fib6_nh_words(&nhs[k]);
        memcpy(r.key[k], &nk, sizeof(r.key[k]));
        r.weight[k] = weights ? weights[k] : 1;
    }
    int ret = fib_mp_prepare(&fib6_ops, &r);
    return ret < 0 ? ret : fib6_set(fib, addr, len, NULL, &r, replace);
}

int fib6_add_multi(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs,
                   const uint16_t *weights, unsigned n)
{
    return fib6_set_multi(fib, addr, len, nhs, weights, n, false);
}

int fib6_replace_multi(struct fib6 *fib, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs,
                       const uint16_t *weights, unsigned n)
{
    return fib6_set_multi(fib, addr, len, nhs, weights, n, true);
}

int fib6_group_members(const struct fib6 *fib, const struct fib6_nh *hdr, struct fib6_nh *nhs, uint16_t *weights)
{
    struct fib_map *m = (struct fib_map *)&fib->m; /* a failed check counts in it */
    struct fib6_hslot hk = fib6_nh_words(hdr);
    uint64_t keys[FIB_MP_MAX][FIB_KEY_MAX / 8];
    int n = fib_mp_members(&fib6_ops, m, &hk, keys, weights);
    for (int k = 0; k < n; k++) {
        memcpy(nhs[k].gw, &keys[k][0], 8);
        memcpy(nhs[k].gw + 8, &keys[k][1], 8);
        nhs[k].port = (uint16_t)keys[k][2];
        nhs[k].flags = (uint16_t)(keys[k][2] >> 16);
    }
    return n;
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

/* The entry of @k/@len's covering route: the longest shorter prefix still in the list (0: none). */
static int fib6_cover(struct fib6 *fib, const struct fib_w *w, struct fib6_key k, unsigned len, uint32_t *r)
{
    *r = 0;
    for (int cl = (int)len - 1; cl >= 0; cl--) {
        struct fib6_hslot key = fib6_pfx_key(fib6_key_mask(k, (unsigned)cl), (unsigned)cl);
        uint32_t nh;
        if (fib_pfx_find(&fib6_ops, &fib->m, w, &key, &nh)) {
            *r = fib6_entry(nh, (unsigned)cl);
            return nh == UINT32_MAX ? -EUCLEAN : 0;
        }
    }
    return 0;
}

int fib6_del(struct fib6 *fib, const uint8_t *a, unsigned len)
{
    if (!fib6_args_ok(fib, a, len))
        return -EINVAL;
    struct fib_map *m = &fib->m;
    struct fib_w w;
    struct fib6_key k = fib6_key(a);
    struct fib6_hslot key = fib6_pfx_key(k, len);
    uint32_t ni, r;
    void *s;
    int ret = fib_del_begin(&fib6_ops, m, &w, &key, &s, &ni);
    if (ret < 0)
        return ret;
    unsigned level = fib6_level(len);
    struct fib6_path p;
    /* A prefix's level always has its group: the prefix's entries keep it
     * from folding. A path that stops short is a corrupt region. */
    if (!FIB_OK(m, fib6_walk(fib, a, level, &p) == (int)level) || fib6_cover(fib, &w, k, len, &r) < 0)
        return -EUCLEAN;
    fib_del_unlink(&fib6_ops, m, &w, s);
    uint32_t lo, hi;
    fib6_range(a, len, &lo, &hi);
    ret = fib6_fill(fib, p.t[level], level, lo, hi, r, (int)len, false);
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
    uint64_t gen = nret > 0 ? fib_retire_gen(m) : 0;
    for (unsigned i = 0; i < nret; i++)
        if (!fib_rq_push(m, &w.groups, retired[i], gen))
            return -EUCLEAN;
    /* The entries that named ni are gone; the same stamp covers it. */
    if ((ret = fib_nh_put(&fib6_ops, m, &w, ni, gen)) < 0)
        return ret;
    m->lay->dirty = 0;
    return 0;
}

int fib6_get(struct fib6 *fib, const uint8_t *addr, unsigned len, struct fib6_nh *nh)
{
    if (!fib6_args_ok(fib, addr, len))
        return -ENOENT;
    struct fib_w w = fib_map_w(&fib_family6, &fib->m);
    struct fib6_hslot key = fib6_pfx_key(fib6_key(addr), len);
    uint32_t ni;
    if (!fib_pfx_find(&fib6_ops, &fib->m, &w, &key, &ni))
        return -ENOENT;
    if (ni == UINT32_MAX)
        return -EUCLEAN;
    *nh = fib6_nh_at(fib, ni);
    return 0;
}

int fib6_iterate(struct fib6 *fib, int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh),
                 void *arg)
{
    if (!fib->writer)
        return -EINVAL;
    struct fib_w w = fib_map_w(&fib_family6, &fib->m);
    const struct fib6_hslot *s;
    uint32_t ni;
    int ret = 0;
    for (uint32_t i = 0; ret == 0 && (s = fib_pfx_next(&fib6_ops, &fib->m, &w, &i, &ni)); i++) {
        if (!FIB_OK(&fib->m, ni < fib->m.lim.max_nh && s->k2 <= 128))
            return -EUCLEAN;
        uint8_t a[16];
        fib6_key_bytes((struct fib6_key){s->k0, s->k1}, a);
        struct fib6_nh nh = fib6_nh_at(fib, ni);
        ret = cb(arg, a, s->k2, &nh);
    }
    return ret;
}

struct fib6_snap {
    int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh);
    void *arg;
};

static int fib6_snap_walk(struct fib_map *m, void *ctx)
{
    const struct fib6_snap *x = ctx;
    struct fib6 f = {.m = *m, .writer = true}; /* fib6_iterate only loads */
    return fib6_iterate(&f, x->cb, x->arg);
}

int fib6_snapshot(int fd, int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh),
                  void *arg, bool *dirty, struct ipc_err *err)
{
    struct fib6_snap x = {cb, arg};
    return fib_map_snapshot(&fib_family6, fd, fib6_snap_walk, &x, dirty, err);
}

struct fib6_snap_multi {
    int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs, const uint16_t *weights,
              unsigned n);
    void *arg;
    struct fib6 *f;
};

static int fib6_snap_multi_route(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    struct fib6_snap_multi *x = arg;
    struct fib6_nh nhs[FIB_MP_MAX];
    uint16_t wt[FIB_MP_MAX] = {1};
    if (!(nh->flags & FIB_NH_F_GROUP))
        return x->cb(x->arg, addr, len, nh, wt, 1);
    int n = fib6_group_members(x->f, nh, nhs, wt);
    return n < 0 ? n : x->cb(x->arg, addr, len, nhs, wt, (unsigned)n);
}

static int fib6_snap_multi_walk(struct fib_map *m, void *ctx)
{
    struct fib6_snap_multi *x = ctx;
    struct fib6 f = {.m = *m, .writer = true}; /* fib6_iterate and fib6_group_members only load */
    x->f = &f;
    return fib6_iterate(&f, fib6_snap_multi_route, x);
}

int fib6_snapshot_multi(int fd,
                        int (*cb)(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs,
                                  const uint16_t *weights, unsigned n),
                        void *arg, bool *dirty, struct ipc_err *err)
{
    struct fib6_snap_multi x = {cb, arg, NULL};
    return fib_map_snapshot(&fib_family6, fd, fib6_snap_multi_walk, &x, dirty, err);
}
