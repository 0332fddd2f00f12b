/* SPDX-License-Identifier: MIT */
/*
 * tables/xsk.h: the geometry of an AF_XDP socket, which two processes must
 * agree on: the supervisor (supervisor/xsk.c) creates the socket, sizes its
 * four rings and sets its TX budget; the driver (drivers/afxdp/) maps the
 * rings from the fd it is given, at these sizes.
 *
 * The supervisor registers the pool's frame area as the socket's UMEM
 * (chunk = frame, so a UMEM address is handle * frame_size + offset) and
 * binds it with XDP_USE_NEED_WAKEUP.
 */
#ifndef TABLES_XSK_H
#define TABLES_XSK_H

/* Ring sizes: the supervisor sets them, the driver maps them. The fill and
 * RX rings are deep: under a NAPI that outranks the driver (a NIC's softirq,
 * a SCHED_FIFO NAPI thread) a train is received whole before the driver
 * runs again, and what the RX ring and the fill stock cannot hold is lost. */
#define AFXDP_FILL_SIZE 8192u
#define AFXDP_COMP_SIZE 2048u
#define AFXDP_RX_SIZE 8192u
#define AFXDP_TX_SIZE 2048u
/* In the layout stamp (tables/layout.h): a driver that maps rings of other
 * sizes than the supervisor made must not be started on its sockets.
 * 2: fill and RX rings of 8192 (were 2048). */
#define AFXDP_XSK_VERSION 2u

/* Frames one copy-mode sendto may send (XDP_MAX_TX_SKB_BUDGET; the kernel's
 * default is 32, its limit the TX ring's size). */
#define AFXDP_TX_BUDGET 256u

/* The XSKMAP in drivers/afxdp/steer.bpf.c: one slot per RX queue. */
#define AFXDP_MAX_QUEUES 64u

#endif
