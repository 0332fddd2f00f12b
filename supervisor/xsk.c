/* SPDX-License-Identifier: MIT */
/*
 * supervisor/xsk.c: AF_XDP ports (xsk.h), the books. For each port with
 * driver = afxdp the supervisor opens one socket per queue (queues = N in
 * the manifest: queue 0 first, with the port's steering program, then each
 * later queue into that program's socket map), inside the port's network
 * namespace (xsk_ns.c), and keeps them: which socket is which port's queue,
 * the pool owner id of the buffers its kernel side holds, and what to put
 * back when it goes.
 *
 * One UMEM per socket. Every port registers the same memory region, so a
 * frame received on one port leaves on another by handle, with no copy in
 * user space. We do not use XDP_SHARED_UMEM: each socket then needs its own
 * fill and completion rings anyway (different netdevs), and a socket with
 * its own registration is self-contained: the driver maps all four rings from
 * the one fd it is given, and closing one port's socket touches no other.
 * The kernel allows registering the same pages more than once (each
 * registration pins them; the supervisor runs as root, so RLIMIT_MEMLOCK
 * does not apply).
 *
 * The socket stays open in the supervisor for the router's life (it is the
 * driver's dev_fd, so spawn.c passes it to every instance); the kernel keeps
 * the ring indices in it, and the buffers in its rings stay owned by the
 * socket's kernel owner id across driver restarts. At shutdown the program
 * is detached first (no more frames are redirected), then the socket
 * closed, then whatever the kernel held is freed.
 */
#include "supervisor/xsk_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "supervisor/adopt.h"
#include "supervisor/zones.h"

/* libbpf and libxdp talk on stderr; keep their warnings and errors, drop the
 * chatter a normal start makes (the "xdp_metadata" section libxdp's own
 * programs carry, and the note that without bpffs, as inside `ip netns exec`,
 * libxdp attaches our one program directly rather than through its
 * dispatcher, which is what we want anyway). */
static int xsk_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level == LIBBPF_DEBUG || level == LIBBPF_INFO || strstr(fmt, "skipping unrecognized data section"))
        return 0;
    sup_vlog(4, fmt, ap);
    return 0;
}

static int xsk_libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
    if (level == LIBXDP_DEBUG || level == LIBXDP_INFO || strstr(fmt, "bpffs") || strstr(fmt, "without dispatcher"))
        return 0;
    sup_vlog(4, fmt, ap);
    return 0;
}

/*
 * The next socket's entry for @port's @queue in *@q (its port's first
 * queue's entry, for a later queue, in q->first): the socket index, so the
 * kernel owner id, is the order of the calls, the same for a supervisor
 * that adopts them as for the one that opened them.
 */
static int xsk_next(struct sup *s, int port, int queue, struct xsk_req *q, struct ipc_err *err)
{
    if (!s->xsk) {
        libbpf_set_print(xsk_libbpf_print);
        libxdp_set_print(xsk_libxdp_print);
        s->xsk = calloc(1, sizeof(*s->xsk));
        if (!s->xsk)
            return ipc_errf(err, -ENOMEM, "out of memory");
    }
    if (s->xsk->n >= SUP_DRIVERS_MAX)
        return ipc_errf(err, -E2BIG, "too many AF_XDP sockets");
    struct sup_xsk_port *x = &s->xsk->p[s->xsk->n];
    *x = (struct sup_xsk_port){.port = port, .queue = queue, .zone = s->m.ports[port].zone, .fd = -1, .counters_fd = -1,
                               .kown = (uint16_t)(IPC_OWNER_KERNEL | (unsigned)s->xsk->n)};
    *q = (struct xsk_req){.s = s, .p = &s->m.ports[port], .pi = port, .x = x, .err = err};
    for (int i = 0; queue > 0 && i < s->xsk->n; i++)
        if (s->xsk->p[i].port == port && s->xsk->p[i].queue == 0)
            q->first = &s->xsk->p[i];
    return 0;
}

/* The socket xsk_next prepared is made or adopted: it is the supervisor's,
 * and its fd and kernel owner id are the driver's to have. */
static void xsk_keep(struct sup *s, const struct sup_xsk_port *x, int *fd, uint16_t *kown)
{
    s->xsk->n++;
    *fd = x->fd;
    *kown = x->kown;
}

int sup_xsk_open(struct sup *s, int port, int queue, int *fd, uint16_t *kown, struct ipc_err *err)
{
    struct xsk_req q;
    int r = xsk_next(s, port, queue, &q, err);
    if (r < 0)
        return r;
    const struct sup_port *p = q.p;
    const struct sup_xsk_port *x = q.x;
    if (queue > 0 && !q.first)
        return ipc_errf(err, -EINVAL, "internal: port %s queue %d opened before its queue 0", p->name, queue);
    int ret = sup_in_netns(p->netns, sup_xsk_ns_open, &q, err);
    if (ret < 0)
        return ret;
    xsk_keep(s, x, fd, kown);
    if (queue == 0)
        sup_log("port %s: AF_XDP on %s queue 0: %s, XDP %s, steer = %s (%d host addresses kept by the host), "
                "busy_poll = %s, UMEM %u x %u bytes, multi-buffer %s",
                p->name, p->ifname, q.picked, x->mode == XDP_MODE_SKB ? "generic" : "native",
                p->steer == SUP_STEER_ALL ? "all" : "forward-only", q.nhost, p->busy_poll ? "yes" : "no",
                sup_zone_pool(s, p->zone)->nbufs, sup_zone_pool(s, p->zone)->frame_size,
                q.frags ? "on"
                : x->sg ? "off (the frags program was refused)"
                        : "off (XDP_USE_SG refused)");
    else
        sup_log("port %s: AF_XDP on %s queue %d: %s", p->name, p->ifname, queue, q.picked);
    return 0;
}

int sup_xsk_adopt(struct sup *s, int port, int queue, int drv, int fd_dev, int *fd, uint16_t *kown,
                  struct ipc_err *err)
{
    struct xsk_req q;
    int r = xsk_next(s, port, queue, &q, err);
    if (r < 0)
        return r;
    struct sup_xsk_port *x = q.x;
    if ((x->fd = sup_adopt_fd(s, drv, fd_dev, "its AF_XDP socket", err)) < 0)
        return x->fd;
    const struct sup_port *p = q.p;
    int ret = sup_in_netns(p->netns, sup_xsk_ns_adopt, &q, err);
    if (ret < 0) {
        close(x->fd);
        if (x->counters_fd >= 0)
            close(x->counters_fd);
        if (x->prog)
            xdp_program__close(x->prog);
        x->prog = NULL;
        return ret;
    }
    xsk_keep(s, x, fd, kown);
    sup_log("port %s: adopted the AF_XDP socket on %s queue %d (%s, XDP %s)", p->name, p->ifname, queue, q.picked,
            x->mode == XDP_MODE_SKB ? "generic" : "native");
    return 0;
}

/* One socket: its program detached (no more frames are redirected), the
 * socket closed, then what the kernel held freed. Returns how many. @p
 * NULL: a port a reload was removing when the supervisor stopped, no
 * longer in the manifest: its program stays on the device, for the next
 * `up` to replace (xsk_detach_stale). */
static uint32_t xsk_release_one(struct sup *s, struct sup_xsk_port *x, const struct sup_port *p)
{
    if (x->counters_fd >= 0)
        close(x->counters_fd);
    x->counters_fd = -1;
    if (p && (x->prog || x->knobs_set)) {
        struct ipc_err err = {{0}};
        struct xsk_detach_req d = {.s = s, .x = x, .p = p};
        int ret = sup_in_netns(p->netns, sup_xsk_ns_detach, &d, &err);
        if (ret < 0)
            sup_warn("port %s: detaching the XDP program from %s: %s", p->name, p->ifname,
                     err.msg[0] ? err.msg : strerror(-ret));
    }
    /* The socket is the driver's dev_fd (a group's: one of its grp_fd):
     * close it there, once. */
    bool closed = false;
    for (int v = 0; v < s->nsvcs && x->fd >= 0; v++) {
        struct sup_svc *sv = &s->svcs[v];
        for (int k = 0; k < sv->ngrp; k++)
            if (sv->grp_fd[k] == x->fd) {
                sv->grp_fd[k] = -1;
                if (k == 0)
                    sv->dev_fd = -1;
                if (!closed)
                    close(x->fd);
                closed = true;
            }
        if (sv->dev_fd == x->fd) {
            if (!closed)
                close(x->fd);
            closed = true;
            sv->dev_fd = -1;
        }
    }
    x->fd = -1;

    /* No frame can arrive any more: what the kernel held is free. */
    uint16_t k = x->kown;
    ipc_buf batch[256];
    uint32_t n = 0, total = 0;
    struct ipc_pool *pool = sup_zone_pool(s, x->zone);
    for (ipc_buf b = 0; b < pool->nbufs; b++) {
        if (ipc_pool_owner(pool, b) != k)
            continue;
        struct ipc_meta *m = ipc_pool_meta(pool, b);
        ipc_st_rlx(&m->owner, IPC_OWNER_SUPERVISOR);
        m->next = IPC_BUF_NONE;
        batch[n++] = b;
        if (n == 256) {
            total += ipc_pool_free(pool, batch, n);
            n = 0;
        }
    }
    if (n)
        total += ipc_pool_free(pool, batch, n);
    if (total)
        sup_log("port %s: %u buffers the kernel held returned to the pool", p ? p->name : "(removed)", total);
    return total;
}

void sup_xsk_release(struct sup *s)
{
    if (!s->xsk)
        return;
    for (int i = 0; i < s->xsk->n; i++) {
        struct sup_xsk_port *x = &s->xsk->p[i];
        if (x->port >= 0) /* (not one a reload released) */
            xsk_release_one(s, x, x->port < (int)s->m.nports ? &s->m.ports[x->port] : NULL);
    }
    s->xsk->n = 0;
    free(s->xsk);
    s->xsk = NULL;
}

uint32_t sup_xsk_release_port(struct sup *s, int port, const struct sup_port *p)
{
    uint32_t total = 0;
    for (int i = 0; s->xsk && i < s->xsk->n; i++) {
        struct sup_xsk_port *x = &s->xsk->p[i];
        if (x->port != port)
            continue;
        total += xsk_release_one(s, x, p);
        /* The entry stays, so that the others keep their kernel owner ids. */
        x->port = -1;
    }
    return total;
}

static const char *const xdp_ctr_names[SUP_XDP_NCTR] = {"redirected", "passed_host", "passed_other", "too_short"};

const char *sup_xsk_counter_name(int i)
{
    return i >= 0 && i < SUP_XDP_NCTR ? xdp_ctr_names[i] : "?";
}

int sup_xsk_counters(const struct sup *s, int port, uint64_t c[SUP_XDP_NCTR])
{
    memset(c, 0, SUP_XDP_NCTR * sizeof(c[0]));
    const struct sup_xsk_port *x = NULL;
    for (int i = 0; s->xsk && i < s->xsk->n; i++)
        if (s->xsk->p[i].port == port && s->xsk->p[i].prog)
            x = &s->xsk->p[i];
    if (!x)
        return -ENOENT;
    int fd = x->counters_fd >= 0 ? x->counters_fd : sup_xsk_map_fd(x->prog, "counters");
    int ncpu = libbpf_num_possible_cpus();
    if (fd < 0 || ncpu <= 0)
        return fd < 0 ? fd : ncpu;
    uint64_t *v = calloc((size_t)ncpu, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (uint32_t k = 0; k < SUP_XDP_NCTR; k++)
        if (bpf_map_lookup_elem(fd, &k, v) == 0)
            for (int cpu = 0; cpu < ncpu; cpu++)
                c[k] += v[cpu];
    free(v);
    return 0;
}

