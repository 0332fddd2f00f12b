/* SPDX-License-Identifier: MIT */
/*
 * services/router/ipv4.h: the router's per-packet path: receive validation
 * (RFC 1812 §5.2.2, §5.3.7), forwarding (TTL, RFC 1624 checksum update, MAC
 * rewrite, egress port), and the dispatch of each frame of a burst to ARP,
 * local delivery, ICMP errors, fragmentation or the neighbour queue. Route
 * and neighbour lookups are cached across a burst.
 */
#ifndef RT_IPV4_H
#define RT_IPV4_H

#include <stdbool.h>
#include <stdint.h>

#include "pkt.h"
#include "rt.h"

/* What validation decided about a frame. */
enum rt_verdict {
    RT_V_FORWARD,
    RT_V_LOCAL, /* one of the router's addresses */
    RT_V_ARP,
    RT_V_IPV6, /* ethertype 0x86DD on a router with IPv6 (ctx->fib6): ipv6.c */
    RT_V_DROP, /* *why says which counter */
    RT_V_PUNT, /* link-local multicast on a port with a host-side interface (punt.h) */
};

/**
 * Validate the Ethernet frame @b received on meta in_port: ethertype, the
 * IPv4 header (version, IHL, checksum, total length against the frame, whose
 * Ethernet padding is trimmed from meta len), link-layer and IP source and
 * destination classes. Returns the verdict; for RT_V_DROP, *why.
 */
enum rt_verdict rt_ipv4_validate(struct rt_ctx *ctx, ipc_buf b, enum rt_ctr *why);

/** Decrement TTL and patch the header checksum (RFC 1624 eqn. 3). */
static inline void rt_ip_ttl_dec(uint8_t *ip)
{
    uint16_t old = pkt_get16(ip + PKT_IP_TTL);
    ip[PKT_IP_TTL]--;
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum_update16(pkt_get16(ip + PKT_IP_CSUM), old, pkt_get16(ip + PKT_IP_TTL)));
}

/**
 * Last step of forwarding @b (meta out_port set): TTL, MAC rewrite (source
 * the egress port's MAC, destination @dmac), onto @tx.
 */
void rt_fwd_finish(struct rt_ctx *ctx, ipc_buf b, const uint8_t *dmac, struct rt_burst *tx);

/**
 * Process a burst of received frames @bufs[0..n) (owned by the caller, each
 * with meta in_port). Every packet ends up on @tx (forwarded, ARP and ICMP
 * replies, ICMP errors, fragments, ARP requests, packets released by ARP
 * replies), held in a neighbour's queue, or freed and counted. The caller
 * holds the FIB read section (fib_read_begin on ctx->fib) from before the
 * call until its batch is done with everything the call emitted; this
 * function neither opens nor closes one (tables/fib.h).
 */
void rt_input_burst(struct rt_ctx *ctx, const ipc_buf *bufs, uint32_t n, uint64_t now, struct rt_burst *tx);

#endif
