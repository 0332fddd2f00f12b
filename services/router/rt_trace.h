/* SPDX-License-Identifier: MIT */
/*
 * services/router/rt_trace.h: the router's stage of `ringrouter trace`
 * (ipc/trace.h). Before a burst is routed, each traced packet of it is
 * explained without side effects: the validation verdict, and for a packet
 * to forward the FIB entry that matches (prefix and length), the next hop,
 * the egress port and the neighbour's state; the records wait for the
 * burst's end for its cycles per packet. An ICMP error the packet draws is
 * recorded where it is decided (icmp.c), a drop where it is counted
 * (rt_drop, the burst's own drop path). Off: one branch per burst, in the
 * loop (main.c), which calls rt_input_burst itself.
 */
#ifndef RT_TRACE_H
#define RT_TRACE_H

#include "ipc/trace.h"
#include "rt.h"

/**
 * rt_input_burst with `ringrouter trace` on (the loop's one branch a burst
 * chose it): the traced packets of @bufs explained, the burst routed, the
 * records published with its cycles per packet.
 */
void rt_trace_burst(struct rt_ctx *ctx, const ipc_buf *bufs, uint32_t n, uint64_t now, struct rt_burst *tx);

/** An ICMP error for @orig: sent, rate-limited or suppressed (enum ipc_trace_verdict). */
void rt_trace_icmp_rec(struct rt_ctx *ctx, ipc_buf orig, uint8_t type, uint8_t code, unsigned verdict);

static inline void rt_trace_icmp(struct rt_ctx *ctx, ipc_buf orig, uint8_t type, uint8_t code, unsigned verdict)
{
    if (ipc_trace_on())
        rt_trace_icmp_rec(ctx, orig, type, code, verdict);
}

#endif
