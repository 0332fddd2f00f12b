/* SPDX-License-Identifier: MIT */
/*
 * supervisor/route6.c: `route add/del/show/save` and `neigh show` for IPv6.
 * The supervisor is the IPv6 FIB's only writer, as the IPv4 one's
 * (route.c): each entry switches with one atomic store (tables/fib6.h), and
 * the neighbour table is read under its per-entry sequence lock.
 *
 *   route add 2001:db8:9::/48 via 2001:db8:2::2
 *   route add 2001:db8:9::/48 via fe80::1 port b     (a link-local gateway names its link)
 *   route add 2001:db8:9::/48 port b
 *   route del 2001:db8:9::/48 [force]
 *
 * Every IPv6 route has an origin as an IPv4 one: connected (a port's global
 * network), manifest ([route PREFIX], deleted only with force), runtime
 * (added or replaced since `up`, or loaded at `up` from STATE_DIR/routes,
 * which `route save` writes with both families' runtime routes) or daemon
 * (a route source's: supervisor/routes.c).
 */
#include "supervisor/route6.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/route_multi.h"
#include "supervisor/routes.h"
#include "supervisor/sup.h"

#define A6(a) sup_addr6_str((a), (char[INET6_ADDRSTRLEN]){0}, INET6_ADDRSTRLEN)

bool sup_route6_arg(const char *arg)
{
    return arg && strchr(arg, ':');
}

static bool parse_prefix6_arg(const char *cmd, const char *arg, struct sup_prefix6 *pf, FILE *f)
{
    char canon[64] = "";
    /* A bare address is a host route, /128, as `ip -6 route` reads it. */
    bool bare = arg && !strchr(arg, '/');
    if (bare && sup_parse_addr6(arg, pf->addr, canon, sizeof(canon)))
        pf->len = 128;
    else if (bare || !sup_parse_prefix6(arg, pf, canon, sizeof(canon))) {
        if (canon[0])
            fprintf(f, "%s: \"%s\" is not in canonical form (RFC 5952); write %s\n", cmd, arg, canon);
        else
            fprintf(f, "%s: \"%s\" is not an IPv6 prefix (such as 2001:db8::/32)\n", cmd, arg);
        return false;
    }
    uint8_t net[16];
    memcpy(net, pf->addr, 16);
    sup_mask6(net, pf->len);
    if (memcmp(net, pf->addr, 16) != 0) {
        fprintf(f, "%s: %s has host bits set; did you mean %s/%u?\n", cmd, arg, A6(net), pf->len);
        return false;
    }
    if (sup_ll6(pf->addr) && pf->len >= 10) {
        fprintf(f, "%s: %s is link-local: it is never routed\n", cmd, arg);
        return false;
    }
    if (pf->addr[0] == 0xff && pf->len >= 8) {
        fprintf(f, "%s: %s is multicast: the router does not route multicast\n", cmd, arg);
        return false;
    }
    return true;
}

/* Is @pf one of the ports' connected IPv6 networks? Then it is the manifest's. */
static int connected6(const struct sup *s, const struct sup_prefix6 *pf)
{
    for (size_t p = 0; p < s->m.nports; p++)
        for (unsigned k = 0; k < s->m.ports[p].naddr6; k++) {
            struct sup_prefix6 n = s->m.ports[p].addr6[k];
            sup_mask6(n.addr, n.len);
            if (n.len == pf->len && memcmp(n.addr, pf->addr, 16) == 0)
                return (int)p;
        }
    return -1;
}

int sup_route6_connected(const struct sup *s, const uint8_t *addr, unsigned len)
{
    struct sup_prefix6 pf = {.len = (uint8_t)len};
    memcpy(pf.addr, addr, 16);
    return connected6(s, &pf);
}

/* A new last slot of @rows (@n of @cap used; doubled when full), or NULL out of memory. */
static struct sup_rt_route6 *rows6_push(struct sup_rt_route6 **rows, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        struct sup_rt_route6 *r = realloc(*rows, c * sizeof(*r));
        if (!r)
            return NULL;
        *rows = r;
        *cap = c;
    }
    return &(*rows)[(*n)++];
}

/* Prefix order: address, then length. */
static int cmp6(const void *a, const void *b)
{
    const struct sup_rt_route6 *x = a, *y = b;
    int c = memcmp(x->addr, y->addr, 16);
    return c ? c : (int)x->len - (int)y->len;
}

static struct sup_rt_route6 *rt6_find(struct sup *s, const uint8_t *addr, unsigned len)
{
    for (size_t i = 0; i < s->n_rt6_routes; i++)
        if (s->rt6_routes[i].len == len && memcmp(s->rt6_routes[i].addr, addr, 16) == 0)
            return &s->rt6_routes[i];
    return NULL;
}

static int rt6_set(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nh, const struct sup_mp *mp)
{
    struct sup_mp *copy = sup_mp_dup(mp);
    if (mp && !copy)
        return -ENOMEM;
    struct sup_rt_route6 *r = rt6_find(s, addr, len);
    if (r)
        sup_mp_free(r->mp);
    if (!r && !(r = rows6_push(&s->rt6_routes, &s->n_rt6_routes, &s->cap_rt6_routes))) {
        sup_mp_free(copy);
        return -ENOMEM;
    }
    *r = (struct sup_rt_route6){.len = (uint8_t)len, .nh = *nh, .mp = copy};
    memcpy(r->addr, addr, 16);
    return 0;
}

int sup_route6_keep(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    return rt6_set(s, addr, len, nh, NULL);
}

int sup_route6_keep_rt(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nh,
                       const struct sup_mp *mp)
{
    return rt6_set(s, addr, len, nh, mp);
}

bool sup_route6_runtime(struct sup *s, const uint8_t *addr, unsigned len)
{
    return rt6_find(s, addr, len) != NULL;
}

void sup_route6_forget(struct sup *s, const uint8_t *addr, unsigned len)
{
    struct sup_rt_route6 *r = rt6_find(s, addr, len);
    if (r) {
        sup_mp_free(r->mp);
        *r = s->rt6_routes[--s->n_rt6_routes];
    }
}

/* The manifest's [route] for @addr/@len, or NULL. */
static const struct sup_route *manifest_route6(const struct sup *s, const uint8_t *addr, unsigned len)
{
    for (size_t i = 0; i < s->m.nroutes; i++) {
        const struct sup_route *r = &s->m.routes[i];
        if (r->v6 && r->prefix6.len == len && memcmp(r->prefix6.addr, addr, 16) == 0)
            return r;
    }
    return NULL;
}

static const char *origin6(struct sup *s, const uint8_t *addr, unsigned len)
{
    struct sup_prefix6 pf = {.len = (uint8_t)len};
    memcpy(pf.addr, addr, 16);
    if (connected6(s, &pf) >= 0)
        return "connected";
    if (rt6_find(s, addr, len))
        return "runtime";
    return sup_routes_has(s, AF_INET6, addr, len) ? "daemon" : "manifest"; /* supervisor/routes.c */
}

/* @cmd's PREFIX, GATEWAY (NULL: none) and port NAME (NULL: none) into @pf
 * and @nh, checked as `route add` checks them, and with @not_connected
 * refused if the prefix is a port's connected network; false with the
 * message on @f. */
static bool route6_args(struct sup *s, const char *cmd, const char *prefix, const char *via, const char *pname,
                        bool not_connected, struct sup_prefix6 *pf, struct fib6_nh *nh, FILE *f)
{
    if (!parse_prefix6_arg(cmd, prefix, pf, f))
        return false;
    *nh = (struct fib6_nh){0};
    int port = -1;
    if (pname && (port = sup_manifest_port(&s->m, pname)) < 0) {
        fprintf(f, "%s: no port \"%s\"\n", cmd, pname);
        return false;
    }
    if (via) {
        char canon[64] = "";
        if (!sup_parse_addr6(via, nh->gw, canon, sizeof(canon))) {
            if (canon[0])
                fprintf(f, "%s: via \"%s\" is not in canonical form (RFC 5952); write %s\n", cmd, via, canon);
            else
                fprintf(f, "%s: via \"%s\" is not an IPv6 address (the prefix is IPv6)\n", cmd, via);
            return false;
        }
        if (sup_ll6(nh->gw)) {
            if (port < 0) {
                fprintf(f, "%s: gateway %s is link-local: add port NAME to say which link it is on\n", cmd, via);
                return false;
            }
        } else {
            int on = sup_port_for6(&s->m, nh->gw);
            if (on < 0) {
                fprintf(f, "%s: gateway %s is on none of the ports' IPv6 networks\n", cmd, via);
                return false;
            }
            if (port >= 0 && port != on) {
                fprintf(f, "%s: gateway %s is on port %s, not %s\n", cmd, via, s->m.ports[on].name, pname);
                return false;
            }
            port = on;
        }
        char why[200];
        if (sup_gateway6_why(&s->m, nh->gw, port, why, sizeof(why))) {
            fprintf(f, "%s: gateway %s\n", cmd, why);
            return false;
        }
    }
    nh->port = (uint16_t)port;
    if (not_connected && connected6(s, pf) >= 0) {
        fprintf(f, "%s: %s is a port's connected network; change the manifest instead\n", cmd, prefix);
        return false;
    }
    return true;
}

/* route add, or (@replace) route replace: the next hop of an existing
 * prefix changes in place, readers never see it missing. The route is
 * runtime from then on. */
static bool route6_set(struct sup *s, char **argv, int argc, bool replace, FILE *f)
{
    const char *cmd = replace ? "route replace" : "route add";
    struct sup_prefix6 pf;
    bool via = argc >= 3 && strcmp(argv[1], "via") == 0;
    if (!((argc == 3 && (via || strcmp(argv[1], "port") == 0)) || (argc == 5 && via && strcmp(argv[3], "port") == 0))) {
        fprintf(f, "%s: expected PREFIX via GATEWAY [port NAME], or PREFIX port NAME\n", cmd);
        return false;
    }
    struct fib6_nh nh;
    const char *pname = argc == 5 ? argv[4] : !via ? argv[2] : NULL;
    if (!route6_args(s, cmd, argv[0], via ? argv[2] : NULL, pname, replace, &pf, &nh, f))
        return false;
    int port = nh.port;
    int ret = replace ? fib6_replace(&s->fib6, pf.addr, pf.len, &nh) : fib6_add(&s->fib6, pf.addr, pf.len, &nh);
    if (ret == -EEXIST) {
        fprintf(f, "route add: %s/%u exists (%s); route replace changes its next hop\n", A6(pf.addr), pf.len,
                origin6(s, pf.addr, pf.len));
        return false;
    }
    if (ret < 0) {
        fprintf(f, "%s: %s/%u: %s\n", cmd, A6(pf.addr), pf.len, strerror(-ret));
        return false;
    }
    fib6_reclaim(&s->fib6);
    if (rt6_set(s, pf.addr, pf.len, &nh, NULL) < 0) {
        /* The FIB has it; `route show` would call it manifest, and `route save` miss it. */
        fprintf(f, "%s: %s/%u is in the FIB, but out of memory to remember it as runtime\n", cmd, A6(pf.addr), pf.len);
        return false;
    }
    sup_log("%s %s/%u %s %s%s%s", cmd, A6(pf.addr), pf.len, argv[1], via ? A6(nh.gw) : s->m.ports[port].name,
            via ? " port " : "", via ? s->m.ports[port].name : "");
    fprintf(f, "%s %s/%u\n", replace ? "replaced" : "added", A6(pf.addr), pf.len);
    return true;
}

bool sup_route6_add(struct sup *s, char **argv, int argc, FILE *f)
{
    return route6_set(s, argv, argc, false, f);
}

bool sup_route6_replace(struct sup *s, char **argv, int argc, FILE *f)
{
    return route6_set(s, argv, argc, true, f);
}

bool sup_route6_del(struct sup *s, char **argv, int argc, FILE *f)
{
    struct sup_prefix6 pf;
    bool force = argc == 2 && strcmp(argv[1], "force") == 0;
    if (argc < 1 || argc > (force ? 2 : 1)) {
        if (argc > 1)
            fprintf(f, "route del: unexpected argument \"%s\"\n", strcmp(argv[1], "json") == 0 ? "--json" : argv[1]);
        else
            fprintf(f, "route del: expected PREFIX\n");
        return false;
    }
    if (!parse_prefix6_arg("route del", argv[0], &pf, f))
        return false;
    if (connected6(s, &pf) >= 0) {
        fprintf(f, "route del: %s is a port's connected network; change the manifest instead\n", argv[0]);
        return false;
    }
    struct fib6_nh old;
    if (fib6_get(&s->fib6, pf.addr, pf.len, &old) < 0) {
        fprintf(f, "route del: no route %s/%u\n", A6(pf.addr), pf.len);
        return false;
    }
    const struct sup_route *mr = rt6_find(s, pf.addr, pf.len) ? NULL : manifest_route6(s, pf.addr, pf.len);
    if (mr && !force) {
        fprintf(f, "route del: %s/%u is the manifest's [%s] (line %u); with --force it is deleted until the next start\n",
                A6(pf.addr), pf.len, mr->src.section, mr->src.line);
        return false;
    }
    int ret = fib6_del(&s->fib6, pf.addr, pf.len);
    if (ret == -ENOENT) {
        fprintf(f, "route del: no route %s/%u\n", A6(pf.addr), pf.len);
        return false;
    }
    if (ret < 0) {
        fprintf(f, "route del: %s: %s\n", argv[0], strerror(-ret));
        return false;
    }
    fib6_reclaim(&s->fib6);
    sup_route6_forget(s, pf.addr, pf.len);
    sup_log("route del %s/%u%s", A6(pf.addr), pf.len, mr ? " (the manifest's, --force)" : "");
    fprintf(f, "deleted %s/%u\n", A6(pf.addr), pf.len);
    return true;
}

struct route6_list {
    struct sup_rt_route6 *rows;
    size_t n, cap;
};

static int collect6(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    struct route6_list *l = arg;
    struct sup_rt_route6 *r = rows6_push(&l->rows, &l->n, &l->cap);
    if (!r)
        return -ENOMEM;
    *r = (struct sup_rt_route6){.len = (uint8_t)len, .nh = *nh};
    memcpy(r->addr, addr, 16);
    return 0;
}

static bool gw_zero(const uint8_t *gw)
{
    static const uint8_t z[16];
    return memcmp(gw, z, 16) == 0;
}

bool sup_route6_prefix(const char *cmd, const char *arg, struct sup_prefix6 *pf, FILE *f)
{
    return parse_prefix6_arg(cmd, arg, pf, f);
}

bool sup_route6_show(struct sup *s, const struct sup_prefix6 *want, bool json, FILE *f)
{
    struct route6_list l = {0};
    if (fib6_iterate(&s->fib6, collect6, &l) < 0) {
        free(l.rows);
        if (json)
            fprintf(f, ",\"routes6\":[],\"error6\":\"out of memory\"");
        else
            fprintf(f, "route show: IPv6: out of memory\n");
        return false;
    }
    qsort(l.rows, l.n, sizeof(*l.rows), cmp6);
    if (json)
        fprintf(f, ",\"routes6\":[");
    else if (l.n || want) /* a prefix with no route: the header alone, as IPv4's */
        fprintf(f, "%s%-44s %-40s %-16s %s\n", want ? "" : "\n", "PREFIX", "VIA", "PORT", "ORIGIN");
    bool first = true;
    for (size_t i = 0; i < l.n; i++) {
        const struct sup_rt_route6 *r = &l.rows[i];
        if (want && (r->len != want->len || memcmp(r->addr, want->addr, 16) != 0))
            continue;
        const char *port = r->nh.port < s->m.nports ? s->m.ports[r->nh.port].name : "?";
        const char *origin = origin6(s, r->addr, r->len);
        char pfx[64];
        snprintf(pfx, sizeof(pfx), "%s/%u", A6(r->addr), r->len);
        bool gw = !gw_zero(r->nh.gw);
        bool group = (r->nh.flags & FIB_NH_F_GROUP) && sup_route_show_group(s, true, &r->nh, pfx, origin, json, first, f);
        if (!group && json)
            fprintf(f, "%s{\"prefix\":\"%s\",\"via\":%s%s%s,\"port\":\"%s\",\"origin\":\"%s\"}", first ? "" : ",",
                    pfx, gw ? "\"" : "", gw ? A6(r->nh.gw) : "null", gw ? "\"" : "", port, origin);
        else if (!group)
            fprintf(f, "%-44s %-40s %-16s %s\n", pfx, gw ? A6(r->nh.gw) : "-", port, origin);
        first = false;
    }
    if (json)
        fprintf(f, "]");
    free(l.rows);
    return true;
}

/* The longest prefix that covers @a: the FIB's rows, walked (a command,
 * not the data path). */
bool sup_route6_get(struct sup *s, char **argv, int argc, FILE *f)
{
    bool json = argc == 2 && strcmp(argv[1], "json") == 0;
    if (argc < 1 || argc > 2 || (argc == 2 && !json)) {
        fprintf(f, "route get: expected ADDRESS [--json]%s%s\n", argc > 1 && !json ? "; not " : "",
                argc > 1 && !json ? argv[1] : "");
        return false;
    }
    uint8_t a[16];
    if (inet_pton(AF_INET6, argv[0], a) != 1) {
        fprintf(f, "route get: \"%s\" is not an IPv6 address\n", argv[0]);
        return false;
    }
    struct route6_list l = {0};
    if (fib6_iterate(&s->fib6, collect6, &l) < 0) {
        free(l.rows);
        fprintf(f, "route get: out of memory\n");
        return false;
    }
    const struct sup_rt_route6 *best = NULL;
    for (size_t i = 0; i < l.n; i++) {
        uint8_t m[16];
        memcpy(m, a, 16);
        sup_mask6(m, (uint8_t)l.rows[i].len);
        if (memcmp(m, l.rows[i].addr, 16) == 0 && (!best || l.rows[i].len > best->len))
            best = &l.rows[i];
    }
    if (!best) {
        free(l.rows);
        fprintf(f, "route get: no route to %s\n", argv[0]);
        return false;
    }
    const char *port = best->nh.port < s->m.nports ? s->m.ports[best->nh.port].name : "?";
    bool gw = !gw_zero(best->nh.gw);
    char addr[64], pfx[64];
    snprintf(addr, sizeof(addr), "%s", A6(a));
    snprintf(pfx, sizeof(pfx), "%s/%u", A6(best->addr), best->len);
    const char *origin = origin6(s, best->addr, best->len);
    if (best->nh.flags & FIB_NH_F_GROUP) {
        if (json) {
            sup_json_begin(f);
            fprintf(f, "\"address\":\"%s\",\"route\":", addr);
            sup_route_show_group(s, true, &best->nh, pfx, origin, true, true, f);
            fprintf(f, "}\n");
        } else {
            fprintf(f, "%s: %s, one of (by the flow's hash):\n", addr, pfx);
            sup_route_show_group(s, true, &best->nh, "", origin, false, true, f);
        }
    } else if (json) {
        sup_json_begin(f);
        fprintf(f, "\"address\":\"%s\",\"route\":{\"prefix\":\"%s\",\"via\":%s%s%s,\"port\":\"%s\",\"origin\":\"%s\"}}\n",
                addr, pfx, gw ? "\"" : "", gw ? A6(best->nh.gw) : "null", gw ? "\"" : "", port, origin);
    } else
        fprintf(f, "%s: %s %s%s port %s (%s)\n", addr, pfx, gw ? "via " : "connected", gw ? A6(best->nh.gw) : "", port,
                origin);
    free(l.rows);
    return true;
}

/* An FIB change (@nh NULL: a deletion), retried while the router still
 * holds what it would retire. */
static int fib6_set_retry(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    int ret;
    for (int tries = 0; (ret = nh ? fib6_replace(&s->fib6, addr, len, nh) : fib6_del(&s->fib6, addr, len)) == -EAGAIN &&
                        tries < 2000;
         tries++) {
        fib6_reclaim(&s->fib6);
        usleep(50);
    }
    return ret;
}

/* Runtime route @addr/@len no more: the manifest's next hop back (1), or
 * deleted (0); -errno, and it stays runtime. No reclaim. */
static int rt6_drop(struct sup *s, const uint8_t *addr, unsigned len)
{
    const struct sup_route *mr = manifest_route6(s, addr, len);
    int ret = mr ? sup_mroute_put(s, mr) : fib6_set_retry(s, addr, len, NULL); /* route_mpath.c */
    if (ret < 0 && ret != -ENOENT)
        return ret;
    sup_route6_forget(s, addr, len);
    return mr != NULL;
}

int sup_route6_drop(struct sup *s, const uint8_t *addr, unsigned len)
{
    int ret = rt6_drop(s, addr, len);
    return ret < 0 ? ret : 0;
}

int sup_route6_load_set(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nh, bool *had)
{
    struct fib6_nh cur;
    *had = fib6_get(&s->fib6, addr, len, &cur) == 0;
    bool same = *had && !(cur.flags & FIB_NH_F_GROUP) && cur.port == nh->port && memcmp(cur.gw, nh->gw, 16) == 0;
    int ret = same ? 0 : fib6_set_retry(s, addr, len, nh);
    if (ret < 0)
        return ret;
    if (rt6_set(s, addr, len, nh, NULL) < 0)
        return -ENOMEM;
    return !same;
}

bool sup_route6_load_check(struct sup *s, const char *prefix, const char *via, const char *pname,
                           struct sup_prefix6 *pf, struct fib6_nh *nh, char *e, size_t elen)
{
    char *msg = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&msg, &len);
    if (!f) {
        snprintf(e, elen, "out of memory");
        return false;
    }
    bool ok = route6_args(s, "route load", prefix, via, pname, true, pf, nh, f);
    fclose(f);
    const char *m = msg && len ? msg : "";
    if (strncmp(m, "route load: ", 12) == 0)
        m += 12;
    snprintf(e, elen, "%s", m);
    size_t el = strlen(e);
    if (el && e[el - 1] == '\n')
        e[el - 1] = '\0';
    free(msg);
    return ok;
}

void sup_route6_flush(struct sup *s, int port, struct sup_rt_flush *n, FILE *f)
{
    for (size_t i = s->n_rt6_routes; i-- > 0;) { /* downwards: forget moves the last row here */
        struct sup_rt_route6 r = s->rt6_routes[i];
        if (port >= 0 && (r.mp ? !sup_mp_on_port(r.mp, true, port) : r.nh.port != port))
            continue;
        int ret = rt6_drop(s, r.addr, r.len);
        if (ret < 0) {
            fprintf(f, "route flush: %s/%u: %s\n", A6(r.addr), r.len, strerror(-ret));
            n->failed++;
            continue;
        }
        n->restored += ret == 1;
        n->deleted += ret == 0;
    }
    for (size_t i = 0; i < s->m.nroutes; i++) {
        const struct sup_route *r = &s->m.routes[i];
        struct fib6_nh old;
        if (!r->v6 || (port >= 0 && !sup_mroute_on_port(r, port)) ||
            fib6_get(&s->fib6, r->prefix6.addr, r->prefix6.len, &old) == 0)
            continue;
        int ret = sup_mroute_put(s, r);
        if (ret < 0) {
            fprintf(f, "route flush: %s/%u: %s\n", A6(r->prefix6.addr), r->prefix6.len, strerror(-ret));
            n->failed++;
            continue;
        }
        n->restored++;
    }
    fib6_reclaim(&s->fib6);
}

long sup_route6_save(struct sup *s, FILE *out)
{
    struct sup_rt_route6 *rows = malloc((s->n_rt6_routes + 1) * sizeof(*rows));
    if (!rows)
        return -1;
    memcpy(rows, s->rt6_routes, s->n_rt6_routes * sizeof(*rows));
    qsort(rows, s->n_rt6_routes, sizeof(*rows), cmp6);
    for (size_t i = 0; i < s->n_rt6_routes; i++) {
        const struct sup_rt_route6 *r = &rows[i];
        const char *port = r->nh.port < s->m.nports ? s->m.ports[r->nh.port].name : "?";
        fprintf(out, "%s/%u", A6(r->addr), r->len);
        if (r->mp) {
            sup_route_save_mp(s, true, r->mp, out);
            continue;
        }
        /* As one would type it: a global gateway's port follows from it, a link-local one's does not. */
        if (gw_zero(r->nh.gw))
            fprintf(out, " port %s\n", port);
        else if (sup_ll6(r->nh.gw))
            fprintf(out, " via %s port %s\n", A6(r->nh.gw), port);
        else
            fprintf(out, " via %s\n", A6(r->nh.gw));
    }
    free(rows);
    return (long)s->n_rt6_routes;
}

bool sup_route6_load(struct sup *s, char **words, int n, char *e, size_t elen)
{
    char *msg = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&msg, &len);
    if (!f) {
        snprintf(e, elen, "route replace: out of memory");
        return false;
    }
    bool ok = route6_set(s, words, n, true, f);
    fclose(f);
    snprintf(e, elen, "%s", msg && len ? msg : "");
    size_t el = strlen(e);
    if (el && e[el - 1] == '\n')
        e[el - 1] = '\0';
    free(msg);
    return ok;
}

static const char *neigh6_state(uint8_t st)
{
    switch (st) {
    case NEIGH6_INCOMPLETE:
        return "incomplete";
    case NEIGH6_REACHABLE:
        return "reachable";
    case NEIGH6_STALE:
        return "stale";
    case NEIGH6_DELAY:
        return "delay";
    case NEIGH6_PROBE:
        return "probe";
    case NEIGH6_STATIC:
        return "static";
    }
    return "?";
}

void sup_neigh6_show(struct sup *s, const uint8_t *want, bool json, FILE *f)
{
    unsigned shown = 0, busy = 0;
    uint32_t budget = NEIGH_READ_BUDGET;
    if (json)
        fprintf(f, ",\"neighbours6\":[");
    for (uint32_t i = 0; i <= s->neigh6.mask; i++) {
        struct neigh6_entry e;
        int r = neigh6_read(&s->neigh6, i, &e, &budget);
        busy += r == -EBUSY;
        if (r <= 0 || (want && memcmp(e.ip, want, 16) != 0))
            continue;
        char mac[24];
        snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", e.mac[0], e.mac[1], e.mac[2], e.mac[3], e.mac[4],
                 e.mac[5]);
        const char *port = e.port < s->m.nports ? s->m.ports[e.port].name : "?";
        if (json) {
            fprintf(
                f, "%s{\"address\":\"%s\",\"mac\":\"%s\",\"port\":\"%s\",\"state\":\"%s\",\"router\":%s,"
                   "\"queued_packets\":%u}",
                shown ? "," : "", A6(e.ip), mac, port, neigh6_state(e.state), e.is_router ? "true" : "false", e.qlen);
        } else {
            if (!shown)
                fprintf(f, "%s%-40s %-18s %-8s %-11s %s\n", want ? "" : "\n", "ADDRESS6", "MAC", "PORT", "STATE",
                        "QUEUED");
            fprintf(f, "%-40s %-18s %-8s %-11s %u\n", A6(e.ip), e.state == NEIGH6_INCOMPLETE ? "-" : mac, port,
                    neigh6_state(e.state), e.qlen);
        }
        shown++;
    }
    if (!json && want && !shown) /* an absent address: the header alone, as IPv4's */
        fprintf(f, "%-40s %-18s %-8s %-11s %s\n", "ADDRESS6", "MAC", "PORT", "STATE", "QUEUED");
    if (json)
        fprintf(f, "],\"busy6\":%u", busy);
    else if (busy)
        fprintf(f, "(%u IPv6 entries were being rewritten by the router and are not shown)\n", busy);
}
