/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_load_parse.c: a line of `route load`'s file
 * (routes_load.c) read and checked as `route add` checks one, before the
 * load changes anything.
 *
 * A line is what `route show` prints (PREFIX VIA PORT ORIGIN, VIA "-" for
 * a route to a port; rows of origin connected or manifest are skipped, the
 * header too), or what `ip route` prints and takes: [route] [add|replace]
 * PREFIX [via GATEWAY] [dev|port NAME], with proto, metric, scope, src,
 * table, pref, expires and onlink taken and ignored; or a route with
 * several next hops, as `route add` and `route save` have it (PREFIX via A
 * weight W via B ..., or ip's nexthop via A dev P weight W ...: route_multi.c).
 * Blank lines and # comments are skipped. An IPv6 line is checked as
 * `route replace` checks one (route6.c).
 */
#include "supervisor/routes_load.h"
#include "supervisor/route6.h"
#include "supervisor/route_multi.h"
#include "supervisor/routes.h"
#include "supervisor/sup.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#define LOAD_WORDS 128 /* a route of 16 next hops, each `nexthop via A dev P weight W` */

static uint32_t mask_of(unsigned len)
{
    return len ? (uint32_t)(0xffffffffull << (32 - len)) : 0;
}

static const char *ip4(uint32_t a, char *b, size_t n)
{
    return sup_ip_str(a, b, n);
}

/* The port whose connected network is @addr/@len exactly, or -1. */
static int connected_net(const struct sup *s, uint32_t addr, unsigned len)
{
    for (size_t p = 0; p < s->m.nports; p++) {
        const struct sup_prefix *n = &s->m.ports[p].address;
        if (n->len == len && (n->addr & mask_of(len)) == addr)
            return (int)p;
    }
    return -1;
}

/* A `route show` row's ORIGIN: 1 a route to load, 0 the manifest's (skipped), -1 an error. */
static int row_origin(const char *origin, char *e, size_t elen)
{
    if (strcmp(origin, "connected") == 0 || strcmp(origin, "manifest") == 0)
        return 0;
    if (strcmp(origin, "runtime") != 0 && strcmp(origin, "daemon") != 0) {
        snprintf(e, elen, "origin \"%s\": expected connected, manifest, runtime or daemon", origin);
        return -1;
    }
    return 1;
}

/* ip's words from @w[@i] on: via GATEWAY, dev|port NAME (NULL when absent); 0, or -1 an error. */
static int ip_words(char **w, int i, int n, const char **via, const char **pname, char *e, size_t elen)
{
    static const char *const ignored[] = {"proto", "metric", "scope", "src", "table", "pref", "expires"};
    for (; i < n; i++) {
        const char *k = w[i], *v = i + 1 < n ? w[i + 1] : NULL;
        if (strcmp(k, "onlink") == 0)
            continue;
        if (!v) {
            snprintf(e, elen, "\"%s\" without a value", k);
            return -1;
        }
        i++;
        if (strcmp(k, "via") == 0) {
            *via = v;
            continue;
        }
        if (strcmp(k, "dev") == 0 || strcmp(k, "port") == 0) {
            *pname = v;
            continue;
        }
        bool known = false;
        for (size_t j = 0; j < sizeof(ignored) / sizeof(ignored[0]) && !known; j++)
            known = strcmp(k, ignored[j]) == 0;
        if (!known) {
            snprintf(e, elen, "unexpected \"%s\" (expected via, dev, port, or ip's proto, metric, scope, src, table, "
                              "pref, expires, onlink)", k);
            return -1;
        }
    }
    return 0;
}

/* A line's words after its prefix (@w[@i..@n]) into @via and @pname (NULL
 * when absent): route show's row (PREFIX VIA PORT ORIGIN; @row: the caller
 * read VIA as a gateway or "-") or ip's words. 1 a route, 0 a row of the
 * manifest's (skipped), -1 an error in @e. */
static int line_rest(char **w, int i, int n, bool row, const char **via, const char **pname, char *e, size_t elen)
{
    if (row && n - i == 3 && strcmp(w[i], "via") != 0) {
        int k = row_origin(w[i + 2], e, elen);
        if (k <= 0)
            return k;
        *via = strcmp(w[i], "-") != 0 ? w[i] : NULL;
        *pname = w[i + 1];
        return 1;
    }
    return ip_words(w, i, n, via, pname, e, elen) < 0 ? -1 : 1;
}

/* An IPv6 line's words after PREFIX (@pw) into @r: as sup_route_load_line. */
static int load_line6(struct sup *s, char **w, int i, int n, const char *pw, struct sup_load_route *r, char *e,
                      size_t elen)
{
    const char *via = NULL, *pname = NULL;
    int k = line_rest(w, i, n, n - i == 3 && (strcmp(w[i], "-") == 0 || strchr(w[i], ':')), &via, &pname, e, elen);
    if (k <= 0)
        return k;
    if (!via && !pname) {
        snprintf(e, elen, "%s has neither via GATEWAY nor port NAME", pw);
        return -1;
    }
    struct sup_prefix6 pf;
    if (!sup_route6_load_check(s, pw, via, pname, &pf, &r->nh6, e, elen))
        return -1;
    if (sup_routes_has(s, AF_INET6, pf.addr, pf.len)) {
        snprintf(e, elen, "%s is a daemon's route ([routes]): it is the daemon's to change", pw);
        return -1;
    }
    r->v6 = true;
    r->len = pf.len;
    memcpy(r->addr6, pf.addr, 16);
    return 1;
}

int sup_route_load_line(struct sup *s, char *line, struct sup_load_route *r, char *e, size_t elen)
{
    char *w[LOAD_WORDS];
    int n = 0;
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    for (char *t = strtok(line, " \t\r\n"); t; t = strtok(NULL, " \t\r\n")) {
        if (n == LOAD_WORDS) {
            snprintf(e, elen, "more than %d words", LOAD_WORDS);
            return -1;
        }
        w[n++] = t;
    }
    int i = 0;
    *r = (struct sup_load_route){0};
    if (n == 0 || strcmp(w[0], "PREFIX") == 0)
        return 0;
    if (strcmp(w[i], "route") == 0)
        i++;
    if (i < n && (strcmp(w[i], "add") == 0 || strcmp(w[i], "replace") == 0))
        i++;
    if (i >= n) {
        snprintf(e, elen, "no prefix");
        return -1;
    }
    const char *pw = w[i++];
    struct sup_prefix pfx;
    struct sup_mp_line ml;
    if (sup_route_multi_args(w + i - 1, n - i + 1)) { /* several next hops: route_multi.c */
        if (sup_route_mp_line(s, w + i - 1, n - i + 1, &ml, e, elen) < 0)
            return -1;
        *r = (struct sup_load_route){.addr = ml.addr, .len = ml.len, .v6 = ml.v6, .nh = ml.mp->nh[0], .mp = ml.mp};
        memcpy(r->addr6, ml.addr6, 16);
        return 1;
    }
    if (strchr(pw, ':'))
        return load_line6(s, w, i, n, pw, r, e, elen);
    if (strcmp(pw, "default") == 0) {
        pfx = (struct sup_prefix){0, 0};
    } else if (!strchr(pw, '/') && sup_parse_addr(pw, &pfx.addr)) {
        pfx.len = 32;
    } else if (!sup_parse_prefix(pw, &pfx)) {
        snprintf(e, elen, "\"%s\" is not an IPv4 prefix (a.b.c.d/len, an address, or default)", pw);
        return -1;
    }
    char b[24];
    if (pfx.addr & ~mask_of(pfx.len)) {
        snprintf(e, elen, "%s has host bits set; did you mean %s/%u?", pw, ip4(pfx.addr & mask_of(pfx.len), b, sizeof(b)),
                 pfx.len);
        return -1;
    }
    uint32_t gw = 0;
    int port = -1;
    const char *via = NULL, *pname = NULL;
    int k = line_rest(w, i, n, n - i == 3 && (strcmp(w[i], "-") == 0 || sup_parse_addr(w[i], &gw)), &via, &pname, e,
                      elen);
    if (k <= 0)
        return k;
    bool have_gw = via != NULL;
    if (via && !sup_parse_addr(via, &gw)) {
        snprintf(e, elen, "via \"%s\" is not an IPv4 address", via);
        return -1;
    }
    if (pname && (port = sup_manifest_port(&s->m, pname)) < 0) {
        snprintf(e, elen, "no port \"%s\"", pname);
        return -1;
    }
    if (have_gw) {
        int gp = sup_port_of_addr(s, gw);
        if (gp < 0) {
            snprintf(e, elen, "gateway %s is on none of the ports' networks", ip4(gw, b, sizeof(b)));
            return -1;
        }
        if (port >= 0 && port != gp) {
            snprintf(e, elen, "gateway %s is on port %s's network, not port %s's", ip4(gw, b, sizeof(b)),
                     s->m.ports[gp].name, s->m.ports[port].name);
            return -1;
        }
        char why[160];
        if (sup_gateway_why(&s->m, gw, gp, why, sizeof(why))) {
            snprintf(e, elen, "gateway %s", why);
            return -1;
        }
        port = gp;
    } else if (port < 0) {
        snprintf(e, elen, "%s has neither via GATEWAY nor port NAME", pw);
        return -1;
    }
    int cp = connected_net(s, pfx.addr, pfx.len);
    if (cp >= 0) {
        snprintf(e, elen, "%s is port %s's connected network", pw, s->m.ports[cp].name);
        return -1;
    }
    uint8_t d[16] = {0};
    uint32_t be = htonl(pfx.addr);
    memcpy(d, &be, 4);
    if (sup_routes_has(s, AF_INET, d, pfx.len)) {
        snprintf(e, elen, "%s is a daemon's route ([routes]): it is the daemon's to change", pw);
        return -1;
    }
    *r = (struct sup_load_route){
        .addr = pfx.addr, .len = (uint8_t)pfx.len, .nh = {.gw = have_gw ? gw : 0, .port = (uint16_t)port}};
    return 1;
}
