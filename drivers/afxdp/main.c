/* SPDX-License-Identifier: MIT */
/*
 * drivers/afxdp/main.c: rr-afxdp, the AF_XDP driver process. Started by the
 * supervisor with its config blob on fd 3 (ipc/svc.h) and the XSK as its
 * dev_fd (a driver group: each port's XSK); exit 0 after SIGTERM, 111 when
 * setup fails.
 */
#include <stdio.h>

#include "afxdp.h"
#include "ipc/svc.h"

int main(void)
{
    struct ipc_svc svc;
    struct ipc_err err = {{0}};
    struct afxdp_set *x;

    if (ipc_svc_catch_stop(&afxdp_stop) < 0) {
        fprintf(stderr, "rr-afxdp: blocking SIGTERM and SIGINT for the signalfd: %m\n");
        return 111;
    }
    if (ipc_svc_open(&svc, IPC_SVC_AFXDP, &err) < 0) {
        fprintf(stderr, "rr-afxdp: %s\n", err.msg);
        return 111;
    }
    if (afxdp_init(&svc, &x, &err) < 0) {
        fprintf(stderr, "rr-afxdp: %s\n", err.msg);
        ipc_svc_close(&svc);
        return 111;
    }
    afxdp_recover(x);
    if (ipc_svc_ready(&svc, &err) < 0) {
        fprintf(stderr, "rr-afxdp: %s\n", err.msg);
        afxdp_fini(x);
        ipc_svc_close(&svc);
        return 111;
    }
    int ret = afxdp_run(x);
    afxdp_fini(x);
    ipc_svc_close(&svc);
    return ret < 0 ? 111 : 0;
}
