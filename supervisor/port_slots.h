/* SPDX-License-Identifier: MIT */
/*
 * supervisor/port_slots.h: a port's runtime index, its slot, for its life
 * (supervisor/port_slots.c).
 */
#ifndef SUP_PORT_SLOTS_H
#define SUP_PORT_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/svc.h"
#include "supervisor/manifest.h"

/* What the state file keeps of the running ports' slots, for a supervisor
 * that adopts the services (adopt.c): each slot's port, "" when vacant,
 * and its trust zone. */
struct sup_slots {
    uint32_t n;
    char name[IPC_MAX_PORTS][SUP_NAME_MAX + 1];
    char zone_name[IPC_MAX_PORTS][SUP_NAME_MAX + 1];
    uint32_t zone[IPC_MAX_PORTS];
};

/*
 * @n (a manifest as loaded, in its file's order) laid out in the running
 * manifest @o's slots: each port @o has keeps its index, a port only @n
 * has takes a slot @o has vacant, else one after the last; a port @o has
 * and @n has not leaves its slot vacant (struct sup_port.vacant), and
 * vacant slots after the last port go. Every index naming a port follows
 * (routes, neighbours, shapers, classes, services, VLAN parents, the
 * filter's ports), and a port's trust zone is numbered as in @o. True,
 * with @why, when the slots would pass IPC_MAX_PORTS or memory runs out:
 * the reload is refused.
 */
bool sup_slots_layout(const struct sup_manifest *o, struct sup_manifest *n, char *why, size_t len);

/* @m's slots, as the state file keeps them. */
void sup_slots_save(const struct sup_manifest *m, struct sup_slots *out);

/* Adoption: @m, loaded from the file, laid out in the slots @in names.
 * -ESRCH when a port of @m has none, -EINVAL for a bad record, -ENOMEM. */
int sup_slots_restore(struct sup_manifest *m, const struct sup_slots *in);

struct sup;
/* Slot @i of the running manifest as a service's config blob has it
 * (port_cfg.c): a vacant one flagged IPC_PORT_F_VACANT. */
void sup_port_fill(const struct sup *s, int i, struct ipc_svc_port *o);

#endif
