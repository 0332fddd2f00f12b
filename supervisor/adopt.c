/* SPDX-License-Identifier: MIT */
/*
 * supervisor/adopt.c: services outlive their supervisor, and the next one
 * adopts them (issue 18, "forwarding survives the supervisor").
 *
 * While it runs, the supervisor keeps a state file, run_dir/state (root's,
 * 0600, written whole and renamed into place): the manifest's hash, the
 * layout stamp, the ports' slots (port_slots.c: a reload may have left
 * one vacant), each service's pid and the kernel's start time of that pid,
 * and its own trusted copies of what services can write (the pool's header,
 * each ring's geometry and owners, each stats region's header). It is
 * written when a standby takes over or a service becomes ready (a new
 * pid) and removed at a clean exit. A supervisor killed, crashed or
 * re-exec'd (`upgrade supervisor`) leaves it behind, and its services
 * forward on: nothing on their data path needs it.
 *
 * `up` then finds the file and, when it was written for this very manifest
 * and layout, and every pid in it is the process that was started (the
 * start time guards against a reused pid), adopts:
 *   - every shared object is taken from the service that holds it, at the
 *     fixed fd numbers of the service fd layout (setup.c), with
 *     pidfd_getfd(2): the pool, each ring, each service's eventfd and stats
 *     region, a shaper's mailbox, a TAP device or an AF_XDP socket (and
 *     the steering program left on its device: xsk.c), the neighbour
 *     tables;
 *   - each is checked as a new service checks it when it maps it, then held
 *     to the file's trusted copies (policy.c's repairs);
 *   - the FIBs are not taken: they are sealed against writes (tables/fib.h),
 *     so no one but the supervisor that made them can ever change them. The
 *     new supervisor builds new ones from the manifest plus every route it
 *     reads from the old ones (runtime routes stay runtime), and hands the
 *     router over to its standby, which maps them: a planned restart, which
 *     loses nothing (bench/upgrade);
 *   - each service is watched through a pidfd (not our child unless we are
 *     its re-exec'd parent: its exit status is then unknown) and gets a
 *     standby.
 * Anything that does not hold ends every service the file names (by pidfd,
 * after the start-time check) and starts afresh, saying why.
 *
 * Services notice a silent supervisor by its pulse in their stats region
 * (ipc_svc_orphan_check) and stop after [router] orphan_grace_ms.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor/adopt.h"
#include "supervisor/port_slots.h"
#include "supervisor/route6.h"
#include "supervisor/route_multi.h"
#include "tables/layout.h"

#define STATE_FILE "state"
#define STATE_MAGIC 0x5252535455504552ull /* "REPUTSRR" */
/* 2: planned restarts and ready_ns; 3: trust zones' pools; 4: restarts by cause; 5: port slots */
#define STATE_VERSION 5

struct state_svc {
    char name[SUP_SERVICE_MAX + 1];
    int32_t pid;
    uint64_t start_ticks; /* /proc/PID/stat field 22 */
    uint16_t owner;
    uint32_t kind;
    uint32_t uid, gid; /* a reload that removed a service before it leaves these off its index's */
    uint32_t restarts, planned;
    uint32_t by_cause[SUP_NCAUSES]; /* restarts_by: the metrics' counters go on across an adoption */
    uint64_t ready_ns; /* CLOCK_MONOTONIC, the machine's: the same boot, as the pid's start time proves */
    struct ipc_shm_hdr stats_shm;
    char binary[300];
    char build[SUP_BUILD_ID_MAX];
    int64_t started;
};

struct state_ring {
    struct ipc_shm_hdr shm;
    uint32_t size;
    uint16_t prod_owner, cons_owner;
    char name[40];
};

struct state_file {
    uint64_t magic;
    uint32_t version, size;
    char layout[256];
    uint64_t manifest_hash;
    struct ipc_pool_hdr pool_hdr;
    uint32_t nzones; /* trust zones (supervisor/zones.h): zone_hdr[1 .. nzones - 1] */
    struct ipc_pool_hdr zone_hdr[IPC_MAX_ZONES];
    uint32_t nsvcs, nrings;
    struct state_svc svc[SUP_MAX_SERVICES];
    struct state_ring ring[SUP_MAX_RINGS];
    struct sup_slots slots; /* the running ports' slots, which the services' configs name (port_slots.c) */
    uint64_t sum; /* FNV-1a of everything before it */
};

struct sup_adopt {
    struct state_file st;
    int pidfd[SUP_MAX_SERVICES];
    struct sup_pace pace; /* the FIB rebuild yields to the services it adopts (sched_self.c) */
};

static uint64_t fnv(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* For the log: the file itself is reached through run_dir's fd (rundir.c). */
static void state_path(const struct sup *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s/" STATE_FILE, s->m.router.run_dir);
}

/* The kernel's start time of @pid, in clock ticks since boot: with the pid,
 * it names one process for the machine's uptime. 0 if it is gone. */
static uint64_t start_ticks(pid_t pid)
{
    char path[40], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command may hold spaces and ')' */
    if (!p)
        return 0;
    /* After ") ": state is field 3; starttime is field 22. */
    int field = 2;
    for (p++; *p && field < 22; p++)
        if (*p == ' ')
            field++;
    return field == 22 ? strtoull(p, NULL, 10) : 0;
}

void sup_state_save(struct sup *s)
{
    struct state_file *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    f->magic = STATE_MAGIC;
    f->version = STATE_VERSION;
    f->size = sizeof(*f);
    snprintf(f->layout, sizeof(f->layout), "%s", tbl_layout_stamp);
    f->manifest_hash = s->m.text_hash;
    s->state_hash = s->m.text_hash;
    memcpy(&f->pool_hdr, &s->pool_hdr, sizeof(f->pool_hdr));
    f->nzones = s->nzones;
    memcpy(f->zone_hdr, s->zone_hdr, sizeof(f->zone_hdr));
    f->nsvcs = (uint32_t)s->nsvcs;
    f->nrings = (uint32_t)s->nrings;
    for (int i = 0; i < s->nsvcs; i++) {
        const struct sup_svc *v = &s->svcs[i];
        struct state_svc *o = &f->svc[i];
        snprintf(o->name, sizeof(o->name), "%s", v->name);
        o->pid = v->pid > 0 && (v->state == SUP_ST_UP || v->state == SUP_ST_STARTING) ? v->pid : 0;
        o->start_ticks = o->pid ? start_ticks(v->pid) : 0;
        o->owner = v->owner;
        o->kind = v->kind;
        o->uid = v->uid;
        o->gid = v->gid;
        o->restarts = v->restarts;
        o->planned = v->planned;
        for (int c = 0; c < SUP_NCAUSES; c++)
            o->by_cause[c] = v->restarts_by[c];
        o->ready_ns = v->state == SUP_ST_UP ? v->ready_ns : 0;
        o->stats_shm = v->stats_shm;
        memcpy(o->binary, v->run_binary, sizeof(o->binary));
        memcpy(o->build, v->run_build, sizeof(o->build));
        o->started = (int64_t)v->run_started;
    }
    for (int i = 0; i < s->nrings; i++) {
        const struct ipc_ring_ref *r = &s->ring_ref[i];
        f->ring[i] = (struct state_ring){.shm = r->shm, .size = r->size, .prod_owner = r->prod_owner,
                                         .cons_owner = r->cons_owner};
        memcpy(f->ring[i].name, r->name, sizeof(f->ring[i].name));
    }
    sup_slots_save(&s->m, &f->slots);
    f->sum = fnv(f, offsetof(struct state_file, sum));

    char path[SUP_PATH_MAX + 16];
    state_path(s, path, sizeof(path));
    int fd = openat(s->run_fd, STATE_FILE ".new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, f, sizeof(*f)) == (ssize_t)sizeof(*f);
    if (fd >= 0)
        close(fd);
    if (!ok || renameat(s->run_fd, STATE_FILE ".new", s->run_fd, STATE_FILE) < 0) {
        sup_warn("state file %s: %s; a supervisor started after this one dies could not adopt the services",
                 path, strerror(errno));
        unlinkat(s->run_fd, STATE_FILE ".new", 0);
    }
    free(f);
}

void sup_state_remove(struct sup *s)
{
    unlinkat(s->run_fd, STATE_FILE, 0);
}

/* Read and check the state file into @f: 1, 0 if there is none, or -errno
 * with @err (the file is then removed: it names nothing we can trust). */
static int state_read(struct sup *s, struct state_file *f, struct ipc_err *err)
{
    char path[SUP_PATH_MAX + 16];
    state_path(s, path, sizeof(path));
    int fd = openat(s->run_fd, STATE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : ipc_errf(err, -errno, "%s: %s", path, strerror(errno));
    struct stat st;
    int ret = 0;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077))
        ret = ipc_errf(err, -EPERM, "%s: not a file of root's alone (owner, mode); ignored", path);
    else if (st.st_size != (off_t)sizeof(*f) || read(fd, f, sizeof(*f)) != (ssize_t)sizeof(*f))
        ret = ipc_errf(err, -EPROTO, "%s: %lld bytes, not a state file of this build (%zu)", path,
                       (long long)st.st_size, sizeof(*f));
    else if (f->magic != STATE_MAGIC || f->version != STATE_VERSION || f->size != sizeof(*f) ||
             f->sum != fnv(f, offsetof(struct state_file, sum)))
        ret = ipc_errf(err, -EPROTO, "%s: not a state file of this build (magic, version or checksum)", path);
    else if (f->nsvcs > SUP_MAX_SERVICES || f->nrings > SUP_MAX_RINGS)
        ret = ipc_errf(err, -EPROTO, "%s: %u services and %u rings is more than a supervisor has", path, f->nsvcs,
                       f->nrings);
    close(fd);
    if (ret < 0)
        unlinkat(s->run_fd, STATE_FILE, 0);
    return ret < 0 ? ret : 1;
}

/* End every service the file names that is still the process it started
 * as: nothing can be adopted, and they hold the devices a fresh start needs. */
static void end_orphans(const struct state_file *f)
{
    for (uint32_t i = 0; i < f->nsvcs; i++) {
        const struct state_svc *o = &f->svc[i];
        if (o->pid <= 0)
            continue;
        int pfd = (int)syscall(SYS_pidfd_open, o->pid, 0);
        if (pfd < 0)
            continue;
        if (o->start_ticks && start_ticks(o->pid) == o->start_ticks) {
            syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
            struct pollfd p = {.fd = pfd, .events = POLLIN};
            poll(&p, 1, 2000); /* gone, its fds closed, its TAP released */
            siginfo_t si;
            waitid((idtype_t)P_PIDFD, (id_t)pfd, &si, WEXITED | WNOHANG); /* ours if we were re-exec'd */
            sup_log("adoption: ended %s (pid %d)", o->name, (int)o->pid);
        }
        close(pfd);
    }
}

static void adopt_free(struct sup *s)
{
    if (!s->adopt)
        return;
    for (int i = 0; i < SUP_MAX_SERVICES; i++)
        if (s->adopt->pidfd[i] >= 0)
            close(s->adopt->pidfd[i]);
    free(s->adopt);
    s->adopt = NULL;
}

int sup_adopt_begin(struct sup *s, struct ipc_err *err)
{
    struct sup_adopt *a = calloc(1, sizeof(*a));
    if (!a)
        return ipc_errf(err, -ENOMEM, "out of memory");
    for (int i = 0; i < SUP_MAX_SERVICES; i++)
        a->pidfd[i] = -1;
    int ret = state_read(s, &a->st, err);
    if (ret <= 0) {
        free(a);
        return ret;
    }
    const struct state_file *f = &a->st;
    const char *why = NULL;
    char whybuf[400];
    if (strncmp(f->layout, tbl_layout_stamp, sizeof(f->layout)) != 0) {
        snprintf(whybuf, sizeof(whybuf), "they share memory as \"%.80s\", this supervisor as \"%.80s\"", f->layout,
                 tbl_layout_stamp);
        why = whybuf;
    } else if (f->manifest_hash != s->m.text_hash) {
        why = "they were started from another manifest (or another version of it): start them from this one";
    } else if (f->nsvcs != s->m.nservices) {
        why = "the state file names another set of services";
    }
    for (uint32_t i = 0; !why && i < f->nsvcs; i++) {
        const struct state_svc *o = &f->svc[i];
        if (strncmp(o->name, s->m.services[i].name, sizeof(o->name)) != 0) {
            why = "the state file names another set of services";
            break;
        }
        if (o->pid <= 0) {
            snprintf(whybuf, sizeof(whybuf), "%.32s was not running when the state was saved", o->name);
            why = whybuf;
            break;
        }
        a->pidfd[i] = (int)syscall(SYS_pidfd_open, o->pid, 0);
        if (a->pidfd[i] < 0 || !o->start_ticks || start_ticks(o->pid) != o->start_ticks) {
            snprintf(whybuf, sizeof(whybuf), "%.32s (pid %d) is gone", o->name, (int)o->pid);
            why = whybuf;
        }
    }
    /* The file lists the ports in its own order; the services know them by
     * the slots a reload may have moved them to. */
    if (!why && sup_slots_restore(&s->m, &f->slots) < 0)
        why = "the state file's ports are not the manifest's";
    s->adopt = a;
    if (why) {
        ret = ipc_errf(err, -ESRCH, "cannot adopt the running services: %s; ending them and starting afresh", why);
        sup_adopt_fail(s);
        return ret;
    }
    sup_log("adopting %u running services (state file %s/" STATE_FILE ")", f->nsvcs, s->m.router.run_dir);
    return 1;
}

void sup_adopt_fail(struct sup *s)
{
    if (!s->adopt)
        return;
    end_orphans(&s->adopt->st);
    sup_state_remove(s);
    adopt_free(s);
}

int sup_adopt_fd(struct sup *s, int svc, int target, const char *what, struct ipc_err *err)
{
    int fd = (int)syscall(SYS_pidfd_getfd, s->adopt->pidfd[svc], target, 0);
    if (fd < 0)
        return ipc_errf(err, -errno, "adoption: %s from %s (pid %d, fd %d): %s", what, s->adopt->st.svc[svc].name,
                        (int)s->adopt->st.svc[svc].pid, target, strerror(errno));
    return fd;
}

int sup_adopt_svc(struct sup *s, struct sup_svc *v, int idx, int fd_wake, int fd_stats, int fd_mbox,
                  struct ipc_err *err)
{
    const struct state_svc *o = &s->adopt->st.svc[idx];
    if (o->kind != v->kind)
        return ipc_errf(err, -EPROTO, "adoption: %s: kind %u in the state file, %u here", v->name, o->kind, v->kind);
    /* The running instance's owner id and uid, which are its index's only
     * until a reload removes a service before it (reload.c, free_slot). */
    v->owner = o->owner;
    v->uid = o->uid;
    v->gid = o->gid;
    int ret;
    if ((v->wake_fd = sup_adopt_fd(s, idx, fd_wake, "its eventfd", err)) < 0)
        return v->wake_fd;
    if ((v->stats_fd = sup_adopt_fd(s, idx, fd_stats, "its stats region", err)) < 0)
        return v->stats_fd;
    if ((ret = ipc_stats_attach(v->stats_fd, &v->stats, err)) < 0)
        return ret;
    v->stats_shm = o->stats_shm;
    if (v->kind == IPC_SVC_SHAPER) {
        if ((v->mbox_fd = sup_adopt_fd(s, idx, fd_mbox, "its mailbox", err)) < 0)
            return v->mbox_fd;
        if ((ret = shp_mbox_attach(v->mbox_fd, &v->mbox, err)) < 0)
            return ret;
        v->mbox_seq = ipc_ld_rlx(&v->mbox->seq); /* ours to write; checked at the next command */
    }
    return 0;
}

int sup_adopt_ring(struct sup *s, int r, int holder, int fd, struct ipc_err *err)
{
    struct sup_ring *ring = &s->rings[r];
    const struct state_ring *o = &s->adopt->st.ring[r];
    if ((uint32_t)r >= s->adopt->st.nrings || strncmp(o->name, ring->name, sizeof(o->name)) != 0)
        return ipc_errf(err, -EPROTO, "adoption: ring %s is not in the state file", ring->name);
    char what[64];
    snprintf(what, sizeof(what), "ring %s", ring->name);
    if ((ring->fd = sup_adopt_fd(s, holder, fd, what, err)) < 0)
        return ring->fd;
    int ret = ipc_ring_attach(ring->fd, &ring->sh, err);
    if (ret < 0)
        return ret;
    struct ipc_ring_ref *ref = &s->ring_ref[r];
    *ref = (struct ipc_ring_ref){.sh = ring->sh, .shm = o->shm, .size = o->size, .prod_owner = o->prod_owner,
                                 .cons_owner = o->cons_owner};
    memcpy(ref->name, o->name, sizeof(ref->name));
    if (ref->size != ring->sh->size || ref->prod_owner != s->svcs[ring->prod].owner ||
        ref->cons_owner != s->svcs[ring->cons].owner)
        return ipc_errf(err, -EPROTO, "adoption: ring %s: size %u, owners %u -> %u; the state file says %u, %u -> %u",
                        ring->name, ring->sh->size, ring->sh->prod_owner, ring->sh->cons_owner, ref->size,
                        ref->prod_owner, ref->cons_owner);
    return 0;
}

int sup_adopt_pool(struct sup *s, int fd_pool, struct ipc_err *err)
{
    /* Zone 0's pool from the router, which maps every zone's at the same
     * numbers (a driver's fd_pool is its own zone's). */
    int from = 0;
    for (uint32_t i = 0; i < s->adopt->st.nsvcs && i < SUP_MAX_SERVICES; i++)
        if (strcmp(s->adopt->st.svc[i].name, "router") == 0)
            from = (int)i;
    if ((s->pool_fd = sup_adopt_fd(s, from, fd_pool, "the pool", err)) < 0)
        return s->pool_fd;
    int ret = ipc_pool_attach(&s->pool, s->pool_fd, IPC_OWNER_SUPERVISOR, err);
    if (ret < 0)
        return ret;
    memcpy(&s->pool_hdr, &s->adopt->st.pool_hdr, sizeof(s->pool_hdr));
    if (s->pool_hdr.nbufs != s->pool.nbufs || s->pool_hdr.frame_size != s->pool.frame_size)
        return ipc_errf(err, -EPROTO, "adoption: the pool has %u buffers of %u bytes; the state file says %u of %u",
                        s->pool.nbufs, s->pool.frame_size, s->pool_hdr.nbufs, s->pool_hdr.frame_size);
    return 0;
}

int sup_adopt_zone_hdr(struct sup *s, unsigned z, struct ipc_err *err)
{
    const struct state_file *f = &s->adopt->st;
    if (f->nzones != s->nzones || z >= IPC_MAX_ZONES)
        return ipc_errf(err, -EPROTO, "adoption: the manifest has %u trust zones; the state file says %u", s->nzones,
                        f->nzones);
    const struct ipc_pool *pool = &s->zone_pool[z];
    memcpy(&s->zone_hdr[z], &f->zone_hdr[z], sizeof(s->zone_hdr[z]));
    if (s->zone_hdr[z].nbufs != pool->nbufs || s->zone_hdr[z].frame_size != pool->frame_size)
        return ipc_errf(err, -EPROTO, "adoption: zone %u's pool has %u buffers of %u bytes; the state file says %u of %u",
                        z, pool->nbufs, pool->frame_size, s->zone_hdr[z].nbufs, s->zone_hdr[z].frame_size);
    return 0;
}

/* Old FIBs' routes into the new ones: what the manifest and the connected
 * networks did not put there was added at run time, and stays so. */
static int keep_route4(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh, const uint16_t *w, unsigned n)
{
    struct sup *s = arg;
    struct fib_nh have;
    sup_pace(&s->adopt->pace);
    if (fib_get(&s->fib, addr, len, &have) == 0)
        return 0;
    if (fib_add_multi(&s->fib, addr, len, nh, w, n) == 0) /* a group's members: supervisor/route_multi.h */
        sup_route_keep_mp(s, addr, len, nh, w, n);
    return 0;
}

static int keep_route6(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh, const uint16_t *w,
                       unsigned n)
{
    struct sup *s = arg;
    struct fib6_nh have;
    sup_pace(&s->adopt->pace);
    if (fib6_get(&s->fib6, addr, len, &have) != 0 && fib6_add_multi(&s->fib6, addr, len, nh, w, n) == 0)
        sup_route6_keep_mp(s, addr, len, nh, w, n);
    return 0;
}

/* The old FIBs' last references, once the old supervisor is gone, are
 * this fd and the adopted router's mappings: if the router's exit dropped
 * the last one, it would free their pages (tens of MB) in the exit that
 * its standby waits for, with the path stopped. So we hold them until
 * that router is gone (sup_old_fibs_tick). */
static void old_fib_keep(struct sup *s, int fd, pid_t reader)
{
    if (s->n_old_fibs >= 2 || reader <= 0) {
        close(fd);
        return;
    }
    s->old_fib_fd[s->n_old_fibs++] = fd;
    s->old_fib_reader = reader;
}

int sup_adopt_routes(struct sup *s, int router, int fd_fib, int fd_fib6, struct ipc_err *err)
{
    int fd = sup_adopt_fd(s, router, fd_fib, "the FIB", err);
    if (fd < 0)
        return fd;
    struct sup_pace *pace = &s->adopt->pace;
    for (uint32_t i = 0; i < s->adopt->st.nsvcs && pace->npid < SUP_MAX_SERVICES; i++)
        pace->pid[pace->npid++] = s->adopt->st.svc[i].pid;
    bool dirty = false;
    int ret = fib_snapshot_multi(fd, keep_route4, s, &dirty, err);
    old_fib_keep(s, fd, s->adopt->st.svc[router].pid);
    if (ret < 0)
        return ret;
    bool dirty6 = false;
    if ((fd = sup_adopt_fd(s, router, fd_fib6, "the IPv6 FIB", err)) < 0)
        return fd;
    ret = fib6_snapshot_multi(fd, keep_route6, s, &dirty6, err);
    old_fib_keep(s, fd, s->adopt->st.svc[router].pid);
    if (ret < 0)
        return ret;
    if (dirty || dirty6)
        sup_warn("adoption: the old supervisor died inside a route change; that change may be missing");
    fib_reclaim(&s->fib);
    fib6_reclaim(&s->fib6);
    sup_log("adoption: new FIBs with %zu runtime routes from the old ones (%u pauses for the services); the router "
            "moves to them through its standby", s->n_rt_routes + s->n_rt6_routes, pace->naps);
    return 0;
}

void sup_adopt_commit(struct sup *s)
{
    uint64_t now = sup_now_ns();
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        const struct state_svc *o = &s->adopt->st.svc[i];
        v->pid = o->pid;
        v->pidfd = s->adopt->pidfd[i];
        s->adopt->pidfd[i] = -1;
        v->state = SUP_ST_UP;
        /* Up since it was ready, not since we adopted it: `status` says
         * UPTIME from ready_ns and STARTED from run_started, which must
         * agree across a re-exec. */
        v->ready_ns = v->started_ns = o->ready_ns && o->ready_ns <= now ? o->ready_ns : now;
        v->last_beat = ipc_ld_rlx(&v->stats->heartbeat);
        v->last_beat_ns = now;
        v->restarts = o->restarts;
        v->planned = o->planned;
        for (int c = 0; c < SUP_NCAUSES; c++)
            v->restarts_by[c] = o->by_cause[c];
        memcpy(v->run_binary, o->binary, sizeof(v->run_binary));
        v->run_binary[sizeof(v->run_binary) - 1] = '\0';
        memcpy(v->run_build, o->build, sizeof(v->run_build));
        v->run_build[sizeof(v->run_build) - 1] = '\0';
        v->run_started = (time_t)o->started;
        v->adopted = true;
        sup_shared_repair(s, v); /* whatever was written while no one watched */
    }
    s->router_handover = true;
    adopt_free(s);
}


void sup_reexec(struct sup *s)
{
    s->upgrade_self = false;
    const char *bin = s->upgrade_self_binary;
    sup_log("supervisor: re-exec'ing %s; the services forward on", bin);
    /* A standby waits on a pipe whose end the exec closes: it would exit
     * unwatched. The new image spawns its own. */
    for (int i = 0; i < s->nsvcs; i++)
        sup_standby_dismiss(s, &s->svcs[i]);
    sup_state_save(s);
    /* The services' binaries stay where they were found, whatever
     * directory the new supervisor's file is in. */
    if (!getenv("RINGROUTER_BINDIR"))
        setenv("RINGROUTER_BINDIR", s->bindir, 1);
    /* Only stdin, stdout and stderr cross: every object the new image needs
     * it takes from the services. The signal mask stays: a SIGTERM that
     * comes meanwhile waits for its signalfd. */
    syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
    char *argv[] = {"ringrouter", "up", "-c", s->manifest_path, NULL};
    if (!s->manifest_path[0])
        argv[2] = NULL; /* the built-in manifest */
    extern char **environ;
    execve(bin, argv, environ);
    sup_err("supervisor: re-exec of %s failed: %s; this one carries on", bin, strerror(errno));
    uint64_t now = sup_now_ns();
    for (int i = 0; i < s->nsvcs; i++)
        s->svcs[i].sb_retry_ns = now;
}
