/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_nd.c: Neighbor Discovery in the router. A solicitation
 * for each kind of router address (global, link-local; to the solicited-node
 * group or unicast) answered in place, byte by byte, checksum included, and
 * its sender learnt; solicitations that must not be answered (another
 * port's address, a DAD probe, hop limit not 255, a bad checksum); next-hop
 * resolution with packets held and released by the advertisement; Neighbor
 * Unreachability Detection on a virtual clock (REACHABLE, STALE, DELAY,
 * PROBE, gone); address unreachable for what waited in vain; the pending
 * queues' bound, shared with ARP's. Every test ends with the pool census.
 */
#include "test_rt6_common.h"

static const uint8_t t_host_mac[6] = {0x02, 0xbb, 0, 0, 0, 9};

/* A Neighbor Solicitation for @target from @src (with SLLA @slla unless
 * NULL) to @dst, on @port, hop limit @hlim. */
static ipc_buf t_ns(struct t_rt *t, uint16_t port, const uint8_t *src, const uint8_t *dst, const uint8_t *target,
                    const uint8_t *slla, uint8_t hlim)
{
    uint32_t len = RT_ND_NS_LEN + (slla ? 8 : 0);
    ipc_buf b = t6_frame(t, port, src, dst, PKT_IP_PROTO_ICMPV6, hlim, len);
    uint8_t *f = ipc_pool_data(&t->pool, b);
    if (rt_ip6_is_mcast(dst))
        rt_ip6_mcast_mac(dst, f);
    memcpy(f + 6, slla ? slla : t_host_mac, 6);
    uint8_t *ic = f + PKT_ETH_HLEN + PKT_IP6_HLEN;
    memset(ic, 0, len);
    ic[0] = RT_ICMP6_NS;
    memcpy(ic + 8, target, 16);
    if (slla) {
        ic[24] = RT_ND_OPT_SLLA;
        ic[25] = 1;
        memcpy(ic + 26, slla, 6);
    }
    t6_icmp_csum(f + PKT_ETH_HLEN, PKT_IP6_HLEN, len);
    return b;
}

/* A Neighbor Advertisement for @target (TLLA @tlla) with @flags, to @dst. */
static ipc_buf t_na(struct t_rt *t, uint16_t port, const uint8_t *target, const uint8_t *dst, const uint8_t *tlla,
                    uint8_t flags)
{
    uint32_t len = RT_ND_NS_LEN + (tlla ? 8 : 0);
    ipc_buf b = t6_frame(t, port, target, dst, PKT_IP_PROTO_ICMPV6, 255, len);
    uint8_t *f = ipc_pool_data(&t->pool, b);
    if (tlla)
        memcpy(f + 6, tlla, 6);
    uint8_t *ic = f + PKT_ETH_HLEN + PKT_IP6_HLEN;
    memset(ic, 0, len);
    ic[0] = RT_ICMP6_NA;
    ic[4] = flags;
    memcpy(ic + 8, target, 16);
    if (tlla) {
        ic[24] = RT_ND_OPT_TLLA;
        ic[25] = 1;
        memcpy(ic + 26, tlla, 6);
    }
    t6_icmp_csum(f + PKT_ETH_HLEN, PKT_IP6_HLEN, len);
    return b;
}

/* The advertisement the router sent in @b: to @dst at @dmac, for @target, R|S|O, TLLA its port's MAC. */
static void t_check_na(struct t_rt *t, ipc_buf b, uint16_t port, const uint8_t *dmac, const uint8_t *dst,
                       const uint8_t *target)
{
    const struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    const uint8_t *f = ipc_pool_data(&t->pool, b);
    const uint8_t *ip6 = f + PKT_ETH_HLEN, *ic = ip6 + PKT_IP6_HLEN;
    assert_int_equal(m->out_port, port);
    assert_int_equal(m->len, PKT_ETH_HLEN + PKT_IP6_HLEN + 32);
    assert_memory_equal(f, dmac, 6);
    assert_memory_equal(f + 6, t->ctx.port[port].mac, 6);
    assert_int_equal(pkt_get16(f + 12), PKT_ETH_P_IPV6);
    assert_int_equal(pkt_get32(ip6), 6u << 28);
    assert_int_equal(pkt_get16(ip6 + PKT_IP6_PLEN), 32);
    assert_int_equal(ip6[PKT_IP6_NXT], PKT_IP_PROTO_ICMPV6);
    assert_int_equal(ip6[PKT_IP6_HLIM], 255);
    assert_memory_equal(ip6 + PKT_IP6_SRC, target, 16);
    assert_memory_equal(ip6 + PKT_IP6_DST, dst, 16);
    assert_int_equal(ic[0], RT_ICMP6_NA);
    assert_int_equal(ic[1], 0);
    assert_int_equal(ic[4], RT_ND_NA_R | RT_ND_NA_S | RT_ND_NA_O);
    assert_int_equal(ic[5] | ic[6] | ic[7], 0);
    assert_memory_equal(ic + 8, target, 16);
    assert_int_equal(ic[24], RT_ND_OPT_TLLA);
    assert_int_equal(ic[25], 1);
    assert_memory_equal(ic + 26, t->ctx.port[port].mac, 6);
    assert_true(t6_icmp_csum_ok(ip6));
    /* The checksum, once more by hand: the pseudo-header and all 32 bytes. */
    uint32_t s = 0;
    s = pkt_csum_add(s, ip6 + PKT_IP6_SRC, 32, false);
    s = pkt_csum_add(s, (const uint8_t[8]){0, 0, 0, 32, 0, 0, 0, 58}, 8, false);
    uint8_t body[32];
    memcpy(body, ic, 32);
    body[2] = body[3] = 0;
    s = pkt_csum_add(s, body, 32, false);
    assert_int_equal(pkt_get16(ic + 2), pkt_csum_fold(s));
}

static void test_rt_nd_answer(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    uint8_t host[16], host_ll[16], snma[16];
    t6_addr(host, false, 0, 9);
    t6_addr(host_ll, true, 0, 0x99);
    const uint8_t *global = t->ctx.port[0].a6[0].a, *ll = t->ctx.port[0].a6[1].a;

    /* To the solicited-node group of the global address, with SLLA. */
    rt_ip6_snma(global, snma);
    ipc_buf b = t_ns(t, 0, host, snma, global, t_host_mac, 255);
    t6_input(t, b, 1000);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(t->tx.bufs[0], b); /* answered in place */
    t_check_na(t, b, 0, t_host_mac, host, global);
    t_tx_free(t);
    /* ... and its sender is learnt, STALE (RFC 4861 §7.2.3). */
    struct neigh6_entry *e = neigh6_find(&s->neigh6, host);
    assert_non_null(e);
    assert_int_equal(e->state, NEIGH6_STALE);
    assert_memory_equal(e->mac, t_host_mac, 6);
    assert_int_equal(e->port, 0);
    assert_int_equal(t->ctr.c[RT_CTR_ND_LEARNED], 1);

    /* Unicast to the link-local address, from a link-local host, no SLLA:
     * answered to the frame's source MAC. */
    b = t_ns(t, 0, host_ll, ll, ll, NULL, 255);
    t6_input(t, b, 2000);
    assert_int_equal(t->tx.n, 1);
    t_check_na(t, b, 0, t_host_mac, host_ll, ll);
    t_tx_free(t);
    assert_null(neigh6_find(&s->neigh6, host_ll)); /* nothing to learn without SLLA */

    /* The solicited-node group of the link-local address. */
    rt_ip6_snma(ll, snma);
    b = t_ns(t, 0, host_ll, snma, ll, t_host_mac, 255);
    t6_input(t, b, 3000);
    assert_int_equal(t->tx.n, 1);
    t_check_na(t, b, 0, t_host_mac, host_ll, ll);
    t_tx_free(t);
    assert_int_equal(t->ctr.c[RT_CTR_ND_NS_RX], 3);
    assert_int_equal(t->ctr.c[RT_CTR_ND_NA_TX], 3);
    t_no_leak(t);
}

/* The neighbour table is keyed by address alone: a solicitation on port a
 * that names a host of port b's network as its source is answered, but
 * must not move that host's entry to port a (the ND spoofing a garbage
 * frame did in router_garbage6.sh, seed 14576). */
static void test_rt_nd_other_link_source(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    uint8_t host_b[16], snma0[16], snma1[16];
    static const uint8_t spoof[6] = {0x02, 0, 0, 0, 0, 9};
    t6_addr(host_b, false, 1, 9);
    const uint8_t *global0 = t->ctx.port[0].a6[0].a, *global1 = t->ctx.port[1].a6[0].a;
    rt_ip6_snma(global0, snma0);
    rt_ip6_snma(global1, snma1);

    /* B learnt on its own port. */
    ipc_buf b = t_ns(t, 1, host_b, snma1, global1, t_host_mac, 255);
    t6_input(t, b, 1000);
    t_tx_free(t);
    struct neigh6_entry *e = neigh6_find(&s->neigh6, host_b);
    assert_non_null(e);
    assert_int_equal(e->port, 1);
    /* B's address from port 0, another MAC: answered, not learnt. */
    uint64_t ign = t->ctr.c[RT_CTR_ND_IGNORED];
    b = t_ns(t, 0, host_b, snma0, global0, spoof, 255);
    t6_input(t, b, 2000);
    assert_int_equal(t->tx.n, 1);
    t_tx_free(t);
    e = neigh6_find(&s->neigh6, host_b);
    assert_non_null(e);
    assert_int_equal(e->port, 1);
    assert_memory_equal(e->mac, t_host_mac, 6);
    assert_int_equal(t->ctr.c[RT_CTR_ND_IGNORED], ign + 1);
    /* ... nor an advertisement for it from port 0. */
    b = t_na(t, 0, host_b, global0, spoof, RT_ND_NA_S | RT_ND_NA_O);
    t6_input(t, b, 3000);
    t_tx_free(t);
    e = neigh6_find(&s->neigh6, host_b);
    assert_int_equal(e->port, 1);
    assert_memory_equal(e->mac, t_host_mac, 6);
    t_no_leak(t);
}

static void test_rt_nd_not_answered(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    uint8_t host[16], snma[16], unspec[16] = {0};
    t6_addr(host, false, 0, 9);
    const uint8_t *other = t->ctx.port[1].a6[0].a, *global = t->ctx.port[0].a6[0].a;
    /* Another port's address, asked on port 0: not ours on this link. */
    rt_ip6_snma(other, snma);
    t6_input(t, t_ns(t, 0, host, snma, other, t_host_mac, 255), 1);
    assert_int_equal(t->ctr.c[RT_CTR_ND_IGNORED], 1);
    /* A host's DAD probe for our address (from ::, no SLLA): defended
     * (§7.2.4): an advertisement to all nodes, Solicited clear, nothing learnt. */
    rt_ip6_snma(global, snma);
    ipc_buf d = t_ns(t, 0, unspec, snma, global, NULL, 255);
    t6_input(t, d, 2);
    assert_int_equal(t->ctr.c[RT_CTR_ND_IGNORED], 1);
    assert_int_equal(t->ctr.c[RT_CTR_ND_DAD_DEFENDED], 1);
    assert_int_equal(t->tx.n, 1);
    {
        static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
        static const uint8_t all_nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};
        const uint8_t *f = ipc_pool_data(&t->pool, d);
        const uint8_t *ip6 = f + PKT_ETH_HLEN, *ic = ip6 + PKT_IP6_HLEN;
        assert_memory_equal(f, all_nodes_mac, 6);
        assert_memory_equal(ip6 + PKT_IP6_DST, all_nodes, 16);
        assert_memory_equal(ip6 + PKT_IP6_SRC, global, 16);
        assert_int_equal(ic[0], RT_ICMP6_NA);
        assert_int_equal(ic[4], RT_ND_NA_R | RT_ND_NA_O);
        assert_memory_equal(ic + 8, global, 16);
        assert_true(t6_icmp_csum_ok(ip6));
    }
    t_tx_free(t);
    assert_null(neigh6_find(&s->neigh6, unspec));
    /* From :: with SLLA, or to a unicast address from :: : malformed (§7.1.1). */
    t6_input(t, t_ns(t, 0, unspec, snma, global, t_host_mac, 255), 3);
    assert_int_equal(t->ctr.c[RT_CTR_ND_BAD], 1);
    /* Hop limit 64: it was routed here, not sent on the link. */
    t6_input(t, t_ns(t, 0, host, snma, global, t_host_mac, 64), 4);
    assert_int_equal(t->ctr.c[RT_CTR_ND_BAD], 2);
    /* A bad checksum. */
    ipc_buf b = t_ns(t, 0, host, snma, global, t_host_mac, 255);
    t_ip(t, b)[PKT_IP6_HLEN + 10] ^= 0x40;
    t6_input(t, b, 5);
    assert_int_equal(t->ctr.c[RT_CTR_ND_BAD], 3);
    /* An option of length 0. */
    b = t_ns(t, 0, host, snma, global, t_host_mac, 255);
    t_ip(t, b)[PKT_IP6_HLEN + 25] = 0;
    t6_icmp_csum(t_ip(t, b), PKT_IP6_HLEN, 32);
    t6_input(t, b, 6);
    assert_int_equal(t->ctr.c[RT_CTR_ND_BAD], 4);
    assert_int_equal(t->tx.n, 0);
    assert_null(neigh6_find(&s->neigh6, host));
    assert_int_equal(t->ctr.c[RT_CTR_ND_NA_TX], 1); /* the DAD defence alone */
    t_no_leak(t);
}

/* Forward @n packets from port 0 to @dst. */
static void t_send(struct t_rt *t, const uint8_t *dst, unsigned n, uint64_t now)
{
    uint8_t src[16];
    t6_addr(src, false, 0, 5);
    for (unsigned i = 0; i < n; i++)
        t6_input(t, t6_frame(t, 0, src, dst, PKT_IP_PROTO_UDP, 64, 32), now);
}

static void test_rt_nd_resolve(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    uint8_t dst[16], snma[16];
    t6_addr(dst, false, 2, 0x1234);
    t_send(t, dst, 3, 1000);
    /* One multicast solicitation, three packets held. */
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(t->ctr.c[RT_CTR_ND_NS_TX], 1);
    assert_int_equal(t->ctr.pending6, 3);
    ipc_buf ns = t->tx.bufs[0];
    const uint8_t *f = ipc_pool_data(&t->pool, ns);
    const uint8_t *ip6 = f + PKT_ETH_HLEN, *ic = ip6 + PKT_IP6_HLEN;
    rt_ip6_snma(dst, snma);
    assert_memory_equal(f, ((const uint8_t[6]){0x33, 0x33, 0xff, 0x00, 0x12, 0x34}), 6);
    assert_memory_equal(f + 6, t->ctx.port[2].mac, 6);
    assert_int_equal(ipc_pool_meta(&t->pool, ns)->out_port, 2);
    assert_int_equal(ip6[PKT_IP6_HLIM], 255);
    assert_memory_equal(ip6 + PKT_IP6_SRC, t->ctx.port[2].a6[1].a, 16); /* from its link-local address */
    assert_memory_equal(ip6 + PKT_IP6_DST, snma, 16);
    assert_int_equal(ic[0], RT_ICMP6_NS);
    assert_memory_equal(ic + 8, dst, 16);
    assert_int_equal(ic[24], RT_ND_OPT_SLLA);
    assert_memory_equal(ic + 26, t->ctx.port[2].mac, 6);
    assert_true(t6_icmp_csum_ok(ip6));
    t_tx_free(t);
    struct neigh6_entry *e = neigh6_find(&s->neigh6, dst);
    assert_non_null(e);
    assert_int_equal(e->state, NEIGH6_INCOMPLETE);
    assert_int_equal(e->qlen, 3);
    /* An unsolicited advertisement without TLLA changes nothing. */
    t6_input(t, t_na(t, 2, dst, t->ctx.port[2].a6[1].a, NULL, RT_ND_NA_O), 1500);
    assert_int_equal(e->state, NEIGH6_INCOMPLETE);
    /* The answer: REACHABLE, the three released to its MAC, hop limit 63. */
    t6_input(t, t_na(t, 2, dst, t->ctx.port[2].a6[1].a, t_host_mac, RT_ND_NA_S | RT_ND_NA_O), 2000);
    assert_int_equal(e->state, NEIGH6_REACHABLE);
    assert_int_equal(t->tx.n, 3);
    for (unsigned i = 0; i < 3; i++) {
        const uint8_t *p = ipc_pool_data(&t->pool, t->tx.bufs[i]);
        assert_memory_equal(p, t_host_mac, 6);
        assert_memory_equal(p + 6, t->ctx.port[2].mac, 6);
        assert_int_equal(p[PKT_ETH_HLEN + PKT_IP6_HLIM], 63);
    }
    assert_int_equal(t->ctr.pending6, 0);
    assert_int_equal(t->ctr.c[RT_CTR_FORWARDED6], 3);
    t_tx_free(t);
    /* Later packets go straight out. */
    t_send(t, dst, 2, 3000);
    assert_int_equal(t->tx.n, 2);
    t_tx_free(t);
    t_no_leak(t);
}

/* An IPv6 command through the neighbour mailbox, as the supervisor writes it. */
static uint64_t t_cmd6(struct t_rt *t, enum neigh_op op, const uint8_t *ip, uint16_t port, const uint8_t *mac,
                       uint64_t now, uint64_t *count)
{
    static const uint8_t zero[6];
    struct neigh_mbox *mb = &t->neigh.sh->cmd;
    uint64_t seq = ipc_ld_rlx(&mb->seq) + 1, w[2];
    neigh_ip6_pack(ip, w);
    uint8_t back[16];
    neigh_ip6_unpack(w, back);
    assert_memory_equal(back, ip, 16);
    ipc_st_rlx(&mb->op, op);
    ipc_st_rlx(&mb->ip, 0);
    ipc_st_rlx(&mb->ip6[0], w[0]);
    ipc_st_rlx(&mb->ip6[1], w[1]);
    ipc_st_rlx(&mb->port, port);
    ipc_st_rlx(&mb->mac, neigh_mac_pack(mac ? mac : zero));
    ipc_st_rel(&mb->seq, seq);
    rt_neigh_command(&t->ctx, seq, now, &t->tx);
    assert_int_equal(ipc_ld_acq(&mb->ack), seq);
    if (count)
        *count = ipc_ld_rlx(&mb->count);
    return ipc_ld_rlx(&mb->result);
}

/*
 * `ringrouter neigh add|replace|del` for IPv6 while the router runs: a
 * static entry sends what waited for the address at once, to its MAC, and
 * advertisements never change it; add over it with another MAC is refused,
 * replace takes it; bad commands change nothing; del removes it, and what
 * waited for an address deleted is dropped and counted.
 */
static void test_rt_nd_commands(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    static const uint8_t mac[6] = {0x02, 0xaa, 0, 0, 0, 7}, other[6] = {0x02, 0xcc, 0, 0, 0, 3},
                         mcast[6] = {0x33, 0x33, 0, 0, 0, 1};
    uint8_t dst[16], far[16], group[16];
    t6_addr(dst, false, 2, 0x77);
    t6_addr(far, false, 2, 0x78);
    memset(group, 0, 16);
    group[0] = 0xff;
    group[1] = 0x02;
    group[15] = 1;
    uint64_t n = 9;
    t_send(t, dst, 3, 1000);
    t_tx_free(t); /* the solicitation */
    assert_int_equal(neigh6_find(&s->neigh6, dst)->qlen, 3);
    assert_int_equal(t_cmd6(t, NEIGH_OP_ADD6, dst, 2, mac, 2000, NULL), 0);
    struct neigh6_entry *e = neigh6_find(&s->neigh6, dst);
    assert_non_null(e);
    assert_int_equal(e->state, NEIGH6_STATIC);
    assert_int_equal(t->tx.n, 3);
    for (unsigned i = 0; i < 3; i++)
        assert_memory_equal(ipc_pool_data(&t->pool, t->tx.bufs[i]), mac, 6);
    assert_int_equal(t->ctr.pending6, 0);
    t_tx_free(t);
    /* An advertisement with another MAC, override set: a static entry stays. */
    t6_input(t, t_na(t, 2, dst, t->ctx.port[2].a6[1].a, other, RT_ND_NA_S | RT_ND_NA_O), 2500);
    assert_memory_equal(e->mac, mac, 6);
    assert_int_equal(e->state, NEIGH6_STATIC);
    t_tx_free(t);
    assert_int_equal(t_cmd6(t, NEIGH_OP_ADD6, dst, 2, mac, 3000, NULL), 0); /* the same again: fine */
    assert_int_equal(t_cmd6(t, NEIGH_OP_ADD6, dst, 2, other, 3000, NULL), EEXIST);
    assert_memory_equal(e->mac, mac, 6);
    assert_int_equal(t_cmd6(t, NEIGH_OP_REPLACE6, dst, 1, other, 3000, NULL), 0);
    assert_memory_equal(e->mac, other, 6);
    assert_int_equal(e->port, 1);
    /* Bad commands: a port past the router's, a group MAC, a multicast address. */
    assert_int_equal(t_cmd6(t, NEIGH_OP_ADD6, far, 9, mac, 3000, NULL), EINVAL);
    assert_int_equal(t_cmd6(t, NEIGH_OP_ADD6, far, 2, mcast, 3000, NULL), EINVAL);
    assert_int_equal(t_cmd6(t, NEIGH_OP_ADD6, group, 2, mac, 3000, NULL), EINVAL);
    assert_null(neigh6_find(&s->neigh6, far));
    assert_null(neigh6_find(&s->neigh6, group));
    /* del: gone, and again: no such neighbour. */
    assert_int_equal(t_cmd6(t, NEIGH_OP_DEL6, dst, 0, NULL, 4000, &n), 0);
    assert_int_equal(n, 0);
    assert_null(neigh6_find(&s->neigh6, dst));
    assert_int_equal(t_cmd6(t, NEIGH_OP_DEL6, dst, 0, NULL, 4000, NULL), ENOENT);
    /* del of an address packets wait for: they are dropped, and counted. */
    t_send(t, far, 2, 5000);
    t_tx_free(t);
    assert_int_equal(t_cmd6(t, NEIGH_OP_DEL6, far, 0, NULL, 5000, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_NEIGH_REMOVED], 2);
    assert_int_equal(t->ctr.pending6, 0);
    t_no_leak(t);
}

static void test_rt_nd_nud(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    const struct rt_cfg *c = &t->ctx.cfg;
    uint8_t dst[16];
    t6_addr(dst, false, 2, 0x77);
    uint64_t now = 1000000000ull;
    t_send(t, dst, 1, now);
    t_tx_free(t);
    t6_input(t, t_na(t, 2, dst, t->ctx.port[2].a6[1].a, t_host_mac, RT_ND_NA_S | RT_ND_NA_O), now);
    t_tx_free(t);
    struct neigh6_entry *e = neigh6_find(&s->neigh6, dst);
    assert_int_equal(e->state, NEIGH6_REACHABLE);
    /* REACHABLE -> STALE once reachable_ns has passed. */
    rt_nd_tick(&t->ctx, now + c->reachable_ns - 1, &t->tx);
    assert_int_equal(e->state, NEIGH6_REACHABLE);
    now += c->reachable_ns;
    rt_nd_tick(&t->ctx, now, &t->tx);
    assert_int_equal(e->state, NEIGH6_STALE);
    assert_int_equal(t->tx.n, 0);
    /* A use: STALE -> DELAY; the packet still goes, to the old MAC. */
    t_send(t, dst, 1, now);
    assert_int_equal(e->state, NEIGH6_DELAY);
    assert_int_equal(t->tx.n, 1);
    t_tx_free(t);
    /* DELAY -> PROBE after delay_ns: a unicast solicitation to its MAC. */
    rt_nd_tick(&t->ctx, now + c->delay_ns - 1, &t->tx);
    assert_int_equal(e->state, NEIGH6_DELAY);
    now += c->delay_ns;
    rt_nd_tick(&t->ctx, now, &t->tx);
    assert_int_equal(e->state, NEIGH6_PROBE);
    assert_int_equal(t->tx.n, 1);
    const uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[0]);
    assert_memory_equal(f, t_host_mac, 6);
    assert_memory_equal(f + PKT_ETH_HLEN + PKT_IP6_DST, dst, 16);
    assert_int_equal(f[PKT_ETH_HLEN + PKT_IP6_HLEN], RT_ICMP6_NS);
    t_tx_free(t);
    /* A solicited answer: PROBE -> REACHABLE. */
    t6_input(t, t_na(t, 2, dst, t->ctx.port[2].a6[1].a, t_host_mac, RT_ND_NA_S | RT_ND_NA_O), now);
    assert_int_equal(e->state, NEIGH6_REACHABLE);
    /* Again, and this time no answer: max_retries probes, then it goes. */
    now += c->reachable_ns;
    rt_nd_tick(&t->ctx, now, &t->tx);
    t_send(t, dst, 1, now);
    now += c->delay_ns;
    rt_nd_tick(&t->ctx, now, &t->tx);
    assert_int_equal(e->state, NEIGH6_PROBE);
    for (uint32_t k = 1; k < c->max_retries; k++) {
        now += c->retrans_ns;
        rt_nd_tick(&t->ctx, now, &t->tx);
        assert_int_equal(e->state, NEIGH6_PROBE);
    }
    now += c->retrans_ns;
    rt_nd_tick(&t->ctx, now, &t->tx);
    assert_null(neigh6_find(&s->neigh6, dst));
    assert_int_equal(t->ctr.c[RT_CTR_ND_EXPIRED], 1);
    /* 1 forwarded, then max_retries unicast probes. */
    assert_int_equal(t->tx.n, 1 + c->max_retries);
    t_tx_free(t);
    /* An unused STALE entry goes after stale_gc_ns. */
    uint8_t h[16];
    t6_addr(h, false, 0, 9);
    uint8_t snma[16];
    rt_ip6_snma(t->ctx.port[0].a6[0].a, snma);
    t6_input(t, t_ns(t, 0, h, snma, t->ctx.port[0].a6[0].a, t_host_mac, 255), now);
    t_tx_free(t);
    assert_non_null(neigh6_find(&s->neigh6, h));
    rt_nd_tick(&t->ctx, now + c->stale_gc_ns, &t->tx);
    assert_null(neigh6_find(&s->neigh6, h));
    t_no_leak(t);
}

/* A router started without the ports a reload removed (the last, port 3,
 * and port 1, whose slot is vacant) forgets their entries, static ones
 * too, and keeps every other. */
static void test_rt_nd_forget_ports(void **state)
{
    struct t_rt6 *s = *state;
    uint8_t ip[16], mac[6] = {0x02, 0xee, 0, 0, 0, 0};
    unsigned n = (s->neigh6.mask + 1) / 2;
    for (unsigned i = 0; i < n; i++) {
        t6_addr(ip, false, 0, (uint16_t)(i + 1));
        assert_int_equal(neigh6_add_static(&s->neigh6, ip, mac, (uint16_t)(i % 4)), 0);
    }
    assert_int_equal(rt_nd_forget_ports(&s->neigh6, 3, 1u << 1), (int)(n / 2));
    for (unsigned i = 0; i < n; i++) {
        t6_addr(ip, false, 0, (uint16_t)(i + 1));
        assert_int_equal(neigh6_find(&s->neigh6, ip) != NULL, i % 4 == 0 || i % 4 == 2);
    }
    assert_int_equal(rt_nd_forget_ports(&s->neigh6, 3, 1u << 1), 0);
}

/* Nobody answers: the solicitation is repeated max_retries times in all,
 * then each held packet draws Address Unreachable (1/3). */
static void test_rt_nd_failed(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    const struct rt_cfg *c = &t->ctx.cfg;
    uint8_t dst[16];
    t6_addr(dst, false, 2, 0x55);
    uint64_t now = 1000000000ull;
    t_send(t, dst, 2, now);
    assert_int_equal(t->ctr.c[RT_CTR_ND_NS_TX], 1);
    t_tx_free(t);
    for (uint32_t k = 1; k < c->max_retries; k++) {
        now += c->retrans_ns;
        rt_nd_tick(&t->ctx, now, &t->tx);
    }
    assert_int_equal(t->ctr.c[RT_CTR_ND_NS_TX], c->max_retries);
    t_tx_free(t);
    now += c->retrans_ns;
    rt_nd_tick(&t->ctx, now, &t->tx);
    assert_null(neigh6_find(&s->neigh6, dst));
    assert_int_equal(t->ctr.c[RT_CTR_DROP6_NEIGH_FAILED], 2);
    assert_int_equal(t->tx.n, 2);
    for (unsigned i = 0; i < 2; i++) {
        const uint8_t *ip6 = (const uint8_t *)ipc_pool_data(&t->pool, t->tx.bufs[i]) + PKT_ETH_HLEN;
        assert_int_equal(ip6[PKT_IP6_HLEN], RT_ICMP6_UNREACH);
        assert_int_equal(ip6[PKT_IP6_HLEN + 1], RT_ICMP6_UNREACH_ADDR);
        assert_true(t6_icmp_csum_ok(ip6));
        assert_int_equal(ipc_pool_meta(&t->pool, t->tx.bufs[i])->out_port, 0);
    }
    assert_int_equal(t->ctr.pending6, 0);
    t_tx_free(t);
    t_no_leak(t);
}

/* A scan of one port's unused addresses: held packets stop at the port's
 * share (RT_PENDING_MIN at least, cfg.pending_max / ports), counted with
 * ARP's; each address past it costs nothing. Another port still gets its
 * share. */
static void test_rt_nd_pending_bound(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    t->ctx.cfg.pending_max = 3 * RT_PENDING_MIN;
    uint32_t share = rt_pending_share(&t->ctx);
    assert_int_equal(share, RT_PENDING_MIN);
    const uint32_t qlim = rt_neigh_qlimit(&t->ctx); /* the share: smaller than NEIGH_QMAX */
    uint8_t dst[16];
    for (unsigned i = 0; i < share + 10; i++) {
        t6_addr(dst, false, 2, 0x1000 + i);
        t_send(t, dst, 1, 1000);
    }
    assert_int_equal(t->ctr.pending6, share);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_LIMIT], 10);
    assert_int_equal(t->ctr.c[RT_CTR_ND_NS_TX], share); /* none for the addresses past it */
    t_tx_free(t);
    /* One neighbour's own queue is bounded too. */
    t6_addr(dst, false, 1, 0x2000);
    t_send(t, dst, qlim + 3, 2000);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_FULL], 3);
    assert_int_equal(t->ctr.pending6, share + qlim);
    t_tx_free(t);
    /* The ARP side counts against the same pending_max. */
    t->ctr.pending = qlim; /* as if ARP held a neighbour's queue */
    t6_addr(dst, false, 0, 0x3000);
    t_send(t, dst, 1, 3000);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_LIMIT], 11);
    t->ctr.pending = 0;
    t_tx_free(t);
    /* A clean stop frees what waits. */
    rt_nd_free_pending(&t->ctx);
    assert_int_equal(t->ctr.pending6, 0);
    assert_int_equal(t->ctr.c[RT_CTR_DROP_PENDING_RESTART], share + qlim);
    t_no_leak(t);
}

/* Duplicate Address Detection at start (RFC 4862 §5.4, optimistic): one
 * probe per address at the first tick; an advertisement for one of ours
 * from another MAC within a second takes it out of use; after the window,
 * one is only ignored. */
static void test_rt_nd_dad(void **state)
{
    struct t_rt6 *s = *state;
    struct t_rt *t = s->t;
    struct rt_port *pt = &t->ctx.port[0];
    static const uint8_t unspec[16];
    pt->dad_sent = false;
    rt_nd_tick(&t->ctx, 1000, &t->tx);
    assert_int_equal(t->tx.n, 2); /* its global and link-local addresses */
    for (uint32_t i = 0; i < t->tx.n; i++) {
        const uint8_t *f = ipc_pool_data(&t->pool, t->tx.bufs[i]);
        const uint8_t *ip6 = f + PKT_ETH_HLEN, *ic = ip6 + PKT_IP6_HLEN;
        uint8_t snma[16];
        rt_ip6_snma(ic + 8, snma);
        assert_memory_equal(ip6 + PKT_IP6_SRC, unspec, 16);
        assert_memory_equal(ip6 + PKT_IP6_DST, snma, 16);
        assert_int_equal(ip6[PKT_IP6_HLIM], 255);
        assert_int_equal(ic[0], RT_ICMP6_NS);
        assert_int_equal(pkt_get16(ip6 + PKT_IP6_PLEN), RT_ND_NS_LEN); /* no link-layer option from :: */
        assert_true(rt_ip6_port_addr(pt, ic + 8) >= 0);
        assert_true(t6_icmp_csum_ok(ip6));
    }
    t_tx_free(t);
    assert_int_equal(t->ctr.c[RT_CTR_ND_NS_TX], 2);
    uint8_t global[16];
    memcpy(global, pt->a6[0].a, 16);
    /* A host advertises our global address, half a second later: a conflict. */
    uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
    t6_input(t, t_na(t, 0, global, all_nodes, t_host_mac, RT_ND_NA_O), 1000 + 500000000ull);
    assert_int_equal(t->ctr.c[RT_CTR_ND_DAD_CONFLICT], 1);
    assert_int_equal(pt->n6, 1);
    assert_int_equal(rt_ip6_port_addr(pt, global), -1);
    assert_int_equal(pt->ll6, 0); /* the link-local address moved down, still known */
    /* A solicitation for it is no longer answered. */
    uint8_t snma[16], host[16];
    t6_addr(host, false, 0, 9);
    rt_ip6_snma(global, snma);
    t6_input(t, t_ns(t, 0, host, snma, global, t_host_mac, 255), 1000 + 600000000ull);
    assert_int_equal(t->tx.n, 0);
    /* After the window, an advertisement for the link-local one is ignored. */
    const uint8_t *ll = pt->a6[pt->ll6].a;
    t6_input(t, t_na(t, 0, ll, all_nodes, t_host_mac, RT_ND_NA_O), 1000 + 2000000000ull);
    assert_int_equal(t->ctr.c[RT_CTR_ND_DAD_CONFLICT], 1);
    assert_int_equal(pt->n6, 1);
    t_no_leak(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_nd_answer, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_nd_other_link_source, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_nd_not_answered, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_nd_resolve, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_nd_commands, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_nd_nud, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_nd_failed, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_nd_forget_ports, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_nd_pending_bound, t6_setup, t6_teardown),
        cmocka_unit_test_setup_teardown(test_rt_nd_dad, t6_setup, t6_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
