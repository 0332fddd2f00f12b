/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_zones.c: trust zones (docs/security.md): the copy of a
 * packet into another zone's pool (ipc_pool_copy_pkt), the router's move
 * (rt_zone_move), a packet held for ARP in its egress port's zone and
 * released from there, and the manifest's zone numbering.
 */
#include "test_rt_common.h"

#include "supervisor/manifest.h"

#define T_SEC 1000000000ull

struct t_zone {
    int fd;
    struct ipc_pool sup, pool;
};

static void t_zone_open(struct t_rt *t, struct t_zone *z)
{
    struct ipc_err err = {{0}};
    assert_int_equal(ipc_pool_create("t-zone-1", T_NBUFS, IPC_FRAME_DEFAULT, &z->fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&z->sup, z->fd, IPC_OWNER_SUPERVISOR, &err), 0);
    assert_int_equal(ipc_pool_attach(&z->pool, z->fd, T_ROUTER, &err), 0);
    /* Ports 1 and 2 in zone 1; port 0 in zone 0. */
    t->ctx.zpool[1] = &z->pool;
    t->ctx.nzones = 2;
    t->ctx.port_zone[1] = t->ctx.port_zone[2] = 1;
}

static void t_zone_close(struct t_zone *z)
{
    struct ipc_census c;
    ipc_pool_flush(&z->pool);
    assert_int_equal(ipc_pool_census(&z->sup, NULL, 0, &c), 0);
    assert_int_equal(c.free, T_NBUFS);
    ipc_pool_detach(&z->pool);
    ipc_pool_detach(&z->sup);
    close(z->fd);
}

/* Bytes of the packet at @b as one run. */
static uint32_t t_bytes(const struct ipc_pool *p, ipc_buf b, uint8_t *out, uint32_t cap)
{
    uint32_t n = 0;
    for (unsigned k = 0; b != IPC_BUF_NONE && k < IPC_CHAIN_MAX; k++, b = ipc_pool_meta(p, b)->next) {
        const struct ipc_meta *m = ipc_pool_meta(p, b);
        assert_true(n + m->len <= cap);
        memcpy(out + n, ipc_pool_data(p, b), m->len);
        n += m->len;
    }
    return n;
}

static void t_copy_case(struct t_rt *t, struct t_zone *z, uint32_t bytes, uint16_t off_delta)
{
    ipc_buf b, c;
    assert_int_equal(ipc_pool_alloc_chain(&t->pool, bytes, &b), 0);
    struct ipc_meta *m = ipc_pool_meta(&t->pool, b);
    /* A header pushed into the headroom, as the router may. */
    m->off = (uint16_t)(m->off - off_delta);
    m->len = (uint16_t)(m->len + off_delta);
    m->pkt_len += off_delta;
    bytes += off_delta;
    for (ipc_buf f = b; f != IPC_BUF_NONE; f = ipc_pool_meta(&t->pool, f)->next)
        for (uint32_t i = 0; i < ipc_pool_meta(&t->pool, f)->len; i++)
            ipc_pool_data(&t->pool, f)[i] = (uint8_t)(f * 7 + i);
    m->in_port = 0;
    m->out_port = 1;
    m->vnet = (struct ipc_vnet){.flags = 1, .gso_type = 1, .hdr_len = 54, .gso_size = 1448, .csum_start = 34,
                                .csum_offset = 16};
    m->mark = 0xabcd;
    m->user[2] = 42;
    assert_int_equal(ipc_pool_copy_pkt(&z->pool, &t->pool, b, &c), 0);
    static uint8_t x[70000], y[70000];
    assert_int_equal(t_bytes(&t->pool, b, x, sizeof(x)), bytes);
    assert_int_equal(t_bytes(&z->pool, c, y, sizeof(y)), bytes);
    assert_memory_equal(x, y, bytes);
    const struct ipc_meta *cm = ipc_pool_meta(&z->pool, c);
    assert_int_equal(cm->off, IPC_HEADROOM);
    assert_int_equal(cm->next == IPC_BUF_NONE ? cm->len : cm->pkt_len, bytes);
    assert_int_equal(cm->out_port, 1);
    assert_memory_equal(&cm->vnet, &m->vnet, sizeof(cm->vnet));
    assert_int_equal(cm->mark, 0xabcd);
    assert_int_equal(cm->user[2], 42);
    assert_int_equal(ipc_pool_owner(&z->pool, c), T_ROUTER);
    assert_int_equal(ipc_pool_owner(&t->pool, b), T_ROUTER); /* the original stays the caller's */
    ipc_pool_free(&t->pool, &b, 1);
    ipc_pool_free(&z->pool, &c, 1);
}

static void test_zone_copy_pkt(void **state)
{
    struct t_rt *t = *state;
    struct t_zone z;
    t_zone_open(t, &z);
    t_copy_case(t, &z, 60, 0);
    t_copy_case(t, &z, 1514, 0);
    t_copy_case(t, &z, 1700, 100); /* one frame of 1,800: two in the copy */
    t_copy_case(t, &z, 64000, 14); /* a GSO chain */
    t_zone_close(&z);
}

static void test_zone_move(void **state)
{
    struct t_rt *t = *state;
    struct t_zone z;
    t_zone_open(t, &z);
    ipc_buf b = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(10, 1, 0, 9), 17, 64, 100, 0);
    /* To a port of its own zone: itself, no copy. */
    assert_int_equal(rt_zone_move(&t->ctx, b, 0), b);
    assert_int_equal(t->ctr.c[RT_CTR_ZONE_COPY], 0);
    ipc_buf c = rt_zone_move(&t->ctx, b, 2);
    assert_int_not_equal(c, IPC_BUF_NONE);
    assert_int_equal(t->ctr.c[RT_CTR_ZONE_COPY], 1);
    assert_int_equal(ipc_pool_owner(&t->pool, b), IPC_OWNER_FREE); /* the original went back */
    assert_int_equal(ipc_pool_meta(&z.pool, c)->len, 14 + 20 + 100);
    ipc_pool_free(&z.pool, &c, 1);
    t_zone_close(&z);
}

/* An ARP reply on port 1, in zone 1's pool (port 1's ring carries zone 1's handles). */
static ipc_buf t_arp_reply(struct t_rt *t, struct ipc_pool *p, const uint8_t *sha, uint32_t spa)
{
    /* Ethertype ARP; Ethernet, IPv4, address lengths 6 and 4; a reply. */
    static const uint8_t arp_hdr[10] = {0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 2};
    uint8_t f[60] = {0};
    memcpy(f, t->ctx.port[1].mac, 6);
    memcpy(f + 6, sha, 6);
    memcpy(f + 12, arp_hdr, sizeof(arp_hdr));
    memcpy(f + 22, sha, 6);
    pkt_put32(f + 28, spa);
    memcpy(f + 32, t->ctx.port[1].mac, 6);
    pkt_put32(f + 38, t->ctx.port[1].ip);
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(p, &b, 1), 1);
    memcpy(ipc_pool_data(p, b), f, sizeof(f));
    pkt_set_len(ipc_pool_meta(p, b), sizeof(f));
    ipc_pool_meta(p, b)->in_port = 1;
    return b;
}

static void test_zone_held_in_egress_zone(void **state)
{
    struct t_rt *t = *state;
    struct t_zone z;
    static const uint8_t gw_mac[6] = {0x02, 0xbb, 0, 0, 0, 2};
    t_zone_open(t, &z);
    struct fib_nh via = {.gw = T_IP(10, 1, 0, 2), .port = 1};
    assert_int_equal(fib_add(&t->fibw, T_IP(20, 0, 0, 0), 8, &via), 0);
    ipc_buf in = t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 1, 1), 17, 64, 50, 0);
    memset(t_ip(t, in) + 28, 0x5a, 42);
    t_input(t, &in, 1, T_SEC);
    /* The ARP request (zone 0's burst: the loop copies it at the flush), and the packet held in zone 1. */
    assert_int_equal(t->tx.n, 1);
    t_tx_free(t);
    assert_int_equal(t->ctr.c[RT_CTR_ZONE_COPY], 1);
    struct neigh_entry *e = neigh_find(&t->neigh, T_IP(10, 1, 0, 2));
    assert_non_null(e);
    assert_int_equal(e->qlen, 1);
    assert_int_equal(ipc_pool_owner(&z.pool, e->q[0]), T_ROUTER);
    assert_int_equal(ipc_pool_owner(&t->pool, in), IPC_OWNER_FREE);
    /* The reply comes in zone 1's ring: the packet leaves from zone 1, intact. */
    rt_zone_switch(&t->ctx, 1, &t->tx);
    ipc_buf r = t_arp_reply(t, &z.pool, gw_mac, T_IP(10, 1, 0, 2));
    t_input(t, &r, 1, T_SEC + 5);
    assert_int_equal(t->tx.n, 1);
    ipc_buf out = t->tx.bufs[0];
    const uint8_t *f = ipc_pool_data(&z.pool, out);
    assert_memory_equal(f, gw_mac, 6);
    assert_int_equal(f[14 + PKT_IP_TTL], 63);
    for (unsigned i = 0; i < 42; i++)
        assert_int_equal(f[14 + 28 + i], 0x5a);
    ipc_pool_free(&z.pool, &out, 1);
    t->tx.n = 0;
    assert_int_equal(t->ctr.c[RT_CTR_ZONE_COPY], 1);
    rt_zone_switch(&t->ctx, 0, &t->tx);
    t_zone_close(&z);
}

#define T_PORT(n, z) "[port " n "]\ndriver = tap\nifname = t" n "\naddress = 10.%d.0.1/24\n" z "\n"

static void test_zone_manifest_numbering(void **state)
{
    (void)state;
    static struct sup_manifest m;
    struct sup_manifest_err err;
    char text[2048];
    snprintf(text, sizeof(text), T_PORT("a", "") T_PORT("b", "zone = dmz") T_PORT("c", "") T_PORT("d", "zone = dmz")
             T_PORT("e", "zone = lan"), 1, 2, 3, 4, 5);
    if (sup_manifest_load_string("z.ini", text, &m, &err) != 0)
        fail_msg("%s", err.msg);
    unsigned want[5] = {0, 1, 0, 1, 2};
    for (unsigned p = 0; p < 5; p++)
        assert_int_equal(m.ports[p].zone, want[p]);
    assert_string_equal(m.ports[0].zone_name, "default");
    sup_manifest_free(&m);
    /* A zone name is a name. */
    snprintf(text, sizeof(text), T_PORT("a", "zone = Bad!"), 1);
    assert_int_equal(sup_manifest_load_string("z.ini", text, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "zone"));
    sup_manifest_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_zone_copy_pkt, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_zone_move, t_rt_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_zone_held_in_egress_zone, t_rt_setup, t_rt_teardown),
        cmocka_unit_test(test_zone_manifest_numbering),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
