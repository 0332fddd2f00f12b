/* SPDX-License-Identifier: MIT */
/*
 * supervisor/route_multi.h: routes with several next hops (ECMP) in the
 * supervisor: the one call a route feed installs them with (IPv4 and IPv6,
 * any number of next hops up to FIB_MP_MAX, weighted), and the pieces the
 * route commands share (supervisor/route_multi.c; route.c and route6.c
 * call them).
 *
 * `route add PREFIX via A [port P] [weight W] via B [weight W] ...`: each
 * `via` starts a next hop; iproute2's `nexthop` before each is accepted
 * and ignored. A route with one next hop is an ordinary route.
 */
#ifndef SUP_ROUTE_MULTI_H
#define SUP_ROUTE_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tables/fib_group.h"

struct sup;
struct sup_prefix;

/* One next hop given to sup_route_set_multi. */
struct sup_nexthop {
    uint8_t gw[16];  /* AF_INET: the first 4 bytes, network order (as RTA_GATEWAY); AF_INET6: 16 bytes */
    int port;        /* a port index, or -1: the port whose network holds gw (a link-local gw needs one) */
    uint16_t weight; /* 1..FIB_MP_WEIGHT_MAX; 0 is taken as 1 */
};

/**
 * Install @addr/@len (@family AF_INET: 4 bytes, AF_INET6: 16 bytes, network
 * order; host bits zero) with the @n (1..FIB_MP_MAX) next hops @nhs, added
 * or replacing what is there in place (no moment without a route), one
 * atomic store for the readers. Each gateway is checked as `route add`
 * checks it (on a port's network, not the router's own or a martian).
 * Only the FIB changes: the route is not recorded as a runtime route (not
 * written by `route save`); the caller owns its origin. A connected
 * network's prefix is refused. Returns 0, or -errno with @err filled
 * (-EINVAL a bad argument, -EAGAIN the router still holds the entries a
 * change needs: retry, -ENOSPC, -EUCLEAN the FIB failed a check).
 */
int sup_route_set_multi(struct sup *s, int family, const void *addr, unsigned len, const struct sup_nexthop *nhs,
                        unsigned n, char *err, size_t elen);

/** Delete @addr/@len (as sup_route_set_multi's): 0, -ENOENT, or -errno with @err filled. */
int sup_route_unset(struct sup *s, int family, const void *addr, unsigned len, char *err, size_t elen);

/* A runtime route's next hops when it has several (struct sup_rt_route's and
 * struct sup_rt_route6's mp: NULL for one next hop). */
struct sup_mp {
    unsigned n;
    uint16_t weight[FIB_MP_MAX];
    struct fib_nh nh[FIB_MP_MAX];
    struct fib6_nh nh6[FIB_MP_MAX];
};

/** After PREFIX (@argv): does the command name several next hops (two `via`, or `nexthop`, or `weight`)? */
bool sup_route_multi_args(char **argv, int argc);

/**
 * `route add|replace PREFIX via A ... via B ...` (@argv from PREFIX on),
 * either family (@v6), and a saved line of that form at `up` (@f gets the
 * answer or the error). The route becomes runtime.
 */
bool sup_route_multi_cmd(struct sup *s, bool v6, char **argv, int argc, bool replace, FILE *f);

/** Record, free: the runtime lists' copies (route.c, route6.c). */
struct sup_mp *sup_mp_dup(const struct sup_mp *mp);
void sup_mp_free(struct sup_mp *mp);

/** Adoption: @addr/@len, in the new FIB already, is runtime with these next hops. */
int sup_route_keep_mp(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nhs, const uint16_t *weights,
                      unsigned n);
int sup_route6_keep_mp(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs,
                       const uint16_t *weights, unsigned n);

/**
 * `route show`'s row of a group route (@hdr its header next hop, a struct
 * fib_nh or fib6_nh; @pfx and @origin as the other rows'): the first next
 * hop on the prefix's line, one line for each other, each with its weight;
 * or the JSON object, the first next hop's via and port, then all in
 * "nexthops" (after a comma unless @first). False (and nothing written)
 * if the group failed its checks.
 */
bool sup_route_show_group(struct sup *s, bool v6, const void *hdr, const char *pfx, const char *origin, bool json,
                          bool first, FILE *f);

/** What `route save` writes after a group route's prefix: ` via A weight W via B weight W`, then a newline. */
void sup_route_save_mp(struct sup *s, bool v6, const struct sup_mp *mp, FILE *out);

/** Does @mp have a next hop on port @port? (`route flush port NAME`) */
bool sup_mp_on_port(const struct sup_mp *mp, bool v6, int port);

/* route.c and route6.c's, for route_multi.c: an IPv4 PREFIX word (false
 * with the message in @e), and whether a prefix is a port's connected network. */
bool sup_route4_prefix(const char *arg, struct sup_prefix *pfx, char *e, size_t elen);
int sup_route4_connected(const struct sup *s, uint32_t addr, unsigned len);
int sup_route6_connected(const struct sup *s, const uint8_t *addr, unsigned len);
int sup_route4_keep(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nh, const struct sup_mp *mp);
int sup_route6_keep_rt(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nh,
                       const struct sup_mp *mp);

/** @mp at @addr (IPv4, host order) or @addr6 (@v6)/@len: added, or over
 * what is there in place; -EAGAIN retried a while. 0 or -errno; no reclaim. */
int sup_mp_put(struct sup *s, bool v6, uint32_t addr, const uint8_t *addr6, unsigned len, const struct sup_mp *mp);

/* A `route load` line with several next hops (supervisor/routes_load.c). */
struct sup_mp_line {
    bool v6;
    uint32_t addr; /* IPv4, host order */
    uint8_t addr6[16];
    uint8_t len;
    struct sup_mp *mp; /* malloc'd: the caller's to free (sup_mp_free) */
};

/**
 * `route load`'s line from PREFIX on (@argv; as `route add` takes it, ip's
 * `dev` for `port`), checked as `route add` checks it, and not a daemon's
 * prefix: 1 with @out, or -1 with the error in @e.
 */
int sup_route_mp_line(struct sup *s, char **argv, int argc, struct sup_mp_line *out, char *e, size_t elen);
/** Into the FIB (an IPv6 one also recorded as runtime; an IPv4 one is the
 * caller's to record): 0 it was so already, 1 set, or -errno. */
int sup_route_mp_load_set(struct sup *s, const struct sup_mp_line *l, bool *had);

/* ---- the manifest's routes (supervisor/route_mpath.c) ---- */

struct ipc_err;
struct run_text;
struct sup_route;

/** Manifest route @r (one next hop or its `nexthop` members) into its FIB:
 * added, or over what is there in place. 0 or -errno; no reclaim. */
int sup_mroute_put(struct sup *s, const struct sup_route *r);
/** Has @r a next hop on port @port? */
bool sup_mroute_on_port(const struct sup_route *r, int port);
/** `up`: the manifest's routes of one family (@v6) into its FIB. */
int sup_mroutes_setup(struct sup *s, bool v6, struct ipc_err *err);
/** The running manifest's [route ADDR/LEN] section, with a `nexthop` line
 * per member, for a runtime route with several next hops @mp. */
int sup_text_add_mp(struct run_text *t, unsigned after, struct sup *s, bool v6, const char *addr, unsigned len,
                    const struct sup_mp *mp);

#endif
