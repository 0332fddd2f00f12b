/* SPDX-License-Identifier: MIT */
/*
 * services/router/ecmp.c: picking a group's member per flow, and skipping
 * the members whose neighbour failed (ecmp.h).
 */
#include "ecmp.h"

#include <string.h>

#include "ipc/pkt.h"
#include "tables/fib_group.h"
#include "tables/neigh6.h"
#include "ipv6.h"
#include "nd.h"
#include "neigh.h"

/* Tries at another bucket before a walk over the members, for a flow whose
 * member is skipped: each a fresh hash of the flow, so a flow keeps its
 * replacement, and the replacements spread by weight. */
#define RT_ECMP_REHASH 4u
/* A skipped member no packet asked for in this long is forgotten (a new
 * flow finds out again, in the time ARP takes to fail). */
#define RT_ECMP_IDLE_NS (10ull * 1000000000)

/* Protocols whose first four bytes are the ports. */
static bool rt_l4_ports(uint8_t proto)
{
    return proto == PKT_IP_PROTO_TCP || proto == PKT_IP_PROTO_UDP || proto == 33 /* DCCP */ ||
           proto == 132 /* SCTP */ || proto == 136 /* UDP-Lite */;
}

uint32_t rt_flow_hash4(const uint8_t *ip, uint32_t avail)
{
    uint64_t k = (uint64_t)pkt_get32(ip + PKT_IP_SRC) << 32 | pkt_get32(ip + PKT_IP_DST);
    uint8_t proto = ip[PKT_IP_PROTO];
    unsigned ihl = pkt_ip_hlen(ip);
    uint32_t ports = 0;
    /* Every fragment of a datagram takes one path: only unfragmented
     * packets hash their ports. */
    if (!(pkt_get16(ip + PKT_IP_FRAG) & (PKT_IP_MF | PKT_IP_OFFMASK)) && rt_l4_ports(proto) && avail >= ihl + 4)
        ports = pkt_get32(ip + ihl);
    return fib_mix64(k ^ (uint64_t)fib_mix64((uint64_t)ports << 8 | proto) << 17);
}

uint32_t rt_flow_hash6(const uint8_t *ip6, uint32_t avail)
{
    uint64_t w[4];
    memcpy(w, ip6 + PKT_IP6_SRC, sizeof(w));
    uint32_t label = pkt_get32(ip6 + PKT_IP6_VTC) & 0xfffff;
    struct rt_ip6_l4 l4;
    uint32_t ports = 0;
    uint8_t proto = ip6[PKT_IP6_NXT];
    if (rt_ip6_walk(ip6, avail, &l4) == RT_IP6_WALK_OK) {
        proto = l4.proto;
        if (!l4.later_fragment && rt_l4_ports(proto) && avail >= l4.off + 4u)
            ports = pkt_get32(ip6 + l4.off);
    }
    uint64_t h = fib_mix64(w[0] ^ fib_mix64(w[1]));
    h = h << 32 | fib_mix64(w[2] ^ fib_mix64(w[3] + label));
    return fib_mix64(h ^ (uint64_t)fib_mix64((uint64_t)ports << 8 | proto) << 17);
}

/* The skipped member @ip on @port (NULL: not skipped). */
static struct rt_ecmp_down *rt_ecmp_find(struct rt_ctx *ctx, bool v6, const void *ip, uint16_t port)
{
    unsigned len = v6 ? 16 : 4;
    for (unsigned i = 0; i < ctx->n_ecmp_down; i++) {
        struct rt_ecmp_down *d = &ctx->ecmp_down[i];
        if (d->v6 == v6 && d->port == port && memcmp(d->ip, ip, len) == 0)
            return d;
    }
    return NULL;
}

/* Does a group skip @gw on @port: failed, and not answering yet? */
static bool rt_ecmp_skip(struct rt_ctx *ctx, bool v6, const void *gw, uint16_t port, uint64_t now)
{
    struct rt_ecmp_down *d = rt_ecmp_find(ctx, v6, gw, port);
    if (!d)
        return false;
    if (v6) {
        const struct neigh6_entry *e = ctx->neigh6 ? neigh6_find(ctx->neigh6, gw) : NULL;
        if (neigh6_usable(e) && e->port == port)
            return false;
    } else {
        uint32_t a;
        memcpy(&a, gw, 4);
        const struct neigh_entry *e = neigh_find(ctx->neigh, a);
        if (neigh_usable(e) && e->port == port)
            return false;
    }
    d->wanted_ns = now;
    return true;
}

static bool rt_ecmp_skip4(struct rt_ctx *ctx, const struct fib_nh *nh, uint64_t now)
{
    return rt_ecmp_skip(ctx, false, &nh->gw, nh->port, now);
}

static bool rt_ecmp_skip6(struct rt_ctx *ctx, const struct fib6_nh *nh, uint64_t now)
{
    return rt_ecmp_skip(ctx, true, nh->gw, nh->port, now);
}

/* Bucket of the @t-th rehash of flow hash @h. */
static unsigned rt_ecmp_bucket(uint32_t h, unsigned t)
{
    return (t ? fib_mix64((uint64_t)h << 8 | t) : h) >> 24;
}

struct fib_nh rt_ecmp_pick4(struct rt_ctx *ctx, uint32_t g, const uint8_t *ip, uint32_t avail, uint64_t now)
{
    const struct fib *fib = ctx->fib;
    const _Atomic uint32_t *blk = fib_mp_block(&fib->m, g);
    uint32_t h = rt_flow_hash4(ip, avail);
    struct fib_nh nh = fib_nh_at(fib, fib_mp_member(blk, fib_mp_bucket(blk, h >> 24)));
    if (ipc_likely(ctx->n_ecmp_down == 0) || !rt_ecmp_skip4(ctx, &nh, now))
        return nh;
    for (unsigned t = 1; t <= RT_ECMP_REHASH; t++) {
        struct fib_nh c = fib_nh_at(fib, fib_mp_member(blk, fib_mp_bucket(blk, rt_ecmp_bucket(h, t))));
        if (!rt_ecmp_skip4(ctx, &c, now))
            return c;
    }
    unsigned n = fib_mp_count(blk);
    for (unsigned k = 0; k < n; k++) {
        struct fib_nh c = fib_nh_at(fib, fib_mp_member(blk, (h + k) % n));
        if (!rt_ecmp_skip4(ctx, &c, now))
            return c;
    }
    return nh; /* every member failed: ask the first choice's neighbour again */
}

struct fib6_nh rt_ecmp_pick6(struct rt_ctx *ctx, uint32_t g, const uint8_t *ip6, uint32_t avail, uint64_t now)
{
    const struct fib6 *fib = ctx->fib6;
    const _Atomic uint32_t *blk = fib_mp_block(&fib->m, g);
    uint32_t h = rt_flow_hash6(ip6, avail);
    struct fib6_nh nh = fib6_nh_at(fib, fib_mp_member(blk, fib_mp_bucket(blk, h >> 24)));
    if (ipc_likely(ctx->n_ecmp_down == 0) || !rt_ecmp_skip6(ctx, &nh, now))
        return nh;
    for (unsigned t = 1; t <= RT_ECMP_REHASH; t++) {
        struct fib6_nh c = fib6_nh_at(fib, fib_mp_member(blk, fib_mp_bucket(blk, rt_ecmp_bucket(h, t))));
        if (!rt_ecmp_skip6(ctx, &c, now))
            return c;
    }
    unsigned n = fib_mp_count(blk);
    for (unsigned k = 0; k < n; k++) {
        struct fib6_nh c = fib6_nh_at(fib, fib_mp_member(blk, (h + k) % n));
        if (!rt_ecmp_skip6(ctx, &c, now))
            return c;
    }
    return nh;
}

void rt_ecmp_failed(struct rt_ctx *ctx, bool v6, const void *ip, uint16_t port, uint64_t now)
{
    struct rt_ecmp_down *d = rt_ecmp_find(ctx, v6, ip, port);
    if (!d && ctx->n_ecmp_down < RT_ECMP_DOWN_MAX) {
        d = &ctx->ecmp_down[ctx->n_ecmp_down++];
        memset(d, 0, sizeof(*d));
    }
    if (!d) {
        /* Full: the failure wanted least recently makes room (one no group
         * ever asked for first: a scan's), never one a flow asks for now. */
        for (unsigned i = 0; i < ctx->n_ecmp_down; i++) {
            struct rt_ecmp_down *c = &ctx->ecmp_down[i];
            uint64_t tc = c->wanted_ns ? c->wanted_ns : c->failed_ns / 2;
            uint64_t td = !d ? UINT64_MAX : d->wanted_ns ? d->wanted_ns : d->failed_ns / 2;
            if (tc < td)
                d = c;
        }
        memset(d, 0, sizeof(*d));
    }
    d->v6 = v6;
    d->port = port;
    memcpy(d->ip, ip, v6 ? 16 : 4);
    d->failed_ns = now;
}

void rt_ecmp_tick(struct rt_ctx *ctx, uint64_t now, struct rt_burst *tx)
{
    for (unsigned i = 0; i < ctx->n_ecmp_down;) {
        struct rt_ecmp_down *d = &ctx->ecmp_down[i];
        /* Failed probes renew failed_ns: only a flow's asking keeps it. */
        uint64_t last = d->wanted_ns ? d->wanted_ns : d->failed_ns;
        bool back;
        if (d->v6) {
            const struct neigh6_entry *e = ctx->neigh6 ? neigh6_find(ctx->neigh6, d->ip) : NULL;
            back = neigh6_usable(e) && e->port == d->port;
            if (!back && !e && d->wanted_ns && ctx->neigh6)
                rt_nd_probe(ctx, d->ip, d->port, now, tx);
        } else {
            uint32_t a;
            memcpy(&a, d->ip, 4);
            const struct neigh_entry *e = neigh_find(ctx->neigh, a);
            back = neigh_usable(e) && e->port == d->port;
            if (!back && !e && d->wanted_ns)
                rt_neigh_probe(ctx, a, d->port, now, tx);
        }
        if (back || now - last >= RT_ECMP_IDLE_NS) {
            *d = ctx->ecmp_down[--ctx->n_ecmp_down];
            continue;
        }
        i++;
    }
}
