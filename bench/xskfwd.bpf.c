/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * bench/xskfwd.bpf.c: bench/xskfwd's program for its multi-buffer mode
 * (xskfwd -s): every frame of the queue to the socket in the XSKMAP, as
 * libxdp's default program does, but frags-capable (xdp.frags), which
 * libxdp's default program of this distribution is not: without it, generic
 * XDP linearizes a sender's 64 KB TSO frames instead of handing them over as
 * multi-buffer frames (docs/drivers.md, "Multi-buffer frames").
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsks SEC(".maps");

SEC("xdp.frags")
int xskfwd_sg(struct xdp_md *ctx)
{
    return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
