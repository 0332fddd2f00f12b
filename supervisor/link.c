/* SPDX-License-Identifier: MIT */
/*
 * supervisor/link.c: `ringrouter link [PORT] [--json]`, each port in the
 * spirit of `ip -s link`: what it is (ifname, netns, driver, queues, the
 * router's MAC, MTU and address on it), whether its services run, and its
 * packets, bytes and drops both ways, side by side from the two places that
 * count them: the port's driver instances (what crossed the device) and the
 * router (what it took from and gave to the port).
 *
 *   driver RX   the drivers' rx_pkts and rx_bytes; drops: their rx_drop_*
 *               counters and, on AF_XDP, the kernel's xsk_rx_dropped
 *   driver TX   the drivers' tx_pkts and tx_bytes; drops: their tx_drop_*
 *               counters, and what the router (or the port's shaper) could
 *               not place on a full ring towards the port (full_drops of
 *               tx-PORT and sh-PORT)
 *   router      its PORT.rx_pkts, rx_bytes, tx_pkts and tx_bytes
 *
 * Every figure comes from a stats region or ring header a service writes,
 * so a name is matched within the region's bytes and a figure is shown as
 * it is: a lie there is a wrong number on the screen, never a wrong read.
 * A shaper's own drops (overflow, CoDel) are policy, not loss: `shaper show`.
 * A port with a host-side interface in the control namespace (cp.h) shows
 * it on a line of its own: its service, and the frames the router handed
 * it (to host) and took from it (from host); its driver is not the port's.
 * A VLAN port's driver figures are its parent's drivers' PORT.rx_pkts and
 * so on, the frames of its tags (drivers/common/vlan.h); the parent's own
 * driver row counts every frame of the device, its VLANs' included.
 */
#include "supervisor/sup.h"

#include <stdio.h>
#include <string.h>

struct link_ctr {
    uint64_t rx_pkts, rx_bytes, rx_drops, tx_pkts, tx_bytes, tx_drops;
};

/* Counter @name of @v's stats region (with @prefix true: the sum of every
 * counter whose name starts with @name). */
static uint64_t ctr_of(const struct sup_svc *v, const char *name, bool prefix)
{
    struct ipc_svc_stats *st = v->stats;
    uint32_t n = ipc_ld_acq(&st->nctr);
    size_t len = prefix ? strlen(name) : IPC_CTR_NAME;
    uint64_t sum = 0;
    for (uint32_t k = 0; k < n && k < IPC_SVC_MAX_CTR; k++)
        if (strncmp(st->ctr_name[k], name, len) == 0)
            sum += ipc_ld_rlx(&st->ctr[k]);
    return sum;
}

static bool is_driver(const struct sup_svc *v)
{
    return v->kind == IPC_SVC_TAP || v->kind == IPC_SVC_AFXDP;
}

/* Service @v works for port @p: its own, or its VLAN parent's drivers. */
static bool serves(const struct sup *s, const struct sup_svc *v, int p)
{
    const struct sup_port *pt = &s->m.ports[p];
    return sup_svc_serves(v, p) || (pt->vlan_ntags && v->port == pt->vlan_parent && is_driver(v) && v->m->kind != SUP_SVC_CP);
}

/* How bad a state is, for a port's one state: the worst of its services'. */
static int state_rank(enum sup_state st)
{
    switch (st) {
    case SUP_ST_UP:
        return 0;
    case SUP_ST_STARTING:
        return 1;
    case SUP_ST_STOPPING:
        return 2;
    case SUP_ST_BACKOFF:
        return 3;
    case SUP_ST_DOWN:
        return 4;
    case SUP_ST_FAILED:
        return 5;
    default:
        return 6;
    }
}

static void link_counters(const struct sup *s, int p, struct link_ctr *d, struct link_ctr *r)
{
    *d = (struct link_ctr){0};
    *r = (struct link_ctr){0};
    for (int i = 0; i < s->nsvcs; i++) {
        const struct sup_svc *v = &s->svcs[i];
        if (v->kind == IPC_SVC_ROUTER) {
            char name[IPC_CTR_NAME];
            const char *pn = s->m.ports[p].name;
            snprintf(name, sizeof(name), "%.15s.rx_pkts", pn);
            r->rx_pkts = ctr_of(v, name, false);
            snprintf(name, sizeof(name), "%.15s.rx_bytes", pn);
            r->rx_bytes = ctr_of(v, name, false);
            snprintf(name, sizeof(name), "%.15s.tx_pkts", pn);
            r->tx_pkts = ctr_of(v, name, false);
            snprintf(name, sizeof(name), "%.15s.tx_bytes", pn);
            r->tx_bytes = ctr_of(v, name, false);
        }
        if (!serves(s, v, p) || !is_driver(v) || v->m->kind == SUP_SVC_CP)
            continue;
        if (s->m.ports[p].vlan_ntags || v->m->members) { /* a VLAN's, or a group's: PORT.* */
            const char *vn = s->m.ports[p].name;
            char name[IPC_CTR_NAME];
            snprintf(name, sizeof(name), "%.15s.rx_pkts", vn);
            d->rx_pkts += ctr_of(v, name, false);
            snprintf(name, sizeof(name), "%.15s.rx_bytes", vn);
            d->rx_bytes += ctr_of(v, name, false);
            snprintf(name, sizeof(name), "%.15s.tx_pkts", vn);
            d->tx_pkts += ctr_of(v, name, false);
            snprintf(name, sizeof(name), "%.15s.tx_bytes", vn);
            d->tx_bytes += ctr_of(v, name, false);
            continue;
        }
        d->rx_pkts += ctr_of(v, "rx_pkts", false);
        d->rx_bytes += ctr_of(v, "rx_bytes", false);
        d->rx_drops += ctr_of(v, "rx_drop_", true) + ctr_of(v, "xsk_rx_dropped", false);
        d->tx_pkts += ctr_of(v, "tx_pkts", false);
        d->tx_bytes += ctr_of(v, "tx_bytes", false);
        d->tx_drops += ctr_of(v, "tx_drop_", true);
    }
    /* Packets for this port that found its ring full (tx-PORT, sh-PORT):
     * counted by their producer in the ring's header. */
    for (int i = 0; i < s->nrings; i++) {
        const struct sup_ring *g = &s->rings[i];
        if (g->port == p && s->svcs[g->cons].kind != IPC_SVC_ROUTER && s->svcs[g->cons].m->kind != SUP_SVC_CP)
            d->tx_drops += ipc_ld_rlx(&g->sh->full_drops);
    }
}

/* Port @p's host-side interface, if it has one (supervisor/cp.h). */
static void link_cp(const struct sup *s, int p, bool json, FILE *f)
{
    const struct sup_svc *cp = NULL, *rt = NULL;
    for (int i = 0; i < s->nsvcs; i++) {
        if (s->svcs[i].m->kind == SUP_SVC_CP && s->svcs[i].port == p)
            cp = &s->svcs[i];
        if (s->svcs[i].kind == IPC_SVC_ROUTER)
            rt = &s->svcs[i];
    }
    if (!cp || !rt)
        return;
    const char *ifn = s->m.ports[p].cp_ifname;
    char name[IPC_CTR_NAME];
    snprintf(name, sizeof(name), "%.15s.tx_pkts", ifn);
    unsigned long long to = ctr_of(rt, name, false);
    snprintf(name, sizeof(name), "%.15s.rx_pkts", ifn);
    unsigned long long from = ctr_of(rt, name, false);
    if (json) {
        fprintf(f, ",\"control\":{\"ifname\":");
        sup_json_str(f, ifn);
        fprintf(f, ",\"netns\":");
        sup_json_str(f, s->m.router.control_netns);
        fprintf(f, ",\"service\":");
        sup_json_str(f, cp->name);
        fprintf(f, ",\"state\":\"%s\",\"to_host_packets\":%llu,\"from_host_packets\":%llu}",
                sup_state_name(cp->state), to, from);
        return;
    }
    fprintf(f, "    control %s  netns %s  %s %s  to host %llu  from host %llu\n", ifn, s->m.router.control_netns,
            cp->name, sup_state_name(cp->state), to, from);
}

static void link_one(struct sup *s, int p, bool json, bool first, FILE *f)
{
    const struct sup_port *pt = &s->m.ports[p];
    uint8_t m[6];
    sup_port_mac(&s->m, p, m);
    char mac[24], addr[24], ip[20];
    snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    snprintf(addr, sizeof(addr), "%s/%u", sup_ip_str(pt->address.addr, ip, sizeof(ip)), pt->address.len);
    const struct sup_port *dev = pt->vlan_ntags ? &s->m.ports[pt->vlan_parent] : pt;
    unsigned queues = dev->driver == SUP_DRIVER_AFXDP ? dev->queues : 1;
    const char *driver = pt->driver == SUP_DRIVER_AFXDP ? "afxdp" : "tap";
    char ifname[64], tags[16] = "";
    if (pt->vlan_ntags)
        sup_vlan_str(pt, tags, sizeof(tags));
    if (pt->vlan_ntags)
        snprintf(ifname, sizeof(ifname), "vlan %s on %s (%s)", tags, dev->name, dev->ifname);
    else
        snprintf(ifname, sizeof(ifname), "%s", pt->ifname);
    enum sup_state worst = SUP_ST_UP;
    for (int i = 0; i < s->nsvcs; i++)
        if (serves(s, &s->svcs[i], p) && state_rank(s->svcs[i].state) > state_rank(worst))
            worst = s->svcs[i].state;
    struct link_ctr d, r;
    link_counters(s, p, &d, &r);
    if (json) {
        fprintf(f, "%s{\"name\":", first ? "" : ",");
        sup_json_str(f, pt->name);
        fprintf(f, ",\"ifname\":");
        sup_json_str(f, dev->ifname);
        if (pt->vlan_ntags) {
            fprintf(f, ",\"vlan\":{\"parent\":");
            sup_json_str(f, dev->name);
            fprintf(f, ",\"tags\":\"%s\",\"protocol\":\"%s\"}", tags, pt->vlan_ntags == 2 ? "802.1ad" : "802.1Q");
        }
        fprintf(f, ",\"netns\":");
        if (pt->netns[0])
            sup_json_str(f, pt->netns);
        else
            fprintf(f, "null");
        fprintf(f, ",\"driver\":\"%s\",\"queues\":%u,\"mac\":\"%s\",\"mtu_bytes\":%u,\"addresses\":[\"%s\"],"
                   "\"state\":\"%s\",\"services\":[", driver, queues, mac, pt->mtu, addr, sup_state_name(worst));
        for (int i = 0, n = 0; i < s->nsvcs; i++) {
            if (!serves(s, &s->svcs[i], p))
                continue;
            fprintf(f, "%s{\"name\":", n++ ? "," : "");
            sup_json_str(f, s->svcs[i].name);
            fprintf(f, ",\"state\":\"%s\"}", sup_state_name(s->svcs[i].state));
        }
        fprintf(f, "],\"rx\":{\"packets\":%llu,\"bytes\":%llu,\"drops\":%llu},"
                   "\"tx\":{\"packets\":%llu,\"bytes\":%llu,\"drops\":%llu},"
                   "\"router\":{\"rx_packets\":%llu,\"rx_bytes\":%llu,\"tx_packets\":%llu,\"tx_bytes\":%llu}",
                (unsigned long long)d.rx_pkts, (unsigned long long)d.rx_bytes, (unsigned long long)d.rx_drops,
                (unsigned long long)d.tx_pkts, (unsigned long long)d.tx_bytes, (unsigned long long)d.tx_drops,
                (unsigned long long)r.rx_pkts, (unsigned long long)r.rx_bytes, (unsigned long long)r.tx_pkts,
                (unsigned long long)r.tx_bytes);
        link_cp(s, p, json, f);
        fprintf(f, "}");
        return;
    }
    fprintf(f, "%s%s: %s  netns %s  driver %s  queues %u  state %s\n", first ? "" : "\n", pt->name, ifname,
            pt->netns[0] ? pt->netns : "-", driver, queues, sup_state_name(worst));
    fprintf(f, "    mac %s  mtu %u  address %s\n    services:", mac, pt->mtu, addr);
    for (int i = 0, n = 0; i < s->nsvcs; i++)
        if (serves(s, &s->svcs[i], p))
            fprintf(f, "%s %s %s", n++ ? "," : "", s->svcs[i].name, sup_state_name(s->svcs[i].state));
    fprintf(f, "\n    %-8s %12s %14s %8s %12s %14s %8s\n", "", "RX packets", "bytes", "drops", "TX packets", "bytes",
            "drops");
    fprintf(f, "    %-8s %12llu %14llu %8llu %12llu %14llu %8llu\n", "driver", (unsigned long long)d.rx_pkts,
            (unsigned long long)d.rx_bytes, (unsigned long long)d.rx_drops, (unsigned long long)d.tx_pkts,
            (unsigned long long)d.tx_bytes, (unsigned long long)d.tx_drops);
    fprintf(f, "    %-8s %12llu %14llu %8s %12llu %14llu %8s\n", "router", (unsigned long long)r.rx_pkts,
            (unsigned long long)r.rx_bytes, "-", (unsigned long long)r.tx_pkts, (unsigned long long)r.tx_bytes, "-");
    link_cp(s, p, json, f);
}

void sup_ctl_link(struct sup *s, int port, bool json, FILE *f)
{
    if (json) {
        sup_json_begin(f);
        fprintf(f, "\"links\":[");
    }
    bool first = true;
    for (size_t p = 0; p < s->m.nports; p++) {
        if ((port >= 0 && (int)p != port) || s->m.ports[p].vacant)
            continue;
        link_one(s, (int)p, json, first, f);
        first = false;
    }
    if (json)
        fprintf(f, "]}\n");
}
