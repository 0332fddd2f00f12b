/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest.h: the manifest as plain C data. sup_manifest_load_*()
 * parse an INI manifest and validate all of it, cross references included,
 * before the supervisor creates anything; what comes out is fully
 * resolved: defaults filled in, units converted to bits/s, bytes and ms,
 * names turned into indices, and one service entry for every process the
 * manifest implies. The supervisor's setup code (pool, rings, devices, spawn)
 * reads only this struct. docs/manifest.md documents every key; the key
 * tables in manifest_schema.c are the one place where defaults and ranges live.
 */
#ifndef SUP_MANIFEST_H
#define SUP_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tables/shaper.h"

#define SUP_ZONES_MAX 16    /* trust zones ([port] zone), a pool each: IPC_MAX_ZONES */
#define SUP_NAME_MAX 15     /* port and class names (a port name ends up in netdev-like names) */
#define SUP_IFNAME_MAX 15   /* IFNAMSIZ - 1 */
#define SUP_NETNS_MAX 63
#define SUP_USER_MAX 32
#define SUP_PATH_MAX 80     /* run_dir: the control socket path must fit sun_path */
#define SUP_SERVICE_MAX 27  /* "driver-" + a port name + ".63" */
#define SUP_SECTION_MAX 48  /* the longest valid section header is "class NAME NAME" */
#define SUP_PORTS_MAX 32    /* each port costs a driver (and maybe a shaper) process */
#define SUP_SRC_KEYS 28
/* The ports of one driver group ([port] group): each member's device is one
 * of a driver's five kind fds (supervisor/setup.c). */
#define SUP_GROUP_MAX 5
#define SUP_DRIVERS_MAX 16 /* driver instances (ports x queues): the router takes a ring from each */
/* With a control namespace each port has a second router port, its
 * host-side interface, after the manifest's (IPC_MAX_PORTS in all). */
#define SUP_CP_PORTS_MAX 8
#define SUP_MANIFEST_ERR_MAX 512
#define SUP_RESTART_LIMIT_MAX 1000 /* the supervisor keeps this many deaths + 1 per service */

/* Where an object came from, so that later errors (at setup or run time)
 * can name the manifest line too. key_line[] is indexed by the section's
 * SUP_<SECTION>_<KEY> enum; 0 means "not in the manifest, default used". */
struct sup_src {
    char section[SUP_SECTION_MAX]; /* the header, normalised: "port wan" */
    unsigned line;                 /* line of the header; 0: implied */
    unsigned key_line[SUP_SRC_KEYS];
};

/* An IPv4 address with a prefix length; addr is in host byte order. */
struct sup_prefix {
    uint32_t addr;
    uint8_t len;
};

/* An IPv6 address with a prefix length; addr in network byte order, as in
 * packets and the IPv6 FIB (tables/fib6.h). */
struct sup_prefix6 {
    uint8_t addr[16];
    uint8_t len;
};

/* IPv6 addresses a port may have: the manifest's `address6` entries, and
 * one more for the link-local address derived from the MAC when none of
 * them is link-local (TBL_ADDR6_MAX in tables/config.h). */
#define SUP_ADDR6_MAX 7

enum sup_router_key {
    SUP_ROUTER_NAME,
    SUP_ROUTER_POOL_BUFFERS,
    SUP_ROUTER_FRAME_SIZE,
    SUP_ROUTER_RING_SIZE,
    SUP_ROUTER_USER,
    SUP_ROUTER_GROUP,
    SUP_ROUTER_UIDS,
    SUP_ROUTER_RUN_DIR,
    SUP_ROUTER_STATE_DIR,
    SUP_ROUTER_ICMP_RATE,
    SUP_ROUTER_ICMP_BURST,
    SUP_ROUTER_STAGES,
    SUP_ROUTER_CONTROL_GROUP,
    SUP_ROUTER_ORPHAN_GRACE,
    SUP_ROUTER_HOARD_PCT,
    SUP_ROUTER_HOARD_MS,
    SUP_ROUTER_RESTART_CPU_MAX,
    SUP_ROUTER_CONTROL_NETNS,
    SUP_ROUTER_NEIGH_REACHABLE,
    SUP_ROUTER_NEIGH_RETRANS,
    SUP_ROUTER_NEIGH_PROBES,
    SUP_ROUTER_NEIGH_DELAY,
    SUP_ROUTER_NEIGH_STALE,
    SUP_ROUTER_NKEYS
};

/* A range of uids, both ends included. */
struct sup_uids {
    uint32_t first, last;
};

/* The uids `uids` may hold: not 0 (root), and below 2^31, since some
 * programs take a uid for a signed 32-bit number (and 2^32 - 1 is -1). */
#define SUP_UID_MAX 2147483647u
#define SUP_UID_OVERFLOW 65534u  /* nobody: the kernel's overflow uid */
#define SUP_UID_MINUS1_16 65535u /* (uid_t)-1 to the 16-bit system calls */

struct sup_router {
    struct sup_src src;
    char name[33];
    uint32_t pool_buffers;
    uint32_t frame_size;  /* a power of two, 2048..IPC_FRAME_MAX; afxdp ports take 2048 or 4096 */
    uint32_t ring_size;   /* a power of two */
    /* Who the services run as: with `user` set, every service runs as that
     * user (user and group resolved: the group is the user's primary group
     * by default); otherwise user and group are "" and each service has a
     * uid of its own from `uids` (sup_service.uid). */
    char user[SUP_USER_MAX + 1];
    char group[SUP_USER_MAX + 1];
    struct sup_uids uids; /* the range each service's own uid comes from */
    char run_dir[SUP_PATH_MAX + 1];
    char state_dir[SUP_PATH_MAX + 1]; /* "": run_dir; where `route save` writes and `up` reads */
    uint32_t icmp_rate;   /* ICMP errors per second; 0: never send them */
    uint32_t icmp_burst;
    bool stages;          /* count CPU cycles per stage in every service (stats --stages) */
    char control_group[SUP_USER_MAX + 1]; /* members may run the read commands; "": root only */
    uint32_t orphan_grace_ms; /* services without a supervisor forward this long, then stop */
    uint32_t hoard_pct; /* a service holding more of the pool than this ... */
    uint32_t hoard_ms;  /* ... for this long is restarted, its buffers reclaimed */
    uint32_t restart_cpu_max_pct; /* a service restarting in a loop: its CPU quota (cgroup.c); 0: none */
    /* The control namespace (supervisor/cp.c): each port's host-side
     * interface there, served by its cp-PORT service; "": none. */
    char control_netns[SUP_NETNS_MAX + 1];
    /* The neighbour timers of ARP and ND, as Linux's neigh parms
     * (base_reachable_time_ms, retrans_time_ms, ucast_solicit,
     * delay_first_probe_time, gc_stale_time): how soon a silent next hop
     * is noticed, and an ECMP group moves its flows. */
    uint32_t neigh_reachable_ms;
    uint32_t neigh_retrans_ms;
    uint32_t neigh_probes;
    uint32_t neigh_delay_ms;
    uint32_t neigh_stale_ms;
};

enum sup_driver { SUP_DRIVER_TAP = 1, SUP_DRIVER_AFXDP = 2 };
enum sup_xdp_mode { SUP_XDP_AUTO, SUP_XDP_ZEROCOPY, SUP_XDP_COPY, SUP_XDP_SKB };
enum sup_steer { SUP_STEER_FORWARD_ONLY, SUP_STEER_ALL };

/* TAP offloads (TUNSETOFFLOAD); TSO and USO need csum, as in the kernel. */
#define SUP_OFFLOAD_CSUM 0x1u
#define SUP_OFFLOAD_TSO4 0x2u
#define SUP_OFFLOAD_TSO6 0x4u
#define SUP_OFFLOAD_USO 0x8u

enum sup_port_key {
    SUP_PORT_DRIVER,
    SUP_PORT_IFNAME,
    SUP_PORT_ADDRESS,
    SUP_PORT_MTU,
    SUP_PORT_NETNS,
    SUP_PORT_MAC,
    SUP_PORT_OFFLOADS,
    SUP_PORT_RX_INFLIGHT,
    SUP_PORT_QUEUE_LEN,
    SUP_PORT_XDP_MODE,
    SUP_PORT_STEER,
    SUP_PORT_QUEUES,
    SUP_PORT_BUSY_POLL,
    SUP_PORT_BUSY_POLL_US,
    SUP_PORT_BUSY_POLL_BUDGET,
    SUP_PORT_NAPI_DEFER_HARD_IRQS,
    SUP_PORT_GRO_FLUSH_TIMEOUT,
    SUP_PORT_RA,
    SUP_PORT_RA_INTERVAL,
    SUP_PORT_ADDRESS6,
    SUP_PORT_PERSIST,
    SUP_PORT_ZONE,
    SUP_PORT_CP_IFNAME,
    SUP_PORT_PARENT,
    SUP_PORT_VLAN,
    SUP_PORT_UNTAGGED,
    SUP_PORT_GROUP,
    SUP_PORT_NKEYS
};

struct sup_port {
    struct sup_src src;
    char name[SUP_NAME_MAX + 1];
    enum sup_driver driver;
    char ifname[SUP_IFNAME_MAX + 1];
    struct sup_prefix address; /* the router's address; the connected network is address/len */
    uint32_t mtu;
    char netns[SUP_NETNS_MAX + 1]; /* "" = the supervisor's own namespace */
    bool has_mac;
    uint8_t mac[6];
    /* driver = tap */
    uint32_t offloads;    /* SUP_OFFLOAD_* */
    uint32_t rx_inflight; /* reads kept in flight */
    bool persist;         /* the TAP device outlives the supervisor (TUNSETPERSIST) */
    uint32_t queue_len;   /* the device's queue of frames for us to read (its txqueuelen) */
    /* driver = afxdp */
    enum sup_xdp_mode xdp_mode;
    enum sup_steer steer;
    uint32_t queues;
    bool busy_poll;                /* the driver runs the device's NAPI itself (SO_PREFER_BUSY_POLL) */
    uint32_t busy_poll_us;         /* SO_BUSY_POLL */
    uint32_t busy_poll_budget;     /* SO_BUSY_POLL_BUDGET */
    uint32_t napi_defer_hard_irqs; /* the device's, while the port is up */
    uint32_t gro_flush_timeout;    /* ns, the device's, while the port is up */
    bool ra;                       /* send Router Advertisements (RFC 4861 §6) */
    uint32_t ra_interval;          /* s, their period (MaxRtrAdvInterval) */
    int shaper; /* index into sup_manifest.shapers, or -1 */
    /* Its trust zone: ports of one zone share a pool (docs/security.md).
     * The index counts distinct names in port order (the checks set it). */
    char zone_name[SUP_NAME_MAX + 1];
    unsigned zone;
    /* IPv6: the `address6` entries in manifest order, then (added by the
     * checks unless one was given) the EUI-64 link-local fe80::/64 one. */
    struct sup_prefix6 addr6[SUP_ADDR6_MAX + 1];
    unsigned addr6_line[SUP_ADDR6_MAX + 1]; /* 0: derived */
    uint8_t naddr6;
    char cp_ifname[SUP_IFNAME_MAX + 1]; /* its interface in [router] control_netns; "": cp-NAME */
    /* A VLAN sub-interface (supervisor/vlan_manifest.c): served by its
     * parent's driver, with no device or process of its own. */
    char parent_name[SUP_NAME_MAX + 1];
    int vlan_parent;   /* the parent's index; -1: not a VLAN port */
    uint8_t vlan_ntags; /* 1: 802.1Q (vlan = ID); 2: 802.1ad (vlan = OUTER.INNER) */
    uint16_t vlan_id[2]; /* outer first */
    bool untagged_parent; /* a parent's: untagged frames are its own (untagged = parent), not dropped */
    /* A driver group (supervisor/group_manifest.c): the ports of one group
     * share one driver process, driver-GROUP; "": the port has its own. */
    char group_name[SUP_NAME_MAX + 1];
    /* The running manifest's only: a slot whose port a reload removed while
     * others stayed after it (supervisor/port_slots.c). No name, no network. */
    bool vacant;
};

enum sup_route_key { SUP_ROUTE_VIA, SUP_ROUTE_PORT, SUP_ROUTE_NEXTHOP, SUP_ROUTE_NKEYS };

/* A route's `nexthop` lines: as many as a FIB group holds (FIB_MP_MAX and
 * FIB_MP_WEIGHT_MAX, tables/fib_group.h; supervisor/route_mpath.c checks). */
#define SUP_ROUTE_NH_MAX 16
#define SUP_ROUTE_WEIGHT_MAX 256

/* One `nexthop = ADDRESS [port NAME] [weight W]` of a multipath route. */
struct sup_route_nh {
    uint32_t via;    /* IPv4, host order */
    uint8_t via6[16];
    int port;        /* resolved by the checks: given, or the port whose network holds the address */
    uint16_t weight; /* 1..SUP_ROUTE_WEIGHT_MAX */
    unsigned line;
    char port_name[SUP_NAME_MAX + 1]; /* "" until the checks, unless given */
};

struct sup_route {
    struct sup_src src;
    struct sup_prefix prefix; /* no host bits */
    bool direct;              /* port = NAME: directly connected, no gateway */
    uint32_t via;             /* gateway (host order), when !direct */
    int port;                 /* egress port index, resolved either way */
    char port_name[SUP_NAME_MAX + 1];
    /* An IPv6 route ([route 2001:db8::/32]): prefix6 and via6 instead of
     * prefix and via; a link-local via6 needs port too (its scope). */
    bool v6;
    struct sup_prefix6 prefix6;
    uint8_t via6[16];
    /* Several next hops (ECMP, supervisor/manifest_routes.c): nnh `nexthop`
     * lines instead of via and port, which then hold the first's. */
    uint8_t nnh;
    struct sup_route_nh nh[SUP_ROUTE_NH_MAX];
};

enum sup_neigh_key { SUP_NEIGH_MAC, SUP_NEIGH_PORT, SUP_NEIGH_NKEYS };

struct sup_neigh {
    struct sup_src src;
    bool v6;          /* [neigh 2001:db8::2]: addr6, not addr */
    uint8_t addr6[16];
    uint32_t addr;
    uint8_t mac[6];
    int port; /* resolved: given, or the port whose network holds addr */
    char port_name[SUP_NAME_MAX + 1];
};

enum sup_shaper_key { SUP_SHAPER_RATE, SUP_SHAPER_BURST, SUP_SHAPER_OVERHEAD, SUP_SHAPER_NKEYS };

struct sup_shaper {
    struct sup_src src;
    int port;
    char port_name[SUP_NAME_MAX + 1];
    uint64_t rate;     /* bits per second, on the wire (overhead included) */
    uint32_t burst;    /* bytes */
    uint32_t overhead; /* bytes added to each frame's length for the bucket */
    int default_class; /* index into sup_manifest.classes, or -1 when the port has no classes */
    size_t nclasses;
};

/* Classification: every field present must match (AND); the bits are the
 * shaper's own (SHP_MATCH_*, tables/shaper.h), passed on as they are. */
struct sup_match {
    uint32_t fields; /* SHP_MATCH_* */
    uint8_t dscp;
    uint8_t proto;
    uint16_t sport_lo, sport_hi;
    uint16_t dport_lo, dport_hi;
    struct sup_prefix src, dst;    /* no host bits */
    struct sup_prefix6 src6, dst6; /* SHP_MATCH_SRC6/DST6: IPv6 prefixes, no host bits */
    uint32_t mark;                 /* SHP_MATCH_MARK: the filter's mark */
};

enum sup_class_key {
    SUP_CLASS_RATE,
    SUP_CLASS_CEIL,
    SUP_CLASS_PRIO,
    SUP_CLASS_MATCH,
    SUP_CLASS_DEFAULT,
    SUP_CLASS_NKEYS
};

struct sup_class {
    struct sup_src src;
    int port;
    char port_name[SUP_NAME_MAX + 1];
    char name[SUP_NAME_MAX + 1];
    uint64_t rate; /* guaranteed, bits per second */
    uint64_t ceil; /* may borrow up to this */
    uint32_t prio; /* 0 is served first */
    bool is_default;
    struct sup_match match;
};

/* [routes]: routes from a routing daemon (supervisor/routes.c,
 * services/routes/): a kernel table in a control namespace, FRR's FPM. */
enum sup_routes_key { SUP_ROUTES_NETNS, SUP_ROUTES_TABLE, SUP_ROUTES_GRACE, SUP_ROUTES_FPM, SUP_ROUTES_NKEYS };

struct sup_routes {
    struct sup_src src;            /* src.line 0: no [routes] section, no rr-routes */
    char netns[SUP_NETNS_MAX + 1]; /* the control namespace; "": the supervisor's own */
    uint32_t table;                /* the kernel table followed; 0: none (FPM only) */
    uint32_t grace_s;              /* a source gone: its routes stay this long */
    bool fpm;                      /* listen for FPM (dplane_fpm_nl) at fpm_addr:fpm_port */
    bool fpm_v6;
    uint8_t fpm_addr[16];
    uint16_t fpm_port;
};

/* [filter]: the stateful filter and NAT, rr-filter (docs/filter.md). */
enum sup_filter_key { SUP_FILTER_RULES, SUP_FILTER_CONNTRACK_MAX, SUP_FILTER_PORTS, SUP_FILTER_NKEYS };

struct sup_filter_ports {
    uint8_t n; /* 0: every port */
    char name[SUP_PORTS_MAX][SUP_NAME_MAX + 1];
};

struct sup_filter {
    struct sup_src src;            /* src.line 0: no [filter] section, no rr-filter */
    char rules[SUP_PATH_MAX + 1];  /* the ruleset's file: root's, as a binary is (filter_setup.c) */
    uint32_t conntrack_max;        /* the connection table's bound */
    struct sup_filter_ports ports; /* the ports whose packets pass the filter, as named */
    uint32_t port_mask;            /* ... resolved (the checks): bit P for port P */
};

enum sup_restart { SUP_RESTART_ALWAYS, SUP_RESTART_ON_FAILURE, SUP_RESTART_NEVER };
enum sup_sched { SUP_SCHED_NORMAL, SUP_SCHED_BATCH };
/* SUP_SVC_CP: a port's host-side interface in the control namespace, an
 * rr-tap of its own (supervisor/cp.c). SUP_SVC_ROUTES: rr-routes, the
 * parser of a routing daemon's messages (supervisor/routes.c). */
enum sup_service_kind { SUP_SVC_ROUTER, SUP_SVC_DRIVER, SUP_SVC_SHAPER, SUP_SVC_CP, SUP_SVC_ROUTES, SUP_SVC_FILTER };
/* The nice of a data-path service (router, driver, shaper, filter) whose
 * manifest does not set one: the path runs before the machine's ordinary
 * work, as the kernel's own forwarding (softirq) does. The control plane's
 * services (cp-*, routes) keep 0. */
#define SUP_PATH_NICE (-10)

enum sup_service_key {
    SUP_SERVICE_RESTART,
    SUP_SERVICE_HANG_MS,
    SUP_SERVICE_RESTART_LIMIT,
    SUP_SERVICE_RESTART_WINDOW,
    SUP_SERVICE_CPU,
    SUP_SERVICE_POLL_US,
    SUP_SERVICE_BINARY,
    SUP_SERVICE_SCHED,
    SUP_SERVICE_UPGRADE_TIMEOUT,
    SUP_SERVICE_NICE,
    SUP_SERVICE_CPU_MAX_PCT,
    SUP_SERVICE_NKEYS
};

struct sup_service {
    struct sup_src src; /* src.line == 0: no [service] section, all defaults */
    char name[SUP_SERVICE_MAX + 1];
    enum sup_service_kind kind;
    int port; /* driver and shaper services: their port; -1 for the router */
    int queue; /* driver services: the port's queue (0..queues - 1); 0 otherwise */
    /* A driver group's service (supervisor/group_manifest.c): bit P for
     * each port P it serves, port its first; 0: a driver of one port. */
    uint32_t members;
    enum sup_restart restart;
    uint32_t hang_ms;
    uint32_t restart_limit;
    uint32_t restart_window_ms;
    int32_t cpu; /* -1: not pinned */
    uint32_t poll_us;
    char binary[SUP_PATH_MAX + 1]; /* "": the kind's own (rr-router, rr-tap, ...) */
    enum sup_sched sched;          /* SCHED_OTHER, or SCHED_BATCH: woken, it does not preempt */
    uint32_t upgrade_timeout_ms;   /* `upgrade`: the new binary ready within this, or rolled back */
    int32_t nice;                  /* its nice value: below 0, the data path before other work */
    uint32_t cpu_max_pct;          /* % of one CPU it may take (cgroup.c); 0: no limit */
    /* Its own uid, also its gid: router.uids.first + its index in
     * sup_manifest.services, the same across restarts and for its standby;
     * 0 when router.user is set and every service runs as that user. */
    uint32_t uid;
};

struct sup_manifest {
    struct sup_router router;
    struct sup_port *ports;
    size_t nports;
    struct sup_route *routes;
    size_t nroutes;
    struct sup_neigh *neighs;
    size_t nneighs;
    struct sup_shaper *shapers;
    size_t nshapers;
    struct sup_class *classes; /* in manifest order: the order they are tried in */
    size_t nclasses;
    struct sup_routes daemon; /* [routes]: routes from a routing daemon */
    struct sup_filter filter; /* [filter]: rr-filter */
    /* Every service the manifest implies, in start order: router, then
     * driver-PORT for each port, then shaper-PORT for each shaped port,
     * then cp-PORT for each port when control_netns is set, then routes
     * if there is a [routes] section. */
    struct sup_service *services;
    size_t nservices;
    uint64_t text_hash; /* of the text it was read from (supervisor/adopt.c) */
    char *text;         /* that text: `show running` and `addr` edit it (supervisor/running.c) */
};

struct sup_manifest_err {
    unsigned line; /* 0 when the error concerns no one line */
    char msg[SUP_MANIFEST_ERR_MAX]; /* "edge.ini:14: [port wan] address: ..." */
};

/* The manifest used when `ringrouter up` has no -c: the two-TAP demo. */
extern const char sup_default_manifest[];
#define SUP_DEFAULT_MANIFEST_NAME "<built-in>"

/**
 * sup_manifest_load_string() - parse and validate a manifest held in memory.
 * @name: what error messages call it (a file name, or SUP_DEFAULT_MANIFEST_NAME)
 * @text: the manifest, NUL-terminated
 * @m:    filled in on success; zeroed on failure (sup_manifest_free is still safe)
 * @err:  on failure, the one error message; may be NULL
 *
 * Return: 0, -EINVAL for an invalid manifest (err says why and where), or
 * -ENOMEM. Stops at the first error.
 */
int sup_manifest_load_string(const char *name, const char *text, struct sup_manifest *m,
                             struct sup_manifest_err *err);

/**
 * sup_manifest_load_file() - read @path and sup_manifest_load_string() it.
 *
 * Return: as sup_manifest_load_string(), plus -errno when the file cannot be
 * opened or read (err then reads "PATH: cannot read: REASON") and -EFBIG for
 * a file larger than 1 MiB.
 */
int sup_manifest_load_file(const char *path, struct sup_manifest *m, struct sup_manifest_err *err);

/* sup_manifest_free() - release what a load allocated; leaves @m zeroed. */
void sup_manifest_free(struct sup_manifest *m);

/* A VLAN port's `vlan` as the manifest spells it: "10", or "100.10" for
 * 802.1ad (vlan_manifest.c). */
const char *sup_vlan_str(const struct sup_port *p, char *buf, size_t len);

/* A reload that adds, removes or retags a VLAN port, or changes a parent's
 * `untagged`: refused, with @why (vlan_manifest.c). */
bool sup_vlan_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len);

/* A route's next hops as `route add` words ("via A", "port P", "via A
 * weight 2 via B weight 1"), into @buf; whether two routes' next hops are
 * the same (a multipath route's as a set, weights included). */
const char *sup_route_nh_str(const struct sup_route *r, char *buf, size_t len);
bool sup_route_same_nh(const struct sup_route *a, const struct sup_route *b);

/* Driver groups (group_manifest.c): the first port of group @name (-1:
 * none), and the ports of port @p's group as a mask (bit P; 0: none). */
int sup_group_first(const struct sup_manifest *m, const char *name);
uint32_t sup_group_members(const struct sup_manifest *m, size_t p);

/* A reload that adds, removes or moves a port of a driver group: refused,
 * with @why (group_manifest.c). */
bool sup_group_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len);

/* Lookups by name; -1 when there is none. */
int sup_manifest_port(const struct sup_manifest *m, const char *name);
int sup_manifest_service(const struct sup_manifest *m, const char *name);

/* Strict IPv4 parsers shared with the control commands: "a.b.c.d" and
 * "a.b.c.d/len" (no leading zeros, nothing trailing); host byte order. */
/**
 * Why @gw cannot be a next hop or neighbour on port @port of @m (a martian,
 * the router's own address, the network's or its broadcast address), written
 * into @why and returned; NULL if it can. The manifest and `route add` both
 * ask this.
 */
const char *sup_gateway_why(const struct sup_manifest *m, uint32_t gw, int port, char *why, size_t len);

bool sup_parse_addr(const char *v, uint32_t *out);
/* "xx:xx:xx:xx:xx:xx", any byte values (the caller refuses multicast and zero). */
bool sup_parse_mac(const char *v, uint8_t mac[6]);
bool sup_parse_prefix(const char *v, struct sup_prefix *out);

/* Levenshtein distance between @a and @b, case-blind (99 past 62 chars):
 * the "did you mean" of the manifest's keys and of the command line. */
unsigned sup_edit_distance(const char *a, const char *b);

/**
 * sup_parse_rate() - the one rate parser of the manifest and the command
 * line: a number (decimals allowed, exact) with tc's units, bit, kbit, mbit,
 * gbit, tbit for bits per second and bps, kbps, mbps, gbps, tbps for bytes
 * per second (so 50mbps is 400mbit), within 1kbit..1tbit; a bare number is
 * refused (100 what?). Returns NULL with *@bits, or @why filled.
 */
const char *sup_parse_rate(const char *v, uint64_t *bits, char *why, size_t len);

/* ---- IPv6 (supervisor/manifest_v6.c), shared with the control commands ---- */

/* "2001:db8::1" and "2001:db8::/32", each in its one canonical spelling
 * (RFC 5952: lower case, longest run of zeros as ::); @canon, when not
 * NULL, gets the canonical form of an address that parsed but is spelt
 * otherwise (and the parse then fails). */
bool sup_parse_addr6(const char *v, uint8_t out[16], char *canon, size_t clen);
bool sup_parse_prefix6(const char *v, struct sup_prefix6 *out, char *canon, size_t clen);
char *sup_addr6_str(const uint8_t a[16], char *buf, size_t len);
bool sup_in6(const struct sup_prefix6 *net, const uint8_t a[16]);
void sup_mask6(uint8_t a[16], unsigned len);
static inline bool sup_ll6(const uint8_t a[16])
{
    return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}
/* Why no port or next hop may have @a (unspecified, loopback, multicast,
 * IPv4-mapped), or NULL. */
const char *sup_martian6(const uint8_t a[16]);
/* The port whose global IPv6 networks hold @a; -1 if none (link-local
 * addresses are on every port: this never answers for them). */
int sup_port_for6(const struct sup_manifest *m, const uint8_t a[16]);
/* Why @gw cannot be a next hop or neighbour on port @port; NULL if it can. */
const char *sup_gateway6_why(const struct sup_manifest *m, const uint8_t gw[16], int port, char *why, size_t len);
/* Port @i's MAC: the manifest's, or the default 02:72:72:00:00:i+1. */
void sup_port_mac(const struct sup_manifest *m, int i, uint8_t mac[6]);
/* The EUI-64 link-local address of @mac (RFC 4291 §2.5.1, appendix A). */
void sup_ll6_from_mac(const uint8_t mac[6], uint8_t out[16]);

/* sup_rate_format() - write a rate in bits/s in the one style the supervisor
 * prints rates in: the largest unit it reaches, exact decimals ("100mbit",
 * "49.8mbit", "12bit"), which sup_parse_rate reads back; returns @buf. */
char *sup_rate_format(uint64_t bits, char *buf, size_t len);

#endif /* SUP_MANIFEST_H */
