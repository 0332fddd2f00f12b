/* SPDX-License-Identifier: MIT */
/*
 * supervisor/svclog.h: the services' stderr, read through a pipe per
 * instance and written to the supervisor's own stderr one line at a time,
 * each prefixed with the instance's name and pid ("driver-a[1234]: ..."),
 * control and non-ASCII bytes escaped (svclog.c). No line of a service can
 * look like one of the supervisor's, which all start "ringrouter: ".
 */
#ifndef SUP_SVCLOG_H
#define SUP_SVCLOG_H

#include <stdint.h>
#include <sys/types.h>

struct sup;

/**
 * A new instance's stderr: a non-blocking pipe. Returns its read end (the
 * supervisor's; close-on-exec), and in @w its write end and in @in a second
 * read end of its own (a new open of the same pipe, so that nothing the
 * service does to it reaches the supervisor's), both for the child's fds 2
 * and 0: the pipe keeps a reader while no supervisor runs, and the lines
 * written meanwhile wait for the next one. -1 (and @w, @in -1) if there is
 * none to be had: the child then keeps the supervisor's stderr.
 */
int sup_svclog_pipe(int *w, int *in);

/** Read @fd (the read end from sup_svclog_pipe) as @name's instance @pid. Takes @fd in every case. */
void sup_svclog_open(struct sup *s, const char *name, pid_t pid, int fd);

/**
 * An adopted instance (adopt.c): its stderr, taken from it through @pidfd,
 * opened again for reading. Logs why, if it cannot be (an instance started
 * by a supervisor that gave it no pipe).
 */
void sup_svclog_adopt(struct sup *s, const char *name, pid_t pid, int pidfd);

/** The event loop's SUP_POLL_LOG for stream @idx: one bounded read. */
void sup_svclog_io(struct sup *s, unsigned idx);

/**
 * Everything instance @pid has written, read now, its last partial line
 * included: before its death is logged, so that its last words come first.
 */
void sup_svclog_drain(struct sup *s, pid_t pid);

/** Streams paused by their rate bound, read again once their second is over. */
void sup_svclog_tick(struct sup *s, uint64_t now);

/** Every held partial line out (a re-exec: the new image reads on from the pipes). */
void sup_svclog_flush(struct sup *s);

/** Drain and close every stream (the loop's end). */
void sup_svclog_end(struct sup *s);

#endif
