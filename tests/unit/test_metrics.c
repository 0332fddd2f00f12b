/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_metrics.c: `ringrouter metrics` without a supervisor
 * (supervisor/metrics.c, metrics_render.c, metrics_json.c): canned answers
 * of status, stats, link and stats --stages in, the exposition out, and
 * then, as promtool would: every family has one HELP and one TYPE before
 * its samples, which stay together; every name and label name is valid;
 * counters end in _total; label values are escaped and UTF-8; no series
 * comes twice. Also the rules on their own: drop reasons, gauges, label
 * escaping, and the JSON reader's refusals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/metrics.h"

static void t_escape(void **state)
{
    (void)state;
    char buf[128];
    mx_escape(buf, sizeof(buf), "a\"b\\c\nd");
    assert_string_equal(buf, "a\\\"b\\\\c\\nd");
    mx_escape(buf, sizeof(buf), "caf\xc3\xa9 \xff\xc0\x80 \xed\xa0\x80!");
    assert_string_equal(buf, "caf\xc3\xa9 \?\?\? \?\?\?!"); /* a stray byte, an overlong NUL, a surrogate */
    char small[8];
    mx_escape(small, sizeof(small), "\"\"\"\"\"\"");
    assert_true(strlen(small) < sizeof(small));
    char lb[256];
    assert_string_equal(
        mx_labels(lb, sizeof(lb), "service", "router", "port", NULL, "class", "", "reason", "t\"l", NULL),
        "service=\"router\",reason=\"t\\\"l\"");
    assert_string_equal(mx_labels(lb, sizeof(lb), NULL), "");
}

static void t_drop_reason(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"drop_ttl_exceeded", "ttl_exceeded"}, {"drop6_no_route", "ipv6_no_route"},
        {"rx_drop_short", "rx_short"},         {"full_drops", "full"},
        {"xsk_rx_dropped", "xsk_rx"},          {"drops", "all"},
        {"overflow_drops", "overflow"},        {"drop6", "ipv6"},
        {"gen_drop_nobufs", "gen_nobufs"},
    };
    char r[64];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_true(mx_drop_reason(cases[i][0], r, sizeof(r)));
        assert_string_equal(r, cases[i][1]);
    }
    static const char *const not [] = {"forwarded", "dropout", "rx_pkts", "airdrop_x", ""};
    for (size_t i = 0; i < sizeof(not ) / sizeof(not [0]); i++)
        assert_false(mx_drop_reason(not [i], r, sizeof(r)));
    static const char *const gauges[] = {
        "pending_arp", "tx_held", "tx_held_max", "backlog",       "backlog_bytes",
        "rate",        "bps",     "rx_inflight", "backlog_depth", "wakeup_syscalls_per_kpkt"};
    for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
        assert_true(mx_is_gauge(gauges[i]));
    static const char *const counters[] = {"rx_pkts", "loops", "forwarded", "icmp_rate_limited", "held_x"};
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
        assert_false(mx_is_gauge(counters[i]));
}

static void t_json(void **state)
{
    (void)state;
    struct mx_jv *v;
    char err[128];
    const char *ok = " {\"a\": [1, -2.5e3, true, false, null], \"s\": \"\\u00e9\\ud83d\\ude00\\n\\\"\", "
                     "\"big\": 18446744073709551615, \"o\": {}} ";
    assert_int_equal(mx_json_parse(ok, strlen(ok), &v, err, sizeof(err)), 0);
    const struct mx_jv *a = mx_jget(v, "a");
    assert_non_null(a);
    assert_int_equal(a->n, 5);
    assert_true(a->kid[1].num == -2500);
    assert_true(a->kid[2].t == MX_JBOOL && a->kid[2].b && !a->kid[3].b);
    assert_string_equal(mx_jstr(v, "s"), "\xc3\xa9\xf0\x9f\x98\x80\n\"");
    assert_string_equal(mx_jget(v, "big")->s, "18446744073709551615"); /* the text, exact */
    assert_null(mx_jget(v, "nope"));
    mx_json_free(v);
    char deep[100];
    memset(deep, '[', 40);
    memset(deep + 40, ']', 40);
    deep[80] = '\0';
    static const char *const bad[] = {"{\"a\":1} x", "01", "[1,]", "{\"a\" 1}", "\"\\x\"", "\"ab",
                                      "-",           "1.", "[",    "tru",       "\"a\nb\""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(mx_json_parse(bad[i], strlen(bad[i]), &v, err, sizeof(err)), -1);
        assert_null(v);
        assert_non_null(strstr(err, "JSON: "));
    }
    assert_int_equal(mx_json_parse(deep, strlen(deep), &v, err, sizeof(err)), -1);
}

static const char status_json[] =
    "{\"timestamp\":1.5,\"supervisor\":{\"version\":\"1.2 \\\"x\\\"\",\"pid\":7,\"uptime_ms\":2500,"
    "\"started_at\":100,\"last_reload\":{\"result\":\"partial\",\"at\":200}},"
    "\"services\":[{\"name\":\"router\",\"state\":\"up\",\"pid\":0,\"restarts\":2,\"planned_restarts\":1,"
    "\"uptime_ms\":1000,\"ready_ms\":1.5,\"binary\":\"/x/rr-router\",\"build_id\":\"ab\",\"started_at\":99,"
    "\"restarts_by_cause\":{\"crash\":1,\"hang\":1,\"upgrade\":0,\"restart\":1},\"cpu_throttled\":-1},"
    "{\"name\":\"driver-a\",\"state\":\"backoff\",\"pid\":0,\"binary\":\"\"}]}";
static const char stats_json[] =
    "{\"timestamp\":1.5,\"services\":[{\"name\":\"router\",\"loops\":10,\"sleeps\":4,\"wakes_sent\":3,"
    "\"buffers_held\":12,\"wake_missed\":0,\"counters\":{\"forwarded\":50,\"drop_ttl_exceeded\":3,"
    "\"ttl_exceeded_drops\":4,\"drop6_no_route\":1,\"a.rx_pkts\":9,\"pending_arp\":2,\"we\\\"ird\\\\na\\nme\":5,"
    "\"x.y.z\":1}},"
    "{\"name\":\"shaper-a\",\"loops\":1,\"counters\":{\"class.web.drops\":6,\"class.web.bps\":800,\"overflow_drops\":2}"
    "}],"
    "\"rings\":[{\"name\":\"rx-a\",\"from\":\"driver-a\",\"to\":\"router\",\"occupancy\":5,\"size\":1024,"
    "\"enq_handles\":70,\"full_drops\":1,\"wake_sent\":2,\"sleeps\":3,\"drop_bad_handle\":0,\"prod_lie\":0}],"
    "\"xdp\":[{\"port\":\"a\",\"redirected\":4,\"passed_host\":1}],"
    "\"pool\":{\"buffers\":4096,\"frame_size_bytes\":2048,\"free\":4000,\"kernel\":0,\"alloc_fail\":0,"
    "\"free_bad\":0,\"mag_bad\":0,\"zones\":1},\"shm_corrupt\":0}";
static const char link_json[] =
    "{\"timestamp\":1.5,\"links\":[{\"name\":\"a\",\"ifname\":\"rrt-a\",\"netns\":null,\"driver\":\"tap\","
    "\"queues\":1,\"mac\":\"02:00:00:00:00:01\",\"mtu_bytes\":1500,\"addresses\":[\"10.0.0.1/24\"],\"state\":\"up\","
    "\"services\":[{\"name\":\"driver-a\",\"state\":\"up\"}],\"rx\":{\"packets\":10,\"bytes\":1000,\"drops\":0},"
    "\"tx\":{\"packets\":11,\"bytes\":1100,\"drops\":2},\"router\":{\"rx_packets\":10}}]}";
static const char stages_json[] =
    "{\"timestamp\":1.5,\"stages\":true,\"tsc_hz\":2000000000,\"forwarded\":5,\"services\":[{\"name\":\"router\","
    "\"stages\":[{\"name\":\"rx\",\"calls\":2,\"packets\":5,\"cycles\":1000,\"pkts_per_call\":2.50,"
    "\"cycles_per_pkt\":null}],\"cycles\":1000}]}";

static char *render(void)
{
    const char *in[MX_NREQ] = {status_json, stats_json, link_json, stages_json};
    struct mx_snap sn;
    char err[128];
    for (int i = 0; i < MX_NREQ; i++)
        assert_int_equal(mx_json_parse(in[i], strlen(in[i]), &sn.doc[i], err, sizeof(err)), 0);
    struct mx_out *o = mx_out_new();
    assert_non_null(o);
    mx_render(o, &sn);
    mx_snap_free(&sn);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    mx_out_write(o, f);
    fclose(f);
    return text;
}

static bool name_ok(const char *s, size_t n, bool metric)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':');
        if (!alpha && !(i && c >= '0' && c <= '9'))
            return false;
    }
    return n > 0;
}

/* One sample line: its name's length, labels checked (names valid, values
 * closed and escaped); false if malformed. */
static bool sample_ok(const char *line, size_t *namelen)
{
    size_t n = strcspn(line, "{ ");
    *namelen = n;
    if (!name_ok(line, n, true))
        return false;
    const char *p = line + n;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            size_t ln = strcspn(p, "=");
            if (!name_ok(p, ln, false) || p[ln] != '=' || p[ln + 1] != '"')
                return false;
            p += ln + 2;
            while (*p && *p != '"') {
                if (*p == '\\' && !strchr("\\\"n", p[1]))
                    return false;
                if (*p == '\n')
                    return false;
                p += *p == '\\' ? 2 : 1;
            }
            if (*p != '"')
                return false;
            p++;
            if (*p == ',')
                p++;
            else if (*p != '}')
                return false;
        }
        p++;
    }
    if (*p != ' ')
        return false;
    char *end;
    strtod(p + 1, &end);
    return end != p + 1 && *end == '\0';
}

static void t_render_format(void **state)
{
    (void)state;
    char *text = render();
    char *copy = strdup(text);
    char seen_type[200][96], series[400][400];
    int ntype = 0, nseries = 0;
    char help_of[96] = "", type_of[96] = "";
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (strncmp(l, "# HELP ", 7) == 0) {
            snprintf(help_of, sizeof(help_of), "%.*s", (int)strcspn(l + 7, " "), l + 7);
            continue;
        }
        if (strncmp(l, "# TYPE ", 7) == 0) {
            char name[96], type[32];
            assert_int_equal(sscanf(l + 7, "%95s %31s", name, type), 2);
            assert_string_equal(name, help_of); /* HELP, then TYPE, of one family */
            assert_true(!strcmp(type, "counter") || !strcmp(type, "gauge"));
            if (!strcmp(type, "counter"))
                assert_non_null(strstr(name, "_total"));
            for (int i = 0; i < ntype; i++)
                assert_string_not_equal(seen_type[i], name); /* once: its samples stay together */
            snprintf(seen_type[ntype++], sizeof(seen_type[0]), "%s", name);
            snprintf(type_of, sizeof(type_of), "%s", name);
            continue;
        }
        size_t n;
        if (!sample_ok(l, &n))
            fail_msg("malformed sample: %s", l);
        assert_true(n == strlen(type_of) && strncmp(l, type_of, n) == 0); /* under its own TYPE */
        char key[400];
        snprintf(key, sizeof(key), "%.*s", (int)(l[n] == '{' ? (size_t)(strchr(l, '}') - l + 1) : n), l);
        for (int i = 0; i < nseries; i++)
            if (!strcmp(series[i], key))
                fail_msg("series twice: %s", key);
        assert_true(nseries < 400);
        snprintf(series[nseries++], sizeof(series[0]), "%s", key);
    }
    assert_true(ntype > 30);
    free(copy);
    free(text);
}

static void t_render_values(void **state)
{
    (void)state;
    char *text = render();
    static const char *const want[] = {
        "ringrouter_supervisor_up 1",
        "ringrouter_supervisor_info{version=\"1.2 \\\"x\\\"\"} 1",
        "ringrouter_supervisor_uptime_seconds 2.5",
        "ringrouter_reload_last_successful 0",
        "ringrouter_reload_last_result{result=\"partial\"} 1",
        "ringrouter_reload_last_timestamp_seconds 200",
        "ringrouter_service_up{service=\"router\"} 1",
        "ringrouter_service_up{service=\"driver-a\"} 0",
        "ringrouter_service_state{service=\"driver-a\",state=\"backoff\"} 1",
        "ringrouter_service_restarts_total{service=\"router\",cause=\"crash\"} 1",
        "ringrouter_service_restarts_total{service=\"router\",cause=\"restart\"} 1",
        "ringrouter_service_info{service=\"router\",binary=\"/x/rr-router\",build_id=\"ab\"} 1",
        "ringrouter_service_loops_total{service=\"router\"} 10",
        "ringrouter_service_buffers_held{service=\"router\"} 12",
        "ringrouter_service_events_total{service=\"router\",counter=\"forwarded\"} 50",
        "ringrouter_service_events_total{service=\"router\",counter=\"rx_pkts\",port=\"a\"} 9",
        "ringrouter_service_events_total{service=\"router\",counter=\"z\",scope=\"x.y\"} 1",
        "ringrouter_service_events_total{service=\"router\",counter=\"we\\\"ird\\\\na\\nme\"} 5",
        "ringrouter_service_level{service=\"router\",counter=\"pending_arp\"} 2",
        "ringrouter_service_level{service=\"shaper-a\",counter=\"bps\",class=\"web\"} 800",
        "ringrouter_drops_total{service=\"router\",reason=\"ttl_exceeded\"} 7", /* drop_ttl_exceeded +
                                                                                   ttl_exceeded_drops */
        "ringrouter_drops_total{service=\"router\",reason=\"ipv6_no_route\"} 1",
        "ringrouter_drops_total{service=\"shaper-a\",reason=\"all\",class=\"web\"} 6",
        "ringrouter_drops_total{service=\"shaper-a\",reason=\"overflow\"} 2",
        ("ringrouter_port_info{port=\"a\",ifname=\"rrt-a\",driver=\"tap\",mac=\"02:00:00:00:00:01\","
         "address=\"10.0.0.1/24\"} 1"),
        "ringrouter_port_up{port=\"a\"} 1",
        "ringrouter_port_rx_packets_total{port=\"a\"} 10",
        "ringrouter_port_tx_bytes_total{port=\"a\"} 1100",
        "ringrouter_port_tx_drops_total{port=\"a\"} 2",
        "ringrouter_port_mtu_bytes{port=\"a\"} 1500",
        "ringrouter_ring_occupancy{ring=\"rx-a\"} 5",
        "ringrouter_ring_size{ring=\"rx-a\"} 1024",
        "ringrouter_ring_info{ring=\"rx-a\",from=\"driver-a\",to=\"router\"} 1",
        "ringrouter_ring_drops_total{ring=\"rx-a\",reason=\"full\"} 1",
        "ringrouter_ring_drops_total{ring=\"rx-a\",reason=\"bad_handle\"} 0",
        "ringrouter_ring_events_total{ring=\"rx-a\",counter=\"prod_lie\"} 0",
        "ringrouter_ring_handles_total{ring=\"rx-a\"} 70",
        "ringrouter_xdp_frames_total{port=\"a\",verdict=\"redirected\"} 4",
        "ringrouter_pool_free_buffers 4000",
        "ringrouter_shm_corrupt_words_total 0",
        "ringrouter_stage_cycles_total{service=\"router\",stage=\"rx\"} 1000",
        "ringrouter_stage_packets_total{service=\"router\",stage=\"rx\"} 5",
        "ringrouter_tsc_hertz 2000000000",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char line[512];
        snprintf(line, sizeof(line), "\n%s\n", want[i]);
        if (!strstr(text, line))
            fail_msg("missing: %s\nin:\n%s", want[i], text);
    }
    /* No CPU for a pid of 0, no throttling without a limit, no drop in the generic families. */
    assert_null(strstr(text, "ringrouter_service_cpu_seconds_total{"));
    assert_null(strstr(text, "cpu_throttled"));
    assert_null(strstr(text, "counter=\"drop"));
    free(text);
}

/* No status answer (no supervisor): the exposition says so, and nothing else. */
static void t_render_down(void **state)
{
    (void)state;
    struct mx_snap sn = {{0}};
    struct mx_out *o = mx_out_new();
    mx_render(o, &sn);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    mx_out_write(o, f);
    fclose(f);
    assert_string_equal(text, "# HELP ringrouter_supervisor_up 1 if the supervisor answered this scrape's status "
                              "request, else 0\n# TYPE ringrouter_supervisor_up gauge\nringrouter_supervisor_up 0\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_escape),        cmocka_unit_test(t_drop_reason),   cmocka_unit_test(t_json),
        cmocka_unit_test(t_render_format), cmocka_unit_test(t_render_values), cmocka_unit_test(t_render_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
