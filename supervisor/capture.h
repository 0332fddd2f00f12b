/* SPDX-License-Identifier: MIT */
/*
 * supervisor/capture.h: `ringrouter capture` (docs/capture.md). The
 * supervisor's half (capture.c): a capture region per driver and for the
 * router, the `capture` request, and the lease that ends a capture when its
 * client goes. The client's half (capture_cli.c): the filter compiled with
 * libpcap, the regions drained into pcapng (pcapng.c).
 */
#ifndef SUP_CAPTURE_H
#define SUP_CAPTURE_H

#include <stdbool.h>
#include <stdio.h>

#include "ipc/shm.h"

struct sup;
struct sup_svc;

/** Set-up: the capture region of @v, if its kind captures (drivers, router). */
int sup_capture_create(struct sup *s, struct sup_svc *v, struct ipc_err *err);
void sup_capture_release(struct sup *s, struct sup_svc *v);

/**
 * The request "capture PORT DIR SNAPLEN PROG" from the client on @conn_fd
 * (a root one: ctl.c lets no other ask). Sends the regions and the lease
 * over @conn_fd (SCM_RIGHTS), then answers in @f.
 */
bool sup_ctl_capture(struct sup *s, char **w, int nw, FILE *f, int conn_fd);

/** Each tick: a capture whose client has gone (its lease closed) stops. */
void sup_capture_tick(struct sup *s);

/** `ringrouter capture ...`: the client (argv[0] is "capture"). */
int sup_capture_main(int argc, char **argv);

/* The request's program: 8 bytes an instruction, in base64. */
size_t sup_b64_encode(const unsigned char *in, size_t n, char *out, size_t cap);
int sup_b64_decode(const char *in, unsigned char *out, size_t cap, size_t *n);

#endif
