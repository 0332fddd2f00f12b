/* SPDX-License-Identifier: MIT */
/*
 * ipc/pool_audit.c: the supervisor's half of the packet buffer pool
 * (ipc/pool.h): reclaim after a death, held, census, owners, repair and
 * drain. It reads memory every service can write, under one rule:
 *  S1. No word read from the pool or a ring is used before it is checked:
 *      an index against the pool's size, a count against IPC_MAG, a chain
 *      against IPC_MAG or IPC_CHAIN_MAX steps and against passing one buffer
 *      twice, an owner against who can own, a ring through the supervisor's
 *      own copy of its geometry. What fails is counted, told and repaired
 *      from what the supervisor knows, never followed.
 */
#include "pool.h"
#include "pool_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * Link @k of depot word @s's chain, buffer @b: sound when it is in range,
 * not met before on a magazine (@flags), and free or @also's. A sound link
 * is marked; the first unsound one is told, and the chain is cut there.
 */
static bool mag_link_ok(struct ipc_pool *pool, uint32_t s, uint32_t k, ipc_buf b, uint16_t also, uint8_t *flags)
{
    uint16_t o = b < pool->nbufs ? ipc_pool_owner(pool, b) : IPC_OWNER_FREE;
    const char *why = b >= pool->nbufs                  ? "out of range"
                      : (flags[b] & MARK_MAG)           ? "met a second time (a loop, or another magazine)"
                      : o != IPC_OWNER_FREE && o != also ? "not free"
                                                         : NULL;
    if (why) {
        tell(pool, "pool %s: depot word %u at offset %#zx: buffer %u, link %u of its chain, is %s; cut there",
             pool->name, s, depot_at(pool, s), b, k, why);
        return false;
    }
    flags[b] |= MARK_MAG;
    return true;
}

/* Depot word @s's count, read as @w, told when it exceeds a magazine's. */
static uint32_t mag_count(struct ipc_pool *pool, uint32_t s, uint64_t w)
{
    uint32_t cnt = WORD_CNT(w);
    if (cnt > IPC_MAG)
        tell(pool, "pool %s: depot word %u at offset %#zx: count %u exceeds the %u of a magazine", pool->name, s,
             depot_at(pool, s), cnt, IPC_MAG);
    return cnt;
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
    uint32_t cnt = mag_count(pool, s, w), k = 0;
    ipc_buf head = WORD_HEAD(w), b = head;
    int had = 0;
    for (; k < cnt && k < IPC_MAG; k++) {
        if (!mag_link_ok(pool, s, k, b, wo, flags))
            break;
        if (ipc_pool_owner(pool, b) == wo)
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
        if (ipc_pool_free_frame(pool, b))
            reclaimed++;
    }
    free(flags);
    ipc_pool_flush(pool);
    tell_end(pool);
    return reclaimed;
}

/* The marks of the packets published in @who's rings, for held and
 * stranded, with the telling begun; NULL when out of memory. The rings
 * first, as reclaim does: a packet a live peer takes meanwhile has been
 * re-owned before its slot was released, so it is not counted. */
static uint8_t *mark_held(struct ipc_pool *pool, uint16_t who, const struct ipc_ring_ref *rings, unsigned nrings)
{
    uint8_t *flags = calloc(pool->nbufs, 1);
    if (!flags)
        return NULL;
    tell_begin(pool);
    struct mark mk = {.flags = flags};
    mark_rings(pool, pool, false, rings, nrings, who, &mk);
    return flags;
}

int ipc_pool_held(struct ipc_pool *pool, uint16_t who, const struct ipc_ring_ref *rings, unsigned nrings)
{
    uint8_t *flags = mark_held(pool, who, rings, nrings);
    if (!flags)
        return -ENOMEM;
    int held = 0;
    for (ipc_buf b = 0; b < pool->nbufs; b++)
        if (!(flags[b] & MARK_RING) && ipc_pool_owner(pool, b) == who)
            held++;
    free(flags);
    tell_end(pool);
    return held;
}

int ipc_pool_stranded(struct ipc_pool *pool, uint16_t who, const struct ipc_ring_ref *rings, unsigned nrings,
                      uint32_t *per_ring)
{
    uint8_t *flags = mark_held(pool, who, rings, nrings);
    if (!flags)
        return -ENOMEM;
    int total = 0;
    for (unsigned r = 0; r < nrings; r++) {
        const struct ipc_ring_ref *ref = &rings[r];
        per_ring[r] = 0;
        if (ref->prod_owner != who)
            continue;
        uint32_t prod = ipc_ld_acq(&ref->sh->prod), cons = ipc_ld_acq(&ref->sh->cons);
        /* The released part of the last size slots written: from prod - size up to cons. */
        uint32_t released = prod - cons <= ref->size ? ref->size - (prod - cons) : ref->size;
        for (uint32_t k = 0; k < released; k++) {
            ipc_buf b = ref->sh->slots[(prod - ref->size + k) & (ref->size - 1)];
            /* The frames of the packet: @who's, in no ring, each counted once. */
            for (uint32_t n = 0; n < IPC_CHAIN_MAX && b < pool->nbufs && !flags[b] &&
                                 ipc_pool_owner(pool, b) == who; n++) {
                flags[b] = MARK_WALK;
                per_ring[r]++;
                total++;
                b = pool->meta[b].next;
            }
        }
    }
    free(flags);
    tell_end(pool);
    return total;
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
    ipc_pool_owners_add(pool, 0, pool->nbufs, o);
}

uint32_t ipc_pool_owners_add(const struct ipc_pool *pool, uint32_t first, uint32_t n, struct ipc_owners *o)
{
    uint32_t end = first < pool->nbufs && n < pool->nbufs - first ? first + n : pool->nbufs;
    for (ipc_buf b = first; b < end; b++) {
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
    return end;
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
        uint32_t cnt = mag_count(pool, s, w), k = 0;
        ipc_buf head = WORD_HEAD(w), b = head;
        for (; k < cnt && k < IPC_MAG; k++) {
            if (!mag_link_ok(pool, s, k, b, IPC_OWNER_FREE, flags))
                break;
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
            if (ipc_pool_free_frame(pool, b))
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
