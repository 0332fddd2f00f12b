/* SPDX-License-Identifier: MIT */
/*
 * supervisor/metrics.h: what the supervisor knows, for the operator's own
 * tools: `ringrouter metrics` (Prometheus's text exposition format,
 * supervisor/metrics.c), `ringrouter exporter` (the same over HTTP,
 * supervisor/exporter.c) and `ringrouter top` (rates from two snapshots,
 * supervisor/top.c). All three are clients: they ask the control socket
 * what `status --json`, `stats --json`, `link --json` and `stats --stages
 * --json` answer (one connection at a time: metrics_fetch.c) and turn it
 * into their own form, so the supervisor parses nothing new for them, and
 * a reader of its control_group may run them.
 */
#ifndef SUP_METRICS_H
#define SUP_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "supervisor/metrics_json.h"

/* The answers a snapshot is made of, asked in this order. */
enum mx_req { MX_STATUS, MX_STATS, MX_LINK, MX_STAGES, MX_NREQ };

/* An answer larger than this is refused: the supervisor's are far smaller. */
#define MX_ANSWER_MAX (16u << 20)
/* One request's whole exchange, connect to the close. */
#define MX_REQ_NS 2000000000ull

/*
 * A snapshot being fetched: one request after the other on one non-blocking
 * connection each (never two at once: the control socket has few slots for
 * readers), driven by mx_fetch_step from whoever polls its fd.
 */
struct mx_fetch {
    char sock[108];
    int fd;   /* the connection of the request under way, or -1 */
    int step; /* the request under way; MX_NREQ: done */
    size_t woff;
    char *buf;
    size_t len, cap;
    uint64_t deadline_ns;
    /* Per request: the answer's text after its head (NUL-terminated), and
     * whether the supervisor said OK (or FAILED: status with a failed
     * service, whose text is whole). NULL: refused (ERR) or not reached. */
    char *ans[MX_NREQ];
    size_t anslen[MX_NREQ];
    char err[200]; /* why the snapshot is incomplete ("" if it is not) */
};

/** Begin fetching a snapshot from the control socket at @sock. */
void mx_fetch_start(struct mx_fetch *f, const char *sock);
/** The fd to poll and its events (POLLIN or POLLOUT); -1 when done. */
int mx_fetch_poll(const struct mx_fetch *f, short *events);
/** Move on as far as possible without blocking; true once done. */
bool mx_fetch_step(struct mx_fetch *f, uint64_t now);
/** The same, blocking (poll) until done: `metrics` and `top`. */
void mx_fetch_all(struct mx_fetch *f, const char *sock);
/** Did the supervisor answer `status`? */
bool mx_fetch_ok(const struct mx_fetch *f);
void mx_fetch_free(struct mx_fetch *f);

/* The parsed answers of one snapshot (NULL where there is none). */
struct mx_snap {
    struct mx_jv *doc[MX_NREQ];
};
void mx_snap_parse(struct mx_snap *sn, const struct mx_fetch *f);
void mx_snap_free(struct mx_snap *sn);

/* The exposition: families of samples, printed each with its HELP and
 * TYPE, a series that comes twice summed into one. */
struct mx_desc {
    const char *name, *type, *help;
};
struct mx_out;
struct mx_out *mx_out_new(void);
/** A sample of family @d: @labels as mx_labels makes them ("" for none), @value a number's text. */
void mx_put(struct mx_out *o, const struct mx_desc *d, const char *labels, const char *value);
void mx_putf(struct mx_out *o, const struct mx_desc *d, const char *labels, double value);
/** Print every family with a sample, and free @o. */
void mx_out_write(struct mx_out *o, FILE *f);
void mx_out_free(struct mx_out *o);

/**
 * Labels `k1="v1",k2="v2"` into @buf from NULL-terminated pairs of names
 * and values; a NULL or empty value leaves its label out. Values are
 * escaped as the format wants (\\, \", \n) and made valid UTF-8.
 */
const char *mx_labels(char *buf, size_t len, ...);
/** @s escaped for a label value into @buf (mx_labels's rule). */
void mx_escape(char *buf, size_t len, const char *s);

/**
 * Is the counter @name a count of drops? By rule, not by list: a word
 * "drop", "drops" or "dropped" (or "drop6", IPv6's: the reason gets
 * "ipv6_") anywhere in it, split on '_'; @reason gets the other words
 * ("drop_ttl_exceeded": "ttl_exceeded", "rx_drop_short": "rx_short",
 * "full_drops": "full"; nothing else: "all").
 */
bool mx_drop_reason(const char *name, char *reason, size_t len);
/**
 * Is the counter @name a level rather than a count (a gauge)? Also by
 * rule: its first word is "pending" or "backlog", or its last is "held",
 * "max", "depth", "inflight", "stock", "rate", "ceil", "bps", "backlog"
 * or "kpkt".
 */
bool mx_is_gauge(const char *name);

/** Every metric of @sn (the supervisor's answers) into @o. */
void mx_render(struct mx_out *o, const struct mx_snap *sn);

/** A process's CPU time (user + system) from /proc, in seconds; -1 if gone. */
double mx_proc_cpu(pid_t pid);

/* The commands (supervisor/main.c). */
int sup_cmd_metrics(const char *sock);
int sup_cmd_exporter(const char *sock, const char *listen, const char *user);
int sup_cmd_top(const char *sock, bool json, bool once);

/* `ringrouter stats --rate SECONDS [--json] [--all]`: every counter a
 * second, from two `stats --json` answers SECONDS apart (stats_rate.c). */
int sup_cmd_stats_rate(const char *sock, const char *secs, bool json, bool all);

#endif
