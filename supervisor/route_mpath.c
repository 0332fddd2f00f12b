/* SPDX-License-Identifier: MIT */
/*
 * supervisor/route_mpath.c: the manifest's [route] sections into the FIBs,
 * with one next hop or several (`nexthop` lines, supervisor/manifest_routes.c):
 * at `up`, at a reload, and wherever a runtime route gives way to the
 * manifest's again (`route flush`, `route load`, a runtime route deleted).
 * And the running manifest's section for a runtime route with several next
 * hops, so that `show running` and `save` write what `up` makes again.
 */
#include <errno.h>
#include <string.h>

#include "supervisor/route6.h"
#include "supervisor/route_multi.h"
#include "supervisor/running.h"
#include "supervisor/sup.h"

_Static_assert(SUP_ROUTE_NH_MAX == FIB_MP_MAX && SUP_ROUTE_WEIGHT_MAX == FIB_MP_WEIGHT_MAX,
               "the manifest's bounds on a route's next hops are the FIB's");

/* Added, or over what is there in place. */
int sup_mroute_put(struct sup *s, const struct sup_route *r)
{
    struct sup_mp mp = {.n = r->nnh ? r->nnh : 1};
    if (!r->nnh) {
        mp.nh[0] = (struct fib_nh){.gw = r->direct ? 0 : r->via, .port = (uint16_t)r->port};
        mp.nh6[0] = (struct fib6_nh){.port = (uint16_t)r->port};
        if (!r->direct)
            memcpy(mp.nh6[0].gw, r->via6, 16);
        mp.weight[0] = 1;
    }
    for (unsigned k = 0; k < r->nnh; k++) {
        mp.nh[k] = (struct fib_nh){.gw = r->nh[k].via, .port = (uint16_t)r->nh[k].port};
        mp.nh6[k] = (struct fib6_nh){.port = (uint16_t)r->nh[k].port};
        memcpy(mp.nh6[k].gw, r->nh[k].via6, 16);
        mp.weight[k] = r->nh[k].weight;
    }
    return r->v6 ? sup_mp_put(s, true, 0, r->prefix6.addr, r->prefix6.len, &mp)
                 : sup_mp_put(s, false, r->prefix.addr, NULL, r->prefix.len, &mp);
}

bool sup_mroute_on_port(const struct sup_route *r, int port)
{
    for (unsigned k = 0; k < r->nnh; k++)
        if (r->nh[k].port == port)
            return true;
    return r->port == port;
}

int sup_mroutes_setup(struct sup *s, bool v6, struct ipc_err *err)
{
    for (size_t i = 0; i < s->m.nroutes; i++) {
        const struct sup_route *r = &s->m.routes[i];
        if (r->v6 != v6)
            continue;
        int ret = sup_mroute_put(s, r);
        if (ret < 0) {
            char a[64];
            if (v6)
                sup_addr6_str(r->prefix6.addr, a, sizeof(a));
            else
                sup_ip_str(r->prefix.addr, a, sizeof(a));
            return ipc_errf(err, ret, "%s: %s: adding %s/%u to the %sFIB: %s", s->manifest_name, r->src.section, a,
                            v6 ? r->prefix6.len : r->prefix.len, v6 ? "IPv6 " : "", strerror(-ret));
        }
    }
    if (v6)
        fib6_reclaim(&s->fib6);
    else
        fib_reclaim(&s->fib);
    return 0;
}

int sup_text_add_mp(struct run_text *t, unsigned after, struct sup *s, bool v6, const char *addr, unsigned len,
                    const struct sup_mp *mp)
{
    char g[64];
    int ret = sup_text_add(t, after, "\n[route %s/%u]", addr, len);
    for (unsigned k = 0; k < mp->n && !ret; k++) {
        unsigned p = v6 ? mp->nh6[k].port : mp->nh[k].port;
        bool ll = v6 && sup_ll6(mp->nh6[k].gw);
        ret = sup_text_add(t, after, "nexthop = %s%s%s weight %u",
                           v6 ? sup_addr6_str(mp->nh6[k].gw, g, sizeof(g)) : sup_ip_str(mp->nh[k].gw, g, sizeof(g)),
                           ll ? " port " : "", ll && p < s->m.nports ? s->m.ports[p].name : "", mp->weight[k]);
    }
    return ret;
}
