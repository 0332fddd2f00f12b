/* SPDX-License-Identifier: MIT */
/*
 * services/router/frag.h: RFC 791 §3.2 fragmentation of IPv4 packets larger
 * than the egress MTU that do not have DF set, into new pool buffers (one
 * frame each). The caller checked DF and sends "fragmentation needed"
 * instead when it is set.
 */
#ifndef RT_FRAG_H
#define RT_FRAG_H

#include <stdint.h>

#include "rt.h"

#define RT_FRAG_MAX 64u /* fragments of one packet, at most (64 KB at MTU 1024+) */

/**
 * Split the Ethernet frame @b (possibly a chain) into fragments of at most
 * @mtu bytes of IP each, in new buffers appended to @out (meta copied: ports,
 * Ethernet header; TTL untouched). Fragment offsets are in 8-byte units, MF
 * is set on all but the last, the last keeps the original's MF (a fragment
 * fragmented again), and only options with the copied flag appear after the
 * first fragment. Consumes @b. Returns the number of fragments (0 when the
 * packet could not be fragmented: counted drop_no_bufs or drop_bad_options).
 */
unsigned rt_frag(struct rt_ctx *ctx, ipc_buf b, unsigned mtu, ipc_buf *out, unsigned max);

#endif
