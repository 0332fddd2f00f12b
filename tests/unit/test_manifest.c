/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_manifest.c: supervisor/manifest.c, black-box. A table of
 * bad manifests, each with the exact error it must produce (line number
 * included); good manifests whose parsed values are checked (defaults,
 * units, resolved references, the implied service list); the built-in demo
 * manifest; and files under tests/manifests/, loaded by path, so that the
 * file name appears in the error. Run from the repository root (run.sh does).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/manifest.h"

/* Two TAP ports on lines 1-8; a case's own text starts on line 9. */
#define BASE                                                                                        \
    "[port a]\n"                                                                                    \
    "driver = tap\n"                                                                                \
    "ifname = rr-a\n"                                                                               \
    "address = 10.1.0.1/24\n"                                                                       \
    "[port b]\n"                                                                                    \
    "driver = tap\n"                                                                                \
    "ifname = rr-b\n"                                                                               \
    "address = 10.2.0.1/24\n"

/* A port on lines 1-4 whose line 4 is @ADDR_LINE. */
#define PORT_A(addr_line) "[port a]\ndriver = tap\nifname = rr-a\n" addr_line "\n"

/* A shaped port b with rate 100mbit: lines 9-10. */
#define SHAPER_B BASE "[shaper b]\nrate = 100mbit\n"

#include "t_manifest_bad.h" /* the refused manifests, each with its error */

#define NBAD (sizeof t_bad_cases / sizeof t_bad_cases[0])

static void test_manifest_bad(void **state)
{
    (void)state;
    size_t failed = 0;
    for (size_t i = 0; i < NBAD; i++) {
        struct sup_manifest m;
        struct sup_manifest_err err;
        int rc = sup_manifest_load_string("t.ini", t_bad_cases[i].text, &m, &err);
        if (rc != -EINVAL || strcmp(err.msg, t_bad_cases[i].error) != 0) {
            print_error("case %zu: rc %d\n  want: %s\n  got:  %s\n", i, rc, t_bad_cases[i].error, err.msg);
            failed++;
        }
        /* a failed load leaves nothing to free, and freeing is still safe */
        assert_null(m.ports);
        sup_manifest_free(&m);
    }
    assert_int_equal(failed, 0);
    assert_true(NBAD >= 25);
}

/* IPv6: several addresses per port (repeated key and list), the derived
 * EUI-64 link-local address where none is given, routes with a global, a
 * link-local (with its port) or no gateway, an IPv6 static neighbour. */
static void test_manifest_ipv6(void **state)
{
    (void)state;
    static const char text[] = "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"
                               "mac = 02:00:00:00:00:0a\naddress6 = 2001:db8:1::1/64\n"
                               "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n"
                               "address6 = 2001:db8:2::1/64, fd00:2::1/64\naddress6 = fe80::1/64\n"
                               "[route 2001:db8:9::/48]\nvia = 2001:db8:2::2\n"
                               "[route 2001:db8:a::/48]\nvia = fe80::5\nport = b\n"
                               "[route ::/0]\nport = a\n"
                               "[route 10.9.0.0/16]\nvia = 10.2.0.2\n"
                               "[neigh 2001:db8:1::7]\nmac = 02:00:00:00:00:07\n"
                               "[neigh fe80::8]\nmac = 02:00:00:00:00:08\nport = b\n";
    struct sup_manifest m;
    struct sup_manifest_err err;
    if (sup_manifest_load_string("t.ini", text, &m, &err) != 0) {
        print_error("%s\n", err.msg);
        fail();
    }
    uint8_t want[16];
    char buf[64];
    /* port a: its address, then fe80::EUI-64 of 02:00:00:00:00:0a */
    assert_int_equal(m.ports[0].naddr6, 2);
    assert_string_equal(sup_addr6_str(m.ports[0].addr6[0].addr, buf, sizeof buf), "2001:db8:1::1");
    assert_string_equal(sup_addr6_str(m.ports[0].addr6[1].addr, buf, sizeof buf), "fe80::ff:fe00:a");
    assert_int_equal(m.ports[0].addr6[1].len, 64);
    assert_int_equal(m.ports[0].addr6_line[1], 0);
    /* port b: three given, the link-local one among them: none derived */
    assert_int_equal(m.ports[1].naddr6, 3);
    assert_string_equal(sup_addr6_str(m.ports[1].addr6[1].addr, buf, sizeof buf), "fd00:2::1");
    assert_int_equal(m.ports[1].addr6_line[2], 12);
    assert_int_equal(m.nroutes, 4);
    assert_true(m.routes[0].v6 && !m.routes[0].direct && m.routes[0].port == 1);
    assert_true(sup_parse_addr6("2001:db8:2::2", want, NULL, 0));
    assert_memory_equal(m.routes[0].via6, want, 16);
    assert_true(m.routes[1].v6 && m.routes[1].port == 1 && sup_ll6(m.routes[1].via6));
    assert_true(m.routes[2].v6 && m.routes[2].direct && m.routes[2].port == 0 && m.routes[2].prefix6.len == 0);
    assert_false(m.routes[3].v6);
    assert_int_equal(m.nneighs, 2);
    assert_true(m.neighs[0].v6 && m.neighs[0].port == 0);
    assert_true(m.neighs[1].v6 && m.neighs[1].port == 1);
    sup_manifest_free(&m);
}

/* The error's line field matches the number in the message. */
static void test_manifest_err_line(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    assert_int_equal(sup_manifest_load_string("x.ini", PORT_A("mtu = 1"), &m, &err), -EINVAL);
    assert_int_equal(err.line, 4);
    assert_int_equal(sup_manifest_load_string("x.ini", "", &m, &err), -EINVAL);
    assert_int_equal(err.line, 0);
    /* err may be NULL */
    assert_int_equal(sup_manifest_load_string("x.ini", "", &m, NULL), -EINVAL);
}

static void test_manifest_default(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = sup_manifest_load_string(SUP_DEFAULT_MANIFEST_NAME, sup_default_manifest, &m, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_string_equal(m.router.name, "demo");
    assert_int_equal(m.router.pool_buffers, 4096);
    assert_int_equal(m.router.frame_size, 32768);
    assert_int_equal(m.router.ring_size, 1024);
    assert_int_equal(m.router.icmp_rate, 1000);
    assert_int_equal(m.router.icmp_burst, 50);
    assert_int_equal(m.router.hoard_pct, 50);
    assert_int_equal(m.router.hoard_ms, 1000);
    assert_int_equal(m.router.neigh_reachable_ms, 30000);
    assert_int_equal(m.router.neigh_retrans_ms, 1000);
    assert_int_equal(m.router.neigh_probes, 3);
    assert_int_equal(m.router.neigh_delay_ms, 5000);
    assert_int_equal(m.router.neigh_stale_ms, 60000);
    assert_false(m.router.stages);
    assert_string_equal(m.router.run_dir, "/run/ringrouter");
    assert_string_equal(m.router.state_dir, ""); /* run_dir's (supervisor/route.c) */
    /* No shared user: each service its own uid from the default range,
     * in the service table's order. */
    assert_string_equal(m.router.user, "");
    assert_string_equal(m.router.group, "");
    assert_int_equal(m.router.uids.first, 1900000000u);
    assert_int_equal(m.router.uids.last, 1900065535u);
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_UIDS], 0);

    assert_int_equal(m.nports, 2);
    const struct sup_port *a = &m.ports[0], *b = &m.ports[1];
    assert_string_equal(a->name, "a");
    assert_int_equal(a->driver, SUP_DRIVER_TAP);
    assert_string_equal(a->ifname, "rr-a");
    assert_string_equal(a->netns, "rr-demo-a");
    assert_int_equal(a->address.addr, 0x0a010001);
    assert_int_equal(a->address.len, 24);
    assert_int_equal(a->mtu, 1500);
    assert_int_equal(a->offloads, SUP_OFFLOAD_CSUM | SUP_OFFLOAD_TSO4 | SUP_OFFLOAD_TSO6);
    assert_int_equal(a->rx_inflight, 32);
    assert_false(a->has_mac);
    assert_int_equal(a->shaper, -1);
    assert_string_equal(b->name, "b");
    assert_string_equal(b->ifname, "rr-b");
    assert_string_equal(b->netns, "rr-demo-b");
    assert_int_equal(b->address.addr, 0x0a020001);
    assert_int_equal(m.nroutes + m.nneighs + m.nshapers + m.nclasses, 0);

    assert_int_equal(m.nservices, 3);
    assert_string_equal(m.services[0].name, "router");
    assert_int_equal(m.services[0].kind, SUP_SVC_ROUTER);
    assert_string_equal(m.services[1].name, "driver-a");
    assert_int_equal(m.services[1].kind, SUP_SVC_DRIVER);
    assert_int_equal(m.services[1].port, 0);
    assert_string_equal(m.services[2].name, "driver-b");
    for (size_t i = 0; i < m.nservices; i++) {
        const struct sup_service *s = &m.services[i];
        assert_int_equal(s->restart, SUP_RESTART_ALWAYS);
        assert_int_equal(s->hang_ms, 200);
        assert_int_equal(s->restart_limit, 5);
        assert_int_equal(s->restart_window_ms, 10000);
        assert_int_equal(s->cpu, -1);
        assert_int_equal(s->poll_us, 0);
        assert_int_equal(s->sched, SUP_SCHED_NORMAL);
        assert_int_equal(s->src.line, 0);
        assert_int_equal(s->uid, 1900000000u + i);
    }
    assert_int_equal(sup_manifest_port(&m, "b"), 1);
    assert_int_equal(sup_manifest_port(&m, "c"), -1);
    assert_int_equal(sup_manifest_service(&m, "driver-b"), 2);
    sup_manifest_free(&m);
    assert_null(m.ports);
    assert_int_equal(m.nports, 0);
}

/* Everything at once, in awkward but legal spelling: a BOM, CRLF line
 * ends, indented keys, both comment styles, inline comments, "key: value". */
static const char t_full[] =
    "\xef\xbb\xbf# a full manifest\r\n"
    "[router]\r\n"
    "  name = edge1 ; inline comment\r\n"
    "  pool_buffers = 65536\n"
    "  frame_size = 4096\n"
    "  ring_size = 4096\n"
    "  user = nobody\n"
    "  run_dir = /tmp/rr-test\n"
    "  icmp_rate = 0\n"
    "  icmp_burst: 10\n"
    "\n"
    "[ port   lan ]   ; the LAN\n"
    "driver = afxdp\n"
    "ifname = veth-lan\n"
    "address = 192.168.7.1/30\n"
    "mtu = 3000\n"
    "xdp_mode = copy\n"
    "steer = all\n"
    "queues = 2\n"
    "mac = 02:AA:bb:cc:dd:01\n"
    "\n"
    "[port wan]\n"
    "driver = tap\n"
    "ifname = rr-wan\n"
    "address = 10.2.0.1/31\n"
    "netns = wan.ns\n"
    "offloads = none\n"
    "rx_inflight = 64\n"
    "mtu = 9000\n"
    "\n"
    "[port up-1]\n"
    "driver = tap\n"
    "ifname = rr-up\n"
    "address = 172.16.0.1/16\n"
    "offloads = csum , uso\n"
    "\n"
    "[route 0.0.0.0/0]\n"
    "via = 10.2.0.0\n"
    "[route 198.51.100.0/24]\n"
    "port = lan\n"
    "[route 203.0.113.128/25]\n"
    "via = 172.16.200.9\n"
    "\n"
    "[neigh 192.168.7.2]\n"
    "mac = 02:00:00:00:00:02\n"
    "[neigh 172.16.0.9]\n"
    "mac = 02:00:00:00:00:09\n"
    "port = up-1\n"
    "\n"
    "[class wan voice] ; before its shaper: order does not matter\n"
    "rate = 10mbit\n"
    "ceil = 20mbit\n"
    "prio = 0\n"
    "match = dscp 46, proto udp, dport 5000-5010, src 10.1.0.0/24\n"
    "[shaper wan]\n"
    "rate = 12.5mbps\n"
    "overhead = 38\n"
    "[class wan bulk]\n"
    "rate = 1.5mbit\n"
    "default = yes\n"
    "[shaper up-1]\n"
    "rate = 1gbit\n"
    "burst = 1.5k\n"
    "\n"
    "[service router]\n"
    "restart = on-failure\n"
    "hang_ms = 500\n"
    "restart_limit = 3\n"
    "restart_window = 2\n"
    "cpu = 1\n"
    "poll_us = 50\n"
    "sched = batch\n"
    "cpu_max_pct = 150\n"
    "[service shaper-wan]\n"
    "restart_window = 500ms\n"
    "[service driver-lan]\n"
    "restart = never\n";

/* Frames past 4096 bytes are for TAP-only routers: a 64 KB GSO packet in 3 frames. */
static void test_manifest_large_frames(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = sup_manifest_load_string("t.ini", BASE "[router]\nframe_size = 32768\npool_buffers = 4096\n", &m, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(m.router.frame_size, 32768);
    assert_int_equal(m.router.pool_buffers, 4096);
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_FRAME_SIZE], 10);
    sup_manifest_free(&m);
}

static void test_manifest_full(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = sup_manifest_load_string("full.ini", t_full, &m, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);

    assert_string_equal(m.router.name, "edge1");
    assert_int_equal(m.router.src.line, 2);
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_NAME], 3);
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_GROUP], 0);
    assert_int_equal(m.router.pool_buffers, 65536);
    assert_int_equal(m.router.frame_size, 4096);
    assert_int_equal(m.router.ring_size, 4096);
    /* user: every service runs as nobody, with nobody's primary group; no
     * service has a uid of its own. */
    assert_string_equal(m.router.user, "nobody");
    assert_true(m.router.group[0] != '\0');
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_UIDS], 0);
    assert_string_equal(m.router.run_dir, "/tmp/rr-test");
    assert_int_equal(m.router.icmp_rate, 0);
    assert_int_equal(m.router.icmp_burst, 10);

    assert_int_equal(m.nports, 3);
    const struct sup_port *lan = &m.ports[0], *wan = &m.ports[1], *up = &m.ports[2];
    assert_string_equal(lan->name, "lan");
    assert_string_equal(lan->src.section, "port lan");
    assert_int_equal(lan->src.line, 12);
    assert_int_equal(lan->driver, SUP_DRIVER_AFXDP);
    assert_int_equal(lan->address.addr, 0xc0a80701);
    assert_int_equal(lan->address.len, 30);
    assert_int_equal(lan->mtu, 3000);
    assert_int_equal(lan->xdp_mode, SUP_XDP_COPY);
    assert_int_equal(lan->steer, SUP_STEER_ALL);
    assert_int_equal(lan->queues, 2);
    assert_true(lan->has_mac);
    assert_memory_equal(lan->mac, ((uint8_t[]){0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x01}), 6);
    assert_string_equal(lan->netns, "");
    assert_int_equal(wan->driver, SUP_DRIVER_TAP);
    assert_int_equal(wan->address.len, 31);
    assert_int_equal(wan->offloads, 0);
    assert_int_equal(wan->rx_inflight, 64);
    assert_int_equal(wan->mtu, 9000);
    assert_string_equal(wan->netns, "wan.ns");
    assert_int_equal(wan->xdp_mode, SUP_XDP_AUTO); /* defaults of the other driver stay harmless */
    assert_int_equal(up->offloads, SUP_OFFLOAD_CSUM | SUP_OFFLOAD_USO);

    assert_int_equal(m.nroutes, 3);
    assert_int_equal(m.routes[0].prefix.addr, 0);
    assert_int_equal(m.routes[0].prefix.len, 0);
    assert_false(m.routes[0].direct);
    assert_int_equal(m.routes[0].via, 0x0a020000); /* on a /31 both addresses are hosts */
    assert_int_equal(m.routes[0].port, 1);
    assert_string_equal(m.routes[0].port_name, "wan");
    assert_true(m.routes[1].direct);
    assert_int_equal(m.routes[1].port, 0);
    assert_int_equal(m.routes[2].port, 2);
    assert_int_equal(m.routes[2].prefix.addr, 0xcb007180);

    assert_int_equal(m.nneighs, 2);
    assert_int_equal(m.neighs[0].port, 0);
    assert_string_equal(m.neighs[0].port_name, "lan");
    assert_int_equal(m.neighs[1].port, 2);
    assert_memory_equal(m.neighs[1].mac, ((uint8_t[]){2, 0, 0, 0, 0, 9}), 6);

    assert_int_equal(m.nshapers, 2);
    const struct sup_shaper *sw = &m.shapers[0], *su = &m.shapers[1];
    assert_int_equal(sw->port, 1);
    assert_int_equal(wan->shaper, 0);
    assert_int_equal(up->shaper, 1);
    assert_int_equal(lan->shaper, -1);
    assert_int_equal(sw->rate, 100000000); /* 12.5 megabytes/s */
    assert_int_equal(sw->overhead, 38);
    assert_int_equal(sw->burst, 125000); /* default: 10 ms at rate */
    assert_int_equal(sw->nclasses, 2);
    assert_int_equal(sw->default_class, 1);
    assert_int_equal(su->rate, 1000000000);
    assert_int_equal(su->burst, 1536);
    assert_int_equal(su->overhead, 24);
    assert_int_equal(su->nclasses, 0);
    assert_int_equal(su->default_class, -1);

    assert_int_equal(m.nclasses, 2);
    const struct sup_class *voice = &m.classes[0], *bulk = &m.classes[1];
    assert_string_equal(voice->name, "voice");
    assert_int_equal(voice->port, 1);
    assert_int_equal(voice->rate, 10000000);
    assert_int_equal(voice->ceil, 20000000);
    assert_int_equal(voice->prio, 0);
    assert_false(voice->is_default);
    assert_int_equal(voice->match.fields, SHP_MATCH_DSCP | SHP_MATCH_PROTO | SHP_MATCH_DPORT | SHP_MATCH_SRC);
    assert_int_equal(voice->match.dscp, 46);
    assert_int_equal(voice->match.proto, 17);
    assert_int_equal(voice->match.dport_lo, 5000);
    assert_int_equal(voice->match.dport_hi, 5010);
    assert_int_equal(voice->match.src.addr, 0x0a010000);
    assert_int_equal(voice->match.src.len, 24);
    assert_int_equal(bulk->rate, 1500000);
    assert_int_equal(bulk->ceil, 100000000); /* default: the port's rate */
    assert_int_equal(bulk->prio, 4);
    assert_true(bulk->is_default);

    /* router, driver-lan (queues 0 and 1), driver-wan, driver-up-1, shaper-wan, shaper-up-1 */
    assert_int_equal(m.nservices, 7);
    const char *names[] = {"router",      "driver-lan", "driver-lan.1", "driver-wan",
                           "driver-up-1", "shaper-wan", "shaper-up-1"};
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(m.services[i].name, names[i]);
    /* driver-lan.1 is [service driver-lan] on queue 1 */
    assert_int_equal(m.services[2].restart, SUP_RESTART_NEVER);
    assert_int_equal(m.services[2].port, 0);
    assert_int_equal(m.services[2].queue, 1);
    assert_int_equal(m.services[1].queue, 0);
    const struct sup_service *r = &m.services[0];
    assert_int_equal(r->restart, SUP_RESTART_ON_FAILURE);
    assert_int_equal(r->hang_ms, 500);
    assert_int_equal(r->restart_limit, 3);
    assert_int_equal(r->restart_window_ms, 2000);
    assert_int_equal(r->cpu, 1);
    assert_int_equal(r->poll_us, 50);
    assert_int_equal(r->sched, SUP_SCHED_BATCH);
    assert_int_equal(r->cpu_max_pct, 150);
    assert_int_equal(m.services[1].cpu_max_pct, 0);
    assert_int_equal(m.router.restart_cpu_max_pct, 25);
    assert_int_equal(r->port, -1);
    assert_int_equal(m.services[1].sched, SUP_SCHED_NORMAL);
    assert_int_equal(m.services[1].restart, SUP_RESTART_NEVER);
    assert_int_equal(m.services[1].port, 0);
    assert_int_equal(m.services[1].kind, SUP_SVC_DRIVER);
    assert_int_equal(m.services[3].restart, SUP_RESTART_ALWAYS);
    assert_int_equal(m.services[5].kind, SUP_SVC_SHAPER);
    assert_int_equal(m.services[5].port, 1);
    assert_int_equal(m.services[5].restart_window_ms, 500);
    assert_int_equal(m.services[5].hang_ms, 200);
    assert_int_equal(m.services[6].port, 2);
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(m.services[i].uid, 0);
    sup_manifest_free(&m);
}

/* [router] uids: service i of the service table runs as FIRST + i (and
 * gid FIRST + i); a range that holds every service exactly is enough. Each
 * queue of an AF_XDP port and each shaper is a service of its own. */
static void test_manifest_uids(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint32_t first, last;
        unsigned line;
        size_t nservices;
        const char *names[6];
    } cases[] = {
        {BASE "[router]\nuids = 5000-5002\n", 5000, 5002, 10, 3, {"router", "driver-a", "driver-b"}},
        {SHAPER_B "[router]\nname = x\nuids = 70000-80000 ; in the middle\n", 70000, 80000, 13, 4,
         {"router", "driver-a", "driver-b", "shaper-b"}},
        {BASE "[port x]\ndriver = afxdp\nifname = xx\naddress = 10.3.0.1/24\nqueues = 2\n"
              "[router]\nuids = 2147483642-2147483647\n",
         2147483642u, 2147483647u, 15, 5, {"router", "driver-a", "driver-b", "driver-x", "driver-x.1"}},
        {BASE "[router]\nuser =\ngroup =\nuids = 1-3\n", 1, 3, 12, 3, {"router", "driver-a", "driver-b"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sup_manifest m;
        struct sup_manifest_err err;
        int rc = sup_manifest_load_string("t.ini", cases[i].text, &m, &err);
        if (rc)
            print_error("case %zu: %s\n", i, err.msg);
        assert_int_equal(rc, 0);
        assert_string_equal(m.router.user, "");
        assert_string_equal(m.router.group, "");
        assert_int_equal(m.router.uids.first, cases[i].first);
        assert_int_equal(m.router.uids.last, cases[i].last);
        assert_int_equal(m.router.src.key_line[SUP_ROUTER_UIDS], cases[i].line);
        assert_int_equal(m.nservices, cases[i].nservices);
        for (size_t j = 0; j < m.nservices; j++) {
            assert_string_equal(m.services[j].name, cases[i].names[j]);
            assert_int_equal(m.services[j].uid, cases[i].first + j);
        }
        sup_manifest_free(&m);
    }
}

/* [router] stages: off unless the manifest says on. */
static void test_manifest_stages(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool on;
        unsigned line;
    } cases[] = {
        {BASE "[router]\nstages = on\n", true, 10},
        {BASE "[router]\nname = x\nstages = off ; the default\n", false, 11},
        {BASE "[router]\nname = x\n", false, 0},
        {BASE, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sup_manifest m;
        struct sup_manifest_err err;
        int rc = sup_manifest_load_string("t.ini", cases[i].text, &m, &err);
        if (rc)
            print_error("case %zu: %s\n", i, err.msg);
        assert_int_equal(rc, 0);
        assert_int_equal(m.router.stages, cases[i].on);
        assert_int_equal(m.router.src.key_line[SUP_ROUTER_STAGES], cases[i].line);
        sup_manifest_free(&m);
    }
}

static void test_manifest_rate_format(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(sup_rate_format(100000000, buf, sizeof buf), "100mbit");
    assert_string_equal(sup_rate_format(1500000, buf, sizeof buf), "1.5mbit");
    assert_string_equal(sup_rate_format(49800000, buf, sizeof buf), "49.8mbit");
    assert_string_equal(sup_rate_format(12, buf, sizeof buf), "12bit");
    assert_string_equal(sup_rate_format(999, buf, sizeof buf), "999bit");
    assert_string_equal(sup_rate_format(1001, buf, sizeof buf), "1.001kbit");
    assert_string_equal(sup_rate_format(2000000000000, buf, sizeof buf), "2tbit");
    /* 12 decimals of tbit is past the parser's 9: one unit down. */
    assert_string_equal(sup_rate_format(1000000000001, buf, sizeof buf), "1000.000000001gbit");
    /* What is printed reads back, through the one parser, as the same rate. */
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t bits = 1000 + x % (1000000000000ull - 1000 + 1);
        if (i % 3 == 0)
            bits = bits / 1000000 * 1000000 + (x >> 40) % 1000; /* round figures with a tail */
        if (bits < 1000)
            bits = 1000;
        uint64_t back = 0;
        char why[256];
        sup_rate_format(bits, buf, sizeof buf);
        if (sup_parse_rate(buf, &back, why, sizeof why) || back != bits)
            fail_msg("%llu printed as %s reads back as %llu (%s)", (unsigned long long)bits, buf,
                     (unsigned long long)back, why);
    }
    /* The byte forms are tc's: 50mbps is 400mbit. */
    uint64_t r;
    char why[256];
    assert_null(sup_parse_rate("50mbps", &r, why, sizeof why));
    assert_int_equal(r, 400000000);
    assert_null(sup_parse_rate("2.5mbps", &r, why, sizeof why));
    assert_int_equal(r, 20000000);
    assert_non_null(sup_parse_rate("50", &r, why, sizeof why));
}

/* Files: the path as given names the file in every message. */
static void test_manifest_files(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = sup_manifest_load_file("tests/manifests/good.ini", &m, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(m.nports, 2);
    assert_string_equal(m.router.name, "edge1");
    assert_int_equal(m.nroutes, 1);
    assert_int_equal(m.nshapers, 1);
    assert_int_equal(m.shapers[0].rate, 100000000);
    assert_int_equal(m.shapers[0].burst, 65536);
    sup_manifest_free(&m);

    assert_int_equal(sup_manifest_load_file("tests/manifests/bad-prefix.ini", &m, &err), -EINVAL);
    assert_string_equal(err.msg,
                        "tests/manifests/bad-prefix.ini:14: [port wan] address: \"10.2.0.1/33\" is not an IPv4 prefix");
    assert_int_equal(err.line, 14);

    assert_int_equal(sup_manifest_load_file("tests/manifests/bad-route.ini", &m, &err), -EINVAL);
    assert_string_equal(err.msg,
                        "tests/manifests/bad-route.ini:18: [route 0.0.0.0/0] via: 10.3.0.1 is not on any port's network");

    assert_int_equal(sup_manifest_load_file("tests/manifests/no-such-file.ini", &m, &err), -ENOENT);
    assert_string_equal(err.msg, "tests/manifests/no-such-file.ini: cannot read: No such file or directory");
    assert_int_equal(sup_manifest_load_file("tests/manifests", &m, &err), -EISDIR);
    assert_string_equal(err.msg, "tests/manifests: cannot read: Is a directory");
    assert_null(m.ports);

    /* A FIFO is refused at once: opening it to read would wait for a writer
     * (a hang, were the open blocking), and so is a device. */
    char dir[] = "/tmp/t_manifest.XXXXXX", fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char want[128];
    snprintf(want, sizeof want, "%s: not a regular file", fifo);
    assert_int_equal(sup_manifest_load_file(fifo, &m, &err), -EINVAL);
    assert_string_equal(err.msg, want);
    unlink(fifo);
    rmdir(dir);
    assert_int_equal(sup_manifest_load_file("/dev/null", &m, &err), -EINVAL);
    assert_string_equal(err.msg, "/dev/null: not a regular file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_bad),
        cmocka_unit_test(test_manifest_err_line),
        cmocka_unit_test(test_manifest_ipv6),
        cmocka_unit_test(test_manifest_default),
        cmocka_unit_test(test_manifest_large_frames),
        cmocka_unit_test(test_manifest_full),
        cmocka_unit_test(test_manifest_uids),
        cmocka_unit_test(test_manifest_stages),
        cmocka_unit_test(test_manifest_rate_format),
        cmocka_unit_test(test_manifest_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
