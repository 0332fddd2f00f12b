/* SPDX-License-Identifier: MIT */
/*
 * supervisor/tap_dev.c: the TAP devices of TAP ports, made by the supervisor
 * (the only one with CAP_NET_ADMIN) in the port's network namespace, and
 * the namespace switch every device setup runs under (sup_in_netns).
 */
#include "supervisor/sup.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Run @fn inside network namespace @netns ("" = our own). */
int sup_in_netns(const char *netns, int (*fn)(void *), void *arg, struct ipc_err *err)
{
    if (!netns[0])
        return fn(arg);
    char path[128];
    snprintf(path, sizeof(path), "/run/netns/%s", netns);
    int nsfd = open(path, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0)
        return ipc_errf(err, -errno, "netns %s: %s (create it with: ip netns add %s)", netns, strerror(errno), netns);
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0) {
        int e = errno;
        close(nsfd);
        return ipc_errf(err, -e, "/proc/self/ns/net: %s", strerror(e));
    }
    int ret;
    if (setns(nsfd, CLONE_NEWNET) < 0) {
        ret = ipc_errf(err, -errno, "entering netns %s: %s", netns, strerror(errno));
        goto out;
    }
    ret = fn(arg);
    if (setns(self, CLONE_NEWNET) < 0) {
        /* Staying in the wrong namespace would misplace every later device. */
        sup_err("fatal: cannot return to our own network namespace: %s", strerror(errno));
        abort();
    }
out:
    close(self);
    close(nsfd);
    return ret;
}

struct tap_req {
    const struct sup_port *port;
    int fd;
    struct ipc_err *err;
};

/*
 * A TAP of ours has one queue, but tun still hashes every frame sent to it
 * (its flow steering, when RPS is on anywhere on the host) and, for a sender
 * that picks its own queue (AF_PACKET with qdisc bypass), runs that steering
 * again: work ringrouter would cause every sender for nothing. A steering
 * program that answers queue 0 replaces both. Only a cost is at stake: without it (no BPF, no
 * CAP_BPF after a reload), the device works as before, and we say so.
 */
static void tap_steer_single(int fd, const struct sup_port *p)
{
    const struct bpf_insn q0[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0}, /* r0 = 0 */
        {.code = BPF_JMP | BPF_EXIT},                                          /* return r0 */
    };
    int prog = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "rr_tap_q0", "GPL", q0, 2, NULL);
    if (prog < 0) {
        sup_warn("port %s: no single-queue steering program for %s (%s): senders to it hash every frame", p->name,
                 p->ifname, strerror(-prog));
        return;
    }
    if (ioctl(fd, TUNSETSTEERINGEBPF, &prog) < 0)
        sup_warn("port %s: TUNSETSTEERINGEBPF on %s: %s: senders to it hash every frame", p->name, p->ifname,
                 strerror(errno));
    close(prog); /* the device holds its own reference */
}

static int tap_open(void *arg)
{
    struct tap_req *q = arg;
    const struct sup_port *p = q->port;
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return ipc_errf(q->err, -errno, "port %s: /dev/net/tun: %s", p->name, strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", p->ifname);
    int ret, r;
    /* A device whose last holder is exiting (a service of a supervisor that
     * died, ended at adoption: adopt.c) stays busy until the kernel's
     * io_uring teardown of that process lets go of it: up to 10 s. */
    for (int tries = 0; (r = ioctl(fd, TUNSETIFF, &ifr)) < 0 && errno == EBUSY && tries < 200; tries++)
        usleep(50000);
    if (r < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: creating TAP %s: %s", p->name, p->ifname, strerror(errno));
        goto out_fd;
    }
    /* Set either way: a device that an earlier `up` made persistent, and
     * that the manifest no longer wants kept, goes with its last fd again. */
    if (ioctl(fd, TUNSETPERSIST, p->persist ? 1 : 0) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: TUNSETPERSIST on %s: %s", p->name, p->ifname, strerror(errno));
        goto out_fd;
    }
    int hdr = 12; /* struct virtio_net_hdr_v1 */
    if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: TUNSETVNETHDRSZ: %s", p->name, strerror(errno));
        goto out_fd;
    }
    unsigned off = 0;
    if (p->offloads & SUP_OFFLOAD_CSUM)
        off |= TUN_F_CSUM;
    if (p->offloads & SUP_OFFLOAD_TSO4)
        off |= TUN_F_TSO4;
    if (p->offloads & SUP_OFFLOAD_TSO6)
        off |= TUN_F_TSO6;
#ifdef TUN_F_USO4
    if (p->offloads & SUP_OFFLOAD_USO)
        off |= TUN_F_USO4 | TUN_F_USO6;
#endif
    if (ioctl(fd, TUNSETOFFLOAD, off) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: TUNSETOFFLOAD %#x: %s", p->name, off, strerror(errno));
        goto out_fd;
    }
    tap_steer_single(fd, p);
    int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sk < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: socket: %s", p->name, strerror(errno));
        goto out_fd;
    }
    ifr.ifr_mtu = (int)p->mtu;
    if (ioctl(sk, SIOCSIFMTU, &ifr) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: MTU %u on %s: %s", p->name, p->mtu, p->ifname, strerror(errno));
        close(sk);
        goto out_fd;
    }
    ifr.ifr_qlen = (int)p->queue_len;
    if (ioctl(sk, SIOCSIFTXQLEN, &ifr) < 0) {
        ret = ipc_errf(q->err, -errno, "port %s: queue_len %u on %s: %s", p->name, p->queue_len, p->ifname,
                       strerror(errno));
        close(sk);
        goto out_fd;
    }
    if (ioctl(sk, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP;
        ioctl(sk, SIOCSIFFLAGS, &ifr);
    }
    close(sk);
    q->fd = fd;
    return 0;

out_fd:
    close(fd);
    return ret;
}

int sup_tap_create(const struct sup_port *p, int *fd, struct ipc_err *err)
{
    struct tap_req q = {.port = p, .fd = -1, .err = err};
    int ret = sup_in_netns(p->netns, tap_open, &q, err);
    if (ret < 0)
        return ret;
    *fd = q.fd;
    return 0;
}

int sup_tap_persist(int fd, bool on)
{
    return ioctl(fd, TUNSETPERSIST, on ? 1 : 0) < 0 ? -errno : 0;
}
