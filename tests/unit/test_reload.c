/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_reload.c: what `ringrouter reload` would do with a new
 * manifest (supervisor/reload_plan.c), as `check --diff` prints it, without
 * a running router: the refusals, each naming what needs `up` again, and
 * the dry run's lines, one per change, each restart with its reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/port_slots.h"
#include "supervisor/reload_impl.h"
#include "supervisor/route6.h"
#include "supervisor/route_multi.h"

/* What reload_plan.c and shaper_ctl.c use from the rest of the supervisor,
 * stubbed: a dry run applies nothing, and no route is runtime here. */
const char *sup_state_name(enum sup_state st)
{
    (void)st;
    return "up";
}
bool sup_route_runtime(struct sup *s, uint32_t addr, unsigned len)
{
    (void)s;
    (void)addr;
    (void)len;
    return false;
}
void sup_route_forget(struct sup *s, uint32_t addr, unsigned len)
{
    (void)s;
    (void)addr;
    (void)len;
}
bool sup_route6_runtime(struct sup *s, const uint8_t *addr, unsigned len)
{
    (void)s;
    (void)addr;
    (void)len;
    return false;
}
void sup_route6_forget(struct sup *s, const uint8_t *addr, unsigned len)
{
    (void)s;
    (void)addr;
    (void)len;
}
int sup_mroute_put(struct sup *s, const struct sup_route *r)
{
    (void)s;
    (void)r;
    return 0;
}
int sup_tap_persist(int fd, bool on)
{
    (void)fd;
    (void)on;
    return 0;
}
const char *sup_ip_str(uint32_t a, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
    return buf;
}

#define PORTS                                                                                   \
    "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"                            \
    "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n"
#define SHAPER "[shaper b]\nrate = 100mbit\n[class b bulk]\nrate = 10mbit\nmatch = proto udp\n" \
               "[class b rest]\nrate = 20mbit\ndefault = yes\n"

struct t_run {
    struct sup *s;
    struct sup_manifest n;
};

/* A supervisor holding @old's manifest and its services (as setup makes
 * them, by name), and @new loaded: both must check. */
static void t_load(struct t_run *r, const char *old, const char *new)
{
    struct sup_manifest_err err;
    r->s = calloc(1, sizeof(*r->s));
    assert_non_null(r->s);
    if (sup_manifest_load_string("old.ini", old, &r->s->m, &err) < 0)
        fail_msg("old: %s", err.msg);
    if (sup_manifest_load_string("new.ini", new, &r->n, &err) < 0)
        fail_msg("new: %s", err.msg);
    for (size_t i = 0; i < r->s->m.nservices; i++) {
        struct sup_svc *v = &r->s->svcs[r->s->nsvcs++];
        v->m = &r->s->m.services[i];
        snprintf(v->name, sizeof(v->name), "%s", v->m->name);
        v->port = v->m->port;
    }
}

static void t_free(struct t_run *r)
{
    sup_manifest_free(&r->s->m);
    sup_manifest_free(&r->n);
    free(r->s);
}

static void refused(const char *old, const char *new, const char *want)
{
    struct t_run r;
    t_load(&r, old, new);
    char why[600];
    bool no = sup_reload_slots(&r.s->m, &r.n, why, sizeof(why)) ||
              sup_reload_refused(r.s, &r.s->m, &r.n, why, sizeof(why));
    if (want) {
        assert_true(no);
        assert_string_equal(why, want);
    } else if (no) {
        fail_msg("refused: %s", why);
    }
    t_free(&r);
}

/* check --diff's lines for @old -> @new. */
static void diff(const char *old, const char *new, const char *want)
{
    struct t_run r;
    t_load(&r, old, new);
    char why[600];
    if (sup_reload_slots(&r.s->m, &r.n, why, sizeof(why)) || sup_reload_refused(r.s, &r.s->m, &r.n, why, sizeof(why)))
        fail_msg("refused: %s", why);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    static struct rl_restart rs[SUP_MAX_SERVICES];
    memset(rs, 0, sizeof(rs));
    struct rl_ctx c = {.s = r.s, .o = &r.s->m, .n = &r.n, .f = f, .rs = rs};
    sup_reload_walk(&c);
    fclose(f);
    assert_string_equal(text, want);
    free(text);
    t_free(&r);
}

static void test_reload_refusals(void **state)
{
    (void)state;
    refused(PORTS, "[port a]\ndriver = tap\nifname = rr-b2\naddress = 10.1.0.1/24\n"
                   "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n",
            "ports changed (port a: ifname changed (or remove the port in one reload and add it back in the next))");
    refused(PORTS, PORTS "[port c]\ndriver = afxdp\nifname = eth9\naddress = 10.3.0.1/24\n",
            "ports changed (added c: an AF_XDP port is added only at up)");
    refused(PORTS, "[router]\npool_buffers = 8192\n" PORTS, "[router] pool_buffers changed");
    /* What a reload does itself: not refused. A port's address, address6 and
     * mtu; a shaper added; any port removed (a before b), a port added
     * before another in the file, the last port swapped for another. */
    refused(PORTS, "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n", NULL);
    refused(PORTS, "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"
                   "[port c]\ndriver = tap\nifname = rr-c\naddress = 10.3.0.1/24\n"
                   "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n",
            NULL);
    refused(PORTS, PORTS "[shaper b]\nrate = 10mbit\n", NULL);
    refused(PORTS, "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"
                   "[port c]\ndriver = tap\nifname = rr-c\naddress = 10.3.0.1/24\n",
            NULL);
    refused(PORTS, "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.1.1/24\nmtu = 9000\n"
                   "address6 = 2001:db8:1::1/64\n[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n",
            NULL);
    refused(PORTS, PORTS "[port c]\ndriver = tap\nifname = rr-c\naddress = 10.3.0.1/24\n", NULL);
    refused(PORTS, PORTS "[route 10.9.0.0/16]\nvia = 10.2.0.2\n[neigh 10.1.0.9]\nmac = 02:00:00:00:00:09\n", NULL);
    refused(PORTS, PORTS "[neigh fe80::9]\nmac = 02:00:00:00:00:09\nport = a\n", NULL);
    /* The last ports removed (AF_XDP too), their IPv6 neighbours with them. */
    refused(PORTS "[port c]\ndriver = afxdp\nifname = eth9\naddress = 10.3.0.1/24\n", PORTS, NULL);
    refused(PORTS "[neigh fe80::9]\nmac = 02:00:00:00:00:09\nport = b\n",
            "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n", NULL);
}

static void test_reload_diff_lines(void **state)
{
    (void)state;
    /* A shaper added, and one removed: the router and the port's driver restart. */
    diff(PORTS, PORTS "[shaper b]\nrate = 10mbit\n",
         "port b: [shaper] added (starts shaper-b; restarts router and the port's first driver)\n"
         "restart router: port b: [shaper] added\n"
         "restart driver-b: [shaper] added\n");
    diff(PORTS "[shaper b]\nrate = 10mbit\n", PORTS,
         "port b: [shaper] removed (stops shaper-b; restarts router and the port's first driver)\n"
         "restart router: port b: [shaper] removed\n"
         "restart driver-b: [shaper] removed\n");
    /* Router Advertisements on a port: the router restarts on them. */
    diff(PORTS, "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\nra = yes\nra_interval = 30\n"
                "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n",
         "port a: ra no, every 600 s -> yes, every 30 s (restarts router)\n"
         "restart router: port a: ra changed\n");
    /* The last port swapped for another in one reload. */
    diff(PORTS, "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"
                "[port c]\ndriver = tap\nifname = rr-c\naddress = 10.3.0.1/24\n",
         "port b: removed, tap rr-b (stops driver-b; its device goes; restarts router)\n"
         "port c: added, tap rr-c, address 10.3.0.1/24 (starts driver-c; restarts router)\n"
         "restart router: port b removed: the router takes its rings at start; port c added: the router takes its "
         "rings at start\n");
    /* A port's address, address6 and mtu: live, the router (and for the
     * mtu the port's TAP driver) restarting on them. */
    diff(PORTS "[route 10.9.0.0/16]\nvia = 10.2.0.2\n",
         "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.1.1/24\nmtu = 9000\naddress6 = 2001:db8:1::1/64\n"
         "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n[route 10.9.0.0/16]\nvia = 10.2.0.2\n",
         "port a: address 10.1.0.1/24 -> 10.1.1.1/24 (restarts router)\n"
         "port a: address6 2001:db8:1::1/64 added (restarts router)\n"
         "port a: mtu 1500 -> 9000 (restarts router and the port's drivers)\n"
         "restart router: port a: address changed; port a: address6 2001:db8:1::1/64 added; port a: mtu 1500 -> "
         "9000\n"
         "restart driver-a: mtu 1500 -> 9000\n");
    diff(PORTS "[route 10.8.0.0/16]\nvia = 10.2.0.2\n[route 10.7.0.0/16]\nvia = 10.2.0.2\n"
               "[neigh 10.1.0.9]\nmac = 02:00:00:00:00:09\n",
         PORTS "[route 10.9.0.0/16]\nvia = 10.2.0.2\n[route 10.7.0.0/16]\nport = a\n"
               "[neigh 10.1.0.9]\nmac = 02:00:00:00:00:0a\n[neigh 10.2.0.8]\nmac = 02:00:00:00:00:08\n"
               "[route 2001:db8:5::/48]\nvia = fe80::1\nport = b\n",
         "route 10.8.0.0/16: removed\n"
         "route 10.9.0.0/16: added, via 10.2.0.2\n"
         "route 10.7.0.0/16: via 10.2.0.2 -> port a\n"
         "route 2001:db8:5::/48: added, via fe80::1 port b\n"
         "neigh 10.1.0.9: mac 02:00:00:00:00:09 port a -> mac 02:00:00:00:00:0a port a\n"
         "neigh 10.2.0.8: added, mac 02:00:00:00:00:08 port b\n");
    /* IPv6 neighbours: removed, changed, added, as IPv4's (the router's mailbox takes both). */
    diff(PORTS "[neigh fe80::9]\nmac = 02:00:00:00:00:09\nport = a\n[neigh fe80::7]\nmac = 02:00:00:00:00:07\nport = b\n"
               "[neigh 10.1.0.9]\nmac = 02:00:00:00:00:09\n",
         PORTS "[neigh fe80::9]\nmac = 02:00:00:00:00:0a\nport = a\n[neigh fe80::8]\nmac = 02:00:00:00:00:08\nport = b\n"
               "[neigh 10.1.0.9]\nmac = 02:00:00:00:00:09\n",
         "neigh fe80::7: removed\n"
         "neigh fe80::9: mac 02:00:00:00:00:09 port a -> mac 02:00:00:00:00:0a port a\n"
         "neigh fe80::8: added, mac 02:00:00:00:00:08 port b\n");
    /* Several next hops: one to several, members and weights changed, the
     * same set in another order (nothing), added. */
    diff(PORTS "[route 10.7.0.0/16]\nvia = 10.2.0.2\n"
               "[route 10.8.0.0/16]\nnexthop = 10.2.0.2\nnexthop = 10.2.0.3 weight 2\n"
               "[route 10.6.0.0/16]\nnexthop = 10.2.0.2\nnexthop = 10.1.0.2\n",
         PORTS "[route 10.7.0.0/16]\nnexthop = 10.2.0.2\nnexthop = 10.1.0.2\n"
               "[route 10.8.0.0/16]\nnexthop = 10.2.0.2\nnexthop = 10.2.0.4 weight 3\n"
               "[route 10.6.0.0/16]\nnexthop = 10.1.0.2\nnexthop = 10.2.0.2\n"
               "[route 2001:db8:5::/48]\nnexthop = fe80::1 port b\nnexthop = fe80::2 port a weight 2\n",
         "route 10.7.0.0/16: via 10.2.0.2 -> via 10.2.0.2 weight 1 via 10.1.0.2 weight 1\n"
         "route 10.8.0.0/16: via 10.2.0.2 weight 1 via 10.2.0.3 weight 2 -> via 10.2.0.2 weight 1 via 10.2.0.4 weight 3\n"
         "route 2001:db8:5::/48: added, via fe80::1 port b weight 1 via fe80::2 port a weight 2\n");
    /* The same manifest, its sections moved: nothing. */
    diff(PORTS "[route 10.8.0.0/16]\nvia = 10.2.0.2\n[neigh 10.1.0.9]\nmac = 02:00:00:00:00:09\n",
         "[neigh 10.1.0.9]\nmac = 02:00:00:00:00:09\n[route 10.8.0.0/16]\nvia = 10.2.0.2\n" PORTS, "");
}

static void test_reload_diff_restarts(void **state)
{
    (void)state;
    diff(PORTS SHAPER, PORTS SHAPER "[class b voice]\nrate = 5mbit\nmatch = dscp 46\n",
         "class b voice: added, rate 5mbit ceil 100mbit (restarts shaper-b)\n"
         "restart shaper-b: class voice added\n");
    /* Rates only: through the mailbox; a default burst follows the rate. */
    diff(PORTS SHAPER,
         PORTS "[shaper b]\nrate = 200mbit\n[class b bulk]\nrate = 15mbit\nceil = 60mbit\nmatch = proto udp\n"
               "[class b rest]\nrate = 20mbit\ndefault = yes\n",
         "shaper b: burst 125000 -> 250000, the default for the new rate: in effect at shaper-b's next start\n"
         "shaper b: rate 100mbit -> 200mbit\n"
         "class b bulk: rate 10mbit -> 15mbit, ceil 100mbit -> 60mbit\n"
         "class b rest: ceil 100mbit -> 200mbit\n");
    diff(PORTS, PORTS "[service driver-a]\nhang_ms = 500\nrestart_limit = 9\n[router]\nicmp_rate = 5\n",
         "service driver-a: restart_limit 5 -> 9\n"
         "service driver-a: hang_ms 200 -> 500 (restarts driver-a)\n"
         "router: icmp_rate 1000 -> 5, icmp_burst 50 -> 50 (restarts router)\n"
         "restart router: icmp_rate or icmp_burst changed\n"
         "restart driver-a: hang_ms 200 -> 500\n");
    diff(PORTS, PORTS "[router]\nneigh_reachable_ms = 2000\nneigh_probes = 5\n",
         "router: neigh_reachable_ms 30000 -> 2000 (restarts router)\n"
         "router: neigh_probes 3 -> 5 (restarts router)\n"
         "restart router: neigh_reachable_ms 30000 -> 2000; neigh_probes 3 -> 5\n");
    diff(PORTS, PORTS "[port c]\ndriver = tap\nifname = rr-c\nnetns = nc\naddress = 10.3.0.1/24\npersist = yes\n",
         "port c: added, tap rr-c in netns nc, address 10.3.0.1/24 (starts driver-c; restarts router)\n"
         "restart router: port c added: the router takes its rings at start\n");
    /* A port removed: its routes and neighbours go with it. */
    diff(PORTS "[port c]\ndriver = tap\nifname = rr-c\nnetns = nc\naddress = 10.3.0.1/24\npersist = yes\n"
               "[route 10.9.0.0/16]\nvia = 10.3.0.2\n[neigh 10.3.0.9]\nmac = 02:00:00:00:00:09\n"
               "[route 10.8.0.0/16]\nvia = 10.2.0.2\n",
         PORTS "[route 10.8.0.0/16]\nvia = 10.2.0.2\n",
         "port c: removed, tap rr-c in netns nc (stops driver-c; the TAP stays (persist = yes); restarts router)\n"
         "route 10.9.0.0/16: removed\n"
         "neigh 10.3.0.9: removed with port c\n"
         "restart router: port c removed: the router takes its rings at start\n");
    diff(PORTS, "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\npersist = yes\n"
                "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n",
         "port a: persist no -> yes\n");
}

#define PORT_A "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"
#define PORT_C "[port c]\ndriver = tap\nifname = rr-c\naddress = 10.3.0.1/24\n"
#define PORT_D "[port d]\ndriver = tap\nifname = rr-d\naddress = 10.4.0.1/24\n"

static void slots_load(struct sup_manifest *m, const char *text)
{
    struct sup_manifest_err err;
    if (sup_manifest_load_string("t.ini", text, m, &err) < 0)
        fail_msg("%s", err.msg);
}

/* The new manifest laid out in the running one's slots: a port keeps its
 * index for its life, whatever is removed before it or added. */
static void test_reload_slots(void **state)
{
    (void)state;
    char why[600];
    struct sup_manifest o, n, n2;
    slots_load(&o, PORTS PORT_C);
    /* b, a middle port, removed: c stays at 2, b's slot is vacant; c's
     * route, neighbour and driver name slot 2. */
    slots_load(&n, PORT_A PORT_C "[route 10.9.0.0/16]\nvia = 10.3.0.2\n[neigh 10.3.0.9]\nmac = 02:00:00:00:00:09\n");
    assert_false(sup_slots_layout(&o, &n, why, sizeof(why)));
    assert_int_equal(n.nports, 3);
    assert_string_equal(n.ports[0].name, "a");
    assert_true(n.ports[1].vacant && !n.ports[1].name[0]);
    assert_string_equal(n.ports[2].name, "c");
    assert_int_equal(n.routes[0].port, 2);
    assert_int_equal(n.neighs[0].port, 2);
    assert_int_equal(n.services[sup_manifest_service(&n, "driver-c")].port, 2);
    assert_int_equal(sup_manifest_port(&n, ""), -1);
    assert_int_equal(sup_manifest_port(&n, "c"), 2);
    /* The same ports in another order in the file: nothing moves. */
    slots_load(&n2, PORT_C PORT_A);
    assert_false(sup_slots_layout(&n, &n2, why, sizeof(why)));
    assert_int_equal(n2.nports, 3);
    assert_true(!strcmp(n2.ports[0].name, "a") && n2.ports[1].vacant && !strcmp(n2.ports[2].name, "c"));
    sup_manifest_free(&n2);
    /* A swap, a removed and d added in one reload: d takes b's slot, vacant
     * since the reload before, never a's, freed in this one. */
    slots_load(&n2, PORT_C PORT_D);
    assert_false(sup_slots_layout(&n, &n2, why, sizeof(why)));
    assert_int_equal(n2.nports, 3);
    assert_true(n2.ports[0].vacant && !strcmp(n2.ports[1].name, "d") && !strcmp(n2.ports[2].name, "c"));
    assert_int_equal(n2.services[sup_manifest_service(&n2, "driver-d")].port, 1);
    sup_manifest_free(&n2);
    /* The last port removed: its slot goes, with the vacant ones before it. */
    slots_load(&n2, PORT_A);
    assert_false(sup_slots_layout(&n, &n2, why, sizeof(why)));
    assert_int_equal(n2.nports, 1);
    sup_manifest_free(&n2);
    /* The adoption's record of the slots lays the file's order out again. */
    struct sup_slots rec;
    sup_slots_save(&n, &rec);
    slots_load(&n2, PORT_A PORT_C);
    assert_int_equal(sup_slots_restore(&n2, &rec), 0);
    assert_true(n2.nports == 3 && n2.ports[1].vacant && !strcmp(n2.ports[2].name, "c"));
    sup_manifest_free(&n2);
    slots_load(&n2, PORT_A PORT_D);
    assert_int_equal(sup_slots_restore(&n2, &rec), -ESRCH);
    sup_manifest_free(&n2);
    sup_manifest_free(&n);
    sup_manifest_free(&o);
    /* Sixteen slots at most: a port added while the first is removed. */
    char text[4096] = "", *p = text;
    for (int i = 0; i < IPC_MAX_PORTS; i++)
        p += sprintf(p, "[port p%d]\ndriver = tap\nifname = rr-p%d\naddress = 10.%d.0.1/24\n", i, i, i + 1);
    slots_load(&o, text);
    p = text;
    for (int i = 1; i <= IPC_MAX_PORTS; i++)
        p += sprintf(p, "[port p%d]\ndriver = tap\nifname = rr-p%d\naddress = 10.%d.0.1/24\n", i, i, i + 1);
    slots_load(&n, text);
    assert_true(sup_slots_layout(&o, &n, why, sizeof(why)));
    assert_string_equal(why, "added p16: the ports would take more than 16 slots (a removed port's slot is free "
                             "again from the reload after the one that removes it)");
    sup_manifest_free(&n);
    sup_manifest_free(&o);
    /* A middle port removed: c's route and neighbour, at c's slot in both,
     * do not change; then a swap: b removed, d added after the others. */
    diff(PORTS PORT_C "[route 10.9.0.0/16]\nvia = 10.3.0.2\n[neigh 10.3.0.9]\nmac = 02:00:00:00:00:09\n",
         PORT_A PORT_C "[route 10.9.0.0/16]\nvia = 10.3.0.2\n[neigh 10.3.0.9]\nmac = 02:00:00:00:00:09\n",
         "port b: removed, tap rr-b (stops driver-b; its device goes; restarts router)\n"
         "restart router: port b removed: the router takes its rings at start\n");
    diff(PORTS PORT_C, PORT_A PORT_C PORT_D,
         "port b: removed, tap rr-b (stops driver-b; its device goes; restarts router)\n"
         "port d: added, tap rr-d, address 10.4.0.1/24 (starts driver-d; restarts router)\n"
         "restart router: port b removed: the router takes its rings at start; port d added: the router takes its "
         "rings at start\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reload_refusals),
        cmocka_unit_test(test_reload_slots),
        cmocka_unit_test(test_reload_diff_lines),
        cmocka_unit_test(test_reload_diff_restarts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
