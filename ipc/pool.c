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
 *      the buffer before the owner word is cleared, by a release store of
 *      its own (a relaxed one could move above the depot word's).
 *  R3. A chain link (meta.link) is rewritten only by the owner of the
 *      magazine the buffer is on, or is about to be on.
 *
 * And the one rule of the supervisor's side (reclaim, held, census, repair,
 * drain), which reads memory every service can write:
 *  S1. No word read from the pool or a ring is used before it is checked:
 *      an index against the pool's size, a count against IPC_MAG, a chain
 *      against IPC_MAG or IPC_CHAIN_MAX steps and against passing one buffer
 *      twice, an owner against who can own, a ring through the supervisor's
 *      own copy of its geometry. What fails is counted, told and repaired
 *      from what the supervisor knows, never followed.
 */
#include "pool.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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
 * scanned every depot word, a cache line each (264 with 4,096 buffers): at a
 * TAP router's maximum 9 in 10 of driver-a's claims failed so, 4.5 % of the
 * services' CPU (docs/ipc.md). Of two magazines handed back meanwhile, the
 * hint names the later; the other is found by the scan after the skips.
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

/* Check one packet whose frames after the first belong to @o1 or @o2,
 * without writing anything. */
static inline enum take_verdict chain_check(const struct ipc_pool *pool, ipc_buf b, uint16_t o1, uint16_t o2)
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
        if (k >= IPC_CHAIN_MAX || f >= pool->nbufs)
            return TAKE_BAD_CHAIN;
        uint16_t o = ipc_pool_owner(pool, f);
        if (o != o1 && o != o2)
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
        ipc_st_rel(&m->owner, IPC_OWNER_FREE); /* R2, as in pool_free_frame */
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

/* ---- the supervisor's side (S1) ---- */

/* Per-buffer marks while the supervisor walks the pool. */
#define MARK_RING 1u /* a frame of a packet published in a ring */
#define MARK_MAG 2u  /* on a magazine */
#define MARK_WALK 4u /* on the packet chain being followed now */

void ipc_pool_set_report(struct ipc_pool *pool, ipc_pool_report_fn *fn, void *arg)
{
    pool->report = fn;
    pool->report_arg = arg;
}

/* An owner word that names no one: not free, no process, no kernel socket. */
static inline bool owner_nobody(uint16_t o)
{
    return o > IPC_OWNER_KERNEL_MAX;
}

/* Where buffer @b's metadata and depot word @s sit in the region. */
static size_t meta_at(const struct ipc_pool *pool, ipc_buf b)
{
    return (size_t)((const uint8_t *)&pool->meta[b] - (const uint8_t *)pool->hdr);
}

static size_t depot_at(const struct ipc_pool *pool, uint32_t s)
{
    return (size_t)((const uint8_t *)&pool->depot[s] - (const uint8_t *)pool->hdr);
}

static void tell_begin(struct ipc_pool *pool)
{
    pool->told = pool->untold = 0;
}

/* One piece of corruption: counted always, told up to IPC_POOL_TELL_MAX times a call. */
__attribute__((format(printf, 2, 3))) static void tell(struct ipc_pool *pool, const char *fmt, ...)
{
    pool->corrupt++;
    if (pool->told >= IPC_POOL_TELL_MAX) {
        pool->untold++;
        return;
    }
    pool->told++;
    if (!pool->report)
        return;
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pool->report(pool->report_arg, line);
}

static void tell_end(struct ipc_pool *pool)
{
    if (pool->untold && pool->report) {
        char line[200];
        snprintf(line, sizeof(line), "pool %s: %u more like these not shown (%llu found since start)", pool->name,
                 pool->untold, (unsigned long long)pool->corrupt);
        pool->report(pool->report_arg, line);
    }
    pool->told = pool->untold = 0;
}

struct mark {
    uint8_t *flags;    /* nbufs marks */
    uint32_t marked;   /* frames marked */
    uint32_t dup;      /* frames reached from a second slot */
    uint32_t bad_link; /* chains cut: out of range, too long, looping, into a third owner */
};

/*
 * Mark the frames of the packets published in @rings (only the rings @only is
 * an end of, unless it is IPC_OWNER_FREE). A slot is followed only if its
 * first frame belongs to one of the ring's two ends, as the supervisor's copy
 * names them: any other handle the consumer refuses without touching it, and
 * the buffer is counted by its own owner word. A chain goes on through frames
 * of the two ends only (the consumer's, then the producer's), at most
 * IPC_CHAIN_MAX of them, and stops at a frame already marked: from another
 * slot (dup) or by its own chain looping back.
 *
 * @tell_to: the pool to tell what is malformed, or NULL (the census only
 * counts). @quiet: nothing runs but the supervisor. Only then is a link into
 * a third owner's frame, or back into its own chain, corruption: while a
 * live consumer takes and frees, a frame read from a slot it has since
 * released may be someone else's by the time its link is read.
 */
static void mark_rings(const struct ipc_pool *pool, struct ipc_pool *tell_to, bool quiet,
                       const struct ipc_ring_ref *rings, unsigned nrings, uint16_t only, struct mark *mk)
{
    ipc_buf walk[IPC_CHAIN_MAX];
    for (unsigned r = 0; r < nrings; r++) {
        const struct ipc_ring_ref *ref = &rings[r];
        struct ipc_ring_shared *sh = ref->sh;
        if (only != IPC_OWNER_FREE && ref->prod_owner != only && ref->cons_owner != only)
            continue;
        /* cons first, with acquire: a slot consumed before this load was
         * re-owned by the consumer before it released, so reclaim cannot
         * mistake it for the dead producer's. The indices are the ends'
         * to write, so they bound nothing: the private size does. One end
         * is gone or both are, so they can be apart by more than the size
         * only if someone wrote them so. */
        uint32_t cons = ipc_ld_acq(&sh->cons);
        uint32_t prod = ipc_ld_acq(&sh->prod);
        if (prod - cons > ref->size) {
            if (tell_to)
                tell(tell_to, "ring %s: prod %u - cons %u (offsets %#zx, %#zx) exceeds its %u slots; no slot followed",
                     ref->name, prod, cons, offsetof(struct ipc_ring_shared, prod),
                     offsetof(struct ipc_ring_shared, cons), ref->size);
            continue;
        }
        for (uint32_t i = cons; i != prod; i++) {
            ipc_buf b = sh->slots[i & (ref->size - 1)];
            if (b >= pool->nbufs)
                continue;
            uint16_t o = ipc_pool_owner(pool, b);
            if (o != ref->prod_owner && o != ref->cons_owner)
                continue;
            /* A packet's frames are the consumer's up to where its take
             * got, then the producer's (ipc_pool_take re-owns them in
             * order): after a frame of the producer, one of the consumer
             * is not part of it. */
            bool of_prod = o == ref->prod_owner && o != ref->cons_owner;
            uint32_t n = 0;
            for (;;) {
                if (mk->flags[b] & MARK_RING) {
                    if (!(mk->flags[b] & MARK_WALK)) {
                        mk->dup++;
                    } else if (quiet) {
                        mk->bad_link++;
                        if (tell_to)
                            tell(tell_to, "pool %s: buffer %u meta at offset %#zx: its packet in ring %s loops back to it; "
                                 "not followed", tell_to->name, b, meta_at(pool, b), ref->name);
                    }
                    break;
                }
                mk->flags[b] |= MARK_RING | MARK_WALK;
                walk[n++] = b;
                mk->marked++;
                ipc_buf nx = pool->meta[b].next;
                if (nx == IPC_BUF_NONE)
                    break;
                if (nx >= pool->nbufs || n >= IPC_CHAIN_MAX) {
                    mk->bad_link++;
                    if (tell_to)
                        tell(tell_to, "pool %s: buffer %u meta at offset %#zx: next %u (a packet in ring %s) is %s; "
                             "not followed", tell_to->name, b, meta_at(pool, b), nx, ref->name,
                             nx >= pool->nbufs ? "out of range" : "past IPC_CHAIN_MAX frames");
                    break;
                }
                o = ipc_pool_owner(pool, nx);
                if (o == ref->prod_owner)
                    of_prod = true;
                else if (o != ref->cons_owner || of_prod) {
                    if (quiet) {
                        mk->bad_link++;
                        if (tell_to)
                            tell(tell_to, "pool %s: buffer %u meta at offset %#zx: next %u (a packet in ring %s) is "
                                 "owner %u's, not the packet's; not followed", tell_to->name, b, meta_at(pool, b), nx,
                                 ref->name, o);
                    }
                    break;
                }
                b = nx;
            }
            for (uint32_t k = 0; k < n; k++)
                mk->flags[walk[k]] &= (uint8_t)~MARK_WALK;
        }
    }
}

/*
 * A dead consumer's input ring: packets in the published range that it had
 * re-owned before dying return to the producer's id. The producer is alive
 * but never touches published slots, and the consumer is dead, so nothing
 * else writes these frames. A packet the consumer had (partly) taken is
 * checked as its successor's take would check it, with frames of either
 * id: a chain that does not hold (out of range, too long, looping, through
 * someone else's frame, lengths that do not add up) gives back its first
 * frame alone, cut from the rest, which keeps the dead id and is freed with
 * what it held. Handing the chain on whole would give the producer frames
 * it never had, for good.
 */
static void give_back_unreleased(struct ipc_pool *pool, const struct ipc_ring_ref *ref, uint16_t dead)
{
    struct ipc_ring_shared *sh = ref->sh;
    uint32_t cons = ipc_ld_acq(&sh->cons);
    uint32_t prod = ipc_ld_acq(&sh->prod);
    if (prod - cons > ref->size)
        return; /* told by mark_rings */
    for (uint32_t i = cons; i != prod; i++) {
        ipc_buf b = sh->slots[i & (ref->size - 1)];
        if (b >= pool->nbufs || ipc_pool_owner(pool, b) != dead)
            continue; /* not taken (the successor's take judges it), or not this ring's */
        struct ipc_meta *m = &pool->meta[b];
        if (chain_check(pool, b, dead, ref->prod_owner) != TAKE_OK && m->next != IPC_BUF_NONE) {
            tell(pool, "pool %s: buffer %u meta at offset %#zx: a packet taken from ring %s and not released has a "
                 "malformed chain (next %u, pkt_len %u); its first frame goes back alone, the rest is freed",
                 pool->name, b, meta_at(pool, b), ref->name, m->next, m->pkt_len);
            m->next = IPC_BUF_NONE;
        }
        ipc_buf f = b;
        for (uint32_t k = 0; f < pool->nbufs && k < IPC_CHAIN_MAX; k++, f = pool->meta[f].next)
            ipc_st_rlx(&pool->meta[f].owner, ref->prod_owner);
    }
}

/*
 * Depot word @s, read as @w, whose owner @wo is gone: back to the depot as
 * FREE, with as much of its chain as is sound. Each
 * buffer on it must be in range, not met before on a magazine, and free or
 * @wo's (killed between the two stores of R2); the chain is cut before the
 * first that is not, and at IPC_MAG. Returns how many still carried @wo.
 */
static int mag_take_back(struct ipc_pool *pool, uint32_t s, uint64_t w, uint16_t wo, uint8_t *flags)
{
    uint32_t cnt = WORD_CNT(w), k = 0;
    ipc_buf head = WORD_HEAD(w), b = head;
    int had = 0;
    if (cnt > IPC_MAG)
        tell(pool, "pool %s: depot word %u at offset %#zx: count %u exceeds the %u of a magazine", pool->name, s,
             depot_at(pool, s), cnt, IPC_MAG);
    for (; k < cnt && k < IPC_MAG; k++) {
        uint16_t o = b < pool->nbufs ? ipc_pool_owner(pool, b) : IPC_OWNER_FREE;
        const char *why = b >= pool->nbufs              ? "out of range"
                          : (flags[b] & MARK_MAG)       ? "met a second time (a loop, or another magazine)"
                          : o != IPC_OWNER_FREE && o != wo ? "not free"
                                                           : NULL;
        if (why) {
            tell(pool, "pool %s: depot word %u at offset %#zx: buffer %u, link %u of its chain, is %s; cut there",
                 pool->name, s, depot_at(pool, s), b, k, why);
            break;
        }
        flags[b] |= MARK_MAG;
        if (o == wo)
            had++;
        ipc_st_rlx(&pool->meta[b].owner, IPC_OWNER_FREE);
        b = pool->meta[b].link;
    }
    ipc_st_rel(&pool->depot[s].word, word_make(IPC_OWNER_FREE, k, k ? head : IPC_BUF_NONE));
    return had;
}

int ipc_pool_reclaim(struct ipc_pool *pool, uint16_t dead, const struct ipc_ring_ref *rings, unsigned nrings)
{
    if (dead == IPC_OWNER_FREE || dead == pool->self || dead > IPC_OWNER_SERVICE_MAX)
        return -EINVAL;
    uint8_t *flags = calloc(pool->nbufs, 1);
    if (!flags)
        return -ENOMEM;
    tell_begin(pool);
    int reclaimed = 0;

    /* 1. The dead owner's magazines: everything on them is free. A buffer at
     * the head may still carry the dead id (killed between the two stores of
     * an allocation or a free, R2): clear it, then return the word. Only
     * the dead owner's: a word or an owner word that names no one may still
     * be a live process's in its private copy, so it waits for
     * ipc_pool_repair in a quiet graph. */
    for (uint32_t s = 0; s < pool->ndepot; s++) {
        uint64_t w = ipc_ld_acq(&pool->depot[s].word);
        if (WORD_OWNER(w) == dead)
            reclaimed += mag_take_back(pool, s, w, dead, flags);
    }

    /* 2. What the dead owner published or had not yet released stays in
     * its rings for its peers or its successor. Packets it had taken from an
     * input ring but not released go back to the ring's producer's name, so
     * that its successor takes them again like any other. */
    for (unsigned r = 0; r < nrings; r++)
        if (rings[r].cons_owner == dead && rings[r].prod_owner != dead)
            give_back_unreleased(pool, &rings[r], dead);
    struct mark mk = {.flags = flags};
    mark_rings(pool, pool, false, rings, nrings, dead, &mk);

    /* 3. Everything else with the dead id was held privately: free it. */
    for (ipc_buf b = 0; b < pool->nbufs; b++) {
        if ((flags[b] & MARK_RING) || ipc_pool_owner(pool, b) != dead)
            continue;
        ipc_st_rlx(&pool->meta[b].owner, pool->self);
        pool->meta[b].next = IPC_BUF_NONE;
        if (pool_free_frame(pool, b))
            reclaimed++;
    }
    free(flags);
    ipc_pool_flush(pool);
    tell_end(pool);
    return reclaimed;
}

int ipc_pool_held(struct ipc_pool *pool, uint16_t who, const struct ipc_ring_ref *rings, unsigned nrings)
{
    uint8_t *flags = calloc(pool->nbufs, 1);
    if (!flags)
        return -ENOMEM;
    tell_begin(pool);
    /* The rings first, as reclaim does: a packet a live peer takes meanwhile
     * has been re-owned before its slot was released, so it is not counted. */
    struct mark mk = {.flags = flags};
    mark_rings(pool, pool, false, rings, nrings, who, &mk);
    int held = 0;
    for (ipc_buf b = 0; b < pool->nbufs; b++)
        if (!(flags[b] & MARK_RING) && ipc_pool_owner(pool, b) == who)
            held++;
    free(flags);
    tell_end(pool);
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

    struct mark mk = {.flags = seen};
    mark_rings(pool, NULL, true, rings, nrings, IPC_OWNER_FREE, &mk);
    c->in_rings = mk.marked;
    c->dup = mk.dup;
    c->bad_link = mk.bad_link;

    /* Each magazine as far as it is sound (what ipc_pool_repair keeps);
     * what lies past a bad link is counted by its owner word below. */
    for (uint32_t s = 0; s < pool->ndepot; s++) {
        uint64_t w = ipc_ld_acq(&pool->depot[s].word);
        uint32_t cnt = WORD_CNT(w);
        bool bad = WORD_OWNER(w) > IPC_OWNER_SERVICE_MAX || cnt > IPC_MAG;
        ipc_buf b = WORD_HEAD(w);
        for (uint32_t k = 0; k < cnt && k < IPC_MAG; k++) {
            /* A frame marked in a ring is a ring end's, so not free: the
             * owner test stops there too. */
            if (b >= pool->nbufs || ipc_pool_owner(pool, b) != IPC_OWNER_FREE || seen[b]) {
                if (b < pool->nbufs && seen[b])
                    c->dup++;
                bad = true;
                break;
            }
            c->free++;
            seen[b] |= MARK_MAG;
            b = pool->meta[b].link;
        }
        if (bad)
            c->bad_depot++;
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
    bool ok = c->lost == 0 && c->dup == 0 && c->bad_owner == 0 && c->bad_depot == 0 &&
              c->free + c->in_rings + c->held + c->kernel == c->total;
    return ok ? 0 : -EUCLEAN;
}

void ipc_pool_owners(const struct ipc_pool *pool, struct ipc_owners *o)
{
    memset(o, 0, sizeof(*o));
    for (ipc_buf b = 0; b < pool->nbufs; b++) {
        uint16_t w = ipc_pool_owner(pool, b);
        if (w == IPC_OWNER_FREE)
            o->free++;
        else if (w <= IPC_OWNER_SERVICE_MAX)
            o->held[w]++;
        else if (w >= IPC_OWNER_KERNEL && w <= IPC_OWNER_KERNEL_MAX)
            o->kernel++;
        else
            o->other++;
    }
}

int ipc_pool_repair(struct ipc_pool *pool, const struct ipc_ring_ref *rings, unsigned nrings)
{
    ipc_pool_flush(pool); /* from here on the supervisor owns no depot word */
    uint8_t *flags = calloc(pool->nbufs, 1);
    if (!flags)
        return -ENOMEM;
    tell_begin(pool);
    int fixed = 0;
    struct mark mk = {.flags = flags};
    mark_rings(pool, pool, true, rings, nrings, IPC_OWNER_FREE, &mk);

    /* Every magazine to its longest sound chain. */
    for (uint32_t s = 0; s < pool->ndepot; s++) {
        uint64_t w = ipc_ld_acq(&pool->depot[s].word);
        uint16_t o = WORD_OWNER(w), no = o;
        if (o > IPC_OWNER_SERVICE_MAX || o == pool->self) {
            tell(pool, "pool %s: depot word %u at offset %#zx: owner %u %s; made FREE", pool->name, s,
                 depot_at(pool, s), o, o == pool->self ? "is the supervisor, which holds none now" : "names no process");
            no = IPC_OWNER_FREE;
        }
        uint32_t cnt = WORD_CNT(w), k = 0;
        ipc_buf head = WORD_HEAD(w), b = head;
        if (cnt > IPC_MAG)
            tell(pool, "pool %s: depot word %u at offset %#zx: count %u exceeds the %u of a magazine", pool->name, s,
                 depot_at(pool, s), cnt, IPC_MAG);
        for (; k < cnt && k < IPC_MAG; k++) {
            const char *why = b >= pool->nbufs                             ? "out of range"
                              : (flags[b] & MARK_MAG)                      ? "met a second time (a loop, or another magazine)"
                              : ipc_pool_owner(pool, b) != IPC_OWNER_FREE ? "not free"
                                                                           : NULL;
            if (why) {
                tell(pool, "pool %s: depot word %u at offset %#zx: buffer %u, link %u of its chain, is %s; cut there",
                     pool->name, s, depot_at(pool, s), b, k, why);
                break;
            }
            flags[b] |= MARK_MAG;
            b = pool->meta[b].link;
        }
        if (no != o || k != cnt) {
            ipc_st_rel(&pool->depot[s].word, word_make(no, k, k ? head : IPC_BUF_NONE));
            fixed++;
        }
    }

    /* What is on no magazine and in no ring, and is no one's, goes back:
     * owner words that name no one first, so that they are among the lines
     * told even when a cut magazine left many free buffers behind. */
    for (int pass = 0; pass < 2; pass++) {
        for (ipc_buf b = 0; b < pool->nbufs; b++) {
            if (flags[b])
                continue;
            uint16_t o = ipc_pool_owner(pool, b);
            if (pass == 0 && owner_nobody(o))
                tell(pool, "pool %s: buffer %u meta at offset %#zx: owner %u names no one; freed", pool->name, b,
                     meta_at(pool, b), o);
            else if (pass == 1 && o == IPC_OWNER_FREE)
                tell(pool, "pool %s: buffer %u meta at offset %#zx: free, but on no magazine; put back", pool->name,
                     b, meta_at(pool, b));
            else
                continue;
            ipc_st_rlx(&pool->meta[b].owner, pool->self);
            pool->meta[b].next = IPC_BUF_NONE;
            flags[b] = MARK_MAG;
            if (pool_free_frame(pool, b))
                fixed++;
        }
    }
    free(flags);
    ipc_pool_flush(pool);
    tell_end(pool);
    return fixed;
}

int ipc_pool_drain(struct ipc_pool *pool, const struct ipc_ring_ref *ref)
{
    struct ipc_ring_shared *sh = ref->sh;
    tell_begin(pool);
    uint32_t cons = ipc_ld_acq(&sh->cons);
    uint32_t prod = ipc_ld_acq(&sh->prod);
    int freed = 0;
    if (prod - cons > ref->size) {
        tell(pool, "ring %s: prod %u - cons %u (offsets %#zx, %#zx) exceeds its %u slots; emptied, no slot followed",
             ref->name, prod, cons, offsetof(struct ipc_ring_shared, prod), offsetof(struct ipc_ring_shared, cons),
             ref->size);
        ipc_st_rel(&sh->cons, prod);
    } else {
        while (cons != prod) {
            ipc_buf b[64];
            uint32_t n = prod - cons < 64 ? prod - cons : 64;
            for (uint32_t i = 0; i < n; i++)
                b[i] = sh->slots[(cons + i) & (ref->size - 1)];
            /* As the consumer would: each handle checked and re-owned (the
             * producer by the supervisor's copy), a bad one counted in the
             * ring's drop counters. */
            uint32_t good = ipc_pool_take(pool, ref->prod_owner, b, n, sh);
            freed += (int)ipc_pool_free(pool, b, good);
            cons += n;
            ipc_st_rel(&sh->cons, cons);
        }
    }
    tell_end(pool);
    return freed;
}
