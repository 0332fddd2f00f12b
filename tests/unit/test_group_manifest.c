/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_group_manifest.c: driver groups in the manifest
 * (supervisor/group_manifest.c), black-box through the loader: bad input,
 * each with the error it must produce (line, section and key included): a
 * TAP port in a group, a group named as a port, a port in a group twice,
 * a group of one, too many ports, a multi-queue port, a VLAN parent, a VLAN
 * port, ports of two zones, a [service] for a member port or a queue of the
 * group; then good manifests resolved into services (driver-GROUP for the
 * group, with its ports' mask and its [service] keys, the other ports'
 * drivers as before); and a reload's refusals.
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

/* An AF_XDP port NAME on interface gNAME, network 10.N.0.0/24. */
#define PORT(name, n) "[port " name "]\ndriver = afxdp\nifname = g" name "\naddress = 10." n ".0.1/24\n"
/* Lines 1-10: ports a and b in group g. */
#define AB PORT("a", "1") "group = g\n" PORT("b", "2") "group = g\n"

static const struct t_bad t_bad[] = {
    {AB "[port c]\ndriver = tap\nifname = gc\naddress = 10.3.0.1/24\ngroup = g\n",
     "t.ini:15: [port c] group: only for driver = afxdp, and port c is driver = tap"},
    {PORT("a", "1") "group = b\n" PORT("b", "2") "group = b\n",
     "t.ini:5: [port a] group: \"b\" is port b's name (line 6): a group's driver is driver-b, so the group needs a "
     "name of its own"},
    {AB "group = h\n", "t.ini:11: [port b] group: duplicate key, first set on line 10"},
    {PORT("a", "1") "group = g\n" PORT("b", "2"),
     "t.ini:5: [port a] group: port a is the only port of group g: a group is two ports or more under one driver"},
    {AB PORT("c", "3") "group = g\n" PORT("d", "4") "group = g\n" PORT("e", "5") "group = g\n" PORT("f", "6")
         "group = g\n",
     "t.ini:30: [port f] group: group g has 6 ports: at most 5"},
    {PORT("a", "1") "queues = 2\ngroup = g\n" PORT("b", "2") "group = g\n",
     "t.ini:6: [port a] group: port a has queues = 2 (line 5): a group's driver serves one queue of each port"},
    {AB "[port a.10]\nparent = a\nvlan = 10\naddress = 10.10.0.1/24\n",
     "t.ini:5: [port a] group: port a has VLAN port a.10 (line 11): a group's driver does not serve VLAN ports yet"},
    {AB "[port a.10]\nparent = a\nvlan = 10\naddress = 10.10.0.1/24\ngroup = g\n",
     "t.ini:15: [port a.10] group: a VLAN port has no device of its own"},
    {PORT("a", "1") "group = g\n" PORT("b", "2") "group = g\nzone = dmz\n",
     "t.ini:11: [port b] zone: port b is in zone dmz and port a, of the same group g (line 5), in zone default: a "
     "group's ports share one pool"},
    {AB "[service driver-a]\ncpu = 0\n", "t.ini:11: [service driver-a] port a is in group g (line 5): its driver is "
                                         "driver-g"},
    {AB "[service driver-g.1]\ncpu = 0\n",
     "t.ini:11: [service driver-g.1] group g's driver serves one queue of each port: its only driver is driver-g"},
    {AB "[service driver-h]\ncpu = 0\n", "t.ini:11: [service driver-h] no port \"h\""},
};

static void test_bad(void **state)
{
    (void)state;
    t_manifest_refused(t_bad, sizeof t_bad / sizeof t_bad[0]);
}

static void test_good(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    /* c is alone; b and d make group g (its first port is b), with a
     * [service driver-g]; a and e make group h. */
    const char *text = PORT("a", "1") "group = h\n" PORT("b", "2") "group = g\n" PORT("c", "3") PORT("d", "4")
        "group = g\n" PORT("e", "5") "group = h\n[service driver-g]\ncpu = 1\nhang_ms = 700\n";
    int rc = sup_manifest_load_string("t.ini", text, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.nservices, 4);
    int g = sup_manifest_service(&m, "driver-g"), h = sup_manifest_service(&m, "driver-h");
    int c = sup_manifest_service(&m, "driver-c");
    assert_true(g > 0 && h > 0 && c > 0);
    assert_int_equal(sup_manifest_service(&m, "driver-a"), -1);
    assert_int_equal(sup_manifest_service(&m, "driver-b"), -1);
    assert_int_equal(m.services[g].port, 1);
    assert_int_equal(m.services[g].members, (1u << 1) | (1u << 3));
    assert_int_equal(m.services[g].cpu, 1);
    assert_int_equal(m.services[g].hang_ms, 700);
    assert_int_equal(m.services[g].kind, SUP_SVC_DRIVER);
    assert_int_equal(m.services[h].port, 0);
    assert_int_equal(m.services[h].members, (1u << 0) | (1u << 4));
    assert_int_equal(m.services[h].cpu, -1);
    assert_int_equal(m.services[c].members, 0);
    assert_int_equal(m.services[c].port, 2);
    assert_int_equal(sup_group_first(&m, "g"), 1);
    assert_int_equal(sup_group_first(&m, "x"), -1);
    /* Each service its own uid: four, not six. */
    assert_int_not_equal(m.services[g].uid, m.services[h].uid);
    sup_manifest_free(&m);
}

static void test_reload(void **state)
{
    (void)state;
    struct sup_manifest o, n;
    struct sup_manifest_err err;
    char why[256];
    const char *base = AB PORT("c", "3");
    assert_int_equal(sup_manifest_load_string("o.ini", base, &o, &err), 0);
    static const struct {
        const char *text;
        const char *why; /* NULL: allowed */
    } t[] = {
        {AB PORT("c", "3") "mtu = 1400\n", NULL},
        {AB PORT("c", "3") "group = g\n", "port c: group changed (none -> g): a driver group is set up at up only"},
        {PORT("a", "1") PORT("b", "2") PORT("c", "3"),
         "port a: group changed (g -> none): a driver group is set up at up only"},
        {AB, NULL},
        {PORT("a", "1") "group = g\n" PORT("c", "3") "group = g\n",
         "port c: group changed (none -> g): a driver group is set up at up only"},
        {AB PORT("c", "3") PORT("d", "4") "group = g\n",
         "port d: group changed (no port -> g): a driver group is set up at up only"},
        {AB PORT("c", "3") "[shaper b]\nrate = 10mbit\n",
         "port b of group g: [shaper] added: a group's rings are set up at up only"},
        {AB PORT("c", "3") "[shaper c]\nrate = 10mbit\n", NULL},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (sup_manifest_load_string("n.ini", t[i].text, &n, &err))
            fail_msg("case %zu: %s", i, err.msg);
        bool refused = sup_group_reload_refused(&o, &n, why, sizeof why);
        if (t[i].why) {
            if (!refused)
                fail_msg("case %zu: not refused", i);
            assert_string_equal(why, t[i].why);
        } else if (refused) {
            fail_msg("case %zu: refused: %s", i, why);
        }
        sup_manifest_free(&n);
    }
    /* Removing a port of the group, the group otherwise kept. */
    assert_int_equal(sup_manifest_load_string("o.ini", AB PORT("c", "3") "group = g\n", &n, &err), 0);
    sup_manifest_free(&o);
    assert_int_equal(sup_manifest_load_string("n.ini", AB, &o, &err), 0);
    assert_true(sup_group_reload_refused(&n, &o, why, sizeof why));
    assert_string_equal(why, "port c of group g removed: a driver group is set up at up only");
    sup_manifest_free(&o);
    sup_manifest_free(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_reload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
