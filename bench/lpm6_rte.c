/* SPDX-License-Identifier: MIT */
/*
 * bench/lpm6_rte.c: the baseline of bench/lpm6, DPDK's rte_lpm6 (Debian's
 * libdpdk-dev, 22.11). The only file of bench_lpm6 that sees DPDK's headers
 * and the only object built with DPDK's cflags; with HAVE_DPDK=0 it compiles
 * to stubs and bench/lpm6 measures ours alone and says why.
 *
 * EAL as in bench/lpm_rte.c (--no-huge --no-pci --no-shconf --no-telemetry
 * -l 0), with -m sized by the caller: rte_lpm6 takes its 64 MB tbl24, its
 * groups and its rules hash from EAL's heap. rte_lpm6's lookups are
 * functions of the shared library (not inline, unlike rte_lpm's), so the
 * loops here call them as any DPDK application does.
 *
 * rte_lpm6_add refuses depth 0, so a ::/0 is given to it as ::/1 and
 * 8000::/1 with the same next hop: the same routes for every address.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The interface bench/lpm6.c uses (declared there too: one file per side). */
int lpm6_rte_init(unsigned mem_mb, char *why, size_t whylen);
void *lpm6_rte_create(uint32_t max_rules, uint32_t tbl8s, char *why, size_t whylen);
int lpm6_rte_add(void *h, const uint8_t *ip, unsigned depth, uint32_t nh);
void lpm6_rte_lookup_all(void *h, const uint8_t (*a)[16], size_t n, uint32_t *out, uint32_t miss);
uint64_t lpm6_rte_run_single(void *h, const uint8_t (*a)[16], size_t n);
uint64_t lpm6_rte_run_bulk(void *h, const uint8_t (*a)[16], size_t n, unsigned batch);
void lpm6_rte_fini(void *h);

#if HAVE_DPDK

#include <errno.h>
#include <sched.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lpm6.h>
#include <rte_memory.h> /* SOCKET_ID_ANY */

int lpm6_rte_init(unsigned mem_mb, char *why, size_t whylen)
{
    char mem[16];
    snprintf(mem, sizeof(mem), "%u", mem_mb);
    char *argv[] = {"bench_lpm6", "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-l", "0", "-m", mem,
                    "--log-level", "lib.eal:error", NULL};
    int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
    cpu_set_t before;
    int have_mask = sched_getaffinity(0, sizeof(before), &before) == 0;
    int r = rte_eal_init(argc, argv);
    if (r < 0) {
        snprintf(why, whylen, "rte_eal_init: %s (rte_errno %d)", rte_strerror(rte_errno), rte_errno);
        return -1;
    }
    /* EAL pinned this thread to CPU 0 (-l 0); give the mask back, as bench/lpm does. */
    if (have_mask)
        sched_setaffinity(0, sizeof(before), &before);
    return 0;
}

void *lpm6_rte_create(uint32_t max_rules, uint32_t tbl8s, char *why, size_t whylen)
{
    struct rte_lpm6_config c = {.max_rules = max_rules, .number_tbl8s = tbl8s, .flags = 0};
    struct rte_lpm6 *l = rte_lpm6_create("bench_lpm6", SOCKET_ID_ANY, &c);
    if (!l)
        snprintf(why, whylen, "rte_lpm6_create: %s", rte_strerror(rte_errno));
    return l;
}

int lpm6_rte_add(void *h, const uint8_t *ip, unsigned depth, uint32_t nh)
{
    if (depth == 0) {
        uint8_t half[16] = {0};
        int r = rte_lpm6_add(h, half, 1, nh);
        half[0] = 0x80;
        return r ? r : rte_lpm6_add(h, half, 1, nh);
    }
    return rte_lpm6_add(h, ip, (uint8_t)depth, nh);
}

/* Correctness: the next hop (as added) or @miss, for each address. */
void lpm6_rte_lookup_all(void *h, const uint8_t (*a)[16], size_t n, uint32_t *out, uint32_t miss)
{
    const struct rte_lpm6 *l = h;
    for (size_t i = 0; i < n; i++) {
        uint32_t nh;
        out[i] = rte_lpm6_lookup(l, a[i], &nh) == 0 ? nh : miss;
    }
}

uint64_t lpm6_rte_run_single(void *h, const uint8_t (*a)[16], size_t n)
{
    const struct rte_lpm6 *l = h;
    uint64_t sink = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t nh;
        sink += rte_lpm6_lookup(l, a[i], &nh) == 0 ? nh : 0xffffffffu;
    }
    return sink;
}

/* rte_lpm6_lookup_bulk_func gives -1 for a miss, the next hop otherwise:
 * the same information as fib6_lookup_burst's FIB6_MISS or index. */
uint64_t lpm6_rte_run_bulk(void *h, const uint8_t (*a)[16], size_t n, unsigned batch)
{
    const struct rte_lpm6 *l = h;
    uint64_t sink = 0;
    int32_t out[64];
    size_t i = 0;
    for (; i + batch <= n; i += batch) {
        rte_lpm6_lookup_bulk_func(l, (uint8_t(*)[RTE_LPM6_IPV6_ADDR_SIZE])(uintptr_t)(a + i), out, batch);
        for (unsigned k = 0; k < batch; k++)
            sink += (uint32_t)out[k];
    }
    for (; i < n; i++) {
        uint32_t nh;
        sink += rte_lpm6_lookup(l, a[i], &nh) == 0 ? nh : 0xffffffffu;
    }
    return sink;
}

void lpm6_rte_fini(void *h)
{
    if (h)
        rte_lpm6_free(h);
    rte_eal_cleanup();
}

#else /* !HAVE_DPDK */

int lpm6_rte_init(unsigned mem_mb, char *why, size_t whylen)
{
    snprintf(why, whylen, "built without DPDK (have_dpdk = 0 in config.ninja: install libdpdk-dev, ./configure)");
    return -1;
}

void *lpm6_rte_create(uint32_t max_rules, uint32_t tbl8s, char *why, size_t whylen)
{
    snprintf(why, whylen, "no DPDK");
    return NULL;
}

int lpm6_rte_add(void *h, const uint8_t *ip, unsigned depth, uint32_t nh)
{
    return -1;
}

void lpm6_rte_lookup_all(void *h, const uint8_t (*a)[16], size_t n, uint32_t *out, uint32_t miss)
{
}

uint64_t lpm6_rte_run_single(void *h, const uint8_t (*a)[16], size_t n)
{
    return 0;
}

uint64_t lpm6_rte_run_bulk(void *h, const uint8_t (*a)[16], size_t n, unsigned batch)
{
    return 0;
}

void lpm6_rte_fini(void *h)
{
}

#endif
