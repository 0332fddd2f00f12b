/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_gso.c: segmentation and checksums in software for
 * ports without offloads (services/router/gso.c). A TCPv4 and a UDP GSO
 * packet, chained the way the TAP driver receives them with a partial
 * checksum, become single-frame segments whose IP and L4 checksums verify,
 * whose sequence numbers, IDs, lengths and flags are right, and whose
 * payloads put together give the original back; a partial checksum alone
 * is finished in place; what cannot be segmented (UFO, no gso_size, a
 * segment larger than a frame, too many segments, an empty pool, a chain
 * without GSO) is dropped and counted; on the forwarding path only a port
 * marked sw_offload segments. From a port in generic XDP mode (rx_partial),
 * a TCP packet longer than its MTU with no GSO description (a TSO frame)
 * gets one: segmented for an AF_XDP egress, whole with its description for
 * a TAP one; oversize UDP meets the MTU rules; small packets' partial
 * checksums are completed, good and bad ones kept. No buffer leaks.
 */
#include "test_rt_common.h"

#include "services/router/gso.h"

#define T_TCP_OPTS 12u /* timestamps, as Linux sends them */

struct t_gso {
    uint8_t *flat; /* the packet as one image */
    uint32_t len, hlen, payload;
};

/*
 * A GSO packet: Ethernet, IPv4, TCP (with options) or UDP, @payload bytes,
 * in a chain of frames, the L4 checksum field holding the pseudo-header sum
 * as a sender with checksum offload leaves it (NEEDS_CSUM).
 */
static ipc_buf t_gso_packet(struct t_rt *t, unsigned proto, uint32_t payload, uint16_t mss, uint8_t tcp_flags,
                            struct t_gso *g)
{
    unsigned l4h = proto == 6 ? 20 + T_TCP_OPTS : 8;
    g->hlen = 14 + 20 + l4h;
    g->payload = payload;
    g->len = g->hlen + payload;
    g->flat = calloc(1, g->len);
    assert_non_null(g->flat);
    uint8_t *f = g->flat, *ip = f + 14, *l4 = ip + 20;
    memcpy(f, t->ctx.port[0].mac, 6);
    memcpy(f + 6, t_peer_mac[0], 6);
    pkt_put16(f + 12, PKT_ETH_P_IP);
    ip[0] = 0x45;
    pkt_put16(ip + PKT_IP_TOTLEN, (uint16_t)(g->len - 14 > 65535 ? 65535 : g->len - 14));
    pkt_put16(ip + PKT_IP_ID, 0xfff0); /* wraps within the segments */
    pkt_put16(ip + PKT_IP_FRAG, PKT_IP_DF);
    ip[PKT_IP_TTL] = 64;
    ip[PKT_IP_PROTO] = (uint8_t)proto;
    pkt_put32(ip + PKT_IP_SRC, T_IP(10, 0, 0, 5));
    pkt_put32(ip + PKT_IP_DST, T_IP(20, 0, 0, 9));
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, 20));
    pkt_put16(l4, 40000);
    pkt_put16(l4 + 2, 5201);
    uint8_t ph[12];
    memcpy(ph, ip + PKT_IP_SRC, 8);
    ph[8] = 0;
    ph[9] = (uint8_t)proto;
    pkt_put16(ph + 10, (uint16_t)(g->len - 34));
    uint16_t partial = (uint16_t)~pkt_csum_fold(pkt_csum_add(0, ph, 12, false));
    if (proto == 6) {
        pkt_put32(l4 + 4, 0xfffff000u); /* wraps within the segments */
        pkt_put32(l4 + 8, 77);
        l4[12] = (uint8_t)((20 + T_TCP_OPTS) / 4 << 4);
        l4[13] = tcp_flags;
        pkt_put16(l4 + 14, 512);
        l4[20] = 1, l4[21] = 1, l4[22] = 8, l4[23] = 10; /* NOP NOP TS */
        pkt_put16(l4 + 16, partial);
    } else {
        pkt_put16(l4 + 4, (uint16_t)(8 + payload));
        pkt_put16(l4 + 6, partial);
    }
    for (uint32_t i = 0; i < payload; i++)
        f[g->hlen + i] = (uint8_t)(i * 13 + (i >> 9));
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc_chain(&t->pool, g->len, &b), 0);
    uint32_t off = 0;
    for (ipc_buf x = b; x != IPC_BUF_NONE; x = ipc_pool_meta(&t->pool, x)->next) {
        struct ipc_meta *m = ipc_pool_meta(&t->pool, x);
        memcpy(ipc_pool_data(&t->pool, x), f + off, m->len);
        off += m->len;
    }
    struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    m->in_port = 0;
    m->out_port = 1;
    m->mark = 0xabc;
    m->vnet = (struct ipc_vnet){.flags = RT_VNET_F_NEEDS_CSUM,
                                .gso_type = (uint8_t)(proto == 6 ? RT_VNET_GSO_TCPV4 : RT_VNET_GSO_UDP_L4),
                                .hdr_len = (uint16_t)g->hlen,
                                .gso_size = mss,
                                .csum_start = 34,
                                .csum_offset = (uint16_t)(proto == 6 ? 16 : 6)};
    return b;
}

/* The L4 checksum of a single-frame IPv4 packet verifies. */
static bool t_l4_ok(const uint8_t *ip)
{
    unsigned ihl = (ip[0] & 15u) * 4;
    uint32_t l4len = pkt_get16(ip + PKT_IP_TOTLEN) - ihl;
    uint8_t ph[12];
    memcpy(ph, ip + PKT_IP_SRC, 8);
    ph[8] = 0;
    ph[9] = ip[PKT_IP_PROTO];
    pkt_put16(ph + 10, (uint16_t)l4len);
    return pkt_csum_fold(pkt_csum_add(pkt_csum_add(0, ph, 12, false), ip + ihl, l4len, false)) == 0;
}

static void t_check_segments(struct t_rt *t, const ipc_buf *seg, unsigned n, const struct t_gso *g, unsigned proto,
                             uint16_t mss)
{
    const uint8_t *oip = g->flat + 14, *ol4 = oip + 20;
    unsigned l4h = (unsigned)(g->hlen - 34);
    assert_int_equal(n, (g->payload + mss - 1) / mss);
    uint32_t at = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct ipc_meta *m = ipc_pool_meta(&t->pool, seg[i]);
        const uint8_t *f = ipc_pool_data(&t->pool, seg[i]), *ip = f + 14, *l4 = ip + 20;
        uint32_t want = i + 1 < n ? mss : g->payload - at;
        assert_int_equal(m->next, IPC_BUF_NONE);
        assert_int_equal(m->len, g->hlen + want);
        assert_int_equal(m->vnet.gso_type, 0);
        assert_int_equal(m->vnet.flags, 0);
        assert_int_equal(m->in_port, 0);
        assert_int_equal(m->out_port, 1);
        assert_int_equal(m->mark, 0xabc);
        assert_memory_equal(f, g->flat, 14);
        assert_int_equal(pkt_get16(ip + PKT_IP_TOTLEN), 20 + l4h + want);
        assert_int_equal(pkt_get16(ip + PKT_IP_ID), (uint16_t)(0xfff0 + i));
        assert_int_equal(pkt_csum(ip, 20), 0);
        assert_true(t_l4_ok(ip));
        assert_memory_equal(l4, ol4, 4); /* ports */
        if (proto == 6) {
            assert_int_equal(pkt_get32(l4 + 4), (uint32_t)(0xfffff000u + at));
            assert_memory_equal(l4 + 8, ol4 + 8, 4); /* ack */
            assert_memory_equal(l4 + 20, ol4 + 20, T_TCP_OPTS);
            uint8_t fl = ol4[13];
            if (i + 1 < n)
                fl &= (uint8_t)~0x09; /* FIN, PSH: the last segment's */
            if (i > 0)
                fl &= (uint8_t)~0x80; /* CWR: the first's */
            assert_int_equal(l4[13], fl);
        } else {
            assert_int_equal(pkt_get16(l4 + 4), 8 + want);
        }
        assert_memory_equal(f + g->hlen, g->flat + g->hlen + at, want);
        at += want;
    }
    assert_int_equal(at, g->payload);
}

static void test_rt_gso_tcp(void **state)
{
    struct t_rt *t = *state;
    static const struct {
        uint32_t payload;
        uint16_t mss;
    } cases[] = {{10000, 1448}, {1448 * 3, 1448}, {65000, 1448}, {1, 1448}, {4000, 536}, {1449, 1448}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct t_gso g;
        ipc_buf b = t_gso_packet(t, 6, cases[c].payload, cases[c].mss, 0x80 | 0x10 | 0x08 | 0x01, &g);
        ipc_buf seg[RT_GSO_MAX];
        unsigned n = rt_gso(&t->ctx, b, seg, RT_GSO_MAX);
        t_check_segments(t, seg, n, &g, 6, cases[c].mss);
        ipc_pool_free(&t->pool, seg, n);
        free(g.flat);
    }
    assert_int_equal(t->ctr.c[RT_CTR_GSO_SW_PKTS], 6);
    t_no_leak(t);
}

static void test_rt_gso_udp(void **state)
{
    struct t_rt *t = *state;
    struct t_gso g;
    ipc_buf b = t_gso_packet(t, 17, 12000, 1400, 0, &g);
    ipc_buf seg[RT_GSO_MAX];
    unsigned n = rt_gso(&t->ctx, b, seg, RT_GSO_MAX);
    t_check_segments(t, seg, n, &g, 17, 1400);
    assert_int_equal(t->ctr.c[RT_CTR_GSO_SW_SEGS], n);
    ipc_pool_free(&t->pool, seg, n);
    free(g.flat);
    t_no_leak(t);
}

/* A partial checksum and no segmentation: finished in place. */
static void test_rt_gso_csum_only(void **state)
{
    struct t_rt *t = *state;
    for (unsigned proto = 6; proto <= 17; proto += 11) {
        struct t_gso g;
        ipc_buf b = t_gso_packet(t, proto, 1000, 0, 0x18, &g);
        struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
        assert_int_equal(m->next, IPC_BUF_NONE);
        m->vnet.gso_type = RT_VNET_GSO_NONE;
        assert_false(t_l4_ok(ipc_pool_data(&t->pool, b) + 14));
        ipc_buf out;
        assert_int_equal(rt_gso(&t->ctx, b, &out, 1), 1);
        assert_int_equal(out, b);
        assert_true(t_l4_ok(ipc_pool_data(&t->pool, b) + 14));
        assert_int_equal(m->vnet.flags, 0);
        ipc_pool_free(&t->pool, &b, 1);
        free(g.flat);
    }
    assert_int_equal(t->ctr.c[RT_CTR_CSUM_SW], 2);
    t_no_leak(t);
}

/* What cannot be done is dropped and counted, and nothing leaks. */
static void test_rt_gso_refused(void **state)
{
    struct t_rt *t = *state;
    ipc_buf seg[RT_GSO_MAX];
    struct t_gso g;
    uint64_t bad = 0;

    ipc_buf b = t_gso_packet(t, 17, 5000, 1400, 0, &g); /* UFO */
    ipc_pool_meta(&t->pool, b)->vnet.gso_type = RT_VNET_GSO_UDP;
    assert_int_equal(rt_gso(&t->ctx, b, seg, RT_GSO_MAX), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_GSO_BAD], ++bad);
    free(g.flat);

    b = t_gso_packet(t, 6, 5000, 0, 0x10, &g); /* no gso_size */
    assert_int_equal(rt_gso(&t->ctx, b, seg, RT_GSO_MAX), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_GSO_BAD], ++bad);
    free(g.flat);

    b = t_gso_packet(t, 6, 9000, 3000, 0x10, &g); /* a segment larger than a frame */
    assert_int_equal(rt_gso(&t->ctx, b, seg, RT_GSO_MAX), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_GSO_BAD], ++bad);
    free(g.flat);

    b = t_gso_packet(t, 6, 5000, 1000, 0x10, &g); /* more segments than asked for */
    assert_int_equal(rt_gso(&t->ctx, b, seg, 4), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_GSO_BAD], ++bad);
    free(g.flat);

    b = t_gso_packet(t, 6, 5000, 1448, 0x10, &g); /* TCP type on a UDP packet */
    ipc_pool_meta(&t->pool, b)->vnet.gso_type = RT_VNET_GSO_UDP_L4;
    assert_int_equal(rt_gso(&t->ctx, b, seg, RT_GSO_MAX), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_GSO_BAD], ++bad);
    free(g.flat);

    b = t_gso_packet(t, 6, 5000, 1448, 0x10, &g); /* a TCP header shorter than 20 bytes */
    ipc_pool_data(&t->pool, b)[14 + 20 + 12] = 4 << 4;
    assert_int_equal(rt_gso(&t->ctx, b, seg, RT_GSO_MAX), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_GSO_BAD], ++bad);
    free(g.flat);

    b = t_gso_packet(t, 6, 5000, 1448, 0x10, &g); /* a chain without GSO */
    ipc_pool_meta(&t->pool, b)->vnet.gso_type = RT_VNET_GSO_NONE;
    assert_int_equal(rt_gso(&t->ctx, b, seg, RT_GSO_MAX), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_GSO_BAD], ++bad);
    free(g.flat);

    /* An empty pool: nothing half made. */
    b = t_gso_packet(t, 6, 20000, 1448, 0x10, &g);
    ipc_buf *hog = malloc(T_NBUFS * sizeof(*hog));
    assert_non_null(hog);
    uint32_t nh = ipc_pool_alloc(&t->pool, hog, T_NBUFS - 5);
    assert_int_equal(rt_gso(&t->ctx, b, seg, RT_GSO_MAX), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_NO_BUFS], 1);
    ipc_pool_free(&t->pool, hog, nh);
    free(hog);
    free(g.flat);
    assert_int_equal(t->ctr.c[RT_CTR_GSO_SW_PKTS], 0);
    t_no_leak(t);
}

static const uint8_t t_nh_mac[6] = {0x02, 0xaa, 0, 0, 0, 1};

/* 20/8 via 10.1.0.2 on port 1, whose MAC is known. */
static void t_route_to_port1(struct t_rt *t)
{
    struct fib_nh via = {.gw = T_IP(10, 1, 0, 2), .port = 1};
    assert_int_equal(fib_add(&t->fibw, T_IP(20, 0, 0, 0), 8, &via), 0);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 0, 2), t_nh_mac, 1), 0);
}

/* On the forwarding path, only a port that needs it segments. */
static void test_rt_gso_forward_path(void **state)
{
    struct t_rt *t = *state;
    t_route_to_port1(t);
    struct t_gso g;

    ipc_buf b = t_gso_packet(t, 6, 30000, 1448, 0x10, &g);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 1); /* a port with offloads (TAP): the chain as it came */
    assert_int_equal(t->tx.bufs[0], b);
    assert_int_equal(ipc_pool_meta(&t->pool, b)->vnet.gso_type, RT_VNET_GSO_TCPV4);
    t_tx_free(t);
    free(g.flat);

    t->ctx.port[1].sw_offload = true;
    b = t_gso_packet(t, 6, 30000, 1448, 0x10, &g);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 21);
    for (unsigned i = 0; i < t->tx.n; i++) {
        const uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[i]);
        assert_memory_equal(f, t_nh_mac, 6);
        assert_int_equal(f[14 + PKT_IP_TTL], 63);
        assert_int_equal(pkt_csum(f + 14, 20), 0);
        assert_true(t_l4_ok(f + 14));
        assert_true(ipc_pool_meta(&t->pool, t->tx.bufs[i])->len <= 14 + 1500);
    }
    t_tx_free(t);
    free(g.flat);
}

/* A TSO frame from a generic-XDP port: no GSO description, a partial checksum. */
static void test_rt_gso_rx_aggregate(void **state)
{
    struct t_rt *t = *state;
    t_route_to_port1(t);
    t->ctx.port[0].rx_partial = true;
    struct t_gso g;

    /* To a TAP: whole, described as the TAP driver would, MSS from the MTU. */
    ipc_buf b = t_gso_packet(t, 6, 30000, 0, 0x10, &g);
    ipc_pool_meta(&t->pool, b)->vnet = (struct ipc_vnet){0};
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 1);
    const struct ipc_meta *m = ipc_pool_meta(&t->pool, t->tx.bufs[0]);
    assert_int_equal(m->vnet.gso_type, RT_VNET_GSO_TCPV4);
    assert_int_equal(m->vnet.gso_size, 1500 - 20 - 20 - T_TCP_OPTS);
    assert_int_equal(m->vnet.hdr_len, g.hlen);
    assert_int_equal(m->vnet.flags, RT_VNET_F_NEEDS_CSUM);
    assert_int_equal(m->vnet.csum_start, 34);
    assert_int_equal(m->vnet.csum_offset, 16);
    assert_memory_equal(ipc_pool_data(&t->pool, t->tx.bufs[0]) + 34 + 16, g.flat + 34 + 16, 2); /* partial */
    assert_int_equal(t->ctr.c[RT_CTR_RX_AGG], 1);
    t_tx_free(t);
    free(g.flat);

    /* To an AF_XDP port: segments with complete checksums. */
    t->ctx.port[1].sw_offload = true;
    b = t_gso_packet(t, 6, 30000, 0, 0x10, &g);
    ipc_pool_meta(&t->pool, b)->vnet = (struct ipc_vnet){0};
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, (30000 + 1447) / 1448);
    for (unsigned i = 0; i < t->tx.n; i++) {
        const uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[i]);
        assert_int_equal(pkt_csum(f + 14, 20), 0);
        assert_true(t_l4_ok(f + 14));
        assert_true(ipc_pool_meta(&t->pool, t->tx.bufs[i])->len <= 14 + 1500);
    }
    assert_int_equal(t->ctr.c[RT_CTR_RX_AGG], 2);
    t_tx_free(t);
    free(g.flat);

    /* Oversize UDP with DF: no segments made up, the MTU rules. */
    b = t_gso_packet(t, 17, 3000, 0, 0, &g);
    ipc_pool_meta(&t->pool, b)->vnet = (struct ipc_vnet){0};
    uint64_t fn = t->ctr.c[RT_CTR_DROP_FRAG_NEEDED];
    t_input(t, &b, 1, 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_FRAG_NEEDED], fn + 1);
    assert_int_equal(t->ctr.c[RT_CTR_RX_AGG], 2);
    t_tx_free(t);
    free(g.flat);

    /* Small: a partial checksum completed; a good one and a bad one kept. */
    for (int k = 0; k < 3; k++) {
        b = t_gso_packet(t, k == 1 ? 17 : 6, 1000, 0, 0x18, &g);
        uint8_t *f = ipc_pool_data(&t->pool, b);
        ipc_pool_meta(&t->pool, b)->vnet = (struct ipc_vnet){0};
        if (k == 2) {
            f[60] ^= 1; /* a bad one: the field no longer the partial sum's */
            f[34 + 16] ^= 0x40;
        }
        t_input(t, &b, 1, 1);
        assert_int_equal(t->tx.n, 1);
        assert_int_equal(t_l4_ok(ipc_pool_data(&t->pool, t->tx.bufs[0]) + 14), k < 2);
        t_tx_free(t);
        free(g.flat);
    }
    assert_int_equal(t->ctr.c[RT_CTR_CSUM_RX_PARTIAL], 2);
    b = t_gso_packet(t, 6, 1000, 0, 0x18, &g); /* already complete: kept */
    ipc_pool_meta(&t->pool, b)->vnet = (struct ipc_vnet){0};
    uint8_t *f = ipc_pool_data(&t->pool, b);
    pkt_put16(f + 34 + 16, 0);
    uint32_t sum = pkt_csum_add(0, f + 34, 1000 + 32, false);
    uint8_t ph[12];
    memcpy(ph, f + 14 + PKT_IP_SRC, 8);
    ph[8] = 0, ph[9] = 6;
    pkt_put16(ph + 10, 1032);
    pkt_put16(f + 34 + 16, pkt_csum_fold(pkt_csum_add(sum, ph, 12, false)));
    t_input(t, &b, 1, 1);
    assert_true(t_l4_ok(ipc_pool_data(&t->pool, t->tx.bufs[0]) + 14));
    assert_int_equal(t->ctr.c[RT_CTR_CSUM_RX_PARTIAL], 2);
    t_tx_free(t);
    free(g.flat);
    t_no_leak(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_gso_tcp, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_gso_udp, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_gso_csum_only, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_gso_refused, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_gso_forward_path, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_gso_rx_aggregate, t_rt_setup, t_rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
