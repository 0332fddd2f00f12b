// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench/xdp_fwd.bpf.c: the "xdp" mode of bench/forward, an IPv4 router in
 * XDP: bpf_fib_lookup in the kernel's FIB and neighbour table, TTL decrement
 * with an incremental checksum, MAC rewrite, and a redirect through a devmap
 * (tx_ports, keyed by ifindex; bench/xdp_fwd_load fills it). What the lookup
 * cannot forward (no neighbour yet, TTL about to expire, not IPv4, a frame
 * for the dut itself) goes to the kernel with XDP_PASS, as the kernel's
 * samples/bpf/xdp_fwd does.
 *
 * xdp_pass: XDP_PASS for everything. bench/forward puts it on the veth
 * endpoints of the XDP and AF_XDP modes: a veth delivers frames redirected
 * into it (ndo_xdp_xmit) only when its peer has an XDP program.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef AF_INET
#define AF_INET 2
#endif

struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} tx_ports SEC(".maps");

/* RFC 1624: the checksum after the TTL (high byte of the TTL/protocol word)
 * drops by one. */
static __always_inline void ttl_dec(struct iphdr *ip)
{
    __u32 c = ip->check;
    c += bpf_htons(0x0100);
    ip->check = (__u16)(c + (c >= 0xFFFF));
    ip->ttl--;
}

SEC("xdp")
int xdp_fwd(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = data + sizeof(*eth);
    struct bpf_fib_lookup fib = {};

    if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
        return XDP_PASS;
    if (ip->ihl != 5 || ip->ttl <= 1)
        return XDP_PASS; /* options or TTL expiry: the kernel's business */

    fib.family = AF_INET;
    fib.tos = ip->tos;
    fib.l4_protocol = ip->protocol;
    fib.tot_len = bpf_ntohs(ip->tot_len);
    fib.ipv4_src = ip->saddr;
    fib.ipv4_dst = ip->daddr;
    fib.ifindex = ctx->ingress_ifindex;
    if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS)
        return XDP_PASS;

    ttl_dec(ip);
    __builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
    __builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
    return bpf_redirect_map(&tx_ports, fib.ifindex, XDP_PASS);
}

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
    (void)ctx;
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
