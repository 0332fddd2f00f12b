/* SPDX-License-Identifier: MIT */
/*
 * supervisor/ctl.c: the control socket's requests, both ends. The supervisor
 * listens on a Unix stream socket (mode 0600, RUN_DIR/control.sock); a client
 * sends one request line, the supervisor answers "OK\n" or "ERR\n" followed
 * by the text to print and closes (the connections themselves, which never
 * block the event loop, are ctl_conn.c's). Every answer is built from what the supervisor holds
 * and from the services' shared stats regions: a query never interrupts a
 * service.
 *
 *   status [json]       each service's state, pid, restarts (after a death;
 *                       planned ones apart), uptime, last exit; the JSON
 *                       also the supervisor's version, pid and uptime;
 *                       answered "FAILED" instead of "OK" when a service is
 *                       failed, so that the client exits 3 (ctl_show.c)
 *   stats [port NAME] [json|all]
 *                       per service counters (non-zero ones, or all), per ring
 *                       occupancy and counters; of one port's services only
 *                       (ctl_show.c)
 *   link [port NAME] [json]   see supervisor/link.c
 *   stats stages [json] per service and stage: CPU cycles per packet
 *   restart NAME        stop NAME and start it again
 *   route ...           see supervisor/route.c
 *   neigh ...           see supervisor/neigh_ctl.c
 *   shaper show|set         see supervisor/shaper_ctl.c
 *   inject NAME KIND ...    see supervisor/inject.c
 *   reload [diff] [manifest PATH]  see supervisor/reload.c
 */
#include "supervisor/sup.h"
#include "supervisor/capture.h"
#include "supervisor/trace.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ipc/stage.h"
#include "supervisor/inject.h"
#include "supervisor/reload.h"
#include "supervisor/routes.h"
#include "supervisor/running.h"
#include "supervisor/shaper_ctl.h"
#include "supervisor/filter.h"


/* The TSC and the raw monotonic clock, read together when the supervisor
 * starts listening: `stats --stages` turns cycles into time from how far
 * both have moved since, so the longer the router runs, the closer the
 * frequency, and no request pays for a calibration wait. */
static uint64_t ctl_tsc0, ctl_raw0;

static uint64_t raw_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * [router] control_group: when the group exists, its members may connect
 * (the socket 0660, group-owned; run_dir searchable by the group) and run
 * the read commands; every request is checked against the peer's
 * credentials (ctl_conn.c, ctl_read_only_ok). The directory gets the
 * group's search bit only, never read or write: it stays ours alone.
 */
static int ctl_group_access(struct sup *s, struct ipc_err *err)
{
    s->ctl_gid = (gid_t)-1;
    const char *name = s->m.router.control_group;
    if (!name[0])
        return 0;
    struct group *gr = getgrnam(name);
    if (!gr) {
        if (s->m.router.src.key_line[SUP_ROUTER_CONTROL_GROUP]) /* named in the manifest, not the default */
            sup_warn("control socket: no group \"%s\" (control_group); root only", name);
        return 0;
    }
    const char *dir = s->m.router.run_dir;
    struct stat st;
    if (fstat(s->run_fd, &st) < 0)
        return ipc_errf(err, -errno, "run_dir %s: %s", dir, strerror(errno));
    if (!(st.st_mode & (S_IXGRP | S_IXOTH)) || st.st_gid != gr->gr_gid) {
        bool others = st.st_mode & S_IXOTH; /* already searchable by all: the group needs nothing */
        mode_t mode = (st.st_mode & 07777 & ~(mode_t)S_IRWXG) | S_IXGRP;
        if (!others && (fchown(s->run_fd, (uid_t)-1, gr->gr_gid) < 0 || fchmod(s->run_fd, mode) < 0))
            return ipc_errf(err, -errno, "run_dir %s: giving group %s search access: %s", dir, name, strerror(errno));
    }
    /* The directory is ours alone: the name cannot be swapped under us. */
    if (fchownat(s->run_fd, SUP_CTL_SOCK, (uid_t)-1, gr->gr_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
        fchmodat(s->run_fd, SUP_CTL_SOCK, 0660, 0) < 0)
        return ipc_errf(err, -errno, "control socket %s: group %s: %s", s->sock_path, name, strerror(errno));
    s->ctl_gid = gr->gr_gid;
    sup_log("control socket %s: group %s (gid %u) may read: status, stats, link, route show|get, neigh show, "
            "shaper show, check --diff", s->sock_path, name, (unsigned)gr->gr_gid);
    return 0;
}

/* A socket file left by a supervisor that died is stale; a live one
 * answers, and then this is a second `up` on the same run_dir: refused
 * before it creates anything, or adopts anything (adopt.c). Fills
 * s->sock_path and @sa: the socket named through run_dir's open fd
 * (rundir.c), which no rename above it can move. */
static int ctl_probe(struct sup *s, struct sockaddr_un *sa, struct ipc_err *err)
{
    const char *dir = s->m.router.run_dir;
    int ret = sup_run_dir(s, err);
    if (ret < 0)
        return ret;
    int n = snprintf(s->sock_path, sizeof(s->sock_path), "%s/" SUP_CTL_SOCK, dir);
    *sa = (struct sockaddr_un){.sun_family = AF_UNIX};
    if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
        return ipc_errf(err, -ENAMETOOLONG, "run_dir %s: the socket path is too long", dir);
    sup_run_path(s, SUP_CTL_SOCK, sa->sun_path, sizeof(sa->sun_path));
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0 && connect(probe, (struct sockaddr *)sa, sizeof(*sa)) == 0) {
        close(probe);
        return ipc_errf(err, -EADDRINUSE, "%s: another ringrouter is running there", s->sock_path);
    }
    if (probe >= 0)
        close(probe);
    return 0;
}

int sup_ctl_probe(struct sup *s, struct ipc_err *err)
{
    struct sockaddr_un sa;
    return ctl_probe(s, &sa, err);
}

int sup_ctl_listen(struct sup *s, struct ipc_err *err)
{
    ctl_raw0 = raw_ns();
    ctl_tsc0 = ipc_cycles();
    struct sockaddr_un sa;
    int ret = ctl_probe(s, &sa, err);
    if (ret < 0)
        return ret;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return ipc_errf(err, -errno, "control socket: %s", strerror(errno));
    unlinkat(s->run_fd, SUP_CTL_SOCK, 0);
    mode_t old = umask(0177);
    int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (r < 0 || fchmodat(s->run_fd, SUP_CTL_SOCK, 0600, 0) < 0 || listen(fd, 16) < 0) {
        int e = errno;
        close(fd);
        return ipc_errf(err, -e, "control socket %s: %s", s->sock_path, strerror(e));
    }
    s->ctl_fd = fd;
    return ctl_group_access(s, err);
}

void sup_json_str(FILE *f, const char *str)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* TSC ticks per second (ipc_cycles()), and the span it was measured over. */
static double tsc_hz(double *span_s)
{
    uint64_t c0 = ctl_tsc0, n0 = ctl_raw0;
    if (!n0 || raw_ns() - n0 < 20000000ull || ipc_cycles() <= c0) {
        /* Asked within 20 ms of the start (or before it), or the TSC has
         * stepped back since (one the kernel marked unstable, as in a VM
         * restored from a snapshot, does: it gave 293,174,712 GHz): measure
         * 20 ms now. */
        c0 = ipc_cycles();
        n0 = raw_ns();
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 20000000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    uint64_t c1 = ipc_cycles(), n1 = raw_ns();
    *span_s = (double)(n1 - n0) / 1e9;
    return n1 > n0 && c1 > c0 ? (double)(c1 - c0) * 1e9 / (double)(n1 - n0) : 0;
}

/* Packets the drivers sent out, in total: what "per forwarded packet" divides by. */
static uint64_t driver_tx_pkts(const struct sup *s)
{
    uint64_t sum = 0;
    for (int i = 0; i < s->nsvcs; i++) {
        const struct sup_svc *v = &s->svcs[i];
        if (v->kind != IPC_SVC_TAP && v->kind != IPC_SVC_AFXDP)
            continue;
        struct ipc_svc_stats *st = v->stats;
        uint32_t n = ipc_ld_acq(&st->nctr);
        for (uint32_t k = 0; k < n && k < IPC_SVC_MAX_CTR; k++)
            if (strncmp(st->ctr_name[k], "tx_pkts", IPC_CTR_NAME) == 0)
                sum += ipc_ld_rlx(&st->ctr[k]);
    }
    return sum;
}

/* A ratio for the table: "-" when there is nothing to divide by. */
static const char *ratio(char *buf, size_t len, double num, uint64_t den, int prec)
{
    if (!den)
        return "-";
    snprintf(buf, len, "%.*f", prec, num / (double)den);
    return buf;
}

static void json_ratio(FILE *f, const char *key, double num, uint64_t den)
{
    if (den)
        fprintf(f, ",\"%s\":%.2f", key, num / (double)den);
    else
        fprintf(f, ",\"%s\":null", key);
}

static void stage_row(FILE *f, const char *svc, const char *stage, uint64_t calls, uint64_t pkts, uint64_t cycles,
                      uint64_t fwd, double ns_per_cycle, bool total)
{
    char b[4][32];
    char callsb[24] = "", pktsb[24] = "";
    if (!total) {
        snprintf(callsb, sizeof callsb, "%llu", (unsigned long long)calls);
        snprintf(pktsb, sizeof pktsb, "%llu", (unsigned long long)pkts);
    }
    fprintf(f, "%-16s %-10s %12s %12s %9s %9s %9s %9s\n", svc, stage, callsb, pktsb,
            total ? "" : ratio(b[0], sizeof b[0], (double)pkts, calls, 1),
            total ? "" : ratio(b[1], sizeof b[1], (double)cycles, pkts, 0),
            ratio(b[2], sizeof b[2], (double)cycles, fwd, 1),
            ratio(b[3], sizeof b[3], (double)cycles * ns_per_cycle, fwd, 1));
}

/*
 * `stats --stages`: each service's stage counters (ipc/stage.h) as the
 * table docs/stats.md describes. Returns false (an ERR answer) when the
 * manifest left them off.
 */
static bool do_stages(struct sup *s, FILE *f, bool json)
{
    if (!s->m.router.stages) {
        fprintf(f, "stage counters are off; to count CPU cycles per stage, set \"stages = on\" in the "
                   "manifest's [router] section and start ringrouter up again (docs/stats.md)\n");
        return false;
    }
    double span;
    double hz = tsc_hz(&span);
    double ns_per_cycle = hz > 0 ? 1e9 / hz : 0;
    uint64_t fwd = driver_tx_pkts(s);
    uint64_t all = 0;
    if (json) {
        sup_json_begin(f);
        fprintf(f, "\"stages\":true,\"tsc_hz\":%.0f,\"forwarded\":%llu,\"services\":[", hz,
                (unsigned long long)fwd);
    } else {
        fprintf(f,
                "CPU cycles per packet by stage, since each service started (TSC %.3f GHz, measured over %.1f s)\n"
                "forwarded: %llu packets (the drivers' tx_pkts); CYC/FWD = the stage's cycles / forwarded\n\n"
                "%-16s %-10s %12s %12s %9s %9s %9s %9s\n",
                hz / 1e9, span, (unsigned long long)fwd, "SERVICE", "STAGE", "CALLS", "PACKETS", "PKTS/CALL",
                "CYC/PKT", "CYC/FWD", "NS/FWD");
    }
    for (int i = 0; i < s->nsvcs; i++) {
        const struct sup_svc *v = &s->svcs[i];
        struct ipc_svc_stats *st = v->stats;
        uint32_t n = ipc_ld_acq(&st->nstage);
        if (n > IPC_STAGE_MAX)
            n = IPC_STAGE_MAX;
        uint64_t svc_cycles = 0;
        if (json) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            sup_json_str(f, v->name);
            fprintf(f, ",\"stages\":[");
        } else if (n == 0) {
            fprintf(f, "%-16s (no stage counters in this service's binary)\n", v->name);
        }
        for (uint32_t k = 0; k < n; k++) {
            struct ipc_stage *g = &st->stage[k];
            char gname[IPC_STAGE_NAME + 1];
            sup_shm_name(gname, sizeof(gname), g->name, IPC_STAGE_NAME);
            uint64_t cycles = ipc_ld_rlx(&g->cycles), pkts = ipc_ld_rlx(&g->pkts), calls = ipc_ld_rlx(&g->calls);
            svc_cycles += cycles;
            if (json) {
                fprintf(f, "%s{\"name\":", k ? "," : "");
                sup_json_str(f, gname);
                fprintf(f, ",\"calls\":%llu,\"packets\":%llu,\"cycles\":%llu", (unsigned long long)calls,
                        (unsigned long long)pkts, (unsigned long long)cycles);
                json_ratio(f, "pkts_per_call", (double)pkts, calls);
                json_ratio(f, "cycles_per_pkt", (double)cycles, pkts);
                json_ratio(f, "cycles_per_fwd", (double)cycles, fwd);
                json_ratio(f, "ns_per_fwd", (double)cycles * ns_per_cycle, fwd);
                fprintf(f, "}");
            } else {
                stage_row(f, v->name, gname, calls, pkts, cycles, fwd, ns_per_cycle, false);
            }
        }
        all += svc_cycles;
        if (json) {
            fprintf(f, "],\"cycles\":%llu", (unsigned long long)svc_cycles);
            json_ratio(f, "cycles_per_fwd", (double)svc_cycles, fwd);
            json_ratio(f, "ns_per_fwd", (double)svc_cycles * ns_per_cycle, fwd);
            fprintf(f, "}");
        } else if (n) {
            stage_row(f, v->name, "total", 0, 0, svc_cycles, fwd, ns_per_cycle, true);
        }
    }
    if (json) {
        fprintf(f, "],\"total\":{\"cycles\":%llu", (unsigned long long)all);
        json_ratio(f, "cycles_per_fwd", (double)all, fwd);
        json_ratio(f, "ns_per_fwd", (double)all * ns_per_cycle, fwd);
        fprintf(f, "}}\n");
    } else {
        stage_row(f, "all", "total", 0, 0, all, fwd, ns_per_cycle, true);
    }
    return true;
}

#define CTL_WORDS_MAX 72 /* `route add PREFIX via G weight W ...`: 16 next hops (route_multi.h) */

/* Is any service failed (given up after restart_limit)? `status` says so
 * in its exit code. */
static bool any_failed(const struct sup *s)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].state == SUP_ST_FAILED)
            return true;
    return false;
}

/* The flag words the client adds for its options (json, all, stages), then
 * `port NAME` for a port filter; anything else is named in the error. */
enum { O_JSON = 1, O_ALL = 2, O_STAGES = 4, O_PORT = 8 };
struct ctl_opts {
    bool json, all, stages;
    int port; /* -1: every port */
};

static bool ctl_opts(struct sup *s, const char *cmd, char **w, int n, unsigned allowed, struct ctl_opts *o, FILE *f)
{
    *o = (struct ctl_opts){.port = -1};
    for (int i = 0; i < n; i++) {
        unsigned bit = strcmp(w[i], "json") == 0 ? O_JSON : strcmp(w[i], "all") == 0 ? O_ALL
                       : strcmp(w[i], "stages") == 0 ? O_STAGES : strcmp(w[i], "port") == 0 ? O_PORT : 0;
        if (!(bit & allowed)) {
            const char *opt = bit == O_JSON ? "--json" : bit == O_ALL ? "--all" : bit == O_STAGES ? "--stages"
                              : strcmp(w[i], "force") == 0 ? "--force" : NULL;
            if (opt)
                fprintf(f, "%s: %s is not one of its options\n", cmd, opt);
            else
                fprintf(f, "%s: unexpected argument \"%s\"\n", cmd, bit == O_PORT && i + 1 < n ? w[i + 1] : w[i]);
            return false;
        }
        if (bit == O_PORT) {
            if (++i == n || o->port >= 0) {
                fprintf(f, "%s: name one port\n", cmd);
                return false;
            }
            o->port = sup_manifest_port(&s->m, w[i]);
            if (o->port < 0) {
                fprintf(f, "%s: no port \"%s\"; the ports are:", cmd, w[i]);
                for (size_t p = 0; p < s->m.nports; p++)
                    fprintf(f, " %s", s->m.ports[p].name);
                fprintf(f, "\n");
                return false;
            }
        }
        o->json |= bit == O_JSON;
        o->all |= bit == O_ALL;
        o->stages |= bit == O_STAGES;
    }
    return true;
}

static bool ctl_dispatch(struct sup *s, char **words, int nw, FILE *f, struct sup_ctl_wait *wait, bool *failed)
{
    char *cmd = nw > 0 ? words[0] : NULL;
    struct ctl_opts o;
    if (!cmd) {
        fprintf(f, "empty request\n");
        return false;
    }
    if (strcmp(cmd, "route") == 0 && nw > 1 && strcmp(words[1], "load") == 0) /* a slice at a time: routes_load.c */
        return sup_route_load(s, words + 2, nw - 2, f, wait);
    if (strcmp(cmd, "route") == 0)
        return sup_ctl_route(s, words + 1, nw - 1, f);
    if (strcmp(cmd, "neigh") == 0)
        return sup_ctl_neigh(s, words + 1, nw - 1, f, wait);
    if (strcmp(cmd, "shaper") == 0) /* supervisor/shaper_ctl.c */
        return sup_ctl_shaper(s, words + 1, nw - 1, f, wait);
    if (strcmp(cmd, "filter") == 0 || strcmp(cmd, "conntrack") == 0) /* supervisor/filter_ctl.c */
        return cmd[0] == 'f' ? sup_ctl_filter(s, words + 1, nw - 1, f, wait)
                             : sup_ctl_conntrack(s, words + 1, nw - 1, f, wait);
    if (strcmp(cmd, "inject") == 0) /* supervisor/inject.c */
        return sup_ctl_inject(s, words + 1, nw - 1, f);
    if (strcmp(cmd, "upgrade") == 0) /* supervisor/upgrade.c */
        return sup_ctl_upgrade(s, words + 1, nw - 1, f, wait);
    if (strcmp(cmd, "capture") == 0 || strcmp(cmd, "trace") == 0) { /* supervisor/capture.c, trace.c */
        /* Every wait is a connection's (ctl_conn.c): its socket takes the
         * regions' fds. A reader of control_group never gets here
         * (ctl_reads_only): packets are root's, as for tcpdump. */
        const struct sup_ctl_conn *c =
            (const struct sup_ctl_conn *)(const void *)((const char *)wait - offsetof(struct sup_ctl_conn, wait));
        return cmd[0] == 'c' ? sup_ctl_capture(s, words, nw, f, c->fd) : sup_ctl_trace(s, words, nw, f, c->fd);
    }
    if (strcmp(cmd, "reload") == 0) /* supervisor/reload.c */
        return sup_ctl_reload(s, words + 1, nw - 1, f, wait);
    if (strcmp(cmd, "addr") == 0) /* supervisor/live.c */
        return sup_ctl_addr(s, words + 1, nw - 1, f, wait);
    if (strcmp(cmd, "link") == 0 && nw > 1 && strcmp(words[1], "set") == 0)
        return sup_ctl_link_set(s, words + 2, nw - 2, f, wait);
    if (strcmp(cmd, "show") == 0) /* supervisor/running.c */
        return sup_ctl_show(s, words + 1, nw - 1, f);
    if (strcmp(cmd, "save") == 0)
        return sup_ctl_save(s, words + 1, nw - 1, f);
    if (strcmp(cmd, "status") == 0) {
        if (!ctl_opts(s, cmd, words + 1, nw - 1, O_JSON, &o, f))
            return false;
        sup_ctl_status(s, f, o.json);
        *failed = any_failed(s);
        return true;
    }
    if (strcmp(cmd, "routes") == 0) { /* supervisor/routes.c */
        if (!ctl_opts(s, cmd, words + 1, nw - 1, O_JSON, &o, f))
            return false;
        sup_routes_show(s, f, o.json);
        return true;
    }
    if (strcmp(cmd, "link") == 0) { /* supervisor/link.c */
        if (!ctl_opts(s, cmd, words + 1, nw - 1, O_JSON | O_PORT, &o, f))
            return false;
        sup_ctl_link(s, o.port, o.json, f);
        return true;
    }
    if (strcmp(cmd, "stats") == 0) {
        if (!ctl_opts(s, cmd, words + 1, nw - 1, O_JSON | O_ALL | O_STAGES | O_PORT, &o, f))
            return false;
        if (o.stages && o.port >= 0) {
            fprintf(f, "stats: --stages covers every service; it takes no PORT\n");
            return false;
        }
        if (o.stages)
            return do_stages(s, f, o.json);
        sup_ctl_stats(s, f, o.json, o.all, o.port);
        return true;
    }
    if (strcmp(cmd, "restart") == 0) {
        const char *arg = nw > 1 ? words[1] : NULL;
        if (nw > 2) {
            fprintf(f, "restart: %s\n", strcmp(words[2], "json") == 0 ? "--json is not one of its options (it prints one line)"
                                                                       : "name one service");
            return false;
        }
        for (int i = 0; arg && i < s->nsvcs; i++) {
            if (strcmp(s->svcs[i].name, arg) == 0) {
                sup_log("%s: restart requested", arg);
                sup_event(s, &s->svcs[i], SUP_EV_RESTART, 0);
                fprintf(f, "restarting %s\n", arg);
                return true;
            }
        }
        fprintf(f, "restart: no service \"%s\"; the services are:", arg ? arg : "");
        for (int i = 0; i < s->nsvcs; i++)
            fprintf(f, " %s", s->svcs[i].name);
        fprintf(f, "\n");
        return false;
    }
    fprintf(f, "unknown request \"%s\"\n", cmd);
    return false;
}

/* What a member of control_group may ask: the requests that change nothing. */
static bool ctl_reads_only(char **w, int nw)
{
    if (nw == 0)
        return true;
    if (!strcmp(w[0], "status") || !strcmp(w[0], "stats") || !strcmp(w[0], "routes"))
        return true;
    if (!strcmp(w[0], "link") || !strcmp(w[0], "addr")) /* link set, addr add|del: root's */
        return nw == 1 || (strcmp(w[1], "set") != 0 && strcmp(w[1], "add") != 0 && strcmp(w[1], "del") != 0);
    for (int i = 1; !strcmp(w[0], "reload") && i < nw; i++)
        if (!strcmp(w[i], "diff")) /* check --diff: what a reload would do, done by none */
            return true;
    bool shows = !strcmp(w[0], "route") || !strcmp(w[0], "neigh") || !strcmp(w[0], "shaper");
    return shows && (nw == 1 || !strcmp(w[1], "show") || !strcmp(w[1], "json") ||
                     (!strcmp(w[0], "route") && !strcmp(w[1], "get")));
}

enum sup_answer sup_ctl_handle(struct sup *s, char *req, FILE *f, struct sup_ctl_wait *wait, bool read_only)
{
    /* One line: what follows the first newline is not part of it, and a
     * client that ends its line with CRLF means the same request. */
    req[strcspn(req, "\n")] = '\0';
    size_t l = strlen(req);
    if (l && req[l - 1] == '\r')
        req[l - 1] = '\0';
    char *save = NULL;
    char *words[CTL_WORDS_MAX];
    int nw = 0;
    for (char *w = strtok_r(req, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (nw == CTL_WORDS_MAX) {
            fprintf(f, "request: more than %d words\n", CTL_WORDS_MAX);
            return SUP_ANS_ERR;
        }
        words[nw++] = w;
    }
    if (read_only && !ctl_reads_only(words, nw)) {
        const struct group *gr = getgrgid(s->ctl_gid);
        fprintf(f, "%s%s%s needs root: members of group %s may only read (status, stats, link, route show|get, "
                   "neigh show, shaper show, check --diff)\n", words[0], nw > 1 ? " " : "", nw > 1 ? words[1] : "",
                gr ? gr->gr_name : s->m.router.control_group);
        return SUP_ANS_ERR;
    }
    bool failed = false;
    if (!ctl_dispatch(s, words, nw, f, wait, &failed))
        return SUP_ANS_ERR;
    return failed ? SUP_ANS_FAILED : SUP_ANS_OK;
}

int sup_ctl_client(const char *sock, int argc, char **argv)
{
    char req[SUP_CTL_REQ_MAX] = "";
    size_t off = 0;
    /* route load FILE|-: the routes travel in a memfd of ours, which the
     * supervisor reads through /proc (routes_load.c): a request line is
     * short, and a file or pipe it opened itself could block its loop. */
    char loadpath[64];
    if (argc >= 3 && strcmp(argv[0], "route") == 0 && strcmp(argv[1], "load") == 0) {
        int mfd = sup_route_load_memfd(argv[2]);
        if (mfd < 0)
            return SUP_EXIT_USAGE;
        snprintf(loadpath, sizeof(loadpath), "/proc/%d/fd/%d", (int)getpid(), mfd);
        argv[2] = loadpath;
    }
    for (int i = 0; i < argc; i++) {
        int n = snprintf(req + off, sizeof(req) - off, "%s%s", i ? " " : "", argv[i]);
        if (n < 0 || (size_t)n >= sizeof(req) - off) {
            fprintf(stderr, "ringrouter: request too long\n");
            return SUP_EXIT_USAGE;
        }
        off += (size_t)n;
    }
    snprintf(req + off, sizeof(req) - off, "\n");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "ringrouter: socket path %s is too long\n", sock);
        return SUP_EXIT_USAGE;
    }
    memcpy(sa.sun_path, sock, strlen(sock) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        if (e == EACCES || e == EPERM)
            fprintf(stderr, "ringrouter: %s: %s: the control socket is root's, and for the read commands its "
                            "group's ([router] control_group, by default ringrouter)\n", sock, strerror(e));
        else
            fprintf(stderr, "ringrouter: cannot reach the supervisor at %s: %s (is `ringrouter up` running?)\n",
                    sock, strerror(e));
        if (fd >= 0)
            close(fd);
        return SUP_EXIT_SYSTEM;
    }
    /* Only a supervisor (root: `up` refuses to run as anyone else) may
     * answer: a socket someone else put where we looked gets no request,
     * and its OK is not taken for the router's. */
    struct ucred cr = {.pid = 0, .uid = (uid_t)-1};
    socklen_t crlen = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 || cr.uid != 0) {
        fprintf(stderr, "ringrouter: %s: the process listening there (pid %d, uid %u) is not root's: not a "
                        "ringrouter supervisor; no request sent\n", sock, (int)cr.pid, (unsigned)cr.uid);
        close(fd);
        return SUP_EXIT_SYSTEM;
    }
    if (write(fd, req, strlen(req)) < 0) {
        fprintf(stderr, "ringrouter: %s: %s\n", sock, strerror(errno));
        close(fd);
        return SUP_EXIT_SYSTEM;
    }
    char *resp = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            char *n = realloc(resp, cap);
            if (!n) {
                free(resp);
                close(fd);
                return SUP_EXIT_SYSTEM;
            }
            resp = n;
        }
        ssize_t n = read(fd, resp + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    int rc;
    if (len >= 3 && memcmp(resp, "OK\n", 3) == 0) {
        fwrite(resp + 3, 1, len - 3, stdout);
        rc = SUP_EXIT_OK;
    } else if (len >= 7 && memcmp(resp, "FAILED\n", 7) == 0) {
        /* status: the whole answer, and an exit code a script can test */
        fwrite(resp + 7, 1, len - 7, stdout);
        rc = SUP_EXIT_FAILED;
    } else if (len >= 4 && memcmp(resp, "ERR\n", 4) == 0) {
        fprintf(stderr, "ringrouter: ");
        fwrite(resp + 4, 1, len - 4, stderr);
        rc = SUP_EXIT_USAGE;
    } else {
        fprintf(stderr, "ringrouter: no answer from the supervisor at %s\n", sock);
        rc = SUP_EXIT_SYSTEM;
    }
    free(resp);
    return rc;
}
