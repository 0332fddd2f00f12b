/* SPDX-License-Identifier: MIT */
/*
 * tables/fib_common.c: the writer plumbing both FIB families share, linked
 * by the supervisor alone: creating a region, the deferred reuse of groups
 * and next hops (the recycler of tables/fib.h's argument, steps W2 and R2),
 * the writer's hash tables, the snapshot of a dead supervisor's region and
 * the stats. The family halves (fib_write.c, fib6_write.c) keep the
 * entries and the updates.
 *
 * Defence in depth. The tables are sealed, so only this process writes
 * them; still, every pointer here is derived from the sizes the writer keeps
 * in its own memory (m->lim), never from the region's layout page, and
 * every index read back from the region is checked before it is followed: a
 * free-stack or retire-queue slot, the counters of the layout page (the
 * family halves check the indices in entries and hash slots). A failed
 * check (FIB_OK) counts in m->corrupt and fails the update with -EUCLEAN,
 * leaving the region dirty: the supervisor rebuilds it from its routes.
 * Hash probes are bounded by the table's size.
 */
#include "tables/fib_impl.h"
#include "tables/fib6_write.h"
#include "tables/fib_write.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int fib_map_create(const struct fib_family *f, const char *name, const struct fib_params *p, int readers_fd,
                   struct fib_map *m, int *fd, int *rfd, struct ipc_err *err)
{
    if (!p)
        p = &f->defaults;
    if (p->max_prefixes == 0 || p->max_prefixes > f->max_prefixes || p->tbl8_groups == 0 ||
        p->tbl8_groups > f->max_groups || p->max_nh == 0 || p->max_nh > f->max_nh)
        return ipc_errf(err, -EINVAL, "%s %s: bad sizes (prefixes %u, tbl8 groups %u, next hops %u)", f->name, name,
                        p->max_prefixes, p->tbl8_groups, p->max_nh);
    struct fib_layout l;
    uint64_t size = fib_layout_of(f, &l, p);
    void *base, *rbase;
    int ret;
    if (readers_fd < 0) {
        char rname[64];
        snprintf(rname, sizeof(rname), "%.50s-readers", name);
        ret = ipc_shm_create(rname, IPC_SHM_FIB_READERS, FIB_READERS_VERSION, sizeof(struct fib_shared), rfd, &rbase,
                             err);
        if (ret < 0)
            return ret;
    } else {
        /* Another FIB's (the IPv4 one's): its generation and slots are live. */
        ret = ipc_shm_attach_fixed(readers_fd, IPC_SHM_FIB_READERS, FIB_READERS_VERSION, sizeof(struct fib_shared),
                                   &rbase, err);
        if (ret < 0)
            return ret;
        *rfd = readers_fd;
    }
    ret = ipc_shm_create(name, f->shm_kind, f->version, size, fd, &base, err);
    if (ret < 0)
        goto out_readers;
    /* Our mapping is writable; from here on no other can be. */
    if ((ret = ipc_shm_seal_writes(*fd, name, err)) < 0)
        goto out_tables;
    memset(m, 0, sizeof(*m));
    memcpy((uint8_t *)base + FIB_PAGE, &l, sizeof(l));
    fib_map_bind(m, base, size, &l);
    m->sh = rbase;
    m->sh_size = sizeof(struct fib_shared);
    if (readers_fd < 0)
        ipc_st_rel(&m->sh->gen, 1);
    return 0;

out_tables:
    ipc_shm_unmap(base, size);
    close(*fd);
out_readers:
    ipc_shm_unmap(rbase, sizeof(struct fib_shared));
    if (readers_fd < 0)
        close(*rfd);
    return ret;
}

/* The families' writer entry points that are nothing but the plumbing. */

int fib_create(const char *name, const struct fib_params *p, struct fib *fib, int *fd, int *rfd,
               struct ipc_err *err)
{
    int ret = fib_map_create(&fib_family4, name, p, -1, &fib->m, fd, rfd, err);
    fib->writer = ret == 0;
    return ret;
}

int fib6_create(const char *name, const struct fib6_params *p, int readers_fd, struct fib6 *fib, int *fd, int *rfd,
                struct ipc_err *err)
{
    struct fib_params q = p ? (struct fib_params){p->max_prefixes, p->tbl8_groups, p->max_nh} : fib_family6.defaults;
    int ret = fib_map_create(&fib_family6, name, &q, readers_fd, &fib->m, fd, rfd, err);
    fib->writer = ret == 0;
    return ret;
}

unsigned fib_reclaim(struct fib *fib)
{
    return fib->writer ? fib_map_reclaim(&fib_family4, &fib->m) : 0;
}

unsigned fib6_reclaim(struct fib6 *fib)
{
    return fib->writer ? fib_map_reclaim(&fib_family6, &fib->m) : 0;
}

void fib_gen_defer(struct fib *fib, bool on)
{
    fib->m.gen_defer = on && fib->writer;
}

void fib6_gen_defer(struct fib6 *fib, bool on)
{
    fib->m.gen_defer = on && fib->writer;
}

bool fib_gen_commit(struct fib *fib, struct fib6 *fib6)
{
    if (!fib->writer)
        return false;
    return fib_map_gen_commit(&fib->m, fib6 && fib6->writer ? &fib6->m : NULL);
}

void fib_reader_reset(struct fib *fib, unsigned slot)
{
    fib_map_reader_reset(&fib->m, slot);
}

void fib6_reader_reset(struct fib6 *fib, unsigned slot)
{
    fib_map_reader_reset(&fib->m, slot);
}

void fib_get_stats(const struct fib *fib, struct fib_stats *st)
{
    fib_map_stats(&fib->m, st);
}

void fib6_get_stats(const struct fib6 *fib, struct fib_stats *st)
{
    fib_map_stats(&fib->m, st);
}

bool fib_map_corrupt(struct fib_map *m)
{
    m->corrupt++;
    return false;
}

struct fib_w fib_map_w(const struct fib_family *f, struct fib_map *m)
{
    struct fib_params p = {m->lim.max_prefixes, m->lim.tbl8_groups, m->lim.max_nh};
    struct fib_layout l;
    fib_layout_of(f, &l, &p);
    uint8_t *b = m->base;
    struct fib_layout *s = m->lay;
    struct fib_w w = {
        .nh_ref = (uint32_t *)(b + l.off_nh_ref),
        .pfx = b + l.off_pfx,
        .nhh = b + l.off_nhh,
        .groups = {m->lim.tbl8_groups, &s->tbl8_nfree, &s->tbl8_hwm, &s->tbl8_rq_head, &s->tbl8_rq_len,
                   (uint32_t *)(b + l.off_tbl8_free), (uint32_t *)(b + l.off_tbl8_rq_idx),
                   (uint64_t *)(b + l.off_tbl8_rq_gen)},
        .nhs = {m->lim.max_nh, &s->nh_nfree, &s->nh_hwm, &s->nh_rq_head, &s->nh_rq_len,
                (uint32_t *)(b + l.off_nh_free), (uint32_t *)(b + l.off_nh_rq_idx), (uint64_t *)(b + l.off_nh_rq_gen)},
        .mph = b + l.off_mph,
        .mp = {m->lim.mp_groups, &s->mp_nfree, &s->mp_hwm, &s->mp_rq_head, &s->mp_rq_len,
               (uint32_t *)(b + l.off_mp_free), (uint32_t *)(b + l.off_mp_rq_idx), (uint64_t *)(b + l.off_mp_rq_gen)},
    };
    return w;
}

bool fib_map_state_ok(struct fib_map *m)
{
    const struct fib_layout *l = m->lay;
    const struct fib_limits *x = &m->lim;
    return FIB_OK(m, l->n_prefixes <= x->max_prefixes && l->n_nh <= x->max_nh && l->tbl8_hwm <= x->tbl8_groups &&
                         l->tbl8_nfree <= l->tbl8_hwm && l->tbl8_rq_head < x->tbl8_groups &&
                         l->tbl8_rq_len <= l->tbl8_hwm - l->tbl8_nfree && l->nh_hwm <= x->max_nh &&
                         l->nh_nfree <= l->nh_hwm && l->nh_rq_head < x->max_nh &&
                         l->nh_rq_len <= l->nh_hwm - l->nh_nfree && l->mp_hwm <= x->mp_groups &&
                         l->mp_nfree <= l->mp_hwm && l->mp_rq_head < x->mp_groups &&
                         l->mp_rq_len <= l->mp_hwm - l->mp_nfree && l->n_mp <= l->mp_hwm);
}

/* ---- deferred reuse ---- */

/* The switch (W2's bump) itself: every stamp handed out so far is <= the
 * new generation, so one switch covers a deferred batch's retirements. */
static uint64_t fib_gen_switch(struct fib_map *m)
{
    m->gen_pending = false;
    return atomic_fetch_add_explicit(&m->sh->gen, 1, memory_order_seq_cst) + 1;
}

uint64_t fib_retire_gen(struct fib_map *m)
{
    if (!m->gen_defer)
        return fib_gen_switch(m);
    /* Deferred: stamped with the generation the next switch makes. Until
     * it, no reader can announce that stamp, so only slots at 0 (outside
     * a batch, W2/R2) let the object be reused: safe, as before. */
    m->gen_pending = true;
    return ipc_ld_rlx(&m->sh->gen) + 1;
}

bool fib_map_gen_commit(struct fib_map *m, struct fib_map *also)
{
    bool any = m->gen_pending || (also && also->gen_pending);
    if (any)
        fib_gen_switch(m);
    if (also && also->sh == m->sh)
        also->gen_pending = false; /* the same readers' region: the same switch */
    else if (also && also->gen_pending)
        fib_gen_switch(also);
    return any;
}

/* Can an object retired at @g be reused? */
static bool fib_quiet_since(struct fib_map *m, uint64_t g)
{
    ipc_fence_sc(); /* W2: pairs with R2 in fib_map_read_begin */
    for (unsigned r = 0; r < FIB_MAX_READERS; r++) {
        uint64_t a = ipc_ld_acq(&m->sh->reader[r].active);
        if (a != 0 && a < g)
            return false;
    }
    return true;
}

/* Move what no reader can hold from @q's retire queue to its free stack. */
static unsigned fib_rq_reclaim(struct fib_map *m, const struct fib_rq *q)
{
    unsigned n = 0;
    while (*q->len > 0) {
        uint32_t h = *q->head;
        if (!FIB_OK(m, h < q->cap && *q->len <= q->cap && *q->nfree < q->cap && q->idx[h] < q->cap))
            break;
        if (!fib_quiet_since(m, q->gen[h]))
            break;
        q->free_stack[(*q->nfree)++] = q->idx[h];
        *q->head = (h + 1) % q->cap;
        (*q->len)--;
        n++;
    }
    return n;
}

bool fib_rq_push(struct fib_map *m, const struct fib_rq *q, uint32_t i, uint64_t gen)
{
    if (!FIB_OK(m, *q->head < q->cap && *q->len < q->cap))
        return false;
    uint32_t tail = (uint32_t)(((uint64_t)*q->head + *q->len) % q->cap);
    q->idx[tail] = i;
    q->gen[tail] = gen;
    (*q->len)++;
    return true;
}

/*
 * Wait briefly until @want objects are free (free stack plus the never-used
 * ones above the high-water mark), for when they are needed now. Readers
 * hold a slot for one batch (microseconds), so 10 ms is ample unless one is
 * stopped; then the caller gets -EAGAIN.
 */
static bool fib_rq_wait_free(struct fib_map *m, const struct fib_rq *q, uint32_t want)
{
    struct timespec t0, t;
    uint64_t bad = m->corrupt;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if ((uint64_t)*q->nfree + (q->cap - *q->hwm) >= want)
            return true;
        if (*q->len == 0)
            return false;
        if (m->gen_pending) /* what waits for a deferred switch is needed now */
            fib_gen_switch(m);
        fib_rq_reclaim(m, q);
        if (m->corrupt != bad)
            return false; /* the queue failed a check: the caller says -EUCLEAN */
        if ((uint64_t)*q->nfree + (q->cap - *q->hwm) >= want)
            return true;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000l + (t.tv_nsec - t0.tv_nsec) > 10000000l)
            return false;
        sched_yield();
    }
}

int fib_rq_room(struct fib_map *m, const struct fib_rq *q, uint32_t want)
{
    if (want == 0)
        return 0;
    uint64_t bad = m->corrupt;
    bool ok = fib_rq_wait_free(m, q, want);
    if (m->corrupt != bad) /* a retire-queue slot failed its check */
        return -EUCLEAN;
    return ok ? 0 : *q->len ? -EAGAIN : -ENOSPC;
}

uint32_t fib_rq_take(struct fib_map *m, const struct fib_rq *q)
{
    if (*q->nfree == 0)
        return (*q->hwm)++;
    uint32_t i = q->free_stack[--(*q->nfree)];
    return FIB_OK(m, i < *q->hwm) ? i : UINT32_MAX;
}

unsigned fib_map_reclaim(const struct fib_family *f, struct fib_map *m)
{
    struct fib_w w = fib_map_w(f, m);
    return fib_rq_reclaim(m, &w.groups) + fib_rq_reclaim(m, &w.nhs) + fib_rq_reclaim(m, &w.mp);
}

void fib_map_reader_reset(struct fib_map *m, unsigned slot)
{
    if (m->sh && slot < FIB_MAX_READERS) /* a FIB not made yet has no readers */
        ipc_st_rel(&m->sh->reader[slot].active, 0);
}

void fib_map_stats(const struct fib_map *m, struct fib_stats *st)
{
    const struct fib_layout *l = m->lay;
    st->prefixes = l->n_prefixes;
    st->nh = l->n_nh;
    st->tbl8_used = l->tbl8_hwm - l->tbl8_nfree - l->tbl8_rq_len;
    st->tbl8_retired = l->tbl8_rq_len;
    st->tbl8_groups = m->lim.tbl8_groups ? m->lim.tbl8_groups : l->tbl8_groups;
    st->nh_retired = l->nh_rq_len;
    st->nh_groups = l->n_mp;
    st->region_bytes = m->size;
    st->gen = ipc_ld_rlx(&m->sh->gen);
    st->corrupt = m->corrupt;
}

int fib_map_snapshot(const struct fib_family *f, int fd, int (*walk)(struct fib_map *m, void *ctx), void *ctx,
                     bool *dirty, struct ipc_err *err)
{
    struct fib_map m;
    int ret = fib_map_open(f, &m, fd, dirty, err);
    if (ret < 0)
        return ret;
    ret = walk(&m, ctx);
    ipc_shm_unmap(m.base, m.size);
    return ret == -EUCLEAN ? ipc_errf(err, ret, "%s region: an entry out of bounds", f->name) : ret;
}

/* ---- hashes ---- */

static uint8_t *fib_h_slot(const struct fib_hkind *k, uint8_t *t, uint32_t i)
{
    return t + (size_t)i * k->slot_bytes;
}

static uint32_t *fib_h_word(uint8_t *slot, uint32_t off)
{
    return (uint32_t *)(slot + off);
}

/* Is @s's key @key? The IPv4 keys (one word) without a call. */
static bool fib_h_same(const struct fib_hkind *k, const uint8_t *s, const void *key)
{
    if (k->key_bytes == sizeof(uint64_t)) {
        uint64_t a, b;
        memcpy(&a, s, sizeof(a));
        memcpy(&b, key, sizeof(b));
        return a == b;
    }
    return memcmp(s, key, k->key_bytes) == 0;
}

void *fib_h_find(const struct fib_hkind *k, uint8_t *t, uint32_t mask, const void *key)
{
    uint32_t i = k->hash(key) & mask;
    for (uint32_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
        uint8_t *s = fib_h_slot(k, t, i);
        if (!*fib_h_word(s, k->used_off))
            return NULL;
        if (fib_h_same(k, s, key))
            return s;
    }
    return NULL;
}

bool fib_h_insert(const struct fib_hkind *k, uint8_t *t, uint32_t mask, const void *key, uint32_t val)
{
    uint32_t i = k->hash(key) & mask;
    for (uint32_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
        uint8_t *s = fib_h_slot(k, t, i);
        if (!*fib_h_word(s, k->used_off)) {
            memset(s, 0, k->slot_bytes);
            memcpy(s, key, k->key_bytes);
            *fib_h_word(s, k->val_off) = val;
            *fib_h_word(s, k->used_off) = 1;
            return true;
        }
    }
    return false;
}

void fib_h_remove(const struct fib_hkind *k, uint8_t *t, uint32_t mask, void *slot)
{
    uint32_t i = (uint32_t)(((uint8_t *)slot - t) / k->slot_bytes);
    uint32_t j = i;
    for (uint32_t n = 0; n <= mask; n++) {
        *fib_h_word(fib_h_slot(k, t, i), k->used_off) = 0;
        for (;;) {
            j = (j + 1) & mask;
            uint8_t *s = fib_h_slot(k, t, j);
            if (!*fib_h_word(s, k->used_off) || j == i)
                return;
            if (fib_h_may_move(i, j, k->hash(s) & mask))
                break;
        }
        memcpy(fib_h_slot(k, t, i), fib_h_slot(k, t, j), k->slot_bytes);
        i = j;
    }
}

/* ---- next hops and prefixes ---- */

int fib_nh_room(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, const void *key)
{
    if (fib_h_find(o->h, w->nhh, m->lim.nhh_mask, key))
        return 0;
    return fib_rq_room(m, &w->nhs, 1);
}

int fib_nh_get(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, const void *key, uint32_t *idx)
{
    uint8_t *s = fib_h_find(o->h, w->nhh, m->lim.nhh_mask, key);
    if (s) {
        uint32_t v = *fib_h_word(s, o->h->val_off);
        if (!FIB_OK(m, v < m->lim.max_nh && w->nh_ref[v] > 0))
            return -EUCLEAN;
        w->nh_ref[v]++;
        *idx = v;
        return 0;
    }
    uint32_t i = fib_rq_take(m, &w->nhs);
    if (i == UINT32_MAX)
        return -EUCLEAN;
    o->new_life(false, i);
    /* Before any entry names it: entries are stored with release. */
    o->nh_store(m, i, key);
    if (!FIB_OK(m, fib_h_insert(o->h, w->nhh, m->lim.nhh_mask, key, i)))
        return -EUCLEAN;
    w->nh_ref[i] = 1;
    m->lay->n_nh++;
    *idx = i;
    return 0;
}

int fib_nh_put(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t i, uint64_t gen)
{
    if (!FIB_OK(m, i < m->lim.max_nh && w->nh_ref[i] > 0 && m->lay->n_nh > 0))
        return -EUCLEAN;
    if (--w->nh_ref[i] > 0)
        return 0;
    uint64_t key[FIB_KEY_MAX / sizeof(uint64_t)] = {0}; /* aligned for either family's key */
    o->nh_key(m, i, key);
    void *s = fib_h_find(o->h, w->nhh, m->lim.nhh_mask, key);
    if (s)
        fib_h_remove(o->h, w->nhh, m->lim.nhh_mask, s);
    /* The slot keeps its value for readers that still hold the index. */
    if (!gen)
        gen = fib_retire_gen(m);
    if (!fib_rq_push(m, &w->nhs, i, gen))
        return -EUCLEAN;
    m->lay->n_nh--;
    /* A group's header: the group and its members' references go with it,
     * under the same stamp (a reader holding the header may read them). */
    uint32_t g;
    return o->mp_is_hdr(key, &g) ? fib_mp_put(o, m, w, g, gen) : 0;
}

uint32_t fib_group_new(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w)
{
    uint32_t g = fib_rq_take(m, &w->groups);
    if (g != UINT32_MAX)
        o->new_life(true, g);
    return g;
}

void *fib_pfx_find(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, const void *key,
                   uint32_t *nh)
{
    uint8_t *s = fib_h_find(o->h, w->pfx, m->lim.pfx_mask, key);
    if (s)
        *nh = FIB_OK(m, *fib_h_word(s, o->h->val_off) < m->lim.max_nh) ? *fib_h_word(s, o->h->val_off) : UINT32_MAX;
    return s;
}

int fib_pfx_commit(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, void *s, const void *key,
                   uint32_t ni)
{
    if (s) {
        uint32_t *val = fib_h_word(s, o->h->val_off);
        uint32_t old = *val;
        *val = ni;
        int ret = fib_nh_put(o, m, w, old, 0);
        if (ret < 0)
            return ret;
    } else {
        if (!FIB_OK(m, fib_h_insert(o->h, w->pfx, m->lim.pfx_mask, key, ni)))
            return -EUCLEAN;
        m->lay->n_prefixes++;
    }
    m->lay->dirty = 0;
    return 0;
}

void *fib_pfx_next(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t *i, uint32_t *nh)
{
    for (; *i <= m->lim.pfx_mask; (*i)++) {
        uint8_t *s = fib_h_slot(o->h, w->pfx, *i);
        if (*fib_h_word(s, o->h->used_off)) {
            *nh = *fib_h_word(s, o->h->val_off);
            return s;
        }
    }
    return NULL;
}

int fib_set_begin(const struct fib_wops *o, struct fib_map *m, struct fib_w *w, const void *key, bool replace,
                  void **s)
{
    if (m->lay->dirty || !fib_map_state_ok(m))
        return -EUCLEAN;
    *w = fib_map_w(o->f, m);
    uint32_t old;
    *s = fib_pfx_find(o, m, w, key, &old);
    if (*s && !replace)
        return -EEXIST;
    if (!*s && m->lay->n_prefixes >= m->lim.max_prefixes)
        return -ENOSPC;
    return 0;
}

int fib_set_nh(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, uint32_t groups, const void *nk,
               uint32_t *ni)
{
    int ret = fib_rq_room(m, &w->groups, groups);
    if (ret == 0)
        ret = fib_nh_room(o, m, w, nk);
    if (ret < 0)
        return ret;
    m->lay->dirty = 1;
    return fib_nh_get(o, m, w, nk, ni);
}

int fib_del_begin(const struct fib_wops *o, struct fib_map *m, struct fib_w *w, const void *key, void **s,
                  uint32_t *ni)
{
    if (m->lay->dirty || !fib_map_state_ok(m))
        return -EUCLEAN;
    *w = fib_map_w(o->f, m);
    *s = fib_pfx_find(o, m, w, key, ni);
    if (!*s)
        return -ENOENT;
    return *ni == UINT32_MAX || !FIB_OK(m, m->lay->n_prefixes > 0) ? -EUCLEAN : 0;
}

void fib_del_unlink(const struct fib_wops *o, struct fib_map *m, const struct fib_w *w, void *s)
{
    m->lay->dirty = 1;
    fib_h_remove(o->h, w->pfx, m->lim.pfx_mask, s);
    m->lay->n_prefixes--;
}
