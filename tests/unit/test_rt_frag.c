/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_frag.c: RFC 791 fragmentation: for many sizes and MTUs
 * (single-frame and chained originals) every fragment fits, offsets are
 * 8-byte units and contiguous, MF is right (and the original's MF survives
 * on the last piece of a fragment fragmented again), only copied options
 * follow the first fragment, checksums hold, and reassembling the pieces in
 * the test gives back the original payload. Also: pool exhaustion midway,
 * malformed options, DF refusal on the forwarding path. No buffer leaks.
 */
#include "test_rt_common.h"

#include "services/router/frag.h"

/* An IPv4 packet of @payload bytes with @opts options, from a flat image, maybe chained. */
static ipc_buf t_packet(struct t_rt *t, uint32_t payload, const uint8_t *opts, unsigned nopts, uint16_t frag,
                        uint8_t *flat_out)
{
    unsigned ihl = 20 + nopts;
    uint32_t len = 14 + ihl + payload;
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc_chain(&t->pool, len, &b), 0);
    uint8_t *flat = flat_out;
    memset(flat, 0, len);
    memcpy(flat, t->ctx.port[0].mac, 6);
    memcpy(flat + 6, t_peer_mac[0], 6);
    pkt_put16(flat + 12, PKT_ETH_P_IP);
    uint8_t *ip = flat + 14;
    ip[0] = (uint8_t)(0x40 | ihl / 4);
    ip[PKT_IP_TOS] = 0x10;
    pkt_put16(ip + PKT_IP_TOTLEN, (uint16_t)(ihl + payload));
    pkt_put16(ip + PKT_IP_ID, 0xbeef);
    pkt_put16(ip + PKT_IP_FRAG, frag);
    ip[PKT_IP_TTL] = 33;
    ip[PKT_IP_PROTO] = 17;
    pkt_put32(ip + PKT_IP_SRC, T_IP(10, 0, 0, 5));
    pkt_put32(ip + PKT_IP_DST, T_IP(20, 0, 0, 9));
    if (nopts)
        memcpy(ip + 20, opts, nopts);
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum(ip, ihl));
    for (uint32_t i = 0; i < payload; i++)
        ip[ihl + i] = (uint8_t)(i * 31 + (i >> 8));
    uint32_t off = 0;
    for (ipc_buf x = b; x != IPC_BUF_NONE; x = ipc_pool_meta(&t->pool, x)->next) {
        struct ipc_meta *m = ipc_pool_meta(&t->pool, x);
        memcpy(ipc_pool_data(&t->pool, x), flat + off, m->len);
        off += m->len;
    }
    ipc_pool_meta(&t->pool, b)->in_port = 0;
    ipc_pool_meta(&t->pool, b)->out_port = 1;
    return b;
}

/* Check the fragments against the original image and reassemble them. */
static void t_check_frags(struct t_rt *t, const ipc_buf *fr, unsigned nf, const uint8_t *flat, unsigned mtu,
                          const uint8_t *copied, unsigned ncopied)
{
    const uint8_t *oip = flat + 14;
    unsigned oihl = (oip[0] & 15u) * 4;
    uint32_t payload = pkt_get16(oip + PKT_IP_TOTLEN) - oihl;
    uint16_t ofrag = pkt_get16(oip + PKT_IP_FRAG);
    uint8_t *re = calloc(1, payload + 8);
    uint32_t expect_off = 0;
    for (unsigned i = 0; i < nf; i++) {
        const struct ipc_meta *m = ipc_pool_meta(&t->pool, fr[i]);
        const uint8_t *f = ipc_pool_data(&t->pool, fr[i]);
        const uint8_t *ip = f + 14;
        unsigned ihl = (ip[0] & 15u) * 4;
        unsigned tot = pkt_get16(ip + PKT_IP_TOTLEN);
        uint16_t fl = pkt_get16(ip + PKT_IP_FRAG);
        bool last = i == nf - 1;
        assert_int_equal(m->next, IPC_BUF_NONE);
        assert_int_equal(m->len, 14 + tot);
        assert_int_equal(m->out_port, 1);
        assert_memory_equal(f, flat, 14);
        assert_true(tot <= mtu);
        assert_int_equal(pkt_csum(ip, ihl), 0);
        assert_int_equal(pkt_get16(ip + PKT_IP_ID), 0xbeef);
        assert_int_equal(ip[PKT_IP_TTL], oip[PKT_IP_TTL]);
        assert_int_equal(ip[PKT_IP_TOS], 0x10);
        assert_memory_equal(ip + 12, oip + 12, 8);
        if (i == 0) {
            assert_int_equal(ihl, oihl);
            assert_memory_equal(ip + 20, oip + 20, oihl - 20);
        } else {
            assert_int_equal(ihl, 20 + ncopied);
            if (ncopied)
                assert_memory_equal(ip + 20, copied, ncopied);
        }
        assert_int_equal(fl & PKT_IP_OFFMASK, (ofrag & PKT_IP_OFFMASK) + expect_off / 8);
        assert_int_equal(!!(fl & PKT_IP_MF), last ? !!(ofrag & PKT_IP_MF) : 1);
        if (!last)
            assert_int_equal((tot - ihl) % 8, 0);
        assert_true(expect_off + tot - ihl <= payload);
        memcpy(re + expect_off, ip + ihl, tot - ihl);
        expect_off += tot - ihl;
    }
    assert_int_equal(expect_off, payload);
    assert_memory_equal(re, oip + oihl, payload);
    free(re);
}

static void test_rt_frag_sizes(void **state)
{
    struct t_rt *t = *state;
    static const unsigned mtus[] = {68, 576, 1000, 1280, 1500};
    static const uint32_t sizes[] = {1, 7, 8, 9, 48, 49, 100, 555, 556, 557, 1000, 1473, 1480, 1481, 3000, 8000};
    uint8_t *flat = malloc(70000);
    for (unsigned mi = 0; mi < 5; mi++) {
        for (unsigned si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
            if (20 + sizes[si] <= mtus[mi] || (mtus[mi] == 68 && sizes[si] > 2000))
                continue;
            ipc_buf b = t_packet(t, sizes[si], NULL, 0, 0, flat);
            ipc_buf fr[RT_FRAG_MAX];
            unsigned nf = rt_frag(&t->ctx, b, mtus[mi], fr, RT_FRAG_MAX);
            if (nf == 0)
                fail_msg("payload %u mtu %u: not fragmented", sizes[si], mtus[mi]);
            unsigned per = (mtus[mi] - 20) & ~7u;
            assert_int_equal(nf, (sizes[si] + per - 1) / per);
            t_check_frags(t, fr, nf, flat, mtus[mi], NULL, 0);
            ipc_pool_free(&t->pool, fr, nf);
            t_no_leak(t);
        }
    }
    free(flat);
}

static void test_rt_frag_options_and_refrag(void **state)
{
    struct t_rt *t = *state;
    /* Router alert (copied), record route (not copied), NOP, end of list. */
    static const uint8_t opts[12] = {0x94, 4, 0, 0, 0x07, 7, 4, 0, 0, 0, 0, 0x01};
    static const uint8_t copied[4] = {0x94, 4, 0, 0};
    uint8_t *flat = malloc(10000);
    ipc_buf fr[RT_FRAG_MAX];
    ipc_buf b = t_packet(t, 3000, opts, sizeof(opts), 0, flat);
    unsigned nf = rt_frag(&t->ctx, b, 1000, fr, RT_FRAG_MAX);
    assert_int_equal(nf, 4); /* 968 + 976 + 976 + 80 */
    t_check_frags(t, fr, nf, flat, 1000, copied, sizeof(copied));
    ipc_pool_free(&t->pool, fr, nf);
    /* A middle fragment (offset 100, MF) split again: offsets continue, the last keeps MF. */
    b = t_packet(t, 2000, NULL, 0, PKT_IP_MF | 100, flat);
    nf = rt_frag(&t->ctx, b, 576, fr, RT_FRAG_MAX);
    assert_int_equal(nf, 4);
    t_check_frags(t, fr, nf, flat, 576, NULL, 0);
    ipc_pool_free(&t->pool, fr, nf);
    /* The last fragment (offset 100, no MF) split again: the last piece has no MF. */
    b = t_packet(t, 2000, NULL, 0, 100, flat);
    nf = rt_frag(&t->ctx, b, 576, fr, RT_FRAG_MAX);
    t_check_frags(t, fr, nf, flat, 576, NULL, 0);
    ipc_pool_free(&t->pool, fr, nf);
    /* A malformed option length: dropped and counted. */
    static const uint8_t bad[4] = {0x94, 9, 0, 0};
    b = t_packet(t, 2000, bad, sizeof(bad), 0, flat);
    assert_int_equal(rt_frag(&t->ctx, b, 576, fr, RT_FRAG_MAX), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_BAD_OPTIONS], 1);
    /* Too many pieces for the caller's array: refused whole. */
    b = t_packet(t, 8000, NULL, 0, 0, flat);
    assert_int_equal(rt_frag(&t->ctx, b, 576, fr, 4), 0);
    free(flat);
}

static void test_rt_frag_pool_exhausted(void **state)
{
    struct t_rt *t = *state;
    uint8_t *flat = malloc(10000);
    ipc_buf b = t_packet(t, 4000, NULL, 0, 0, flat);
    ipc_buf *hog = calloc(T_NBUFS, sizeof(ipc_buf));
    uint32_t n = ipc_pool_alloc(&t->pool, hog, T_NBUFS);
    /* Leave 3 frames: 4000 bytes at MTU 576 needs 8. */
    ipc_pool_free(&t->pool, hog + n - 3, 3);
    n -= 3;
    ipc_buf fr[RT_FRAG_MAX];
    assert_int_equal(rt_frag(&t->ctx, b, 576, fr, RT_FRAG_MAX), 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_NO_BUFS], 1);
    ipc_pool_free(&t->pool, hog, n);
    free(hog);
    free(flat);
}

static void test_rt_frag_forward_path(void **state)
{
    struct t_rt *t = *state;
    static const uint8_t mac[6] = {0x02, 0xaa, 0, 0, 0, 1};
    struct fib_nh via = {.gw = T_IP(10, 1, 0, 2), .port = 1};
    assert_int_equal(fib_add(&t->fibw, T_IP(20, 0, 0, 0), 8, &via), 0);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 0, 2), mac, 1), 0);
    t->ctx.port[1].mtu = 576;
    uint8_t *flat = malloc(10000);
    ipc_buf b = t_packet(t, 3000, NULL, 0, 0, flat);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->tx.n, 6);
    /* TTL is decremented on each fragment, after fragmenting. */
    pkt_put16(flat + 14 + PKT_IP_TOTLEN, (uint16_t)(20 + 3000));
    flat[14 + PKT_IP_TTL] = 32;
    pkt_put16(flat + 14 + PKT_IP_CSUM, 0);
    pkt_put16(flat + 14 + PKT_IP_CSUM, pkt_csum(flat + 14, 20));
    memcpy(flat, mac, 6);
    memcpy(flat + 6, t->ctx.port[1].mac, 6);
    t_check_frags(t, t->tx.bufs, t->tx.n, flat, 576, NULL, 0);
    t_tx_free(t);
    /* With DF: refused, fragmentation needed. */
    b = t_packet(t, 3000, NULL, 0, PKT_IP_DF, flat);
    t_input(t, &b, 1, 1);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_FRAG_NEEDED], 1);
    assert_int_equal(t->ctr.c[RT_CTR_ICMP_FRAG_NEEDED_TX], 1);
    free(flat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_frag_sizes, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_frag_options_and_refrag, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_frag_pool_exhausted, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_frag_forward_path, t_rt_setup, t_rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
