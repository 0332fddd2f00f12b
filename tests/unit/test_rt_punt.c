/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_punt.c: control traffic (services/router/punt.c). Port
 * 0 has a host-side interface, port 2 of the fixture; port 1 has none.
 * What the router does not answer for its addresses on port 0 goes to port
 * 2 as it came (the same buffer, not a byte changed), ARP replies too once
 * learnt from; what port 2's ring brings leaves by port 0 unchanged, and a
 * frame that only claims port 2 is refused; on port 1 TCP gets a reset and
 * UDP a port unreachable.
 */
#include "test_rt_common.h"

#include "services/router/punt.h"

#define T_HOST 2u

static int t_punt_setup(void **state)
{
    t_rt_setup(state);
    struct t_rt *t = *state;
    t->ctx.port[0].cp = T_HOST;
    t->ctx.port[T_HOST].cp = 0;
    t->ctx.port[T_HOST].cp_host = true;
    t->ctx.port[T_HOST].ip = 0;
    t->ctx.port[T_HOST].plen = 32;
    return 0;
}

/* A TCP segment in @b's frame (from t_frame with a 20-byte payload). */
static void t_tcp(struct t_rt *t, ipc_buf b, uint8_t flags, uint32_t seq, uint32_t ack)
{
    uint8_t *th = t_ip(t, b) + PKT_IP_HLEN;
    memset(th, 0, PKT_TCP_HLEN);
    pkt_put16(th, 40000);
    pkt_put16(th + 2, 179);
    pkt_put32(th + 4, seq);
    pkt_put32(th + 8, ack);
    th[12] = 0x50;
    th[13] = flags;
}

static void test_rt_punt_to_host(void **state)
{
    struct t_rt *t = *state;
    uint8_t before[128];
    /* TCP, UDP and protocol 89 to the router's address on port 0: to port 2, untouched. */
    const uint8_t protos[] = {PKT_IP_PROTO_TCP, PKT_IP_PROTO_UDP, 89};
    for (unsigned i = 0; i < sizeof(protos); i++) {
        ipc_buf b = t_frame(t, 0, T_IP(10, 0, 0, 9), T_IP(10, 0, 0, 1), protos[i], 64, 40, 0);
        memcpy(before, ipc_pool_data(&t->pool, b), sizeof(before));
        t_input(t, &b, 1, 1);
        assert_int_equal(t->tx.n, 1);
        assert_int_equal(t->tx.bufs[0], b);
        assert_int_equal(ipc_pool_meta(&t->pool, b)->out_port, T_HOST);
        assert_memory_equal(ipc_pool_data(&t->pool, b), before, sizeof(before));
        t_tx_free(t);
    }
    /* OSPF's group 224.0.0.5: to port 2 from port 0; dropped as before on port 1. */
    for (uint16_t port = 0; port < 2; port++) {
        ipc_buf b = t_frame(t, port, T_IP(10, port, 0, 9), T_IP(224, 0, 0, 5), 89, 1, 40, 0);
        memcpy(ipc_pool_data(&t->pool, b), (uint8_t[6]){0x01, 0, 0x5e, 0, 0, 5}, 6);
        t_input(t, &b, 1, 1);
        assert_int_equal(t->tx.n, port == 0 ? 1u : 0u);
        if (port == 0)
            assert_int_equal(ipc_pool_meta(&t->pool, b)->out_port, T_HOST);
        t_tx_free(t);
    }
    assert_int_equal(t->ctr.c[RT_CTR_DROP_MULTICAST], 1);
    /* 224.0.1.1 is not link-local: never punted. */
    ipc_buf b = t_frame(t, 0, T_IP(10, 0, 0, 9), T_IP(224, 0, 1, 1), 17, 1, 40, 0);
    memcpy(ipc_pool_data(&t->pool, b), (uint8_t[6]){0x01, 0, 0x5e, 0, 1, 1}, 6);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_MULTICAST], 2);
    /* An echo reply (for a ping the host side sent) is punted; an echo request answered here. */
    b = t_frame(t, 0, T_IP(10, 0, 0, 9), T_IP(10, 0, 0, 1), PKT_IP_PROTO_ICMP, 64, 8, 0);
    t_ip(t, b)[PKT_IP_HLEN] = RT_ICMP_ECHO_REPLY;
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(ipc_pool_meta(&t->pool, b)->out_port, T_HOST);
    t_tx_free(t);
    assert_int_equal(t->ctr.c[RT_CTR_PUNT_TO_HOST], 5);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_LOCAL_OTHER], 0);
    assert_int_equal(t->ctr.port[T_HOST].tx_pkts, 5);
}

static void test_rt_punt_from_host(void **state)
{
    struct t_rt *t = *state;
    ipc_buf b[3];
    uint8_t before[3][64];
    for (unsigned i = 0; i < 3; i++) {
        /* Whatever a frame says of itself: the ring is port 2's. */
        b[i] = t_frame(t, (uint16_t)i, T_IP(10, 0, 0, 1), T_IP(10, 0, 0, 9), PKT_IP_PROTO_TCP, 64, 20, 0);
        memcpy(before[i], ipc_pool_data(&t->pool, b[i]), 64);
    }
    rt_punt_from_host(&t->ctx, b, 3, T_HOST, 0, &t->tx);
    assert_int_equal(t->tx.n, 3);
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(ipc_pool_meta(&t->pool, b[i])->out_port, 0);
        assert_memory_equal(ipc_pool_data(&t->pool, b[i]), before[i], 64); /* TTL 64 still */
    }
    assert_int_equal(t->ctr.c[RT_CTR_PUNT_FROM_HOST], 3);
    assert_int_equal(t->ctr.port[T_HOST].rx_pkts, 3);
    assert_int_equal(t->ctr.port[0].tx_pkts, 3);
    t_tx_free(t);
    /* A frame that claims the host side but came by another ring: refused. */
    ipc_buf x = t_frame(t, T_HOST, T_IP(10, 0, 0, 1), T_IP(10, 1, 0, 9), PKT_IP_PROTO_UDP, 64, 20, 0);
    t_input(t, &x, 1, 1);
    assert_int_equal(t->tx.n, 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_BAD_PORT], 1);
}

static void test_rt_punt_arp_reply(void **state)
{
    struct t_rt *t = *state;
    for (uint16_t port = 0; port < 2; port++) {
        ipc_buf b = t_arp(t, port, 2, t_peer_mac[port], T_IP(10, port, 0, 9), T_IP(10, port, 0, 1),
                          t->ctx.port[port].mac);
        t_input(t, &b, 1, 1);
        /* Learnt from on both ports; passed on to the host side of port 0 only. */
        assert_non_null(neigh_find(&t->neigh, T_IP(10, port, 0, 9)));
        assert_int_equal(t->tx.n, port == 0 ? 1u : 0u);
        if (port == 0)
            assert_int_equal(ipc_pool_meta(&t->pool, b)->out_port, T_HOST);
        t_tx_free(t);
    }
}

/* The checksums of the reset at @ip (IPv4, 20-byte headers) verifies. */
static void t_rst_csum_ok(const uint8_t *ip)
{
    uint8_t tail[4] = {0, PKT_IP_PROTO_TCP, 0, PKT_TCP_HLEN};
    uint32_t s = pkt_csum_add(pkt_csum_add(0, ip + PKT_IP_SRC, 8, false), tail, 4, false);
    assert_int_equal(pkt_csum_fold(pkt_csum_add(s, ip + PKT_IP_HLEN, PKT_TCP_HLEN, false)), 0);
    assert_int_equal(pkt_csum(ip, PKT_IP_HLEN), 0);
}

static void test_rt_punt_none(void **state)
{
    struct t_rt *t = *state;
    /* A SYN (seq 1000) to port 1's address: RST|ACK, ack 1001, seq 0, from 10.1.0.1:179. */
    ipc_buf b = t_frame(t, 1, T_IP(10, 1, 0, 9), T_IP(10, 1, 0, 1), PKT_IP_PROTO_TCP, 64, 20, 0);
    t_tcp(t, b, 0x02, 1000, 0);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 1);
    ipc_buf r = t->tx.bufs[0];
    const uint8_t *f = ipc_pool_data(&t->pool, r), *ip = f + PKT_ETH_HLEN, *th = ip + PKT_IP_HLEN;
    assert_int_equal(ipc_pool_meta(&t->pool, r)->out_port, 1);
    assert_memory_equal(f, t_peer_mac[1], 6);
    assert_int_equal(pkt_get32(ip + PKT_IP_SRC), T_IP(10, 1, 0, 1));
    assert_int_equal(pkt_get32(ip + PKT_IP_DST), T_IP(10, 1, 0, 9));
    assert_int_equal(ip[PKT_IP_PROTO], PKT_IP_PROTO_TCP);
    assert_int_equal(pkt_get16(th), 179);
    assert_int_equal(pkt_get16(th + 2), 40000);
    assert_int_equal(pkt_get32(th + 4), 0);
    assert_int_equal(pkt_get32(th + 8), 1001);
    assert_int_equal(th[13], 0x14);
    t_rst_csum_ok(ip);
    t_tx_free(t);
    /* An ACK (ack 5555): RST, seq 5555. A reset: nothing. */
    b = t_frame(t, 1, T_IP(10, 1, 0, 9), T_IP(10, 1, 0, 1), PKT_IP_PROTO_TCP, 64, 20, 0);
    t_tcp(t, b, 0x10, 77, 5555);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 1);
    th = ipc_pool_data(&t->pool, t->tx.bufs[0]) + PKT_ETH_HLEN + PKT_IP_HLEN;
    assert_int_equal(pkt_get32(th + 4), 5555);
    assert_int_equal(th[13], 0x04);
    t_rst_csum_ok(th - PKT_IP_HLEN);
    t_tx_free(t);
    b = t_frame(t, 1, T_IP(10, 1, 0, 9), T_IP(10, 1, 0, 1), PKT_IP_PROTO_TCP, 64, 20, 0);
    t_tcp(t, b, 0x04, 77, 0);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 0);
    assert_int_equal(t->ctr.c[RT_CTR_TCP_RST_TX], 2);
    /* UDP: port unreachable (type 3 code 3), quoting the datagram. */
    b = t_frame(t, 1, T_IP(10, 1, 0, 9), T_IP(10, 1, 0, 1), PKT_IP_PROTO_UDP, 64, 20, 0);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 1);
    ip = ipc_pool_data(&t->pool, t->tx.bufs[0]) + PKT_ETH_HLEN;
    assert_int_equal(ip[PKT_IP_PROTO], PKT_IP_PROTO_ICMP);
    assert_int_equal(ip[PKT_IP_HLEN], 3);
    assert_int_equal(ip[PKT_IP_HLEN + 1], 3);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP_PORT_UNREACH_TX], 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_LOCAL_OTHER], 4);
    assert_int_equal(t->ctr.c[RT_CTR_PUNT_TO_HOST], 0);
    t_tx_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_punt_to_host, t_punt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_punt_from_host, t_punt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_punt_arp_reply, t_punt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_punt_none, t_punt_setup, t_rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
