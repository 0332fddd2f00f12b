/* SPDX-License-Identifier: MIT */
/*
 * services/router/nd.h: Neighbor Discovery (RFC 4861) for the router's
 * own use: answering Neighbor Solicitations for its addresses (unicast or
 * to their solicited-node multicast group), learning from solicitations'
 * source link-layer options and from advertisements, resolving next hops
 * by solicitation with the same bounded pending queues as ARP (per-port
 * share of cfg.pending_max, counted together with ARP's), and Neighbor
 * Unreachability Detection: REACHABLE, STALE, DELAY, PROBE. The table is
 * tables/neigh6.h; time is passed in, so the tests drive a virtual clock.
 * Not done (docs/ipv6.md): Router Advertisements, DAD of the router's own
 * addresses, Redirects.
 */
#ifndef RT_ND_H
#define RT_ND_H

#include "rt.h"
#include "tables/neigh6.h"

#define RT_ND_NS_LEN 24u  /* type .. target address */
#define RT_ND_OPT_SLLA 1u /* source link-layer address */
#define RT_ND_OPT_TLLA 2u /* target link-layer address */
#define RT_ND_NA_R 0x80u  /* router */
#define RT_ND_NA_S 0x40u  /* solicited */
#define RT_ND_NA_O 0x20u  /* override */
#define RT_ND_HLIM 255u   /* ND messages are sent, and accepted, only with this (RFC 4861 §7.1) */

/** Router start: map the table and forget a predecessor's pending queues (as rt_neigh_attach_router). */
int rt_nd_attach_router(struct neigh6_table *nt, int fd, struct rt_counters *ctr, struct ipc_err *err);
/** As rt_neigh_forget_ports, for the IPv6 table. */
int rt_nd_forget_ports(struct neigh6_table *nt, unsigned nports, uint32_t vacant);

/** Clean stop: free every packet still waiting for ND (drop_pending_restart). */
void rt_nd_free_pending(struct rt_ctx *ctx);

/**
 * An ICMPv6 Neighbor Solicitation or Advertisement @b (upper layer at @off
 * from the IPv6 header, its type already read) arrived on meta in_port:
 * validate (RFC 4861 §7.1), learn, answer a solicitation for the port's
 * addresses in place, release packets that waited. Consumes @b.
 */
void rt_nd_input(struct rt_ctx *ctx, ipc_buf b, uint32_t off, uint64_t now, struct rt_burst *tx);

/* rt_nd_touch's rare half: STALE -> DELAY. */
void rt_nd_touch_stale(struct neigh6_entry *e, uint64_t now);

/**
 * A forwarding use of usable entry @e at @now: a STALE entry enters DELAY
 * (RFC 4861 §7.3.3), whose timer (rt_nd_tick) starts probing. Inline: once
 * per forwarded packet.
 */
static inline void rt_nd_touch(struct neigh6_entry *e, uint64_t now)
{
    e->used_ns = now;
    if (ipc_unlikely(e->state == NEIGH6_STALE))
        rt_nd_touch_stale(e, now);
}

/**
 * Hold IPv6 packet @b (meta out_port set) until next hop @ip on @port
 * resolves: an incomplete entry and a multicast solicitation if there is
 * none; bounded as rt_neigh_hold (and in the same per-port share).
 */
void rt_nd_hold(struct rt_ctx *ctx, const uint8_t *ip, uint16_t port, ipc_buf b, uint64_t now, struct rt_burst *tx);

/**
 * Timers: retransmit solicitations of incomplete entries and give up
 * (address unreachable to what waited), REACHABLE -> STALE after
 * reachable_ns, DELAY -> PROBE after delay_ns, PROBE retransmits and then
 * removes, unused STALE entries go after stale_gc_ns. Call every ~100 ms.
 */
void rt_nd_tick(struct rt_ctx *ctx, uint64_t now, struct rt_burst *tx);

/**
 * A Router Solicitation (§6.2.6), at @off in @b (consumed): on a port with
 * `ra = yes`, answered by an advertisement to all nodes, at most one per
 * 3 s; counted (nd_router_solicit_rx) on any port.
 */
void rt_nd_rs_input(struct rt_ctx *ctx, ipc_buf b, uint32_t off, uint64_t now, struct rt_burst *tx);

/**
 * Send a Neighbor Solicitation for @target out of @port: to its
 * solicited-node group, or unicast to @dmac (a probe) when not NULL. From
 * the port's link-local address, with its MAC in a source link-layer
 * option. Returns 0 or -ENOBUFS.
 */
/** rt_neigh_probe's IPv6 twin: an incomplete entry and a solicitation for @ip, unless it has an entry. */
void rt_nd_probe(struct rt_ctx *ctx, const uint8_t *ip, uint16_t port, uint64_t now, struct rt_burst *tx);

int rt_nd_solicit(struct rt_ctx *ctx, uint16_t port, const uint8_t *target, const uint8_t *dmac, struct rt_burst *tx);

/**
 * A neighbour command from the supervisor for the IPv6 table (NEIGH_OP_ADD6,
 * REPLACE6, DEL6 of tables/neigh.h; @ip 16 bytes, the rest as the mailbox
 * gives them, unchecked): as rt_neigh_command's IPv4 ones. Returns 0 or the
 * errno for the mailbox's result; *@count is what a delete dropped.
 */
uint64_t rt_nd_command(struct rt_ctx *ctx, uint64_t op, const uint8_t *ip, uint64_t port, const uint8_t *mac,
                       uint64_t now, struct rt_burst *tx, uint64_t *count);

#endif
