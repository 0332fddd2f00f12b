/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_ipv6.c: the router's IPv6 path. One crafted frame per
 * drop reason, each landing in its own counter (and only there);
 * forwarding (hop limit, MACs, egress port, padding trimmed, extension
 * headers stepped over); Time Exceeded, Destination Unreachable and Packet
 * Too Big byte by byte (type, code, MTU, source, quote cut at 1280 bytes,
 * checksum); no error about an error; the per-destination rate limit; echo
 * replies byte by byte with their checksum; a burst mixing all of these
 * and IPv4 (rt_ipv6_burst's passes keep each flow's order); the mask of
 * the router's addresses against rt_ip6_is_local. Every test ends with the
 * pool census: no buffer leaks.
 */
#include "test_rt6_common.h"

static const uint8_t t6_nh_mac[6] = {0x02, 0xaa, 0, 0, 0, 6};

/* 2001:db8:@net::/48 via 2001:db8:@port::2 on @port, its MAC @mac (static). */
static void t6_route_via(struct t_rt6 *s, uint8_t net, uint16_t port, const uint8_t *mac)
{
    uint8_t pfx[16], gw[16];
    t6_addr(pfx, false, 0, 0);
    pfx[5] = net;
    t6_addr(gw, false, port, 2);
    struct fib6_nh nh = {.port = port};
    memcpy(nh.gw, gw, 16);
    assert_int_equal(fib6_add(&s->fib6w, pfx, 48, &nh), 0);
    assert_int_equal(neigh6_add_static(&s->neigh6, gw, mac, port), 0);
}

/* 2001:db8:20::/48 via 2001:db8:1::2 on port 1 (resolved, static). */
static void t6_routes(struct t_rt6 *s)
{
    t6_route_via(s, 0x20, 1, t6_nh_mac);
}

/* The sum of every IPv6 drop counter and the shared ones a frame may hit. */
static uint64_t t6_drops(const struct t_rt *t)
{
    uint64_t n = t->ctr.c[RT_CTR_DROP_L2_OTHER_HOST] + t->ctr.c[RT_CTR_DROP_ETHERTYPE];
    for (unsigned i = RT_CTR_DROP6_RUNT; i <= RT_CTR_DROP6_NEIGH_FAILED; i++)
        n += t->ctr.c[i];
    return n;
}

enum t6_mut {
    M6_NONE,
    M6_RUNT,
    M6_VERSION,
    M6_PLEN_BIG,
    M6_PLEN_ZERO,
    M6_SRC,
    M6_DST,
    M6_L2_MCAST,
    M6_L2_OTHER,
    M6_HLIM,
    M6_RH0,
    M6_EXT_LONG,
    M6_EXT_CUT,
    M6_TOO_BIG,
};

struct t6_case {
    const char *name;
    enum t6_mut mut;
    const char *addr; /* M6_SRC, M6_DST */
    unsigned v;
    enum rt_ctr want;
    bool icmp;
};

static const struct t6_case t6_cases[] = {
    {"runt: 50 bytes", M6_RUNT, NULL, 50, RT_CTR_DROP6_RUNT, false},
    {"version 4", M6_VERSION, NULL, 4, RT_CTR_DROP6_BAD_VERSION, false},
    {"version 7", M6_VERSION, NULL, 7, RT_CTR_DROP6_BAD_VERSION, false},
    {"payload length past the frame", M6_PLEN_BIG, NULL, 0, RT_CTR_DROP6_BAD_PLEN, false},
    {"payload length 0 (jumbogram)", M6_PLEN_ZERO, NULL, 0, RT_CTR_DROP6_BAD_PLEN, false},
    {"source ::", M6_SRC, "::", 0, RT_CTR_DROP6_SRC_UNSPEC, false},
    {"source ff02::1", M6_SRC, "ff02::1", 0, RT_CTR_DROP6_SRC_MCAST, false},
    {"source ff0e::5", M6_SRC, "ff0e::5", 0, RT_CTR_DROP6_SRC_MCAST, false},
    {"source ::1", M6_SRC, "::1", 0, RT_CTR_DROP6_SRC_LOOPBACK, false},
    {"destination ::1", M6_DST, "::1", 0, RT_CTR_DROP6_MARTIAN_DST, false},
    {"destination ::", M6_DST, "::", 0, RT_CTR_DROP6_MARTIAN_DST, false},
    {"link-local source off its link", M6_SRC, "fe80::5", 0, RT_CTR_DROP6_LL_SRC, false},
    {"link-local destination not ours", M6_DST, "fe80::9", 0, RT_CTR_DROP6_LL_DST, false},
    {"another port's link-local address", M6_DST, "fe80::101", 0, RT_CTR_DROP6_LL_DST, false},
    {"multicast ff02::16 (MLD)", M6_DST, "ff02::16", 0, RT_CTR_DROP6_MCAST_LL, false},
    {"multicast ff01::1 (node scope)", M6_DST, "ff01::1", 0, RT_CTR_DROP6_MCAST_LL, false},
    {"multicast ff0e::1 (global scope)", M6_DST, "ff0e::1", 0, RT_CTR_DROP6_MCAST, false},
    {"multicast ff05::2 (site scope)", M6_DST, "ff05::2", 0, RT_CTR_DROP6_MCAST, false},
    {"unicast in L2 multicast", M6_L2_MCAST, NULL, 0, RT_CTR_DROP6_L2_MCAST_UNICAST, false},
    {"unicast MAC of another host", M6_L2_OTHER, NULL, 0, RT_CTR_DROP_L2_OTHER_HOST, false},
    {"hop limit 1", M6_HLIM, NULL, 1, RT_CTR_DROP6_HOP_LIMIT, true},
    {"hop limit 0", M6_HLIM, NULL, 0, RT_CTR_DROP6_HOP_LIMIT, true},
    {"no route", M6_DST, "2001:db8:99::1", 0, RT_CTR_DROP6_NO_ROUTE, true},
    {"routing header type 0", M6_RH0, NULL, 0, RT_CTR_DROP6_RH0, false},
    {"9 extension headers", M6_EXT_LONG, NULL, 0, RT_CTR_DROP6_EXT, false},
    {"extension header past the packet", M6_EXT_CUT, NULL, 0, RT_CTR_DROP6_EXT, false},
    {"UDP to the router", M6_DST, "2001:db8:2::1", 0, RT_CTR_DROP6_LOCAL_OTHER, true}, /* port unreachable */
    {"larger than the egress MTU", M6_TOO_BIG, NULL, 0, RT_CTR_DROP6_TOO_BIG, true},
};

static void test_rt_ipv6_validation_table(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    t6_routes(s);
    t->ctx.port[1].mtu = 1280;
    uint8_t src[16], dst[16];
    for (unsigned i = 0; i < sizeof(t6_cases) / sizeof(t6_cases[0]); i++) {
        const struct t6_case *c = &t6_cases[i];
        t6_addr(src, false, 0, 5);
        t6_addr(dst, false, 0, 0x33);
        dst[5] = 0x20; /* 2001:db8:20::33, routed via port 1 */
        uint32_t payload = c->mut == M6_TOO_BIG ? 1300 : 64;
        uint8_t nxt = PKT_IP_PROTO_UDP;
        if (c->mut == M6_RH0 || c->mut == M6_EXT_CUT)
            nxt = RT_IP6_EXT_ROUTING;
        if (c->mut == M6_EXT_LONG)
            nxt = RT_IP6_EXT_DEST;
        if (c->mut == M6_SRC)
            assert_int_equal(inet_pton(AF_INET6, c->addr, src), 1);
        if (c->mut == M6_DST)
            assert_int_equal(inet_pton(AF_INET6, c->addr, dst), 1);
        ipc_buf b = t6_frame(t, 0, src, dst, nxt, 64, payload);
        struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
        uint8_t *f = ipc_pool_data(&t->pool, b);
        uint8_t *ip6 = f + PKT_ETH_HLEN;
        switch (c->mut) {
        case M6_RUNT:
            pkt_set_len(m, c->v);
            break;
        case M6_VERSION:
            ip6[0] = (uint8_t)(c->v << 4);
            break;
        case M6_PLEN_BIG:
            pkt_put16(ip6 + PKT_IP6_PLEN, 65);
            break;
        case M6_PLEN_ZERO:
            pkt_put16(ip6 + PKT_IP6_PLEN, 0);
            break;
        case M6_L2_MCAST:
            memcpy(f, (uint8_t[6]){0x33, 0x33, 0, 0, 0, 1}, 6);
            break;
        case M6_L2_OTHER:
            f[5] ^= 0x10;
            break;
        case M6_HLIM:
            ip6[PKT_IP6_HLIM] = (uint8_t)c->v;
            break;
        case M6_RH0: /* type 0, one address, segments left 1 */
            ip6[40] = PKT_IP_PROTO_UDP;
            ip6[41] = 2;
            ip6[42] = 0;
            ip6[43] = 1;
            break;
        case M6_EXT_LONG: /* nine destination-options headers of 8 bytes in a row */
            for (unsigned k = 0; k < 9; k++) {
                ip6[40 + 8 * k] = k < 8 ? RT_IP6_EXT_DEST : PKT_IP_PROTO_UDP;
                ip6[41 + 8 * k] = 0;
            }
            break;
        case M6_EXT_CUT: /* a routing header (type 2) claiming 2 KB */
            ip6[40] = PKT_IP_PROTO_UDP;
            ip6[41] = 255;
            ip6[42] = 2;
            break;
        default:
            break;
        }
        uint64_t before = t->ctr.c[c->want], total = t6_drops(t);
        t6_input(t, b, 1000 + i * 1000000000ull);
        if (t->ctr.c[c->want] != before + 1)
            fail_msg("%s: %s not counted", c->name, rt_ctr_names[c->want]);
        if (t6_drops(t) != total + 1)
            fail_msg("%s: counted more than one drop reason", c->name);
        assert_int_equal(t->ctr.c[RT_CTR_FORWARDED6], 0);
        if (t->tx.n != (c->icmp ? 1u : 0u))
            fail_msg("%s: %u packets out, expected %u", c->name, t->tx.n, c->icmp ? 1u : 0u);
        t_tx_free(t);
        t_no_leak(t);
    }
    for (unsigned i = 0; i < RT_CTR_MAX; i++)
        assert_non_null(rt_ctr_names[i]);
}

/* Without an IPv6 FIB (a router given none), IPv6 frames drop as before. */
static void test_rt_ipv6_off(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    t->ctx.fib6 = NULL;
    uint8_t a[16], d[16];
    t6_addr(a, false, 0, 5);
    t6_addr(d, false, 1, 5);
    t6_input(t, t6_frame(t, 0, a, d, PKT_IP_PROTO_UDP, 64, 10), 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_ETHERTYPE], 1);
    t->ctx.fib6 = &s->fib6r;
    t->ctx.port[0].n6 = 0; /* IPv6 off on the port */
    t6_input(t, t6_frame(t, 0, a, d, PKT_IP_PROTO_UDP, 64, 10), 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_ETHERTYPE], 2);
    t_no_leak(t);
}

static void test_rt_ipv6_forward(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    t6_routes(s);
    uint8_t src[16], dst[16];
    t6_addr(src, false, 0, 5);
    t6_addr(dst, false, 0, 0x44);
    dst[5] = 0x20;
    /* A short packet, padded to 60 bytes by Ethernet, with a hop-by-hop and
     * a destination-options header in front of UDP. */
    ipc_buf b = t6_frame(t, 0, src, dst, RT_IP6_EXT_HBH, 64, 4 + 16);
    uint8_t *ip6 = t_ip(t, b);
    ip6[40] = RT_IP6_EXT_DEST;
    ip6[41] = 0;
    ip6[48] = PKT_IP_PROTO_UDP;
    ip6[49] = 0;
    struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    pkt_set_len(m, PKT_ETH_HLEN + PKT_IP6_HLEN + 20 + 30); /* 30 bytes of padding */
    struct rt_ip6_l4 l4;
    assert_int_equal(rt_ip6_walk(ip6, m->len - PKT_ETH_HLEN, &l4), RT_IP6_WALK_OK);
    assert_int_equal(l4.proto, PKT_IP_PROTO_UDP);
    assert_int_equal(l4.off, 56);
    t6_input(t, b, 1);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(t->tx.bufs[0], b);
    assert_int_equal(m->out_port, 1);
    assert_int_equal(m->len, PKT_ETH_HLEN + PKT_IP6_HLEN + 20); /* padding trimmed */
    uint8_t *f = ipc_pool_data(&t->pool, b);
    assert_memory_equal(f, t6_nh_mac, 6);
    assert_memory_equal(f + 6, t->ctx.port[1].mac, 6);
    assert_int_equal(f[PKT_ETH_HLEN + PKT_IP6_HLIM], 63);
    assert_int_equal(t->ctr.c[RT_CTR_FORWARDED6], 1);
    assert_int_equal(t->ctr.c[RT_CTR_RX_IPV6], 1);
    t_tx_free(t);
    t_no_leak(t);
}

/* Check an ICMPv6 error: Ethernet back to the peer from the ingress port,
 * the router's address on it as source, type, code, param, the quote. */
static void t6_check_error(struct t_rt *t, ipc_buf err, const uint8_t *orig, uint32_t orig_len, uint8_t type,
                           uint8_t code, uint32_t param)
{
    const struct ipc_meta *m = ipc_pool_meta(&t->pool, err);
    const uint8_t *f = ipc_pool_data(&t->pool, err);
    const uint8_t *ip6 = f + PKT_ETH_HLEN, *ic = ip6 + PKT_IP6_HLEN;
    uint32_t quote = orig_len < 1232 ? orig_len : 1232;
    assert_int_equal(m->out_port, 0);
    assert_memory_equal(f, t_peer_mac[0], 6);
    assert_memory_equal(f + 6, t->ctx.port[0].mac, 6);
    assert_int_equal(pkt_get16(f + 12), PKT_ETH_P_IPV6);
    assert_int_equal(ip6[0] >> 4, 6);
    assert_int_equal(ip6[PKT_IP6_NXT], PKT_IP_PROTO_ICMPV6);
    assert_int_equal(ip6[PKT_IP6_HLIM], 64);
    assert_memory_equal(ip6 + PKT_IP6_SRC, t->ctx.port[0].a6[0].a, 16); /* global source to a global host */
    assert_memory_equal(ip6 + PKT_IP6_DST, orig + PKT_IP6_SRC, 16);
    assert_int_equal(pkt_get16(ip6 + PKT_IP6_PLEN), 8 + quote);
    assert_int_equal(m->len, PKT_ETH_HLEN + PKT_IP6_HLEN + 8 + quote);
    assert_true(PKT_IP6_HLEN + 8 + quote <= 1280);
    assert_int_equal(ic[0], type);
    assert_int_equal(ic[1], code);
    assert_int_equal(pkt_get32(ic + 4), param);
    assert_memory_equal(ic + 8, orig, quote);
    assert_true(t6_icmp_csum_ok(ip6));
}

static void test_rt_ipv6_errors(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    t6_routes(s);
    t->ctx.port[1].mtu = 1280;
    uint8_t src[16], dst[16], copy[2048];
    t6_addr(src, false, 0, 5);
    t6_addr(dst, false, 0, 0x55);
    dst[5] = 0x20;

    /* Hop limit 1: Time Exceeded 3/0, quoting the whole (short) packet. */
    ipc_buf b = t6_frame(t, 0, src, dst, PKT_IP_PROTO_UDP, 1, 100);
    memcpy(copy, t_ip(t, b), 140);
    t6_input(t, b, 1);
    assert_int_equal(t->tx.n, 1);
    t6_check_error(t, t->tx.bufs[0], copy, 140, RT_ICMP6_TIME_EXCEEDED, 0, 0);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP6_TIME_EXCEEDED_TX], 1);
    t_tx_free(t);

    /* 1400 bytes for a 1280-byte port: Packet Too Big 2/0 with the MTU, the
     * quote cut so that the error is 1280 bytes. Never fragmented. */
    b = t6_frame(t, 0, src, dst, PKT_IP_PROTO_UDP, 64, 1400 - 40);
    memcpy(copy, t_ip(t, b), 1400);
    t6_input(t, b, 2);
    assert_int_equal(t->tx.n, 1);
    t6_check_error(t, t->tx.bufs[0], copy, 1400, RT_ICMP6_TOO_BIG, 0, 1280);
    assert_int_equal(ipc_pool_meta(&t->pool, t->tx.bufs[0])->len, PKT_ETH_HLEN + 1280);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP6_TOO_BIG_TX], 1);
    t_tx_free(t);

    /* Exactly the MTU passes. */
    b = t6_frame(t, 0, src, dst, PKT_IP_PROTO_UDP, 64, 1280 - 40);
    t6_input(t, b, 3);
    assert_int_equal(t->ctr.c[RT_CTR_FORWARDED6], 1);
    t_tx_free(t);

    /* No route: Destination Unreachable 1/0. */
    dst[5] = 0x99;
    b = t6_frame(t, 0, src, dst, PKT_IP_PROTO_TCP, 64, 60);
    memcpy(copy, t_ip(t, b), 100);
    t6_input(t, b, 4);
    assert_int_equal(t->tx.n, 1);
    t6_check_error(t, t->tx.bufs[0], copy, 100, RT_ICMP6_UNREACH, RT_ICMP6_UNREACH_NO_ROUTE, 0);
    t_tx_free(t);

    /* No error about an ICMPv6 error: a Destination Unreachable with hop limit 1. */
    b = t6_frame(t, 0, src, dst, PKT_IP_PROTO_ICMPV6, 1, 48);
    t_ip(t, b)[40] = RT_ICMP6_UNREACH;
    uint64_t sup0 = t->ctr.c[RT_CTR_ICMP6_SUPPRESSED];
    t6_input(t, b, 5);
    assert_int_equal(t->tx.n, 0);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP6_SUPPRESSED], sup0 + 1);
    /* ... but an echo request with hop limit 1 gets one. */
    b = t6_frame(t, 0, src, dst, PKT_IP_PROTO_ICMPV6, 1, 48);
    t_ip(t, b)[40] = RT_ICMP6_ECHO_REQUEST;
    t6_input(t, b, 6);
    assert_int_equal(t->tx.n, 1);
    t_tx_free(t);
    t_no_leak(t);
}

/* Errors are limited per destination: one source's burst runs out, another
 * source still gets its errors; tokens come back with time. */
static void test_rt_ipv6_rate_limit(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    uint8_t a[16], c[16], dst[16];
    t6_addr(a, false, 0, 5);
    t6_addr(c, false, 0, 6);
    t6_addr(dst, false, 0, 9);
    dst[5] = 0x99; /* no route */
    uint32_t burst = t->ctx.cfg.icmp_burst;
    uint64_t now = 5000000000ull;
    for (uint32_t i = 0; i < burst + 10; i++) {
        t6_input(t, t6_frame(t, 0, a, dst, PKT_IP_PROTO_UDP, 64, 8), now);
        t_tx_free(t);
    }
    assert_int_equal(t->ctr.c[RT_CTR_ICMP6_UNREACH_TX], burst);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP6_RATE_LIMITED], 10);
    t6_input(t, t6_frame(t, 0, c, dst, PKT_IP_PROTO_UDP, 64, 8), now);
    assert_int_equal(t->tx.n, 1); /* another destination's bucket */
    t_tx_free(t);
    t6_input(t, t6_frame(t, 0, a, dst, PKT_IP_PROTO_UDP, 64, 8), now + t->ctx.cfg.icmp_interval_ns);
    assert_int_equal(t->tx.n, 1); /* one token back */
    t_tx_free(t);
    t_no_leak(t);
}

/* Echo requests to each kind of router address: the reply, byte by byte. */
static void test_rt_ipv6_echo_reply(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    uint8_t src[16], ours[3][16], ll_src[16];
    t6_addr(src, false, 0, 5);
    t6_addr(ll_src, true, 0, 0x77);
    memcpy(ours[0], t->ctx.port[0].a6[0].a, 16); /* this port's global address */
    memcpy(ours[1], t->ctx.port[2].a6[0].a, 16); /* the far port's */
    memcpy(ours[2], t->ctx.port[0].a6[1].a, 16); /* this port's link-local address */
    for (unsigned k = 0; k < 3; k++) {
        const uint8_t *from = k == 2 ? ll_src : src;
        ipc_buf b = t6_frame(t, 0, from, ours[k], PKT_IP_PROTO_ICMPV6, 64, 8 + 56);
        uint8_t *ip6 = t_ip(t, b);
        ip6[40] = RT_ICMP6_ECHO_REQUEST;
        ip6[41] = 0;
        pkt_put16(ip6 + 44, 0x1234);      /* identifier */
        pkt_put16(ip6 + 46, (uint16_t)k); /* sequence */
        t6_icmp_csum(ip6, 40, 64);
        uint8_t req[104];
        memcpy(req, ip6, 104);
        t6_input(t, b, 1);
        assert_int_equal(t->tx.n, 1);
        assert_int_equal(t->tx.bufs[0], b); /* answered in place */
        const uint8_t *f = ipc_pool_data(&t->pool, b);
        assert_memory_equal(f, t_peer_mac[0], 6);
        assert_memory_equal(f + 6, t->ctx.port[0].mac, 6);
        assert_memory_equal(ip6 + PKT_IP6_SRC, ours[k], 16);
        assert_memory_equal(ip6 + PKT_IP6_DST, from, 16);
        assert_int_equal(ip6[PKT_IP6_HLIM], 64);
        assert_int_equal(pkt_get16(ip6 + PKT_IP6_PLEN), 64);
        assert_int_equal(ip6[40], RT_ICMP6_ECHO_REPLY);
        assert_int_equal(ip6[41], 0);
        assert_memory_equal(ip6 + 44, req + 44, 60); /* identifier, sequence, data */
        assert_true(t6_icmp_csum_ok(ip6));
        /* The incremental update equals a full recomputation. */
        uint8_t again[104];
        memcpy(again, ip6, 104);
        t6_icmp_csum(again, 40, 64);
        assert_int_equal(pkt_get16(again + 42), pkt_get16(ip6 + 42));
        assert_int_equal(ipc_pool_meta(&t->pool, b)->out_port, 0);
        t_tx_free(t);
    }
    assert_int_equal(t->ctr.c[RT_CTR_ICMP6_ECHO_REPLY_TX], 3);
    /* A bad checksum is dropped and counted. */
    ipc_buf b = t6_frame(t, 0, src, ours[0], PKT_IP_PROTO_ICMPV6, 64, 16);
    t_ip(t, b)[40] = RT_ICMP6_ECHO_REQUEST;
    t_ip(t, b)[41] = 0;
    t6_icmp_csum(t_ip(t, b), 40, 16);
    t_ip(t, b)[50] ^= 1;
    t6_input(t, b, 2);
    assert_int_equal(t->tx.n, 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP6_ICMP_BAD_CHECKSUM], 1);
    /* Another port's link-local address is not ours on this link. */
    b = t6_frame(t, 0, src, t->ctx.port[2].a6[1].a, PKT_IP_PROTO_ICMPV6, 64, 16);
    t6_input(t, b, 3);
    assert_int_equal(t->ctr.c[RT_CTR_DROP6_LL_DST], 1);
    t_no_leak(t);
}

/* One burst of 40 frames through rt_input_burst, more IPv6 frames than one
 * rt_ipv6_burst call takes, IPv4 among them: two forwarded flows, an echo
 * request to the router, UDP to the router, hop limit 1, no route. Each
 * lands where it would alone, and each flow leaves in its order. */
static void test_rt_ipv6_burst_mixed(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    static const uint8_t mac2[6] = {0x02, 0xbb, 0, 0, 0, 7};
    t6_routes(s); /* 2001:db8:20::/48 via port 1 */
    t6_route_via(s, 0x21, 2, mac2);
    uint8_t src[16], dst[16];
    t6_addr(src, false, 0, 5);
    enum { N = 40 };
    ipc_buf in[N];
    unsigned nfwd = 0, nv4 = 0;
    for (unsigned i = 0; i < N; i++) {
        if (i % 10 == 3) {
            in[i] = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(10, 0, 0, 1), PKT_IP_PROTO_UDP, 64, 20, 0);
            nv4++;
            continue;
        }
        uint8_t hlim = 64, nxt = PKT_IP_PROTO_UDP;
        t6_addr(dst, false, 0, 0x100 + i);
        dst[5] = (uint8_t)(0x20 + i % 2); /* flow i % 2: out of port 1 or 2 */
        if (i == 7 || i == 25)
            memcpy(dst, t->ctx.port[i == 7 ? 0 : 2].a6[0].a, 16);
        if (i == 7)
            nxt = PKT_IP_PROTO_ICMPV6;
        if (i == 12)
            hlim = 1;
        if (i == 17)
            dst[5] = 0x99;
        in[i] = t6_frame(t, 0, src, dst, nxt, hlim, 64);
        uint8_t *ip6 = t_ip(t, in[i]);
        if (i == 7) {
            ip6[40] = RT_ICMP6_ECHO_REQUEST;
            ip6[41] = 0;
            t6_icmp_csum(ip6, 40, 64);
        } else {
            ip6[PKT_IP6_HLEN + 8] = (uint8_t)i; /* the packet's place, in its UDP payload */
            if (i != 12 && i != 17 && i != 25)
                nfwd++;
        }
    }
    t_input(t, in, N, 1);
    assert_int_equal(t->ctr.c[RT_CTR_RX_IPV4], nv4);
    assert_int_equal(t->ctr.c[RT_CTR_RX_IPV6], N - nv4);
    assert_int_equal(t->ctr.c[RT_CTR_FORWARDED6], nfwd);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP6_ECHO_REPLY_TX], 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP6_HOP_LIMIT], 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP6_NO_ROUTE], 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP6_LOCAL_OTHER], 1);
    int last[3] = {-1, -1, -1};
    unsigned out[3] = {0}, back6 = 0;
    for (unsigned k = 0; k < t->tx.n; k++) {
        const struct ipc_meta *m = ipc_pool_meta(&t->pool, t->tx.bufs[k]);
        const uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[k]);
        if (pkt_get16(f + 12) != PKT_ETH_P_IPV6)
            continue;
        if (m->out_port == 0) {
            back6++; /* the echo reply, two errors, and the port unreachable for UDP to port 2's address */
            continue;
        }
        assert_true(m->out_port == 1 || m->out_port == 2);
        const uint8_t *ip6 = f + PKT_ETH_HLEN;
        int seq = ip6[PKT_IP6_HLEN + 8];
        assert_int_equal(seq % 2 + 1, m->out_port);
        assert_true(seq > last[m->out_port]);
        last[m->out_port] = seq;
        out[m->out_port]++;
        assert_memory_equal(f, m->out_port == 1 ? t6_nh_mac : mac2, 6);
        assert_memory_equal(f + 6, t->ctx.port[m->out_port].mac, 6);
        assert_int_equal(ip6[PKT_IP6_HLIM], 63);
    }
    assert_int_equal(out[1] + out[2], nfwd);
    assert_int_equal(back6, 4);
    t_tx_free(t);
    t_no_leak(t);
}

/* The mask of the router's addresses' bits (rt_ip6_local_mask) may say
 * "ours" of others, never "not ours" of one of ours: random addresses on
 * random ports, some of them off, checked against rt_ip6_is_local. */
static void test_rt_ipv6_local_mask(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    uint64_t seed = 0x6c6f63616c36ull;
    for (unsigned round = 0; round < 200; round++) {
        for (unsigned p = 0; p < 3; p++) {
            struct rt_port *pt = &t->ctx.port[p];
            pt->n6 = (uint8_t)(t_rand64(&seed) % (RT_ADDR6_MAX + 1));
            pt->mtu = t_rand64(&seed) % 4 ? 1500 : 0;
            for (unsigned k = 0; k < pt->n6; k++) {
                uint64_t hi = t_rand64(&seed), lo = t_rand64(&seed);
                memcpy(pt->a6[k].a, &hi, 8);
                memcpy(pt->a6[k].a + 8, &lo, 8);
                if (t_rand64(&seed) % 3 == 0) {
                    pt->a6[k].a[0] = 0xfe;
                    pt->a6[k].a[1] = 0x80;
                } else if (pt->a6[k].a[0] == 0xff || rt_ip6_is_ll(pt->a6[k].a)) {
                    pt->a6[k].a[0] = 0x20;
                }
            }
        }
        uint64_t mask = rt_ip6_local_mask(&t->ctx);
        for (unsigned p = 0; p < 3; p++)
            for (unsigned k = 0; k < t->ctx.port[p].n6; k++) {
                const uint8_t *a = t->ctx.port[p].a6[k].a;
                assert_true((mask >> rt_ip6_local_bit(a)) & 1);
                if (t->ctx.port[p].mtu || rt_ip6_is_ll(a))
                    assert_true(rt_ip6_is_local(&t->ctx, (uint16_t)p, a));
            }
        /* Others: random, and the ports' own with one byte changed. */
        for (unsigned i = 0; i < 64; i++) {
            uint8_t a[16];
            const struct rt_port *pt = &t->ctx.port[i % 3];
            if (pt->n6 && i % 2) {
                memcpy(a, pt->a6[i % pt->n6].a, 16);
                a[t_rand64(&seed) % 16] ^= (uint8_t)(1 + t_rand64(&seed) % 255);
            } else {
                uint64_t hi = t_rand64(&seed), lo = t_rand64(&seed);
                memcpy(a, &hi, 8);
                memcpy(a + 8, &lo, 8);
            }
            for (uint16_t in = 0; in < 3; in++)
                if (rt_ip6_is_local(&t->ctx, in, a))
                    assert_true((mask >> rt_ip6_local_bit(a)) & 1);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_ipv6_validation_table, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv6_off, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv6_forward, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv6_errors, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv6_rate_limit, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv6_echo_reply, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv6_burst_mixed, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv6_local_mask, t6_setup, t6_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
