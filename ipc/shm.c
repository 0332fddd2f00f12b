/* SPDX-License-Identifier: MIT */
/*
 * ipc/shm.c: create and attach memfd regions (setup path only; nothing here
 * runs per packet).
 */
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int ipc_errf(struct ipc_err *err, int ret, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return ret;
}

const char *ipc_shm_kind_name(uint32_t kind)
{
    switch (kind) {
    case IPC_SHM_POOL:
        return "pool";
    case IPC_SHM_RING:
        return "ring";
    case IPC_SHM_STATS:
        return "stats";
    case IPC_SHM_FIB:
        return "fib";
    case IPC_SHM_CONFIG:
        return "config";
    case IPC_SHM_NEIGH:
        return "neigh";
    case IPC_SHM_MBOX:
        return "mailbox";
    case IPC_SHM_RTCHAN:
        return "route channel";
    case IPC_SHM_FIB_READERS:
        return "fib-readers";
    case IPC_SHM_FIB6:
        return "fib6";
    case IPC_SHM_NEIGH6:
        return "neigh6";
    }
    return "unknown";
}

int ipc_shm_create(const char *name, uint32_t kind, uint32_t version, size_t size, int *fd_out, void **base_out,
                   struct ipc_err *err)
{
    if (size < sizeof(struct ipc_shm_hdr))
        return ipc_errf(err, -EINVAL, "%s region %s: size %zu is smaller than its header", ipc_shm_kind_name(kind),
                        name, size);
    /* No MFD_CLOEXEC: the supervisor decides which fds each child keeps and
     * closes the rest itself, so close-on-exec would only hide mistakes. */
    int fd = memfd_create(name, MFD_ALLOW_SEALING);
    if (fd < 0)
        return ipc_errf(err, -errno, "memfd_create(%s): %s", name, strerror(errno));
    int ret;
    if (ftruncate(fd, (off_t)size) < 0) {
        ret = ipc_errf(err, -errno, "ftruncate(%s, %zu): %s", name, size, strerror(errno));
        goto out_fd;
    }
    /* The size is part of the layout: sealing it means a buggy or hostile
     * service cannot shrink the region under its peers (SIGBUS). */
    /* A config blob and the FIBs are sealed against writes once their
     * creator has them mapped (ipc_shm_seal_writes), so their seals stay
     * open until then. */
    int seals = F_SEAL_SHRINK | F_SEAL_GROW |
                (kind == IPC_SHM_CONFIG || kind == IPC_SHM_FIB || kind == IPC_SHM_FIB6 ? 0 : F_SEAL_SEAL);
    if (fcntl(fd, F_ADD_SEALS, seals) < 0) {
        ret = ipc_errf(err, -errno, "sealing %s: %s", name, strerror(errno));
        goto out_fd;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        ret = ipc_errf(err, -errno, "mmap(%s, %zu): %s", name, size, strerror(errno));
        goto out_fd;
    }
    struct ipc_shm_hdr *h = base;
    h->magic = IPC_SHM_MAGIC;
    h->kind = kind;
    h->version = version;
    h->size = size;
    snprintf(h->name, sizeof(h->name), "%s", name);
    *fd_out = fd;
    *base_out = base;
    return 0;

out_fd:
    close(fd);
    return ret;
}

static int shm_map(int fd, uint32_t kind, uint32_t version, int prot, void **base_out, size_t *size_out,
                   struct ipc_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return ipc_errf(err, -errno, "%s region fd %d: %s", ipc_shm_kind_name(kind), fd, strerror(errno));
    if ((size_t)st.st_size < sizeof(struct ipc_shm_hdr))
        return ipc_errf(err, -EPROTO, "%s region fd %d: %lld bytes, too small for a header", ipc_shm_kind_name(kind),
                        fd, (long long)st.st_size);
    size_t size = (size_t)st.st_size;
    /* The pool and the rings are what a new instance touches from its first
     * packet on: their page tables are built here, while a standby or a
     * restarted service starts in SCHED_IDLE, rather than a fault at a time
     * on the path after its go, where they slowed the first tens of
     * milliseconds of a handover. The other regions are sparse (FIBs, a
     * table's free slots): touched where used, as before. */
    int flags = MAP_SHARED | (kind == IPC_SHM_POOL || kind == IPC_SHM_RING ? MAP_POPULATE : 0);
    void *base = mmap(NULL, size, prot, flags, fd, 0);
    if (base == MAP_FAILED)
        return ipc_errf(err, -errno, "%s region fd %d: mmap: %s", ipc_shm_kind_name(kind), fd, strerror(errno));
    const struct ipc_shm_hdr *h = base;
    int ret;
    if (h->magic != IPC_SHM_MAGIC) {
        ret = ipc_errf(err, -EPROTO, "%s region fd %d: magic %#llx is not ringrouter's %#llx", ipc_shm_kind_name(kind),
                       fd, (unsigned long long)h->magic, IPC_SHM_MAGIC);
        goto out_unmap;
    }
    if (h->kind != kind) {
        ret = ipc_errf(err, -EPROTO, "region %.40s: kind is %s, expected %s", h->name, ipc_shm_kind_name(h->kind),
                       ipc_shm_kind_name(kind));
        goto out_unmap;
    }
    if (h->version != version) {
        ret = ipc_errf(err, -EPROTO, "%s region %.40s: layout version %u, this build reads version %u",
                       ipc_shm_kind_name(kind), h->name, h->version, version);
        goto out_unmap;
    }
    if (h->size != size) {
        ret = ipc_errf(err, -EPROTO, "%s region %.40s: header says %llu bytes, the memfd has %zu",
                       ipc_shm_kind_name(kind), h->name, (unsigned long long)h->size, size);
        goto out_unmap;
    }
    *base_out = base;
    *size_out = size;
    return 0;

out_unmap:
    munmap(base, size);
    return ret;
}

int ipc_shm_attach(int fd, uint32_t kind, uint32_t version, void **base, size_t *size, struct ipc_err *err)
{
    return shm_map(fd, kind, version, PROT_READ | PROT_WRITE, base, size, err);
}

int ipc_shm_attach_fixed(int fd, uint32_t kind, uint32_t version, size_t want, void **base, struct ipc_err *err)
{
    size_t size;
    int ret = ipc_shm_attach(fd, kind, version, base, &size, err);
    if (ret < 0)
        return ret;
    if (size != want) {
        ipc_shm_unmap(*base, size);
        return ipc_errf(err, -EPROTO, "%s region fd %d: %zu bytes, expected %zu", ipc_shm_kind_name(kind), fd, size,
                        want);
    }
    return 0;
}

int ipc_shm_attach_ro(int fd, uint32_t kind, uint32_t version, const void **base, size_t *size, struct ipc_err *err)
{
    return shm_map(fd, kind, version, PROT_READ, (void **)base, size, err);
}

void ipc_shm_unmap(void *base, size_t size)
{
    if (base)
        munmap(base, size);
}

int ipc_shm_seal_writes(int fd, const char *name, struct ipc_err *err)
{
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0)
        return ipc_errf(err, -errno, "sealing %s against writes: %s", name, strerror(errno));
    return 0;
}
