/* SPDX-License-Identifier: MIT */
/*
 * services/filter/ct.c: the connection table in a caller's flat region.
 *
 * The region holds a header, a power-of-two array of bucket heads and the
 * entries; every link is an index (a node is entry * 2 + direction, stored
 * plus one so that 0 ends a chain). Nothing is a pointer, so another process
 * can map the region anywhere and adopt it (flt_ct_attach). Every index is
 * checked where it is read: a region a hostile or crashed writer left bad
 * marks the table corrupt and is never followed. Expiry is lazy (an expired
 * entry met on a chain is freed) plus a bounded sweep per burst.
 */
#include "services/filter/flt_int.h"

#include <errno.h>
#include <string.h>

#define UNCONFIRMED_MS 1000u /* a first packet the pipeline lost on the way */
#define EARLY_DROP_SCAN 64u  /* entries early drop looks at, at most */

static uint32_t hdr_check(const struct ct_hdr *h)
{
    /* FNV-1a over the fields before `check`: a torn or scribbled header is
     * refused even when its sizes still look plausible. */
    const uint8_t *p = (const uint8_t *)h;
    uint32_t x = 2166136261u;
    for (size_t i = 0; i < offsetof(struct ct_hdr, check); i++)
        x = (x ^ p[i]) * 16777619u;
    return x;
}

static uint32_t nbuckets_for(uint32_t entries)
{
    uint32_t b = 1;
    while (b < entries && b < (1u << 30))
        b <<= 1;
    return b;
}

size_t flt_ct_region_size(uint32_t entries)
{
    if (entries == 0 || entries > (1u << 26))
        return 0;
    size_t off = sizeof(struct ct_hdr) + (size_t)nbuckets_for(entries) * 4;
    off = (off + 63) & ~(size_t)63;
    return off + (size_t)entries * sizeof(struct ct_entry);
}

int flt_ct_format(void *region, size_t size, uint32_t entries, uint32_t seed)
{
    size_t need = flt_ct_region_size(entries);
    if (!region || need == 0 || size < need)
        return -EINVAL;
    memset(region, 0, need);
    struct ct_hdr *h = region;
    h->magic = FLT_CT_MAGIC;
    h->version = FLT_CT_VERSION;
    h->hdr_size = sizeof *h;
    h->entry_size = sizeof(struct ct_entry);
    h->nentries = entries;
    h->nbuckets = nbuckets_for(entries);
    h->seed = seed;
    h->total_size = need;
    struct ct_entry *e = ct_entries(h);
    for (uint32_t i = 0; i < entries; i++)
        e[i].next[0] = i + 1 < entries ? i + 2 : 0;
    h->free_head = 1;
    h->check = hdr_check(h);
    return 0;
}

int ct_bind(struct ct_table *ct, void *region)
{
    struct ct_hdr *h = region;
    memset(ct, 0, sizeof *ct);
    if (!h || h->magic != FLT_CT_MAGIC || h->version != FLT_CT_VERSION || h->hdr_size != sizeof *h ||
        h->entry_size != sizeof(struct ct_entry) || h->check != hdr_check(h))
        return -EBADMSG;
    if (h->nentries == 0 || h->nbuckets != nbuckets_for(h->nentries) ||
        h->total_size != flt_ct_region_size(h->nentries))
        return -EBADMSG;
    ct->h = h;
    ct->buckets = ct_buckets(h);
    ct->e = ct_entries(h);
    return 0;
}

static uint32_t tuple_hash(const struct ct_hdr *h, const struct flt_tuple *t)
{
    uint64_t x = h->seed ^ 0x9e3779b97f4a7c15ull;
    uint64_t w[5];
    memcpy(w, t->src, 16);
    memcpy(w + 2, t->dst, 16);
    w[4] = (uint64_t)t->sport << 32 | (uint64_t)t->dport << 16 | (uint64_t)t->proto << 8 | t->family;
    for (int i = 0; i < 5; i++) {
        x ^= w[i];
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
    }
    return (uint32_t)x & (h->nbuckets - 1);
}

uint32_t ct_bucket(const struct ct_table *ct, const struct flt_tuple *t)
{
    return tuple_hash(ct->h, t);
}

/* Hints for a burst's lookups, so that their cache misses overlap: they
 * follow no link they have not bounded, and a wrong hint costs a load. */
void ct_prefetch_bucket(const struct ct_table *ct, uint32_t b)
{
    if (!ct->corrupt)
        __builtin_prefetch(&ct->buckets[b & (ct->h->nbuckets - 1)]);
}

void ct_prefetch_ref(const struct ct_table *ct, uint32_t ref)
{
    if (ct->corrupt || ref == 0 || ref > ct->h->nentries)
        return;
    const uint8_t *e = (const uint8_t *)&ct->e[ref - 1];
    for (size_t off = 0; off < sizeof(struct ct_entry); off += 64)
        __builtin_prefetch(e + off, 1);
}

void ct_prefetch_chain(const struct ct_table *ct, uint32_t b)
{
    if (ct->corrupt)
        return;
    uint32_t v = ct->buckets[b & (ct->h->nbuckets - 1)];
    if (v && v <= 2 * ct->h->nentries)
        ct_prefetch_ref(ct, (v - 1) / 2 + 1);
}

static bool tuple_eq(const struct flt_tuple *a, const struct flt_tuple *b)
{
    return a->sport == b->sport && a->dport == b->dport && a->proto == b->proto && a->family == b->family &&
           !memcmp(a->src, b->src, 16) && !memcmp(a->dst, b->dst, 16);
}

void flt_tuple_invert(struct flt_tuple *out, const struct flt_tuple *in)
{
    struct flt_tuple t = *in;
    memcpy(t.src, in->dst, 16);
    memcpy(t.dst, in->src, 16);
    t.sport = in->dport;
    t.dport = in->sport;
    *out = t;
}

struct ct_entry *ct_get(struct ct_table *ct, uint32_t ref)
{
    if (ct->corrupt || ref == 0 || ref > ct->h->nentries)
        return NULL;
    struct ct_entry *e = &ct->e[ref - 1];
    return (e->flags & CTF_USED) ? e : NULL;
}

/* node n (entry*2+dir) in bucket b's chain: unlink it. false = corrupt */
static bool unlink_node(struct ct_table *ct, uint32_t b, uint32_t node)
{
    uint32_t *link = &ct->buckets[b];
    for (uint32_t steps = 0; *link; steps++) {
        uint32_t v = *link;
        if (v > 2 * ct->h->nentries || steps > 2 * ct->h->nentries) {
            ct->corrupt = true;
            return false;
        }
        if (v - 1 == node) {
            *link = ct->e[node / 2].next[node & 1];
            return true;
        }
        link = &ct->e[(v - 1) / 2].next[(v - 1) & 1];
    }
    return true;
}

static void link_node(struct ct_table *ct, uint32_t node)
{
    struct ct_entry *e = &ct->e[node / 2];
    uint32_t b = tuple_hash(ct->h, &e->t[node & 1]);
    e->next[node & 1] = ct->buckets[b];
    ct->buckets[b] = node + 1;
}

void ct_delete(struct ct_table *ct, uint32_t ref)
{
    struct ct_entry *e = ct_get(ct, ref);
    if (!e)
        return;
    uint32_t i = ref - 1;
    for (int d = 0; d < 2; d++)
        if (!unlink_node(ct, tuple_hash(ct->h, &e->t[d]), i * 2 + d))
            return;
    memset(e, 0, sizeof *e);
    e->next[0] = ct->h->free_head;
    ct->h->free_head = ref;
    ct->h->count--;
}

uint32_t ct_find(struct ct_table *ct, const struct flt_tuple *t, uint64_t now, int *dir)
{
    if (ct->corrupt)
        return 0;
    uint32_t b = tuple_hash(ct->h, t);
    uint32_t v = ct->buckets[b];
    for (uint32_t steps = 0; v; steps++) {
        if (v > 2 * ct->h->nentries || steps > 2 * ct->h->nentries) {
            ct->corrupt = true;
            return 0;
        }
        uint32_t node = v - 1;
        struct ct_entry *e = &ct->e[node / 2];
        uint32_t next = e->next[node & 1];
        if (!(e->flags & CTF_USED)) {
            ct->corrupt = true;
            return 0;
        }
        if (tuple_eq(&e->t[node & 1], t)) {
            if (e->expires_ms <= now) {
                ct_delete(ct, node / 2 + 1);
                return 0;
            }
            *dir = node & 1;
            return node / 2 + 1;
        }
        v = next;
    }
    return 0;
}

/* Full: free an expired entry, else the confirmed, non-assured one that
 * expires first, among a bounded window from the sweep cursor (Linux looks
 * at a bounded number of entries as well). Assured connections are never
 * dropped to make room: a flood of new ones cannot push them out. Nor is
 * an unconfirmed one before its second is out: its first packet is between
 * two hooks (under a flood, thousands are), and taking its entry would
 * drop that packet as invalid at the next; Linux's table does not even
 * hold such an entry. One whose packet was lost expires. */
static bool early_drop(struct ct_table *ct, uint64_t now)
{
    uint32_t n = ct->h->nentries, best = 0;
    uint64_t best_exp = UINT64_MAX;
    uint32_t start = ct->h->sweep % n;
    for (uint32_t k = 0; k < EARLY_DROP_SCAN && k < n; k++) {
        uint32_t i = (start + k) % n;
        struct ct_entry *e = &ct->e[i];
        if (!(e->flags & CTF_USED))
            continue;
        if (e->expires_ms <= now) {
            best = i + 1;
            break;
        }
        if ((e->flags & (CTF_CONFIRMED | CTF_ASSURED)) == CTF_CONFIRMED && e->expires_ms < best_exp) {
            best_exp = e->expires_ms;
            best = i + 1;
        }
    }
    ct->h->sweep = (start + EARLY_DROP_SCAN) % n;
    if (!best)
        return false;
    ct_delete(ct, best);
    return !ct->corrupt;
}

uint32_t ct_create(struct ct_table *ct, const struct flt_tuple *orig, uint64_t now, struct flt_stats *st)
{
    if (ct->corrupt)
        return 0;
    if (ct->h->free_head == 0) {
        if (!early_drop(ct, now))
            return 0;
        st->ct_early_drop++;
    }
    uint32_t ref = ct->h->free_head;
    if (ref == 0 || ref > ct->h->nentries || (ct->e[ref - 1].flags & CTF_USED)) {
        ct->corrupt = true;
        return 0;
    }
    struct ct_entry *e = &ct->e[ref - 1];
    ct->h->free_head = e->next[0];
    memset(e, 0, sizeof *e);
    e->t[0] = *orig;
    flt_tuple_invert(&e->t[1], orig);
    e->flags = CTF_USED;
    e->gen = ++ct->h->gen;
    e->expires_ms = now + UNCONFIRMED_MS;
    link_node(ct, (ref - 1) * 2);
    link_node(ct, (ref - 1) * 2 + 1);
    ct->h->count++;
    st->ct_new++;
    return ref;
}

void ct_rehash_reply(struct ct_table *ct, uint32_t ref, const struct flt_tuple *reply)
{
    struct ct_entry *e = ct_get(ct, ref);
    if (!e)
        return;
    uint32_t node = (ref - 1) * 2 + 1;
    if (!unlink_node(ct, tuple_hash(ct->h, &e->t[1]), node))
        return;
    e->t[1] = *reply;
    link_node(ct, node);
}

unsigned ct_sweep(struct ct_table *ct, uint64_t now, unsigned budget)
{
    if (ct->corrupt)
        return 0;
    uint32_t n = ct->h->nentries, freed = 0;
    uint32_t i = ct->h->sweep % n;
    for (unsigned k = 0; k < budget && k < n; k++, i = (i + 1) % n) {
        struct ct_entry *e = &ct->e[i];
        if ((e->flags & CTF_USED) && e->expires_ms <= now) {
            ct_delete(ct, i + 1);
            if (ct->corrupt)
                break;
            freed++;
        }
    }
    ct->h->sweep = i;
    return freed;
}

/* Adoption: bounds first, then every chain and the free list walked with a
 * step bound, each node seen at most once, each used entry found exactly
 * on the chains its tuples hash to. O(entries); done once per adoption. */
int flt_ct_attach(void *region, size_t size)
{
    struct ct_table ct;
    if (!region || size < sizeof(struct ct_hdr) || ct_bind(&ct, region) < 0)
        return -EBADMSG;
    struct ct_hdr *h = ct.h;
    if (h->total_size > size || h->count > h->nentries)
        return -EBADMSG;
    uint32_t n = h->nentries, used = 0, linked = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct ct_entry *e = &ct.e[i];
        if (!(e->flags & CTF_USED))
            continue;
        used++;
        if (e->tcp_state >= TS_MAX || e->last_dir > 1)
            return -EBADMSG;
        for (int d = 0; d < 2; d++)
            if (e->next[d] > 2 * n || (e->t[d].family != 4 && e->t[d].family != 6))
                return -EBADMSG;
    }
    if (used != h->count)
        return -EBADMSG;
    for (uint32_t b = 0; b < h->nbuckets; b++) {
        uint32_t v = ct.buckets[b];
        while (v) {
            if (v > 2 * n || ++linked > 2 * used)
                return -EBADMSG;
            struct ct_entry *e = &ct.e[(v - 1) / 2];
            if (!(e->flags & CTF_USED) || tuple_hash(h, &e->t[(v - 1) & 1]) != b)
                return -EBADMSG;
            v = e->next[(v - 1) & 1];
        }
    }
    if (linked != 2 * used)
        return -EBADMSG;
    uint32_t v = h->free_head, nfree = 0;
    while (v) {
        if (v > n || ++nfree > n - used || (ct.e[v - 1].flags & CTF_USED))
            return -EBADMSG;
        v = ct.e[v - 1].next[0];
    }
    if (nfree != n - used)
        return -EBADMSG;
    return 0;
}

uint32_t flt_ct_count(const void *region)
{
    return ((const struct ct_hdr *)region)->count;
}

int flt_ct_peek(const void *region, size_t size, uint32_t i, struct flt_ct_info *out)
{
    struct ct_hdr h;
    if (!region || size < sizeof h)
        return -EBADMSG;
    memcpy(&h, region, sizeof h);
    if (h.magic != FLT_CT_MAGIC || h.version != FLT_CT_VERSION || h.hdr_size != sizeof h ||
        h.entry_size != sizeof(struct ct_entry) || h.check != hdr_check(&h) || h.nentries == 0 ||
        h.nbuckets != nbuckets_for(h.nentries) || h.total_size != flt_ct_region_size(h.nentries) ||
        h.total_size > size)
        return -EBADMSG;
    if (i >= h.nentries)
        return -ENOENT;
    size_t off = (sizeof h + (size_t)h.nbuckets * 4 + 63) & ~(size_t)63;
    struct ct_entry e;
    memcpy(&e, (const uint8_t *)region + off + (size_t)i * sizeof e, sizeof e);
    if (!(e.flags & CTF_USED))
        return -ENOENT;
    out->orig = e.t[0];
    out->reply = e.t[1];
    out->tcp_state = e.tcp_state;
    out->assured = !!(e.flags & CTF_ASSURED);
    out->confirmed = !!(e.flags & CTF_CONFIRMED);
    out->seen_reply = !!(e.flags & CTF_SEEN_REPLY);
    out->expires_ms = e.expires_ms;
    return 0;
}
