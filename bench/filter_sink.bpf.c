// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench/filter_sink.bpf.c: bench/filter's sink. The load (IPv4 UDP to port
 * 9) is dropped in the sink veth's XDP, where the veth has already counted
 * it (rx_packets counts every frame its NAPI polls), so that the sink's
 * receive costs CPU 0, which the generator shares, an XDP run a frame
 * rather than the stack's IP and UDP receive. Anything else (pings, ARP)
 * passes. tx_ports is only there for bench/xdp_fwd_load, which fills it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u32);
} tx_ports SEC(".maps");

SEC("xdp")
int sink_drop(struct xdp_md *ctx)
{
    __u8 *d = (__u8 *)(long)ctx->data;
    __u8 *end = (__u8 *)(long)ctx->data_end;

    if (d + 38 > end)
        return XDP_PASS;
    /* Ethernet IPv4, a 20-byte header, UDP, destination port 9 */
    if (d[12] != 0x08 || d[13] != 0x00 || d[14] != 0x45 || d[23] != 17 || d[36] != 0 || d[37] != 9)
        return XDP_PASS;
    return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
