/* SPDX-License-Identifier: MIT */
/*
 * services/routes/main.c: rr-routes, the parser of routes from a routing
 * daemon. It runs as a uid of its own, with no capability, under its kind's
 * seccomp allow-list, and holds what the supervisor opened for it: a
 * NETLINK_ROUTE socket in the control namespace, bound to the IPv4 and IPv6
 * route groups (and, with [routes] fpm, a listening FPM socket:
 * services/routes/fpm.c), and the route channel to the supervisor
 * (tables/rtchan.h). It never writes a route anywhere but the channel; the
 * supervisor checks each record before the FIB sees it.
 *
 * The loop: read what the sources have, parse it (rn.c), put each route of
 * our table in the channel, publish it at the end of the turn, and close
 * a batch when the source has been quiet for RR_SETTLE_NS or the batch
 * holds RR_BATCH_MAX records. At start,
 * after any restart, and after anything that may have lost a message (a
 * malformed one, ENOBUFS, an interrupted dump) it dumps the table,
 * bracketed by RTC_SYNC_BEGIN and RTC_SYNC_END. While the channel is full
 * it reads nothing: the netlink socket may overflow meanwhile, which the
 * next dump repairs; a TCP source is pushed back. In a burst it gathers:
 * it sleeps a millisecond on a timer, not on its sources, and then reads
 * what the millisecond brought (RR_GATHER_NS).
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ipc/svc.h"
#include "services/routes/fpm.h"
#include "services/routes/rn.h"
#include "tables/rtchan.h"

/* Netlink: up to RR_MSGS messages a system call (recvmmsg), each in a
 * buffer of RR_MSG_BUF: a notification is one route, a dump's message at
 * most 32 KiB (the kernel sizes them by the largest read it has seen,
 * capped there). */
#define RR_MSGS 64u
#define RR_MSG_BUF (32u * 1024u)
#define RR_BATCH_MAX 2048u
#define RR_SETTLE_NS 5000000ull /* a flush's deletions arrive within this of each other */
/* In a burst (something read within RR_BURST_NS) we sleep RR_GATHER_NS on
 * a timer, not on the sources: with no one waiting on the socket the
 * kernel queues each notification without a wake-up, which it would
 * otherwise make (an IPI, in the system call of the process writing the
 * table) for every route. The first message of a burst still wakes us. */
#define RR_BURST_NS 2000000ull
#define RR_GATHER_NS 1000000ull

static volatile sig_atomic_t stop;

enum rr_ctr {
    RR_RESYNCS = RN_NCTR,
    RR_DUMPS,
    RR_ENOBUFS,
    RR_BATCHES,
    RR_CHAN_FULL,
    RR_FOREIGN,
    RR_NL_READS, /* recvmmsg calls that brought messages */
    RR_NCTR_OWN
};

struct rr_proc {
    struct ipc_svc svc;
    const struct tbl_routes_cfg *tc;
    struct rtc_shared *chan;
    uint32_t prod;         /* our head */
    uint32_t published;    /* the head the supervisor was last told of */
    uint32_t in_batch;     /* records since the last batch end */
    uint64_t batch_t0;     /* when the open batch's first record came */
    uint64_t last_rx;      /* when a source last had something */
    struct rn_parser nl;
    struct rr_fpm fpm;
    bool dumping, dump_bad, need_dump;
    /* Netlink messages read and not yet parsed: message cur from byte
     * off, then those up to nmsg. */
    unsigned nmsg, cur;
    size_t off;
    struct mmsghdr mm[RR_MSGS];
    struct iovec iov[RR_MSGS];
    struct sockaddr_nl from[RR_MSGS];
    _Alignas(8) uint8_t buf[RR_MSGS][RR_MSG_BUF];
    _Atomic uint64_t *ctr;
    uint64_t own[RR_NCTR_OWN - RN_NCTR];
};

static const char *rr_names[RR_NCTR_OWN + RR_FPM_NCTR];

static void publish_ctr(struct rr_proc *p)
{
    for (unsigned i = 0; i < RN_NCTR; i++)
        ipc_st_rlx(&p->ctr[i], p->nl.ctr[i]);
    for (unsigned i = RN_NCTR; i < RR_NCTR_OWN; i++)
        ipc_st_rlx(&p->ctr[i], p->own[i - RN_NCTR]);
    for (unsigned i = 0; i < RR_FPM_NCTR; i++)
        ipc_st_rlx(&p->ctr[RR_NCTR_OWN + i], p->fpm.ctr[i]);
}

#define OWN(p, c) ((p)->own[(c) - RN_NCTR])

static void batch_end(struct rr_proc *p);

/* Put one record in the channel; -1 when it is full (nothing written). A
 * record is taken only with room for a batch end behind it, so that a
 * batch can always be closed. */
static int put(void *arg, const struct rtc_rec *r)
{
    struct rr_proc *p = arg;
    if (rtc_room(p->chan, p->prod) < 2)
        return -1;
    rtc_rec_copy(rtc_slot(p->chan, p->prod), r);
    p->prod++;
    if (p->in_batch++ == 0)
        p->batch_t0 = ipc_svc_now_ns();
    if (p->in_batch >= RR_BATCH_MAX)
        batch_end(p);
    return 0;
}

static int put_op(struct rr_proc *p, uint8_t op, uint8_t src)
{
    struct rtc_rec r;
    memset(&r, 0, sizeof(r));
    r.op = op;
    r.src = src;
    return put(p, &r);
}

/* Publish what is written, a batch still open included, and wake the
 * supervisor; once a turn of our loop at most. It applies an open batch's
 * additions as they come and holds its withdrawals until the batch's end
 * (where it tells a flush), so a route is in the FIB a turn after we read
 * it, not when its batch closes (up to RR_SETTLE_NS later). */
static void publish(struct rr_proc *p)
{
    if (p->prod == p->published)
        return;
    rtc_publish(p->chan, p->prod);
    p->published = p->prod;
    uint64_t one = 1;
    if (write(p->tc->sup_wake_fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is at its limit, the supervisor is woken anyway. */
    }
}

/* Close the open batch: publish it and wake the supervisor. */
static void batch_end(struct rr_proc *p)
{
    if (!p->in_batch || rtc_room(p->chan, p->prod) < 1)
        return;
    struct rtc_rec *r = rtc_slot(p->chan, p->prod);
    memset(r, 0, sizeof(*r));
    r->op = RTC_BATCH_END;
    p->prod++;
    p->in_batch = 0;
    publish(p);
    OWN(p, RR_BATCHES)++;
}

/* Start a dump of every route (both families; rn.c keeps our table's). */
static void nl_drain(struct rr_proc *p);

static void dump_start(struct rr_proc *p)
{
    if (rtc_room(p->chan, p->prod) < 2)
        return; /* SYNC_BEGIN and a batch end must fit: later */
    nl_drain(p);
    struct {
        struct nlmsghdr h;
        struct rtmsg r;
    } req;
    memset(&req, 0, sizeof(req));
    req.h.nlmsg_len = sizeof(req);
    req.h.nlmsg_type = RTM_GETROUTE;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.h.nlmsg_seq = (uint32_t)OWN(p, RR_DUMPS) + 1;
    req.r.rtm_family = AF_UNSPEC;
    struct sockaddr_nl k = {.nl_family = AF_NETLINK};
    if (sendto(p->tc->nl_fd, &req, sizeof(req), 0, (struct sockaddr *)&k, sizeof(k)) < 0) {
        if (errno != EBUSY) /* a dump still runs: we come back at its end */
            fprintf(stderr, "rr-routes: dump request: %s\n", strerror(errno));
        return;
    }
    put_op(p, RTC_SYNC_BEGIN, RTC_SRC_NETLINK);
    OWN(p, RR_DUMPS)++;
    p->dumping = true;
    p->dump_bad = false;
    p->need_dump = false;
}

/* Read netlink into the buffers: 0 when a message came (or something was
 * dealt with), -1 when the socket is empty. */
static void nl_bufs(struct rr_proc *p)
{
    for (unsigned i = 0; i < RR_MSGS; i++) {
        p->iov[i] = (struct iovec){.iov_base = p->buf[i], .iov_len = RR_MSG_BUF};
        p->mm[i].msg_hdr = (struct msghdr){.msg_name = &p->from[i], .msg_namelen = sizeof(p->from[i]),
                                           .msg_iov = &p->iov[i], .msg_iovlen = 1};
        p->mm[i].msg_len = 0;
    }
}

static int nl_read(struct rr_proc *p)
{
    nl_bufs(p);
    int n = recvmmsg(p->tc->nl_fd, p->mm, RR_MSGS, MSG_DONTWAIT, NULL);
    if (n < 0) {
        if (errno == ENOBUFS) { /* notifications were lost: the table is to be read again */
            OWN(p, RR_ENOBUFS)++;
            p->need_dump = true;
            p->dump_bad = p->dumping;
            return 0;
        }
        return -1; /* EAGAIN */
    }
    OWN(p, RR_NL_READS)++;
    p->nmsg = (unsigned)n;
    p->cur = 0;
    p->off = 0;
    return 0;
}

/*
 * Before a dump: drop every notification read or queued. They are older
 * than the dump, which says the table as it is; parsed after its
 * SYNC_BEGIN, an add whose delete was lost would count as named and stay.
 * And the kernel reports an overflow (ENOBUFS) once until the queue has
 * been empty: a dump started on a queue still full would lose later
 * notifications without a word, and the table and the FIB would differ
 * for good. Emptied, a later overflow is reported, and dumped again.
 */
static void nl_drain(struct rr_proc *p)
{
    p->cur = p->nmsg;
    p->off = 0;
    for (unsigned i = 0; i < 65536; i++) {
        nl_bufs(p);
        int n = recvmmsg(p->tc->nl_fd, p->mm, RR_MSGS, MSG_DONTWAIT, NULL);
        if (n < 0 && errno != ENOBUFS)
            break; /* EAGAIN: empty */
    }
    p->nmsg = p->cur = 0;
}

/* Is message @i one to parse? The kernel's, and whole. */
static bool nl_msg_ok(struct rr_proc *p, unsigned i)
{
    const struct msghdr *h = &p->mm[i].msg_hdr;
    if (h->msg_namelen != sizeof(p->from[i]) || p->from[i].nl_family != AF_NETLINK || p->from[i].nl_pid != 0) {
        OWN(p, RR_FOREIGN)++; /* only the kernel speaks here */
        return false;
    }
    if ((h->msg_flags & MSG_TRUNC) || p->mm[i].msg_len > RR_MSG_BUF) { /* truncated: its tail is lost */
        p->nl.ctr[RN_MALFORMED]++;
        p->need_dump = true;
        p->dump_bad = p->dumping;
        return false;
    }
    return true;
}

/* Read and parse netlink until it is empty or the channel is full. Returns
 * true if it made progress. */
static bool nl_pump(struct rr_proc *p)
{
    bool any = false;
    for (unsigned reads = 0;;) {
        if (p->cur == p->nmsg) {
            if (reads++ == 8 || nl_read(p) < 0)
                break; /* eight reads (512 messages) a turn: the loop's other work gets its turn */
            any = true;
            continue;
        }
        if (p->off == 0 && !nl_msg_ok(p, p->cur)) {
            p->cur++;
            continue;
        }
        size_t have = p->mm[p->cur].msg_len, used;
        unsigned f = rn_parse(&p->nl, p->buf[p->cur] + p->off, have - p->off, put, p, &used);
        p->off += used;
        if (f & (RN_F_BAD | RN_F_INTR)) {
            p->need_dump = true;
            p->dump_bad = p->dumping;
        }
        if ((f & RN_F_DONE) && p->dumping && p->off == have) {
            p->dumping = false;
            if (!p->dump_bad && put_op(p, RTC_SYNC_END, RTC_SRC_NETLINK) == 0) {
                batch_end(p);
            } else {
                p->need_dump = true;
                OWN(p, RR_RESYNCS)++;
            }
        }
        if (p->off < have) { /* the channel is full */
            OWN(p, RR_CHAN_FULL)++;
            break;
        }
        p->cur++;
        p->off = 0;
    }
    return any;
}

static int rr_setup(struct rr_proc *p, struct ipc_err *err)
{
    int ret = ipc_svc_open(&p->svc, IPC_SVC_ROUTES, err);
    if (ret < 0)
        return ret;
    p->tc = tbl_cfg_get(&p->svc, TBL_ROUTES_CFG_VERSION, sizeof(*p->tc), err);
    if (!p->tc)
        return -EPROTO;
    void *base;
    if ((ret = ipc_shm_attach_fixed(p->tc->chan_fd, IPC_SHM_RTCHAN, RTC_VERSION, sizeof(struct rtc_shared), &base,
                                    err)) < 0)
        return ret;
    p->chan = base;
    /* Our head is the channel's: a predecessor's unpublished records are
     * overwritten, its published ones stand. */
    p->prod = p->published = ipc_ld_acq(&p->chan->prod);
    p->nl.table = p->tc->table;
    p->nl.src = RTC_SRC_NETLINK;
    unsigned n = 0;
    for (unsigned i = 0; i < RN_NCTR; i++)
        rr_names[n++] = rn_ctr_names[i];
    static const char *const own[] = {"resyncs", "dumps",      "nl_enobufs", "batches",
                                      "chan_full", "nl_foreign", "nl_reads"};
    for (unsigned i = 0; i < RR_NCTR_OWN - RN_NCTR; i++)
        rr_names[n++] = own[i];
    for (unsigned i = 0; i < RR_FPM_NCTR; i++)
        rr_names[n++] = rr_fpm_ctr_names[i];
    p->ctr = ipc_svc_counters(&p->svc, rr_names, n);
    /* A restarted instance carries its predecessor's counters on. */
    for (unsigned i = 0; i < RN_NCTR; i++)
        p->nl.ctr[i] = ipc_ld_rlx(&p->ctr[i]);
    for (unsigned i = RN_NCTR; i < RR_NCTR_OWN; i++)
        p->own[i - RN_NCTR] = ipc_ld_rlx(&p->ctr[i]);
    for (unsigned i = 0; i < RR_FPM_NCTR; i++)
        p->fpm.ctr[i] = ipc_ld_rlx(&p->ctr[RR_NCTR_OWN + i]);
    rr_fpm_init(&p->fpm, p->tc->fpm_fd, 0);
    p->need_dump = p->tc->nl_fd >= 0;
    return 0;
}

/* Sleep until a source has something (@sources), the supervisor made
 * room, or @ns. */
static void rr_sleep(struct rr_proc *p, bool full, bool sources, uint64_t ns)
{
    struct pollfd fds[5];
    unsigned n = 0;
    fds[n++] = (struct pollfd){.fd = p->svc.wake_fd, .events = POLLIN};
    if (ipc_svc_stop_fd() >= 0)
        fds[n++] = (struct pollfd){.fd = ipc_svc_stop_fd(), .events = POLLIN};
    if (full) {
        /* Sleep until cons moves (tables/rtchan.h: the Dekker pair). */
        ipc_st_rlx(&p->chan->prod_wait, 1);
        ipc_fence_sc();
        if (rtc_room(p->chan, p->prod) >= 2) {
            ipc_st_rlx(&p->chan->prod_wait, 0);
            return;
        }
    } else if (sources) {
        if (p->tc->nl_fd >= 0)
            fds[n++] = (struct pollfd){.fd = p->tc->nl_fd, .events = POLLIN};
        n += rr_fpm_pollfds(&p->fpm, &fds[n]);
    }
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
    int r = ppoll(fds, n, &ts, NULL);
    ipc_count(&p->svc.stats->sleeps, 1);
    if (r > 0 && (fds[0].revents & POLLIN)) {
        uint64_t v;
        if (read(p->svc.wake_fd, &v, sizeof(v)) < 0) {
            /* EAGAIN: someone else read it */
        }
    }
    if (r > 0 && n > 1 && fds[1].fd == ipc_svc_stop_fd() && (fds[1].revents & POLLIN))
        ipc_svc_stop_poll();
    ipc_st_rlx(&p->chan->prod_wait, 0);
}

static void rr_run(struct rr_proc *p)
{
    int idle = ipc_svc_idle_ms(&p->svc);
    while (!stop && !p->svc.orphan_stop) {
        if (p->need_dump && !p->dumping && p->tc->nl_fd >= 0)
            dump_start(p);
        bool moved = false;
        if (p->tc->nl_fd >= 0)
            moved |= nl_pump(p);
        moved |= rr_fpm_pump(&p->fpm, put, p);
        uint64_t now = ipc_svc_now_ns();
        if (moved)
            p->last_rx = now;
        if (p->fpm.lost && put_op(p, RTC_SOURCE_LOST, RTC_SRC_FPM) == 0) /* else again once there is room */
            p->fpm.lost = false;
        /* A flush arrives as a train of deletions: a batch closes once
         * the source has been quiet since RR_SETTLE_NS after its first
         * record, so that the supervisor sees the train whole. */
        if (p->in_batch && !moved && now - p->batch_t0 >= RR_SETTLE_NS)
            batch_end(p);
        publish(p);
        publish_ctr(p);
        ipc_svc_beat(&p->svc);
        bool full = rtc_room(p->chan, p->prod) < 2;
        if (moved && !full)
            continue;
        uint64_t ms = p->in_batch ? 1 : (uint64_t)idle;
        if (p->need_dump && !p->dumping)
            ms = 1; /* waiting for room to start a dump */
        bool burst = now - p->last_rx < RR_BURST_NS;
        rr_sleep(p, full, !burst, burst ? RR_GATHER_NS : ms * 1000000ull);
    }
}

int main(void)
{
    static struct rr_proc p;
    struct ipc_err err = {{0}};
    if (ipc_svc_catch_stop(&stop) < 0) {
        fprintf(stderr, "rr-routes: blocking SIGTERM and SIGINT for the signalfd: %m\n");
        return 111;
    }
    if (rr_setup(&p, &err) < 0 || ipc_svc_ready(&p.svc, &err) < 0) {
        fprintf(stderr, "rr-routes: %s\n", err.msg);
        return 111;
    }
    rr_run(&p);
    batch_end(&p);
    publish_ctr(&p);
    ipc_svc_close(&p.svc);
    return 0;
}
