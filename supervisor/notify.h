/* SPDX-License-Identifier: MIT */
/*
 * supervisor/notify.h: the supervisor's side of systemd's sd_notify
 * protocol, written here rather than linked from libsystemd: a handful of
 * "KEY=VALUE\n" lines in one datagram to the socket $NOTIFY_SOCKET names is
 * all of it, and the supervisor links nothing it does not need (docs/supervisor.md).
 *
 *   READY=1      once, when every service is up for the first time
 *   STATUS=...   whenever the one-line summary changes
 *   WATCHDOG=1   every half of $WATCHDOG_USEC, from the event loop's tick, so
 *                a loop that stops turning stops the pings and systemd
 *                restarts the supervisor
 *   RELOADING=1  (with MONOTONIC_USEC) when a reload begins to apply a
 *                manifest that checked, and READY=1 once it has answered; a
 *                refused reload sends neither (it changed nothing)
 *   STOPPING=1   when the shutdown begins
 *
 * Without $NOTIFY_SOCKET (not under systemd, or Type=simple) each call is a
 * no-op.
 */
#ifndef SUP_NOTIFY_H
#define SUP_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

struct sup;

/**
 * $NOTIFY_SOCKET's value as a socket address: an absolute path, or an
 * abstract name written with a leading '@' (the '@' becomes the NUL byte).
 * Returns 0, or -EINVAL for anything else (empty, relative, too long).
 */
int sup_notify_addr(const char *name, struct sockaddr_un *sa, socklen_t *len);

/**
 * The watchdog interval $WATCHDOG_USEC asks for, in ns, or 0: unset, not a
 * positive number, or meant for another process ($WATCHDOG_PID is not @pid).
 */
uint64_t sup_notify_watchdog_ns(const char *usec, const char *wpid, long pid);

/** Send @msg (lines "KEY=VALUE\n") as one datagram on @fd to @sa. 0 or -errno. */
int sup_notify_send_to(int fd, const struct sockaddr_un *sa, socklen_t len, const char *msg);

/** Read $NOTIFY_SOCKET and $WATCHDOG_USEC and open the socket, once, in `up`. */
void sup_notify_init(void);
/** Once per loop iteration: READY=1, STATUS= changes, WATCHDOG=1 when due. */
void sup_notify_tick(const struct sup *s, uint64_t now);
/** RELOADING=1 (with MONOTONIC_USEC, as systemd asks) as an accepted reload begins. */
void sup_notify_reloading(void);
/** READY=1 again once that reload has answered; nothing if none began. */
void sup_notify_reloaded(void);
/** STOPPING=1 and a last STATUS=, as the shutdown begins. */
void sup_notify_stopping(const char *why);
/** Is a notify socket in use (for the log line at start)? */
bool sup_notify_active(void);

#endif
