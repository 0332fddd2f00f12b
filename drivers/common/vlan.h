/* SPDX-License-Identifier: MIT */
/*
 * drivers/common/vlan.h: VLAN sub-interfaces, served by the driver of their
 * parent's device (docs/drivers.md, "VLAN sub-interfaces"). A VLAN port is
 * a router port of its own (addresses, routes, neighbours, shaper) with no
 * process of its own: its parent's driver
 *
 *   RX  reads the frame's tags, maps them to the VLAN's port index
 *       (meta.in_port) and pops them in place: the 12 bytes of MAC
 *       addresses move up by 4 bytes a tag and the frame's data offset
 *       with them, so the router sees a plain Ethernet frame;
 *   TX  maps meta.out_port back to the tags and pushes them into the
 *       headroom in front of the frame the same way.
 *
 * No copy but those 12 bytes, no second pass. A parent with VLANs drops
 * tagged frames of a VLAN it does not serve (rx_drop_vlan_unknown) and
 * untagged frames unless its manifest says `untagged = parent`
 * (rx_drop_untagged). A parent with none keeps the driver as it was: every
 * frame is the port's, tagged or not, and the router counts the tagged
 * ones in drop_vlan.
 *
 * The tag functions take a pool buffer and touch only its first frame;
 * they are pure, unit-tested (tests/unit/test_vlan.c) without a driver.
 */
#ifndef DRV_VLAN_H
#define DRV_VLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "drivers/common/drv.h"
#include "ipc/svc.h"
#include "tables/config.h"

#define DRV_VLAN_MAX TBL_VLAN_MAX
#define DRV_VLAN_TAGS 2u /* 802.1ad: an S-tag, then a C-tag */

/* The driver's VLAN counters, after its own: three for the parent, then
 * four for each VLAN, named PORT.rx_pkts and so on. */
enum { DRV_VLAN_C_RX_UNTAGGED, DRV_VLAN_C_RX_UNKNOWN, DRV_VLAN_C_TX_DROP, DRV_VLAN_C_PARENT };
enum {
    DRV_VLAN_C_PORT_RX_PKTS,
    DRV_VLAN_C_PORT_RX_BYTES,
    DRV_VLAN_C_PORT_TX_PKTS,
    DRV_VLAN_C_PORT_TX_BYTES,
    DRV_VLAN_C_PER_PORT
};

struct drv_vlan_ent {
    uint16_t port;
    uint16_t ntags;
    uint16_t tpid[DRV_VLAN_TAGS]; /* outer first */
    uint16_t vid[DRV_VLAN_TAGS];
};

struct drv_vlan {
    uint32_t n;         /* VLANs served; 0: the driver does nothing of this */
    uint16_t parent;    /* the device's own port */
    bool untagged_drop; /* untagged frames dropped, not the parent's */
    unsigned ctr0;      /* the first VLAN counter in the driver's array */
    struct drv_vlan_ent e[DRV_VLAN_MAX];
    uint8_t by_port[IPC_MAX_PORTS]; /* entry + 1 by port index; 0: not one of ours */
    const char *names[IPC_SVC_MAX_CTR];
    char name_buf[DRV_VLAN_C_PARENT + DRV_VLAN_C_PER_PORT * DRV_VLAN_MAX][IPC_CTR_NAME];
};

enum drv_vlan_rx {
    DRV_VLAN_RX_OK,       /* *port is where the frame goes, its tags popped */
    DRV_VLAN_RX_UNTAGGED, /* untagged, and the parent takes none */
    DRV_VLAN_RX_UNKNOWN,  /* tagged with a VLAN no port is */
};

/**
 * The VLAN map from the driver's typed config, checked: ports in range and
 * not @parent, one entry per port, tag protocols and ids valid. Returns 0,
 * or -EINVAL with @err naming the entry.
 */
int drv_vlan_init(struct drv_vlan *v, const struct ipc_svc_config *cfg, const struct tbl_driver_cfg *dc,
                  uint16_t parent, struct ipc_err *err);

/**
 * The counter names to give ipc_svc_counters: the driver's @nbase own, then
 * (with VLANs) the VLAN counters. Sets v->ctr0; returns how many names.
 */
unsigned drv_vlan_counter_names(struct drv_vlan *v, const struct ipc_svc_config *cfg, const char *const *base,
                                unsigned nbase, const char *const **names);

/** The entry whose tags frame @f (@len bytes) carries (both of an 802.1ad entry before one tag alone), or NULL. */
const struct drv_vlan_ent *drv_vlan_match(const struct drv_vlan *v, const uint8_t *f, uint32_t len);

/** Pop @ntags tags from the front of @b's frame. False (nothing changed) when it is too short. */
bool drv_vlan_pop(struct ipc_pool *pool, ipc_buf b, unsigned ntags);

/** Push @e's tags in front of @b's frame, into its headroom. False (nothing changed) without room. */
bool drv_vlan_push(struct ipc_pool *pool, ipc_buf b, const struct drv_vlan_ent *e);

/** A received frame: its port (*port) with the tags popped, or why it is dropped. */
enum drv_vlan_rx drv_vlan_rx(const struct drv_vlan *v, struct ipc_pool *pool, ipc_buf b, uint16_t *port);

/**
 * The receive path's one call, on a parent with VLANs: the frame's in_port
 * set and its tags popped, counted; or dropped (to the dead list) and
 * counted. Returns true when the frame goes on to the router.
 */
bool drv_vlan_rx_one(struct drv *d, const struct drv_vlan *v, ipc_buf b);

/**
 * The transmit check's part, on a parent with VLANs: a packet for one of
 * the VLANs gets its tags (counted); DRV_KEEP, or the drop counter.
 */
uint32_t drv_vlan_tx_one(const struct drv *d, const struct drv_vlan *v, ipc_buf b);

#endif
