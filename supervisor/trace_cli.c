/* SPDX-License-Identifier: MIT */
/*
 * supervisor/trace_cli.c: the client of `ringrouter trace` (trace.h,
 * ipc/trace.h). It compiles the filter as `capture` does, asks the
 * supervisor, which answers with every capture region (driver, router,
 * shaper), the lease, and which service each region is; then reads the
 * records as they come, gathers them by trace id, and prints one block per
 * packet once its last stage (a transmit or a drop) is in, or a second
 * after its receive, stages in the order of their clock, until N
 * packets, SIGINT or SIGTERM. Records of an id with no receive in this
 * trace (an id the last trace gave) are not printed. Nothing read from a
 * region is believed: ipc_trace_take clamps each record, and every index
 * and length is bounded here before it names a port or reads a header.
 * Exiting, however it exits, closes the lease: the supervisor turns the
 * trace off.
 */
#include "supervisor/trace.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc/pkt.h"
#include "ipc/trace.h"
#include "supervisor/capture.h"
#include "supervisor/cli.h"
#include "supervisor/sup.h"

#define TR_PENDING 64u      /* packets gathered at once */
#define TR_RECS 16u         /* stages kept a packet */
#define TR_SETTLE_NS 50000000ull   /* after a packet's last stage, for records still in another ring */
#define TR_TIMEOUT_NS 1000000000ull /* a packet with no last stage is printed this long after its first record */
#define TR_NAMES 48u

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "ringrouter trace: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: ringrouter trace N [-S SOCKET] [FILTER]\n");
    return SUP_EXIT_USAGE;
}

struct tr_rec {
    struct ipc_trace_rec r;
    int region;
};

struct tr_pkt {
    bool used, have_rx, done;
    uint16_t id;
    unsigned n;
    uint64_t first_ns, done_ns; /* our clock */
    struct tr_rec rec[TR_RECS];
};

/* What the supervisor's answer names, and the packets being gathered. */
static struct {
    char svc[TR_NAMES][32];
    int nsvc;
    char port[TR_NAMES][32];
    int nport;
    struct tr_pkt pkt[TR_PENDING];
    unsigned printed;
    uint64_t unfinished;
} st;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* "services A B ..." and "ports A B ..." from the answer. */
static void parse_answer(char *ans)
{
    for (char *line = strtok(ans, "\n"); line; line = strtok(NULL, "\n")) {
        bool svc = strncmp(line, "services", 8) == 0, port = strncmp(line, "ports", 5) == 0;
        if (!svc && !port) {
            fprintf(stderr, "ringrouter: %s\n", line);
            continue;
        }
        char *save = NULL;
        strtok_r(line, " ", &save);
        for (char *w = strtok_r(NULL, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            if (svc && st.nsvc < (int)TR_NAMES)
                snprintf(st.svc[st.nsvc++], sizeof(st.svc[0]), "%s", w);
            else if (port && st.nport < (int)TR_NAMES)
                snprintf(st.port[st.nport++], sizeof(st.port[0]), "%s", w);
        }
    }
}

static const char *port_name(unsigned p, char *buf, size_t len)
{
    if (p < (unsigned)st.nport)
        return st.port[p];
    if (p == IPC_PORT_NONE)
        return "-";
    snprintf(buf, len, "#%u", p);
    return buf;
}

/* One line on what the frame's first bytes say: addresses, protocol,
 * ports or ICMP type. Bounded by what the record holds. */
static void describe(FILE *f, const struct ipc_trace_rec *r)
{
    uint32_t have = r->len < IPC_TRACE_HDR ? r->len : IPC_TRACE_HDR;
    const uint8_t *d = r->hdr;
    char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
    if (have < PKT_ETH_HLEN)
        return;
    uint16_t type = pkt_get16(d + PKT_ETH_TYPE);
    const uint8_t *l4 = NULL;
    uint8_t proto = 0;
    if (type == PKT_ETH_P_IP && have >= PKT_ETH_HLEN + PKT_IP_HLEN) {
        const uint8_t *ip = d + PKT_ETH_HLEN;
        inet_ntop(AF_INET, ip + PKT_IP_SRC, a, sizeof(a));
        inet_ntop(AF_INET, ip + PKT_IP_DST, b, sizeof(b));
        proto = ip[PKT_IP_PROTO];
        fprintf(f, ": IPv4 %s > %s ttl %u", a, b, ip[PKT_IP_TTL]);
        unsigned ihl = pkt_ip_hlen(ip);
        if (ihl >= PKT_IP_HLEN && PKT_ETH_HLEN + ihl + 8 <= have && !pkt_ip_is_later_fragment(ip))
            l4 = ip + ihl;
    } else if (type == PKT_ETH_P_IPV6 && have >= PKT_ETH_HLEN + PKT_IP6_HLEN) {
        const uint8_t *ip6 = d + PKT_ETH_HLEN;
        inet_ntop(AF_INET6, ip6 + PKT_IP6_SRC, a, sizeof(a));
        inet_ntop(AF_INET6, ip6 + PKT_IP6_DST, b, sizeof(b));
        proto = ip6[PKT_IP6_NXT];
        fprintf(f, ": IPv6 %s > %s hlim %u", a, b, ip6[PKT_IP6_HLIM]);
        if (PKT_ETH_HLEN + PKT_IP6_HLEN + 8 <= have)
            l4 = ip6 + PKT_IP6_HLEN;
    } else {
        if (type == PKT_ETH_P_ARP)
            fprintf(f, ": ARP");
        else
            fprintf(f, ": ethertype 0x%04x", type);
        return;
    }
    if (!l4)
        fprintf(f, " proto %u", proto);
    else if (proto == PKT_IP_PROTO_ICMP || proto == PKT_IP_PROTO_ICMPV6)
        fprintf(f, " %s type %u code %u id %u seq %u", proto == PKT_IP_PROTO_ICMP ? "ICMP" : "ICMPv6", l4[0], l4[1],
                pkt_get16(l4 + 4), pkt_get16(l4 + 6));
    else if (proto == PKT_IP_PROTO_TCP || proto == PKT_IP_PROTO_UDP)
        fprintf(f, " %s %u > %u", proto == PKT_IP_PROTO_TCP ? "TCP" : "UDP", pkt_get16(l4 + PKT_L4_SPORT),
                pkt_get16(l4 + PKT_L4_DPORT));
    else
        fprintf(f, " proto %u", proto);
}

static const char *neigh_name(unsigned s)
{
    static const char *const names[] = {"none (ARP asked, packet held)", "incomplete (packet held)", "reachable",
                                        "stale", "static"};
    return s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static void addr(const struct ipc_trace_rec *r, const uint8_t *a, char *buf, size_t len)
{
    inet_ntop(r->family == 6 ? AF_INET6 : AF_INET, a, buf, (socklen_t)len);
}

/* What a stage did, after its name. */
static void what(FILE *f, const struct ipc_trace_rec *r)
{
    char p1[16], p2[16], a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
    switch (r->stage) {
    case IPC_TR_RX:
    case IPC_TR_TX:
        fprintf(f, "port %s queue %u, %u bytes", port_name(r->port, p1, sizeof(p1)), r->queue, r->len);
        if (r->stage == IPC_TR_RX)
            describe(f, r);
        break;
    case IPC_TR_ROUTE:
        fprintf(f, "%s", ipc_trace_verdict_name(r->verdict));
        if (r->verdict == IPC_TV_FORWARD && r->family == 4) {
            addr(r, r->prefix, a, sizeof(a));
            addr(r, r->nexthop, b, sizeof(b));
            fprintf(f, ": fib %s/%u via %s port %s, neighbour %s", a, r->plen, b,
                    port_name(r->out_port, p2, sizeof(p2)), neigh_name(r->neigh));
        } else if (r->verdict == IPC_TV_IPV6 && r->out_port != IPC_PORT_NONE && r->family == 6) {
            addr(r, r->nexthop, b, sizeof(b));
            fprintf(f, ": via %s port %s", b, port_name(r->out_port, p2, sizeof(p2)));
        }
        if (r->note[0])
            fprintf(f, " (%s)", r->note);
        break;
    case IPC_TR_ICMP:
        fprintf(f, "type %u code %u to port %s: %s", r->icmp_type, r->icmp_code, port_name(r->out_port, p2, sizeof(p2)),
                ipc_trace_verdict_name(r->verdict));
        break;
    case IPC_TR_DROP:
        fprintf(f, "%s", r->note[0] ? r->note : "dropped");
        break;
    case IPC_TR_SHAPE:
        fprintf(f, "port %s class %s flow queue %u: %s", port_name(r->port, p1, sizeof(p1)),
                r->note[0] ? r->note : "?", r->queue, ipc_trace_verdict_name(r->verdict));
        break;
    default:
        fprintf(f, "?");
    }
    if (r->cost)
        fprintf(f, "; %u cycles/packet", r->cost);
}

/* By the wall clock, which the kernel keeps one for every CPU (a TSC need
 * not be); a stage's burst stamps its records at its start, before
 * anything the burst does to the packet. */
static int by_time(const void *x, const void *y)
{
    const struct tr_rec *a = x, *b = y;
    if (a->r.ts_ns != b->r.ts_ns)
        return a->r.ts_ns < b->r.ts_ns ? -1 : 1;
    return (int)a->r.stage - (int)b->r.stage;
}

static void print_pkt(struct tr_pkt *p, bool timed_out)
{
    qsort(p->rec, p->n, sizeof(p->rec[0]), by_time);
    /* The receive is the block's origin, wherever the clocks put it. */
    unsigned o = 0;
    for (unsigned i = 0; i < p->n; i++)
        if (p->rec[i].r.stage == IPC_TR_RX)
            o = i;
    const struct ipc_trace_rec *rx = &p->rec[o].r;
    time_t sec = (time_t)(rx->ts_ns / 1000000000u);
    struct tm tm;
    char when[32] = "?";
    if (gmtime_r(&sec, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    printf("Packet %u: trace id %u, %s.%06u UTC\n", ++st.printed, p->id, when,
           (unsigned)(rx->ts_ns % 1000000000u / 1000u));
    printf("  %10s %10s  %-12s %-6s %s\n", "+us", "cycles", "SERVICE", "STAGE", "WHAT");
    for (unsigned i = 0; i < p->n; i++) {
        const struct ipc_trace_rec *r = &p->rec[i].r;
        int reg = p->rec[i].region;
        double us = ((double)r->ts_ns - (double)rx->ts_ns) / 1000.0;
        char cyc[24] = "-";
        if (i > 0 && r->tsc >= p->rec[i - 1].r.tsc)
            snprintf(cyc, sizeof(cyc), "%llu", (unsigned long long)(r->tsc - p->rec[i - 1].r.tsc));
        printf("  %10.1f %10s  %-12s %-6s ", us, cyc, reg < st.nsvc ? st.svc[reg] : "?",
               ipc_trace_stage_name(r->stage));
        what(stdout, r);
        printf("\n");
    }
    if (timed_out)
        printf("  (no further stage within %llu ms)\n", TR_TIMEOUT_NS / 1000000ull);
    printf("\n");
    fflush(stdout);
    p->used = false;
}

static void add(const struct ipc_trace_rec *r, int region, uint64_t now)
{
    if (!r->id || !r->stage)
        return;
    struct tr_pkt *p = NULL, *fr = NULL;
    for (unsigned i = 0; i < TR_PENDING && !p; i++) {
        if (st.pkt[i].used && st.pkt[i].id == r->id)
            p = &st.pkt[i];
        else if (!st.pkt[i].used && !fr)
            fr = &st.pkt[i];
    }
    if (!p) {
        if (!fr) {
            st.unfinished++; /* more packets in flight than we gather: this one is not shown */
            return;
        }
        p = fr;
        memset(p, 0, sizeof(*p));
        p->used = true;
        p->id = r->id;
        p->first_ns = now;
    }
    if (p->n < TR_RECS)
        p->rec[p->n++] = (struct tr_rec){.r = *r, .region = region};
    if (r->stage == IPC_TR_RX)
        p->have_rx = true;
    if (r->stage == IPC_TR_TX || r->stage == IPC_TR_DROP) {
        p->done = true;
        p->done_ns = now;
    }
}

/* Print what is complete (or waited long enough); forget ids with no receive. */
static void flush(uint64_t now, unsigned want, bool all)
{
    for (unsigned i = 0; i < TR_PENDING && st.printed < want; i++) {
        struct tr_pkt *p = &st.pkt[i];
        if (!p->used)
            continue;
        bool settled = p->done && now - p->done_ns >= TR_SETTLE_NS;
        bool late = now - p->first_ns >= TR_TIMEOUT_NS;
        if (!settled && !late && !all)
            continue;
        if (p->have_rx)
            print_pkt(p, !settled);
        else
            p->used = false;
    }
}

int sup_trace_main(int argc, char **argv)
{
    const char *sock = NULL, *nstr = NULL;
    char filter[1024] = "";
    size_t fl = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            char err[128];
            cli_help(stdout, cli_command("trace", err, sizeof(err)));
            return SUP_EXIT_OK;
        }
        if (!strcmp(a, "-S")) {
            if (i + 1 >= argc)
                return usage("%s needs a value", a);
            sock = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return usage("unknown option \"%s\"", a);
        } else if (!nstr) {
            nstr = a;
        } else {
            int n = snprintf(filter + fl, sizeof(filter) - fl, "%s%s", fl ? " " : "", a);
            if (n < 0 || (size_t)n >= sizeof(filter) - fl)
                return usage("%s", "the filter is too long");
            fl += (size_t)n;
        }
    }
    if (!nstr)
        return usage("%s", "how many packets? (N, 1 to 1000)");
    char *end;
    unsigned long want = strtoul(nstr, &end, 10);
    if (*end || !*nstr || want == 0 || want > IPC_TRACE_N_MAX) {
        fprintf(stderr, "ringrouter trace: N \"%s\": 1 to %u packets\n", nstr, IPC_TRACE_N_MAX);
        return SUP_EXIT_USAGE;
    }
    char prog[512];
    int rc = sup_cap_compile("ringrouter trace", filter, IPC_CAP_SNAP_MAX, prog, sizeof(prog));
    if (rc)
        return rc;
    char req[SUP_CTL_REQ_MAX];
    if (snprintf(req, sizeof(req), "trace %lu %s\n", want, prog) >= (int)sizeof(req))
        return usage("%s", "the request is too long (a shorter filter)");
    const char *env = getenv("RINGROUTER_SOCKET");
    if (!sock)
        sock = env && env[0] ? env : "/run/ringrouter/control.sock";
    int fds[SUP_SEND_FDS_MAX];
    static char ans[4096];
    int n = sup_cap_ask("ringrouter trace", sock, req, fds, SUP_SEND_FDS_MAX, ans, sizeof(ans));
    if (n < 0)
        return -n;
    parse_answer(ans);
    int lease = fds[n - 1];
    struct ipc_cap *caps[SUP_SEND_FDS_MAX];
    uint64_t lost0[SUP_SEND_FDS_MAX];
    int ncap = n - 1;
    if ((rc = sup_cap_map("ringrouter trace", fds, ncap, caps)))
        return rc;
    for (int i = 0; i < ncap; i++)
        lost0[i] = ipc_ld_rlx(&caps[i]->tr_lost);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    uint64_t skipped = 0;
    const char *why = NULL;
    while (!stop && st.printed < want) {
        bool any = false;
        uint64_t now = mono_ns();
        for (int i = 0; i < ncap; i++) {
            struct ipc_trace_rec r;
            uint64_t sk;
            /* A ring's worth at most a pass: a service that keeps writing
             * cannot keep us from the others, or from printing. */
            for (unsigned k = 0; k < IPC_TRACE_SLOTS; k++) {
                int t = ipc_trace_take(caps[i], &r, &sk);
                skipped += sk;
                if (t <= 0)
                    break;
                any = true;
                add(&r, i, now);
            }
        }
        flush(now, (unsigned)want, false);
        if (ferror(stdout)) {
            why = errno == EPIPE ? NULL : strerror(errno);
            break;
        }
        if (!any) {
            struct pollfd p = {.fd = lease, .events = 0};
            if (poll(&p, 1, 2) > 0 && (p.revents & (POLLERR | POLLHUP))) {
                why = "the supervisor ended the trace";
                break;
            }
        }
    }
    if (!why && !ferror(stdout))
        flush(mono_ns(), (unsigned)want, true); /* stopped: what we have, as it is */
    uint64_t lost = skipped;
    for (int i = 0; i < ncap; i++)
        lost += ipc_ld_rlx(&caps[i]->tr_lost) - lost0[i];
    close(lease);
    fprintf(stderr, "%u packets traced\n%llu records lost\n", st.printed,
            (unsigned long long)(lost + st.unfinished));
    if (why) {
        fprintf(stderr, "ringrouter trace: %s\n", why);
        return SUP_EXIT_SYSTEM;
    }
    return SUP_EXIT_OK;
}
