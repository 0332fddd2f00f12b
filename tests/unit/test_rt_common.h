/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_common.h: fixtures the router's unit tests share: a
 * real pool (the router attached as owner 2, the supervisor for the census),
 * a small FIB and neighbour table, a context with three ports, a frame
 * builder, and the leak check every test ends with.
 */
#ifndef TEST_RT_COMMON_H
#define TEST_RT_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/pool.h"
#include "tables/fib_write.h"
#include "services/router/icmp.h"
#include "services/router/ipv4.h"
#include "services/router/neigh.h"
#include "tables/neigh_write.h"
#include "services/router/pkt.h"
#include "services/router/rt.h"

#define T_NBUFS 512u
#define T_ROUTER 2u
#define T_TXCAP 256u
#define T_IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

/* Port p: MAC 02:00:00:00:00:0p, address 10.p.0.1/24, MTU 1500. Peers: 02:00:00:00:01:0p. */
static const uint8_t t_peer_mac[3][6] = {
    {0x02, 0, 0, 0, 1, 0}, {0x02, 0, 0, 0, 1, 1}, {0x02, 0, 0, 0, 1, 2}};

struct t_rt {
    int pool_fd, fib_fd, fib_rfd, neigh_fd;
    struct ipc_pool sup, pool;
    struct fib fibw, fibr;
    struct neigh_table neigh;
    struct rt_counters ctr;
    struct rt_ctx ctx;
    ipc_buf txb[T_TXCAP];
    struct rt_burst tx;
};

/* The fixture with a FIB sized by @p (tests that want groups and next hops recycled often). */
static inline int t_rt_setup_fib(void **state, const struct fib_params *p)
{
    struct t_rt *t = calloc(1, sizeof(*t));
    struct ipc_err err = {{0}};
    assert_non_null(t);
    assert_int_equal(ipc_pool_create("t-rt-pool", T_NBUFS, IPC_FRAME_DEFAULT, &t->pool_fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&t->sup, t->pool_fd, IPC_OWNER_SUPERVISOR, &err), 0);
    assert_int_equal(ipc_pool_attach(&t->pool, t->pool_fd, T_ROUTER, &err), 0);
    if (fib_create("t-rt-fib", p, &t->fibw, &t->fib_fd, &t->fib_rfd, &err) != 0)
        fail_msg("%s", err.msg);
    if (fib_attach(&t->fibr, t->fib_fd, t->fib_rfd, 0, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(neigh_create("t-rt-neigh", 64, &t->neigh, &t->neigh_fd, &err), 0);
    rt_ctx_init(&t->ctx, &t->pool, &t->fibr, &t->neigh, &t->ctr, NULL);
    t->ctx.nports = 3;
    for (unsigned i = 0; i < 3; i++) {
        struct rt_port *pt = &t->ctx.port[i];
        uint8_t mac[6] = {0x02, 0, 0, 0, 0, (uint8_t)i};
        memcpy(pt->mac, mac, 6);
        pt->mtu = 1500;
        pt->ip = T_IP(10, i, 0, 1);
        pt->plen = 24;
    }
    t->tx.bufs = t->txb;
    t->tx.cap = T_TXCAP;
    *state = t;
    return 0;
}

static inline int t_rt_setup(void **state)
{
    struct fib_params p = {.max_prefixes = 4096, .tbl8_groups = 256, .max_nh = 256};
    return t_rt_setup_fib(state, &p);
}

static inline void t_tx_free(struct t_rt *t)
{
    ipc_pool_free(&t->pool, t->tx.bufs, t->tx.n);
    t->tx.n = 0;
}

/* No buffer may stay with the router: the census balances and it holds nothing. */
static inline void t_no_leak(struct t_rt *t)
{
    struct ipc_census c;
    ipc_pool_flush(&t->pool);
    if (ipc_pool_census(&t->sup, NULL, 0, &c) != 0)
        fail_msg("census: lost %u dup %u bad %u", c.lost, c.dup, c.bad_owner);
    if (c.held_by[T_ROUTER] != 0)
        fail_msg("router still holds %u buffers", c.held_by[T_ROUTER]);
    assert_int_equal(c.free, T_NBUFS);
}

static inline int t_rt_teardown(void **state)
{
    struct t_rt *t = *state;
    t_tx_free(t);
    for (uint32_t i = 0; i <= t->neigh.mask; i++)
        while (t->neigh.e[i].ip)
            neigh_del(&t->neigh, &t->pool, t->neigh.e[i].ip);
    t_no_leak(t);
    neigh_detach(&t->neigh);
    fib_detach(&t->fibr);
    fib_detach(&t->fibw);
    ipc_pool_detach(&t->pool);
    ipc_pool_detach(&t->sup);
    close(t->neigh_fd);
    close(t->fib_fd);
    close(t->fib_rfd);
    close(t->pool_fd);
    free(t);
    return 0;
}

/* Write an IPv4 frame into buffer @b, arriving on @port from its peer. */
static inline void t_frame_fill(struct t_rt *t, ipc_buf b, uint16_t port, uint32_t src, uint32_t dst, uint8_t proto,
                                uint8_t ttl, uint32_t payload, uint16_t frag)
{
    struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    uint8_t *f = ipc_pool_data(&t->pool, b);
    memcpy(f, t->ctx.port[port].mac, 6);
    memcpy(f + 6, t_peer_mac[port], 6);
    pkt_put16(f + 12, PKT_ETH_P_IP);
    uint8_t *ip = f + PKT_ETH_HLEN;
    memset(ip, 0, PKT_IP_HLEN);
    ip[0] = 0x45;
    pkt_put16(ip + PKT_IP_TOTLEN, (uint16_t)(PKT_IP_HLEN + payload));
    pkt_put16(ip + PKT_IP_ID, 0x1234);
    pkt_put16(ip + PKT_IP_FRAG, frag);
    ip[PKT_IP_TTL] = ttl;
    ip[PKT_IP_PROTO] = proto;
    pkt_put32(ip + PKT_IP_SRC, src);
    pkt_put32(ip + PKT_IP_DST, dst);
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, PKT_IP_HLEN));
    for (uint32_t i = 0; i < payload; i++)
        ip[PKT_IP_HLEN + i] = (uint8_t)(i * 7 + 3);
    uint32_t len = PKT_ETH_HLEN + PKT_IP_HLEN + payload;
    if (len < PKT_ETH_ZLEN) {
        memset(f + len, 0, PKT_ETH_ZLEN - len);
        len = PKT_ETH_ZLEN;
    }
    pkt_set_len(m, len);
    m->in_port = port;
    m->out_port = IPC_PORT_NONE;
}

/* Build an IPv4 frame in a new buffer, arriving on @port from its peer. */
static inline ipc_buf t_frame(struct t_rt *t, uint16_t port, uint32_t src, uint32_t dst, uint8_t proto, uint8_t ttl,
                              uint32_t payload, uint16_t frag)
{
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(&t->pool, &b, 1), 1);
    t_frame_fill(t, b, port, src, dst, proto, ttl, payload, frag);
    return b;
}

/* An ARP frame (op 1 request, 2 reply) arriving on @port, from @sha / @spa
 * for @tpa, to Ethernet @eth_dst; a reply's target MAC is the port's. */
static inline ipc_buf t_arp(struct t_rt *t, uint16_t port, uint16_t op, const uint8_t *sha, uint32_t spa, uint32_t tpa,
                            const uint8_t *eth_dst)
{
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(&t->pool, &b, 1), 1);
    uint8_t *f = ipc_pool_data(&t->pool, b);
    memset(f, 0, 60);
    memcpy(f, eth_dst, 6);
    memcpy(f + 6, sha, 6);
    pkt_put16(f + 12, PKT_ETH_P_ARP);
    uint8_t *a = f + 14;
    pkt_put16(a, 1);
    pkt_put16(a + 2, PKT_ETH_P_IP);
    a[4] = 6;
    a[5] = 4;
    pkt_put16(a + 6, op);
    memcpy(a + 8, sha, 6);
    pkt_put32(a + 14, spa);
    if (op == 2)
        memcpy(a + 18, t->ctx.port[port].mac, 6);
    pkt_put32(a + 24, tpa);
    struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    pkt_set_len(m, 60);
    m->in_port = port;
    return b;
}

/* Receive @n frames as the router loop does: inside the batch's FIB read section. */
static inline void t_input(struct t_rt *t, const ipc_buf *bufs, uint32_t n, uint64_t now)
{
    fib_read_begin(t->ctx.fib);
    rt_input_burst(&t->ctx, bufs, n, now, &t->tx);
    fib_read_end(t->ctx.fib);
}

static inline uint8_t *t_ip(struct t_rt *t, ipc_buf b)
{
    return ipc_pool_data(&t->pool, b) + PKT_ETH_HLEN;
}

/* Re-sum an IPv4 header after a test edits it. */
static inline void t_ip_fix_csum(uint8_t *ip)
{
    pkt_put16(ip + PKT_IP_CSUM, 0);
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, (ip[0] & 15u) * 4));
}

static inline uint64_t t_rand64(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#endif
