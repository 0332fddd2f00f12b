/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cp.h: the control namespace ([router] control_netns; the
 * linux-cp model, docs/routing.md "Control traffic"). Each port P has a
 * host-side interface there (cp_ifname, cp-P by default): a TAP with the
 * port's MAC, MTU and addresses, served by a service cp-P (an rr-tap like
 * any TAP port's driver), whose rings rx-cp-P and tx-cp-P join the router.
 * To the router it is one more port, nports + P, paired with P: what the
 * router does not answer for its own addresses goes to it, what comes from
 * it leaves by P unchanged.
 */
#ifndef SUP_CP_H
#define SUP_CP_H

#include <stdbool.h>
#include <stddef.h>

#include "supervisor/sup.h"
#include "tables/config.h"

/* Ring PREFIX-PORT (setup.c): its two ends, and on adoption the fd of the
 * consumer's next input ring. */
int sup_ring_add(struct sup *s, const char *prefix, int port, int queue, int prod, int cons, struct ipc_err *err);

/**
 * Service @svc (a cp-PORT): its rings with the router, then its TAP: made
 * in the control namespace (MAC, MTU, addresses, up), or, adopting, taken
 * back from the running instance's fd @fd_dev and checked to be that
 * device. 0, or -errno with @err.
 */
int sup_cp_attach(struct sup *s, int svc, int fd_dev, struct ipc_err *err);

/**
 * The control namespace's part of @v's config blob @c: the host-side ports
 * after the manifest's, the port numbers of the rings that join one, and
 * (@rc, the router's typed config, or NULL) the pairs.
 */
void sup_cp_config(const struct sup *s, const struct sup_svc *v, struct ipc_svc_config *c,
                   struct tbl_router_cfg *rc);

/** A reload that would move a host-side port's index, or change the control namespace: refused, why in @why. */
bool sup_cp_reload_refused(const struct sup_manifest *o, const struct sup_manifest *n, char *why, size_t len);

#endif
