/* SPDX-License-Identifier: MIT */
/*
 * ipc/sandbox.h: the seccomp allow-lists of the service processes, one per
 * kind of service: a ceiling the supervisor imposes, then two stages the
 * service contract (ipc/svc.c) adds.
 *
 *   CEILING installed by the supervisor's child just before it execs the
 *          binary (supervisor/spawn.c), so that a binary that never calls
 *          ipc_svc_open still runs under it: the kind's START list (and the
 *          stand-ins', which tests put in any service's place), plus what
 *          the exec, the dynamic loader and a service's first calls need
 *          (read-only opens, PROT_EXEC maps, mprotect, ...). No socket,
 *          fork, ptrace, kill, open for writing.
 *   START  installed first thing in ipc_svc_open(), before the config blob is
 *          mapped: what a service needs to map its regions, wait as a
 *          standby, and set itself up (io_uring, signalfd, XSK rings), and
 *          no more. A warm standby waits under it.
 *   RUN    installed by ipc_svc_ready(), after the service's own set-up and
 *          before it reports ready: the steady state, its loop and its exit
 *          path. Stacked on START: the kernel runs both and the stricter
 *          answer wins, so a call must be on both lists.
 *
 * Anything else kills the whole process (SECCOMP_RET_KILL_PROCESS, SIGSYS);
 * the supervisor logs it and restarts the service as after any crash. So do
 * a foreign architecture's calls (the filter checks the audit arch first)
 * and, on x86_64, x32 calls. docs/security.md lists each kind's calls and
 * why each is there; the table in sandbox.c is the list.
 *
 * A service under all three has three filters (/proc/PID/status
 * Seccomp_filters), and the supervisor checks that count before it takes
 * the service for ready (supervisor/trust.c).
 *
 * Requires PR_SET_NO_NEW_PRIVS (or CAP_SYS_ADMIN), which the supervisor sets
 * before exec; a process started another way without either (an
 * unprivileged test harness) gets it set here.
 * Built with a sanitizer (ASan, TSan) or with ./configure --no-sandbox
 * (benchmarks only), ipc_sandbox_enter installs no stage: the sanitizers'
 * runtimes make calls no list has. The ceiling is left off by --no-sandbox
 * only: a sanitizer's supervisor (build/bin/asan/ringrouter) imposes it on
 * services built without one.
 */
#ifndef IPC_SANDBOX_H
#define IPC_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "shm.h"

enum ipc_sandbox_profile {
    IPC_SANDBOX_ROUTER,
    IPC_SANDBOX_SHAPER,
    IPC_SANDBOX_TAP,
    IPC_SANDBOX_AFXDP,
    IPC_SANDBOX_ROUTES,  /* rr-routes: reads its sources' sockets (netlink, FPM) */
    IPC_SANDBOX_STANDIN, /* tests/svc: rr-passthru, rr-null */
    IPC_SANDBOX_FILTER,  /* rr-filter: the shaper's calls, on a table region of its own */
    IPC_SANDBOX_NPROFILES
};

enum ipc_sandbox_stage { IPC_SANDBOX_START, IPC_SANDBOX_RUN, IPC_SANDBOX_CEILING };

/** Does this build install filters at all (not a sanitizer or --no-sandbox build)? */
bool ipc_sandbox_enabled(void);

/** Does the supervisor of this build impose the ceiling, and check the
 * services' filters (every build but --no-sandbox, sanitizers' included)? */
bool ipc_sandbox_imposed(void);

/**
 * Install the seccomp filter of @profile at @stage in the calling process
 * (single-threaded). Returns 0 (also when the build installs none), or
 * -errno with @err naming what failed.
 */
int ipc_sandbox_enter(enum ipc_sandbox_profile profile, enum ipc_sandbox_stage stage, struct ipc_err *err);

/** The allow-list of a binary of service kind @kind (ipc/svc.h: IPC_SVC_*; 0 or any other: a test stand-in). */
enum ipc_sandbox_profile ipc_sandbox_of_kind(uint32_t kind);

/** "router", "shaper", "tap", "afxdp", "routes", "stand-in". */
const char *ipc_sandbox_name(enum ipc_sandbox_profile profile);

#endif
