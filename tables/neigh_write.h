/* SPDX-License-Identifier: MIT */
/*
 * tables/neigh_write.h: the supervisor's half of the neighbour table
 * (tables/neigh.h): create the region, write the manifest's static entries.
 */
#ifndef TABLES_NEIGH_WRITE_H
#define TABLES_NEIGH_WRITE_H

#include "tables/neigh.h"

/** Create a table of @cap entries (rounded up to a power of two). */
int neigh_create(const char *name, uint32_t cap, struct neigh_table *nt, int *fd, struct ipc_err *err);

/** Add or overwrite a static entry. Returns 0, -ENOSPC or -EINVAL. */
int neigh_add_static(struct neigh_table *nt, uint32_t ip, const uint8_t mac[6], uint16_t port);

#endif
