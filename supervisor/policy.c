/* SPDX-License-Identifier: MIT */
/*
 * supervisor/policy.c: what the supervisor does when something happens to a
 * service, as a table of actions indexed by state and event (s6-supervise's
 * shape). Deaths are reclaimed here, before anything is restarted: every
 * buffer the dead instance held privately goes back to the pool, and what it
 * left in its rings waits there for its successor.
 *
 * Restart policy (MINIX RS, s6): the first death after a stable period is
 * restarted at once, since packets queue in the rings meanwhile; further
 * consecutive deaths back off exponentially from 10 ms up to 1 s. More than
 * restart_limit deaths within restart_window mark the service failed; the
 * others keep running. A service is stable once it has been ready for
 * SUP_STABLE_MS.
 */
#include "supervisor/sup.h"
#include "supervisor/zones.h"
#include "supervisor/adopt.h"
#include "supervisor/inject.h"
#include "supervisor/shaper_ctl.h"
#include "supervisor/filter.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SUP_BACKOFF_BASE_MS 10u
#define SUP_BACKOFF_CAP_MS 1000u
#define SUP_STABLE_MS 100u
#define SUP_READY_TIMEOUT_MS 5000u

#define MS(x) ((uint64_t)(x) * 1000000ull)

/* A death (or a failed start, which counts as one) for the restart window. */
static void record_death(struct sup_svc *v, uint64_t now)
{
    v->deaths_ns[v->ndeaths++ % SUP_DEATHS_KEPT] = now;
    v->consecutive++;
}

const char *sup_cause_name(enum sup_cause c)
{
    static const char *const names[SUP_NCAUSES] = {"crash", "hang", "upgrade", "restart"};
    return c < SUP_NCAUSES ? names[c] : "?";
}

const char *sup_state_name(enum sup_state st)
{
    static const char *const names[SUP_NSTATES] = {"down", "starting", "up", "backoff", "failed", "stopping"};
    return st < SUP_NSTATES ? names[st] : "?";
}

static void start(struct sup *s, struct sup_svc *v)
{
    struct ipc_err err;
    uint64_t now = sup_now_ns();
    if (v->fresh_rates) { /* before the instance below reads its stats region */
        sup_shaper_forget(s, v);
        v->fresh_rates = false;
    }
    sup_filter_before_start(s, v); /* filter_setup.c: its connection table's header, before anyone adopts it */
    if (sup_standby_activate(s, v)) {
        v->started_ns = now;
        v->state = SUP_ST_STARTING;
        v->deadline_ns = now + MS(SUP_READY_TIMEOUT_MS);
        if (sup_watch(s, v) < 0)
            sup_err("%s: cannot watch pid %d", v->name, (int)v->pid);
        sup_log("%s: standby pid %d takes over", v->name, (int)v->pid);
        /* Its predecessor is gone: a successor of ours that read the old
         * pid could adopt nothing, and would leave this one running. */
        sup_state_save(s);
        return;
    }
    if (sup_spawn(s, v, false, &err) < 0) {
        /* A failed start counts as a death: the same limits apply. */
        sup_err("%s: cannot start: %s", v->name, err.msg);
        snprintf(v->last_exit, sizeof(v->last_exit), "start failed: %.80s", err.msg);
        v->pid = 0;
        v->state = SUP_ST_BACKOFF;
        record_death(v, now);
        v->deadline_ns = now + MS(SUP_BACKOFF_CAP_MS);
        return;
    }
    v->started_ns = now;
    v->state = SUP_ST_STARTING;
    v->deadline_ns = now + MS(SUP_READY_TIMEOUT_MS);
    if (sup_watch(s, v) < 0)
        sup_err("%s: cannot watch pid %d", v->name, (int)v->pid);
    sup_log("%s: started, pid %d", v->name, (int)v->pid);
}

void sup_exit_text(char *buf, size_t size, int status)
{
    /* A service's seccomp filter (ipc/sandbox.h) kills it with SIGSYS when
     * it makes a call off its allow-list: a bug, or a compromised service.
     * Nothing else sends a service SIGSYS, so the log names the filter as
     * the cause. (The kernel log's audit line, type=1326, names the call.) */
    if (status == SUP_STATUS_UNKNOWN)
        snprintf(buf, size, "ended (an adopted process, not our child: how is unknown)");
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
        snprintf(buf, size, "killed by SIGSYS: a forbidden system call (seccomp)");
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(buf, size, "ended (status %#x)", status);
}

static void describe_exit(struct sup_svc *v, int status)
{
    sup_exit_text(v->last_exit, sizeof(v->last_exit), status);
}

/*
 * Rings @idx[0..n) (all of them if @idx is NULL): a ring's size and owners
 * are fixed at creation, but its two ends can write them, and a dead or
 * hostile one may have. Put back what was changed, and say so: reclaim and
 * the census read the supervisor's own copy either way.
 */
void sup_rings_repair(struct sup *s, const int *idx, int n)
{
    for (int i = 0; i < n; i++) {
        int r = idx ? idx[i] : i;
        const struct ipc_ring_shared *sh = s->ring_ref[r].sh;
        uint32_t size = sh->size, mask = sh->mask; /* for the log line only */
        uint16_t po = sh->prod_owner, co = sh->cons_owner;
        if (ipc_ring_ref_repair(&s->ring_ref[r])) {
            s->shm_corrupt++;
            sup_warn("ring %s: its header's size, mask or owners at offset %#zx were overwritten (size %u, mask %#x, "
                     "owners %u -> %u); repaired", s->rings[r].name, offsetof(struct ipc_ring_shared, size), size, mask,
                     po, co);
        }
    }
}

/*
 * Before a process of @v maps anything: what it will check when it attaches
 * must be what the supervisor created. The pool's header is writable by every
 * service, a ring's by its two ends and a stats region's by its service, and
 * a hostile one that rewrote a size or a magic there would otherwise keep
 * every successor from starting (it refuses a region that does not check).
 * The live services keep their own copies of the geometry from their attach,
 * so a rewrite hurts only those that start after it; this puts it back.
 */
void sup_shared_repair(struct sup *s, struct sup_svc *v)
{
    sup_zones_hdr_repair(s); /* every zone's pool (zones.c) */
    if (memcmp(&v->stats->shm, &v->stats_shm, sizeof(v->stats_shm)) != 0) {
        s->shm_corrupt++;
        sup_warn("%s: its stats region's header was overwritten; repaired", v->name);
        v->stats->shm = v->stats_shm;
    }
    int idx[2 * IPC_SVC_MAX_RINGS], n = 0;
    for (int i = 0; i < v->n_in; i++)
        idx[n++] = v->in[i];
    for (int i = 0; i < v->n_out; i++)
        idx[n++] = v->out[i];
    sup_rings_repair(s, idx, n);
}

/*
 * Of what @v (stopped cleanly) still holds, the packets stranded in its
 * output rings when a lying consumer's index was put back (index_repair):
 * published, never taken, and @v's by their owner words until its own
 * reclaim. Charged by name to the consumer that lied. Returns how many
 * frames that is, at most @held; from here on the reclaim frees them.
 */
static int stranded_charge(struct sup *s, struct sup_svc *v, int held)
{
    int charged = 0;
    for (int r = 0; r < s->nrings; r++) {
        struct sup_ring *ring = &s->rings[r];
        if (!ring->stranded || s->ring_ref[r].prod_owner != v->owner)
            continue;
        uint32_t n = ring->stranded < (uint32_t)(held - charged) ? ring->stranded : (uint32_t)(held - charged);
        ring->stranded = 0;
        if (!n)
            continue;
        charged += (int)n;
        sup_warn("census: %u of %s's buffers were stranded in ring %s by %s, which lied about its index; charged "
                 "to %s, not counted as %s's leak", n, v->name, ring->name, ring->stranded_by, ring->stranded_by,
                 v->name);
    }
    return charged;
}

/* A service that exited 0 after our SIGTERM has had its chance to give back
 * everything it held: each real service frees its queues, backlog and
 * buffers in flight on the way out (docs/supervisor.md, "Shutdown"). So what
 * it still holds privately is a leak, counted here, by name, before reclaim
 * hides it; the supervisor then exits 101. A killed service cannot give
 * anything back and is not counted, nor are the buffers `inject leak` told
 * this instance to take: the reclaim that follows frees them, and a census
 * that blamed them would fail every run that tried the fault. */
static void count_leak(struct sup *s, struct sup_svc *v, const int *idx, unsigned n)
{
    int held = sup_zones_held(s, sup_svc_zones(s, v), v->owner, idx, n);
    uint32_t injected = sup_inject_leaked(s, v);
#ifdef RR_TEST_BREAK_CENSUS
    /* Test-only (./configure --break-census): a phantom leak on every clean
     * stop, to prove that the tests' census checks can fail
     * (docs/testing.md). Never in a real build. */
    if (held >= 0)
        held++;
#endif
    if (held < 0) {
        sup_err("%s: census: cannot count what it held: %s", v->name, strerror(-held));
        return;
    }
    if (injected) {
        uint32_t ours = (uint32_t)held < injected ? (uint32_t)held : injected;
        sup_log("%s: census: %u buffers held at exit were taken by `inject leak`; reclaimed, not a leak", v->name,
                ours);
        held -= (int)ours;
    }
    held -= stranded_charge(s, v, held);
    if (held <= 0)
        return;
    char who[160] = "";
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].convictions && strlen(who) + strlen(s->svcs[i].name) + 3 < sizeof(who))
            snprintf(who + strlen(who), sizeof(who) - strlen(who), "%s%s", who[0] ? ", " : "", s->svcs[i].name);
    if (who[0]) {
        /* Every service maps every owner word: once one was caught
         * rewriting shared words, a word that names @v proves nothing. */
        sup_warn("census: %d buffers carry %s's owner word at its exit, unattributable: %s rewrote shared words "
                 "during the run (restarted for it); reclaimed, not counted as %s's leak", held, v->name, who,
                 v->name);
        return;
    }
    s->leaked += (unsigned)held;
    sup_err("census: LEAK: %s held %d buffers at exit", v->name, held);
}

/*
 * Ring @r, one of whose ends (@dead) is gone and reclaimed: indices more than
 * its size apart are a lie, the dead end's or the live one's, and only the
 * dead end's word is free to write. Make it the live end's: for a dead
 * producer the ring is empty at the consumer's index (what it had published
 * was reclaimed, reclaim followed no slot); for a dead consumer it is empty
 * at the producer's, and what the producer had published in it is stranded,
 * its own by its owner word, until its own reclaim (the census charges it to
 * the consumer: stranded_charge). The lie counts read from here on are new.
 */
static void index_repair(struct sup *s, int r, int dead)
{
    const struct ipc_ring_ref *ref = &s->ring_ref[r];
    struct ipc_ring_shared *sh = ref->sh;
    struct sup_ring *ring = &s->rings[r];
    uint32_t prod = ipc_ld_acq(&sh->prod), cons = ipc_ld_acq(&sh->cons);
    if (prod - cons > ref->size) {
        s->shm_corrupt++;
        bool cons_dead = ring->cons == dead;
        ipc_st_rel(cons_dead ? &sh->cons : &sh->prod, cons_dead ? prod : cons);
        sup_warn("ring %s: prod %u - cons %u (offsets %#zx, %#zx) exceeds its %u slots; %s's %s put back to %u, "
                 "the ring is empty", ref->name, prod, cons, offsetof(struct ipc_ring_shared, prod),
                 offsetof(struct ipc_ring_shared, cons), ref->size, s->svcs[dead].name, cons_dead ? "cons" : "prod",
                 cons_dead ? prod : cons);
        /* What the producer had published there is its own by its owner
         * words and in no ring now: count it, to charge to the liar at the
         * producer's exit (stranded_charge), whose reclaim frees it. */
        uint32_t n = 0;
        if (cons_dead && ipc_pool_stranded(&s->pool, ref->prod_owner, ref, 1, &n) > 0) {
            ring->stranded += n;
            _Static_assert(sizeof(ring->stranded_by) == sizeof(s->svcs[dead].name), "a service's name");
            memcpy(ring->stranded_by, s->svcs[dead].name, sizeof(ring->stranded_by));
            sup_warn("ring %s: %u of %s's buffers published in it were never taken; stranded until its reclaim",
                     ref->name, n, s->svcs[ring->prod].name);
        }
    }
    if (ring->prod == dead)
        ring->stranded = 0; /* this reclaim freed them */
    ring->lie_seen[0] = ipc_ld_rlx(&sh->prod_lie);
    ring->lie_seen[1] = ipc_ld_rlx(&sh->cons_lie);
}

/* The rings @v produces or consumes, by the supervisor's table rather than
 * its in/out lists: a reload that removes a port takes the port's rings
 * out of the router's lists (its new instance's config) while the old
 * instance still writes into them, and what it wrote there is the ring's,
 * not a leak to free twice (reload.c drains them). */
static void reclaim(struct sup *s, struct sup_svc *v, bool clean_stop)
{
    int idx[2 * IPC_SVC_MAX_RINGS] = {0}; /* all written below; gcc cannot tell once sup_rings_repair is inlined */
    unsigned n = 0;
    int self = (int)(v - s->svcs);
    for (int i = 0; i < s->nrings && n < 2 * IPC_SVC_MAX_RINGS; i++)
        if (s->rings[i].prod == self || s->rings[i].cons == self)
            idx[n++] = i;
    sup_rings_repair(s, idx, (int)n);
    if (clean_stop)
        count_leak(s, v, idx, n);
    if (v->kind == IPC_SVC_ROUTER)
        fib_reader_reset(&s->fib, FIB_ROUTER_SLOT); /* and so the IPv6 FIB's: one readers' region */
    int r = sup_zones_reclaim(s, sup_svc_zones(s, v), v->owner, idx, n); /* each zone with its own rings */
    if (r < 0)
        sup_err("%s: reclaim failed: %s", v->name, strerror(-r));
    else if (r > 0)
        sup_log("%s: reclaimed %d buffers", v->name, r);
    for (unsigned i = 0; i < n; i++)
        index_repair(s, idx[i], self);
    ipc_st_rlx(&v->stats->state, IPC_SVC_STARTING);
}

static unsigned deaths_in_window(const struct sup_svc *v, uint64_t now)
{
    unsigned n = 0, have = v->ndeaths < SUP_DEATHS_KEPT ? v->ndeaths : SUP_DEATHS_KEPT;
    for (unsigned i = 0; i < have; i++)
        if (now - v->deaths_ns[i] <= MS(v->m->restart_window_ms))
            n++;
    return n;
}

/* A running instance ended. Decide whether and when it comes back. */
static void act_died(struct sup *s, struct sup_svc *v, int status)
{
    uint64_t now = sup_now_ns();
    sup_unwatch(s, v);
    describe_exit(v, status);
    reclaim(s, v, false);
    v->pid = 0;
    v->died_ns = now;
    enum sup_cause cause = v->killed_hung ? SUP_CAUSE_HANG : SUP_CAUSE_CRASH;
    v->killed_hung = false;
    sup_upgrade_died(s, v); /* an upgrade's new instance: the restart is the old binary's */
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (v->m->restart == SUP_RESTART_NEVER || (v->m->restart == SUP_RESTART_ON_FAILURE && clean)) {
        v->state = SUP_ST_DOWN;
        sup_warn("%s: %s; not restarting (restart = %s)", v->name, v->last_exit,
                 v->m->restart == SUP_RESTART_NEVER ? "never" : "on-failure");
        return;
    }
    record_death(v, now);
    unsigned recent = deaths_in_window(v, now);
    if (recent > v->m->restart_limit) {
        v->state = SUP_ST_FAILED;
        sup_err("%s: %s; failed: %u deaths within %u ms exceed restart_limit %u; not restarting", v->name,
                v->last_exit, recent, v->m->restart_window_ms, v->m->restart_limit);
        return;
    }
    v->restarts++;
    v->restarts_by[cause]++;
    if (v->consecutive <= 1) {
        sup_warn("%s: %s; restarting now", v->name, v->last_exit);
        start(s, v);
        return;
    }
    unsigned shift = v->consecutive - 2 < 7 ? v->consecutive - 2 : 7;
    uint64_t delay = (uint64_t)SUP_BACKOFF_BASE_MS << shift;
    if (delay > SUP_BACKOFF_CAP_MS)
        delay = SUP_BACKOFF_CAP_MS;
    v->state = SUP_ST_BACKOFF;
    v->deadline_ns = now + MS(delay);
    sup_warn("%s: %s; restarting in %llu ms (death %u in a row)", v->name, v->last_exit, (unsigned long long)delay,
             v->consecutive);
}

static void act_ready(struct sup *s, struct sup_svc *v, int status)
{
    (void)s;
    (void)status;
    uint64_t now = sup_now_ns();
    sup_sched_raise(v, NULL); /* a new instance started idle (spawn.c): it serves from now */
    v->ready_ns = now;
    v->state = SUP_ST_UP;
    v->last_beat = ipc_ld_rlx(&v->stats->heartbeat);
    v->last_beat_ns = now;
    uint64_t from = v->died_ns > v->started_ns - MS(60000) && v->died_ns ? v->died_ns : v->started_ns;
    v->ready_ms_last = (now - from) / 1000;
    /* Where the time went: fork and exec until the service's first line of
     * ipc_svc_open, then its own initialisation, then our noticing. */
    uint64_t t_open = ipc_ld_rlx(&v->stats->open_ns), t_ready = ipc_ld_rlx(&v->stats->ready_ns);
    /* The service writes both: they count only in order, between its start and now. */
    if (t_open < v->started_ns || t_open > now)
        t_open = t_ready = 0;
    else if (t_ready < t_open || t_ready > now)
        t_ready = 0;
    double exec_ms = t_open ? (double)(t_open - v->started_ns) / 1e6 : 0;
    double init_ms = t_ready ? (double)(t_ready - t_open) / 1e6 : 0;
    double seen_ms = t_ready ? (double)(now - t_ready) / 1e6 : 0;
    double before_ms = v->started_ns > from ? (double)(v->started_ns - from) / 1e6 : 0;
    sup_log("%s: ready, pid %d, %.1f ms after %s (reclaim and fork %.1f, exec %.1f, init %.1f, notice %.1f)",
            v->name, (int)v->pid, (double)(now - from) / 1e6,
            v->died_ns && v->died_ns >= v->started_ns - MS(60000) ? "its predecessor died" : "start", before_ms,
            exec_ms, init_ms, seen_ms);
    /* The next death is served by a standby that is exec'd and mapped. */
    if (v->m->restart != SUP_RESTART_NEVER)
        sup_standby_spawn(s, v);
    sup_state_save(s); /* a new pid: what a successor would adopt */
}

static void act_kill(struct sup *s, struct sup_svc *v, const char *why)
{
    (void)s;
    sup_warn("%s: %s; killing pid %d", v->name, why, (int)v->pid);
    if (v->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, v->pidfd, SIGKILL, NULL, 0);
}

static void act_ready_timeout(struct sup *s, struct sup_svc *v, int status)
{
    (void)status;
    v->killed_hung = true;
    act_kill(s, v, "not ready after 5 s");
}

static void act_hang(struct sup *s, struct sup_svc *v, int status)
{
    (void)status;
    char why[96];
    snprintf(why, sizeof(why), "no heartbeat for %u ms (hang_ms)", v->m->hang_ms);
    v->killed_hung = true;
    act_kill(s, v, why);
}

/* `ringrouter restart` (or the first start): a fresh tally. */
static void act_restart_now(struct sup *s, struct sup_svc *v, int status)
{
    (void)status;
    v->consecutive = 0;
    v->ndeaths = 0;
    start(s, v);
}

/* The back-off delay is over: start again, keeping the tally. */
static void act_backoff_done(struct sup *s, struct sup_svc *v, int status)
{
    (void)status;
    start(s, v);
}

static void act_stop(struct sup *s, struct sup_svc *v, int status)
{
    (void)s;
    (void)status;
    v->state = SUP_ST_STOPPING;
    v->deadline_ns = sup_now_ns() + MS(2000);
    if (v->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, v->pidfd, SIGTERM, NULL, 0);
}

static void act_stop_idle(struct sup *s, struct sup_svc *v, int status)
{
    (void)s;
    (void)status;
    v->state = SUP_ST_DOWN;
}

static void act_restart_running(struct sup *s, struct sup_svc *v, int status)
{
    v->restart_pending = true;
    act_stop(s, v, status);
}

static void act_stopped(struct sup *s, struct sup_svc *v, int status)
{
    v->killed_hung = false; /* it was stopping: whoever killed it, the death was asked for */
    sup_unwatch(s, v);
    describe_exit(v, status);
    reclaim(s, v, WIFEXITED(status) && WEXITSTATUS(status) == 0);
    v->pid = 0;
    if (v->restart_pending && !s->shutting_down) {
        v->restart_pending = false;
        v->planned++; /* asked for (restart, upgrade, reload): not a failure */
        v->restarts_by[v->upg.phase == SUP_UPG_HANDOVER ? SUP_CAUSE_UPGRADE : SUP_CAUSE_RESTART]++;
        v->died_ns = sup_now_ns();
        sup_log("%s: %s; restarting as asked", v->name, v->last_exit);
        start(s, v);
        return;
    }
    v->state = SUP_ST_DOWN;
    sup_log("%s: stopped (%s)", v->name, v->last_exit);
}

static void act_stop_timeout(struct sup *s, struct sup_svc *v, int status)
{
    (void)status;
    act_kill(s, v, "did not stop within 2 s");
}

static void act_none(struct sup *s, struct sup_svc *v, int status)
{
    (void)s;
    (void)v;
    (void)status;
}

typedef void (*sup_action)(struct sup *, struct sup_svc *, int);

/* [state][event]: EXIT, READY, TIMEOUT, HANG, STOP, RESTART */
static const sup_action sup_actions[SUP_NSTATES][SUP_NEVENTS] = {
    [SUP_ST_DOWN] = {act_none, act_none, act_none, act_none, act_none, act_restart_now},
    [SUP_ST_STARTING] = {act_died, act_ready, act_ready_timeout, act_none, act_stop, act_restart_running},
    [SUP_ST_UP] = {act_died, act_none, act_none, act_hang, act_stop, act_restart_running},
    [SUP_ST_BACKOFF] = {act_none, act_none, act_backoff_done, act_none, act_stop_idle, act_restart_now},
    [SUP_ST_FAILED] = {act_none, act_none, act_none, act_none, act_none, act_restart_now},
    [SUP_ST_STOPPING] = {act_stopped, act_none, act_stop_timeout, act_none, act_none, act_none},
};

void sup_event(struct sup *s, struct sup_svc *v, enum sup_event ev, int status)
{
    sup_actions[v->state][ev](s, v, status);
}

void sup_check_timers(struct sup *s, uint64_t now)
{
    /* If we ourselves did not run for several ticks (a starved machine), a
     * still heartbeat proves nothing: the services were starved with us.
     * Judge hangs only over time we actually watched. */
    bool starved = s->last_check_ns && now - s->last_check_ns > 4 * s->tick_ns;
    s->last_check_ns = now;
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        switch (v->state) {
        case SUP_ST_UP: {
            uint64_t hb = ipc_ld_rlx(&v->stats->heartbeat);
            if (hb != v->last_beat || starved) {
                v->last_beat = hb;
                v->last_beat_ns = now;
            } else if (now - v->last_beat_ns + s->tick_ns / 2 >= MS(v->m->hang_ms)) {
                /* last_beat_ns is when a tick saw the beat change: on
                 * average half a tick after the beat itself. */
                v->last_beat_ns = now; /* one kill per silence */
                sup_event(s, v, SUP_EV_HANG, 0);
            }
            if (v->consecutive && now - v->ready_ns > MS(SUP_STABLE_MS))
                v->consecutive = 0;
            if (v->sb_pid <= 0 && v->sb_retry_ns && now >= v->sb_retry_ns && v->m->restart != SUP_RESTART_NEVER) {
                v->sb_retry_ns = 0;
                sup_standby_spawn(s, v);
            }
            break;
        }
        case SUP_ST_STARTING:
        case SUP_ST_BACKOFF:
        case SUP_ST_STOPPING:
            if (now >= v->deadline_ns) {
                v->deadline_ns = now + MS(SUP_READY_TIMEOUT_MS);
                sup_event(s, v, SUP_EV_TIMEOUT, 0);
            }
            break;
        default:
            break;
        }
    }
}

/* ---- peers that lie about a ring's index, services that hoard ---- */

/* Restart @v's running instance for tampering: once per instance, named in
 * the log with @why; the census stops trusting owner words (count_leak). */
static void convict(struct sup *s, struct sup_svc *v, const char *why)
{
    if (v->state != SUP_ST_UP || v->pid <= 0 || v->convict_pid == v->pid)
        return;
    v->convict_pid = v->pid;
    v->convictions++;
    act_kill(s, v, why);
}

/*
 * Each ring's ends count the lies they caught their peer in (ring.h:
 * prod_lie on the consumer's line, cons_lie on the producer's). A count
 * that moved since the last tick, while the indices are still more than
 * the ring's size apart (we look ourselves: a count alone may be a stray
 * read from before a repair), convicts the other end. A count that went
 * down was written by that other end too, the only other process that maps
 * the ring.
 */
static void lie_check(struct sup *s)
{
    for (int i = 0; i < s->nrings; i++) {
        struct sup_ring *r = &s->rings[i];
        const struct ipc_ring_ref *ref = &s->ring_ref[i];
        const struct ipc_ring_shared *sh = ref->sh;
        uint64_t lie[2] = {ipc_ld_rlx(&sh->prod_lie), ipc_ld_rlx(&sh->cons_lie)};
        for (int side = 0; side < 2; side++) {
            if (lie[side] == r->lie_seen[side])
                continue;
            uint64_t was = r->lie_seen[side];
            r->lie_seen[side] = lie[side];
            uint32_t span = ipc_ring_count(sh);
            if (span <= ref->size)
                continue;
            struct sup_svc *liar = &s->svcs[side ? r->cons : r->prod];
            const struct sup_svc *peer = &s->svcs[side ? r->prod : r->cons];
            char why[200];
            snprintf(why, sizeof(why), "ring %s: %s %s its %s index (prod - cons = %u, %u slots; %s counted %llu -> "
                     "%llu lies); restarting the liar", ref->name, liar->name, lie[side] > was ? "lies about" : "rewrote "
                     "its peer's lie count and", side ? "cons" : "prod", span, ref->size, peer->name,
                     (unsigned long long)was, (unsigned long long)lie[side]);
            convict(s, liar, why);
        }
    }
}

/*
 * Owner words, read while the services run (one cache line per buffer): a
 * service that holds more than hoard_pct of the pool, beyond what waits in
 * its output rings, for hoard_ms on end is restarted, and its reclaim gives
 * the pool back, owner words it stole included. A pass over the pool starts
 * four times per hoard_ms (at most every 20 ms) and reads SUP_HOARD_SLICE
 * buffers per turn of the loop, so that a pool of millions never holds the
 * loop for long; it is judged when it ends.
 */
#define SUP_HOARD_SLICE 65536u

static void hoard_judge(struct sup *s, const struct ipc_owners *own, uint64_t now)
{
    uint64_t limit = (uint64_t)s->pool.nbufs * s->m.router.hoard_pct / 100;
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        uint32_t held = v->owner <= IPC_OWNER_SERVICE_MAX ? own->held[v->owner] : 0;
        /* Not what waits in its output rings for their consumers to take:
         * a full ring is a slow consumer, not a hoard, and a ring holds at
         * most its size. */
        for (int r = 0; r < s->nrings; r++) {
            uint32_t occ = s->rings[r].prod == i ? ipc_ring_occupancy(s->ring_ref[r].sh, s->ring_ref[r].size) : 0;
            held = held > occ ? held - occ : 0;
        }
        if (v->state != SUP_ST_UP || held <= limit) {
            v->hoard_since_ns = 0;
            continue;
        }
        if (!v->hoard_since_ns)
            v->hoard_since_ns = now;
        if (now - v->hoard_since_ns < MS(s->m.router.hoard_ms))
            continue;
        char why[200];
        snprintf(why, sizeof(why), "holds %u of the pool's %u buffers, more than hoard_pct %u %% for hoard_ms %u ms; "
                 "restarting it, its buffers are reclaimed", held, s->pool.nbufs, s->m.router.hoard_pct,
                 s->m.router.hoard_ms);
        v->hoard_since_ns = 0;
        convict(s, v, why);
    }
}

static void hoard_check(struct sup *s, uint64_t now)
{
    if (s->hoard_next >= s->pool.nbufs) { /* no pass under way: time for one? */
        uint64_t period = MS(s->m.router.hoard_ms) / 4;
        if (period < MS(20))
            period = MS(20);
        if (now - s->hoard_scan_ns < period)
            return;
        s->hoard_scan_ns = now;
        s->hoard_next = 0;
        memset(&s->hoard_own, 0, sizeof(s->hoard_own));
    }
    s->hoard_next = ipc_pool_owners_add(&s->pool, s->hoard_next, SUP_HOARD_SLICE, &s->hoard_own);
    if (s->hoard_next >= s->pool.nbufs)
        hoard_judge(s, &s->hoard_own, now);
}

void sup_tamper_tick(struct sup *s, uint64_t now)
{
    if (s->shutting_down)
        return;
    lie_check(s);
    hoard_check(s, now);
}
