/* SPDX-License-Identifier: MIT */
/*
 * supervisor/vlan.h: VLAN sub-interfaces at set-up (supervisor/vlan.c); the
 * manifest's side is supervisor/vlan_manifest.c.
 */
#ifndef SUP_VLAN_H
#define SUP_VLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "supervisor/sup.h"
#include "tables/config.h"

/* Driver service @drv's rings for its port's VLAN ports, after its own:
 * from the router (@router), or from a VLAN port's shaper. */
int sup_vlan_attach(struct sup *s, int drv, int router, struct ipc_err *err);

/* A parent's driver config: its VLAN ports' indices and tags, and `untagged`. */
void sup_vlan_driver_cfg(const struct sup *s, const struct sup_svc *v, struct tbl_driver_cfg *d);

/* Port @p carries VLAN ports. */
bool sup_vlan_parent(const struct sup_manifest *m, int p);

/* An AF_XDP parent whose device strips VLAN tags on receive: -EINVAL with
 * @err naming the port and the ethtool command; 0 otherwise (or when the
 * device cannot be asked). */
int sup_vlan_check_device(const struct sup_manifest *m, int p, struct ipc_err *err);

/* The same for `check`, over every port, as root only: -EINVAL with @msg as
 * a manifest error ("FILE:LINE: [port NAME] ..."). */
int sup_vlan_check_devices(const struct sup_manifest *m, const char *file, char *msg, size_t len);

#endif
