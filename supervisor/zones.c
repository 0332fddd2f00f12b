/* SPDX-License-Identifier: MIT */
/*
 * supervisor/zones.c: the pools of trust zones 1 and up (zones.h): their
 * creation, the router's fds for them, and the per-zone forms of the
 * supervisor's pool work (header repair, held, reclaim).
 */
#include "supervisor/zones.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/adopt.h"

_Static_assert(SUP_ZONES_MAX == IPC_MAX_ZONES, "the manifest's bound is the config blob's");

unsigned sup_zones_count(const struct sup_manifest *m)
{
    unsigned n = 1;
    for (size_t p = 0; p < m->nports; p++)
        if (m->ports[p].zone + 1 > n)
            n = m->ports[p].zone + 1;
    return n;
}

uint32_t sup_svc_zones(const struct sup *s, const struct sup_svc *v)
{
    if (v->port < 0 || v->port >= (int)s->m.nports)
        return s->nzones >= 32 ? ~0u : (1u << s->nzones) - 1;
    return 1u << s->m.ports[v->port].zone;
}

static void zone_report(void *arg, const char *line)
{
    (void)arg;
    sup_warn("%s", line);
}

int sup_zones_setup(struct sup *s, int router, int first_fd, struct ipc_err *err)
{
    s->nzones = sup_zones_count(&s->m);
    for (unsigned z = 1; z < s->nzones; z++) {
        struct ipc_pool *pool = &s->zone_pool[z];
        int ret;
        const char *zname = "";
        for (size_t p = 0; p < s->m.nports; p++)
            if (s->m.ports[p].zone == z)
                zname = s->m.ports[p].zone_name;
        if (s->adopt) {
            ret = s->zone_fd[z] = sup_adopt_fd(s, router, first_fd + (int)z - 1, "a zone's pool", err);
            if (ret < 0)
                return ret;
            if ((ret = ipc_pool_attach(pool, s->zone_fd[z], IPC_OWNER_SUPERVISOR, err)) < 0)
                return ret;
            if ((ret = sup_adopt_zone_hdr(s, z, err)) < 0)
                return ret;
        } else {
            char name[64];
            snprintf(name, sizeof(name), "pool-%s-%s", s->m.router.name, zname);
            ret = ipc_pool_create(name, s->m.router.pool_buffers, s->m.router.frame_size, &s->zone_fd[z], err);
            if (ret < 0)
                return ret;
            if ((ret = ipc_pool_attach(pool, s->zone_fd[z], IPC_OWNER_SUPERVISOR, err)) < 0)
                return ret;
            s->zone_hdr[z] = *pool->hdr;
        }
        snprintf(pool->name, sizeof(pool->name), "pool of zone %s", zname);
        ipc_pool_set_report(pool, zone_report, NULL);
    }
    return 0;
}

void sup_zones_teardown(struct sup *s)
{
    for (unsigned z = 1; z < s->nzones; z++) {
        if (s->zone_fd[z] < 0)
            continue;
        ipc_pool_detach(&s->zone_pool[z]);
        close(s->zone_fd[z]);
        s->zone_fd[z] = -1;
    }
    s->nzones = 1;
}

int sup_zones_fds(const struct sup *s, int *src, int n)
{
    for (unsigned z = 1; z < s->nzones; z++)
        src[n++] = s->zone_fd[z];
    return n;
}

void sup_zones_hdr_repair(struct sup *s)
{
    for (unsigned z = 0; z < s->nzones; z++) {
        struct ipc_pool_hdr *h = sup_zone_pool(s, z)->hdr, *want = z ? &s->zone_hdr[z] : &s->pool_hdr;
        if (!h || memcmp(h, want, offsetof(struct ipc_pool_hdr, hint_full)) == 0)
            continue;
        s->shm_corrupt++;
        char zn[24] = "";
        if (z)
            snprintf(zn, sizeof(zn), " of zone %u", z);
        sup_warn("pool%s: its header (geometry, %u buffers of %u bytes) was overwritten; repaired", zn, want->nbufs,
                 want->frame_size);
        memcpy(h, want, offsetof(struct ipc_pool_hdr, hint_full));
    }
}

unsigned sup_zone_refs(const struct sup *s, unsigned z, const int *idx, unsigned n, struct ipc_ring_ref *out)
{
    unsigned k = 0;
    unsigned total = idx ? n : (unsigned)s->nrings;
    for (unsigned i = 0; i < total; i++) {
        int r = idx ? idx[i] : (int)i;
        if (s->rings[r].zone == z)
            out[k++] = s->ring_ref[r];
    }
    return k;
}

static int zones_each(struct sup *s, uint32_t zones, uint16_t who, const int *idx, unsigned n, bool reclaim)
{
    int sum = 0;
    struct ipc_ring_ref refs[SUP_MAX_RINGS];
    for (unsigned z = 0; z < s->nzones; z++) {
        if (!(zones & (1u << z)))
            continue;
        unsigned k = sup_zone_refs(s, z, idx, n, refs);
        struct ipc_pool *pool = sup_zone_pool(s, z);
        int r = reclaim ? ipc_pool_reclaim(pool, who, refs, k) : ipc_pool_held(pool, who, refs, k);
        if (r < 0)
            return r;
        sum += r;
    }
    return sum;
}

int sup_zones_held(struct sup *s, uint32_t zones, uint16_t who, const int *idx, unsigned n)
{
    return zones_each(s, zones, who, idx, n, false);
}

int sup_zones_reclaim(struct sup *s, uint32_t zones, uint16_t who, const int *idx, unsigned n)
{
    return zones_each(s, zones, who, idx, n, true);
}

/* A zone some port of @m is in. */
static bool zone_named(const struct sup_manifest *m, const char *zone)
{
    for (size_t p = 0; p < m->nports; p++)
        if (strcmp(m->ports[p].zone_name, zone) == 0)
            return true;
    return false;
}

bool sup_zones_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len)
{
    for (size_t i = 0; i < n->nports; i++) {
        const struct sup_port *np = &n->ports[i];
        int k = sup_manifest_port(o, np->name);
        if (k >= 0 && strcmp(o->ports[k].zone_name, np->zone_name) != 0) {
            snprintf(why, len, "port %s: zone changed (%s -> %s): its pool is another", np->name,
                     o->ports[k].zone_name, np->zone_name);
            return true;
        }
        if (k < 0 && !zone_named(o, np->zone_name)) {
            snprintf(why, len, "added %s in zone %s, which has no pool yet: a zone is made only at up", np->name,
                     np->zone_name);
            return true;
        }
    }
    return false;
}
