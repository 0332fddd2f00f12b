/* SPDX-License-Identifier: MIT */
/*
 * ipc/pool.h: the packet buffer pool. One memfd per trust zone holds a
 * header, a depot of magazines, one cache line of metadata per buffer and the
 * frame area (page-aligned, so that the same memfd is registered as an
 * AF_XDP UMEM as is). A buffer is named by a 32-bit handle: its index.
 *
 * Ownership. Every buffer's metadata carries an owner word: IPC_OWNER_FREE
 * while it is on a magazine, the owner id of the service that holds it, or
 * IPC_OWNER_KERNEL | n while a driver has lent it to the kernel (n: its socket). A buffer
 * in a ring keeps its producer's id until the consumer takes it
 * (ipc_pool_take), which checks that id and rewrites it. So every buffer is
 * at every moment in exactly one place: on a magazine (free), in a ring,
 * held by a service, or lent to the kernel; ipc_pool_census() counts them.
 *
 * Free buffers. Free buffers live on magazines: chains of up to IPC_MAG
 * handles linked through the metadata, each named by one 64-bit depot word
 * (owner, count, first handle). A process allocates from and frees into two
 * magazines it owns (its cache), touching nothing shared but its own depot
 * words and the owner words of the buffers it moves; it exchanges a whole
 * magazine with the depot by one compare-and-swap of a depot word.
 *
 * Why a kill at any instruction loses nothing: see docs/ipc.md ("Crash
 * safety"). In short, every shared step is a single atomic store or CAS, a
 * depot word names its owner, and each step is ordered so that a buffer is
 * always reachable from its owner's depot words or its owner word:
 *   alloc: owner[b] = self, then depot word := chain without b;
 *   free:  link b, depot word := chain with b, then owner[b] = FREE.
 * After a death, ipc_pool_reclaim() frees the dead owner's magazines, then
 * every buffer whose owner word names it and that is not in one of its rings.
 */
#ifndef IPC_POOL_H
#define IPC_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic.h"
#include "ring.h"
#include "shm.h"

#define IPC_POOL_VERSION 1
#define IPC_FRAME_DEFAULT 2048u
#define IPC_FRAME_LARGE 4096u
#define IPC_HEADROOM 256u          /* = XDP_PACKET_HEADROOM: AF_XDP receives at this offset */
#define IPC_MAG 64u                /* buffers per magazine */
#define IPC_POOL_CLAIM_SKIP 16u    /* claims that look at one word after a failed scan (pool.c) */
#define IPC_CHAIN_MAX 64u          /* frames in one packet, at most (64 KB + headers in 2 KB frames) */
#define IPC_POOL_MAX_CACHES 64u    /* processes attached at once; sizes the depot */
#define IPC_POOL_MAX_BUFS (1u << 24)
/* The largest frame: a frame's off and len are 16-bit, and 32 KB frames
 * carry a 64 KB GSO packet as 3 frames instead of 33 (TAP-only routers;
 * AF_XDP takes 2048 or 4096). */
#define IPC_FRAME_MAX 32768u

/* Owner ids (16 bits in the metadata and in depot words). */
#define IPC_OWNER_FREE 0u
#define IPC_OWNER_SUPERVISOR 1u
#define IPC_OWNER_SERVICE_MIN 2u
#define IPC_OWNER_SERVICE_MAX 255u
#define IPC_OWNER_KERNEL 0x100u /* | n: lent to the kernel through AF_XDP socket n (supervisor/xsk.c) */
#define IPC_OWNER_KERNEL_MAX 0x1ffu

/* virtio-net header fields (struct virtio_net_hdr) carried through the graph. */
struct ipc_vnet {
    uint8_t flags;
    uint8_t gso_type;
    uint16_t hdr_len;
    uint16_t gso_size;
    uint16_t csum_start;
    uint16_t csum_offset;
};

/* Per-buffer metadata: one cache line, indexed by handle. */
struct ipc_meta {
    uint32_t next;    /* next frame of this packet; IPC_BUF_NONE on the last */
    uint32_t pkt_len; /* bytes of the whole packet (first frame only) */
    uint16_t off;     /* data offset in this frame */
    uint16_t len;     /* data bytes in this frame */
    uint16_t in_port;
    uint16_t out_port;
    _Atomic uint16_t owner;
    uint16_t flags;
    uint32_t link; /* magazine link while free; meaningless otherwise */
    struct ipc_vnet vnet;
    uint16_t pad;
    uint32_t mark;    /* service scratch: classification, flow hash */
    uint64_t user[3]; /* service scratch: timestamps, cached next hop */
};
_Static_assert(sizeof(struct ipc_meta) == 64, "metadata is one cache line");

#define IPC_PORT_NONE 0xffffu

/* The shared header of a pool region. */
struct ipc_pool_hdr {
    struct ipc_shm_hdr shm;
    _Alignas(IPC_CACHELINE) uint32_t nbufs;
    uint32_t frame_size;
    uint32_t headroom;
    uint32_t mag_size;
    uint32_t ndepot;
    uint32_t pad;
    uint64_t depot_off;  /* ndepot words, one cache line each */
    uint64_t meta_off;   /* nbufs * struct ipc_meta */
    uint64_t frames_off; /* nbufs * frame_size, page-aligned: the UMEM */
    /* Where the last full / roomy magazine was seen: scan hints, racy by design. */
    _Alignas(IPC_CACHELINE) _Atomic uint32_t hint_full;
    _Atomic uint32_t hint_room;
    _Atomic uint64_t alloc_fail; /* allocations that found the pool empty */
    _Atomic uint64_t free_bad;   /* frees of a buffer the caller did not own (double free) */
    _Atomic uint64_t mag_bad;    /* magazines dropped at a link out of range or a buffer not free */
};

/* One depot word per cache line, so claiming one never disturbs a neighbour's cache. */
struct ipc_depot_slot {
    _Alignas(IPC_CACHELINE) _Atomic uint64_t word;
};

/* A magazine the process owns: its depot slot and a private copy of the word. */
struct ipc_mag {
    uint32_t slot; /* IPC_BUF_NONE: none */
    uint32_t head;
    uint32_t cnt;
};

/*
 * Where the supervisor's side of the pool (reclaim, held, drain, repair) tells
 * of corruption it found in the shared metadata: one line, e.g. "pool
 * pool-r: buffer 123 meta at offset 0x6180: owner 777 names no one; freed".
 * At most IPC_POOL_TELL_MAX lines per call, then one line with how many more.
 */
typedef void ipc_pool_report_fn(void *arg, const char *line);
#define IPC_POOL_TELL_MAX 16u

/* Process-local view of the pool. */
struct ipc_pool {
    struct ipc_pool_hdr *hdr;
    struct ipc_depot_slot *depot;
    struct ipc_meta *meta;
    uint8_t *frames;
    size_t map_size;
    uint32_t nbufs;
    uint32_t frame_size;
    uint32_t headroom;
    uint32_t ndepot;
    uint16_t self;
    struct ipc_mag mag[2]; /* [0] allocate from, [1] free into */
    uint32_t claim_skip;   /* failed scans for a full magazine to skip (mag_claim) */
    /* The supervisor's: corruption found and repaired, and where it is told
     * (ipc_pool_set_report). Process-local, so no service can reset it. */
    char name[40];
    uint64_t corrupt;
    ipc_pool_report_fn *report;
    void *report_arg;
    uint32_t told, untold; /* lines told and held back in the current call */
};

/* What ipc_pool_census() found. */
struct ipc_census {
    uint32_t total;
    uint32_t free;      /* on magazines, in the depot or a process's cache */
    uint32_t in_rings;  /* frames of packets published in rings */
    uint32_t held;      /* by services (sum of held_by) */
    uint32_t kernel;    /* lent to the kernel */
    uint32_t lost;      /* owner word says free, but on no magazine */
    uint32_t dup;       /* reached twice (two magazines, two ring slots, ...) */
    uint32_t bad_owner; /* owner word that names nobody */
    uint32_t bad_depot; /* depot words with an owner, count, head or chain that cannot be */
    uint32_t bad_link;  /* links of packets in rings that leave the pool, the ring's two ends, or IPC_CHAIN_MAX */
    uint32_t held_by[IPC_OWNER_SERVICE_MAX + 1];
};

/* What ipc_pool_owners() found. */
struct ipc_owners {
    uint32_t free;   /* owner word free: on a magazine */
    uint32_t kernel; /* lent to the kernel through an AF_XDP socket */
    uint32_t other;  /* an owner word that names nobody */
    uint32_t held[IPC_OWNER_SERVICE_MAX + 1]; /* by owner id: held, or in a ring it produced into */
};

/* A frame size a pool can have: a power of two from 2048 to IPC_FRAME_MAX. */
static inline bool ipc_pool_frame_ok(uint32_t frame_size)
{
    return frame_size >= IPC_FRAME_DEFAULT && frame_size <= IPC_FRAME_MAX && (frame_size & (frame_size - 1)) == 0;
}

/**
 * Create a pool of @nbufs frames of @frame_size bytes (ipc_pool_frame_ok) in a
 * new memfd; every buffer starts free. Returns 0 with *fd set, or -errno with @err.
 */
int ipc_pool_create(const char *name, uint32_t nbufs, uint32_t frame_size, int *fd, struct ipc_err *err);

/**
 * Map the pool behind @fd as owner @self (IPC_OWNER_SUPERVISOR or a service
 * id) and check its header and layout. Returns 0 or -errno with @err.
 */
int ipc_pool_attach(struct ipc_pool *pool, int fd, uint16_t self, struct ipc_err *err);

/** Hand this process's magazines back to the depot and unmap. */
void ipc_pool_detach(struct ipc_pool *pool);

/** Hand this process's magazines back to the depot (they stay usable). */
void ipc_pool_flush(struct ipc_pool *pool);

/**
 * Allocate up to @n single-frame buffers into @bufs, owned by the caller,
 * with off = headroom, len = 0, no next frame. Returns how many; fewer than
 * @n only when the pool is empty (counted in alloc_fail).
 */
uint32_t ipc_pool_alloc(struct ipc_pool *pool, ipc_buf *bufs, uint32_t n);

/**
 * Frames a packet of @bytes needs as a chain: the first frame holds
 * frame_size - headroom bytes, each further one a whole frame_size.
 */
static inline uint32_t ipc_pool_chain_frames(const struct ipc_pool *pool, uint32_t bytes)
{
    uint32_t first = pool->frame_size - pool->headroom;
    return bytes > first ? 1 + (bytes - first + pool->frame_size - 1) / pool->frame_size : 1;
}

/**
 * Lay a packet of @bytes over the frames @bufs[0..n) the caller owns, n =
 * ipc_pool_chain_frames(bytes): the first frame from the headroom, the others
 * from offset 0, each frame's len, the next links and the first frame's
 * pkt_len. The one place a chain's layout is written, whether the bytes are
 * still to come (ipc_pool_alloc_chain) or already there (a driver's read).
 */
static inline void ipc_pool_chain_link(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n, uint32_t bytes)
{
    uint32_t left = bytes;
    for (uint32_t i = 0; i < n; i++) {
        struct ipc_meta *m = &pool->meta[bufs[i]];
        uint32_t room = i == 0 ? pool->frame_size - pool->headroom : pool->frame_size;
        m->off = (uint16_t)(i == 0 ? pool->headroom : 0);
        m->len = (uint16_t)(left < room ? left : room);
        left -= m->len;
        m->next = i + 1 < n ? bufs[i + 1] : IPC_BUF_NONE;
    }
    pool->meta[bufs[0]].pkt_len = bytes;
}

/**
 * Allocate a chain of frames able to hold @bytes (the first frame keeps the
 * headroom, the others start at offset 0), with len and pkt_len set to fill
 * @bytes. Returns 0 and *head, -EMSGSIZE when @bytes needs more than
 * IPC_CHAIN_MAX frames, or -ENOBUFS (nothing is left allocated).
 */
int ipc_pool_alloc_chain(struct ipc_pool *pool, uint32_t bytes, ipc_buf *head);

/**
 * Free the packets @bufs[0..n), every frame of each chain. A frame the caller
 * does not own (a double free) is counted in free_bad and not followed.
 * Returns the number of frames freed.
 */
uint32_t ipc_pool_free(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n);

/**
 * Take ownership of packets handed over by @from (a ring's producer): each
 * handle is checked (index in range, owned by @from, offset and length inside
 * the frame, a chain of at most IPC_CHAIN_MAX frames with consistent lengths)
 * before any frame is rewritten. Good packets become the caller's and are
 * compacted to the front of @bufs; bad ones are counted in @ctr's drop
 * counters and dropped: a handle out of range or owned by someone else is
 * left alone, a bad packet's first frame is freed and its chain not followed.
 * Returns the number of good packets.
 */
uint32_t ipc_pool_take(struct ipc_pool *pool, uint16_t from, ipc_buf *bufs, uint32_t n, struct ipc_ring_shared *ctr);

/**
 * Copy the caller's packet @b of pool @src into a new packet of pool @dst
 * (another trust zone's: docs/security.md), with its metadata (ports,
 * flags, virtio-net header, scratch); @b stays the caller's. The copy
 * starts at @dst's headroom. Returns 0 and *out, or -ENOBUFS, -EMSGSIZE
 * (nothing is left allocated in @dst).
 */
int ipc_pool_copy_pkt(struct ipc_pool *dst, const struct ipc_pool *src, ipc_buf b, ipc_buf *out);

/**
 * Give the caller's packets @bufs[0..n) (every frame) to @to: the kernel
 * (IPC_OWNER_KERNEL | n) or another service. Returns the number given.
 */
uint32_t ipc_pool_give(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n, uint16_t to);

/*
 * The supervisor's side (ipc/pool_audit.c). Every service maps the
 * metadata and the depot read-write, so everything below treats each word
 * it reads there as input:
 * an index is checked against the pool's size before it is used, a chain is
 * followed at most IPC_MAG (magazines) or IPC_CHAIN_MAX (packets) steps and
 * never twice through one buffer, a count is capped, and a ring is read
 * through the supervisor's own copy of its geometry and owners (struct
 * ipc_ring_ref). What does not hold is counted in pool->corrupt, told
 * (ipc_pool_set_report) and repaired from what the supervisor knows, never
 * followed. docs/ipc.md, "What the supervisor checks", has the list.
 */

/** Supervisor: tell corruption found in the pool to @fn (NULL: count it only). */
void ipc_pool_set_report(struct ipc_pool *pool, ipc_pool_report_fn *fn, void *arg);

/**
 * Supervisor, after owner @dead has exited and before its successor starts:
 * return to the pool every buffer @dead held that is not in one of @rings
 * (the rings it produced or consumed). Safe while the other processes run.
 * On the way it repairs what it can repair while they run: @dead's depot
 * words (a count past IPC_MAG, a chain out of range, looping, or through a
 * buffer that is not free is cut where it goes wrong), depot words that name
 * no process, owner words that name no one (those buffers are freed), and
 * packets @dead took from an input ring whose chain is malformed (the first
 * frame goes back alone, the rest is freed). Free buffers cut off a magazine
 * are found by ipc_pool_repair() in a quiet graph.
 * Returns the number of frames reclaimed, or -EINVAL, -ENOMEM.
 */
int ipc_pool_reclaim(struct ipc_pool *pool, uint16_t dead, const struct ipc_ring_ref *rings, unsigned nrings);

/**
 * Supervisor, after owner @who has exited and before ipc_pool_reclaim(): the
 * frames @who holds privately, i.e. what step 3 of reclaim would free (owner
 * word @who, not in one of @rings). Changes nothing in the pool. The
 * shutdown census calls it for a service that stopped cleanly, which must
 * hold none. Returns the count, or -ENOMEM.
 */
int ipc_pool_held(struct ipc_pool *pool, uint16_t who, const struct ipc_ring_ref *rings, unsigned nrings);

/**
 * Supervisor, after @who stopped and before its reclaim: of the frames
 * ipc_pool_held() counts, those of packets whose first frame's handle sits
 * in the released part of a ring @who produced into (among @rings, the last
 * size slots it wrote, before cons; every one of them if the indices are
 * more than the size apart). A consumer's take re-owns a packet before it
 * releases the slot, so these were released without being taken: by a
 * consumer that moved its index past them. Counted per ring in
 * @per_ring[0..nrings). Changes nothing. Returns the total, or -ENOMEM.
 */
int ipc_pool_stranded(struct ipc_pool *pool, uint16_t who, const struct ipc_ring_ref *rings, unsigned nrings,
                      uint32_t *per_ring);

/**
 * Count where every buffer is, with @rings the rings of the graph. Meant for
 * a quiet graph (no process mid-operation). Reads only, and tells nothing:
 * what it finds malformed is in out->bad_depot and out->bad_link. Every
 * buffer is counted once in free, in_rings, held, kernel, lost or bad_owner.
 * Returns 0 when each buffer is in exactly one place and the depot is sound,
 * -EUCLEAN otherwise (lost, duplicated, bad owner, bad depot word).
 */
int ipc_pool_census(const struct ipc_pool *pool, const struct ipc_ring_ref *rings, unsigned nrings,
                    struct ipc_census *out);

/*
 * Where the buffers are, by their owner words alone, read while the
 * services run: a buffer a service takes or frees meanwhile is counted
 * where it was or where it went, so the figures are a snapshot for
 * operators (stats: who holds the pool), not a check; the census is that.
 * A packet in a ring counts for its producer until its consumer takes it.
 * Reads one cache line per buffer.
 */
void ipc_pool_owners(const struct ipc_pool *pool, struct ipc_owners *out);

/** The same for buffers @first..@first+@n only, added to @out: a scan in
 * slices (the supervisor's hoarding check). Returns where it stopped. */
uint32_t ipc_pool_owners_add(const struct ipc_pool *pool, uint32_t first, uint32_t n, struct ipc_owners *out);

/**
 * Supervisor, quiet graph only (every service gone, the rings drained or
 * about to be counted): make the census balance again from what can be
 * known. Each depot word is cut to its longest sound chain of free buffers
 * (and made FREE if it names no process, or the supervisor, which holds
 * none here); then every buffer that is on no magazine and in no ring, and
 * whose owner word says free or names no one, is freed. Buffers a service
 * id still holds are left to the census to report. Returns the number of
 * repairs (each told), or -ENOMEM.
 */
int ipc_pool_repair(struct ipc_pool *pool, const struct ipc_ring_ref *rings, unsigned nrings);

/**
 * Supervisor, quiet graph (both ends of @ref's ring gone): take every packet
 * still published in the ring, as its consumer would (ipc_pool_take: checked,
 * counted in the ring's drop counters when bad), and free it. The ring is
 * read through @ref's size and producer, never its header's; indices more
 * than the size apart are told and the ring is emptied without following a
 * slot. Returns the number of frames freed.
 */
int ipc_pool_drain(struct ipc_pool *pool, const struct ipc_ring_ref *ref);

static inline struct ipc_meta *ipc_pool_meta(const struct ipc_pool *pool, ipc_buf b)
{
    return &pool->meta[b];
}

static inline uint8_t *ipc_pool_frame(const struct ipc_pool *pool, ipc_buf b)
{
    return pool->frames + (size_t)b * pool->frame_size;
}

static inline uint8_t *ipc_pool_data(const struct ipc_pool *pool, ipc_buf b)
{
    return ipc_pool_frame(pool, b) + pool->meta[b].off;
}

static inline uint16_t ipc_pool_owner(const struct ipc_pool *pool, ipc_buf b)
{
    return ipc_ld_rlx(&pool->meta[b].owner);
}

/**
 * Dequeue up to @n packets from @c and take them (ipc_pool_take) from the
 * ring's producer: handles are validated and re-owned before the slots are
 * released, so a crash in between leaves them in the ring, not lost. Returns
 * the number of good packets in @bufs.
 */
static inline uint32_t ipc_ring_recv(struct ipc_ring_cons *c, struct ipc_pool *pool, ipc_buf *bufs, uint32_t n)
{
    uint32_t idx;
    n = ipc_ring_peek(c, n, &idx);
    if (n == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        bufs[i] = ipc_ring_cons_slot(c, idx + i);
    uint32_t good = ipc_pool_take(pool, c->from, bufs, n, c->sh); /* our copy, not the header's */
    ipc_ring_release(c, n);
    return good;
}

#endif
