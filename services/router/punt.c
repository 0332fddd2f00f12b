/* SPDX-License-Identifier: MIT */
/*
 * services/router/punt.c: control traffic to and from the ports' host-side
 * interfaces, and the answers of a host with nothing listening when there
 * is none (punt.h). A frame goes to the host side as it arrived: the same
 * buffer, its virtio-net description kept (the host side's TAP takes a GSO
 * frame or a partial checksum as the kernel's own), so the kernel there
 * sees what it would on the wire.
 */
#include "punt.h"

#include <string.h>

#include "gso.h"
#include "icmp.h"
#include "icmp6.h"
#include "pkt.h"

#define RT_TCP_ACKNO 8u
#define RT_TCP_SYN 0x02u
#define RT_TCP_RST 0x04u
#define RT_TCP_ACK 0x10u
#define RT_ICMP6_UNREACH_PORT 4u

bool rt_punt_host(struct rt_ctx *ctx, ipc_buf b, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    if (!rt_punt_on(ctx, m->in_port))
        return false;
    const struct rt_port *pin = &ctx->port[m->in_port];
    if (ipc_unlikely(pin->rx_partial) && !m->vnet.gso_type) {
        /* What generic XDP passed on as the sender built it (gso.h): a
         * description the host side's TAP can take. */
        if (pkt_total_len(m) - PKT_ETH_HLEN > pin->mtu)
            rt_gso_adopt(ctx, b, pin->mtu);
        else
            rt_csum_rx_fix(ctx, b);
    }
    m->out_port = pin->cp;
    rt_count(ctx, RT_CTR_PUNT_TO_HOST);
    rt_tx(ctx, tx, b);
    return true;
}

/* The reset that answers TCP segment @th (@seglen bytes of data) to a
 * closed port, RFC 793 "Reset Generation": its header into @out; false for
 * a reset, which nothing answers. */
static bool rt_rst_of(const uint8_t *th, uint32_t seglen, uint8_t *out)
{
    uint8_t fl = th[PKT_TCP_FLAGS];
    if (fl & RT_TCP_RST)
        return false;
    memset(out, 0, PKT_TCP_HLEN);
    memcpy(out + PKT_L4_SPORT, th + PKT_L4_DPORT, 2);
    memcpy(out + PKT_L4_DPORT, th + PKT_L4_SPORT, 2);
    if (fl & RT_TCP_ACK) {
        memcpy(out + PKT_TCP_SEQ, th + RT_TCP_ACKNO, 4); /* <SEQ=SEG.ACK><CTL=RST> */
        out[PKT_TCP_FLAGS] = RT_TCP_RST;
    } else { /* <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>; SYN and FIN count one each */
        uint32_t len = seglen + !!(fl & RT_TCP_SYN) + !!(fl & PKT_TCP_FIN);
        pkt_put32(out + RT_TCP_ACKNO, pkt_get32(th + PKT_TCP_SEQ) + len);
        out[PKT_TCP_FLAGS] = RT_TCP_RST | RT_TCP_ACK;
    }
    out[PKT_TCP_DOFF] = (PKT_TCP_HLEN / 4) << 4;
    return true;
}

/* The segment at @l4 (@l4len bytes of TCP, header and data) of @b: its
 * reset in @rst, if one is due and the token bucket allows it. Resets
 * share the IPv4 errors' bucket: a scan of closed ports costs the router
 * what a scan of unrouted addresses does. */
static bool rt_rst_due(struct rt_ctx *ctx, ipc_buf b, uint32_t l4, uint32_t l4len, uint64_t now, uint8_t *rst)
{
    const struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    const uint8_t *th = (const uint8_t *)ipc_pool_data(ctx->pool, b) + l4;
    if (m->len < l4 + PKT_TCP_HLEN || l4len < PKT_TCP_HLEN)
        return false;
    uint32_t doff = (uint32_t)(th[PKT_TCP_DOFF] >> 4) * 4u;
    if (doff < PKT_TCP_HLEN || doff > l4len || !rt_rst_of(th, l4len - doff, rst))
        return false;
    if (!rt_tb_take(&ctx->icmp_tb, now)) {
        rt_count(ctx, RT_CTR_ICMP_RATE_LIMITED);
        return false;
    }
    return true;
}

static void rt_rst4(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx)
{
    const uint8_t *oip = (const uint8_t *)ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN;
    uint32_t ihl = pkt_ip_hlen(oip), tot = pkt_get16(oip + PKT_IP_TOTLEN);
    uint8_t rst[PKT_TCP_HLEN];
    if (tot < ihl || !rt_rst_due(ctx, b, PKT_ETH_HLEN + ihl, tot - ihl, now, rst))
        return;
    ipc_buf nb;
    uint8_t *f = rt_icmp_new(ctx, b, PKT_ETH_P_IP, &nb);
    if (!f)
        return;
    uint8_t *ip = f + PKT_ETH_HLEN, *th = ip + PKT_IP_HLEN;
    memset(ip, 0, PKT_IP_HLEN);
    ip[PKT_IP_VIHL] = PKT_IP_VIHL_PLAIN;
    pkt_put16(ip + PKT_IP_TOTLEN, PKT_IP_HLEN + PKT_TCP_HLEN);
    pkt_put16(ip + PKT_IP_ID, ctx->ip_id++);
    pkt_put16(ip + PKT_IP_FRAG, PKT_IP_DF);
    ip[PKT_IP_TTL] = 64;
    ip[PKT_IP_PROTO] = PKT_IP_PROTO_TCP;
    memcpy(ip + PKT_IP_SRC, oip + PKT_IP_DST, 4); /* from the address it was sent to */
    memcpy(ip + PKT_IP_DST, oip + PKT_IP_SRC, 4);
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, PKT_IP_HLEN));
    memcpy(th, rst, PKT_TCP_HLEN);
    uint8_t tail[4] = {0, PKT_IP_PROTO_TCP, 0, PKT_TCP_HLEN};
    uint32_t sum = pkt_csum_add(pkt_csum_add(0, ip + PKT_IP_SRC, 8, false), tail, 4, false);
    pkt_put16(th + PKT_TCP_CSUM, pkt_csum_fold(pkt_csum_add(sum, th, PKT_TCP_HLEN, false)));
    rt_icmp_send(ctx, b, nb, PKT_ETH_HLEN + PKT_IP_HLEN + PKT_TCP_HLEN, RT_CTR_TCP_RST_TX, tx);
}

static void rt_rst6(struct rt_ctx *ctx, ipc_buf b, uint32_t off, uint64_t now, struct rt_burst *tx)
{
    const uint8_t *oip = (const uint8_t *)ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN;
    uint32_t end = PKT_IP6_HLEN + pkt_get16(oip + PKT_IP6_PLEN);
    uint8_t rst[PKT_TCP_HLEN];
    if (end < off || !rt_rst_due(ctx, b, PKT_ETH_HLEN + off, end - off, now, rst))
        return;
    ipc_buf nb;
    uint8_t *f = rt_icmp_new(ctx, b, PKT_ETH_P_IPV6, &nb);
    if (!f)
        return;
    uint8_t *ip6 = f + PKT_ETH_HLEN, *th = ip6 + PKT_IP6_HLEN;
    pkt_put32(ip6 + PKT_IP6_VTC, 6u << 28);
    pkt_put16(ip6 + PKT_IP6_PLEN, PKT_TCP_HLEN);
    ip6[PKT_IP6_NXT] = PKT_IP_PROTO_TCP;
    ip6[PKT_IP6_HLIM] = RT_HLIM_DEFAULT;
    memcpy(ip6 + PKT_IP6_SRC, oip + PKT_IP6_DST, 16);
    memcpy(ip6 + PKT_IP6_DST, oip + PKT_IP6_SRC, 16);
    memcpy(th, rst, PKT_TCP_HLEN);
    uint32_t sum = rt_ip6_pseudo_sum(ip6 + PKT_IP6_SRC, ip6 + PKT_IP6_DST, PKT_TCP_HLEN, PKT_IP_PROTO_TCP);
    pkt_put16(th + PKT_TCP_CSUM, pkt_csum_fold(pkt_csum_add(sum, th, PKT_TCP_HLEN, false)));
    rt_icmp_send(ctx, b, nb, PKT_ETH_HLEN + PKT_IP6_HLEN + PKT_TCP_HLEN, RT_CTR_TCP_RST_TX, tx);
}

void rt_punt4(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx)
{
    if (rt_punt_host(ctx, b, tx))
        return;
    const uint8_t *ip = (const uint8_t *)ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN;
    if (!pkt_ip_is_fragment(ip)) {
        if (ip[PKT_IP_PROTO] == PKT_IP_PROTO_TCP)
            rt_rst4(ctx, b, now, tx);
        else if (ip[PKT_IP_PROTO] == PKT_IP_PROTO_UDP)
            rt_icmp_error(ctx, b, RT_ICMP_UNREACH, RT_ICMP_UNREACH_PORT, 0, now, tx);
    }
    rt_drop(ctx, b, RT_CTR_DROP_LOCAL_OTHER);
}

void rt_punt6(struct rt_ctx *ctx, ipc_buf b, const struct rt_ip6_l4 *l4, uint64_t now, struct rt_burst *tx)
{
    if (rt_punt_host(ctx, b, tx))
        return;
    if (!l4->later_fragment && l4->proto == PKT_IP_PROTO_TCP)
        rt_rst6(ctx, b, l4->off, now, tx);
    else if (!l4->later_fragment && l4->proto == PKT_IP_PROTO_UDP)
        rt_icmp6_error(ctx, b, RT_ICMP6_UNREACH, RT_ICMP6_UNREACH_PORT, 0, now, tx);
    rt_drop(ctx, b, RT_CTR_DROP6_LOCAL_OTHER);
}

void rt_punt_from_host(struct rt_ctx *ctx, const ipc_buf *bufs, uint32_t n, uint16_t host, uint16_t port,
                       struct rt_burst *tx)
{
    struct rt_counters *c = ctx->ctr;
    for (uint32_t i = 0; i < n; i++) {
        ipc_buf b = bufs[i];
        struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
        c->port[host].rx_pkts++;
        c->port[host].rx_bytes += pkt_total_len(m);
        if (m->len < PKT_ETH_HLEN) {
            rt_drop(ctx, b, RT_CTR_DROP_RUNT);
            continue;
        }
        m->in_port = host;
        m->out_port = port;
        rt_count(ctx, RT_CTR_PUNT_FROM_HOST);
        if (ipc_unlikely(ctx->port[port].sw_offload) && rt_gso_needed(m)) {
            /* Its TAP has no offloads, so the kernel sends none; a service
             * that claims one anyway gets what forwarding would do. */
            ipc_buf segs[RT_GSO_MAX];
            unsigned ns = rt_gso(ctx, b, segs, RT_GSO_MAX);
            for (unsigned k = 0; k < ns; k++)
                rt_tx(ctx, tx, segs[k]);
            continue;
        }
        rt_tx(ctx, tx, b);
    }
}
