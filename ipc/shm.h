/* SPDX-License-Identifier: MIT */
/*
 * ipc/shm.h: memfd-backed shared-memory regions. The supervisor creates every
 * region; services attach to the fds they were given. Each region opens with
 * struct ipc_shm_hdr, checked on attach so that a service built against a
 * different layout refuses to run instead of corrupting a live router.
 */
#ifndef IPC_SHM_H
#define IPC_SHM_H

#include <stddef.h>
#include <stdint.h>

#define IPC_SHM_MAGIC 0x3130484d53525252ull /* "RRRSHM01" little-endian */

enum ipc_shm_kind {
    IPC_SHM_POOL = 1,
    IPC_SHM_RING = 2,
    IPC_SHM_STATS = 3,
    IPC_SHM_FIB = 4,
    IPC_SHM_CONFIG = 5,
    IPC_SHM_NEIGH = 6,
    IPC_SHM_MBOX = 7, /* a control mailbox (tables/shaper.h) */
    IPC_SHM_FIB_READERS = 8, /* the FIB's generation and reader slots (tables/fib.h) */
    IPC_SHM_FIB6 = 9,        /* the IPv6 FIB's tables (tables/fib6.h) */
    IPC_SHM_NEIGH6 = 10,     /* the IPv6 neighbour table (tables/neigh6.h) */
    IPC_SHM_RTCHAN = 11,     /* the route channel, rr-routes to the supervisor (tables/rtchan.h) */
};

struct ipc_shm_hdr {
    uint64_t magic;
    uint32_t kind;    /* enum ipc_shm_kind */
    uint32_t version; /* layout version of that kind */
    uint64_t size;    /* bytes of the whole region */
    char name[40];    /* for error messages and /proc/PID/fd */
};
_Static_assert(sizeof(struct ipc_shm_hdr) == 64, "shm header is one cache line");

/* Error text for the caller to print; every attach failure fills one. */
struct ipc_err {
    char msg[256];
};

const char *ipc_shm_kind_name(uint32_t kind);

/**
 * Create a memfd of @size bytes named @name, map it shared and write its
 * header. The rest of the region is zero. Returns 0 and sets *fd and *base,
 * or -errno with @err filled.
 */
int ipc_shm_create(const char *name, uint32_t kind, uint32_t version, size_t size, int *fd, void **base,
                   struct ipc_err *err);

/**
 * Map the region behind @fd and check its header against @kind and @version:
 * magic, kind, version and the recorded size against the memfd's. Returns 0
 * and sets *base and *size, or -errno (-EPROTO for a header mismatch) with
 * @err naming the field that does not match.
 */
int ipc_shm_attach(int fd, uint32_t kind, uint32_t version, void **base, size_t *size, struct ipc_err *err);

/**
 * ipc_shm_attach for a region of one fixed layout (stats, a mailbox): also
 * -EPROTO unless the region is exactly @want bytes. Returns 0 with *base.
 */
int ipc_shm_attach_fixed(int fd, uint32_t kind, uint32_t version, size_t want, void **base, struct ipc_err *err);

/**
 * Seal the region behind @fd against every future write: no one, the owner of
 * a copy of the fd included, can map it writable or write() to it again. The
 * mappings that exist (the creator's) keep writing. Returns 0 or -errno.
 */
int ipc_shm_seal_writes(int fd, const char *name, struct ipc_err *err);

/** The same, mapped read-only (config blobs, and the FIB in the router). */
int ipc_shm_attach_ro(int fd, uint32_t kind, uint32_t version, const void **base, size_t *size, struct ipc_err *err);

void ipc_shm_unmap(void *base, size_t size);

/* Fill @err (printf-style) and return @ret; used by every attach path. */
int ipc_errf(struct ipc_err *err, int ret, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
