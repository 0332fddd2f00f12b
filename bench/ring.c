/* SPDX-License-Identifier: MIT */
/*
 * bench/ring.c: build/bin/bench_ring, run by bench/ring.
 *
 * 1. Throughput: cross-process SPSC hand-off of 32-bit handles, the parent
 *    producing on CPU 0 and a forked child consuming on CPU 1, both
 *    busy-polling, at batch sizes 1, 8, 32 and 256, for our ring (ipc/ring.h)
 *    and DPDK's rte_ring in SP/SC mode (bench/ring_rte.c) at the same ring
 *    size and batch and with the same handle count. Reported: consumer-side
 *    TSC cycles per handle, median and min-max of the runs, and our cycles
 *    over theirs per run. Each run interleaves the rings in short slices
 *    (ours, theirs, ours, theirs..., order rotating), so a ratio compares
 *    figures that shared the same noise.
 * 2. Wake-up latency: one handle ping-ponged over two of our rings with the
 *    other side asleep (ipc_wake_arm + ipc_wake_block on an eventfd; the
 *    initiator wakes with ipc_wake_one, the echoer with an ipc_wake_set and
 *    ipc_wake_flush), and the same with both sides busy-polling; round trip,
 *    median and p99 in microseconds. Then the sleeping exchange with both
 *    sides on one CPU, as a router's services share one: the echoer a
 *    process, then a thread of the initiator's (the baseline: the same
 *    wake-ups and switches without a change of address space), so their
 *    ratio is what a process boundary adds to each hop.
 *
 * All shared memory is made before fork: our rings with ipc_ring_create
 * (memfd; the child maps it again with ipc_ring_attach), rte_ring and the
 * control block in MAP_SHARED anonymous regions. Every handle is checked to
 * arrive in order, so a broken run fails instead of measuring nothing.
 *
 * Usage: bench_ring [-r RUNS] [-S SLICES_PER_RUN] [-t MS_PER_SLICE] [-s RING_SIZE]
 *                   [-w WAKE_ROUNDS] [-b BATCH] [-v]
 */
#include "ipc/ring.h"
#include "ipc/wake.h"
#include "ring_bench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The consumer's burst: peek, copy, release (ipc/ring.h's verbs; the
 * services' ipc_ring_recv adds the pool's checks, which this bench leaves out). */
static inline uint32_t bench_deq_burst(struct ipc_ring_cons *c, ipc_buf *bufs, uint32_t n)
{
    uint32_t idx;
    n = ipc_ring_peek(c, n, &idx);
    const uint32_t *slots = c->slots;
    uint32_t first = idx & c->mask;
    uint32_t run = n < c->size - first ? n : c->size - first;
    for (uint32_t i = 0; i < run; i++)
        bufs[i] = slots[first + i];
    for (uint32_t i = run; i < n; i++)
        bufs[i] = slots[i - run];
    if (n)
        ipc_ring_release(c, n);
    return n;
}

/* Our ring, driven by the same loops as rte_ring (bench/ring_loop.h). */
#define LOOP_NAME(x) ours_##x
#define LOOP_LINKAGE static
#define LOOP_ELEM ipc_buf
#define LOOP_TO(seq) (seq)
#define LOOP_FROM(e) (e)
#define LOOP_ENQ(r, b, n) ipc_ring_enq_burst((struct ipc_ring_prod *)(r), (b), (n))
#define LOOP_DEQ(r, b, n) bench_deq_burst((struct ipc_ring_cons *)(r), (b), (n))
#include "ring_loop.h"
#undef LOOP_NAME
#undef LOOP_LINKAGE
#undef LOOP_ELEM
#undef LOOP_TO
#undef LOOP_FROM
#undef LOOP_ENQ
#undef LOOP_DEQ

#define PROD_CPU 0
#define CONS_CPU 1
#define RUNS_MAX 15
#define RUN_TIMEOUT_S 60 /* watchdog for one run (fork to exit) */
#define SLICES_MAX 31
#define DISTURBED 0.01 /* a slice where a side waited for its CPU > 1 % of the time */
#define PILOT_HANDLES (1u << 20)
#define HANDLES_MIN (1ull << 18)
#define HANDLES_MAX (1ull << 31)
#define PP_WARMUP 200
#define PP_BUSY_ROUNDS 100000
#define PP_STOP 0xfffffffeu
#define PP_TIMEOUT_MS 1000 /* a lost wake-up shows as a >= 1 s round trip */
#define PP_TIMEOUTS_MAX 5

enum { IMPL_OURS, IMPL_RTE8, IMPL_RTE4, NIMPL };
static const char *const impl_name[NIMPL] = {"ring (ours)", "rte_ring void*", "rte_ring elem 4B"};
static const unsigned impl_esize[NIMPL] = {4, 8, 4};

static uint32_t batches[] = {1, 8, 32, 256};
static unsigned nbatch = sizeof(batches) / sizeof(batches[0]);
#define NBATCH (sizeof(batches) / sizeof(batches[0]))

static struct {
    unsigned runs;
    unsigned ms_per_slice;
    unsigned slices;
    uint32_t ring_size;
    unsigned wake_rounds;
    bool verbose;
} opt = {3, 40, 7, 1024, 3000, false};

static struct bench_ctl *ctl; /* MAP_SHARED, made before every fork */
static double tsc_hz;
static int nimpl = NIMPL; /* 1 when DPDK is not built in */

static int ours_fd = -1;
static struct ipc_ring_shared *ours_sh;
static void *rte_mem[NIMPL];
static size_t rte_len[NIMPL];

/* Ping-pong: ping carries A -> B, pong B -> A; each side has an eventfd. */
static int ping_fd = -1, pong_fd = -1;
static struct ipc_ring_shared *ping_sh, *pong_sh;
static int efd_a = -1, efd_b = -1;

static volatile pid_t child_pid;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bench_ring: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (child_pid > 0)
        kill(child_pid, SIGKILL);
    exit(1);
}

static void on_alarm(int sig)
{
    static const char msg[] = "bench_ring: a run did not finish in time; killing it\n";
    ssize_t r = write(2, msg, sizeof(msg) - 1);
    (void)r;
    if (child_pid > 0)
        kill(child_pid, SIGKILL); /* only the child we forked, by its pid */
    _exit(1);
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) < 0)
        die("cannot pin to CPU %d: %s (this benchmark needs CPUs %d and %d)", cpu, strerror(errno), PROD_CPU, CONS_CPU);
}

static void *map_shared(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        die("mmap %zu bytes: %s", len, strerror(errno));
    return p;
}

/* Read every page, so that the child's first touches are not page faults. */
static void prefault(const void *p, size_t len)
{
    const volatile unsigned char *c = p;
    for (size_t off = 0; off < len; off += 4096)
        (void)c[off];
}

/* Child start: die with the parent, pin, and leave a watchdog of its own. */
static void child_start(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGALRM, SIG_DFL);
    alarm(RUN_TIMEOUT_S + 5);
    pin(CONS_CPU);
}

static pid_t fork_child(void)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid > 0) {
        child_pid = pid;
        alarm(RUN_TIMEOUT_S);
    }
    return pid;
}

static void reap_child(pid_t pid, const char *what)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            die("waitpid: %s", strerror(errno));
    alarm(0);
    child_pid = 0;
    if (WIFSIGNALED(st))
        die("%s: the child died of signal %d", what, WTERMSIG(st));
    if (WEXITSTATUS(st) != 0)
        die("%s: the child failed (exit %d)", what, WEXITSTATUS(st));
}

static void ctl_reset(void)
{
    memset(ctl, 0, sizeof(*ctl));
}

/* ------------------------------------------------------------------------ */
/* Throughput */

/* Consumer in the child: map its end, signal ready, consume, exit. */
static void __attribute__((noreturn)) tput_child(int impl, uint32_t batch, uint64_t n)
{
    child_start();
    int rc;
    if (impl == IMPL_OURS) {
        struct ipc_err err;
        struct ipc_ring_shared *sh;
        if (ipc_ring_attach(ours_fd, &sh, &err) < 0) {
            fprintf(stderr, "bench_ring: child: %s\n", err.msg);
            _exit(2);
        }
        struct ipc_ring_cons cons;
        ipc_ring_cons_init(&cons, sh);
        prefault(sh, ipc_ring_region_size(sh->size));
        atomic_store_explicit(&ctl->ready, 1, memory_order_release);
        rc = ours_consume(&cons, batch, n, ctl);
    } else {
        prefault(rte_mem[impl], rte_len[impl]);
        atomic_store_explicit(&ctl->ready, 1, memory_order_release);
        rc = rte_bench_consume(rte_mem[impl], impl_esize[impl], batch, n, ctl);
    }
    _exit(rc == 0 ? 0 : 3);
}

struct tput {
    double cyc_per_handle;
    double mhps; /* million handles per second */
    double runq; /* the larger share of its time either side waited for a CPU */
};

static struct tput tput_once(int impl, uint32_t batch, uint64_t n)
{
    struct ipc_ring_prod prod;
    void *ring;

    ctl_reset();
    if (impl == IMPL_OURS) {
        /* A new producer end continues from the index the last run published. */
        ipc_ring_prod_init(&prod, ours_sh, -1);
        ring = &prod;
    } else {
        int r = rte_bench_init(rte_mem[impl], opt.ring_size);
        if (r < 0)
            die("rte_ring_init(%u): %s", opt.ring_size, strerror(-r));
        ring = rte_mem[impl];
    }

    pid_t pid = fork_child();
    if (pid == 0)
        tput_child(impl, batch, n);

    while (!atomic_load_explicit(&ctl->ready, memory_order_acquire))
        ;
    atomic_store_explicit(&ctl->go, 1, memory_order_release);
    int rc = impl == IMPL_OURS ? ours_produce(ring, batch, n, ctl)
                               : rte_bench_produce(ring, impl_esize[impl], batch, n, ctl);
    reap_child(pid, impl_name[impl]);

    if (ctl->cons.err == BENCH_ERR_SEQ)
        die("%s, batch %u: handle %llu arrived as %u, expected %u", impl_name[impl], batch,
            (unsigned long long)ctl->cons.bad_at, ctl->cons.bad_val, (uint32_t)ctl->cons.bad_at);
    if (rc != 0 || ctl->cons.handles != n || ctl->prod.handles != n)
        die("%s, batch %u: sent %llu, received %llu of %llu", impl_name[impl], batch,
            (unsigned long long)ctl->prod.handles, (unsigned long long)ctl->cons.handles, (unsigned long long)n);
    if (opt.verbose)
        fprintf(stderr,
                "  %s batch %u: ring found full %llu times by the producer, empty %llu times by the consumer; "
                "waited for a CPU: producer %.2f ms, consumer %.2f ms\n",
                impl_name[impl], batch, (unsigned long long)ctl->prod.empty, (unsigned long long)ctl->cons.empty,
                ctl->prod.runq_ns / 1e6, ctl->cons.runq_ns / 1e6);
    return (struct tput){
        .cyc_per_handle = (double)ctl->cons.tsc / (double)n,
        .mhps = (double)n * 1e3 / (double)ctl->cons.ns,
        .runq =
            fmax((double)ctl->prod.runq_ns / (double)ctl->prod.ns, (double)ctl->cons.runq_ns / (double)ctl->cons.ns),
    };
}

/* ------------------------------------------------------------------------ */
/* Ping-pong */

struct pp {
    double p50_us, p99_us;
    double wakes_per_rt;   /* eventfd writes per round trip, both directions */
    double sleeps_per_rt;  /* times either side blocked, per round trip */
    uint64_t timeouts;     /* blocks that ended by timeout: lost wake-ups */
    double runq_us_per_rt; /* A's and B's time waiting for a CPU, per round trip */
};

/* Wait for one handle on @c; sleeping, arm and block on @efd when empty. */
static uint32_t pp_recv(struct ipc_ring_cons *c, int efd, bool sleep, uint64_t *timeouts)
{
    struct ipc_ring_cons *cs[1] = {c};
    uint32_t v;
    for (;;) {
        if (bench_deq_burst(c, &v, 1))
            return v;
        if (!sleep || !ipc_wake_arm(cs, 1))
            continue;
        int r = ipc_wake_block(efd, PP_TIMEOUT_MS);
        ipc_wake_disarm(cs, 1);
        if (r == 0 && ++*timeouts > PP_TIMEOUTS_MAX)
            return PP_STOP;
        if (r < 0 && r != -EINTR)
            return PP_STOP;
    }
}

static void pp_send(struct ipc_ring_prod *p, uint32_t v)
{
    while (!ipc_ring_enq_burst(p, &v, 1))
        ;
}

/* B, the echoer: pong back whatever pings in; wakes with a wake set.
 * Returns its timeouts, and its time waiting for a CPU in ctl->cons. */
static uint64_t pp_echo(struct ipc_ring_shared *in_sh, struct ipc_ring_shared *out_sh, bool sleep)
{
    struct ipc_ring_cons in;
    struct ipc_ring_prod out;
    struct ipc_wake_set ws;
    ipc_ring_cons_init(&in, in_sh);
    ipc_ring_prod_init(&out, out_sh, efd_a);
    ipc_wake_set_init(&ws);
    atomic_store_explicit(&ctl->ready, 1, memory_order_release);
    uint64_t timeouts = 0, rq0 = bench_runq_ns();
    for (;;) {
        uint32_t v = pp_recv(&in, efd_b, sleep, &timeouts);
        if (v == PP_STOP)
            break;
        pp_send(&out, v);
        ipc_wake_mark(&ws, &out);
        ipc_wake_flush(&ws);
    }
    ctl->cons.timeouts = timeouts;
    ctl->cons.runq_ns = bench_runq_ns() - rq0;
    return timeouts;
}

/* Where the echoer runs. */
enum pp_where { PP_CROSS, PP_ONE_CPU, PP_ONE_CPU_THREAD };

static void __attribute__((noreturn)) pp_child(bool sleep, enum pp_where where)
{
    child_start();
    if (where == PP_ONE_CPU)
        pin(PROD_CPU);
    struct ipc_err err;
    struct ipc_ring_shared *in_sh, *out_sh;
    if (ipc_ring_attach(ping_fd, &in_sh, &err) < 0 || ipc_ring_attach(pong_fd, &out_sh, &err) < 0) {
        fprintf(stderr, "bench_ring: child: %s\n", err.msg);
        _exit(2);
    }
    _exit(pp_echo(in_sh, out_sh, sleep) > PP_TIMEOUTS_MAX ? 4 : 0);
}

/* The thread echoer uses the initiator's own mappings; it inherits its CPU. */
static void *pp_thread(void *arg)
{
    pp_echo(ping_sh, pong_sh, *(const bool *)arg);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void drain_eventfd(int efd)
{
    uint64_t v;
    while (read(efd, &v, sizeof(v)) > 0)
        ;
}

/* A, the initiator (this process, CPU 0): time @rounds round trips. */
static struct pp pingpong_once(bool sleep, unsigned rounds, enum pp_where where)
{
    uint64_t *lat = malloc(sizeof(*lat) * rounds);
    if (!lat)
        die("out of memory");
    ctl_reset();
    drain_eventfd(efd_a);
    drain_eventfd(efd_b);
    struct ipc_ring_prod ping;
    struct ipc_ring_cons pong;
    ipc_ring_prod_init(&ping, ping_sh, efd_b);
    ipc_ring_cons_init(&pong, pong_sh);

    pid_t pid = -1;
    pthread_t th;
    if (where == PP_ONE_CPU_THREAD) {
        int e = pthread_create(&th, NULL, pp_thread, &sleep);
        if (e)
            die("pthread_create: %s", strerror(e));
    } else if ((pid = fork_child()) == 0) {
        pp_child(sleep, where);
    }
    /* Spinning here would starve a one-CPU echoer of the CPU it waits for. */
    while (!atomic_load_explicit(&ctl->ready, memory_order_acquire))
        sched_yield();

    uint64_t timeouts = 0, wakes_w = 0, sleeps_w = 0, rq0 = bench_runq_ns();
    for (unsigned i = 0; i < PP_WARMUP + rounds; i++) {
        if (i == PP_WARMUP) {
            wakes_w = ipc_ld_rlx(&ping_sh->wake_sent) + ipc_ld_rlx(&pong_sh->wake_sent);
            sleeps_w = ipc_ld_rlx(&ping_sh->sleeps) + ipc_ld_rlx(&pong_sh->sleeps);
        }
        uint64_t t0 = bench_tsc();
        pp_send(&ping, i);
        ipc_wake_one(&ping);
        uint32_t v = pp_recv(&pong, efd_a, sleep, &timeouts);
        uint64_t t1 = bench_tsc();
        if (v != i) {
            pp_send(&ping, PP_STOP);
            ipc_wake_one(&ping);
            if (pid < 0)
                pthread_join(th, NULL);
            else
                reap_child(pid, "ping-pong");
            die("ping-pong: round %u came back as %u (timeouts %llu)", i, v, (unsigned long long)timeouts);
        }
        if (i >= PP_WARMUP)
            lat[i - PP_WARMUP] = t1 - t0;
    }
    uint64_t wakes1 = ipc_ld_rlx(&ping_sh->wake_sent) + ipc_ld_rlx(&pong_sh->wake_sent);
    uint64_t sleeps1 = ipc_ld_rlx(&ping_sh->sleeps) + ipc_ld_rlx(&pong_sh->sleeps);
    uint64_t rq1 = bench_runq_ns();
    pp_send(&ping, PP_STOP);
    ipc_wake_one(&ping);
    if (pid < 0)
        pthread_join(th, NULL);
    else
        reap_child(pid, "ping-pong");

    qsort(lat, rounds, sizeof(*lat), cmp_u64);
    double us = 1e6 / tsc_hz;
    struct pp r = {
        .p50_us = (double)lat[(rounds - 1) / 2] * us,
        .p99_us = (double)lat[(size_t)ceil(0.99 * rounds) - 1] * us,
        .wakes_per_rt = (double)(wakes1 - wakes_w) / rounds,
        .sleeps_per_rt = (double)(sleeps1 - sleeps_w) / rounds,
        .timeouts = timeouts + ctl->cons.timeouts,
        .runq_us_per_rt = (double)(rq1 - rq0 + ctl->cons.runq_ns) / 1e3 / (PP_WARMUP + rounds),
    };
    free(lat);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Statistics and output */

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct stat3 {
    double med, lo, hi;
};

static struct stat3 stats(const double *v, unsigned n)
{
    double s[SLICES_MAX > RUNS_MAX ? SLICES_MAX : RUNS_MAX];
    memcpy(s, v, n * sizeof(*v));
    qsort(s, n, sizeof(*s), cmp_dbl);
    double med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    return (struct stat3){med, s[0], s[n - 1]};
}

static double calibrate_tsc(void)
{
    uint64_t n0 = bench_ns(), t0 = bench_tsc();
    struct timespec d = {0, 100 * 1000 * 1000};
    while (nanosleep(&d, &d) < 0 && errno == EINTR)
        ;
    uint64_t n1 = bench_ns(), t1 = bench_tsc();
    return (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_ring [-r RUNS (1..%d)] [-S SLICES_PER_RUN (1..%d)] [-t MS_PER_SLICE]\n"
            "                  [-s RING_SIZE] [-w WAKE_ROUNDS] [-b BATCH (only this one)] [-v (every slice)]\n",
            RUNS_MAX, SLICES_MAX);
    exit(2);
}

static void setup(void)
{
    struct ipc_err err;
    if (ipc_ring_create("bench_ring", opt.ring_size, 0, 0, 0, 0, &ours_fd, &ours_sh, &err) < 0 ||
        ipc_ring_create("bench_ping", 64, 1, 0, 0, 0, &ping_fd, &ping_sh, &err) < 0 ||
        ipc_ring_create("bench_pong", 64, 2, 0, 0, 0, &pong_fd, &pong_sh, &err) < 0)
        die("%s", err.msg);
    efd_a = ipc_wake_eventfd();
    efd_b = ipc_wake_eventfd();
    if (efd_a < 0 || efd_b < 0)
        die("eventfd: %s", strerror(-(efd_a < 0 ? efd_a : efd_b)));
    ctl = map_shared(sizeof(*ctl));
    if (rte_bench_available()) {
        for (int i = IMPL_RTE8; i <= IMPL_RTE4; i++) {
            long len = rte_bench_memsize(impl_esize[i], opt.ring_size);
            if (len <= 0)
                die("rte_ring_get_memsize_elem(%u, %u) failed", impl_esize[i], opt.ring_size);
            rte_len[i] = (size_t)len;
            rte_mem[i] = map_shared(rte_len[i]);
        }
    } else {
        nimpl = 1;
    }
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "b:r:t:S:s:w:vh")) != -1) {
        switch (c) {
        case 'b':
            batches[0] = (uint32_t)atoi(optarg);
            nbatch = 1;
            if (batches[0] < 1 || batches[0] > BENCH_BATCH_MAX)
                usage();
            break;
        case 'v':
            opt.verbose = true;
            break;
        case 'r':
            opt.runs = (unsigned)atoi(optarg);
            break;
        case 't':
            opt.ms_per_slice = (unsigned)atoi(optarg);
            break;
        case 'S':
            opt.slices = (unsigned)atoi(optarg);
            break;
        case 's':
            opt.ring_size = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'w':
            opt.wake_rounds = (unsigned)atoi(optarg);
            break;
        default:
            usage();
        }
    }
    if (optind != argc || opt.runs < 1 || opt.runs > RUNS_MAX || opt.ms_per_slice < 1 || opt.slices < 1 ||
        opt.slices > SLICES_MAX || opt.wake_rounds < 100 || opt.ring_size < BENCH_BATCH_MAX ||
        (opt.ring_size & (opt.ring_size - 1)))
        usage();

    signal(SIGALRM, on_alarm);
    pin(PROD_CPU);
    setup();
    tsc_hz = calibrate_tsc();

    char load[64] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fgets(load, sizeof(load), f))
            load[strcspn(load, "\n")] = 0;
        fclose(f);
    }
    printf("bench/ring: cross-process SPSC hand-off, producer pinned to CPU %d, consumer to CPU %d\n", PROD_CPU,
           CONS_CPU);
    printf("ring %u slots for both (rte_ring holds %u), %u runs of %u interleaved slices, TSC %.1f MHz, loadavg %s\n",
           opt.ring_size, opt.ring_size - 1, opt.runs, opt.slices, tsc_hz / 1e6, load);
    if (nimpl == 1)
        printf("rte_ring baseline not built (no libdpdk-dev when ./configure ran): ours only, no ratios\n");

    /* Handles per slice: pilot runs of ours at each batch size set it for
     * ~ms_per_slice; every implementation then moves the same count. */
    uint64_t handles[NBATCH];
    for (unsigned b = 0; b < nbatch; b++) {
        double p[3];
        for (int i = 0; i < 3; i++)
            p[i] = tput_once(IMPL_OURS, batches[b], PILOT_HANDLES).cyc_per_handle;
        double n = tsc_hz * opt.ms_per_slice / 1e3 / stats(p, 3).med;
        handles[b] = n < HANDLES_MIN ? HANDLES_MIN : n > HANDLES_MAX ? HANDLES_MAX : (uint64_t)n;
    }

    /*
     * A run of one batch size is opt.slices rounds; each round gives every
     * implementation one slice (a fork, n handles, an exit), the order
     * rotating from round to round. A run's figure for an implementation is
     * the median of its slices. Interleaving this finely means a burst of
     * noise from the host (or a change in where it placed our two vCPUs)
     * lands on all implementations alike instead of on whoever ran then.
     */
    double cyc[NBATCH][NIMPL][RUNS_MAX], mhps[NBATCH][NIMPL][RUNS_MAX];
    unsigned disturbed = 0, dirty_cells = 0;
    for (unsigned run = 0; run < opt.runs; run++)
        for (unsigned b = 0; b < nbatch; b++) {
            double sc[NIMPL][SLICES_MAX], sm[NIMPL][SLICES_MAX];
            bool clean[NIMPL][SLICES_MAX];
            unsigned nclean[NIMPL] = {0};
            for (unsigned sl = 0; sl < opt.slices; sl++)
                for (int k = 0; k < nimpl; k++) {
                    int impl = (k + (int)sl + (int)run) % nimpl;
                    struct tput t = tput_once(impl, batches[b], handles[b]);
                    clean[impl][sl] = t.runq <= DISTURBED;
                    nclean[impl] += clean[impl][sl];
                    disturbed += !clean[impl][sl];
                    sc[impl][sl] = t.cyc_per_handle;
                    sm[impl][sl] = t.mhps;
                    if (opt.verbose)
                        fprintf(stderr, "run %u slice %u batch %3u %-17s %8.2f cycles/handle\n", run, sl, batches[b],
                                impl_name[impl], t.cyc_per_handle);
                }
            /* A slice in which another task took one of our CPUs measured
             * the scheduler: leave those out while most slices are clean. */
            for (int impl = 0; impl < nimpl; impl++) {
                unsigned k = 0;
                bool use_clean = nclean[impl] * 2 > opt.slices;
                for (unsigned sl = 0; sl < opt.slices; sl++)
                    if (!use_clean || clean[impl][sl]) {
                        sc[impl][k] = sc[impl][sl];
                        sm[impl][k] = sm[impl][sl];
                        k++;
                    }
                cyc[b][impl][run] = stats(sc[impl], k).med;
                mhps[b][impl][run] = stats(sm[impl], k).med;
                dirty_cells += !use_clean;
            }
        }

    enum { PP_SLEEP, PP_BUSY, PP_SLEEP_1CPU, PP_SLEEP_1CPU_THREAD, PP_NMODES };
    struct pp pps[PP_NMODES][RUNS_MAX];
    double one_cpu_ratio[RUNS_MAX];
    for (unsigned run = 0; run < opt.runs; run++) {
        pps[PP_SLEEP][run] = pingpong_once(true, opt.wake_rounds, PP_CROSS);
        pps[PP_BUSY][run] = pingpong_once(false, PP_BUSY_ROUNDS, PP_CROSS);
        pps[PP_SLEEP_1CPU][run] = pingpong_once(true, opt.wake_rounds, PP_ONE_CPU);
        pps[PP_SLEEP_1CPU_THREAD][run] = pingpong_once(true, opt.wake_rounds, PP_ONE_CPU_THREAD);
        one_cpu_ratio[run] = pps[PP_SLEEP_1CPU][run].p50_us / pps[PP_SLEEP_1CPU_THREAD][run].p50_us;
    }

    printf("\nthroughput: consumer TSC cycles per handle (lower is better), median [min - max] of %u runs\n"
           "(a run's figure: the median of its %u slices, undisturbed ones); ours/this = our cycles over this ring's "
           "in the\n"
           "same run, median [min - max] over the runs\n",
           opt.runs, opt.slices);
    if (disturbed)
        printf("NOTE: in %u of %u slices a side waited for its CPU > 1 %% of the time (load from outside the\n"
               "benchmark); those are left out, except in %u of %u run figures where most slices were disturbed\n",
               disturbed, opt.runs * nbatch * nimpl * opt.slices, dirty_cells, opt.runs * nbatch * nimpl);
    printf("%5s %11s  %-17s %27s %10s  %s\n", "batch", "hdl/slice", "implementation", "cycles/handle", "Mhandle/s",
           "ours/this");
    double ratio[NBATCH][NIMPL];
    for (unsigned b = 0; b < nbatch; b++) {
        for (int impl = 0; impl < nimpl; impl++) {
            struct stat3 s = stats(cyc[b][impl], opt.runs);
            struct stat3 m = stats(mhps[b][impl], opt.runs);
            if (impl == 0)
                printf("%5u %11llu  ", batches[b], (unsigned long long)handles[b]);
            else
                printf("%5s %11s  ", "", "");
            printf("%-17s %8.2f [%7.2f - %7.2f] %10.1f", impl_name[impl], s.med, s.lo, s.hi, m.med);
            if (impl > 0) {
                double r[RUNS_MAX];
                for (unsigned run = 0; run < opt.runs; run++)
                    r[run] = cyc[b][IMPL_OURS][run] / cyc[b][impl][run];
                struct stat3 rs = stats(r, opt.runs);
                ratio[b][impl] = rs.med;
                printf("  %5.3f [%5.3f - %5.3f]", rs.med, rs.lo, rs.hi);
            }
            printf("\n");
        }
    }

    static const char *const pp_name[PP_NMODES] = {"both sides sleep", "both busy-poll", "sleep, one CPU",
                                                   "sleep, 1 CPU, thrd"};
    struct stat3 pp50[PP_NMODES], pp99[PP_NMODES];
    printf("\nping-pong: one handle A (CPU %d) -> B (CPU %d) -> A over two of our rings, round trip in us,\n"
           "median [min - max] over %u runs of each run's p50 and p99; sleeping = ipc_wake_arm + ipc_wake_block,\n"
           "woken by ipc_wake_one (A) and ipc_wake_set + ipc_wake_flush (B); \"one CPU\": B a process on A's CPU,\n"
           "\"thrd\": B a thread of A's process (no change of address space at a switch)\n",
           PROD_CPU, CONS_CPU, opt.runs);
    printf("%-17s %7s %27s %27s %8s %9s %8s %7s\n", "mode", "rounds", "p50 round trip (us)", "p99 round trip (us)",
           "wakes/rt", "sleeps/rt", "timeouts", "runq/rt");
    for (int m = 0; m < PP_NMODES; m++) {
        double v50[RUNS_MAX], v99[RUNS_MAX], w[RUNS_MAX], s[RUNS_MAX];
        uint64_t to = 0;
        double rq[RUNS_MAX];
        for (unsigned run = 0; run < opt.runs; run++) {
            rq[run] = pps[m][run].runq_us_per_rt;
            v50[run] = pps[m][run].p50_us;
            v99[run] = pps[m][run].p99_us;
            w[run] = pps[m][run].wakes_per_rt;
            s[run] = pps[m][run].sleeps_per_rt;
            to += pps[m][run].timeouts;
        }
        pp50[m] = stats(v50, opt.runs);
        pp99[m] = stats(v99, opt.runs);
        printf("%-17s %7u %8.2f [%7.2f - %7.2f] %8.2f [%7.2f - %7.2f] %8.2f %9.2f %8llu %7.2f\n", pp_name[m],
               m == PP_BUSY ? PP_BUSY_ROUNDS : opt.wake_rounds, pp50[m].med, pp50[m].lo, pp50[m].hi, pp99[m].med,
               pp99[m].lo, pp99[m].hi, stats(w, opt.runs).med, stats(s, opt.runs).med, (unsigned long long)to,
               stats(rq, opt.runs).med);
    }

    printf("\n");
    printf("wake_pingpong_p50_us %.2f\n", pp50[0].med);
    printf("wake_pingpong_p99_us %.2f\n", pp99[0].med);
    printf("busy_pingpong_p50_us %.3f\n", pp50[1].med);
    printf("wake_pingpong_one_cpu_p50_us %.2f\n", pp50[PP_SLEEP_1CPU].med);
    printf("wake_pingpong_one_cpu_thread_p50_us %.2f\n", pp50[PP_SLEEP_1CPU_THREAD].med);
    /* Per run, then the median: the two shared that run's noise. */
    printf("wake_one_cpu_process_vs_thread %.3f\n", stats(one_cpu_ratio, opt.runs).med);
    if (nimpl == 1)
        return 1; /* no baseline, no ratios: say so by failing */
    for (unsigned b = 0; b < nbatch; b++)
        printf("ring_vs_rte_ring_elem4_batch%u %.3f\n", batches[b], ratio[b][IMPL_RTE4]);
    for (unsigned b = 0; b < nbatch; b++)
        if (batches[b] != 32)
            printf("ring_vs_rte_ring_batch%u %.3f\n", batches[b], ratio[b][IMPL_RTE8]);
    for (unsigned b = 0; b < nbatch; b++)
        if (batches[b] == 32)
            printf("ring_vs_rte_ring_batch32 %.3f\n", ratio[b][IMPL_RTE8]);
    return 0;
}
