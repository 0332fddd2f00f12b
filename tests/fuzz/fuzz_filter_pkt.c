/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_filter_pkt.c: libFuzzer target over the filter's
 * per-packet path (flt_process at every hook, NAT, reject's replies) with
 * a ruleset that uses every action, over a small connection table that
 * fills up. After every input the table must still pass flt_ct_attach's
 * full check: no frame, however hostile, may leave it inconsistent.
 *
 * Input: byte 0 bits 0..3: clock advance (v * v * 100 ms); then records of
 *   byte  bits 0..1: iif/oif; bit 2: local delivery (input) rather than
 *         forward; bit 3: frame is IPv6 (ethertype); bits 4..7: unused
 *   byte  frame length (IP packet after a fixed Ethernet header)
 *   bytes the IP packet
 */
#include "services/filter/flt_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char rules[] =
    "set bl { type ipv4_addr; flags interval; elements = { 192.0.2.0/24, 198.18.0.0/15 } }\n"
    "chain prerouting {\n"
    "  iif wan tcp dport 8080 dnat to 10.0.0.10:80\n"
    "  iif wan udp dport 5353 dnat to 10.0.0.11\n"
    "  ip6 daddr 2001:db8::1 tcp dport 22 dnat to [fd00::22]:2222\n"
    "}\n"
    "chain input {\n"
    "  policy drop\n"
    "  ct state established,related accept\n"
    "  ct state invalid drop\n"
    "  tcp dport 23 reject with tcp reset\n"
    "  udp dport 9 reject\n"
    "  icmp type echo-request limit rate 5/second accept\n"
    "  icmpv6 type { echo-request, nd-neighbor-solicit } accept\n"
    "}\n"
    "chain forward {\n"
    "  policy drop\n"
    "  ct state established,related counter accept\n"
    "  ct state invalid drop\n"
    "  ip saddr @bl drop\n"
    "  tcp flags & (syn|rst) == syn tcp dport { 22, 80, 443, 1000-2000 } accept\n"
    "  udp dport 53 accept\n"
    "  iif lan accept\n"
    "  tcp dport 7 reject\n"
    "}\n"
    "chain postrouting {\n"
    "  ip saddr 10.0.0.0/24 ip daddr 10.0.0.10 oif lan snat to 10.0.0.1\n"
    "  oif wan ip saddr 10.0.0.0/8 snat to 203.0.113.5:2000-2003\n"
    "  oif wan masquerade\n"
    "}\n";

static struct flt *f;
static void *region;
static size_t region_size;
static uint64_t now = 1000;

static void setup(void)
{
    static struct flt_port ports[3];
    strcpy(ports[0].name, "lan");
    ports[0].has_v4 = ports[0].has_v6 = 1;
    memcpy(ports[0].v4, "\x0a\x00\x00\x01", 4);
    ports[0].v6[0] = 0xfd;
    ports[0].v6[15] = 1;
    strcpy(ports[1].name, "wan");
    ports[1].has_v4 = ports[1].has_v6 = 1;
    memcpy(ports[1].v4, "\xcb\x00\x71\x01", 4);
    ports[1].v6[0] = 0x20;
    ports[1].v6[1] = 0x01;
    ports[1].v6[15] = 1;
    strcpy(ports[2].name, "dmz"); /* no address: masquerade there fails */
    char err[256];
    struct flt_rules *r = flt_rules_compile(rules, sizeof rules - 1, ports, 3, err, sizeof err);
    if (!r)
        abort();
    region_size = flt_ct_region_size(32);
    region = aligned_alloc(64, (region_size + 63) & ~(size_t)63);
    if (!region || flt_ct_format(region, region_size, 32, 1) < 0)
        abort();
    f = flt_new(region, ports, 3, r);
    if (!f)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!f)
        setup();
    if (size < 1)
        return 0;
    now += (uint64_t)(data[0] & 15) * (data[0] & 15) * 100;
    size_t i = 1;
    while (i + 2 <= size) {
        uint8_t ctl = data[i], n = data[i + 1];
        i += 2;
        if (n > size - i)
            n = (uint8_t)(size - i);
        /* a frame in a buffer just its size, so that ASan sees any read
         * past it; reject may grow it up to cap */
        uint32_t cap = 14u + n + 64;
        uint8_t *fr = malloc(cap);
        if (!fr)
            abort();
        memcpy(fr, "\x02\0\0\0\0\x01\x02\0\0\0\0\x02", 12);
        fr[12] = (ctl & 8) ? 0x86 : 0x08;
        fr[13] = (ctl & 8) ? 0xdd : 0x00;
        memcpy(fr + 14, data + i, n);
        i += n;
        struct flt_pkt p = { .data = fr, .len = 14u + n, .cap = cap, .iif = ctl & 3, .oif = (ctl >> 1) & 3 };
        enum flt_hook hooks[3] = { FLT_PRE, (ctl & 4) ? FLT_INPUT : FLT_FWD, FLT_POST };
        for (int h = 0; h < ((ctl & 4) ? 2 : 3); h++)
            if (flt_process(f, &p, hooks[h], now) != FLT_ACCEPT)
                break;
        if (p.len > p.cap)
            abort();
        free(fr);
    }
    flt_ct_sweep(f, now, 8);
    if (flt_ct_attach(region, region_size) != 0)
        abort(); /* the table must stay adoptable */
    return 0;
}
