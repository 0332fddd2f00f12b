/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_router.c: libFuzzer target over the router's whole
 * per-packet path: a burst of frames in (rt_input_burst), the router's
 * actions out (forwarded packets, ARP, ICMP, fragments, packets held for
 * ARP), with the ARP timers (rt_neigh_tick) run on a virtual clock.
 *
 * Fixture (built once): a real pool of F_NBUFS buffers (the router attached
 * as owner 2, a stand-in driver as owner 3, the supervisor for the census), a
 * FIB with connected, gateway, tbl8 (/25) and broken (unconfigured port)
 * routes, a neighbour table of 64 entries with static entries, and a context
 * with three ports (port 2 with MTU 576, so fragmentation and "fragmentation
 * needed" are reachable). IPv6 too: an IPv6 FIB sharing the IPv4 FIB's
 * readers' region (connected 2001:db8:P::/64 on port P, a /48 via a static
 * neighbour, a /56 via one that never answers, ::/0 nowhere, and a group
 * of those two gateways, as 198.51.100.0/24 has in IPv4), an IPv6
 * neighbour table, addresses 2001:db8:P::1/64 and fe80::P/64 on each port,
 * ND timers run with the ARP ones.
 *
 * Input format (every field optional: a short input just means less):
 *   byte 0     bits 0..2: packets in the burst - 1 (1..8)
 *              bits 3..6: clock advance, (v * v) * 20 ms
 *              bit  7:    run rt_neigh_tick after the burst
 *   per packet:
 *     byte     bits 0..1: ingress port (3: not configured); bit 2: a wild
 *              in_port (>= RT_MAX_PORTS); bit 3: virtio-net fields follow;
 *              bits 4..5: chain layout (0: one frame if it fits, 1: first
 *              frame split at a given length, 2: frames of a given size,
 *              3: frames of sizes taken from the input); bit 6: fix the
 *              IPv4 header checksum; bit 7: fix the ICMP checksum (both in
 *              the first frame, as far as it holds them), so that mutations
 *              get past the checksum checks
 *     2 bytes  frame length, big-endian (the last packet takes the rest)
 *     [10 B]   virtio-net fields: flags, gso_type, hdr_len, gso_size,
 *              csum_start, csum_offset (big-endian 16-bit)
 *     [2 B]    chain parameter for layouts 1 and 2
 *     bytes    the frame (layout 3: each frame preceded by its size byte)
 * Every chain the fuzzer builds is one ipc_pool_take() accepts, i.e. what a
 * driver may hand the router.
 *
 * Oracles, after every input:
 *   - every packet the router emits passes ipc_pool_take() as the driver
 *     (no bad frame or chain), names a configured egress port, and if IPv4
 *     has a valid header checksum and version/IHL;
 *   - the pool census balances (nothing lost, nothing duplicated), the
 *     driver holds nothing, and the router holds exactly the frames of the
 *     packets in the neighbour tables' pending queues (IPv4 and IPv6; each
 *     table's queued count matches them, and the ports' shares hold);
 *   - an IPv6 packet out of the router has version 6 and a payload length
 *     within what is sent;
 *   - ASan, UBSan (no recovery) and LeakSanitizer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/pool.h"
#include "tables/fib6_write.h"
#include "tables/fib_group.h"
#include "tables/fib_write.h"
#include "tables/neigh6_write.h"
#include "services/router/ecmp.h"
#include "services/router/icmp.h"
#include "services/router/nd.h"
#include "services/router/ipv4.h"
#include "services/router/neigh.h"
#include "tables/neigh_write.h"
#include "services/router/pkt.h"
#include "services/router/rt.h"

#define F_NBUFS 2048u
#define F_ROUTER 2u
#define F_DRIVER 3u
#define F_TXCAP (RT_BURST * 8) /* as rr-router's loop */
#define F_MAXPKTS 8u
#define F_LOW_WATER 512u /* fewer free buffers than this: expire every pending queue */
#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct {
    bool ready;
    int pool_fd, fib_fd, fib_rfd, neigh_fd, fib6_fd, neigh6_fd;
    struct ipc_pool sup, pool, drv;
    struct fib fibw, fibr;
    struct neigh_table neigh;
    struct fib6 fib6w, fib6r;
    struct neigh6_table neigh6;
    struct rt_counters ctr;
    struct rt_ctx ctx;
    ipc_buf txb[F_TXCAP];
    struct rt_burst tx;
    uint64_t now;
    bool verbose; /* FUZZ_ROUTER_VERBOSE=1: the counters each input moved */
} F;

#define F_CHECK(cond, ...)                                                                                             \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "fuzz_router: check failed: %s: ", #cond);                                                 \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

static void f_die(const char *what, const struct ipc_err *err)
{
    fprintf(stderr, "fuzz_router: %s: %s\n", what, err ? err->msg : "");
    abort();
}

static void f_route(uint32_t addr, unsigned len, uint32_t gw, uint16_t port)
{
    struct fib_nh nh = {.gw = gw, .port = port, .flags = 0};
    if (fib_add(&F.fibw, addr, len, &nh) != 0)
        f_die("fib_add", NULL);
}

static void f_static(uint32_t ip, uint8_t last, uint16_t port)
{
    const uint8_t mac[6] = {0x02, 0xf0, 0, 0, (uint8_t)port, last};
    if (neigh_add_static(&F.neigh, ip, mac, port) != 0)
        f_die("neigh_add_static", NULL);
}

/* 2001:db8:P::H (network order), or fe80::H when @ll. */
static void f_addr6(uint8_t a[16], bool ll, unsigned p, unsigned h)
{
    memset(a, 0, 16);
    a[0] = ll ? 0xfe : 0x20;
    a[1] = ll ? 0x80 : 0x01;
    if (!ll) {
        a[2] = 0x0d;
        a[3] = 0xb8;
        a[5] = (uint8_t)p;
    }
    a[14] = (uint8_t)(h >> 8);
    a[15] = (uint8_t)h;
}

static void f_route6(const uint8_t *pfx, unsigned len, const uint8_t *gw, uint16_t port)
{
    struct fib6_nh nh = {.port = port};
    if (gw)
        memcpy(nh.gw, gw, 16);
    if (fib6_add(&F.fib6w, pfx, len, &nh) != 0)
        f_die("fib6_add", NULL);
}

/* Free everything still queued for ARP and ND: the router's state between runs. */
static void f_flush_neigh(void)
{
    rt_neigh_free_pending(&F.ctx);
    rt_nd_free_pending(&F.ctx);
}

static void f_teardown(void)
{
    if (!F.ready)
        return;
    F.ready = false;
    ipc_pool_free(&F.pool, F.tx.bufs, F.tx.n);
    F.tx.n = 0;
    for (uint32_t i = 0; i <= F.neigh.mask; i++)
        while (F.neigh.e[i].ip)
            neigh_del(&F.neigh, &F.pool, F.neigh.e[i].ip);
    rt_nd_free_pending(&F.ctx);
    neigh_detach(&F.neigh);
    neigh6_detach(&F.neigh6);
    fib6_detach(&F.fib6r);
    fib6_detach(&F.fib6w);
    close(F.neigh6_fd);
    close(F.fib6_fd);
    fib_detach(&F.fibr);
    fib_detach(&F.fibw);
    ipc_pool_detach(&F.drv);
    ipc_pool_detach(&F.pool);
    ipc_pool_detach(&F.sup);
    close(F.neigh_fd);
    close(F.fib_fd);
    close(F.fib_rfd);
    close(F.pool_fd);
}

static void f_setup(void)
{
    struct ipc_err err = {{0}};
    if (ipc_pool_create("fuzz-rt-pool", F_NBUFS, IPC_FRAME_DEFAULT, &F.pool_fd, &err) != 0)
        f_die("ipc_pool_create", &err);
    if (ipc_pool_attach(&F.sup, F.pool_fd, IPC_OWNER_SUPERVISOR, &err) != 0 ||
        ipc_pool_attach(&F.pool, F.pool_fd, F_ROUTER, &err) != 0 ||
        ipc_pool_attach(&F.drv, F.pool_fd, F_DRIVER, &err) != 0)
        f_die("ipc_pool_attach", &err);
    struct fib_params p = {.max_prefixes = 1024, .tbl8_groups = 64, .max_nh = 64};
    if (fib_create("fuzz-rt-fib", &p, &F.fibw, &F.fib_fd, &F.fib_rfd, &err) != 0)
        f_die("fib_create", &err);
    if (fib_attach(&F.fibr, F.fib_fd, F.fib_rfd, 0, &err) != 0)
        f_die("fib_attach", &err);
    if (neigh_create("fuzz-rt-neigh", 64, &F.neigh, &F.neigh_fd, &err) != 0)
        f_die("neigh_create", &err);

    rt_ctx_init(&F.ctx, &F.pool, &F.fibr, &F.neigh, &F.ctr, NULL);
    F.ctx.nports = 3;
    for (unsigned i = 0; i < 3; i++) {
        struct rt_port *pt = &F.ctx.port[i];
        const uint8_t mac[6] = {0x02, 0, 0, 0, 0, (uint8_t)i};
        memcpy(pt->mac, mac, 6);
        pt->mtu = i == 2 ? 576 : 1500;
        pt->ip = IP4(10, i, 0, 1);
        pt->plen = 24;
    }
    /* Connected networks, gateways, a /25 (a tbl8 group), a host route, and
     * a route out of a port that is not configured. No default route. */
    f_route(IP4(10, 0, 0, 0), 24, 0, 0);
    f_route(IP4(10, 1, 0, 0), 24, 0, 1);
    f_route(IP4(10, 2, 0, 0), 24, 0, 2);
    f_route(IP4(10, 3, 0, 0), 16, IP4(10, 1, 0, 254), 1);
    f_route(IP4(172, 16, 0, 0), 12, IP4(10, 2, 0, 9), 2);
    f_route(IP4(192, 168, 1, 128), 25, IP4(10, 0, 0, 7), 0);
    f_route(IP4(192, 168, 7, 7), 32, IP4(10, 2, 0, 77), 2); /* gateway never resolves */
    f_route(IP4(10, 99, 0, 0), 16, 0, 5);
    /* ECMP: 198.51.100.0/24 over a resolved gateway and one that never
     * answers (which the groups then skip), weights 1 and 3. */
    const struct fib_nh mp[2] = {{.gw = IP4(10, 0, 0, 7), .port = 0}, {.gw = IP4(10, 2, 0, 77), .port = 2}};
    const uint16_t mpw[2] = {1, 3};
    if (fib_add_multi(&F.fibw, IP4(198, 51, 100, 0), 24, mp, mpw, 2) != 0)
        f_die("fib_add_multi", NULL);
    f_static(IP4(10, 0, 0, 7), 7, 0);
    f_static(IP4(10, 1, 0, 254), 254, 1);
    f_static(IP4(10, 2, 0, 9), 9, 2);
    f_static(IP4(10, 0, 0, 2), 2, 0);

    /* IPv6 (the supervisor's way: the IPv4 FIB's readers' region). */
    int rfd6 = -1;
    struct fib6_params p6 = {.max_prefixes = 1024, .tbl8_groups = 64, .max_nh = 64};
    if (fib6_create("fuzz-rt-fib6", &p6, F.fib_rfd, &F.fib6w, &F.fib6_fd, &rfd6, &err) != 0)
        f_die("fib6_create", &err);
    if (fib6_attach(&F.fib6r, F.fib6_fd, F.fib_rfd, 0, &err) != 0)
        f_die("fib6_attach", &err);
    if (neigh6_create("fuzz-rt-neigh6", 64, &F.neigh6, &F.neigh6_fd, &err) != 0)
        f_die("neigh6_create", &err);
    F.ctx.fib6 = &F.fib6r;
    F.ctx.neigh6 = &F.neigh6;
    uint8_t a6[16], gw6[16];
    for (unsigned i = 0; i < 3; i++) {
        struct rt_port *pt = &F.ctx.port[i];
        f_addr6(pt->a6[0].a, false, i, 1);
        pt->a6[0].plen = 64;
        f_addr6(pt->a6[1].a, true, 0, i + 1);
        pt->a6[1].plen = 64;
        pt->n6 = 2;
        pt->ll6 = 1;
        f_addr6(a6, false, i, 0);
        f_route6(a6, 64, NULL, (uint16_t)i);
    }
    f_addr6(a6, false, 0, 0);
    a6[5] = 0x30; /* 2001:db8:30::/48 via 2001:db8:1::fe, static */
    f_addr6(gw6, false, 1, 0xfe);
    f_route6(a6, 48, gw6, 1);
    const uint8_t mac6[6] = {0x02, 0xf6, 0, 0, 1, 0xfe};
    if (neigh6_add_static(&F.neigh6, gw6, mac6, 1) != 0)
        f_die("neigh6_add_static", NULL);
    a6[5] = 0x31; /* 2001:db8:31::/56 via fe80::77 on port 2: never answers */
    f_addr6(gw6, true, 0, 0x77);
    f_route6(a6, 56, gw6, 2);
    struct fib6_nh mp6[2] = {{.port = 1}, {.port = 2}}; /* 2001:db8:32::/48 over both of those */
    f_addr6(mp6[0].gw, false, 1, 0xfe);
    memcpy(mp6[1].gw, gw6, 16);
    a6[5] = 0x32;
    if (fib6_add_multi(&F.fib6w, a6, 48, mp6, NULL, 2) != 0)
        f_die("fib6_add_multi", NULL);

    F.tx = (struct rt_burst){.bufs = F.txb, .n = 0, .cap = F_TXCAP};
    F.now = 1000000000ull;
    rt_tb_init(&F.ctx.icmp_tb, F.ctx.cfg.icmp_interval_ns, F.ctx.cfg.icmp_burst, F.now);
    F.verbose = getenv("FUZZ_ROUTER_VERBOSE") != NULL;
    F.ready = true;
    atexit(f_teardown);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    f_setup();
    return 0;
}

/* ---- input reader ---- */

struct f_in {
    const uint8_t *p;
    size_t n;
};

static uint8_t f_u8(struct f_in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static uint16_t f_u16(struct f_in *in)
{
    uint16_t hi = f_u8(in);
    return (uint16_t)(hi << 8 | f_u8(in));
}

/* Room in a frame: the first keeps the pool's headroom, the others start at 0. */
static uint32_t f_room(bool first)
{
    return first ? IPC_FRAME_DEFAULT - IPC_HEADROOM : IPC_FRAME_DEFAULT;
}

/*
 * Build one packet of @len bytes from @in as a chain laid out per @layout.
 * Returns the head, or IPC_BUF_NONE if the pool ran dry (nothing is kept).
 */
static ipc_buf f_build(struct f_in *in, uint32_t len, unsigned layout, uint16_t param)
{
    ipc_buf frames[IPC_CHAIN_MAX];
    unsigned nf = 0;
    uint32_t done = 0;
    while (nf == 0 || done < len) {
        if (nf == IPC_CHAIN_MAX)
            break; /* the rest does not fit a chain: the packet is shorter */
        bool first = nf == 0;
        uint32_t room = f_room(first), want = len - done;
        switch (layout) {
        case 1: /* first frame split at param */
            if (first)
                want = param % (room + 1);
            break;
        case 2: /* frames of param bytes (at least 1) */
            want = param % room + 1;
            break;
        case 3: /* sizes from the input */
            want = f_u8(in) * 8u;
            break;
        default:
            break;
        }
        if (want > room)
            want = room;
        if (want > len - done)
            want = len - done;
        /* The last frame takes what is left when the chain would be too long. */
        if (nf == IPC_CHAIN_MAX - 1)
            want = len - done < room ? len - done : room;
        ipc_buf b;
        if (ipc_pool_alloc(&F.drv, &b, 1) != 1) {
            if (nf)
                ipc_pool_free(&F.drv, frames, nf);
            return IPC_BUF_NONE;
        }
        struct ipc_meta *m = ipc_pool_meta(&F.drv, b);
        m->off = first ? (uint16_t)IPC_HEADROOM : 0;
        m->len = (uint16_t)want;
        m->next = IPC_BUF_NONE;
        uint8_t *d = ipc_pool_data(&F.drv, b);
        uint32_t have = (uint32_t)(in->n < want ? in->n : want);
        memcpy(d, in->p, have);
        memset(d + have, 0, want - have);
        in->p += have;
        in->n -= have;
        if (nf)
            ipc_pool_meta(&F.drv, frames[nf - 1])->next = b;
        frames[nf++] = b;
        done += want;
        if (layout == 3 && in->n == 0 && done < len)
            len = done; /* the input ran out */
    }
    struct ipc_meta *h = ipc_pool_meta(&F.drv, frames[0]);
    h->pkt_len = done;
    return frames[0];
}

/* Make the checksums of an IPv4 frame right, as far as the first frame holds them. */
static void f_fix_csums(ipc_buf b, bool ip_sum, bool icmp_sum)
{
    struct ipc_meta *m = ipc_pool_meta(&F.drv, b);
    uint8_t *f = ipc_pool_data(&F.drv, b);
    if (m->len < PKT_ETH_HLEN + PKT_IP_HLEN || pkt_get16(f + 12) != PKT_ETH_P_IP)
        return;
    uint8_t *ip = f + PKT_ETH_HLEN;
    unsigned ihl = (ip[0] & 15u) * 4;
    if (ihl < PKT_IP_HLEN || PKT_ETH_HLEN + ihl > m->len)
        return;
    uint32_t tot = pkt_get16(ip + PKT_IP_TOTLEN);
    if (icmp_sum && ip[PKT_IP_PROTO] == PKT_IP_PROTO_ICMP && tot >= ihl + RT_ICMP_HLEN &&
        PKT_ETH_HLEN + tot <= m->len) {
        uint8_t *icmp = ip + ihl;
        pkt_put16(icmp + 2, 0);
        pkt_put16(icmp + 2, pkt_csum(icmp, tot - ihl));
    }
    if (ip_sum) {
        pkt_put16(ip + PKT_IP_CSUM, 0);
        pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, ihl));
    }
}

/* ---- oracles ---- */

static uint32_t f_chain_frames(ipc_buf b)
{
    uint32_t k = 0;
    for (; b != IPC_BUF_NONE && k <= IPC_CHAIN_MAX; k++)
        b = ipc_pool_meta(&F.pool, b)->next;
    return k;
}

/* What the router emitted: check it as its driver would, then free it. */
static void f_drain_tx(void)
{
    uint32_t n = F.tx.n;
    if (!n)
        return;
    ipc_buf out[F_TXCAP];
    memcpy(out, F.tx.bufs, n * sizeof(ipc_buf));
    F.tx.n = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct ipc_meta *m = ipc_pool_meta(&F.pool, out[i]);
        F_CHECK(m->out_port < F.ctx.nports, "packet %u of %u: out_port %u", i, n, m->out_port);
        const uint8_t *f = ipc_pool_data(&F.pool, out[i]);
        F_CHECK(m->len >= PKT_ETH_HLEN, "packet %u: first frame of %u bytes", i, m->len);
        F_CHECK(memcmp(f + 6, F.ctx.port[m->out_port].mac, 6) == 0, "packet %u: source MAC is not port %u's", i,
                m->out_port);
        if (pkt_get16(f + 12) == PKT_ETH_P_IP) {
            F_CHECK(m->len >= PKT_ETH_HLEN + PKT_IP_HLEN, "packet %u: IPv4 frame of %u bytes", i, m->len);
            const uint8_t *ip = f + PKT_ETH_HLEN;
            unsigned ihl = (ip[0] & 15u) * 4;
            F_CHECK(ip[0] >> 4 == 4 && ihl >= PKT_IP_HLEN && PKT_ETH_HLEN + ihl <= m->len, "packet %u: vihl %#x", i,
                    ip[0]);
            F_CHECK(pkt_csum(ip, ihl) == 0, "packet %u: bad IPv4 header checksum out of the router", i);
            if (m->vnet.gso_type == 0)
                F_CHECK(pkt_get16(ip + PKT_IP_TOTLEN) <= pkt_total_len(m) - PKT_ETH_HLEN,
                        "packet %u: total length %u > %u bytes sent", i, pkt_get16(ip + PKT_IP_TOTLEN),
                        pkt_total_len(m) - PKT_ETH_HLEN);
            F_CHECK(ip[PKT_IP_TTL] > 0, "packet %u: TTL 0 out of the router", i);
        }
        if (pkt_get16(f + 12) == PKT_ETH_P_IPV6) {
            F_CHECK(m->len >= PKT_ETH_HLEN + PKT_IP6_HLEN, "packet %u: IPv6 frame of %u bytes", i, m->len);
            const uint8_t *ip6 = f + PKT_ETH_HLEN;
            F_CHECK(ip6[0] >> 4 == 6, "packet %u: IPv6 version %u", i, ip6[0] >> 4);
            if (m->vnet.gso_type == 0)
                F_CHECK(PKT_IP6_HLEN + pkt_get16(ip6 + PKT_IP6_PLEN) <= pkt_total_len(m) - PKT_ETH_HLEN,
                        "packet %u: payload length %u past %u bytes sent", i, pkt_get16(ip6 + PKT_IP6_PLEN),
                        pkt_total_len(m) - PKT_ETH_HLEN);
        }
    }
    /* The driver takes them the way it takes a ring's handles. */
    struct ipc_ring_shared ctr;
    memset(&ctr, 0, sizeof(ctr));
    uint32_t good = ipc_pool_take(&F.drv, F_ROUTER, out, n, &ctr);
    F_CHECK(good == n, "the driver refused %u of %u packets the router emitted (bad handle %llu owner %llu frame %llu "
                       "chain %llu)",
            n - good, n, (unsigned long long)ctr.drop_bad_handle, (unsigned long long)ctr.drop_bad_owner,
            (unsigned long long)ctr.drop_bad_frame, (unsigned long long)ctr.drop_bad_chain);
    ipc_pool_free(&F.drv, out, good);
}

/* Returns the number of free buffers. */
static uint32_t f_census(void)
{
    uint32_t pend_pkts = 0, pend_frames = 0, pend_port[RT_MAX_PORTS] = {0};
    for (uint32_t i = 0; i <= F.neigh.mask; i++) {
        const struct neigh_entry *e = &F.neigh.e[i];
        if (!e->ip)
            continue;
        F_CHECK(e->qlen <= NEIGH_QMAX, "entry %u: qlen %u", i, e->qlen);
        if (e->port < RT_MAX_PORTS)
            pend_port[e->port] += e->qlen;
        for (uint16_t k = 0; k < e->qlen; k++) {
            pend_pkts++;
            pend_frames += f_chain_frames(e->q[k]);
        }
    }
    F_CHECK(pend_pkts == F.neigh.sh->queued, "%u packets in pending queues, the table says %u", pend_pkts,
            F.neigh.sh->queued);
    F_CHECK(F.ctr.pending == F.neigh.sh->queued, "pending gauge %llu, queued %u", (unsigned long long)F.ctr.pending,
            F.neigh.sh->queued);
    uint32_t pend6 = 0;
    for (uint32_t i = 0; i <= F.neigh6.mask; i++) {
        const struct neigh6_entry *e = &F.neigh6.e[i];
        if (!e->used)
            continue;
        F_CHECK(e->qlen <= NEIGH_QMAX, "IPv6 entry %u: qlen %u", i, e->qlen);
        if (e->port < RT_MAX_PORTS)
            pend_port[e->port] += e->qlen;
        for (uint16_t k = 0; k < e->qlen; k++) {
            pend6++;
            pend_frames += f_chain_frames(e->q[k]);
        }
    }
    F_CHECK(pend6 == F.neigh6.sh->queued, "%u packets in IPv6 pending queues, the table says %u", pend6,
            F.neigh6.sh->queued);
    F_CHECK(F.ctr.pending6 == pend6, "pending_nd gauge %llu, queued %u", (unsigned long long)F.ctr.pending6, pend6);
    /* Each port's share is what its neighbours hold, and never past it. */
    for (unsigned p = 0; p < RT_MAX_PORTS; p++) {
        F_CHECK(F.ctx.pending_port[p] == pend_port[p], "port %u: %u pending counted, %u queued", p,
                F.ctx.pending_port[p], pend_port[p]);
        F_CHECK(pend_port[p] <= rt_pending_share(&F.ctx),
                "port %u: %u pending, past its share", p, pend_port[p]);
    }
    ipc_pool_flush(&F.pool);
    ipc_pool_flush(&F.drv);
    struct ipc_census c;
    int ret = ipc_pool_census(&F.sup, NULL, 0, &c);
    F_CHECK(ret == 0, "census %d: lost %u dup %u bad owner %u", ret, c.lost, c.dup, c.bad_owner);
    F_CHECK(c.held_by[F_DRIVER] == 0, "the driver holds %u buffers", c.held_by[F_DRIVER]);
    F_CHECK(c.held_by[F_ROUTER] == pend_frames, "the router holds %u buffers, %u are in pending queues",
            c.held_by[F_ROUTER], pend_frames);
    F_CHECK(c.free + c.held == F_NBUFS, "free %u + held %u != %u", c.free, c.held, F_NBUFS);
    return c.free;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!F.ready)
        f_setup();
    struct f_in in = {data, size};
    uint8_t h = f_u8(&in);
    unsigned npkts = (h & 7u) + 1;
    unsigned adv = (h >> 3) & 15u;
    F.now += (uint64_t)adv * adv * 20000000ull + 1000; /* up to 4.5 s per input */

    ipc_buf burst[F_MAXPKTS];
    uint32_t nb = 0;
    for (unsigned k = 0; k < npkts && (k == 0 || in.n > 0); k++) {
        uint8_t ctl = f_u8(&in);
        uint32_t len = f_u16(&in);
        if (k == npkts - 1 || len > in.n)
            len = (uint32_t)in.n; /* the last packet takes the rest */
        struct ipc_vnet v = {0};
        if (ctl & 8u) {
            v.flags = f_u8(&in);
            v.gso_type = f_u8(&in);
            v.hdr_len = f_u16(&in);
            v.gso_size = f_u16(&in);
            v.csum_start = f_u16(&in);
            v.csum_offset = f_u16(&in);
            if (len > in.n)
                len = (uint32_t)in.n;
        }
        unsigned layout = (ctl >> 4) & 3u;
        uint16_t param = 0;
        if (layout == 1 || layout == 2) {
            param = f_u16(&in);
            if (len > in.n)
                len = (uint32_t)in.n;
        }
        ipc_buf b = f_build(&in, len, layout, param);
        if (b == IPC_BUF_NONE)
            break;
        struct ipc_meta *m = ipc_pool_meta(&F.drv, b);
        m->in_port = (ctl & 4u) ? (uint16_t)(RT_MAX_PORTS + (ctl >> 6) * 0x5555u) : (uint16_t)(ctl & 3u);
        m->out_port = IPC_PORT_NONE;
        m->vnet = v;
        f_fix_csums(b, ctl & 0x40u, ctl & 0x80u);
        burst[nb++] = b;
    }

    /* Hand the burst to the router as a ring would. */
    struct ipc_ring_shared ctr;
    memset(&ctr, 0, sizeof(ctr));
    uint32_t good = ipc_pool_take(&F.pool, F_DRIVER, burst, nb, &ctr);
    F_CHECK(good == nb, "the router refused %u of %u packets the fuzzer built (frame %llu chain %llu)", nb - good,
            nb, (unsigned long long)ctr.drop_bad_frame, (unsigned long long)ctr.drop_bad_chain);

    struct rt_counters before = F.ctr;
    /* The router loop's batch: one FIB read section around the burst, its
     * flush and the timers. */
    fib_read_begin(&F.fibr);
    rt_input_burst(&F.ctx, burst, good, F.now, &F.tx);
    uint32_t emitted = F.tx.n;
    f_drain_tx();
    if (h & 0x80u) {
        rt_neigh_tick(&F.ctx, F.now, &F.tx);
        rt_nd_tick(&F.ctx, F.now, &F.tx);
        rt_ecmp_tick(&F.ctx, F.now, &F.tx);
        f_drain_tx();
    }
    fib_read_end(&F.fibr);
    uint32_t nfree = f_census();
    if (F.verbose) {
        fprintf(stderr, "fuzz_router: %u packets in, %u out:", good, emitted);
        for (unsigned i = 0; i < RT_CTR_MAX; i++)
            if (F.ctr.c[i] != before.c[i])
                fprintf(stderr, " %s +%llu", rt_ctr_names[i], (unsigned long long)(F.ctr.c[i] - before.c[i]));
        fprintf(stderr, "; pending %llu, free %u\n", (unsigned long long)F.ctr.pending, nfree);
    }

    /* Keep the pool from running dry across runs: let every unresolved
     * neighbour time out (the router's own way of freeing its queues). */
    if (nfree < F_LOW_WATER) {
        for (unsigned i = 0; i < 8 && (F.neigh.sh->queued || F.neigh6.sh->queued); i++) {
            F.now += 2000000000ull;
            fib_read_begin(&F.fibr);
            rt_neigh_tick(&F.ctx, F.now, &F.tx);
            rt_nd_tick(&F.ctx, F.now, &F.tx);
            rt_ecmp_tick(&F.ctx, F.now, &F.tx);
            f_drain_tx();
            fib_read_end(&F.fibr);
        }
        f_census();
        if (F.neigh.sh->queued || F.neigh6.sh->queued) /* should not happen: max_retries is 3 */
            f_flush_neigh();
        f_census();
    }
    return 0;
}
