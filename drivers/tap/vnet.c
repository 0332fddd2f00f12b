/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/vnet.c: the virtio-net header's checks and conversions
 * (vnet.h). The kernel's own checks on a write (virtio_net_hdr_to_skb) refuse
 * much of this with EINVAL; we check first so that a bad packet from a peer
 * is counted by reason, and so that a bad header on receive (which the kernel
 * never produces, but a bug or a future kernel might) never travels on.
 */
#include "vnet.h"

#include <endian.h>

void tap_vnet_from_wire(const struct tap_vnet_hdr *h, struct ipc_vnet *v)
{
    v->flags = h->flags;
    v->gso_type = h->gso_type;
    v->hdr_len = le16toh(h->hdr_len);
    v->gso_size = le16toh(h->gso_size);
    v->csum_start = le16toh(h->csum_start);
    v->csum_offset = le16toh(h->csum_offset);
}

void tap_vnet_to_wire(const struct ipc_vnet *v, struct tap_vnet_hdr *h)
{
    h->flags = v->flags;
    h->gso_type = v->gso_type;
    h->hdr_len = htole16(v->hdr_len);
    h->gso_size = htole16(v->gso_size);
    h->csum_start = htole16(v->csum_start);
    h->csum_offset = htole16(v->csum_offset);
    h->num_buffers = 0;
}

/* The shortest frame that can carry a segment of each GSO type: Ethernet,
 * the smallest IP header of its family, and the transport header. */
static uint32_t gso_min_len(uint8_t type)
{
    switch (type) {
    case TAP_VNET_GSO_TCPV4:
        return TAP_ETH_HLEN + 20 + 20;
    case TAP_VNET_GSO_TCPV6:
        return TAP_ETH_HLEN + 40 + 20;
    case TAP_VNET_GSO_UDP:
    case TAP_VNET_GSO_UDP_L4:
        return TAP_ETH_HLEN + 20 + 8;
    default:
        return 0; /* unknown */
    }
}

enum tap_verdict tap_vnet_check(const struct ipc_vnet *v, uint32_t len)
{
    if (len < TAP_ETH_HLEN)
        return TAP_VNET_SHORT;
    if (len > TAP_FRAME_MAX)
        return TAP_VNET_LONG;
    uint8_t type = v->gso_type & (uint8_t)~TAP_VNET_GSO_ECN;
    if (type != TAP_VNET_GSO_NONE) {
        uint32_t min = gso_min_len(type);
        if (min == 0 || v->gso_size == 0 || len < min || v->hdr_len > len)
            return TAP_VNET_BAD_GSO;
    } else if (v->gso_type & TAP_VNET_GSO_ECN) {
        return TAP_VNET_BAD_GSO; /* ECN on no GSO type at all */
    }
    if (v->flags & TAP_VNET_F_NEEDS_CSUM) {
        /* The checksum field (2 bytes at csum_start + csum_offset) must lie
         * inside the frame: the kernel would write it there. */
        if ((uint32_t)v->csum_start + v->csum_offset + 2u > len)
            return TAP_VNET_BAD_CSUM;
    }
    return TAP_VNET_OK;
}

enum tap_verdict tap_vnet_rx(const struct tap_vnet_hdr *h, uint32_t nread, struct ipc_vnet *v)
{
    if (nread < TAP_VNET_HDR_LEN)
        return TAP_VNET_SHORT;
    tap_vnet_from_wire(h, v);
    return tap_vnet_check(v, nread - TAP_VNET_HDR_LEN);
}
