/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_icmp.c: ICMP errors byte by byte (headers, the quoted
 * original header and 8 bytes, type/code, the next-hop MTU field,
 * checksums, source address), every case where no error may be sent, the
 * token bucket on a virtual clock, and echo replies, single-frame and
 * chained. The pool census closes every test.
 */
#include "test_rt_common.h"

static void t_check_error(struct t_rt *t, ipc_buf err, ipc_buf orig, uint8_t type, uint8_t code, uint16_t mtu)
{
    const uint8_t *f = ipc_pool_data(&t->pool, err);
    const uint8_t *of = ipc_pool_data(&t->pool, orig);
    const uint8_t *oip = of + PKT_ETH_HLEN;
    const struct ipc_meta *m = ipc_pool_meta(&t->pool, err);
    const struct ipc_meta *om = ipc_pool_meta(&t->pool, orig);
    unsigned oihl = (oip[0] & 15u) * 4;
    unsigned olen = pkt_get16(oip + PKT_IP_TOTLEN);
    unsigned quote = oihl + 8 <= olen ? oihl + 8 : olen;
    /* Ethernet: back to the sender, from the ingress port. */
    assert_memory_equal(f, of + 6, 6);
    assert_memory_equal(f + 6, t->ctx.port[om->in_port].mac, 6);
    assert_int_equal(pkt_get16(f + 12), PKT_ETH_P_IP);
    assert_int_equal(m->out_port, om->in_port);
    assert_int_equal(m->len, PKT_ETH_HLEN + 20 + 8 + quote);
    const uint8_t *ip = f + PKT_ETH_HLEN;
    assert_int_equal(ip[0], 0x45);
    assert_int_equal(ip[PKT_IP_TOS], 0xc0);
    assert_int_equal(pkt_get16(ip + PKT_IP_TOTLEN), 20 + 8 + quote);
    assert_int_equal(pkt_get16(ip + PKT_IP_FRAG), 0);
    assert_int_equal(ip[PKT_IP_TTL], 64);
    assert_int_equal(ip[PKT_IP_PROTO], 1);
    assert_int_equal(pkt_csum(ip, 20), 0);
    assert_int_equal(pkt_get32(ip + PKT_IP_SRC), t->ctx.port[om->in_port].ip);
    assert_memory_equal(ip + PKT_IP_DST, oip + PKT_IP_SRC, 4);
    const uint8_t *ic = ip + 20;
    assert_int_equal(ic[0], type);
    assert_int_equal(ic[1], code);
    assert_int_equal(pkt_csum(ic, 8 + quote), 0);
    assert_int_equal(pkt_get16(ic + 4), 0);
    assert_int_equal(pkt_get16(ic + 6), mtu);
    assert_memory_equal(ic + 8, oip, quote); /* the header as received, then 8 bytes */
}

static void test_rt_icmp_time_exceeded_bytes(void **state)
{
    struct t_rt *t = *state;
    struct fib_nh via = {.gw = T_IP(10, 1, 0, 2), .port = 1};
    assert_int_equal(fib_add(&t->fibw, T_IP(20, 0, 0, 0), 8, &via), 0);
    ipc_buf orig = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), 17, 1, 100, 0);
    ipc_buf keep;
    assert_int_equal(ipc_pool_alloc(&t->pool, &keep, 1), 1);
    memcpy(ipc_pool_data(&t->pool, keep), ipc_pool_data(&t->pool, orig), 14 + 120);
    *ipc_pool_meta(&t->pool, keep) = *ipc_pool_meta(&t->pool, orig);
    ipc_pool_meta(&t->pool, keep)->owner = T_ROUTER;
    t_input(t, &orig, 1, 5);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP_TIME_EXCEEDED_TX], 1);
    t_check_error(t, t->tx.bufs[0], keep, RT_ICMP_TIME_EXCEEDED, 0, 0);
    t_tx_free(t);
    /* Net unreachable, from port 2's address. */
    ipc_buf o2 = t_frame(t, 2, T_IP(10, 2, 0, 7), T_IP(99, 0, 0, 1), 6, 64, 3, 0);
    ipc_buf copy;
    assert_int_equal(ipc_pool_alloc(&t->pool, &copy, 1), 1);
    memcpy(ipc_pool_data(&t->pool, copy), ipc_pool_data(&t->pool, o2), 60);
    ipc_pool_meta(&t->pool, copy)->in_port = 2;
    pkt_set_len(ipc_pool_meta(&t->pool, copy), 60);
    t_input(t, &o2, 1, 5);
    assert_int_equal(t->tx.n, 1);
    t_check_error(t, t->tx.bufs[0], copy, RT_ICMP_UNREACH, RT_ICMP_UNREACH_NET, 0); /* quote: 20 + 3 */
    assert_int_equal(ipc_pool_meta(&t->pool, t->tx.bufs[0])->len, 14 + 20 + 8 + 23);
    t_tx_free(t);
    /* Options in the original: the quote holds the whole header. */
    uint8_t *ip = t_ip(t, keep);
    memmove(ip + 24, ip + 20, 100);
    ip[0] = 0x46;
    ip[20] = 0x94; /* router alert, copied flag set */
    ip[21] = 4;
    ip[22] = ip[23] = 0;
    pkt_put16(ip + PKT_IP_TOTLEN, 124);
    t_ip_fix_csum(ip);
    pkt_set_len(ipc_pool_meta(&t->pool, keep), 14 + 124);
    assert_true(rt_icmp_error(&t->ctx, keep, RT_ICMP_UNREACH, RT_ICMP_UNREACH_NEEDFRAG, 1280, 5, &t->tx));
    t_check_error(t, t->tx.bufs[0], keep, RT_ICMP_UNREACH, RT_ICMP_UNREACH_NEEDFRAG, 1280);
    assert_int_equal(ipc_pool_meta(&t->pool, t->tx.bufs[0])->len, 14 + 20 + 8 + 24 + 8);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP_FRAG_NEEDED_TX], 1);
    ipc_pool_free(&t->pool, &keep, 1);
    ipc_pool_free(&t->pool, &copy, 1);
}

static void test_rt_icmp_not_sent(void **state)
{
    struct t_rt *t = *state;
    struct {
        const char *name;
        uint32_t src, dst;
        uint8_t proto, icmp_type;
        uint16_t frag;
        bool l2_bcast;
        bool allowed;
    } c[] = {
        {"plain UDP", T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 0, 0, false, true},
        {"echo request", T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 1, 8, 0, false, true},
        {"first fragment", T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 0, PKT_IP_MF, false, true},
        {"ICMP dest unreachable", T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 1, 3, 0, false, false},
        {"ICMP time exceeded", T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 1, 11, 0, false, false},
        {"ICMP redirect", T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 1, 5, 0, false, false},
        {"non-first fragment", T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 0, 185, false, false},
        {"last fragment", T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 0, 1, false, false},
        {"link-layer broadcast", T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 0, 0, true, false},
        {"limited broadcast", T_IP(10, 0, 0, 5), T_IP(255, 255, 255, 255), 17, 0, 0, false, false},
        {"IP multicast", T_IP(10, 0, 0, 5), T_IP(239, 1, 1, 1), 17, 0, 0, false, false},
        {"directed broadcast", T_IP(10, 0, 0, 5), T_IP(10, 1, 0, 255), 17, 0, 0, false, false},
        {"source 0.0.0.0", T_IP(0, 0, 0, 0), T_IP(20, 0, 0, 1), 17, 0, 0, false, false},
        {"source 127/8", T_IP(127, 0, 0, 1), T_IP(20, 0, 0, 1), 17, 0, 0, false, false},
        {"source multicast", T_IP(224, 0, 0, 1), T_IP(20, 0, 0, 1), 17, 0, 0, false, false},
        {"source class E", T_IP(245, 0, 0, 1), T_IP(20, 0, 0, 1), 17, 0, 0, false, false},
        {"source subnet broadcast", T_IP(10, 0, 0, 255), T_IP(20, 0, 0, 1), 17, 0, 0, false, false},
    };
    for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        ipc_buf b = t_frame(t, 0, c[i].src, c[i].dst, c[i].proto, 1, 40, c[i].frag);
        if (c[i].proto == 1)
            t_ip(t, b)[20] = c[i].icmp_type;
        if (c[i].l2_bcast)
            memset(ipc_pool_data(&t->pool, b), 0xff, 6);
        uint64_t sup = t->ctr.c[RT_CTR_ICMP_SUPPRESSED];
        bool sent = rt_icmp_error(&t->ctx, b, RT_ICMP_TIME_EXCEEDED, 0, 0, 7, &t->tx);
        if (sent != c[i].allowed)
            fail_msg("%s: sent %d, expected %d", c[i].name, sent, c[i].allowed);
        assert_int_equal(t->ctr.c[RT_CTR_ICMP_SUPPRESSED], sup + !c[i].allowed);
        ipc_pool_free(&t->pool, &b, 1);
        t_tx_free(t);
    }
}

static void test_rt_icmp_rate_limit(void **state)
{
    struct t_rt *t = *state;
    ipc_buf b = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 1, 40, 0);
    uint64_t now = 1000000000;
    rt_tb_init(&t->ctx.icmp_tb, 1000000, 50, now); /* the default: 1 per ms, burst 50 */
    unsigned sent = 0;
    for (unsigned i = 0; i < 80; i++) {
        sent += rt_icmp_error(&t->ctx, b, RT_ICMP_TIME_EXCEEDED, 0, 0, now, &t->tx);
        t_tx_free(t);
    }
    assert_int_equal(sent, 50);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP_RATE_LIMITED], 30);
    /* 0.999 ms later: nothing; 1 ms: one token; the fraction is kept. */
    assert_false(rt_icmp_error(&t->ctx, b, RT_ICMP_TIME_EXCEEDED, 0, 0, now + 999999, &t->tx));
    assert_true(rt_icmp_error(&t->ctx, b, RT_ICMP_TIME_EXCEEDED, 0, 0, now + 1000000, &t->tx));
    assert_false(rt_icmp_error(&t->ctx, b, RT_ICMP_TIME_EXCEEDED, 0, 0, now + 1500000, &t->tx));
    assert_true(rt_icmp_error(&t->ctx, b, RT_ICMP_TIME_EXCEEDED, 0, 0, now + 2000000, &t->tx));
    t_tx_free(t);
    /* 10 ms: ten tokens. A long pause refills only up to the burst. */
    now += 12000000;
    sent = 0;
    for (unsigned i = 0; i < 20; i++)
        sent += rt_icmp_error(&t->ctx, b, RT_ICMP_TIME_EXCEEDED, 0, 0, now, &t->tx);
    assert_int_equal(sent, 10);
    t_tx_free(t);
    now += 3600ull * 1000000000;
    sent = 0;
    for (unsigned i = 0; i < 100; i++) {
        sent += rt_icmp_error(&t->ctx, b, RT_ICMP_TIME_EXCEEDED, 0, 0, now, &t->tx);
        t_tx_free(t);
    }
    assert_int_equal(sent, 50);
    /* Configurable: 5 per 100 us. A clock that steps back takes nothing. */
    struct rt_tb tb;
    rt_tb_init(&tb, 100000, 5, 0);
    for (unsigned i = 0; i < 5; i++)
        assert_true(rt_tb_take(&tb, 0));
    assert_false(rt_tb_take(&tb, 99999));
    assert_true(rt_tb_take(&tb, 100000));
    assert_false(rt_tb_take(&tb, 50));
    assert_true(rt_tb_take(&tb, 250000));
    ipc_pool_free(&t->pool, &b, 1);
}

static ipc_buf t_echo(struct t_rt *t, uint16_t port, uint32_t src, uint32_t dst, uint32_t payload, bool chain)
{
    uint32_t len = 14 + 20 + 8 + payload;
    ipc_buf b;
    if (chain) {
        assert_int_equal(ipc_pool_alloc_chain(&t->pool, len, &b), 0);
    } else {
        assert_int_equal(ipc_pool_alloc(&t->pool, &b, 1), 1);
        pkt_set_len(ipc_pool_meta(&t->pool, b), len);
    }
    /* Write the packet flat, then scatter it over the frames. */
    uint8_t *flat = calloc(1, len);
    memcpy(flat, t->ctx.port[port].mac, 6);
    memcpy(flat + 6, t_peer_mac[port], 6);
    pkt_put16(flat + 12, PKT_ETH_P_IP);
    uint8_t *ip = flat + 14;
    ip[0] = 0x45;
    pkt_put16(ip + PKT_IP_TOTLEN, (uint16_t)(len - 14));
    ip[PKT_IP_TTL] = 57;
    ip[PKT_IP_PROTO] = 1;
    pkt_put32(ip + PKT_IP_SRC, src);
    pkt_put32(ip + PKT_IP_DST, dst);
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, 20));
    uint8_t *ic = ip + 20;
    ic[0] = 8;
    pkt_put16(ic + 4, 0x4242);
    pkt_put16(ic + 6, 7);
    for (uint32_t i = 0; i < payload; i++)
        ic[8 + i] = (uint8_t)(i ^ (i >> 8));
    pkt_put16(ic + 2, pkt_csum(ic, 8 + payload));
    uint32_t off = 0;
    for (ipc_buf x = b; x != IPC_BUF_NONE; x = ipc_pool_meta(&t->pool, x)->next) {
        struct ipc_meta *m = ipc_pool_meta(&t->pool, x);
        memcpy(ipc_pool_data(&t->pool, x), flat + off, m->len);
        off += m->len;
    }
    free(flat);
    ipc_pool_meta(&t->pool, b)->in_port = port;
    return b;
}

static void test_rt_icmp_echo(void **state)
{
    struct t_rt *t = *state;
    /* Ping port 2's address from port 0's side: answered from 10.2.0.1. */
    ipc_buf b = t_echo(t, 0, T_IP(10, 0, 0, 5), T_IP(10, 2, 0, 1), 56, false);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(t->tx.bufs[0], b);
    uint8_t *f = ipc_pool_data(&t->pool, b);
    uint8_t *ip = f + 14;
    assert_memory_equal(f, t_peer_mac[0], 6);
    assert_memory_equal(f + 6, t->ctx.port[0].mac, 6);
    assert_int_equal(pkt_get32(ip + PKT_IP_SRC), T_IP(10, 2, 0, 1));
    assert_int_equal(pkt_get32(ip + PKT_IP_DST), T_IP(10, 0, 0, 5));
    assert_int_equal(ip[PKT_IP_TTL], 64);
    assert_int_equal(pkt_csum(ip, 20), 0);
    assert_int_equal(ip[20], 0);
    assert_int_equal(pkt_csum(ip + 20, 64), 0);
    assert_int_equal(pkt_get16(ip + 24), 0x4242);
    assert_int_equal(ipc_pool_meta(&t->pool, b)->out_port, 0);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP_ECHO_REPLY_TX], 1);
    t_tx_free(t);
    /* A 5000-byte ping in a chain of three frames: answered, only frame 1 rewritten. */
    b = t_echo(t, 1, T_IP(10, 1, 0, 9), T_IP(10, 1, 0, 1), 5000, true);
    assert_int_not_equal(ipc_pool_meta(&t->pool, b)->next, IPC_BUF_NONE);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 1);
    uint32_t got;
    uint32_t sum = pkt_chain_csum_add(&t->pool, b, 14 + 20, 5008, 0, &got);
    assert_int_equal(got, 5008);
    assert_int_equal(pkt_csum_fold(sum), 0);
    assert_int_equal(ipc_pool_data(&t->pool, b)[14 + 20], 0);
    t_tx_free(t);
    /* Bad ICMP checksum: dropped; UDP with no control namespace: a port unreachable. */
    b = t_echo(t, 0, T_IP(10, 0, 0, 5), T_IP(10, 0, 0, 1), 56, false);
    ipc_pool_data(&t->pool, b)[14 + 20 + 8] ^= 1;
    t_input(t, &b, 1, 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_ICMP_BAD_CHECKSUM], 1);
    b = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(10, 0, 0, 1), 17, 64, 30, 0);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_LOCAL_OTHER], 1);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP_PORT_UNREACH_TX], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_icmp_time_exceeded_bytes, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_icmp_not_sent, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_icmp_rate_limit, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_icmp_echo, t_rt_setup, t_rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
