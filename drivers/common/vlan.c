/* SPDX-License-Identifier: MIT */
/*
 * drivers/common/vlan.c: the tags of VLAN sub-interfaces, popped on receive
 * and pushed on send in place (vlan.h). Only the first frame of a chain is
 * touched: the tags and the MAC addresses are there.
 */
#include "drivers/common/vlan.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ipc/pkt.h"

/* The virtio-net header counts from the frame's first byte. */
#define VNET_F_NEEDS_CSUM 1u

static bool vid_ok(uint16_t vid)
{
    return vid >= 1 && vid <= 4094;
}

int drv_vlan_init(struct drv_vlan *v, const struct ipc_svc_config *cfg, const struct tbl_driver_cfg *dc,
                  uint16_t parent, struct ipc_err *err)
{
    memset(v, 0, offsetof(struct drv_vlan, names));
    v->parent = parent;
    v->untagged_drop = dc->untagged == 0;
    if (dc->nvlan > DRV_VLAN_MAX)
        return ipc_errf(err, -EINVAL, "%u VLANs: at most %u", dc->nvlan, DRV_VLAN_MAX);
    for (unsigned i = 0; i < dc->nvlan; i++) {
        const struct tbl_vlan *t = &dc->vlan[i];
        bool ok = t->port < cfg->nports && t->port < IPC_MAX_PORTS && t->port != parent && !v->by_port[t->port] &&
                  (t->ntags == 1 || t->ntags == 2);
        for (unsigned k = 0; ok && k < t->ntags; k++)
            ok = vid_ok(t->vid[k]) && (t->tpid[k] == PKT_ETH_P_VLAN || (k == 0 && t->tpid[k] == PKT_ETH_P_QINQ));
        if (!ok)
            return ipc_errf(err, -EINVAL, "VLAN %u: port %u, %u tags (%#x %u, %#x %u): not a VLAN of port %u", i,
                            t->port, t->ntags, t->tpid[0], t->vid[0], t->tpid[1], t->vid[1], parent);
        struct drv_vlan_ent *e = &v->e[i];
        e->port = t->port;
        e->ntags = t->ntags;
        for (unsigned k = 0; k < t->ntags; k++) {
            e->tpid[k] = t->tpid[k];
            e->vid[k] = t->vid[k];
        }
        v->by_port[t->port] = (uint8_t)(i + 1);
    }
    v->n = dc->nvlan;
    return 0;
}

unsigned drv_vlan_counter_names(struct drv_vlan *v, const struct ipc_svc_config *cfg, const char *const *base,
                                unsigned nbase, const char *const **names)
{
    static const char *const parent[DRV_VLAN_C_PARENT] = {"rx_drop_untagged", "rx_drop_vlan_unknown",
                                                          "tx_drop_vlan_headroom"};
    static const char *const per[DRV_VLAN_C_PER_PORT] = {"rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes"};
    *names = base;
    v->ctr0 = nbase;
    if (!v->n)
        return nbase;
    unsigned n = 0, k = 0;
    for (; n < nbase && n < IPC_SVC_MAX_CTR; n++)
        v->names[n] = base[n];
    for (unsigned i = 0; i < DRV_VLAN_C_PARENT && n < IPC_SVC_MAX_CTR; i++)
        v->names[n++] = parent[i];
    for (unsigned i = 0; i < v->n; i++)
        for (unsigned c = 0; c < DRV_VLAN_C_PER_PORT && n < IPC_SVC_MAX_CTR; c++, k++) {
            snprintf(v->name_buf[k], IPC_CTR_NAME, "%.15s.%s", cfg->ports[v->e[i].port].name, per[c]);
            v->names[n++] = v->name_buf[k];
        }
    *names = v->names;
    return n;
}

const struct drv_vlan_ent *drv_vlan_match(const struct drv_vlan *v, const uint8_t *f, uint32_t len)
{
    if (len < PKT_ETH_HLEN + PKT_VLAN_HLEN)
        return NULL;
    uint16_t tpid = pkt_get16(f + PKT_ETH_TYPE);
    uint16_t vid = pkt_get16(f + PKT_ETH_TYPE + 2) & 0x0fffu;
    /* The inner tag, when there is one and room for it. */
    bool two = len >= PKT_ETH_HLEN + 2 * PKT_VLAN_HLEN;
    uint16_t tpid2 = two ? pkt_get16(f + PKT_ETH_TYPE + PKT_VLAN_HLEN) : 0;
    uint16_t vid2 = two ? pkt_get16(f + PKT_ETH_TYPE + PKT_VLAN_HLEN + 2) & 0x0fffu : 0;
    const struct drv_vlan_ent *one = NULL;
    for (uint32_t i = 0; i < v->n; i++) {
        const struct drv_vlan_ent *e = &v->e[i];
        if (e->tpid[0] != tpid || e->vid[0] != vid)
            continue;
        if (e->ntags == 1)
            one = e;
        else if (two && e->tpid[1] == tpid2 && e->vid[1] == vid2)
            return e; /* both tags: the most specific */
    }
    return one;
}

static void vnet_shift(struct ipc_meta *m, int by)
{
    if (m->vnet.flags & VNET_F_NEEDS_CSUM)
        m->vnet.csum_start = (uint16_t)(m->vnet.csum_start + by);
    /* A hint to the kernel of the headers' length: shorter is safe. */
    if (m->vnet.hdr_len)
        m->vnet.hdr_len = by < 0 && m->vnet.hdr_len < (uint16_t)-by ? 0 : (uint16_t)(m->vnet.hdr_len + by);
}

bool drv_vlan_pop(struct ipc_pool *pool, ipc_buf b, unsigned ntags)
{
    struct ipc_meta *m = ipc_pool_meta(pool, b);
    uint32_t cut = ntags * PKT_VLAN_HLEN;
    if (ntags == 0 || ntags > DRV_VLAN_TAGS || m->len < PKT_ETH_HLEN + cut)
        return false;
    if ((m->vnet.flags & VNET_F_NEEDS_CSUM) && m->vnet.csum_start < PKT_ETH_HLEN + cut)
        return false; /* a checksum inside the tags: no frame the kernel writes */
    uint8_t *f = ipc_pool_data(pool, b);
    memmove(f + cut, f, 2 * PKT_ETH_ALEN);
    m->off = (uint16_t)(m->off + cut);
    m->len = (uint16_t)(m->len - cut);
    m->pkt_len -= cut;
    vnet_shift(m, -(int)cut);
    return true;
}

bool drv_vlan_push(struct ipc_pool *pool, ipc_buf b, const struct drv_vlan_ent *e)
{
    struct ipc_meta *m = ipc_pool_meta(pool, b);
    uint32_t add = e->ntags * PKT_VLAN_HLEN;
    if (e->ntags == 0 || e->ntags > DRV_VLAN_TAGS || m->off < add || m->len < 2 * PKT_ETH_ALEN ||
        (uint32_t)m->len + add > UINT16_MAX)
        return false;
    uint8_t *f = ipc_pool_data(pool, b);
    memmove(f - add, f, 2 * PKT_ETH_ALEN);
    uint8_t *t = f - add + 2 * PKT_ETH_ALEN;
    for (unsigned k = 0; k < e->ntags; k++, t += PKT_VLAN_HLEN) {
        pkt_put16(t, e->tpid[k]);
        pkt_put16(t + 2, e->vid[k]); /* priority 0, DEI 0 */
    }
    m->off = (uint16_t)(m->off - add);
    m->len = (uint16_t)(m->len + add);
    m->pkt_len += add;
    vnet_shift(m, (int)add);
    return true;
}

enum drv_vlan_rx drv_vlan_rx(const struct drv_vlan *v, struct ipc_pool *pool, ipc_buf b, uint16_t *port)
{
    const struct ipc_meta *m = ipc_pool_meta(pool, b);
    const uint8_t *f = ipc_pool_data(pool, b);
    uint16_t type = m->len >= PKT_ETH_HLEN ? pkt_get16(f + PKT_ETH_TYPE) : 0;
    if (type != PKT_ETH_P_VLAN && type != PKT_ETH_P_QINQ) {
        if (v->untagged_drop)
            return DRV_VLAN_RX_UNTAGGED;
        *port = v->parent;
        return DRV_VLAN_RX_OK;
    }
    const struct drv_vlan_ent *e = drv_vlan_match(v, f, m->len);
    if (!e || !drv_vlan_pop(pool, b, e->ntags))
        return DRV_VLAN_RX_UNKNOWN;
    *port = e->port;
    return DRV_VLAN_RX_OK;
}

bool drv_vlan_rx_one(struct drv *d, const struct drv_vlan *v, ipc_buf b)
{
    uint16_t port = v->parent;
    switch (drv_vlan_rx(v, d->pool, b, &port)) {
    case DRV_VLAN_RX_OK:
        break;
    case DRV_VLAN_RX_UNTAGGED:
        drv_ctr_add(d, v->ctr0 + DRV_VLAN_C_RX_UNTAGGED, 1);
        drv_dead_add(d, b);
        return false;
    case DRV_VLAN_RX_UNKNOWN:
        drv_ctr_add(d, v->ctr0 + DRV_VLAN_C_RX_UNKNOWN, 1);
        drv_dead_add(d, b);
        return false;
    }
    struct ipc_meta *m = ipc_pool_meta(d->pool, b);
    m->in_port = port;
    unsigned i = v->by_port[port];
    if (i) {
        unsigned c = v->ctr0 + DRV_VLAN_C_PARENT + (i - 1) * DRV_VLAN_C_PER_PORT;
        drv_ctr_add(d, c + DRV_VLAN_C_PORT_RX_PKTS, 1);
        drv_ctr_add(d, c + DRV_VLAN_C_PORT_RX_BYTES, m->next == IPC_BUF_NONE ? m->len : m->pkt_len);
    }
    return true;
}

uint32_t drv_vlan_tx_one(const struct drv *d, const struct drv_vlan *v, ipc_buf b)
{
    const struct ipc_meta *m = ipc_pool_meta(d->pool, b);
    unsigned i = m->out_port < IPC_MAX_PORTS ? v->by_port[m->out_port] : 0;
    if (!i)
        return DRV_KEEP; /* the parent's own, untagged */
    if (!drv_vlan_push(d->pool, b, &v->e[i - 1]))
        return v->ctr0 + DRV_VLAN_C_TX_DROP;
    unsigned c = v->ctr0 + DRV_VLAN_C_PARENT + (i - 1) * DRV_VLAN_C_PER_PORT;
    ipc_count(&d->ctr[c + DRV_VLAN_C_PORT_TX_PKTS], 1);
    ipc_count(&d->ctr[c + DRV_VLAN_C_PORT_TX_BYTES], m->next == IPC_BUF_NONE ? m->len : m->pkt_len);
    return DRV_KEEP;
}
