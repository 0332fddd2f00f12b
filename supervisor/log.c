/* SPDX-License-Identifier: MIT */
/*
 * supervisor/log.c: the supervisor's clock, its log lines, and the one way
 * it prints a name a service wrote (log.h).
 */
#include "supervisor/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

uint64_t sup_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sup_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One write per line, so lines from several processes never interleave. */
    dprintf(STDERR_FILENO, "ringrouter: %s\n", line);
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
