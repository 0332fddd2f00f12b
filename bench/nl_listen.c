/* SPDX-License-Identifier: MIT */
/*
 * bench/nl_listen.c: bench/routes' floor of a kernel table mirror. It
 * listens to IPv4 route changes in its network namespace and reads them
 * as services/routes reads them (up to 64 messages a recvmmsg, a 32 MiB
 * socket buffer, and in a burst a 1 ms sleep on a timer rather than on the
 * socket, so the kernel queues without a wake-up), and discards them: what
 * any mirror must do at least, with no parse, no channel and no FIB.
 *
 *   nl_listen         prints "ready" once bound; SIGTERM ends it, printing
 *                     the messages and reads to stderr
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSGS 64u
#define MSG_BUF (32u * 1024u)

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

int main(void)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    int rcv = 32 << 20;
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_ROUTE};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "nl_listen: netlink socket: %s\n", strerror(errno));
        return 1;
    }
    struct sigaction act = {.sa_handler = on_term};
    sigaction(SIGTERM, &act, NULL);
    static char buf[MSGS][MSG_BUF];
    struct iovec iov[MSGS];
    struct mmsghdr mm[MSGS];
    unsigned long long msgs = 0, reads = 0, lost = 0;
    printf("ready\n");
    fflush(stdout);
    while (!stop) {
        for (unsigned i = 0; i < MSGS; i++) {
            iov[i] = (struct iovec){.iov_base = buf[i], .iov_len = MSG_BUF};
            mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
        }
        int n = recvmmsg(fd, mm, MSGS, MSG_DONTWAIT, NULL);
        if (n > 0) {
            msgs += (unsigned)n;
            reads++;
            /* the socket emptied in a burst: gather for 1 ms with nobody
             * waiting on it */
            if ((unsigned)n < MSGS)
                nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        } else if (n < 0 && errno == ENOBUFS) {
            lost++;
        } else {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            poll(&p, 1, 100);
        }
    }
    fprintf(stderr, "nl_listen: %llu messages in %llu reads, %llu overflows\n", msgs, reads, lost);
    return 0;
}
