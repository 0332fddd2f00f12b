/* SPDX-License-Identifier: MIT */
/*
 * supervisor/xsk_napi.c: an AF_XDP port's device and its NAPI (xsk_impl.h):
 * the busy-poll options of each socket, whether the socket names a NAPI to
 * poll at all, and the device's napi_defer_hard_irqs and gro_flush_timeout,
 * which the supervisor sets while it runs and puts back at the end, also
 * for a supervisor that died before it could (RUN_DIR/napi.PORT).
 */
#include "supervisor/xsk_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const knob_name[2] = {"napi_defer_hard_irqs", "gro_flush_timeout"};

struct knob_reply {
    int err;
    uint32_t old[2];
    char msg[160];
};

static void knob_child(const char *ifname, const uint32_t set[2], bool restore, struct knob_reply *r)
{
    /* /sys shows the devices of the namespace that mounted it, which need not
     * be the one we entered: mount a sysfs of our own in a private mount
     * namespace (this child's alone). */
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
        r->err = -errno;
        snprintf(r->msg, sizeof(r->msg), "a private mount namespace: %s", strerror(errno));
        return;
    }
    umount2("/sys", MNT_DETACH);
    if (mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        r->err = -errno;
        snprintf(r->msg, sizeof(r->msg), "mounting sysfs: %s", strerror(errno));
        return;
    }
    for (int i = 0; i < 2; i++) {
        char path[96];
        snprintf(path, sizeof(path), "/sys/class/net/%s/%s", ifname, knob_name[i]);
        FILE *f = fopen(path, "r+");
        unsigned long v = 0;
        if (!f || fscanf(f, "%lu", &v) != 1 || fseek(f, 0, SEEK_SET) != 0 || fprintf(f, "%u\n", set[i]) < 0 ||
            fflush(f) != 0) {
            r->err = -(errno ? errno : EIO);
            snprintf(r->msg, sizeof(r->msg), "%s: %s", path, strerror(errno ? errno : EIO));
            if (f)
                fclose(f);
            if (!restore)
                return; /* restoring: put back what we can */
            continue;
        }
        fclose(f);
        r->old[i] = (uint32_t)v;
    }
}

/*
 * Set the device's napi_defer_hard_irqs and gro_flush_timeout (@set), in the
 * namespace we are in, returning the values found in @old. With both knobs
 * set, a NAPI the driver busy-polled is left to a timer rather than to the
 * device's interrupts for gro_flush_timeout: while the driver polls, the
 * device stays quiet; once it sleeps, the timer (then, after that many empty
 * polls, the interrupt) picks the traffic up again. Runs in a child: see
 * knob_child.
 */
static int napi_knobs(const char *ifname, const uint32_t set[2], uint32_t old[2], bool restore, char *msg,
                      size_t msglen)
{
    struct knob_reply *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) {
        snprintf(msg, msglen, "mmap: %s", strerror(errno));
        return -errno;
    }
    memset(r, 0, sizeof(*r));
    int ret;
    pid_t pid = fork();
    if (pid == 0) {
        knob_child(ifname, set, restore, r);
        _exit(0);
    }
    if (pid < 0) {
        ret = -errno;
        snprintf(msg, msglen, "fork: %s", strerror(errno));
    } else {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        ret = r->err;
        snprintf(msg, msglen, "%s", r->msg);
        if (old)
            memcpy(old, r->old, sizeof(r->old));
    }
    munmap(r, sizeof(*r));
    return ret;
}

/*
 * The device's own NAPI knob values, as we first found them, in
 * RUN_DIR/napi.PORT ("napi_defer_hard_irqs gro_flush_timeout"): written once
 * before the supervisor changes them, removed once it has put them back. A
 * supervisor that died leaves the file, so the next one restores the
 * originals rather than the dead one's settings, which it would otherwise
 * find on the device and take for them.
 */
static void knob_state_path(const struct sup *s, const struct sup_port *p, char *path, size_t len)
{
    snprintf(path, len, "%s/napi.%s", s->m.router.run_dir, p->name);
}

/* The file itself, through run_dir's fd (rundir.c): @path is for the log. */
static const char *knob_state_name(const char *path)
{
    return strrchr(path, '/') + 1;
}

static int knob_state_read(const struct sup *s, const struct sup_port *p, uint32_t orig[2])
{
    char path[SUP_PATH_MAX + 32];
    knob_state_path(s, p, path, sizeof(path));
    int fd = openat(s->run_fd, knob_state_name(path), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    unsigned a, b;
    if (n <= 0 || (buf[n] = '\0', sscanf(buf, "%u %u", &a, &b)) != 2) {
        sup_warn("port %s: %s is not \"N N\"; ignoring it", p->name, path);
        return -EINVAL;
    }
    orig[0] = a;
    orig[1] = b;
    return 0;
}

static void knob_state_write(const struct sup *s, const struct sup_port *p, const uint32_t orig[2])
{
    char path[SUP_PATH_MAX + 32];
    knob_state_path(s, p, path, sizeof(path));
    int fd = openat(s->run_fd, knob_state_name(path), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        sup_warn("port %s: warning: %s: %s (a crash now would leave %s's NAPI knobs set)", p->name, path,
                 strerror(errno), p->ifname);
        return;
    }
    dprintf(fd, "%u %u\n", orig[0], orig[1]);
    close(fd);
}

static void knob_state_remove(const struct sup *s, const struct sup_port *p)
{
    char path[SUP_PATH_MAX + 32];
    knob_state_path(s, p, path, sizeof(path));
    unlinkat(s->run_fd, knob_state_name(path), 0);
}

/*
 * SO_PREFER_BUSY_POLL with SO_BUSY_POLL and SO_BUSY_POLL_BUDGET: the
 * driver's recvfrom and sendto then run the device's NAPI on the driver's
 * own CPU (veth's included), the way DPDK's af_xdp driver works, so that
 * receive costs no interrupt and no softirq on another CPU. The options
 * need CAP_NET_ADMIN, hence here. The socket keeps them across driver
 * restarts.
 */
int sup_xsk_busy_poll(struct xsk_req *q, int fd)
{
    const struct sup_port *p = q->p;
    int one = 1, us = (int)p->busy_poll_us, budget = (int)p->busy_poll_budget;
    struct {
        int opt;
        const int *v;
        const char *name;
    } o[3] = {{SO_PREFER_BUSY_POLL, &one, "SO_PREFER_BUSY_POLL"},
              {SO_BUSY_POLL, &us, "SO_BUSY_POLL"},
              {SO_BUSY_POLL_BUDGET, &budget, "SO_BUSY_POLL_BUDGET"}};
    for (int i = 0; i < 3; i++)
        if (setsockopt(fd, SOL_SOCKET, o[i].opt, o[i].v, sizeof(int)) < 0)
            return ipc_errf(q->err, -errno, "port %s: busy_poll = yes: %s: %s (set busy_poll = no)", p->name,
                            o[i].name, strerror(errno));
    return 0;
}

static bool kernel_at_least(int major, int minor)
{
    struct utsname u;
    int a, b;
    return uname(&u) == 0 && sscanf(u.release, "%d.%d", &a, &b) == 2 && (a > major || (a == major && b >= minor));
}

/*
 * A busy poll polls the NAPI its socket names (SO_INCOMING_NAPI_ID). Since
 * Linux 6.13 an AF_XDP socket takes it at bind, from its queue, and only
 * where the device's driver linked the queue to its NAPI: most NICs' do,
 * veth's does not. With none the socket's busy polls poll nothing, and the
 * device's own NAPI (its thread, or the sender's softirq) does all the
 * receive work. Then the
 * driver is told not to poll (sup_xsk_busy_poll_ok), which would only cost
 * it a system call a loop. Before 6.13 the id came with the first frame,
 * so a 0 at bind says nothing there.
 */
void sup_xsk_napi_id(struct xsk_req *q, int fd)
{
    const struct sup_port *p = q->p;
    int id = -1;
    socklen_t len = sizeof(id);
    if (!p->busy_poll || !kernel_at_least(6, 13) || getsockopt(fd, SOL_SOCKET, SO_INCOMING_NAPI_ID, &id, &len) < 0 ||
        id != 0)
        return;
    q->x->no_napi_id = true;
    sup_notice("port %s: busy_poll = yes, but the AF_XDP socket on %s queue %d names no NAPI (its driver links no "
               "queue to one; veth does not): nothing to busy-poll, the device's NAPI receives on its own",
               p->name, p->ifname, q->x->queue);
}

bool sup_xsk_busy_poll_ok(const struct sup *s, int port)
{
    for (int i = 0; s->xsk && i < s->xsk->n; i++)
        if (s->xsk->p[i].port == port && s->xsk->p[i].no_napi_id)
            return false;
    return true;
}

/*
 * The device's napi_defer_hard_irqs and gro_flush_timeout, set once, by its
 * first queue, whether the driver busy-polls or not. Busy polling: the
 * device stays quiet while the driver polls it. Without: they coalesce the
 * device's receive, so that while traffic flows its NAPI runs once per
 * gro_flush_timeout on a timer of its own CPU, a batch at a time, rather
 * than being woken from the sender's CPU for every few frames (a wake-up
 * and two context switches each, under a SCHED_FIFO NAPI thread most of
 * the router's CPU: docs/drivers.md, "Coalescing").
 */
void sup_xsk_napi_knobs(struct xsk_req *q)
{
    const struct sup_port *p = q->p;
    if (q->x->queue)
        return;
    uint32_t set[2] = {p->napi_defer_hard_irqs, p->gro_flush_timeout};
    char msg[160];
    int ret = napi_knobs(p->ifname, set, q->x->knob_old, false, msg, sizeof(msg));
    if (ret < 0) {
        sup_warn("port %s: warning: could not set %s's NAPI knobs (%s); the port works without them, "
                 "but its NAPI then runs for every few frames",
                 p->name, p->ifname, msg);
        return;
    }
    q->x->knobs_set = true;
    /* What we found may be a dead supervisor's settings: the originals are
     * the ones it recorded. Record them once, before they are ours. */
    uint32_t orig[2];
    if (knob_state_read(q->s, p, orig) == 0) {
        memcpy(q->x->knob_old, orig, sizeof(orig));
        sup_notice("port %s: %s's NAPI knobs were left set by a supervisor that did not stop; the originals "
                   "(%u, %u) will be restored",
                   p->name, p->ifname, orig[0], orig[1]);
    } else {
        knob_state_write(q->s, p, q->x->knob_old);
    }
}

void sup_xsk_napi_adopt(struct xsk_req *q)
{
    if (knob_state_read(q->s, q->p, q->x->knob_old) == 0)
        q->x->knobs_set = true; /* restored at shutdown, as if we had set them */
}

void sup_xsk_napi_restore(const struct sup *s, const struct sup_port *p, struct sup_xsk_port *x)
{
    if (!x->knobs_set)
        return;
    char msg[160];
    if (napi_knobs(p->ifname, x->knob_old, NULL, true, msg, sizeof(msg)) < 0)
        sup_warn("port %s: restoring %s's NAPI knobs: %s", p->name, p->ifname, msg);
    else
        knob_state_remove(s, p);
    x->knobs_set = false;
}
