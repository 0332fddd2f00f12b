/* SPDX-License-Identifier: MIT */
/*
 * supervisor/sup.h: the supervisor's state. One struct sup holds everything
 * the privileged process created from the manifest (pool, rings, eventfds,
 * stats regions, devices, config blobs) and the live state of every service.
 * setup.c builds and tears it down, uids.c says who the services run as,
 * spawn.c starts services, policy.c decides what a death or a hang means,
 * loop.c is the one blocking point, ctl.c answers the control socket.
 */
#ifndef SUP_SUP_H
#define SUP_SUP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "ipc/pool.h"
#include "ipc/ring.h"
#include "ipc/svc.h"
#include "tables/fib6_write.h"
#include "tables/fib_write.h"
#include "tables/neigh6_write.h"
#include "tables/neigh_write.h"
#include "tables/shaper.h"
#include "supervisor/log.h"
#include "supervisor/manifest.h"
#include "supervisor/upgrade.h"

#define SUP_MAX_SERVICES (1 + 2 * SUP_PORTS_MAX)
#define SUP_MAX_RINGS (3 * SUP_PORTS_MAX)
#define SUP_MAX_FDS 80 /* fds handed to one service, the config blob included (the router: every zone's pool) */
/* Death times kept per service for its restart window: more than the
 * manifest's largest restart_limit, so the window never undercounts. */
#define SUP_DEATHS_KEPT (SUP_RESTART_LIMIT_MAX + 1)

#define SUP_EXIT_OK 0
#define SUP_EXIT_USAGE 100
#define SUP_EXIT_INTERNAL 101
#define SUP_EXIT_SYSTEM 111
#define SUP_EXIT_FAILED 3 /* `status`: some service is failed (systemctl status's 3: not running) */
/* The wait status of an adopted service that is not our child: it ended,
 * and only its parent (init) learns how. */
#define SUP_STATUS_UNKNOWN (-1)

enum sup_state {
    SUP_ST_DOWN,     /* not running and not due to start (never started, or exited for good) */
    SUP_ST_STARTING, /* spawned, not yet ready */
    SUP_ST_UP,       /* ready */
    SUP_ST_BACKOFF,  /* dead, waiting for its restart time */
    SUP_ST_FAILED,   /* restarted too often: given up */
    SUP_ST_STOPPING, /* asked to stop (shutdown or restart command) */
    SUP_NSTATES
};

/* Why a service was restarted: after a death (a crash, any kill but the
 * hang check's; a hang: no heartbeat for hang_ms, or not ready within 5 s)
 * or asked for (an upgrade's handover; a restart: `ringrouter restart`, a
 * reload's, an adopted router's move to the new FIBs). `status --json`
 * restarts_by_cause, and the metrics' cause label. */
enum sup_cause { SUP_CAUSE_CRASH, SUP_CAUSE_HANG, SUP_CAUSE_UPGRADE, SUP_CAUSE_RESTART, SUP_NCAUSES };

/* The last reload's result (`status --json` last_reload; the metrics). */
enum sup_reload_result { SUP_RELOAD_NONE, SUP_RELOAD_OK, SUP_RELOAD_PARTIAL, SUP_RELOAD_REFUSED };

struct sup_ring {
    char name[40];
    int fd;
    struct ipc_ring_shared *sh;
    int prod; /* service index */
    int cons;
    int port; /* the port whose traffic it carries */
    uint64_t lie_seen[2]; /* prod_lie and cons_lie as the health tick last read them (policy.c) */
    uint32_t stranded;    /* the producer's buffers a lying consumer left in it, until the producer's reclaim */
    char stranded_by[SUP_SERVICE_MAX + 1]; /* that consumer */
    unsigned zone; /* the trust zone whose handles it carries: its port's (zones.h) */
};

struct ipc_cap; /* ipc/capture.h */

struct sup_svc {
    const struct sup_service *m; /* from the manifest */
    char name[SUP_SERVICE_MAX + 1];
    char binary[300];
    uint32_t kind; /* enum ipc_svc_kind */
    uint16_t owner;
    int port;
    uid_t uid; /* what it runs as (uids.c): its own uid and gid, or [router] user's */
    gid_t gid;
    uint16_t kown; /* AF_XDP drivers: the pool owner id of their socket's kernel side */
    /* A driver group (m->members): each port's device and kernel owner id,
     * in port order; grp_fd[0] is dev_fd, grp_kown[0] kown. ngrp 0: none. */
    int ngrp;
    int grp_port[SUP_GROUP_MAX];
    int grp_fd[SUP_GROUP_MAX];
    uint16_t grp_kown[SUP_GROUP_MAX];
    int wake_fd;  /* its eventfd */
    int stats_fd;
    struct ipc_svc_stats *stats;
    struct ipc_shm_hdr stats_shm; /* its header as created: a successor checks it */
    int cfg_fd;
    int dev_fd; /* TAP or XSK fd kept by the supervisor, -1 if none */
    int cap_fd;          /* drivers, the router, shapers: the capture region (capture.c); 0: none */
    struct ipc_cap *cap; /* ... mapped */
    int mbox_fd; /* shapers: their control mailbox (tables/shaper.h), -1 otherwise */
    struct shp_mbox *mbox;
    uint64_t mbox_seq; /* the last command's seq we wrote: the mailbox's copy is the shaper's to spoil too */
    int in[IPC_SVC_MAX_RINGS], n_in;   /* ring indices */
    int out[IPC_SVC_MAX_RINGS], n_out;

    /* Live state. */
    enum sup_state state;
    pid_t pid;
    int pidfd;
    int notify_fd; /* read end of the readiness pipe, while STARTING */
    uint64_t started_ns, ready_ns, died_ns;
    uint64_t deadline_ns; /* BACKOFF: restart time; STARTING: readiness limit */
    uint64_t last_beat;
    uint64_t last_beat_ns;
    unsigned restarts;    /* since `up`, after a death: a crash, a kill, a hang, a failed start */
    unsigned planned;     /* since `up`, asked for: `restart`, `upgrade`, a reload, an adoption's handover */
    unsigned restarts_by[SUP_NCAUSES]; /* both, by cause, since `up` (adoption keeps them: adopt.c) */
    bool killed_hung;     /* the instance's kill was the hang check's: its death is a hang */
    unsigned consecutive; /* deaths since it was last stable */
    uint64_t deaths_ns[SUP_DEATHS_KEPT];
    unsigned ndeaths; /* ring of recent death times, for the window */
    char last_exit[96];
    bool restart_pending; /* STOPPING because of `ringrouter restart` */
    bool fresh_rates;     /* a shaper whose classes a reload changed: its next start resumes no rates */
    bool idle, sb_idle;   /* the instance runs in SCHED_IDLE until it serves (spawn.c, sup_sched_raise) */
    uint32_t cg_quota;    /* the % of a CPU its cgroup has now (cgroup.c): 0 none */

    /* The warm standby (ipc/svc.h): exec'd, mapped, waiting on go_fd. */
    pid_t sb_pid;
    int sb_pidfd;
    int sb_notify_fd;
    int sb_go_fd;
    uint64_t sb_retry_ns;
    uint64_t sb_spawned_ns;
    bool sb_parked; /* it said it waits: promotion costs no exec */
    uint64_t ready_ms_last; /* kill to ready, for bench/restart */
    char sb_exit[96];       /* how the last standby ended */
    unsigned sb_deaths;     /* standbys that ended on their own */

    /* What each instance was exec'd from (`status`, `upgrade`): path, ELF
     * build id, wall-clock start. */
    char run_binary[300], sb_binary[300];
    char run_build[SUP_BUILD_ID_MAX], sb_build[SUP_BUILD_ID_MAX];
    time_t run_started, sb_started;
    struct sup_upgrade upg;
    bool adopted; /* taken over from a supervisor that is gone (adopt.c): maybe not our child */
    /* Tampering (policy.c, sup_tamper_tick): since when it holds more than
     * [router] hoard_pct of the pool (0: it does not), and the instance
     * already killed for lying or hoarding. */
    uint64_t hoard_since_ns;
    pid_t convict_pid;
    /* Instances restarted for lying about a ring's index or hoarding: once
     * one has, owner words prove nothing about who held what (count_leak). */
    unsigned convictions;
};

struct sup_xsk; /* supervisor/xsk.c */

/* What woke the event loop: the type in the top half of an epoll key, an
 * index (service or control connection) in the bottom half. */
enum sup_poll { SUP_POLL_SIGNAL = 1, SUP_POLL_TIMER, SUP_POLL_CTL, SUP_POLL_PIDFD, SUP_POLL_NOTIFY, SUP_POLL_SB_NOTIFY, SUP_POLL_CONN,
                SUP_POLL_LOG /* a service's stderr: the index is svclog.c's stream */ };
#define SUP_POLL_KEY(type, idx) (((uint64_t)(type) << 32) | (uint32_t)(idx))

/* Control connections (supervisor/ctl_conn.c): at most SUP_CTL_CONNS open at
 * once, a request of at most SUP_CTL_REQ_MAX - 1 bytes, and the whole
 * exchange within SUP_CTL_DEADLINE_NS of the accept, however slowly the
 * client trickles: no client can hold the event loop, or a slot, for long.
 * Clients other than root (control_group's readers) share at most
 * SUP_CTL_CONNS_SHARED slots, SUP_CTL_CONNS_PER_UID per uid: the rest are
 * root's, so that readers cannot lock out a writer. */
#define SUP_CTL_CONNS 16
#define SUP_CTL_CONNS_SHARED 8
#define SUP_CTL_CONNS_PER_UID 4
#define SUP_CTL_REQ_MAX 512
#define SUP_CTL_SOCK "control.sock" /* in run_dir */
#define SUP_CTL_DEADLINE_NS 1000000000ull
/* How long `shaper set` and `neigh add|del|...` wait for a running
 * service's answer. */
#define SUP_SHAPER_ANSWER_NS 1000000000ull

/* A request waiting for a service's answer through a mailbox: `shaper set`
 * (supervisor/shaper_ctl.c) or a neighbour command (supervisor/neigh_ctl.c). */
enum sup_wait_kind {
    SUP_WAIT_SHAPER = 1, SUP_WAIT_NEIGH, SUP_WAIT_UPGRADE, SUP_WAIT_RELOAD, SUP_WAIT_ROUTE_LOAD,
    SUP_WAIT_FILTER /* supervisor/filter_ctl.c: until the filter is up on what was asked */
};

struct sup_ctl_wait {
    bool pending;
    enum sup_wait_kind kind;
    int svc;          /* the service's index in sup.svcs */
    uint64_t seq;     /* the mailbox ack that answers it */
    uint64_t deadline_ns;
    int op;           /* SUP_WAIT_NEIGH: the command (enum neigh_op) */
    char arg[48];     /* SUP_WAIT_NEIGH: its address, for the errors */
    char what[128];   /* the answer to print when it is taken */
};

/* An `inject` waiting for a service's answer (supervisor/inject.c). */
struct sup_inject_wait {
    bool pending;
    bool answered;    /* crash: the answer is in; waiting to see the death */
    int svc;          /* the service that answers: the target, or its input ring's producer */
    int target;       /* the service injected */
    pid_t pid;        /* the instance asked */
    uint32_t kind;    /* enum ipc_inj_kind */
    uint64_t seq;     /* the ack that answers it */
    uint64_t arg, arg2; /* as asked (leak N; slow US MS) */
    uint64_t deadline_ns;
};

struct sup_inject; /* supervisor/inject.c */

enum sup_conn_state { SUP_CONN_FREE, SUP_CONN_READ, SUP_CONN_WAIT, SUP_CONN_WRITE };

struct sup_ctl_conn {
    enum sup_conn_state st;
    int fd;
    uint32_t have; /* request bytes read */
    uint64_t deadline_ns;
    char req[SUP_CTL_REQ_MAX];
    FILE *out; /* the answer, while it is built (open_memstream into body) */
    char *body;
    size_t len, off; /* the answer's length, and how much of it is sent */
    struct sup_ctl_wait wait;
    struct sup_inject_wait iwait;
    uid_t peer_uid; /* the client's, from SO_PEERCRED at accept */
    bool read_only; /* not root: a member of [router] control_group, who may only read */
};

/* A route added or replaced with `ringrouter route` since `up` (or loaded
 * from the state directory at `up`): what `route show` calls runtime and
 * `route save` writes. */
struct sup_mp; /* supervisor/route_multi.h */
struct sup_rt_route {
    uint32_t addr;
    uint8_t len;
    struct fib_nh nh;  /* the first next hop when it has several: */
    struct sup_mp *mp; /* its next hops, when several (ECMP); else NULL */
};

/* The same for IPv6 (supervisor/route6.c). */
struct sup_rt_route6 {
    uint8_t addr[16];
    uint8_t len;
    struct fib6_nh nh;
    struct sup_mp *mp;
};

struct sup_reload; /* supervisor/reload.c */
struct sup_adopt;  /* supervisor/adopt.c */
struct sup_svclog; /* supervisor/svclog.c */

struct sup {
    struct sup_manifest m;
    char manifest_name[256];
    char manifest_path[4096]; /* the file `up` was given, absolute ("" for the built-in one): what reload reads */
    char bindir[200];
    bool shutting_down;
    int exit_code;
    unsigned leaked; /* buffers held by services at a clean exit, past what `inject leak` took (policy.c) */
    /* Corrupt words the supervisor found (and repaired or refused) in ring
     * headers and shapers' mailboxes; the pool counts its own, pool.corrupt. */
    uint64_t shm_corrupt;
    /* The hoarding check's pass over the pool's owner words (policy.c):
     * when it began, the next buffer to read (the pool's size: no pass
     * under way), and what it has counted so far. */
    uint64_t hoard_scan_ns;
    uint32_t hoard_next;
    struct ipc_owners hoard_own;

    int pool_fd;
    struct ipc_pool pool;
    struct ipc_pool_hdr pool_hdr; /* the pool's header as created: every process that attaches checks it */
    /* Trust zones 1 .. nzones - 1, a pool each (zones.c); zone 0's is pool above. */
    unsigned nzones;
    int zone_fd[IPC_MAX_ZONES];
    struct ipc_pool zone_pool[IPC_MAX_ZONES];
    struct ipc_pool_hdr zone_hdr[IPC_MAX_ZONES];
    int fib_fd;         /* the supervisor writes the FIB (sealed: no one else can), the router reads it */
    int fib_readers_fd; /* the FIB's reader slots, which the router writes */
    struct fib fib;
    int neigh_fd;
    struct neigh_table neigh;
    uint64_t neigh_seq; /* the last neighbour command we wrote: the mailbox's copy is the router's to spoil */
    struct sup_rt_route *rt_routes; /* runtime routes, unordered */
    size_t n_rt_routes, cap_rt_routes;
    struct sup_rt_route6 *rt6_routes; /* runtime IPv6 routes, unordered */
    size_t n_rt6_routes, cap_rt6_routes;
    int fib6_fd; /* the IPv6 FIB's tables; its readers are the IPv4 FIB's (fib_readers_fd) */
    /* An adoption's old FIBs (adopt.c), held until the router that reads
     * them is gone, then let go off the path's CPU (sched_self.c). */
    int old_fib_fd[2];
    int n_old_fibs;
    pid_t old_fib_reader;
    struct fib6 fib6;
    int neigh6_fd;
    struct neigh6_table neigh6;

    struct sup_ring rings[SUP_MAX_RINGS];
    int nrings;
    struct ipc_ring_ref ring_ref[SUP_MAX_RINGS]; /* each ring's geometry and owners as created: trusted */

    struct sup_svc svcs[SUP_MAX_SERVICES];
    int nsvcs;
    char cg_dir[400]; /* cgroup.c: ringrouter/INSTANCE in the cpu hierarchy, "" if no service has cpu_max_pct */
    bool cg_v2;
    char cg_mnt[SUP_PATH_MAX + 8]; /* run_dir/cgroup, if cgroup.c mounted the hierarchy itself */
    struct sup_xsk *xsk; /* AF_XDP ports' sockets and XDP programs (xsk.c); NULL if none */

    uid_t uid; /* [router] user's uid and gid, when set: every service's */
    gid_t gid;

    /* run_dir and state_dir, opened once (rundir.c): every file there is
     * reached through these. 0 until then (an open one is never below 3). */
    int run_fd, state_fd;
    char sock_path[128]; /* run_dir/SUP_CTL_SOCK, as clients name it */
    int ctl_fd;
    gid_t ctl_gid; /* [router] control_group's gid, whose members may read; (gid_t)-1: root only */
    struct sup_ctl_conn conns[SUP_CTL_CONNS];
    int sig_fd;
    int timer_fd;
    int ep_fd;
    uint64_t tick_ns;
    uint64_t last_check_ns; /* when sup_check_timers last ran */

    struct sup_inject *inj;              /* faults in progress (inject.c); NULL until the first */
    struct sup_inject_wait *ctl_iwait;   /* the wait of the request being handled (ctl_conn.c) */
    struct sup_reload *reload;           /* the reload in progress (reload.c); NULL if none */
    struct sup_adopt *adopt;             /* while setup adopts running services (adopt.c) */
    struct sup_svclog *svclog;           /* the services' stderr streams (svclog.c); NULL until the first */
    bool router_handover;                /* adopted: move the router to the new FIBs via its standby */
    uint64_t state_hash;                 /* the manifest hash the state file has (adopt.c) */
    bool upgrade_self;                   /* `upgrade supervisor`: re-exec once the answer is out (adopt.c) */
    time_t started;                      /* this image's start, wall clock and monotonic (`status`) */
    uint64_t started_ns;
    char upgrade_self_binary[300];
    enum sup_reload_result reload_last; /* and when (wall clock), for `status --json` */
    time_t reload_last_at;
};

/* Does service @v serve port @p: its own, or one of its driver group's? */
static inline bool sup_svc_serves(const struct sup_svc *v, int p)
{
    return v->port == p || (v->m && p >= 0 && p < 32 && (v->m->members >> p & 1));
}

/* A reload ended with @r (reload.c). */
static inline void sup_reload_note(struct sup *s, enum sup_reload_result r)
{
    s->reload_last = r;
    s->reload_last_at = time(NULL);
}

/* setup.c */
int sup_setup(struct sup *s, struct ipc_err *err);
void sup_teardown(struct sup *s);
int sup_drain_rings(struct sup *s);
int sup_in_netns(const char *netns, int (*fn)(void *), void *arg, struct ipc_err *err);
int sup_svc_fds(const struct sup *s, const struct sup_svc *v, int notify_w, int *src, int max);
/* A new entry in s->svcs for manifest service @ms: its eventfd, stats
 * region and (a shaper) mailbox; its rings and device come with
 * sup_driver_attach (drivers), its config with sup_svc_config. */
int sup_svc_add(struct sup *s, const struct sup_service *ms, struct ipc_err *err);
/* Driver service @drv's rings (to and from the router, or its shaper) and
 * its device. */
int sup_driver_attach(struct sup *s, int drv, struct ipc_err *err);
/* What service @v has of its own, closed: its eventfd, config, device (the
 * last fd of a TAP: the device goes, unless persistent), standby, pidfd,
 * stats region and mailbox. Its rings are the caller's. */
void sup_svc_release(struct sup *s, struct sup_svc *v);
/* Port @p's connected networks (IPv4, IPv6) into the FIBs of a running router. */
int sup_port_connected(struct sup *s, int p, struct ipc_err *err);
/* Write @v's config blob again from the manifest (a reload changed it): a
 * new sealed memfd; the old one is closed once the new one exists. */
int sup_svc_config(struct sup *s, struct sup_svc *v, struct ipc_err *err);
/* @v's executable path from its manifest entry ([service] binary, or its kind's). */
void sup_svc_binary(const struct sup *s, struct sup_svc *v);
/** RINGROUTER_BINDIR, else the directory of our own executable: where the services' binaries are. */
void sup_find_bindir(struct sup *s);
/* trust.c: open @path O_PATH into *fd if it and every directory and link
 * above it are root's or ours and writable by no one else; else -errno,
 * @err naming the component and why. */
int sup_trust_open(const char *path, int *fd, struct ipc_err *err);
/* The same for a file to read ([filter] rules): regular, not executable. */
int sup_trust_open_file(const char *path, int *fd, struct ipc_err *err);
/* The same, for a binary accepted now and opened at each exec. */
int sup_trust_check(const char *path, struct ipc_err *err);
/* sup_trust_check of @v's binary at manifest load, the error naming the
 * manifest's line. */
int sup_trust_service(const struct sup *s, const struct sup_svc *v, struct ipc_err *err);
/* Every `binary` key of a manifest @nm about to be reloaded (@cmd: "reload"
 * or "check --diff"); false, with the refusal written to @f, if one fails. */
bool sup_trust_reload(const struct sup *s, const struct sup_manifest *nm, const char *cmd, FILE *f);
/* Is instance @pid (@pidfd) of @v under NoNewPrivs, not dumpable, and under
 * the ceiling and its own stages (@ready: start and run; else start)? 0, or
 * -1 with @why saying what is missing. */
int sup_exec_verify(const struct sup_svc *v, pid_t pid, int pidfd, bool ready, char *why, size_t len);
/* sup_exec_verify, and if it fails: log it, naming the service, the
 * binary and what was missing, and SIGKILL the instance. True if refused. */
bool sup_exec_refuse(const struct sup_svc *v, pid_t pid, int pidfd, bool ready, const char *binary);
/* tap_dev.c: TUNSETPERSIST on a TAP fd: 0 or -errno. */
int sup_tap_persist(int fd, bool on);
/* tap_dev.c: port @p's TAP device, made in its namespace, in *@fd. */
int sup_tap_create(const struct sup_port *p, int *fd, struct ipc_err *err);

/* uids.c */
int sup_ids_resolve(struct sup *s, struct ipc_err *err);
void sup_svc_ids(const struct sup *s, struct sup_svc *v);
void sup_ids_log(const struct sup *s);

/* spawn.c */
int sup_spawn(struct sup *s, struct sup_svc *v, bool standby, struct ipc_err *err);
void sup_standby_spawn(struct sup *s, struct sup_svc *v);
bool sup_standby_activate(struct sup *s, struct sup_svc *v);
void sup_standby_dismiss(struct sup *s, struct sup_svc *v);
/* The running instance of @v, exec'd in SCHED_IDLE, to the service's own
 * class (@why: why now, logged; NULL: its normal time, not logged). */
void sup_sched_raise(struct sup_svc *v, const char *why);
/* Raise every instance that has been idle for longer than its bound. */
void sup_sched_tick(struct sup *s, uint64_t now);
/* Can we raise a process out of SCHED_IDLE (CAP_SYS_NICE)? If not, nothing is lowered. */
bool sup_sched_can_raise(void);
/* /proc/PID/stat's state letter ('R' runnable, 'T' stopped...), '?' if gone. */
char sup_proc_state(pid_t pid);

/* sched_self.c: an adopting supervisor sets up in SCHED_IDLE, bounded by a
 * quarter of orphan_grace_ms (2 s at most); sup_self_serve returns it to its
 * own class. */
void sup_self_idle(struct sup *s);
void sup_self_serve(struct sup *s);
/* Pacing of a long loop: sup_pace once per item naps briefly each ms of
 * work while one of pid[] is runnable (at most 50 ms in all). */
struct sup_pace {
    pid_t pid[SUP_MAX_SERVICES];
    int npid;
    unsigned n, naps;
    uint64_t slice_ns, napped_ns;
};
void sup_pace(struct sup_pace *p);
/* Once the router that read an adoption's old FIBs is gone (a new pid, or
 * none), close them on a SCHED_IDLE thread: their pages are freed there. */
void sup_old_fibs_tick(struct sup *s);

/* policy.c */
enum sup_event { SUP_EV_EXIT, SUP_EV_READY, SUP_EV_TIMEOUT, SUP_EV_HANG, SUP_EV_STOP, SUP_EV_RESTART, SUP_NEVENTS };
void sup_event(struct sup *s, struct sup_svc *v, enum sup_event ev, int status);
const char *sup_state_name(enum sup_state st);
const char *sup_cause_name(enum sup_cause c);
/** How a process ended (a wait status), as the log and `status` say it. */
void sup_exit_text(char *buf, size_t size, int status);
void sup_check_timers(struct sup *s, uint64_t now);
void sup_rings_repair(struct sup *s, const int *idx, int n);
/* Health tick: a ring whose end counts a lie of its peer, and a service that
 * holds more than [router] hoard_pct of the pool for hoard_ms: restarted. */
void sup_tamper_tick(struct sup *s, uint64_t now);
void sup_shared_repair(struct sup *s, struct sup_svc *v);

/* loop.c */
int sup_run(struct sup *s);
int sup_watch(struct sup *s, struct sup_svc *v);
int sup_watch_standby(struct sup *s, struct sup_svc *v);
void sup_unwatch(struct sup *s, struct sup_svc *v);
/* @v moved to another index of s->svcs (a reload removed a service before
 * it): its fds in the epoll set get the new index in their keys. */
void sup_rewatch(struct sup *s, struct sup_svc *v);
/* The hang-check tick again, from the services' hang_ms (after a reload). */
void sup_retick(struct sup *s);
/* Every service's view of us: now, and its orphan_grace_ms (ipc_svc_orphan_check). */
void sup_pulse(struct sup *s, uint64_t now);

/* cgroup.c: [service] cpu_max_pct. Make the instance's cgroup if a service
 * has a limit (0, or -errno with @err); the fd of @v's cgroup.procs with its
 * limit written, for its child to join before exec, or -1 if it has none;
 * its throttling so far (-ENOENT if none); remove them all at a clean stop. */
int sup_cg_init(struct sup *s, struct ipc_err *err);
int sup_cg_enter_fd(struct sup *s, struct sup_svc *v, struct ipc_err *err);
int sup_cg_throttled(const struct sup *s, const struct sup_svc *v, uint64_t *periods, uint64_t *us);
void sup_cg_remove(struct sup *s);
/* The quota of each service's cgroup follows it in and out of a restart
 * loop ([router] restart_cpu_max_pct). */
void sup_cg_tick(struct sup *s);

/* ctl.c: the requests */
/* rundir.c: run_dir and state_dir walked from "/", each component checked,
 * and opened once (s->run_fd, s->state_fd); 0, or -errno with @err naming
 * the component. Done once: later calls return 0. */
int sup_run_dir(struct sup *s, struct ipc_err *err);
/* The directory `route save` writes to: state_dir's fd, else run_dir's. */
int sup_state_fd(const struct sup *s);
/* "/proc/self/fd/N/NAME" for run_dir's NAME, for the calls that take only a
 * path (bind, connect, mount): it resolves through the open directory. */
void sup_run_path(const struct sup *s, const char *name, char *buf, size_t len);
void sup_json_str(FILE *f, const char *str);
int sup_ctl_listen(struct sup *s, struct ipc_err *err);
/* Is another supervisor answering on our run_dir's socket? 0, or -EADDRINUSE with @err. */
int sup_ctl_probe(struct sup *s, struct ipc_err *err);
/* The head of an answer: "ERR" (the client's mistake, exit 100), "OK", or
 * "FAILED" (`status` with a failed service: the text as for OK, exit 3). */
enum sup_answer { SUP_ANS_ERR, SUP_ANS_OK, SUP_ANS_FAILED };
enum sup_answer sup_ctl_handle(struct sup *s, char *req, FILE *f, struct sup_ctl_wait *w, bool read_only);
int sup_ctl_client(const char *sock, int argc, char **argv);
/* ctl_show.c: `status` (each service; --json also the supervisor's own
 * block) and `stats` of every service and ring, or (@port >= 0) of one
 * port's: its drivers and shaper, its rings, its steering program. */
void sup_ctl_status(struct sup *s, FILE *f, bool json);
void sup_ctl_stats(struct sup *s, FILE *f, bool json, bool all, int port);

/* route.c: routes at run time; neigh_ctl.c: neighbours at run time */
bool sup_ctl_route(struct sup *s, char **argv, int argc, FILE *f);
bool sup_ctl_neigh(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w);
bool sup_neigh_poll(struct sup *s, struct sup_ctl_wait *w, uint64_t now, FILE *f, bool *ok);
const char *sup_state_dir(const struct sup *s);
void sup_routes_load(struct sup *s);
void sup_routes_free(struct sup *s);
const char *sup_ip_str(uint32_t a, char *buf, size_t len);
int sup_port_of_addr(const struct sup *s, uint32_t a);
/* Is @addr/@len a runtime route (route add|replace, or saved)? */
bool sup_route_runtime(struct sup *s, uint32_t addr, unsigned len);
/* Record @addr/@len, already in the FIB, as a runtime route (adoption). */
int sup_route_keep(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nh);
/* It is the manifest's from now on: no longer runtime. */
void sup_route_forget(struct sup *s, uint32_t addr, unsigned len);
/* A neighbour command (enum neigh_op) through the router's mailbox, as
 * `neigh add|replace|del` sends it: the answer as sup_ctl_neigh's. */
bool sup_neigh_cmd(struct sup *s, int op, uint32_t ip, int port, const uint8_t *mac, FILE *f,
                   struct sup_ctl_wait *w);
/* The same for an IPv6 neighbour (NEIGH_OP_ADD6, REPLACE6, DEL6; @ip6 16 bytes). */
bool sup_neigh6_cmd(struct sup *s, int op, const uint8_t *ip6, int port, const uint8_t *mac, FILE *f,
                    struct sup_ctl_wait *w);

/* link.c: `link`, a port's view in the spirit of `ip -s link` */
void sup_ctl_link(struct sup *s, int port, bool json, FILE *f);


/* ctl_conn.c: the connections, never blocking the loop */
void sup_ctl_accept(struct sup *s);
void sup_ctl_io(struct sup *s, unsigned idx);
void sup_ctl_tick(struct sup *s, uint64_t now);
void sup_ctl_close_all(struct sup *s);
/* No answer is being waited for or written: the loop may re-exec (adopt.c). */
bool sup_ctl_idle(const struct sup *s);

#endif
