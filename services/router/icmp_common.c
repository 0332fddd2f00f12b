/* SPDX-License-Identifier: MIT */
/*
 * services/router/icmp_common.c: the token bucket and the steps of an ICMP
 * or ICMPv6 message that do not depend on the family (icmp_common.h).
 */
#include "icmp_common.h"

#include <string.h>

#include "pkt.h"

void rt_tb_init(struct rt_tb *tb, uint64_t interval_ns, uint32_t burst, uint64_t now)
{
    tb->interval_ns = interval_ns ? interval_ns : 1;
    tb->burst = burst;
    tb->tokens = burst;
    tb->last_ns = now;
}

bool rt_tb_take(struct rt_tb *tb, uint64_t now)
{
    if (now > tb->last_ns) {
        uint64_t add = (now - tb->last_ns) / tb->interval_ns;
        if (add >= tb->burst - tb->tokens) {
            tb->tokens = tb->burst;
            tb->last_ns = now;
        } else if (add > 0) {
            tb->tokens += (uint32_t)add;
            /* Keep the fraction of an interval already elapsed. */
            tb->last_ns += add * tb->interval_ns;
        }
    }
    if (tb->tokens == 0)
        return false;
    tb->tokens--;
    return true;
}

uint32_t rt_icmp_quote_len(const struct rt_ctx *ctx, ipc_buf orig, uint32_t tot, uint32_t limit)
{
    uint32_t have = pkt_total_len(ipc_pool_meta(ctx->pool, orig)) - PKT_ETH_HLEN;
    if (tot < have)
        have = tot;
    return limit < have ? limit : have;
}

uint8_t *rt_icmp_new(struct rt_ctx *ctx, ipc_buf orig, uint16_t type, ipc_buf *nb)
{
    if (ipc_pool_alloc(ctx->pool, nb, 1) != 1) {
        rt_count(ctx, RT_CTR_DROP_NO_BUFS);
        return NULL;
    }
    const uint8_t *of = ipc_pool_data(ctx->pool, orig);
    uint8_t *f = ipc_pool_data(ctx->pool, *nb);
    memcpy(f + PKT_ETH_DST, of + PKT_ETH_SRC, PKT_ETH_ALEN);
    memcpy(f + PKT_ETH_SRC, ctx->port[ipc_pool_meta(ctx->pool, orig)->in_port].mac, PKT_ETH_ALEN);
    pkt_put16(f + PKT_ETH_TYPE, type);
    return f;
}

void rt_icmp_put_error(const struct rt_ctx *ctx, ipc_buf orig, uint8_t *ic, uint8_t type, uint8_t code, uint32_t word,
                       uint32_t quote)
{
    ic[0] = type;
    ic[1] = code;
    pkt_put16(ic + 2, 0);
    pkt_put32(ic + 4, word);
    pkt_read(ctx->pool, orig, PKT_ETH_HLEN, ic + 8, quote);
}

void rt_icmp_send(struct rt_ctx *ctx, ipc_buf orig, ipc_buf nb, uint32_t len, enum rt_ctr ctr, struct rt_burst *tx)
{
    struct ipc_meta *nm = ipc_pool_meta(ctx->pool, nb);
    pkt_set_len(nm, len);
    nm->in_port = IPC_PORT_NONE;
    nm->out_port = ipc_pool_meta(ctx->pool, orig)->in_port;
    rt_count(ctx, ctr);
    rt_tx(ctx, tx, nb);
}

void rt_icmp_reply(struct rt_ctx *ctx, ipc_buf b, enum rt_ctr ctr, struct rt_burst *tx)
{
    struct ipc_meta *m = ipc_pool_meta(ctx->pool, b);
    uint8_t *f = ipc_pool_data(ctx->pool, b);
    memcpy(f + PKT_ETH_DST, f + PKT_ETH_SRC, PKT_ETH_ALEN);
    memcpy(f + PKT_ETH_SRC, ctx->port[m->in_port].mac, PKT_ETH_ALEN);
    m->out_port = m->in_port;
    rt_count(ctx, ctr);
    rt_tx(ctx, tx, b);
}
