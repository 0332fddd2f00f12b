/* SPDX-License-Identifier: MIT */
/*
 * services/router/nd.c: Neighbor Discovery (RFC 4861) for the router:
 * validation of solicitations and advertisements (§7.1), answering
 * solicitations for the port's addresses in place (§7.2.4), learning
 * (§7.2.3, §7.2.5), the pending queues (bounded as ARP's, neigh.c) and the
 * NUD timers (§7.3). Buffer ownership across a restart is neigh.h's.
 */
#include "nd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ecmp.h"
#include "icmp6.h"
#include "ipv6.h"
#include "punt.h"

int rt_nd_attach_router(struct neigh6_table *nt, int fd, struct rt_counters *ctr, struct ipc_err *err)
{
    int ret = neigh6_attach(nt, fd, err);
    if (ret < 0)
        return ret;
    /* The handles belong to the dead instance's owner id and were reclaimed. */
    for (uint32_t i = 0; i <= nt->mask; i++) {
        struct neigh6_entry *e = &nt->e[i];
        if (e->used && e->qlen) {
            ctr->c[RT_CTR_DROP_PENDING_RESTART] += e->qlen;
            e->qlen = 0;
        }
        if (e->seq & 1)
            e->seq++;
    }
    nt->sh->queued = 0;
    ctr->pending6 = 0;
    return 0;
}

int rt_nd_forget_ports(struct neigh6_table *nt, unsigned nports, uint32_t vacant)
{
    int n = 0;
    for (uint32_t i = 0; i <= nt->mask; i++)
        while (nt->e[i].used && (nt->e[i].port >= nports || (nt->e[i].port < 32 && (vacant >> nt->e[i].port & 1)))) {
            neigh6_remove(nt, &nt->e[i]); /* what follows may move into i: look again */
            n++;
        }
    return n;
}

void rt_nd_free_pending(struct rt_ctx *ctx)
{
    struct neigh6_table *nt = ctx->neigh6;
    if (!nt)
        return;
    for (uint32_t i = 0; i <= nt->mask; i++) {
        struct neigh6_entry *e = &nt->e[i];
        if (!e->used || !e->qlen)
            continue;
        ctx->ctr->c[RT_CTR_DROP_PENDING_RESTART] += e->qlen;
        ipc_pool_free(rt_port_pool(ctx, e->port), e->q, e->qlen);
        neigh6_wbegin(e);
        e->qlen = 0;
        neigh6_wend(e);
    }
    nt->sh->queued = 0;
    ctx->ctr->pending6 = 0;
    memset(ctx->pending_port, 0, sizeof(ctx->pending_port));
}

/* @n packets that waited on port @port stop waiting. */
static void rt_nd_pending_done(struct rt_ctx *ctx, uint16_t port, uint16_t n)
{
    if (port < RT_MAX_PORTS)
        ctx->pending_port[port] -= n < ctx->pending_port[port] ? n : ctx->pending_port[port];
    ctx->neigh6->sh->queued -= n < ctx->neigh6->sh->queued ? n : ctx->neigh6->sh->queued;
    ctx->ctr->pending6 = ctx->neigh6->sh->queued;
}

/* ---- messages ---- */

/* A buffer for an ND message of ours, or none (counted). */
static bool rt_nd_buf(struct rt_ctx *ctx, ipc_buf *b)
{
    if (ipc_pool_alloc(ctx->pool, b, 1) == 1)
        return true;
    rt_count(ctx, RT_CTR_DROP_NO_BUFS);
    return false;
}

/*
 * The rest of an ND message of ours whose ICMPv6 body (@icmp_len bytes, its
 * checksum field zero) and Ethernet and IPv6 destinations are in @b: our MAC,
 * the IPv6 header from @src with hop limit 255, the checksum, the length;
 * counted in @ctr and queued out of @port.
 */
static void rt_nd_emit(struct rt_ctx *ctx, uint16_t port, ipc_buf b, const uint8_t *src, uint32_t icmp_len,
                       unsigned ctr, struct rt_burst *tx)
{
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint8_t *ip6 = f + PKT_ETH_HLEN, *ic = ip6 + PKT_IP6_HLEN;
    memcpy(f + PKT_ETH_SRC, ctx->port[port].mac, PKT_ETH_ALEN);
    pkt_put16(f + PKT_ETH_TYPE, PKT_ETH_P_IPV6);
    pkt_put32(ip6 + PKT_IP6_VTC, 6u << 28);
    pkt_put16(ip6 + PKT_IP6_PLEN, (uint16_t)icmp_len);
    ip6[PKT_IP6_NXT] = PKT_IP_PROTO_ICMPV6;
    ip6[PKT_IP6_HLIM] = RT_ND_HLIM;
    memcpy(ip6 + PKT_IP6_SRC, src, 16);
    uint32_t sum = rt_ip6_pseudo_sum(ip6 + PKT_IP6_SRC, ip6 + PKT_IP6_DST, icmp_len, PKT_IP_PROTO_ICMPV6);
    pkt_put16(ic + 2, pkt_csum_fold(pkt_csum_add(sum, ic, icmp_len, false)));
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    pkt_set_len(m, PKT_ETH_HLEN + PKT_IP6_HLEN + icmp_len);
    m->in_port = IPC_PORT_NONE;
    m->out_port = port;
    rt_count(ctx, ctr);
    rt_tx(ctx, tx, b);
}

int rt_nd_solicit(struct rt_ctx *ctx, uint16_t port, const uint8_t *target, const uint8_t *dmac, struct rt_burst *tx)
{
    const struct rt_port *pt = &ctx->port[port];
    const uint8_t *src = pt->ll6 >= 0 ? pt->a6[pt->ll6].a : rt_ip6_src_for(ctx, port, target);
    ipc_buf b;
    if (!src)
        return -EINVAL;
    if (!rt_nd_buf(ctx, &b))
        return -ENOBUFS;
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint8_t *ip6 = f + PKT_ETH_HLEN, *ic = ip6 + PKT_IP6_HLEN;
    uint32_t icmp_len = RT_ND_NS_LEN + 8;
    if (dmac) {
        memcpy(f + PKT_ETH_DST, dmac, PKT_ETH_ALEN);
        memcpy(ip6 + PKT_IP6_DST, target, 16);
    } else {
        rt_ip6_snma(target, ip6 + PKT_IP6_DST);
        rt_ip6_mcast_mac(ip6 + PKT_IP6_DST, f + PKT_ETH_DST);
    }
    memset(ic, 0, icmp_len);
    ic[0] = RT_ICMP6_NS;
    memcpy(ic + 8, target, 16);
    ic[RT_ND_NS_LEN] = RT_ND_OPT_SLLA;
    ic[RT_ND_NS_LEN + 1] = 1; /* in units of 8 bytes */
    memcpy(ic + RT_ND_NS_LEN + 2, pt->mac, PKT_ETH_ALEN);
    rt_nd_emit(ctx, port, b, src, icmp_len, RT_CTR_ND_NS_TX, tx);
    return 0;
}

/* ---- Duplicate Address Detection (RFC 4862 §5.4), optimistic ---- */

#define RT_DAD_WAIT_NS 1000000000ull /* RetransTimer: how long an answer may take */

/*
 * At the first tick, one probe per address of @port: a solicitation from
 * :: to the address's solicited-node group, no link-layer option. The
 * addresses stay in use meanwhile (optimistic, RFC 4429: a restart must not
 * stop forwarding); an advertisement for one within RT_DAD_WAIT_NS is a
 * conflict (rt_nd_dad_conflict).
 */
static void rt_nd_dad_probe(struct rt_ctx *ctx, uint16_t port, uint64_t now, struct rt_burst *tx)
{
    struct rt_port *pt = &ctx->port[port];
    static const uint8_t unspec[16];
    pt->dad_sent = true;
    pt->dad_until_ns = now + RT_DAD_WAIT_NS;
    for (unsigned k = 0; k < pt->n6; k++) {
        ipc_buf b;
        if (!rt_nd_buf(ctx, &b))
            return;
        uint8_t *f = ipc_pool_data(ctx->pool, b);
        uint8_t *ip6 = f + PKT_ETH_HLEN, *ic = ip6 + PKT_IP6_HLEN;
        rt_ip6_snma(pt->a6[k].a, ip6 + PKT_IP6_DST);
        rt_ip6_mcast_mac(ip6 + PKT_IP6_DST, f + PKT_ETH_DST);
        memset(ic, 0, RT_ND_NS_LEN);
        ic[0] = RT_ICMP6_NS;
        memcpy(ic + 8, pt->a6[k].a, 16);
        rt_nd_emit(ctx, port, b, unspec, RT_ND_NS_LEN, RT_CTR_ND_NS_TX, tx);
    }
}

/* Address @k of @port is someone else's (@mac advertised it): say so and
 * stop using it, as if the manifest had not given it. */
static void rt_nd_dad_conflict(struct rt_ctx *ctx, struct rt_port *pt, int k, const uint8_t *mac)
{
    char a[48];
    inet_ntop(AF_INET6, pt->a6[k].a, a, sizeof(a));
    fprintf(stderr,
            "rr-router: port %s: DAD: %s is already in use on the link (advertised by %02x:%02x:%02x:%02x:%02x:%02x); "
            "the router does not use it\n",
            pt->name ? pt->name : "?", a, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
    for (unsigned j = (unsigned)k; j + 1 < pt->n6; j++)
        pt->a6[j] = pt->a6[j + 1];
    pt->n6--;
    if (pt->ll6 == k)
        pt->ll6 = -1;
    else if (pt->ll6 > k)
        pt->ll6--;
    rt_count(ctx, RT_CTR_ND_DAD_CONFLICT);
}

/* ---- Router Advertisements (§6) ---- */

#define RT_RA_HLEN 16u          /* type .. retrans timer */
#define RT_ND_OPT_PREFIX 3u
#define RT_ND_OPT_MTU 5u
#define RT_RA_MIN_DELAY_NS 3000000000ull /* MIN_DELAY_BETWEEN_RAS (§10) */
#define RT_RA_VALID_S 2592000u  /* a prefix's valid lifetime: 30 days (§6.2.1's default) */
#define RT_RA_PREFERRED_S 604800u /* and its preferred lifetime: 7 days */

/*
 * One advertisement to all nodes on @port (§6.2.3), from the port's
 * link-local address: the router's lifetime (three periods, at most 9000 s),
 * its MAC, the link's MTU, and each global address's prefix, on-link and,
 * for a /64, for stateless autoconfiguration (RFC 4862).
 */
static int rt_nd_ra_send(struct rt_ctx *ctx, uint16_t port, uint64_t now, struct rt_burst *tx)
{
    struct rt_port *pt = &ctx->port[port];
    if (pt->ll6 < 0)
        return -EINVAL; /* §6.1.2 takes an RA from a link-local source only */
    ipc_buf b;
    if (!rt_nd_buf(ctx, &b))
        return -ENOBUFS;
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint8_t *ip6 = f + PKT_ETH_HLEN, *ic = ip6 + PKT_IP6_HLEN;
    static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
    uint32_t life = pt->ra_interval_s * 3 < 9000 ? pt->ra_interval_s * 3 : 9000;
    uint32_t len = RT_RA_HLEN;
    memset(ic, 0, RT_RA_HLEN + 16 + 32 * RT_ADDR6_MAX);
    ic[0] = RT_ICMP6_RA;
    ic[4] = 64; /* the hop limit hosts should use */
    pkt_put16(ic + 6, (uint16_t)life);
    ic[len] = RT_ND_OPT_SLLA;
    ic[len + 1] = 1;
    memcpy(ic + len + 2, pt->mac, PKT_ETH_ALEN);
    len += 8;
    ic[len] = RT_ND_OPT_MTU;
    ic[len + 1] = 1;
    pkt_put32(ic + len + 4, pt->mtu);
    len += 8;
    for (unsigned k = 0; k < pt->n6; k++) {
        const struct rt_addr6 *a = &pt->a6[k];
        if (rt_ip6_is_ll(a->a))
            continue;
        uint8_t *o = ic + len;
        o[0] = RT_ND_OPT_PREFIX;
        o[1] = 4;
        o[2] = a->plen;
        o[3] = a->plen == 64 ? 0xc0 : 0x80; /* L, and A for a /64 */
        pkt_put32(o + 4, RT_RA_VALID_S);
        pkt_put32(o + 8, RT_RA_PREFERRED_S);
        memcpy(o + 16, a->a, 16);
        for (unsigned bit = a->plen; bit < 128; bit++)
            o[16 + bit / 8] &= (uint8_t)~(0x80u >> (bit % 8)); /* the prefix, not our address */
        len += 32;
    }
    rt_ip6_mcast_mac(all_nodes, f + PKT_ETH_DST);
    memcpy(ip6 + PKT_IP6_DST, all_nodes, 16);
    pt->ra_last_ns = now;
    rt_nd_emit(ctx, port, b, pt->a6[pt->ll6].a, len, RT_CTR_ND_RA_TX, tx);
    return 0;
}

/* The next unsolicited one: uniformly in [3/4, 1] of the period (§6.2.4's
 * randomness, so that routers on a link do not synchronise). */
static void rt_nd_ra_schedule(struct rt_port *pt, uint64_t now)
{
    uint64_t period = (uint64_t)pt->ra_interval_s * 1000000000ull;
    uint64_t x = (now ^ (now >> 17)) * 0x9e3779b97f4a7c15ull;
    pt->ra_next_ns = now + period - (x % (period / 4 + 1));
}

void rt_nd_rs_input(struct rt_ctx *ctx, ipc_buf b, uint32_t off, uint64_t now, struct rt_burst *tx)
{
    const struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    const uint8_t *ip6 = (const uint8_t *)ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN;
    uint32_t plen = pkt_get16(ip6 + PKT_IP6_PLEN);
    /* §6.1.1: hop limit 255, code 0, at least 8 bytes, a right checksum. */
    if (m->next != IPC_BUF_NONE || off + 8 > PKT_IP6_HLEN + plen || PKT_ETH_HLEN + PKT_IP6_HLEN + plen > m->len ||
        ip6[PKT_IP6_HLIM] != RT_ND_HLIM || ip6[off + 1] != 0 || !rt_icmp6_csum_ok(ctx, b, off)) {
        rt_drop(ctx, b, RT_CTR_ND_BAD);
        return;
    }
    rt_count(ctx, RT_CTR_ND_RS_RX);
    struct rt_port *pt = &ctx->port[m->in_port];
    ipc_pool_free(ctx->pool, &b, 1);
    if (!pt->ra_interval_s)
        return; /* ra = no on this port: a router that does not advertise stays quiet (§6.2.6) */
    /* §6.2.6: at most one answer per MIN_DELAY_BETWEEN_RAS, to all nodes;
     * a solicitation sooner moves the next advertisement up to then. */
    if (now - pt->ra_last_ns >= RT_RA_MIN_DELAY_NS || !pt->ra_last_ns) {
        rt_nd_ra_send(ctx, (uint16_t)(pt - ctx->port), now, tx);
        rt_nd_ra_schedule(pt, now);
    } else if (pt->ra_next_ns > pt->ra_last_ns + RT_RA_MIN_DELAY_NS) {
        pt->ra_next_ns = pt->ra_last_ns + RT_RA_MIN_DELAY_NS;
    }
}

/* ---- the table ---- */

/* As rt_neigh_evict (neigh.c): an incomplete entry near the clock hand
 * makes room for a new neighbour; a complete one never does. */
static bool rt_nd_evict(struct rt_ctx *ctx)
{
    struct neigh6_table *nt = ctx->neigh6;
    uint32_t look = nt->mask < RT_NEIGH_EVICT_SCAN ? nt->mask + 1 : RT_NEIGH_EVICT_SCAN;
    struct neigh6_entry *victim = NULL;
    for (uint32_t k = 0; k < look; k++) {
        struct neigh6_entry *e = &nt->e[(ctx->neigh6_hand + k) & nt->mask];
        if (e->used && e->state == NEIGH6_INCOMPLETE && (!victim || e->used_ns < victim->used_ns))
            victim = e;
    }
    ctx->neigh6_hand = (ctx->neigh6_hand + look) & nt->mask;
    if (!victim)
        return false;
    uint16_t n = victim->qlen < NEIGH_QMAX ? victim->qlen : NEIGH_QMAX;
    rt_count(ctx, RT_CTR_ND_EVICTED);
    ctx->ctr->c[RT_CTR_DROP_NEIGH_EVICTED] += n;
    ipc_pool_free(rt_port_pool(ctx, victim->port), victim->q, n);
    rt_nd_pending_done(ctx, victim->port, n);
    neigh6_remove(nt, victim);
    return true;
}

static struct neigh6_entry *rt_nd_new(struct rt_ctx *ctx, const uint8_t *ip)
{
    struct neigh6_entry *e = neigh6_insert(ctx->neigh6, ip);
    if (!e && rt_nd_evict(ctx))
        e = neigh6_insert(ctx->neigh6, ip);
    return e;
}

static void rt_nd_release(struct rt_ctx *ctx, struct neigh6_entry *e, uint16_t port, struct rt_burst *tx)
{
    uint16_t n = e->qlen;
    e->qlen = 0;
    rt_nd_pending_done(ctx, port, n);
    unsigned was = ctx->zone; /* they wait in @port's zone (rt_nd_hold) */
    rt_zone_switch(ctx, rt_port_zone(ctx, port), tx);
    for (uint16_t i = 0; i < n; i++)
        rt_fwd6_finish(ctx, e->q[i], e->mac, tx);
    rt_zone_switch(ctx, was, tx);
}

/* ---- the supervisor's commands (tables/neigh.h, "Commands") ---- */

uint64_t rt_nd_command(struct rt_ctx *ctx, uint64_t op, const uint8_t *ip, uint64_t port, const uint8_t *mac,
                       uint64_t now, struct rt_burst *tx, uint64_t *count)
{
    static const uint8_t zero[16];
    struct neigh6_table *nt = ctx->neigh6;
    if (!nt)
        return EAFNOSUPPORT;
    struct neigh6_entry *e = neigh6_find(nt, ip);
    if (op == NEIGH_OP_DEL6) {
        if (!e)
            return ENOENT;
        /* What waited for it goes, counted as drop_neigh_removed (as IPv4's). */
        uint16_t n = e->qlen < NEIGH_QMAX ? e->qlen : NEIGH_QMAX;
        ctx->ctr->c[RT_CTR_DROP_NEIGH_REMOVED] += n;
        ipc_pool_free(rt_port_pool(ctx, e->port), e->q, n);
        rt_nd_pending_done(ctx, e->port, n);
        e->qlen = 0;
        neigh6_remove(nt, e);
        *count = n;
        return 0;
    }
    if (port >= ctx->nports || ip[0] == 0xff || memcmp(ip, zero, 16) == 0 || pkt_mac_is_group(mac) ||
        memcmp(mac, zero, 6) == 0)
        return EINVAL;
    if (e && e->state == NEIGH6_STATIC && op != NEIGH_OP_REPLACE6 && (memcmp(e->mac, mac, 6) != 0 || e->port != port))
        return EEXIST;
    if (!e)
        e = rt_nd_new(ctx, ip);
    if (!e)
        return ENOSPC;
    uint16_t held_on = e->port; /* where its waiting packets are counted */
    neigh6_wbegin(e);
    memcpy(e->mac, mac, 6);
    e->port = (uint16_t)port;
    e->state = NEIGH6_STATIC;
    e->retries = 0;
    e->confirmed_ns = now;
    neigh6_wend(e);
    if (e->qlen)
        rt_nd_release(ctx, e, held_on, tx);
    return 0;
}

/* The link-layer address option of @kind in @opts[0..len), or NULL; false
 * when an option is malformed (length 0 or past the end: §7.1). */
static bool rt_nd_opts(const uint8_t *opts, uint32_t len, uint8_t kind, const uint8_t **lla)
{
    *lla = NULL;
    while (len > 0) {
        if (len < 2 || opts[1] == 0 || (uint32_t)opts[1] * 8 > len)
            return false;
        uint32_t ol = (uint32_t)opts[1] * 8;
        if (opts[0] == kind && ol >= 8)
            *lla = opts + 2;
        opts += ol;
        len -= ol;
    }
    return true;
}

/* Learn @mac for @ip on @port from a solicitation (§7.2.3): create STALE, or
 * update a changed MAC (STALE), or complete an incomplete entry. */
static void rt_nd_learn(struct rt_ctx *ctx, const uint8_t *ip, const uint8_t *mac, uint16_t port, uint64_t now,
                        struct rt_burst *tx)
{
    struct neigh6_entry *e = neigh6_find(ctx->neigh6, ip);
    if (!e) {
        e = rt_nd_new(ctx, ip);
        if (!e) {
            rt_count(ctx, RT_CTR_DROP_NEIGH_FULL);
            return;
        }
        neigh6_wbegin(e);
        memcpy(e->mac, mac, PKT_ETH_ALEN);
        e->port = port;
        e->state = NEIGH6_STALE;
        e->confirmed_ns = now;
        e->used_ns = now;
        neigh6_wend(e);
        rt_count(ctx, RT_CTR_ND_LEARNED);
        return;
    }
    if (e->state == NEIGH6_STATIC)
        return;
    uint16_t held_on = e->port;
    if (e->state == NEIGH6_INCOMPLETE || memcmp(e->mac, mac, PKT_ETH_ALEN) != 0 || e->port != port) {
        neigh6_wbegin(e);
        memcpy(e->mac, mac, PKT_ETH_ALEN);
        e->port = port;
        e->state = NEIGH6_STALE;
        e->retries = 0;
        neigh6_wend(e);
    }
    if (e->qlen)
        rt_nd_release(ctx, e, held_on, tx);
}

/* An advertisement for @target (§7.2.5). */
static void rt_nd_advert(struct rt_ctx *ctx, const uint8_t *target, uint8_t flags, const uint8_t *tlla, uint16_t port,
                         uint64_t now, struct rt_burst *tx)
{
    struct neigh6_entry *e = neigh6_find(ctx->neigh6, target);
    /* An incomplete entry was solicited on its port: an answer from another
     * link is not the one it waits for. */
    if (!e || e->state == NEIGH6_STATIC || e->port != port) {
        rt_count(ctx, RT_CTR_ND_IGNORED); /* unsolicited news of a stranger: nothing to learn */
        return;
    }
    uint16_t held_on = e->port;
    bool differs = tlla && memcmp(e->mac, tlla, PKT_ETH_ALEN) != 0;
    neigh6_wbegin(e);
    if (e->state == NEIGH6_INCOMPLETE) {
        if (!tlla) {
            neigh6_wend(e);
            rt_count(ctx, RT_CTR_ND_IGNORED);
            return;
        }
        memcpy(e->mac, tlla, PKT_ETH_ALEN);
        e->port = port;
        e->state = (flags & RT_ND_NA_S) ? NEIGH6_REACHABLE : NEIGH6_STALE;
        e->confirmed_ns = now;
        e->retries = 0;
    } else if (!(flags & RT_ND_NA_O) && differs) {
        if (e->state == NEIGH6_REACHABLE)
            e->state = NEIGH6_STALE; /* someone else claims it: stop trusting ours */
    } else {
        if (tlla)
            memcpy(e->mac, tlla, PKT_ETH_ALEN);
        if (flags & RT_ND_NA_S) {
            e->state = NEIGH6_REACHABLE;
            e->confirmed_ns = now;
            e->retries = 0;
        } else if (differs) {
            e->state = NEIGH6_STALE;
            e->retries = 0;
        }
    }
    e->is_router = (flags & RT_ND_NA_R) != 0;
    neigh6_wend(e);
    if (e->qlen && neigh6_usable(e))
        rt_nd_release(ctx, e, held_on, tx);
}

void rt_nd_input(struct rt_ctx *ctx, ipc_buf b, uint32_t off, uint64_t now, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint8_t *ip6 = f + PKT_ETH_HLEN;
    uint16_t port = m->in_port;
    const struct rt_port *pt = &ctx->port[port];
    uint32_t plen = pkt_get16(ip6 + PKT_IP6_PLEN);
    /* §7.1: single-frame (ND is small), hop limit 255 (it came from the
     * link itself), code 0, at least the fixed part, a right checksum. */
    if (m->next != IPC_BUF_NONE || off + RT_ND_NS_LEN > PKT_IP6_HLEN + plen ||
        PKT_ETH_HLEN + PKT_IP6_HLEN + plen > m->len || ip6[PKT_IP6_HLIM] != RT_ND_HLIM || ip6[off + 1] != 0 ||
        !rt_icmp6_csum_ok(ctx, b, off)) {
        rt_drop(ctx, b, RT_CTR_ND_BAD);
        return;
    }
    uint8_t *ic = ip6 + off;
    uint8_t type = ic[0];
    rt_count(ctx, type == RT_ICMP6_NS ? RT_CTR_ND_NS_RX : RT_CTR_ND_NA_RX);
    uint8_t target[16];
    memcpy(target, ic + 8, 16);
    const uint8_t *src = ip6 + PKT_IP6_SRC, *dst = ip6 + PKT_IP6_DST;
    bool dad = rt_ip6_is_unspec(src);
    const uint8_t *lla;
    if (rt_ip6_is_mcast(target) || !rt_nd_opts(ic + RT_ND_NS_LEN, PKT_IP6_HLEN + plen - off - RT_ND_NS_LEN,
                                               type == RT_ICMP6_NS ? RT_ND_OPT_SLLA : RT_ND_OPT_TLLA, &lla)) {
        rt_drop(ctx, b, RT_CTR_ND_BAD);
        return;
    }
    if (type == RT_ICMP6_NA) {
        /* §7.1.2: a multicast answer is never solicited. */
        if (rt_ip6_is_mcast(dst) && (ic[4] & RT_ND_NA_S)) {
            rt_drop(ctx, b, RT_CTR_ND_BAD);
            return;
        }
        int k = rt_ip6_port_addr(pt, target);
        if (k >= 0) {
            /* Someone answers for our address: within our probe's window, a
             * conflict (§5.4.4); later, news we ignore. */
            if (now < pt->dad_until_ns && lla && memcmp(lla, pt->mac, PKT_ETH_ALEN) != 0)
                rt_nd_dad_conflict(ctx, &ctx->port[port], k, lla);
            rt_drop(ctx, b, RT_CTR_ND_IGNORED);
            return;
        }
        rt_nd_advert(ctx, target, ic[4], lla, port, now, tx);
        /* The control namespace's kernel resolves its neighbours too (punt.h). */
        if (!rt_punt_host(ctx, b, tx))
            ipc_pool_free(ctx->pool, &b, 1);
        return;
    }
    /* A solicitation. §7.1.1: from :: only to a solicited-node group, without SLLA. */
    uint8_t snma[16];
    rt_ip6_snma(target, snma);
    if (dad && (memcmp(dst, snma, 16) != 0 || lla)) {
        rt_drop(ctx, b, RT_CTR_ND_BAD);
        return;
    }
    if (rt_ip6_is_mcast(dst) && memcmp(dst, snma, 16) != 0) {
        rt_drop(ctx, b, RT_CTR_ND_BAD);
        return;
    }
    if (rt_ip6_port_addr(pt, target) < 0) {
        rt_drop(ctx, b, RT_CTR_ND_IGNORED); /* not ours on this link */
        return;
    }
    uint8_t smac[6], sip[16];
    memcpy(smac, lla ? lla : f + PKT_ETH_SRC, PKT_ETH_ALEN);
    memcpy(sip, src, 16);
    if (lla && !rt_ip6_on_link(pt, sip))
        rt_count(ctx, RT_CTR_ND_IGNORED); /* a source of another link: answered, not learnt */
    else if (lla)
        rt_nd_learn(ctx, sip, lla, port, now, tx);
    if (pkt_mac_is_group(smac)) {
        rt_drop(ctx, b, RT_CTR_ND_BAD);
        return;
    }
    if (dad) {
        /* A host's Duplicate Address Detection probe for one of ours:
         * defend it (§7.2.4), to all nodes, not solicited, so that the
         * host gives the address up. */
        static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
        memcpy(sip, all_nodes, 16);
        rt_ip6_mcast_mac(all_nodes, smac);
        rt_count(ctx, RT_CTR_ND_DAD_DEFENDED);
    }
    /* Answer in place (§7.2.4): the solicitation's buffer becomes the
     * advertisement, with no extension headers, from the target itself. */
    uint32_t icmp_len = RT_ND_NS_LEN + 8;
    memcpy(f + PKT_ETH_DST, smac, PKT_ETH_ALEN);
    memcpy(f + PKT_ETH_SRC, pt->mac, PKT_ETH_ALEN);
    pkt_put32(ip6 + PKT_IP6_VTC, 6u << 28);
    pkt_put16(ip6 + PKT_IP6_PLEN, (uint16_t)icmp_len);
    ip6[PKT_IP6_NXT] = PKT_IP_PROTO_ICMPV6;
    ip6[PKT_IP6_HLIM] = RT_ND_HLIM;
    memcpy(ip6 + PKT_IP6_DST, sip, 16);
    memcpy(ip6 + PKT_IP6_SRC, target, 16);
    ic = ip6 + PKT_IP6_HLEN;
    memset(ic, 0, icmp_len);
    ic[0] = RT_ICMP6_NA;
    ic[4] = dad ? RT_ND_NA_R | RT_ND_NA_O : RT_ND_NA_R | RT_ND_NA_S | RT_ND_NA_O;
    memcpy(ic + 8, target, 16);
    ic[RT_ND_NS_LEN] = RT_ND_OPT_TLLA;
    ic[RT_ND_NS_LEN + 1] = 1;
    memcpy(ic + RT_ND_NS_LEN + 2, pt->mac, PKT_ETH_ALEN);
    uint32_t sum = rt_ip6_pseudo_sum(ip6 + PKT_IP6_SRC, ip6 + PKT_IP6_DST, icmp_len, PKT_IP_PROTO_ICMPV6);
    pkt_put16(ic + 2, pkt_csum_fold(pkt_csum_add(sum, ic, icmp_len, false)));
    pkt_set_len(m, PKT_ETH_HLEN + PKT_IP6_HLEN + icmp_len);
    memset(&m->vnet, 0, sizeof(m->vnet)); /* a small frame of our own: no offload pending */
    m->out_port = port;
    rt_count(ctx, RT_CTR_ND_NA_TX);
    rt_tx(ctx, tx, b);
}

/* ---- forwarding side and timers ---- */

void rt_nd_touch_stale(struct neigh6_entry *e, uint64_t now)
{
    neigh6_wbegin(e);
    e->state = NEIGH6_DELAY;
    e->probe_ns = now;
    neigh6_wend(e);
}

/* A new incomplete entry for @ip (absent) on @port, its first solicitation
 * sent; NULL when the table has no room for it. */
static struct neigh6_entry *rt_nd_ask(struct rt_ctx *ctx, const uint8_t *ip, uint16_t port, uint64_t now,
                                      struct rt_burst *tx)
{
    struct neigh6_entry *e = rt_nd_new(ctx, ip);
    if (!e)
        return NULL;
    neigh6_wbegin(e);
    e->port = port;
    e->state = NEIGH6_INCOMPLETE;
    e->retries = 1;
    e->probe_ns = now;
    e->used_ns = now;
    neigh6_wend(e);
    rt_nd_solicit(ctx, port, ip, NULL, tx);
    return e;
}

void rt_nd_hold(struct rt_ctx *ctx, const uint8_t *ip, uint16_t port, ipc_buf b, uint64_t now, struct rt_burst *tx)
{
    struct neigh6_table *nt = ctx->neigh6;
    struct neigh6_entry *e = neigh6_find(nt, ip);
    if (e && e->port != port && e->state != NEIGH6_INCOMPLETE) {
        rt_drop(ctx, b, RT_CTR_DROP_BAD_NEXTHOP); /* one entry per address: it lives on another port */
        return;
    }
    if (e && e->qlen >= rt_neigh_qlimit(ctx)) {
        rt_drop(ctx, b, RT_CTR_DROP_PENDING_FULL);
        return;
    }
    /* The port's share, counted with ARP's (rt_neigh_hold). */
    uint16_t on = e ? e->port : port;
    if (on >= RT_MAX_PORTS || ctx->pending_port[on] >= rt_pending_share(ctx) ||
        nt->sh->queued + ctx->ctr->pending >= ctx->cfg.pending_max) {
        rt_drop(ctx, b, RT_CTR_DROP_PENDING_LIMIT);
        return;
    }
    if (!e && !(e = rt_nd_ask(ctx, ip, port, now, tx))) {
        rt_drop(ctx, b, RT_CTR_DROP_NEIGH_FULL);
        return;
    }
    /* Held in the zone it will leave by: a release, a free or a restart
     * never has to ask which pool a queued handle is in. */
    if ((b = rt_zone_move(ctx, b, on)) == IPC_BUF_NONE)
        return;
    e->q[e->qlen++] = b;
    ctx->pending_port[on]++;
    nt->sh->queued++;
    ctx->ctr->pending6 = nt->sh->queued;
}

void rt_nd_probe(struct rt_ctx *ctx, const uint8_t *ip, uint16_t port, uint64_t now, struct rt_burst *tx)
{
    if (!neigh6_find(ctx->neigh6, ip) && port < ctx->nports && ctx->port[port].n6)
        rt_nd_ask(ctx, ip, port, now, tx);
}

void rt_nd_tick(struct rt_ctx *ctx, uint64_t now, struct rt_burst *tx)
{
    struct neigh6_table *nt = ctx->neigh6;
    const struct rt_cfg *c = &ctx->cfg;
    if (!nt)
        return;
    for (uint16_t p = 0; p < ctx->nports; p++) {
        struct rt_port *pt = &ctx->port[p];
        if (!pt->dad_sent && pt->n6)
            rt_nd_dad_probe(ctx, p, now, tx);
        if (pt->ra_interval_s && now >= pt->ra_next_ns) {
            rt_nd_ra_send(ctx, p, now, tx);
            rt_nd_ra_schedule(pt, now);
        }
    }
    for (uint32_t i = 0; i <= nt->mask;) {
        struct neigh6_entry *e = &nt->e[i];
        bool gone = false;
        switch (e->used ? e->state : NEIGH6_FREE) {
        case NEIGH6_INCOMPLETE:
            if (now - e->probe_ns < c->retrans_ns)
                break;
            if (e->retries < c->max_retries) {
                e->retries++;
                e->probe_ns = now;
                rt_nd_solicit(ctx, e->port, e->ip, NULL, tx);
                break;
            }
            /* RFC 4443 §3.1: address unreachable for what waited in vain. */
            rt_zone_switch(ctx, rt_port_zone(ctx, e->port), tx);
            for (uint16_t k = 0; k < e->qlen; k++) {
                rt_icmp6_error(ctx, e->q[k], RT_ICMP6_UNREACH, RT_ICMP6_UNREACH_ADDR, 0, now, tx);
                rt_count(ctx, RT_CTR_DROP6_NEIGH_FAILED);
            }
            ipc_pool_free(rt_port_pool(ctx, e->port), e->q, e->qlen);
            rt_nd_pending_done(ctx, e->port, e->qlen);
            rt_ecmp_failed(ctx, true, e->ip, e->port, now);
            gone = true;
            break;
        case NEIGH6_REACHABLE:
            if (now - e->confirmed_ns >= c->reachable_ns) {
                neigh6_wbegin(e);
                e->state = NEIGH6_STALE;
                e->retries = 0;
                neigh6_wend(e);
            }
            break;
        case NEIGH6_STALE:
            if (now - (e->used_ns > e->confirmed_ns ? e->used_ns : e->confirmed_ns) >= c->stale_gc_ns)
                gone = true;
            break;
        case NEIGH6_DELAY:
            if (now - e->probe_ns >= c->delay_ns) {
                neigh6_wbegin(e);
                e->state = NEIGH6_PROBE;
                e->retries = 1;
                e->probe_ns = now;
                neigh6_wend(e);
                rt_nd_solicit(ctx, e->port, e->ip, e->mac, tx);
            }
            break;
        case NEIGH6_PROBE:
            if (now - e->probe_ns < c->retrans_ns)
                break;
            if (e->retries < c->max_retries) {
                e->retries++;
                e->probe_ns = now;
                rt_nd_solicit(ctx, e->port, e->ip, e->mac, tx);
            } else {
                gone = true; /* stopped answering: resolve afresh on next use */
                rt_ecmp_failed(ctx, true, e->ip, e->port, now);
            }
            break;
        default:
            break;
        }
        if (gone) {
            rt_count(ctx, RT_CTR_ND_EXPIRED);
            neigh6_remove(nt, e);
            continue; /* slot i now holds a shifted entry (or is free) */
        }
        i++;
    }
}
