/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_filter_ct.c: connection tracking (services/filter/):
 * the TCP state machine and window checks, UDP and ICMP timeouts on a
 * virtual clock, ICMP errors related to their flows (IPv4 and IPv6), the
 * bounded table with early drop, expiry, a table adopted by another process
 * (fork), and corrupted regions refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tests/unit/test_filter_common.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* TCP states as flt_ct_info reports them (enum ct_tcp_state) */
enum { S_SYN_SENT = 1, S_SYN_RECV, S_EST, S_FIN_WAIT, S_CLOSE_WAIT, S_LAST_ACK, S_TIME_WAIT, S_CLOSE };

static uint8_t buf[2048];

static enum flt_verdict tcp(struct tfix *x, bool reply, uint8_t flags, uint32_t seq, uint32_t ack, uint32_t paylen,
                            uint64_t now, uint8_t *st)
{
    struct tpkt tp = { .fam = 4, .proto = 6, .src = reply ? "198.51.100.7" : "10.0.0.2",
                       .dst = reply ? "10.0.0.2" : "198.51.100.7", .sport = reply ? 80 : 40000,
                       .dport = reply ? 40000 : 80, .flags = flags, .seq = seq, .ack = ack, .win = 64000,
                       .wscale = 7, .paylen = paylen };
    uint32_t len = t_build(buf, &tp);
    return t_forward(x, buf, &len, reply ? 1 : 0, reply ? 0 : 1, now, st);
}

static struct flt_ct_info conn(struct tfix *x, uint64_t now)
{
    struct flt_tuple t = { .proto = 6, .family = 4, .sport = 40000, .dport = 80 };
    memset(t.src, 0, 10);
    t.src[10] = t.src[11] = 0xff;
    memcpy(t.dst, t.src, 12);
    inet_pton(AF_INET, "10.0.0.2", t.src + 12);
    inet_pton(AF_INET, "198.51.100.7", t.dst + 12);
    struct flt_ct_info ci;
    memset(&ci, 0, sizeof ci);
    uint32_t ref = flt_ct_lookup(x->f, &t, now);
    if (ref)
        flt_ct_get(x->f, ref, &ci);
    else
        ci.tcp_state = 0xff;
    return ci;
}

static void handshake(struct tfix *x)
{
    uint8_t st;
    assert_int_equal(tcp(x, false, TH_SYN, 1000, 0, 0, 1000, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_NEW);
    assert_int_equal(conn(x, 1000).tcp_state, S_SYN_SENT);
    assert_int_equal(tcp(x, true, TH_SYN | TH_ACK, 5000, 1001, 0, 1001, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    assert_int_equal(conn(x, 1001).tcp_state, S_SYN_RECV);
    assert_int_equal(tcp(x, false, TH_ACK, 1001, 5001, 0, 1002, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    struct flt_ct_info ci = conn(x, 1002);
    assert_int_equal(ci.tcp_state, S_EST);
    assert_true(ci.assured);
    assert_true(ci.confirmed);
}

static void test_tcp_handshake_teardown(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, NULL), 0);
    handshake(&x);
    uint8_t st;
    assert_int_equal(tcp(&x, false, TH_ACK | TH_PSH, 1001, 5001, 100, 1003, &st), FLT_ACCEPT);
    assert_int_equal(tcp(&x, true, TH_ACK, 5001, 1101, 0, 1004, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    assert_int_equal(conn(&x, 1004).expires_ms, 1004 + 432000000ull);
    assert_int_equal(tcp(&x, false, TH_FIN | TH_ACK, 1101, 5001, 0, 1005, &st), FLT_ACCEPT);
    assert_int_equal(conn(&x, 1005).tcp_state, S_FIN_WAIT);
    assert_int_equal(tcp(&x, true, TH_FIN | TH_ACK, 5001, 1102, 0, 1006, &st), FLT_ACCEPT);
    assert_int_equal(conn(&x, 1006).tcp_state, S_LAST_ACK);
    assert_int_equal(tcp(&x, false, TH_ACK, 1102, 5002, 0, 1007, &st), FLT_ACCEPT);
    struct flt_ct_info ci = conn(&x, 1007);
    assert_int_equal(ci.tcp_state, S_TIME_WAIT);
    assert_int_equal(ci.expires_ms, 1007 + 120000ull);
    /* a new SYN on the same ports ends the old connection */
    assert_int_equal(tcp(&x, false, TH_SYN, 90000, 0, 0, 2000, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_NEW);
    assert_int_equal(conn(&x, 2000).tcp_state, S_SYN_SENT);
    assert_int_equal(flt_ct_count(x.region), 1);
    t_fix_fini(&x);
}

static void test_tcp_window(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, NULL), 0);
    handshake(&x);
    uint8_t st;
    /* far beyond what the receiver allowed */
    assert_int_equal(tcp(&x, false, TH_ACK, 1001 + 50000000, 5001, 10, 1003, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    /* acking data never sent */
    assert_int_equal(tcp(&x, true, TH_ACK, 5001, 1001 + 9000000, 0, 1004, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    /* far behind: older than the window */
    assert_int_equal(tcp(&x, false, TH_ACK, 1001 - 40000000, 5001, 10, 1005, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    assert_true(flt_get_stats(x.f)->reason[FLT_R_TCP_WINDOW] >= 3);
    /* in window: still fine, and the state did not move */
    assert_int_equal(tcp(&x, false, TH_ACK, 1001, 5001, 10, 1006, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    assert_int_equal(conn(&x, 1006).tcp_state, S_EST);
    t_fix_fini(&x);
}

static void test_tcp_rst(void **state)
{
    (void)state;
    struct tfix x;
    uint8_t st;
    assert_int_equal(t_fix_init(&x, 64, NULL), 0);
    /* SYN/ACK that acks another SYN, then a RST that acks nothing */
    assert_int_equal(tcp(&x, false, TH_SYN, 1000, 0, 0, 1000, &st), FLT_ACCEPT);
    assert_int_equal(tcp(&x, true, TH_SYN | TH_ACK, 5000, 777, 0, 1001, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    assert_int_equal(tcp(&x, true, TH_RST | TH_ACK, 0, 778, 0, 1002, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    assert_int_equal(conn(&x, 1002).tcp_state, S_SYN_SENT);
    /* the refusal: RST/ACK acking our SYN closes it */
    assert_int_equal(tcp(&x, true, TH_RST | TH_ACK, 0, 1001, 0, 1003, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    assert_int_equal(conn(&x, 1003).tcp_state, S_CLOSE);
    assert_int_equal(conn(&x, 1003).expires_ms, 1003 + 10000ull);
    t_fix_fini(&x);

    /* established: an out-of-window RST is invalid, an in-window one closes */
    assert_int_equal(t_fix_init(&x, 64, NULL), 0);
    handshake(&x);
    assert_int_equal(tcp(&x, true, TH_RST, 5001 + 80000000, 0, 0, 1003, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    assert_int_equal(conn(&x, 1003).tcp_state, S_EST);
    assert_int_equal(tcp(&x, true, TH_RST, 5001, 0, 0, 1004, &st), FLT_ACCEPT);
    assert_int_equal(conn(&x, 1004).tcp_state, S_CLOSE);
    t_fix_fini(&x);
}

static void test_tcp_new_kinds(void **state)
{
    (void)state;
    struct tfix x;
    uint8_t st;
    assert_int_equal(t_fix_init(&x, 64, NULL), 0);
    /* no connection starts with a SYN/ACK, FIN or RST */
    assert_int_equal(tcp(&x, false, TH_SYN | TH_ACK, 1, 1, 0, 10, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    assert_int_equal(tcp(&x, false, TH_FIN, 1, 1, 0, 10, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    assert_int_equal(tcp(&x, false, TH_RST, 1, 1, 0, 10, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    assert_int_equal(flt_ct_count(x.region), 0);
    /* a lone ACK is picked up mid-stream, as Linux's tcp_loose does */
    assert_int_equal(tcp(&x, false, TH_ACK, 777, 888, 10, 10, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_NEW);
    assert_int_equal(conn(&x, 10).tcp_state, S_EST);
    assert_int_equal(tcp(&x, true, TH_ACK, 888, 787, 10, 11, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    t_fix_fini(&x);
}

static enum flt_verdict udp(struct tfix *x, bool reply, uint64_t now, uint8_t *st)
{
    struct tpkt tp = { .fam = 4, .proto = 17, .src = reply ? "198.51.100.7" : "10.0.0.2",
                       .dst = reply ? "10.0.0.2" : "198.51.100.7", .sport = reply ? 53 : 5353,
                       .dport = reply ? 5353 : 53, .paylen = 20 };
    uint32_t len = t_build(buf, &tp);
    return t_forward(x, buf, &len, reply ? 1 : 0, reply ? 0 : 1, now, st);
}

static void test_udp_icmp_timeouts(void **state)
{
    (void)state;
    struct tfix x;
    uint8_t st;
    assert_int_equal(t_fix_init(&x, 64, NULL), 0);
    assert_int_equal(udp(&x, false, 1000, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_NEW);
    assert_int_equal(udp(&x, false, 20000, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_NEW); /* no reply yet */
    /* unreplied: 30 s after the last packet */
    assert_int_equal(udp(&x, true, 49999, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    assert_int_equal(udp(&x, false, 50000, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    /* both ways, then more: a stream, assured, 120 s */
    assert_int_equal(flt_ct_count(x.region), 1);
    assert_int_equal(udp(&x, true, 50000 + 119000, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    assert_int_equal(udp(&x, true, 169000 + 120001, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_NEW); /* expired: now a new flow the other way */
    t_fix_fini(&x);

    assert_int_equal(t_fix_init(&x, 64, NULL), 0);
    assert_int_equal(udp(&x, false, 1000, &st), FLT_ACCEPT);
    assert_int_equal(udp(&x, false, 1000 + 30001, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_NEW); /* the first one expired: a new one */
    t_fix_fini(&x);

    /* ICMP echo: 30 s; an echo reply nobody asked for is invalid */
    assert_int_equal(t_fix_init(&x, 64, NULL), 0);
    struct tpkt rq = { .fam = 4, .proto = 1, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 77,
                       .icmp_type = 8 };
    struct tpkt rp = { .fam = 4, .proto = 1, .src = "198.51.100.7", .dst = "10.0.0.2", .sport = 77,
                       .icmp_type = 0 };
    uint32_t len = t_build(buf, &rp);
    assert_int_equal(t_forward(&x, buf, &len, 1, 0, 1000, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    len = t_build(buf, &rq);
    assert_int_equal(t_forward(&x, buf, &len, 0, 1, 1000, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_NEW);
    len = t_build(buf, &rp);
    assert_int_equal(t_forward(&x, buf, &len, 1, 0, 1500, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    len = t_build(buf, &rp);
    assert_int_equal(t_forward(&x, buf, &len, 1, 0, 1500 + 30001, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    t_fix_fini(&x);
}

static void related(int fam)
{
    struct tfix x;
    uint8_t st, q[256], e[512];
    const char *in = fam == 4 ? "10.0.0.2" : "fd00::2", *out = fam == 4 ? "198.51.100.7" : "2001:db8:1::7";
    const char *rtr = fam == 4 ? "192.0.2.99" : "2001:db8:2::99";
    assert_int_equal(t_fix_init(&x, 64, NULL), 0);
    struct tpkt tp = { .fam = fam, .proto = 17, .src = in, .dst = out, .sport = 5353, .dport = 53, .paylen = 30 };
    uint32_t qlen = t_build(q, &tp);
    memcpy(buf, q, qlen);
    uint32_t len = qlen;
    assert_int_equal(t_forward(&x, buf, &len, 0, 1, 1000, &st), FLT_ACCEPT);
    /* port unreachable from the destination, time exceeded from a router */
    len = t_build_error(e, fam, out, in, fam == 4 ? 3 : 1, fam == 4 ? 3 : 4, q, qlen);
    assert_int_equal(t_forward(&x, e, &len, 1, 0, 1001, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_REL);
    len = t_build_error(e, fam, rtr, in, fam == 4 ? 11 : 3, 0, q, qlen);
    assert_int_equal(t_forward(&x, e, &len, 1, 0, 1002, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_REL);
    /* quoting a flow that does not exist */
    tp.sport = 999;
    qlen = t_build(q, &tp);
    len = t_build_error(e, fam, out, in, fam == 4 ? 3 : 1, fam == 4 ? 3 : 4, q, qlen);
    assert_int_equal(t_forward(&x, e, &len, 1, 0, 1003, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    t_fix_fini(&x);
}

static void test_related_v4(void **state)
{
    (void)state;
    related(4);
}

static void test_related_v6(void **state)
{
    (void)state;
    related(6);
}

static enum flt_verdict udp_flow(struct tfix *x, int i, bool reply, uint64_t now, uint8_t *st)
{
    char a[32];
    snprintf(a, sizeof a, "10.0.%d.%d", i / 250, i % 250 + 2);
    struct tpkt tp = { .fam = 4, .proto = 17, .src = reply ? "198.51.100.7" : a, .dst = reply ? a : "198.51.100.7",
                       .sport = reply ? 53 : 1000, .dport = reply ? 1000 : 53, .paylen = 4 };
    uint32_t len = t_build(buf, &tp);
    return t_forward(x, buf, &len, reply, !reply, now, st);
}

static void test_table_full(void **state)
{
    (void)state;
    struct tfix x;
    uint8_t st;
    assert_int_equal(t_fix_init(&x, 8, NULL), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(udp_flow(&x, i, false, 1000 + (uint64_t)i, &st), FLT_ACCEPT);
    assert_int_equal(flt_ct_count(x.region), 8);
    /* full of unreplied flows: the one expiring first makes room */
    assert_int_equal(udp_flow(&x, 8, false, 2000, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_NEW);
    assert_int_equal(flt_ct_count(x.region), 8);
    assert_int_equal(flt_get_stats(x.f)->ct_early_drop, 1);
    struct flt_tuple t0;
    t_tuple(&t0, 4, 17, "10.0.0.2", "198.51.100.7", 1000, 53);
    assert_int_equal(flt_ct_lookup(x.f, &t0, 2001), 0); /* flow 0 expired first: dropped */
    t_tuple(&t0, 4, 17, "10.0.0.3", "198.51.100.7", 1000, 53);
    assert_int_not_equal(flt_ct_lookup(x.f, &t0, 2001), 0);
    /* all assured (replied twice): nothing may be pushed out */
    for (int i = 1; i <= 8; i++) {
        assert_int_equal(udp_flow(&x, i, true, 3000, &st), FLT_ACCEPT);
        assert_int_equal(st, FLT_CT_EST);
        udp_flow(&x, i, false, 3000, &st);
    }
    assert_int_equal(udp_flow(&x, 20, false, 3001, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_INV);
    assert_true(flt_get_stats(x.f)->reason[FLT_R_TABLE_FULL] >= 1);
    for (int i = 1; i <= 8; i++) {
        assert_int_equal(udp_flow(&x, i, true, 3002, &st), FLT_ACCEPT);
        assert_int_equal(st, FLT_CT_EST);
    }
    t_fix_fini(&x);
}

/* A first packet between its hooks holds an unconfirmed entry: a flood
 * that fills the table must not take it from under the packet (it would
 * be invalid at forward). */
static void test_table_full_in_flight(void **state)
{
    (void)state;
    struct tfix x;
    uint8_t st;
    assert_int_equal(t_fix_init(&x, 8, NULL), 0);
    struct tpkt tp = { .fam = 4, .proto = 17, .src = "10.0.9.2", .dst = "198.51.100.7", .sport = 1000, .dport = 53,
                       .paylen = 4 };
    uint8_t pb[2048];
    struct flt_pkt p = { .data = pb, .len = t_build(pb, &tp), .cap = sizeof pb, .iif = 0, .oif = 1 };
    assert_int_equal(flt_process(x.f, &p, FLT_PRE, 1000), FLT_ACCEPT);
    for (int i = 0; i < 7; i++)
        assert_int_equal(udp_flow(&x, i, false, 1001 + (uint64_t)i, &st), FLT_ACCEPT);
    assert_int_equal(flt_ct_count(x.region), 8);
    for (int i = 10; i < 40; i++) { /* each pushes an unreplied one out */
        assert_int_equal(udp_flow(&x, i, false, 1100, &st), FLT_ACCEPT);
        assert_int_equal(st, FLT_CT_NEW);
    }
    assert_int_equal(flt_get_stats(x.f)->ct_early_drop, 30);
    assert_int_equal(flt_process(x.f, &p, FLT_FWD, 1101), FLT_ACCEPT);
    assert_int_equal(p.ctstate, FLT_CT_NEW);
    assert_int_equal(flt_process(x.f, &p, FLT_POST, 1101), FLT_ACCEPT);
    struct flt_tuple t0;
    t_tuple(&t0, 4, 17, "10.0.9.2", "198.51.100.7", 1000, 53);
    assert_int_not_equal(flt_ct_lookup(x.f, &t0, 1102), 0);
    /* a first packet lost on its way: its entry goes once its second is out */
    tp.src = "10.0.9.3";
    p = (struct flt_pkt){ .data = pb, .len = t_build(pb, &tp), .cap = sizeof pb, .iif = 0, .oif = 1 };
    assert_int_equal(flt_process(x.f, &p, FLT_PRE, 1200), FLT_ACCEPT);
    for (int i = 60; i < 70; i++)
        assert_int_equal(udp_flow(&x, i, false, 2300, &st), FLT_ACCEPT);
    t_tuple(&t0, 4, 17, "10.0.9.3", "198.51.100.7", 1000, 53);
    assert_int_equal(flt_ct_lookup(x.f, &t0, 2301), 0);
    t_fix_fini(&x);
}

static void test_expiry_sweep(void **state)
{
    (void)state;
    struct tfix x;
    uint8_t st;
    assert_int_equal(t_fix_init(&x, 256, NULL), 0);
    for (int i = 0; i < 200; i++)
        udp_flow(&x, i, false, 1000, &st);
    assert_int_equal(flt_ct_count(x.region), 200);
    assert_int_equal(flt_ct_sweep(x.f, 30999, 256), 0);
    /* bounded work per call: a budget of 64 frees at most 64 */
    unsigned n = flt_ct_sweep(x.f, 31001, 64);
    assert_true(n > 0 && n <= 64);
    unsigned total = n;
    for (int k = 0; k < 8; k++)
        total += flt_ct_sweep(x.f, 31001, 64);
    assert_int_equal(total, 200);
    assert_int_equal(flt_ct_count(x.region), 0);
    assert_int_equal(flt_get_stats(x.f)->ct_expired, 200);
    /* a burst sweeps too */
    for (int i = 0; i < 10; i++)
        udp_flow(&x, i, false, 50000, &st);
    struct tpkt tp = { .fam = 4, .proto = 17, .src = "10.9.9.9", .dst = "198.51.100.7", .sport = 1, .dport = 2 };
    struct flt_pkt pk[32];
    static uint8_t bufs[32][256];
    for (int i = 0; i < 32; i++) {
        pk[i] = (struct flt_pkt){ .data = bufs[i], .len = t_build(bufs[i], &tp), .cap = 256 };
    }
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 32; i++)
            pk[i].ct = 0;
        assert_int_equal(flt_process_burst(x.f, pk, 32, FLT_FWD, 90000), 32);
    }
    assert_int_equal(flt_ct_count(x.region), 1); /* the ten expired, the burst's own flow stays */
    t_fix_fini(&x);
}

/* a packet between its hooks whose entry expired and was reused by
 * another connection: it must not act on the other one's entry */
static void test_stale_ref(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 1, NULL), 0);
    struct tpkt a = { .fam = 4, .proto = 17, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 1, .dport = 2 };
    struct flt_pkt p = { .data = buf, .len = t_build(buf, &a), .cap = sizeof buf, .iif = 0, .oif = 1 };
    assert_int_equal(flt_process(x.f, &p, FLT_PRE, 1000), FLT_ACCEPT);
    assert_int_equal(p.ctstate, FLT_CT_NEW);
    /* its unconfirmed entry lapses; another flow takes the only slot */
    static uint8_t b2[256];
    a.src = "10.0.0.3";
    struct flt_pkt q = { .data = b2, .len = t_build(b2, &a), .cap = sizeof b2, .iif = 0, .oif = 1 };
    assert_int_equal(flt_process(x.f, &q, FLT_PRE, 5000), FLT_ACCEPT);
    assert_int_equal(q.ct & 0x0fffffffu, p.ct & 0x0fffffffu); /* the same slot */
    assert_int_equal(flt_process(x.f, &p, FLT_POST, 5000), FLT_ACCEPT);
    assert_int_equal(p.ctstate, FLT_CT_INV);
    struct flt_ct_info ci;
    assert_int_equal(flt_ct_get(x.f, q.ct, &ci), 0);
    assert_false(ci.confirmed); /* the stale packet confirmed nothing */
    assert_int_equal(flt_process(x.f, &q, FLT_POST, 5000), FLT_ACCEPT);
    assert_int_equal(flt_ct_get(x.f, q.ct, &ci), 0);
    assert_true(ci.confirmed);
    t_fix_fini(&x);
}

static void test_fork_reattach(void **state)
{
    (void)state;
    uint32_t entries = 1024;
    size_t size = flt_ct_region_size(entries);
    void *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(region != MAP_FAILED);
    assert_int_equal(flt_ct_format(region, size, entries, 99), 0);
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 16, NULL), 0);
    flt_free(x.f);
    x.f = flt_new(region, x.ports, 2, NULL);
    assert_non_null(x.f);
    handshake(&x);
    uint8_t st;
    assert_int_equal(udp(&x, false, 1003, &st), FLT_ACCEPT);
    flt_free(x.f);
    x.f = NULL;

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the "restarted filter": adopts the table, the connections go on */
        if (flt_ct_attach(region, size) != 0)
            _exit(2);
        x.f = flt_new(region, x.ports, 2, NULL);
        if (!x.f || flt_ct_count(region) != 2)
            _exit(3);
        if (tcp(&x, true, TH_ACK, 5001, 1001, 0, 2000, &st) != FLT_ACCEPT || st != FLT_CT_EST)
            _exit(4);
        if (udp(&x, true, 2001, &st) != FLT_ACCEPT || st != FLT_CT_EST)
            _exit(5);
        if (udp_flow(&x, 7, false, 2002, &st) != FLT_ACCEPT || st != FLT_CT_NEW)
            _exit(6);
        _exit(0);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    /* and back: the child's new flow is in the parent's view */
    assert_int_equal(flt_ct_attach(region, size), 0);
    assert_int_equal(flt_ct_count(region), 3);
    x.f = flt_new(region, x.ports, 2, NULL);
    assert_int_equal(udp_flow(&x, 7, true, 2003, &st), FLT_ACCEPT);
    assert_int_equal(st, FLT_CT_EST);
    assert_int_equal(conn(&x, 2003).tcp_state, S_EST);
    flt_free(x.f);
    x.f = NULL;
    munmap(region, size);
    t_fix_fini(&x);
}

/* a table with a few connections, in a malloc'd copy to scribble on */
static void *good_region(size_t *size)
{
    struct tfix x;
    uint8_t st;
    assert_int_equal(t_fix_init(&x, 32, NULL), 0);
    for (int i = 0; i < 5; i++)
        udp_flow(&x, i, false, 1000, &st);
    handshake(&x);
    *size = x.size;
    void *r = malloc(x.size);
    memcpy(r, x.region, x.size);
    t_fix_fini(&x);
    assert_int_equal(flt_ct_attach(r, *size), 0);
    return r;
}

static void test_corrupt_region(void **state)
{
    (void)state;
    size_t size;
    /* word offsets in the header (struct ct_hdr's order) */
    enum { W_MAGIC = 0, W_VERSION = 1, W_NENTRIES = 4, W_FREE = 11, W_COUNT = 12 };
    struct { int word; uint32_t v; } hdr_bad[] = {
        { W_MAGIC, 0 }, { W_VERSION, 7 }, { W_NENTRIES, 1u << 30 }, { W_FREE, 9999 }, { W_COUNT, 3 },
    };
    for (size_t i = 0; i < sizeof hdr_bad / sizeof hdr_bad[0]; i++) {
        uint32_t *r = good_region(&size);
        r[hdr_bad[i].word] = hdr_bad[i].v;
        assert_int_equal(flt_ct_attach(r, size), -EBADMSG);
        free(r);
    }
    /* too small a region for what the header says */
    uint32_t *r = good_region(&size);
    assert_int_equal(flt_ct_attach(r, size - 64), -EBADMSG);
    free(r);
    /* a bucket out of range, a chain looping back, a free entry on a chain */
    size_t boff = 64; /* sizeof(struct ct_hdr): the bucket array follows */
    for (int kind = 0; kind < 3; kind++) {
        uint8_t *g = good_region(&size);
        uint32_t *b = (uint32_t *)(g + boff);
        int used = -1;
        for (int k = 0; k < 32; k++)
            if (b[k]) {
                used = k;
                break;
            }
        assert_true(used >= 0);
        if (kind == 0)
            b[used] = 100000;
        else if (kind == 1)
            b[(used + 1) % 32] = b[used]; /* a node on the wrong chain */
        else
            b[(used + 1) % 32] = 2 * 31 + 1; /* entry 31: free */
        assert_int_equal(flt_ct_attach(g, size), -EBADMSG);
        /* and at run time: never followed, the packet dropped, counted */
        struct flt_port ports[2];
        t_ports(ports);
        struct flt *f = flt_new(g, ports, 2, NULL);
        if (f) {
            struct tfix x = { .f = f };
            uint8_t st;
            for (int i = 0; i < 40; i++)
                udp_flow(&x, i, false, 1000, &st);
            flt_free(f);
        }
        free(g);
    }
    /* an entry's chain link past the table */
    uint8_t *g = good_region(&size);
    uint32_t *b = (uint32_t *)(g + boff);
    for (int k = 0; k < 32; k++)
        if (b[k])
            b[k] = 65;
    assert_int_equal(flt_ct_attach(g, size), -EBADMSG);
    free(g);
    /* a torn format (zeroes) and garbage */
    uint8_t *z = calloc(1, size);
    assert_int_equal(flt_ct_attach(z, size), -EBADMSG);
    for (size_t i = 0; i < size; i++)
        z[i] = (uint8_t)(i * 131 + 7);
    assert_int_equal(flt_ct_attach(z, size), -EBADMSG);
    assert_null(flt_new(z, NULL, 0, NULL));
    free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_handshake_teardown),
        cmocka_unit_test(test_tcp_window),
        cmocka_unit_test(test_tcp_rst),
        cmocka_unit_test(test_tcp_new_kinds),
        cmocka_unit_test(test_udp_icmp_timeouts),
        cmocka_unit_test(test_related_v4),
        cmocka_unit_test(test_related_v6),
        cmocka_unit_test(test_table_full),
        cmocka_unit_test(test_table_full_in_flight),
        cmocka_unit_test(test_expiry_sweep),
        cmocka_unit_test(test_stale_ref),
        cmocka_unit_test(test_fork_reattach),
        cmocka_unit_test(test_corrupt_region),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
