/* SPDX-License-Identifier: MIT */
/*
 * services/router/neigh.c: the neighbour table (open addressing on the IPv4
 * address, linear probing, backward-shift deletion), ARP input and output
 * (RFC 826), the pending queues and the timers. Buffer ownership across a
 * router restart is described in neigh.h.
 */
#include "neigh.h"

#include <errno.h>
#include <string.h>

#include "icmp.h"
#include "ipv4.h"
#include "pkt.h"

#define RT_ARP_LEN 28u
#define RT_ARP_OP_REQUEST 1u
#define RT_ARP_OP_REPLY 2u

static const uint8_t rt_bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static uint32_t rt_neigh_hash(uint32_t ip)
{
    return (ip * 0x9e3779b1u) ^ (ip >> 16);
}

static void rt_neigh_bind(struct rt_neigh *nt, void *base, size_t size)
{
    nt->sh = base;
    nt->e = (struct rt_neigh_entry *)((uint8_t *)base + 4096);
    nt->mask = nt->sh->cap - 1;
    nt->size = size;
}

int rt_neigh_create(const char *name, uint32_t cap, struct rt_neigh *nt, int *fd, struct ipc_err *err)
{
    uint32_t c = 16;
    while (c < cap && c < (1u << 20))
        c <<= 1;
    size_t size = 4096 + (size_t)c * sizeof(struct rt_neigh_entry);
    void *base;
    int ret = ipc_shm_create(name, RT_NEIGH_SHM_KIND, RT_NEIGH_VERSION, size, fd, &base, err);
    if (ret < 0)
        return ret;
    ((struct rt_neigh_shared *)base)->cap = c;
    rt_neigh_bind(nt, base, size);
    return 0;
}

int rt_neigh_attach(struct rt_neigh *nt, int fd, struct ipc_err *err)
{
    void *base;
    size_t size;
    int ret = ipc_shm_attach(fd, RT_NEIGH_SHM_KIND, RT_NEIGH_VERSION, &base, &size, err);
    if (ret < 0)
        return ret;
    const struct rt_neigh_shared *sh = base;
    if (sh->cap < 16 || (sh->cap & (sh->cap - 1)) || 4096 + (size_t)sh->cap * sizeof(struct rt_neigh_entry) != size) {
        ipc_shm_unmap(base, size);
        return ipc_errf(err, -EPROTO, "neighbour region: capacity %u does not match its size %zu", sh->cap, size);
    }
    rt_neigh_bind(nt, base, size);
    return 0;
}

int rt_neigh_attach_router(struct rt_neigh *nt, int fd, struct rt_counters *ctr, struct ipc_err *err)
{
    int ret = rt_neigh_attach(nt, fd, err);
    if (ret < 0)
        return ret;
    /* The handles belong to the dead instance's owner id and were reclaimed. */
    for (uint32_t i = 0; i <= nt->mask; i++) {
        struct rt_neigh_entry *e = &nt->e[i];
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

void rt_neigh_detach(struct rt_neigh *nt)
{
    ipc_shm_unmap(nt->sh, nt->size);
    memset(nt, 0, sizeof(*nt));
}

/* Seqlock for `neigh show`: odd while the entry changes. */
static void rt_ne_wbegin(struct rt_neigh_entry *e)
{
    ipc_st_rlx(&e->seq, ipc_ld_rlx(&e->seq) + 1);
    atomic_thread_fence(memory_order_release);
}

static void rt_ne_wend(struct rt_neigh_entry *e)
{
    ipc_st_rel(&e->seq, ipc_ld_rlx(&e->seq) + 1);
}

bool rt_neigh_read(const struct rt_neigh *nt, uint32_t i, struct rt_neigh_entry *out)
{
    struct rt_neigh_entry *e = &nt->e[i & nt->mask];
    /* Bounded: the supervisor reads from its event loop, and a router that
     * died inside a write leaves the sequence odd until its successor
     * repairs it. Such an entry reads as absent meanwhile. */
    for (unsigned tries = 0; tries < 100000; tries++) {
        uint32_t s = ipc_ld_acq(&e->seq);
        if (s & 1)
            continue;
        memcpy((uint8_t *)out + sizeof(out->seq), (uint8_t *)e + sizeof(e->seq), sizeof(*e) - sizeof(e->seq));
        atomic_thread_fence(memory_order_acquire);
        if (ipc_ld_rlx(&e->seq) == s)
            return out->ip != 0;
    }
    out->ip = 0;
    return false;
}

struct rt_neigh_entry *rt_neigh_find(const struct rt_neigh *nt, uint32_t ip)
{
    if (ip == 0)
        return NULL;
    for (uint32_t i = rt_neigh_hash(ip) & nt->mask, k = 0; k <= nt->mask; i = (i + 1) & nt->mask, k++) {
        struct rt_neigh_entry *e = &nt->e[i];
        if (e->ip == ip)
            return e;
        if (e->ip == 0)
            return NULL;
    }
    return NULL;
}

/* A new entry for @ip (not present), or NULL when the table is 3/4 full. */
static struct rt_neigh_entry *rt_neigh_insert(struct rt_neigh *nt, uint32_t ip)
{
    if (ip == 0 || nt->sh->count >= (nt->mask + 1) / 4 * 3)
        return NULL;
    uint32_t i = rt_neigh_hash(ip) & nt->mask;
    while (nt->e[i].ip)
        i = (i + 1) & nt->mask;
    struct rt_neigh_entry *e = &nt->e[i];
    rt_ne_wbegin(e);
    memset((uint8_t *)e + sizeof(e->seq), 0, sizeof(*e) - sizeof(e->seq));
    e->ip = ip;
    rt_ne_wend(e);
    nt->sh->count++;
    return e;
}

static void rt_neigh_remove(struct rt_neigh *nt, struct rt_neigh_entry *e)
{
    uint32_t i = (uint32_t)(e - nt->e), j = i;
    for (;;) {
        rt_ne_wbegin(&nt->e[i]);
        nt->e[i].ip = 0;
        nt->e[i].state = RT_NEIGH_FREE;
        nt->e[i].qlen = 0;
        rt_ne_wend(&nt->e[i]);
        for (;;) {
            j = (j + 1) & nt->mask;
            if (nt->e[j].ip == 0)
                goto out;
            uint32_t home = rt_neigh_hash(nt->e[j].ip) & nt->mask;
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        rt_ne_wbegin(&nt->e[i]);
        memcpy((uint8_t *)&nt->e[i] + sizeof(e->seq), (uint8_t *)&nt->e[j] + sizeof(e->seq),
               sizeof(*e) - sizeof(e->seq));
        rt_ne_wend(&nt->e[i]);
        i = j;
    }
out:
    nt->sh->count--;
}

int rt_neigh_add_static(struct rt_neigh *nt, uint32_t ip, const uint8_t mac[6], uint16_t port)
{
    if (ip == 0 || port >= RT_MAX_PORTS || rt_mac_is_group(mac))
        return -EINVAL;
    struct rt_neigh_entry *e = rt_neigh_find(nt, ip);
    if (!e)
        e = rt_neigh_insert(nt, ip);
    if (!e)
        return -ENOSPC;
    rt_ne_wbegin(e);
    memcpy(e->mac, mac, 6);
    e->port = port;
    e->state = RT_NEIGH_STATIC;
    e->retries = 0;
    rt_ne_wend(e);
    return 0;
}

int rt_neigh_del(struct rt_neigh *nt, struct ipc_pool *pool, uint32_t ip)
{
    struct rt_neigh_entry *e = rt_neigh_find(nt, ip);
    if (!e)
        return -ENOENT;
    ipc_pool_free(pool, e->q, e->qlen);
    nt->sh->queued -= e->qlen;
    rt_neigh_remove(nt, e);
    return 0;
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
    memset(f, 0, RT_ETH_ZLEN);
    memcpy(f, dmac, 6);
    memcpy(f + 6, pt->mac, 6);
    rt_put16(f + 12, RT_ETH_P_ARP);
    uint8_t *a = f + RT_ETH_HLEN;
    rt_put16(a, 1);
    rt_put16(a + 2, RT_ETH_P_IP);
    a[4] = 6;
    a[5] = 4;
    rt_put16(a + 6, op);
    memcpy(a + 8, pt->mac, 6);
    rt_put32(a + 14, pt->ip);
    memcpy(a + 18, tha, 6);
    rt_put32(a + 24, tip);
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    rt_pkt_set_len(m, RT_ETH_ZLEN);
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

/* Send what waited for @e, now that it has a MAC. */
static void rt_neigh_release(struct rt_ctx *ctx, struct rt_neigh_entry *e, struct rt_burst *tx)
{
    uint16_t n = e->qlen;
    e->qlen = 0;
    ctx->neigh->sh->queued -= n;
    ctx->ctr->pending = ctx->neigh->sh->queued;
    for (uint16_t i = 0; i < n; i++)
        rt_fwd_finish(ctx, e->q[i], e->mac, tx);
}

void rt_arp_input(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint8_t *a = f + RT_ETH_HLEN;
    rt_count(ctx, RT_CTR_RX_ARP);
    if (m->len < RT_ETH_HLEN + RT_ARP_LEN || rt_get16(a) != 1 || rt_get16(a + 2) != RT_ETH_P_IP || a[4] != 6 ||
        a[5] != 4 || rt_mac_is_group(a + 8)) {
        rt_drop(ctx, b, RT_CTR_ARP_BAD);
        return;
    }
    uint16_t op = rt_get16(a + 6);
    if (op != RT_ARP_OP_REQUEST && op != RT_ARP_OP_REPLY) {
        rt_drop(ctx, b, RT_CTR_ARP_BAD);
        return;
    }
    uint16_t port = m->in_port;
    const struct rt_port *pt = &ctx->port[port];
    uint32_t spa = rt_get32(a + 14), tpa = rt_get32(a + 24);
    uint32_t netmask = pt->plen ? ~0u << (32 - pt->plen) : 0;
    bool garp = spa == tpa;
    bool for_us = tpa == pt->ip && !garp;
    rt_count(ctx, garp ? RT_CTR_ARP_GRATUITOUS_RX : op == RT_ARP_OP_REQUEST ? RT_CTR_ARP_REQ_RX : RT_CTR_ARP_REPLY_RX);

    /* RFC 826 "merge": update a known sender; create one only for a sender
     * on the port's subnet that talks to us or announces itself. An address
     * probe (RFC 5227, sender 0.0.0.0) teaches nothing. */
    bool on_link = spa != 0 && spa != pt->ip && ((spa ^ pt->ip) & netmask) == 0;
    struct rt_neigh_entry *e = on_link ? rt_neigh_find(ctx->neigh, spa) : NULL;
    if (on_link && !e && (for_us || garp)) {
        e = rt_neigh_insert(ctx->neigh, spa);
        if (e) {
            e->state = RT_NEIGH_STALE;
            rt_count(ctx, RT_CTR_NEIGH_LEARNED);
        } else {
            rt_count(ctx, RT_CTR_DROP_NEIGH_FULL);
        }
    }
    if (e && e->state != RT_NEIGH_STATIC) {
        bool changed = memcmp(e->mac, a + 8, 6) != 0 || e->port != port;
        rt_ne_wbegin(e);
        memcpy(e->mac, a + 8, 6);
        e->port = port;
        if (e->state == RT_NEIGH_INCOMPLETE || (op == RT_ARP_OP_REPLY && for_us)) {
            /* An answer to our request (or the neighbour talking to us while we ask). */
            e->state = RT_NEIGH_REACHABLE;
            e->confirmed_ns = now;
            e->retries = 0;
        } else if (changed) {
            e->state = RT_NEIGH_STALE;
            e->confirmed_ns = now;
            e->retries = 0;
        }
        rt_ne_wend(e);
        if (e->qlen)
            rt_neigh_release(ctx, e, tx);
    }
    if (op == RT_ARP_OP_REQUEST && for_us) {
        /* Reply in place: the request's buffer becomes the reply. */
        rt_put16(a + 6, RT_ARP_OP_REPLY);
        memcpy(a + 18, a + 8, 6);
        memcpy(a + 24, a + 14, 4);
        memcpy(a + 8, pt->mac, 6);
        rt_put32(a + 14, pt->ip);
        memcpy(f, a + 18, 6);
        memcpy(f + 6, pt->mac, 6);
        m->out_port = port;
        rt_count(ctx, RT_CTR_ARP_REPLY_TX);
        rt_tx(ctx, tx, b);
        return;
    }
    if (!e)
        rt_count(ctx, RT_CTR_ARP_IGNORED);
    ipc_pool_free(ctx->pool, &b, 1);
}

/* ---- forwarding side ---- */

void rt_neigh_touch(struct rt_ctx *ctx, struct rt_neigh_entry *e, uint64_t now, struct rt_burst *tx)
{
    e->used_ns = now;
    if (e->state == RT_NEIGH_STALE && e->retries == 0) {
        /* Re-validate with a unicast probe; traffic keeps using the MAC meanwhile. */
        e->retries = 1;
        e->probe_ns = now;
        rt_arp_request(ctx, e->port, e->ip, e->mac, tx);
    }
}

void rt_neigh_hold(struct rt_ctx *ctx, uint32_t ip, uint16_t port, ipc_buf b, uint64_t now, struct rt_burst *tx)
{
    struct rt_neigh *nt = ctx->neigh;
    struct rt_neigh_entry *e = rt_neigh_find(nt, ip);
    if (!e) {
        e = rt_neigh_insert(nt, ip);
        if (!e) {
            rt_drop(ctx, b, RT_CTR_DROP_NEIGH_FULL);
            return;
        }
        rt_ne_wbegin(e);
        e->port = port;
        e->state = RT_NEIGH_INCOMPLETE;
        e->retries = 1;
        e->probe_ns = now;
        e->used_ns = now;
        rt_ne_wend(e);
        rt_arp_request(ctx, port, ip, NULL, tx);
    }
    if (e->qlen >= RT_NEIGH_QMAX) {
        rt_drop(ctx, b, RT_CTR_DROP_PENDING_FULL);
        return;
    }
    e->q[e->qlen++] = b;
    nt->sh->queued++;
    ctx->ctr->pending = nt->sh->queued;
}

void rt_neigh_tick(struct rt_ctx *ctx, uint64_t now, struct rt_burst *tx)
{
    struct rt_neigh *nt = ctx->neigh;
    const struct rt_cfg *c = &ctx->cfg;
    for (uint32_t i = 0; i <= nt->mask;) {
        struct rt_neigh_entry *e = &nt->e[i];
        bool gone = false;
        switch (e->ip ? e->state : RT_NEIGH_FREE) {
        case RT_NEIGH_INCOMPLETE:
            if (now - e->probe_ns < c->retrans_ns)
                break;
            if (e->retries < c->max_retries) {
                e->retries++;
                e->probe_ns = now;
                rt_arp_request(ctx, e->port, e->ip, NULL, tx);
                break;
            }
            /* RFC 1812 §4.3.3.1: host unreachable for what waited in vain. */
            for (uint16_t k = 0; k < e->qlen; k++) {
                rt_icmp_error(ctx, e->q[k], RT_ICMP_UNREACH, RT_ICMP_UNREACH_HOST, 0, now, tx);
                rt_count(ctx, RT_CTR_DROP_NEIGH_FAILED);
            }
            ipc_pool_free(ctx->pool, e->q, e->qlen);
            nt->sh->queued -= e->qlen;
            ctx->ctr->pending = nt->sh->queued;
            gone = true;
            break;
        case RT_NEIGH_REACHABLE:
            if (now - e->confirmed_ns >= c->reachable_ns) {
                rt_ne_wbegin(e);
                e->state = RT_NEIGH_STALE;
                e->retries = 0;
                rt_ne_wend(e);
            }
            break;
        case RT_NEIGH_STALE:
            if (e->retries > 0) {
                if (now - e->probe_ns < c->retrans_ns)
                    break;
                if (e->retries < c->max_retries) {
                    e->retries++;
                    e->probe_ns = now;
                    rt_arp_request(ctx, e->port, e->ip, e->mac, tx);
                } else {
                    gone = true; /* stopped answering: resolve afresh on next use */
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
            rt_neigh_remove(nt, e);
            continue; /* slot i now holds a shifted entry (or is free) */
        }
        i++;
    }
}
