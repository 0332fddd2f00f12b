/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/main.c: rr-tap, the TAP driver process. Started by the
 * supervisor with its config blob on fd 3 (ipc/svc.h); exit 0 after SIGTERM,
 * 111 when setup fails.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ipc/svc.h"
#include "tap.h"

int main(void)
{
    struct ipc_svc svc;
    struct ipc_err err = {{0}};
    struct tap *t;
    static volatile sig_atomic_t stop;

    if (ipc_svc_catch_stop(&stop) < 0) {
        fprintf(stderr, "rr-tap: blocking SIGTERM and SIGINT for the signalfd: %m\n");
        return 111;
    }
    if (ipc_svc_open(&svc, IPC_SVC_TAP, &err) < 0) {
        fprintf(stderr, "rr-tap: %s\n", err.msg);
        return 111;
    }
    if (tap_init(&svc, &t, &err) < 0) {
        fprintf(stderr, "rr-tap: %s\n", err.msg);
        ipc_svc_close(&svc);
        return 111;
    }
    if (ipc_svc_ready(&svc, &err) < 0) {
        fprintf(stderr, "rr-tap: %s\n", err.msg);
        tap_fini(t);
        ipc_svc_close(&svc);
        return 111;
    }
    int ret = tap_run(t);
    tap_fini(t);
    ipc_svc_close(&svc);
    if (ret < 0) {
        fprintf(stderr, "rr-tap: io_uring: %d\n", ret);
        return 111;
    }
    return 0;
}
