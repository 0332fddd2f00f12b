/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_ipv4.c: receive validation (one crafted frame per drop
 * reason, each landing in its own counter), padding trimmed, the TTL
 * decrement's incremental checksum against full recomputation on random
 * headers (with RFC 1624's 0x0000/0xFFFF corner), and forwarding: MAC
 * rewrite, egress port, bursts across destinations, MTU against GSO segment
 * size, DF refusal and fragmentation on the way out. Every test ends with
 * the pool census: no buffer leaks.
 */
#include "test_rt_common.h"

#include "services/router/frag.h"

static const uint8_t t_nh_mac[6] = {0x02, 0xaa, 0, 0, 0, 1};

static uint64_t t_ctr_total(const struct t_rt *t)
{
    uint64_t s = 0;
    for (unsigned i = RT_CTR_DROP_ETHERTYPE; i <= RT_CTR_DROP_BAD_OPTIONS; i++)
        s += t->ctr.c[i];
    return s;
}

static void t_run(struct t_rt *t, ipc_buf b, uint64_t now)
{
    t_input(t, &b, 1, now);
}

/* Route 20/8 via 10.1.0.2 on port 1 (resolved), 10.2.0/24 connected on port 2. */
static void t_routes(struct t_rt *t)
{
    struct fib_nh via = {.gw = T_IP(10, 1, 0, 2), .port = 1};
    struct fib_nh conn0 = {.gw = 0, .port = 0}, conn2 = {.gw = 0, .port = 2};
    assert_int_equal(fib_add(&t->fibw, T_IP(20, 0, 0, 0), 8, &via), 0);
    assert_int_equal(fib_add(&t->fibw, T_IP(10, 0, 0, 0), 24, &conn0), 0);
    assert_int_equal(fib_add(&t->fibw, T_IP(10, 2, 0, 0), 24, &conn2), 0);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 0, 2), t_nh_mac, 1), 0);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 0, 0, 5), t_peer_mac[0], 0), 0);
}

enum t_mut {
    M_ETHERTYPE,
    M_VLAN,
    M_RUNT,
    M_BAD_PORT,
    M_L2_OTHER,
    M_VERSION,
    M_IHL4,
    M_IHL_BEYOND,
    M_CSUM,
    M_TOTLEN_BIG,
    M_TOTLEN_SMALL,
    M_SRC,
    M_DST,
    M_L2_BCAST,
    M_TTL,
};

struct t_case {
    const char *name;
    enum t_mut mut;
    uint32_t v;
    enum rt_ctr want;
    bool icmp; /* an ICMP error is expected on tx */
};

static const struct t_case t_cases[] = {
    {"ipv6 ethertype", M_ETHERTYPE, 0x86dd, RT_CTR_DROP_ETHERTYPE, false},
    {"lldp ethertype", M_ETHERTYPE, 0x88cc, RT_CTR_DROP_ETHERTYPE, false},
    {"802.1Q tag", M_VLAN, 0x8100, RT_CTR_DROP_VLAN, false},
    {"802.1ad tag", M_VLAN, 0x88a8, RT_CTR_DROP_VLAN, false},
    {"runt: 30 bytes", M_RUNT, 30, RT_CTR_DROP_RUNT, false},
    {"runt: 10 bytes", M_RUNT, 10, RT_CTR_DROP_RUNT, false},
    {"unconfigured port", M_BAD_PORT, 7, RT_CTR_DROP_BAD_PORT, false},
    {"unicast MAC of another host", M_L2_OTHER, 0, RT_CTR_DROP_L2_OTHER_HOST, false},
    {"version 6", M_VERSION, 0x65, RT_CTR_DROP_BAD_VERSION, false},
    {"version 0", M_VERSION, 0x05, RT_CTR_DROP_BAD_VERSION, false},
    {"IHL 4", M_IHL4, 0x44, RT_CTR_DROP_BAD_IHL, false},
    {"IHL 0", M_IHL4, 0x40, RT_CTR_DROP_BAD_IHL, false},
    {"IHL 15 beyond the frame", M_IHL_BEYOND, 0x4f, RT_CTR_DROP_BAD_IHL, false},
    {"bad checksum", M_CSUM, 0, RT_CTR_DROP_BAD_CHECKSUM, false},
    {"total length > frame", M_TOTLEN_BIG, 0, RT_CTR_DROP_BAD_TOTLEN, false},
    {"total length < header", M_TOTLEN_SMALL, 19, RT_CTR_DROP_BAD_TOTLEN, false},
    {"source 0.0.0.0", M_SRC, T_IP(0, 0, 0, 0), RT_CTR_DROP_MARTIAN_SRC, false},
    {"source 0/8", M_SRC, T_IP(0, 1, 2, 3), RT_CTR_DROP_MARTIAN_SRC, false},
    {"source 127/8", M_SRC, T_IP(127, 0, 0, 1), RT_CTR_DROP_MARTIAN_SRC, false},
    {"source 224/4", M_SRC, T_IP(224, 0, 0, 5), RT_CTR_DROP_MARTIAN_SRC, false},
    {"source 239.255.255.255", M_SRC, T_IP(239, 255, 255, 255), RT_CTR_DROP_MARTIAN_SRC, false},
    {"source 240/4", M_SRC, T_IP(240, 1, 1, 1), RT_CTR_DROP_MARTIAN_SRC, false},
    {"source 255.255.255.255", M_SRC, T_IP(255, 255, 255, 255), RT_CTR_DROP_MARTIAN_SRC, false},
    {"destination 0/8", M_DST, T_IP(0, 0, 0, 9), RT_CTR_DROP_MARTIAN_DST, false},
    {"destination 127/8", M_DST, T_IP(127, 1, 1, 1), RT_CTR_DROP_MARTIAN_DST, false},
    {"destination 240/4", M_DST, T_IP(250, 1, 1, 1), RT_CTR_DROP_MARTIAN_DST, false},
    {"limited broadcast", M_DST, T_IP(255, 255, 255, 255), RT_CTR_DROP_LIMITED_BCAST, false},
    {"multicast destination", M_DST, T_IP(224, 0, 0, 251), RT_CTR_DROP_MULTICAST, false},
    {"directed broadcast", M_DST, T_IP(10, 2, 0, 255), RT_CTR_DROP_DIRECTED_BCAST, false},
    {"IP unicast in L2 broadcast", M_L2_BCAST, 0, RT_CTR_DROP_L2_BCAST_UNICAST, false},
    {"TTL 1", M_TTL, 1, RT_CTR_DROP_TTL, true},
    {"TTL 0", M_TTL, 0, RT_CTR_DROP_TTL, true},
    {"no route", M_DST, T_IP(99, 1, 1, 1), RT_CTR_DROP_NO_ROUTE, true},
};

static void test_rt_ipv4_validation_table(void **state)
{
    struct t_rt *t = *state;
    t_routes(t);
    for (unsigned i = 0; i < sizeof(t_cases) / sizeof(t_cases[0]); i++) {
        const struct t_case *c = &t_cases[i];
        ipc_buf b = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), 17, 64, 100, 0);
        struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
        uint8_t *f = ipc_pool_data(&t->pool, b);
        uint8_t *ip = f + PKT_ETH_HLEN;
        switch (c->mut) {
        case M_ETHERTYPE:
        case M_VLAN:
            pkt_put16(f + 12, (uint16_t)c->v);
            break;
        case M_RUNT:
            pkt_set_len(m, c->v);
            break;
        case M_BAD_PORT:
            m->in_port = (uint16_t)c->v;
            break;
        case M_L2_OTHER:
            f[5] ^= 0x10;
            break;
        case M_VERSION:
        case M_IHL4:
        case M_IHL_BEYOND:
            ip[0] = (uint8_t)c->v;
            t_ip_fix_csum(ip);
            if (c->mut == M_IHL_BEYOND)
                pkt_set_len(m, PKT_ETH_HLEN + 40);
            break;
        case M_CSUM:
            ip[PKT_IP_CSUM + 1] ^= 1;
            break;
        case M_TOTLEN_BIG:
            pkt_put16(ip + PKT_IP_TOTLEN, 121);
            t_ip_fix_csum(ip);
            break;
        case M_TOTLEN_SMALL:
            pkt_put16(ip + PKT_IP_TOTLEN, (uint16_t)c->v);
            t_ip_fix_csum(ip);
            break;
        case M_SRC:
            pkt_put32(ip + PKT_IP_SRC, c->v);
            t_ip_fix_csum(ip);
            break;
        case M_DST:
            pkt_put32(ip + PKT_IP_DST, c->v);
            t_ip_fix_csum(ip);
            break;
        case M_L2_BCAST:
            memset(f, 0xff, 6);
            break;
        case M_TTL:
            ip[PKT_IP_TTL] = (uint8_t)c->v;
            t_ip_fix_csum(ip);
            break;
        }
        uint64_t before = t->ctr.c[c->want], total = t_ctr_total(t);
        t_run(t, b, 1000);
        if (t->ctr.c[c->want] != before + 1)
            fail_msg("%s: %s not counted", c->name, rt_ctr_names[c->want]);
        if (t_ctr_total(t) != total + 1)
            fail_msg("%s: counted more than one drop reason", c->name);
        assert_int_equal(t->ctr.c[RT_CTR_FORWARDED], 0);
        if (t->tx.n != (c->icmp ? 1u : 0u))
            fail_msg("%s: %u packets out, expected %u", c->name, t->tx.n, c->icmp ? 1u : 0u);
        t_tx_free(t);
        t_no_leak(t);
    }
    /* Every counter has a printable name. */
    for (unsigned i = 0; i < RT_CTR_MAX; i++)
        assert_non_null(rt_ctr_names[i]);
}

static void test_rt_ipv4_padding_trimmed(void **state)
{
    struct t_rt *t = *state;
    ipc_buf b = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), 17, 64, 4, 0);
    struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    assert_int_equal(m->len, PKT_ETH_ZLEN);
    enum rt_ctr why;
    assert_int_equal(rt_ipv4_validate(&t->ctx, b, &why), RT_V_FORWARD);
    assert_int_equal(m->len, PKT_ETH_HLEN + PKT_IP_HLEN + 4);
    ipc_pool_free(&t->pool, &b, 1);
    /* A local address and ARP are recognised as such. */
    b = t_frame(t, 1, T_IP(10, 1, 0, 9), T_IP(10, 2, 0, 1), 1, 64, 8, 0);
    assert_int_equal(rt_ipv4_validate(&t->ctx, b, &why), RT_V_LOCAL);
    pkt_put16(ipc_pool_data(&t->pool, b) + 12, PKT_ETH_P_ARP);
    assert_int_equal(rt_ipv4_validate(&t->ctx, b, &why), RT_V_ARP);
    ipc_pool_free(&t->pool, &b, 1);
}

/* The header checksum after rt_ip_ttl_dec is bit for bit the recomputed one. */
static void t_check_ttl_dec(uint8_t *ip, unsigned ihl)
{
    uint8_t ttl = ip[PKT_IP_TTL];
    rt_ip_ttl_dec(ip);
    assert_int_equal(ip[PKT_IP_TTL], ttl - 1);
    uint16_t inc = pkt_get16(ip + PKT_IP_CSUM);
    pkt_put16(ip + PKT_IP_CSUM, 0);
    uint16_t full = pkt_csum(ip, ihl);
    if (inc != full)
        fail_msg("ttl %u: incremental %04x, recomputed %04x", ttl, inc, full);
    pkt_put16(ip + PKT_IP_CSUM, inc);
    assert_int_equal(pkt_csum(ip, ihl), 0);
}

static void test_rt_ipv4_ttl_checksum_random(void **state)
{
    uint64_t s = 0xfeedface;
    uint8_t ip[60];
    unsigned corner = 0;
    for (unsigned n = 0; n < 1000000; n++) {
        unsigned ihl = 20 + 4 * (unsigned)(t_rand64(&s) % 11);
        for (unsigned i = 0; i < ihl; i++)
            ip[i] = (uint8_t)t_rand64(&s);
        ip[0] = (uint8_t)(0x40 | ihl / 4);
        ip[PKT_IP_TTL] = (uint8_t)(2 + t_rand64(&s) % 254);
        pkt_put16(ip + PKT_IP_CSUM, 0);
        if (n % 4 == 0) {
            /* RFC 1624 §3: make the result's sum 0xFFFF (checksum 0x0000), using ID as slack. */
            ip[PKT_IP_TTL]--;
            pkt_put16(ip + PKT_IP_ID, 0);
            uint16_t c = pkt_csum(ip, ihl);
            pkt_put16(ip + PKT_IP_ID, c);
            ip[PKT_IP_TTL]++;
            corner++;
        }
        pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, ihl));
        t_check_ttl_dec(ip, ihl);
        if (n % 4 == 0)
            assert_int_equal(pkt_get16(ip + PKT_IP_CSUM), 0x0000);
    }
    /* And the other corner: a checksum field of 0x0000 before the update. */
    memset(ip, 0, 20);
    ip[0] = 0x45;
    ip[PKT_IP_TTL] = 9;
    pkt_put16(ip + PKT_IP_ID, pkt_csum(ip, 20));
    assert_int_equal(pkt_csum(ip, 20), 0);
    t_check_ttl_dec(ip, 20);
    assert_true(corner > 0);
}

static void test_rt_ipv4_forward(void **state)
{
    struct t_rt *t = *state;
    t_routes(t);
    ipc_buf in[32];
    for (unsigned i = 0; i < 32; i++)
        in[i] = t_frame(t, 0, T_IP(10, 0, 0, 5), i % 4 < 2 ? T_IP(20, 1, 2, 3) : T_IP(20, 9, 9, 9), 17,
                        (uint8_t)(64 - i), 100 + i, PKT_IP_DF);
    t_input(t, in, 32, 1000);
    assert_int_equal(t->tx.n, 32);
    assert_int_equal(t->ctr.c[RT_CTR_FORWARDED], 32);
    for (unsigned i = 0; i < 32; i++) {
        ipc_buf b = t->tx.bufs[i];
        struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
        uint8_t *f = ipc_pool_data(&t->pool, b);
        assert_int_equal(m->out_port, 1);
        assert_memory_equal(f, t_nh_mac, 6);
        assert_memory_equal(f + 6, t->ctx.port[1].mac, 6);
        assert_int_equal(f[PKT_ETH_HLEN + PKT_IP_TTL], 63 - i);
        assert_int_equal(pkt_csum(f + PKT_ETH_HLEN, 20), 0);
        assert_int_equal(m->len, PKT_ETH_HLEN + PKT_IP_HLEN + 100 + i);
    }
    assert_int_equal(t->ctr.port[0].rx_pkts, 32);
    assert_int_equal(t->ctr.port[1].tx_pkts, 32);
    t_tx_free(t);
    /* A connected destination uses the destination as next hop. */
    ipc_buf b = t_frame(t, 1, T_IP(20, 1, 1, 1), T_IP(10, 0, 0, 5), 6, 30, 40, 0);
    t_run(t, b, 1000);
    assert_int_equal(t->tx.n, 1);
    assert_memory_equal(ipc_pool_data(&t->pool, t->tx.bufs[0]), t_peer_mac[0], 6);
    assert_int_equal(ipc_pool_meta(&t->pool, t->tx.bufs[0])->out_port, 0);
}

static void test_rt_ipv4_mtu_df_gso(void **state)
{
    struct t_rt *t = *state;
    t_routes(t);
    t->ctx.port[1].mtu = 1000;
    /* DF and too big: ICMP fragmentation needed carrying the MTU. */
    ipc_buf b = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), 17, 64, 1200, PKT_IP_DF);
    t_run(t, b, 1000);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_FRAG_NEEDED], 1);
    assert_int_equal(t->tx.n, 1);
    uint8_t *ic = ipc_pool_data(&t->pool, t->tx.bufs[0]) + PKT_ETH_HLEN + PKT_IP_HLEN;
    assert_int_equal(ic[0], RT_ICMP_UNREACH);
    assert_int_equal(ic[1], RT_ICMP_UNREACH_NEEDFRAG);
    assert_int_equal(pkt_get16(ic + 6), 1000);
    t_tx_free(t);
    /* No DF: fragmented, each piece forwarded and rewritten. */
    b = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), 17, 64, 1200, 0);
    t_run(t, b, 1000);
    assert_int_equal(t->tx.n, 2);
    assert_int_equal(t->ctr.c[RT_CTR_FRAG_CREATED], 2);
    for (unsigned i = 0; i < 2; i++) {
        uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[i]);
        assert_memory_equal(f, t_nh_mac, 6);
        assert_int_equal(f[PKT_ETH_HLEN + PKT_IP_TTL], 63);
        assert_int_equal(pkt_csum(f + PKT_ETH_HLEN, 20), 0);
        assert_true(pkt_get16(f + PKT_ETH_HLEN + PKT_IP_TOTLEN) <= 1000);
    }
    t_tx_free(t);
    /* GSO: judged by the segment size, not the whole chain; only frame 1 is touched. */
    t->ctx.port[1].mtu = 1500;
    ipc_buf head;
    assert_int_equal(ipc_pool_alloc_chain(&t->pool, 14 + 20 + 32 + 3 * 1448, &head), 0);
    ipc_buf tmpl = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), 6, 64, 32 + 3 * 1448, PKT_IP_DF);
    memcpy(ipc_pool_data(&t->pool, head), ipc_pool_data(&t->pool, tmpl), 14 + 20 + 32);
    ipc_pool_free(&t->pool, &tmpl, 1);
    struct ipc_meta *hm = ipc_pool_meta(&t->pool, head);
    hm->in_port = 0;
    hm->vnet.gso_type = 1; /* VIRTIO_NET_HDR_GSO_TCPV4 */
    hm->vnet.gso_size = 1448;
    hm->vnet.hdr_len = 14 + 20 + 32;
    ipc_buf second = hm->next;
    uint8_t before = ipc_pool_data(&t->pool, second)[0];
    t_run(t, head, 1000);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(t->tx.bufs[0], head);
    assert_int_equal(ipc_pool_data(&t->pool, second)[0], before);
    assert_int_equal(hm->pkt_len, 14 + 20 + 32 + 3 * 1448);
    t_tx_free(t);
    /* The same chain towards a 1400-byte MTU: segments too big, DF: frag needed. */
    t->ctx.port[1].mtu = 1400;
    assert_int_equal(ipc_pool_alloc_chain(&t->pool, 14 + 20 + 32 + 3 * 1448, &head), 0);
    tmpl = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), 6, 64, 32 + 3 * 1448, PKT_IP_DF);
    memcpy(ipc_pool_data(&t->pool, head), ipc_pool_data(&t->pool, tmpl), 14 + 20 + 32);
    ipc_pool_free(&t->pool, &tmpl, 1);
    hm = ipc_pool_meta(&t->pool, head);
    hm->in_port = 0;
    hm->vnet.gso_type = 1;
    hm->vnet.gso_size = 1448;
    hm->vnet.hdr_len = 14 + 20 + 32;
    t_run(t, head, 1000);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_FRAG_NEEDED], 2);
    assert_int_equal(t->tx.n, 1); /* the ICMP error */
    assert_int_equal(pkt_get16(ipc_pool_data(&t->pool, t->tx.bufs[0]) + PKT_ETH_HLEN + PKT_IP_HLEN + 6), 1400);
}

/*
 * The two drops no traffic from outside can reach (tests/integ/
 * router_counters.sh shows they stay 0 there): a next hop on a port the
 * router does not have (only a corrupted or foreign FIB holds one), and an
 * output burst that is full with no flush to empty it (the router process
 * always gives its burst one).
 */
static void test_rt_ipv4_unreachable_drops(void **state)
{
    struct t_rt *t = *state;
    t_routes(t);
    struct fib_nh nowhere = {.gw = 0, .port = 7}; /* nports is 3 */
    assert_int_equal(fib_add(&t->fibw, T_IP(30, 0, 0, 0), 8, &nowhere), 0);
    t_run(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(30, 1, 2, 3), 17, 64, 50, 0), 1000);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_BAD_NEXTHOP], 1);
    assert_int_equal(t->tx.n, 0);

    t->tx.cap = 2; /* and no flush */
    ipc_buf in[3];
    for (unsigned i = 0; i < 3; i++)
        in[i] = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), 17, 64, 60, 0);
    t_input(t, in, 3, 1000);
    assert_int_equal(t->tx.n, 2);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_TX_FULL], 1);
    t_tx_free(t);
    t->tx.cap = T_TXCAP;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_ipv4_validation_table, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv4_padding_trimmed, t_rt_setup, t_rt_teardown),
        cmocka_unit_test(test_rt_ipv4_ttl_checksum_random),
        cmocka_unit_test_setup_teardown(test_rt_ipv4_forward, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv4_mtu_df_gso, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipv4_unreachable_drops, t_rt_setup, t_rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
