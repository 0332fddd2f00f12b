/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_filter_nat.c: NAT in services/filter/: masquerade and
 * source NAT that keep the flow's port unless taken, collisions, port
 * ranges running out, destination NAT, ICMP errors translated (the quoted
 * header too; the router's own errors as well), ICMP echo identifiers,
 * hairpin, and reject's replies. Every
 * rewritten frame's checksums are summed anew (t_csums_ok).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tests/unit/test_filter_common.h"

static uint8_t buf[2048];

static const char *addr_of(const uint8_t *f, bool src)
{
    static char s[2][64];
    const uint8_t *ip = f + 14;
    int fam = ip[0] >> 4;
    char *o = s[src];
    if (fam == 4)
        inet_ntop(AF_INET, ip + (src ? 12 : 16), o, 64);
    else
        inet_ntop(AF_INET6, ip + (src ? 8 : 24), o, 64);
    return o;
}

static uint16_t port_of(const uint8_t *f, bool src)
{
    const uint8_t *ip = f + 14;
    const uint8_t *l4 = ip + ((ip[0] >> 4) == 4 ? 20 : 40);
    uint8_t proto = (ip[0] >> 4) == 4 ? ip[9] : ip[6];
    if (proto == 1 || proto == 58)
        return t_rd16(l4 + 4);
    return t_rd16(l4 + (src ? 0 : 2));
}

static enum flt_verdict send_pkt(struct tfix *x, struct tpkt *tp, uint16_t iif, uint16_t oif, uint64_t now)
{
    uint32_t len = t_build(buf, tp);
    enum flt_verdict v = t_forward(x, buf, &len, iif, oif, now, NULL);
    if (v != FLT_DROP)
        assert_true(t_csums_ok(buf, len));
    return v;
}

static const char *masq = "chain postrouting {\n  oif \"wan\" masquerade\n}\n";

static void masq_flow(int fam, uint8_t proto)
{
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, masq), 0);
    const char *in = fam == 4 ? "10.0.0.2" : "fd00::2", *out = fam == 4 ? "198.51.100.7" : "2001:db8:1::7";
    const char *pub = fam == 4 ? "203.0.113.1" : "2001:db8::1";
    struct tpkt tp = { .fam = fam, .proto = proto, .src = in, .dst = out, .sport = 40000, .dport = 53,
                       .flags = TH_SYN, .seq = 1, .win = 1000, .wscale = -1, .paylen = 33 };
    assert_int_equal(send_pkt(&x, &tp, 0, 1, 1000), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, true), pub);
    assert_string_equal(addr_of(buf, false), out);
    assert_int_equal(port_of(buf, true), 40000); /* kept: the mapping was free */
    struct tpkt rp = { .fam = fam, .proto = proto, .src = out, .dst = pub, .sport = 53, .dport = 40000,
                       .flags = TH_SYN | TH_ACK, .seq = 500, .ack = 35, .win = 1000, .wscale = -1, .paylen = 7 };
    assert_int_equal(send_pkt(&x, &rp, 1, 0, 1001), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, false), in);
    assert_int_equal(port_of(buf, false), 40000);
    assert_string_equal(addr_of(buf, true), out);
    t_fix_fini(&x);
}

static void test_masquerade_v4(void **state)
{
    (void)state;
    masq_flow(4, 17);
    masq_flow(4, 6);
}

static void test_masquerade_v6(void **state)
{
    (void)state;
    masq_flow(6, 17);
    masq_flow(6, 6);
}

static void test_snat_collision(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, masq), 0);
    struct tpkt a = { .fam = 4, .proto = 17, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 40000,
                      .dport = 53, .paylen = 5 };
    struct tpkt b = a;
    b.src = "10.0.0.3";
    assert_int_equal(send_pkt(&x, &a, 0, 1, 1000), FLT_ACCEPT);
    assert_int_equal(port_of(buf, true), 40000);
    assert_int_equal(send_pkt(&x, &b, 0, 1, 1000), FLT_ACCEPT);
    uint16_t pb = port_of(buf, true);
    assert_int_not_equal(pb, 40000);
    assert_true(pb >= 1024);
    /* the reply to each mapping reaches its own host */
    struct tpkt r = { .fam = 4, .proto = 17, .src = "198.51.100.7", .dst = "203.0.113.1", .sport = 53,
                      .dport = pb, .paylen = 5 };
    assert_int_equal(send_pkt(&x, &r, 1, 0, 1001), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, false), "10.0.0.3");
    assert_int_equal(port_of(buf, false), 40000);
    r.dport = 40000;
    assert_int_equal(send_pkt(&x, &r, 1, 0, 1001), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, false), "10.0.0.2");
    /* a privileged port stays privileged */
    a.sport = b.sport = 123;
    assert_int_equal(send_pkt(&x, &a, 0, 1, 1002), FLT_ACCEPT);
    assert_int_equal(port_of(buf, true), 123);
    assert_int_equal(send_pkt(&x, &b, 0, 1, 1002), FLT_ACCEPT);
    assert_true(port_of(buf, true) < 512 && port_of(buf, true) != 123);
    /* ICMP echo: the identifier is the port */
    struct tpkt e1 = { .fam = 4, .proto = 1, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 77,
                       .icmp_type = 8, .paylen = 16 };
    struct tpkt e2 = e1;
    e2.src = "10.0.0.3";
    assert_int_equal(send_pkt(&x, &e1, 0, 1, 1003), FLT_ACCEPT);
    assert_int_equal(port_of(buf, true), 77);
    assert_int_equal(send_pkt(&x, &e2, 0, 1, 1003), FLT_ACCEPT);
    uint16_t id2 = port_of(buf, true);
    assert_int_not_equal(id2, 77);
    struct tpkt er = { .fam = 4, .proto = 1, .src = "198.51.100.7", .dst = "203.0.113.1", .sport = id2,
                       .icmp_type = 0, .paylen = 16 };
    assert_int_equal(send_pkt(&x, &er, 1, 0, 1004), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, false), "10.0.0.3");
    assert_int_equal(port_of(buf, false), 77);
    t_fix_fini(&x);
}

static void test_snat_range_exhausted(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, "chain postrouting {\n oif wan snat to 203.0.113.9:2000-2001\n}\n"), 0);
    struct tpkt a = { .fam = 4, .proto = 17, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 2000,
                      .dport = 53, .paylen = 5 };
    assert_int_equal(send_pkt(&x, &a, 0, 1, 1000), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, true), "203.0.113.9");
    assert_int_equal(port_of(buf, true), 2000);
    a.src = "10.0.0.3";
    assert_int_equal(send_pkt(&x, &a, 0, 1, 1000), FLT_ACCEPT);
    assert_int_equal(port_of(buf, true), 2001);
    a.src = "10.0.0.4";
    struct flt_pkt p = { .data = buf, .len = t_build(buf, &a), .cap = sizeof buf, .iif = 0, .oif = 1 };
    assert_int_equal(flt_process(x.f, &p, FLT_PRE, 1000), FLT_ACCEPT);
    assert_int_equal(flt_process(x.f, &p, FLT_POST, 1000), FLT_DROP);
    assert_int_equal(p.reason, FLT_R_NAT_PORTS);
    assert_int_equal(flt_ct_count(x.region), 2); /* the refused one left nothing */
    t_fix_fini(&x);
}

static const char *dnat = "chain prerouting {\n"
                          "  iif \"wan\" tcp dport 8080 dnat to 10.0.0.10:80\n"
                          "  ip daddr 203.0.113.1 tcp dport 443 dnat to 10.0.0.10\n"
                          "}\n"
                          "chain postrouting {\n"
                          "  ip saddr 10.0.0.0/24 ip daddr 10.0.0.10 oif lan snat to 10.0.0.1\n"
                          "  oif \"wan\" masquerade\n"
                          "}\n";

static void test_dnat(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, dnat), 0);
    struct tpkt s = { .fam = 4, .proto = 6, .src = "198.51.100.7", .dst = "203.0.113.1", .sport = 5555,
                      .dport = 8080, .flags = TH_SYN, .seq = 10, .win = 1000, .wscale = -1 };
    assert_int_equal(send_pkt(&x, &s, 1, 0, 1000), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, false), "10.0.0.10");
    assert_int_equal(port_of(buf, false), 80);
    assert_string_equal(addr_of(buf, true), "198.51.100.7");
    struct tpkt r = { .fam = 4, .proto = 6, .src = "10.0.0.10", .dst = "198.51.100.7", .sport = 80, .dport = 5555,
                      .flags = TH_SYN | TH_ACK, .seq = 99, .ack = 11, .win = 1000, .wscale = -1 };
    assert_int_equal(send_pkt(&x, &r, 0, 1, 1001), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, true), "203.0.113.1");
    assert_int_equal(port_of(buf, true), 8080);
    assert_string_equal(addr_of(buf, false), "198.51.100.7");
    /* without a port: the port stays */
    s.dport = 443;
    assert_int_equal(send_pkt(&x, &s, 1, 0, 1002), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, false), "10.0.0.10");
    assert_int_equal(port_of(buf, false), 443);
    /* not matched: untouched */
    s.dport = 22;
    assert_int_equal(send_pkt(&x, &s, 1, 0, 1003), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, false), "203.0.113.1");
    t_fix_fini(&x);
}

static void test_hairpin(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, dnat), 0);
    /* a LAN host reaches the forwarded port by the public address */
    struct tpkt c = { .fam = 4, .proto = 6, .src = "10.0.0.2", .dst = "203.0.113.1", .sport = 40000, .dport = 443,
                      .flags = TH_SYN, .seq = 10, .win = 1000, .wscale = -1 };
    assert_int_equal(send_pkt(&x, &c, 0, 0, 1000), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, false), "10.0.0.10");
    assert_string_equal(addr_of(buf, true), "10.0.0.1"); /* so the answer comes back through us */
    uint16_t sp = port_of(buf, true);
    struct tpkt r = { .fam = 4, .proto = 6, .src = "10.0.0.10", .dst = "10.0.0.1", .sport = 443, .dport = sp,
                      .flags = TH_SYN | TH_ACK, .seq = 99, .ack = 11, .win = 1000, .wscale = -1 };
    assert_int_equal(send_pkt(&x, &r, 0, 0, 1001), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, true), "203.0.113.1");
    assert_int_equal(port_of(buf, true), 443);
    assert_string_equal(addr_of(buf, false), "10.0.0.2");
    assert_int_equal(port_of(buf, false), 40000);
    t_fix_fini(&x);
}

static void icmp_error_translation(int fam)
{
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, masq), 0);
    const char *h1 = fam == 4 ? "10.0.0.2" : "fd00::2", *h2 = fam == 4 ? "10.0.0.3" : "fd00::3";
    const char *out = fam == 4 ? "198.51.100.7" : "2001:db8:1::7", *pub = fam == 4 ? "203.0.113.1" : "2001:db8::1";
    const char *rtr = fam == 4 ? "192.0.2.99" : "2001:db8:2::99";
    struct tpkt a = { .fam = fam, .proto = 17, .src = h1, .dst = out, .sport = 40000, .dport = 53, .paylen = 20 };
    assert_int_equal(send_pkt(&x, &a, 0, 1, 1000), FLT_ACCEPT);
    a.src = h2;
    assert_int_equal(send_pkt(&x, &a, 0, 1, 1000), FLT_ACCEPT);
    uint8_t q[256], e[512];
    uint32_t qlen = 14 + t_rd16(buf + 14 + (fam == 4 ? 2 : 4)) + (fam == 4 ? 0 : 40);
    memcpy(q, buf, qlen); /* the second flow's packet as it left: translated */
    uint16_t mapped = port_of(q, true);
    assert_int_not_equal(mapped, 40000);
    for (int k = 0; k < 2; k++) {
        const char *from = k ? rtr : out;
        uint32_t len = t_build_error(e, fam, from, pub, fam == 4 ? (k ? 11 : 3) : (k ? 3 : 1),
                                     fam == 4 && !k ? 3 : (k ? 0 : 4), q, qlen);
        uint8_t st;
        assert_int_equal(t_forward(&x, e, &len, 1, 0, 1001, &st), FLT_ACCEPT);
        assert_int_equal(st, FLT_CT_REL);
        assert_true(t_csums_ok(e, len));
        assert_string_equal(addr_of(e, false), h2);
        assert_string_equal(addr_of(e, true), from);
        assert_int_equal(t_icmp_error_inner_sport(e), 40000);
        /* the quoted source is the host's own address again */
        const uint8_t *qi = e + 14 + (fam == 4 ? 20 : 40) + 8;
        char s[64];
        inet_ntop(fam == 4 ? AF_INET : AF_INET6, qi + (fam == 4 ? 12 : 8), s, sizeof s);
        assert_string_equal(s, h2);
    }
    t_fix_fini(&x);
}

static void test_icmp_error_v4(void **state)
{
    (void)state;
    icmp_error_translation(4);
}

static void test_icmp_error_v6(void **state)
{
    (void)state;
    icmp_error_translation(6);
}

/* The router's own errors, made between prerouting and postrouting (their
 * first hook here is postrouting): for a destination-NATed flow the quote
 * is the rewritten packet, translated back to what the sender sent; for a
 * masqueraded one it is the packet before source NAT, which only its own
 * tuple finds, and it is related too. The same quote from a host
 * (prerouting first) stays invalid, as in Linux. */
static void test_own_errors(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, dnat), 0);
    uint8_t q[256], e[512];
    struct tpkt s = { .fam = 4, .proto = 6, .src = "198.51.100.7", .dst = "203.0.113.1", .sport = 5555,
                      .dport = 8080, .flags = TH_SYN, .seq = 10, .win = 1000, .wscale = -1 };
    struct flt_pkt p = { .data = q, .len = t_build(q, &s), .cap = sizeof q, .iif = 1, .oif = 0xffff };
    assert_int_equal(flt_process(x.f, &p, FLT_PRE, 1000), FLT_ACCEPT); /* the router then drops it: TTL */
    assert_string_equal(addr_of(q, false), "10.0.0.10");
    uint32_t len = t_build_error(e, 4, "203.0.113.1", "198.51.100.7", 11, 0, q, p.len);
    struct flt_pkt pe = { .data = e, .len = len, .cap = sizeof e, .iif = 0xffff, .oif = 1 };
    assert_int_equal(flt_process(x.f, &pe, FLT_POST, 1001), FLT_ACCEPT);
    assert_int_equal(pe.ctstate, FLT_CT_REL);
    assert_true(t_csums_ok(e, pe.len));
    assert_string_equal(addr_of(e, true), "203.0.113.1");
    const uint8_t *qi = e + 14 + 20 + 8;
    char a[64];
    inet_ntop(AF_INET, qi + 16, a, sizeof a);
    assert_string_equal(a, "203.0.113.1"); /* the quoted destination, as the sender sent it */
    assert_int_equal(t_rd16(qi + 20 + 2), 8080);

    /* masqueraded: the mapping made, then a packet the router drops */
    struct tpkt u = { .fam = 4, .proto = 17, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 40000, .dport = 53,
                      .paylen = 20 };
    assert_int_equal(send_pkt(&x, &u, 0, 1, 1002), FLT_ACCEPT);
    assert_string_equal(addr_of(buf, true), "203.0.113.1");
    p = (struct flt_pkt){ .data = q, .len = t_build(q, &u), .cap = sizeof q, .iif = 0, .oif = 0xffff };
    assert_int_equal(flt_process(x.f, &p, FLT_PRE, 1003), FLT_ACCEPT);
    for (int own = 1; own >= 0; own--) {
        len = t_build_error(e, 4, "10.0.0.1", "10.0.0.2", 3, 4, q, p.len);
        pe = (struct flt_pkt){ .data = e, .len = len, .cap = sizeof e, .iif = own ? 0xffff : 1, .oif = 0 };
        assert_int_equal(flt_process(x.f, &pe, own ? FLT_POST : FLT_PRE, 1004), FLT_ACCEPT);
        assert_int_equal(pe.ctstate, own ? FLT_CT_REL : FLT_CT_INV);
        assert_true(t_csums_ok(e, pe.len));
        assert_string_equal(addr_of(e, false), "10.0.0.2");
        assert_int_equal(t_icmp_error_inner_sport(e), 40000); /* the quote untouched: the host's own */
    }
    t_fix_fini(&x);
}

static void test_reject(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 64, "chain forward {\n tcp dport 23 reject with tcp reset\n"
                                        " udp dport 9 reject\n tcp dport 24 reject\n}\n"), 0);
    for (int fam = 4; fam <= 6; fam += 2) {
        const char *c = fam == 4 ? "10.0.0.2" : "fd00::2", *s = fam == 4 ? "198.51.100.7" : "2001:db8:1::7";
        struct tpkt t = { .fam = fam, .proto = 6, .src = c, .dst = s, .sport = 40000, .dport = 23,
                          .flags = TH_SYN, .seq = 1000, .win = 100, .wscale = -1 };
        uint32_t len = t_build(buf, &t);
        assert_int_equal(t_forward(&x, buf, &len, 0, 1, 1000, NULL), FLT_REJECT);
        assert_true(t_csums_ok(buf, len));
        assert_string_equal(addr_of(buf, true), s);
        assert_string_equal(addr_of(buf, false), c);
        const uint8_t *th = buf + 14 + (fam == 4 ? 20 : 40);
        assert_int_equal(th[13], TH_RST | TH_ACK);
        assert_int_equal(t_rd32(th + 8), 1001);
        assert_int_equal(t_rd16(th + 2), 40000);
        /* UDP, and TCP without "with tcp reset": port unreachable */
        struct tpkt u = { .fam = fam, .proto = 17, .src = c, .dst = s, .sport = 40000, .dport = 9, .paylen = 12 };
        for (int k = 0; k < 2; k++) {
            len = k ? (t.dport = 24, t_build(buf, &t)) : t_build(buf, &u);
            uint32_t inlen = len;
            assert_int_equal(t_forward(&x, buf, &len, 0, 1, 1000, NULL), FLT_REJECT);
            assert_true(t_csums_ok(buf, len));
            const uint8_t *ic = buf + 14 + (fam == 4 ? 20 : 40);
            assert_int_equal(ic[0], fam == 4 ? 3 : 1);
            assert_int_equal(ic[1], fam == 4 ? 3 : 4);
            assert_int_equal(len, inlen + (fam == 4 ? 28 : 48));
            assert_string_equal(addr_of(buf, false), c);
            assert_string_equal(addr_of(buf, true), fam == 4 ? "10.0.0.1" : "fd00::1");
        }
        t.dport = 23;
    }
    /* no reject answers a reset */
    struct tpkt t = { .fam = 4, .proto = 6, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 1, .dport = 23,
                      .flags = TH_RST, .seq = 5, .wscale = -1 };
    uint32_t len = t_build(buf, &t);
    assert_int_equal(t_forward(&x, buf, &len, 0, 1, 1000, NULL), FLT_DROP);
    /* and a frame too short for the reply is dropped, not overrun */
    struct tpkt u = { .fam = 4, .proto = 17, .src = "10.0.0.2", .dst = "198.51.100.7", .sport = 1, .dport = 9 };
    len = t_build(buf, &u);
    struct flt_pkt p = { .data = buf, .len = len, .cap = len + 28, .iif = 0, .oif = 1 };
    assert_int_equal(flt_process(x.f, &p, FLT_FWD, 1000), FLT_REJECT);
    assert_int_equal(p.len, len + 28);
    assert_true(t_csums_ok(buf, p.len));
    len = t_build(buf, &u);
    p = (struct flt_pkt){ .data = buf, .len = len, .cap = len + 27, .iif = 0, .oif = 1 };
    assert_int_equal(flt_process(x.f, &p, FLT_FWD, 1000), FLT_DROP);
    t_fix_fini(&x);
}

/* RFC 1624's corner: an incremental update must not leave 0xffff where a
 * full sum gives 0x0000 (and the reverse), over many random rewrites */
static void test_incremental_checksums(void **state)
{
    (void)state;
    struct tfix x;
    assert_int_equal(t_fix_init(&x, 4096, masq), 0);
    srand(7);
    for (int i = 0; i < 2000; i++) {
        char a[32];
        snprintf(a, sizeof a, "10.%d.%d.%d", rand() % 256, rand() % 256, rand() % 254 + 1);
        struct tpkt tp = { .fam = 4, .proto = (uint8_t)(i % 2 ? 6 : 17), .src = a, .dst = "198.51.100.7",
                           .sport = (uint16_t)(rand() % 65535 + 1), .dport = (uint16_t)(rand() % 65535 + 1),
                           .flags = TH_SYN, .seq = (uint32_t)rand(), .win = (uint16_t)rand(), .wscale = -1,
                           .paylen = (uint32_t)(rand() % 40) };
        assert_int_equal(send_pkt(&x, &tp, 0, 1, 1000 + (uint64_t)i), FLT_ACCEPT);
        assert_string_equal(addr_of(buf, true), "203.0.113.1");
    }
    t_fix_fini(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_masquerade_v4),
        cmocka_unit_test(test_masquerade_v6),
        cmocka_unit_test(test_snat_collision),
        cmocka_unit_test(test_snat_range_exhausted),
        cmocka_unit_test(test_dnat),
        cmocka_unit_test(test_hairpin),
        cmocka_unit_test(test_icmp_error_v4),
        cmocka_unit_test(test_icmp_error_v6),
        cmocka_unit_test(test_own_errors),
        cmocka_unit_test(test_reject),
        cmocka_unit_test(test_incremental_checksums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
