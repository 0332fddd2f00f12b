/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_tap_validate.c: the TAP driver's checks of the virtio-net
 * header (drivers/tap/vnet.c): short frames, bad GSO, impossible checksum
 * offsets are refused by reason; good frames, GSO or not, pass; the wire
 * header converts both ways.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "drivers/tap/vnet.h"

/* A TCPv4 GSO segment as a TAP hands it over: Ethernet + IPv4 + TCP headers,
 * checksum offload, MSS 1448. */
static struct ipc_vnet t_tso4(void)
{
    return (struct ipc_vnet){
        .flags = TAP_VNET_F_NEEDS_CSUM,
        .gso_type = TAP_VNET_GSO_TCPV4,
        .hdr_len = 66,
        .gso_size = 1448,
        .csum_start = 34,
        .csum_offset = 16,
    };
}

static void test_tap_validate_good(void **state)
{
    (void)state;
    struct ipc_vnet none = {0};
    assert_int_equal(tap_vnet_check(&none, 60), TAP_VNET_OK);
    assert_int_equal(tap_vnet_check(&none, 14), TAP_VNET_OK);
    assert_int_equal(tap_vnet_check(&none, 1514), TAP_VNET_OK);
    struct ipc_vnet v = t_tso4();
    assert_int_equal(tap_vnet_check(&v, 65000), TAP_VNET_OK);
    assert_int_equal(tap_vnet_check(&v, TAP_FRAME_MAX), TAP_VNET_OK);
    v.gso_type |= TAP_VNET_GSO_ECN;
    assert_int_equal(tap_vnet_check(&v, 65000), TAP_VNET_OK);
    /* A checksum-offloaded UDP datagram, no GSO: field at 34 + 6, 2 bytes. */
    struct ipc_vnet udp = {.flags = TAP_VNET_F_NEEDS_CSUM, .csum_start = 34, .csum_offset = 6};
    assert_int_equal(tap_vnet_check(&udp, 42), TAP_VNET_OK);
    /* TCPv6 and USO. */
    struct ipc_vnet v6 = {.flags = TAP_VNET_F_NEEDS_CSUM, .gso_type = TAP_VNET_GSO_TCPV6, .hdr_len = 86,
                          .gso_size = 1428, .csum_start = 54, .csum_offset = 16};
    assert_int_equal(tap_vnet_check(&v6, 30000), TAP_VNET_OK);
    struct ipc_vnet uso = {.flags = TAP_VNET_F_NEEDS_CSUM, .gso_type = TAP_VNET_GSO_UDP_L4, .hdr_len = 42,
                           .gso_size = 1472, .csum_start = 34, .csum_offset = 6};
    assert_int_equal(tap_vnet_check(&uso, 20000), TAP_VNET_OK);
}

static void test_tap_validate_short(void **state)
{
    (void)state;
    struct tap_vnet_hdr h;
    memset(&h, 0, sizeof(h));
    struct ipc_vnet v;
    /* Shorter than the vnet header itself. */
    assert_int_equal(tap_vnet_rx(&h, 0, &v), TAP_VNET_SHORT);
    assert_int_equal(tap_vnet_rx(&h, 11, &v), TAP_VNET_SHORT);
    /* A header and nothing, or less than an Ethernet header, after it. */
    assert_int_equal(tap_vnet_rx(&h, 12, &v), TAP_VNET_SHORT);
    assert_int_equal(tap_vnet_rx(&h, 12 + 13, &v), TAP_VNET_SHORT);
    assert_int_equal(tap_vnet_rx(&h, 12 + 14, &v), TAP_VNET_OK);
    struct ipc_vnet none = {0};
    assert_int_equal(tap_vnet_check(&none, 0), TAP_VNET_SHORT);
    assert_int_equal(tap_vnet_check(&none, TAP_FRAME_MAX + 1), TAP_VNET_LONG);
}

static void test_tap_validate_bad_gso(void **state)
{
    (void)state;
    struct ipc_vnet v = t_tso4();
    /* Too short for Ethernet + IPv4 + TCP. */
    assert_int_equal(tap_vnet_check(&v, 53), TAP_VNET_BAD_GSO);
    v.hdr_len = 0;
    v.csum_start = 0;
    v.csum_offset = 0;
    assert_int_equal(tap_vnet_check(&v, 53), TAP_VNET_BAD_GSO);
    assert_int_equal(tap_vnet_check(&v, 54), TAP_VNET_OK);
    /* Shorter than its own hdr_len. */
    v = t_tso4();
    assert_int_equal(tap_vnet_check(&v, 65), TAP_VNET_BAD_GSO);
    assert_int_equal(tap_vnet_check(&v, 66), TAP_VNET_OK);
    /* TCPv6 needs a 40-byte IP header. */
    struct ipc_vnet v6 = {.gso_type = TAP_VNET_GSO_TCPV6, .gso_size = 1000};
    assert_int_equal(tap_vnet_check(&v6, 14 + 40 + 19), TAP_VNET_BAD_GSO);
    assert_int_equal(tap_vnet_check(&v6, 14 + 40 + 20), TAP_VNET_OK);
    /* GSO without a segment size. */
    v = t_tso4();
    v.gso_size = 0;
    assert_int_equal(tap_vnet_check(&v, 9000), TAP_VNET_BAD_GSO);
    /* Unknown GSO types, and ECN on no GSO type. */
    v = t_tso4();
    v.gso_type = 2;
    assert_int_equal(tap_vnet_check(&v, 9000), TAP_VNET_BAD_GSO);
    v.gso_type = 0x7f;
    assert_int_equal(tap_vnet_check(&v, 9000), TAP_VNET_BAD_GSO);
    struct ipc_vnet ecn = {.gso_type = TAP_VNET_GSO_ECN};
    assert_int_equal(tap_vnet_check(&ecn, 100), TAP_VNET_BAD_GSO);
}

static void test_tap_validate_bad_csum(void **state)
{
    (void)state;
    struct ipc_vnet v = {.flags = TAP_VNET_F_NEEDS_CSUM, .csum_start = 34, .csum_offset = 16};
    /* The 2-byte field must end inside the frame: 34 + 16 + 2 = 52. */
    assert_int_equal(tap_vnet_check(&v, 52), TAP_VNET_OK);
    assert_int_equal(tap_vnet_check(&v, 51), TAP_VNET_BAD_CSUM);
    v.csum_start = 0xffff;
    v.csum_offset = 0xffff; /* no 16-bit overflow either */
    assert_int_equal(tap_vnet_check(&v, 60000), TAP_VNET_BAD_CSUM);
    v.csum_start = 1500;
    v.csum_offset = 6;
    assert_int_equal(tap_vnet_check(&v, 1500), TAP_VNET_BAD_CSUM);
    /* Without NEEDS_CSUM the offsets mean nothing and are not checked. */
    v.flags = TAP_VNET_F_DATA_VALID;
    assert_int_equal(tap_vnet_check(&v, 1500), TAP_VNET_OK);
    /* A GSO frame with a bad checksum offset is refused too. */
    struct ipc_vnet g = t_tso4();
    g.csum_offset = 40000;
    assert_int_equal(tap_vnet_check(&g, 20000), TAP_VNET_BAD_CSUM);
}

static void test_tap_validate_wire(void **state)
{
    (void)state;
    /* Little-endian on the wire, whatever the fields hold. */
    const uint8_t raw[12] = {1, 4, 86, 0, 0x94, 0x05, 54, 0, 16, 0, 0, 0};
    struct tap_vnet_hdr h;
    memcpy(&h, raw, sizeof(h));
    struct ipc_vnet v;
    assert_int_equal(tap_vnet_rx(&h, 12 + 5000, &v), TAP_VNET_OK);
    assert_int_equal(v.flags, 1);
    assert_int_equal(v.gso_type, TAP_VNET_GSO_TCPV6);
    assert_int_equal(v.hdr_len, 86);
    assert_int_equal(v.gso_size, 1428);
    assert_int_equal(v.csum_start, 54);
    assert_int_equal(v.csum_offset, 16);
    struct tap_vnet_hdr back;
    memset(&back, 0xaa, sizeof(back));
    tap_vnet_to_wire(&v, &back);
    assert_memory_equal(&back, raw, sizeof(raw));
    /* The header is read before the checks: a bad one is still converted. */
    const uint8_t bad[12] = {1, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0};
    memcpy(&h, bad, sizeof(h));
    assert_int_equal(tap_vnet_rx(&h, 12 + 100, &v), TAP_VNET_BAD_GSO);
    assert_int_equal(v.csum_start, 0xffff);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tap_validate_good),
        cmocka_unit_test(test_tap_validate_short),
        cmocka_unit_test(test_tap_validate_bad_gso),
        cmocka_unit_test(test_tap_validate_bad_csum),
        cmocka_unit_test(test_tap_validate_wire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
