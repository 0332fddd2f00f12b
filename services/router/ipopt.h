/* SPDX-License-Identifier: MIT */
/*
 * services/router/ipopt.h: the IPv4 options of a packet the router forwards
 * or answers (RFC 791 §3.1, RFC 1812 §4.2.2.1 and §5.3.13): the whole option
 * area checked, a malformed option answered with Parameter Problem, Record
 * Route and Timestamp filled in, source routes refused (as Linux does with
 * accept_source_route = 0), every other option left as it came. Only
 * packets with options (IHL > 5) come here: the forwarding loop tests IHL
 * and nothing else for them.
 */
#ifndef RT_IPOPT_H
#define RT_IPOPT_H

#include <stdint.h>

#include "rt.h"


#define RT_OPT_EOL 0u
#define RT_OPT_NOP 1u
#define RT_OPT_RR 7u     /* Record Route */
#define RT_OPT_TS 68u    /* Internet Timestamp */
#define RT_OPT_LSRR 131u /* Loose Source and Record Route */
#define RT_OPT_SSRR 137u /* Strict Source and Record Route */
#define RT_OPT_TS_ONLY 0u    /* Timestamp flags: timestamps only */
#define RT_OPT_TS_ADDR 1u    /* each preceded by the address of the router that wrote it */
#define RT_OPT_TS_PRESPEC 3u /* only by the routers whose addresses the sender wrote in */

/**
 * Check and process the options of @b, a frame whose IPv4 header (longer
 * than 20 bytes) rt_ipv4_validate passed. @port is the interface the packet
 * leaves by: the egress port of a packet forwarded, the ingress port of one
 * the router answers in place; Record Route and Timestamp record its
 * address. @now is the loop's clock, for the ICMP rate limit; timestamps
 * read the real-time clock. Returns RT_CTR_MAX when the packet goes on (its
 * options updated and its header checksum recomputed when they changed),
 * else why it must be dropped, for the caller to count and free:
 * drop_bad_options (a Parameter Problem about it was queued on @tx, subject
 * to RFC 1812 §4.3.2.7 and the rate limit) or drop_source_route.
 */
enum rt_ctr rt_ipopt(struct rt_ctx *ctx, ipc_buf b, uint16_t port, uint64_t now, struct rt_burst *tx);

#endif
