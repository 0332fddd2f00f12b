/* SPDX-License-Identifier: MIT */
/*
 * supervisor/shaper_ctl.h: the supervisor's side of the shaper: its
 * parameters for the config blob, and `ringrouter shaper show|set`.
 */
#ifndef SUP_SHAPER_CTL_H
#define SUP_SHAPER_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tables/shaper.h"
#include "supervisor/sup.h"

/**
 * For shaper service @v, fill @out from the manifest's [shaper PORT] and
 * [class PORT NAME] sections (its typed config, tables/config.h).
 */
void sup_shaper_params(const struct sup *s, const struct sup_svc *v, struct shp_cfg *out);

/** The same for port @port of manifest @m (zeroed if it has no shaper). */
void sup_shaper_cfg(const struct sup_manifest *m, int port, struct shp_cfg *out);

/**
 * Before shaper @v starts on a config whose classes changed (a reload): its
 * stats region forgets the rates and class counters its predecessor left,
 * which a new instance would otherwise resume by class index.
 */
void sup_shaper_forget(struct sup *s, struct sup_svc *v);

/**
 * For a reload (reload_plan.c): each rate shaper @v runs at that differs
 * from the running manifest's (@oc; `shaper set` made it), one line on @f
 * that names both and the one the reload to @nc leaves in effect. The
 * runtime rate stays while the manifest says what it said before; a
 * manifest whose rate there changed (for a class: its rate or ceil, or the
 * port's rate, which resets every class) sets its own, as does a restart of
 * the shaper (@restart: it starts from the manifest). Adds how many stay
 * to *@kept; returns the port's rate in effect.
 */
uint64_t sup_shaper_overrides(struct sup_svc *v, const struct shp_cfg *oc, const struct shp_cfg *nc, bool restart,
                              const char *port, unsigned *kept, FILE *f);

/* The rates shaper @v runs at now, as its stats region reports them (`shaper
 * set` may have changed them): @cfg, its manifest config, with each rate and
 * ceiling it reports in @now (@cfg's where it reports none: not started). */
void sup_shaper_now(struct sup_svc *v, const struct shp_cfg *cfg, struct shp_cfg *now);

/**
 * `shaper show [PORT] [json]`, `shaper set PORT [CLASS] rate R [ceil C]`.
 * A `set` that reached a running shaper leaves @w pending: the answer is
 * written by sup_shaper_set_poll once the shaper has taken it.
 */
bool sup_ctl_shaper(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w);

/**
 * A pending `shaper set` (@w): if the shaper answered, or @now is past the
 * wait's deadline, write the answer to @f, set *@ok, clear @w->pending and
 * return true; false while it is still pending.
 */
bool sup_shaper_set_poll(struct sup *s, struct sup_ctl_wait *w, uint64_t now, FILE *f, bool *ok);

#endif
