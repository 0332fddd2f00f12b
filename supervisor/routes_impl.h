/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_impl.h: the state routes.c and routes_setup.c share.
 * One supervisor process has one instance of it (a supervisor serves one
 * manifest).
 */
#ifndef SUP_ROUTES_IMPL_H
#define SUP_ROUTES_IMPL_H

#include "supervisor/routes.h"

enum sup_rtc_ctr {
    RTS_ADDED,
    RTS_REPLACED,
    RTS_WITHDRAWN,
    RTS_REFUSED_BAD,
    RTS_REFUSED_MARTIAN,
    RTS_REFUSED_SELF,
    RTS_REFUSED_NOT_CONNECTED,
    RTS_REFUSED_TAKEN, /* a connected, manifest or runtime route has the prefix */
    RTS_REFUSED_FIB,   /* the FIB had no room */
    RTS_MULTIPATH,
    RTS_BATCHES,
    RTS_SYNCS,
    RTS_SOURCES_LOST,
    RTS_GRACE_EXPIRED,
    RTS_CHAN_LIES,
    RTS_GEN_SWITCHES, /* the FIB's generation switches: one per batch that retired something */
    RTS_NCTR
};

#define SUP_RT_PEND_MAX 4096u /* a batch's withdrawals held until its end */

struct sup_rt_pend {
    uint8_t dst[16];
    uint8_t family, plen;
};

struct sup_rtm {
    bool on;
    int chan_fd, wake_fd, nl_fd, fpm_fd;
    struct rtc_shared *chan;
    bool registered; /* wake_fd in the event loop's epoll set */
    uint32_t cons;   /* ours; the channel's copy is for the producer */
    struct sup_rtmap map;
    size_t n_src[2];   /* entries per source */
    size_t n_fib, n_refused; /* entries per state */
    uint32_t epoch[2]; /* per source: its current sync */
    bool syncing[2];
    uint64_t named[2]; /* routes the current sync named */
    struct sup_rt_pend pend[SUP_RT_PEND_MAX];
    uint32_t npend;
    struct {
        bool on;
        int kind; /* enum in routes.c */
        int src;
        size_t pos;
        uint32_t epoch;
        uint64_t next; /* SW_STALE, SW_EXPIRE: the earliest deadline of a stale route it passed */
    } sweep;
    size_t nstale;
    uint64_t next_expiry_ms; /* the earliest stale route's deadline, on stale_ms's clock */
    uint64_t t0_ns;          /* when routes were set up: the clock of stale_ms */
    unsigned logged;        /* refusal lines so far */
    bool fib_dirty;         /* withdrawals since the last reclaim */
    bool adopt_checked;     /* the first tick looked for an adopted rr-routes */
    uint64_t claim_until_ns; /* after an adoption: the old FIB's routes (runtime now) are the daemon's to claim */
    bool woke;               /* this turn left work for the next (self_wake) */
    uint64_t more_at;        /* when such a turn ended; 0: the last one left none */
    uint64_t tick_max_ns, gap_max_ns; /* the longest turn of ours, the longest wait for the next one */
    uint64_t ctr[RTS_NCTR];
};

extern struct sup_rtm sup_rtm;
extern const char *const sup_rts_names[RTS_NCTR];

#endif
