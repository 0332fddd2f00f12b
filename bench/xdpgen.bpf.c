// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench/xdpgen.bpf.c: the program bench/trainsend.c runs in the kernel's
 * XDP traffic generator (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES) with
 * -x: each frame, built once in a page of the run's page pool, leaves
 * through the devmap's one entry (the generator's veth) as an XDP frame, as
 * a NIC's driver hands frames on, so the veth behind it receives no socket's
 * skb to copy before its XDP program (bench/README.md, "The generator").
 * cfg[0] is the number of flows: frame i gets UDP source port 10000 + i mod
 * flows (cfg[1] counts the frames); cfg[2] the veth's ifindex, which the
 * generator's frames name as their ingress. Any other frame passes: the
 * program is also attached to the namespace's loopback, only so that each
 * run finds it in the kernel's XDP dispatcher (trainsend.c, xdp_gen_load).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} tx_port SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 3);
    __type(key, __u32);
    __type(value, __u32);
} cfg SEC(".maps");

SEC("xdp")
int xdpgen(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    __u8 *sport = (__u8 *)data + 14 + 20; /* Ethernet, IPv4 without options */
    __u32 k_flows = 0, k_seq = 1, k_dev = 2;
    __u32 *flows = bpf_map_lookup_elem(&cfg, &k_flows);
    __u32 *seq = bpf_map_lookup_elem(&cfg, &k_seq);
    __u32 *dev = bpf_map_lookup_elem(&cfg, &k_dev);

    if (!dev || ctx->ingress_ifindex != *dev)
        return XDP_PASS;
    if ((void *)(sport + 2) > end || !flows || !seq)
        return XDP_ABORTED;
    if (*flows > 1) {
        __u32 p = 10000 + *seq % *flows;
        *seq += 1;
        sport[0] = (__u8)(p >> 8);
        sport[1] = (__u8)p;
    }
    return bpf_redirect_map(&tx_port, 0, 0);
}

char _license[] SEC("license") = "GPL";
