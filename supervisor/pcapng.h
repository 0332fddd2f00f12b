/* SPDX-License-Identifier: MIT */
/*
 * supervisor/pcapng.h: the few pcapng blocks `ringrouter capture` writes
 * (draft-ietf-opsawg-pcapng): a Section Header, an Interface Description
 * per port (its name, snap length, nanosecond timestamps) and an Enhanced
 * Packet Block per frame, with its direction and, for a drop, the reason as
 * a comment. Host byte order, as the Section Header's magic tells readers.
 */
#ifndef SUP_PCAPNG_H
#define SUP_PCAPNG_H

#include <stdint.h>
#include <stdio.h>

#define PCAPNG_LINKTYPE_ETHERNET 1
enum { PCAPNG_DIR_NONE = 0, PCAPNG_DIR_IN = 1, PCAPNG_DIR_OUT = 2 };

/* Each returns 0, or -1 when the write failed (errno set). */
int pcapng_shb(FILE *f);
int pcapng_idb(FILE *f, const char *name, uint32_t snaplen);
int pcapng_epb(FILE *f, uint32_t ifid, uint64_t ts_ns, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
               unsigned dir, const char *comment);

#endif
