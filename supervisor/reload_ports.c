/* SPDX-License-Identifier: MIT */
/*
 * supervisor/reload_ports.c: what a reload does to the ports, beside the
 * routes, neighbours, shapers and services (reload_plan.c):
 *   - refused (sup_reload_refused): a port's device changed (driver,
 *     ifname, netns, MAC, queues, offloads, ...), an AF_XDP port added,
 *     any port added or removed with a control namespace: the pool, the
 *     rings and the devices were made from these;
 *   - live (sup_reload_walk_live): a port's address, address6 and mtu. The
 *     router reads them from its config blob at start: it restarts through
 *     its warm standby, and the other ports' packets wait in their rings
 *     meanwhile, none lost. The connected networks move in the FIBs here;
 *     an mtu also restarts the port's TAP drivers (their receive frames
 *     are sized for it), once reload.c has set the device's (live.c);
 *   - a shaper added to or removed from a port that stays: the router and
 *     the port's first driver restart on the rings reload.c makes;
 *   - added (TAP) and removed (any port; both in one reload): the new
 *     manifest is laid out in the running one's slots first
 *     (port_slots.c), so that a port keeps its index for its life, then
 *     sup_reload_walk_ports and sup_reload_withdraw.
 */
#include "supervisor/reload_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/port_slots.h"
#include "supervisor/route6.h"

/* The first key in which two ports of the same name differ that only a
 * new `up` changes, or NULL: address, address6 and mtu change live. */
static const char *port_differs(const struct sup_port *a, const struct sup_port *b)
{
    if (a->driver != b->driver)
        return "driver";
    if (strcmp(a->ifname, b->ifname) != 0)
        return "ifname";
    if (strcmp(a->netns, b->netns) != 0)
        return "netns";
    if (a->has_mac != b->has_mac || (a->has_mac && memcmp(a->mac, b->mac, 6) != 0))
        return "mac";
    if (a->offloads != b->offloads)
        return "offloads";
    if (a->rx_inflight != b->rx_inflight)
        return "rx_inflight";
    if (a->queue_len != b->queue_len)
        return "queue_len";
    if (a->xdp_mode != b->xdp_mode)
        return "xdp_mode";
    if (a->steer != b->steer)
        return "steer";
    if (a->queues != b->queues)
        return "queues";
    if (a->busy_poll != b->busy_poll || a->busy_poll_us != b->busy_poll_us ||
        a->busy_poll_budget != b->busy_poll_budget)
        return "busy_poll";
    if (a->napi_defer_hard_irqs != b->napi_defer_hard_irqs)
        return "napi_defer_hard_irqs";
    if (a->gro_flush_timeout != b->gro_flush_timeout)
        return "gro_flush_timeout";
    return NULL;
}

static bool has_port(const struct sup_manifest *m, const char *name)
{
    return sup_manifest_port(m, name) >= 0;
}

bool sup_reload_slots(const struct sup_manifest *o, struct sup_manifest *n, char *why, size_t len)
{
    char slots[300];
    why[0] = '\0';
    if (!sup_slots_layout(o, n, slots, sizeof(slots)))
        return false;
    sup_reload_why(why, len, "ports changed (%s)", slots);
    return true;
}

bool sup_reload_refused(const struct sup *s, const struct sup_manifest *o, const struct sup_manifest *n, char *why,
                        size_t len)
{
    why[0] = '\0';
    char ports[300] = "";
    /* @n is laid out in @o's slots (sup_reload_slots): a port both have is
     * at the same index in each. */
    bool moved = false;
    for (size_t i = 0; i < o->nports && i < n->nports && !ports[0]; i++) {
        const struct sup_port *op = &o->ports[i], *np = &n->ports[i];
        if (op->vacant || np->vacant || strcmp(op->name, np->name) != 0)
            continue;
        const char *k = port_differs(op, np);
        if (k)
            sup_reload_why(ports, sizeof(ports), "port %s: %s changed (or remove the port in one reload and add it "
                    "back in the next)", np->name, k);
    }
    for (size_t i = 0; i < n->nports && !ports[0]; i++) {
        const struct sup_port *np = &n->ports[i];
        if (np->vacant || has_port(o, np->name))
            continue;
        moved = true;
        if (np->driver != SUP_DRIVER_TAP && !np->vlan_ntags) /* a VLAN port: its parent's driver (vlan_manifest.c) */
            sup_reload_why(ports, sizeof(ports), "added %s: an AF_XDP port is added only at up", np->name);
    }
    for (size_t i = 0; i < o->nports; i++)
        moved |= !o->ports[i].vacant && !has_port(n, o->ports[i].name);
    /* A host-side port's index follows the number of ports (cp.h). */
    if (!ports[0] && moved && n->router.control_netns[0])
        sup_reload_why(ports, sizeof(ports), "ports added or removed with a control namespace");
    if (ports[0])
        sup_reload_why(why, len, "ports changed (%s)", ports);
    size_t added = 0;
    for (size_t i = 0; i < n->nservices; i++)
        added += sup_reload_svc(s, n->services[i].name) < 0;
    if (!why[0] && (s->nsvcs + added > SUP_MAX_SERVICES || s->nrings + 3 * added > SUP_MAX_RINGS))
        sup_reload_why(why, len, "the new ports' services and rings would pass the supervisor's bounds");
    const struct sup_router *a = &o->router, *b = &n->router;
    static const char *const keys[] = {"name", "pool_buffers", "frame_size", "ring_size", "user", "group", "uids",
                                       "run_dir", "state_dir", "stages"};
    bool diff[] = {strcmp(a->name, b->name) != 0, a->pool_buffers != b->pool_buffers,
                   a->frame_size != b->frame_size, a->ring_size != b->ring_size, strcmp(a->user, b->user) != 0,
                   strcmp(a->group, b->group) != 0, a->uids.first != b->uids.first || a->uids.last != b->uids.last,
                   strcmp(a->run_dir, b->run_dir) != 0, strcmp(a->state_dir, b->state_dir) != 0,
                   a->stages != b->stages};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (diff[i])
            sup_reload_why(why, len, "[router] %s changed", keys[i]);
    /* Whatever else changed the service set (a port's queues) is a port
     * change above; a shaper goes with its [shaper] section, a driver with
     * its port. */
    for (size_t i = 0; i < o->nservices && !why[0]; i++) {
        const struct sup_service *ms = &o->services[i];
        bool port_stays = ms->port < 0 || (ms->port < (int)o->nports && has_port(n, o->ports[ms->port].name));
        if (sup_manifest_service(n, ms->name) < 0 && port_stays && ms->kind != SUP_SVC_SHAPER)
            sup_reload_why(why, len, "service %s removed", ms->name);
    }
    return why[0] != '\0';
}

void sup_reload_carry(const struct sup_manifest *o, struct sup_manifest *n)
{
    for (size_t i = 0; i < n->nports; i++) {
        int k = sup_manifest_port(o, n->ports[i].name);
        struct sup_port *np = &n->ports[i];
        const struct sup_port *op = k >= 0 ? &o->ports[k] : NULL;
        if (op && !np->src.key_line[SUP_PORT_MAC] && !op->src.key_line[SUP_PORT_MAC] && op->has_mac) {
            np->has_mac = true;
            memcpy(np->mac, op->mac, 6);
        }
    }
}

static void restart_drivers(struct rl_ctx *c, size_t p, bool first, const char *why);

/* A VLAN port added or removed (@what): the router and its parent's drivers,
 * which serve it, restart (on its rings: reload.c, reload_vlans). */
static void walk_vlan(struct rl_ctx *c, const struct sup_port *pt, const char *what)
{
    char a[20], tags[16];
    c->changes++;
    fprintf(c->f, "port %s: %s, VLAN %s of %s", pt->name, what, sup_vlan_str(pt, tags, sizeof(tags)), pt->parent_name);
    if (strcmp(what, "added") == 0)
        fprintf(c->f, ", address %s/%u", sup_ip_str(pt->address.addr, a, sizeof(a)), pt->address.len);
    fprintf(c->f, " (restarts router and %s's drivers)\n", pt->parent_name);
    sup_reload_restart(c, "router", "port %s %s: the router takes its rings at start", pt->name, what);
    int parent = sup_manifest_port(c->n, pt->parent_name);
    char why[80];
    snprintf(why, sizeof(why), "VLAN port %s %s", pt->name, what);
    if (parent >= 0)
        restart_drivers(c, (size_t)parent, false, why);
}

/* New ports: their services start, and the router, which takes its rings
 * only at start, restarts. Removed ports (their slots vacant): their services
 * stop and the router restarts without their rings (reload.c releases them
 * once it has); their connected networks, and any runtime route through
 * them, leave the FIBs (sup_reload_withdraw). */
void sup_reload_walk_ports(struct rl_ctx *c)
{
    for (size_t p = 0; p < c->o->nports; p++) {
        const struct sup_port *op = &c->o->ports[p];
        if (op->vacant || has_port(c->n, op->name))
            continue;
        if (op->vlan_ntags) {
            walk_vlan(c, op, "removed");
            continue;
        }
        c->changes++;
        fprintf(c->f, "port %s: removed, %s %s%s%s (stops", op->name, op->driver == SUP_DRIVER_TAP ? "tap" : "afxdp",
                op->ifname, op->netns[0] ? " in netns " : "", op->netns);
        for (size_t i = 0; i < c->o->nservices; i++)
            if (c->o->services[i].port == (int)p)
                fprintf(c->f, " %s", c->o->services[i].name);
        fprintf(c->f, "; %s; restarts router)\n",
                op->driver != SUP_DRIVER_TAP ? "its AF_XDP sockets and XDP program go"
                : op->persist                ? "the TAP stays (persist = yes)"
                                             : "its device goes");
        sup_reload_restart(c, "router", "port %s removed: the router takes its rings at start", op->name);
    }
    for (size_t p = 0; p < c->n->nports; p++) {
        const struct sup_port *np = &c->n->ports[p];
        char a[20];
        if (np->vacant || has_port(c->o, np->name))
            continue;
        if (np->vlan_ntags) {
            walk_vlan(c, np, "added");
            continue;
        }
        c->changes++;
        fprintf(c->f, "port %s: added, %s %s%s%s, address %s/%u (starts", np->name,
                np->driver == SUP_DRIVER_TAP ? "tap" : "afxdp", np->ifname, np->netns[0] ? " in netns " : "", np->netns,
                sup_ip_str(np->address.addr, a, sizeof(a)), np->address.len);
        for (size_t i = 0; i < c->n->nservices; i++)
            if (c->n->services[i].port == (int)p)
                fprintf(c->f, " %s", c->n->services[i].name);
        fprintf(c->f, "; restarts router)\n");
        sup_reload_restart(c, "router", "port %s added: the router takes its rings at start", np->name);
    }
}

/* The FIB entries (IPv4 and IPv6) whose next hop is a removed port. */
struct gone_route {
    bool v6;
    uint8_t addr[16];
    unsigned len;
    uint16_t port;
};

struct gone_list {
    struct gone_route *r;
    size_t n, cap;
    bool gone[IPC_MAX_PORTS]; /* @o's ports the new manifest has not */
};

static int gone_push(struct gone_list *g, bool v6, const void *addr, unsigned len, uint16_t port)
{
    if (port >= IPC_MAX_PORTS || !g->gone[port])
        return 0;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        struct gone_route *r = realloc(g->r, cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        g->r = r;
        g->cap = cap;
    }
    struct gone_route *e = &g->r[g->n++];
    *e = (struct gone_route){.v6 = v6, .len = len, .port = port};
    memcpy(e->addr, addr, v6 ? 16 : 4);
    return 0;
}

static int gone4(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    return gone_push(arg, false, &addr, len, nh->port);
}

static int gone6(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    return gone_push(arg, true, addr, len, nh->port);
}

/* Is @r one of @m's routes (walk_routes' to say)? */
static bool manifest_route(const struct sup_manifest *m, const struct gone_route *r)
{
    for (size_t i = 0; i < m->nroutes; i++) {
        const struct sup_route *mr = &m->routes[i];
        if (mr->v6 != r->v6)
            continue;
        uint32_t a4;
        memcpy(&a4, r->addr, 4);
        if (r->v6 ? mr->prefix6.len == r->len && memcmp(mr->prefix6.addr, r->addr, 16) == 0
                  : mr->prefix.len == r->len && mr->prefix.addr == a4)
            return true;
    }
    return false;
}

/*
 * What is left in the FIBs through a removed port once walk_routes has
 * taken the manifest's routes out: its connected networks, which go
 * without a line (the port's does), and runtime routes, each said. The old
 * router, still running, finds no route there from now on.
 */
void sup_reload_withdraw(struct rl_ctx *c)
{
    struct sup *s = c->s;
    struct gone_list g = {0};
    int first = -1;
    for (size_t p = 0; p < c->o->nports && p < IPC_MAX_PORTS; p++)
        if ((g.gone[p] = !c->o->ports[p].vacant && !has_port(c->n, c->o->ports[p].name)) && first < 0)
            first = (int)p;
    if (first < 0)
        return;
    /* (No tables at all: a unit test's supervisor.) */
    if ((s->fib.writer && fib_iterate(&s->fib, gone4, &g) < 0) ||
        (s->fib6.writer && fib6_iterate(&s->fib6, gone6, &g) < 0)) {
        c->failed++;
        fprintf(c->f, "port %s: its routes: out of memory; not withdrawn\n", c->o->ports[first].name);
        free(g.r);
        return;
    }
    for (size_t i = 0; i < g.n; i++) {
        const struct gone_route *r = &g.r[i];
        const char *pn = c->o->ports[r->port].name;
        if (!c->job && manifest_route(c->o, r))
            continue; /* walk_routes said it; in a reload it is out already */
        char p[64];
        uint32_t a4;
        memcpy(&a4, r->addr, 4);
        bool connected = false, runtime = false;
        if (r->v6) {
            const struct sup_port *op = &c->o->ports[r->port];
            for (unsigned k = 0; k < op->naddr6 && !connected; k++) {
                struct sup_prefix6 net = op->addr6[k];
                sup_mask6(net.addr, net.len);
                connected = net.len == r->len && memcmp(net.addr, r->addr, 16) == 0;
            }
            char a[64];
            snprintf(p, sizeof(p), "%s/%u", sup_addr6_str(r->addr, a, sizeof(a)), r->len);
        } else {
            const struct sup_prefix *pa = &c->o->ports[r->port].address;
            connected = pa->len == r->len && (pa->addr & (pa->len ? ~0u << (32 - pa->len) : 0)) == a4;
            runtime = sup_route_runtime(s, a4, r->len);
            char a[20];
            snprintf(p, sizeof(p), "%s/%u", sup_ip_str(a4, a, sizeof(a)), r->len);
        }
        if (!connected)
            fprintf(c->f, "route %s: withdrawn with port %s%s\n", p, pn, runtime ? " (a runtime route)" : "");
        if (!c->job)
            continue;
        int ret = r->v6 ? fib6_del(&s->fib6, r->addr, r->len) : fib_del(&s->fib, a4, r->len);
        if (ret < 0 && ret != -ENOENT) {
            sup_reload_route_failed(c, p, ret);
            continue;
        }
        if (runtime)
            sup_route_forget(s, a4, r->len);
    }
    if (c->job) {
        fib_reclaim(&s->fib);
        fib6_reclaim(&s->fib6);
    }
    free(g.r);
}

/* ---- a port's address, address6, mtu and ra, live ---- */

/* Network @net/@len (IPv4) to port @p in the FIB: over what is there (a
 * route the manifest or `route add` gave the same prefix), as `route
 * replace` puts it, or added. With @p < 0, out of the FIB. */
static int net4(struct sup *s, uint32_t net, unsigned len, int p)
{
    if (!s->fib.writer)
        return 0; /* a unit test's supervisor: no tables */
    int ret;
    if (p < 0) {
        ret = fib_del(&s->fib, net, len);
        ret = ret == -ENOENT ? 0 : ret;
    } else {
        struct fib_nh nh = {.port = (uint16_t)p}, old;
        ret = fib_get(&s->fib, net, len, &old) == 0 ? fib_replace(&s->fib, net, len, &nh)
                                                     : fib_add(&s->fib, net, len, &nh);
    }
    fib_reclaim(&s->fib);
    return ret;
}

static int net6(struct sup *s, const uint8_t *net, unsigned len, int p)
{
    if (!s->fib6.writer)
        return 0;
    int ret;
    if (p < 0) {
        ret = fib6_del(&s->fib6, net, len);
        ret = ret == -ENOENT ? 0 : ret;
    } else {
        struct fib6_nh nh = {.port = (uint16_t)p}, old;
        ret = fib6_get(&s->fib6, net, len, &old) == 0 ? fib6_replace(&s->fib6, net, len, &nh)
                                                       : fib6_add(&s->fib6, net, len, &nh);
    }
    fib6_reclaim(&s->fib6);
    return ret;
}

/* Does @pt have a global IPv6 address on network @net/@len (masked)? */
static bool on_net6(const struct sup_port *pt, const uint8_t *net, unsigned len)
{
    for (unsigned k = 0; k < pt->naddr6; k++) {
        struct sup_prefix6 x = pt->addr6[k];
        if (sup_ll6(x.addr) || x.len != len)
            continue;
        sup_mask6(x.addr, x.len);
        if (memcmp(x.addr, net, 16) == 0)
            return true;
    }
    return false;
}

static bool has_addr6(const struct sup_port *pt, const struct sup_prefix6 *a)
{
    for (unsigned k = 0; k < pt->naddr6; k++)
        if (pt->addr6[k].len == a->len && memcmp(pt->addr6[k].addr, a->addr, 16) == 0)
            return true;
    return false;
}

/* The IPv6 addresses @from has and @to has not: said, and their networks
 * that @to is not on out of the FIB (@gone) or into it (!@gone). */
static void walk_addr6(struct rl_ctx *c, size_t p, const struct sup_port *from, const struct sup_port *to, bool gone)
{
    char a[64], pfx[80];
    for (unsigned k = 0; k < from->naddr6; k++) {
        const struct sup_prefix6 *x = &from->addr6[k];
        if (has_addr6(to, x))
            continue;
        c->changes++;
        snprintf(pfx, sizeof(pfx), "%s/%u", sup_addr6_str(x->addr, a, sizeof(a)), x->len);
        fprintf(c->f, "port %s: address6 %s %s (restarts router)\n", to->name, pfx, gone ? "removed" : "added");
        sup_reload_restart(c, "router", "port %s: address6 %s %s", to->name, pfx, gone ? "removed" : "added");
        struct sup_prefix6 net = *x;
        sup_mask6(net.addr, net.len);
        if (!c->job || sup_ll6(x->addr) || on_net6(to, net.addr, net.len))
            continue;
        int ret = net6(c->s, net.addr, net.len, gone ? -1 : (int)p);
        if (ret < 0) {
            snprintf(pfx, sizeof(pfx), "%s/%u", sup_addr6_str(net.addr, a, sizeof(a)), net.len);
            sup_reload_route_failed(c, pfx, ret);
        }
    }
}

/* The port's driver instances (with @first, its first queue's alone: the
 * one a shaper feeds) restart, for @why. */
static void restart_drivers(struct rl_ctx *c, size_t p, bool first, const char *why)
{
    for (int i = 0; i < c->s->nsvcs; i++) {
        const struct sup_svc *v = &c->s->svcs[i];
        if (v->m && v->m->kind == SUP_SVC_DRIVER && sup_svc_serves(v, (int)p) && (!first || v->m->queue == 0))
            sup_reload_restart(c, v->name, "%s", why);
    }
}

void sup_reload_walk_live(struct rl_ctx *c)
{
    size_t both = c->o->nports < c->n->nports ? c->o->nports : c->n->nports;
    char a1[20], a2[20];
    for (size_t p = 0; p < both; p++) {
        const struct sup_port *op = &c->o->ports[p], *np = &c->n->ports[p];
        if (op->vacant || strcmp(op->name, np->name) != 0)
            continue; /* a vacant slot, or a port removed and another added */
        const struct sup_prefix *x = &op->address, *y = &np->address;
        if (x->addr != y->addr || x->len != y->len) {
            c->changes++;
            fprintf(c->f, "port %s: address %s/%u -> %s/%u (restarts router)\n", np->name,
                    sup_ip_str(x->addr, a1, sizeof(a1)), x->len, sup_ip_str(y->addr, a2, sizeof(a2)), y->len);
            sup_reload_restart(c, "router", "port %s: address changed", np->name);
            uint32_t on = x->addr & (x->len ? ~0u << (32 - x->len) : 0);
            uint32_t nn = y->addr & (y->len ? ~0u << (32 - y->len) : 0);
            if (c->job && (on != nn || x->len != y->len)) {
                /* The new network first: no moment when the port has none. */
                int ret = net4(c->s, nn, y->len, (int)p);
                if (ret == 0)
                    ret = net4(c->s, on, x->len, -1);
                if (ret < 0) {
                    char pfx[40];
                    snprintf(pfx, sizeof(pfx), "%s/%u", sup_ip_str(nn, a1, sizeof(a1)), y->len);
                    sup_reload_route_failed(c, pfx, ret);
                }
            }
        }
        walk_addr6(c, p, np, op, false);
        walk_addr6(c, p, op, np, true);
        if (op->mtu != np->mtu) {
            c->changes++;
            fprintf(c->f, "port %s: mtu %u -> %u (restarts router%s)\n", np->name, op->mtu, np->mtu,
                    np->driver == SUP_DRIVER_TAP ? " and the port's drivers" : "");
            sup_reload_restart(c, "router", "port %s: mtu %u -> %u", np->name, op->mtu, np->mtu);
            char why[40];
            snprintf(why, sizeof(why), "mtu %u -> %u", op->mtu, np->mtu);
            if (np->driver == SUP_DRIVER_TAP)
                restart_drivers(c, p, false, why);
        }
        /* A shaper comes or goes: the router's ring to the port's first
         * queue is the shaper's, or the driver's (reload.c makes them). */
        if ((op->shaper >= 0) != (np->shaper >= 0)) {
            bool add = np->shaper >= 0;
            c->changes++;
            fprintf(c->f, "port %s: [shaper] %s (%s shaper-%s; restarts router and the port's first driver)\n",
                    np->name, add ? "added" : "removed", add ? "starts" : "stops", np->name);
            sup_reload_restart(c, "router", "port %s: [shaper] %s", np->name, add ? "added" : "removed");
            restart_drivers(c, p, true, add ? "[shaper] added" : "[shaper] removed");
        }
        if (op->ra != np->ra || op->ra_interval != np->ra_interval) {
            c->changes++;
            fprintf(c->f, "port %s: ra %s, every %u s -> %s, every %u s (restarts router)\n", np->name,
                    op->ra ? "yes" : "no", op->ra_interval, np->ra ? "yes" : "no", np->ra_interval);
            sup_reload_restart(c, "router", "port %s: ra changed", np->name);
        }
    }
}
