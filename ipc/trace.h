/* SPDX-License-Identifier: MIT */
/*
 * ipc/trace.h: `ringrouter trace` (docs/observability.md, "Packet trace"):
 * the next N packets that match a filter, followed through every stage.
 *
 * The mark. A driver whose region has IPC_CAP_TRACE on runs the trace's
 * filter on each frame it receives; a match takes the next of the trace
 * ids the supervisor gave that driver (tr_next up to tr_end) into the
 * buffer's metadata (ipc_meta.flags, 0: not traced), every other frame of
 * the batch gets 0, so a recycled buffer carries no stale id into a trace.
 * The id travels with the buffer through the rings (and a trust zone's
 * copy), so each later stage needs no filter: a non-zero id is a traced
 * packet.
 *
 * The records. Each stage appends a struct ipc_trace_rec (ipc/capture.h)
 * to the trace ring of its own capture region: single producer (the
 * service), single consumer (the client), a full ring loses the record
 * (tr_lost), never the packet, and never waits. The stages:
 *
 *   RX      driver: port, queue, length, the frame's first 64 bytes
 *   ROUTE   router: the validation verdict, and for a forwarded IPv4
 *           packet the FIB prefix, next hop, egress port and the
 *           neighbour's state; cost: the burst's cycles per packet
 *   ICMP    router: an ICMP error the packet drew (type, code), sent,
 *           rate-limited or suppressed
 *   DROP    router or shaper: dropped, the counter's name in note
 *   SHAPE   shaper: its class (note), flow queue (queue); cost likewise
 *   TX      driver: taken off its ring for the device
 *
 * Off, a stage costs nothing more than capture's one branch per batch
 * (drivers: the same `on` word, tested once for both; the router and the
 * shaper: one load and one branch per burst). The client trusts nothing in
 * the ring (ipc_trace_take).
 */
#ifndef IPC_TRACE_H
#define IPC_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "capture.h"
#include "pool.h"

#define IPC_TRACE_N_MAX 1000u   /* packets a trace follows, at most */
#define IPC_TRACE_ID_MAX 0xffffu /* ids are 16 bits (ipc_meta.flags); 0 is "not traced" */
#define IPC_TRACE_BATCH 64u     /* records a stage holds back until its burst ends */

enum ipc_trace_stage { IPC_TR_RX = 1, IPC_TR_ROUTE, IPC_TR_ICMP, IPC_TR_DROP, IPC_TR_SHAPE, IPC_TR_TX, IPC_TR_N };

enum ipc_trace_verdict {
    IPC_TV_NONE,
    IPC_TV_FORWARD, /* ROUTE: to be forwarded (out_port, next hop) */
    IPC_TV_LOCAL,   /* ROUTE: for one of our addresses */
    IPC_TV_ARP,
    IPC_TV_IPV6,
    IPC_TV_PUNT,     /* ROUTE: to the control namespace */
    IPC_TV_DROP,     /* ROUTE: refused by validation (note: why) */
    IPC_TV_TTL,      /* ROUTE: TTL expires here */
    IPC_TV_NO_ROUTE, /* ROUTE: no FIB entry */
    IPC_TV_SENT,     /* ICMP */
    IPC_TV_RATE_LIMITED,
    IPC_TV_SUPPRESSED,
    IPC_TV_QUEUED, /* SHAPE */
    IPC_TV_N
};

/** The packet's trace id: 0 when it is not traced. */
static inline uint16_t ipc_trace_id(const struct ipc_meta *m)
{
    return m->flags;
}

/** The one branch a burst costs when off: is a trace running? */
static inline bool ipc_trace_on(void)
{
    return ipc_cap_on(IPC_CAP_TRACE);
}

/* ---- the service's end ---------------------------------------------------- */

/** Driver RX (trace on): mark the frames the filter matches while ids last,
 * clear every other one's id, and record the marked ones. */
void ipc_trace_rx(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n, uint16_t port);

/** Driver TX (trace on): record the traced packets of @n taken off a ring. */
void ipc_trace_tx(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n, uint16_t port);

/** A traced packet dropped (trace on): @why is the counter's name. */
void ipc_trace_drop(struct ipc_pool *pool, ipc_buf b, uint16_t port, const char *why);

/**
 * A stage that measures its burst: records held back until the burst ends,
 * so that each carries the burst's cycles per packet. begin, then add for
 * each traced packet (NULL when the batch is full: not recorded), then end
 * with the burst's packet count, which stamps and publishes them.
 */
struct ipc_trace_batch {
    uint64_t t0;  /* ipc_cycles() at begin */
    uint64_t ts0; /* CLOCK_REALTIME at the first add: every record's, so that it sorts before what the burst does */
    uint32_t n;
    struct ipc_trace_rec rec[IPC_TRACE_BATCH];
};
void ipc_trace_begin(struct ipc_trace_batch *tb);
struct ipc_trace_rec *ipc_trace_add(struct ipc_trace_batch *tb, const struct ipc_pool *pool, ipc_buf b,
                                    uint8_t stage);
void ipc_trace_end(struct ipc_trace_batch *tb, uint32_t pkts);

/** One record now (an ICMP's, a drop's): filled by the caller, stamped and published here. */
void ipc_trace_put(struct ipc_trace_rec *r);

/* ---- the client's end ----------------------------------------------------- */

/**
 * Take the next record from @c into @r: 1, 0 when the ring is empty, or
 * -EPROTO when the service wrote an impossible head (*skipped: how many we
 * gave up on; the tail moves to the head). Whatever the service wrote, @r
 * is well-formed: stage and verdict in range (else 0), note printable and
 * NUL-terminated.
 */
int ipc_trace_take(struct ipc_cap *c, struct ipc_trace_rec *r, uint64_t *skipped);

/** Names for the client's blocks. */
const char *ipc_trace_stage_name(unsigned stage);
const char *ipc_trace_verdict_name(unsigned verdict);

#endif
