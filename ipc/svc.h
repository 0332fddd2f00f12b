/* SPDX-License-Identifier: MIT */
/*
 * ipc/svc.h: the contract between the supervisor and every service process
 * (drivers, router, shaper, test services). The supervisor starts a service
 * with fork and exec, holding only:
 *   fd 0, 1   /dev/null
 *   fd 2      the supervisor's stderr (one log line per event)
 *   fd 3      the config blob (IPC_SVC_CONFIG_FD): a sealed, read-only memfd
 *   the fds the blob names: pool, rings, eventfds, its stats region, the
 *   readiness pipe, and those its kind's typed config names (tables/config.h):
 *   device fds (TAP, AF_XDP) for drivers, the tables for the router, the
 *   mailbox for a shaper.
 * The blob opens with a shm header (magic, kind "config", version) that the
 * service checks first; the typed part has a header of its own. The service reports readiness by writing "\n" to the
 * readiness pipe after init (s6 style), and bumps a heartbeat in its stats
 * region every loop; it wakes at least every hang_ms / 4 so that an idle
 * service keeps beating.
 *
 * Warm standby: the supervisor keeps a second instance of each service
 * exec'd and mapped, blocked inside ipc_svc_open() on a pipe whose fd number
 * is in its environment (IPC_SVC_STANDBY_ENV). When the running instance
 * dies, the supervisor reclaims its buffers and writes one byte to that
 * pipe: the standby binds its ring cursors to the indices as they are now
 * and carries on, so a restart costs no fork, exec or dynamic linking. A
 * standby touches no ring, buffer or counter before it is told to go.
 */
#ifndef IPC_SVC_H
#define IPC_SVC_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "inject.h"
#include "pool.h"
#include "ring.h"
#include "sandbox.h"
#include "shm.h"
#include "wake.h"

#define IPC_SVC_VERSION 5 /* 4: trust zones (zone, nzones, zone_fd, port_zone; ring zone); 5: cap_fd */
#define IPC_STATS_VERSION 6 /* 4: IPC_SVC_MAX_CTR 192 (the router's IPv6 counters); 5: the inject block (ipc/inject.h); 6: the supervisor's pulse */
#define IPC_SVC_CONFIG_FD 3
#define IPC_SVC_STANDBY_ENV "RINGROUTER_STANDBY_FD"
/* The path the supervisor exec'd the service from (by fd: AT_EXECFN says /dev/fd/N). */
#define IPC_SVC_BINARY_ENV "RINGROUTER_BINARY"
#define IPC_SVC_MAX_RINGS 16
#define IPC_MAX_PORTS 16
#define IPC_MAX_ZONES IPC_MAX_PORTS /* trust zones: one pool each (docs/security.md) */
#define IPC_SVC_MAX_CTR 192
#define IPC_CTR_NAME 32
#define IPC_STAGE_MAX 16
#define IPC_STAGE_NAME 40

enum ipc_svc_kind {
    IPC_SVC_ROUTER = 1,
    IPC_SVC_SHAPER = 2,
    IPC_SVC_TAP = 3,
    IPC_SVC_AFXDP = 4,
    IPC_SVC_PASSTHRU = 5, /* test stand-in: forwards input ring i to output ring i */
    IPC_SVC_ROUTES = 6,   /* rr-routes: routes from a daemon (netlink, FPM) into the route channel */
    IPC_SVC_FILTER = 7,   /* rr-filter: conntrack, NAT and rules on the filtered ports' paths */
};

enum ipc_port_driver { IPC_DRV_TAP = 1, IPC_DRV_AFXDP = 2 };

struct ipc_svc_ring {
    int32_t fd;      /* the ring's memfd */
    int32_t wake_fd; /* output rings: the consumer's eventfd (-1: it never sleeps); input rings: -1 */
    uint16_t port;       /* the port whose traffic it carries, or IPC_PORT_NONE */
    uint16_t peer_owner; /* the other end's pool owner id, sealed here: the header's the ends can write (0: not given) */
    uint16_t zone;       /* the trust zone (pool) whose handles it carries */
    uint16_t flags;      /* IPC_RING_F_* */
};
/* The router's output ring to the filter's egress for a port the filter does
 * not sit on: the packets that came in by a port it does (docs/filter.md). */
#define IPC_RING_F_FILTER 1u

struct ipc_svc_port {
    char name[16];
    char ifname[16];
    char netns[64];
    uint8_t mac[6];
    uint16_t mtu;
    uint32_t addr; /* host byte order */
    uint8_t plen;
    uint8_t driver; /* enum ipc_port_driver */
    uint16_t flags; /* IPC_PORT_F_* */
    uint32_t offloads;
    uint32_t rx_inflight;
};
#define IPC_PORT_F_SHAPER 1u

#define IPC_PORT_F_BUSY_POLL 2u /* afxdp: the socket busy-polls the device's NAPI (the supervisor set it up) */
/* afxdp in generic XDP mode: frames are what the sending stack built, TSO
 * aggregates (multi-buffer) and partial checksums included (services/router/gso.h) */
#define IPC_PORT_F_RX_PARTIAL 4u
/* The filter sits on this port's path: what comes in by it passed the
 * filter's ingress, and its egress must pass the filter too (docs/filter.md). */
#define IPC_PORT_F_FILTER 8u
/* a VLAN sub-interface: no device of its own, its parent's driver serves it
 * (drivers/common/vlan.h) */
#define IPC_PORT_F_VLAN 16u
/* a vacant slot: its port was removed while others stayed after it; the
 * router forgets its neighbours and sends nothing there */
#define IPC_PORT_F_VACANT 32u

struct ipc_svc_config {
    struct ipc_shm_hdr shm;
    uint32_t kind;  /* enum ipc_svc_kind */
    uint16_t owner; /* pool owner id of this service */
    uint16_t port;  /* drivers and shapers: their port index; others IPC_PORT_NONE */
    char name[32];  /* "router", "driver-a", "shaper-b" */
    int32_t pool_fd;
    int32_t stats_fd;
    int32_t wake_fd;   /* our eventfd: producers into our input rings write it */
    int32_t notify_fd; /* readiness pipe: write "\n" once ready */
    int32_t cpu;       /* -1: no pinning */
    uint32_t poll_us;  /* busy-poll budget before sleeping */
    uint32_t hang_ms;  /* the supervisor kills a service silent for longer */
    uint32_t n_in;
    uint32_t n_out;
    struct ipc_svc_ring in[IPC_SVC_MAX_RINGS];
    struct ipc_svc_ring out[IPC_SVC_MAX_RINGS];
    uint32_t nports;
    uint32_t flags; /* IPC_SVC_F_* */
    struct ipc_svc_port ports[IPC_MAX_PORTS];
    /* Trust zones: each is a pool of its own, and a ring carries the
     * handles of one. pool_fd is the pool of the service's zone (the
     * router's: zone 0); the router alone maps every zone, zone_fd[z]
     * (zone_fd[0] = pool_fd), and copies what crosses from one to another. */
    uint16_t zone;   /* this service's zone (the router: 0) */
    uint16_t nzones; /* the router: how many zone_fd[] name; every other service: 0 */
    int32_t zone_fd[IPC_MAX_ZONES];
    uint8_t port_zone[IPC_MAX_PORTS];
    int32_t cap_fd; /* the capture region (ipc/capture.h), -1: none */
    uint32_t extra_len; /* the kind's typed config (tables/config.h) follows at extra[] */
    _Alignas(8) uint8_t extra[];
};
/* Count CPU cycles per stage (ipc/stage.h): the manifest's [router] stages = on. */
#define IPC_SVC_F_STAGES 1u

enum ipc_svc_state { IPC_SVC_STARTING = 0, IPC_SVC_READY = 1, IPC_SVC_STOPPING = 2 };

/*
 * One stage of a service's loop (ipc/stage.h): the TSC cycles spent in it,
 * the packets it handled, and the passes that handled at least one. A whole
 * cache line each, written by the service alone, and only with stage
 * counters on.
 */
struct ipc_stage {
    _Atomic uint64_t cycles;
    _Atomic uint64_t pkts;
    _Atomic uint64_t calls;
    char name[IPC_STAGE_NAME];
};
_Static_assert(sizeof(struct ipc_stage) == IPC_CACHELINE, "a stage is one cache line");

/*
 * A service's stats region, one per service, written by the service alone and
 * read by the supervisor for `ringrouter stats` and hang detection. The
 * service names its counters at start, so readers need no per-kind tables.
 */
struct ipc_svc_stats {
    struct ipc_shm_hdr shm;
    _Alignas(IPC_CACHELINE) _Atomic uint64_t heartbeat; /* bumped every loop */
    _Atomic uint64_t loops;
    _Atomic uint64_t sleeps;
    _Atomic uint64_t wakes_sent;
    _Atomic uint64_t wake_missed; /* sleeps that timed out with handles waiting (ipc_svc_slept) */
    _Atomic uint32_t state;       /* enum ipc_svc_state */
    _Atomic uint32_t pid;
    _Atomic uint32_t nctr;
    uint32_t pad;
    _Atomic uint64_t open_ns;  /* CLOCK_MONOTONIC when the service began ipc_svc_open */
    _Atomic uint64_t ready_ns; /* ... and when it reported ready: the restart-time breakdown */
    _Atomic uint32_t nstage;   /* stages named (ipc_stage_names) */
    uint32_t pad2;
    _Alignas(IPC_CACHELINE) _Atomic uint64_t ctr[IPC_SVC_MAX_CTR];
    char ctr_name[IPC_SVC_MAX_CTR][IPC_CTR_NAME];
    _Alignas(IPC_CACHELINE) struct ipc_stage stage[IPC_STAGE_MAX];
    /* Fault injection: the supervisor's command line and the service's
     * answer line (ipc/inject.h), the one block the supervisor writes. */
    struct ipc_inject inject;
    /* The supervisor's pulse, the other block it writes: CLOCK_MONOTONIC
     * at its last tick, and how long we may forward without it (manifest
     * orphan_grace_ms). Services outlive their supervisor (a new one adopts
     * them, supervisor/adopt.c); a pulse that stays still past the grace
     * means no one will, and we stop (ipc_svc_orphan_check). */
    _Alignas(IPC_CACHELINE) _Atomic uint64_t sup_beat_ns;
    _Atomic uint32_t sup_grace_ms;
    uint32_t pad3;
};

/* A pulse older than this: the supervisor is gone (it ticks every 100 ms at
 * most), or stopped. We say so once, and forward on. */
#define IPC_SUP_SILENT_NS 2000000000ull

/* A service's view of itself, built by ipc_svc_open(). */
struct ipc_svc {
    const struct ipc_svc_config *cfg;
    size_t cfg_size;
    struct ipc_pool pool; /* our zone's pool (the router's: zone 0) */
    /* The router: every zone's pool, zpool[0] = &pool; nzones 1 elsewhere. */
    struct ipc_pool *zpool[IPC_MAX_ZONES];
    struct ipc_pool zextra[IPC_MAX_ZONES];
    unsigned nzones;
    struct ipc_svc_stats *stats;
    unsigned n_in, n_out;
    struct ipc_ring_cons in[IPC_SVC_MAX_RINGS];
    struct ipc_ring_prod out[IPC_SVC_MAX_RINGS];
    struct ipc_ring_cons *in_ptr[IPC_SVC_MAX_RINGS];
    struct ipc_wake_set wake;
    int wake_fd;
    bool stages_on; /* IPC_SVC_F_STAGES: the one branch ipc/stage.h costs when off */
    enum ipc_sandbox_profile sandbox; /* the binary's seccomp allow-list (ipc/sandbox.h) */
    struct ipc_inj_local inj;         /* fault injection's state (ipc/inject.h) */
    uint32_t beats;                   /* loops since the last look at the supervisor's pulse */
    bool orphaned;                    /* its pulse is still: we said so */
    bool orphan_stop;                 /* ... for longer than the grace: the main loop ends */
};

/*
 * The one stop path of every service. SIGTERM and SIGINT are blocked for the
 * process's whole life and taken through a signalfd, never by a handler: a
 * handler that runs between the loop's last look at its flag and the sleep
 * leaves the service asleep for a whole idle period, while a pending signal
 * keeps the signalfd readable, and the signalfd is in every sleep's set
 * (ipc_svc_wait and ipc_svc_nap_us here; a driver's own ppoll or io_uring
 * poll). A loop that never sleeps reads it every IPC_SVC_STOP_LOOPS loops in
 * ipc_svc_beat. When a stop signal is taken, *stop (the main loop's
 * condition) is set, so that the service finishes its batch and hands its
 * buffers back.
 */
#define IPC_SVC_STOP_LOOPS 256u /* a power of two */

struct ipc_svc_stop {
    int fd;                      /* the signalfd, -1 before ipc_svc_catch_stop */
    bool watched;                /* the service's own sleep set watches fd (TAP: io_uring) */
    volatile sig_atomic_t *flag; /* the main loop's condition */
};
extern struct ipc_svc_stop ipc_svc_stop_;

/**
 * Block SIGTERM and SIGINT and open the signalfd that takes them. Call first
 * thing in main(), before ipc_svc_open() (the sandbox's START stage allows no
 * signalfd). Returns 0 or -errno.
 */
int ipc_svc_catch_stop(volatile sig_atomic_t *stop);

/** The stop signalfd, for a driver's own sleep set (-1: none). */
static inline int ipc_svc_stop_fd(void)
{
    return ipc_svc_stop_.fd;
}

/** A stop signal was taken (or the driver's sleep set saw the signalfd readable). */
static inline void ipc_svc_stop_seen(void)
{
    if (ipc_svc_stop_.flag)
        *ipc_svc_stop_.flag = 1;
}

/** Take a pending stop signal, if any, without blocking: one read. */
void ipc_svc_stop_poll(void);

/**
 * Service side: map the config blob at IPC_SVC_CONFIG_FD, check it is a
 * config of @kind (0: any, for test stand-ins), attach the pool, the stats region and every ring. Returns
 * 0 or -errno with @err naming what is wrong.
 *
 * Its first steps: not dumpable, then the START stage of the seccomp
 * allow-list of @kind (the stand-ins' for 0; ipc/sandbox.h), so that
 * everything after, a standby's wait included, runs under it.
 */
int ipc_svc_open(struct ipc_svc *svc, uint32_t kind, struct ipc_err *err);

/**
 * Name the service's counters (@n names, at most IPC_SVC_MAX_CTR) and return
 * the array to bump with ipc_count().
 */
_Atomic uint64_t *ipc_svc_counters(struct ipc_svc *svc, const char *const *names, unsigned n);

/**
 * Set-up is over: install the RUN stage of the service's seccomp allow-list
 * (ipc/sandbox.h), then report readiness to the supervisor (state READY and
 * "\n" on the pipe). So a service that says it is ready runs its steady
 * state, and only it, under the filter. Returns 0, or -errno with @err (the
 * filter could not be installed: not ready; exit 111).
 */
int ipc_svc_ready(struct ipc_svc *svc, struct ipc_err *err);

/**
 * The supervisor's pulse (sup_beat_ns): still for IPC_SUP_SILENT_NS, we log
 * that we forward on without it; still for its grace, we set orphan_stop,
 * which every main loop takes as it takes SIGTERM. A pulse that moves again
 * (a new supervisor adopted us) clears both. A region no supervisor ever
 * ticked (a test's stand-in) is left alone.
 */
void ipc_svc_orphan_check(struct ipc_svc *svc);

/**
 * One loop done: bump the heartbeat, and look at the fault-injection word
 * (ipc/inject.h): one relaxed load of a line only the supervisor writes and
 * one compare, unless a command came or a fault is in progress. Every
 * service calls it after its loop's wake-ups are flushed, at the boundary
 * between two batches.
 */
static inline void ipc_svc_beat(struct ipc_svc *svc)
{
    ipc_count(&svc->stats->heartbeat, 1);
    ipc_count(&svc->stats->loops, 1);
    if (ipc_unlikely(ipc_ld_rlx(&svc->stats->inject.seq) != svc->inj.seen || svc->inj.busy))
        ipc_inject_run(svc);
    /* A busy service never sleeps: it looks at the pulse every 16384
     * loops instead (a clock read), well within a second at any load. */
    if (ipc_unlikely(++svc->beats >= 16384))
        ipc_svc_orphan_check(svc);
    else if (ipc_unlikely((svc->beats & (IPC_SVC_STOP_LOOPS - 1)) == 0))
        ipc_svc_stop_poll();
}

/**
 * End of a loop: send the wake-ups this loop owes, at most one per peer.
 * Returns the number of eventfd writes made.
 */
static inline unsigned ipc_svc_flush(struct ipc_svc *svc)
{
    unsigned w = ipc_wake_flush(&svc->wake);
    if (w)
        ipc_count(&svc->stats->wakes_sent, w);
    return w;
}

/**
 * Nothing to do: arm the wake words of every input ring, re-check them, and
 * block on our eventfd and the stop signalfd for at most @timeout_ms (the
 * heartbeat's period). Returns 1 if woken or work arrived, 0 on timeout,
 * -EINTR when a stop signal came (*stop is set).
 */
int ipc_svc_wait(struct ipc_svc *svc, int timeout_ms);

/** ipc_svc_wait for at most @timeout_us microseconds. */
int ipc_svc_wait_us(struct ipc_svc *svc, int64_t timeout_us);

/**
 * Sleep up to @timeout_us on our eventfd, arming only the @n input rings in
 * @wake_on: for a service that leaves packets waiting in its other inputs on
 * purpose (the router's backpressure), which ipc_svc_wait would return for
 * at once. Returns 1 without sleeping when a ring of @wake_on has work. A
 * sleep, counted as one; a timeout here is no lost wake-up.
 */
int ipc_svc_nap_us(struct ipc_svc *svc, struct ipc_ring_cons *const *wake_on, unsigned n, int64_t timeout_us);

/** The default wait: a quarter of hang_ms, so that an idle service keeps beating. */
static inline int ipc_svc_idle_ms(const struct ipc_svc *svc)
{
    uint32_t h = svc->cfg->hang_ms ? svc->cfg->hang_ms : 1000;
    return (int)(h / 4 ? h / 4 : 1);
}

/**
 * After a sleep that ended by its timeout (@timed_out): count it in
 * wake_missed if an input ring holds handles all the same. The wake-up
 * protocol (ipc/wake.h) says a producer that published into an armed ring
 * wakes us, so a sleep that runs out beside waiting work is a lost wake-up,
 * and it cost the packets up to a whole idle period: counted, not assumed
 * away. (A producer that published just as the timeout fired, and is about
 * to flush its wake-up, can rarely count one too.)
 */
void ipc_svc_slept(struct ipc_svc *svc, bool timed_out);

void ipc_svc_close(struct ipc_svc *svc);

/** CLOCK_MONOTONIC in ns: the clock of every service's timers and stats. */
uint64_t ipc_svc_now_ns(void);

/* Supervisor side: stats regions. */
int ipc_stats_create(const char *name, int *fd, struct ipc_svc_stats **st, struct ipc_err *err);
int ipc_stats_attach(int fd, struct ipc_svc_stats **st, struct ipc_err *err);

/**
 * Supervisor side: write @tmpl (its shm header is ignored) and @extra into a
 * new memfd and seal it read-only. Returns 0 with *fd, or -errno with @err.
 */
int ipc_svc_config_create(const struct ipc_svc_config *tmpl, const void *extra, uint32_t extra_len, int *fd,
                          struct ipc_err *err);

/* Map a config blob read-only and check it (the service's first step). */
int ipc_svc_config_map(int fd, const struct ipc_svc_config **cfg, size_t *size, struct ipc_err *err);

#endif
