/* SPDX-License-Identifier: MIT */
/*
 * supervisor/log.c: the supervisor's clock and log lines (log.h).
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
