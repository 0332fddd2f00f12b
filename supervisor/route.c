/* SPDX-License-Identifier: MIT */
/*
 * supervisor/route.c: the control socket's route and neighbour commands.
 * The supervisor is the FIB's only writer: `route add` and `route del`
 * change the running router's table in place (each entry switches with one
 * atomic store, tables/fib.h), and `route show` / `neigh show` read
 * the tables without stopping anybody.
 *
 *   route add PREFIX via GATEWAY | route add PREFIX port NAME
 *   route del PREFIX
 *   route show [json]
 *   neigh show [json]
 */
#include "supervisor/sup.h"
#include "supervisor/route6.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool sup_ctl_route(struct sup *s, char **argv, int argc, FILE *f);
bool sup_ctl_neigh(struct sup *s, char **argv, int argc, FILE *f);

static const char *ip_str(uint32_t a, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
    return buf;
}

static uint32_t mask_of(unsigned len)
{
    return len ? (uint32_t)(0xffffffffull << (32 - len)) : 0;
}

/* The port whose connected network holds @a, or -1. */
static int port_of_addr(const struct sup *s, uint32_t a)
{
    for (size_t p = 0; p < s->m.nports; p++) {
        const struct sup_prefix *n = &s->m.ports[p].address;
        if (((a ^ n->addr) & mask_of(n->len)) == 0)
            return (int)p;
    }
    return -1;
}

static bool is_connected(const struct sup *s, const struct sup_prefix *pfx)
{
    for (size_t p = 0; p < s->m.nports; p++) {
        const struct sup_prefix *n = &s->m.ports[p].address;
        if (n->len == pfx->len && ((n->addr ^ pfx->addr) & mask_of(n->len)) == 0)
            return true;
    }
    return false;
}

static bool parse_prefix_arg(const char *arg, struct sup_prefix *pfx, FILE *f)
{
    char buf[24];
    if (!arg || !sup_parse_prefix(arg, pfx)) {
        fprintf(f, "route: \"%s\" is not an IPv4 prefix (a.b.c.d/len)\n", arg ? arg : "");
        return false;
    }
    uint32_t net = pfx->addr & mask_of(pfx->len);
    if (net != pfx->addr) {
        fprintf(f, "route: %s has host bits set; did you mean %s/%u?\n", arg, ip_str(net, buf, sizeof(buf)),
                pfx->len);
        return false;
    }
    return true;
}

static bool route_add(struct sup *s, char **argv, int argc, FILE *f)
{
    struct sup_prefix pfx;
    char b1[24], b2[24];
    if (argc != 3 || (strcmp(argv[1], "via") != 0 && strcmp(argv[1], "port") != 0)) {
        fprintf(f, "route add: expected PREFIX via GATEWAY, or PREFIX port NAME\n");
        return false;
    }
    if (!parse_prefix_arg(argv[0], &pfx, f))
        return false;
    struct fib_nh nh = {0};
    if (strcmp(argv[1], "via") == 0) {
        uint32_t gw;
        if (!sup_parse_addr(argv[2], &gw)) {
            fprintf(f, "route add: via \"%s\" is not an IPv4 address\n", argv[2]);
            return false;
        }
        int p = port_of_addr(s, gw);
        if (p < 0) {
            fprintf(f, "route add: gateway %s is on none of the ports' networks\n", argv[2]);
            return false;
        }
        char why[160];
        if (sup_gateway_why(&s->m, gw, p, why, sizeof(why))) {
            fprintf(f, "route add: gateway %s\n", why);
            return false;
        }
        nh = (struct fib_nh){.gw = gw, .port = (uint16_t)p};
    } else {
        int p = sup_manifest_port(&s->m, argv[2]);
        if (p < 0) {
            fprintf(f, "route add: no port \"%s\"\n", argv[2]);
            return false;
        }
        nh = (struct fib_nh){.gw = 0, .port = (uint16_t)p};
    }
    int ret = fib_add(&s->fib, pfx.addr, pfx.len, &nh);
    if (ret == -EEXIST) {
        fprintf(f, "route add: %s/%u exists; delete it first\n", ip_str(pfx.addr, b1, sizeof(b1)), pfx.len);
        return false;
    }
    if (ret < 0) {
        fprintf(f, "route add: %s/%u: %s\n", ip_str(pfx.addr, b1, sizeof(b1)), pfx.len, strerror(-ret));
        return false;
    }
    fib_reclaim(&s->fib);
    sup_log("route add %s/%u %s %s", ip_str(pfx.addr, b1, sizeof(b1)), pfx.len, argv[1],
            nh.gw ? ip_str(nh.gw, b2, sizeof(b2)) : s->m.ports[nh.port].name);
    fprintf(f, "added %s/%u\n", b1, pfx.len);
    return true;
}

static bool route_del(struct sup *s, char **argv, int argc, FILE *f)
{
    struct sup_prefix pfx;
    char b1[24];
    if (argc != 1) {
        fprintf(f, "route del: expected PREFIX\n");
        return false;
    }
    if (!parse_prefix_arg(argv[0], &pfx, f))
        return false;
    if (is_connected(s, &pfx)) {
        fprintf(f, "route del: %s is a port's connected network; change the manifest instead\n", argv[0]);
        return false;
    }
    int ret = fib_del(&s->fib, pfx.addr, pfx.len);
    if (ret == -ENOENT) {
        fprintf(f, "route del: no route %s/%u\n", ip_str(pfx.addr, b1, sizeof(b1)), pfx.len);
        return false;
    }
    if (ret < 0) {
        fprintf(f, "route del: %s: %s\n", argv[0], strerror(-ret));
        return false;
    }
    fib_reclaim(&s->fib);
    sup_log("route del %s/%u", ip_str(pfx.addr, b1, sizeof(b1)), pfx.len);
    fprintf(f, "deleted %s/%u\n", b1, pfx.len);
    return true;
}

struct route_row {
    uint32_t addr;
    unsigned len;
    struct fib_nh nh;
};

struct route_list {
    struct route_row *rows;
    size_t n, cap;
};

static int collect_route(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    struct route_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct route_row *r = realloc(l->rows, cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        l->rows = r;
        l->cap = cap;
    }
    l->rows[l->n++] = (struct route_row){addr, len, *nh};
    return 0;
}

static int cmp_route(const void *a, const void *b)
{
    const struct route_row *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return (int)x->len - (int)y->len;
}

static bool route_show(struct sup *s, bool json, FILE *f)
{
    struct route_list l = {0};
    if (fib_iterate(&s->fib, collect_route, &l) < 0) {
        free(l.rows);
        fprintf(f, "route show: out of memory\n");
        return false;
    }
    qsort(l.rows, l.n, sizeof(*l.rows), cmp_route);
    char b1[24], b2[24];
    if (json)
        fprintf(f, "{\"routes\":[");
    else
        fprintf(f, "%-20s %-16s %s\n", "PREFIX", "VIA", "PORT");
    for (size_t i = 0; i < l.n; i++) {
        const struct route_row *r = &l.rows[i];
        const char *port = r->nh.port < s->m.nports ? s->m.ports[r->nh.port].name : "?";
        char pfx[32];
        snprintf(pfx, sizeof(pfx), "%s/%u", ip_str(r->addr, b1, sizeof(b1)), r->len);
        if (json)
            fprintf(f, "%s{\"prefix\":\"%s\",\"via\":%s%s%s,\"port\":\"%s\"}", i ? "," : "", pfx, r->nh.gw ? "\"" : "",
                    r->nh.gw ? ip_str(r->nh.gw, b2, sizeof(b2)) : "null", r->nh.gw ? "\"" : "", port);
        else
            fprintf(f, "%-20s %-16s %s\n", pfx, r->nh.gw ? ip_str(r->nh.gw, b2, sizeof(b2)) : "connected", port);
    }
    if (json)
        fprintf(f, "]");
    bool ok = sup_route6_show(s, json, f); /* route6.c: the IPv6 FIB */
    if (json)
        fprintf(f, "}\n");
    free(l.rows);
    return ok;
}

bool sup_ctl_route(struct sup *s, char **argv, int argc, FILE *f)
{
    bool v6 = argc >= 2 && sup_route6_arg(argv[1]); /* route6.c */
    if (argc >= 1 && strcmp(argv[0], "add") == 0)
        return v6 ? sup_route6_add(s, argv + 1, argc - 1, f) : route_add(s, argv + 1, argc - 1, f);
    if (argc >= 1 && strcmp(argv[0], "del") == 0)
        return v6 ? sup_route6_del(s, argv + 1, argc - 1, f) : route_del(s, argv + 1, argc - 1, f);
    if (argc == 0 || strcmp(argv[0], "show") == 0)
        return route_show(s, argc >= 2 && strcmp(argv[1], "json") == 0, f);
    fprintf(f, "route: expected add, del or show\n");
    return false;
}

static const char *neigh_state(uint8_t st)
{
    switch (st) {
    case NEIGH_INCOMPLETE:
        return "incomplete";
    case NEIGH_REACHABLE:
        return "reachable";
    case NEIGH_STALE:
        return "stale";
    case NEIGH_STATIC:
        return "static";
    }
    return "?";
}

bool sup_ctl_neigh(struct sup *s, char **argv, int argc, FILE *f)
{
    if (argc >= 1 && strcmp(argv[0], "show") != 0) {
        fprintf(f, "neigh: expected show\n");
        return false;
    }
    bool json = argc >= 2 && strcmp(argv[1], "json") == 0;
    char b1[24];
    if (json)
        fprintf(f, "{\"neighbours\":[");
    else
        fprintf(f, "%-16s %-18s %-8s %-11s %s\n", "ADDRESS", "MAC", "PORT", "STATE", "QUEUED");
    unsigned shown = 0, busy = 0;
    uint32_t budget = NEIGH_READ_BUDGET;
    for (uint32_t i = 0; i <= s->neigh.mask; i++) {
        struct neigh_entry e;
        int r = neigh_read(&s->neigh, i, &e, &budget);
        busy += r == -EBUSY;
        if (r <= 0)
            continue;
        char mac[24];
        snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", e.mac[0], e.mac[1], e.mac[2], e.mac[3], e.mac[4],
                 e.mac[5]);
        const char *port = e.port < s->m.nports ? s->m.ports[e.port].name : "?";
        if (json)
            fprintf(f, "%s{\"address\":\"%s\",\"mac\":\"%s\",\"port\":\"%s\",\"state\":\"%s\",\"queued\":%u}",
                    shown ? "," : "", ip_str(e.ip, b1, sizeof(b1)), mac, port, neigh_state(e.state), e.qlen);
        else
            fprintf(f, "%-16s %-18s %-8s %-11s %u\n", ip_str(e.ip, b1, sizeof(b1)),
                    e.state == NEIGH_INCOMPLETE ? "-" : mac, port, neigh_state(e.state), e.qlen);
        shown++;
    }
    if (json)
        fprintf(f, "],\"busy\":%u", busy);
    else if (busy)
        fprintf(f, "(%u entries were being rewritten by the router and are not shown)\n", busy);
    sup_neigh6_show(s, json, f); /* route6.c: the IPv6 table */
    if (json)
        fprintf(f, "}\n");
    return true;
}
