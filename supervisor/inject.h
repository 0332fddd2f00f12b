/* SPDX-License-Identifier: MIT */
/*
 * supervisor/inject.h: `ringrouter inject SERVICE KIND [ARGS]`, the
 * supervisor's half of fault injection (the service's half is ipc/inject.h;
 * docs/operations.md, "Fault injection", has the kinds and examples).
 *
 * The supervisor does kill, stop and exhaust itself; the other kinds are
 * commands a service carries out in its loop (corrupt-ring by the producer
 * of one of the target's input rings). A command's answer comes within a
 * loop of the service's: the connection waits for it (SUP_CONN_WAIT), the
 * event loop does not; a SIGCONT or an exhaust's release that falls due is
 * done from the loop's timer, which inject re-arms to fire in time.
 */
#ifndef SUP_INJECT_H
#define SUP_INJECT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "supervisor/sup.h"

/** How long a connection waits for a service's answer. */
#define SUP_INJECT_ANSWER_NS 1000000000ull

/**
 * `inject SERVICE KIND [ARGS]` (@argv without the word "inject"). Writes the
 * answer to @f and returns whether it is OK, or leaves s->ctl_iwait pending
 * (a command to a service): sup_inject_poll answers it.
 */
bool sup_ctl_inject(struct sup *s, char **argv, int argc, FILE *f);

/**
 * A pending answer (@w): if the service answered (or the instance asked is
 * gone, or @now is past the deadline), write it to @f, set *@ok, clear
 * @w->pending and return true; false while it is still pending.
 */
bool sup_inject_poll(struct sup *s, struct sup_inject_wait *w, uint64_t now, FILE *f, bool *ok);

/** From the event loop, every pass: SIGCONTs and releases that are due. */
void sup_inject_tick(struct sup *s, uint64_t now);

/**
 * The buffers `inject SERVICE leak N` had running instance @v take (its
 * answers' counts, each at most its N), now that it ends: they are no leak
 * of its own. Forgets them.
 */
uint32_t sup_inject_leaked(struct sup *s, const struct sup_svc *v);

/** A reload moved service @from to index @to of s->svcs: its state follows. */
void sup_inject_move(struct sup *s, int from, int to);

/** Before the final census: continue what is stopped, give back what is held. */
void sup_inject_end(struct sup *s);

#endif
