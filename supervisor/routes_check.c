/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_check.c: what a route record from rr-routes must be
 * before the FIB sees it (tables/rtchan.h). It is a pure function of the
 * record and the manifest, so that the fuzzer (tests/fuzz/fuzz_routes.c)
 * runs the very check the supervisor runs. Each field is checked: the
 * family, the prefix length and host bits (IPv4: the 12 bytes past the
 * address zero), the next-hop count, each gateway (on a connected network
 * of a port, not a martian, not the router's own address nor its network's
 * or broadcast address), and the prefix itself (not a martian range). One
 * more input: the host-side interfaces' indices (sup_routes_cp_ifindex),
 * which give a link-local gateway its port; the fuzzer has none.
 */
#include "supervisor/routes.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "ipc/svc.h"

static uint32_t mask4(unsigned len)
{
    return len ? (uint32_t)(0xffffffffull << (32 - len)) : 0;
}

static bool zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* A prefix that lies inside a range no one routes to (RFC 1812 5.3.7,
 * RFC 6890): its reason, or NULL. */
static const char *martian_pfx4(uint32_t a, unsigned len)
{
    if (len == 0)
        return NULL; /* the default route */
    uint8_t b0 = (uint8_t)(a >> 24);
    if (len >= 8 && b0 == 0)
        return "inside 0.0.0.0/8 (this network)";
    if (len >= 8 && b0 == 127)
        return "inside 127.0.0.0/8 (loopback)";
    if (len >= 16 && (a >> 16) == 0xa9fe)
        return "inside 169.254.0.0/16 (link-local)";
    if (len >= 4 && b0 >= 224)
        return b0 < 240 ? "inside 224.0.0.0/4 (multicast)" : "inside 240.0.0.0/4 (reserved)";
    return NULL;
}

static const char *martian_pfx6(const uint8_t *a, unsigned len)
{
    if (len == 0)
        return NULL;
    if (len >= 8 && a[0] == 0xff)
        return "inside ff00::/8 (multicast)";
    if (len >= 10 && a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
        return "inside fe80::/10 (link-local)";
    if (len >= 96 && zero(a, 10) && a[10] == 0xff && a[11] == 0xff)
        return "inside ::ffff:0:0/96 (IPv4-mapped)";
    if (len == 128 && zero(a, 15) && (a[15] == 0 || a[15] == 1))
        return a[15] ? "the loopback address" : "the unspecified address";
    return NULL;
}

static int port_of4(const struct sup_manifest *m, uint32_t a)
{
    for (size_t p = 0; p < m->nports; p++) {
        const struct sup_prefix *n = &m->ports[p].address;
        if (((a ^ n->addr) & mask4(n->len)) == 0)
            return (int)p;
    }
    return -1;
}

/* Is @a one of the router's own addresses, on any port? */
static bool own4(const struct sup_manifest *m, uint32_t a)
{
    for (size_t p = 0; p < m->nports; p++)
        if (m->ports[p].address.addr == a)
            return true;
    return false;
}

static bool own6(const struct sup_manifest *m, const uint8_t *a)
{
    for (size_t p = 0; p < m->nports; p++)
        for (unsigned k = 0; k < m->ports[p].naddr6; k++)
            if (memcmp(m->ports[p].addr6[k].addr, a, 16) == 0)
                return true;
    return false;
}

static int cp_ifindex[IPC_MAX_PORTS];

void sup_routes_cp_ifindex(int port, int ifindex)
{
    if (port >= 0 && port < IPC_MAX_PORTS)
        cp_ifindex[port] = ifindex;
}

/* The port whose host-side interface is @ifindex in the routes' namespace,
 * or -1. The index is the source's word: it can only pick among our ports,
 * as a global gateway would. */
static int cp_port_of(const struct sup_manifest *m, uint32_t ifindex)
{
    if (!ifindex || !m->router.control_netns[0] || strcmp(m->daemon.netns, m->router.control_netns) != 0)
        return -1;
    for (size_t p = 0; p < m->nports && p < IPC_MAX_PORTS; p++)
        if (cp_ifindex[p] > 0 && (uint32_t)cp_ifindex[p] == ifindex)
            return (int)p;
    return -1;
}

/* One next hop's gateway: its port, or a refusal. */
static enum sup_rck gw_check(const struct sup_manifest *m, int family, const struct rtc_nh *nh, bool multi, int *port,
                             char *why, size_t len)
{
    char a[INET6_ADDRSTRLEN];
    if (family == AF_INET) {
        if (!zero(nh->gw + 4, 12)) {
            snprintf(why, len, "an IPv4 gateway with bytes past its address");
            return SUP_RCK_BAD;
        }
        uint32_t g;
        memcpy(&g, nh->gw, 4);
        g = ntohl(g);
        if (g == 0 || own4(m, g) || port_of4(m, g) < 0)
            inet_ntop(AF_INET, nh->gw, a, sizeof(a)); /* for the refusal's text only */
        if (g == 0) {
            snprintf(why, len, "no gateway (a route to a device of the control namespace)");
            return SUP_RCK_NOT_CONNECTED;
        }
        if (own4(m, g)) {
            snprintf(why, len, "via %s, the router itself", a);
            return SUP_RCK_SELF;
        }
        int p = port_of4(m, g);
        if (p < 0) {
            snprintf(why, len, "via %s, on no connected network of a port", a);
            return SUP_RCK_NOT_CONNECTED;
        }
        char w[160];
        if (sup_gateway_why(m, g, p, w, sizeof(w))) {
            inet_ntop(AF_INET, nh->gw, a, sizeof(a));
            snprintf(why, len, "via %s: %s", a, w);
            return SUP_RCK_MARTIAN;
        }
        *port = p;
        return SUP_RCK_OK;
    }
    inet_ntop(AF_INET6, nh->gw, a, sizeof(a));
    if (zero(nh->gw, 16)) {
        snprintf(why, len, "no gateway (a route to a device of the control namespace)");
        return SUP_RCK_NOT_CONNECTED;
    }
    if (own6(m, nh->gw)) {
        snprintf(why, len, "via %s, the router itself", a);
        return SUP_RCK_SELF;
    }
    int p;
    if (sup_ll6(nh->gw)) {
        /* Its scope is an interface of the control namespace: a host-side
         * one names its port. A group's members are installed by address
         * (sup_route_set_multi finds each one's port), so not there. */
        if (multi || (p = cp_port_of(m, nh->ifindex)) < 0) {
            snprintf(why, len, "via the link-local %s, whose port is unknown here%s", a,
                     multi ? " (in a route with several next hops)" : "");
            return SUP_RCK_NOT_CONNECTED;
        }
    } else if ((p = sup_port_for6(m, nh->gw)) < 0) {
        snprintf(why, len, "via %s, on no connected network of a port", a);
        return SUP_RCK_NOT_CONNECTED;
    }
    char w[160];
    if (sup_gateway6_why(m, nh->gw, p, w, sizeof(w))) {
        snprintf(why, len, "via %s: %s", a, w);
        return SUP_RCK_MARTIAN;
    }
    *port = p;
    return SUP_RCK_OK;
}

enum sup_rck sup_routes_check(const struct sup_manifest *m, const struct rtc_rec *r, int *port, char *why, size_t len)
{
    why[0] = '\0';
    *port = -1;
    if (r->family != AF_INET && r->family != AF_INET6) {
        snprintf(why, len, "family %u", r->family);
        return SUP_RCK_BAD;
    }
    unsigned max = r->family == AF_INET ? 32 : 128;
    if (r->plen > max) {
        snprintf(why, len, "prefix length %u", r->plen);
        return SUP_RCK_BAD;
    }
    const char *mart;
    if (r->family == AF_INET) {
        uint32_t a;
        memcpy(&a, r->dst, 4);
        a = ntohl(a);
        if ((a & ~mask4(r->plen)) || !zero(r->dst + 4, 12)) {
            snprintf(why, len, "host bits set");
            return SUP_RCK_BAD;
        }
        mart = martian_pfx4(a, r->plen);
    } else {
        uint8_t net[16];
        memcpy(net, r->dst, 16);
        sup_mask6(net, r->plen);
        if (memcmp(net, r->dst, 16) != 0) {
            snprintf(why, len, "host bits set");
            return SUP_RCK_BAD;
        }
        mart = martian_pfx6(r->dst, r->plen);
    }
    if (r->op == RTC_DEL)
        return SUP_RCK_OK;
    if (r->op != RTC_ADD) {
        snprintf(why, len, "operation %u", r->op);
        return SUP_RCK_BAD;
    }
    if (r->nnh < 1 || r->nnh > RTC_NH_MAX) {
        snprintf(why, len, "%u next hops", r->nnh);
        return SUP_RCK_BAD;
    }
    if (mart) {
        snprintf(why, len, "a martian prefix, %s", mart);
        return SUP_RCK_MARTIAN;
    }
    for (unsigned i = 0; i < r->nnh; i++) {
        int p;
        enum sup_rck k = gw_check(m, r->family, &r->nh[i], r->nnh > 1, &p, why, len);
        if (k != SUP_RCK_OK)
            return k;
        if (i == 0)
            *port = p;
    }
    return SUP_RCK_OK;
}
