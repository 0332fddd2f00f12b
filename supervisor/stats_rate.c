/* SPDX-License-Identifier: MIT */
/*
 * supervisor/stats_rate.c: `ringrouter stats --rate SECONDS [--json]`, every
 * counter of `stats` as a rate: two `stats --json` answers SECONDS apart
 * (metrics_fetch.c asks, metrics_json.c reads), and for each number both
 * hold, its difference over the time between their timestamps. A counter
 * is named by its path in the answer, an array's element by its "name":
 * `services/router/counters/forwarded`, `rings/rx-a/full_drops`,
 * `pool/alloc_fail`. Gauges (a ring's occupancy, the pool's free buffers)
 * come out as their change a second, which is what a rate of a gauge is;
 * a counter that went back (a restarted service's) is left out rather than
 * shown as a negative rate. The supervisor parses nothing new: it answers
 * `stats --json` twice.
 */
#include "supervisor/metrics.h"
#include "supervisor/sup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SR_PATH 192

struct sr_num {
    char path[SR_PATH];
    double v;
};

struct sr_set {
    struct sr_num *n;
    size_t len, cap;
};

static void sr_add(struct sr_set *s, const char *path, double v)
{
    if (s->len == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 256;
        struct sr_num *n = realloc(s->n, c * sizeof(*n));
        if (!n)
            return; /* what does not fit is left out: this is a view */
        s->n = n;
        s->cap = c;
    }
    snprintf(s->n[s->len].path, SR_PATH, "%s", path);
    s->n[s->len++].v = v;
}

/* Every number under @v, by path; an array's element is named by its "name". */
static void sr_walk(struct sr_set *s, const struct mx_jv *v, const char *path)
{
    char p[SR_PATH];
    if (v->t == MX_JNUM) {
        sr_add(s, path, v->num);
        return;
    }
    if (v->t != MX_JOBJ && v->t != MX_JARR)
        return;
    for (size_t i = 0; i < v->n; i++) {
        const struct mx_jv *k = &v->kid[i];
        if (v->t == MX_JOBJ && strcmp(k->key, "timestamp") == 0)
            continue;
        const char *name = v->t == MX_JOBJ ? k->key : mx_jstr(k, "name");
        char idx[24];
        if (!name) {
            snprintf(idx, sizeof(idx), "%zu", i);
            name = idx;
        }
        if (snprintf(p, sizeof(p), "%s%s%s", path, path[0] ? "/" : "", name) >= (int)sizeof(p))
            continue;
        sr_walk(s, k, p);
    }
}

static int sr_cmp(const void *a, const void *b)
{
    return strcmp(((const struct sr_num *)a)->path, ((const struct sr_num *)b)->path);
}

/* One `stats --json` answer, flattened and sorted by path, and its timestamp. */
static bool sr_take(const char *sock, struct sr_set *s, double *ts, char *err, size_t len)
{
    struct mx_fetch f = {.fd = -1};
    mx_fetch_all(&f, sock);
    bool ok = mx_fetch_ok(&f);
    struct mx_snap sn;
    memset(&sn, 0, sizeof(sn));
    if (!ok)
        snprintf(err, len, "%s", f.err[0] ? f.err : "no answer from the supervisor");
    else
        mx_snap_parse(&sn, &f);
    mx_fetch_free(&f);
    if (ok && !sn.doc[MX_STATS]) {
        snprintf(err, len, "the supervisor's stats answer does not parse");
        ok = false;
    }
    if (ok) {
        *ts = mx_jnum(sn.doc[MX_STATS], "timestamp", 0);
        sr_walk(s, sn.doc[MX_STATS], "");
        qsort(s->n, s->len, sizeof(*s->n), sr_cmp);
    }
    mx_snap_free(&sn);
    return ok;
}

static void sr_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    fputc('"', f);
}

int sup_cmd_stats_rate(const char *sock, const char *secs_arg, bool json, bool all)
{
    char *end;
    errno = 0;
    double secs = strtod(secs_arg, &end);
    if (errno || end == secs_arg || *end || !(secs >= 0.1 && secs <= 3600)) {
        fprintf(stderr, "ringrouter stats: --rate %s: the seconds between the two samples, 0.1 to 3600\n", secs_arg);
        return SUP_EXIT_USAGE;
    }
    struct sr_set a = {0}, b = {0};
    double ta = 0, tb = 0;
    char err[256];
    int rc = 0;
    if (!sr_take(sock, &a, &ta, err, sizeof(err))) {
        fprintf(stderr, "ringrouter stats: %s\n", err);
        rc = 111;
        goto out;
    }
    struct timespec ts = {.tv_sec = (time_t)secs, .tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    if (!sr_take(sock, &b, &tb, err, sizeof(err))) {
        fprintf(stderr, "ringrouter stats: %s\n", err);
        rc = 111;
        goto out;
    }
    double dt = tb - ta;
    if (!(dt > 0)) {
        fprintf(stderr, "ringrouter stats: the two samples' timestamps are %.6f and %.6f: no interval\n", ta, tb);
        rc = 111;
        goto out;
    }
    if (json)
        printf("{\"timestamp\": %.6f, \"interval_seconds\": %.6f, \"rates\": {", tb, dt);
    else
        printf("per second over %.3f s (counters that did not move left out; --all shows them)\n", dt);
    size_t i = 0, shown = 0;
    for (size_t k = 0; k < b.len; k++) {
        while (i < a.len && strcmp(a.n[i].path, b.n[k].path) < 0)
            i++;
        if (i == a.len || strcmp(a.n[i].path, b.n[k].path) != 0)
            continue; /* new since the first sample: no rate yet */
        double d = b.n[k].v - a.n[i].v;
        if (d < 0)
            continue; /* went back: a restarted service's counter */
        if (!json && !all && d == 0)
            continue;
        double r = d / dt;
        if (json) {
            printf("%s", shown ? ", " : "");
            sr_json_str(stdout, b.n[k].path);
            printf(": %.3f", r);
        } else {
            printf("%-56s %14.1f\n", b.n[k].path, r);
        }
        shown++;
    }
    if (json)
        printf("}}\n");
out:
    free(a.n);
    free(b.n);
    return rc;
}
