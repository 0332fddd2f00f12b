/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh_write.c: the supervisor's half of both neighbour tables: it
 * creates a region, and writes the manifest's static entries before the
 * router starts (the router is the only writer once it runs).
 */
#include "tables/neigh6_write.h"
#include "tables/neigh_impl.h"
#include "tables/neigh_write.h"

#include <errno.h>
#include <string.h>

#include "ipc/svc.h"

/* A region of family @k for @cap entries (rounded up to a power of two). */
static int neigh_map_create(const struct neigh_kind *k, const char *name, uint32_t cap, int *fd, void **base,
                            size_t *size, struct ipc_err *err)
{
    uint32_t c = 16;
    while (c < cap && c < (1u << 20))
        c <<= 1;
    *size = NEIGH_HDR_BYTES + (size_t)c * k->entry_bytes;
    int ret = ipc_shm_create(name, k->shm_kind, k->version, *size, fd, base, err);
    if (ret == 0)
        ((struct neigh_hdr *)*base)->cap = c;
    return ret;
}

int neigh_create(const char *name, uint32_t cap, struct neigh_table *nt, int *fd, struct ipc_err *err)
{
    void *base;
    size_t size;
    int ret = neigh_map_create(&neigh_kind4, name, cap, fd, &base, &size, err);
    if (ret == 0)
        NEIGH_BIND(nt, base, size);
    return ret;
}

int neigh6_create(const char *name, uint32_t cap, struct neigh6_table *nt, int *fd, struct ipc_err *err)
{
    void *base;
    size_t size;
    int ret = neigh_map_create(&neigh_kind6, name, cap, fd, &base, &size, err);
    if (ret == 0)
        NEIGH_BIND(nt, base, size);
    return ret;
}

/* A static entry's fields, at their places in either family's entry. */
#define NEIGH_SET_STATIC(e, m, p, st)                                                                              \
    do {                                                                                                           \
        memcpy((e)->mac, (m), 6);                                                                                  \
        (e)->port = (p);                                                                                           \
        (e)->state = (st);                                                                                         \
        (e)->retries = 0;                                                                                          \
    } while (0)

int neigh_add_static(struct neigh_table *nt, uint32_t ip, const uint8_t mac[6], uint16_t port)
{
    if (ip == 0 || port >= IPC_MAX_PORTS || (mac[0] & 1))
        return -EINVAL;
    struct neigh_entry *e = neigh_find(nt, ip);
    if (!e && !(e = neigh_insert(nt, ip)))
        return -ENOSPC;
    neigh_wbegin(e);
    NEIGH_SET_STATIC(e, mac, port, NEIGH_STATIC);
    neigh_wend(e);
    return 0;
}

int neigh6_add_static(struct neigh6_table *nt, const uint8_t *ip, const uint8_t mac[6], uint16_t port)
{
    if (port >= IPC_MAX_PORTS || (mac[0] & 1) || ip[0] == 0xff)
        return -EINVAL;
    struct neigh6_entry *e = neigh6_find(nt, ip);
    if (!e && !(e = neigh6_insert(nt, ip)))
        return -ENOSPC;
    neigh6_wbegin(e);
    NEIGH_SET_STATIC(e, mac, port, NEIGH6_STATIC);
    neigh6_wend(e);
    return 0;
}
