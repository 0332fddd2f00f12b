/* SPDX-License-Identifier: MIT */
/*
 * services/filter/flt.h: the filter's core (libfilter.a): connection
 * tracking and NAT over a flat, pointer-free table (ct.c, ct_tcp.c, nat.c),
 * the rule language (rules.c) compiled into chains with sets and verdict maps
 * (eval.c), and the per-packet entry point (pkt.c). See docs/filter.md.
 *
 * Nothing here allocates on the packet path, reads a clock or keeps a
 * pointer in the table: time is the caller's now_ms, and the table is a
 * caller-provided region that another process may adopt (flt_ct_attach).
 */
#ifndef RR_FILTER_FLT_H
#define RR_FILTER_FLT_H

#include <stddef.h>
#include <stdint.h>

/* ---- hooks, verdicts, ct states ---- */

enum flt_hook { FLT_PRE = 0, FLT_INPUT = 1, FLT_FWD = 2, FLT_POST = 3, FLT_NHOOKS = 4 };

enum flt_verdict {
    FLT_ACCEPT = 0, /* pass on, frame possibly rewritten by NAT */
    FLT_DROP = 1,
    FLT_REJECT = 2, /* the frame now holds the reply: send it back out iif */
};

/* ct state bits, as `ct state` matches them */
#define FLT_CT_NEW 0x01u
#define FLT_CT_EST 0x02u
#define FLT_CT_REL 0x04u
#define FLT_CT_INV 0x08u
#define FLT_CT_UNTRACKED 0x10u /* not IP (ARP...): rules see no ct state */

/* why a packet was dropped or marked invalid; counted in struct flt_stats */
enum flt_reason {
    FLT_R_NONE = 0,
    FLT_R_RULE,      /* a rule's drop or the chain's policy */
    FLT_R_MALFORMED, /* truncated or inconsistent headers */
    FLT_R_FRAGMENT,  /* fragments: no reassembly here (docs/filter.md) */
    FLT_R_TCP_STATE, /* a TCP segment the state table calls invalid */
    FLT_R_TCP_WINDOW,
    FLT_R_TABLE_FULL, /* no entry free and none could be dropped early */
    FLT_R_NAT_PORTS,  /* no free port for a source NAT */
    FLT_R_CORRUPT,    /* the table failed a check: never followed */
    FLT_R_MAX
};

/* ---- tuples and the connection table ---- */

/* Addresses are 16 bytes: IPv4 as v4-mapped (::ffff:a.b.c.d), so that one
 * code path serves both families. Ports are host order; for ICMP echo both
 * are the identifier. */
struct flt_tuple {
    uint8_t src[16];
    uint8_t dst[16];
    uint16_t sport;
    uint16_t dport;
    uint8_t proto;
    uint8_t family; /* 4 or 6 */
    uint8_t pad[2];
};

#define FLT_CT_MAGIC 0x52524354u /* "RRCT" */
#define FLT_CT_VERSION 1u

/* Size of the region for a table of `entries` connections. */
size_t flt_ct_region_size(uint32_t entries);

/* Lay a new, empty table into region (size bytes, from flt_ct_region_size).
 * Returns 0 or -EINVAL. */
int flt_ct_format(void *region, size_t size, uint32_t entries, uint32_t seed);

/* Adopt a table another process wrote: header, sizes, every bucket and
 * chain index and the free list are checked; a region that fails any check
 * is refused (-EBADMSG) and must be formatted anew. 0 when adopted. */
int flt_ct_attach(void *region, size_t size);

/* Counts over the table (flt_ct_count) for tests and `conntrack count`. */
uint32_t flt_ct_count(const void *region);

/* ---- the filter ---- */

struct flt;       /* opaque: ruleset + table + ports + stats */
struct flt_rules; /* opaque: a compiled ruleset */

#define FLT_MAX_PORTS 64
#define FLT_NAME_MAX 16

struct flt_port {
    char name[FLT_NAME_MAX];
    uint8_t mac[6];
    uint8_t has_v4, has_v6;
    uint8_t v4[4];  /* masquerade's source for IPv4 and reject's */
    uint8_t v6[16]; /* ... and for IPv6 */
};

struct flt_stats {
    uint64_t verdict[3];
    uint64_t reason[FLT_R_MAX];
    uint64_t ct_new, ct_early_drop, ct_expired;
};

/* Parse and compile rules text. On error returns NULL and writes
 * "line L, column C: expected X, got Y" into err. ports names the ports the
 * rules may use (iif/oif): index = port number. */
struct flt_rules *flt_rules_compile(const char *text, size_t len, const struct flt_port *ports, unsigned nports,
                                    char *err, size_t errlen);
void flt_rules_free(struct flt_rules *r);
/* Rules in a chain, and one rule's counters (for `filter show`). */
unsigned flt_rules_count(const struct flt_rules *r, enum flt_hook h);
int flt_rules_counter(const struct flt_rules *r, enum flt_hook h, unsigned i, uint64_t *pkts, uint64_t *bytes);
/* The line of the rules text a rule starts on (0 for a bad index). */
unsigned flt_rules_line(const struct flt_rules *r, enum flt_hook h, unsigned i);

/* A filter over a table region already formatted or attached, and rules
 * (owned by the caller; swapped with flt_set_rules). NULL on bad args. */
struct flt *flt_new(void *ct_region, const struct flt_port *ports, unsigned nports, struct flt_rules *rules);
void flt_free(struct flt *f);
void flt_set_rules(struct flt *f, struct flt_rules *rules);
const struct flt_stats *flt_get_stats(const struct flt *f);

/* One packet at one hook. ct carries the connection from hook to hook (0:
 * none yet; the caller keeps it with the packet between its calls). */
struct flt_pkt {
    uint8_t *data;    /* Ethernet frame, rewritten in place */
    uint32_t len;     /* in/out */
    uint32_t cap;     /* bytes writable at data (reject builds a reply) */
    uint16_t iif, oif;
    uint32_t ct;      /* in/out: connection ref, 0 = none */
    uint32_t ctgen;   /* in/out: with ct: which use of that entry */
    uint8_t ctstate;  /* out: FLT_CT_* the rules saw */
    uint8_t verdict;  /* out: enum flt_verdict */
    uint8_t reason;   /* out: enum flt_reason when dropped */
    uint8_t pad;
    uint32_t mark;    /* in/out: the packet's mark, as a rule's meta mark set left it */
};

enum flt_verdict flt_process(struct flt *f, struct flt_pkt *p, enum flt_hook hook, uint64_t now_ms);
/* Forward, then postrouting if forward accepted: flt_process at each, the
 * frame parsed once where forward left it as it was. */
enum flt_verdict flt_process_out(struct flt *f, struct flt_pkt *p, uint64_t now_ms);
/* flt_process at @hook for each of a burst's packets, in order, with the
 * burst's connection lookups prefetched; every verdict in p[i].verdict.
 * @input (or NULL): a packet @hook accepted that it calls the router's
 * goes through FLT_INPUT too, before the next packet. Returns how many
 * were accepted. */
unsigned flt_process_many(struct flt *f, struct flt_pkt *p, unsigned n, enum flt_hook hook, uint64_t now_ms,
                          _Bool (*input)(void *ctx, const struct flt_pkt *p), void *ctx);
/* A hint: the connection a ct word names (a packet's between two hooks)
 * is about to be read. */
void flt_prefetch_ct(struct flt *f, uint32_t ct);
/* A burst: every packet's verdict in p[i].verdict; returns how many were
 * accepted. Also expires a bounded number of idle connections. */
unsigned flt_process_burst(struct flt *f, struct flt_pkt *p, unsigned n, enum flt_hook hook, uint64_t now_ms);

/* Expire at most budget idle entries; returns how many. */
unsigned flt_ct_sweep(struct flt *f, uint64_t now_ms, unsigned budget);
/* Look a tuple up (either direction); 0 if absent, else the ref. */
uint32_t flt_ct_lookup(struct flt *f, const struct flt_tuple *t, uint64_t now_ms);
/* A connection's two tuples, TCP state, flags; -ENOENT for a bad ref. */
struct flt_ct_info {
    struct flt_tuple orig, reply;
    uint8_t tcp_state;
    uint8_t assured, confirmed, seen_reply;
    uint64_t expires_ms;
};
int flt_ct_get(const struct flt *f, uint32_t ref, struct flt_ct_info *out);
/* A reader beside the writer (`conntrack show`): entry i of a region of
 * @size bytes, copied out with every bound taken from @size and a header
 * that checks, never from a link. 0; -ENOENT for an unused entry or i past
 * the table; -EBADMSG for a region that does not check. The copy may be
 * torn by a concurrent write: for display only. */
int flt_ct_peek(const void *region, size_t size, uint32_t i, struct flt_ct_info *out);

/* Checksums, exported for the tests: one's complement sum of data. */
uint16_t flt_csum(const void *data, size_t len, uint32_t sum);

#endif
