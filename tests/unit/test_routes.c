/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_routes.c: rr-routes' parsers (services/routes/rn.c,
 * fpm.c) on crafted netlink and FPM bytes, the supervisor's checks of
 * their records (supervisor/routes_check.c) and its map of mirrored
 * routes (routes_map.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>

#include "services/routes/fpm.h"
#include "services/routes/rn.h"
#include "supervisor/routes.h"

#define T_MAX 8

struct t_out {
    struct rtc_rec r[T_MAX];
    unsigned n, cap;
};

static int t_emit(void *arg, const struct rtc_rec *r)
{
    struct t_out *o = arg;
    if (o->n >= o->cap)
        return -1;
    o->r[o->n++] = *r;
    return 0;
}

/* An RTM_NEWROUTE (or DELROUTE) for @dst/@plen via @gw in @table, in @buf. */
static size_t t_route(uint8_t *buf, size_t len, uint16_t type, int family, const char *dst, unsigned plen,
                      const char *gw, uint32_t table, uint8_t proto)
{
    memset(buf, 0, len);
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = type;
    struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
    rtm->rtm_family = (uint8_t)family;
    rtm->rtm_dst_len = (uint8_t)plen;
    rtm->rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
    rtm->rtm_protocol = proto;
    rtm->rtm_type = RTN_UNICAST;
    uint8_t a[16];
    inet_pton(family, dst, a);
    mnl_attr_put(nlh, RTA_DST, family == AF_INET ? 4 : 16, a);
    if (gw) {
        inet_pton(family, gw, a);
        mnl_attr_put(nlh, RTA_GATEWAY, family == AF_INET ? 4 : 16, a);
    }
    mnl_attr_put_u32(nlh, RTA_TABLE, table);
    return nlh->nlmsg_len;
}

static void test_routes_parse_add(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t n = t_route(buf, sizeof(buf), RTM_NEWROUTE, AF_INET, "10.50.0.0", 16, "10.1.0.2", 100, RTPROT_STATIC);
    struct rn_parser p = {.table = 100};
    struct t_out o = {.cap = T_MAX};
    unsigned f = rn_parse(&p, buf, n, t_emit, &o, NULL);
    assert_int_equal(f, 0);
    assert_int_equal(o.n, 1);
    assert_int_equal(o.r[0].op, RTC_ADD);
    assert_int_equal(o.r[0].family, AF_INET);
    assert_int_equal(o.r[0].plen, 16);
    assert_int_equal(o.r[0].nnh, 1);
    assert_memory_equal(o.r[0].dst, "\x0a\x32\x00\x00", 4);
    assert_memory_equal(o.r[0].nh[0].gw, "\x0a\x01\x00\x02", 4);
    /* Another table, and the namespace's own connected routes: skipped, counted. */
    n = t_route(buf, sizeof(buf), RTM_NEWROUTE, AF_INET, "10.50.0.0", 16, "10.1.0.2", 254, RTPROT_STATIC);
    rn_parse(&p, buf, n, t_emit, &o, NULL);
    n = t_route(buf, sizeof(buf), RTM_NEWROUTE, AF_INET, "10.1.0.0", 24, NULL, 100, RTPROT_KERNEL);
    rn_parse(&p, buf, n, t_emit, &o, NULL);
    assert_int_equal(o.n, 1);
    assert_int_equal(p.ctr[RN_OTHER_TABLE], 1);
    assert_int_equal(p.ctr[RN_OWN_ORIGIN], 1);
    /* A deletion, IPv6. */
    n = t_route(buf, sizeof(buf), RTM_DELROUTE, AF_INET6, "2001:db8:50::", 48, NULL, 100, RTPROT_STATIC);
    rn_parse(&p, buf, n, t_emit, &o, NULL);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.r[1].op, RTC_DEL);
    assert_int_equal(o.r[1].plen, 48);
}

/* A truncated message, an attribute of the wrong size, a prefix length past
 * 32: nothing emitted, counted, and the caller told to resynchronise. */
static void test_routes_parse_bad(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct rn_parser p = {.table = 100};
    struct t_out o = {.cap = T_MAX};
    size_t n = t_route(buf, sizeof(buf), RTM_NEWROUTE, AF_INET, "10.50.0.0", 16, "10.1.0.2", 100, RTPROT_STATIC);
    assert_true(rn_parse(&p, buf, n - 3, t_emit, &o, NULL) & RN_F_BAD);
    struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
    struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
    rtm->rtm_dst_len = 33;
    assert_true(rn_parse(&p, buf, n, t_emit, &o, NULL) & RN_F_BAD);
    rtm->rtm_dst_len = 16;
    struct nlattr *dst = (struct nlattr *)((uint8_t *)rtm + MNL_ALIGN(sizeof(*rtm)));
    dst->nla_len = 4 + 3; /* a 3-byte IPv4 address */
    assert_true(rn_parse(&p, buf, n, t_emit, &o, NULL) & RN_F_BAD);
    dst->nla_len = 200; /* past the message */
    assert_true(rn_parse(&p, buf, n, t_emit, &o, NULL) & RN_F_BAD);
    assert_int_equal(o.n, 0);
    assert_int_equal(p.ctr[RN_MALFORMED], 4);
}

static void test_routes_parse_multipath(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t n = t_route(buf, sizeof(buf), RTM_NEWROUTE, AF_INET, "10.60.0.0", 16, NULL, 100, RTPROT_BGP);
    struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
    struct nlattr *mp = mnl_attr_nest_start(nlh, RTA_MULTIPATH);
    for (int i = 0; i < 2; i++) {
        struct rtnexthop *nh = mnl_nlmsg_get_payload_tail(nlh);
        nlh->nlmsg_len += RTNH_ALIGN(sizeof(*nh));
        memset(nh, 0, sizeof(*nh));
        nh->rtnh_hops = (uint8_t)(i * 2); /* weights 1 and 3 */
        uint8_t gw[4] = {10, 1, 0, (uint8_t)(2 + i)};
        mnl_attr_put(nlh, RTA_GATEWAY, 4, gw);
        nh->rtnh_len = (uint16_t)((uint8_t *)mnl_nlmsg_get_payload_tail(nlh) - (uint8_t *)nh);
    }
    mnl_attr_nest_end(nlh, mp);
    n = nlh->nlmsg_len;
    struct rn_parser p = {.table = 100};
    struct t_out o = {.cap = T_MAX};
    assert_int_equal(rn_parse(&p, buf, n, t_emit, &o, NULL), 0);
    assert_int_equal(o.n, 1);
    assert_int_equal(o.r[0].nnh, 2);
    assert_int_equal(o.r[0].nh[0].weight, 1);
    assert_int_equal(o.r[0].nh[1].weight, 3);
    assert_int_equal(o.r[0].nh[1].gw[3], 3);
}

/* FPM: a frame around a route; a frame of another version is refused. */
static void test_routes_fpm(void **state)
{
    (void)state;
    static struct rr_fpm f;
    rr_fpm_init(&f, -1, 100);
    uint8_t buf[600];
    size_t n = t_route(buf + 4, sizeof(buf) - 4, RTM_NEWROUTE, AF_INET, "10.70.0.0", 16, "10.1.0.2", 100, RTPROT_ZEBRA);
    buf[0] = 1;
    buf[1] = 1;
    buf[2] = (uint8_t)((n + 4) >> 8);
    buf[3] = (uint8_t)(n + 4);
    struct t_out o = {.cap = T_MAX};
    assert_int_equal(rr_fpm_frames(&f, buf, n + 4, t_emit, &o), (long)(n + 4));
    assert_int_equal(o.n, 1);
    assert_int_equal(o.r[0].src, RTC_SRC_FPM);
    assert_int_equal(rr_fpm_frames(&f, buf, n + 2, t_emit, &o), 0); /* a partial frame waits */
    o.cap = 1; /* no room: the frame waits too */
    assert_int_equal(rr_fpm_frames(&f, buf, n + 4, t_emit, &o), 0);
    buf[0] = 2;
    assert_int_equal(rr_fpm_frames(&f, buf, n + 4, t_emit, &o), -1);
    assert_int_equal(f.ctr[FPM_BAD_FRAMES], 1);
}

static const char t_manifest[] = "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"
                                 "address6 = 2001:db8:1::1/64\n"
                                 "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n"
                                 "[routes]\ntable = 100\n";

static struct rtc_rec t_rec(int family, const char *dst, unsigned plen, const char *gw)
{
    struct rtc_rec r;
    memset(&r, 0, sizeof(r));
    r.op = RTC_ADD;
    r.family = (uint8_t)family;
    r.plen = (uint8_t)plen;
    r.nnh = 1;
    inet_pton(family, dst, r.dst);
    if (gw)
        inet_pton(family, gw, r.nh[0].gw);
    return r;
}

static void test_routes_check(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    assert_int_equal(sup_manifest_load_string("t.ini", t_manifest, &m, &err), 0);
    assert_int_equal(m.daemon.table, 100);
    assert_int_equal(m.daemon.grace_s, 120);
    int port;
    char why[200];
    /* One next hop each; port -1: not looked at. */
    static const struct {
        int family;
        const char *dst;
        unsigned plen;
        const char *gw;
        enum sup_rck want;
        int port;
    } cases[] = {
        {AF_INET, "10.50.0.0", 16, "10.2.0.9", SUP_RCK_OK, 1},
        {AF_INET, "10.50.0.0", 16, "10.9.0.9", SUP_RCK_NOT_CONNECTED, -1},
        {AF_INET, "10.50.0.0", 16, "10.1.0.1", SUP_RCK_SELF, -1},
        {AF_INET, "10.50.0.0", 16, "10.1.0.255", SUP_RCK_MARTIAN, -1}, /* the broadcast address */
        {AF_INET, "127.0.0.0", 8, "10.1.0.2", SUP_RCK_MARTIAN, -1},
        {AF_INET, "224.1.0.0", 16, "10.1.0.2", SUP_RCK_MARTIAN, -1},
        {AF_INET, "10.50.0.1", 16, "10.1.0.2", SUP_RCK_BAD, -1}, /* host bits */
        {AF_INET6, "2001:db8:50::", 48, "2001:db8:1::2", SUP_RCK_OK, 0},
        {AF_INET6, "2001:db8:50::", 48, "fe80::2", SUP_RCK_NOT_CONNECTED, -1},
        {AF_INET6, "ff02::", 16, "2001:db8:1::2", SUP_RCK_MARTIAN, -1},
    };
    struct rtc_rec r;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r = t_rec(cases[i].family, cases[i].dst, cases[i].plen, cases[i].gw);
        assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), cases[i].want);
        if (cases[i].port >= 0)
            assert_int_equal(port, cases[i].port);
    }
    /* Fields no source can mean: no next hop, 17, a length past 32, a family. */
    r = t_rec(AF_INET, "10.50.0.0", 16, "10.1.0.2");
    r.nnh = 0;
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_BAD);
    r.nnh = 17;
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_BAD);
    r.nnh = 1;
    r.plen = 33;
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_BAD);
    r.plen = 16;
    r.family = 7;
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_BAD);
    /* A second next hop off every connected network refuses the route. */
    r = t_rec(AF_INET, "10.50.0.0", 16, "10.1.0.2");
    r.nnh = 2;
    inet_pton(AF_INET, "10.9.0.1", r.nh[1].gw);
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_NOT_CONNECTED);
    sup_manifest_free(&m);
}

/* A link-local gateway is taken on the port whose host-side interface the
 * record names, when the routes' namespace is the control one. */
static void test_routes_check_ll(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    assert_int_equal(sup_manifest_load_string("t.ini", t_manifest, &m, &err), 0);
    int port;
    char why[200];
    struct rtc_rec r = t_rec(AF_INET6, "2001:db8:50::", 48, "fe80::2");
    r.nh[0].ifindex = 7;
    sup_routes_cp_ifindex(0, 7);
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_NOT_CONNECTED); /* no control_netns */
    snprintf(m.router.control_netns, sizeof(m.router.control_netns), "cp");
    snprintf(m.daemon.netns, sizeof(m.daemon.netns), "cp");
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_OK);
    assert_int_equal(port, 0);
    r.nh[0].ifindex = 8; /* another interface there */
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_NOT_CONNECTED);
    r.nh[0].ifindex = 7;
    r.nnh = 2; /* a group's member */
    inet_pton(AF_INET6, "2001:db8:1::2", r.nh[1].gw);
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_NOT_CONNECTED);
    r.nnh = 1;
    snprintf(m.daemon.netns, sizeof(m.daemon.netns), "other"); /* the index is another namespace's */
    assert_int_equal(sup_routes_check(&m, &r, &port, why, sizeof(why)), SUP_RCK_NOT_CONNECTED);
    sup_routes_cp_ifindex(0, 0);
    sup_manifest_free(&m);
}

#define T_PORT "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n" /* lines 1-4 */

static void test_routes_manifest_errors(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    assert_int_equal(sup_manifest_load_string("t.ini", T_PORT "[routes]\ngrace_s = 5\n", &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "no source"));
    assert_int_equal(sup_manifest_load_string("t.ini", T_PORT "[routes]\ntable = nosuchtable\n", &m, &err), -EINVAL);
    assert_int_equal(err.line, 6);
    assert_non_null(strstr(err.msg, "no routing table \"nosuchtable\""));
    assert_int_equal(sup_manifest_load_string("t.ini", T_PORT "[routes]\nfpm = 127.0.0.1\n", &m, &err), -EINVAL);
    assert_int_equal(err.line, 6);
    assert_int_equal(sup_manifest_load_string("t.ini", T_PORT "[routes]\ntable = 7\n[routes]\n", &m, &err), -EINVAL);
    assert_int_equal(err.line, 7);
    assert_int_equal(sup_manifest_load_string("t.ini", T_PORT "[routes]\ntable = main\nfpm = [::1]:2620\n", &m, &err),
                     0);
    assert_int_equal(m.daemon.table, 254);
    assert_true(m.daemon.fpm && m.daemon.fpm_v6);
    assert_int_equal(m.daemon.fpm_port, 2620);
    assert_true(sup_manifest_service(&m, "routes") >= 0);
    sup_manifest_free(&m);
}

static void test_routes_map(void **state)
{
    (void)state;
    struct sup_rtmap m = {0};
    uint8_t d[16] = {0};
    for (uint32_t i = 0; i < 20000; i++) {
        memcpy(d, &i, 4);
        struct sup_rte *e = sup_rtmap_insert(&m, AF_INET, d, 32);
        assert_non_null(e);
        e->port = (uint16_t)(i & 0xffff);
    }
    assert_int_equal(m.n, 20000);
    for (uint32_t i = 0; i < 20000; i += 2) {
        memcpy(d, &i, 4);
        sup_rtmap_remove(&m, sup_rtmap_find(&m, AF_INET, d, 32));
    }
    for (uint32_t i = 0; i < 20000; i++) {
        memcpy(d, &i, 4);
        struct sup_rte *e = sup_rtmap_find(&m, AF_INET, d, 32);
        if (i & 1) {
            assert_non_null(e);
            assert_int_equal(e->port, i & 0xffff);
        } else {
            assert_null(e);
        }
    }
    assert_null(sup_rtmap_find(&m, AF_INET6, d, 32));
    /* 20,000 stopped half-way through moving the last grow's old table:
     * the removals above took entries from both tables. Again, with the
     * even ones back, then the move finished. */
    assert_non_null(m.old);
    for (uint32_t i = 0; i < 20000; i += 2) {
        memcpy(d, &i, 4);
        struct sup_rte *e = sup_rtmap_insert(&m, AF_INET, d, 32);
        assert_non_null(e);
        assert_int_equal(e->used, 1);
        e->port = (uint16_t)(i & 0xffff);
    }
    for (unsigned pass = 0; pass < 2; pass++) {
        assert_int_equal(m.n, 20000);
        size_t seen = 0;
        for (size_t k = 0; k < m.cap; k++)
            seen += m.e[k].used != 0;
        for (size_t k = 0; k < m.old_cap; k++)
            seen += m.old[k].used != 0;
        assert_int_equal(seen, 20000);
        for (uint32_t i = 0; i < 20000; i++) {
            memcpy(d, &i, 4);
            struct sup_rte *e = sup_rtmap_find(&m, AF_INET, d, 32);
            assert_non_null(e);
            assert_int_equal(e->port, i & 0xffff);
        }
        /* A slice at a time, as a sweep finishes it. */
        for (unsigned slices = 0; !sup_rtmap_settle_some(&m, 1000); slices++)
            assert_true(slices < 64);
        assert_null(m.old);
    }
    sup_rtmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes_parse_add),      cmocka_unit_test(test_routes_parse_bad),
        cmocka_unit_test(test_routes_parse_multipath), cmocka_unit_test(test_routes_fpm),
        cmocka_unit_test(test_routes_check),           cmocka_unit_test(test_routes_manifest_errors),
        cmocka_unit_test(test_routes_map),             cmocka_unit_test(test_routes_check_ll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
