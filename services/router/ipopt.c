/* SPDX-License-Identifier: MIT */
/*
 * services/router/ipopt.c: IPv4 options on the router's path (ipopt.h).
 * Options are rare, so this file walks the whole option area and sums the
 * header again when it changed; the packets without options never get here.
 */
#include "ipopt.h"

#include <time.h>

#include "icmp.h"
#include "pkt.h"

/* The options a router acts on: their offsets in the header, 0 if absent. */
struct rt_opts {
    uint8_t rr, ts, sr;
};

/*
 * Walk the whole option area of @ip (RFC 791 §3.1): every option's length
 * inside the header, and the pointer and flags of those this router
 * interprets. Returns 0 when the area is well formed (the offsets in @o),
 * else the offset from the header's start of the octet in error, for
 * Parameter Problem's pointer (never 0: options start at 20).
 */
static unsigned rt_opt_check(const uint8_t *ip, unsigned ihl, struct rt_opts *o)
{
    for (unsigned i = PKT_IP_HLEN; i < ihl;) {
        uint8_t type = ip[i];
        if (type == RT_OPT_EOL)
            break;
        if (type == RT_OPT_NOP) {
            i++;
            continue;
        }
        if (i + 1 >= ihl)
            return i; /* a type octet with no room for its length */
        unsigned len = ip[i + 1];
        if (len < 2 || i + len > ihl)
            return i + 1;
        uint8_t *slot;
        unsigned min_len, min_ptr;
        switch (type) {
        case RT_OPT_RR:
            slot = &o->rr;
            min_len = 3, min_ptr = 4;
            break;
        case RT_OPT_LSRR:
        case RT_OPT_SSRR:
            slot = &o->sr; /* one source route, loose or strict */
            min_len = 3, min_ptr = 4;
            break;
        case RT_OPT_TS:
            slot = &o->ts;
            min_len = 4, min_ptr = 5;
            break;
        default:
            i += len; /* not ours to interpret: forwarded as it came */
            continue;
        }
        if (len < min_len)
            return i + 1;
        unsigned ptr = ip[i + 2];
        if (ptr < min_ptr)
            return i + 2;
        unsigned entry = 4; /* octets one entry takes: an address, or a timestamp ... */
        if (type == RT_OPT_TS) {
            unsigned flags = ip[i + 3] & 15u;
            if (flags != RT_OPT_TS_ONLY && flags != RT_OPT_TS_ADDR && flags != RT_OPT_TS_PRESPEC)
                return i + 3;
            /* Full: the overflow count goes up, unless it is full too (RFC 791). */
            if (ptr > len && ip[i + 3] >> 4 == 15)
                return i + 3;
            if (flags != RT_OPT_TS_ONLY)
                entry = 8; /* ... or both */
        }
        /* Some room, but not enough for an entry: in error (RFC 791). */
        if (ptr <= len && ptr + entry - 1 > len)
            return i + 2;
        if (*slot)
            return i; /* each appears at most once (RFC 791) */
        *slot = (uint8_t)i;
        i += len;
    }
    return 0;
}

/* RFC 791's timestamp: milliseconds since midnight UT. */
static uint32_t rt_opt_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint32_t)(ts.tv_sec % 86400) * 1000u + (uint32_t)(ts.tv_nsec / 1000000);
}

/* Fill the Timestamp option at @opt for a router leaving by address @me. */
static void rt_opt_ts(struct rt_ctx *ctx, uint8_t *opt, uint32_t me)
{
    unsigned ptr = opt[2];
    if (ptr > opt[1]) {
        opt[3] = (uint8_t)(opt[3] + 0x10); /* full: one more router that could not write (overflow) */
        return;
    }
    uint8_t *e = opt + ptr - 1;
    switch (opt[3] & 15u) {
    case RT_OPT_TS_ONLY:
        pkt_put32(e, rt_opt_time());
        opt[2] = (uint8_t)(ptr + 4);
        break;
    case RT_OPT_TS_ADDR:
        pkt_put32(e, me);
        pkt_put32(e + 4, rt_opt_time());
        opt[2] = (uint8_t)(ptr + 8);
        break;
    default: /* RT_OPT_TS_PRESPEC: only when the next address is one of ours */
        if (rt_addr_kind(ctx, pkt_get32(e)) != RT_ADDR_LOCAL)
            return;
        pkt_put32(e + 4, rt_opt_time());
        opt[2] = (uint8_t)(ptr + 8);
        break;
    }
}

/* Parameter Problem, code 0, about @orig, pointing at its octet @ptr. */
static void rt_opt_param_problem(struct rt_ctx *ctx, ipc_buf orig, uint8_t ptr, uint64_t now, struct rt_burst *tx)
{
    rt_icmp_error(ctx, orig, RT_ICMP_PARAMPROB, 0, (uint32_t)ptr << 24, now, tx);
}

enum rt_ctr rt_ipopt(struct rt_ctx *ctx, ipc_buf b, uint16_t port, uint64_t now, struct rt_burst *tx)
{
    uint8_t *ip = ipc_pool_data(ctx->pool, b) + PKT_ETH_HLEN;
    unsigned ihl = pkt_ip_hlen(ip);
    struct rt_opts o = {0};
    unsigned bad = rt_opt_check(ip, ihl, &o);
    if (bad) {
        rt_opt_param_problem(ctx, b, (uint8_t)bad, now, tx);
        return RT_CTR_DROP_BAD_OPTIONS;
    }
    /* Source routing is refused by policy, exhausted or not (docs/stats.md). */
    if (o.sr)
        return RT_CTR_DROP_SRC_ROUTE;
    if (!o.rr && !o.ts)
        return RT_CTR_MAX;
    uint32_t me = ctx->port[port].ip;
    if (o.rr) {
        uint8_t *opt = ip + o.rr;
        /* Full: forwarded without the address (RFC 791). */
        if (opt[2] <= opt[1]) {
            pkt_put32(opt + opt[2] - 1, me);
            opt[2] = (uint8_t)(opt[2] + 4);
        }
    }
    if (o.ts)
        rt_opt_ts(ctx, ip + o.ts, me);
    pkt_put16(ip + PKT_IP_CSUM, 0);
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, ihl));
    return RT_CTR_MAX;
}
