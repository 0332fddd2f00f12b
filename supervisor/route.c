/* SPDX-License-Identifier: MIT */
/*
 * supervisor/route.c: the control socket's route commands, and the routes
 * kept across a restart. The supervisor is the FIB's only writer: each
 * command changes the running router's table in place (each entry switches
 * with one atomic store, tables/fib.h), and show and get read it back
 * without stopping anybody.
 *
 *   route add PREFIX via GATEWAY | route add PREFIX port NAME
 *   route replace PREFIX via GATEWAY | ... port NAME   (adds it if absent)
 *   route del PREFIX [force]
 *   route get ADDRESS [json]
 *   route show [PREFIX] [json]   (PREFIX IPv4 or IPv6: route6.c)
 *   route flush [all] [port NAME]
 *   route save
 *
 * PREFIX may be `default` (0.0.0.0/0), or a bare address: a /32 (/128), as
 * `ip route` reads it. iproute2's `dev` is taken for `port`, and its
 * `lladdr` for `neigh`'s `mac` (sup_iproute_words). Every route has an origin: connected
 * (a port's network: never changed at run time), manifest (a [route]
 * section, deleted only with force) or runtime (added or replaced since
 * `up`, or loaded at `up` from what `route save` wrote). `route save`
 * writes the runtime routes, IPv4 then IPv6 (route6.c), to STATE_DIR/routes
 * (state_dir, else run_dir); `up` adds them back after the manifest's, each
 * as a `route replace`.
 */
#include "supervisor/sup.h"
#include "supervisor/route6.h"
#include "supervisor/route_multi.h"
#include "supervisor/routes.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUTES_FILE "routes"
#define ROUTES_LINE_MAX 2048 /* a route with 16 IPv6 next hops and their weights fits */
#define ROUTES_WORDS_MAX (int)(2 + 6 * FIB_MP_MAX)

const char *sup_ip_str(uint32_t a, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
    return buf;
}

static uint32_t mask_of(unsigned len)
{
    return len ? (uint32_t)(0xffffffffull << (32 - len)) : 0;
}

static const char *pfx_str(uint32_t addr, unsigned len, char *buf, size_t blen)
{
    char a[20];
    snprintf(buf, blen, "%s/%u", sup_ip_str(addr, a, sizeof(a)), len);
    return buf;
}

int sup_port_of_addr(const struct sup *s, uint32_t a)
{
    for (size_t p = 0; p < s->m.nports; p++) {
        const struct sup_prefix *n = &s->m.ports[p].address;
        if (((a ^ n->addr) & mask_of(n->len)) == 0)
            return (int)p;
    }
    return -1;
}

/* The port whose connected network is exactly @addr/@len, or -1. */
static int connected_port(const struct sup *s, uint32_t addr, unsigned len)
{
    for (size_t p = 0; p < s->m.nports; p++) {
        const struct sup_prefix *n = &s->m.ports[p].address;
        if (n->len == len && (n->addr & mask_of(n->len)) == addr)
            return (int)p;
    }
    return -1;
}

int sup_route4_connected(const struct sup *s, uint32_t addr, unsigned len)
{
    return connected_port(s, addr, len);
}

/* The manifest's [route] for @addr/@len, or NULL. */
static const struct sup_route *manifest_route(const struct sup *s, uint32_t addr, unsigned len)
{
    for (size_t i = 0; i < s->m.nroutes; i++)
        if (!s->m.routes[i].v6 && s->m.routes[i].prefix.addr == addr && s->m.routes[i].prefix.len == len)
            return &s->m.routes[i];
    return NULL;
}

/* By a hash index (routes_index.c): `route load` makes a million of them. */
static struct sup_rt_route *rt_find(struct sup *s, uint32_t addr, unsigned len)
{
    return sup_rt_index_find(s, addr, len);
}

static int rt_set(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nh, const struct sup_mp *mp)
{
    struct sup_mp *copy = sup_mp_dup(mp);
    if (mp && !copy)
        return -ENOMEM;
    struct sup_rt_route *r = rt_find(s, addr, len);
    if (r)
        sup_mp_free(r->mp);
    if (!r) {
        if (s->n_rt_routes == s->cap_rt_routes) {
            size_t cap = s->cap_rt_routes ? s->cap_rt_routes * 2 : 16;
            struct sup_rt_route *n = realloc(s->rt_routes, cap * sizeof(*n));
            if (!n) {
                sup_mp_free(copy);
                return -ENOMEM;
            }
            s->rt_routes = n;
            s->cap_rt_routes = cap;
        }
        r = &s->rt_routes[s->n_rt_routes++];
        *r = (struct sup_rt_route){.addr = addr, .len = (uint8_t)len, .nh = *nh, .mp = copy};
        return sup_rt_index_put(s, s->n_rt_routes - 1);
    }
    *r = (struct sup_rt_route){.addr = addr, .len = (uint8_t)len, .nh = *nh, .mp = copy};
    return 0;
}

int sup_route_keep(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    return rt_set(s, addr, len, nh, NULL);
}

int sup_route4_keep(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nh, const struct sup_mp *mp)
{
    return rt_set(s, addr, len, nh, mp);
}

static void rt_remove(struct sup *s, uint32_t addr, unsigned len)
{
    struct sup_rt_route *r = rt_find(s, addr, len);
    if (!r)
        return;
    sup_mp_free(r->mp);
    sup_rt_index_del(addr, len);
    *r = s->rt_routes[--s->n_rt_routes];
    if (r != &s->rt_routes[s->n_rt_routes])
        sup_rt_index_put(s, (size_t)(r - s->rt_routes)); /* the last row moved here */
}

bool sup_route_runtime(struct sup *s, uint32_t addr, unsigned len)
{
    return rt_find(s, addr, len) != NULL;
}

void sup_route_forget(struct sup *s, uint32_t addr, unsigned len)
{
    rt_remove(s, addr, len);
}

void sup_routes_free(struct sup *s)
{
    for (size_t i = 0; i < s->n_rt_routes; i++)
        sup_mp_free(s->rt_routes[i].mp);
    for (size_t i = 0; i < s->n_rt6_routes; i++)
        sup_mp_free(s->rt6_routes[i].mp);
    free(s->rt_routes);
    s->rt_routes = NULL;
    s->n_rt_routes = s->cap_rt_routes = 0;
    sup_rt_index_rebuild(s);
    free(s->rt6_routes);
    s->rt6_routes = NULL;
    s->n_rt6_routes = s->cap_rt6_routes = 0;
}

static const char *origin_of(struct sup *s, uint32_t addr, unsigned len)
{
    if (connected_port(s, addr, len) >= 0)
        return "connected";
    if (rt_find(s, addr, len))
        return "runtime";
    uint8_t d[16] = {0};
    uint32_t n = htonl(addr);
    memcpy(d, &n, 4);
    if (sup_routes_has(s, AF_INET, d, len)) /* supervisor/routes.c */
        return "daemon";
    return "manifest";
}

void sup_iproute_words(char **argv, int argc)
{
    static const char *const kw[] = {"via", "port", "mac", "dev", "lladdr"};
    for (int i = 0; i + 1 < argc; i++)
        for (size_t k = 0; k < sizeof(kw) / sizeof(kw[0]); k++)
            if (strcmp(argv[i], kw[k]) == 0) {
                /* Only a keyword's place: a port may be called "dev". */
                argv[i] = k == 3 ? "port" : k == 4 ? "mac" : argv[i];
                i++;
                break;
            }
}

/* PREFIX, a bare address (a host route, /32, as `ip route` reads it), or
 * `default`. False with the message in @e. */
static bool parse_prefix_word(const char *arg, struct sup_prefix *pfx, char *e, size_t elen)
{
    char b[24];
    if (arg && strcmp(arg, "default") == 0) {
        *pfx = (struct sup_prefix){0, 0};
        return true;
    }
    if (arg && !strchr(arg, '/') && sup_parse_addr(arg, &pfx->addr)) {
        pfx->len = 32;
        return true;
    }
    if (!arg || !sup_parse_prefix(arg, pfx)) {
        snprintf(e, elen, "route: \"%s\" is not an IPv4 prefix (a.b.c.d/len, an address, or default)", arg ? arg : "");
        return false;
    }
    uint32_t net = pfx->addr & mask_of(pfx->len);
    if (net != pfx->addr) {
        snprintf(e, elen, "route: %s has host bits set; did you mean %s/%u?", arg, sup_ip_str(net, b, sizeof(b)),
                 pfx->len);
        return false;
    }
    return true;
}

bool sup_route4_prefix(const char *arg, struct sup_prefix *pfx, char *e, size_t elen)
{
    return parse_prefix_word(arg, pfx, e, elen);
}

/* `via GATEWAY` or `port NAME` (@kind, @val) as a next hop. */
static bool parse_nexthop(const struct sup *s, const char *cmd, const char *kind, const char *val, struct fib_nh *nh,
                          char *e, size_t elen)
{
    if (strcmp(kind, "via") == 0) {
        uint32_t gw;
        if (!sup_parse_addr(val, &gw)) {
            snprintf(e, elen, "%s: via \"%s\" is not an IPv4 address", cmd, val);
            return false;
        }
        int p = sup_port_of_addr(s, gw);
        if (p < 0) {
            snprintf(e, elen, "%s: gateway %s is on none of the ports' networks", cmd, val);
            return false;
        }
        char why[160];
        if (sup_gateway_why(&s->m, gw, p, why, sizeof(why))) {
            snprintf(e, elen, "%s: gateway %s", cmd, why);
            return false;
        }
        *nh = (struct fib_nh){.gw = gw, .port = (uint16_t)p};
        return true;
    }
    int p = sup_manifest_port(&s->m, val);
    if (p < 0) {
        snprintf(e, elen, "%s: no port \"%s\"", cmd, val);
        return false;
    }
    *nh = (struct fib_nh){.gw = 0, .port = (uint16_t)p};
    return true;
}

/* "via 10.2.0.2" or "port b": how a next hop reads in the log and the state file. */
static const char *nh_words(const struct sup *s, const struct fib_nh *nh, char *buf, size_t len)
{
    char b[20];
    if (nh->gw)
        snprintf(buf, len, "via %s", sup_ip_str(nh->gw, b, sizeof(b)));
    else
        snprintf(buf, len, "port %s", nh->port < s->m.nports ? s->m.ports[nh->port].name : "?");
    return buf;
}

/* Words after a command's own that it does not take: `json` gets its own
 * message, since the client adds it for --json. */
static bool no_extra(const char *cmd, char **argv, int argc, int used, char *e, size_t elen)
{
    if (argc <= used)
        return true;
    if (strcmp(argv[used], "json") == 0)
        snprintf(e, elen, "%s: --json is only for route show and route get", cmd);
    else if (strcmp(argv[used], "force") == 0)
        snprintf(e, elen, "%s: --force is only for route del", cmd);
    else
        snprintf(e, elen, "%s: unexpected argument \"%s\"", cmd, argv[used]);
    return false;
}

/*
 * `route add|replace PREFIX via GATEWAY | PREFIX port NAME` (@argv from
 * PREFIX on), and each line of the state file (@replace). On success the
 * route is in the FIB and in the runtime list, *@existed says whether a
 * route for PREFIX was there; on failure @e says why and nothing changed.
 */
static bool route_set(struct sup *s, const char *cmd, char **argv, int argc, bool replace, struct sup_prefix *pfx,
                      struct fib_nh *nh, bool *existed, char *e, size_t elen)
{
    char b1[24];
    if (argc < 3 || (strcmp(argv[1], "via") != 0 && strcmp(argv[1], "port") != 0)) {
        snprintf(e, elen, "%s: expected PREFIX via GATEWAY [port NAME], or PREFIX port NAME", cmd);
        return false;
    }
    /* `via GATEWAY port NAME` (ip's `via G dev D`): NAME must be where GATEWAY is. */
    bool named = argc >= 5 && strcmp(argv[1], "via") == 0 && strcmp(argv[3], "port") == 0;
    if (!no_extra(cmd, argv, argc, named ? 5 : 3, e, elen) || !parse_prefix_word(argv[0], pfx, e, elen))
        return false;
    const char *p = pfx_str(pfx->addr, pfx->len, b1, sizeof(b1));
    int cp = connected_port(s, pfx->addr, pfx->len);
    if (cp >= 0) {
        snprintf(e, elen, "%s: %s is port %s's connected network; change the manifest instead", cmd, p,
                 s->m.ports[cp].name);
        return false;
    }
    if (!parse_nexthop(s, cmd, argv[1], argv[2], nh, e, elen))
        return false;
    if (named && sup_manifest_port(&s->m, argv[4]) != nh->port) {
        if (sup_manifest_port(&s->m, argv[4]) < 0)
            snprintf(e, elen, "%s: no port \"%s\"", cmd, argv[4]);
        else
            snprintf(e, elen, "%s: gateway %s is on port %s, not %s", cmd, argv[2], s->m.ports[nh->port].name,
                     argv[4]);
        return false;
    }
    struct fib_nh old;
    *existed = fib_get(&s->fib, pfx->addr, pfx->len, &old) == 0;
    if (*existed && !replace) {
        snprintf(e, elen, "%s: %s exists (%s); route replace changes it", cmd, p, origin_of(s, pfx->addr, pfx->len));
        return false;
    }
    /* Replace writes each entry of the prefix's range once, old next hop to
     * new, with one atomic store: a packet takes the old route or the new,
     * never no route (tables/fib_write.c, fib_set). */
    int ret = replace ? fib_replace(&s->fib, pfx->addr, pfx->len, nh) : fib_add(&s->fib, pfx->addr, pfx->len, nh);
    if (ret == -EAGAIN) {
        /* Every free table entry was retired under a read section the router
         * has held for more than the writer's 10 ms (stopped, or not
         * scheduled): nothing changed. */
        snprintf(e, elen, "%s: %s: the router still reads the table entries this change needs; nothing changed, try again",
                 cmd, p);
        return false;
    }
    if (ret < 0) {
        snprintf(e, elen, "%s: %s: %s", cmd, p, strerror(-ret));
        return false;
    }
    fib_reclaim(&s->fib);
    if (rt_set(s, pfx->addr, pfx->len, nh, NULL) < 0) {
        /* The FIB has it; `route show` would call it manifest, and `route save` miss it. */
        snprintf(e, elen, "%s: %s is in the FIB, but out of memory to remember it as runtime", cmd, p);
        return false;
    }
    return true;
}

static bool route_add(struct sup *s, char **argv, int argc, bool replace, FILE *f)
{
    const char *cmd = replace ? "route replace" : "route add";
    struct sup_prefix pfx;
    struct fib_nh nh;
    bool existed = false;
    char e[256], b1[24], b2[48];
    if (sup_route_multi_args(argv, argc))
        return sup_route_multi_cmd(s, false, argv, argc, replace, f);
    if (!route_set(s, cmd, argv, argc, replace, &pfx, &nh, &existed, e, sizeof(e))) {
        fprintf(f, "%s\n", e);
        return false;
    }
    pfx_str(pfx.addr, pfx.len, b1, sizeof(b1));
    sup_log("%s %s %s", existed ? "route replace" : "route add", b1, nh_words(s, &nh, b2, sizeof(b2)));
    fprintf(f, "%s %s\n", existed ? "replaced" : "added", b1);
    return true;
}

static bool route_del(struct sup *s, char **argv, int argc, FILE *f)
{
    struct sup_prefix pfx;
    char b1[24], e[256];
    bool force = false;
    if (argc < 1) {
        fprintf(f, "route del: expected PREFIX\n");
        return false;
    }
    if (argc >= 2 && strcmp(argv[1], "force") == 0)
        force = true;
    if (!no_extra("route del", argv, argc, force ? 2 : 1, e, sizeof(e)) ||
        !parse_prefix_word(argv[0], &pfx, e, sizeof(e))) {
        fprintf(f, "%s\n", e);
        return false;
    }
    const char *p = pfx_str(pfx.addr, pfx.len, b1, sizeof(b1));
    if (connected_port(s, pfx.addr, pfx.len) >= 0) {
        fprintf(f, "route del: %s is a port's connected network; change the manifest instead\n", argv[0]);
        return false;
    }
    struct fib_nh nh;
    if (fib_get(&s->fib, pfx.addr, pfx.len, &nh) < 0) {
        fprintf(f, "route del: no route %s\n", p);
        return false;
    }
    const struct sup_route *mr = rt_find(s, pfx.addr, pfx.len) ? NULL : manifest_route(s, pfx.addr, pfx.len);
    if (mr && !force) {
        fprintf(f, "route del: %s is the manifest's [%s] (line %u); with --force it is deleted until the next start\n",
                p, mr->src.section, mr->src.line);
        return false;
    }
    int ret = fib_del(&s->fib, pfx.addr, pfx.len);
    if (ret < 0) {
        fprintf(f, "route del: %s: %s\n", p, strerror(-ret));
        return false;
    }
    fib_reclaim(&s->fib);
    rt_remove(s, pfx.addr, pfx.len);
    sup_log("route del %s%s", p, mr ? " (the manifest's, --force)" : "");
    fprintf(f, "deleted %s\n", p);
    return true;
}

static void route_row(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nh, bool json, bool first,
                      FILE *f)
{
    char pfx[32], gw[24];
    const char *port = nh->port < s->m.nports ? s->m.ports[nh->port].name : "?";
    pfx_str(addr, len, pfx, sizeof(pfx));
    const char *origin = origin_of(s, addr, len);
    if ((nh->flags & FIB_NH_F_GROUP) && sup_route_show_group(s, false, nh, pfx, origin, json, first, f))
        return;
    if (json) {
        fprintf(f, "%s{\"prefix\":\"%s\",\"via\":", first ? "" : ",", pfx);
        if (nh->gw)
            fprintf(f, "\"%s\"", sup_ip_str(nh->gw, gw, sizeof(gw)));
        else
            fprintf(f, "null");
        fprintf(f, ",\"port\":");
        sup_json_str(f, port);
        fprintf(f, ",\"origin\":\"%s\"}", origin);
    } else {
        fprintf(f, "%-20s %-16s %-16s %s\n", pfx, nh->gw ? sup_ip_str(nh->gw, gw, sizeof(gw)) : "-", port, origin);
    }
}

struct route_list {
    struct sup_rt_route *rows;
    size_t n, cap;
};

static int collect_route(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    struct route_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct sup_rt_route *r = realloc(l->rows, cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        l->rows = r;
        l->cap = cap;
    }
    l->rows[l->n++] = (struct sup_rt_route){addr, (uint8_t)len, *nh, NULL};
    return 0;
}

static int cmp_route(const void *a, const void *b)
{
    const struct sup_rt_route *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return (int)x->len - (int)y->len;
}

/* `route show [PREFIX] [json]`: every route, or the one for exactly PREFIX
 * (none: an empty table, as `ip route show` prints nothing). */
static bool route_show(struct sup *s, char **argv, int argc, FILE *f)
{
    bool json = false, filter = false, v6 = false;
    struct sup_prefix want = {0, 0};
    struct sup_prefix6 want6;
    char e[256];
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "json") == 0) {
            json = true;
        } else if (!filter && strcmp(argv[i], "force") != 0) {
            v6 = sup_route6_arg(argv[i]);
            if (v6 && !sup_route6_prefix("route show", argv[i], &want6, f))
                return false;
            if (!v6 && !parse_prefix_word(argv[i], &want, e, sizeof(e))) {
                fprintf(f, "%s\n", e);
                return false;
            }
            filter = true;
        } else {
            fprintf(f, "route show: unexpected argument \"%s\"\n", strcmp(argv[i], "force") ? argv[i] : "--force");
            return false;
        }
    }
    struct route_list l = {0};
    if (fib_iterate(&s->fib, collect_route, &l) < 0) {
        free(l.rows);
        fprintf(f, "route show: out of memory\n");
        return false;
    }
    qsort(l.rows, l.n, sizeof(*l.rows), cmp_route);
    if (json) {
        sup_json_begin(f);
        fprintf(f, "\"routes\":[");
    }
    else if (!v6)
        fprintf(f, "%-20s %-16s %-16s %s\n", "PREFIX", "VIA", "PORT", "ORIGIN");
    bool first = true;
    for (size_t i = 0; i < l.n; i++) {
        const struct sup_rt_route *r = &l.rows[i];
        if (filter && (v6 || r->addr != want.addr || r->len != want.len))
            continue;
        route_row(s, r->addr, r->len, &r->nh, json, first, f);
        first = false;
    }
    if (json)
        fprintf(f, "]");
    /* The IPv6 FIB (route6.c), unless an IPv4 prefix filtered the table. */
    bool ok = (filter && !v6) || sup_route6_show(s, v6 ? &want6 : NULL, json, f);
    if (json)
        fprintf(f, "}\n");
    free(l.rows);
    return ok;
}

/* `route get ADDRESS [json]`: the route the router takes to ADDRESS. */
static bool route_get(struct sup *s, char **argv, int argc, FILE *f)
{
    char e[256], b1[24], b2[24], b3[48];
    if (argc < 1 || strcmp(argv[0], "json") == 0) {
        fprintf(f, "route get: expected ADDRESS\n");
        return false;
    }
    bool json = argc >= 2 && strcmp(argv[1], "json") == 0;
    if (!no_extra("route get", argv, argc, json ? 2 : 1, e, sizeof(e))) {
        fprintf(f, "%s\n", e);
        return false;
    }
    uint32_t a;
    if (!sup_parse_addr(argv[0], &a)) {
        fprintf(f, "route get: \"%s\" is not an IPv4 address\n", argv[0]);
        return false;
    }
    uint32_t pfx;
    unsigned len;
    struct fib_nh nh;
    if (fib_match(&s->fib, a, &pfx, &len, &nh) < 0) {
        fprintf(f, "route get: no route to %s\n", argv[0]);
        return false;
    }
    if (json) {
        sup_json_begin(f);
        fprintf(f, "\"address\":\"%s\",\"route\":", sup_ip_str(a, b1, sizeof(b1)));
        route_row(s, pfx, len, &nh, true, true, f);
        fprintf(f, "}\n");
    } else if (nh.flags & FIB_NH_F_GROUP) {
        fprintf(f, "%s: %s, one of (by the flow's hash):\n", sup_ip_str(a, b1, sizeof(b1)),
                pfx_str(pfx, len, b2, sizeof(b2)));
        sup_route_show_group(s, false, &nh, "", origin_of(s, pfx, len), false, true, f);
    } else {
        fprintf(f, "%s: %s %s (%s)\n", sup_ip_str(a, b1, sizeof(b1)), pfx_str(pfx, len, b2, sizeof(b2)),
                nh_words(s, &nh, b3, sizeof(b3)), origin_of(s, pfx, len));
    }
    return true;
}

const char *sup_state_dir(const struct sup *s)
{
    return s->m.router.state_dir[0] ? s->m.router.state_dir : s->m.router.run_dir;
}

/*
 * `route save`: the runtime routes to STATE_DIR/routes, written whole to a
 * temporary file, synced and renamed over the old one, so that a crash
 * leaves the old list or the new, never half of one. The directory is the
 * supervisor's own, walked from "/" and opened at `up` (rundir.c): the file
 * is reached through that fd, never the path.
 */
static bool route_save(struct sup *s, char **argv, int argc, FILE *f)
{
    char e[256], path[SUP_PATH_MAX + 16], tmp[SUP_PATH_MAX + 24];
    if (!no_extra("route save", argv, argc, 0, e, sizeof(e))) {
        fprintf(f, "%s\n", e);
        return false;
    }
    snprintf(path, sizeof(path), "%s/" ROUTES_FILE, sup_state_dir(s));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int dfd = sup_state_fd(s);
    int fd = openat(dfd, ROUTES_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!out) {
        fprintf(f, "route save: %s: %s\n", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    struct sup_rt_route *rows = malloc((s->n_rt_routes + 1) * sizeof(*rows));
    if (!rows) {
        fclose(out);
        unlinkat(dfd, ROUTES_FILE ".tmp", 0);
        fprintf(f, "route save: out of memory\n");
        return false;
    }
    memcpy(rows, s->rt_routes, s->n_rt_routes * sizeof(*rows));
    qsort(rows, s->n_rt_routes, sizeof(*rows), cmp_route);
    fprintf(out, "# ringrouter's runtime routes, written by `ringrouter route save`; `ringrouter up` adds them\n"
                 "# back after the manifest's, each as a `route replace`. One route a line: PREFIX via GATEWAY,\n"
                 "# or PREFIX port NAME, or PREFIX via GATEWAY weight W via GATEWAY weight W ... (ECMP);\n"
                 "# IPv6 after IPv4, a link-local GATEWAY with port NAME.\n");
    char b1[24], b2[48];
    for (size_t i = 0; i < s->n_rt_routes; i++) {
        fprintf(out, "%s", pfx_str(rows[i].addr, rows[i].len, b1, sizeof(b1)));
        if (rows[i].mp)
            sup_route_save_mp(s, false, rows[i].mp, out);
        else
            fprintf(out, " %s\n", nh_words(s, &rows[i].nh, b2, sizeof(b2)));
    }
    free(rows);
    long n6 = sup_route6_save(s, out);
    if (n6 < 0) {
        fclose(out);
        unlinkat(dfd, ROUTES_FILE ".tmp", 0);
        fprintf(f, "route save: out of memory\n");
        return false;
    }
    size_t total = s->n_rt_routes + (size_t)n6;
    bool ok = fflush(out) == 0 && fsync(fileno(out)) == 0;
    int werr = errno;
    if (fclose(out) != 0 && ok) {
        ok = false;
        werr = errno;
    }
    if (!ok || renameat(dfd, ROUTES_FILE ".tmp", dfd, ROUTES_FILE) < 0) {
        if (ok)
            werr = errno;
        unlinkat(dfd, ROUTES_FILE ".tmp", 0);
        fprintf(f, "route save: %s: %s\n", path, strerror(werr));
        return false;
    }
    fsync(dfd); /* the rename itself */
    sup_log("route save: %zu runtime routes to %s", total, path);
    fprintf(f, "saved %zu routes to %s\n", total, path);
    return true;
}

/*
 * At `up`, after the manifest's routes are in the FIB: what `route save`
 * wrote, each line as a `route replace` (so a saved route for a manifest
 * prefix wins, and is runtime from then on). A line that no longer fits the
 * manifest (a port gone, a gateway off every network) is logged with its
 * line number and skipped: the router still comes up. A missing file is no
 * routes. The file must be ours and writable by no one else, like its
 * directory.
 */
void sup_routes_load(struct sup *s)
{
    char path[SUP_PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/" ROUTES_FILE, sup_state_dir(s));
    int fd = openat(sup_state_fd(s), ROUTES_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            sup_warn("%s: %s; no saved routes added", path, strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        sup_warn("%s: not a file of this supervisor's alone (owner, mode); no saved routes added", path);
        close(fd);
        return;
    }
    FILE *in = fdopen(fd, "r");
    if (!in) {
        close(fd);
        return;
    }
    char line[ROUTES_LINE_MAX];
    unsigned lineno = 0, added = 0, bad = 0;
    while (fgets(line, sizeof(line), in)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(in)) {
            sup_warn("%s:%u: longer than %d bytes; skipped", path, lineno, ROUTES_LINE_MAX - 1);
            bad++;
            int c;
            while ((c = fgetc(in)) != EOF && c != '\n')
                ;
            continue;
        }
        char *words[ROUTES_WORDS_MAX], *save = NULL;
        int n = 0;
        for (char *w = strtok_r(line, " \t\r\n", &save); w && n < ROUTES_WORDS_MAX;
             w = strtok_r(NULL, " \t\r\n", &save))
            words[n++] = w;
        if (n == 0 || words[0][0] == '#')
            continue;
        struct sup_prefix pfx;
        struct fib_nh nh;
        bool existed;
        char e[256];
        bool ok;
        if (sup_route_multi_args(words, n)) {
            e[0] = '\0';
            FILE *ef = fmemopen(e, sizeof(e), "w");
            ok = ef && sup_route_multi_cmd(s, sup_route6_arg(words[0]), words, n, true, ef);
            if (ef)
                fclose(ef);
            e[strcspn(e, "\n")] = '\0';
        } else {
            ok = sup_route6_arg(words[0]) ? sup_route6_load(s, words, n, e, sizeof(e))
                                          : route_set(s, "route", words, n, true, &pfx, &nh, &existed, e, sizeof(e));
        }
        if (!ok) {
            sup_warn("%s:%u: %s; skipped", path, lineno, e);
            bad++;
            continue;
        }
        added++;
    }
    fclose(in);
    sup_log("%s: %u saved routes added%s", path, added, bad ? ", some lines skipped (above)" : "");
}

/*
 * `route flush [all] [port NAME]`: the FIB back to the manifest's routes
 * (those out of port NAME): every runtime route deleted, a manifest route
 * that `replace` changed given its own next hop back (in place: no moment
 * without a route), one that `del --force` deleted added back. Connected
 * routes are never touched. Both families.
 */
static bool route_flush(struct sup *s, char **argv, int argc, FILE *f)
{
    char e[256], b1[24];
    int used = argc > 0 && strcmp(argv[0], "all") == 0, port = -1;
    if (argc >= used + 2 && strcmp(argv[used], "port") == 0) {
        if ((port = sup_manifest_port(&s->m, argv[used + 1])) < 0) {
            fprintf(f, "route flush: no port \"%s\"\n", argv[used + 1]);
            return false;
        }
        used += 2;
    }
    if (!no_extra("route flush", argv, argc, used, e, sizeof(e))) {
        fprintf(f, "%s\n", e);
        return false;
    }
    struct sup_rt_flush n = {0};
    /* Downwards: rt_remove moves the last row into the one removed. */
    for (size_t i = s->n_rt_routes; i-- > 0;) {
        struct sup_rt_route r = s->rt_routes[i];
        if (port >= 0 && (r.mp ? !sup_mp_on_port(r.mp, false, port) : r.nh.port != port))
            continue;
        const struct sup_route *mr = manifest_route(s, r.addr, r.len);
        int ret = mr ? sup_mroute_put(s, mr) : fib_del(&s->fib, r.addr, r.len);
        if (ret < 0 && ret != -ENOENT) {
            fprintf(f, "route flush: %s: %s\n", pfx_str(r.addr, r.len, b1, sizeof(b1)), strerror(-ret));
            n.failed++;
            continue;
        }
        rt_remove(s, r.addr, r.len);
        n.restored += mr != NULL;
        n.deleted += mr == NULL;
    }
    for (size_t i = 0; i < s->m.nroutes; i++) {
        const struct sup_route *r = &s->m.routes[i];
        struct fib_nh old;
        if (r->v6 || (port >= 0 && !sup_mroute_on_port(r, port)) ||
            fib_get(&s->fib, r->prefix.addr, r->prefix.len, &old) == 0)
            continue;
        int ret = sup_mroute_put(s, r);
        if (ret < 0) {
            fprintf(f, "route flush: %s: %s\n", pfx_str(r->prefix.addr, r->prefix.len, b1, sizeof(b1)), strerror(-ret));
            n.failed++;
            continue;
        }
        n.restored++;
    }
    fib_reclaim(&s->fib);
    sup_route6_flush(s, port, &n, f);
    const char *pn = port >= 0 ? s->m.ports[port].name : NULL;
    sup_log("route flush%s%s: %u runtime routes deleted, %u manifest routes back", pn ? " port " : "", pn ? pn : "",
            n.deleted, n.restored);
    fprintf(f, "flushed%s%s: %u runtime route%s deleted, %u manifest route%s back as the manifest has %s\n",
            pn ? " port " : "", pn ? pn : "", n.deleted, n.deleted == 1 ? "" : "s", n.restored,
            n.restored == 1 ? "" : "s", n.restored == 1 ? "it" : "them");
    return n.failed == 0;
}

bool sup_ctl_route(struct sup *s, char **argv, int argc, FILE *f)
{
    sup_iproute_words(argv, argc);
    if (argc == 0 || strcmp(argv[0], "show") == 0)
        return route_show(s, argv + (argc ? 1 : 0), argc ? argc - 1 : 0, f);
    if (sup_route_load_busy(argv[0], f)) /* the load owns the runtime routes until it answers */
        return false;
    if (strcmp(argv[0], "json") == 0)
        return route_show(s, argv, argc, f);
    /* An IPv6 prefix goes to route6.c: add, replace, del and get; several
     * next hops of either family to route_multi.c. */
    bool v6 = argc >= 2 && sup_route6_arg(argv[1]);
    bool set = strcmp(argv[0], "add") == 0 || strcmp(argv[0], "replace") == 0;
    if (set && v6 && sup_route_multi_args(argv + 1, argc - 1))
        return sup_route_multi_cmd(s, true, argv + 1, argc - 1, strcmp(argv[0], "replace") == 0, f);
    if (strcmp(argv[0], "add") == 0)
        return v6 ? sup_route6_add(s, argv + 1, argc - 1, f) : route_add(s, argv + 1, argc - 1, false, f);
    if (strcmp(argv[0], "del") == 0)
        return v6 ? sup_route6_del(s, argv + 1, argc - 1, f) : route_del(s, argv + 1, argc - 1, f);
    if (v6 && strcmp(argv[0], "replace") == 0)
        return sup_route6_replace(s, argv + 1, argc - 1, f);
    if (v6 && strcmp(argv[0], "get") == 0)
        return sup_route6_get(s, argv + 1, argc - 1, f);
    if (strcmp(argv[0], "replace") == 0)
        return route_add(s, argv + 1, argc - 1, true, f);
    if (strcmp(argv[0], "load") == 0) /* supervisor/routes_load.c */
        return sup_route_load(s, argv + 1, argc - 1, f, NULL);
    if (strcmp(argv[0], "get") == 0)
        return route_get(s, argv + 1, argc - 1, f);
    if (strcmp(argv[0], "save") == 0)
        return route_save(s, argv + 1, argc - 1, f);
    if (strcmp(argv[0], "flush") == 0)
        return route_flush(s, argv + 1, argc - 1, f);
    fprintf(f, "route: unknown subcommand \"%s\"; expected add, replace, del, get, show, flush, save or load\n", argv[0]);
    return false;
}
