/* SPDX-License-Identifier: MIT */
/*
 * tables/rtchan.h: the route channel, from rr-routes (services/routes/, the
 * one process that parses netlink and FPM messages) to the supervisor (the
 * FIB's only writer, supervisor/routes.c). A single-producer,
 * single-consumer ring of fixed-size route records in a memfd of its own
 * (IPC_SHM_RTCHAN), mapped by its two ends only.
 *
 *  producer (rr-routes)            consumer (supervisor)
 *  LOAD.acq  cons   (A)            LOAD.acq  prod   (C)
 *  STORE     rec[]                 LOAD      rec[]  (a copy, then checked)
 *  STORE.rel prod   (B)            STORE.rel cons   (D)
 *  (A) pairs with (D); (B) pairs with (C).
 *
 * Wake-ups: after publishing (a batch's end, or what an open batch holds,
 * at most once a turn of its loop) the producer writes the supervisor's
 * eventfd (the typed config's sup_wake_fd). A
 * producer that finds the ring full sets prod_wait, fences, looks at cons
 * again, and sleeps on its own eventfd; the supervisor, after a release,
 * fences, and writes that eventfd if prod_wait is set (the Dekker pair of
 * ipc/wake.h). While the ring is full the producer does not read its source:
 * a TCP peer (FPM) is pushed back, a netlink socket overflows (ENOBUFS) and
 * the producer resynchronises from a dump once there is room.
 *
 * Trust: the supervisor treats every word here as hostile. It keeps its own
 * copy of the size, caps prod - cons at it (a larger gap is a lie: the
 * producer is killed and restarted, which resynchronises it), copies each
 * record out before it looks at it, and checks every field
 * (supervisor/routes_check.c) before a record reaches the FIB. Memory is
 * bounded by the ring: RTC_SLOTS records of sizeof(struct rtc_rec) bytes.
 * Both ends copy only a record's header and its nnh next hops
 * (rtc_rec_copy); the consumer bounds the count it copies by its own copy.
 *
 * Batches: records between two RTC_BATCH_END are one batch; the supervisor
 * applies a batch in slices as its records are published (so that the
 * control socket and the health checks keep running), holds its
 * withdrawals, and closes it at its end. RTC_SYNC_BEGIN and
 * RTC_SYNC_END bracket a full dump of the source: a route the supervisor
 * mirrors that the dump did not name is withdrawn at its end (or, if the
 * dump named nothing at all, after the grace period: the source went away).
 * RTC_SOURCE_LOST says the source is gone (the table emptied, the FPM
 * connection closed): the mirrored routes stay for grace_s, then go, unless
 * the source comes back and names them again first.
 */
#ifndef TABLES_RTCHAN_H
#define TABLES_RTCHAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ipc/atomic.h"
#include "ipc/shm.h"
#include "tables/config.h"

#define RTC_VERSION 1u
#define RTC_SLOTS 8192u /* a power of two */
#define RTC_NH_MAX 16u

enum rtc_op {
    RTC_ADD = 1,        /* add or replace dst/plen */
    RTC_DEL = 2,        /* withdraw dst/plen */
    RTC_SYNC_BEGIN = 3, /* a full dump of the source follows */
    RTC_SYNC_END = 4,   /* ... and it is complete */
    RTC_BATCH_END = 5,  /* the records since the last one are one batch */
    RTC_SOURCE_LOST = 6 /* the source went away: its routes stay for grace_s */
};

struct rtc_nh {
    uint8_t gw[16];   /* IPv4: the first 4 bytes, network order; all zero: no gateway */
    uint32_t ifindex; /* in the source's namespace; informative only */
    uint8_t weight;   /* 1..255 (netlink's rtnh_hops + 1) */
    uint8_t pad[3];
};

struct rtc_rec {
    uint8_t op;     /* enum rtc_op */
    uint8_t family; /* AF_INET or AF_INET6 (ADD, DEL) */
    uint8_t plen;
    uint8_t nnh;   /* ADD: 1..RTC_NH_MAX */
    uint8_t proto; /* the source's rtm_protocol, for the log */
    uint8_t src;   /* enum rtc_src: which source said it */
    uint8_t pad[2];
    uint8_t dst[16]; /* network order; IPv4 in the first 4 bytes */
    struct rtc_nh nh[RTC_NH_MAX];
};
_Static_assert(sizeof(struct rtc_rec) == 8 + 16 + 24 * RTC_NH_MAX, "a record has no hidden padding");

enum rtc_src { RTC_SRC_NETLINK = 0, RTC_SRC_FPM = 1 };

struct rtc_shared {
    struct ipc_shm_hdr shm;
    _Alignas(IPC_CACHELINE) _Atomic uint32_t prod;
    _Alignas(IPC_CACHELINE) _Atomic uint32_t cons;
    _Alignas(IPC_CACHELINE) _Atomic uint32_t prod_wait; /* the producer sleeps until cons moves */
    _Alignas(IPC_CACHELINE) struct rtc_rec rec[RTC_SLOTS];
};

/* rr-routes' typed config (tables/config.h): the fds of its sources and of
 * the channel, and the table it follows. */
#define TBL_ROUTES_CFG_VERSION 1u

struct tbl_routes_cfg {
    struct tbl_cfg_hdr hdr;
    int32_t nl_fd;       /* NETLINK_ROUTE, bound to the route groups in the control namespace; -1: none */
    int32_t fpm_fd;      /* a listening TCP socket for FPM (dplane_fpm_nl); -1: none */
    int32_t chan_fd;     /* the channel (IPC_SHM_RTCHAN) */
    int32_t sup_wake_fd; /* the supervisor's eventfd: a batch is there */
    uint32_t table;      /* the kernel table it follows */
    uint32_t pad;
};

/** Records the producer may write now. */
static inline uint32_t rtc_room(struct rtc_shared *c, uint32_t prod)
{
    uint32_t used = prod - ipc_ld_acq(&c->cons); /* (A) */
    return used >= RTC_SLOTS ? 0 : RTC_SLOTS - used;
}

/** The producer's slot for its private head @prod (room was checked). */
static inline struct rtc_rec *rtc_slot(struct rtc_shared *c, uint32_t prod)
{
    return &c->rec[prod & (RTC_SLOTS - 1)];
}

/** The bytes of a record with @nnh next hops that mean anything: its
 * header and those next hops (at most RTC_NH_MAX). The rest of a slot is
 * stale, and neither end reads it: a route is a cache line, not seven. */
static inline size_t rtc_rec_len(uint8_t nnh)
{
    return offsetof(struct rtc_rec, nh) + (nnh < RTC_NH_MAX ? nnh : RTC_NH_MAX) * sizeof(struct rtc_nh);
}

/** Copy record @src into @dst: the header, then as many next hops as
 * @dst's own copy of the count says, so that a count changed in @src
 * meanwhile cannot make the copy longer. */
static inline void rtc_rec_copy(struct rtc_rec *dst, const struct rtc_rec *src)
{
    memcpy(dst, src, offsetof(struct rtc_rec, nh));
    memcpy(dst->nh, src->nh, rtc_rec_len(dst->nnh) - offsetof(struct rtc_rec, nh));
}

/** Publish every record up to @prod. */
static inline void rtc_publish(struct rtc_shared *c, uint32_t prod)
{
    ipc_st_rel(&c->prod, prod); /* (B) */
}

#endif
