/* SPDX-License-Identifier: MIT */
/*
 * tables/fib6_impl.h: the IPv6 FIB region's private layout, shared by the
 * two halves that must agree on it: tables/fib6.c (sizes a region and maps
 * it) and tables/fib6_write.c (the supervisor's updates). Nothing outside
 * tables/ includes this file.
 */
#ifndef TABLES_FIB6_IMPL_H
#define TABLES_FIB6_IMPL_H

#include "tables/fib6.h"

#define FIB6_PAGE 4096u

/*
 * Writer-side hash slot. A prefix: k0/k1 its address (host-order halves),
 * k2 its length, val its next-hop index. A next hop: k0/k1/k2 its three
 * packed words (gateway halves, port | flags << 16), val its index.
 */
struct fib6_hslot {
    uint64_t k0, k1;
    uint32_t k2;
    uint32_t val;
    uint32_t used;
    uint32_t pad;
};
_Static_assert(sizeof(struct fib6_hslot) == 32, "two slots a cache line");

struct fib6_layout {
    uint32_t max_prefixes, tbl8_groups, max_nh;
    uint32_t pfx_mask, nhh_mask; /* hash capacities - 1 (powers of two) */
    uint32_t pad0;
    uint64_t off_tbl24, off_tbl8, off_nh, off_nh_ref, off_pfx, off_nhh;
    uint64_t off_tbl8_free, off_tbl8_rq_idx, off_tbl8_rq_gen;
    uint64_t off_nh_free, off_nh_rq_idx, off_nh_rq_gen;
    /* Writer state: read back by the writer only after a bounds check. */
    uint32_t dirty;
    uint32_t n_prefixes, n_nh;
    uint32_t tbl8_hwm, tbl8_nfree, tbl8_rq_head, tbl8_rq_len;
    uint32_t nh_hwm, nh_nfree, nh_rq_head, nh_rq_len;
};
_Static_assert(sizeof(struct fib6_layout) <= FIB6_PAGE, "layout page");

/**
 * Fill @l with the offsets of a region sized by @p and return the region's
 * size: attach recomputes it to check that a region is what it claims.
 */
uint64_t fib6_impl_layout(struct fib6_layout *l, const struct fib6_params *p);

/** Point @fib's tables into the region at @base. */
void fib6_impl_bind(struct fib6 *fib, void *base, size_t size);

#endif
