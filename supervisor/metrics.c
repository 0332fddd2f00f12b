/* SPDX-License-Identifier: MIT */
/*
 * supervisor/metrics.c: `ringrouter metrics`, Prometheus's text exposition
 * format (version 0.0.4) of what `status`, `stats`, `link` and `stats
 * --stages` answer, and the rules that map their fields onto metrics
 * (docs/observability.md lists them):
 *
 *   - names in base units (seconds, bytes), `_total` on counters, and what
 *     varies (a port, ring, service, stage, reason, cause) in labels;
 *   - a service's named counters go by rule, not by a list, so that a
 *     counter a new binary adds appears without a change here: a drop
 *     counter (mx_drop_reason) becomes ringrouter_drops_total{reason=...},
 *     a level (mx_is_gauge) ringrouter_service_level, any other
 *     ringrouter_service_events_total{counter=...}; a dotted name's head
 *     ("a.rx_pkts", "class.web.tx_pkts") becomes a port or class label;
 *   - every family has its HELP and TYPE; a series that two counters map
 *     onto is their sum, never two samples.
 */
#include "supervisor/metrics.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MX_FAMS_MAX 96

struct mx_sample {
    char *labels;
    char *text; /* the value as it came; NULL once summed (then v) */
    double v;
};

struct mx_fam {
    const struct mx_desc *d;
    struct mx_sample *s;
    size_t n, cap;
};

struct mx_out {
    struct mx_fam fam[MX_FAMS_MAX];
    int nfam;
};

struct mx_out *mx_out_new(void)
{
    return calloc(1, sizeof(struct mx_out));
}

void mx_put(struct mx_out *o, const struct mx_desc *d, const char *labels, const char *value)
{
    if (!o)
        return;
    struct mx_fam *fm = NULL;
    for (int i = 0; i < o->nfam && !fm; i++)
        if (o->fam[i].d == d)
            fm = &o->fam[i];
    if (!fm) {
        if (o->nfam == MX_FAMS_MAX)
            return;
        fm = &o->fam[o->nfam++];
        fm->d = d;
    }
    for (size_t i = 0; i < fm->n; i++) {
        struct mx_sample *x = &fm->s[i];
        if (strcmp(x->labels, labels) == 0) {
            x->v += strtod(value, NULL);
            free(x->text);
            x->text = NULL;
            return;
        }
    }
    if (fm->n == fm->cap) {
        size_t cap = fm->cap ? fm->cap * 2 : 16;
        struct mx_sample *s = realloc(fm->s, cap * sizeof(*s));
        if (!s)
            return;
        fm->s = s;
        fm->cap = cap;
    }
    struct mx_sample *x = &fm->s[fm->n];
    x->labels = strdup(labels);
    x->text = strdup(value);
    x->v = strtod(value, NULL);
    if (!x->labels || !x->text) {
        free(x->labels);
        free(x->text);
        return;
    }
    fm->n++;
}

/* The shortest of %.15g and %.17g that reads back as @v: 0.1, not 0.10000000000000001. */
static const char *num_text(char *buf, size_t len, double v)
{
    snprintf(buf, len, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, len, "%.17g", v);
    return buf;
}

void mx_putf(struct mx_out *o, const struct mx_desc *d, const char *labels, double value)
{
    char buf[40];
    mx_put(o, d, labels, num_text(buf, sizeof(buf), value));
}

/* HELP's text: a backslash and a line feed escaped. */
static void help_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

void mx_out_write(struct mx_out *o, FILE *f)
{
    for (int i = 0; o && i < o->nfam; i++) {
        const struct mx_fam *fm = &o->fam[i];
        if (!fm->n)
            continue;
        fprintf(f, "# HELP %s ", fm->d->name);
        help_text(f, fm->d->help);
        fprintf(f, "\n# TYPE %s %s\n", fm->d->name, fm->d->type);
        for (size_t k = 0; k < fm->n; k++) {
            const struct mx_sample *x = &fm->s[k];
            fprintf(f, "%s%s%s%s ", fm->d->name, x->labels[0] ? "{" : "", x->labels, x->labels[0] ? "}" : "");
            char buf[40];
            fprintf(f, "%s\n", x->text ? x->text : num_text(buf, sizeof(buf), x->v));
        }
    }
    mx_out_free(o);
}

void mx_out_free(struct mx_out *o)
{
    for (int i = 0; o && i < o->nfam; i++) {
        for (size_t k = 0; k < o->fam[i].n; k++) {
            free(o->fam[i].s[k].labels);
            free(o->fam[i].s[k].text);
        }
        free(o->fam[i].s);
    }
    free(o);
}

/* The length of the valid UTF-8 sequence at @p (at most @n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len = p[0] < 0x80             ? 1
                 : (p[0] & 0xe0) == 0xc0 ? 2
                 : (p[0] & 0xf0) == 0xe0 ? 3
                 : (p[0] & 0xf8) == 0xf0 ? 4
                                         : 0;
    if (!len || len > n || (len == 2 && p[0] < 0xc2))
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    uint32_t cp = len == 2 ? (uint32_t)(p[0] & 0x1f) : len == 3 ? (uint32_t)(p[0] & 0x0f) : (uint32_t)(p[0] & 0x07);
    for (size_t i = 1; i < len; i++)
        cp = cp << 6 | (p[i] & 0x3f);
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

void mx_escape(char *buf, size_t len, const char *s)
{
    size_t o = 0, n = strlen(s);
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n && o + 5 < len;) {
        size_t l = utf8_len(p + i, n - i);
        if (p[i] == '\\' || p[i] == '"' || p[i] == '\n') {
            buf[o++] = '\\';
            buf[o++] = p[i] == '\n' ? 'n' : (char)p[i];
            i++;
        } else if (l == 0) {
            buf[o++] = '?'; /* not UTF-8, which the format requires */
            i++;
        } else {
            memcpy(buf + o, p + i, l);
            o += l;
            i += l;
        }
    }
    buf[o] = '\0';
}

const char *mx_labels(char *buf, size_t len, ...)
{
    va_list ap;
    va_start(ap, len);
    size_t o = 0;
    buf[0] = '\0';
    for (const char *k; (k = va_arg(ap, const char *));) {
        const char *v = va_arg(ap, const char *);
        if (!v || !v[0])
            continue;
        char esc[512];
        mx_escape(esc, sizeof(esc), v);
        int w = snprintf(buf + o, len - o, "%s%s=\"%s\"", o ? "," : "", k, esc);
        if (w < 0 || (size_t)w >= len - o) {
            buf[o] = '\0';
            break;
        }
        o += (size_t)w;
    }
    va_end(ap);
    return buf;
}

/* ---- the rules for a service's named counters ---- */

bool mx_drop_reason(const char *name, char *reason, size_t len)
{
    char copy[128];
    snprintf(copy, sizeof(copy), "%s", name);
    bool drop = false, v6 = false;
    size_t o = 0;
    reason[0] = '\0';
    for (char *save = NULL, *w = strtok_r(copy, "_", &save); w; w = strtok_r(NULL, "_", &save)) {
        if (!drop && (!strcmp(w, "drop") || !strcmp(w, "drops") || !strcmp(w, "dropped") || !strcmp(w, "drop6"))) {
            drop = true;
            v6 = !strcmp(w, "drop6");
            continue;
        }
        int n = snprintf(reason + o, len - o, "%s%s", o ? "_" : "", w);
        if (n > 0 && (size_t)n < len - o)
            o += (size_t)n;
    }
    if (!drop)
        return false;
    if (v6) {
        char r[128];
        snprintf(r, sizeof(r), "ipv6%s%s", o ? "_" : "", reason);
        snprintf(reason, len, "%s", r);
    } else if (!o) {
        snprintf(reason, len, "all");
    }
    return true;
}

bool mx_is_gauge(const char *name)
{
    static const char *const first[] = {"pending", "backlog"};
    static const char *const last[] = {"held", "max",  "depth", "inflight", "stock",
                                       "rate", "ceil", "bps",   "backlog",  "kpkt"};
    size_t fl = strcspn(name, "_");
    for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++)
        if (fl == strlen(first[i]) && strncmp(name, first[i], fl) == 0)
            return true;
    const char *lw = strrchr(name, '_');
    lw = lw ? lw + 1 : name;
    for (size_t i = 0; i < sizeof(last) / sizeof(last[0]); i++)
        if (strcmp(lw, last[i]) == 0)
            return true;
    return false;
}

double mx_proc_cpu(pid_t pid)
{
    if (pid <= 0)
        return -1;
    char path[48], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* After the command's closing parenthesis (it may hold blanks and
     * parentheses itself): state, then fields 4..; utime and stime are
     * fields 14 and 15. */
    char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (double)(ut + st) / (double)(hz > 0 ? hz : 100);
}

int sup_cmd_metrics(const char *sock)
{
    struct mx_fetch f = {.fd = -1};
    mx_fetch_all(&f, sock);
    if (!mx_fetch_ok(&f)) {
        fprintf(stderr, "ringrouter metrics: %s\n", f.err[0] ? f.err : "no answer from the supervisor");
        mx_fetch_free(&f);
        return 111;
    }
    struct mx_snap sn;
    mx_snap_parse(&sn, &f);
    mx_fetch_free(&f);
    struct mx_out *o = mx_out_new();
    if (!o || !sn.doc[MX_STATUS]) {
        fprintf(stderr, "ringrouter metrics: %s\n",
                o ? "the supervisor's status answer does not parse" : "out of memory");
        mx_out_free(o);
        mx_snap_free(&sn);
        return 111;
    }
    mx_render(o, &sn);
    mx_snap_free(&sn);
    mx_out_write(o, stdout);
    return fflush(stdout) == 0 ? 0 : 111;
}
