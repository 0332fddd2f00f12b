/* SPDX-License-Identifier: MIT */
/*
 * tables/fib_impl.h: the FIB regions' private layout and the plumbing both
 * families share, written once with the family as a parameter (struct
 * fib_family): sizing a region (tables/fib.c), mapping and attaching it
 * (fib.c), and the writer's creation, recycler, hashes, snapshot and stats
 * (tables/fib_common.c). The family halves keep only what differs: the
 * entries and the updates (tables/fib_write.c for the IPv4 DIR-24-8,
 * fib6_write.c for the IPv6 trie) and the inline lookups (fib.h, fib6.h).
 * Nothing outside tables/ includes this file, but the tests that compile a
 * family's writer in.
 */
#ifndef TABLES_FIB_IMPL_H
#define TABLES_FIB_IMPL_H

#include "tables/fib6.h"
#include "tables/fib.h"
#include "tables/fib_group.h"

#define FIB_PAGE 4096u

/* IPv4 writer-side hash slot: prefix (key = addr << 6 | len) or next hop (key = packed nh). */
struct fib_hslot {
    uint64_t key;
    uint32_t val; /* prefix: next-hop index; next hop: its index */
    uint32_t used;
};

/*
 * IPv6 writer-side hash slot. A prefix: k0/k1 its address (host-order
 * halves), k2 its length, val its next-hop index. A next hop: k0/k1/k2 its
 * three packed words (gateway halves, port | flags << 16), val its index.
 */
struct fib6_hslot {
    uint64_t k0, k1;
    uint32_t k2;
    uint32_t val;
    uint32_t used;
    uint32_t pad;
};
_Static_assert(sizeof(struct fib6_hslot) == 32, "two slots a cache line");

/* Page 1 of either family's region. */
struct fib_layout {
    uint32_t max_prefixes, tbl8_groups, max_nh;
    uint32_t pfx_mask, nhh_mask; /* hash capacities - 1 (powers of two) */
    uint32_t pad0;
    uint64_t off_tbl24, off_tbl8, off_nh, off_nh_ref, off_pfx, off_nhh;
    uint64_t off_tbl8_free, off_tbl8_rq_idx, off_tbl8_rq_gen;
    uint64_t off_nh_free, off_nh_rq_idx, off_nh_rq_gen;
    /* Writer state: read back by the writer only after a bounds check. */
    uint32_t dirty;
    uint32_t n_prefixes, n_nh;
    uint32_t tbl8_hwm, tbl8_nfree, tbl8_rq_head, tbl8_rq_len;
    uint32_t nh_hwm, nh_nfree, nh_rq_head, nh_rq_len;
    /* Next-hop groups (tables/fib_group.h), after what came before them,
     * which tests/integ/router_failed_fib.sh reads at fixed offsets. */
    uint32_t mp_groups, mph_mask;
    uint32_t n_mp, mp_hwm, mp_nfree, mp_rq_head, mp_rq_len;
    uint64_t off_mp, off_mph, off_mp_free, off_mp_rq_idx, off_mp_rq_gen;
};
_Static_assert(sizeof(struct fib_layout) <= FIB_PAGE, "layout page");

/* What one family's region is: its kind and version, its sizes' bounds, and
 * the sizes of its next hops and hash slots, which set the layout. */
struct fib_family {
    const char *name; /* "fib", "fib6": for messages */
    uint32_t shm_kind, version;
    uint32_t max_prefixes, max_groups, max_nh;
    uint32_t nh_bytes, hslot_bytes;
    struct fib_params defaults;
};

extern const struct fib_family fib_family4, fib_family6;

/* ---- layout and mapping (tables/fib.c) ---- */

/** Fill @l with the offsets of a region of family @f sized by @p and return its size. */
uint64_t fib_layout_of(const struct fib_family *f, struct fib_layout *l, const struct fib_params *p);

/**
 * Map the tables behind @fd read-only and check that the region is what its
 * layout page says (sizes within @f's bounds, offsets, size). On success @m
 * points into it, with the writer's limits (m->lim) taken from the checked
 * sizes, and *@dirty says whether its writer died inside an update.
 */
int fib_map_open(const struct fib_family *f, struct fib_map *m, int fd, bool *dirty, struct ipc_err *err);

/** Point @m's tables into the region at @base, laid out as @l. */
void fib_map_bind(struct fib_map *m, void *base, size_t size, const struct fib_layout *l);

/** fib_attach and fib6_attach, for family @f. */
int fib_map_attach(const struct fib_family *f, struct fib_map *m, int fd, int rfd, int reader_slot,
                   struct ipc_err *err);

void fib_map_detach(struct fib_map *m);

/* ---- the writer (tables/fib_common.c) ---- */

/** fib_create and fib6_create, for family @f (@readers_fd as fib6_create's). */
int fib_map_create(const struct fib_family *f, const char *name, const struct fib_params *p, int readers_fd,
                   struct fib_map *m, int *fd, int *rfd, struct ipc_err *err);

/* A bounds check on something read back from the region: a failure counts
 * in m->corrupt, and the caller fails its update with -EUCLEAN. */
bool fib_map_corrupt(struct fib_map *m);
#define FIB_OK(m, cond) (ipc_likely(cond) ? true : fib_map_corrupt(m))

/* One recycler (tbl8 groups or next hops): a free stack, a high-water mark
 * and a retire queue, a ring of @cap in the region. */
struct fib_rq {
    uint32_t cap;
    uint32_t *nfree, *hwm, *head, *len, *free_stack, *idx;
    uint64_t *gen;
};

/* Process-local pointers into the writer arrays, from the writer's own sizes. */
struct fib_w {
    uint32_t *nh_ref;
    uint8_t *pfx, *nhh; /* the family's hash slots */
    uint8_t *mph;       /* next-hop groups by fingerprint: struct fib_hslot (tables/fib_group.c) */
    struct fib_rq groups, nhs, mp;
};

struct fib_w fib_map_w(const struct fib_family *f, struct fib_map *m);

/** The layout page's counters, checked against the writer's own sizes. */
bool fib_map_state_ok(struct fib_map *m);

/** Unlinking is done: bump gen (W2 side) and return the retire stamp; while
 * m->gen_defer, the stamp of the next switch (fib_map_gen_commit makes it). */
uint64_t fib_retire_gen(struct fib_map *m);

/** The one switch for what @m (and @also, if not NULL) retired while
 * deferring; true if one was needed. */
bool fib_map_gen_commit(struct fib_map *m, struct fib_map *also);

/** Retire object @i of @q, stamped @gen; false (counted) if the queue is corrupt. */
bool fib_rq_push(struct fib_map *m, const struct fib_rq *q, uint32_t i, uint64_t gen);

/**
 * Is there room for @want new objects in @q, waiting briefly for readers
 * to leave retired ones? 0, -EAGAIN (retired ones exist, readers still may
 * hold them), -ENOSPC or -EUCLEAN.
 */
int fib_rq_room(struct fib_map *m, const struct fib_rq *q, uint32_t want);

/** Take a free object (fib_rq_room said there is one); UINT32_MAX (counted) if impossible. */
uint32_t fib_rq_take(struct fib_map *m, const struct fib_rq *q);

/** Recycle what no reader can hold in both of @f's queues; returns how many. */
unsigned fib_map_reclaim(const struct fib_family *f, struct fib_map *m);

/** The supervisor, after the router using reader @slot died. */
void fib_map_reader_reset(struct fib_map *m, unsigned slot);

struct fib_stats;
void fib_map_stats(const struct fib_map *m, struct fib_stats *st);

/* The writer's hash tables (linear probing, bounded probes, backward-shift
 * deletion), for either family's slots: a slot holds key_bytes of key at
 * offset 0, then the value at val_off and the used flag at used_off. */
struct fib_hkind {
    uint32_t slot_bytes, key_bytes, val_off, used_off;
    uint32_t (*hash)(const void *key);
};

void *fib_h_find(const struct fib_hkind *k, uint8_t *t, uint32_t mask, const void *key);
bool fib_h_insert(const struct fib_hkind *k, uint8_t *t, uint32_t mask, const void *key, uint32_t val);
void fib_h_remove(const struct fib_hkind *k, uint8_t *t, uint32_t mask, void *slot);

/* Shared with the open-addressed neighbour tables (tables/neigh_common.c):
 * may the entry at @j, whose home is @home, move back into the hole at @i?
 * Not if its home lies cyclically in (i, j]. */
static inline bool fib_h_may_move(uint32_t i, uint32_t j, uint32_t home)
{
    return i <= j ? (home <= i || home > j) : (home <= i && home > j);
}

/*
 * What the shared writer code asks of a family: its region, its hash slots
 * (one kind for prefixes and next hops), and its next hops, keyed by their
 * hash key (what fib_nh_store writes to the region, and fib_nh_key reads
 * back). new_life is the test hook of the family's writer (FIB_ON_NEW_LIFE,
 * FIB6_ON_NEW_LIFE), called as a group or next hop is taken for a new life,
 * before anything is written to it.
 */
struct fib_wops {
    const struct fib_family *f;
    const struct fib_hkind *h;
    void (*nh_store)(struct fib_map *m, uint32_t i, const void *key);
    void (*nh_key)(const struct fib_map *m, uint32_t i, void *key);
    void (*new_life)(bool tbl8, uint32_t idx);
    /* Next-hop groups (tables/fib_group.c): the key of group @g's header
     * next hop, and whether @key is a header (its group in *@g). */
    void (*mp_hdr_key)(uint32_t g, void *key);
    bool (*mp_is_hdr)(const void *key, uint32_t *g);
};

/* The largest hash key of either family, for keys on the stack. */
#define FIB_KEY_MAX 24u

/** Is there a slot for next hop @key, existing or free? 0 or fib_rq_room's error. */
int fib_nh_room(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, const void *key);

/** Find or create next hop @key (fib_nh_room said it can); takes a reference. */
int fib_nh_get(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, const void *key, uint32_t *idx);

/** Drop a reference to next hop @i; the last one retires it, stamped @gen (0: a stamp of its own),
 * and a group header's last one its group and the group's references on its members. */
int fib_nh_put(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t i, uint64_t gen);

/** Take a free group (fib_rq_room said there is one) for a new life; UINT32_MAX if impossible. */
uint32_t fib_group_new(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w);

/**
 * The prefix keyed @key, checked: its slot with *@nh its next hop, NULL
 * when absent (*@nh = UINT32_MAX when the slot failed its check).
 */
void *fib_pfx_find(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, const void *key,
                   uint32_t *nh);

/**
 * An add's or replace's prefix, once the entries name next hop @ni: a new
 * one goes into the prefix hash; an existing one (@s) drops its old next
 * hop. Clears dirty. 0 or -EUCLEAN.
 */
int fib_pfx_commit(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, void *s, const void *key,
                   uint32_t ni);

/**
 * An add's or replace's checks, before anything is written: the region's
 * state, and prefix @key (its slot in *@s, NULL when new). 0, -EUCLEAN,
 * -EEXIST or -ENOSPC. Fills @w.
 */
int fib_set_begin(const struct fib_wops *o, struct fib_map *m, struct fib_w *w, const void *key, bool replace,
                  void **s);

/**
 * Room for @groups new groups and for next hop @nk, checked before the
 * first store; then the update begins (dirty) with a reference taken on
 * the next hop, its index in *@ni.
 */
int fib_set_nh(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t groups, const void *nk,
               uint32_t *ni);

/**
 * A delete's checks: the region's state, and prefix @key (its slot in *@s,
 * its next hop in *@ni). 0, -ENOENT or -EUCLEAN. Fills @w.
 */
int fib_del_begin(const struct fib_wops *o, struct fib_map *m, struct fib_w *w, const void *key, void **s,
                  uint32_t *ni);

/** The delete begins (dirty): prefix slot @s leaves the hash. */
void fib_del_unlink(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, void *s);

/*
 * A multipath update's next hops (tables/fib_group.c): the members' hash
 * keys (the family's next-hop keys) and weights, sorted by fib_mp_prepare.
 */
struct fib_mp_req {
    unsigned n;
    uint64_t key[FIB_MP_MAX][FIB_KEY_MAX / sizeof(uint64_t)];
    uint16_t weight[FIB_MP_MAX];
};

/** Sort @r's members into the group's canonical order; -EINVAL for a bad count, weight or a duplicate. */
int fib_mp_prepare(const struct fib_wops *o, struct fib_mp_req *r);

/**
 * fib_set_nh for a group: room for @groups tbl8 groups, for the group
 * (found by its members, or a new one) and its next hops, checked before
 * the first store; then the update begins (dirty) with a reference on the
 * group's header next hop, its index in *@ni.
 */
int fib_mp_set_nh(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t groups,
                  const struct fib_mp_req *r, uint32_t *ni);

/** Group @g's header's last reference went (stamp @gen): release its members, retire it. */
int fib_mp_put(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t g, uint64_t gen);

/**
 * The members of the group whose header next hop has key @hkey, checked:
 * each member's key into @keys (FIB_KEY_MAX bytes apart) and weight. The
 * count, or -EUCLEAN.
 */
int fib_mp_members(const struct fib_wops *o, struct fib_map *m, const void *hkey, uint64_t (*keys)[FIB_KEY_MAX / 8],
                   uint16_t *weights);

/** The next used prefix slot from *@i on (NULL at the end), with its checked next hop in *@nh. */
void *fib_pfx_next(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t *i, uint32_t *nh);

/**
 * The writer's walk over a region it maps read-only (a dead supervisor's:
 * fib_snapshot, fib6_snapshot): map @fd as family @f, call @walk with the
 * map (bounded by the sizes the region's size proves), unmap.
 */
int fib_map_snapshot(const struct fib_family *f, int fd, int (*walk)(struct fib_map *m, void *ctx), void *ctx,
                     bool *dirty, struct ipc_err *err);

#endif
