/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_shp_ctl.c: the supervisor's half of the shaper
 * (supervisor/shaper_ctl.c): a manifest's [shaper PORT] and [class PORT NAME]
 * become the struct shp_cfg the shaper reads from its config blob, which the
 * library accepts and classifies by; other services get no extra bytes.
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
#include <unistd.h>

#include "services/shaper/shp.h"
#include "supervisor/shaper_ctl.h"

/* What shaper_ctl.c uses from the rest of the supervisor (beyond log.c), stubbed. */
const char *sup_state_name(enum sup_state st)
{
    (void)st;
    return "up";
}

#define BASE                                                                                    \
    "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"                            \
    "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n"

static struct sup *t_load(const char *text)
{
    struct sup *s = calloc(1, sizeof(*s));
    struct sup_manifest_err err;
    assert_non_null(s);
    if (sup_manifest_load_string("t.ini", text, &s->m, &err) != 0)
        fail_msg("%s", err.msg);
    return s;
}

static void t_free(struct sup *s)
{
    sup_manifest_free(&s->m);
    free(s);
}

static void test_classes(void **state)
{
    (void)state;
    struct sup *s = t_load(BASE "[shaper b]\nrate = 100mbit\nburst = 64k\noverhead = 20\n"
                                "[class b voice]\nrate = 10mbit\nceil = 20mbit\nprio = 1\nmatch = dscp 46\n"
                                "[class b web]\nrate = 50mbit\nmatch = proto tcp, dport 80-443, dst 10.9.0.0/16\n"
                                "[class b bulk]\nrate = 20mbit\ndefault = yes\n");
    struct sup_svc v = {.kind = IPC_SVC_SHAPER, .port = 1};
    struct shp_cfg c;
    sup_shaper_params(s, &v, &c);
    assert_int_equal(c.rate, 100000000);
    assert_int_equal(c.burst, 65536);
    assert_int_equal(c.overhead, 20);
    assert_int_equal(c.nclasses, 3);
    assert_int_equal(c.default_class, 2);
    assert_string_equal(c.classes[0].name, "voice");
    assert_int_equal(c.classes[0].rate, 10000000);
    assert_int_equal(c.classes[0].ceil, 20000000);
    assert_int_equal(c.classes[0].prio, 1);
    assert_int_equal(c.classes[0].match.fields, SHP_MATCH_DSCP);
    assert_int_equal(c.classes[0].match.dscp, 46);
    assert_string_equal(c.classes[1].name, "web");
    assert_int_equal(c.classes[1].ceil, 100000000); /* default: the port's rate */
    assert_int_equal(c.classes[1].match.fields, SHP_MATCH_PROTO | SHP_MATCH_DPORT | SHP_MATCH_DST);
    assert_int_equal(c.classes[1].match.proto, 6);
    assert_int_equal(c.classes[1].match.dport_lo, 80);
    assert_int_equal(c.classes[1].match.dport_hi, 443);
    assert_int_equal(c.classes[1].match.dst, 0x0a090000u);
    assert_int_equal(c.classes[1].match.dst_len, 16);
    assert_string_equal(c.classes[2].name, "bulk");
    assert_int_equal(c.classes[2].match.fields, 0);

    /* The library takes it and classifies by it. */
    struct shp *sh = calloc(1, sizeof(*sh));
    struct ipc_err err = {{0}};
    assert_non_null(sh);
    if (shp_init(sh, NULL, &c, 0, &err) != 0)
        fail_msg("%s", err.msg);
    struct shp_pkt voice = {.ipv4 = true, .dscp = 46, .proto = 17};
    struct shp_pkt web = {.ipv4 = true, .proto = 6, .dport = 443, .dst = 0x0a090102u};
    struct shp_pkt web_elsewhere = {.ipv4 = true, .proto = 6, .dport = 443, .dst = 0x0a0a0102u};
    assert_int_equal(shp_classify(sh, &voice), 0);
    assert_int_equal(shp_classify(sh, &web), 1);
    assert_int_equal(shp_classify(sh, &web_elsewhere), 2);
    assert_int_equal(shp_class_find(sh, "web"), 1);
    free(sh);

    /* A service with no port gets no classes, not another port's. */
    struct sup_svc noport = {.kind = IPC_SVC_SHAPER, .port = -1};
    sup_shaper_params(s, &noport, &c);
    assert_int_equal(c.nclasses, 0);
    assert_int_equal(c.rate, 0);
    t_free(s);
}

static void test_no_classes(void **state)
{
    (void)state;
    struct sup *s = t_load(BASE "[shaper a]\nrate = 50mbit\n");
    struct sup_svc v = {.kind = IPC_SVC_SHAPER, .port = 0};
    struct shp_cfg c;
    sup_shaper_params(s, &v, &c);
    assert_int_equal(c.rate, 50000000);
    assert_int_equal(c.overhead, 24);
    assert_true(c.burst >= 2 * 1514);
    assert_int_equal(c.nclasses, 1);
    assert_int_equal(c.default_class, 0);
    assert_string_equal(c.classes[0].name, "default");
    assert_int_equal(c.classes[0].rate, 50000000);
    assert_int_equal(c.classes[0].ceil, 50000000);
    struct sup_svc vb = {.kind = IPC_SVC_SHAPER, .port = 1}; /* b has no [shaper b] */
    sup_shaper_params(s, &vb, &c);
    assert_int_equal(c.nclasses, 0);
    t_free(s);
}

/* A port takes at most SHP_MAX_CLASSES classes: the manifest refuses the
 * one past it (up once kept the first 16 and dropped the rest quietly). */
static void test_too_many_classes(void **state)
{
    (void)state;
    char text[8192];
    int off = snprintf(text, sizeof(text), BASE "[shaper b]\nrate = 1gbit\n");
    unsigned line = 10; /* [shaper b] is line 9, rate line 10 */
    for (unsigned i = 0; i < SHP_MAX_CLASSES; i++) {
        off += snprintf(text + off, sizeof(text) - (size_t)off, "[class b c%u]\nrate = 1mbit\nmatch = dscp %u\n", i, i);
        line += 3;
    }
    snprintf(text + off, sizeof(text) - (size_t)off, "[class b last]\nrate = 1mbit\ndefault = yes\n");
    struct sup_manifest m;
    struct sup_manifest_err err;
    assert_int_equal(sup_manifest_load_string("t.ini", text, &m, &err), -EINVAL);
    char want[200];
    snprintf(want, sizeof(want),
             "t.ini:%u: [class b last] port b has more than %u classes; its shaper takes at most %u, the default "
             "included",
             line + 1, SHP_MAX_CLASSES, SHP_MAX_CLASSES);
    assert_string_equal(err.msg, want);

    /* Exactly SHP_MAX_CLASSES, the default among them, are taken whole. */
    off = snprintf(text, sizeof(text), BASE "[shaper b]\nrate = 1gbit\n");
    for (unsigned i = 0; i < SHP_MAX_CLASSES - 1; i++)
        off += snprintf(text + off, sizeof(text) - (size_t)off, "[class b c%u]\nrate = 1mbit\nmatch = dscp %u\n", i, i);
    snprintf(text + off, sizeof(text) - (size_t)off, "[class b last]\nrate = 1mbit\ndefault = yes\n");
    struct sup *s = t_load(text);
    struct sup_svc v = {.kind = IPC_SVC_SHAPER, .port = 1};
    struct shp_cfg c;
    sup_shaper_params(s, &v, &c);
    assert_int_equal(c.nclasses, SHP_MAX_CLASSES);
    assert_string_equal(c.classes[c.default_class].name, "last");
    assert_string_equal(c.classes[SHP_MAX_CLASSES - 2].name, "c14");
    t_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_no_classes),
        cmocka_unit_test(test_too_many_classes),
    };
    return cmocka_run_group_tests_name("shaper_ctl", tests, NULL, NULL);
}
