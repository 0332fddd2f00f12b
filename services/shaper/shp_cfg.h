/* SPDX-License-Identifier: MIT */
/*
 * services/shaper/shp_cfg.h: the shaper's parameters as the supervisor
 * passes them in the config blob's extra[] bytes (supervisor/shaper_ctl.c
 * writes them from the manifest's [shaper PORT] and [class PORT NAME]).
 * Plain data, host byte order, no pointers.
 */
#ifndef SHP_CFG_H
#define SHP_CFG_H

#include <stdint.h>

#define SHP_CFG_MAGIC 0x53485043u /* "SHPC" */
#define SHP_CFG_VERSION 1u
#define SHP_MAX_CLASSES 16u
#define SHP_NAME_MAX 16u

/* Match fields: every field present must hold (AND). Same bits as the manifest's SUP_MATCH_*. */
#define SHP_MATCH_DSCP 0x01u
#define SHP_MATCH_PROTO 0x02u
#define SHP_MATCH_SPORT 0x04u
#define SHP_MATCH_DPORT 0x08u
#define SHP_MATCH_SRC 0x10u
#define SHP_MATCH_DST 0x20u

struct shp_match {
    uint32_t fields; /* SHP_MATCH_* */
    uint8_t dscp;
    uint8_t proto;
    uint8_t src_len, dst_len;
    uint16_t sport_lo, sport_hi;
    uint16_t dport_lo, dport_hi;
    uint32_t src, dst; /* host byte order, no host bits */
};

struct shp_cfg_class {
    char name[SHP_NAME_MAX];
    uint64_t rate; /* guaranteed, bits per second */
    uint64_t ceil; /* may borrow up to this, bits per second */
    uint32_t prio; /* 0..7, lower borrows first */
    uint32_t pad;
    struct shp_match match; /* tried in class order; unused for the default class */
};

struct shp_cfg {
    uint32_t magic;    /* SHP_CFG_MAGIC */
    uint32_t version;  /* SHP_CFG_VERSION */
    uint64_t rate;     /* port rate, bits per second on the wire */
    uint32_t burst;    /* bytes */
    uint32_t overhead; /* bytes per frame beyond its length */
    uint32_t limit_pkts;  /* backlog bound, packets (0: default) */
    uint32_t limit_bytes; /* backlog bound, bytes (0: default) */
    uint32_t target_us;   /* CoDel target (0: 5000) */
    uint32_t interval_us; /* CoDel interval (0: 100000) */
    uint32_t quantum;     /* DRR quantum in bytes (0: 1514) */
    uint32_t ecn;         /* 1: mark ECN-capable packets instead of dropping them */
    uint32_t nclasses;    /* >= 1 */
    uint32_t default_class;
    struct shp_cfg_class classes[SHP_MAX_CLASSES];
};

#endif
