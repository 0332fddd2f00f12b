/* SPDX-License-Identifier: MIT */
/*
 * ipc/trace.c: the trace ring's two ends (trace.h): the driver's mark, the
 * records every stage appends, and the client's checked take. The region
 * is the capture region (capture.h); its control block is written by the
 * supervisor and, in its mapping, by a root client, so the service bounds
 * what it reads there: the program is checked as it runs, the ids are only
 * labels, a tail past the head reads as a full ring.
 */
#include "trace.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "stage.h"

static uint64_t now_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ipc_trace_put(struct ipc_trace_rec *r)
{
    struct ipc_cap *c = ipc_cap_.cap;
    uint64_t head = ipc_ld_rlx(&c->tr_head), tail = ipc_ld_acq(&c->tr_tail);
    if (head - tail >= IPC_TRACE_SLOTS) { /* full, or a tail the reader spoiled */
        ipc_count(&c->tr_lost, 1);
        return;
    }
    if (!r->ts_ns)
        r->ts_ns = now_real();
    if (!r->tsc)
        r->tsc = ipc_cycles();
    c->tr_rec[head & (IPC_TRACE_SLOTS - 1)] = *r;
    ipc_st_rel(&c->tr_head, head + 1);
}

/* A record of @b's common fields; the caller adds its stage's. */
static void rec_init(struct ipc_trace_rec *r, const struct ipc_pool *pool, ipc_buf b, uint8_t stage)
{
    const struct ipc_meta *m = ipc_pool_meta(pool, b);
    memset(r, 0, sizeof(*r));
    r->id = ipc_trace_id(m);
    r->stage = stage;
    r->len = m->next == IPC_BUF_NONE ? m->len : m->pkt_len;
    r->port = m->in_port;
    r->out_port = m->out_port;
}

void ipc_trace_rx(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n, uint16_t port)
{
    struct ipc_cap *c = ipc_cap_.cap;
    uint32_t nins = c->tr_nins;
    for (uint32_t i = 0; i < n; i++) {
        if (bufs[i] >= pool->nbufs)
            continue;
        struct ipc_meta *m = ipc_pool_meta(pool, bufs[i]);
        m->flags = 0;
        uint32_t next = c->tr_next, end = c->tr_end;
        if (next == 0 || next >= end || end - 1 > IPC_TRACE_ID_MAX)
            continue; /* no ids left (or none that fit the metadata) */
        if ((uint32_t)m->off + m->len > pool->frame_size)
            continue;
        const uint8_t *d = ipc_pool_data(pool, bufs[i]);
        uint32_t wire = m->next == IPC_BUF_NONE ? m->len : m->pkt_len;
        if (nins && !ipc_cap_bpf_run(c->tr_prog, nins, d, m->len, wire))
            continue;
        c->tr_next = next + 1;
        m->flags = (uint16_t)next;
        struct ipc_trace_rec r;
        rec_init(&r, pool, bufs[i], IPC_TR_RX);
        r.port = port;
        r.queue = c->tr_queue;
        memcpy(r.hdr, d, m->len < IPC_TRACE_HDR ? m->len : IPC_TRACE_HDR);
        ipc_trace_put(&r);
    }
}

void ipc_trace_tx(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n, uint16_t port)
{
    for (uint32_t i = 0; i < n; i++) {
        if (bufs[i] >= pool->nbufs || !ipc_trace_id(ipc_pool_meta(pool, bufs[i])))
            continue;
        struct ipc_trace_rec r;
        rec_init(&r, pool, bufs[i], IPC_TR_TX);
        r.port = port;
        r.queue = ipc_cap_.cap->tr_queue;
        ipc_trace_put(&r);
    }
}

void ipc_trace_drop(struct ipc_pool *pool, ipc_buf b, uint16_t port, const char *why)
{
    if (b >= pool->nbufs || !ipc_trace_id(ipc_pool_meta(pool, b)))
        return;
    struct ipc_trace_rec r;
    rec_init(&r, pool, b, IPC_TR_DROP);
    r.port = port;
    if (why)
        strncpy(r.note, why, sizeof(r.note) - 1);
    ipc_trace_put(&r);
}

void ipc_trace_begin(struct ipc_trace_batch *tb)
{
    tb->n = 0;
    tb->ts0 = 0;
    tb->t0 = ipc_cycles();
}

struct ipc_trace_rec *ipc_trace_add(struct ipc_trace_batch *tb, const struct ipc_pool *pool, ipc_buf b, uint8_t stage)
{
    if (tb->n >= IPC_TRACE_BATCH || b >= pool->nbufs)
        return NULL;
    if (!tb->ts0)
        tb->ts0 = now_real();
    struct ipc_trace_rec *r = &tb->rec[tb->n++];
    rec_init(r, pool, b, stage);
    r->tsc = tb->t0;
    r->ts_ns = tb->ts0;
    return r;
}

void ipc_trace_end(struct ipc_trace_batch *tb, uint32_t pkts)
{
    if (!tb->n)
        return;
    uint64_t cost = pkts ? (ipc_cycles() - tb->t0) / pkts : 0;
    for (uint32_t i = 0; i < tb->n; i++) {
        tb->rec[i].cost = cost > UINT32_MAX ? UINT32_MAX : (uint32_t)cost;
        ipc_trace_put(&tb->rec[i]);
    }
    tb->n = 0;
}

/* ---- the client's end ---------------------------------------------------- */

int ipc_trace_take(struct ipc_cap *c, struct ipc_trace_rec *r, uint64_t *skipped)
{
    uint64_t tail = ipc_ld_rlx(&c->tr_tail), head = ipc_ld_acq(&c->tr_head);
    *skipped = 0;
    if (head == tail)
        return 0;
    if (head - tail > IPC_TRACE_SLOTS) {
        *skipped = head - tail > IPC_TRACE_SLOTS * 16ull ? 0 : head - tail;
        ipc_st_rel(&c->tr_tail, head);
        return -EPROTO;
    }
    memcpy(r, &c->tr_rec[tail & (IPC_TRACE_SLOTS - 1)], sizeof(*r));
    ipc_st_rel(&c->tr_tail, tail + 1);
    if (r->stage >= IPC_TR_N)
        r->stage = 0;
    if (r->verdict >= IPC_TV_N)
        r->verdict = IPC_TV_NONE;
    if (r->family != 4 && r->family != 6)
        r->family = 0;
    if (r->plen > (r->family == 6 ? 128 : 32))
        r->plen = 0;
    r->note[sizeof(r->note) - 1] = '\0';
    for (char *p = r->note; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            *p = '?';
    return 1;
}

const char *ipc_trace_stage_name(unsigned stage)
{
    static const char *const names[IPC_TR_N] = {
        [0] = "?", [IPC_TR_RX] = "rx", [IPC_TR_ROUTE] = "route", [IPC_TR_ICMP] = "icmp",
        [IPC_TR_DROP] = "drop", [IPC_TR_SHAPE] = "shape", [IPC_TR_TX] = "tx",
    };
    return stage < IPC_TR_N ? names[stage] : "?";
}

const char *ipc_trace_verdict_name(unsigned verdict)
{
    static const char *const names[IPC_TV_N] = {
        [IPC_TV_NONE] = "-", [IPC_TV_FORWARD] = "forward", [IPC_TV_LOCAL] = "local",
        [IPC_TV_ARP] = "arp", [IPC_TV_IPV6] = "ipv6", [IPC_TV_PUNT] = "punt to the control namespace",
        [IPC_TV_DROP] = "invalid", [IPC_TV_TTL] = "ttl expires", [IPC_TV_NO_ROUTE] = "no route",
        [IPC_TV_SENT] = "sent", [IPC_TV_RATE_LIMITED] = "rate-limited", [IPC_TV_SUPPRESSED] = "suppressed",
        [IPC_TV_QUEUED] = "queued",
    };
    return verdict < IPC_TV_N ? names[verdict] : "?";
}
