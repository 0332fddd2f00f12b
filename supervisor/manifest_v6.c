/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest_v6.c: the manifest's IPv6: parsing addresses and
 * prefixes (one canonical spelling each, RFC 5952, so that a normalised
 * section header names one route or neighbour), a port's `address6` list
 * and its derived link-local address, IPv6 [route] and [neigh] sections,
 * and the checks that need the whole manifest (overlapping networks, a
 * gateway on a port's link). The IPv4 rooms (manifest_value.c,
 * manifest_check.c) call in here where a value or a header holds a ':'.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "supervisor/manifest_impl.h"

#define KLINE(o, key) ((o)->src.key_line[key])
#define ADDR6(a) sup_addr6_str((a), (char[INET6_ADDRSTRLEN]){0}, INET6_ADDRSTRLEN)

char *sup_addr6_str(const uint8_t a[16], char *buf, size_t len)
{
    if (!inet_ntop(AF_INET6, a, buf, (socklen_t)len))
        snprintf(buf, len, "?");
    return buf;
}

bool sup_parse_addr6(const char *v, uint8_t out[16], char *canon, size_t clen)
{
    uint8_t a[16];
    if (!v || strlen(v) >= INET6_ADDRSTRLEN || !strchr(v, ':') || inet_pton(AF_INET6, v, a) != 1)
        return false;
    char c[INET6_ADDRSTRLEN];
    sup_addr6_str(a, c, sizeof c);
    if (strcmp(c, v) != 0) {
        if (canon)
            snprintf(canon, clen, "%s", c);
        return false;
    }
    memcpy(out, a, 16);
    return true;
}

bool sup_parse_prefix6(const char *v, struct sup_prefix6 *out, char *canon, size_t clen)
{
    const char *slash = v ? strchr(v, '/') : NULL;
    if (!slash || (size_t)(slash - v) >= INET6_ADDRSTRLEN)
        return false;
    char a[INET6_ADDRSTRLEN];
    memcpy(a, v, (size_t)(slash - v));
    a[slash - v] = 0;
    const char *l = slash + 1;
    unsigned len = 0, nd = 0;
    if (l[0] == '0' && l[1] != 0)
        return false;
    while (*l >= '0' && *l <= '9' && nd < 4) {
        len = len * 10 + (unsigned)(*l++ - '0');
        nd++;
    }
    if (nd == 0 || *l || len > 128)
        return false;
    char c[INET6_ADDRSTRLEN];
    if (!sup_parse_addr6(a, out->addr, c, sizeof c)) {
        if (canon && c[0] && inet_pton(AF_INET6, a, (uint8_t[16]){0}) == 1)
            snprintf(canon, clen, "%s/%u", c, len);
        return false;
    }
    out->len = (uint8_t)len;
    return true;
}

void sup_mask6(uint8_t a[16], unsigned len)
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned keep = len >= 8 * (i + 1) ? 8 : len > 8 * i ? len - 8 * i : 0;
        a[i] &= (uint8_t)(0xff00u >> keep);
    }
}

bool sup_in6(const struct sup_prefix6 *net, const uint8_t a[16])
{
    uint8_t x[16], y[16];
    memcpy(x, net->addr, 16);
    memcpy(y, a, 16);
    sup_mask6(x, net->len);
    sup_mask6(y, net->len);
    return memcmp(x, y, 16) == 0;
}

static bool sup_zero6(const uint8_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i])
            return false;
    return true;
}

const char *sup_martian6(const uint8_t a[16])
{
    if (sup_zero6(a, 15) && a[15] == 0)
        return "the unspecified address ::";
    if (sup_zero6(a, 15) && a[15] == 1)
        return "the loopback address ::1";
    if (a[0] == 0xff)
        return "a multicast address";
    if (sup_zero6(a, 10) && a[10] == 0xff && a[11] == 0xff)
        return "an IPv4-mapped address (::ffff:0:0/96)";
    return NULL;
}

void sup_port_mac(const struct sup_manifest *m, int i, uint8_t mac[6])
{
    const struct sup_port *p = &m->ports[i];
    if (p->vlan_ntags && p->vlan_parent >= 0 && (size_t)p->vlan_parent < m->nports)
        p = &m->ports[i = p->vlan_parent]; /* a VLAN port's frames are its parent's device's */
    if (p->has_mac) {
        memcpy(mac, p->mac, 6);
        return;
    }
    /* Locally administered, unicast, stable across restarts of the router. */
    uint8_t def[6] = {0x02, 'r', 'r', 0x00, 0x00, (uint8_t)(i + 1)};
    memcpy(mac, def, 6);
}

void sup_ll6_from_mac(const uint8_t mac[6], uint8_t out[16])
{
    memset(out, 0, 16);
    out[0] = 0xfe;
    out[1] = 0x80;
    out[8] = mac[0] ^ 0x02; /* the universal/local bit, inverted */
    out[9] = mac[1];
    out[10] = mac[2];
    out[11] = 0xff;
    out[12] = 0xfe;
    out[13] = mac[3];
    out[14] = mac[4];
    out[15] = mac[5];
}

/* ---- values ---- */

/* A class's `src PREFIX` or `dst PREFIX` term when PREFIX is IPv6 (@term the whole term, for the message). */
int sup_match_prefix6(struct sup_pctx *pc, const struct sup_key *k, const char *term, const char *arg,
                      struct sup_prefix6 *out)
{
    char canon[64] = "";
    if (!sup_parse_prefix6(arg, out, canon, sizeof canon)) {
        if (canon[0])
            return sup_vfail(pc, k, "\"%s\": %s is not in canonical form (RFC 5952): write %s", term, arg, canon);
        return sup_vfail(pc, k, "\"%s\": expected an IPv6 prefix such as 2001:db8::/32", term);
    }
    uint8_t net[16];
    memcpy(net, out->addr, 16);
    sup_mask6(net, out->len);
    if (memcmp(net, out->addr, 16) != 0)
        return sup_vfail(pc, k, "\"%s\": %s has host bits set, did you mean %s/%u?", term, arg, ADDR6(net), out->len);
    return 0;
}

/* One address6 item: ADDR/LEN, a host address on its network. */
static int sup_address6_item(struct sup_pctx *pc, const struct sup_key *k, struct sup_port *p, const char *v)
{
    struct sup_prefix6 a;
    char canon[64] = "";
    if (!sup_parse_prefix6(v, &a, canon, sizeof canon)) {
        if (canon[0])
            return sup_vfail(pc, k, "\"%s\" is not in canonical form (RFC 5952): write %s", v, canon);
        return sup_vfail(pc, k, "\"%s\" is not an IPv6 prefix such as 2001:db8:1::1/64", v);
    }
    if (a.len == 0)
        return sup_vfail(pc, k, "%s has prefix length 0, expected 1..128", v);
    const char *why = sup_martian6(a.addr);
    if (why)
        return sup_vfail(pc, k, "%s is %s", v, why);
    if (sup_ll6(a.addr) && a.len != 64)
        return sup_vfail(pc, k, "%s: a link-local address takes /64 (fe80::/64 is the link's prefix)", v);
    uint8_t net[16];
    memcpy(net, a.addr, 16);
    sup_mask6(net, a.len);
    if (a.len < 127 && memcmp(net, a.addr, 16) == 0)
        return sup_vfail(pc, k, "%s is the subnet-router anycast address of %s/%u, expected a host address", v,
                         ADDR6(net), a.len);
    for (unsigned i = 0; i < p->naddr6; i++) {
        if (memcmp(p->addr6[i].addr, a.addr, 16) == 0)
            return sup_vfail(pc, k, "%s is already this port's address (line %u)", v, p->addr6_line[i]);
        if (sup_ll6(a.addr) && sup_ll6(p->addr6[i].addr))
            return sup_vfail(pc, k, "%s: the port already has the link-local address %s (line %u)", v,
                             ADDR6(p->addr6[i].addr), p->addr6_line[i]);
    }
    if (p->naddr6 >= SUP_ADDR6_MAX)
        return sup_vfail(pc, k, "%s: a port has at most %d IPv6 addresses", v, SUP_ADDR6_MAX);
    p->addr6_line[p->naddr6] = pc->line;
    p->addr6[p->naddr6++] = a;
    return 0;
}

/* address6 = ADDR/LEN[, ADDR/LEN ...]; the key may also be repeated. */
int sup_p_address6(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_port *p = dst;
    char buf[SUP_LINE_MAX + 1];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    int n = 0;
    for (char *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        while (*it == ' ' || *it == '\t')
            it++;
        size_t l = strlen(it);
        while (l && (it[l - 1] == ' ' || it[l - 1] == '\t'))
            it[--l] = 0;
        if (!l)
            continue;
        if (sup_address6_item(pc, k, p, it))
            return pc->rc;
        n++;
    }
    if (!n)
        return sup_vfail(pc, k, "empty, expected an IPv6 prefix such as 2001:db8:1::1/64");
    return 0;
}

/* A route's via: the family of its prefix. */
int sup_p_route_via(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_route *r = dst;
    if (!r->v6)
        return sup_p_addr(pc, k, v, &r->via);
    char canon[64] = "";
    if (!sup_parse_addr6(v, r->via6, canon, sizeof canon)) {
        if (canon[0])
            return sup_vfail(pc, k, "\"%s\" is not in canonical form (RFC 5952): write %s", v, canon);
        return sup_vfail(pc, k, "\"%s\" is not an IPv6 address (the route's prefix is IPv6)", v);
    }
    return 0;
}

/* ---- headers ---- */

int sup_init_route6(struct sup_pctx *pc, const char *sec, const char *name, struct sup_route *r)
{
    char canon[64] = "";
    struct sup_prefix6 *pf = &r->prefix6;
    if (!sup_parse_prefix6(name, pf, canon, sizeof canon)) {
        if (canon[0])
            return sup_fail(pc, pc->line, sec, NULL, "\"%s\" is not in canonical form (RFC 5952): write [route %s]",
                            name, canon);
        return sup_fail(pc, pc->line, sec, NULL, "\"%s\" is not an IPv6 prefix such as 2001:db8::/32", name);
    }
    uint8_t net[16];
    memcpy(net, pf->addr, 16);
    sup_mask6(net, pf->len);
    if (memcmp(net, pf->addr, 16) != 0)
        return sup_fail(pc, pc->line, sec, NULL, "%s has host bits set, did you mean %s/%u?", name, ADDR6(net),
                        pf->len);
    if (pf->addr[0] == 0xff && pf->len >= 8)
        return sup_fail(pc, pc->line, sec, NULL, "%s is multicast: the router does not route multicast", name);
    if (sup_ll6(pf->addr) && pf->len >= 10)
        return sup_fail(pc, pc->line, sec, NULL, "%s is link-local: it is never routed (RFC 4291 §2.5.6)", name);
    r->v6 = true;
    r->port = -1;
    return 0;
}

int sup_init_neigh6(struct sup_pctx *pc, const char *sec, const char *name, struct sup_neigh *n)
{
    char canon[64] = "";
    if (!sup_parse_addr6(name, n->addr6, canon, sizeof canon)) {
        if (canon[0])
            return sup_fail(pc, pc->line, sec, NULL, "\"%s\" is not in canonical form (RFC 5952): write [neigh %s]",
                            name, canon);
        return sup_fail(pc, pc->line, sec, NULL, "\"%s\" is not an IPv6 address", name);
    }
    const char *why = sup_martian6(n->addr6);
    if (why)
        return sup_fail(pc, pc->line, sec, NULL, "%s is %s, expected a neighbour's unicast address", name, why);
    n->v6 = true;
    n->port = -1;
    return 0;
}

/* ---- whole-manifest checks ---- */

int sup_port_for6(const struct sup_manifest *m, const uint8_t a[16])
{
    if (sup_ll6(a))
        return -1;
    for (size_t i = 0; i < m->nports; i++)
        for (unsigned k = 0; k < m->ports[i].naddr6; k++)
            if (!sup_ll6(m->ports[i].addr6[k].addr) && sup_in6(&m->ports[i].addr6[k], a))
                return (int)i;
    return -1;
}

const char *sup_gateway6_why(const struct sup_manifest *m, const uint8_t gw[16], int port, char *why, size_t len)
{
    const struct sup_port *p = &m->ports[port];
    const char *martian = sup_martian6(gw);
    if (martian) {
        snprintf(why, len, "%s is %s", ADDR6(gw), martian);
        return why;
    }
    for (unsigned k = 0; k < p->naddr6; k++) {
        if (memcmp(p->addr6[k].addr, gw, 16) == 0) {
            snprintf(why, len, "%s is the router's own address on port %s", ADDR6(gw), p->name);
            return why;
        }
        uint8_t net[16];
        memcpy(net, p->addr6[k].addr, 16);
        sup_mask6(net, p->addr6[k].len);
        if (p->addr6[k].len < 127 && memcmp(net, gw, 16) == 0) {
            snprintf(why, len, "%s is the subnet-router anycast address of port %s's network %s/%u", ADDR6(gw), p->name,
                     ADDR6(net), p->addr6[k].len);
            return why;
        }
    }
    if (!sup_ll6(gw) && sup_port_for6(m, gw) != port) {
        snprintf(why, len, "%s is not on port %s's IPv6 networks", ADDR6(gw), p->name);
        return why;
    }
    return NULL;
}

int sup_check_ports6(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    for (size_t i = 0; i < m->nports; i++) {
        struct sup_port *p = &m->ports[i];
        for (unsigned k = 0; k < p->naddr6; k++) {
            const struct sup_prefix6 *a = &p->addr6[k];
            if (sup_ll6(a->addr))
                continue; /* fe80::/64 is every link's: never an overlap */
            for (size_t j = 0; j <= i; j++) {
                const struct sup_port *q = &m->ports[j];
                for (unsigned l = 0; l < q->naddr6 && (j < i || l < k); l++) {
                    const struct sup_prefix6 *b = &q->addr6[l];
                    if (sup_ll6(b->addr))
                        continue;
                    struct sup_prefix6 shorter = a->len < b->len ? *a : *b;
                    if (sup_in6(&shorter, a->len < b->len ? b->addr : a->addr)) {
                        uint8_t net[16];
                        memcpy(net, b->addr, 16);
                        sup_mask6(net, b->len);
                        char whose[32];
                        snprintf(whose, sizeof whose, j == i ? "this port's" : "port %s's", q->name);
                        return sup_fail(pc, p->addr6_line[k], p->src.section, "address6",
                                        "%s/%u overlaps %s network %s/%u (line %u)", ADDR6(a->addr), a->len, whose,
                                        ADDR6(net), b->len, q->addr6_line[l]);
                    }
                }
            }
        }
        bool has_ll = false;
        for (unsigned k = 0; k < p->naddr6; k++)
            has_ll |= sup_ll6(p->addr6[k].addr);
        if (!has_ll) {
            uint8_t mac[6];
            sup_port_mac(m, (int)i, mac);
            sup_ll6_from_mac(mac, p->addr6[p->naddr6].addr);
            p->addr6[p->naddr6].len = 64;
            p->addr6_line[p->naddr6++] = 0;
        }
    }
    return 0;
}

int sup_check_route6(struct sup_pctx *pc, struct sup_route *r)
{
    struct sup_manifest *m = pc->m;
    unsigned lvia = KLINE(r, SUP_ROUTE_VIA), lport = KLINE(r, SUP_ROUTE_PORT);
    if (!lvia && !lport)
        return sup_fail(pc, r->src.line, r->src.section, "via",
                        "missing, expected an IPv6 gateway address (or port = NAME for a directly connected route)");
    for (size_t j = 0; j < m->nports; j++)
        for (unsigned k = 0; k < m->ports[j].naddr6; k++) {
            struct sup_prefix6 net = m->ports[j].addr6[k];
            sup_mask6(net.addr, net.len);
            if (net.len == r->prefix6.len && memcmp(net.addr, r->prefix6.addr, 16) == 0)
                return sup_fail(pc, r->src.line, r->src.section, NULL,
                                "duplicates the connected route of port %s (line %u)", m->ports[j].name,
                                m->ports[j].addr6_line[k]);
        }
    if (lport) {
        r->port = sup_port_ref(pc, &r->src, lport, "port", r->port_name);
        if (r->port < 0)
            return pc->rc;
    }
    if (!lvia) {
        r->direct = true;
        return 0;
    }
    if (sup_ll6(r->via6)) {
        if (!lport)
            return sup_fail(pc, lvia, r->src.section, "via",
                            "%s is link-local: add port = NAME to say which link it is on", ADDR6(r->via6));
    } else {
        int on = sup_port_for6(m, r->via6);
        if (on < 0)
            return sup_fail(pc, lvia, r->src.section, "via", "%s is not on any port's IPv6 network", ADDR6(r->via6));
        if (lport && on != r->port)
            return sup_fail(pc, lport, r->src.section, "port", "the gateway %s is on port %s, not %s", ADDR6(r->via6),
                            m->ports[on].name, r->port_name);
        r->port = on;
    }
    char why[200];
    if (sup_gateway6_why(m, r->via6, r->port, why, sizeof why))
        return sup_fail(pc, lvia, r->src.section, "via", "%s", why);
    snprintf(r->port_name, sizeof r->port_name, "%s", m->ports[r->port].name);
    return 0;
}

int sup_check_neigh6(struct sup_pctx *pc, struct sup_neigh *n)
{
    struct sup_manifest *m = pc->m;
    unsigned lport = KLINE(n, SUP_NEIGH_PORT);
    int on = sup_port_for6(m, n->addr6);
    if (lport) {
        n->port = sup_port_ref(pc, &n->src, lport, "port", n->port_name);
        if (n->port < 0)
            return pc->rc;
        if (!sup_ll6(n->addr6) && on != n->port)
            return sup_fail(pc, lport, n->src.section, "port", "%s is not on port %s's IPv6 networks", ADDR6(n->addr6),
                            n->port_name);
    } else if (sup_ll6(n->addr6)) {
        return sup_fail(pc, n->src.line, n->src.section, "port",
                        "missing: %s is link-local, say which port's link it is on", ADDR6(n->addr6));
    } else if (on < 0) {
        return sup_fail(pc, n->src.line, n->src.section, NULL, "%s is not on any port's IPv6 network", ADDR6(n->addr6));
    } else {
        n->port = on;
    }
    snprintf(n->port_name, sizeof n->port_name, "%s", m->ports[n->port].name);
    char why[200];
    if (sup_gateway6_why(m, n->addr6, n->port, why, sizeof why))
        return sup_fail(pc, n->src.line, n->src.section, NULL, "%s", why);
    return 0;
}
