// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * drivers/afxdp/steer.bpf.c: the XDP program on every AF_XDP port: bifurcated
 * steering between the router (the port's XSK) and the host's own stack.
 *
 * steer = forward-only (cfg[0] = 0): the router gets what it handles, IPv4,
 * ARP and IPv6, except frames for the host's own addresses on this
 * interface, which the kernel keeps (the supervisor fills host_addrs and
 * host_addrs6 with them at start):
 *   IPv4 with a destination in host_addrs          -> XDP_PASS (host)
 *   ARP whose target address is in host_addrs      -> XDP_PASS (host)
 *   IPv6 with a unicast destination in host_addrs6 -> XDP_PASS (host)
 *   a Neighbor Solicitation to a multicast group
 *     whose target is in host_addrs6               -> XDP_PASS (host)
 *   any other IPv4, ARP or IPv6 (multicast too:
 *     the router answers ND for its own addresses) -> the XSK (router)
 *   VLAN-tagged, on a port with VLAN ports (cfg[0]
 *     bit 2): the driver maps the tags               -> the XSK (router)
 *   anything else (LLDP, VLAN-tagged, ...)         -> XDP_PASS (host)
 * steer = all (cfg[0] bit 1): every frame to the XSK.
 * A queue with no socket in xsks passes its frames to the kernel.
 *
 * Two entry points, the same steering: rr_steer_sg (SEC "xdp.frags": it
 * takes frames in several buffers, so a generic-XDP port hands the socket
 * the sending stack's 64 KB TSO frames whole, as multi-buffer descriptors
 * that the driver chains) and rr_steer (SEC "xdp", for a kernel or device
 * that refuses frags programs). Only the first buffer's bytes are looked
 * at: the headers are there.
 *
 * counters (per CPU): 0 redirected, 1 passed (host address), 2 passed (not
 * IPv4/ARP), 3 malformed (too short; sent to the router, which counts it).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, __u32); /* IPv4 address, network byte order */
    __type(value, __u32);
} host_addrs SEC(".maps");

struct in6_key {
    __u32 w[4]; /* an IPv6 address as it is on the wire */
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, struct in6_key);
    __type(value, __u32);
} host_addrs6 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32); /* bit 1: steer = all; bit 2: tagged frames to the router (VLAN ports) */
} cfg SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 k)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &k);
    if (c)
        *c += 1;
}

static __always_inline int to_router(struct xdp_md *ctx)
{
    count(0);
    return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

static __always_inline int is_host(__u32 addr)
{
    return bpf_map_lookup_elem(&host_addrs, &addr) != 0;
}

static __always_inline int is_host6(const void *addr)
{
    struct in6_key k;
    __builtin_memcpy(&k, addr, sizeof(k));
    return bpf_map_lookup_elem(&host_addrs6, &k) != 0;
}

#define ND_NEIGHBOR_SOLICIT 135
#define ND_NS_TARGET 8 /* type, code, checksum, reserved: then the target */

static __always_inline int steer(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    __u32 k0 = 0;
    __u32 *cf = bpf_map_lookup_elem(&cfg, &k0);
    __u32 flags = cf ? *cf : 0;
    if (flags & 1)
        return to_router(ctx);

    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end) {
        count(3);
        return to_router(ctx);
    }
    if (eth->h_proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *ip = (void *)(eth + 1);
        if ((void *)(ip + 1) > end) {
            count(3);
            return to_router(ctx);
        }
        if (is_host(ip->daddr)) {
            count(1);
            return XDP_PASS;
        }
        return to_router(ctx);
    }
    if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
        /* Ethernet/IPv4 ARP: 8-byte header, sha[6] spa[4] tha[6] tpa[4]. */
        __u8 *p = (void *)(eth + 1);
        if ((void *)(p + 28) > end) {
            count(3);
            return to_router(ctx);
        }
        __u32 tpa;
        __builtin_memcpy(&tpa, p + 24, 4);
        if (is_host(tpa)) {
            count(1);
            return XDP_PASS;
        }
        return to_router(ctx);
    }
    if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6 = (void *)(eth + 1);
        if ((void *)(ip6 + 1) > end) {
            count(3);
            return to_router(ctx);
        }
        if (ip6->daddr.in6_u.u6_addr8[0] != 0xff) {
            if (is_host6(&ip6->daddr)) {
                count(1);
                return XDP_PASS;
            }
            return to_router(ctx);
        }
        /* Multicast: the router's unless it solicits a host address (an
         * extension header before ICMPv6 is not looked through: the
         * router gets that one, and ignores it). */
        if (ip6->nexthdr == IPPROTO_ICMPV6) {
            __u8 *icmp = (void *)(ip6 + 1);
            if ((void *)(icmp + ND_NS_TARGET + 16) <= end && icmp[0] == ND_NEIGHBOR_SOLICIT &&
                is_host6(icmp + ND_NS_TARGET)) {
                count(1);
                return XDP_PASS;
            }
        }
        return to_router(ctx);
    }
    if ((flags & 2) && (eth->h_proto == bpf_htons(ETH_P_8021Q) || eth->h_proto == bpf_htons(ETH_P_8021AD)))
        return to_router(ctx);
    count(2);
    return XDP_PASS;
}

SEC("xdp")
int rr_steer(struct xdp_md *ctx)
{
    return steer(ctx);
}

SEC("xdp.frags")
int rr_steer_sg(struct xdp_md *ctx)
{
    return steer(ctx);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
