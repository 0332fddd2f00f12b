/* SPDX-License-Identifier: MIT */
/*
 * supervisor/capture.c: the supervisor's half of `ringrouter capture`
 * (capture.h, docs/capture.md). A region per driver instance, one for the
 * router and one per shaper, made at set-up, each given to its service as
 * the config's cap_fd. A capture is one at a time: the request names a
 * port, the directions and a filter this file checks (ipc_cap_bpf_check);
 * the regions of that port's drivers (rx, tx, both), or the router's and
 * the port's shaper's (drop), are armed and sent to the client with the
 * write end of a pipe, its lease. When every copy of that end is closed
 * (the client exited, was killed, or passed it on and that process went
 * too), the next tick disarms the regions: no state outlives the client.
 * A trace (trace.c) uses the same regions, with its own bit of `on`.
 */
#include "supervisor/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/capture.h"
#include "supervisor/adopt.h"
#include "supervisor/sup.h"
#include "supervisor/trace.h"

#define CAP_FDS_MAX 16 /* regions a capture sends at once: a port's driver instances */
#define CAP_ON_BITS (IPC_CAP_RX | IPC_CAP_TX | IPC_CAP_DROP) /* the `on` word's capture bits; trace.c has the rest */

static struct {
    int lease;              /* the read end, -1: no capture */
    int svc[CAP_FDS_MAX];   /* the services armed */
    int n;
    char port[SUP_SERVICE_MAX + 1];
} cur = {.lease = -1};

static bool captures(const struct sup_svc *v)
{
    return v->kind == IPC_SVC_ROUTER || v->kind == IPC_SVC_TAP || v->kind == IPC_SVC_AFXDP ||
           v->kind == IPC_SVC_SHAPER;
}

/*
 * Adoption: the running instance's region, through its config blob (sealed,
 * the last supervisor's) and pidfd_getfd. Best effort: an instance of an
 * older layout, or one that closed the fds, keeps none until it restarts.
 * A capture of the last supervisor is over (its lease went with it): off.
 */
static void cap_adopt(struct sup *s, struct sup_svc *v)
{
    struct ipc_err e;
    int idx = (int)(v - s->svcs);
    int cfd = sup_adopt_fd(s, idx, IPC_SVC_CONFIG_FD, "its config", &e);
    if (cfd < 0)
        return;
    const struct ipc_svc_config *cfg;
    size_t size;
    if (ipc_svc_config_map(cfd, &cfg, &size, &e) == 0) {
        int fd = cfg->cap_fd > IPC_SVC_CONFIG_FD ? sup_adopt_fd(s, idx, cfg->cap_fd, "its capture region", &e) : -1;
        void *base;
        if (fd >= 0 && ipc_shm_attach_fixed(fd, IPC_SHM_CAPTURE, IPC_CAP_VERSION, sizeof(struct ipc_cap), &base, &e) == 0) {
            v->cap_fd = fd;
            v->cap = base;
            ipc_st_rel(&v->cap->on, 0u);
        } else if (fd >= 0) {
            close(fd);
        }
        ipc_shm_unmap((void *)cfg, size);
    }
    close(cfd);
}

int sup_capture_create(struct sup *s, struct sup_svc *v, struct ipc_err *err)
{
    if (!captures(v))
        return 0;
    if (s->adopt) {
        cap_adopt(s, v);
        return 0;
    }
    char name[64];
    void *base;
    snprintf(name, sizeof(name), "cap-%s", v->name);
    int ret = ipc_shm_create(name, IPC_SHM_CAPTURE, IPC_CAP_VERSION, sizeof(struct ipc_cap), &v->cap_fd, &base, err);
    if (ret < 0) {
        v->cap_fd = 0;
        return ret;
    }
    v->cap = base;
    return 0;
}

static void disarm(struct sup *s)
{
    for (int i = 0; i < cur.n; i++) {
        struct sup_svc *v = &s->svcs[cur.svc[i]];
        if (v->cap) /* a trace keeps its bit */
            atomic_fetch_and_explicit(&v->cap->on, ~(unsigned)CAP_ON_BITS, memory_order_release);
    }
    if (cur.lease >= 0) {
        close(cur.lease);
        sup_log("capture %s: ended", cur.port);
    }
    cur.lease = -1;
    cur.n = 0;
}

void sup_capture_release(struct sup *s, struct sup_svc *v)
{
    for (int i = 0; i < cur.n; i++)
        if (&s->svcs[cur.svc[i]] == v)
            disarm(s);
    sup_trace_release(s, v);
    if (v->cap)
        ipc_shm_unmap(v->cap, sizeof(*v->cap));
    v->cap = NULL;
    if (v->cap_fd > 0)
        close(v->cap_fd);
    v->cap_fd = 0;
}

void sup_capture_tick(struct sup *s)
{
    sup_trace_tick(s);
    if (cur.lease < 0)
        return;
    struct pollfd p = {.fd = cur.lease, .events = POLLIN};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN)))
        disarm(s); /* the client wrote nothing there: a byte is as good as a close */
}

int sup_send_fds(int sock, const int *fds, int n)
{
    if (n < 1 || n > SUP_SEND_FDS_MAX)
        return -EINVAL;
    char byte = 'C';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * SUP_SEND_FDS_MAX)];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                         .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
    return sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) == 1 ? 0 : -errno;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t sup_b64_encode(const unsigned char *in, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        if (o + 5 > cap)
            return 0;
        out[o++] = b64[v >> 18 & 63];
        out[o++] = b64[v >> 12 & 63];
        out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64[v & 63] : '=';
    }
    out[o] = '\0';
    return o;
}

int sup_b64_decode(const char *in, unsigned char *out, size_t cap, size_t *n)
{
    size_t len = strlen(in), o = 0;
    if (len % 4)
        return -EINVAL;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            const char *p = in[i + j] ? strchr(b64, in[i + j]) : NULL;
            if (in[i + j] == '=' && i + 4 == len && j >= 2) {
                pad++;
                v <<= 6;
                continue;
            }
            if (!p || pad)
                return -EINVAL;
            v = v << 6 | (uint32_t)(p - b64);
        }
        for (int j = 0; j < 3 - pad; j++) {
            if (o == cap)
                return -E2BIG;
            out[o++] = (unsigned char)(v >> (16 - 8 * j));
        }
    }
    *n = o;
    return 0;
}

bool sup_cap_prog(const char *cmd, const char *word, struct ipc_cap_insn *prog, uint32_t *nins, FILE *f)
{
    size_t len = 0;
    struct ipc_err err;
    *nins = 0;
    if (strcmp(word, "-") == 0)
        return true;
    if (sup_b64_decode(word, (unsigned char *)prog, sizeof(prog[0]) * IPC_CAP_BPF_MAX, &len) < 0 ||
        len % sizeof(prog[0])) {
        fprintf(f, "%s: the program is not base64 of whole instructions, at most %u\n", cmd, IPC_CAP_BPF_MAX);
        return false;
    }
    if (ipc_cap_bpf_check(prog, (uint32_t)(len / sizeof(prog[0])), &err) < 0) {
        fprintf(f, "%s: %s\n", cmd, err.msg);
        return false;
    }
    *nins = (uint32_t)(len / sizeof(prog[0]));
    return true;
}

bool sup_ctl_capture(struct sup *s, char **w, int nw, FILE *f, int conn_fd)
{
    if (nw != 5) {
        fprintf(f, "capture: expected PORT DIR SNAPLEN PROGRAM (the request of `ringrouter capture`)\n");
        return false;
    }
    int port = -1;
    for (size_t i = 0; i < s->m.nports; i++)
        if (strcmp(s->m.ports[i].name, w[1]) == 0)
            port = (int)i;
    if (port < 0) {
        fprintf(f, "capture: no port \"%s\"; the ports are:", w[1]);
        for (size_t i = 0; i < s->m.nports; i++)
            fprintf(f, " %s", s->m.ports[i].name);
        fprintf(f, "\n");
        return false;
    }
    unsigned dirs = !strcmp(w[2], "rx") ? IPC_CAP_RX : !strcmp(w[2], "tx") ? IPC_CAP_TX
                  : !strcmp(w[2], "both") ? IPC_CAP_RX | IPC_CAP_TX : !strcmp(w[2], "drop") ? IPC_CAP_DROP : 0;
    if (!dirs) {
        fprintf(f, "capture: direction \"%s\": rx, tx, both or drop\n", w[2]);
        return false;
    }
    char *end;
    unsigned long snap = strtoul(w[3], &end, 10);
    if (*end || snap == 0 || snap > 262144) {
        fprintf(f, "capture: snap length \"%s\": 1 to 262144\n", w[3]);
        return false;
    }
    struct ipc_cap_insn prog[IPC_CAP_BPF_MAX];
    uint32_t nins;
    if (!sup_cap_prog("capture", w[4], prog, &nins, f))
        return false;
    size_t len = nins * sizeof(prog[0]);
    sup_capture_tick(s); /* a client that just exited is not busy until the next tick */
    if (cur.lease >= 0) {
        fprintf(f, "capture: busy: a capture of port %s runs; one at a time\n", cur.port);
        return false;
    }
    if (dirs != IPC_CAP_DROP && s->m.ports[port].group_name[0]) {
        /* One capture region per process: it would hold the whole group's. */
        fprintf(f, "capture: port %s is in driver group %s, whose one capture region holds every port's frames: "
                   "capture rx and tx of a group's port is not there yet (drop is)\n", w[1], s->m.ports[port].group_name);
        return false;
    }
    int fds[CAP_FDS_MAX + 1], n = 0;
    for (int i = 0; i < s->nsvcs && n < CAP_FDS_MAX; i++) {
        struct sup_svc *v = &s->svcs[i];
        /* drop: the router's, of packets that came in on the port, and the
         * port's shaper's (all of them leave by it). */
        bool want = dirs == IPC_CAP_DROP ? v->kind == IPC_SVC_ROUTER || (v->kind == IPC_SVC_SHAPER && v->port == port)
                                         : (v->kind == IPC_SVC_TAP || v->kind == IPC_SVC_AFXDP) && v->port == port;
        if (want && v->cap) {
            cur.svc[n] = i;
            fds[n++] = v->cap_fd;
        }
    }
    const struct sup_port *vp = &s->m.ports[port];
    if (n == 0 && vp->vlan_ntags) { /* its frames are its parent's drivers' */
        fprintf(f, "capture: port %s is a VLAN port: capture its parent %s, where its frames show with their tags "
                   "already popped (on receive) or not yet pushed (on send)\n", w[1], vp->parent_name);
        return false;
    }
    if (n == 0) {
        fprintf(f, "capture: port %s has no capture region (a service adopted from a supervisor of an older "
                   "layout has none until it restarts)\n", w[1]);
        return false;
    }
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(f, "capture: pipe: %s\n", strerror(errno));
        return false;
    }
    for (int i = 0; i < n; i++) {
        struct ipc_cap *c = s->svcs[cur.svc[i]].cap;
        c->snaplen = snap < IPC_CAP_SNAP_MAX ? (uint32_t)snap : IPC_CAP_SNAP_MAX;
        c->nins = (uint32_t)(len / sizeof(prog[0]));
        memcpy(c->prog, prog, len);
        /* the router: the drops of packets from this port */
        c->port = dirs == IPC_CAP_DROP && s->svcs[cur.svc[i]].kind == IPC_SVC_ROUTER ? (uint32_t)port : IPC_PORT_NONE;
        ipc_st_rel(&c->tail, ipc_ld_acq(&c->head));
        atomic_fetch_or_explicit(&c->on, dirs, memory_order_release);
    }
    cur.n = n;
    fds[n] = pipefd[1];
    int ret = sup_send_fds(conn_fd, fds, n + 1);
    close(pipefd[1]);
    cur.lease = pipefd[0];
    snprintf(cur.port, sizeof(cur.port), "%s", w[1]);
    if (ret < 0) {
        disarm(s);
        fprintf(f, "capture: sending the regions: %s\n", strerror(-ret));
        return false;
    }
    sup_log("capture %s %s: started (%d region%s, %zu instructions)", w[1], w[2], n, n > 1 ? "s" : "",
            len / sizeof(prog[0]));
    fprintf(f, "capturing %s %s\n", w[1], w[2]);
    return true;
}
