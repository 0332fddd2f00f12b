/* SPDX-License-Identifier: MIT */
/*
 * services/router/rt.h: what the router's packet stages share: the port
 * table (addresses, MACs, MTUs), the counters with their printable names,
 * the output burst every stage appends to, and struct rt_ctx, the one
 * context the per-packet functions take. The process loop (main.c) fills a
 * context from its config blob and hands it bursts of handles; nothing in
 * here allocates or blocks. Nothing in here opens a FIB read section either:
 * the loop opens one per batch around every call that may read ctx->fib.
 */
#ifndef RT_H
#define RT_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/pool.h"
#include "tables/neigh.h"

#define RT_MAX_PORTS 16u
#define RT_MAX_ZONES RT_MAX_PORTS
#define RT_BURST 32u
#define RT_PREFETCH 4u /* packets ahead whose headers the burst loop prefetches */

/* Counters: one per drop reason and event. Keep rt_ctr_names in sync. */
enum rt_ctr {
    RT_CTR_RX_IPV4,
    RT_CTR_RX_ARP,
    RT_CTR_FORWARDED,
    RT_CTR_LOCAL_ECHO,
    RT_CTR_DROP_ETHERTYPE,       /* neither IPv4 nor ARP */
    RT_CTR_DROP_VLAN,            /* 802.1Q/802.1ad tagged on a port without VLAN ports (their drivers pop their tags) */
    RT_CTR_DROP_RUNT,            /* shorter than Ethernet + the header it claims */
    RT_CTR_DROP_BAD_PORT,        /* in_port is not a configured port */
    RT_CTR_DROP_L2_OTHER_HOST,   /* unicast MAC that is not the port's */
    RT_CTR_DROP_BAD_VERSION,     /* RFC 1812 §5.2.2 (a..e) */
    RT_CTR_DROP_BAD_IHL,
    RT_CTR_DROP_BAD_CHECKSUM,
    RT_CTR_DROP_BAD_TOTLEN,      /* total length < header or > frame */
    RT_CTR_DROP_MARTIAN_SRC,     /* RFC 1812 §5.3.7 */
    RT_CTR_DROP_OWN_SRC,         /* the source is one of the router's addresses (as Linux) */
    RT_CTR_DROP_MARTIAN_DST,
    RT_CTR_DROP_LIMITED_BCAST,   /* 255.255.255.255: local, never forwarded (§5.3.5.1) */
    RT_CTR_DROP_MULTICAST,       /* 224/4 destination: no multicast routing */
    RT_CTR_DROP_DIRECTED_BCAST,  /* a connected subnet's broadcast: not forwarded (§5.3.5.2 default) */
    RT_CTR_DROP_L2_BCAST_UNICAST,/* IP unicast in a link-layer broadcast (§5.3.4) */
    RT_CTR_DROP_LOCAL_OTHER,     /* to us, not an echo request */
    RT_CTR_DROP_ECHO_CHAIN,      /* echo request that does not fit the reply path */
    RT_CTR_DROP_ICMP_BAD_CHECKSUM,
    RT_CTR_DROP_TTL,             /* TTL expired in transit */
    RT_CTR_DROP_NO_ROUTE,
    RT_CTR_DROP_BAD_NEXTHOP,     /* route to a port that is not configured */
    RT_CTR_DROP_FRAG_NEEDED,     /* DF set and larger than the MTU */
    RT_CTR_DROP_GSO_TOO_BIG,     /* GSO segments larger than the MTU, without DF */
    RT_CTR_DROP_NO_BUFS,         /* pool empty while building fragments or ICMP */
    RT_CTR_DROP_TX_FULL,         /* the output burst was full */
    RT_CTR_DROP_PENDING_FULL,    /* neighbour's pending queue full */
    RT_CTR_DROP_PENDING_LIMIT,   /* the port's share of the packets waiting for ARP used up (a scan) */
    RT_CTR_DROP_NEIGH_FULL,      /* neighbour table full */
    RT_CTR_DROP_NEIGH_FAILED,    /* queued for a neighbour that never answered */
    RT_CTR_DROP_NEIGH_EVICTED,   /* queued for an incomplete neighbour evicted to make room */
    RT_CTR_DROP_PENDING_RESTART, /* queued when the router stopped, or when the previous instance died */
    RT_CTR_DROP_NEIGH_REMOVED,   /* queued for a neighbour that `neigh del` or `neigh flush` removed */
    RT_CTR_DROP_SRC_ROUTE,       /* a source route option: refused (ipopt.h) */
    RT_CTR_DROP_BAD_OPTIONS,     /* malformed IP options (Parameter Problem), or met while fragmenting */
    RT_CTR_DROP_GSO_BAD,         /* offloads pending for a port without them that we could not finish */
    RT_CTR_GSO_SW_PKTS,          /* GSO packets segmented in software (for a port without offloads) */
    RT_CTR_GSO_SW_SEGS,          /* segments they made */
    RT_CTR_CSUM_SW,              /* partial checksums completed in software */
    RT_CTR_RX_AGG,               /* TCP aggregates longer than their port's MTU given a GSO description (gso.h) */
    RT_CTR_CSUM_RX_PARTIAL,      /* partial checksums from an IPC_PORT_F_RX_PARTIAL port completed */
    RT_CTR_FRAG_PKTS,            /* packets fragmented */
    RT_CTR_FRAG_CREATED,         /* fragments made */
    RT_CTR_ARP_BAD,              /* malformed ARP */
    RT_CTR_ARP_IGNORED,          /* not for us, nothing to learn */
    RT_CTR_ARP_REQ_RX,
    RT_CTR_ARP_REPLY_RX,
    RT_CTR_ARP_GRATUITOUS_RX,
    RT_CTR_ARP_REQ_TX,
    RT_CTR_ARP_REPLY_TX,
    RT_CTR_NEIGH_LEARNED,
    RT_CTR_NEIGH_EXPIRED,
    RT_CTR_NEIGH_EVICTED,        /* incomplete entries evicted from a full table for a new one */
    RT_CTR_ICMP_ECHO_REPLY_TX,
    RT_CTR_ICMP_TIME_EXCEEDED_TX,
    RT_CTR_ICMP_NET_UNREACH_TX,
    RT_CTR_ICMP_HOST_UNREACH_TX,
    RT_CTR_ICMP_FRAG_NEEDED_TX,
    RT_CTR_ICMP_PARAMPROB_TX,
    RT_CTR_ICMP_RATE_LIMITED,
    RT_CTR_ICMP_SUPPRESSED,      /* an error was due but RFC 1812 §4.3.2.7 forbids it */
    /* IPv6 (ipv6.c, nd.c, icmp6.c; docs/ipv6.md). The pending-queue drops
     * (drop_pending_full, drop_pending_limit, drop_neigh_table_full,
     * drop_neigh_evicted, drop_pending_restart), drop_bad_nexthop,
     * drop_no_bufs and drop_tx_full count both families. */
    RT_CTR_RX_IPV6,
    RT_CTR_FORWARDED6,
    RT_CTR_DROP6_RUNT,           /* shorter than Ethernet + the 40-byte header */
    RT_CTR_DROP6_BAD_VERSION,
    RT_CTR_DROP6_BAD_PLEN,       /* payload length beyond the frame, or 0 (jumbograms) */
    RT_CTR_DROP6_SRC_UNSPEC,     /* source :: (outside DAD's solicitations) */
    RT_CTR_DROP6_SRC_MCAST,
    RT_CTR_DROP6_SRC_LOOPBACK,
    RT_CTR_DROP6_MARTIAN_DST,    /* destination :: or ::1 */
    RT_CTR_DROP6_LL_SRC,         /* link-local source, to be forwarded off its link */
    RT_CTR_DROP6_LL_DST,         /* link-local destination that is not ours */
    RT_CTR_DROP6_MCAST_LL,       /* multicast of link-local (or smaller) scope, not ND for us */
    RT_CTR_DROP6_MCAST,          /* multicast of wider scope: no multicast routing */
    RT_CTR_DROP6_L2_MCAST_UNICAST, /* IPv6 unicast in a link-layer multicast frame */
    RT_CTR_DROP6_HOP_LIMIT,      /* hop limit 0 or 1 on arrival */
    RT_CTR_DROP6_NO_ROUTE,
    RT_CTR_DROP6_TOO_BIG,        /* larger than the egress MTU: never fragmented */
    RT_CTR_DROP6_RH0,            /* routing header type 0 (RFC 5095) */
    RT_CTR_DROP6_EXT,            /* extension headers truncated, or past the walk's bound */
    RT_CTR_DROP6_LOCAL_OTHER,    /* to us, not an echo request or ND */
    RT_CTR_DROP6_ICMP_BAD_CHECKSUM,
    RT_CTR_DROP6_GSO,            /* a GSO packet for a port that needs software segmentation (no TSO6 yet) */
    RT_CTR_DROP6_NEIGH_FAILED,   /* queued for a neighbour that never answered */
    RT_CTR_ND_BAD,               /* malformed ND (RFC 4861 §7.1) */
    RT_CTR_ND_IGNORED,           /* valid, not for us, nothing to learn (DAD probes among them) */
    RT_CTR_ND_NS_RX,
    RT_CTR_ND_NA_RX,
    RT_CTR_ND_NS_TX,
    RT_CTR_ND_NA_TX,
    RT_CTR_ND_LEARNED,
    RT_CTR_ND_EXPIRED,
    RT_CTR_ND_EVICTED,
    RT_CTR_ICMP6_ECHO_REPLY_TX,
    RT_CTR_ICMP6_TIME_EXCEEDED_TX,
    RT_CTR_ICMP6_UNREACH_TX,     /* 1/0 no route, 1/3 address unreachable */
    RT_CTR_ICMP6_TOO_BIG_TX,
    RT_CTR_ICMP6_RATE_LIMITED,
    RT_CTR_ICMP6_SUPPRESSED,     /* an error was due but RFC 4443 §2.4 (e) forbids it */
    RT_CTR_ND_RS_RX,             /* Router Solicitations received (on any port) */
    RT_CTR_ND_RA_TX,             /* Router Advertisements sent */
    RT_CTR_ND_DAD_DEFENDED,      /* a host's DAD probe for one of our addresses, answered */
    RT_CTR_ND_DAD_CONFLICT,      /* one of our addresses found in use on its link at start: not used */
    RT_CTR_ZONE_COPY,            /* packets copied into another trust zone's pool (docs/security.md) */
    /* The control namespace (punt.c; docs/routing.md, "Control traffic"). */
    RT_CTR_PUNT_TO_HOST,         /* to us, not answered here: handed to the port's host-side interface */
    RT_CTR_PUNT_FROM_HOST,       /* sent by the host-side interface: out its port as they were */
    RT_CTR_TCP_RST_TX,           /* resets for TCP to us with no control namespace (both families) */
    RT_CTR_ICMP_PORT_UNREACH_TX, /* port unreachable for UDP to us with no control namespace */
    RT_CTR_MAX
};

extern const char *const rt_ctr_names[RT_CTR_MAX];

struct rt_port_ctr {
    uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
};

/* Plain and process-local, bumped per packet without atomics; the process
 * loop copies it to its stats region once per pass (main.c). */
struct rt_counters {
    uint64_t c[RT_CTR_MAX];
    struct rt_port_ctr port[RT_MAX_PORTS];
    uint64_t pending;  /* packets waiting for ARP right now (a gauge) */
    uint64_t pending6; /* packets waiting for Neighbor Discovery right now */
};

#define RT_ADDR6_MAX 8u /* IPv6 addresses per port (TBL_ADDR6_MAX) */

struct rt_addr6 {
    uint8_t a[16]; /* network byte order */
    uint8_t plen;
};

#define RT_CP_NONE 0xffu /* rt_port.cp: no host-side interface */

/* One router interface. IPv4 addresses in host byte order. */
struct rt_port {
    uint8_t mac[6];
    uint16_t mtu; /* IP MTU; 0 = port not configured */
    uint32_t ip;
    uint8_t plen;
    /* The control namespace (punt.h): a port's host-side interface is a
     * port too; cp is the other of the pair (RT_CP_NONE: none), cp_host
     * says which side this is. */
    uint8_t cp;
    bool cp_host;
    bool sw_offload; /* its driver sends frames as they are (AF_XDP): segment and checksum here (gso.h) */
    bool rx_partial; /* its frames may carry partial checksums and TSO aggregates (IPC_PORT_F_RX_PARTIAL) */
    uint8_t n6;      /* IPv6 addresses; 0: IPv6 off on this port */
    int8_t ll6;      /* index of the link-local one in a6, -1 if none */
    struct rt_addr6 a6[RT_ADDR6_MAX];
    const char *name;       /* for the log (the config's, alive as long as we are) */
    bool dad_sent;          /* DAD probes for its addresses went out (at the first tick) */
    uint64_t dad_until_ns;  /* an advertisement for one of them before this is a conflict */
    uint32_t ra_interval_s; /* Router Advertisements: the period; 0 = none */
    uint64_t ra_next_ns;    /* the next unsolicited one (0: at the first tick) */
    uint64_t ra_last_ns;    /* the last one sent, for the 3 s between answers to solicitations */
};

/* ICMP error rate limit: a token bucket, time passed in by the caller. */
struct rt_tb {
    uint64_t interval_ns; /* one token per interval */
    uint32_t burst;
    uint32_t tokens;
    uint64_t last_ns;
};

struct rt_cfg {
    uint64_t icmp_interval_ns; /* default 1 ms */
    uint32_t icmp_burst;       /* default 50 */
    uint64_t reachable_ns;     /* reachable -> stale; default 30 s */
    uint64_t stale_gc_ns;      /* stale and unused -> removed; default 60 s */
    uint64_t retrans_ns;       /* between ARP requests; default 1 s */
    uint32_t max_retries;      /* requests before giving up; default 3 */
    uint32_t pending_max;      /* packets waiting for ARP and ND in all; 0: rt_ctx_init's default (see there) */
    uint64_t delay_ns;         /* ND: DELAY -> PROBE (RFC 4861 DELAY_FIRST_PROBE_TIME); default 5 s */
};

/* Where stages put packets to transmit (meta out_port set). */
struct rt_burst {
    ipc_buf *bufs;
    uint32_t n, cap;
    /* Called when the burst is full, to hand it on (the process loop's
     * flush): software segmentation can make more packets than a burst
     * holds. NULL: a full burst drops (drop_tx_full). */
    void (*flush)(struct rt_burst *tx, void *arg);
    void *arg;
};

struct fib;
struct fib6;
struct neigh_table;
struct neigh6_table;

/* ICMPv6 errors: one token bucket per destination, by a hash of it (a
 * collision shares a bucket, which only limits harder). */
#define RT_ICMP6_TB_SLOTS 64u

/* An ECMP member whose neighbour failed (ecmp.h): its groups skip it. */
#define RT_ECMP_DOWN_MAX 32u
struct rt_ecmp_down {
    uint8_t ip[16]; /* IPv4: a uint32_t, host order */
    uint16_t port;
    bool v6;
    uint64_t failed_ns, wanted_ns; /* wanted: a flow last asked for it (0: never) */
};

struct rt_ctx {
    struct ipc_pool *pool; /* the current zone's (below): the handles the stages work on are its */
    struct fib *fib; /* read only inside the caller's FIB read section */
    struct neigh_table *neigh;
    struct rt_counters *ctr;
    struct rt_port port[RT_MAX_PORTS];
    uint16_t nports;
    uint16_t ip_id; /* IP identification for packets the router originates */
    struct rt_cfg cfg;
    struct rt_tb icmp_tb;
    /* Packets waiting for ARP, per port of their neighbour: each port may
     * hold cfg.pending_max / nports of them, so that a scan of one port's
     * unused addresses cannot take the pool, the table, or another port's
     * share (rt_neigh_hold). Process-local: a restart forgets the queues. */
    uint32_t pending_port[RT_MAX_PORTS];
    /* Where the next search for an incomplete entry to evict starts
     * (rt_neigh_hold, rt_arp_input on a full table): a clock hand, so that
     * each search looks at RT_NEIGH_EVICT_SCAN slots and the next ones
     * follow on. */
    uint32_t neigh_hand;
    /* IPv6: NULL until the caller sets them (rt_ctx_init leaves them NULL):
     * without fib6, IPv6 frames drop as drop_ethertype. fib6 is read only
     * inside the caller's read section (shared with the IPv4 FIB's). */
    struct fib6 *fib6;
    struct neigh6_table *neigh6;
    uint32_t neigh6_hand;
    struct rt_tb icmp6_tb[RT_ICMP6_TB_SLOTS];
    /* Trust zones (docs/security.md): each is a pool of its own; a packet
     * leaves in its egress port's zone, so the loop copies what crosses
     * (rt_zone_move), and a packet held across loops for a neighbour is
     * held in its egress port's zone. One zone: zpool[0] = pool, always.
     * Last, so that the per-packet fields above keep their cache lines. */
    struct ipc_pool *zpool[RT_MAX_ZONES];
    uint8_t port_zone[RT_MAX_PORTS];
    uint8_t zone, nzones;
    /* ECMP members whose neighbour failed (ecmp.c); read per packet only
     * for a group, and only when n_ecmp_down is not 0. */
    uint32_t n_ecmp_down;
    struct rt_ecmp_down ecmp_down[RT_ECMP_DOWN_MAX];
};

/* Slots one eviction search looks at: a full table costs a new neighbour
 * that many reads at most, whatever a scan sends. */
#define RT_NEIGH_EVICT_SCAN 64u

/* The least a port's share of the packets waiting for ARP and ND can be,
 * and the least cfg.pending_max can be: a small pool still lets a port
 * resolve a neighbour with a few packets held. */
#define RT_PENDING_MIN 16u

/* How many packets waiting for ARP one port's neighbours may hold: an even
 * share of cfg.pending_max, RT_PENDING_MIN at least. */
static inline uint32_t rt_pending_share(const struct rt_ctx *ctx)
{
    uint32_t s = ctx->cfg.pending_max / (ctx->nports ? ctx->nports : 1u);
    return s > RT_PENDING_MIN ? s : RT_PENDING_MIN;
}

/* How many packets one neighbour (ARP or ND) may hold: its queue, or its
 * port's whole share if that is smaller (a small pool split between many
 * ports). Past it a packet is dropped as drop_pending_full. */
static inline uint32_t rt_neigh_qlimit(const struct rt_ctx *ctx)
{
    uint32_t s = rt_pending_share(ctx);
    return s < NEIGH_QMAX ? s : NEIGH_QMAX;
}

/** Defaults for @cfg (RFC 1812 §4.3.2.8 rate limit, Linux-like ARP timers). */
void rt_cfg_default(struct rt_cfg *cfg);

/** Set up @ctx (zeroes it, copies @cfg or the defaults, fills the ICMP bucket). */
void rt_ctx_init(struct rt_ctx *ctx, struct ipc_pool *pool, struct fib *fib, struct neigh_table *neigh,
                 struct rt_counters *ctr, const struct rt_cfg *cfg);

static inline void rt_count(struct rt_ctx *ctx, enum rt_ctr c)
{
    ctx->ctr->c[c]++;
}

/* First octets with a meaning of their own (RFC 1812 §5.3.7, RFC 1122 §3.2.1.3). */
#define RT_NET_THIS 0u       /* 0/8: "this network" */
#define RT_NET_LOOPBACK 127u /* 127/8 */
#define RT_NET_CLASS_D 224u  /* 224/4: multicast */
#define RT_NET_CLASS_E 240u  /* 240/4: reserved, and 255.255.255.255 */
#define RT_IP_LIMITED_BCAST 0xffffffffu

/* A source that names no single host: 0/8, 127/8, class D and E (§4.3.2.7, §5.3.7). */
static inline bool rt_src_not_host(uint32_t ip)
{
    uint32_t a = ip >> 24;
    return a == RT_NET_THIS || a == RT_NET_LOOPBACK || a >= RT_NET_CLASS_D;
}

static inline bool rt_ip_is_multicast(uint32_t ip)
{
    uint32_t a = ip >> 24;
    return a >= RT_NET_CLASS_D && a < RT_NET_CLASS_E;
}

#define RT_PLEN_P2P 31u /* /31 and /32 subnets have no broadcast address (RFC 3021) */

enum rt_addr_kind {
    RT_ADDR_OTHER,
    RT_ADDR_LOCAL,        /* one of the router's addresses */
    RT_ADDR_SUBNET_BCAST, /* a connected subnet's broadcast address (RFC 1812 §5.3.5.2) */
};

/*
 * What @ip (host byte order) is to the router, the first port that says
 * wins; and in the same pass over the ports whether @src is one of the
 * router's addresses (*src_ours): the receive path asks both of every
 * packet, and one pass costs it less than two.
 */
static inline enum rt_addr_kind rt_addr_kind_src(const struct rt_ctx *ctx, uint32_t ip, uint32_t src, bool *src_ours)
{
    enum rt_addr_kind kind = RT_ADDR_OTHER;
    bool ours = false;
    for (unsigned p = 0; p < ctx->nports; p++) {
        const struct rt_port *pt = &ctx->port[p];
        if (!pt->mtu)
            continue;
        ours |= pt->ip == src;
        if (kind != RT_ADDR_OTHER)
            continue;
        if (pt->ip == ip) {
            kind = RT_ADDR_LOCAL;
        } else if (pt->plen < RT_PLEN_P2P) {
            uint32_t host = ~0u >> pt->plen;
            if (((ip ^ pt->ip) & ~host) == 0 && (ip & host) == host)
                kind = RT_ADDR_SUBNET_BCAST;
        }
    }
    *src_ours = ours;
    return kind;
}

/* What @ip (host byte order) is to the router: one pass over its ports. */
static inline enum rt_addr_kind rt_addr_kind(const struct rt_ctx *ctx, uint32_t ip)
{
    bool unused;
    return rt_addr_kind_src(ctx, ip, ip, &unused);
}

/** Queue @b for transmission on meta out_port; a full burst drops and counts it. */
void rt_tx(struct rt_ctx *ctx, struct rt_burst *tx, ipc_buf b);

/**
 * Cut packet @head (a frame or a chain) to @len bytes: what Ethernet padded
 * past the IP length goes, a chain's frames beyond it back to the pool.
 * IPv4 and IPv6 both, before anything reads the packet's length.
 */
void rt_chain_trim(struct ipc_pool *pool, ipc_buf head, uint32_t len);

/** The pool of port @port's zone: where its held packets live. */
static inline struct ipc_pool *rt_port_pool(const struct rt_ctx *ctx, uint16_t port)
{
    return port < RT_MAX_PORTS ? ctx->zpool[ctx->port_zone[port]] : ctx->pool;
}

/** Port @port's zone (the current one for no port). */
static inline unsigned rt_port_zone(const struct rt_ctx *ctx, uint16_t port)
{
    return port < RT_MAX_PORTS ? ctx->port_zone[port] : ctx->zone;
}

/**
 * Make zone @z the current one (ctx->pool): what @tx holds is handed on
 * first (tx->flush), since a burst holds one zone's handles.
 */
void rt_zone_switch(struct rt_ctx *ctx, unsigned z, struct rt_burst *tx);

/**
 * Packet @b of the current zone, for port @port: itself if the port is in
 * the current zone, else a copy in the port's zone's pool and @b freed.
 * IPC_BUF_NONE when that pool is empty (@b dropped, drop_no_bufs).
 */
ipc_buf rt_zone_move(struct rt_ctx *ctx, ipc_buf b, uint16_t port);

/** Free one packet (rare paths; the forwarding loop frees its drops in one call). */
void rt_drop(struct rt_ctx *ctx, ipc_buf b, enum rt_ctr why);

#endif
