/* SPDX-License-Identifier: MIT */
/*
 * supervisor/adopt.h: the state file a supervisor leaves for its successor,
 * and the successor's adoption of the running services (adopt.c). setup.c
 * calls the sup_adopt_* steps in place of creating each object while
 * s->adopt is set.
 */
#ifndef SUP_ADOPT_H
#define SUP_ADOPT_H

struct sup;
struct sup_svc;
struct ipc_err;

/* run_dir/state: written when a service becomes ready, removed at a clean exit. */
void sup_state_save(struct sup *s);
void sup_state_remove(struct sup *s);

/* Is there something to adopt? 1: yes, s->adopt set; 0: no state file;
 * -errno: there was, and it cannot be adopted: its services are ended and
 * the file removed (@err says why); start afresh. */
int sup_adopt_begin(struct sup *s, struct ipc_err *err);
/* Adoption failed half-way: end the services, remove the file, forget. */
void sup_adopt_fail(struct sup *s);
/* A copy of fd @target of service @svc (its index), or -errno with @err. */
int sup_adopt_fd(struct sup *s, int svc, int target, const char *what, struct ipc_err *err);
/* Service @v (index @idx): its eventfd, stats region and (a shaper) mailbox,
 * from its fds @fd_wake, @fd_stats, @fd_mbox. */
int sup_adopt_svc(struct sup *s, struct sup_svc *v, int idx, int fd_wake, int fd_stats, int fd_mbox,
                  struct ipc_err *err);
/* Ring @r (registered in s->rings, its ends set) from service @holder's fd @fd. */
int sup_adopt_ring(struct sup *s, int r, int holder, int fd, struct ipc_err *err);
/* The pool, from the first service's fd @fd_pool. */
int sup_adopt_pool(struct sup *s, int fd_pool, struct ipc_err *err);
/* Zone @z's pool header from the state file, checked against the pool
 * attached in sup.zone_pool[z] (supervisor/zones.c). */
int sup_adopt_zone_hdr(struct sup *s, unsigned z, struct ipc_err *err);
/* The old FIBs' routes (the router's fds @fd_fib, @fd_fib6) into s->fib and
 * s->fib6, which setup made from the manifest. */
int sup_adopt_routes(struct sup *s, int router, int fd_fib, int fd_fib6, struct ipc_err *err);
/* Every object is ours: the services are UP, watched once the loop runs. */
void sup_adopt_commit(struct sup *s);

/* `upgrade supervisor`, once its answer is out: save the state and exec
 * s->upgrade_self_binary as `up` with our manifest; the new image adopts the
 * services (they are still its children). Returns only if the exec failed,
 * having logged it: this supervisor carries on. */
void sup_reexec(struct sup *s);

#endif
