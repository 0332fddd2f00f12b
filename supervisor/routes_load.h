/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_load.h: between `route load`'s job (routes_load.c) and
 * its line parser (routes_load_parse.c). The job keeps a row per route of
 * the file, so a row is what the apply needs and no more.
 */
#ifndef SUP_ROUTES_LOAD_H
#define SUP_ROUTES_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tables/fib.h"
#include "tables/fib6.h"

struct sup;
struct sup_mp;

struct sup_load_route {
    uint32_t addr; /* IPv4 */
    uint8_t len;
    bool v6;
    struct fib_nh nh;
    uint8_t addr6[16]; /* IPv6 */
    struct fib6_nh nh6;
    struct sup_mp *mp; /* several next hops (route_multi.c), the row's to free; else NULL */
};

/** One line (changed in place) into @r: 1 a route, 0 nothing to load (a
 * blank, a comment, a header, a manifest's row), -1 an error in @e. */
int sup_route_load_line(struct sup *s, char *line, struct sup_load_route *r, char *e, size_t elen);

#endif
