/* SPDX-License-Identifier: MIT */
/*
 * ipc/capture.h: the capture region (`ringrouter capture`, docs/capture.md).
 * One per capturing service (each driver, the router, each shaper), created
 * by the supervisor at set-up, mapped by the service at ipc_svc_open, and handed to
 * the capture client over the control socket while a capture runs.
 *
 *   ctl    what to capture: the directions on (IPC_CAP_RX|TX|DROP, 0: off),
 *          the snap length and a classic BPF program the supervisor checked.
 *          Written by the supervisor (and, being in the client's mapping,
 *          by a root client): the service bounds every read of it.
 *   ring   single producer (the service), single consumer (the client):
 *          head is the service's, tail the client's. A full ring loses the
 *          capture (lost++), never the packet, and never waits.
 *   slots  IPC_CAP_SLOTS fixed slots of a header and IPC_CAP_SNAP_MAX bytes.
 *
 * Capture off costs the service one relaxed load and one predictable branch
 * per batch (ipc_cap_on); on, the filter and the copy of the frames it
 * matches. The client trusts nothing it reads here (ipc_cap_take).
 *
 * `ringrouter trace` (ipc/trace.h) has its own part of the region (tr_*):
 * its bit of `on`, its program and ring, so a trace and a capture run at
 * once.
 */
#ifndef IPC_CAPTURE_H
#define IPC_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "atomic.h"
#include "pool.h"
#include "shm.h"

#define IPC_SHM_CAPTURE 11 /* enum ipc_shm_kind's next */
#define IPC_CAP_VERSION 2 /* 2: the trace ring (ipc/trace.h) */
#define IPC_CAP_SLOTS 512u /* a power of two */
#define IPC_CAP_SNAP_MAX 2048u
#define IPC_CAP_BPF_MAX 40u /* what a control request line (511 bytes) carries */
#define IPC_CAP_REASON 32

/* The `on` word's bits. TRACE is `ringrouter trace` (ipc/trace.h): in the
 * same word, so that a batch asks about capture and trace in one branch. */
enum { IPC_CAP_RX = 1u, IPC_CAP_TX = 2u, IPC_CAP_DROP = 4u, IPC_CAP_TRACE = 8u };

/* struct bpf_insn's layout (linux/filter.h, pcap/bpf.h). */
struct ipc_cap_insn {
    uint16_t code;
    uint8_t jt, jf;
    uint32_t k;
};

struct ipc_cap_slot {
    uint64_t ts_ns;   /* CLOCK_REALTIME */
    uint32_t caplen;  /* bytes in data[] */
    uint32_t wirelen; /* the frame's length */
    uint16_t port;
    uint8_t dir; /* IPC_CAP_RX, TX or DROP */
    uint8_t pad[5];
    char reason[IPC_CAP_REASON]; /* DROP: the counter's name */
    uint8_t data[IPC_CAP_SNAP_MAX];
};

/* One stage's record of a traced packet (ipc/trace.h says what each field
 * means for each stage). Fixed size, written whole before the head moves. */
#define IPC_TRACE_NOTE 32
#define IPC_TRACE_HDR 64
struct ipc_trace_rec {
    uint64_t ts_ns;  /* CLOCK_REALTIME */
    uint64_t tsc;    /* ipc_cycles() when recorded */
    uint32_t cost;   /* cycles per packet of the batch that carried it; 0: not measured */
    uint32_t len;    /* the packet's length */
    uint16_t id;     /* the packet's trace id (ipc_meta.flags) */
    uint8_t stage;   /* enum ipc_trace_stage */
    uint8_t verdict; /* enum ipc_trace_verdict */
    uint16_t port, queue, out_port;
    uint8_t family, plen, neigh, icmp_type, icmp_code, pad[3];
    uint8_t prefix[16], nexthop[16]; /* network order; IPv4 in the first 4 bytes */
    char note[IPC_TRACE_NOTE];       /* a drop's reason, a shaper's class */
    uint8_t hdr[IPC_TRACE_HDR];      /* RX: the frame's first bytes */
};
#define IPC_TRACE_SLOTS 256u /* a power of two */

struct ipc_cap {
    struct ipc_shm_hdr shm;
    _Alignas(64) _Atomic uint32_t on; /* IPC_CAP_* bits */
    uint32_t snaplen;
    uint32_t nins;
    uint32_t port; /* the router's: only drops of packets from this port (IPC_PORT_NONE: any) */
    struct ipc_cap_insn prog[IPC_CAP_BPF_MAX];
    _Alignas(64) _Atomic uint64_t head; /* the service's */
    _Atomic uint64_t lost;              /* the service's: captures a full ring refused */
    _Alignas(64) _Atomic uint64_t tail; /* the client's */
    _Alignas(64) struct ipc_cap_slot slot[IPC_CAP_SLOTS];
    /* The trace (IPC_CAP_TRACE), the same way round: the control block
     * (the supervisor's and a root client's, bounded by the service), the
     * service's head, the client's tail, the records. */
    _Alignas(64) uint32_t tr_nins;
    uint32_t tr_next, tr_end; /* drivers: the trace ids still to give, [next, end) */
    uint16_t tr_queue;        /* drivers: the queue they serve, for the record */
    struct ipc_cap_insn tr_prog[IPC_CAP_BPF_MAX];
    _Alignas(64) _Atomic uint64_t tr_head;
    _Atomic uint64_t tr_lost;
    _Alignas(64) _Atomic uint64_t tr_tail;
    _Alignas(64) struct ipc_trace_rec tr_rec[IPC_TRACE_SLOTS];
};

/* The service's view: the region (a static block that is never on when it
 * has none) and its port. */
struct ipc_cap_local {
    struct ipc_cap *cap;
    uint16_t port;
};
extern struct ipc_cap_local ipc_cap_;

/** Service side: map the region behind @fd (ipc_svc_open); -errno with @err. */
int ipc_cap_attach(int fd, uint16_t port, struct ipc_err *err);

/** The one branch a batch costs when off: is @dir being captured? */
static inline bool ipc_cap_on(unsigned dir)
{
    return ipc_unlikely(ipc_ld_rlx(&ipc_cap_.cap->on) & dir);
}

/** Capture on: run the filter on each of @n packets, copy those it matches. */
void ipc_cap_frames(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n, unsigned dir, uint16_t port);

/** One dropped packet, with its reason (@why: a counter name): captured if
 * IPC_CAP_DROP is on, recorded if IPC_CAP_TRACE is and it is traced. Call
 * it behind ipc_cap_on(IPC_CAP_DROP | IPC_CAP_TRACE). */
void ipc_cap_drop(struct ipc_pool *pool, ipc_buf b, uint16_t port, const char *why);

/**
 * Run the classic BPF program @prog (@n instructions) on @pkt (@len bytes
 * here, @wirelen on the wire): its return value, 0 for "no". Bounded: jumps
 * only go forward, so at most @n steps; a load past @len, a division by
 * zero or a bad opcode returns 0.
 */
uint32_t ipc_cap_bpf_run(const struct ipc_cap_insn *prog, uint32_t n, const uint8_t *pkt, uint32_t len,
                         uint32_t wirelen);

/** Check @prog as the supervisor must before a service runs it: 1..IPC_CAP_BPF_MAX
 * instructions, known opcodes, every jump in range, scratch indices in
 * range, the last instruction a return. 0, or -EINVAL with @err. */
int ipc_cap_bpf_check(const struct ipc_cap_insn *prog, uint32_t n, struct ipc_err *err);

/* Client side: one capture out of the ring, checked. */
struct ipc_cap_rec {
    uint64_t ts_ns;
    uint32_t caplen, wirelen;
    uint16_t port;
    uint8_t dir;
    char reason[IPC_CAP_REASON]; /* printable, NUL-terminated */
    uint8_t data[IPC_CAP_SNAP_MAX];
};

/**
 * Take the next capture from @c into @r: 1, 0 when the ring is empty, or
 * -EPROTO when the service wrote an impossible head (more than the ring
 * holds past our tail, or behind it): *skipped says how many we gave up on,
 * and the tail moves to the head. A slot's lengths are clamped, its reason
 * made printable: whatever the service wrote, @r is well-formed.
 */
int ipc_cap_take(struct ipc_cap *c, struct ipc_cap_rec *r, uint64_t *skipped);

#endif
