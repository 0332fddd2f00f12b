/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_fwd_gso.c: bench/fwd_gso.h, what bench/forward's floor
 * (xskfwd -s) does to a TSO sender's frames: a 64 KB-ish TCP aggregate with
 * a partial checksum, in pieces as AF_XDP hands it over, is cut into
 * MTU-sized segments whose payloads put back together are the original,
 * with sequence numbers, IP IDs, lengths and flags as Linux's TSO makes
 * them and checksums that verify (checked here against a plain RFC 1071
 * sum, byte pair by byte pair); a single frame's partial checksum is
 * completed, a good one kept and a bad one left bad.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bench/fwd_gso.h"

#define T_PAYLOAD 20000u
#define T_HLEN (14u + 20u + 32u) /* TCP with timestamps */
#define T_PIECE 1792u            /* 2 KB UMEM frames less the 256-byte headroom */

/* The Internet checksum of @n bytes, network order, the slow way. */
static uint32_t t_sum(uint32_t sum, const uint8_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i += 2)
        sum += (uint32_t)p[i] << 8 | (i + 1 < n ? p[i + 1] : 0);
    return sum;
}

static uint16_t t_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}

/* TCP over IPv4 packet @f (Ethernet first) verifies: IP header and TCP. */
static void t_verify(const uint8_t *f, uint32_t len)
{
    const uint8_t *ip = f + 14;
    uint32_t ihl = (ip[0] & 15u) * 4u, tot = (uint32_t)ip[2] << 8 | ip[3];
    assert_int_equal(14 + tot, len);
    assert_int_equal(t_fold(t_sum(0, ip, ihl)), 0xffff);
    uint8_t ph[12];
    memcpy(ph, ip + 12, 8);
    ph[8] = 0;
    ph[9] = ip[9];
    ph[10] = (uint8_t)((tot - ihl) >> 8);
    ph[11] = (uint8_t)(tot - ihl);
    assert_int_equal(t_fold(t_sum(t_sum(0, ph, 12), ip + ihl, tot - ihl)), 0xffff);
}

/* An aggregate as a TSO sender leaves it: @payload bytes of a pattern,
 * FIN|PSH|CWR|ACK set, the TCP checksum field the pseudo-header's sum. */
static uint8_t *t_aggregate(uint32_t payload, uint8_t flags)
{
    uint32_t len = T_HLEN + payload;
    uint8_t *f = calloc(1, len);
    assert_non_null(f);
    f[12] = 0x08;
    uint8_t *ip = f + 14, *th = ip + 20;
    ip[0] = 0x45;
    ip[2] = (uint8_t)((len - 14) >> 8);
    ip[3] = (uint8_t)(len - 14);
    ip[4] = 0xff; /* ID 0xfffe: it wraps */
    ip[5] = 0xfe;
    ip[6] = 0x40; /* DF */
    ip[8] = 64;
    ip[9] = FWD_IP_PROTO_TCP;
    memcpy(ip + 12, (uint8_t[]){10, 0, 1, 2, 10, 0, 2, 2}, 8);
    uint16_t c = (uint16_t)~t_fold(t_sum(0, ip, 20));
    ip[10] = (uint8_t)(c >> 8);
    ip[11] = (uint8_t)c;
    th[0] = 0x9c;
    th[2] = 0x14;
    th[3] = 0x51;
    memcpy(th + 4, (uint8_t[]){0xff, 0xff, 0xf0, 0x00}, 4); /* the sequence wraps too */
    th[12] = 8 << 4;
    th[13] = flags;
    for (uint32_t i = 20; i < 32; i++)
        th[i] = (uint8_t)(i * 7);
    for (uint32_t i = 0; i < payload; i++)
        f[T_HLEN + i] = (uint8_t)(i * 31 + i / 251);
    uint8_t ph[12];
    memcpy(ph, ip + 12, 8);
    ph[8] = 0;
    ph[9] = FWD_IP_PROTO_TCP;
    ph[10] = (uint8_t)((len - 34) >> 8);
    ph[11] = (uint8_t)(len - 34);
    uint16_t p = t_fold(t_sum(0, ph, 12));
    th[16] = (uint8_t)(p >> 8);
    th[17] = (uint8_t)p;
    return f;
}

static void test_fwd_gso_cut(void **state)
{
    (void)state;
    const uint8_t flags = 0x80 | 0x10 | 0x08 | 0x01; /* CWR ACK PSH FIN */
    uint8_t *agg = t_aggregate(T_PAYLOAD, flags);
    uint32_t total = T_HLEN + T_PAYLOAD;
    /* In pieces as the socket hands them over. */
    uint8_t *piece[32];
    uint32_t plen[32], n = 0;
    for (uint32_t off = 0; off < total; off += T_PIECE, n++) {
        plen[n] = total - off < T_PIECE ? total - off : T_PIECE;
        piece[n] = malloc(plen[n]);
        assert_non_null(piece[n]);
        memcpy(piece[n], agg + off, plen[n]);
    }
    uint32_t hlen = 0, mss = 0;
    uint32_t nseg = fwd_gso_plan(piece, plen, n, 1500, &hlen, &mss);
    assert_int_equal(hlen, T_HLEN);
    assert_int_equal(mss, 1448);
    assert_int_equal(nseg, (T_PAYLOAD + 1447) / 1448);
    uint8_t hdr[FWD_HDR_MAX], *got = malloc(T_PAYLOAD);
    assert_non_null(got);
    memcpy(hdr, piece[0], hlen);
    struct fwd_cursor c = {.p = piece, .len = plen, .n = n, .off = hlen};
    uint32_t at = 0;
    for (uint32_t k = 0; k < nseg; k++) {
        uint8_t f[2048];
        uint32_t len = fwd_gso_seg(f, hdr, hlen, mss, k, nseg, T_PAYLOAD, &c);
        uint32_t seg = k + 1 < nseg ? 1448 : T_PAYLOAD - k * 1448;
        assert_int_equal(len, T_HLEN + seg);
        t_verify(f, len);
        const uint8_t *ip = f + 14, *th = ip + 20;
        assert_int_equal((uint16_t)(ip[4] << 8 | ip[5]), (uint16_t)(0xfffe + k));
        uint32_t seq = (uint32_t)th[4] << 24 | (uint32_t)th[5] << 16 | (uint32_t)th[6] << 8 | th[7];
        assert_int_equal(seq, (uint32_t)(0xfffff000u + k * 1448u));
        uint8_t want = flags;
        if (k + 1 < nseg)
            want &= (uint8_t)~(0x08 | 0x01);
        if (k > 0)
            want &= (uint8_t)~0x80;
        assert_int_equal(th[13], want);
        assert_memory_equal(th + 20, agg + 14 + 40, 12); /* options kept */
        memcpy(got + at, f + T_HLEN, seg);
        at += seg;
    }
    assert_int_equal(at, T_PAYLOAD);
    assert_memory_equal(got, agg + T_HLEN, T_PAYLOAD);
    free(got);
    for (uint32_t i = 0; i < n; i++)
        free(piece[i]);
    free(agg);
}

static void test_fwd_gso_refused(void **state)
{
    (void)state;
    uint8_t *agg = t_aggregate(4000, 0x10);
    uint8_t *p[1] = {agg};
    uint32_t len[1] = {T_HLEN + 4000}, hlen, mss;
    assert_int_not_equal(fwd_gso_plan(p, len, 1, 1500, &hlen, &mss), 0);
    agg[14 + 9] = FWD_IP_PROTO_UDP;
    assert_int_equal(fwd_gso_plan(p, len, 1, 1500, &hlen, &mss), 0);
    agg[14 + 9] = FWD_IP_PROTO_TCP;
    agg[14 + 6] = 0x20; /* more fragments */
    assert_int_equal(fwd_gso_plan(p, len, 1, 1500, &hlen, &mss), 0);
    agg[14 + 6] = 0x40;
    len[0] -= 1; /* the IP length says more than came */
    assert_int_equal(fwd_gso_plan(p, len, 1, 1500, &hlen, &mss), 0);
    len[0] = 40; /* headers cut short */
    assert_int_equal(fwd_gso_plan(p, len, 1, 1500, &hlen, &mss), 0);
    free(agg);
}

static void test_fwd_csum_fix(void **state)
{
    (void)state;
    for (uint32_t payload = 0; payload < 40; payload += 7) { /* odd lengths too */
        uint8_t *f = t_aggregate(payload, 0x18);
        uint32_t len = T_HLEN + payload;
        fwd_csum_fix(f, len); /* partial: completed */
        t_verify(f, len);
        uint8_t keep[2] = {f[50], f[51]};
        fwd_csum_fix(f, len); /* good: kept */
        assert_memory_equal(f + 50, keep, 2);
        f[51] ^= 1; /* bad, and not partial: left for the receiver */
        fwd_csum_fix(f, len);
        assert_int_equal(f[51], keep[1] ^ 1);
        free(f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fwd_gso_cut),
        cmocka_unit_test(test_fwd_gso_refused),
        cmocka_unit_test(test_fwd_csum_fix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
