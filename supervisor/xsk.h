/* SPDX-License-Identifier: MIT */
/*
 * supervisor/xsk.h: the supervisor's privileged AF_XDP setup for ports with
 * driver = afxdp (supervisor/xsk.c, xsk_ns.c, xsk_napi.c): the XSK on the
 * port's netdev queue with the pool's frame area as its UMEM, and the
 * steering XDP program
 * (drivers/afxdp/steer.bpf.c) loaded with libxdp. The supervisor keeps the
 * socket and the program for the life of the router, so a restarted driver
 * maps the same rings again.
 */
#ifndef SUP_XSK_H
#define SUP_XSK_H

#include "supervisor/sup.h"

/**
 * Create the XSK of port @port's queue @queue (in the port's netns) and
 * register the UMEM. For queue 0, also attach the steering program in the
 * mode xdp_mode asks for and put the host's addresses on the interface in
 * its address map; a later queue binds in the mode queue 0 got. Each socket
 * goes into the program's XSKMAP at its queue. On success *fd is the socket
 * (kept by the supervisor, passed to the driver as its dev_fd) and *kown the
 * pool owner id of the buffers lent to it (IPC_OWNER_KERNEL | the socket's
 * number: two queues of a port must not share one, or a restarted driver
 * could take the other queue's buffers for stale ones of its own). Queue 0
 * must be opened first. Returns 0 or -errno with @err naming the port.
 */
int sup_xsk_open(struct sup *s, int port, int queue, int *fd, uint16_t *kown, struct ipc_err *err);
/* Adoption (adopt.c): the socket of @port's @queue from driver service @drv's fd @fd_dev. */
int sup_xsk_adopt(struct sup *s, int port, int queue, int drv, int fd_dev, int *fd, uint16_t *kown,
                  struct ipc_err *err);

/**
 * Can port @port's driver busy-poll: does each of its sockets name a NAPI
 * (on Linux 6.13+, where a socket takes it at bind)? Not on a veth: the
 * supervisor has logged why. True for a port with no AF_XDP socket.
 */
bool sup_xsk_busy_poll_ok(const struct sup *s, int port);

/**
 * At shutdown, once every driver has stopped: detach the XDP programs, close
 * the sockets, and return every buffer lent to the kernel to the pool, so the
 * census can demand that all are free. Idempotent.
 */
void sup_xsk_release(struct sup *s);

/**
 * A reload removed port @port (@p: its section, from the manifest before),
 * and its drivers have stopped: as sup_xsk_release for that port's sockets
 * alone. Returns how many buffers the kernel held.
 */
uint32_t sup_xsk_release_port(struct sup *s, int port, const struct sup_port *p);

/* The steering program's counters (drivers/afxdp/steer.bpf.c), by index. */
#define SUP_XDP_NCTR 4
const char *sup_xsk_counter_name(int i);

/**
 * The counters of port @port's steering program, summed over the CPUs:
 * frames redirected to the router's sockets, passed to the host (its own
 * address; anything not IPv4 or ARP), too short to steer. Returns 0, or
 * -ENOENT for a port without a program.
 */
int sup_xsk_counters(const struct sup *s, int port, uint64_t c[SUP_XDP_NCTR]);

#endif
