/* SPDX-License-Identifier: MIT */
/*
 * supervisor/reload_plan.c: what a reload changes, found by comparing the
 * running manifest with the new one object by object, each keyed by what
 * names it (a route by its prefix, a neighbour by its address, a class by
 * its port and name, a service by its name), never by its line.
 *
 * Five kinds of change (the ports', reload_ports.c):
 *   - live: routes (into the FIB here, each entry in one atomic store, as
 *     `route replace` does), persist (one ioctl), the supervisor's own
 *     service options (restart, restart_limit, restart_window); neighbours
 *     and shaper rates queued for their mailboxes (reload.c sends them);
 *   - a restart: what a service reads from its config blob only at start
 *     (hang_ms, cpu, poll_us, binary, sched, the router's icmp_rate and
 *     icmp_burst, a shaper's burst, overhead and classes);
 *   - a new port (TAP, in a vacant slot or after the others: port_slots.c):
 *     its services start, and the router restarts to take its rings
 *     (reload.c makes them);
 *   - a port removed (TAP or AF_XDP, any: its slot stays vacant): its
 *     routes leave the FIBs here, its services stop, the router restarts
 *     without its rings, and reload.c releases them and its device;
 *   - a port that stays with a new address, address6, mtu or ra, or a
 *     shaper added or removed: the router (and the port's drivers, for an
 *     mtu or a shaper) restart on the new config;
 *   - refused: what the pool, the rings or the devices were made from, and
 *     so only a new `up` can change (sup_reload_refused): a port's device
 *     changed, an AF_XDP port added.
 * Runtime routes (route add|replace) and rates (shaper set) stay unless the
 * new manifest changes what it says for them: the manifest's then applies.
 */
#include "supervisor/reload_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/route6.h"
#include "supervisor/route_multi.h"
#include "supervisor/shaper_ctl.h"
#include "tables/neigh.h"

/* "; " between parts of a refusal or a restart's reason, while they fit. */
void sup_reload_why(char *buf, size_t len, const char *fmt, ...)
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

int sup_reload_svc(const struct sup *s, const char *name)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (strcmp(s->svcs[i].name, name) == 0)
            return i;
    return -1;
}


void sup_reload_restart(struct rl_ctx *c, const char *svc, const char *fmt, ...)
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
    sup_reload_why(r->why, sizeof(r->why), "%s", part);
}

/* ---- routes ---- */

static bool same_prefix(const struct sup_route *a, const struct sup_route *b)
{
    if (a->v6 != b->v6)
        return false;
    if (a->v6)
        return a->prefix6.len == b->prefix6.len && memcmp(a->prefix6.addr, b->prefix6.addr, 16) == 0;
    return a->prefix.addr == b->prefix.addr && a->prefix.len == b->prefix.len;
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

/* Route @r (of c->n) into the FIB: added, or over what is there, each
 * entry of its range from the old next hop (or group) to the new in one
 * atomic store, so that no packet finds no route (tables/fib_write.c). */
static int route_put(struct rl_ctx *c, const struct sup_route *r, bool *over_runtime)
{
    struct sup *s = c->s;
    *over_runtime = false;
    int ret = sup_mroute_put(s, r); /* route_mpath.c: one next hop or several */
    if (ret == 0 && r->v6 && sup_route6_runtime(s, r->prefix6.addr, r->prefix6.len)) {
        sup_route6_forget(s, r->prefix6.addr, r->prefix6.len);
        *over_runtime = true;
    }
    if (ret == 0 && !r->v6 && sup_route_runtime(s, r->prefix.addr, r->prefix.len)) {
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
    ret = r->v6 ? fib6_del(&s->fib6, r->prefix6.addr, r->prefix6.len) : fib_del(&s->fib, r->prefix.addr, r->prefix.len);
    if (ret == -ENOENT) {
        *note = " (it was deleted already)";
        return 0;
    }
    return ret;
}

void sup_reload_route_failed(struct rl_ctx *c, const char *pfx, int ret)
{
    c->failed++;
    if (ret == -EAGAIN)
        fprintf(c->f, "route %s: not applied: the router still reads the table entries it needs; reload again\n", pfx);
    else
        fprintf(c->f, "route %s: not applied: %s\n", pfx, strerror(-ret));
}

/*
 * The routes' part of a reload: removed, added and changed (one next hop
 * or several, members and weights) in one pass, and one generation switch
 * of both FIBs for all that it retired (fib_gen_defer), as a batch from a
 * routing daemon makes (supervisor/routes.c), then one reclaim.
 */
static void walk_routes(struct rl_ctx *c)
{
    char p[64], h1[SUP_ROUTE_NH_MAX * 72], h2[SUP_ROUTE_NH_MAX * 72];
    struct sup *s = c->s;
    if (c->job) {
        fib_gen_defer(&s->fib, true);
        fib6_gen_defer(&s->fib6, true);
    }
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
            sup_reload_route_failed(c, p, ret);
        else
            fprintf(c->f, "route %s: removed%s\n", p, note);
    }
    for (size_t i = 0; i < c->n->nroutes; i++) {
        const struct sup_route *r = &c->n->routes[i];
        const struct sup_route *was = find_route(c->o, r);
        if (was && sup_route_same_nh(was, r))
            continue;
        prefix_str(r, p, sizeof(p));
        bool over = false;
        if (!c->job)
            over = runtime(c->s, r);
        int ret = c->job ? route_put(c, r, &over) : 0;
        c->changes++;
        const char *note = over ? " (over the runtime route, which it replaces)" : "";
        if (ret < 0)
            sup_reload_route_failed(c, p, ret);
        else if (was)
            fprintf(c->f, "route %s: %s -> %s%s\n", p, sup_route_nh_str(was, h1, sizeof(h1)),
                    sup_route_nh_str(r, h2, sizeof(h2)), note);
        else
            fprintf(c->f, "route %s: added, %s%s\n", p, sup_route_nh_str(r, h2, sizeof(h2)), note);
    }
    if (c->job) {
        fib_gen_commit(&s->fib, &s->fib6);
        fib_gen_defer(&s->fib, false);
        fib6_gen_defer(&s->fib6, false);
        if (s->fib.writer)
            fib_reclaim(&s->fib);
        if (s->fib6.writer)
            fib6_reclaim(&s->fib6);
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
        if (sup_manifest_port(c->n, c->o->ports[nb->port].name) < 0) {
            fprintf(c->f, "neigh %s: removed with port %s\n", neigh_addr(nb, a, sizeof(a)),
                    c->o->ports[nb->port].name);
            /* The new router forgets every entry of a port whose slot is
             * vacant or gone (port_slots.c); one that took it is told. */
            if (nb->port < (int)c->n->nports && !c->n->ports[nb->port].vacant)
                neigh_op(c, nb->v6 ? NEIGH_OP_DEL6 : NEIGH_OP_DEL, nb);
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
        sup_reload_restart(c, svc, "burst %u -> %u", oc.burst, nc.burst);
        restart = true;
    }
    if (oc.overhead != nc.overhead) {
        c->changes++;
        fprintf(c->f, "shaper %s: overhead %u -> %u (restarts %s)\n", pn, oc.overhead, nc.overhead, svc);
        sup_reload_restart(c, svc, "overhead %u -> %u", oc.overhead, nc.overhead);
        restart = true;
    }
    for (uint32_t k = 0; k < oc.nclasses; k++)
        if (cfg_class(&nc, oc.classes[k].name) < 0) {
            c->changes++;
            fprintf(c->f, "class %s %s: removed (restarts %s)\n", pn, oc.classes[k].name, svc);
            sup_reload_restart(c, svc, "class %s removed", oc.classes[k].name);
            restart = true;
        }
    for (uint32_t k = 0; k < nc.nclasses; k++) {
        const struct shp_cfg_class *n = &nc.classes[k];
        int ok = cfg_class(&oc, n->name);
        if (ok < 0) {
            c->changes++;
            fprintf(c->f, "class %s %s: added, rate %s ceil %s (restarts %s)\n", pn, n->name,
                    sup_rate_format(n->rate, r1, sizeof(r1)), sup_rate_format(n->ceil, r2, sizeof(r2)), svc);
            sup_reload_restart(c, svc, "class %s added", n->name);
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
            sup_reload_restart(c, svc, "class %s: %s changed", n->name, what);
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
            continue; /* a new port's: it starts (sup_reload_walk_ports) */
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
            sup_reload_restart(c, n->name, "%s %s -> %s", k[j].key, a, b);
        }
    }
    const struct sup_router *o = &c->o->router, *n = &c->n->router;
    if (o->icmp_rate != n->icmp_rate || o->icmp_burst != n->icmp_burst) {
        c->changes++;
        fprintf(c->f, "router: icmp_rate %u -> %u, icmp_burst %u -> %u (restarts router)\n", o->icmp_rate,
                n->icmp_rate, o->icmp_burst, n->icmp_burst);
        sup_reload_restart(c, "router", "icmp_rate or icmp_burst changed");
    }
    static const struct {
        const char *key;
        size_t off;
    } timers[] = {
        {"neigh_reachable_ms", offsetof(struct sup_router, neigh_reachable_ms)},
        {"neigh_retrans_ms", offsetof(struct sup_router, neigh_retrans_ms)},
        {"neigh_probes", offsetof(struct sup_router, neigh_probes)},
        {"neigh_delay_ms", offsetof(struct sup_router, neigh_delay_ms)},
        {"neigh_stale_ms", offsetof(struct sup_router, neigh_stale_ms)},
    };
    for (size_t j = 0; j < sizeof(timers) / sizeof(timers[0]); j++) {
        uint32_t a, b;
        memcpy(&a, (const char *)o + timers[j].off, sizeof(a));
        memcpy(&b, (const char *)n + timers[j].off, sizeof(b));
        if (a == b)
            continue;
        c->changes++;
        fprintf(c->f, "router: %s %u -> %u (restarts router)\n", timers[j].key, a, b);
        sup_reload_restart(c, "router", "%s %u -> %u", timers[j].key, a, b);
    }
}

static void walk_persist(struct rl_ctx *c)
{
    for (size_t p = 0; p < c->o->nports && p < c->n->nports; p++) {
        bool was = c->o->ports[p].persist, now = c->n->ports[p].persist;
        if (was == now || strcmp(c->o->ports[p].name, c->n->ports[p].name) != 0)
            continue; /* (a port added in a vacant slot: walk_ports) */
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

void sup_reload_walk(struct rl_ctx *c)
{
    size_t both = c->o->nports < c->n->nports ? c->o->nports : c->n->nports;
    sup_reload_walk_ports(c);
    walk_routes(c);
    sup_reload_withdraw(c);
    sup_reload_walk_live(c);
    walk_neighs(c);
    for (size_t p = 0; p < both; p++)
        if (c->n->ports[p].shaper >= 0 && c->o->ports[p].shaper >= 0 &&
            strcmp(c->n->ports[p].name, c->o->ports[p].name) == 0)
            walk_shaper(c, (int)p); /* one added or removed: reload_ports.c */
    walk_services(c);
    walk_persist(c);
    for (int i = 0; i < c->s->nsvcs; i++)
        if (c->rs[i].on && !c->rs[i].fresh)
            fprintf(c->f, "restart %s: %s\n", c->s->svcs[i].name, c->rs[i].why);
}