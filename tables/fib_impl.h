/* SPDX-License-Identifier: MIT */
/*
 * tables/fib_impl.h: the FIB region's private layout, shared by the two
 * halves that must agree on it: tables/fib.c (sizes a region and maps it,
 * reader or writer) and tables/fib_write.c (the supervisor's updates).
 * Nothing outside tables/ includes this file.
 */
#ifndef TABLES_FIB_IMPL_H
#define TABLES_FIB_IMPL_H

#include "tables/fib.h"

#define FIB_PAGE 4096u

/* Writer-side hash slot: prefix (key = addr << 6 | len) or next hop (key = packed nh). */
struct fib_hslot {
    uint64_t key;
    uint32_t val; /* prefix: next-hop index; next hop: its index */
    uint32_t used;
};

struct fib_layout {
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
_Static_assert(sizeof(struct fib_layout) <= FIB_PAGE, "layout page");

/**
 * Fill @l with the offsets of a region sized by @p and return the region's
 * size: attach recomputes it to check that a region is what it claims.
 */
uint64_t fib_impl_layout(struct fib_layout *l, const struct fib_params *p);

/** Point @fib's tables into the region at @base. */
void fib_impl_bind(struct fib *fib, void *base, size_t size);

/* Layout arithmetic, shared with the IPv6 FIB (tables/fib6.c): @v rounded
 * up to a multiple of @a; the smallest power of two >= @v (at least 16);
 * and a writer's recycler for @n objects from offset @o (a free stack of
 * indices, then the retire queue's indices and generations), returning the
 * offset past it. */
uint64_t fib_align(uint64_t v, uint64_t a);
uint32_t fib_pow2_at_least(uint64_t v);
uint64_t fib_layout_recycler(uint64_t o, uint64_t n, uint64_t *free_off, uint64_t *rq_idx_off, uint64_t *rq_gen_off);

#endif
