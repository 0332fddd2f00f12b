/* SPDX-License-Identifier: MIT */
/*
 * supervisor/metrics_fetch.c: a snapshot of what the supervisor knows, as
 * its own `--json` answers, for `metrics`, `exporter` and `top`
 * (metrics.h). The requests go out one at a time, each on a connection of
 * its own that the supervisor closes once it has answered, so a client
 * holds at most one of the control socket's slots, and a supervisor that
 * restarts is simply found again at the next snapshot. Every step is
 * non-blocking: the exporter drives it from its one poll loop, beside its
 * HTTP clients. As the CLI does (ctl.c, sup_ctl_client), an answer counts
 * only from a listener that is root's.
 */
#include "supervisor/metrics.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "supervisor/log.h"

static const char *const mx_lines[MX_NREQ] = {
    [MX_STATUS] = "status json\n",
    [MX_STATS] = "stats json\n",
    [MX_LINK] = "link json\n",
    [MX_STAGES] = "stats stages json\n", /* ERR when the manifest left stage counters off */
};

static void conn_end(struct mx_fetch *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    f->len = 0;
    f->woff = 0;
}

/* The snapshot stops here: @why, unless the reason is already said. */
static void give_up(struct mx_fetch *f, const char *why)
{
    const char *req = mx_lines[f->step < MX_NREQ ? f->step : 0];
    if (!f->err[0])
        snprintf(f->err, sizeof(f->err), "%s: \"%.*s\": %s", f->sock, (int)strlen(req) - 1, req, why);
    for (char *c = f->err; *c; c++) /* one line: the supervisor's own words may have several */
        if (*c == '\n')
            *c = ' ';
    conn_end(f);
    f->step = MX_NREQ;
}

static void next_request(struct mx_fetch *f, uint64_t now)
{
    conn_end(f);
    if (++f->step >= MX_NREQ)
        return;
    f->deadline_ns = now + MX_REQ_NS;
}

static bool do_connect(struct mx_fetch *f)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, f->sock, strlen(f->sock) + 1); /* sized at start */
    f->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (f->fd < 0) {
        give_up(f, strerror(errno));
        return false;
    }
    /* A Unix stream socket connects at once, or fails at once (EAGAIN: its
     * queue is full, the supervisor is busy: the next snapshot tries again). */
    if (connect(f->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        give_up(f, e == EACCES || e == EPERM ? "permission denied: the control socket is root's and its group's "
                                               "([router] control_group)"
                                             : strerror(e));
        return false;
    }
    struct ucred cr = {.pid = 0, .uid = (uid_t)-1};
    socklen_t crlen = sizeof(cr);
    if (getsockopt(f->fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 || cr.uid != 0) {
        give_up(f, "the process listening there is not root's: not a ringrouter supervisor");
        return false;
    }
    return true;
}

/* The whole answer is in: keep its text, by its head. */
static void take_answer(struct mx_fetch *f)
{
    static const char *const heads[] = {"OK\n", "FAILED\n"};
    for (size_t h = 0; h < 2; h++) {
        size_t hl = strlen(heads[h]);
        if (f->len >= hl && memcmp(f->buf, heads[h], hl) == 0) {
            char *a = malloc(f->len - hl + 1);
            if (!a)
                break;
            memcpy(a, f->buf + hl, f->len - hl);
            a[f->len - hl] = '\0';
            f->ans[f->step] = a;
            f->anslen[f->step] = f->len - hl;
            return;
        }
    }
    if (f->step == MX_STAGES)
        return; /* stage counters off: no stage metrics, nothing wrong */
    char why[160];
    size_t n = f->len >= 4 && memcmp(f->buf, "ERR\n", 4) == 0 ? f->len - 4 : 0;
    snprintf(why, sizeof(why), "refused: %.*s", (int)(n < 120 ? n : 120), f->buf + 4);
    give_up(f, n ? why : "no answer");
}

bool mx_fetch_step(struct mx_fetch *f, uint64_t now)
{
    while (f->step < MX_NREQ) {
        if (now >= f->deadline_ns) {
            give_up(f, "no whole answer in time");
            break;
        }
        if (f->fd < 0 && !do_connect(f))
            break;
        const char *req = mx_lines[f->step];
        size_t rl = strlen(req);
        if (f->woff < rl) {
            ssize_t w = send(f->fd, req + f->woff, rl - f->woff, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w < 0 && (errno == EAGAIN || errno == EINTR))
                return false;
            if (w <= 0) {
                give_up(f, strerror(errno));
                break;
            }
            f->woff += (size_t)w;
            continue;
        }
        if (f->cap - f->len < 4096) {
            size_t cap = f->cap ? f->cap * 2 : 16384;
            char *b = cap <= MX_ANSWER_MAX + 4096 ? realloc(f->buf, cap) : NULL;
            if (!b) {
                give_up(f, "answer too large");
                break;
            }
            f->buf = b;
            f->cap = cap;
        }
        ssize_t r = recv(f->fd, f->buf + f->len, f->cap - f->len, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return false;
        if (r < 0) {
            give_up(f, strerror(errno));
            break;
        }
        if (r > 0) {
            f->len += (size_t)r;
            continue;
        }
        take_answer(f); /* EOF: the supervisor closes after its answer */
        if (f->step < MX_NREQ)
            next_request(f, now);
    }
    return true;
}

void mx_fetch_start(struct mx_fetch *f, const char *sock)
{
    mx_fetch_free(f);
    *f = (struct mx_fetch){.fd = -1, .deadline_ns = sup_now_ns() + MX_REQ_NS};
    if (strlen(sock) >= sizeof(f->sock)) {
        snprintf(f->err, sizeof(f->err), "socket path %s is too long", sock);
        f->step = MX_NREQ;
        return;
    }
    snprintf(f->sock, sizeof(f->sock), "%s", sock);
}

int mx_fetch_poll(const struct mx_fetch *f, short *events)
{
    if (f->step >= MX_NREQ || f->fd < 0)
        return -1;
    *events = f->woff < strlen(mx_lines[f->step]) ? POLLOUT : POLLIN;
    return f->fd;
}

void mx_fetch_all(struct mx_fetch *f, const char *sock)
{
    mx_fetch_start(f, sock);
    while (!mx_fetch_step(f, sup_now_ns())) {
        short ev = 0;
        int fd = mx_fetch_poll(f, &ev);
        struct pollfd p = {.fd = fd, .events = ev};
        uint64_t now = sup_now_ns();
        int ms = f->deadline_ns > now ? (int)((f->deadline_ns - now) / 1000000 + 1) : 0;
        if (fd >= 0 && poll(&p, 1, ms) < 0 && errno != EINTR)
            give_up(f, strerror(errno));
    }
}

bool mx_fetch_ok(const struct mx_fetch *f)
{
    return f->ans[MX_STATUS] != NULL;
}

void mx_fetch_free(struct mx_fetch *f)
{
    if (f->fd > 0)
        close(f->fd);
    f->fd = -1;
    free(f->buf);
    f->buf = NULL;
    f->len = f->cap = 0;
    for (int i = 0; i < MX_NREQ; i++) {
        free(f->ans[i]);
        f->ans[i] = NULL;
    }
}

void mx_snap_parse(struct mx_snap *sn, const struct mx_fetch *f)
{
    char err[128];
    for (int i = 0; i < MX_NREQ; i++) {
        sn->doc[i] = NULL;
        if (f->ans[i] && mx_json_parse(f->ans[i], f->anslen[i], &sn->doc[i], err, sizeof(err)) < 0)
            sn->doc[i] = NULL; /* an answer that does not parse gives no metrics, not wrong ones */
    }
}

void mx_snap_free(struct mx_snap *sn)
{
    for (int i = 0; i < MX_NREQ; i++) {
        mx_json_free(sn->doc[i]);
        sn->doc[i] = NULL;
    }
}
