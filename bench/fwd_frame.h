/* SPDX-License-Identifier: MIT */
/*
 * bench/fwd_frame.h: what bench/forward's one-process reference forwarders
 * (tapfwd.c over TAP, xskfwd.c over AF_XDP) do to a frame: the least IPv4
 * forwarding, so that they pay per packet what a router must and no more.
 */
#ifndef BENCH_FWD_FRAME_H
#define BENCH_FWD_FRAME_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FWD_ETH_HLEN 14

/* Parse "aa:bb:cc:dd:ee:ff" into @m, or exit naming @prog and the argument. */
static inline void fwd_parse_mac(const char *prog, const char *s, uint8_t m[6])
{
    if (sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) {
        fprintf(stderr, "%s: \"%s\" is not a MAC address\n", prog, s);
        exit(2);
    }
}

/*
 * One IPv4 hop on the Ethernet frame @eth of @len bytes: TTL decremented
 * (incremental checksum, RFC 1624), destination MAC @dst, source MAC @src.
 * 0 to send it on; -1 to drop it (not IPv4, TTL 1, a runt).
 */
static inline int fwd_ipv4_hop(uint8_t *eth, size_t len, const uint8_t *dst, const uint8_t *src)
{
    uint8_t *ip = eth + FWD_ETH_HLEN;
    if (len < FWD_ETH_HLEN + 20 || eth[12] != 0x08 || eth[13] != 0x00 || (ip[0] >> 4) != 4 || ip[8] <= 1)
        return -1;
    ip[8]--;
    /* TTL is the high byte of its checksummed word: the sum gains 0x0100. */
    uint32_t sum = ((uint32_t)ip[10] << 8 | ip[11]) + 0x0100u;
    sum = (sum & 0xffffu) + (sum >> 16);
    ip[10] = (uint8_t)(sum >> 8);
    ip[11] = (uint8_t)sum;
    memcpy(eth, dst, 6);
    memcpy(eth + 6, src, 6);
    return 0;
}

#endif
