/* SPDX-License-Identifier: MIT */
/*
 * services/router/ipv6.h: the router's IPv6 path (RFC 8200, RFC 4291):
 * receive validation with one counter per drop reason, the bounded walk of
 * extension headers to the upper layer, hop limit, the IPv6 FIB lookup, the
 * egress MTU (never fragmenting: Packet Too Big instead), the neighbour
 * (Neighbor Discovery, nd.c) and the MAC rewrite. Packets to the router's
 * own addresses go to ICMPv6 (icmp6.c) or ND. What IPv6 does not do yet is
 * in docs/ipv6.md.
 */
#ifndef RT_IPV6_H
#define RT_IPV6_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ipc/pkt.h"
#include "rt.h"

/* The extension-header walk's bound: at most this many headers, in at most
 * this many bytes, all of them in the packet's first frame. Beyond it the
 * packet drops as drop6_extension_headers: a chain no real traffic has is
 * a way to make every router on the path work hard. */
#define RT_IP6_EXT_MAX 8u
#define RT_IP6_EXT_BYTES 512u

#define RT_IP6_EXT_HBH 0u
#define RT_IP6_EXT_ROUTING 43u
#define RT_IP6_EXT_FRAG 44u
#define RT_IP6_EXT_AH 51u
#define RT_IP6_NO_NEXT 59u
#define RT_IP6_EXT_DEST 60u

/* What the walk found. */
struct rt_ip6_l4 {
    uint8_t proto;       /* the upper layer's protocol (or RT_IP6_NO_NEXT) */
    bool later_fragment; /* a fragment past the first: no upper-layer header here */
    uint16_t off;        /* its offset from the IPv6 header */
};

enum rt_ip6_walk_rc { RT_IP6_WALK_OK, RT_IP6_WALK_BAD, RT_IP6_WALK_RH0 };

/**
 * Walk the extension headers of the IPv6 packet @ip6 (@avail bytes of it in
 * hand, from the fixed header on) to the upper layer: *@l4 is filled on
 * RT_IP6_WALK_OK. Hop-by-hop options are stepped over, not processed.
 * RT_IP6_WALK_RH0: a routing header of type 0 (RFC 5095: dropped);
 * RT_IP6_WALK_BAD: truncated, or past the bound above.
 */
static inline enum rt_ip6_walk_rc rt_ip6_walk(const uint8_t *ip6, uint32_t avail, struct rt_ip6_l4 *l4);

/** rt_ip6_walk for a packet whose first next header is an extension header. */
enum rt_ip6_walk_rc rt_ip6_walk_ext(const uint8_t *ip6, uint32_t avail, struct rt_ip6_l4 *l4);

static inline bool rt_ip6_is_ext(uint8_t nxt)
{
    return nxt == RT_IP6_EXT_HBH || nxt == RT_IP6_EXT_ROUTING || nxt == RT_IP6_EXT_DEST ||
           nxt == RT_IP6_EXT_FRAG || nxt == RT_IP6_EXT_AH;
}

/* Most packets have none: their upper layer follows the fixed header,
 * without a call. */
static inline enum rt_ip6_walk_rc rt_ip6_walk(const uint8_t *ip6, uint32_t avail, struct rt_ip6_l4 *l4)
{
    uint8_t nxt = ip6[PKT_IP6_NXT];
    if (ipc_unlikely(rt_ip6_is_ext(nxt)))
        return rt_ip6_walk_ext(ip6, avail, l4);
    l4->proto = nxt;
    l4->later_fragment = false;
    l4->off = PKT_IP6_HLEN;
    return RT_IP6_WALK_OK;
}

static inline bool rt_ip6_is_mcast(const uint8_t *a)
{
    return a[0] == 0xff;
}

static inline bool rt_ip6_is_ll(const uint8_t *a)
{
    return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

/* The address's two halves as they lie in memory (compared, never read as numbers). */
static inline uint64_t rt_ip6_w(const uint8_t *a, unsigned half)
{
    uint64_t w;
    memcpy(&w, a + 8 * half, 8);
    return w;
}

/* Are the first 64 bits 0 (::/64, where :: and ::1 are)? */
static inline bool rt_ip6_hi_zero(const uint8_t *a)
{
    return rt_ip6_w(a, 0) == 0;
}

static inline bool rt_ip6_eq(const uint8_t *a, const uint8_t *b)
{
    return ((rt_ip6_w(a, 0) ^ rt_ip6_w(b, 0)) | (rt_ip6_w(a, 1) ^ rt_ip6_w(b, 1))) == 0;
}

static inline bool rt_ip6_is_unspec(const uint8_t *a)
{
    return (rt_ip6_w(a, 0) | rt_ip6_w(a, 1)) == 0;
}

static inline bool rt_ip6_is_loopback(const uint8_t *a)
{
    static const uint8_t lo[16] = {[15] = 1};
    return rt_ip6_eq(a, lo);
}

/* The solicited-node multicast address of @a (RFC 4291 §2.7.1): ff02::1:ffXX:XXXX. */
static inline void rt_ip6_snma(const uint8_t *a, uint8_t out[16])
{
    static const uint8_t pfx[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
    memcpy(out, pfx, 13);
    memcpy(out + 13, a + 13, 3);
}

/* The Ethernet address of IPv6 multicast @a (RFC 2464 §7): 33:33 and its last 32 bits. */
static inline void rt_ip6_mcast_mac(const uint8_t *a, uint8_t mac[6])
{
    mac[0] = 0x33;
    mac[1] = 0x33;
    memcpy(mac + 2, a + 12, 4);
}

/** Index of @a among port @p's IPv6 addresses, or -1. */
static inline int rt_ip6_port_addr(const struct rt_port *p, const uint8_t *a)
{
    for (unsigned k = 0; k < p->n6; k++)
        if (rt_ip6_eq(p->a6[k].a, a))
            return (int)k;
    return -1;
}

/**
 * Is @a on port @p's link: link-local, or inside one of its prefixes? The
 * neighbour table is one for all ports, keyed by address: a solicitation
 * that names as its source a host of another port's network must not move
 * that host's entry here (ND spoofing across links).
 */
static inline bool rt_ip6_on_link(const struct rt_port *p, const uint8_t *a)
{
    if (rt_ip6_is_ll(a))
        return true;
    for (unsigned k = 0; k < p->n6; k++) {
        unsigned plen = p->a6[k].plen, full = plen / 8, rest = plen % 8;
        if (plen > 128 || memcmp(p->a6[k].a, a, full) != 0)
            continue;
        if (!rest || ((p->a6[k].a[full] ^ a[full]) & (uint8_t)(0xff << (8 - rest))) == 0)
            return true;
    }
    return false;
}

/**
 * Is @a, arriving on port @in, one of the router's addresses? A link-local
 * one only on its own port (its scope); a global one on any port.
 */
bool rt_ip6_is_local(const struct rt_ctx *ctx, uint16_t in, const uint8_t *a);

/* One bit of 64 for address @a: the router's addresses' bits, set in a
 * mask (rt_ip6_local_mask), say "certainly not ours" of most others
 * without a comparison with each address of each port. */
static inline unsigned rt_ip6_local_bit(const uint8_t *a)
{
    uint64_t w = rt_ip6_w(a, 0) ^ rt_ip6_w(a, 1);
    return (((uint32_t)w ^ (uint32_t)(w >> 32)) * 0x9e3779b1u) >> 26;
}

/** The bits of all the addresses of all ports of @ctx: rt_ip6_is_local(a)
 *  is false when bit rt_ip6_local_bit(a) is clear in it. */
uint64_t rt_ip6_local_mask(const struct rt_ctx *ctx);

/**
 * The source the router uses on port @port towards @dst: a global address
 * of the port when @dst is global and the port has one (the first on
 * @dst's network if any), else the port's link-local address. NULL when
 * IPv6 is off on the port.
 */
const uint8_t *rt_ip6_src_for(const struct rt_ctx *ctx, uint16_t port, const uint8_t *dst);

/* The pseudo-header's sum (RFC 8200 §8.1) for an upper layer of @len bytes. */
static inline uint32_t rt_ip6_pseudo_sum(const uint8_t *src, const uint8_t *dst, uint32_t len, uint8_t nxt)
{
    uint8_t tail[8] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len, 0, 0, 0, nxt};
    uint32_t s = pkt_csum_add(0, src, 16, false);
    s = pkt_csum_add(s, dst, 16, false);
    return pkt_csum_add(s, tail, 8, false);
}

/**
 * Last step of forwarding IPv6 @b (meta out_port set): hop limit (no
 * header checksum in IPv6), MACs (source the egress port's, destination
 * @dmac), onto @tx.
 */
void rt_fwd6_finish(struct rt_ctx *ctx, ipc_buf b, const uint8_t *dmac, struct rt_burst *tx);

/**
 * An IPv6 frame @b arrived (ethertype 0x86DD, meta in_port checked, the
 * port known): validate it and forward it, answer it, hold it for ND, or
 * drop and count it. Consumes @b. Needs ctx->fib6 and ctx->neigh6 and the
 * caller's FIB read section, as rt_input_burst.
 */
void rt_ipv6_input(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx);

/**
 * rt_ipv6_input on each of @bufs[0..n) (the IPv6 frames of a burst, in
 * their order), with one FIB lookup for all those to be forwarded
 * (fib6_lookup_burst) between the checks before the route and the rest.
 * Packets to the router, errors and drops are handled in the first pass,
 * before the forwarded ones of the same call go out: order is kept within
 * a flow, not across flows.
 */
void rt_ipv6_burst(struct rt_ctx *ctx, const ipc_buf *bufs, uint32_t n, uint64_t now, struct rt_burst *tx);

#endif
