/* SPDX-License-Identifier: MIT */
/*
 * supervisor/trace.h: `ringrouter trace` (ipc/trace.h,
 * docs/observability.md). The supervisor's half (trace.c): the request, the
 * regions armed (the capture regions, capture.c), the lease that ends a
 * trace when its client goes. The client's half (trace_cli.c): the filter
 * compiled with libpcap, the records read back and printed per packet.
 */
#ifndef SUP_TRACE_H
#define SUP_TRACE_H

#include <stdbool.h>
#include <stdio.h>

struct sup;
struct sup_svc;

/**
 * The request "trace N PROG" from the root client on @conn_fd: arms every
 * capture region for N packets each driver may mark, then sends the
 * regions and the lease over @conn_fd and answers in @f which service each
 * region is and the ports' names.
 */
bool sup_ctl_trace(struct sup *s, char **w, int nw, FILE *f, int conn_fd);

/** Each tick (from sup_capture_tick): a trace whose client has gone stops. */
void sup_trace_tick(struct sup *s);

/** @v's region goes (sup_capture_release): a trace that armed it ends. */
void sup_trace_release(struct sup *s, struct sup_svc *v);

/** `ringrouter trace ...`: the client (argv[0] is "trace"). */
int sup_trace_main(int argc, char **argv);

#endif
