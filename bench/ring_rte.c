/* SPDX-License-Identifier: MIT */
/*
 * bench/ring_rte.c: the baseline of bench/ring, DPDK's rte_ring in SP/SC mode.
 * This is the only file that sees DPDK's headers, and the only object built
 * with DPDK's cflags (-march=corei7, -include rte_config.h); built with
 * HAVE_DPDK=0 (no libdpdk-dev) it compiles to stubs, so `ninja` still builds
 * everywhere and bench/ring says what is missing.
 *
 * No EAL. rte_ring_init() only fills in the ring header (name, flags, size,
 * mask, capacity, head/tail indices) in memory the caller provides; unlike
 * rte_ring_create() it needs no memzone and does not register the ring in
 * EAL's tail queue, and the burst calls are inline code over that memory.
 * So the ring lives in a MAP_SHARED region that the harness maps before fork,
 * exactly like ours, and rte_eal_init() is never called (we checked: the
 * ring moves every handle, in order, without it).
 *
 * Two variants at the same ring size and batch:
 *  - esize 8: rte_ring_enqueue_burst / rte_ring_dequeue_burst, the classic
 *    void * API, on a ring initialised with RING_F_SP_ENQ | RING_F_SC_DEQ (the
 *    generic calls then take the single-producer / single-consumer path).
 *    Its elements are twice the size of our 4-byte handles.
 *  - esize 4: rte_ring_enqueue_burst_elem / rte_ring_dequeue_burst_elem with
 *    4-byte elements, the same bytes per handle as ours. rte_ring_init()
 *    does not depend on the element size; the region is sized with
 *    rte_ring_get_memsize_elem(4, count), as rte_ring_create_elem() does.
 */
#include "ring_bench.h"

#include <errno.h>

#if HAVE_DPDK

#include <rte_ring.h>
#include <rte_ring_elem.h>

int rte_bench_available(void)
{
    return 1;
}

long rte_bench_memsize(unsigned esize, uint32_t count)
{
    return (long)rte_ring_get_memsize_elem(esize, count);
}

int rte_bench_init(void *mem, uint32_t count)
{
    return rte_ring_init(mem, "bench_ring", count, RING_F_SP_ENQ | RING_F_SC_DEQ);
}

/* void * elements: the classic API. */
#define LOOP_NAME(x) rte8_##x
#define LOOP_LINKAGE static
#define LOOP_ELEM void *
#define LOOP_TO(seq) ((void *)(uintptr_t)(seq))
#define LOOP_FROM(e) ((uint32_t)(uintptr_t)(e))
#define LOOP_ENQ(r, b, n) rte_ring_enqueue_burst((struct rte_ring *)(r), (b), (n), NULL)
#define LOOP_DEQ(r, b, n) rte_ring_dequeue_burst((struct rte_ring *)(r), (b), (n), NULL)
#include "ring_loop.h"
#undef LOOP_NAME
#undef LOOP_LINKAGE
#undef LOOP_ELEM
#undef LOOP_TO
#undef LOOP_FROM
#undef LOOP_ENQ
#undef LOOP_DEQ

/* 4-byte elements, as our handles. */
#define LOOP_NAME(x) rte4_##x
#define LOOP_LINKAGE static
#define LOOP_ELEM uint32_t
#define LOOP_TO(seq) (seq)
#define LOOP_FROM(e) (e)
#define LOOP_ENQ(r, b, n) rte_ring_enqueue_burst_elem((struct rte_ring *)(r), (b), sizeof(uint32_t), (n), NULL)
#define LOOP_DEQ(r, b, n) rte_ring_dequeue_burst_elem((struct rte_ring *)(r), (b), sizeof(uint32_t), (n), NULL)
#include "ring_loop.h"
#undef LOOP_NAME
#undef LOOP_LINKAGE
#undef LOOP_ELEM
#undef LOOP_TO
#undef LOOP_FROM
#undef LOOP_ENQ
#undef LOOP_DEQ

int rte_bench_produce(void *ring, unsigned esize, uint32_t batch, uint64_t n, struct bench_ctl *ctl)
{
    return esize == 4 ? rte4_produce(ring, batch, n, ctl) : rte8_produce(ring, batch, n, ctl);
}

int rte_bench_consume(void *ring, unsigned esize, uint32_t batch, uint64_t n, struct bench_ctl *ctl)
{
    return esize == 4 ? rte4_consume(ring, batch, n, ctl) : rte8_consume(ring, batch, n, ctl);
}

#else /* !HAVE_DPDK */

int rte_bench_available(void)
{
    return 0;
}

long rte_bench_memsize(unsigned esize, uint32_t count)
{
    return -ENOSYS;
}

int rte_bench_init(void *mem, uint32_t count)
{
    return -ENOSYS;
}

int rte_bench_produce(void *ring, unsigned esize, uint32_t batch, uint64_t n, struct bench_ctl *ctl)
{
    return -ENOSYS;
}

int rte_bench_consume(void *ring, unsigned esize, uint32_t batch, uint64_t n, struct bench_ctl *ctl)
{
    return -ENOSYS;
}

#endif
