/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_neigh.c: the neighbour table and ARP: resolution with
 * packets held and released on the reply, answering requests for our
 * addresses in place, learning from requests and gratuitous ARP (static
 * entries untouched), malformed ARP, the bounded pending queue (long enough
 * for a slow ARP round trip of a fast flow), retries
 * ending in ICMP host unreachable, ageing and unicast re-validation on a
 * virtual clock, `neigh show` reads, and a router restart: the table
 * survives, the queued buffers are reclaimed and forgotten, the entries of
 * ports a reload removed go. No buffer leaks.
 */
#include "test_rt_common.h"

#define T_SEC 1000000000ull

static const uint8_t t_gw_mac[6] = {0x02, 0xbb, 0, 0, 0, 2};

static void t_route(struct t_rt *t)
{
    struct fib_nh via = {.gw = T_IP(10, 1, 0, 2), .port = 1};
    assert_int_equal(fib_add(&t->fibw, T_IP(20, 0, 0, 0), 8, &via), 0);
}

static const uint8_t t_bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void t_in(struct t_rt *t, ipc_buf b, uint64_t now)
{
    t_input(t, &b, 1, now);
}

static void t_check_request(struct t_rt *t, ipc_buf b, uint16_t port, uint32_t tip, const uint8_t *dmac)
{
    const uint8_t *f = ipc_pool_data(&t->pool, b);
    const uint8_t *a = f + 14;
    assert_int_equal(ipc_pool_meta(&t->pool, b)->out_port, port);
    assert_int_equal(ipc_pool_meta(&t->pool, b)->len, 60);
    assert_memory_equal(f, dmac ? dmac : t_bcast, 6);
    assert_memory_equal(f + 6, t->ctx.port[port].mac, 6);
    assert_int_equal(pkt_get16(f + 12), PKT_ETH_P_ARP);
    assert_int_equal(pkt_get16(a), 1);
    assert_int_equal(pkt_get16(a + 2), 0x0800);
    assert_int_equal(a[4], 6);
    assert_int_equal(a[5], 4);
    assert_int_equal(pkt_get16(a + 6), 1);
    assert_memory_equal(a + 8, t->ctx.port[port].mac, 6);
    assert_int_equal(pkt_get32(a + 14), t->ctx.port[port].ip);
    assert_int_equal(pkt_get32(a + 24), tip);
}

static void test_rt_neigh_resolve_and_release(void **state)
{
    struct t_rt *t = *state;
    t_route(t);
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 1, 1), 17, 64, 50, 0), 1 * T_SEC);
    assert_int_equal(t->tx.n, 1);
    t_check_request(t, t->tx.bufs[0], 1, T_IP(10, 1, 0, 2), NULL);
    t_tx_free(t);
    assert_int_equal(t->ctr.pending, 1);
    struct neigh_entry *e = neigh_find(&t->neigh, T_IP(10, 1, 0, 2));
    assert_non_null(e);
    assert_int_equal(e->state, NEIGH_INCOMPLETE);
    /* A second packet waits too, without a second request. */
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 2, 2, 2), 17, 64, 60, 0), 1 * T_SEC);
    assert_int_equal(t->tx.n, 0);
    assert_int_equal(t->ctr.c[RT_CTR_ARP_REQ_TX], 1);
    assert_int_equal(t->ctr.pending, 2);
    /* The reply releases both, rewritten. */
    t_in(t, t_arp(t, 1, 2, t_gw_mac, T_IP(10, 1, 0, 2), T_IP(10, 1, 0, 1), t->ctx.port[1].mac), 1 * T_SEC + 5);
    assert_int_equal(t->tx.n, 2);
    for (unsigned i = 0; i < 2; i++) {
        uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[i]);
        assert_memory_equal(f, t_gw_mac, 6);
        assert_memory_equal(f + 6, t->ctx.port[1].mac, 6);
        assert_int_equal(f[14 + PKT_IP_TTL], 63);
        assert_int_equal(pkt_csum(f + 14, 20), 0);
        assert_int_equal(ipc_pool_meta(&t->pool, t->tx.bufs[i])->out_port, 1);
    }
    assert_int_equal(pkt_get32(ipc_pool_data(&t->pool, t->tx.bufs[0]) + 14 + PKT_IP_DST), T_IP(20, 1, 1, 1));
    t_tx_free(t);
    assert_int_equal(e->state, NEIGH_REACHABLE);
    assert_int_equal(t->ctr.pending, 0);
    /* From now on, straight through. */
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 3, 3, 3), 17, 64, 60, 0), 2 * T_SEC);
    assert_int_equal(t->tx.n, 1);
    assert_memory_equal(ipc_pool_data(&t->pool, t->tx.bufs[0]), t_gw_mac, 6);
    /* `neigh show` sees it. */
    unsigned found = 0;
    uint32_t budget = NEIGH_READ_BUDGET;
    for (uint32_t i = 0; i <= t->neigh.mask; i++) {
        struct neigh_entry copy;
        if (neigh_read(&t->neigh, i, &copy, &budget) == 1) {
            found++;
            assert_int_equal(copy.ip, T_IP(10, 1, 0, 2));
            assert_memory_equal(copy.mac, t_gw_mac, 6);
            assert_int_equal(copy.port, 1);
        }
    }
    assert_int_equal(found, 1);
}

static void test_rt_neigh_arp_input(void **state)
{
    struct t_rt *t = *state;
    static const uint8_t h9[6] = {0x02, 0xcc, 0, 0, 0, 9}, h50[6] = {0x02, 0xcc, 0, 0, 0, 0x50},
                         h51[6] = {0x02, 0xcc, 0, 0, 0, 0x51}, hs[6] = {0x02, 0xdd, 0, 0, 0, 1};
    /* A request for our address: answered in place, and the asker learned (stale). */
    ipc_buf b = t_arp(t, 1, 1, h9, T_IP(10, 1, 0, 9), T_IP(10, 1, 0, 1), t_bcast);
    t_in(t, b, 10);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(t->tx.bufs[0], b);
    const uint8_t *f = ipc_pool_data(&t->pool, b), *a = f + 14;
    assert_memory_equal(f, h9, 6);
    assert_memory_equal(f + 6, t->ctx.port[1].mac, 6);
    assert_int_equal(pkt_get16(a + 6), 2);
    assert_memory_equal(a + 8, t->ctx.port[1].mac, 6);
    assert_int_equal(pkt_get32(a + 14), T_IP(10, 1, 0, 1));
    assert_memory_equal(a + 18, h9, 6);
    assert_int_equal(pkt_get32(a + 24), T_IP(10, 1, 0, 9));
    assert_int_equal(ipc_pool_meta(&t->pool, b)->out_port, 1);
    t_tx_free(t);
    struct neigh_entry *e = neigh_find(&t->neigh, T_IP(10, 1, 0, 9));
    assert_non_null(e);
    assert_int_equal(e->state, NEIGH_STALE);
    assert_memory_equal(e->mac, h9, 6);
    /* A request for another host's address: no answer, nothing learned. */
    t_in(t, t_arp(t, 1, 1, h50, T_IP(10, 1, 0, 50), T_IP(10, 1, 0, 77), t_bcast), 10);
    assert_int_equal(t->tx.n, 0);
    assert_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 50)));
    assert_int_equal(t->ctr.c[RT_CTR_ARP_IGNORED], 1);
    /* Gratuitous ARP: learned; a new MAC for the same address replaces the old one. */
    t_in(t, t_arp(t, 1, 1, h50, T_IP(10, 1, 0, 50), T_IP(10, 1, 0, 50), t_bcast), 20);
    e = neigh_find(&t->neigh, T_IP(10, 1, 0, 50));
    assert_non_null(e);
    assert_memory_equal(e->mac, h50, 6);
    t_in(t, t_arp(t, 1, 2, h51, T_IP(10, 1, 0, 50), T_IP(10, 1, 0, 50), t_bcast), 30);
    assert_memory_equal(e->mac, h51, 6);
    assert_int_equal(t->ctr.c[RT_CTR_ARP_GRATUITOUS_RX], 2);
    assert_int_equal(t->tx.n, 0);
    /* Off the port's subnet: ignored. A static entry: never changed by ARP. */
    t_in(t, t_arp(t, 1, 1, h50, T_IP(10, 9, 9, 9), T_IP(10, 9, 9, 9), t_bcast), 30);
    assert_null(neigh_find(&t->neigh, T_IP(10, 9, 9, 9)));
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 0, 60), hs, 1), 0);
    t_in(t, t_arp(t, 1, 1, h50, T_IP(10, 1, 0, 60), T_IP(10, 1, 0, 60), t_bcast), 40);
    e = neigh_find(&t->neigh, T_IP(10, 1, 0, 60));
    assert_memory_equal(e->mac, hs, 6);
    assert_int_equal(e->state, NEIGH_STATIC);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 0, 61), t_bcast, 1), -EINVAL);
    /* Malformed: bad hardware length, bad opcode, truncated. */
    b = t_arp(t, 1, 1, h9, T_IP(10, 1, 0, 9), T_IP(10, 1, 0, 1), t_bcast);
    ipc_pool_data(&t->pool, b)[14 + 4] = 8;
    t_in(t, b, 50);
    b = t_arp(t, 1, 3, h9, T_IP(10, 1, 0, 9), T_IP(10, 1, 0, 1), t_bcast);
    t_in(t, b, 50);
    b = t_arp(t, 1, 1, h9, T_IP(10, 1, 0, 9), T_IP(10, 1, 0, 1), t_bcast);
    pkt_set_len(ipc_pool_meta(&t->pool, b), 30);
    t_in(t, b, 50);
    assert_int_equal(t->ctr.c[RT_CTR_ARP_BAD], 3);
    assert_int_equal(t->tx.n, 0);
}

/* A route out of a port without a gateway (`route add 30.0.0.0/8 port 1`):
 * the destination itself is off the port's subnet, and its ARP reply must
 * still resolve it; the same reply on another port must not. */
static void test_rt_neigh_port_route(void **state)
{
    struct t_rt *t = *state;
    static const uint8_t h30[6] = {0x02, 0xcc, 0, 0, 0, 0x30};
    struct fib_nh dev = {.gw = 0, .port = 1};
    assert_int_equal(fib_add(&t->fibw, T_IP(30, 0, 0, 0), 8, &dev), 0);
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(30, 1, 1, 1), 17, 64, 50, 0), 1 * T_SEC);
    assert_int_equal(t->tx.n, 1);
    t_check_request(t, t->tx.bufs[0], 1, T_IP(30, 1, 1, 1), NULL);
    t_tx_free(t);
    struct neigh_entry *e = neigh_find(&t->neigh, T_IP(30, 1, 1, 1));
    assert_non_null(e);
    assert_int_equal(e->state, NEIGH_INCOMPLETE);
    /* On the wrong port: ignored, still waiting. */
    t_in(t, t_arp(t, 0, 2, h30, T_IP(30, 1, 1, 1), T_IP(10, 0, 0, 1), t->ctx.port[0].mac), 1 * T_SEC + 1);
    assert_int_equal(t->tx.n, 0);
    assert_int_equal(e->state, NEIGH_INCOMPLETE);
    assert_int_equal(t->ctr.c[RT_CTR_ARP_IGNORED], 1);
    /* On the port we asked on: resolved, the held packet released to it. */
    t_in(t, t_arp(t, 1, 2, h30, T_IP(30, 1, 1, 1), T_IP(10, 1, 0, 1), t->ctx.port[1].mac), 1 * T_SEC + 2);
    assert_int_equal(t->tx.n, 1);
    assert_memory_equal(ipc_pool_data(&t->pool, t->tx.bufs[0]), h30, 6);
    assert_int_equal(ipc_pool_meta(&t->pool, t->tx.bufs[0])->out_port, 1);
    t_tx_free(t);
    assert_int_equal(e->state, NEIGH_REACHABLE);
    assert_int_equal(t->ctr.pending, 0);
}

static void test_rt_neigh_queue_overflow_and_failure(void **state)
{
    struct t_rt *t = *state;
    t_route(t);
    /* The fixture's small pool: the port's share is the bound, not the queue. */
    const uint32_t qlim = rt_neigh_qlimit(&t->ctx);
    assert_int_equal(qlim, RT_PENDING_MIN);
    for (unsigned i = 0; i < qlim + 4; i++)
        t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, i), 17, 64, 30, 0), 0);
    assert_int_equal(t->ctr.pending, qlim);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_FULL], 4);
    assert_int_equal(t->tx.n, 1); /* the request */
    t_tx_free(t);
    /* Retries every second, max_retries (3) requests in all. */
    rt_neigh_tick(&t->ctx, T_SEC / 2, &t->tx);
    assert_int_equal(t->tx.n, 0);
    rt_neigh_tick(&t->ctx, 1 * T_SEC, &t->tx);
    assert_int_equal(t->tx.n, 1);
    t_check_request(t, t->tx.bufs[0], 1, T_IP(10, 1, 0, 2), NULL);
    t_tx_free(t);
    rt_neigh_tick(&t->ctx, 2 * T_SEC, &t->tx);
    assert_int_equal(t->tx.n, 1);
    t_tx_free(t);
    assert_int_equal(t->ctr.c[RT_CTR_ARP_REQ_TX], 3);
    /* Given up: every waiting packet gets host unreachable, quoting it as received. */
    rt_neigh_tick(&t->ctx, 3 * T_SEC, &t->tx);
    assert_int_equal(t->tx.n, qlim);
    for (unsigned i = 0; i < t->tx.n; i++) {
        const uint8_t *ip = ipc_pool_data(&t->pool, t->tx.bufs[i]) + 14;
        assert_int_equal(pkt_get32(ip + PKT_IP_SRC), T_IP(10, 0, 0, 1));
        assert_int_equal(pkt_get32(ip + PKT_IP_DST), T_IP(10, 0, 0, 5));
        assert_int_equal(ip[20], RT_ICMP_UNREACH);
        assert_int_equal(ip[21], RT_ICMP_UNREACH_HOST);
        assert_int_equal(ip[28 + PKT_IP_TTL], 64);
        assert_int_equal(pkt_get32(ip + 28 + PKT_IP_DST), T_IP(20, 0, 0, i));
        assert_int_equal(pkt_csum(ip + 28, 20), 0);
    }
    assert_int_equal(t->ctr.c[RT_CTR_ICMP_HOST_UNREACH_TX], qlim);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_NEIGH_FAILED], qlim);
    assert_int_equal(t->ctr.pending, 0);
    assert_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 2)));
}

/*
 * A new flow to a neighbour nobody resolved yet, at 2,000 packets a second,
 * while its ARP answer takes 50 ms (a busy machine: the port's driver and
 * the router each wait for a CPU): with a
 * port's share as large as a router's default pool gives (16384 buffers
 * over 4 ports), the 100 packets that come before the answer all wait and
 * leave in order once it comes, and the 101st goes straight through. Only
 * past NEIGH_QMAX is one dropped.
 */
static void test_rt_neigh_queue_holds_round_trip(void **state)
{
    struct t_rt *t = *state;
    t_route(t);
    t->ctx.cfg.pending_max = 16384 / 16;
    t->ctx.nports = 4;
    assert_int_equal(rt_neigh_qlimit(&t->ctx), NEIGH_QMAX);
    const uint64_t gap = T_SEC / 2000;
    unsigned n = 0;
    for (; n < 100; n++)
        t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, n), 17, 64, 30, 0), T_SEC + n * gap);
    assert_int_equal(t->tx.n, 1); /* the one broadcast request */
    t_check_request(t, t->tx.bufs[0], 1, T_IP(10, 1, 0, 2), NULL);
    t_tx_free(t);
    assert_int_equal(t->ctr.pending, 100);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_FULL], 0);
    t_in(t, t_arp(t, 1, 2, t_gw_mac, T_IP(10, 1, 0, 2), T_IP(10, 1, 0, 1), t->ctx.port[1].mac), T_SEC + 50 * T_SEC / 1000);
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, n), 17, 64, 30, 0), T_SEC + n * gap);
    n++;
    assert_int_equal(t->tx.n, n);
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[i]);
        assert_memory_equal(f, t_gw_mac, 6);
        assert_int_equal(pkt_get32(f + 14 + PKT_IP_DST), T_IP(20, 0, 0, i));
    }
    t_tx_free(t);
    assert_int_equal(t->ctr.pending, 0);
    /* The bound: NEIGH_QMAX wait for another next hop, the next is dropped. */
    struct fib_nh via = {.gw = T_IP(10, 1, 0, 3), .port = 1};
    assert_int_equal(fib_add(&t->fibw, T_IP(30, 0, 0, 0), 8, &via), 0);
    for (unsigned i = 0; i < NEIGH_QMAX + 1; i++)
        t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(30, 0, 0, 1), 17, 64, 30, 0), 2 * T_SEC);
    t_tx_free(t);
    assert_int_equal(t->ctr.pending, NEIGH_QMAX);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_FULL], 1);
}

/* The gateway 10.1.0.2 resolved at t=0: a packet asks, its reply answers. */
static void t_resolve_gw(struct t_rt *t)
{
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 64, 30, 0), 0);
    t_in(t, t_arp(t, 1, 2, t_gw_mac, T_IP(10, 1, 0, 2), T_IP(10, 1, 0, 1), t->ctx.port[1].mac), 0);
    t_tx_free(t);
}

static void test_rt_neigh_ageing(void **state)
{
    struct t_rt *t = *state;
    t_route(t);
    /* Resolve at t=0. */
    t_resolve_gw(t);
    struct neigh_entry *e = neigh_find(&t->neigh, T_IP(10, 1, 0, 2));
    assert_int_equal(e->state, NEIGH_REACHABLE);
    rt_neigh_tick(&t->ctx, 29 * T_SEC, &t->tx);
    assert_int_equal(e->state, NEIGH_REACHABLE);
    rt_neigh_tick(&t->ctx, 30 * T_SEC, &t->tx);
    assert_int_equal(e->state, NEIGH_STALE);
    /* Used while stale: forwarded at once, plus one unicast probe. */
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 64, 30, 0), 31 * T_SEC);
    assert_int_equal(t->tx.n, 2);
    t_check_request(t, t->tx.bufs[0], 1, T_IP(10, 1, 0, 2), t_gw_mac);
    assert_memory_equal(ipc_pool_data(&t->pool, t->tx.bufs[1]), t_gw_mac, 6);
    t_tx_free(t);
    /* The reply makes it reachable again. */
    t_in(t, t_arp(t, 1, 2, t_gw_mac, T_IP(10, 1, 0, 2), T_IP(10, 1, 0, 1), t->ctx.port[1].mac), 31 * T_SEC + 1);
    assert_int_equal(e->state, NEIGH_REACHABLE);
    assert_int_equal(e->retries, 0);
    /* Stale again, probed, never answers: gone after max_retries probes. */
    rt_neigh_tick(&t->ctx, 62 * T_SEC, &t->tx);
    assert_int_equal(e->state, NEIGH_STALE);
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 64, 30, 0), 62 * T_SEC);
    t_tx_free(t);
    rt_neigh_tick(&t->ctx, 63 * T_SEC, &t->tx);
    rt_neigh_tick(&t->ctx, 64 * T_SEC, &t->tx);
    assert_int_equal(t->tx.n, 2);
    t_tx_free(t);
    assert_non_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 2)));
    rt_neigh_tick(&t->ctx, 65 * T_SEC, &t->tx);
    assert_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 2)));
    /* A stale entry nobody uses is collected after stale_gc_ns. */
    static const uint8_t h[6] = {0x02, 0xcc, 0, 0, 0, 7};
    t_in(t, t_arp(t, 1, 1, h, T_IP(10, 1, 0, 7), T_IP(10, 1, 0, 7), t_bcast), 100 * T_SEC);
    assert_non_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 7)));
    rt_neigh_tick(&t->ctx, 159 * T_SEC, &t->tx);
    assert_non_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 7)));
    rt_neigh_tick(&t->ctx, 160 * T_SEC, &t->tx);
    assert_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 7)));
    assert_int_equal(t->tx.n, 0);
}

static void test_rt_neigh_many_and_delete(void **state)
{
    struct t_rt *t = *state;
    /* Fill to the 3/4 limit with colliding probes, delete half, the rest stay findable. */
    uint8_t mac[6] = {0x02, 0xee, 0, 0, 0, 0};
    unsigned n = 0;
    while (neigh_add_static(&t->neigh, T_IP(10, 1, 1, n + 1), mac, 1) == 0)
        n++;
    assert_int_equal(n, (t->neigh.mask + 1) / 4 * 3);
    for (unsigned i = 0; i < n; i += 2)
        assert_int_equal(neigh_del(&t->neigh, &t->pool, T_IP(10, 1, 1, i + 1)), 0);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(neigh_find(&t->neigh, T_IP(10, 1, 1, i + 1)) != NULL, i % 2 == 1);
    assert_int_equal(neigh_del(&t->neigh, &t->pool, T_IP(10, 1, 1, 1)), -ENOENT);
}

static void test_rt_neigh_restart(void **state)
{
    struct t_rt *t = *state;
    t_route(t);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 2, 0, 9), t_gw_mac, 2), 0);
    for (unsigned i = 0; i < 5; i++)
        t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, i), 17, 64, 30, 0), 0);
    t_tx_free(t);
    assert_int_equal(t->neigh.sh->queued, 5);
    /* The router dies holding the 5 queued buffers; the supervisor reclaims them. */
    ipc_pool_flush(&t->pool);
    assert_int_equal(ipc_pool_reclaim(&t->sup, T_ROUTER, NULL, 0), 5);
    /* The next instance maps the same table: entries kept, stale handles forgotten. */
    struct neigh_table nt2;
    struct rt_counters ctr2 = {0};
    struct ipc_err err = {{0}};
    assert_int_equal(rt_neigh_attach_router(&nt2, t->neigh_fd, &ctr2, &err), 0);
    assert_int_equal(ctr2.c[RT_CTR_DROP_PENDING_RESTART], 5);
    assert_int_equal(nt2.sh->queued, 0);
    struct neigh_entry *e = neigh_find(&nt2, T_IP(10, 2, 0, 9));
    assert_non_null(e);
    assert_int_equal(e->state, NEIGH_STATIC);
    e = neigh_find(&nt2, T_IP(10, 1, 0, 2));
    assert_non_null(e);
    assert_int_equal(e->qlen, 0);
    neigh_detach(&nt2);
    t_no_leak(t);
    /* A region of the wrong layout is refused. */
    int fd, rfd;
    struct fib other;
    struct fib_params p = {.max_prefixes = 16, .tbl8_groups = 1, .max_nh = 1};
    assert_int_equal(fib_create("t-not-neigh", &p, &other, &fd, &rfd, &err), 0);
    assert_int_equal(neigh_attach(&nt2, rfd, &err), -EPROTO);
    fib_detach(&other);
    close(fd);
    close(rfd);
}

/*
 * A router restart (a change of another port) while a stale entry is being
 * re-validated: the next instance forwards with the entry at once, nothing
 * waits for ARP, and the re-validation goes on by unicast probes, as
 * Linux's STALE, DELAY, PROBE do; never a broadcast request, which would
 * mean the entry was lost and resolved afresh.
 */
static void test_rt_neigh_restart_keeps_stale(void **state)
{
    struct t_rt *t = *state;
    t_route(t);
    t_resolve_gw(t);
    rt_neigh_tick(&t->ctx, 30 * T_SEC, &t->tx);
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 1), 17, 64, 30, 0), 31 * T_SEC);
    assert_int_equal(t->tx.n, 2); /* the packet and a unicast probe */
    t_tx_free(t);
    uint64_t req0 = t->ctr.c[RT_CTR_ARP_REQ_TX];

    /* The old instance stops; the next maps the same table. */
    rt_neigh_free_pending(&t->ctx);
    struct neigh_table nt2;
    struct ipc_err err = {{0}};
    assert_int_equal(rt_neigh_attach_router(&nt2, t->neigh_fd, &t->ctr, &err), 0);
    assert_int_equal(rt_neigh_forget_ports(&nt2, 3, 0), 0);
    t->ctx.neigh = &nt2;
    struct neigh_entry *e = neigh_find(&nt2, T_IP(10, 1, 0, 2));
    assert_non_null(e);
    assert_int_equal(e->state, NEIGH_STALE);
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, 2), 17, 64, 30, 0), 31 * T_SEC + T_SEC / 2);
    assert_int_equal(t->tx.n, 1);
    assert_memory_equal(ipc_pool_data(&t->pool, t->tx.bufs[0]), t_gw_mac, 6);
    t_tx_free(t);
    assert_int_equal(t->ctr.pending, 0);
    assert_int_equal(t->ctr.c[RT_CTR_ARP_REQ_TX], req0);
    /* Its probe unanswered across the restart: the next is unicast too. */
    rt_neigh_tick(&t->ctx, 32 * T_SEC, &t->tx);
    assert_int_equal(t->tx.n, 1);
    t_check_request(t, t->tx.bufs[0], 1, T_IP(10, 1, 0, 2), t_gw_mac);
    t_tx_free(t);
    t_in(t, t_arp(t, 1, 2, t_gw_mac, T_IP(10, 1, 0, 2), T_IP(10, 1, 0, 1), t->ctx.port[1].mac), 32 * T_SEC + 1);
    assert_int_equal(e->state, NEIGH_REACHABLE);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_FULL] + t->ctr.c[RT_CTR_DROP_PENDING_RESTART], 0);
    t->ctx.neigh = &t->neigh;
    neigh_detach(&nt2);
}

/* A router started without the ports a reload removed (the last, port 3,
 * and port 1, whose slot is vacant) forgets their entries, static ones
 * too, and keeps every other, however they collide in the table (the
 * removal shifts entries back). */
static void test_rt_neigh_forget_ports(void **state)
{
    struct t_rt *t = *state;
    uint8_t mac[6] = {0x02, 0xee, 0, 0, 0, 0};
    unsigned n = (t->neigh.mask + 1) / 2;
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 1, i + 1), mac, (uint16_t)(i % 4)), 0);
    assert_int_equal(rt_neigh_forget_ports(&t->neigh, 3, 1u << 1), (int)(n / 2));
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(neigh_find(&t->neigh, T_IP(10, 1, 1, i + 1)) != NULL, i % 4 == 0 || i % 4 == 2);
    assert_int_equal(t->neigh.sh->count, n - n / 2);
    assert_int_equal(rt_neigh_forget_ports(&t->neigh, 3, 1u << 1), 0);
    assert_int_equal(rt_neigh_forget_ports(&t->neigh, 2, 0), (int)(n / 4));
}

/* One supervisor command through the table's mailbox; returns its result. */
static uint64_t t_cmd(struct t_rt *t, enum neigh_op op, uint32_t ip, uint16_t port, const uint8_t *mac, uint64_t now)
{
    static const uint8_t zero[6];
    struct neigh_mbox *mb = &t->neigh.sh->cmd;
    uint64_t seq = ipc_ld_rlx(&mb->seq) + 1;
    ipc_st_rlx(&mb->op, op);
    ipc_st_rlx(&mb->ip, ip);
    ipc_st_rlx(&mb->port, port);
    ipc_st_rlx(&mb->mac, neigh_mac_pack(mac ? mac : zero));
    ipc_st_rel(&mb->seq, seq);
    rt_neigh_command(&t->ctx, seq, now, &t->tx);
    assert_int_equal(ipc_ld_acq(&mb->ack), seq);
    return ipc_ld_rlx(&mb->result);
}

/*
 * `ringrouter neigh add|replace|del|flush` while the router runs: the
 * router applies them (the table's one writer). A static entry for an
 * address that packets wait for sends them on at once, without ARP; add
 * over a static entry with another MAC is refused, replace takes it; flush
 * removes the learned and incomplete entries (their waiting packets freed
 * and counted) and keeps the static ones; del removes any; bad commands
 * change nothing. Every buffer is accounted for.
 */
static void test_rt_neigh_commands(void **state)
{
    struct t_rt *t = *state;
    static const uint8_t other[6] = {0x02, 0xcc, 0, 0, 0, 3}, mcast[6] = {0x01, 0, 0x5e, 0, 0, 1};
    t_route(t);
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 1, 1), 17, 64, 50, 0), 1 * T_SEC);
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 2, 2, 2), 17, 64, 50, 0), 1 * T_SEC);
    t_tx_free(t); /* the ARP request */
    assert_int_equal(t->ctr.pending, 2);
    assert_int_equal(t_cmd(t, NEIGH_OP_ADD, T_IP(10, 1, 0, 2), 1, t_gw_mac, 2 * T_SEC), 0);
    assert_int_equal(t->tx.n, 2); /* released at once, rewritten for the static MAC */
    for (unsigned i = 0; i < 2; i++)
        assert_memory_equal(ipc_pool_data(&t->pool, t->tx.bufs[i]), t_gw_mac, 6);
    t_tx_free(t);
    assert_int_equal(t->ctr.pending, 0);
    struct neigh_entry *e = neigh_find(&t->neigh, T_IP(10, 1, 0, 2));
    assert_non_null(e);
    assert_int_equal(e->state, NEIGH_STATIC);
    assert_int_equal(t->ctr.c[RT_CTR_ARP_REQ_TX], 1);
    /* The same again is no change; another MAC needs replace. */
    assert_int_equal(t_cmd(t, NEIGH_OP_ADD, T_IP(10, 1, 0, 2), 1, t_gw_mac, 2 * T_SEC), 0);
    assert_int_equal(t_cmd(t, NEIGH_OP_ADD, T_IP(10, 1, 0, 2), 1, other, 2 * T_SEC), EEXIST);
    assert_memory_equal(e->mac, t_gw_mac, 6);
    assert_int_equal(t_cmd(t, NEIGH_OP_REPLACE, T_IP(10, 1, 0, 2), 1, other, 2 * T_SEC), 0);
    assert_memory_equal(e->mac, other, 6);
    /* A learned neighbour and an incomplete one holding a packet. */
    t_in(t, t_arp(t, 0, 1, t_gw_mac, T_IP(10, 0, 0, 7), t->ctx.port[0].ip, t_bcast), 3 * T_SEC);
    t_tx_free(t); /* our reply */
    struct fib_nh via3 = {.gw = T_IP(10, 1, 0, 3), .port = 1};
    assert_int_equal(fib_add(&t->fibw, T_IP(30, 0, 0, 0), 8, &via3), 0);
    t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(30, 1, 1, 1), 17, 64, 50, 0), 3 * T_SEC);
    t_tx_free(t); /* its ARP request */
    assert_int_equal(neigh_find(&t->neigh, T_IP(10, 0, 0, 7))->state, NEIGH_STALE);
    assert_int_equal(neigh_find(&t->neigh, T_IP(10, 1, 0, 3))->state, NEIGH_INCOMPLETE);
    assert_int_equal(t_cmd(t, NEIGH_OP_FLUSH, 0, 0, NULL, 4 * T_SEC), 0);
    assert_int_equal(ipc_ld_rlx(&t->neigh.sh->cmd.count), 2);
    assert_null(neigh_find(&t->neigh, T_IP(10, 0, 0, 7)));
    assert_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 3)));
    assert_non_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 2)));
    assert_int_equal(t->ctr.c[RT_CTR_DROP_NEIGH_REMOVED], 1);
    assert_int_equal(t->ctr.pending, 0);
    assert_int_equal(t->neigh.sh->queued, 0);
    /* Bad commands change nothing. */
    assert_int_equal(t_cmd(t, NEIGH_OP_ADD, T_IP(10, 1, 0, 9), 99, t_gw_mac, 5 * T_SEC), EINVAL);
    assert_int_equal(t_cmd(t, NEIGH_OP_ADD, T_IP(10, 1, 0, 9), 1, mcast, 5 * T_SEC), EINVAL);
    assert_int_equal(t_cmd(t, NEIGH_OP_ADD, 0, 1, t_gw_mac, 5 * T_SEC), EINVAL);
    assert_int_equal(t_cmd(t, (enum neigh_op)77, T_IP(10, 1, 0, 2), 1, t_gw_mac, 5 * T_SEC), EINVAL);
    assert_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 9)));
    assert_non_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 2)));
    /* del takes any entry; twice is ENOENT. */
    assert_int_equal(t_cmd(t, NEIGH_OP_DEL, T_IP(10, 1, 0, 2), 0, NULL, 6 * T_SEC), 0);
    assert_null(neigh_find(&t->neigh, T_IP(10, 1, 0, 2)));
    assert_int_equal(t_cmd(t, NEIGH_OP_DEL, T_IP(10, 1, 0, 2), 0, NULL, 6 * T_SEC), ENOENT);
    assert_int_equal(t->tx.n, 0);
    t_no_leak(t);
}

/* A clean stop gives the pending queues back, so the router exits holding
 * nothing and the shutdown census finds no leak; the entries stay. */
static void test_rt_neigh_free_pending_at_stop(void **state)
{
    struct t_rt *t = *state;
    t_route(t);
    for (unsigned i = 0; i < 4; i++)
        t_in(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 0, 0, i), 17, 64, 30, 0), 0);
    t_tx_free(t);
    assert_int_equal(t->neigh.sh->queued, 4);
    rt_neigh_free_pending(&t->ctx);
    assert_int_equal(t->neigh.sh->queued, 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_RESTART], 4);
    struct neigh_entry *e = neigh_find(&t->neigh, T_IP(10, 1, 0, 2));
    assert_non_null(e);
    assert_int_equal(e->qlen, 0);
    ipc_pool_flush(&t->pool);
    assert_int_equal(ipc_pool_held(&t->sup, T_ROUTER, NULL, 0), 0);
    t_no_leak(t);
}

/*
 * A scan of one port's unused addresses (a packet to each) holds at most the
 * port's share of packets waiting for ARP: past it, no entry, no request, no
 * buffer (drop_pending_limit). Another port's neighbour still resolves, with
 * its packet held and released: the scan costs it nothing.
 */
static void test_rt_neigh_scan_bounded(void **state)
{
    struct t_rt *t = *state;
    struct fib_nh conn0 = {.gw = 0, .port = 0}, conn2 = {.gw = 0, .port = 2};
    assert_int_equal(fib_add(&t->fibw, T_IP(10, 0, 0, 0), 24, &conn0), 0);
    assert_int_equal(fib_add(&t->fibw, T_IP(10, 2, 0, 0), 24, &conn2), 0);
    uint32_t share = rt_pending_share(&t->ctx);
    assert_true(share < 40 && t->ctx.cfg.pending_max > share);
    for (unsigned i = 0; i < 40; i++)
        t_in(t, t_frame(t, 1, T_IP(10, 1, 0, 5), T_IP(10, 0, 0, 10 + i), 17, 64, 30, 0), T_SEC);
    assert_int_equal(t->ctx.pending_port[0], share);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_LIMIT], 40 - share);
    assert_int_equal(t->ctr.c[RT_CTR_ARP_REQ_TX], share);
    assert_int_equal(t->tx.n, share);
    t_tx_free(t);

    t_in(t, t_frame(t, 1, T_IP(10, 1, 0, 5), T_IP(10, 2, 0, 9), 17, 64, 30, 0), T_SEC);
    assert_int_equal(t->tx.n, 1);
    t_check_request(t, t->tx.bufs[0], 2, T_IP(10, 2, 0, 9), NULL);
    t_tx_free(t);
    assert_int_equal(t->ctx.pending_port[2], 1);
    t_in(t, t_arp(t, 2, 2, t_gw_mac, T_IP(10, 2, 0, 9), T_IP(10, 2, 0, 1), t->ctx.port[2].mac), T_SEC + 1);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(ipc_pool_meta(&t->pool, t->tx.bufs[0])->out_port, 2);
    t_tx_free(t);
    assert_int_equal(t->ctx.pending_port[2], 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_LIMIT], 40 - share);

    /* The scan's entries give up; the port's share is whole again. */
    for (uint64_t s = 2; s <= 5; s++) {
        rt_neigh_tick(&t->ctx, s * T_SEC, &t->tx);
        t_tx_free(t);
    }
    assert_int_equal(t->ctx.pending_port[0], 0);
    assert_int_equal(t->ctr.pending, 0);
}

/*
 * A full table: 38 resolved neighbours learned from gratuitous ARP and 2
 * static ones, then a scan of 30 unused addresses on the same port, each
 * holding a packet for ARP. The scan takes the table's last 8 slots and then
 * churns through them: each new address evicts the longest-waiting
 * incomplete entry and its packet (drop_neigh_evicted), never a resolved
 * one. A neighbour that then announces itself gets an entry the same way (the
 * old table refused it: drop_neigh_table_full), one of the scanned
 * addresses still resolves and its packet goes out, and every buffer is
 * accounted for: what waits is counted in the pending gauges and held by the
 * router, the rest is free.
 */
static void test_rt_neigh_full_evicts_incomplete_first(void **state)
{
    struct t_rt *t = *state;
    struct fib_nh conn0 = {.gw = 0, .port = 0};
    assert_int_equal(fib_add(&t->fibw, T_IP(10, 0, 0, 0), 24, &conn0), 0);
    const uint32_t room = (t->neigh.mask + 1) / 4 * 3; /* 48 */
    uint8_t mac[6] = {0x02, 0xcc, 0, 0, 0, 0};
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 0, 0, 250), mac, 0), 0);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 0, 0, 251), mac, 0), 0);
    for (unsigned i = 0; i < 38; i++) {
        mac[5] = (uint8_t)i;
        uint32_t ip = T_IP(10, 0, 0, 100 + i);
        t_in(t, t_arp(t, 0, 1, mac, ip, ip, t_bcast), T_SEC);
    }
    t_tx_free(t);
    assert_int_equal(t->ctr.c[RT_CTR_NEIGH_LEARNED], 38);
    assert_int_equal(t->neigh.sh->count, 40);

    for (unsigned i = 0; i < 30; i++)
        t_in(t, t_frame(t, 1, T_IP(10, 1, 0, 5), T_IP(10, 0, 0, 10 + i), 17, 64, 30, 0), 2 * T_SEC + i);
    assert_int_equal(t->neigh.sh->count, room);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_NEIGH_FULL], 0);
    assert_int_equal(t->ctr.c[RT_CTR_NEIGH_EVICTED], 30 - (room - 40));
    assert_int_equal(t->ctr.c[RT_CTR_DROP_NEIGH_EVICTED], 30 - (room - 40));
    assert_int_equal(t->ctr.c[RT_CTR_ARP_REQ_TX], 30);
    t_tx_free(t);
    /* The resolved survive, untouched; the scan holds the last 8 addresses. */
    for (unsigned i = 0; i < 38; i++) {
        struct neigh_entry *e = neigh_find(&t->neigh, T_IP(10, 0, 0, 100 + i));
        assert_non_null(e);
        assert_int_equal(e->state, NEIGH_STALE);
    }
    assert_int_equal(neigh_find(&t->neigh, T_IP(10, 0, 0, 250))->state, NEIGH_STATIC);
    assert_int_equal(neigh_find(&t->neigh, T_IP(10, 0, 0, 251))->state, NEIGH_STATIC);
    for (unsigned i = 0; i < 30; i++)
        assert_int_equal(neigh_find(&t->neigh, T_IP(10, 0, 0, 10 + i)) != NULL, i >= 30 - (room - 40));
    assert_int_equal(t->neigh.sh->queued, room - 40);
    assert_int_equal(t->ctr.pending, room - 40);
    assert_int_equal(t->ctx.pending_port[0], room - 40);
    ipc_pool_flush(&t->pool);
    assert_int_equal(ipc_pool_held(&t->sup, T_ROUTER, NULL, 0), room - 40);

    /* A neighbour announces itself: it takes an incomplete entry's place. */
    mac[5] = 0x77;
    t_in(t, t_arp(t, 0, 1, mac, T_IP(10, 0, 0, 200), T_IP(10, 0, 0, 200), t_bcast), 3 * T_SEC);
    struct neigh_entry *e = neigh_find(&t->neigh, T_IP(10, 0, 0, 200));
    if (!e)
        fail_msg("a resolved neighbour found no room in a table full of a scan's incomplete entries "
                 "(drop_neigh_table_full %llu)", (unsigned long long)t->ctr.c[RT_CTR_DROP_NEIGH_FULL]);
    assert_int_equal(e->state, NEIGH_STALE);
    assert_int_equal(t->ctr.c[RT_CTR_NEIGH_EVICTED], 30 - (room - 40) + 1);
    assert_int_equal(t->neigh.sh->count, room);
    /* The last scanned address answers: its packet goes out. */
    uint32_t last = T_IP(10, 0, 0, 39);
    assert_non_null(neigh_find(&t->neigh, last));
    mac[5] = 0x39;
    t_in(t, t_arp(t, 0, 2, mac, last, T_IP(10, 0, 0, 1), t->ctx.port[0].mac), 3 * T_SEC + 1);
    assert_int_equal(t->tx.n, 1);
    assert_memory_equal(ipc_pool_data(&t->pool, t->tx.bufs[0]), mac, 6);
    t_tx_free(t);
    assert_int_equal(neigh_find(&t->neigh, last)->state, NEIGH_REACHABLE);
    uint32_t waiting = room - 40 - 2; /* one evicted, one sent */
    assert_int_equal(t->neigh.sh->queued, waiting);
    assert_int_equal(t->ctr.pending, waiting);
    assert_int_equal(t->ctx.pending_port[0], waiting);
    ipc_pool_flush(&t->pool);
    assert_int_equal(ipc_pool_held(&t->sup, T_ROUTER, NULL, 0), waiting);
    struct ipc_census c;
    assert_int_equal(ipc_pool_census(&t->sup, NULL, 0, &c), 0);
    assert_int_equal(c.free + c.held_by[T_ROUTER], T_NBUFS);
}

/*
 * `neigh show` reads each entry under its sequence lock from the
 * supervisor's event loop. A router that keeps every sequence odd (or died
 * inside a write) must cost one whole read of the table a bounded number of
 * retries, not NEIGH_READ_BUDGET per entry: each such entry reads as busy
 * once the shared budget is spent, and a settled entry still reads at once.
 */
static void test_rt_neigh_show_budget(void **state)
{
    struct t_rt *t = *state;
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 0, 9), t_gw_mac, 1), 0);
    struct neigh_entry *settled = neigh_find(&t->neigh, T_IP(10, 1, 0, 9));
    for (uint32_t i = 0; i <= t->neigh.mask; i++)
        if (&t->neigh.e[i] != settled)
            t->neigh.e[i].seq |= 1;
    uint32_t budget = 1000;
    unsigned busy = 0, found = 0;
    for (uint32_t i = 0; i <= t->neigh.mask; i++) {
        struct neigh_entry copy;
        int r = neigh_read(&t->neigh, i, &copy, &budget);
        busy += r == -EBUSY;
        if (r == 1) {
            found++;
            assert_int_equal(copy.ip, T_IP(10, 1, 0, 9));
        }
    }
    assert_int_equal(budget, 0);
    assert_int_equal(busy, t->neigh.mask);
    assert_int_equal(found, 1);
    for (uint32_t i = 0; i <= t->neigh.mask; i++)
        t->neigh.e[i].seq &= ~1u;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_neigh_resolve_and_release, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_arp_input, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_port_route, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_queue_overflow_and_failure, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_queue_holds_round_trip, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_ageing, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_many_and_delete, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_restart, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_restart_keeps_stale, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_forget_ports, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_free_pending_at_stop, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_scan_bounded, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_full_evicts_incomplete_first, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_show_budget, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_neigh_commands, t_rt_setup, t_rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
