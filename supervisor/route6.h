/* SPDX-License-Identifier: MIT */
/*
 * supervisor/route6.h: the control socket's IPv6 route and neighbour
 * commands (supervisor/route6.c), called from the IPv4 ones in route.c when
 * a prefix or gateway is IPv6, and for the IPv6 half of `show`.
 */
#ifndef SUP_ROUTE6_H
#define SUP_ROUTE6_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct sup;
struct sup_prefix6;

/* iproute2's words where ours differ and the meaning is one: `dev` becomes
 * `port`, `lladdr` becomes `mac`, in a keyword's place only (route.c). */
void sup_iproute_words(char **argv, int argc);

/* What `route flush` did (route.c for IPv4, sup_route6_flush for IPv6). */
struct sup_rt_flush {
    unsigned deleted;  /* runtime routes */
    unsigned restored; /* manifest routes given back their next hop, or added back */
    unsigned failed;   /* said on the answer */
};
/* `route flush`'s IPv6 half: the IPv6 FIB back to the manifest's routes (of
 * port @port, or all with -1), counted into @n, failures said on @f. */
void sup_route6_flush(struct sup *s, int port, struct sup_rt_flush *n, FILE *f);

/* Does @arg name IPv6 (it has a ':')? Then route6 takes the command. */
bool sup_route6_arg(const char *arg);

/* route add PREFIX via GATEWAY [port NAME] | PREFIX port NAME */
bool sup_route6_add(struct sup *s, char **argv, int argc, FILE *f);
/* route replace PREFIX ...: as add, an existing prefix's next hop changed in place */
bool sup_route6_replace(struct sup *s, char **argv, int argc, FILE *f);
/* route del PREFIX [force] (force: a manifest route) */
bool sup_route6_del(struct sup *s, char **argv, int argc, FILE *f);
/* route get ADDRESS [json]: the route a packet to ADDRESS takes */
bool sup_route6_get(struct sup *s, char **argv, int argc, FILE *f);
/* The IPv6 FIB: a text table after the IPv4 one (nothing when it is empty),
 * or `,"routes6":[...]` inside the JSON object; only the route for exactly
 * @want when it is not NULL (its header alone when there is none). */
bool sup_route6_show(struct sup *s, const struct sup_prefix6 *want, bool json, FILE *f);
/* An IPv6 PREFIX argument of @cmd (canonical, no host bits, not link-local
 * or multicast); false with the message on @f. */
bool sup_route6_prefix(const char *cmd, const char *arg, struct sup_prefix6 *pf, FILE *f);
/* Runtime IPv6 routes (added or replaced since `up`): is @addr/@len one,
 * and forget that it is (a reload's manifest route took its place). */
bool sup_route6_runtime(struct sup *s, const uint8_t *addr, unsigned len);
void sup_route6_forget(struct sup *s, const uint8_t *addr, unsigned len);
/* Record @addr/@len, already in the IPv6 FIB, as a runtime route (adoption). */
struct fib6_nh;
int sup_route6_keep(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nh);
/* `route save`'s IPv6 lines (PREFIX via GATEWAY [port NAME] | PREFIX port
 * NAME) to @out, in prefix order: how many, or -1 out of memory. */
long sup_route6_save(struct sup *s, FILE *out);
/* At `up`: one saved line (@words), as `route replace`; false with the
 * reason in @e. */
bool sup_route6_load(struct sup *s, char **words, int n, char *e, size_t elen);
/* `route load`'s IPv6 lines (supervisor/routes_load.c). Check: PREFIX, a
 * GATEWAY (NULL: none) and a port NAME (NULL: none) as `route replace`
 * checks them, and not a connected network; false with the reason in @e.
 * Set: @addr/@len to @nh in the FIB, runtime from then on: 1 changed or
 * added (*@had: it had a route), 0 it was so already, or -errno. Drop: a
 * runtime route no more (the manifest's next hop back, or deleted): 0 or
 * -errno. Neither reclaims. */
bool sup_route6_load_check(struct sup *s, const char *prefix, const char *via, const char *pname,
                           struct sup_prefix6 *pf, struct fib6_nh *nh, char *e, size_t elen);
int sup_route6_load_set(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nh, bool *had);
int sup_route6_drop(struct sup *s, const uint8_t *addr, unsigned len);
/* The IPv6 neighbour table, likewise (`,"neighbours6":[...],"busy6":N`);
 * only the entry for @want (16 bytes) when it is not NULL. */
void sup_neigh6_show(struct sup *s, const uint8_t *want, bool json, FILE *f);

#endif
