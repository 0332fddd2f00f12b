/* SPDX-License-Identifier: MIT */
/*
 * supervisor/log.c: the supervisor's clock, its log lines, and the one way
 * it prints a name a service wrote (log.h).
 */
#include "supervisor/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t sup_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Is stderr the journal's stream? systemd sets $JOURNAL_STREAM to its
 * "DEVICE:INODE"; a stderr redirected elsewhere (a file, a pipe to a test)
 * has another, and gets plain lines. Asked once: stderr does not move. */
static bool to_journal(void)
{
    static int known = -1;
    if (known < 0) {
        const char *js = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;
        char tail;
        known = js && sscanf(js, "%llu:%llu%c", &dev, &ino, &tail) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
                (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
    }
    return known == 1;
}

const char *sup_log_prio(int prio, char buf[4])
{
    if (!to_journal() || prio < 0 || prio > 7)
        return "";
    buf[0] = '<';
    buf[1] = (char)('0' + prio);
    buf[2] = '>';
    buf[3] = '\0';
    return buf;
}

void sup_vlog(int prio, const char *fmt, va_list ap)
{
    char line[512], mark[4];
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    if (n > 0 && (size_t)n < sizeof(line) && line[n - 1] == '\n')
        line[n - 1] = '\0';
    /* One write per line, so lines from several processes never interleave. */
    dprintf(STDERR_FILENO, "%sringrouter: %s\n", sup_log_prio(prio, mark), line);
}

/* Every --json answer is one object that starts with when it was taken
 * (unix seconds, wall clock), so that two samples give a rate. */
void sup_json_begin(FILE *f)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fprintf(f, "{\"timestamp\":%lld.%06ld,", (long long)ts.tv_sec, ts.tv_nsec / 1000);
}

void sup_log(const char *fmt, ...)
{
    int prio = 6;
    /* The SUP_LOG_* marker pasted before the format, if any. */
    if (fmt[0] == '<' && fmt[1] >= '0' && fmt[1] <= '7' && fmt[2] == '>') {
        prio = fmt[1] - '0';
        fmt += 3;
    }
    va_list ap;
    va_start(ap, fmt);
    sup_vlog(prio, fmt, ap);
    va_end(ap);
}

const char *sup_shm_name(char *buf, size_t len, const char *src, size_t max)
{
    size_t n = 0;
    for (; n + 1 < len && n < max && src[n]; n++) {
        unsigned char c = (unsigned char)src[n];
        buf[n] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    buf[n] = '\0';
    return buf;
}
