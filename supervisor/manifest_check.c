/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest_check.c: the checks that need the whole manifest,
 * run once the last line is read, in the order of the manifest's own
 * dependencies: the router (a shared user and group that exist, or none),
 * the pool (its size), the ports (required keys, keys of the other driver,
 * AF_XDP frame limits, shared interfaces, overlapping networks, shared
 * MACs), the routes and neighbours (their gateway or address is on a port's
 * network and is a host there), the shapers and classes (their port, the
 * computed burst, class rates against the port's), the services: the list
 * every port and shaper implies, with the [service] sections merged into
 * it, and last their uids (the range holds one for each).
 * Each error names the line of the key that is wrong, or of its section.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ipc/pool.h"
#include "supervisor/manifest_impl.h"

/* The largest MTU of an AF_XDP port: AF_XDP cannot chain frames, so a whole
 * frame, after the headroom the kernel keeps, must fit in one pool frame. */
#define SUP_AFXDP_MTU_MAX(frame_size) ((frame_size) - IPC_HEADROOM - SUP_ETH_HLEN)

#define KLINE(o, key) ((o)->src.key_line[key])

/*
 * Who the services run as. By default each has a uid of its own from
 * `uids` (sup_check_uids, once the services are known); `user` instead makes
 * every service that one user, the old and weaker way: services sharing a
 * uid can signal each other. The two exclude each other, and `group` only
 * means something with `user`.
 */
static int sup_check_router(struct sup_pctx *pc)
{
    struct sup_router *r = &pc->m->router;
    char buf[4096];
    struct passwd pw, *pwp = NULL;
    struct group gr, *grp = NULL;
    const char *sec = r->src.section;
    unsigned luser = KLINE(r, SUP_ROUTER_USER), luids = KLINE(r, SUP_ROUTER_UIDS);

    if (r->user[0] && luids)
        return sup_fail(pc, luids > luser ? luids : luser, sec, luids > luser ? "uids" : "user",
                        "give either user (every service runs as that one user) or uids (each service its own "
                        "uid), not both");
    if (!r->user[0]) {
        if (r->group[0])
            return sup_fail(pc, KLINE(r, SUP_ROUTER_GROUP), sec, "group",
                            "only with user: without it, each service runs with its own uid as its gid");
        return 0;
    }
    if (getpwnam_r(r->user, &pw, buf, sizeof buf, &pwp) != 0 || !pwp)
        return sup_fail(pc, luser, sec, "user", "no such user \"%s\"", r->user);
    if (r->group[0]) {
        if (getgrnam_r(r->group, &gr, buf, sizeof buf, &grp) != 0 || !grp)
            return sup_fail(pc, KLINE(r, SUP_ROUTER_GROUP), sec, "group", "no such group \"%s\"", r->group);
    } else {
        gid_t gid = pw.pw_gid;
        if (getgrgid_r(gid, &gr, buf, sizeof buf, &grp) != 0 || !grp || strlen(gr.gr_name) > SUP_USER_MAX)
            return sup_fail(pc, luser, sec, "group", "the primary group %u of user \"%s\" has no name", (unsigned)gid,
                            r->user);
        snprintf(r->group, sizeof r->group, "%s", gr.gr_name);
    }
    return 0;
}

/* The pool is one memfd; its pages are allocated as frames are first used,
 * but a size past this is a typo rather than a plan. */
#define SUP_POOL_BYTES_MAX (8ull << 30)

static int sup_check_pool(struct sup_pctx *pc)
{
    struct sup_router *r = &pc->m->router;
    uint64_t bytes = (uint64_t)r->pool_buffers * r->frame_size;
    if (bytes <= SUP_POOL_BYTES_MAX)
        return 0;
    unsigned line = KLINE(r, SUP_ROUTER_POOL_BUFFERS) ? KLINE(r, SUP_ROUTER_POOL_BUFFERS)
                                                      : KLINE(r, SUP_ROUTER_FRAME_SIZE);
    return sup_fail(pc, line, r->src.section, KLINE(r, SUP_ROUTER_POOL_BUFFERS) ? "pool_buffers" : "frame_size",
                    "%u buffers of %u bytes is %llu MiB, more than the pool's limit of %llu MiB", r->pool_buffers,
                    r->frame_size, (unsigned long long)(bytes >> 20), SUP_POOL_BYTES_MAX >> 20);
}

/* A check of one object of a section type; i is its index. */
typedef int sup_check_fn(struct sup_pctx *pc, void *obj, size_t i);

/* Check each object of @type in order, its required keys first. */
static int sup_each(struct sup_pctx *pc, int type, sup_check_fn *fn)
{
    for (size_t i = 0; i < sup_nobjs(pc, type) && !pc->rc; i++) {
        void *obj = sup_obj(pc, type, i);
        if (!sup_missing(pc, &sup_sections[type], obj))
            fn(pc, obj, i);
    }
    return pc->rc;
}

/* The index of the port that @src names as @name; -1, with the error at
 * @line and @key, when there is none. */
int sup_port_ref(struct sup_pctx *pc, const struct sup_src *src, unsigned line, const char *key,
                 const char *name)
{
    int i = sup_manifest_port(pc->m, name);
    if (i < 0)
        sup_fail(pc, line, src->section, key, "no port \"%s\"", name);
    return i;
}

static int sup_check_port(struct sup_pctx *pc, void *obj, size_t i)
{
    struct sup_manifest *m = pc->m;
    struct sup_port *p = obj;
    const struct sup_section_type *t = &sup_sections[SUP_SEC_PORT];
    for (size_t k = 0; k < t->nkeys; k++) {
        if (t->keys[k].drivers && p->src.key_line[k] && !(t->keys[k].drivers & p->driver))
            return sup_fail(pc, p->src.key_line[k], p->src.section, t->keys[k].name,
                            "only for driver = %s, and port %s is driver = %s",
                            t->keys[k].drivers == SUP_DRIVER_TAP ? "tap" : "afxdp", p->name,
                            p->driver == SUP_DRIVER_TAP ? "tap" : "afxdp");
    }
    /* The pool is the UMEM, whose chunks are 2048 or 4096 bytes. */
    if (p->driver == SUP_DRIVER_AFXDP && m->router.frame_size > IPC_FRAME_LARGE)
        return sup_fail(pc, KLINE(&m->router, SUP_ROUTER_FRAME_SIZE), m->router.src.section, "frame_size",
                        "%u is for routers whose ports are all driver = tap: port %s (line %u) is driver = afxdp, "
                        "which takes %u or %u",
                        m->router.frame_size, p->name, p->src.line, IPC_FRAME_DEFAULT, IPC_FRAME_LARGE);
    uint32_t fmax = SUP_AFXDP_MTU_MAX(m->router.frame_size);
    if (p->driver == SUP_DRIVER_AFXDP && p->mtu > fmax) {
        char hint[48] = "";
        if (m->router.frame_size < IPC_FRAME_LARGE)
            snprintf(hint, sizeof hint, "; frame_size = %u allows %u", IPC_FRAME_LARGE,
                     SUP_AFXDP_MTU_MAX(IPC_FRAME_LARGE));
        return sup_fail(pc, KLINE(p, SUP_PORT_MTU), p->src.section, "mtu",
                        "%u does not fit a %u-byte frame with driver = afxdp (at most %u%s)", p->mtu,
                        m->router.frame_size, fmax, hint);
    }
    for (size_t j = 0; j < i; j++) {
        struct sup_port *q = &m->ports[j];
        if (!p->vlan_ntags && !q->vlan_ntags && strcmp(p->ifname, q->ifname) == 0 && strcmp(p->netns, q->netns) == 0)
            return sup_fail(pc, KLINE(p, SUP_PORT_IFNAME), p->src.section, "ifname",
                            "\"%s\" is already port %s's interface (line %u)", p->ifname, q->name,
                            KLINE(q, SUP_PORT_IFNAME));
        unsigned len = p->address.len < q->address.len ? p->address.len : q->address.len;
        if (((p->address.addr ^ q->address.addr) & sup_mask(len)) == 0)
            return sup_fail(pc, KLINE(p, SUP_PORT_ADDRESS), p->src.section, "address",
                            "%s overlaps port %s's network %s (line %u)", PREFIX(p->address.addr, p->address.len),
                            q->name, PREFIX(q->address.addr & sup_mask(q->address.len), q->address.len),
                            KLINE(q, SUP_PORT_ADDRESS));
        if (p->has_mac && q->has_mac && memcmp(p->mac, q->mac, 6) == 0)
            return sup_fail(pc, KLINE(p, SUP_PORT_MAC), p->src.section, "mac",
                            "is already port %s's MAC address (line %u)", q->name, KLINE(q, SUP_PORT_MAC));
    }
    /* Zones are numbered as they first appear; every port has one (the
     * default's, "default"), so there are as many zones as ports at most. */
    p->zone = (unsigned)i;
    for (size_t j = 0; j < i; j++)
        if (strcmp(m->ports[j].zone_name, p->zone_name) == 0) {
            p->zone = m->ports[j].zone;
            break;
        }
    if (p->zone == i) {
        p->zone = 0;
        for (size_t j = 0; j < i; j++)
            if (m->ports[j].zone + 1 > p->zone)
                p->zone = m->ports[j].zone + 1;
        if (p->zone >= SUP_ZONES_MAX)
            return sup_fail(pc, KLINE(p, SUP_PORT_ZONE), p->src.section, "zone",
                            "\"%s\" would be zone %u: at most %u zones (a pool each)", p->zone_name, p->zone + 1,
                            SUP_ZONES_MAX);
    }
    return 0;
}

static int sup_check_ports(struct sup_pctx *pc)
{
    if (pc->m->nports == 0)
        return sup_fail(pc, 0, NULL, NULL, "no ports: a manifest needs at least one [port NAME] section");
    if (sup_check_vlans(pc)) /* vlan_manifest.c: first, a VLAN port has its parent's device */
        return pc->rc;
    return sup_each(pc, SUP_SEC_PORT, sup_check_port);
}

/* The port whose connected network holds @a; networks do not overlap. */
static int sup_port_for(const struct sup_manifest *m, uint32_t a)
{
    for (size_t i = 0; i < m->nports; i++)
        if (sup_in(&m->ports[i].address, a))
            return (int)i;
    return -1;
}

/* @a must be a neighbour on port @pi's network: not the router itself,
 * nor the network's own or broadcast address. */
const char *sup_gateway_why(const struct sup_manifest *m, uint32_t a, int pi, char *why, size_t len)
{
    const struct sup_port *p = &m->ports[pi];
    uint32_t host = a & ~sup_mask(p->address.len);
    char net[20] = "";
    /* Written only for a refusal: a daemon's routes come through here by the million. */
    if (host == 0 || host == ~sup_mask(p->address.len))
        sup_prefix_str(p->address.addr & sup_mask(p->address.len), p->address.len, net, sizeof net);
    const char *martian = sup_martian(a);
    if (martian)
        snprintf(why, len, "%s is %s", ADDR(a), martian);
    else if (a == p->address.addr)
        snprintf(why, len, "%s is the router's own address on port %s", ADDR(a), p->name);
    else if (p->address.len < 31 && host == 0)
        snprintf(why, len, "%s is the network address of port %s's network %s", ADDR(a), p->name, net);
    else if (p->address.len < 31 && host == ~sup_mask(p->address.len))
        snprintf(why, len, "%s is the broadcast address of port %s's network %s", ADDR(a), p->name, net);
    else
        return NULL;
    return why;
}

static int sup_check_on_link(struct sup_pctx *pc, const struct sup_src *src, unsigned line, const char *key,
                             uint32_t a, int pi)
{
    char why[160];
    if (sup_gateway_why(pc->m, a, pi, why, sizeof why))
        return sup_fail(pc, line, src->section, key, "%s", why);
    return 0;
}

static int sup_check_route(struct sup_pctx *pc, void *obj, size_t i)
{
    struct sup_manifest *m = pc->m;
    struct sup_route *r = obj;
    if (KLINE(r, SUP_ROUTE_NEXTHOP))
        return sup_check_route_mp(pc, r); /* several next hops: manifest_routes.c */
    if (r->v6)
        return sup_check_route6(pc, r);
    unsigned lvia = KLINE(r, SUP_ROUTE_VIA), lport = KLINE(r, SUP_ROUTE_PORT);
    if (lvia && lport)
        return sup_fail(pc, lvia > lport ? lvia : lport, r->src.section, lvia > lport ? "via" : "port",
                        "give either via or port, not both");
    if (!lvia && !lport)
        return sup_fail(pc, r->src.line, r->src.section, "via",
                        "missing, expected a gateway address (or port = NAME for a directly connected route)");
    for (size_t j = 0; j < m->nports; j++) {
        const struct sup_prefix *a = &m->ports[j].address;
        if (a->len == r->prefix.len && (a->addr & sup_mask(a->len)) == r->prefix.addr)
            return sup_fail(pc, r->src.line, r->src.section, NULL,
                            "duplicates the connected route of port %s (line %u)", m->ports[j].name,
                            KLINE(&m->ports[j], SUP_PORT_ADDRESS));
    }
    if (lport) {
        r->direct = true;
        r->port = sup_port_ref(pc, &r->src, lport, "port", r->port_name);
        return pc->rc;
    }
    r->port = sup_port_for(m, r->via);
    if (r->port < 0)
        return sup_fail(pc, lvia, r->src.section, "via", "%s is not on any port's network", ADDR(r->via));
    if (sup_check_on_link(pc, &r->src, lvia, "via", r->via, r->port))
        return pc->rc;
    snprintf(r->port_name, sizeof r->port_name, "%s", m->ports[r->port].name);
    return 0;
}

static int sup_check_neigh(struct sup_pctx *pc, void *obj, size_t i)
{
    struct sup_manifest *m = pc->m;
    struct sup_neigh *n = obj;
    if (n->v6)
        return sup_check_neigh6(pc, n);
    int on = sup_port_for(m, n->addr);
    if (KLINE(n, SUP_NEIGH_PORT)) {
        n->port = sup_port_ref(pc, &n->src, KLINE(n, SUP_NEIGH_PORT), "port", n->port_name);
        if (n->port < 0)
            return pc->rc;
        if (on != n->port)
            return sup_fail(pc, KLINE(n, SUP_NEIGH_PORT), n->src.section, "port",
                            "%s is not on port %s's network %s", ADDR(n->addr), n->port_name,
                            PREFIX(m->ports[n->port].address.addr & sup_mask(m->ports[n->port].address.len),
                                   m->ports[n->port].address.len));
    } else if (on < 0) {
        return sup_fail(pc, n->src.line, n->src.section, NULL, "%s is not on any port's network", ADDR(n->addr));
    }
    n->port = on;
    snprintf(n->port_name, sizeof n->port_name, "%s", m->ports[on].name);
    return sup_check_on_link(pc, &n->src, n->src.line, NULL, n->addr, on);
}

static int sup_check_shaper(struct sup_pctx *pc, void *obj, size_t i)
{
    struct sup_shaper *s = obj;
    s->port = sup_port_ref(pc, &s->src, s->src.line, NULL, s->port_name);
    if (s->port < 0)
        return pc->rc;
    struct sup_port *p = &pc->m->ports[s->port];
    p->shaper = (int)i;
    uint32_t frame = p->mtu + SUP_ETH_HLEN;
    if (!KLINE(s, SUP_SHAPER_BURST)) {
        /* What the rate sends in 10 ms: the shaper sleeps on a timer, so
         * the bucket must cover at least one timer slack's worth. */
        uint64_t b = s->rate / 8 / 100;
        if (b < 2ull * frame)
            b = 2ull * frame;
        if (b > SUP_BURST_MAX)
            b = SUP_BURST_MAX;
        s->burst = (uint32_t)b;
    } else if (s->burst < frame) {
        return sup_fail(pc, KLINE(s, SUP_SHAPER_BURST), s->src.section, "burst",
                        "%u bytes is less than one full frame (%u bytes at mtu %u)", s->burst, frame, p->mtu);
    }
    return 0;
}

static int sup_check_class(struct sup_pctx *pc, void *obj, size_t i)
{
    struct sup_manifest *m = pc->m;
    struct sup_class *c = obj;
    c->port = sup_port_ref(pc, &c->src, c->src.line, NULL, c->port_name);
    if (c->port < 0)
        return pc->rc;
    int si = m->ports[c->port].shaper;
    if (si < 0)
        return sup_fail(pc, c->src.line, c->src.section, NULL, "port %s has no [shaper %s] section", c->port_name,
                        c->port_name);
    struct sup_shaper *s = &m->shapers[si];
    if (++s->nclasses > SHP_MAX_CLASSES)
        return sup_fail(pc, c->src.line, c->src.section, NULL,
                        "port %s has more than %u classes; its shaper takes at most %u, the default included",
                        c->port_name, SHP_MAX_CLASSES, SHP_MAX_CLASSES);
    if (!KLINE(c, SUP_CLASS_CEIL))
        c->ceil = s->rate;
    if (c->rate > s->rate)
        return sup_fail(pc, KLINE(c, SUP_CLASS_RATE), c->src.section, "rate",
                        "%s is above the port's rate %s (line %u)", RATE(c->rate), RATE(s->rate),
                        KLINE(s, SUP_SHAPER_RATE));
    if (c->ceil < c->rate)
        return sup_fail(pc, KLINE(c, SUP_CLASS_CEIL), c->src.section, "ceil", "%s is below rate %s",
                        RATE(c->ceil), RATE(c->rate));
    if (c->ceil > s->rate)
        return sup_fail(pc, KLINE(c, SUP_CLASS_CEIL), c->src.section, "ceil",
                        "%s is above the port's rate %s (line %u)", RATE(c->ceil), RATE(s->rate),
                        KLINE(s, SUP_SHAPER_RATE));
    if (!c->is_default) {
        if (!KLINE(c, SUP_CLASS_MATCH))
            return sup_fail(pc, c->src.line, c->src.section, "match",
                            "missing, expected match rules (or default = yes)");
        return 0;
    }
    if (s->default_class >= 0)
        return sup_fail(pc, KLINE(c, SUP_CLASS_DEFAULT), c->src.section, "default",
                        "class %s (line %u) is already port %s's default class", m->classes[s->default_class].name,
                        m->classes[s->default_class].src.line, c->port_name);
    if (KLINE(c, SUP_CLASS_MATCH))
        return sup_fail(pc, KLINE(c, SUP_CLASS_MATCH), c->src.section, "match",
                        "the default class takes what no other class matches; remove match");
    s->default_class = (int)i;
    return 0;
}

/* A shaped port with classes has exactly one default class, and its
 * classes' guaranteed rates fit in the port's. */
static int sup_check_class_sums(struct sup_pctx *pc, void *obj, size_t i)
{
    struct sup_manifest *m = pc->m;
    struct sup_shaper *s = obj;
    uint64_t sum = 0;
    if (s->nclasses && s->default_class < 0)
        return sup_fail(pc, s->src.line, s->src.section, NULL,
                        "no class of port %s has default = yes; exactly one must", s->port_name);
    for (size_t j = 0; j < m->nclasses; j++) {
        if (m->classes[j].port != s->port)
            continue;
        sum += m->classes[j].rate;
        if (sum > s->rate)
            return sup_fail(pc, KLINE(&m->classes[j], SUP_CLASS_RATE), m->classes[j].src.section, "rate",
                            "the classes of port %s guarantee %s in all, above the port's rate %s", s->port_name,
                            RATE(sum), RATE(s->rate));
    }
    return 0;
}

/* @own's keys that its section sets, over @s. */
static void sup_service_merge(struct sup_service *s, const struct sup_service *own)
{
    const struct sup_section_type *t = &sup_sections[SUP_SEC_SERVICE];
    for (size_t k = 0; k < t->nkeys; k++)
        if (own->src.key_line[k])
            memcpy((char *)s + t->keys[k].off, (const char *)own + t->keys[k].off, t->keys[k].size);
    s->src = own->src;
}

/* Build the service list the manifest implies and merge the explicit
 * [service] sections into it. */
static int sup_check_services(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    for (size_t p = 0; p < m->nports; p++)
        if (m->ports[p].queues == 0 && !m->ports[p].vlan_ntags)
            m->ports[p].queues = 1; /* a TAP port: its driver's keys (queues among them) get no defaults */
    if (sup_check_groups(pc)) /* group_manifest.c: before the [service] names, which may be a group's */
        return pc->rc;
    const struct sup_router *r = &m->router;
    if (r->restart_cpu_max_pct && r->restart_cpu_max_pct < 10)
        return sup_fail(pc, KLINE(r, SUP_ROUTER_RESTART_CPU_MAX), r->src.section, "restart_cpu_max_pct",
                        "%u: at least 10 (the kernel's smallest quota, 1 ms of each 10 ms period), or 0 for no limit",
                        r->restart_cpu_max_pct);
    for (size_t i = 0; i < pc->nsvc; i++) {
        struct sup_service *s = &pc->svc[i];
        const char *n = s->name;
        if (s->cpu_max_pct && s->cpu_max_pct < 10)
            return sup_fail(pc, KLINE(s, SUP_SERVICE_CPU_MAX_PCT), s->src.section, "cpu_max_pct",
                            "%u: at least 10 (the kernel's smallest quota, 1 ms of each 10 ms period), or 0 for "
                            "no limit", s->cpu_max_pct);
        if (strcmp(n, "router") == 0 || (strcmp(n, "routes") == 0 && m->daemon.src.line) ||
            (strcmp(n, "filter") == 0 && m->filter.src.line))
            continue;
        const char *pn = strncmp(n, "driver-", 7) == 0 ? n + 7 : strncmp(n, "shaper-", 7) == 0 ? n + 7
                         : strncmp(n, "cp-", 3) == 0 && m->router.control_netns[0] ? n + 3 : NULL;
        if (!pn)
            return sup_fail(pc, s->src.line, s->src.section, NULL,
                            "\"%s\" is not a service: expected router, driver-PORT, driver-PORT.QUEUE, "
                            "shaper-PORT or (with [router] control_netns) cp-PORT",
                            n);
        /* driver-PORT.QUEUE: a port's queue beyond the first (only VLAN ports' names have dots). */
        char port[SUP_SERVICE_MAX + 1];
        snprintf(port, sizeof port, "%s", pn);
        char *dot = sup_manifest_port(m, port) >= 0 ? NULL : strrchr(port, '.'); /* a VLAN port: lan.10 */
        long q = 0;
        if (dot) {
            char *end;
            *dot = 0;
            q = strtol(dot + 1, &end, 10);
            if (n[0] != 'd' || !dot[1] || *end || dot[1] == '0' || q < 1)
                return sup_fail(pc, s->src.line, s->src.section, NULL,
                                "\"%s\" is not a service: expected router, driver-PORT, driver-PORT.QUEUE (QUEUE "
                                "from 1) or shaper-PORT",
                                n);
        }
        bool group = false;
        int pi = n[0] == 'd' ? sup_group_service_ref(pc, s, port, &group) : sup_manifest_port(m, port);
        if (pc->rc)
            return pc->rc;
        if (pi < 0)
            return sup_fail(pc, s->src.line, s->src.section, NULL, "no port \"%s\"", port);
        if (group && q)
            return sup_fail(pc, s->src.line, s->src.section, NULL,
                            "group %s's driver serves one queue of each port: its only driver is driver-%s", port,
                            port);
        if (group)
            continue;
        if (n[0] == 's' && m->ports[pi].shaper < 0)
            return sup_fail(pc, s->src.line, s->src.section, NULL, "port %s has no [shaper %s] section", port,
                            port);
        const struct sup_port *pp = &m->ports[pi];
        if (pp->vlan_ntags && n[0] == 'd')
            return sup_fail(pc, s->src.line, s->src.section, NULL,
                            "port %s is a VLAN port: its parent %s's drivers serve it (driver-%s)", port,
                            pp->parent_name, pp->parent_name);
        if (pp->vlan_ntags)
            continue;
        if (q >= (long)pp->queues && pp->queues == 1)
            return sup_fail(pc, s->src.line, s->src.section, NULL,
                            "port %s has one queue: its only driver is driver-%s", port, port);
        if (q >= (long)pp->queues)
            return sup_fail(pc, s->src.line, s->src.section, NULL,
                            "port %s has %u queues (line %u): its drivers are driver-%s and driver-%s.1 to "
                            "driver-%s.%u",
                            port, pp->queues, KLINE(pp, SUP_PORT_QUEUES), port, port, port, pp->queues - 1);
    }
    size_t ndrv = 0;
    for (size_t p = 0; p < m->nports; p++)
        ndrv += m->ports[p].queues;
    if (ndrv > SUP_DRIVERS_MAX) {
        size_t p = m->nports;
        while (p > 0 && m->ports[p - 1].queues == 1)
            p--;
        const struct sup_port *last = &m->ports[p ? p - 1 : 0];
        return sup_fail(pc, KLINE(last, SUP_PORT_QUEUES) ? KLINE(last, SUP_PORT_QUEUES) : last->src.line,
                        last->src.section, KLINE(last, SUP_PORT_QUEUES) ? "queues" : NULL,
                        "the ports' queues add up to %zu driver instances; the router takes at most %d", ndrv,
                        SUP_DRIVERS_MAX);
    }
    /* A group's ports have one driver between them, listed at its first. */
    size_t ndsvc = ndrv;
    for (size_t p = 0; p < m->nports; p++)
        ndsvc -= m->ports[p].group_name[0] && sup_group_first(m, m->ports[p].group_name) != (int)p;
    size_t ncp = m->router.control_netns[0] ? m->nports : 0;
    size_t total = 1 + ndsvc + m->nshapers + ncp + (m->daemon.src.line ? 1 : 0) + (m->filter.src.line ? 1 : 0);
    m->services = calloc(total, sizeof *m->services);
    if (!m->services)
        return sup_oom(pc);
    /* The router, each port's drivers (queue 0, then 1..), the shapers. */
    size_t i = 0;
    m->services[i++] = (struct sup_service){.kind = SUP_SVC_ROUTER, .port = -1};
    for (size_t p = 0; p < m->nports; p++) {
        uint32_t members = sup_group_members(m, p);
        if (members && sup_group_first(m, m->ports[p].group_name) != (int)p)
            continue;
        for (uint32_t q = 0; q < m->ports[p].queues; q++)
            m->services[i++] =
                (struct sup_service){.kind = SUP_SVC_DRIVER, .port = (int)p, .queue = (int)q, .members = members};
    }
    for (size_t k = 0; k < m->nshapers; k++)
        m->services[i++] = (struct sup_service){.kind = SUP_SVC_SHAPER, .port = m->shapers[k].port};
    for (size_t p = 0; p < ncp; p++)
        m->services[i++] = (struct sup_service){.kind = SUP_SVC_CP, .port = (int)p};
    if (m->daemon.src.line)
        m->services[i++] = (struct sup_service){.kind = SUP_SVC_ROUTES, .port = -1};
    if (m->filter.src.line)
        m->services[i++] = (struct sup_service){.kind = SUP_SVC_FILTER, .port = -1};
    for (i = 0; i < total; i++) {
        struct sup_service *s = &m->services[i];
        enum sup_service_kind kind = s->kind;
        int port = s->port, queue = s->queue;
        uint32_t members = s->members;
        if (kind == SUP_SVC_ROUTER || kind == SUP_SVC_ROUTES || kind == SUP_SVC_FILTER)
            snprintf(s->name, sizeof s->name, kind == SUP_SVC_ROUTER ? "router" : kind == SUP_SVC_ROUTES ? "routes" : "filter");
        else if (members)
            snprintf(s->name, sizeof s->name, "driver-%s", m->ports[port].group_name);
        else
            snprintf(s->name, sizeof s->name, "%s-%s",
                     kind == SUP_SVC_DRIVER ? "driver" : kind == SUP_SVC_CP ? "cp" : "shaper", m->ports[port].name);
        /* A queue's driver starts from its port's [service driver-PORT], then
         * takes the keys its own [service driver-PORT.QUEUE] sets. */
        const struct sup_service *base = NULL, *own = NULL;
        for (size_t j = 0; j < pc->nsvc; j++)
            if (strcmp(pc->svc[j].name, s->name) == 0)
                base = &pc->svc[j];
        if (queue) {
            size_t len = strlen(s->name);
            snprintf(s->name + len, sizeof s->name - len, ".%d", queue);
            for (size_t j = 0; j < pc->nsvc; j++)
                if (strcmp(pc->svc[j].name, s->name) == 0)
                    own = &pc->svc[j];
        }
        char name[sizeof s->name];
        memcpy(name, s->name, sizeof name);
        if (base) {
            *s = *base;
        } else {
            sup_defaults(pc, &sup_sections[SUP_SEC_SERVICE], s);
            s->cpu = -1;
            s->src = (struct sup_src){0};
        }
        if (own)
            sup_service_merge(s, own);
        memcpy(s->name, name, sizeof name);
        if (!own && !base)
            snprintf(s->src.section, sizeof s->src.section, "service %s", s->name);
        s->kind = kind;
        s->port = port;
        s->queue = queue;
        s->members = members;
        if (!KLINE(s, SUP_SERVICE_NICE) && kind != SUP_SVC_CP && kind != SUP_SVC_ROUTES)
            s->nice = SUP_PATH_NICE;
    }
    m->nservices = total;
    return 0;
}

/* Without `user`, service i runs as uids.first + i: the range must hold
 * them all. Whether those uids are free is for `up` to see (uids.c): it
 * depends on the machine, not on the manifest. */
static int sup_check_uids(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    struct sup_router *r = &m->router;
    if (r->user[0])
        return 0;
    uint64_t have = (uint64_t)r->uids.last - r->uids.first + 1;
    if (have < m->nservices) {
        unsigned line = KLINE(r, SUP_ROUTER_UIDS);
        return sup_fail(pc, line ? line : r->src.line, r->src.section, "uids",
                        "%u-%u holds %llu uid%s, and the manifest has %zu services: each needs its own", r->uids.first,
                        r->uids.last, (unsigned long long)have, have == 1 ? "" : "s", m->nservices);
    }
    for (size_t i = 0; i < m->nservices; i++)
        m->services[i].uid = r->uids.first + (uint32_t)i;
    return 0;
}

/* [router] control_netns: a namespace that exists (`ip netns add`), room
 * for each port's host-side interface (a router port and a driver
 * instance more), and that interface's name (cp_ifname, else cp-NAME). */
static int sup_check_cp(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    const struct sup_router *r = &m->router;
    unsigned line = KLINE(r, SUP_ROUTER_CONTROL_NETNS);
    for (size_t p = 0; p < m->nports && !r->control_netns[0]; p++)
        if (KLINE(&m->ports[p], SUP_PORT_CP_IFNAME))
            return sup_fail(pc, KLINE(&m->ports[p], SUP_PORT_CP_IFNAME), m->ports[p].src.section, "cp_ifname",
                            "no [router] control_netns to put it in");
    if (!r->control_netns[0])
        return 0;
    char path[SUP_NETNS_MAX + 16];
    snprintf(path, sizeof path, "/run/netns/%s", r->control_netns);
    struct stat st;
    if (stat(path, &st) < 0)
        return sup_fail(pc, line, r->src.section, "control_netns", "%s: %s (create it with: ip netns add %s)", path,
                        strerror(errno), r->control_netns);
    size_t ndrv = m->nports;
    for (size_t p = 0; p < m->nports; p++)
        ndrv += m->ports[p].queues > 1 ? m->ports[p].queues : 1;
    if (m->nports > SUP_CP_PORTS_MAX || ndrv > SUP_DRIVERS_MAX)
        return sup_fail(pc, line, r->src.section, "control_netns",
                        "each port's host-side interface is a router port and a driver more: at most %d ports and "
                        "%d driver instances with them, and the manifest has %zu ports and %zu",
                        SUP_CP_PORTS_MAX, SUP_DRIVERS_MAX, m->nports, ndrv);
    for (size_t p = 0; p < m->nports; p++) {
        struct sup_port *pt = &m->ports[p];
        if (!pt->cp_ifname[0] && strlen(pt->name) + 3 > SUP_IFNAME_MAX)
            return sup_fail(pc, pt->src.line, pt->src.section, NULL,
                            "its interface in the control namespace, cp-%s, is longer than %d characters: name it "
                            "with cp_ifname",
                            pt->name, SUP_IFNAME_MAX);
        if (!pt->cp_ifname[0])
            snprintf(pt->cp_ifname, sizeof pt->cp_ifname, "cp-%.12s", pt->name); /* fits: checked above */
        /* Its name is its router port's too, in the router's counters: unique among both. */
        for (size_t q = 0; q < m->nports; q++)
            if ((q < p && strcmp(m->ports[q].cp_ifname, pt->cp_ifname) == 0) ||
                strcmp(m->ports[q].name, pt->cp_ifname) == 0)
                return sup_fail(pc, KLINE(pt, SUP_PORT_CP_IFNAME) ? KLINE(pt, SUP_PORT_CP_IFNAME) : pt->src.line,
                                pt->src.section, "cp_ifname", "\"%s\" is already port %s's %s", pt->cp_ifname,
                                m->ports[q].name, q < p && strcmp(m->ports[q].cp_ifname, pt->cp_ifname) == 0
                                                      ? "in the control namespace" : "name");
    }
    return 0;
}

int sup_check(struct sup_pctx *pc)
{
    if (sup_check_router(pc) || sup_check_pool(pc) || sup_check_ports(pc) || sup_check_ports6(pc) ||
        sup_each(pc, SUP_SEC_ROUTE, sup_check_route) || sup_each(pc, SUP_SEC_NEIGH, sup_check_neigh) ||
        sup_each(pc, SUP_SEC_SHAPER, sup_check_shaper) || sup_each(pc, SUP_SEC_CLASS, sup_check_class) ||
        sup_each(pc, SUP_SEC_SHAPER, sup_check_class_sums) || sup_check_cp(pc) || sup_check_routes(pc) ||
        sup_check_filter(pc))
        return pc->rc;
    if (sup_check_services(pc))
        return pc->rc;
    return sup_check_uids(pc);
}
