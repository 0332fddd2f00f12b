/* SPDX-License-Identifier: MIT */
/*
 * supervisor/xsk_ns.c: an AF_XDP port's socket and steering program, made
 * (or, for adoption, found) inside the port's network namespace: what runs
 * under sup_in_netns for xsk.c (xsk_impl.h). To open a port's queue:
 *   1. an XSK, with the pool's frame area registered as its UMEM at the
 *      supervisor's own mapping of the pool memfd (chunk = frame, no extra
 *      headroom: the kernel writes frames at XDP_PACKET_HEADROOM = 256 =
 *      IPC_HEADROOM, where every service expects them);
 *   2. its fill, completion, RX and TX rings sized (tables/xsk.h), and the
 *      socket bound to the queue with XDP_USE_NEED_WAKEUP, the copy or
 *      zero-copy flag xdp_mode asks for, and XDP_USE_SG where the kernel
 *      and device take it (multi-buffer frames; without it, bound again
 *      without, and the log says so);
 *   3. for a port's first queue, drivers/afxdp/steer.bpf.o loaded with
 *      libxdp and attached in native or generic (skb) mode (its
 *      frags-capable entry point on a multi-buffer socket, the
 *      single-buffer one where that one is refused), the socket in its
 *      XSKMAP and the host's own addresses on the interface in its address
 *      maps; a later queue's socket goes into the first one's XSKMAP at its
 *      queue, bound in the mode the first one got.
 *
 * Modes: zerocopy = native XDP + XDP_ZEROCOPY; copy = native XDP + XDP_COPY;
 * skb = generic XDP + XDP_COPY; auto = zero-copy if the device can, else copy
 * in native mode, else generic: auto is the one mode that picks, and it logs
 * what it picked. An explicit mode the device cannot do is an error naming the
 * port and the mode (veth has native XDP but no zero-copy).
 */
#include "supervisor/xsk_impl.h"
#include "supervisor/vlan.h"
#include "supervisor/zones.h"

#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tables/xsk.h"

static const char *mode_name(enum sup_xdp_mode m)
{
    switch (m) {
    case SUP_XDP_AUTO:
        return "auto";
    case SUP_XDP_ZEROCOPY:
        return "zerocopy";
    case SUP_XDP_COPY:
        return "copy";
    case SUP_XDP_SKB:
        return "skb";
    }
    return "?";
}

/* A socket with its UMEM and rings, bound with @flags. Returns the fd or -errno. */
static int xsk_make(struct xsk_req *q, uint16_t flags, const char **what)
{
    const struct ipc_pool *pool = sup_zone_pool(q->s, q->p->zone); /* its zone's pool is its UMEM */
    int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *what = "socket(AF_XDP)";
        return -errno;
    }
    struct xdp_umem_reg mr = {
        .addr = (uint64_t)(uintptr_t)pool->frames,
        .len = (uint64_t)pool->nbufs * pool->frame_size,
        .chunk_size = pool->frame_size,
        .headroom = 0,
    };
    int sz[4] = {AFXDP_FILL_SIZE, AFXDP_COMP_SIZE, AFXDP_RX_SIZE, AFXDP_TX_SIZE};
    int opt[4] = {XDP_UMEM_FILL_RING, XDP_UMEM_COMPLETION_RING, XDP_RX_RING, XDP_TX_RING};
    if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)) < 0) {
        *what = "XDP_UMEM_REG";
        goto fail;
    }
    for (int i = 0; i < 4; i++)
        if (setsockopt(fd, SOL_XDP, opt[i], &sz[i], sizeof(sz[i])) < 0) {
            *what = "ring size";
            goto fail;
        }
    /* Copy mode sends at most 32 frames per sendto unless told otherwise
     * (XDP_MAX_TX_SKB_BUDGET, Linux 6.17+): allow a window's worth more, so
     * a burst costs fewer kicks. Older kernels refuse the option: keep 32. */
    unsigned int budget = AFXDP_TX_BUDGET;
    if (setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget, sizeof(budget)) < 0 && errno != ENOPROTOOPT &&
        errno != EINVAL) {
        *what = "XDP_MAX_TX_SKB_BUDGET";
        goto fail;
    }
    /* Copy mode builds an skb for each frame it sends, charged to this
     * socket until the receiver frees it: across a veth into another
     * namespace that is the peer's stack, on its own CPU (the kernel keeps
     * the owner across namespaces since Linux 5.14, for TCP small queues).
     * At the default wmem (208 KB, about 230 skbs of a small frame) sendto
     * then stops with EAGAIN long before the TX ring runs dry, and the
     * driver waits on the peer: room for the whole ring instead. */
    int sndbuf = (int)(AFXDP_TX_SIZE * (pool->frame_size + 1024u));
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0) {
        *what = "SO_SNDBUFFORCE";
        goto fail;
    }
    struct sockaddr_xdp sa = {
        .sxdp_family = AF_XDP,
        .sxdp_flags = (uint16_t)(flags | XDP_USE_NEED_WAKEUP),
        .sxdp_ifindex = (uint32_t)q->x->ifindex,
        .sxdp_queue_id = (uint32_t)q->x->queue,
    };
    /* A socket of a driver that just ended (a dead supervisor's, ended at
     * adoption: adopt.c) holds the queue until the kernel's deferred
     * release: wait for it, up to 10 s. */
    int r;
    for (int tries = 0; (r = bind(fd, (struct sockaddr *)&sa, sizeof(sa))) < 0 && errno == EBUSY && tries < 200;
         tries++)
        usleep(50000);
    if (r < 0) {
        *what = "bind";
        goto fail;
    }
    return fd;
fail:;
    int e = -errno;
    close(fd);
    return e;
}

/*
 * A socket bound with XDP_USE_SG if the kernel and the device take it (6.6+;
 * zero-copy also needs the driver's support), else without: *sg says which.
 * A new socket for the second try: a refused bind may have set up part of
 * the pool.
 */
static int xsk_make_sg(struct xsk_req *q, uint16_t flags, bool *sg, const char **what)
{
    int fd = xsk_make(q, (uint16_t)(flags | XDP_USE_SG), what);
    *sg = fd >= 0;
    if (fd == -EINVAL || fd == -EOPNOTSUPP)
        fd = xsk_make(q, flags, what);
    return fd;
}

/* The program's functions in drivers/afxdp/steer.bpf.c: the frags-capable
 * one and the single-buffer one. */
#define XSK_PROG_NAME "rr_steer"
#define XSK_PROG_NAME_SG "rr_steer_sg"

static bool xsk_prog_ours(const char *name)
{
    return name && (strcmp(name, XSK_PROG_NAME) == 0 || strcmp(name, XSK_PROG_NAME_SG) == 0);
}

/*
 * A supervisor that did not stop (kill -9, a crash) leaves its steering
 * program on the device, and the next attach would fail: "Device or resource
 * busy". Ours is told by its name and detached; a device that also holds a
 * program of anyone else's is left alone, and the attach then says so.
 */
static void xsk_detach_stale(struct xsk_req *q)
{
    struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(q->x->ifindex);
    if (!mp || libxdp_get_error(mp))
        return; /* nothing attached */
    unsigned ours = 0, others = 0;
    if (xdp_multiprog__is_legacy(mp)) {
        const struct xdp_program *p = xdp_multiprog__main_prog(mp);
        if (p && xsk_prog_ours(xdp_program__name(p)))
            ours++;
        else if (p)
            others++;
    } else {
        for (struct xdp_program *p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
            xsk_prog_ours(xdp_program__name(p)) ? ours++ : others++;
    }
    if (ours && !others) {
        int ret = xdp_multiprog__detach(mp);
        sup_notice("port %s: %s a steering program a supervisor that did not stop left on %s%s%s", q->p->name,
                   ret < 0 ? "could not detach" : "detached", q->p->ifname, ret < 0 ? ": " : "",
                   ret < 0 ? strerror(-ret) : "");
    }
    xdp_multiprog__close(mp);
}

static int xsk_attach(struct xsk_req *q, enum xdp_attach_mode mode)
{
    int ret = xdp_program__attach(q->x->prog, q->x->ifindex, mode, 0);
    if (ret == 0)
        q->x->mode = mode;
    return ret;
}

/* Open the program of section @sec in @path and attach it in the mode
 * xdp_mode asks for. Returns 0, or -errno with *@stage naming the step. */
static int xsk_load_attach(struct xsk_req *q, const char *path, const char *sec, const char **stage)
{
    const struct sup_port *p = q->p;
    struct sup_xsk_port *x = q->x;
    x->prog = xdp_program__open_file(path, sec, NULL);
    long perr = libxdp_get_error(x->prog);
    if (perr) {
        x->prog = NULL;
        *stage = "loading";
        return (int)perr;
    }
    int ret;
    if (p->xdp_mode == SUP_XDP_SKB) {
        ret = xsk_attach(q, XDP_MODE_SKB);
    } else {
        ret = xsk_attach(q, XDP_MODE_NATIVE);
        if (ret < 0 && p->xdp_mode == SUP_XDP_AUTO && xsk_attach(q, XDP_MODE_SKB) == 0) {
            q->picked = "copy, generic XDP";
            ret = 0;
        }
    }
    if (ret < 0) {
        xdp_program__close(x->prog);
        x->prog = NULL;
        *stage = "attaching";
    }
    return ret;
}

int sup_xsk_map_fd(struct xdp_program *prog, const char *name)
{
    struct bpf_object *o = xdp_program__bpf_obj(prog);
    struct bpf_map *m = o ? bpf_object__find_map_by_name(o, name) : NULL;
    return m ? bpf_map__fd(m) : -ENOENT;
}

/* A map of a program loaded by someone else (a dead supervisor's, found on
 * the device by its id), by name: a new fd, the caller's to close. */
static int prog_map_fd(int prog_fd, const char *name)
{
    uint32_t ids[16];
    struct bpf_prog_info info;
    memset(&info, 0, sizeof(info));
    info.nr_map_ids = 16;
    info.map_ids = (uint64_t)(uintptr_t)ids;
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) < 0)
        return -errno;
    for (uint32_t i = 0; i < info.nr_map_ids && i < 16; i++) {
        int fd = bpf_map_get_fd_by_id(ids[i]);
        if (fd < 0)
            continue;
        struct bpf_map_info mi;
        memset(&mi, 0, sizeof(mi));
        uint32_t ml = sizeof(mi);
        if (bpf_obj_get_info_by_fd(fd, &mi, &ml) == 0 && strncmp(mi.name, name, sizeof(mi.name)) == 0)
            return fd;
        close(fd);
    }
    return -ENOENT;
}

/* The host's own IPv4 and IPv6 addresses on the interface into host_addrs
 * and host_addrs6. */
static int fill_host_addrs(struct xsk_req *q)
{
    int mfd = sup_xsk_map_fd(q->x->prog, "host_addrs");
    if (mfd < 0)
        return ipc_errf(q->err, mfd, "port %s: steer.bpf.o has no host_addrs map", q->p->name);
    int mfd6 = sup_xsk_map_fd(q->x->prog, "host_addrs6");
    if (mfd6 < 0)
        return ipc_errf(q->err, mfd6, "port %s: steer.bpf.o has no host_addrs6 map", q->p->name);
    struct ifaddrs *ifa0;
    if (getifaddrs(&ifa0) < 0)
        return ipc_errf(q->err, -errno, "port %s: getifaddrs: %s", q->p->name, strerror(errno));
    for (struct ifaddrs *a = ifa0; a; a = a->ifa_next) {
        if (!a->ifa_addr || strcmp(a->ifa_name, q->p->ifname) != 0)
            continue;
        if (a->ifa_addr->sa_family == AF_INET6) {
            const struct in6_addr *in6 = &((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
            uint32_t one = 1;
            for (uint32_t k = 0; k < q->p->naddr6; k++)
                if (memcmp(q->p->addr6[k].addr, in6, 16) == 0)
                    sup_log("port %s: warning: the host has one of the router's own IPv6 addresses on %s; frames "
                            "for it go to the host",
                            q->p->name, q->p->ifname);
            if (bpf_map_update_elem(mfd6, in6, &one, BPF_ANY) == 0)
                q->nhost++;
            continue;
        }
        if (a->ifa_addr->sa_family != AF_INET)
            continue;
        uint32_t addr = ((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr, one = 1;
        if (ntohl(addr) == q->p->address.addr)
            sup_warn("port %s: warning: the host has the router's own address %u.%u.%u.%u on %s; frames for it "
                     "go to the host",
                     q->p->name, (q->p->address.addr >> 24) & 255, (q->p->address.addr >> 16) & 255,
                     (q->p->address.addr >> 8) & 255, q->p->address.addr & 255, q->p->ifname);
        if (bpf_map_update_elem(mfd, &addr, &one, BPF_ANY) == 0)
            q->nhost++;
    }
    freeifaddrs(ifa0);
    return 0;
}

/*
 * Opening a socket, in its port's netns, is a list of steps (open_steps):
 * each returns 0 to go on, 1 when the socket is complete (a later queue
 * needs no program of its own), or -errno with q->err. A step that fails
 * undoes its own part; the ones before it are undone by their undo
 * functions, last first.
 */

/* The device: its index, its MAC (the port's unless the manifest gives
 * one), and up. */
static int step_device(struct xsk_req *q)
{
    const struct sup_port *p = q->p;
    struct sup_xsk_port *x = q->x;
    x->ifindex = (int)if_nametoindex(p->ifname);
    if (x->ifindex == 0)
        return ipc_errf(q->err, -ENODEV, "port %s: no netdev %s%s%s", p->name, p->ifname,
                        p->netns[0] ? " in netns " : "", p->netns);
    int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sk < 0)
        return ipc_errf(q->err, -errno, "port %s: socket: %s", p->name, strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", p->ifname);
    if (!p->has_mac && ioctl(sk, SIOCGIFHWADDR, &ifr) == 0) {
        struct sup_port *wp = &q->s->m.ports[q->pi];
        memcpy(wp->mac, ifr.ifr_hwaddr.sa_data, 6);
        wp->has_mac = true;
    }
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", p->ifname);
    if (ioctl(sk, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags |= IFF_UP;
        ioctl(sk, SIOCSIFFLAGS, &ifr);
    }
    close(sk);
    return 0;
}

/* The socket with its UMEM and rings, bound in the mode xdp_mode asks for
 * (a later queue: the one its port's first queue got). */
static int step_socket(struct xsk_req *q)
{
    const struct sup_port *p = q->p;
    struct sup_xsk_port *x = q->x;
    const char *what = "";
    int fd;
    if (q->first) {
        x->bind_flags = q->first->bind_flags;
        fd = xsk_make_sg(q, x->bind_flags, &x->sg, &what);
        q->picked = x->bind_flags == XDP_ZEROCOPY ? "zero-copy" : "copy";
    } else if (p->xdp_mode == SUP_XDP_ZEROCOPY || p->xdp_mode == SUP_XDP_AUTO) {
        fd = xsk_make_sg(q, XDP_ZEROCOPY, &x->sg, &what);
        if (fd < 0 && p->xdp_mode == SUP_XDP_ZEROCOPY)
            return ipc_errf(q->err, fd,
                            "port %s: xdp_mode = zerocopy is not available on %s (%s: %s); use xdp_mode = copy or auto",
                            p->name, p->ifname, what, strerror(-fd));
        q->picked = "zero-copy";
        x->bind_flags = XDP_ZEROCOPY;
        if (fd < 0) {
            fd = xsk_make_sg(q, XDP_COPY, &x->sg, &what);
            q->picked = "copy";
            x->bind_flags = XDP_COPY;
        }
    } else {
        fd = xsk_make_sg(q, XDP_COPY, &x->sg, &what);
        q->picked = "copy";
        x->bind_flags = XDP_COPY;
    }
    if (fd == -EINVAL && x->queue > 0)
        return ipc_errf(q->err, fd,
                        "port %s: AF_XDP socket on %s queue %d: %s: %s (queues = %u, but %s may have fewer RX "
                        "queues: see ethtool -l %s)",
                        p->name, p->ifname, x->queue, what, strerror(-fd), p->queues, p->ifname, p->ifname);
    if (fd < 0)
        return ipc_errf(q->err, fd, "port %s: AF_XDP socket on %s queue %d (xdp_mode = %s): %s: %s", p->name,
                        p->ifname, x->queue, mode_name(p->xdp_mode), what, strerror(-fd));
    x->fd = fd;
    return 0;
}

static void undo_socket(struct xsk_req *q)
{
    close(q->x->fd);
    q->x->fd = -1;
}

static int step_busy_poll(struct xsk_req *q)
{
    return q->p->busy_poll ? sup_xsk_busy_poll(q, q->x->fd) : 0;
}

/* The NAPI: whether the socket names one; the device's knobs (a port's
 * first queue sets them). Neither fails the port. */
static int step_napi(struct xsk_req *q)
{
    sup_xsk_napi_id(q, q->x->fd);
    sup_xsk_napi_knobs(q);
    return 0;
}

static void undo_napi(struct xsk_req *q)
{
    sup_xsk_napi_restore(q->s, q->p, q->x);
}

/* A later queue: its slot in the socket map of the program its port's
 * first queue loaded, and it is done. */
static int step_queue_map(struct xsk_req *q)
{
    struct sup_xsk_port *x = q->x;
    if (!q->first)
        return 0;
    uint32_t qi = (uint32_t)x->queue;
    int xm = sup_xsk_map_fd(q->first->prog, "xsks");
    x->mode = q->first->mode;
    if (xm < 0 || bpf_map_update_elem(xm, &qi, &x->fd, BPF_ANY) < 0)
        return ipc_errf(q->err, xm < 0 ? xm : -errno, "port %s: queue %d into the XDP socket map: %s", q->p->name,
                        x->queue, strerror(xm < 0 ? -xm : errno));
    return 1;
}

/* The steering program, attached: a multi-buffer socket gets the
 * frags-capable entry point; a device or kernel that refuses it gets the
 * single-buffer one (frames then come whole in one buffer or not at all,
 * as without XDP_USE_SG). */
static int step_program(struct xsk_req *q)
{
    const struct sup_port *p = q->p;
    struct sup_xsk_port *x = q->x;
    char *path = q->path;
    const char *env = getenv("RINGROUTER_BPF");
    snprintf(path, sizeof(q->path), "%s", env && env[0] ? env : "");
    if (!path[0])
        snprintf(path, sizeof(q->path), "%s/steer.bpf.o", q->s->bindir);
    xsk_detach_stale(q);
    const char *stage = "loading";
    int ret = -EOPNOTSUPP;
    if (x->sg && (ret = xsk_load_attach(q, path, "xdp.frags", &stage)) < 0)
        sup_notice("port %s: the multi-buffer steering program on %s: %s %s: %s; the single-buffer one instead",
                   p->name, p->ifname, stage, path, strerror(-ret));
    q->frags = ret == 0;
    if (!q->frags && (ret = xsk_load_attach(q, path, "xdp", &stage)) < 0) {
        if (stage[0] == 'l')
            return ipc_errf(q->err, ret, "port %s: loading %s: %s", p->name, path, strerror(-ret));
        return ipc_errf(q->err, ret, "port %s: attaching the XDP program to %s in %s mode (xdp_mode = %s): %s",
                        p->name, p->ifname, p->xdp_mode == SUP_XDP_SKB ? "skb" : "native", mode_name(p->xdp_mode),
                        strerror(-ret));
    }
    return 0;
}

static void undo_program(struct xsk_req *q)
{
    struct sup_xsk_port *x = q->x;
    xdp_program__detach(x->prog, x->ifindex, x->mode, 0);
    xdp_program__close(x->prog);
    x->prog = NULL;
}

/* Its maps: the socket at queue 0, the steer setting, the host's own
 * addresses unless every frame is the router's. */
static int step_program_maps(struct xsk_req *q)
{
    const struct sup_port *p = q->p;
    struct sup_xsk_port *x = q->x;
    int xm = sup_xsk_map_fd(x->prog, "xsks"), cm = sup_xsk_map_fd(x->prog, "cfg");
    uint32_t q0 = 0, all = p->steer == SUP_STEER_ALL;
    uint32_t flags = all | (sup_vlan_parent(&q->s->m, q->pi) ? 2u : 0u); /* steer.bpf.c's cfg */
    if (xm < 0 || cm < 0)
        return ipc_errf(q->err, -ENOENT, "port %s: %s has no xsks or cfg map", p->name, q->path);
    if (bpf_map_update_elem(xm, &q0, &x->fd, BPF_ANY) < 0 || bpf_map_update_elem(cm, &q0, &flags, BPF_ANY) < 0)
        return ipc_errf(q->err, -errno, "port %s: updating the XDP maps: %s", p->name, strerror(errno));
    return all ? 0 : fill_host_addrs(q);
}

static const struct {
    int (*run)(struct xsk_req *);
    void (*undo)(struct xsk_req *); /* NULL: nothing to undo */
} open_steps[] = {
    {step_device, NULL},        {step_socket, undo_socket}, {step_busy_poll, NULL},        {step_napi, undo_napi},
    {step_queue_map, NULL},     {step_program, undo_program}, {step_program_maps, NULL},
};

int sup_xsk_ns_open(void *arg)
{
    struct xsk_req *q = arg;
    size_t i = 0, n = sizeof(open_steps) / sizeof(open_steps[0]);
    int ret = 0;
    while (i < n && (ret = open_steps[i].run(q)) == 0)
        i++;
    if (ret >= 0)
        return 0;
    while (i-- > 0)
        if (open_steps[i].undo)
            open_steps[i].undo(q);
    return ret;
}


/* Adoption, inside the port's netns: the device, the socket's bind mode,
 * and for a port's first queue the steering program a dead supervisor left
 * attached (found by the device, checked by its name), its mode and its
 * counters map; the NAPI knobs it set, whose originals it recorded. */
int sup_xsk_ns_adopt(void *arg)
{
    struct xsk_req *q = arg;
    const struct sup_port *p = q->p;
    struct sup_xsk_port *x = q->x;
    x->ifindex = (int)if_nametoindex(p->ifname);
    if (x->ifindex == 0)
        return ipc_errf(q->err, -ENODEV, "port %s: no netdev %s", p->name, p->ifname);
    if (!p->has_mac) { /* the port's MAC is the device's, as step_device finds it */
        int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, IFNAMSIZ, "%s", p->ifname);
        if (sk < 0 || ioctl(sk, SIOCGIFHWADDR, &ifr) < 0) {
            int e = errno;
            if (sk >= 0)
                close(sk);
            return ipc_errf(q->err, -e, "port %s: the MAC of %s: %s", p->name, p->ifname, strerror(e));
        }
        close(sk);
        struct sup_port *wp = &q->s->m.ports[q->pi];
        memcpy(wp->mac, ifr.ifr_hwaddr.sa_data, 6);
        wp->has_mac = true;
    }
    struct xdp_options o;
    socklen_t ol = sizeof(o);
    if (getsockopt(x->fd, SOL_XDP, XDP_OPTIONS, &o, &ol) < 0)
        return ipc_errf(q->err, -errno, "port %s: the adopted fd is not an AF_XDP socket: %s", p->name,
                        strerror(errno));
    x->bind_flags = o.flags & XDP_OPTIONS_ZEROCOPY ? XDP_ZEROCOPY : XDP_COPY;
    q->picked = x->bind_flags == XDP_ZEROCOPY ? "zero-copy" : "copy";
    if (q->first) {
        x->mode = q->first->mode;
        return 0;
    }
    struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(x->ifindex);
    if (!mp || libxdp_get_error(mp))
        return ipc_errf(q->err, -ENOENT, "port %s: no XDP program on %s to adopt", p->name, p->ifname);
    struct xdp_program *main = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp)
                                                             : xdp_multiprog__next_prog(NULL, mp);
    int ret = 0;
    if (!main || !xsk_prog_ours(xdp_program__name(main))) {
        ret = ipc_errf(q->err, -ENOENT, "port %s: the XDP program on %s is not ours (%s)", p->name, p->ifname,
                       main ? xdp_program__name(main) : "none");
    } else {
        x->mode = xdp_multiprog__attach_mode(mp);
        x->prog = xdp_program__from_id(xdp_program__id(main));
        long perr = libxdp_get_error(x->prog);
        if (perr) {
            x->prog = NULL;
            ret = ipc_errf(q->err, (int)perr, "port %s: the XDP program on %s: %s", p->name, p->ifname,
                           strerror((int)-perr));
        } else {
            x->counters_fd = prog_map_fd(xdp_program__fd(x->prog), "counters");
        }
    }
    xdp_multiprog__close(mp);
    if (ret == 0) {
        sup_xsk_napi_adopt(q);
        sup_xsk_napi_id(q, x->fd);
    }
    return ret;
}

/* Inside the port's netns: the program detached, the NAPI knobs restored. */
int sup_xsk_ns_detach(void *arg)
{
    struct xsk_detach_req *d = arg;
    struct sup_xsk_port *x = d->x;
    int ret = 0;
    if (x->prog) {
        ret = xdp_program__detach(x->prog, x->ifindex, x->mode, 0);
        xdp_program__close(x->prog);
        x->prog = NULL;
    }
    sup_xsk_napi_restore(d->s, d->p, x);
    return ret;
}
