/* SPDX-License-Identifier: MIT */
/*
 * services/router/fq.h: an output ring's egress queue, owned by the router
 * (services/router/main.c). It is what Linux's fq qdisc is for a port: a
 * train of one flow that the driver cannot take as fast as we route waits
 * here, in its flow's bucket, and the other flows' packets (a ping, a TCP
 * ACK) are served between its packets rather than behind the whole train.
 *
 *   - a packet goes to bucket k (the caller hashes its flow into
 *     [0, RT_FQ_BUCKETS)), and a bucket is a FIFO: a flow keeps its order;
 *   - buckets with packets are served round-robin, RT_FQ_QUANTUM packets
 *     a turn;
 *   - full (limit packets), the oldest packet of the longest bucket is
 *     dropped: the flow that fills the queue pays for it, as in fq_codel.
 *
 * The buckets are lists threaded through @next, an array the caller owns,
 * indexed by buffer handle (the pool's size): one entry per buffer is
 * enough for every queue, since a buffer is in one queue at most. Nothing
 * here is in shared memory; the handles come from the router's own rings
 * after the pool's checks, so they are below the pool's size.
 */
#ifndef RT_FQ_H
#define RT_FQ_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/ring.h"

#define RT_FQ_BUCKETS 64u
#define RT_FQ_QUANTUM 8u /* packets a bucket sends per turn */

struct rt_fq {
    uint32_t held;  /* packets in every bucket */
    uint32_t limit; /* the most held at once */
    ipc_buf head[RT_FQ_BUCKETS], tail[RT_FQ_BUCKETS];
    uint32_t len[RT_FQ_BUCKETS];
    /* Buckets waiting for a turn, in turn order: [rr_head, rr_head + n_rr)
     * modulo RT_FQ_BUCKETS. A bucket is listed at most once. */
    uint8_t rr[RT_FQ_BUCKETS];
    uint32_t rr_head, n_rr;
    uint32_t credit; /* packets left in the turn of the bucket at rr_head */
    bool listed[RT_FQ_BUCKETS];
};

/** An empty queue that holds at most @limit packets (at least 1). */
void rt_fq_init(struct rt_fq *q, uint32_t limit);

/**
 * Queue @b in bucket @k (< RT_FQ_BUCKETS). When the queue was full, returns
 * the packet dropped to make room (the oldest of the longest bucket, which
 * may be @b's own), for the caller to count and free; IPC_BUF_NONE otherwise.
 */
ipc_buf rt_fq_push(struct rt_fq *q, ipc_buf *next, unsigned k, ipc_buf b);

/** Take up to @n packets in turn order into @out. Returns how many. */
uint32_t rt_fq_pop(struct rt_fq *q, ipc_buf *next, ipc_buf *out, uint32_t n);

#endif
