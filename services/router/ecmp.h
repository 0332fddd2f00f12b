/* SPDX-License-Identifier: MIT */
/*
 * services/router/ecmp.h: the router's half of next-hop groups (ECMP; the
 * FIB's half is tables/fib_group.h). A route whose next hop is a group's
 * header takes, per packet, the member of the bucket its flow's hash names
 * (addresses, protocol and ports; IPv6 adds the flow label), so a flow keeps
 * its path and the members share the flows by weight.
 *
 * A member whose neighbour failed (ARP or ND gave up on it: neigh.c, nd.c)
 * is skipped from the next batch on: its flows rehash onto the other
 * members, each flow to one of them, while the other members' flows stay
 * where they were. The router keeps those members in a small set of its own
 * (struct rt_ctx's ecmp_down); while a skipped member is still wanted, the
 * tick asks for its neighbour again (one request per retransmit round, as
 * for a packet), and once it answers the flows go back to it. The set is
 * process-local: a new router instance learns again, in the time ARP takes
 * to fail. With nothing in the set, a group costs a hash and two loads; a
 * route with one next hop costs one test of its flags.
 */
#ifndef RT_ECMP_H
#define RT_ECMP_H

#include "rt.h"
#include "tables/fib6.h"
#include "tables/fib.h"

/**
 * The member of group @g (a header next hop's: flags FIB_NH_F_GROUP, the
 * group in gw) that the IPv4 packet at @ip (@avail bytes of it in the
 * frame) takes. Inside the FIB read section that found the header. By
 * value and cold: the forwarding loop of a route with one next hop keeps
 * its registers (bench/forward-core).
 */
__attribute__((cold)) struct fib_nh rt_ecmp_pick4(struct rt_ctx *ctx, uint32_t g, const uint8_t *ip, uint32_t avail,
                                                  uint64_t now);

/** The same for an IPv6 packet (@g: fib6_nh_group of the header). */
__attribute__((cold)) struct fib6_nh rt_ecmp_pick6(struct rt_ctx *ctx, uint32_t g, const uint8_t *ip6, uint32_t avail,
                                                   uint64_t now);

/** The flow hash of an IPv4 packet at @ip (@avail bytes), and of an IPv6 one. */
uint32_t rt_flow_hash4(const uint8_t *ip, uint32_t avail);
uint32_t rt_flow_hash6(const uint8_t *ip6, uint32_t avail);

/**
 * Neighbour @ip (4 bytes host order as a uint32_t, or 16 bytes) on @port
 * failed: groups skip it until it answers again.
 */
void rt_ecmp_failed(struct rt_ctx *ctx, bool v6, const void *ip, uint16_t port, uint64_t now);

/** Timers: forget members that answer again, ask again for those still wanted. */
void rt_ecmp_tick(struct rt_ctx *ctx, uint64_t now, struct rt_burst *tx);

#endif
