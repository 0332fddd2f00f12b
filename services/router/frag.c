/* SPDX-License-Identifier: MIT */
/*
 * services/router/frag.c: IPv4 fragmentation (RFC 791 §3.2 "Fragmentation
 * and reassembly", RFC 1812 §5.2.6). Copies; it runs only for packets
 * larger than the egress MTU, which a well-configured network rarely sends.
 */
#include "frag.h"

#include <string.h>

#include "pkt.h"

/*
 * The options that travel in every fragment: those with the copied flag
 * (RFC 791 §3.1, "Options"), padded with end-of-list to a 4-byte multiple.
 * Returns their length, or -1 for a malformed option list.
 */
static int rt_copied_options(const uint8_t *ip, unsigned ihl, uint8_t *out)
{
    unsigned n = 0;
    for (unsigned i = PKT_IP_HLEN; i < ihl;) {
        uint8_t t = ip[i];
        if (t == 0)
            break;
        if (t == 1) {
            i++;
            continue;
        }
        if (i + 1 >= ihl)
            return -1;
        unsigned l = ip[i + 1];
        if (l < 2 || i + l > ihl)
            return -1;
        if (t & 0x80) {
            memcpy(out + n, ip + i, l);
            n += l;
        }
        i += l;
    }
    while (n & 3)
        out[n++] = 0;
    return (int)n;
}

unsigned rt_frag(struct rt_ctx *ctx, ipc_buf b, unsigned mtu, ipc_buf *out, unsigned max)
{
    struct ipc_pool *pool = ctx->pool;
    const struct ipc_meta *m = ipc_pool_meta(pool, b);
    const uint8_t *f = ipc_pool_data(pool, b);
    const uint8_t *ip = f + PKT_ETH_HLEN;
    unsigned ihl = pkt_ip_hlen(ip);
    uint8_t opts[40];
    int nopt = rt_copied_options(ip, ihl, opts);
    if (nopt < 0) {
        rt_drop(ctx, b, RT_CTR_DROP_BAD_OPTIONS);
        return 0;
    }
    unsigned hlen_rest = PKT_IP_HLEN + (unsigned)nopt;
    uint32_t data = pkt_get16(ip + PKT_IP_TOTLEN) - ihl;
    uint16_t frag0 = pkt_get16(ip + PKT_IP_FRAG);
    uint16_t off0 = frag0 & PKT_IP_OFFMASK;
    unsigned room = pool->frame_size - pool->headroom - PKT_ETH_HLEN;
    if (mtu > room)
        mtu = room; /* each fragment is one frame */

    unsigned nf = 0;
    uint32_t off = 0;
    while (off < data) {
        bool first = off == 0;
        unsigned hlen = first ? ihl : hlen_rest;
        if (mtu < hlen + 8 || nf == max || off0 + (off >> 3) > PKT_IP_OFFMASK)
            goto out_fail;
        uint32_t chunk = data - off;
        bool last = chunk <= mtu - hlen;
        if (!last)
            chunk = (mtu - hlen) & ~7u; /* offsets count 8-byte units */
        ipc_buf nb;
        if (ipc_pool_alloc(pool, &nb, 1) != 1)
            goto out_fail_bufs;
        out[nf++] = nb;
        struct ipc_meta *nm = ipc_pool_meta(pool, nb);
        uint8_t *nf_data = ipc_pool_data(pool, nb);
        uint8_t *nip = nf_data + PKT_ETH_HLEN;
        memcpy(nf_data, f, PKT_ETH_HLEN);
        memcpy(nip, ip, PKT_IP_HLEN);
        if (first)
            memcpy(nip + PKT_IP_HLEN, ip + PKT_IP_HLEN, ihl - PKT_IP_HLEN);
        else
            memcpy(nip + PKT_IP_HLEN, opts, (size_t)nopt);
        nip[PKT_IP_VIHL] = (uint8_t)(0x40 | hlen / 4);
        pkt_put16(nip + PKT_IP_TOTLEN, (uint16_t)(hlen + chunk));
        /* The last fragment keeps the original's MF: it may be a middle piece itself. */
        uint16_t mf = last ? (frag0 & PKT_IP_MF) : PKT_IP_MF;
        pkt_put16(nip + PKT_IP_FRAG, (uint16_t)((frag0 & PKT_IP_DF) | mf | (off0 + (off >> 3))));
        pkt_put16(nip + PKT_IP_CSUM, 0);
        pkt_put16(nip + PKT_IP_CSUM, pkt_csum(nip, hlen));
        pkt_read(pool, b, PKT_ETH_HLEN + ihl + off, nip + hlen, chunk);
        pkt_set_len(nm, PKT_ETH_HLEN + hlen + chunk);
        nm->in_port = m->in_port;
        nm->out_port = m->out_port;
        nm->mark = m->mark;
        off += chunk;
    }
    rt_count(ctx, RT_CTR_FRAG_PKTS);
    ctx->ctr->c[RT_CTR_FRAG_CREATED] += nf;
    ipc_pool_free(pool, &b, 1);
    return nf;

out_fail: /* MTU too small for the header, or too many pieces */
    ipc_pool_free(pool, out, nf);
    rt_drop(ctx, b, RT_CTR_DROP_FRAG_NEEDED);
    return 0;
out_fail_bufs:
    ipc_pool_free(pool, out, nf);
    rt_drop(ctx, b, RT_CTR_DROP_NO_BUFS);
    return 0;
}
