/* SPDX-License-Identifier: MIT */
/*
 * bench/xsksplit.c: bench/forward's "twoxsk" mode: the floor of a design with
 * two address spaces on the path (issue 49, "Floor first"). One driver
 * process serves both AF_XDP ports, as bench/xskfwd.c does (its sockets,
 * fill, completion and kick code, included from there); a second process,
 * the router, forwards, and between them are the project's own rings
 * (ipc/ring.h) and wake-ups (ipc/wake.h). The UMEM is one shared mapping.
 *
 *   xsksplit DEV_A PEER_MAC_A DEV_B PEER_MAC_B
 *
 * The driver moves what its RX rings hold into a ring to the router, one per
 * port, and what the router's rings back hold into the TX rings. The router
 * does to each frame what xskfwd does (the look-up: the other port; the
 * rewrite and TTL: fwd_ipv4_hop) and nothing more. A handle carries the UMEM
 * frame, the data's offset in it and the length, so that neither side keeps
 * metadata elsewhere: this is the least a two-process design can carry. A
 * frame the router drops goes back with length 0, to the driver's free list.
 *
 * Sleeping: the driver, when a loop moved nothing, arms the wake words of
 * the router's rings and poll()s its sockets and its eventfd; the router
 * arms the driver's rings and blocks on its own eventfd. A producer flushes
 * its wake set once per loop (one fence, at most one eventfd write).
 * Neither busy-polls. Both processes inherit the caller's CPU (taskset).
 * On SIGTERM each prints to stderr the packets it moved, its eventfd writes
 * and its sleeps.
 */
#define XSKFWD_NO_MAIN
#pragma GCC diagnostic ignored "-Wunused-function" /* xskfwd.c's own forward() */
#include "xskfwd.c"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "ipc/ring.h"
#include "ipc/wake.h"

#define RING_SIZE 4096u /* bench/forward's ring_size for ringrouter */
#define H_IDX_BITS 14u  /* N_FRAMES */
#define H_LEN_BITS 11u
#define H_OFF_SHIFT 4u /* the data's offset in its frame, in 16-byte units: 7 bits */

_Static_assert(N_FRAMES <= 1u << H_IDX_BITS, "frame index fits the handle");

static uint32_t h_make(uint64_t addr, uint32_t len)
{
    uint64_t off = addr & (FRAME_SIZE - 1);
    if (len >= 1u << H_LEN_BITS || off & ((1u << H_OFF_SHIFT) - 1))
        die("handle of", "a received frame", EINVAL); /* copy mode: 256 bytes of headroom, frames under 2 KB */
    return (uint32_t)(addr / FRAME_SIZE) | len << H_IDX_BITS |
           (uint32_t)(off >> H_OFF_SHIFT) << (H_IDX_BITS + H_LEN_BITS);
}

static uint64_t h_addr(uint32_t h)
{
    return (uint64_t)(h & ((1u << H_IDX_BITS) - 1)) * FRAME_SIZE + ((uint64_t)(h >> (H_IDX_BITS + H_LEN_BITS)) << H_OFF_SHIFT);
}

static uint32_t h_len(uint32_t h)
{
    return h >> H_IDX_BITS & ((1u << H_LEN_BITS) - 1);
}

/* to_rt[p]: driver -> router, frames received on port p; to_drv[p]: router
 * -> driver, frames to send on port p. */
static struct ipc_ring_shared *to_rt[2], *to_drv[2];
static int efd_drv, efd_rt;

/* The router: from each port's ring to the other's, one hop each. */
static int router_main(struct port *port)
{
    struct ipc_ring_cons in[2];
    struct ipc_ring_prod out[2];
    for (int i = 0; i < 2; i++) {
        ipc_ring_cons_init(&in[i], to_rt[i]);
        ipc_ring_prod_init(&out[i], to_drv[i], efd_drv);
    }
    struct ipc_ring_cons *arm[2] = {&in[0], &in[1]};
    struct ipc_wake_set ws;
    ipc_wake_set_init(&ws);
    uint64_t pkts = 0, writes = 0, sleeps = 0;
    while (!stop) {
        uint32_t moved = 0, held = 0;
        for (int i = 0; i < 2; i++) {
            struct port *o = &port[1 - i];
            uint32_t ii, oi, n = ipc_ring_peek(&in[i], FWD_BATCH, &ii);
            n = ipc_ring_reserve(&out[1 - i], n, &oi);
            held += ipc_ring_avail_cached(&in[i]) - n;
            for (uint32_t k = 0; k < n; k++) {
                uint32_t h = ipc_ring_cons_slot(&in[i], ii + k);
                uint64_t a = h_addr(h);
                if (fwd_ipv4_hop(xsk_umem__get_data(area, a), h_len(h), o->peer_mac, o->mac) < 0)
                    h &= ~(((1u << H_LEN_BITS) - 1) << H_IDX_BITS); /* length 0: back to the free list */
                *ipc_ring_prod_slot(&out[1 - i], oi + k) = h;
            }
            if (n) {
                ipc_ring_release(&in[i], n);
                ipc_ring_submit(&out[1 - i], n);
                ipc_wake_mark(&ws, &out[1 - i]);
            }
            moved += n;
        }
        writes += ipc_wake_flush(&ws);
        pkts += moved;
        if (moved)
            continue;
        if (held) { /* the driver's rings are full: let it run */
            sched_yield();
            continue;
        }
        if (ipc_wake_arm(arm, 2)) {
            sleeps++;
            int r = ipc_wake_block(efd_rt, 100);
            if (r < 0 && r != -EINTR)
                die("eventfd", "of the router", -r);
            ipc_wake_disarm(arm, 2);
        }
    }
    fprintf(stderr, "xsksplit router: %llu packets, %llu wake-ups sent, %llu sleeps\n", (unsigned long long)pkts,
            (unsigned long long)writes, (unsigned long long)sleeps);
    return 0;
}

/* Driver: @p's RX ring into its ring to the router. */
static uint32_t drv_rx(struct port *p, struct ipc_ring_prod *r, struct ipc_wake_set *ws)
{
    /* libxdp's peek moves its cache by what it shows: show no more than fits. */
    uint32_t ri, oi, room = ipc_ring_free_count(r, FWD_BATCH);
    uint32_t n = xsk_ring_cons__peek(&p->rx, room < FWD_BATCH ? room : FWD_BATCH, &ri);
    if (!n)
        return 0;
    if (ipc_ring_reserve(r, n, &oi) != n)
        die("ring to the router of", p->dev, ENOSPC); /* room was counted above */
    for (uint32_t i = 0; i < n; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&p->rx, ri + i);
        *ipc_ring_prod_slot(r, oi + i) = h_make(d->addr, d->len);
    }
    xsk_ring_cons__release(&p->rx, n);
    p->fill_stock -= n;
    ipc_ring_submit(r, n);
    ipc_wake_mark(ws, r);
    return n;
}

/* Driver: the router's ring for @p into @p's TX ring; drops to the free list. */
static uint32_t drv_tx(struct port *p, struct ipc_ring_cons *r)
{
    uint32_t ri, ti, n = ipc_ring_peek(r, xsk_prod_nb_free(&p->tx, FWD_BATCH), &ri);
    if (n > FWD_BATCH)
        n = FWD_BATCH;
    if (!n)
        return 0;
    if (xsk_ring_prod__reserve(&p->tx, n, &ti) != n)
        die("TX ring of", p->dev, ENOSPC); /* room was counted above */
    uint32_t sent = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t h = ipc_ring_cons_slot(r, ri + i);
        if (!h_len(h)) {
            free_frames[n_free++] = h_addr(h) & ~(uint64_t)(FRAME_SIZE - 1);
            continue;
        }
        struct xdp_desc *t = xsk_ring_prod__tx_desc(&p->tx, ti + sent++);
        t->addr = h_addr(h);
        t->len = h_len(h);
    }
    ipc_ring_release(r, n);
    p->tx.cached_prod -= n - sent;
    xsk_ring_prod__submit(&p->tx, sent);
    return n;
}

static void ring_new(const char *name, struct ipc_ring_shared **sh)
{
    struct ipc_err err = {{0}};
    int fd;
    if (ipc_ring_create(name, RING_SIZE, 0, 1, 2, 0, &fd, sh, &err) != 0)
        die("ring", err.msg, EINVAL);
    close(fd); /* the mapping is shared and survives fork() */
}

int main(int argc, char **argv)
{
    struct port port[2] = {{0}};
    args_and_umem(argc, argv, "xsksplit", port, 1);
    ring_new("xsksplit-a-rt", &to_rt[0]);
    ring_new("xsksplit-b-rt", &to_rt[1]);
    ring_new("xsksplit-rt-a", &to_drv[0]);
    ring_new("xsksplit-rt-b", &to_drv[1]);
    if ((efd_drv = ipc_wake_eventfd()) < 0 || (efd_rt = ipc_wake_eventfd()) < 0)
        die("eventfd", "", errno);
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    pid_t parent = getpid(), rt = fork();
    if (rt < 0)
        die("fork", "the router", errno);
    if (rt == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
            return 1;
        return router_main(port);
    }
    struct xsk_umem *umem = NULL;
    port_open(&port[0], &umem, 1);
    port_open(&port[1], &umem, 0);
    struct ipc_ring_prod out[2];
    struct ipc_ring_cons in[2];
    for (int i = 0; i < 2; i++) {
        ipc_ring_prod_init(&out[i], to_rt[i], efd_rt);
        ipc_ring_cons_init(&in[i], to_drv[i]);
        fill(&port[i]);
    }
    struct ipc_ring_cons *arm[2] = {&in[0], &in[1]};
    struct ipc_wake_set ws;
    ipc_wake_set_init(&ws);
    printf("ready\n");
    fflush(stdout);
    struct pollfd pfd[3] = {{.fd = xsk_socket__fd(port[0].xsk), .events = POLLIN},
                            {.fd = xsk_socket__fd(port[1].xsk), .events = POLLIN},
                            {.fd = efd_drv, .events = POLLIN}};
    uint64_t pkts = 0, writes = 0, sleeps = 0;
    while (!stop) {
        uint32_t moved = 0;
        for (int i = 0; i < 2; i++)
            moved += drv_rx(&port[i], &out[i], &ws);
        writes += ipc_wake_flush(&ws);
        for (int i = 0; i < 2; i++)
            moved += drv_tx(&port[i], &in[i]);
        for (int i = 0; i < 2; i++) {
            kick(&port[i]);
            complete(&port[i]);
        }
        for (int i = 0; i < 2; i++)
            fill(&port[i]);
        pkts += moved;
        if (moved)
            continue;
        int busy = tx_unsent(&port[0]) || tx_unsent(&port[1]);
        if (!ipc_wake_arm(arm, 2))
            continue;
        sleeps++;
        int ready = poll(pfd, 3, busy ? 1 : 100);
        if (ready < 0 && errno != EINTR)
            die("poll", "", errno);
        if (ready == 0 && waitpid(rt, NULL, WNOHANG) == rt)
            die("the router process", "exited", ECHILD); /* nothing would forward: say so, not a silent zero */
        ipc_wake_disarm(arm, 2);
        uint64_t v;
        if (pfd[2].revents & POLLIN && read(efd_drv, &v, sizeof v) < 0 && errno != EAGAIN)
            die("eventfd", "of the driver", errno);
    }
    kill(rt, SIGTERM);
    waitpid(rt, NULL, 0);
    fprintf(stderr, "xsksplit driver: %llu frames moved (each counted in and out), %llu wake-ups sent, %llu sleeps\n",
            (unsigned long long)pkts, (unsigned long long)writes, (unsigned long long)sleeps);
    for (int i = 0; i < 2; i++)
        xsk_socket__delete(port[i].xsk);
    xsk_umem__delete(umem);
    return 0;
}
