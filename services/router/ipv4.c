/* SPDX-License-Identifier: MIT */
/*
 * services/router/ipv4.c: receive validation and the forwarding loop over a
 * burst. Per packet: validate (RFC 1812 §5.2.2), then local delivery, TTL
 * (§5.3.1), route (cached: a burst of one flow costs one lookup), MTU
 * (§5.2.6: fragment, or "fragmentation needed" when DF is set; a GSO chain
 * is judged by its segment size), neighbour (cached likewise), rewrite.
 * Only the first frame of a chain is ever read or written.
 */
#include "ipv4.h"

#include <assert.h>
#include <string.h>

#include "tables/fib_group.h"
#include "ecmp.h"
#include "ipc/capture.h"
#include "tables/fib.h"
#include "frag.h"
#include "gso.h"
#include "icmp.h"
#include "ipopt.h"
#include "ipv6.h"
#include "neigh.h"
#include "punt.h"

enum rt_verdict rt_ipv4_validate(struct rt_ctx *ctx, ipc_buf b, enum rt_ctr *why)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    const uint8_t *f = ipc_pool_data(ctx->pool, b);
    /* A host-side port's frames come only by its own ring (punt.h), never through here. */
    if (m->in_port >= ctx->nports || !ctx->port[m->in_port].mtu || ctx->port[m->in_port].cp_host) {
        *why = RT_CTR_DROP_BAD_PORT;
        return RT_V_DROP;
    }
    if (m->len < PKT_ETH_HLEN) {
        *why = RT_CTR_DROP_RUNT;
        return RT_V_DROP;
    }
    uint16_t type = pkt_eth_type(f);
    if (type == PKT_ETH_P_ARP)
        return RT_V_ARP;
    if (type == PKT_ETH_P_IPV6 && ctx->fib6)
        return RT_V_IPV6;
    if (type != PKT_ETH_P_IP) {
        *why = type == PKT_ETH_P_VLAN || type == PKT_ETH_P_QINQ ? RT_CTR_DROP_VLAN : RT_CTR_DROP_ETHERTYPE;
        return RT_V_DROP;
    }
    bool l2_group = pkt_mac_is_group(f);
    if (!l2_group && memcmp(f + PKT_ETH_DST, ctx->port[m->in_port].mac, PKT_ETH_ALEN) != 0) {
        *why = RT_CTR_DROP_L2_OTHER_HOST;
        return RT_V_DROP;
    }
    /* §5.2.2: (1) the link layer's length holds a minimal header ... */
    if (m->len < PKT_ETH_HLEN + PKT_IP_HLEN) {
        *why = RT_CTR_DROP_RUNT;
        return RT_V_DROP;
    }
    const uint8_t *ip = f + PKT_ETH_HLEN;
    /* ... (3) version 4, (4) IHL >= 5 ... */
    if (pkt_ip_version(ip) != 4) {
        *why = RT_CTR_DROP_BAD_VERSION;
        return RT_V_DROP;
    }
    unsigned ihl = pkt_ip_hlen(ip);
    if (ihl < PKT_IP_HLEN || PKT_ETH_HLEN + ihl > m->len) {
        *why = RT_CTR_DROP_BAD_IHL;
        return RT_V_DROP;
    }
    /* ... (2) the checksum ... */
    if (pkt_csum(ip, ihl) != 0) {
        *why = RT_CTR_DROP_BAD_CHECKSUM;
        return RT_V_DROP;
    }
    /* ... (5) total length >= header and <= what arrived. */
    uint32_t tot = pkt_get16(ip + PKT_IP_TOTLEN);
    uint32_t have = pkt_total_len(m) - PKT_ETH_HLEN;
    bool gso = m->vnet.gso_type != 0;
    if (tot < ihl || (!gso && tot > have)) {
        *why = RT_CTR_DROP_BAD_TOTLEN;
        return RT_V_DROP;
    }
    if (!gso && tot < have) {
        /* Ethernet pads frames to 60 bytes; the padding is not the packet's. */
        rt_chain_trim(ctx->pool, b, PKT_ETH_HLEN + tot);
    }
    uint32_t src = pkt_get32(ip + PKT_IP_SRC), dst = pkt_get32(ip + PKT_IP_DST);
    uint32_t da = dst >> 24;
    /* §5.3.7: 0/8, 127/8, class D and E (incl. 255.255.255.255) never source a packet. */
    if (rt_src_not_host(src)) {
        *why = RT_CTR_DROP_MARTIAN_SRC;
        return RT_V_DROP;
    }
    if (dst == RT_IP_LIMITED_BCAST) {
        *why = RT_CTR_DROP_LIMITED_BCAST;
        return RT_V_DROP;
    }
    if (da == RT_NET_THIS || da == RT_NET_LOOPBACK || da >= RT_NET_CLASS_E) {
        *why = RT_CTR_DROP_MARTIAN_DST;
        return RT_V_DROP;
    }
    if (rt_ip_is_multicast(dst)) {
        /* 224.0.0.0/24 never leaves its link: OSPF, VRRP, RIP... for the control namespace. */
        if ((dst >> 8) == 0xe00000u && rt_punt_on(ctx, m->in_port))
            return RT_V_PUNT;
        *why = RT_CTR_DROP_MULTICAST;
        return RT_V_DROP;
    }
    /* §5.3.4: an IP unicast in a link-layer broadcast is not forwarded. */
    if (l2_group) {
        *why = RT_CTR_DROP_L2_BCAST_UNICAST;
        return RT_V_DROP;
    }
    bool src_ours;
    enum rt_addr_kind kind = rt_addr_kind_src(ctx, dst, src, &src_ours);
    /* A source of ours from outside is spoofed or looped: Linux drops it as martian. */
    if (src_ours) {
        *why = RT_CTR_DROP_OWN_SRC;
        return RT_V_DROP;
    }
    switch (kind) {
    case RT_ADDR_LOCAL:
        return RT_V_LOCAL;
    case RT_ADDR_SUBNET_BCAST:
        *why = RT_CTR_DROP_DIRECTED_BCAST;
        return RT_V_DROP;
    case RT_ADDR_OTHER:
        break;
    }
    return RT_V_FORWARD;
}

void rt_fwd_finish(struct rt_ctx *ctx, ipc_buf b, const uint8_t *dmac, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    rt_ip_ttl_dec(f + PKT_ETH_HLEN);
    memcpy(f + PKT_ETH_DST, dmac, PKT_ETH_ALEN);
    memcpy(f + PKT_ETH_SRC, ctx->port[m->out_port].mac, PKT_ETH_ALEN);
    rt_count(ctx, RT_CTR_FORWARDED);
    rt_tx(ctx, tx, b);
}

/* Per-burst caches: the last destination's route and the last next hop's neighbour. */
struct rt_cache {
    uint32_t dst, nh;
    bool dst_valid;
    uint32_t ne_ip; /* 0: nothing cached */
    struct neigh_entry *ne;
};

static void rt_to_neigh(struct rt_ctx *ctx, struct rt_cache *c, ipc_buf b, uint32_t nhip, uint16_t port,
                        uint64_t now, struct rt_burst *tx)
{
    if (nhip != c->ne_ip) {
        c->ne = neigh_find(ctx->neigh, nhip);
        c->ne_ip = nhip;
        if (neigh_usable(c->ne))
            rt_neigh_touch(ctx, c->ne, now, tx);
    }
    if (neigh_usable(c->ne)) {
        rt_fwd_finish(ctx, b, c->ne->mac, tx);
        return;
    }
    rt_neigh_hold(ctx, nhip, port, b, now, tx);
    c->ne_ip = 0; /* the table may have a new entry */
}

#define RT_DROP_BATCH 64u

void rt_input_burst(struct rt_ctx *ctx, const ipc_buf *bufs, uint32_t n, uint64_t now, struct rt_burst *tx)
{
    struct ipc_pool *pool = ctx->pool;
    struct rt_counters *ctr = ctx->ctr;
    ipc_buf drops[RT_DROP_BATCH];
    uint32_t nd = 0;
    /* IPv6 frames wait for the end of the loop (or a full burst of them),
     * to be looked up in one fib6 burst (rt_ipv6_burst). */
    ipc_buf v6[RT_BURST];
    uint32_t n6 = 0;
    struct rt_cache c = {0};

    assert(fib_read_held(ctx->fib)); /* the caller's batch holds the FIB read section */
    /* Each frame's headers are a cache line (and a page) nobody on this CPU
     * touched since the driver or the kernel wrote them, while the ring's
     * take has just read every buffer's metadata: ask for the headers
     * RT_PREFETCH packets ahead, at the offset drivers receive at, so that
     * the misses overlap. */
    for (uint32_t i = 0; i < n && i < RT_PREFETCH; i++)
        __builtin_prefetch(ipc_pool_frame(pool, bufs[i]) + IPC_HEADROOM);
    for (uint32_t i = 0; i < n; i++) {
        ipc_buf b = bufs[i];
        if (i + RT_PREFETCH < n)
            __builtin_prefetch(ipc_pool_frame(pool, bufs[i + RT_PREFETCH]) + IPC_HEADROOM);
        struct ipc_meta *m = ipc_pool_meta(pool, b);
        if (m->in_port < RT_MAX_PORTS) {
            ctr->port[m->in_port].rx_pkts++;
            ctr->port[m->in_port].rx_bytes += pkt_total_len(m);
        }
        enum rt_ctr why = RT_CTR_MAX;
        switch (rt_ipv4_validate(ctx, b, &why)) {
        case RT_V_ARP:
            rt_arp_input(ctx, b, now, tx);
            c.ne_ip = 0; /* it may have resolved or learned a neighbour */
            continue;
        case RT_V_IPV6:
            v6[n6++] = b;
            if (n6 == RT_BURST) {
                rt_ipv6_burst(ctx, v6, n6, now, tx);
                n6 = 0;
            }
            continue;
        case RT_V_LOCAL:
            rt_count(ctx, RT_CTR_RX_IPV4);
            /* Options answered in place leave by the port they came in on. */
            if (ipc_unlikely(pkt_ip_hlen(ipc_pool_data(pool, b) + PKT_ETH_HLEN) > PKT_IP_HLEN) &&
                (why = rt_ipopt(ctx, b, m->in_port, now, tx)) != RT_CTR_MAX)
                goto drop;
            rt_icmp_local(ctx, b, now, tx);
            continue;
        case RT_V_PUNT:
            rt_count(ctx, RT_CTR_RX_IPV4);
            rt_punt4(ctx, b, now, tx);
            continue;
        case RT_V_DROP:
            goto drop;
        case RT_V_FORWARD:
            break;
        }
        rt_count(ctx, RT_CTR_RX_IPV4);
        uint8_t *ip = ipc_pool_data(pool, b) + PKT_ETH_HLEN;
        if (ip[PKT_IP_TTL] <= 1) {
            rt_icmp_error(ctx, b, RT_ICMP_TIME_EXCEEDED, RT_ICMP_EXC_TTL, 0, now, tx);
            why = RT_CTR_DROP_TTL;
            goto drop;
        }
        uint32_t dst = pkt_get32(ip + PKT_IP_DST);
        if (!c.dst_valid || dst != c.dst) {
            c.nh = fib_lookup(ctx->fib, dst);
            c.dst = dst;
            c.dst_valid = true;
        }
        if (c.nh == FIB_MISS) {
            rt_icmp_error(ctx, b, RT_ICMP_UNREACH, RT_ICMP_UNREACH_NET, 0, now, tx);
            why = RT_CTR_DROP_NO_ROUTE;
            goto drop;
        }
        struct fib_nh nh = fib_nh_at(ctx->fib, c.nh);
        /* A group's member is the flow's, not the destination's: the route
         * stays cached, the member is picked per packet (ecmp.h). */
        if (ipc_unlikely(nh.flags & FIB_NH_F_GROUP))
            nh = rt_ecmp_pick4(ctx, nh.gw, ip, m->len - PKT_ETH_HLEN, now);
        if (nh.port >= ctx->nports || !ctx->port[nh.port].mtu) {
            why = RT_CTR_DROP_BAD_NEXTHOP;
            goto drop;
        }
        unsigned mtu = ctx->port[nh.port].mtu;
        unsigned ihl = pkt_ip_hlen(ip);
        if (ipc_unlikely(ihl > PKT_IP_HLEN) && (why = rt_ipopt(ctx, b, nh.port, now, tx)) != RT_CTR_MAX)
            goto drop;
        bool df = pkt_get16(ip + PKT_IP_FRAG) & PKT_IP_DF;
        bool gso = m->vnet.gso_type != 0;
        const struct rt_port *pin = &ctx->port[m->in_port];
        if (ipc_unlikely(pin->rx_partial) && !gso) {
            /* What generic XDP passed on as the sender built it (gso.h). */
            if (pkt_get16(ip + PKT_IP_TOTLEN) > pin->mtu)
                gso = rt_gso_adopt(ctx, b, mtu < pin->mtu ? mtu : pin->mtu);
            else
                rt_csum_rx_fix(ctx, b);
        }
        uint32_t size;
        if (gso) /* each segment: headers (virtio hdr_len counts Ethernet) + gso_size */
            size = (m->vnet.hdr_len > PKT_ETH_HLEN + ihl ? m->vnet.hdr_len - PKT_ETH_HLEN : ihl + 20u) +
                   m->vnet.gso_size;
        else
            size = pkt_get16(ip + PKT_IP_TOTLEN);
        uint32_t nhip = nh.gw ? nh.gw : dst;
        m->out_port = nh.port;
        if (ipc_likely(size <= mtu)) {
            if (ipc_unlikely(ctx->port[nh.port].sw_offload) && rt_gso_needed(m)) {
                ipc_buf segs[RT_GSO_MAX];
                unsigned ns = rt_gso(ctx, b, segs, RT_GSO_MAX);
                for (unsigned k = 0; k < ns; k++)
                    rt_to_neigh(ctx, &c, segs[k], nhip, nh.port, now, tx);
                continue;
            }
            rt_to_neigh(ctx, &c, b, nhip, nh.port, now, tx);
            continue;
        }
        if (df || gso) {
            if (df)
                rt_icmp_error(ctx, b, RT_ICMP_UNREACH, RT_ICMP_UNREACH_NEEDFRAG, (uint16_t)mtu, now, tx);
            why = df ? RT_CTR_DROP_FRAG_NEEDED : RT_CTR_DROP_GSO_TOO_BIG;
            goto drop;
        }
        ipc_buf frags[RT_FRAG_MAX];
        unsigned nf = rt_frag(ctx, b, mtu, frags, RT_FRAG_MAX);
        for (unsigned k = 0; k < nf; k++)
            rt_to_neigh(ctx, &c, frags[k], nhip, nh.port, now, tx);
        continue;
    drop:
        rt_count(ctx, why);
        if (ipc_cap_on(IPC_CAP_DROP | IPC_CAP_TRACE)) /* `ringrouter capture PORT drop`, `ringrouter trace` */
            ipc_cap_drop(pool, b, ipc_pool_meta(pool, b)->in_port, rt_ctr_names[why]);
        drops[nd++] = b;
        if (nd == RT_DROP_BATCH) {
            ipc_pool_free(pool, drops, nd);
            nd = 0;
        }
    }
    if (n6)
        rt_ipv6_burst(ctx, v6, n6, now, tx);
    if (nd)
        ipc_pool_free(pool, drops, nd);
}
