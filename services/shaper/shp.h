/* SPDX-License-Identifier: MIT */
/*
 * services/shaper/shp.h: the shaper's algorithms as a library over buffer
 * handles, driven by a clock the caller passes in (nanoseconds; tests use a
 * virtual one). No allocation per packet: the flow queues are preallocated
 * in struct shp, a queue links its packets through the buffers' metadata
 * scratch (ipc_meta.user[]), and dropped packets go straight back to the pool.
 *
 *  - a port token bucket (rate, burst, per-frame overhead; a GSO packet is
 *    charged as the segments it becomes on the wire);
 *  - classes with a guaranteed rate, a ceil and a priority (HTB-like: a class
 *    under its rate is served first; over it, it may borrow what the port has
 *    left up to its ceil, lower prio first);
 *  - classification by DSCP, protocol, ports and IPv4 or IPv6 prefixes,
 *    first match wins,
 *    else the default class;
 *  - per class, SHP_FLOWS flow queues by 5-tuple hash served by deficit
 *    round robin, a flow that was idle first (new and old lists, as
 *    fq_codel: a ping does not wait a round of 64 KB GSO packets), each
 *    managed by CoDel (RFC 8289; ECN-capable packets are
 *    marked CE, with the IPv4 header checksum fixed, instead of dropped);
 *  - a backlog bounded in packets and bytes; overflow drops from the head
 *    of the fattest flow.
 *
 * Metadata scratch while a packet is queued: user[0] enqueue time, user[1]
 * next handle in its flow queue, user[2] its cost in wire bytes; mark holds
 * its flow index.
 */
#ifndef SHP_H
#define SHP_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/pool.h"
#include "tables/shaper.h"

#define SHP_FLOWS 64u /* flow queues per class */
#define SHP_NFLOWS (SHP_MAX_CLASSES * SHP_FLOWS)
#define SHP_DROP_BATCH 64u
#define SHP_NONE UINT32_MAX

/* As much as a TAP port's device queue (docs/drivers.md, queue_len 4096):
 * after a stall upstream (a router's handover) the catch-up burst meets this
 * bound first, and CoDel, not the bound, keeps the standing queue short.
 * fq_codel's own default is 10240. */
#define SHP_DEF_LIMIT_PKTS 4096u
#define SHP_DEF_LIMIT_BYTES (4u << 20)
#define SHP_DEF_TARGET_US 5000u
#define SHP_DEF_INTERVAL_US 100000u
#define SHP_DEF_QUANTUM 1514u

/* A token bucket; tokens in bit-nanoseconds (one byte costs 8e9), may go negative. */
struct shp_bucket {
    int64_t tok;
    int64_t cap;
    uint64_t rate; /* bits per second; 0: unlimited */
    uint64_t t;    /* last refill */
};

struct shp_codel {
    uint64_t first_above;
    uint64_t drop_next;
    uint32_t count;
    uint32_t lastcount;
    bool dropping;
};

struct shp_flow {
    uint32_t head, tail; /* SHP_NONE: empty */
    uint32_t pkts;
    uint32_t next;  /* next flow in its class's active list */
    uint64_t bytes; /* wire bytes queued */
    int64_t deficit;
    bool active;
    uint8_t cls;
    struct shp_codel codel;
};

struct shp_class {
    char name[SHP_NAME_MAX];
    struct shp_match match;
    uint32_t prio;
    struct shp_bucket rate, ceil;
    uint32_t new_head, new_tail; /* flows that just became active: served first (sparse flows) */
    uint32_t act_head, act_tail; /* the other active flows, DRR order */
    uint32_t nactive;            /* flows on either list */
    uint32_t pkts;
    uint64_t bytes;
    uint64_t win_bytes, win_start; /* for SHP_C_BPS */
    uint64_t c[SHP_C_N];
};

struct shp {
    struct ipc_pool *pool;
    uint32_t nclasses, default_class;
    uint32_t overhead, quantum;
    uint32_t limit_pkts;
    uint64_t limit_bytes;
    uint64_t target_ns, interval_ns;
    bool ecn;
    uint32_t maxpacket; /* largest wire size seen: CoDel leaves a flow this small alone */
    uint32_t rr;        /* next class to look at first */
    uint32_t pkts;
    uint64_t bytes;
    struct shp_bucket port;
    uint64_t p[SHP_P_N];
    struct shp_class cls[SHP_MAX_CLASSES];
    struct shp_flow flow[SHP_NFLOWS];
    uint32_t ndrop;
    ipc_buf drop[SHP_DROP_BATCH];
};

/* What classification reads from a frame. */
struct shp_pkt {
    bool ipv4;
    bool ipv6;             /* then src and dst are the addresses folded, for the flow hash */
    uint8_t dscp, proto;
    uint16_t sport, dport; /* host order; 0 when not TCP/UDP or a non-first fragment */
    uint32_t src, dst;     /* host order */
    uint8_t src6[16], dst6[16]; /* IPv6: the addresses, network order */
    uint32_t l3off;        /* offset of the IPv4 or IPv6 header in the first frame */
    uint32_t hdr_end;      /* end of the L4 header (GSO: the bytes each segment repeats), 0: unknown */
    uint32_t mark;         /* the filter's mark (ipc_meta.mark on enqueue; shp_parse leaves it 0) */
};

/** Check @cfg and set @s up (every queue empty, buckets full at @now). Returns 0 or -EINVAL with @err. */
int shp_init(struct shp *s, struct ipc_pool *pool, const struct shp_cfg *cfg, uint64_t now, struct ipc_err *err);

/** Queue @n packets the caller owns; they become the shaper's (or are dropped on overflow). */
void shp_enqueue(struct shp *s, const ipc_buf *bufs, uint32_t n, uint64_t now);

/** Release up to @max packets the buckets allow at @now into @out; returns how many. */
uint32_t shp_dequeue(struct shp *s, uint64_t now, ipc_buf *out, uint32_t max);

/** When the next packet may leave: @now or later, UINT64_MAX when nothing is queued. */
uint64_t shp_next_ns(struct shp *s, uint64_t now);

/** Free every queued packet. */
void shp_purge(struct shp *s);

/**
 * Take up to @max queued packets out regardless of the buckets (a stopping
 * shaper hands its queue to the driver rather than dropping it). Returns how many.
 */
uint32_t shp_drain(struct shp *s, ipc_buf *out, uint32_t max);

/**
 * Change a rate at run time: @cls < 0 the port (rate; burst unchanged; class
 * rates and ceils equal to the old port rate follow it, those above it come
 * down to it), else
 * the class's rate and ceil (0: leave as is). Returns 0 or -EINVAL.
 */
int shp_set_rate(struct shp *s, int cls, uint64_t rate, uint64_t ceil, uint64_t now);

/** Look a class up by name; -1 when none. */
int shp_class_find(const struct shp *s, const char *name);

/** Parse a frame's Ethernet/IPv4 or IPv6/L4 headers (first frame only). */
void shp_parse(const uint8_t *d, uint32_t len, struct shp_pkt *pk);

/** The class index for a parsed packet. */
uint32_t shp_classify(const struct shp *s, const struct shp_pkt *pk);

/** The flow queue (index into s->flow) a parsed packet of class @cls goes to. */
uint32_t shp_flow_of(const struct shp_pkt *pk, uint32_t cls);

/** Set CE on an ECN-capable IPv4 packet and fix its checksum; false when it is not ECN-capable. */
bool shp_ecn_mark(uint8_t *ip);

/** The same for an IPv6 header: the traffic class's ECN bits. */
bool shp_ecn_mark6(uint8_t *ip6);

/** Wire bytes a packet costs: its segments, each with the port's overhead. */
uint64_t shp_wire_bytes(const struct shp *s, const struct ipc_meta *m, const struct shp_pkt *pk);

/** shp_enqueue with `ringrouter trace` on (shp_trace.c): the traced packets
 * of @bufs recorded with their class and flow queue on port @port. */
void shp_trace_enqueue(struct shp *s, const ipc_buf *bufs, uint32_t n, uint64_t now, uint16_t port);

/** Fill a config with one default class at @rate (tests, and ports without classes). */
void shp_cfg_default(struct shp_cfg *cfg, uint64_t rate, uint32_t burst);

#endif
