/* SPDX-License-Identifier: MIT */
/*
 * bench/tapfwd.c: bench/forward tap's "onefwd" path: the reference the issue
 * names, a one-process TAP forwarder with the virtio-net header passed
 * through, built here so that the ceiling of forwarding in user space over
 * TAP on this machine is measured in the same run as ringrouter and Linux.
 *
 *   tapfwd NS_A TAP_A MAC_A NS_B TAP_B MAC_B
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
 */
#include <errno.h>
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

#define VNET_HDR_LEN 12 /* struct virtio_net_hdr_mrg_rxbuf, as ringrouter's TAP driver uses */
#define ETH_HLEN 14
#define FWD_BURST 64
#define FRAME_MAX (VNET_HDR_LEN + 65536 + ETH_HLEN + 4)

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
static int tap_open(const char *ns, const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "/var/run/netns/%s", ns);
    int nsfd = open(path, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0)
        die("entering namespace", path);
    close(nsfd);
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
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

static void parse_mac(const char *s, uint8_t *m)
{
    if (sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) {
        fprintf(stderr, "tapfwd: \"%s\" is not a MAC address\n", s);
        exit(2);
    }
}

/* Route one frame read from a device: 0 to send it on, -1 to drop it. */
static int forward(uint8_t *frame, ssize_t n, const uint8_t *dst_mac)
{
    if (n < VNET_HDR_LEN + ETH_HLEN + 20)
        return -1;
    uint8_t *eth = frame + VNET_HDR_LEN, *ip = eth + ETH_HLEN;
    if (eth[12] != 0x08 || eth[13] != 0x00 || (ip[0] >> 4) != 4 || ip[8] <= 1)
        return -1;
    ip[8]--;
    /* TTL is the high byte of its checksummed word: the sum gains 0x0100. */
    uint32_t sum = ((uint32_t)ip[10] << 8 | ip[11]) + 0x0100u;
    sum = (sum & 0xffffu) + (sum >> 16);
    ip[10] = (uint8_t)(sum >> 8);
    ip[11] = (uint8_t)sum;
    memcpy(eth, dst_mac, 6);
    memcpy(eth + 6, our_mac, 6);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: tapfwd NS_A TAP_A MAC_A NS_B TAP_B MAC_B\n");
        return 2;
    }
    uint8_t mac[2][6];
    parse_mac(argv[3], mac[0]);
    parse_mac(argv[6], mac[1]);
    int fd[2] = {tap_open(argv[1], argv[2]), tap_open(argv[4], argv[5])};
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    static uint8_t frame[FRAME_MAX];
    uint64_t fwd = 0, drop = 0, err = 0;
    printf("ready\n");
    fflush(stdout);

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
