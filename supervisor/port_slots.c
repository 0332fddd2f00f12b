/* SPDX-License-Identifier: MIT */
/*
 * supervisor/port_slots.c: a port's runtime index (its slot) is the same
 * for its life. The slot names the port to everything a reload does not
 * remake: its rings, the FIBs' next hops, the neighbour tables, the router's
 * per-port state and counters, a driver's or shaper's config. So a reload
 * lays the new manifest out in the running one's slots (sup_slots_layout),
 * and the running manifest's ports array is indexed by slot: a port removed
 * while others stay after it leaves its slot vacant, a port added takes a
 * slot vacant since an earlier reload, or one after the last.
 *
 * Never a slot freed in the same reload: the router forgets a port's
 * neighbours when it starts on a config in which the port's slot is vacant
 * or gone (services/router/main.c), and the old router, until its standby
 * takes over, still sends into the removed port's own rings.
 *
 * A supervisor that adopts running services (adopt.c) reads the file in
 * its own order: the state file keeps the slots, and sup_slots_restore
 * lays the manifest out in them again.
 */
#include "supervisor/port_slots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Index @x of a port of @n before the move, after it. */
static int moved(int x, const int *map, size_t nports)
{
    return x >= 0 && (size_t)x < nports ? map[x] : x;
}

/*
 * @n's port i into slot map[i], of @nslots; a slot no port takes is
 * vacant, with the trust zone @zone[k] named @zname[k] (the pool it had).
 */
static int permute(struct sup_manifest *n, const int *map, size_t nslots, const unsigned *zone,
                   const char *const *zname)
{
    struct sup_port *ports = calloc(nslots ? nslots : 1, sizeof(*ports));
    if (!ports)
        return -ENOMEM;
    bool used[IPC_MAX_PORTS] = {false};
    for (size_t i = 0; i < n->nports; i++) {
        ports[map[i]] = n->ports[i];
        used[map[i]] = true;
    }
    for (size_t k = 0; k < nslots; k++) {
        if (used[k])
            continue;
        /* As harmless as a port can be: no name to find it by, no network
         * (a /32 of 0.0.0.0), no MTU (the router sends nothing there). */
        struct sup_port *v = &ports[k];
        v->vacant = true;
        v->driver = SUP_DRIVER_TAP;
        v->address.len = 32;
        v->shaper = -1;
        v->vlan_parent = -1;
        v->zone = zone[k];
        snprintf(v->zone_name, sizeof(v->zone_name), "%.*s", SUP_NAME_MAX, zname[k] ? zname[k] : "");
    }
    size_t old = n->nports;
    for (size_t k = 0; k < nslots; k++)
        if (ports[k].vlan_parent >= 0)
            ports[k].vlan_parent = moved(ports[k].vlan_parent, map, old);
    for (size_t i = 0; i < n->nroutes; i++) {
        n->routes[i].port = moved(n->routes[i].port, map, old);
        for (uint8_t j = 0; j < n->routes[i].nnh; j++) /* a multipath route's members */
            n->routes[i].nh[j].port = moved(n->routes[i].nh[j].port, map, old);
    }
    for (size_t i = 0; i < n->nneighs; i++)
        n->neighs[i].port = moved(n->neighs[i].port, map, old);
    for (size_t i = 0; i < n->nshapers; i++)
        n->shapers[i].port = moved(n->shapers[i].port, map, old);
    for (size_t i = 0; i < n->nclasses; i++)
        n->classes[i].port = moved(n->classes[i].port, map, old);
    for (size_t i = 0; i < n->nservices; i++)
        n->services[i].port = moved(n->services[i].port, map, old);
    uint32_t mask = 0;
    for (size_t i = 0; i < old && i < 32; i++)
        if (n->filter.port_mask >> i & 1)
            mask |= 1u << map[i];
    n->filter.port_mask = mask;
    free(n->ports);
    n->ports = ports;
    n->nports = nslots;
    /* A port's default MAC, and the link-local address the checks derived
     * from it, follow its index: now its slot's. */
    for (size_t k = 0; k < nslots; k++)
        for (unsigned j = 0; j < ports[k].naddr6; j++)
            if (!ports[k].addr6_line[j] && sup_ll6(ports[k].addr6[j].addr)) {
                uint8_t mac[6];
                sup_port_mac(n, (int)k, mac);
                sup_ll6_from_mac(mac, ports[k].addr6[j].addr);
            }
    return 0;
}

bool sup_slots_layout(const struct sup_manifest *o, struct sup_manifest *n, char *why, size_t len)
{
    int map[SUP_PORTS_MAX];
    bool taken[SUP_PORTS_MAX + IPC_MAX_PORTS] = {false};
    size_t nslots = 0, next = o->nports;
    if (n->nports > SUP_PORTS_MAX) {
        snprintf(why, len, "%zu ports; at most %d", n->nports, SUP_PORTS_MAX);
        return true;
    }
    for (size_t i = 0; i < n->nports; i++) {
        int k = sup_manifest_port(o, n->ports[i].name);
        map[i] = k;
        if (k >= 0) {
            taken[k] = true;
            nslots = (size_t)k + 1 > nslots ? (size_t)k + 1 : nslots;
            n->ports[i].zone = o->ports[k].zone; /* checked by name (zones.c) */
        }
    }
    for (size_t i = 0; i < n->nports; i++) {
        if (map[i] >= 0)
            continue;
        size_t k = 0;
        while (k < o->nports && (!o->ports[k].vacant || taken[k]))
            k++;
        if (k == o->nports)
            k = next++;
        if (k >= IPC_MAX_PORTS) {
            snprintf(why, len, "added %s: the ports would take more than %d slots (a removed port's slot is free "
                     "again from the reload after the one that removes it)", n->ports[i].name, IPC_MAX_PORTS);
            return true;
        }
        map[i] = (int)k;
        taken[k] = true;
        nslots = k + 1 > nslots ? k + 1 : nslots;
        /* A zone a running port (or a vacant slot) has: its pool, its index. */
        for (size_t q = 0; q < o->nports; q++)
            if (strcmp(o->ports[q].zone_name, n->ports[i].zone_name) == 0) {
                n->ports[i].zone = o->ports[q].zone;
                break;
            }
    }
    bool same = nslots == n->nports;
    for (size_t i = 0; i < n->nports && same; i++)
        same = map[i] == (int)i;
    if (same)
        return false;
    unsigned zone[IPC_MAX_PORTS] = {0};
    const char *zname[IPC_MAX_PORTS] = {NULL};
    for (size_t k = 0; k < nslots && k < o->nports; k++) {
        zone[k] = o->ports[k].zone;
        zname[k] = o->ports[k].zone_name;
    }
    if (permute(n, map, nslots, zone, zname) < 0) {
        snprintf(why, len, "the ports' slots: out of memory");
        return true;
    }
    return false;
}

void sup_slots_save(const struct sup_manifest *m, struct sup_slots *out)
{
    memset(out, 0, sizeof(*out));
    out->n = (uint32_t)(m->nports < IPC_MAX_PORTS ? m->nports : IPC_MAX_PORTS);
    for (size_t k = 0; k < out->n; k++) {
        const struct sup_port *p = &m->ports[k];
        snprintf(out->name[k], sizeof(out->name[k]), "%s", p->vacant ? "" : p->name);
        snprintf(out->zone_name[k], sizeof(out->zone_name[k]), "%s", p->zone_name);
        out->zone[k] = p->zone;
    }
}

int sup_slots_restore(struct sup_manifest *m, const struct sup_slots *in)
{
    if (in->n > IPC_MAX_PORTS || m->nports > in->n)
        return in->n > IPC_MAX_PORTS ? -EINVAL : -ESRCH;
    int map[IPC_MAX_PORTS];
    bool same = in->n == m->nports, taken[IPC_MAX_PORTS] = {false};
    for (size_t i = 0; i < m->nports; i++) {
        map[i] = -1;
        for (size_t k = 0; k < in->n && map[i] < 0; k++)
            if (!taken[k] && in->name[k][0] && strncmp(in->name[k], m->ports[i].name, sizeof(in->name[k])) == 0)
                map[i] = (int)k;
        if (map[i] < 0)
            return -ESRCH;
        taken[map[i]] = true;
        if (in->zone[map[i]] >= IPC_MAX_ZONES)
            return -EINVAL;
        m->ports[i].zone = in->zone[map[i]];
        same = same && map[i] == (int)i;
    }
    if (same)
        return 0;
    unsigned zone[IPC_MAX_PORTS];
    const char *zname[IPC_MAX_PORTS];
    for (size_t k = 0; k < in->n; k++) {
        zone[k] = in->zone[k] < IPC_MAX_ZONES ? in->zone[k] : 0;
        zname[k] = in->zone_name[k];
    }
    return permute(m, map, in->n, zone, zname);
}
