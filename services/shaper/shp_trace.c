/* SPDX-License-Identifier: MIT */
/*
 * services/shaper/shp_trace.c: the shaper's stage of `ringrouter trace`
 * (ipc/trace.h), which the loop calls instead of shp_enqueue while a trace
 * runs: for each traced packet of the burst, the class and flow queue
 * shp_enqueue will put it in, worked out by the functions it calls, before
 * it runs (a drop in it may free the packet). The records wait for the
 * burst's end for its cycles per packet; a drop records itself (drop_buf,
 * shp.c).
 */
#include "services/shaper/shp.h"

#include <stdio.h>

#include "ipc/trace.h"

void shp_trace_enqueue(struct shp *s, const ipc_buf *bufs, uint32_t n, uint64_t now, uint16_t port)
{
    static struct ipc_trace_batch tb;
    ipc_trace_begin(&tb);
    for (uint32_t i = 0; i < n; i++) {
        if (bufs[i] >= s->pool->nbufs)
            continue;
        const struct ipc_meta *m = ipc_pool_meta(s->pool, bufs[i]);
        if (!ipc_trace_id(m))
            continue;
        struct ipc_trace_rec *r = ipc_trace_add(&tb, s->pool, bufs[i], IPC_TR_SHAPE);
        if (!r)
            break;
        struct shp_pkt pk;
        shp_parse(ipc_pool_data(s->pool, bufs[i]), m->len, &pk);
        pk.mark = m->mark;
        uint32_t c = shp_classify(s, &pk);
        r->verdict = IPC_TV_QUEUED;
        r->port = port;
        r->queue = (uint16_t)shp_flow_of(&pk, c);
        if (c < s->nclasses)
            snprintf(r->note, sizeof(r->note), "%.*s", (int)sizeof(r->note) - 1, s->cls[c].name);
    }
    shp_enqueue(s, bufs, n, now);
    ipc_trace_end(&tb, n);
}
