/* SPDX-License-Identifier: MIT */
/*
 * supervisor/ctl_show.c: the answers to `status` and `stats` (ctl.c reads
 * the requests): what the supervisor holds about each service, and what
 * the services, rings, steering programs and pool count in shared memory,
 * read without interrupting anyone. `stats` is a table of sections, each a
 * JSON array and a block of text, and a table of each service's own
 * figures; the ring counters are a table too (docs/stats.md).
 */
#include "supervisor/sup.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc/capture.h"
#include "supervisor/cli.h"
#include "supervisor/xsk.h"
#include "supervisor/zones.h"

static uint64_t uptime_ms(const struct sup_svc *v, uint64_t now)
{
    return v->state == SUP_ST_UP ? (now - v->ready_ns) / 1000000 : 0;
}

/* The supervisor itself: what runs (a re-exec by `upgrade supervisor` is a
 * new image, so a new version and start, under the same pid). */
static void status_supervisor_json(const struct sup *s, FILE *f, uint64_t now)
{
    const char *ver = cli_version();
    if (strncmp(ver, "ringrouter ", 11) == 0)
        ver += 11;
    fprintf(f, "\"supervisor\":{\"version\":");
    sup_json_str(f, ver);
    fprintf(f, ",\"pid\":%d,\"uptime_ms\":%llu,\"started_at\":%lld,\"last_reload\":", (int)getpid(),
            (unsigned long long)(s->started_ns && now > s->started_ns ? (now - s->started_ns) / 1000000 : 0),
            (long long)s->started);
    static const char *const results[] = {"none", "ok", "partial", "refused"};
    if (s->reload_last == SUP_RELOAD_NONE)
        fprintf(f, "null},");
    else
        fprintf(f, "{\"result\":\"%s\",\"at\":%lld}},", results[s->reload_last], (long long)s->reload_last_at);
}

void sup_ctl_status(struct sup *s, FILE *f, bool json)
{
    uint64_t now = sup_now_ns();
    if (json) {
        sup_json_begin(f);
        status_supervisor_json(s, f, now);
        fprintf(f, "\"services\":[");
        for (int i = 0; i < s->nsvcs; i++) {
            const struct sup_svc *v = &s->svcs[i];
            fprintf(f, "%s{\"name\":", i ? "," : "");
            sup_json_str(f, v->name);
            fprintf(f,
                    ",\"state\":\"%s\",\"pid\":%d,\"restarts\":%u,\"planned_restarts\":%u,\"uptime_ms\":%llu,"
                    "\"ready_ms\":%.3f,\"standby_pid\":%d,\"standby_parked\":%s,\"uid\":%u,\"gid\":%u,"
                    "\"started_at\":%lld,\"standby_started_at\":%lld,\"binary\":",
                    sup_state_name(v->state), (int)v->pid, v->restarts, v->planned,
                    (unsigned long long)uptime_ms(v, now), (double)v->ready_ms_last / 1000.0, (int)v->sb_pid,
                    v->sb_parked ? "true" : "false", (unsigned)v->uid, (unsigned)v->gid,
                    v->pid > 0 ? (long long)v->run_started : 0LL, v->sb_pid > 0 ? (long long)v->sb_started : 0LL);
            sup_json_str(f, v->pid > 0 ? v->run_binary : "");
            fprintf(f, ",\"build_id\":");
            sup_json_str(f, v->pid > 0 ? v->run_build : "");
            fprintf(f, ",\"standby_binary\":");
            sup_json_str(f, v->sb_pid > 0 ? v->sb_binary : "");
            fprintf(f, ",\"standby_build_id\":");
            sup_json_str(f, v->sb_pid > 0 ? v->sb_build : "");
            fprintf(f, ",\"last_exit\":");
            sup_json_str(f, v->last_exit);
            fprintf(f, ",\"restarts_by_cause\":{");
            for (int c = 0; c < SUP_NCAUSES; c++)
                fprintf(f, "%s\"%s\":%u", c ? "," : "", sup_cause_name(c), v->restarts_by[c]);
            fprintf(f, "}");
            /* cpu_max_pct: the periods its cgroup was throttled in, and
             * for how long in all (cgroup.c); -1 with no limit. */
            uint64_t thr = 0, thr_us = 0;
            bool lim = sup_cg_throttled(s, v, &thr, &thr_us) == 0;
            fprintf(f, ",\"cpu_max_pct\":%u,\"cpu_throttled\":%lld,\"cpu_throttled_ms\":%lld}", v->m->cpu_max_pct,
                    lim ? (long long)thr : -1LL, lim ? (long long)(thr_us / 1000u) : -1LL);
        }
        fprintf(f, "]}\n");
        return;
    }
    fprintf(f, "%-16s %-9s %8s %8s %8s %8s %10s %-8s %-12s %-28s %s\n", "SERVICE", "STATE", "PID", "STANDBY",
            "RESTARTS", "PLANNED", "UPTIME", "STARTED", "BUILD", "BINARY", "LAST EXIT");
    for (int i = 0; i < s->nsvcs; i++) {
        const struct sup_svc *v = &s->svcs[i];
        char up[32] = "-";
        if (v->state == SUP_ST_UP)
            snprintf(up, sizeof(up), "%.1fs", (double)uptime_ms(v, now) / 1000.0);
        char sb[16] = "-";
        if (v->sb_pid > 0)
            snprintf(sb, sizeof(sb), "%d%s", (int)v->sb_pid, v->sb_parked ? "" : "*");
        /* The running instance's: when it started (local time), its ELF
         * build id (12 digits) and what it was exec'd from. */
        char started[16] = "-", build[16] = "-";
        if (v->pid > 0 && v->run_started) {
            struct tm tm;
            localtime_r(&v->run_started, &tm);
            strftime(started, sizeof(started), "%H:%M:%S", &tm);
            snprintf(build, sizeof(build), "%.12s", v->run_build[0] ? v->run_build : "none");
        }
        fprintf(f, "%-16s %-9s %8d %8s %8u %8u %10s %-8s %-12s %-28s %s\n", v->name, sup_state_name(v->state),
                (int)v->pid, sb, v->restarts, v->planned, up, started, build, v->pid > 0 ? v->run_binary : "-",
                v->last_exit[0] ? v->last_exit : "-");
    }
}

/* ---- stats: a table of sections, each a JSON array and a block of text ---- */

struct stats_ctx {
    struct sup *s;
    FILE *f;
    bool json, all;
    int port;                /* -1: every port */
    struct ipc_owners *own;  /* who holds the pool (one pass over the owner words); NULL if out of memory */
};

/* A service's own figures: where they are, and how `stats` names them. */
struct svc_col {
    const char *key;   /* JSON */
    const char *label; /* text */
    size_t off;        /* in struct ipc_svc_stats; SIZE_MAX: the buffers it holds */
    bool nonzero_only; /* text: shown only when not 0 (wake-ups missed: it should always be) */
};

#define SC(f, label, nz) {#f, label, offsetof(struct ipc_svc_stats, f), nz}
static const struct svc_col svc_cols[] = {
    SC(loops, "loops", false),
    SC(sleeps, "sleeps", false),
    SC(wakes_sent, "wake-ups sent", false),
    {"buffers_held", "buffers held", SIZE_MAX, false},
    SC(wake_missed, "wake-ups missed", true),
};
#define NSVC_COLS (sizeof(svc_cols) / sizeof(svc_cols[0]))

static uint64_t svc_col(const struct stats_ctx *c, const struct sup_svc *v, const struct svc_col *col)
{
    if (col->off == SIZE_MAX)
        return c->own && v->owner <= IPC_OWNER_SERVICE_MAX ? c->own->held[v->owner] : 0;
    return ipc_ld_rlx((_Atomic uint64_t *)((char *)v->stats + col->off));
}

struct ring_ctr {
    const char *name;
    size_t off;
};

#define RC(f) {#f, offsetof(struct ipc_ring_shared, f)}
static const struct ring_ctr ring_ctrs[] = {
    RC(enq_handles),     RC(full_drops),     RC(wake_sent),      RC(sleeps),
    RC(drop_bad_handle), RC(drop_bad_owner), RC(drop_bad_frame), RC(drop_bad_chain),
    RC(prod_lie),        RC(cons_lie),
};
#define NRING_CTRS (sizeof(ring_ctrs) / sizeof(ring_ctrs[0]))

static uint64_t ring_ctr(const struct ipc_ring_shared *sh, const struct ring_ctr *c)
{
    return ipc_ld_rlx((_Atomic uint64_t *)((const char *)sh + c->off));
}

/* Each row function prints item @i if it is one to show, after a comma
 * unless @first, and says whether it did. */
static bool stats_svc_row(struct stats_ctx *c, int i, bool first)
{
    const struct sup_svc *v = &c->s->svcs[i];
    FILE *f = c->f;
    if (c->port >= 0 && !sup_svc_serves(v, c->port))
        return false;
    struct ipc_svc_stats *st = v->stats;
    uint32_t n = ipc_ld_acq(&st->nctr);
    if (n > IPC_SVC_MAX_CTR)
        n = IPC_SVC_MAX_CTR;
    if (c->json) {
        fprintf(f, "%s{\"name\":", first ? "" : ",");
        sup_json_str(f, v->name);
        for (size_t k = 0; k < NSVC_COLS; k++)
            fprintf(f, ",\"%s\":%llu", svc_cols[k].key, (unsigned long long)svc_col(c, v, &svc_cols[k]));
        if (v->cap) /* the capture region's (capture.c): what a slow reader lost, never packets */
            fprintf(f, ",\"capture_lost\":%llu,\"trace_lost\":%llu", (unsigned long long)ipc_ld_rlx(&v->cap->lost),
                    (unsigned long long)ipc_ld_rlx(&v->cap->tr_lost));
        fprintf(f, ",\"counters\":{");
    } else {
        fprintf(f, "%s (%s):", v->name, sup_state_name(v->state));
        for (size_t k = 0; k < NSVC_COLS; k++) {
            uint64_t val = svc_col(c, v, &svc_cols[k]);
            if (val || !svc_cols[k].nonzero_only)
                fprintf(f, "%s %s %llu", k ? "," : "", svc_cols[k].label, (unsigned long long)val);
        }
        uint64_t lost = v->cap ? ipc_ld_rlx(&v->cap->lost) : 0, tlost = v->cap ? ipc_ld_rlx(&v->cap->tr_lost) : 0;
        if (lost)
            fprintf(f, ", captures lost %llu", (unsigned long long)lost);
        if (tlost)
            fprintf(f, ", trace records lost %llu", (unsigned long long)tlost);
        fputc('\n', f);
    }
    for (uint32_t k = 0, shown = 0; k < n; k++) {
        uint64_t val = ipc_ld_rlx(&st->ctr[k]);
        char name[IPC_CTR_NAME + 1];
        if (!st->ctr_name[k][0])
            continue; /* unused slot */
        sup_shm_name(name, sizeof(name), st->ctr_name[k], IPC_CTR_NAME);
        if (c->json) {
            fprintf(f, "%s", shown++ ? "," : "");
            sup_json_str(f, name);
            fprintf(f, ":%llu", (unsigned long long)val);
        } else if (val || c->all) {
            fprintf(f, "  %-28s %llu\n", name, (unsigned long long)val);
        }
    }
    if (c->json)
        fprintf(f, "}}");
    return true;
}

static void stats_ring_head(struct stats_ctx *c)
{
    fprintf(c->f, "\n%-12s %-24s %11s", "RING", "FROM -> TO", "OCCUPANCY");
    for (size_t k = 0; k < NRING_CTRS; k++)
        fprintf(c->f, " %s", ring_ctrs[k].name);
    fprintf(c->f, "\n");
}

static bool stats_ring_row(struct stats_ctx *c, int i, bool first)
{
    const struct sup *s = c->s;
    const struct sup_ring *r = &s->rings[i];
    FILE *f = c->f;
    if (c->port >= 0 && r->port != c->port)
        return false;
    uint32_t size = s->ring_ref[i].size, occ = ipc_ring_occupancy(r->sh, size); /* the size it was made with */
    if (c->json) {
        fprintf(f, "%s{\"name\":\"%s\",\"from\":\"%s\",\"to\":\"%s\",\"occupancy\":%u,\"size\":%u", first ? "" : ",",
                r->name, s->svcs[r->prod].name, s->svcs[r->cons].name, occ, size);
        for (size_t k = 0; k < NRING_CTRS; k++)
            fprintf(f, ",\"%s\":%llu", ring_ctrs[k].name, (unsigned long long)ring_ctr(r->sh, &ring_ctrs[k]));
        fprintf(f, "}");
        return true;
    }
    char edge[48], occs[24];
    snprintf(edge, sizeof(edge), "%s -> %s", s->svcs[r->prod].name, s->svcs[r->cons].name);
    snprintf(occs, sizeof(occs), "%u/%u", occ, size);
    fprintf(f, "%-12s %-24s %11s", r->name, edge, occs);
    for (size_t k = 0; k < NRING_CTRS; k++)
        fprintf(f, " %*llu", (int)strlen(ring_ctrs[k].name), (unsigned long long)ring_ctr(r->sh, &ring_ctrs[k]));
    fprintf(f, "\n");
    return true;
}

/* What each AF_XDP port's steering program did with the frames it saw. */
static bool stats_xdp_row(struct stats_ctx *c, int p, bool first)
{
    const struct sup_port *pt = &c->s->m.ports[p];
    uint64_t v[SUP_XDP_NCTR];
    if (pt->driver != SUP_DRIVER_AFXDP || (c->port >= 0 && p != c->port) || sup_xsk_counters(c->s, p, v) < 0)
        return false;
    if (c->json) {
        fprintf(c->f, "%s{\"port\":", first ? "" : ",");
        sup_json_str(c->f, pt->name);
    } else {
        fprintf(c->f, "%sxdp port %s (%s):", first ? "\n" : "", pt->name, pt->ifname);
    }
    for (int k = 0; k < SUP_XDP_NCTR; k++)
        fprintf(c->f, c->json ? ",\"%s\":%llu" : " %s %llu", sup_xsk_counter_name(k), (unsigned long long)v[k]);
    fprintf(c->f, c->json ? "}" : "\n");
    return true;
}

static int stats_nsvcs(const struct sup *s) { return s->nsvcs; }
static int stats_nrings(const struct sup *s) { return s->nrings; }
static int stats_nports(const struct sup *s) { return (int)s->m.nports; }

static const struct stats_section {
    const char *key;                      /* the JSON array */
    void (*head)(struct stats_ctx *);     /* text: before the rows, or NULL */
    int (*count)(const struct sup *);
    bool (*row)(struct stats_ctx *, int, bool);
} stats_sections[] = {
    {"services", NULL, stats_nsvcs, stats_svc_row},
    {"rings", stats_ring_head, stats_nrings, stats_ring_row},
    {"xdp", NULL, stats_nports, stats_xdp_row},
};

/* The pool and shm_corrupt are the router's as a whole, whatever the port.
 * alloc_fail, free_bad and mag_bad are the services' to bump, in the pool's
 * header; corrupt is the supervisor's own count (docs/stats.md). */
static void stats_pool(const struct stats_ctx *c)
{
    struct sup *s = c->s;
    /* Trust zones (zones.h): every figure is the sum over the zones' pools. */
    uint64_t af = 0, fb = 0, mb = 0, corrupt = s->shm_corrupt;
    uint32_t nbufs = 0;
    for (unsigned z = 0; z < s->nzones; z++) {
        const struct ipc_pool *p = sup_zone_pool(s, z);
        af += ipc_ld_rlx(&p->hdr->alloc_fail);
        fb += ipc_ld_rlx(&p->hdr->free_bad);
        mb += ipc_ld_rlx(&p->hdr->mag_bad);
        corrupt += p->corrupt;
        nbufs += p->nbufs;
    }
    uint32_t nfree = c->own ? c->own->free : 0, nkern = c->own ? c->own->kernel : 0;
    char zones[32] = "";
    if (s->nzones > 1)
        snprintf(zones, sizeof(zones), " in %u zones", s->nzones);
    if (c->json)
        fprintf(c->f, "\"pool\":{\"buffers\":%u,\"frame_size_bytes\":%u,\"free\":%u,\"kernel\":%u,\"alloc_fail\":%llu,"
                      "\"free_bad\":%llu,\"mag_bad\":%llu,\"zones\":%u},\"shm_corrupt\":%llu}\n",
                nbufs, s->pool.frame_size, nfree, nkern, (unsigned long long)af, (unsigned long long)fb,
                (unsigned long long)mb, s->nzones, (unsigned long long)corrupt);
    else
        fprintf(c->f, "\npool: %u buffers of %u bytes%s, %u free, %u lent to the kernel, alloc_fail %llu, free_bad %llu, "
                      "mag_bad %llu\nshared memory: %llu corrupt words found and repaired\n",
                nbufs, s->pool.frame_size, zones, nfree, nkern, (unsigned long long)af, (unsigned long long)fb,
                (unsigned long long)mb, (unsigned long long)corrupt);
}

/* Who holds the pools: each zone's owner words, summed. */
static void stats_owners(struct sup *s, struct ipc_owners *own)
{
    ipc_pool_owners(&s->pool, own);
    struct ipc_owners *z1 = s->nzones > 1 ? calloc(1, sizeof(*z1)) : NULL;
    for (unsigned z = 1; z1 && z < s->nzones; z++) {
        ipc_pool_owners(sup_zone_pool(s, z), z1);
        own->free += z1->free;
        own->kernel += z1->kernel;
        own->other += z1->other;
        for (unsigned o = 0; o <= IPC_OWNER_SERVICE_MAX; o++)
            own->held[o] += z1->held[o];
    }
    free(z1);
}

void sup_ctl_stats(struct sup *s, FILE *f, bool json, bool all, int port)
{
    struct stats_ctx c = {.s = s, .f = f, .json = json, .all = all, .port = port};
    c.own = calloc(1, sizeof(*c.own));
    if (c.own)
        stats_owners(s, c.own);
    if (json)
        sup_json_begin(f);
    for (size_t k = 0; k < sizeof(stats_sections) / sizeof(stats_sections[0]); k++) {
        const struct stats_section *sec = &stats_sections[k];
        if (json)
            fprintf(f, "\"%s\":[", sec->key);
        else if (sec->head)
            sec->head(&c);
        for (int i = 0, shown = 0, n = sec->count(s); i < n; i++)
            shown += sec->row(&c, i, shown == 0);
        if (json)
            fprintf(f, "],");
    }
    stats_pool(&c);
    free(c.own);
}
