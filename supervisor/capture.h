/* SPDX-License-Identifier: MIT */
/*
 * supervisor/capture.h: `ringrouter capture` (docs/capture.md). The
 * supervisor's half (capture.c): a capture region per driver, for the
 * router and per shaper (`ringrouter trace` uses them too: trace.h), the
 * `capture` request, and the lease that ends a capture when its
 * client goes. The client's half (capture_cli.c): the filter compiled with
 * libpcap, the regions drained into pcapng (pcapng.c).
 */
#ifndef SUP_CAPTURE_H
#define SUP_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ipc/shm.h"

struct sup;
struct sup_svc;
struct ipc_cap;

/** Set-up: the capture region of @v, if its kind captures (drivers, router, shapers). */
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

/* The most fds sup_send_fds sends at once: a trace's regions and its lease. */
#define SUP_SEND_FDS_MAX 40
/** Send @n fds (at most SUP_SEND_FDS_MAX) and one byte over @sock: 0 or -errno. */
int sup_send_fds(int sock, const int *fds, int n);

/* The clients' shared steps (capture_cli.c), @who naming the command in errors. */
/** Compile @filter ("" none) with libpcap into the request's word @word:
 * 0, or an exit status, libpcap's message printed. */
int sup_cap_compile(const char *who, const char *filter, unsigned snap, char *word, size_t cap);
/** Send @req, take the fds (at most @max) and the answer into @ans: the fd
 * count (the lease last) with the text after "OK", or a negated exit status,
 * the error printed. */
int sup_cap_ask(const char *who, const char *sockpath, const char *req, int *fds, int max, char *ans, size_t cap);

struct ipc_cap_insn;
/** The request's program word @word ("-": none) into @prog (IPC_CAP_BPF_MAX
 * room), checked (ipc_cap_bpf_check): true with *@nins, or false with the
 * answer, naming @cmd, in @f. */
bool sup_cap_prog(const char *cmd, const char *word, struct ipc_cap_insn *prog, uint32_t *nins, FILE *f);
/** Client: map the @n capture regions of @fds into @caps, each fd closed:
 * 0, or an exit status with the error printed, naming @who. */
int sup_cap_map(const char *who, const int *fds, int n, struct ipc_cap **caps);

/* The request's program: 8 bytes an instruction, in base64. */
size_t sup_b64_encode(const unsigned char *in, size_t n, char *out, size_t cap);
int sup_b64_decode(const char *in, unsigned char *out, size_t cap, size_t *n);

#endif
