/* SPDX-License-Identifier: MIT */
/*
 * supervisor/shaper_ctl.c: the shaper's parameters and control commands.
 *   sup_shaper_params() the manifest's [shaper P] and [class P NAME] as the
 *                       struct shp_cfg of the shaper's typed config
 *   shaper show [PORT] [json]
 *                       per port and class: rate, ceil, measured rate,
 *                       backlog, drops, marks, read from the shaper's stats;
 *                       what the class matches, in the manifest's words
 *   shaper set PORT [CLASS] rate R [ceil C]
 *                       rates read by the manifest's parser (sup_parse_rate),
 *                       refused when the classes' guarantees would no longer
 *                       fit the port (guarantees_fit); then
 *                       changes a running shaper through its mailbox
 *                       (tables/shaper.h): write the command, bump seq,
 *                       wake the shaper, wait for ack. A shaper that is
 *                       down applies it when it starts; the rates in effect
 *                       outlive a restart.
 *
 * The shaper writes its stats region and may write all of its mailbox, so
 * nothing read there is trusted: a port's classes and their order come from
 * the manifest (the order the shaper's config gives them), a class counter
 * is read at the index the shaper puts it and only under the name it gives
 * it, and the mailbox's seq is the supervisor's own copy (sup_svc.mbox_seq).
 * An ack or a result that cannot be is logged with its offset, counted in
 * shm_corrupt, and answered as what it is.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/shaper_ctl.h"

void sup_shaper_params(const struct sup *s, const struct sup_svc *v, struct shp_cfg *out)
{
    sup_shaper_cfg(&s->m, v->port, out);
}

void sup_shaper_cfg(const struct sup_manifest *m, int port, struct shp_cfg *out)
{
    memset(out, 0, sizeof(*out));
    if (port < 0 || m->ports[port].shaper < 0)
        return; /* the manifest starts a shaper only for a port with [shaper PORT] */
    const struct sup_port *p = &m->ports[port];
    const struct sup_shaper *sh = &m->shapers[p->shaper];
    out->rate = sh->rate;
    out->burst = sh->burst;
    out->overhead = sh->overhead;
    out->ecn = 1;
    /* The manifest refuses more than SHP_MAX_CLASSES classes on a port. */
    uint32_t n = 0;
    for (size_t i = 0; i < m->nclasses && n < SHP_MAX_CLASSES; i++) {
        const struct sup_class *c = &m->classes[i];
        if (c->port != port)
            continue;
        struct shp_cfg_class *o = &out->classes[n];
        snprintf(o->name, sizeof(o->name), "%s", c->name);
        o->rate = c->rate;
        o->ceil = c->ceil ? c->ceil : sh->rate;
        o->prio = c->prio;
        o->match = (struct shp_match){
            .fields = c->match.fields,
            .dscp = c->match.dscp,
            .proto = c->match.proto,
            .src_len = c->match.src.len,
            .dst_len = c->match.dst.len,
            .sport_lo = c->match.sport_lo,
            .sport_hi = c->match.sport_hi,
            .dport_lo = c->match.dport_lo,
            .dport_hi = c->match.dport_hi,
            .src = c->match.src.addr,
            .dst = c->match.dst.addr,
            .mark = c->match.mark,
        };
        if (c->match.fields & SHP_MATCH_SRC6) {
            memcpy(o->match.src6, c->match.src6.addr, 16);
            o->match.src_len = c->match.src6.len;
        }
        if (c->match.fields & SHP_MATCH_DST6) {
            memcpy(o->match.dst6, c->match.dst6.addr, 16);
            o->match.dst_len = c->match.dst6.len;
        }
        if (c->is_default) {
            out->default_class = n;
            o->match.fields = 0;
        }
        n++;
    }
    if (n == 0) { /* no classes: the port is one class */
        snprintf(out->classes[0].name, sizeof(out->classes[0].name), "default");
        out->classes[0].rate = sh->rate;
        out->classes[0].ceil = sh->rate;
        out->classes[0].prio = 4;
        n = 1;
    }
    out->nclasses = n;
}

void sup_shaper_forget(struct sup *s, struct sup_svc *v)
{
    (void)s;
    _Atomic uint64_t *c = v->stats->ctr;
    ipc_st_rlx(&c[SHP_I_RATE], 0);
    for (unsigned i = SHP_I_CLASS0; i < SHP_I_CLASS0 + SHP_MAX_CLASSES * SHP_C_N; i++)
        ipc_st_rlx(&c[i], 0);
}

/* A counter of a stats region by name; -1 when it has none. */
static int ctr_index(const struct ipc_svc_stats *st, const char *name)
{
    uint32_t n = ipc_ld_acq(&((struct ipc_svc_stats *)st)->nctr);
    for (uint32_t i = 0; i < n && i < IPC_SVC_MAX_CTR; i++)
        if (strncmp(st->ctr_name[i], name, IPC_CTR_NAME) == 0)
            return (int)i;
    return -1;
}

static uint64_t ctr_get(struct ipc_svc_stats *st, const char *name)
{
    int i = ctr_index(st, name);
    return i < 0 ? 0 : ipc_ld_rlx(&st->ctr[i]);
}

_Static_assert(SHP_I_CLASS0 + SHP_MAX_CLASSES * SHP_C_N <= IPC_SVC_MAX_CTR, "every class counter fits the region");

/* Class @name of shaper @v, as the manifest has it: its index in the config
 * the shaper runs (@cfg, filled), or -1. */
static int class_of(const struct sup *s, const struct sup_svc *v, const char *name, struct shp_cfg *cfg)
{
    sup_shaper_params(s, v, cfg);
    for (uint32_t c = 0; c < cfg->nclasses && c < SHP_MAX_CLASSES; c++)
        if (strcmp(cfg->classes[c].name, name) == 0)
            return (int)c;
    return -1;
}

/* Counter @k of class @c, at the index where the shaper puts it
 * (tables/shaper.h) and only if it is named there as the shaper names it
 * (services/shaper/main.c); else @dflt (a shaper that has not started, or a
 * region that says something else). */
static uint64_t class_ctr(struct ipc_svc_stats *st, const struct shp_cfg *cfg, uint32_t c, unsigned k, uint64_t dflt)
{
    uint32_t i = SHP_I_CLASS0 + c * SHP_C_N + k;
    char want[IPC_CTR_NAME];
    snprintf(want, sizeof(want), "class.%.15s.%s", cfg->classes[c].name, shp_cctr_names[k]);
    if (c >= SHP_MAX_CLASSES || i >= ipc_ld_acq(&st->nctr) || strncmp(st->ctr_name[i], want, IPC_CTR_NAME) != 0)
        return dflt;
    return ipc_ld_rlx(&st->ctr[i]);
}

/* A mailbox word that cannot be: logged with its offset, counted. */
static void mbox_corrupt(struct sup *s, const struct sup_svc *v, const char *word, size_t off, uint64_t val,
                         const char *why)
{
    s->shm_corrupt++;
    sup_warn("%s: mailbox %s at offset %#zx is %llu, %s; not trusted", v->name, word, off, (unsigned long long)val,
             why);
}

static struct sup_svc *shaper_of(struct sup *s, int port)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].kind == IPC_SVC_SHAPER && s->svcs[i].port == port)
            return &s->svcs[i];
    return NULL;
}

/* What class @c takes, spelt as its manifest `match` (the default class: "default"). */
static const char *match_str(const struct shp_cfg *cfg, uint32_t c, char *buf, size_t len)
{
    const struct shp_match *m = &cfg->classes[c].match;
    if (c == cfg->default_class || !m->fields) {
        snprintf(buf, len, "default");
        return buf;
    }
    size_t n = 0;
    buf[0] = '\0';
#define TERM(...) (n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__), n = n < len ? n : len - 1)
    const char *sep = "";
    if (m->fields & SHP_MATCH_DSCP) {
        TERM("dscp %u", m->dscp);
        sep = ", ";
    }
    if (m->fields & SHP_MATCH_MARK) {
        TERM("%smark %u", sep, m->mark);
        sep = ", ";
    }
    if (m->fields & SHP_MATCH_PROTO) {
        const char *name = m->proto == 6 ? "tcp" : m->proto == 17 ? "udp" : m->proto == 1 ? "icmp" : NULL;
        if (name)
            TERM("%sproto %s", sep, name);
        else
            TERM("%sproto %u", sep, m->proto);
        sep = ", ";
    }
    for (int k = 0; k < 2; k++) {
        uint32_t bit = k ? SHP_MATCH_DPORT : SHP_MATCH_SPORT;
        uint16_t lo = k ? m->dport_lo : m->sport_lo, hi = k ? m->dport_hi : m->sport_hi;
        if (!(m->fields & bit))
            continue;
        if (lo == hi)
            TERM("%s%s %u", sep, k ? "dport" : "sport", lo);
        else
            TERM("%s%s %u-%u", sep, k ? "dport" : "sport", lo, hi);
        sep = ", ";
    }
    for (int k = 0; k < 2; k++) {
        const char *word = k ? "dst" : "src";
        uint8_t plen = k ? m->dst_len : m->src_len;
        char a[INET6_ADDRSTRLEN];
        if (m->fields & (k ? SHP_MATCH_DST : SHP_MATCH_SRC)) {
            uint32_t x = k ? m->dst : m->src;
            TERM("%s%s %u.%u.%u.%u/%u", sep, word, x >> 24, (x >> 16) & 255, (x >> 8) & 255, x & 255, plen);
            sep = ", ";
        } else if (m->fields & (k ? SHP_MATCH_DST6 : SHP_MATCH_SRC6)) {
            TERM("%s%s %s/%u", sep, word, sup_addr6_str(k ? m->dst6 : m->src6, a, sizeof(a)), plen);
            sep = ", ";
        }
    }
#undef TERM
    return buf;
}

/* One runtime value against the manifest's: what a reload makes of it. */
static unsigned override_line(FILE *f, const char *what, const char *key, uint64_t now, uint64_t was, uint64_t will,
                              bool keep, const char *svc)
{
    char b1[32], b2[32], b3[32];
    if (now == was)
        return 0;
    fprintf(f, "%s: %s %s set at run time, %s in the manifest: ", what, key, sup_rate_format(now, b1, sizeof(b1)),
            sup_rate_format(was, b2, sizeof(b2)));
    if (keep)
        fprintf(f, "reload keeps %s\n", b1);
    else if (svc)
        fprintf(f, "reload restarts %s at the manifest's %s\n", svc, sup_rate_format(will, b3, sizeof(b3)));
    else
        fprintf(f, "reload sets the manifest's %s\n", sup_rate_format(will, b3, sizeof(b3)));
    return keep;
}

uint64_t sup_shaper_overrides(struct sup_svc *v, const struct shp_cfg *oc, const struct shp_cfg *nc, bool restart,
                              const char *port, unsigned *kept, FILE *f)
{
    uint64_t rate = v && v->stats ? ctr_get(v->stats, "rate") : 0;
    if (!rate)
        return oc->rate; /* not started: it starts from the manifest */
    char what[64];
    const char *svc = restart ? v->name : NULL;
    bool port_same = !restart && oc->rate == nc->rate;
    snprintf(what, sizeof(what), "shaper %s", port);
    *kept += override_line(f, what, "rate", rate, oc->rate, nc->rate, port_same, svc);
    for (uint32_t k = 0; k < oc->nclasses && k < SHP_MAX_CLASSES; k++) {
        const struct shp_cfg_class *o = &oc->classes[k], *n = NULL;
        for (uint32_t m = 0; m < nc->nclasses && m < SHP_MAX_CLASSES && !n; m++)
            n = strcmp(nc->classes[m].name, o->name) == 0 ? &nc->classes[m] : NULL;
        if (!n)
            continue; /* removed: the reload says so, and restarts the shaper */
        bool keep = port_same && n->rate == o->rate && n->ceil == o->ceil;
        snprintf(what, sizeof(what), "class %s %s", port, o->name);
        *kept += override_line(f, what, "rate", class_ctr(v->stats, oc, k, SHP_C_RATE, o->rate), o->rate, n->rate,
                               keep, svc);
        *kept += override_line(f, what, "ceil", class_ctr(v->stats, oc, k, SHP_C_CEIL, o->ceil), o->ceil, n->ceil,
                               keep, svc);
    }
    return rate;
}

void sup_shaper_now(struct sup_svc *v, const struct shp_cfg *cfg, struct shp_cfg *now)
{
    *now = *cfg;
    uint64_t rate = v && v->stats ? ctr_get(v->stats, "rate") : 0;
    if (!rate)
        return;
    now->rate = rate;
    for (uint32_t k = 0; k < cfg->nclasses && k < SHP_MAX_CLASSES; k++) {
        now->classes[k].rate = class_ctr(v->stats, cfg, k, SHP_C_RATE, cfg->classes[k].rate);
        now->classes[k].ceil = class_ctr(v->stats, cfg, k, SHP_C_CEIL, cfg->classes[k].ceil);
    }
}

static void show_port(struct sup *s, struct sup_svc *v, bool json, bool first, FILE *f)
{
    struct ipc_svc_stats *st = v->stats;
    const struct sup_port *p = &s->m.ports[v->port];
    char b1[32], b2[32], b3[32];
    uint64_t rate = ctr_get(st, "rate");
    if (!rate)
        rate = s->m.shapers[p->shaper].rate; /* not started yet */
    if (json)
        fprintf(f, "%s{\"port\":\"%s\",\"service\":\"%s\",\"rate_bits_per_second\":%llu,\"backlog_packets\":%llu,"
                   "\"backlog_bytes\":%llu,\"tx_pkts\":%llu,\"overflow_drops\":%llu,\"codel_drops\":%llu,\"marks\":%llu,\"classes\":[",
                first ? "" : ",", p->name, v->name, (unsigned long long)rate,
                (unsigned long long)ctr_get(st, "backlog"), (unsigned long long)ctr_get(st, "backlog_bytes"),
                (unsigned long long)ctr_get(st, "tx_pkts"), (unsigned long long)ctr_get(st, "overflow_drops"),
                (unsigned long long)ctr_get(st, "codel_drops"), (unsigned long long)ctr_get(st, "marks"));
    else
        fprintf(f, "%sport %s (%s): rate %s, backlog %llu packets / %llu bytes, overflow drops %llu, codel drops %llu, "
                   "marks %llu\n  %-16s %10s %10s %10s %8s %10s %10s\n",
                first ? "" : "\n", p->name, v->name, sup_rate_format(rate, b1, sizeof(b1)),
                (unsigned long long)ctr_get(st, "backlog"), (unsigned long long)ctr_get(st, "backlog_bytes"),
                (unsigned long long)ctr_get(st, "overflow_drops"), (unsigned long long)ctr_get(st, "codel_drops"),
                (unsigned long long)ctr_get(st, "marks"), "class", "rate", "ceil", "measured", "backlog", "drops",
                "marks  match");
    /* The classes, in the manifest's order (the shaper's); their counters
     * where the shaper puts them, by the names it gives them. */
    struct shp_cfg cfg;
    sup_shaper_params(s, v, &cfg);
    for (uint32_t c = 0; c < cfg.nclasses && c < SHP_MAX_CLASSES; c++) {
        uint64_t val[SHP_C_N];
        for (unsigned k = 0; k < SHP_C_N; k++)
            val[k] = class_ctr(st, &cfg, c, k,
                               k == SHP_C_RATE ? cfg.classes[c].rate : k == SHP_C_CEIL ? cfg.classes[c].ceil : 0);
        const char *name = cfg.classes[c].name;
        char match[160];
        match_str(&cfg, c, match, sizeof(match));
        if (json)
            fprintf(f, "%s{\"name\":\"%s\",\"rate_bits_per_second\":%llu,\"ceil_bits_per_second\":%llu,"
                       "\"measured_bits_per_second\":%llu,\"tx_pkts\":%llu,\"tx_bytes\":%llu,\"backlog_packets\":%llu,"
                       "\"drops\":%llu,\"marks\":%llu,\"match\":\"%s\"}",
                    c ? "," : "", name, (unsigned long long)val[SHP_C_RATE], (unsigned long long)val[SHP_C_CEIL],
                    (unsigned long long)val[SHP_C_BPS], (unsigned long long)val[SHP_C_TX_PKTS],
                    (unsigned long long)val[SHP_C_TX_BYTES], (unsigned long long)val[SHP_C_BACKLOG],
                    (unsigned long long)val[SHP_C_DROPS], (unsigned long long)val[SHP_C_MARKS], match);
        else
            fprintf(f, "  %-16s %10s %10s %10s %8llu %10llu %10llu  %s\n", name,
                    sup_rate_format(val[SHP_C_RATE], b1, sizeof(b1)), sup_rate_format(val[SHP_C_CEIL], b2, sizeof(b2)),
                    sup_rate_format((val[SHP_C_BPS] + 50000) / 100000 * 100000, b3, sizeof(b3)), (unsigned long long)val[SHP_C_BACKLOG],
                    (unsigned long long)val[SHP_C_DROPS], (unsigned long long)val[SHP_C_MARKS], match);
    }
    if (json)
        fprintf(f, "]}");
}

static bool shaper_show(struct sup *s, char **argv, int argc, FILE *f)
{
    bool json = false;
    int port = -1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "json") == 0) {
            json = true;
        } else if (port < 0) {
            port = sup_manifest_port(&s->m, argv[i]);
            if (port < 0) {
                fprintf(f, "shaper show: no port \"%s\"\n", argv[i]);
                return false;
            }
            if (!shaper_of(s, port)) {
                fprintf(f, "shaper show: port %s has no shaper (no [shaper %s] in the manifest)\n", argv[i],
                        argv[i]);
                return false;
            }
        } else {
            fprintf(f, "shaper show: unexpected \"%s\"\n", argv[i]);
            return false;
        }
    }
    bool first = true;
    if (json) {
        sup_json_begin(f);
        fprintf(f, "\"shapers\":[");
    }
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        /* (A shaper whose port a reload is removing has no port to show.) */
        if (v->kind != IPC_SVC_SHAPER || (port >= 0 && v->port != port) || v->port >= (int)s->m.nports)
            continue;
        show_port(s, v, json, first, f);
        first = false;
    }
    if (json)
        fprintf(f, "]}\n");
    else if (first)
        fprintf(f, "no port has a shaper\n");
    return true;
}

/*
 * Would the change leave the port's classes as `check` accepts them? Each
 * class's rate at most its ceil, each ceil at most the port's rate, and the
 * guaranteed rates adding up to at most the port's rate. The rates in
 * effect are the shaper's (its counters; the manifest's until it runs); a
 * port change is judged after what the shaper does with it (rates and ceils
 * that were the old port rate follow it, those above the new one come down
 * to it: shp_set_rate), so that lowering a port below what its classes
 * guarantee is refused, not silently overbooked. @ci is the class changed,
 * -1 for the port.
 */
static bool guarantees_fit(struct sup *s, struct sup_svc *v, const struct shp_cfg *cfg, int ci, uint64_t rate,
                           uint64_t ceil, FILE *f)
{
    char b1[32], b2[32], b3[32], b4[32];
    uint64_t port = ctr_get(v->stats, "rate");
    if (!port)
        port = cfg->rate; /* not started yet */
    uint64_t sum = 0;
    if (ci < 0) {
        for (uint32_t c = 0; c < cfg->nclasses && c < SHP_MAX_CLASSES; c++) {
            uint64_t r = class_ctr(v->stats, cfg, c, SHP_C_RATE, cfg->classes[c].rate);
            sum += r == port || r > rate ? rate : r;
        }
        if (sum > rate) {
            fprintf(f, "shaper set: port %s's classes guarantee %s in all, more than %s; lower their rates first\n",
                    s->m.ports[v->port].name, sup_rate_format(sum, b1, sizeof(b1)), sup_rate_format(rate, b2, sizeof(b2)));
            return false;
        }
        return true;
    }
    uint64_t cur_rate = class_ctr(v->stats, cfg, (uint32_t)ci, SHP_C_RATE, cfg->classes[ci].rate);
    uint64_t cur_ceil = class_ctr(v->stats, cfg, (uint32_t)ci, SHP_C_CEIL, cfg->classes[ci].ceil);
    uint64_t r = rate ? rate : cur_rate, c = ceil ? ceil : cur_ceil;
    if (ceil && c < r) {
        fprintf(f, "shaper set: ceil %s is below the rate %s\n", sup_rate_format(c, b1, sizeof(b1)),
                sup_rate_format(r, b2, sizeof(b2)));
        return false;
    }
    if (r > port || (ceil && c > port)) {
        fprintf(f, "shaper set: a class's rate and ceil are at most the port's rate (%s)\n",
                sup_rate_format(port, b1, sizeof(b1)));
        return false;
    }
    for (uint32_t k = 0; k < cfg->nclasses && k < SHP_MAX_CLASSES; k++)
        sum += k == (uint32_t)ci ? r : class_ctr(v->stats, cfg, k, SHP_C_RATE, cfg->classes[k].rate);
    if (sum > port) {
        fprintf(f, "shaper set: class %s's rate %s and the other classes' %s add up to %s, more than the port's rate "
                   "%s\n", cfg->classes[ci].name, sup_rate_format(r, b1, sizeof(b1)),
                sup_rate_format(sum - r, b2, sizeof(b2)), sup_rate_format(sum, b3, sizeof(b3)),
                sup_rate_format(port, b4, sizeof(b4)));
        return false;
    }
    return true;
}

static bool shaper_set(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    if (argc < 3) {
        fprintf(f, "shaper set: expected PORT [CLASS] rate RATE [ceil RATE]\n");
        return false;
    }
    int port = sup_manifest_port(&s->m, argv[0]);
    if (port < 0) {
        fprintf(f, "shaper set: no port \"%s\"\n", argv[0]);
        return false;
    }
    struct sup_svc *v = shaper_of(s, port);
    if (!v) {
        fprintf(f, "shaper set: port %s has no shaper (no [shaper %s] in the manifest)\n", argv[0], argv[0]);
        return false;
    }
    int i = 1;
    const char *cls = NULL;
    if (strcmp(argv[1], "rate") != 0 && strcmp(argv[1], "ceil") != 0)
        cls = argv[i++];
    uint64_t rate = 0, ceil = 0;
    for (; i < argc; i += 2) {
        uint64_t *dst = strcmp(argv[i], "rate") == 0 ? &rate : strcmp(argv[i], "ceil") == 0 ? &ceil : NULL;
        if (!dst || i + 1 >= argc) {
            fprintf(f, "shaper set: expected rate RATE or ceil RATE, not \"%s\"\n", argv[i]);
            return false;
        }
        char why[SUP_MANIFEST_ERR_MAX];
        if (sup_parse_rate(argv[i + 1], dst, why, sizeof(why))) { /* the manifest's parser, its words */
            fprintf(f, "shaper set: %s: %s\n", argv[i], why);
            return false;
        }
    }
    uint64_t target = 0; /* 0: the port, c + 1: class c */
    if (!cls && (ceil || !rate)) {
        fprintf(f, "shaper set: a port has a rate only (shaper set PORT rate RATE)\n");
        return false;
    }
    struct shp_cfg cfg;
    int ci = -1;
    if (cls) {
        ci = class_of(s, v, cls, &cfg);
        if (ci < 0) {
            fprintf(f, "shaper set: port %s has no class \"%s\" (see ringrouter shaper show %s)\n", argv[0], cls,
                    argv[0]);
            return false;
        }
        target = (uint64_t)ci + 1;
    } else {
        sup_shaper_params(s, v, &cfg);
    }
    if (!guarantees_fit(s, v, &cfg, ci, rate, ceil, f))
        return false;
    struct shp_mbox *mb = v->mbox;
    uint64_t seq = v->mbox_seq, mseq = ipc_ld_rlx(&mb->seq), ack = ipc_ld_acq(&mb->ack);
    if (mseq != seq)
        mbox_corrupt(s, v, "seq", offsetof(struct shp_mbox, seq), mseq, "not the last command the supervisor wrote");
    if (seq && ack == seq - 1) {
        fprintf(f, "shaper set: %s has not taken the previous change yet; try again\n", v->name);
        return false;
    }
    if (ack != seq) /* neither taken nor pending: no answer to wait for */
        mbox_corrupt(s, v, "ack", offsetof(struct shp_mbox, ack), ack, "neither the last command nor the one before");
    ipc_st_rlx(&mb->cls, target);
    ipc_st_rlx(&mb->rate, rate);
    ipc_st_rlx(&mb->ceil, ceil);
    v->mbox_seq = seq + 1;
    ipc_st_rel(&mb->seq, seq + 1);
    uint64_t one = 1;
    if (write(v->wake_fd, &one, sizeof(one)) < 0) {
        /* it wakes on its own within hang_ms / 4 */
    }
    char b1[32], b2[32];
    sup_log("shaper set %s %s rate %s ceil %s", argv[0], cls ? cls : "(port)",
            rate ? sup_rate_format(rate, b1, sizeof(b1)) : "-", ceil ? sup_rate_format(ceil, b2, sizeof(b2)) : "-");
    if (v->state != SUP_ST_UP) {
        fprintf(f, "%s is %s: the change applies when it starts\n", v->name, sup_state_name(v->state));
        return true;
    }
    /* The answer comes within a loop of the shaper's: the connection waits
     * for it (sup_shaper_set_poll, from the event loop's timer), the loop
     * does not. */
    *w = (struct sup_ctl_wait){.pending = true, .kind = SUP_WAIT_SHAPER, .svc = (int)(v - s->svcs), .seq = seq + 1,
                                  .deadline_ns = sup_now_ns() + SUP_SHAPER_ANSWER_NS};
    snprintf(w->what, sizeof(w->what), "%s %s: rate %s%s%s", argv[0], cls ? cls : "(port)",
             rate ? sup_rate_format(rate, b1, sizeof(b1)) : "unchanged", ceil ? ", ceil " : "",
             ceil ? sup_rate_format(ceil, b2, sizeof(b2)) : "");
    return true;
}

bool sup_shaper_set_poll(struct sup *s, struct sup_ctl_wait *w, uint64_t now, FILE *f, bool *ok)
{
    const struct sup_svc *v = &s->svcs[w->svc];
    struct shp_mbox *mb = v->mbox;
    *ok = true;
    uint64_t ack = ipc_ld_acq(&mb->ack);
    if (ack == w->seq) {
        /* result is the shaper's word: an errno it says it got, never trusted as more */
        uint64_t r = ipc_ld_rlx(&mb->result);
        if (r >= 4096) {
            mbox_corrupt(s, v, "result", offsetof(struct shp_mbox, result), r, "not an errno");
            fprintf(f, "shaper set: %s answered with result %llu, which is not an error number; see ringrouter "
                       "shaper show\n", v->name, (unsigned long long)r);
            *ok = false;
        } else if (r) {
            fprintf(f, "shaper set: %s refused it: %s\n", v->name, strerror((int)r));
            *ok = false;
        } else {
            fprintf(f, "%s\n", w->what);
        }
    } else if (ack != w->seq - 1) {
        mbox_corrupt(s, v, "ack", offsetof(struct shp_mbox, ack), ack, "neither the command sent nor the one before");
        fprintf(f, "shaper set: %s answered with a corrupt mailbox (ack %llu for command %llu); see ringrouter "
                   "shaper show\n", v->name, (unsigned long long)ack, (unsigned long long)w->seq);
        *ok = false;
    } else if (now >= w->deadline_ns) {
        fprintf(f, "%s has not answered within %llu ms; the change applies when it does\n", v->name,
                (unsigned long long)(SUP_SHAPER_ANSWER_NS / 1000000));
    } else {
        return false;
    }
    w->pending = false;
    return true;
}

bool sup_ctl_shaper(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    if (argc == 0 || strcmp(argv[0], "show") == 0)
        return shaper_show(s, argv + (argc ? 1 : 0), argc ? argc - 1 : 0, f);
    if (strcmp(argv[0], "set") == 0)
        return shaper_set(s, argv + 1, argc - 1, f, w);
    fprintf(f, "shaper: expected show [PORT] or set PORT [CLASS] rate RATE [ceil RATE]\n");
    return false;
}
