/* SPDX-License-Identifier: MIT */
/*
 * supervisor/reload_plan.c: what a reload changes, found by comparing the
 * running manifest with the new one object by object, each keyed by what
 * names it (a route by its prefix, a neighbour by its address, a class by
 * its port and name, a service by its name), never by its line.
 *
 * Four kinds of change:
 *   - live: routes (into the FIB here, each entry in one atomic store, as
 *     `route replace` does), persist (one ioctl), the supervisor's own
 *     service options (restart, restart_limit, restart_window); neighbours
 *     and shaper rates queued for their mailboxes (reload.c sends them);
 *   - a restart: what a service reads from its config blob only at start
 *     (hang_ms, cpu, poll_us, binary, sched, the router's icmp_rate and
 *     icmp_burst, a shaper's burst, overhead and classes);
 *   - a new port (TAP, after the others): its services start, and the
 *     router restarts to take its rings (reload.c makes them);
 *   - a port removed (TAP or AF_XDP, with every port after it): its routes
 *     leave the FIBs here, its services stop, the router restarts without
 *     its rings, and reload.c releases them and its device;
 *   - refused: what the pool, the rings or the devices were made from, and
 *     so only a new `up` can change (sup_reload_refused): a port changed,
 *     or removed while one after it stays, a shaper added to or removed
 *     from a port that stays.
 * Runtime routes (route add|replace) and rates (shaper set) stay unless the
 * new manifest changes what it says for them: the manifest's then applies.
 */
#include "supervisor/reload_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/route6.h"
#include "supervisor/shaper_ctl.h"
#include "tables/neigh.h"

/* "; " between parts of a refusal or a restart's reason, while they fit. */
static void add_why(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_why(char *buf, size_t len, const char *fmt, ...)
{
    size_t at = strlen(buf);
    if (at + 4 >= len)
        return;
    if (at)
        at += (size_t)snprintf(buf + at, len - at, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
}

/* The first key in which two ports of the same name differ, or NULL. */
static const char *port_differs(const struct sup_port *a, const struct sup_port *b)
{
    if (a->driver != b->driver)
        return "driver";
    if (strcmp(a->ifname, b->ifname) != 0)
        return "ifname";
    if (a->address.addr != b->address.addr || a->address.len != b->address.len)
        return "address";
    if (a->mtu != b->mtu)
        return "mtu";
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
    if (a->naddr6 != b->naddr6)
        return "address6";
    for (unsigned k = 0; k < a->naddr6; k++)
        if (memcmp(a->addr6[k].addr, b->addr6[k].addr, 16) != 0 || a->addr6[k].len != b->addr6[k].len)
            return "address6";
    if ((a->shaper >= 0) != (b->shaper >= 0))
        return a->shaper >= 0 ? "[shaper] removed" : "[shaper] added";
    return NULL;
}

static bool has_port(const struct sup_manifest *m, const char *name)
{
    return sup_manifest_port(m, name) >= 0;
}

int sup_reload_svc(const struct sup *s, const char *name)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (strcmp(s->svcs[i].name, name) == 0)
            return i;
    return -1;
}

/* How many of @o's ports @n keeps: the first ones, if the removed ones are
 * the last (the only removal a reload makes). */
static size_t kept_ports(const struct sup_manifest *o, const struct sup_manifest *n)
{
    size_t k = 0;
    while (k < o->nports && has_port(n, o->ports[k].name))
        k++;
    return k;
}

bool sup_reload_refused(const struct sup *s, const struct sup_manifest *o, const struct sup_manifest *n, char *why,
                        size_t len)
{
    why[0] = '\0';
    char ports[300] = "";
    /* The ports that stay keep their indices, which the FIBs' next hops, the
     * neighbour tables and the router's rings name: so only the last ports
     * go, and a new port never takes a removed one's index while the old
     * router may still send there. */
    size_t keep = kept_ports(o, n);
    for (size_t i = keep; i < o->nports; i++) {
        const struct sup_port *op = &o->ports[i];
        if (has_port(n, op->name))
            add_why(ports, sizeof(ports), "removed %s, but %s after it stays: a port is removed live only with "
                    "every port after it", o->ports[keep].name, op->name);
    }
    if (!ports[0] && keep < o->nports && n->nports > keep)
        add_why(ports, sizeof(ports), "removed %s and added %s in one reload: remove in one reload, add in the next",
                o->ports[keep].name, n->ports[keep].name);
    for (size_t i = 0; i < keep && !ports[0]; i++) {
        const char *k = strcmp(o->ports[i].name, n->ports[i].name) != 0 ? "order" : port_differs(&o->ports[i], &n->ports[i]);
        if (k && strcmp(k, "order") == 0)
            add_why(ports, sizeof(ports), "added %s before %s: new ports go after the others", n->ports[i].name,
                    o->ports[i].name);
        else if (k && k[0] == '[') /* a [shaper] added or removed: said as it is */
            add_why(ports, sizeof(ports), "port %s: %s", n->ports[i].name, k);
        else if (k)
            add_why(ports, sizeof(ports), "port %s: %s changed (or remove the port, with every port after it, in "
                    "one reload and add it back in the next)", n->ports[i].name, k);
    }
    for (size_t i = o->nports; i < n->nports && !ports[0]; i++)
        if (n->ports[i].driver != SUP_DRIVER_TAP)
            add_why(ports, sizeof(ports), "added %s: an AF_XDP port is added only at up", n->ports[i].name);
    if (ports[0])
        add_why(why, len, "ports changed (%s)", ports);
    size_t added = 0;
    for (size_t i = 0; i < n->nservices; i++)
        added += sup_reload_svc(s, n->services[i].name) < 0;
    if (!why[0] && (s->nsvcs + added > SUP_MAX_SERVICES || s->nrings + 3 * added > SUP_MAX_RINGS))
        add_why(why, len, "the new ports' services and rings would pass the supervisor's bounds");
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
            add_why(why, len, "[router] %s changed", keys[i]);
    /* Whatever else changed the service set (a port's queues) is a port change above. */
    for (size_t i = 0; i < o->nservices && !why[0]; i++)
        if (sup_manifest_service(n, o->services[i].name) < 0 && o->services[i].port < (int)keep)
            add_why(why, len, "service %s removed", o->services[i].name);
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

static void restart_why(struct rl_ctx *c, const char *svc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void restart_why(struct rl_ctx *c, const char *svc, const char *fmt, ...)
{
    int i = sup_reload_svc(c->s, svc);
    if (i < 0 || c->rs[i].fresh)
        return;
    struct rl_restart *r = &c->rs[i];
    r->on = true;
    char part[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(part, sizeof(part), fmt, ap);
    va_end(ap);
    add_why(r->why, sizeof(r->why), "%s", part);
}

/* ---- routes ---- */

static const char *nh4(const struct sup_manifest *m, const struct sup_route *r, char *buf, size_t len)
{
    char a[20];
    if (r->direct)
        snprintf(buf, len, "port %s", m->ports[r->port].name);
    else
        snprintf(buf, len, "via %s", sup_ip_str(r->via, a, sizeof(a)));
    return buf;
}

static const char *nh6(const struct sup_manifest *m, const struct sup_route *r, char *buf, size_t len)
{
    char a[64];
    if (r->direct)
        snprintf(buf, len, "port %s", m->ports[r->port].name);
    else if (sup_ll6(r->via6))
        snprintf(buf, len, "via %s port %s", sup_addr6_str(r->via6, a, sizeof(a)), m->ports[r->port].name);
    else
        snprintf(buf, len, "via %s", sup_addr6_str(r->via6, a, sizeof(a)));
    return buf;
}

static bool same_prefix(const struct sup_route *a, const struct sup_route *b)
{
    if (a->v6 != b->v6)
        return false;
    if (a->v6)
        return a->prefix6.len == b->prefix6.len && memcmp(a->prefix6.addr, b->prefix6.addr, 16) == 0;
    return a->prefix.addr == b->prefix.addr && a->prefix.len == b->prefix.len;
}

static bool same_nexthop(const struct sup_route *a, const struct sup_route *b)
{
    if (a->direct != b->direct || a->port != b->port)
        return false;
    if (a->direct)
        return true;
    return a->v6 ? memcmp(a->via6, b->via6, 16) == 0 : a->via == b->via;
}

static const struct sup_route *find_route(const struct sup_manifest *m, const struct sup_route *r)
{
    for (size_t i = 0; i < m->nroutes; i++)
        if (same_prefix(&m->routes[i], r))
            return &m->routes[i];
    return NULL;
}

static const char *prefix_str(const struct sup_route *r, char *buf, size_t len)
{
    char a[64];
    if (r->v6)
        snprintf(buf, len, "%s/%u", sup_addr6_str(r->prefix6.addr, a, sizeof(a)), r->prefix6.len);
    else
        snprintf(buf, len, "%s/%u", sup_ip_str(r->prefix.addr, a, sizeof(a)), r->prefix.len);
    return buf;
}

/* Route @r (of c->n) into the FIB: added, or over what is there. */
static int route_put(struct rl_ctx *c, const struct sup_route *r, bool *over_runtime)
{
    struct sup *s = c->s;
    *over_runtime = false;
    int ret;
    if (r->v6) {
        struct fib6_nh nh = {.port = (uint16_t)r->port}, old;
        if (!r->direct)
            memcpy(nh.gw, r->via6, 16);
        bool there = fib6_get(&s->fib6, r->prefix6.addr, r->prefix6.len, &old) == 0;
        ret = there ? fib6_replace(&s->fib6, r->prefix6.addr, r->prefix6.len, &nh)
                    : fib6_add(&s->fib6, r->prefix6.addr, r->prefix6.len, &nh);
        fib6_reclaim(&s->fib6);
        if (ret == 0 && sup_route6_runtime(s, r->prefix6.addr, r->prefix6.len)) {
            sup_route6_forget(s, r->prefix6.addr, r->prefix6.len);
            *over_runtime = true;
        }
        return ret;
    }
    struct fib_nh nh = {.gw = r->direct ? 0 : r->via, .port = (uint16_t)r->port}, old;
    bool there = fib_get(&s->fib, r->prefix.addr, r->prefix.len, &old) == 0;
    /* Replace: each entry of the range goes from the old next hop to the
     * new in one atomic store, so no packet finds no route (tables/fib_write.c). */
    ret = there ? fib_replace(&s->fib, r->prefix.addr, r->prefix.len, &nh)
                : fib_add(&s->fib, r->prefix.addr, r->prefix.len, &nh);
    fib_reclaim(&s->fib);
    if (ret == 0 && sup_route_runtime(s, r->prefix.addr, r->prefix.len)) {
        sup_route_forget(s, r->prefix.addr, r->prefix.len);
        *over_runtime = true;
    }
    return ret;
}

/* Is @r's prefix a runtime route (`ringrouter route add|replace`) now? */
static bool runtime(struct sup *s, const struct sup_route *r)
{
    return r->v6 ? sup_route6_runtime(s, r->prefix6.addr, r->prefix6.len)
                 : sup_route_runtime(s, r->prefix.addr, r->prefix.len);
}

/* Route @r (of c->o) out of the FIB, unless a runtime route took its place. */
static int route_drop(struct rl_ctx *c, const struct sup_route *r, const char **note)
{
    struct sup *s = c->s;
    int ret;
    *note = "";
    if (runtime(s, r)) {
        *note = " (the runtime route for it stays)";
        return 0;
    }
    if (r->v6) {
        ret = fib6_del(&s->fib6, r->prefix6.addr, r->prefix6.len);
        fib6_reclaim(&s->fib6);
    } else {
        ret = fib_del(&s->fib, r->prefix.addr, r->prefix.len);
        fib_reclaim(&s->fib);
    }
    if (ret == -ENOENT) {
        *note = " (it was deleted already)";
        return 0;
    }
    return ret;
}

static void route_failed(struct rl_ctx *c, const char *pfx, int ret)
{
    c->failed++;
    if (ret == -EAGAIN)
        fprintf(c->f, "route %s: not applied: the router still reads the table entries it needs; reload again\n", pfx);
    else
        fprintf(c->f, "route %s: not applied: %s\n", pfx, strerror(-ret));
}

static void walk_routes(struct rl_ctx *c)
{
    char p[64], h1[96], h2[96];
    for (size_t i = 0; i < c->o->nroutes; i++) {
        const struct sup_route *r = &c->o->routes[i];
        if (find_route(c->n, r))
            continue;
        prefix_str(r, p, sizeof(p));
        const char *note = "";
        if (!c->job && runtime(c->s, r))
            note = " (the runtime route for it stays)";
        int ret = c->job ? route_drop(c, r, &note) : 0;
        c->changes++;
        if (ret < 0)
            route_failed(c, p, ret);
        else
            fprintf(c->f, "route %s: removed%s\n", p, note);
    }
    for (size_t i = 0; i < c->n->nroutes; i++) {
        const struct sup_route *r = &c->n->routes[i];
        const struct sup_route *was = find_route(c->o, r);
        if (was && same_nexthop(was, r))
            continue;
        prefix_str(r, p, sizeof(p));
        bool over = false;
        if (!c->job)
            over = runtime(c->s, r);
        int ret = c->job ? route_put(c, r, &over) : 0;
        c->changes++;
        const char *note = over ? " (over the runtime route, which it replaces)" : "";
        if (ret < 0)
            route_failed(c, p, ret);
        else if (was)
            fprintf(c->f, "route %s: %s -> %s%s\n", p, r->v6 ? nh6(c->o, was, h1, sizeof(h1)) : nh4(c->o, was, h1, sizeof(h1)),
                    r->v6 ? nh6(c->n, r, h2, sizeof(h2)) : nh4(c->n, r, h2, sizeof(h2)), note);
        else
            fprintf(c->f, "route %s: added, %s%s\n", p, r->v6 ? nh6(c->n, r, h2, sizeof(h2)) : nh4(c->n, r, h2, sizeof(h2)),
                    note);
    }
}

/* ---- neighbours (both families, through the router's one mailbox) ---- */

/* @m's neighbour for @nb's address (of its family), or NULL. */
static const struct sup_neigh *find_neigh(const struct sup_manifest *m, const struct sup_neigh *nb)
{
    for (size_t i = 0; i < m->nneighs; i++) {
        const struct sup_neigh *x = &m->neighs[i];
        if (x->v6 == nb->v6 && (nb->v6 ? memcmp(x->addr6, nb->addr6, 16) == 0 : x->addr == nb->addr))
            return x;
    }
    return NULL;
}

static struct rl_op *new_op(struct rl_ctx *c)
{
    struct sup_reload *j = c->job;
    if (!j)
        return NULL;
    if (j->nops == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 16;
        struct rl_op *o = realloc(j->ops, cap * sizeof(*o));
        if (!o)
            return NULL;
        j->ops = o;
        j->cap = cap;
    }
    struct rl_op *op = &j->ops[j->nops++];
    memset(op, 0, sizeof(*op));
    return op;
}

static void neigh_op(struct rl_ctx *c, int op, const struct sup_neigh *nb)
{
    if (!c->job)
        return;
    int router = sup_reload_svc(c->s, "router");
    struct rl_op *o = new_op(c);
    if (!o || router < 0) {
        c->failed++;
        fprintf(c->f, "neigh: out of memory; not applied\n");
        return;
    }
    *o = (struct rl_op){.svc = router, .neigh = true, .v6 = nb->v6, .nop = op, .ip = nb->addr, .port = nb->port};
    memcpy(o->ip6, nb->addr6, 16);
    memcpy(o->mac, nb->mac, 6);
}

static const char *mac_str(const uint8_t *m, char *buf, size_t len)
{
    snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return buf;
}

static const char *neigh_addr(const struct sup_neigh *nb, char *buf, size_t len)
{
    return nb->v6 ? sup_addr6_str(nb->addr6, buf, len) : sup_ip_str(nb->addr, buf, len);
}

static void walk_neighs(struct rl_ctx *c)
{
    char a[64], m1[24], m2[24];
    for (size_t i = 0; i < c->o->nneighs; i++) {
        const struct sup_neigh *nb = &c->o->neighs[i];
        if (find_neigh(c->n, nb))
            continue;
        c->changes++;
        if (nb->port >= (int)c->n->nports) {
            /* The new router forgets every entry of a port it does not have. */
            fprintf(c->f, "neigh %s: removed with port %s\n", neigh_addr(nb, a, sizeof(a)),
                    c->o->ports[nb->port].name);
            continue;
        }
        fprintf(c->f, "neigh %s: removed\n", neigh_addr(nb, a, sizeof(a)));
        neigh_op(c, nb->v6 ? NEIGH_OP_DEL6 : NEIGH_OP_DEL, nb);
    }
    for (size_t i = 0; i < c->n->nneighs; i++) {
        const struct sup_neigh *nb = &c->n->neighs[i];
        const struct sup_neigh *was = find_neigh(c->o, nb);
        if (was && memcmp(was->mac, nb->mac, 6) == 0 && was->port == nb->port)
            continue;
        c->changes++;
        neigh_addr(nb, a, sizeof(a));
        if (was)
            fprintf(c->f, "neigh %s: mac %s port %s -> mac %s port %s\n", a, mac_str(was->mac, m1, sizeof(m1)),
                    c->o->ports[was->port].name, mac_str(nb->mac, m2, sizeof(m2)), c->n->ports[nb->port].name);
        else
            fprintf(c->f, "neigh %s: added, mac %s port %s\n", a, mac_str(nb->mac, m2, sizeof(m2)),
                    c->n->ports[nb->port].name);
        /* replace, not add: over an entry the router learned, or the old static one */
        neigh_op(c, nb->v6 ? NEIGH_OP_REPLACE6 : NEIGH_OP_REPLACE, nb);
    }
}

/* ---- shapers ---- */

static int cfg_class(const struct shp_cfg *cfg, const char *name)
{
    for (uint32_t k = 0; k < cfg->nclasses && k < SHP_MAX_CLASSES; k++)
        if (strcmp(cfg->classes[k].name, name) == 0)
            return (int)k;
    return -1;
}

/* A rate command for shaper @svc: class @cls (NULL: the port). */
static void rate_op(struct rl_ctx *c, int svc, const char *port, const char *cls, uint64_t rate, uint64_t ceil)
{
    if (!c->job)
        return;
    struct rl_op *o = new_op(c);
    if (!o) {
        c->failed++;
        fprintf(c->f, "shaper %s: out of memory; not applied\n", port);
        return;
    }
    o->svc = svc;
    int n = 0;
    snprintf(o->w[n++], sizeof(o->w[0]), "set");
    snprintf(o->w[n++], sizeof(o->w[0]), "%s", port);
    if (cls)
        snprintf(o->w[n++], sizeof(o->w[0]), "%s", cls);
    snprintf(o->w[n++], sizeof(o->w[0]), "rate");
    sup_rate_format(rate, o->w[n++], sizeof(o->w[0]));
    if (ceil) {
        snprintf(o->w[n++], sizeof(o->w[0]), "ceil");
        sup_rate_format(ceil, o->w[n++], sizeof(o->w[0]));
    }
    o->nw = n;
}

/*
 * One shaped port. What the shaper can change running (its port's rate, a
 * class's rate and ceil) goes through its mailbox, ordered so that the
 * guarantees fit at every step, as `shaper set` demands: a port that grows
 * first, then the classes whose rate comes down, then those whose rate goes
 * up, and a port that shrinks last. Anything else about its classes is in
 * its config only: a restart, whose instance starts from the new rates.
 */
static void walk_shaper(struct rl_ctx *c, int port)
{
    const char *pn = c->n->ports[port].name;
    struct shp_cfg oc, nc;
    sup_shaper_cfg(c->o, port, &oc);
    sup_shaper_cfg(c->n, port, &nc);
    char svc[SUP_SERVICE_MAX + 1], r1[32], r2[32], r3[32], r4[32];
    snprintf(svc, sizeof(svc), "shaper-%s", pn);
    int si = sup_reload_svc(c->s, svc);
    bool restart = false;
    /* A burst neither manifest sets is the default, which follows the rate:
     * the running shaper keeps its own, as it does after `shaper set`. */
    bool burst_set = c->o->shapers[c->o->ports[port].shaper].src.key_line[SUP_SHAPER_BURST] ||
                     c->n->shapers[c->n->ports[port].shaper].src.key_line[SUP_SHAPER_BURST];
    if (oc.burst != nc.burst && !burst_set) {
        fprintf(c->f, "shaper %s: burst %u -> %u, the default for the new rate: in effect at %s's next start\n", pn,
                oc.burst, nc.burst, svc);
    } else if (oc.burst != nc.burst) {
        c->changes++;
        fprintf(c->f, "shaper %s: burst %u -> %u (restarts %s)\n", pn, oc.burst, nc.burst, svc);
        restart_why(c, svc, "burst %u -> %u", oc.burst, nc.burst);
        restart = true;
    }
    if (oc.overhead != nc.overhead) {
        c->changes++;
        fprintf(c->f, "shaper %s: overhead %u -> %u (restarts %s)\n", pn, oc.overhead, nc.overhead, svc);
        restart_why(c, svc, "overhead %u -> %u", oc.overhead, nc.overhead);
        restart = true;
    }
    for (uint32_t k = 0; k < oc.nclasses; k++)
        if (cfg_class(&nc, oc.classes[k].name) < 0) {
            c->changes++;
            fprintf(c->f, "class %s %s: removed (restarts %s)\n", pn, oc.classes[k].name, svc);
            restart_why(c, svc, "class %s removed", oc.classes[k].name);
            restart = true;
        }
    for (uint32_t k = 0; k < nc.nclasses; k++) {
        const struct shp_cfg_class *n = &nc.classes[k];
        int ok = cfg_class(&oc, n->name);
        if (ok < 0) {
            c->changes++;
            fprintf(c->f, "class %s %s: added, rate %s ceil %s (restarts %s)\n", pn, n->name,
                    sup_rate_format(n->rate, r1, sizeof(r1)), sup_rate_format(n->ceil, r2, sizeof(r2)), svc);
            restart_why(c, svc, "class %s added", n->name);
            restart = true;
            continue;
        }
        const struct shp_cfg_class *o = &oc.classes[ok];
        const char *what = (uint32_t)ok != k ? "its place in the order" : o->prio != n->prio ? "prio"
                           : memcmp(&o->match, &n->match, sizeof(o->match)) != 0 ? "match"
                           : (oc.default_class == (uint32_t)ok) != (nc.default_class == k) ? "default" : NULL;
        if (what) {
            c->changes++;
            fprintf(c->f, "class %s %s: %s changed (restarts %s)\n", pn, n->name, what, svc);
            restart_why(c, svc, "class %s: %s changed", n->name, what);
            restart = true;
        }
    }
    uint64_t now = sup_shaper_overrides(si >= 0 ? &c->s->svcs[si] : NULL, &oc, &nc, restart, pn, &c->overrides, c->f);
    if (restart) {
        /* The new instance starts at the new rates: say them, queue nothing. */
        if (oc.rate != nc.rate) {
            c->changes++;
            fprintf(c->f, "shaper %s: rate %s -> %s\n", pn, sup_rate_format(oc.rate, r1, sizeof(r1)),
                    sup_rate_format(nc.rate, r2, sizeof(r2)));
        }
        if (si >= 0 && c->job)
            c->s->svcs[si].fresh_rates = true;
        return;
    }
    bool grow = nc.rate > now; /* than the rate in effect, which `shaper set` may have changed */
    if (oc.rate != nc.rate) {
        c->changes++;
        fprintf(c->f, "shaper %s: rate %s -> %s\n", pn, sup_rate_format(oc.rate, r1, sizeof(r1)),
                sup_rate_format(nc.rate, r2, sizeof(r2)));
        if (grow)
            rate_op(c, si, pn, NULL, nc.rate, 0);
    }
    /* A class that the port's new rate moves (shp_set_rate: a rate or ceil
     * that was the port's follows it) is set explicitly too. */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t k = 0; k < nc.nclasses; k++) {
            const struct shp_cfg_class *n = &nc.classes[k], *o = &oc.classes[k];
            bool down = n->rate < o->rate;
            if ((pass == 0) != down)
                continue;
            bool changed = n->rate != o->rate || n->ceil != o->ceil;
            if (changed) {
                c->changes++;
                fprintf(c->f, "class %s %s:", pn, n->name);
                if (n->rate != o->rate)
                    fprintf(c->f, " rate %s -> %s%s", sup_rate_format(o->rate, r1, sizeof(r1)),
                            sup_rate_format(n->rate, r2, sizeof(r2)), n->ceil != o->ceil ? "," : "");
                if (n->ceil != o->ceil)
                    fprintf(c->f, " ceil %s -> %s", sup_rate_format(o->ceil, r3, sizeof(r3)),
                            sup_rate_format(n->ceil, r4, sizeof(r4)));
                fprintf(c->f, "\n");
            }
            if (changed || oc.rate != nc.rate)
                rate_op(c, si, pn, n->name, n->rate, n->ceil);
        }
    if (oc.rate != nc.rate && !grow)
        rate_op(c, si, pn, NULL, nc.rate, 0);
}

/* ---- services, the router's options, ports' persist ---- */

static const char *restart_word(enum sup_restart r)
{
    return r == SUP_RESTART_ALWAYS ? "always" : r == SUP_RESTART_ON_FAILURE ? "on-failure" : "never";
}

static void walk_services(struct rl_ctx *c)
{
    for (size_t i = 0; i < c->n->nservices; i++) {
        int oi = sup_manifest_service(c->o, c->n->services[i].name);
        if (oi < 0)
            continue; /* a new port's: it starts (walk_ports) */
        const struct sup_service *o = &c->o->services[oi], *n = &c->n->services[i];
        char a[96], b[96];
        /* The supervisor's own: in effect at once. */
        if (o->restart != n->restart) {
            c->changes++;
            fprintf(c->f, "service %s: restart %s -> %s\n", n->name, restart_word(o->restart), restart_word(n->restart));
        }
        if (o->restart_limit != n->restart_limit) {
            c->changes++;
            fprintf(c->f, "service %s: restart_limit %u -> %u\n", n->name, o->restart_limit, n->restart_limit);
        }
        if (o->restart_window_ms != n->restart_window_ms) {
            c->changes++;
            fprintf(c->f, "service %s: restart_window %u ms -> %u ms\n", n->name, o->restart_window_ms,
                    n->restart_window_ms);
        }
        /* In its config blob (or how it is started): a restart. hang_ms
         * too, since the service wakes every hang_ms / 4 by its own copy. */
        struct {
            const char *key;
            bool diff;
        } k[] = {
            {"hang_ms", o->hang_ms != n->hang_ms},     {"cpu", o->cpu != n->cpu},
            {"poll_us", o->poll_us != n->poll_us},     {"binary", strcmp(o->binary, n->binary) != 0},
            {"sched", o->sched != n->sched},           {"nice", o->nice != n->nice},
            {"cpu_max_pct", o->cpu_max_pct != n->cpu_max_pct},
        };
        for (size_t j = 0; j < sizeof(k) / sizeof(k[0]); j++) {
            if (!k[j].diff)
                continue;
            if (j == 0) {
                snprintf(a, sizeof(a), "%u", o->hang_ms);
                snprintf(b, sizeof(b), "%u", n->hang_ms);
            } else if (j == 1) {
                snprintf(a, sizeof(a), "%d", (int)o->cpu);
                snprintf(b, sizeof(b), "%d", (int)n->cpu);
            } else if (j == 2) {
                snprintf(a, sizeof(a), "%u", o->poll_us);
                snprintf(b, sizeof(b), "%u", n->poll_us);
            } else if (j == 3) {
                snprintf(a, sizeof(a), "%s", o->binary[0] ? o->binary : "(its own)");
                snprintf(b, sizeof(b), "%s", n->binary[0] ? n->binary : "(its own)");
            } else if (j == 4) {
                snprintf(a, sizeof(a), "%s", o->sched == SUP_SCHED_BATCH ? "batch" : "normal");
                snprintf(b, sizeof(b), "%s", n->sched == SUP_SCHED_BATCH ? "batch" : "normal");
            } else if (j == 5) {
                snprintf(a, sizeof(a), "%d", (int)o->nice);
                snprintf(b, sizeof(b), "%d", (int)n->nice);
            } else {
                snprintf(a, sizeof(a), "%u", o->cpu_max_pct);
                snprintf(b, sizeof(b), "%u", n->cpu_max_pct);
            }
            c->changes++;
            fprintf(c->f, "service %s: %s %s -> %s (restarts %s)\n", n->name, k[j].key, a, b, n->name);
            restart_why(c, n->name, "%s %s -> %s", k[j].key, a, b);
        }
    }
    const struct sup_router *o = &c->o->router, *n = &c->n->router;
    if (o->icmp_rate != n->icmp_rate || o->icmp_burst != n->icmp_burst) {
        c->changes++;
        fprintf(c->f, "router: icmp_rate %u -> %u, icmp_burst %u -> %u (restarts router)\n", o->icmp_rate,
                n->icmp_rate, o->icmp_burst, n->icmp_burst);
        restart_why(c, "router", "icmp_rate or icmp_burst changed");
    }
}

static void walk_persist(struct rl_ctx *c)
{
    for (size_t p = 0; p < c->o->nports && p < c->n->nports; p++) {
        bool was = c->o->ports[p].persist, now = c->n->ports[p].persist;
        if (was == now)
            continue;
        c->changes++;
        int ret = 0;
        for (int i = 0; c->job && i < c->s->nsvcs; i++) {
            const struct sup_svc *v = &c->s->svcs[i];
            if (v->port == (int)p && v->kind == IPC_SVC_TAP && v->dev_fd >= 0 && ret == 0)
                ret = sup_tap_persist(v->dev_fd, now);
        }
        if (ret < 0) {
            c->failed++;
            fprintf(c->f, "port %s: persist %s -> %s: not applied: %s\n", c->n->ports[p].name, was ? "yes" : "no",
                    now ? "yes" : "no", strerror(-ret));
        } else {
            fprintf(c->f, "port %s: persist %s -> %s\n", c->n->ports[p].name, was ? "yes" : "no", now ? "yes" : "no");
        }
    }
}

/* New ports: their services start, and the router, which takes its rings
 * only at start, restarts. Removed ports (the last ones): their services
 * stop and the router restarts without their rings (reload.c releases them
 * once it has); their connected networks, and any runtime route through
 * them, leave the FIBs (withdraw_routes). */
static void walk_ports(struct rl_ctx *c)
{
    for (size_t p = c->n->nports; p < c->o->nports; p++) {
        const struct sup_port *op = &c->o->ports[p];
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
        restart_why(c, "router", "port %s removed: the router takes its rings at start", op->name);
    }
    for (size_t p = c->o->nports; p < c->n->nports; p++) {
        const struct sup_port *np = &c->n->ports[p];
        char a[20];
        c->changes++;
        fprintf(c->f, "port %s: added, %s %s%s%s, address %s/%u (starts", np->name,
                np->driver == SUP_DRIVER_TAP ? "tap" : "afxdp", np->ifname, np->netns[0] ? " in netns " : "", np->netns,
                sup_ip_str(np->address.addr, a, sizeof(a)), np->address.len);
        for (size_t i = 0; i < c->n->nservices; i++)
            if (c->n->services[i].port == (int)p)
                fprintf(c->f, " %s", c->n->services[i].name);
        fprintf(c->f, "; restarts router)\n");
        restart_why(c, "router", "port %s added: the router takes its rings at start", np->name);
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
    size_t from; /* the first removed port */
};

static int gone_push(struct gone_list *g, bool v6, const void *addr, unsigned len, uint16_t port)
{
    if (port < g->from)
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
static void withdraw_routes(struct rl_ctx *c)
{
    struct sup *s = c->s;
    struct gone_list g = {.from = c->n->nports};
    if (c->n->nports >= c->o->nports)
        return;
    /* (No tables at all: a unit test's supervisor.) */
    if ((s->fib.writer && fib_iterate(&s->fib, gone4, &g) < 0) ||
        (s->fib6.writer && fib6_iterate(&s->fib6, gone6, &g) < 0)) {
        c->failed++;
        fprintf(c->f, "port %s: its routes: out of memory; not withdrawn\n", c->o->ports[g.from].name);
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
            route_failed(c, p, ret);
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

void sup_reload_walk(struct rl_ctx *c)
{
    size_t both = c->o->nports < c->n->nports ? c->o->nports : c->n->nports;
    walk_ports(c);
    walk_routes(c);
    withdraw_routes(c);
    walk_neighs(c);
    for (size_t p = 0; p < both; p++)
        if (c->n->ports[p].shaper >= 0)
            walk_shaper(c, (int)p);
    walk_services(c);
    walk_persist(c);
    for (int i = 0; i < c->s->nsvcs; i++)
        if (c->rs[i].on && !c->rs[i].fresh)
            fprintf(c->f, "restart %s: %s\n", c->s->svcs[i].name, c->rs[i].why);
}
