/* SPDX-License-Identifier: MIT */
/*
 * drivers/common/drv.c: the cold half of the shared driver scaffolding
 * (drv.h): binding, freeing the dead list, and dropping the backlog at stop.
 * The per-packet half is inline in drv.h, so that each driver's TX check is
 * inlined into its pull.
 */
#include "drv.h"

#include <string.h>

void drv_init(struct drv *d, struct ipc_svc *svc, _Atomic uint64_t *ctr, const struct drv_ids *ids)
{
    memset(d, 0, sizeof(*d));
    d->svc = svc;
    d->pool = &svc->pool;
    d->ctr = ctr;
    d->id = *ids;
    d->poll_ns = (uint64_t)svc->cfg->poll_us * 1000u;
    d->last_work = ipc_svc_now_ns();
}

void drv_dead_flush(struct drv *d)
{
    if (d->n_dead) {
        ipc_pool_free(d->pool, d->dead, d->n_dead);
        d->n_dead = 0;
    }
}

uint32_t drv_backlog_drop(struct drv *d, unsigned c)
{
    uint32_t n = drv_backlog_depth(d);
    while (drv_backlog_depth(d))
        drv_dead_add(d, drv_backlog_pop(d));
    drv_ctr_add(d, c, n);
    return n;
}
