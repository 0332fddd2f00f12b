/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_vlan.c: the tags of VLAN sub-interfaces
 * (drivers/common/vlan.c) on real pool buffers: an 802.1Q and an 802.1ad
 * (QinQ) tag pushed into the headroom and popped again, byte for byte, with
 * the data offset, lengths and the virtio-net offsets following; the RX
 * map (tags to port, untagged to the parent or dropped, unknown VLANs and
 * short frames dropped and counted); the TX map (port to tags, the parent's
 * own untouched, no headroom refused); a chain's first frame only; and the
 * config checks (a VLAN id out of range, a duplicate port, the parent).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "drivers/common/vlan.h"
#include "ipc/pkt.h"

#define T_NBUFS 1024u
#define T_SELF 5u
#define T_PARENT 0u

struct fx {
    int pool_fd;
    struct ipc_pool pool;
    struct ipc_svc_config *cfg;
    struct tbl_driver_cfg dc;
    struct drv_vlan v;
    struct ipc_svc svc;
    struct ipc_svc_stats *stats;
    struct drv d;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    struct ipc_err err;
    assert_non_null(f);
    assert_int_equal(ipc_pool_create("t-vlan", T_NBUFS, IPC_FRAME_DEFAULT, &f->pool_fd, &err), 0);
    assert_int_equal(ipc_pool_attach(&f->pool, f->pool_fd, T_SELF, &err), 0);
    f->cfg = calloc(1, sizeof(*f->cfg));
    assert_non_null(f->cfg);
    f->cfg->nports = 5;
    static const char *const names[] = {"lan", "lan.10", "lan.20", "lan.100.7", "wan"};
    for (unsigned p = 0; p < 5; p++)
        strcpy(f->cfg->ports[p].name, names[p]);
    f->dc.nvlan = 3;
    f->dc.vlan[0] = (struct tbl_vlan){.port = 1, .ntags = 1, .tpid = {0x8100}, .vid = {10}};
    f->dc.vlan[1] = (struct tbl_vlan){.port = 2, .ntags = 1, .tpid = {0x8100}, .vid = {20}};
    f->dc.vlan[2] = (struct tbl_vlan){.port = 3, .ntags = 2, .tpid = {0x88a8, 0x8100}, .vid = {100, 7}};
    assert_int_equal(drv_vlan_init(&f->v, f->cfg, &f->dc, T_PARENT, &err), 0);
    f->stats = calloc(1, sizeof(*f->stats));
    assert_non_null(f->stats);
    f->svc.stats = f->stats;
    f->svc.cfg = f->cfg;
    static const char *const base[] = {"rx_pkts", "tx_pkts"};
    const char *const *all;
    unsigned n = drv_vlan_counter_names(&f->v, f->cfg, base, 2, &all);
    assert_int_equal(n, 2 + DRV_VLAN_C_PARENT + 3 * DRV_VLAN_C_PER_PORT);
    assert_string_equal(all[2], "rx_drop_untagged");
    assert_string_equal(all[2 + DRV_VLAN_C_PARENT], "lan.10.rx_pkts");
    assert_string_equal(all[n - 1], "lan.100.7.tx_bytes");
    struct drv_ids ids = {0};
    drv_init(&f->d, &f->svc, ipc_svc_counters(&f->svc, all, n), &ids);
    f->d.pool = &f->pool;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    drv_dead_flush(&f->d);
    struct ipc_census c;
    assert_int_equal(ipc_pool_census(&f->pool, NULL, 0, &c), 0);
    assert_int_equal(c.free, T_NBUFS); /* every buffer back */
    ipc_pool_detach(&f->pool);
    close(f->pool_fd);
    free(f->stats);
    free(f->cfg);
    free(f);
    return 0;
}

/* A frame of @len bytes at the headroom: MACs, then @tags (tpid, tci pairs),
 * then IPv4's ethertype and a counting payload. */
static ipc_buf frame(struct fx *f, const uint16_t *tags, unsigned ntags, uint32_t len)
{
    ipc_buf b;
    assert_int_equal(ipc_pool_alloc(&f->pool, &b, 1), 1);
    uint8_t *p = ipc_pool_data(&f->pool, b);
    for (uint32_t i = 0; i < len; i++)
        p[i] = (uint8_t)(i * 7 + 3);
    memcpy(p, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02", 12);
    for (unsigned k = 0; k < ntags; k++) {
        pkt_put16(p + 12 + 4 * k, tags[2 * k]);
        pkt_put16(p + 14 + 4 * k, tags[2 * k + 1]);
    }
    pkt_put16(p + 12 + 4 * ntags, PKT_ETH_P_IP);
    pkt_set_len(ipc_pool_meta(&f->pool, b), len);
    return b;
}

static uint64_t ctr(struct fx *f, const char *name)
{
    for (unsigned k = 0; k < f->stats->nctr; k++)
        if (strcmp(f->stats->ctr_name[k], name) == 0)
            return f->stats->ctr[k];
    fail_msg("no counter %s", name);
    return 0;
}

static void test_push_pop_8021q(void **state)
{
    struct fx *f = *state;
    ipc_buf b = frame(f, NULL, 0, 100);
    struct ipc_meta *m = ipc_pool_meta(&f->pool, b);
    uint8_t before[100];
    memcpy(before, ipc_pool_data(&f->pool, b), 100);
    m->vnet.flags = 1; /* NEEDS_CSUM */
    m->vnet.csum_start = 34;
    m->vnet.hdr_len = 54;
    assert_true(drv_vlan_push(&f->pool, b, &f->v.e[0]));
    const uint8_t *p = ipc_pool_data(&f->pool, b);
    assert_int_equal(m->off, IPC_HEADROOM - 4);
    assert_int_equal(m->len, 104);
    assert_int_equal(pkt_total_len(m), 104);
    assert_memory_equal(p, before, 12);
    assert_int_equal(pkt_get16(p + 12), 0x8100);
    assert_int_equal(pkt_get16(p + 14), 10);
    assert_memory_equal(p + 16, before + 12, 88);
    assert_int_equal(m->vnet.csum_start, 38);
    assert_int_equal(m->vnet.hdr_len, 58);
    assert_true(drv_vlan_pop(&f->pool, b, 1));
    assert_int_equal(m->off, IPC_HEADROOM);
    assert_int_equal(m->len, 100);
    assert_memory_equal(ipc_pool_data(&f->pool, b), before, 100);
    assert_int_equal(m->vnet.csum_start, 34);
    assert_int_equal(m->vnet.hdr_len, 54);
    ipc_pool_free(&f->pool, &b, 1);
}

static void test_push_pop_qinq(void **state)
{
    struct fx *f = *state;
    ipc_buf b = frame(f, NULL, 0, 64);
    struct ipc_meta *m = ipc_pool_meta(&f->pool, b);
    uint8_t before[64];
    memcpy(before, ipc_pool_data(&f->pool, b), 64);
    assert_true(drv_vlan_push(&f->pool, b, &f->v.e[2]));
    const uint8_t *p = ipc_pool_data(&f->pool, b);
    assert_int_equal(m->off, IPC_HEADROOM - 8);
    assert_int_equal(m->len, 72);
    /* The outer (service) tag first, then the customer's. */
    assert_int_equal(pkt_get16(p + 12), 0x88a8);
    assert_int_equal(pkt_get16(p + 14), 100);
    assert_int_equal(pkt_get16(p + 16), 0x8100);
    assert_int_equal(pkt_get16(p + 18), 7);
    assert_memory_equal(p + 20, before + 12, 52);
    /* Received, the same frame maps to its port, both tags gone. */
    assert_true(drv_vlan_rx_one(&f->d, &f->v, b));
    assert_int_equal(m->in_port, 3);
    assert_int_equal(m->off, IPC_HEADROOM);
    assert_memory_equal(ipc_pool_data(&f->pool, b), before, 64);
    assert_int_equal(ctr(f, "lan.100.7.rx_pkts"), 1);
    assert_int_equal(ctr(f, "lan.100.7.rx_bytes"), 64);
    ipc_pool_free(&f->pool, &b, 1);
}

static void test_rx_map(void **state)
{
    struct fx *f = *state;
    static const uint16_t t10[] = {0x8100, 0x2000 | 10}; /* priority 1: the VLAN id is what counts */
    static const uint16_t t20[] = {0x8100, 20};
    static const uint16_t t30[] = {0x8100, 30};
    static const uint16_t s100[] = {0x88a8, 100, 0x8100, 8}; /* the right S-tag, an unknown C-tag */
    static const uint16_t c100[] = {0x8100, 100, 0x8100, 7}; /* QinQ's ids behind the wrong outer TPID */
    ipc_buf b = frame(f, t10, 1, 80);
    assert_true(drv_vlan_rx_one(&f->d, &f->v, b));
    assert_int_equal(ipc_pool_meta(&f->pool, b)->in_port, 1);
    assert_int_equal(pkt_eth_type(ipc_pool_data(&f->pool, b)), PKT_ETH_P_IP);
    ipc_pool_free(&f->pool, &b, 1);
    b = frame(f, t20, 1, 80);
    assert_true(drv_vlan_rx_one(&f->d, &f->v, b));
    assert_int_equal(ipc_pool_meta(&f->pool, b)->in_port, 2);
    ipc_pool_free(&f->pool, &b, 1);
    assert_int_equal(ctr(f, "lan.10.rx_pkts"), 1);
    assert_int_equal(ctr(f, "lan.10.rx_bytes"), 76);
    assert_int_equal(ctr(f, "lan.20.rx_pkts"), 1);

    /* Unknown VLANs, and a tag cut short, are dropped and counted. */
    assert_false(drv_vlan_rx_one(&f->d, &f->v, frame(f, t30, 1, 80)));
    assert_false(drv_vlan_rx_one(&f->d, &f->v, frame(f, s100, 2, 80)));
    assert_false(drv_vlan_rx_one(&f->d, &f->v, frame(f, c100, 2, 80)));
    assert_false(drv_vlan_rx_one(&f->d, &f->v, frame(f, t10, 1, 16)));
    assert_int_equal(ctr(f, "rx_drop_vlan_unknown"), 4);

    /* Untagged: dropped by default, the parent's with untagged = parent. */
    assert_false(drv_vlan_rx_one(&f->d, &f->v, frame(f, NULL, 0, 60)));
    assert_int_equal(ctr(f, "rx_drop_untagged"), 1);
    f->v.untagged_drop = false;
    b = frame(f, NULL, 0, 60);
    ipc_pool_meta(&f->pool, b)->in_port = 9;
    assert_true(drv_vlan_rx_one(&f->d, &f->v, b));
    assert_int_equal(ipc_pool_meta(&f->pool, b)->in_port, T_PARENT);
    assert_int_equal(ipc_pool_meta(&f->pool, b)->len, 60);
    ipc_pool_free(&f->pool, &b, 1);
    assert_int_equal(ctr(f, "rx_drop_untagged"), 1);
}

static void test_tx_map(void **state)
{
    struct fx *f = *state;
    ipc_buf b = frame(f, NULL, 0, 60);
    struct ipc_meta *m = ipc_pool_meta(&f->pool, b);
    m->out_port = 2;
    assert_int_equal(drv_vlan_tx_one(&f->d, &f->v, b), DRV_KEEP);
    assert_int_equal(pkt_get16(ipc_pool_data(&f->pool, b) + 12), 0x8100);
    assert_int_equal(pkt_get16(ipc_pool_data(&f->pool, b) + 14), 20);
    assert_int_equal(ctr(f, "lan.20.tx_pkts"), 1);
    assert_int_equal(ctr(f, "lan.20.tx_bytes"), 64);
    ipc_pool_free(&f->pool, &b, 1);

    /* The parent's own, and a port that is not ours: untouched. */
    for (uint16_t port = 0; port < 16; port += 4) {
        b = frame(f, NULL, 0, 60);
        m = ipc_pool_meta(&f->pool, b);
        m->out_port = port == 0 ? T_PARENT : port;
        assert_int_equal(drv_vlan_tx_one(&f->d, &f->v, b), DRV_KEEP);
        assert_int_equal(m->off, IPC_HEADROOM);
        assert_int_equal(pkt_eth_type(ipc_pool_data(&f->pool, b)), PKT_ETH_P_IP);
        ipc_pool_free(&f->pool, &b, 1);
    }

    /* No headroom for the tag: refused, counted by the caller, unchanged. */
    b = frame(f, NULL, 0, 60);
    m = ipc_pool_meta(&f->pool, b);
    m->off = 2;
    m->out_port = 1;
    assert_int_equal(drv_vlan_tx_one(&f->d, &f->v, b), f->v.ctr0 + DRV_VLAN_C_TX_DROP);
    assert_int_equal(m->off, 2);
    assert_int_equal(m->len, 60);
    ipc_pool_free(&f->pool, &b, 1);
}

/* A chain: only its first frame moves, the packet's length follows. */
static void test_chain(void **state)
{
    struct fx *f = *state;
    ipc_buf head;
    assert_int_equal(ipc_pool_alloc_chain(&f->pool, 3000, &head), 0);
    struct ipc_meta *m = ipc_pool_meta(&f->pool, head);
    assert_true(m->next != IPC_BUF_NONE);
    uint32_t first = m->len;
    m->out_port = 1;
    assert_true(drv_vlan_push(&f->pool, head, &f->v.e[0]));
    assert_int_equal(m->len, first + 4);
    assert_int_equal(m->pkt_len, 3004);
    assert_true(drv_vlan_pop(&f->pool, head, 1));
    assert_int_equal(m->pkt_len, 3000);
    assert_int_equal(m->len, first);
    ipc_pool_free(&f->pool, &head, 1);
}

static void test_config_checks(void **state)
{
    struct fx *f = *state;
    struct drv_vlan v;
    struct ipc_err err;
    struct tbl_driver_cfg dc = f->dc;
    dc.vlan[1].vid[0] = 4095;
    assert_int_equal(drv_vlan_init(&v, f->cfg, &dc, T_PARENT, &err), -EINVAL);
    dc = f->dc;
    dc.vlan[1].vid[0] = 0;
    assert_int_equal(drv_vlan_init(&v, f->cfg, &dc, T_PARENT, &err), -EINVAL);
    dc = f->dc;
    dc.vlan[1].port = 1; /* twice */
    assert_int_equal(drv_vlan_init(&v, f->cfg, &dc, T_PARENT, &err), -EINVAL);
    dc = f->dc;
    dc.vlan[1].port = T_PARENT;
    assert_int_equal(drv_vlan_init(&v, f->cfg, &dc, T_PARENT, &err), -EINVAL);
    dc = f->dc;
    dc.vlan[1].port = 5; /* past nports */
    assert_int_equal(drv_vlan_init(&v, f->cfg, &dc, T_PARENT, &err), -EINVAL);
    dc = f->dc;
    dc.vlan[0].tpid[0] = 0x0800;
    assert_int_equal(drv_vlan_init(&v, f->cfg, &dc, T_PARENT, &err), -EINVAL);
    dc = f->dc;
    dc.vlan[2].tpid[1] = 0x88a8; /* the inner tag is 802.1Q */
    assert_int_equal(drv_vlan_init(&v, f->cfg, &dc, T_PARENT, &err), -EINVAL);
    dc = f->dc;
    dc.nvlan = DRV_VLAN_MAX + 1;
    assert_int_equal(drv_vlan_init(&v, f->cfg, &dc, T_PARENT, &err), -EINVAL);
    /* No VLANs: the driver's own counters only. */
    dc.nvlan = 0;
    assert_int_equal(drv_vlan_init(&v, f->cfg, &dc, T_PARENT, &err), 0);
    static const char *const base[] = {"rx_pkts"};
    const char *const *names;
    assert_int_equal(drv_vlan_counter_names(&v, f->cfg, base, 1, &names), 1);
    assert_ptr_equal(names, base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_push_pop_8021q, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push_pop_qinq, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rx_map, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tx_map, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_checks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
