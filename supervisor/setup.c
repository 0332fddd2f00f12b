/* SPDX-License-Identifier: MIT */
/*
 * supervisor/setup.c: turn a validated manifest into the shared objects the
 * services run on: the pool, one ring per edge of the service graph, an
 * eventfd and a stats region per service, the TAP devices, and each
 * service's sealed config blob. Everything privileged happens here, once;
 * the supervisor keeps every fd so that a restarted service gets the same
 * objects back. Teardown undoes it all; closing the last TAP fd removes the
 * device.
 *
 * The graph: for each port P, "rx-P" carries driver-P -> router; "tx-P"
 * carries router -> driver-P, or shaper-P -> driver-P with "sh-P" carrying
 * router -> shaper-P when P has a shaper. A port without a shaper costs no
 * extra hop.
 */
#include "supervisor/sup.h"
#include "supervisor/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/wake.h"
#include "supervisor/adopt.h"
#include "supervisor/cp.h"
#include "supervisor/route_multi.h"
#include "supervisor/routes.h"
#include "tables/config.h"
#include "supervisor/shaper_ctl.h"
#include "supervisor/filter.h"
#include "supervisor/port_slots.h"
#include "supervisor/vlan.h"
#include "tables/filter.h"
#include "supervisor/xsk.h"
#include "supervisor/zones.h"

/* Fixed fd numbers inside every service (ipc/svc.h). */
/* Fixed fd numbers in every service; FD_KIND0..FD_KIND4 are the fds its
 * kind's typed config names (a driver's device; the router's FIB tables, FIB
 * reader slots, neighbour table, IPv6 FIB tables and IPv6 neighbour table; a
 * shaper's mailbox), -1 where the kind has fewer. */
/* The neighbour table's size: a router of 16 ports with a /24 on each fills
 * a quarter of it (it refuses entries past three quarters). */
#define SUP_NEIGH_ENTRIES 4096u

enum { FD_CFG = IPC_SVC_CONFIG_FD, FD_NOTIFY, FD_POOL, FD_STATS, FD_WAKE, FD_KIND0, FD_KIND1, FD_KIND2, FD_KIND3, FD_KIND4,
       FD_FIRST_RING };

static int svc_index(const struct sup *s, const char *name)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (strcmp(s->svcs[i].name, name) == 0)
            return i;
    return -1;
}

/* Ring PREFIX-PORT (PREFIX-PORT.QUEUE for a port's queue beyond the first). */
int sup_ring_add(struct sup *s, const char *prefix, int port, int queue, int prod, int cons,
                    struct ipc_err *err)
{
    if (s->nrings >= SUP_MAX_RINGS)
        return ipc_errf(err, -E2BIG, "too many rings");
    struct sup_ring *r = &s->rings[s->nrings];
    if (queue)
        snprintf(r->name, sizeof(r->name), "%s-%s.%d", prefix, s->m.ports[port].name, queue);
    else
        snprintf(r->name, sizeof(r->name), "%s-%s", prefix, s->m.ports[port].name);
    r->port = port;
    r->zone = s->m.ports[port].zone;
    r->prod = prod;
    r->cons = cons;
    struct sup_svc *p = &s->svcs[prod], *c = &s->svcs[cons];
    int ret;
    if (s->adopt) { /* the consumer has it as its next input ring */
        ret = sup_adopt_ring(s, s->nrings, cons, FD_FIRST_RING + c->n_in, err);
    } else {
        ret = ipc_ring_create(r->name, s->m.router.ring_size, (uint32_t)s->nrings, p->owner, c->owner, 0, &r->fd,
                              &r->sh, err);
        if (ret == 0)
            s->ring_ref[s->nrings] = ipc_ring_ref_take(r->sh);
    }
    if (ret < 0)
        return ret;
    p->out[p->n_out++] = s->nrings;
    c->in[c->n_in++] = s->nrings;
    s->nrings++;
    return 0;
}

/* The kind's part of the blob (tables/config.h) in @x; returns its size, 0 for
 * a kind that has none (the test stand-ins). */
static uint32_t typed_config(const struct sup *s, const struct sup_svc *v, void *x)
{
    switch (v->kind) {
    case IPC_SVC_ROUTER: {
        struct tbl_router_cfg *r = x;
        tbl_cfg_hdr_init(&r->hdr, v->kind, TBL_ROUTER_CFG_VERSION, sizeof(*r));
        r->fib_fd = FD_KIND0;
        r->fib_readers_fd = FD_KIND1;
        r->neigh_fd = FD_KIND2;
        r->icmp_rate = s->m.router.icmp_rate;
        r->icmp_burst = s->m.router.icmp_burst;
        r->neigh_reachable_ms = s->m.router.neigh_reachable_ms;
        r->neigh_retrans_ms = s->m.router.neigh_retrans_ms;
        r->neigh_probes = s->m.router.neigh_probes;
        r->neigh_delay_ms = s->m.router.neigh_delay_ms;
        r->neigh_stale_ms = s->m.router.neigh_stale_ms;
        r->fib6_fd = FD_KIND3;
        r->neigh6_fd = FD_KIND4;
        for (size_t p = 0; p < s->m.nports && p < IPC_MAX_PORTS; p++) {
            const struct sup_port *sp = &s->m.ports[p];
            struct tbl_port6 *t = &r->port6[p];
            for (unsigned k = 0; k < sp->naddr6 && t->n < TBL_ADDR6_MAX; k++, t->n++) {
                memcpy(t->a[t->n].addr, sp->addr6[k].addr, 16);
                t->a[t->n].plen = sp->addr6[k].len;
            }
            t->ra_interval_s = sp->ra ? sp->ra_interval : 0;
        }
        return sizeof(*r);
    }
    case IPC_SVC_TAP:
    case IPC_SVC_AFXDP: {
        struct tbl_driver_cfg *d = x;
        tbl_cfg_hdr_init(&d->hdr, v->kind, TBL_DRIVER_CFG_VERSION, sizeof(*d));
        d->dev_fd = v->dev_fd >= 0 ? FD_KIND0 : -1;
        d->queue = (uint16_t)v->m->queue;
        d->kernel_owner = v->kown;
        sup_vlan_driver_cfg(s, v, d);
        _Static_assert(SUP_GROUP_MAX == TBL_GROUP_MAX && FD_KIND0 + SUP_GROUP_MAX - 1 == FD_KIND4,
                       "a group's devices are the kind fds");
        d->ngroup = (uint16_t)v->ngrp;
        for (int k = 0; k < v->ngrp; k++)
            d->group[k] = (struct tbl_group_port){
                .port = (uint16_t)v->grp_port[k], .kernel_owner = v->grp_kown[k], .dev_fd = FD_KIND0 + k};
        return sizeof(*d);
    }
    case IPC_SVC_SHAPER: {
        struct tbl_shaper_cfg *sh = x;
        tbl_cfg_hdr_init(&sh->hdr, v->kind, TBL_SHAPER_CFG_VERSION, sizeof(*sh));
        sh->mbox_fd = FD_KIND0;
        sup_shaper_params(s, v, &sh->shp);
        return sizeof(*sh);
    }
    case IPC_SVC_ROUTES:
        return sup_routes_config(s, x, FD_KIND0); /* supervisor/routes_setup.c */
    case IPC_SVC_FILTER:
        return sup_filter_config(s, v, x, FD_KIND0); /* supervisor/filter_setup.c */
    }
    return 0;
}

static int write_config(struct sup *s, struct sup_svc *v, struct ipc_err *err)
{
    struct ipc_svc_config *c = calloc(1, sizeof(*c));
    if (!c)
        return ipc_errf(err, -ENOMEM, "out of memory");
    c->kind = v->kind;
    c->owner = v->owner;
    c->port = v->port >= 0 ? (uint16_t)v->port : IPC_PORT_NONE;
    snprintf(c->name, sizeof(c->name), "%s", v->name);
    c->notify_fd = FD_NOTIFY;
    c->pool_fd = FD_POOL;
    c->stats_fd = FD_STATS;
    c->wake_fd = FD_WAKE;
    c->cpu = v->m->cpu;
    c->poll_us = v->m->poll_us;
    c->hang_ms = v->m->hang_ms;
    int next = FD_FIRST_RING;
    c->n_in = (uint32_t)v->n_in;
    for (int i = 0; i < v->n_in; i++) {
        const struct sup_ring *r = &s->rings[v->in[i]];
        c->in[i] = (struct ipc_svc_ring){.fd = next++,
                                         .wake_fd = -1,
                                         .port = (uint16_t)r->port,
                                         .peer_owner = s->ring_ref[v->in[i]].prod_owner,
                                         .zone = (uint16_t)r->zone};
    }
    c->n_out = (uint32_t)v->n_out;
    for (int i = 0; i < v->n_out; i++) {
        const struct sup_ring *r = &s->rings[v->out[i]];
        c->out[i] = (struct ipc_svc_ring){.fd = next++,
                                         .wake_fd = -1,
                                         .port = (uint16_t)r->port,
                                         .peer_owner = s->ring_ref[v->out[i]].cons_owner,
                                         .zone = (uint16_t)r->zone};
    }
    /* The consumers' eventfds, after the rings, in output-ring order. Rings
     * into one consumer (a group's driver, a VLAN parent's) name its first
     * one's number, so that the producer's flush, which tells consumers
     * apart by that number, wakes it once a loop (ipc/wake.h). */
    for (int i = 0; i < v->n_out; i++) {
        c->out[i].wake_fd = next++;
        for (int j = 0; j < i; j++)
            if (s->rings[v->out[j]].cons == s->rings[v->out[i]].cons)
                c->out[i].wake_fd = c->out[j].wake_fd;
    }
    /* Trust zones: a driver or shaper gets its port's pool at FD_POOL and
     * nothing else; the router zone 0's there, the others after the rings
     * (sup_svc_fds). */
    c->zone = v->port >= 0 && v->port < (int)s->m.nports ? (uint16_t)s->m.ports[v->port].zone : 0;
    if (v->kind == IPC_SVC_ROUTER) {
        c->nzones = (uint16_t)s->nzones;
        c->zone_fd[0] = FD_POOL;
        for (unsigned z = 1; z < s->nzones; z++)
            c->zone_fd[z] = next++;
    }
    c->cap_fd = v->cap_fd > 0 ? next++ : -1; /* last: sup_svc_fds */
    c->nports = (uint32_t)s->m.nports;
    for (size_t i = 0; i < s->m.nports && i < IPC_MAX_PORTS; i++) {
        sup_port_fill(s, (int)i, &c->ports[i]);
        c->port_zone[i] = (uint8_t)s->m.ports[i].zone;
    }
    sup_filter_svc_config(s, v, c); /* filter_setup.c: the router's rings and ports on the filter's path */
    c->flags = s->m.router.stages ? IPC_SVC_F_STAGES : 0;
    union {
        struct tbl_router_cfg r;
        struct tbl_driver_cfg d;
        struct tbl_shaper_cfg sh;
        struct tbl_routes_cfg rt;
        struct tbl_filter_cfg f;
    } x;
    memset(&x, 0, sizeof(x));
    uint32_t xlen = typed_config(s, v, &x);
    sup_cp_config(s, v, c, v->kind == IPC_SVC_ROUTER ? &x.r : NULL); /* cp.c: the control namespace's ports */
    int ret = ipc_svc_config_create(c, xlen ? &x : NULL, xlen, &v->cfg_fd, err);
    free(c);
    return ret;
}

int sup_svc_config(struct sup *s, struct sup_svc *v, struct ipc_err *err)
{
    int old = v->cfg_fd;
    int ret = write_config(s, v, err);
    if (ret < 0) {
        v->cfg_fd = old;
        return ret;
    }
    if (old >= 0)
        close(old);
    return 0;
}

/* The fds a service gets, by target number: what spawn.c dup2()s into place. */
int sup_svc_fds(const struct sup *s, const struct sup_svc *v, int notify_w, int *src, int max)
{
    int n = 0;
    if (max < FD_FIRST_RING + 2 * IPC_SVC_MAX_RINGS)
        return -E2BIG;
    for (int i = 0; i < FD_FIRST_RING; i++)
        src[i] = -1;
    src[FD_CFG] = v->cfg_fd;
    src[FD_NOTIFY] = notify_w;
    unsigned zone = v->port >= 0 && v->port < (int)s->m.nports ? s->m.ports[v->port].zone : 0;
    src[FD_POOL] = zone ? s->zone_fd[zone] : s->pool_fd; /* its zone's pool, never another's */
    src[FD_STATS] = v->stats_fd;
    src[FD_WAKE] = v->wake_fd;
    if (v->kind == IPC_SVC_ROUTER) {
        src[FD_KIND0] = s->fib_fd;
        src[FD_KIND1] = s->fib_readers_fd;
        src[FD_KIND2] = s->neigh_fd;
        src[FD_KIND3] = s->fib6_fd;
        src[FD_KIND4] = s->neigh6_fd;
    } else if (v->kind == IPC_SVC_SHAPER) {
        src[FD_KIND0] = v->mbox_fd;
    } else if (v->kind == IPC_SVC_ROUTES) {
        sup_routes_fds(s, src, FD_KIND0);
    } else if (v->ngrp) {
        for (int k = 0; k < v->ngrp; k++)
            src[FD_KIND0 + k] = v->grp_fd[k];
    } else {
        src[FD_KIND0] = v->dev_fd;
    }
    n = FD_FIRST_RING;
    for (int i = 0; i < v->n_in; i++)
        src[n++] = s->rings[v->in[i]].fd;
    for (int i = 0; i < v->n_out; i++)
        src[n++] = s->rings[v->out[i]].fd;
    for (int i = 0; i < v->n_out; i++)
        src[n++] = s->svcs[s->rings[v->out[i]].cons].wake_fd;
    if (v->kind == IPC_SVC_ROUTER) {
        if (n + (int)s->nzones > max)
            return -E2BIG;
        n = sup_zones_fds(s, src, n);
    }
    if (v->cap_fd > 0) {
        if (n >= max)
            return -E2BIG;
        src[n++] = v->cap_fd;
    }
    return n;
}

static uint32_t kind_ipc(const struct sup *s, const struct sup_service *ms)
{
    switch (ms->kind) {
    case SUP_SVC_ROUTER:
        return IPC_SVC_ROUTER;
    case SUP_SVC_SHAPER:
        return IPC_SVC_SHAPER;
    case SUP_SVC_ROUTES:
        return IPC_SVC_ROUTES;
    case SUP_SVC_FILTER:
        return IPC_SVC_FILTER;
    case SUP_SVC_DRIVER:
        return s->m.ports[ms->port].driver == SUP_DRIVER_TAP ? IPC_SVC_TAP : IPC_SVC_AFXDP;
    case SUP_SVC_CP:
        return IPC_SVC_TAP;
    }
    return 0;
}

static int fib_add_logged(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nh, const char *what,
                          struct ipc_err *err)
{
    int ret = fib_add(&s->fib, addr, len, nh);
    if (ret < 0)
        return ipc_errf(err, ret, "%s: %s: adding %u.%u.%u.%u/%u to the FIB: %s", s->manifest_name, what, addr >> 24,
                        (addr >> 16) & 255, (addr >> 8) & 255, addr & 255, len, strerror(-ret));
    return 0;
}

static int fib6_add_logged(struct sup *s, const struct sup_prefix6 *pf, const struct fib6_nh *nh, const char *what,
                           struct ipc_err *err)
{
    int ret = fib6_add(&s->fib6, pf->addr, pf->len, nh);
    char a[64];
    if (ret < 0)
        return ipc_errf(err, ret, "%s: %s: adding %s/%u to the IPv6 FIB: %s", s->manifest_name, what,
                        sup_addr6_str(pf->addr, a, sizeof(a)), pf->len, strerror(-ret));
    return 0;
}

/* Port @p's global IPv6 networks into the IPv6 FIB. */
static int connected6(struct sup *s, int p, struct ipc_err *err)
{
    const struct sup_port *sp = &s->m.ports[p];
    for (unsigned k = 0; k < sp->naddr6; k++) {
        struct sup_prefix6 net = sp->addr6[k];
        if (sup_ll6(net.addr))
            continue;
        sup_mask6(net.addr, net.len);
        struct fib6_nh nh = {.port = (uint16_t)p};
        if (fib6_get(&s->fib6, net.addr, net.len, &(struct fib6_nh){0}) == 0)
            continue; /* two addresses of one port on one network */
        int ret = fib6_add_logged(s, &net, &nh, sp->src.section, err);
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* Port @p's connected network into the IPv4 FIB. */
static int connected4(struct sup *s, int p, struct ipc_err *err)
{
    const struct sup_port *sp = &s->m.ports[p];
    if (sp->vacant)
        return 0; /* port_slots.c */
    uint32_t mask = sp->address.len ? ~0u << (32 - sp->address.len) : 0;
    struct fib_nh nh = {.gw = 0, .port = (uint16_t)p};
    return fib_add_logged(s, sp->address.addr & mask, sp->address.len, &nh, sp->src.section, err);
}

int sup_port_connected(struct sup *s, int p, struct ipc_err *err)
{
    int ret = connected4(s, p, err);
    if (ret == 0)
        fib_reclaim(&s->fib);
    if (ret == 0 && (ret = connected6(s, p, err)) == 0)
        fib6_reclaim(&s->fib6);
    return ret;
}

/*
 * The IPv6 FIB, sharing the IPv4 FIB's readers' region (so the router's one
 * read section per batch covers both): a connected route for each port's
 * global networks, then the manifest's IPv6 routes. Link-local fe80::/64 is
 * on every port at once, which one FIB entry (one port) cannot say: the
 * router never looks a link-local destination up, it answers its own
 * link-local addresses by the port a packet came in on and drops the rest
 * (docs/ipv6.md). The IPv6 neighbour table with the static entries.
 */
static int setup_tables6(struct sup *s, struct ipc_err *err)
{
    char name[64];
    snprintf(name, sizeof(name), "fib6-%s", s->m.router.name);
    int rfd = -1;
    int ret = fib6_create(name, NULL, s->fib_readers_fd, &s->fib6, &s->fib6_fd, &rfd, err);
    if (ret < 0)
        return ret;
    for (size_t p = 0; p < s->m.nports; p++)
        if ((ret = connected6(s, (int)p, err)) < 0)
            return ret;
    if ((ret = sup_mroutes_setup(s, true, err)) < 0) /* supervisor/route_mpath.c */
        return ret;
    if (s->adopt) { /* the router's, with what it learnt */
        int router = svc_index(s, "router");
        if ((s->neigh6_fd = sup_adopt_fd(s, router, FD_KIND4, "the IPv6 neighbour table", err)) < 0)
            return s->neigh6_fd;
        return neigh6_attach(&s->neigh6, s->neigh6_fd, err);
    }
    snprintf(name, sizeof(name), "neigh6-%s", s->m.router.name);
    ret = neigh6_create(name, SUP_NEIGH_ENTRIES, &s->neigh6, &s->neigh6_fd, err);
    if (ret < 0)
        return ret;
    for (size_t i = 0; i < s->m.nneighs; i++) {
        const struct sup_neigh *n = &s->m.neighs[i];
        if (!n->v6)
            continue;
        ret = neigh6_add_static(&s->neigh6, n->addr6, n->mac, (uint16_t)n->port);
        if (ret < 0)
            return ipc_errf(err, ret, "%s: line %u: [%s]: %s", s->manifest_name, n->src.line, n->src.section,
                            strerror(-ret));
    }
    return 0;
}

/* The FIB: a connected route for each port's network, then the manifest's
 * routes; the neighbour table with the manifest's static entries; then the
 * IPv6 tables (setup_tables6). */
static int setup_tables(struct sup *s, struct ipc_err *err)
{
    char name[64];
    snprintf(name, sizeof(name), "fib-%s", s->m.router.name);
    int ret = fib_create(name, NULL, &s->fib, &s->fib_fd, &s->fib_readers_fd, err);
    if (ret < 0)
        return ret;
    for (size_t p = 0; p < s->m.nports; p++)
        if ((ret = connected4(s, (int)p, err)) < 0)
            return ret;
    if ((ret = sup_mroutes_setup(s, false, err)) < 0) /* IPv6: setup_tables6 */
        return ret;
    if (s->adopt) {
        int router = svc_index(s, "router");
        if ((s->neigh_fd = sup_adopt_fd(s, router, FD_KIND2, "the neighbour table", err)) < 0)
            return s->neigh_fd;
        if ((ret = neigh_attach(&s->neigh, s->neigh_fd, err)) < 0)
            return ret;
        s->neigh_seq = ipc_ld_rlx(&s->neigh.sh->cmd.seq); /* ours to write; checked at the next command */
        return setup_tables6(s, err);
    }
    snprintf(name, sizeof(name), "neigh-%s", s->m.router.name);
    ret = neigh_create(name, SUP_NEIGH_ENTRIES, &s->neigh, &s->neigh_fd, err);
    if (ret < 0)
        return ret;
    for (size_t i = 0; i < s->m.nneighs; i++) {
        const struct sup_neigh *n = &s->m.neighs[i];
        if (n->v6)
            continue; /* setup_tables6 */
        ret = neigh_add_static(&s->neigh, n->addr, n->mac, (uint16_t)n->port);
        if (ret < 0)
            return ipc_errf(err, ret, "%s: line %u: [%s]: %s", s->manifest_name, n->src.line, n->src.section,
                            strerror(-ret));
    }
    return setup_tables6(s, err);
}

/* What the pool's supervisor side found in the shared metadata, one line
 * each (ipc_pool_set_report); pool.corrupt counts it for `stats`. */
static void pool_report(void *arg, const char *line)
{
    (void)arg;
    sup_warn("%s", line);
}

int sup_svc_add(struct sup *s, const struct sup_service *ms, struct ipc_err *err)
{
    if (s->nsvcs >= SUP_MAX_SERVICES)
        return ipc_errf(err, -E2BIG, "too many services");
    char name[64];
    int ret;
    struct sup_svc *v = &s->svcs[s->nsvcs];
    v->m = ms;
    snprintf(v->name, sizeof(v->name), "%s", ms->name);
    v->kind = kind_ipc(s, ms);
    v->owner = (uint16_t)(IPC_OWNER_SERVICE_MIN + s->nsvcs);
    v->port = ms->port;
    sup_svc_ids(s, v);
    sup_svc_binary(s, v);
    if (!s->adopt && (ret = sup_trust_service(s, v, err)) < 0)
        return ret;
    v->state = SUP_ST_DOWN;
    if ((ret = sup_capture_create(s, v, err)) < 0) /* adopting: the running instance's */
        return ret;
    if (v->kind == IPC_SVC_FILTER && (ret = sup_filter_add(s, v, s->nsvcs, FD_KIND0, err)) < 0)
        return ret;
    if (s->adopt) {
        if ((ret = sup_adopt_svc(s, v, s->nsvcs, FD_WAKE, FD_STATS, FD_KIND0, err)) < 0)
            return ret;
        s->nsvcs++;
        return 0;
    }
    v->wake_fd = ipc_wake_eventfd();
    if (v->wake_fd < 0)
        return ipc_errf(err, v->wake_fd, "eventfd: %s", strerror(-v->wake_fd));
    snprintf(name, sizeof(name), "stats-%s", v->name);
    ret = ipc_stats_create(name, &v->stats_fd, &v->stats, err);
    if (ret < 0)
        return ret;
    v->stats_shm = v->stats->shm;
    if (v->kind == IPC_SVC_SHAPER) {
        snprintf(name, sizeof(name), "mbox-%s", v->name);
        if ((ret = shp_mbox_create(name, &v->mbox_fd, &v->mbox, err)) < 0)
            return ret;
    }
    s->nsvcs++;
    return 0;
}

/*
 * Each driver instance (a port's queue) has a ring to the router and one
 * from the router, or, on a shaped port, from the shaper: the router feeds
 * the shaper, the shaper its port's first queue. Then its device: a TAP
 * made (or taken back) in the port's netns, or an AF_XDP socket. A group's
 * driver (docs/drivers.md, "Driver groups") has all of that for each of
 * its ports, in port order, its devices at FD_KIND0 + k.
 */
static int attach_port(struct sup *s, int drv, int router, int p, int q, int fd_dev, int *dev_fd, uint16_t *kown,
                       struct ipc_err *err)
{
    int ret;
    char sname[SUP_SERVICE_MAX + 1];
    snprintf(sname, sizeof(sname), "shaper-%s", s->m.ports[p].name);
    int shp = svc_index(s, sname);
    int filtered = sup_filter_rings(s, drv, router, p, q, err); /* filter_setup.c: the rings through the filter */
    if (filtered < 0)
        return filtered;
    if (!filtered && (ret = sup_ring_add(s, "rx", p, q, drv, router, err)) < 0)
        return ret;
    if (!filtered && shp >= 0 && q == 0) {
        if ((ret = sup_ring_add(s, "sh", p, 0, router, shp, err)) < 0)
            return ret;
        if ((ret = sup_ring_add(s, "tx", p, 0, shp, drv, err)) < 0)
            return ret;
    } else if (!filtered && shp < 0 && (ret = sup_ring_add(s, "tx", p, q, router, drv, err)) < 0) {
        return ret;
    }
    if ((ret = sup_vlan_attach(s, drv, router, err)) < 0) /* vlan.c: its VLAN ports' rings */
        return ret;
    if (s->adopt && s->m.ports[p].driver == SUP_DRIVER_TAP) {
        int fd = sup_adopt_fd(s, drv, fd_dev, "its TAP device", err);
        if (fd < 0)
            return fd;
        /* The driver could have put anything at that number: it must be
         * this port's TAP device, by the kernel's word. */
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        if (ioctl(fd, TUNGETIFF, &ifr) < 0 || strncmp(ifr.ifr_name, s->m.ports[p].ifname, IFNAMSIZ) != 0) {
            close(fd);
            return ipc_errf(err, -EPROTO, "adoption: %s's fd %d is not the TAP device %s", s->svcs[drv].name,
                            fd_dev, s->m.ports[p].ifname);
        }
        *dev_fd = fd;
        return 0;
    }
    if (s->adopt)
        return sup_xsk_adopt(s, p, q, drv, fd_dev, dev_fd, kown, err);
    if (s->m.ports[p].driver == SUP_DRIVER_TAP) {
        return sup_tap_create(&s->m.ports[p], dev_fd, err); /* tap_dev.c */
    }
    if (q == 0 && (ret = sup_vlan_check_device(&s->m, p, err)) < 0)
        return ret;
    return sup_xsk_open(s, p, q, dev_fd, kown, err); /* AF_XDP: xsk.c */
}

int sup_driver_attach(struct sup *s, int drv, struct ipc_err *err)
{
    int router = svc_index(s, "router");
    if (router < 0)
        return ipc_errf(err, -EINVAL, "internal: no router service");
    struct sup_svc *v = &s->svcs[drv];
    const struct sup_service *ms = v->m;
    if (!ms->members)
        return attach_port(s, drv, router, ms->port, ms->queue, FD_KIND0, &v->dev_fd, &v->kown, err);
    v->ngrp = 0;
    for (int p = 0; p < (int)s->m.nports && p < 32; p++) {
        if (!(ms->members >> p & 1))
            continue;
        if (v->ngrp >= SUP_GROUP_MAX)
            return ipc_errf(err, -E2BIG, "internal: %s has more than %d ports", v->name, SUP_GROUP_MAX);
        int k = v->ngrp;
        v->grp_fd[k] = -1;
        int ret = attach_port(s, drv, router, p, 0, FD_KIND0 + k, &v->grp_fd[k], &v->grp_kown[k], err);
        if (ret < 0)
            return ret;
        v->grp_port[k] = p;
        v->ngrp++;
    }
    v->dev_fd = v->grp_fd[0];
    v->kown = v->grp_kown[0];
    return 0;
}

int sup_setup(struct sup *s, struct ipc_err *err)
{
    int ret;
    s->pool_fd = -1;
    s->nzones = 1;
    for (unsigned z = 0; z < IPC_MAX_ZONES; z++)
        s->zone_fd[z] = -1;
    s->fib_fd = -1;
    s->fib_readers_fd = -1;
    s->neigh_fd = -1;
    s->fib6_fd = -1;
    s->neigh6_fd = -1;
    s->nsvcs = 0;
    s->nrings = 0;
    for (int i = 0; i < SUP_MAX_SERVICES; i++)
        s->svcs[i] = (struct sup_svc){.wake_fd = -1, .stats_fd = -1, .cfg_fd = -1, .dev_fd = -1, .mbox_fd = -1, .pidfd = -1,
                                      .notify_fd = -1, .sb_pidfd = -1, .sb_notify_fd = -1, .sb_go_fd = -1};
    sup_find_bindir(s);
    if ((ret = sup_run_dir(s, err)) < 0)
        return ret;
    ret = sup_ids_resolve(s, err);
    if (ret < 0)
        return ret;

    char name[64];
    if (s->adopt) {
        if ((ret = sup_adopt_pool(s, FD_POOL, err)) < 0)
            return ret;
    } else {
        snprintf(name, sizeof(name), "pool-%s", s->m.router.name);
        ret = ipc_pool_create(name, s->m.router.pool_buffers, s->m.router.frame_size, &s->pool_fd, err);
        if (ret < 0)
            return ret;
        ret = ipc_pool_attach(&s->pool, s->pool_fd, IPC_OWNER_SUPERVISOR, err);
        if (ret < 0)
            return ret;
        s->pool_hdr = *s->pool.hdr;
    }
    ipc_pool_set_report(&s->pool, pool_report, NULL);

    /* Services, in the manifest's start order; owner ids from 2. */
    for (size_t i = 0; i < s->m.nservices; i++)
        if ((ret = sup_svc_add(s, &s->m.services[i], err)) < 0)
            return ret;
    if ((ret = sup_cg_init(s, err)) < 0)
        return ret;
    /* The zones' pools before the devices (an AF_XDP port's UMEM is its
     * zone's pool); adopted ones from the router's fds, whose numbers
     * follow its rings. */
    if (!s->adopt && (ret = sup_zones_setup(s, -1, 0, err)) < 0)
        return ret;
    for (int drv = 0; drv < s->nsvcs; drv++)
        if (s->svcs[drv].m->kind == SUP_SVC_DRIVER && (ret = sup_driver_attach(s, drv, err)) < 0)
            return ret;
    for (int i = 0; i < s->nsvcs; i++) /* after the drivers: the router's rings keep their order */
        if (s->svcs[i].m->kind == SUP_SVC_CP && (ret = sup_cp_attach(s, i, FD_KIND0, err)) < 0)
            return ret;
    if (s->adopt) {
        int router = svc_index(s, "router");
        if (router < 0)
            return ipc_errf(err, -EINVAL, "internal: no router service");
        const struct sup_svc *rv = &s->svcs[router];
        if ((ret = sup_zones_setup(s, router, FD_FIRST_RING + rv->n_in + 2 * rv->n_out, err)) < 0)
            return ret;
    }
    if ((ret = setup_tables(s, err)) < 0 || (ret = sup_routes_setup(s, err)) < 0)
        return ret;
    if (s->adopt)
        ret = sup_adopt_routes(s, svc_index(s, "router"), FD_KIND0, FD_KIND3, err); /* saved ones among them */
    else
        sup_routes_load(s); /* what `route save` wrote: logged, never fatal */
    if (ret < 0)
        return ret;
    for (int i = 0; i < s->nsvcs; i++)
        if ((ret = write_config(s, &s->svcs[i], err)) < 0)
            return ret;
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/*
 * After every service has stopped: free what is left in the rings (their
 * packets belong to the producers' names), so that the census can demand
 * that every buffer is free. Each ring is read through the supervisor's own
 * copy of its size and producer (ipc_pool_drain), never its header, which
 * the ring's ends could write. Returns the number of frames freed.
 */
int sup_drain_rings(struct sup *s)
{
    int freed = 0;
    sup_xsk_release(s); /* AF_XDP: detach, close, free what the kernel held */
    for (int i = 0; i < s->nrings; i++)
        freed += ipc_pool_drain(sup_ring_pool(s, i), &s->ring_ref[i]);
    return freed;
}

void sup_svc_release(struct sup *s, struct sup_svc *v)
{
    close_fd(&v->wake_fd);
    close_fd(&v->cfg_fd);
    close_fd(&v->dev_fd); /* the last fd of a TAP: the device goes away, unless persistent */
    sup_standby_dismiss(s, v);
    close_fd(&v->pidfd);
    close_fd(&v->notify_fd);
    if (v->stats)
        ipc_shm_unmap(v->stats, sizeof(*v->stats));
    v->stats = NULL;
    close_fd(&v->stats_fd);
    sup_capture_release(s, v);
    shp_mbox_detach(v->mbox);
    v->mbox = NULL;
    close_fd(&v->mbox_fd);
}

void sup_teardown(struct sup *s)
{
    sup_xsk_release(s);
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        /* (A port that a reload is removing is no longer in s->m.) */
        if (v->dev_fd >= 0 && v->kind == IPC_SVC_TAP && strncmp(v->name, "driver-", 7) == 0 &&
            v->port < (int)s->m.nports && s->m.ports[v->port].persist)
            sup_log("%s: TAP %s kept (persist = yes)", v->name, s->m.ports[v->port].ifname);
        sup_svc_release(s, v);
    }
    for (int i = 0; i < s->nrings; i++) {
        ipc_ring_ref_detach(&s->ring_ref[i]); /* by the size it was made with, not its header's */
        s->rings[i].sh = NULL;
        close_fd(&s->rings[i].fd);
    }
    s->nrings = 0;
    sup_routes_free(s);
    sup_routes_teardown(s);
    if (s->fib_fd >= 0)
        fib_detach(&s->fib);
    close_fd(&s->fib_fd);
    close_fd(&s->fib_readers_fd);
    if (s->neigh_fd >= 0)
        neigh_detach(&s->neigh);
    close_fd(&s->neigh_fd);
    if (s->fib6_fd >= 0)
        fib6_detach(&s->fib6);
    close_fd(&s->fib6_fd);
    if (s->neigh6_fd >= 0)
        neigh6_detach(&s->neigh6);
    close_fd(&s->neigh6_fd);
    sup_zones_teardown(s);
    ipc_pool_detach(&s->pool);
    close_fd(&s->pool_fd);
}
