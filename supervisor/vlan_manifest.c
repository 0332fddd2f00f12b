/* SPDX-License-Identifier: MIT */
/*
 * supervisor/vlan_manifest.c: VLAN sub-interfaces in the manifest. A port
 * with `parent = PORT` and `vlan = ID` (802.1Q) or `vlan = OUTER.INNER`
 * (802.1ad: an S-tag, then a C-tag) is a router port of its own, served by
 * its parent's driver (drivers/common/vlan.h): it takes the parent's
 * driver, namespace, zone and MAC, and its own keys are those of a router
 * port only (address, address6, mtu, ra, ra_interval). Checked here, before
 * the ports' own checks: the parent exists and is no VLAN port itself, the
 * ids are in range, no two VLAN ports of a parent carry the same tags, the
 * MTU fits in the parent's, and a parent's `untagged` has VLANs to mean
 * something. docs/manifest.md, "VLAN ports".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/pool.h"
#include "supervisor/manifest_impl.h"
#include "tables/config.h"

#define KLINE(o, key) ((o)->src.key_line[key])
#define VLAN_ID_MAX 4094u

static int vlan_id(const char *s, const char **end, uint16_t *out)
{
    unsigned long v = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9' && p - s < 6)
        v = v * 10 + (unsigned long)(*p++ - '0');
    *end = p;
    if (p == s || (p - s > 1 && *s == '0'))
        return -1;
    *out = v > 0xffff ? 0xffff : (uint16_t)v;
    return 0;
}

/* vlan = ID, or OUTER.INNER; the parser gets the whole port. */
int sup_p_vlan(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_port *p = dst;
    uint16_t id[2] = {0, 0};
    const char *s = v, *end;
    unsigned n = 0;
    for (;;) {
        if (n == 2 || vlan_id(s, &end, &id[n]) < 0 || (*end && *end != '.'))
            return sup_vfail(pc, k, "\"%s\" is not %s", v, k->expect);
        n++;
        if (!*end)
            break;
        s = end + 1;
    }
    for (unsigned i = 0; i < n; i++)
        if (id[i] < 1 || id[i] > VLAN_ID_MAX)
            return sup_vfail(pc, k, "%u is out of range: a VLAN id is 1 to %u (0 and 4095 are reserved)", id[i],
                             VLAN_ID_MAX);
    p->vlan_ntags = (uint8_t)n;
    p->vlan_id[0] = id[0];
    p->vlan_id[1] = id[1];
    return 0;
}

/* A port named by another section's key: a VLAN port's name has dots. */
int sup_p_port_name(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    size_t n = strlen(v);
    bool good = n >= (size_t)k->min && n <= (size_t)k->max && v[0] != '.' && v[n - 1] != '.';
    for (const char *p = v; good && *p; p++)
        good = sup_c_ident((unsigned char)*p) || *p == '.';
    if (!good)
        return sup_vfail(pc, k, "\"%s\" is not a port name of 1 to %lld of a-z 0-9 _ - .", v, (long long)k->max);
    memcpy(dst, v, n + 1);
    return 0;
}

/* The keys a VLAN port may set: a router port's. The rest are its device's. */
static bool vlan_key_ok(size_t key)
{
    switch (key) {
    case SUP_PORT_ADDRESS:
    case SUP_PORT_MTU:
    case SUP_PORT_RA:
    case SUP_PORT_RA_INTERVAL:
    case SUP_PORT_ADDRESS6:
    case SUP_PORT_PARENT:
    case SUP_PORT_VLAN:
        return true;
    default:
        return false;
    }
}

const char *sup_vlan_str(const struct sup_port *p, char *buf, size_t len)
{
    if (p->vlan_ntags == 2)
        snprintf(buf, len, "%u.%u", p->vlan_id[0], p->vlan_id[1]);
    else
        snprintf(buf, len, "%u", p->vlan_id[0]);
    return buf;
}

static int check_one(struct sup_pctx *pc, size_t i)
{
    struct sup_manifest *m = pc->m;
    struct sup_port *p = &m->ports[i];
    const char *sec = p->src.section;
    unsigned lpar = KLINE(p, SUP_PORT_PARENT), lvlan = KLINE(p, SUP_PORT_VLAN);
    if (!lpar && !lvlan) {
        if (strchr(p->name, '.'))
            return sup_fail(pc, p->src.line, sec, NULL,
                            "a dot in a port's name is for VLAN ports: give parent = PORT and vlan = ID, or a name "
                            "of a-z 0-9 _ -");
        return 0;
    }
    if (!lpar)
        return sup_fail(pc, lvlan, sec, "parent",
                        "missing: a VLAN port needs parent = PORT, the port whose device "
                        "carries its frames");
    if (!lvlan)
        return sup_fail(pc, lpar, sec, "vlan", "missing, expected %s",
                        sup_sections[SUP_SEC_PORT].keys[SUP_PORT_VLAN].expect);
    const struct sup_section_type *t = &sup_sections[SUP_SEC_PORT];
    for (size_t k = 0; k < t->nkeys; k++)
        if (p->src.key_line[k] && !vlan_key_ok(k))
            return sup_fail(pc, p->src.key_line[k], sec, t->keys[k].name,
                            "a VLAN port has no device of its own: %s belongs on [port %s], its parent",
                            t->keys[k].name, p->parent_name);
    int pi = sup_manifest_port(m, p->parent_name);
    if (pi < 0)
        return sup_fail(pc, lpar, sec, "parent", "no port \"%s\"", p->parent_name);
    if ((size_t)pi == i)
        return sup_fail(pc, lpar, sec, "parent", "is the port itself");
    struct sup_port *q = &m->ports[pi];
    if (KLINE(q, SUP_PORT_PARENT) || KLINE(q, SUP_PORT_VLAN))
        return sup_fail(pc, lpar, sec, "parent",
                        "port %s is itself a VLAN port (line %u): for 802.1ad give both tags here, vlan = OUTER.INNER",
                        q->name, q->src.line);
    char a[16], b[16];
    size_t nvlan = 0;
    for (size_t j = 0; j < m->nports; j++) {
        const struct sup_port *o = &m->ports[j];
        if (j == i || !KLINE(o, SUP_PORT_VLAN) || strcmp(o->parent_name, p->parent_name) != 0)
            continue;
        nvlan++;
        if (j < i && o->vlan_ntags == p->vlan_ntags && memcmp(o->vlan_id, p->vlan_id, sizeof(o->vlan_id)) == 0)
            return sup_fail(pc, lvlan, sec, "vlan", "%s on %s is already port %s's (line %u)",
                            sup_vlan_str(p, a, sizeof a), q->name, o->name, KLINE(o, SUP_PORT_VLAN));
    }
    if (nvlan + 1 > TBL_VLAN_MAX)
        return sup_fail(pc, lvlan, sec, "vlan", "port %s would carry %zu VLAN ports: at most %u", q->name, nvlan + 1,
                        TBL_VLAN_MAX);
    if (!KLINE(p, SUP_PORT_MTU))
        p->mtu = q->mtu;
    if (p->mtu > q->mtu)
        return sup_fail(pc, KLINE(p, SUP_PORT_MTU), sec, "mtu",
                        "%u is more than its parent %s's %u (line %u): a VLAN's frames travel in the parent's", p->mtu,
                        q->name, q->mtu, KLINE(q, SUP_PORT_MTU) ? KLINE(q, SUP_PORT_MTU) : q->src.line);
    uint32_t fmax = m->router.frame_size - IPC_HEADROOM - SUP_ETH_HLEN;
    if (q->driver == SUP_DRIVER_AFXDP && p->mtu + 4u * p->vlan_ntags > fmax)
        return sup_fail(pc, KLINE(p, SUP_PORT_MTU) ? KLINE(p, SUP_PORT_MTU) : p->src.line, sec, "mtu",
                        "%u and %u bytes of tags (%s) do not fit a %u-byte frame with driver = afxdp (at most %u)",
                        p->mtu, 4u * p->vlan_ntags, sup_vlan_str(p, b, sizeof b), m->router.frame_size,
                        fmax - 4u * p->vlan_ntags);
    if (m->router.control_netns[0])
        return sup_fail(pc, lpar, sec, "parent",
                        "VLAN ports and [router] control_netns (line %u) do not go together yet: each port's "
                        "host-side interface would need a tag of its own",
                        KLINE(&m->router, SUP_ROUTER_CONTROL_NETNS));
    /* What it takes from its parent: the device's side of a port. */
    p->vlan_parent = pi;
    p->driver = q->driver;
    p->xdp_mode = q->xdp_mode;
    p->queues = 0; /* no driver of its own: its parent's serve it */
    memcpy(p->netns, q->netns, sizeof p->netns);
    memcpy(p->zone_name, q->zone_name, sizeof p->zone_name);
    /* Its parent's device stands for driver and ifname. */
    p->src.key_line[SUP_PORT_DRIVER] = lpar;
    p->src.key_line[SUP_PORT_IFNAME] = lpar;
    return 0;
}

static bool shaped(const struct sup_manifest *m, const char *port)
{
    for (size_t k = 0; k < m->nshapers; k++)
        if (strcmp(m->shapers[k].port_name, port) == 0)
            return true;
    return false;
}

/* The router's output rings: one per driver instance of a port, one more
 * per VLAN port and instance of its parent; a shaped port's one goes to
 * its shaper. */
static int check_rings(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    size_t out = 0;
    const struct sup_port *last = NULL;
    for (size_t i = 0; i < m->nports; i++) {
        const struct sup_port *p = &m->ports[i];
        const struct sup_port *dev = p->vlan_ntags ? &m->ports[p->vlan_parent] : p;
        out += shaped(m, p->name) ? 1 : dev->queues > 1 ? dev->queues : 1;
        if (p->vlan_ntags)
            last = p;
    }
    if (!last)
        return 0;
    if (m->nports > IPC_MAX_PORTS)
        return sup_fail(pc, last->src.line, last->src.section, NULL,
                        "%zu ports with the VLAN ports: the router takes at most %u", m->nports, IPC_MAX_PORTS);
    if (out > IPC_SVC_MAX_RINGS)
        return sup_fail(pc, last->src.line, last->src.section, NULL,
                        "the router would send on %zu rings (one per port and queue of its device, VLAN ports "
                        "included): it takes at most %u",
                        out, IPC_SVC_MAX_RINGS);
    return 0;
}

int sup_check_vlans(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    for (size_t i = 0; i < m->nports && !pc->rc; i++)
        check_one(pc, i);
    if (!pc->rc && check_rings(pc))
        return pc->rc;
    for (size_t i = 0; i < m->nports && !pc->rc; i++) {
        const struct sup_port *p = &m->ports[i];
        if (!KLINE(p, SUP_PORT_UNTAGGED) || p->vlan_ntags)
            continue;
        bool has = false;
        for (size_t j = 0; j < m->nports; j++)
            has |= m->ports[j].vlan_ntags && m->ports[j].vlan_parent == (int)i;
        if (!has)
            sup_fail(pc, KLINE(p, SUP_PORT_UNTAGGED), p->src.section, "untagged",
                     "port %s has no VLAN ports (parent = %s): every frame is its own", p->name, p->name);
    }
    return pc->rc;
}

/* A VLAN port has no device of its own to start or stop: its parent's
 * drivers carry its rings and its map (tables/config.h). One added to a
 * running parent, or removed, without a [shaper] of its own: the parent's
 * drivers restart on the new map (reload.c); the rest only at up. */
bool sup_vlan_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len)
{
    char a[16], b[16];
    for (size_t i = 0; i < n->nports; i++) {
        const struct sup_port *np = &n->ports[i];
        int k = sup_manifest_port(o, np->name);
        const struct sup_port *op = k >= 0 ? &o->ports[k] : NULL;
        bool was = op && op->vlan_ntags;
        if (!np->vlan_ntags && !was && (!op || op->untagged_parent == np->untagged_parent))
            continue;
        if (op && np->vlan_ntags && was && strcmp(op->parent_name, np->parent_name) == 0 &&
            op->vlan_ntags == np->vlan_ntags && memcmp(op->vlan_id, np->vlan_id, sizeof(op->vlan_id)) == 0)
            continue;
        if (!op && np->vlan_ntags && np->shaper < 0 && sup_manifest_port(o, np->parent_name) >= 0)
            continue;
        if (!op && np->vlan_ntags)
            snprintf(why, len, "VLAN port %s added %s: only at up", np->name,
                     np->shaper >= 0 ? "with a [shaper]" : "with its parent");
        else if (!np->vlan_ntags && !was)
            snprintf(why, len, "port %s: untagged changed: a parent's VLAN map is set up at up only", np->name);
        else
            snprintf(why, len, "port %s: parent or vlan changed (%s %s -> %s %s): VLAN ports are set up at up only",
                     np->name, was ? op->parent_name : "-", was ? sup_vlan_str(op, a, sizeof a) : "-",
                     np->vlan_ntags ? np->parent_name : "-", np->vlan_ntags ? sup_vlan_str(np, b, sizeof b) : "-");
        return true;
    }
    for (size_t i = 0; i < o->nports; i++)
        if (o->ports[i].vlan_ntags && o->ports[i].shaper >= 0 && sup_manifest_port(n, o->ports[i].name) < 0) {
            snprintf(why, len, "VLAN port %s removed with its [shaper]: only at up", o->ports[i].name);
            return true;
        }
    return false;
}
