/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest.c: reads a manifest into struct sup_manifest and
 * rejects anything doubtful before the supervisor touches the system. It
 * owns the key tables (names, kinds, ranges and defaults of every key: the
 * docs in docs/manifest.md follow them), the value parsers, and the checks
 * that need the whole file (references between sections, overlapping
 * networks, class rates against the port rate). Its only peer is libinih,
 * which splits lines into sections, keys and values.
 *
 * How libinih is used. Debian's libinih fixes several behaviours when the
 * library is built, or in process-wide globals (inline comments, multi-line
 * values, the line buffer size, whether the handler gets a line number).
 * Rather than depend on them, or write those globals, every line goes
 * through our own reader first (sup_read_line): it counts lines, strips
 * comments and leading blanks (so no line is ever a continuation line),
 * checks the syntax with messages better than "error on line N", and opens
 * sections itself, which also catches sections with no keys. libinih then
 * only splits "key = value" and trims.
 */
#include "supervisor/manifest.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ini.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/pool.h"

#define SUP_FILE_MAX (1u << 20)
#define SUP_ETH_HLEN 14u
#define SUP_XDP_HEADROOM 256u /* AF_XDP receives at this offset into a frame (ipc/pool.h) */

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
    size_t off;
    int64_t min, max;             /* integers, sizes, rates, durations, name lengths */
    const struct sup_word *words; /* enums */
    const char *def;              /* default in manifest syntax; NULL: required, computed or none */
    const char *expect;           /* "an IPv4 prefix": what an error says was expected */
    unsigned drivers;             /* port keys: SUP_DRIVER_* it belongs to; 0: any */
    bool required;
};

struct sup_section_type {
    const char *type;
    unsigned nnames; /* words after the type: [class PORT NAME] has 2 */
    const char *usage;
    const struct sup_key *keys;
    size_t nkeys;
};

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

/* ---- errors ---- */

static void sup_append(char *buf, size_t len, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void sup_append(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
    va_list ap;
    if (*n >= len)
        return;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *n, len - *n, fmt, ap);
    va_end(ap);
    if (w > 0)
        *n += (size_t)w;
}

/* Only the first error is kept: later ones are usually its consequences. */
static int sup_fail(struct sup_pctx *pc, unsigned line, const char *section, const char *key,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int sup_fail(struct sup_pctx *pc, unsigned line, const char *section, const char *key,
                    const char *fmt, ...)
{
    if (pc->rc)
        return pc->rc;
    struct sup_manifest_err *e = pc->err;
    size_t n = 0;
    char msg[SUP_MANIFEST_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line)
        sup_append(e->msg, sizeof e->msg, &n, "%s:%u: ", pc->file, line);
    else
        sup_append(e->msg, sizeof e->msg, &n, "%s: ", pc->file);
    if (section)
        sup_append(e->msg, sizeof e->msg, &n, "[%s] ", section);
    if (key)
        sup_append(e->msg, sizeof e->msg, &n, "%s: ", key);
    sup_append(e->msg, sizeof e->msg, &n, "%s", msg);
    e->line = line;
    pc->rc = -EINVAL;
    return pc->rc;
}

/* A value error in the section being parsed, at the current line. */
#define sup_vfail(pc, k, ...) sup_fail((pc), (pc)->line, (pc)->cur_section, (k)->name, __VA_ARGS__)

/* ---- lexical helpers ---- */

/* Bounded copy; callers have checked the length, this only makes sure. */
static void sup_copy(char *dst, size_t len, const char *src)
{
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Integer: optional '-', decimal digits, nothing else. -ERANGE on overflow. */
static int sup_int(const char *v, int64_t *out)
{
    const char *p = v;
    bool neg = *p == '-', over = false;
    uint64_t acc = 0;
    if (neg)
        p++;
    if (!isdigit((unsigned char)*p))
        return -EINVAL;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (acc > (UINT64_MAX - d) / 10)
            over = true;
        else
            acc = acc * 10 + d;
    }
    if (*p)
        return -EINVAL;
    if (over || acc > (uint64_t)INT64_MAX)
        return -ERANGE;
    *out = neg ? -(int64_t)acc : (int64_t)acc;
    return 0;
}

/* Dotted quad, strict: four parts of 1-3 digits, no leading zeros, <= 255. */
static const char *sup_ipv4_prefix_end(const char *p, uint32_t *out)
{
    uint32_t a = 0;
    for (int i = 0; i < 4; i++) {
        if (i && *p++ != '.')
            return NULL;
        if (!isdigit((unsigned char)*p))
            return NULL;
        unsigned part = 0, nd = 0;
        const char *s = p;
        while (isdigit((unsigned char)*p) && nd < 4) {
            part = part * 10 + (unsigned)(*p++ - '0');
            nd++;
        }
        if (nd > 3 || part > 255 || (nd > 1 && *s == '0'))
            return NULL;
        a = a << 8 | part;
    }
    *out = a;
    return p;
}

bool sup_parse_addr(const char *v, uint32_t *out)
{
    const char *e = sup_ipv4_prefix_end(v, out);
    return e && *e == '\0';
}

bool sup_parse_prefix(const char *v, struct sup_prefix *out)
{
    const char *p = sup_ipv4_prefix_end(v, &out->addr);
    if (!p || *p++ != '/' || !isdigit((unsigned char)*p))
        return false;
    if (p[0] == '0' && p[1] != '\0')
        return false;
    unsigned len = 0, nd = 0;
    while (isdigit((unsigned char)*p) && nd < 3) {
        len = len * 10 + (unsigned)(*p++ - '0');
        nd++;
    }
    if (*p || len > 32)
        return false;
    out->len = (uint8_t)len;
    return true;
}

static uint32_t sup_mask(unsigned len)
{
    return len ? (uint32_t)(0xffffffffull << (32 - len)) : 0;
}

static bool sup_in(const struct sup_prefix *net, uint32_t addr)
{
    return ((addr ^ net->addr) & sup_mask(net->len)) == 0;
}

static char *sup_addr_str(uint32_t a, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
    return buf;
}

static char *sup_prefix_str(uint32_t a, unsigned plen, char *buf, size_t len)
{
    char s[16];
    snprintf(buf, len, "%s/%u", sup_addr_str(a, s, sizeof s), plen);
    return buf;
}

#define ADDR(a) sup_addr_str((a), (char[16]){0}, 16)
#define PREFIX(a, l) sup_prefix_str((a), (l), (char[20]){0}, 20)

/* Levenshtein distance, for "did you mean" on unknown keys. */
static unsigned sup_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned row[64];
    if (la > 62 || lb > 62)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned up = row[j];
            unsigned cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            unsigned best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* ---- units ---- */

struct sup_unit {
    const char *suffix;
    uint64_t mult;
};

/* Rates in bits per second, as tc spells them: "bit" units count bits,
 * "bps" units count bytes. A bare number is refused: 100 what? */
static const struct sup_unit sup_rate_units[] = {
    {"bit", 1},           {"kbit", 1000},          {"mbit", 1000000},
    {"gbit", 1000000000}, {"tbit", 1000000000000}, {"bps", 8},
    {"kbps", 8000},       {"mbps", 8000000},       {"gbps", 8000000000},
    {"tbps", 8000000000000}, {NULL, 0},
};
#define SUP_RATE_UNITS "bit, kbit, mbit, gbit, tbit, bps, kbps, mbps, gbps or tbps"

/* Sizes in bytes; k and m are binary, as in tc. */
static const struct sup_unit sup_size_units[] = {
    {"", 1}, {"b", 1}, {"k", 1024}, {"kb", 1024}, {"m", 1048576}, {"mb", 1048576}, {NULL, 0},
};
#define SUP_SIZE_UNITS "b, k, kb, m or mb"

/* Durations in milliseconds; a bare number is seconds. */
static const struct sup_unit sup_time_units[] = {
    {"", 1000}, {"ms", 1}, {"s", 1000}, {NULL, 0},
};
#define SUP_TIME_UNITS "ms or s"

enum { SUP_UNIT_OK, SUP_UNIT_SYNTAX, SUP_UNIT_NONE, SUP_UNIT_UNKNOWN, SUP_UNIT_RANGE, SUP_UNIT_FRACTION };

/* NUMBER[.FRACTION]UNIT, computed exactly in integers. */
static int sup_units(const char *v, const struct sup_unit *units, uint64_t *out, const char **unit)
{
    const char *p = v;
    uint64_t ip = 0, fp = 0, fscale = 1;
    bool over = false;
    if (!isdigit((unsigned char)*p))
        return SUP_UNIT_SYNTAX;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (ip > (UINT64_MAX - d) / 10)
            over = true;
        else
            ip = ip * 10 + d;
    }
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return SUP_UNIT_SYNTAX;
        for (; isdigit((unsigned char)*p); p++) {
            if (fscale >= 1000000000)
                return SUP_UNIT_SYNTAX;
            fp = fp * 10 + (unsigned)(*p - '0');
            fscale *= 10;
        }
    }
    *unit = p;
    const struct sup_unit *u = units;
    for (; u->suffix; u++)
        if (strcmp(u->suffix, p) == 0)
            break;
    if (!u->suffix)
        return *p ? SUP_UNIT_UNKNOWN : SUP_UNIT_NONE;
    if (over || (u->mult && ip > UINT64_MAX / u->mult))
        return SUP_UNIT_RANGE;
    /* fp < fscale <= 1e9 and mult <= 8e12: the product needs 128 bits. */
    unsigned __int128 frac = (unsigned __int128)fp * u->mult;
    if (frac % fscale)
        return SUP_UNIT_FRACTION;
    uint64_t whole = ip * u->mult, add = (uint64_t)(frac / fscale);
    if (whole > UINT64_MAX - add)
        return SUP_UNIT_RANGE;
    *out = whole + add;
    return SUP_UNIT_OK;
}

char *sup_rate_format(uint64_t bits, char *buf, size_t len)
{
    static const struct sup_unit order[] = {
        {"tbit", 1000000000000}, {"gbit", 1000000000}, {"mbit", 1000000}, {"kbit", 1000}, {"bit", 1},
    };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (bits && bits % order[i].mult == 0) {
            snprintf(buf, len, "%llu%s", (unsigned long long)(bits / order[i].mult), order[i].suffix);
            return buf;
        }
    }
    snprintf(buf, len, "0bit");
    return buf;
}

#define RATE(b) sup_rate_format((b), (char[32]){0}, 32)

/* ---- value parsers ---- */

static int sup_range_err(struct sup_pctx *pc, const struct sup_key *k, const char *v)
{
    return sup_vfail(pc, k, "%s is out of range %lld..%lld", v, (long long)k->min, (long long)k->max);
}

static int sup_p_u32(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int64_t x;
    int r = sup_int(v, &x);
    if (r == -EINVAL)
        return sup_vfail(pc, k, "\"%s\" is not an integer", v);
    if (r || x < k->min || x > k->max)
        return sup_range_err(pc, k, v);
    *(uint32_t *)dst = (uint32_t)x;
    return 0;
}

static int sup_p_i32(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int64_t x;
    int r = sup_int(v, &x);
    if (r == -EINVAL)
        return sup_vfail(pc, k, "\"%s\" is not an integer", v);
    if (r || x < k->min || x > k->max)
        return sup_range_err(pc, k, v);
    *(int32_t *)dst = (int32_t)x;
    return 0;
}

static int sup_p_pow2(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int r = sup_p_u32(pc, k, v, dst);
    uint32_t x = *(uint32_t *)dst;
    if (r == 0 && (x & (x - 1)))
        return sup_vfail(pc, k, "%s is not a power of two", v);
    return r;
}

/* A frame size: one of a few values, so the range is a list. */
static int sup_p_frame(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int64_t x;
    int r = sup_int(v, &x);
    if (r == -EINVAL)
        return sup_vfail(pc, k, "\"%s\" is not an integer", v);
    if (r || !ipc_pool_frame_ok((uint32_t)x) || x != (int64_t)(uint32_t)x)
        return sup_vfail(pc, k, "%s is not a power of two from 2048 to %u", v, IPC_FRAME_MAX);
    *(uint32_t *)dst = (uint32_t)x;
    return 0;
}

static void sup_words_list(const struct sup_word *w, char *buf, size_t len)
{
    size_t n = 0;
    for (; w->word; w++)
        sup_append(buf, len, &n, "%s%s", n ? (w[1].word ? ", " : " or ") : "", w->word);
}

static int sup_p_enum(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    for (const struct sup_word *w = k->words; w->word; w++) {
        if (strcmp(w->word, v) == 0) {
            *(int *)dst = w->value;
            return 0;
        }
    }
    char list[160];
    sup_words_list(k->words, list, sizeof list);
    return sup_vfail(pc, k, "\"%s\" is not %s", v, list);
}

static const struct sup_word sup_bool_words[] = {{"yes", 1}, {"no", 0}, {NULL, 0}};
static const struct sup_word sup_on_off_words[] = {{"on", 1}, {"off", 0}, {NULL, 0}};

static int sup_p_bool(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int x;
    int r = sup_p_enum(pc, k, v, &x);
    if (r == 0)
        *(bool *)dst = x != 0;
    return r;
}

/* Names: @ok says which characters are allowed; k->max is the length. */
static int sup_p_chars(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst,
                       int (*ok)(int c), const char *what)
{
    size_t n = strlen(v);
    bool good = n >= (size_t)k->min && n <= (size_t)k->max;
    for (const char *p = v; good && *p; p++)
        good = ok((unsigned char)*p);
    if (good && n && (strcmp(v, ".") == 0 || strcmp(v, "..") == 0))
        good = false;
    if (!good)
        return sup_vfail(pc, k, "\"%s\" is not %s", v, what);
    memcpy(dst, v, n + 1);
    return 0;
}

static int sup_c_ident(int c)
{
    return (c >= 'a' && c <= 'z') || isdigit(c) || c == '_' || c == '-';
}

/* The kernel refuses '/', ':' and whitespace in a netdev name; we also
 * refuse the rest of the shell's specials, which no one uses on purpose. */
static int sup_c_ifname(int c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '.' || c == '@';
}

static int sup_c_netns(int c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '.';
}

static int sup_c_path(int c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/';
}

static int sup_p_ident(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    char what[64];
    snprintf(what, sizeof what, "a name of 1 to %lld of a-z 0-9 _ -", (long long)k->max);
    return sup_p_chars(pc, k, v, dst, sup_c_ident, what);
}

static int sup_p_ifname(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    return sup_p_chars(pc, k, v, dst, sup_c_ifname,
                       "a network interface name (1 to 15 of A-Z a-z 0-9 _ - . @)");
}

static int sup_p_netns(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    return sup_p_chars(pc, k, v, dst, sup_c_netns,
                       "a network namespace name (1 to 63 of A-Z a-z 0-9 _ - .)");
}

/* User and group names as useradd(8) takes them by default; "" = automatic. */
static int sup_p_user(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    bool good = strlen(v) <= SUP_USER_MAX && (*v == '\0' || *v == '_' || islower((unsigned char)*v));
    for (const char *p = v; good && *p; p++)
        good = islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_' || *p == '-';
    if (!good)
        return sup_vfail(pc, k, "\"%s\" is not a user or group name", v);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

static int sup_p_path(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int r = sup_p_chars(pc, k, v, dst, sup_c_path, "an absolute path of at most 80 of A-Z a-z 0-9 _ - . /");
    if (r == 0 && v[0] != '/')
        return sup_vfail(pc, k, "\"%s\" is not an absolute path", v);
    return r;
}

/* An executable: a name in the directory of ringrouter's own binary, or an
 * absolute path. Tests use it to put a stand-in in a service's place, and an
 * upgrade to point a service at a new build. */
static int sup_p_binary(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int r = sup_p_chars(pc, k, v, dst, sup_c_path,
                        "a program name or an absolute path of at most 80 of A-Z a-z 0-9 _ - . /");
    if (r == 0 && v[0] != '/' && strchr(v, '/'))
        return sup_vfail(pc, k, "\"%s\" is neither a program name nor an absolute path", v);
    return r;
}

static int sup_p_addr(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    if (!sup_parse_addr(v, dst))
        return sup_vfail(pc, k, "\"%s\" is not an IPv4 address", v);
    return 0;
}

/* Addresses no router port may have (RFC 1812 5.3.7 and RFC 6890). */
static const char *sup_martian(uint32_t a)
{
    if ((a >> 24) == 0)
        return "in 0.0.0.0/8 (this network)";
    if ((a >> 24) == 127)
        return "a loopback address";
    if ((a >> 28) == 14)
        return "a multicast address";
    if ((a >> 28) == 15)
        return "a reserved address (240.0.0.0/4)";
    return NULL;
}

/* A port address: a host on its network, not the network or broadcast. */
static int sup_p_host_prefix(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_prefix p;
    if (!sup_parse_prefix(v, &p))
        return sup_vfail(pc, k, "\"%s\" is not an IPv4 prefix", v);
    if (p.len == 0)
        return sup_vfail(pc, k, "%s has prefix length 0, expected 1..32", v);
    const char *why = sup_martian(p.addr);
    if (why)
        return sup_vfail(pc, k, "%s is %s", v, why);
    uint32_t host = p.addr & ~sup_mask(p.len);
    if (p.len < 31 && host == 0)
        return sup_vfail(pc, k, "%s is the network address of %s, expected a host address", v,
                         PREFIX(p.addr & sup_mask(p.len), p.len));
    if (p.len < 31 && host == ~sup_mask(p.len))
        return sup_vfail(pc, k, "%s is the broadcast address of %s, expected a host address", v,
                         PREFIX(p.addr & sup_mask(p.len), p.len));
    *(struct sup_prefix *)dst = p;
    return 0;
}

static int sup_p_mac(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint8_t mac[6];
    const char *p = v;
    for (int i = 0; i < 6; i++) {
        if (i && *p++ != ':')
            goto bad;
        if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]))
            goto bad;
        char hex[3] = {p[0], p[1], 0};
        mac[i] = (uint8_t)strtoul(hex, NULL, 16);
        p += 2;
    }
    if (*p)
        goto bad;
    if (mac[0] & 1)
        return sup_vfail(pc, k, "%s is a multicast address, expected a unicast MAC address", v);
    if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
        return sup_vfail(pc, k, "%s is all zeros, expected a unicast MAC address", v);
    memcpy(dst, mac, 6);
    return 0;
bad:
    return sup_vfail(pc, k, "\"%s\" is not a MAC address (xx:xx:xx:xx:xx:xx)", v);
}

/* A port's MAC also sets has_mac, so this key's parser gets the whole port. */
static int sup_p_port_mac(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_port *port = dst;
    int r = sup_p_mac(pc, k, v, port->mac);
    if (r == 0)
        port->has_mac = true;
    return r;
}

static int sup_unit_err(struct sup_pctx *pc, const struct sup_key *k, const char *v, int r,
                        const char *unit, const char *what, const char *units)
{
    switch (r) {
    case SUP_UNIT_NONE:
        return sup_vfail(pc, k, "\"%s\" has no unit, expected %s (%s)", v, what, units);
    case SUP_UNIT_UNKNOWN:
        return sup_vfail(pc, k, "\"%s\" has an unknown unit \"%s\", expected %s", v, unit, units);
    default:
        return sup_vfail(pc, k, "\"%s\" is not %s", v, what);
    }
}

static int sup_p_rate(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint64_t x;
    const char *unit = "";
    int r = sup_units(v, sup_rate_units, &x, &unit);
    if (r == SUP_UNIT_FRACTION)
        return sup_vfail(pc, k, "%s is not a whole number of bits per second", v);
    if (r != SUP_UNIT_OK && r != SUP_UNIT_RANGE)
        return sup_unit_err(pc, k, v, r, unit, "a rate such as 100mbit", SUP_RATE_UNITS);
    if (r == SUP_UNIT_RANGE || x < (uint64_t)k->min || x > (uint64_t)k->max)
        return sup_vfail(pc, k, "%s is out of range %s..%s", v, RATE((uint64_t)k->min),
                         RATE((uint64_t)k->max));
    *(uint64_t *)dst = x;
    return 0;
}

static int sup_p_size(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint64_t x;
    const char *unit = "";
    int r = sup_units(v, sup_size_units, &x, &unit);
    if (r == SUP_UNIT_FRACTION)
        return sup_vfail(pc, k, "%s is not a whole number of bytes", v);
    if (r != SUP_UNIT_OK && r != SUP_UNIT_RANGE)
        return sup_unit_err(pc, k, v, r, unit, "a size in bytes such as 64k", SUP_SIZE_UNITS);
    if (r == SUP_UNIT_RANGE || x < (uint64_t)k->min || x > (uint64_t)k->max)
        return sup_vfail(pc, k, "%s is out of range %lld..%lld bytes", v, (long long)k->min,
                         (long long)k->max);
    *(uint32_t *)dst = (uint32_t)x;
    return 0;
}

static int sup_p_duration(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint64_t x;
    const char *unit = "";
    int r = sup_units(v, sup_time_units, &x, &unit);
    if (r == SUP_UNIT_FRACTION)
        return sup_vfail(pc, k, "%s is not a whole number of milliseconds", v);
    if (r != SUP_UNIT_OK && r != SUP_UNIT_RANGE)
        return sup_unit_err(pc, k, v, r, unit, "a duration such as 10s or 500ms", SUP_TIME_UNITS);
    if (r == SUP_UNIT_RANGE || x < (uint64_t)k->min || x > (uint64_t)k->max)
        return sup_vfail(pc, k, "%s is out of range %lldms..%llds", v, (long long)k->min,
                         (long long)k->max / 1000);
    *(uint32_t *)dst = (uint32_t)x;
    return 0;
}

/* Split @v at commas into trimmed items; calls @fn on each. An empty item
 * ("csum,,tso4", a trailing comma) is an error, not something to skip. */
static int sup_each_item(struct sup_pctx *pc, const struct sup_key *k, const char *v,
                         int (*fn)(struct sup_pctx *, const struct sup_key *, const char *, void *),
                         void *dst)
{
    char buf[256];
    size_t len = strlen(v);
    if (len >= sizeof buf)
        return sup_vfail(pc, k, "value is longer than %zu characters", sizeof buf - 1);
    memcpy(buf, v, len + 1);
    for (char *item = buf, *next; item; item = next) {
        char *comma = strchr(item, ',');
        next = comma ? comma + 1 : NULL;
        if (comma)
            *comma = '\0';
        while (isspace((unsigned char)*item))
            item++;
        char *e = item + strlen(item);
        while (e > item && isspace((unsigned char)e[-1]))
            *--e = '\0';
        if (*item == '\0')
            return sup_vfail(pc, k, "\"%s\" has an empty item", v);
        int r = fn(pc, k, item, dst);
        if (r)
            return r;
    }
    return 0;
}

static const struct sup_word sup_offload_words[] = {
    {"csum", SUP_OFFLOAD_CSUM}, {"tso4", SUP_OFFLOAD_TSO4}, {"tso6", SUP_OFFLOAD_TSO6},
    {"uso", SUP_OFFLOAD_USO},   {"none", 0},                {NULL, 0},
};

static int sup_offload_item(struct sup_pctx *pc, const struct sup_key *k, const char *item, void *dst)
{
    uint32_t *set = dst;
    for (const struct sup_word *w = sup_offload_words; w->word; w++) {
        if (strcmp(w->word, item) != 0)
            continue;
        if (w->value == 0) {
            /* "none" only alone: seen once, and nothing before or after it */
            if (*set & 0x80000000u || *set)
                return sup_vfail(pc, k, "none cannot be combined with other offloads");
            *set |= 0x80000000u;
            return 0;
        }
        if (*set & 0x80000000u)
            return sup_vfail(pc, k, "none cannot be combined with other offloads");
        if (*set & (uint32_t)w->value)
            return sup_vfail(pc, k, "%s is listed twice", item);
        *set |= (uint32_t)w->value;
        return 0;
    }
    return sup_vfail(pc, k, "\"%s\" is not one of csum, tso4, tso6, uso or none", item);
}

static int sup_p_offloads(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint32_t set = 0;
    int r = sup_each_item(pc, k, v, sup_offload_item, &set);
    if (r)
        return r;
    set &= ~0x80000000u;
    /* The kernel refuses segmentation offloads without checksum offload. */
    if ((set & (SUP_OFFLOAD_TSO4 | SUP_OFFLOAD_TSO6 | SUP_OFFLOAD_USO)) && !(set & SUP_OFFLOAD_CSUM))
        return sup_vfail(pc, k, "tso4, tso6 and uso need csum");
    *(uint32_t *)dst = set;
    return 0;
}

/* match = TERM [, TERM]...; TERM = dscp N | proto tcp|udp|icmp|N |
 * sport P[-P] | dport P[-P] | src PREFIX | dst PREFIX. */
static int sup_port_range(const char *v, uint16_t *lo, uint16_t *hi)
{
    char buf[16];
    int64_t a, b;
    const char *dash = strchr(v, '-');
    if (strlen(v) >= sizeof buf)
        return -1;
    memcpy(buf, v, strlen(v) + 1);
    if (dash) {
        buf[dash - v] = '\0';
        if (sup_int(buf, &a) || sup_int(buf + (dash - v) + 1, &b))
            return -1;
    } else if (sup_int(buf, &a)) {
        return -1;
    } else {
        b = a;
    }
    if (a < 0 || b > 65535 || a > b)
        return -1;
    *lo = (uint16_t)a;
    *hi = (uint16_t)b;
    return 0;
}

static int sup_match_term(struct sup_pctx *pc, const struct sup_key *k, const char *term, void *dst)
{
    static const struct sup_word fields[] = {
        {"dscp", SUP_MATCH_DSCP}, {"proto", SUP_MATCH_PROTO}, {"sport", SUP_MATCH_SPORT},
        {"dport", SUP_MATCH_DPORT}, {"src", SUP_MATCH_SRC},  {"dst", SUP_MATCH_DST},
        {NULL, 0},
    };
    struct sup_match *m = dst;
    char field[16];
    size_t n = strcspn(term, " \t");
    const char *arg = term + n;
    while (isspace((unsigned char)*arg))
        arg++;
    const struct sup_word *w = fields;
    if (n < sizeof field) {
        memcpy(field, term, n);
        field[n] = '\0';
        for (; w->word; w++)
            if (strcmp(w->word, field) == 0)
                break;
    } else {
        w = &fields[6];
    }
    if (!w->word)
        return sup_vfail(pc, k, "\"%s\" is not a match term: expected dscp, proto, sport, dport, src or dst",
                         term);
    if (*arg == '\0')
        return sup_vfail(pc, k, "\"%s\" needs a value", term);
    if (m->fields & (uint32_t)w->value)
        return sup_vfail(pc, k, "%s is given twice", w->word);
    m->fields |= (uint32_t)w->value;
    int64_t x;
    switch (w->value) {
    case SUP_MATCH_DSCP:
        if (sup_int(arg, &x) || x < 0 || x > 63)
            return sup_vfail(pc, k, "\"%s\": expected a DSCP value 0..63", term);
        m->dscp = (uint8_t)x;
        return 0;
    case SUP_MATCH_PROTO:
        if (strcmp(arg, "tcp") == 0)
            x = 6;
        else if (strcmp(arg, "udp") == 0)
            x = 17;
        else if (strcmp(arg, "icmp") == 0)
            x = 1;
        else if (sup_int(arg, &x) || x < 0 || x > 255)
            return sup_vfail(pc, k, "\"%s\": expected tcp, udp, icmp or a protocol number 0..255", term);
        m->proto = (uint8_t)x;
        return 0;
    case SUP_MATCH_SPORT:
    case SUP_MATCH_DPORT: {
        uint16_t *lo = w->value == SUP_MATCH_SPORT ? &m->sport_lo : &m->dport_lo;
        uint16_t *hi = w->value == SUP_MATCH_SPORT ? &m->sport_hi : &m->dport_hi;
        if (sup_port_range(arg, lo, hi))
            return sup_vfail(pc, k, "\"%s\": expected a port 0..65535 or a range LOW-HIGH", term);
        return 0;
    }
    default: {
        struct sup_prefix *p = w->value == SUP_MATCH_SRC ? &m->src : &m->dst;
        if (!sup_parse_prefix(arg, p))
            return sup_vfail(pc, k, "\"%s\": expected an IPv4 prefix", term);
        if (p->addr & ~sup_mask(p->len))
            return sup_vfail(pc, k, "\"%s\": %s has host bits set, did you mean %s?", term, arg,
                             PREFIX(p->addr & sup_mask(p->len), p->len));
        return 0;
    }
    }
}

static int sup_p_match(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_match m = {0};
    int r = sup_each_item(pc, k, v, sup_match_term, &m);
    if (r)
        return r;
    if ((m.fields & (SUP_MATCH_SPORT | SUP_MATCH_DPORT)) && (m.fields & SUP_MATCH_PROTO) && m.proto != 6 &&
        m.proto != 17)
        return sup_vfail(pc, k, "sport and dport need proto tcp or udp");
    *(struct sup_match *)dst = m;
    return 0;
}

/* ---- the key tables: names, kinds, ranges and defaults ---- */

#define KEY(s, f) .off = offsetof(s, f)

static const struct sup_key sup_router_keys[] = {
    [SUP_ROUTER_NAME] = {"name", sup_p_ident, KEY(struct sup_router, name), 1, 32, .def = "ringrouter"},
    [SUP_ROUTER_POOL_BUFFERS] = {"pool_buffers", sup_p_u32, KEY(struct sup_router, pool_buffers), 1024, 4194304,
                                 .def = "16384"},
    [SUP_ROUTER_FRAME_SIZE] = {"frame_size", sup_p_frame, KEY(struct sup_router, frame_size), 2048, IPC_FRAME_MAX,
                               .def = "2048"},
    [SUP_ROUTER_RING_SIZE] = {"ring_size", sup_p_pow2, KEY(struct sup_router, ring_size), 64, 65536,
                              .def = "1024"},
    /* "": the dedicated user "ringrouter" if it exists, else "nobody" */
    [SUP_ROUTER_USER] = {"user", sup_p_user, KEY(struct sup_router, user), .def = ""},
    /* "": the user's primary group */
    [SUP_ROUTER_GROUP] = {"group", sup_p_user, KEY(struct sup_router, group), .def = ""},
    [SUP_ROUTER_RUN_DIR] = {"run_dir", sup_p_path, KEY(struct sup_router, run_dir), 1, SUP_PATH_MAX,
                            .def = "/run/ringrouter"},
    [SUP_ROUTER_ICMP_RATE] = {"icmp_rate", sup_p_u32, KEY(struct sup_router, icmp_rate), 0, 1000000,
                              .def = "1000"},
    [SUP_ROUTER_ICMP_BURST] = {"icmp_burst", sup_p_u32, KEY(struct sup_router, icmp_burst), 1, 100000,
                               .def = "50"},
    /* off: each stage hook is one predictable branch; on: a TSC read per stage */
    [SUP_ROUTER_STAGES] = {"stages", sup_p_bool, KEY(struct sup_router, stages), .words = sup_on_off_words,
                           .def = "off"},
};

static const struct sup_word sup_driver_words[] = {{"tap", SUP_DRIVER_TAP}, {"afxdp", SUP_DRIVER_AFXDP}, {NULL, 0}};
static const struct sup_word sup_xdp_mode_words[] = {
    {"auto", SUP_XDP_AUTO}, {"zerocopy", SUP_XDP_ZEROCOPY}, {"copy", SUP_XDP_COPY}, {"skb", SUP_XDP_SKB}, {NULL, 0},
};
static const struct sup_word sup_steer_words[] = {
    {"forward-only", SUP_STEER_FORWARD_ONLY}, {"all", SUP_STEER_ALL}, {NULL, 0},
};

static const struct sup_key sup_port_keys[] = {
    [SUP_PORT_DRIVER] = {"driver", sup_p_enum, KEY(struct sup_port, driver), .words = sup_driver_words,
                         .expect = "tap or afxdp", .required = true},
    [SUP_PORT_IFNAME] = {"ifname", sup_p_ifname, KEY(struct sup_port, ifname), 1, SUP_IFNAME_MAX,
                         .expect = "a network interface name", .required = true},
    [SUP_PORT_ADDRESS] = {"address", sup_p_host_prefix, KEY(struct sup_port, address),
                          .expect = "an IPv4 prefix such as 10.1.0.1/24", .required = true},
    [SUP_PORT_MTU] = {"mtu", sup_p_u32, KEY(struct sup_port, mtu), 68, 65535, .def = "1500"},
    [SUP_PORT_NETNS] = {"netns", sup_p_netns, KEY(struct sup_port, netns), 1, SUP_NETNS_MAX},
    [SUP_PORT_MAC] = {"mac", sup_p_port_mac, .off = 0},
    [SUP_PORT_OFFLOADS] = {"offloads", sup_p_offloads, KEY(struct sup_port, offloads), .def = "csum,tso4,tso6",
                           .drivers = SUP_DRIVER_TAP},
    [SUP_PORT_RX_INFLIGHT] = {"rx_inflight", sup_p_u32, KEY(struct sup_port, rx_inflight), 1, 1024,
                              .def = "32", .drivers = SUP_DRIVER_TAP},
    [SUP_PORT_XDP_MODE] = {"xdp_mode", sup_p_enum, KEY(struct sup_port, xdp_mode), .words = sup_xdp_mode_words,
                           .def = "auto", .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_STEER] = {"steer", sup_p_enum, KEY(struct sup_port, steer), .words = sup_steer_words,
                        .def = "forward-only", .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_QUEUES] = {"queues", sup_p_u32, KEY(struct sup_port, queues), 1, 64, .def = "1",
                         .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_BUSY_POLL] = {"busy_poll", sup_p_bool, KEY(struct sup_port, busy_poll), .words = sup_bool_words,
                            .def = "yes", .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_BUSY_POLL_US] = {"busy_poll_us", sup_p_u32, KEY(struct sup_port, busy_poll_us), 1, 10000,
                               .def = "20", .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_BUSY_POLL_BUDGET] = {"busy_poll_budget", sup_p_u32, KEY(struct sup_port, busy_poll_budget), 1,
                                   1024, .def = "64", .drivers = SUP_DRIVER_AFXDP},
    /* 2 and 200 us: what the kernel's busy-polling documentation and DPDK's
     * af_xdp guide start from; the device's own values come back at shutdown */
    [SUP_PORT_NAPI_DEFER_HARD_IRQS] = {"napi_defer_hard_irqs", sup_p_u32,
                                       KEY(struct sup_port, napi_defer_hard_irqs), 0, 1000, .def = "2",
                                       .drivers = SUP_DRIVER_AFXDP},
    [SUP_PORT_GRO_FLUSH_TIMEOUT] = {"gro_flush_timeout", sup_p_u32, KEY(struct sup_port, gro_flush_timeout), 0,
                                    100000000, .def = "200000", .drivers = SUP_DRIVER_AFXDP},
};

static const struct sup_key sup_route_keys[] = {
    [SUP_ROUTE_VIA] = {"via", sup_p_addr, KEY(struct sup_route, via)},
    [SUP_ROUTE_PORT] = {"port", sup_p_ident, KEY(struct sup_route, port_name), 1, SUP_NAME_MAX},
};

static const struct sup_key sup_neigh_keys[] = {
    [SUP_NEIGH_MAC] = {"mac", sup_p_mac, KEY(struct sup_neigh, mac), .expect = "a MAC address",
                       .required = true},
    [SUP_NEIGH_PORT] = {"port", sup_p_ident, KEY(struct sup_neigh, port_name), 1, SUP_NAME_MAX},
};

static const struct sup_key sup_shaper_keys[] = {
    [SUP_SHAPER_RATE] = {"rate", sup_p_rate, KEY(struct sup_shaper, rate), 1000, 1000000000000,
                         .expect = "a rate such as 100mbit", .required = true},
    /* default computed: 10 ms at rate, at least 2 full frames (sup_check_shaper) */
    [SUP_SHAPER_BURST] = {"burst", sup_p_size, KEY(struct sup_shaper, burst), 1, 268435456},
    /* preamble 7 + SFD 1 + FCS 4 + interframe gap 12: what a frame costs
     * on Ethernet beyond the 14-byte header we already count */
    [SUP_SHAPER_OVERHEAD] = {"overhead", sup_p_u32, KEY(struct sup_shaper, overhead), 0, 256, .def = "24"},
};

static const struct sup_key sup_class_keys[] = {
    [SUP_CLASS_RATE] = {"rate", sup_p_rate, KEY(struct sup_class, rate), 1000, 1000000000000,
                        .expect = "a rate such as 10mbit", .required = true},
    /* default: the port's rate */
    [SUP_CLASS_CEIL] = {"ceil", sup_p_rate, KEY(struct sup_class, ceil), 1000, 1000000000000},
    [SUP_CLASS_PRIO] = {"prio", sup_p_u32, KEY(struct sup_class, prio), 0, 7, .def = "4"},
    [SUP_CLASS_MATCH] = {"match", sup_p_match, KEY(struct sup_class, match)},
    [SUP_CLASS_DEFAULT] = {"default", sup_p_bool, KEY(struct sup_class, is_default), .words = sup_bool_words,
                           .def = "no"},
};

static const struct sup_word sup_restart_words[] = {
    {"always", SUP_RESTART_ALWAYS}, {"on-failure", SUP_RESTART_ON_FAILURE}, {"never", SUP_RESTART_NEVER},
    {NULL, 0},
};

static const struct sup_word sup_sched_words[] = {
    {"normal", SUP_SCHED_NORMAL}, {"batch", SUP_SCHED_BATCH}, {NULL, 0},
};

static const struct sup_key sup_service_keys[] = {
    [SUP_SERVICE_RESTART] = {"restart", sup_p_enum, KEY(struct sup_service, restart), .words = sup_restart_words,
                             .def = "always"},
    [SUP_SERVICE_HANG_MS] = {"hang_ms", sup_p_u32, KEY(struct sup_service, hang_ms), 10, 60000, .def = "200"},
    [SUP_SERVICE_RESTART_LIMIT] = {"restart_limit", sup_p_u32, KEY(struct sup_service, restart_limit), 1, 1000,
                                   .def = "5"},
    [SUP_SERVICE_RESTART_WINDOW] = {"restart_window", sup_p_duration,
                                    KEY(struct sup_service, restart_window_ms), 100, 3600000, .def = "10s"},
    [SUP_SERVICE_CPU] = {"cpu", sup_p_i32, KEY(struct sup_service, cpu), 0, 1023},
    /* 0: sleep as soon as there is no work, so an idle router uses no CPU */
    [SUP_SERVICE_POLL_US] = {"poll_us", sup_p_u32, KEY(struct sup_service, poll_us), 0, 10000, .def = "0"},
    [SUP_SERVICE_BINARY] = {"binary", sup_p_binary, KEY(struct sup_service, binary), 0, SUP_PATH_MAX, .def = ""},
    [SUP_SERVICE_SCHED] = {"sched", sup_p_enum, KEY(struct sup_service, sched), .words = sup_sched_words,
                           .def = "normal"},
};

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

enum { SUP_SEC_ROUTER, SUP_SEC_PORT, SUP_SEC_ROUTE, SUP_SEC_NEIGH, SUP_SEC_SHAPER, SUP_SEC_CLASS, SUP_SEC_SERVICE };

static const struct sup_section_type sup_sections[] = {
    [SUP_SEC_ROUTER] = {"router", 0, "[router]", sup_router_keys, NKEYS(sup_router_keys)},
    [SUP_SEC_PORT] = {"port", 1, "[port NAME]", sup_port_keys, NKEYS(sup_port_keys)},
    [SUP_SEC_ROUTE] = {"route", 1, "[route PREFIX]", sup_route_keys, NKEYS(sup_route_keys)},
    [SUP_SEC_NEIGH] = {"neigh", 1, "[neigh ADDRESS]", sup_neigh_keys, NKEYS(sup_neigh_keys)},
    [SUP_SEC_SHAPER] = {"shaper", 1, "[shaper PORT]", sup_shaper_keys, NKEYS(sup_shaper_keys)},
    [SUP_SEC_CLASS] = {"class", 2, "[class PORT NAME]", sup_class_keys, NKEYS(sup_class_keys)},
    [SUP_SEC_SERVICE] = {"service", 1, "[service NAME]", sup_service_keys, NKEYS(sup_service_keys)},
};

_Static_assert(SUP_PORT_NKEYS <= SUP_SRC_KEYS && SUP_ROUTER_NKEYS <= SUP_SRC_KEYS &&
                   SUP_SERVICE_NKEYS <= SUP_SRC_KEYS && SUP_CLASS_NKEYS <= SUP_SRC_KEYS,
               "struct sup_src has a line for every key");

/* Fill an object with the defaults of its section's table. A default that
 * does not parse is our bug, and the unit tests load every table. */
static void sup_defaults(struct sup_pctx *pc, const struct sup_section_type *t, void *obj)
{
    for (size_t i = 0; i < t->nkeys; i++) {
        const struct sup_key *k = &t->keys[i];
        if (k->def && k->parse(pc, k, k->def, (char *)obj + k->off) != 0)
            abort();
    }
}

/* ---- sections ---- */

static void *sup_obj(struct sup_pctx *pc, const struct sup_section_type *t, size_t idx)
{
    struct sup_manifest *m = pc->m;
    switch (t - sup_sections) {
    case SUP_SEC_ROUTER:
        return &m->router;
    case SUP_SEC_PORT:
        return &m->ports[idx];
    case SUP_SEC_ROUTE:
        return &m->routes[idx];
    case SUP_SEC_NEIGH:
        return &m->neighs[idx];
    case SUP_SEC_SHAPER:
        return &m->shapers[idx];
    case SUP_SEC_CLASS:
        return &m->classes[idx];
    default:
        return &pc->svc[idx];
    }
}

/* Append a zeroed element to a growing array; NULL (and rc = -ENOMEM) on failure. */
static void *sup_grow(struct sup_pctx *pc, void *arrp, size_t *n, size_t size)
{
    void **arr = arrp;
    void *p = realloc(*arr, (*n + 1) * size);
    if (!p) {
        snprintf(pc->err->msg, sizeof pc->err->msg, "%s: out of memory", pc->file);
        pc->rc = -ENOMEM;
        return NULL;
    }
    *arr = p;
    memset((char *)p + *n * size, 0, size);
    return (char *)p + (*n)++ * size;
}

static int sup_name_ok(struct sup_pctx *pc, const char *sec, const char *what, const char *name)
{
    size_t n = strlen(name);
    bool good = n >= 1 && n <= SUP_NAME_MAX;
    for (const char *p = name; good && *p; p++)
        good = sup_c_ident((unsigned char)*p);
    if (!good)
        return sup_fail(pc, pc->line, sec, NULL, "%s \"%s\" is not valid: expected 1 to %d of a-z 0-9 _ -", what,
                        name, SUP_NAME_MAX);
    return 0;
}

/* Open a section at its header: validate the name(s), create the object,
 * fill in defaults, refuse duplicates. */
static int sup_open(struct sup_pctx *pc, const struct sup_section_type *t, char *names[2], const char *sec)
{
    struct sup_manifest *m = pc->m;
    void *obj = NULL;
    size_t idx = 0;
    switch (t - sup_sections) {
    case SUP_SEC_ROUTER:
        if (m->router.src.line)
            return sup_fail(pc, pc->line, sec, NULL, "duplicate section, first on line %u", m->router.src.line);
        obj = &m->router;
        break;
    case SUP_SEC_PORT: {
        if (sup_name_ok(pc, sec, "port name", names[0]))
            return pc->rc;
        for (size_t i = 0; i < m->nports; i++)
            if (strcmp(m->ports[i].name, names[0]) == 0)
                return sup_fail(pc, pc->line, sec, NULL, "duplicate port, first defined on line %u",
                                m->ports[i].src.line);
        if (m->nports == SUP_PORTS_MAX)
            return sup_fail(pc, pc->line, sec, NULL, "too many ports: at most %d", SUP_PORTS_MAX);
        idx = m->nports;
        struct sup_port *p = sup_grow(pc, &m->ports, &m->nports, sizeof *p);
        if (!p)
            return pc->rc;
        memcpy(p->name, names[0], strlen(names[0]) + 1);
        p->shaper = -1;
        obj = p;
        break;
    }
    case SUP_SEC_ROUTE: {
        struct sup_prefix pf;
        if (!sup_parse_prefix(names[0], &pf))
            return sup_fail(pc, pc->line, sec, NULL, "\"%s\" is not an IPv4 prefix", names[0]);
        if (pf.addr & ~sup_mask(pf.len))
            return sup_fail(pc, pc->line, sec, NULL, "%s has host bits set, did you mean %s?", names[0],
                            PREFIX(pf.addr & sup_mask(pf.len), pf.len));
        for (size_t i = 0; i < m->nroutes; i++)
            if (m->routes[i].prefix.addr == pf.addr && m->routes[i].prefix.len == pf.len)
                return sup_fail(pc, pc->line, sec, NULL, "duplicate route, first on line %u",
                                m->routes[i].src.line);
        idx = m->nroutes;
        struct sup_route *r = sup_grow(pc, &m->routes, &m->nroutes, sizeof *r);
        if (!r)
            return pc->rc;
        r->prefix = pf;
        r->port = -1;
        obj = r;
        break;
    }
    case SUP_SEC_NEIGH: {
        uint32_t a;
        if (!sup_parse_addr(names[0], &a))
            return sup_fail(pc, pc->line, sec, NULL, "\"%s\" is not an IPv4 address", names[0]);
        for (size_t i = 0; i < m->nneighs; i++)
            if (m->neighs[i].addr == a)
                return sup_fail(pc, pc->line, sec, NULL, "duplicate neighbour, first on line %u",
                                m->neighs[i].src.line);
        idx = m->nneighs;
        struct sup_neigh *n = sup_grow(pc, &m->neighs, &m->nneighs, sizeof *n);
        if (!n)
            return pc->rc;
        n->addr = a;
        n->port = -1;
        obj = n;
        break;
    }
    case SUP_SEC_SHAPER: {
        if (sup_name_ok(pc, sec, "port name", names[0]))
            return pc->rc;
        for (size_t i = 0; i < m->nshapers; i++)
            if (strcmp(m->shapers[i].port_name, names[0]) == 0)
                return sup_fail(pc, pc->line, sec, NULL, "duplicate shaper, first on line %u",
                                m->shapers[i].src.line);
        idx = m->nshapers;
        struct sup_shaper *s = sup_grow(pc, &m->shapers, &m->nshapers, sizeof *s);
        if (!s)
            return pc->rc;
        memcpy(s->port_name, names[0], strlen(names[0]) + 1);
        s->port = -1;
        s->default_class = -1;
        obj = s;
        break;
    }
    case SUP_SEC_CLASS: {
        if (sup_name_ok(pc, sec, "port name", names[0]) || sup_name_ok(pc, sec, "class name", names[1]))
            return pc->rc;
        for (size_t i = 0; i < m->nclasses; i++)
            if (strcmp(m->classes[i].port_name, names[0]) == 0 && strcmp(m->classes[i].name, names[1]) == 0)
                return sup_fail(pc, pc->line, sec, NULL, "duplicate class, first on line %u",
                                m->classes[i].src.line);
        idx = m->nclasses;
        struct sup_class *c = sup_grow(pc, &m->classes, &m->nclasses, sizeof *c);
        if (!c)
            return pc->rc;
        memcpy(c->port_name, names[0], strlen(names[0]) + 1);
        memcpy(c->name, names[1], strlen(names[1]) + 1);
        c->port = -1;
        obj = c;
        break;
    }
    default: {
        /* The target (a port, a shaper) may come later in the file: the
         * name is checked against the finished manifest in sup_services. */
        if (strlen(names[0]) > SUP_SERVICE_MAX)
            return sup_fail(pc, pc->line, sec, NULL,
                            "\"%s\" is not a service: expected router, driver-PORT, driver-PORT.QUEUE or "
                            "shaper-PORT",
                            names[0]);
        for (size_t i = 0; i < pc->nsvc; i++)
            if (strcmp(pc->svc[i].name, names[0]) == 0)
                return sup_fail(pc, pc->line, sec, NULL, "duplicate section, first on line %u",
                                pc->svc[i].src.line);
        idx = pc->nsvc;
        struct sup_service *s = sup_grow(pc, &pc->svc, &pc->nsvc, sizeof *s);
        if (!s)
            return pc->rc;
        memcpy(s->name, names[0], strlen(names[0]) + 1);
        s->cpu = -1;
        s->port = -1;
        obj = s;
        break;
    }
    }
    struct sup_src *src = obj;
    memset(src, 0, sizeof *src);
    sup_copy(src->section, sizeof src->section, sec);
    src->line = pc->line;
    if (t != &sup_sections[SUP_SEC_ROUTER])
        sup_defaults(pc, t, obj);
    pc->cur = t;
    pc->cur_idx = idx;
    sup_copy(pc->cur_section, sizeof pc->cur_section, sec);
    return 0;
}

/* A header line "[ ... ]" (comments already gone): split it into words,
 * open the section, and write its normalised form for libinih to @out. */
static int sup_header(struct sup_pctx *pc, const char *b, const char *e, char *out, size_t outlen)
{
    char buf[128], sec[SUP_SECTION_MAX + 16];
    char *words[4] = {0};
    size_t nw = 0;
    const char *close = memchr(b, ']', (size_t)(e - b));
    if (!close)
        return sup_fail(pc, pc->line, NULL, NULL, "syntax error: \"[\" without a closing \"]\"");
    if (close != e - 1)
        return sup_fail(pc, pc->line, NULL, NULL, "syntax error: text after \"]\"");
    size_t n = (size_t)(close - b - 1);
    if (n >= sizeof buf)
        return sup_fail(pc, pc->line, NULL, NULL, "section header is longer than %zu characters", sizeof buf - 1);
    memcpy(buf, b + 1, n);
    buf[n] = '\0';
    char *save = NULL;
    for (char *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (nw == 4)
            break;
        words[nw++] = w;
    }
    size_t sl = 0;
    sec[0] = '\0';
    for (size_t i = 0; i < nw; i++)
        sup_append(sec, sizeof sec, &sl, "%s%s", i ? " " : "", words[i]);
    if (nw == 0)
        return sup_fail(pc, pc->line, NULL, NULL, "syntax error: empty section name \"[]\"");
    const struct sup_section_type *t = NULL;
    for (size_t i = 0; i < NKEYS(sup_sections); i++)
        if (strcmp(sup_sections[i].type, words[0]) == 0)
            t = &sup_sections[i];
    if (!t)
        return sup_fail(pc, pc->line, sec, NULL,
                        "unknown section: expected [router], [port NAME], [route PREFIX], [neigh ADDRESS], "
                        "[shaper PORT], [class PORT NAME] or [service NAME]");
    if (nw - 1 != t->nnames)
        return sup_fail(pc, pc->line, sec, NULL, "expected %s", t->usage);
    if (sl >= SUP_SECTION_MAX)
        return sup_fail(pc, pc->line, sec, NULL, "section header is longer than %d characters",
                        SUP_SECTION_MAX - 1);
    if (sup_open(pc, t, words + 1, sec))
        return pc->rc;
    snprintf(out, outlen, "[%s]\n", sec);
    return 0;
}

/* libinih's reader callback: see the comment at the top of the file. It
 * hands libinih one line at a time, so pc->line is the line the handler's
 * key is on, whatever the library's own INI_HANDLER_LINENO says. */
static char *sup_read_line(char *str, int num, void *stream)
{
    struct sup_pctx *pc = stream;
    if (pc->rc || *pc->pos == '\0')
        return NULL;
    const char *l = pc->pos, *nl = strchr(l, '\n');
    size_t len = nl ? (size_t)(nl - l) : strlen(l);
    pc->pos = nl ? nl + 1 : l + len;
    pc->line++;

    const char *b = l, *e = l + len;
    if (pc->line == 1 && len >= 3 && memcmp(b, "\xef\xbb\xbf", 3) == 0)
        b += 3;
    while (b < e && isspace((unsigned char)*b))
        b++;
    if (b < e && (*b == ';' || *b == '#')) {
        e = b;
    } else {
        /* An inline comment starts at a ';' after a blank, as in libinih. */
        for (const char *p = b + 1; p < e; p++) {
            if (*p == ';' && isspace((unsigned char)p[-1])) {
                e = p;
                break;
            }
        }
    }
    while (e > b && isspace((unsigned char)e[-1]))
        e--;
    size_t n = (size_t)(e - b);
    for (const char *p = b; p < e; p++)
        if (iscntrl((unsigned char)*p) && *p != '\t') {
            sup_fail(pc, pc->line, NULL, NULL, "syntax error: control character 0x%02x", (unsigned char)*p);
            return NULL;
        }
    if (num < 3 || n > (size_t)num - 3) {
        sup_fail(pc, pc->line, NULL, NULL, "line is longer than %d characters", num - 3);
        return NULL;
    }
    if (n == 0) {
        str[0] = '\n';
        str[1] = '\0';
        return str;
    }
    if (*b == '[') {
        if (sup_header(pc, b, e, str, (size_t)num))
            return NULL;
        return str;
    }
    const char *eq = b;
    while (eq < e && *eq != '=' && *eq != ':')
        eq++;
    if (eq == e) {
        sup_fail(pc, pc->line, NULL, NULL, "syntax error: expected \"key = value\", \"[section]\" or a comment");
        return NULL;
    }
    if (eq == b) {
        sup_fail(pc, pc->line, NULL, NULL, "syntax error: no key before \"%c\"", *eq);
        return NULL;
    }
    if (!pc->cur) {
        sup_fail(pc, pc->line, NULL, NULL, "\"%.*s\" is outside any section", (int)n, b);
        return NULL;
    }
    memcpy(str, b, n);
    str[n] = '\n';
    str[n + 1] = '\0';
    return str;
}

static int sup_handler(void *user, const char *section, const char *name, const char *value)
{
    struct sup_pctx *pc = user;
    if (pc->rc)
        return 0;
    if (!name) /* a library built to report new sections: we track them ourselves */
        return 1;
    if (!value || !pc->cur || strcmp(section, pc->cur_section) != 0) {
        sup_fail(pc, pc->line, NULL, NULL, "syntax error: expected \"key = value\"");
        return 0;
    }
    const struct sup_section_type *t = pc->cur;
    const struct sup_key *k = NULL;
    for (size_t i = 0; i < t->nkeys; i++)
        if (strcmp(t->keys[i].name, name) == 0)
            k = &t->keys[i];
    if (!k) {
        const char *best = NULL;
        unsigned bd = 3;
        for (size_t i = 0; i < t->nkeys; i++) {
            unsigned d = sup_distance(name, t->keys[i].name);
            if (d < bd) {
                bd = d;
                best = t->keys[i].name;
            }
        }
        if (best)
            sup_fail(pc, pc->line, pc->cur_section, name, "unknown key, did you mean %s?", best);
        else
            sup_fail(pc, pc->line, pc->cur_section, name, "unknown key in [%s] (see docs/manifest.md)",
                     t->type);
        return 0;
    }
    void *obj = sup_obj(pc, t, pc->cur_idx);
    struct sup_src *src = obj;
    unsigned *kl = &src->key_line[k - t->keys];
    if (*kl) {
        sup_fail(pc, pc->line, pc->cur_section, name, "duplicate key, first set on line %u", *kl);
        return 0;
    }
    *kl = pc->line;
    return k->parse(pc, k, value, (char *)obj + k->off) == 0;
}

/* ---- whole-manifest checks ---- */

static int sup_missing(struct sup_pctx *pc, const struct sup_section_type *t, const struct sup_src *src)
{
    for (size_t i = 0; i < t->nkeys; i++)
        if (t->keys[i].required && !src->key_line[i])
            return sup_fail(pc, src->line, src->section, t->keys[i].name, "missing, expected %s",
                            t->keys[i].expect);
    return 0;
}

#define KLINE(o, key) ((o)->src.key_line[key])

static int sup_check_router(struct sup_pctx *pc)
{
    struct sup_router *r = &pc->m->router;
    char buf[4096];
    struct passwd pw, *pwp = NULL;
    struct group gr, *grp = NULL;
    const char *sec = r->src.section;

    if (r->user[0]) {
        if (getpwnam_r(r->user, &pw, buf, sizeof buf, &pwp) != 0 || !pwp)
            return sup_fail(pc, KLINE(r, SUP_ROUTER_USER), sec, "user", "no such user \"%s\"", r->user);
    } else {
        /* Default: the dedicated system user the install step creates. */
        if (getpwnam_r("ringrouter", &pw, buf, sizeof buf, &pwp) == 0 && pwp)
            snprintf(r->user, sizeof r->user, "ringrouter");
        else if (getpwnam_r("nobody", &pw, buf, sizeof buf, &pwp) == 0 && pwp)
            snprintf(r->user, sizeof r->user, "nobody");
        else
            return sup_fail(pc, r->src.line, sec, "user",
                            "missing, and neither user \"ringrouter\" nor \"nobody\" exists");
    }
    if (r->group[0]) {
        if (getgrnam_r(r->group, &gr, buf, sizeof buf, &grp) != 0 || !grp)
            return sup_fail(pc, KLINE(r, SUP_ROUTER_GROUP), sec, "group", "no such group \"%s\"", r->group);
    } else {
        if (getpwnam_r(r->user, &pw, buf, sizeof buf, &pwp) != 0 || !pwp)
            return sup_fail(pc, r->src.line, sec, "user", "no such user \"%s\"", r->user);
        gid_t gid = pw.pw_gid;
        if (getgrgid_r(gid, &gr, buf, sizeof buf, &grp) != 0 || !grp || strlen(gr.gr_name) > SUP_USER_MAX)
            return sup_fail(pc, r->src.line, sec, "group", "the primary group %u of user \"%s\" has no name",
                            (unsigned)gid, r->user);
        snprintf(r->group, sizeof r->group, "%s", gr.gr_name);
    }
    return 0;
}

/* The pool is one memfd; its pages are allocated as frames are first used,
 * but a size past this is a typo rather than a plan. */
#define SUP_POOL_BYTES_MAX (8ull << 30)

static int sup_check_pool(struct sup_pctx *pc)
{
    struct sup_router *r = &pc->m->router;
    uint64_t bytes = (uint64_t)r->pool_buffers * r->frame_size;
    if (bytes <= SUP_POOL_BYTES_MAX)
        return 0;
    unsigned line = KLINE(r, SUP_ROUTER_POOL_BUFFERS) ? KLINE(r, SUP_ROUTER_POOL_BUFFERS)
                                                      : KLINE(r, SUP_ROUTER_FRAME_SIZE);
    return sup_fail(pc, line, r->src.section, KLINE(r, SUP_ROUTER_POOL_BUFFERS) ? "pool_buffers" : "frame_size",
                    "%u buffers of %u bytes is %llu MiB, more than the pool's limit of %llu MiB", r->pool_buffers,
                    r->frame_size, (unsigned long long)(bytes >> 20), SUP_POOL_BYTES_MAX >> 20);
}

static int sup_check_ports(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    if (m->nports == 0)
        return sup_fail(pc, 0, NULL, NULL, "no ports: a manifest needs at least one [port NAME] section");
    for (size_t i = 0; i < m->nports; i++) {
        struct sup_port *p = &m->ports[i];
        const struct sup_section_type *t = &sup_sections[SUP_SEC_PORT];
        if (sup_missing(pc, t, &p->src))
            return pc->rc;
        for (size_t k = 0; k < t->nkeys; k++) {
            if (t->keys[k].drivers && p->src.key_line[k] && !(t->keys[k].drivers & p->driver))
                return sup_fail(pc, p->src.key_line[k], p->src.section, t->keys[k].name,
                                "only for driver = %s, and port %s is driver = %s",
                                t->keys[k].drivers == SUP_DRIVER_TAP ? "tap" : "afxdp", p->name,
                                p->driver == SUP_DRIVER_TAP ? "tap" : "afxdp");
        }
        /* The pool is the UMEM, whose chunks are 2048 or 4096 bytes. */
        if (p->driver == SUP_DRIVER_AFXDP && m->router.frame_size > IPC_FRAME_LARGE)
            return sup_fail(pc, KLINE(&m->router, SUP_ROUTER_FRAME_SIZE), m->router.src.section, "frame_size",
                            "%u is for routers whose ports are all driver = tap: port %s (line %u) is driver = afxdp, "
                            "which takes 2048 or 4096",
                            m->router.frame_size, p->name, p->src.line);
        /* AF_XDP cannot chain frames: a whole frame, after the headroom the
         * kernel keeps, must fit in one pool frame. */
        uint32_t fmax = m->router.frame_size - SUP_XDP_HEADROOM - SUP_ETH_HLEN;
        if (p->driver == SUP_DRIVER_AFXDP && p->mtu > fmax)
            return sup_fail(pc, KLINE(p, SUP_PORT_MTU), p->src.section, "mtu",
                            "%u does not fit a %u-byte frame with driver = afxdp (at most %u%s)", p->mtu,
                            m->router.frame_size, fmax,
                            m->router.frame_size == 2048 ? "; frame_size = 4096 allows 3826" : "");
        for (size_t j = 0; j < i; j++) {
            struct sup_port *q = &m->ports[j];
            if (strcmp(p->ifname, q->ifname) == 0 && strcmp(p->netns, q->netns) == 0)
                return sup_fail(pc, KLINE(p, SUP_PORT_IFNAME), p->src.section, "ifname",
                                "\"%s\" is already port %s's interface (line %u)", p->ifname, q->name,
                                KLINE(q, SUP_PORT_IFNAME));
            unsigned len = p->address.len < q->address.len ? p->address.len : q->address.len;
            if (((p->address.addr ^ q->address.addr) & sup_mask(len)) == 0)
                return sup_fail(pc, KLINE(p, SUP_PORT_ADDRESS), p->src.section, "address",
                                "%s overlaps port %s's network %s (line %u)",
                                PREFIX(p->address.addr, p->address.len), q->name,
                                PREFIX(q->address.addr & sup_mask(q->address.len), q->address.len),
                                KLINE(q, SUP_PORT_ADDRESS));
            if (p->has_mac && q->has_mac && memcmp(p->mac, q->mac, 6) == 0)
                return sup_fail(pc, KLINE(p, SUP_PORT_MAC), p->src.section, "mac",
                                "is already port %s's MAC address (line %u)", q->name, KLINE(q, SUP_PORT_MAC));
        }
    }
    return 0;
}

int sup_manifest_port(const struct sup_manifest *m, const char *name)
{
    for (size_t i = 0; i < m->nports; i++)
        if (strcmp(m->ports[i].name, name) == 0)
            return (int)i;
    return -1;
}

int sup_manifest_service(const struct sup_manifest *m, const char *name)
{
    for (size_t i = 0; i < m->nservices; i++)
        if (strcmp(m->services[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* The port whose connected network holds @a; networks do not overlap. */
static int sup_port_for(const struct sup_manifest *m, uint32_t a)
{
    for (size_t i = 0; i < m->nports; i++)
        if (sup_in(&m->ports[i].address, a))
            return (int)i;
    return -1;
}

/* @a must be a neighbour on port @pi's network: not the router itself,
 * nor the network's own or broadcast address. */
static int sup_check_on_link(struct sup_pctx *pc, const struct sup_src *src, unsigned line, const char *key,
                             uint32_t a, int pi)
{
    const struct sup_port *p = &pc->m->ports[pi];
    uint32_t host = a & ~sup_mask(p->address.len);
    char net[20];
    sup_prefix_str(p->address.addr & sup_mask(p->address.len), p->address.len, net, sizeof net);
    if (a == p->address.addr)
        return sup_fail(pc, line, src->section, key, "%s is the router's own address on port %s", ADDR(a),
                        p->name);
    if (p->address.len < 31 && host == 0)
        return sup_fail(pc, line, src->section, key, "%s is the network address of port %s's network %s",
                        ADDR(a), p->name, net);
    if (p->address.len < 31 && host == ~sup_mask(p->address.len))
        return sup_fail(pc, line, src->section, key, "%s is the broadcast address of port %s's network %s",
                        ADDR(a), p->name, net);
    return 0;
}

static int sup_check_routes(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    for (size_t i = 0; i < m->nroutes; i++) {
        struct sup_route *r = &m->routes[i];
        unsigned lvia = KLINE(r, SUP_ROUTE_VIA), lport = KLINE(r, SUP_ROUTE_PORT);
        if (lvia && lport)
            return sup_fail(pc, lvia > lport ? lvia : lport, r->src.section, lvia > lport ? "via" : "port",
                            "give either via or port, not both");
        if (!lvia && !lport)
            return sup_fail(pc, r->src.line, r->src.section, "via",
                            "missing, expected a gateway address (or port = NAME for a directly connected route)");
        for (size_t j = 0; j < m->nports; j++) {
            const struct sup_prefix *a = &m->ports[j].address;
            if (a->len == r->prefix.len && (a->addr & sup_mask(a->len)) == r->prefix.addr)
                return sup_fail(pc, r->src.line, r->src.section, NULL,
                                "duplicates the connected route of port %s (line %u)", m->ports[j].name,
                                KLINE(&m->ports[j], SUP_PORT_ADDRESS));
        }
        if (lport) {
            r->direct = true;
            r->port = sup_manifest_port(m, r->port_name);
            if (r->port < 0)
                return sup_fail(pc, lport, r->src.section, "port", "no port \"%s\"", r->port_name);
            continue;
        }
        r->port = sup_port_for(m, r->via);
        if (r->port < 0)
            return sup_fail(pc, lvia, r->src.section, "via", "%s is not on any port's network", ADDR(r->via));
        if (sup_check_on_link(pc, &r->src, lvia, "via", r->via, r->port))
            return pc->rc;
        snprintf(r->port_name, sizeof r->port_name, "%s", m->ports[r->port].name);
    }
    return 0;
}

static int sup_check_neighs(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    for (size_t i = 0; i < m->nneighs; i++) {
        struct sup_neigh *n = &m->neighs[i];
        if (sup_missing(pc, &sup_sections[SUP_SEC_NEIGH], &n->src))
            return pc->rc;
        int on = sup_port_for(m, n->addr);
        if (KLINE(n, SUP_NEIGH_PORT)) {
            n->port = sup_manifest_port(m, n->port_name);
            if (n->port < 0)
                return sup_fail(pc, KLINE(n, SUP_NEIGH_PORT), n->src.section, "port", "no port \"%s\"",
                                n->port_name);
            if (on != n->port)
                return sup_fail(pc, KLINE(n, SUP_NEIGH_PORT), n->src.section, "port",
                                "%s is not on port %s's network %s", ADDR(n->addr), n->port_name,
                                PREFIX(m->ports[n->port].address.addr & sup_mask(m->ports[n->port].address.len),
                                       m->ports[n->port].address.len));
        } else if (on < 0) {
            return sup_fail(pc, n->src.line, n->src.section, NULL, "%s is not on any port's network",
                            ADDR(n->addr));
        }
        n->port = on;
        snprintf(n->port_name, sizeof n->port_name, "%s", m->ports[on].name);
        if (sup_check_on_link(pc, &n->src, n->src.line, NULL, n->addr, on))
            return pc->rc;
    }
    return 0;
}

static int sup_check_shapers(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    for (size_t i = 0; i < m->nshapers; i++) {
        struct sup_shaper *s = &m->shapers[i];
        if (sup_missing(pc, &sup_sections[SUP_SEC_SHAPER], &s->src))
            return pc->rc;
        s->port = sup_manifest_port(m, s->port_name);
        if (s->port < 0)
            return sup_fail(pc, s->src.line, s->src.section, NULL, "no port \"%s\"", s->port_name);
        m->ports[s->port].shaper = (int)i;
        uint32_t frame = m->ports[s->port].mtu + SUP_ETH_HLEN;
        if (!KLINE(s, SUP_SHAPER_BURST)) {
            /* What the rate sends in 10 ms: the shaper sleeps on a timer, so
             * the bucket must cover at least one timer slack's worth. */
            uint64_t b = s->rate / 8 / 100;
            if (b < 2ull * frame)
                b = 2ull * frame;
            if (b > 268435456)
                b = 268435456;
            s->burst = (uint32_t)b;
        } else if (s->burst < frame) {
            return sup_fail(pc, KLINE(s, SUP_SHAPER_BURST), s->src.section, "burst",
                            "%u bytes is less than one full frame (%u bytes at mtu %u)", s->burst, frame,
                            m->ports[s->port].mtu);
        }
    }
    for (size_t i = 0; i < m->nclasses; i++) {
        struct sup_class *c = &m->classes[i];
        if (sup_missing(pc, &sup_sections[SUP_SEC_CLASS], &c->src))
            return pc->rc;
        c->port = sup_manifest_port(m, c->port_name);
        if (c->port < 0)
            return sup_fail(pc, c->src.line, c->src.section, NULL, "no port \"%s\"", c->port_name);
        int si = m->ports[c->port].shaper;
        if (si < 0)
            return sup_fail(pc, c->src.line, c->src.section, NULL, "port %s has no [shaper %s] section",
                            c->port_name, c->port_name);
        struct sup_shaper *s = &m->shapers[si];
        s->nclasses++;
        if (!KLINE(c, SUP_CLASS_CEIL))
            c->ceil = s->rate;
        if (c->rate > s->rate)
            return sup_fail(pc, KLINE(c, SUP_CLASS_RATE), c->src.section, "rate",
                            "%s is above the port's rate %s (line %u)", RATE(c->rate), RATE(s->rate),
                            KLINE(s, SUP_SHAPER_RATE));
        if (c->ceil < c->rate)
            return sup_fail(pc, KLINE(c, SUP_CLASS_CEIL), c->src.section, "ceil", "%s is below rate %s",
                            RATE(c->ceil), RATE(c->rate));
        if (c->ceil > s->rate)
            return sup_fail(pc, KLINE(c, SUP_CLASS_CEIL), c->src.section, "ceil",
                            "%s is above the port's rate %s (line %u)", RATE(c->ceil), RATE(s->rate),
                            KLINE(s, SUP_SHAPER_RATE));
        if (c->is_default) {
            if (s->default_class >= 0)
                return sup_fail(pc, KLINE(c, SUP_CLASS_DEFAULT), c->src.section, "default",
                                "class %s (line %u) is already port %s's default class",
                                m->classes[s->default_class].name, m->classes[s->default_class].src.line,
                                c->port_name);
            if (KLINE(c, SUP_CLASS_MATCH))
                return sup_fail(pc, KLINE(c, SUP_CLASS_MATCH), c->src.section, "match",
                                "the default class takes what no other class matches; remove match");
            s->default_class = (int)i;
        } else if (!KLINE(c, SUP_CLASS_MATCH)) {
            return sup_fail(pc, c->src.line, c->src.section, "match",
                            "missing, expected match rules (or default = yes)");
        }
    }
    for (size_t i = 0; i < m->nshapers; i++) {
        struct sup_shaper *s = &m->shapers[i];
        uint64_t sum = 0;
        if (s->nclasses && s->default_class < 0)
            return sup_fail(pc, s->src.line, s->src.section, NULL,
                            "no class of port %s has default = yes; exactly one must", s->port_name);
        for (size_t j = 0; j < m->nclasses; j++) {
            if (m->classes[j].port != s->port)
                continue;
            sum += m->classes[j].rate;
            if (sum > s->rate)
                return sup_fail(pc, KLINE(&m->classes[j], SUP_CLASS_RATE), m->classes[j].src.section, "rate",
                                "the classes of port %s guarantee %s in all, above the port's rate %s",
                                s->port_name, RATE(sum), RATE(s->rate));
        }
    }
    return 0;
}

/* @own's keys that its section sets, over @s. */
static void sup_service_merge(struct sup_service *s, const struct sup_service *own)
{
    const unsigned *set = own->src.key_line;
    if (set[SUP_SERVICE_RESTART])
        s->restart = own->restart;
    if (set[SUP_SERVICE_HANG_MS])
        s->hang_ms = own->hang_ms;
    if (set[SUP_SERVICE_RESTART_LIMIT])
        s->restart_limit = own->restart_limit;
    if (set[SUP_SERVICE_RESTART_WINDOW])
        s->restart_window_ms = own->restart_window_ms;
    if (set[SUP_SERVICE_CPU])
        s->cpu = own->cpu;
    if (set[SUP_SERVICE_POLL_US])
        s->poll_us = own->poll_us;
    if (set[SUP_SERVICE_BINARY])
        memcpy(s->binary, own->binary, sizeof s->binary);
    if (set[SUP_SERVICE_SCHED])
        s->sched = own->sched;
    s->src = own->src;
}

/* Build the service list the manifest implies and merge the explicit
 * [service] sections into it. */
static int sup_check_services(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    for (size_t p = 0; p < m->nports; p++)
        if (m->ports[p].queues == 0)
            m->ports[p].queues = 1; /* a TAP port: its driver's keys (queues among them) get no defaults */
    for (size_t i = 0; i < pc->nsvc; i++) {
        struct sup_service *s = &pc->svc[i];
        const char *n = s->name;
        if (strcmp(n, "router") == 0)
            continue;
        const char *pn = strncmp(n, "driver-", 7) == 0 ? n + 7 : strncmp(n, "shaper-", 7) == 0 ? n + 7 : NULL;
        if (!pn)
            return sup_fail(pc, s->src.line, s->src.section, NULL,
                            "\"%s\" is not a service: expected router, driver-PORT, driver-PORT.QUEUE or "
                            "shaper-PORT",
                            n);
        /* driver-PORT.QUEUE: a port's queue beyond the first (port names have no dot). */
        char port[SUP_SERVICE_MAX + 1];
        snprintf(port, sizeof port, "%s", pn);
        char *dot = strchr(port, '.');
        long q = 0;
        if (dot) {
            char *end;
            *dot = 0;
            q = strtol(dot + 1, &end, 10);
            if (n[0] != 'd' || !dot[1] || *end || dot[1] == '0' || q < 1)
                return sup_fail(pc, s->src.line, s->src.section, NULL,
                                "\"%s\" is not a service: expected router, driver-PORT, driver-PORT.QUEUE (QUEUE "
                                "from 1) or shaper-PORT",
                                n);
        }
        int pi = sup_manifest_port(m, port);
        if (pi < 0)
            return sup_fail(pc, s->src.line, s->src.section, NULL, "no port \"%s\"", port);
        if (n[0] == 's' && m->ports[pi].shaper < 0)
            return sup_fail(pc, s->src.line, s->src.section, NULL, "port %s has no [shaper %s] section", port,
                            port);
        const struct sup_port *pp = &m->ports[pi];
        if (q >= (long)pp->queues && pp->queues == 1)
            return sup_fail(pc, s->src.line, s->src.section, NULL,
                            "port %s has one queue: its only driver is driver-%s", port, port);
        if (q >= (long)pp->queues)
            return sup_fail(pc, s->src.line, s->src.section, NULL,
                            "port %s has %u queues (line %u): its drivers are driver-%s and driver-%s.1 to "
                            "driver-%s.%u",
                            port, pp->queues, KLINE(pp, SUP_PORT_QUEUES), port, port, port, pp->queues - 1);
    }
    size_t ndrv = 0;
    for (size_t p = 0; p < m->nports; p++)
        ndrv += m->ports[p].queues;
    if (ndrv > SUP_DRIVERS_MAX) {
        size_t p = m->nports;
        while (p > 0 && m->ports[p - 1].queues == 1)
            p--;
        const struct sup_port *last = &m->ports[p ? p - 1 : 0];
        return sup_fail(pc, KLINE(last, SUP_PORT_QUEUES) ? KLINE(last, SUP_PORT_QUEUES) : last->src.line,
                        last->src.section, KLINE(last, SUP_PORT_QUEUES) ? "queues" : NULL,
                        "the ports' queues add up to %zu driver instances; the router takes at most %d", ndrv,
                        SUP_DRIVERS_MAX);
    }
    size_t total = 1 + ndrv + m->nshapers;
    m->services = calloc(total, sizeof *m->services);
    if (!m->services) {
        snprintf(pc->err->msg, sizeof pc->err->msg, "%s: out of memory", pc->file);
        return pc->rc = -ENOMEM;
    }
    /* The router, each port's drivers (queue 0, then 1..), the shapers. */
    size_t i = 0;
    m->services[i++] = (struct sup_service){.kind = SUP_SVC_ROUTER, .port = -1};
    for (size_t p = 0; p < m->nports; p++)
        for (uint32_t q = 0; q < m->ports[p].queues; q++)
            m->services[i++] = (struct sup_service){.kind = SUP_SVC_DRIVER, .port = (int)p, .queue = (int)q};
    for (size_t k = 0; k < m->nshapers; k++)
        m->services[i++] = (struct sup_service){.kind = SUP_SVC_SHAPER, .port = m->shapers[k].port};
    for (i = 0; i < total; i++) {
        struct sup_service *s = &m->services[i];
        enum sup_service_kind kind = s->kind;
        int port = s->port, queue = s->queue;
        if (kind == SUP_SVC_ROUTER)
            snprintf(s->name, sizeof s->name, "router");
        else
            snprintf(s->name, sizeof s->name, "%s-%s", kind == SUP_SVC_DRIVER ? "driver" : "shaper",
                     m->ports[port].name);
        /* A queue's driver starts from its port's [service driver-PORT], then
         * takes the keys its own [service driver-PORT.QUEUE] sets. */
        const struct sup_service *base = NULL, *own = NULL;
        for (size_t j = 0; j < pc->nsvc; j++)
            if (strcmp(pc->svc[j].name, s->name) == 0)
                base = &pc->svc[j];
        if (queue) {
            size_t len = strlen(s->name);
            snprintf(s->name + len, sizeof s->name - len, ".%d", queue);
            for (size_t j = 0; j < pc->nsvc; j++)
                if (strcmp(pc->svc[j].name, s->name) == 0)
                    own = &pc->svc[j];
        }
        char name[sizeof s->name];
        memcpy(name, s->name, sizeof name);
        if (base) {
            *s = *base;
        } else {
            sup_defaults(pc, &sup_sections[SUP_SEC_SERVICE], s);
            s->cpu = -1;
            s->src = (struct sup_src){0};
        }
        if (own)
            sup_service_merge(s, own);
        memcpy(s->name, name, sizeof name);
        if (!own && !base)
            snprintf(s->src.section, sizeof s->src.section, "service %s", s->name);
        s->kind = kind;
        s->port = port;
        s->queue = queue;
    }
    m->nservices = total;
    return 0;
}

int sup_manifest_load_string(const char *name, const char *text, struct sup_manifest *m,
                             struct sup_manifest_err *err)
{
    struct sup_manifest_err local;
    struct sup_pctx pc = {.file = name, .pos = text, .m = m, .err = err ? err : &local};
    memset(m, 0, sizeof *m);
    memset(pc.err, 0, sizeof *pc.err);
    sup_defaults(&pc, &sup_sections[SUP_SEC_ROUTER], &m->router);
    snprintf(m->router.src.section, sizeof m->router.src.section, "router");

    int r = ini_parse_stream(sup_read_line, &pc, sup_handler, &pc);
    if (!pc.rc && r > 0) /* a syntax error our reader did not foresee */
        sup_fail(&pc, (unsigned)r, NULL, NULL, "syntax error");
    else if (!pc.rc && r < 0)
        sup_fail(&pc, 0, NULL, NULL, "the INI parser failed (%d)", r);
    if (!pc.rc)
        sup_check_router(&pc);
    if (!pc.rc)
        sup_check_pool(&pc);
    if (!pc.rc)
        sup_check_ports(&pc);
    if (!pc.rc)
        sup_check_routes(&pc);
    if (!pc.rc)
        sup_check_neighs(&pc);
    if (!pc.rc)
        sup_check_shapers(&pc);
    if (!pc.rc)
        sup_check_services(&pc);
    free(pc.svc);
    if (pc.rc) {
        sup_manifest_free(m);
        return pc.rc;
    }
    return 0;
}

int sup_manifest_load_file(const char *path, struct sup_manifest *m, struct sup_manifest_err *err)
{
    struct sup_manifest_err local;
    struct stat st;
    char *buf = NULL;
    size_t n = 0;
    int e, fd;
    if (!err)
        err = &local;
    memset(m, 0, sizeof *m);
    memset(err, 0, sizeof *err);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        goto out_errno;
    if (fstat(fd, &st) < 0)
        goto out_close;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        goto out_close;
    }
    /* Read one byte past the limit, so that a file that grew after fstat
     * (or a pipe) is still caught as too large. */
    buf = malloc(SUP_FILE_MAX + 2);
    if (!buf) {
        errno = ENOMEM;
        goto out_close;
    }
    while (n <= SUP_FILE_MAX) {
        ssize_t r = read(fd, buf + n, SUP_FILE_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto out_close;
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > SUP_FILE_MAX) {
        free(buf);
        snprintf(err->msg, sizeof err->msg, "%s: larger than %u bytes", path, SUP_FILE_MAX);
        return -EFBIG;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) {
        unsigned line = 1;
        for (char *p = buf; *p; p++)
            line += *p == '\n';
        free(buf);
        err->line = line;
        snprintf(err->msg, sizeof err->msg, "%s:%u: syntax error: a NUL byte", path, line);
        return -EINVAL;
    }
    int rc = sup_manifest_load_string(path, buf, m, err);
    free(buf);
    return rc;

out_close:
    e = errno;
    free(buf);
    close(fd);
    errno = e;
out_errno:
    e = errno;
    snprintf(err->msg, sizeof err->msg, "%s: cannot read: %s", path, strerror(e));
    return -e;
}

void sup_manifest_free(struct sup_manifest *m)
{
    free(m->ports);
    free(m->routes);
    free(m->neighs);
    free(m->shapers);
    free(m->classes);
    free(m->services);
    memset(m, 0, sizeof *m);
}
