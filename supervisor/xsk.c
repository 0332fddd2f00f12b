/* SPDX-License-Identifier: MIT */
/*
 * supervisor/xsk.c: AF_XDP ports (xsk.h). For each port with driver = afxdp
 * the supervisor, inside the port's network namespace:
 *   1. creates an XSK and registers the pool's frame area as its UMEM, at
 *      the supervisor's own mapping of the pool memfd (chunk = frame, no
 *      extra headroom: the kernel writes frames at XDP_PACKET_HEADROOM = 256
 *      = IPC_HEADROOM, where every service expects them);
 *   2. sizes its fill, completion, RX and TX rings (drivers/afxdp/afxdp.h)
 *      and binds it to queue 0 of the netdev, with XDP_USE_NEED_WAKEUP, the
 *      copy or zero-copy flag xdp_mode asks for, and XDP_USE_SG where the
 *      kernel and device take it (multi-buffer frames; without it, bound
 *      again without, and the log says so);
 *   3. loads drivers/afxdp/steer.bpf.o with libxdp and attaches it in native
 *      or generic (skb) mode (its frags-capable entry point on a multi-buffer
 *      socket, the single-buffer one where that one is refused), puts the
 *      socket in its XSKMAP and the host's own IPv4 addresses on the
 *      interface in its address map.
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
 * Modes: zerocopy = native XDP + XDP_ZEROCOPY; copy = native XDP + XDP_COPY;
 * skb = generic XDP + XDP_COPY; auto = zero-copy if the device can, else copy
 * in native mode, else generic: auto is the one mode that picks, and it logs
 * what it picked. An explicit mode the device cannot do is an error naming the
 * port and the mode (veth has native XDP but no zero-copy).
 *
 * Queues: one queue (queue 0) per port for now; queues > 1 is refused with a
 * clear error (the manifest has no per-queue driver services yet).
 *
 * The socket stays open in the supervisor for the router's life (it is the
 * driver's dev_fd, so spawn.c passes it to every instance); the kernel keeps
 * the ring indices in it, and the buffers in its rings stay owned by
 * IPC_OWNER_KERNEL | port across driver restarts. At shutdown the program is
 * detached first (no more frames are redirected), then the socket closed,
 * then whatever the kernel held is freed.
 */
#include "supervisor/xsk.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "supervisor/adopt.h"
#include "tables/xsk.h"

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SO_BUSY_POLL
#define SO_BUSY_POLL 46
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif
#ifndef SO_INCOMING_NAPI_ID
#define SO_INCOMING_NAPI_ID 56
#endif
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4) /* linux/if_xdp.h, 6.6+ */
#endif
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9 /* linux/if_xdp.h, 6.17+ */
#endif

/* One socket: a port's queue. The port's first queue's entry also holds
 * the port's program and the device's NAPI knobs. */
struct sup_xsk_port {
    int port;
    int queue;
    uint16_t kown; /* IPC_OWNER_KERNEL | the socket's index: who the buffers it holds belong to */
    int ifindex;
    enum xdp_attach_mode mode;
    struct xdp_program *prog;
    int fd; /* the socket: also the driver's dev_fd */
    uint16_t bind_flags; /* XDP_COPY or XDP_ZEROCOPY */
    bool sg;             /* bound with XDP_USE_SG: a frame may come in several buffers */
    bool knobs_set;      /* the device's NAPI knobs are ours until shutdown */
    bool no_napi_id;     /* busy polling, but the socket names no NAPI to poll (xsk_napi_id) */
    int counters_fd;     /* adopted: the program's counters map, ours to close; -1: the program's object has it */
    uint32_t knob_old[2]; /* napi_defer_hard_irqs, gro_flush_timeout as we found them */
};

struct sup_xsk {
    int n;
    struct sup_xsk_port p[SUP_DRIVERS_MAX];
};

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

struct xsk_req {
    struct sup *s;
    const struct sup_port *p;
    int pi;
    struct sup_xsk_port *x;
    struct ipc_err *err;
    const char *picked; /* what auto chose, for the log */
    int nhost;
    bool frags; /* the frags-capable program is attached */
    struct sup_xsk_port *first; /* the port's queue 0, for a later queue: its program and mode */
};

/* A socket with its UMEM and rings, bound with @flags. Returns the fd or -errno. */
static int xsk_make(struct xsk_req *q, uint16_t flags, const char **what)
{
    const struct ipc_pool *pool = &q->s->pool;
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

static int map_fd(struct xdp_program *prog, const char *name)
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
    int mfd = map_fd(q->x->prog, "host_addrs");
    if (mfd < 0)
        return ipc_errf(q->err, mfd, "port %s: steer.bpf.o has no host_addrs map", q->p->name);
    int mfd6 = map_fd(q->x->prog, "host_addrs6");
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

/* ---- busy polling ------------------------------------------------------- */

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

static int knob_state_read(const struct sup *s, const struct sup_port *p, uint32_t orig[2])
{
    char path[SUP_PATH_MAX + 32];
    knob_state_path(s, p, path, sizeof(path));
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
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
    unlink(path);
}

/*
 * SO_PREFER_BUSY_POLL with SO_BUSY_POLL and SO_BUSY_POLL_BUDGET: the
 * driver's recvfrom and sendto then run the device's NAPI on the driver's
 * own CPU (veth's included), the way DPDK's af_xdp driver works, so that
 * receive costs no interrupt and no softirq on another CPU. The options
 * need CAP_NET_ADMIN, hence here. The socket keeps them across driver
 * restarts.
 */
static int xsk_busy_poll(struct xsk_req *q, int fd)
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
 * receive work: bench/README.md, "Runs of 2026-12-06 (4)". Then the
 * driver is told not to poll (sup_xsk_busy_poll_ok), which would only cost
 * it a system call a loop. Before 6.13 the id came with the first frame,
 * so a 0 at bind says nothing there.
 */
static void xsk_napi_id(struct xsk_req *q, int fd)
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
static void xsk_napi_knobs(struct xsk_req *q)
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

static int xsk_open_in_ns(void *arg)
{
    struct xsk_req *q = arg;
    const struct sup_port *p = q->p;
    struct sup_xsk_port *x = q->x;
    const char *what = "";
    int ret;

    x->ifindex = (int)if_nametoindex(p->ifname);
    if (x->ifindex == 0)
        return ipc_errf(q->err, -ENODEV, "port %s: no netdev %s%s%s", p->name, p->ifname,
                        p->netns[0] ? " in netns " : "", p->netns);

    /* The device's MAC is the port's unless the manifest gives one, and up. */
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

    /* 1-2. The socket, in the bind mode asked for (a later queue: the one
     * its port's first queue got). */
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
    if (fd < 0 && fd == -EINVAL && x->queue > 0)
        return ipc_errf(q->err, fd,
                        "port %s: AF_XDP socket on %s queue %d: %s: %s (queues = %u, but %s may have fewer RX "
                        "queues: see ethtool -l %s)",
                        p->name, p->ifname, x->queue, what, strerror(-fd), p->queues, p->ifname, p->ifname);
    if (fd < 0)
        return ipc_errf(q->err, fd, "port %s: AF_XDP socket on %s queue %d (xdp_mode = %s): %s: %s", p->name,
                        p->ifname, x->queue, mode_name(p->xdp_mode), what, strerror(-fd));
    x->fd = fd;
    if (p->busy_poll && (ret = xsk_busy_poll(q, fd)) < 0)
        goto out_fd;
    xsk_napi_id(q, fd);
    xsk_napi_knobs(q);
    if (q->first) { /* the port's program is loaded: our queue's slot in its socket map */
        uint32_t qi = (uint32_t)x->queue;
        int xm = map_fd(q->first->prog, "xsks");
        x->mode = q->first->mode;
        if (xm < 0 || bpf_map_update_elem(xm, &qi, &fd, BPF_ANY) < 0) {
            ret = ipc_errf(q->err, xm < 0 ? xm : -errno, "port %s: queue %d into the XDP socket map: %s", p->name,
                           x->queue, strerror(xm < 0 ? -xm : errno));
            goto out_fd;
        }
        return 0;
    }

    /* 3. The steering program. */
    char path[sizeof(q->s->bindir) + 32];
    const char *env = getenv("RINGROUTER_BPF");
    snprintf(path, sizeof(path), "%s", env && env[0] ? env : "");
    if (!path[0])
        snprintf(path, sizeof(path), "%s/steer.bpf.o", q->s->bindir);
    xsk_detach_stale(q);
    /* A multi-buffer socket gets the frags-capable entry point; a device or
     * kernel that refuses it gets the single-buffer one (frames then come
     * whole in one buffer or not at all, as without XDP_USE_SG). */
    const char *stage = "loading";
    ret = -EOPNOTSUPP;
    if (x->sg && (ret = xsk_load_attach(q, path, "xdp.frags", &stage)) < 0)
        sup_notice("port %s: the multi-buffer steering program on %s: %s %s: %s; the single-buffer one instead",
                   p->name, p->ifname, stage, path, strerror(-ret));
    q->frags = ret == 0;
    if (!q->frags && (ret = xsk_load_attach(q, path, "xdp", &stage)) < 0) {
        if (stage[0] == 'l')
            ret = ipc_errf(q->err, ret, "port %s: loading %s: %s", p->name, path, strerror(-ret));
        else
            ret = ipc_errf(q->err, ret, "port %s: attaching the XDP program to %s in %s mode (xdp_mode = %s): %s",
                           p->name, p->ifname, p->xdp_mode == SUP_XDP_SKB ? "skb" : "native",
                           mode_name(p->xdp_mode), strerror(-ret));
        goto out_fd;
    }
    int xm = map_fd(x->prog, "xsks"), cm = map_fd(x->prog, "cfg");
    uint32_t q0 = 0, all = p->steer == SUP_STEER_ALL;
    if (xm < 0 || cm < 0) {
        ret = ipc_errf(q->err, -ENOENT, "port %s: %s has no xsks or cfg map", p->name, path);
        goto out_detach;
    }
    if (bpf_map_update_elem(xm, &q0, &fd, BPF_ANY) < 0 || bpf_map_update_elem(cm, &q0, &all, BPF_ANY) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: updating the XDP maps: %s", p->name, strerror(errno));
        goto out_detach;
    }
    if (!all && (ret = fill_host_addrs(q)) < 0)
        goto out_detach;
    return 0;

out_detach:
    xdp_program__detach(x->prog, x->ifindex, x->mode, 0);
    xdp_program__close(x->prog);
    x->prog = NULL;
out_fd:
    if (x->knobs_set) {
        char msg[160];
        napi_knobs(p->ifname, x->knob_old, NULL, true, msg, sizeof(msg));
        x->knobs_set = false;
    }
    close(fd);
    x->fd = -1;
    return ret;
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
    *x = (struct sup_xsk_port){.port = port, .queue = queue, .fd = -1, .counters_fd = -1,
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
    int ret = sup_in_netns(p->netns, xsk_open_in_ns, &q, err);
    if (ret < 0)
        return ret;
    xsk_keep(s, x, fd, kown);
    if (queue == 0)
        sup_log("port %s: AF_XDP on %s queue 0: %s, XDP %s, steer = %s (%d host addresses kept by the host), "
                "busy_poll = %s, UMEM %u x %u bytes, multi-buffer %s",
                p->name, p->ifname, q.picked, x->mode == XDP_MODE_SKB ? "generic" : "native",
                p->steer == SUP_STEER_ALL ? "all" : "forward-only", q.nhost, p->busy_poll ? "yes" : "no",
                s->pool.nbufs, s->pool.frame_size,
                q.frags ? "on"
                : x->sg ? "off (the frags program was refused)"
                        : "off (XDP_USE_SG refused)");
    else
        sup_log("port %s: AF_XDP on %s queue %d: %s", p->name, p->ifname, queue, q.picked);
    return 0;
}

/* Adoption, inside the port's netns: the device, the socket's bind mode,
 * and for a port's first queue the steering program a dead supervisor left
 * attached (found by the device, checked by its name), its mode and its
 * counters map; the NAPI knobs it set, whose originals it recorded. */
static int xsk_adopt_in_ns(void *arg)
{
    struct xsk_req *q = arg;
    const struct sup_port *p = q->p;
    struct sup_xsk_port *x = q->x;
    x->ifindex = (int)if_nametoindex(p->ifname);
    if (x->ifindex == 0)
        return ipc_errf(q->err, -ENODEV, "port %s: no netdev %s", p->name, p->ifname);
    if (!p->has_mac) { /* the port's MAC is the device's, as xsk_open_in_ns found it */
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
    if (ret == 0 && knob_state_read(q->s, p, x->knob_old) == 0)
        x->knobs_set = true; /* restored at shutdown, as if we had set them */
    if (ret == 0)
        xsk_napi_id(q, x->fd);
    return ret;
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
    int ret = sup_in_netns(p->netns, xsk_adopt_in_ns, &q, err);
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

struct xsk_detach_req {
    const struct sup *s;
    struct sup_xsk_port *x;
    const struct sup_port *p;
};

static int xsk_detach_in_ns(void *arg)
{
    struct xsk_detach_req *d = arg;
    struct sup_xsk_port *x = d->x;
    int ret = 0;
    if (x->prog) {
        ret = xdp_program__detach(x->prog, x->ifindex, x->mode, 0);
        xdp_program__close(x->prog);
        x->prog = NULL;
    }
    if (x->knobs_set) {
        char msg[160];
        if (napi_knobs(d->p->ifname, x->knob_old, NULL, true, msg, sizeof(msg)) < 0)
            sup_warn("port %s: restoring %s's NAPI knobs: %s", d->p->name, d->p->ifname, msg);
        else
            knob_state_remove(d->s, d->p);
        x->knobs_set = false;
    }
    return ret;
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
        int ret = sup_in_netns(p->netns, xsk_detach_in_ns, &d, &err);
        if (ret < 0)
            sup_warn("port %s: detaching the XDP program from %s: %s", p->name, p->ifname,
                     err.msg[0] ? err.msg : strerror(-ret));
    }
    /* The socket is the driver's dev_fd: close it there, once. */
    for (int v = 0; v < s->nsvcs; v++)
        if (s->svcs[v].dev_fd == x->fd && x->fd >= 0) {
            close(x->fd);
            s->svcs[v].dev_fd = -1;
        }
    x->fd = -1;

    /* No frame can arrive any more: what the kernel held is free. */
    uint16_t k = x->kown;
    ipc_buf batch[256];
    uint32_t n = 0, total = 0;
    for (ipc_buf b = 0; b < s->pool.nbufs; b++) {
        if (ipc_pool_owner(&s->pool, b) != k)
            continue;
        struct ipc_meta *m = ipc_pool_meta(&s->pool, b);
        ipc_st_rlx(&m->owner, IPC_OWNER_SUPERVISOR);
        m->next = IPC_BUF_NONE;
        batch[n++] = b;
        if (n == 256) {
            total += ipc_pool_free(&s->pool, batch, n);
            n = 0;
        }
    }
    if (n)
        total += ipc_pool_free(&s->pool, batch, n);
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
    int fd = x->counters_fd >= 0 ? x->counters_fd : map_fd(x->prog, "counters");
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
