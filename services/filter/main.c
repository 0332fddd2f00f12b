/* SPDX-License-Identifier: MIT */
/*
 * services/filter/main.c: rr-filter, the stateful filter and NAT on every
 * port's path (docs/filter.md). It runs libfilter over handles, zero-copy:
 *
 *   ingress ("rx-P" from P's driver, to the router on "fi-P"): prerouting
 *     (destination NAT), then input when the packet is for the router;
 *   egress ("fo-P" from the router, to P's driver on "tx-P"): forward, then
 *     postrouting (source NAT, confirmation). The router's own packets
 *     (its source address is the router's) meet postrouting only.
 *
 * A packet's connection goes from its ingress to its egress in its buffer's
 * metadata: user[0] holds the connection word and generation libfilter
 * returned, and mark a key derived from them, so that a buffer whose
 * user[0] another packet left (the router's fragments and segments copy
 * mark, not user[]) is tracked afresh rather than taken for another flow.
 * user[1] holds the mark a prerouting rule set (meta mark set); the egress
 * leaves the packet's mark in mark, for a shaper after it to classify by.
 *
 * The connection table lives in a region the supervisor keeps (tables/
 * filter.h): a new instance (a restart, a standby's promotion, an
 * upgrade) adopts it after walking it whole (flt_ct_attach), or, if it
 * fails, formats it empty and says so. A table found corrupt while running
 * (an index out of bounds) ends the process: it is rebuilt by the next one.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ipc/stage.h"
#include "ipc/svc.h"
#include "services/filter/flt_int.h"
#include "tables/config.h"
#include "tables/filter.h"

_Static_assert(TBL_FLT_CT_MAGIC == FLT_CT_MAGIC && TBL_FLT_CT_VERSION == FLT_CT_VERSION, "the supervisor's copy");
_Static_assert(sizeof(struct ct_hdr) == TBL_FLT_CT_HDR_SIZE, "the supervisor's copy of the header size");
_Static_assert(offsetof(struct ct_hdr, total_size) == offsetof(struct tbl_flt_ct_head, total_size) &&
                   offsetof(struct ct_hdr, nentries) == offsetof(struct tbl_flt_ct_head, nentries) &&
                   offsetof(struct ct_hdr, entry_size) == offsetof(struct tbl_flt_ct_head, entry_size),
               "the supervisor's view of the header");

#define FL_BURST 64u
#define FL_MARK 0x52464c54u /* "RFLT" */
/* The sweep passes over the whole table once every FL_SWEEP_MS, at most
 * FL_SWEEP_MAX entries a loop: a pace that follows the clock, not the
 * loops, so that a busy loop does not walk cold entries on every batch
 * (lookups expire what they meet anyway, and a full table drops early). */
#define FL_SWEEP_MS 1000u
#define FL_SWEEP_MAX 4096u

static volatile sig_atomic_t stop;

enum fl_stage { FL_ST_INGRESS, FL_ST_EGRESS, FL_ST_HANDOFF, FL_ST_PUBLISH, FL_ST_WAKE, FL_ST_N };
static const char *const fl_stage_names[FL_ST_N] = {
    [FL_ST_INGRESS] = "ingress", [FL_ST_EGRESS] = "egress", [FL_ST_HANDOFF] = "handoff",
    [FL_ST_PUBLISH] = "publish", [FL_ST_WAKE] = "wake",
};

/* Counters (docs/stats.md): these, then rule.HOOK.N.pkts/bytes per rule. */
enum {
    FC_ACCEPT, FC_DROP, FC_REJECT,
    FC_REASON0, /* drop_REASON for each enum flt_reason but none */
    FC_CT_NEW = FC_REASON0 + FLT_R_MAX - 1,
    FC_CT_EARLY_DROP, FC_CT_EXPIRED, FC_CT_COUNT, FC_CT_ADOPTED, FC_CT_REBUILT, FC_FULL_DROPS, FC_N
};
static const char *const fc_reason[FLT_R_MAX] = {
    [FLT_R_RULE] = "drop_rule", [FLT_R_MALFORMED] = "drop_malformed", [FLT_R_FRAGMENT] = "drop_fragment",
    [FLT_R_TCP_STATE] = "drop_tcp_state", [FLT_R_TCP_WINDOW] = "drop_tcp_window",
    [FLT_R_TABLE_FULL] = "drop_table_full", [FLT_R_NAT_PORTS] = "drop_nat_ports", [FLT_R_CORRUPT] = "drop_corrupt",
};
static const char *const fc_hook[FLT_NHOOKS] = {"prerouting", "input", "forward", "postrouting"};

struct fl_rule_ref {
    uint8_t hook;
    uint16_t idx;
};

struct fl_proc {
    struct ipc_svc svc;
    const struct tbl_filter_cfg *tc;
    struct flt *f;
    struct flt_rules *rules;
    void *ct;
    struct flt_port ports[FLT_MAX_PORTS];
    unsigned nports;
    _Atomic uint64_t *ctr;
    unsigned nctr;
    uint64_t base[IPC_SVC_MAX_CTR]; /* the predecessor's counts: ours add to them */
    struct fl_rule_ref rule[IPC_SVC_MAX_CTR / 2];
    unsigned nrules;
    uint64_t verdicts[3]; /* per packet: accepted, dropped, rejected */
    uint64_t full_drops, adopted, rebuilt;
    uint64_t swept_ms, published_ms; /* the loop's last sweep and publish */
    uint32_t npend[IPC_SVC_MAX_RINGS];
    ipc_buf pend[IPC_SVC_MAX_RINGS][FL_BURST]; /* accepted, not yet taken by the output ring */
};

static char fl_names[IPC_SVC_MAX_CTR][IPC_CTR_NAME];
static const char *fl_name_ptr[IPC_SVC_MAX_CTR];

static void name_counters(struct fl_proc *p)
{
    unsigned n = 0;
    snprintf(fl_names[n++], IPC_CTR_NAME, "accepted");
    snprintf(fl_names[n++], IPC_CTR_NAME, "dropped");
    snprintf(fl_names[n++], IPC_CTR_NAME, "rejected");
    for (unsigned r = 1; r < FLT_R_MAX; r++)
        snprintf(fl_names[n++], IPC_CTR_NAME, "%s", fc_reason[r]);
    const char *rest[] = {"ct_new", "ct_early_drop", "ct_expired", "ct_count", "ct_adopted", "ct_rebuilt",
                          "full_drops"};
    for (unsigned i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
        snprintf(fl_names[n++], IPC_CTR_NAME, "%s", rest[i]);
    p->nrules = 0;
    for (unsigned h = 0; h < FLT_NHOOKS; h++)
        for (unsigned i = 0; i < flt_rules_count(p->rules, (enum flt_hook)h) && n + 2 <= IPC_SVC_MAX_CTR; i++) {
            p->rule[p->nrules++] = (struct fl_rule_ref){.hook = (uint8_t)h, .idx = (uint16_t)i};
            snprintf(fl_names[n++], IPC_CTR_NAME, "rule.%s.%u.pkts", fc_hook[h], i);
            snprintf(fl_names[n++], IPC_CTR_NAME, "rule.%s.%u.bytes", fc_hook[h], i);
        }
    for (unsigned i = 0; i < n; i++)
        fl_name_ptr[i] = fl_names[i];
    /* A predecessor with the same counters: ours carry its counts on. */
    struct ipc_svc_stats *st = p->svc.stats;
    bool same = ipc_ld_acq(&st->nctr) == n;
    for (unsigned i = 0; same && i < n; i++)
        same = strncmp(st->ctr_name[i], fl_names[i], IPC_CTR_NAME) == 0;
    for (unsigned i = 0; same && i < n; i++)
        p->base[i] = i == FC_CT_COUNT || i == FC_CT_ADOPTED || i == FC_CT_REBUILT ? 0 : ipc_ld_rlx(&st->ctr[i]);
    p->ctr = ipc_svc_counters(&p->svc, fl_name_ptr, n);
    p->nctr = n;
}

static void publish(struct fl_proc *p)
{
    const struct flt_stats *s = flt_get_stats(p->f);
    uint64_t v[IPC_SVC_MAX_CTR];
    unsigned n = 0;
    for (unsigned i = 0; i < 3; i++)
        v[n++] = p->verdicts[i];
    for (unsigned r = 1; r < FLT_R_MAX; r++)
        v[n++] = s->reason[r];
    v[n++] = s->ct_new;
    v[n++] = s->ct_early_drop;
    v[n++] = s->ct_expired;
    v[n++] = flt_ct_count(p->ct);
    v[n++] = p->adopted;
    v[n++] = p->rebuilt;
    v[n++] = p->full_drops;
    for (unsigned k = 0; k < p->nrules && n + 2 <= p->nctr; k++) {
        uint64_t pk = 0, by = 0;
        flt_rules_counter(p->rules, (enum flt_hook)p->rule[k].hook, p->rule[k].idx, &pk, &by);
        v[n++] = pk;
        v[n++] = by;
    }
    for (unsigned i = 0; i < n && i < p->nctr; i++)
        ipc_st_rlx(&p->ctr[i], p->base[i] + v[i]);
}

/* The table: adopted, or formatted anew (and why, in the log). */
static int ct_setup(struct fl_proc *p, struct ipc_err *err)
{
    const struct tbl_filter_cfg *tc = p->tc;
    if (tc->ct_size != flt_ct_region_size(tc->ct_entries))
        return ipc_errf(err, -EPROTO, "connection table: %llu bytes for %u entries",
                        (unsigned long long)tc->ct_size, tc->ct_entries);
    p->ct = mmap(NULL, tc->ct_size, PROT_READ | PROT_WRITE, MAP_SHARED, tc->ct_fd, 0);
    if (p->ct == MAP_FAILED)
        return ipc_errf(err, -errno, "connection table: mmap %llu bytes: %s", (unsigned long long)tc->ct_size,
                        strerror(errno));
    const char *name = p->svc.cfg->name;
    if (flt_ct_attach(p->ct, tc->ct_size) == 0) {
        p->adopted = flt_ct_count(p->ct);
        fprintf(stderr, "%s: adopted the connection table: %llu connections\n", name,
                (unsigned long long)p->adopted);
        return 0;
    }
    bool blank = ((const struct ct_hdr *)p->ct)->magic == 0;
    if (flt_ct_format(p->ct, tc->ct_size, tc->ct_entries, tc->ct_seed) < 0)
        return ipc_errf(err, -EINVAL, "connection table: cannot format %u entries", tc->ct_entries);
    if (!blank) {
        p->rebuilt = 1;
        fprintf(stderr, "%s: the connection table failed its check: rebuilt empty, its connections are lost\n", name);
    } else {
        fprintf(stderr, "%s: a new connection table of %u entries\n", name, tc->ct_entries);
    }
    return 0;
}

static int fl_setup(struct fl_proc *p, struct ipc_err *err)
{
    int ret = ipc_svc_open(&p->svc, IPC_SVC_FILTER, err);
    if (ret < 0)
        return ret;
    const struct tbl_filter_cfg *tc = tbl_cfg_get(&p->svc, TBL_FILTER_CFG_VERSION, sizeof(*tc), err);
    if (!tc)
        return -EPROTO;
    p->tc = tc;
    const struct ipc_svc_config *cfg = p->svc.cfg;
    if (p->svc.n_in != p->svc.n_out || tc->rules_len > TBL_FLT_RULES_MAX)
        return ipc_errf(err, -EINVAL, "%u input and %u output rings (pairs), %u bytes of rules", p->svc.n_in,
                        p->svc.n_out, tc->rules_len);
    for (unsigned i = 0; i < p->svc.n_in; i++)
        if (tc->pair[i] >= p->svc.n_out || (tc->role[i] != TBL_FLT_INGRESS && tc->role[i] != TBL_FLT_EGRESS))
            return ipc_errf(err, -EINVAL, "input ring %u: role %u, pair %u", i, tc->role[i], tc->pair[i]);
    p->nports = cfg->nports < FLT_MAX_PORTS ? cfg->nports : FLT_MAX_PORTS;
    for (unsigned i = 0; i < p->nports; i++) {
        const struct ipc_svc_port *sp = &cfg->ports[i];
        struct flt_port *fp = &p->ports[i];
        snprintf(fp->name, sizeof(fp->name), "%.15s", sp->name);
        memcpy(fp->mac, sp->mac, 6);
        fp->has_v4 = sp->addr != 0;
        for (int b = 0; b < 4; b++)
            fp->v4[b] = (uint8_t)(sp->addr >> (24 - 8 * b));
        if (i < IPC_MAX_PORTS && tc->naddr6[i] && !(tc->addr6[i][0][0] == 0xfe && (tc->addr6[i][0][1] & 0xc0) == 0x80)) {
            fp->has_v6 = 1;
            memcpy(fp->v6, tc->addr6[i][0], 16);
        }
    }
    char why[256];
    p->rules = flt_rules_compile(tc->rules, tc->rules_len, p->ports, p->nports, why, sizeof(why));
    if (!p->rules)
        return ipc_errf(err, -EINVAL, "rules: %s", why);
    if ((ret = ct_setup(p, err)) < 0)
        return ret;
    p->f = flt_new(p->ct, p->ports, p->nports, p->rules);
    if (!p->f)
        return ipc_errf(err, -ENOMEM, "flt_new");
    name_counters(p);
    ipc_stage_names(&p->svc, fl_stage_names, FL_ST_N);
    publish(p);
    return 0;
}

/* Is @d (an Ethernet frame of @len bytes) from one of the router's own
 * addresses (@src) or for one, or for a group or broadcast (!@src)? */
static bool is_router_addr(const struct fl_proc *p, const uint8_t *d, uint32_t len, bool src)
{
    uint32_t l3 = 14;
    if (len >= 18 && d[12] == 0x81 && d[13] == 0x00)
        l3 = 18;
    uint16_t et = (uint16_t)(d[l3 - 2] << 8 | d[l3 - 1]);
    if (et == 0x0800 && len >= l3 + 20) {
        const uint8_t *a = d + l3 + (src ? 12 : 16);
        if (!src && (a[0] >= 224 || (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)))
            return true;
        for (unsigned i = 0; i < p->nports; i++)
            if (p->ports[i].has_v4 && memcmp(a, p->ports[i].v4, 4) == 0)
                return true;
        return false;
    }
    if (et == 0x86dd && len >= l3 + 40) {
        const uint8_t *a = d + l3 + (src ? 8 : 24);
        if (!src && a[0] == 0xff)
            return true;
        for (unsigned i = 0; i < p->nports && i < IPC_MAX_PORTS; i++)
            for (unsigned k = 0; k < p->tc->naddr6[i] && k < TBL_FLT_ADDR6; k++)
                if (memcmp(a, p->tc->addr6[i][k], 16) == 0)
                    return true;
    }
    return false;
}

static uint32_t ct_key(uint64_t word)
{
    return FL_MARK ^ (uint32_t)((word * 0x9e3779b97f4a7c15ull) >> 32);
}

/* Accepted packets onto output ring @o, through its backlog. */
static void emit(struct fl_proc *p, unsigned o, ipc_buf b)
{
    if (p->npend[o] == FL_BURST) { /* the loop empties it first: only a reject's reply can find it full */
        ipc_pool_free(&p->svc.pool, &b, 1);
        p->full_drops++;
        return;
    }
    p->pend[o][p->npend[o]++] = b;
}

static uint32_t send_out(struct fl_proc *p, unsigned o)
{
    if (!p->npend[o])
        return 0;
    struct ipc_ring_prod *r = &p->svc.out[o];
    uint32_t sent = ipc_ring_enq_burst(r, p->pend[o], p->npend[o]);
    if (sent) {
        ipc_wake_mark(&p->svc.wake, r);
        memmove(p->pend[o], p->pend[o] + sent, (p->npend[o] - sent) * sizeof(ipc_buf));
        p->npend[o] -= sent;
    }
    return sent;
}

/* A packet of input ring @i with its verdict @v: where it goes. */
static void route(struct fl_proc *p, unsigned i, ipc_buf b, const struct flt_pkt *pk, enum flt_verdict v)
{
    struct ipc_pool *pool = &p->svc.pool;
    p->verdicts[(unsigned)v % 3u]++;
    if (v == FLT_ACCEPT) {
        emit(p, p->tc->pair[i], b);
        return;
    }
    if (v == FLT_REJECT && pk->iif < IPC_MAX_PORTS && p->tc->reject_out[pk->iif] < p->svc.n_out) {
        struct ipc_meta *m = ipc_pool_meta(pool, b);
        m->len = (uint16_t)pk->len;
        m->pkt_len = pk->len;
        m->out_port = pk->iif;
        m->mark = 0;
        emit(p, p->tc->reject_out[pk->iif], b);
        return;
    }
    ipc_pool_free(pool, &b, 1);
}

static bool for_router(void *ctx, const struct flt_pkt *pk)
{
    return is_router_addr(ctx, pk->data, pk->len, false);
}

/* A burst of input ring @i: prerouting over the whole burst at once (its
 * lookups prefetched together), input for what is the router's; or, at
 * an egress, forward and postrouting, each connection's entry prefetched
 * a burst ahead. */
static void burst(struct fl_proc *p, unsigned i, const ipc_buf *b, uint32_t n, uint64_t now_ms)
{
    struct ipc_pool *pool = &p->svc.pool;
    struct flt_pkt pk[FL_BURST];
    bool local[FL_BURST];
    if (p->tc->role[i] == TBL_FLT_INGRESS) {
        for (uint32_t k = 0; k < n; k++) {
            struct ipc_meta *m = ipc_pool_meta(pool, b[k]);
            pk[k] = (struct flt_pkt){.data = ipc_pool_data(pool, b[k]), .len = m->len,
                                     .cap = pool->frame_size - m->off, .iif = m->in_port, .oif = IPC_PORT_NONE};
        }
        flt_process_many(p->f, pk, n, FLT_PRE, now_ms, for_router, p);
        for (uint32_t k = 0; k < n; k++) {
            enum flt_verdict v = (enum flt_verdict)pk[k].verdict;
            struct ipc_meta *m = ipc_pool_meta(pool, b[k]);
            uint64_t w = (uint64_t)pk[k].ctgen << 32 | pk[k].ct;
            m->user[0] = w;
            m->user[1] = pk[k].mark; /* a prerouting meta mark set, for the egress */
            m->mark = ct_key(w);
            route(p, i, b[k], &pk[k], v);
        }
        return;
    }
    for (uint32_t k = 0; k < n; k++) {
        struct ipc_meta *m = ipc_pool_meta(pool, b[k]);
        pk[k] = (struct flt_pkt){.data = ipc_pool_data(pool, b[k]), .len = m->len, .cap = pool->frame_size - m->off,
                                 .iif = m->in_port, .oif = m->out_port};
        local[k] = is_router_addr(p, pk[k].data, pk[k].len, true);
        if (!local[k] && m->mark == ct_key(m->user[0])) {
            pk[k].ct = (uint32_t)m->user[0];
            pk[k].ctgen = (uint32_t)(m->user[0] >> 32);
            pk[k].mark = (uint32_t)m->user[1];
            flt_prefetch_ct(p->f, pk[k].ct);
        }
        m->mark = 0;
    }
    for (uint32_t k = 0; k < n; k++) {
        enum flt_verdict v = local[k] ? flt_process(p->f, &pk[k], FLT_POST, now_ms) : flt_process_out(p->f, &pk[k], now_ms);
        /* the shaper's class match after us (tables/shaper.h), 0: unmarked */
        ipc_pool_meta(pool, b[k])->mark = pk[k].mark;
        route(p, i, b[k], &pk[k], v);
    }
}

static void sweep(struct fl_proc *p, uint64_t now_ms)
{
    if (now_ms == p->swept_ms)
        return;
    uint64_t n = (now_ms - p->swept_ms) * p->tc->ct_entries / FL_SWEEP_MS + 1;
    p->swept_ms = now_ms;
    flt_ct_sweep(p->f, now_ms, n < FL_SWEEP_MAX ? (unsigned)n : FL_SWEEP_MAX);
}

static void fl_run(struct fl_proc *p)
{
    struct ipc_svc *svc = &p->svc;
    int idle = ipc_svc_idle_ms(svc);
    while (!stop && !svc->orphan_stop) {
        uint64_t c = ipc_stage_start(svc);
        uint64_t now_ms = ipc_svc_now_ns() / 1000000u;
        bool more = false, held = false;
        uint32_t moved = 0;
        for (unsigned i = 0; i < svc->n_in; i++) {
            unsigned o = p->tc->pair[i];
            send_out(p, o);
            if (p->npend[o]) { /* its output ring is full: leave the input where it is */
                held = true;
                continue;
            }
            ipc_buf b[FL_BURST];
            uint32_t n = ipc_ring_recv(&svc->in[i], &svc->pool, b, FL_BURST);
            if (!n)
                continue;
            burst(p, i, b, n, now_ms);
            moved += n;
            more |= n == FL_BURST;
            c = ipc_stage_end(svc, p->tc->role[i] == TBL_FLT_INGRESS ? FL_ST_INGRESS : FL_ST_EGRESS, c, n);
            uint32_t sent = 0;
            for (unsigned k = 0; k < svc->n_out; k++)
                sent += send_out(p, k);
            c = ipc_stage_end(svc, FL_ST_HANDOFF, c, sent);
        }
        sweep(p, now_ms);
        if (ipc_unlikely(flt_get_stats(p->f)->reason[FLT_R_CORRUPT])) {
            fprintf(stderr, "%s: the connection table is corrupt (an index out of its bounds): ending, so that "
                            "the next instance rebuilds it\n", svc->cfg->name);
            abort();
        }
        bool again = more || (moved && !held);
        /* Counters once a millisecond while busy, and always before a
         * sleep: what a reader sees is never older than the last batch. */
        if (!again || now_ms != p->published_ms) {
            publish(p);
            p->published_ms = now_ms;
        }
        c = ipc_stage_end(svc, FL_ST_PUBLISH, c, 0);
        ipc_stage_flush(svc, FL_ST_WAKE, c);
        ipc_svc_beat(svc);
        if (again)
            continue;
        ipc_svc_wait(svc, held ? 1 : idle);
    }
}

int main(void)
{
    static struct fl_proc p;
    struct ipc_err err = {{0}};
    if (ipc_svc_catch_stop(&stop) < 0) {
        fprintf(stderr, "rr-filter: blocking SIGTERM and SIGINT for the signalfd: %m\n");
        return 111;
    }
    if (fl_setup(&p, &err) < 0 || ipc_svc_ready(&p.svc, &err) < 0) {
        fprintf(stderr, "rr-filter: %s\n", err.msg);
        return 111;
    }
    fl_run(&p);
    /* Stopping: what the output rings take now goes on; the rest goes back
     * to the pool. The table stays in its region for the next instance. */
    for (unsigned o = 0; o < p.svc.n_out; o++) {
        send_out(&p, o);
        if (p.npend[o])
            ipc_pool_free(&p.svc.pool, p.pend[o], p.npend[o]);
        p.npend[o] = 0;
    }
    ipc_svc_flush(&p.svc);
    publish(&p);
    ipc_svc_close(&p.svc);
    return 0;
}
