/* SPDX-License-Identifier: MIT */
/*
 * services/router/pkt.h: byte-level helpers the router's packet code shares:
 * big-endian field access, the Internet checksum (RFC 1071) and its
 * incremental update (RFC 1624), header offsets, and access to packets that
 * span a chain of pool frames. Everything is inline and allocation-free; it
 * runs per packet.
 */
#ifndef RT_PKT_H
#define RT_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ipc/pool.h"

#define RT_ETH_HLEN 14u
#define RT_ETH_ALEN 6u
#define RT_ETH_P_IP 0x0800u
#define RT_ETH_P_ARP 0x0806u
#define RT_ETH_P_VLAN 0x8100u
#define RT_ETH_P_QINQ 0x88a8u
#define RT_ETH_ZLEN 60u /* minimum frame without FCS: shorter IP packets arrive padded */

#define RT_IP_HLEN 20u
#define RT_IP_PROTO_ICMP 1u
#define RT_IP_DF 0x4000u
#define RT_IP_MF 0x2000u
#define RT_IP_OFFMASK 0x1fffu

/* IPv4 header field offsets (RFC 791 §3.1). */
#define RT_IP_VIHL 0
#define RT_IP_TOS 1
#define RT_IP_TOTLEN 2
#define RT_IP_ID 4
#define RT_IP_FRAG 6
#define RT_IP_TTL 8
#define RT_IP_PROTO 9
#define RT_IP_CSUM 10
#define RT_IP_SRC 12
#define RT_IP_DST 16

static inline uint16_t rt_get16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline void rt_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline uint32_t rt_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void rt_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/*
 * One's-complement sum of @len bytes as big-endian 16-bit words, added to
 * @sum without folding. @odd says whether the bytes start at an odd offset of
 * the checksummed message (a frame boundary inside a chain), in which case
 * the first byte is the low half of a word.
 */
static inline uint32_t rt_csum_add(uint32_t sum, const uint8_t *p, size_t len, bool odd)
{
    uint64_t s = sum;
    if (odd && len > 0) {
        s += p[0];
        p++;
        len--;
    }
    while (len >= 2) {
        s += (uint32_t)p[0] << 8 | p[1];
        p += 2;
        len -= 2;
    }
    if (len)
        s += (uint32_t)p[0] << 8;
    while (s >> 32)
        s = (s & 0xffffffffu) + (s >> 32);
    return (uint32_t)s;
}

/* Fold a running sum and complement it: the value that goes in the field. */
static inline uint16_t rt_csum_fold(uint32_t sum)
{
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static inline uint16_t rt_csum(const uint8_t *p, size_t len)
{
    return rt_csum_fold(rt_csum_add(0, p, len, false));
}

/*
 * RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), for one 16-bit word changing from
 * @old to @new. Unlike eqn. 2 (RFC 1141's HC - ~m - m') it never produces
 * 0x0000 where a full recomputation gives 0xFFFF, or the reverse (§3).
 */
static inline uint16_t rt_csum_update16(uint16_t hc, uint16_t old, uint16_t new_)
{
    uint32_t s = (uint16_t)~hc;
    s += (uint16_t)~old;
    s += new_;
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

/* The whole packet's length: pkt_len is only meaningful on a chain's head. */
static inline uint32_t rt_pkt_len(const struct ipc_meta *m)
{
    return m->next == IPC_BUF_NONE ? m->len : m->pkt_len;
}

/* Set a single-frame packet's length, keeping the pool's pkt_len rule. */
static inline void rt_pkt_set_len(struct ipc_meta *m, uint32_t len)
{
    m->len = (uint16_t)len;
    m->pkt_len = len;
}

/*
 * Copy @len bytes at packet offset @off of the chain @b into @dst. Returns
 * the bytes copied (fewer when the chain is shorter).
 */
static inline uint32_t rt_pkt_read(const struct ipc_pool *pool, ipc_buf b, uint32_t off, void *dst, uint32_t len)
{
    uint8_t *d = dst;
    uint32_t done = 0;
    for (unsigned k = 0; b != IPC_BUF_NONE && k < IPC_CHAIN_MAX && done < len; k++) {
        const struct ipc_meta *m = ipc_pool_meta(pool, b);
        if (off >= m->len) {
            off -= m->len;
        } else {
            uint32_t n = m->len - off;
            if (n > len - done)
                n = len - done;
            memcpy(d + done, ipc_pool_data(pool, b) + off, n);
            done += n;
            off = 0;
        }
        b = m->next;
    }
    return done;
}

/* Sum @len bytes from packet offset @off across the chain; see rt_csum_add. */
static inline uint32_t rt_pkt_csum_add(const struct ipc_pool *pool, ipc_buf b, uint32_t off, uint32_t len,
                                       uint32_t sum, uint32_t *got)
{
    uint32_t done = 0;
    for (unsigned k = 0; b != IPC_BUF_NONE && k < IPC_CHAIN_MAX && done < len; k++) {
        const struct ipc_meta *m = ipc_pool_meta(pool, b);
        if (off >= m->len) {
            off -= m->len;
        } else {
            uint32_t n = m->len - off;
            if (n > len - done)
                n = len - done;
            sum = rt_csum_add(sum, ipc_pool_data(pool, b) + off, n, done & 1);
            done += n;
            off = 0;
        }
        b = m->next;
    }
    *got = done;
    return sum;
}

static inline bool rt_mac_is_group(const uint8_t *mac)
{
    return mac[0] & 1; /* broadcast and multicast: the I/G bit */
}

#endif
