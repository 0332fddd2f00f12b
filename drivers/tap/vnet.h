/* SPDX-License-Identifier: MIT */
/*
 * drivers/tap/vnet.h: the virtio-net header the TAP device puts in front of
 * every frame (IFF_VNET_HDR, TUNSETVNETHDRSZ = 12: struct virtio_net_hdr_v1,
 * num_buffers unused), its conversion to and from the buffer metadata
 * (struct ipc_vnet), and the checks a frame passes before it travels: on
 * receive, a frame the kernel handed us; on transmit, a packet another
 * process handed us through a ring. No io_uring here, so the unit test links
 * it alone.
 */
#ifndef TAP_VNET_H
#define TAP_VNET_H

#include <stdint.h>

#include "ipc/pool.h"

#define TAP_VNET_HDR_LEN 12u
#define TAP_ETH_HLEN 14u
/* The longest frame a TAP hands over: a 64 KB GSO skb plus its Ethernet and
 * VLAN headers (tun's gso_max_size is 64 KB; BIG TCP is off on a TAP). */
#define TAP_FRAME_MAX (65536u + TAP_ETH_HLEN + 4u)

/* virtio-net header flags and GSO types (linux/virtio_net.h). */
#define TAP_VNET_F_NEEDS_CSUM 1u
#define TAP_VNET_F_DATA_VALID 2u
#define TAP_VNET_GSO_NONE 0u
#define TAP_VNET_GSO_TCPV4 1u
#define TAP_VNET_GSO_UDP 3u
#define TAP_VNET_GSO_TCPV6 4u
#define TAP_VNET_GSO_UDP_L4 5u
#define TAP_VNET_GSO_ECN 0x80u

/* Offload bits of struct ipc_svc_port.offloads (the supervisor's SUP_OFFLOAD_*). */
#define TAP_OFFLOAD_CSUM 0x1u
#define TAP_OFFLOAD_TSO4 0x2u
#define TAP_OFFLOAD_TSO6 0x4u
#define TAP_OFFLOAD_USO 0x8u

/* struct virtio_net_hdr_v1 as it is on the wire: little-endian (the TAP
 * uses the host's order for a legacy header, and every host we run on is
 * little-endian; see tap_vnet_from_wire). */
struct tap_vnet_hdr {
    uint8_t flags;
    uint8_t gso_type;
    uint16_t hdr_len;
    uint16_t gso_size;
    uint16_t csum_start;
    uint16_t csum_offset;
    uint16_t num_buffers;
};
_Static_assert(sizeof(struct tap_vnet_hdr) == TAP_VNET_HDR_LEN, "virtio_net_hdr_v1 is 12 bytes");

enum tap_verdict {
    TAP_VNET_OK = 0,
    TAP_VNET_SHORT,    /* shorter than the vnet header or an Ethernet header */
    TAP_VNET_LONG,     /* longer than any frame a TAP carries */
    TAP_VNET_BAD_GSO,  /* unknown GSO type, no segment size, or a frame too short for its headers */
    TAP_VNET_BAD_CSUM, /* csum_start + csum_offset + 2 beyond the frame */
};

/**
 * Check the offload fields @v against a frame of @len bytes (Ethernet header
 * on, vnet header off). Returns TAP_VNET_OK or the reason to drop it.
 * Used both ways: receive (what the kernel wrote) and transmit (what a
 * peer process handed us, which the kernel would refuse with EINVAL or,
 * worse, accept and mis-segment).
 */
enum tap_verdict tap_vnet_check(const struct ipc_vnet *v, uint32_t len);

/**
 * A read of @nread bytes (vnet header included) completed with header @h:
 * convert the header into @v and check it. Returns the verdict; @v is
 * filled whenever the header was complete.
 */
enum tap_verdict tap_vnet_rx(const struct tap_vnet_hdr *h, uint32_t nread, struct ipc_vnet *v);

/** Fill the wire header @h from the metadata @v (transmit). */
void tap_vnet_to_wire(const struct ipc_vnet *v, struct tap_vnet_hdr *h);

/** Fill the metadata @v from the wire header @h (receive). */
void tap_vnet_from_wire(const struct tap_vnet_hdr *h, struct ipc_vnet *v);

/** Is @v a GSO packet (one the kernel will segment)? */
static inline int tap_vnet_is_gso(const struct ipc_vnet *v)
{
    return (v->gso_type & ~TAP_VNET_GSO_ECN) != TAP_VNET_GSO_NONE;
}

#endif
