/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/t_ring.h: one ring and both of its ends, as a service pair would
 * have them, for the ring and wake-up tests (test_ring.c, test_wake.c).
 * Include after <cmocka.h>.
 */
#ifndef T_RING_H
#define T_RING_H

#include <unistd.h>

#include "ipc/ring.h"

/* One ring and both of its ends, as a service pair would have them. */
struct t_ring {
    int fd;
    struct ipc_ring_shared *sh;
    struct ipc_ring_prod p;
    struct ipc_ring_cons c;
};

static inline void t_ring_open(struct t_ring *r, uint32_t size, uint32_t start, int wake_fd)
{
    struct ipc_err err = {{0}};
    int ret = ipc_ring_create("t_ring", size, 7, 2, 3, start, &r->fd, &r->sh, &err);
    if (ret != 0)
        fail_msg("ipc_ring_create(size %u, start %u) = %d: %s", size, start, ret, err.msg);
    ipc_ring_prod_init(&r->p, r->sh, wake_fd);
    ipc_ring_cons_init(&r->c, r->sh);
}

static inline void t_ring_close(struct t_ring *r)
{
    ipc_ring_detach(r->sh);
    close(r->fd);
}

/* Dequeue up to @n handles into @bufs, returns the number dequeued: peek,
 * copy, release. The services take handles with ipc_ring_recv (ipc/pool.h),
 * which validates them before it releases the slots; this is the tests'. */
static inline uint32_t t_ring_deq_burst(struct ipc_ring_cons *c, ipc_buf *bufs, uint32_t n)
{
    uint32_t idx;
    n = ipc_ring_peek(c, n, &idx);
    for (uint32_t i = 0; i < n; i++)
        bufs[i] = ipc_ring_cons_slot(c, idx + i);
    if (n)
        ipc_ring_release(c, n);
    return n;
}

/* Handle values that differ from every index and from IPC_BUF_NONE. */
static inline ipc_buf t_val(uint32_t i)
{
    return 0x5a000000u ^ i;
}

#endif
