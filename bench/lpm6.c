/* SPDX-License-Identifier: MIT */
/*
 * bench/lpm6.c: bench/lpm6's harness and our side: lookups per second of
 * our IPv6 FIB (tables/fib6.h) against DPDK's rte_lpm6 (bench/lpm6_rte.c)
 * with the same prefixes, the same next hops and the same addresses, in the
 * same process and the same run.
 *
 * Table: 200,000 distinct prefixes, lengths drawn from a fixed histogram
 * shaped like today's IPv6 default-free zone (t_len_hist below), placed the
 * way the DFZ's are (t_gen_prefixes): allocations (/19../32) in the RIRs'
 * blocks, longer prefixes mostly inside a shorter one already in the table
 * (an allocation's more-specifics, skewed towards its low-numbered subnets),
 * the rest in a few dense PI blocks; plus ::/0. Next hop one of 64 at random;
 * added in random order to both. Our FIB gets next hop k as {gateway
 * fe80::(k+1), port k % 4}; rte_lpm6 gets k itself; our answer (an index
 * into our next-hop table) maps back to k through the gateway, so the two
 * are compared for every looked-up address.
 *
 * Lookups: 4M addresses (64 MB), 7 in 8 a random address inside a random
 * prefix of the table (every prefix as likely: the cache-hostile case), 1 in
 * 8 uniform in 2000::/3. Streamed through each variant in turn:
 *   single   fib6_lookup()             vs rte_lpm6_lookup()
 *   burst 32 fib6_lookup_burst(32)     vs rte_lpm6_lookup_bulk_func(32)  <- the ratio
 *   burst 64 fib6_lookup_burst(64)     vs rte_lpm6_lookup_bulk_func(64)
 * Each adds every result (next hop or miss) into a sink, so no lookup is
 * optimised away. Each pair runs on 256K-address chunks, ours and theirs
 * back to back on the same chunk (alternating which goes first), so noise
 * from other processes hits both; a run's ratio is the median of its
 * per-chunk ratios, and the table gives medians and min - max over the
 * runs. The harness's own ceiling (the same loop with a lookup that only
 * reads the address) is measured too: every lookup rate must sit well
 * below it, or the loop, not the lookup, is being timed.
 *
 * Before timing, every lookup address, the first and last address of every
 * prefix, and 1M addresses uniform over all 2^128 are looked up in both and
 * compared: any difference fails the benchmark.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/stats.h"
#include "tables/fib6_write.h"

/* bench/lpm6_rte.c (declared there too: one file per side). */
int lpm6_rte_init(unsigned mem_mb, char *why, size_t whylen);
void *lpm6_rte_create(uint32_t max_rules, uint32_t tbl8s, char *why, size_t whylen);
int lpm6_rte_add(void *h, const uint8_t *ip, unsigned depth, uint32_t nh);
void lpm6_rte_lookup_all(void *h, const uint8_t (*a)[16], size_t n, uint32_t *out, uint32_t miss);
uint64_t lpm6_rte_run_single(void *h, const uint8_t (*a)[16], size_t n);
uint64_t lpm6_rte_run_bulk(void *h, const uint8_t (*a)[16], size_t n, unsigned batch);
void lpm6_rte_fini(void *h);

#define NH_COUNT 64u
#define MAX_RUNS 15u
#define MISS 0xffffffffu
#define CHUNK (1u << 18) /* addresses per timed chunk */
#define UNIFORM (1u << 20) /* extra addresses for the check, uniform over 2^128 */

/*
 * Prefix lengths per 100,000 prefixes: our own round numbers, approximately
 * the shape of the IPv6 DFZ in the public BGP table reports of 2024-25
 * (about 200-230k prefixes): half are /48, then /32 (13%), /44 (8%), /40
 * (6%), /29 (4%), /36 (3%), /46-47 (5%), the other lengths from /28 to /47
 * about 9%, well under 1% shorter than /28, and a few /49../64 (most
 * networks filter them). /128 host routes (0.15%) are not in the DFZ, but a
 * router's FIB holds its own and its neighbours', so the deepest chain is
 * built and checked. /48 takes whatever the others leave; one ::/0.
 */
static const struct {
    unsigned len, per100k;
} t_len_hist[] = {
    {8, 1},     {12, 2},    {16, 8},     {19, 20},   {20, 30},   {22, 40},    {24, 60},   {28, 120},
    {29, 4200}, {30, 500},  {31, 400},   {32, 13000}, {33, 900},  {34, 1200},  {35, 700},  {36, 3000},
    {37, 500},  {38, 900},  {39, 500},   {40, 6000}, {41, 500},  {42, 1300},  {43, 500},  {44, 8000},
    {45, 1200}, {46, 2500}, {47, 2600},  {52, 60},   {56, 250},  {60, 30},    {64, 300},  {96, 20},
    {127, 10},  {128, 150},
};
#define NHIST (sizeof(t_len_hist) / sizeof(t_len_hist[0]))

static uint64_t t_rng = 0x9e3779b97f4a7c15ull;

static uint64_t t_rand(void)
{
    /* splitmix64 */
    uint64_t z = (t_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct t6 {
    uint64_t hi, lo;
};

static struct t6 t6_mask(struct t6 a, unsigned len)
{
    a.hi &= len == 0 ? 0 : len >= 64 ? ~0ull : ~0ull << (64 - len);
    a.lo &= len <= 64 ? 0 : len >= 128 ? ~0ull : ~0ull << (128 - len);
    return a;
}

static void t6_bytes(struct t6 a, uint8_t *b)
{
    for (unsigned i = 0; i < 8; i++) {
        b[i] = (uint8_t)(a.hi >> (56 - 8 * i));
        b[8 + i] = (uint8_t)(a.lo >> (56 - 8 * i));
    }
}

struct t_pfx {
    struct t6 a;
    uint8_t len, nh;
};

/* The RIRs' blocks (top 16 bits; the next 4 bits are drawn) and a few dense PI blocks (/32s). */
static const uint64_t t_rir[] = {0x2001, 0x2400, 0x2404, 0x2600, 0x2604, 0x2800, 0x2a00, 0x2a02, 0x2a10, 0x2c00};
static const uint64_t t_pi[] = {0x20010678, 0x2001067c, 0x2a0e0b00, 0x2a0c9a40, 0x2a0f8000, 0x2a0ee000,
                                0x26200000, 0x26020000, 0x24050000, 0x24060000, 0x28030000, 0x2a0b4000};

/* An address for a /@len: see the top of the file. */
static struct t6 t_place(unsigned len, const struct t_pfx *p, uint32_t np)
{
    struct t6 r = {t_rand(), t_rand()};
    if (len <= 32 || np == 0) {
        r.hi = t_rir[t_rand() % 10] << 48 | (r.hi & 0x000fffffffffffffull);
        return r;
    }
    if (t_rand() % 4 != 0) {
        /* Inside a shorter prefix of 19 bits or more (an allocation or a
         * shorter more-specific), at a subnet number skewed low. */
        const struct t_pfx *q = NULL;
        for (int tries = 0; tries < 16 && !q; tries++) {
            const struct t_pfx *c = &p[t_rand() % np];
            if (c->len >= 19 && c->len < len)
                q = c;
        }
        if (q) {
            unsigned bits = len - q->len, sh = 128 - len;
            uint64_t sub = t_rand() % 2 ? t_rand() % 16 : t_rand();
            if (bits < 64)
                sub &= (1ull << bits) - 1;
            struct t6 a = q->a;
            if (sh >= 64) {
                a.hi |= sub << (sh - 64);
            } else {
                a.lo |= sub << sh;
                if (sh > 0)
                    a.hi |= sub >> (64 - sh);
            }
            return a;
        }
    }
    r.hi = t_pi[t_rand() % 12] << 32 | (r.hi & 0xffffffffull);
    return r;
}

/* Distinct prefixes following t_len_hist scaled to @n, in random order. */
static struct t_pfx *t_gen_prefixes(uint32_t n, uint32_t *hist)
{
    memset(hist, 0, 129 * sizeof(*hist));
    uint32_t fixed = 1;
    hist[0] = 1;
    for (unsigned i = 0; i < NHIST; i++) {
        hist[t_len_hist[i].len] = (uint32_t)((uint64_t)t_len_hist[i].per100k * n / 100000u);
        fixed += hist[t_len_hist[i].len];
    }
    if (fixed > n) {
        fprintf(stderr, "bench_lpm6: --prefixes %u too small for the histogram\n", n);
        exit(2);
    }
    hist[48] += n - fixed;
    struct t_pfx *p = calloc(n, sizeof(*p));
    uint64_t hmask = 1;
    while (hmask < (uint64_t)n * 2)
        hmask <<= 1;
    struct t_pfx *set = calloc(hmask, sizeof(*set)); /* len + 1 in .nh: 0 = empty */
    hmask--;
    if (!p || !set) {
        fprintf(stderr, "bench_lpm6: out of memory\n");
        exit(1);
    }
    uint32_t k = 0;
    /* Shortest first, so that longer ones can nest in them. */
    for (unsigned l = 0; l <= 128; l++) {
        for (uint32_t i = 0, tries = 0; i < hist[l]; tries++) {
            if (tries > 100 * hist[l] + 1000) {
                fprintf(stderr, "bench_lpm6: cannot find %u distinct /%u\n", hist[l], l);
                exit(1);
            }
            struct t6 a = t6_mask(t_place(l, p, k), l);
            uint64_t h = ((a.hi * 0x9e3779b97f4a7c15ull) ^ (a.lo * 0xc2b2ae3d27d4eb4full) ^ l) >> 17;
            bool dup = false;
            for (;; h++) {
                struct t_pfx *s = &set[h & hmask];
                if (s->nh == 0) {
                    *s = (struct t_pfx){a, (uint8_t)l, (uint8_t)(l + 1)};
                    break;
                }
                if (s->a.hi == a.hi && s->a.lo == a.lo && s->len == l) {
                    dup = true;
                    break;
                }
            }
            if (dup)
                continue;
            p[k].a = a;
            p[k].len = (uint8_t)l;
            p[k].nh = (uint8_t)(t_rand() % NH_COUNT);
            k++;
            i++;
        }
    }
    free(set);
    for (uint32_t i = n - 1; i > 0; i--) { /* Fisher-Yates: add in random order */
        uint32_t j = (uint32_t)(t_rand() % (i + 1));
        struct t_pfx t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    return p;
}

static uint32_t t_hist_sum(const uint32_t *hist, unsigned lo, unsigned hi)
{
    uint32_t s = 0;
    for (unsigned l = lo; l <= hi; l++)
        s += hist[l];
    return s;
}

/* ---- our side: the loops, with our lookups inlined ---- */

static uint64_t ours_single(const struct fib6 *fib, const uint8_t (*a)[16], size_t n)
{
    uint64_t sink = 0;
    for (size_t i = 0; i < n; i++)
        sink += fib6_lookup(fib, a[i]);
    return sink;
}

static uint64_t ours_bulk(const struct fib6 *fib, const uint8_t (*a)[16], size_t n, unsigned batch)
{
    uint64_t sink = 0;
    uint32_t out[64];
    size_t i = 0;
    for (; i + batch <= n; i += batch) {
        fib6_lookup_burst(fib, a + i, out, batch);
        for (unsigned k = 0; k < batch; k++)
            sink += out[k];
    }
    for (; i < n; i++)
        sink += fib6_lookup(fib, a[i]);
    return sink;
}

/* The harness's ceiling: the same loop, with a "lookup" that only reads the address. */
static uint64_t harness_only(const uint8_t (*a)[16], size_t n)
{
    uint64_t sink = 0;
    for (size_t i = 0; i < n; i++)
        sink += fib6_idx24(a[i]) ^ a[i][15];
    return sink;
}

/* How many table loads a lookup of @a makes (1: tbl24 alone). */
static unsigned t_loads(const struct fib6 *fib, const uint8_t *a)
{
    uint32_t e = ipc_ld_rlx(&fib->m.tbl24[fib6_idx24(a)]);
    unsigned n = 1;
    for (unsigned b = 3; (e & FIB6_E_EXT) && b < 16; b++, n++)
        e = ipc_ld_rlx(&fib->m.tbl8[(size_t)(e & FIB6_E_IDX) << 8 | a[b]]);
    return n;
}

enum { V_OURS_SINGLE, V_RTE_SINGLE, V_OURS_B32, V_RTE_B32, V_OURS_B64, V_RTE_B64, V_HARNESS, V_MAX };

static const char *const v_name[V_MAX] = {
    [V_OURS_SINGLE] = "ours     fib6_lookup (single)",       [V_RTE_SINGLE] = "rte_lpm6 rte_lpm6_lookup (single)",
    [V_OURS_B32] = "ours     fib6_lookup_burst 32",          [V_RTE_B32] = "rte_lpm6 lookup_bulk_func 32",
    [V_OURS_B64] = "ours     fib6_lookup_burst 64",          [V_RTE_B64] = "rte_lpm6 lookup_bulk_func 64",
    [V_HARNESS] = "harness ceiling (no lookup)",
};

static volatile uint64_t t_sink;

/* Run variant @v once over the addresses; returns lookups per second. */
static double t_measure(int v, const struct fib6 *fib, void *rte, const uint8_t (*a)[16], size_t n)
{
    double t0 = t_now();
    switch (v) {
    case V_OURS_SINGLE:
        t_sink += ours_single(fib, a, n);
        break;
    case V_RTE_SINGLE:
        t_sink += lpm6_rte_run_single(rte, a, n);
        break;
    case V_OURS_B32:
        t_sink += ours_bulk(fib, a, n, 32);
        break;
    case V_RTE_B32:
        t_sink += lpm6_rte_run_bulk(rte, a, n, 32);
        break;
    case V_OURS_B64:
        t_sink += ours_bulk(fib, a, n, 64);
        break;
    case V_RTE_B64:
        t_sink += lpm6_rte_run_bulk(rte, a, n, 64);
        break;
    case V_HARNESS:
        t_sink += harness_only(a, n);
        break;
    }
    return (double)n / (t_now() - t0);
}

static void t_usage(void)
{
    fprintf(stderr, "usage: bench_lpm6 [--prefixes N] [--lookups N] [--runs N] [--seed N]\n"
                    "  defaults: 200000 prefixes, 4194304 lookups per pass, 3 runs\n");
    exit(2);
}

int main(int argc, char **argv)
{
    uint32_t nprefix = 200000, runs = 3;
    size_t nlook = 4u << 20;
    for (int i = 1; i < argc; i += 2) { /* --name value pairs */
        if (i + 1 >= argc)
            t_usage();
        unsigned long long v = t_arg_num("bench_lpm6", argv[i], argv[i + 1]);
        if (!strcmp(argv[i], "--prefixes"))
            nprefix = (uint32_t)v;
        else if (!strcmp(argv[i], "--lookups"))
            nlook = (size_t)v;
        else if (!strcmp(argv[i], "--runs"))
            runs = (uint32_t)v;
        else if (!strcmp(argv[i], "--seed"))
            t_rng = v;
        else
            t_usage();
    }
    if (nprefix < 10000 || nlook < 4096 || runs < 1 || runs > MAX_RUNS)
        t_usage();
    nlook &= ~(size_t)63;

    uint32_t hist[129];
    struct t_pfx *pfx = t_gen_prefixes(nprefix, hist);

    /* Ours first: its group count sizes rte_lpm6 (the same trie shape needs the same groups). */
    struct ipc_err err = {{0}};
    struct fib6 fibw, fib;
    int fd, rfd;
    struct fib6_params fp = {.max_prefixes = nprefix + nprefix / 8, .tbl8_groups = nprefix + 65536, .max_nh = 256};
    if (fib6_create("bench-lpm6", &fp, -1, &fibw, &fd, &rfd, &err) != 0 ||
        fib6_attach(&fib, fd, rfd, 0, &err) != 0) {
        fprintf(stderr, "bench_lpm6: fib6: %s\n", err.msg);
        return 1;
    }
    double t0 = t_now();
    for (uint32_t i = 0; i < nprefix; i++) {
        struct fib6_nh nh = {.port = (uint16_t)(pfx[i].nh % 4)};
        nh.gw[0] = 0xfe;
        nh.gw[1] = 0x80;
        nh.gw[15] = (uint8_t)(pfx[i].nh + 1);
        uint8_t a[16];
        t6_bytes(pfx[i].a, a);
        int r = fib6_add(&fibw, a, pfx[i].len, &nh);
        if (r != 0) {
            fprintf(stderr, "bench_lpm6: fib6_add /%u: %s\n", pfx[i].len, strerror(-r));
            return 1;
        }
    }
    double load_ours = t_now() - t0;
    struct fib_stats st;
    fib6_get_stats(&fibw, &st);

    /* DPDK: if EAL cannot start, say exactly why and measure ours alone. */
    char why[256] = "";
    void *rte = NULL;
    uint32_t rte_tbl8s = st.tbl8_used + st.tbl8_used / 4 + 1024;
    unsigned mem_mb = 64 + (unsigned)((uint64_t)rte_tbl8s * 1024 / 1048576) + nprefix / 1000 + 256;
    if (lpm6_rte_init(mem_mb, why, sizeof(why)) == 0)
        rte = lpm6_rte_create(nprefix + nprefix / 8, rte_tbl8s, why, sizeof(why));
    if (!rte)
        fprintf(stderr, "bench_lpm6: rte_lpm6 unavailable: %s\n", why);
    double load_rte = 0;
    if (rte) {
        t0 = t_now();
        for (uint32_t i = 0; i < nprefix; i++) {
            uint8_t a[16];
            t6_bytes(pfx[i].a, a);
            int r = lpm6_rte_add(rte, a, pfx[i].len, pfx[i].nh);
            if (r != 0) {
                fprintf(stderr, "bench_lpm6: rte_lpm6_add /%u: %s\n", pfx[i].len, strerror(-r));
                return 1;
            }
        }
        load_rte = t_now() - t0;
    }

    /* Our next-hop index -> the k it was added as. */
    uint32_t idx2k[256];
    for (uint32_t i = 0; i < 256; i++) {
        struct fib6_nh nh = fib6_nh_at(&fib, i);
        idx2k[i] = nh.gw[0] == 0xfe && nh.gw[15] >= 1 && nh.gw[15] <= NH_COUNT ? nh.gw[15] - 1u : MISS - 1;
    }

    /* The lookup addresses, then for the check the first and last address of every prefix and UNIFORM more. */
    size_t ncheck = nlook + 2 * (size_t)nprefix + UNIFORM;
    uint8_t(*addr)[16] = malloc(ncheck * 16);
    uint32_t *o1 = malloc(ncheck * sizeof(uint32_t)), *o2 = malloc(ncheck * sizeof(uint32_t));
    if (!addr || !o1 || !o2) {
        fprintf(stderr, "bench_lpm6: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < nlook; i++) {
        struct t6 a = {t_rand(), t_rand()};
        if (t_rand() % 8 == 0) {
            a.hi = 0x2000000000000000ull | (a.hi >> 3); /* 2000::/3 */
        } else {
            const struct t_pfx *q = &pfx[t_rand() % nprefix];
            struct t6 m = t6_mask((struct t6){~0ull, ~0ull}, q->len);
            a = (struct t6){q->a.hi | (a.hi & ~m.hi), q->a.lo | (a.lo & ~m.lo)};
        }
        t6_bytes(a, addr[i]);
    }
    for (uint32_t i = 0; i < nprefix; i++) {
        struct t6 m = t6_mask((struct t6){~0ull, ~0ull}, pfx[i].len);
        t6_bytes(pfx[i].a, addr[nlook + 2 * i]);
        t6_bytes((struct t6){pfx[i].a.hi | ~m.hi, pfx[i].a.lo | ~m.lo}, addr[nlook + 2 * i + 1]);
    }
    for (size_t i = nlook + 2 * (size_t)nprefix; i < ncheck; i++)
        t6_bytes((struct t6){t_rand(), t_rand()}, addr[i]);

    /* Correctness: ours (mapped) == rte_lpm6's for every address; and what the lookups walk. */
    size_t mismatches = 0, hits = 0, loads = 0, deep[15] = {0};
    for (size_t i = 0; i < ncheck; i++) {
        uint32_t r = fib6_lookup(&fib, addr[i]);
        o1[i] = r == FIB6_MISS ? MISS : r < 256 ? idx2k[r] : MISS - 1;
        if (i < nlook) {
            unsigned l = t_loads(&fib, addr[i]);
            hits += r != FIB6_MISS;
            loads += l;
            deep[l]++;
        }
    }
    if (rte) {
        lpm6_rte_lookup_all(rte, (const uint8_t(*)[16])addr, ncheck, o2, MISS);
        for (size_t i = 0; i < ncheck; i++) {
            if (o1[i] != o2[i]) {
                if (mismatches < 5) {
                    fprintf(stderr, "bench_lpm6: MISMATCH ");
                    for (unsigned b = 0; b < 16; b += 2)
                        fprintf(stderr, "%02x%02x%s", addr[i][b], addr[i][b + 1], b < 14 ? ":" : "");
                    fprintf(stderr, ": ours %d, rte_lpm6 %d\n", (int)o1[i], (int)o2[i]);
                }
                mismatches++;
            }
        }
    }
    free(o1);
    free(o2);

    uint32_t mid = t_hist_sum(hist, 33, 47) - hist[40] - hist[44], low = t_hist_sum(hist, 19, 31) - hist[29];
    printf("bench/lpm6: %u prefixes (DFZ-like lengths: /48 %.1f%%, /32 %.1f%%, /44 %.1f%%, /40 %.1f%%, /29 %.1f%%,\n"
           "  /33-/47 other %.1f%%, /19-/31 other %.1f%%, %u shorter, /49-/64 %.2f%%, /65-/128 %.2f%%),\n"
           "  %u next hops, %zu lookups per pass (7/8 inside a random prefix, 1/8 uniform in 2000::/3)\n",
           nprefix, 100.0 * hist[48] / nprefix, 100.0 * hist[32] / nprefix, 100.0 * hist[44] / nprefix,
           100.0 * hist[40] / nprefix, 100.0 * hist[29] / nprefix, 100.0 * mid / nprefix, 100.0 * low / nprefix,
           t_hist_sum(hist, 0, 18), 100.0 * t_hist_sum(hist, 49, 64) / nprefix,
           100.0 * t_hist_sum(hist, 65, 128) / nprefix, NH_COUNT, nlook);
    struct stat fst;
    double resident = fstat(fd, &fst) == 0 ? (double)fst.st_blocks * 512 / 1048576.0 : -1;
    printf("load: ours %.2f s (%u prefixes, %u groups = %.0f MB; region %.0f MB of address space, %.0f MB in memory,"
           " tbl24's 64 MB included); rte_lpm6 %.2f s (%u tbl8s configured)\n",
           load_ours, st.prefixes, st.tbl8_used, st.tbl8_used / 1024.0, st.region_bytes / 1048576.0, resident,
           load_rte, rte ? rte_tbl8s : 0);
    printf("lookup addresses with a route: %.1f%%; table loads per lookup: mean %.2f (", 100.0 * hits / nlook,
           (double)loads / nlook);
    for (unsigned l = 1; l < 15; l++)
        if (deep[l])
            printf("%s%u: %.1f%%", l > 1 ? ", " : "", l, 100.0 * deep[l] / nlook);
    printf(")\n");
    if (rte)
        printf("check: %zu addresses (the lookups, first/last of every prefix, %u uniform over 2^128), "
               "ours == rte_lpm6: %s (%zu mismatches)\n",
               ncheck, UNIFORM, mismatches ? "NO" : "yes", mismatches);
    else
        printf("check: skipped, no rte_lpm6 (%s)\n", why);
    fflush(stdout);
    if (mismatches) {
        fprintf(stderr, "bench_lpm6: FAILED: %zu lookups differ\n", mismatches);
        return 1;
    }

    const uint8_t(*look)[16] = (const uint8_t(*)[16])addr;
    /* Warm-up. Our reader's mapping is a second, read-only mapping of the
     * memfd: each of its pages takes a minor fault on its first touch (rte_lpm6's
     * tables were touched when EAL zeroed them). Touch every page in use (as
     * a router does in its first seconds), then one untimed pass each. */
    for (size_t o = 0; o < ((size_t)1 << 24); o += 1024)
        t_sink += ipc_ld_rlx(&fib.m.tbl24[o]);
    for (size_t o = 0; o < (size_t)st.tbl8_used * 256; o += 1024) /* no deletes: the groups in use are 0..used-1 */
        t_sink += ipc_ld_rlx(&fib.m.tbl8[o]);
    for (int v = 0; v < V_MAX; v++)
        if (rte || v == V_OURS_SINGLE || v == V_OURS_B32 || v == V_OURS_B64 || v == V_HARNESS)
            t_measure(v, &fib, rte, look, nlook);

    /*
     * Pairs (ours, theirs). In every run, each pair walks the address array in
     * chunks of CHUNK addresses, ours and theirs back to back on the same
     * chunk (which goes first alternates): noise from other processes lands
     * on both sides of a chunk. A run's rate is the median of its chunk rates;
     * its ratio, the median of the per-chunk ratios. The harness runs alone.
     */
    static const struct {
        const char *metric;
        int ours, theirs;
    } pairs[] = {
        {"lpm6_vs_rte_lpm6_single", V_OURS_SINGLE, V_RTE_SINGLE},
        {"lpm6_vs_rte_lpm6_bulk64", V_OURS_B64, V_RTE_B64},
        {"lpm6_vs_rte_lpm6", V_OURS_B32, V_RTE_B32},
    };
    enum { NPAIR = sizeof(pairs) / sizeof(pairs[0]) };
    const size_t chunk = nlook < CHUNK * 4 ? nlook : CHUNK, nch = nlook / chunk;
    double *rq = malloc(3 * nch * sizeof(double)), *ro = rq + nch, *rt = rq + 2 * nch;
    double res[V_MAX][MAX_RUNS] = {{0}}, ratio[NPAIR][MAX_RUNS] = {{0}};
    if (!rq) {
        fprintf(stderr, "bench_lpm6: out of memory\n");
        return 1;
    }
    for (uint32_t r = 0; r < runs; r++) {
        for (size_t c = 0; c < nch; c++)
            ro[c] = t_measure(V_HARNESS, &fib, rte, look + c * chunk, chunk);
        res[V_HARNESS][r] = t_median_sort(ro, (unsigned)nch);
        for (unsigned k = 0; k < NPAIR; k++) {
            int vo = pairs[k].ours, vt = pairs[k].theirs;
            for (size_t c = 0; c < nch; c++) {
                const uint8_t(*a)[16] = look + c * chunk;
                if (!rte) {
                    ro[c] = t_measure(vo, &fib, rte, a, chunk);
                    continue;
                }
                if ((c + r) % 2 == 0) {
                    ro[c] = t_measure(vo, &fib, rte, a, chunk);
                    rt[c] = t_measure(vt, &fib, rte, a, chunk);
                } else {
                    rt[c] = t_measure(vt, &fib, rte, a, chunk);
                    ro[c] = t_measure(vo, &fib, rte, a, chunk);
                }
                rq[c] = ro[c] / rt[c];
            }
            res[vo][r] = t_median_sort(ro, (unsigned)nch);
            if (rte) {
                res[vt][r] = t_median_sort(rt, (unsigned)nch);
                ratio[k][r] = t_median_sort(rq, (unsigned)nch);
            }
        }
    }
    free(rq);

    printf("\n%-36s %12s %21s %10s\n", "variant (Mlookups/s)", "median", "min - max", "ns/lookup");
    for (int v = 0; v < V_MAX; v++) {
        if (res[v][0] == 0)
            continue;
        double med = t_median(res[v], runs);
        printf("%-36s %12.1f %10.1f - %-8.1f %10.2f\n", v_name[v], med / 1e6, t_min(res[v], runs) / 1e6,
               t_max(res[v], runs) / 1e6, 1e9 / med);
    }
    if (!rte) {
        printf("\nno rte_lpm6: no ratio (%s)\n", why);
        printf("lpm6_vs_rte_lpm6 n/a\n");
        return 0;
    }
    double med[NPAIR];
    printf("\n%-36s %12s %21s\n", "ratio ours/theirs (lookups/s)", "median", "min - max");
    for (unsigned k = 0; k < NPAIR; k++) {
        med[k] = t_median(ratio[k], runs);
        printf("%-36s %12.3f %10.3f - %-8.3f\n", pairs[k].metric, med[k], t_min(ratio[k], runs),
               t_max(ratio[k], runs));
    }
    lpm6_rte_fini(rte);
    fib6_detach(&fib);
    fib6_detach(&fibw);
    close(fd);
    close(rfd);
    free(addr);
    free(pfx);
    printf("\n");
    for (unsigned k = 0; k < NPAIR; k++)
        printf("%s %.3f\n", pairs[k].metric, med[k]);
    return 0;
}
