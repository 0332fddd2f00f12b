/* SPDX-License-Identifier: MIT */
/*
 * supervisor/port_cfg.c: a port as every service's config blob describes
 * it (struct ipc_svc_port), by slot: a vacant slot (port_slots.c) is a port
 * with no name, no network and no MTU, flagged, so that the router forgets
 * its neighbours and sends nothing there.
 */
#include "supervisor/sup.h"

#include <stdio.h>

#include "supervisor/port_slots.h"
#include "supervisor/xsk.h"

void sup_port_fill(const struct sup *s, int i, struct ipc_svc_port *o)
{
    const struct sup_port *p = &s->m.ports[i];
    if (p->vacant) {
        *o = (struct ipc_svc_port){.plen = 32, .driver = IPC_DRV_TAP, .flags = IPC_PORT_F_VACANT};
        return;
    }
    snprintf(o->name, sizeof(o->name), "%s", p->name);
    snprintf(o->ifname, sizeof(o->ifname), "%s", p->ifname);
    snprintf(o->netns, sizeof(o->netns), "%s", p->netns);
    sup_port_mac(&s->m, i, o->mac); /* manifest_v6.c: the link-local address derives from it */
    o->mtu = (uint16_t)p->mtu;
    o->addr = p->address.addr;
    o->plen = p->address.len;
    o->driver = p->driver == SUP_DRIVER_TAP ? IPC_DRV_TAP : IPC_DRV_AFXDP;
    /* busy_poll = yes, and a socket that names a NAPI to poll (xsk.c) */
    bool busy = p->driver == SUP_DRIVER_AFXDP && !p->vlan_ntags && p->busy_poll && sup_xsk_busy_poll_ok(s, i);
    o->flags = (uint16_t)((p->shaper >= 0 ? IPC_PORT_F_SHAPER : 0) | (busy ? IPC_PORT_F_BUSY_POLL : 0) |
                          (p->vlan_ntags ? IPC_PORT_F_VLAN : 0) |
                          (p->driver == SUP_DRIVER_AFXDP && p->xdp_mode == SUP_XDP_SKB ? IPC_PORT_F_RX_PARTIAL : 0));
    o->offloads = p->offloads;
    o->rx_inflight = p->rx_inflight;
}
