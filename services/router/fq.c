/* SPDX-License-Identifier: MIT */
/* services/router/fq.c: an output ring's egress queue (fq.h). */
#include "services/router/fq.h"

#include <string.h>

#define RT_FQ_MASK (RT_FQ_BUCKETS - 1)
_Static_assert((RT_FQ_BUCKETS & RT_FQ_MASK) == 0 && RT_FQ_BUCKETS <= 256, "a power of two, a byte's worth");

void rt_fq_init(struct rt_fq *q, uint32_t limit)
{
    memset(q, 0, sizeof(*q));
    q->limit = limit ? limit : 1;
    q->credit = RT_FQ_QUANTUM;
}

ipc_buf rt_fq_push(struct rt_fq *q, ipc_buf *next, unsigned k, ipc_buf b)
{
    next[b] = IPC_BUF_NONE;
    if (q->len[k])
        next[q->tail[k]] = b;
    else
        q->head[k] = b;
    q->tail[k] = b;
    q->len[k]++;
    q->held++;
    if (!q->listed[k]) {
        if (q->n_rr == 0)
            q->credit = RT_FQ_QUANTUM; /* a new round: its first turn is whole */
        q->rr[(q->rr_head + q->n_rr++) & RT_FQ_MASK] = (uint8_t)k;
        q->listed[k] = true;
    }
    if (q->held <= q->limit)
        return IPC_BUF_NONE;
    /* Full: the longest bucket gives up its oldest. It stays listed even if
     * that empties it; its turn then passes (rt_fq_pop). */
    unsigned f = k;
    for (unsigned i = 0; i < RT_FQ_BUCKETS; i++)
        if (q->len[i] > q->len[f])
            f = i;
    ipc_buf d = q->head[f];
    q->head[f] = next[d];
    q->len[f]--;
    q->held--;
    return d;
}

uint32_t rt_fq_pop(struct rt_fq *q, ipc_buf *next, ipc_buf *out, uint32_t n)
{
    uint32_t got = 0;
    /* Every bucket with packets is listed, so while any are held the turn
     * comes round to one within a pass of the list. */
    while (got < n && q->held) {
        unsigned k = q->rr[q->rr_head & RT_FQ_MASK];
        if (q->len[k] == 0 || q->credit == 0) {
            q->rr_head++;
            q->n_rr--;
            if (q->len[k])
                q->rr[(q->rr_head + q->n_rr++) & RT_FQ_MASK] = (uint8_t)k; /* to the back */
            else
                q->listed[k] = false;
            q->credit = RT_FQ_QUANTUM;
            continue;
        }
        ipc_buf b = q->head[k];
        q->head[k] = next[b];
        q->len[k]--;
        q->held--;
        q->credit--;
        out[got++] = b;
    }
    return got;
}
