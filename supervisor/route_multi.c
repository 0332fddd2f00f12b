/* SPDX-License-Identifier: MIT */
/*
 * supervisor/route_multi.c: routes with several next hops, both families
 * (route_multi.h): checking each next hop as `route add` checks one,
 * installing the group (tables/fib_group.h), the command's words, and the
 * groups' rows in `route show` and lines in `route save`.
 */
#include "supervisor/route_multi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "supervisor/route6.h"
#include "supervisor/routes.h"
#include "supervisor/sup.h"

#define A6(a) sup_addr6_str((a), (char[INET6_ADDRSTRLEN]){0}, INET6_ADDRSTRLEN)

static const char *a4(uint32_t a, char *b, size_t len)
{
    return sup_ip_str(a, b, len);
}

static const char *port_name(const struct sup *s, unsigned p)
{
    return p < s->m.nports ? s->m.ports[p].name : "?";
}

bool sup_route_multi_args(char **argv, int argc)
{
    int vias = 0;
    for (int i = 1; i < argc; i++) {
        /* iproute2's `nexthop via G`; a lone `nexthop X` stays route add's to refuse */
        if ((strcmp(argv[i], "nexthop") == 0 && i + 1 < argc && strcmp(argv[i + 1], "via") == 0) ||
            strcmp(argv[i], "weight") == 0)
            return true;
        if (strcmp(argv[i], "via") == 0)
            vias++;
        if (strcmp(argv[i], "via") == 0 || strcmp(argv[i], "port") == 0)
            i++; /* a value: a port may be called "weight" */
    }
    return vias > 1;
}

struct sup_mp *sup_mp_dup(const struct sup_mp *mp)
{
    struct sup_mp *d = mp ? malloc(sizeof(*d)) : NULL;
    if (d)
        *d = *mp;
    return d;
}

void sup_mp_free(struct sup_mp *mp)
{
    free(mp);
}

bool sup_mp_on_port(const struct sup_mp *mp, bool v6, int port)
{
    for (unsigned k = 0; k < mp->n; k++)
        if ((v6 ? mp->nh6[k].port : mp->nh[k].port) == port)
            return true;
    return false;
}

/* Next hop @k of @in, checked as `route add` checks a gateway, into @mp. */
static int resolve_nh(struct sup *s, bool v6, const struct sup_nexthop *in, unsigned k, struct sup_mp *mp, char *e,
                      size_t elen)
{
    char why[200], b[24];
    if (in->port >= (int)s->m.nports) {
        snprintf(e, elen, "next hop %u: no port %d", k + 1, in->port);
        return -EINVAL;
    }
    int p = in->port;
    if (!v6) {
        uint32_t gw;
        memcpy(&gw, in->gw, 4);
        gw = ntohl(gw);
        int on = sup_port_of_addr(s, gw);
        if (on < 0) {
            snprintf(e, elen, "gateway %s is on none of the ports' networks", a4(gw, b, sizeof(b)));
            return -EINVAL;
        }
        if (p >= 0 && p != on) {
            snprintf(e, elen, "gateway %s is on port %s, not %s", a4(gw, b, sizeof(b)), port_name(s, (unsigned)on),
                     port_name(s, (unsigned)p));
            return -EINVAL;
        }
        if (sup_gateway_why(&s->m, gw, on, why, sizeof(why))) {
            snprintf(e, elen, "gateway %s", why);
            return -EINVAL;
        }
        mp->nh[k] = (struct fib_nh){.gw = gw, .port = (uint16_t)on};
        return 0;
    }
    if (sup_ll6(in->gw)) {
        if (p < 0) {
            snprintf(e, elen, "gateway %s is link-local: add port NAME to say which link it is on", A6(in->gw));
            return -EINVAL;
        }
    } else {
        int on = sup_port_for6(&s->m, in->gw);
        if (on < 0) {
            snprintf(e, elen, "gateway %s is on none of the ports' IPv6 networks", A6(in->gw));
            return -EINVAL;
        }
        if (p >= 0 && p != on) {
            snprintf(e, elen, "gateway %s is on port %s, not %s", A6(in->gw), port_name(s, (unsigned)on),
                     port_name(s, (unsigned)p));
            return -EINVAL;
        }
        p = on;
    }
    if (sup_gateway6_why(&s->m, in->gw, p, why, sizeof(why))) {
        snprintf(e, elen, "gateway %s", why);
        return -EINVAL;
    }
    mp->nh6[k] = (struct fib6_nh){.port = (uint16_t)p};
    memcpy(mp->nh6[k].gw, in->gw, 16);
    return 0;
}

/* The prefix @addr (network order)/@len, checked: host order into *@a4 or @a6. */
static int check_prefix(struct sup *s, bool v6, const void *addr, unsigned len, uint32_t *a4p, uint8_t *a6, char *e,
                        size_t elen)
{
    if (!v6) {
        uint32_t a;
        memcpy(&a, addr, 4);
        a = ntohl(a);
        uint32_t mask = len ? (uint32_t)(0xffffffffull << (32 - len)) : 0;
        if (len > 32 || (a & ~mask)) {
            snprintf(e, elen, "prefix /%u: a bad length, or host bits set", len);
            return -EINVAL;
        }
        if (sup_route4_connected(s, a, len) >= 0) {
            snprintf(e, elen, "it is a port's connected network; change the manifest instead");
            return -EINVAL;
        }
        *a4p = a;
        return 0;
    }
    uint8_t net[16];
    memcpy(a6, addr, 16);
    memcpy(net, addr, 16);
    if (len <= 128)
        sup_mask6(net, len);
    if (len > 128 || memcmp(net, a6, 16) != 0) {
        snprintf(e, elen, "prefix /%u: a bad length, or host bits set", len);
        return -EINVAL;
    }
    if (sup_route6_connected(s, a6, len) >= 0) {
        snprintf(e, elen, "it is a port's connected network; change the manifest instead");
        return -EINVAL;
    }
    return 0;
}

/* Check the prefix and resolve the next hops into @mp, as `route add`
 * checks them: the prefix in host order into *@a4p or @a6. */
static int route_check(struct sup *s, bool v6, const void *addr, unsigned len, const struct sup_nexthop *nhs,
                       unsigned n, struct sup_mp *mp, uint32_t *a4p, uint8_t *a6, char *e, size_t elen)
{
    int ret = check_prefix(s, v6, addr, len, a4p, a6, e, elen);
    if (ret < 0)
        return ret;
    if (n < 1 || n > FIB_MP_MAX) {
        snprintf(e, elen, "%u next hops: a route has 1 to %u", n, FIB_MP_MAX);
        return -EINVAL;
    }
    memset(mp, 0, sizeof(*mp));
    mp->n = n;
    for (unsigned k = 0; k < n; k++) {
        mp->weight[k] = nhs[k].weight ? nhs[k].weight : 1;
        if (mp->weight[k] > FIB_MP_WEIGHT_MAX) {
            snprintf(e, elen, "next hop %u: weight %u is over %u", k + 1, mp->weight[k], FIB_MP_WEIGHT_MAX);
            return -EINVAL;
        }
        if ((ret = resolve_nh(s, v6, &nhs[k], k, mp, e, elen)) < 0)
            return ret;
        for (unsigned j = 0; j < k; j++)
            if (v6 ? memcmp(&mp->nh6[j], &mp->nh6[k], sizeof(mp->nh6[k])) == 0
                   : mp->nh[j].gw == mp->nh[k].gw && mp->nh[j].port == mp->nh[k].port) {
                snprintf(e, elen, "next hops %u and %u are the same", j + 1, k + 1);
                return -EINVAL;
            }
    }
    return 0;
}

/* Check, resolve and install; the resolved next hops in @mp. *@existed: a
 * route for the prefix was there. */
static int route_install(struct sup *s, bool v6, const void *addr, unsigned len, const struct sup_nexthop *nhs,
                         unsigned n, bool replace, struct sup_mp *mp, bool *existed, char *e, size_t elen)
{
    uint32_t a = 0;
    uint8_t a6[16] = {0};
    int ret = route_check(s, v6, addr, len, nhs, n, mp, &a, a6, e, elen);
    if (ret < 0)
        return ret;
    if (v6) {
        struct fib6_nh old;
        *existed = fib6_get(&s->fib6, a6, len, &old) == 0;
        ret = replace ? fib6_replace_multi(&s->fib6, a6, len, mp->nh6, mp->weight, n)
                      : fib6_add_multi(&s->fib6, a6, len, mp->nh6, mp->weight, n);
        fib6_reclaim(&s->fib6);
    } else {
        struct fib_nh old;
        *existed = fib_get(&s->fib, a, len, &old) == 0;
        ret = replace ? fib_replace_multi(&s->fib, a, len, mp->nh, mp->weight, n)
                      : fib_add_multi(&s->fib, a, len, mp->nh, mp->weight, n);
        fib_reclaim(&s->fib);
    }
    if (ret == -EEXIST)
        snprintf(e, elen, "it exists; route replace changes it");
    else if (ret == -EAGAIN)
        snprintf(e, elen, "the router still reads the table entries this change needs; nothing changed, try again");
    else if (ret < 0)
        snprintf(e, elen, "%s", strerror(-ret));
    return ret;
}

int sup_route_set_multi(struct sup *s, int family, const void *addr, unsigned len, const struct sup_nexthop *nhs,
                        unsigned n, char *err, size_t elen)
{
    if (family != AF_INET && family != AF_INET6) {
        snprintf(err, elen, "address family %d: AF_INET or AF_INET6", family);
        return -EINVAL;
    }
    struct sup_mp mp;
    bool existed;
    return route_install(s, family == AF_INET6, addr, len, nhs, n, true, &mp, &existed, err, elen);
}

int sup_route_unset(struct sup *s, int family, const void *addr, unsigned len, char *err, size_t elen)
{
    uint32_t a = 0;
    uint8_t a6[16] = {0};
    bool v6 = family == AF_INET6;
    if (family != AF_INET && !v6) {
        snprintf(err, elen, "address family %d: AF_INET or AF_INET6", family);
        return -EINVAL;
    }
    int ret = check_prefix(s, v6, addr, len, &a, a6, err, elen);
    if (ret < 0)
        return ret;
    ret = v6 ? fib6_del(&s->fib6, a6, len) : fib_del(&s->fib, a, len);
    if (ret < 0) {
        snprintf(err, elen, "%s", ret == -ENOENT ? "no such route" : strerror(-ret));
        return ret;
    }
    if (v6) {
        fib6_reclaim(&s->fib6);
        sup_route6_forget(s, a6, len);
    } else {
        fib_reclaim(&s->fib);
        sup_route_forget(s, a, len);
    }
    return 0;
}

/* A weight word: 1..FIB_MP_WEIGHT_MAX, digits only. */
static bool parse_weight(const char *v, uint16_t *w)
{
    char *end;
    if (!v || *v < '1' || *v > '9')
        return false;
    unsigned long x = strtoul(v, &end, 10);
    if (*end || x > FIB_MP_WEIGHT_MAX)
        return false;
    *w = (uint16_t)x;
    return true;
}

/* The next hops after PREFIX: `[nexthop] via G [port P] [weight W]` ... */
static bool parse_members(struct sup *s, bool v6, const char *cmd, char **argv, int argc, struct sup_nexthop *nhs,
                          unsigned *n, FILE *f)
{
    *n = 0;
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(w, "nexthop") == 0)
            continue;
        bool via = strcmp(w, "via") == 0;
        if (!via && strcmp(w, "port") != 0 && strcmp(w, "weight") != 0) {
            fprintf(f, "%s: unexpected argument \"%s\"; expected via, port or weight\n", cmd, w);
            return false;
        }
        if (!v) {
            fprintf(f, "%s: %s needs a value\n", cmd, w);
            return false;
        }
        i++;
        if (via) {
            if (*n == FIB_MP_MAX) {
                fprintf(f, "%s: more than %u next hops\n", cmd, FIB_MP_MAX);
                return false;
            }
            struct sup_nexthop *nh = &nhs[(*n)++];
            *nh = (struct sup_nexthop){.port = -1, .weight = 1};
            char canon[64] = "";
            uint32_t gw = 0;
            if (v6 ? !sup_parse_addr6(v, nh->gw, canon, sizeof(canon)) : !sup_parse_addr(v, &gw)) {
                if (canon[0])
                    fprintf(f, "%s: via \"%s\" is not in canonical form (RFC 5952); write %s\n", cmd, v, canon);
                else
                    fprintf(f, "%s: via \"%s\" is not an %s address (the prefix is %s)\n", cmd, v,
                            v6 ? "IPv6" : "IPv4", v6 ? "IPv6" : "IPv4");
                return false;
            }
            if (!v6) {
                gw = htonl(gw);
                memcpy(nh->gw, &gw, 4);
            }
            continue;
        }
        if (*n == 0) {
            fprintf(f, "%s: %s %s before any via\n", cmd, w, v);
            return false;
        }
        struct sup_nexthop *nh = &nhs[*n - 1];
        if (strcmp(w, "port") == 0 && (nh->port = sup_manifest_port(&s->m, v)) < 0) {
            fprintf(f, "%s: no port \"%s\"\n", cmd, v);
            return false;
        }
        if (strcmp(w, "weight") == 0 && !parse_weight(v, &nh->weight)) {
            fprintf(f, "%s: weight \"%s\": a whole number from 1 to %u\n", cmd, v, FIB_MP_WEIGHT_MAX);
            return false;
        }
    }
    if (*n == 0) {
        fprintf(f, "%s: expected PREFIX via GATEWAY [weight W] via GATEWAY [weight W] ...\n", cmd);
        return false;
    }
    return true;
}

/* "via A weight 1 via B weight 2": the log's and the state file's words. */
static void mp_words(struct sup *s, bool v6, const struct sup_mp *mp, FILE *out)
{
    char b[24];
    for (unsigned k = 0; k < mp->n; k++) {
        if (!v6)
            fprintf(out, " via %s", a4(mp->nh[k].gw, b, sizeof(b)));
        else if (sup_ll6(mp->nh6[k].gw))
            fprintf(out, " via %s port %s", A6(mp->nh6[k].gw), port_name(s, mp->nh6[k].port));
        else
            fprintf(out, " via %s", A6(mp->nh6[k].gw));
        fprintf(out, " weight %u", mp->weight[k]);
    }
}

void sup_route_save_mp(struct sup *s, bool v6, const struct sup_mp *mp, FILE *out)
{
    mp_words(s, v6, mp, out);
    fputc('\n', out);
}

/* PREFIX (@w) of @cmd: network order into @addr, host order into @pf4 or
 * @pf6, written into @pfx; false with the error on @f. */
static bool mp_prefix(bool v6, const char *cmd, const char *w, uint8_t *addr, struct sup_prefix *pf4,
                      struct sup_prefix6 *pf6, char *pfx, size_t plen, FILE *f)
{
    char e[256];
    if (v6) {
        if (!sup_route6_prefix(cmd, w, pf6, f))
            return false;
        memcpy(addr, pf6->addr, 16);
        snprintf(pfx, plen, "%s/%u", A6(pf6->addr), pf6->len);
        return true;
    }
    if (!sup_route4_prefix(w, pf4, e, sizeof(e))) {
        fprintf(f, "%s\n", e);
        return false;
    }
    uint32_t n = htonl(pf4->addr);
    memcpy(addr, &n, 4);
    char b[24];
    snprintf(pfx, plen, "%s/%u", a4(pf4->addr, b, sizeof(b)), pf4->len);
    return true;
}

bool sup_route_multi_cmd(struct sup *s, bool v6, char **argv, int argc, bool replace, FILE *f)
{
    const char *cmd = replace ? "route replace" : "route add";
    struct sup_prefix pf4 = {0};
    struct sup_prefix6 pf6 = {0};
    char e[256], pfx[64];
    uint8_t addr[16] = {0};
    if (argc < 1) {
        fprintf(f, "%s: expected PREFIX via GATEWAY ...\n", cmd);
        return false;
    }
    if (!mp_prefix(v6, cmd, argv[0], addr, &pf4, &pf6, pfx, sizeof(pfx), f))
        return false;
    unsigned len = v6 ? pf6.len : pf4.len;
    struct sup_nexthop nhs[FIB_MP_MAX];
    unsigned n;
    if (!parse_members(s, v6, cmd, argv, argc, nhs, &n, f))
        return false;
    struct sup_mp mp;
    bool existed = false;
    if (route_install(s, v6, addr, len, nhs, n, replace, &mp, &existed, e, sizeof(e)) < 0) {
        fprintf(f, "%s: %s: %s\n", cmd, pfx, e);
        return false;
    }
    int ret = v6 ? sup_route6_keep_rt(s, pf6.addr, len, &mp.nh6[0], n > 1 ? &mp : NULL)
                 : sup_route4_keep(s, pf4.addr, len, &mp.nh[0], n > 1 ? &mp : NULL);
    if (ret < 0) {
        fprintf(f, "%s: %s is in the FIB, but out of memory to remember it as runtime\n", cmd, pfx);
        return false;
    }
    char *words = NULL;
    size_t wlen = 0;
    FILE *w = open_memstream(&words, &wlen);
    if (w) {
        mp_words(s, v6, &mp, w);
        fclose(w);
    }
    sup_log("%s %s%s", existed ? "route replace" : "route add", pfx, words ? words : "");
    free(words);
    fprintf(f, "%s %s\n", existed ? "replaced" : "added", pfx);
    return true;
}

int sup_route_keep_mp(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nhs, const uint16_t *weights,
                      unsigned n)
{
    struct sup_mp mp = {.n = n};
    for (unsigned k = 0; k < n && k < FIB_MP_MAX; k++) {
        mp.nh[k] = nhs[k];
        mp.weight[k] = weights ? weights[k] : 1;
    }
    return sup_route4_keep(s, addr, len, &nhs[0], n > 1 ? &mp : NULL);
}

int sup_route6_keep_mp(struct sup *s, const uint8_t *addr, unsigned len, const struct fib6_nh *nhs,
                       const uint16_t *weights, unsigned n)
{
    struct sup_mp mp = {.n = n};
    for (unsigned k = 0; k < n && k < FIB_MP_MAX; k++) {
        mp.nh6[k] = nhs[k];
        mp.weight[k] = weights ? weights[k] : 1;
    }
    return sup_route6_keep_rt(s, addr, len, &nhs[0], n > 1 ? &mp : NULL);
}

bool sup_route_show_group(struct sup *s, bool v6, const void *hdr, const char *pfx, const char *origin, bool json,
                          bool first, FILE *f)
{
    struct sup_mp mp = {0};
    int n = v6 ? fib6_group_members(&s->fib6, hdr, mp.nh6, mp.weight)
               : fib_group_members(&s->fib, hdr, mp.nh, mp.weight);
    if (n <= 0)
        return false;
    char via[INET6_ADDRSTRLEN];
    for (int k = 0; k < n; k++) {
        const char *port = port_name(s, v6 ? mp.nh6[k].port : mp.nh[k].port);
        if (v6)
            sup_addr6_str(mp.nh6[k].gw, via, sizeof(via));
        else
            a4(mp.nh[k].gw, via, sizeof(via));
        if (json) {
            if (k == 0) {
                fprintf(f, "%s{\"prefix\":\"%s\",\"via\":\"%s\",\"port\":", first ? "" : ",", pfx, via);
                sup_json_str(f, port);
                fprintf(f, ",\"origin\":\"%s\",\"nexthops\":[", origin);
            }
            fprintf(f, "%s{\"via\":\"%s\",\"port\":", k ? "," : "", via);
            sup_json_str(f, port);
            fprintf(f, ",\"weight\":%u}", mp.weight[k]);
        } else if (v6) {
            fprintf(f, "%-44s %-40s %-16s %-9s weight %u\n", k ? "" : pfx, via, port, k ? "" : origin, mp.weight[k]);
        } else {
            fprintf(f, "%-20s %-16s %-16s %-9s weight %u\n", k ? "" : pfx, via, port, k ? "" : origin, mp.weight[k]);
        }
    }
    if (json)
        fprintf(f, "]}");
    return true;
}

/* ---- route load's lines with several next hops (routes_load.c) ---- */

int sup_route_mp_line(struct sup *s, char **argv, int argc, struct sup_mp_line *out, char *e, size_t elen)
{
    bool v6 = strchr(argv[0], ':') != NULL;
    *out = (struct sup_mp_line){.v6 = v6};
    struct sup_prefix pf4 = {0};
    struct sup_prefix6 pf6 = {0};
    struct sup_nexthop nhs[FIB_MP_MAX];
    unsigned n = 0;
    uint8_t addr[16] = {0};
    char pfx[64], *msg = NULL;
    size_t mlen = 0;
    FILE *f = open_memstream(&msg, &mlen);
    if (!f) {
        snprintf(e, elen, "out of memory");
        return -1;
    }
    sup_iproute_words(argv, argc); /* ip's dev is our port */
    bool ok = mp_prefix(v6, "route load", argv[0], addr, &pf4, &pf6, pfx, sizeof(pfx), f) &&
              parse_members(s, v6, argv[0], argv, argc, nhs, &n, f);
    fclose(f);
    if (!ok) {
        snprintf(e, elen, "%.*s", (int)(mlen && msg[mlen - 1] == '\n' ? mlen - 1 : mlen), msg ? msg : "");
        free(msg);
        return -1;
    }
    free(msg);
    struct sup_mp mp;
    out->len = (uint8_t)(v6 ? pf6.len : pf4.len);
    char why[200];
    if (route_check(s, v6, addr, out->len, nhs, n, &mp, &out->addr, out->addr6, why, sizeof(why)) < 0) {
        snprintf(e, elen, "%s: %s", pfx, why);
        return -1;
    }
    if (sup_routes_has(s, v6 ? AF_INET6 : AF_INET, addr, out->len)) { /* supervisor/routes.c */
        snprintf(e, elen, "%s is a daemon's route ([routes]): it is the daemon's to change", pfx);
        return -1;
    }
    if (!(out->mp = sup_mp_dup(&mp))) {
        snprintf(e, elen, "out of memory");
        return -1;
    }
    return 1;
}

int sup_mp_put(struct sup *s, bool v6, uint32_t addr, const uint8_t *addr6, unsigned len, const struct sup_mp *mp)
{
    for (int tries = 0;; tries++) {
        int ret = v6 ? fib6_replace_multi(&s->fib6, addr6, len, mp->nh6, mp->weight, mp->n)
                     : fib_replace_multi(&s->fib, addr, len, mp->nh, mp->weight, mp->n);
        if (ret != -EAGAIN || tries == 2000)
            return ret;
        fib_reclaim(&s->fib);
        fib6_reclaim(&s->fib6);
        usleep(50);
    }
}

/* Has the FIB's route (header @h) the members of @mp, weights included? */
static bool mp_same(struct sup *s, bool v6, const void *h, const struct sup_mp *mp)
{
    struct sup_mp cur = {0};
    int n = v6 ? fib6_group_members(&s->fib6, h, cur.nh6, cur.weight) : fib_group_members(&s->fib, h, cur.nh, cur.weight);
    if (n != (int)mp->n)
        return false;
    for (unsigned k = 0; k < mp->n; k++) {
        bool found = false;
        for (int j = 0; j < n && !found; j++)
            found = cur.weight[j] == mp->weight[k] &&
                    (v6 ? cur.nh6[j].port == mp->nh6[k].port && memcmp(cur.nh6[j].gw, mp->nh6[k].gw, 16) == 0
                        : cur.nh[j].port == mp->nh[k].port && cur.nh[j].gw == mp->nh[k].gw);
        if (!found)
            return false;
    }
    return true;
}

int sup_route_mp_load_set(struct sup *s, const struct sup_mp_line *l, bool *had)
{
    bool same;
    if (l->v6) {
        struct fib6_nh h;
        *had = fib6_get(&s->fib6, l->addr6, l->len, &h) == 0;
        same = *had && (h.flags & FIB_NH_F_GROUP) && mp_same(s, true, &h, l->mp);
    } else {
        struct fib_nh h;
        *had = fib_get(&s->fib, l->addr, l->len, &h) == 0;
        same = *had && (h.flags & FIB_NH_F_GROUP) && mp_same(s, false, &h, l->mp);
    }
    int ret = same ? 0 : sup_mp_put(s, l->v6, l->addr, l->addr6, l->len, l->mp);
    if (ret < 0)
        return ret;
    /* IPv6: recorded as it goes in, as sup_route6_load_set does; IPv4: by the caller */
    if (l->v6 && sup_route6_keep_rt(s, l->addr6, l->len, &l->mp->nh6[0], l->mp) < 0)
        return -ENOMEM;
    return !same;
}
