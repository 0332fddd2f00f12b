/* SPDX-License-Identifier: MIT */
/*
 * bench/tapfwd.c: bench/forward tap's "onefwd" path: the reference the issue
 * names, a one-process TAP forwarder with the virtio-net header passed
 * through, built here so that the ceiling of forwarding in user space over
 * TAP on this machine is measured in the same run as ringrouter and Linux.
 *
 *   tapfwd [-u] NS_A TAP_A MAC_A NS_B TAP_B MAC_B
 *
 * Creates TAP_A in network namespace NS_A and TAP_B in NS_B (IFF_TAP |
 * IFF_NO_PI | IFF_VNET_HDR, checksum and TSO offloads on, so 64 KB GSO frames
 * arrive whole), prints "ready" and forwards until SIGTERM: every IPv4 frame
 * read from one device is written to the other with its TTL decremented
 * (incremental checksum, RFC 1624), its destination MAC set to the far
 * host's (MAC_B for frames from A, MAC_A for frames from B) and its source
 * MAC to ours. Anything else (ARP: the hosts get static neighbour entries
 * for our MAC; TTL 1; runts) is dropped.
 *
 * One thread, one poll() over both devices, then up to FWD_BURST plain
 * read()s per device, each followed by its write(): the least a forwarder can
 * do per packet, with no rings, no pool and no second process. The frame is
 * read into one 64 KB buffer and written from it, header included, so the
 * kernel does the only two copies (as ringrouter's TAP drivers incur too).
 *
 * With -u, the forwarder as the reference was built: io_uring with
 * URING_READS reads of 64 KB in flight per device, each completed read
 * written out from its own buffer by a write in the same ring, and the read
 * re-armed when that write completes.
 */
#include <errno.h>
#include <liburing.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fwd_frame.h"

#define VNET_HDR_LEN 12 /* struct virtio_net_hdr_mrg_rxbuf, as ringrouter's TAP driver uses */
#define FWD_BURST 64
#define FRAME_MAX (VNET_HDR_LEN + 65536 + FWD_ETH_HLEN + 4)
#define URING_READS 32

static const uint8_t our_mac[6] = {0x02, 0x72, 0x72, 0x00, 0x00, 0x01};
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static void die(const char *what, const char *arg)
{
    fprintf(stderr, "tapfwd: %s %s: %s\n", what, arg, strerror(errno));
    exit(1);
}

/* The TAP device @name, created in namespace @ns (entered for the call). */
static int tap_open(const char *ns, const char *name, int nonblock)
{
    char path[300];
    snprintf(path, sizeof path, "/var/run/netns/%s", ns);
    int nsfd = open(path, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0)
        die("entering namespace", path);
    close(nsfd);
    int fd = open("/dev/net/tun", O_RDWR | (nonblock ? O_NONBLOCK : 0) | O_CLOEXEC);
    if (fd < 0)
        die("opening", "/dev/net/tun");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
    if (strlen(name) >= IFNAMSIZ) {
        errno = ENAMETOOLONG;
        die("device name", name);
    }
    memcpy(ifr.ifr_name, name, strlen(name) + 1);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0)
        die("TUNSETIFF", name);
    int hl = VNET_HDR_LEN;
    if (ioctl(fd, TUNSETVNETHDRSZ, &hl) < 0)
        die("TUNSETVNETHDRSZ", name);
    if (ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) < 0)
        die("TUNSETOFFLOAD", name);
    return fd;
}

/* Route one frame read from a device (virtio-net header first): 0 to send
 * it on, -1 to drop it. */
static int forward(uint8_t *frame, ssize_t n, const uint8_t *dst_mac)
{
    if (n < VNET_HDR_LEN)
        return -1;
    return fwd_ipv4_hop(frame + VNET_HDR_LEN, (size_t)n - VNET_HDR_LEN, dst_mac, our_mac);
}

/* user_data: bit 32 set for a write, bit 31 the device, the rest the slot. */
#define UD_WRITE (1ull << 32)
#define UD_DEV (1ull << 31)

/* Each of the 2 x URING_READS buffers has exactly one read or write in
 * flight, so the 4 x URING_READS SQ never fills; if it did, say so. */
static struct io_uring_sqe *uring_sqe(struct io_uring *ring)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe) {
        errno = EBUSY;
        die("io_uring", "submission queue full");
    }
    return sqe;
}

static void uring_read(struct io_uring *ring, int fd, uint8_t *buf, uint64_t ud)
{
    struct io_uring_sqe *sqe = uring_sqe(ring);
    io_uring_prep_read(sqe, fd, buf, FRAME_MAX, 0);
    io_uring_sqe_set_data64(sqe, ud);
}

/* -u: reads in flight on both devices; returns when told to stop. */
static void run_uring(const int *fd, uint8_t mac[2][6], uint64_t *fwd, uint64_t *drop, uint64_t *err)
{
    struct io_uring ring;
    int r = io_uring_queue_init(4 * URING_READS, &ring, 0);
    if (r < 0) {
        errno = -r;
        die("io_uring_queue_init", "");
    }
    static uint8_t buf[2][URING_READS][FRAME_MAX];
    for (int d = 0; d < 2; d++)
        for (uint64_t k = 0; k < URING_READS; k++)
            uring_read(&ring, fd[d], buf[d][k], (d ? UD_DEV : 0) | k);
    struct __kernel_timespec ts = {.tv_sec = 1};
    while (!stop) {
        struct io_uring_cqe *cqe;
        r = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
        if (r < 0 && r != -ETIME && r != -EINTR)
            break;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            uint64_t ud = cqe->user_data;
            int d = !!(ud & UD_DEV), res = cqe->res;
            uint32_t k = (uint32_t)(ud & (UD_DEV - 1));
            seen++;
            if (ud & UD_WRITE) { /* the frame is out: read into its buffer again */
                if (res > 0)
                    (*fwd)++;
                else
                    (*err)++;
                uring_read(&ring, fd[d], buf[d][k], ud & ~UD_WRITE);
            } else if (res > 0 && forward(buf[d][k], res, mac[!d]) == 0) {
                struct io_uring_sqe *sqe = uring_sqe(&ring);
                io_uring_prep_write(sqe, fd[!d], buf[d][k], (unsigned)res, 0);
                io_uring_sqe_set_data64(sqe, ud | UD_WRITE);
            } else {
                if (res > 0)
                    (*drop)++;
                uring_read(&ring, fd[d], buf[d][k], ud);
            }
        }
        io_uring_cq_advance(&ring, seen);
    }
    io_uring_queue_exit(&ring);
}

int main(int argc, char **argv)
{
    int uring = argc > 1 && strcmp(argv[1], "-u") == 0;
    argv += uring;
    argc -= uring;
    if (argc != 7) {
        fprintf(stderr, "usage: tapfwd [-u] NS_A TAP_A MAC_A NS_B TAP_B MAC_B\n");
        return 2;
    }
    uint8_t mac[2][6];
    fwd_parse_mac("tapfwd", argv[3], mac[0]);
    fwd_parse_mac("tapfwd", argv[6], mac[1]);
    int fd[2] = {tap_open(argv[1], argv[2], !uring), tap_open(argv[4], argv[5], !uring)};
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    static uint8_t frame[FRAME_MAX];
    uint64_t fwd = 0, drop = 0, err = 0;
    printf("ready\n");
    fflush(stdout);
    if (uring) {
        run_uring(fd, mac, &fwd, &drop, &err);
        stop = 1;
    }

    struct pollfd pf[2] = {{.fd = fd[0], .events = POLLIN}, {.fd = fd[1], .events = POLLIN}};
    while (!stop) {
        if (poll(pf, 2, 1000) < 0 && errno != EINTR)
            die("poll", "");
        for (int i = 0; i < 2; i++) {
            for (int k = 0; k < FWD_BURST; k++) {
                ssize_t n = read(fd[i], frame, sizeof frame);
                if (n < 0)
                    break; /* EAGAIN: this device is drained */
                if (forward(frame, n, mac[!i]) < 0) {
                    drop++;
                    continue;
                }
                if (write(fd[!i], frame, (size_t)n) == n)
                    fwd++;
                else
                    err++;
            }
        }
    }
    fprintf(stderr, "tapfwd: %llu forwarded, %llu dropped, %llu write errors\n", (unsigned long long)fwd,
            (unsigned long long)drop, (unsigned long long)err);
    return 0;
}
