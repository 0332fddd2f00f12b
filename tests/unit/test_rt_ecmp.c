/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_ecmp.c: the router's half of ECMP (services/router/
 * ecmp.c) through its forwarding path: 64 UDP flows over a group of two
 * next hops spread over both, each flow on one; weights respected; a member
 * whose neighbour never answers is skipped once ARP gives up (its flows move,
 * the others' stay), asked for again by the tick, and its flows come back
 * when it answers. A single next hop's route is unchanged. No buffer leaks.
 */
#include "test_rt_common.h"

#include "services/router/ecmp.h"
#include "tables/fib_group.h"

#define T_SEC 1000000000ull
#define T_FLOWS 64u

static const uint8_t t_gw_mac[2][6] = {{0x02, 0xbb, 0, 0, 1, 2}, {0x02, 0xbb, 0, 0, 2, 2}};

static void t_group(struct t_rt *t, uint16_t w1, uint16_t w2)
{
    const struct fib_nh nhs[2] = {{.gw = T_IP(10, 1, 0, 2), .port = 1}, {.gw = T_IP(10, 2, 0, 2), .port = 2}};
    const uint16_t w[2] = {w1, w2};
    assert_int_equal(fib_replace_multi(&t->fibw, T_IP(20, 0, 0, 0), 8, nhs, w, 2), 0);
}

/* Flow @i: UDP from 10.0.0.(10 + i / 8) port 1000 + i to 20.0.0.(i % 8) port 53. */
static ipc_buf t_flow(struct t_rt *t, unsigned i)
{
    ipc_buf b = t_frame(t, 0, T_IP(10, 0, 0, 10 + i / 8), T_IP(20, 0, 0, i % 8), PKT_IP_PROTO_UDP, 64, 16, 0);
    uint8_t *ip = t_ip(t, b);
    pkt_put16(ip + PKT_IP_HLEN, (uint16_t)(1000 + i));
    pkt_put16(ip + PKT_IP_HLEN + 2, 53);
    return b;
}

/* Send flows [0, n) once each; out[i] = the port it left by, or -1 (held or dropped). */
static void t_send(struct t_rt *t, unsigned n, int *out, uint64_t now)
{
    for (unsigned i = 0; i < n; i++) {
        ipc_buf b = t_flow(t, i);
        uint32_t before = t->tx.n;
        t_input(t, &b, 1, now);
        out[i] = -1;
        for (uint32_t k = before; k < t->tx.n; k++) {
            const uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[k]);
            if (pkt_get16(f + 12) == PKT_ETH_P_IP)
                out[i] = ipc_pool_meta(&t->pool, t->tx.bufs[k])->out_port;
        }
        t_tx_free(t);
    }
}

static void t_arp_reply(struct t_rt *t, unsigned member, uint64_t now)
{
    uint16_t port = (uint16_t)(member + 1);
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(&t->pool, &b, 1), 1);
    uint8_t *f = ipc_pool_data(&t->pool, b);
    memset(f, 0, 60);
    memcpy(f, t->ctx.port[port].mac, 6);
    memcpy(f + 6, t_gw_mac[member], 6);
    pkt_put16(f + 12, PKT_ETH_P_ARP);
    uint8_t *a = f + 14;
    pkt_put16(a, 1);
    pkt_put16(a + 2, PKT_ETH_P_IP);
    a[4] = 6;
    a[5] = 4;
    pkt_put16(a + 6, 2);
    memcpy(a + 8, t_gw_mac[member], 6);
    pkt_put32(a + 14, T_IP(10, port, 0, 2));
    memcpy(a + 18, t->ctx.port[port].mac, 6);
    pkt_put32(a + 24, t->ctx.port[port].ip);
    struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    pkt_set_len(m, 60);
    m->in_port = port;
    t_input(t, &b, 1, now);
    t_tx_free(t);
}

static void test_rt_ecmp_spread_and_stick(void **state)
{
    struct t_rt *t = *state;
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 0, 2), t_gw_mac[0], 1), 0);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 2, 0, 2), t_gw_mac[1], 2), 0);
    t_group(t, 1, 1);
    int a[T_FLOWS], b[T_FLOWS];
    t_send(t, T_FLOWS, a, T_SEC);
    t_send(t, T_FLOWS, b, 2 * T_SEC);
    unsigned on[3] = {0};
    for (unsigned i = 0; i < T_FLOWS; i++) {
        assert_true(a[i] == 1 || a[i] == 2);
        assert_int_equal(a[i], b[i]); /* a flow keeps its member */
        on[a[i]]++;
    }
    assert_true(on[1] >= 16 && on[2] >= 16);
    /* A flow's member does not depend on the batch it is in. */
    ipc_buf burst[8];
    for (unsigned i = 0; i < 8; i++)
        burst[i] = t_flow(t, i);
    t_input(t, burst, 8, 3 * T_SEC);
    assert_int_equal(t->tx.n, 8);
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(ipc_pool_meta(&t->pool, t->tx.bufs[i])->out_port, a[i]);
    t_tx_free(t);

    /* Weights: 1 to 3. */
    t_group(t, 1, 3);
    unsigned n = 0, w2 = 0;
    for (unsigned rep = 0; rep < 4; rep++) {
        int o[T_FLOWS];
        for (unsigned i = 0; i < T_FLOWS; i++) {
            ipc_buf x = t_frame(t, 0, T_IP(10, 0, 1, 1 + rep), T_IP(20, 1, 0, i), PKT_IP_PROTO_UDP, 64, 16, 0);
            t_input(t, &x, 1, 4 * T_SEC);
            o[i] = t->tx.n ? ipc_pool_meta(&t->pool, t->tx.bufs[0])->out_port : -1;
            t_tx_free(t);
            n++;
            w2 += o[i] == 2;
        }
    }
    assert_true(w2 * 100 >= n * 60 && w2 * 100 <= n * 90); /* 75 % expected */
    assert_int_equal(t->ctr.c[RT_CTR_FORWARDED], 2 * T_FLOWS + 8 + n);
}

static void test_rt_ecmp_member_fails_and_returns(void **state)
{
    struct t_rt *t = *state;
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 0, 2), t_gw_mac[0], 1), 0);
    t_group(t, 1, 1);
    /* 10.2.0.2 never answers: its flows wait for ARP. */
    int a[T_FLOWS], b[T_FLOWS], c[T_FLOWS];
    uint64_t now = T_SEC;
    t_send(t, T_FLOWS, a, now);
    unsigned held = 0;
    for (unsigned i = 0; i < T_FLOWS; i++)
        held += a[i] == -1;
    assert_true(held >= 16 && held <= 48);
    assert_int_equal(t->ctx.n_ecmp_down, 0);
    /* ARP gives up after its retries: the member leaves the group at once. */
    for (unsigned k = 0; k < 4; k++) {
        now += T_SEC + 1;
        rt_neigh_tick(&t->ctx, now, &t->tx);
        t_tx_free(t);
    }
    assert_int_equal(t->ctx.n_ecmp_down, 1);
    t_send(t, T_FLOWS, b, now);
    for (unsigned i = 0; i < T_FLOWS; i++)
        assert_int_equal(b[i], 1); /* the held ones moved, the others stayed */
    /* The tick asks for it again ... */
    rt_ecmp_tick(&t->ctx, now, &t->tx);
    bool asked = false;
    for (uint32_t k = 0; k < t->tx.n; k++) {
        const uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[k]);
        asked |= pkt_get16(f + 12) == PKT_ETH_P_ARP && pkt_get32(f + 14 + 24) == T_IP(10, 2, 0, 2) &&
                 ipc_pool_meta(&t->pool, t->tx.bufs[k])->out_port == 2;
    }
    assert_true(asked);
    t_tx_free(t);
    /* ... and once it answers, its flows come back to it. */
    t_arp_reply(t, 1, now + 1000);
    t_send(t, T_FLOWS, c, now + 2000);
    for (unsigned i = 0; i < T_FLOWS; i++)
        assert_int_equal(c[i], a[i] == -1 ? 2 : 1);
    rt_ecmp_tick(&t->ctx, now + 3000, &t->tx);
    assert_int_equal(t->ctx.n_ecmp_down, 0);
    t_tx_free(t);
}

static void test_rt_ecmp_hash(void **state)
{
    struct t_rt *t = *state;
    ipc_buf x = t_flow(t, 3), y = t_flow(t, 3), z = t_flow(t, 3);
    uint8_t *ix = t_ip(t, x), *iy = t_ip(t, y), *iz = t_ip(t, z);
    pkt_put16(iz + PKT_IP_HLEN, 2000);
    assert_int_equal(rt_flow_hash4(ix, 36), rt_flow_hash4(iy, 36));
    assert_int_not_equal(rt_flow_hash4(ix, 36), rt_flow_hash4(iz, 36));
    /* A fragment hashes without ports: every fragment of it takes one path. */
    pkt_put16(iy + PKT_IP_FRAG, PKT_IP_MF);
    pkt_put16(iz + PKT_IP_FRAG, 10);
    pkt_put16(iz + PKT_IP_HLEN, 1003);
    assert_int_equal(rt_flow_hash4(iy, 36), rt_flow_hash4(iz, 36));
    assert_int_not_equal(rt_flow_hash4(ix, 36), rt_flow_hash4(iy, 36));
    /* Too short for the ports: addresses and protocol only. */
    assert_int_equal(rt_flow_hash4(ix, 20), rt_flow_hash4(iy, 20));
    ipc_buf all[3] = {x, y, z};
    ipc_pool_free(&t->pool, all, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_ecmp_spread_and_stick, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ecmp_member_fails_and_returns, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ecmp_hash, t_rt_setup, t_rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
