/* SPDX-License-Identifier: MIT */
/*
 * ipc/pkt.h: packet headers over pool buffers, the one set of accessors
 * every process that reads or writes headers uses (the router, the shaper):
 * big-endian field access; the Ethernet, IPv4, TCP and UDP layouts as named
 * offsets and a few field accessors; the Internet checksum (RFC 1071) and
 * its incremental update (RFC 1624); and lengths, reads and sums of packets
 * that span a chain of frames. Everything is inline and allocation-free; it
 * runs per packet. Accessors take a pointer to the start of their header and
 * read within its fixed part: the caller checks the frame's length first.
 */
#ifndef IPC_PKT_H
#define IPC_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pool.h"

/* Ethernet II. */
#define PKT_ETH_ALEN 6u
#define PKT_ETH_DST 0u
#define PKT_ETH_SRC 6u
#define PKT_ETH_TYPE 12u
#define PKT_ETH_HLEN 14u
#define PKT_ETH_ZLEN 60u  /* minimum frame without FCS: shorter IP packets arrive padded */
#define PKT_VLAN_HLEN 4u  /* an 802.1Q/802.1ad tag: TCI, then the next ethertype */
#define PKT_ETH_P_IP 0x0800u
#define PKT_ETH_P_ARP 0x0806u
#define PKT_ETH_P_VLAN 0x8100u
#define PKT_ETH_P_QINQ 0x88a8u

/* IPv4 (RFC 791 §3.1): field offsets, flags, protocols. */
#define PKT_IP_VIHL 0u
#define PKT_IP_TOS 1u
#define PKT_IP_TOTLEN 2u
#define PKT_IP_ID 4u
#define PKT_IP_FRAG 6u
#define PKT_IP_TTL 8u
#define PKT_IP_PROTO 9u
#define PKT_IP_CSUM 10u
#define PKT_IP_SRC 12u
#define PKT_IP_DST 16u
#define PKT_IP_HLEN 20u     /* without options */
#define PKT_IP_HLEN_MAX 60u /* IHL 15 */
#define PKT_IP_VIHL_PLAIN 0x45u /* version 4, no options */
#define PKT_IP_DF 0x4000u
#define PKT_IP_MF 0x2000u
#define PKT_IP_OFFMASK 0x1fffu
#define PKT_IP_ECN_MASK 0x03u /* the TOS byte's low bits (RFC 3168) */
#define PKT_IP_ECN_CE 0x03u
#define PKT_IP_PROTO_ICMP 1u
#define PKT_IP_PROTO_TCP 6u
#define PKT_IP_PROTO_UDP 17u

/* IPv6 (RFC 8200 §3): the fixed header's fields, and the protocols the
 * router itself speaks over it. Addresses are 16 bytes in network order. */
#define PKT_ETH_P_IPV6 0x86ddu
#define PKT_IP6_VTC 0u  /* version, traffic class, flow label */
#define PKT_IP6_PLEN 4u /* payload length: what follows the fixed header */
#define PKT_IP6_NXT 6u  /* next header */
#define PKT_IP6_HLIM 7u /* hop limit */
#define PKT_IP6_SRC 8u
#define PKT_IP6_DST 24u
#define PKT_IP6_HLEN 40u
#define PKT_IP_PROTO_ICMPV6 58u

/* TCP (RFC 793 §3.1) and UDP (RFC 768): the ports are where both have them. */
#define PKT_L4_SPORT 0u
#define PKT_L4_DPORT 2u
#define PKT_TCP_SEQ 4u
#define PKT_TCP_DOFF 12u /* data offset, in the high nibble */
#define PKT_TCP_FLAGS 13u
#define PKT_TCP_CSUM 16u
#define PKT_TCP_HLEN 20u /* without options */
#define PKT_TCP_FIN 0x01u
#define PKT_TCP_PSH 0x08u
#define PKT_TCP_CWR 0x80u
#define PKT_UDP_LEN 4u
#define PKT_UDP_CSUM 6u
#define PKT_UDP_HLEN 8u

/* ---- big-endian fields ---- */

static inline uint16_t pkt_get16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline void pkt_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline uint32_t pkt_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void pkt_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* ---- headers ---- */

static inline uint16_t pkt_eth_type(const uint8_t *eth)
{
    return pkt_get16(eth + PKT_ETH_TYPE);
}

static inline bool pkt_mac_is_group(const uint8_t *mac)
{
    return mac[0] & 1; /* broadcast and multicast: the I/G bit */
}

static inline unsigned pkt_ip_version(const uint8_t *ip)
{
    return ip[PKT_IP_VIHL] >> 4;
}

/** The IPv4 header's length in bytes (IHL * 4). */
static inline unsigned pkt_ip_hlen(const uint8_t *ip)
{
    return (ip[PKT_IP_VIHL] & 15u) * 4;
}

static inline uint8_t pkt_ip_dscp(const uint8_t *ip)
{
    return ip[PKT_IP_TOS] >> 2;
}

/** A fragment of a larger datagram: more fragments follow, or not the first. */
static inline bool pkt_ip_is_fragment(const uint8_t *ip)
{
    return pkt_get16(ip + PKT_IP_FRAG) & (PKT_IP_MF | PKT_IP_OFFMASK);
}

/** Not the first fragment: no L4 header here. */
static inline bool pkt_ip_is_later_fragment(const uint8_t *ip)
{
    return pkt_get16(ip + PKT_IP_FRAG) & PKT_IP_OFFMASK;
}

static inline bool pkt_ip_has_ports(const uint8_t *ip)
{
    return ip[PKT_IP_PROTO] == PKT_IP_PROTO_TCP || ip[PKT_IP_PROTO] == PKT_IP_PROTO_UDP;
}

/** The TCP header's length in bytes (data offset * 4). */
static inline unsigned pkt_tcp_hlen(const uint8_t *tcp)
{
    return (tcp[PKT_TCP_DOFF] >> 4) * 4u;
}

/* ---- the Internet checksum ---- */

/*
 * One's-complement sum of @len bytes as big-endian 16-bit words, added to
 * @sum without folding. @odd says whether the bytes start at an odd offset of
 * the checksummed message (a frame boundary inside a chain), in which case
 * the first byte is the low half of a word.
 */
static inline uint32_t pkt_csum_add(uint32_t sum, const uint8_t *p, size_t len, bool odd)
{
    uint64_t s = sum;
    if (odd && len > 0) {
        s += p[0];
        p++;
        len--;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Eight bytes a step (a segment's payload is summed per packet): the
     * one's-complement sum does not depend on byte order (RFC 1071 §2), so
     * the little-endian words' sum, folded to 16 bits and byte-swapped, is
     * the big-endian one. */
    if (len >= 16) {
        uint64_t acc = 0;
        while (len >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            acc += (w & 0xffffffffu) + (w >> 32);
            p += 8;
            len -= 8;
        }
        while (acc >> 16)
            acc = (acc & 0xffff) + (acc >> 16);
        s += (acc >> 8 | acc << 8) & 0xffff;
    }
#endif
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
static inline uint16_t pkt_csum_fold(uint32_t sum)
{
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static inline uint16_t pkt_csum(const uint8_t *p, size_t len)
{
    return pkt_csum_fold(pkt_csum_add(0, p, len, false));
}

/*
 * RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), for one 16-bit word changing from
 * @old to @new. Unlike eqn. 2 (RFC 1141's HC - ~m - m') it never produces
 * 0x0000 where a full recomputation gives 0xFFFF, or the reverse (§3).
 */
static inline uint16_t pkt_csum_update16(uint16_t hc, uint16_t old, uint16_t new_)
{
    uint32_t s = (uint16_t)~hc;
    s += (uint16_t)~old;
    s += new_;
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

/* ---- packets in chains of frames ---- */

/* The whole packet's length: pkt_len is only meaningful on a chain's head. */
static inline uint32_t pkt_total_len(const struct ipc_meta *m)
{
    return m->next == IPC_BUF_NONE ? m->len : m->pkt_len;
}

/* Set a single-frame packet's length, keeping the pool's pkt_len rule. */
static inline void pkt_set_len(struct ipc_meta *m, uint32_t len)
{
    m->len = (uint16_t)len;
    m->pkt_len = len;
}

/*
 * Visit @len bytes from packet offset @off of the chain @b, one frame's part
 * at a time: @fn(@arg, bytes, n, done) with done the bytes visited before.
 * Returns the bytes visited (fewer when the chain is shorter). Inline with a
 * constant @fn, the call folds away.
 */
static inline uint32_t pkt_chain_walk(const struct ipc_pool *pool, ipc_buf b, uint32_t off, uint32_t len,
                                      void (*fn)(void *arg, const uint8_t *p, uint32_t n, uint32_t done), void *arg)
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
            fn(arg, ipc_pool_data(pool, b) + off, n, done);
            done += n;
            off = 0;
        }
        b = m->next;
    }
    return done;
}

static inline void pkt_chain_copy_part(void *dst, const uint8_t *p, uint32_t n, uint32_t done)
{
    memcpy((uint8_t *)dst + done, p, n);
}

/* Copy @len bytes at packet offset @off of the chain @b into @dst; see pkt_chain_walk. */
static inline uint32_t pkt_read(const struct ipc_pool *pool, ipc_buf b, uint32_t off, void *dst, uint32_t len)
{
    return pkt_chain_walk(pool, b, off, len, pkt_chain_copy_part, dst);
}

static inline void pkt_chain_sum_part(void *sum, const uint8_t *p, uint32_t n, uint32_t done)
{
    *(uint32_t *)sum = pkt_csum_add(*(uint32_t *)sum, p, n, done & 1);
}

/* Sum @len bytes from packet offset @off across the chain (see pkt_csum_add); *@got: bytes summed. */
static inline uint32_t pkt_chain_csum_add(const struct ipc_pool *pool, ipc_buf b, uint32_t off, uint32_t len,
                                          uint32_t sum, uint32_t *got)
{
    *got = pkt_chain_walk(pool, b, off, len, pkt_chain_sum_part, &sum);
    return sum;
}

#endif
