/* SPDX-License-Identifier: MIT */
/*
 * services/router/icmp6.c: ICMPv6 echo replies and errors (RFC 4443), the
 * per-destination choice of the token bucket that limits the errors (§2.4
 * (f); the bucket, the new buffer, the quote and the send are IPv4's too:
 * icmp_common.c), and the checksum over the IPv6 pseudo-header (RFC 8200
 * §8.1).
 */
#include "icmp6.h"

#include <string.h>

#include "icmp_common.h"
#include "nd.h"
#include "punt.h"

bool rt_icmp6_csum_ok(const struct rt_ctx *ctx, ipc_buf b, uint32_t off)
{
    const uint8_t *ip6 = (const uint8_t *)ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN;
    uint32_t plen = pkt_get16(ip6 + PKT_IP6_PLEN);
    if (off > PKT_IP6_HLEN + plen)
        return false;
    uint32_t len = PKT_IP6_HLEN + plen - off, got;
    uint32_t sum = rt_ip6_pseudo_sum(ip6 + PKT_IP6_SRC, ip6 + PKT_IP6_DST, len, PKT_IP_PROTO_ICMPV6);
    sum = pkt_chain_csum_add(ctx->pool, b, PKT_ETH_HLEN + off, len, sum, &got);
    return got == len && pkt_csum_fold(sum) == 0;
}

/* May @orig draw an error of @type? RFC 4443 §2.4 (e). */
static bool rt_icmp6_error_allowed(const struct rt_ctx *ctx, ipc_buf orig, uint8_t type)
{
    const struct ipc_meta *m = ipc_pool_meta(ctx->pool, orig);
    const uint8_t *f = ipc_pool_data(ctx->pool, orig);
    if (m->len < PKT_ETH_HLEN + PKT_IP6_HLEN || m->in_port >= ctx->nports || !ctx->port[m->in_port].n6)
        return false;
    const uint8_t *ip6 = f + PKT_ETH_HLEN;
    const uint8_t *src = ip6 + PKT_IP6_SRC, *dst = ip6 + PKT_IP6_DST;
    /* No source to answer, or one that is no single host. */
    if (rt_ip6_is_unspec(src) || rt_ip6_is_mcast(src) || rt_ip6_is_loopback(src))
        return false;
    /* Multicast destinations (link layer or IP) get Packet Too Big only. */
    if ((pkt_mac_is_group(f) || rt_ip6_is_mcast(dst)) && type != RT_ICMP6_TOO_BIG)
        return false;
    struct rt_ip6_l4 l4;
    if (rt_ip6_walk(ip6, m->len - PKT_ETH_HLEN, &l4) != RT_IP6_WALK_OK)
        return true; /* unknown upper layer: not an ICMPv6 error as far as we can tell */
    if (l4.proto == PKT_IP_PROTO_ICMPV6 && !l4.later_fragment) {
        if (l4.off + 1u > m->len - PKT_ETH_HLEN)
            return false;
        if (ip6[l4.off] < 128) /* an error (or unknown error type): never one about an error */
            return false;
    }
    return true;
}

static enum rt_ctr rt_icmp6_ctr(uint8_t type)
{
    switch (type) {
    case RT_ICMP6_TIME_EXCEEDED:
        return RT_CTR_ICMP6_TIME_EXCEEDED_TX;
    case RT_ICMP6_TOO_BIG:
        return RT_CTR_ICMP6_TOO_BIG_TX;
    default:
        return RT_CTR_ICMP6_UNREACH_TX;
    }
}

/* The bucket of destination @a: FNV-1a over the address. */
static struct rt_tb *rt_icmp6_bucket(struct rt_ctx *ctx, const uint8_t *a)
{
    uint32_t h = 2166136261u;
    for (unsigned i = 0; i < 16; i++)
        h = (h ^ a[i]) * 16777619u;
    return &ctx->icmp6_tb[(h ^ (h >> 16)) % RT_ICMP6_TB_SLOTS];
}

bool rt_icmp6_error(struct rt_ctx *ctx, ipc_buf orig, uint8_t type, uint8_t code, uint32_t param, uint64_t now,
                    struct rt_burst *tx)
{
    if (!rt_icmp6_error_allowed(ctx, orig, type)) {
        rt_count(ctx, RT_CTR_ICMP6_SUPPRESSED);
        return false;
    }
    const struct ipc_meta *om = ipc_pool_meta(ctx->pool, orig);
    const uint8_t *of = ipc_pool_data(ctx->pool, orig);
    const uint8_t *oip = of + PKT_ETH_HLEN;
    if (!rt_tb_take(rt_icmp6_bucket(ctx, oip + PKT_IP6_SRC), now)) {
        rt_count(ctx, RT_CTR_ICMP6_RATE_LIMITED);
        return false;
    }
    const uint8_t *src = rt_ip6_src_for(ctx, om->in_port, oip + PKT_IP6_SRC);
    if (!src) {
        rt_count(ctx, RT_CTR_ICMP6_SUPPRESSED);
        return false;
    }
    /* As much of the packet as fits in the minimum MTU (RFC 4443 §2.4 (c)). */
    uint32_t quote = rt_icmp_quote_len(ctx, orig, PKT_IP6_HLEN + pkt_get16(oip + PKT_IP6_PLEN),
                                       RT_IP6_MIN_MTU - PKT_IP6_HLEN - RT_ICMP6_HLEN);
    ipc_buf nb;
    uint8_t *f = rt_icmp_new(ctx, orig, PKT_ETH_P_IPV6, &nb);
    if (!f)
        return false;
    uint32_t icmp_len = RT_ICMP6_HLEN + quote;
    uint8_t *ip6 = f + PKT_ETH_HLEN;
    pkt_put32(ip6 + PKT_IP6_VTC, 6u << 28);
    pkt_put16(ip6 + PKT_IP6_PLEN, (uint16_t)icmp_len);
    ip6[PKT_IP6_NXT] = PKT_IP_PROTO_ICMPV6;
    ip6[PKT_IP6_HLIM] = RT_HLIM_DEFAULT;
    memcpy(ip6 + PKT_IP6_SRC, src, 16);
    memcpy(ip6 + PKT_IP6_DST, oip + PKT_IP6_SRC, 16);
    uint8_t *ic = ip6 + PKT_IP6_HLEN;
    rt_icmp_put_error(ctx, orig, ic, type, code, param, quote);
    uint32_t sum = rt_ip6_pseudo_sum(ip6 + PKT_IP6_SRC, ip6 + PKT_IP6_DST, icmp_len, PKT_IP_PROTO_ICMPV6);
    pkt_put16(ic + 2, pkt_csum_fold(pkt_csum_add(sum, ic, icmp_len, false)));
    rt_icmp_send(ctx, orig, nb, PKT_ETH_HLEN + PKT_IP6_HLEN + icmp_len, rt_icmp6_ctr(type), tx);
    return true;
}

void rt_icmp6_local(struct rt_ctx *ctx, ipc_buf b, uint32_t off, uint64_t now, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint8_t *ip6 = f + PKT_ETH_HLEN;
    if (m->len < PKT_ETH_HLEN + off + RT_ICMP6_HLEN) {
        rt_drop(ctx, b, RT_CTR_DROP_ECHO_CHAIN);
        return;
    }
    uint8_t *ic = ip6 + off;
    if (ic[0] == RT_ICMP6_NS || ic[0] == RT_ICMP6_NA) {
        rt_nd_input(ctx, b, off, now, tx);
        return;
    }
    if (ic[0] == RT_ICMP6_RS) {
        rt_nd_rs_input(ctx, b, off, now, tx);
        return;
    }
    if (ic[0] != RT_ICMP6_ECHO_REQUEST || ic[1] != 0) {
        /* Echo replies, errors, MLD...: the control namespace's (punt.h). */
        rt_punt6(ctx, b, &(struct rt_ip6_l4){.proto = PKT_IP_PROTO_ICMPV6, .off = (uint16_t)off}, now, tx);
        return;
    }
    if (!rt_icmp6_csum_ok(ctx, b, off)) {
        rt_drop(ctx, b, RT_CTR_DROP6_ICMP_BAD_CHECKSUM);
        return;
    }
    /* Swapping the addresses leaves the pseudo-header's sum as it is. */
    rt_icmp_swap(ip6 + PKT_IP6_SRC, ip6 + PKT_IP6_DST, 16);
    ip6[PKT_IP6_HLIM] = RT_HLIM_DEFAULT;
    ic[0] = RT_ICMP6_ECHO_REPLY;
    pkt_put16(ic + 2, pkt_csum_update16(pkt_get16(ic + 2), RT_ICMP6_ECHO_REQUEST << 8, RT_ICMP6_ECHO_REPLY << 8));
    rt_icmp_reply(ctx, b, RT_CTR_ICMP6_ECHO_REPLY_TX, tx);
}
