/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_ipopt.c: IPv4 options through the forwarding loop
 * (RFC 791 §3.1, RFC 1812 §4.2.2.1, §5.3.13; services/router/ipopt.c):
 * Record Route and Timestamp (flags 0, 1, 3, full, overflow) filled with the
 * egress port's address and a valid header checksum; malformed options
 * answered with Parameter Problem pointing at the octet in error (the header
 * quoted unchanged) and counted; source routes refused, exhausted or not;
 * other options forwarded as they came; a packet with options fragmented
 * with only the copied ones after the first piece; and a packet whose
 * source is one of the router's addresses dropped (Linux's martian rule).
 * Counters are found by name, so that the test builds and fails on a router
 * without them. Every test ends with the pool census: no buffer leaks.
 */
#include "test_rt_common.h"

#include <time.h>

#define T_PARAMPROB 12u
#define T_OUT_IP T_IP(10, 1, 0, 1) /* port 1's address: the egress towards 20/8 */

static const uint8_t t_nh_mac[6] = {0x02, 0xaa, 0, 0, 0, 1};

/* The counter called @name; ~0 when the router has none (so that no "+ 1" holds). */
static uint64_t t_count(const struct t_rt *t, const char *name)
{
    for (unsigned i = 0; i < RT_CTR_MAX; i++)
        if (strcmp(rt_ctr_names[i], name) == 0)
            return t->ctr.c[i];
    return ~0ull;
}

static uint64_t t_drops(const struct t_rt *t)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < RT_CTR_MAX; i++)
        if (strncmp(rt_ctr_names[i], "drop", 4) == 0)
            s += t->ctr.c[i];
    return s;
}

/* 20/8 via 10.1.0.2 on port 1 (resolved); 10.0.0.5 on port 0 resolved too. */
static void t_routes(struct t_rt *t)
{
    struct fib_nh via = {.gw = T_IP(10, 1, 0, 2), .port = 1};
    struct fib_nh conn0 = {.gw = 0, .port = 0};
    assert_int_equal(fib_add(&t->fibw, T_IP(20, 0, 0, 0), 8, &via), 0);
    assert_int_equal(fib_add(&t->fibw, T_IP(10, 0, 0, 0), 24, &conn0), 0);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 1, 0, 2), t_nh_mac, 1), 0);
    assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, 0, 0, 5), t_peer_mac[0], 0), 0);
}

static int t_setup(void **state)
{
    t_rt_setup(state);
    t_routes(*state);
    return 0;
}

/* A UDP-ish packet with options @opts (a multiple of 4 bytes) on port 0, 10.0.0.5 -> @dst. */
static ipc_buf t_opt_frame(struct t_rt *t, uint32_t src, uint32_t dst, const uint8_t *opts, unsigned nopts,
                           uint32_t payload)
{
    assert_int_equal(nopts % 4, 0);
    ipc_buf b = t_frame(t, 0, src, dst, 17, 64, nopts + payload, 0);
    uint8_t *ip = t_ip(t, b);
    ip[0] = (uint8_t)(0x40 | (20 + nopts) / 4);
    memcpy(ip + 20, opts, nopts);
    t_ip_fix_csum(ip);
    return b;
}

/* Forward @b and return the one packet that left by port 1 (the test frees it with t_tx_free). */
static uint8_t *t_forward1(struct t_rt *t, ipc_buf b)
{
    uint64_t fwd = t->ctr.c[RT_CTR_FORWARDED];
    t_input(t, &b, 1, 1000);
    if (t->tx.n != 1 || t->ctr.c[RT_CTR_FORWARDED] != fwd + 1)
        fail_msg("not forwarded: %u out, drops %llu", t->tx.n, (unsigned long long)t_drops(t));
    const struct ipc_meta *m = ipc_pool_meta(&t->pool, t->tx.bufs[0]);
    assert_int_equal(m->out_port, 1);
    uint8_t *ip = t_ip(t, t->tx.bufs[0]);
    assert_int_equal(pkt_csum(ip, (ip[0] & 15u) * 4), 0); /* the header checksum holds */
    assert_int_equal(ip[PKT_IP_TTL], 63);
    return ip;
}

/* Forward a packet 10.0.0.5 -> 20.1.2.3 with options @opts; its header as it left. */
static uint8_t *t_fwd_opts(struct t_rt *t, const uint8_t *opts, unsigned nopts)
{
    return t_forward1(t, t_opt_frame(t, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), opts, nopts, 30));
}

/* ms since midnight UT now, the unit of RFC 791's timestamps. */
static uint32_t t_ms_of_day(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint32_t)(ts.tv_sec % 86400) * 1000u + (uint32_t)(ts.tv_nsec / 1000000);
}

static void t_check_time(uint32_t stamp, uint32_t before, uint32_t after)
{
    if (before <= after && (stamp < before || stamp > after))
        fail_msg("timestamp %u not within [%u, %u]", stamp, before, after);
}

static void test_rt_ipopt_record_route(void **state)
{
    struct t_rt *t = *state;
    /* Room for two addresses (length 11), pointer at the first; NOP to align. */
    uint8_t rr[12] = {7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    uint8_t *ip = t_fwd_opts(t, rr, 12);
    assert_int_equal(ip[22], 8);
    assert_int_equal(pkt_get32(ip + 23), T_OUT_IP);
    assert_int_equal(pkt_get32(ip + 27), 0);
    assert_int_equal(ip[31], 1);
    t_tx_free(t);
    /* Full (the pointer past the length): forwarded as it came. */
    uint8_t full[12] = {7, 11, 12, 9, 9, 9, 9, 8, 8, 8, 8, 1};
    ip = t_fwd_opts(t, full, 12);
    assert_memory_equal(ip + 20, full, 12);
    t_tx_free(t);
    /* An echo request to the router records the port its reply leaves by (RFC 1122 §3.2.2.6). */
    uint8_t rr2[8] = {7, 7, 4, 0, 0, 0, 0, 0};
    ipc_buf b = t_opt_frame(t, T_IP(10, 0, 0, 5), T_IP(10, 2, 0, 1), rr2, 8, 8);
    ip = t_ip(t, b);
    ip[PKT_IP_PROTO] = 1;
    t_ip_fix_csum(ip);
    memset(ip + 28, 0, 8);
    ip[28] = 8;
    pkt_put16(ip + 30, pkt_csum(ip + 28, 8));
    t_input(t, &b, 1, 1000);
    assert_int_equal(t->tx.n, 1);
    assert_int_equal(t->ctr.c[RT_CTR_LOCAL_ECHO], 1);
    ip = t_ip(t, t->tx.bufs[0]);
    assert_int_equal(ip[28], 0); /* echo reply */
    assert_int_equal(pkt_get32(ip + 23), T_IP(10, 0, 0, 1));
    assert_int_equal(pkt_csum(ip, 28), 0);
    t_tx_free(t);
    t_no_leak(t);
}

static void test_rt_ipopt_timestamp(void **state)
{
    struct t_rt *t = *state;
    /* Flag 0: timestamps only, room for two. */
    uint8_t ts0[12] = {68, 12, 5, 0};
    uint32_t before = t_ms_of_day();
    uint8_t *ip = t_fwd_opts(t, ts0, 12);
    uint32_t after = t_ms_of_day();
    assert_int_equal(ip[22], 9);
    assert_int_equal(ip[23], 0);
    t_check_time(pkt_get32(ip + 24), before, after);
    assert_int_equal(pkt_get32(ip + 28), 0);
    t_tx_free(t);
    /* Flag 1: the egress address, then the timestamp. */
    uint8_t ts1[20] = {68, 20, 5, 1};
    before = t_ms_of_day();
    ip = t_fwd_opts(t, ts1, 20);
    after = t_ms_of_day();
    assert_int_equal(ip[22], 13);
    assert_int_equal(pkt_get32(ip + 24), T_OUT_IP);
    t_check_time(pkt_get32(ip + 28), before, after);
    t_tx_free(t);
    /* Flag 3: only when the next prespecified address is one of ours (any port's). */
    uint8_t ts3[20] = {68, 20, 5, 3, 10, 0, 0, 1, 0, 0, 0, 0, 20, 1, 2, 3, 0, 0, 0, 0};
    before = t_ms_of_day();
    ip = t_fwd_opts(t, ts3, 20);
    after = t_ms_of_day();
    assert_int_equal(ip[22], 13);
    assert_int_equal(pkt_get32(ip + 24), T_IP(10, 0, 0, 1));
    t_check_time(pkt_get32(ip + 28), before, after);
    assert_int_equal(pkt_get32(ip + 36), 0);
    t_tx_free(t);
    uint8_t ts3o[12] = {68, 12, 5, 3, 9, 9, 9, 9, 0, 0, 0, 0};
    ip = t_fwd_opts(t, ts3o, 12);
    assert_memory_equal(ip + 20, ts3o, 12);
    t_tx_free(t);
    /* Full: the overflow count (high nibble) goes up by one, nothing else changes. */
    uint8_t tsf[8] = {68, 8, 9, 0x21, 1, 2, 3, 4};
    ip = t_fwd_opts(t, tsf, 8);
    assert_int_equal(ip[23], 0x31);
    assert_int_equal(ip[22], 9);
    assert_int_equal(pkt_get32(ip + 24), 0x01020304);
    t_tx_free(t);
    t_no_leak(t);
}

struct t_bad {
    const char *name;
    uint8_t opts[12];
    unsigned nopts;
    unsigned ptr; /* the octet Parameter Problem points at, from the header's start */
};

static const struct t_bad t_bads[] = {
    {"length 0", {0x94, 0, 0, 0}, 4, 21},
    {"length 1", {1, 1, 0x94, 1}, 4, 23},
    {"length past the header", {0x94, 12, 0, 0}, 4, 21},
    {"type in the last octet", {1, 1, 1, 68}, 4, 23},
    {"record route of length 2", {7, 2, 0, 0}, 4, 21},
    {"record route pointer 3", {7, 7, 3, 0, 0, 0, 0, 0}, 8, 22},
    {"record route, room for half an address", {7, 10, 8, 1, 2, 3, 4, 0, 0, 0, 0, 0}, 12, 22},
    {"timestamp pointer 4", {68, 8, 4, 0, 0, 0, 0, 0}, 8, 22},
    {"timestamp flags 2", {68, 8, 5, 2, 0, 0, 0, 0}, 8, 23},
    {"timestamp with address, room for the address only", {68, 8, 5, 1, 0, 0, 0, 0}, 8, 22},
    {"timestamp overflow count wraps", {68, 8, 9, 0xf0, 1, 2, 3, 4}, 8, 23},
    {"record route twice", {7, 3, 4, 7, 3, 4, 0, 0}, 8, 23},
};

static void test_rt_ipopt_bad_options(void **state)
{
    struct t_rt *t = *state;
    for (unsigned i = 0; i < sizeof(t_bads) / sizeof(t_bads[0]); i++) {
        const struct t_bad *c = &t_bads[i];
        ipc_buf b = t_opt_frame(t, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), c->opts, c->nopts, 30);
        uint8_t orig[60 + 8];
        unsigned ihl = 20 + c->nopts;
        memcpy(orig, t_ip(t, b), ihl + 8);
        uint64_t bad = t->ctr.c[RT_CTR_DROP_BAD_OPTIONS], drops = t_drops(t);
        uint64_t sent = t_count(t, "icmp_param_problem_tx");
        t_input(t, &b, 1, 1000 + i * 1000000000ull);
        if (t->ctr.c[RT_CTR_FORWARDED] != 0 || t->tx.n != 1)
            fail_msg("%s: forwarded %llu, %u packets out", c->name,
                     (unsigned long long)t->ctr.c[RT_CTR_FORWARDED], t->tx.n);
        const struct ipc_meta *m = ipc_pool_meta(&t->pool, t->tx.bufs[0]);
        assert_int_equal(m->out_port, 0);
        uint8_t *ip = t_ip(t, t->tx.bufs[0]);
        assert_int_equal(ip[PKT_IP_PROTO], 1);
        assert_int_equal(pkt_get32(ip + PKT_IP_SRC), T_IP(10, 0, 0, 1));
        assert_int_equal(pkt_get32(ip + PKT_IP_DST), T_IP(10, 0, 0, 5));
        uint8_t *ic = ip + 20;
        unsigned iclen = pkt_get16(ip + PKT_IP_TOTLEN) - 20u;
        assert_int_equal(iclen, 8 + ihl + 8);
        if (ic[0] != T_PARAMPROB || ic[1] != 0 || ic[4] != c->ptr)
            fail_msg("%s: ICMP %u/%u pointer %u, want 12/0 pointer %u", c->name, ic[0], ic[1], ic[4], c->ptr);
        assert_int_equal(ic[5] | ic[6] | ic[7], 0);
        assert_int_equal(pkt_csum(ic, iclen), 0);
        /* The header as it came, option in error included (RFC 1812 §4.3.3.5). */
        assert_memory_equal(ic + 8, orig, ihl + 8);
        if (t->ctr.c[RT_CTR_DROP_BAD_OPTIONS] != bad + 1 || t_drops(t) != drops + 1)
            fail_msg("%s: not dropped once as drop_bad_options", c->name);
        if (t_count(t, "icmp_param_problem_tx") != sent + 1)
            fail_msg("%s: icmp_param_problem_tx not counted", c->name);
        t_tx_free(t);
        t_no_leak(t);
    }
    /* Options the router does not interpret go through as they came. */
    static const uint8_t other[8] = {0x94, 4, 0, 0, 0x88, 4, 0x12, 0x34};
    uint8_t *ip = t_fwd_opts(t, other, 8);
    assert_memory_equal(ip + 20, other, 8);
    t_tx_free(t);
    t_no_leak(t);
}

static void test_rt_ipopt_source_route(void **state)
{
    struct t_rt *t = *state;
    static const uint8_t routes[][12] = {
        {131, 11, 4, 20, 0, 0, 9, 20, 0, 0, 8, 1},  /* LSRR, two hops to go */
        {131, 11, 12, 20, 0, 0, 9, 20, 0, 0, 8, 1}, /* LSRR, exhausted */
        {137, 11, 8, 20, 0, 0, 9, 20, 0, 0, 8, 1},  /* SSRR, one hop to go */
        {137, 11, 12, 20, 0, 0, 9, 20, 0, 0, 8, 1}, /* SSRR, exhausted */
    };
    for (unsigned i = 0; i < 4; i++) {
        for (unsigned local = 0; local < 2; local++) {
            uint32_t dst = local ? T_IP(10, 0, 0, 1) : T_IP(20, 1, 2, 3);
            ipc_buf b = t_opt_frame(t, T_IP(10, 0, 0, 5), dst, routes[i], 12, 30);
            uint64_t drops = t_drops(t), n = t_count(t, "drop_source_route");
            t_input(t, &b, 1, 1000);
            if (t->tx.n != 0)
                fail_msg("source route %u to %s: not refused (%u out)", i, local ? "the router" : "20.1.2.3",
                         t->tx.n);
            if (t_count(t, "drop_source_route") != n + 1 || t_drops(t) != drops + 1)
                fail_msg("source route %u: not counted once as drop_source_route", i);
        }
    }
    assert_int_equal(t->ctr.c[RT_CTR_FORWARDED], 0);
    t_no_leak(t);
}

/* Record Route filled, then fragmented: only the copied options (router alert) after the first piece. */
static void test_rt_ipopt_fragmented(void **state)
{
    struct t_rt *t = *state;
    t->ctx.port[1].mtu = 576;
    static const uint8_t opts[12] = {0x94, 4, 0, 0, 7, 7, 4, 0, 0, 0, 0, 0};
    ipc_buf b = t_opt_frame(t, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), opts, 12, 1200);
    t_input(t, &b, 1, 1000);
    assert_int_equal(t->tx.n, 3);
    uint8_t *ip = t_ip(t, t->tx.bufs[0]);
    assert_int_equal(ip[0], 0x48);
    assert_int_equal(pkt_csum(ip, 32), 0);
    assert_int_equal(pkt_get32(ip + 27), T_OUT_IP);
    assert_int_equal(ip[26], 8);
    for (unsigned k = 1; k < t->tx.n; k++) {
        ip = t_ip(t, t->tx.bufs[k]);
        assert_int_equal(ip[0], 0x46);
        assert_int_equal(pkt_csum(ip, 24), 0);
        assert_memory_equal(ip + 20, opts, 4);
    }
    t_tx_free(t);
    t_no_leak(t);
}

static void test_rt_ipopt_own_source(void **state)
{
    struct t_rt *t = *state;
    /* Another port's address, the ingress port's own, to a destination beyond and to the router. */
    const uint32_t srcs[] = {T_IP(10, 1, 0, 1), T_IP(10, 0, 0, 1), T_IP(10, 2, 0, 1)};
    const uint32_t dsts[] = {T_IP(20, 1, 2, 3), T_IP(20, 1, 2, 3), T_IP(10, 0, 0, 1)};
    for (unsigned i = 0; i < 3; i++) {
        ipc_buf b = t_frame(t, 0, srcs[i], dsts[i], 1, 64, 30, 0);
        uint64_t drops = t_drops(t);
        t_input(t, &b, 1, 1000);
        if (t->tx.n != 0)
            fail_msg("source %08x: not dropped (%u out)", srcs[i], t->tx.n);
        if (t_count(t, "drop_own_source") != i + 1 || t_drops(t) != drops + 1)
            fail_msg("source %08x: not counted once as drop_own_source", srcs[i]);
    }
    /* A neighbour's source still goes through. */
    t_forward1(t, t_frame(t, 0, T_IP(10, 0, 0, 5), T_IP(20, 1, 2, 3), 17, 64, 30, 0));
    t_tx_free(t);
    t_no_leak(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_ipopt_record_route, t_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipopt_timestamp, t_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipopt_bad_options, t_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipopt_source_route, t_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipopt_fragmented, t_setup, t_rt_teardown),
        cmocka_unit_test_setup_teardown(test_rt_ipopt_own_source, t_setup, t_rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
