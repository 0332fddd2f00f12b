/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh6_write.h: the supervisor's half of the IPv6 neighbour table
 * (tables/neigh6.h): create the region, write the manifest's static entries.
 */
#ifndef TABLES_NEIGH6_WRITE_H
#define TABLES_NEIGH6_WRITE_H

#include "tables/neigh6.h"

/** Create a table of @cap entries (rounded up to a power of two). */
int neigh6_create(const char *name, uint32_t cap, struct neigh6_table *nt, int *fd, struct ipc_err *err);

/** Add or overwrite a static entry for @ip (16 bytes). Returns 0, -ENOSPC or -EINVAL. */
int neigh6_add_static(struct neigh6_table *nt, const uint8_t *ip, const uint8_t mac[6], uint16_t port);

#endif
