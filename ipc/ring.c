/* SPDX-License-Identifier: MIT */
/*
 * ipc/ring.c: creating, attaching and binding rings (setup path). The data
 * path is all inline in ipc/ring.h.
 */
#include "ring.h"

#include <errno.h>
#include <string.h>

static bool ring_size_ok(uint32_t size)
{
    return size >= IPC_RING_MIN && size <= IPC_RING_MAX && (size & (size - 1)) == 0;
}

int ipc_ring_create(const char *name, uint32_t size, uint32_t id, uint16_t prod_owner, uint16_t cons_owner,
                    uint32_t start, int *fd, struct ipc_ring_shared **sh_out, struct ipc_err *err)
{
    if (!ring_size_ok(size))
        return ipc_errf(err, -EINVAL, "ring %s: size %u is not a power of two in %u..%u", name, size, IPC_RING_MIN,
                        IPC_RING_MAX);
    void *base;
    int ret = ipc_shm_create(name, IPC_SHM_RING, IPC_RING_VERSION, ipc_ring_region_size(size), fd, &base, err);
    if (ret < 0)
        return ret;
    struct ipc_ring_shared *sh = base;
    sh->size = size;
    sh->mask = size - 1;
    sh->id = id;
    sh->prod_owner = prod_owner;
    sh->cons_owner = cons_owner;
    ipc_st_rlx(&sh->prod, start);
    ipc_st_rlx(&sh->cons, start);
    for (uint32_t i = 0; i < size; i++)
        sh->slots[i] = IPC_BUF_NONE;
    *sh_out = sh;
    return 0;
}

int ipc_ring_attach(int fd, struct ipc_ring_shared **sh_out, struct ipc_err *err)
{
    void *base;
    size_t size;
    int ret = ipc_shm_attach(fd, IPC_SHM_RING, IPC_RING_VERSION, &base, &size, err);
    if (ret < 0)
        return ret;
    struct ipc_ring_shared *sh = base;
    if (!ring_size_ok(sh->size) || sh->mask != sh->size - 1) {
        ret = ipc_errf(err, -EPROTO, "ring %.40s: size %u / mask %#x is not a power-of-two ring", sh->shm.name,
                       sh->size, sh->mask);
        goto out_unmap;
    }
    if (ipc_ring_region_size(sh->size) != size) {
        ret = ipc_errf(err, -EPROTO, "ring %.40s: %u slots need %zu bytes, the region has %zu", sh->shm.name, sh->size,
                       ipc_ring_region_size(sh->size), size);
        goto out_unmap;
    }
    /* Indices more than the size apart are not refused here: they are the
     * peer's lie or ours, which the cursors catch and count the first time
     * they read them (ring.h), and the supervisor ends. Refusing would let a
     * lying peer keep every successor of ours, and our standby, from
     * starting, while no one was left to catch it. */
    *sh_out = sh;
    return 0;

out_unmap:
    ipc_shm_unmap(base, size);
    return ret;
}

/* The header's size: a service's own mapping at exit. The supervisor, which
 * must not trust it, detaches by its private copy (ipc_ring_ref_detach). */
void ipc_ring_detach(struct ipc_ring_shared *sh)
{
    if (sh)
        ipc_shm_unmap(sh, sh->shm.size);
}

void ipc_ring_prod_init(struct ipc_ring_prod *p, struct ipc_ring_shared *sh, int wake_fd)
{
    p->sh = sh;
    p->slots = sh->slots;
    p->mask = sh->mask;
    p->size = sh->size;
    p->head = ipc_ld_rlx(&sh->prod);
    p->cached_cons = ipc_ld_acq(&sh->cons);
    p->wake_fd = wake_fd;
}

void ipc_ring_cons_init(struct ipc_ring_cons *c, struct ipc_ring_shared *sh)
{
    c->sh = sh;
    c->slots = sh->slots;
    c->mask = sh->mask;
    c->size = sh->size;
    c->head = ipc_ld_rlx(&sh->cons);
    c->cached_prod = ipc_ld_acq(&sh->prod);
    c->from = sh->prod_owner;
}

/* The liar's word stays as it wrote it: one writer per word, and the
 * supervisor, which restarts the liar, puts it back once the liar is dead.
 * Ours we store again: a liar may have written over both. */
void ipc_ring_prod_lied(struct ipc_ring_prod *p)
{
    ipc_count(&p->sh->cons_lie, 1);
    ipc_st_rel(&p->sh->prod, p->head);
}

void ipc_ring_cons_lied(struct ipc_ring_cons *c)
{
    ipc_count(&c->sh->prod_lie, 1);
    ipc_st_rel(&c->sh->cons, c->head);
}

bool ipc_ring_ref_repair(const struct ipc_ring_ref *r)
{
    struct ipc_ring_shared *sh = r->sh;
    if (sh->size == r->size && sh->mask == r->size - 1 && sh->prod_owner == r->prod_owner &&
        sh->cons_owner == r->cons_owner && memcmp(&sh->shm, &r->shm, sizeof(r->shm)) == 0)
        return false;
    sh->shm = r->shm;
    sh->size = r->size;
    sh->mask = r->size - 1;
    sh->prod_owner = r->prod_owner;
    sh->cons_owner = r->cons_owner;
    return true;
}

void ipc_ring_ref_detach(const struct ipc_ring_ref *r)
{
    if (r->sh)
        ipc_shm_unmap(r->sh, ipc_ring_region_size(r->size));
}
