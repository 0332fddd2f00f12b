/* SPDX-License-Identifier: MIT */
/*
 * ipc/wake.c: the syscall half of the wake-up protocol (ipc/wake.h). Only the
 * eventfd writes and the blocking wait live here; the flag and fence logic is
 * inline in the header.
 */
#include "wake.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static void wake_write(int fd)
{
    uint64_t one = 1;
    /* EAGAIN means the counter is saturated: the consumer has a wake-up
     * pending already, which is all we wanted. */
    ssize_t r = write(fd, &one, sizeof(one));
    (void)r;
}

unsigned ipc_wake_flush(struct ipc_wake_set *ws)
{
    int done[IPC_WAKE_SET_MAX];
    unsigned ndone = 0;

    bool any = false;
    for (unsigned i = 0; i < ws->n && !any; i++)
        any = ws->ring[i]->wake_fd >= 0;
    if (!any) {
        ws->n = 0; /* consumers that never sleep: no fence to pay */
        return 0;
    }
    ipc_fence_sc(); /* (F2) pairs with (F1) */
    for (unsigned i = 0; i < ws->n; i++) {
        struct ipc_ring_prod *p = ws->ring[i];
        if (p->wake_fd < 0 || !ipc_wake_wanted(p))
            continue;
        unsigned j;
        for (j = 0; j < ndone; j++)
            if (done[j] == p->wake_fd)
                break;
        if (j < ndone)
            continue; /* that consumer is being woken already this loop */
        done[ndone++] = p->wake_fd;
        wake_write(p->wake_fd);
        ipc_count(&p->sh->wake_sent, 1);
    }
    ws->n = 0;
    return ndone;
}

unsigned ipc_wake_one(struct ipc_ring_prod *p)
{
    if (p->wake_fd < 0)
        return 0;
    ipc_fence_sc(); /* (F2) pairs with (F1) */
    if (!ipc_wake_wanted(p))
        return 0;
    wake_write(p->wake_fd);
    ipc_count(&p->sh->wake_sent, 1);
    return 1;
}

int ipc_wake_block(int efd, int timeout_ms)
{
    return ipc_wake_block_us(efd, timeout_ms < 0 ? -1 : (int64_t)timeout_ms * 1000);
}

int ipc_wake_block_us(int efd, int64_t timeout_us)
{
    struct pollfd pfd = {.fd = efd, .events = POLLIN};
    struct timespec ts = {.tv_sec = timeout_us / 1000000, .tv_nsec = (long)(timeout_us % 1000000) * 1000};
    int r = ppoll(&pfd, 1, timeout_us < 0 ? NULL : &ts, NULL);
    if (r < 0)
        return -errno;
    if (r == 0)
        return 0;
    uint64_t v;
    if (read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        return -errno;
    return 1;
}

int ipc_wake_eventfd(void)
{
    int fd = eventfd(0, EFD_NONBLOCK);
    return fd < 0 ? -errno : fd;
}
