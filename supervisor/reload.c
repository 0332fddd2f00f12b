/* SPDX-License-Identifier: MIT */
/*
 * supervisor/reload.c: `ringrouter reload`, `ringrouter check --diff` and
 * SIGHUP. The manifest file the supervisor was started with is read and
 * checked again, laid out in the running one's port slots (port_slots.c),
 * compared with it (reload_plan.c), and the
 * difference applied live, each change through the path that already makes
 * it at run time; every service that did not change keeps running.
 *
 * In order:
 *   1. the file must check, as `ringrouter check` would: if not, the
 *      answer is check's error (file, line, key) and nothing changes;
 *   2. what only a new `up` can change (a port's device changed, an AF_XDP
 *      port added, the pool's and rings' geometry,
 *      users, directories) refuses the whole reload, and nothing changes;
 *      so does a TAP port's new MTU that its device refuses (live.c), and
 *      a [filter] added, removed or resized, or ports changed under one;
 *      new [filter] rules must compile, and the filter then restarts on
 *      them with its connections kept (filter_setup.c);
 *   3. the new manifest becomes the running one; a new TAP port's services,
 *      rings, device and connected networks are made (add_ports); routes go
 *      into the FIB and persist onto the TAP fds at once; a removed port's
 *      routes leave it, its services are stopped and its rings leave the
 *      other services' lists (retire_services); a shaper added to or
 *      removed from a port that stays changes the rings between the router
 *      and the port's first driver (reload_shapers); a service whose config
 *      blob changed (the router, when a port comes or goes: it takes its
 *      rings only at start) gets a new blob and a new warm standby on it;
 *   4. each service to restart is restarted as `ringrouter restart` does,
 *      once its new standby is parked, a new port's services are started,
 *      and each is waited for until it is ready;
 *   4b. once the old router and a removed port's services are gone, the
 *      port is released: its rings drained and freed, its device closed
 *      (an AF_XDP socket's XDP program detached and what the kernel held
 *      freed), its services' resources closed, the tables compacted
 *      (run_remove);
 *   5. the neighbour and shaper-rate commands, one at a time through the
 *      router's and the shapers' mailboxes, each waiting for its ack, as
 *      `neigh add` and `shaper set` do (from the event loop: it never
 *      waits), once the services that take them run their new config;
 *   6. the answer, which the log repeats line by line: every change, every
 *      restart and why, what failed.
 * One reload at a time; the connection that asked waits in ctl_conn.c's
 * WAIT state, a SIGHUP's answer goes to the log alone.
 */
#include "supervisor/reload_impl.h"
#include "supervisor/cp.h"
#include "supervisor/filter.h"
#include "supervisor/zones.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/adopt.h"
#include "supervisor/inject.h"
#include "supervisor/notify.h"
#include "supervisor/shaper_ctl.h"
#include "supervisor/xsk.h"

/* How long a mailbox command waits for its service to be up, a restart
 * for the new standby to park, and then for the new instance to be ready. */
#define RL_OP_WAIT_NS 5000000000ull
#define RL_PARK_NS 3000000000ull
#define RL_READY_NS 8000000000ull

static void job_free(struct sup_reload *j)
{
    if (!j)
        return;
    if (j->out)
        fclose(j->out);
    free(j->text);
    free(j->ops);
    /* Services never released still point into it: then it stays. */
    if (j->old && !j->ngone) {
        sup_manifest_free(j->old);
        free(j->old);
    }
    free(j);
}

/* The same file? Compared by what they resolve to, so that "m.ini" and
 * "./m.ini" are one; a path that does not resolve is no match. */
static bool same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* A service to restart: a config blob from the new manifest, and a warm
 * standby on it (the one it had runs the old blob). */
static void prepare_restart(struct sup *s, struct sup_reload *j, int i)
{
    struct sup_svc *v = &s->svcs[i];
    struct ipc_err err;
    sup_standby_dismiss(s, v);
    if (sup_svc_config(s, v, &err) < 0) {
        j->failed++;
        j->rs[i].on = false;
        fprintf(j->out, "%s: not restarted: its new config: %s\n", v->name, err.msg);
        return;
    }
    j->rs[i].old = v->pid;
    if (v->state == SUP_ST_UP)
        sup_standby_spawn(s, v);
}

/* The lowest slot no other service has: a new service's owner id in the
 * pool and, with [router] uids, its uid (FIRST + slot), as `up` gives each
 * its index. Once a reload has removed a service before others, indices
 * and slots differ, and two services must never share either. */
static unsigned free_slot(const struct sup *s, const struct sup_svc *self)
{
    for (unsigned k = 0;; k++) {
        bool used = false;
        for (int i = 0; i < s->nsvcs && !used; i++)
            used = &s->svcs[i] != self && s->svcs[i].owner == IPC_OWNER_SERVICE_MIN + k;
        if (!used)
            return k;
    }
}

/*
 * What new ports bring, once the new manifest runs: their services (a uid
 * each, FIRST + their index, which only they have), their rings and devices,
 * their connected networks, their config blobs. They start with the
 * restarts (run_restarts), as the router restarts to take the new rings. A
 * step that fails leaves its service down, and says so.
 */
static void add_ports(struct sup *s, struct sup_reload *j)
{
    struct ipc_err err;
    int first = s->nsvcs;
    for (size_t i = 0; i < s->m.nservices; i++) {
        const struct sup_service *ms = &s->m.services[i];
        if (sup_reload_svc(s, ms->name) >= 0)
            continue;
        if (sup_svc_add(s, ms, &err) < 0) {
            j->failed++;
            fprintf(j->out, "%s: not made: %s\n", ms->name, err.msg);
            continue;
        }
        struct sup_svc *v = &s->svcs[s->nsvcs - 1];
        unsigned slot = free_slot(s, v);
        v->owner = (uint16_t)(IPC_OWNER_SERVICE_MIN + slot);
        if (!s->m.router.user[0])
            v->uid = v->gid = s->m.router.uids.first + slot;
        j->rs[s->nsvcs - 1] = (struct rl_restart){.on = true, .fresh = true};
    }
    for (int i = first; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        if ((v->m->kind == SUP_SVC_DRIVER && sup_driver_attach(s, i, &err) < 0) || sup_svc_config(s, v, &err) < 0) {
            j->failed++;
            j->rs[i].on = false;
            fprintf(j->out, "%s: not started: %s\n", v->name, err.msg);
        }
    }
}

/* New ports' connected networks, once the walk has taken out what a
 * removed port left in the FIBs. */
static void add_connected(struct sup *s, struct sup_reload *j)
{
    struct ipc_err err;
    for (size_t p = 0; p < s->m.nports; p++)
        if (!s->m.ports[p].vacant && sup_manifest_port(j->old, s->m.ports[p].name) < 0 &&
            sup_port_connected(s, (int)p, &err) < 0) {
            j->failed++;
            fprintf(j->out, "port %s: its connected network: %s\n", s->m.ports[p].name, err.msg);
        }
}

/* Remove ring @r from a ring list. */
static void list_drop(int *list, int *n, int r)
{
    for (int i = 0; i < *n; i++)
        if (list[i] == r) {
            memmove(&list[i], &list[i + 1], (size_t)(*n - i - 1) * sizeof(*list));
            (*n)--;
            return;
        }
}

static bool gone_ring(const struct sup *s, const struct sup_reload *j, int r)
{
    return j->retired[r] || j->gone[s->rings[r].prod] || j->gone[s->rings[r].cons];
}

/*
 * Removed ports' services stop now. Their rings leave the other services'
 * lists, so that the router's new config and its new standby have none of
 * them; the old router instance, until it is replaced, still writes into
 * them (policy.c reclaims by the supervisor's ring table, not the lists).
 * The rings, devices and the rest are released once both ends are gone
 * (release_gone).
 */
static void retire_services(struct sup *s, struct sup_reload *j)
{
    for (int i = 0; i < s->nsvcs; i++) {
        if (!j->gone[i])
            continue;
        struct sup_svc *v = &s->svcs[i];
        sup_standby_dismiss(s, v);
        v->restart_pending = false; /* a `restart` under way ends in a stop */
        fprintf(j->out, "stopping %s\n", v->name);
        sup_log("%s: stopping for the reload: its port is removed", v->name);
        sup_event(s, v, SUP_EV_STOP, 0);
    }
    for (int r = 0; r < s->nrings; r++) {
        if (!gone_ring(s, j, r))
            continue;
        for (int i = 0; i < s->nsvcs; i++) {
            if (j->gone[i])
                continue;
            list_drop(s->svcs[i].in, &s->svcs[i].n_in, r);
            list_drop(s->svcs[i].out, &s->svcs[i].n_out, r);
        }
    }
}

/* Port @p's driver of its first queue, which a shaper feeds; -1: none. */
static int first_driver(const struct sup *s, const struct sup_reload *j, int p)
{
    for (int i = 0; i < s->nsvcs; i++) {
        const struct sup_service *ms = s->svcs[i].m;
        if (!j->gone[i] && ms->kind == SUP_SVC_DRIVER && ms->port == p && ms->queue == 0)
            return i;
    }
    return -1;
}

/*
 * A shaper added to a port that stays: the router's ring to the port's
 * first driver goes (retired: released once neither instance that used it
 * runs), and two come, router -> shaper -> driver, as `up` makes them. A
 * shaper removed: its rings went with it (retire_services), and one comes,
 * router -> driver. The router and the driver restart on their new
 * configs (the walk marked them), and a new shaper starts.
 */
static void reload_shapers(struct sup *s, struct sup_reload *j)
{
    struct ipc_err err;
    int router = sup_reload_svc(s, "router");
    for (size_t p = 0; p < s->m.nports && router >= 0; p++) {
        const struct sup_port *np = &s->m.ports[p];
        int k = sup_manifest_port(j->old, np->name), drv = first_driver(s, j, (int)p), ret;
        if (k < 0 || drv < 0 || (j->old->ports[k].shaper >= 0) == (np->shaper >= 0))
            continue;
        char name[SUP_SERVICE_MAX + 1];
        snprintf(name, sizeof(name), "shaper-%s", np->name);
        int shp = sup_reload_svc(s, name);
        if (np->shaper >= 0 && shp < 0) {
            continue; /* not made: add_ports said why */
        } else if (np->shaper >= 0) {
            for (int r = 0; r < s->nrings; r++)
                if (s->rings[r].prod == router && s->rings[r].cons == drv && !j->retired[r]) {
                    j->retired[r] = true;
                    j->nretired++;
                    list_drop(s->svcs[router].out, &s->svcs[router].n_out, r);
                    list_drop(s->svcs[drv].in, &s->svcs[drv].n_in, r);
                }
            ret = sup_ring_add(s, "sh", (int)p, 0, router, shp, &err);
            if (ret == 0)
                ret = sup_ring_add(s, "tx", (int)p, 0, shp, drv, &err);
            if (ret == 0)
                ret = sup_svc_config(s, &s->svcs[shp], &err);
        } else {
            ret = sup_ring_add(s, "tx", (int)p, 0, router, drv, &err);
        }
        if (ret < 0) {
            j->failed++;
            fprintf(j->out, "port %s: its rings for the shaper %s: %s\n", np->name,
                    np->shaper >= 0 ? "added" : "removed", err.msg);
        }
    }
}

/*
 * A VLAN port added to a running parent: a ring from the router to each of
 * the parent's driver instances, as sup_vlan_attach makes them at up. One
 * removed: its rings go (retired: released once neither instance that used
 * them runs). The router and the parent's drivers restart on their new
 * configs (the walk marked them); a VLAN port's shaper is refused.
 */
static void reload_vlans(struct sup *s, struct sup_reload *j)
{
    struct ipc_err err;
    int router = sup_reload_svc(s, "router");
    for (size_t p = 0; p < s->m.nports && router >= 0; p++) {
        const struct sup_port *np = &s->m.ports[p];
        if (np->vacant || !np->vlan_ntags || sup_manifest_port(j->old, np->name) >= 0 ||
            sup_manifest_port(j->old, np->parent_name) < 0)
            continue;
        for (int i = 0; i < s->nsvcs; i++) {
            const struct sup_service *ms = s->svcs[i].m;
            if (j->gone[i] || ms->kind != SUP_SVC_DRIVER || ms->port != np->vlan_parent)
                continue;
            if (sup_ring_add(s, "tx", (int)p, ms->queue, router, i, &err) < 0) {
                j->failed++;
                fprintf(j->out, "port %s: its ring to %s: %s\n", np->name, s->svcs[i].name, err.msg);
            }
        }
    }
    for (size_t p = 0; p < j->old->nports; p++) {
        const struct sup_port *op = &j->old->ports[p];
        if (op->vacant || !op->vlan_ntags || sup_manifest_port(&s->m, op->name) >= 0)
            continue;
        for (int r = 0; r < s->nrings; r++) {
            struct sup_ring *g = &s->rings[r];
            if (g->port != (int)p || j->retired[r] || j->gone[g->prod] || j->gone[g->cons])
                continue;
            j->retired[r] = true;
            j->nretired++;
            list_drop(s->svcs[g->prod].out, &s->svcs[g->prod].n_out, r);
            list_drop(s->svcs[g->cons].in, &s->svcs[g->cons].n_in, r);
        }
    }
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* The removed rings and services out of s->rings and s->svcs: what comes
 * after them moves down, and every index that names one follows. */
static void compact(struct sup *s, struct sup_reload *j)
{
    int rmap[SUP_MAX_RINGS], smap[SUP_MAX_SERVICES], nr = 0, ns = 0;
    for (int r = 0; r < s->nrings; r++)
        rmap[r] = gone_ring(s, j, r) ? -1 : nr++;
    for (int i = 0; i < s->nsvcs; i++)
        smap[i] = j->gone[i] ? -1 : ns++;
    for (int r = 0; r < s->nrings; r++) {
        if (rmap[r] < 0)
            continue;
        struct sup_ring *g = &s->rings[r];
        g->prod = smap[g->prod];
        g->cons = smap[g->cons];
        s->rings[rmap[r]] = *g;
        s->ring_ref[rmap[r]] = s->ring_ref[r];
    }
    s->nrings = nr;
    for (int i = 0; i < s->nsvcs; i++) {
        if (smap[i] < 0)
            continue;
        struct sup_svc *v = &s->svcs[i];
        for (int k = 0; k < v->n_in; k++)
            v->in[k] = rmap[v->in[k]];
        for (int k = 0; k < v->n_out; k++)
            v->out[k] = rmap[v->out[k]];
        if (smap[i] == i)
            continue;
        s->svcs[smap[i]] = *v;
        j->rs[smap[i]] = j->rs[i];
        sup_rewatch(s, &s->svcs[smap[i]]);
        sup_inject_move(s, i, smap[i]);
    }
    for (int i = ns; i < s->nsvcs; i++) {
        s->svcs[i] = (struct sup_svc){.wake_fd = -1, .stats_fd = -1, .cfg_fd = -1, .dev_fd = -1, .mbox_fd = -1,
                                      .pidfd = -1, .notify_fd = -1, .sb_pidfd = -1, .sb_notify_fd = -1, .sb_go_fd = -1};
        j->rs[i] = (struct rl_restart){0};
    }
    for (int k = 0; k < SUP_CTL_CONNS; k++) {
        struct sup_ctl_conn *c = &s->conns[k];
        if (c->wait.pending && c->wait.kind != SUP_WAIT_RELOAD)
            c->wait.svc = smap[c->wait.svc];
        if (c->iwait.pending) {
            c->iwait.svc = smap[c->iwait.svc];
            c->iwait.target = smap[c->iwait.target];
        }
    }
    for (size_t k = 0; k < j->nops; k++)
        j->ops[k].svc = smap[j->ops[k].svc];
    if (j->gave_up >= 0)
        j->gave_up = smap[j->gave_up];
    s->nsvcs = ns;
    memset(j->gone, 0, sizeof(j->gone));
    j->ngone = 0;
    memset(j->retired, 0, sizeof(j->retired));
    j->nretired = 0;
}

/* A control connection waits on a removed service (`shaper set` on its
 * shaper, an inject): its answer comes first, within its own deadline. */
static bool conn_on_gone(const struct sup *s, const struct sup_reload *j)
{
    for (int k = 0; k < SUP_CTL_CONNS; k++) {
        const struct sup_ctl_conn *c = &s->conns[k];
        if (c->wait.pending && c->wait.kind != SUP_WAIT_RELOAD && j->gone[c->wait.svc])
            return true;
        if (c->iwait.pending && (j->gone[c->iwait.svc] || j->gone[c->iwait.target]))
            return true;
    }
    return false;
}

/* Every removed port's rings drained (the census finds their packets
 * freed), then freed, its services' resources released and the tables
 * compacted; one line a port. */
static void release_gone(struct sup *s, struct sup_reload *j)
{
    int idx[SUP_MAX_RINGS] = {0}, n = 0;
    for (int r = 0; r < s->nrings; r++)
        if (gone_ring(s, j, r))
            idx[n++] = r;
    sup_rings_repair(s, idx, n);
    const struct sup_manifest *o = j->old;
    bool done[SUP_MAX_RINGS] = {false};
    for (size_t p = 0; p < o->nports; p++) {
        const struct sup_port *op = &o->ports[p];
        if (op->vacant || sup_manifest_port(&s->m, op->name) >= 0)
            continue;
        int drained = 0;
        for (int k = 0; k < n; k++)
            if (s->rings[idx[k]].port == (int)p && (!j->retired[idx[k]] || op->vlan_ntags)) {
                drained += ipc_pool_drain(sup_ring_pool(s, idx[k]), &s->ring_ref[idx[k]]);
                done[k] = true;
            }
        fprintf(j->out, "port %s: released, %d packet%s drained from its rings, ", op->name, drained,
                drained == 1 ? "" : "s");
        if (op->vlan_ntags) {
            fprintf(j->out, "VLAN of %s\n", op->parent_name); /* no device of its own */
        } else if (op->driver == SUP_DRIVER_TAP) {
            fprintf(j->out, "TAP %s %s\n", op->ifname, op->persist ? "kept (persist = yes)" : "removed");
        } else {
            uint32_t lent = sup_xsk_release_port(s, (int)p, op);
            fprintf(j->out, "XDP program detached from %s, %u buffer%s the kernel held returned\n", op->ifname, lent,
                    lent == 1 ? "" : "s");
        }
    }
    /* The rings of a port that stays: a shaper's that went, the router's
     * to a driver that a new shaper now feeds. */
    int rest = 0, drained = 0;
    for (int k = 0; k < n; k++)
        if (!done[k]) {
            drained += ipc_pool_drain(sup_ring_pool(s, idx[k]), &s->ring_ref[idx[k]]);
            rest++;
        }
    if (rest)
        fprintf(j->out, "%d ring%s of ports that stay released, %d packet%s drained\n", rest, rest == 1 ? "" : "s",
                drained, drained == 1 ? "" : "s");
    for (int k = 0; k < n; k++) {
        struct sup_ring *g = &s->rings[idx[k]];
        ipc_ring_ref_detach(&s->ring_ref[idx[k]]);
        g->sh = NULL;
        close_fd(&g->fd);
    }
    for (int i = 0; i < s->nsvcs; i++)
        if (j->gone[i])
            sup_svc_release(s, &s->svcs[i]);
    compact(s, j);
    sup_state_save(s); /* what a successor would adopt: the services and rings left */
}

/* After the restarts: once the old router and the removed services are
 * gone (and no answer waits on one), their ports are released. False
 * while waiting. */
static bool run_remove(struct sup *s, struct sup_reload *j, uint64_t now)
{
    if (!j->ngone && !j->nretired)
        return true;
    if (!j->gone_t0)
        j->gone_t0 = now;
    int router = sup_reload_svc(s, "router");
    const char *wait = router >= 0 && s->svcs[router].pid > 0 && s->svcs[router].pid == j->router0
                           ? "the router still runs the instance that has their rings"
                           : conn_on_gone(s, j) ? "a command to one of their services waits for its answer" : NULL;
    /* A driver that stays and restarts (a shaper came or went) still reads
     * the ring that goes until its old instance is gone. */
    for (int r = 0; r < s->nrings && !wait; r++)
        for (int e = 0; e < 2 && gone_ring(s, j, r) && !wait; e++) {
            int i = e ? s->rings[r].cons : s->rings[r].prod;
            if (!j->gone[i] && j->rs[i].old > 0 && s->svcs[i].pid == j->rs[i].old)
                wait = "a service that stays still runs the instance that has them";
        }
    for (int i = 0; i < s->nsvcs && !wait; i++)
        if (j->gone[i] && s->svcs[i].state != SUP_ST_DOWN && s->svcs[i].state != SUP_ST_FAILED)
            wait = "a service of theirs has not stopped";
    if (!wait) {
        release_gone(s, j);
        return true;
    }
    if (now - j->gone_t0 < RL_READY_NS)
        return false;
    /* Left as they are until `up` again: released now, they could be in use. */
    j->failed++;
    fprintf(j->out, "removed ports: not released within %llu s: %s\n",
            (unsigned long long)(RL_READY_NS / 1000000000ull), wait);
    return true;
}

/* The uids new ports' services will take must be no one else's (uids.c),
 * as `up` checks for the first ones: asked of the new manifest. */
static bool ids_free(struct sup *s, struct sup_manifest *nm, FILE *f)
{
    if (nm->nservices == s->m.nservices)
        return true;
    struct sup_manifest cur = s->m;
    struct ipc_err err;
    s->m = *nm;
    int ret = sup_ids_resolve(s, &err);
    s->m = cur;
    if (ret < 0)
        fprintf(f, "reload: the new ports' services: %s; nothing changed\n", err.msg);
    return ret == 0;
}

static bool parse_args(struct sup *s, char **argv, int argc, bool *diff, FILE *f)
{
    *diff = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "diff") == 0) {
            *diff = true;
        } else if (strcmp(argv[i], "manifest") == 0 && i + 1 < argc) {
            const char *path = argv[++i];
            if (!s->manifest_path[0] || !same_file(path, s->manifest_path)) {
                fprintf(f, "reload: the supervisor runs %s, not %s: reload reads the file `up` was given (leave "
                           "out -c, or name the socket with -S)\n", s->manifest_name, path);
                return false;
            }
        } else {
            fprintf(f, "reload: unexpected argument \"%s\"\n", strcmp(argv[i], "json") == 0 ? "--json" : argv[i]);
            return false;
        }
    }
    return true;
}

static bool reload_begin(struct sup *s, bool diff, FILE *f, struct sup_ctl_wait *w);

bool sup_ctl_reload(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    bool diff;
    if (!parse_args(s, argv, argc, &diff, f))
        return false;
    bool ok = reload_begin(s, diff, f, w);
    if (!ok && !diff)
        sup_reload_note(s, SUP_RELOAD_REFUSED);
    return ok;
}

static bool reload_begin(struct sup *s, bool diff, FILE *f, struct sup_ctl_wait *w)
{
    const char *cmd = diff ? "check --diff" : "reload";
    if (!diff && s->reload) {
        fprintf(f, "reload: a reload is in progress; try again once it has answered\n");
        return false;
    }
    if (s->shutting_down) {
        fprintf(f, "%s: the supervisor is stopping\n", cmd);
        return false;
    }
    if (!s->manifest_path[0]) {
        fprintf(f, "%s: the supervisor runs the built-in manifest (`up` without -c): there is no file to read "
                   "again\n", cmd);
        return false;
    }
    struct sup_manifest nm;
    struct sup_manifest_err merr;
    if (sup_manifest_load_file(s->manifest_path, &nm, &merr) < 0) {
        fprintf(f, "%s\n%s: the manifest does not check; nothing changed\n", merr.msg, cmd);
        return false;
    }
    return sup_reload_manifest(s, &nm, cmd, diff, f, w);
}

bool sup_reload_manifest(struct sup *s, struct sup_manifest *nmp, const char *cmd, bool diff, FILE *f,
                         struct sup_ctl_wait *w)
{
    struct sup_manifest nm = *nmp;
    if (!diff && s->reload) {
        fprintf(f, "%s: a reload is in progress; try again once it has answered\n", cmd);
        sup_manifest_free(&nm);
        return false;
    }
    sup_reload_carry(&s->m, &nm);
    char why[600];
    if (sup_reload_slots(&s->m, &nm, why, sizeof(why)) || sup_vlan_reload_refused(&s->m, &nm, why, sizeof(why)) ||
        sup_group_reload_refused(&s->m, &nm, why, sizeof(why)) ||
        sup_reload_refused(s, &s->m, &nm, why, sizeof(why)) ||
        sup_zones_reload_refused(&s->m, &nm, why, sizeof(why)) || sup_cp_reload_refused(&s->m, &nm, why, sizeof(why)) ||
        sup_filter_reload_refused(&s->m, &nm, why, sizeof(why))) {
        fprintf(f, "%s: needs `ringrouter up` again: %s; nothing changed\n", cmd, why);
        sup_manifest_free(&nm);
        return false;
    }
    if ((!diff && !ids_free(s, &nm, f)) || !sup_trust_reload(s, &nm, cmd, f)) {
        sup_manifest_free(&nm);
        return false;
    }
    int new_rules = sup_filter_reload_check(s, &nm, cmd, f); /* the rules file is read again */
    if (new_rules < 0) {
        sup_manifest_free(&nm);
        return false;
    }
    if (diff) {
        struct rl_restart rs[SUP_MAX_SERVICES];
        memset(rs, 0, sizeof(rs));
        struct rl_ctx c = {.s = s, .o = &s->m, .n = &nm, .f = f, .rs = rs};
        sup_reload_walk(&c);
        unsigned nrs = 0;
        for (int i = 0; i < s->nsvcs; i++)
            nrs += rs[i].on;
        if (new_rules > 0) {
            fprintf(f, "[filter] rules: changed: rr-filter restarts on them, its connections kept\n");
            c.changes++;
        }
        if (c.changes == 0)
            fprintf(f, "no change");
        else
            fprintf(f, "%u change%s, %u restart%s", c.changes, c.changes == 1 ? "" : "s", nrs, nrs == 1 ? "" : "s");
        if (c.overrides)
            fprintf(f, "; %u rate%s set at run time stay%s (above)", c.overrides, c.overrides == 1 ? "" : "s",
                    c.overrides == 1 ? "s" : "");
        fprintf(f, "\n");
        sup_manifest_free(&nm);
        return true;
    }

    struct sup_reload *j = calloc(1, sizeof(*j));
    if (j) {
        j->gave_up = -1;
        snprintf(j->cmd, sizeof(j->cmd), "%s", cmd);
        j->out = open_memstream(&j->text, &j->len);
    }
    if (!j || !j->out) {
        job_free(j);
        sup_manifest_free(&nm);
        fprintf(f, "%s: out of memory; nothing changed\n", cmd);
        return false;
    }
    /* From here on the new manifest is the running one: every service has
     * its entry in it (by name: a new port's services come before the
     * shapers), and the ports the old one had keep their slots. */
    j->old = malloc(sizeof(*j->old));
    if (!j->old) {
        job_free(j);
        sup_manifest_free(&nm);
        fprintf(f, "%s: out of memory; nothing changed\n", cmd);
        return false;
    }
    /* The last refusal: a device that does not take its new MTU. */
    if (!sup_live_mtu(s, &s->m, &nm, cmd, f)) {
        free(j->old);
        j->old = NULL;
        job_free(j);
        sup_manifest_free(&nm);
        return false;
    }
    /* Under systemd a reload is RELOADING=1 ... READY=1 (sd_notify(3)); READY=1
     * comes from finish(). A refused one sends neither: READY=1 would tell
     * systemd a reload had been done, and the refusal is the answer of
     * `ringrouter reload`, which the unit's ExecReload= runs and fails with. */
    sup_notify_reloading();
    *j->old = s->m;
    s->m = nm;
    /* A removed port's services run on their old entries until released. */
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        int k = sup_manifest_service(&s->m, v->name);
        if (k < 0) {
            v->m = &j->old->services[sup_manifest_service(j->old, v->name)];
            j->gone[i] = true;
            j->ngone++;
            continue;
        }
        v->m = &s->m.services[k];
        sup_svc_binary(s, v);
    }
    int router = sup_reload_svc(s, "router");
    j->router0 = router >= 0 ? s->svcs[router].pid : 0;
    add_ports(s, j);
    struct rl_ctx c = {.s = s, .o = j->old, .n = &s->m, .f = j->out, .job = j, .rs = j->rs};
    sup_reload_walk(&c);
    add_connected(s, j);
    if (j->ngone)
        retire_services(s, j);
    reload_shapers(s, j);
    reload_vlans(s, j);
    if (new_rules > 0 && sup_filter_reload_apply(s, j->out) == 0) { /* restarted and waited for as the rest */
        sup_reload_restart(&c, "filter", "[filter] rules changed");
        c.changes++;
    } else if (new_rules > 0) {
        c.failed++;
    }
    j->changes = c.changes;
    j->failed += c.failed;
    sup_retick(s);
    for (int i = 0; i < s->nsvcs; i++)
        if (j->rs[i].on && !j->rs[i].fresh)
            prepare_restart(s, j, i);
    if (c.changes == 0)
        fprintf(j->out, "no change\n");
    j->phase = RL_RESTARTS;
    s->reload = j;
    sup_log("%s: %s: %u change%s", cmd, s->manifest_name, c.changes, c.changes == 1 ? "" : "s");
    if (w) {
        j->conn = true;
        *w = (struct sup_ctl_wait){.pending = true, .kind = SUP_WAIT_RELOAD};
    }
    return true;
}

void sup_reload_signal(struct sup *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        sup_err("Hangup: cannot reload: out of memory");
        return;
    }
    sup_log("Hangup: reloading %s", s->manifest_name);
    bool ok = sup_ctl_reload(s, NULL, 0, f, NULL);
    fclose(f);
    if (!ok)
        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
            sup_err("%s", l); /* a reload refused: nothing changed */
    free(text);
}

/* Every line of the answer into the log too, then the answer is ready. */
static void finish(struct sup *s, struct sup_reload *j)
{
    if (j->failed)
        fprintf(j->out, "%s: %u change%s, %u not applied (above)\n", j->cmd, j->changes, j->changes == 1 ? "" : "s",
                j->failed);
    else
        fprintf(j->out, "%s: done, %u change%s\n", j->cmd, j->changes, j->changes == 1 ? "" : "s");
    fflush(j->out);
    char *copy = strndup(j->text, j->len);
    for (char *save = NULL, *l = copy ? strtok_r(copy, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save))
        sup_log("%s%s%s", strncmp(l, j->cmd, strlen(j->cmd)) == 0 ? "" : j->cmd,
                strncmp(l, j->cmd, strlen(j->cmd)) == 0 ? "" : ": ", l);
    free(copy);
    j->ok = j->failed == 0;
    sup_reload_note(s, j->ok ? SUP_RELOAD_OK : SUP_RELOAD_PARTIAL);
    j->phase = RL_DONE;
    sup_notify_reloaded();
    if (!j->conn) {
        job_free(j);
        s->reload = NULL;
    }
}

/* The mailbox commands, in order. False while one is under way. */
static bool run_ops(struct sup *s, struct sup_reload *j, uint64_t now)
{
    while (j->next < j->nops) {
        struct rl_op *op = &j->ops[j->next];
        struct sup_svc *v = &s->svcs[op->svc];
        if (!j->sent) {
            if (!j->since)
                j->since = now;
            if (v->state != SUP_ST_UP) {
                /* A command is taken by a running service: a down one
                 * would leave it in the mailbox, where the next would
                 * find it untaken. */
                if (now - j->since < RL_OP_WAIT_NS && j->gave_up != op->svc)
                    return false;
                j->gave_up = op->svc;
                fprintf(j->out, "%s is %s: %s not applied\n", v->name, sup_state_name(v->state),
                        op->neigh ? "a neighbour change" : "a rate");
                j->failed++;
            } else {
                char *argv[7];
                for (int k = 0; k < op->nw; k++)
                    argv[k] = op->w[k];
                bool ok = op->neigh && op->v6 ? sup_neigh6_cmd(s, op->nop, op->ip6, op->port, op->mac, j->out, &j->w)
                          : op->neigh         ? sup_neigh_cmd(s, op->nop, op->ip, op->port, op->mac, j->out, &j->w)
                                              : sup_ctl_shaper(s, argv, op->nw, j->out, &j->w);
                if (ok && j->w.pending) {
                    j->sent = true;
                    continue;
                }
                j->failed += !ok;
            }
        } else {
            bool ok;
            bool done = j->w.kind == SUP_WAIT_NEIGH ? sup_neigh_poll(s, &j->w, now, j->out, &ok)
                                                    : sup_shaper_set_poll(s, &j->w, now, j->out, &ok);
            if (!done)
                return false;
            j->failed += !ok;
            j->sent = false;
        }
        j->since = 0;
        j->next++;
    }
    return true;
}

/* The restarts. False while one is under way. */
static bool run_restarts(struct sup *s, struct sup_reload *j, uint64_t now)
{
    bool pending = false;
    for (int i = 0; i < s->nsvcs; i++) {
        struct rl_restart *r = &j->rs[i];
        struct sup_svc *v = &s->svcs[i];
        if (!r->on)
            continue;
        if (!r->t0)
            r->t0 = now;
        if (!r->fired) {
            bool waiting = v->state == SUP_ST_STOPPING ||
                           (v->state == SUP_ST_UP && v->sb_pid > 0 && !v->sb_parked);
            if (waiting && now - r->t0 < RL_PARK_NS) {
                pending = true;
                continue;
            }
            if (r->fresh) {
                sup_log("%s: starting for the reload: its port is new", v->name);
                fprintf(j->out, "starting %s\n", v->name);
            } else {
                sup_log("%s: restarting for the reload: %s", v->name, r->why);
                fprintf(j->out, "restarting %s (pid %d)%s\n", v->name, (int)v->pid,
                        v->sb_parked ? " through its warm standby" : "");
            }
            sup_event(s, v, SUP_EV_RESTART, 0);
            r->fired = true;
            r->t0 = now;
            pending = true;
            continue;
        }
        if (v->state == SUP_ST_UP && v->pid != r->old) {
            fprintf(j->out, "%s: ready, pid %d\n", v->name, (int)v->pid);
            r->on = false;
        } else if (now - r->t0 >= RL_READY_NS) {
            fprintf(j->out, "%s: not ready within %llu s of its restart (%s)\n", v->name,
                    (unsigned long long)(RL_READY_NS / 1000000000ull), sup_state_name(v->state));
            j->failed++;
            r->on = false;
        } else {
            pending = true;
        }
    }
    return !pending;
}

void sup_reload_tick(struct sup *s, uint64_t now)
{
    struct sup_reload *j = s->reload;
    if (!j || j->phase == RL_DONE)
        return;
    if (s->shutting_down) {
        /* Nothing may start now: the loop ends once every service is down. */
        fprintf(j->out, "reload: the supervisor is stopping; what is left of the reload is not applied\n");
        j->failed++;
        finish(s, j);
        return;
    }
    if (j->phase == RL_RESTARTS) {
        if (!run_restarts(s, j, now))
            return;
        j->phase = RL_REMOVE;
    }
    if (j->phase == RL_REMOVE) {
        if (!run_remove(s, j, now))
            return;
        j->phase = RL_OPS;
    }
    if (run_ops(s, j, now))
        finish(s, j);
}

bool sup_reload_poll(struct sup *s, struct sup_ctl_wait *w, FILE *f, bool *ok)
{
    struct sup_reload *j = s->reload;
    if (j && j->phase != RL_DONE)
        return false;
    if (j) {
        fwrite(j->text, 1, j->len, f);
        *ok = j->ok;
        job_free(j);
        s->reload = NULL;
    } else {
        fprintf(f, "reload: its state is gone\n");
        *ok = false;
    }
    w->pending = false;
    return true;
}

void sup_reload_end(struct sup *s)
{
    job_free(s->reload);
    s->reload = NULL;
}
