/* SPDX-License-Identifier: MIT */
/*
 * services/routes/fpm.h: FRR's Forwarding Plane Manager protocol, as
 * zebra's dplane_fpm_nl speaks it (FRR 8.4): zebra connects to us (TCP, by
 * default port 2620) and sends frames of
 *
 *     version (1 byte, 1) | type (1 byte, 1: netlink) | length (2 bytes,
 *     network order, the header's 4 included) | one netlink message
 *
 * with the routes as RTM_NEWROUTE and RTM_DELROUTE, replaying the whole
 * table at each connection. We take one connection at a time; the
 * netlink inside goes through the same parser as the kernel's (rn.c).
 * A malformed frame is counted and the connection closed: zebra connects
 * again and replays the table, which is FPM's resynchronisation. A closed
 * connection is the source going away (RTC_SOURCE_LOST: grace).
 *
 * Flow control: a frame is parsed only when the channel has room for its
 * records; until then nothing more is read, the socket's receive buffer
 * fills and TCP pushes back on zebra. Memory: RR_FPM_BUF bytes here, the
 * socket's buffers, and the channel.
 */
#ifndef ROUTES_FPM_H
#define ROUTES_FPM_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "services/routes/rn.h"

#define RR_FPM_BUF (64u * 1024u) /* a frame is at most 65,535 bytes */
#define RR_FPM_HDR 4u

enum rr_fpm_ctr { FPM_CONNECTS, FPM_FRAMES, FPM_BAD_FRAMES, FPM_REFUSED, FPM_NCTR_ };
#define RR_FPM_NCTR (FPM_NCTR_ + RN_NCTR)

extern const char *const rr_fpm_ctr_names[RR_FPM_NCTR];

struct rr_fpm {
    int lfd; /* listening; -1: no FPM */
    int cfd; /* the connection; -1: none */
    bool lost; /* the connection closed: the caller says RTC_SOURCE_LOST */
    struct rn_parser p; /* the routes' counters are FPM's own */
    uint64_t ctr[RR_FPM_NCTR];
    uint8_t buf[RR_FPM_BUF];
    size_t have;
};

void rr_fpm_init(struct rr_fpm *f, int lfd, uint32_t table);

/** The fds to poll for reading into @fds (at most 2); returns how many. */
unsigned rr_fpm_pollfds(const struct rr_fpm *f, struct pollfd *fds);

/**
 * Accept, read and parse what is there, as long as @emit takes records.
 * Returns true if anything moved.
 */
bool rr_fpm_pump(struct rr_fpm *f, rn_emit_fn emit, void *arg);

/**
 * The frames in @buf[0..@len) (the fuzzer's entry too): parse each whole
 * one. Returns the bytes consumed (whole frames that @emit took), or -1
 * for a malformed frame.
 */
long rr_fpm_frames(struct rr_fpm *f, const uint8_t *buf, size_t len, rn_emit_fn emit, void *arg);

#endif
