/* SPDX-License-Identifier: MIT */
/*
 * supervisor/inject.c: `ringrouter inject SERVICE KIND [ARGS]` (inject.h).
 *
 *   kill               SIGKILL to the running instance
 *   stop MS            SIGSTOP, then SIGCONT after MS ms, unless the hang
 *                      detector (hang_ms) killed it first
 *   crash              the service stores through a null pointer in its loop
 *   corrupt-ring [RING]  the producer of one of its input rings publishes a
 *                      handle past the pool's end there
 *   corrupt-meta [RING]  the service scribbles a buffer's off/len (or its
 *                      next link) out of bounds and publishes it
 *   double-free        the service frees one buffer twice
 *   chain-loop [RING]  the service publishes a packet whose chain loops
 *   leak N             the service takes N buffers and never gives them back
 *   slow US [MS]       every loop of the service spins US us, for MS ms (1000)
 *   exhaust [MS]       the supervisor takes every free buffer of the pool
 *                      and holds them MS ms (1000)
 *
 * Signals go through the instance's pidfd, never a pid that may have been
 * reused. Service commands go through the inject block of its stats region
 * (ipc/inject.h): kind and arguments, then seq; the answer is ack = seq and
 * what it did, which this file reads as input from a process that may be
 * hostile: ack only compared, result taken only below 4096, a ring index
 * used only after a bound, every other word printed as a number.
 *
 * Nothing here blocks the event loop: an answer is polled from the timer
 * (re-armed to 1 ms while one is pending), a SIGCONT and an exhaust's
 * release are due times checked each pass.
 */
#include "supervisor/inject.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ipc/inject.h"

#define MS(x) ((uint64_t)(x)*1000000ull)
#define INJ_POLL_NS 1000000ull /* how soon the timer looks again for an answer */
#define INJ_STOP_MS_MAX 60000u
#define INJ_HOLD_MS_MAX 60000u
#define INJ_HOLD_MS_DEFAULT 1000u
#define INJ_SLOW_MS_DEFAULT 1000u

/* Kinds the supervisor does itself, after the service's (ipc/inject.h). */
enum { INJ_KILL = IPC_INJ_NKINDS, INJ_STOP, INJ_EXHAUST, INJ_NKINDS };

struct sup_inj_svc {
    uint64_t seq;  /* our copy of the command word; the region's is the service's to spoil */
    unsigned turn; /* which ring the next corrupt-ring / corrupt-meta / chain-loop uses */
    pid_t stopped; /* the instance SIGSTOPped by `stop`, 0 if none */
    uint32_t stop_ms;
    uint64_t cont_ns; /* when it gets its SIGCONT */
    pid_t leak_pid;   /* the instance that took buffers for `leak`, and how many it said */
    uint32_t leaked;
};

struct sup_inject {
    struct sup_inj_svc svc[SUP_MAX_SERVICES];
    ipc_buf *held; /* exhaust: the buffers taken */
    uint32_t nheld;
    uint32_t hold_ms;
    uint64_t release_ns;
    char held_for[SUP_SERVICE_MAX + 1];
};

/* One request: the service, its kind, the words after the kind, and the
 * numbers they were read as (inj_args). */
struct inj_call {
    struct sup *s;
    struct sup_svc *v;
    const struct inj_kind *k;
    char **a;
    int na;
    uint64_t n[2];
    FILE *f;
};

/* A number a kind takes: its name in the usage, its unit in the refusal,
 * its range, and its default (0: it must be given). */
struct inj_num {
    const char *name, *unit;
    uint64_t lo, hi, def;
};

/* Which ring a kind's optional RING names: none, one of the target's inputs
 * (its producer carries it out), or one of its outputs. */
enum inj_ring { INJ_RING_NONE, INJ_RING_IN, INJ_RING_OUT };

/* A kind: its name and usage, whether the target must be up, its
 * arguments, and what carries it out. */
struct inj_kind {
    const char *name;
    int kind;
    const char *args;
    bool needs_up;
    enum inj_ring ring;
    int nnum;
    struct inj_num num[2];
    bool (*act)(struct inj_call *);
};

static struct sup_inject *inj_state(struct sup *s)
{
    if (!s->inj)
        s->inj = calloc(1, sizeof(*s->inj));
    return s->inj;
}

/* The loop's timer fires at @due at the latest (it keeps its period). */
static void inj_wake_at(struct sup *s, uint64_t due)
{
    uint64_t now = sup_now_ns();
    uint64_t in = due > now ? due - now : 1;
    if (in >= s->tick_ns || s->timer_fd < 0)
        return; /* the next tick comes first */
    struct itimerspec its = {
        .it_interval = {.tv_sec = (time_t)(s->tick_ns / 1000000000ull), .tv_nsec = (long)(s->tick_ns % 1000000000ull)},
        .it_value = {.tv_sec = 0, .tv_nsec = (long)in},
    };
    timerfd_settime(s->timer_fd, 0, &its, NULL);
}

static int pidfd_signal(const struct sup_svc *v, int sig)
{
    if (v->pidfd < 0)
        return -ESRCH;
    return syscall(SYS_pidfd_send_signal, v->pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

/* A whole decimal number in [lo, hi], or false. */
static bool parse_num(const char *a, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!a || !*a)
        return false;
    uint64_t v = 0;
    for (const char *p = a; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int svc_index(const struct sup *s, const char *name)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (strcmp(s->svcs[i].name, name) == 0)
            return i;
    return -1;
}

/* The service-side ring index @r of @v's outputs, as a name, bounded. */
static const char *out_ring_name(const struct sup *s, const struct sup_svc *v, uint32_t r)
{
    return r < (uint32_t)v->n_out ? s->rings[v->out[r]].name : "?";
}

/* Write a command into @v's inject block and wake it. */
static uint64_t send_cmd(struct sup *s, struct sup_svc *v, uint32_t kind, uint64_t a0, uint64_t a1)
{
    struct sup_inj_svc *is = &s->inj->svc[v - s->svcs];
    struct ipc_inject *in = &v->stats->inject;
    ipc_st_rlx(&in->kind, kind);
    ipc_st_rlx(&in->arg[0], a0);
    ipc_st_rlx(&in->arg[1], a1);
    is->seq++;
    ipc_st_rel(&in->seq, is->seq); /* (A) pairs with the service's (B) */
    uint64_t one = 1;
    if (write(v->wake_fd, &one, sizeof(one)) < 0) {
        /* it looks at the word within hang_ms / 4 anyway */
    }
    return is->seq;
}

/* @v is not up, or @who (the producer of its input ring) is not. */
static bool refuse_not_up(FILE *f, const struct sup_svc *v, const char *kind, const struct sup_svc *who)
{
    const struct sup_svc *w = who ? who : v;
    fprintf(f, "inject %s %s: %s%s is %s, not up; try again when it is\n", v->name, kind, w->name,
            who ? " (its producer)" : "", sup_state_name(w->state));
    return false;
}

/* The ring, by name among @v's inputs (@in) or outputs, or the next in turn. */
static int pick_ring(struct sup *s, struct sup_svc *v, bool in, const char *name, FILE *f, const char *kind)
{
    const int *rings = in ? v->in : v->out;
    int n = in ? v->n_in : v->n_out;
    if (n == 0) {
        fprintf(f, "inject %s %s: it has no %s ring\n", v->name, kind, in ? "input" : "output");
        return -1;
    }
    if (name) {
        for (int i = 0; i < n; i++)
            if (strcmp(s->rings[rings[i]].name, name) == 0)
                return i;
        fprintf(f, "inject %s %s: no %s ring \"%s\"; its %s rings are:", v->name, kind, in ? "input" : "output", name,
                in ? "input" : "output");
        for (int i = 0; i < n; i++)
            fprintf(f, " %s", s->rings[rings[i]].name);
        fprintf(f, "\n");
        return -1;
    }
    struct sup_inj_svc *is = &s->inj->svc[v - s->svcs];
    return (int)(is->turn++ % (unsigned)n);
}

static bool do_kill(struct sup *s, struct sup_svc *v, FILE *f)
{
    (void)s;
    pid_t pid = v->pid;
    int r = pidfd_signal(v, SIGKILL);
    if (r < 0) {
        fprintf(f, "inject %s kill: %s\n", v->name, strerror(-r));
        return false;
    }
    sup_log("inject: %s: kill: SIGKILL sent to pid %d", v->name, (int)pid);
    fprintf(f, "%s: kill: SIGKILL sent to pid %d\n", v->name, (int)pid);
    return true;
}

static bool do_stop(struct sup *s, struct sup_svc *v, uint64_t ms, FILE *f)
{
    struct sup_inj_svc *is = &s->inj->svc[v - s->svcs];
    if (is->stopped && is->stopped == v->pid) {
        fprintf(f, "inject %s stop: pid %d is stopped already, until its SIGCONT\n", v->name, (int)v->pid);
        return false;
    }
    int r = pidfd_signal(v, SIGSTOP);
    if (r < 0) {
        fprintf(f, "inject %s stop: %s\n", v->name, strerror(-r));
        return false;
    }
    is->stopped = v->pid;
    is->stop_ms = (uint32_t)ms;
    is->cont_ns = sup_now_ns() + MS(ms);
    inj_wake_at(s, is->cont_ns);
    char hang[96] = "";
    if (ms >= v->m->hang_ms)
        snprintf(hang, sizeof(hang), " (over its hang_ms %u: the hang detector will kill it first)", v->m->hang_ms);
    char line[256];
    snprintf(line, sizeof(line), "%s: stop %llu: SIGSTOP sent to pid %d; SIGCONT in %llu ms%s", v->name,
             (unsigned long long)ms, (int)v->pid, (unsigned long long)ms, hang);
    sup_log("inject: %s", line);
    fprintf(f, "%s\n", line);
    return true;
}

static bool do_exhaust(struct sup *s, struct sup_svc *v, uint64_t ms, FILE *f)
{
    struct sup_inject *ij = s->inj;
    if (ij->held) {
        fprintf(f, "inject %s exhaust: the supervisor holds %u buffers already (for %s), until %llu ms from now\n",
                v->name, ij->nheld, ij->held_for,
                (unsigned long long)((ij->release_ns > sup_now_ns() ? ij->release_ns - sup_now_ns() : 0) / 1000000));
        return false;
    }
    ipc_buf *held = malloc((size_t)s->pool.nbufs * sizeof(*held));
    if (!held) {
        fprintf(f, "inject %s exhaust: out of memory\n", v->name);
        return false;
    }
    uint32_t n = 0;
    for (;;) {
        uint32_t want = s->pool.nbufs - n < 256 ? s->pool.nbufs - n : 256;
        uint32_t got = want ? ipc_pool_alloc(&s->pool, held + n, want) : 0;
        n += got;
        if (got < want || !want)
            break;
    }
    ipc_pool_flush(&s->pool); /* the empty magazine words go back; the buffers stay ours */
    ij->held = held;
    ij->nheld = n;
    ij->hold_ms = (uint32_t)ms;
    ij->release_ns = sup_now_ns() + MS(ms);
    snprintf(ij->held_for, sizeof(ij->held_for), "%s", v->name);
    inj_wake_at(s, ij->release_ns);
    char line[320];
    snprintf(line, sizeof(line),
             "%s: exhaust: the supervisor holds %u of the pool's %u buffers (every one free in "
             "the depot; the rest are in the services' caches, rings and devices) for %llu ms; the pool is shared, "
             "so every service that allocates meets it",
             v->name, n, s->pool.nbufs, (unsigned long long)ms);
    sup_log("inject: %s", line);
    fprintf(f, "%s\n", line);
    return true;
}

static void exhaust_release(struct sup *s, const char *why)
{
    struct sup_inject *ij = s->inj;
    if (!ij || !ij->held)
        return;
    uint32_t freed = ipc_pool_free(&s->pool, ij->held, ij->nheld);
    ipc_pool_flush(&s->pool);
    sup_log("inject: %s: exhaust: %u of %u buffers given back %s", ij->held_for, freed, ij->nheld, why);
    free(ij->held);
    ij->held = NULL;
    ij->nheld = 0;
}

/* A command for the service: to the target, or for corrupt-ring to the
 * producer of one of its input rings; the ring, where the kind takes one,
 * by name or the next in turn. Its answer is polled (sup_inject_poll). */
static bool inj_cmd(struct inj_call *c)
{
    struct sup *s = c->s;
    struct sup_svc *v = c->v, *to = v;
    const char *kname = c->k->name;
    uint64_t a0 = c->n[0], a1 = c->n[1];
    const char *ring = c->k->ring && c->na > 0 ? c->a[0] : NULL;
    if (c->k->ring == INJ_RING_IN) {
        int i = pick_ring(s, v, true, ring, c->f, kname);
        if (i < 0)
            return false;
        const struct sup_ring *r = &s->rings[v->in[i]];
        to = &s->svcs[r->prod];
        if (to->state != SUP_ST_UP || to->pid <= 0)
            return refuse_not_up(c->f, v, kname, to);
        a0 = 0;
        for (int k = 0; k < to->n_out; k++)
            if (to->out[k] == v->in[i])
                a0 = (uint64_t)k;
    } else if (c->k->ring == INJ_RING_OUT) {
        if (v->n_out == 0 && c->k->kind == IPC_INJ_BAD_META && !ring) {
            a0 = IPC_INJ_RING_NONE; /* nowhere to publish: scribbled and freed */
        } else {
            int i = pick_ring(s, v, false, ring, c->f, kname);
            if (i < 0)
                return false;
            a0 = (uint64_t)i;
        }
    }
    uint64_t seq = send_cmd(s, to, (uint32_t)c->k->kind, a0, a1);
    struct sup_inject_wait *w = s->ctl_iwait;
    if (!w) {
        fprintf(c->f, "%s: %s: sent to %s (pid %d) as command %llu\n", v->name, kname, to->name, (int)to->pid,
                (unsigned long long)seq);
        return true;
    }
    *w = (struct sup_inject_wait){.pending = true,
                                  .svc = (int)(to - s->svcs),
                                  .target = (int)(v - s->svcs),
                                  .pid = to->pid,
                                  .kind = (uint32_t)c->k->kind,
                                  .seq = seq,
                                  .arg = c->n[0],
                                  .arg2 = c->n[1],
                                  .deadline_ns = sup_now_ns() + SUP_INJECT_ANSWER_NS};
    inj_wake_at(s, sup_now_ns() + INJ_POLL_NS);
    return true;
}

static bool inj_kill(struct inj_call *c) { return do_kill(c->s, c->v, c->f); }
static bool inj_stop(struct inj_call *c) { return do_stop(c->s, c->v, c->n[0], c->f); }
static bool inj_exhaust(struct inj_call *c) { return do_exhaust(c->s, c->v, c->n[0], c->f); }

#define MS_ARG(max, def) {"MS", "milliseconds", 1, max, def}
static const struct inj_kind inj_kinds[] = {
    {"kill", INJ_KILL, "", true, INJ_RING_NONE, 0, {{0}}, inj_kill},
    {"stop", INJ_STOP, " MS", true, INJ_RING_NONE, 1, {MS_ARG(INJ_STOP_MS_MAX, 0)}, inj_stop},
    {"crash", IPC_INJ_CRASH, "", true, INJ_RING_NONE, 0, {{0}}, inj_cmd},
    {"corrupt-ring", IPC_INJ_BAD_HANDLE, " [RING]", true, INJ_RING_IN, 0, {{0}}, inj_cmd},
    {"corrupt-meta", IPC_INJ_BAD_META, " [RING]", true, INJ_RING_OUT, 0, {{0}}, inj_cmd},
    {"double-free", IPC_INJ_DOUBLE_FREE, "", true, INJ_RING_NONE, 0, {{0}}, inj_cmd},
    {"chain-loop", IPC_INJ_CHAIN_LOOP, " [RING]", true, INJ_RING_OUT, 0, {{0}}, inj_cmd},
    {"leak", IPC_INJ_LEAK, " N", true, INJ_RING_NONE, 1, {{"N", "buffers", 1, IPC_INJ_LEAK_MAX, 0}}, inj_cmd},
    {"slow", IPC_INJ_SLOW, " US [MS]", true, INJ_RING_NONE, 2,
     {{"US", "microseconds", 1, IPC_INJ_SLOW_US_MAX, 0}, MS_ARG(IPC_INJ_SLOW_MS_MAX, INJ_SLOW_MS_DEFAULT)}, inj_cmd},
    /* The supervisor takes the pool's buffers itself, whatever the state
     * of the service it is said to be for. */
    {"exhaust", INJ_EXHAUST, " [MS]", false, INJ_RING_NONE, 1, {MS_ARG(INJ_HOLD_MS_MAX, INJ_HOLD_MS_DEFAULT)},
     inj_exhaust},
};
#define INJ_NKINDS_TABLE (sizeof(inj_kinds) / sizeof(inj_kinds[0]))

static void kinds_line(FILE *f)
{
    fprintf(f, "the kinds are:");
    for (size_t i = 0; i < INJ_NKINDS_TABLE; i++)
        fprintf(f, " %s%s%s", inj_kinds[i].name, inj_kinds[i].args, i + 1 < INJ_NKINDS_TABLE ? "," : "");
    fprintf(f, "\n");
}

/* @c's arguments against its kind's: how many, and each number in range
 * (a missing optional one takes its default). */
static bool inj_args(struct inj_call *c)
{
    const struct inj_kind *k = c->k;
    const char *sv = c->v->name;
    int max = k->ring ? 1 : k->nnum;
    if (c->na > max) {
        fprintf(c->f, "inject %s %s: unexpected argument \"%s\" (inject SERVICE %s%s)\n", sv, k->name, c->a[max],
                k->name, k->args);
        return false;
    }
    for (int i = 0; i < k->nnum; i++) {
        const struct inj_num *n = &k->num[i];
        if (i >= c->na && !n->def) {
            fprintf(c->f, "inject %s %s: missing argument (inject SERVICE %s%s)\n", sv, k->name, k->name, k->args);
            return false;
        }
        c->n[i] = n->def;
        if (i < c->na && !parse_num(c->a[i], n->lo, n->hi, &c->n[i])) {
            fprintf(c->f, "inject %s %s: %s \"%s\" is not a number of %s from %llu to %llu\n", sv, k->name, n->name,
                    c->a[i], n->unit, (unsigned long long)n->lo, (unsigned long long)n->hi);
            return false;
        }
    }
    return true;
}

bool sup_ctl_inject(struct sup *s, char **argv, int argc, FILE *f)
{
    if (argc < 2) {
        fprintf(f, "inject: expected inject SERVICE KIND [ARGS]; ");
        kinds_line(f);
        return false;
    }
    int vi = svc_index(s, argv[0]);
    if (vi < 0) {
        fprintf(f, "inject: no service \"%s\"; the services are:", argv[0]);
        for (int i = 0; i < s->nsvcs; i++)
            fprintf(f, " %s", s->svcs[i].name);
        fprintf(f, "\n");
        return false;
    }
    struct inj_call c = {.s = s, .v = &s->svcs[vi], .a = argv + 2, .na = argc - 2, .f = f};
    for (size_t ki = 0; ki < INJ_NKINDS_TABLE && !c.k; ki++)
        if (strcmp(inj_kinds[ki].name, argv[1]) == 0)
            c.k = &inj_kinds[ki];
    if (!c.k) {
        fprintf(f, "inject %s: unknown kind \"%s\"; ", c.v->name, argv[1]);
        kinds_line(f);
        return false;
    }
    if (!inj_args(&c))
        return false;
    if (!inj_state(s)) {
        fprintf(f, "inject: out of memory\n");
        return false;
    }
    if (c.k->needs_up && (c.v->state != SUP_ST_UP || c.v->pid <= 0))
        return refuse_not_up(f, c.v, c.k->name, NULL);
    return c.k->act(&c);
}

/* The answer of a service that carried the command out: one line, logged too. */
static bool answer(struct sup *s, const struct sup_inject_wait *w, FILE *f)
{
    const struct sup_svc *to = &s->svcs[w->svc], *v = &s->svcs[w->target];
    struct ipc_inject *in = &to->stats->inject;
    uint32_t res = ipc_ld_rlx(&in->result), rg = ipc_ld_rlx(&in->ring), h = ipc_ld_rlx(&in->handle);
    uint32_t cnt = ipc_ld_rlx(&in->count), var = ipc_ld_rlx(&in->variant);
    unsigned long long loop = (unsigned long long)ipc_ld_rlx(&in->loop);
    const char *kname = ipc_inject_kind_name(w->kind);
    char line[512];
    bool ok = true;
    if (res >= 4096) {
        s->shm_corrupt++;
        snprintf(line, sizeof(line),
                 "%s: %s: %s answered with result %u, which is not an errno (its stats "
                 "region's inject block at offset %#zx)",
                 v->name, kname, to->name, res, offsetof(struct ipc_svc_stats, inject));
        ok = false;
    } else if (res) {
        snprintf(line, sizeof(line), "%s: %s: not done by %s (pid %d, batch %llu): %s", v->name, kname, to->name,
                 (int)w->pid, loop, strerror((int)res));
        ok = false;
    } else {
        switch (w->kind) {
        case IPC_INJ_CRASH:
            snprintf(line, sizeof(line), "%s: crash: SIGSEGV raised in its loop at batch %llu (pid %d): %s", v->name,
                     loop, (int)w->pid, v->pid != w->pid && v->last_exit[0] ? v->last_exit : "not dead yet");
            break;
        case IPC_INJ_BAD_HANDLE:
            snprintf(line, sizeof(line),
                     "%s: corrupt-ring: handle %u (past the pool's %u buffers) placed in its input "
                     "ring %s by its producer %s (pid %d) at %s's batch %llu",
                     v->name, h, s->pool.nbufs, out_ring_name(s, to, rg), to->name, (int)w->pid, to->name, loop);
            break;
        case IPC_INJ_BAD_META:
            if (rg == IPC_INJ_RING_NONE)
                snprintf(line, sizeof(line),
                         "%s: corrupt-meta: buffer %u scribbled (off and len past its frame) at "
                         "batch %llu and freed (it has no output ring)",
                         v->name, h, loop);
            else if (var == IPC_INJ_V_CHAIN)
                snprintf(line, sizeof(line),
                         "%s: corrupt-meta: buffer %u scribbled (next %u, outside the pool's %u "
                         "buffers) and published on %s at batch %llu",
                         v->name, h, s->pool.nbufs + 5, s->pool.nbufs, out_ring_name(s, v, rg), loop);
            else
                snprintf(line, sizeof(line),
                         "%s: corrupt-meta: buffer %u scribbled (off %u + len 1000 past its "
                         "%u-byte frame) and published on %s at batch %llu",
                         v->name, h, s->pool.frame_size - 64, s->pool.frame_size, out_ring_name(s, v, rg), loop);
            break;
        case IPC_INJ_DOUBLE_FREE:
            snprintf(line, sizeof(line), "%s: double-free: buffer %u freed twice at batch %llu; the pool %s", v->name,
                     h, loop, cnt ? "took the second free too" : "refused the second (free_bad)");
            ok = cnt == 0;
            break;
        case IPC_INJ_CHAIN_LOOP:
            snprintf(line, sizeof(line),
                     "%s: chain-loop: buffer %u linked to itself (a chain with no end) and "
                     "published on %s at batch %llu",
                     v->name, h, out_ring_name(s, v, rg), loop);
            break;
        case IPC_INJ_LEAK: {
            /* Taken on purpose: not a leak for the census when this
             * instance ends holding them (sup_inject_leaked). */
            struct sup_inj_svc *is = &s->inj->svc[w->svc];
            if (is->leak_pid != w->pid)
                is->leaked = 0;
            is->leak_pid = w->pid;
            is->leaked += cnt < w->arg ? cnt : (uint32_t)w->arg;
            int o =
                snprintf(line, sizeof(line), "%s: leak %llu: holds %u buffers from batch %llu until it ends:", v->name,
                         (unsigned long long)w->arg, cnt, loop);
            for (uint32_t i = 0; i < cnt && i < IPC_INJ_SHOW && o > 0 && (size_t)o < sizeof(line); i++)
                o += snprintf(line + o, sizeof(line) - (size_t)o, "%s%u", i ? "," : " ", ipc_ld_rlx(&in->bufs[i]));
            if (cnt > IPC_INJ_SHOW && o > 0 && (size_t)o < sizeof(line))
                snprintf(line + o, sizeof(line) - (size_t)o, ",...");
            break;
        }
        case IPC_INJ_SLOW:
            snprintf(line, sizeof(line), "%s: slow %llu: every loop spins %llu us for %llu ms, from batch %llu",
                     v->name, (unsigned long long)w->arg, (unsigned long long)w->arg, (unsigned long long)w->arg2,
                     loop);
            break;
        default:
            snprintf(line, sizeof(line), "%s: %s: done at batch %llu", v->name, kname, loop);
            break;
        }
    }
    sup_log("inject: %s", line);
    fprintf(f, "%s\n", line);
    return ok;
}

bool sup_inject_poll(struct sup *s, struct sup_inject_wait *w, uint64_t now, FILE *f, bool *ok)
{
    const struct sup_svc *to = &s->svcs[w->svc];
    uint64_t ack = ipc_ld_acq(&to->stats->inject.ack); /* (D) pairs with the service's (C) */
    bool gone = to->pid != w->pid;
    *ok = true;
    if (ack == w->seq) {
        /* A crash answers, then dies: wait (within the deadline) for the
         * death, so that the answer says what it died of. */
        if (w->kind == IPC_INJ_CRASH && !gone && now < w->deadline_ns) {
            inj_wake_at(s, now + INJ_POLL_NS);
            return false;
        }
        *ok = answer(s, w, f);
    } else if (gone) {
        fprintf(f, "inject %s %s: pid %d ended before it took the command (%s)\n", s->svcs[w->target].name,
                ipc_inject_kind_name(w->kind), (int)w->pid, to->last_exit[0] ? to->last_exit : "no exit status");
        *ok = false;
    } else if (now >= w->deadline_ns) {
        fprintf(f, "inject %s %s: %s (pid %d) has not answered within %llu ms; it carries it out when it looks\n",
                s->svcs[w->target].name, ipc_inject_kind_name(w->kind), to->name, (int)w->pid,
                (unsigned long long)(SUP_INJECT_ANSWER_NS / 1000000));
        *ok = false;
    } else {
        inj_wake_at(s, now + INJ_POLL_NS);
        return false;
    }
    w->pending = false;
    return true;
}

void sup_inject_tick(struct sup *s, uint64_t now)
{
    struct sup_inject *ij = s->inj;
    if (!ij)
        return;
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_inj_svc *is = &ij->svc[i];
        struct sup_svc *v = &s->svcs[i];
        if (!is->stopped)
            continue;
        if (now < is->cont_ns && !s->shutting_down) {
            inj_wake_at(s, is->cont_ns);
            continue;
        }
        if (v->pid == is->stopped && pidfd_signal(v, SIGCONT) == 0)
            sup_log("inject: %s: stop %u: SIGCONT sent to pid %d%s", v->name, is->stop_ms, (int)is->stopped,
                    s->shutting_down ? " (shutting down)" : "");
        else
            sup_log("inject: %s: stop %u: pid %d ended before its SIGCONT was due", v->name, is->stop_ms,
                    (int)is->stopped);
        is->stopped = 0;
    }
    if (ij->held) {
        if (now >= ij->release_ns || s->shutting_down) {
            char why[64] = "at shutdown";
            if (!s->shutting_down)
                snprintf(why, sizeof(why), "after %u ms", ij->hold_ms);
            exhaust_release(s, why);
        } else {
            inj_wake_at(s, ij->release_ns);
        }
    }
}

uint32_t sup_inject_leaked(struct sup *s, const struct sup_svc *v)
{
    if (!s->inj)
        return 0;
    struct sup_inj_svc *is = &s->inj->svc[v - s->svcs];
    uint32_t n = is->leak_pid == v->pid && v->pid > 0 ? is->leaked : 0;
    is->leak_pid = 0;
    is->leaked = 0;
    return n;
}

void sup_inject_move(struct sup *s, int from, int to)
{
    if (!s->inj || from == to)
        return;
    s->inj->svc[to] = s->inj->svc[from];
    memset(&s->inj->svc[from], 0, sizeof(s->inj->svc[from]));
}

void sup_inject_end(struct sup *s)
{
    if (!s->inj)
        return;
    bool was = s->shutting_down;
    s->shutting_down = true;
    sup_inject_tick(s, sup_now_ns());
    s->shutting_down = was;
    free(s->inj);
    s->inj = NULL;
}
