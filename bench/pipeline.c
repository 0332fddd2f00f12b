/* SPDX-License-Identifier: MIT */
/*
 * bench/pipeline.c: bench/pipeline's harness (issue 49, item 4): ringrouter's
 * pipeline with no kernel in the path. A null driver serving two ports
 * (memory in, memory out) and the router, over the project's rings
 * (ipc/ring.h), wake-ups (ipc/wake.h) and pool (ipc/pool.h), as two
 * processes or as two threads of one process, the same code.
 *
 *   bench_pipeline proc|thread busy|sleep SECONDS
 *
 * The driver, each loop: port b's "transmit" (the router's ring to it:
 * taken, freed to the pool), then port a's "receive" (up to RT_BURST pool
 * buffers allocated, a 64-byte UDP frame copied into each, published on the
 * ring to the router). The router, each loop, as services/router/main.c's:
 * a FIB read section around ipc_ring_recv(), rt_input_burst() (librouter.a:
 * checks, FIB and neighbour look-ups, TTL, MACs) and the hand-off of what it
 * emits to its egress port's ring, then one wake-up flush. 16 flows, each
 * via its own gateway on port b, interleaved so that no per-burst cache
 * hits (as bench/fwdcore.c). Neither side takes more than the ring it feeds
 * has room for, so nothing is dropped.
 *
 * busy: the driver on CPU 0, the router on CPU 1, neither sleeps. sleep: both
 * on CPU 1; a consumer with nothing to do arms its wake words and blocks on
 * its eventfd, a side whose output ring is full yields.
 *
 * Prints one line: proc|thread busy|sleep Mpps (packets the driver took back
 * from the router per second), TSC cycles per packet of each stage (driver
 * receive, router, driver transmit: the work of loops that moved packets,
 * not the polls or sleeps between), and eventfd writes and sleeps per
 * packet; measured over SECONDS after a warm-up of half a second.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/stats.h"
#include "ipc/pool.h"
#include "ipc/wake.h"
#include "services/router/ipv4.h"
#include "services/router/pkt.h"
#include "services/router/rt.h"
#include "tables/fib_write.h"
#include "tables/neigh_write.h"

#define NFLOWS 16u
#define FRAME_LEN 60u /* 64 on the wire */
#define RING 4096u
#define NBUFS 16384u
#define ID_DRV 3u
#define ID_RT 2u
#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

#ifndef PIPE_RELAX
#define PIPE_RELAX() __builtin_ia32_pause()
#endif

enum { ST_RX, ST_RT, ST_TX, ST_N };

/* Shared between the sides (MAP_SHARED: also across fork). Each side writes
 * its own line. */
struct side_stats {
    _Alignas(64) _Atomic uint64_t pkts[ST_N];
    _Atomic uint64_t cycles[ST_N];
    _Atomic uint64_t wakes, sleeps;
};
struct shared {
    _Atomic uint32_t stop;
    struct side_stats drv, rt;
};

static struct shared *sh;
static int pool_fd, fib_fd, fib_rfd, neigh_fd, efd_drv = -1, efd_rt = -1;
static struct ipc_ring_shared *r_in, *r_out; /* driver -> router, router -> driver */
static struct fib fib_w, fib_r;
static struct neigh_table neigh;
static uint8_t tmpl[NFLOWS][FRAME_LEN];
static int busy;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_pipeline: %s: %s\n", what, msg);
    exit(1);
}

static inline uint64_t tsc(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) /* the calling thread */
        die("sched_setaffinity", strerror(errno));
}

static void bump(struct side_stats *s, int st, uint64_t n, uint64_t cyc)
{
    ipc_count(&s->pkts[st], n);
    ipc_count(&s->cycles[st], cyc);
}

/* Nothing to do: spin (busy) or give the CPU to the other side (sleep). */
static void idle_turn(void)
{
    if (busy)
        PIPE_RELAX();
    else
        sched_yield();
}

/* Nothing arrived: spin, or arm @c's wake word and block on @efd. */
static void wait_input(struct ipc_ring_cons *c, int efd, struct side_stats *s)
{
    if (busy) {
        PIPE_RELAX();
        return;
    }
    if (!ipc_wake_arm(&c, 1))
        return;
    ipc_count(&s->sleeps, 1);
    int r = ipc_wake_block(efd, 100);
    if (r < 0 && r != -EINTR)
        die("eventfd", strerror(-r));
    ipc_wake_disarm(&c, 1);
}

/* A side's start: on its CPU, the pool attached as @self, its two ring ends
 * (the consumer it feeds sleeps on @efd_out when not busy). */
static void side_open(int cpu, uint16_t self, struct ipc_pool *pool, struct ipc_ring_cons *in,
                      struct ipc_ring_shared *in_sh, struct ipc_ring_prod *out, struct ipc_ring_shared *out_sh,
                      int efd_out)
{
    pin(cpu);
    struct ipc_err err = {{0}};
    if (ipc_pool_attach(pool, pool_fd, self, &err) != 0)
        die("pool", err.msg);
    ipc_ring_cons_init(in, in_sh);
    ipc_ring_prod_init(out, out_sh, busy ? -1 : efd_out);
}

static void *driver(void *arg)
{
    (void)arg;
    struct ipc_pool pool;
    struct ipc_ring_prod out;
    struct ipc_ring_cons in;
    side_open(busy ? 0 : 1, ID_DRV, &pool, &in, r_out, &out, r_in, efd_rt);
    struct ipc_wake_set ws;
    ipc_wake_set_init(&ws);
    struct side_stats *s = &sh->drv;
    unsigned flow = 0;
    while (!ipc_ld_rlx(&sh->stop)) {
        ipc_buf b[RT_BURST];
        uint64_t t0 = tsc();
        uint32_t n = ipc_ring_recv(&in, &pool, b, RT_BURST);
        if (n) {
            ipc_pool_free(&pool, b, n);
            uint64_t t1 = tsc();
            bump(s, ST_TX, n, t1 - t0);
            t0 = t1;
        }
        uint32_t room = ipc_ring_free_count(&out, RT_BURST);
        uint32_t k = ipc_pool_alloc(&pool, b, room < RT_BURST ? room : RT_BURST);
        for (uint32_t i = 0; i < k; i++) {
            struct ipc_meta *m = ipc_pool_meta(&pool, b[i]);
            memcpy(ipc_pool_data(&pool, b[i]), tmpl[flow], FRAME_LEN);
            flow = (flow + 1) % NFLOWS;
            pkt_set_len(m, FRAME_LEN);
            m->in_port = 0;
            m->out_port = IPC_PORT_NONE;
        }
        if (k) {
            ipc_ring_enq_burst(&out, b, k); /* room was counted */
            ipc_wake_mark(&ws, &out);
            ipc_count(&s->wakes, ipc_wake_flush(&ws));
            bump(s, ST_RX, k, tsc() - t0);
        }
        if (n || k)
            continue;
        /* Its ring to the router full, or the pool empty: the router holds
         * the buffers, and what it sends back is the next work. */
        wait_input(&in, efd_drv, s);
    }
    ipc_pool_detach(&pool);
    return NULL;
}

static void *router(void *arg)
{
    (void)arg;
    struct ipc_pool pool;
    struct ipc_ring_cons in;
    struct ipc_ring_prod out;
    side_open(1, ID_RT, &pool, &in, r_in, &out, r_out, efd_drv);
    struct rt_counters ctr;
    struct rt_ctx ctx;
    memset(&ctr, 0, sizeof ctr);
    rt_ctx_init(&ctx, &pool, &fib_r, &neigh, &ctr, NULL);
    ctx.nports = 2;
    for (unsigned p = 0; p < 2; p++) {
        struct rt_port *pt = &ctx.port[p];
        uint8_t mac[6] = {0x02, 0, 0, 0, 0, (uint8_t)p};
        memcpy(pt->mac, mac, 6);
        pt->mtu = 1500;
        pt->ip = IP4(10, p, 0, 1);
        pt->plen = 24;
    }
    ipc_buf txb[4 * RT_BURST];
    struct rt_burst tx = {.bufs = txb, .cap = 4 * RT_BURST};
    struct ipc_wake_set ws;
    ipc_wake_set_init(&ws);
    struct side_stats *s = &sh->rt;
    uint64_t now = 1000000000ull, lost = 0;
    while (!ipc_ld_rlx(&sh->stop)) {
        uint64_t t0 = tsc();
        uint32_t room = ipc_ring_free_count(&out, RT_BURST);
        ipc_buf b[RT_BURST];
        fib_read_begin(&fib_r);
        uint32_t n = room ? ipc_ring_recv(&in, &pool, b, room < RT_BURST ? room : RT_BURST) : 0;
        if (n) {
            rt_input_burst(&ctx, b, n, now, &tx);
            /* One egress port here: what is not for it (none, if the
             * set-up is right) is freed and counted. */
            uint32_t k = 0;
            for (uint32_t i = 0; i < tx.n; i++) {
                if (ipc_pool_meta(&pool, tx.bufs[i])->out_port == 1) {
                    tx.bufs[k++] = tx.bufs[i];
                } else {
                    ipc_pool_free(&pool, &tx.bufs[i], 1);
                    lost++;
                }
            }
            uint32_t sent = ipc_ring_enq_burst(&out, tx.bufs, k);
            if (sent < k) {
                ipc_pool_free(&pool, tx.bufs + sent, k - sent);
                lost += k - sent;
            }
            tx.n = 0;
            ipc_wake_mark(&ws, &out);
        }
        fib_read_end(&fib_r);
        if (n) {
            ipc_count(&s->wakes, ipc_wake_flush(&ws));
            bump(s, ST_RT, n, tsc() - t0);
            continue;
        }
        if (!room)
            idle_turn();
        else
            wait_input(&in, efd_rt, s);
    }
    if (lost)
        fprintf(stderr, "bench_pipeline: the router lost %llu packets: the set-up is wrong\n", (unsigned long long)lost);
    ipc_pool_detach(&pool);
    return NULL;
}

static void setup(void)
{
    struct ipc_err err = {{0}};
    int fd;
    if (ipc_pool_create("bench-pipe-pool", NBUFS, IPC_FRAME_DEFAULT, &pool_fd, &err) != 0)
        die("pool", err.msg);
    if (ipc_ring_create("bench-pipe-in", RING, 0, ID_DRV, ID_RT, 0, &fd, &r_in, &err) != 0 ||
        ipc_ring_create("bench-pipe-out", RING, 1, ID_RT, ID_DRV, 0, &fd, &r_out, &err) != 0)
        die("ring", err.msg);
    if ((efd_drv = ipc_wake_eventfd()) < 0 || (efd_rt = ipc_wake_eventfd()) < 0)
        die("eventfd", strerror(errno));
    struct fib_params fp = {.max_prefixes = 1024, .tbl8_groups = 64, .max_nh = 64};
    if (fib_create("bench-pipe-fib", &fp, &fib_w, &fib_fd, &fib_rfd, &err) != 0 ||
        fib_attach(&fib_r, fib_fd, fib_rfd, 0, &err) != 0)
        die("fib", err.msg);
    if (neigh_create("bench-pipe-neigh", 64, &neigh, &neigh_fd, &err) != 0)
        die("neigh", err.msg);
    for (unsigned p = 0; p < 2; p++) {
        struct fib_nh conn = {.gw = 0, .port = (uint16_t)p};
        if (fib_add(&fib_w, IP4(10, p, 0, 0), 24, &conn) != 0)
            die("fib_add", "connected");
    }
    for (unsigned f = 0; f < NFLOWS; f++) {
        uint32_t gw = IP4(10, 1, 0, 10 + f);
        uint8_t mac[6] = {0x02, 0xbb, 10, 1, 0, (uint8_t)(10 + f)};
        struct fib_nh via = {.gw = gw, .port = 1};
        if (neigh_add_static(&neigh, gw, mac, 1) != 0 || fib_add(&fib_w, IP4(172, 16, f, 0), 24, &via) != 0)
            die("route", "of a flow");
        uint8_t *fr = tmpl[f], *ip = fr + PKT_ETH_HLEN, *udp = ip + PKT_IP_HLEN;
        uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0}, src[6] = {0x02, 0, 0, 0, 1, 0};
        memcpy(fr, dst, 6);
        memcpy(fr + 6, src, 6);
        pkt_put16(fr + 12, PKT_ETH_P_IP);
        ip[0] = 0x45;
        pkt_put16(ip + PKT_IP_TOTLEN, FRAME_LEN - PKT_ETH_HLEN);
        ip[PKT_IP_TTL] = 64;
        ip[PKT_IP_PROTO] = 17;
        pkt_put32(ip + PKT_IP_SRC, IP4(10, 0, 0, 10 + f));
        pkt_put32(ip + PKT_IP_DST, IP4(172, 16, f, 7));
        pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, PKT_IP_HLEN));
        pkt_put16(udp, (uint16_t)(1024 + f));
        pkt_put16(udp + 2, 9);
        pkt_put16(udp + 4, FRAME_LEN - PKT_ETH_HLEN - PKT_IP_HLEN);
    }
}

static void snap(uint64_t v[2 * ST_N + 4])
{
    const struct side_stats *s[2] = {&sh->drv, &sh->rt};
    for (int i = 0; i < ST_N; i++) {
        v[i] = ipc_ld_rlx(&s[i == ST_RT]->pkts[i]);
        v[ST_N + i] = ipc_ld_rlx(&s[i == ST_RT]->cycles[i]);
    }
    v[2 * ST_N] = ipc_ld_rlx(&sh->drv.wakes) + ipc_ld_rlx(&sh->rt.wakes);
    v[2 * ST_N + 1] = ipc_ld_rlx(&sh->drv.sleeps) + ipc_ld_rlx(&sh->rt.sleeps);
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "proc") && strcmp(argv[1], "thread")) ||
        (strcmp(argv[2], "busy") && strcmp(argv[2], "sleep"))) {
        fprintf(stderr, "usage: bench_pipeline proc|thread busy|sleep SECONDS\n");
        return 2;
    }
    double secs = atof(argv[3]);
    if (!(secs >= 1 && secs <= 600))
        die("SECONDS", "must be 1..600");
    int procs = !strcmp(argv[1], "proc");
    busy = !strcmp(argv[2], "busy");
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        die("mmap", strerror(errno));
    setup();
    pid_t kid[2] = {0, 0};
    pthread_t th[2];
    void *(*fn[2])(void *) = {driver, router};
    for (int i = 0; i < 2; i++) {
        if (procs) {
            pid_t parent = getpid();
            if ((kid[i] = fork()) < 0)
                die("fork", strerror(errno));
            if (kid[i] == 0) {
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                    _exit(1);
                fn[i](NULL);
                _exit(0);
            }
        } else if (pthread_create(&th[i], NULL, fn[i], NULL) != 0) {
            die("pthread_create", "failed");
        }
    }
    /* The parent measures from CPU 0 and sleeps meanwhile. */
    pin(0);
    struct timespec warm = {0, 500000000};
    nanosleep(&warm, NULL);
    uint64_t a[2 * ST_N + 4], b[2 * ST_N + 4], c0 = tsc();
    double t0 = t_now();
    snap(a);
    struct timespec win = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&win, NULL);
    snap(b);
    double t1 = t_now();
    uint64_t c1 = tsc();
    ipc_st_rlx(&sh->stop, 1);
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        if (procs) {
            int st;
            if (waitpid(kid[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
                bad = 1;
        } else {
            pthread_join(th[i], NULL);
        }
    }
    uint64_t done = b[ST_TX] - a[ST_TX];
    if (bad || !done)
        die("run", bad ? "a side failed" : "no packet came through");
    printf("%s %s %.4f", argv[1], argv[2], (double)done / (t1 - t0) / 1e6);
    for (int i = 0; i < ST_N; i++) {
        uint64_t n = b[i] - a[i];
        printf(" %.1f", n ? (double)(b[ST_N + i] - a[ST_N + i]) / (double)n : 0.0);
    }
    printf(" %.4f %.4f %.3f\n", (double)(b[2 * ST_N] - a[2 * ST_N]) / (double)done,
           (double)(b[2 * ST_N + 1] - a[2 * ST_N + 1]) / (double)done, (double)(c1 - c0) / (t1 - t0) / 1e9);
    return 0;
}
