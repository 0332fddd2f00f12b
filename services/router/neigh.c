/* SPDX-License-Identifier: MIT */
/*
 * services/router/neigh.c: the neighbour table (open addressing on the IPv4
 * address, linear probing, backward-shift deletion), ARP input and output
 * (RFC 826), the pending queues and the timers. Buffer ownership across a
 * router restart is described in neigh.h.
 */
#include "neigh.h"
#include "ecmp.h"

#include <errno.h>
#include <string.h>

#include "icmp.h"
#include "ipv4.h"
#include "nd.h"
#include "pkt.h"
#include "punt.h"

static const uint8_t rt_bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

int rt_neigh_attach_router(struct neigh_table *nt, int fd, struct rt_counters *ctr, struct ipc_err *err)
{
    int ret = neigh_attach(nt, fd, err);
    if (ret < 0)
        return ret;
    /* The handles belong to the dead instance's owner id and were reclaimed. */
    for (uint32_t i = 0; i <= nt->mask; i++) {
        struct neigh_entry *e = &nt->e[i];
        if (e->ip && e->qlen) {
            ctr->c[RT_CTR_DROP_PENDING_RESTART] += e->qlen;
            e->qlen = 0;
        }
        if (e->seq & 1) /* died mid-update: the fields are each valid, make it readable again */
            e->seq++;
    }
    nt->sh->queued = 0;
    ctr->pending = 0;
    return 0;
}

int rt_neigh_forget_ports(struct neigh_table *nt, unsigned nports, uint32_t vacant)
{
    int n = 0;
    for (uint32_t i = 0; i <= nt->mask; i++)
        while (nt->e[i].ip && (nt->e[i].port >= nports || (nt->e[i].port < 32 && (vacant >> nt->e[i].port & 1)))) {
            neigh_remove(nt, &nt->e[i]); /* what follows may move into i: look again */
            n++;
        }
    return n;
}

void rt_neigh_free_pending(struct rt_ctx *ctx)
{
    struct neigh_table *nt = ctx->neigh;
    for (uint32_t i = 0; i <= nt->mask; i++) {
        struct neigh_entry *e = &nt->e[i];
        if (!e->ip || !e->qlen)
            continue;
        ctx->ctr->c[RT_CTR_DROP_PENDING_RESTART] += e->qlen;
        ipc_pool_free(rt_port_pool(ctx, e->port), e->q, e->qlen);
        neigh_wbegin(e);
        e->qlen = 0;
        neigh_wend(e);
    }
    nt->sh->queued = 0;
    ctx->ctr->pending = 0;
    memset(ctx->pending_port, 0, sizeof(ctx->pending_port));
}

/* ---- ARP ---- */

static int rt_arp_build(struct rt_ctx *ctx, uint16_t port, uint16_t op, const uint8_t *dmac, const uint8_t *tha,
                        uint32_t tip, struct rt_burst *tx)
{
    const struct rt_port *pt = &ctx->port[port];
    ipc_buf b;
    if (ipc_pool_alloc(ctx->pool, &b, 1) != 1) {
        rt_count(ctx, RT_CTR_DROP_NO_BUFS);
        return -ENOBUFS;
    }
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    memset(f, 0, PKT_ETH_ZLEN);
    memcpy(f + PKT_ETH_DST, dmac, PKT_ETH_ALEN);
    memcpy(f + PKT_ETH_SRC, pt->mac, PKT_ETH_ALEN);
    pkt_put16(f + PKT_ETH_TYPE, PKT_ETH_P_ARP);
    uint8_t *a = f + PKT_ETH_HLEN;
    pkt_put16(a + RT_ARP_HTYPE, RT_ARP_HTYPE_ETHER);
    pkt_put16(a + RT_ARP_PTYPE, PKT_ETH_P_IP);
    a[RT_ARP_HW_LEN] = PKT_ETH_ALEN;
    a[RT_ARP_PROTO_LEN] = RT_IPV4_ALEN;
    pkt_put16(a + RT_ARP_OP, op);
    memcpy(a + RT_ARP_SHA, pt->mac, PKT_ETH_ALEN);
    pkt_put32(a + RT_ARP_SPA, pt->ip);
    memcpy(a + RT_ARP_THA, tha, PKT_ETH_ALEN);
    pkt_put32(a + RT_ARP_TPA, tip);
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    pkt_set_len(m, PKT_ETH_ZLEN);
    m->in_port = IPC_PORT_NONE;
    m->out_port = port;
    rt_count(ctx, op == RT_ARP_OP_REQUEST ? RT_CTR_ARP_REQ_TX : RT_CTR_ARP_REPLY_TX);
    rt_tx(ctx, tx, b);
    return 0;
}

int rt_arp_request(struct rt_ctx *ctx, uint16_t port, uint32_t tip, const uint8_t *dmac, struct rt_burst *tx)
{
    static const uint8_t zero[6];
    return rt_arp_build(ctx, port, RT_ARP_OP_REQUEST, dmac ? dmac : rt_bcast_mac, zero, tip, tx);
}

/* @n packets that waited on port @port stop waiting (sent, failed, freed). */
static void rt_pending_done(struct rt_ctx *ctx, uint16_t port, uint16_t n)
{
    if (port < RT_MAX_PORTS)
        ctx->pending_port[port] -= n < ctx->pending_port[port] ? n : ctx->pending_port[port];
    ctx->neigh->sh->queued -= n;
    ctx->ctr->pending = ctx->neigh->sh->queued;
}

/*
 * The table is full and a new neighbour needs an entry: evict an incomplete
 * one (its request unanswered so far), the longest waiting among the next
 * RT_NEIGH_EVICT_SCAN slots from the clock hand, and free what it held.
 * Complete entries (reachable, stale, static) are never evicted: a scan of
 * unused addresses, which makes only incomplete ones, cannot push out a
 * resolved neighbour, and a resolved neighbour can always displace what a
 * scan left. Returns false when the slots looked at hold no incomplete
 * entry (the caller drops and counts, as for a full table).
 */
static bool rt_neigh_evict(struct rt_ctx *ctx)
{
    struct neigh_table *nt = ctx->neigh;
    uint32_t look = nt->mask < RT_NEIGH_EVICT_SCAN ? nt->mask + 1 : RT_NEIGH_EVICT_SCAN;
    struct neigh_entry *victim = NULL;
    for (uint32_t k = 0; k < look; k++) {
        struct neigh_entry *e = &nt->e[(ctx->neigh_hand + k) & nt->mask];
        if (e->ip && e->state == NEIGH_INCOMPLETE && (!victim || e->used_ns < victim->used_ns))
            victim = e;
    }
    ctx->neigh_hand = (ctx->neigh_hand + look) & nt->mask;
    if (!victim)
        return false;
    uint16_t n = victim->qlen < NEIGH_QMAX ? victim->qlen : NEIGH_QMAX;
    rt_count(ctx, RT_CTR_NEIGH_EVICTED);
    ctx->ctr->c[RT_CTR_DROP_NEIGH_EVICTED] += n;
    ipc_pool_free(rt_port_pool(ctx, victim->port), victim->q, n);
    rt_pending_done(ctx, victim->port, n);
    neigh_remove(nt, victim);
    return true;
}

/* A new entry for @ip (absent), making room by evicting an incomplete one
 * when the table is full; NULL if there is none to evict. */
static struct neigh_entry *rt_neigh_new(struct rt_ctx *ctx, uint32_t ip)
{
    struct neigh_entry *e = neigh_insert(ctx->neigh, ip);
    if (!e && ip && rt_neigh_evict(ctx))
        e = neigh_insert(ctx->neigh, ip);
    return e;
}

/* Send what waited for @e on port @port, now that it has a MAC. */
static void rt_neigh_release(struct rt_ctx *ctx, struct neigh_entry *e, uint16_t port, struct rt_burst *tx)
{
    uint16_t n = e->qlen;
    e->qlen = 0;
    rt_pending_done(ctx, port, n);
    unsigned was = ctx->zone; /* they wait in @port's zone (rt_neigh_hold) */
    rt_zone_switch(ctx, rt_port_zone(ctx, port), tx);
    for (uint16_t i = 0; i < n; i++)
        rt_fwd_finish(ctx, e->q[i], e->mac, tx);
    rt_zone_switch(ctx, was, tx);
}

void rt_arp_input(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint8_t *a = f + PKT_ETH_HLEN;
    rt_count(ctx, RT_CTR_RX_ARP);
    if (m->len < PKT_ETH_HLEN + RT_ARP_LEN || pkt_get16(a + RT_ARP_HTYPE) != RT_ARP_HTYPE_ETHER ||
        pkt_get16(a + RT_ARP_PTYPE) != PKT_ETH_P_IP || a[RT_ARP_HW_LEN] != PKT_ETH_ALEN ||
        a[RT_ARP_PROTO_LEN] != RT_IPV4_ALEN || pkt_mac_is_group(a + RT_ARP_SHA)) {
        rt_drop(ctx, b, RT_CTR_ARP_BAD);
        return;
    }
    uint16_t op = pkt_get16(a + RT_ARP_OP);
    if (op != RT_ARP_OP_REQUEST && op != RT_ARP_OP_REPLY) {
        rt_drop(ctx, b, RT_CTR_ARP_BAD);
        return;
    }
    uint16_t port = m->in_port;
    const struct rt_port *pt = &ctx->port[port];
    uint32_t spa = pkt_get32(a + RT_ARP_SPA), tpa = pkt_get32(a + RT_ARP_TPA);
    uint32_t netmask = pt->plen ? ~0u << (32 - pt->plen) : 0;
    bool garp = spa == tpa;
    bool for_us = tpa == pt->ip && !garp;
    rt_count(ctx, garp ? RT_CTR_ARP_GRATUITOUS_RX : op == RT_ARP_OP_REQUEST ? RT_CTR_ARP_REQ_RX : RT_CTR_ARP_REPLY_RX);

    /* RFC 826 "merge": update a known sender; create one only for a sender
     * on the port's subnet that talks to us or announces itself. An address
     * probe (RFC 5227, sender 0.0.0.0) teaches nothing. A sender off the
     * subnet is known only as the destination of a route out of this port
     * without a gateway (`route add PREFIX port NAME`), which we asked for
     * on this port. */
    bool on_link = spa != 0 && spa != pt->ip && ((spa ^ pt->ip) & netmask) == 0;
    struct neigh_entry *e = spa != 0 && spa != pt->ip ? neigh_find(ctx->neigh, spa) : NULL;
    if (e && !on_link && e->port != port)
        e = NULL;
    if (on_link && !e && (for_us || garp)) {
        e = rt_neigh_new(ctx, spa);
        if (e) {
            e->state = NEIGH_STALE;
            rt_count(ctx, RT_CTR_NEIGH_LEARNED);
        } else {
            rt_count(ctx, RT_CTR_DROP_NEIGH_FULL);
        }
    }
    if (e && e->state != NEIGH_STATIC) {
        uint16_t held_on = e->port; /* where its waiting packets are counted */
        bool changed = memcmp(e->mac, a + RT_ARP_SHA, PKT_ETH_ALEN) != 0 || e->port != port;
        neigh_wbegin(e);
        memcpy(e->mac, a + RT_ARP_SHA, PKT_ETH_ALEN);
        e->port = port;
        if (e->state == NEIGH_INCOMPLETE || (op == RT_ARP_OP_REPLY && for_us)) {
            /* An answer to our request (or the neighbour talking to us while we ask). */
            e->state = NEIGH_REACHABLE;
            e->confirmed_ns = now;
            e->retries = 0;
        } else if (changed) {
            e->state = NEIGH_STALE;
            e->confirmed_ns = now;
            e->retries = 0;
        }
        neigh_wend(e);
        if (e->qlen)
            rt_neigh_release(ctx, e, held_on, tx);
    }
    if (op == RT_ARP_OP_REQUEST && for_us) {
        /* Reply in place: the request's buffer becomes the reply. */
        pkt_put16(a + RT_ARP_OP, RT_ARP_OP_REPLY);
        memcpy(a + RT_ARP_THA, a + RT_ARP_SHA, PKT_ETH_ALEN);
        memcpy(a + RT_ARP_TPA, a + RT_ARP_SPA, RT_IPV4_ALEN);
        memcpy(a + RT_ARP_SHA, pt->mac, PKT_ETH_ALEN);
        pkt_put32(a + RT_ARP_SPA, pt->ip);
        memcpy(f + PKT_ETH_DST, a + RT_ARP_THA, PKT_ETH_ALEN);
        memcpy(f + PKT_ETH_SRC, pt->mac, PKT_ETH_ALEN);
        m->out_port = port;
        rt_count(ctx, RT_CTR_ARP_REPLY_TX);
        rt_tx(ctx, tx, b);
        return;
    }
    if (!e)
        rt_count(ctx, RT_CTR_ARP_IGNORED);
    /* The control namespace's kernel resolves its neighbours too: the
     * replies to us are its as well, once learnt from (punt.h). */
    if (op == RT_ARP_OP_REPLY && for_us && rt_punt_host(ctx, b, tx))
        return;
    ipc_pool_free(ctx->pool, &b, 1);
}

/* ---- the supervisor's commands (tables/neigh.h, "Commands") ---- */

/* Free what waited for @e (it is about to go): counted as drop_neigh_removed. */
static uint16_t rt_neigh_drop_queue(struct rt_ctx *ctx, struct neigh_entry *e)
{
    uint16_t n = e->qlen < NEIGH_QMAX ? e->qlen : NEIGH_QMAX;
    ctx->ctr->c[RT_CTR_DROP_NEIGH_REMOVED] += n;
    ipc_pool_free(rt_port_pool(ctx, e->port), e->q, n);
    rt_pending_done(ctx, e->port, n);
    e->qlen = 0;
    return n;
}

/* Add or replace a static entry; what waited for the address goes out now. */
static int rt_neigh_cmd_static(struct rt_ctx *ctx, uint32_t ip, uint16_t port, const uint8_t *mac, bool replace,
                               uint64_t now, struct rt_burst *tx)
{
    static const uint8_t zero[6];
    if (ip == 0 || port >= ctx->nports || pkt_mac_is_group(mac) || memcmp(mac, zero, 6) == 0)
        return EINVAL;
    struct neigh_entry *e = neigh_find(ctx->neigh, ip);
    if (e && e->state == NEIGH_STATIC && !replace && (memcmp(e->mac, mac, 6) != 0 || e->port != port))
        return EEXIST;
    if (!e)
        e = rt_neigh_new(ctx, ip);
    if (!e)
        return ENOSPC;
    uint16_t held_on = e->port; /* where its waiting packets are counted */
    neigh_wbegin(e);
    memcpy(e->mac, mac, 6);
    e->port = port;
    e->state = NEIGH_STATIC;
    e->retries = 0;
    e->confirmed_ns = now;
    neigh_wend(e);
    if (e->qlen)
        rt_neigh_release(ctx, e, held_on, tx);
    return 0;
}

void rt_neigh_command(struct rt_ctx *ctx, uint64_t seq, uint64_t now, struct rt_burst *tx)
{
    struct neigh_table *nt = ctx->neigh;
    struct neigh_mbox *mb = &nt->sh->cmd;
    uint64_t op = ipc_ld_rlx(&mb->op), ip = ipc_ld_rlx(&mb->ip), port = ipc_ld_rlx(&mb->port);
    uint8_t mac[6];
    neigh_mac_unpack(ipc_ld_rlx(&mb->mac), mac);
    uint64_t result = 0, count = 0;
    struct neigh_entry *e;
    switch (op) {
    case NEIGH_OP_ADD:
    case NEIGH_OP_REPLACE:
        if (ip > UINT32_MAX || port > UINT16_MAX)
            result = EINVAL;
        else
            result = (uint64_t)rt_neigh_cmd_static(ctx, (uint32_t)ip, (uint16_t)port, mac, op == NEIGH_OP_REPLACE,
                                                   now, tx);
        break;
    case NEIGH_OP_DEL:
        e = ip <= UINT32_MAX ? neigh_find(nt, (uint32_t)ip) : NULL;
        if (!e) {
            result = ENOENT;
            break;
        }
        count = rt_neigh_drop_queue(ctx, e);
        neigh_remove(nt, e);
        break;
    case NEIGH_OP_FLUSH:
        /* As rt_neigh_tick: a removal shifts a later entry into slot i. */
        for (uint32_t i = 0; i <= nt->mask;) {
            e = &nt->e[i];
            if (e->ip && e->state != NEIGH_STATIC) {
                rt_neigh_drop_queue(ctx, e);
                neigh_remove(nt, e);
                count++;
                continue;
            }
            i++;
        }
        break;
    case NEIGH_OP_ADD6:
    case NEIGH_OP_REPLACE6:
    case NEIGH_OP_DEL6: {
        uint64_t w[2] = {ipc_ld_rlx(&mb->ip6[0]), ipc_ld_rlx(&mb->ip6[1])};
        uint8_t ip6[16];
        neigh_ip6_unpack(w, ip6);
        result = rt_nd_command(ctx, op, ip6, port, mac, now, tx, &count);
        break;
    }
    default:
        result = EINVAL;
        break;
    }
    ipc_st_rlx(&mb->result, result);
    ipc_st_rlx(&mb->count, count);
    ipc_st_rel(&mb->ack, seq); /* after the entries and the answer */
}

/* ---- forwarding side ---- */

void rt_neigh_touch(struct rt_ctx *ctx, struct neigh_entry *e, uint64_t now, struct rt_burst *tx)
{
    e->used_ns = now;
    if (e->state == NEIGH_STALE && e->retries == 0) {
        /* Re-validate with a unicast probe; traffic keeps using the MAC meanwhile. */
        e->retries = 1;
        e->probe_ns = now;
        rt_arp_request(ctx, e->port, e->ip, e->mac, tx);
    }
}

/* A new incomplete entry for @ip (absent) on @port, its first request
 * broadcast; NULL when the table has no room for it. */
static struct neigh_entry *rt_neigh_ask(struct rt_ctx *ctx, uint32_t ip, uint16_t port, uint64_t now,
                                        struct rt_burst *tx)
{
    struct neigh_entry *e = rt_neigh_new(ctx, ip);
    if (!e)
        return NULL;
    neigh_wbegin(e);
    e->port = port;
    e->state = NEIGH_INCOMPLETE;
    e->retries = 1;
    e->probe_ns = now;
    e->used_ns = now;
    neigh_wend(e);
    rt_arp_request(ctx, port, ip, NULL, tx);
    return e;
}

void rt_neigh_hold(struct rt_ctx *ctx, uint32_t ip, uint16_t port, ipc_buf b, uint64_t now, struct rt_burst *tx)
{
    struct neigh_table *nt = ctx->neigh;
    struct neigh_entry *e = neigh_find(nt, ip);
    if (e && e->qlen >= rt_neigh_qlimit(ctx)) {
        rt_drop(ctx, b, RT_CTR_DROP_PENDING_FULL);
        return;
    }
    /* The port's share: a scan of unused addresses on one port makes an
     * entry and holds a packet per address; past its share it costs no
     * entry, no request and no buffer, and nothing of another port's. */
    uint16_t on = e ? e->port : port;
    uint32_t share = rt_pending_share(ctx);
    if (on >= RT_MAX_PORTS || ctx->pending_port[on] >= share || nt->sh->queued + ctx->ctr->pending6 >= ctx->cfg.pending_max) {
        rt_drop(ctx, b, RT_CTR_DROP_PENDING_LIMIT);
        return;
    }
    if (!e && !(e = rt_neigh_ask(ctx, ip, port, now, tx))) {
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
    ctx->ctr->pending = nt->sh->queued;
}

void rt_neigh_probe(struct rt_ctx *ctx, uint32_t ip, uint16_t port, uint64_t now, struct rt_burst *tx)
{
    if (!neigh_find(ctx->neigh, ip) && port < ctx->nports)
        rt_neigh_ask(ctx, ip, port, now, tx);
}

void rt_neigh_tick(struct rt_ctx *ctx, uint64_t now, struct rt_burst *tx)
{
    struct neigh_table *nt = ctx->neigh;
    const struct rt_cfg *c = &ctx->cfg;
    for (uint32_t i = 0; i <= nt->mask;) {
        struct neigh_entry *e = &nt->e[i];
        bool gone = false;
        switch (e->ip ? e->state : NEIGH_FREE) {
        case NEIGH_INCOMPLETE:
            if (now - e->probe_ns < c->retrans_ns)
                break;
            if (e->retries < c->max_retries) {
                e->retries++;
                e->probe_ns = now;
                rt_arp_request(ctx, e->port, e->ip, NULL, tx);
                break;
            }
            /* RFC 1812 §4.3.3.1: host unreachable for what waited in vain. */
            rt_zone_switch(ctx, rt_port_zone(ctx, e->port), tx);
            for (uint16_t k = 0; k < e->qlen; k++) {
                rt_icmp_error(ctx, e->q[k], RT_ICMP_UNREACH, RT_ICMP_UNREACH_HOST, 0, now, tx);
                rt_count(ctx, RT_CTR_DROP_NEIGH_FAILED);
            }
            ipc_pool_free(rt_port_pool(ctx, e->port), e->q, e->qlen);
            rt_pending_done(ctx, e->port, e->qlen);
            rt_ecmp_failed(ctx, false, &e->ip, e->port, now);
            gone = true;
            break;
        case NEIGH_REACHABLE:
            if (now - e->confirmed_ns >= c->reachable_ns) {
                neigh_wbegin(e);
                e->state = NEIGH_STALE;
                e->retries = 0;
                neigh_wend(e);
            }
            break;
        case NEIGH_STALE:
            if (e->retries > 0) {
                if (now - e->probe_ns < c->retrans_ns)
                    break;
                if (e->retries < c->max_retries) {
                    e->retries++;
                    e->probe_ns = now;
                    rt_arp_request(ctx, e->port, e->ip, e->mac, tx);
                } else {
                    gone = true; /* stopped answering: resolve afresh on next use */
                    rt_ecmp_failed(ctx, false, &e->ip, e->port, now);
                }
            } else if (now - (e->used_ns > e->confirmed_ns ? e->used_ns : e->confirmed_ns) >= c->stale_gc_ns) {
                gone = true;
            }
            break;
        default:
            break;
        }
        if (gone) {
            rt_count(ctx, RT_CTR_NEIGH_EXPIRED);
            neigh_remove(nt, e);
            continue; /* slot i now holds a shifted entry (or is free) */
        }
        i++;
    }
}
