/* SPDX-License-Identifier: MIT */
/*
 * ipc/inject.c: the service's half of fault injection (ipc/inject.h). Runs
 * at the end of a loop, from ipc_svc_beat(), only when the command word has
 * moved or a fault is in progress. Each fault is one the system must survive
 * when a real bug or a hostile peer makes it, and is made with the same
 * calls such a bug would make; the consumer's checks (ipc_pool_take), the
 * pool's (ipc_pool_free) and the supervisor's (reclaim, hang detection)
 * are what answer it, not anything here.
 *
 * Why each is safe for everyone but the target:
 *  - a garbage handle is out of the pool's range, never a real buffer's
 *    index: the consumer drops it without touching any metadata. (A stale
 *    index of a real buffer could be reallocated meanwhile by the producer
 *    itself and then taken by both: that is a bug the pool cannot see, not
 *    a fault to inject.) It is published by the ring's producer, the one
 *    process that may write the ring's producer index;
 *  - a scribbled buffer and a looping chain are the injecting service's own
 *    buffers, published where it publishes: the consumer refuses them
 *    before it rewrites anything, keeps the first frame (ours, so certainly
 *    the producer's) and frees it. The loop is a frame linked to itself, so
 *    no second frame is left with us once the first is refused;
 *  - a double free is refused by the pool's owner check: the buffer is on
 *    our own free magazine in between, where no one else can take it;
 *  - leaked buffers are ours until we die: reclaim frees them then, and a
 *    clean exit holding them is a leak the shutdown census names.
 */
#include "inject.h"

#include <errno.h>

#include "svc.h"

#if defined(__x86_64__) || defined(__i386__)
#define inj_cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define inj_cpu_relax() __asm__ __volatile__("yield")
#else
#define inj_cpu_relax() ((void)0)
#endif

/* Read through a volatile, so the compiler cannot see the store is to null. */
static uint32_t *volatile inj_null;

const char *ipc_inject_kind_name(uint32_t kind)
{
    static const char *const names[IPC_INJ_NKINDS] = {
        [IPC_INJ_NONE] = "none",
        [IPC_INJ_CRASH] = "crash",
        [IPC_INJ_BAD_HANDLE] = "corrupt-ring",
        [IPC_INJ_BAD_META] = "corrupt-meta",
        [IPC_INJ_DOUBLE_FREE] = "double-free",
        [IPC_INJ_CHAIN_LOOP] = "chain-loop",
        [IPC_INJ_LEAK] = "leak",
        [IPC_INJ_SLOW] = "slow",
    };
    return kind < IPC_INJ_NKINDS ? names[kind] : "?";
}

/* Publish one handle on output ring @r and wake its consumer if it sleeps:
 * the loop's own wake-ups are already flushed when ipc_svc_beat runs. */
static int publish(struct ipc_svc *svc, uint32_t r, ipc_buf b)
{
    struct ipc_ring_prod *p = &svc->out[r];
    if (ipc_ring_enq_burst(p, &b, 1) != 1)
        return -ENOBUFS;
    ipc_wake_one(p);
    return 0;
}

/* A ring index from the supervisor: shared memory, so bounded here. */
static bool ring_ok(const struct ipc_svc *svc, uint64_t r)
{
    return r < svc->n_out;
}

static int inj_bad_handle(struct ipc_svc *svc, struct ipc_inject *in, uint64_t r, uint64_t seq)
{
    if (!ring_ok(svc, r))
        return -EINVAL;
    /* Past the pool, and varied so that two in a row are not the same word. */
    ipc_buf h = svc->pool.nbufs + (uint32_t)(seq & 0xffff);
    ipc_st_rlx(&in->ring, (uint32_t)r);
    ipc_st_rlx(&in->handle, h);
    return publish(svc, (uint32_t)r, h);
}

static int inj_bad_meta(struct ipc_svc *svc, struct ipc_inject *in, uint64_t r, uint64_t seq)
{
    struct ipc_pool *pool = &svc->pool;
    bool out = ring_ok(svc, r);
    if (!out && r != IPC_INJ_RING_NONE)
        return -EINVAL;
    ipc_buf b;
    if (ipc_pool_alloc(pool, &b, 1) != 1)
        return -ENOBUFS;
    struct ipc_meta *m = ipc_pool_meta(pool, b);
    /* Freed rather than published, the chain variant would have the pool
     * follow the bad link (it refuses it too, but counts a bad free). */
    uint32_t v = out ? (uint32_t)(seq & 1) : IPC_INJ_V_FRAME;
    if (v == IPC_INJ_V_FRAME) {
        m->off = (uint16_t)(pool->frame_size - 64);
        m->len = 1000; /* 936 bytes past the frame's end */
        m->pkt_len = m->len;
    } else {
        m->len = 60;
        m->next = pool->nbufs + 5; /* a second frame outside the pool */
        m->pkt_len = 1500;
    }
    m->in_port = IPC_PORT_NONE;
    ipc_st_rlx(&in->variant, v);
    ipc_st_rlx(&in->handle, b);
    if (!out) {
        ipc_st_rlx(&in->ring, IPC_INJ_RING_NONE);
        ipc_pool_free(pool, &b, 1);
        return 0;
    }
    ipc_st_rlx(&in->ring, (uint32_t)r);
    int ret = publish(svc, (uint32_t)r, b);
    if (ret < 0) {
        m->next = IPC_BUF_NONE;
        ipc_pool_free(pool, &b, 1);
    }
    return ret;
}

static int inj_chain_loop(struct ipc_svc *svc, struct ipc_inject *in, uint64_t r)
{
    struct ipc_pool *pool = &svc->pool;
    if (!ring_ok(svc, r))
        return -EINVAL;
    ipc_buf b;
    if (ipc_pool_alloc(pool, &b, 1) != 1)
        return -ENOBUFS;
    struct ipc_meta *m = ipc_pool_meta(pool, b);
    m->len = 100;
    m->pkt_len = 200;
    m->next = b; /* the chain comes back to its first frame, for ever */
    m->in_port = IPC_PORT_NONE;
    ipc_st_rlx(&in->ring, (uint32_t)r);
    ipc_st_rlx(&in->handle, b);
    int ret = publish(svc, (uint32_t)r, b);
    if (ret < 0) {
        m->next = IPC_BUF_NONE;
        ipc_pool_free(pool, &b, 1);
    }
    return ret;
}

static int inj_double_free(struct ipc_svc *svc, struct ipc_inject *in)
{
    struct ipc_pool *pool = &svc->pool;
    ipc_buf b;
    if (ipc_pool_alloc(pool, &b, 1) != 1)
        return -ENOBUFS;
    ipc_pool_free(pool, &b, 1);
    /* b is on our own free magazine now, owner FREE: the pool must refuse
     * this one (free_bad) without touching anything. */
    uint32_t again = ipc_pool_free(pool, &b, 1);
    ipc_st_rlx(&in->handle, b);
    ipc_st_rlx(&in->count, again);
    return 0;
}

static int inj_leak(struct ipc_svc *svc, struct ipc_inject *in, uint64_t n)
{
    if (n == 0 || n > IPC_INJ_LEAK_MAX)
        return -EINVAL;
    uint32_t got = 0;
    ipc_buf bufs[64];
    while (got < n) {
        uint32_t want = n - got < 64 ? (uint32_t)(n - got) : 64;
        uint32_t k = ipc_pool_alloc(&svc->pool, bufs, want);
        for (uint32_t i = 0; i < k && got + i < IPC_INJ_SHOW; i++)
            ipc_st_rlx(&in->bufs[got + i], bufs[i]);
        got += k;
        if (k < want)
            break;
    }
    /* Never freed, never remembered: held by our owner id until this
     * process ends. */
    ipc_st_rlx(&in->count, got);
    return got ? 0 : -ENOBUFS;
}

static int inj_slow(struct ipc_svc *svc, uint64_t us, uint64_t ms)
{
    if (us > IPC_INJ_SLOW_US_MAX || ms > IPC_INJ_SLOW_MS_MAX)
        return -EINVAL;
    svc->inj.slow_ns = us * 1000u;
    svc->inj.slow_until = ipc_svc_now_ns() + ms * 1000000u;
    svc->inj.busy = us && ms;
    return 0;
}

/* The per-loop part of `slow`: spin, without a system call, then carry on.
 * The heartbeat was bumped before: a delay past hang_ms is a hang. */
static void slow_step(struct ipc_svc *svc)
{
    uint64_t t0 = ipc_svc_now_ns();
    if (t0 >= svc->inj.slow_until) {
        svc->inj.busy = false;
        return;
    }
    while (ipc_svc_now_ns() - t0 < svc->inj.slow_ns)
        inj_cpu_relax();
}

/* Carry out command @seq; returns 0 or -errno, to be answered by the caller.
 * A crash answers itself and does not return. */
static int command(struct ipc_svc *svc, struct ipc_inject *in, uint64_t seq)
{
    uint32_t kind = ipc_ld_rlx(&in->kind);
    uint64_t a0 = ipc_ld_rlx(&in->arg[0]), a1 = ipc_ld_rlx(&in->arg[1]);
    ipc_st_rlx(&in->loop, ipc_ld_rlx(&svc->stats->loops));
    ipc_st_rlx(&in->ring, IPC_INJ_RING_NONE);
    ipc_st_rlx(&in->handle, IPC_BUF_NONE);
    ipc_st_rlx(&in->count, 0);
    ipc_st_rlx(&in->variant, 0);
    int ret;
    switch (kind) {
    case IPC_INJ_CRASH:
        /* Answer first: the supervisor learns where, then sees the death. */
        ipc_st_rlx(&in->result, 0);
        ipc_st_rel(&in->ack, seq); /* (C) */
        *inj_null = 0x6661756c;    /* SIGSEGV, here, in the loop */
        __builtin_trap();          /* not reached; if it were, still a crash */
    case IPC_INJ_BAD_HANDLE:
        ret = inj_bad_handle(svc, in, a0, seq);
        break;
    case IPC_INJ_BAD_META:
        ret = inj_bad_meta(svc, in, a0, seq);
        break;
    case IPC_INJ_DOUBLE_FREE:
        ret = inj_double_free(svc, in);
        break;
    case IPC_INJ_CHAIN_LOOP:
        ret = inj_chain_loop(svc, in, a0);
        break;
    case IPC_INJ_LEAK:
        ret = inj_leak(svc, in, a0);
        break;
    case IPC_INJ_SLOW:
        ret = inj_slow(svc, a0, a1);
        break;
    default:
        ret = -EINVAL;
        break;
    }
    return ret;
}

void ipc_inject_run(struct ipc_svc *svc)
{
    struct ipc_inject *in = &svc->stats->inject;
    uint64_t seq = ipc_ld_acq(&in->seq); /* (B) pairs with (A) */
    if (seq != svc->inj.seen) {
        int ret = command(svc, in, seq);
        if (ret == -ENOBUFS) {
            /* The pool had nothing for us this loop (a burst holds it, or an
             * exhaust): try again each loop for a while before saying so. */
            uint64_t now = ipc_svc_now_ns();
            if (svc->inj.retry_seq != seq) {
                svc->inj.retry_seq = seq;
                svc->inj.retry_until = now + IPC_INJ_RETRY_NS;
            }
            if (now < svc->inj.retry_until)
                goto in_progress;
        }
        svc->inj.seen = seq;
        ipc_st_rlx(&in->result, (uint32_t)-ret);
        ipc_st_rel(&in->ack, seq); /* (C) pairs with the supervisor's (D) */
    }
in_progress:
    if (svc->inj.busy)
        slow_step(svc);
}
