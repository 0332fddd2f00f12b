/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest_impl.h: what the manifest loader's rooms share and
 * nothing else includes. The reader (manifest_ini.c) turns text into
 * section headers and "key = value" pairs; the schema (manifest_schema.c)
 * knows the section types and their keys; the value parsers
 * (manifest_value.c) turn one value into C data; the checks
 * (manifest_check.c) look at the whole manifest; manifest.c runs them in
 * that order and owns the one error message. They talk through struct
 * sup_pctx, which lives on sup_manifest_load_string's stack.
 */
#ifndef SUP_MANIFEST_IMPL_H
#define SUP_MANIFEST_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "supervisor/manifest.h"

/* The longest line, comment and surrounding blanks removed: what libinih's
 * 200-byte line buffer held ("\r\n\0" aside) when it read manifests, kept
 * so that no manifest that loaded then is refused now. */
#define SUP_LINE_MAX 197

/* What a frame costs besides the MTU's worth of payload: the Ethernet
 * header, which neither the MTU nor a shaper's overhead counts. */
#define SUP_ETH_HLEN 14u

/* A shaper's burst, at most (256 MiB): the key's range, and the cap on the
 * default computed from the rate, so that the two cannot drift apart. */
#define SUP_BURST_MAX (256u << 20)

/* The range of every rate key (shapers and classes): 1kbit..1tbit. */
#define SUP_RATE_MIN 1000
#define SUP_RATE_MAX 1000000000000

struct sup_pctx;
struct sup_key;

/* A value parser: writes the parsed value to @dst or reports an error. */
typedef int sup_parse_fn(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst);

struct sup_word {
    const char *word;
    int value;
};

struct sup_key {
    const char *name;
    sup_parse_fn *parse;
    size_t off, size;             /* of the field in its section's struct */
    int64_t min, max;             /* integers, sizes, rates, durations, name lengths */
    const struct sup_word *words; /* enums */
    const char *def;              /* default in manifest syntax; NULL: required, computed or none */
    const char *expect;           /* "an IPv4 prefix": what an error says was expected */
    unsigned drivers;             /* port keys: SUP_DRIVER_* it belongs to; 0: any */
    bool required;
    bool multi; /* may be given more than once (each adds to a list): address6 */
};

struct sup_section_type {
    const char *type;
    unsigned nnames; /* words after the type: [class PORT NAME] has 2 */
    const char *usage;
    const struct sup_key *keys;
    size_t nkeys;
};

enum { SUP_SEC_ROUTER, SUP_SEC_PORT, SUP_SEC_ROUTE, SUP_SEC_NEIGH, SUP_SEC_SHAPER, SUP_SEC_CLASS, SUP_SEC_SERVICE,
       SUP_SEC_ROUTES, SUP_SEC_FILTER };

extern const struct sup_section_type sup_sections[];

/* The parser context: the only mutable state, and it lives on the stack. */
struct sup_pctx {
    const char *file;
    const char *pos; /* the rest of the input */
    unsigned line;
    struct sup_manifest *m;
    struct sup_manifest_err *err;
    int rc; /* the first error; parsing stops there */
    const struct sup_section_type *cur;
    size_t cur_idx;
    char cur_section[SUP_SECTION_MAX];
    struct sup_service *svc; /* explicit [service] sections, merged at the end */
    size_t nsvc;
};

/* ---- errors (manifest.c) ---- */

void sup_append(char *buf, size_t len, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Report an error at @line (0: none), in [@section] (NULL: none), for @key
 * (NULL: none); only the first is kept. Returns pc->rc. */
int sup_fail(struct sup_pctx *pc, unsigned line, const char *section, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Out of memory: no line, no section; returns -ENOMEM. */
int sup_oom(struct sup_pctx *pc);

/* A value error in the section being parsed, at the current line. */
#define sup_vfail(pc, k, ...) sup_fail((pc), (pc)->line, (pc)->cur_section, (k)->name, __VA_ARGS__)

/* ---- the reader (manifest_ini.c) ---- */

/* Read pc->pos to its end, or to the first error, handing each section
 * header to sup_section() and each key to sup_set_key(). */
int sup_ini_read(struct sup_pctx *pc);

/* ---- the schema (manifest_schema.c) ---- */

/* A header's words (type and names), normalised as @sec ("port wan"),
 * @seclen long before any truncation: open that section. */
int sup_section(struct sup_pctx *pc, char **words, size_t nwords, const char *sec, size_t seclen);

/* "key = value" in the open section (there is one). */
int sup_set_key(struct sup_pctx *pc, const char *name, const char *value);

/* The objects of a section type (SUP_SEC_*): how many, and one of them.
 * The router is always one; [service] sections are pc->svc. */
size_t sup_nobjs(struct sup_pctx *pc, int type);
void *sup_obj(struct sup_pctx *pc, int type, size_t idx);

/* Fill an object with the defaults of its section's table. */
void sup_defaults(struct sup_pctx *pc, const struct sup_section_type *t, void *obj);

/* The first required key that @src does not set is an error. */
int sup_missing(struct sup_pctx *pc, const struct sup_section_type *t, const struct sup_src *src);

/* ---- the whole-manifest checks (manifest_check.c) ---- */

/* After the last line: references, overlaps, computed defaults, services. */
int sup_check(struct sup_pctx *pc);
/* [routes] (manifest_routes.c): a source named. */
int sup_check_routes(struct sup_pctx *pc);
/* A [route] with nexthop lines (manifest_routes.c): each member resolved and checked. */
int sup_check_route_mp(struct sup_pctx *pc, struct sup_route *r);
/* [filter] (filter_manifest.c): what the filter's place on the path needs. */
int sup_check_filter(struct sup_pctx *pc);
/* [filter] ports = NAME[, NAME]... (filter_manifest.c) */
sup_parse_fn sup_p_filter_ports;

/* ---- value parsers and helpers (manifest_value.c) ---- */

int sup_int(const char *v, int64_t *out);
uint32_t sup_mask(unsigned len);
bool sup_in(const struct sup_prefix *net, uint32_t addr);
char *sup_addr_str(uint32_t a, char *buf, size_t len);
char *sup_prefix_str(uint32_t a, unsigned plen, char *buf, size_t len);
int sup_c_ident(int c);
/* Why no router port or next hop may have address @a (RFC 1812 5.3.7, RFC 6890), or NULL. */
const char *sup_martian(uint32_t a);

#define ADDR(a) sup_addr_str((a), (char[16]){0}, 16)
#define PREFIX(a, l) sup_prefix_str((a), (l), (char[20]){0}, 20)
#define RATE(b) sup_rate_format((b), (char[32]){0}, 32)

sup_parse_fn sup_p_u32, sup_p_i32, sup_p_pow2, sup_p_frame, sup_p_enum, sup_p_bool, sup_p_ident, sup_p_ifname,
    sup_p_netns, sup_p_user, sup_p_uids, sup_p_path, sup_p_binary, sup_p_addr, sup_p_host_prefix, sup_p_mac,
    sup_p_port_mac, sup_p_rate, sup_p_size, sup_p_duration, sup_p_offloads, sup_p_match, sup_p_rt_table, sup_p_fpm_addr,
    sup_p_vlan, sup_p_port_name, sup_p_route_nexthop;

/* ---- driver groups (group_manifest.c) ---- */

/* Each group: its ports' keys that a group's driver cannot serve, its
 * name, its size. Before the services are built. */
int sup_check_groups(struct sup_pctx *pc);
/* The port [service driver-@name] names (*@group false) or the first port
 * of the group @name (*@group true); -1 for neither, or with the error
 * reported for a port in a group (it has no driver of its own). */
int sup_group_service_ref(struct sup_pctx *pc, const struct sup_service *s, const char *name, bool *group);

/* ---- VLAN sub-interfaces (vlan_manifest.c) ---- */

/* Before the ports' own checks: each VLAN port's parent, tags and keys,
 * what it takes from its parent, and the parents' `untagged`. */
int sup_check_vlans(struct sup_pctx *pc);

/* ---- IPv6 (manifest_v6.c) ---- */

/* address6 (the whole port: it appends), a route's via (the whole route:
 * IPv4 or IPv6 as its prefix is). */
sup_parse_fn sup_p_address6, sup_p_route_via;

/* A class's match term src or dst with an IPv6 PREFIX (it holds a ':'). */
int sup_match_prefix6(struct sup_pctx *pc, const struct sup_key *k, const char *term, const char *arg,
                      struct sup_prefix6 *out);

/* [route PREFIX] and [neigh ADDRESS] headers naming IPv6 (they hold a ':'). */
int sup_init_route6(struct sup_pctx *pc, const char *sec, const char *name, struct sup_route *r);
int sup_init_neigh6(struct sup_pctx *pc, const char *sec, const char *name, struct sup_neigh *n);

/* Whole-manifest checks: each port's IPv6 networks (overlaps, the derived
 * link-local address), then IPv6 routes and neighbours. */
int sup_check_ports6(struct sup_pctx *pc);
int sup_check_route6(struct sup_pctx *pc, struct sup_route *r);
int sup_check_neigh6(struct sup_pctx *pc, struct sup_neigh *n);
int sup_port_ref(struct sup_pctx *pc, const struct sup_src *src, unsigned line, const char *key, const char *name);

#endif /* SUP_MANIFEST_IMPL_H */
