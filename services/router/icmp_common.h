/* SPDX-License-Identifier: MIT */
/*
 * services/router/icmp_common.h: what the router's ICMP (icmp.c) and ICMPv6
 * (icmp6.c) share: the token bucket that limits errors (RFC 1812 §4.3.2.8,
 * RFC 4443 §2.4 (f)), and the steps of an error message and an echo reply
 * around the family's own header: a new buffer addressed back to the
 * link-layer sender, the quote of the offending packet, the send.
 */
#ifndef RT_ICMP_COMMON_H
#define RT_ICMP_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "rt.h"

/** Set up a bucket of @burst tokens refilled one per @interval_ns, full at @now. */
void rt_tb_init(struct rt_tb *tb, uint64_t interval_ns, uint32_t burst, uint64_t now);

/** Take a token at @now; false when the bucket is empty. */
bool rt_tb_take(struct rt_tb *tb, uint64_t now);

/**
 * How much of @orig's IP packet an error quotes: what the frame holds,
 * bounded by the packet's own length @tot (its header says) and by @limit.
 */
uint32_t rt_icmp_quote_len(const struct rt_ctx *ctx, ipc_buf orig, uint32_t tot, uint32_t limit);

/**
 * A new buffer for an error about @orig, in *@nb: its Ethernet header goes
 * back to @orig's link-layer sender from the ingress port's MAC, EtherType
 * @type. Returns the frame, or NULL (counted) when no buffer was free.
 */
uint8_t *rt_icmp_new(struct rt_ctx *ctx, ipc_buf orig, uint16_t type, ipc_buf *nb);

/**
 * The 8-byte header both families' errors start with (@type, @code, the
 * checksum left 0, the word @word: an MTU, a pointer, or 0), then @quote
 * bytes of @orig's IP packet after it.
 */
void rt_icmp_put_error(const struct rt_ctx *ctx, ipc_buf orig, uint8_t *ic, uint8_t type, uint8_t code, uint32_t word,
                       uint32_t quote);

/** Send error @nb (@len bytes of frame) out @orig's ingress port, counted as @ctr. */
void rt_icmp_send(struct rt_ctx *ctx, ipc_buf orig, ipc_buf nb, uint32_t len, enum rt_ctr ctr, struct rt_burst *tx);

/** Swap an echo request's source and destination addresses (@n bytes each), for its reply. */
static inline void rt_icmp_swap(uint8_t *src, uint8_t *dst, unsigned n)
{
    uint8_t a[16];
    memcpy(a, src, n);
    memcpy(src, dst, n);
    memcpy(dst, a, n);
}

/** An echo reply @b, rewritten in place: back out its ingress port to its sender, counted as @ctr. */
void rt_icmp_reply(struct rt_ctx *ctx, ipc_buf b, enum rt_ctr ctr, struct rt_burst *tx);

#endif
