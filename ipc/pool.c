/* SPDX-License-Identifier: MIT */
/*
 * ipc/pool.c: the packet buffer pool's data path (ipc/pool.h): create and
 * attach, alloc, free, take and give, in every process.
 *
 * The rules that make a kill at any instruction safe (docs/ipc.md):
 *  R1. A depot word is written by its owner alone (a plain release store),
 *      except for one CAS that moves a FREE word to a new owner.
 *  R2. Buffers move between a magazine and their owner one at a time, in an
 *      order that keeps each reachable: on allocation the owner word is set
 *      before the depot word drops the buffer; on free the depot word takes
 *      the buffer before the owner word is cleared, by a release store of
 *      its own (a relaxed one could move above the depot word's).
 *  R3. A chain link (meta.link) is rewritten only by the owner of the
 *      magazine the buffer is on, or is about to be on.
 *
 * The supervisor's half (reclaim, held, census, repair, drain) and its
 * rule S1 are in ipc/pool_audit.c.
 */
#include "pool.h"
#include "pool_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


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
    /* Read once, at attach: for the supervisor that is at creation, before
     * any service maps the region. */
    for (size_t i = 0; i + 1 < sizeof(pool->name) && i < sizeof(h->shm.name) && h->shm.name[i]; i++)
        pool->name[i] = h->shm.name[i] >= 0x20 && h->shm.name[i] < 0x7f ? h->shm.name[i] : '?';
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
    /* Part-full ones too (a flush): a claim that skips its scan after one
     * that failed (mag_claim) looks at this word alone. */
    if (m->cnt > 0)
        ipc_st_rlx(&pool->hdr->hint_full, m->slot);
    *m = (struct ipc_mag){.slot = IPC_BUF_NONE, .head = IPC_BUF_NONE, .cnt = 0};
}

/*
 * Claim a FREE depot word: with buffers on it (@want_full) or with room for
 * more. One CAS moves it to us; nothing else about the depot is shared state.
 *
 * After a scan of the whole depot found no buffers, the next IPC_POOL_CLAIM_SKIP
 * claims for buffers look only at the word the hint names (where buffers
 * were last handed back) and fail at once if it has none. A pool short
 * under overload is the normal case, not a rare one: a TAP driver whose
 * receive slots wait for buffers asks once a loop or more, and each ask
 * would scan every depot word, a cache line each (docs/ipc.md). Of two
 * magazines handed back meanwhile, the hint names the later; the other is
 * found by the scan after the skips.
 */
static bool mag_claim(struct ipc_pool *pool, bool want_full, struct ipc_mag *out)
{
    _Atomic uint32_t *hint = want_full ? &pool->hdr->hint_full : &pool->hdr->hint_room;
    uint32_t start = ipc_ld_rlx(hint);
    if (start >= pool->ndepot)
        start = 0;
    if (want_full && pool->claim_skip > 0) {
        uint64_t w = ipc_ld_rlx(&pool->depot[start].word);
        if (WORD_OWNER(w) != IPC_OWNER_FREE || WORD_CNT(w) == 0) {
            pool->claim_skip--;
            return false;
        }
    }
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
                if (want_full)
                    pool->claim_skip = 0;
                *out = (struct ipc_mag){.slot = s, .head = WORD_HEAD(w), .cnt = cnt};
                return true;
            }
        }
    }
    if (want_full)
        pool->claim_skip = IPC_POOL_CLAIM_SKIP;
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

bool ipc_pool_free_frame(struct ipc_pool *pool, ipc_buf b)
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
    /* Release, not relaxed: C11 lets a relaxed store move above the
     * release before it, and then the owner word could say FREE while no
     * depot word holds b yet. On x86 both are a plain mov. */
    ipc_st_rel(&m->owner, IPC_OWNER_FREE);
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
            if (!ipc_pool_free_frame(pool, b)) {
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

int ipc_pool_copy_pkt(struct ipc_pool *dst, const struct ipc_pool *src, ipc_buf b, ipc_buf *out)
{
    const struct ipc_meta *sm = &src->meta[b];
    uint32_t bytes = sm->next == IPC_BUF_NONE ? sm->len : sm->pkt_len;
    ipc_buf head;
    int ret;
    if (ipc_likely(sm->next == IPC_BUF_NONE && bytes <= dst->frame_size - dst->headroom)) {
        /* The common case, one frame into one frame: no chain to walk. */
        if (ipc_pool_alloc(dst, &head, 1) != 1)
            return -ENOBUFS;
        struct ipc_meta *dm = &dst->meta[head];
        dm->len = (uint16_t)bytes;
        dm->pkt_len = bytes;
        memcpy(ipc_pool_data(dst, head), ipc_pool_data(src, b), bytes);
    } else {
        if ((ret = ipc_pool_alloc_chain(dst, bytes, &head)) < 0)
            return ret;
        /* Both chains hold @bytes, laid out differently: copy the overlap
         * of the current frame of each, then step whichever ran out. */
        ipc_buf s = b, d = head;
        uint32_t so = 0, dof = 0, left = bytes;
        for (unsigned k = 0; left && s != IPC_BUF_NONE && d != IPC_BUF_NONE && k < 2 * IPC_CHAIN_MAX; k++) {
            const struct ipc_meta *a = &src->meta[s];
            const struct ipc_meta *z = &dst->meta[d];
            uint32_t n = a->len - so < (uint32_t)z->len - dof ? a->len - so : (uint32_t)z->len - dof;
            if (n > left)
                n = left;
            memcpy(ipc_pool_data(dst, d) + dof, ipc_pool_data(src, s) + so, n);
            left -= n;
            so += n;
            dof += n;
            if (so == a->len) {
                s = a->next;
                so = 0;
            }
            if (dof == z->len) {
                d = z->next;
                dof = 0;
            }
        }
    }
    struct ipc_meta *dm = &dst->meta[head];
    dm->in_port = sm->in_port;
    dm->out_port = sm->out_port;
    dm->flags = sm->flags;
    dm->vnet = sm->vnet;
    dm->mark = sm->mark;
    memcpy(dm->user, sm->user, sizeof(dm->user));
    *out = head;
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

/* Check one packet from @from without writing anything. */
static inline enum take_verdict take_check(const struct ipc_pool *pool, uint16_t from, ipc_buf b)
{
    return chain_check(pool, b, from, from);
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
            /* Bounded again, although take_check just followed it: the
             * links are shared, and whoever wrote them may still be at it
             * (S1 for the supervisor's drain; in a service it costs a
             * compare per frame). */
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
        ipc_pool_free_frame(pool, b);
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
        ipc_st_rel(&m->owner, IPC_OWNER_FREE); /* R2, as in ipc_pool_free_frame */
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
