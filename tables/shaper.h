/* SPDX-License-Identifier: MIT */
/*
 * tables/shaper.h: what the supervisor and rr-shaper share: the shaper's
 * parameters (the typed config blob of tables/config.h carries them), the
 * layout of its counters in its stats region, and its control mailbox.
 *
 * Counters, in the stats region (ipc/svc.h), by index:
 *   [0, SHP_P_N)                   port-wide counters (shp_pctr_names)
 *   SHP_I_RATE                     the port rate in effect, bit/s
 *   SHP_I_FULL_DROPS               packets the driver's ring refused
 *   SHP_I_CLASS0 + c*SHP_C_N + k   class c's counter k (shp_cctr_names)
 *
 * Mailbox: a region of its own (IPC_SHM_MBOX), one per shaper, mapped
 * read-write by both. The supervisor writes class (0: the port, c+1: class
 * c), rate and ceil (bit/s, 0: unchanged), then seq (release); the shaper
 * applies the change, writes result (0 or an errno), then ack = seq
 * (release). Each word has one writer, and the two writers' words sit on
 * separate cache lines. A shaper that starts with seq != ack applies the
 * command its predecessor left unanswered. Both map the region read-write,
 * so each side treats what it reads as input: the shaper checks the class
 * and the rates; the supervisor keeps its own copy of seq, takes ack as an
 * answer only if it is that seq (seq - 1: not taken yet; anything else is
 * corruption, logged), and result only as an errno below 4096.
 */
#ifndef TABLES_SHAPER_H
#define TABLES_SHAPER_H

#include <stdint.h>

#include "ipc/atomic.h"
#include "ipc/shm.h"

#define SHP_MAX_CLASSES 16u
#define SHP_NAME_MAX 16u

/* Match fields: every field present must hold (AND). The manifest parser writes them too. */
#define SHP_MATCH_DSCP 0x01u
#define SHP_MATCH_PROTO 0x02u
#define SHP_MATCH_SPORT 0x04u
#define SHP_MATCH_DPORT 0x08u
#define SHP_MATCH_SRC 0x10u
#define SHP_MATCH_DST 0x20u
/* IPv6 prefixes: src6/dst6 with src_len/dst_len. A class holds one family's
 * prefixes only (the manifest refuses a mix), and takes that family only. */
#define SHP_MATCH_SRC6 0x40u
#define SHP_MATCH_DST6 0x80u
/* The mark a [filter] rule set (`meta mark set N`), as tc's fw filter
 * takes nftables' mark: the filter's egress hands it on in the buffer's
 * metadata (ipc_meta.mark); 0 when no rule set one. */
#define SHP_MATCH_MARK 0x100u
#define SHP_MATCH_V4 (SHP_MATCH_SRC | SHP_MATCH_DST)
#define SHP_MATCH_V6 (SHP_MATCH_SRC6 | SHP_MATCH_DST6)

struct shp_match {
    uint32_t fields; /* SHP_MATCH_* */
    uint8_t dscp;
    uint8_t proto;
    uint8_t src_len, dst_len; /* of src/dst, or of src6/dst6 */
    uint16_t sport_lo, sport_hi;
    uint16_t dport_lo, dport_hi;
    uint32_t src, dst;         /* host byte order, no host bits */
    uint8_t src6[16], dst6[16]; /* network byte order, no host bits */
    uint32_t mark;              /* SHP_MATCH_MARK */
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

/* Per-class counters: also the layout of the stats the process publishes. */
enum shp_cctr {
    SHP_C_RATE,    /* configured rate, bit/s */
    SHP_C_CEIL,    /* configured ceil, bit/s */
    SHP_C_BPS,     /* measured rate, bit/s on the wire (1 s windows) */
    SHP_C_TX_PKTS,
    SHP_C_TX_BYTES, /* wire bytes */
    SHP_C_BACKLOG,  /* packets queued now */
    SHP_C_DROPS,    /* overflow + CoDel */
    SHP_C_MARKS,    /* ECN CE marks */
    SHP_C_N
};

/* Port-wide counters. */
enum shp_pctr {
    SHP_P_ENQ_PKTS,
    SHP_P_TX_PKTS,
    SHP_P_TX_BYTES,
    SHP_P_BACKLOG,
    SHP_P_BACKLOG_BYTES,
    SHP_P_OVERFLOW_DROPS,
    SHP_P_CODEL_DROPS,
    SHP_P_MARKS,
    SHP_P_N
};

#define SHP_I_RATE SHP_P_N
#define SHP_I_FULL_DROPS (SHP_P_N + 1)
#define SHP_I_CLASS0 (SHP_P_N + 2)

extern const char *const shp_pctr_names[SHP_P_N];
extern const char *const shp_cctr_names[SHP_C_N];

#define SHP_MBOX_VERSION 1u

struct shp_mbox {
    struct ipc_shm_hdr shm;
    /* Written by the supervisor. */
    _Alignas(IPC_CACHELINE) _Atomic uint64_t seq;
    _Atomic uint64_t cls;
    _Atomic uint64_t rate;
    _Atomic uint64_t ceil;
    /* Written by the shaper. */
    _Alignas(IPC_CACHELINE) _Atomic uint64_t ack;
    _Atomic uint64_t result;
};

/** Supervisor: a new mailbox region in a memfd. Returns 0 with *fd and *mb, or -errno with @err. */
int shp_mbox_create(const char *name, int *fd, struct shp_mbox **mb, struct ipc_err *err);

/** Map the mailbox behind @fd (the shaper). Returns 0 or -errno with @err. */
int shp_mbox_attach(int fd, struct shp_mbox **mb, struct ipc_err *err);

void shp_mbox_detach(struct shp_mbox *mb);

#endif
