/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest_routes.c: the [routes] section's values (a kernel
 * table by number or by name, FPM's listening address) and its checks.
 * Whether the control namespace exists is the machine's business, seen at
 * `up` with the key's line (supervisor/routes_setup.c).
 *
 * And a [route]'s several next hops (ECMP): `nexthop = ADDRESS [port NAME]
 * [weight W]`, one line each, as ip route's `nexthop via A weight W`; each
 * checked as `via` is, and the set as `route add ... via A via B` checks it
 * (supervisor/route_multi.c), so that what `up` reads the FIB takes.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/manifest_impl.h"

#define KLINE(o, key) ((o)->src.key_line[key])
#define ADDR6(a) sup_addr6_str((a), (char[INET6_ADDRSTRLEN]){0}, INET6_ADDRSTRLEN)

/* The tables iproute2 knows by name: its files, then the names it builds in. */
static bool rt_table_named(const char *name, uint32_t *out)
{
    static const char *const files[] = {"/etc/iproute2/rt_tables", "/usr/share/iproute2/rt_tables",
                                        "/usr/lib/iproute2/rt_tables"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        FILE *f = fopen(files[i], "re");
        if (!f)
            continue;
        char line[256];
        bool found = false;
        while (!found && fgets(line, sizeof(line), f)) {
            char word[128];
            unsigned long id;
            if (line[0] == '#' || sscanf(line, "%lu %127s", &id, word) != 2)
                continue;
            if (strcmp(word, name) == 0 && id > 0 && id <= UINT32_MAX) {
                *out = (uint32_t)id;
                found = true;
            }
        }
        fclose(f);
        if (found)
            return true;
    }
    static const struct {
        const char *n;
        uint32_t id;
    } builtin[] = {{"main", 254}, {"default", 253}};
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
        if (strcmp(name, builtin[i].n) == 0) {
            *out = builtin[i].id;
            return true;
        }
    return false;
}

int sup_p_rt_table(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint32_t id = 0;
    if (isdigit((unsigned char)v[0])) {
        char *end;
        errno = 0;
        unsigned long n = strtoul(v, &end, 10);
        if (*end || errno || n == 0 || n > UINT32_MAX)
            return sup_vfail(pc, k, "\"%s\" is not a routing table: expected 1 to 4294967295 or a name of "
                                    "/etc/iproute2/rt_tables", v);
        id = (uint32_t)n;
    } else if (!rt_table_named(v, &id)) {
        return sup_vfail(pc, k, "no routing table \"%s\": not a number, and not a name in /etc/iproute2/rt_tables "
                                "(add a line \"100 %s\" there, or give its number)", v, v);
    }
    if (id == 255) /* RT_TABLE_LOCAL */
        return sup_vfail(pc, k, "%s is the kernel's local table (the namespace's own addresses): name the table "
                                "the daemon writes to", v);
    memcpy(dst, &id, sizeof(id));
    return 0;
}

/* "ADDRESS:PORT", or "[IPv6]:PORT". */
int sup_p_fpm_addr(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_routes *r = &pc->m->daemon;
    (void)dst;
    char host[64];
    const char *colon = strrchr(v, ':');
    size_t hl = colon ? (size_t)(colon - v) : 0;
    if (!colon || hl == 0 || hl >= sizeof(host))
        return sup_vfail(pc, k, "\"%s\" is not ADDRESS:PORT (such as 127.0.0.1:2620, or [::1]:2620)", v);
    memcpy(host, v, hl);
    host[hl] = '\0';
    char *h = host;
    if (h[0] == '[' && hl > 2 && h[hl - 1] == ']') {
        h[hl - 1] = '\0';
        h++;
        r->fpm_v6 = true;
    }
    char *end;
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || port == 0 || port > 65535)
        return sup_vfail(pc, k, "\"%s\": the port must be 1 to 65535", v);
    if (inet_pton(r->fpm_v6 ? AF_INET6 : AF_INET, h, r->fpm_addr) != 1)
        return sup_vfail(pc, k, "\"%s\": \"%s\" is not an IP%s address", v, h, r->fpm_v6 ? "v6" : "v4");
    r->fpm = true;
    r->fpm_port = (uint16_t)port;
    return 0;
}

int sup_check_routes(struct sup_pctx *pc)
{
    const struct sup_routes *r = &pc->m->daemon;
    if (!r->src.line)
        return 0;
    if (!r->table && !r->fpm)
        return sup_fail(pc, r->src.line, r->src.section, NULL,
                        "no source: set table (a kernel table to follow) or fpm (ADDRESS:PORT for FRR's FPM), or both");
    return 0;
}

/* ---- several next hops ---- */

/* One `nexthop` line: ADDRESS of the prefix's family, then `port NAME` and
 * `weight W` in any order, each at most once. */
int sup_p_route_nexthop(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_route *r = dst;
    if (r->nnh == SUP_ROUTE_NH_MAX)
        return sup_vfail(pc, k, "next hop %d: a route has at most %d (the FIB's group bound)", SUP_ROUTE_NH_MAX + 1,
                         SUP_ROUTE_NH_MAX);
    char buf[SUP_LINE_MAX + 1], *save = NULL;
    snprintf(buf, sizeof buf, "%s", v);
    char *addr = strtok_r(buf, " \t", &save);
    if (!addr)
        return sup_vfail(pc, k, "empty, expected %s", k->expect);
    struct sup_route_nh *nh = &r->nh[r->nnh];
    *nh = (struct sup_route_nh){.port = -1, .weight = 1, .line = pc->line};
    char canon[64] = "";
    bool other = r->v6 ? !strchr(addr, ':') && sup_parse_addr(addr, &nh->via)
                       : strchr(addr, ':') && sup_parse_addr6(addr, nh->via6, NULL, 0);
    if (other)
        return sup_vfail(pc, k, "%s is an IPv%d address, and the route's prefix is IPv%d: a route's next hops are "
                                "of its prefix's family", addr, r->v6 ? 4 : 6, r->v6 ? 6 : 4);
    if (!r->v6 && !sup_parse_addr(addr, &nh->via))
        return sup_vfail(pc, k, "\"%s\" is not an IPv4 address, expected %s", addr, k->expect);
    if (r->v6 && !sup_parse_addr6(addr, nh->via6, canon, sizeof canon)) {
        if (canon[0])
            return sup_vfail(pc, k, "\"%s\" is not in canonical form (RFC 5952): write %s", addr, canon);
        return sup_vfail(pc, k, "\"%s\" is not an IPv6 address, expected %s", addr, k->expect);
    }
    bool has_port = false, has_weight = false;
    for (char *w = strtok_r(NULL, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        bool port = strcmp(w, "port") == 0, weight = strcmp(w, "weight") == 0;
        if (!port && !weight)
            return sup_vfail(pc, k, "unexpected \"%s\": expected %s", w, k->expect);
        if (port ? has_port : has_weight)
            return sup_vfail(pc, k, "%s given twice", w);
        char *val = strtok_r(NULL, " \t", &save);
        if (!val)
            return sup_vfail(pc, k, "%s needs a value", w);
        if (port) {
            const struct sup_key pk = {.name = k->name, .min = 1, .max = SUP_NAME_MAX};
            if (sup_p_port_name(pc, &pk, val, nh->port_name))
                return pc->rc;
            has_port = true;
            continue;
        }
        int64_t x;
        if (sup_int(val, &x) < 0)
            return sup_vfail(pc, k, "weight \"%s\" is not a whole number from 1 to %d", val, SUP_ROUTE_WEIGHT_MAX);
        if (x < 1 || x > SUP_ROUTE_WEIGHT_MAX)
            return sup_vfail(pc, k, "weight %s is out of range 1..%d", val, SUP_ROUTE_WEIGHT_MAX);
        nh->weight = (uint16_t)x;
        has_weight = true;
    }
    r->nnh++;
    return 0;
}

/* Does @r repeat a port's connected network? The error if so. */
static int mp_connected(struct sup_pctx *pc, const struct sup_route *r)
{
    const struct sup_manifest *m = pc->m;
    for (size_t j = 0; j < m->nports; j++) {
        const struct sup_port *p = &m->ports[j];
        unsigned line = 0;
        if (!r->v6 && p->address.len == r->prefix.len && (p->address.addr & sup_mask(p->address.len)) == r->prefix.addr)
            line = KLINE(p, SUP_PORT_ADDRESS);
        for (unsigned k = 0; r->v6 && !line && k < p->naddr6; k++) {
            struct sup_prefix6 net = p->addr6[k];
            sup_mask6(net.addr, net.len);
            if (net.len == r->prefix6.len && memcmp(net.addr, r->prefix6.addr, 16) == 0)
                line = p->addr6_line[k] ? p->addr6_line[k] : p->src.line;
        }
        if (line)
            return sup_fail(pc, r->src.line, r->src.section, NULL, "duplicates the connected route of port %s (line %u)",
                            p->name, line);
    }
    return 0;
}

/* Member @nh of @r: its port, found from its address (and checked against
 * a given one), and an address that may be a next hop there. */
static int mp_member(struct sup_pctx *pc, struct sup_route *r, struct sup_route_nh *nh)
{
    const struct sup_manifest *m = pc->m;
    const char *a = r->v6 ? ADDR6(nh->via6) : ADDR(nh->via);
    int on = -1;
    if (!r->v6) {
        for (size_t j = 0; j < m->nports && on < 0; j++)
            if (sup_in(&m->ports[j].address, nh->via))
                on = (int)j;
    } else {
        on = sup_port_for6(m, nh->via6);
    }
    if (nh->port_name[0]) {
        nh->port = sup_port_ref(pc, &r->src, nh->line, "nexthop", nh->port_name);
        if (nh->port < 0)
            return pc->rc;
    }
    if (r->v6 && sup_ll6(nh->via6)) {
        if (nh->port < 0)
            return sup_fail(pc, nh->line, r->src.section, "nexthop",
                            "%s is link-local: add port NAME to say which link it is on", a);
        on = nh->port;
    }
    if (on < 0)
        return sup_fail(pc, nh->line, r->src.section, "nexthop", "%s is not on any port's %snetwork", a,
                        r->v6 ? "IPv6 " : "");
    if (nh->port >= 0 && nh->port != on)
        return sup_fail(pc, nh->line, r->src.section, "nexthop", "the gateway %s is on port %s, not %s", a,
                        m->ports[on].name, nh->port_name);
    nh->port = on;
    snprintf(nh->port_name, sizeof nh->port_name, "%s", m->ports[on].name);
    char why[200];
    if (r->v6 ? sup_gateway6_why(m, nh->via6, on, why, sizeof why) != NULL
              : sup_gateway_why(m, nh->via, on, why, sizeof why) != NULL)
        return sup_fail(pc, nh->line, r->src.section, "nexthop", "%s", why);
    return 0;
}

static bool same_member(const struct sup_route *r, const struct sup_route_nh *a, const struct sup_route_nh *b)
{
    return a->port == b->port && (r->v6 ? memcmp(a->via6, b->via6, 16) == 0 : a->via == b->via);
}

int sup_check_route_mp(struct sup_pctx *pc, struct sup_route *r)
{
    unsigned lvia = KLINE(r, SUP_ROUTE_VIA), lport = KLINE(r, SUP_ROUTE_PORT), lnh = KLINE(r, SUP_ROUTE_NEXTHOP);
    unsigned lone = lvia > lport ? lvia : lport, last = lone > lnh ? lone : lnh;
    if (lone)
        return sup_fail(pc, last, r->src.section, last == lnh ? "nexthop" : last == lvia ? "via" : "port",
                        "give either nexthop lines (several next hops) or via and port (one), not both");
    if (mp_connected(pc, r))
        return pc->rc;
    for (unsigned i = 0; i < r->nnh; i++) {
        if (mp_member(pc, r, &r->nh[i]))
            return pc->rc;
        for (unsigned j = 0; j < i; j++)
            if (same_member(r, &r->nh[j], &r->nh[i]))
                return sup_fail(pc, r->nh[i].line, r->src.section, "nexthop",
                                "%s on port %s is the next hop of line %u again: each member once",
                                r->v6 ? ADDR6(r->nh[i].via6) : ADDR(r->nh[i].via), r->nh[i].port_name,
                                r->nh[j].line);
    }
    /* via and port hold the first member: what code that knows one next hop reads */
    r->via = r->nh[0].via;
    memcpy(r->via6, r->nh[0].via6, 16);
    r->port = r->nh[0].port;
    snprintf(r->port_name, sizeof r->port_name, "%s", r->nh[0].port_name);
    return 0;
}

static void nh_words(char *buf, size_t len, size_t *n, const struct sup_route *r, uint32_t via, const uint8_t *via6,
                     const char *port, bool direct)
{
    if (direct)
        sup_append(buf, len, n, "port %s", port);
    else if (!r->v6)
        sup_append(buf, len, n, "via %s", ADDR(via));
    else
        sup_append(buf, len, n, sup_ll6(via6) ? "via %s port %s" : "via %s", ADDR6(via6), port);
}

const char *sup_route_nh_str(const struct sup_route *r, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    if (!r->nnh)
        nh_words(buf, len, &n, r, r->via, r->via6, r->port_name, r->direct);
    for (unsigned i = 0; i < r->nnh; i++) {
        sup_append(buf, len, &n, "%s", i ? " " : "");
        nh_words(buf, len, &n, r, r->nh[i].via, r->nh[i].via6, r->nh[i].port_name, false);
        sup_append(buf, len, &n, " weight %u", r->nh[i].weight);
    }
    return buf;
}

bool sup_route_same_nh(const struct sup_route *a, const struct sup_route *b)
{
    if (a->v6 != b->v6 || a->nnh != b->nnh)
        return false;
    if (!a->nnh)
        return a->direct == b->direct && a->port == b->port &&
               (a->direct || (a->v6 ? memcmp(a->via6, b->via6, 16) == 0 : a->via == b->via));
    /* A set: the FIB sorts its members, so the order of the lines says nothing. */
    for (unsigned i = 0; i < a->nnh; i++) {
        bool found = false;
        for (unsigned j = 0; j < b->nnh && !found; j++)
            found = same_member(a, &a->nh[i], &b->nh[j]) && a->nh[i].weight == b->nh[j].weight;
        if (!found)
            return false;
    }
    return true;
}
