/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh6_write.c: the supervisor's half of the IPv6 neighbour table:
 * it creates the region and writes the manifest's static entries before the
 * router starts (the router is the only writer once it runs).
 */
#include "tables/neigh6_write.h"

#include <errno.h>
#include <string.h>

#include "ipc/svc.h"

int neigh6_create(const char *name, uint32_t cap, struct neigh6_table *nt, int *fd, struct ipc_err *err)
{
    uint32_t c = 16;
    while (c < cap && c < (1u << 20))
        c <<= 1;
    size_t size = NEIGH_HDR_BYTES + (size_t)c * sizeof(struct neigh6_entry);
    void *base;
    int ret = ipc_shm_create(name, NEIGH6_SHM_KIND, NEIGH6_VERSION, size, fd, &base, err);
    if (ret < 0)
        return ret;
    ((struct neigh6_shared *)base)->cap = c;
    neigh6_impl_bind(nt, base, size);
    return 0;
}

int neigh6_add_static(struct neigh6_table *nt, const uint8_t *ip, const uint8_t mac[6], uint16_t port)
{
    if (port >= IPC_MAX_PORTS || (mac[0] & 1) || ip[0] == 0xff)
        return -EINVAL;
    struct neigh6_entry *e = neigh6_find(nt, ip);
    if (!e)
        e = neigh6_insert(nt, ip);
    if (!e)
        return -ENOSPC;
    neigh6_wbegin(e);
    memcpy(e->mac, mac, 6);
    e->port = port;
    e->state = NEIGH6_STATIC;
    e->retries = 0;
    neigh6_wend(e);
    return 0;
}
