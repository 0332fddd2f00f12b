/* SPDX-License-Identifier: MIT */
/*
 * ipc/stage.h: stage counters, the CPU cycles each stage of a service's loop
 * costs per packet (`ringrouter stats --stages`, docs/stats.md). A service
 * names its stages once at start, then brackets each stage of its loop:
 *
 *     uint64_t t = ipc_stage_start(svc);
 *     n = ipc_ring_recv(...);
 *     t = ipc_stage_end(svc, MY_ST_RX, t, n);
 *     ... work on the n packets ...
 *     t = ipc_stage_end(svc, MY_ST_WORK, t, n);
 *     t = ipc_stage_flush(svc, MY_ST_WAKE, t);
 *
 * Each end returns the time it read, so consecutive stages share one TSC
 * read and every cycle between the start and the last end lands in exactly
 * one stage. Time outside a chain (the blocking wait) is in none.
 *
 * The counters are switched by the manifest ([router] stages = on), carried
 * to every service in its config blob (IPC_SVC_F_STAGES). Off, each call is
 * one well-predicted branch on svc->stages_on and touches nothing else; on,
 * an end costs a TSC read and three single-writer adds on the stage's own
 * cache line. The TSC is read without serialising it (no lfence, no
 * rdtscp): a few dozen cycles of skew at a boundary, averaged over millions
 * of packets, are not worth stalling the pipeline for on every stage. The
 * TSC is wall time: a stage in which the service was preempted (by a NAPI
 * thread, or a peer its wake-up let run first) counts the time it was off
 * the CPU too.
 */
#ifndef IPC_STAGE_H
#define IPC_STAGE_H

#include <stdint.h>
#include <stdio.h>

#include "svc.h"

/** The cycle counter: the TSC on x86, the virtual counter on arm64, ns elsewhere. */
static inline uint64_t ipc_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return ipc_svc_now_ns();
#endif
}

/**
 * Name the service's stages (@n names, at most IPC_STAGE_MAX; longer names
 * are cut), in the order of its stage enum. Call once at init, on or off:
 * `stats --stages` lists the stages by these names.
 */
static inline void ipc_stage_names(struct ipc_svc *svc, const char *const *names, unsigned n)
{
    if (n > IPC_STAGE_MAX)
        n = IPC_STAGE_MAX;
    for (unsigned i = 0; i < n; i++)
        snprintf(svc->stats->stage[i].name, IPC_STAGE_NAME, "%s", names[i]);
    ipc_st_rel(&svc->stats->nstage, n);
}

/** Open a chain of stages: the TSC now with stage counters on, 0 (and no read) off. */
static inline uint64_t ipc_stage_start(const struct ipc_svc *svc)
{
    if (ipc_unlikely(svc->stages_on))
        return ipc_cycles();
    return 0;
}

/**
 * Close stage @stage, begun at @t: add the cycles since @t and @pkts
 * packets, and one call if @pkts is not 0 (a pass that found nothing adds
 * its cycles, the cost of looking, but no call, so that packets per call is
 * the batch size). Returns the TSC it read: the next stage's start. Off,
 * returns 0 and writes nothing.
 */
static inline uint64_t ipc_stage_end(struct ipc_svc *svc, unsigned stage, uint64_t t, uint64_t pkts)
{
    if (ipc_unlikely(svc->stages_on)) {
        uint64_t now = ipc_cycles();
        struct ipc_stage *s = &svc->stats->stage[stage];
        /* A TSC the kernel marked unstable (a VM restored from a snapshot,
         * `tsc=unstable`) can step back: that interval counts nothing,
         * rather than 2^64 less a few cycles. */
        if (ipc_likely(now > t))
            ipc_count(&s->cycles, now - t);
        if (pkts) {
            ipc_count(&s->pkts, pkts);
            ipc_count(&s->calls, 1);
        }
        return now;
    }
    return 0;
}

/**
 * ipc_svc_flush() as stage @stage: the fence and the eventfd writes the
 * loop owes its peers, with the wake-ups as the stage's packets (so its
 * cycles per packet are cycles per wake-up).
 */
static inline uint64_t ipc_stage_flush(struct ipc_svc *svc, unsigned stage, uint64_t t)
{
    unsigned w = ipc_svc_flush(svc);
    return ipc_stage_end(svc, stage, t, w);
}

#endif
