/* SPDX-License-Identifier: MIT */
/*
 * supervisor/vlan.c: VLAN sub-interfaces at set-up (the manifest's side is
 * vlan_manifest.c). A VLAN port has no process and no device of its own:
 *
 *   rings   each driver instance of its parent takes tx-VLAN (or
 *           tx-VLAN.QUEUE) from the router, or from shaper-VLAN on a
 *           shaped VLAN port (its parent's first queue), beside its own;
 *           what the parent's drivers receive for it comes on their one
 *           rx ring, with meta.in_port the VLAN port's;
 *   map     the parent's drivers get each VLAN port's index and tags in
 *           their typed config (tables/config.h, struct tbl_vlan) and pop
 *           and push tags in place (drivers/common/vlan.h);
 *   device  an AF_XDP parent's device must hand the tags over in the frame:
 *           a device that strips them on receive (rx-vlan-offload) hides
 *           every VLAN frame's tag from XDP, so the port is refused with
 *           the ethtool command that turns it off.
 */
#include "supervisor/sup.h"
#include "supervisor/cp.h"

#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/pkt.h"
#include "supervisor/vlan.h"
#include "tables/config.h"

static int svc_named(const struct sup *s, const char *name)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (strcmp(s->svcs[i].name, name) == 0)
            return i;
    return -1;
}

int sup_vlan_attach(struct sup *s, int drv, int router, struct ipc_err *err)
{
    const struct sup_service *ms = s->svcs[drv].m;
    int p = ms->port, q = ms->queue, ret;
    for (size_t c = 0; c < s->m.nports; c++) {
        const struct sup_port *vp = &s->m.ports[c];
        if (!vp->vlan_ntags || vp->vlan_parent != p)
            continue;
        char sname[SUP_SERVICE_MAX + 1];
        snprintf(sname, sizeof(sname), "shaper-%s", vp->name);
        int shp = svc_named(s, sname);
        if (shp >= 0 && q == 0) {
            if ((ret = sup_ring_add(s, "sh", (int)c, 0, router, shp, err)) < 0 ||
                (ret = sup_ring_add(s, "tx", (int)c, 0, shp, drv, err)) < 0)
                return ret;
        } else if (shp < 0 && (ret = sup_ring_add(s, "tx", (int)c, q, router, drv, err)) < 0) {
            return ret;
        }
    }
    return 0;
}

void sup_vlan_driver_cfg(const struct sup *s, const struct sup_svc *v, struct tbl_driver_cfg *d)
{
    if (v->m->kind != SUP_SVC_DRIVER || v->port < 0 || (size_t)v->port >= s->m.nports)
        return;
    d->untagged = s->m.ports[v->port].untagged_parent;
    for (size_t c = 0; c < s->m.nports && c < IPC_MAX_PORTS && d->nvlan < TBL_VLAN_MAX; c++) {
        const struct sup_port *vp = &s->m.ports[c];
        if (!vp->vlan_ntags || vp->vlan_parent != v->port)
            continue;
        struct tbl_vlan *t = &d->vlan[d->nvlan++];
        t->port = (uint16_t)c;
        t->ntags = vp->vlan_ntags;
        t->tpid[0] = vp->vlan_ntags == 2 ? PKT_ETH_P_QINQ : PKT_ETH_P_VLAN;
        t->tpid[1] = vp->vlan_ntags == 2 ? PKT_ETH_P_VLAN : 0;
        t->vid[0] = vp->vlan_id[0];
        t->vid[1] = vp->vlan_ntags == 2 ? vp->vlan_id[1] : 0;
    }
}

bool sup_vlan_parent(const struct sup_manifest *m, int p)
{
    for (size_t c = 0; c < m->nports; c++)
        if (m->ports[c].vlan_ntags && m->ports[c].vlan_parent == p)
            return true;
    return false;
}

/* ---- the device's receive VLAN offloads --------------------------------- */

struct feat_req {
    const char *ifname;
    int ctag, stag; /* rx-vlan-hw-parse, rx-vlan-stag-hw-parse: 1 on, 0 off, -1 unknown */
};

static int ethtool(int fd, const char *ifname, void *data)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    ifr.ifr_data = data;
    return ioctl(fd, SIOCETHTOOL, &ifr) < 0 ? -errno : 0;
}

/* In the device's namespace: its feature names, then which are on. */
static int features_in_ns(void *arg)
{
    struct feat_req *r = arg;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct ethtool_sset_info *si = calloc(1, sizeof(*si) + sizeof(uint32_t));
    struct ethtool_gstrings *gs = NULL;
    struct ethtool_gfeatures *gf = NULL;
    if (!si)
        goto out;
    si->cmd = ETHTOOL_GSSET_INFO;
    si->sset_mask = 1ull << ETH_SS_FEATURES;
    if (ethtool(fd, r->ifname, si) < 0 || !si->sset_mask || si->data[0] == 0 || si->data[0] > 4096)
        goto out;
    uint32_t n = si->data[0], blocks = (n + 31) / 32;
    gs = calloc(1, sizeof(*gs) + (size_t)n * ETH_GSTRING_LEN);
    gf = calloc(1, sizeof(*gf) + blocks * sizeof(gf->features[0]));
    if (!gs || !gf)
        goto out;
    gs->cmd = ETHTOOL_GSTRINGS;
    gs->string_set = ETH_SS_FEATURES;
    gs->len = n;
    gf->cmd = ETHTOOL_GFEATURES;
    gf->size = blocks;
    if (ethtool(fd, r->ifname, gs) < 0 || ethtool(fd, r->ifname, gf) < 0)
        goto out;
    for (uint32_t i = 0; i < n && i < gs->len; i++) {
        const char *name = (const char *)gs->data + (size_t)i * ETH_GSTRING_LEN;
        int on = (gf->features[i / 32].active >> (i % 32)) & 1;
        if (strncmp(name, "rx-vlan-hw-parse", ETH_GSTRING_LEN) == 0)
            r->ctag = on;
        else if (strncmp(name, "rx-vlan-stag-hw-parse", ETH_GSTRING_LEN) == 0)
            r->stag = on;
    }
out:
    free(si);
    free(gs);
    free(gf);
    close(fd);
    return 0;
}

/* Why port @p's device hides its VLAN ports' tags from XDP, or 0. */
static int strips(const struct sup_manifest *m, int p, char *why, size_t len)
{
    const struct sup_port *pt = &m->ports[p];
    if (pt->driver != SUP_DRIVER_AFXDP || pt->vlan_ntags || !sup_vlan_parent(m, p))
        return 0;
    bool ctag = false, stag = false;
    const struct sup_port *first = NULL;
    for (size_t c = 0; c < m->nports; c++) {
        const struct sup_port *vp = &m->ports[c];
        if (!vp->vlan_ntags || vp->vlan_parent != p)
            continue;
        first = first ? first : vp;
        ctag |= vp->vlan_ntags == 1;
        stag |= vp->vlan_ntags == 2;
    }
    struct feat_req r = {.ifname = pt->ifname, .ctag = -1, .stag = -1};
    struct ipc_err err;
    if (sup_in_netns(pt->netns, features_in_ns, &r, &err) < 0)
        return 0; /* no namespace (yet): the port's own set-up says so */
    const char *feat = ctag && r.ctag == 1 ? "rxvlan" : stag && r.stag == 1 ? "rx-vlan-stag-hw-parse" : NULL;
    if (!feat)
        return 0;
    snprintf(why, len,
             "port %s's device %s%s%s strips %s tags on receive (%s on), so XDP never sees the tag of VLAN port %s "
             "(line %u): set `ethtool -K %s %s off`%s%s",
             pt->name, pt->ifname, pt->netns[0] ? " in netns " : "", pt->netns,
             strcmp(feat, "rxvlan") == 0 ? "802.1Q" : "802.1ad", strcmp(feat, "rxvlan") == 0 ? "rx-vlan-offload" : feat,
             first->name, first->src.line, pt->ifname, feat, pt->netns[0] ? " in netns " : "", pt->netns);
    return 1;
}

int sup_vlan_check_device(const struct sup_manifest *m, int p, struct ipc_err *err)
{
    char why[400];
    if (strips(m, p, why, sizeof why))
        return ipc_errf(err, -EINVAL, "%s", why);
    return 0;
}

int sup_vlan_check_devices(const struct sup_manifest *m, const char *file, char *msg, size_t len)
{
    if (geteuid() != 0)
        return 0; /* another namespace's devices are root's to look at */
    char why[400];
    for (size_t p = 0; p < m->nports; p++)
        if (strips(m, (int)p, why, sizeof why)) {
            const struct sup_port *pt = &m->ports[p];
            snprintf(msg, len, "%s:%u: [%s] %s", file, pt->src.line, pt->src.section, why);
            return -EINVAL;
        }
    return 0;
}
