/* SPDX-License-Identifier: MIT */
/*
 * services/router/neigh.h: ARP (RFC 826) and the router's use of the
 * neighbour table (tables/neigh.h): learning, the pending queues, probes and
 * ageing. Time is passed in (tests use a virtual clock). Packets waiting for
 * ARP at a crash are lost (a few per unresolved next hop, at most
 * NEIGH_QMAX); the alternative, handing them to the supervisor, would need a
 * second owner word per buffer for a case TCP recovers from anyway.
 */
#ifndef RT_NEIGH_H
#define RT_NEIGH_H

#include "rt.h"
#include "tables/neigh.h"

/**
 * Router start: map the table and forget the pending queues a previous
 * instance left (their buffers were reclaimed, see tables/neigh.h), counting
 * them in @ctr. Returns 0 or -errno.
 */
int rt_neigh_attach_router(struct neigh_table *nt, int fd, struct rt_counters *ctr, struct ipc_err *err);
/** Router start, after attach: remove every entry (static too) of a port
 * a reload removed: one from @nports on, or one whose bit in @vacant is
 * set (its slot vacant: supervisor/port_slots.c); returns how many. */
int rt_neigh_forget_ports(struct neigh_table *nt, unsigned nports, uint32_t vacant);

/**
 * Clean stop: free every packet still waiting in a pending queue (counted as
 * drop_pending_restart) and leave the queues empty, so that the router exits
 * holding no buffer and the shutdown census finds no leak. The entries
 * themselves stay for the next instance.
 */
void rt_neigh_free_pending(struct rt_ctx *ctx);

/**
 * A forwarding use of usable entry @e at @now: a stale entry gets one
 * unicast probe (appended to @tx).
 */
void rt_neigh_touch(struct rt_ctx *ctx, struct neigh_entry *e, uint64_t now, struct rt_burst *tx);

/**
 * Hold packet @b (meta out_port set, not yet rewritten) until @ip on @port
 * resolves: creates an incomplete entry and broadcasts a request if there is
 * none. On a full table the longest-waiting incomplete entry near the clock
 * hand is evicted, its queue freed (drop_neigh_evicted); never a complete
 * one. A full queue, or a table with no incomplete entry to evict, drops
 * and counts @b.
 */
void rt_neigh_hold(struct rt_ctx *ctx, uint32_t ip, uint16_t port, ipc_buf b, uint64_t now, struct rt_burst *tx);

/**
 * An ARP frame @b arrived: learn (on a full table, in the place of an
 * evicted incomplete entry, as rt_neigh_hold), answer requests for the
 * port's address in place, release queued packets of a neighbour that
 * resolved. Consumes @b.
 */
void rt_arp_input(struct rt_ctx *ctx, ipc_buf b, uint64_t now, struct rt_burst *tx);

/**
 * Timers: retransmit requests, give up on neighbours that never answered
 * (their packets get ICMP host unreachable), age reachable to stale, probe
 * and remove stale entries. Call every ~100 ms.
 */
void rt_neigh_tick(struct rt_ctx *ctx, uint64_t now, struct rt_burst *tx);

/**
 * The supervisor's command @seq in the table's mailbox (tables/neigh.h):
 * add, replace or delete one entry, or flush every entry that is not
 * static. What waited for a neighbour that gets a static entry goes out
 * (appended to @tx); what waited for one removed is freed and counted as
 * drop_neigh_removed. Writes result and count, then ack = @seq.
 */
void rt_neigh_command(struct rt_ctx *ctx, uint64_t seq, uint64_t now, struct rt_burst *tx);

/**
 * Ask for @ip on @port with no packet waiting (an ECMP member that failed,
 * ecmp.c): an incomplete entry and a broadcast request, as for a packet,
 * unless it has an entry already.
 */
void rt_neigh_probe(struct rt_ctx *ctx, uint32_t ip, uint16_t port, uint64_t now, struct rt_burst *tx);

/** Build an ARP request for @tip out of @port (to @dmac, or broadcast if NULL). */
int rt_arp_request(struct rt_ctx *ctx, uint16_t port, uint32_t tip, const uint8_t *dmac, struct rt_burst *tx);

#endif
