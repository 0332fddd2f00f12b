/* SPDX-License-Identifier: MIT */
/*
 * services/filter/eval.c: the compiled form of a ruleset and its
 * evaluation. Address sets are sorted, merged intervals (binary search);
 * port, protocol and type sets are bitmaps (one load). A run of rules that
 * differ only in one exact value (`ip saddr A drop`, `ip saddr B drop`,
 * ..., or `tcp dport 22 accept`, `tcp dport 80 accept`, ...) becomes a
 * verdict map: a hash from that value to the first rule with it, so the
 * cost of a chain grows with the number of distinct rule shapes, not with
 * the number of rules, as nftables' verdict maps do.
 */
#include "services/filter/flt_int.h"

#include <stdlib.h>
#include <string.h>

#define VMAP_MIN 4 /* shorter runs are walked: a map costs a hash */

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

void flt_prefix_range(const uint8_t a[16], unsigned plen, uint8_t lo[16], uint8_t hi[16])
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned bits = plen >= (i + 1) * 8 ? 8 : plen > i * 8 ? plen - i * 8 : 0;
        uint8_t m = (uint8_t)(bits ? 0xff << (8 - bits) : 0);
        lo[i] = a[i] & m;
        hi[i] = (uint8_t)(a[i] | ~m);
    }
}

int flt_set_add_range(struct flt_set *s, const uint8_t lo[16], const uint8_t hi[16])
{
    if (s->nranges == s->cap) {
        uint32_t nc = s->cap ? s->cap * 2 : 16;
        struct range128 *nr = realloc(s->ranges, nc * sizeof *nr);
        if (!nr)
            return -1;
        s->ranges = nr;
        s->cap = nc;
    }
    struct range128 *r = &s->ranges[s->nranges++];
    r->lo_hi = be64(lo);
    r->lo_lo = be64(lo + 8);
    r->hi_hi = be64(hi);
    r->hi_lo = be64(hi + 8);
    return 0;
}

static int cmp128(uint64_t ah, uint64_t al, uint64_t bh, uint64_t bl)
{
    return ah < bh ? -1 : ah > bh ? 1 : al < bl ? -1 : al > bl ? 1 : 0;
}

static int range_cmp(const void *a, const void *b)
{
    const struct range128 *x = a, *y = b;
    return cmp128(x->lo_hi, x->lo_lo, y->lo_hi, y->lo_lo);
}

/* sorted and merged: overlapping or adjacent intervals become one, so that
 * a binary search finds the only candidate */
static void set_finish(struct flt_set *s)
{
    if (s->kind != 0 || s->nranges < 2)
        return;
    qsort(s->ranges, s->nranges, sizeof *s->ranges, range_cmp);
    uint32_t w = 0;
    for (uint32_t i = 1; i < s->nranges; i++) {
        struct range128 *c = &s->ranges[w], *n = &s->ranges[i];
        uint64_t nh = c->hi_hi, nl = c->hi_lo + 1;
        if (nl == 0)
            nh++;
        bool touches = cmp128(n->lo_hi, n->lo_lo, nh, nl) <= 0 || (c->hi_hi == UINT64_MAX && c->hi_lo == UINT64_MAX);
        if (touches) {
            if (cmp128(n->hi_hi, n->hi_lo, c->hi_hi, c->hi_lo) > 0) {
                c->hi_hi = n->hi_hi;
                c->hi_lo = n->hi_lo;
            }
        } else {
            s->ranges[++w] = *n;
        }
    }
    s->nranges = w + 1;
}

bool flt_set_has_addr(const struct flt_set *s, const uint8_t a[16])
{
    uint64_t h = be64(a), l = be64(a + 8);
    uint32_t lo = 0, hi = s->nranges;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct range128 *r = &s->ranges[mid];
        if (cmp128(h, l, r->lo_hi, r->lo_lo) < 0)
            hi = mid;
        else if (cmp128(h, l, r->hi_hi, r->hi_lo) > 0)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* ---- verdict maps ---- */

static bool key_capable(const struct match *m)
{
    if (m->neg || m->set >= 0)
        return false;
    switch (m->kind) {
    case M_SADDR:
    case M_DADDR:
        return m->plen == 128;
    case M_SPORT:
    case M_DPORT:
    case M_PROTO:
    case M_ICMPTYPE:
        return m->a == m->b;
    case M_IIF:
    case M_OIF:
        return m->a && !(m->a & (m->a - 1));
    default:
        return false;
    }
}

static void match_key(const struct match *m, uint64_t *hi, uint64_t *lo)
{
    if (m->kind == M_SADDR || m->kind == M_DADDR) {
        *hi = be64(m->addr);
        *lo = be64(m->addr + 8);
    } else {
        *hi = m->kind;
        *lo = m->a;
    }
}

static bool same_shape(const struct rule *a, const struct rule *b, unsigned key)
{
    if (a->nm != b->nm || b->m[key].kind != a->m[key].kind || !key_capable(&b->m[key]))
        return false;
    for (unsigned i = 0; i < a->nm; i++) {
        if (i == key)
            continue;
        const struct match *x = &a->m[i], *y = &b->m[i];
        if (x->kind != y->kind || x->neg != y->neg || x->set != y->set || x->a != y->a || x->b != y->b ||
            x->plen != y->plen || x->burst != y->burst || memcmp(x->addr, y->addr, 16))
            return false;
        if (x->kind == M_LIMIT)
            return false; /* each rule's own bucket: keep them walked */
    }
    return true;
}

static uint32_t key_hash(uint64_t hi, uint64_t lo)
{
    uint64_t x = hi * 0x9e3779b97f4a7c15ull ^ lo;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return (uint32_t)x;
}

static int vmap_lookup(const struct vmap *v, uint64_t hi, uint64_t lo)
{
    for (uint32_t s = key_hash(hi, lo) & v->mask;; s = (s + 1) & v->mask) {
        if (v->rule[s] == 0)
            return -1;
        if (v->keys_hi[s] == hi && v->keys_lo[s] == lo)
            return (int)v->rule[s] - 1;
    }
}

/* rules [i, i+n) keyed on match `key`; a key seen before ends the run
 * there (the rule after it must be walked to keep first-match order).
 * Returns how many rules the map took, 0 on failure. */
static uint32_t vmap_build(struct chain *c, uint32_t i, uint32_t n, unsigned key)
{
    struct vmap *nm = realloc(c->maps, (c->nmaps + 1) * sizeof *nm);
    if (!nm)
        return 0;
    c->maps = nm;
    struct vmap *v = &c->maps[c->nmaps];
    memset(v, 0, sizeof *v);
    uint32_t slots = 16;
    while (slots < n * 2)
        slots <<= 1;
    v->first = i;
    v->key = (uint8_t)key;
    v->mask = slots - 1;
    v->keys_hi = calloc(slots, 8);
    v->keys_lo = calloc(slots, 8);
    v->rule = calloc(slots, 4);
    if (!v->keys_hi || !v->keys_lo || !v->rule) {
        free(v->keys_hi);
        free(v->keys_lo);
        free(v->rule);
        return 0;
    }
    uint32_t k = i;
    for (; k < i + n; k++) {
        uint64_t hi, lo;
        match_key(&c->r[k].m[key], &hi, &lo);
        if (vmap_lookup(v, hi, lo) >= 0)
            break;
        uint32_t s = key_hash(hi, lo) & v->mask;
        while (v->rule[s])
            s = (s + 1) & v->mask;
        v->keys_hi[s] = hi;
        v->keys_lo[s] = lo;
        v->rule[s] = k + 1;
    }
    v->n = k - i;
    for (uint32_t j = i; j < k; j++)
        c->map_at[j] = (int32_t)c->nmaps;
    c->nmaps++;
    return v->n;
}

static int chain_finish(struct chain *c)
{
    if (c->n == 0)
        return 0;
    c->map_at = malloc(c->n * sizeof *c->map_at);
    if (!c->map_at)
        return -1;
    for (uint32_t k = 0; k < c->n; k++)
        c->map_at[k] = -1;
    uint32_t i = 0;
    while (i < c->n) {
        uint32_t best_n = 1;
        unsigned best_key = 0;
        for (unsigned key = 0; key < c->r[i].nm; key++) {
            if (!key_capable(&c->r[i].m[key]))
                continue;
            uint32_t n = 1;
            while (i + n < c->n && same_shape(&c->r[i], &c->r[i + n], key))
                n++;
            if (n > best_n) {
                best_n = n;
                best_key = key;
            }
        }
        if (best_n >= VMAP_MIN) {
            uint32_t took = vmap_build(c, i, best_n, best_key);
            if (took == 0)
                return -1;
            i += took;
        } else {
            i++;
        }
    }
    return 0;
}

int flt_rules_finish(struct flt_rules *r)
{
    for (uint32_t i = 0; i < r->nsets; i++)
        set_finish(&r->sets[i]);
    for (int h = 0; h < FLT_NHOOKS; h++)
        if (chain_finish(&r->c[h]) < 0)
            return -1;
    return 0;
}

void flt_rules_linear(struct flt_rules *r)
{
    for (int h = 0; h < FLT_NHOOKS; h++)
        for (uint32_t k = 0; k < r->c[h].n; k++)
            r->c[h].map_at[k] = -1;
}

unsigned flt_rules_count(const struct flt_rules *r, enum flt_hook h)
{
    return (unsigned)h < FLT_NHOOKS ? r->c[h].n : 0;
}

unsigned flt_rules_line(const struct flt_rules *r, enum flt_hook h, unsigned i)
{
    return (unsigned)h < FLT_NHOOKS && i < r->c[h].n ? r->c[h].r[i].line : 0;
}

int flt_rules_counter(const struct flt_rules *r, enum flt_hook h, unsigned i, uint64_t *pkts, uint64_t *bytes)
{
    if ((unsigned)h >= FLT_NHOOKS || i >= r->c[h].n)
        return -1;
    *pkts = r->c[h].r[i].pkts;
    *bytes = r->c[h].r[i].bytes;
    return 0;
}

/* ---- evaluation ---- */

static bool num_in(const struct flt_rules *rs, const struct match *m, uint32_t v)
{
    if (m->set >= 0) {
        const struct flt_set *s = &rs->sets[m->set];
        return v < 65536 && (s->bits[v >> 3] >> (v & 7) & 1);
    }
    return v >= m->a && v <= m->b;
}

static bool addr_in(const struct flt_rules *rs, const struct match *m, const uint8_t a[16])
{
    if (m->set >= 0)
        return flt_set_has_addr(&rs->sets[m->set], a);
    unsigned full = m->plen / 8, rem = m->plen % 8;
    if (memcmp(a, m->addr, full))
        return false;
    return rem == 0 || ((a[full] ^ m->addr[full]) & (uint8_t)(0xff << (8 - rem))) == 0;
}

static bool limit_ok(struct rule *r, const struct match *m, uint64_t now)
{
    if (!r->primed) {
        r->primed = 1;
        r->tokens = m->burst;
        r->last_ms = now;
    }
    if (now > r->last_ms) {
        r->tokens += (double)(now - r->last_ms) * (double)m->a / (double)m->b;
        if (r->tokens > m->burst)
            r->tokens = m->burst;
    }
    r->last_ms = now;
    if (r->tokens < 1.0)
        return false;
    r->tokens -= 1.0;
    return true;
}

static bool match_one(struct flt_rules *rs, struct rule *r, const struct match *m, const struct eval_in *in)
{
    const struct flt_parsed *pp = in->pp;
    bool ok;
    switch (m->kind) {
    case M_IIF:
        ok = in->iif < 64 && (m->a >> in->iif & 1);
        break;
    case M_OIF:
        ok = in->oif < 64 && (m->a >> in->oif & 1);
        break;
    case M_FAMILY:
        return pp->family == (int)m->a;
    case M_SADDR:
        ok = addr_in(rs, m, pp->t.src);
        break;
    case M_DADDR:
        ok = addr_in(rs, m, pp->t.dst);
        break;
    case M_PROTO:
        ok = num_in(rs, m, pp->proto);
        break;
    case M_SPORT:
    case M_DPORT:
        if (pp->frag || (pp->proto != 6 && pp->proto != 17))
            return false;
        ok = num_in(rs, m, m->kind == M_SPORT ? pp->t.sport : pp->t.dport);
        break;
    case M_ICMPTYPE:
        if (pp->frag || (pp->proto != 1 && pp->proto != 58))
            return false;
        ok = num_in(rs, m, pp->icmp_type);
        break;
    case M_TCPFLAGS:
        if (pp->frag || pp->proto != 6)
            return false;
        ok = m->plen ? (pp->tcpflags & m->a) == m->b : (pp->tcpflags & m->a) != 0;
        break;
    case M_CTSTATE:
        ok = (in->ctstate & m->a) != 0;
        break;
    case M_LIMIT:
        return limit_ok(r, m, in->now);
    default:
        return false;
    }
    return m->neg ? !ok : ok;
}

static bool rule_matches(struct flt_rules *rs, struct rule *r, const struct eval_in *in, int skip)
{
    if ((r->act == A_SNAT || r->act == A_DNAT || r->act == A_MASQ) && !in->nat_ok)
        return false;
    for (int i = 0; i < r->nm; i++)
        if (i != skip && !match_one(rs, r, &r->m[i], in))
            return false;
    return true;
}

/* the packet's value for a map's key match */
static bool packet_key(const struct match *m, const struct eval_in *in, uint64_t *hi, uint64_t *lo)
{
    const struct flt_parsed *pp = in->pp;
    *hi = m->kind;
    switch (m->kind) {
    case M_SADDR:
    case M_DADDR: {
        const uint8_t *a = m->kind == M_SADDR ? pp->t.src : pp->t.dst;
        *hi = be64(a);
        *lo = be64(a + 8);
        return true;
    }
    case M_SPORT:
    case M_DPORT:
        if (pp->frag || (pp->proto != 6 && pp->proto != 17))
            return false;
        *lo = m->kind == M_SPORT ? pp->t.sport : pp->t.dport;
        return true;
    case M_PROTO:
        *lo = pp->proto;
        return true;
    case M_ICMPTYPE:
        if (pp->frag || (pp->proto != 1 && pp->proto != 58))
            return false;
        *lo = pp->icmp_type;
        return true;
    case M_IIF:
        *lo = in->iif < 64 ? 1ull << in->iif : 0;
        return true;
    case M_OIF:
        *lo = in->oif < 64 ? 1ull << in->oif : 0;
        return true;
    default:
        return false;
    }
}

/* a matched rule: count it, set its mark; its verdict ends the chain, a
 * bare counter or mark, or a NAT rule not applicable, does not */
static bool fire(struct rule *r, const struct eval_in *in)
{
    r->pkts++;
    r->bytes += in->bytes;
    if (r->set_mark && in->mark)
        *in->mark = r->mark;
    return r->act != A_NONE;
}

int flt_eval(struct flt_rules *rs, enum flt_hook h, const struct eval_in *in)
{
    struct chain *c = &rs->c[h];
    uint32_t i = 0;
    while (i < c->n) {
        int32_t mi = c->map_at[i];
        if (mi < 0) {
            if (rule_matches(rs, &c->r[i], in, -1) && fire(&c->r[i], in))
                return (int)i;
            i++;
            continue;
        }
        const struct vmap *v = &c->maps[mi];
        uint64_t hi, lo;
        const struct match *km = &c->r[v->first].m[v->key];
        int k = packet_key(km, in, &hi, &lo) ? vmap_lookup(v, hi, lo) : -1;
        if (k >= 0 && rule_matches(rs, &c->r[k], in, v->key) && fire(&c->r[k], in))
            return k;
        i = v->first + v->n;
    }
    return -1;
}
