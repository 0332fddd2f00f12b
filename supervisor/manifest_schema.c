/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest_schema.c: the key schema. One table per section type
 * holds each key's name, parser, range and default, and is the one place
 * where they live (docs/manifest.md follows it). It also owns what a
 * section header means: which types exist, how many names each takes, what
 * a valid name is, which sections may not be given twice, and the object a
 * header creates with its defaults filled in. Then each "key = value" the
 * reader hands over is looked up here ("did you mean" for a near miss),
 * checked for a duplicate, and parsed into that object.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/pool.h"
#include "supervisor/manifest_impl.h"

/* Bounded copy; callers have checked the length, this only makes sure. */
static void sup_copy(char *dst, size_t len, const char *src)
{
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Levenshtein distance, case-blind, for "did you mean" on unknown keys (and
 * on the command line: supervisor/cli.c). */
unsigned sup_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned row[64];
    if (la > 62 || lb > 62)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned up = row[j];
            unsigned cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            unsigned best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* ---- the key tables: names, kinds, ranges and defaults ---- */

#define KEY(s, f) .off = offsetof(s, f), .size = sizeof(((s *)0)->f)

static const struct sup_word sup_bool_words[] = {{"yes", 1}, {"no", 0}, {NULL, 0}};
static const struct sup_word sup_on_off_words[] = {{"on", 1}, {"off", 0}, {NULL, 0}};

static const struct sup_key sup_router_keys[] = {
    [SUP_ROUTER_NAME] = {"name", sup_p_ident, KEY(struct sup_router, name), 1, 32, .def = "ringrouter"},
    [SUP_ROUTER_POOL_BUFFERS] = {"pool_buffers", sup_p_u32, KEY(struct sup_router, pool_buffers), 1024, 4194304,
                                 .def = "16384"},
    [SUP_ROUTER_FRAME_SIZE] = {"frame_size", sup_p_frame, KEY(struct sup_router, frame_size), IPC_FRAME_DEFAULT,
                               IPC_FRAME_MAX,
                               .def = "2048"},
    [SUP_ROUTER_RING_SIZE] = {"ring_size", sup_p_pow2, KEY(struct sup_router, ring_size), 64, 65536,
                              .def = "1024"},
    /* "": no shared user; each service runs as its own uid from uids */
    [SUP_ROUTER_USER] = {"user", sup_p_user, KEY(struct sup_router, user), .def = ""},
    /* "": the user's primary group (only with user) */
    [SUP_ROUTER_GROUP] = {"group", sup_p_user, KEY(struct sup_router, group), .def = ""},
    /* Outside every range systemd documents (system 0-999, regular
     * 1000-60000, homed 60001-60513, DynamicUser 61184-65519, nobody 65534,
     * nspawn containers 524288-1879048191) and below 2^31: no passwd entry
     * is needed, as with systemd's DynamicUser. */
    [SUP_ROUTER_UIDS] = {"uids", sup_p_uids, KEY(struct sup_router, uids), 1, SUP_UID_MAX,
                         .def = "1900000000-1900065535"},
    [SUP_ROUTER_RUN_DIR] = {"run_dir", sup_p_path, KEY(struct sup_router, run_dir), 1, SUP_PATH_MAX,
                            .def = "/run/ringrouter"},
    /* no default: run_dir (supervisor/route.c, sup_state_dir) */
    [SUP_ROUTER_STATE_DIR] = {"state_dir", sup_p_path, KEY(struct sup_router, state_dir), 1, SUP_PATH_MAX},
    [SUP_ROUTER_ICMP_RATE] = {"icmp_rate", sup_p_u32, KEY(struct sup_router, icmp_rate), 0, 1000000,
                              .def = "1000"},
    [SUP_ROUTER_ICMP_BURST] = {"icmp_burst", sup_p_u32, KEY(struct sup_router, icmp_burst), 1, 100000,
                               .def = "50"},
    /* off: each stage hook is one predictable branch; on: a TSC read per stage */
    [SUP_ROUTER_STAGES] = {"stages", sup_p_bool, KEY(struct sup_router, stages), .words = sup_on_off_words,
                           .def = "off"},
    /* whose members may read the control socket (ctl.c); a group that does not exist is skipped */
    [SUP_ROUTER_CONTROL_GROUP] = {"control_group", sup_p_user, KEY(struct sup_router, control_group),
                                  .def = "ringrouter"},
    /* how long services forward without a supervisor before they stop: a
     * new one adopts them within it (supervisor/adopt.c) */
    [SUP_ROUTER_ORPHAN_GRACE] = {"orphan_grace_ms", sup_p_u32, KEY(struct sup_router, orphan_grace_ms), 1000,
                                 86400000, .def = "60000"},
    /* a service holding more than hoard_pct % of the pool for hoard_ms is
     * restarted and its buffers reclaimed (policy.c): far above what any
     * sound service holds (its rings and its device's slots), and soon
     * enough that the other ports recover within a second or two */
    [SUP_ROUTER_HOARD_PCT] = {"hoard_pct", sup_p_u32, KEY(struct sup_router, hoard_pct), 1, 100, .def = "50"},
    [SUP_ROUTER_HOARD_MS] = {"hoard_ms", sup_p_u32, KEY(struct sup_router, hoard_ms), 50, 3600000, .def = "1000"},
    /* a service restarting in a loop charges its exec and start to itself,
     * not to its peers (supervisor/cgroup.c) */
    [SUP_ROUTER_RESTART_CPU_MAX] = {"restart_cpu_max_pct", sup_p_u32, KEY(struct sup_router, restart_cpu_max_pct), 0,
                                    100, .def = "25"},
    /* a namespace of `ip netns` where each port gets its host-side
     * interface, for routing daemons (supervisor/cp.c); none by default */
    [SUP_ROUTER_CONTROL_NETNS] = {"control_netns", sup_p_netns, KEY(struct sup_router, control_netns), 1,
                                  SUP_NETNS_MAX},
    /* the neighbour timers (docs/routing.md, "A next hop that fails"); the
     * router reads its entries every 100 ms, which bounds how fine they can be */
    [SUP_ROUTER_NEIGH_REACHABLE] = {"neigh_reachable_ms", sup_p_u32, KEY(struct sup_router, neigh_reachable_ms), 100,
                                    3600000, .def = "30000"},
    [SUP_ROUTER_NEIGH_RETRANS] = {"neigh_retrans_ms", sup_p_u32, KEY(struct sup_router, neigh_retrans_ms), 100, 60000,
                                  .def = "1000"},
    [SUP_ROUTER_NEIGH_PROBES] = {"neigh_probes", sup_p_u32, KEY(struct sup_router, neigh_probes), 1, 20, .def = "3"},
    [SUP_ROUTER_NEIGH_DELAY] = {"neigh_delay_ms", sup_p_u32, KEY(struct sup_router, neigh_delay_ms), 100, 60000,
                                .def = "5000"},
    [SUP_ROUTER_NEIGH_STALE] = {"neigh_stale_ms", sup_p_u32, KEY(struct sup_router, neigh_stale_ms), 1000, 86400000,
                                .def = "60000"},
};

static const struct sup_word sup_driver_words[] = {{"tap", SUP_DRIVER_TAP}, {"afxdp", SUP_DRIVER_AFXDP}, {NULL, 0}};
static const struct sup_word sup_xdp_mode_words[] = {
    {"auto", SUP_XDP_AUTO}, {"zerocopy", SUP_XDP_ZEROCOPY}, {"copy", SUP_XDP_COPY}, {"skb", SUP_XDP_SKB}, {NULL, 0},
};
static const struct sup_word sup_untagged_words[] = {{"parent", 1}, {"drop", 0}, {NULL, 0}};
static const struct sup_word sup_steer_words[] = {
    {"forward-only", SUP_STEER_FORWARD_ONLY}, {"all", SUP_STEER_ALL}, {NULL, 0},
};

static const struct sup_key sup_port_keys[] = {
    [SUP_PORT_DRIVER] = {"driver", sup_p_enum, KEY(struct sup_port, driver), .words = sup_driver_words,
                         .expect = "tap or afxdp", .required = true},
    [SUP_PORT_IFNAME] = {"ifname", sup_p_ifname, KEY(struct sup_port, ifname), 1, SUP_IFNAME_MAX,
                         .expect = "a network interface name", .required = true},
    [SUP_PORT_ADDRESS] = {"address", sup_p_host_prefix, KEY(struct sup_port, address),
                          .expect = "an IPv4 prefix such as 10.1.0.1/24", .required = true},
    [SUP_PORT_MTU] = {"mtu", sup_p_u32, KEY(struct sup_port, mtu), 68, 65535, .def = "1500"},
    [SUP_PORT_NETNS] = {"netns", sup_p_netns, KEY(struct sup_port, netns), 1, SUP_NETNS_MAX},
    [SUP_PORT_MAC] = {"mac", sup_p_port_mac, .off = 0},
    [SUP_PORT_OFFLOADS] = {"offloads", sup_p_offloads, KEY(struct sup_port, offloads), .def = "csum,tso4,tso6",
                           .drivers = SUP_DRIVER_TAP},
    [SUP_PORT_RX_INFLIGHT] = {"rx_inflight", sup_p_u32, KEY(struct sup_port, rx_inflight), 1, 1024,
                              .def = "32", .drivers = SUP_DRIVER_TAP},
    /* The TAP's own queue is the port's receive ring: a train of frames the
     * hosts send while the driver is not running waits there. Linux's 1000
     * (its backlog's length too) drops the tail of a 1,000-frame train on a
     * busy machine; a NIC's ring is 1,024 to 4,096. */
    [SUP_PORT_QUEUE_LEN] = {"queue_len", sup_p_u32, KEY(struct sup_port, queue_len), 16, 65536, .def = "4096",
                            .drivers = SUP_DRIVER_TAP},
    [SUP_PORT_XDP_MODE] = {"xdp_mode", sup_p_enum, KEY(struct sup_port, xdp_mode), .words = sup_xdp_mode_words,
                           .def = "auto", .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_STEER] = {"steer", sup_p_enum, KEY(struct sup_port, steer), .words = sup_steer_words,
                        .def = "forward-only", .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_QUEUES] = {"queues", sup_p_u32, KEY(struct sup_port, queues), 1, 64, .def = "1",
                         .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_BUSY_POLL] = {"busy_poll", sup_p_bool, KEY(struct sup_port, busy_poll), .words = sup_bool_words,
                            .def = "yes", .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_BUSY_POLL_US] = {"busy_poll_us", sup_p_u32, KEY(struct sup_port, busy_poll_us), 1, 10000,
                               .def = "20", .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_BUSY_POLL_BUDGET] = {"busy_poll_budget", sup_p_u32, KEY(struct sup_port, busy_poll_budget), 1,
                                   1024, .def = "64", .drivers = SUP_DRIVER_AFXDP},
    /* 2 and 200 us: what the kernel's busy-polling documentation and DPDK's
     * af_xdp guide start from; the device's own values come back at shutdown */
    [SUP_PORT_NAPI_DEFER_HARD_IRQS] = {"napi_defer_hard_irqs", sup_p_u32,
                                       KEY(struct sup_port, napi_defer_hard_irqs), 0, 1000, .def = "2",
                                       .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_GRO_FLUSH_TIMEOUT] = {"gro_flush_timeout", sup_p_u32, KEY(struct sup_port, gro_flush_timeout), 0,
                                    100000000, .def = "200000", .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_RA] = {"ra", sup_p_bool, KEY(struct sup_port, ra), .words = sup_bool_words, .def = "no"},
    /* RFC 4861 §6.2.1: MaxRtrAdvInterval 4..1800 s, 600 by default */
    [SUP_PORT_RA_INTERVAL] = {"ra_interval", sup_p_u32, KEY(struct sup_port, ra_interval), 4, 1800, .def = "600"},
    /* appends: several per port, one per key or a comma-separated list */
    [SUP_PORT_ADDRESS6] = {"address6", sup_p_address6, .off = 0, .expect = "an IPv6 prefix such as 2001:db8:1::1/64",
                           .multi = true},
    /* yes: the device is not deleted at shutdown (nor when the supervisor
     * dies) and the next `up` takes it back, with what the hosts put on it */
    [SUP_PORT_PERSIST] = {"persist", sup_p_bool, KEY(struct sup_port, persist), .words = sup_bool_words,
                          .def = "no", .drivers = SUP_DRIVER_TAP},
    /* the port's trust zone: ports of one zone share a pool and forward
     * zero-copy; the router copies what crosses zones (docs/security.md) */
    [SUP_PORT_ZONE] = {"zone", sup_p_ident, KEY(struct sup_port, zone_name), 1, SUP_NAME_MAX, .def = "default"},
    /* the port's host-side interface in [router] control_netns (supervisor/cp.c); "": cp-NAME */
    [SUP_PORT_CP_IFNAME] = {"cp_ifname", sup_p_ifname, KEY(struct sup_port, cp_ifname), 1, SUP_IFNAME_MAX,
                            .expect = "a network interface name"},
    /* a VLAN sub-interface of port `parent` (supervisor/vlan_manifest.c) */
    [SUP_PORT_PARENT] = {"parent", sup_p_port_name, KEY(struct sup_port, parent_name), 1, SUP_NAME_MAX},
    [SUP_PORT_VLAN] = {"vlan", sup_p_vlan, .off = 0, .expect = "a VLAN id (1 to 4094), or OUTER.INNER for 802.1ad"},
    /* a parent's: its untagged frames are its own, or dropped */
    [SUP_PORT_UNTAGGED] = {"untagged", sup_p_bool, KEY(struct sup_port, untagged_parent),
                           .words = sup_untagged_words, .def = "drop"},
    /* a driver group: the ports of one share a driver process,
     * driver-GROUP (supervisor/group_manifest.c) */
    [SUP_PORT_GROUP] = {"group", sup_p_ident, KEY(struct sup_port, group_name), 1, SUP_NAME_MAX,
                        .drivers = SUP_DRIVER_AFXDP},
};

static const struct sup_key sup_route_keys[] = {
    /* the whole route: IPv4 or IPv6, as its prefix */
    [SUP_ROUTE_VIA] = {"via", sup_p_route_via, .off = 0},
    [SUP_ROUTE_PORT] = {"port", sup_p_port_name, KEY(struct sup_route, port_name), 1, SUP_NAME_MAX},
    /* one next hop of several (ECMP), repeated: manifest_routes.c */
    [SUP_ROUTE_NEXTHOP] = {"nexthop", sup_p_route_nexthop, .off = 0, .multi = true,
                           .expect = "ADDRESS [port NAME] [weight W]"},
};

static const struct sup_key sup_neigh_keys[] = {
    [SUP_NEIGH_MAC] = {"mac", sup_p_mac, KEY(struct sup_neigh, mac), .expect = "a MAC address",
                       .required = true},
    [SUP_NEIGH_PORT] = {"port", sup_p_port_name, KEY(struct sup_neigh, port_name), 1, SUP_NAME_MAX},
};

static const struct sup_key sup_shaper_keys[] = {
    [SUP_SHAPER_RATE] = {"rate", sup_p_rate, KEY(struct sup_shaper, rate), SUP_RATE_MIN, SUP_RATE_MAX,
                         .expect = "a rate such as 100mbit", .required = true},
    /* default computed: 10 ms at rate, at least 2 full frames (sup_check_shaper) */
    [SUP_SHAPER_BURST] = {"burst", sup_p_size, KEY(struct sup_shaper, burst), 1, SUP_BURST_MAX},
    /* preamble 7 + SFD 1 + FCS 4 + interframe gap 12: what a frame costs
     * on Ethernet beyond the header (SUP_ETH_HLEN) we already count */
    [SUP_SHAPER_OVERHEAD] = {"overhead", sup_p_u32, KEY(struct sup_shaper, overhead), 0, 256, .def = "24"},
};

static const struct sup_key sup_class_keys[] = {
    [SUP_CLASS_RATE] = {"rate", sup_p_rate, KEY(struct sup_class, rate), SUP_RATE_MIN, SUP_RATE_MAX,
                        .expect = "a rate such as 10mbit", .required = true},
    /* default: the port's rate */
    [SUP_CLASS_CEIL] = {"ceil", sup_p_rate, KEY(struct sup_class, ceil), SUP_RATE_MIN, SUP_RATE_MAX},
    [SUP_CLASS_PRIO] = {"prio", sup_p_u32, KEY(struct sup_class, prio), 0, 7, .def = "4"},
    [SUP_CLASS_MATCH] = {"match", sup_p_match, KEY(struct sup_class, match)},
    [SUP_CLASS_DEFAULT] = {"default", sup_p_bool, KEY(struct sup_class, is_default), .words = sup_bool_words,
                           .def = "no"},
};

static const struct sup_word sup_restart_words[] = {
    {"always", SUP_RESTART_ALWAYS}, {"on-failure", SUP_RESTART_ON_FAILURE}, {"never", SUP_RESTART_NEVER},
    {NULL, 0},
};

static const struct sup_word sup_sched_words[] = {
    {"normal", SUP_SCHED_NORMAL}, {"batch", SUP_SCHED_BATCH}, {NULL, 0},
};

static const struct sup_key sup_service_keys[] = {
    [SUP_SERVICE_RESTART] = {"restart", sup_p_enum, KEY(struct sup_service, restart), .words = sup_restart_words,
                             .def = "always"},
    [SUP_SERVICE_HANG_MS] = {"hang_ms", sup_p_u32, KEY(struct sup_service, hang_ms), 10, 60000, .def = "200"},
    [SUP_SERVICE_RESTART_LIMIT] = {"restart_limit", sup_p_u32, KEY(struct sup_service, restart_limit), 1, SUP_RESTART_LIMIT_MAX,
                                   .def = "5"},
    [SUP_SERVICE_RESTART_WINDOW] = {"restart_window", sup_p_duration,
                                    KEY(struct sup_service, restart_window_ms), 100, 3600000, .def = "10s"},
    [SUP_SERVICE_CPU] = {"cpu", sup_p_i32, KEY(struct sup_service, cpu), 0, 1023},
    /* 0: sleep as soon as there is no work, so an idle router uses no CPU */
    [SUP_SERVICE_POLL_US] = {"poll_us", sup_p_u32, KEY(struct sup_service, poll_us), 0, 10000, .def = "0"},
    [SUP_SERVICE_BINARY] = {"binary", sup_p_binary, KEY(struct sup_service, binary), 0, SUP_PATH_MAX, .def = ""},
    [SUP_SERVICE_SCHED] = {"sched", sup_p_enum, KEY(struct sup_service, sched), .words = sup_sched_words,
                           .def = "normal"},
    [SUP_SERVICE_UPGRADE_TIMEOUT] = {"upgrade_timeout_ms", sup_p_u32, KEY(struct sup_service, upgrade_timeout_ms),
                                     100, 60000, .def = "5000"},
    [SUP_SERVICE_NICE] = {"nice", sup_p_i32, KEY(struct sup_service, nice), -20, 19, .def = "0"},
    /* 10: the kernel's smallest quota is 1 ms, of our 10 ms period */
    [SUP_SERVICE_CPU_MAX_PCT] = {"cpu_max_pct", sup_p_u32, KEY(struct sup_service, cpu_max_pct), 0, 102400,
                                 .def = "0"},
};

static const struct sup_key sup_routes_keys[] = {
    /* the control namespace the daemon runs in; "": the supervisor's own */
    [SUP_ROUTES_NETNS] = {"netns", sup_p_netns, KEY(struct sup_routes, netns), 1, SUP_NETNS_MAX},
    /* a number, or a name of /etc/iproute2/rt_tables (manifest_routes.c) */
    [SUP_ROUTES_TABLE] = {"table", sup_p_rt_table, KEY(struct sup_routes, table)},
    /* a daemon gone: its routes stay this long (BGP graceful restart's 120 s) */
    [SUP_ROUTES_GRACE] = {"grace_s", sup_p_u32, KEY(struct sup_routes, grace_s), 0, 3600, .def = "120"},
    [SUP_ROUTES_FPM] = {"fpm", sup_p_fpm_addr, .off = 0, .expect = "ADDRESS:PORT such as 127.0.0.1:2620"},
};

static const struct sup_key sup_filter_keys[] = {
    [SUP_FILTER_RULES] = {"rules", sup_p_path, KEY(struct sup_filter, rules), 1, SUP_PATH_MAX,
                          .expect = "the absolute path of the ruleset", .required = true},
    /* 2^26: libfilter's largest table (flt_ct_region_size) */
    [SUP_FILTER_CONNTRACK_MAX] = {"conntrack_max", sup_p_u32, KEY(struct sup_filter, conntrack_max), 16, 67108864,
                                  .def = "65536"},
    /* default: every port (filter_manifest.c) */
    [SUP_FILTER_PORTS] = {"ports", sup_p_filter_ports, KEY(struct sup_filter, ports)},
};

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

const struct sup_section_type sup_sections[] = {
    [SUP_SEC_ROUTER] = {"router", 0, "[router]", sup_router_keys, NKEYS(sup_router_keys)},
    [SUP_SEC_PORT] = {"port", 1, "[port NAME]", sup_port_keys, NKEYS(sup_port_keys)},
    [SUP_SEC_ROUTE] = {"route", 1, "[route PREFIX]", sup_route_keys, NKEYS(sup_route_keys)},
    [SUP_SEC_NEIGH] = {"neigh", 1, "[neigh ADDRESS]", sup_neigh_keys, NKEYS(sup_neigh_keys)},
    [SUP_SEC_SHAPER] = {"shaper", 1, "[shaper PORT]", sup_shaper_keys, NKEYS(sup_shaper_keys)},
    [SUP_SEC_CLASS] = {"class", 2, "[class PORT NAME]", sup_class_keys, NKEYS(sup_class_keys)},
    [SUP_SEC_SERVICE] = {"service", 1, "[service NAME]", sup_service_keys, NKEYS(sup_service_keys)},
    [SUP_SEC_ROUTES] = {"routes", 0, "[routes]", sup_routes_keys, NKEYS(sup_routes_keys)},
    [SUP_SEC_FILTER] = {"filter", 0, "[filter]", sup_filter_keys, NKEYS(sup_filter_keys)},
};

_Static_assert(SUP_PORT_NKEYS <= SUP_SRC_KEYS && SUP_ROUTER_NKEYS <= SUP_SRC_KEYS &&
                   SUP_SERVICE_NKEYS <= SUP_SRC_KEYS && SUP_CLASS_NKEYS <= SUP_SRC_KEYS &&
                   SUP_ROUTES_NKEYS <= SUP_SRC_KEYS && SUP_FILTER_NKEYS <= SUP_SRC_KEYS,
               "struct sup_src has a line for every key");

/* Fill an object with the defaults of its section's table. A default that
 * does not parse is our bug, and the unit tests load every table. */
void sup_defaults(struct sup_pctx *pc, const struct sup_section_type *t, void *obj)
{
    for (size_t i = 0; i < t->nkeys; i++) {
        const struct sup_key *k = &t->keys[i];
        if (k->def && k->parse(pc, k, k->def, (char *)obj + k->off) != 0)
            abort();
    }
}

/* ---- sections ---- */

/* Where a section type's objects live: the router is one object of its
 * own, every other type an array that grows by one at each header. */
struct sup_list {
    void **arr;
    size_t *n;
    size_t size;
};

static struct sup_list sup_list(struct sup_pctx *pc, int type)
{
    struct sup_manifest *m = pc->m;
    switch (type) {
    case SUP_SEC_PORT:
        return (struct sup_list){(void **)&m->ports, &m->nports, sizeof *m->ports};
    case SUP_SEC_ROUTE:
        return (struct sup_list){(void **)&m->routes, &m->nroutes, sizeof *m->routes};
    case SUP_SEC_NEIGH:
        return (struct sup_list){(void **)&m->neighs, &m->nneighs, sizeof *m->neighs};
    case SUP_SEC_SHAPER:
        return (struct sup_list){(void **)&m->shapers, &m->nshapers, sizeof *m->shapers};
    case SUP_SEC_CLASS:
        return (struct sup_list){(void **)&m->classes, &m->nclasses, sizeof *m->classes};
    default:
        return (struct sup_list){(void **)&pc->svc, &pc->nsvc, sizeof *pc->svc};
    }
}

size_t sup_nobjs(struct sup_pctx *pc, int type)
{
    return type == SUP_SEC_ROUTER || type == SUP_SEC_ROUTES || type == SUP_SEC_FILTER ? 1 : *sup_list(pc, type).n;
}

void *sup_obj(struct sup_pctx *pc, int type, size_t idx)
{
    if (type == SUP_SEC_ROUTER)
        return &pc->m->router;
    if (type == SUP_SEC_ROUTES)
        return &pc->m->daemon;
    if (type == SUP_SEC_FILTER)
        return &pc->m->filter;
    struct sup_list l = sup_list(pc, type);
    return (char *)*l.arr + idx * l.size;
}

/* Append a zeroed element to a growing array; NULL (and rc = -ENOMEM) on failure. */
static void *sup_grow(struct sup_pctx *pc, void *arrp, size_t *n, size_t size)
{
    void **arr = arrp;
    void *p = realloc(*arr, (*n + 1) * size);
    if (!p) {
        sup_oom(pc);
        return NULL;
    }
    *arr = p;
    memset((char *)p + *n * size, 0, size);
    return (char *)p + (*n)++ * size;
}

static int sup_name_ok(struct sup_pctx *pc, const char *sec, const char *what, const char *name)
{
    size_t n = strlen(name);
    bool good = n >= 1 && n <= SUP_NAME_MAX;
    /* A port's may hold dots, as a VLAN port's name does (lan.10); the
     * checks keep them to VLAN ports (vlan_manifest.c). */
    bool port = strcmp(what, "port name") == 0;
    for (const char *p = name; good && *p; p++)
        good = sup_c_ident((unsigned char)*p) || (port && *p == '.' && p > name && p[1]);
    if (!good)
        return sup_fail(pc, pc->line, sec, NULL, "%s \"%s\" is not valid: expected 1 to %d of a-z 0-9 _ -", what,
                        name, SUP_NAME_MAX);
    return 0;
}

/* A new object of any type, before it joins its list. */
union sup_any {
    struct sup_port port;
    struct sup_route route;
    struct sup_neigh neigh;
    struct sup_shaper shaper;
    struct sup_class cls;
    struct sup_service svc;
};

/* Validate a header's names and make what they say of a new object. */
typedef int sup_init_fn(struct sup_pctx *pc, const char *sec, char **names, union sup_any *o);

static int sup_init_port(struct sup_pctx *pc, const char *sec, char **names, union sup_any *o)
{
    if (sup_name_ok(pc, sec, "port name", names[0]))
        return pc->rc;
    sup_copy(o->port.name, sizeof o->port.name, names[0]);
    o->port.shaper = -1;
    o->port.vlan_parent = -1;
    return 0;
}

static int sup_init_route(struct sup_pctx *pc, const char *sec, char **names, union sup_any *o)
{
    struct sup_prefix *pf = &o->route.prefix;
    if (strchr(names[0], ':'))
        return sup_init_route6(pc, sec, names[0], &o->route);
    if (!sup_parse_prefix(names[0], pf))
        return sup_fail(pc, pc->line, sec, NULL, "\"%s\" is not an IPv4 prefix", names[0]);
    if (pf->addr & ~sup_mask(pf->len))
        return sup_fail(pc, pc->line, sec, NULL, "%s has host bits set, did you mean %s?", names[0],
                        PREFIX(pf->addr & sup_mask(pf->len), pf->len));
    o->route.port = -1;
    return 0;
}

static int sup_init_neigh(struct sup_pctx *pc, const char *sec, char **names, union sup_any *o)
{
    if (strchr(names[0], ':'))
        return sup_init_neigh6(pc, sec, names[0], &o->neigh);
    if (!sup_parse_addr(names[0], &o->neigh.addr))
        return sup_fail(pc, pc->line, sec, NULL, "\"%s\" is not an IPv4 address", names[0]);
    o->neigh.port = -1;
    return 0;
}

static int sup_init_shaper(struct sup_pctx *pc, const char *sec, char **names, union sup_any *o)
{
    if (sup_name_ok(pc, sec, "port name", names[0]))
        return pc->rc;
    sup_copy(o->shaper.port_name, sizeof o->shaper.port_name, names[0]);
    o->shaper.port = -1;
    o->shaper.default_class = -1;
    return 0;
}

static int sup_init_class(struct sup_pctx *pc, const char *sec, char **names, union sup_any *o)
{
    if (sup_name_ok(pc, sec, "port name", names[0]) || sup_name_ok(pc, sec, "class name", names[1]))
        return pc->rc;
    sup_copy(o->cls.port_name, sizeof o->cls.port_name, names[0]);
    sup_copy(o->cls.name, sizeof o->cls.name, names[1]);
    o->cls.port = -1;
    return 0;
}

/* The target (a port, a shaper) may come later in the file: the name is
 * checked against the finished manifest (manifest_check.c). */
static int sup_init_service(struct sup_pctx *pc, const char *sec, char **names, union sup_any *o)
{
    if (strlen(names[0]) > SUP_SERVICE_MAX)
        return sup_fail(pc, pc->line, sec, NULL,
                        "\"%s\" is not a service: expected router, driver-PORT, driver-PORT.QUEUE or shaper-PORT",
                        names[0]);
    sup_copy(o->svc.name, sizeof o->svc.name, names[0]);
    o->svc.cpu = -1;
    o->svc.port = -1;
    return 0;
}

static const struct {
    sup_init_fn *init;
    const char *dup; /* the error for a second such section, up to "on line N" */
} sup_kinds[] = {
    [SUP_SEC_PORT] = {sup_init_port, "duplicate port, first defined"},
    [SUP_SEC_ROUTE] = {sup_init_route, "duplicate route, first"},
    [SUP_SEC_NEIGH] = {sup_init_neigh, "duplicate neighbour, first"},
    [SUP_SEC_SHAPER] = {sup_init_shaper, "duplicate shaper, first"},
    [SUP_SEC_CLASS] = {sup_init_class, "duplicate class, first"},
    [SUP_SEC_SERVICE] = {sup_init_service, "duplicate section, first"},
};

/* A new object of @type from a header's names, appended to its list. */
static void *sup_new(struct sup_pctx *pc, int type, char **names, const char *sec)
{
    struct sup_list l = sup_list(pc, type);
    union sup_any o = {0};
    if (sup_kinds[type].init(pc, sec, names, &o))
        return NULL;
    /* Names, prefixes and addresses have one valid spelling each, so the
     * normalised header says which object a section is. */
    for (size_t i = 0; i < *l.n; i++) {
        const struct sup_src *old = sup_obj(pc, type, i);
        if (strcmp(old->section, sec) == 0) {
            sup_fail(pc, pc->line, sec, NULL, "%s on line %u", sup_kinds[type].dup, old->line);
            return NULL;
        }
    }
    if (type == SUP_SEC_PORT && *l.n == SUP_PORTS_MAX) {
        sup_fail(pc, pc->line, sec, NULL, "too many ports: at most %d", SUP_PORTS_MAX);
        return NULL;
    }
    void *obj = sup_grow(pc, l.arr, l.n, l.size);
    if (obj)
        memcpy(obj, &o, l.size);
    return obj;
}

/* Open a section at its header: create its object with its defaults, and
 * make it the one that the keys which follow go to. */
static int sup_open(struct sup_pctx *pc, const struct sup_section_type *t, char **names, const char *sec)
{
    int type = (int)(t - sup_sections);
    bool single = type == SUP_SEC_ROUTER || type == SUP_SEC_ROUTES || type == SUP_SEC_FILTER; /* one object of its own */
    struct sup_src *src = type == SUP_SEC_ROUTES   ? &pc->m->daemon.src
                          : type == SUP_SEC_FILTER ? &pc->m->filter.src
                                                   : &pc->m->router.src;
    if (single && src->line)
        return sup_fail(pc, pc->line, sec, NULL, "duplicate section, first on line %u", src->line);
    if (!single && !(src = sup_new(pc, type, names, sec)))
        return pc->rc;
    memset(src, 0, sizeof *src);
    sup_copy(src->section, sizeof src->section, sec);
    src->line = pc->line;
    /* The router's defaults are in place from the start: it needs no header. */
    if (type != SUP_SEC_ROUTER)
        sup_defaults(pc, t, src);
    pc->cur = t;
    pc->cur_idx = sup_nobjs(pc, type) - 1;
    sup_copy(pc->cur_section, sizeof pc->cur_section, sec);
    return 0;
}

int sup_section(struct sup_pctx *pc, char **words, size_t nwords, const char *sec, size_t seclen)
{
    const struct sup_section_type *t = NULL;
    for (size_t i = 0; i < NKEYS(sup_sections); i++)
        if (strcmp(sup_sections[i].type, words[0]) == 0)
            t = &sup_sections[i];
    if (!t)
        return sup_fail(pc, pc->line, sec, NULL,
                        "unknown section: expected [router], [port NAME], [route PREFIX], [neigh ADDRESS], "
                        "[shaper PORT], [class PORT NAME] or [service NAME]");
    if (nwords - 1 != t->nnames)
        return sup_fail(pc, pc->line, sec, NULL, "expected %s", t->usage);
    if (seclen >= SUP_SECTION_MAX)
        return sup_fail(pc, pc->line, sec, NULL, "section header is longer than %d characters",
                        SUP_SECTION_MAX - 1);
    return sup_open(pc, t, words + 1, sec);
}

/* An unknown key: the nearest known one when it is a typo away. */
static int sup_unknown_key(struct sup_pctx *pc, const struct sup_section_type *t, const char *name)
{
    const char *best = NULL;
    unsigned bd = 3;
    for (size_t i = 0; i < t->nkeys; i++) {
        unsigned d = sup_edit_distance(name, t->keys[i].name);
        if (d < bd) {
            bd = d;
            best = t->keys[i].name;
        }
    }
    if (best)
        return sup_fail(pc, pc->line, pc->cur_section, name, "unknown key, did you mean %s?", best);
    return sup_fail(pc, pc->line, pc->cur_section, name, "unknown key in [%s] (see docs/manifest.md)", t->type);
}

int sup_set_key(struct sup_pctx *pc, const char *name, const char *value)
{
    const struct sup_section_type *t = pc->cur;
    const struct sup_key *k = NULL;
    for (size_t i = 0; i < t->nkeys; i++)
        if (strcmp(t->keys[i].name, name) == 0)
            k = &t->keys[i];
    if (!k)
        return sup_unknown_key(pc, t, name);
    void *obj = sup_obj(pc, (int)(t - sup_sections), pc->cur_idx);
    struct sup_src *src = obj;
    unsigned *kl = &src->key_line[k - t->keys];
    if (*kl && !k->multi)
        return sup_fail(pc, pc->line, pc->cur_section, name, "duplicate key, first set on line %u", *kl);
    if (!*kl)
        *kl = pc->line;
    return k->parse(pc, k, value, (char *)obj + k->off);
}

int sup_missing(struct sup_pctx *pc, const struct sup_section_type *t, const struct sup_src *src)
{
    for (size_t i = 0; i < t->nkeys; i++)
        if (t->keys[i].required && !src->key_line[i])
            return sup_fail(pc, src->line, src->section, t->keys[i].name, "missing, expected %s",
                            t->keys[i].expect);
    return 0;
}
