/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_exchange.c: 50 million pool buffers through a pair of rings
 * between two processes, over the real data path: ipc_pool_alloc, ring A
 * (producer -> consumer) with ipc_ring_enq_burst / ipc_ring_recv, which validates
 * and re-owns every buffer, and ring B carrying each buffer back. Both ends
 * sleep on their eventfd whenever they have nothing to do, through the wake
 * protocol of ipc/wake.h, so a lost wake-up shows up as a stall with both
 * ends asleep; each wait is bounded and fails with the state of both rings.
 *
 * Each buffer carries a sequence number (meta.user[0] and the first 8 bytes
 * of its frame) written by the producer; the consumer checks it against the
 * next expected one and stamps an acknowledgement (meta.user[1]) that the
 * producer checks when the buffer comes back, so a handle lost, duplicated or
 * reordered in either direction fails at once. At the end both sides agree on
 * the count, the rings' counters agree with both sides, and the pool census
 * finds every buffer free.
 *
 * Built with -DEXCHANGE_THREADS (the TSan variant) the same two ends run as
 * two threads of one process, so that ThreadSanitizer sees the protocol.
 *
 * Most of the time the whole pool (4096 buffers) is in flight, so ring A
 * fills up; at the start of every 2^21 handles, 2^14 go with only 1..8 in
 * flight, so that both ends run dry and sleep on nearly every handle. Each
 * end also dawdles at random before arming, widening the window the
 * protocol's re-check exists for. Dropping that re-check from ipc/wake.h
 * makes this test fail with a lost wake-up in every run we tried; dropping
 * the fences, in some runs only (x86 lets a store pass a later load rarely).
 *
 * Environment: EXCHANGE_HANDLES (default 50,000,000; 2,000,000 with threads),
 * EXCHANGE_INFLIGHT (a fixed in-flight cap instead of the schedule),
 * EXCHANGE_STALL_MS (5000), EXCHANGE_DEADLINE_S (270).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef EXCHANGE_THREADS
#include <pthread.h>
#endif

#include "ipc/pool.h"
#include "ipc/ring.h"
#include "ipc/wake.h"

#ifdef EXCHANGE_THREADS
/* TSan: stop at the first report and fail the run with a distinct status. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "halt_on_error=1:exitcode=66";
}
#define T_DEFAULT_HANDLES 2000000ull
#else
#define T_DEFAULT_HANDLES 50000000ull
#endif

#define T_NBUFS 4096u    /* buffers in circulation: the whole pool */
#define T_RING_A 1024u   /* handles, producer -> consumer: fills up now and then */
#define T_RING_B T_NBUFS /* returns: holds every buffer, so a return never fails */
#define T_BATCH_MAX 64u  /* producer batches are 1..64, pseudo-random */
#define T_RECV_MAX 256u
#define T_SLICE_MS 100 /* a wait re-checks the peer's health this often */
/* Of every T_PHASE handles, the first T_SMALL go with only a few in flight. */
#define T_PHASE (1ull << 21)
#define T_SMALL (1ull << 14)
#define T_OWNER_PROD 2
#define T_OWNER_CONS 3
#define T_ACK 0xac4b0000acc0ffeeull /* consumer's stamp: user[1] = seq ^ T_ACK */
/* Both rings start just below the wrap, so the run crosses 2^32. */
#define T_START_A (UINT32_MAX - 1000u)
#define T_START_B (UINT32_MAX - 100u)

struct t_stats {
    uint64_t handles;   /* produced and seen back / consumed */
    uint64_t sleeps;    /* arms that led to a block */
    uint64_t wakeups;   /* blocks ended by an eventfd write */
    uint64_t spurious;  /* wake-ups that found nothing to do */
    uint64_t refused;   /* arms refused: work arrived between drain and arm */
    uint64_t wakes_out; /* eventfd writes this side made */
};

/* State both ends see: MAP_SHARED across fork, plain memory with threads. */
struct t_ctl {
    _Alignas(IPC_CACHELINE) _Atomic int prod_failed;
    _Atomic int prod_sleeping;
    _Alignas(IPC_CACHELINE) _Atomic int cons_failed;
    _Atomic int cons_sleeping;
    struct t_stats cons_stats; /* written by the consumer when it is done */
    char prod_msg[768];
    char cons_msg[768];
};

/* One end of the exchange, private to its process or thread. */
struct t_end {
    const char *who;
    struct ipc_pool *pool;
    struct ipc_ring_prod out;
    struct ipc_ring_cons in;
    int efd; /* ours; the peer's is out.wake_fd */
    uint64_t n;
    uint64_t cap; /* EXCHANGE_INFLIGHT: a fixed in-flight cap, or 0 for t_cap()'s schedule */
    uint32_t rnd;
    int stall_ms;
    struct timespec deadline;
    _Atomic int *failed, *peer_failed, *sleeping, *peer_sleeping;
    char *msg;
    size_t msg_size;
    pid_t peer_pid; /* the child, when the peer is a process we can reap */
    int peer_status;
    bool peer_reaped;
    struct t_stats st;
    struct t_stats *st_out; /* where the consumer leaves its numbers for the test */
};

static uint64_t t_env_u64(const char *name, uint64_t dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v == 0)
        fail_msg("%s=%s is not a positive number", name, s);
    return v;
}

static double t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool t_past(const struct timespec *deadline)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec > deadline->tv_sec || (ts.tv_sec == deadline->tv_sec && ts.tv_nsec >= deadline->tv_nsec);
}

static uint32_t t_rand(struct t_end *e)
{
    uint32_t x = e->rnd;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return e->rnd = x;
}

/*
 * How many handles may be in flight when sending handle @sent: the whole
 * pool most of the time, for throughput and full rings; a few only at the
 * start of every phase, so that both ends run dry and sleep on almost every
 * handle and the wake-up protocol runs hot.
 */
static uint64_t t_cap(const struct t_end *e, uint64_t sent)
{
    static const uint32_t few[] = {2, 3, 1, 4, 8, 2, 6, 3};
    if (e->cap)
        return e->cap;
    if (sent % T_PHASE >= T_SMALL)
        return T_NBUFS;
    return few[(sent / T_PHASE) % (sizeof(few) / sizeof(few[0]))];
}

/*
 * Now and then, dawdle between finding the ring empty and arming: the peer
 * publishing in that window is the case the re-check after the fence (R)
 * exists for, and it is otherwise a few nanoseconds wide.
 */
static void t_jitter(struct t_end *e)
{
    uint32_t r = t_rand(e);
    if (r & 3)
        return;
    for (uint32_t i = (r >> 8) & 2047; i > 0; i--)
        __asm__ volatile("" ::: "memory");
}

/* Record why this end failed, tell the peer, wake it so it notices. */
__attribute__((format(printf, 2, 3))) static int t_fail(struct t_end *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = snprintf(e->msg, e->msg_size, "%s: ", e->who);
    vsnprintf(e->msg + len, e->msg_size - (size_t)len, fmt, ap);
    va_end(ap);
    ipc_st_rel(e->failed, 1);
    uint64_t one = 1;
    ssize_t r = write(e->out.wake_fd, &one, sizeof(one));
    (void)r;
    return -1;
}

/* Both rings as one line for failure messages. */
static void t_ring_state(const struct t_end *e, char *buf, size_t size)
{
    const struct ipc_ring_shared *i = e->in.sh, *o = e->out.sh;
    snprintf(buf, size,
             "in ring: need_wake=%u prod=%u cons=%u (%u waiting, enq %" PRIu64 ", sleeps %" PRIu64
             ", wake_sent %" PRIu64 "); out ring: need_wake=%u prod=%u cons=%u (%u waiting, enq %" PRIu64
             "); peer sleeping=%d",
             ipc_ld_rlx(&i->need_wake), ipc_ld_rlx(&i->prod), ipc_ld_rlx(&i->cons), ipc_ring_count(i),
             ipc_ld_rlx(&i->enq_handles), ipc_ld_rlx(&i->sleeps), ipc_ld_rlx(&i->wake_sent), ipc_ld_rlx(&o->need_wake),
             ipc_ld_rlx(&o->prod), ipc_ld_rlx(&o->cons), ipc_ring_count(o), ipc_ld_rlx(&o->enq_handles),
             ipc_ld_rlx(e->peer_sleeping));
}

/* Has the peer failed, died, or run out the clock? Returns -1 with the message set. */
static int t_check_peer(struct t_end *e)
{
    if (ipc_ld_acq(e->peer_failed))
        return t_fail(e, "stopping: the peer failed");
    if (e->peer_pid > 0 && !e->peer_reaped) {
        int status;
        if (waitpid(e->peer_pid, &status, WNOHANG) == e->peer_pid) {
            e->peer_reaped = true;
            e->peer_status = status;
            if (!ipc_ld_acq(e->peer_failed))
                return t_fail(e, "the consumer process exited early (%s %d) without reporting a failure",
                              WIFEXITED(status) ? "status" : "signal",
                              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            return t_fail(e, "stopping: the peer failed");
        }
    }
    if (t_past(&e->deadline))
        return t_fail(e, "deadline passed with %" PRIu64 " of %" PRIu64 " handles done", e->st.handles, e->n);
    return 0;
}

/*
 * Nothing to do: sleep until the peer publishes on our input ring, through
 * the protocol (arm, fence, re-check, block). The block is cut in slices to
 * watch the peer; after stall_ms without a wake-up this end fails: either
 * handles are waiting and the wake-up was lost, or the ring stayed empty
 * with this end asleep, and the peer's own report says why it stopped.
 * Returns 0 to go on draining, -1 on failure.
 */
static int t_wait(struct t_end *e)
{
    struct ipc_ring_cons *cs[1] = {&e->in};
    t_jitter(e);
    if (!ipc_wake_arm(cs, 1)) {
        e->st.refused++;
        return 0;
    }
    e->st.sleeps++;
    ipc_st_rlx(e->sleeping, 1);
    double t0 = t_now();
    for (;;) {
        int r = ipc_wake_block(e->efd, T_SLICE_MS);
        if (r == 1) {
            e->st.wakeups++;
            break;
        }
        if (r < 0 && r != -EINTR)
            return t_fail(e, "ipc_wake_block: %s", strerror(-r));
        if (t_check_peer(e) < 0)
            return -1;
        double waited = (t_now() - t0) * 1000;
        if (waited >= e->stall_ms) {
            char state[512];
            t_ring_state(e, state, sizeof(state));
            uint32_t waiting = ipc_ring_count(e->in.sh);
            if (waiting > 0)
                return t_fail(e,
                              "lost wake-up: %u handles waited %.0f ms with no eventfd write, at seq %" PRIu64 "; %s",
                              waiting, waited, e->st.handles, state);
            uint32_t theirs = ipc_ring_count(e->out.sh);
            if (theirs > 0 && ipc_ld_rlx(e->peer_sleeping))
                return t_fail(e,
                              "stalled: ring empty for %.0f ms at seq %" PRIu64 ", and the peer sleeps with %u handles "
                              "waiting for it: its wake-up was lost; %s",
                              waited, e->st.handles, theirs, state);
            return t_fail(e, "stalled: ring empty for %.0f ms at seq %" PRIu64 "; %s", waited, e->st.handles, state);
        }
    }
    ipc_st_rlx(e->sleeping, 0);
    /* An eventfd write left over from an arm we refused wakes us with the
     * word still armed: disarm, or the peer keeps writing while we run. */
    ipc_wake_disarm(cs, 1);
    if (ipc_ring_avail(&e->in, 1) == 0)
        e->st.spurious++;
    if (ipc_ld_acq(e->peer_failed))
        return t_fail(e, "stopping: the peer failed");
    return 0;
}

static uint64_t t_drops(const struct ipc_ring_shared *sh)
{
    return ipc_ld_rlx(&sh->drop_bad_handle) + ipc_ld_rlx(&sh->drop_bad_owner) + ipc_ld_rlx(&sh->drop_bad_frame) +
           ipc_ld_rlx(&sh->drop_bad_chain);
}

static int t_drop_fail(struct t_end *e)
{
    const struct ipc_ring_shared *sh = e->in.sh;
    return t_fail(e,
                  "ipc_ring_recv dropped handles at seq %" PRIu64 ": bad handle %" PRIu64 ", bad owner %" PRIu64
                  ", bad frame %" PRIu64 ", bad chain %" PRIu64,
                  e->st.handles, ipc_ld_rlx(&sh->drop_bad_handle), ipc_ld_rlx(&sh->drop_bad_owner),
                  ipc_ld_rlx(&sh->drop_bad_frame), ipc_ld_rlx(&sh->drop_bad_chain));
}

/*
 * Producer: allocate the whole pool, then loop: take back what ring B
 * returned (checking the consumer's stamp, in order), send a batch of 1..64
 * fresh sequence numbers on ring A, flush the wake set once; sleep on ring B
 * when neither moved. Done when every buffer has come back.
 */
static int t_producer(struct t_end *e)
{
    struct ipc_pool *pool = e->pool;
    ipc_buf *stack = malloc(T_NBUFS * sizeof(*stack));
    if (!stack)
        return t_fail(e, "out of memory");
    uint32_t nfree = ipc_pool_alloc(pool, stack, T_NBUFS);
    if (nfree != T_NBUFS) {
        free(stack);
        return t_fail(e, "ipc_pool_alloc gave %u of %u buffers", nfree, T_NBUFS);
    }
    uint64_t sent = 0, back = 0;
    struct ipc_wake_set ws;
    ipc_wake_set_init(&ws);
    ipc_buf rx[T_RECV_MAX], tx[T_BATCH_MAX];
    int ret = 0;

    for (uint64_t loop = 0; back < e->n; loop++) {
        bool progress = false;

        /* 1. Returns: the consumer's stamp, in the order they were sent. */
        uint32_t got = ipc_ring_recv(&e->in, pool, rx, T_RECV_MAX);
        for (uint32_t i = 0; i < got; i++) {
            const struct ipc_meta *m = ipc_pool_meta(pool, rx[i]);
            if (m->user[0] != back || m->user[1] != (back ^ T_ACK)) {
                ret = t_fail(e, "buffer %u came back with seq %" PRIu64 " ack %#" PRIx64 ", expected seq %" PRIu64,
                             rx[i], m->user[0], m->user[1], back);
                goto out;
            }
            back++;
            stack[nfree++] = rx[i];
        }
        if (got) {
            progress = true;
            e->st.handles = back;
        } else if (t_drops(e->in.sh)) {
            ret = t_drop_fail(e);
            goto out;
        }

        /* 2. A batch of the next sequence numbers, as much of it as fits. */
        uint64_t cap = t_cap(e, sent);
        if (sent < e->n && nfree > 0 && sent - back < cap) {
            uint32_t want = 1 + t_rand(e) % T_BATCH_MAX;
            if (want > nfree)
                want = nfree;
            if (want > cap - (sent - back))
                want = (uint32_t)(cap - (sent - back));
            if (want > e->n - sent)
                want = (uint32_t)(e->n - sent);
            uint32_t room = ipc_ring_free_count(&e->out, want);
            if (want > room)
                want = room;
            for (uint32_t i = 0; i < want; i++) {
                ipc_buf b = stack[--nfree];
                struct ipc_meta *m = ipc_pool_meta(pool, b);
                uint64_t seq = sent + i;
                memcpy(ipc_pool_data(pool, b), &seq, sizeof(seq));
                m->len = sizeof(seq);
                m->pkt_len = sizeof(seq);
                m->user[0] = seq;
                m->user[1] = 0;
                tx[i] = b;
            }
            if (want) {
                uint32_t n = ipc_ring_enq_burst(&e->out, tx, want);
                if (n != want) {
                    ret = t_fail(e, "ipc_ring_enq_burst took %u of %u after free_count said they fit", n, want);
                    goto out;
                }
                sent += want;
                ipc_wake_mark(&ws, &e->out);
                progress = true;
            }
        }

        /* 3. One fence and at most one eventfd write for the loop. */
        e->st.wakes_out += ipc_wake_flush(&ws);

        if (!progress && t_wait(e) < 0) {
            ret = -1;
            goto out;
        }
        if ((loop & 1023) == 0 && t_check_peer(e) < 0) {
            ret = -1;
            goto out;
        }
    }
    if (sent != e->n || nfree != T_NBUFS) {
        ret = t_fail(e, "sent %" PRIu64 " of %" PRIu64 ", holding %u of %u buffers at the end", sent, e->n, nfree,
                     T_NBUFS);
        goto out;
    }
    uint32_t freed = ipc_pool_free(pool, stack, nfree);
    if (freed != T_NBUFS)
        ret = t_fail(e, "ipc_pool_free freed %u of %u", freed, T_NBUFS);
out:
    free(stack);
    return ret;
}

/*
 * Consumer: receive (validate and re-own), check each sequence number and
 * its frame, stamp it, send it back on ring B and wake the producer; sleep on
 * ring A whenever it is empty.
 */
static int t_consumer(struct t_end *e)
{
    struct ipc_pool *pool = e->pool;
    ipc_buf rx[T_RECV_MAX];
    uint64_t seq = 0;

    while (seq < e->n) {
        uint32_t got = ipc_ring_recv(&e->in, pool, rx, T_RECV_MAX);
        if (got == 0) {
            if (t_drops(e->in.sh))
                return t_drop_fail(e);
            if (t_wait(e) < 0)
                return -1;
            continue;
        }
        for (uint32_t i = 0; i < got; i++) {
            ipc_buf b = rx[i];
            struct ipc_meta *m = ipc_pool_meta(pool, b);
            uint64_t data;
            memcpy(&data, ipc_pool_data(pool, b), sizeof(data));
            if (m->user[0] != seq || data != seq || m->len != sizeof(seq)) {
                char state[512];
                t_ring_state(e, state, sizeof(state));
                return t_fail(e,
                              "handle %u carries seq %" PRIu64 " (frame says %" PRIu64 ", len %u), expected %" PRIu64
                              " (%u dropped); %s",
                              b, m->user[0], data, m->len, seq, (unsigned)t_drops(e->in.sh), state);
            }
            if (ipc_pool_owner(pool, b) != pool->self)
                return t_fail(e, "handle %u (seq %" PRIu64 ") is owned by %u after ipc_ring_recv, not by us (%u)", b,
                              seq, ipc_pool_owner(pool, b), pool->self);
            m->user[1] = seq ^ T_ACK;
            seq++;
        }
        e->st.handles = seq;
        uint32_t n = ipc_ring_enq_burst(&e->out, rx, got);
        if (n != got)
            return t_fail(e, "return ring took %u of %u handles (it holds the whole pool)", n, got);
        e->st.wakes_out += ipc_wake_one(&e->out);
    }
    if (t_drops(e->in.sh))
        return t_drop_fail(e);
    return 0;
}

/* What the test sets up, as a supervisor would: the pool, the rings, the eventfds. */
struct t_setup {
    int pool_fd, fd_a, fd_b;
    struct ipc_ring_shared *a, *b;
    int efd_prod, efd_cons;
    struct t_ctl *ctl;
    uint64_t n, cap;
    int stall_ms;
    struct timespec deadline;
    pid_t child;
};

static struct t_setup *t_cur; /* for the teardown: a child still running is killed */

static void t_setup_init(struct t_setup *s)
{
    struct ipc_err err = {{0}};
    memset(s, 0, sizeof(*s));
    s->child = -1;
    s->n = t_env_u64("EXCHANGE_HANDLES", T_DEFAULT_HANDLES);
    s->cap = t_env_u64("EXCHANGE_INFLIGHT", 0);
    s->stall_ms = (int)t_env_u64("EXCHANGE_STALL_MS", 5000);
    uint64_t deadline_s = t_env_u64("EXCHANGE_DEADLINE_S", 270);
    clock_gettime(CLOCK_MONOTONIC, &s->deadline);
    s->deadline.tv_sec += (time_t)deadline_s;

    if (ipc_pool_create("t_exchange_pool", T_NBUFS, IPC_FRAME_DEFAULT, &s->pool_fd, &err) != 0)
        fail_msg("ipc_pool_create: %s", err.msg);
    if (ipc_ring_create("t_exchange_a", T_RING_A, 1, T_OWNER_PROD, T_OWNER_CONS, T_START_A, &s->fd_a, &s->a, &err))
        fail_msg("ipc_ring_create(a): %s", err.msg);
    if (ipc_ring_create("t_exchange_b", T_RING_B, 2, T_OWNER_CONS, T_OWNER_PROD, T_START_B, &s->fd_b, &s->b, &err))
        fail_msg("ipc_ring_create(b): %s", err.msg);
    s->efd_prod = ipc_wake_eventfd();
    s->efd_cons = ipc_wake_eventfd();
    assert_true(s->efd_prod >= 0 && s->efd_cons >= 0);
    void *m = mmap(NULL, sizeof(struct t_ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    s->ctl = m;
    t_cur = s;
}

static void t_setup_fini(struct t_setup *s)
{
    ipc_ring_detach(s->a);
    ipc_ring_detach(s->b);
    munmap(s->ctl, sizeof(struct t_ctl));
    close(s->fd_a);
    close(s->fd_b);
    close(s->pool_fd);
    close(s->efd_prod);
    close(s->efd_cons);
    t_cur = NULL;
}

static void t_end_init(struct t_end *e, const struct t_setup *s, bool producer, struct ipc_pool *pool,
                       struct ipc_ring_shared *a, struct ipc_ring_shared *b)
{
    memset(e, 0, sizeof(*e));
    struct t_ctl *ctl = s->ctl;
    e->pool = pool;
    e->n = s->n;
    e->cap = s->cap;
    e->stall_ms = s->stall_ms;
    e->deadline = s->deadline;
    e->peer_pid = -1;
    if (producer) {
        e->who = "producer";
        e->rnd = 0x2545f491u;
        ipc_ring_prod_init(&e->out, a, s->efd_cons);
        ipc_ring_cons_init(&e->in, b);
        e->efd = s->efd_prod;
        e->failed = &ctl->prod_failed;
        e->peer_failed = &ctl->cons_failed;
        e->sleeping = &ctl->prod_sleeping;
        e->peer_sleeping = &ctl->cons_sleeping;
        e->msg = ctl->prod_msg;
        e->msg_size = sizeof(ctl->prod_msg);
    } else {
        e->who = "consumer";
        e->rnd = 0x9e3779b9u;
        ipc_ring_prod_init(&e->out, b, s->efd_prod);
        ipc_ring_cons_init(&e->in, a);
        e->efd = s->efd_cons;
        e->failed = &ctl->cons_failed;
        e->peer_failed = &ctl->prod_failed;
        e->sleeping = &ctl->cons_sleeping;
        e->peer_sleeping = &ctl->prod_sleeping;
        e->msg = ctl->cons_msg;
        e->msg_size = sizeof(ctl->cons_msg);
        e->st_out = &ctl->cons_stats;
    }
}

/* The consumer end, start to finish, on its own pool view; result in ctl. */
static int t_consumer_run(struct t_end *e)
{
    int ret = t_consumer(e);
    *e->st_out = e->st;
    /* Nothing held: the flush only hands back the (empty) magazines. */
    ipc_pool_flush(e->pool);
    return ret;
}

/*
 * After both ends are done and gone: the counts both sides and the rings
 * report agree, and the census finds every buffer free.
 */
static void t_check_end(struct t_setup *s, struct t_end *prod, struct ipc_pool *pool, double secs)
{
    const struct t_stats *cs = &s->ctl->cons_stats;
    assert_int_equal(prod->st.handles, s->n);
    assert_int_equal(cs->handles, s->n);
    assert_int_equal(ipc_ld_rlx(&s->a->enq_handles), s->n);
    assert_int_equal(ipc_ld_rlx(&s->b->enq_handles), s->n);
    assert_int_equal(ipc_ring_count(s->a), 0);
    assert_int_equal(ipc_ring_count(s->b), 0);
    assert_int_equal((uint32_t)(ipc_ld_rlx(&s->a->prod) - T_START_A), (uint32_t)s->n);
    assert_int_equal((uint32_t)(ipc_ld_rlx(&s->b->cons) - T_START_B), (uint32_t)s->n);
    assert_int_equal(t_drops(s->a), 0);
    assert_int_equal(t_drops(s->b), 0);
    assert_int_equal(ipc_ld_rlx(&pool->hdr->free_bad), 0);
    assert_int_equal(ipc_ld_rlx(&pool->hdr->alloc_fail), 0);
    /* The rings' own counters agree with each side's. */
    assert_int_equal(ipc_ld_rlx(&s->a->sleeps), cs->sleeps);
    assert_int_equal(ipc_ld_rlx(&s->b->sleeps), prod->st.sleeps);
    assert_int_equal(ipc_ld_rlx(&s->a->wake_sent), prod->st.wakes_out);
    assert_int_equal(ipc_ld_rlx(&s->b->wake_sent), cs->wakes_out);
    /* Eventfd writes may coalesce, never multiply. */
    assert_true(cs->wakeups <= prod->st.wakes_out);
    assert_true(prod->st.wakeups <= cs->wakes_out);

    struct ipc_ring_ref rings[2] = {ipc_ring_ref_take(s->a), ipc_ring_ref_take(s->b)};
    struct ipc_census c;
    int ret = ipc_pool_census(pool, rings, 2, &c);
    if (ret != 0 || c.free != T_NBUFS || c.in_rings != 0 || c.held != 0)
        fail_msg("census %d: total %u free %u in_rings %u held %u (prod %u, cons %u) kernel %u lost %u dup %u "
                 "bad_owner %u",
                 ret, c.total, c.free, c.in_rings, c.held, c.held_by[T_OWNER_PROD], c.held_by[T_OWNER_CONS], c.kernel,
                 c.lost, c.dup, c.bad_owner);

    printf("exchange: %" PRIu64 " handles in %.2f s, %.2f M handles/s\n", s->n, secs, (double)s->n / secs / 1e6);
    printf("  producer: slept %" PRIu64 " (woken %" PRIu64 ", %" PRIu64 " spurious, %" PRIu64 " arms refused), "
           "%" PRIu64 " eventfd writes\n",
           prod->st.sleeps, prod->st.wakeups, prod->st.spurious, prod->st.refused, prod->st.wakes_out);
    printf("  consumer: slept %" PRIu64 " (woken %" PRIu64 ", %" PRIu64 " spurious, %" PRIu64 " arms refused), "
           "%" PRIu64 " eventfd writes\n",
           cs->sleeps, cs->wakeups, cs->spurious, cs->refused, cs->wakes_out);
    fflush(stdout);
}

static int t_teardown(void **state)
{
    (void)state;
    if (t_cur && t_cur->child > 0) {
        kill(t_cur->child, SIGKILL);
        waitpid(t_cur->child, NULL, 0);
        t_cur->child = -1;
    }
    return 0;
}

#ifndef EXCHANGE_THREADS

/* Reap @pid within @ms; false if it is still running. */
static bool t_reap(pid_t pid, int ms, int *status)
{
    for (int i = 0; i <= ms; i++) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return true;
        if (r < 0)
            fail_msg("waitpid(%d): %s", (int)pid, strerror(errno));
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void t_kill_child(struct t_setup *s)
{
    if (s->child > 0) {
        kill(s->child, SIGKILL);
        waitpid(s->child, NULL, 0);
        s->child = -1;
    }
}

static void test_exchange_processes(void **state)
{
    (void)state;
    struct t_setup s;
    t_setup_init(&s);
    pid_t parent = getpid();
    fflush(stdout);
    fflush(stderr);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Consumer: owner 3, its own mappings of everything. No cmocka here. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(3);
        struct ipc_err err = {{0}};
        struct ipc_pool pool;
        struct ipc_ring_shared *a, *b;
        struct t_end e;
        if (ipc_pool_attach(&pool, s.pool_fd, T_OWNER_CONS, &err) || ipc_ring_attach(s.fd_a, &a, &err) ||
            ipc_ring_attach(s.fd_b, &b, &err)) {
            snprintf(s.ctl->cons_msg, sizeof(s.ctl->cons_msg), "consumer: attach: %s", err.msg);
            ipc_st_rel(&s.ctl->cons_failed, 1);
            _exit(1);
        }
        t_end_init(&e, &s, false, &pool, a, b);
        int ret = t_consumer_run(&e);
        ipc_pool_detach(&pool);
        _exit(ret == 0 ? 0 : 1);
    }
    s.child = pid;

    struct ipc_err err = {{0}};
    struct ipc_pool pool;
    if (ipc_pool_attach(&pool, s.pool_fd, T_OWNER_PROD, &err) != 0) {
        t_kill_child(&s);
        fail_msg("producer: ipc_pool_attach: %s", err.msg);
    }
    struct t_end e;
    t_end_init(&e, &s, true, &pool, s.a, s.b);
    e.peer_pid = pid;
    double t0 = t_now();
    int ret = t_producer(&e);
    double secs = t_now() - t0;

    int status = 0;
    if (ret != 0) {
        if (e.peer_reaped)
            s.child = -1;
        else
            t_kill_child(&s);
        fail_msg("%s\n  consumer said: %s", s.ctl->prod_msg, s.ctl->cons_msg[0] ? s.ctl->cons_msg : "(nothing)");
    }
    if (!t_reap(pid, 10000, &status)) {
        t_kill_child(&s);
        fail_msg("the consumer did not exit within 10 s of the producer finishing; it said: %s", s.ctl->cons_msg);
    }
    s.child = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("consumer %s %d: %s", WIFEXITED(status) ? "exited with status" : "killed by signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), s.ctl->cons_msg);

    ipc_pool_flush(&pool);
    t_check_end(&s, &e, &pool, secs);
    ipc_pool_detach(&pool);
    t_setup_fini(&s);
}

#else /* EXCHANGE_THREADS */

static void *t_consumer_thread(void *arg)
{
    struct t_end *e = arg;
    return (void *)(intptr_t)t_consumer_run(e);
}

static void test_exchange_threads(void **state)
{
    (void)state;
    struct t_setup s;
    t_setup_init(&s);
    struct ipc_err err = {{0}};
    struct ipc_pool pool_p, pool_c;
    if (ipc_pool_attach(&pool_p, s.pool_fd, T_OWNER_PROD, &err) != 0)
        fail_msg("producer: ipc_pool_attach: %s", err.msg);
    if (ipc_pool_attach(&pool_c, s.pool_fd, T_OWNER_CONS, &err) != 0)
        fail_msg("consumer: ipc_pool_attach: %s", err.msg);
    /*
     * Two attaches are two mappings of the same pages, and TSan keeps its
     * shadow per virtual address: it would not relate the producer's writes
     * to the metadata through one mapping with the consumer's reads through
     * the other, and could not see a race there. So the consumer's view keeps
     * its own owner id and magazines but uses the producer's mapping.
     */
    ipc_shm_unmap(pool_c.hdr, pool_c.map_size);
    pool_c.hdr = pool_p.hdr;
    pool_c.depot = pool_p.depot;
    pool_c.meta = pool_p.meta;
    pool_c.frames = pool_p.frames;

    struct t_end prod, cons;
    t_end_init(&prod, &s, true, &pool_p, s.a, s.b);
    t_end_init(&cons, &s, false, &pool_c, s.a, s.b);
    double t0 = t_now();
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, t_consumer_thread, &cons), 0);
    int ret = t_producer(&prod);
    double secs = t_now() - t0;
    /* A failing producer has told the consumer; it notices within a slice. */
    void *cret;
    assert_int_equal(pthread_join(th, &cret), 0);
    if (ret != 0 || cret != NULL)
        fail_msg("%s\n  %s", s.ctl->prod_msg[0] ? s.ctl->prod_msg : "producer: ok",
                 s.ctl->cons_msg[0] ? s.ctl->cons_msg : "consumer: ok");

    ipc_pool_flush(&pool_p);
    t_check_end(&s, &prod, &pool_p, secs);
    pool_c.hdr = NULL; /* the mapping is pool_p's: unmap it once */
    ipc_pool_detach(&pool_p);
    t_setup_fini(&s);
}

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
#ifndef EXCHANGE_THREADS
        cmocka_unit_test_teardown(test_exchange_processes, t_teardown),
#else
        cmocka_unit_test_teardown(test_exchange_threads, t_teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
