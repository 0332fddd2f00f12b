/* SPDX-License-Identifier: MIT */
/*
 * tables/shaper.c: the shaper's contract with the supervisor
 * (tables/shaper.h): its counters' names and its control mailbox region.
 */
#include "tables/shaper.h"

#include <errno.h>

const char *const shp_pctr_names[SHP_P_N] = {"enq_pkts", "tx_pkts", "tx_bytes", "backlog", "backlog_bytes",
                                             "overflow_drops", "codel_drops", "marks"};
const char *const shp_cctr_names[SHP_C_N] = {"rate", "ceil", "bps", "tx_pkts", "tx_bytes", "backlog", "drops", "marks"};

int shp_mbox_create(const char *name, int *fd, struct shp_mbox **mb, struct ipc_err *err)
{
    void *base;
    int ret = ipc_shm_create(name, IPC_SHM_MBOX, SHP_MBOX_VERSION, sizeof(struct shp_mbox), fd, &base, err);
    if (ret < 0)
        return ret;
    *mb = base;
    return 0;
}

int shp_mbox_attach(int fd, struct shp_mbox **mb, struct ipc_err *err)
{
    return ipc_shm_attach_fixed(fd, IPC_SHM_MBOX, SHP_MBOX_VERSION, sizeof(**mb), (void **)mb, err);
}

void shp_mbox_detach(struct shp_mbox *mb)
{
    /* The layout's size, never the header's: the shaper can write that. */
    if (mb)
        ipc_shm_unmap(mb, sizeof(*mb));
}
