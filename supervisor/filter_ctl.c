/* SPDX-License-Identifier: MIT */
/*
 * supervisor/filter_ctl.c: the filter's commands (docs/filter.md,
 * "Commands"):
 *
 *   filter show       each chain's rules with their packets and bytes (the
 *                     filter's counters, rule.HOOK.N.*, carried across its
 *                     restarts) and the connection count
 *   filter reload     the rules file read and compiled again; if it checks,
 *                     the filter restarts on it (a planned restart: the
 *                     connection table and its NAT mappings stay), else
 *                     nothing changes and the error names the line; the
 *                     answer comes once the new instance is up on them
 *   conntrack show    the connections, as `conntrack -L` lists them
 *   conntrack count   how many
 *   conntrack flush   every connection dropped: the filter restarts on an
 *                     empty table, answered once it is up
 *
 * What the filter wrote (its counters, the table) is read as untrusted:
 * counter names compared within their bounds, entries copied out by
 * flt_ct_peek, with every bound from the size the supervisor made.
 */
#include "supervisor/filter.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "services/filter/flt.h"

static const char *const hook_names[FLT_NHOOKS] = {"prerouting", "input", "forward", "postrouting"};

static struct sup_svc *filter_svc(struct sup *s, FILE *f, const char *cmd)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].kind == IPC_SVC_FILTER)
            return &s->svcs[i];
    fprintf(f, "%s: no filter: the manifest has no [filter] section\n", cmd);
    return NULL;
}

/* Counter @name of @v's stats region, 0 if it has none. */
static uint64_t counter(const struct sup_svc *v, const char *name)
{
    struct ipc_svc_stats *st = v->stats;
    if (!st)
        return 0;
    uint32_t n = ipc_ld_acq(&st->nctr);
    if (n > IPC_SVC_MAX_CTR)
        n = IPC_SVC_MAX_CTR;
    for (uint32_t i = 0; i < n; i++)
        if (strncmp(st->ctr_name[i], name, IPC_CTR_NAME) == 0)
            return ipc_ld_rlx(&st->ctr[i]);
    return 0;
}

/* Line @line (from 1) of @text, without its newline, into @out. */
static void text_line(const char *text, uint32_t len, unsigned line, char *out, size_t cap)
{
    const char *p = text, *end = text + len;
    for (unsigned l = 1; l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl : end) - p);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

static bool filter_show(struct sup *s, struct sup_svc *v, FILE *f)
{
    uint32_t len;
    const char *text = sup_filter_text(&len);
    struct flt_port ports[FLT_MAX_PORTS];
    unsigned np = sup_filter_ports(&s->m, ports);
    char why[256];
    struct flt_rules *r = flt_rules_compile(text, len, ports, np, why, sizeof(why));
    if (!r) {
        fprintf(f, "filter show: the rules in force do not compile: %s\n", why);
        return false;
    }
    fprintf(f, "filter: %s, %u connections of %u\n", s->m.filter.rules, (unsigned)counter(v, "ct_count"),
            s->m.filter.conntrack_max);
    for (unsigned h = 0; h < FLT_NHOOKS; h++) {
        unsigned n = flt_rules_count(r, (enum flt_hook)h);
        if (!n)
            continue;
        fprintf(f, "chain %s\n  %12s %14s %5s  %s\n", hook_names[h], "packets", "bytes", "line", "rule");
        for (unsigned i = 0; i < n; i++) {
            char name[IPC_CTR_NAME], rule[160];
            snprintf(name, sizeof(name), "rule.%s.%u.pkts", hook_names[h], i);
            uint64_t pk = counter(v, name);
            snprintf(name, sizeof(name), "rule.%s.%u.bytes", hook_names[h], i);
            uint64_t by = counter(v, name);
            unsigned line = flt_rules_line(r, (enum flt_hook)h, i);
            text_line(text, len, line, rule, sizeof(rule));
            fprintf(f, "  %12llu %14llu %5u  %s\n", (unsigned long long)pk, (unsigned long long)by, line, rule);
        }
    }
    fprintf(f, "verdicts: accepted %llu dropped %llu rejected %llu\n", (unsigned long long)counter(v, "accepted"),
            (unsigned long long)counter(v, "dropped"), (unsigned long long)counter(v, "rejected"));
    flt_rules_free(r);
    return true;
}

/* The filter restarts on what was asked: a command that returned sooner
 * would let its caller send into the instance that is going (or into
 * none), and see the old rules in force. */
void sup_filter_wait(struct sup *s, struct sup_svc *v, pid_t old, const char *what, struct sup_ctl_wait *w)
{
    *w = (struct sup_ctl_wait){.pending = true, .kind = SUP_WAIT_FILTER, .svc = (int)(v - s->svcs),
                               .seq = (uint64_t)old, .deadline_ns = sup_now_ns() + SUP_FILTER_WAIT_NS};
    snprintf(w->what, sizeof(w->what), "%s", what);
}

bool sup_filter_poll(struct sup *s, struct sup_ctl_wait *w, uint64_t now, FILE *f, bool *ok)
{
    const struct sup_svc *v = &s->svcs[w->svc];
    *ok = v->state == SUP_ST_UP && v->pid > 0 && v->pid != (pid_t)w->seq;
    if (*ok)
        fprintf(f, "%s, pid %d\n", w->what, (int)v->pid);
    else if (v->state == SUP_ST_FAILED || v->state == SUP_ST_DOWN || now >= w->deadline_ns)
        fprintf(f, "%s: not so: the filter is %s%s (the supervisor's log says why)\n", w->what,
                sup_state_name(v->state), now >= w->deadline_ns ? " after 10 s" : "");
    else
        return false;
    w->pending = false;
    return true;
}

bool sup_ctl_filter(struct sup *s, char **w, int nw, FILE *f, struct sup_ctl_wait *wait)
{
    struct sup_svc *v = filter_svc(s, f, "filter");
    if (!v)
        return false;
    const char *sub = nw > 0 ? w[0] : "show";
    if (nw > 1) {
        fprintf(f, "filter %s: unexpected argument \"%s\"\n", sub, w[1]);
        return false;
    }
    if (strcmp(sub, "show") == 0)
        return filter_show(s, v, f);
    if (strcmp(sub, "reload") == 0) {
        pid_t old = v->pid;
        if (sup_filter_reload(s, v, f) < 0)
            return false;
        sup_filter_wait(s, v, old, "filter reload: the new rules are in force", wait);
        return true;
    }
    fprintf(f, "filter: unknown subcommand \"%s\": expected show or reload\n", sub);
    return false;
}

static void addr_str(const uint8_t a[16], int family, char *out, size_t cap)
{
    if (family == 4)
        snprintf(out, cap, "%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
    else
        sup_addr6_str(a, out, cap);
}

static const char *tcp_state_name(unsigned st)
{
    static const char *const n[] = {"NONE",      "SYN_SENT", "SYN_RECV",  "ESTABLISHED", "FIN_WAIT",
                                    "CLOSE_WAIT", "LAST_ACK", "TIME_WAIT", "CLOSE",       "SYN_SENT2"};
    return st < sizeof(n) / sizeof(n[0]) ? n[st] : "?";
}

static void tuple_print(FILE *f, const struct flt_tuple *t)
{
    char a[64], b[64];
    addr_str(t->src, t->family, a, sizeof(a));
    addr_str(t->dst, t->family, b, sizeof(b));
    fprintf(f, " src=%s dst=%s", a, b);
    if (t->proto == 6 || t->proto == 17)
        fprintf(f, " sport=%u dport=%u", t->sport, t->dport);
    else if (t->proto == 1 || t->proto == 58)
        fprintf(f, " id=%u", t->sport);
}

bool sup_ctl_conntrack(struct sup *s, char **w, int nw, FILE *f, struct sup_ctl_wait *wait)
{
    struct sup_svc *v = filter_svc(s, f, "conntrack");
    if (!v)
        return false;
    const char *sub = nw > 0 ? w[0] : "show";
    if (nw > 1) {
        fprintf(f, "conntrack %s: unexpected argument \"%s\"\n", sub, w[1]);
        return false;
    }
    if (strcmp(sub, "flush") == 0) {
        pid_t old = v->pid;
        sup_filter_flush(s, v);
        fprintf(f, "conntrack flush: every connection dropped; the filter restarts on an empty table\n");
        sup_filter_wait(s, v, old, "conntrack flush: the filter runs on the empty table", wait);
        return true;
    }
    bool count = strcmp(sub, "count") == 0;
    if (!count && strcmp(sub, "show") != 0) {
        fprintf(f, "conntrack: unknown subcommand \"%s\": expected show, count or flush\n", sub);
        return false;
    }
    uint64_t size = sup_filter_ct_size();
    void *map = v->dev_fd >= 0 && size ? mmap(NULL, size, PROT_READ, MAP_SHARED, v->dev_fd, 0) : MAP_FAILED;
    if (map == MAP_FAILED) {
        fprintf(f, "conntrack %s: cannot map the connection table\n", sub);
        return false;
    }
    uint64_t now = sup_now_ns() / 1000000u, n = 0;
    for (uint32_t i = 0; i < s->m.filter.conntrack_max; i++) {
        struct flt_ct_info ci;
        int ret = flt_ct_peek(map, size, i, &ci);
        if (ret == -EBADMSG) {
            fprintf(f, "conntrack %s: the table does not check (being rebuilt?)\n", sub);
            munmap(map, size);
            return false;
        }
        if (ret < 0 || !ci.confirmed)
            continue;
        n++;
        if (count)
            continue;
        const struct flt_tuple *o = &ci.orig;
        fprintf(f, "%s %u", o->proto == 6 ? "tcp" : o->proto == 17 ? "udp" : o->proto == 1 ? "icmp"
                            : o->proto == 58 ? "icmpv6" : "proto",
                o->proto);
        if (o->proto == 6)
            fprintf(f, " %s", tcp_state_name(ci.tcp_state));
        fprintf(f, " expires=%llu", (unsigned long long)(ci.expires_ms > now ? (ci.expires_ms - now) / 1000 : 0));
        tuple_print(f, o);
        if (!ci.seen_reply)
            fprintf(f, " [UNREPLIED]");
        tuple_print(f, &ci.reply);
        fprintf(f, "%s\n", ci.assured ? " [ASSURED]" : "");
    }
    munmap(map, size);
    if (count)
        fprintf(f, "%llu\n", (unsigned long long)n);
    return true;
}
