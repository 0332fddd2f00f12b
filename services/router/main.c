/* SPDX-License-Identifier: MIT */
/*
 * services/router/main.c: rr-router, the router process. It maps the FIB
 * (read-only, reader slot FIB_ROUTER_SLOT) and the neighbour table that the
 * supervisor created, names its counters in its stats region, and loops: a burst from
 * each port's receive ring through rt_input_burst(), the packets it emits
 * sorted onto each egress port's ring, ARP timers every 100 ms, at most one
 * wake-up per peer per loop, and a sleep on its eventfd when no ring has
 * work. Everything per packet is in the library (rt.c, ipv4.c, ...).
 */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ipc/pkt.h"
#include "ipc/stage.h"
#include "ipc/svc.h"
#include "tables/config.h"
#include "tables/fib.h"
#include "tables/fib6.h"
#include "services/router/ecmp.h"
#include "services/router/fq.h"
#include "services/router/ipv4.h"
#include "services/router/nd.h"
#include "services/router/neigh.h"
#include "services/router/punt.h"
#include "services/router/rt.h"
#include "services/router/rt_trace.h"

#define RT_TX_CAP (RT_BURST * 8) /* a burst can grow: fragments, ICMP, ARP releases */
/* Packets held for an output ring, per ring: the egress queue that Linux's
 * qdisc is (fq.h). A burst the driver cannot take as fast as we route waits
 * here, per flow, instead of being dropped; past it, the longest flow loses
 * its oldest (the ring's full_drops). */
#define RT_HOLD 2048u
/* Backpressure: an input ring whose last burst fed a hold queue past
 * RT_HOLD_HIGH is left unread until that queue is back under RT_HOLD_LOW
 * (rt_input_paused). The room above HIGH takes the bursts already routed
 * from the other inputs. */
#define RT_HOLD_HIGH (RT_HOLD - RT_HOLD / 4)
#define RT_HOLD_LOW (RT_HOLD / 2)
#define RT_STOP_DRAIN_MS 50u /* a stopping router's wait for room for its hold queues */
#define RT_IN_FREE 0xffu /* in_paused: the input is not paused */
/* The longest an input waits for one hold queue to drain from RT_HOLD_HIGH
 * to RT_HOLD_LOW. By the clock, not by loops: on a CPU it shares with its
 * drivers the router can loop many times before a driver runs at all. */
#define RT_PAUSE_NS 20000000ull
_Static_assert(IPC_SVC_MAX_RINGS <= 32 && IPC_SVC_MAX_RINGS < RT_IN_FREE,
               "rt_proc.fed and in_paused hold an output ring");
#define RT_HELD_WAIT_US 50    /* the longest sleep with packets held */
#define RT_STUCK_WAIT_US 1000 /* ... once RT_STUCK_LOOPS drains in a row moved none */
#define RT_STUCK_LOOPS 20u    /* about a millisecond of short sleeps */
#define RT_TICK_NS 100000000ull
/* Odd multipliers that spread the flow hash's bits (golden ratio, murmur3). */
#define RT_HASH_MUL1 0x9e3779b1u
#define RT_HASH_MUL2 0x85ebca6bu

#if defined(__x86_64__) || defined(__i386__)
#define rt_cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define rt_cpu_relax() __asm__ __volatile__("yield")
#else
#define rt_cpu_relax() ((void)0)
#endif

static volatile sig_atomic_t stop;

/* Stage counters (ipc/stage.h, docs/stats.md), in the loop's order. */
enum rt_stage { RT_ST_RX, RT_ST_ROUTE, RT_ST_HANDOFF, RT_ST_ARP, RT_ST_PUBLISH, RT_ST_WAKE, RT_ST_POLL, RT_ST_N };
static const char *const rt_stage_names[RT_ST_N] = {
    [RT_ST_RX] = "rx",   [RT_ST_ROUTE] = "route",     [RT_ST_HANDOFF] = "handoff", [RT_ST_ARP] = "arp",
    [RT_ST_PUBLISH] = "publish", [RT_ST_WAKE] = "wake", [RT_ST_POLL] = "poll",
};

/* Where the counters sit in the stats region: the library's, four per port, the gauge. */
#define RT_PORT_CTRS 4u
#define RT_PUB_PORT(p) (RT_CTR_MAX + RT_PORT_CTRS * (p))
#define RT_PUB_PENDING RT_PUB_PORT(RT_MAX_PORTS)
#define RT_PUB_PENDING6 (RT_PUB_PENDING + 1)
#define RT_PUB_HELD (RT_PUB_PENDING6 + 1)
#define RT_PUB_HELD_MAX (RT_PUB_HELD + 1)
#define RT_PUB_PAUSED (RT_PUB_HELD_MAX + 1)
#define RT_PUB_N (RT_PUB_PAUSED + 1)

struct rt_proc {
    struct ipc_svc svc;
    struct fib fib;
    struct neigh_table neigh;
    struct fib6 fib6; /* its reader slot is the IPv4 FIB's: one read section covers both */
    struct neigh6_table neigh6;
    bool v6;
    struct rt_ctx ctx;
    /* The library counts into ctr, plain and process-local; rt_publish
     * copies it to the stats region once per pass that did work. */
    struct rt_counters ctr;
    _Atomic uint64_t *pub;
    /* Output rings per egress port: one per driver instance (a port's
     * queues), or the port's shaper. */
    uint8_t out_ring[RT_MAX_PORTS][IPC_SVC_MAX_RINGS];
    uint8_t out_n[RT_MAX_PORTS];
    /* The filter (docs/filter.md): the ports it sits on, and for each other
     * port the ring (+1) to its egress, for what came in by one it does. */
    uint32_t flt_in;
    uint8_t flt_out[RT_MAX_PORTS];
    ipc_buf txb[RT_TX_CAP];
    struct rt_burst tx;
    struct rt_fq hold[IPC_SVC_MAX_RINGS];
    ipc_buf *hold_next[IPC_MAX_ZONES]; /* the hold queues' links, by zone and buffer handle (fq.h) */
    /* Trust zones: the zone of each input and output ring's handles. */
    uint8_t in_zone[IPC_SVC_MAX_RINGS];
    uint8_t out_zone[IPC_SVC_MAX_RINGS];
    /* Per input ring from a host-side port (punt.h): the port its frames
     * leave by, by the config's word; RT_CP_NONE for every other ring. */
    uint8_t in_pair[IPC_SVC_MAX_RINGS];
    uint32_t held;      /* in every hold queue */
    uint64_t held_max; /* the most ever held at once (a gauge) */
    uint32_t held_stuck; /* loops in a row whose drain moved nothing while packets were held */
    /* Per output ring: when its hold queue went over RT_HOLD_HIGH, 0 once
     * it is back under RT_HOLD_LOW (rt_out_congested). */
    uint64_t congested_ns[IPC_SVC_MAX_RINGS];
    uint64_t now;                         /* the loop's clock reading */
    uint8_t in_paused[IPC_SVC_MAX_RINGS]; /* per input: the output ring it waits for, or RT_IN_FREE */
    uint32_t fed;                         /* output rings whose hold queue grew in this flush (bits) */
    uint64_t paused;                      /* looks at an input ring skipped: its output was congested */
    uint64_t neigh_ack; /* the last command of the supervisor's this router answered */
};

static void rt_flush_full(struct rt_burst *tx, void *arg);

/* Counter names: the library's, then each configured port's, then the gauge. */
static char rt_names[RT_PUB_N][IPC_CTR_NAME];
static const char *rt_name_ptr[RT_PUB_N];

static void name_counters(struct rt_proc *r)
{
    _Static_assert(RT_PUB_N <= IPC_SVC_MAX_CTR, "the stats region holds them");
    const struct ipc_svc_config *cfg = r->svc.cfg;
    unsigned n = 0;
    for (unsigned i = 0; i < RT_CTR_MAX; i++)
        snprintf(rt_names[n++], IPC_CTR_NAME, "%s", rt_ctr_names[i]);
    static const char *const per_port[RT_PORT_CTRS] = {"rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes"};
    for (unsigned p = 0; p < RT_MAX_PORTS; p++)
        for (unsigned k = 0; k < RT_PORT_CTRS; k++, n++)
            if (p < cfg->nports && !(cfg->ports[p].flags & IPC_PORT_F_VACANT))
                snprintf(rt_names[n], IPC_CTR_NAME, "%.15s.%s", cfg->ports[p].name, per_port[k]);
            else
                rt_names[n][0] = 0; /* unused: `stats` skips nameless counters */
    snprintf(rt_names[n++], IPC_CTR_NAME, "pending_arp");
    snprintf(rt_names[n++], IPC_CTR_NAME, "pending_nd");
    snprintf(rt_names[n++], IPC_CTR_NAME, "tx_held");
    snprintf(rt_names[n++], IPC_CTR_NAME, "tx_held_max");
    snprintf(rt_names[n++], IPC_CTR_NAME, "rx_paused");
    for (unsigned i = 0; i < n; i++)
        rt_name_ptr[i] = rt_names[i];
    r->pub = ipc_svc_counters(&r->svc, rt_name_ptr, n);
}

static void rt_ctr_sync1(_Atomic uint64_t *shared, uint64_t *mine, bool publish)
{
    if (publish)
        ipc_st_rlx(shared, *mine);
    else
        *mine = ipc_ld_rlx(shared);
}

/*
 * Copy the counters to the stats region (@publish), or back from it at
 * start: a restarted router carries on from its predecessor's figures. The
 * supervisor reads each one as a relaxed atomic; a figure may lag by a pass.
 */
static void rt_ctr_sync(struct rt_proc *r, bool publish)
{
    struct rt_counters *c = &r->ctr;
    for (unsigned i = 0; i < RT_CTR_MAX; i++)
        rt_ctr_sync1(&r->pub[i], &c->c[i], publish);
    for (unsigned p = 0; p < r->svc.cfg->nports; p++) {
        _Atomic uint64_t *q = &r->pub[RT_PUB_PORT(p)];
        rt_ctr_sync1(&q[0], &c->port[p].rx_pkts, publish);
        rt_ctr_sync1(&q[1], &c->port[p].rx_bytes, publish);
        rt_ctr_sync1(&q[2], &c->port[p].tx_pkts, publish);
        rt_ctr_sync1(&q[3], &c->port[p].tx_bytes, publish);
    }
    rt_ctr_sync1(&r->pub[RT_PUB_PENDING], &c->pending, publish);
    rt_ctr_sync1(&r->pub[RT_PUB_PENDING6], &c->pending6, publish);
    rt_ctr_sync1(&r->pub[RT_PUB_PAUSED], &r->paused, publish);
    if (publish) {
        /* What a predecessor held died with it (the supervisor reclaimed
         * it): the gauge starts from ours, the maximum carries on. */
        ipc_st_rlx(&r->pub[RT_PUB_HELD], r->held);
        ipc_st_rlx(&r->pub[RT_PUB_HELD_MAX], r->held_max);
    } else {
        r->held_max = ipc_ld_rlx(&r->pub[RT_PUB_HELD_MAX]);
    }
}

static int rt_setup(struct rt_proc *r, struct ipc_err *err)
{
    int ret = ipc_svc_open(&r->svc, IPC_SVC_ROUTER, err);
    if (ret < 0)
        return ret;
    const struct ipc_svc_config *cfg = r->svc.cfg;
    if (cfg->nports > RT_MAX_PORTS)
        return ipc_errf(err, -EINVAL, "%u ports; the router handles %u", cfg->nports, RT_MAX_PORTS);
    const struct tbl_router_cfg *tc = tbl_cfg_get(&r->svc, TBL_ROUTER_CFG_VERSION, sizeof(*tc), err);
    if (!tc)
        return -EPROTO;
    /* Slot 0 is this router's; attach clears whatever a dead predecessor
     * left in it, which would pin retired FIB entries forever. */
    ret = fib_attach(&r->fib, tc->fib_fd, tc->fib_readers_fd, FIB_ROUTER_SLOT, err);
    if (ret < 0)
        return ret;
    name_counters(r);
    rt_ctr_sync(r, false);
    ipc_stage_names(&r->svc, rt_stage_names, RT_ST_N);
    ret = rt_neigh_attach_router(&r->neigh, tc->neigh_fd, &r->ctr, err);
    if (ret < 0)
        return ret;
    /* A port a reload removed: its neighbours go with it, before a port
     * added later could take its slot (vacant meanwhile). The tables' one
     * writer is here. */
    uint32_t vacant = 0;
    for (unsigned p = 0; p < cfg->nports && p < 32; p++)
        vacant |= cfg->ports[p].flags & IPC_PORT_F_VACANT ? 1u << p : 0;
    rt_neigh_forget_ports(&r->neigh, cfg->nports, vacant);
    if (tc->fib6_fd >= 0) {
        /* The same slot in the same readers' region as the IPv4 FIB. */
        ret = fib6_attach(&r->fib6, tc->fib6_fd, tc->fib_readers_fd, FIB_ROUTER_SLOT, err);
        if (ret < 0)
            return ret;
        ret = rt_nd_attach_router(&r->neigh6, tc->neigh6_fd, &r->ctr, err);
        if (ret < 0)
            return ret;
        rt_nd_forget_ports(&r->neigh6, cfg->nports, vacant);
        r->v6 = true;
    }
    /* A command a predecessor left unanswered is the first loop's to apply. */
    r->neigh_ack = ipc_ld_acq(&r->neigh.sh->cmd.ack);
    struct rt_cfg rc;
    rt_cfg_default(&rc);
    if (tc->icmp_rate) {
        rc.icmp_interval_ns = 1000000000ull / tc->icmp_rate;
        rc.icmp_burst = tc->icmp_burst;
    } else {
        rc.icmp_burst = 0; /* icmp_rate = 0: never send ICMP errors */
    }
    /* 0 keeps the default: the manifest's ranges exclude it. */
    if (tc->neigh_reachable_ms)
        rc.reachable_ns = tc->neigh_reachable_ms * 1000000ull;
    if (tc->neigh_retrans_ms)
        rc.retrans_ns = tc->neigh_retrans_ms * 1000000ull;
    if (tc->neigh_probes)
        rc.max_retries = tc->neigh_probes;
    if (tc->neigh_delay_ms)
        rc.delay_ns = tc->neigh_delay_ms * 1000000ull;
    if (tc->neigh_stale_ms)
        rc.stale_gc_ns = tc->neigh_stale_ms * 1000000ull;
    rt_ctx_init(&r->ctx, &r->svc.pool, &r->fib, &r->neigh, &r->ctr, &rc);
    r->ctx.nzones = (uint8_t)r->svc.nzones;
    for (unsigned z = 0; z < r->svc.nzones; z++)
        r->ctx.zpool[z] = r->svc.zpool[z];
    if (r->v6) {
        r->ctx.fib6 = &r->fib6;
        r->ctx.neigh6 = &r->neigh6;
    }
    r->ctx.nports = (uint16_t)cfg->nports;
    for (unsigned p = 0; p < cfg->nports; p++) {
        const struct ipc_svc_port *sp = &cfg->ports[p];
        memcpy(r->ctx.port[p].mac, sp->mac, 6);
        r->ctx.port[p].mtu = sp->mtu;
        r->ctx.port[p].ip = sp->addr;
        r->ctx.port[p].plen = sp->plen;
        r->ctx.port[p].sw_offload = sp->driver == IPC_DRV_AFXDP;
        r->ctx.port[p].rx_partial = (sp->flags & IPC_PORT_F_RX_PARTIAL) != 0;
        r->flt_in |= (sp->flags & IPC_PORT_F_FILTER) ? 1u << p : 0;
        const struct tbl_port6 *p6 = &tc->port6[p];
        r->ctx.port[p].ll6 = -1;
        r->ctx.port[p].ra_interval_s = r->v6 ? p6->ra_interval_s : 0;
        r->ctx.port[p].name = sp->name;
        if (cfg->port_zone[p] >= r->svc.nzones)
            return ipc_errf(err, -EPROTO, "port %.15s: zone %u of %u", sp->name, cfg->port_zone[p], r->svc.nzones);
        r->ctx.port_zone[p] = cfg->port_zone[p];
        if (tc->cp_pair[p] < cfg->nports && tc->cp_pair[p] != p) {
            r->ctx.port[p].cp = tc->cp_pair[p];
            r->ctx.port[p].cp_host = tc->cp_host[p] != 0;
        }
        if (r->ctx.port[p].cp_host) { /* it has no address of its own: the router answers none there */
            r->ctx.port[p].ip = 0;
            r->ctx.port[p].plen = 32;
        }
        for (unsigned k = 0; r->v6 && k < p6->n && k < RT_ADDR6_MAX; k++) {
            struct rt_addr6 *a = &r->ctx.port[p].a6[r->ctx.port[p].n6++];
            memcpy(a->a, p6->a[k].addr, 16);
            a->plen = p6->a[k].plen <= 128 ? p6->a[k].plen : 128;
            if (a->a[0] == 0xfe && (a->a[1] & 0xc0) == 0x80 && r->ctx.port[p].ll6 < 0)
                r->ctx.port[p].ll6 = (int8_t)k;
        }
    }
    for (unsigned i = 0; i < r->svc.n_out; i++) {
        unsigned p = cfg->out[i].port;
        if (p < RT_MAX_PORTS && (cfg->out[i].flags & IPC_RING_F_FILTER))
            r->flt_out[p] = (uint8_t)(i + 1);
        else if (p < RT_MAX_PORTS)
            r->out_ring[p][r->out_n[p]++] = (uint8_t)i;
        r->out_zone[i] = (uint8_t)cfg->out[i].zone;
        if (cfg->out[i].zone >= r->svc.nzones || (p < cfg->nports && cfg->out[i].zone != cfg->port_zone[p]))
            return ipc_errf(err, -EPROTO, "output ring %u: zone %u, its port's is another or none", i, cfg->out[i].zone);
    }
    for (unsigned i = 0; i < r->svc.n_in; i++) {
        unsigned p = cfg->in[i].port;
        r->in_pair[i] = p < cfg->nports && r->ctx.port[p].cp_host ? r->ctx.port[p].cp : RT_CP_NONE;
        r->in_zone[i] = (uint8_t)cfg->in[i].zone;
        if (cfg->in[i].zone >= r->svc.nzones)
            return ipc_errf(err, -EPROTO, "input ring %u: zone %u of %u", i, cfg->in[i].zone, r->svc.nzones);
    }
    for (unsigned z = 0; z < r->svc.nzones; z++) {
        r->hold_next[z] = malloc((size_t)r->svc.zpool[z]->nbufs * sizeof(*r->hold_next[z]));
        if (!r->hold_next[z])
            return ipc_errf(err, -ENOMEM, "hold queues of %u buffers: out of memory", r->svc.zpool[z]->nbufs);
    }
    for (unsigned i = 0; i < r->svc.n_out; i++)
        rt_fq_init(&r->hold[i], RT_HOLD);
    memset(r->in_paused, RT_IN_FREE, sizeof(r->in_paused));
    r->tx = (struct rt_burst){.bufs = r->txb, .n = 0, .cap = RT_TX_CAP, .flush = rt_flush_full, .arg = r};
    rt_ctr_sync(r, true); /* what the restart forgot (pending queues) shows at once */
    return 0;
}

static unsigned rt_flow_queue(const struct ipc_pool *pool, ipc_buf b, unsigned n);

/* Move what output ring @o's hold queue holds into the ring, in turn order
 * (fq.h), as far as the ring has room. Returns how many moved. */
static uint32_t rt_hold_drain(struct rt_proc *r, unsigned o)
{
    struct rt_fq *h = &r->hold[o];
    struct ipc_ring_prod *p = &r->svc.out[o];
    uint32_t moved = 0;
    while (h->held) {
        uint32_t room = ipc_ring_free_count(p, RT_BURST);
        if (!room)
            break;
        ipc_buf b[RT_BURST];
        uint32_t n = rt_fq_pop(h, r->hold_next[r->out_zone[o]], b, room < RT_BURST ? room : RT_BURST);
        uint32_t sent = ipc_ring_enq_burst(p, b, n);
        moved += n;
        if (ipc_unlikely(sent < n)) {
            /* Room the ring said it had and then had not: only a consumer
             * that moves its index back does that. Dropped and counted. */
            ipc_count(&p->sh->full_drops, n - sent);
            ipc_pool_free(r->svc.zpool[r->out_zone[o]], b + sent, n - sent);
            break;
        }
    }
    if (moved) {
        r->held -= moved;
        ipc_wake_mark(&r->svc.wake, p);
    }
    if (h->held < RT_HOLD_LOW)
        r->congested_ns[o] = 0; /* drained: the next time over RT_HOLD_HIGH, inputs wait again */
    return moved;
}

/* Every hold queue into its ring, first thing in a loop: the driver has had
 * time to make room since the last. Returns how many moved. */
static uint32_t rt_hold_drain_all(struct rt_proc *r)
{
    uint32_t moved = 0;
    for (unsigned o = 0; o < r->svc.n_out && r->held; o++)
        if (r->hold[o].held)
            moved += rt_hold_drain(r, o);
    return moved;
}

/* One send to output ring @o, behind what its hold queue holds (a flow's
 * order is kept): what the ring has no room for is held, and what the hold
 * queue pushes out is dropped, counted and freed. The wake-up is owed. */
static void rt_send_ring(struct rt_proc *r, unsigned o, ipc_buf *bufs, uint32_t n)
{
    struct ipc_ring_prod *p = &r->svc.out[o];
    struct rt_fq *h = &r->hold[o];
    struct ipc_pool *pool = r->svc.zpool[r->out_zone[o]];
    uint32_t sent = 0, dropped = 0;
    if (!h->held || (rt_hold_drain(r, o), !h->held)) {
        sent = ipc_ring_enq_burst(p, bufs, n);
        if (sent)
            ipc_wake_mark(&r->svc.wake, p);
    }
    for (uint32_t i = sent; i < n; i++) {
        ipc_buf d = rt_fq_push(h, r->hold_next[r->out_zone[o]], rt_flow_queue(pool, bufs[i], RT_FQ_BUCKETS), bufs[i]);
        r->fed |= 1u << o;
        if (d == IPC_BUF_NONE) {
            r->held++;
        } else {
            ipc_pool_free(pool, &d, 1);
            dropped++;
        }
    }
    if (r->held > r->held_max)
        r->held_max = r->held;
    if (dropped)
        ipc_count(&p->sh->full_drops, dropped);
}

/* Stopping (a restart or an upgrade under load): hand the hold queues to
 * their rings rather than drop them. The drivers and shapers behind those
 * rings run on and make room: wait for it, waking them, for at most
 * RT_STOP_DRAIN_MS, so that a handover does not throw away the backlog of
 * a burst it met. What is left then goes back to the pool, counted as the
 * ring's full_drops. */
static void rt_hold_free(struct rt_proc *r)
{
    uint64_t give_up = ipc_svc_now_ns() + RT_STOP_DRAIN_MS * 1000000ull;
    while (r->held) {
        if (rt_hold_drain_all(r))
            continue;
        ipc_svc_flush(&r->svc);
        if (ipc_svc_now_ns() >= give_up)
            break;
        ipc_svc_nap_us(&r->svc, NULL, 0, 200);
    }
    ipc_svc_flush(&r->svc);
    for (unsigned o = 0; o < r->svc.n_out; o++) {
        ipc_buf b[RT_BURST];
        uint32_t n;
        while ((n = rt_fq_pop(&r->hold[o], r->hold_next[r->out_zone[o]], b, RT_BURST)) > 0) {
            ipc_count(&r->svc.out[o].sh->full_drops, n);
            ipc_pool_free(r->svc.zpool[r->out_zone[o]], b, n);
        }
    }
    r->held = 0;
}

/*
 * The flow of a packet as one of @n queues: addresses, and ports for TCP
 * and UDP unless it is a fragment (IPv4) or has extension headers before
 * them (IPv6: the flow label would do, but not every host sets it), so that
 * a flow keeps one queue (and its order) and flows spread. Anything else
 * (ARP, ND) takes the first queue.
 */
static unsigned rt_flow_queue(const struct ipc_pool *pool, ipc_buf b, unsigned n)
{
    const uint8_t *eth = ipc_pool_data(pool, b);
    uint32_t h;
    if (pkt_eth_type(eth) == PKT_ETH_P_IPV6) {
        const uint8_t *ip6 = eth + PKT_ETH_HLEN;
        h = 0;
        for (unsigned k = 0; k < 32; k += 4) /* both addresses */
            h = (h ^ pkt_get32(ip6 + PKT_IP6_SRC + k)) * RT_HASH_MUL1;
        uint8_t nxt = ip6[PKT_IP6_NXT];
        if ((nxt == PKT_IP_PROTO_TCP || nxt == PKT_IP_PROTO_UDP) &&
            ipc_pool_meta(pool, b)->len >= PKT_ETH_HLEN + PKT_IP6_HLEN + 4)
            h ^= pkt_get32(ip6 + PKT_IP6_HLEN + PKT_L4_SPORT) * RT_HASH_MUL2;
        h *= RT_HASH_MUL1;
        return (unsigned)(((uint64_t)(h >> 16) * n) >> 16);
    }
    if (pkt_eth_type(eth) != PKT_ETH_P_IP)
        return 0;
    const uint8_t *ip = eth + PKT_ETH_HLEN;
    h = pkt_get32(ip + PKT_IP_SRC) ^ pkt_get32(ip + PKT_IP_DST) * RT_HASH_MUL1;
    if (!pkt_ip_is_fragment(ip) && pkt_ip_has_ports(ip))
        h ^= pkt_get32(ip + pkt_ip_hlen(ip) + PKT_L4_SPORT) * RT_HASH_MUL2; /* both ports */
    h *= RT_HASH_MUL1;
    /* The top 16 bits, scaled to [0, n) without a division. */
    return (unsigned)(((uint64_t)(h >> 16) * n) >> 16);
}

/*
 * A port's run of packets, in the current zone, into the port's zone: a
 * copy each when the port is in another (rt_zone_move). One compare per
 * run when it is not, which is every run with one zone. Returns how many
 * are left (a copy the egress pool had no room for is dropped).
 */
static uint32_t rt_zone_run(struct rt_proc *r, uint16_t port, ipc_buf *bufs, uint32_t n)
{
    if (ipc_likely(rt_port_zone(&r->ctx, port) == r->ctx.zone))
        return n;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        ipc_buf b = rt_zone_move(&r->ctx, bufs[i], port);
        if (b != IPC_BUF_NONE)
            bufs[k++] = b;
    }
    return k;
}

/* Of a run for @port (one the filter does not sit on), what came in by a
 * port it does goes to the filter's egress first (docs/filter.md); what
 * stays in @bufs is returned. */
static uint32_t rt_to_filter(struct rt_proc *r, uint16_t port, ipc_buf *bufs, uint32_t n)
{
    ipc_buf via[RT_TX_CAP];
    uint32_t nv = 0, k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint16_t in = ipc_pool_meta(r->ctx.pool, bufs[i])->in_port;
        if (in < 32 && (r->flt_in >> in & 1))
            via[nv++] = bufs[i];
        else
            bufs[k++] = bufs[i];
    }
    if (nv)
        rt_send_ring(r, r->flt_out[port] - 1u, via, nv);
    return k;
}

/* Sort the emitted packets onto their egress rings: one send per ring. */
static void rt_flush_tx(struct rt_proc *r)
{
    struct rt_burst *tx = &r->tx;
    struct ipc_pool *pool = r->ctx.pool; /* a burst holds the current zone's handles */
    uint32_t done = 0;
    while (done < tx->n) {
        /* Gather the run of packets for the first port still waiting; a
         * burst usually goes to one or two ports, so this is a pass or two. */
        uint16_t port = ipc_pool_meta(pool, tx->bufs[done])->out_port;
        ipc_buf same[RT_TX_CAP];
        uint32_t n = 0, keep = done;
        for (uint32_t i = done; i < tx->n; i++) {
            ipc_buf b = tx->bufs[i];
            if (ipc_pool_meta(pool, b)->out_port == port)
                same[n++] = b;
            else
                tx->bufs[keep++] = b;
        }
        tx->n = keep;
        if (ipc_unlikely(r->flt_in) && port < RT_MAX_PORTS && r->flt_out[port] && !(n = rt_to_filter(r, port, same, n)))
            continue;
        unsigned nq = port < RT_MAX_PORTS ? r->out_n[port] : 0;
        if (nq)
            n = rt_zone_run(r, port, same, n);
        if (nq == 1) {
            rt_send_ring(r, r->out_ring[port][0], same, n);
        } else if (nq > 1) {
            /* Several queues: split by flow, keeping each flow's order. */
            ipc_buf byq[IPC_SVC_MAX_RINGS][RT_TX_CAP];
            uint32_t cnt[IPC_SVC_MAX_RINGS] = {0};
            for (uint32_t i = 0; i < n; i++) {
                unsigned q = rt_flow_queue(rt_port_pool(&r->ctx, port), same[i], nq);
                byq[q][cnt[q]++] = same[i];
            }
            for (unsigned q = 0; q < nq; q++)
                if (cnt[q])
                    rt_send_ring(r, r->out_ring[port][q], byq[q], cnt[q]);
        } else {
            r->ctr.c[RT_CTR_DROP_BAD_NEXTHOP] += n;
            ipc_pool_free(pool, same, n);
        }
    }
    tx->n = 0;
}

static void rt_flush_full(struct rt_burst *tx, void *arg)
{
    (void)tx;
    rt_flush_tx(arg);
}

/*
 * Backpressure. A driver whose device is slower than the router (a TAP
 * write runs the receiver's whole stack) would otherwise have the router
 * read, route and hold a burst only to drop its tail at a full hold queue:
 * work spent on packets thrown away, past the point where they are
 * cheapest to drop. So an input ring whose last burst fed a hold queue over
 * RT_HOLD_HIGH is not read until that queue drains under RT_HOLD_LOW: the
 * input ring fills, its driver stops taking from its device (both drivers
 * arm no more reads than the ring has room for), and the excess waits in
 * the device's own queue, or is dropped there by the kernel.
 *
 * Only the input that feeds the queue waits; the others are read. And for
 * RT_PAUSE_NS (20 ms) at most each time the queue goes over RT_HOLD_HIGH:
 * a queue that has not drained to RT_HOLD_LOW by then holds no one back,
 * and drops as before, until its driver has taken enough to bring it under
 * RT_HOLD_LOW. So a driver that stops taking (stopped, hung, hostile) or
 * takes a trickle delays the other traffic of an input that shares its
 * queue's flows by 20 ms per 512 packets it takes, no more; a port slower
 * than 512 packets in 20 ms (25,600 a second) gets no backpressure.
 */
static bool rt_out_congested(const struct rt_proc *r, unsigned o, uint32_t over)
{
    return r->hold[o].held > over && r->congested_ns[o] && r->now - r->congested_ns[o] < RT_PAUSE_NS;
}

/* After input @i's burst was flushed: wait for the first output ring it fed past RT_HOLD_HIGH. */
static void rt_input_check(struct rt_proc *r, unsigned i)
{
    for (uint32_t f = r->fed; f; f &= f - 1) {
        unsigned o = (unsigned)__builtin_ctz(f);
        if (r->hold[o].held > RT_HOLD_HIGH && !r->congested_ns[o])
            r->congested_ns[o] = r->now | 1; /* never 0, which means not congested */
        if (rt_out_congested(r, o, RT_HOLD_HIGH)) {
            r->in_paused[i] = (uint8_t)o;
            return;
        }
    }
}

/* Is input @i waiting for its output ring to drain? Counted in rx_paused. */
static bool rt_input_paused(struct rt_proc *r, unsigned i)
{
    unsigned o = r->in_paused[i];
    if (o == RT_IN_FREE)
        return false;
    if (rt_out_congested(r, o, RT_HOLD_LOW)) {
        r->paused++;
        return true;
    }
    r->in_paused[i] = RT_IN_FREE;
    return false;
}

/* Does any input ring hold a packet? (Only our cached or the shared producer
 * index is read: no FIB batch, no fence.) */
static bool rt_input_ready(struct rt_proc *r)
{
    for (unsigned i = 0; i < r->svc.n_in; i++)
        if (ipc_ring_avail(&r->svc.in[i], 1))
            return true;
    return false;
}

/*
 * The loop. With poll_us > 0 (the manifest's [service router] poll_us), a
 * loop that finds no work keeps watching the input rings for up to poll_us
 * after the last packet before it arms the wake words and sleeps: at a
 * steady packet rate the drivers then need not wake us (a cross-core
 * eventfd wake-up and the two context switches cost tens of µs on this kind
 * of VM), and an idle router still sleeps poll_us after its last packet.
 */
static void rt_run(struct rt_proc *r)
{
    uint64_t next_tick = 0;
    uint64_t poll_ns = (uint64_t)r->svc.cfg->poll_us * 1000u;
    uint64_t last_work = 0;
    int idle = ipc_svc_idle_ms(&r->svc);
    struct ipc_svc *svc = &r->svc;
    while (!stop && !svc->orphan_stop) {
        uint64_t c = ipc_stage_start(svc);
        uint64_t now = ipc_svc_now_ns();
        uint32_t moved = 0;
        r->now = now;
        /* The batch's one FIB read section: every burst, the ARP timers and
         * the flushes run inside it, and it closes before the loop polls
         * or sleeps, so the writer's reclaim waits one pass at most. */
        fib_read_begin(&r->fib);
        if (r->held)
            r->held_stuck = rt_hold_drain_all(r) ? 0 : r->held_stuck + 1;
        bool paused = false;
        for (unsigned i = 0; i < r->svc.n_in; i++) {
            if (rt_input_paused(r, i)) {
                paused = true;
                continue;
            }
            ipc_buf b[RT_BURST];
            rt_zone_switch(&r->ctx, r->in_zone[i], &r->tx); /* the burst is empty here: no flush */
            uint32_t n = ipc_ring_recv(&r->svc.in[i], r->ctx.pool, b, RT_BURST);
            if (!n)
                continue;
            moved += n;
            c = ipc_stage_end(svc, RT_ST_RX, c, n);
            if (ipc_unlikely(r->in_pair[i] != RT_CP_NONE))
                rt_punt_from_host(&r->ctx, b, n, r->svc.cfg->in[i].port, r->in_pair[i], &r->tx);
            else if (ipc_unlikely(ipc_trace_on())) /* `ringrouter trace`: one branch a burst when off */
                rt_trace_burst(&r->ctx, b, n, now, &r->tx);
            else
                rt_input_burst(&r->ctx, b, n, now, &r->tx);
            c = ipc_stage_end(svc, RT_ST_ROUTE, c, n);
            uint32_t out = r->tx.n;
            r->fed = 0;
            rt_flush_tx(r);
            rt_input_check(r, i);
            c = ipc_stage_end(svc, RT_ST_HANDOFF, c, out);
        }
        /* Looking at rings that turned out empty is receive work too. */
        c = ipc_stage_end(svc, RT_ST_RX, c, 0);
        bool ticked = now >= next_tick;
        if (ticked) {
            rt_neigh_tick(&r->ctx, now, &r->tx);
            rt_nd_tick(&r->ctx, now, &r->tx);
            rt_ecmp_tick(&r->ctx, now, &r->tx);
            uint32_t out = r->tx.n;
            rt_flush_tx(r);
            next_tick = now + RT_TICK_NS;
            c = ipc_stage_end(svc, RT_ST_ARP, c, out);
        }
        /* A neighbour command from the supervisor (`ringrouter neigh ...`):
         * one load of a line that changes only when someone types one. */
        uint64_t cmd = ipc_ld_acq(&r->neigh.sh->cmd.seq);
        if (ipc_unlikely(cmd != r->neigh_ack)) {
            rt_neigh_command(&r->ctx, cmd, now, &r->tx);
            r->neigh_ack = cmd;
            rt_flush_tx(r);
            ticked = true; /* publish the counters it moved */
        }
        fib_read_end(&r->fib);
        if (moved || ticked) {
            rt_ctr_sync(r, true);
            c = ipc_stage_end(svc, RT_ST_PUBLISH, c, 0);
        }
        c = ipc_stage_flush(svc, RT_ST_WAKE, c);
        ipc_svc_beat(&r->svc);
        if (moved) {
            last_work = now;
            continue;
        }
        if (poll_ns && !paused && now - last_work < poll_ns) {
            /* Busy-poll: watch the rings until work, the budget's end or the
             * ARP timer; the heartbeat keeps going meanwhile. */
            uint64_t t = now;
            while (!stop && !rt_input_ready(r) && t - last_work < poll_ns && t < next_tick) {
                rt_cpu_relax();
                ipc_count(&r->svc.stats->heartbeat, 1);
                t = ipc_svc_now_ns();
            }
            ipc_stage_end(svc, RT_ST_POLL, c, 0);
            continue;
        }
        /* Sleep until work arrives, the ARP timer is due, or the heartbeat;
         * with packets held, RT_HELD_WAIT_US at most: the drivers do not
         * wake us when they make room, and a driver that empties a ring
         * while we sleep idles until we wake (the 1 ms this was before
         * left a port idle most of that). When the drains have moved
         * nothing for RT_STUCK_LOOPS loops, the consumer is not taking (it
         * is stopped, hung or hostile): RT_STUCK_WAIT_US, so that it
         * cannot keep us at 20,000 wake-ups a second. */
        uint64_t until_tick = (next_tick - now) / 1000000ull + 1;
        int t = until_tick < (uint64_t)idle ? (int)until_tick : idle;
        int64_t us = (int64_t)t * 1000;
        if (r->held)
            us = r->held_stuck < RT_STUCK_LOOPS ? RT_HELD_WAIT_US : RT_STUCK_WAIT_US;
        if (paused) {
            /* An input waits on purpose, with packets in its ring: arm the
             * others only, so that a packet on one of them still wakes us. */
            struct ipc_ring_cons *open[IPC_SVC_MAX_RINGS];
            unsigned n_open = 0;
            for (unsigned i = 0; i < svc->n_in; i++)
                if (r->in_paused[i] == RT_IN_FREE)
                    open[n_open++] = svc->in_ptr[i];
            ipc_svc_nap_us(svc, open, n_open, RT_HELD_WAIT_US);
        } else
            ipc_svc_wait_us(&r->svc, us);
    }
}

int main(void)
{
    static struct rt_proc r;
    struct ipc_err err = {{0}};
    if (ipc_svc_catch_stop(&stop) < 0) {
        fprintf(stderr, "rr-router: blocking SIGTERM and SIGINT for the signalfd: %m\n");
        return 111;
    }
    if (rt_setup(&r, &err) < 0) {
        fprintf(stderr, "rr-router: %s\n", err.msg);
        return 111;
    }
    if (ipc_svc_ready(&r.svc, &err) < 0) {
        fprintf(stderr, "rr-router: %s\n", err.msg);
        return 111;
    }
    rt_run(&r);
    /* Give back what we hold: a clean exit holding a buffer is a leak to
     * the supervisor's census. rt_flush_tx leaves nothing in r.tx. */
    rt_hold_free(&r);
    rt_neigh_free_pending(&r.ctx);
    rt_nd_free_pending(&r.ctx);
    rt_ctr_sync(&r, true);
    fib_detach(&r.fib);
    neigh_detach(&r.neigh);
    if (r.v6) {
        fib6_detach(&r.fib6);
        neigh6_detach(&r.neigh6);
    }
    ipc_svc_close(&r.svc);
    return 0;
}
