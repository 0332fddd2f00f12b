/* SPDX-License-Identifier: MIT */
/*
 * services/router/pkt.h: what only the router reads in a packet, on top of
 * the shared header accessors (ipc/pkt.h): the layout of ARP for IPv4 over
 * Ethernet (RFC 826), the one ARP the router speaks.
 */
#ifndef RT_PKT_H
#define RT_PKT_H

#include "ipc/pkt.h"

#define RT_ARP_HTYPE 0u     /* hardware type */
#define RT_ARP_PTYPE 2u     /* protocol type: an ethertype */
#define RT_ARP_HW_LEN 4u    /* hardware address length */
#define RT_ARP_PROTO_LEN 5u /* protocol address length */
#define RT_ARP_OP 6u
#define RT_ARP_SHA 8u  /* sender hardware address */
#define RT_ARP_SPA 14u /* sender protocol address */
#define RT_ARP_THA 18u /* target hardware address */
#define RT_ARP_TPA 24u /* target protocol address */
#define RT_ARP_LEN 28u
#define RT_IPV4_ALEN 4u /* the protocol address length ARP carries for IPv4 */
#define RT_ARP_HTYPE_ETHER 1u
#define RT_ARP_OP_REQUEST 1u
#define RT_ARP_OP_REPLY 2u

#endif
