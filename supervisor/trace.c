/* SPDX-License-Identifier: MIT */
/*
 * supervisor/trace.c: the supervisor's half of `ringrouter trace`
 * (trace.h, ipc/trace.h). One trace at a time, beside at most one capture:
 * they share each service's capture region but not its words (the trace
 * has its bit of `on`, its program, ring and tail). The request names how
 * many packets and a filter this file checks (ipc_cap_bpf_check); every
 * region is armed, each driver's with a range of trace ids of its own so
 * that no two drivers mark two packets alike, the stages after the drivers
 * first, so that a packet marked finds them recording. The regions and
 * the write end of a pipe, the lease, go to the client; when every copy of
 * that end is closed, the next tick disarms them. The supervisor reads
 * nothing a service writes in a region: the records are the client's to
 * read, and to bound (ipc_trace_take).
 */
#include "supervisor/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/trace.h"
#include "supervisor/capture.h"
#include "supervisor/sup.h"

#define TRACE_REGIONS_MAX (SUP_SEND_FDS_MAX - 1)

static struct {
    int lease; /* the read end, -1: no trace */
    int svc[TRACE_REGIONS_MAX];
    int n;
    uint32_t base; /* the ids the next trace starts after: a new trace's ids are not the last one's */
} cur = {.lease = -1};

static bool is_driver(const struct sup_svc *v)
{
    return v->kind == IPC_SVC_TAP || v->kind == IPC_SVC_AFXDP;
}

static void disarm(void)
{
    cur.n = 0;
    if (cur.lease >= 0) {
        close(cur.lease);
        sup_log("trace: ended");
    }
    cur.lease = -1;
}

static void disarm_regions(struct sup *s)
{
    for (int i = 0; i < cur.n; i++) {
        struct sup_svc *v = &s->svcs[cur.svc[i]];
        if (v->cap)
            atomic_fetch_and_explicit(&v->cap->on, ~(unsigned)IPC_CAP_TRACE, memory_order_release);
    }
    disarm();
}

void sup_trace_tick(struct sup *s)
{
    if (cur.lease < 0)
        return;
    struct pollfd p = {.fd = cur.lease, .events = POLLIN};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN)))
        disarm_regions(s);
}

void sup_trace_release(struct sup *s, struct sup_svc *v)
{
    for (int i = 0; i < cur.n; i++)
        if (&s->svcs[cur.svc[i]] == v) {
            disarm_regions(s);
            return;
        }
}

static void arm(struct sup *s, int i, const struct ipc_cap_insn *prog, uint32_t nins, uint32_t first, uint32_t n)
{
    struct sup_svc *v = &s->svcs[i];
    struct ipc_cap *c = v->cap;
    c->tr_nins = nins;
    memcpy(c->tr_prog, prog, nins * sizeof(prog[0]));
    c->tr_next = first;
    c->tr_end = first + n;
    c->tr_queue = (uint16_t)s->m.services[i].queue;
    ipc_st_rel(&c->tr_tail, ipc_ld_acq(&c->tr_head));
    atomic_fetch_or_explicit(&c->on, IPC_CAP_TRACE, memory_order_release);
    cur.svc[cur.n++] = i;
}

bool sup_ctl_trace(struct sup *s, char **w, int nw, FILE *f, int conn_fd)
{
    if (nw != 3) {
        fprintf(f, "trace: expected N PROGRAM (the request of `ringrouter trace`)\n");
        return false;
    }
    char *end;
    unsigned long npkts = strtoul(w[1], &end, 10);
    if (*end || !*w[1] || npkts == 0 || npkts > IPC_TRACE_N_MAX) {
        fprintf(f, "trace: N \"%s\": 1 to %u packets\n", w[1], IPC_TRACE_N_MAX);
        return false;
    }
    struct ipc_cap_insn prog[IPC_CAP_BPF_MAX];
    uint32_t nins;
    if (!sup_cap_prog("trace", w[2], prog, &nins, f))
        return false;
    sup_trace_tick(s); /* a client that just exited is not busy until the next tick */
    if (cur.lease >= 0) {
        fprintf(f, "trace: busy: a trace runs; one at a time\n");
        return false;
    }
    int ndrv = 0, nreg = 0;
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].cap) {
            nreg++;
            ndrv += is_driver(&s->svcs[i]);
        }
    if (ndrv == 0) {
        fprintf(f, "trace: no driver has a capture region (a service adopted from a supervisor of an older "
                   "layout has none until it restarts)\n");
        return false;
    }
    if (nreg > TRACE_REGIONS_MAX) {
        fprintf(f, "trace: %d services with a region; a trace takes at most %d\n", nreg, TRACE_REGIONS_MAX);
        return false;
    }
    uint32_t span = (uint32_t)ndrv * (uint32_t)npkts;
    if (span > IPC_TRACE_ID_MAX) {
        fprintf(f, "trace: %lu packets for each of %d drivers is more than %u trace ids\n", npkts, ndrv,
                IPC_TRACE_ID_MAX);
        return false;
    }
    if (cur.base + span > IPC_TRACE_ID_MAX)
        cur.base = 0;
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(f, "trace: pipe: %s\n", strerror(errno));
        return false;
    }
    /* The later stages first: a packet a driver marks finds them on. */
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].cap && !is_driver(&s->svcs[i]))
            arm(s, i, prog, nins, 0, 0);
    uint32_t first = cur.base + 1;
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].cap && is_driver(&s->svcs[i])) {
            arm(s, i, prog, nins, first, (uint32_t)npkts);
            first += (uint32_t)npkts;
        }
    cur.base += span;
    int fds[SUP_SEND_FDS_MAX];
    for (int i = 0; i < cur.n; i++)
        fds[i] = s->svcs[cur.svc[i]].cap_fd;
    fds[cur.n] = pipefd[1];
    int ret = sup_send_fds(conn_fd, fds, cur.n + 1);
    close(pipefd[1]);
    cur.lease = pipefd[0];
    if (ret < 0) {
        disarm_regions(s);
        fprintf(f, "trace: sending the regions: %s\n", strerror(-ret));
        return false;
    }
    sup_log("trace: %lu packets, %d regions, %u instructions", npkts, cur.n, nins);
    /* What the client needs to name what it reads: the services, in the
     * order of the regions, then the ports by number. */
    fprintf(f, "tracing %lu packets\nservices", npkts);
    for (int i = 0; i < cur.n; i++)
        fprintf(f, " %s", s->svcs[cur.svc[i]].name);
    fprintf(f, "\nports");
    for (size_t p = 0; p < s->m.nports; p++)
        fprintf(f, " %s", s->m.ports[p].vacant ? "-" : s->m.ports[p].name); /* a vacant slot: port_slots.c */
    fprintf(f, "\n");
    return true;
}
