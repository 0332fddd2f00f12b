/* SPDX-License-Identifier: MIT */
/*
 * services/shaper/main.c: rr-shaper, one port's egress shaper. It reads its
 * parameters (struct shp_cfg) from its typed config (tables/config.h), takes
 * packets from its input ring (the router's "sh-P"), queues them in the
 * library (shp.c), releases what the buckets allow onto its output ring
 * (the driver's "tx-P"), and sleeps on its eventfd until the next packet may
 * leave or new packets arrive: never spinning. What the driver's ring cannot
 * take now stays in a small software backlog for the next loop.
 *
 * Counters (docs/stats.md): port-wide ones, then class.NAME.* per class.
 * Commands come through the mailbox (tables/shaper.h, docs/shaper.md): the
 * supervisor writes class, rate, ceil and then seq; the shaper applies the
 * change at its next loop and answers with ack = seq. The rates in
 * effect are the counters "rate" and class.NAME.rate/ceil, which outlive the
 * process with its stats region: a restarted shaper resumes them.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ipc/stage.h"
#include "ipc/svc.h"
#include "ipc/trace.h"
#include "services/shaper/shp.h"
#include "tables/config.h"

#define SH_BURST 256u
#define SH_STOP_DRAIN_MS 50u /* a stopping shaper's wait for the driver to take its queue */

static volatile sig_atomic_t stop;

/* Stage counters (ipc/stage.h, docs/stats.md), in the loop's order. */
enum sh_stage { SH_ST_ENQUEUE, SH_ST_DEQUEUE, SH_ST_HANDOFF, SH_ST_PUBLISH, SH_ST_WAKE, SH_ST_N };
static const char *const sh_stage_names[SH_ST_N] = {
    [SH_ST_ENQUEUE] = "enqueue", [SH_ST_DEQUEUE] = "dequeue", [SH_ST_HANDOFF] = "handoff",
    [SH_ST_PUBLISH] = "publish", [SH_ST_WAKE] = "wake",
};

struct sh_proc {
    struct ipc_svc svc;
    struct shp s;
    struct shp_mbox *mbox;
    _Atomic uint64_t *ctr;
    uint64_t full_drops;
    uint32_t npend;
    ipc_buf pend[SH_BURST]; /* dequeued, not yet taken by the driver's ring */
};

static char sh_names[IPC_SVC_MAX_CTR][IPC_CTR_NAME];
static const char *sh_name_ptr[IPC_SVC_MAX_CTR];

static void name_counters(struct sh_proc *p)
{
    unsigned n = 0;
    for (unsigned i = 0; i < SHP_P_N; i++)
        snprintf(sh_names[n++], IPC_CTR_NAME, "%s", shp_pctr_names[i]);
    snprintf(sh_names[n++], IPC_CTR_NAME, "rate");
    snprintf(sh_names[n++], IPC_CTR_NAME, "full_drops");
    for (unsigned c = 0; c < p->s.nclasses; c++)
        for (unsigned k = 0; k < SHP_C_N; k++)
            snprintf(sh_names[n++], IPC_CTR_NAME, "class.%.15s.%s", p->s.cls[c].name, shp_cctr_names[k]);
    for (unsigned i = 0; i < n; i++)
        sh_name_ptr[i] = sh_names[i];
    p->ctr = ipc_svc_counters(&p->svc, sh_name_ptr, n);
}

static void publish(struct sh_proc *p)
{
    _Atomic uint64_t *c = p->ctr;
    for (unsigned i = 0; i < SHP_P_N; i++)
        ipc_st_rlx(&c[i], p->s.p[i]);
    ipc_st_rlx(&c[SHP_I_RATE], p->s.port.rate);
    ipc_st_rlx(&c[SHP_I_FULL_DROPS], p->full_drops);
    for (unsigned k = 0; k < p->s.nclasses; k++)
        for (unsigned j = 0; j < SHP_C_N; j++)
            ipc_st_rlx(&c[SHP_I_CLASS0 + k * SHP_C_N + j], p->s.cls[k].c[j]);
}

/* Apply the mailbox's command if there is a new one. */
static void check_mailbox(struct sh_proc *p, uint64_t now)
{
    struct shp_mbox *mb = p->mbox;
    uint64_t seq = ipc_ld_acq(&mb->seq);
    if (seq == ipc_ld_rlx(&mb->ack))
        return;
    uint64_t cls = ipc_ld_rlx(&mb->cls);
    uint64_t rate = ipc_ld_rlx(&mb->rate);
    uint64_t ceil = ipc_ld_rlx(&mb->ceil);
    /* The mailbox is written by another process: shp_set_rate checks the
     * class index and the rates, and an index past any class is refused. */
    int ret = cls > SHP_MAX_CLASSES ? -EINVAL : shp_set_rate(&p->s, cls == 0 ? -1 : (int)(cls - 1), rate, ceil, now);
    ipc_st_rlx(&mb->result, (uint64_t)(ret < 0 ? -ret : 0));
    publish(p);
    ipc_st_rel(&mb->ack, seq);
    fprintf(stderr, "rr-shaper %s: set %s%s rate %llu ceil %llu: %s\n", p->svc.cfg->name,
            cls ? "class " : "port", cls ? p->s.cls[cls - 1 < p->s.nclasses ? cls - 1 : 0].name : "",
            (unsigned long long)rate, (unsigned long long)ceil, ret < 0 ? strerror(-ret) : "done");
}

/* A restarted shaper resumes the rates its predecessor ran with (left in the stats region). */
static void resume_rates(struct sh_proc *p, uint64_t now)
{
    _Atomic uint64_t *c = p->ctr;
    uint64_t r = ipc_ld_rlx(&c[SHP_I_RATE]);
    if (r && r != p->s.port.rate)
        shp_set_rate(&p->s, -1, r, 0, now);
    for (unsigned k = 0; k < p->s.nclasses; k++) {
        uint64_t cr = ipc_ld_rlx(&c[SHP_I_CLASS0 + k * SHP_C_N + SHP_C_RATE]);
        uint64_t cc = ipc_ld_rlx(&c[SHP_I_CLASS0 + k * SHP_C_N + SHP_C_CEIL]);
        if (cr && cc && cc >= cr)
            shp_set_rate(&p->s, (int)k, cr, cc, now);
    }
    /* Counters carry on from the predecessor's. */
    for (unsigned i = 0; i < SHP_P_N; i++)
        if (i != SHP_P_BACKLOG && i != SHP_P_BACKLOG_BYTES)
            p->s.p[i] = ipc_ld_rlx(&c[i]);
    p->full_drops = ipc_ld_rlx(&c[SHP_I_FULL_DROPS]);
    for (unsigned k = 0; k < p->s.nclasses; k++)
        for (unsigned j = SHP_C_TX_PKTS; j < SHP_C_N; j++)
            if (j != SHP_C_BACKLOG)
                p->s.cls[k].c[j] = ipc_ld_rlx(&c[SHP_I_CLASS0 + k * SHP_C_N + j]);
}

static int sh_setup(struct sh_proc *p, struct ipc_err *err)
{
    int ret = ipc_svc_open(&p->svc, IPC_SVC_SHAPER, err);
    if (ret < 0)
        return ret;
    if (p->svc.n_in < 1 || p->svc.n_out != 1)
        return ipc_errf(err, -EINVAL, "%u input and %u output rings; the shaper needs 1 and 1", p->svc.n_in,
                        p->svc.n_out);
    const struct tbl_shaper_cfg *tc = tbl_cfg_get(&p->svc, TBL_SHAPER_CFG_VERSION, sizeof(*tc), err);
    if (!tc)
        return -EPROTO;
    if ((ret = shp_mbox_attach(tc->mbox_fd, &p->mbox, err)) < 0)
        return ret;
    struct shp_cfg sc = tc->shp;
    /* Bound the backlog by the pool too: a quarter of it at most. */
    uint32_t quarter = p->svc.pool.nbufs / 4;
    if (!sc.limit_pkts)
        sc.limit_pkts = SHP_DEF_LIMIT_PKTS < quarter ? SHP_DEF_LIMIT_PKTS : quarter;
    if (!sc.limit_bytes) {
        uint64_t pool_bytes = (uint64_t)quarter * (p->svc.pool.frame_size - p->svc.pool.headroom);
        sc.limit_bytes = (uint32_t)(pool_bytes < SHP_DEF_LIMIT_BYTES ? pool_bytes : SHP_DEF_LIMIT_BYTES);
    }
    uint64_t now = ipc_svc_now_ns();
    ret = shp_init(&p->s, &p->svc.pool, &sc, now, err);
    if (ret < 0)
        return ret;
    name_counters(p);
    ipc_stage_names(&p->svc, sh_stage_names, SH_ST_N);
    resume_rates(p, now);
    /* A command left unanswered by a dead predecessor is applied now. */
    check_mailbox(p, now);
    publish(p);
    return 0;
}

/* Returns the packets the driver's ring took. */
static uint32_t send_out(struct sh_proc *p)
{
    struct ipc_ring_prod *o = &p->svc.out[0];
    uint32_t sent = ipc_ring_enq_burst(o, p->pend, p->npend);
    if (sent) {
        ipc_wake_mark(&p->svc.wake, o);
        memmove(p->pend, p->pend + sent, (p->npend - sent) * sizeof(ipc_buf));
        p->npend -= sent;
    }
    return sent;
}

static void sh_run(struct sh_proc *p)
{
    int idle = ipc_svc_idle_ms(&p->svc);
    struct ipc_svc *svc = &p->svc;
    while (!stop && !svc->orphan_stop) {
        uint64_t c = ipc_stage_start(svc);
        uint64_t now = ipc_svc_now_ns();
        check_mailbox(p, now);
        bool more_in = false;
        uint32_t in = 0;
        for (unsigned i = 0; i < p->svc.n_in; i++) {
            ipc_buf b[SH_BURST];
            uint32_t n = ipc_ring_recv(&p->svc.in[i], &p->svc.pool, b, SH_BURST);
            if (n) {
                if (ipc_unlikely(ipc_trace_on())) /* `ringrouter trace`: one branch a burst when off */
                    shp_trace_enqueue(&p->s, b, n, now, ipc_cap_.port);
                else
                    shp_enqueue(&p->s, b, n, now);
                in += n;
                if (n == SH_BURST)
                    more_in = true;
            }
        }
        c = ipc_stage_end(svc, SH_ST_ENQUEUE, c, in);
        if (p->npend)
            c = ipc_stage_end(svc, SH_ST_HANDOFF, c, send_out(p));
        if (!p->npend) {
            p->npend = shp_dequeue(&p->s, now, p->pend, SH_BURST);
            c = ipc_stage_end(svc, SH_ST_DEQUEUE, c, p->npend);
            if (p->npend)
                c = ipc_stage_end(svc, SH_ST_HANDOFF, c, send_out(p));
        }
        publish(p);
        c = ipc_stage_end(svc, SH_ST_PUBLISH, c, 0);
        ipc_stage_flush(svc, SH_ST_WAKE, c);
        ipc_svc_beat(&p->svc);
        if (more_in)
            continue;
        /* Sleep until the next departure (rounded up to the next ms: the burst
         * covers the timer's slack), new packets, or the heartbeat. */
        int t = idle;
        if (p->npend) {
            t = 1; /* the driver's ring was full: retry soon, without spinning */
        } else {
            uint64_t next = shp_next_ns(&p->s, ipc_svc_now_ns());
            uint64_t cur = ipc_svc_now_ns();
            if (next != UINT64_MAX) {
                if (next <= cur)
                    continue; /* a batch limit, not the rate, stopped us */
                uint64_t ms = (next - cur + 999999) / 1000000;
                if (ms < (uint64_t)t)
                    t = (int)ms;
            }
        }
        ipc_svc_wait(&p->svc, t);
    }
}

int main(void)
{
    static struct sh_proc p;
    struct ipc_err err = {{0}};
    if (ipc_svc_catch_stop(&stop) < 0) {
        fprintf(stderr, "rr-shaper: blocking SIGTERM and SIGINT for the signalfd: %m\n");
        return 111;
    }
    if (sh_setup(&p, &err) < 0) {
        fprintf(stderr, "rr-shaper: %s\n", err.msg);
        return 111;
    }
    if (ipc_svc_ready(&p.svc, &err) < 0) {
        fprintf(stderr, "rr-shaper: %s\n", err.msg);
        return 111;
    }
    sh_run(&p);
    /* Stopping (shutdown, or `ringrouter restart` for an upgrade): hand the
     * queue to the driver rather than drop it. Its ring may hold less than
     * the backlog, but the driver is running and empties it: wait for room,
     * waking it, for at most SH_STOP_DRAIN_MS, so that a handover under load
     * does not throw away the queue it was meant to keep. What is left then
     * goes back to the pool. */
    uint64_t give_up = ipc_svc_now_ns() + SH_STOP_DRAIN_MS * 1000000ull;
    for (;;) {
        if (!p.npend)
            p.npend = shp_drain(&p.s, p.pend, SH_BURST);
        if (!p.npend)
            break;
        uint32_t before = p.npend;
        send_out(&p);
        if (p.npend != before)
            continue;
        ipc_svc_flush(&p.svc); /* the ring is full: wake the driver, then let it run */
        if (ipc_svc_now_ns() >= give_up)
            break;
        ipc_svc_nap_us(&p.svc, NULL, 0, 200);
    }
    ipc_svc_flush(&p.svc);
    shp_purge(&p.s);
    if (p.npend)
        ipc_pool_free(&p.svc.pool, p.pend, p.npend);
    p.npend = 0;
    publish(&p);
    ipc_svc_close(&p.svc);
    return 0;
}
