/* SPDX-License-Identifier: MIT */
/*
 * supervisor/reload_impl.h: what reload.c (the request and the job that
 * applies it over the event loop's passes) and reload_plan.c (the
 * comparison of the running manifest with the new one) share.
 */
#ifndef SUP_RELOAD_IMPL_H
#define SUP_RELOAD_IMPL_H

#include "supervisor/reload.h"

/* A command for a service's mailbox: a neighbour change for the router, a
 * rate for a shaper. One at a time, each waiting for its ack. */
struct rl_op {
    int svc;
    bool neigh;
    bool v6; /* the neighbour is IPv6: ip6, not ip */
    int nop; /* enum neigh_op */
    uint32_t ip;
    uint8_t ip6[16];
    int port;
    uint8_t mac[6];
    char w[7][32]; /* the shaper's: `set PORT [CLASS] rate R [ceil C]`, as the command line has it */
    int nw;
};

/* A service to restart, or (fresh) to start: it came with a new port. */
struct rl_restart {
    bool on, fired, fresh;
    pid_t old;
    uint64_t t0;
    char why[200];
};

enum rl_phase { RL_RESTARTS, RL_REMOVE, RL_OPS, RL_DONE };

struct sup_reload {
    enum rl_phase phase;
    char cmd[24]; /* what asked: "reload", "addr add", "link set" */
    bool conn; /* a connection waits for the answer; else (SIGHUP) the log alone has it */
    bool ok;
    FILE *out; /* the answer, as it grows (open_memstream into text) */
    char *text;
    size_t len;
    struct rl_op *ops;
    size_t nops, cap, next;
    bool sent;      /* ops[next] is with its service */
    uint64_t since; /* when ops[next] became the current one */
    int gave_up;    /* a service not up within RL_OP_WAIT_NS: its later commands fail at once; -1: none */
    struct sup_ctl_wait w;
    struct rl_restart rs[SUP_MAX_SERVICES];
    unsigned changes, failed;
    /* Removed ports: their services (gone, by index in s->svcs) run on the
     * manifest before the reload (old) until they are released. */
    struct sup_manifest *old;
    bool gone[SUP_MAX_SERVICES];
    int ngone;
    /* Rings that go while both their ends stay (a shaper added: the router's
     * ring to the port's driver), released with the removed ports' once the
     * instances that used them are gone. */
    bool retired[SUP_MAX_RINGS];
    int nretired;
    pid_t router0;    /* the router's pid when the reload began: it must be gone before the rings are */
    uint64_t gone_t0; /* when RL_REMOVE began */
};

/* One comparison of the running manifest (@o) with the new one (@n). */
struct rl_ctx {
    struct sup *s;
    const struct sup_manifest *o, *n;
    FILE *f;                /* one line per change */
    struct sup_reload *job; /* NULL: a dry run (check --diff), nothing applied */
    struct rl_restart *rs;  /* restarts and why, by index in s->svcs: the job's, or the dry run's own */
    unsigned changes, failed;
    unsigned overrides; /* rates `shaper set` made, which the reload leaves in effect */
};

/* reload_plan.c */

/* Every change, one line each to c->f; with c->job, the routes and persist
 * applied at once, the mailbox commands queued and the restarts marked. */
void sup_reload_walk(struct rl_ctx *c);
/* s->svcs' index of the service @name, or -1 (a service a new port brings, before it is made). */
int sup_reload_svc(const struct sup *s, const char *name);
/* "; " between parts of a refusal or a restart's reason, while they fit. */
void sup_reload_why(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Service @svc restarts (unless it is new), and why, added to its reasons. */
void sup_reload_restart(struct rl_ctx *c, const char *svc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A FIB change for prefix @pfx that failed with @ret: said, and counted. */
void sup_reload_route_failed(struct rl_ctx *c, const char *pfx, int ret);

/* reload_ports.c */

/* @n laid out in @o's port slots (port_slots.c), before anything else
 * compares them; true, with @why, when it cannot be: the reload is refused. */
bool sup_reload_slots(const struct sup_manifest *o, struct sup_manifest *n, char *why, size_t len);
/* What only a new `up` can change, in @why ("ports changed (...)"); false
 * if nothing. Before anything is applied, on @n laid out by
 * sup_reload_slots. TAP ports added and any port removed are not refused:
 * reload.c makes and releases them; nor a port's address, address6, mtu
 * and ra (sup_reload_walk_live). */
bool sup_reload_refused(const struct sup *s, const struct sup_manifest *o, const struct sup_manifest *n, char *why,
                        size_t len);
/* What the setup found out and wrote into the running manifest (an AF_XDP
 * device's own MAC) carried over into @n, where @n does not set it either. */
void sup_reload_carry(const struct sup_manifest *o, struct sup_manifest *n);
/* Ports added (their services start, the router restarts) and removed. */
void sup_reload_walk_ports(struct rl_ctx *c);
/* What is left in the FIBs through a removed port: out. */
void sup_reload_withdraw(struct rl_ctx *c);
/* A port's address, address6, mtu and ra: its connected networks moved in
 * the FIBs, the router (and for an mtu its TAP drivers) restarted. */
void sup_reload_walk_live(struct rl_ctx *c);

/* reload.c */

/* Apply @nm (taken: freed here either way) as a reload does, @cmd naming
 * the request in the answer ("reload", "addr add", ...); @diff: only say.
 * False, with nothing changed, when it is refused. */
bool sup_reload_manifest(struct sup *s, struct sup_manifest *nm, const char *cmd, bool diff, FILE *f,
                         struct sup_ctl_wait *w);

/* live.c */

/* Each TAP port of @n whose mtu @o does not have: its device's MTU set now,
 * before anything else is applied. On a refusal, those already set go
 * back, the answer names the port and the reason, and it returns false. */
bool sup_live_mtu(struct sup *s, const struct sup_manifest *o, const struct sup_manifest *n, const char *cmd, FILE *f);

#endif
