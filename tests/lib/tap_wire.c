/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/tap_wire.c: build/bin/tests/tap_wire, the harness of
 * tests/integ/tap_wire.sh. It does for two TAP drivers what the supervisor
 * will do (pool, rings, eventfds, stats regions, config blobs, TAP devices in
 * two namespaces, fork + exec of rr-tap), then plays the router as an L2
 * wire: every packet from driver A's output ring goes to driver B's input
 * ring and back, as the chain it arrived in. On SIGTERM it stops both drivers,
 * drains the rings, prints every counter, and checks the pool census.
 *
 *   tap_wire --ns-a NS --if-a IF --ns-b NS --if-b IF [--offloads LIST]
 *            [--mtu N] [--rx-inflight N] [--poll-us N] [--bufs N]
 *            [--inject] [--ready-fd FD] [--bin PATH]
 *
 * SIGUSR1 kills driver A with SIGKILL, reclaims its buffers as the
 * supervisor will (ipc_pool_reclaim) and starts a successor on the same
 * rings and TAP fd; the script checks that the flows carry on.
 *
 * --inject puts malformed packets into driver A's second input ring (where a
 * shaper would sit) and checks that each is dropped and counted by reason.
 * Exit: 0 all good, 1 a check failed, 111 setup failed, 100 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drivers/tap/vnet.h"
#include "harness.h"

#define W_OWNER 2 /* the harness, as the router */
#define W_OWNER_A 3
#define W_OWNER_B 4
#define W_RING 1024
#define W_BURST 256

enum { R_A_RX, R_B_RX, R_A_TX, R_B_TX, R_A_INJ, R_N };
static const char *const ring_names[R_N] = {"a_rx", "b_rx", "a_tx", "b_tx", "a_inj"};

struct wire {
    struct ipc_pool pool;
    int pool_fd;
    int wake_fd; /* ours */
    int ring_fd[R_N];
    struct ipc_ring_shared *sh[R_N];
    struct ipc_ring_cons a_rx, b_rx;
    struct ipc_ring_prod a_tx, b_tx, a_inj;
    struct ipc_wake_set ws;
    struct t_svc a, b;
    const char *bin;
    uint64_t fwd_pkts, fwd_drops;
    unsigned restarts;
};

static void usage(void)
{
    fprintf(stderr, "usage: tap_wire --ns-a NS --if-a IF --ns-b NS --if-b IF [--offloads csum,tso4,tso6|none] "
                    "[--mtu N] [--rx-inflight N] [--poll-us N] [--bufs N] [--inject] [--ready-fd FD] [--bin PATH]\n");
    exit(100);
}

static uint32_t fwd(struct wire *w, struct ipc_ring_cons *c, struct ipc_ring_prod *p)
{
    ipc_buf bufs[W_BURST];
    uint32_t n = ipc_ring_recv(c, &w->pool, bufs, W_BURST);
    if (n == 0)
        return 0;
    uint32_t s = ipc_ring_enq_burst(p, bufs, n);
    if (s < n) {
        ipc_pool_free(&w->pool, bufs + s, n - s);
        ipc_count(&p->sh->full_drops, n - s);
        w->fwd_drops += n - s;
    }
    if (s)
        ipc_wake_mark(&w->ws, p);
    w->fwd_pkts += s;
    return n;
}

/* One malformed packet: a single frame of @len bytes with vnet fields @v. */
static ipc_buf bad_pkt(struct wire *w, uint32_t len, struct ipc_vnet v)
{
    ipc_buf b;
    if (ipc_pool_alloc(&w->pool, &b, 1) != 1)
        return IPC_BUF_NONE;
    struct ipc_meta *m = ipc_pool_meta(&w->pool, b);
    memset(ipc_pool_data(&w->pool, b), 0, len);
    uint8_t *d = ipc_pool_data(&w->pool, b);
    memset(d, 0xff, 6); /* broadcast, so that nothing else would stop it */
    d[12] = 0x08;       /* IPv4 */
    m->len = (uint16_t)len;
    m->pkt_len = len;
    m->vnet = v;
    return b;
}

/* Driver A's validation drops, and the kernel-refused case, by injection. */
static int inject(struct wire *w)
{
    ipc_buf pk[8];
    unsigned n = 0;
    /* 1. Shorter than an Ethernet header. */
    pk[n++] = bad_pkt(w, 10, (struct ipc_vnet){0});
    /* 2. Claims TCPv4 GSO on 40 bytes. */
    pk[n++] = bad_pkt(w, 40, (struct ipc_vnet){.gso_type = TAP_VNET_GSO_TCPV4, .gso_size = 1448});
    /* 3. Checksum field beyond the frame. */
    pk[n++] = bad_pkt(w, 60, (struct ipc_vnet){.flags = TAP_VNET_F_NEEDS_CSUM, .csum_start = 100, .csum_offset = 16});
    /* 4. Passes our checks, but the TCP header at csum_start runs past the
     *    frame: the kernel refuses the write (EINVAL). */
    pk[n++] = bad_pkt(w, 60, (struct ipc_vnet){.flags = TAP_VNET_F_NEEDS_CSUM, .gso_type = TAP_VNET_GSO_TCPV4,
                                               .gso_size = 100, .csum_start = 50, .csum_offset = 2});
    /* 5. A handle out of range, and 6. a chain whose lengths do not add up:
     *    refused by ipc_ring_recv before the driver sees them. */
    pk[n++] = w->pool.nbufs + 5;
    pk[n] = bad_pkt(w, 60, (struct ipc_vnet){0});
    if (pk[n] != IPC_BUF_NONE)
        ipc_pool_meta(&w->pool, pk[n])->pkt_len = 9000;
    n++;
    for (unsigned i = 0; i < n; i++)
        if (pk[i] == IPC_BUF_NONE)
            return -1;
    if (ipc_ring_enq_burst(&w->a_inj, pk, n) != n)
        return -1;
    ipc_wake_one(&w->a_inj);
    return 0;
}

static int check_inject(struct wire *w)
{
    static const char *const want[] = {"tx_drop_short", "tx_drop_bad_gso", "tx_drop_bad_csum"};
    int bad = 0;
    for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        uint64_t v = 0;
        if (!t_counter(w->a.stats, want[i], &v) || v != 1) {
            printf("inject: A %s = %llu, expected 1\n", want[i], (unsigned long long)v);
            bad = 1;
        }
    }
    uint64_t einval = 0;
    t_counter(w->a.stats, "tx_err_einval", &einval);
    if (einval != 1) {
        printf("inject: A tx_err_einval = %llu, expected 1\n", (unsigned long long)einval);
        bad = 1;
    }
    struct ipc_ring_shared *sh = w->sh[R_A_INJ];
    if (ipc_ld_rlx(&sh->drop_bad_handle) != 1 || ipc_ld_rlx(&sh->drop_bad_chain) + ipc_ld_rlx(&sh->drop_bad_frame) != 1) {
        printf("inject: ring a_inj drop_bad_handle %llu drop_bad_chain %llu drop_bad_frame %llu, expected 1, 1\n",
               (unsigned long long)ipc_ld_rlx(&sh->drop_bad_handle),
               (unsigned long long)ipc_ld_rlx(&sh->drop_bad_chain),
               (unsigned long long)ipc_ld_rlx(&sh->drop_bad_frame));
        bad = 1;
    }
    printf("inject: %s\n", bad ? "FAILED" : "ok");
    return bad;
}

static int setup(struct wire *w, const char *ns[2], const char *ifn[2], long offloads, unsigned mtu,
                 unsigned rx_inflight, unsigned poll_us, unsigned nbufs, const char *bin)
{
    struct ipc_err err = {{0}};
    int ret;
#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        if ((ret = (x)) < 0) {                                                                                         \
            fprintf(stderr, "tap_wire: %s\n", err.msg[0] ? err.msg : strerror(-ret));                                  \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)
    char pname[32];
    snprintf(pname, sizeof(pname), "wire-%d", (int)getpid());
    TRY(ipc_pool_create(pname, nbufs, IPC_FRAME_DEFAULT, &w->pool_fd, &err));
    TRY(ipc_pool_attach(&w->pool, w->pool_fd, W_OWNER, &err));
    w->wake_fd = ipc_wake_eventfd();
    TRY(w->wake_fd);
    static const uint16_t prod[R_N] = {W_OWNER_A, W_OWNER_B, W_OWNER, W_OWNER, W_OWNER};
    static const uint16_t cons[R_N] = {W_OWNER, W_OWNER, W_OWNER_A, W_OWNER_B, W_OWNER_A};
    for (int r = 0; r < R_N; r++)
        TRY(t_ring(ring_names[r], W_RING, (uint32_t)r + 1, prod[r], cons[r], &w->ring_fd[r], &w->sh[r], &err));
    ipc_ring_cons_init(&w->a_rx, w->sh[R_A_RX]);
    ipc_ring_cons_init(&w->b_rx, w->sh[R_B_RX]);
    ipc_wake_set_init(&w->ws);

    struct t_svc *svc[2] = {&w->a, &w->b};
    static const char *const names[2] = {"driver-a", "driver-b"};
    static const uint16_t owners[2] = {W_OWNER_A, W_OWNER_B};
    for (int i = 0; i < 2; i++) {
        struct t_svc *s = svc[i];
        TRY(t_svc_prepare(s, names[i], IPC_SVC_TAP, owners[i], w->pool_fd, &err));
        int tap;
        TRY(t_tap_open(ns[i], ifn[i], (uint32_t)offloads, mtu, &tap, &err));
        struct ipc_svc_config *c = s->cfg;
        s->drv.dev_fd = tap;
        c->port = (uint16_t)i;
        c->poll_us = poll_us;
        c->nports = 2;
        for (int p = 0; p < 2; p++) {
            struct ipc_svc_port *pp = &c->ports[p];
            snprintf(pp->name, sizeof(pp->name), "%c", 'a' + p);
            snprintf(pp->ifname, sizeof(pp->ifname), "%s", ifn[p]);
            snprintf(pp->netns, sizeof(pp->netns), "%s", ns[p]);
            pp->mtu = (uint16_t)(mtu ? mtu : 1500);
            pp->driver = IPC_DRV_TAP;
            pp->offloads = (uint32_t)offloads;
            pp->rx_inflight = rx_inflight;
        }
        t_svc_keep(s, tap);
        if (i == 0) {
            t_svc_add_in(s, w->ring_fd[R_A_TX], 0);
            t_svc_add_in(s, w->ring_fd[R_A_INJ], 0);
            t_svc_add_out(s, w->ring_fd[R_A_RX], w->wake_fd, 0);
        } else {
            t_svc_add_in(s, w->ring_fd[R_B_TX], 1);
            t_svc_add_out(s, w->ring_fd[R_B_RX], w->wake_fd, 1);
        }
    }
    ipc_ring_prod_init(&w->a_tx, w->sh[R_A_TX], w->a.wake_fd);
    ipc_ring_prod_init(&w->a_inj, w->sh[R_A_INJ], w->a.wake_fd);
    ipc_ring_prod_init(&w->b_tx, w->sh[R_B_TX], w->b.wake_fd);
    TRY(t_svc_start(&w->a, bin, &err));
    TRY(t_svc_start(&w->b, bin, &err));
    for (int i = 0; i < 2; i++) {
        int r = t_svc_wait_ready(svc[i], 5000);
        if (r != 1) {
            fprintf(stderr, "tap_wire: %s %s\n", svc[i]->name, r == 0 ? "not ready after 5 s" : "died during start");
            return -1;
        }
    }
    /* We keep the TAP fds, as the supervisor does, for restarts. */
    return 0;
#undef TRY
}

/* kill -9 driver A under traffic; reclaim; start its successor. */
static int restart_a(struct wire *w)
{
    struct ipc_err err = {{0}};
    uint64_t t0 = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
    int st = t_svc_stop(&w->a, SIGKILL, 2000);
    if (st < 0 || !WIFSIGNALED(st)) {
        fprintf(stderr, "tap_wire: driver-a did not die of SIGKILL (status %#x)\n", st);
        return -1;
    }
    struct ipc_ring_ref rings[3] = {ipc_ring_ref_take(w->sh[R_A_RX]), ipc_ring_ref_take(w->sh[R_A_TX]), ipc_ring_ref_take(w->sh[R_A_INJ])};
    int n = ipc_pool_reclaim(&w->pool, W_OWNER_A, rings, 3);
    if (n < 0 || t_svc_restart(&w->a, w->bin, &err) < 0 || t_svc_wait_ready(&w->a, 5000) != 1) {
        fprintf(stderr, "tap_wire: restarting driver-a: %s\n", err.msg[0] ? err.msg : "not ready");
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t1 = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
    w->restarts++;
    printf("restart: driver-a killed, %d buffers reclaimed, successor pid %d ready in %llu us\n", n, (int)w->a.pid,
           (unsigned long long)(t1 - t0));
    fflush(stdout);
    return 0;
}

/* Forward until SIGTERM / SIGINT or a driver dies. Returns 0, or -1 if a driver died. */
static int run(struct wire *w, int sig_fd)
{
    struct ipc_ring_cons *in[2] = {&w->a_rx, &w->b_rx};
    for (;;) {
        uint32_t n = fwd(w, &w->a_rx, &w->b_tx) + fwd(w, &w->b_rx, &w->a_tx);
        ipc_wake_flush(&w->ws);
        if (n)
            continue;
        if (!ipc_wake_arm(in, 2))
            continue;
        struct pollfd p[4] = {
            {.fd = w->wake_fd, .events = POLLIN},
            {.fd = sig_fd, .events = POLLIN},
            {.fd = w->a.pidfd, .events = POLLIN},
            {.fd = w->b.pidfd, .events = POLLIN},
        };
        int r = poll(p, 4, 250);
        ipc_wake_disarm(in, 2);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0)
            continue;
        if (p[0].revents & POLLIN) {
            uint64_t v;
            ssize_t k = read(w->wake_fd, &v, sizeof(v));
            (void)k;
        }
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sig_fd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGUSR1) {
                if (restart_a(w) < 0)
                    return -1;
                continue;
            }
            return 0;
        }
        if ((p[2].revents | p[3].revents) & POLLIN) {
            fprintf(stderr, "tap_wire: driver %s exited under traffic\n", p[2].revents ? "a" : "b");
            return -1;
        }
    }
}

int main(int argc, char **argv)
{
    const char *ns[2] = {NULL, NULL}, *ifn[2] = {NULL, NULL};
    const char *bin = "build/bin/rr-tap", *offl = "csum,tso4,tso6";
    unsigned mtu = 1500, rx_inflight = 0, poll_us = 0, nbufs = 16384;
    int ready_fd = -1, do_inject = 0;
    static const struct option opts[] = {
        {"ns-a", 1, 0, 'a'},     {"ns-b", 1, 0, 'b'},   {"if-a", 1, 0, 'A'},  {"if-b", 1, 0, 'B'},
        {"offloads", 1, 0, 'o'}, {"mtu", 1, 0, 'm'},    {"rx-inflight", 1, 0, 'r'}, {"poll-us", 1, 0, 'p'},
        {"bufs", 1, 0, 'n'},     {"inject", 0, 0, 'i'}, {"ready-fd", 1, 0, 'R'}, {"bin", 1, 0, 'x'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'a': ns[0] = optarg; break;
        case 'b': ns[1] = optarg; break;
        case 'A': ifn[0] = optarg; break;
        case 'B': ifn[1] = optarg; break;
        case 'o': offl = optarg; break;
        case 'm': mtu = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'r': rx_inflight = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'p': poll_us = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'n': nbufs = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'i': do_inject = 1; break;
        case 'R': ready_fd = atoi(optarg); break;
        case 'x': bin = optarg; break;
        default: usage();
        }
    }
    long offloads = t_offloads_parse(offl);
    if (!ifn[0] || !ifn[1] || offloads < 0)
        usage();

    t_reserve_fd3();
    if (ready_fd >= 0)
        fcntl(ready_fd, F_SETFD, FD_CLOEXEC);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sig_fd < 0) {
        perror("tap_wire: signalfd");
        return 111;
    }

    static struct wire w;
    w.bin = bin;
    if (setup(&w, ns, ifn, offloads, mtu, rx_inflight, poll_us, nbufs, bin) < 0) {
        t_svc_stop(&w.a, SIGKILL, 1000);
        t_svc_stop(&w.b, SIGKILL, 1000);
        return 111;
    }
    if (do_inject && inject(&w) < 0) {
        fprintf(stderr, "tap_wire: could not inject\n");
        return 111;
    }
    printf("ready: driver-a pid %d, driver-b pid %d\n", (int)w.a.pid, (int)w.b.pid);
    fflush(stdout);
    if (ready_fd >= 0) {
        ssize_t k = write(ready_fd, "ready\n", 6);
        (void)k;
        close(ready_fd);
    }

    int fail = run(&w, sig_fd) < 0;

    /* Stop both drivers, then take what they sent while stopping. */
    int st_a = t_svc_stop(&w.a, SIGTERM, 5000);
    int st_b = t_svc_stop(&w.b, SIGTERM, 5000);
    for (int i = 0; i < 2; i++) {
        int st = i ? st_b : st_a;
        int ok = st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
        printf("exit %s: %s (status %#x)\n", i ? "driver-b" : "driver-a", ok ? "ok" : "FAILED", st);
        fail |= !ok;
    }
    ipc_buf bufs[W_BURST];
    uint32_t n;
    while ((n = ipc_ring_recv(&w.a_rx, &w.pool, bufs, W_BURST)) > 0)
        ipc_pool_free(&w.pool, bufs, n);
    while ((n = ipc_ring_recv(&w.b_rx, &w.pool, bufs, W_BURST)) > 0)
        ipc_pool_free(&w.pool, bufs, n);

    t_print_counters(stdout, "A", w.a.stats);
    t_print_counters(stdout, "B", w.b.stats);
    for (int r = 0; r < R_N; r++)
        t_print_ring(stdout, ring_names[r], w.sh[r]);
    printf("wire fwd_pkts %llu\nwire fwd_drops %llu\n", (unsigned long long)w.fwd_pkts,
           (unsigned long long)w.fwd_drops);
    if (do_inject)
        fail |= check_inject(&w);

    /* Census: with both drivers gone and our caches flushed, every buffer is
     * free or in a ring; nobody holds any. */
    ipc_pool_flush(&w.pool);
    struct ipc_census cs;
    struct ipc_ring_ref refs[R_N];
    for (int r = 0; r < R_N; r++)
        refs[r] = ipc_ring_ref_take(w.sh[r]);
    int cr = ipc_pool_census(&w.pool, refs, R_N, &cs);
    int balanced = cr == 0 && cs.held == 0 && cs.kernel == 0 && cs.free + cs.in_rings == cs.total;
    printf("census: total %u free %u in_rings %u held %u (a %u b %u wire %u) kernel %u lost %u dup %u bad_owner %u: "
           "%s\n",
           cs.total, cs.free, cs.in_rings, cs.held, cs.held_by[W_OWNER_A], cs.held_by[W_OWNER_B],
           cs.held_by[W_OWNER], cs.kernel, cs.lost, cs.dup, cs.bad_owner, balanced ? "ok" : "FAILED");
    fail |= !balanced;
    printf("result: %s\n", fail ? "FAIL" : "PASS");
    return fail ? 1 : 0;
}
