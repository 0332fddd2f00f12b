/* SPDX-License-Identifier: MIT */
/*
 * bench/stats.h: what every C benchmark here reports with: a monotonic clock
 * in seconds and the median, minimum and maximum of a handful of runs, and
 * the number an option was given. Header-only; each benchmark is its own
 * binary.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T_STATS_MAX 64u /* runs at most, for t_median's copy */

static inline double t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int t_cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of @v[0..n) (sorts @v). */
static inline double t_median_sort(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), t_cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of @v[0..n), n <= T_STATS_MAX, leaving @v as it is. */
static inline double t_median(const double *v, unsigned n)
{
    double s[T_STATS_MAX];
    if (n > T_STATS_MAX)
        n = T_STATS_MAX;
    memcpy(s, v, n * sizeof(*v));
    return t_median_sort(s, n);
}

static inline double t_min(const double *v, unsigned n)
{
    double m = v[0];
    for (unsigned i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static inline double t_max(const double *v, unsigned n)
{
    double m = v[0];
    for (unsigned i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

/* The value of option @opt, @text as a number (decimal, 0x hex, 0 octal);
 * anything else ends @prog with status 2, naming the option and the text. */
static inline unsigned long long t_arg_num(const char *prog, const char *opt, const char *text)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno || end == text || *end || *text == '-') {
        fprintf(stderr, "%s: %s: \"%s\" is not a number\n", prog, opt, text);
        exit(2);
    }
    return v;
}

#endif
