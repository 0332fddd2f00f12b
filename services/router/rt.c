/* SPDX-License-Identifier: MIT */
/*
 * services/router/rt.c: the router context's setup, the counter names that
 * `ringrouter stats` prints, and the two rare-path helpers every stage uses
 * to emit or drop one packet.
 */
#include "rt.h"

#include <string.h>

#include "icmp.h"
#include "ipc/capture.h"
#include "ipc/pkt.h"
#include "tables/neigh.h"

const char *const rt_ctr_names[RT_CTR_MAX] = {
    [RT_CTR_RX_IPV4] = "rx_ipv4",
    [RT_CTR_RX_ARP] = "rx_arp",
    [RT_CTR_FORWARDED] = "forwarded",
    [RT_CTR_LOCAL_ECHO] = "local_echo",
    [RT_CTR_DROP_ETHERTYPE] = "drop_ethertype",
    [RT_CTR_DROP_VLAN] = "drop_vlan",
    [RT_CTR_DROP_RUNT] = "drop_runt",
    [RT_CTR_DROP_BAD_PORT] = "drop_bad_port",
    [RT_CTR_DROP_L2_OTHER_HOST] = "drop_l2_other_host",
    [RT_CTR_DROP_BAD_VERSION] = "drop_bad_version",
    [RT_CTR_DROP_BAD_IHL] = "drop_bad_ihl",
    [RT_CTR_DROP_BAD_CHECKSUM] = "drop_bad_checksum",
    [RT_CTR_DROP_BAD_TOTLEN] = "drop_bad_total_length",
    [RT_CTR_DROP_MARTIAN_SRC] = "drop_martian_source",
    [RT_CTR_DROP_OWN_SRC] = "drop_own_source",
    [RT_CTR_DROP_MARTIAN_DST] = "drop_martian_destination",
    [RT_CTR_DROP_LIMITED_BCAST] = "drop_limited_broadcast",
    [RT_CTR_DROP_MULTICAST] = "drop_multicast",
    [RT_CTR_DROP_DIRECTED_BCAST] = "drop_directed_broadcast",
    [RT_CTR_DROP_L2_BCAST_UNICAST] = "drop_l2_broadcast_unicast",
    [RT_CTR_DROP_LOCAL_OTHER] = "drop_local_other",
    [RT_CTR_DROP_ECHO_CHAIN] = "drop_echo_chain",
    [RT_CTR_DROP_ICMP_BAD_CHECKSUM] = "drop_icmp_bad_checksum",
    [RT_CTR_DROP_TTL] = "drop_ttl_exceeded",
    [RT_CTR_DROP_NO_ROUTE] = "drop_no_route",
    [RT_CTR_DROP_BAD_NEXTHOP] = "drop_bad_nexthop",
    [RT_CTR_DROP_FRAG_NEEDED] = "drop_frag_needed",
    [RT_CTR_DROP_GSO_TOO_BIG] = "drop_gso_too_big",
    [RT_CTR_DROP_NO_BUFS] = "drop_no_bufs",
    [RT_CTR_DROP_TX_FULL] = "drop_tx_full",
    [RT_CTR_DROP_PENDING_FULL] = "drop_pending_full",
    [RT_CTR_DROP_PENDING_LIMIT] = "drop_pending_limit",
    [RT_CTR_DROP_NEIGH_FULL] = "drop_neigh_table_full",
    [RT_CTR_DROP_NEIGH_FAILED] = "drop_neigh_failed",
    [RT_CTR_DROP_NEIGH_EVICTED] = "drop_neigh_evicted",
    [RT_CTR_DROP_PENDING_RESTART] = "drop_pending_restart",
    [RT_CTR_DROP_NEIGH_REMOVED] = "drop_neigh_removed",
    [RT_CTR_DROP_SRC_ROUTE] = "drop_source_route",
    [RT_CTR_DROP_BAD_OPTIONS] = "drop_bad_options",
    [RT_CTR_DROP_GSO_BAD] = "drop_gso_bad",
    [RT_CTR_GSO_SW_PKTS] = "gso_sw_packets",
    [RT_CTR_GSO_SW_SEGS] = "gso_sw_segments",
    [RT_CTR_CSUM_SW] = "csum_sw",
    [RT_CTR_RX_AGG] = "rx_agg_packets",
    [RT_CTR_CSUM_RX_PARTIAL] = "csum_rx_partial",
    [RT_CTR_FRAG_PKTS] = "frag_packets",
    [RT_CTR_FRAG_CREATED] = "frag_created",
    [RT_CTR_ARP_BAD] = "arp_bad",
    [RT_CTR_ARP_IGNORED] = "arp_ignored",
    [RT_CTR_ARP_REQ_RX] = "arp_request_rx",
    [RT_CTR_ARP_REPLY_RX] = "arp_reply_rx",
    [RT_CTR_ARP_GRATUITOUS_RX] = "arp_gratuitous_rx",
    [RT_CTR_ARP_REQ_TX] = "arp_request_tx",
    [RT_CTR_ARP_REPLY_TX] = "arp_reply_tx",
    [RT_CTR_NEIGH_LEARNED] = "neigh_learned",
    [RT_CTR_NEIGH_EXPIRED] = "neigh_expired",
    [RT_CTR_NEIGH_EVICTED] = "neigh_evicted",
    [RT_CTR_ICMP_ECHO_REPLY_TX] = "icmp_echo_reply_tx",
    [RT_CTR_ICMP_TIME_EXCEEDED_TX] = "icmp_time_exceeded_tx",
    [RT_CTR_ICMP_NET_UNREACH_TX] = "icmp_net_unreach_tx",
    [RT_CTR_ICMP_HOST_UNREACH_TX] = "icmp_host_unreach_tx",
    [RT_CTR_ICMP_FRAG_NEEDED_TX] = "icmp_frag_needed_tx",
    [RT_CTR_ICMP_PARAMPROB_TX] = "icmp_param_problem_tx",
    [RT_CTR_ICMP_RATE_LIMITED] = "icmp_rate_limited",
    [RT_CTR_ICMP_SUPPRESSED] = "icmp_suppressed",
    [RT_CTR_RX_IPV6] = "rx_ipv6",
    [RT_CTR_FORWARDED6] = "forwarded_ipv6",
    [RT_CTR_DROP6_RUNT] = "drop6_runt",
    [RT_CTR_DROP6_BAD_VERSION] = "drop6_bad_version",
    [RT_CTR_DROP6_BAD_PLEN] = "drop6_bad_payload_length",
    [RT_CTR_DROP6_SRC_UNSPEC] = "drop6_source_unspecified",
    [RT_CTR_DROP6_SRC_MCAST] = "drop6_source_multicast",
    [RT_CTR_DROP6_SRC_LOOPBACK] = "drop6_source_loopback",
    [RT_CTR_DROP6_MARTIAN_DST] = "drop6_martian_destination",
    [RT_CTR_DROP6_LL_SRC] = "drop6_link_local_source",
    [RT_CTR_DROP6_LL_DST] = "drop6_link_local_destination",
    [RT_CTR_DROP6_MCAST_LL] = "drop6_multicast_link_scope",
    [RT_CTR_DROP6_MCAST] = "drop6_multicast",
    [RT_CTR_DROP6_L2_MCAST_UNICAST] = "drop6_l2_multicast_unicast",
    [RT_CTR_DROP6_HOP_LIMIT] = "drop6_hop_limit_exceeded",
    [RT_CTR_DROP6_NO_ROUTE] = "drop6_no_route",
    [RT_CTR_DROP6_TOO_BIG] = "drop6_too_big",
    [RT_CTR_DROP6_RH0] = "drop6_routing_header_0",
    [RT_CTR_DROP6_EXT] = "drop6_extension_headers",
    [RT_CTR_DROP6_LOCAL_OTHER] = "drop6_local_other",
    [RT_CTR_DROP6_ICMP_BAD_CHECKSUM] = "drop6_icmp_bad_checksum",
    [RT_CTR_DROP6_GSO] = "drop6_gso",
    [RT_CTR_DROP6_NEIGH_FAILED] = "drop6_neigh_failed",
    [RT_CTR_ND_BAD] = "nd_bad",
    [RT_CTR_ND_IGNORED] = "nd_ignored",
    [RT_CTR_ND_NS_RX] = "nd_solicit_rx",
    [RT_CTR_ND_NA_RX] = "nd_advert_rx",
    [RT_CTR_ND_NS_TX] = "nd_solicit_tx",
    [RT_CTR_ND_NA_TX] = "nd_advert_tx",
    [RT_CTR_ND_LEARNED] = "nd_learned",
    [RT_CTR_ND_EXPIRED] = "nd_expired",
    [RT_CTR_ND_EVICTED] = "nd_evicted",
    [RT_CTR_ICMP6_ECHO_REPLY_TX] = "icmp6_echo_reply_tx",
    [RT_CTR_ICMP6_TIME_EXCEEDED_TX] = "icmp6_time_exceeded_tx",
    [RT_CTR_ICMP6_UNREACH_TX] = "icmp6_unreach_tx",
    [RT_CTR_ICMP6_TOO_BIG_TX] = "icmp6_too_big_tx",
    [RT_CTR_ICMP6_RATE_LIMITED] = "icmp6_rate_limited",
    [RT_CTR_ICMP6_SUPPRESSED] = "icmp6_suppressed",
    [RT_CTR_ND_RS_RX] = "nd_router_solicit_rx",
    [RT_CTR_ND_RA_TX] = "nd_router_advert_tx",
    [RT_CTR_ND_DAD_DEFENDED] = "nd_dad_defended",
    [RT_CTR_ND_DAD_CONFLICT] = "nd_dad_conflict",
    [RT_CTR_ZONE_COPY] = "zone_copies",
    [RT_CTR_PUNT_TO_HOST] = "punt_to_host",
    [RT_CTR_PUNT_FROM_HOST] = "punt_from_host",
    [RT_CTR_TCP_RST_TX] = "tcp_rst_tx",
    [RT_CTR_ICMP_PORT_UNREACH_TX] = "icmp_port_unreach_tx",
};

void rt_cfg_default(struct rt_cfg *cfg)
{
    cfg->icmp_interval_ns = 1000000;
    cfg->icmp_burst = 50;
    cfg->reachable_ns = 30ull * 1000000000;
    cfg->stale_gc_ns = 60ull * 1000000000;
    cfg->retrans_ns = 1000000000;
    cfg->max_retries = 3;
    cfg->delay_ns = 5ull * 1000000000;
}

void rt_ctx_init(struct rt_ctx *ctx, struct ipc_pool *pool, struct fib *fib, struct neigh_table *neigh,
                 struct rt_counters *ctr, const struct rt_cfg *cfg)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->pool = pool;
    ctx->zpool[0] = pool;
    ctx->nzones = 1;
    ctx->fib = fib;
    ctx->neigh = neigh;
    ctx->ctr = ctr;
    for (unsigned p = 0; p < RT_MAX_PORTS; p++)
        ctx->port[p].cp = RT_CP_NONE;
    if (cfg)
        ctx->cfg = *cfg;
    else
        rt_cfg_default(&ctx->cfg);
    if (!ctx->cfg.pending_max) {
        /* A sixteenth of the pool, and at most half the neighbour table's
         * room, since each waiting neighbour takes an entry: the learned
         * neighbours keep the other half whatever a scan sends. */
        uint32_t room = neigh ? (neigh->mask + 1) / 4 * 3 / 2 : RT_PENDING_MIN;
        uint32_t m = pool ? pool->nbufs / 16 : RT_PENDING_MIN;
        ctx->cfg.pending_max = m < room ? m : room;
        if (ctx->cfg.pending_max < RT_PENDING_MIN)
            ctx->cfg.pending_max = RT_PENDING_MIN;
    }
    rt_tb_init(&ctx->icmp_tb, ctx->cfg.icmp_interval_ns, ctx->cfg.icmp_burst, 0);
    for (unsigned i = 0; i < RT_ICMP6_TB_SLOTS; i++)
        rt_tb_init(&ctx->icmp6_tb[i], ctx->cfg.icmp_interval_ns, ctx->cfg.icmp_burst, 0);
    if (!ctx->cfg.delay_ns)
        ctx->cfg.delay_ns = 5ull * 1000000000;
}

void rt_tx(struct rt_ctx *ctx, struct rt_burst *tx, ipc_buf b)
{
    if (tx->n >= tx->cap && tx->flush)
        tx->flush(tx, tx->arg);
    if (tx->n >= tx->cap) {
        rt_drop(ctx, b, RT_CTR_DROP_TX_FULL);
        return;
    }
    const struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    if (m->out_port < RT_MAX_PORTS) {
        ctx->ctr->port[m->out_port].tx_pkts++;
        ctx->ctr->port[m->out_port].tx_bytes += m->next == IPC_BUF_NONE ? m->len : m->pkt_len;
    }
    tx->bufs[tx->n++] = b;
}

void rt_zone_switch(struct rt_ctx *ctx, unsigned z, struct rt_burst *tx)
{
    if (z == ctx->zone || z >= ctx->nzones)
        return;
    if (tx && tx->n && tx->flush)
        tx->flush(tx, tx->arg);
    ctx->zone = (uint8_t)z;
    ctx->pool = ctx->zpool[z];
}

ipc_buf rt_zone_move(struct rt_ctx *ctx, ipc_buf b, uint16_t port)
{
    struct ipc_pool *dst = rt_port_pool(ctx, port);
    if (dst == ctx->pool)
        return b;
    ipc_buf nb;
    int r = ipc_pool_copy_pkt(dst, ctx->pool, b, &nb);
    ipc_pool_free(ctx->pool, &b, 1);
    if (r < 0) {
        rt_count(ctx, RT_CTR_DROP_NO_BUFS);
        return IPC_BUF_NONE;
    }
    rt_count(ctx, RT_CTR_ZONE_COPY);
    return nb;
}

void rt_drop(struct rt_ctx *ctx, ipc_buf b, enum rt_ctr why)
{
    rt_count(ctx, why);
    if (ipc_cap_on(IPC_CAP_DROP | IPC_CAP_TRACE)) /* `ringrouter capture PORT drop`, `ringrouter trace` */
        ipc_cap_drop(ctx->pool, b, ipc_pool_meta(ctx->pool, b)->in_port, rt_ctr_names[why]);
    ipc_pool_free(ctx->pool, &b, 1);
}

void rt_chain_trim(struct ipc_pool *pool, ipc_buf head, uint32_t len)
{
    struct ipc_meta *hm = ipc_pool_meta(pool, head);
    if (hm->next == IPC_BUF_NONE) {
        pkt_set_len(hm, len);
        return;
    }
    uint32_t left = len;
    ipc_buf b = head;
    for (unsigned k = 0; b != IPC_BUF_NONE && k < IPC_CHAIN_MAX; k++) {
        struct ipc_meta *m = ipc_pool_meta(pool, b);
        if (m->len >= left) {
            m->len = (uint16_t)left;
            ipc_buf rest = m->next;
            m->next = IPC_BUF_NONE;
            if (rest != IPC_BUF_NONE)
                ipc_pool_free(pool, &rest, 1);
            break;
        }
        left -= m->len;
        b = m->next;
    }
    hm->pkt_len = len;
}
