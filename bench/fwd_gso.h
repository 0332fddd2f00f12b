/* SPDX-License-Identifier: MIT */
/*
 * bench/fwd_gso.h: the least a forwarder must do to a TSO sender's frames
 * that reach it through generic XDP (bench/xskfwd.c -s; docs/drivers.md,
 * "Multi-buffer frames"): they come whole, up to 64 KB, with the TCP
 * checksum still partial (the pseudo-header's sum, what a stack with
 * checksum offload leaves) and no segment size, and an AF_XDP socket sends
 * one MTU-sized frame per packet with its checksums as they are. So a frame
 * longer than the MTU is cut into MTU-sized TCP segments with complete
 * checksums, and a smaller TCP or UDP frame whose checksum field holds just
 * the pseudo-header's sum gets it completed: what services/router/gso.c
 * does for ringrouter, without its pool, chains of metadata or IPv6.
 *
 * Sums are one's-complement sums of native-order words (RFC 1071: the
 * checksum comes out right in either byte order if it is stored the same
 * way), 32 bits a step into a 64-bit accumulator.
 */
#ifndef BENCH_FWD_GSO_H
#define BENCH_FWD_GSO_H

#include <stdint.h>
#include <string.h>

#include "fwd_frame.h"

#define FWD_IP_PROTO_TCP 6
#define FWD_IP_PROTO_UDP 17
#define FWD_TCP_FIN 0x01
#define FWD_TCP_PSH 0x08
#define FWD_TCP_CWR 0x80
#define FWD_HDR_MAX (FWD_ETH_HLEN + 60 + 60)

static inline uint64_t fwd_sum(uint64_t sum, const uint8_t *p, uint32_t len)
{
    for (; len >= 4; p += 4, len -= 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        sum += w;
    }
    if (len) {
        uint8_t t[4] = {0};
        memcpy(t, p, len);
        uint32_t w;
        memcpy(&w, t, 4);
        sum += w;
    }
    return sum;
}

/* The 16-bit one's-complement sum of @sum (not complemented). */
static inline uint16_t fwd_fold(uint64_t sum)
{
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffffu) + (sum >> 16);
    sum = (sum & 0xffffu) + (sum >> 16);
    return (uint16_t)sum;
}

static inline uint16_t fwd_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void fwd_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* The pseudo-header's sum (RFC 793 §3.1) of IPv4 header @ip for @l4len bytes. */
static inline uint64_t fwd_pseudo(const uint8_t *ip, uint32_t l4len)
{
    uint8_t ph[12];
    memcpy(ph, ip + 12, 8);
    ph[8] = 0;
    ph[9] = ip[9];
    fwd_put16(ph + 10, (uint16_t)l4len);
    return fwd_sum(0, ph, sizeof ph);
}

/*
 * Single frame @eth of @len bytes: complete a partial TCP or UDP checksum
 * in place. A checksum that verifies is kept; a field that holds just the
 * pseudo-header's sum is completed; anything else is left for the receiver
 * to refuse (as services/router/gso.c's rt_csum_rx_fix).
 */
static inline void fwd_csum_fix(uint8_t *eth, uint32_t len)
{
    uint8_t *ip = eth + FWD_ETH_HLEN;
    if (len < FWD_ETH_HLEN + 20 || eth[12] != 0x08 || eth[13] != 0x00 || (ip[0] >> 4) != 4)
        return;
    uint32_t ihl = (ip[0] & 15u) * 4u, tot = fwd_get16(ip + 2);
    if (ihl < 20 || tot < ihl || FWD_ETH_HLEN + tot > len || (fwd_get16(ip + 6) & 0x3fff))
        return; /* short, or a fragment */
    uint32_t l4len = tot - ihl, field;
    if (ip[9] == FWD_IP_PROTO_TCP && l4len >= 20)
        field = 16;
    else if (ip[9] == FWD_IP_PROTO_UDP && l4len >= 8)
        field = 6;
    else
        return;
    uint8_t *l4 = ip + ihl;
    uint16_t have;
    memcpy(&have, l4 + field, 2);
    if (ip[9] == FWD_IP_PROTO_UDP && have == 0)
        return; /* UDP without a checksum */
    uint64_t ps = fwd_pseudo(ip, l4len), sum = fwd_sum(ps, l4, l4len);
    if (fwd_fold(sum) == 0xffff || have != fwd_fold(ps))
        return; /* it verifies, or it is not a partial checksum */
    uint16_t v = (uint16_t)~fwd_fold(sum + (uint16_t)~have); /* the field's value taken back out */
    if (v == 0)
        v = 0xffff;
    memcpy(l4 + field, &v, 2);
}

/* A reader over one multi-buffer frame's pieces, front to back. */
struct fwd_cursor {
    uint8_t *const *p;
    const uint32_t *len;
    uint32_t n, i, off;
};

static inline uint32_t fwd_read(struct fwd_cursor *c, uint8_t *dst, uint32_t len)
{
    uint32_t done = 0;
    while (done < len && c->i < c->n) {
        uint32_t k = c->len[c->i] - c->off;
        if (k > len - done)
            k = len - done;
        memcpy(dst + done, c->p[c->i] + c->off, k);
        done += k;
        c->off += k;
        if (c->off == c->len[c->i]) {
            c->i++;
            c->off = 0;
        }
    }
    return done;
}

/*
 * The TCP/IPv4 frame in pieces @p/@len (@n of them; the headers in the
 * first) as segments of at most @mtu bytes of IP: their number, 0 when it
 * cannot be cut (not TCP over IPv4, headers not in the first piece, a
 * fragment, lengths that do not add up), with *@hlen its header length and
 * *@mss the segment's payload.
 */
static inline uint32_t fwd_gso_plan(uint8_t *const *p, const uint32_t *len, uint32_t n, uint32_t mtu, uint32_t *hlen,
                                    uint32_t *mss)
{
    const uint8_t *eth = p[0], *ip = eth + FWD_ETH_HLEN;
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += len[i];
    if (len[0] < FWD_ETH_HLEN + 40 || eth[12] != 0x08 || eth[13] != 0x00 || (ip[0] >> 4) != 4 ||
        ip[9] != FWD_IP_PROTO_TCP || (fwd_get16(ip + 6) & 0x3fff))
        return 0;
    uint32_t ihl = (ip[0] & 15u) * 4u;
    if (ihl < 20 || FWD_ETH_HLEN + ihl + 20 > len[0])
        return 0;
    uint32_t thl = (ip[ihl + 12] >> 4) * 4u;
    *hlen = FWD_ETH_HLEN + ihl + thl;
    if (thl < 20 || *hlen > len[0] || *hlen > FWD_HDR_MAX || total <= *hlen ||
        fwd_get16(ip + 2) != total - FWD_ETH_HLEN || mtu <= ihl + thl)
        return 0;
    *mss = mtu - ihl - thl;
    return (total - *hlen + *mss - 1) / *mss;
}

/*
 * Segment @k of @nseg of the frame planned by fwd_gso_plan into @f: the
 * headers @hdr (@hlen bytes, already rewritten for the hop) and the next
 * payload bytes from @c, with its IP length, ID and checksum, TCP sequence,
 * flags and checksum set (FIN and PSH on the last only, CWR on the first
 * only). Returns the frame's length.
 */
static inline uint32_t fwd_gso_seg(uint8_t *f, const uint8_t *hdr, uint32_t hlen, uint32_t mss, uint32_t k,
                                   uint32_t nseg, uint32_t payload, struct fwd_cursor *c)
{
    uint32_t seg = k + 1 < nseg ? mss : payload - k * mss;
    memcpy(f, hdr, hlen);
    fwd_read(c, f + hlen, seg);
    uint8_t *ip = f + FWD_ETH_HLEN;
    uint32_t ihl = (ip[0] & 15u) * 4u, l4len = hlen - FWD_ETH_HLEN - ihl + seg;
    uint8_t *th = ip + ihl;
    fwd_put16(ip + 2, (uint16_t)(ihl + l4len));
    fwd_put16(ip + 4, (uint16_t)(fwd_get16(hdr + FWD_ETH_HLEN + 4) + k));
    memset(ip + 10, 0, 2);
    uint16_t v = (uint16_t)~fwd_fold(fwd_sum(0, ip, ihl));
    memcpy(ip + 10, &v, 2);
    uint32_t seq = (uint32_t)th[4] << 24 | (uint32_t)th[5] << 16 | (uint32_t)th[6] << 8 | th[7];
    seq += k * mss;
    th[4] = (uint8_t)(seq >> 24);
    th[5] = (uint8_t)(seq >> 16);
    th[6] = (uint8_t)(seq >> 8);
    th[7] = (uint8_t)seq;
    if (k + 1 < nseg)
        th[13] &= (uint8_t)~(FWD_TCP_FIN | FWD_TCP_PSH);
    if (k > 0)
        th[13] &= (uint8_t)~FWD_TCP_CWR;
    memset(th + 16, 0, 2);
    v = (uint16_t)~fwd_fold(fwd_sum(fwd_pseudo(ip, l4len), th, l4len));
    memcpy(th + 16, &v, 2);
    return FWD_ETH_HLEN + ihl + l4len;
}

#endif
