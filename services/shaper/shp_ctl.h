/* SPDX-License-Identifier: MIT */
/*
 * services/shaper/shp_ctl.h: how rr-shaper lays out its stats region's
 * counters, and the control mailbox in it (docs/shaper.md):
 *   [0, SHP_P_N)            port-wide counters (shp_pctr_names)
 *   SHP_I_RATE              the port rate in effect, bit/s
 *   SHP_I_FULL_DROPS        (reserved: packets the driver's ring refused)
 *   SHP_I_CLASS0 + c*SHP_C_N + k   class c's counter k (shp_cctr_names)
 *   shp_ctl_base(nclasses) + SHP_CTL_*   the mailbox
 * Mailbox: the supervisor writes ctl.class (0: the port, c+1: class c),
 * ctl.rate, ctl.ceil (bit/s, 0: unchanged) and then ctl.seq (release); the
 * shaper applies the change, writes ctl.result (0 or an errno) and then
 * ctl.ack = ctl.seq (release). Each word has one writer.
 */
#ifndef SHP_CTL_H
#define SHP_CTL_H

#include "ipc/svc.h"
#include "services/shaper/shp.h"

#define SHP_I_RATE SHP_P_N
#define SHP_I_FULL_DROPS (SHP_P_N + 1)
#define SHP_I_CLASS0 (SHP_P_N + 2)

enum shp_ctl { SHP_CTL_SEQ, SHP_CTL_ACK, SHP_CTL_CLASS, SHP_CTL_RATE, SHP_CTL_CEIL, SHP_CTL_RESULT, SHP_CTL_N };

#define SHP_CTL_FIT ((IPC_SVC_MAX_CTR - SHP_I_CLASS0 - SHP_CTL_N) / SHP_C_N)
#define SHP_CTL_MAX_CLASSES (SHP_CTL_FIT < SHP_MAX_CLASSES ? SHP_CTL_FIT : SHP_MAX_CLASSES)
_Static_assert(SHP_CTL_MAX_CLASSES == SHP_MAX_CLASSES, "every class's counters fit the stats region");

static inline unsigned shp_ctl_base(unsigned nclasses)
{
    return SHP_I_CLASS0 + nclasses * SHP_C_N;
}

extern const char *const shp_pctr_names[SHP_P_N];
extern const char *const shp_cctr_names[SHP_C_N];
extern const char *const shp_ctl_names[SHP_CTL_N];

#endif
