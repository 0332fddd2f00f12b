// SPDX-License-Identifier: MIT
/*
 * tests/lib/bpf_progs.c: build/bin/tests/bpf_progs NAME prints the id of
 * every BPF program loaded on the host whose name is NAME, one a line.
 *
 * What the supervisor attaches to a device it does not keep an fd of (a
 * TAP's steering program: supervisor/setup.c) lives exactly as long as the
 * kernel holds it there; listing the live programs is how a test sees from
 * outside that it was attached, and that it went with its device. No
 * bpftool in the test image, and libbpf is already a dependency.
 *
 * Exit 0 (also when none match), 1 on an error other than a program that
 * went away between listing it and opening it.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2 || !argv[1][0]) {
        fprintf(stderr, "usage: bpf_progs NAME\n");
        return 2;
    }
    const char *name = argv[1];
    __u32 id = 0;
    for (;;) {
        int r = bpf_prog_get_next_id(id, &id);
        if (r < 0) {
            if (r == -ENOENT || errno == ENOENT)
                return 0;
            fprintf(stderr, "bpf_progs: listing programs after id %u: %s\n", id, strerror(-r));
            return 1;
        }
        int fd = bpf_prog_get_fd_by_id(id);
        if (fd < 0) {
            if (errno == ENOENT)
                continue; /* freed since it was listed */
            fprintf(stderr, "bpf_progs: program %u: %s\n", id, strerror(errno));
            return 1;
        }
        struct bpf_prog_info info;
        __u32 len = sizeof(info);
        memset(&info, 0, sizeof(info));
        r = bpf_obj_get_info_by_fd(fd, &info, &len);
        close(fd);
        if (r < 0) {
            fprintf(stderr, "bpf_progs: program %u's info: %s\n", id, strerror(errno));
            return 1;
        }
        if (strncmp(info.name, name, sizeof(info.name)) == 0)
            printf("%u\n", id);
    }
}
