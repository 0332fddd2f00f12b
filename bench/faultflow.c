/* SPDX-License-Identifier: MIT */
/*
 * bench/faultflow.c: a numbered UDP stream at a fixed rate, and a sink that
 * keeps one bit per sequence number, for fault campaigns (bench/faults,
 * tests/integ/fault_campaign.sh) at rates a Python sender cannot hold.
 *
 *   faultflow send DST PORT PPS LOG
 *       every millisecond (an absolute-time sleep, so the rate holds), the
 *       datagrams due by now, 64 bytes each, with sendmmsg: payload the
 *       sequence number and the send time (CLOCK_REALTIME, us). A sender
 *       that fell behind by more than 10 ms skips ahead rather than
 *       bursting. LOG gets "SEQ TIME_US" for the first datagram of every
 *       tick, so that a fault's time maps to the sequence numbers sent
 *       after it. SIGTERM: "sent N errors E" on stderr, exit 0.
 *   faultflow train DST PORT LEN EVERY_MS TRAINS
 *       TRAINS trains of LEN numbered datagrams, 64 bytes each, every
 *       EVERY_MS (absolute-time sleeps): each train goes out back to back,
 *       sendmmsg after sendmmsg with no pause, as a TSO train or a
 *       microburst arrives at a router. Train k carries LEN*k .. LEN*k+LEN-1.
 *       At the end: "sent N errors E" on stderr, exit 0.
 *   faultflow recv ADDR PORT BITMAP [GAPLOG]
 *       recvmmsg; bit SEQ of BITMAP is set when SEQ arrived. SIGTERM: what
 *       the socket holds is read, then the bitmap is written, "received N max_seq M dup D" then "reordered R"
 *       (datagrams that arrived after a higher number) and "socket_drops S"
 *       (what the sink's own socket dropped, its receive buffer full) on
 *       stderr, exit 0. GAPLOG gets a line "FIRST COUNT T_BEFORE T_AFTER"
 *       for every jump in the numbers: the kernel's receive times of the
 *       datagram before the hole and of the one after it, which bound when
 *       the missing ones were lost (bench/faults charges a loss to the
 *       fault under way then).
 *
 * Times are CLOCK_REALTIME in microseconds, bash's EPOCHREALTIME clock.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define PAYLOAD 64

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A sender's socket and its BATCH datagrams, each pointing at buf[i]. */
struct sender {
    int fd;
    struct sockaddr_in sa;
    uint8_t buf[BATCH][PAYLOAD];
    struct mmsghdr msg[BATCH];
    struct iovec iov[BATCH];
};

static int sender_open(struct sender *x, const char *dst, int port)
{
    x->fd = socket(AF_INET, SOCK_DGRAM, 0);
    x->sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (x->fd < 0 || inet_pton(AF_INET, dst, &x->sa.sin_addr) != 1)
        return -1;
    for (int i = 0; i < BATCH; i++) {
        x->iov[i] = (struct iovec){.iov_base = x->buf[i], .iov_len = PAYLOAD};
        x->msg[i] = (struct mmsghdr){
            .msg_hdr = {.msg_name = &x->sa, .msg_namelen = sizeof(x->sa), .msg_iov = &x->iov[i], .msg_iovlen = 1}};
    }
    return 0;
}

static int do_send(const char *dst, int port, double pps, const char *logpath)
{
    FILE *log = fopen(logpath, "w");
    static struct sender x;
    if (!log || sender_open(&x, dst, port) < 0) {
        perror("faultflow send");
        return 1;
    }
    int fd = x.fd;
    uint8_t(*buf)[PAYLOAD] = x.buf;
    struct mmsghdr *msg = x.msg;
    uint64_t seq = 0, errors = 0;
    double due = 0; /* datagrams owed, fractional */
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!stop) {
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t late = (int64_t)(now.tv_sec - next.tv_sec) * 1000000000 + (now.tv_nsec - next.tv_nsec);
        if (late > 10000000) {
            next = now; /* descheduled: skip ahead, no burst */
            due = 0;
        } else if (late < 0) {
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        }
        due += pps / 1000.0;
        uint64_t t = now_us();
        fprintf(log, "%llu %llu\n", (unsigned long long)seq, (unsigned long long)t);
        while (due >= 1 && !stop) {
            int n = due < BATCH ? (int)due : BATCH;
            for (int i = 0; i < n; i++) {
                uint64_t s = seq + (uint64_t)i;
                memcpy(buf[i], &s, 8);
                memcpy(buf[i] + 8, &t, 8);
            }
            int r = sendmmsg(fd, msg, (unsigned)n, 0);
            if (r < 0) {
                if (errno != EINTR)
                    errors += (uint64_t)n; /* not our business: counted, numbers go on */
                r = n;
            } else if (r < n) {
                errors += (uint64_t)(n - r);
            }
            seq += (uint64_t)n;
            due -= n;
        }
    }
    fclose(log);
    fprintf(stderr, "sent %llu errors %llu\n", (unsigned long long)seq, (unsigned long long)errors);
    return 0;
}

static int do_train(const char *dst, int port, long len, long every_ms, long trains)
{
    static struct sender x;
    if (len <= 0 || every_ms <= 0 || trains <= 0) {
        fprintf(stderr, "faultflow train: LEN, EVERY_MS and TRAINS must be positive\n");
        return 2;
    }
    if (sender_open(&x, dst, port) < 0) {
        perror("faultflow train");
        return 1;
    }
    int fd = x.fd;
    uint8_t(*buf)[PAYLOAD] = x.buf;
    struct mmsghdr *msg = x.msg;
    /* Room for a whole train in the socket: a train must leave as one burst,
     * not paced by the send buffer's drain. */
    int sndbuf = 16 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
    uint64_t seq = 0, errors = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long k = 0; k < trains && !stop; k++) {
        uint64_t t = now_us();
        for (long left = len; left > 0 && !stop;) {
            int n = left < BATCH ? (int)left : BATCH;
            for (int i = 0; i < n; i++) {
                uint64_t s = seq + (uint64_t)i;
                memcpy(buf[i], &s, 8);
                memcpy(buf[i] + 8, &t, 8);
            }
            int r = sendmmsg(fd, msg, (unsigned)n, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < n)
                errors += (uint64_t)(n - (r < 0 ? 0 : r)); /* counted, numbers go on */
            seq += (uint64_t)n;
            left -= n;
        }
        next.tv_nsec += every_ms % 1000 * 1000000;
        next.tv_sec += every_ms / 1000 + next.tv_nsec / 1000000000;
        next.tv_nsec %= 1000000000;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    fprintf(stderr, "sent %llu errors %llu\n", (unsigned long long)seq, (unsigned long long)errors);
    return 0;
}

/* The kernel's receive time of a datagram (SO_TIMESTAMPNS), in us; 0 if none. */
static uint64_t rx_time_us(struct msghdr *h)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof(ts));
            return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
        }
    return 0;
}

static int do_recv(const char *addr, int port, const char *path, const char *gappath)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int rcvbuf = 8 << 20;
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
    if (fd < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        perror("faultflow recv");
        return 1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int on = 1;
    FILE *gaps = gappath ? fopen(gappath, "w") : NULL;
    if (gappath && (!gaps || setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) < 0)) {
        perror("faultflow recv: the gap log");
        return 1;
    }
    size_t cap = 1 << 20; /* bytes of bitmap: 8M sequence numbers, grown as needed */
    uint8_t *bm = calloc(cap, 1);
    static uint8_t buf[BATCH][PAYLOAD + 64];
    struct mmsghdr msg[BATCH];
    struct iovec iov[BATCH];
    static uint8_t ctl[BATCH][CMSG_SPACE(sizeof(struct timespec))] __attribute__((aligned(8)));
    for (int i = 0; i < BATCH; i++) {
        iov[i] = (struct iovec){.iov_base = buf[i], .iov_len = sizeof(buf[i])};
        msg[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
    }
    uint64_t got = 0, dup = 0, top = 0, reordered = 0, top_at = 0;
    /* After SIGTERM, what the socket already holds is read too (without
     * waiting): a datagram that arrived before the stop counts. */
    for (bool draining = false; bm;) {
        if (stop)
            draining = true;
        for (int i = 0; gaps && i < BATCH; i++) {
            msg[i].msg_hdr.msg_control = ctl[i];
            msg[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
        }
        int n = recvmmsg(fd, msg, BATCH, draining ? MSG_DONTWAIT : MSG_WAITFORONE, NULL);
        if (draining && n <= 0)
            break;
        for (int i = 0; i < n; i++) {
            if (msg[i].msg_len < 16)
                continue;
            uint64_t s;
            memcpy(&s, buf[i], 8);
            if (s >> 40)
                continue; /* not ours */
            while (s / 8 >= cap) {
                uint8_t *nb = realloc(bm, cap * 2);
                if (!nb)
                    break;
                memset(nb + cap, 0, cap);
                bm = nb;
                cap *= 2;
            }
            if (s / 8 >= cap)
                continue;
            if (bm[s / 8] & (1u << (s % 8)))
                dup++;
            else if (got && s < top)
                reordered++; /* a later number came first */
            bm[s / 8] |= (uint8_t)(1u << (s % 8));
            uint64_t at = gaps ? rx_time_us(&msg[i].msg_hdr) : 0;
            if (gaps && s > top + 1 && got)
                fprintf(gaps, "%llu %llu %llu %llu\n", (unsigned long long)(top + 1), (unsigned long long)(s - top - 1),
                        (unsigned long long)top_at, (unsigned long long)at);
            got++;
            if (s > top || got == 1) {
                top = s;
                top_at = at;
            }
        }
    }
    FILE *out = fopen(path, "w");
    if (!out || !bm || fwrite(bm, 1, got ? top / 8 + 1 : 0, out) != (got ? top / 8 + 1 : 0)) {
        perror("faultflow recv: writing the bitmap");
        return 1;
    }
    fclose(out);
    if (gaps)
        fclose(gaps);
    /* What this socket itself dropped (its receive buffer full): the sink's
     * loss, not the path's. */
    uint32_t mem[SK_MEMINFO_VARS] = {0};
    socklen_t ml = sizeof(mem);
    if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &ml) < 0)
        mem[SK_MEMINFO_DROPS] = UINT32_MAX;
    fprintf(stderr, "received %llu max_seq %llu dup %llu\n", (unsigned long long)got, (unsigned long long)top,
            (unsigned long long)dup);
    /* Its own line: readers of the first keep their fields. */
    fprintf(stderr, "reordered %llu\n", (unsigned long long)reordered);
    fprintf(stderr, "socket_drops %lld\n", mem[SK_MEMINFO_DROPS] == UINT32_MAX ? -1LL : (long long)mem[SK_MEMINFO_DROPS]);
    return 0;
}

int main(int argc, char **argv)
{
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (argc == 6 && strcmp(argv[1], "send") == 0)
        return do_send(argv[2], atoi(argv[3]), atof(argv[4]), argv[5]);
    if (argc == 7 && strcmp(argv[1], "train") == 0)
        return do_train(argv[2], atoi(argv[3]), atol(argv[4]), atol(argv[5]), atol(argv[6]));
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "recv") == 0)
        return do_recv(argv[2], atoi(argv[3]), argv[4], argc == 6 ? argv[5] : NULL);
    fprintf(stderr, "usage: faultflow send DST PORT PPS LOG | faultflow train DST PORT LEN EVERY_MS TRAINS |\n"
                    "       faultflow recv ADDR PORT BITMAP [GAPLOG]\n");
    return 2;
}
