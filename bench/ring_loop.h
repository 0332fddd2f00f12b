/* SPDX-License-Identifier: MIT */
/*
 * bench/ring_loop.h: the producer and consumer loops of the throughput runs,
 * written once and instantiated for each ring, so that every implementation
 * is driven by exactly the same code and only the enqueue/dequeue calls
 * differ. Included once per ring, with these defined (and undefined after):
 *
 *   LOOP_NAME(x)       name of the generated functions, e.g. ours_##x
 *   LOOP_LINKAGE       static, or empty
 *   LOOP_ELEM          element type of the ring (uint32_t, void *)
 *   LOOP_TO(seq)       sequence number (uint32_t) -> element
 *   LOOP_FROM(e)       element -> sequence number (uint32_t)
 *   LOOP_ENQ(r, b, n)  enqueue up to n of b[], return how many (uint32_t)
 *   LOOP_DEQ(r, b, n)  dequeue up to n into b[], return how many (uint32_t)
 *
 * Both sides busy-poll without PAUSE: in a KVM guest a PAUSE loop can trip
 * pause-loop exiting and hand the vCPU back to the host, which would measure
 * the hypervisor instead of the ring.
 *
 * The producer sends n consecutive sequence numbers in bursts of `batch`
 * (a burst the ring takes only in part is finished before the next starts);
 * the consumer asks for up to `batch` at a time and checks every handle it
 * gets against the next expected number (one OR-reduction per burst, which
 * the compiler vectorises, so the check costs the same small amount on every
 * ring). A lost, duplicated or reordered handle stops the run with an error.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "ring_bench.h"

LOOP_LINKAGE int LOOP_NAME(produce)(void *ring, uint32_t batch, uint64_t n, struct bench_ctl *ctl)
{
    LOOP_ELEM buf[BENCH_BATCH_MAX];
    uint64_t sent = 0, full = 0;
    uint32_t seq = 0;

    if (batch == 0 || batch > BENCH_BATCH_MAX)
        return -1;
    while (!atomic_load_explicit(&ctl->go, memory_order_acquire))
        ;
    uint64_t rq0 = bench_runq_ns(), ns0 = bench_ns(), t0 = bench_tsc();
    while (sent < n) {
        uint32_t want = n - sent < batch ? (uint32_t)(n - sent) : batch;
        for (uint32_t i = 0; i < want; i++)
            buf[i] = LOOP_TO(seq + i);
        uint32_t off = 0;
        while (off < want) {
            uint32_t k = LOOP_ENQ(ring, buf + off, want - off);
            if (k == 0) {
                full++;
                if (atomic_load_explicit(&ctl->abort, memory_order_relaxed)) {
                    ctl->prod.err = BENCH_ERR_ABORT;
                    return -1;
                }
                continue;
            }
            off += k;
        }
        seq += want;
        sent += want;
    }
    uint64_t t1 = bench_tsc(), ns1 = bench_ns();
    ctl->prod.tsc = t1 - t0;
    ctl->prod.ns = ns1 - ns0;
    ctl->prod.handles = sent;
    ctl->prod.empty = full;
    ctl->prod.runq_ns = bench_runq_ns() - rq0;
    return 0;
}

LOOP_LINKAGE int LOOP_NAME(consume)(void *ring, uint32_t batch, uint64_t n, struct bench_ctl *ctl)
{
    LOOP_ELEM buf[BENCH_BATCH_MAX];
    uint64_t got = 0, empty = 0;
    uint32_t expect = 0;

    if (batch == 0 || batch > BENCH_BATCH_MAX)
        return -1;
    while (!atomic_load_explicit(&ctl->go, memory_order_acquire))
        ;
    uint64_t rq0 = bench_runq_ns(), ns0 = bench_ns(), t0 = bench_tsc();
    while (got < n) {
        uint32_t k = LOOP_DEQ(ring, buf, batch);
        if (k == 0) {
            empty++;
            continue;
        }
        uint32_t diff = 0;
        for (uint32_t i = 0; i < k; i++)
            diff |= LOOP_FROM(buf[i]) ^ (expect + i);
        if (diff) {
            uint32_t i = 0;
            while (LOOP_FROM(buf[i]) == expect + i)
                i++;
            ctl->cons.bad_at = got + i;
            ctl->cons.bad_val = LOOP_FROM(buf[i]);
            ctl->cons.err = BENCH_ERR_SEQ;
            atomic_store_explicit(&ctl->abort, 1, memory_order_relaxed);
            return -1;
        }
        expect += k;
        got += k;
    }
    uint64_t t1 = bench_tsc(), ns1 = bench_ns();
    ctl->cons.tsc = t1 - t0;
    ctl->cons.ns = ns1 - ns0;
    ctl->cons.handles = got;
    ctl->cons.empty = empty;
    ctl->cons.runq_ns = bench_runq_ns() - rq0;
    return 0;
}
