/* SPDX-License-Identifier: MIT */
/*
 * tables/layout.h: the layout stamp. Every version of what a service shares
 * with the supervisor and its peers (the config blob and its typed part, the
 * stats region, the pool, the rings, the tables) in one string that each
 * service binary carries (tables/config.c). `ringrouter upgrade` reads it
 * from a new binary's file before it starts it: a binary built against
 * another layout is refused, naming both, instead of being started to fail
 * (or worse, to misread a region).
 */
#ifndef TBL_LAYOUT_H
#define TBL_LAYOUT_H

#include "ipc/pool.h"
#include "ipc/ring.h"
#include "ipc/svc.h"
#include "tables/config.h"
#include "tables/fib.h"
#include "tables/fib6.h"
#include "tables/neigh.h"
#include "tables/neigh6.h"
#include "tables/shaper.h"
#include "tables/xsk.h"

#define TBL_STR_(x) #x
#define TBL_STR(x) TBL_STR_(x)

/* What precedes the versions, to find them in a binary's bytes. */
#define TBL_LAYOUT_TAG "ringrouter-layout: "

#define TBL_LAYOUT_STAMP                                                                                           \
    TBL_LAYOUT_TAG "svc " TBL_STR(IPC_SVC_VERSION) ", stats " TBL_STR(IPC_STATS_VERSION) ", pool " TBL_STR(         \
        IPC_POOL_VERSION) ", ring " TBL_STR(IPC_RING_VERSION) ", router-cfg " TBL_STR(TBL_ROUTER_CFG_VERSION)      \
        ", driver-cfg " TBL_STR(TBL_DRIVER_CFG_VERSION) ", shaper-cfg " TBL_STR(TBL_SHAPER_CFG_VERSION) ", fib " \
        TBL_STR(FIB_VERSION) ", fib-readers " TBL_STR(FIB_READERS_VERSION) ", fib6 " TBL_STR(FIB6_VERSION)          \
        ", neigh " TBL_STR(NEIGH_VERSION) ", neigh6 " TBL_STR(NEIGH6_VERSION) ", shaper-mbox " TBL_STR(          \
            SHP_MBOX_VERSION) ", xsk " TBL_STR(AFXDP_XSK_VERSION)

/** This build's stamp, in every binary that links tables/config.c. */
extern const char tbl_layout_stamp[];

#endif
