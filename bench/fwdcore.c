/* SPDX-License-Identifier: MIT */
/*
 * bench/fwdcore.c: bench/forward-core's harness. The router's per-packet path,
 * rt_input_burst() (services/router/ipv4.c), alone: no rings, no drivers, no
 * process loop. Against it, in the same run, a minimal reference forwarder
 * written here: the floor of doing the same work by hand.
 *
 * Set-up (like the router's at run time): a real pool (the bench attached as
 * service 2), a FIB and a neighbour table in their shared-memory regions (FIB
 * read through a reader mapping, slot 0), four ports 10.p.0.1/24 with MTU
 * 1500, and their connected /24s. Sixteen flows arrive on port 0 and leave
 * on ports 1..3: flow f goes to 172.16.f.7, routed by 172.16.f.0/24 via the
 * gateway 10.p.0.(10+f) on port p = 1 + f % 3, so 16 destinations, 16 next
 * hops, 16 neighbours, each a static entry: everything is resolved. (The
 * reference keys its MACs by FIB next-hop index, as DPDK's l3fwd does; one
 * gateway per flow keeps that a 1:1 map.) Frames: 64 bytes on the
 * wire (60 here, no FCS): Ethernet, IPv4 (20 bytes, TTL 64, valid checksum),
 * UDP, 18 bytes of payload.
 *
 * A burst is 32 such frames in the same 32 buffers every time, frame k of
 * flow k % 16: the flows interleave, so rt_input_burst's per-burst route and
 * neighbour caches (last destination, last next hop) never hit: every
 * packet pays a FIB lookup and a neighbour lookup, the worst case for them.
 *
 * Timing: rdtsc (lfence-fenced; this CPU has no rdtscp) around each
 * rt_input_burst() call and the FIB read section the router loop holds
 * around it (the reference opens one too), minus the measured cost of an empty timed region.
 * Before each burst, untimed, the 32 frames are re-copied from their
 * templates (60-byte memcpy, meta len/ports reset): the restore is excluded
 * from the timing, not subtracted. Packets are therefore in L1 when the
 * burst starts, like frames a driver has just touched. A run alternates
 * chunks of 1000 bursts of ours and of the reference; its figure is the
 * median over its chunks of each chunk's TSC cycles per packet. Three runs;
 * the table shows the median and min - max of the three.
 *
 * Checks: every burst must forward all 32 (tx.n == 32), and once per run
 * ours and the reference must produce byte-identical frames on the same
 * egress ports.
 *
 * IPv6, in the same run: the same 16 flows as 82-byte UDP frames (the
 * smallest with a 16-byte payload), through the same ports, a /48 per flow
 * via a gateway, static neighbours; checked once per run (port, MAC, hop
 * limit) and timed in the same alternation.
 *
 * --sandbox: after set-up, install the router's seccomp filter, both stages
 * (ipc/sandbox.h), in this process, as rr-router runs: the figure of the
 * same code under the filter (docs/security.md, "Cost").
 *
 * --zones: instead, the cost of a copy between trust zones
 * (docs/security.md, "Trust zones"), interleaved chunk by chunk with the
 * one-zone path: the 64-byte burst routed as above, then (cross) each
 * packet moved into the egress ports' zone as the router loop does
 * (rt_zone_move: a buffer of the other pool, the copy, the original
 * freed); and the move alone of 1,500-byte frames and of 64,000-byte GSO
 * chains (32 frames), whose one-zone path touches the same headers as a
 * 64-byte frame's. bench/forward prints its metric lines.
 */
#include <pcap/pcap.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc/capture.h"
#include "ipc/trace.h"
#include "ipc/pool.h"
#include "ipc/sandbox.h"
#include "tables/fib6_write.h"
#include "tables/fib_write.h"
#include "tables/neigh6_write.h"
#include "services/router/ipv4.h"
#include "services/router/neigh.h"
#include "tables/neigh_write.h"
#include "services/router/pkt.h"
#include "services/router/rt.h"
#include "services/router/rt_trace.h"
#include "bench/stats.h"

#define NFLOWS 16u
#define BURST 32u
#define FRAME_LEN 60u /* 64 on the wire with the FCS */
#define FRAME6_LEN 78u /* IPv6's smallest UDP frame here: 40 + 8 + 16 bytes of payload */
#define NPORTS 4u
#define SELF 2u
#define MAX_RUNS 15u
#define CHUNK 1000u
#define NOW_NS 1000000000ull
#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

static inline uint64_t t_tsc_begin(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
    return (uint64_t)hi << 32 | lo;
}

static inline uint64_t t_tsc_end(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return (uint64_t)hi << 32 | lo;
}

static double t_tsc_hz(void)
{
    double best = 0;
    for (int i = 0; i < 3; i++) {
        double t0 = t_now();
        uint64_t c0 = t_tsc_begin();
        while (t_now() - t0 < 0.05)
            ;
        uint64_t c1 = t_tsc_end();
        double hz = (double)(c1 - c0) / (t_now() - t0);
        best = hz > best ? hz : best;
    }
    return best;
}

static void t_die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_fwdcore: %s: %s\n", what, msg);
    exit(1);
}

/* ---- the world ---- */

struct t_world {
    int pool_fd, fib_fd, fib_rfd, neigh_fd;
    struct ipc_pool pool;
    struct fib fibw, fib;
    struct neigh_table neigh;
    struct rt_counters ctr;
    struct rt_ctx ctx;
    ipc_buf bufs[BURST];
    uint8_t tmpl[BURST][FRAME_LEN];
    /* IPv6: the same 16 flows, in their own buffers, through the same ports. */
    int fib6_fd, fib6_rfd, neigh6_fd;
    struct fib6 fib6w, fib6;
    struct neigh6_table neigh6;
    ipc_buf bufs6[BURST];
    uint8_t tmpl6[BURST][FRAME6_LEN];
    ipc_buf txb[4 * BURST];
    struct rt_burst tx;
    /* The reference forwarder's own next-hop table: FIB index -> egress port and MAC. */
    struct ref_nh {
        uint8_t dmac[6];
        uint16_t port;
        bool ok;
    } ref_nh[64];
};

static const uint8_t t_peer_mac[6] = {0x02, 0, 0, 0, 1, 0};

static void t_port_mac(unsigned p, uint8_t mac[6])
{
    uint8_t m[6] = {0x02, 0, 0, 0, 0, (uint8_t)p};
    memcpy(mac, m, 6);
}

static void t_nb_mac(uint32_t ip, uint8_t mac[6])
{
    uint8_t m[6] = {0x02, 0xbb, (uint8_t)(ip >> 24), (uint8_t)(ip >> 16), (uint8_t)(ip >> 8), (uint8_t)ip};
    memcpy(mac, m, 6);
}

static uint32_t t_flow_dst(unsigned f)
{
    return IP4(172, 16, f, 7);
}

static uint32_t t_flow_gw(unsigned f)
{
    return IP4(10, 1 + f % 3, 0, 10 + f);
}

/* IPv6 addresses of the set-up: 2001:db8:P::X, and the flows' 2001:db8:100+F::7. */
static void t_a6(uint8_t a[16], unsigned net, unsigned host)
{
    memset(a, 0, 16);
    a[0] = 0x20;
    a[1] = 0x01;
    a[2] = 0x0d;
    a[3] = 0xb8;
    a[4] = (uint8_t)(net >> 8);
    a[5] = (uint8_t)net;
    a[14] = (uint8_t)(host >> 8);
    a[15] = (uint8_t)host;
}

/* The IPv6 half of the world: a FIB of /64 connected networks and one /48
 * per flow via a gateway, static neighbours, the ports' addresses, and 32
 * UDP frames (flow k % 16, as the IPv4 ones). */
static void t_setup6(struct t_world *w)
{
    struct ipc_err err = {{0}};
    struct fib6_params p6 = {.max_prefixes = 1024, .tbl8_groups = 256, .max_nh = 64};
    int rfd = -1;
    if (fib6_create("bench-fwd-fib6", &p6, w->fib_rfd, &w->fib6w, &w->fib6_fd, &rfd, &err) != 0 ||
        fib6_attach(&w->fib6, w->fib6_fd, w->fib_rfd, 0, &err) != 0)
        t_die("fib6", err.msg);
    w->fib6_rfd = rfd;
    if (neigh6_create("bench-fwd-neigh6", 64, &w->neigh6, &w->neigh6_fd, &err) != 0)
        t_die("neigh6", err.msg);
    w->ctx.fib6 = &w->fib6;
    w->ctx.neigh6 = &w->neigh6;
    for (unsigned p = 0; p < NPORTS; p++) {
        struct rt_port *pt = &w->ctx.port[p];
        t_a6(pt->a6[0].a, p, 1);
        pt->a6[0].plen = 64;
        pt->n6 = 1;
        pt->ll6 = -1;
        pt->dad_sent = true; /* no probes: nothing here answers, and the timing wants only forwarding */
        uint8_t net[16];
        t_a6(net, p, 0);
        struct fib6_nh conn = {.port = (uint16_t)p};
        if (fib6_add(&w->fib6w, net, 64, &conn) != 0)
            t_die("fib6_add", "connected");
    }
    for (unsigned f = 0; f < NFLOWS; f++) {
        uint16_t p = (uint16_t)(1 + f % 3);
        struct fib6_nh via = {.port = p};
        t_a6(via.gw, p, 10 + f);
        uint8_t mac[6], pfx[16];
        t_nb_mac(t_flow_gw(f), mac);
        if (neigh6_add_static(&w->neigh6, via.gw, mac, p) != 0)
            t_die("neigh6_add_static", "failed");
        t_a6(pfx, 0x100 + f, 0);
        if (fib6_add(&w->fib6w, pfx, 48, &via) != 0)
            t_die("fib6_add", "via");
    }
    for (unsigned k = 0; k < BURST; k++) {
        unsigned f = k % NFLOWS;
        uint8_t *fr = w->tmpl6[k];
        memset(fr, 0, FRAME6_LEN);
        t_port_mac(0, fr);
        memcpy(fr + 6, t_peer_mac, 6);
        pkt_put16(fr + 12, PKT_ETH_P_IPV6);
        uint8_t *ip6 = fr + PKT_ETH_HLEN, *udp = ip6 + PKT_IP6_HLEN;
        uint32_t l4len = FRAME6_LEN - PKT_ETH_HLEN - PKT_IP6_HLEN;
        pkt_put32(ip6, 6u << 28);
        pkt_put16(ip6 + PKT_IP6_PLEN, (uint16_t)l4len);
        ip6[PKT_IP6_NXT] = 17;
        ip6[PKT_IP6_HLIM] = 64;
        t_a6(ip6 + PKT_IP6_SRC, 0, 10 + f);
        t_a6(ip6 + PKT_IP6_DST, 0x100 + f, 7);
        pkt_put16(udp, (uint16_t)(1024 + f));
        pkt_put16(udp + 2, 9);
        pkt_put16(udp + 4, (uint16_t)l4len);
        for (unsigned i = 8; i < l4len; i++)
            udp[i] = (uint8_t)(i * 7 + f);
    }
    if (ipc_pool_alloc(&w->pool, w->bufs6, BURST) != BURST)
        t_die("pool", "alloc");
}

static void t_setup(struct t_world *w)
{
    struct ipc_err err = {{0}};
    if (ipc_pool_create("bench-fwd-pool", 256, IPC_FRAME_DEFAULT, &w->pool_fd, &err) != 0 ||
        ipc_pool_attach(&w->pool, w->pool_fd, SELF, &err) != 0)
        t_die("pool", err.msg);
    struct fib_params fp = {.max_prefixes = 1024, .tbl8_groups = 64, .max_nh = 64};
    if (fib_create("bench-fwd-fib", &fp, &w->fibw, &w->fib_fd, &w->fib_rfd, &err) != 0 ||
        fib_attach(&w->fib, w->fib_fd, w->fib_rfd, 0, &err) != 0)
        t_die("fib", err.msg);
    if (neigh_create("bench-fwd-neigh", 64, &w->neigh, &w->neigh_fd, &err) != 0)
        t_die("neigh", err.msg);
    rt_ctx_init(&w->ctx, &w->pool, &w->fib, &w->neigh, &w->ctr, NULL);
    w->ctx.nports = NPORTS;
    for (unsigned p = 0; p < NPORTS; p++) {
        struct rt_port *pt = &w->ctx.port[p];
        t_port_mac(p, pt->mac);
        pt->mtu = 1500;
        pt->ip = IP4(10, p, 0, 1);
        pt->plen = 24;
        struct fib_nh conn = {.gw = 0, .port = (uint16_t)p};
        if (fib_add(&w->fibw, IP4(10, p, 0, 0), 24, &conn) != 0)
            t_die("fib_add", "connected");
    }
    for (unsigned f = 0; f < NFLOWS; f++) {
        uint16_t p = (uint16_t)(1 + f % 3);
        uint8_t mac[6];
        t_nb_mac(t_flow_gw(f), mac);
        if (neigh_add_static(&w->neigh, t_flow_gw(f), mac, p) != 0)
            t_die("neigh_add_static", "failed");
        struct fib_nh via = {.gw = t_flow_gw(f), .port = p};
        if (fib_add(&w->fibw, IP4(172, 16, f, 0), 24, &via) != 0)
            t_die("fib_add", "via");
    }
    /* The reference's table: FIB next-hop index -> port and the neighbour's MAC. */
    for (unsigned f = 0; f < NFLOWS; f++) {
        uint32_t idx = fib_lookup(&w->fib, t_flow_dst(f));
        if (idx == FIB_MISS || idx >= 64)
            t_die("setup", "flow without a route");
        struct fib_nh nh = fib_nh_at(&w->fib, idx);
        struct neigh_entry *e = neigh_find(&w->neigh, nh.gw);
        if (!e)
            t_die("setup", "unresolved next hop");
        memcpy(w->ref_nh[idx].dmac, e->mac, 6);
        w->ref_nh[idx].port = nh.port;
        w->ref_nh[idx].ok = true;
    }
    t_setup6(w);
    /* The frames. */
    for (unsigned k = 0; k < BURST; k++) {
        unsigned f = k % NFLOWS;
        uint8_t *fr = w->tmpl[k];
        memset(fr, 0, FRAME_LEN);
        t_port_mac(0, fr);
        memcpy(fr + 6, t_peer_mac, 6);
        pkt_put16(fr + 12, PKT_ETH_P_IP);
        uint8_t *ip = fr + PKT_ETH_HLEN;
        ip[0] = 0x45;
        pkt_put16(ip + PKT_IP_TOTLEN, FRAME_LEN - PKT_ETH_HLEN);
        pkt_put16(ip + PKT_IP_ID, (uint16_t)(0x1000 + k));
        ip[PKT_IP_TTL] = 64;
        ip[PKT_IP_PROTO] = 17;
        pkt_put32(ip + PKT_IP_SRC, IP4(10, 0, 0, 10 + f));
        pkt_put32(ip + PKT_IP_DST, t_flow_dst(f));
        pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, PKT_IP_HLEN));
        uint8_t *udp = ip + PKT_IP_HLEN;
        pkt_put16(udp, (uint16_t)(1024 + f));
        pkt_put16(udp + 2, 9);
        pkt_put16(udp + 4, FRAME_LEN - PKT_ETH_HLEN - PKT_IP_HLEN);
        for (unsigned i = 8; i < FRAME_LEN - PKT_ETH_HLEN - PKT_IP_HLEN; i++)
            udp[i] = (uint8_t)(i * 7 + f);
    }
    if (ipc_pool_alloc(&w->pool, w->bufs, BURST) != BURST)
        t_die("pool", "alloc");
    w->tx.bufs = w->txb;
    w->tx.cap = 4 * BURST;
}

/* Untimed: put the 32 frames of @bufs back as they arrived, from @tmpl
 * (@len bytes each, one template after another). */
static inline void t_restore_bufs(struct t_world *w, const ipc_buf *bufs, const uint8_t *tmpl, uint32_t len)
{
    for (unsigned k = 0; k < BURST; k++) {
        struct ipc_meta *m = ipc_pool_meta(&w->pool, bufs[k]);
        memcpy(ipc_pool_data(&w->pool, bufs[k]), tmpl + (size_t)k * len, len);
        pkt_set_len(m, len);
        m->in_port = 0;
        m->out_port = IPC_PORT_NONE;
    }
    w->tx.n = 0;
}

static inline void t_restore(struct t_world *w)
{
    t_restore_bufs(w, w->bufs, &w->tmpl[0][0], FRAME_LEN);
}

static inline void t_restore6(struct t_world *w)
{
    t_restore_bufs(w, w->bufs6, &w->tmpl6[0][0], FRAME6_LEN);
}

/* ---- the reference forwarder: the same work, by hand ---- */

static void ref_burst(struct t_world *w, const ipc_buf *bufs, uint32_t n, struct rt_burst *tx)
{
    struct ipc_pool *pool = &w->pool;
    struct fib *fib = &w->fib;
    fib_read_begin(fib); /* our FIB's reader protocol: part of any safe lookup */
    for (uint32_t i = 0; i < n; i++) {
        ipc_buf b = bufs[i];
        struct ipc_meta *m = ipc_pool_meta(pool, b);
        uint8_t *f = ipc_pool_data(pool, b);
        if (ipc_unlikely(m->len < PKT_ETH_HLEN + PKT_IP_HLEN || pkt_get16(f + 12) != PKT_ETH_P_IP))
            goto drop;
        uint8_t *ip = f + PKT_ETH_HLEN;
        if (ipc_unlikely(ip[0] != 0x45))
            goto drop;
        /* Header checksum over the 20 bytes: five 32-bit words, folded. */
        uint32_t wd[5];
        memcpy(wd, ip, 20);
        uint64_t s = (uint64_t)wd[0] + wd[1] + wd[2] + wd[3] + wd[4];
        s = (s & 0xffffffffu) + (s >> 32);
        s = (s & 0xffffffffu) + (s >> 32);
        s = (s & 0xffff) + (s >> 16);
        s = (s & 0xffff) + (s >> 16);
        if (ipc_unlikely(s != 0xffff))
            goto drop;
        if (ipc_unlikely(ip[PKT_IP_TTL] <= 1))
            goto drop;
        uint32_t idx = fib_lookup(fib, pkt_get32(ip + PKT_IP_DST));
        if (ipc_unlikely(idx >= 64 || !w->ref_nh[idx].ok))
            goto drop;
        const struct ref_nh *nh = &w->ref_nh[idx];
        rt_ip_ttl_dec(ip); /* RFC 1624 eqn. 3 */
        memcpy(f, nh->dmac, 6);
        memcpy(f + 6, w->ctx.port[nh->port].mac, 6);
        m->out_port = nh->port;
        tx->bufs[tx->n++] = b;
        continue;
    drop:
        /* never taken here; a real one would free and count */
        continue;
    }
    fib_read_end(fib);
}

/* Ours as the router loop runs it: the batch's FIB read section around the burst. */
static void our_burst(struct t_world *w)
{
    fib_read_begin(&w->fib);
    rt_input_burst(&w->ctx, w->bufs, BURST, NOW_NS, &w->tx);
    fib_read_end(&w->fib);
}

static void our_burst6(struct t_world *w)
{
    fib_read_begin(&w->fib); /* one read section covers both FIBs */
    rt_input_burst(&w->ctx, w->bufs6, BURST, NOW_NS, &w->tx);
    fib_read_end(&w->fib);
}

/* IPv6: every packet out of its flow's port, to its gateway's MAC, hop limit 63. */
static void t_check6(struct t_world *w)
{
    t_restore6(w);
    our_burst6(w);
    if (w->tx.n != BURST)
        t_die("check6", "rt_input_burst did not forward the whole IPv6 burst");
    for (unsigned k = 0; k < BURST; k++) {
        const uint8_t *f = ipc_pool_data(&w->pool, w->bufs6[k]);
        unsigned fl = k % NFLOWS;
        uint8_t mac[6];
        t_nb_mac(t_flow_gw(fl), mac);
        if (ipc_pool_meta(&w->pool, w->bufs6[k])->out_port != 1 + fl % 3 || f[PKT_ETH_HLEN + PKT_IP6_HLIM] != 63 ||
            memcmp(f, mac, 6) != 0)
            t_die("check6", "wrong port, hop limit or destination MAC");
    }
    w->tx.n = 0;
}

/* ---- check: ours and the reference give the same bytes on the same ports ---- */

static void t_check(struct t_world *w)
{
    uint8_t ours[BURST][FRAME_LEN];
    uint16_t ours_port[BURST];
    t_restore(w);
    our_burst(w);
    if (w->tx.n != BURST)
        t_die("check", "rt_input_burst did not forward the whole burst");
    for (unsigned k = 0; k < BURST; k++) {
        if (w->tx.bufs[k] != w->bufs[k])
            t_die("check", "rt_input_burst reordered the burst");
        memcpy(ours[k], ipc_pool_data(&w->pool, w->bufs[k]), FRAME_LEN);
        ours_port[k] = ipc_pool_meta(&w->pool, w->bufs[k])->out_port;
    }
    t_restore(w);
    ref_burst(w, w->bufs, BURST, &w->tx);
    if (w->tx.n != BURST)
        t_die("check", "the reference did not forward the whole burst");
    for (unsigned k = 0; k < BURST; k++) {
        const uint8_t *f = ipc_pool_data(&w->pool, w->bufs[k]);
        unsigned fl = k % NFLOWS;
        uint8_t mac[6];
        if (memcmp(f, ours[k], FRAME_LEN) != 0 || ipc_pool_meta(&w->pool, w->bufs[k])->out_port != ours_port[k])
            t_die("check", "ours and the reference differ");
        if (ours_port[k] != 1 + fl % 3 || f[PKT_ETH_HLEN + PKT_IP_TTL] != 63 || pkt_csum(f + PKT_ETH_HLEN, 20) != 0)
            t_die("check", "wrong port, TTL or checksum");
        t_nb_mac(t_flow_gw(fl), mac);
        if (memcmp(f, mac, 6) != 0)
            t_die("check", "wrong destination MAC");
    }
    w->tx.n = 0;
}

enum { S_OURS, S_REF, S_OURS6, S_CAPOFF, S_CAPNONE, S_CAPALL, S_MAX };

/*
 * Capture (ipc/capture.h): the driver stage's hook, drv_rx_capture's,
 * before the same rt_input_burst: off (one load, one branch a burst, for
 * capture and `ringrouter trace` both, and the router loop's trace
 * branch), on with a filter that matches nothing ("udp port 9": the
 * program runs on every frame) and with one that matches everything
 * ("udp": each frame also copied into the ring). The ring is emptied
 * between bursts, untimed, as a reader that keeps up would.
 */
static struct ipc_cap cap_region;
static struct ipc_cap_insn cap_prog[2][IPC_CAP_BPF_MAX];
static uint32_t cap_nins[2];

static void cap_compile(unsigned i, const char *expr)
{
    pcap_t *p = pcap_open_dead(DLT_EN10MB, 65535);
    struct bpf_program prog;
    if (!p || pcap_compile(p, &prog, expr, 1, PCAP_NETMASK_UNKNOWN) < 0 || prog.bf_len > IPC_CAP_BPF_MAX)
        t_die("pcap_compile", expr);
    for (unsigned k = 0; k < prog.bf_len; k++)
        cap_prog[i][k] = (struct ipc_cap_insn){prog.bf_insns[k].code, prog.bf_insns[k].jt, prog.bf_insns[k].jf,
                                               prog.bf_insns[k].k};
    cap_nins[i] = prog.bf_len;
    pcap_freecode(&prog);
    pcap_close(p);
}

static void cap_setup(void)
{
    cap_compile(0, "udp port 9");
    cap_compile(1, "udp");
    cap_region.snaplen = IPC_CAP_SNAP_MAX;
    cap_region.port = IPC_PORT_NONE;
    ipc_cap_.cap = &cap_region;
}

/* Arm the region as side @s wants it (untimed). */
static void cap_side(int s)
{
    ipc_st_rlx(&cap_region.on, 0u);
    if (s == S_CAPNONE || s == S_CAPALL) {
        unsigned i = s == S_CAPALL;
        cap_region.nins = cap_nins[i];
        memcpy(cap_region.prog, cap_prog[i], sizeof(cap_prog[i]));
        ipc_st_rlx(&cap_region.on, (uint32_t)IPC_CAP_RX);
    }
}

static void cap_burst(struct t_world *w)
{
    if (ipc_cap_on(IPC_CAP_RX | IPC_CAP_TRACE)) { /* drv_cap_hook: trace shares capture's branch */
        unsigned on = ipc_ld_rlx(&cap_region.on);
        if (on & IPC_CAP_RX)
            ipc_cap_frames(&w->pool, w->bufs, BURST, IPC_CAP_RX, 0);
        if (on & IPC_CAP_TRACE)
            ipc_trace_rx(&w->pool, w->bufs, BURST, 0);
    }
    fib_read_begin(&w->fib);
    if (ipc_unlikely(ipc_trace_on())) /* the router loop's trace branch (services/router/main.c) */
        rt_trace_burst(&w->ctx, w->bufs, BURST, NOW_NS, &w->tx);
    else
        rt_input_burst(&w->ctx, w->bufs, BURST, NOW_NS, &w->tx);
    fib_read_end(&w->fib);
}

/* One chunk of @nb bursts of side @s: TSC cycles per packet, restore excluded. */
static double t_chunk(struct t_world *w, int s, unsigned nb, uint64_t overhead)
{
    uint64_t sum = 0;
    cap_side(s);
    for (unsigned i = 0; i < nb; i++) {
        if (s == S_OURS6)
            t_restore6(w);
        else
            t_restore(w);
        ipc_st_rlx(&cap_region.tail, ipc_ld_rlx(&cap_region.head));
        uint64_t c0 = t_tsc_begin();
        if (s == S_OURS)
            our_burst(w);
        else if (s == S_OURS6)
            our_burst6(w);
        else if (s >= S_CAPOFF)
            cap_burst(w);
        else
            ref_burst(w, w->bufs, BURST, &w->tx);
        uint64_t c1 = t_tsc_end();
        if (ipc_unlikely(w->tx.n != BURST))
            t_die("burst", s == S_REF ? "reference dropped packets" : "rt_input_burst dropped packets");
        uint64_t d = c1 - c0;
        sum += d > overhead ? d - overhead : 0;
    }
    return (double)sum / ((double)nb * BURST);
}

static uint64_t t_overhead(void)
{
    double v[1001];
    for (unsigned i = 0; i < 1001; i++) {
        uint64_t c0 = t_tsc_begin();
        uint64_t c1 = t_tsc_end();
        v[i] = (double)(c1 - c0);
    }
    return (uint64_t)t_median_sort(v, 1001);
}

/* What the fence-bracketed FIB reader protocol costs per burst, alone. */
static double t_read_protocol(struct t_world *w, uint64_t overhead)
{
    double v[1001];
    for (unsigned i = 0; i < 1001; i++) {
        uint64_t c0 = t_tsc_begin();
        fib_read_begin(&w->fib);
        fib_read_end(&w->fib);
        uint64_t c1 = t_tsc_end();
        v[i] = (double)(c1 - c0) - (double)overhead;
    }
    return t_median_sort(v, 1001);
}

/* ---- trust zones (--zones) ---- */

#define Z_BUFS 4096u
#define Z_GSO_BYTES 64000u /* a GSO packet: 32 frames of 2048 */
#define Z_GSO_BURST 8u     /* GSO packets per timed burst */

struct t_zones {
    int src_fd, dst_fd;
    struct ipc_pool src, dst; /* the copy-alone side's zone 0, and zone 1 (ports 1..3) for both */
    ipc_buf pk[BURST];
};

enum { Z_ONE, Z_CROSS, Z_1500, Z_GSO, Z_MAX };

static void z_setup(struct t_world *w, struct t_zones *z)
{
    struct ipc_err err = {{0}};
    if (ipc_pool_create("bench-fwd-zsrc", Z_BUFS, IPC_FRAME_DEFAULT, &z->src_fd, &err) != 0 ||
        ipc_pool_attach(&z->src, z->src_fd, SELF, &err) != 0 ||
        ipc_pool_create("bench-fwd-zdst", Z_BUFS, IPC_FRAME_DEFAULT, &z->dst_fd, &err) != 0 ||
        ipc_pool_attach(&z->dst, z->dst_fd, SELF, &err) != 0)
        t_die("zone pools", err.msg);
    w->ctx.zpool[1] = &z->dst;
    w->ctx.nzones = 2;
    for (unsigned p = 1; p < NPORTS; p++)
        w->ctx.port_zone[p] = 1;
}

/* One chunk of 64-byte bursts, routed, then (@cross) moved into zone 1. */
static double z_chunk_route(struct t_world *w, struct t_zones *z, bool cross, unsigned nb, uint64_t overhead)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < nb; i++) {
        t_restore(w);
        uint64_t c0 = t_tsc_begin();
        our_burst(w);
        if (cross)
            for (uint32_t k = 0; k < w->tx.n; k++)
                w->tx.bufs[k] = rt_zone_move(&w->ctx, w->tx.bufs[k], ipc_pool_meta(&w->pool, w->tx.bufs[k])->out_port);
        uint64_t c1 = t_tsc_end();
        if (ipc_unlikely(w->tx.n != BURST))
            t_die("burst", "rt_input_burst dropped packets");
        if (cross) {
            /* Untimed: the egress drivers' frees, and the next burst's buffers. */
            if (ipc_pool_free(&z->dst, w->tx.bufs, BURST) != BURST || ipc_pool_alloc(&w->pool, w->bufs, BURST) != BURST)
                t_die("zone copy", "a copy failed or the pool ran dry");
        }
        uint64_t d = c1 - c0;
        sum += d > overhead ? d - overhead : 0;
    }
    return (double)sum / ((double)nb * BURST);
}

/* One chunk of moves alone: @n packets of @bytes, filled untimed, moved into zone 1. */
static double z_chunk_move(struct t_world *w, struct t_zones *z, uint32_t bytes, uint32_t n, unsigned nb,
                           uint64_t overhead)
{
    uint64_t sum = 0;
    struct ipc_pool *keep = w->ctx.pool;
    w->ctx.pool = w->ctx.zpool[0] = &z->src;
    for (unsigned i = 0; i < nb; i++) {
        for (uint32_t k = 0; k < n; k++) {
            if (ipc_pool_alloc_chain(&z->src, bytes, &z->pk[k]) < 0)
                t_die("zone copy", "the source pool ran dry");
            for (ipc_buf f = z->pk[k]; f != IPC_BUF_NONE; f = ipc_pool_meta(&z->src, f)->next)
                memset(ipc_pool_data(&z->src, f), (int)k, ipc_pool_meta(&z->src, f)->len);
            struct ipc_meta *m = ipc_pool_meta(&z->src, z->pk[k]);
            m->out_port = 1;
            if (bytes > 1514)
                m->vnet = (struct ipc_vnet){.gso_type = 1, .gso_size = 1448, .hdr_len = 66};
        }
        uint64_t c0 = t_tsc_begin();
        for (uint32_t k = 0; k < n; k++)
            z->pk[k] = rt_zone_move(&w->ctx, z->pk[k], 1);
        uint64_t c1 = t_tsc_end();
        for (uint32_t k = 0; k < n; k++)
            if (z->pk[k] == IPC_BUF_NONE)
                t_die("zone copy", "a copy failed: the zone's pool ran dry");
        ipc_pool_free(&z->dst, z->pk, n);
        uint64_t d = c1 - c0;
        sum += d > overhead ? d - overhead : 0;
    }
    w->ctx.pool = w->ctx.zpool[0] = keep;
    return (double)sum / ((double)nb * n);
}

static double z_chunk(struct t_world *w, struct t_zones *z, int s, unsigned nb, uint64_t overhead)
{
    switch (s) {
    case Z_ONE:
        return z_chunk_route(w, z, false, nb, overhead);
    case Z_CROSS:
        return z_chunk_route(w, z, true, nb, overhead);
    case Z_1500:
        return z_chunk_move(w, z, 1514, BURST, nb, overhead);
    default:
        return z_chunk_move(w, z, Z_GSO_BYTES, Z_GSO_BURST, nb / 4 ? nb / 4 : 1, overhead);
    }
}

static int z_main(struct t_world *w, unsigned runs, unsigned chunks, uint64_t ovh)
{
    static struct t_zones z;
    z_setup(w, &z);
    for (int s = 0; s < Z_MAX; s++)
        z_chunk(w, &z, s, CHUNK / 10, ovh);
    double res[Z_MAX][MAX_RUNS], ratio[3][MAX_RUNS];
    double *ch[Z_MAX];
    for (int s = 0; s < Z_MAX; s++)
        if (!(ch[s] = malloc(chunks * sizeof(double))))
            t_die("malloc", strerror(ENOMEM));
    for (unsigned r = 0; r < runs; r++) {
        for (unsigned c = 0; c < chunks; c++)
            for (int j = 0; j < Z_MAX; j++) {
                int s = (int)((c + r + (unsigned)j) % Z_MAX);
                ch[s][c] = z_chunk(w, &z, s, CHUNK / 10, ovh);
            }
        for (int s = 0; s < Z_MAX; s++)
            res[s][r] = t_median_sort(ch[s], chunks);
        ratio[0][r] = res[Z_CROSS][r] / res[Z_ONE][r];
        ratio[1][r] = (res[Z_ONE][r] + res[Z_1500][r]) / res[Z_ONE][r];
        ratio[2][r] = (res[Z_ONE][r] + res[Z_GSO][r]) / res[Z_ONE][r];
    }
    printf("bench_fwdcore --zones: the router's forwarding function with one zone, and with each packet moved into "
           "another zone's pool\n  (rt_zone_move: alloc, copy with metadata, free the original); %u runs x %u chunks "
           "x %u bursts per side\n",
           runs, chunks, CHUNK / 10);
    printf("\n%-52s %10s %19s\n", "TSC cycles per packet", "median", "min - max");
    static const char *const name[Z_MAX] = {"one zone: 64-byte frames routed (zero-copy)",
                                            "two zones: routed, then moved into the egress zone",
                                            "move alone: a 1,514-byte frame", "move alone: a 64,000-byte GSO chain"};
    for (int s = 0; s < Z_MAX; s++)
        printf("%-52s %10.1f %8.1f - %-8.1f\n", name[s], t_median(res[s], runs), t_min(res[s], runs),
               t_max(res[s], runs));
    printf("(1,500-byte and GSO ratios: the one-zone path of a 64-byte frame, which reads the same headers, plus "
           "the move)\n\n");
    printf("fwd_one_zone_cycles_per_packet %.0f\n", t_median(res[Z_ONE], runs));
    printf("fwd_zone_copy_64_cycles %.0f\n", t_median(res[Z_CROSS], runs) - t_median(res[Z_ONE], runs));
    printf("fwd_zone_copy_1500_cycles %.0f\n", t_median(res[Z_1500], runs));
    printf("fwd_zone_copy_gso_cycles %.0f\n", t_median(res[Z_GSO], runs));
    printf("fwd_zone_copy_64_ratio %.2f\n", t_median(ratio[0], runs));
    printf("fwd_zone_copy_1500_ratio %.2f\n", t_median(ratio[1], runs));
    printf("fwd_zone_copy_gso_ratio %.2f\n", t_median(ratio[2], runs));
    for (int s = 0; s < Z_MAX; s++)
        free(ch[s]);
    return 0;
}

static void t_usage(void)
{
    fprintf(stderr, "usage: bench_fwdcore [--runs N] [--chunks N] [--sandbox | --zones]\n"
                    "  defaults: 3 runs of 200 chunks per side, 1000 bursts of 32 per chunk;\n"
                    "  --sandbox: run under the router's seccomp filter\n"
                    "  --zones: the cost of a copy between trust zones instead\n");
    exit(2);
}

int main(int argc, char **argv)
{
    unsigned runs = 3, chunks = 200;
    bool sandbox = false, zones = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sandbox")) {
            sandbox = true;
            continue;
        }
        if (!strcmp(argv[i], "--zones")) {
            zones = true;
            continue;
        }
        if (i + 1 >= argc)
            t_usage();
        unsigned v = (unsigned)strtoul(argv[i + 1], NULL, 0);
        if (!strcmp(argv[i], "--runs"))
            runs = v;
        else if (!strcmp(argv[i], "--chunks"))
            chunks = v;
        else
            t_usage();
        i++;
    }
    if (runs < 1 || runs > MAX_RUNS || chunks < 1 || chunks > 100000)
        t_usage();

    static struct t_world w;
    t_setup(&w);
    cap_setup();
    double hz = t_tsc_hz();
    uint64_t ovh = t_overhead();
    t_check(&w);
    t_check6(&w);
    double rp = t_read_protocol(&w, ovh);
    if (zones)
        return z_main(&w, runs, chunks, ovh);
    if (sandbox) {
        /* stdout's buffer now: its first use would fstat, which the run
         * stage does not allow. The rest (write, free, exit) it does. */
        static char obuf[1 << 14];
        setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
        struct ipc_err err;
        if (!ipc_sandbox_enabled())
            t_die("--sandbox", "this build installs no seccomp filter (./configure --no-sandbox or a sanitizer)");
        if (ipc_sandbox_enter(IPC_SANDBOX_ROUTER, IPC_SANDBOX_START, &err) < 0 ||
            ipc_sandbox_enter(IPC_SANDBOX_ROUTER, IPC_SANDBOX_RUN, &err) < 0)
            t_die("--sandbox", err.msg);
    }

    /* Warm-up. */
    for (int s = 0; s < S_MAX; s++)
        t_chunk(&w, s, CHUNK, ovh);

    double res[S_MAX][MAX_RUNS];
    double *ch[S_MAX];
    for (int s = 0; s < S_MAX; s++)
        if (!(ch[s] = malloc(chunks * sizeof(double))))
            t_die("malloc", strerror(ENOMEM));
    for (unsigned r = 0; r < runs; r++) {
        t_check(&w);
        t_check6(&w);
        /* The three sides in turn, the order rotating, so that drift hits all alike. */
        for (unsigned c = 0; c < chunks; c++)
            for (int j = 0; j < S_MAX; j++) {
                int s = (int)((c + r + (unsigned)j) % S_MAX);
                /* Capture on costs ten times a burst: a tenth of the bursts,
                 * so that its chunks last as long as the others' and a
                 * preemption on a shared machine hits them no more often. */
                ch[s][c] = t_chunk(&w, s, s >= S_CAPNONE ? CHUNK / 10 : CHUNK, ovh);
            }
        for (int s = 0; s < S_MAX; s++)
            res[s][r] = t_median_sort(ch[s], chunks);
    }
    double ratio[MAX_RUNS], ratio6[MAX_RUNS];
    for (unsigned r = 0; r < runs; r++) {
        ratio[r] = res[S_OURS][r] / res[S_REF][r];
        ratio6[r] = res[S_OURS6][r] / res[S_OURS][r];
    }

    printf("bench/forward-core: bursts of %u x %u-byte UDP frames (60 + FCS), %u flows to %u egress ports,\n"
           "  flows interleaved (no per-burst cache hits), all neighbours static; %u runs x %u chunks x %u bursts "
           "per side\n  (capture on: %u bursts a chunk)\n",
           BURST, FRAME_LEN + 4, NFLOWS, NPORTS - 1, runs, chunks, CHUNK, CHUNK / 10);
    printf("TSC %.3f GHz; rdtsc pair overhead %llu cycles per burst, subtracted; frame restore untimed\n", hz / 1e9,
           (unsigned long long)ovh);
    printf("FIB reader protocol (fib_read_begin/end, one fence) alone: %.0f cycles per burst (%.1f per packet)\n",
           rp, rp / BURST);
    printf("check: ours and the reference give byte-identical frames on the same ports: yes\n");
    printf("seccomp: %s\n", sandbox ? "the router's filter (start and run stages) in this process" : "none");
    printf("\n%-44s %10s %19s %10s\n", "TSC cycles per packet", "median", "min - max", "Mpps");
    static const char *const name[S_MAX] = {"ours      rt_input_burst()", "reference hand-written (bench/fwdcore.c)",
                                            "ours      IPv6, 82-byte frames",
                                            "capture off (driver hook) + rt_input_burst",
                                            "capture on, filter matches none + router",
                                            "capture on, filter matches all + router"};
    for (int s = 0; s < S_MAX; s++) {
        double med = t_median(res[s], runs);
        printf("%-44s %10.1f %8.1f - %-8.1f %10.1f\n", name[s], med, t_min(res[s], runs), t_max(res[s], runs),
               hz / med / 1e6);
    }
    printf("%-44s %10.2f %8.2f - %-8.2f\n", "ratio ours/reference (information)", t_median(ratio, runs),
           t_min(ratio, runs), t_max(ratio, runs));
    printf("%-44s %10.2f %8.2f - %-8.2f\n", "ratio ours IPv6/IPv4", t_median(ratio6, runs), t_min(ratio6, runs),
           t_max(ratio6, runs));
    printf("\nrouter_vs_reference_ratio %.2f\n", t_median(ratio, runs));
    printf("router_cycles_per_packet %.0f\n", t_median(res[S_OURS], runs));
    printf("router_cycles_per_packet_v6 %.0f\n", t_median(res[S_OURS6], runs));
    double coff[MAX_RUNS], cnone[MAX_RUNS], call[MAX_RUNS];
    for (unsigned r = 0; r < runs; r++) {
        coff[r] = res[S_CAPOFF][r] / res[S_OURS][r];
        cnone[r] = res[S_CAPNONE][r] - res[S_OURS][r];
        call[r] = res[S_CAPALL][r] - res[S_OURS][r];
    }
    printf("capture_off_cycles_per_packet %.0f\n", t_median(res[S_CAPOFF], runs));
    printf("capture_off_vs_router %.3f\n", t_median(coff, runs));
    printf("capture_match_none_extra_cycles_per_packet %.0f\n", t_median(cnone, runs));
    printf("capture_match_all_extra_cycles_per_packet %.0f\n", t_median(call, runs));
    printf("router_v6_vs_v4 %.2f\n", t_median(ratio6, runs));
    for (int s = 0; s < S_MAX; s++)
        free(ch[s]);
    return 0;
}
