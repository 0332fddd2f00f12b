/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh_write.c: the supervisor's half of the neighbour table: it
 * creates the region, and writes the manifest's static entries before the
 * router starts (the router is the only writer once it runs).
 */
#include "tables/neigh_write.h"

#include <errno.h>
#include <string.h>

#include "ipc/svc.h"

int neigh_create(const char *name, uint32_t cap, struct neigh_table *nt, int *fd, struct ipc_err *err)
{
    uint32_t c = 16;
    while (c < cap && c < (1u << 20))
        c <<= 1;
    size_t size = NEIGH_HDR_BYTES + (size_t)c * sizeof(struct neigh_entry);
    void *base;
    int ret = ipc_shm_create(name, NEIGH_SHM_KIND, NEIGH_VERSION, size, fd, &base, err);
    if (ret < 0)
        return ret;
    ((struct neigh_shared *)base)->cap = c;
    neigh_impl_bind(nt, base, size);
    return 0;
}

int neigh_add_static(struct neigh_table *nt, uint32_t ip, const uint8_t mac[6], uint16_t port)
{
    if (ip == 0 || port >= IPC_MAX_PORTS || (mac[0] & 1))
        return -EINVAL;
    struct neigh_entry *e = neigh_find(nt, ip);
    if (!e)
        e = neigh_insert(nt, ip);
    if (!e)
        return -ENOSPC;
    neigh_wbegin(e);
    memcpy(e->mac, mac, 6);
    e->port = port;
    e->state = NEIGH_STATIC;
    e->retries = 0;
    neigh_wend(e);
    return 0;
}
