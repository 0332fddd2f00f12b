/* SPDX-License-Identifier: MIT */
/*
 * supervisor/log.h: the bottom of the supervisor: its clock and its log
 * lines. Every other supervisor file may include this one; it includes
 * nothing of the supervisor's, so no file needs the event loop (loop.c) to
 * log or to tell the time.
 */
#ifndef SUP_LOG_H
#define SUP_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/** CLOCK_MONOTONIC in ns: the clock of every deadline the supervisor keeps. */
uint64_t sup_now_ns(void);

/*
 * A log line's syslog priority, as the kernel's printk marks them: a string
 * pasted before the format, sup_log(SUP_LOG_ERR "...", ...), or sup_err()
 * and its kin below. A line without one is SUP_LOG_INFO.
 */
#define SUP_LOG_ERR "<3>"
#define SUP_LOG_WARN "<4>"
#define SUP_LOG_NOTICE "<5>"
#define SUP_LOG_INFO "<6>"

/**
 * One line per event on stderr, prefixed "ringrouter: ". When stderr is the
 * journal's stream ($JOURNAL_STREAM names its device and inode, as systemd
 * sets it), the line starts with its priority ("<3>ringrouter: ..."), which
 * journald takes for the entry's, so `journalctl -p err` finds the errors;
 * anywhere else the marker is left out.
 */
void sup_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* sup_log at err, warning or notice: sup_warn("%s: ...", name). */
#define sup_err(...) sup_log(SUP_LOG_ERR __VA_ARGS__)
#define sup_warn(...) sup_log(SUP_LOG_WARN __VA_ARGS__)
#define sup_notice(...) sup_log(SUP_LOG_NOTICE __VA_ARGS__)

/** sup_log with a va_list and the priority as a number (0-7); a trailing newline in @fmt is dropped. */
void sup_vlog(int prio, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/**
 * The priority marker a line written to stderr should start with: "<N>"
 * when stderr is the journal, "" otherwise (@prio 0-7). For the lines the
 * supervisor's commands print themselves, so that they are classed too.
 */
const char *sup_log_prio(int prio, char buf[4]);

/** `{"timestamp":SECONDS,`: the start of every --json answer, the wall clock's unix seconds. */
void sup_json_begin(FILE *f);

/**
 * A name from a service's shared memory (a counter's, a stage's), which the
 * service writes: copy at most @max bytes of @src (it need not end in NUL)
 * into @buf (@len bytes), printable ASCII only, anything else as '?'.
 * Returns @buf.
 */
const char *sup_shm_name(char *buf, size_t len, const char *src, size_t max);

#endif
