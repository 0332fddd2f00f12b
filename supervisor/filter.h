/* SPDX-License-Identifier: MIT */
/*
 * supervisor/filter.h: the supervisor's half of rr-filter (docs/filter.md):
 * the ruleset checked and carried in the filter's config, its rings on
 * every port's path, and the connection table's region, kept across the
 * filter's restarts and upgrades and checked before each new instance.
 */
#ifndef SUP_FILTER_H
#define SUP_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "supervisor/sup.h"

/* `check` and `up`: [filter] rules read (the file and every directory above
 * it root's, or the caller's, as a binary's) and compiled against the
 * manifest's ports. 0, or -1 with the error, naming the manifest's line and
 * the rules' line and column, written to @f. */
int sup_filter_check(const struct sup_manifest *m, const char *manifest_name, FILE *f);

/* Service @v (rr-filter, index @idx): its connection table's region (a
 * sealed memfd, kept in v->dev_fd; adopting, the running instance's fd
 * @fd_kind0) and its rules. 0, or -errno with @err. */
int sup_filter_add(struct sup *s, struct sup_svc *v, int idx, int fd_kind0, struct ipc_err *err);

/* Driver @drv's rings for port @p's queue @q (a driver group's driver
 * serves several ports) when there is a filter. A filtered port: rx (driver
 * -> filter), fi (filter -> router) and, for its first queue, fo (router
 * -> filter) and tx (filter -> driver); 1. Any other port's first queue:
 * fo and ft (filter -> driver), for what comes in by a filtered port, and
 * 0: its own rings are setup.c's. 0 without a filter; -errno with @err. */
int sup_filter_rings(struct sup *s, int drv, int router, int p, int q, struct ipc_err *err);

/* The router's config: its rings to the filter's egress for the ports the
 * filter does not sit on (IPC_RING_F_FILTER), and the ports it does
 * (IPC_PORT_F_FILTER). Nothing for another service or without a filter. */
void sup_filter_svc_config(const struct sup *s, const struct sup_svc *v, struct ipc_svc_config *c);

/* The filter's typed config (tables/filter.h) into @x; its size. */
uint32_t sup_filter_config(const struct sup *s, const struct sup_svc *v, void *x, int ct_fd);

/* Before an instance of @v starts (a standby's promotion included): the
 * region's header checked against what was made; a header that fails is
 * wiped (the instance then builds an empty table) and the log says why. */
void sup_filter_before_start(struct sup *s, struct sup_svc *v);

struct flt_port; /* services/filter/flt.h */

/* The manifest's ports as the rule compiler names them; how many. */
unsigned sup_filter_ports(const struct sup_manifest *m, struct flt_port *out);
/* The rules' text the filter runs, and its table's size. */
const char *sup_filter_text(uint32_t *len);
uint64_t sup_filter_ct_size(void);
/* `filter reload`: the rules read and compiled again; if they check, the
 * filter's config anew and a planned restart (the table stays). 0, or -1
 * with the error written to @f and nothing changed. */
int sup_filter_reload(struct sup *s, struct sup_svc *v, FILE *f);
#define SUP_FILTER_WAIT_NS 10000000000ull
/* `filter reload` and `conntrack flush`: @w waits (SUP_WAIT_FILTER) until
 * filter @v is up on an instance other than @old, which runs what was asked
 * (@what opens the answer), or fails. */
void sup_filter_wait(struct sup *s, struct sup_svc *v, pid_t old, const char *what, struct sup_ctl_wait *w);
/* That wait: true once it is over, the answer written to @f and *@ok set. */
bool sup_filter_poll(struct sup *s, struct sup_ctl_wait *w, uint64_t now, FILE *f, bool *ok);
/* `reload`: true (and why) if the new manifest's [filter], or its ports,
 * changed in a way that needs `up`. */
bool sup_filter_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len);
/* `reload`: -1 if the new manifest's rules do not compile (said on @f,
 * nothing changes), 1 if they differ from the running ones, else 0. */
int sup_filter_reload_check(const struct sup *s, const struct sup_manifest *n, const char *cmd, FILE *f);
/* `reload`, once the new manifest runs: its rules into the filter's config
 * (the reload then restarts it, its connections kept, and waits for it).
 * 0, or -1 with the error on @f and nothing changed. */
int sup_filter_reload_apply(struct sup *s, FILE *f);
/* `conntrack flush`: the filter restarts on a table wiped before it starts. */
void sup_filter_flush(struct sup *s, struct sup_svc *v);

/* The commands (filter_ctl.c): filter show|reload, conntrack show|count|flush. */
bool sup_ctl_filter(struct sup *s, char **w, int nw, FILE *f, struct sup_ctl_wait *wait);
bool sup_ctl_conntrack(struct sup *s, char **w, int nw, FILE *f, struct sup_ctl_wait *wait);

/* The check itself, on a copy of the region's first bytes: NULL if the
 * head is sound (or zero: never formatted), else why not. */
const char *sup_filter_head_check(const void *head, size_t len, uint32_t entries, uint64_t size);

#endif
