/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes.c: the route channel's reader (tables/rtchan.h). At
 * each turn of the event loop it takes records for at most RT_SLICE_NS,
 * copies each out of shared memory, checks it (routes_check.c) and applies
 * it to the FIB through sup_routes_apply, the one place a daemon's route
 * reaches a FIB. Then the loop answers the control socket and checks the
 * services' health before the next slice: a million routes never make
 * `status` wait, nor a service look hung.
 *
 * A batch (records up to RTC_BATCH_END) ends with one reclaim of what its
 * withdrawals retired. Its kernel-table withdrawals are held until its end:
 * a batch that would leave the source with no route at all is the daemon
 * flushing its table on the way out (BIRD and zebra do), and its routes
 * stay for [routes] grace_s instead; so does everything a source named when
 * it is lost (RTC_SOURCE_LOST: the FPM connection closed) or when a dump
 * names nothing. A sync (RTC_SYNC_BEGIN .. END, a dump after any start or
 * desync of rr-routes) withdraws at its end what it did not name.
 * Work over the whole table (a sync's end, a loss, the grace's expiry) is
 * a sweep of the map, itself done in slices; records wait meanwhile.
 */
#include "supervisor/route_multi.h"
#include "supervisor/routes_impl.h"
#include "supervisor/sup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RT_SLICE_NS 4000000ull /* a slice of work per turn of the loop */
#define RT_LOG_MAX 10000u      /* refusal lines, after which they are only counted */
#define RT_POLL_KEY 0x7200u    /* our eventfd's epoll key type: the loop's switch skips it */

struct sup_rtm sup_rtm = {.chan_fd = -1, .wake_fd = -1, .nl_fd = -1, .fpm_fd = -1};

const char *const sup_rts_names[RTS_NCTR] = {
    [RTS_ADDED] = "routes_added",
    [RTS_REPLACED] = "routes_replaced",
    [RTS_WITHDRAWN] = "routes_withdrawn",
    [RTS_REFUSED_BAD] = "routes_refused_bad",
    [RTS_REFUSED_MARTIAN] = "routes_refused_martian",
    [RTS_REFUSED_SELF] = "routes_refused_self",
    [RTS_REFUSED_NOT_CONNECTED] = "routes_refused_not_connected",
    [RTS_REFUSED_TAKEN] = "routes_refused_taken",
    [RTS_REFUSED_FIB] = "routes_refused_fib_full",
    [RTS_MULTIPATH] = "routes_multipath",
    [RTS_BATCHES] = "batches",
    [RTS_SYNCS] = "syncs",
    [RTS_SOURCES_LOST] = "sources_lost",
    [RTS_GRACE_EXPIRED] = "routes_grace_expired",
    [RTS_CHAN_LIES] = "channel_lies",
    [RTS_GEN_SWITCHES] = "fib_switches",
};

enum { SW_SYNC_END, SW_STALE, SW_EXPIRE };
enum { RT_DONE, RT_RETRY };

static const char *const src_name[2] = {"kernel table", "FPM"};

static uint32_t now_ms(uint64_t now)
{
    return (uint32_t)((now - sup_rtm.t0_ns) / 1000000ull) + 1;
}

static void pfx_text(uint8_t family, const uint8_t *dst, unsigned plen, char *buf, size_t len)
{
    char a[INET6_ADDRSTRLEN];
    inet_ntop(family == AF_INET ? AF_INET : AF_INET6, dst, a, sizeof(a));
    snprintf(buf, len, "%s/%u", a, plen);
}

static struct sup_svc *routes_svc(struct sup *s)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].kind == IPC_SVC_ROUTES)
            return &s->svcs[i];
    return NULL;
}

static uint32_t host4(const uint8_t *dst)
{
    uint32_t a;
    memcpy(&a, dst, 4);
    return ntohl(a);
}

/* @e's state to @st, keeping the counts of both states. */
static void set_state(struct sup_rte *e, uint8_t st)
{
    struct sup_rtm *r = &sup_rtm;
    r->n_fib -= e->state == SUP_RTE_FIB;
    r->n_refused -= e->state == SUP_RTE_REFUSED;
    r->n_fib += st == SUP_RTE_FIB;
    r->n_refused += st == SUP_RTE_REFUSED;
    e->state = st;
}

/* Take @e out of the FIB (if it is there) and out of the map. */
static void rt_withdraw(struct sup *s, struct sup_rte *e)
{
    struct sup_rtm *r = &sup_rtm;
    if (e->state == SUP_RTE_FIB) {
        int ret = e->family == AF_INET ? fib_del(&s->fib, host4(e->dst), e->plen)
                                       : fib6_del(&s->fib6, e->dst, e->plen);
        if (ret < 0 && ret != -ENOENT) {
            char p[64];
            pfx_text(e->family, e->dst, e->plen, p, sizeof(p));
            sup_err("routes: withdrawing %s from the FIB: %s", p, strerror(-ret));
        }
        r->ctr[RTS_WITHDRAWN]++;
        r->fib_dirty = true;
    }
    if (e->stale_ms)
        r->nstale--;
    if (e->src < 2)
        r->n_src[e->src]--;
    set_state(e, 0);
    sup_rtmap_remove(&r->map, e);
}

/* A refusal: counted always, logged when the prefix's reason is new. */
static void rt_refuse(struct sup *s, struct sup_rte *e, enum sup_rck why, const char *text, int ctr)
{
    struct sup_rtm *r = &sup_rtm;
    r->ctr[ctr]++;
    if (e->state == SUP_RTE_FIB) { /* it was fine, its new next hop is not */
        int ret = e->family == AF_INET ? fib_del(&s->fib, host4(e->dst), e->plen) : fib6_del(&s->fib6, e->dst, e->plen);
        (void)ret;
        r->ctr[RTS_WITHDRAWN]++;
        r->fib_dirty = true;
    } else if (e->state == SUP_RTE_REFUSED && e->why == why) {
        return;
    }
    set_state(e, SUP_RTE_REFUSED);
    e->why = (uint8_t)why;
    if (r->logged > RT_LOG_MAX)
        return;
    char p[64];
    pfx_text(e->family, e->dst, e->plen, p, sizeof(p));
    if (++r->logged > RT_LOG_MAX)
        sup_warn("routes: %u refusals logged; the next are only counted (ringrouter routes)", RT_LOG_MAX);
    else
        sup_warn("routes: refused %s from the %s: %s", p, src_name[e->src & 1], text);
}

/* Is @rec's prefix in the FIB already (another origin's, if not ours)? */
static bool in_fib(struct sup *s, const struct rtc_rec *rec)
{
    struct fib_nh nh;
    struct fib6_nh nh6;
    return rec->family == AF_INET ? fib_get(&s->fib, host4(rec->dst), rec->plen, &nh) == 0
                                  : fib6_get(&s->fib6, rec->dst, rec->plen, &nh6) == 0;
}

/* A route with several next hops: a next-hop group (route_multi.h), each
 * gateway checked again there as `route add` checks one. */
static int apply_multi(struct sup *s, const struct rtc_rec *rec, bool replace)
{
    struct sup_nexthop nhs[RTC_NH_MAX];
    unsigned n = rec->nnh < RTC_NH_MAX ? rec->nnh : RTC_NH_MAX;
    for (unsigned i = 0; i < n; i++) {
        nhs[i] = (struct sup_nexthop){.port = -1, .weight = rec->nh[i].weight};
        memcpy(nhs[i].gw, rec->nh[i].gw, 16);
    }
    if (!replace && in_fib(s, rec))
        return -EEXIST;
    char err[160];
    int ret = sup_route_set_multi(s, rec->family, rec->dst, rec->plen, nhs, n, err, sizeof(err));
    if (ret == 0)
        sup_rtm.ctr[RTS_MULTIPATH]++;
    return ret;
}

/*
 * The one function that puts a daemon's route in a FIB; a route with
 * several next hops becomes a next-hop group (apply_multi). Returns
 * RT_RETRY when the FIB asks to be tried again (its retired groups still
 * held by a reader).
 */
static int sup_routes_apply(struct sup *s, const struct rtc_rec *rec, int port, struct sup_rte *e)
{
    struct sup_rtm *r = &sup_rtm;
    const struct rtc_nh *nh = &rec->nh[0];
    if (rec->nnh == 1 && e->state == SUP_RTE_FIB && e->port == port && memcmp(e->gw, nh->gw, 16) == 0)
        return RT_DONE; /* named again as it is */
    bool replace = e->state == SUP_RTE_FIB;
    int ret;
    /* A new prefix is added, not replaced: -EEXIST says another origin
     * (connected, manifest, runtime) has it, in one lookup of the FIB's. */
    if (rec->nnh > 1) {
        ret = apply_multi(s, rec, replace);
    } else if (rec->family == AF_INET) {
        uint32_t a = host4(rec->dst);
        struct fib_nh f = {.gw = host4(nh->gw), .port = (uint16_t)port};
        ret = replace ? fib_replace(&s->fib, a, rec->plen, &f) : fib_add(&s->fib, a, rec->plen, &f);
        /* After an adoption the old FIB's routes came back as runtime
         * ones (adopt.c): those the daemon names are its own again. */
        if (ret == -EEXIST && sup_now_ns() < r->claim_until_ns && !sup_route_load_busy(NULL, NULL) &&
            sup_route_runtime(s, a, rec->plen)) {
            sup_route_forget(s, a, rec->plen);
            replace = true;
            ret = fib_replace(&s->fib, a, rec->plen, &f);
        }
    } else {
        struct fib6_nh f = {.port = (uint16_t)port};
        memcpy(f.gw, nh->gw, 16);
        ret = replace ? fib6_replace(&s->fib6, rec->dst, rec->plen, &f) : fib6_add(&s->fib6, rec->dst, rec->plen, &f);
    }
    if (ret == -EEXIST) {
        rt_refuse(s, e, SUP_RCK_N, "the prefix is a connected, manifest or runtime route", RTS_REFUSED_TAKEN);
        return RT_DONE;
    }
    if (ret == -EAGAIN)
        return RT_RETRY;
    if (ret < 0) {
        char t[96];
        snprintf(t, sizeof(t), "the FIB: %s", strerror(-ret));
        rt_refuse(s, e, SUP_RCK_N + 1, t, RTS_REFUSED_FIB);
        return RT_DONE;
    }
    r->ctr[replace ? RTS_REPLACED : RTS_ADDED]++;
    set_state(e, SUP_RTE_FIB);
    e->why = 0;
    e->port = (uint16_t)port;
    memcpy(e->gw, nh->gw, 16);
    return RT_DONE;
}

static const int rck_ctr[SUP_RCK_N] = {
    [SUP_RCK_BAD] = RTS_REFUSED_BAD,
    [SUP_RCK_MARTIAN] = RTS_REFUSED_MARTIAN,
    [SUP_RCK_SELF] = RTS_REFUSED_SELF,
    [SUP_RCK_NOT_CONNECTED] = RTS_REFUSED_NOT_CONNECTED,
};

static int rt_add(struct sup *s, const struct rtc_rec *rec)
{
    struct sup_rtm *r = &sup_rtm;
    char why[200];
    int port;
    enum sup_rck k = sup_routes_check(&s->m, rec, &port, why, sizeof(why));
    if (k == SUP_RCK_BAD) { /* nothing to key it by that we trust: counted, once logged */
        r->ctr[RTS_REFUSED_BAD]++;
        if (r->ctr[RTS_REFUSED_BAD] == 1)
            sup_warn("routes: refused a record from rr-routes: %s (further ones are counted)", why);
        return RT_DONE;
    }
    uint8_t src = rec->src & 1;
    struct sup_rte *e = sup_rtmap_insert(&r->map, rec->family, rec->dst, rec->plen);
    if (!e) {
        r->ctr[RTS_REFUSED_FIB]++;
        return RT_DONE;
    }
    if (!e->state) { /* new */
        e->src = src;
        r->n_src[src]++;
    } else if (e->src != src) {
        r->n_src[e->src]--;
        r->n_src[src]++;
        e->src = src;
    }
    e->used = 1; /* named again after a withdrawal held in this batch: it stays */
    e->epoch = r->epoch[src];
    if (r->syncing[src])
        r->named[src]++;
    if (e->stale_ms) {
        e->stale_ms = 0;
        r->nstale--;
    }
    if (k != SUP_RCK_OK) {
        rt_refuse(s, e, k, why, rck_ctr[k]);
        return RT_DONE;
    }
    int ret = sup_routes_apply(s, rec, port, e);
    if (ret == RT_RETRY && e->state == 0) { /* leave no half entry behind */
        r->n_src[src]--;
        sup_rtmap_remove(&r->map, e);
    }
    return ret;
}

static void rt_del_now(struct sup *s, uint8_t family, const uint8_t *dst, uint8_t plen)
{
    struct sup_rte *e = sup_rtmap_find(&sup_rtm.map, family, dst, plen);
    if (e)
        rt_withdraw(s, e);
}

static void sweep_start(int kind, int src)
{
    struct sup_rtm *r = &sup_rtm;
    r->sweep.on = true; /* its first slices finish a grow of the map under way: it walks m->e alone */
    r->sweep.next = 0;
    r->sweep.kind = kind;
    r->sweep.src = src;
    r->sweep.pos = 0;
    r->sweep.epoch = r->epoch[src & 1];
}

/* The source is gone: what it named stays for grace_s (0: goes now). */
static void source_lost(struct sup *s, int src, const char *how)
{
    struct sup_rtm *r = &sup_rtm;
    r->ctr[RTS_SOURCES_LOST]++;
    sup_notice("routes: the %s %s: its %zu routes stay for %u s", src_name[src], how, r->n_src[src],
               s->m.daemon.grace_s);
    sweep_start(SW_STALE, src);
}

/* The end of a batch: its held withdrawals, then the reclaim. */
static void batch_end(struct sup *s)
{
    struct sup_rtm *r = &sup_rtm;
    r->ctr[RTS_BATCHES]++;
    if (r->npend) {
        size_t live = 0;
        for (uint32_t i = 0; i < r->npend; i++) {
            const struct sup_rte *e = sup_rtmap_find(&r->map, r->pend[i].family, r->pend[i].dst, r->pend[i].plen);
            live += e && e->used == SUP_RTE_USED_PEND;
        }
        bool flushed = live && live == r->n_src[RTC_SRC_NETLINK] && s->m.daemon.grace_s;
        if (flushed)
            source_lost(s, RTC_SRC_NETLINK, "was flushed");
        for (uint32_t i = 0; i < r->npend; i++) {
            struct sup_rte *e = sup_rtmap_find(&r->map, r->pend[i].family, r->pend[i].dst, r->pend[i].plen);
            if (!e || e->used != SUP_RTE_USED_PEND)
                continue; /* named again since */
            if (flushed)
                e->used = 1;
            else
                rt_withdraw(s, e);
        }
        r->npend = 0;
    }
    /* The batch's one generation switch, for all it retired (fib_gen_defer). */
    if (fib_gen_commit(&s->fib, &s->fib6))
        r->ctr[RTS_GEN_SWITCHES]++;
    if (r->fib_dirty) {
        fib_reclaim(&s->fib);
        fib6_reclaim(&s->fib6);
        r->fib_dirty = false;
    }
}

static int rt_record(struct sup *s, const struct rtc_rec *rec)
{
    struct sup_rtm *r = &sup_rtm;
    int src = rec->src & 1;
    switch (rec->op) {
    case RTC_ADD:
        return rt_add(s, rec);
    case RTC_DEL: {
        int port;
        char why[200];
        if (sup_routes_check(&s->m, rec, &port, why, sizeof(why)) != SUP_RCK_OK) {
            r->ctr[RTS_REFUSED_BAD]++;
            return RT_DONE;
        }
        if (src != RTC_SRC_NETLINK) {
            rt_del_now(s, rec->family, rec->dst, rec->plen);
            return RT_DONE;
        }
        struct sup_rte *e = sup_rtmap_find(&r->map, rec->family, rec->dst, rec->plen);
        if (!e || e->used == SUP_RTE_USED_PEND)
            return RT_DONE; /* not ours, or held already */
        if (r->npend == SUP_RT_PEND_MAX) { /* past any flush we could hold: withdraw as they come */
            rt_withdraw(s, e);
            return RT_DONE;
        }
        e->used = SUP_RTE_USED_PEND;
        struct sup_rt_pend *p = &r->pend[r->npend++];
        memcpy(p->dst, rec->dst, 16);
        p->family = rec->family;
        p->plen = rec->plen;
        return RT_DONE;
    }
    case RTC_BATCH_END:
        batch_end(s);
        return RT_DONE;
    case RTC_SYNC_BEGIN:
        r->epoch[src]++;
        r->syncing[src] = true;
        r->named[src] = 0;
        return RT_DONE;
    case RTC_SYNC_END:
        r->syncing[src] = false;
        r->ctr[RTS_SYNCS]++;
        if (r->named[src] == 0 && r->n_src[src] && s->m.daemon.grace_s)
            source_lost(s, src, "is empty");
        else
            sweep_start(SW_SYNC_END, src);
        return RT_DONE;
    case RTC_SOURCE_LOST:
        if (r->n_src[src])
            source_lost(s, src, "went away");
        return RT_DONE;
    default:
        r->ctr[RTS_REFUSED_BAD]++;
        return RT_DONE;
    }
}

/* The sweep passed @e, which stays: the next expiry is no later than its. */
static void sweep_next(const struct sup_rte *e, uint32_t grace)
{
    struct sup_rtm *r = &sup_rtm;
    if (e->stale_ms && (!r->sweep.next || e->stale_ms + grace < r->sweep.next))
        r->sweep.next = e->stale_ms + grace;
}

/* One slice of the sweep under way; true when it is done. */
static bool sweep_run(struct sup *s, uint64_t now, uint64_t until)
{
    struct sup_rtm *r = &sup_rtm;
    uint32_t ns = now_ms(now), grace = s->m.daemon.grace_s * 1000u;
    while (!sup_rtmap_settle_some(&r->map, 4096)) /* half a million entries may be left to move */
        if (sup_now_ns() >= until)
            return false;
    for (unsigned n = 0; r->sweep.pos < r->map.cap; n++) {
        if ((n & 1023) == 1023 && sup_now_ns() >= until)
            return false;
        struct sup_rte *e = &r->map.e[r->sweep.pos];
        if (!e->used || (r->sweep.kind != SW_EXPIRE && e->src != r->sweep.src)) {
            if (e->used)
                sweep_next(e, grace);
            r->sweep.pos++;
            continue;
        }
        if (r->sweep.kind == SW_STALE) {
            if (!e->stale_ms) {
                e->stale_ms = ns;
                r->nstale++;
            }
        } else if (r->sweep.kind == SW_SYNC_END ? e->epoch != r->sweep.epoch
                                                 : e->stale_ms && e->stale_ms + grace <= ns) {
            if (r->sweep.kind == SW_EXPIRE)
                r->ctr[RTS_GRACE_EXPIRED]++;
            rt_withdraw(s, e);
            continue; /* another entry may have moved into this slot */
        }
        sweep_next(e, grace);
        r->sweep.pos++;
    }
    r->sweep.on = false;
    /* The next expiry: the earliest stale route's, met on the way (a
     * second walk of a map of millions of slots would hold the loop). */
    if (r->sweep.kind == SW_STALE || r->sweep.kind == SW_EXPIRE)
        r->next_expiry_ms = r->nstale ? r->sweep.next : 0;
    batch_end(s);
    return true;
}

static void self_wake(void)
{
    uint64_t one = 1;
    sup_rtm.woke = true;
    if (write(sup_rtm.wake_fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: it is readable already */
    }
}

/* Start loading what record @c will touch: its map slot, its prefix's FIB
 * hash slot and tbl24 entry, so that a slice's cache and TLB misses overlap
 * (each of those tables is tens of MB). A hint from a record not checked
 * yet: the addresses are masked into the tables, and a prefetch never
 * faults. */
static void rt_prefetch(struct sup *s, const struct rtc_rec *c)
{
    struct rtc_rec h;
    memcpy(&h, c, offsetof(struct rtc_rec, nh)); /* the header alone */
    sup_rtmap_prefetch(&sup_rtm.map, h.family, h.dst, h.plen);
    if (h.family == AF_INET)
        fib_prefetch(&s->fib, host4(h.dst), h.plen);
}

#define RT_PREFETCH_AHEAD 8u

static void routes_tick(struct sup *s, uint64_t now);

void sup_routes_tick(struct sup *s, uint64_t now)
{
    struct sup_rtm *r = &sup_rtm;
    sup_route_load_tick(s); /* `route load`, a slice of it (routes_load.c) */
    if (!r->on)
        return;
    /* The loop's turn between two of our slices: its other work and the
     * CPU it waited for ("busy_gap_max_us" in `routes --json`). */
    uint64_t t0 = sup_now_ns();
    if (r->more_at && t0 - r->more_at > r->gap_max_ns)
        r->gap_max_ns = t0 - r->more_at;
    r->more_at = 0;
    /* What this turn retires waits for its batch's one switch (batch_end);
     * other writers between turns switch as they always did. */
    fib_gen_defer(&s->fib, true);
    fib6_gen_defer(&s->fib6, true);
    routes_tick(s, now);
    fib_gen_defer(&s->fib, false);
    fib6_gen_defer(&s->fib6, false);
    uint64_t t1 = sup_now_ns();
    if (t1 - t0 > r->tick_max_ns)
        r->tick_max_ns = t1 - t0;
    if (r->woke)
        r->more_at = t1;
    r->woke = false;
}

static void routes_tick(struct sup *s, uint64_t now)
{
    struct sup_rtm *r = &sup_rtm;
    if (!r->registered) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)RT_POLL_KEY << 32};
        r->registered = epoll_ctl(s->ep_fd, EPOLL_CTL_ADD, r->wake_fd, &ev) == 0;
    }
    if (!r->adopt_checked) {
        /* An adopted rr-routes writes to the channel of the supervisor that
         * is gone: it restarts onto ours, and dumps its source again. */
        r->adopt_checked = true;
        struct sup_svc *v = routes_svc(s);
        if (v && v->adopted && v->pidfd >= 0) {
            sup_log("routes: rr-routes (pid %d) was adopted: restarted onto a new route channel; the routes it names "
                    "again within 30 s are taken back from the runtime ones", (int)v->pid);
            r->claim_until_ns = now + 30000000000ull;
            syscall(SYS_pidfd_send_signal, v->pidfd, SIGKILL, NULL, 0);
        }
    }
    uint64_t announced;
    if (read(r->wake_fd, &announced, sizeof(announced)) < 0) {
        /* EAGAIN: no batch announced; the timer brought us */
    }
    uint64_t until = now + RT_SLICE_NS;
    if (r->sweep.on && !sweep_run(s, now, until)) {
        self_wake();
        return;
    }
    if (!r->sweep.on && r->nstale && r->next_expiry_ms && now_ms(now) >= r->next_expiry_ms) {
        sweep_start(SW_EXPIRE, 0);
        if (!sweep_run(s, now, until)) {
            self_wake();
            return;
        }
    }
    uint32_t prod = ipc_ld_acq(&r->chan->prod); /* (C) */
    if (prod - r->cons > RTC_SLOTS) {
        struct sup_svc *v = routes_svc(s);
        r->ctr[RTS_CHAN_LIES]++;
        sup_err("routes: the channel's producer index %u is %u records past ours (at most %u): restarting rr-routes",
                prod, prod - r->cons, RTC_SLOTS);
        r->cons = prod;
        ipc_st_rel(&r->chan->cons, r->cons);
        if (v && v->pidfd >= 0)
            syscall(SYS_pidfd_send_signal, v->pidfd, SIGKILL, NULL, 0);
        return;
    }
    unsigned n = 0;
    bool more = false;
    while (r->cons != prod) {
        if ((++n & 63) == 0 && sup_now_ns() >= until) {
            more = true;
            break;
        }
        if (prod - r->cons > RT_PREFETCH_AHEAD)
            rt_prefetch(s, &r->chan->rec[(r->cons + RT_PREFETCH_AHEAD) & (RTC_SLOTS - 1)]);
        struct rtc_rec rec; /* a copy: the producer may write on */
        rtc_rec_copy(&rec, &r->chan->rec[r->cons & (RTC_SLOTS - 1)]);
        if (rt_record(s, &rec) == RT_RETRY) {
            more = true;
            break;
        }
        r->cons++;
        if (r->sweep.on) { /* a sync's end or a loss: the sweep first */
            more = true;
            break;
        }
    }
    ipc_st_rel(&r->chan->cons, r->cons); /* (D) */
    ipc_fence_sc();
    if (ipc_ld_rlx(&r->chan->prod_wait)) {
        struct sup_svc *v = routes_svc(s);
        ipc_st_rlx(&r->chan->prod_wait, 0);
        if (v && v->wake_fd >= 0) {
            uint64_t one = 1;
            if (write(v->wake_fd, &one, sizeof(one)) < 0) {
                /* EAGAIN: it is awake */
            }
        }
    }
    if (more)
        self_wake();
}

bool sup_routes_has(const struct sup *s, uint8_t family, const uint8_t *dst, unsigned plen)
{
    (void)s;
    const struct sup_rte *e = sup_rtmap_find(&sup_rtm.map, family, dst, (uint8_t)plen);
    return e && e->state == SUP_RTE_FIB;
}

void sup_routes_show(struct sup *s, FILE *f, bool json)
{
    struct sup_rtm *r = &sup_rtm;
    const struct sup_routes *m = &s->m.daemon;
    size_t in_fib = r->n_fib, refused = r->n_refused;
    /* The FIB's size as the tables' counters say it (bench/routes reports it). */
    struct fib_stats st4;
    fib_get_stats(&s->fib, &st4);
    uint64_t tbl8_bytes = (uint64_t)st4.tbl8_used * 256u * 4u;
    uint64_t map_bytes = (r->map.cap + r->map.old_cap) * sizeof(struct sup_rte);
    if (json) {
        fprintf(f, "{\"enabled\": %s", r->on ? "true" : "false");
        if (r->on) {
            fprintf(f, ", \"netns\": ");
            sup_json_str(f, m->netns);
            fprintf(f, ", \"table\": %u, \"fpm\": %s, \"grace_s\": %u, \"routes\": %zu, \"refused\": %zu, \"stale\": %zu",
                    m->table, m->fpm ? "true" : "false", m->grace_s, in_fib, refused, r->nstale);
            for (unsigned i = 0; i < RTS_NCTR; i++)
                fprintf(f, ", \"%s\": %llu", sup_rts_names[i], (unsigned long long)r->ctr[i]);
            fprintf(f, ", \"fib_prefixes\": %u, \"fib_tbl8_bytes\": %llu, \"fib_region_bytes\": %llu, \"map_bytes\": %llu",
                    st4.prefixes, (unsigned long long)tbl8_bytes, (unsigned long long)st4.region_bytes,
                    (unsigned long long)map_bytes);
            fprintf(f, ", \"fib_gen\": %llu, \"tick_max_us\": %llu, \"busy_gap_max_us\": %llu",
                    (unsigned long long)st4.gen, (unsigned long long)(r->tick_max_ns / 1000),
                    (unsigned long long)(r->gap_max_ns / 1000));
        }
        fprintf(f, "}\n");
        return;
    }
    if (!r->on) {
        fprintf(f, "routes: no [routes] section: no routes from a daemon\n");
        return;
    }
    fprintf(f, "source: %s%s%s table %u, netns %s; FPM %s; grace %u s\n", m->table ? "kernel" : "",
            m->table ? "" : "no kernel", m->table ? "" : " table,", m->table, m->netns[0] ? m->netns : "(own)",
            m->fpm ? "listening" : "off", m->grace_s);
    fprintf(f, "routes: %zu in the FIB, %zu refused, %zu in grace\n", in_fib, refused, r->nstale);
    fprintf(f, "memory: the IPv4 FIB's second-level tables %llu KiB (of a %llu MiB region), the map %llu KiB\n",
            (unsigned long long)(tbl8_bytes >> 10), (unsigned long long)(st4.region_bytes >> 20),
            (unsigned long long)(map_bytes >> 10));
    for (unsigned i = 0; i < RTS_NCTR; i++)
        if (r->ctr[i])
            fprintf(f, "  %-30s %llu\n", sup_rts_names[i], (unsigned long long)r->ctr[i]);
}
