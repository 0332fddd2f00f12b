/* SPDX-License-Identifier: MIT */
/*
 * supervisor/notify.c: sd_notify, the few lines of it the supervisor needs
 * (notify.h). One socket, opened in `up` and kept for the process: the
 * supervisor runs one event loop per process, so the state is this file's.
 */
#include "supervisor/notify.h"
#include "supervisor/sup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sup_notify_addr(const char *name, struct sockaddr_un *sa, socklen_t *len)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 2 || (name[0] != '/' && name[0] != '@') || n > sizeof(sa->sun_path))
        return -EINVAL;
    /* A path needs its NUL inside sun_path; an abstract name has none. */
    if (name[0] == '/' && n == sizeof(sa->sun_path))
        return -EINVAL;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, name, n);
    if (name[0] == '@')
        sa->sun_path[0] = '\0';
    /* The abstract name is exactly its bytes: no trailing NUL in the length. */
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '/'));
    return 0;
}

uint64_t sup_notify_watchdog_ns(const char *usec, const char *wpid, long pid)
{
    if (!usec || !*usec)
        return 0;
    if (wpid && *wpid) {
        char *end;
        errno = 0;
        long p = strtol(wpid, &end, 10);
        if (errno || *end || p != pid)
            return 0;
    }
    char *end;
    errno = 0;
    unsigned long long us = strtoull(usec, &end, 10);
    if (errno || *end || us == 0 || usec[0] == '-' || us > UINT64_MAX / 1000)
        return 0;
    return (uint64_t)us * 1000ull;
}

int sup_notify_send_to(int fd, const struct sockaddr_un *sa, socklen_t len, const char *msg)
{
    ssize_t w = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT, (const struct sockaddr *)sa, len);
    return w < 0 ? -errno : 0;
}

static struct {
    int fd;
    struct sockaddr_un sa;
    socklen_t len;
    uint64_t wd_ns, wd_next; /* the watchdog's interval (0: none), and when the next ping is due */
    bool ready, stopping;
    bool reloading;          /* RELOADING=1 sent, READY=1 owed */
    bool warned;             /* a failed send was logged; the rest are not */
    char status[160];        /* the last STATUS= sent */
} nt = {.fd = -1};

bool sup_notify_active(void)
{
    return nt.fd >= 0;
}

static void send_msg(const char *msg)
{
    if (nt.fd < 0)
        return;
    int r = sup_notify_send_to(nt.fd, &nt.sa, nt.len, msg);
    if (r < 0 && !nt.warned) {
        nt.warned = true;
        sup_warn("NOTIFY_SOCKET: cannot send to systemd: %s", strerror(-r));
    }
}

void sup_notify_init(void)
{
    const char *name = getenv("NOTIFY_SOCKET");
    if (!name || !*name)
        return;
    if (sup_notify_addr(name, &nt.sa, &nt.len) < 0) {
        sup_warn("NOTIFY_SOCKET=%s: not an absolute path or an @abstract name; not notifying systemd",
                 name);
        return;
    }
    nt.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (nt.fd < 0) {
        sup_warn("NOTIFY_SOCKET: socket: %s; not notifying systemd", strerror(errno));
        return;
    }
    nt.wd_ns = sup_notify_watchdog_ns(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), (long)getpid());
    /* Twice per interval, as sd_watchdog_enabled(3) advises: one late tick
     * must not look like a hang. */
    nt.wd_next = sup_now_ns() + nt.wd_ns / 2;
}

/* "4 services up", "starting: 2 of 4 services up", "3 of 4 services up; failed: driver-b". */
static void summary(const struct sup *s, char *buf, size_t len)
{
    int up = 0, failed = 0;
    for (int i = 0; i < s->nsvcs; i++) {
        up += s->svcs[i].state == SUP_ST_UP;
        failed += s->svcs[i].state == SUP_ST_FAILED;
    }
    int n;
    if (up == s->nsvcs)
        n = snprintf(buf, len, "%d services up", up);
    else
        n = snprintf(buf, len, "%s%d of %d services up", nt.ready ? "" : "starting: ", up, s->nsvcs);
    for (int i = 0, first = 1; failed && i < s->nsvcs && n > 0 && (size_t)n < len; i++) {
        if (s->svcs[i].state != SUP_ST_FAILED)
            continue;
        n += snprintf(buf + n, len - (size_t)n, "%s%s", first ? "; failed: " : ", ", s->svcs[i].name);
        first = 0;
    }
}

void sup_notify_tick(const struct sup *s, uint64_t now)
{
    if (nt.fd < 0)
        return;
    if (nt.wd_ns && now >= nt.wd_next) {
        send_msg("WATCHDOG=1\n");
        nt.wd_next = now + nt.wd_ns / 2;
    }
    if (nt.stopping)
        return;
    char st[sizeof(nt.status)];
    summary(s, st, sizeof(st));
    bool all_up = true;
    for (int i = 0; i < s->nsvcs; i++)
        all_up &= s->svcs[i].state == SUP_ST_UP;
    bool say_ready = all_up && !nt.ready;
    if (!say_ready && strcmp(st, nt.status) == 0)
        return;
    char msg[sizeof(nt.status) + 32];
    snprintf(msg, sizeof(msg), "%sSTATUS=%s\n", say_ready ? "READY=1\n" : "", st);
    send_msg(msg);
    snprintf(nt.status, sizeof(nt.status), "%s", st);
    nt.ready |= say_ready;
}

void sup_notify_reloading(void)
{
    if (nt.fd < 0 || nt.stopping)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char msg[96];
    snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading\n",
             (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000u);
    send_msg(msg);
    nt.reloading = true;
    nt.status[0] = '\0'; /* the next tick says where things stand */
}

void sup_notify_reloaded(void)
{
    if (nt.fd < 0 || !nt.reloading || nt.stopping)
        return;
    nt.reloading = false;
    send_msg("READY=1\n");
}

void sup_notify_stopping(const char *why)
{
    if (nt.fd < 0 || nt.stopping)
        return;
    nt.stopping = true;
    char msg[sizeof(nt.status) + 32];
    snprintf(msg, sizeof(msg), "STOPPING=1\nSTATUS=stopping: %.100s\n", why);
    send_msg(msg);
}
