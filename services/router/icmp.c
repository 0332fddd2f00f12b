/* SPDX-License-Identifier: MIT */
/*
 * services/router/icmp.c: echo replies and ICMP errors (RFC 792, RFC 1812
 * §4.3), and the token bucket that limits the errors (§4.3.2.8).
 */
#include "icmp.h"

#include <string.h>

#include "pkt.h"

void rt_tb_init(struct rt_tb *tb, uint64_t interval_ns, uint32_t burst, uint64_t now)
{
    tb->interval_ns = interval_ns ? interval_ns : 1;
    tb->burst = burst;
    tb->tokens = burst;
    tb->last_ns = now;
}

bool rt_tb_take(struct rt_tb *tb, uint64_t now)
{
    if (now > tb->last_ns) {
        uint64_t add = (now - tb->last_ns) / tb->interval_ns;
        if (add >= tb->burst - tb->tokens) {
            tb->tokens = tb->burst;
            tb->last_ns = now;
        } else if (add > 0) {
            tb->tokens += (uint32_t)add;
            /* Keep the fraction of an interval already elapsed. */
            tb->last_ns += add * tb->interval_ns;
        }
    }
    if (tb->tokens == 0)
        return false;
    tb->tokens--;
    return true;
}

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
    if (code == RT_ICMP_UNREACH_NEEDFRAG)
        return RT_CTR_ICMP_FRAG_NEEDED_TX;
    return code == RT_ICMP_UNREACH_HOST ? RT_CTR_ICMP_HOST_UNREACH_TX : RT_CTR_ICMP_NET_UNREACH_TX;
}

bool rt_icmp_error(struct rt_ctx *ctx, ipc_buf orig, uint8_t type, uint8_t code, uint16_t mtu, uint64_t now,
                   struct rt_burst *tx)
{
    if (!rt_icmp_error_allowed(ctx, orig)) {
        rt_count(ctx, RT_CTR_ICMP_SUPPRESSED);
        return false;
    }
    if (!rt_tb_take(&ctx->icmp_tb, now)) {
        rt_count(ctx, RT_CTR_ICMP_RATE_LIMITED);
        return false;
    }
    const struct ipc_meta *om = ipc_pool_meta(ctx->pool, orig);
    const uint8_t *of = ipc_pool_data(ctx->pool, orig);
    const uint8_t *oip = of + PKT_ETH_HLEN;
    unsigned ihl = pkt_ip_hlen(oip);
    uint32_t plen = pkt_total_len(om) - PKT_ETH_HLEN;
    uint32_t tot = pkt_get16(oip + PKT_IP_TOTLEN);
    if (tot < plen)
        plen = tot;
    /* RFC 792: the internet header plus the first 64 bits of the datagram. */
    uint32_t quote = ihl + 8 <= plen ? ihl + 8 : plen;

    ipc_buf nb;
    if (ipc_pool_alloc(ctx->pool, &nb, 1) != 1) {
        rt_count(ctx, RT_CTR_DROP_NO_BUFS);
        return false;
    }
    struct ipc_meta *nm = ipc_pool_meta(ctx->pool, nb);
    uint8_t *f = ipc_pool_data(ctx->pool, nb);
    const struct rt_port *pt = &ctx->port[om->in_port];
    uint32_t iplen = PKT_IP_HLEN + RT_ICMP_HLEN + quote;

    memcpy(f + PKT_ETH_DST, of + PKT_ETH_SRC, PKT_ETH_ALEN);
    memcpy(f + PKT_ETH_SRC, pt->mac, PKT_ETH_ALEN);
    pkt_put16(f + PKT_ETH_TYPE, PKT_ETH_P_IP);
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
    pkt_put32(ip + PKT_IP_SRC, pt->ip);
    memcpy(ip + PKT_IP_DST, oip + PKT_IP_SRC, 4);
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, PKT_IP_HLEN));

    uint8_t *ic = ip + PKT_IP_HLEN;
    ic[0] = type;
    ic[1] = code;
    pkt_put16(ic + 2, 0);
    pkt_put32(ic + 4, type == RT_ICMP_UNREACH && code == RT_ICMP_UNREACH_NEEDFRAG ? mtu : 0);
    pkt_read(ctx->pool, orig, PKT_ETH_HLEN, ic + RT_ICMP_HLEN, quote);
    pkt_put16(ic + 2, pkt_csum(ic, RT_ICMP_HLEN + quote));

    pkt_set_len(nm, PKT_ETH_HLEN + iplen);
    nm->in_port = IPC_PORT_NONE;
    nm->out_port = om->in_port;
    rt_count(ctx, rt_icmp_ctr(type, code));
    rt_tx(ctx, tx, nb);
    return true;
}

void rt_icmp_local(struct rt_ctx *ctx, ipc_buf b, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint8_t *ip = f + PKT_ETH_HLEN;
    unsigned ihl = pkt_ip_hlen(ip);
    if (ip[PKT_IP_PROTO] != PKT_IP_PROTO_ICMP || (pkt_get16(ip + PKT_IP_FRAG) & (PKT_IP_MF | PKT_IP_OFFMASK))) {
        /* Fragmented pings would need reassembly: not for now. */
        rt_drop(ctx, b, RT_CTR_DROP_LOCAL_OTHER);
        return;
    }
    if (m->len < PKT_ETH_HLEN + ihl + RT_ICMP_HLEN) {
        rt_drop(ctx, b, RT_CTR_DROP_ECHO_CHAIN);
        return;
    }
    uint8_t *ic = ip + ihl;
    if (ic[0] != RT_ICMP_ECHO || ic[1] != 0) {
        rt_drop(ctx, b, RT_CTR_DROP_LOCAL_OTHER);
        return;
    }
    uint32_t icmp_len = pkt_get16(ip + PKT_IP_TOTLEN) - ihl, got;
    uint32_t sum = pkt_chain_csum_add(ctx->pool, b, PKT_ETH_HLEN + ihl, icmp_len, 0, &got);
    if (got != icmp_len || pkt_csum_fold(sum) != 0) {
        rt_drop(ctx, b, RT_CTR_DROP_ICMP_BAD_CHECKSUM);
        return;
    }
    /* Swapping the addresses leaves the IP checksum as it is (the sum commutes). */
    uint8_t a[4];
    memcpy(a, ip + PKT_IP_SRC, 4);
    memcpy(ip + PKT_IP_SRC, ip + PKT_IP_DST, 4);
    memcpy(ip + PKT_IP_DST, a, 4);
    uint16_t old = pkt_get16(ip + PKT_IP_TTL);
    ip[PKT_IP_TTL] = 64;
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum_update16(pkt_get16(ip + PKT_IP_CSUM), old, pkt_get16(ip + PKT_IP_TTL)));
    ic[0] = RT_ICMP_ECHO_REPLY;
    pkt_put16(ic + 2, pkt_csum_update16(pkt_get16(ic + 2), RT_ICMP_ECHO << 8, RT_ICMP_ECHO_REPLY << 8));
    memcpy(f + PKT_ETH_DST, f + PKT_ETH_SRC, PKT_ETH_ALEN);
    memcpy(f + PKT_ETH_SRC, ctx->port[m->in_port].mac, PKT_ETH_ALEN);
    m->out_port = m->in_port;
    rt_count(ctx, RT_CTR_LOCAL_ECHO);
    rt_count(ctx, RT_CTR_ICMP_ECHO_REPLY_TX);
    rt_tx(ctx, tx, b);
}
