/* SPDX-License-Identifier: MIT */
/*
 * services/router/gso.h: segmentation and checksums in software, for ports
 * that cannot take offloaded packets. A TAP port hands the router 64 KB TCP
 * (or UDP) segments with a partial checksum, described by the virtio-net
 * header in the buffer's metadata; a TAP egress writes them back as they
 * are, and the kernel finishes them. An AF_XDP socket sends frames as they
 * are: no segmentation, no checksum offload, one frame per packet. For such
 * a port the router finishes the job itself (what the kernel's
 * skb_gso_segment and skb_checksum_help do): each segment a single frame
 * with its own headers and complete checksums.
 */
#ifndef RT_GSO_H
#define RT_GSO_H

#include "rt.h"

/* virtio-net header flags and GSO types (linux/virtio_net.h). */
#define RT_VNET_F_NEEDS_CSUM 1u
#define RT_VNET_GSO_NONE 0u
#define RT_VNET_GSO_TCPV4 1u
#define RT_VNET_GSO_UDP 3u
#define RT_VNET_GSO_TCPV6 4u
#define RT_VNET_GSO_UDP_L4 5u
#define RT_VNET_GSO_ECN 0x80u

/* Segments one packet may become: 64 KB at an MSS of 536 bytes. */
#define RT_GSO_MAX 128u

/** Does @m need rt_gso() before it can leave through a port without offloads? */
static inline bool rt_gso_needed(const struct ipc_meta *m)
{
    return m->vnet.gso_type != RT_VNET_GSO_NONE || (m->vnet.flags & RT_VNET_F_NEEDS_CSUM) ||
           m->next != IPC_BUF_NONE;
}

/**
 * Turn IPv4 or IPv6 packet @b (its Ethernet header first, validated by the
 * router) into single-frame packets with complete checksums, in @out (at
 * most @max). A TCPv4, TCPv6 or UDP (L4) GSO packet becomes gso_size-byte
 * segments: headers copied; IPv4's total length, ID (+1 per segment) and
 * checksum, or IPv6's payload length (no extension headers: the upper
 * layer must follow the fixed header, as Linux sends it); TCP sequence
 * numbers and flags (FIN and PSH on the last segment only, CWR on the first)
 * or UDP length set per segment. A packet with only a partial checksum gets
 * it completed in place (@out[0] is @b). @b is consumed either way. Returns
 * the number of packets, or 0 when it was dropped and counted: a GSO type
 * we cannot segment (UFO), headers that do not add up, a segment that does
 * not fit one frame, more than @max segments, or an empty pool.
 */
unsigned rt_gso(struct rt_ctx *ctx, ipc_buf b, ipc_buf *out, unsigned max);

/**
 * Receive aggregates. An AF_XDP port in generic XDP mode with multi-buffer
 * sockets (docs/drivers.md) hands the router the frames the sending stack
 * built with TSO, up to 64 KB, whole, but without the GSO description a
 * TAP's virtio-net header gives: no segment size, and the TCP checksum is
 * still partial (the pseudo-header's sum only). Packet @b (IPv4 or IPv6, its
 * Ethernet header first, validated), longer than its ingress port's MTU: if
 * it is TCP with its headers in the first frame (IPv6: TCP right after the
 * fixed header), describe it as the TAP would: TCPV4 or TCPV6 GSO with
 * gso_size = @mtu (the smaller of the ingress and egress MTUs: never more
 * than the sender's segments) minus the IP and TCP header lengths, and a
 * partial checksum whose field holds the pseudo-header's sum, so that it is
 * segmented for an AF_XDP egress (rt_gso) or written whole to a TAP one.
 * Returns true if it did; false leaves the packet as it was, to the
 * oversize rules (ICMP, fragmentation).
 */
bool rt_gso_adopt(struct rt_ctx *ctx, ipc_buf b, unsigned mtu);

/**
 * Complete or keep the TCP or UDP checksum of packet @b (single frame or
 * chain; IPv4 not a fragment, or IPv6 with the upper layer right after the
 * fixed header) from a port whose frames may carry the sender's partial
 * checksums (IPC_PORT_F_RX_PARTIAL): a checksum that verifies is kept, a
 * field that holds just the pseudo-header's sum (what a stack with checksum
 * offload leaves) is completed (csum_rx_partial), anything else is left for
 * the receiver to refuse.
 */
void rt_csum_rx_fix(struct rt_ctx *ctx, ipc_buf b);

#endif
