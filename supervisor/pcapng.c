/* SPDX-License-Identifier: MIT */
/* supervisor/pcapng.c: the pcapng writer of `ringrouter capture` (pcapng.h). */
#include "supervisor/pcapng.h"

#include <string.h>

static int put(FILE *f, const void *p, size_t n)
{
    return fwrite(p, 1, n, f) == n ? 0 : -1;
}

static int put32(FILE *f, uint32_t v)
{
    return put(f, &v, 4);
}

/* An option: code, length, value, padded to 4. */
static int opt(FILE *f, uint16_t code, const void *v, uint16_t len)
{
    static const uint8_t zero[4];
    uint16_t h[2] = {code, len};
    if (put(f, h, 4) < 0 || put(f, v, len) < 0)
        return -1;
    return put(f, zero, (4 - len % 4) % 4);
}

static uint32_t opt_size(size_t len)
{
    return 4 + (uint32_t)((len + 3) & ~(size_t)3);
}

int pcapng_shb(FILE *f)
{
    uint32_t len = 28;
    uint32_t b[7] = {0x0a0d0d0a, len, 0x1a2b3c4d, 0x00000001 /* version 1.0 */, 0xffffffff, 0xffffffff, len};
    return put(f, b, sizeof(b));
}

int pcapng_idb(FILE *f, const char *name, uint32_t snaplen)
{
    size_t nl = strnlen(name, 255);
    uint8_t tsresol = 9; /* nanoseconds */
    uint32_t len = 20 + opt_size(nl) + opt_size(1) + 4;
    uint16_t lt[2] = {PCAPNG_LINKTYPE_ETHERNET, 0};
    if (put32(f, 1) < 0 || put32(f, len) < 0 || put(f, lt, 4) < 0 || put32(f, snaplen) < 0)
        return -1;
    if (opt(f, 2 /* if_name */, name, (uint16_t)nl) < 0 || opt(f, 9 /* if_tsresol */, &tsresol, 1) < 0)
        return -1;
    if (put32(f, 0) < 0) /* opt_endofopt */
        return -1;
    return put32(f, len);
}

int pcapng_epb(FILE *f, uint32_t ifid, uint64_t ts_ns, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
               unsigned dir, const char *comment)
{
    static const uint8_t zero[4];
    size_t cl = comment ? strnlen(comment, 255) : 0;
    uint32_t pad = (4 - caplen % 4) % 4;
    uint32_t len = 32 + caplen + pad + 4;
    if (dir)
        len += opt_size(4);
    if (cl)
        len += opt_size(cl);
    if (put32(f, 6) < 0 || put32(f, len) < 0 || put32(f, ifid) < 0 || put32(f, (uint32_t)(ts_ns >> 32)) < 0 ||
        put32(f, (uint32_t)ts_ns) < 0 || put32(f, caplen) < 0 || put32(f, wirelen) < 0)
        return -1;
    if (put(f, data, caplen) < 0 || put(f, zero, pad) < 0)
        return -1;
    uint32_t flags = dir & 3;
    if (dir && opt(f, 2 /* epb_flags */, &flags, 4) < 0)
        return -1;
    if (cl && opt(f, 1 /* opt_comment */, comment, (uint16_t)cl) < 0)
        return -1;
    if (put32(f, 0) < 0)
        return -1;
    return put32(f, len);
}
