/* SPDX-License-Identifier: MIT */
/*
 * supervisor/filter_setup.c: the supervisor's half of rr-filter.
 *
 * The rules. [filter] rules names a file that the supervisor opens through
 * sup_trust_open_file (every component root's, or ours), reads (at most
 * TBL_FLT_RULES_MAX bytes) and compiles with libfilter's compiler against
 * the manifest's ports: `check` reports the first error with the manifest's
 * line and the rules' line and column. The text then travels in the
 * filter's sealed config; the filter compiles it again (it parses root's
 * text, never a service's bytes, so the compiler in the supervisor sees no
 * hostile input).
 *
 * The path. A filtered port P's drivers hand their frames to the filter
 * ("rx-P"), it hands them to the router ("fi-P"), and the router's frames
 * for P go to it ("fo-P") and from it to P's first driver ("tx-P"), or to
 * P's shaper ("sh-P"), which feeds the driver ("tx-P"). Any other port Q
 * keeps its own rings with the router, and has one more pair through the
 * filter's egress ("fo-Q", "ft-Q") that the router uses for what came in
 * by a filtered port ("ft-Q" ends at Q's shaper if it has one: a second
 * input beside the router's). Input ring i of the filter pairs with its
 * output ring i.
 *
 * The connection table. A memfd of flt_ct_region_size(conntrack_max) bytes,
 * sealed against growing and shrinking, made once at `up` and kept by the
 * supervisor across every restart and upgrade of the filter (its dev_fd).
 * Before each new instance starts, the supervisor checks the header it
 * can check without trusting anything else in the region (magic, version,
 * sizes, geometry against what it made); a header that fails is wiped, and
 * the new instance, finding no table, formats an empty one. The instance
 * itself then walks every chain and the free list before it adopts the
 * table (flt_ct_attach), and rebuilds it empty if that fails.
 */
#include "supervisor/filter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "services/filter/flt.h"
#include "supervisor/adopt.h"
#include "supervisor/cp.h"
#include "tables/filter.h"

/* One filter per supervisor: its rules' text and the region's geometry. */
static struct {
    char rules[TBL_FLT_RULES_MAX];
    uint32_t len;
    uint32_t seed;
    uint64_t ct_size;
    bool wipe; /* conntrack flush: the next start begins empty */
} flt_sup;

const char *sup_filter_text(uint32_t *len)
{
    *len = flt_sup.len;
    return flt_sup.rules;
}

uint64_t sup_filter_ct_size(void)
{
    return flt_sup.ct_size;
}

static int filter_index(const struct sup *s)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].kind == IPC_SVC_FILTER)
            return i;
    return -1;
}

/* The rules file's text into @buf (at most @cap bytes); its length, or -1
 * with @why. */
static int read_rules(const char *path, char *buf, size_t cap, char *why, size_t wlen)
{
    struct ipc_err err;
    int pfd;
    if (sup_trust_open_file(path, &pfd, &err) < 0) {
        snprintf(why, wlen, "%s", err.msg);
        return -1;
    }
    char proc[40];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
    int fd = open(proc, O_RDONLY | O_CLOEXEC);
    close(pfd);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(why, wlen, "%s: cannot read: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > cap) {
        snprintf(why, wlen, "%s: %s", path,
                 S_ISREG(st.st_mode) ? "larger than the filter takes (64 KiB)" : "not a regular file");
        close(fd);
        return -1;
    }
    size_t have = 0;
    while (have < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + have, (size_t)st.st_size - have);
        if (n <= 0) {
            snprintf(why, wlen, "%s: cannot read: %s", path, n < 0 ? strerror(errno) : "it shrank");
            close(fd);
            return -1;
        }
        have += (size_t)n;
    }
    close(fd);
    return (int)have;
}

unsigned sup_filter_ports(const struct sup_manifest *m, struct flt_port *fp)
{
    unsigned n = m->nports < FLT_MAX_PORTS ? (unsigned)m->nports : FLT_MAX_PORTS;
    for (unsigned i = 0; i < n; i++) {
        const struct sup_port *p = &m->ports[i];
        memset(&fp[i], 0, sizeof(fp[i]));
        snprintf(fp[i].name, sizeof(fp[i].name), "%s", p->name);
        sup_port_mac(m, (int)i, fp[i].mac);
        if (p->address.addr) {
            fp[i].has_v4 = 1;
            for (int b = 0; b < 4; b++)
                fp[i].v4[b] = (uint8_t)(p->address.addr >> (24 - 8 * b));
        }
        for (unsigned k = 0; k < p->naddr6 && !fp[i].has_v6; k++)
            if (!sup_ll6(p->addr6[k].addr)) {
                fp[i].has_v6 = 1;
                memcpy(fp[i].v6, p->addr6[k].addr, 16);
            }
    }
    return n;
}

static int compile_rules(const struct sup_manifest *m, const char *manifest_name, char *buf, size_t cap, FILE *f)
{
    const struct sup_filter *fl = &m->filter;
    unsigned line = fl->src.key_line[SUP_FILTER_RULES];
    char why[600];
    int len = read_rules(fl->rules, buf, cap, why, sizeof(why));
    if (len < 0) {
        fprintf(f, "%s:%u: [filter] rules: %s\n", manifest_name, line, why);
        return -1;
    }
    struct flt_port ports[FLT_MAX_PORTS];
    unsigned n = sup_filter_ports(m, ports);
    struct flt_rules *r = flt_rules_compile(buf, (size_t)len, ports, n, why, sizeof(why));
    if (!r) {
        fprintf(f, "%s:%u: [filter] rules: %s: %s\n", manifest_name, line, fl->rules, why);
        return -1;
    }
    flt_rules_free(r);
    return len;
}

int sup_filter_check(const struct sup_manifest *m, const char *manifest_name, FILE *f)
{
    if (!m->filter.src.line)
        return 0;
    char *buf = malloc(TBL_FLT_RULES_MAX);
    if (!buf) {
        fprintf(f, "%s: [filter] rules: out of memory\n", manifest_name);
        return -1;
    }
    int ret = compile_rules(m, manifest_name, buf, TBL_FLT_RULES_MAX, f);
    free(buf);
    return ret < 0 ? -1 : 0;
}

int sup_filter_add(struct sup *s, struct sup_svc *v, int idx, int fd_kind0, struct ipc_err *err)
{
    char *msg = NULL;
    size_t mlen = 0;
    FILE *f = open_memstream(&msg, &mlen);
    if (!f)
        return ipc_errf(err, -ENOMEM, "out of memory");
    int len = compile_rules(&s->m, s->manifest_name, flt_sup.rules, sizeof(flt_sup.rules), f);
    fclose(f);
    if (len < 0) {
        int ret = ipc_errf(err, -EINVAL, "%s", msg ? msg : "[filter] rules refused");
        size_t n = strlen(err->msg);
        if (n && err->msg[n - 1] == '\n')
            err->msg[n - 1] = 0;
        free(msg);
        return ret;
    }
    free(msg);
    flt_sup.len = (uint32_t)len;
    flt_sup.ct_size = flt_ct_region_size(s->m.filter.conntrack_max);
    if (!flt_sup.ct_size)
        return ipc_errf(err, -EINVAL, "[filter] conntrack_max %u: no table that size", s->m.filter.conntrack_max);
    if (s->adopt) {
        int fd = sup_adopt_fd(s, idx, fd_kind0, "its connection table", err);
        if (fd < 0)
            return fd;
        /* The instance could have put any fd there: the region must still
         * be the size we made, sealed against resizing. */
        struct stat st;
        int seals = fcntl(fd, F_GET_SEALS);
        if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != flt_sup.ct_size || seals < 0 ||
            (seals & (F_SEAL_GROW | F_SEAL_SHRINK)) != (F_SEAL_GROW | F_SEAL_SHRINK)) {
            close(fd);
            return ipc_errf(err, -EPROTO, "adoption: %s's connection table is not %llu bytes, sealed", v->name,
                            (unsigned long long)flt_sup.ct_size);
        }
        v->dev_fd = fd;
        return 0;
    }
    if (getrandom(&flt_sup.seed, sizeof(flt_sup.seed), 0) != (ssize_t)sizeof(flt_sup.seed))
        flt_sup.seed = (uint32_t)sup_now_ns();
    char name[64];
    snprintf(name, sizeof(name), "ct-%s", s->m.router.name);
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return ipc_errf(err, -errno, "memfd_create %s: %s", name, strerror(errno));
    if (ftruncate(fd, (off_t)flt_sup.ct_size) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
        int e = errno;
        close(fd);
        return ipc_errf(err, -e, "%s: %llu bytes, sealed: %s", name, (unsigned long long)flt_sup.ct_size, strerror(e));
    }
    v->dev_fd = fd;
    sup_log("%s: connection table of %u entries (%llu KiB), kept across its restarts", v->name,
            s->m.filter.conntrack_max, (unsigned long long)(flt_sup.ct_size >> 10));
    return 0;
}

/* Port @p's shaper, -1: none. */
static int shaper_index(const struct sup *s, int p)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].kind == IPC_SVC_SHAPER && s->svcs[i].port == p)
            return i;
    return -1;
}

int sup_filter_rings(struct sup *s, int drv, int router, int p, int q, struct ipc_err *err)
{
    int f = filter_index(s), ret;
    if (f < 0)
        return 0;
    /* A shaped port's egress qdisc comes after the filter's forward and
     * postrouting hooks, as in Linux: what the filter lets out goes to the
     * shaper, which feeds the driver. */
    int shp = q == 0 ? shaper_index(s, p) : -1;
    if (!(s->m.filter.port_mask >> p & 1)) {
        /* Not filtered: the port's own rings, and a way through the
         * filter's egress for what comes in by a filtered port (to the
         * shaper, a second input beside the router's). */
        if (q == 0 && ((ret = sup_ring_add(s, "fo", p, 0, router, f, err)) < 0 ||
                       (ret = sup_ring_add(s, "ft", p, 0, f, shp >= 0 ? shp : drv, err)) < 0))
            return ret;
        return 0;
    }
    if ((ret = sup_ring_add(s, "rx", p, q, drv, f, err)) < 0 || (ret = sup_ring_add(s, "fi", p, q, f, router, err)) < 0)
        return ret;
    if (q == 0 && (ret = sup_ring_add(s, "fo", p, 0, router, f, err)) < 0)
        return ret;
    if (q == 0 && shp >= 0 &&
        ((ret = sup_ring_add(s, "sh", p, 0, f, shp, err)) < 0 || (ret = sup_ring_add(s, "tx", p, 0, shp, drv, err)) < 0))
        return ret;
    if (q == 0 && shp < 0 && (ret = sup_ring_add(s, "tx", p, 0, f, drv, err)) < 0)
        return ret;
    return 1;
}

uint32_t sup_filter_config(const struct sup *s, const struct sup_svc *v, void *x, int ct_fd)
{
    struct tbl_filter_cfg *c = x;
    tbl_cfg_hdr_init(&c->hdr, IPC_SVC_FILTER, TBL_FILTER_CFG_VERSION, sizeof(*c));
    c->ct_fd = ct_fd;
    c->ct_entries = s->m.filter.conntrack_max;
    c->ct_size = flt_sup.ct_size;
    c->ct_seed = flt_sup.seed;
    c->rules_len = flt_sup.len;
    memcpy(c->rules, flt_sup.rules, flt_sup.len);
    memset(c->reject_out, 0xff, sizeof(c->reject_out));
    for (int i = 0; i < v->n_in && i < IPC_SVC_MAX_RINGS; i++) {
        const struct sup_ring *r = &s->rings[v->in[i]];
        c->role[i] = s->svcs[r->prod].kind == IPC_SVC_ROUTER ? TBL_FLT_EGRESS : TBL_FLT_INGRESS;
        c->pair[i] = (uint8_t)i; /* sup_filter_rings made them in pairs */
    }
    for (int i = 0; i < v->n_out && i < IPC_SVC_MAX_RINGS; i++) {
        const struct sup_ring *r = &s->rings[v->out[i]];
        if (s->svcs[r->cons].kind != IPC_SVC_ROUTER && r->port >= 0 && r->port < IPC_MAX_PORTS)
            c->reject_out[r->port] = (uint8_t)i;
    }
    for (size_t p = 0; p < s->m.nports && p < IPC_MAX_PORTS; p++) {
        const struct sup_port *sp = &s->m.ports[p];
        for (int pass = 0; pass < 2; pass++) /* global addresses first: masquerade takes the first */
            for (unsigned k = 0; k < sp->naddr6 && c->naddr6[p] < TBL_FLT_ADDR6; k++)
                if (sup_ll6(sp->addr6[k].addr) == (pass == 1))
                    memcpy(c->addr6[p][c->naddr6[p]++], sp->addr6[k].addr, 16);
    }
    return sizeof(*c);
}

void sup_filter_svc_config(const struct sup *s, const struct sup_svc *v, struct ipc_svc_config *c)
{
    if (v->kind != IPC_SVC_ROUTER || !s->m.filter.src.line)
        return;
    for (int i = 0; i < v->n_out && i < IPC_SVC_MAX_RINGS; i++) {
        const struct sup_ring *r = &s->rings[v->out[i]];
        if (s->svcs[r->cons].kind == IPC_SVC_FILTER && !(s->m.filter.port_mask >> r->port & 1))
            c->out[i].flags |= IPC_RING_F_FILTER;
    }
    for (size_t p = 0; p < s->m.nports && p < IPC_MAX_PORTS; p++)
        if (s->m.filter.port_mask >> p & 1)
            c->ports[p].flags |= IPC_PORT_F_FILTER;
}

void sup_filter_before_start(struct sup *s, struct sup_svc *v)
{
    if (v->kind != IPC_SVC_FILTER || v->dev_fd < 0 || !flt_sup.ct_size)
        return;
    void *map = mmap(NULL, flt_sup.ct_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->dev_fd, 0);
    if (map == MAP_FAILED) {
        sup_err("%s: cannot map its connection table to check it: %s", v->name, strerror(errno));
        return;
    }
    const char *why = sup_filter_head_check(map, flt_sup.ct_size, s->m.filter.conntrack_max, flt_sup.ct_size);
    if (flt_sup.wipe) {
        flt_sup.wipe = false;
        memset(map, 0, flt_sup.ct_size);
        sup_log("%s: connection table flushed: the next instance starts an empty table", v->name);
    } else if (why) {
        memset(map, 0, flt_sup.ct_size);
        sup_warn("%s: connection table failed the supervisor's check (%s): wiped; the next instance starts an empty "
                 "table",
                 v->name, why);
    }
    munmap(map, flt_sup.ct_size);
}

/* A planned restart on the config as it is now, through a fresh standby
 * (the parked one mapped the old config). */
static void restart_on_config(struct sup *s, struct sup_svc *v)
{
    sup_standby_dismiss(s, v);
    if (v->state == SUP_ST_UP)
        sup_standby_spawn(s, v);
    sup_event(s, v, SUP_EV_RESTART, 0);
}

/* The rules file read and compiled again, into the filter's config: its
 * length, or -1 with the error on @f (after @cmd) and nothing changed. */
static int rules_anew(struct sup *s, struct sup_svc *v, const char *cmd, FILE *f)
{
    static char buf[TBL_FLT_RULES_MAX];
    int len = compile_rules(&s->m, s->manifest_name, buf, sizeof(buf), f);
    if (len < 0) {
        fprintf(f, "%s: nothing changed\n", cmd);
        return -1;
    }
    static char old[sizeof(flt_sup.rules)];
    uint32_t old_len = flt_sup.len;
    memcpy(old, flt_sup.rules, old_len);
    memcpy(flt_sup.rules, buf, (size_t)len);
    flt_sup.len = (uint32_t)len;
    struct ipc_err err;
    if (sup_svc_config(s, v, &err) < 0) {
        memcpy(flt_sup.rules, old, old_len);
        flt_sup.len = old_len;
        fprintf(f, "%s: the filter's new config: %s; nothing changed\n", cmd, err.msg);
        return -1;
    }
    sup_log("%s: rules reloaded from %s (%d bytes): restarting on them, its connections kept", v->name,
            s->m.filter.rules, len);
    fprintf(f, "%s: %s compiled (%d bytes); the filter restarts on it, its connections kept\n", cmd,
            s->m.filter.rules, len);
    return len;
}

int sup_filter_reload(struct sup *s, struct sup_svc *v, FILE *f)
{
    if (rules_anew(s, v, "filter reload", f) < 0)
        return -1;
    restart_on_config(s, v);
    return 0;
}

void sup_filter_flush(struct sup *s, struct sup_svc *v)
{
    flt_sup.wipe = true;
    sup_log("%s: conntrack flush requested", v->name);
    restart_on_config(s, v);
}

/* `reload` (reload.c). Changes to [filter] other than its rules change the
 * filter's rings or its table's size: they need `up`. So do ports added or
 * removed while it runs, since every port, or the ones it names, must pass
 * it, and a reload builds a new port's rings without it. */
bool sup_filter_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len)
{
    bool had = o->filter.src.line, has = n->filter.src.line;
    if (had != has) {
        snprintf(why, len, "[filter] %s", has ? "added" : "removed");
        return true;
    }
    if (!has)
        return false;
    const struct sup_filter *a = &o->filter, *b = &n->filter;
    if (a->conntrack_max != b->conntrack_max) {
        snprintf(why, len, "[filter] conntrack_max changed (%u -> %u): the connection table's size", a->conntrack_max,
                 b->conntrack_max);
        return true;
    }
    bool ports = a->ports.n != b->ports.n;
    for (unsigned i = 0; !ports && i < b->ports.n; i++)
        ports = strcmp(a->ports.name[i], b->ports.name[i]) != 0;
    if (ports) {
        snprintf(why, len, "[filter] ports changed: the filtered ports' rings");
        return true;
    }
    if (o->nports != n->nports) {
        snprintf(why, len, "ports added or removed with a [filter]: a new port's rings would not pass it");
        return true;
    }
    for (size_t p = 0; p < n->nports; p++)
        if (strcmp(o->ports[p].name, n->ports[p].name) != 0) {
            snprintf(why, len, "port %s replaced by %s with a [filter]: its rings would not pass it", o->ports[p].name,
                     n->ports[p].name);
            return true;
        } else if ((o->ports[p].shaper >= 0) != (n->ports[p].shaper >= 0)) {
            snprintf(why, len, "port %s: a shaper %s with a [filter]: the filter's egress feeds it", n->ports[p].name,
                     n->ports[p].shaper >= 0 ? "added" : "removed");
            return true;
        }
    return false;
}

int sup_filter_reload_check(const struct sup *s, const struct sup_manifest *n, const char *cmd, FILE *f)
{
    if (!n->filter.src.line)
        return 0;
    char *buf = malloc(TBL_FLT_RULES_MAX);
    if (!buf) {
        fprintf(f, "%s: [filter] rules: out of memory; nothing changed\n", cmd);
        return -1;
    }
    int len = compile_rules(n, s->manifest_name, buf, TBL_FLT_RULES_MAX, f);
    int ret = len < 0 ? -1 : (uint32_t)len != flt_sup.len || memcmp(buf, flt_sup.rules, (size_t)len) != 0;
    free(buf);
    if (ret < 0)
        fprintf(f, "%s: nothing changed\n", cmd);
    return ret;
}

int sup_filter_reload_apply(struct sup *s, FILE *f)
{
    int i = filter_index(s);
    return i < 0 ? -1 : rules_anew(s, &s->svcs[i], "[filter] rules", f) < 0 ? -1 : 0;
}
