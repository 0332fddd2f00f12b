/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt6_common.h: the IPv6 side of the router's test fixture
 * (test_rt_common.h): an IPv6 FIB sharing the IPv4 FIB's readers' region
 * (as the supervisor makes it), an IPv6 neighbour table, and on each port p
 * the addresses 2001:db8:p::1/64 and fe80::p/64; frame builders for IPv6,
 * ICMPv6 checksums, and a checker for ICMPv6 messages the router emits.
 */
#ifndef TEST_RT6_COMMON_H
#define TEST_RT6_COMMON_H

#include <arpa/inet.h>

#include "test_rt_common.h"

#include "tables/fib6_write.h"
#include "tables/neigh6_write.h"
#include "services/router/icmp6.h"
#include "services/router/ipv6.h"
#include "services/router/nd.h"

struct t_rt6 {
    struct t_rt *t; /* the IPv4 fixture: pool, FIB, context */
    int fib6_fd, neigh6_fd;
    struct fib6 fib6w, fib6r;
    struct neigh6_table neigh6;
};

/* 2001:db8:P::H, or fe80::H when @ll. */
static inline void t6_addr(uint8_t a[16], bool ll, unsigned p, unsigned h)
{
    memset(a, 0, 16);
    if (ll) {
        a[0] = 0xfe;
        a[1] = 0x80;
    } else {
        a[0] = 0x20;
        a[1] = 0x01;
        a[2] = 0x0d;
        a[3] = 0xb8;
        a[5] = (uint8_t)p;
    }
    a[14] = (uint8_t)(h >> 8);
    a[15] = (uint8_t)h;
}

static inline int t6_setup(void **state)
{
    t_rt_setup(state);
    struct t_rt *t = *state;
    struct t_rt6 *s = calloc(1, sizeof(*s));
    struct ipc_err err = {{0}};
    assert_non_null(s);
    s->t = t;
    struct fib6_params p = {.max_prefixes = 1024, .tbl8_groups = 64, .max_nh = 64};
    int rfd = -1;
    if (fib6_create("t-rt-fib6", &p, t->fib_rfd, &s->fib6w, &s->fib6_fd, &rfd, &err) != 0)
        fail_msg("%s", err.msg);
    if (fib6_attach(&s->fib6r, s->fib6_fd, t->fib_rfd, 0, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(neigh6_create("t-rt-neigh6", 64, &s->neigh6, &s->neigh6_fd, &err), 0);
    t->ctx.fib6 = &s->fib6r;
    t->ctx.neigh6 = &s->neigh6;
    for (unsigned i = 0; i < 3; i++) {
        struct rt_port *pt = &t->ctx.port[i];
        t6_addr(pt->a6[0].a, false, i, 1);
        pt->a6[0].plen = 64;
        t6_addr(pt->a6[1].a, true, 0, 0x100 + i);
        pt->a6[1].plen = 64;
        pt->n6 = 2;
        pt->ll6 = 1;
        pt->dad_sent = true; /* the DAD probes are test_rt_nd_dad's; the other tests start past them */
        /* the connected network */
        uint8_t net[16];
        t6_addr(net, false, i, 0);
        struct fib6_nh nh = {.port = (uint16_t)i};
        assert_int_equal(fib6_add(&s->fib6w, net, 64, &nh), 0);
    }
    *state = s;
    return 0;
}

static inline int t6_teardown(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    rt_nd_free_pending(&t->ctx);
    for (uint32_t i = 0; i <= s->neigh6.mask;)
        if (s->neigh6.e[i].used)
            neigh6_remove(&s->neigh6, &s->neigh6.e[i]);
        else
            i++;
    neigh6_detach(&s->neigh6);
    fib6_detach(&s->fib6r);
    fib6_detach(&s->fib6w);
    close(s->neigh6_fd);
    close(s->fib6_fd);
    free(s);
    void *ts = t;
    return t_rt_teardown(&ts);
}

/* An IPv6 frame in a new buffer, arriving on @port from its peer: @nxt,
 * @hlim, @payload bytes of pattern (the caller writes headers over it). */
static inline ipc_buf t6_frame(struct t_rt *t, uint16_t port, const uint8_t *src, const uint8_t *dst, uint8_t nxt,
                               uint8_t hlim, uint32_t payload)
{
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(&t->pool, &b, 1), 1);
    struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    uint8_t *f = ipc_pool_data(&t->pool, b);
    memcpy(f, t->ctx.port[port].mac, 6);
    memcpy(f + 6, t_peer_mac[port], 6);
    pkt_put16(f + 12, PKT_ETH_P_IPV6);
    uint8_t *ip6 = f + PKT_ETH_HLEN;
    pkt_put32(ip6, 6u << 28);
    pkt_put16(ip6 + PKT_IP6_PLEN, (uint16_t)payload);
    ip6[PKT_IP6_NXT] = nxt;
    ip6[PKT_IP6_HLIM] = hlim;
    memcpy(ip6 + PKT_IP6_SRC, src, 16);
    memcpy(ip6 + PKT_IP6_DST, dst, 16);
    for (uint32_t i = 0; i < payload; i++)
        ip6[PKT_IP6_HLEN + i] = (uint8_t)(i * 7 + 3);
    uint32_t len = PKT_ETH_HLEN + PKT_IP6_HLEN + payload;
    if (len < PKT_ETH_ZLEN) {
        memset(f + len, 0, PKT_ETH_ZLEN - len);
        len = PKT_ETH_ZLEN;
    }
    pkt_set_len(m, len);
    m->in_port = port;
    m->out_port = IPC_PORT_NONE;
    return b;
}

/* Write the ICMPv6 checksum of the message at @off (from the IPv6 header) of @len bytes. */
static inline void t6_icmp_csum(uint8_t *ip6, uint32_t off, uint32_t len)
{
    uint8_t *ic = ip6 + off;
    pkt_put16(ic + 2, 0);
    uint32_t s = rt_ip6_pseudo_sum(ip6 + PKT_IP6_SRC, ip6 + PKT_IP6_DST, len, PKT_IP_PROTO_ICMPV6);
    pkt_put16(ic + 2, pkt_csum_fold(pkt_csum_add(s, ic, len, false)));
}

/* Does the ICMPv6 message that is @ip6's whole payload sum to zero? */
static inline bool t6_icmp_csum_ok(const uint8_t *ip6)
{
    uint32_t len = pkt_get16(ip6 + PKT_IP6_PLEN);
    uint32_t s = rt_ip6_pseudo_sum(ip6 + PKT_IP6_SRC, ip6 + PKT_IP6_DST, len, PKT_IP_PROTO_ICMPV6);
    return pkt_csum_fold(pkt_csum_add(s, ip6 + PKT_IP6_HLEN, len, false)) == 0;
}

static inline void t6_input(struct t_rt *t, ipc_buf b, uint64_t now)
{
    t_input(t, &b, 1, now);
}

#endif
