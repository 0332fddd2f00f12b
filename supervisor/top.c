/* SPDX-License-Identifier: MIT */
/*
 * supervisor/top.c: `ringrouter top [--once] [--json]`, a live view of the
 * router refreshed each second: per port, packets and bits a second each
 * way and drops a second; per service, its state, CPU % (from /proc), loops
 * and wake-ups a second, wake-ups per packet and restarts by cause; the
 * drops a second by service and reason; per ring, its occupancy and full
 * drops a second. Every rate is the difference of two snapshots (the
 * `--json` answers metrics_fetch.c asks for) over the time between their
 * timestamps, never a total since start divided by the uptime.
 *
 * On a terminal each frame redraws the screen with two ANSI sequences
 * (home, clear) and bold headings: no curses, no terminfo, since nothing
 * here moves a cursor or reads a key. --once prints one frame (two
 * snapshots a second apart) without them; --json prints each frame as one
 * JSON object on a line of its own.
 */
#include "supervisor/metrics.h"
#include "supervisor/sup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOP_SVCS 64

struct top_snap {
    struct mx_snap sn;
    uint64_t mono_ns; /* when the CPU times were read */
    int nsvc;
    char svc[TOP_SVCS][64];
    int pid[TOP_SVCS];
    double cpu[TOP_SVCS]; /* -1: unknown */
};

static bool top_take(struct top_snap *t, const char *sock, char *err, size_t len)
{
    struct mx_fetch f = {.fd = -1};
    mx_fetch_all(&f, sock);
    bool ok = mx_fetch_ok(&f);
    if (!ok)
        snprintf(err, len, "%s", f.err[0] ? f.err : "no answer from the supervisor");
    memset(t, 0, sizeof(*t));
    if (ok)
        mx_snap_parse(&t->sn, &f);
    mx_fetch_free(&f);
    if (ok && !t->sn.doc[MX_STATUS]) {
        snprintf(err, len, "the supervisor's status answer does not parse");
        ok = false;
    }
    const struct mx_jv *svcs = mx_jget(t->sn.doc[MX_STATUS], "services");
    t->mono_ns = sup_now_ns();
    for (size_t i = 0; ok && svcs && svcs->t == MX_JARR && i < svcs->n && t->nsvc < TOP_SVCS; i++) {
        const char *name = mx_jstr(&svcs->kid[i], "name");
        if (!name)
            continue;
        snprintf(t->svc[t->nsvc], sizeof(t->svc[0]), "%s", name);
        t->pid[t->nsvc] = (int)mx_jnum(&svcs->kid[i], "pid", 0);
        t->cpu[t->nsvc] = mx_proc_cpu(t->pid[t->nsvc]);
        t->nsvc++;
    }
    return ok;
}

static void top_free(struct top_snap *t)
{
    mx_snap_free(&t->sn);
}

/* (b - a) / dt of member @key of two objects; 0 when it went back (a reset) or is missing. */
static double rate(const struct mx_jv *a, const struct mx_jv *b, const char *key, double dt)
{
    const struct mx_jv *va = mx_jget(a, key), *vb = mx_jget(b, key);
    if (!va || !vb || va->t != MX_JNUM || vb->t != MX_JNUM || vb->num < va->num || dt <= 0)
        return 0;
    return (vb->num - va->num) / dt;
}

static double ts_diff(const struct top_snap *a, const struct top_snap *b, enum mx_req r)
{
    return mx_jnum(b->sn.doc[r], "timestamp", 0) - mx_jnum(a->sn.doc[r], "timestamp", 0);
}

/* 1234567 as "1.23M": four significant figures at most. */
static const char *si(char *buf, size_t len, double v)
{
    static const char *const unit[] = {"", "k", "M", "G", "T"};
    int u = 0;
    while (v >= 999.95 && u < 4) {
        v /= 1000;
        u++;
    }
    snprintf(buf, len, u ? "%.3g%s" : "%.0f%s", v, unit[u]);
    return buf;
}

/* The port the service @name belongs to, from `link`'s lists. */
static const char *port_of(const struct mx_jv *links, const char *name)
{
    for (size_t i = 0; links && links->t == MX_JARR && i < links->n; i++) {
        const struct mx_jv *sv = mx_jget(&links->kid[i], "services");
        if (mx_jfind(sv, "name", name))
            return mx_jstr(&links->kid[i], "name");
    }
    return NULL;
}

/* Packets @svc moved, for wake-ups per packet: its rx_pkts and tx_pkts counters (a port's too). */
static double svc_pkts(const struct mx_jv *svc)
{
    const struct mx_jv *c = mx_jget(svc, "counters");
    double n = 0;
    for (size_t k = 0; c && c->t == MX_JOBJ && k < c->n; k++) {
        const char *tail = strrchr(c->kid[k].key, '.');
        tail = tail ? tail + 1 : c->kid[k].key;
        if (c->kid[k].t == MX_JNUM && (!strcmp(tail, "rx_pkts") || !strcmp(tail, "tx_pkts")))
            n += c->kid[k].num;
    }
    return n;
}

struct frame {
    FILE *f;
    bool json, tty;
};

static void heading(const struct frame *fr, const char *text)
{
    fprintf(fr->f, fr->tty ? "\n\033[1m%s\033[0m\n" : "\n%s\n", text);
}

static void top_ports(const struct frame *fr, const struct top_snap *a, const struct top_snap *b)
{
    FILE *f = fr->f;
    double dt = ts_diff(a, b, MX_LINK);
    const struct mx_jv *la = mx_jget(a->sn.doc[MX_LINK], "links"), *lb = mx_jget(b->sn.doc[MX_LINK], "links");
    char h[160], s[6][16];
    snprintf(h, sizeof(h), "%-12s %-9s %9s %10s %9s %10s %10s %10s", "PORT", "STATE", "RX pps", "RX bit/s", "TX pps",
             "TX bit/s", "RX drop/s", "TX drop/s");
    if (fr->json)
        fprintf(f, ",\"ports\":[");
    else
        heading(fr, h);
    for (size_t i = 0, n = 0; lb && lb->t == MX_JARR && i < lb->n; i++) {
        const struct mx_jv *pb = &lb->kid[i];
        const char *name = mx_jstr(pb, "name");
        const struct mx_jv *pa = name ? mx_jfind(la, "name", name) : NULL;
        if (!pa)
            continue;
        const struct mx_jv *ra = mx_jget(pa, "rx"), *rb = mx_jget(pb, "rx"), *ta = mx_jget(pa, "tx"),
                           *tb = mx_jget(pb, "tx");
        double v[6] = {rate(ra, rb, "packets", dt),   8 * rate(ra, rb, "bytes", dt), rate(ta, tb, "packets", dt),
                       8 * rate(ta, tb, "bytes", dt), rate(ra, rb, "drops", dt),     rate(ta, tb, "drops", dt)};
        const char *state = mx_jstr(pb, "state");
        if (fr->json) {
            fprintf(f, "%s{\"name\":", n++ ? "," : "");
            sup_json_str(f, name);
            fprintf(f, ",\"state\":");
            sup_json_str(f, state ? state : "");
            fprintf(f,
                    ",\"rx_packets_per_second\":%.1f,\"rx_bits_per_second\":%.0f,\"tx_packets_per_second\":%.1f,"
                    "\"tx_bits_per_second\":%.0f,\"rx_drops_per_second\":%.1f,\"tx_drops_per_second\":%.1f}",
                    v[0], v[1], v[2], v[3], v[4], v[5]);
        } else {
            fprintf(f, "%-12s %-9s", name, state ? state : "?");
            for (int k = 0; k < 6; k++)
                fprintf(f, " %*s", k == 0 || k == 2 ? 9 : 10, si(s[k], sizeof(s[k]), v[k]));
            fputc('\n', f);
        }
    }
    if (fr->json)
        fprintf(f, "]");
}

static void top_services(const struct frame *fr, const struct top_snap *a, const struct top_snap *b)
{
    FILE *f = fr->f;
    double dt = ts_diff(a, b, MX_STATS);
    const struct mx_jv *sa = mx_jget(a->sn.doc[MX_STATS], "services"), *sb = mx_jget(b->sn.doc[MX_STATS], "services");
    const struct mx_jv *st = mx_jget(b->sn.doc[MX_STATUS], "services");
    char h[200];
    snprintf(h, sizeof(h), "%-16s %-9s %8s %6s %9s %9s %9s %8s  %s", "SERVICE", "STATE", "PID", "CPU%", "LOOPS/s",
             "WAKES/s", "WAKES/PKT", "RESTARTS", "crash hang upgrade restart");
    if (fr->json)
        fprintf(f, ",\"services\":[");
    else
        heading(fr, h);
    for (int i = 0; i < b->nsvc; i++) {
        const char *name = b->svc[i];
        const struct mx_jv *vs = mx_jfind(st, "name", name), *va = mx_jfind(sa, "name", name),
                           *vb = mx_jfind(sb, "name", name);
        double cpu = -1;
        for (int k = 0; k < a->nsvc; k++)
            if (!strcmp(a->svc[k], name) && a->pid[k] == b->pid[i] && a->cpu[k] >= 0 && b->cpu[i] >= a->cpu[k] &&
                b->mono_ns > a->mono_ns)
                cpu = 100 * (b->cpu[i] - a->cpu[k]) / ((double)(b->mono_ns - a->mono_ns) / 1e9);
        double loops = rate(va, vb, "loops", dt), wakes = rate(va, vb, "wakes_sent", dt);
        double pkts = va && vb && dt > 0 && svc_pkts(vb) >= svc_pkts(va) ? (svc_pkts(vb) - svc_pkts(va)) / dt : 0;
        const struct mx_jv *by = mx_jget(vs, "restarts_by_cause");
        double rc[4];
        static const char *const causes[4] = {"crash", "hang", "upgrade", "restart"};
        for (int k = 0; k < 4; k++)
            rc[k] = mx_jnum(by, causes[k], 0);
        const char *state = mx_jstr(vs, "state");
        if (fr->json) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            sup_json_str(f, name);
            fprintf(f, ",\"state\":");
            sup_json_str(f, state ? state : "");
            fprintf(f, ",\"pid\":%d,\"cpu_pct\":", b->pid[i]);
            if (cpu >= 0)
                fprintf(f, "%.1f", cpu);
            else
                fputs("null", f);
            fprintf(f, ",\"loops_per_second\":%.1f,\"wakeups_per_second\":%.1f,\"wakeups_per_packet\":", loops, wakes);
            if (pkts > 0)
                fprintf(f, "%.3f", wakes / pkts);
            else
                fputs("null", f);
            fprintf(f, ",\"restarts\":%.0f,\"planned_restarts\":%.0f,\"restarts_by_cause\":{",
                    mx_jnum(vs, "restarts", 0), mx_jnum(vs, "planned_restarts", 0));
            for (int k = 0; k < 4; k++)
                fprintf(f, "%s\"%s\":%.0f", k ? "," : "", causes[k], rc[k]);
            fprintf(f, "}}");
        } else {
            char c[16] = "-", l[16], w[16], wp[16] = "-";
            if (cpu >= 0)
                snprintf(c, sizeof(c), "%.1f", cpu);
            if (pkts > 0)
                snprintf(wp, sizeof(wp), "%.3f", wakes / pkts);
            fprintf(f, "%-16s %-9s %8d %6s %9s %9s %9s %8.0f  %.0f %.0f %.0f %.0f\n", name, state ? state : "?",
                    b->pid[i], c, si(l, sizeof(l), loops), si(w, sizeof(w), wakes), wp,
                    mx_jnum(vs, "restarts", 0) + mx_jnum(vs, "planned_restarts", 0), rc[0], rc[1], rc[2], rc[3]);
        }
    }
    if (fr->json)
        fprintf(f, "]");
}

/* Drops a second by service and reason (metrics.c's rule), the ones that moved. */
static void top_drops(const struct frame *fr, const struct top_snap *a, const struct top_snap *b)
{
    FILE *f = fr->f;
    double dt = ts_diff(a, b, MX_STATS);
    const struct mx_jv *sa = mx_jget(a->sn.doc[MX_STATS], "services"), *sb = mx_jget(b->sn.doc[MX_STATS], "services");
    const struct mx_jv *links = mx_jget(b->sn.doc[MX_LINK], "links");
    char h[120];
    snprintf(h, sizeof(h), "%-16s %-12s %-32s %10s %12s", "DROPS", "PORT", "REASON", "per s", "total");
    if (fr->json)
        fprintf(f, ",\"drops\":[");
    int n = 0;
    for (size_t i = 0; sb && sb->t == MX_JARR && i < sb->n; i++) {
        const char *name = mx_jstr(&sb->kid[i], "name");
        const struct mx_jv *cb = mx_jget(&sb->kid[i], "counters");
        const struct mx_jv *ca = name ? mx_jget(mx_jfind(sa, "name", name), "counters") : NULL;
        for (size_t k = 0; cb && cb->t == MX_JOBJ && k < cb->n; k++) {
            char reason[128];
            const struct mx_jv *c = &cb->kid[k];
            if (c->t != MX_JNUM || !mx_drop_reason(c->key, reason, sizeof(reason)) || c->num <= 0)
                continue;
            double r = rate(ca, cb, c->key, dt);
            if (r <= 0 && !fr->json)
                continue;
            const char *port = port_of(links, name);
            if (!fr->json && n == 0)
                heading(fr, h);
            if (fr->json) {
                fprintf(f, "%s{\"service\":", n ? "," : "");
                sup_json_str(f, name);
                fprintf(f, ",\"port\":");
                if (port)
                    sup_json_str(f, port);
                else
                    fprintf(f, "null");
                fprintf(f, ",\"counter\":");
                sup_json_str(f, c->key);
                fprintf(f, ",\"reason\":");
                sup_json_str(f, reason);
                fprintf(f, ",\"per_second\":%.1f,\"total\":%s}", r, c->s);
            } else {
                fprintf(f, "%-16s %-12s %-32s %10.1f %12s\n", name, port ? port : "-", c->key, r, c->s);
            }
            n++;
        }
    }
    if (fr->json)
        fprintf(f, "]");
    else if (!n)
        fprintf(f, "\nno drops in the last %.1f s\n", dt);
}

static void top_rings(const struct frame *fr, const struct top_snap *a, const struct top_snap *b)
{
    FILE *f = fr->f;
    double dt = ts_diff(a, b, MX_STATS);
    const struct mx_jv *ra = mx_jget(a->sn.doc[MX_STATS], "rings"), *rb = mx_jget(b->sn.doc[MX_STATS], "rings");
    char h[120];
    snprintf(h, sizeof(h), "%-12s %-24s %11s %10s %10s", "RING", "FROM -> TO", "OCCUPANCY", "handles/s", "full/s");
    if (fr->json)
        fprintf(f, ",\"rings\":[");
    else
        heading(fr, h);
    for (size_t i = 0; rb && rb->t == MX_JARR && i < rb->n; i++) {
        const struct mx_jv *r = &rb->kid[i];
        const char *name = mx_jstr(r, "name"), *from = mx_jstr(r, "from"), *to = mx_jstr(r, "to");
        const struct mx_jv *old = name ? mx_jfind(ra, "name", name) : NULL;
        double occ = mx_jnum(r, "occupancy", 0), size = mx_jnum(r, "size", 0);
        double enq = rate(old, r, "enq_handles", dt), full = rate(old, r, "full_drops", dt);
        if (fr->json) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            sup_json_str(f, name ? name : "");
            fprintf(f,
                    ",\"occupancy\":%.0f,\"size\":%.0f,\"handles_per_second\":%.1f,\"full_drops_per_second\":%.1f,"
                    "\"full_drops\":%.0f}",
                    occ, size, enq, full, mx_jnum(r, "full_drops", 0));
        } else {
            char edge[48], o[24], e[16], fu[16];
            snprintf(edge, sizeof(edge), "%s -> %s", from ? from : "?", to ? to : "?");
            snprintf(o, sizeof(o), "%.0f/%.0f", occ, size);
            fprintf(f, "%-12s %-24s %11s %10s %10s\n", name ? name : "?", edge, o, si(e, sizeof(e), enq),
                    si(fu, sizeof(fu), full));
        }
    }
    if (fr->json)
        fprintf(f, "]");
}

static void top_frame(const struct frame *fr, const struct top_snap *a, const struct top_snap *b)
{
    FILE *f = fr->f;
    const struct mx_jv *sup = mx_jget(b->sn.doc[MX_STATUS], "supervisor");
    double dt = ts_diff(a, b, MX_STATS);
    if (fr->json) {
        fprintf(f, "{\"timestamp\":%.6f,\"interval_seconds\":%.3f,\"supervisor\":{\"version\":",
                mx_jnum(b->sn.doc[MX_STATS], "timestamp", 0), dt);
        sup_json_str(f, mx_jstr(sup, "version") ? mx_jstr(sup, "version") : "");
        fprintf(f, ",\"pid\":%.0f,\"uptime_seconds\":%.3f}", mx_jnum(sup, "pid", 0),
                mx_jnum(sup, "uptime_ms", 0) / 1e3);
    } else {
        char clock[16];
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
        unsigned long long up = (unsigned long long)(mx_jnum(sup, "uptime_ms", 0) / 1e3);
        if (fr->tty)
            fputs("\033[H\033[2J", f);
        fprintf(f, "ringrouter %s, supervisor pid %.0f, up %lluh%02llum%02llus; rates over %.1f s; %s\n",
                mx_jstr(sup, "version") ? mx_jstr(sup, "version") : "?", mx_jnum(sup, "pid", 0), up / 3600,
                up / 60 % 60, up % 60, dt, clock);
    }
    top_ports(fr, a, b);
    top_services(fr, a, b);
    top_drops(fr, a, b);
    top_rings(fr, a, b);
    if (fr->json)
        fputs("}\n", f);
    fflush(f);
}

/* Sleep until @mono_ns (monotonic). */
static void sleep_until(uint64_t mono_ns)
{
    uint64_t now = sup_now_ns();
    if (now >= mono_ns)
        return;
    struct timespec ts = {.tv_sec = (time_t)((mono_ns - now) / 1000000000ull),
                          .tv_nsec = (long)((mono_ns - now) % 1000000000ull)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int sup_cmd_top(const char *sock, bool json, bool once)
{
    struct frame fr = {.f = stdout, .json = json, .tty = !json && !once && isatty(STDOUT_FILENO)};
    struct top_snap *s = calloc(2, sizeof(*s));
    char err[256];
    if (!s) {
        fprintf(stderr, "ringrouter top: out of memory\n");
        return 111;
    }
    int cur = 0, rc = 0;
    bool have = top_take(&s[cur], sock, err, sizeof(err));
    if (!have && once) {
        fprintf(stderr, "ringrouter top: %s\n", err);
        free(s);
        return 111;
    }
    for (;;) {
        uint64_t t0 = have ? s[cur].mono_ns : sup_now_ns();
        sleep_until(t0 + 1000000000ull);
        int nxt = !cur;
        bool ok = top_take(&s[nxt], sock, err, sizeof(err));
        if (ok && have) {
            top_frame(&fr, &s[cur], &s[nxt]);
        } else if (!ok && once) {
            fprintf(stderr, "ringrouter top: %s\n", err);
            rc = 111;
        } else if (!ok) { /* live: say so, and try again each second */
            fprintf(stdout, fr.tty ? "\033[H\033[2Jringrouter top: %s\n" : "ringrouter top: %s\n", err);
            fflush(stdout);
        }
        top_free(&s[cur]);
        cur = nxt;
        have = ok;
        if (once && (rc || ok))
            break;
    }
    top_free(&s[cur]);
    free(s);
    return rc;
}
