/* SPDX-License-Identifier: MIT */
/*
 * bench/trainsend.c: trains of back-to-back 64-byte UDP frames at a fixed
 * interval, for bench/forward: its burst test (issue 15: a router whose
 * average load is a few percent of its capacity must still absorb a train
 * as long as its rings), and its paced load (a fixed rate as short trains
 * at an even spacing, where `trafgen -b` sends each second's quota as one
 * train at its full speed: bench/README.md "The generator").
 *
 *   trainsend IFNAME DST_MAC SRC_IP DST_IP TRAIN TRAINS [INTERVAL [FLOWS]]
 *       TRAINS trains of TRAIN frames (60 bytes on the wire without the
 *       FCS: Ethernet, IPv4, UDP to port 9, 18 zero bytes), one train every
 *       INTERVAL on an absolute clock: milliseconds (100 when left out), or
 *       with a unit, "250us" or "160000ns". TRAINS 0: until SIGINT or
 *       SIGTERM. A train goes out with as few sendmmsg calls on an AF_PACKET
 *       socket as the kernel allows (1024 messages a call), bypassing the
 *       qdisc, so its frames leave back to back. A frame the kernel refuses
 *       (ENOBUFS, EAGAIN) is counted and not retried: retrying would smooth
 *       the train into something easier. Frame i's UDP source port is
 *       10000 + i mod FLOWS (16 when left out): 1 makes one flow. A wake-up
 *       that comes more than 4 intervals late sends one train and starts
 *       the clock again from there (counted as late) rather than making up
 *       every train it missed in one burst. Ends with "sent N refused R
 *       late L" on stdout.
 *   trainsend -n IFNAME DST_MAC SRC_IP DST_IP TRAIN TRAINS [INTERVAL]
 *       Every frame a connection of its own, for a stateful filter's cost of
 *       a new connection: frame k of the run (counted across trains) comes
 *       from UDP port 1024 + k mod 64512 of SRC_IP's /24, host 2 + (k /
 *       64512) mod 252 (the generator's own address among them), so no
 *       tuple comes twice in the first 16 million frames (the run stops
 *       there rather than repeat one: "exhausted" on stderr, exit 1).
 *   trainsend -N FIRST IFNAME DST_MAC SRC_IP DST_IP TRAIN TRAINS [INTERVAL]
 *       The same from tuple FIRST, going round to tuple 0 after the last
 *       rather than stopping (a tuple comes back after 16 million frames:
 *       at 500 kpps, 32 s, beyond a UDP connection's 30 s unreplied); the
 *       last line adds "next K", the FIRST that continues the sequence, so
 *       that successive runs (bench/filter's new connections) never offer a
 *       table a tuple it may still hold.
 *   trainsend -x OBJ IFNAME ...
 *       The same trains as XDP frames: each train is one run of the kernel's
 *       XDP traffic generator (BPF_PROG_RUN, BPF_F_TEST_XDP_LIVE_FRAMES) on
 *       OBJ's program (bench/xdpgen.bpf.c), which redirects every frame to
 *       IFNAME, a veth, as a NIC's driver hands frames on: its peer gets
 *       them in pages of their own, not as a socket's skbs that a veth
 *       copies before its XDP program runs (bench/README.md, "The
 *       generator"). The peer must have NAPI (an XDP program or GRO):
 *       without, the kernel drops every frame at the redirect, and no
 *       device counts them. What the peer's full ring refuses the veth
 *       counts (tx_dropped), not "refused".
 */

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FRAME 60
#define MAX_TRAIN 65536
#define PER_CALL 1024 /* UIO_MAXIOV: sendmmsg's vlen is capped there */
#define MAX_LATE 4    /* intervals behind before the clock starts again */

static uint8_t frames[MAX_TRAIN][FRAME];
static struct mmsghdr msgs[MAX_TRAIN];
static struct iovec iovs[MAX_TRAIN];

static int parse_mac(const char *s, uint8_t mac[6])
{
    unsigned b[6];
    if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
        return -1;
    for (int i = 0; i < 6; i++) {
        if (b[i] > 255)
            return -1;
        mac[i] = (uint8_t)b[i];
    }
    return 0;
}

static long parse_count(const char *s, const char *what, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max) {
        fprintf(stderr, "trainsend: %s must be %ld..%ld, not \"%s\"\n", what, min, max, s);
        exit(100);
    }
    return v;
}

/* INTERVAL in nanoseconds: a count of ms, or with a unit "ms", "us", "ns". */
static long long parse_interval(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10), unit = 1000000;
    if (!strcmp(end, "us"))
        unit = 1000;
    else if (!strcmp(end, "ns"))
        unit = 1;
    else if (*end && strcmp(end, "ms"))
        v = -1;
    if (errno || end == s || v < 1 || v > 100000LL * 1000000 / unit) {
        fprintf(stderr,
                "trainsend: INTERVAL must be 1 ns to 100 s, a count of ms or with a unit (ms, us, ns), not "
                "\"%s\"\n",
                s);
        exit(100);
    }
    return v * unit;
}

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    (void)sig;
    stop = 1;
}

static void ts_add(struct timespec *t, long long ns)
{
    ns += t->tv_nsec;
    t->tv_sec += (time_t)(ns / 1000000000);
    t->tv_nsec = (long)(ns % 1000000000);
}

static long long ts_diff(const struct timespec *a, const struct timespec *b)
{
    return (long long)(a->tv_sec - b->tv_sec) * 1000000000 + (a->tv_nsec - b->tv_nsec);
}

static uint16_t ip_csum(const uint8_t *h, size_t n)
{
    uint32_t sum = 0;
    for (size_t i = 0; i < n; i += 2)
        sum += (uint32_t)(h[i] << 8 | h[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static void build(uint8_t *f, const uint8_t dmac[6], const uint8_t smac[6], struct in_addr src, struct in_addr dst,
                  uint16_t sport)
{
    memset(f, 0, FRAME);
    memcpy(f, dmac, 6);
    memcpy(f + 6, smac, 6);
    f[12] = 0x08; /* IPv4 */
    uint8_t *ip = f + 14;
    ip[0] = 0x45;
    ip[2] = 0;
    ip[3] = FRAME - 14; /* total length 46 */
    ip[6] = 0x40;       /* DF */
    ip[8] = 64;         /* TTL */
    ip[9] = 17;         /* UDP */
    memcpy(ip + 12, &src, 4);
    memcpy(ip + 16, &dst, 4);
    uint16_t c = ip_csum(ip, 20);
    ip[10] = (uint8_t)(c >> 8);
    ip[11] = (uint8_t)c;
    uint8_t *udp = ip + 20;
    udp[0] = (uint8_t)(sport >> 8);
    udp[1] = (uint8_t)sport;
    udp[3] = 9;
    udp[5] = FRAME - 14 - 20; /* length 26; checksum 0: none */
}

/* -x: OBJ's program loaded, its devmap aimed at @ifindex, @flows set, and
 * attached (generic XDP) to the namespace's loopback until exit: each
 * BPF_PROG_RUN of a program not attached anywhere rewrites the kernel's XDP
 * dispatcher, text poke and IPIs to every CPU, the dut's included, a large
 * share of the generator's CPU with long trains; attached, the run finds
 * it there. Returns the program's fd, or exits 111 naming what failed. */
static int xdp_gen_lo = -1;
static void xdp_gen_detach(void)
{
    bpf_xdp_detach(xdp_gen_lo, XDP_FLAGS_SKB_MODE, NULL);
}
static int xdp_gen_load(const char *path, int ifindex, long flows)
{
    struct bpf_object *obj = bpf_object__open_file(path, NULL);
    if (!obj || libbpf_get_error(obj) || bpf_object__load(obj)) {
        fprintf(stderr, "trainsend: cannot load the XDP generator %s\n", path);
        exit(111);
    }
    struct bpf_program *prog = bpf_object__find_program_by_name(obj, "xdpgen");
    struct bpf_map *tx = bpf_object__find_map_by_name(obj, "tx_port");
    struct bpf_map *cfg = bpf_object__find_map_by_name(obj, "cfg");
    __u32 k = 0, k_dev = 2, v = (__u32)ifindex, f = (__u32)flows;
    if (!prog || !tx || !cfg || bpf_map_update_elem(bpf_map__fd(tx), &k, &v, BPF_ANY) ||
        bpf_map_update_elem(bpf_map__fd(cfg), &k, &f, BPF_ANY) ||
        bpf_map_update_elem(bpf_map__fd(cfg), &k_dev, &v, BPF_ANY)) {
        fprintf(stderr, "trainsend: %s: no program xdpgen, or its maps refused device %d: %s\n", path, ifindex,
                strerror(errno));
        exit(111);
    }
    xdp_gen_lo = (int)if_nametoindex("lo");
    if (!xdp_gen_lo || bpf_xdp_attach(xdp_gen_lo, bpf_program__fd(prog), XDP_FLAGS_SKB_MODE, NULL)) {
        fprintf(stderr, "trainsend: cannot attach the XDP generator to lo: %s\n", strerror(errno));
        exit(111);
    }
    atexit(xdp_gen_detach);
    return bpf_program__fd(prog);
}

/* -x: one train of @n frames through the kernel's XDP generator. */
static int xdp_gen_train(int prog, int ifindex, uint8_t *frame, long n)
{
    struct xdp_md md = {.data_end = FRAME, .ingress_ifindex = (__u32)ifindex}; /* data_end: the frame's size */
    LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = FRAME, .ctx_in = &md, .ctx_size_in = sizeof md,
                .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .repeat = (__u32)n, .batch_size = n < 256 ? (__u32)n : 256);
    return bpf_prog_test_run_opts(prog, &o);
}

/* -n: frame @f becomes new connection @k (above). Its checksums follow. */
#define NEW_PORTS 64512u
#define NEW_HOSTS 252u
static void new_tuple(uint8_t *f, unsigned long long k)
{
    uint8_t *ip = f + 14, *udp = ip + 20;
    unsigned port = 1024 + (unsigned)(k % NEW_PORTS);
    ip[15] = (uint8_t)(2 + k / NEW_PORTS % NEW_HOSTS);
    ip[10] = ip[11] = 0;
    uint16_t c = ip_csum(ip, 20);
    ip[10] = (uint8_t)(c >> 8);
    ip[11] = (uint8_t)c;
    udp[0] = (uint8_t)(port >> 8);
    udp[1] = (uint8_t)port;
}

int main(int argc, char **argv)
{
    const char *xdp_obj = NULL;
    bool fresh = false, wrap = false;
    unsigned long long first = 0;
    if (argc > 1 && !strcmp(argv[1], "-n")) {
        fresh = true;
        argv++;
        argc--;
    } else if (argc > 2 && !strcmp(argv[1], "-N")) {
        char *end;
        errno = 0;
        first = strtoull(argv[2], &end, 10);
        if (errno || end == argv[2] || *end || first >= (unsigned long long)NEW_PORTS * NEW_HOSTS) {
            fprintf(stderr, "trainsend: -N FIRST must be 0..%llu, not \"%s\"\n",
                    (unsigned long long)NEW_PORTS * NEW_HOSTS - 1, argv[2]);
            return 100;
        }
        fresh = wrap = true;
        argv += 2;
        argc -= 2;
    } else if (argc > 2 && !strcmp(argv[1], "-x")) {
        xdp_obj = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc < 7 || argc > 9) {
        fprintf(stderr, "usage: trainsend [-x OBJ | -n | -N FIRST] IFNAME DST_MAC SRC_IP DST_IP TRAIN TRAINS [INTERVAL [FLOWS]]\n");
        return 100;
    }
    uint8_t dmac[6], smac[6];
    struct in_addr src, dst;
    if (parse_mac(argv[2], dmac)) {
        fprintf(stderr, "trainsend: DST_MAC \"%s\" is not a MAC address\n", argv[2]);
        return 100;
    }
    if (inet_pton(AF_INET, argv[3], &src) != 1 || inet_pton(AF_INET, argv[4], &dst) != 1) {
        fprintf(stderr, "trainsend: SRC_IP \"%s\" or DST_IP \"%s\" is not an IPv4 address\n", argv[3], argv[4]);
        return 100;
    }
    long train = parse_count(argv[5], "TRAIN", 1, MAX_TRAIN);
    long trains = parse_count(argv[6], "TRAINS", 0, 1000000000);
    long long interval = parse_interval(argc > 7 ? argv[7] : "100");
    long flows = argc > 8 ? parse_count(argv[8], "FLOWS", 1, 65536) : 16;
    if (fresh && argc > 8) {
        fprintf(stderr, "trainsend: -n and -N make every frame a flow of its own: no FLOWS\n");
        return 100;
    }

    int fd = socket(AF_PACKET, SOCK_RAW, 0); /* protocol 0: send only, receive nothing */
    if (fd < 0) {
        perror("trainsend: socket(AF_PACKET)");
        return 111;
    }
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", argv[1]);
    if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0) {
        fprintf(stderr, "trainsend: no device %s: %s\n", argv[1], strerror(errno));
        return 111;
    }
    struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_ifindex = ifr.ifr_ifindex, .sll_halen = 6};
    memcpy(ll.sll_addr, dmac, 6);
    if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
        perror("trainsend: SIOCGIFHWADDR");
        return 111;
    }
    memcpy(smac, ifr.ifr_hwaddr.sa_data, 6);
    int one = 1;
    if (bind(fd, (struct sockaddr *)&ll, sizeof ll) < 0 ||
        setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) < 0) {
        perror("trainsend: bind");
        return 111;
    }
    /* A train of 60-byte frames must fit the socket's send buffer whole. */
    int sndbuf = (int)(train * 1024 < (1 << 30) ? train * 1024 : (1 << 30));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);

    int xdp_prog = xdp_obj ? xdp_gen_load(xdp_obj, ll.sll_ifindex, flows) : -1;
    for (long i = 0; i < train; i++) {
        build(frames[i], dmac, smac, src, dst, (uint16_t)(10000 + i % flows));
        iovs[i] = (struct iovec){.iov_base = frames[i], .iov_len = FRAME};
        msgs[i].msg_hdr = (struct msghdr){.msg_iov = &iovs[i], .msg_iovlen = 1};
    }
    /* The default slack (50 us) would be a third of the interval at the
     * paced rates; a stop signal ends the sleep and the loop. */
    prctl(PR_SET_TIMERSLACK, 1UL);
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct timespec next, now;
    clock_gettime(CLOCK_MONOTONIC, &next);
    unsigned long long sent = 0, refused = 0, late = 0;
    for (long t = 0; !stop && (trains == 0 || t < trains); t++) {
        long i = 0;
        if (fresh) {
            const unsigned long long all = (unsigned long long)NEW_PORTS * NEW_HOSTS;
            if (!wrap && sent + refused + (unsigned long long)train > all) {
                fprintf(stderr, "trainsend: -n: exhausted, %llu new connections sent\n", sent);
                return 1;
            }
            for (long j = 0; j < train; j++)
                new_tuple(frames[j], (first + sent + refused + (unsigned long long)j) % all);
        }
        if (xdp_prog >= 0) {
            if (xdp_gen_train(xdp_prog, ll.sll_ifindex, frames[0], train)) {
                perror("trainsend: BPF_PROG_RUN");
                return 111;
            }
            sent += (unsigned long long)train;
            i = train;
        }
        while (i < train) {
            unsigned n = (unsigned)(train - i < PER_CALL ? train - i : PER_CALL);
            int r = sendmmsg(fd, &msgs[i], n, MSG_DONTWAIT);
            if (r > 0) {
                sent += (unsigned)r;
                i += r;
            } else if (errno == ENOBUFS || errno == EAGAIN) {
                refused++;
                i++;
            } else if (errno != EINTR) {
                perror("trainsend: sendmmsg");
                return 111;
            }
        }
        ts_add(&next, interval);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (ts_diff(&now, &next) > MAX_LATE * interval) {
            late++;
            next = now;
        }
        while (!stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
    }
    if (wrap)
        printf("sent %llu refused %llu late %llu next %llu\n", sent, refused, late,
               (first + sent + refused) % ((unsigned long long)NEW_PORTS * NEW_HOSTS));
    else
        printf("sent %llu refused %llu late %llu\n", sent, refused, late);
    return 0;
}
