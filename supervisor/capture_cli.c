/* SPDX-License-Identifier: MIT */
/*
 * supervisor/capture_cli.c: the client of `ringrouter capture` (capture.h,
 * docs/capture.md). It compiles the filter with libpcap (a dead handle,
 * Ethernet), sends the program to the supervisor, which checks it and
 * answers with the capture regions and a lease (SCM_RIGHTS), then drains the
 * regions into pcapng until -c N frames, SIGINT or SIGTERM, or the end of
 * its output's reader. It believes nothing it reads from a region
 * (ipc_cap_take). Exiting, however it exits, closes the lease: the
 * supervisor turns the capture off.
 */
#include "supervisor/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipc/capture.h"
#include "supervisor/cli.h"
#include "supervisor/pcapng.h"
#include "supervisor/sup.h"

#define CAP_FDS_MAX 40 /* a trace takes every capturing service's region, and its lease */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "ringrouter capture: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: ringrouter capture PORT [rx|tx|drop|both] [-c N] [-s SNAPLEN] [-S SOCKET] [FILTER] "
                    "-w FILE|-\n");
    return SUP_EXIT_USAGE;
}

struct opts {
    const char *port, *dir, *out, *sock;
    unsigned long count, snap;
    char filter[1024];
};

static int parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof(*o));
    o->dir = "rx";
    o->snap = 262144;
    size_t fl = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            char err[128];
            cli_help(stdout, cli_command("capture", err, sizeof(err)));
            exit(SUP_EXIT_OK);
        }
        if (!strcmp(a, "-c") || !strcmp(a, "-s") || !strcmp(a, "-w") || !strcmp(a, "-S")) {
            if (i + 1 >= argc)
                return usage("%s needs a value", a);
            const char *v = argv[++i];
            char *end;
            if (a[1] == 'w')
                o->out = v;
            else if (a[1] == 'S')
                o->sock = v;
            else {
                unsigned long n = strtoul(v, &end, 10);
                if (*end || !*v || n == 0 || (a[1] == 's' && n > 262144))
                    return usage(a[1] == 'c' ? "-c \"%s\": a count of at least 1" : "-s \"%s\": 1 to 262144", v);
                *(a[1] == 'c' ? &o->count : &o->snap) = n;
            }
        } else if (a[0] == '-' && a[1] && strcmp(a, "-") != 0) {
            return usage("unknown option \"%s\"", a);
        } else if (!o->port) {
            o->port = a;
        } else if (fl == 0 && (!strcmp(a, "rx") || !strcmp(a, "tx") || !strcmp(a, "drop") || !strcmp(a, "both"))) {
            o->dir = a;
        } else {
            int n = snprintf(o->filter + fl, sizeof(o->filter) - fl, "%s%s", fl ? " " : "", a);
            if (n < 0 || (size_t)n >= sizeof(o->filter) - fl)
                return usage("%s", "the filter is too long");
            fl += (size_t)n;
        }
    }
    if (!o->port)
        return usage("%s", "name a port");
    if (!o->out)
        return usage("%s", "-w FILE or -w - (stdout) is required");
    return 0;
}

int sup_cap_compile(const char *who, const char *filter, unsigned snap, char *word, size_t cap)
{
    if (!filter[0]) {
        snprintf(word, cap, "-");
        return 0;
    }
    pcap_t *p = pcap_open_dead(DLT_EN10MB, (int)snap);
    struct bpf_program prog;
    if (!p) {
        fprintf(stderr, "%s: libpcap: pcap_open_dead failed\n", who);
        return SUP_EXIT_USAGE;
    }
    if (pcap_compile(p, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0) {
        fprintf(stderr, "%s: filter \"%s\": %s\n", who, filter, pcap_geterr(p));
        pcap_close(p);
        return SUP_EXIT_USAGE;
    }
    pcap_close(p);
    int rc = 0;
    if (prog.bf_len > IPC_CAP_BPF_MAX) {
        fprintf(stderr, "%s: filter \"%s\" compiles to %u instructions; at most %u\n", who, filter, prog.bf_len,
                IPC_CAP_BPF_MAX);
        rc = SUP_EXIT_USAGE;
    } else {
        struct ipc_cap_insn ins[IPC_CAP_BPF_MAX];
        for (unsigned i = 0; i < prog.bf_len; i++)
            ins[i] = (struct ipc_cap_insn){prog.bf_insns[i].code, prog.bf_insns[i].jt, prog.bf_insns[i].jf,
                                           prog.bf_insns[i].k};
        if (!sup_b64_encode((const unsigned char *)ins, prog.bf_len * sizeof(ins[0]), word, cap)) {
            fprintf(stderr, "%s: the filter is too long\n", who);
            rc = SUP_EXIT_USAGE;
        }
    }
    pcap_freecode(&prog);
    return rc;
}

int sup_cap_ask(const char *who, const char *sockpath, const char *req, int *fds, int max, char *ans, size_t cap)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sockpath) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "%s: socket path \"%s\" is too long\n", who, sockpath);
        return -SUP_EXIT_USAGE;
    }
    memcpy(sa.sun_path, sockpath, strlen(sockpath) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "%s: cannot reach the supervisor at %s: %s\n", who, sockpath, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -SUP_EXIT_SYSTEM;
    }
    struct ucred cr = {.uid = (uid_t)-1};
    socklen_t crlen = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 || cr.uid != 0) {
        fprintf(stderr, "%s: %s is not root's: not a ringrouter supervisor\n", who, sockpath);
        close(fd);
        return -SUP_EXIT_SYSTEM;
    }
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        fprintf(stderr, "%s: %s: %s\n", who, sockpath, strerror(errno));
        close(fd);
        return -SUP_EXIT_SYSTEM;
    }
    char first;
    struct iovec iov = {.iov_base = &first, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * CAP_FDS_MAX)];
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    int n = 0;
    for (struct cmsghdr *c = r > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int got;
                memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                if (n < max)
                    fds[n++] = got;
                else
                    close(got);
            }
        }
    size_t len = 0;
    if (r > 0 && n == 0)
        ans[len++] = first; /* no fds: that byte begins the answer */
    for (ssize_t k; len < cap - 1 && (k = read(fd, ans + len, cap - 1 - len)) > 0;)
        len += (size_t)k;
    ans[len] = '\0';
    close(fd);
    if (strncmp(ans, "OK\n", 3) == 0 && n >= 2) {
        memmove(ans, ans + 3, len - 2); /* the answer, its NUL too */
        return n;
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    if (strncmp(ans, "ERR\n", 4) == 0) {
        fprintf(stderr, "%s: %s", who, ans + 4);
        return -SUP_EXIT_USAGE;
    }
    fprintf(stderr, "%s: no answer from the supervisor at %s\n", who, sockpath);
    return -SUP_EXIT_SYSTEM;
}

int sup_cap_map(const char *who, const int *fds, int n, struct ipc_cap **caps)
{
    for (int i = 0; i < n; i++) {
        void *base;
        struct ipc_err err;
        if (ipc_shm_attach_fixed(fds[i], IPC_SHM_CAPTURE, IPC_CAP_VERSION, sizeof(struct ipc_cap), &base, &err) < 0) {
            fprintf(stderr, "%s: a region: %s\n", who, err.msg);
            return SUP_EXIT_SYSTEM;
        }
        close(fds[i]);
        caps[i] = base;
    }
    return 0;
}

int sup_capture_main(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    char prog[512];
    if ((rc = sup_cap_compile("ringrouter capture", o.filter, (unsigned)o.snap, prog, sizeof(prog))))
        return rc;
    FILE *out = stdout;
    /* A refused capture removes the file it made, never one that was there
     * (`-w /dev/null` must not unlink /dev/null). */
    bool made = strcmp(o.out, "-") != 0 && access(o.out, F_OK) != 0;
    if (strcmp(o.out, "-") != 0 && !(out = fopen(o.out, "we"))) {
        fprintf(stderr, "ringrouter capture: -w %s: %s\n", o.out, strerror(errno));
        return SUP_EXIT_SYSTEM;
    }
    char req[SUP_CTL_REQ_MAX];
    if (snprintf(req, sizeof(req), "capture %s %s %lu %s\n", o.port, o.dir, o.snap, prog) >= (int)sizeof(req))
        return usage("%s", "the request is too long (a shorter filter, or port name)");
    const char *env = getenv("RINGROUTER_SOCKET");
    const char *sock = o.sock ? o.sock : env && env[0] ? env : "/run/ringrouter/control.sock";
    int fds[CAP_FDS_MAX];
    char ans[1024];
    int n = sup_cap_ask("ringrouter capture", sock, req, fds, CAP_FDS_MAX, ans, sizeof(ans));
    if (n < 0) {
        if (out != stdout) {
            fclose(out);
            if (made)
                unlink(o.out);
        }
        return -n;
    }
    fprintf(stderr, "ringrouter: %s", ans);
    int lease = fds[n - 1];
    struct ipc_cap *caps[CAP_FDS_MAX];
    uint64_t lost0[CAP_FDS_MAX];
    int ncap = n - 1;
    if ((rc = sup_cap_map("ringrouter capture", fds, ncap, caps)))
        return rc;
    for (int i = 0; i < ncap; i++)
        lost0[i] = ipc_ld_rlx(&caps[i]->lost);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    uint32_t snap = o.snap < IPC_CAP_SNAP_MAX ? (uint32_t)o.snap : IPC_CAP_SNAP_MAX;
    rc = SUP_EXIT_OK;
    if (pcapng_shb(out) < 0 || pcapng_idb(out, o.port, snap) < 0 || fflush(out) != 0)
        stop = 1;
    uint64_t got = 0, skipped = 0;
    static struct ipc_cap_rec rec;
    const char *why = NULL;
    bool epipe = false;
    while (!stop && (!o.count || got < o.count)) {
        bool any = false;
        for (int i = 0; i < ncap && (!o.count || got < o.count); i++) {
            uint64_t sk;
            int t = ipc_cap_take(caps[i], &rec, &sk);
            skipped += sk;
            if (t <= 0)
                continue;
            any = true;
            if (rec.caplen > snap)
                rec.caplen = snap;
            unsigned dir = rec.dir == IPC_CAP_RX ? PCAPNG_DIR_IN : rec.dir == IPC_CAP_TX ? PCAPNG_DIR_OUT
                                                                                       : PCAPNG_DIR_NONE;
            if (pcapng_epb(out, 0, rec.ts_ns, rec.data, rec.caplen, rec.wirelen, dir,
                           rec.dir == IPC_CAP_DROP ? rec.reason : NULL) < 0) {
                stop = 1;
                epipe = errno == EPIPE;
                why = strerror(errno);
                break;
            }
            got++;
        }
        if (!any) {
            if (fflush(out) != 0) {
                epipe = errno == EPIPE;
                why = strerror(errno);
                break;
            }
            /* The lease's other end closed: the supervisor ended the capture. */
            struct pollfd p = {.fd = lease, .events = 0};
            if (poll(&p, 1, 1) > 0 && (p.revents & (POLLERR | POLLHUP))) {
                why = "the supervisor ended the capture";
                break;
            }
        }
    }
    if (fflush(out) != 0 && !why) {
        epipe = errno == EPIPE;
        why = strerror(errno);
    }
    uint64_t lost = skipped;
    for (int i = 0; i < ncap; i++)
        lost += ipc_ld_rlx(&caps[i]->lost) - lost0[i];
    close(lease);
    /* A reader that went (| head) ends us as it ends tcpdump, quietly. */
    if (why && !epipe) {
        fprintf(stderr, "ringrouter capture: %s\n", why);
        rc = SUP_EXIT_SYSTEM;
    }
    fprintf(stderr, "%llu packets captured\n%llu captures lost\n", (unsigned long long)got, (unsigned long long)lost);
    if (out != stdout)
        fclose(out);
    return rc;
}
