/* SPDX-License-Identifier: MIT */
/*
 * bench/lpm_rte.c: the baseline of bench/lpm, DPDK's rte_lpm (Debian's
 * libdpdk-dev, 22.11). The only file of bench_lpm that sees DPDK's headers
 * and the only object built with DPDK's cflags (-march=corei7,
 * -include rte_config.h); with HAVE_DPDK=0 it compiles to stubs and
 * bench/lpm measures ours alone and says why.
 *
 * EAL. rte_lpm_create() takes its tables from EAL's heap (rte_zmalloc), so
 * unlike rte_ring this needs rte_eal_init(). What works here (no hugepages,
 * no PCI, not root-only resources): --no-huge --no-pci --no-shconf
 * --no-telemetry -l 0 -m 512. What does not: --no-huge together with
 * --in-memory, which 22.11 rejects ("Option --legacy-mem is not compatible
 * with --in-memory": --no-huge implies legacy memory mode); --no-shconf gives
 * the same "no files shared with other processes" property. -l 0 pins the
 * calling thread to CPU 0; lpm_rte_init() restores its affinity afterwards.
 * Both sides of the benchmark run on that one thread.
 *
 * The inner loops live here so that DPDK's inline lookups are inlined into
 * them, exactly as our fib_lookup*() are inlined into bench/lpm.c's.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The interface bench/lpm.c uses (declared there too: one file per side). */
int lpm_rte_init(char *why, size_t whylen);
void *lpm_rte_create(uint32_t max_rules, uint32_t tbl8s, char *why, size_t whylen);
int lpm_rte_add(void *h, uint32_t ip, unsigned depth, uint32_t nh);
void lpm_rte_lookup_all(void *h, const uint32_t *a, size_t n, uint32_t *out, uint32_t miss);
uint64_t lpm_rte_run_single(void *h, const uint32_t *a, size_t n);
uint64_t lpm_rte_run_bulk(void *h, const uint32_t *a, size_t n, unsigned batch);
uint64_t lpm_rte_run_x4(void *h, const uint32_t *a, size_t n);
void lpm_rte_fini(void *h);

#if HAVE_DPDK

#include <sched.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lpm.h>

int lpm_rte_init(char *why, size_t whylen)
{
    char *argv[] = {"bench_lpm", "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-l", "0", "-m", "512",
                    "--log-level", "lib.eal:error", NULL};
    int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
    cpu_set_t before;
    int have_mask = sched_getaffinity(0, sizeof(before), &before) == 0;
    int r = rte_eal_init(argc, argv);
    if (r < 0) {
        snprintf(why, whylen, "rte_eal_init: %s (rte_errno %d)", rte_strerror(rte_errno), rte_errno);
        return -1;
    }
    /* EAL pinned this thread to CPU 0 (-l 0). On a shared 2-core machine that
     * forbids the scheduler to move us off a busy CPU: give the mask back. */
    if (have_mask)
        sched_setaffinity(0, sizeof(before), &before);
    return 0;
}

void *lpm_rte_create(uint32_t max_rules, uint32_t tbl8s, char *why, size_t whylen)
{
    struct rte_lpm_config c = {.max_rules = max_rules, .number_tbl8s = tbl8s, .flags = 0};
    struct rte_lpm *l = rte_lpm_create("bench_lpm", SOCKET_ID_ANY, &c);
    if (!l)
        snprintf(why, whylen, "rte_lpm_create: %s", rte_strerror(rte_errno));
    return l;
}

int lpm_rte_add(void *h, uint32_t ip, unsigned depth, uint32_t nh)
{
    return rte_lpm_add(h, ip, (uint8_t)depth, nh);
}

/* Correctness: the next hop (as added) or @miss, for each address. */
void lpm_rte_lookup_all(void *h, const uint32_t *a, size_t n, uint32_t *out, uint32_t miss)
{
    const struct rte_lpm *l = h;
    for (size_t i = 0; i < n; i++) {
        uint32_t nh;
        out[i] = rte_lpm_lookup(l, a[i], &nh) == 0 ? nh : miss;
    }
}

uint64_t lpm_rte_run_single(void *h, const uint32_t *a, size_t n)
{
    const struct rte_lpm *l = h;
    uint64_t sink = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t nh;
        sink += rte_lpm_lookup(l, a[i], &nh) == 0 ? nh : 0xffffffffu;
    }
    return sink;
}

/*
 * rte_lpm_lookup_bulk wants a compile-time n: one loop per batch size. It
 * returns raw table entries and leaves the "found?" test
 * (RTE_LPM_LOOKUP_SUCCESS) to its caller, where fib_lookup_burst returns
 * the next hop or FIB_MISS: the caller's test is done here, so both sides
 * deliver the same information (next hop or miss) per address.
 */
#define RUN_BULK(B)                                                                                                    \
    do {                                                                                                               \
        uint32_t out[B];                                                                                               \
        size_t i = 0;                                                                                                  \
        for (; i + (B) <= n; i += (B)) {                                                                               \
            rte_lpm_lookup_bulk(l, a + i, out, (B));                                                                   \
            for (unsigned k = 0; k < (B); k++)                                                                         \
                sink += (out[k] & RTE_LPM_LOOKUP_SUCCESS) ? (out[k] & 0x00ffffffu) : 0xffffffffu;                      \
        }                                                                                                              \
        for (; i < n; i++) {                                                                                           \
            uint32_t nh;                                                                                               \
            sink += rte_lpm_lookup(l, a[i], &nh) == 0 ? nh : 0xffffffffu;                                              \
        }                                                                                                              \
    } while (0)

uint64_t lpm_rte_run_bulk(void *h, const uint32_t *a, size_t n, unsigned batch)
{
    const struct rte_lpm *l = h;
    uint64_t sink = 0;
    if (batch == 64)
        RUN_BULK(64);
    else if (batch == 32)
        RUN_BULK(32);
    else
        RUN_BULK(8);
    return sink;
}

uint64_t lpm_rte_run_x4(void *h, const uint32_t *a, size_t n)
{
    const struct rte_lpm *l = h;
    uint64_t sink = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t hop[4];
        xmm_t ip = _mm_loadu_si128((const __m128i *)(const void *)(a + i));
        rte_lpm_lookupx4(l, ip, hop, 0xffffffffu);
        sink += (uint64_t)hop[0] + hop[1] + hop[2] + hop[3];
    }
    return sink;
}

void lpm_rte_fini(void *h)
{
    if (h)
        rte_lpm_free(h);
    rte_eal_cleanup();
}

#else /* !HAVE_DPDK */

int lpm_rte_init(char *why, size_t whylen)
{
    snprintf(why, whylen, "built without DPDK (have_dpdk = 0 in config.ninja: install libdpdk-dev, ./configure)");
    return -1;
}

void *lpm_rte_create(uint32_t max_rules, uint32_t tbl8s, char *why, size_t whylen)
{
    snprintf(why, whylen, "no DPDK");
    return NULL;
}

int lpm_rte_add(void *h, uint32_t ip, unsigned depth, uint32_t nh)
{
    return -1;
}

void lpm_rte_lookup_all(void *h, const uint32_t *a, size_t n, uint32_t *out, uint32_t miss)
{
}

uint64_t lpm_rte_run_single(void *h, const uint32_t *a, size_t n)
{
    return 0;
}

uint64_t lpm_rte_run_bulk(void *h, const uint32_t *a, size_t n, unsigned batch)
{
    return 0;
}

uint64_t lpm_rte_run_x4(void *h, const uint32_t *a, size_t n)
{
    return 0;
}

void lpm_rte_fini(void *h)
{
}

#endif
