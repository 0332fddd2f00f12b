/* SPDX-License-Identifier: MIT */
/*
 * supervisor/xsk_impl.h: what the three rooms of the supervisor's AF_XDP
 * setup (xsk.h) share. xsk.c keeps the books: which socket is whose, its
 * kernel owner id, what is released when; xsk_ns.c works inside a port's
 * network namespace: the socket, its UMEM and rings, the steering program
 * and its maps, adoption of a dead supervisor's; xsk_napi.c has the
 * device's NAPI knobs and busy polling.
 */
#ifndef SUP_XSK_IMPL_H
#define SUP_XSK_IMPL_H

#include <xdp/libxdp.h>

#include "supervisor/xsk.h"

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SO_BUSY_POLL
#define SO_BUSY_POLL 46
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif
#ifndef SO_INCOMING_NAPI_ID
#define SO_INCOMING_NAPI_ID 56
#endif
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4) /* linux/if_xdp.h, 6.6+ */
#endif
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9 /* linux/if_xdp.h, 6.17+ */
#endif

/* One socket: a port's queue. The port's first queue's entry also holds
 * the port's program and the device's NAPI knobs. */
struct sup_xsk_port {
    int port;
    int queue;
    unsigned zone; /* its port's trust zone: the pool that is its UMEM (zones.h) */
    uint16_t kown; /* IPC_OWNER_KERNEL | the socket's index: who the buffers it holds belong to */
    int ifindex;
    enum xdp_attach_mode mode;
    struct xdp_program *prog;
    int fd; /* the socket: also the driver's dev_fd */
    uint16_t bind_flags; /* XDP_COPY or XDP_ZEROCOPY */
    bool sg;             /* bound with XDP_USE_SG: a frame may come in several buffers */
    bool knobs_set;      /* the device's NAPI knobs are ours until shutdown */
    bool no_napi_id;     /* busy polling, but the socket names no NAPI to poll (xsk_napi_id) */
    int counters_fd;     /* adopted: the program's counters map, ours to close; -1: the program's object has it */
    uint32_t knob_old[2]; /* napi_defer_hard_irqs, gro_flush_timeout as we found them */
};

struct sup_xsk {
    int n;
    struct sup_xsk_port p[SUP_DRIVERS_MAX];
};

/* One socket being opened or adopted, inside its port's netns. */
struct xsk_req {
    struct sup *s;
    const struct sup_port *p;
    int pi;
    struct sup_xsk_port *x;
    struct ipc_err *err;
    const char *picked; /* what auto chose, for the log */
    int nhost;
    bool frags; /* the frags-capable program is attached */
    struct sup_xsk_port *first; /* the port's queue 0, for a later queue: its program and mode */
    char path[sizeof(((struct sup *)0)->bindir) + 32]; /* the steering program's object file */
};

/* A socket's program detached and knobs restored, inside its port's netns. */
struct xsk_detach_req {
    const struct sup *s;
    struct sup_xsk_port *x;
    const struct sup_port *p;
};

/* xsk_ns.c: the sup_in_netns callbacks (arg: a struct xsk_req, or for
 * detach a struct xsk_detach_req), and a map of a loaded program by name
 * (its fd, the program's to close, or -ENOENT). */
int sup_xsk_ns_open(void *arg);
int sup_xsk_ns_adopt(void *arg);
int sup_xsk_ns_detach(void *arg);
int sup_xsk_map_fd(struct xdp_program *prog, const char *name);

/* xsk_napi.c: the socket's busy-poll options (0 or -errno with q->err);
 * whether it names a NAPI; the device's NAPI knobs set by a port's first
 * queue; at adoption, the originals a dead supervisor recorded (knobs_set
 * if there are any); put back (at release, or when an open fails). */
int sup_xsk_busy_poll(struct xsk_req *q, int fd);
void sup_xsk_napi_id(struct xsk_req *q, int fd);
void sup_xsk_napi_knobs(struct xsk_req *q);
void sup_xsk_napi_adopt(struct xsk_req *q);
void sup_xsk_napi_restore(const struct sup *s, const struct sup_port *p, struct sup_xsk_port *x);

#endif
