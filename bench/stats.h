/* SPDX-License-Identifier: MIT */
/*
 * bench/stats.h: what every C benchmark here reports with: a monotonic clock
 * in seconds and the median, minimum and maximum of a handful of runs.
 * Header-only; each benchmark is its own binary.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

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

#endif
