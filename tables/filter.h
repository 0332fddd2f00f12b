/* SPDX-License-Identifier: MIT */
/*
 * tables/filter.h: what the supervisor and rr-filter share (docs/filter.md):
 * the filter's typed config, and the head of the connection table's region
 * that the supervisor checks before it hands the region to a new instance.
 *
 * The region is a memfd the supervisor makes at `up`, sealed against
 * growing and shrinking, and keeps across every restart and upgrade of the
 * filter: the connections and NAT mappings outlive the process. Its layout
 * is libfilter's (services/filter/flt_int.h, struct ct_hdr); the fields
 * below are the head of that header, pinned by rr-filter's static asserts.
 */
#ifndef TBL_FILTER_H
#define TBL_FILTER_H

#include <stdint.h>

#include "ipc/svc.h"
#include "tables/config.h"

#define TBL_FILTER_CFG_VERSION 1u
#define TBL_FLT_RULES_MAX 65536u     /* bytes of rules text, carried in the config */
#define TBL_FLT_CT_MAGIC 0x52524354u /* "RRCT": libfilter's FLT_CT_MAGIC */
#define TBL_FLT_CT_VERSION 1u
#define TBL_FLT_CT_HDR_SIZE 64u
#define TBL_FLT_ADDR6 4u /* IPv6 addresses of a port the filter knows: masquerade's, and which are local */

/* An input ring's role: what the filter does to the packets it carries. */
enum tbl_flt_role {
    TBL_FLT_NONE = 0,
    TBL_FLT_INGRESS = 1, /* a filtered port's driver -> filter -> router: prerouting, then input if local */
    TBL_FLT_EGRESS = 2,  /* router -> filter -> a filtered port's driver: forward (or none), postrouting */
};

/* The head of struct ct_hdr: what the supervisor checks (filter_setup.c). */
struct tbl_flt_ct_head {
    uint32_t magic, version;
    uint32_t hdr_size, entry_size;
    uint32_t nentries, nbuckets;
    uint32_t seed, pad0;
    uint64_t total_size;
};

struct tbl_filter_cfg {
    struct tbl_cfg_hdr hdr;
    int32_t ct_fd;       /* the connection table's region, read-write */
    uint32_t ct_entries; /* its bound: [filter] conntrack_max */
    uint64_t ct_size;    /* its size, as made (the memfd is sealed at it) */
    uint32_t ct_seed;    /* the hash seed a new table is formatted with */
    uint32_t rules_len;  /* bytes of rules[] */
    /* Input ring i: its role, and the output ring its accepted packets
     * leave on; reject_out[p]: the output ring to port p's driver (a
     * rejected packet's reply), 0xff where there is none. */
    uint8_t role[IPC_SVC_MAX_RINGS];
    uint8_t pair[IPC_SVC_MAX_RINGS];
    uint8_t reject_out[IPC_MAX_PORTS];
    uint8_t naddr6[IPC_MAX_PORTS];
    uint8_t addr6[IPC_MAX_PORTS][TBL_FLT_ADDR6][16]; /* global ones first */
    char rules[TBL_FLT_RULES_MAX];                   /* the ruleset's text, not NUL-terminated */
};

#endif
