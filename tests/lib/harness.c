/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/harness.c: supervisor stand-in helpers for test programs
 * (harness.h). Setup only; each test program runs its own loop.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drivers/tap/vnet.h"

void t_reserve_fd3(void)
{
    if (fcntl(IPC_SVC_CONFIG_FD, F_GETFD) < 0) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd >= 0 && fd != IPC_SVC_CONFIG_FD) {
            if (dup2(fd, IPC_SVC_CONFIG_FD) >= 0)
                close(fd);
        }
    }
}

int t_ring(const char *name, uint32_t size, uint32_t id, uint16_t prod, uint16_t cons, int *fd,
           struct ipc_ring_shared **sh, struct ipc_err *err)
{
    return ipc_ring_create(name, size, id, prod, cons, 0, fd, sh, err);
}

long t_offloads_parse(const char *s)
{
    if (strcmp(s, "none") == 0 || *s == '\0')
        return 0;
    long bits = 0;
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", s);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (strcmp(w, "csum") == 0)
            bits |= TAP_OFFLOAD_CSUM;
        else if (strcmp(w, "tso4") == 0)
            bits |= TAP_OFFLOAD_TSO4;
        else if (strcmp(w, "tso6") == 0)
            bits |= TAP_OFFLOAD_TSO6;
        else if (strcmp(w, "uso") == 0)
            bits |= TAP_OFFLOAD_USO;
        else
            return -1;
    }
    return bits;
}

static int tap_setup(const char *ifname, uint32_t offloads, uint32_t mtu, int *fd_out, struct ipc_err *err)
{
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return ipc_errf(err, -errno, "/dev/net/tun: %s", strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    int ret;
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        ret = ipc_errf(err, -errno, "TUNSETIFF %s: %s", ifname, strerror(errno));
        goto out_fd;
    }
    int hdr = TAP_VNET_HDR_LEN;
    if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0) {
        ret = ipc_errf(err, -errno, "TUNSETVNETHDRSZ: %s", strerror(errno));
        goto out_fd;
    }
    unsigned off = 0;
    if (offloads & TAP_OFFLOAD_CSUM)
        off |= TUN_F_CSUM;
    if (offloads & TAP_OFFLOAD_TSO4)
        off |= TUN_F_TSO4;
    if (offloads & TAP_OFFLOAD_TSO6)
        off |= TUN_F_TSO6;
#ifdef TUN_F_USO4
    if (offloads & TAP_OFFLOAD_USO)
        off |= TUN_F_USO4 | TUN_F_USO6;
#endif
    if (ioctl(fd, TUNSETOFFLOAD, off) < 0) {
        ret = ipc_errf(err, -errno, "TUNSETOFFLOAD %#x: %s", off, strerror(errno));
        goto out_fd;
    }
    int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sk < 0) {
        ret = ipc_errf(err, -errno, "socket: %s", strerror(errno));
        goto out_fd;
    }
    if (mtu) {
        ifr.ifr_mtu = (int)mtu;
        if (ioctl(sk, SIOCSIFMTU, &ifr) < 0) {
            ret = ipc_errf(err, -errno, "MTU %u on %s: %s", mtu, ifname, strerror(errno));
            close(sk);
            goto out_fd;
        }
    }
    if (ioctl(sk, SIOCGIFFLAGS, &ifr) < 0 || (ifr.ifr_flags |= IFF_UP, ioctl(sk, SIOCSIFFLAGS, &ifr) < 0)) {
        ret = ipc_errf(err, -errno, "bringing %s up: %s", ifname, strerror(errno));
        close(sk);
        goto out_fd;
    }
    close(sk);
    *fd_out = fd;
    return 0;

out_fd:
    close(fd);
    return ret;
}

int t_tap_open(const char *netns, const char *ifname, uint32_t offloads, uint32_t mtu, int *fd, struct ipc_err *err)
{
    if (!netns || !*netns)
        return tap_setup(ifname, offloads, mtu, fd, err);
    char path[128];
    snprintf(path, sizeof(path), "/run/netns/%s", netns);
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0)
        return ipc_errf(err, -errno, "/proc/self/ns/net: %s", strerror(errno));
    int ns = open(path, O_RDONLY | O_CLOEXEC);
    int ret;
    if (ns < 0) {
        ret = ipc_errf(err, -errno, "%s: %s", path, strerror(errno));
        goto out_self;
    }
    if (setns(ns, CLONE_NEWNET) < 0) {
        ret = ipc_errf(err, -errno, "setns %s: %s", path, strerror(errno));
        goto out_ns;
    }
    ret = tap_setup(ifname, offloads, mtu, fd, err);
    if (setns(self, CLONE_NEWNET) < 0) {
        /* Stuck in the wrong namespace: nothing after this would be right. */
        fprintf(stderr, "harness: setns back: %s\n", strerror(errno));
        abort();
    }
out_ns:
    close(ns);
out_self:
    close(self);
    return ret;
}

void t_svc_keep(struct t_svc *s, int fd)
{
    if (fd < 0)
        return;
    for (unsigned i = 0; i < s->nkeep; i++)
        if (s->keep[i] == fd)
            return;
    if (s->nkeep < T_KEEP_MAX)
        s->keep[s->nkeep++] = fd;
}

int t_svc_prepare(struct t_svc *s, const char *name, uint32_t kind, uint16_t owner, int pool_fd, struct ipc_err *err)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->pid = -1;
    s->pidfd = -1;
    s->cfg_fd = -1;
    s->cfg = calloc(1, sizeof(*s->cfg));
    if (!s->cfg)
        return ipc_errf(err, -ENOMEM, "out of memory");
    s->wake_fd = ipc_wake_eventfd();
    if (s->wake_fd < 0)
        return ipc_errf(err, s->wake_fd, "eventfd: %s", strerror(-s->wake_fd));
    char sname[48];
    snprintf(sname, sizeof(sname), "stats-%s", name);
    int ret = ipc_stats_create(sname, &s->stats_fd, &s->stats, err);
    if (ret < 0)
        return ret;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return ipc_errf(err, -errno, "pipe: %s", strerror(errno));
    s->notify_rd = p[0];
    s->notify_wr = p[1];
    struct ipc_svc_config *c = s->cfg;
    c->kind = kind;
    c->owner = owner;
    c->port = IPC_PORT_NONE;
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->pool_fd = pool_fd;
    c->stats_fd = s->stats_fd;
    c->wake_fd = s->wake_fd;
    c->notify_fd = s->notify_wr;
    tbl_cfg_hdr_init(&s->drv.hdr, kind, TBL_DRIVER_CFG_VERSION, sizeof(s->drv));
    s->drv.dev_fd = -1;
    c->cpu = -1;
    c->hang_ms = 1000;
    t_svc_keep(s, pool_fd);
    t_svc_keep(s, s->stats_fd);
    t_svc_keep(s, s->wake_fd);
    t_svc_keep(s, s->notify_wr);
    return 0;
}

void t_svc_add_in(struct t_svc *s, int ring_fd, uint16_t port)
{
    struct ipc_svc_config *c = s->cfg;
    if (c->n_in >= IPC_SVC_MAX_RINGS)
        return;
    c->in[c->n_in++] = (struct ipc_svc_ring){.fd = ring_fd, .wake_fd = -1, .port = port};
    t_svc_keep(s, ring_fd);
}

void t_svc_add_out(struct t_svc *s, int ring_fd, int wake_fd, uint16_t port)
{
    struct ipc_svc_config *c = s->cfg;
    if (c->n_out >= IPC_SVC_MAX_RINGS)
        return;
    c->out[c->n_out++] = (struct ipc_svc_ring){.fd = ring_fd, .wake_fd = wake_fd, .port = port};
    t_svc_keep(s, ring_fd);
    t_svc_keep(s, wake_fd);
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int t_svc_start(struct t_svc *s, const char *bin, struct ipc_err *err)
{
    bool drv = s->cfg->kind == IPC_SVC_TAP || s->cfg->kind == IPC_SVC_AFXDP;
    int ret = ipc_svc_config_create(s->cfg, drv ? &s->drv : NULL, drv ? sizeof(s->drv) : 0, &s->cfg_fd, err);
    if (ret < 0)
        return ret;
    int keep[T_KEEP_MAX];
    unsigned n = s->nkeep;
    memcpy(keep, s->keep, n * sizeof(int));
    qsort(keep, n, sizeof(int), cmp_int);
    for (unsigned i = 0; i < n; i++)
        if (keep[i] <= IPC_SVC_CONFIG_FD)
            return ipc_errf(err, -EINVAL, "%s: fd %d collides with stdio or the config fd", s->name, keep[i]);

    pid_t pid = fork();
    if (pid < 0)
        return ipc_errf(err, -errno, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* Child: config on fd 3, the kept fds, stdio; nothing else. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(s->cfg_fd, IPC_SVC_CONFIG_FD) < 0)
            _exit(111);
        unsigned lo = IPC_SVC_CONFIG_FD + 1;
        for (unsigned i = 0; i < n; i++) {
            if (fcntl(keep[i], F_SETFD, 0) < 0)
                _exit(111);
            if ((unsigned)keep[i] > lo)
                syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
            lo = (unsigned)keep[i] + 1;
        }
        syscall(SYS_close_range, lo, ~0u, 0);
        char *const argv[] = {(char *)bin, NULL};
        execv(bin, argv);
        _exit(127);
    }
    s->pid = pid;
    s->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    close(s->notify_wr);
    s->notify_wr = -1;
    close(s->cfg_fd);
    s->cfg_fd = -1;
    return 0;
}

int t_svc_restart(struct t_svc *s, const char *bin, struct ipc_err *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return ipc_errf(err, -errno, "pipe: %s", strerror(errno));
    for (unsigned i = 0; i < s->nkeep; i++)
        if (s->keep[i] == s->cfg->notify_fd)
            s->keep[i] = p[1];
    close(s->notify_rd);
    s->notify_rd = p[0];
    s->notify_wr = p[1];
    s->cfg->notify_fd = p[1];
    return t_svc_start(s, bin, err);
}

int t_svc_wait_ready(struct t_svc *s, int timeout_ms)
{
    struct pollfd p = {.fd = s->notify_rd, .events = POLLIN};
    int r = poll(&p, 1, timeout_ms);
    if (r <= 0)
        return r == 0 ? 0 : -1;
    char c;
    return read(s->notify_rd, &c, 1) == 1 && c == '\n' ? 1 : -1;
}

int t_svc_stop(struct t_svc *s, int sig, int timeout_ms)
{
    if (s->pid <= 0)
        return -1;
    if (sig)
        kill(s->pid, sig);
    int status = -1;
    if (s->pidfd >= 0) {
        struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) == 0) {
            fprintf(stderr, "harness: %s (pid %d) did not exit in %d ms; SIGKILL\n", s->name, (int)s->pid,
                    timeout_ms);
            kill(s->pid, SIGKILL);
        }
    }
    if (waitpid(s->pid, &status, 0) < 0)
        status = -1;
    s->pid = -1;
    if (s->pidfd >= 0)
        close(s->pidfd);
    s->pidfd = -1;
    return status;
}

bool t_counter(const struct ipc_svc_stats *st, const char *name, uint64_t *val)
{
    uint32_t n = ipc_ld_acq(&((struct ipc_svc_stats *)st)->nctr);
    for (uint32_t i = 0; i < n && i < IPC_SVC_MAX_CTR; i++) {
        if (strncmp(st->ctr_name[i], name, IPC_CTR_NAME) == 0) {
            *val = ipc_ld_rlx(&((struct ipc_svc_stats *)st)->ctr[i]);
            return true;
        }
    }
    return false;
}

void t_print_counters(FILE *f, const char *prefix, const struct ipc_svc_stats *st)
{
    struct ipc_svc_stats *m = (struct ipc_svc_stats *)st;
    uint32_t n = ipc_ld_acq(&m->nctr);
    fprintf(f, "%s loops %llu\n", prefix, (unsigned long long)ipc_ld_rlx(&m->loops));
    fprintf(f, "%s sleeps %llu\n", prefix, (unsigned long long)ipc_ld_rlx(&m->sleeps));
    fprintf(f, "%s wakes_sent %llu\n", prefix, (unsigned long long)ipc_ld_rlx(&m->wakes_sent));
    for (uint32_t i = 0; i < n && i < IPC_SVC_MAX_CTR; i++)
        fprintf(f, "%s %.*s %llu\n", prefix, IPC_CTR_NAME, st->ctr_name[i],
                (unsigned long long)ipc_ld_rlx(&m->ctr[i]));
}

void t_print_ring(FILE *f, const char *name, const struct ipc_ring_shared *sh)
{
    struct ipc_ring_shared *r = (struct ipc_ring_shared *)sh;
    fprintf(f, "ring %s enq_handles %llu\n", name, (unsigned long long)ipc_ld_rlx(&r->enq_handles));
    fprintf(f, "ring %s full_drops %llu\n", name, (unsigned long long)ipc_ld_rlx(&r->full_drops));
    fprintf(f, "ring %s wake_sent %llu\n", name, (unsigned long long)ipc_ld_rlx(&r->wake_sent));
    fprintf(f, "ring %s sleeps %llu\n", name, (unsigned long long)ipc_ld_rlx(&r->sleeps));
    fprintf(f, "ring %s drop_bad_handle %llu\n", name, (unsigned long long)ipc_ld_rlx(&r->drop_bad_handle));
    fprintf(f, "ring %s drop_bad_owner %llu\n", name, (unsigned long long)ipc_ld_rlx(&r->drop_bad_owner));
    fprintf(f, "ring %s drop_bad_frame %llu\n", name, (unsigned long long)ipc_ld_rlx(&r->drop_bad_frame));
    fprintf(f, "ring %s drop_bad_chain %llu\n", name, (unsigned long long)ipc_ld_rlx(&r->drop_bad_chain));
}
