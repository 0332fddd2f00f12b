/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_filter_sup.c: the supervisor's half of rr-filter that
 * runs without a process: [filter] in the manifest (its keys, what its
 * place on the path refuses, the service it implies), the check of the
 * connection table's header before a new instance adopts it
 * (sup_filter_head_check), and what `conntrack show` and `filter show`
 * read (flt_ct_peek, flt_rules_line).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tests/unit/test_filter_common.h"

#include <errno.h>

#include "supervisor/filter.h"
#include "supervisor/manifest.h"
#include "tables/filter.h"
#include "tables/shaper.h"

#define BASE                                                                                        \
    "[port a]\n"                                                                                    \
    "driver = tap\n"                                                                                \
    "ifname = rr-a\n"                                                                               \
    "address = 10.1.0.1/24\n"                                                                       \
    "[port b]\n"                                                                                    \
    "driver = tap\n"                                                                                \
    "ifname = rr-b\n"                                                                               \
    "address = 10.2.0.1/24\n"

static void test_manifest_bad(void **state)
{
    (void)state;
    static const struct {
        const char *text, *error;
    } cases[] = {
        {BASE "[filter]\n", "t.ini:9: [filter] rules: missing, expected the absolute path of the ruleset"},
        {BASE "[filter]\nrules = etc/rules\n", "t.ini:10: [filter] rules: \"etc/rules\" is not an absolute path"},
        {BASE "[filter]\nrules = /etc/r\nconntrack_max = 8\n",
         "t.ini:11: [filter] conntrack_max: 8 is out of range 16..67108864"},
        {BASE "[filter]\nrules = /etc/r\n[filter]\n", "t.ini:11: [filter] duplicate section, first on line 9"},
        {"[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\noffloads = csum\n"
         "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n[filter]\nrules = /etc/r\n",
         "t.ini:5: [port a] offloads: with [filter] (line 10), none: the filter takes whole frames with their "
         "checksums"},
        {BASE "[shaper b]\nrate = 100mbit\n[class b x]\nrate = 10mbit\nmatch = mark 1\n"
              "[class b rest]\nrate = 10mbit\ndefault = yes\n",
         "t.ini:13: [class b x] match: mark: only a [filter] rule's `meta mark set` gives a packet one, and there "
         "is no [filter]"},
        {BASE "[shaper b]\nrate = 100mbit\n[class b x]\nrate = 10mbit\nmatch = mark 0\n"
              "[class b rest]\nrate = 10mbit\ndefault = yes\n[filter]\nrules = /etc/r\n",
         "t.ini:13: [class b x] match: \"mark 0\": expected a mark 1..4294967295 (a [filter] rule's meta mark set)"},
        {BASE "[filter]\nrules = /etc/r\nports = b, dmz\n", "t.ini:11: [filter] ports: no port \"dmz\""},
        {BASE "[filter]\nrules = /etc/r\nports = b b\n", "t.ini:11: [filter] ports: port b named twice"},
        {BASE "[filter]\nrules = /etc/r\nports = ,\n",
         "t.ini:11: [filter] ports: expected port names, such as \"wan\" or \"wan, dmz\""},
        {BASE "[service filter]\nhang_ms = 500\n",
         "t.ini:9: [service filter] \"filter\" is not a service: expected router, driver-PORT, "
         "driver-PORT.QUEUE, shaper-PORT or (with [router] control_netns) cp-PORT"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sup_manifest m;
        struct sup_manifest_err err;
        int rc = sup_manifest_load_string("t.ini", cases[i].text, &m, &err);
        if (rc == 0 || strcmp(err.msg, cases[i].error) != 0)
            fail_msg("case %zu: rc %d, got\n  %s\nexpected\n  %s", i, rc, rc ? err.msg : "(ok)", cases[i].error);
        sup_manifest_free(&m);
    }
}

static void test_manifest_good(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = sup_manifest_load_string("t.ini", BASE "[filter]\nrules = /etc/ringrouter/edge.nft\n"
                                                    "[service filter]\nhang_ms = 700\n", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.filter.conntrack_max, 65536);
    assert_int_equal(m.filter.port_mask, 3); /* every port */
    assert_string_equal(m.filter.rules, "/etc/ringrouter/edge.nft");
    assert_int_equal(m.nservices, 4);
    const struct sup_service *f = &m.services[3];
    assert_string_equal(f->name, "filter");
    assert_int_equal(f->kind, SUP_SVC_FILTER);
    assert_int_equal(f->hang_ms, 700);
    /* offloads left to their default: none, with a filter */
    assert_int_equal(m.ports[0].offloads, 0);
    assert_int_equal(m.ports[1].offloads, 0);
    sup_manifest_free(&m);
    rc = sup_manifest_load_string("t.ini", BASE "[filter]\nrules = /etc/r\nports = b\n", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.filter.port_mask, 2);
    sup_manifest_free(&m);
    /* A shaper beside the filter, its class on the filter's mark; a
     * control namespace beside it too. */
    rc = sup_manifest_load_string("t.ini", BASE "[shaper b]\nrate = 100mbit\n[class b x]\nrate = 10mbit\n"
                                                "match = mark 7, proto tcp\n[class b rest]\nrate = 10mbit\n"
                                                "default = yes\n[filter]\nrules = /etc/r\n", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.nclasses, 2);
    assert_int_equal(m.classes[0].match.fields, SHP_MATCH_MARK | SHP_MATCH_PROTO);
    assert_int_equal(m.classes[0].match.mark, 7);
    assert_int_equal(m.nservices, 5);
    sup_manifest_free(&m);
    rc = sup_manifest_load_string("t.ini", BASE, &m, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(m.nservices, 3);
    assert_int_not_equal(m.ports[0].offloads, 0);
    sup_manifest_free(&m);
}

static void test_head_check(void **state)
{
    (void)state;
    const uint32_t n = 1024;
    size_t size = flt_ct_region_size(n);
    uint8_t *r = calloc(1, size);
    assert_non_null(r);
    assert_null(sup_filter_head_check(r, size, n, size)); /* never formatted */
    assert_int_equal(flt_ct_format(r, size, n, 7), 0);
    assert_null(sup_filter_head_check(r, size, n, size));
    static const struct {
        size_t off;
        uint32_t val;
        const char *why;
    } bad[] = {
        {offsetof(struct tbl_flt_ct_head, magic), 0xdeadbeef, "bad magic"},
        {offsetof(struct tbl_flt_ct_head, version), 9, "another version or header size"},
        {offsetof(struct tbl_flt_ct_head, hdr_size), 128, "another version or header size"},
        {offsetof(struct tbl_flt_ct_head, nentries), 4096, "entries or buckets other than made"},
        {offsetof(struct tbl_flt_ct_head, nbuckets), 512, "entries or buckets other than made"},
        {offsetof(struct tbl_flt_ct_head, total_size), 1u << 30, "a size other than made"},
        {offsetof(struct tbl_flt_ct_head, entry_size), 8, "an entry size that does not fill the region"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint8_t save[64];
        memcpy(save, r, sizeof(save));
        memcpy(r + bad[i].off, &bad[i].val, 4);
        const char *why = sup_filter_head_check(r, size, n, size);
        assert_non_null(why);
        assert_string_equal(why, bad[i].why);
        memcpy(r, save, sizeof(save));
    }
    assert_string_equal(sup_filter_head_check(r, 16, n, size), "the region is smaller than its header");
    assert_string_equal(sup_filter_head_check(r, size, n / 2, size), "entries or buckets other than made");
    free(r);
}

static uint8_t buf[2048];

static void test_peek(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, "chain postrouting { oif \"wan\" masquerade }\n"), 0);
    struct tpkt tp = {.fam = 4, .proto = 17, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 5353, .dport = 53,
                      .paylen = 20};
    uint32_t len = t_build(buf, &tp);
    assert_int_equal(t_forward(&x, buf, &len, 0, 1, 1000, NULL), FLT_ACCEPT);
    unsigned used = 0;
    for (uint32_t i = 0; i < 64; i++) {
        struct flt_ct_info ci;
        int ret = flt_ct_peek(x.region, x.size, i, &ci);
        assert_true(ret == 0 || ret == -ENOENT);
        if (ret)
            continue;
        used++;
        assert_true(ci.confirmed);
        assert_int_equal(ci.orig.sport, 5353);
        assert_int_equal(ci.reply.dst[12], 203); /* masqueraded to wan's 203.0.113.1 */
    }
    assert_int_equal(used, 1);
    struct flt_ct_info ci;
    assert_int_equal(flt_ct_peek(x.region, x.size, 64, &ci), -ENOENT);
    assert_int_equal(flt_ct_peek(x.region, x.size - 64, 0, &ci), -EBADMSG); /* smaller than its header says */
    ((uint32_t *)x.region)[4] = 1u << 20; /* nentries: the check sum no longer holds */
    assert_int_equal(flt_ct_peek(x.region, x.size, 0, &ci), -EBADMSG);
    t_fix_fini(&x);
}

static void test_rules_line(void **state)
{
    (void)state;
    struct flt_port ports[2];
    t_ports(ports);
    const char *text = "# edge\n"
                       "chain forward {\n"
                       "    type filter hook forward priority 0; policy drop;\n"
                       "    ct state established,related accept\n"
                       "\n"
                       "    iif \"lan\" accept\n"
                       "}\n";
    char err[256];
    struct flt_rules *r = flt_rules_compile(text, strlen(text), ports, 2, err, sizeof(err));
    if (!r)
        fail_msg("%s", err);
    assert_int_equal(flt_rules_count(r, FLT_FWD), 2);
    assert_int_equal(flt_rules_line(r, FLT_FWD, 0), 4);
    assert_int_equal(flt_rules_line(r, FLT_FWD, 1), 6);
    assert_int_equal(flt_rules_line(r, FLT_FWD, 2), 0);
    assert_int_equal(flt_rules_line(r, FLT_PRE, 0), 0);
    flt_rules_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_bad), cmocka_unit_test(test_manifest_good), cmocka_unit_test(test_head_check),
        cmocka_unit_test(test_peek),         cmocka_unit_test(test_rules_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
