/* SPDX-License-Identifier: MIT */
/*
 * services/routes/rn.h: the rtnetlink route parser of rr-routes, a pure
 * function from the bytes of one recv to route records (tables/rtchan.h):
 * no socket, no state beyond the table it follows and its counters, so
 * that the fuzzer (tests/fuzz/fuzz_routes.c) drives exactly what the
 * service runs. FPM (services/routes/fpm.c) hands it the netlink message
 * inside each FPM frame.
 *
 * A message is checked whole before it emits anything: a malformed one
 * (a length that does not add up, an attribute of the wrong size, a prefix
 * length past its family's) emits nothing, is counted, and makes the
 * result say RN_F_BAD, on which the service resynchronises with a dump.
 */
#ifndef ROUTES_RN_H
#define ROUTES_RN_H

#include <stddef.h>
#include <stdint.h>

#include "tables/rtchan.h"

enum rn_ctr {
    RN_MSGS,          /* route messages read */
    RN_ADDS,          /* records emitted: add */
    RN_DELS,          /* records emitted: delete */
    RN_OTHER_TABLE,   /* a route of a table we do not follow */
    RN_OWN_ORIGIN,    /* proto kernel: the namespace's own connected routes (ignored, nothing loops) */
    RN_NOT_UNICAST,   /* blackhole, unreachable, local, broadcast ...: not forwarded by us */
    RN_UNSUPPORTED,   /* a next-hop object (RTA_NH_ID), a via of another family, a multipath past 16 */
    RN_MALFORMED,     /* counted and skipped; the service resynchronises */
    RN_NCTR
};

extern const char *const rn_ctr_names[RN_NCTR];

/* What a parse saw beside the routes. */
#define RN_F_DONE 1u /* NLMSG_DONE: a dump ended */
#define RN_F_BAD 2u  /* a malformed message (or an error answer): resynchronise */
#define RN_F_INTR 4u /* NLM_F_DUMP_INTR: the dump was inconsistent: dump again */

struct rn_parser {
    uint32_t table; /* the kernel table we follow; 0: any (FPM: zebra's RIB, whatever its table) */
    uint8_t src;    /* enum rtc_src, stamped in each record */
    uint64_t ctr[RN_NCTR];
};

/* The most bytes one call parses from a buffer that is not 4-byte aligned
 * (an FPM frame's netlink is at most 65,531). */
#define RN_ALIGNED_MAX 65536u

/* Called once per record; returns 0, or -1 to stop (no room: the caller
 * parses the same bytes again later from @resume). */
typedef int (*rn_emit_fn)(void *arg, const struct rtc_rec *r);

/**
 * Parse the netlink messages in @buf[0..@len) and emit a record for each
 * route of our table. Returns RN_F_* flags; *@used (if not NULL) is the
 * number of bytes of whole messages consumed before @emit asked to stop
 * (== @len when it never did).
 */
unsigned rn_parse(struct rn_parser *p, const void *buf, size_t len, rn_emit_fn emit, void *arg, size_t *used);

#endif
