/* SPDX-License-Identifier: MIT */
/*
 * tables/fib_write.c: the FIB's writer half, linked by the supervisor alone:
 * create, add, replace, delete, iterate, and the deferred reuse of tbl8
 * groups and next hops. The memory-ordering argument is in fib.h; here each
 * table store is tagged with the step of that argument it implements.
 */
#include "tables/fib_impl.h"
#include "tables/fib_write.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* Process-local pointers into the writer arrays. */
struct fib_w {
    uint32_t *nh_ref;
    struct fib_hslot *pfx, *nhh;
    uint32_t *tbl8_free, *tbl8_rq_idx, *nh_free, *nh_rq_idx;
    uint64_t *tbl8_rq_gen, *nh_rq_gen;
};

static struct fib_w fib_w(const struct fib *fib)
{
    uint8_t *b = fib->base;
    const struct fib_layout *l = fib->lay;
    struct fib_w w = {
        .nh_ref = (uint32_t *)(b + l->off_nh_ref),
        .pfx = (struct fib_hslot *)(b + l->off_pfx),
        .nhh = (struct fib_hslot *)(b + l->off_nhh),
        .tbl8_free = (uint32_t *)(b + l->off_tbl8_free),
        .tbl8_rq_idx = (uint32_t *)(b + l->off_tbl8_rq_idx),
        .tbl8_rq_gen = (uint64_t *)(b + l->off_tbl8_rq_gen),
        .nh_free = (uint32_t *)(b + l->off_nh_free),
        .nh_rq_idx = (uint32_t *)(b + l->off_nh_rq_idx),
        .nh_rq_gen = (uint64_t *)(b + l->off_nh_rq_gen),
    };
    return w;
}

int fib_create(const char *name, const struct fib_params *p, struct fib *fib, int *fd, int *rfd,
               struct ipc_err *err)
{
    struct fib_params def = {.max_prefixes = 1100000, .tbl8_groups = 65536, .max_nh = 65536};
    if (!p)
        p = &def;
    if (p->max_prefixes == 0 || p->tbl8_groups == 0 || p->tbl8_groups > (1u << 24) || p->max_nh == 0 ||
        p->max_nh > FIB_MAX_NH || p->max_prefixes > (1u << 28))
        return ipc_errf(err, -EINVAL, "fib %s: bad sizes (prefixes %u, tbl8 groups %u, next hops %u)", name,
                        p->max_prefixes, p->tbl8_groups, p->max_nh);
    struct fib_layout l;
    uint64_t size = fib_impl_layout(&l, p);
    void *base, *rbase;
    char rname[64];
    snprintf(rname, sizeof(rname), "%.50s-readers", name);
    int ret = ipc_shm_create(rname, IPC_SHM_FIB_READERS, FIB_READERS_VERSION, sizeof(struct fib_shared), rfd, &rbase,
                             err);
    if (ret < 0)
        return ret;
    ret = ipc_shm_create(name, IPC_SHM_FIB, FIB_VERSION, size, fd, &base, err);
    if (ret < 0)
        goto out_readers;
    /* Our mapping is writable; from here on no other can be. */
    if ((ret = ipc_shm_seal_writes(*fd, name, err)) < 0)
        goto out_tables;
    memset(fib, 0, sizeof(*fib));
    memcpy((uint8_t *)base + FIB_PAGE, &l, sizeof(l));
    fib_impl_bind(fib, base, size);
    fib->sh = rbase;
    fib->sh_size = sizeof(struct fib_shared);
    fib->writer = true;
    ipc_st_rel(&fib->sh->gen, 1);
    return 0;

out_tables:
    ipc_shm_unmap(base, size);
    close(*fd);
out_readers:
    ipc_shm_unmap(rbase, sizeof(struct fib_shared));
    close(*rfd);
    return ret;
}

/* ---- hashes (writer only; linear probing, backward-shift deletion) ---- */

static uint32_t fib_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (uint32_t)k;
}

static struct fib_hslot *fib_h_find(struct fib_hslot *t, uint32_t mask, uint64_t key)
{
    for (uint32_t i = fib_hash(key) & mask;; i = (i + 1) & mask) {
        if (!t[i].used)
            return NULL;
        if (t[i].key == key)
            return &t[i];
    }
}

static void fib_h_insert(struct fib_hslot *t, uint32_t mask, uint64_t key, uint32_t val)
{
    uint32_t i = fib_hash(key) & mask;
    while (t[i].used)
        i = (i + 1) & mask;
    t[i].key = key;
    t[i].val = val;
    t[i].used = 1;
}

static void fib_h_remove(struct fib_hslot *t, uint32_t mask, struct fib_hslot *s)
{
    uint32_t i = (uint32_t)(s - t);
    uint32_t j = i;
    for (;;) {
        t[i].used = 0;
        for (;;) {
            j = (j + 1) & mask;
            if (!t[j].used)
                return;
            uint32_t home = fib_hash(t[j].key) & mask;
            /* Move j back into the hole at i unless its home lies cyclically in (i, j]. */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        t[i] = t[j];
        i = j;
    }
}

static uint64_t fib_pfx_key(uint32_t addr, unsigned len)
{
    return (uint64_t)addr << 6 | len;
}

/* ---- deferred reuse ---- */

/* Unlinking is done: bump gen (W2 side) and return the retire stamp. */
static uint64_t fib_retire_gen(struct fib *fib)
{
    return atomic_fetch_add_explicit(&fib->sh->gen, 1, memory_order_seq_cst) + 1;
}

/* Can an object retired at @g be reused? */
static bool fib_quiet_since(struct fib *fib, uint64_t g)
{
    ipc_fence_sc(); /* W2: pairs with R2 in fib_read_begin */
    for (unsigned r = 0; r < FIB_MAX_READERS; r++) {
        uint64_t a = ipc_ld_acq(&fib->sh->reader[r].active);
        if (a != 0 && a < g)
            return false;
    }
    return true;
}

unsigned fib_reclaim(struct fib *fib)
{
    struct fib_layout *l = fib->lay;
    struct fib_w w = fib_w(fib);
    unsigned n = 0;
    while (l->tbl8_rq_len > 0 && fib_quiet_since(fib, w.tbl8_rq_gen[l->tbl8_rq_head])) {
        w.tbl8_free[l->tbl8_nfree++] = w.tbl8_rq_idx[l->tbl8_rq_head];
        l->tbl8_rq_head = (l->tbl8_rq_head + 1) % l->tbl8_groups;
        l->tbl8_rq_len--;
        n++;
    }
    while (l->nh_rq_len > 0 && fib_quiet_since(fib, w.nh_rq_gen[l->nh_rq_head])) {
        w.nh_free[l->nh_nfree++] = w.nh_rq_idx[l->nh_rq_head];
        l->nh_rq_head = (l->nh_rq_head + 1) % l->max_nh;
        l->nh_rq_len--;
        n++;
    }
    return n;
}

void fib_reader_reset(struct fib *fib, unsigned slot)
{
    if (slot < FIB_MAX_READERS)
        ipc_st_rel(&fib->sh->reader[slot].active, 0);
}

/*
 * Wait briefly for readers to leave what was retired, for when a free
 * object is needed now. Readers hold a slot for one batch (microseconds), so
 * a millisecond is ample unless one is stopped; then the caller gets -EAGAIN.
 */
static void fib_reclaim_wait(struct fib *fib, const uint32_t *rq_len, const uint32_t *nfree)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        fib_reclaim(fib);
        if (*nfree > 0 || *rq_len == 0)
            return;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000l + (t.tv_nsec - t0.tv_nsec) > 10000000l)
            return;
        sched_yield();
    }
}

static int fib_tbl8_alloc(struct fib *fib, uint32_t *g)
{
    struct fib_layout *l = fib->lay;
    struct fib_w w = fib_w(fib);
    if (l->tbl8_nfree == 0 && l->tbl8_hwm < l->tbl8_groups) {
        *g = l->tbl8_hwm++;
    } else {
        if (l->tbl8_nfree == 0)
            fib_reclaim_wait(fib, &l->tbl8_rq_len, &l->tbl8_nfree);
        if (l->tbl8_nfree == 0)
            return l->tbl8_rq_len ? -EAGAIN : -ENOSPC;
        *g = w.tbl8_free[--l->tbl8_nfree];
    }
    FIB_ON_NEW_LIFE(true, *g);
    return 0;
}

static void fib_tbl8_retire(struct fib *fib, uint32_t g, uint64_t gen)
{
    struct fib_layout *l = fib->lay;
    struct fib_w w = fib_w(fib);
    uint32_t tail = (l->tbl8_rq_head + l->tbl8_rq_len) % l->tbl8_groups;
    w.tbl8_rq_idx[tail] = g;
    w.tbl8_rq_gen[tail] = gen;
    l->tbl8_rq_len++;
}

/* Find or create the next hop @nh; takes a reference. */
static int fib_nh_get(struct fib *fib, const struct fib_nh *nh, uint32_t *idx)
{
    struct fib_layout *l = fib->lay;
    struct fib_w w = fib_w(fib);
    uint64_t key = fib_nh_pack(nh);
    struct fib_hslot *s = fib_h_find(w.nhh, l->nhh_mask, key);
    if (s) {
        w.nh_ref[s->val]++;
        *idx = s->val;
        return 0;
    }
    uint32_t i;
    if (l->nh_nfree == 0 && l->nh_hwm < l->max_nh) {
        i = l->nh_hwm++;
    } else {
        if (l->nh_nfree == 0)
            fib_reclaim_wait(fib, &l->nh_rq_len, &l->nh_nfree);
        if (l->nh_nfree == 0)
            return l->nh_rq_len ? -EAGAIN : -ENOSPC;
        i = w.nh_free[--l->nh_nfree];
    }
    FIB_ON_NEW_LIFE(false, i);
    /* Before any entry names it: entries are stored with release. */
    ipc_st_rlx(&fib->nh[i], key);
    fib_h_insert(w.nhh, l->nhh_mask, key, i);
    w.nh_ref[i] = 1;
    l->n_nh++;
    *idx = i;
    return 0;
}

static void fib_nh_put(struct fib *fib, uint32_t i, uint64_t gen_if_needed)
{
    struct fib_layout *l = fib->lay;
    struct fib_w w = fib_w(fib);
    if (--w.nh_ref[i] > 0)
        return;
    struct fib_hslot *s = fib_h_find(w.nhh, l->nhh_mask, ipc_ld_rlx(&fib->nh[i]));
    if (s)
        fib_h_remove(w.nhh, l->nhh_mask, s);
    /* The slot keeps its value for readers that still hold the index. */
    uint32_t tail = (l->nh_rq_head + l->nh_rq_len) % l->max_nh;
    w.nh_rq_idx[tail] = i;
    w.nh_rq_gen[tail] = gen_if_needed ? gen_if_needed : fib_retire_gen(fib);
    l->nh_rq_len++;
    l->n_nh--;
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

/* Write @e over every entry of [lo, hi] in group @g whose depth <= @len. */
static void fib_tbl8_fill(struct fib *fib, uint32_t g, unsigned lo, unsigned hi, uint32_t e, int len)
{
    _Atomic uint32_t *grp = &fib->tbl8[(size_t)g << 8];
    for (unsigned j = lo; j <= hi; j++)
        if (fib_entry_depth(ipc_ld_rlx(&grp[j])) <= len)
            ipc_st_rel(&grp[j], e);
}

static int fib_set(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nh, bool replace)
{
    struct fib_layout *l = fib->lay;
    struct fib_w w = fib_w(fib);
    if (!fib->writer || len > 32 || (addr & ~fib_mask(len)) || nh->port == 0xffff || nh->flags != 0)
        return -EINVAL;
    struct fib_hslot *s = fib_h_find(w.pfx, l->pfx_mask, fib_pfx_key(addr, len));
    if (s && !replace)
        return -EEXIST;
    if (!s && l->n_prefixes >= l->max_prefixes)
        return -ENOSPC;
    l->dirty = 1;
    uint32_t ni;
    int ret = fib_nh_get(fib, nh, &ni);
    if (ret < 0)
        goto out;
    uint32_t e = fib_entry(ni, len);
    if (len <= 24) {
        uint32_t first = addr >> 8, count = 1u << (24 - len);
        for (uint32_t i = first; i < first + count; i++) {
            uint32_t t = ipc_ld_rlx(&fib->tbl24[i]);
            if (t & FIB_E_EXT)
                fib_tbl8_fill(fib, t & FIB_E_IDX, 0, 255, e, (int)len);
            else if (fib_entry_depth(t) <= (int)len)
                ipc_st_rel(&fib->tbl24[i], e);
        }
    } else {
        uint32_t i = addr >> 8;
        unsigned lo = addr & 0xff, hi = lo + (1u << (32 - len)) - 1;
        uint32_t t = ipc_ld_rlx(&fib->tbl24[i]);
        if (t & FIB_E_EXT) {
            fib_tbl8_fill(fib, t & FIB_E_IDX, lo, hi, e, (int)len);
        } else {
            uint32_t g;
            ret = fib_tbl8_alloc(fib, &g);
            if (ret < 0) {
                fib_nh_put(fib, ni, 0);
                goto out;
            }
            _Atomic uint32_t *grp = &fib->tbl8[(size_t)g << 8];
            for (unsigned j = 0; j < 256; j++)
                ipc_st_rlx(&grp[j], (j >= lo && j <= hi) ? e : t);
            ipc_st_rel(&fib->tbl24[i], FIB_E_VALID | FIB_E_EXT | g); /* W1 */
        }
    }
    if (s) {
        uint32_t old = s->val;
        s->val = ni;
        fib_nh_put(fib, old, 0);
    } else {
        fib_h_insert(w.pfx, l->pfx_mask, fib_pfx_key(addr, len), ni);
        l->n_prefixes++;
    }
out:
    l->dirty = 0;
    return ret;
}

int fib_add(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    return fib_set(fib, addr, len, nh, false);
}

int fib_replace(struct fib *fib, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    return fib_set(fib, addr, len, nh, true);
}

/* Rewrite entries in [lo, hi] of group @g written by a /@len prefix to @r. */
static void fib_tbl8_unfill(struct fib *fib, uint32_t g, unsigned lo, unsigned hi, uint32_t r, int len)
{
    _Atomic uint32_t *grp = &fib->tbl8[(size_t)g << 8];
    for (unsigned j = lo; j <= hi; j++)
        if (fib_entry_depth(ipc_ld_rlx(&grp[j])) == len)
            ipc_st_rel(&grp[j], r);
}

int fib_del(struct fib *fib, uint32_t addr, unsigned len)
{
    struct fib_layout *l = fib->lay;
    struct fib_w w = fib_w(fib);
    if (!fib->writer || len > 32)
        return -EINVAL;
    struct fib_hslot *s = fib_h_find(w.pfx, l->pfx_mask, fib_pfx_key(addr, len));
    if (!s)
        return -ENOENT;
    l->dirty = 1;
    uint32_t ni = s->val;
    fib_h_remove(w.pfx, l->pfx_mask, s);
    l->n_prefixes--;

    /* The covering route: the longest shorter prefix still in the list. */
    uint32_t r = 0;
    for (int cl = (int)len - 1; cl >= 0; cl--) {
        struct fib_hslot *c = fib_h_find(w.pfx, l->pfx_mask, fib_pfx_key(addr & fib_mask((unsigned)cl), (unsigned)cl));
        if (c) {
            r = fib_entry(c->val, (unsigned)cl);
            break;
        }
    }
    uint64_t gen = 0;
    if (len <= 24) {
        uint32_t first = addr >> 8, count = 1u << (24 - len);
        for (uint32_t i = first; i < first + count; i++) {
            uint32_t t = ipc_ld_rlx(&fib->tbl24[i]);
            if (t & FIB_E_EXT)
                fib_tbl8_unfill(fib, t & FIB_E_IDX, 0, 255, r, (int)len);
            else if (fib_entry_depth(t) == (int)len)
                ipc_st_rel(&fib->tbl24[i], r);
        }
    } else {
        uint32_t i = addr >> 8;
        unsigned lo = addr & 0xff, hi = lo + (1u << (32 - len)) - 1;
        uint32_t t = ipc_ld_rlx(&fib->tbl24[i]);
        if (t & FIB_E_EXT) {
            uint32_t g = t & FIB_E_IDX;
            fib_tbl8_unfill(fib, g, lo, hi, r, (int)len);
            /* A group with no entry longer than /24 holds one value: fold it back. */
            _Atomic uint32_t *grp = &fib->tbl8[(size_t)g << 8];
            bool deep = false;
            for (unsigned j = 0; j < 256 && !deep; j++)
                deep = fib_entry_depth(ipc_ld_rlx(&grp[j])) > 24;
            if (!deep) {
                ipc_st_rel(&fib->tbl24[i], ipc_ld_rlx(&grp[0]));
                gen = fib_retire_gen(fib);
                fib_tbl8_retire(fib, g, gen);
            }
        }
    }
    /* The entries that named ni are gone; the same stamp covers it. */
    if (w.nh_ref[ni] == 1 && gen == 0)
        gen = fib_retire_gen(fib);
    fib_nh_put(fib, ni, gen);
    l->dirty = 0;
    return 0;
}

int fib_get(const struct fib *fib, uint32_t addr, unsigned len, struct fib_nh *nh)
{
    struct fib_w w = fib_w(fib);
    if (len > 32)
        return -ENOENT;
    struct fib_hslot *s = fib_h_find(w.pfx, fib->lay->pfx_mask, fib_pfx_key(addr, len));
    if (!s)
        return -ENOENT;
    *nh = fib_nh_at(fib, s->val);
    return 0;
}

int fib_match(const struct fib *fib, uint32_t addr, uint32_t *pfx, unsigned *len, struct fib_nh *nh)
{
    /* The writer's own tables: nothing changes them under this read. */
    uint32_t e = ipc_ld_rlx(&fib->tbl24[addr >> 8]);
    if (e & FIB_E_EXT)
        e = ipc_ld_rlx(&fib->tbl8[(size_t)(e & FIB_E_IDX) << 8 | (addr & 0xff)]);
    int depth = fib_entry_depth(e);
    if (depth < 0)
        return -ENOENT;
    *len = (unsigned)depth;
    *pfx = addr & fib_mask((unsigned)depth);
    *nh = fib_nh_at(fib, e & FIB_E_IDX);
    return 0;
}

int fib_iterate(const struct fib *fib, int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh),
                   void *arg)
{
    struct fib_w w = fib_w(fib);
    for (uint32_t i = 0; i <= fib->lay->pfx_mask; i++) {
        if (!w.pfx[i].used)
            continue;
        struct fib_nh nh = fib_nh_at(fib, w.pfx[i].val);
        int ret = cb(arg, (uint32_t)(w.pfx[i].key >> 6), (unsigned)(w.pfx[i].key & 63), &nh);
        if (ret)
            return ret;
    }
    return 0;
}

int fib_snapshot(int fd, int (*cb)(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh), void *arg,
                 bool *dirty, struct ipc_err *err)
{
    const void *cbase;
    size_t size;
    int ret = ipc_shm_attach_ro(fd, IPC_SHM_FIB, FIB_VERSION, &cbase, &size, err);
    if (ret < 0)
        return ret;
    struct fib_layout l, want;
    if (size < 2 * FIB_PAGE) {
        ipc_shm_unmap((void *)cbase, size);
        return ipc_errf(err, -EPROTO, "fib region: %zu bytes, too small for its layout page", size);
    }
    memcpy(&l, (const uint8_t *)cbase + FIB_PAGE, sizeof(l));
    struct fib_params p = {.max_prefixes = l.max_prefixes, .tbl8_groups = l.tbl8_groups, .max_nh = l.max_nh};
    if (p.max_nh > FIB_MAX_NH || p.tbl8_groups > (1u << 24) || p.max_prefixes > (1u << 28) ||
        fib_impl_layout(&want, &p) != size || want.pfx_mask != l.pfx_mask || want.off_pfx != l.off_pfx ||
        want.off_nh != l.off_nh) {
        ipc_shm_unmap((void *)cbase, size);
        return ipc_errf(err, -EPROTO, "fib region: layout does not match its size %zu", size);
    }
    *dirty = l.dirty != 0;
    struct fib f;
    memset(&f, 0, sizeof(f));
    fib_impl_bind(&f, (void *)cbase, size); /* read only: fib_iterate only loads */
    /* Bound what the walk reads back: an entry's next hop within the table. */
    struct fib_w w = fib_w(&f);
    for (uint32_t i = 0; i <= want.pfx_mask && ret == 0; i++) {
        if (!w.pfx[i].used)
            continue;
        if (w.pfx[i].val >= want.max_nh || (w.pfx[i].key & 63) > 32)
            continue;
        struct fib_nh nh = fib_nh_at(&f, w.pfx[i].val);
        ret = cb(arg, (uint32_t)(w.pfx[i].key >> 6), (unsigned)(w.pfx[i].key & 63), &nh);
    }
    ipc_shm_unmap((void *)cbase, size);
    return ret;
}

void fib_get_stats(const struct fib *fib, struct fib_stats *st)
{
    const struct fib_layout *l = fib->lay;
    st->prefixes = l->n_prefixes;
    st->nh = l->n_nh;
    st->tbl8_used = l->tbl8_hwm - l->tbl8_nfree - l->tbl8_rq_len;
    st->tbl8_retired = l->tbl8_rq_len;
    st->tbl8_groups = l->tbl8_groups;
    st->nh_retired = l->nh_rq_len;
    st->region_bytes = fib->size;
    st->gen = ipc_ld_rlx(&fib->sh->gen);
}
