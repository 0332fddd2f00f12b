/* SPDX-License-Identifier: MIT */
/*
 * drivers/common/drv.c: the cold half of the shared driver scaffolding
 * (drv.h): binding, freeing the dead list, and dropping the backlog at stop.
 * The per-packet half is inline in drv.h, so that each driver's TX check is
 * inlined into its pull.
 */
#include "drv.h"

#include <errno.h>
#include <string.h>

#include "tables/config.h"

int drv_config(struct ipc_svc *svc, const char *what, const struct tbl_driver_cfg **out, struct ipc_err *err)
{
    const struct ipc_svc_config *cfg = svc->cfg;
    const struct tbl_driver_cfg *dc = tbl_cfg_get(svc, TBL_DRIVER_CFG_VERSION, sizeof(*dc), err);
    if (!dc)
        return -EPROTO;
    if (dc->dev_fd < 0)
        return ipc_errf(err, -EINVAL, "%s: no %s fd in the config", cfg->name, what);
    /* One output ring per port served: a driver group serves several. */
    unsigned nout = dc->ngroup ? dc->ngroup : 1;
    if (dc->ngroup > TBL_GROUP_MAX)
        return ipc_errf(err, -EINVAL, "%s: a group of %u ports, at most %u", cfg->name, dc->ngroup, TBL_GROUP_MAX);
    if (svc->n_out != nout)
        return ipc_errf(err, -EINVAL, "%s: a driver has one output ring per port (%u), the config gives %u", cfg->name,
                        nout, svc->n_out);
    if (cfg->port >= cfg->nports || cfg->port >= IPC_MAX_PORTS)
        return ipc_errf(err, -EINVAL, "%s: port %u out of range (%u ports)", cfg->name, cfg->port, cfg->nports);
    *out = dc;
    return 0;
}

void drv_init(struct drv *d, struct ipc_svc *svc, _Atomic uint64_t *ctr, const struct drv_ids *ids)
{
    memset(d, 0, sizeof(*d));
    d->svc = svc;
    d->pool = &svc->pool;
    d->ctr = ctr;
    d->id = *ids;
    d->poll_ns = (uint64_t)svc->cfg->poll_us * 1000u;
    d->n_in = svc->n_in;
    for (unsigned r = 0; r < svc->n_in && r < IPC_SVC_MAX_RINGS; r++)
        d->in[r] = &svc->in[r];
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
