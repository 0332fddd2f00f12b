/* SPDX-License-Identifier: MIT */
/*
 * supervisor/upgrade.h: `ringrouter upgrade SERVICE [--binary PATH]`, a
 * service moved to a new binary under traffic (supervisor/upgrade.c).
 */
#ifndef SUP_UPGRADE_H
#define SUP_UPGRADE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct sup;
struct sup_svc;
struct sup_ctl_wait;

#define SUP_BUILD_ID_MAX 41 /* 20 bytes in hex, and the NUL */

/* An upgrade in progress, in its service (struct sup_svc). */
enum sup_upg_phase { SUP_UPG_NONE, SUP_UPG_STANDBY, SUP_UPG_HANDOVER };

struct sup_upgrade {
    enum sup_upg_phase phase;
    bool rolled_back; /* the new instance died: the old binary is back */
    char old_binary[300];
    char old_build[SUP_BUILD_ID_MAX];
    pid_t old_pid;
    pid_t new_pid;
    unsigned sb_deaths; /* the service's sb_deaths when the new standby was spawned */
    uint64_t t0_ns, deadline_ns, handover_ns;
    uint64_t spawned_ns;  /* the new standby exec'd: the supervisor's own set-up is over */
    int64_t t0_real_us;   /* the request, wall clock: the steps' log line places them in time */
    char why[160]; /* the rollback's reason */
};

/**
 * The request: checks SERVICE and PATH (an absolute path to an executable
 * regular file whose layout stamp is ours), starts PATH as the standby and
 * leaves @w pending; or writes why not to @f and returns false.
 */
bool sup_ctl_upgrade(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w);

/**
 * A pending upgrade: once the new instance is ready (or the upgrade was
 * rolled back, or timed out and was), write the answer to @f, set *@ok,
 * clear @w->pending and return true; false while it runs.
 */
bool sup_upgrade_poll(struct sup *s, struct sup_ctl_wait *w, uint64_t now, FILE *f, bool *ok);

/**
 * From the policy, when a running instance has died: if it was an
 * upgrade's new one, put the old binary back before the restart, which then
 * starts the old one.
 */
void sup_upgrade_died(struct sup *s, struct sup_svc *v);

/** The ELF build id of the file at @path, in hex; "" if it has none. */
void sup_build_id(const char *path, char *hex, size_t size);

#endif
