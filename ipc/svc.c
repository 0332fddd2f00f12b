/* SPDX-License-Identifier: MIT */
/*
 * ipc/svc.c: the service side of the supervisor contract (ipc/svc.h):
 * reading the config blob, attaching what it names, readiness, and the idle
 * wait, and when each stage of the seccomp filter goes on (ipc/sandbox.h).
 * Also the creation of stats regions, which the supervisor does.
 */
#include "svc.h"

#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

uint64_t ipc_svc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ipc_svc_config_map(int fd, const struct ipc_svc_config **cfg_out, size_t *size_out, struct ipc_err *err)
{
    const void *base;
    size_t size;
    int ret = ipc_shm_attach_ro(fd, IPC_SHM_CONFIG, IPC_SVC_VERSION, &base, &size, err);
    if (ret < 0)
        return ret;
    const struct ipc_svc_config *cfg = base;
    if (size < sizeof(*cfg) || cfg->extra_len > size - sizeof(*cfg) || cfg->n_in > IPC_SVC_MAX_RINGS ||
        cfg->n_out > IPC_SVC_MAX_RINGS || cfg->nports > IPC_MAX_PORTS || cfg->nzones > IPC_MAX_ZONES) {
        ipc_shm_unmap((void *)base, size);
        return ipc_errf(err, -EPROTO, "config %.40s: counts out of range (in %u, out %u, ports %u, extra %u)",
                        cfg->shm.name, cfg->n_in, cfg->n_out, cfg->nports, cfg->extra_len);
    }
    *cfg_out = cfg;
    *size_out = size;
    return 0;
}

int ipc_stats_create(const char *name, int *fd, struct ipc_svc_stats **st, struct ipc_err *err)
{
    void *base;
    int ret = ipc_shm_create(name, IPC_SHM_STATS, IPC_STATS_VERSION, sizeof(struct ipc_svc_stats), fd, &base, err);
    if (ret < 0)
        return ret;
    *st = base;
    return 0;
}

int ipc_stats_attach(int fd, struct ipc_svc_stats **st, struct ipc_err *err)
{
    return ipc_shm_attach_fixed(fd, IPC_SHM_STATS, IPC_STATS_VERSION, sizeof(**st), (void **)st, err);
}

/* A standby waits here, everything mapped, until the supervisor says go.
 * Returns 0 to go on, or -errno when it was dismissed instead. */
static int standby_wait(int svc_notify_fd, struct ipc_err *err)
{
    const char *env = getenv(IPC_SVC_STANDBY_ENV);
    if (!env || !env[0])
        return 0;
    int fd = atoi(env);
    /* Tell the supervisor we are parked: promoting us now costs no exec. */
    ssize_t w = write(svc_notify_fd, "s", 1);
    (void)w;
    char go;
    ssize_t r;
    do
        r = read(fd, &go, 1);
    while (r < 0 && errno == EINTR);
    close(fd);
    unsetenv(IPC_SVC_STANDBY_ENV);
    if (r != 1)
        return ipc_errf(err, -ECANCELED, "standby dismissed before it was needed");
    return 0;
}

int ipc_svc_open(struct ipc_svc *svc, uint32_t kind, struct ipc_err *err)
{
    memset(svc, 0, sizeof(*svc));
    /* Not dumpable: /proc/PID/{fd,mem,...} become root's, and no process of
     * our uid (our standby; every service, with a shared [router] user) can
     * ptrace us or open our fds (the pool, the rings, a TAP) through /proc.
     * exec made us dumpable again, so it is done here, before the first fd
     * is mapped, not in the supervisor's fork. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return ipc_errf(err, -errno, "prctl(PR_SET_DUMPABLE, 0): %s", strerror(errno));
    /* We outlive the supervisor, and with it perhaps the reader of our
     * stderr: a log line must not kill us (EPIPE instead). */
    signal(SIGPIPE, SIG_IGN);
    /* The start stage of our seccomp allow-list, before we read a byte the
     * supervisor wrote: what follows (mapping, a standby's wait, the kind's
     * own set-up) runs under it, and ipc_svc_ready narrows it to the loop.
     * Both narrow the ceiling the supervisor put on before our exec. */
    svc->sandbox = ipc_sandbox_of_kind(kind);
    int ret = ipc_sandbox_enter(svc->sandbox, IPC_SANDBOX_START, err);
    if (ret < 0)
        return ret;
    ret = ipc_svc_config_map(IPC_SVC_CONFIG_FD, &svc->cfg, &svc->cfg_size, err);
    if (ret < 0)
        return ret;
    const struct ipc_svc_config *cfg = svc->cfg;
    struct ipc_ring_shared *in_sh[IPC_SVC_MAX_RINGS], *out_sh[IPC_SVC_MAX_RINGS];
    if (kind != 0 && cfg->kind != kind) {
        ret = ipc_errf(err, -EPROTO, "config %.32s: service kind %u, this binary is kind %u", cfg->name, cfg->kind,
                       kind);
        goto out_cfg;
    }
    ret = ipc_pool_attach(&svc->pool, cfg->pool_fd, cfg->owner, err);
    if (ret < 0)
        goto out_cfg;
    svc->zpool[0] = &svc->pool;
    svc->nzones = 1;
    for (unsigned z = 1; z < cfg->nzones; z++, svc->nzones++) {
        svc->zpool[z] = &svc->zextra[z];
        if ((ret = ipc_pool_attach(svc->zpool[z], cfg->zone_fd[z], cfg->owner, err)) < 0)
            goto out_pool;
    }
    ret = ipc_stats_attach(cfg->stats_fd, &svc->stats, err);
    if (ret < 0)
        goto out_pool;
    /* Map every ring first: a standby has all of this done before it is
     * needed. Binding the cursors waits until it runs. */
    for (unsigned i = 0; i < cfg->n_in; i++) {
        ret = ipc_ring_attach(cfg->in[i].fd, &in_sh[i], err);
        if (ret < 0)
            goto out_rings;
        svc->in[svc->n_in++].sh = in_sh[i];
        if (in_sh[i]->cons_owner != cfg->owner) {
            ret = ipc_errf(err, -EPROTO, "input ring %.40s is consumed by owner %u, not by %s (%u)",
                           in_sh[i]->shm.name, in_sh[i]->cons_owner, cfg->name, cfg->owner);
            goto out_rings;
        }
    }
    for (unsigned i = 0; i < cfg->n_out; i++) {
        ret = ipc_ring_attach(cfg->out[i].fd, &out_sh[i], err);
        if (ret < 0)
            goto out_rings;
        svc->out[svc->n_out++].sh = out_sh[i];
        if (out_sh[i]->prod_owner != cfg->owner) {
            ret = ipc_errf(err, -EPROTO, "output ring %.40s is produced by owner %u, not by %s (%u)",
                           out_sh[i]->shm.name, out_sh[i]->prod_owner, cfg->name, cfg->owner);
            goto out_rings;
        }
    }
    /* A region that will not map costs the capture, not the service. */
    struct ipc_err cerr;
    if (cfg->cap_fd > IPC_SVC_CONFIG_FD && ipc_cap_attach(cfg->cap_fd, cfg->port, &cerr) < 0)
        fprintf(stderr, "%s: capture off: %s\n", cfg->name, cerr.msg);
    ret = standby_wait(cfg->notify_fd, err);
    if (ret < 0)
        goto out_rings;
    uint64_t t_open = ipc_svc_now_ns();
    for (unsigned i = 0; i < svc->n_in; i++) {
        ipc_ring_cons_init(&svc->in[i], in_sh[i]);
        if (cfg->in[i].peer_owner) /* ipc_ring_recv checks handles against the sealed copy */
            ipc_ring_cons_from(&svc->in[i], cfg->in[i].peer_owner);
        svc->in_ptr[i] = &svc->in[i];
    }
    for (unsigned i = 0; i < svc->n_out; i++)
        ipc_ring_prod_init(&svc->out[i], out_sh[i], cfg->out[i].wake_fd);
    svc->wake_fd = cfg->wake_fd;
    svc->stages_on = (cfg->flags & IPC_SVC_F_STAGES) != 0;
    ipc_wake_set_init(&svc->wake);
    /* A command our predecessor died before answering was meant for it:
     * the supervisor answers that it is gone, and we do not carry it out. */
    svc->inj.seen = ipc_ld_acq(&svc->stats->inject.seq);
    ipc_st_rlx(&svc->stats->pid, (uint32_t)getpid());
    ipc_st_rlx(&svc->stats->open_ns, t_open);
    ipc_st_rlx(&svc->stats->state, IPC_SVC_STARTING);
    return 0;

out_rings:
    for (unsigned i = 0; i < svc->n_in; i++)
        ipc_ring_detach(svc->in[i].sh);
    for (unsigned i = 0; i < svc->n_out; i++)
        ipc_ring_detach(svc->out[i].sh);
    ipc_shm_unmap(svc->stats, sizeof(*svc->stats));
out_pool:
    for (unsigned z = svc->nzones; z-- > 0;)
        ipc_pool_detach(svc->zpool[z]);
out_cfg:
    ipc_shm_unmap((void *)svc->cfg, svc->cfg_size);
    svc->cfg = NULL;
    return ret;
}

_Atomic uint64_t *ipc_svc_counters(struct ipc_svc *svc, const char *const *names, unsigned n)
{
    if (n > IPC_SVC_MAX_CTR)
        n = IPC_SVC_MAX_CTR;
    for (unsigned i = 0; i < n; i++)
        snprintf(svc->stats->ctr_name[i], IPC_CTR_NAME, "%s", names[i]);
    ipc_st_rel(&svc->stats->nctr, n);
    return svc->stats->ctr;
}

int ipc_svc_ready(struct ipc_svc *svc, struct ipc_err *err)
{
    /* Every set-up call is behind us: from here on, the loop's list. Before
     * the readiness line, so that the supervisor never sees a ready service
     * without it. */
    int ret = ipc_sandbox_enter(svc->sandbox, IPC_SANDBOX_RUN, err);
    if (ret < 0)
        return ret;
    ipc_st_rlx(&svc->stats->ready_ns, ipc_svc_now_ns());
    ipc_st_rel(&svc->stats->state, IPC_SVC_READY);
    if (svc->cfg->notify_fd >= 0) {
        ssize_t r = write(svc->cfg->notify_fd, "\n", 1);
        (void)r; /* the supervisor also sees the state word */
        close(svc->cfg->notify_fd);
    }
    return 0;
}

struct ipc_svc_stop ipc_svc_stop_ = {.fd = -1};

int ipc_svc_catch_stop(volatile sig_atomic_t *stop)
{
    struct ipc_svc_stop *st = &ipc_svc_stop_;
    st->flag = stop;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return -errno;
    if (st->fd < 0) {
        st->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        if (st->fd < 0)
            return -errno;
    }
    return 0;
}

void ipc_svc_stop_poll(void)
{
    struct ipc_svc_stop *st = &ipc_svc_stop_;
    if (st->fd < 0 || st->watched)
        return;
    struct signalfd_siginfo si;
    if (read(st->fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
        ipc_svc_stop_seen();
}

/* Block on our eventfd and the stop signalfd. Returns 1 if woken, 0 on
 * timeout, -EINTR when a stop signal came (taken), -errno on error. */
static int svc_block(struct ipc_svc *svc, int64_t timeout_us)
{
    int sfd = ipc_svc_stop_.watched ? -1 : ipc_svc_stop_.fd;
    if (sfd < 0)
        return ipc_wake_block_us(svc->wake_fd, timeout_us);
    struct pollfd pfd[2] = {{.fd = svc->wake_fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    struct timespec ts = {.tv_sec = timeout_us / 1000000, .tv_nsec = (long)(timeout_us % 1000000) * 1000};
    int r = ppoll(pfd, 2, timeout_us < 0 ? NULL : &ts, NULL);
    if (r < 0)
        return -errno;
    if (r == 0)
        return 0;
    if (pfd[0].revents & POLLIN) {
        uint64_t v;
        if (read(svc->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            return -errno;
    }
    if (pfd[1].revents & POLLIN) {
        ipc_svc_stop_poll();
        return -EINTR;
    }
    return 1;
}

int ipc_svc_wait(struct ipc_svc *svc, int timeout_ms)
{
    return ipc_svc_wait_us(svc, timeout_ms < 0 ? -1 : (int64_t)timeout_ms * 1000);
}

int ipc_svc_wait_us(struct ipc_svc *svc, int64_t timeout_us)
{
    if (svc->n_in && !ipc_wake_arm(svc->in_ptr, svc->n_in))
        return 1;
    ipc_count(&svc->stats->sleeps, 1);
    int r = svc_block(svc, timeout_us);
    ipc_svc_slept(svc, r == 0);
    if (svc->n_in)
        ipc_wake_disarm(svc->in_ptr, svc->n_in);
    return r;
}

int ipc_svc_nap_us(struct ipc_svc *svc, struct ipc_ring_cons *const *wake_on, unsigned n, int64_t timeout_us)
{
    if (n && !ipc_wake_arm(wake_on, n))
        return 1;
    ipc_count(&svc->stats->sleeps, 1);
    int r = svc_block(svc, timeout_us);
    ipc_svc_orphan_check(svc);
    if (n)
        ipc_wake_disarm(wake_on, n);
    return r;
}

void ipc_svc_orphan_check(struct ipc_svc *svc)
{
    svc->beats = 0;
    uint64_t beat = ipc_ld_rlx(&svc->stats->sup_beat_ns);
    if (!beat)
        return;
    uint64_t now = ipc_svc_now_ns();
    if (now < beat + IPC_SUP_SILENT_NS) {
        if (svc->orphaned)
            fprintf(stderr, "%.32s: a supervisor is back; under its care again\n", svc->cfg->name);
        svc->orphaned = svc->orphan_stop = false;
        return;
    }
    uint32_t grace_ms = ipc_ld_rlx(&svc->stats->sup_grace_ms);
    uint64_t grace = (uint64_t)(grace_ms ? grace_ms : 60000) * 1000000ull;
    if (!svc->orphaned) {
        svc->orphaned = true;
        fprintf(stderr, "%.32s: no supervisor for %llu ms: forwarding on; stopping %llu s after it went unless one "
                        "adopts us\n",
                svc->cfg->name, (unsigned long long)((now - beat) / 1000000), (unsigned long long)(grace / 1000000000));
    }
    if (now - beat >= grace && !svc->orphan_stop) {
        svc->orphan_stop = true;
        fprintf(stderr, "%.32s: no supervisor for %llu s (orphan_grace_ms %u): stopping\n", svc->cfg->name,
                (unsigned long long)((now - beat) / 1000000000), grace_ms);
    }
}

void ipc_svc_slept(struct ipc_svc *svc, bool timed_out)
{
    ipc_svc_orphan_check(svc); /* a clock read beside a sleep's system call */
    if (!timed_out)
        return;
    for (unsigned i = 0; i < svc->n_in; i++)
        if (ipc_ring_avail(svc->in_ptr[i], 1)) {
            ipc_count(&svc->stats->wake_missed, 1);
            return;
        }
}

void ipc_svc_close(struct ipc_svc *svc)
{
    if (!svc->cfg)
        return;
    for (unsigned i = 0; i < svc->n_in; i++)
        ipc_ring_detach(svc->in[i].sh);
    for (unsigned i = 0; i < svc->n_out; i++)
        ipc_ring_detach(svc->out[i].sh);
    ipc_shm_unmap(svc->stats, sizeof(*svc->stats));
    for (unsigned z = svc->nzones; z-- > 0;)
        ipc_pool_detach(svc->zpool[z]);
    ipc_shm_unmap((void *)svc->cfg, svc->cfg_size);
    svc->cfg = NULL;
}

int ipc_svc_config_create(const struct ipc_svc_config *tmpl, const void *extra, uint32_t extra_len, int *fd_out,
                          struct ipc_err *err)
{
    char name[48];
    snprintf(name, sizeof(name), "cfg-%s", tmpl->name);
    void *base;
    int fd;
    size_t size = sizeof(*tmpl) + extra_len;
    int ret = ipc_shm_create(name, IPC_SHM_CONFIG, IPC_SVC_VERSION, size, &fd, &base, err);
    if (ret < 0)
        return ret;
    struct ipc_svc_config *cfg = base;
    struct ipc_shm_hdr hdr = cfg->shm;
    memcpy(cfg, tmpl, sizeof(*cfg));
    cfg->shm = hdr;
    cfg->extra_len = extra_len;
    if (extra_len)
        memcpy(cfg->extra, extra, extra_len);
    ipc_shm_unmap(base, size);
    /* Sealed read-only: a service can neither change its own orders nor,
     * through a shared fd, anybody else's. */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        ret = ipc_errf(err, -errno, "sealing %s: %s", name, strerror(errno));
        close(fd);
        return ret;
    }
    *fd_out = fd;
    return 0;
}
