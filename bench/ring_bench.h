/* SPDX-License-Identifier: MIT */
/*
 * bench/ring_bench.h: what bench/ring.c (the harness and our ring) and
 * bench/ring_rte.c (DPDK's rte_ring, compiled alone with DPDK's flags) share:
 * the control block both processes of a run see, the time stamp counter, and
 * the entry points of the rte_ring half.
 */
#ifndef BENCH_RING_BENCH_H
#define BENCH_RING_BENCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define BENCH_CACHELINE 64
#define BENCH_BATCH_MAX 256u

/* What one side of a run reports. */
struct bench_side {
    uint64_t tsc;      /* time stamp counter ticks from "go" to the last handle */
    uint64_t ns;       /* the same span in CLOCK_MONOTONIC nanoseconds */
    uint64_t handles;  /* handles moved (the consumer checked each one) */
    uint64_t empty;    /* polls that found nothing (consumer) or no room (producer) */
    uint64_t bad_at;   /* first handle out of sequence: its position ... */
    uint32_t bad_val;  /* ... and the value found there */
    uint64_t timeouts; /* ping-pong: blocks that ended by timeout */
    uint64_t runq_ns;  /* time spent waiting for a CPU while timed */
    int err;           /* 0, or why the side gave up */
};

/*
 * One per run, in a MAP_SHARED region made before fork. The child (the
 * consumer) sets ready once pinned and mapped; the parent (the producer) then
 * sets go, and both start their clocks. Each flag has its own line so the
 * start-up handshake does not share a line with anything hot.
 */
struct bench_ctl {
    _Alignas(BENCH_CACHELINE) _Atomic uint32_t ready;
    _Alignas(BENCH_CACHELINE) _Atomic uint32_t go;
    _Alignas(BENCH_CACHELINE) _Atomic uint32_t abort; /* a side failed: the other stops waiting */
    _Alignas(BENCH_CACHELINE) struct bench_side prod;
    _Alignas(BENCH_CACHELINE) struct bench_side cons;
};

enum { BENCH_ERR_SEQ = 1, BENCH_ERR_ABORT = 2 };

static inline uint64_t bench_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* lfence: the read is not hoisted above the work it closes (it matters
     * for the sub-microsecond busy ping-pong, not for the long runs). */
    __builtin_ia32_lfence();
    return __builtin_ia32_rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/*
 * Nanoseconds this thread has spent runnable but waiting for a CPU (the
 * second field of /proc/thread-self/schedstat): a timed side that waited
 * while another task had its CPU measured the scheduler, not the ring.
 * 0 if the kernel does not keep schedstats.
 */
static inline uint64_t bench_runq_ns(void)
{
    unsigned long long run = 0, wait = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%llu %llu", &run, &wait) != 2)
        wait = 0;
    fclose(f);
    return wait;
}

static inline uint64_t bench_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The rte_ring half (bench/ring_rte.c). @esize is the element size: 8 for
 * rte_ring_{en,de}queue_burst (void * elements, the classic API), 4 for
 * rte_ring_{en,de}queue_burst_elem with 4-byte elements (our handle size).
 */
int rte_bench_available(void);
/* Bytes for a ring of @count elements of @esize bytes, or < 0. */
long rte_bench_memsize(unsigned esize, uint32_t count);
/* rte_ring_init(SP/SC) on @mem; 0 or a negative errno. */
int rte_bench_init(void *mem, uint32_t count);
int rte_bench_produce(void *ring, unsigned esize, uint32_t batch, uint64_t n, struct bench_ctl *ctl);
int rte_bench_consume(void *ring, unsigned esize, uint32_t batch, uint64_t n, struct bench_ctl *ctl);

#endif
