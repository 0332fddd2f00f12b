// SPDX-License-Identifier: MIT
/*
 * bench/xdp_fwd_load.c: xdp_fwd_load OBJ PROG IFNAME...: attach the XDP
 * program PROG of OBJ (bench/xdp_fwd.bpf.o) to each IFNAME of the current
 * network namespace in native mode, and put each IFNAME in the object's
 * devmap tx_ports, the redirect targets of xdp_fwd. The programs stay
 * attached when this exits; `ip link set dev IFNAME xdp off` or deleting the
 * namespace removes them. Exit 0 on success, 111 on any failure, 100 usage.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: xdp_fwd_load OBJ PROG IFNAME...\n");
        return 100;
    }
    struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
    if (!obj || bpf_object__load(obj)) {
        fprintf(stderr, "xdp_fwd_load: cannot load %s\n", argv[1]);
        return 111;
    }
    struct bpf_program *prog = bpf_object__find_program_by_name(obj, argv[2]);
    int map = bpf_object__find_map_fd_by_name(obj, "tx_ports");
    if (!prog || map < 0) {
        fprintf(stderr, "xdp_fwd_load: %s has no program %s or no map tx_ports\n", argv[1], argv[2]);
        return 111;
    }
    for (int i = 3; i < argc; i++) {
        __u32 ifindex = if_nametoindex(argv[i]);
        int err = ifindex ? bpf_map_update_elem(map, &ifindex, &ifindex, BPF_ANY) : -1;
        if (!err)
            err = bpf_xdp_attach((int)ifindex, bpf_program__fd(prog), XDP_FLAGS_DRV_MODE, NULL);
        if (err) {
            fprintf(stderr, "xdp_fwd_load: cannot attach %s to %s\n", argv[2], argv[i]);
            return 111;
        }
    }
    bpf_object__close(obj);
    return 0;
}
