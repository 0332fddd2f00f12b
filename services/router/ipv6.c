/* SPDX-License-Identifier: MIT */
/*
 * services/router/ipv6.c: IPv6 receive validation and forwarding, a burst
 * at a time in three passes (rt_ipv6_burst): the checks before the route
 * packet by packet, one FIB lookup for all those to be forwarded, then the
 * rest packet by packet. Order of the checks: the fixed header (length,
 * version, payload length against the frame, Ethernet padding trimmed), the
 * source (never multicast or loopback; unspecified only in DAD's
 * solicitations), the destination (multicast: ND for us, else dropped by
 * scope; martian; unicast in a link-layer multicast), the extension headers
 * (routing header 0 dropped), local delivery, then forwarding: link-local
 * scope, hop limit, the FIB, the egress MTU, the neighbour. Only the first
 * frame of a chain is ever read or written (headers must be there).
 */
#include "ipv6.h"

#include <assert.h>

#include "tables/fib6.h"
#include "tables/fib_group.h"
#include "ecmp.h"
#include "tables/neigh6.h"
#include "gso.h"
#include "icmp6.h"
#include "nd.h"
#include "punt.h"

enum rt_ip6_walk_rc rt_ip6_walk_ext(const uint8_t *ip6, uint32_t avail, struct rt_ip6_l4 *l4)
{
    uint8_t nxt = ip6[PKT_IP6_NXT];
    uint32_t off = PKT_IP6_HLEN;
    l4->later_fragment = false;
    for (unsigned n = 0;; n++) {
        uint32_t len;
        switch (nxt) {
        case RT_IP6_EXT_HBH:
        case RT_IP6_EXT_ROUTING:
        case RT_IP6_EXT_DEST:
        case RT_IP6_EXT_FRAG:
        case RT_IP6_EXT_AH:
            break;
        default:
            l4->proto = nxt;
            l4->off = (uint16_t)off;
            return RT_IP6_WALK_OK;
        }
        /* Hop-by-hop options must come first (RFC 8200 §4.3). */
        if (n >= RT_IP6_EXT_MAX || off + 8 > avail || (nxt == RT_IP6_EXT_HBH && n > 0))
            return RT_IP6_WALK_BAD;
        const uint8_t *h = ip6 + off;
        if (nxt == RT_IP6_EXT_FRAG) {
            len = 8;
            if (pkt_get16(h + 2) & 0xfff8u)
                l4->later_fragment = true;
        } else if (nxt == RT_IP6_EXT_AH) {
            len = ((uint32_t)h[1] + 2) * 4;
        } else {
            len = ((uint32_t)h[1] + 1) * 8;
        }
        if (nxt == RT_IP6_EXT_ROUTING && h[2] == 0)
            return RT_IP6_WALK_RH0;
        if (off + len > avail || off + len - PKT_IP6_HLEN > RT_IP6_EXT_BYTES)
            return RT_IP6_WALK_BAD;
        nxt = h[0];
        off += len;
        if (l4->later_fragment) {
            /* No upper-layer header in this fragment: stop here. */
            l4->proto = nxt;
            l4->off = (uint16_t)off;
            return RT_IP6_WALK_OK;
        }
    }
}

bool rt_ip6_is_local(const struct rt_ctx *ctx, uint16_t in, const uint8_t *a)
{
    if (rt_ip6_is_ll(a))
        return in < ctx->nports && rt_ip6_port_addr(&ctx->port[in], a) >= 0;
    for (unsigned p = 0; p < ctx->nports; p++)
        if (ctx->port[p].mtu && rt_ip6_port_addr(&ctx->port[p], a) >= 0)
            return true;
    return false;
}

uint64_t rt_ip6_local_mask(const struct rt_ctx *ctx)
{
    uint64_t mask = 0;
    for (unsigned p = 0; p < ctx->nports; p++)
        for (unsigned k = 0; k < ctx->port[p].n6; k++)
            mask |= 1ull << rt_ip6_local_bit(ctx->port[p].a6[k].a);
    return mask;
}

static bool rt_ip6_on_net(const struct rt_addr6 *n, const uint8_t *a)
{
    unsigned full = n->plen / 8, rest = n->plen % 8;
    if (memcmp(n->a, a, full) != 0)
        return false;
    return !rest || ((n->a[full] ^ a[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

const uint8_t *rt_ip6_src_for(const struct rt_ctx *ctx, uint16_t port, const uint8_t *dst)
{
    if (port >= ctx->nports)
        return NULL;
    const struct rt_port *p = &ctx->port[port];
    const uint8_t *global = NULL;
    if (!rt_ip6_is_ll(dst))
        for (unsigned k = 0; k < p->n6; k++) {
            if (rt_ip6_is_ll(p->a6[k].a))
                continue;
            if (rt_ip6_on_net(&p->a6[k], dst))
                return p->a6[k].a;
            if (!global)
                global = p->a6[k].a;
        }
    if (global)
        return global;
    return p->ll6 >= 0 ? p->a6[p->ll6].a : NULL;
}

/* rt_fwd6_finish, which the forwarding path below has inline. */
static inline void rt_fwd6_finish_in(struct rt_ctx *ctx, ipc_buf b, const uint8_t *dmac, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    f[PKT_ETH_HLEN + PKT_IP6_HLIM]--;
    memcpy(f + PKT_ETH_DST, dmac, PKT_ETH_ALEN);
    memcpy(f + PKT_ETH_SRC, ctx->port[m->out_port].mac, PKT_ETH_ALEN);
    rt_count(ctx, RT_CTR_FORWARDED6);
    rt_tx(ctx, tx, b);
}

void rt_fwd6_finish(struct rt_ctx *ctx, ipc_buf b, const uint8_t *dmac, struct rt_burst *tx)
{
    rt_fwd6_finish_in(ctx, b, dmac, tx);
}

/* @b, bound out of @port to next hop @nhip: on its way if the neighbour is
 * known, held while Neighbor Discovery resolves it otherwise. */
static void rt_to_neigh6(struct rt_ctx *ctx, ipc_buf b, const uint8_t *nhip, uint16_t port, uint64_t now,
                         struct rt_burst *tx)
{
    struct neigh6_entry *e = neigh6_find(ctx->neigh6, nhip);
    if (neigh6_usable(e) && e->port == port) {
        rt_nd_touch(e, now);
        rt_fwd6_finish_in(ctx, b, e->mac, tx);
        return;
    }
    rt_nd_hold(ctx, nhip, port, b, now, tx);
}

/* A multicast destination: ND (and only ND) to a group this port is in is
 * ours; the rest drops by scope. */
static void rt_ip6_mcast_in(struct rt_ctx *ctx, ipc_buf b, const uint8_t *ip6, uint64_t now, struct rt_burst *tx)
{
    const struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    const uint8_t *dst = ip6 + PKT_IP6_DST;
    unsigned scope = dst[1] & 0x0f;
    if (scope > 2) {
        rt_drop(ctx, b, RT_CTR_DROP6_MCAST);
        return;
    }
    struct rt_ip6_l4 l4;
    if (scope == 2 && rt_ip6_walk(ip6, m->len - PKT_ETH_HLEN, &l4) == RT_IP6_WALK_OK &&
        l4.proto == PKT_IP_PROTO_ICMPV6 && !l4.later_fragment && l4.off + 1u <= m->len - PKT_ETH_HLEN) {
        uint8_t type = ip6[l4.off];
        if (type == RT_ICMP6_NS || type == RT_ICMP6_NA) {
            rt_nd_input(ctx, b, l4.off, now, tx);
            return;
        }
        if (type == RT_ICMP6_RS) {
            rt_nd_rs_input(ctx, b, l4.off, now, tx);
            return;
        }
    }
    /* OSPFv3 (ff02::5, ff02::6), MLD, ...: the control namespace's, if there is one. */
    if (scope == 2 && rt_punt_host(ctx, b, tx))
        return;
    rt_drop(ctx, b, RT_CTR_DROP6_MCAST_LL);
}

/* The checks before the route, in the order of the file's header comment:
 * true when @b is to be forwarded (still ours), false when it was
 * delivered, answered or dropped (consumed). @local: rt_ip6_local_mask. */
static bool rt_ip6_pre(struct rt_ctx *ctx, ipc_buf b, uint64_t local, uint64_t now, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint16_t in = m->in_port;
    const struct rt_port *pin = &ctx->port[in];
    if (!pin->n6) {
        rt_drop(ctx, b, RT_CTR_DROP_ETHERTYPE); /* IPv6 is off on this port */
        return false;
    }
    bool l2_group = pkt_mac_is_group(f);
    if (l2_group ? f[0] != 0x33 || f[1] != 0x33 : memcmp(f + PKT_ETH_DST, pin->mac, PKT_ETH_ALEN) != 0) {
        rt_drop(ctx, b, RT_CTR_DROP_L2_OTHER_HOST); /* another host's, or a broadcast: IPv6 has none */
        return false;
    }
    if (m->len < PKT_ETH_HLEN + PKT_IP6_HLEN) {
        rt_drop(ctx, b, RT_CTR_DROP6_RUNT);
        return false;
    }
    uint8_t *ip6 = f + PKT_ETH_HLEN;
    if (ip6[PKT_IP6_VTC] >> 4 != 6) {
        rt_drop(ctx, b, RT_CTR_DROP6_BAD_VERSION);
        return false;
    }
    rt_count(ctx, RT_CTR_RX_IPV6);
    /* The payload length against the frame: a jumbogram (0) needs a
     * hop-by-hop option no link of ours carries; a GSO packet's length is
     * its whole train's, judged after the route by segment. */
    uint32_t plen = pkt_get16(ip6 + PKT_IP6_PLEN);
    uint32_t have = pkt_total_len(m) - PKT_ETH_HLEN;
    bool gso = m->vnet.gso_type != 0;
    if (plen == 0 || (!gso && PKT_IP6_HLEN + plen > have)) {
        rt_drop(ctx, b, RT_CTR_DROP6_BAD_PLEN);
        return false;
    }
    if (!gso && PKT_IP6_HLEN + plen < have)
        rt_chain_trim(ctx->pool, b, PKT_ETH_HLEN + PKT_IP6_HLEN + plen);
    const uint8_t *src = ip6 + PKT_IP6_SRC, *dst = ip6 + PKT_IP6_DST;
    /* Unspecified and loopback (both in ::/64) are rare: one test of each
     * address's first half stands before the exact comparisons. */
    bool src_low = rt_ip6_hi_zero(src);
    if (rt_ip6_is_mcast(src)) {
        rt_drop(ctx, b, RT_CTR_DROP6_SRC_MCAST);
        return false;
    }
    if (ipc_unlikely(src_low) && rt_ip6_is_loopback(src)) {
        rt_drop(ctx, b, RT_CTR_DROP6_SRC_LOOPBACK);
        return false;
    }
    if (rt_ip6_is_mcast(dst)) {
        rt_ip6_mcast_in(ctx, b, ip6, now, tx); /* a DAD probe's :: source is fine here */
        return false;
    }
    if (ipc_unlikely(src_low) && rt_ip6_is_unspec(src)) {
        rt_drop(ctx, b, RT_CTR_DROP6_SRC_UNSPEC);
        return false;
    }
    if (ipc_unlikely(rt_ip6_hi_zero(dst)) && (rt_ip6_is_unspec(dst) || rt_ip6_is_loopback(dst))) {
        rt_drop(ctx, b, RT_CTR_DROP6_MARTIAN_DST);
        return false;
    }
    if (l2_group) {
        rt_drop(ctx, b, RT_CTR_DROP6_L2_MCAST_UNICAST);
        return false;
    }
    struct rt_ip6_l4 l4;
    enum rt_ip6_walk_rc w = rt_ip6_walk(ip6, m->len - PKT_ETH_HLEN, &l4);
    if (w == RT_IP6_WALK_RH0) {
        rt_drop(ctx, b, RT_CTR_DROP6_RH0);
        return false;
    }
    if (w != RT_IP6_WALK_OK) {
        rt_drop(ctx, b, RT_CTR_DROP6_EXT);
        return false;
    }
    if (((local >> rt_ip6_local_bit(dst)) & 1) && rt_ip6_is_local(ctx, in, dst)) {
        if (l4.proto == PKT_IP_PROTO_ICMPV6 && !l4.later_fragment)
            rt_icmp6_local(ctx, b, l4.off, now, tx);
        else
            rt_punt6(ctx, b, &l4, now, tx);
        return false;
    }
    /* Forwarding. Link-local addresses never leave their link (RFC 4291
     * §2.5.6), and the router has only one link per port. */
    if (rt_ip6_is_ll(src)) {
        rt_drop(ctx, b, RT_CTR_DROP6_LL_SRC);
        return false;
    }
    if (rt_ip6_is_ll(dst)) {
        rt_drop(ctx, b, RT_CTR_DROP6_LL_DST);
        return false;
    }
    if (ip6[PKT_IP6_HLIM] <= 1) {
        rt_icmp6_error(ctx, b, RT_ICMP6_TIME_EXCEEDED, 0, 0, now, tx);
        rt_drop(ctx, b, RT_CTR_DROP6_HOP_LIMIT);
        return false;
    }
    return true;
}

/* The rest of forwarding @b once the FIB said @idx for its destination:
 * the next hop, the egress MTU, segmentation, the neighbour. Consumes @b. */
static void rt_ip6_routed(struct rt_ctx *ctx, ipc_buf b, uint32_t idx, uint64_t now, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    const uint8_t *ip6 = ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN;
    const uint8_t *dst = ip6 + PKT_IP6_DST;
    if (idx == FIB6_MISS) {
        rt_icmp6_error(ctx, b, RT_ICMP6_UNREACH, RT_ICMP6_UNREACH_NO_ROUTE, 0, now, tx);
        rt_drop(ctx, b, RT_CTR_DROP6_NO_ROUTE);
        return;
    }
    struct fib6_nh nh = fib6_nh_at(ctx->fib6, idx);
    if (ipc_unlikely(nh.flags & FIB_NH_F_GROUP)) /* the flow's member (ecmp.h) */
        nh = rt_ecmp_pick6(ctx, fib6_nh_group(&nh), ip6, m->len - PKT_ETH_HLEN, now);
    if (nh.port >= ctx->nports || !ctx->port[nh.port].mtu || !ctx->port[nh.port].n6) {
        rt_drop(ctx, b, RT_CTR_DROP_BAD_NEXTHOP);
        return;
    }
    unsigned mtu = ctx->port[nh.port].mtu;
    bool gso = m->vnet.gso_type != 0;
    const struct rt_port *pin = &ctx->port[m->in_port];
    if (ipc_unlikely(pin->rx_partial) && !gso) {
        /* What generic XDP passed on as the sender built it (gso.h). */
        if (PKT_IP6_HLEN + (uint32_t)pkt_get16(ip6 + PKT_IP6_PLEN) > pin->mtu)
            gso = rt_gso_adopt(ctx, b, mtu < pin->mtu ? mtu : pin->mtu);
        else
            rt_csum_rx_fix(ctx, b);
    }
    uint32_t size =
        gso ? (m->vnet.hdr_len > PKT_ETH_HLEN + PKT_IP6_HLEN ? m->vnet.hdr_len - PKT_ETH_HLEN : PKT_IP6_HLEN + 20u) +
                  m->vnet.gso_size
            : PKT_IP6_HLEN + (uint32_t)pkt_get16(ip6 + PKT_IP6_PLEN);
    if (size > mtu) {
        /* Never fragment (RFC 8200 §5): tell the source the MTU (RFC 8201). */
        rt_icmp6_error(ctx, b, RT_ICMP6_TOO_BIG, 0, mtu, now, tx);
        rt_drop(ctx, b, RT_CTR_DROP6_TOO_BIG);
        return;
    }
    m->out_port = nh.port;
    const uint8_t *nhip = rt_ip6_is_unspec(nh.gw) ? dst : nh.gw;
    if (ipc_unlikely(ctx->port[nh.port].sw_offload) && rt_gso_needed(m)) {
        /* A port that sends frames as they are (AF_XDP): segments with
         * complete checksums, each one on its way (gso.h). */
        ipc_buf segs[RT_GSO_MAX];
        uint8_t nh6[16];
        memcpy(nh6, nhip, 16); /* nhip may point into b, which rt_gso consumes */
        unsigned ns = rt_gso(ctx, b, segs, RT_GSO_MAX);
        for (unsigned k = 0; k < ns; k++)
            rt_to_neigh6(ctx, segs[k], nh6, nh.port, now, tx);
        return;
    }
    rt_to_neigh6(ctx, b, nhip, nh.port, now, tx);
}

void rt_ipv6_burst(struct rt_ctx *ctx, const ipc_buf *bufs, uint32_t n, uint64_t now, struct rt_burst *tx)
{
    assert(fib6_read_held(ctx->fib6)); /* the caller's batch holds the (shared) read section */
    /* Taken afresh for each call, so nothing has to keep it in step with
     * the ports; within the call an address can only go (a DAD conflict),
     * which leaves the mask a superset: still right. */
    uint64_t local = rt_ip6_local_mask(ctx);
    for (uint32_t base = 0; base < n; base += RT_BURST) {
        uint32_t m = n - base < RT_BURST ? n - base : RT_BURST;
        ipc_buf fwd[RT_BURST];
        uint8_t dst[RT_BURST][16];
        uint32_t idx[RT_BURST];
        uint32_t k = 0;
        for (uint32_t i = 0; i < m; i++) {
            ipc_buf b = bufs[base + i];
            if (!rt_ip6_pre(ctx, b, local, now, tx))
                continue;
            memcpy(dst[k], ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN + PKT_IP6_DST, 16);
            fwd[k++] = b;
        }
        /* One lookup for all of them: a /48 is four dependent loads, which
         * the burst overlaps across packets (tables/fib6.h). */
        fib6_lookup_burst(ctx->fib6, (const uint8_t(*)[16])dst, idx, k);
        for (uint32_t j = 0; j < k; j++)
            rt_ip6_routed(ctx, fwd[j], idx[j], now, tx);
    }
}

void rt_ipv6_input(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx)
{
    rt_ipv6_burst(ctx, &b, 1, now, tx);
}
