/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/evil_nosetup.c: rr-evil-nosetup, a replaced binary that skips
 * some or all of the service contract's set-up (ipc_svc_open's
 * PR_SET_DUMPABLE and start stage, ipc_svc_ready's run stage) and still
 * says it is parked or ready, as a hostile binary put in a service's place
 * would (tests/integ/sup_exec_trust.sh). The supervisor must refuse each
 * (supervisor/trust.c), and its ceiling must hold where the binary makes a
 * call no service may (ipc/sandbox.h).
 *
 * The mode is the name it runs under, a copy of this binary: the
 * supervisor execs with no arguments and a fixed environment, whose
 * RINGROUTER_BINARY is the path (AT_EXECFN with an older supervisor).
 *
 *   rr-evil-nosetup    no filter of its own, dumpable: says parked / ready
 *   rr-evil-startonly  ipc_svc_open, then the readiness line without
 *                      ipc_svc_ready (no run stage)
 *   rr-evil-dumpable   both stages, but never PR_SET_DUMPABLE 0
 *   rr-evil-socket     socket(AF_INET) first, then as nosetup
 *   rr-evil-fork       fork() first, then as nosetup
 *   rr-evil-write      open("/dev/null", O_WRONLY) first, then as nosetup
 *
 * Each of the last three says on stderr if its call returned: "rr-evil:
 * socket() returned 5". Under the ceiling it dies of SIGSYS instead.
 *
 * It carries the layout stamp, so that `upgrade --binary` takes it too.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/svc.h"
#include "tables/layout.h"

#ifndef IPC_SVC_BINARY_ENV
#define IPC_SVC_BINARY_ENV "RINGROUTER_BINARY"
#endif

__attribute__((used)) static const char evil_stamp[] = TBL_LAYOUT_STAMP;

static const char *mode(void)
{
    const char *path = getenv(IPC_SVC_BINARY_ENV);
    if (!path)
        path = (const char *)getauxval(AT_EXECFN);
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path ? path : "";
    return strncmp(base, "rr-evil-", 8) == 0 ? base + 8 : base;
}

/* The forbidden call of @m, before anything else. */
static void forbidden(const char *m)
{
    long r;
    if (strcmp(m, "socket") == 0) {
        r = socket(AF_INET, SOCK_DGRAM, 0);
    } else if (strcmp(m, "fork") == 0) {
        pid_t p = fork();
        if (p == 0)
            _exit(0);
        if (p > 0)
            waitpid(p, NULL, 0);
        r = p;
    } else if (strcmp(m, "write") == 0) {
        r = open("/dev/null", O_WRONLY | O_CLOEXEC);
    } else {
        return;
    }
    fprintf(stderr, "rr-evil: %s() returned %ld\n", m, r);
}

/* Parked or ready, as the contract's pipe says it (ipc/svc.c), then
 * beating in its stats region until killed. */
static int say_up(const struct ipc_svc_config *cfg, struct ipc_svc_stats *st)
{
    const char *env = getenv(IPC_SVC_STANDBY_ENV);
    if (env && env[0]) {
        if (write(cfg->notify_fd, "s", 1) != 1)
            return 111;
        char go;
        if (read(atoi(env), &go, 1) != 1)
            return 0;
    }
    if (write(cfg->notify_fd, "\n", 1) != 1)
        return 111;
    for (;;) {
        if (st)
            ipc_count(&st->heartbeat, 1);
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 20000000};
        ppoll(NULL, 0, &ts, NULL);
    }
}

int main(void)
{
    const char *m = mode();
    struct ipc_err err;
    if (strcmp(m, "startonly") == 0) {
        static volatile sig_atomic_t stop;
        struct ipc_svc svc;
        ipc_svc_catch_stop(&stop);
        if (ipc_svc_open(&svc, 0, &err) < 0) {
            fprintf(stderr, "rr-evil: %s\n", err.msg);
            return 111;
        }
        if (write(svc.cfg->notify_fd, "\n", 1) != 1)
            return 111;
        for (;;) {
            ipc_svc_beat(&svc);
            ipc_svc_wait(&svc, 20);
        }
    }
    forbidden(m);
    bool dumpable = strcmp(m, "dumpable") == 0;
    if (dumpable && ipc_sandbox_enter(IPC_SANDBOX_STANDIN, IPC_SANDBOX_START, &err) < 0) {
        fprintf(stderr, "rr-evil: %s\n", err.msg);
        return 111;
    }
    const struct ipc_svc_config *cfg;
    size_t size;
    struct ipc_svc_stats *st = NULL;
    if (ipc_svc_config_map(IPC_SVC_CONFIG_FD, &cfg, &size, &err) < 0) {
        fprintf(stderr, "rr-evil: %s\n", err.msg);
        return 111;
    }
    if (ipc_stats_attach(cfg->stats_fd, &st, &err) < 0)
        st = NULL;
    if (dumpable && ipc_sandbox_enter(IPC_SANDBOX_STANDIN, IPC_SANDBOX_RUN, &err) < 0) {
        fprintf(stderr, "rr-evil: %s\n", err.msg);
        return 111;
    }
    return say_up(cfg, st);
}
