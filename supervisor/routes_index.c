/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_index.c: `route load`'s two ends around the parse
 * (routes_load.c): the client's copy of the file into a memfd, and the
 * index of the runtime IPv4 routes (s->rt_routes) by prefix, which a load
 * of a million routes makes again beside the one in use and swaps in.
 */
#include "supervisor/routes.h"
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOAD_MAX (512ull << 20) /* bytes of routes one load takes */

int sup_route_load_memfd(const char *file)
{
    int in = strcmp(file, "-") == 0 ? 0 : open(file, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        fprintf(stderr, "ringrouter route load: %s: %s\n", file, strerror(errno));
        return -1;
    }
    int m = memfd_create("route-load", MFD_CLOEXEC);
    if (m < 0) {
        fprintf(stderr, "ringrouter route load: memfd: %s\n", strerror(errno));
        return -1;
    }
    char buf[65536];
    unsigned long long total = 0;
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        total += (unsigned long long)n;
        if (total > LOAD_MAX || write(m, buf, (size_t)n) != n) {
            fprintf(stderr, "ringrouter route load: %s: %s\n", file,
                    total > LOAD_MAX ? "larger than 512 MiB" : strerror(errno));
            return -1;
        }
    }
    if (n < 0) {
        fprintf(stderr, "ringrouter route load: %s: %s\n", file, strerror(errno));
        return -1;
    }
    if (in)
        close(in);
    return m; /* open until the answer: the supervisor reads it by /proc/PID/fd/N */
}

/* The runtime routes' index: the map of routes_map.c, each entry's epoch
 * the row's number in s->rt_routes. One supervisor, one index. */
static struct sup_rtmap rt_index;

struct sup_rt_route *sup_rt_index_find(struct sup *s, uint32_t addr, unsigned len)
{
    uint8_t d[16];
    sup_rt_key4(addr, d);
    const struct sup_rte *e = sup_rtmap_find(&rt_index, AF_INET, d, (uint8_t)len);
    if (!e || e->epoch >= s->n_rt_routes)
        return NULL;
    struct sup_rt_route *r = &s->rt_routes[e->epoch];
    return r->addr == addr && r->len == len ? r : NULL;
}

int sup_rt_index_put(struct sup *s, size_t i)
{
    uint8_t d[16];
    sup_rt_key4(s->rt_routes[i].addr, d);
    struct sup_rte *e = sup_rtmap_insert(&rt_index, AF_INET, d, s->rt_routes[i].len);
    if (!e)
        return -ENOMEM;
    e->epoch = (uint32_t)i;
    return 0;
}

void sup_rt_index_del(uint32_t addr, unsigned len)
{
    uint8_t d[16];
    sup_rt_key4(addr, d);
    struct sup_rte *e = sup_rtmap_find(&rt_index, AF_INET, d, (uint8_t)len);
    if (e)
        sup_rtmap_remove(&rt_index, e);
}

void sup_rt_index_rebuild(struct sup *s)
{
    sup_rtmap_free(&rt_index);
    for (size_t i = 0; i < s->n_rt_routes; i++)
        if (sup_rt_index_put(s, i) < 0)
            sup_err("route: out of memory indexing the runtime routes");
}

void sup_rt_index_swap(struct sup_rtmap *next)
{
    struct sup_rtmap old = rt_index;
    rt_index = *next;
    *next = old;
}
