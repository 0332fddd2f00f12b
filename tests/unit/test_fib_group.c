/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_fib_group.c: next-hop groups in both FIBs (tables/
 * fib_group.h): add, dedup by member set whatever the order, replace
 * (group to group, group to one next hop), delete with every reference
 * released, the buckets' shares by weight, bad member lists refused; a
 * group unlinked under a reader's open section is not reused until the
 * reader leaves; a writer that died mid-update (the region dirty) is rebuilt
 * from a snapshot with its groups; a group that fails its checks is
 * refused (-EUCLEAN), never followed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tables/fib6_write.h"
#include "tables/fib_impl.h"
#include "tables/fib_write.h"

#define T_IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

struct t_f4 {
    struct fib w, r;
    int fd, rfd;
};

static void t_f4_new(struct t_f4 *f)
{
    struct ipc_err err = {{0}};
    struct fib_params p = {.max_prefixes = 1024, .tbl8_groups = 64, .max_nh = 256};
    if (fib_create("t-fib-grp", &p, &f->w, &f->fd, &f->rfd, &err) != 0)
        fail_msg("create: %s", err.msg);
    if (fib_attach(&f->r, f->fd, f->rfd, 0, &err) != 0)
        fail_msg("attach: %s", err.msg);
}

static void t_f4_free(struct t_f4 *f)
{
    fib_detach(&f->r);
    fib_detach(&f->w);
    close(f->fd);
    close(f->rfd);
}

static const struct fib_nh t_m[4] = {{.gw = T_IP(10, 1, 0, 2), .port = 1},
                                     {.gw = T_IP(10, 2, 0, 2), .port = 2},
                                     {.gw = T_IP(10, 3, 0, 2), .port = 3},
                                     {.gw = T_IP(10, 4, 0, 2), .port = 4}};

/* The reader's view of @addr's route: its group's member gateways per bucket, counted. */
static unsigned t_shares(struct t_f4 *f, uint32_t addr, uint32_t *hdr_idx, unsigned share[5])
{
    fib_read_begin(&f->r);
    uint32_t i = fib_lookup(&f->r, addr);
    assert_int_not_equal(i, FIB_MISS);
    struct fib_nh h = fib_nh_at(&f->r, i);
    assert_true(h.flags & FIB_NH_F_GROUP);
    const _Atomic uint32_t *blk = fib_mp_block(&f->r.m, h.gw);
    memset(share, 0, 5 * sizeof(unsigned));
    for (unsigned b = 0; b < FIB_MP_BUCKETS; b++) {
        struct fib_nh m = fib_nh_at(&f->r, fib_mp_member(blk, fib_mp_bucket(blk, b)));
        assert_int_equal(m.flags, 0);
        assert_true(m.port >= 1 && m.port <= 4);
        share[m.port]++;
    }
    unsigned n = fib_mp_count(blk);
    fib_read_end(&f->r);
    *hdr_idx = i;
    return n;
}

static void test_fib_group4_add_dedup_replace_del(void **state)
{
    (void)state;
    struct t_f4 f;
    t_f4_new(&f);
    const uint16_t w[3] = {1, 2, 1};
    assert_int_equal(fib_add_multi(&f.w, T_IP(20, 0, 0, 0), 8, t_m, w, 3), 0);
    uint32_t h1, h2;
    unsigned share[5];
    assert_int_equal(t_shares(&f, T_IP(20, 9, 9, 9), &h1, share), 3);
    assert_int_equal(share[1], 64);
    assert_int_equal(share[2], 128);
    assert_int_equal(share[3], 64);

    /* The same set in another order: the same group. A /28 (a tbl8 group) too. */
    const struct fib_nh rev[3] = {t_m[2], t_m[0], t_m[1]};
    const uint16_t wr[3] = {1, 1, 2};
    assert_int_equal(fib_add_multi(&f.w, T_IP(30, 1, 2, 16), 28, rev, wr, 3), 0);
    assert_int_equal(t_shares(&f, T_IP(30, 1, 2, 17), &h2, share), 3);
    assert_int_equal(h1, h2);
    struct fib_stats st;
    fib_get_stats(&f.w, &st);
    assert_int_equal(st.nh_groups, 1);
    assert_int_equal(st.nh, 4); /* three members and a header */

    /* Read back through the writer: the members sorted, with their weights. */
    struct fib_nh got, mem[FIB_MP_MAX];
    uint16_t mw[FIB_MP_MAX];
    assert_int_equal(fib_get(&f.w, T_IP(20, 0, 0, 0), 8, &got), 0);
    assert_true(got.flags & FIB_NH_F_GROUP);
    assert_int_equal(fib_group_members(&f.w, &got, mem, mw), 3);
    for (unsigned k = 0; k < 3; k++) {
        assert_int_equal(mem[k].gw, t_m[k].gw);
        assert_int_equal(mem[k].port, t_m[k].port);
        assert_int_equal(mw[k], w[k]);
    }

    /* Replace with four members, equal weights: a new group, the old one kept by the /28. */
    assert_int_equal(fib_replace_multi(&f.w, T_IP(20, 0, 0, 0), 8, t_m, NULL, 4), 0);
    assert_int_equal(t_shares(&f, T_IP(20, 9, 9, 9), &h2, share), 4);
    assert_int_not_equal(h1, h2);
    for (unsigned p = 1; p <= 4; p++)
        assert_int_equal(share[p], 64);
    fib_get_stats(&f.w, &st);
    assert_int_equal(st.nh_groups, 2);
    assert_int_equal(st.nh, 6);
    /* A group back to one next hop; the last route of the old group deleted. */
    assert_int_equal(fib_replace(&f.w, T_IP(20, 0, 0, 0), 8, &t_m[3]), 0);
    assert_int_equal(fib_del(&f.w, T_IP(30, 1, 2, 16), 28), 0);
    fib_get_stats(&f.w, &st);
    assert_int_equal(st.nh_groups, 0);
    assert_int_equal(st.nh, 1);
    assert_int_equal(st.tbl8_used, 0);
    fib_reclaim(&f.w);
    fib_get_stats(&f.w, &st);
    assert_int_equal(st.nh_retired, 0);
    assert_int_equal(st.corrupt, 0);

    /* Bad member lists change nothing. */
    const struct fib_nh dup[2] = {t_m[0], t_m[0]}, nogw[2] = {t_m[0], {.gw = 0, .port = 1}};
    const uint16_t w0[2] = {1, 0}, wbig[2] = {1, FIB_MP_WEIGHT_MAX + 1};
    struct fib_nh many[FIB_MP_MAX + 1];
    for (unsigned k = 0; k <= FIB_MP_MAX; k++)
        many[k] = (struct fib_nh){.gw = T_IP(10, 5, 0, 2 + k), .port = 1};
    assert_int_equal(fib_add_multi(&f.w, T_IP(40, 0, 0, 0), 8, dup, NULL, 2), -EINVAL);
    assert_int_equal(fib_add_multi(&f.w, T_IP(40, 0, 0, 0), 8, nogw, NULL, 2), -EINVAL);
    assert_int_equal(fib_add_multi(&f.w, T_IP(40, 0, 0, 0), 8, t_m, w0, 2), -EINVAL);
    assert_int_equal(fib_add_multi(&f.w, T_IP(40, 0, 0, 0), 8, t_m, wbig, 2), -EINVAL);
    assert_int_equal(fib_add_multi(&f.w, T_IP(40, 0, 0, 0), 8, many, NULL, FIB_MP_MAX + 1), -EINVAL);
    assert_int_equal(fib_add_multi(&f.w, T_IP(40, 0, 0, 0), 8, many, NULL, FIB_MP_MAX), 0);
    assert_int_equal(fib_add_multi(&f.w, T_IP(20, 0, 0, 0), 8, t_m, NULL, 2), -EEXIST);
    assert_int_equal(fib_get(&f.w, T_IP(20, 0, 0, 0), 8, &got), 0);
    assert_int_equal(got.gw, t_m[3].gw);
    assert_int_equal(fib_lookup(&f.r, T_IP(41, 0, 0, 0)), FIB_MISS);
    t_f4_free(&f);
}

/* A group unlinked while a reader's section is open keeps its words until the reader leaves. */
static void test_fib_group4_reuse_after_readers(void **state)
{
    (void)state;
    struct t_f4 f;
    t_f4_new(&f);
    assert_int_equal(fib_add_multi(&f.w, T_IP(20, 0, 0, 0), 8, t_m, NULL, 2), 0);
    fib_read_begin(&f.r);
    struct fib_nh h = fib_nh_at(&f.r, fib_lookup(&f.r, T_IP(20, 1, 1, 1)));
    uint32_t g1 = h.gw;
    const _Atomic uint32_t *blk = fib_mp_block(&f.r.m, g1);
    uint32_t m0 = fib_mp_member(blk, 0), m1 = fib_mp_member(blk, 1);
    struct fib_nh n0 = fib_nh_at(&f.r, m0);

    assert_int_equal(fib_del(&f.w, T_IP(20, 0, 0, 0), 8), 0);
    assert_int_equal(fib_reclaim(&f.w), 0); /* the reader may still hold them */
    assert_int_equal(fib_add_multi(&f.w, T_IP(21, 0, 0, 0), 8, &t_m[2], NULL, 2), 0);
    struct fib_nh h2 = fib_nh_at(&f.r, fib_lookup(&f.r, T_IP(21, 1, 1, 1)));
    assert_int_not_equal(h2.gw, g1);
    /* What the reader holds is as it was. */
    assert_int_equal(fib_mp_count(blk), 2);
    assert_int_equal(fib_mp_member(blk, 0), m0);
    assert_int_equal(fib_mp_member(blk, 1), m1);
    assert_int_equal(fib_nh_at(&f.r, m0).gw, n0.gw);
    fib_read_end(&f.r);

    assert_true(fib_reclaim(&f.w) >= 4); /* the group, its header and its two members */
    assert_int_equal(fib_add_multi(&f.w, T_IP(22, 0, 0, 0), 8, &t_m[1], NULL, 3), 0);
    struct fib_nh h3 = fib_nh_at(&f.r, fib_lookup(&f.r, T_IP(22, 1, 1, 1)));
    assert_int_equal(h3.gw, g1); /* reused now */
    t_f4_free(&f);
}

struct t_snap {
    struct fib *into;
    unsigned routes, groups;
};

static int t_rebuild4(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nhs, const uint16_t *w, unsigned n)
{
    struct t_snap *x = arg;
    x->routes++;
    x->groups += n > 1;
    return fib_add_multi(x->into, addr, len, nhs, w, n);
}

/* The writer died inside an update: a new one rebuilds from a snapshot, groups and all. */
static void test_fib_group4_crash_rebuild(void **state)
{
    (void)state;
    struct t_f4 f, g;
    t_f4_new(&f);
    const uint16_t w[2] = {3, 1};
    assert_int_equal(fib_add_multi(&f.w, T_IP(20, 0, 0, 0), 8, t_m, w, 2), 0);
    assert_int_equal(fib_add_multi(&f.w, T_IP(20, 1, 0, 0), 16, &t_m[1], NULL, 3), 0);
    assert_int_equal(fib_add(&f.w, T_IP(20, 2, 0, 0), 16, &t_m[3]), 0);
    f.w.m.lay->dirty = 1; /* as if it died between its first and last store */

    t_f4_new(&g);
    struct t_snap x = {.into = &g.w};
    bool dirty = false;
    struct ipc_err err = {{0}};
    assert_int_equal(fib_snapshot_multi(f.fd, t_rebuild4, &x, &dirty, &err), 0);
    assert_true(dirty);
    assert_int_equal(x.routes, 3);
    assert_int_equal(x.groups, 2);
    uint32_t h;
    unsigned share[5];
    assert_int_equal(t_shares(&g, T_IP(20, 9, 0, 0), &h, share), 2);
    assert_int_equal(share[1], 192);
    assert_int_equal(share[2], 64);
    assert_int_equal(t_shares(&g, T_IP(20, 1, 0, 9), &h, share), 3);
    assert_int_equal(fib_nh_at(&g.r, fib_lookup(&g.r, T_IP(20, 2, 0, 9))).gw, t_m[3].gw);
    /* The dirty region takes no more updates: it is rebuilt, not patched. */
    assert_int_equal(fib_add_multi(&f.w, T_IP(50, 0, 0, 0), 8, t_m, NULL, 2), -EUCLEAN);

    /* A group's count out of bounds is refused, never followed. */
    struct fib_nh hdr;
    assert_int_equal(fib_get(&g.w, T_IP(20, 0, 0, 0), 8, &hdr), 0);
    _Atomic uint32_t *blk = &g.w.m.mp[(size_t)hdr.gw * FIB_MP_WORDS];
    ipc_st_rlx(&blk[FIB_MP_W_N], 99);
    struct fib_nh mem[FIB_MP_MAX];
    uint16_t mw[FIB_MP_MAX];
    struct fib_stats st;
    assert_int_equal(fib_group_members(&g.w, &hdr, mem, mw), -EUCLEAN);
    assert_int_equal(fib_del(&g.w, T_IP(20, 0, 0, 0), 8), -EUCLEAN);
    fib_get_stats(&g.w, &st);
    assert_true(st.corrupt >= 2);
    t_f4_free(&g);
    t_f4_free(&f);
}

/* ---- IPv6 ---- */

static void t_a6(uint8_t a[16], unsigned p, unsigned h)
{
    memset(a, 0, 16);
    a[0] = 0x20;
    a[1] = 0x01;
    a[2] = 0x0d;
    a[3] = 0xb8;
    a[5] = (uint8_t)p;
    a[15] = (uint8_t)h;
}

static void test_fib_group6(void **state)
{
    (void)state;
    struct ipc_err err = {{0}};
    struct fib6 w, r;
    int fd, rfd;
    struct fib6_params p = {.max_prefixes = 1024, .tbl8_groups = 256, .max_nh = 256};
    if (fib6_create("t-fib6-grp", &p, -1, &w, &fd, &rfd, &err) != 0)
        fail_msg("create: %s", err.msg);
    if (fib6_attach(&r, fd, rfd, 0, &err) != 0)
        fail_msg("attach: %s", err.msg);
    struct fib6_nh m[3] = {{.port = 1}, {.port = 2}, {.port = 2}};
    t_a6(m[0].gw, 1, 2);
    t_a6(m[1].gw, 2, 2);
    m[2].gw[0] = 0xfe; /* fe80::9 on port 2 */
    m[2].gw[1] = 0x80;
    m[2].gw[15] = 9;
    const uint16_t wt[3] = {1, 1, 2};
    uint8_t pfx[16], pfx2[16], dst[16];
    t_a6(pfx, 0x30, 0);
    t_a6(pfx2, 0x31, 0);
    assert_int_equal(fib6_add_multi(&w, pfx, 48, m, wt, 3), 0);
    const struct fib6_nh rev[3] = {m[2], m[1], m[0]};
    const uint16_t wr[3] = {2, 1, 1};
    assert_int_equal(fib6_add_multi(&w, pfx2, 64, rev, wr, 3), 0);
    struct fib_stats st;
    fib6_get_stats(&w, &st);
    assert_int_equal(st.nh_groups, 1);
    assert_int_equal(st.nh, 4);

    fib6_read_begin(&r);
    t_a6(dst, 0x30, 77);
    uint32_t i = fib6_lookup(&r, dst);
    assert_int_not_equal(i, FIB6_MISS);
    struct fib6_nh h = fib6_nh_at(&r, i);
    assert_true(h.flags & FIB_NH_F_GROUP);
    t_a6(dst, 0x31, 77);
    assert_int_equal(fib6_lookup(&r, dst), i);
    const _Atomic uint32_t *blk = fib_mp_block(&r.m, fib6_nh_group(&h));
    assert_int_equal(fib_mp_count(blk), 3);
    unsigned ll = 0;
    for (unsigned b = 0; b < FIB_MP_BUCKETS; b++) {
        struct fib6_nh x = fib6_nh_at(&r, fib_mp_member(blk, fib_mp_bucket(blk, b)));
        ll += x.gw[0] == 0xfe;
    }
    assert_int_equal(ll, 128); /* weight 2 of 4 */
    fib6_read_end(&r);

    struct fib6_nh got, mem[FIB_MP_MAX];
    uint16_t mw[FIB_MP_MAX];
    assert_int_equal(fib6_get(&w, pfx, 48, &got), 0);
    assert_int_equal(fib6_group_members(&w, &got, mem, mw), 3);
    unsigned seen = 0;
    for (unsigned k = 0; k < 3; k++)
        for (unsigned j = 0; j < 3; j++)
            if (memcmp(&mem[k], &m[j], sizeof(m[j])) == 0 && mw[k] == wt[j])
                seen |= 1u << j;
    assert_int_equal(seen, 7);

    assert_int_equal(fib6_replace_multi(&w, pfx, 48, m, NULL, 2), 0);
    assert_int_equal(fib6_del(&w, pfx2, 64), 0);
    assert_int_equal(fib6_del(&w, pfx, 48), 0);
    fib6_get_stats(&w, &st);
    assert_int_equal(st.nh_groups, 0);
    assert_int_equal(st.nh, 0);
    assert_int_equal(st.prefixes, 0);
    assert_int_equal(st.corrupt, 0);
    const struct fib6_nh bad[2] = {m[0], {.port = 1}}; /* no gateway */
    assert_int_equal(fib6_add_multi(&w, pfx, 48, bad, NULL, 2), -EINVAL);
    fib6_detach(&r);
    fib6_detach(&w);
    close(fd);
    close(rfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fib_group4_add_dedup_replace_del),
        cmocka_unit_test(test_fib_group4_reuse_after_readers),
        cmocka_unit_test(test_fib_group4_crash_rebuild),
        cmocka_unit_test(test_fib_group6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
