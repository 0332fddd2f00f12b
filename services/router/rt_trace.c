/* SPDX-License-Identifier: MIT */
/*
 * services/router/rt_trace.c: the router's trace records (rt_trace.h).
 * What they say is worked out again from the packet and the tables, by the
 * same functions the burst calls, before the burst changes anything: the
 * burst's hot loop carries no hook. Validation's one side effect, trimming
 * Ethernet padding, is idempotent.
 */
#include "rt_trace.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "ipv4.h"
#include "tables/fib.h"
#include "tables/fib_group.h"
#include "tables/fib6.h"
#include "tables/neigh.h"

/* fib_lookup, with the length of the prefix that matched (tables/fib.h:
 * an entry's bits 24..29). */
static uint32_t lookup_len(const struct fib *fib, uint32_t addr, unsigned *plen)
{
    uint32_t e = ipc_ld_acq(&fib->m.tbl24[addr >> 8]);
    if (e & FIB_E_EXT)
        e = ipc_ld_acq(&fib->m.tbl8[(size_t)(e & FIB_E_IDX) << 8 | (addr & 0xff)]);
    if (!(e & FIB_E_VALID))
        return FIB_MISS;
    *plen = (e >> 24) & 0x3f;
    return e & FIB_E_IDX;
}

static void put4(uint8_t *dst, uint32_t host)
{
    uint32_t n = htonl(host);
    memcpy(dst, &n, 4);
}

static void explain4(struct rt_ctx *ctx, ipc_buf b, struct ipc_trace_rec *r)
{
    const uint8_t *ip = ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN;
    r->family = 4;
    if (ip[PKT_IP_TTL] <= 1) {
        r->verdict = IPC_TV_TTL;
        return;
    }
    uint32_t dst = pkt_get32(ip + PKT_IP_DST);
    unsigned plen = 0;
    uint32_t idx = lookup_len(ctx->fib, dst, &plen);
    if (idx == FIB_MISS) {
        r->verdict = IPC_TV_NO_ROUTE;
        return;
    }
    r->verdict = IPC_TV_FORWARD;
    r->plen = (uint8_t)plen;
    put4(r->prefix, plen ? dst & ~0u << (32 - plen) : 0);
    struct fib_nh nh = fib_nh_at(ctx->fib, idx);
    if (nh.flags & FIB_NH_F_GROUP) {
        snprintf(r->note, sizeof(r->note), "multipath group %u", nh.gw);
        r->out_port = IPC_PORT_NONE;
        return;
    }
    uint32_t nhip = nh.gw ? nh.gw : dst;
    r->out_port = nh.port;
    put4(r->nexthop, nhip);
    if (!nh.gw)
        snprintf(r->note, sizeof(r->note), "connected");
    const struct neigh_entry *e = ctx->neigh ? neigh_find(ctx->neigh, nhip) : NULL;
    r->neigh = e ? e->state : NEIGH_FREE;
}

static void explain6(struct rt_ctx *ctx, ipc_buf b, struct ipc_trace_rec *r)
{
    const struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    r->family = 6;
    if (!ctx->fib6 || m->len < PKT_ETH_HLEN + PKT_IP6_HLEN)
        return;
    const uint8_t *ip6 = ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN;
    uint32_t idx = fib6_lookup(ctx->fib6, ip6 + PKT_IP6_DST);
    if (idx == FIB6_MISS) {
        r->verdict = IPC_TV_NO_ROUTE;
        return;
    }
    struct fib6_nh nh = fib6_nh_at(ctx->fib6, idx);
    static const uint8_t zero[16];
    r->out_port = nh.port;
    memcpy(r->nexthop, memcmp(nh.gw, zero, 16) ? nh.gw : ip6 + PKT_IP6_DST, 16);
}

void rt_trace_burst(struct rt_ctx *ctx, const ipc_buf *bufs, uint32_t n, uint64_t now, struct rt_burst *tx)
{
    static struct ipc_trace_batch tb;
    ipc_trace_begin(&tb);
    for (uint32_t i = 0; i < n; i++) {
        if (bufs[i] >= ctx->pool->nbufs || !ipc_trace_id(ipc_pool_meta(ctx->pool, bufs[i])))
            continue;
        struct ipc_trace_rec *r = ipc_trace_add(&tb, ctx->pool, bufs[i], IPC_TR_ROUTE);
        if (!r)
            break;
        r->out_port = IPC_PORT_NONE;
        enum rt_ctr why = RT_CTR_MAX;
        switch (rt_ipv4_validate(ctx, bufs[i], &why)) {
        case RT_V_FORWARD:
            explain4(ctx, bufs[i], r);
            break;
        case RT_V_LOCAL:
            r->verdict = IPC_TV_LOCAL;
            r->family = 4;
            break;
        case RT_V_ARP:
            r->verdict = IPC_TV_ARP;
            break;
        case RT_V_IPV6:
            r->verdict = IPC_TV_IPV6;
            explain6(ctx, bufs[i], r);
            break;
        case RT_V_PUNT:
            r->verdict = IPC_TV_PUNT;
            break;
        case RT_V_DROP:
            r->verdict = IPC_TV_DROP;
            if (why < RT_CTR_MAX)
                snprintf(r->note, sizeof(r->note), "%s", rt_ctr_names[why]);
            break;
        }
    }
    rt_input_burst(ctx, bufs, n, now, tx);
    ipc_trace_end(&tb, n);
}

void rt_trace_icmp_rec(struct rt_ctx *ctx, ipc_buf orig, uint8_t type, uint8_t code, unsigned verdict)
{
    if (orig >= ctx->pool->nbufs || !ipc_trace_id(ipc_pool_meta(ctx->pool, orig)))
        return;
    struct ipc_trace_rec r;
    memset(&r, 0, sizeof(r));
    const struct ipc_meta *m = ipc_pool_meta(ctx->pool, orig);
    r.id = ipc_trace_id(m);
    r.stage = IPC_TR_ICMP;
    r.verdict = (uint8_t)verdict;
    r.port = m->in_port;
    r.out_port = m->in_port; /* an error goes back the way the packet came */
    r.icmp_type = type;
    r.icmp_code = code;
    ipc_trace_put(&r);
}
