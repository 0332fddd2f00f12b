/* SPDX-License-Identifier: MIT */
/*
 * services/router/icmp6.h: the ICMPv6 the router originates (RFC 4443):
 * echo replies for its own addresses (in place), and the errors time
 * exceeded (3/0), destination unreachable (1/0 no route, 1/3 address
 * unreachable) and packet too big (2/0, with the MTU: RFC 8201), each in a
 * new pool buffer quoting as much of the offending packet as fits in the
 * minimum MTU (1280 bytes), out of the port the packet came in on, to its
 * link-layer sender (as the IPv4 errors, icmp.h). Errors are limited per
 * destination by token buckets (ctx->icmp6_tb, the IPv4 bucket's design
 * and rate), and never sent about an ICMPv6 error, or about a packet to a
 * multicast destination (a link-layer multicast, or from a source that is
 * no single host) except Packet Too Big (RFC 4443 §2.4 (e)).
 */
#ifndef RT_ICMP6_H
#define RT_ICMP6_H

#include <stdbool.h>
#include <stdint.h>

#include "ipv6.h"
#include "rt.h"

#define RT_ICMP6_UNREACH 1u
#define RT_ICMP6_TOO_BIG 2u
#define RT_ICMP6_TIME_EXCEEDED 3u
#define RT_ICMP6_PARAM_PROBLEM 4u
#define RT_ICMP6_ECHO_REQUEST 128u
#define RT_ICMP6_ECHO_REPLY 129u
#define RT_ICMP6_RS 133u
#define RT_ICMP6_RA 134u
#define RT_ICMP6_NS 135u
#define RT_ICMP6_NA 136u
#define RT_ICMP6_REDIRECT 137u

#define RT_ICMP6_UNREACH_NO_ROUTE 0u
#define RT_ICMP6_UNREACH_ADDR 3u
#define RT_ICMP6_HLEN 8u
#define RT_IP6_MIN_MTU 1280u /* what every IPv6 link carries (RFC 8200 §5): an error's whole size */
#define RT_HLIM_DEFAULT 64u

/**
 * Send ICMPv6 error @type/@code about @orig (an Ethernet frame with an IPv6
 * header the caller validated; not consumed). @param is the 32-bit field
 * after the checksum: the MTU for Packet Too Big, else 0. Returns true if a
 * message was queued on @tx; false when not allowed, rate-limited or no
 * buffer was free (each counted).
 */
bool rt_icmp6_error(struct rt_ctx *ctx, ipc_buf orig, uint8_t type, uint8_t code, uint32_t param, uint64_t now,
                    struct rt_burst *tx);

/**
 * @b is an IPv6 packet to one of the router's unicast addresses whose upper
 * layer is ICMPv6 at @off from the IPv6 header: answer an echo request in
 * place (addresses swapped, type and checksum updated incrementally) or hand
 * ND to nd.c; anything else drops and counts. Consumes @b.
 */
void rt_icmp6_local(struct rt_ctx *ctx, ipc_buf b, uint32_t off, uint64_t now, struct rt_burst *tx);

/** Verify the ICMPv6 checksum of @b's upper layer at @off (IPv6 header offset) across the chain. */
bool rt_icmp6_csum_ok(const struct rt_ctx *ctx, ipc_buf b, uint32_t off);

#endif
