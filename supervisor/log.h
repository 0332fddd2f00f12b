/* SPDX-License-Identifier: MIT */
/*
 * supervisor/log.h: the bottom of the supervisor: its clock and its log
 * lines. Every other supervisor file may include this one; it includes
 * nothing of the supervisor's, so no file needs the event loop (loop.c) to
 * log or to tell the time.
 */
#ifndef SUP_LOG_H
#define SUP_LOG_H

#include <stddef.h>
#include <stdint.h>

/** CLOCK_MONOTONIC in ns: the clock of every deadline the supervisor keeps. */
uint64_t sup_now_ns(void);

/** One line per event on stderr, prefixed "ringrouter: ", readable under systemd. */
void sup_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * A name from a service's shared memory (a counter's, a stage's), which the
 * service writes: copy at most @max bytes of @src (it need not end in NUL)
 * into @buf (@len bytes), printable ASCII only, anything else as '?'.
 * Returns @buf.
 */
const char *sup_shm_name(char *buf, size_t len, const char *src, size_t max);

#endif
