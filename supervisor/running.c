/* SPDX-License-Identifier: MIT */
/*
 * supervisor/running.c: `ringrouter show running` and `ringrouter save
 * [FILE]`. The running manifest is the text `up` or the last reload read
 * (kept with it, struct sup_manifest.text), as `addr` and `link set` have
 * edited it since (live.c), with what changed at run time written in:
 *   - routes: a manifest route that `route replace` or `route del --force`
 *     changed leaves its section; every runtime route (`route add|replace`,
 *     `route load`) gets one, after the rest. Connected networks are the
 *     ports', and a daemon's routes ([routes]) its own: neither is written;
 *   - neighbours: every static entry of the tables (the manifest's and
 *     `neigh add`'s), in place of the manifest's [neigh] sections;
 *   - shaper rates: the rate and class rates and ceilings `shaper set`
 *     changed, as the shaper reports them, in their keys' lines.
 * The result is checked as `ringrouter check` would before it is shown or
 * written: what it prints, `up` runs. A runtime route with several next
 * hops is written with a `nexthop` line for each (route_mpath.c).
 */
#include "supervisor/running.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/route6.h"
#include "supervisor/route_multi.h"
#include "supervisor/shaper_ctl.h"

/* ---- what changed at run time ---- */

static int routes_now(struct sup *s, struct run_text *t)
{
    unsigned end = (unsigned)t->n;
    int ret = 0;
    for (size_t i = 0; i < s->m.nroutes; i++) {
        const struct sup_route *r = &s->m.routes[i];
        bool gone;
        if (r->v6) {
            struct fib6_nh nh;
            gone = sup_route6_runtime(s, r->prefix6.addr, r->prefix6.len) ||
                   fib6_get(&s->fib6, r->prefix6.addr, r->prefix6.len, &nh) != 0;
        } else {
            struct fib_nh nh;
            gone = sup_route_runtime(s, r->prefix.addr, r->prefix.len) ||
                   fib_get(&s->fib, r->prefix.addr, r->prefix.len, &nh) != 0;
        }
        if (gone)
            sup_text_drop_section(t, r->src.line);
    }
    char a[64], g[64];
    for (size_t i = 0; i < s->n_rt_routes && !ret; i++) {
        const struct sup_rt_route *r = &s->rt_routes[i];
        sup_ip_str(r->addr, a, sizeof(a));
        if (r->mp)
            ret = sup_text_add_mp(t, end, s, false, a, r->len, r->mp);
        else if (r->nh.gw)
            ret = sup_text_add(t, end, "\n[route %s/%u]\nvia = %s", a, r->len, sup_ip_str(r->nh.gw, g, sizeof(g)));
        else
            ret = sup_text_add(t, end, "\n[route %s/%u]\nport = %s", a, r->len,
                               r->nh.port < s->m.nports ? s->m.ports[r->nh.port].name : "?");
    }
    for (size_t i = 0; i < s->n_rt6_routes && !ret; i++) {
        const struct sup_rt_route6 *r = &s->rt6_routes[i];
        static const uint8_t zero[16];
        const char *port = r->nh.port < s->m.nports ? s->m.ports[r->nh.port].name : "?";
        sup_addr6_str(r->addr, a, sizeof(a));
        if (r->mp)
            ret = sup_text_add_mp(t, end, s, true, a, r->len, r->mp);
        else if (memcmp(r->nh.gw, zero, 16) == 0)
            ret = sup_text_add(t, end, "\n[route %s/%u]\nport = %s", a, r->len, port);
        else if (sup_ll6(r->nh.gw))
            ret = sup_text_add(t, end, "\n[route %s/%u]\nvia = %s\nport = %s", a, r->len,
                               sup_addr6_str(r->nh.gw, g, sizeof(g)), port);
        else
            ret = sup_text_add(t, end, "\n[route %s/%u]\nvia = %s", a, r->len, sup_addr6_str(r->nh.gw, g, sizeof(g)));
    }
    return ret;
}

static const char *mac_str(const uint8_t *m, char *buf, size_t len)
{
    snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return buf;
}

/* The static entries of both tables, in place of the manifest's sections.
 * -EBUSY: the router was rewriting one, and the answer would miss it. */
static int neighs_now(struct sup *s, struct run_text *t)
{
    unsigned end = (unsigned)t->n;
    int ret = 0;
    char a[64], m[24];
    for (size_t i = 0; i < s->m.nneighs; i++)
        sup_text_drop_section(t, s->m.neighs[i].src.line);
    uint32_t budget = NEIGH_READ_BUDGET;
    for (uint32_t i = 0; s->neigh.mask && i <= s->neigh.mask && !ret; i++) {
        struct neigh_entry e;
        int r = neigh_read(&s->neigh, i, &e, &budget);
        if (r == -EBUSY)
            return -EBUSY;
        if (r > 0 && e.state == NEIGH_STATIC && e.port < s->m.nports)
            ret = sup_text_add(t, end, "\n[neigh %s]\nmac = %s\nport = %s", sup_ip_str(e.ip, a, sizeof(a)),
                               mac_str(e.mac, m, sizeof(m)), s->m.ports[e.port].name);
    }
    budget = NEIGH_READ_BUDGET;
    for (uint32_t i = 0; s->neigh6.mask && i <= s->neigh6.mask && !ret; i++) {
        struct neigh6_entry e;
        int r = neigh6_read(&s->neigh6, i, &e, &budget);
        if (r == -EBUSY)
            return -EBUSY;
        if (r > 0 && e.state == NEIGH6_STATIC && e.port < s->m.nports)
            ret = sup_text_add(t, end, "\n[neigh %s]\nmac = %s\nport = %s", sup_addr6_str(e.ip, a, sizeof(a)),
                               mac_str(e.mac, m, sizeof(m)), s->m.ports[e.port].name);
    }
    return ret;
}

/* Key @key of a section (header line @header, key line @kline, 0: not
 * given) set to @val: its line rewritten in place, or one added. */
static int set_key(struct run_text *t, unsigned header, unsigned kline, const char *key, const char *val)
{
    sup_text_drop(t, kline);
    return sup_text_add(t, kline ? kline : header, "%s = %s", key, val);
}

static int rates_now(struct sup *s, struct run_text *t)
{
    int ret = 0;
    char r1[32];
    for (int i = 0; i < s->nsvcs && !ret; i++) {
        struct sup_svc *v = &s->svcs[i];
        if (v->kind != IPC_SVC_SHAPER || v->port < 0 || s->m.ports[v->port].shaper < 0)
            continue;
        const struct sup_shaper *sh = &s->m.shapers[s->m.ports[v->port].shaper];
        struct shp_cfg cfg, now;
        sup_shaper_cfg(&s->m, v->port, &cfg);
        sup_shaper_now(v, &cfg, &now);
        if (now.rate != cfg.rate)
            ret = set_key(t, sh->src.line, sh->src.key_line[SUP_SHAPER_RATE], "rate",
                          sup_rate_format(now.rate, r1, sizeof(r1)));
        for (size_t c = 0; c < s->m.nclasses && !ret; c++) {
            const struct sup_class *mc = &s->m.classes[c];
            for (uint32_t k = 0; k < cfg.nclasses && mc->port == v->port && !ret; k++) {
                if (strcmp(cfg.classes[k].name, mc->name) != 0)
                    continue;
                if (now.classes[k].rate != cfg.classes[k].rate)
                    ret = set_key(t, mc->src.line, mc->src.key_line[SUP_CLASS_RATE], "rate",
                                  sup_rate_format(now.classes[k].rate, r1, sizeof(r1)));
                /* A ceiling the manifest leaves out is the port's rate, and follows it. */
                bool follows = !mc->src.key_line[SUP_CLASS_CEIL] && now.classes[k].ceil == now.rate;
                if (!ret && now.classes[k].ceil != cfg.classes[k].ceil && !follows)
                    ret = set_key(t, mc->src.line, mc->src.key_line[SUP_CLASS_CEIL], "ceil",
                                  sup_rate_format(now.classes[k].ceil, r1, sizeof(r1)));
            }
        }
    }
    return ret;
}

char *sup_running_text(struct sup *s, const char *cmd, FILE *f)
{
    if (!s->m.text) {
        fprintf(f, "%s: the running manifest's text is not kept\n", cmd);
        return NULL;
    }
    struct run_text t;
    int ret = sup_text_split(&t, s->m.text);
    static const char head[] = "# ringrouter show running: ";
    if (!ret && t.n && strncmp(t.line[0], head, sizeof(head) - 1) == 0)
        sup_text_drop(&t, 1); /* a file `save` wrote: one such line, not one more each time */
    if (!ret)
        ret = sup_text_add(&t, 0, "%s%s as the router runs it now, with what changed at run time", head,
                           s->manifest_name);
    if (!ret)
        ret = routes_now(s, &t);
    if (!ret)
        ret = neighs_now(s, &t);
    if (!ret)
        ret = rates_now(s, &t);
    char *out = ret ? NULL : sup_text_join(&t);
    sup_text_free(&t);
    if (!out) {
        fprintf(f, "%s: %s\n", cmd,
                ret == -EBUSY ? "the router was rewriting a neighbour entry; try again" : "out of memory");
        return NULL;
    }
    /* What it prints, `up` must take. */
    struct sup_manifest m;
    struct sup_manifest_err err;
    if (sup_manifest_load_string("running", out, &m, &err) < 0) {
        fprintf(f, "%s: the running manifest does not check: %s\n", cmd, err.msg);
        free(out);
        return NULL;
    }
    sup_manifest_free(&m);
    return out;
}

bool sup_ctl_show(struct sup *s, char **argv, int argc, FILE *f)
{
    if (argc != 1 || strcmp(argv[0], "running") != 0) {
        fprintf(f, "show: %s\n", argc ? "expected `show running`" : "show what? (show running)");
        return false;
    }
    char *text = sup_running_text(s, "show running", f);
    if (!text)
        return false;
    fputs(text, f);
    free(text);
    return true;
}

/* ---- save ---- */

/* Is every directory of @dir (absolute, resolved) root's and writable by
 * no one else (sticky ones aside)? Else the one that is not, in @why. */
static bool dir_trusted(const char *dir, char *why, size_t len)
{
    char at[PATH_MAX];
    size_t n = strlen(dir);
    for (size_t i = 1; i <= n; i++) {
        if (i < n && dir[i] != '/')
            continue;
        memcpy(at, dir, i);
        at[i] = '\0';
        struct stat st;
        if (stat(at, &st) < 0) {
            snprintf(why, len, "%s: %s", at, strerror(errno));
            return false;
        }
        if (st.st_uid != 0 || ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
            snprintf(why, len, "%s is %s", at, st.st_uid ? "not root's" : "writable by others than root");
            return false;
        }
    }
    return true;
}

bool sup_ctl_save(struct sup *s, char **argv, int argc, FILE *f)
{
    if (argc > 1) {
        fprintf(f, "save: unexpected argument \"%s\" (save [FILE])\n", argv[1]);
        return false;
    }
    const char *path = argc ? argv[0] : s->manifest_path;
    if (!path[0]) {
        fprintf(f, "save: the supervisor runs the built-in manifest: name a FILE\n");
        return false;
    }
    if (path[0] != '/') {
        fprintf(f, "save: %s: give an absolute path\n", path);
        return false;
    }
    char dir[PATH_MAX], real[PATH_MAX], why[PATH_MAX + 64], full[PATH_MAX];
    if (realpath(path, full)) /* a symbolic link: the file it names is rewritten, not the link */
        path = full;
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = path + (slash - dir) + 1;
    *slash = '\0';
    if (!base[0] || !realpath(dir[0] ? dir : "/", real)) {
        fprintf(f, "save: %s: %s\n", path, base[0] ? strerror(errno) : "names a directory");
        return false;
    }
    if (!dir_trusted(real, why, sizeof(why))) {
        fprintf(f, "save: %s: %s: the file would be root's manifest in a place others can change\n", path, why);
        return false;
    }
    char *text = sup_running_text(s, "save", f);
    if (!text)
        return false;
    char tmp[NAME_MAX + 1];
    snprintf(tmp, sizeof(tmp), ".%.200s.%d.tmp", base, (int)getpid());
    int dfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = dfd < 0 ? -1 : openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    size_t len = strlen(text), off = 0;
    bool ok = fd >= 0 && fchown(fd, 0, 0) == 0 && fchmod(fd, 0644) == 0;
    while (ok && off < len) {
        ssize_t w = write(fd, text + off, len - off);
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    ok = ok && fsync(fd) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && renameat(dfd, tmp, dfd, base) < 0) {
        ok = false;
        e = errno;
    }
    if (!ok && fd >= 0)
        unlinkat(dfd, tmp, 0);
    if (ok)
        fsync(dfd); /* the rename itself */
    if (dfd >= 0)
        close(dfd);
    free(text);
    if (!ok) {
        fprintf(f, "save: %s: %s\n", path, strerror(e));
        return false;
    }
    sup_log("save: the running manifest to %s", path);
    fprintf(f, "saved the running manifest to %s\n", path);
    return true;
}
