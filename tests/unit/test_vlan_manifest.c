/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_vlan_manifest.c: VLAN ports in the manifest
 * (supervisor/vlan_manifest.c), black-box through the loader: bad input,
 * each with the error it must produce (line, section and key included): a
 * VLAN id out of range or malformed, a duplicate, a parent that does not
 * exist or is a VLAN port itself, a key of the device on a VLAN port, a dot
 * in a plain port's name, `untagged` without VLANs, an MTU above the
 * parent's, an overlapping network, a driver service for a VLAN port; then
 * good manifests, 802.1Q and 802.1ad, resolved (parent, tags, what the
 * VLAN port takes from its parent, its services, routes and shaper); and a
 * reload's refusals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/manifest.h"
#include "t_manifest_refused.h"

/* Lines 1-12: a parent, a plain port, and VLAN 10 of the parent. */
#define BASE                                                                                                           \
    "[port lan]\ndriver = tap\nifname = rr-lan\naddress = 10.1.0.1/24\n"                                               \
    "[port wan]\ndriver = tap\nifname = rr-wan\naddress = 10.9.0.1/24\n"                                               \
    "[port lan.10]\nparent = lan\n"

#define V10 BASE "vlan = 10\naddress = 10.10.0.1/24\n"

static const struct t_bad t_bad[] = {
    {BASE "vlan = 4095\naddress = 10.10.0.1/24\n",
     "t.ini:11: [port lan.10] vlan: 4095 is out of range: a VLAN id is 1 to 4094"},
    {BASE "vlan = 0\naddress = 10.10.0.1/24\n", "t.ini:11: [port lan.10] vlan: 0 is out of range"},
    {BASE "vlan = 100.5000\naddress = 10.10.0.1/24\n", "t.ini:11: [port lan.10] vlan: 5000 is out of range"},
    {BASE "vlan = ten\naddress = 10.10.0.1/24\n", "t.ini:11: [port lan.10] vlan: \"ten\" is not a VLAN id"},
    {BASE "vlan = 1.2.3\naddress = 10.10.0.1/24\n", "t.ini:11: [port lan.10] vlan: \"1.2.3\" is not a VLAN id"},
    {BASE "vlan = 010\naddress = 10.10.0.1/24\n", "t.ini:11: [port lan.10] vlan: \"010\" is not a VLAN id"},
    {"[port lan]\ndriver = tap\nifname = rr-lan\naddress = 10.1.0.1/24\n[port lan.10]\nparent = lam\nvlan = 10\n"
     "address = 10.10.0.1/24\n",
     "t.ini:6: [port lan.10] parent: no port \"lam\""},
    {V10 "[port lan.x]\nparent = lan\nvlan = 10\naddress = 10.11.0.1/24\n",
     "t.ini:15: [port lan.x] vlan: 10 on lan is already port lan.10's (line 11)"},
    {V10 "[port lan.10.5]\nparent = lan.10\nvlan = 5\naddress = 10.11.0.1/24\n",
     "t.ini:14: [port lan.10.5] parent: port lan.10 is itself a VLAN port (line 9): for 802.1ad give both tags "
     "here, vlan = OUTER.INNER"},
    {V10 "driver = tap\n",
     "t.ini:13: [port lan.10] driver: a VLAN port has no device of its own: driver belongs on [port lan], its "
     "parent"},
    {V10 "zone = dmz\n", "t.ini:13: [port lan.10] zone: a VLAN port has no device of its own"},
    {V10 "untagged = parent\n", "t.ini:13: [port lan.10] untagged: a VLAN port has no device of its own"},
    {"[port lan]\ndriver = tap\nifname = rr-lan\naddress = 10.1.0.1/24\n[port lan.10]\nvlan = 10\n"
     "address = 10.10.0.1/24\n",
     "t.ini:6: [port lan.10] parent: missing: a VLAN port needs parent = PORT"},
    {BASE "address = 10.10.0.1/24\n", "t.ini:10: [port lan.10] vlan: missing, expected a VLAN id (1 to 4094)"},
    {"[port a.b]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n",
     "t.ini:1: [port a.b] a dot in a port's name is for VLAN ports"},
    {V10 "[port wan]\n", "t.ini:13: [port wan] duplicate port"},
    {"[port lan]\ndriver = tap\nifname = rr-lan\naddress = 10.1.0.1/24\nuntagged = parent\n",
     "t.ini:5: [port lan] untagged: port lan has no VLAN ports (parent = lan)"},
    {BASE "vlan = 10\naddress = 10.10.0.1/24\nmtu = 9000\n",
     "t.ini:13: [port lan.10] mtu: 9000 is more than its parent lan's 1500"},
    {BASE "vlan = 10\naddress = 10.1.0.7/24\n", "t.ini:12: [port lan.10] address: 10.1.0.7/24 overlaps port lan's"},
    {V10 "[service driver-lan.10]\ncpu = 0\n",
     "t.ini:13: [service driver-lan.10] port lan.10 is a VLAN port: its parent lan's drivers serve it"},
    {V10 "[route 10.50.0.0/16]\nport = lan.1\n", "t.ini:14: [route 10.50.0.0/16] port: no port \"lan.1\""},
};

static void test_bad(void **state)
{
    (void)state;
    t_manifest_refused(t_bad, sizeof t_bad / sizeof t_bad[0]);
}

static int service(const struct sup_manifest *m, const char *name)
{
    return sup_manifest_service(m, name);
}

static void test_good(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    const char *text =
        "[port lan]\ndriver = afxdp\nifname = veth-lan\naddress = 10.1.0.1/24\nuntagged = parent\n"
        "queues = 2\n"
        "[port wan]\ndriver = tap\nifname = rr-wan\naddress = 10.9.0.1/24\n"
        "[port lan.10]\nparent = lan\nvlan = 10\naddress = 10.10.0.1/24\nmtu = 1400\n"
        "[port lan.s]\nparent = lan\nvlan = 100.10\naddress = 10.20.0.1/24\naddress6 = 2001:db8:20::1/64\n"
        "[port wan.7]\nparent = wan\nvlan = 7\naddress = 10.70.0.1/24\n"
        "[route 10.50.0.0/16]\nvia = 10.10.0.9\n[route 10.60.0.0/16]\nport = lan.s\n"
        "[shaper wan.7]\nrate = 10mbit\n";
    int rc = sup_manifest_load_string("t.ini", text, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.nports, 5);
    const struct sup_port *lan = &m.ports[0], *v10 = &m.ports[2], *qq = &m.ports[3], *w7 = &m.ports[4];
    assert_int_equal(lan->vlan_ntags, 0);
    assert_true(lan->untagged_parent);
    assert_false(m.ports[1].untagged_parent);
    assert_int_equal(v10->vlan_ntags, 1);
    assert_int_equal(v10->vlan_parent, 0);
    assert_int_equal(v10->vlan_id[0], 10);
    assert_int_equal(v10->mtu, 1400);
    assert_int_equal(v10->driver, SUP_DRIVER_AFXDP);
    assert_int_equal(v10->queues, 0);
    assert_int_equal(v10->zone, lan->zone);
    assert_int_equal(qq->vlan_ntags, 2);
    assert_int_equal(qq->vlan_id[0], 100);
    assert_int_equal(qq->vlan_id[1], 10);
    assert_int_equal(qq->mtu, 1500); /* its parent's */
    assert_int_equal(w7->vlan_parent, 1);
    assert_int_equal(w7->driver, SUP_DRIVER_TAP);
    /* The MAC, and so the link-local address, is its parent's device's. */
    uint8_t a[6], b[6];
    sup_port_mac(&m, 0, a);
    sup_port_mac(&m, 3, b);
    assert_memory_equal(a, b, 6);
    /* Routes through a VLAN port, by gateway and by name. */
    assert_int_equal(m.routes[0].port, 2);
    assert_int_equal(m.routes[1].port, 3);
    /* Services: the parents' drivers, none for a VLAN port, its shaper. */
    assert_true(service(&m, "driver-lan") >= 0);
    assert_true(service(&m, "driver-lan.1") >= 0);
    assert_true(service(&m, "driver-wan") >= 0);
    assert_int_equal(service(&m, "driver-lan.10"), -1);
    assert_int_equal(service(&m, "driver-wan.7"), -1);
    assert_true(service(&m, "shaper-wan.7") >= 0);
    assert_int_equal(m.nservices, 1 + 3 + 1);

    /* A reload: adding or removing a VLAN port with a shaper of its own, or
     * retagging one, is refused; one without, on a running parent, not. */
    char why[300];
    struct sup_manifest n;
    assert_false(sup_vlan_reload_refused(&m, &m, why, sizeof why));
    char fewer[600];
    snprintf(fewer, sizeof fewer, "%s",
             "[port lan]\ndriver = afxdp\nifname = veth-lan\naddress = 10.1.0.1/24\nuntagged = parent\n"
             "queues = 2\n[port wan]\ndriver = tap\nifname = rr-wan\naddress = 10.9.0.1/24\n"
             "[port lan.10]\nparent = lan\nvlan = 10\naddress = 10.10.0.1/24\nmtu = 1400\n");
    assert_int_equal(sup_manifest_load_string("t.ini", fewer, &n, &err), 0);
    assert_true(sup_vlan_reload_refused(&m, &n, why, sizeof why));
    assert_non_null(strstr(why, "VLAN port wan.7 removed with its [shaper]: only at up"));
    assert_true(sup_vlan_reload_refused(&n, &m, why, sizeof why));
    assert_non_null(strstr(why, "VLAN port wan.7 added with a [shaper]: only at up"));
    assert_false(sup_vlan_reload_refused(&n, &n, why, sizeof why));
    sup_manifest_free(&n);
    char more[800];
    snprintf(more, sizeof more, "%s[port wan.7]\nparent = wan\nvlan = 7\naddress = 10.70.0.1/24\n"
             "[shaper wan.7]\nrate = 10mbit\n", fewer);
    assert_int_equal(sup_manifest_load_string("t.ini", more, &n, &err), 0);
    assert_false(sup_vlan_reload_refused(&m, &n, why, sizeof why)); /* lan.s removed */
    assert_false(sup_vlan_reload_refused(&n, &m, why, sizeof why)); /* lan.s added */
    sup_manifest_free(&n);
    strstr(fewer, "vlan = 10")[8] = '1'; /* vlan = 11 */
    assert_int_equal(sup_manifest_load_string("t.ini", fewer, &n, &err), 0);
    assert_true(sup_vlan_reload_refused(&m, &n, why, sizeof why));
    assert_non_null(strstr(why, "port lan.10: parent or vlan changed (lan 10 -> lan 11)"));
    sup_manifest_free(&n);
    sup_manifest_free(&m);
}

/* An AF_XDP parent's frame: the MTU and the tags must fit one pool frame. */
static void test_afxdp_frame(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    const char *text = "[port lan]\ndriver = afxdp\nifname = veth-lan\naddress = 10.1.0.1/24\nmtu = 1778\n"
                       "[port lan.s]\nparent = lan\nvlan = 100.10\naddress = 10.20.0.1/24\n";
    assert_int_equal(sup_manifest_load_string("t.ini", text, &m, &err), -EINVAL);
    assert_non_null(
        strstr(err.msg, "[port lan.s] mtu: 1778 and 8 bytes of tags (100.10) do not fit a 2048-byte frame"));
    sup_manifest_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_afxdp_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
