/* SPDX-License-Identifier: MIT */
/*
 * ipc/pool_impl.h: what the pool's two halves share, the data path's
 * (ipc/pool.c) and the supervisor's audit (ipc/pool_audit.c): the depot
 * word's layout, the packet check, and the free of one frame. Private to
 * those two files.
 */
#ifndef IPC_POOL_IMPL_H
#define IPC_POOL_IMPL_H

#include "pool.h"

/* A depot word: owner (16 bits), count (16), first handle (32). */
#define WORD_OWNER(w) ((uint16_t)((w) >> 48))
#define WORD_CNT(w) ((uint32_t)(((w) >> 32) & 0xffff))
#define WORD_HEAD(w) ((uint32_t)(w))

static inline uint64_t word_make(uint16_t owner, uint32_t cnt, uint32_t head)
{
    return ((uint64_t)owner << 48) | ((uint64_t)cnt << 32) | head;
}

enum take_verdict { TAKE_OK, TAKE_BAD_FRAME, TAKE_BAD_CHAIN };

/* Check one packet whose frames after the first belong to @o1 or @o2,
 * without writing anything. */
static inline enum take_verdict chain_check(const struct ipc_pool *pool, ipc_buf b, uint16_t o1, uint16_t o2)
{
    const struct ipc_meta *m = &pool->meta[b];
    if ((uint32_t)m->off + m->len > pool->frame_size)
        return TAKE_BAD_FRAME;
    if (ipc_likely(m->next == IPC_BUF_NONE))
        return m->pkt_len == m->len || m->pkt_len == 0 ? TAKE_OK : TAKE_BAD_FRAME;
    uint32_t total = m->len;
    ipc_buf f = m->next;
    for (uint32_t k = 1;; k++) {
        /* The bound catches loops too: a loop never reaches IPC_BUF_NONE. */
        if (k >= IPC_CHAIN_MAX || f >= pool->nbufs)
            return TAKE_BAD_CHAIN;
        uint16_t o = ipc_pool_owner(pool, f);
        if (o != o1 && o != o2)
            return TAKE_BAD_CHAIN;
        const struct ipc_meta *fm = &pool->meta[f];
        if ((uint32_t)fm->off + fm->len > pool->frame_size)
            return TAKE_BAD_CHAIN;
        total += fm->len;
        if (fm->next == IPC_BUF_NONE)
            break;
        f = fm->next;
    }
    return total == m->pkt_len ? TAKE_OK : TAKE_BAD_CHAIN;
}

/* Free one frame the caller owns, without following its chain (R2). */
bool ipc_pool_free_frame(struct ipc_pool *pool, ipc_buf b);

#endif
