/* SPDX-License-Identifier: MIT */
/*
 * bench/filter_core.c: build/bin/bench_filter, the filter core's costs in
 * one process (services/filter/, no rings, no NICs): see bench/filter-core.
 */
#include "services/filter/flt_int.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t ns_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t rs = 88172645u;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 17;
    rs ^= rs << 5;
    return rs;
}

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

/* Ethernet and an IPv4 header of @proto, @iplen bytes long; the L4 header's start */
static uint8_t *ip4(uint8_t *b, uint32_t src, uint32_t dst, uint8_t proto, uint16_t iplen)
{
    memset(b, 0, 64);
    put16(b + 12, 0x0800);
    uint8_t *ip = b + 14;
    ip[0] = 0x45;
    put16(ip + 2, iplen);
    ip[8] = 64;
    ip[9] = proto;
    for (int i = 0; i < 4; i++) {
        ip[12 + i] = (uint8_t)(src >> (24 - 8 * i));
        ip[16 + i] = (uint8_t)(dst >> (24 - 8 * i));
    }
    return ip + 20;
}

/* an IPv4 TCP frame; checksums are not checked on this path */
static uint32_t frame(uint8_t *b, uint32_t src, uint32_t dst, uint16_t sp, uint16_t dp, uint8_t flags, uint32_t seq,
                      uint32_t ack)
{
    uint8_t *t = ip4(b, src, dst, 6, 40);
    put16(t, sp);
    put16(t + 2, dp);
    for (int i = 0; i < 4; i++) {
        t[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
        t[8 + i] = (uint8_t)(ack >> (24 - 8 * i));
    }
    t[12] = 5 << 4;
    t[13] = flags;
    put16(t + 14, 1000);
    return 54;
}

/* an IPv4 UDP frame to port 9, as bench/filter's load */
static uint32_t frame_udp(uint8_t *b, uint32_t src, uint32_t dst, uint16_t sp)
{
    uint8_t *u = ip4(b, src, dst, 17, 46);
    put16(u, sp);
    put16(u + 2, 9);
    put16(u + 4, 26);
    put16(u + 6, 0x1234);
    return 60;
}

static uint64_t cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return ns_now();
#endif
}

/* bench/filter's load through rr-filter's two passes, as main.c makes
 * them: prerouting over a burst of 32 at the ingress (flt_process_many),
 * the connection word carried in the buffer, then forward and postrouting
 * at the egress (flt_process_out); 64-byte UDP to port 9 from @flows
 * source ports in turn, one way, so that every packet is `ct state new`
 * to the rules (Linux's view of a flow with no reply) and walks the chain
 * to its `udp dport` accept. @percall: as rr-filter did before, one
 * flt_process a hook and packet (the baseline). Returns ns a packet; *cyc
 * cycles. */
static double path_ns(struct flt *f, unsigned n, unsigned flows, bool percall, double *cyc)
{
    static uint8_t b[32][64];
    struct flt_pkt q[32];
    uint64_t t0 = ns_now(), c0 = cycles();
    for (unsigned i = 0; i < n; i += 32) {
        for (unsigned j = 0; j < 32; j++) {
            unsigned fl = (i + j) % flows;
            q[j] = (struct flt_pkt){ .data = b[j], .cap = 64, .iif = 0, .oif = 0xffff };
            q[j].len = frame_udp(b[j], 0x0a000102u + (fl >> 14), 0xac100202u, (uint16_t)(10000 + (fl & 16383)));
        }
        if (percall) {
            for (unsigned j = 0; j < 32; j++)
                if (flt_process(f, &q[j], FLT_PRE, 5) != FLT_ACCEPT)
                    goto refused;
        } else if (flt_process_many(f, q, 32, FLT_PRE, 5, NULL, NULL) != 32) {
            goto refused;
        }
        for (unsigned j = 0; j < 32; j++) {
            q[j].oif = 1;
            if (percall ? flt_process(f, &q[j], FLT_FWD, 5) != FLT_ACCEPT || flt_process(f, &q[j], FLT_POST, 5) != FLT_ACCEPT
                        : flt_process_out(f, &q[j], 5) != FLT_ACCEPT)
                goto refused;
        }
    }
    *cyc = (double)(cycles() - c0) / n;
    return (double)(ns_now() - t0) / n;
refused:
    fprintf(stderr, "bench_filter: the UDP load was refused\n");
    exit(1);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static struct flt_port ports[2];

static struct flt_rules *compile(const char *text, size_t len)
{
    char err[256];
    struct flt_rules *r = flt_rules_compile(text, len, ports, 2, err, sizeof err);
    if (!r) {
        fprintf(stderr, "bench_filter: %s\n", err);
        exit(1);
    }
    return r;
}

/* ns per evaluation of the forward chain over random sources */
static double eval_ns(struct flt_rules *r, unsigned n)
{
    struct flt_parsed pp = { .family = 4, .proto = 6 };
    pp.t.src[10] = pp.t.src[11] = pp.t.dst[10] = pp.t.dst[11] = 0xff;
    pp.t.dport = 80;
    struct eval_in in = { .pp = &pp, .ctstate = FLT_CT_NEW };
    volatile int sink = 0;
    uint64_t t0 = ns_now();
    for (unsigned i = 0; i < n; i++) {
        uint32_t a = rnd();
        memcpy(pp.t.src + 12, &a, 4);
        sink += flt_eval(r, FLT_FWD, &in);
    }
    (void)sink;
    return (double)(ns_now() - t0) / n;
}

int main(int argc, char **argv)
{
    unsigned runs = 3, nrules = 10000, lookups = 2000000, flows = 1024;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--runs"))
            runs = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rules"))
            nrules = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--lookups"))
            lookups = (unsigned)atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: bench_filter [--runs N] [--rules N] [--lookups N]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 15 || nrules < 4 || lookups < 1000) {
        fprintf(stderr, "bench_filter: --runs 1..15, --rules >= 4, --lookups >= 1000\n");
        return 2;
    }
    strcpy(ports[0].name, "lan");
    strcpy(ports[1].name, "wan");
    ports[1].has_v4 = 1;
    memcpy(ports[1].v4, "\xcb\x00\x71\x01", 4);

    /* 1. N blocklist rules of one shape: verdict map vs the same rules walked */
    size_t cap = (size_t)nrules * 48 + 256, o;
    char *text = malloc(cap);
    o = (size_t)snprintf(text, cap, "chain forward {\n");
    for (unsigned i = 0; i < nrules; i++) {
        uint32_t a = rnd();
        o += (size_t)snprintf(text + o, cap - o, "ip saddr %u.%u.%u.%u drop\n", a >> 24, a >> 16 & 255,
                              a >> 8 & 255, a & 255);
    }
    o += (size_t)snprintf(text + o, cap - o, "}\n");
    struct flt_rules *mapped = compile(text, o), *walked = compile(text, o);
    flt_rules_linear(walked);
    /* ... and as one rule over a set */
    o = (size_t)snprintf(text, cap, "set bl { type ipv4_addr; elements = {\n");
    for (unsigned i = 0; i < nrules; i++) {
        uint32_t a = rnd();
        o += (size_t)snprintf(text + o, cap - o, "%u.%u.%u.%u/%u,\n", a >> 24, a >> 16 & 255, a >> 8 & 255,
                              a & 255, 24 + (a & 7));
    }
    o += (size_t)snprintf(text + o, cap - o, "10.0.0.0/8 } }\nchain forward {\n ip saddr @bl drop\n}\n");
    struct flt_rules *set = compile(text, o);

    /* 2. the edge ruleset with conntrack, established flows */
    static const char edge[] =
        "set bl { type ipv4_addr; flags interval; elements = { 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 } }\n"
        "chain forward {\n policy drop\n ct state established,related accept\n ct state invalid drop\n"
        " ip saddr @bl drop\n ip daddr @bl drop\n"
        " ct state new ip daddr 172.16.0.0/16 tcp dport { 22, 80, 443, 5201 } accept\n"
        " ct state new ip daddr 172.16.0.0/16 udp dport { 9, 53, 123, 5201 } accept\n"
        " icmp type echo-request accept\n}\n";
    struct flt_rules *er = compile(edge, sizeof edge - 1);
    /* ... and with masquerade on the egress port */
    char nat[sizeof edge + 64];
    snprintf(nat, sizeof nat, "%schain postrouting {\n oif \"wan\" masquerade\n}\n", edge);
    struct flt_rules *nr = compile(nat, strlen(nat));
    size_t rsz = flt_ct_region_size(65536);
    void *region = aligned_alloc(64, (rsz + 63) & ~(size_t)63);

    enum { NFIG = 17 };
    double res[NFIG][15];
    const char *names[NFIG] = { "rules_vmap_ns", "rules_linear_ns", "rules_set_ns", "pkt_established_ns",
                                "pkt_new_conn_ns", "path_udp1_ns", "path_udp1_cycles", "path_udp1024_ns",
                                "path_udp1024_cycles", "path_nat1_ns", "path_nat1_cycles", "path_udp32k_ns",
                                "path_udp32k_cycles", "path_udp1_percall_cyc", "path_udp32k_percall_cyc",
                                "path_nat1_percall_cyc", "path_udp1024_percall_cyc" };
    for (unsigned run = 0; run < runs; run++) {
        res[0][run] = eval_ns(mapped, lookups);
        res[1][run] = eval_ns(walked, lookups / 50 + 1);
        res[2][run] = eval_ns(set, lookups);

        flt_ct_format(region, rsz, 65536, run);
        struct flt *f = flt_new(region, ports, 2, er);
        static uint8_t bufs[32][64];
        struct flt_pkt p[32];
        for (unsigned i = 0; i < flows; i++) {
            struct flt_pkt q = { .data = bufs[0], .cap = 64, .iif = 0, .oif = 1 };
            q.len = frame(bufs[0], 0x0a000000u + i, 0xac100001u, (uint16_t)(10000 + i), 80, 0x02, 0, 0);
            flt_process(f, &q, FLT_FWD, 1);
            flt_process(f, &q, FLT_POST, 1);
            q = (struct flt_pkt){ .data = bufs[0], .cap = 64, .iif = 1, .oif = 0 };
            q.len = frame(bufs[0], 0xac100001u, 0x0a000000u + i, 80, (uint16_t)(10000 + i), 0x12, 0, 1);
            flt_process(f, &q, FLT_FWD, 1);
        }
        /* established: ACKs of the flows that picked up their SYN/ACK */
        unsigned n = lookups / 4;
        uint64_t t0 = ns_now();
        for (unsigned k = 0; k < n; k += 32) {
            for (unsigned j = 0; j < 32; j++) {
                unsigned i = (k + j) % flows;
                p[j] = (struct flt_pkt){ .data = bufs[j], .cap = 64, .iif = 0, .oif = 1 };
                p[j].len = frame(bufs[j], 0x0a000000u + i, 0xac100001u, (uint16_t)(10000 + i), 80, 0x10, 1, 1);
            }
            if (flt_process_burst(f, p, 32, FLT_FWD, 2) != 32) {
                fprintf(stderr, "bench_filter: an established flow's packet was dropped\n");
                return 1;
            }
        }
        res[3][run] = (double)(ns_now() - t0) / n;
        /* new connections: SYNs to new ports, through forward and postrouting */
        unsigned nc = 60000;
        t0 = ns_now();
        for (unsigned i = 0; i < nc; i++) {
            struct flt_pkt q = { .data = bufs[0], .cap = 64, .iif = 0, .oif = 1 };
            q.len = frame(bufs[0], 0x0b000000u + i, 0xac100001u, (uint16_t)(1024 + i % 60000), 443, 0x02, 0, 0);
            if (flt_process(f, &q, FLT_FWD, 3) != FLT_ACCEPT || flt_process(f, &q, FLT_POST, 3) != FLT_ACCEPT) {
                fprintf(stderr, "bench_filter: a new connection was refused\n");
                return 1;
            }
        }
        res[4][run] = (double)(ns_now() - t0) / nc;
        flt_free(f);

        /* rr-filter's whole path, 1 and 1024 flows, then with masquerade */
        flt_ct_format(region, rsz, 65536, run);
        f = flt_new(region, ports, 2, er);
        unsigned np = lookups / 4;
        res[5][run] = path_ns(f, np, 1, false, &res[6][run]);
        path_ns(f, np, 1, true, &res[13][run]);
        res[7][run] = path_ns(f, np, 1024, false, &res[8][run]);
        path_ns(f, np, 1024, true, &res[16][run]);
        path_ns(f, 32768, 32768, false, &res[12][run]); /* the entries made, then looked up */
        res[11][run] = path_ns(f, np, 32768, false, &res[12][run]);
        path_ns(f, np, 32768, true, &res[14][run]);
        flt_free(f);
        flt_ct_format(region, rsz, 65536, run);
        f = flt_new(region, ports, 2, nr);
        res[9][run] = path_ns(f, np, 1, false, &res[10][run]);
        path_ns(f, np, 1, true, &res[15][run]);
        flt_free(f);
    }
    double med[NFIG], lo[NFIG], hi[NFIG];
    printf("bench_filter: %u rules, %u runs, %u lookups (linear walk: %u)\n", nrules, runs, lookups,
           lookups / 50 + 1);
    printf("%-22s %12s %12s %12s\n", "figure", "median", "min", "max");
    for (int k = 0; k < NFIG; k++) {
        qsort(res[k], runs, sizeof(double), cmp_d);
        med[k] = res[k][runs / 2];
        lo[k] = res[k][0];
        hi[k] = res[k][runs - 1];
        printf("%-22s %12.1f %12.1f %12.1f\n", names[k], med[k], lo[k], hi[k]);
    }
    printf("filter_pkt_established_ns %.1f\n", med[3]);
    printf("filter_new_conn_per_s %.0f\n", 1e9 / med[4]);
    printf("filter_set_lookup_ns %.1f\n", med[2]);
    printf("filter_path_udp_cycles %.0f\n", med[6]);
    printf("filter_path_nat_cycles %.0f\n", med[10]);
    printf("filter_path_udp32k_vs_percall %.3f\n", med[12] / med[14]);
    printf("filter_path_udp1_vs_percall %.3f\n", med[6] / med[13]);
    printf("filter_rules_%u_linear_vs_vmap %.1f\n", nrules, med[1] / med[0]);
    free(text);
    flt_rules_free(mapped);
    flt_rules_free(walked);
    flt_rules_free(set);
    flt_rules_free(er);
    flt_rules_free(nr);
    free(region);
    return 0;
}
