/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_setup.c: what rr-routes is started with, made by the
 * supervisor (docs/routing.md): the route channel (tables/rtchan.h), the
 * eventfd by which it says a batch is there, and its sources, opened in
 * the control namespace: a NETLINK_ROUTE socket bound to the IPv4 and IPv6
 * route groups (so it needs no socket call of its own, and no capability),
 * and, with [routes] fpm, a listening TCP socket for zebra. Opening a
 * socket parses nothing: no netlink or FPM byte is ever read by root.
 */
#include "supervisor/routes_impl.h"
#include "supervisor/sup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* The kernel queues notifications for a reader that is behind up to this
 * (SO_RCVBUFFORCE, as root); past it they are lost (ENOBUFS) and rr-routes
 * reads the table again. */
#define RT_NL_RCVBUF (32 << 20)
/* FPM: what zebra may have in flight before TCP pushes back. */
#define RT_FPM_RCVBUF (1 << 20)

struct rt_open {
    const struct sup_routes *r;
    int nl, fpm;
    struct ipc_err *err;
};

static int rt_open_ns(void *arg)
{
    struct rt_open *o = arg;
    const struct sup_routes *r = o->r;
    if (r->table) {
        o->nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
        if (o->nl < 0)
            return ipc_errf(o->err, -errno, "NETLINK_ROUTE socket: %s", strerror(errno));
        int sz = RT_NL_RCVBUF;
        if (setsockopt(o->nl, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
            setsockopt(o->nl, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
        struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE};
        if (bind(o->nl, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            return ipc_errf(o->err, -errno, "binding the netlink socket to the route groups: %s", strerror(errno));
    }
    if (r->fpm) {
        int fam = r->fpm_v6 ? AF_INET6 : AF_INET;
        o->fpm = socket(fam, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (o->fpm < 0)
            return ipc_errf(o->err, -errno, "FPM socket: %s", strerror(errno));
        int one = 1, sz = RT_FPM_RCVBUF;
        setsockopt(o->fpm, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        setsockopt(o->fpm, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)); /* inherited by the connection */
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof(ss));
        socklen_t sl;
        if (r->fpm_v6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            a->sin6_family = AF_INET6;
            a->sin6_port = htons(r->fpm_port);
            memcpy(&a->sin6_addr, r->fpm_addr, 16);
            sl = sizeof(*a);
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            a->sin_family = AF_INET;
            a->sin_port = htons(r->fpm_port);
            memcpy(&a->sin_addr, r->fpm_addr, 4);
            sl = sizeof(*a);
        }
        if (bind(o->fpm, (struct sockaddr *)&ss, sl) < 0 || listen(o->fpm, 4) < 0)
            return ipc_errf(o->err, -errno, "FPM: listening on port %u: %s", r->fpm_port, strerror(errno));
    }
    return 0;
}

int sup_routes_setup(struct sup *s, struct ipc_err *err)
{
    struct sup_rtm *r = &sup_rtm;
    const struct sup_routes *m = &s->m.daemon;
    if (!m->src.line)
        return 0;
    struct rt_open o = {.r = m, .nl = -1, .fpm = -1, .err = err};
    struct ipc_err why = {{0}};
    o.err = &why;
    int ret = sup_in_netns(m->netns, rt_open_ns, &o, &why);
    if (ret < 0) {
        if (o.nl >= 0)
            close(o.nl);
        if (o.fpm >= 0)
            close(o.fpm);
        unsigned line = m->src.key_line[SUP_ROUTES_NETNS] ? m->src.key_line[SUP_ROUTES_NETNS] : m->src.line;
        return ipc_errf(err, ret, "%s: line %u: [routes]%s: %s", s->manifest_name, line,
                        m->src.key_line[SUP_ROUTES_NETNS] ? " netns" : "", why.msg);
    }
    r->nl_fd = o.nl;
    r->fpm_fd = o.fpm;
    char name[64];
    snprintf(name, sizeof(name), "rtchan-%s", s->m.router.name);
    void *base;
    if ((ret = ipc_shm_create(name, IPC_SHM_RTCHAN, RTC_VERSION, sizeof(struct rtc_shared), &r->chan_fd, &base,
                              err)) < 0)
        return ret;
    r->chan = base;
    r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->wake_fd < 0)
        return ipc_errf(err, -errno, "eventfd: %s", strerror(errno));
    r->t0_ns = sup_now_ns();
    r->on = true;
    char tbl[32] = "no kernel table";
    if (m->table)
        snprintf(tbl, sizeof(tbl), "kernel table %u", m->table);
    sup_log("routes: %s%s%s, FPM %s (port %u); grace %u s", tbl, m->netns[0] ? " in netns " : "", m->netns,
            m->fpm ? "listening" : "off", m->fpm ? m->fpm_port : 0, m->grace_s);
    return 0;
}

void sup_routes_teardown(struct sup *s)
{
    struct sup_rtm *r = &sup_rtm;
    (void)s;
    int *fds[] = {&r->nl_fd, &r->fpm_fd, &r->wake_fd, &r->chan_fd};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
    if (r->chan)
        ipc_shm_unmap(r->chan, sizeof(*r->chan));
    r->chan = NULL;
    sup_rtmap_free(&r->map);
    r->on = false;
    r->registered = false;
}

void sup_routes_fds(const struct sup *s, int *src, int k0)
{
    (void)s;
    src[k0] = sup_rtm.nl_fd;
    src[k0 + 1] = sup_rtm.fpm_fd;
    src[k0 + 2] = sup_rtm.chan_fd;
    src[k0 + 3] = sup_rtm.wake_fd;
}

uint32_t sup_routes_config(const struct sup *s, void *x, int k0)
{
    struct tbl_routes_cfg *c = x;
    tbl_cfg_hdr_init(&c->hdr, IPC_SVC_ROUTES, TBL_ROUTES_CFG_VERSION, sizeof(*c));
    c->nl_fd = sup_rtm.nl_fd >= 0 ? k0 : -1;
    c->fpm_fd = sup_rtm.fpm_fd >= 0 ? k0 + 1 : -1;
    c->chan_fd = k0 + 2;
    c->sup_wake_fd = k0 + 3;
    c->table = s->m.daemon.table;
    return sizeof(*c);
}
