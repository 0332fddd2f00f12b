/* SPDX-License-Identifier: MIT */
/*
 * services/router/icmp.c: echo replies and ICMP errors (RFC 792, RFC 1812
 * §4.3). The token bucket that limits the errors (§4.3.2.8), the new
 * buffer, the quote and the send are ICMPv6's too (icmp_common.c).
 */
#include "icmp.h"

#include <string.h>

#include "pkt.h"
#include "punt.h"
#include "rt_trace.h"

bool rt_icmp_error_allowed(const struct rt_ctx *ctx, ipc_buf orig)
{
    const struct ipc_meta *m = ipc_pool_meta(ctx->pool, orig);
    const uint8_t *f = ipc_pool_data(ctx->pool, orig);
    if (m->len < PKT_ETH_HLEN + PKT_IP_HLEN || m->in_port >= ctx->nports || !ctx->port[m->in_port].mtu)
        return false;
    if (pkt_mac_is_group(f))
        return false;
    const uint8_t *ip = f + PKT_ETH_HLEN;
    unsigned ihl = pkt_ip_hlen(ip);
    uint32_t src = pkt_get32(ip + PKT_IP_SRC), dst = pkt_get32(ip + PKT_IP_DST);
    if (rt_src_not_host(src) || dst == RT_IP_LIMITED_BCAST || rt_ip_is_multicast(dst))
        return false;
    /* Directed broadcast to (or from) one of our subnets. */
    if (rt_addr_kind(ctx, dst) == RT_ADDR_SUBNET_BCAST || rt_addr_kind(ctx, src) == RT_ADDR_SUBNET_BCAST)
        return false;
    if (pkt_get16(ip + PKT_IP_FRAG) & PKT_IP_OFFMASK)
        return false;
    if (ip[PKT_IP_PROTO] == PKT_IP_PROTO_ICMP) {
        uint8_t type;
        if (pkt_read(ctx->pool, orig, PKT_ETH_HLEN + ihl, &type, 1) != 1)
            return false;
        /* Only queries may draw an error; unknown types count as errors. */
        switch (type) {
        case 0: case 8: case 13: case 14: case 15: case 16: case 17: case 18:
            break;
        default:
            return false;
        }
    }
    return true;
}

static enum rt_ctr rt_icmp_ctr(uint8_t type, uint8_t code)
{
    if (type == RT_ICMP_TIME_EXCEEDED)
        return RT_CTR_ICMP_TIME_EXCEEDED_TX;
    if (type == RT_ICMP_PARAMPROB)
        return RT_CTR_ICMP_PARAMPROB_TX;
    if (code == RT_ICMP_UNREACH_NEEDFRAG)
        return RT_CTR_ICMP_FRAG_NEEDED_TX;
    if (code == RT_ICMP_UNREACH_PORT)
        return RT_CTR_ICMP_PORT_UNREACH_TX;
    return code == RT_ICMP_UNREACH_HOST ? RT_CTR_ICMP_HOST_UNREACH_TX : RT_CTR_ICMP_NET_UNREACH_TX;
}

bool rt_icmp_error(struct rt_ctx *ctx, ipc_buf orig, uint8_t type, uint8_t code, uint32_t aux, uint64_t now,
                   struct rt_burst *tx)
{
    if (!rt_icmp_error_allowed(ctx, orig)) {
        rt_count(ctx, RT_CTR_ICMP_SUPPRESSED);
        rt_trace_icmp(ctx, orig, type, code, IPC_TV_SUPPRESSED);
        return false;
    }
    if (!rt_tb_take(&ctx->icmp_tb, now)) {
        rt_count(ctx, RT_CTR_ICMP_RATE_LIMITED);
        rt_trace_icmp(ctx, orig, type, code, IPC_TV_RATE_LIMITED);
        return false;
    }
    const struct ipc_meta *om = ipc_pool_meta(ctx->pool, orig);
    const uint8_t *oip = (const uint8_t *)ipc_pool_data(ctx->pool, orig) + PKT_ETH_HLEN;
    /* RFC 792: the internet header plus the first 64 bits of the datagram. */
    uint32_t quote = rt_icmp_quote_len(ctx, orig, pkt_get16(oip + PKT_IP_TOTLEN), pkt_ip_hlen(oip) + 8u);
    ipc_buf nb;
    uint8_t *f = rt_icmp_new(ctx, orig, PKT_ETH_P_IP, &nb);
    if (!f)
        return false;
    uint32_t iplen = PKT_IP_HLEN + RT_ICMP_HLEN + quote;
    uint8_t *ip = f + PKT_ETH_HLEN;
    ip[PKT_IP_VIHL] = PKT_IP_VIHL_PLAIN;
    ip[PKT_IP_TOS] = 0xc0; /* precedence 6, internetwork control (RFC 1812 §4.3.2.5) */
    pkt_put16(ip + PKT_IP_TOTLEN, (uint16_t)iplen);
    pkt_put16(ip + PKT_IP_ID, ctx->ip_id++);
    pkt_put16(ip + PKT_IP_FRAG, 0);
    ip[PKT_IP_TTL] = 64;
    ip[PKT_IP_PROTO] = PKT_IP_PROTO_ICMP;
    pkt_put16(ip + PKT_IP_CSUM, 0);
    /* From the address of the interface the packet came in on (RFC 1812 §4.3.2.4). */
    pkt_put32(ip + PKT_IP_SRC, ctx->port[om->in_port].ip);
    memcpy(ip + PKT_IP_DST, oip + PKT_IP_SRC, 4);
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, PKT_IP_HLEN));

    uint8_t *ic = ip + PKT_IP_HLEN;
    rt_icmp_put_error(ctx, orig, ic, type, code, aux, quote);
    pkt_put16(ic + 2, pkt_csum(ic, RT_ICMP_HLEN + quote));
    rt_icmp_send(ctx, orig, nb, PKT_ETH_HLEN + iplen, rt_icmp_ctr(type, code), tx);
    rt_trace_icmp(ctx, orig, type, code, IPC_TV_SENT);
    return true;
}

void rt_icmp_local(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint8_t *ip = f + PKT_ETH_HLEN;
    unsigned ihl = pkt_ip_hlen(ip);
    if (ip[PKT_IP_PROTO] != PKT_IP_PROTO_ICMP || (pkt_get16(ip + PKT_IP_FRAG) & (PKT_IP_MF | PKT_IP_OFFMASK))) {
        /* Not ICMP, or fragmented (a ping would need reassembly): the control namespace's. */
        rt_punt4(ctx, b, now, tx);
        return;
    }
    if (m->len < PKT_ETH_HLEN + ihl + RT_ICMP_HLEN) {
        rt_drop(ctx, b, RT_CTR_DROP_ECHO_CHAIN);
        return;
    }
    uint8_t *ic = ip + ihl;
    if (ic[0] != RT_ICMP_ECHO || ic[1] != 0) {
        rt_punt4(ctx, b, now, tx); /* echo replies and errors for what the control namespace sent */
        return;
    }
    uint32_t icmp_len = pkt_get16(ip + PKT_IP_TOTLEN) - ihl, got;
    uint32_t sum = pkt_chain_csum_add(ctx->pool, b, PKT_ETH_HLEN + ihl, icmp_len, 0, &got);
    if (got != icmp_len || pkt_csum_fold(sum) != 0) {
        rt_drop(ctx, b, RT_CTR_DROP_ICMP_BAD_CHECKSUM);
        return;
    }
    /* Swapping the addresses leaves the IP checksum as it is (the sum commutes). */
    rt_icmp_swap(ip + PKT_IP_SRC, ip + PKT_IP_DST, 4);
    uint16_t old = pkt_get16(ip + PKT_IP_TTL);
    ip[PKT_IP_TTL] = 64;
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum_update16(pkt_get16(ip + PKT_IP_CSUM), old, pkt_get16(ip + PKT_IP_TTL)));
    ic[0] = RT_ICMP_ECHO_REPLY;
    pkt_put16(ic + 2, pkt_csum_update16(pkt_get16(ic + 2), RT_ICMP_ECHO << 8, RT_ICMP_ECHO_REPLY << 8));
    rt_count(ctx, RT_CTR_LOCAL_ECHO);
    rt_icmp_reply(ctx, b, RT_CTR_ICMP_ECHO_REPLY_TX, tx);
}
