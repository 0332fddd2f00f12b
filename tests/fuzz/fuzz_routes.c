/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_routes.c: libFuzzer target over the route parsers of
 * rr-routes (services/routes/rn.c: rtnetlink; fpm.c: FPM frames) and the
 * supervisor's checks of what they emit (supervisor/routes_check.c), with
 * the records that pass applied to a real FIB pair as supervisor/routes.c
 * applies them.
 *
 * Input: byte 0 bit 0 chooses the source (0: netlink messages, 1: an FPM
 * byte stream); the rest is the bytes. Netlink input is cut into messages by
 * their own lengths and each is parsed alone.
 *
 * Oracles (an abort is a crash): a message the parser calls malformed
 * (RN_F_BAD) emits no record, and the FIBs are exactly as they were before
 * it; a record that comes out has an operation, family, length and
 * next-hop count within bounds before the supervisor's check sees it; a
 * record the check passes is one the FIB takes (no -EINVAL); FPM never
 * consumes more than it was given.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "services/routes/fpm.h"
#include "services/routes/rn.h"
#include "supervisor/routes.h"
#include "tables/fib6_write.h"
#include "tables/fib_write.h"

#define FZ_MAX 64

static struct sup_manifest M;
static struct fib F4;
static struct fib6 F6;
static struct rr_fpm FPM;
static struct rtc_rec R[FZ_MAX];
static unsigned NR;

static void fz_die(const char *what, const char *msg)
{
    fprintf(stderr, "fuzz_routes: %s: %s\n", what, msg);
    abort();
}

static void fz_init(void)
{
    static const char text[] = "[port a]\ndriver = tap\nifname = fz-a\naddress = 10.1.0.1/24\n"
                               "address6 = 2001:db8:1::1/64\n"
                               "[port b]\ndriver = tap\nifname = fz-b\naddress = 10.2.0.1/24\n"
                               "[routes]\ntable = 100\n";
    struct sup_manifest_err merr;
    if (sup_manifest_load_string("fz.ini", text, &M, &merr) != 0)
        fz_die("manifest", merr.msg);
    struct ipc_err err;
    int fd, rfd, fd6, rfd6;
    struct fib_params p = {.max_prefixes = 4096, .tbl8_groups = 256, .max_nh = 256};
    if (fib_create("fuzz-routes-fib", &p, &F4, &fd, &rfd, &err) != 0)
        fz_die("fib_create", err.msg);
    struct fib6_params p6 = {.max_prefixes = 4096, .tbl8_groups = 512, .max_nh = 256};
    if (fib6_create("fuzz-routes-fib6", &p6, rfd, &F6, &fd6, &rfd6, &err) != 0)
        fz_die("fib6_create", err.msg);
    rr_fpm_init(&FPM, -1, 100);
}

static int fz_emit(void *arg, const struct rtc_rec *r)
{
    (void)arg;
    if (NR >= FZ_MAX)
        return -1;
    if (r->op != RTC_ADD && r->op != RTC_DEL)
        fz_die("oracle", "a record with no route operation");
    if (r->family != AF_INET && r->family != AF_INET6)
        fz_die("oracle", "a record of another family");
    if (r->plen > (r->family == AF_INET ? 32 : 128) || r->nnh > RTC_NH_MAX || (r->op == RTC_ADD && r->nnh == 0))
        fz_die("oracle", "a record out of bounds");
    R[NR++] = *r;
    return 0;
}

static void fz_counts(uint64_t *out)
{
    struct fib_stats a, b;
    fib_get_stats(&F4, &a);
    fib6_get_stats(&F6, &b);
    out[0] = a.prefixes;
    out[1] = a.gen;
    out[2] = b.prefixes;
    out[3] = b.gen;
}

/* What supervisor/routes.c does with a record, less its bookkeeping. */
static void fz_apply(const struct rtc_rec *r)
{
    int port;
    char why[200];
    if (sup_routes_check(&M, r, &port, why, sizeof(why)) != SUP_RCK_OK)
        return;
    int ret;
    if (r->family == AF_INET) {
        uint32_t a, g;
        memcpy(&a, r->dst, 4);
        memcpy(&g, r->nh[0].gw, 4);
        struct fib_nh nh = {.gw = ntohl(g), .port = (uint16_t)port};
        ret = r->op == RTC_DEL ? fib_del(&F4, ntohl(a), r->plen) : fib_replace(&F4, ntohl(a), r->plen, &nh);
    } else {
        struct fib6_nh nh = {.port = (uint16_t)port};
        memcpy(nh.gw, r->nh[0].gw, 16);
        ret = r->op == RTC_DEL ? fib6_del(&F6, r->dst, r->plen) : fib6_replace(&F6, r->dst, r->plen, &nh);
    }
    if (ret == -EINVAL)
        fz_die("oracle", "the FIB refused a record the check passed as invalid");
}

static int fz_flush4(void *arg, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    (void)nh;
    uint64_t *k = arg;
    if (k[0] < FZ_MAX)
        k[1 + k[0]++] = (uint64_t)addr << 8 | len;
    return 0;
}

struct fz_del6 {
    uint8_t a[FZ_MAX][16];
    uint8_t l[FZ_MAX];
    unsigned n;
};

static int fz_flush6(void *arg, const uint8_t *addr, unsigned len, const struct fib6_nh *nh)
{
    (void)nh;
    struct fz_del6 *c = arg;
    if (c->n < FZ_MAX) {
        memcpy(c->a[c->n], addr, 16);
        c->l[c->n++] = (uint8_t)len;
    }
    return 0;
}

/* Back to empty FIBs, so that one input's routes do not fill them for the next. */
static void fz_reset(void)
{
    for (;;) {
        uint64_t k[1 + FZ_MAX] = {0};
        fib_iterate(&F4, fz_flush4, k);
        if (!k[0])
            break;
        for (uint64_t i = 0; i < k[0]; i++)
            fib_del(&F4, (uint32_t)(k[1 + i] >> 8), (unsigned)(k[1 + i] & 63));
    }
    for (;;) {
        static struct fz_del6 c;
        c.n = 0;
        fib6_iterate(&F6, fz_flush6, &c);
        if (!c.n)
            break;
        for (unsigned i = 0; i < c.n; i++)
            fib6_del(&F6, c.a[i], c.l[i]);
    }
    fib_reclaim(&F4);
    fib6_reclaim(&F6);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    if (!ready) {
        fz_init();
        ready = true;
    }
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t left = size - 1;
    struct rn_parser ps = {.table = 100};
    if (data[0] & 1) {
        FPM.have = 0;
        NR = 0;
        uint64_t before[4], after[4];
        fz_counts(before);
        long used = rr_fpm_frames(&FPM, p, left, fz_emit, NULL);
        if (used > (long)left)
            fz_die("oracle", "FPM consumed more than it was given");
        if (used < 0) {
            fz_counts(after);
            if (memcmp(before, after, sizeof(before)) != 0)
                fz_die("oracle", "a malformed FPM frame changed the FIB");
        }
        for (unsigned i = 0; i < NR; i++)
            fz_apply(&R[i]);
    } else {
        while (left > 0) {
            size_t mlen = left;
            if (left >= sizeof(struct nlmsghdr)) {
                uint32_t l;
                memcpy(&l, p, 4);
                if (l >= sizeof(struct nlmsghdr) && l <= left)
                    mlen = NLMSG_ALIGN(l) <= left ? NLMSG_ALIGN(l) : l;
            }
            NR = 0;
            uint64_t before[4], after[4];
            fz_counts(before);
            unsigned f = rn_parse(&ps, p, mlen, fz_emit, NULL, NULL);
            if (f & RN_F_BAD) {
                if (NR)
                    fz_die("oracle", "a malformed message emitted a record");
                fz_counts(after);
                if (memcmp(before, after, sizeof(before)) != 0)
                    fz_die("oracle", "a malformed message changed the FIB");
            }
            for (unsigned i = 0; i < NR; i++)
                fz_apply(&R[i]);
            p += mlen;
            left -= mlen;
        }
    }
    fz_reset();
    return 0;
}
