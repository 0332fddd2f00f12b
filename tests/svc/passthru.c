/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/passthru.c: rr-passthru, a stand-in for the router in supervisor
 * tests. It forwards every packet that arrives from port P to the output
 * ring of port (P + 1) mod nports (a wire, for two ports), with the real
 * hand-off, wake-up and heartbeat protocol of a service. On SIGTERM it
 * finishes its batch and exits 0.
 * It also answers to a few test hooks, read from its environment-free
 * config: none; faults are injected from outside (kill -9, SIGSTOP).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ipc/svc.h"

#define BURST 64

static volatile sig_atomic_t stop;

enum { C_FWD, C_DROP_FULL, C_NCTR };
static const char *const ctr_names[C_NCTR] = {"fwd_pkts", "drop_ring_full"};

int main(void)
{
    struct ipc_svc svc;
    struct ipc_err err;
    ipc_svc_catch_stop(&stop); /* first: ipc_svc_open enters the sandbox */
    if (ipc_svc_open(&svc, 0, &err) < 0) {
        fprintf(stderr, "rr-passthru: %s\n", err.msg);
        return 111;
    }
    _Atomic uint64_t *ctr = ipc_svc_counters(&svc, ctr_names, C_NCTR);
    const struct ipc_svc_config *cfg = svc.cfg;
    int out_of_port[IPC_MAX_PORTS];
    for (unsigned p = 0; p < IPC_MAX_PORTS; p++)
        out_of_port[p] = -1;
    for (unsigned i = 0; i < svc.n_out; i++)
        if (cfg->out[i].port < IPC_MAX_PORTS)
            out_of_port[cfg->out[i].port] = (int)i;
    if (ipc_svc_ready(&svc, &err) < 0) {
        fprintf(stderr, "rr-passthru: %s\n", err.msg);
        return 111;
    }

    int idle = ipc_svc_idle_ms(&svc);
    while (!stop) {
        unsigned moved = 0;
        for (unsigned i = 0; i < svc.n_in; i++) {
            ipc_buf b[BURST];
            uint32_t n = ipc_ring_recv(&svc.in[i], &svc.pool, b, BURST);
            if (!n)
                continue;
            moved += n;
            unsigned to = cfg->nports ? (cfg->in[i].port + 1u) % cfg->nports : 0;
            int o = to < IPC_MAX_PORTS ? out_of_port[to] : -1;
            uint32_t sent = 0;
            if (o >= 0) {
                sent = ipc_ring_enq_burst(&svc.out[o], b, n);
                if (sent)
                    ipc_wake_mark(&svc.wake, &svc.out[o]);
            }
            ipc_count(&ctr[C_FWD], sent);
            if (sent < n) {
                ipc_count(&ctr[C_DROP_FULL], n - sent);
                ipc_pool_free(&svc.pool, b + sent, n - sent);
            }
        }
        ipc_svc_flush(&svc);
        ipc_svc_beat(&svc);
        if (!moved && ipc_svc_wait(&svc, idle) == -EINTR)
            continue;
    }
    ipc_svc_close(&svc);
    return 0;
}
