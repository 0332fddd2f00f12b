/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_load.c: `ringrouter route load FILE|- [--merge]`, a
 * whole set of runtime routes, IPv4 and IPv6, at once (docs/routing.md,
 * "route load"). Every line is read and checked before anything changes: an error
 * names its line, and the FIB is left as it was. Then the FIB moves to the
 * new set in one pass (each entry switching in one atomic store, as `route
 * replace` does), with one reclaim at its end: without --merge the runtime
 * routes the file does not name are deleted (a replaced manifest route gets
 * its own next hop back, as `route flush` does), with --merge they stay.
 *
 * A line is what `route show` prints (PREFIX VIA PORT ORIGIN, VIA "-" for
 * a route to a port; rows of origin connected or manifest are skipped, the
 * header too), or what `ip route` prints and takes: [route] [add|replace]
 * PREFIX [via GATEWAY] [dev|port NAME], with proto, metric, scope, src,
 * table, pref, expires and onlink taken and ignored; or a route with
 * several next hops, as `route add` and `route save` have it (PREFIX via A
 * weight W via B ..., or ip's nexthop via A dev P weight W ...: route_multi.c).
 * Blank lines and # comments are skipped. An IPv6 line is checked as `route replace` checks
 * one (route6.c), and its runtime record is made as it goes in: the list
 * of runtime IPv6 routes is searched linearly, so IPv6 loads are meant for
 * thousands of routes, not a full table.
 *
 * The client hands the text over in a memfd of its own (ctl.c), read here
 * through /proc: a regular file in memory, which no read can block on.
 */
#include "supervisor/route6.h"
#include "supervisor/route_multi.h"
#include "supervisor/routes.h"
#include "supervisor/sup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOAD_MAX (512ull << 20) /* bytes of routes one load takes */
#define LOAD_WORDS 128 /* a route of 16 next hops, each `nexthop via A dev P weight W` */

int sup_route_load_memfd(const char *file)
{
    int in = strcmp(file, "-") == 0 ? 0 : open(file, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        fprintf(stderr, "ringrouter route load: %s: %s\n", file, strerror(errno));
        return -1;
    }
    int m = memfd_create("route-load", MFD_CLOEXEC);
    if (m < 0) {
        fprintf(stderr, "ringrouter route load: memfd: %s\n", strerror(errno));
        return -1;
    }
    char buf[65536];
    unsigned long long total = 0;
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        total += (unsigned long long)n;
        if (total > LOAD_MAX || write(m, buf, (size_t)n) != n) {
            fprintf(stderr, "ringrouter route load: %s: %s\n", file,
                    total > LOAD_MAX ? "larger than 512 MiB" : strerror(errno));
            return -1;
        }
    }
    if (n < 0) {
        fprintf(stderr, "ringrouter route load: %s: %s\n", file, strerror(errno));
        return -1;
    }
    if (in)
        close(in);
    return m; /* open until the answer: the supervisor reads it by /proc/PID/fd/N */
}

static uint32_t mask_of(unsigned len)
{
    return len ? (uint32_t)(0xffffffffull << (32 - len)) : 0;
}

static const char *ip4(uint32_t a, char *b, size_t n)
{
    return sup_ip_str(a, b, n);
}

/* The port whose connected network is @addr/@len exactly, or -1. */
static int connected_net(const struct sup *s, uint32_t addr, unsigned len)
{
    for (size_t p = 0; p < s->m.nports; p++) {
        const struct sup_prefix *n = &s->m.ports[p].address;
        if (n->len == len && (n->addr & mask_of(len)) == addr)
            return (int)p;
    }
    return -1;
}

struct load_route {
    uint32_t addr; /* IPv4 */
    uint8_t len;
    bool v6;
    struct fib_nh nh;
    uint8_t addr6[16]; /* IPv6 */
    struct fib6_nh nh6;
    struct sup_mp *mp; /* several next hops (route_multi.c); else NULL */
};

/* A `route show` row's ORIGIN: 1 a route to load, 0 the manifest's (skipped), -1 an error. */
static int row_origin(const char *origin, char *e, size_t elen)
{
    if (strcmp(origin, "connected") == 0 || strcmp(origin, "manifest") == 0)
        return 0;
    if (strcmp(origin, "runtime") != 0 && strcmp(origin, "daemon") != 0) {
        snprintf(e, elen, "origin \"%s\": expected connected, manifest, runtime or daemon", origin);
        return -1;
    }
    return 1;
}

/* ip's words from @w[@i] on: via GATEWAY, dev|port NAME (NULL when absent); 0, or -1 an error. */
static int ip_words(char **w, int i, int n, const char **via, const char **pname, char *e, size_t elen)
{
    static const char *const ignored[] = {"proto", "metric", "scope", "src", "table", "pref", "expires"};
    for (; i < n; i++) {
        const char *k = w[i], *v = i + 1 < n ? w[i + 1] : NULL;
        if (strcmp(k, "onlink") == 0)
            continue;
        if (!v) {
            snprintf(e, elen, "\"%s\" without a value", k);
            return -1;
        }
        i++;
        if (strcmp(k, "via") == 0) {
            *via = v;
            continue;
        }
        if (strcmp(k, "dev") == 0 || strcmp(k, "port") == 0) {
            *pname = v;
            continue;
        }
        bool known = false;
        for (size_t j = 0; j < sizeof(ignored) / sizeof(ignored[0]) && !known; j++)
            known = strcmp(k, ignored[j]) == 0;
        if (!known) {
            snprintf(e, elen, "unexpected \"%s\" (expected via, dev, port, or ip's proto, metric, scope, src, table, "
                              "pref, expires, onlink)", k);
            return -1;
        }
    }
    return 0;
}

/* A line's words after its prefix (@w[@i..@n]) into @via and @pname (NULL
 * when absent): route show's row (PREFIX VIA PORT ORIGIN; @row: the caller
 * read VIA as a gateway or "-") or ip's words. 1 a route, 0 a row of the
 * manifest's (skipped), -1 an error in @e. */
static int line_rest(char **w, int i, int n, bool row, const char **via, const char **pname, char *e, size_t elen)
{
    if (row && n - i == 3 && strcmp(w[i], "via") != 0) {
        int k = row_origin(w[i + 2], e, elen);
        if (k <= 0)
            return k;
        *via = strcmp(w[i], "-") != 0 ? w[i] : NULL;
        *pname = w[i + 1];
        return 1;
    }
    return ip_words(w, i, n, via, pname, e, elen) < 0 ? -1 : 1;
}

/* An IPv6 line's words after PREFIX (@pw) into @r: as load_line. */
static int load_line6(struct sup *s, char **w, int i, int n, const char *pw, struct load_route *r, char *e, size_t elen)
{
    const char *via = NULL, *pname = NULL;
    int k = line_rest(w, i, n, n - i == 3 && (strcmp(w[i], "-") == 0 || strchr(w[i], ':')), &via, &pname, e, elen);
    if (k <= 0)
        return k;
    if (!via && !pname) {
        snprintf(e, elen, "%s has neither via GATEWAY nor port NAME", pw);
        return -1;
    }
    struct sup_prefix6 pf;
    if (!sup_route6_load_check(s, pw, via, pname, &pf, &r->nh6, e, elen))
        return -1;
    if (sup_routes_has(s, AF_INET6, pf.addr, pf.len)) {
        snprintf(e, elen, "%s is a daemon's route ([routes]): it is the daemon's to change", pw);
        return -1;
    }
    r->v6 = true;
    r->len = pf.len;
    memcpy(r->addr6, pf.addr, 16);
    return 1;
}

/* One line into @r: 1 a route, 0 nothing to load, -1 an error in @e. */
static int load_line(struct sup *s, char *line, struct load_route *r, char *e, size_t elen)
{
    char *w[LOAD_WORDS];
    int n = 0;
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    for (char *t = strtok(line, " \t\r\n"); t; t = strtok(NULL, " \t\r\n")) {
        if (n == LOAD_WORDS) {
            snprintf(e, elen, "more than %d words", LOAD_WORDS);
            return -1;
        }
        w[n++] = t;
    }
    int i = 0;
    *r = (struct load_route){0};
    if (n == 0 || strcmp(w[0], "PREFIX") == 0)
        return 0;
    if (strcmp(w[i], "route") == 0)
        i++;
    if (i < n && (strcmp(w[i], "add") == 0 || strcmp(w[i], "replace") == 0))
        i++;
    if (i >= n) {
        snprintf(e, elen, "no prefix");
        return -1;
    }
    const char *pw = w[i++];
    struct sup_prefix pfx;
    struct sup_mp_line ml;
    if (sup_route_multi_args(w + i - 1, n - i + 1)) { /* several next hops: route_multi.c */
        if (sup_route_mp_line(s, w + i - 1, n - i + 1, &ml, e, elen) < 0)
            return -1;
        *r = (struct load_route){.addr = ml.addr, .len = ml.len, .v6 = ml.v6, .nh = ml.mp->nh[0], .mp = ml.mp};
        memcpy(r->addr6, ml.addr6, 16);
        return 1;
    }
    if (strchr(pw, ':'))
        return load_line6(s, w, i, n, pw, r, e, elen);
    if (strcmp(pw, "default") == 0) {
        pfx = (struct sup_prefix){0, 0};
    } else if (!strchr(pw, '/') && sup_parse_addr(pw, &pfx.addr)) {
        pfx.len = 32;
    } else if (!sup_parse_prefix(pw, &pfx)) {
        snprintf(e, elen, "\"%s\" is not an IPv4 prefix (a.b.c.d/len, an address, or default)", pw);
        return -1;
    }
    char b[24];
    if (pfx.addr & ~mask_of(pfx.len)) {
        snprintf(e, elen, "%s has host bits set; did you mean %s/%u?", pw, ip4(pfx.addr & mask_of(pfx.len), b, sizeof(b)),
                 pfx.len);
        return -1;
    }
    uint32_t gw = 0;
    int port = -1;
    const char *via = NULL, *pname = NULL;
    int k = line_rest(w, i, n, n - i == 3 && (strcmp(w[i], "-") == 0 || sup_parse_addr(w[i], &gw)), &via, &pname, e,
                      elen);
    if (k <= 0)
        return k;
    bool have_gw = via != NULL;
    if (via && !sup_parse_addr(via, &gw)) {
        snprintf(e, elen, "via \"%s\" is not an IPv4 address", via);
        return -1;
    }
    if (pname && (port = sup_manifest_port(&s->m, pname)) < 0) {
        snprintf(e, elen, "no port \"%s\"", pname);
        return -1;
    }
    if (have_gw) {
        int gp = sup_port_of_addr(s, gw);
        if (gp < 0) {
            snprintf(e, elen, "gateway %s is on none of the ports' networks", ip4(gw, b, sizeof(b)));
            return -1;
        }
        if (port >= 0 && port != gp) {
            snprintf(e, elen, "gateway %s is on port %s's network, not port %s's", ip4(gw, b, sizeof(b)),
                     s->m.ports[gp].name, s->m.ports[port].name);
            return -1;
        }
        char why[160];
        if (sup_gateway_why(&s->m, gw, gp, why, sizeof(why))) {
            snprintf(e, elen, "gateway %s", why);
            return -1;
        }
        port = gp;
    } else if (port < 0) {
        snprintf(e, elen, "%s has neither via GATEWAY nor port NAME", pw);
        return -1;
    }
    int cp = connected_net(s, pfx.addr, pfx.len);
    if (cp >= 0) {
        snprintf(e, elen, "%s is port %s's connected network", pw, s->m.ports[cp].name);
        return -1;
    }
    uint8_t d[16] = {0};
    uint32_t be = htonl(pfx.addr);
    memcpy(d, &be, 4);
    if (sup_routes_has(s, AF_INET, d, pfx.len)) {
        snprintf(e, elen, "%s is a daemon's route ([routes]): it is the daemon's to change", pw);
        return -1;
    }
    *r = (struct load_route){.addr = pfx.addr, .len = (uint8_t)pfx.len, .nh = {.gw = have_gw ? gw : 0, .port = (uint16_t)port}};
    return 1;
}

static void load_free(struct load_route *rs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sup_mp_free(rs[i].mp);
    free(rs);
}

static void key_of(uint32_t addr, uint8_t d[16])
{
    memset(d, 0, 16);
    uint32_t be = htonl(addr);
    memcpy(d, &be, 4);
}

/* A FIB change, retried while the FIB's retired groups are still held by a reader. */
static int load_fib(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    int ret;
    for (int tries = 0; (ret = nh ? fib_replace(&s->fib, addr, len, nh) : fib_del(&s->fib, addr, len)) == -EAGAIN &&
                        tries < 2000;
         tries++) {
        fib_reclaim(&s->fib);
        usleep(50);
    }
    return ret;
}

/* The runtime routes' index: the map of routes_map.c, each entry's epoch
 * the row's number in s->rt_routes. One supervisor, one index. */
static struct sup_rtmap rt_index;

struct sup_rt_route *sup_rt_index_find(struct sup *s, uint32_t addr, unsigned len)
{
    uint8_t d[16];
    key_of(addr, d);
    const struct sup_rte *e = sup_rtmap_find(&rt_index, AF_INET, d, (uint8_t)len);
    if (!e || e->epoch >= s->n_rt_routes)
        return NULL;
    struct sup_rt_route *r = &s->rt_routes[e->epoch];
    return r->addr == addr && r->len == len ? r : NULL;
}

int sup_rt_index_put(struct sup *s, size_t i)
{
    uint8_t d[16];
    key_of(s->rt_routes[i].addr, d);
    struct sup_rte *e = sup_rtmap_insert(&rt_index, AF_INET, d, s->rt_routes[i].len);
    if (!e)
        return -ENOMEM;
    e->epoch = (uint32_t)i;
    return 0;
}

void sup_rt_index_del(uint32_t addr, unsigned len)
{
    uint8_t d[16];
    key_of(addr, d);
    struct sup_rte *e = sup_rtmap_find(&rt_index, AF_INET, d, (uint8_t)len);
    if (e)
        sup_rtmap_remove(&rt_index, e);
}

void sup_rt_index_rebuild(struct sup *s)
{
    sup_rtmap_free(&rt_index);
    for (size_t i = 0; i < s->n_rt_routes; i++)
        if (sup_rt_index_put(s, i) < 0)
            sup_err("route: out of memory indexing the runtime routes");
}

static const struct sup_route *manifest_rt(const struct sup *s, uint32_t addr, unsigned len)
{
    for (size_t i = 0; i < s->m.nroutes; i++)
        if (!s->m.routes[i].v6 && s->m.routes[i].prefix.addr == addr && s->m.routes[i].prefix.len == len)
            return &s->m.routes[i];
    return NULL;
}

/* A million-line load holds the loop for seconds. The services must still
 * see their supervisor, or each says it has none and starts its orphan
 * grace (ipc_svc_orphan_check): the pulse goes on every LOAD_PULSE_EVERY
 * lines read and routes written. */
#define LOAD_PULSE_EVERY 16384u

static void load_pulse(struct sup *s, size_t i)
{
    if (i % LOAD_PULSE_EVERY == 0)
        sup_pulse(s, sup_now_ns());
}

bool sup_route_load(struct sup *s, char **argv, int argc, FILE *f)
{
    bool merge = argc == 2 && strcmp(argv[1], "merge") == 0;
    if (argc < 1 || argc > 2 || (argc == 2 && !merge)) {
        fprintf(f, "route load: usage: route load FILE|- [--merge]\n");
        return false;
    }
    int fd = open(argv[0], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        fprintf(f, "route load: the routes' memfd (%s): %s\n", argv[0], fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return false;
    }
    FILE *in = fdopen(fd, "r");
    if (!in) {
        close(fd);
        fprintf(f, "route load: %s\n", strerror(errno));
        return false;
    }
    struct load_route *rs = NULL;
    size_t n = 0, cap = 0;
    struct sup_rtmap seen = {0};
    char *line = NULL;
    size_t llen = 0;
    unsigned lineno = 0;
    bool ok = true;
    while (ok && getline(&line, &llen, in) >= 0) {
        load_pulse(s, ++lineno);
        char e[240];
        struct load_route r;
        int k = load_line(s, line, &r, e, sizeof(e));
        if (k < 0) {
            fprintf(f, "route load: line %u: %s; nothing changed\n", lineno, e);
            ok = false;
            break;
        }
        if (k == 0)
            continue;
        uint8_t d[16];
        int fam = r.v6 ? AF_INET6 : AF_INET;
        if (r.v6)
            memcpy(d, r.addr6, 16);
        else
            key_of(r.addr, d);
        struct sup_rte *x = sup_rtmap_find(&seen, (uint8_t)fam, d, r.len);
        if (x) {
            char b[INET6_ADDRSTRLEN];
            fprintf(f, "route load: line %u: %s/%u again (first on line %u); nothing changed\n", lineno,
                    r.v6 ? sup_addr6_str(r.addr6, b, sizeof(b)) : ip4(r.addr, b, sizeof(b)), r.len, x->epoch);
            ok = false;
            break;
        }
        if (!(x = sup_rtmap_insert(&seen, (uint8_t)fam, d, r.len))) {
            fprintf(f, "route load: out of memory\n");
            ok = false;
            break;
        }
        x->epoch = lineno;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 1024;
            struct load_route *nr = realloc(rs, c * sizeof(*nr));
            if (!nr) {
                fprintf(f, "route load: out of memory\n");
                ok = false;
                break;
            }
            rs = nr;
            cap = c;
        }
        rs[n++] = r;
    }
    free(line);
    fclose(in);
    size_t parsed = n;
    if (!ok) {
        load_free(rs, parsed);
        sup_rtmap_free(&seen);
        return false;
    }
    unsigned added = 0, changed = 0, same = 0, deleted = 0;
    /* Without --merge, the runtime routes the file does not name go first. */
    size_t keep = 0;
    for (size_t i = 0; i < s->n_rt_routes; i++) {
        const struct sup_rt_route *o = &s->rt_routes[i];
        uint8_t d[16];
        key_of(o->addr, d);
        if (sup_rtmap_find(&seen, AF_INET, d, o->len)) {
            sup_mp_free(o->mp);
            continue; /* the file's now */
        }
        if (merge) {
            s->rt_routes[keep++] = *o;
            continue;
        }
        const struct sup_route *mr = manifest_rt(s, o->addr, o->len);
        struct fib_nh mnh;
        if (mr)
            mnh = (struct fib_nh){.gw = mr->direct ? 0 : mr->via, .port = (uint16_t)mr->port};
        int ret = mr && mr->nnh ? sup_mroute_put(s, mr) : load_fib(s, o->addr, o->len, mr ? &mnh : NULL);
        sup_mp_free(o->mp);
        if (ret < 0 && ret != -ENOENT) {
            char b[24];
            sup_err("route load: %s/%u: %s", ip4(o->addr, b, sizeof(b)), o->len, strerror(-ret));
        }
        deleted++;
    }
    s->n_rt_routes = keep;
    for (size_t i = s->n_rt6_routes; i-- > 0 && !merge;) { /* downwards: a drop moves the last row here */
        const struct sup_rt_route6 o = s->rt6_routes[i];
        if (sup_rtmap_find(&seen, AF_INET6, o.addr, o.len))
            continue;
        int ret = sup_route6_drop(s, o.addr, o.len);
        if (ret < 0) {
            char b[INET6_ADDRSTRLEN];
            sup_err("route load: %s/%u: %s", sup_addr6_str(o.addr, b, sizeof(b)), o.len, strerror(-ret));
        }
        deleted++;
    }
    for (size_t i = 0; i < n; i++) {
        load_pulse(s, i + 1);
        if (rs[i].v6 || rs[i].mp) {
            bool had;
            struct sup_mp_line ml = {.v6 = rs[i].v6, .addr = rs[i].addr, .len = rs[i].len, .mp = rs[i].mp};
            memcpy(ml.addr6, rs[i].addr6, 16);
            int ret = rs[i].mp ? sup_route_mp_load_set(s, &ml, &had)
                               : sup_route6_load_set(s, rs[i].addr6, rs[i].len, &rs[i].nh6, &had);
            if (ret < 0) {
                char b[INET6_ADDRSTRLEN];
                fprintf(f, "route load: %s/%u: %s; %zu of %zu routes loaded\n",
                        rs[i].v6 ? sup_addr6_str(rs[i].addr6, b, sizeof(b)) : ip4(rs[i].addr, b, sizeof(b)),
                        rs[i].len, strerror(-ret), i, n);
                n = i;
                ok = false;
                break;
            }
            same += ret == 0;
            changed += ret == 1 && had;
            added += ret == 1 && !had;
            continue;
        }
        struct fib_nh cur;
        bool had = fib_get(&s->fib, rs[i].addr, rs[i].len, &cur) == 0;
        if (had && cur.gw == rs[i].nh.gw && cur.port == rs[i].nh.port) {
            same++;
        } else {
            int ret = load_fib(s, rs[i].addr, rs[i].len, &rs[i].nh);
            if (ret < 0) {
                char b[24];
                fprintf(f, "route load: %s/%u: %s; %zu of %zu routes loaded\n", ip4(rs[i].addr, b, sizeof(b)),
                        rs[i].len, strerror(-ret), i, n);
                n = i; /* what is in the FIB is what we keep */
                ok = false;
                break;
            }
            if (had)
                changed++;
            else
                added++;
        }
    }
    /* The runtime list: what stayed, then the file's routes. */
    if (s->n_rt_routes + n > s->cap_rt_routes) {
        size_t c = s->n_rt_routes + n;
        struct sup_rt_route *nr = realloc(s->rt_routes, c * sizeof(*nr));
        if (!nr) {
            fprintf(f, "route load: out of memory keeping the list of runtime routes\n");
            ok = false;
            n = 0;
        } else {
            s->rt_routes = nr;
            s->cap_rt_routes = c;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!rs[i].v6) { /* the IPv6 ones are recorded as they go in (sup_route6_load_set) */
            s->rt_routes[s->n_rt_routes++] =
                (struct sup_rt_route){.addr = rs[i].addr, .len = rs[i].len, .nh = rs[i].nh, .mp = rs[i].mp};
            rs[i].mp = NULL; /* the list's now */
        }
    fib_reclaim(&s->fib);
    fib6_reclaim(&s->fib6);
    sup_rt_index_rebuild(s);
    load_free(rs, parsed);
    sup_rtmap_free(&seen);
    sup_log("route load%s: %zu routes: %u added, %u changed, %u unchanged, %u deleted", merge ? " --merge" : "", n,
            added, changed, same, deleted);
    if (ok)
        fprintf(f, "loaded %zu routes%s: %u added, %u changed, %u unchanged, %u deleted\n", n, merge ? " (merge)" : "",
                added, changed, same, deleted);
    return ok;
}
