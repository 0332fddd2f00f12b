/* SPDX-License-Identifier: MIT */
/*
 * services/router/gso.c: software segmentation and checksums (gso.h). Runs
 * only for packets with offloads pending that leave through a port that
 * cannot take them (AF_XDP); a TAP-to-TAP path never comes here.
 *
 * The payload is read once, front to back, with a cursor over the chain, so
 * a 64 KB packet costs one pass however many segments it makes. Each
 * segment's L4 checksum is summed after its copy, over bytes still in cache.
 */
#include "gso.h"

#include <string.h>

#include "ipv6.h"
#include "pkt.h"

#define RT_TCP_HLEN_MAX 60u
#define RT_GSO_HDR_MAX (PKT_ETH_HLEN + PKT_IP_HLEN_MAX + RT_TCP_HLEN_MAX) /* headers with options */

/* A reader that walks a chain front to back. */
struct rt_cursor {
    const struct ipc_pool *pool;
    ipc_buf b;
    uint32_t off; /* within b's data */
    unsigned hops;
};

static void cur_init(struct rt_cursor *c, const struct ipc_pool *pool, ipc_buf b, uint32_t off)
{
    *c = (struct rt_cursor){.pool = pool, .b = b};
    while (c->b != IPC_BUF_NONE && c->hops < IPC_CHAIN_MAX) {
        const struct ipc_meta *m = ipc_pool_meta(pool, c->b);
        if (off < m->len) {
            c->off = off;
            return;
        }
        off -= m->len;
        c->b = m->next;
        c->hops++;
    }
}

/* Copy the next @len bytes to @dst. Returns the bytes copied. */
static uint32_t cur_read(struct rt_cursor *c, uint8_t *dst, uint32_t len)
{
    uint32_t done = 0;
    while (done < len && c->b != IPC_BUF_NONE && c->hops < IPC_CHAIN_MAX) {
        const struct ipc_meta *m = ipc_pool_meta(c->pool, c->b);
        uint32_t n = m->len - c->off;
        if (n > len - done)
            n = len - done;
        memcpy(dst + done, ipc_pool_data(c->pool, c->b) + c->off, n);
        done += n;
        c->off += n;
        if (c->off == m->len) {
            c->b = m->next;
            c->off = 0;
            c->hops++;
        }
    }
    return done;
}

/* The TCP/UDP pseudo-header (RFC 793 §3.1, RFC 768) of @ip for @l4len bytes. */
static uint32_t pseudo_sum(const uint8_t *ip, uint32_t l4len)
{
    uint8_t ph[12];
    memcpy(ph, ip + PKT_IP_SRC, 8);
    ph[8] = 0;
    ph[9] = ip[PKT_IP_PROTO];
    pkt_put16(ph + 10, (uint16_t)l4len);
    return pkt_csum_add(0, ph, sizeof(ph), false);
}

/* Finish a partial checksum in place (skb_checksum_help). */
static bool csum_complete(struct rt_ctx *ctx, ipc_buf b)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint32_t len = pkt_total_len(m);
    uint32_t start = m->vnet.csum_start, field = start + m->vnet.csum_offset;
    if (start >= len || field + 2 > m->len) /* the field must be in the first frame */
        return false;
    uint32_t got;
    uint32_t sum = pkt_chain_csum_add(ctx->pool, b, start, len - start, 0, &got);
    if (got != len - start)
        return false;
    uint16_t v = pkt_csum_fold(sum);
    pkt_put16(ipc_pool_data(ctx->pool, b) + field, v ? v : 0xffff); /* 0 means "none" for UDP */
    m->vnet = (struct ipc_vnet){0};
    rt_count(ctx, RT_CTR_CSUM_SW);
    return true;
}

unsigned rt_gso(struct rt_ctx *ctx, ipc_buf b, ipc_buf *out, unsigned max)
{
    struct ipc_pool *pool = ctx->pool;
    struct ipc_meta *m = ipc_pool_meta(pool, b);
    unsigned type = m->vnet.gso_type & ~RT_VNET_GSO_ECN;
    enum rt_ctr why = RT_CTR_DROP_GSO_BAD;

    if (type == RT_VNET_GSO_NONE) {
        /* No segmentation: one frame, at most a checksum to finish. */
        if (m->next != IPC_BUF_NONE || max == 0)
            goto drop;
        if ((m->vnet.flags & RT_VNET_F_NEEDS_CSUM) && !csum_complete(ctx, b))
            goto drop;
        m->vnet = (struct ipc_vnet){0};
        out[0] = b;
        return 1;
    }
    if (type != RT_VNET_GSO_TCPV4 && type != RT_VNET_GSO_TCPV6 && type != RT_VNET_GSO_UDP_L4)
        goto drop; /* UFO (fragmenting UDP): not from a TAP we configure */

    uint8_t hdr[RT_GSO_HDR_MAX];
    uint32_t len = pkt_total_len(m);
    uint32_t hl = pkt_read(pool, b, 0, hdr, len < sizeof(hdr) ? len : (uint32_t)sizeof(hdr));
    if (hl < PKT_ETH_HLEN + PKT_IP_HLEN)
        goto drop;
    bool v6 = pkt_eth_type(hdr) == PKT_ETH_P_IPV6;
    if ((type == RT_VNET_GSO_TCPV4 && v6) || (type == RT_VNET_GSO_TCPV6 && !v6))
        goto drop; /* the header says the other family */
    uint8_t *ip = hdr + PKT_ETH_HLEN;
    unsigned ihl = v6 ? PKT_IP6_HLEN : pkt_ip_hlen(ip);
    unsigned proto = type == RT_VNET_GSO_UDP_L4 ? PKT_IP_PROTO_UDP : PKT_IP_PROTO_TCP;
    bool tcp = proto == PKT_IP_PROTO_TCP;
    if (hl < PKT_ETH_HLEN + ihl + PKT_UDP_HLEN || ip[v6 ? PKT_IP6_NXT : PKT_IP_PROTO] != proto)
        goto drop;
    uint8_t *l4 = ip + ihl;
    unsigned l4h = tcp ? pkt_tcp_hlen(l4) : PKT_UDP_HLEN;
    uint32_t hlen = PKT_ETH_HLEN + ihl + l4h;
    uint32_t mss = m->vnet.gso_size;
    if (l4h < (tcp ? PKT_TCP_HLEN : PKT_UDP_HLEN) || hlen > hl || len <= hlen || mss == 0)
        goto drop;
    uint32_t payload = len - hlen, nseg = (payload + mss - 1) / mss;
    if (nseg > max || hlen + mss > pool->frame_size - pool->headroom)
        goto drop; /* too many pieces, or a segment that does not fit one frame */

    uint32_t seq0 = tcp ? pkt_get32(l4 + PKT_TCP_SEQ) : 0;
    uint16_t id0 = v6 ? 0 : pkt_get16(ip + PKT_IP_ID);
    uint8_t tflags = tcp ? l4[PKT_TCP_FLAGS] : 0;
    uint32_t got = ipc_pool_alloc(pool, out, nseg);
    if (got != nseg) {
        ipc_pool_free(pool, out, got);
        why = RT_CTR_DROP_NO_BUFS;
        goto drop;
    }
    struct rt_cursor cur;
    cur_init(&cur, pool, b, hlen);
    for (uint32_t i = 0; i < nseg; i++) {
        uint32_t seg = i + 1 < nseg ? mss : payload - i * mss;
        struct ipc_meta *nm = ipc_pool_meta(pool, out[i]);
        uint8_t *f = ipc_pool_data(pool, out[i]);
        uint8_t *nip = f + PKT_ETH_HLEN, *nl4 = nip + ihl;
        memcpy(f, hdr, hlen);
        if (cur_read(&cur, f + hlen, seg) != seg) {
            ipc_pool_free(pool, out, nseg);
            goto drop;
        }
        uint32_t l4len = l4h + seg;
        uint32_t ph;
        if (v6) {
            pkt_put16(nip + PKT_IP6_PLEN, (uint16_t)l4len);
            ph = rt_ip6_pseudo_sum(nip + PKT_IP6_SRC, nip + PKT_IP6_DST, l4len, (uint8_t)proto);
        } else {
            pkt_put16(nip + PKT_IP_TOTLEN, (uint16_t)(ihl + l4h + seg));
            pkt_put16(nip + PKT_IP_ID, (uint16_t)(id0 + i));
            pkt_put16(nip + PKT_IP_CSUM, 0);
            pkt_put16(nip + PKT_IP_CSUM, pkt_csum(nip, ihl));
            ph = pseudo_sum(nip, l4len);
        }
        if (tcp) {
            uint8_t fl = tflags;
            if (i + 1 < nseg)
                fl &= (uint8_t)~(PKT_TCP_FIN | PKT_TCP_PSH);
            if (i > 0)
                fl &= (uint8_t)~PKT_TCP_CWR;
            pkt_put32(nl4 + PKT_TCP_SEQ, seq0 + i * mss);
            nl4[PKT_TCP_FLAGS] = fl;
            pkt_put16(nl4 + PKT_TCP_CSUM, 0);
            pkt_put16(nl4 + PKT_TCP_CSUM, pkt_csum_fold(pkt_csum_add(ph, nl4, l4len, false)));
        } else {
            pkt_put16(nl4 + PKT_UDP_LEN, (uint16_t)l4len);
            pkt_put16(nl4 + PKT_UDP_CSUM, 0);
            uint16_t v = pkt_csum_fold(pkt_csum_add(ph, nl4, l4len, false));
            pkt_put16(nl4 + PKT_UDP_CSUM, v ? v : 0xffff);
        }
        pkt_set_len(nm, hlen + seg);
        nm->in_port = m->in_port;
        nm->out_port = m->out_port;
        nm->mark = m->mark;
    }
    rt_count(ctx, RT_CTR_GSO_SW_PKTS);
    ctx->ctr->c[RT_CTR_GSO_SW_SEGS] += nseg;
    ipc_pool_free(pool, &b, 1);
    return nseg;

drop:
    rt_drop(ctx, b, why);
    return 0;
}

/* The L4 header's offset, protocol and pseudo-header sum (for @l4len bytes)
 * of IPv4 or IPv6 packet @f; false if it has none we handle. */
static bool l4_of(const uint8_t *f, uint32_t len, uint32_t *l4off, unsigned *proto, uint32_t *l4len, uint32_t *ps)
{
    const uint8_t *ip = f + PKT_ETH_HLEN;
    if (pkt_eth_type(f) == PKT_ETH_P_IPV6) {
        *proto = ip[PKT_IP6_NXT];
        *l4off = PKT_ETH_HLEN + PKT_IP6_HLEN;
        *l4len = pkt_get16(ip + PKT_IP6_PLEN);
        *ps = rt_ip6_pseudo_sum(ip + PKT_IP6_SRC, ip + PKT_IP6_DST, *l4len, (uint8_t)*proto);
    } else {
        if (pkt_ip_is_fragment(ip))
            return false;
        *proto = ip[PKT_IP_PROTO];
        *l4off = PKT_ETH_HLEN + pkt_ip_hlen(ip);
        *l4len = pkt_get16(ip + PKT_IP_TOTLEN) - pkt_ip_hlen(ip);
        *ps = pseudo_sum(ip, *l4len);
    }
    return (*proto == PKT_IP_PROTO_TCP || *proto == PKT_IP_PROTO_UDP) && *l4off + *l4len <= len;
}

bool rt_gso_adopt(struct rt_ctx *ctx, ipc_buf b, unsigned mtu)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint32_t l4off, l4len, ps;
    unsigned proto;
    if (m->len < PKT_ETH_HLEN + PKT_IP6_HLEN + PKT_TCP_HLEN ||
        !l4_of(f, pkt_total_len(m), &l4off, &proto, &l4len, &ps) || proto != PKT_IP_PROTO_TCP ||
        l4off + PKT_TCP_HLEN > m->len)
        return false;
    uint32_t thl = pkt_tcp_hlen(f + l4off);
    if (thl < PKT_TCP_HLEN || l4off + thl > m->len || l4off - PKT_ETH_HLEN + thl >= mtu)
        return false;
    uint16_t v = (uint16_t)~pkt_csum_fold(ps);
    pkt_put16(f + l4off + PKT_TCP_CSUM, v);
    bool v6 = pkt_eth_type(f) == PKT_ETH_P_IPV6;
    m->vnet = (struct ipc_vnet){
        .flags = RT_VNET_F_NEEDS_CSUM,
        .gso_type = v6 ? RT_VNET_GSO_TCPV6 : RT_VNET_GSO_TCPV4,
        .hdr_len = (uint16_t)(l4off + thl),
        .gso_size = (uint16_t)(mtu - (l4off - PKT_ETH_HLEN) - thl),
        .csum_start = (uint16_t)l4off,
        .csum_offset = PKT_TCP_CSUM,
    };
    rt_count(ctx, RT_CTR_RX_AGG);
    return true;
}

void rt_csum_rx_fix(struct rt_ctx *ctx, ipc_buf b)
{
    const struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    uint32_t l4off, l4len, ps, got;
    unsigned proto;
    if (!l4_of(f, pkt_total_len(m), &l4off, &proto, &l4len, &ps))
        return;
    uint32_t field = l4off + (proto == PKT_IP_PROTO_TCP ? PKT_TCP_CSUM : PKT_UDP_CSUM);
    if (field + 2 > m->len || l4len < (proto == PKT_IP_PROTO_TCP ? PKT_TCP_HLEN : PKT_UDP_HLEN))
        return;
    uint16_t have = pkt_get16(f + field);
    if (proto == PKT_IP_PROTO_UDP && have == 0 && pkt_eth_type(f) == PKT_ETH_P_IP)
        return; /* UDP over IPv4 without a checksum */
    uint32_t sum = pkt_chain_csum_add(ctx->pool, b, l4off, l4len, ps, &got);
    if (got != l4len || pkt_csum_fold(sum) == 0)
        return; /* it verifies (or we could not read it all) */
    uint16_t partial = (uint16_t)~pkt_csum_fold(ps);
    if (have != partial)
        return; /* not a partial checksum: bad, the receiver's to refuse */
    /* The sum included the field (the pseudo-header's sum): take it out. */
    uint64_t data = (uint64_t)sum + (uint16_t)~have;
    uint16_t v = pkt_csum_fold((uint32_t)((data & 0xffffffffu) + (data >> 32)));
    pkt_put16(f + field, v ? v : 0xffff);
    rt_count(ctx, RT_CTR_CSUM_RX_PARTIAL);
}
