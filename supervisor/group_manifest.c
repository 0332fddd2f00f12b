/* SPDX-License-Identifier: MIT */
/*
 * supervisor/group_manifest.c: driver groups in the manifest. `group = NAME`
 * on AF_XDP ports puts them under one driver process, driver-NAME, instead
 * of a process each (docs/manifest.md, "Driver groups"; docs/drivers.md says
 * what it saves and what a crash then costs). The key sits on the port, as
 * `zone` and `parent` do, so that a port's section says everything about
 * its device, and a port cannot be in two groups.
 *
 * What a group may hold, checked here: two to SUP_GROUP_MAX ports (their
 * devices are the driver's kind fds), each of one queue, with no VLAN
 * ports, in one trust zone (one pool: the UMEM they share); a group's name is no port's, so driver-NAME is one
 * service's name. The driver key's own check (manifest_check.c) refuses
 * `group` on a TAP port, and vlan_manifest.c on a VLAN port.
 */
#include <stdio.h>
#include <string.h>

#include "supervisor/manifest_impl.h"

#define KLINE(o, key) ((o)->src.key_line[key])

int sup_group_first(const struct sup_manifest *m, const char *name)
{
    for (size_t i = 0; name[0] && i < m->nports; i++)
        if (strcmp(m->ports[i].group_name, name) == 0)
            return (int)i;
    return -1;
}

static bool vlan_parent(const struct sup_manifest *m, size_t p, size_t *vp)
{
    for (size_t c = 0; c < m->nports; c++)
        if (m->ports[c].vlan_ntags && m->ports[c].vlan_parent == (int)p) {
            *vp = c;
            return true;
        }
    return false;
}

int sup_check_groups(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    for (size_t i = 0; i < m->nports; i++) {
        const struct sup_port *p = &m->ports[i];
        if (!p->group_name[0])
            continue;
        unsigned line = KLINE(p, SUP_PORT_GROUP);
        const char *sec = p->src.section, *g = p->group_name;
        int named = sup_manifest_port(m, g);
        if (named >= 0)
            return sup_fail(pc, line, sec, "group",
                            "\"%s\" is port %s's name (line %u): a group's driver is driver-%s, so the group needs "
                            "a name of its own",
                            g, g, m->ports[named].src.line, g);
        if (p->queues > 1)
            return sup_fail(pc, line, sec, "group",
                            "port %s has queues = %u (line %u): a group's driver serves one queue of each port", p->name,
                            p->queues, KLINE(p, SUP_PORT_QUEUES));
        size_t vp;
        if (vlan_parent(m, i, &vp))
            return sup_fail(pc, line, sec, "group",
                            "port %s has VLAN port %s (line %u): a group's driver does not serve VLAN ports yet",
                            p->name, m->ports[vp].name, m->ports[vp].src.line);
        int first = sup_group_first(m, g);
        const struct sup_port *f = &m->ports[first];
        if (first != (int)i && f->zone != p->zone)
            return sup_fail(pc, KLINE(p, SUP_PORT_ZONE) ? KLINE(p, SUP_PORT_ZONE) : line, sec,
                            KLINE(p, SUP_PORT_ZONE) ? "zone" : "group",
                            "port %s is in zone %s and port %s, of the same group %s (line %u), in zone %s: a "
                            "group's ports share one pool",
                            p->name, p->zone_name, f->name, g, KLINE(f, SUP_PORT_GROUP), f->zone_name);
        unsigned n = 0;
        for (size_t j = 0; j < m->nports; j++)
            n += strcmp(m->ports[j].group_name, g) == 0;
        if (n < 2)
            return sup_fail(pc, line, sec, "group",
                            "port %s is the only port of group %s: a group is two ports or more under one driver",
                            p->name, g);
        if (n > SUP_GROUP_MAX) {
            unsigned k = 0;
            for (size_t j = 0; j < m->nports; j++)
                if (strcmp(m->ports[j].group_name, g) == 0 && ++k == SUP_GROUP_MAX + 1)
                    return sup_fail(pc, KLINE(&m->ports[j], SUP_PORT_GROUP), m->ports[j].src.section, "group",
                                    "group %s has %u ports: at most %d", g, n, SUP_GROUP_MAX);
        }
    }
    return 0;
}

/* [service driver-NAME]: the port or the group it names; -1 (the error
 * reported) for a port in a group, which has no driver of its own. */
int sup_group_service_ref(struct sup_pctx *pc, const struct sup_service *s, const char *name, bool *group)
{
    struct sup_manifest *m = pc->m;
    *group = false;
    int pi = sup_manifest_port(m, name);
    if (pi >= 0 && m->ports[pi].group_name[0]) {
        const struct sup_port *p = &m->ports[pi];
        sup_fail(pc, s->src.line, s->src.section, NULL,
                 "port %s is in group %s (line %u): its driver is driver-%s", p->name, p->group_name,
                 KLINE(p, SUP_PORT_GROUP), p->group_name);
        return -1;
    }
    if (pi < 0 && (pi = sup_group_first(m, name)) >= 0)
        *group = true;
    return pi;
}

uint32_t sup_group_members(const struct sup_manifest *m, size_t first)
{
    uint32_t mask = 0;
    const char *g = m->ports[first].group_name;
    for (size_t j = 0; g[0] && j < m->nports; j++)
        if (strcmp(m->ports[j].group_name, g) == 0)
            mask |= 1u << j;
    return mask;
}

bool sup_group_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len)
{
    for (size_t i = 0; i < n->nports; i++) {
        const struct sup_port *np = &n->ports[i];
        int k = sup_manifest_port(o, np->name);
        const char *was = k >= 0 ? o->ports[k].group_name : "";
        /* A shaper's rings to a group's port are rewired by its driver's
         * restart, which reload.c does per port: not for groups yet. */
        if (k >= 0 && np->group_name[0] && (o->ports[k].shaper >= 0) != (np->shaper >= 0)) {
            snprintf(why, len, "port %s of group %s: [shaper] %s: a group's rings are set up at up only", np->name,
                     np->group_name, np->shaper >= 0 ? "added" : "removed");
            return true;
        }
        if (strcmp(was, np->group_name) == 0 && (k >= 0 || !np->group_name[0]))
            continue;
        snprintf(why, len, "port %s: group changed (%s -> %s): a driver group is set up at up only", np->name,
                 k < 0 ? "no port" : was[0] ? was : "none", np->group_name[0] ? np->group_name : "none");
        return true;
    }
    for (size_t i = 0; i < o->nports; i++)
        if (o->ports[i].group_name[0] && sup_manifest_port(n, o->ports[i].name) < 0) {
            snprintf(why, len, "port %s of group %s removed: a driver group is set up at up only", o->ports[i].name,
                     o->ports[i].group_name);
            return true;
        }
    return false;
}
