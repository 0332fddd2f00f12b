/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes.h: routes from a routing daemon, the supervisor's half
 * (docs/routing.md). rr-routes (services/routes/) parses the kernel table
 * of the control namespace and FRR's FPM and puts route records in the
 * route channel (tables/rtchan.h); the supervisor reads them here, trusts
 * none of their bytes (routes_check.c), and applies them to the FIBs, of
 * which it is the only writer, a slice at a time from its event loop.
 *
 *   routes_setup.c  the channel, the netlink and FPM sockets in the control
 *                   namespace, rr-routes' fds and typed config
 *   routes.c        the channel's reader: batches, syncs, grace, and the
 *                   one function that applies a record to the FIB
 *   routes_map.c    the routes mirrored, by prefix (the supervisor's memory)
 *   routes_check.c  the checks of a record
 */
#ifndef SUP_ROUTES_H
#define SUP_ROUTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ipc/shm.h"
#include "supervisor/manifest.h"
#include "tables/rtchan.h"

struct sup;

/* ---- routes_check.c ---- */

enum sup_rck {
    SUP_RCK_OK,
    SUP_RCK_BAD,           /* a field no source can mean: family, length, host bits, next-hop count */
    SUP_RCK_MARTIAN,       /* a martian prefix or gateway */
    SUP_RCK_SELF,          /* via the router itself */
    SUP_RCK_NOT_CONNECTED, /* a next hop on no connected network of a port */
    SUP_RCK_N
};

/**
 * Check record @r (RTC_ADD or RTC_DEL) against the ports of @m. Returns
 * SUP_RCK_OK with *@port the first next hop's port (ADD), or the refusal
 * with @why saying it.
 */
enum sup_rck sup_routes_check(const struct sup_manifest *m, const struct rtc_rec *r, int *port, char *why,
                              size_t len);

/**
 * Port @port's host-side interface has index @ifindex in the control
 * namespace (supervisor/cp.c, at its making and at adoption; 0: none). A
 * route's link-local IPv6 gateway names its link by that index (OSPFv3's
 * next hops are link-local), so when [routes] netns is [router]
 * control_netns, sup_routes_check takes the index for the port.
 */
void sup_routes_cp_ifindex(int port, int ifindex);

/* ---- routes_map.c ---- */

enum { SUP_RTE_FIB = 1, SUP_RTE_REFUSED = 2 };
#define SUP_RTE_USED_PEND 2 /* used: its withdrawal is held until its batch ends (routes.c) */

/* A route a source named: in the FIB, or refused (so that it is logged once). */
struct sup_rte {
    uint8_t dst[16];
    uint8_t plen, family, src, state; /* src: enum rtc_src; state: SUP_RTE_* */
    uint8_t used, why;                /* why: enum sup_rck, or SUP_RCK_N + 1 (the FIB said no) */
    uint16_t port;                    /* in the FIB: its next hop */
    uint8_t gw[16];
    uint32_t epoch;   /* the last sync of its source that named it */
    uint32_t stale_ms; /* 0, or when its source went away (ms since routes were set up, + 1) */
};

struct sup_rtmap {
    struct sup_rte *e;
    size_t cap, n;         /* cap a power of two, or 0; n: the entries of both tables */
    struct sup_rte *old;   /* while it grows: the table before, moving into e (routes_map.c) */
    size_t old_cap, moved; /* its size; its slots before `moved` have moved */
};

struct sup_rte *sup_rtmap_find(const struct sup_rtmap *m, uint8_t family, const uint8_t *dst, uint8_t plen);
/* Find or insert (zeroed but for its key; NULL: out of memory). Pointers
 * into the map are valid until the next insert or remove. */
struct sup_rte *sup_rtmap_insert(struct sup_rtmap *m, uint8_t family, const uint8_t *dst, uint8_t plen);
/* Remove @e; the entry that moves into its slot (if any) is at the same
 * address afterwards, so that a sweep looks at that slot again. */
void sup_rtmap_remove(struct sup_rtmap *m, struct sup_rte *e);
void sup_rtmap_free(struct sup_rtmap *m);
/* Finish a grow under way: afterwards every entry is in m->e[0..cap), for a
 * walk over the slots. */
void sup_rtmap_settle(struct sup_rtmap *m);
/* The same, @k old slots at most: true once it is finished. */
bool sup_rtmap_settle_some(struct sup_rtmap *m, size_t k);
/* A hint: start loading the slot where @dst/@plen's search begins. */
void sup_rtmap_prefetch(const struct sup_rtmap *m, uint8_t family, const uint8_t *dst, uint8_t plen);

/* ---- routes_setup.c ---- */

/** The channel, the wake-up eventfd and the sources' sockets, if the
 * manifest has [routes]. 0, or -errno with @err naming the key's line. */
int sup_routes_setup(struct sup *s, struct ipc_err *err);
void sup_routes_teardown(struct sup *s);
/** rr-routes' fds at @k0.. (netlink, FPM, channel, the supervisor's eventfd). */
void sup_routes_fds(const struct sup *s, int *src, int k0);
/** rr-routes' typed config in @x, naming its fds from @k0; returns its size. */
uint32_t sup_routes_config(const struct sup *s, void *x, int k0);

/* ---- routes.c ---- */

/** The event loop's turn: read the channel a slice at a time, expire graces. */
void sup_routes_tick(struct sup *s, uint64_t now);
/** Does a source own this route in the FIB (`route show`'s origin "daemon")? */
bool sup_routes_has(const struct sup *s, uint8_t family, const uint8_t *dst, unsigned plen);
/** `ringrouter routes [--json]`: the sources' state and counters. */
void sup_routes_show(struct sup *s, FILE *f, bool json);

/* ---- routes_load.c: `route load FILE|- [--merge]` ---- */

struct sup_ctl_wait;

/** Supervisor side: the runtime routes (IPv4 and IPv6) replaced (merged)
 * by @argv's, a slice at a time from the event loop: @w is set pending
 * and sup_route_load_poll answers at the end (with @w NULL, the whole
 * load runs now). false with the error in @f if it cannot start. */
bool sup_route_load(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w);
/** The event loop's turn for a load under way: one slice of it. */
void sup_route_load_tick(struct sup *s);
/** The load's answer into @f once it has ended (true), else false. */
bool sup_route_load_poll(struct sup *s, struct sup_ctl_wait *w, FILE *f, bool *ok);
/** Is `route SUB` to be refused because a load is under way (said in @f,
 * if not NULL)? The reads are not; SUB NULL: any change is. */
bool sup_route_load_busy(const char *sub, FILE *f);

/* ---- routes_index.c ---- */

/** Client side: FILE (or stdin for "-") copied into a memfd; its fd, or -1
 * (said on stderr). */
int sup_route_load_memfd(const char *file);

/* The index of s->rt_routes by prefix (route.c's runtime routes): the row
 * of @addr/@len or NULL; row @i indexed (0, or -ENOMEM); @addr/@len out of
 * it; the whole index made again from the rows; @next, made from them,
 * in place of the index, and the index before in @next. */
struct sup_rt_route *sup_rt_index_find(struct sup *s, uint32_t addr, unsigned len);
int sup_rt_index_put(struct sup *s, size_t i);
void sup_rt_index_del(uint32_t addr, unsigned len);
void sup_rt_index_rebuild(struct sup *s);
void sup_rt_index_swap(struct sup_rtmap *next);

/* An IPv4 address (host order) as a map key: network order, the rest 0. */
static inline void sup_rt_key4(uint32_t addr, uint8_t d[16])
{
    memset(d, 0, 16);
    d[0] = (uint8_t)(addr >> 24);
    d[1] = (uint8_t)(addr >> 16);
    d[2] = (uint8_t)(addr >> 8);
    d[3] = (uint8_t)addr;
}

#endif
