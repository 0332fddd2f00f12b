/* SPDX-License-Identifier: MIT */
/*
 * tables/fib_group.c: the writer's next-hop groups, both families (the
 * layout and the reader's view are in tables/fib_group.h). A group is found
 * by a fingerprint of its sorted member set in a hash of its own (mph, the
 * IPv4 slot kind: key the fingerprint, value the header next hop), made
 * whole before its header next hop exists, and retired with its header
 * (fib_nh_put). Every index read back from the region (a header's group, a
 * member, a count, a hash value) is checked before it is followed, as the
 * rest of the writer's (tables/fib_common.c).
 */
#include "tables/fib_impl.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

static uint32_t fib_mp_hash(const void *key)
{
    uint64_t k;
    memcpy(&k, key, sizeof(k));
    return fib_mix64(k ^ 0x6d70u);
}

static const struct fib_hkind fib_mp_hkind = {sizeof(struct fib_hslot), sizeof(uint64_t),
                                              offsetof(struct fib_hslot, val), offsetof(struct fib_hslot, used),
                                              fib_mp_hash};

int fib_mp_prepare(const struct fib_wops *o, struct fib_mp_req *r)
{
    if (r->n < 2 || r->n > FIB_MP_MAX)
        return -EINVAL;
    for (unsigned i = 0; i < r->n; i++)
        if (r->weight[i] < 1 || r->weight[i] > FIB_MP_WEIGHT_MAX)
            return -EINVAL;
    /* Insertion sort by key: at most 16 members. */
    size_t kb = o->h->key_bytes;
    for (unsigned i = 1; i < r->n; i++) {
        for (unsigned j = i; j > 0 && memcmp(r->key[j - 1], r->key[j], kb) > 0; j--) {
            uint64_t k[FIB_KEY_MAX / sizeof(uint64_t)];
            memcpy(k, r->key[j], sizeof(k));
            memcpy(r->key[j], r->key[j - 1], sizeof(k));
            memcpy(r->key[j - 1], k, sizeof(k));
            uint16_t w = r->weight[j];
            r->weight[j] = r->weight[j - 1];
            r->weight[j - 1] = w;
        }
    }
    for (unsigned i = 1; i < r->n; i++)
        if (memcmp(r->key[i - 1], r->key[i], kb) == 0)
            return -EINVAL;
    return 0;
}

static uint64_t fib_mp_fingerprint(const struct fib_wops *o, const struct fib_mp_req *r)
{
    uint64_t h = 0x9e3779b97f4a7c15ull * (r->n + 1);
    for (unsigned i = 0; i < r->n; i++) {
        uint64_t k[FIB_KEY_MAX / sizeof(uint64_t)] = {0};
        memcpy(k, r->key[i], o->h->key_bytes);
        for (unsigned j = 0; j < FIB_KEY_MAX / sizeof(uint64_t); j++)
            h = (h ^ fib_mix64(k[j] + j)) * 0xff51afd7ed558ccdull + r->weight[i];
    }
    return h;
}

/* Group @g's words, checked; NULL (counted) if impossible. */
static _Atomic uint32_t *fib_mp_blk(struct fib_map *m, uint32_t g)
{
    if (!FIB_OK(m, g < m->lay->mp_hwm && g < m->lim.mp_groups))
        return NULL;
    return &m->mp[(size_t)g * FIB_MP_WORDS];
}

int fib_mp_members(const struct fib_wops *o, struct fib_map *m, const void *hkey, uint64_t (*keys)[FIB_KEY_MAX / 8],
                   uint16_t *weights)
{
    uint32_t g;
    if (!FIB_OK(m, o->mp_is_hdr(hkey, &g)))
        return -EUCLEAN;
    _Atomic uint32_t *b = fib_mp_blk(m, g);
    if (!b)
        return -EUCLEAN;
    uint32_t n = ipc_ld_rlx(&b[FIB_MP_W_N]);
    if (!FIB_OK(m, n >= 2 && n <= FIB_MP_MAX))
        return -EUCLEAN;
    for (unsigned k = 0; k < n; k++) {
        uint32_t i = ipc_ld_rlx(&b[FIB_MP_W_NH + k]);
        if (!FIB_OK(m, i < m->lim.max_nh))
            return -EUCLEAN;
        memset(keys[k], 0, FIB_KEY_MAX);
        o->nh_key(m, i, keys[k]);
        weights[k] = (uint16_t)ipc_ld_rlx(&b[FIB_MP_W_WEIGHT + k]);
    }
    return (int)n;
}

/*
 * The live group with exactly @r's members: 1 with its header in *@hi, 0
 * when there is none (*@collide: another set has the fingerprint, so the
 * new group stays out of the hash), or -EUCLEAN.
 */
static int fib_mp_find(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w,
                       const struct fib_mp_req *r, uint64_t fp, uint32_t *hi, bool *collide)
{
    *collide = false;
    struct fib_hslot *s = fib_h_find(&fib_mp_hkind, w->mph, m->lim.mph_mask, &fp);
    if (!s)
        return 0;
    if (!FIB_OK(m, s->val < m->lim.max_nh && w->nh_ref[s->val] > 0))
        return -EUCLEAN;
    uint64_t hkey[FIB_KEY_MAX / sizeof(uint64_t)] = {0}, keys[FIB_MP_MAX][FIB_KEY_MAX / 8];
    uint16_t wt[FIB_MP_MAX];
    o->nh_key(m, s->val, hkey);
    int n = fib_mp_members(o, m, hkey, keys, wt);
    if (n < 0)
        return n;
    bool same = (unsigned)n == r->n;
    for (unsigned k = 0; same && k < r->n; k++)
        same = memcmp(keys[k], r->key[k], o->h->key_bytes) == 0 && wt[k] == r->weight[k];
    if (!same) {
        *collide = true;
        return 0;
    }
    *hi = s->val;
    return 1;
}

/* Spread the 256 buckets over the members by weight (smooth weighted round
 * robin: each member's share, interleaved), packed four to a word. */
static void fib_mp_buckets(const struct fib_mp_req *r, uint32_t *words)
{
    int64_t cur[FIB_MP_MAX] = {0}, total = 0;
    for (unsigned k = 0; k < r->n; k++)
        total += r->weight[k];
    memset(words, 0, FIB_MP_BUCKETS / 4 * sizeof(uint32_t));
    for (unsigned b = 0; b < FIB_MP_BUCKETS; b++) {
        unsigned best = 0;
        for (unsigned k = 0; k < r->n; k++) {
            cur[k] += r->weight[k];
            if (cur[k] > cur[best])
                best = k;
        }
        cur[best] -= total;
        words[b / 4] |= (uint32_t)best << (b % 4 * 8);
    }
}

int fib_mp_set_nh(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t groups,
                  const struct fib_mp_req *r, uint32_t *ni)
{
    int ret = fib_rq_room(m, &w->groups, groups);
    if (ret < 0)
        return ret;
    uint64_t fp = fib_mp_fingerprint(o, r);
    bool collide;
    uint32_t hi;
    if ((ret = fib_mp_find(o, m, w, r, fp, &hi, &collide)) < 0)
        return ret;
    if (ret == 1) {
        m->lay->dirty = 1;
        w->nh_ref[hi]++;
        *ni = hi;
        return 0;
    }
    /* A new group: room for it, its header and the members not there yet. */
    uint32_t want = 1;
    for (unsigned k = 0; k < r->n; k++)
        want += fib_h_find(o->h, w->nhh, m->lim.nhh_mask, r->key[k]) == NULL;
    if ((ret = fib_rq_room(m, &w->mp, 1)) < 0 || (ret = fib_rq_room(m, &w->nhs, want)) < 0)
        return ret;
    if (!FIB_OK(m, m->lay->n_mp < m->lim.mp_groups))
        return -EUCLEAN;
    m->lay->dirty = 1;
    uint32_t g = fib_rq_take(m, &w->mp);
    if (g == UINT32_MAX || !FIB_OK(m, g < m->lim.mp_groups))
        return -EUCLEAN;
    uint32_t words[FIB_MP_WORDS] = {0};
    words[FIB_MP_W_N] = r->n;
    for (unsigned k = 0; k < r->n; k++) {
        if ((ret = fib_nh_get(o, m, w, r->key[k], &words[FIB_MP_W_NH + k])) < 0)
            return ret;
        words[FIB_MP_W_WEIGHT + k] = r->weight[k];
    }
    words[FIB_MP_W_FP] = (uint32_t)fp;
    words[FIB_MP_W_FP + 1] = (uint32_t)(fp >> 32);
    words[FIB_MP_W_HASHED] = !collide;
    fib_mp_buckets(r, &words[FIB_MP_W_BUCKETS]);
    /* Whole before the header names it (and entries the header: W1). */
    _Atomic uint32_t *b = &m->mp[(size_t)g * FIB_MP_WORDS];
    for (unsigned j = 0; j < FIB_MP_WORDS; j++)
        ipc_st_rlx(&b[j], words[j]);
    uint64_t hkey[FIB_KEY_MAX / sizeof(uint64_t)] = {0};
    o->mp_hdr_key(g, hkey);
    if ((ret = fib_nh_get(o, m, w, hkey, ni)) < 0)
        return ret;
    if (!collide && !FIB_OK(m, fib_h_insert(&fib_mp_hkind, w->mph, m->lim.mph_mask, &fp, *ni)))
        return -EUCLEAN;
    m->lay->n_mp++;
    return 0;
}

int fib_mp_put(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t g, uint64_t gen)
{
    _Atomic uint32_t *b = fib_mp_blk(m, g);
    if (!b)
        return -EUCLEAN;
    uint32_t n = ipc_ld_rlx(&b[FIB_MP_W_N]);
    if (!FIB_OK(m, n >= 2 && n <= FIB_MP_MAX && m->lay->n_mp > 0))
        return -EUCLEAN;
    if (ipc_ld_rlx(&b[FIB_MP_W_HASHED])) {
        uint64_t fp = (uint64_t)ipc_ld_rlx(&b[FIB_MP_W_FP + 1]) << 32 | ipc_ld_rlx(&b[FIB_MP_W_FP]);
        void *s = fib_h_find(&fib_mp_hkind, w->mph, m->lim.mph_mask, &fp);
        if (s)
            fib_h_remove(&fib_mp_hkind, w->mph, m->lim.mph_mask, s);
    }
    for (unsigned k = 0; k < n; k++) {
        int ret = fib_nh_put(o, m, w, ipc_ld_rlx(&b[FIB_MP_W_NH + k]), gen);
        if (ret < 0)
            return ret;
    }
    if (!fib_rq_push(m, &w->mp, g, gen))
        return -EUCLEAN;
    m->lay->n_mp--;
    return 0;
}
