/* SPDX-License-Identifier: MIT */
/*
 * bench/lpm.c: bench/lpm's harness and our side: lookups per second of our
 * DIR-24-8 FIB (tables/fib.h) against DPDK's rte_lpm (bench/lpm_rte.c)
 * with the same prefixes, the same next hops and the same addresses, in the
 * same process and the same run.
 *
 * Table: 900,000 distinct prefixes, lengths drawn from a fixed histogram
 * shaped like the IPv4 default-free zone (see t_len_hist below), addresses
 * uniform over 1.0.0.0 - 223.255.255.255, next hop one of 64 at random, added
 * in random order to both. Our FIB gets next hop k as {gw 10.0.0.(k+1),
 * port k % 4}; rte_lpm gets k itself. Our lookup returns an index into our
 * next-hop table; mapping that back through the gateway gives k, so the two
 * answers are compared for every looked-up address.
 *
 * Lookups: 16M uniformly random 32-bit addresses in one array (64 MB),
 * streamed through each variant in turn:
 *   single   fib_lookup()          vs rte_lpm_lookup()
 *   bulk 32  fib_lookup_burst(32)  vs rte_lpm_lookup_bulk(32)   <- the ratio
 *   bulk 64  fib_lookup_burst(64)  vs rte_lpm_lookup_bulk(64)
 *   x4       (ours bulk 32)           vs rte_lpm_lookupx4 (SSE, information)
 * Each variant adds every result (next hop or miss) into a sink, so no
 * lookup is optimised away; both sides pay the same for that, and
 * rte_lpm_lookup_bulk's caller-side "found?" test is done in its loop. Each
 * pair runs on 1M-address chunks, ours and theirs back to back on the same
 * chunk (alternating which goes first), so noise from other processes hits
 * both; a run's ratio is the median of its per-chunk ratios, and the table
 * gives medians and min - max over the runs. The router's per-burst fib_read_begin/end (one fence) is not
 * part of a lookup and is not timed here (bench/forward-core includes it).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tables/fib_write.h"
#include "bench/stats.h"

/* bench/lpm_rte.c (declared there too: one file per side). */
int lpm_rte_init(char *why, size_t whylen);
void *lpm_rte_create(uint32_t max_rules, uint32_t tbl8s, char *why, size_t whylen);
int lpm_rte_add(void *h, uint32_t ip, unsigned depth, uint32_t nh);
void lpm_rte_lookup_all(void *h, const uint32_t *a, size_t n, uint32_t *out, uint32_t miss);
uint64_t lpm_rte_run_single(void *h, const uint32_t *a, size_t n);
uint64_t lpm_rte_run_bulk(void *h, const uint32_t *a, size_t n, unsigned batch);
uint64_t lpm_rte_run_x4(void *h, const uint32_t *a, size_t n);
void lpm_rte_fini(void *h);

#define NH_COUNT 64u
#define TBL8_GROUPS 8192u
#define MAX_RUNS 15u
#define MISS 0xffffffffu
#define CHUNK (1u << 20) /* addresses per timed chunk */

/*
 * Prefix-length histogram per 900,000 prefixes: our own round numbers,
 * approximately the shape of the IPv4 DFZ in the public BGP table reports of
 * 2023-24 (CIDR Report, G. Huston's "BGP in 20xx"): about 60% /24, 10-12% /22,
 * 10% /23, 4% each /20 and /21, 1-3% each /16../19, well under 1% shorter.
 * The DFZ carries almost nothing longer than /24 (filtered); 0.3% /25../32
 * are added so that both sides' second-level (tbl8) path is built and
 * checked. /24 takes whatever the others leave.
 */
static const uint32_t t_len_hist[33] = {
    [8] = 10,      [9] = 12,      [10] = 35,     [11] = 100,    [12] = 300,   [13] = 600,   [14] = 1200,
    [15] = 2000,   [16] = 12500,  [17] = 7500,   [18] = 12000,  [19] = 22000, [20] = 36000, [21] = 36000,
    [22] = 110000, [23] = 90000,  [24] = 0 /* rest */,            [25] = 700,   [26] = 600,   [27] = 400,
    [28] = 350,    [29] = 300,    [30] = 200,    [31] = 50,     [32] = 100,
};

static uint64_t t_rng = 0x9e3779b97f4a7c15ull;

static uint64_t t_rand(void)
{
    /* splitmix64 */
    uint64_t z = (t_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct t_pfx {
    uint32_t addr;
    uint8_t len, nh;
};

/* Distinct random prefixes following t_len_hist scaled to @n, in random order. */
static struct t_pfx *t_gen_prefixes(uint32_t n, uint32_t *hist_out)
{
    uint32_t want[33] = {0}, fixed = 0;
    for (unsigned l = 0; l <= 32; l++) {
        want[l] = (uint32_t)((uint64_t)t_len_hist[l] * n / 900000u);
        fixed += want[l];
    }
    if (fixed > n) {
        fprintf(stderr, "bench_lpm: --prefixes %u too small for the histogram\n", n);
        exit(2);
    }
    want[24] = n - fixed;
    memcpy(hist_out, want, sizeof(want));
    struct t_pfx *p = calloc(n, sizeof(*p));
    uint64_t hmask = 1;
    while (hmask < (uint64_t)n * 2)
        hmask <<= 1;
    uint64_t *set = calloc(hmask, sizeof(*set)); /* key addr << 8 | len, 0 = empty (len >= 8) */
    hmask--;
    if (!p || !set) {
        fprintf(stderr, "bench_lpm: out of memory\n");
        exit(1);
    }
    uint32_t k = 0;
    for (unsigned l = 8; l <= 32; l++) {
        for (uint32_t i = 0; i < want[l]; i++) {
            for (;;) {
                uint32_t a = (uint32_t)((1u << 24) + t_rand() % (223u << 24)); /* 1.0.0.0 - 223.255.255.255 */
                a &= l == 32 ? ~0u : ~(~0u >> l);
                uint64_t key = (uint64_t)a << 8 | l, h = (key * 0x9e3779b97f4a7c15ull) >> 20;
                bool dup = false;
                for (;; h++) {
                    uint64_t *s = &set[h & hmask];
                    if (*s == 0) {
                        *s = key;
                        break;
                    }
                    if (*s == key) {
                        dup = true;
                        break;
                    }
                }
                if (dup)
                    continue;
                p[k].addr = a;
                p[k].len = (uint8_t)l;
                p[k].nh = (uint8_t)(t_rand() % NH_COUNT);
                k++;
                break;
            }
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

struct t_rte_load {
    void *rte;
    const struct t_pfx *pfx;
    uint32_t n;
    int err;
    uint32_t err_addr, err_len;
    double secs;
};

static void *t_rte_load_main(void *arg)
{
    struct t_rte_load *l = arg;
    double t0 = t_now();
    for (uint32_t i = 0; i < l->n; i++) {
        int r = lpm_rte_add(l->rte, l->pfx[i].addr, l->pfx[i].len, l->pfx[i].nh);
        if (r != 0) {
            l->err = -r;
            l->err_addr = l->pfx[i].addr;
            l->err_len = l->pfx[i].len;
            break;
        }
    }
    l->secs = t_now() - t0;
    return NULL;
}

/* ---- our side: the loops, with our lookups inlined ---- */

static uint64_t ours_single(const struct fib *fib, const uint32_t *a, size_t n)
{
    uint64_t sink = 0;
    for (size_t i = 0; i < n; i++)
        sink += fib_lookup(fib, a[i]);
    return sink;
}

#define OURS_BULK(B)                                                                                                   \
    do {                                                                                                               \
        uint32_t out[B];                                                                                               \
        size_t i = 0;                                                                                                  \
        for (; i + (B) <= n; i += (B)) {                                                                               \
            fib_lookup_burst(fib, a + i, out, (B));                                                                 \
            for (unsigned k = 0; k < (B); k++)                                                                         \
                sink += out[k];                                                                                        \
        }                                                                                                              \
        for (; i < n; i++)                                                                                             \
            sink += fib_lookup(fib, a[i]);                                                                          \
    } while (0)

static uint64_t ours_bulk(const struct fib *fib, const uint32_t *a, size_t n, unsigned batch)
{
    uint64_t sink = 0;
    if (batch == 64)
        OURS_BULK(64);
    else
        OURS_BULK(32);
    return sink;
}

enum { V_OURS_SINGLE, V_RTE_SINGLE, V_OURS_B32, V_RTE_B32, V_OURS_B64, V_RTE_B64, V_RTE_X4, V_MAX };

static const char *const v_name[V_MAX] = {
    [V_OURS_SINGLE] = "ours    fib_lookup (single)",   [V_RTE_SINGLE] = "rte_lpm rte_lpm_lookup (single)",
    [V_OURS_B32] = "ours    fib_lookup_burst 32",      [V_RTE_B32] = "rte_lpm rte_lpm_lookup_bulk 32",
    [V_OURS_B64] = "ours    fib_lookup_burst 64",      [V_RTE_B64] = "rte_lpm rte_lpm_lookup_bulk 64",
    [V_RTE_X4] = "rte_lpm rte_lpm_lookupx4 (SSE)",
};

static volatile uint64_t t_sink;

/* Run variant @v once over the addresses; returns lookups per second. */
static double t_measure(int v, const struct fib *fib, void *rte, const uint32_t *a, size_t n)
{
    double t0 = t_now();
    switch (v) {
    case V_OURS_SINGLE:
        t_sink += ours_single(fib, a, n);
        break;
    case V_RTE_SINGLE:
        t_sink += lpm_rte_run_single(rte, a, n);
        break;
    case V_OURS_B32:
        t_sink += ours_bulk(fib, a, n, 32);
        break;
    case V_RTE_B32:
        t_sink += lpm_rte_run_bulk(rte, a, n, 32);
        break;
    case V_OURS_B64:
        t_sink += ours_bulk(fib, a, n, 64);
        break;
    case V_RTE_B64:
        t_sink += lpm_rte_run_bulk(rte, a, n, 64);
        break;
    case V_RTE_X4:
        t_sink += lpm_rte_run_x4(rte, a, n);
        break;
    }
    return (double)n / (t_now() - t0);
}

static void t_usage(void)
{
    fprintf(stderr, "usage: bench_lpm [--prefixes N] [--lookups N] [--runs N] [--seed N]\n"
                    "  defaults: 900000 prefixes, 16777216 lookups per pass, 3 runs\n");
    exit(2);
}

int main(int argc, char **argv)
{
    uint32_t nprefix = 900000, runs = 3;
    size_t nlook = 16u << 20;
    for (int i = 1; i < argc; i += 2) { /* --name value pairs */
        if (i + 1 >= argc)
            t_usage();
        unsigned long long v = t_arg_num("bench_lpm", argv[i], argv[i + 1]);
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
    if (nprefix < 1000 || nlook < 1024 || runs < 1 || runs > MAX_RUNS)
        t_usage();
    nlook &= ~(size_t)63;

    /* DPDK first: if EAL cannot start, say exactly why and measure ours alone. */
    char why[256] = "";
    void *rte = NULL;
    if (lpm_rte_init(why, sizeof(why)) == 0)
        rte = lpm_rte_create(nprefix + nprefix / 8, TBL8_GROUPS, why, sizeof(why));
    if (!rte)
        fprintf(stderr, "bench_lpm: rte_lpm unavailable: %s\n", why);

    uint32_t hist[33];
    struct t_pfx *pfx = t_gen_prefixes(nprefix, hist);

    struct ipc_err err = {{0}};
    struct fib fibw, fib;
    int fd, rfd;
    struct fib_params fp = {.max_prefixes = nprefix + nprefix / 8, .tbl8_groups = TBL8_GROUPS, .max_nh = 256};
    if (fib_create("bench-lpm", &fp, &fibw, &fd, &rfd, &err) != 0 || fib_attach(&fib, fd, rfd, 0, &err) != 0) {
        fprintf(stderr, "bench_lpm: fib: %s\n", err.msg);
        return 1;
    }

    /* rte_lpm_add() scans every rule of the new rule's length for a duplicate
     * (linear in the rules of that length), so loading 900,000 prefixes into
     * rte_lpm is quadratic and takes tens of seconds: it runs on a second
     * thread while this one loads ours. Only loading overlaps; no lookup does. */
    struct t_rte_load rl = {.rte = rte, .pfx = pfx, .n = nprefix};
    pthread_t th;
    bool threaded = rte && pthread_create(&th, NULL, t_rte_load_main, &rl) == 0;
    if (rte && !threaded)
        t_rte_load_main(&rl);
    double t0 = t_now();
    for (uint32_t i = 0; i < nprefix; i++) {
        struct fib_nh nh = {.gw = 0x0a000001u + pfx[i].nh, .port = (uint16_t)(pfx[i].nh % 4)};
        int r = fib_add(&fibw, pfx[i].addr, pfx[i].len, &nh);
        if (r != 0) {
            fprintf(stderr, "bench_lpm: fib_add %08x/%u: %s\n", pfx[i].addr, pfx[i].len, strerror(-r));
            return 1;
        }
    }
    double load_ours = t_now() - t0;
    struct fib_stats st;
    fib_get_stats(&fibw, &st);

    /* Our next-hop index -> the k it was added as. */
    uint32_t idx2k[256];
    for (uint32_t i = 0; i < 256; i++) {
        struct fib_nh nh = fib_nh_at(&fib, i);
        idx2k[i] = nh.gw - 0x0a000001u < NH_COUNT ? nh.gw - 0x0a000001u : MISS;
    }

    /* The lookup addresses, and for the check also the first and last address of every prefix. */
    size_t ncheck = nlook + 2 * (size_t)nprefix;
    uint32_t *addr = malloc(ncheck * sizeof(uint32_t));
    uint32_t *o1 = malloc(ncheck * sizeof(uint32_t)), *o2 = malloc(ncheck * sizeof(uint32_t));
    if (!addr || !o1 || !o2) {
        fprintf(stderr, "bench_lpm: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < nlook; i++)
        addr[i] = (uint32_t)t_rand();
    for (uint32_t i = 0; i < nprefix; i++) {
        addr[nlook + 2 * i] = pfx[i].addr;
        addr[nlook + 2 * i + 1] = pfx[i].addr | (pfx[i].len == 32 ? 0 : ~0u >> pfx[i].len);
    }

    if (threaded)
        pthread_join(th, NULL);
    if (rl.err) {
        fprintf(stderr, "bench_lpm: rte_lpm_add %08x/%u: %s\n", rl.err_addr, rl.err_len, strerror(rl.err));
        return 1;
    }
    double load_rte = rl.secs;

    /* Correctness: ours (mapped) == rte_lpm's for every address. */
    size_t mismatches = 0, hits = 0, tbl8_hits = 0;
    for (size_t i = 0; i < ncheck; i++) {
        uint32_t r = fib_lookup(&fib, addr[i]);
        o1[i] = r == FIB_MISS ? MISS : r < 256 ? idx2k[r] : MISS - 1;
        if (i < nlook && r != FIB_MISS) {
            hits++;
            tbl8_hits += (ipc_ld_rlx(&fib.m.tbl24[addr[i] >> 8]) & FIB_E_EXT) != 0;
        }
    }
    if (rte) {
        lpm_rte_lookup_all(rte, addr, ncheck, o2, MISS);
        for (size_t i = 0; i < ncheck; i++) {
            if (o1[i] != o2[i]) {
                if (mismatches < 5)
                    fprintf(stderr, "bench_lpm: MISMATCH %u.%u.%u.%u: ours %d, rte_lpm %d\n", addr[i] >> 24,
                            addr[i] >> 16 & 255, addr[i] >> 8 & 255, addr[i] & 255, (int)o1[i], (int)o2[i]);
                mismatches++;
            }
        }
    }
    free(o1);
    free(o2);

    printf("bench/lpm: %u prefixes (DFZ-like lengths: /24 %.1f%%, /23 %.1f%%, /22 %.1f%%, /20-21 %.1f%%,\n"
           "  /16-19 %.1f%%, shorter %.1f%%, longer than /24 %.1f%%), %u next hops, %zu random lookups per pass\n",
           nprefix, 100.0 * hist[24] / nprefix, 100.0 * hist[23] / nprefix, 100.0 * hist[22] / nprefix,
           100.0 * (hist[20] + hist[21]) / nprefix,
           100.0 * (hist[16] + hist[17] + hist[18] + hist[19]) / nprefix,
           100.0 * (hist[8] + hist[9] + hist[10] + hist[11] + hist[12] + hist[13] + hist[14] + hist[15]) / nprefix,
           100.0 * (hist[25] + hist[26] + hist[27] + hist[28] + hist[29] + hist[30] + hist[31] + hist[32]) / nprefix,
           NH_COUNT, nlook);
    printf("load: ours %.2f s (%u prefixes, %u tbl8 groups, region %.0f MB), rte_lpm %.2f s\n", load_ours, st.prefixes,
           st.tbl8_used, st.region_bytes / 1048576.0, load_rte);
    printf("random addresses with a route: %.1f%% (%.2f%% through a tbl8 group)\n", 100.0 * hits / nlook,
           100.0 * tbl8_hits / nlook);
    if (rte)
        printf("check: %zu addresses (random + first/last of every prefix), ours == rte_lpm: %s (%zu mismatches)\n",
               ncheck, mismatches ? "NO" : "yes", mismatches);
    else
        printf("check: skipped, no rte_lpm (%s)\n", why);
    fflush(stdout);
    if (mismatches) {
        fprintf(stderr, "bench_lpm: FAILED: %zu lookups differ\n", mismatches);
        return 1;
    }

    /* Warm-up: one untimed pass each (page tables, caches). */
    for (int v = 0; v < V_MAX; v++)
        if (rte || v == V_OURS_SINGLE || v == V_OURS_B32 || v == V_OURS_B64)
            t_measure(v, &fib, rte, addr, nlook / 4);

    /*
     * Pairs (ours, theirs). In every run, each pair walks the address array in
     * chunks of CHUNK addresses, ours and theirs back to back on the same
     * chunk (which goes first alternates): noise from other processes lands
     * on both sides of a chunk. A run's rate is the median of its chunk rates;
     * its ratio, the median of the per-chunk ratios.
     */
    static const struct {
        const char *metric;
        int ours, theirs;
    } pairs[] = {
        {"lpm_vs_rte_lpm_single", V_OURS_SINGLE, V_RTE_SINGLE},
        {"lpm_vs_rte_lpm_bulk64", V_OURS_B64, V_RTE_B64},
        {"lpm_vs_rte_lpm_x4", V_OURS_B32, V_RTE_X4},
        {"lpm_vs_rte_lpm", V_OURS_B32, V_RTE_B32},
    };
    enum { NPAIR = sizeof(pairs) / sizeof(pairs[0]) };
    const size_t chunk = nlook < CHUNK * 4 ? nlook : CHUNK, nch = nlook / chunk;
    double *rq = malloc(3 * nch * sizeof(double)), *ro = rq + nch, *rt = rq + 2 * nch;
    double res[V_MAX][MAX_RUNS] = {{0}}, ratio[NPAIR][MAX_RUNS] = {{0}};
    if (!rq) {
        fprintf(stderr, "bench_lpm: out of memory\n");
        return 1;
    }
    for (uint32_t r = 0; r < runs; r++) {
        for (unsigned k = 0; k < NPAIR; k++) {
            int vo = pairs[k].ours, vt = pairs[k].theirs;
            for (size_t c = 0; c < nch; c++) {
                const uint32_t *a = addr + c * chunk;
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
            if (k != 2) /* ours bulk 32 is measured again against x4: its row is from its bulk-32 pair */
                res[vo][r] = t_median_sort(ro, (unsigned)nch);
            if (rte) {
                res[vt][r] = t_median_sort(rt, (unsigned)nch);
                ratio[k][r] = t_median_sort(rq, (unsigned)nch);
            }
        }
    }
    free(rq);

    printf("\n%-34s %12s %21s %10s\n", "variant (Mlookups/s)", "median", "min - max", "ns/lookup");
    for (int v = 0; v < V_MAX; v++) {
        if (res[v][0] == 0)
            continue;
        double med = t_median(res[v], runs);
        printf("%-34s %12.1f %10.1f - %-8.1f %10.2f\n", v_name[v], med / 1e6, t_min(res[v], runs) / 1e6,
               t_max(res[v], runs) / 1e6, 1e9 / med);
    }
    if (!rte) {
        printf("\nno rte_lpm: no ratio (%s)\n", why);
        printf("lpm_vs_rte_lpm n/a\n");
        return 0;
    }
    double med[NPAIR];
    printf("\n%-34s %12s %21s\n", "ratio ours/theirs (lookups/s)", "median", "min - max");
    for (unsigned k = 0; k < NPAIR; k++) {
        med[k] = t_median(ratio[k], runs);
        printf("%-34s %12.3f %10.3f - %-8.3f\n", pairs[k].metric, med[k], t_min(ratio[k], runs),
               t_max(ratio[k], runs));
    }
    printf("(x4: ours bulk 32 against rte_lpm_lookupx4; the main ratio is bulk 32 against bulk 32)\n");
    lpm_rte_fini(rte);
    fib_detach(&fib);
    fib_detach(&fibw);
    close(fd);
    close(rfd);
    free(addr);
    free(pfx);
    printf("\n");
    for (unsigned k = 0; k < NPAIR; k++)
        printf("%s %.3f\n", pairs[k].metric, med[k]);
    return 0;
}
