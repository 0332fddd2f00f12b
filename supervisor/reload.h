/* SPDX-License-Identifier: MIT */
/*
 * supervisor/reload.h: `ringrouter reload`, `ringrouter check --diff` and
 * SIGHUP: the manifest the supervisor runs, read again and applied live
 * (supervisor/reload.c).
 */
#ifndef SUP_RELOAD_H
#define SUP_RELOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "supervisor/sup.h"

/**
 * `reload [diff] [manifest PATH]`: read the supervisor's manifest file
 * again; with `diff`, only say what a reload would do. PATH, when given,
 * must be that file. Refused, with nothing changed, when the file does not
 * check or when a change needs a new `up`. Otherwise @w is left pending
 * (SUP_WAIT_RELOAD) until every change is applied, or, with @w NULL
 * (SIGHUP), the answer goes to the log alone.
 */
bool sup_ctl_reload(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w);

/** SIGHUP: a reload whose answer is logged. */
void sup_reload_signal(struct sup *s);

/** From the event loop's every pass: move the reload in progress on. */
void sup_reload_tick(struct sup *s, uint64_t now);

/**
 * The connection's wait (@w) for the reload: true once it is done, with
 * the answer written to @f and *@ok set; false while it goes on.
 */
bool sup_reload_poll(struct sup *s, struct sup_ctl_wait *w, FILE *f, bool *ok);

/** Shutdown: forget a reload still in progress. */
void sup_reload_end(struct sup *s);

#endif
