/* SPDX-License-Identifier: MIT */
/*
 * supervisor/exporter.c: `ringrouter exporter --listen ADDR:PORT`, the
 * metrics of `ringrouter metrics` over HTTP for Prometheus: GET /metrics
 * (or HEAD), 404 for any other path, 405 for any other method.
 *
 * It is a separate process with no privilege: a reader of the control
 * socket through its group ([router] control_group), started as such a
 * user, or by root with --user USER[:GROUP], to which it switches once it
 * listens (GROUP, by default `ringrouter` when it exists, joins USER's own
 * groups), dropping every capability; it refuses to run on as root. The
 * supervisor sees only the requests `status` and `stats` make, one
 * connection at a time (metrics_fetch.c).
 *
 * Bounded, so that no scraper can hold it or, through it, the supervisor:
 * one poll loop over non-blocking sockets; at most EXP_CLIENTS clients,
 * a newcomer past them taking the slot of the oldest that has not finished
 * its request; a request of at most EXP_REQ_MAX bytes (431 past it),
 * whole within EXP_READ_NS of the accept however slowly it trickles; an
 * answer out within EXP_WRITE_NS. Scrapes that arrive together share one
 * snapshot; a snapshot younger than EXP_FRESH_NS is served again.
 */
#include "supervisor/metrics.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/log.h"

#define EXP_CLIENTS 64
#define EXP_REQ_MAX 8192
#define EXP_READ_NS 3000000000ull
#define EXP_WRITE_NS 10000000000ull
#define EXP_FRESH_NS 500000000ull

/* A rendered answer, shared by the clients it goes to. */
struct exp_body {
    int refs;
    char *text;
    size_t len;
};

enum exp_st { EXP_FREE, EXP_READ, EXP_WAIT, EXP_WRITE };

struct exp_client {
    enum exp_st st;
    int fd;
    uint64_t accepted_ns, deadline_ns;
    char req[EXP_REQ_MAX];
    size_t have;
    bool head; /* HEAD: the headers alone */
    char hdr[256];
    size_t hlen, off; /* headers' length; bytes sent of headers + body */
    struct exp_body *body;
};

/* Why connections were closed before a whole answer: the exporter's own metrics. */
enum { DROP_EVICTED, DROP_FULL, DROP_TIMEOUT, DROP_TOO_LARGE, DROP_BAD, DROP_N };
static const char *const drop_names[DROP_N] = {"evicted", "full", "timeout", "too_large", "bad_request"};

struct exporter {
    const char *sock;
    int lfd;
    struct exp_client c[EXP_CLIENTS];
    struct mx_fetch fetch;
    bool fetching;
    struct exp_body *snap; /* the last snapshot's exposition */
    uint64_t snap_ns;
    bool sup_up; /* the last snapshot reached the supervisor (for the log's transitions) */
    uint64_t scrapes, drops[DROP_N];
};

static void body_put(struct exp_body *b)
{
    if (b && --b->refs == 0) {
        free(b->text);
        free(b);
    }
}

static void client_close(struct exp_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    body_put(c->body);
    c->st = EXP_FREE;
    c->fd = -1;
    c->body = NULL;
}

static void client_drop(struct exporter *x, struct exp_client *c, int why)
{
    x->drops[why]++;
    client_close(c);
}

/* The answer: headers, then (unless HEAD) @b, from now on. */
static void client_answer(struct exp_client *c, int code, struct exp_body *b, const char *type)
{
    static const struct {
        int code;
        const char *text;
    } reasons[] = {{200, "OK"},
                   {400, "Bad Request"},
                   {404, "Not Found"},
                   {405, "Method Not Allowed"},
                   {431, "Request Header Fields Too Large"},
                   {503, "Service Unavailable"}};
    const char *reason = "Error";
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].code == code)
            reason = reasons[i].text;
    c->body = b;
    if (b)
        b->refs++;
    int n = snprintf(c->hdr, sizeof(c->hdr),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n", code,
                     reason, type, b ? b->len : 0, code == 405 ? "Allow: GET, HEAD\r\n" : "");
    c->hlen = n > 0 && (size_t)n < sizeof(c->hdr) ? (size_t)n : 0;
    c->off = 0;
    c->st = EXP_WRITE;
    c->deadline_ns = sup_now_ns() + EXP_WRITE_NS;
}

static void client_error(struct exp_client *c, int code, const char *text)
{
    struct exp_body *b = calloc(1, sizeof(*b));
    if (b && (b->text = strdup(text)))
        b->len = strlen(text);
    else if (b) {
        free(b);
        b = NULL;
    }
    client_answer(c, code, b, "text/plain; charset=utf-8"); /* the client's only reference */
}

static bool client_write(struct exporter *x, struct exp_client *c)
{
    (void)x;
    size_t blen = c->body && !c->head ? c->body->len : 0;
    while (c->off < c->hlen + blen) {
        const char *p = c->off < c->hlen ? c->hdr + c->off : c->body->text + (c->off - c->hlen);
        size_t n = c->off < c->hlen ? c->hlen - c->off : c->hlen + blen - c->off;
        ssize_t w = send(c->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            return false;
        if (w <= 0)
            break;
        c->off += (size_t)w;
    }
    client_close(c);
    return true;
}

/* The request line of a whole request: what to answer. */
static void client_request(struct exporter *x, struct exp_client *c)
{
    char method[16], target[256];
    if (sscanf(c->req, "%15s %255s HTTP/%*d.%*d", method, target) != 2) {
        x->drops[DROP_BAD]++;
        client_error(c, 400, "bad request\n");
        return;
    }
    c->head = strcmp(method, "HEAD") == 0;
    if (strcmp(method, "GET") != 0 && !c->head) {
        client_error(c, 405, "only GET and HEAD\n");
        return;
    }
    size_t pl = strcspn(target, "?");
    if (pl != 8 || strncmp(target, "/metrics", 8) != 0) {
        client_error(c, 404, "not found: the metrics are at /metrics\n");
        return;
    }
    x->scrapes++;
    c->st = EXP_WAIT; /* for the next snapshot, or this one if fresh (exporter_serve) */
}

static void client_read(struct exporter *x, struct exp_client *c)
{
    for (;;) {
        if (c->have == EXP_REQ_MAX - 1) {
            x->drops[DROP_TOO_LARGE]++;
            client_error(c, 431, "request too large\n");
            shutdown(c->fd, SHUT_RD);
            return;
        }
        ssize_t r = recv(c->fd, c->req + c->have, EXP_REQ_MAX - 1 - c->have, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (r <= 0) {
            client_close(c); /* gone before a whole request */
            return;
        }
        c->have += (size_t)r;
        c->req[c->have] = '\0';
        if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
            client_request(x, c);
            return;
        }
    }
}

/* A slot for a new connection: a free one, else the oldest still reading. */
static struct exp_client *slot_for_new(struct exporter *x)
{
    struct exp_client *old = NULL;
    for (int i = 0; i < EXP_CLIENTS; i++) {
        struct exp_client *c = &x->c[i];
        if (c->st == EXP_FREE)
            return c;
        if (c->st == EXP_READ && (!old || c->accepted_ns < old->accepted_ns))
            old = c;
    }
    if (old)
        client_drop(x, old, DROP_EVICTED);
    return old;
}

static void accept_all(struct exporter *x)
{
    for (int n = 0; n < EXP_CLIENTS; n++) {
        int fd = accept4(x->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        struct exp_client *c = slot_for_new(x);
        if (!c) { /* every slot is waiting for or writing an answer */
            x->drops[DROP_FULL]++;
            close(fd);
            continue;
        }
        uint64_t now = sup_now_ns();
        *c = (struct exp_client){.st = EXP_READ, .fd = fd, .accepted_ns = now, .deadline_ns = now + EXP_READ_NS};
    }
}

/* The exposition of the snapshot just fetched, with the exporter's own figures. */
static void snapshot_done(struct exporter *x)
{
    static const struct mx_desc scrapes = {"ringrouter_exporter_scrapes_total", "counter",
                                           "GET /metrics requests the exporter took"};
    static const struct mx_desc dropped = {
        "ringrouter_exporter_dropped_connections_total", "counter",
        "Connections the exporter closed without an answer or with an error, by reason"};
    bool ok = mx_fetch_ok(&x->fetch);
    if (ok != x->sup_up)
        sup_log("exporter: %s", ok ? "the supervisor answers" : x->fetch.err);
    x->sup_up = ok;
    struct mx_snap sn = {{0}};
    if (ok)
        mx_snap_parse(&sn, &x->fetch);
    mx_fetch_free(&x->fetch);
    struct mx_out *o = mx_out_new();
    if (!o)
        return;
    mx_render(o, &sn); /* no status: ringrouter_supervisor_up 0 alone */
    mx_snap_free(&sn);
    char lb[128], v[32];
    snprintf(v, sizeof(v), "%llu", (unsigned long long)x->scrapes);
    mx_put(o, &scrapes, "", v);
    for (int i = 0; i < DROP_N; i++) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)x->drops[i]);
        mx_put(o, &dropped, mx_labels(lb, sizeof(lb), "reason", drop_names[i], NULL), v);
    }
    struct exp_body *b = calloc(1, sizeof(*b));
    FILE *f = b ? open_memstream(&b->text, &b->len) : NULL;
    if (!f) {
        free(b);
        mx_out_free(o);
        return;
    }
    mx_out_write(o, f);
    fclose(f);
    b->refs = 1;
    body_put(x->snap);
    x->snap = b;
    x->snap_ns = sup_now_ns();
}

/* Every client waiting for a snapshot gets the last one. */
static void answer_waiting(struct exporter *x)
{
    for (int i = 0; i < EXP_CLIENTS; i++) {
        struct exp_client *c = &x->c[i];
        if (c->st != EXP_WAIT)
            continue;
        if (x->snap)
            client_answer(c, 200, x->snap, "text/plain; version=0.0.4; charset=utf-8");
        else
            client_error(c, 503, "out of memory\n");
        client_write(x, c);
    }
}

/* Move the snapshot under way on; answer the waiting clients from a fresh
 * one, or begin one for them. */
static void exporter_serve(struct exporter *x, uint64_t now)
{
    if (x->fetching && mx_fetch_step(&x->fetch, now)) {
        x->fetching = false;
        snapshot_done(x);
        answer_waiting(x);
    }
    bool waiting = false;
    for (int i = 0; i < EXP_CLIENTS; i++)
        waiting |= x->c[i].st == EXP_WAIT;
    if (!waiting || x->fetching)
        return;
    if (x->snap && now - x->snap_ns < EXP_FRESH_NS) {
        answer_waiting(x);
        return;
    }
    mx_fetch_start(&x->fetch, x->sock);
    x->fetching = true;
    if (mx_fetch_step(&x->fetch, now)) { /* no supervisor: done at once */
        x->fetching = false;
        snapshot_done(x);
        answer_waiting(x);
    }
}

/* "ADDR:PORT", "[ADDR6]:PORT" or ":PORT" (every address). */
static int listen_on(const char *spec, char *err, size_t len)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || !colon[1]) {
        snprintf(err, len, "--listen %s: expected ADDR:PORT (127.0.0.1:9423, [::1]:9423, :9423)", spec);
        return -1;
    }
    snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai = NULL;
    int r = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
    if (r) {
        snprintf(err, len, "--listen %s: %s", spec, gai_strerror(r));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
        snprintf(err, len, "--listen %s: %s", spec, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static bool caps_none(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2];
    return syscall(SYS_capget, &h, d) == 0 && !d[0].effective && !d[0].permitted && !d[0].inheritable &&
           !d[1].effective && !d[1].permitted && !d[1].inheritable;
}

/* No capability left in any set, and none to gain by exec: what the
 * exporter runs with. (Under its systemd unit both hold already, and the
 * calls that would make them are filtered: they are made only if needed.) */
static int caps_clear(char *err, size_t len)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof(d));
    if ((!caps_none() && syscall(SYS_capset, &h, d) < 0) ||
        (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)) {
        snprintf(err, len, "dropping capabilities: %s", strerror(errno));
        return -1;
    }
    if (!caps_none()) {
        snprintf(err, len, "capabilities remain after dropping them");
        return -1;
    }
    return 0;
}

/* Root switches to USER[:GROUP] (GROUP added to USER's groups); anyone
 * else stays who they are, with no capability. */
static int drop_privileges(const char *spec, char *err, size_t len)
{
    if (geteuid() != 0 && getuid() != 0) {
        if (spec) {
            snprintf(err, len, "--user %s: only root can switch users; run the exporter as that user instead", spec);
            return -1;
        }
        return caps_clear(err, len);
    }
    char user[128];
    const char *colon = strchr(spec, ':');
    snprintf(user, sizeof(user), "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
    struct passwd *pw = getpwnam(user);
    if (!pw || pw->pw_uid == 0) {
        snprintf(err, len, "--user %s: %s", spec, pw ? "root is what it must not run as" : "no such user");
        return -1;
    }
    uid_t uid = pw->pw_uid;
    gid_t gid = pw->pw_gid;
    gid_t extra = (gid_t)-1;
    struct group *gr = getgrnam(colon ? colon + 1 : "ringrouter");
    if (gr)
        extra = gr->gr_gid;
    else if (colon) {
        snprintf(err, len, "--user %s: no group \"%s\"", spec, colon + 1);
        return -1;
    }
    gid_t groups[256];
    int ng = 255;
    if (getgrouplist(user, gid, groups, &ng) < 0)
        ng = 0;
    if (extra != (gid_t)-1)
        groups[ng++] = extra;
    for (int cap = 0; cap <= 63; cap++) /* the bounding set too: nothing can come back */
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) {
            snprintf(err, len, "dropping capability %d from the bounding set: %s", cap, strerror(errno));
            return -1;
        }
    if (setgroups((size_t)ng, groups) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
        snprintf(err, len, "--user %s: %s", spec, strerror(errno));
        return -1;
    }
    if (setuid(0) == 0) {
        snprintf(err, len, "--user %s: root could be regained", spec);
        return -1;
    }
    return caps_clear(err, len);
}

static int exporter_run(struct exporter *x, const sigset_t *unblocked)
{
    struct pollfd pfd[EXP_CLIENTS + 2];
    int who[EXP_CLIENTS + 2];
    for (;;) {
        uint64_t now = sup_now_ns(), next = now + 1000000000ull;
        int n = 0;
        pfd[n] = (struct pollfd){.fd = x->lfd, .events = POLLIN};
        who[n++] = -1;
        for (int i = 0; i < EXP_CLIENTS; i++) {
            struct exp_client *c = &x->c[i];
            if (c->st == EXP_FREE)
                continue;
            if (c->st != EXP_WAIT && now >= c->deadline_ns) {
                client_drop(x, c, DROP_TIMEOUT);
                continue;
            }
            if (c->st == EXP_WAIT)
                continue;
            if (c->deadline_ns < next)
                next = c->deadline_ns;
            pfd[n] = (struct pollfd){.fd = c->fd, .events = c->st == EXP_READ ? POLLIN : POLLOUT};
            who[n++] = i;
        }
        short ev = 0;
        int ffd = x->fetching ? mx_fetch_poll(&x->fetch, &ev) : -1;
        if (ffd >= 0) {
            pfd[n] = (struct pollfd){.fd = ffd, .events = ev};
            who[n++] = -2;
            if (x->fetch.deadline_ns < next)
                next = x->fetch.deadline_ns;
        }
        if (next < now)
            next = now;
        struct timespec ts = {.tv_sec = (time_t)((next - now) / 1000000000ull),
                              .tv_nsec = (long)((next - now) % 1000000000ull)};
        int r = ppoll(pfd, (nfds_t)n, &ts, unblocked);
        if (r < 0 && errno == EINTR)
            return 0; /* SIGTERM or SIGINT */
        if (r < 0) {
            sup_err("exporter: poll: %s", strerror(errno));
            return 111;
        }
        for (int k = 0; k < n && r > 0; k++) {
            if (!pfd[k].revents)
                continue;
            if (who[k] == -1)
                accept_all(x);
            else if (who[k] >= 0 && x->c[who[k]].st == EXP_READ)
                client_read(x, &x->c[who[k]]);
            else if (who[k] >= 0 && x->c[who[k]].st == EXP_WRITE)
                client_write(x, &x->c[who[k]]);
        }
        exporter_serve(x, sup_now_ns());
        for (int i = 0; i < EXP_CLIENTS; i++) /* answers that client_request set: out as far as they go */
            if (x->c[i].st == EXP_WRITE && x->c[i].off == 0)
                client_write(x, &x->c[i]);
    }
}

static void on_signal(int sig)
{
    (void)sig; /* ppoll returns EINTR: the loop ends */
}

int sup_cmd_exporter(const char *sock, const char *listen_spec, const char *user)
{
    char err[300];
    if (!listen_spec) {
        fprintf(stderr, "ringrouter exporter: --listen ADDR:PORT is needed (e.g. 127.0.0.1:9423)\n");
        return 100;
    }
    struct exporter *x = calloc(1, sizeof(*x));
    if (!x) {
        fprintf(stderr, "ringrouter exporter: out of memory\n");
        return 111;
    }
    x->sock = sock;
    x->sup_up = true; /* the log says so only once it does not */
    x->fetch.fd = -1;
    for (int i = 0; i < EXP_CLIENTS; i++)
        x->c[i] = (struct exp_client){.st = EXP_FREE, .fd = -1};
    int rc = 100;
    x->lfd = -1;
    if ((geteuid() == 0 || getuid() == 0) && !user) /* refused before anything is bound */
        snprintf(err, sizeof(err),
                 "refusing to run as root: it needs no privilege; give --user USER[:GROUP] (a "
                 "member of the control socket's group, by default ringrouter), or run it as that user");
    else if ((x->lfd = listen_on(listen_spec, err, sizeof(err))) >= 0 && drop_privileges(user, err, sizeof(err)) == 0)
        rc = 0;
    if (rc) {
        fprintf(stderr, "ringrouter exporter: %s\n", err);
        goto out;
    }
    /* SIGTERM and SIGINT end the loop: blocked but in ppoll. */
    sigset_t block, unblocked;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &unblocked);
    struct sigaction sa = {.sa_handler = SIG_IGN};
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sup_log("exporter: serving %s's metrics on http://%s/metrics as uid %u", sock, listen_spec, (unsigned)getuid());
    rc = exporter_run(x, &unblocked);
    sup_log("exporter: stopping");
out:
    for (int i = 0; i < EXP_CLIENTS; i++)
        if (x->c[i].st != EXP_FREE)
            client_close(&x->c[i]);
    if (x->lfd >= 0)
        close(x->lfd);
    mx_fetch_free(&x->fetch);
    body_put(x->snap);
    free(x);
    return rc;
}
