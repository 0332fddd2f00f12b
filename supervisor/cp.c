/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cp.c: each port's host-side interface in the control namespace
 * (cp.h). The interface is a TAP made here, in that namespace, and handed
 * to its cp-PORT service like any TAP port's device: the supervisor keeps a
 * dup, so it outlives a restart of the service, is adopted with it after a
 * crash of the supervisor, and goes with its last fd at `down`.
 *
 * It carries the port's MAC, MTU and addresses, so that what the kernel
 * there sends is what the router would send from the port (the router
 * passes it on unchanged), and what the router hands it (the port's
 * frames, unchanged) is addressed to it. It gets no offloads: what it
 * sends is whole, checksummed frames any port can carry. Its kernel must
 * not invent addresses or run DAD on the router's own (the router has
 * done that on the link), nor listen to Router Advertisements: its IPv6
 * link-local address is the port's, from the manifest.
 */
#include "supervisor/cp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "supervisor/adopt.h"
#include "supervisor/routes.h"

#define CP_VNET_HDR 12 /* struct virtio_net_hdr_v1, as every TAP of ours */

/* SIOCSIFADDR on an AF_INET6 socket takes the kernel's struct in6_ifreq
 * (linux/ipv6.h, which clashes with the C library's netinet/in.h). */
struct cp_in6_ifreq {
    struct in6_addr addr;
    uint32_t prefixlen;
    int ifindex;
};

struct cp_req {
    const struct sup *s;
    int p;
    int fd;
    struct ipc_err *err;
};

/* net.ipv6.conf.IFNAME.KEY in the namespace we are in: /proc/sys/net is
 * the opener's namespace's. */
static int cp_sysctl6(const char *ifname, const char *key, const char *val)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", ifname, key);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, val, strlen(val));
    int ret = n < 0 ? -errno : 0;
    close(fd);
    return ret;
}

/* The port's IPv4 address and IPv6 addresses on the interface (up). */
static int cp_addresses(struct cp_req *q, int sk, struct ifreq *ifr)
{
    const struct sup_port *pt = &q->s->m.ports[q->p];
    struct sockaddr_in *sin = (struct sockaddr_in *)&ifr->ifr_addr;
    memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(pt->address.addr);
    if (ioctl(sk, SIOCSIFADDR, ifr) < 0)
        return ipc_errf(q->err, -errno, "port %s: address on %s: %s", pt->name, pt->cp_ifname, strerror(errno));
    sin->sin_addr.s_addr = htonl(pt->address.len ? ~0u << (32 - pt->address.len) : 0);
    if (ioctl(sk, SIOCSIFNETMASK, ifr) < 0)
        return ipc_errf(q->err, -errno, "port %s: netmask on %s: %s", pt->name, pt->cp_ifname, strerror(errno));
    if (ioctl(sk, SIOCGIFINDEX, ifr) < 0)
        return ipc_errf(q->err, -errno, "port %s: index of %s: %s", pt->name, pt->cp_ifname, strerror(errno));
    int index = ifr->ifr_ifindex;
    if (!pt->naddr6)
        return 0;
    int sk6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sk6 < 0)
        return ipc_errf(q->err, -errno, "port %s: IPv6 socket in the control namespace: %s", pt->name,
                        strerror(errno));
    int ret = 0;
    for (unsigned k = 0; k < pt->naddr6 && ret == 0; k++) {
        struct cp_in6_ifreq r = {.prefixlen = pt->addr6[k].len, .ifindex = index};
        memcpy(&r.addr, pt->addr6[k].addr, 16);
        if (ioctl(sk6, SIOCSIFADDR, &r) < 0 && errno != EEXIST) {
            char a[64];
            ret = ipc_errf(q->err, -errno, "port %s: address %s/%u on %s: %s", pt->name,
                           sup_addr6_str(pt->addr6[k].addr, a, sizeof(a)), pt->addr6[k].len, pt->cp_ifname,
                           strerror(errno));
        }
    }
    close(sk6);
    return ret;
}

/* Inside the control namespace: the TAP, as cp.c's header says. */
static int cp_open(void *arg)
{
    struct cp_req *q = arg;
    const struct sup_port *pt = &q->s->m.ports[q->p];
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return ipc_errf(q->err, -errno, "port %s: /dev/net/tun: %s", pt->name, strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", pt->cp_ifname);
    int ret, r, sk = -1;
    /* Busy while the last holder (the service of a supervisor that died,
     * ended at adoption) is still exiting: as setup.c's tap_open. */
    for (int tries = 0; (r = ioctl(fd, TUNSETIFF, &ifr)) < 0 && errno == EBUSY && tries < 200; tries++)
        usleep(50000);
    unsigned hdr = CP_VNET_HDR;
    if (r < 0 || ioctl(fd, TUNSETPERSIST, 0) < 0 || ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0 ||
        ioctl(fd, TUNSETOFFLOAD, 0) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: TAP %s in the control namespace %s: %s", pt->name, pt->cp_ifname,
                       q->s->m.router.control_netns, strerror(errno));
        goto out;
    }
    sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sk < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: socket: %s", pt->name, strerror(errno));
        goto out;
    }
    ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
    sup_port_mac(&q->s->m, q->p, (uint8_t *)ifr.ifr_hwaddr.sa_data);
    if (ioctl(sk, SIOCSIFHWADDR, &ifr) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: MAC of %s: %s", pt->name, pt->cp_ifname, strerror(errno));
        goto out;
    }
    ifr.ifr_mtu = (int)pt->mtu;
    if (ioctl(sk, SIOCSIFMTU, &ifr) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: MTU %u on %s: %s", pt->name, pt->mtu, pt->cp_ifname,
                       strerror(errno));
        goto out;
    }
    /* Before it is up: no address of the kernel's own making, no DAD, no RAs. */
    static const char *const knobs[][2] = {{"addr_gen_mode", "1"}, {"accept_dad", "0"}, {"accept_ra", "0"}};
    for (size_t k = 0; k < sizeof(knobs) / sizeof(knobs[0]) && pt->naddr6; k++)
        if ((r = cp_sysctl6(pt->cp_ifname, knobs[k][0], knobs[k][1])) < 0)
            sup_warn("port %s: net.ipv6.conf.%s.%s = %s in %s: %s", pt->name, pt->cp_ifname, knobs[k][0],
                     knobs[k][1], q->s->m.router.control_netns, strerror(-r));
    if (ioctl(sk, SIOCGIFFLAGS, &ifr) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: flags of %s: %s", pt->name, pt->cp_ifname, strerror(errno));
        goto out;
    }
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(sk, SIOCSIFFLAGS, &ifr) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: %s up: %s", pt->name, pt->cp_ifname, strerror(errno));
        goto out;
    }
    if ((ret = cp_addresses(q, sk, &ifr)) < 0)
        goto out;
    sup_routes_cp_ifindex(q->p, ifr.ifr_ifindex); /* cp_addresses left the index there */
    close(sk);
    q->fd = fd;
    return 0;
out:
    if (sk >= 0)
        close(sk);
    close(fd);
    return ret;
}

struct cp_index_req {
    const char *ifname;
    int index;
};

/* Inside the control namespace: an adopted interface's index, for routes_check.c. */
static int cp_index(void *arg)
{
    struct cp_index_req *x = arg;
    int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sk < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", x->ifname);
    int ret = ioctl(sk, SIOCGIFINDEX, &ifr) < 0 ? -errno : 0;
    x->index = ret ? 0 : ifr.ifr_ifindex;
    close(sk);
    return ret;
}

int sup_cp_attach(struct sup *s, int svc, int fd_dev, struct ipc_err *err)
{
    int router = -1;
    for (int i = 0; i < s->nsvcs && router < 0; i++)
        if (s->svcs[i].m->kind == SUP_SVC_ROUTER)
            router = i;
    if (router < 0)
        return ipc_errf(err, -EINVAL, "internal: no router service");
    struct sup_svc *v = &s->svcs[svc];
    int p = v->port, ret;
    if ((ret = sup_ring_add(s, "rx-cp", p, 0, svc, router, err)) < 0 ||
        (ret = sup_ring_add(s, "tx-cp", p, 0, router, svc, err)) < 0)
        return ret;
    const struct sup_port *pt = &s->m.ports[p];
    if (!s->adopt) {
        struct cp_req q = {.s = s, .p = p, .fd = -1, .err = err};
        if ((ret = sup_in_netns(s->m.router.control_netns, cp_open, &q, err)) < 0)
            return ret;
        v->dev_fd = q.fd;
        sup_log("port %s: %s in netns %s, for its control traffic", pt->name, pt->cp_ifname,
                s->m.router.control_netns);
        return 0;
    }
    int fd = sup_adopt_fd(s, svc, fd_dev, "its TAP device", err);
    if (fd < 0)
        return fd;
    /* Whatever the service left at that number must be this device, by the kernel's word. */
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    if (ioctl(fd, TUNGETIFF, &ifr) < 0 || strncmp(ifr.ifr_name, pt->cp_ifname, IFNAMSIZ) != 0) {
        close(fd);
        return ipc_errf(err, -EPROTO, "adoption: %s's fd %d is not the TAP device %s", v->name, fd_dev,
                        pt->cp_ifname);
    }
    v->dev_fd = fd;
    struct cp_index_req x = {.ifname = pt->cp_ifname};
    struct ipc_err e2 = {0};
    if (sup_in_netns(s->m.router.control_netns, cp_index, &x, &e2) < 0)
        sup_warn("port %s: index of %s in %s unknown: routes via its link-local neighbours are refused", pt->name,
                 pt->cp_ifname, s->m.router.control_netns);
    sup_routes_cp_ifindex(p, x.index);
    return 0;
}

/* Does ring @r join a host-side port (one of its ends is a cp-PORT)? */
static bool cp_ring(const struct sup *s, int r)
{
    return s->svcs[s->rings[r].prod].m->kind == SUP_SVC_CP || s->svcs[s->rings[r].cons].m->kind == SUP_SVC_CP;
}

void sup_cp_config(const struct sup *s, const struct sup_svc *v, struct ipc_svc_config *c,
                   struct tbl_router_cfg *rc)
{
    if (rc)
        memset(rc->cp_pair, TBL_CP_NONE, sizeof(rc->cp_pair));
    size_t n = s->m.nports;
    if (!s->m.router.control_netns[0] || 2 * n > IPC_MAX_PORTS) /* the manifest's checks keep the second out */
        return;
    for (size_t p = 0; p < n; p++) {
        const struct sup_port *pt = &s->m.ports[p];
        struct ipc_svc_port *o = &c->ports[n + p];
        *o = c->ports[p];
        snprintf(o->name, sizeof(o->name), "%s", pt->cp_ifname);
        snprintf(o->ifname, sizeof(o->ifname), "%s", pt->cp_ifname);
        snprintf(o->netns, sizeof(o->netns), "%s", s->m.router.control_netns);
        o->driver = IPC_DRV_TAP;
        o->flags = 0;
        o->offloads = 0;
        o->rx_inflight = 0; /* the driver's default */
        c->port_zone[n + p] = c->port_zone[p];
        if (rc) {
            rc->cp_pair[p] = (uint8_t)(n + p);
            rc->cp_pair[n + p] = (uint8_t)p;
            rc->cp_host[n + p] = 1;
        }
    }
    c->nports = (uint32_t)(2 * n);
    bool mine = v->m->kind == SUP_SVC_CP;
    if (mine)
        c->port = (uint16_t)(n + (size_t)v->port);
    for (int i = 0; i < v->n_in; i++)
        if (mine || cp_ring(s, v->in[i]))
            c->in[i].port = (uint16_t)(n + (size_t)s->rings[v->in[i]].port);
    for (int i = 0; i < v->n_out; i++)
        if (mine || cp_ring(s, v->out[i]))
            c->out[i].port = (uint16_t)(n + (size_t)s->rings[v->out[i]].port);
}

bool sup_cp_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len)
{
    const char *a = o->router.control_netns, *b = n->router.control_netns;
    if (strcmp(a, b) != 0) {
        snprintf(why, len, "[router] control_netns changed (%s -> %s)", a[0] ? a : "none", b[0] ? b : "none");
        return true;
    }
    if (!a[0])
        return false;
    /* A host-side port's index follows the number of ports (cp.h). */
    if (o->nports != n->nports) {
        snprintf(why, len, "ports added or removed with a control namespace (the host-side interfaces' indices "
                           "follow the number of ports)");
        return true;
    }
    for (size_t p = 0; p < n->nports; p++) {
        const struct sup_port *x = &o->ports[p], *y = &n->ports[p];
        if (strcmp(x->cp_ifname, y->cp_ifname) != 0 || x->persist != y->persist) {
            snprintf(why, len, "port %s: %s changed, with a host-side interface", y->name,
                     x->persist != y->persist ? "persist" : "cp_ifname");
            return true;
        }
    }
    return false;
}
