/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/harness.h: helpers for test programs that stand in for the
 * supervisor: create rings, eventfds, stats regions and config blobs, open
 * TAP devices inside a network namespace, and start a service binary with its
 * config on fd 3 and only the fds it needs (as the supervisor will). Helpers
 * are t_-prefixed (liburing's test helpers).
 */
#ifndef TESTS_LIB_HARNESS_H
#define TESTS_LIB_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ipc/svc.h"
#include "tables/config.h"

#define T_KEEP_MAX 64

/* One service the harness starts. */
struct t_svc {
    char name[32];
    int wake_fd;   /* its eventfd: producers into its input rings write it */
    int stats_fd;
    struct ipc_svc_stats *stats;
    int notify_rd; /* readiness pipe, our end */
    int notify_wr; /* its end (closed here once it runs) */
    int cfg_fd;
    pid_t pid;
    int pidfd;
    struct ipc_svc_config *cfg; /* the template (flexible array member: allocated), filled by t_svc_prepare and the caller */
    struct tbl_driver_cfg drv;  /* drivers: their typed config (tables/config.h); the caller sets dev_fd */
    int keep[T_KEEP_MAX];
    unsigned nkeep;
};

/** Make sure fd 3 is taken (by /dev/null), so that no fd we create is 3: children get their config there. */
void t_reserve_fd3(void);

/**
 * Create a ring of @size slots between owners @prod and @cons. Returns 0 with
 * *fd and *sh, or -errno with @err.
 */
int t_ring(const char *name, uint32_t size, uint32_t id, uint16_t prod, uint16_t cons, int *fd,
           struct ipc_ring_shared **sh, struct ipc_err *err);

/**
 * Open TAP device @ifname in network namespace @netns (/run/netns/NAME;
 * NULL: ours) with IFF_TAP | IFF_NO_PI | IFF_VNET_HDR, a 12-byte vnet header,
 * TUNSETOFFLOAD per @offloads (TAP_OFFLOAD_* bits), MTU @mtu, and bring it up;
 * then return to our namespace. Returns 0 with *fd (close-on-exec), or -errno.
 */
int t_tap_open(const char *netns, const char *ifname, uint32_t offloads, uint32_t mtu, int *fd, struct ipc_err *err);

/** Parse "csum,tso4,tso6,uso" or "none" into TAP_OFFLOAD_* bits; -1 on an unknown word. */
long t_offloads_parse(const char *s);

/**
 * Start a service description: its eventfd, stats region and readiness pipe,
 * and a config template of @kind for owner @owner on the pool @pool_fd.
 */
int t_svc_prepare(struct t_svc *s, const char *name, uint32_t kind, uint16_t owner, int pool_fd, struct ipc_err *err);

/** Give the service input ring @ring_fd (it consumes). */
void t_svc_add_in(struct t_svc *s, int ring_fd, uint16_t port);

/** Give the service output ring @ring_fd (it produces); @wake_fd is the consumer's eventfd. */
void t_svc_add_out(struct t_svc *s, int ring_fd, int wake_fd, uint16_t port);

/** Keep @fd open in the child (a device fd). */
void t_svc_keep(struct t_svc *s, int fd);

/** Seal the config and fork + exec @bin with it on fd 3 and only the kept fds. */
int t_svc_start(struct t_svc *s, const char *bin, struct ipc_err *err);

/**
 * Start the service again after it died (its successor): a new readiness
 * pipe, the same config otherwise (rings, stats region, device fd). The
 * caller reclaims the dead instance's buffers first.
 */
int t_svc_restart(struct t_svc *s, const char *bin, struct ipc_err *err);

/** Wait up to @timeout_ms for readiness. Returns 1 ready, 0 timeout, -1 the service died or closed the pipe. */
int t_svc_wait_ready(struct t_svc *s, int timeout_ms);

/**
 * Send @sig (0: none) and wait up to @timeout_ms for the service to exit;
 * SIGKILL after that. Returns the wait status, or -1.
 */
int t_svc_stop(struct t_svc *s, int sig, int timeout_ms);

/** Counter @name of a stats region; false if the service has no such counter. */
bool t_counter(const struct ipc_svc_stats *st, const char *name, uint64_t *val);

/** Print every counter as "PREFIX NAME VALUE" lines. */
void t_print_counters(FILE *f, const char *prefix, const struct ipc_svc_stats *st);

/** Print a ring's counters as "ring NAME FIELD VALUE" lines. */
void t_print_ring(FILE *f, const char *name, const struct ipc_ring_shared *sh);

#endif
