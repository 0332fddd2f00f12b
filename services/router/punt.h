/* SPDX-License-Identifier: MIT */
/*
 * services/router/punt.h: control traffic (docs/routing.md, "Control
 * traffic"). What reaches one of the router's addresses and the router does
 * not answer itself (it answers ARP, Neighbor Discovery and echo requests)
 * goes, unchanged and zero-copy, to the port's host-side interface in the
 * control namespace, where a routing daemon listens: TCP and UDP (BGP,
 * BFD), other protocols (OSPF's 89), link-local multicast (224.0.0.0/24,
 * ff02::/16 beyond ND), and the ARP replies and Neighbor Advertisements the
 * kernel there needs to resolve its own neighbours (the router learns from
 * them first). What that interface sends leaves by its port as it is.
 *
 * Without a host-side interface, TCP to us gets a reset and UDP a port
 * unreachable, as from Linux with nothing listening, under the limit of
 * the router's ICMP errors.
 */
#ifndef RT_PUNT_H
#define RT_PUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "ipv6.h"
#include "rt.h"

/** Does port @p have a host-side interface (and is it not one)? */
static inline bool rt_punt_on(const struct rt_ctx *ctx, uint16_t p)
{
    return p < RT_MAX_PORTS && ctx->port[p].cp != RT_CP_NONE && !ctx->port[p].cp_host;
}

/**
 * @b, received on a port with a host-side interface, to that interface:
 * true, @b on @tx. False (nothing done) for a port without one.
 */
bool rt_punt_host(struct rt_ctx *ctx, ipc_buf b, struct rt_burst *tx);

/**
 * An IPv4 packet @b (validated) to one of our addresses that the router
 * does not answer: to the host side, else a reset or port unreachable
 * (TCP, UDP), and dropped as drop_local_other. Consumes @b.
 */
void rt_punt4(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx);

/** The same for IPv6 @b, whose upper layer @l4 says (drop6_local_other). */
void rt_punt6(struct rt_ctx *ctx, ipc_buf b, const struct rt_ip6_l4 *l4, uint64_t now, struct rt_burst *tx);

/**
 * A burst @bufs[0..n) from host-side port @host's ring: each out by its
 * pair @port as it is (counted on both ports and in punt_from_host). The
 * ring says where they came from, never a frame's in_port. Consumes them.
 */
void rt_punt_from_host(struct rt_ctx *ctx, const ipc_buf *bufs, uint32_t n, uint16_t host, uint16_t port,
                       struct rt_burst *tx);

#endif
