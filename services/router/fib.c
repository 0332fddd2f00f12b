/* SPDX-License-Identifier: MIT */
/*
 * services/router/fib.c: the FIB's writer side (create, add, replace,
 * delete, iterate, the deferred reuse of tbl8 groups and next hops) and the
 * reader's attach. The memory-ordering argument is in fib.h; here each
 * table store is tagged with the step of that argument it implements.
 */
#include "fib.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RT_FIB_PAGE 4096u

/* Writer-side hash slot: prefix (key = addr << 6 | len) or next hop (key = packed nh). */
struct rt_fib_hslot {
    uint64_t key;
    uint32_t val; /* prefix: next-hop index; next hop: its index */
    uint32_t used;
};

struct rt_fib_layout {
    uint32_t max_prefixes, tbl8_groups, max_nh;
    uint32_t pfx_mask, nhh_mask; /* hash capacities - 1 (powers of two) */
    uint32_t pad0;
    uint64_t off_tbl24, off_tbl8, off_nh, off_nh_ref, off_pfx, off_nhh;
    uint64_t off_tbl8_free, off_tbl8_rq_idx, off_tbl8_rq_gen;
    uint64_t off_nh_free, off_nh_rq_idx, off_nh_rq_gen;
    /* Writer state. */
    uint32_t dirty;
    uint32_t n_prefixes, n_nh;
    uint32_t tbl8_hwm, tbl8_nfree, tbl8_rq_head, tbl8_rq_len;
    uint32_t nh_hwm, nh_nfree, nh_rq_head, nh_rq_len;
};
_Static_assert(sizeof(struct rt_fib_layout) <= RT_FIB_PAGE, "layout page");

/* Process-local pointers into the writer arrays. */
struct rt_fib_w {
    uint32_t *nh_ref;
    struct rt_fib_hslot *pfx, *nhh;
    uint32_t *tbl8_free, *tbl8_rq_idx, *nh_free, *nh_rq_idx;
    uint64_t *tbl8_rq_gen, *nh_rq_gen;
};

static uint64_t rt_align(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static uint32_t rt_pow2_at_least(uint64_t v)
{
    uint32_t p = 16;
    while (p < v)
        p <<= 1;
    return p;
}

static uint64_t rt_layout_compute(struct rt_fib_layout *l, const struct rt_fib_params *p)
{
    memset(l, 0, sizeof(*l));
    l->max_prefixes = p->max_prefixes;
    l->tbl8_groups = p->tbl8_groups;
    l->max_nh = p->max_nh;
    l->pfx_mask = rt_pow2_at_least((uint64_t)p->max_prefixes * 2) - 1;
    l->nhh_mask = rt_pow2_at_least((uint64_t)p->max_nh * 2) - 1;
    uint64_t o = 2 * RT_FIB_PAGE;
    l->off_tbl24 = o;
    o = rt_align(o + (sizeof(uint32_t) << 24), RT_FIB_PAGE);
    l->off_tbl8 = o;
    o = rt_align(o + (uint64_t)p->tbl8_groups * 256 * sizeof(uint32_t), RT_FIB_PAGE);
    l->off_nh = o;
    o = rt_align(o + (uint64_t)p->max_nh * sizeof(uint64_t), RT_FIB_PAGE);
    l->off_nh_ref = o;
    o = rt_align(o + (uint64_t)p->max_nh * sizeof(uint32_t), 64);
    l->off_pfx = o;
    o = rt_align(o + (uint64_t)(l->pfx_mask + 1) * sizeof(struct rt_fib_hslot), 64);
    l->off_nhh = o;
    o = rt_align(o + (uint64_t)(l->nhh_mask + 1) * sizeof(struct rt_fib_hslot), 64);
    l->off_tbl8_free = o;
    o += (uint64_t)p->tbl8_groups * 4;
    l->off_tbl8_rq_idx = o;
    o += (uint64_t)p->tbl8_groups * 4;
    o = rt_align(o, 8);
    l->off_tbl8_rq_gen = o;
    o += (uint64_t)p->tbl8_groups * 8;
    l->off_nh_free = o;
    o += (uint64_t)p->max_nh * 4;
    l->off_nh_rq_idx = o;
    o += (uint64_t)p->max_nh * 4;
    o = rt_align(o, 8);
    l->off_nh_rq_gen = o;
    o += (uint64_t)p->max_nh * 8;
    return rt_align(o, RT_FIB_PAGE);
}

static void rt_fib_bind(struct rt_fib *fib, void *base, size_t size)
{
    uint8_t *b = base;
    fib->base = base;
    fib->size = size;
    fib->sh = base;
    fib->lay = (struct rt_fib_layout *)(b + RT_FIB_PAGE);
    fib->tbl24 = (_Atomic uint32_t *)(b + fib->lay->off_tbl24);
    fib->tbl8 = (_Atomic uint32_t *)(b + fib->lay->off_tbl8);
    fib->nh = (_Atomic uint64_t *)(b + fib->lay->off_nh);
}

static struct rt_fib_w rt_w(const struct rt_fib *fib)
{
    uint8_t *b = fib->base;
    const struct rt_fib_layout *l = fib->lay;
    struct rt_fib_w w = {
        .nh_ref = (uint32_t *)(b + l->off_nh_ref),
        .pfx = (struct rt_fib_hslot *)(b + l->off_pfx),
        .nhh = (struct rt_fib_hslot *)(b + l->off_nhh),
        .tbl8_free = (uint32_t *)(b + l->off_tbl8_free),
        .tbl8_rq_idx = (uint32_t *)(b + l->off_tbl8_rq_idx),
        .tbl8_rq_gen = (uint64_t *)(b + l->off_tbl8_rq_gen),
        .nh_free = (uint32_t *)(b + l->off_nh_free),
        .nh_rq_idx = (uint32_t *)(b + l->off_nh_rq_idx),
        .nh_rq_gen = (uint64_t *)(b + l->off_nh_rq_gen),
    };
    return w;
}

int rt_fib_create(const char *name, const struct rt_fib_params *p, struct rt_fib *fib, int *fd, struct ipc_err *err)
{
    struct rt_fib_params def = {.max_prefixes = 1100000, .tbl8_groups = 65536, .max_nh = 65536};
    if (!p)
        p = &def;
    if (p->max_prefixes == 0 || p->tbl8_groups == 0 || p->tbl8_groups > (1u << 24) || p->max_nh == 0 ||
        p->max_nh > RT_FIB_MAX_NH || p->max_prefixes > (1u << 28))
        return ipc_errf(err, -EINVAL, "fib %s: bad sizes (prefixes %u, tbl8 groups %u, next hops %u)", name,
                        p->max_prefixes, p->tbl8_groups, p->max_nh);
    struct rt_fib_layout l;
    uint64_t size = rt_layout_compute(&l, p);
    void *base;
    int ret = ipc_shm_create(name, IPC_SHM_FIB, RT_FIB_VERSION, size, fd, &base, err);
    if (ret < 0)
        return ret;
    memset(fib, 0, sizeof(*fib));
    memcpy((uint8_t *)base + RT_FIB_PAGE, &l, sizeof(l));
    rt_fib_bind(fib, base, size);
    fib->writer = true;
    ipc_st_rel(&fib->sh->gen, 1);
    return 0;
}

int rt_fib_attach(struct rt_fib *fib, int fd, int reader_slot, struct ipc_err *err)
{
    void *base;
    size_t size;
    if (reader_slot != RT_FIB_WRITER && (reader_slot < 0 || reader_slot >= (int)RT_FIB_MAX_READERS))
        return ipc_errf(err, -EINVAL, "fib: reader slot %d out of range", reader_slot);
    int ret = ipc_shm_attach(fd, IPC_SHM_FIB, RT_FIB_VERSION, &base, &size, err);
    if (ret < 0)
        return ret;
    memset(fib, 0, sizeof(*fib));
    struct rt_fib_layout l;
    memcpy(&l, (uint8_t *)base + RT_FIB_PAGE, sizeof(l));
    struct rt_fib_params p = {.max_prefixes = l.max_prefixes, .tbl8_groups = l.tbl8_groups, .max_nh = l.max_nh};
    struct rt_fib_layout want;
    if (size < 2 * RT_FIB_PAGE || rt_layout_compute(&want, &p) != size || want.off_nh_rq_gen != l.off_nh_rq_gen) {
        ret = ipc_errf(err, -EPROTO, "fib region: layout does not match its size %zu", size);
        goto out_unmap;
    }
    if (reader_slot == RT_FIB_WRITER) {
        if (l.dirty) {
            ret = ipc_errf(err, -EUCLEAN, "fib region: the previous writer died mid-update; rebuild it");
            goto out_unmap;
        }
        fib->writer = true;
    } else if (mprotect((uint8_t *)base + RT_FIB_PAGE, size - RT_FIB_PAGE, PROT_READ) < 0) {
        /* The router only reads the tables: a stray store faults instead of
         * corrupting every router's routes. Page 0 stays writable for the slot. */
        ret = ipc_errf(err, -errno, "fib region: mprotect: %s", strerror(errno));
        goto out_unmap;
    }
    rt_fib_bind(fib, base, size);
    if (reader_slot != RT_FIB_WRITER) {
        fib->slot = &fib->sh->reader[reader_slot];
        ipc_st_rel(&fib->slot->active, 0);
    }
    return 0;

out_unmap:
    ipc_shm_unmap(base, size);
    return ret;
}

void rt_fib_detach(struct rt_fib *fib)
{
    if (fib->slot)
        ipc_st_rel(&fib->slot->active, 0);
    ipc_shm_unmap(fib->base, fib->size);
    memset(fib, 0, sizeof(*fib));
}

/* ---- hashes (writer only; linear probing, backward-shift deletion) ---- */

static uint32_t rt_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (uint32_t)k;
}

static struct rt_fib_hslot *rt_h_find(struct rt_fib_hslot *t, uint32_t mask, uint64_t key)
{
    for (uint32_t i = rt_hash(key) & mask;; i = (i + 1) & mask) {
        if (!t[i].used)
            return NULL;
        if (t[i].key == key)
            return &t[i];
    }
}

static void rt_h_insert(struct rt_fib_hslot *t, uint32_t mask, uint64_t key, uint32_t val)
{
    uint32_t i = rt_hash(key) & mask;
    while (t[i].used)
        i = (i + 1) & mask;
    t[i].key = key;
    t[i].val = val;
    t[i].used = 1;
}

static void rt_h_remove(struct rt_fib_hslot *t, uint32_t mask, struct rt_fib_hslot *s)
{
    uint32_t i = (uint32_t)(s - t);
    uint32_t j = i;
    for (;;) {
        t[i].used = 0;
        for (;;) {
            j = (j + 1) & mask;
            if (!t[j].used)
                return;
            uint32_t home = rt_hash(t[j].key) & mask;
            /* Move j back into the hole at i unless its home lies cyclically in (i, j]. */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        t[i] = t[j];
        i = j;
    }
}

static uint64_t rt_pfx_key(uint32_t addr, unsigned len)
{
    return (uint64_t)addr << 6 | len;
}

/* ---- deferred reuse ---- */

/* Unlinking is done: bump gen (W2 side) and return the retire stamp. */
static uint64_t rt_retire_gen(struct rt_fib *fib)
{
    return atomic_fetch_add_explicit(&fib->sh->gen, 1, memory_order_seq_cst) + 1;
}

/* Can an object retired at @g be reused? */
static bool rt_quiet_since(struct rt_fib *fib, uint64_t g)
{
    ipc_fence_sc(); /* W2: pairs with R2 in rt_fib_read_begin */
    for (unsigned r = 0; r < RT_FIB_MAX_READERS; r++) {
        uint64_t a = ipc_ld_acq(&fib->sh->reader[r].active);
        if (a != 0 && a < g)
            return false;
    }
    return true;
}

unsigned rt_fib_reclaim(struct rt_fib *fib)
{
    struct rt_fib_layout *l = fib->lay;
    struct rt_fib_w w = rt_w(fib);
    unsigned n = 0;
    while (l->tbl8_rq_len > 0 && rt_quiet_since(fib, w.tbl8_rq_gen[l->tbl8_rq_head])) {
        w.tbl8_free[l->tbl8_nfree++] = w.tbl8_rq_idx[l->tbl8_rq_head];
        l->tbl8_rq_head = (l->tbl8_rq_head + 1) % l->tbl8_groups;
        l->tbl8_rq_len--;
        n++;
    }
    while (l->nh_rq_len > 0 && rt_quiet_since(fib, w.nh_rq_gen[l->nh_rq_head])) {
        w.nh_free[l->nh_nfree++] = w.nh_rq_idx[l->nh_rq_head];
        l->nh_rq_head = (l->nh_rq_head + 1) % l->max_nh;
        l->nh_rq_len--;
        n++;
    }
    return n;
}

void rt_fib_reader_reset(struct rt_fib *fib, unsigned slot)
{
    if (slot < RT_FIB_MAX_READERS)
        ipc_st_rel(&fib->sh->reader[slot].active, 0);
}

/*
 * Wait briefly for readers to leave what was retired, for when a free
 * object is needed now. Readers hold a slot for one batch (microseconds), so
 * a millisecond is ample unless one is stopped; then the caller gets -EAGAIN.
 */
static void rt_reclaim_wait(struct rt_fib *fib, const uint32_t *rq_len, const uint32_t *nfree)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        rt_fib_reclaim(fib);
        if (*nfree > 0 || *rq_len == 0)
            return;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000l + (t.tv_nsec - t0.tv_nsec) > 10000000l)
            return;
        sched_yield();
    }
}

static int rt_tbl8_alloc(struct rt_fib *fib, uint32_t *g)
{
    struct rt_fib_layout *l = fib->lay;
    struct rt_fib_w w = rt_w(fib);
    if (l->tbl8_nfree == 0 && l->tbl8_hwm < l->tbl8_groups) {
        *g = l->tbl8_hwm++;
        return 0;
    }
    if (l->tbl8_nfree == 0)
        rt_reclaim_wait(fib, &l->tbl8_rq_len, &l->tbl8_nfree);
    if (l->tbl8_nfree == 0)
        return l->tbl8_rq_len ? -EAGAIN : -ENOSPC;
    *g = w.tbl8_free[--l->tbl8_nfree];
    return 0;
}

static void rt_tbl8_retire(struct rt_fib *fib, uint32_t g, uint64_t gen)
{
    struct rt_fib_layout *l = fib->lay;
    struct rt_fib_w w = rt_w(fib);
    uint32_t tail = (l->tbl8_rq_head + l->tbl8_rq_len) % l->tbl8_groups;
    w.tbl8_rq_idx[tail] = g;
    w.tbl8_rq_gen[tail] = gen;
    l->tbl8_rq_len++;
}

/* Find or create the next hop @nh; takes a reference. */
static int rt_nh_get(struct rt_fib *fib, const struct rt_nh *nh, uint32_t *idx)
{
    struct rt_fib_layout *l = fib->lay;
    struct rt_fib_w w = rt_w(fib);
    uint64_t key = rt_fib_nh_pack(nh);
    struct rt_fib_hslot *s = rt_h_find(w.nhh, l->nhh_mask, key);
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
            rt_reclaim_wait(fib, &l->nh_rq_len, &l->nh_nfree);
        if (l->nh_nfree == 0)
            return l->nh_rq_len ? -EAGAIN : -ENOSPC;
        i = w.nh_free[--l->nh_nfree];
    }
    /* Before any entry names it: entries are stored with release. */
    ipc_st_rlx(&fib->nh[i], key);
    rt_h_insert(w.nhh, l->nhh_mask, key, i);
    w.nh_ref[i] = 1;
    l->n_nh++;
    *idx = i;
    return 0;
}

static void rt_nh_put(struct rt_fib *fib, uint32_t i, uint64_t gen_if_needed)
{
    struct rt_fib_layout *l = fib->lay;
    struct rt_fib_w w = rt_w(fib);
    if (--w.nh_ref[i] > 0)
        return;
    struct rt_fib_hslot *s = rt_h_find(w.nhh, l->nhh_mask, ipc_ld_rlx(&fib->nh[i]));
    if (s)
        rt_h_remove(w.nhh, l->nhh_mask, s);
    /* The slot keeps its value for readers that still hold the index. */
    uint32_t tail = (l->nh_rq_head + l->nh_rq_len) % l->max_nh;
    w.nh_rq_idx[tail] = i;
    w.nh_rq_gen[tail] = gen_if_needed ? gen_if_needed : rt_retire_gen(fib);
    l->nh_rq_len++;
    l->n_nh--;
}

/* ---- table updates ---- */

static uint32_t rt_entry(uint32_t nh, unsigned len)
{
    return RT_FIB_E_VALID | (uint32_t)len << 24 | nh;
}

static int rt_entry_depth(uint32_t e)
{
    return (e & RT_FIB_E_VALID) ? (int)((e >> 24) & 0x3f) : -1;
}

static uint32_t rt_mask(unsigned len)
{
    return len == 0 ? 0 : ~0u << (32 - len);
}

/* Write @e over every entry of [lo, hi] in group @g whose depth <= @len. */
static void rt_tbl8_fill(struct rt_fib *fib, uint32_t g, unsigned lo, unsigned hi, uint32_t e, int len)
{
    _Atomic uint32_t *grp = &fib->tbl8[(size_t)g << 8];
    for (unsigned j = lo; j <= hi; j++)
        if (rt_entry_depth(ipc_ld_rlx(&grp[j])) <= len)
            ipc_st_rel(&grp[j], e);
}

static int rt_fib_set(struct rt_fib *fib, uint32_t addr, unsigned len, const struct rt_nh *nh, bool replace)
{
    struct rt_fib_layout *l = fib->lay;
    struct rt_fib_w w = rt_w(fib);
    if (!fib->writer || len > 32 || (addr & ~rt_mask(len)) || nh->port == 0xffff || nh->flags != 0)
        return -EINVAL;
    struct rt_fib_hslot *s = rt_h_find(w.pfx, l->pfx_mask, rt_pfx_key(addr, len));
    if (s && !replace)
        return -EEXIST;
    if (!s && l->n_prefixes >= l->max_prefixes)
        return -ENOSPC;
    l->dirty = 1;
    uint32_t ni;
    int ret = rt_nh_get(fib, nh, &ni);
    if (ret < 0)
        goto out;
    uint32_t e = rt_entry(ni, len);
    if (len <= 24) {
        uint32_t first = addr >> 8, count = 1u << (24 - len);
        for (uint32_t i = first; i < first + count; i++) {
            uint32_t t = ipc_ld_rlx(&fib->tbl24[i]);
            if (t & RT_FIB_E_EXT)
                rt_tbl8_fill(fib, t & RT_FIB_E_IDX, 0, 255, e, (int)len);
            else if (rt_entry_depth(t) <= (int)len)
                ipc_st_rel(&fib->tbl24[i], e);
        }
    } else {
        uint32_t i = addr >> 8;
        unsigned lo = addr & 0xff, hi = lo + (1u << (32 - len)) - 1;
        uint32_t t = ipc_ld_rlx(&fib->tbl24[i]);
        if (t & RT_FIB_E_EXT) {
            rt_tbl8_fill(fib, t & RT_FIB_E_IDX, lo, hi, e, (int)len);
        } else {
            uint32_t g;
            ret = rt_tbl8_alloc(fib, &g);
            if (ret < 0) {
                rt_nh_put(fib, ni, 0);
                goto out;
            }
            _Atomic uint32_t *grp = &fib->tbl8[(size_t)g << 8];
            for (unsigned j = 0; j < 256; j++)
                ipc_st_rlx(&grp[j], (j >= lo && j <= hi) ? e : t);
            ipc_st_rel(&fib->tbl24[i], RT_FIB_E_VALID | RT_FIB_E_EXT | g); /* W1 */
        }
    }
    if (s) {
        uint32_t old = s->val;
        s->val = ni;
        rt_nh_put(fib, old, 0);
    } else {
        rt_h_insert(w.pfx, l->pfx_mask, rt_pfx_key(addr, len), ni);
        l->n_prefixes++;
    }
out:
    l->dirty = 0;
    return ret;
}

int rt_fib_add(struct rt_fib *fib, uint32_t addr, unsigned len, const struct rt_nh *nh)
{
    return rt_fib_set(fib, addr, len, nh, false);
}

int rt_fib_replace(struct rt_fib *fib, uint32_t addr, unsigned len, const struct rt_nh *nh)
{
    return rt_fib_set(fib, addr, len, nh, true);
}

/* Rewrite entries in [lo, hi] of group @g written by a /@len prefix to @r. */
static void rt_tbl8_unfill(struct rt_fib *fib, uint32_t g, unsigned lo, unsigned hi, uint32_t r, int len)
{
    _Atomic uint32_t *grp = &fib->tbl8[(size_t)g << 8];
    for (unsigned j = lo; j <= hi; j++)
        if (rt_entry_depth(ipc_ld_rlx(&grp[j])) == len)
            ipc_st_rel(&grp[j], r);
}

int rt_fib_del(struct rt_fib *fib, uint32_t addr, unsigned len)
{
    struct rt_fib_layout *l = fib->lay;
    struct rt_fib_w w = rt_w(fib);
    if (!fib->writer || len > 32)
        return -EINVAL;
    struct rt_fib_hslot *s = rt_h_find(w.pfx, l->pfx_mask, rt_pfx_key(addr, len));
    if (!s)
        return -ENOENT;
    l->dirty = 1;
    uint32_t ni = s->val;
    rt_h_remove(w.pfx, l->pfx_mask, s);
    l->n_prefixes--;

    /* The covering route: the longest shorter prefix still in the list. */
    uint32_t r = 0;
    for (int cl = (int)len - 1; cl >= 0; cl--) {
        struct rt_fib_hslot *c = rt_h_find(w.pfx, l->pfx_mask, rt_pfx_key(addr & rt_mask((unsigned)cl), (unsigned)cl));
        if (c) {
            r = rt_entry(c->val, (unsigned)cl);
            break;
        }
    }
    uint64_t gen = 0;
    if (len <= 24) {
        uint32_t first = addr >> 8, count = 1u << (24 - len);
        for (uint32_t i = first; i < first + count; i++) {
            uint32_t t = ipc_ld_rlx(&fib->tbl24[i]);
            if (t & RT_FIB_E_EXT)
                rt_tbl8_unfill(fib, t & RT_FIB_E_IDX, 0, 255, r, (int)len);
            else if (rt_entry_depth(t) == (int)len)
                ipc_st_rel(&fib->tbl24[i], r);
        }
    } else {
        uint32_t i = addr >> 8;
        unsigned lo = addr & 0xff, hi = lo + (1u << (32 - len)) - 1;
        uint32_t t = ipc_ld_rlx(&fib->tbl24[i]);
        if (t & RT_FIB_E_EXT) {
            uint32_t g = t & RT_FIB_E_IDX;
            rt_tbl8_unfill(fib, g, lo, hi, r, (int)len);
            /* A group with no entry longer than /24 holds one value: fold it back. */
            _Atomic uint32_t *grp = &fib->tbl8[(size_t)g << 8];
            bool deep = false;
            for (unsigned j = 0; j < 256 && !deep; j++)
                deep = rt_entry_depth(ipc_ld_rlx(&grp[j])) > 24;
            if (!deep) {
                ipc_st_rel(&fib->tbl24[i], ipc_ld_rlx(&grp[0]));
                gen = rt_retire_gen(fib);
                rt_tbl8_retire(fib, g, gen);
            }
        }
    }
    /* The entries that named ni are gone; the same stamp covers it. */
    if (w.nh_ref[ni] == 1 && gen == 0)
        gen = rt_retire_gen(fib);
    rt_nh_put(fib, ni, gen);
    l->dirty = 0;
    return 0;
}

int rt_fib_get(const struct rt_fib *fib, uint32_t addr, unsigned len, struct rt_nh *nh)
{
    struct rt_fib_w w = rt_w(fib);
    if (len > 32)
        return -ENOENT;
    struct rt_fib_hslot *s = rt_h_find(w.pfx, fib->lay->pfx_mask, rt_pfx_key(addr, len));
    if (!s)
        return -ENOENT;
    *nh = rt_fib_nh(fib, s->val);
    return 0;
}

int rt_fib_iterate(const struct rt_fib *fib, int (*cb)(void *arg, uint32_t addr, unsigned len, const struct rt_nh *nh),
                   void *arg)
{
    struct rt_fib_w w = rt_w(fib);
    for (uint32_t i = 0; i <= fib->lay->pfx_mask; i++) {
        if (!w.pfx[i].used)
            continue;
        struct rt_nh nh = rt_fib_nh(fib, w.pfx[i].val);
        int ret = cb(arg, (uint32_t)(w.pfx[i].key >> 6), (unsigned)(w.pfx[i].key & 63), &nh);
        if (ret)
            return ret;
    }
    return 0;
}

void rt_fib_get_stats(const struct rt_fib *fib, struct rt_fib_stats *st)
{
    const struct rt_fib_layout *l = fib->lay;
    st->prefixes = l->n_prefixes;
    st->nh = l->n_nh;
    st->tbl8_used = l->tbl8_hwm - l->tbl8_nfree - l->tbl8_rq_len;
    st->tbl8_retired = l->tbl8_rq_len;
    st->tbl8_groups = l->tbl8_groups;
    st->nh_retired = l->nh_rq_len;
    st->region_bytes = fib->size;
    st->gen = ipc_ld_rlx(&fib->sh->gen);
}
