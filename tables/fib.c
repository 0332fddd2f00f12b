/* SPDX-License-Identifier: MIT */
/*
 * tables/fib.c: mapping a FIB region, either family, for both halves: the
 * layout that sizes it, and attach, which checks that a region is what its
 * own layout page claims before anything is bound to it. The router links
 * this and the inline lookups of fib.h and fib6.h; the writer halves are
 * tables/fib_common.c, fib_write.c and fib6_write.c.
 */
#include "tables/fib_impl.h"

#include <errno.h>
#include <string.h>

const struct fib_family fib_family4 = {
    .name = "fib",
    .shm_kind = IPC_SHM_FIB,
    .version = FIB_VERSION,
    .max_prefixes = 1u << 28,
    .max_groups = 1u << 24,
    .max_nh = FIB_MAX_NH,
    .nh_bytes = sizeof(uint64_t),
    .hslot_bytes = sizeof(struct fib_hslot),
    .defaults = {.max_prefixes = 1100000, .tbl8_groups = 65536, .max_nh = 65536},
};

const struct fib_family fib_family6 = {
    .name = "fib6",
    .shm_kind = IPC_SHM_FIB6,
    .version = FIB6_VERSION,
    .max_prefixes = FIB6_MAX_PREFIXES,
    .max_groups = FIB6_MAX_GROUPS,
    .max_nh = FIB6_MAX_NH,
    .nh_bytes = FIB6_NH_WORDS * sizeof(uint64_t),
    .hslot_bytes = sizeof(struct fib6_hslot),
    .defaults = {.max_prefixes = 524288, .tbl8_groups = 262144, .max_nh = 65536},
};

static uint64_t fib_align(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static uint32_t fib_pow2_at_least(uint64_t v)
{
    uint32_t p = 16;
    while (p < v)
        p <<= 1;
    return p;
}

/* The writer's recycler for @n objects (tbl8 groups or next hops) from
 * offset @o: a free stack of indices, then the retire queue's indices and
 * generations. Returns the offset past it. */
static uint64_t fib_layout_recycler(uint64_t o, uint64_t n, uint64_t *free_off, uint64_t *rq_idx_off,
                                    uint64_t *rq_gen_off)
{
    *free_off = o;
    o += n * sizeof(uint32_t);
    *rq_idx_off = o;
    o += n * sizeof(uint32_t);
    o = fib_align(o, sizeof(uint64_t));
    *rq_gen_off = o;
    return o + n * sizeof(uint64_t);
}

uint64_t fib_layout_of(const struct fib_family *f, struct fib_layout *l, const struct fib_params *p)
{
    memset(l, 0, sizeof(*l));
    l->max_prefixes = p->max_prefixes;
    l->tbl8_groups = p->tbl8_groups;
    l->max_nh = p->max_nh;
    l->pfx_mask = fib_pow2_at_least((uint64_t)p->max_prefixes * 2) - 1;
    l->nhh_mask = fib_pow2_at_least((uint64_t)p->max_nh * 2) - 1;
    uint64_t o = 2 * FIB_PAGE;
    l->off_tbl24 = o;
    o = fib_align(o + (sizeof(uint32_t) << 24), FIB_PAGE);
    l->off_tbl8 = o;
    o = fib_align(o + (uint64_t)p->tbl8_groups * 256 * sizeof(uint32_t), FIB_PAGE);
    l->off_nh = o;
    o = fib_align(o + (uint64_t)p->max_nh * f->nh_bytes, FIB_PAGE);
    l->off_nh_ref = o;
    o = fib_align(o + (uint64_t)p->max_nh * sizeof(uint32_t), 64);
    l->off_pfx = o;
    o = fib_align(o + (uint64_t)(l->pfx_mask + 1) * f->hslot_bytes, 64);
    l->off_nhh = o;
    o = fib_align(o + (uint64_t)(l->nhh_mask + 1) * f->hslot_bytes, 64);
    o = fib_layout_recycler(o, p->tbl8_groups, &l->off_tbl8_free, &l->off_tbl8_rq_idx, &l->off_tbl8_rq_gen);
    o = fib_layout_recycler(o, p->max_nh, &l->off_nh_free, &l->off_nh_rq_idx, &l->off_nh_rq_gen);
    /* Next-hop groups: each takes a next hop for its header, so a quarter
     * of the next hops is plenty; pages are touched only as used. */
    l->mp_groups = p->max_nh / 4 > 16 ? p->max_nh / 4 : 16;
    l->mph_mask = fib_pow2_at_least((uint64_t)l->mp_groups * 2) - 1;
    o = fib_align(o, FIB_PAGE);
    l->off_mp = o;
    o = fib_align(o + (uint64_t)l->mp_groups * FIB_MP_WORDS * sizeof(uint32_t), FIB_PAGE);
    l->off_mph = o;
    o = fib_align(o + (uint64_t)(l->mph_mask + 1) * sizeof(struct fib_hslot), 64);
    o = fib_layout_recycler(o, l->mp_groups, &l->off_mp_free, &l->off_mp_rq_idx, &l->off_mp_rq_gen);
    return fib_align(o, FIB_PAGE);
}

void fib_map_bind(struct fib_map *m, void *base, size_t size, const struct fib_layout *l)
{
    uint8_t *b = base;
    m->base = base;
    m->size = size;
    m->lay = (struct fib_layout *)(b + FIB_PAGE);
    m->tbl24 = (_Atomic uint32_t *)(b + l->off_tbl24);
    m->tbl8 = (_Atomic uint32_t *)(b + l->off_tbl8);
    m->nh = (_Atomic uint64_t *)(b + l->off_nh);
    m->mp = (_Atomic uint32_t *)(b + l->off_mp);
    m->pfx = b + l->off_pfx;
    m->lim = (struct fib_limits){.max_prefixes = l->max_prefixes,
                                 .tbl8_groups = l->tbl8_groups,
                                 .max_nh = l->max_nh,
                                 .pfx_mask = l->pfx_mask,
                                 .nhh_mask = l->nhh_mask,
                                 .mp_groups = l->mp_groups,
                                 .mph_mask = l->mph_mask};
}

int fib_map_open(const struct fib_family *f, struct fib_map *m, int fd, bool *dirty, struct ipc_err *err)
{
    const void *cbase;
    size_t size;
    int ret = ipc_shm_attach_ro(fd, f->shm_kind, f->version, &cbase, &size, err);
    if (ret < 0)
        return ret;
    void *base = (void *)cbase; /* PROT_READ: the tables are read through atomic loads only */
    struct fib_layout l, want;
    if (size < 2 * FIB_PAGE) {
        ipc_shm_unmap(base, size);
        return ipc_errf(err, -EPROTO, "%s region: %zu bytes, too small for its layout page", f->name, size);
    }
    memcpy(&l, (uint8_t *)base + FIB_PAGE, sizeof(l));
    struct fib_params p = {.max_prefixes = l.max_prefixes, .tbl8_groups = l.tbl8_groups, .max_nh = l.max_nh};
    if (p.tbl8_groups > f->max_groups || p.max_nh > f->max_nh || p.max_prefixes > f->max_prefixes ||
        fib_layout_of(f, &want, &p) != size || want.pfx_mask != l.pfx_mask || want.nhh_mask != l.nhh_mask ||
        memcmp(&want.off_tbl24, &l.off_tbl24, 12 * sizeof(uint64_t)) != 0 || want.mp_groups != l.mp_groups ||
        want.mph_mask != l.mph_mask || memcmp(&want.off_mp, &l.off_mp, 5 * sizeof(uint64_t)) != 0) {
        ipc_shm_unmap(base, size);
        return ipc_errf(err, -EPROTO, "%s region: layout does not match its size %zu", f->name, size);
    }
    memset(m, 0, sizeof(*m));
    fib_map_bind(m, base, size, &want);
    *dirty = l.dirty != 0;
    return 0;
}

int fib_map_attach(const struct fib_family *f, struct fib_map *m, int fd, int rfd, int reader_slot,
                   struct ipc_err *err)
{
    if (reader_slot != FIB_WRITER && (reader_slot < 0 || reader_slot >= (int)FIB_MAX_READERS))
        return ipc_errf(err, -EINVAL, "%s: reader slot %d out of range", f->name, reader_slot);
    bool dirty;
    int ret = fib_map_open(f, m, fd, &dirty, err);
    if (ret < 0)
        return ret;
    if (reader_slot == FIB_WRITER) {
        ret = dirty ? ipc_errf(err, -EUCLEAN, "%s region: the previous writer died mid-update; rebuild it", f->name)
                    : ipc_errf(err, -EPERM,
                               "%s region: sealed against writes; only the supervisor that made it writes it",
                               f->name);
        goto out_unmap;
    }
    void *rbase;
    ret = ipc_shm_attach_fixed(rfd, IPC_SHM_FIB_READERS, FIB_READERS_VERSION, sizeof(struct fib_shared), &rbase,
                               err);
    if (ret < 0)
        goto out_unmap;
    m->lim = (struct fib_limits){0}; /* a reader's: it has no writer state */
    m->sh = rbase;
    m->sh_size = sizeof(struct fib_shared);
    m->slot = &m->sh->reader[reader_slot];
    ipc_st_rel(&m->slot->active, 0);
    return 0;

out_unmap:
    ipc_shm_unmap(m->base, m->size);
    memset(m, 0, sizeof(*m));
    return ret;
}

void fib_map_detach(struct fib_map *m)
{
    if (m->slot)
        ipc_st_rel(&m->slot->active, 0);
    if (m->sh)
        ipc_shm_unmap(m->sh, m->sh_size);
    if (m->base)
        ipc_shm_unmap(m->base, m->size);
    memset(m, 0, sizeof(*m));
}

int fib_attach(struct fib *fib, int fd, int rfd, int reader_slot, struct ipc_err *err)
{
    fib->writer = false;
    return fib_map_attach(&fib_family4, &fib->m, fd, rfd, reader_slot, err);
}

void fib_detach(struct fib *fib)
{
    fib_map_detach(&fib->m);
    fib->writer = false;
}

int fib6_attach(struct fib6 *fib, int fd, int rfd, int reader_slot, struct ipc_err *err)
{
    fib->writer = false;
    return fib_map_attach(&fib_family6, &fib->m, fd, rfd, reader_slot, err);
}

void fib6_detach(struct fib6 *fib)
{
    fib_map_detach(&fib->m);
    fib->writer = false;
}
