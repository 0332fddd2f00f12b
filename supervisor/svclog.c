/* SPDX-License-Identifier: MIT */
/*
 * supervisor/svclog.c: what the services write to stderr (svclog.h). A
 * service is not trusted with the supervisor's log: were its stderr ours, a
 * write(2, "ringrouter: census: all 8192 buffers free ...") would be a line
 * no reader could tell from our own. So each instance, running or standby,
 * writes to a pipe of its own, and the supervisor writes each of its lines
 * as
 *
 *     driver-a[1234]: TEXT
 *
 * the instance's name and pid first (a supervisor line starts "ringrouter: "
 * and a service's never does: the name is the manifest's, with no ':' or
 * blank), then TEXT with every byte outside printable ASCII written as \xNN
 * and '\' as "\\": no escape sequence reaches a terminal, and no byte can
 * start a line of its own. A line is one write(2), as the supervisor's are,
 * so the two never interleave.
 *
 * Bounds, since the other end is a process we do not trust:
 *  - a line is cut at SVCLOG_LINE bytes, marked " [cut]", and the rest up to
 *    its newline dropped; a partial line is held up to that bound, and
 *    written out (marked " [no newline]") when the instance ends;
 *  - one read of at most SVCLOG_READ bytes per wake-up of the event loop, so
 *    a chatty service takes its turn with every other event;
 *  - at most SVCLOG_RATE bytes a second per instance: past that the stream
 *    leaves the epoll set until its second is over, its bytes wait in the
 *    pipe, and once the pipe is full the service's own writes fail (EAGAIN:
 *    its write end is non-blocking, so it never stalls on its log).
 *
 * A service outlives its supervisor (adopt.c): its fd 0 is a second read end
 * of the same pipe, so the pipe is never without a reader (no EPIPE), and
 * what it writes while no supervisor runs waits there. The next supervisor
 * takes the instance's fd 2 (pidfd_getfd) and opens it again for reading.
 */
#include "supervisor/svclog.h"
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SVCLOG_LINE 512u
#define SVCLOG_READ 4096u
#define SVCLOG_RATE (64u * 1024u)
#define SVCLOG_STREAMS (2 * SUP_MAX_SERVICES + 16) /* a running instance and a standby each, and some ending */
#define SEC_NS 1000000000ull

struct svclog_stream {
    int fd; /* -1: a free slot */
    pid_t pid;
    bool cut;    /* the line was too long: dropping up to its newline */
    bool paused; /* over its rate: out of the epoll set until win_ns + 1 s */
    uint64_t win_ns;
    uint32_t win_bytes;
    uint32_t have;
    char name[SUP_SERVICE_MAX + 1];
    char line[SVCLOG_LINE];
};

struct sup_svclog {
    struct svclog_stream st[SVCLOG_STREAMS];
};

static struct sup_svclog *streams(struct sup *s)
{
    if (!s->svclog) {
        s->svclog = calloc(1, sizeof(*s->svclog));
        if (!s->svclog)
            return NULL;
        for (unsigned i = 0; i < SVCLOG_STREAMS; i++)
            s->svclog->st[i].fd = -1;
    }
    return s->svclog;
}

int sup_svclog_pipe(int *w, int *in)
{
    int p[2];
    *w = *in = -1;
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    /* A new open file description, not a dup: the service could otherwise
     * clear O_NONBLOCK on ours and hold the event loop in a read. */
    char path[40];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
    *in = open(path, O_RDONLY | O_CLOEXEC);
    *w = p[1];
    return p[0];
}

/* One line out: "NAME[PID]: " and the text, escaped, and @mark. */
static void emit(const struct svclog_stream *t, const char *mark)
{
    char out[SUP_SERVICE_MAX + 32 + 4 * SVCLOG_LINE + 32], prio[4];
    size_t k = (size_t)snprintf(out, sizeof(out), "%s%s[%d]: ", sup_log_prio(6, prio), t->name, (int)t->pid);
    static const char hex[] = "0123456789abcdef";
    for (uint32_t i = 0; i < t->have; i++) {
        unsigned char c = (unsigned char)t->line[i];
        if (c == '\\') {
            out[k++] = '\\';
            out[k++] = '\\';
        } else if (c >= 0x20 && c < 0x7f) {
            out[k++] = (char)c;
        } else {
            out[k++] = '\\';
            out[k++] = 'x';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    k += (size_t)snprintf(out + k, sizeof(out) - k, "%s\n", mark);
    ssize_t r = write(STDERR_FILENO, out, k);
    (void)r;
}

/* Bytes read from @t: whole lines out, the rest held. */
static void take(struct svclog_stream *t, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = buf[i];
        if (c == '\n') {
            if (!t->cut)
                emit(t, "");
            t->have = 0;
            t->cut = false;
            continue;
        }
        if (t->cut)
            continue;
        if (t->have == SVCLOG_LINE) {
            emit(t, " [cut]");
            t->have = 0;
            t->cut = true;
            continue;
        }
        t->line[t->have++] = c;
    }
}

static void stream_close(struct sup *s, struct svclog_stream *t)
{
    if (t->have && !t->cut)
        emit(t, " [no newline]");
    epoll_ctl(s->ep_fd, EPOLL_CTL_DEL, t->fd, NULL); /* ENOENT if paused: not in the set */
    close(t->fd);
    *t = (struct svclog_stream){.fd = -1};
}

void sup_svclog_open(struct sup *s, const char *name, pid_t pid, int fd)
{
    struct sup_svclog *l = streams(s);
    struct svclog_stream *t = NULL;
    for (unsigned i = 0; l && i < SVCLOG_STREAMS && !t; i++)
        if (l->st[i].fd < 0)
            t = &l->st[i];
    if (!t) {
        sup_warn("%s: pid %d: no room to read its stderr; its lines are lost", name, (int)pid);
        close(fd);
        return;
    }
    *t = (struct svclog_stream){.fd = fd, .pid = pid, .win_ns = sup_now_ns()};
    snprintf(t->name, sizeof(t->name), "%s", name);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SUP_POLL_KEY(SUP_POLL_LOG, t - l->st)};
    if (epoll_ctl(s->ep_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        sup_warn("%s: pid %d: cannot watch its stderr: %s; its lines are lost", name, (int)pid, strerror(errno));
        close(fd);
        t->fd = -1;
    }
}

void sup_svclog_adopt(struct sup *s, const char *name, pid_t pid, int pidfd)
{
    int w = (int)syscall(SYS_pidfd_getfd, pidfd, STDERR_FILENO, 0);
    if (w < 0) {
        sup_warn("%s: pid %d: cannot take its stderr (pidfd_getfd: %s); its lines are lost until it restarts", name,
                 (int)pid, strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(w, &st) < 0 || !S_ISFIFO(st.st_mode)) {
        /* Started by a supervisor that gave it ours: its lines go on
         * going wherever that one's stderr went. */
        sup_warn("%s: pid %d: its stderr is not a pipe (a supervisor before this one's log provenance started it); "
                 "its lines are not in this log until it restarts", name, (int)pid);
        close(w);
        return;
    }
    char path[40];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", w);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    int e = errno;
    close(w);
    if (fd < 0) {
        sup_warn("%s: pid %d: cannot open its stderr pipe for reading: %s; its lines are lost until it restarts",
                 name, (int)pid, strerror(e));
        return;
    }
    sup_svclog_open(s, name, pid, fd);
}

/* One read of @t; false once the stream is closed (every writer gone, or an error). */
static bool stream_read(struct sup *s, struct svclog_stream *t)
{
    char buf[SVCLOG_READ];
    ssize_t n = read(t->fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (n <= 0) {
        stream_close(s, t);
        return false;
    }
    take(t, buf, (size_t)n);
    t->win_bytes += (uint32_t)n;
    return true;
}

void sup_svclog_io(struct sup *s, unsigned idx)
{
    if (!s->svclog || idx >= SVCLOG_STREAMS || s->svclog->st[idx].fd < 0)
        return;
    struct svclog_stream *t = &s->svclog->st[idx];
    uint64_t now = sup_now_ns();
    if (now - t->win_ns >= SEC_NS) {
        t->win_ns = now;
        t->win_bytes = 0;
    }
    if (!stream_read(s, t) || t->win_bytes < SVCLOG_RATE)
        return;
    struct epoll_event ev = {.events = 0, .data.u64 = SUP_POLL_KEY(SUP_POLL_LOG, idx)};
    epoll_ctl(s->ep_fd, EPOLL_CTL_MOD, t->fd, &ev);
    t->paused = true;
    sup_warn("%s: pid %d wrote more than %u bytes to stderr within 1 s; reading it again in the next second",
             t->name, (int)t->pid, SVCLOG_RATE);
}

void sup_svclog_tick(struct sup *s, uint64_t now)
{
    for (unsigned i = 0; s->svclog && i < SVCLOG_STREAMS; i++) {
        struct svclog_stream *t = &s->svclog->st[i];
        if (t->fd < 0 || !t->paused || now - t->win_ns < SEC_NS)
            continue;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SUP_POLL_KEY(SUP_POLL_LOG, i)};
        epoll_ctl(s->ep_fd, EPOLL_CTL_MOD, t->fd, &ev);
        t->paused = false;
        t->win_ns = now;
        t->win_bytes = 0;
    }
}

/* Read @t until the pipe is empty, bounded: 64 reads hold four times what
 * a pipe does, and a writer still alive may have refilled it meanwhile. */
static void stream_drain(struct sup *s, struct svclog_stream *t)
{
    char buf[SVCLOG_READ];
    for (int i = 0; i < 64; i++) {
        ssize_t n = read(t->fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0) {
            stream_close(s, t);
            return;
        }
        take(t, buf, (size_t)n);
    }
    if (t->have && !t->cut) {
        emit(t, " [no newline]");
        t->have = 0;
    }
}

void sup_svclog_drain(struct sup *s, pid_t pid)
{
    for (unsigned i = 0; s->svclog && pid > 0 && i < SVCLOG_STREAMS; i++)
        if (s->svclog->st[i].fd >= 0 && s->svclog->st[i].pid == pid)
            stream_drain(s, &s->svclog->st[i]);
}

void sup_svclog_flush(struct sup *s)
{
    for (unsigned i = 0; s->svclog && i < SVCLOG_STREAMS; i++) {
        struct svclog_stream *t = &s->svclog->st[i];
        if (t->fd >= 0 && t->have && !t->cut)
            emit(t, " [no newline]");
        t->have = 0;
    }
}

void sup_svclog_end(struct sup *s)
{
    for (unsigned i = 0; s->svclog && i < SVCLOG_STREAMS; i++) {
        struct svclog_stream *t = &s->svclog->st[i];
        if (t->fd < 0)
            continue;
        stream_drain(s, t);
        if (t->fd >= 0)
            stream_close(s, t);
    }
    free(s->svclog);
    s->svclog = NULL;
}
