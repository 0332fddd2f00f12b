/* SPDX-License-Identifier: MIT */
/*
 * services/router/icmp.h: the ICMP the router originates: echo replies for
 * its own addresses (in place) and the errors of RFC 792 / RFC 1812 §4.3.2
 * (time exceeded, net and host unreachable, fragmentation needed), each in
 * a new pool buffer, rate-limited by a token bucket. Errors and replies go
 * back out the ingress port to the link-layer sender of the packet that
 * caused them: the previous hop, which is the route back in every topology
 * without asymmetric routing (routing them through the FIB is future work).
 */
#ifndef RT_ICMP_H
#define RT_ICMP_H

#include <stdbool.h>
#include <stdint.h>

#include "icmp_common.h" /* rt_tb_init, rt_tb_take */
#include "rt.h"

#define RT_ICMP_ECHO_REPLY 0u
#define RT_ICMP_UNREACH 3u
#define RT_ICMP_ECHO 8u
#define RT_ICMP_TIME_EXCEEDED 11u
#define RT_ICMP_PARAMPROB 12u /* RFC 792 Parameter Problem; code 0: the pointer says where */
#define RT_ICMP_UNREACH_NET 0u
#define RT_ICMP_UNREACH_HOST 1u
#define RT_ICMP_UNREACH_PORT 3u
#define RT_ICMP_UNREACH_NEEDFRAG 4u
#define RT_ICMP_EXC_TTL 0u
#define RT_ICMP_HLEN 8u

/**
 * Why @orig must not get an ICMP error (RFC 1812 §4.3.2.7): it is an ICMP
 * error itself, a non-first fragment, link-layer or IP broadcast or
 * multicast, or from a source that names no single host. Returns true when
 * an error may be sent.
 */
bool rt_icmp_error_allowed(const struct rt_ctx *ctx, ipc_buf orig);

/**
 * Send ICMP @type/@code about @orig (an Ethernet frame with a validated IPv4
 * header, not consumed): a new buffer quoting the original IP header and the
 * first 8 bytes of its payload, from the ingress port's address, out the
 * ingress port. @aux is the word after the checksum: the next-hop MTU of
 * "fragmentation needed" (RFC 1191), the pointer in the top octet of a
 * Parameter Problem (RFC 792), 0 otherwise. Returns true if a message was queued on @tx; false when it was
 * not allowed, rate-limited or no buffer was free (each counted).
 */
bool rt_icmp_error(struct rt_ctx *ctx, ipc_buf orig, uint8_t type, uint8_t code, uint32_t aux, uint64_t now,
                   struct rt_burst *tx);

/**
 * @b is an IPv4 packet to one of the router's addresses: answer an echo
 * request in place (addresses swapped, TTL reset, checksums updated
 * incrementally, so a chained request is answered without touching any frame
 * but the first); anything else is control traffic (rt_punt4, punt.h).
 * Consumes @b.
 */
void rt_icmp_local(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx);

#endif
