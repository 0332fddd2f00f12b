/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_manifest_mpath.c: routes with several next hops in the
 * manifest (`nexthop = ADDRESS [port NAME] [weight W]`, supervisor/
 * manifest_routes.c), black-box through the loader: bad input, each with
 * the error it must produce (line, section and key included): a duplicate
 * member, a weight out of range or not a number, more members than a FIB
 * group holds, a member on no connected network or on another port than
 * the one named, a member of the other family, a link-local member without
 * its port, nexthop mixed with via; then good manifests, IPv4 and IPv6,
 * resolved (ports, weights, the first member in via/port), and the words a
 * reload prints and compares them by.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "supervisor/manifest.h"

/* Lines 1-10: two ports, each with an IPv4 and an IPv6 network. */
#define BASE                                                                                                           \
    "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\naddress6 = 2001:db8:1::1/64\n"                    \
    "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\naddress6 = 2001:db8:2::1/64\n"
#define R4 BASE "[route 10.9.0.0/16]\n"  /* line 11; its keys from line 12 */
#define R6 BASE "[route 2001:db8:9::/48]\n"
#define NH16                                                                                                           \
    "nexthop = 10.2.0.2\nnexthop = 10.2.0.3\nnexthop = 10.2.0.4\nnexthop = 10.2.0.5\nnexthop = 10.2.0.6\n"           \
    "nexthop = 10.2.0.7\nnexthop = 10.2.0.8\nnexthop = 10.2.0.9\nnexthop = 10.2.0.10\nnexthop = 10.2.0.11\n"         \
    "nexthop = 10.2.0.12\nnexthop = 10.2.0.13\nnexthop = 10.2.0.14\nnexthop = 10.2.0.15\nnexthop = 10.2.0.16\n"      \
    "nexthop = 10.2.0.17\n"

struct t_bad {
    const char *text;
    const char *error; /* the whole message */
};

static const struct t_bad t_bad[] = {
    /* a member twice, IPv4 and IPv6 (a link-local one is its port's) */
    {R4 "nexthop = 10.2.0.2\nnexthop = 10.2.0.2 weight 2\n",
     "t.ini:13: [route 10.9.0.0/16] nexthop: 10.2.0.2 on port b is the next hop of line 12 again: each member once"},
    {R6 "nexthop = fe80::5 port a\nnexthop = 2001:db8:2::2\nnexthop = fe80::5 port a weight 3\n",
     "t.ini:14: [route 2001:db8:9::/48] nexthop: fe80::5 on port a is the next hop of line 12 again: each member "
     "once"},
    /* weights */
    {R4 "nexthop = 10.2.0.2 weight 0\n", "t.ini:12: [route 10.9.0.0/16] nexthop: weight 0 is out of range 1..256"},
    {R4 "nexthop = 10.2.0.2 weight 257\n",
     "t.ini:12: [route 10.9.0.0/16] nexthop: weight 257 is out of range 1..256"},
    {R6 "nexthop = 2001:db8:2::2 weight -1\n",
     "t.ini:12: [route 2001:db8:9::/48] nexthop: weight -1 is out of range 1..256"},
    {R4 "nexthop = 10.2.0.2 weight heavy\n",
     "t.ini:12: [route 10.9.0.0/16] nexthop: weight \"heavy\" is not a whole number from 1 to 256"},
    {R4 "nexthop = 10.2.0.2 weight\n", "t.ini:12: [route 10.9.0.0/16] nexthop: weight needs a value"},
    {R4 "nexthop = 10.2.0.2 weight 2 weight 3\n", "t.ini:12: [route 10.9.0.0/16] nexthop: weight given twice"},
    /* the FIB's group bound: 16 */
    {R4 NH16 "nexthop = 10.2.0.18\n",
     "t.ini:28: [route 10.9.0.0/16] nexthop: next hop 17: a route has at most 16 (the FIB's group bound)"},
    /* a member on no connected network, or not on the port named */
    {R4 "nexthop = 10.2.0.2\nnexthop = 10.3.0.2\n",
     "t.ini:13: [route 10.9.0.0/16] nexthop: 10.3.0.2 is not on any port's network"},
    {R6 "nexthop = 2001:db8:2::2\nnexthop = 2001:db8:3::2\n",
     "t.ini:13: [route 2001:db8:9::/48] nexthop: 2001:db8:3::2 is not on any port's IPv6 network"},
    {R4 "nexthop = 10.2.0.2 port a\n", "t.ini:12: [route 10.9.0.0/16] nexthop: the gateway 10.2.0.2 is on port b, not a"},
    {R6 "nexthop = fe80::5 port c\n", "t.ini:12: [route 2001:db8:9::/48] nexthop: no port \"c\""},
    {R6 "nexthop = fe80::5\n",
     "t.ini:12: [route 2001:db8:9::/48] nexthop: fe80::5 is link-local: add port NAME to say which link it is on"},
    {R4 "nexthop = 10.2.0.1\n", "t.ini:12: [route 10.9.0.0/16] nexthop: 10.2.0.1 is the router's own address on port b"},
    {R4 "nexthop = 10.2.0.255\n",
     "t.ini:12: [route 10.9.0.0/16] nexthop: 10.2.0.255 is the broadcast address of port b's network 10.2.0.0/24"},
    /* the families mixed */
    {R4 "nexthop = 10.2.0.2\nnexthop = 2001:db8:2::2\n",
     "t.ini:13: [route 10.9.0.0/16] nexthop: 2001:db8:2::2 is an IPv6 address, and the route's prefix is IPv4: a "
     "route's next hops are of its prefix's family"},
    {R6 "nexthop = 10.2.0.2\n",
     "t.ini:12: [route 2001:db8:9::/48] nexthop: 10.2.0.2 is an IPv4 address, and the route's prefix is IPv6: a "
     "route's next hops are of its prefix's family"},
    /* spelling */
    {R6 "nexthop = 2001:DB8:2::2\n",
     "t.ini:12: [route 2001:db8:9::/48] nexthop: \"2001:DB8:2::2\" is not in canonical form (RFC 5952): write "
     "2001:db8:2::2"},
    {R4 "nexthop = 10.2.0.2 metric 5\n",
     "t.ini:12: [route 10.9.0.0/16] nexthop: unexpected \"metric\": expected ADDRESS [port NAME] [weight W]"},
    {R4 "nexthop = gw1\n",
     "t.ini:12: [route 10.9.0.0/16] nexthop: \"gw1\" is not an IPv4 address, expected ADDRESS [port NAME] [weight W]"},
    /* one next hop (via, port) or several (nexthop), not both */
    {R4 "via = 10.2.0.2\nnexthop = 10.2.0.3\n",
     "t.ini:13: [route 10.9.0.0/16] nexthop: give either nexthop lines (several next hops) or via and port (one), "
     "not both"},
    {R4 "nexthop = 10.2.0.3\nport = b\n",
     "t.ini:13: [route 10.9.0.0/16] port: give either nexthop lines (several next hops) or via and port (one), not "
     "both"},
    /* a connected network is the port's */
    {BASE "[route 10.2.0.0/24]\nnexthop = 10.1.0.2\nnexthop = 10.1.0.3\n",
     "t.ini:11: [route 10.2.0.0/24] duplicates the connected route of port b (line 9)"},
    {BASE "[route 2001:db8:1::/64]\nnexthop = 2001:db8:2::2\n",
     "t.ini:11: [route 2001:db8:1::/64] duplicates the connected route of port a (line 5)"},
};

static void test_bad(void **state)
{
    (void)state;
    size_t failed = 0;
    for (size_t i = 0; i < sizeof(t_bad) / sizeof(t_bad[0]); i++) {
        struct sup_manifest m;
        struct sup_manifest_err err;
        int ret = sup_manifest_load_string("t.ini", t_bad[i].text, &m, &err);
        if (ret == 0) {
            fprintf(stderr, "case %zu: accepted, expected \"%s\"\n", i, t_bad[i].error);
            failed++;
            sup_manifest_free(&m);
        } else if (strcmp(err.msg, t_bad[i].error) != 0) {
            fprintf(stderr, "case %zu:\n  got  %s\n  want %s\n", i, err.msg, t_bad[i].error);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

static const struct sup_route *route(const struct sup_manifest *m, size_t i)
{
    assert_true(i < m->nroutes);
    return &m->routes[i];
}

/* A 2-member IPv4 group and a 3-member weighted IPv6 one (a link-local
 * member on its port), resolved; and a 16-member one, the bound. */
static void test_good(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err = {0};
    const char *text = R4 "nexthop = 10.2.0.2\nnexthop = 10.1.0.2 weight 3\n"
                          "[route 2001:db8:9::/48]\n"
                          "nexthop = 2001:db8:2::2 weight 1\nnexthop = fe80::5 port a weight 2\n"
                          "nexthop = 2001:db8:1::7 weight 256\n"
                          "[route 10.8.0.0/16]\n" NH16 "[route 10.7.0.0/16]\nvia = 10.2.0.2\n";
    int ret = sup_manifest_load_string("t.ini", text, &m, &err);
    if (ret)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(ret, 0);
    assert_int_equal(m.nroutes, 4);

    const struct sup_route *r = route(&m, 0);
    assert_false(r->v6);
    assert_int_equal(r->nnh, 2);
    assert_int_equal(r->nh[0].via, 0x0a020002);
    assert_int_equal(r->nh[0].port, 1);
    assert_int_equal(r->nh[0].weight, 1);
    assert_int_equal(r->nh[0].line, 12);
    assert_int_equal(r->nh[1].via, 0x0a010002);
    assert_int_equal(r->nh[1].port, 0);
    assert_int_equal(r->nh[1].weight, 3);
    assert_string_equal(r->nh[1].port_name, "a");
    /* via and port hold the first member */
    assert_int_equal(r->via, 0x0a020002);
    assert_int_equal(r->port, 1);
    assert_false(r->direct);

    r = route(&m, 1);
    assert_true(r->v6);
    assert_int_equal(r->nnh, 3);
    assert_int_equal(r->nh[0].port, 1);
    assert_int_equal(r->nh[1].port, 0);
    assert_int_equal(r->nh[1].via6[0], 0xfe);
    assert_int_equal(r->nh[1].weight, 2);
    assert_int_equal(r->nh[2].port, 0);
    assert_int_equal(r->nh[2].weight, 256);
    char buf[SUP_ROUTE_NH_MAX * 72];
    assert_string_equal(sup_route_nh_str(r, buf, sizeof(buf)),
                        "via 2001:db8:2::2 weight 1 via fe80::5 port a weight 2 via 2001:db8:1::7 weight 256");
    assert_string_equal(sup_route_nh_str(route(&m, 0), buf, sizeof(buf)), "via 10.2.0.2 weight 1 via 10.1.0.2 weight 3");
    assert_string_equal(sup_route_nh_str(route(&m, 3), buf, sizeof(buf)), "via 10.2.0.2");

    r = route(&m, 2);
    assert_int_equal(r->nnh, 16);
    assert_int_equal(r->nh[15].via, 0x0a020011);

    /* The same set in another order is the same route; a weight or a member changed is not. */
    struct sup_route a = *route(&m, 0), b = a;
    b.nh[0] = a.nh[1];
    b.nh[1] = a.nh[0];
    assert_true(sup_route_same_nh(&a, &b));
    b.nh[0].weight = 2;
    assert_false(sup_route_same_nh(&a, &b));
    b = a;
    b.nh[1].via = 0x0a010003;
    assert_false(sup_route_same_nh(&a, &b));
    b = a;
    b.nnh = 1;
    assert_false(sup_route_same_nh(&a, &b));
    assert_false(sup_route_same_nh(&a, route(&m, 3)));
    sup_manifest_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_good),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
