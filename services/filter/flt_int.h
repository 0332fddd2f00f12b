/* SPDX-License-Identifier: MIT */
/*
 * services/filter/flt_int.h: the filter's internals shared by its .c files:
 * the table's layout in its region, the parsed packet, the compiled rules.
 */
#ifndef RR_FILTER_FLT_INT_H
#define RR_FILTER_FLT_INT_H

#include "services/filter/flt.h"

#include <stdbool.h>

/* ---- the table region: header, buckets, entries; indices only ---- */

enum ct_tcp_state {
    TS_NONE, TS_SYN_SENT, TS_SYN_RECV, TS_ESTABLISHED, TS_FIN_WAIT, TS_CLOSE_WAIT,
    TS_LAST_ACK, TS_TIME_WAIT, TS_CLOSE, TS_SYN_SENT2, TS_MAX
};

#define CTF_USED 0x01u
#define CTF_CONFIRMED 0x02u
#define CTF_ASSURED 0x04u
#define CTF_SEEN_REPLY 0x08u
#define CTF_SNAT 0x10u
#define CTF_DNAT 0x20u

struct ct_tcp_side {
    uint32_t end;    /* highest seq + len sent */
    uint32_t maxend; /* highest ack + window the peer allowed */
    uint32_t maxwin; /* largest window (scaled) sent */
    uint8_t wscale;
    uint8_t has_wscale;
    uint8_t liberal; /* picked up mid-stream: windows unknown, not checked */
    uint8_t pad;
};

struct ct_entry {
    struct flt_tuple t[2]; /* [0] original, [1] reply (after NAT) */
    uint32_t next[2];      /* hash chain per tuple: entry*2+dir + 1, 0 = end */
    uint32_t flags;
    uint8_t tcp_state;
    uint8_t retrans;
    uint8_t last_dir, last_idx;
    uint32_t gen; /* a packet between hooks holds it: a reused entry is not its own */
    uint32_t pad;
    uint64_t expires_ms;
    struct ct_tcp_side side[2];
    uint64_t pkts[2], bytes[2];
};

struct ct_hdr {
    uint32_t magic, version;
    uint32_t hdr_size, entry_size;
    uint32_t nentries, nbuckets; /* nbuckets: power of two */
    uint32_t seed;
    uint32_t pad0;
    uint64_t total_size;
    uint32_t check;     /* over the fields above: the geometry never changes */
    /* mutable: checked by walking the structure, not by a sum, so that a
     * writer killed between two stores leaves an adoptable table */
    uint32_t free_head; /* entry + 1, chained through next[0] */
    uint32_t count;
    uint32_t sweep;     /* next entry the sweep looks at */
    uint32_t gen;       /* the last entry generation handed out */
    uint32_t pad1;      /* to 64 bytes: the buckets start on a cache line */
};

static inline uint32_t *ct_buckets(struct ct_hdr *h) { return (uint32_t *)(h + 1); }
static inline struct ct_entry *ct_entries(struct ct_hdr *h)
{
    size_t off = sizeof *h + (size_t)h->nbuckets * 4;
    off = (off + 63) & ~(size_t)63;
    return (struct ct_entry *)((uint8_t *)h + off);
}

/* ---- a parsed packet ---- */

struct flt_parsed {
    int family;          /* 0 = not IP */
    uint32_t l3;         /* offset of the IP header */
    uint32_t l4;         /* offset of the L4 header, 0 = none */
    uint32_t end;        /* end of the IP packet in the frame */
    uint8_t proto;
    uint8_t tcpflags;
    uint8_t icmp_type, icmp_code;
    bool frag;           /* any fragment: not trackable */
    bool icmp_err;       /* an ICMP error quoting inner */
    struct flt_tuple t;  /* the packet's own tuple */
    struct flt_tuple in; /* icmp_err: the quoted packet's tuple */
    uint32_t in_l3, in_l4, in_end; /* icmp_err: quoted headers' offsets */
};

int flt_parse(const uint8_t *d, uint32_t len, struct flt_parsed *pp);

/* ---- the connection table's internal API (ct.c, ct_tcp.c) ---- */

struct ct_table {
    struct ct_hdr *h;
    uint32_t *buckets;
    struct ct_entry *e;
    bool corrupt;
};

int ct_bind(struct ct_table *ct, void *region);
struct ct_entry *ct_get(struct ct_table *ct, uint32_t ref);
/* the bucket t hashes to, and hints that prefetch a bucket, the entry at
 * its chain's head, or an entry by ref (a burst's misses overlap) */
uint32_t ct_bucket(const struct ct_table *ct, const struct flt_tuple *t);
void ct_prefetch_bucket(const struct ct_table *ct, uint32_t b);
void ct_prefetch_chain(const struct ct_table *ct, uint32_t b);
void ct_prefetch_ref(const struct ct_table *ct, uint32_t ref);
/* ref of the entry holding t (either direction, *dir), or 0 */
uint32_t ct_find(struct ct_table *ct, const struct flt_tuple *t, uint64_t now, int *dir);
/* a new unconfirmed entry for orig (reply = its inverse); 0 when full */
uint32_t ct_create(struct ct_table *ct, const struct flt_tuple *orig, uint64_t now, struct flt_stats *st);
void ct_delete(struct ct_table *ct, uint32_t ref);
/* re-hash the reply tuple after NAT changed it */
void ct_rehash_reply(struct ct_table *ct, uint32_t ref, const struct flt_tuple *reply);
unsigned ct_sweep(struct ct_table *ct, uint64_t now, unsigned budget);
void flt_tuple_invert(struct flt_tuple *out, const struct flt_tuple *in);

/* TCP: 0 ok, else a FLT_R_* reason; *reopen when a SYN ends a closed one */
int ct_tcp_new(struct ct_entry *e, const uint8_t *tcp, uint32_t tcplen, uint32_t paylen);
int ct_tcp_track(struct ct_entry *e, int dir, const uint8_t *tcp, uint32_t tcplen, uint32_t paylen, uint64_t now,
                 bool *reopen);
uint64_t ct_timeout(const struct ct_entry *e);

/* ---- NAT and checksums (nat.c) ---- */

uint16_t csum_fold(uint32_t sum);
/* RFC 1624: the checksum at *cs after old bytes became new ones (n even) */
void csum_replace(uint8_t *cs, const uint8_t *old, const uint8_t *new_, size_t n);
/* rewrite the packet (parsed as pp) from its tuple to target's fields */
void nat_rewrite(uint8_t *d, const struct flt_parsed *pp, const struct flt_tuple *target, bool src, bool dst);
void nat_icmp_error(uint8_t *d, const struct flt_parsed *pp, const struct ct_entry *e, int dir, bool src_side);
/* pick the reply tuple's dst (SNAT) keeping the port if free; -1 if none */
int nat_snat(struct ct_table *ct, struct ct_entry *e, const uint8_t addr[16], uint16_t port_lo, uint16_t port_hi,
             uint64_t now);
/* build a reject reply in place; 0 or -1 (no room, not rejectable) */
int flt_build_reject(struct flt_pkt *p, const struct flt_parsed *pp, bool tcp_reset, const struct flt_port *port);
void flt_fix_l4_full(uint8_t *d, const struct flt_parsed *pp);

/* ---- compiled rules (rules.c parses, eval.c compiles and runs) ---- */

enum m_kind {
    M_IIF, M_OIF, M_SADDR, M_DADDR, M_PROTO, M_SPORT, M_DPORT, M_ICMPTYPE, M_TCPFLAGS, M_CTSTATE, M_FAMILY,
    M_LIMIT, M_NKINDS
};

struct range128 { uint64_t lo_hi, lo_lo, hi_hi, hi_lo; };

struct flt_set {
    char name[32];
    int kind;                 /* 0 addresses, 1 ports/numbers */
    int family;               /* addresses: 4 or 6 */
    struct range128 *ranges;  /* addresses: sorted, merged intervals */
    uint32_t nranges, cap;
    uint8_t *bits;            /* numbers: 65536-bit map */
};

struct match {
    uint8_t kind;
    uint8_t neg;
    uint8_t set_is_named;
    uint8_t pad;
    int32_t set; /* index into rules->sets, -1: the inline value below */
    uint64_t a, b; /* inline: ports lo/hi, proto, mask/value, bits, family; limit: rate per s, burst */
    uint8_t addr[16];
    uint8_t plen; /* inline prefix length over the 128-bit form; tcp flags: 1 = "==" */
    uint32_t burst; /* limit: packets */
};

enum act_kind { A_NONE, A_ACCEPT, A_DROP, A_REJECT, A_REJECT_RST, A_SNAT, A_DNAT, A_MASQ };

#define MAX_MATCH 12

struct rule {
    struct match m[MAX_MATCH];
    uint8_t nm;
    uint8_t act;
    uint8_t counter;
    uint8_t nat_has_port;
    uint8_t primed; /* limit's bucket filled to its burst once */
    uint8_t set_mark; /* meta mark set: a statement, not a verdict */
    uint32_t mark;
    uint8_t nat_addr[16];
    uint16_t nat_port_lo, nat_port_hi;
    uint32_t line;
    uint64_t pkts, bytes;
    double tokens; /* limit's bucket */
    uint64_t last_ms;
};

/* a run of rules that differ only in one exact-value match: a hash map from
 * that value to the first rule with it */
struct vmap {
    uint32_t first, n;  /* rules[first .. first+n) */
    uint8_t key;        /* which match index in each rule is the key */
    uint32_t mask;      /* slots - 1 */
    uint64_t *keys_hi, *keys_lo;
    uint32_t *rule;     /* slot -> rule index + 1, 0 empty */
};

struct chain {
    struct rule *r;
    uint32_t n, cap;
    uint8_t policy; /* A_ACCEPT or A_DROP */
    struct vmap *maps;
    uint32_t nmaps;
    int32_t *map_at; /* rule index -> map index, -1 */
};

struct flt_rules {
    struct chain c[FLT_NHOOKS];
    struct flt_set *sets;
    uint32_t nsets;
    unsigned nports;
};

int flt_rules_finish(struct flt_rules *r); /* build sets' order and vmaps */
void flt_rules_linear(struct flt_rules *r); /* drop the vmaps: bench_filter's baseline */
bool flt_set_has_addr(const struct flt_set *s, const uint8_t a[16]);
int flt_set_add_range(struct flt_set *s, const uint8_t lo[16], const uint8_t hi[16]);
void flt_prefix_range(const uint8_t a[16], unsigned plen, uint8_t lo[16], uint8_t hi[16]);

struct eval_in {
    const struct flt_parsed *pp;
    uint16_t iif, oif;
    uint8_t ctstate;
    bool nat_ok; /* a connection's first packet: NAT rules may apply */
    uint32_t bytes;
    uint64_t now;
    uint32_t *mark; /* the packet's mark: a matched rule's meta mark set writes it */
};
/* the rule that decides (its index, or -1 for the policy) */
int flt_eval(struct flt_rules *r, enum flt_hook h, const struct eval_in *in);

#endif
