/* SPDX-License-Identifier: MIT */
/*
 * tables/fib.c: mapping a FIB region, for both halves: the layout that
 * sizes it, and attach, which checks that a region is the size its own
 * layout page claims before anything is bound to it. The router links this
 * and the inline lookups of fib.h; the writer half is tables/fib_write.c.
 */
#include "tables/fib_impl.h"

#include <errno.h>
#include <string.h>

uint64_t fib_align(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

uint32_t fib_pow2_at_least(uint64_t v)
{
    uint32_t p = 16;
    while (p < v)
        p <<= 1;
    return p;
}

/* The writer's recycler for @n objects (tbl8 groups or next hops) from
 * offset @o: a free stack of indices, then the retire queue's indices and
 * generations. Returns the offset past it. */
uint64_t fib_layout_recycler(uint64_t o, uint64_t n, uint64_t *free_off, uint64_t *rq_idx_off,
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

uint64_t fib_impl_layout(struct fib_layout *l, const struct fib_params *p)
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
    o = fib_align(o + (uint64_t)p->max_nh * sizeof(uint64_t), FIB_PAGE);
    l->off_nh_ref = o;
    o = fib_align(o + (uint64_t)p->max_nh * sizeof(uint32_t), 64);
    l->off_pfx = o;
    o = fib_align(o + (uint64_t)(l->pfx_mask + 1) * sizeof(struct fib_hslot), 64);
    l->off_nhh = o;
    o = fib_align(o + (uint64_t)(l->nhh_mask + 1) * sizeof(struct fib_hslot), 64);
    o = fib_layout_recycler(o, p->tbl8_groups, &l->off_tbl8_free, &l->off_tbl8_rq_idx, &l->off_tbl8_rq_gen);
    o = fib_layout_recycler(o, p->max_nh, &l->off_nh_free, &l->off_nh_rq_idx, &l->off_nh_rq_gen);
    return fib_align(o, FIB_PAGE);
}

void fib_impl_bind(struct fib *fib, void *base, size_t size)
{
    uint8_t *b = base;
    fib->base = base;
    fib->size = size;
    fib->lay = (struct fib_layout *)(b + FIB_PAGE);
    fib->tbl24 = (_Atomic uint32_t *)(b + fib->lay->off_tbl24);
    fib->tbl8 = (_Atomic uint32_t *)(b + fib->lay->off_tbl8);
    fib->nh = (_Atomic uint64_t *)(b + fib->lay->off_nh);
}

int fib_attach(struct fib *fib, int fd, int rfd, int reader_slot, struct ipc_err *err)
{
    const void *cbase;
    size_t size;
    if (reader_slot != FIB_WRITER && (reader_slot < 0 || reader_slot >= (int)FIB_MAX_READERS))
        return ipc_errf(err, -EINVAL, "fib: reader slot %d out of range", reader_slot);
    int ret = ipc_shm_attach_ro(fd, IPC_SHM_FIB, FIB_VERSION, &cbase, &size, err);
    if (ret < 0)
        return ret;
    void *base = (void *)cbase; /* PROT_READ: the tables are read through atomic loads only */
    memset(fib, 0, sizeof(*fib));
    struct fib_layout l;
    memcpy(&l, (uint8_t *)base + FIB_PAGE, sizeof(l));
    struct fib_params p = {.max_prefixes = l.max_prefixes, .tbl8_groups = l.tbl8_groups, .max_nh = l.max_nh};
    struct fib_layout want;
    if (size < 2 * FIB_PAGE || fib_impl_layout(&want, &p) != size || want.off_nh_rq_gen != l.off_nh_rq_gen) {
        ret = ipc_errf(err, -EPROTO, "fib region: layout does not match its size %zu", size);
        goto out_unmap;
    }
    if (reader_slot == FIB_WRITER) {
        ret = l.dirty ? ipc_errf(err, -EUCLEAN, "fib region: the previous writer died mid-update; rebuild it")
                      : ipc_errf(err, -EPERM, "fib region: sealed against writes; only the supervisor that made it "
                                              "writes it");
        goto out_unmap;
    }
    void *rbase;
    ret = ipc_shm_attach_fixed(rfd, IPC_SHM_FIB_READERS, FIB_READERS_VERSION, sizeof(struct fib_shared), &rbase,
                               err);
    if (ret < 0)
        goto out_unmap;
    fib_impl_bind(fib, base, size);
    fib->sh = rbase;
    fib->sh_size = sizeof(struct fib_shared);
    fib->slot = &fib->sh->reader[reader_slot];
    ipc_st_rel(&fib->slot->active, 0);
    return 0;

out_unmap:
    ipc_shm_unmap(base, size);
    return ret;
}

void fib_detach(struct fib *fib)
{
    if (fib->slot)
        ipc_st_rel(&fib->slot->active, 0);
    if (fib->sh)
        ipc_shm_unmap(fib->sh, fib->sh_size);
    ipc_shm_unmap(fib->base, fib->size);
    memset(fib, 0, sizeof(*fib));
}
