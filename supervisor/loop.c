/* SPDX-License-Identifier: MIT */
/*
 * supervisor/loop.c: the supervisor's one blocking point. A single epoll
 * covers the signalfd (SIGTERM and SIGINT stop everything, SIGHUP reloads
 * the manifest: reload.c), the timerfd that drives hang
 * checks and restart deadlines, the control socket, each running service's
 * pidfd and, while it starts, its readiness pipe, and every instance's
 * stderr (svclog.c).
 */
#include "supervisor/sup.h"
#include "supervisor/capture.h"
#include "supervisor/zones.h"
#include "supervisor/adopt.h"
#include "supervisor/inject.h"
#include "supervisor/notify.h"
#include "supervisor/reload.h"
#include "supervisor/routes.h"
#include "supervisor/svclog.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


static int ep_add(struct sup *s, int fd, uint64_t key)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = key};
    return epoll_ctl(s->ep_fd, EPOLL_CTL_ADD, fd, &ev);
}

int sup_watch(struct sup *s, struct sup_svc *v)
{
    int idx = (int)(v - s->svcs);
    /* A promoted standby's pidfd is in the set already. */
    if (ep_add(s, v->pidfd, SUP_POLL_KEY(SUP_POLL_PIDFD, idx)) < 0 && errno != EEXIST)
        return -errno;
    if (v->notify_fd >= 0 && ep_add(s, v->notify_fd, SUP_POLL_KEY(SUP_POLL_NOTIFY, idx)) < 0) {
        /* A standby promoted before it said it was parked: re-key its pipe. */
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SUP_POLL_KEY(SUP_POLL_NOTIFY, idx)};
        if (errno != EEXIST || epoll_ctl(s->ep_fd, EPOLL_CTL_MOD, v->notify_fd, &ev) < 0)
            return -errno;
    }
    return 0;
}

int sup_watch_standby(struct sup *s, struct sup_svc *v)
{
    int idx = (int)(v - s->svcs);
    v->sb_parked = false;
    if (ep_add(s, v->sb_pidfd, SUP_POLL_KEY(SUP_POLL_PIDFD, idx)) < 0)
        return -errno;
    return ep_add(s, v->sb_notify_fd, SUP_POLL_KEY(SUP_POLL_SB_NOTIFY, idx)) < 0 ? -errno : 0;
}

static void close_notify(struct sup *s, struct sup_svc *v)
{
    if (v->notify_fd < 0)
        return;
    epoll_ctl(s->ep_fd, EPOLL_CTL_DEL, v->notify_fd, NULL);
    close(v->notify_fd);
    v->notify_fd = -1;
}

void sup_unwatch(struct sup *s, struct sup_svc *v)
{
    close_notify(s, v);
    if (v->pidfd >= 0) {
        /* close() alone takes it out of the epoll set; an explicit
         * EPOLL_CTL_DEL here was found to slow the restart path. */
        close(v->pidfd);
        v->pidfd = -1;
    }
}

void sup_rewatch(struct sup *s, struct sup_svc *v)
{
    uint32_t idx = (uint32_t)(v - s->svcs);
    const struct {
        int fd;
        enum sup_poll type;
    } k[] = {{v->pidfd, SUP_POLL_PIDFD}, {v->notify_fd, SUP_POLL_NOTIFY}, {v->sb_pidfd, SUP_POLL_PIDFD},
             {v->sb_notify_fd, SUP_POLL_SB_NOTIFY}};
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SUP_POLL_KEY(k[i].type, idx)};
        if (k[i].fd >= 0)
            epoll_ctl(s->ep_fd, EPOLL_CTL_MOD, k[i].fd, &ev); /* ENOENT: not in the set (a parked standby's pipe) */
    }
}

static int reap(int pidfd, int *status)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG) < 0 && errno == ECHILD) {
        /* Adopted, and not our child: its pidfd is readable once it ended. */
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        if (poll(&p, 1, 0) != 1)
            return 0;
        *status = SUP_STATUS_UNKNOWN;
        return 1;
    }
    if (si.si_pid == 0)
        return 0;
    *status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : (si.si_status & 0x7f);
    return 1;
}

/* The running instance and the standby share the service's event key. */
static void on_pidfd(struct sup *s, struct sup_svc *v)
{
    int status;
    if (v->sb_pidfd >= 0 && reap(v->sb_pidfd, &status)) {
        char how[96];
        sup_exit_text(how, sizeof(how), status);
        sup_svclog_drain(s, v->sb_pid); /* its last words before its death */
        sup_warn("%s: standby pid %d %s; another in 1 s", v->name, (int)v->sb_pid, how);
        snprintf(v->sb_exit, sizeof(v->sb_exit), "%s", how);
        v->sb_deaths++; /* an upgrade waiting on this standby sees it (upgrade.c) */
        close(v->sb_pidfd);
        close(v->sb_notify_fd);
        close(v->sb_go_fd);
        v->sb_pid = 0;
        v->sb_pidfd = v->sb_notify_fd = v->sb_go_fd = -1;
        v->sb_retry_ns = sup_now_ns() + 1000000000ull;
    }
    if (v->pidfd >= 0 && reap(v->pidfd, &status)) {
        sup_svclog_drain(s, v->pid);
        sup_event(s, v, SUP_EV_EXIT, status);
    }
}

static void on_notify(struct sup *s, struct sup_svc *v)
{
    char buf[16];
    ssize_t n = read(v->notify_fd, buf, sizeof(buf));
    if (n > 0 && !memchr(buf, '\n', (size_t)n))
        return; /* a promoted standby's "parked" byte: readiness follows */
    bool ready = n > 0;
    close_notify(s, v);
    if (ready && sup_exec_refuse(v, v->pid, v->pidfd, true, v->run_binary))
        return; /* its death, now, restarts it as any other */
    if (ready)
        sup_event(s, v, SUP_EV_READY, 0);
}

/* A standby says it is parked. Its pipe leaves the set until promotion
 * (off the restart path, so the slow EPOLL_CTL_DEL costs nothing there). */
static void on_sb_notify(struct sup *s, struct sup_svc *v)
{
    char buf[16];
    ssize_t n = read(v->sb_notify_fd, buf, sizeof(buf));
    epoll_ctl(s->ep_fd, EPOLL_CTL_DEL, v->sb_notify_fd, NULL);
    if (n > 0 && memchr(buf, 's', (size_t)n)) {
        if (sup_exec_refuse(v, v->sb_pid, v->sb_pidfd, false, v->sb_binary))
            return;
        v->sb_parked = true;
        /* Wall-clock time: bench/upgrade places the standby's start-up
         * among the datagrams the stream lost. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        sup_log("%s: standby pid %d parked at %lld.%06ld, %.1f ms after its spawn", v->name, (int)v->sb_pid,
                (long long)ts.tv_sec, ts.tv_nsec / 1000, (double)(sup_now_ns() - v->sb_spawned_ns) / 1e6);
    }
}

/* The pulse every service reads (ipc_svc_orphan_check): we are here, and
 * how long they may forward once we are not. */
void sup_pulse(struct sup *s, uint64_t now)
{
    for (int i = 0; i < s->nsvcs; i++) {
        struct ipc_svc_stats *st = s->svcs[i].stats;
        if (!st)
            continue;
        ipc_st_rlx(&st->sup_grace_ms, s->m.router.orphan_grace_ms);
        ipc_st_rlx(&st->sup_beat_ns, now);
    }
}

/*
 * An adopted router still reads the old supervisor's FIBs, which no one can
 * write any more (adopt.c): once its standby is parked (or after 3 s), a
 * planned restart moves it to ours.
 */
static void router_handover(struct sup *s, uint64_t now, uint64_t since)
{
    if (!s->router_handover || s->shutting_down)
        return;
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        if (v->kind != IPC_SVC_ROUTER)
            continue;
        if (v->state != SUP_ST_UP) { /* it died meanwhile: its restart maps the new FIBs */
            s->router_handover = false;
            return;
        }
        if (!v->sb_parked && now - since < 3000000000ull)
            return;
        s->router_handover = false;
        sup_log("%s: moving to this supervisor's FIBs through its standby", v->name);
        sup_event(s, v, SUP_EV_RESTART, 0);
        return;
    }
    s->router_handover = false;
}

static void begin_shutdown(struct sup *s, const char *why)
{
    if (s->shutting_down)
        return;
    s->shutting_down = true;
    sup_notify_stopping(why);
    sup_log("%s: stopping every service", why);
    for (int i = 0; i < s->nsvcs; i++) {
        sup_standby_dismiss(s, &s->svcs[i]);
        sup_event(s, &s->svcs[i], SUP_EV_STOP, 0);
    }
}

static bool all_stopped(const struct sup *s)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].state != SUP_ST_DOWN && s->svcs[i].state != SUP_ST_FAILED)
            return false;
    return true;
}

static void on_signal(struct sup *s)
{
    struct signalfd_siginfo si;
    while (read(s->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
            begin_shutdown(s, strsignal((int)si.ssi_signo));
        else if (si.ssi_signo == SIGHUP && !s->shutting_down)
            sup_reload_signal(s); /* as `ringrouter reload`, answered in the log */
    }
}

static uint64_t pick_tick(const struct sup *s)
{
    uint32_t hang = 1000;
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].m->hang_ms < hang)
            hang = s->svcs[i].m->hang_ms;
    /* Hangs are detected at most one tick late: keep it small against
     * hang_ms, without waking an idle supervisor more than 200 times a
     * second. */
    uint64_t ms = hang / 16;
    if (ms < 5)
        ms = 5;
    if (ms > 100)
        ms = 100;
    return ms * 1000000ull;
}

void sup_retick(struct sup *s)
{
    uint64_t t = pick_tick(s);
    if (t == s->tick_ns)
        return;
    s->tick_ns = t;
    struct itimerspec its = {
        .it_interval = {.tv_sec = 0, .tv_nsec = (long)t},
        .it_value = {.tv_sec = 0, .tv_nsec = (long)t},
    };
    timerfd_settime(s->timer_fd, 0, &its, NULL);
}

static void census_line(const char *what, const struct ipc_census *c)
{
    sup_err("census: %s%u of %u free, %u held, %u in rings, %u lent, %u lost, %u duplicated, %u bad owner, "
            "%u bad depot words, %u bad links",
            what, c->free, c->total, c->held, c->in_rings, c->kernel, c->lost, c->dup, c->bad_owner, c->bad_depot,
            c->bad_link);
}

/* The census after every service is gone: every buffer must be free, and
 * no service may have left any behind at its clean exit (s->leaked, counted
 * by policy.c before the reclaim that freed them). A census that finds a
 * buffer in two places or in none, or a malformed magazine, repairs the pool
 * from what can be known (ipc_pool_repair) and counts again, so the log says
 * where every buffer ended up; the exit status stays 101. */
static int zone_census(struct sup *s, unsigned z, int drained)
{
    /* Each trust zone's pool with its own rings (zones.h). */
    struct ipc_pool *pool = sup_zone_pool(s, z);
    struct ipc_ring_ref refs[SUP_MAX_RINGS];
    unsigned nr = sup_zone_refs(s, z, NULL, 0, refs);
    char zn[24] = "";
    char zn_in[24];
    snprintf(zn_in, sizeof(zn_in), " in zone %u", z);
    if (s->nzones > 1)
        snprintf(zn, sizeof(zn), "zone %u: ", z);
    struct ipc_census c;
    int ret = ipc_pool_census(pool, refs, nr, &c);
    if (ret == 0 && c.free == c.total) {
        if (s->leaked) {
            if (z)
                return -1;
            sup_err("census: LEAK: %u buffers left held by services at exit (named above); all %u free after reclaim",
                    s->leaked, c.total);
            return -1;
        }
        sup_log("census: all %u buffers free%s (%d packets drained from rings)", c.total,
                s->nzones > 1 ? zn_in : "", drained);
        return 0;
    }
    char what[64];
    snprintf(what, sizeof(what), "LEAK: %s", zn);
    census_line(what, &c);
    if (ret == -EUCLEAN) {
        int fixed = ipc_pool_repair(pool, refs, nr);
        if (fixed > 0 && ipc_pool_census(pool, refs, nr, &c) != -ENOMEM) {
            snprintf(what, sizeof(what), "%safter %d repairs: ", zn, fixed);
            census_line(what, &c);
        }
    }
    for (unsigned o = IPC_OWNER_SUPERVISOR; o <= IPC_OWNER_SERVICE_MAX; o++) {
        if (!c.held_by[o])
            continue;
        const char *who = o == IPC_OWNER_SUPERVISOR ? "the supervisor" : NULL;
        for (int i = 0; i < s->nsvcs && !who; i++)
            if (s->svcs[i].owner == o)
                who = s->svcs[i].name;
        if (who)
            sup_err("census: %s holds %u buffers", who, c.held_by[o]);
        else
            sup_err("census: owner id %u, which no service has, holds %u buffers", o, c.held_by[o]);
    }
    return -1;
}

static int final_census(struct sup *s)
{
    sup_rings_repair(s, NULL, s->nrings);
    int drained = sup_drain_rings(s);
    uint64_t corrupt = s->shm_corrupt;
    for (unsigned z = 0; z < s->nzones; z++) {
        ipc_pool_flush(sup_zone_pool(s, z));
        corrupt += sup_zone_pool(s, z)->corrupt;
    }
    if (corrupt)
        sup_log("census: %llu corrupt words were found in shared memory during the run, each logged above and "
                "repaired", (unsigned long long)corrupt);
    int bad = 0;
    for (unsigned z = 0; z < s->nzones; z++)
        bad |= zone_census(s, z, drained) < 0;
    return bad ? -1 : 0;
}

int sup_run(struct sup *s)
{
    struct ipc_err err;
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    s->sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    s->ep_fd = epoll_create1(EPOLL_CLOEXEC);
    if (s->sig_fd < 0 || s->timer_fd < 0 || s->ep_fd < 0) {
        sup_err("cannot set up the event loop: %s", strerror(errno));
        return SUP_EXIT_SYSTEM;
    }
    s->started = time(NULL);
    s->started_ns = sup_now_ns();
    s->tick_ns = pick_tick(s);
    struct itimerspec its = {
        .it_interval = {.tv_sec = 0, .tv_nsec = (long)s->tick_ns},
        .it_value = {.tv_sec = 0, .tv_nsec = (long)s->tick_ns},
    };
    timerfd_settime(s->timer_fd, 0, &its, NULL);
    if (sup_ctl_listen(s, &err) < 0) {
        sup_err("%s", err.msg);
        return SUP_EXIT_SYSTEM;
    }
    ep_add(s, s->sig_fd, SUP_POLL_KEY(SUP_POLL_SIGNAL, 0));
    ep_add(s, s->timer_fd, SUP_POLL_KEY(SUP_POLL_TIMER, 0));
    ep_add(s, s->ctl_fd, SUP_POLL_KEY(SUP_POLL_CTL, 0));

    sup_log("%s: %d services, %d rings, %u buffers of %u bytes; control socket %s", s->manifest_name, s->nsvcs,
            s->nrings, s->pool.nbufs, s->pool.frame_size, s->sock_path);
    sup_ids_log(s);
    sup_notify_init();
    sup_pulse(s, sup_now_ns());
    uint64_t adopted_ns = sup_now_ns();
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        if (v->state != SUP_ST_UP) {
            sup_event(s, v, SUP_EV_RESTART, 0);
            continue;
        }
        /* Adopted (adopt.c): running already; watch it, give it a standby. */
        if (sup_watch(s, v) < 0)
            sup_err("%s: cannot watch pid %d", v->name, (int)v->pid);
        sup_log("%s: adopted, pid %d", v->name, (int)v->pid);
        sup_svclog_adopt(s, v->name, v->pid, v->pidfd);
        v->idle = true; /* its start may have been idle, under the supervisor that is gone */
        sup_sched_raise(v, NULL);
        if (v->m->restart != SUP_RESTART_NEVER)
            sup_standby_spawn(s, v);
    }
    if (s->router_handover)
        sup_state_save(s);
    sup_self_serve(s); /* adopted in SCHED_IDLE: the loop, and the router's handover, run in our own class */

    while (!(s->shutting_down && all_stopped(s))) {
        struct epoll_event evs[16];
        int n = epoll_wait(s->ep_fd, evs, 16, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            sup_err("epoll_wait: %s", strerror(errno));
            return SUP_EXIT_SYSTEM;
        }
        for (int i = 0; i < n; i++) {
            uint32_t type = (uint32_t)(evs[i].data.u64 >> 32), idx = (uint32_t)evs[i].data.u64;
            switch (type) {
            case SUP_POLL_SIGNAL:
                on_signal(s);
                break;
            case SUP_POLL_TIMER: {
                uint64_t ticks;
                ssize_t r = read(s->timer_fd, &ticks, sizeof(ticks));
                (void)r;
                break;
            }
            case SUP_POLL_CTL:
                sup_ctl_accept(s);
                break;
            case SUP_POLL_CONN:
                if (idx < SUP_CTL_CONNS)
                    sup_ctl_io(s, idx);
                break;
            case SUP_POLL_PIDFD:
                on_pidfd(s, &s->svcs[idx]);
                break;
            case SUP_POLL_NOTIFY:
                if (s->svcs[idx].notify_fd >= 0)
                    on_notify(s, &s->svcs[idx]);
                break;
            case SUP_POLL_SB_NOTIFY:
                if (s->svcs[idx].sb_notify_fd >= 0)
                    on_sb_notify(s, &s->svcs[idx]);
                break;
            case SUP_POLL_LOG:
                sup_svclog_io(s, idx);
                break;
            }
        }
        uint64_t now = sup_now_ns();
        sup_pulse(s, now);
        sup_check_timers(s, now);
        sup_tamper_tick(s, now); /* a ring's liar, a hoarder: restarted */
        sup_sched_tick(s, now);
        sup_cg_tick(s);
        sup_reload_tick(s, now);
        sup_ctl_tick(s, now);
        sup_capture_tick(s);
        sup_inject_tick(s, now);
        sup_notify_tick(s, now);
        sup_svclog_tick(s, now);
        sup_routes_tick(s, now); /* routes from a daemon, a slice at a time */
        router_handover(s, now, adopted_ns);
        sup_old_fibs_tick(s);
        if (s->m.text_hash != s->state_hash && !s->reload && !s->shutting_down)
            sup_state_save(s); /* a reload applied another manifest: adopt under it */
        if (s->upgrade_self && sup_ctl_idle(s)) {
            sup_svclog_flush(s); /* the pipes' contents wait for the new image */
            sup_reexec(s);       /* returns only if the exec failed */
        }
    }
    sup_svclog_end(s); /* the last lines before the census */
    sup_ctl_close_all(s);
    sup_reload_end(s);
    sup_inject_end(s); /* nothing stopped or held by `inject` is left for the census */
    int census = final_census(s);
    sup_state_remove(s); /* nothing left to adopt */
    sup_cg_remove(s);
    unlinkat(s->run_fd, SUP_CTL_SOCK, 0); /* where we made it, whatever was renamed since (rundir.c) */
    close(s->ctl_fd);
    close(s->ep_fd);
    close(s->timer_fd);
    close(s->sig_fd);
    return census == 0 ? SUP_EXIT_OK : SUP_EXIT_INTERNAL;
}
