/* SPDX-License-Identifier: MIT */
/*
 * ipc/pool.c: the packet buffer pool (ipc/pool.h). Allocation and free run in
 * every process on the data path; reclaim and census run in the supervisor.
 *
 * The rules that make a kill at any instruction safe (docs/ipc.md):
 *  R1. A depot word is written by its owner alone (a plain release store),
 *      except for one CAS that moves a FREE word to a new owner.
 *  R2. Buffers move between a magazine and their owner one at a time, in an
 *      order that keeps each reachable: on allocation the owner word is set
 *      before the depot word drops the buffer; on free the depot word takes
 *      the buffer before the owner word is cleared.
 *  R3. A chain link (meta.link) is rewritten only by the owner of the
 *      magazine the buffer is on, or is about to be on.
 */
#include "pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORD_OWNER(w) ((uint16_t)((w) >> 48))
#define WORD_CNT(w) ((uint32_t)(((w) >> 32) & 0xffff))
#define WORD_HEAD(w) ((uint32_t)(w))

static inline uint64_t word_make(uint16_t owner, uint32_t cnt, uint32_t head)
{
    return ((uint64_t)owner << 48) | ((uint64_t)cnt << 32) | head;
}

static size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

struct pool_layout {
    uint32_t ndepot;
    size_t depot_off, meta_off, frames_off, size;
};

static void pool_layout(uint32_t nbufs, uint32_t frame_size, struct pool_layout *l)
{
    size_t page = 4096;
    /* Every buffer can sit on a full magazine, and each attached process can
     * own up to three words at once (two, plus one while it swaps), so a
     * claim for a word with room always finds one. */
    l->ndepot = (nbufs + IPC_MAG - 1) / IPC_MAG + 3 * IPC_POOL_MAX_CACHES + 8;
    l->depot_off = align_up(sizeof(struct ipc_pool_hdr), IPC_CACHELINE);
    l->meta_off = align_up(l->depot_off + (size_t)l->ndepot * sizeof(struct ipc_depot_slot), IPC_CACHELINE);
    l->frames_off = align_up(l->meta_off + (size_t)nbufs * sizeof(struct ipc_meta), page);
    l->size = l->frames_off + (size_t)nbufs * frame_size;
}

int ipc_pool_create(const char *name, uint32_t nbufs, uint32_t frame_size, int *fd, struct ipc_err *err)
{
    if (nbufs < 1 || nbufs > IPC_POOL_MAX_BUFS)
        return ipc_errf(err, -EINVAL, "pool %s: %u buffers is out of range 1..%u", name, nbufs, IPC_POOL_MAX_BUFS);
    if (!ipc_pool_frame_ok(frame_size))
        return ipc_errf(err, -EINVAL, "pool %s: frame size %u is not a power of two from %u to %u", name, frame_size,
                        IPC_FRAME_DEFAULT, IPC_FRAME_MAX);
    struct pool_layout l;
    pool_layout(nbufs, frame_size, &l);
    void *base;
    int ret = ipc_shm_create(name, IPC_SHM_POOL, IPC_POOL_VERSION, l.size, fd, &base, err);
    if (ret < 0)
        return ret;
    struct ipc_pool_hdr *h = base;
    h->nbufs = nbufs;
    h->frame_size = frame_size;
    h->headroom = IPC_HEADROOM;
    h->mag_size = IPC_MAG;
    h->ndepot = l.ndepot;
    h->depot_off = l.depot_off;
    h->meta_off = l.meta_off;
    h->frames_off = l.frames_off;

    /* Every buffer starts free, on full magazines in the first depot words. */
    struct ipc_meta *meta = (struct ipc_meta *)((uint8_t *)base + l.meta_off);
    struct ipc_depot_slot *depot = (struct ipc_depot_slot *)((uint8_t *)base + l.depot_off);
    uint32_t slot = 0;
    for (uint32_t first = 0; first < nbufs; first += IPC_MAG, slot++) {
        uint32_t cnt = nbufs - first < IPC_MAG ? nbufs - first : IPC_MAG;
        for (uint32_t i = 0; i < cnt; i++) {
            struct ipc_meta *m = &meta[first + i];
            m->next = IPC_BUF_NONE;
            m->link = i + 1 < cnt ? first + i + 1 : IPC_BUF_NONE;
            m->in_port = m->out_port = IPC_PORT_NONE;
            ipc_st_rlx(&m->owner, IPC_OWNER_FREE);
        }
        ipc_st_rlx(&depot[slot].word, word_make(IPC_OWNER_FREE, cnt, first));
    }
    for (; slot < l.ndepot; slot++)
        ipc_st_rlx(&depot[slot].word, word_make(IPC_OWNER_FREE, 0, IPC_BUF_NONE));
    ipc_st_rlx(&h->hint_full, 0);
    ipc_st_rlx(&h->hint_room, (nbufs + IPC_MAG - 1) / IPC_MAG);
    ipc_fence_sc();
    ipc_shm_unmap(base, l.size);
    return 0;
}

int ipc_pool_attach(struct ipc_pool *pool, int fd, uint16_t self, struct ipc_err *err)
{
    memset(pool, 0, sizeof(*pool));
    if (self == IPC_OWNER_FREE || self > IPC_OWNER_SERVICE_MAX)
        return ipc_errf(err, -EINVAL, "pool fd %d: owner id %u is not a supervisor or service id (1..%u)", fd, self,
                        IPC_OWNER_SERVICE_MAX);
    void *base;
    size_t size;
    int ret = ipc_shm_attach(fd, IPC_SHM_POOL, IPC_POOL_VERSION, &base, &size, err);
    if (ret < 0)
        return ret;
    struct ipc_pool_hdr *h = base;
    struct pool_layout l;
    if (h->nbufs < 1 || h->nbufs > IPC_POOL_MAX_BUFS || !ipc_pool_frame_ok(h->frame_size)) {
        ret = ipc_errf(err, -EPROTO, "pool %.40s: %u buffers of %u bytes is not a valid pool", h->shm.name, h->nbufs,
                       h->frame_size);
        goto out_unmap;
    }
    pool_layout(h->nbufs, h->frame_size, &l);
    if (h->mag_size != IPC_MAG || h->headroom != IPC_HEADROOM) {
        ret = ipc_errf(err, -EPROTO, "pool %.40s: magazine size %u and headroom %u, this build uses %u and %u",
                       h->shm.name, h->mag_size, h->headroom, IPC_MAG, IPC_HEADROOM);
        goto out_unmap;
    }
    if (h->ndepot != l.ndepot || h->depot_off != l.depot_off || h->meta_off != l.meta_off ||
        h->frames_off != l.frames_off || l.size != size) {
        ret = ipc_errf(err, -EPROTO, "pool %.40s: layout (depot %u words, frames at %llu, %zu bytes) differs from "
                       "this build's (%u words, frames at %zu, %zu bytes)",
                       h->shm.name, h->ndepot, (unsigned long long)h->frames_off, size, l.ndepot, l.frames_off,
                       l.size);
        goto out_unmap;
    }
    pool->hdr = h;
    pool->depot = (struct ipc_depot_slot *)((uint8_t *)base + l.depot_off);
    pool->meta = (struct ipc_meta *)((uint8_t *)base + l.meta_off);
    pool->frames = (uint8_t *)base + l.frames_off;
    pool->map_size = size;
    pool->nbufs = h->nbufs;
    pool->frame_size = h->frame_size;
    pool->headroom = h->headroom;
    pool->ndepot = h->ndepot;
    pool->self = self;
    for (int i = 0; i < 2; i++)
        pool->mag[i] = (struct ipc_mag){.slot = IPC_BUF_NONE, .head = IPC_BUF_NONE, .cnt = 0};
    return 0;

out_unmap:
    ipc_shm_unmap(base, size);
    return ret;
}

/* Publish a magazine's private copy to its depot word (R1: owner only). */
static inline void mag_publish(struct ipc_pool *pool, const struct ipc_mag *m)
{
    ipc_st_rel(&pool->depot[m->slot].word, word_make(pool->self, m->cnt, m->head));
}

/* Hand a magazine back to the depot: one store turns it FREE. */
static void mag_release(struct ipc_pool *pool, struct ipc_mag *m)
{
    if (m->slot == IPC_BUF_NONE)
        return;
    ipc_st_rel(&pool->depot[m->slot].word, word_make(IPC_OWNER_FREE, m->cnt, m->head));
    if (m->cnt >= IPC_MAG)
        ipc_st_rlx(&pool->hdr->hint_full, m->slot);
    *m = (struct ipc_mag){.slot = IPC_BUF_NONE, .head = IPC_BUF_NONE, .cnt = 0};
}

/*
 * Claim a FREE depot word: with buffers on it (@want_full) or with room for
 * more. One CAS moves it to us; nothing else about the depot is shared state.
 */
static bool mag_claim(struct ipc_pool *pool, bool want_full, struct ipc_mag *out)
{
    _Atomic uint32_t *hint = want_full ? &pool->hdr->hint_full : &pool->hdr->hint_room;
    uint32_t start = ipc_ld_rlx(hint);
    if (start >= pool->ndepot)
        start = 0;
    for (uint32_t i = 0; i < pool->ndepot; i++) {
        uint32_t s = start + i;
        if (s >= pool->ndepot)
            s -= pool->ndepot;
        uint64_t w = ipc_ld_rlx(&pool->depot[s].word);
        for (;;) {
            if (WORD_OWNER(w) != IPC_OWNER_FREE)
                break;
            uint32_t cnt = WORD_CNT(w);
            if (want_full ? cnt == 0 : cnt >= IPC_MAG)
                break;
            if (ipc_cas(&pool->depot[s].word, &w, word_make(pool->self, cnt, WORD_HEAD(w)))) {
                /* No ABA hazard: a FREE word fully describes its chain, and
                 * nobody relinks a chain while its word is FREE (R3). */
                if (s != start)
                    ipc_st_rlx(hint, s);
                *out = (struct ipc_mag){.slot = s, .head = WORD_HEAD(w), .cnt = cnt};
                return true;
            }
        }
    }
    return false;
}

/* The allocation magazine ran dry: swap in the free one or claim a full one. */
static bool mag_refill(struct ipc_pool *pool)
{
    struct ipc_mag *a = &pool->mag[0], *f = &pool->mag[1];
    if (f->cnt > 0) {
        struct ipc_mag t = *a;
        *a = *f;
        *f = t;
        return true;
    }
    struct ipc_mag got;
    if (!mag_claim(pool, true, &got))
        return false;
    if (a->slot != IPC_BUF_NONE) {
        if (f->slot == IPC_BUF_NONE)
            *f = *a; /* keep the empty word to free into */
        else
            mag_release(pool, a);
    }
    *a = got;
    return true;
}

/* The free magazine is full or missing: swap with an empty one or claim room. */
static bool mag_spill(struct ipc_pool *pool)
{
    struct ipc_mag *a = &pool->mag[0], *f = &pool->mag[1];
    if (f->slot != IPC_BUF_NONE && f->cnt < IPC_MAG)
        return true;
    if (a->slot != IPC_BUF_NONE && a->cnt == 0) {
        struct ipc_mag t = *a;
        *a = *f;
        *f = t;
        return true;
    }
    if (f->slot != IPC_BUF_NONE)
        mag_release(pool, f);
    return mag_claim(pool, false, f);
}

static inline void meta_reset(struct ipc_pool *pool, struct ipc_meta *m)
{
    m->next = IPC_BUF_NONE;
    m->pkt_len = 0;
    m->off = (uint16_t)pool->headroom;
    m->len = 0;
    m->in_port = IPC_PORT_NONE;
    m->out_port = IPC_PORT_NONE;
    m->flags = 0;
    m->vnet = (struct ipc_vnet){0};
    m->mark = 0;
}

uint32_t ipc_pool_alloc(struct ipc_pool *pool, ipc_buf *bufs, uint32_t n)
{
    struct ipc_mag *a = &pool->mag[0];
    uint32_t got = 0;
    while (got < n) {
        if (a->cnt == 0 && !mag_refill(pool))
            break;
        ipc_buf b = a->head;
        /* Every buffer on a magazine is FREE and links to one in range
         * (R2, R3), unless a process wrote the links or the owner words,
         * which every service can: drop the rest of the magazine rather
         * than follow a link out of the pool or hand out a buffer someone
         * holds. The census finds what was dropped (lost), and the
         * supervisor puts it back. The owner word shares b's line with the
         * link we read anyway. */
        if (ipc_unlikely(b >= pool->nbufs || ipc_ld_rlx(&pool->meta[b].owner) != IPC_OWNER_FREE)) {
            ipc_add_rlx(&pool->hdr->mag_bad, 1);
            a->head = IPC_BUF_NONE;
            a->cnt = 0;
            mag_publish(pool, a);
            continue;
        }
        struct ipc_meta *m = &pool->meta[b];
        /* R2: owner first, then the depot word drops b. A death in between
         * leaves b on our magazine with our id: reclaim frees it once. */
        ipc_st_rlx(&m->owner, pool->self);
        a->head = m->link;
        a->cnt--;
        mag_publish(pool, a);
        meta_reset(pool, m);
        bufs[got++] = b;
    }
    if (got < n)
        ipc_add_rlx(&pool->hdr->alloc_fail, 1);
    return got;
}

/* Free one frame the caller owns, without following its chain. */
static bool pool_free_frame(struct ipc_pool *pool, ipc_buf b)
{
    struct ipc_mag *f = &pool->mag[1];
    if (ipc_unlikely(f->slot == IPC_BUF_NONE || f->cnt >= IPC_MAG) && !mag_spill(pool))
        return false;
    struct ipc_meta *m = &pool->meta[b];
    /* R2: the depot word takes b before the owner word lets go. */
    m->link = f->head;
    f->head = b;
    f->cnt++;
    mag_publish(pool, f);
    ipc_st_rlx(&m->owner, IPC_OWNER_FREE);
    return true;
}

uint32_t ipc_pool_free(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n)
{
    uint32_t freed = 0;
    for (uint32_t i = 0; i < n; i++) {
        ipc_buf b = bufs[i];
        for (uint32_t k = 0; b != IPC_BUF_NONE; k++) {
            if (b >= pool->nbufs || k >= IPC_CHAIN_MAX || ipc_pool_owner(pool, b) != pool->self) {
                ipc_add_rlx(&pool->hdr->free_bad, 1);
                break;
            }
            ipc_buf next = pool->meta[b].next;
            if (!pool_free_frame(pool, b)) {
                ipc_add_rlx(&pool->hdr->free_bad, 1);
                break;
            }
            freed++;
            b = next;
        }
    }
    return freed;
}

int ipc_pool_alloc_chain(struct ipc_pool *pool, uint32_t bytes, ipc_buf *head)
{
    uint32_t nframes = ipc_pool_chain_frames(pool, bytes);
    if (nframes > IPC_CHAIN_MAX)
        return -EMSGSIZE;
    ipc_buf bufs[IPC_CHAIN_MAX];
    uint32_t got = ipc_pool_alloc(pool, bufs, nframes);
    if (got < nframes) {
        ipc_pool_free(pool, bufs, got);
        return -ENOBUFS;
    }
    ipc_pool_chain_link(pool, bufs, nframes, bytes);
    *head = bufs[0];
    return 0;
}

uint32_t ipc_pool_give(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n, uint16_t to)
{
    uint32_t given = 0;
    for (uint32_t i = 0; i < n; i++) {
        ipc_buf b = bufs[i];
        if (b >= pool->nbufs || ipc_pool_owner(pool, b) != pool->self)
            continue;
        for (uint32_t k = 0; b != IPC_BUF_NONE && b < pool->nbufs && k < IPC_CHAIN_MAX; k++) {
            ipc_st_rlx(&pool->meta[b].owner, to);
            b = pool->meta[b].next;
        }
        given++;
    }
    return given;
}

enum take_verdict { TAKE_OK, TAKE_BAD_FRAME, TAKE_BAD_CHAIN };

/* Check one packet from @from without writing anything. */
static enum take_verdict take_check(const struct ipc_pool *pool, uint16_t from, ipc_buf b)
{
    const struct ipc_meta *m = &pool->meta[b];
    if ((uint32_t)m->off + m->len > pool->frame_size)
        return TAKE_BAD_FRAME;
    if (ipc_likely(m->next == IPC_BUF_NONE))
        return m->pkt_len == m->len || m->pkt_len == 0 ? TAKE_OK : TAKE_BAD_FRAME;
    uint32_t total = m->len;
    ipc_buf f = m->next;
    for (uint32_t k = 1;; k++) {
        /* The bound catches loops too: a loop never reaches IPC_BUF_NONE. */
        if (k >= IPC_CHAIN_MAX || f >= pool->nbufs || ipc_pool_owner(pool, f) != from)
            return TAKE_BAD_CHAIN;
        const struct ipc_meta *fm = &pool->meta[f];
        if ((uint32_t)fm->off + fm->len > pool->frame_size)
            return TAKE_BAD_CHAIN;
        total += fm->len;
        if (fm->next == IPC_BUF_NONE)
            break;
        f = fm->next;
    }
    return total == m->pkt_len ? TAKE_OK : TAKE_BAD_CHAIN;
}

uint32_t ipc_pool_take(struct ipc_pool *pool, uint16_t from, ipc_buf *bufs, uint32_t n, struct ipc_ring_shared *ctr)
{
    uint32_t good = 0;
    for (uint32_t i = 0; i < n; i++) {
        ipc_buf b = bufs[i];
        if (ipc_unlikely(b >= pool->nbufs)) {
            ipc_count(&ctr->drop_bad_handle, 1);
            continue;
        }
        struct ipc_meta *m = &pool->meta[b];
        if (ipc_unlikely(ipc_ld_rlx(&m->owner) != from)) {
            /* Not the producer's to give (a double enqueue, a stale handle):
             * touching it would corrupt whoever owns it. */
            ipc_count(&ctr->drop_bad_owner, 1);
            continue;
        }
        enum take_verdict v = take_check(pool, from, b);
        if (ipc_likely(v == TAKE_OK)) {
            /* Bounded again: the producer can relink the chain after
             * take_check has walked it. */
            ipc_buf f = b;
            for (uint32_t k = 0; f < pool->nbufs && k < IPC_CHAIN_MAX; k++, f = pool->meta[f].next)
                ipc_st_rlx(&pool->meta[f].owner, pool->self);
            bufs[good++] = b;
            continue;
        }
        ipc_count(v == TAKE_BAD_FRAME ? &ctr->drop_bad_frame : &ctr->drop_bad_chain, 1);
        /* Keep the first frame, which is certainly the producer's, and cut
         * the chain we refuse to follow; the producer's reclaim finds the
         * rest if it was really its. */
        ipc_st_rlx(&m->owner, pool->self);
        m->next = IPC_BUF_NONE;
        pool_free_frame(pool, b);
    }
    return good;
}

void ipc_pool_flush(struct ipc_pool *pool)
{
    if (!pool->hdr)
        return;
    /* Merge the two magazines first, so a detaching process leaves at most
     * one partly filled word behind. */
    struct ipc_mag *a = &pool->mag[0], *f = &pool->mag[1];
    while (a->cnt > 0 && f->slot != IPC_BUF_NONE && f->cnt < IPC_MAG) {
        ipc_buf b = a->head;
        struct ipc_meta *m = &pool->meta[b];
        ipc_st_rlx(&m->owner, pool->self);
        a->head = m->link;
        a->cnt--;
        mag_publish(pool, a);
        m->link = f->head;
        f->head = b;
        f->cnt++;
        mag_publish(pool, f);
        ipc_st_rlx(&m->owner, IPC_OWNER_FREE);
    }
    mag_release(pool, a);
    mag_release(pool, f);
}

void ipc_pool_detach(struct ipc_pool *pool)
{
    if (!pool->hdr)
        return;
    ipc_pool_flush(pool);
    ipc_shm_unmap(pool->hdr, pool->map_size);
    memset(pool, 0, sizeof(*pool));
}

/* Mark the frames of the packets in @rings' published ranges in @bits;
 * returns the number of frames marked twice. */
static uint32_t mark_rings(const struct ipc_pool *pool, const struct ipc_ring_ref *rings, unsigned nrings,
                           uint16_t only, uint8_t *bits, uint32_t *marked)
{
    uint32_t dup = 0;
    for (unsigned r = 0; r < nrings; r++) {
        const struct ipc_ring_ref *ref = &rings[r];
        struct ipc_ring_shared *sh = ref->sh;
        if (only != IPC_OWNER_FREE && ref->prod_owner != only && ref->cons_owner != only)
            continue;
        /* cons first, with acquire: a slot consumed before this load was
         * re-owned by the consumer before it released, so reclaim cannot
         * mistake it for the dead producer's. The indices are the ends'
         * to write, so they bound nothing: the private size does. */
        uint32_t cons = ipc_ld_acq(&sh->cons);
        uint32_t prod = ipc_ld_acq(&sh->prod);
        if (prod - cons > ref->size)
            continue;
        for (uint32_t i = cons; i != prod; i++) {
            ipc_buf b = sh->slots[i & (ref->size - 1)];
            for (uint32_t k = 0; b < pool->nbufs && k < IPC_CHAIN_MAX; k++) {
                if (bits[b])
                    dup++;
                else if (marked)
                    (*marked)++;
                bits[b] = 1;
                b = pool->meta[b].next;
            }
        }
    }
    return dup;
}

/* A dead consumer's input ring: packets in the published range that it had
 * re-owned before dying return to the producer's id. The producer is alive
 * but never touches published slots, and the consumer is dead. */
static void give_back_unreleased(struct ipc_pool *pool, const struct ipc_ring_ref *ref, uint16_t dead)
{
    struct ipc_ring_shared *sh = ref->sh;
    uint32_t cons = ipc_ld_acq(&sh->cons);
    uint32_t prod = ipc_ld_acq(&sh->prod);
    if (prod - cons > ref->size)
        return;
    for (uint32_t i = cons; i != prod; i++) {
        ipc_buf b = sh->slots[i & (ref->size - 1)];
        for (uint32_t k = 0; b < pool->nbufs && k < IPC_CHAIN_MAX; k++) {
            if (ipc_pool_owner(pool, b) != dead)
                break;
            ipc_st_rlx(&pool->meta[b].owner, ref->prod_owner);
            b = pool->meta[b].next;
        }
    }
}

int ipc_pool_reclaim(struct ipc_pool *pool, uint16_t dead, const struct ipc_ring_ref *rings, unsigned nrings)
{
    if (dead == IPC_OWNER_FREE || dead == pool->self || dead > IPC_OWNER_SERVICE_MAX)
        return -EINVAL;
    int reclaimed = 0;

    /* 1. The dead owner's magazines: everything on them is free. A buffer at
     * the head may still carry the dead id (killed between the two stores of
     * an allocation or a free, R2): clear it, then return the word. */
    for (uint32_t s = 0; s < pool->ndepot; s++) {
        uint64_t w = ipc_ld_acq(&pool->depot[s].word);
        if (WORD_OWNER(w) != dead)
            continue;
        uint32_t cnt = 0;
        ipc_buf head = WORD_HEAD(w);
        for (ipc_buf b = head; cnt < WORD_CNT(w) && b < pool->nbufs; cnt++) {
            uint16_t o = ipc_pool_owner(pool, b);
            if (o != IPC_OWNER_FREE && o != dead)
                break; /* corrupt chain: stop; the census will report the rest */
            if (o == dead)
                reclaimed++;
            ipc_st_rlx(&pool->meta[b].owner, IPC_OWNER_FREE);
            b = pool->meta[b].link;
        }
        ipc_st_rel(&pool->depot[s].word, word_make(IPC_OWNER_FREE, cnt, cnt ? head : IPC_BUF_NONE));
    }

    /* 2. What the dead owner published or had not yet released stays in
     * its rings for its peers or its successor. Packets it had taken from an
     * input ring but not released go back to the ring's producer's name, so
     * that its successor takes them again like any other. */
    uint8_t *in_ring = calloc(pool->nbufs, 1);
    if (!in_ring)
        return -ENOMEM;
    mark_rings(pool, rings, nrings, dead, in_ring, NULL);
    for (unsigned r = 0; r < nrings; r++)
        if (rings[r].cons_owner == dead && rings[r].prod_owner != dead)
            give_back_unreleased(pool, &rings[r], dead);

    /* 3. Everything else with the dead id was held privately: free it. */
    for (ipc_buf b = 0; b < pool->nbufs; b++) {
        if (in_ring[b] || ipc_pool_owner(pool, b) != dead)
            continue;
        ipc_st_rlx(&pool->meta[b].owner, pool->self);
        pool->meta[b].next = IPC_BUF_NONE;
        if (pool_free_frame(pool, b))
            reclaimed++;
    }
    free(in_ring);
    ipc_pool_flush(pool);
    return reclaimed;
}

int ipc_pool_held(const struct ipc_pool *pool, uint16_t who, const struct ipc_ring_ref *rings, unsigned nrings)
{
    uint8_t *in_ring = calloc(pool->nbufs, 1);
    if (!in_ring)
        return -ENOMEM;
    /* The rings first, as reclaim does: a packet a live peer takes meanwhile
     * has been re-owned before its slot was released, so it is not counted. */
    mark_rings(pool, rings, nrings, who, in_ring, NULL);
    int held = 0;
    for (ipc_buf b = 0; b < pool->nbufs; b++)
        if (!in_ring[b] && ipc_pool_owner(pool, b) == who)
            held++;
    free(in_ring);
    return held;
}

int ipc_pool_census(const struct ipc_pool *pool, const struct ipc_ring_ref *rings, unsigned nrings,
                    struct ipc_census *c)
{
    memset(c, 0, sizeof(*c));
    c->total = pool->nbufs;
    uint8_t *seen = calloc(pool->nbufs, 1);
    if (!seen)
        return -ENOMEM;

    c->dup += mark_rings(pool, rings, nrings, IPC_OWNER_FREE, seen, &c->in_rings);

    for (uint32_t s = 0; s < pool->ndepot; s++) {
        uint64_t w = ipc_ld_acq(&pool->depot[s].word);
        ipc_buf b = WORD_HEAD(w);
        for (uint32_t k = 0; k < WORD_CNT(w) && b < pool->nbufs; k++) {
            if (seen[b])
                c->dup++;
            else
                c->free++;
            seen[b] = 1;
            b = pool->meta[b].link;
        }
    }

    for (ipc_buf b = 0; b < pool->nbufs; b++) {
        if (seen[b])
            continue;
        uint16_t o = ipc_pool_owner(pool, b);
        if (o == IPC_OWNER_FREE) {
            c->lost++;
        } else if (o <= IPC_OWNER_SERVICE_MAX) {
            c->held++;
            c->held_by[o]++;
        } else if (o >= IPC_OWNER_KERNEL && o <= IPC_OWNER_KERNEL_MAX) {
            c->kernel++;
        } else {
            c->bad_owner++;
        }
    }
    free(seen);
    bool ok = c->lost == 0 && c->dup == 0 && c->bad_owner == 0 &&
              c->free + c->in_rings + c->held + c->kernel == c->total;
    return ok ? 0 : -EUCLEAN;
}
