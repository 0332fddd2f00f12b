/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest_value.c: the value parsers, one per kind of value a
 * key can have: integers and their ranges, enums, names, paths, IPv4
 * addresses and prefixes, MAC addresses, rates, sizes and durations with
 * their units, offload lists and class match terms. Each takes one value as
 * the reader handed it (trimmed, comment gone) and either writes C data or
 * says, in the manifest's own terms, what was expected. The strict IPv4
 * parsers and the rate formatter are also public (manifest.h): the control
 * commands parse and print the same way.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/pool.h"
#include "supervisor/manifest_impl.h"

/* A run of decimal digits at @p, at least one; *over when it does not fit
 * 64 bits. Returns the end of the run, or NULL when there is no digit. */
static const char *sup_digits(const char *p, uint64_t *acc, bool *over)
{
    if (!isdigit((unsigned char)*p))
        return NULL;
    *acc = 0;
    *over = false;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (*acc > (UINT64_MAX - d) / 10)
            *over = true;
        else
            *acc = *acc * 10 + d;
    }
    return p;
}

/* Integer: optional '-', decimal digits, nothing else. -ERANGE on overflow. */
int sup_int(const char *v, int64_t *out)
{
    bool neg = *v == '-', over;
    uint64_t acc;
    const char *p = sup_digits(v + neg, &acc, &over);
    if (!p || *p)
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

uint32_t sup_mask(unsigned len)
{
    return len ? (uint32_t)(0xffffffffull << (32 - len)) : 0;
}

bool sup_in(const struct sup_prefix *net, uint32_t addr)
{
    return ((addr ^ net->addr) & sup_mask(net->len)) == 0;
}

char *sup_addr_str(uint32_t a, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
    return buf;
}

char *sup_prefix_str(uint32_t a, unsigned plen, char *buf, size_t len)
{
    char s[16];
    snprintf(buf, len, "%s/%u", sup_addr_str(a, s, sizeof s), plen);
    return buf;
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
    uint64_t ip, fp = 0, fscale = 1;
    bool over;
    const char *p = sup_digits(v, &ip, &over);
    if (!p)
        return SUP_UNIT_SYNTAX;
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

/*
 * One style for every rate the supervisor prints (show, logs, errors): the
 * largest unit the rate reaches, with as many decimals as it takes to be
 * exact and none it does not ("100mbit", "49.8mbit", "1.5gbit", "12bit"),
 * so that what is printed reads back through the same parser to the same
 * number (at most 9 decimals, the parser's limit: past that, a smaller unit).
 */
char *sup_rate_format(uint64_t bits, char *buf, size_t len)
{
    static const struct sup_unit order[] = {
        {"tbit", 1000000000000}, {"gbit", 1000000000}, {"mbit", 1000000}, {"kbit", 1000},
    };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        uint64_t m = order[i].mult;
        if (bits < m)
            continue;
        uint64_t whole = bits / m, rem = bits % m;
        if (rem == 0) {
            snprintf(buf, len, "%llu%s", (unsigned long long)whole, order[i].suffix);
            return buf;
        }
        unsigned digits = 0;
        for (uint64_t x = m; x > 1; x /= 10)
            digits++;
        char frac[16];
        snprintf(frac, sizeof frac, "%0*llu", (int)digits, (unsigned long long)rem);
        size_t fl = strlen(frac);
        while (fl && frac[fl - 1] == '0')
            frac[--fl] = '\0';
        if (fl > 9)
            continue;
        snprintf(buf, len, "%llu.%s%s", (unsigned long long)whole, frac, order[i].suffix);
        return buf;
    }
    snprintf(buf, len, "%llubit", (unsigned long long)bits);
    return buf;
}

/* ---- value parsers ---- */

/* An integer within the key's range, or the error. */
static int sup_ranged(struct sup_pctx *pc, const struct sup_key *k, const char *v, int64_t *x)
{
    int r = sup_int(v, x);
    if (r == -EINVAL)
        return sup_vfail(pc, k, "\"%s\" is not an integer", v);
    if (r || *x < k->min || *x > k->max)
        return sup_vfail(pc, k, "%s is out of range %lld..%lld", v, (long long)k->min, (long long)k->max);
    return 0;
}

int sup_p_u32(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int64_t x;
    int r = sup_ranged(pc, k, v, &x);
    if (r == 0)
        *(uint32_t *)dst = (uint32_t)x;
    return r;
}

int sup_p_i32(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int64_t x;
    int r = sup_ranged(pc, k, v, &x);
    if (r == 0)
        *(int32_t *)dst = (int32_t)x;
    return r;
}

int sup_p_pow2(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int r = sup_p_u32(pc, k, v, dst);
    uint32_t x = *(uint32_t *)dst;
    if (r == 0 && (x & (x - 1)))
        return sup_vfail(pc, k, "%s is not a power of two", v);
    return r;
}

/* A frame size: one of a few values, so the range is a list. */
int sup_p_frame(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int64_t x;
    int r = sup_int(v, &x);
    if (r == -EINVAL)
        return sup_vfail(pc, k, "\"%s\" is not an integer", v);
    if (r || !ipc_pool_frame_ok((uint32_t)x) || x != (int64_t)(uint32_t)x)
        return sup_vfail(pc, k, "%s is not a power of two from %u to %u", v, IPC_FRAME_DEFAULT,
                         IPC_FRAME_MAX);
    *(uint32_t *)dst = (uint32_t)x;
    return 0;
}

static void sup_words_list(const struct sup_word *w, char *buf, size_t len)
{
    size_t n = 0;
    for (; w->word; w++)
        sup_append(buf, len, &n, "%s%s", n ? (w[1].word ? ", " : " or ") : "", w->word);
}

int sup_p_enum(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
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

int sup_p_bool(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
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

int sup_c_ident(int c)
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

int sup_p_ident(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    char what[64];
    snprintf(what, sizeof what, "a name of 1 to %lld of a-z 0-9 _ -", (long long)k->max);
    return sup_p_chars(pc, k, v, dst, sup_c_ident, what);
}

int sup_p_ifname(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    return sup_p_chars(pc, k, v, dst, sup_c_ifname,
                       "a network interface name (1 to 15 of A-Z a-z 0-9 _ - . @)");
}

int sup_p_netns(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    return sup_p_chars(pc, k, v, dst, sup_c_netns,
                       "a network namespace name (1 to 63 of A-Z a-z 0-9 _ - .)");
}

/* User and group names as useradd(8) takes them by default; "" = automatic. */
int sup_p_user(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    bool good = strlen(v) <= SUP_USER_MAX && (*v == '\0' || *v == '_' || islower((unsigned char)*v));
    for (const char *p = v; good && *p; p++)
        good = islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_' || *p == '-';
    if (!good)
        return sup_vfail(pc, k, "\"%s\" is not a user or group name", v);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

/* A range of uids "FIRST-LAST", both ends included, within the key's range
 * (1..SUP_UID_MAX), and touching neither uid that means someone else: the
 * kernel's overflow uid (nobody), or -1 to the 16-bit system calls. Whether
 * it holds every service is checked once the services are known
 * (manifest_check.c), whether its uids are free on this machine at `up`
 * (supervisor/uids.c). */
int sup_p_uids(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint64_t first, last;
    bool over1, over2;
    const char *p = sup_digits(v, &first, &over1);
    const char *q = p && *p == '-' ? sup_digits(p + 1, &last, &over2) : NULL;
    if (!q || *q)
        return sup_vfail(pc, k, "\"%s\" is not a uid range: expected FIRST-LAST, such as %s", v, k->def);
    if (first == 0)
        return sup_vfail(pc, k, "%s includes uid 0, root", v);
    if (over1 || over2 || first > (uint64_t)k->max || last > (uint64_t)k->max)
        return sup_vfail(pc, k, "%s is out of range %lld..%lld", v, (long long)k->min, (long long)k->max);
    if (first > last)
        return sup_vfail(pc, k, "%s is backwards: FIRST must not be above LAST", v);
    if (first <= SUP_UID_OVERFLOW && last >= SUP_UID_OVERFLOW)
        return sup_vfail(pc, k, "%s includes uid %u, nobody: the kernel's overflow uid", v, SUP_UID_OVERFLOW);
    if (first <= SUP_UID_MINUS1_16 && last >= SUP_UID_MINUS1_16)
        return sup_vfail(pc, k, "%s includes uid %u, which is -1 to the 16-bit system calls", v, SUP_UID_MINUS1_16);
    *(struct sup_uids *)dst = (struct sup_uids){(uint32_t)first, (uint32_t)last};
    return 0;
}

int sup_p_path(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int r = sup_p_chars(pc, k, v, dst, sup_c_path, "an absolute path of at most 80 of A-Z a-z 0-9 _ - . /");
    if (r == 0 && v[0] != '/')
        return sup_vfail(pc, k, "\"%s\" is not an absolute path", v);
    return r;
}

/* An executable: a name in the directory of ringrouter's own binary, or an
 * absolute path. Tests use it to put a stand-in in a service's place, and an
 * upgrade to point a service at a new build. */
int sup_p_binary(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    int r = sup_p_chars(pc, k, v, dst, sup_c_path,
                        "a program name or an absolute path of at most 80 of A-Z a-z 0-9 _ - . /");
    if (r == 0 && v[0] != '/' && strchr(v, '/'))
        return sup_vfail(pc, k, "\"%s\" is neither a program name nor an absolute path", v);
    return r;
}

int sup_p_addr(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    if (!sup_parse_addr(v, dst))
        return sup_vfail(pc, k, "\"%s\" is not an IPv4 address", v);
    return 0;
}

/* Addresses no router port may have (RFC 1812 5.3.7 and RFC 6890). */
const char *sup_martian(uint32_t a)
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
int sup_p_host_prefix(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
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

bool sup_parse_mac(const char *v, uint8_t mac[6])
{
    const char *p = v;
    for (int i = 0; i < 6; i++) {
        if (i && *p++ != ':')
            return false;
        if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]))
            return false;
        char hex[3] = {p[0], p[1], 0};
        mac[i] = (uint8_t)strtoul(hex, NULL, 16);
        p += 2;
    }
    return *p == '\0';
}

int sup_p_mac(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint8_t mac[6];
    if (!sup_parse_mac(v, mac))
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
int sup_p_port_mac(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_port *port = dst;
    int r = sup_p_mac(pc, k, v, port->mac);
    if (r == 0)
        port->has_mac = true;
    return r;
}

/* A kind of quantity: its units, and how its errors speak of it. */
struct sup_quantity {
    const struct sup_unit *units;
    const char *whole;   /* "bits per second": what a fraction is not a whole number of */
    const char *example; /* "a rate such as 100mbit" */
    const char *names;   /* the units, listed */
    bool wide;           /* a uint64_t destination; else uint32_t */
    void (*range)(int64_t min, int64_t max, char *buf, size_t len); /* "LOW..HIGH", as written */
};

static void sup_rate_range(int64_t min, int64_t max, char *buf, size_t len)
{
    snprintf(buf, len, "%s..%s", RATE((uint64_t)min), RATE((uint64_t)max));
}

static void sup_size_range(int64_t min, int64_t max, char *buf, size_t len)
{
    snprintf(buf, len, "%lld..%lld bytes", (long long)min, (long long)max);
}

static void sup_time_range(int64_t min, int64_t max, char *buf, size_t len)
{
    snprintf(buf, len, "%lldms..%llds", (long long)min, (long long)max / 1000);
}

static const struct sup_quantity sup_rate_q = {sup_rate_units, "bits per second", "a rate such as 100mbit",
                                               SUP_RATE_UNITS, true, sup_rate_range};
static const struct sup_quantity sup_size_q = {sup_size_units, "bytes", "a size in bytes such as 64k",
                                               SUP_SIZE_UNITS, false, sup_size_range};
static const struct sup_quantity sup_time_q = {sup_time_units, "milliseconds", "a duration such as 10s or 500ms",
                                               SUP_TIME_UNITS, false, sup_time_range};

/* @v as a @q within @min..@max: true with *@x, or false with why in @why. */
static bool sup_quantity(const struct sup_quantity *q, const char *v, int64_t min, int64_t max, uint64_t *x,
                         char *why, size_t len)
{
    const char *unit = "";
    char range[80];
    int r = sup_units(v, q->units, x, &unit);
    if (r == SUP_UNIT_FRACTION)
        snprintf(why, len, "%s is not a whole number of %s", v, q->whole);
    else if (r == SUP_UNIT_NONE)
        snprintf(why, len, "\"%s\" has no unit, expected %s (%s)", v, q->example, q->names);
    else if (r == SUP_UNIT_UNKNOWN)
        snprintf(why, len, "\"%s\" has an unknown unit \"%s\", expected %s", v, unit, q->names);
    else if (r == SUP_UNIT_SYNTAX)
        snprintf(why, len, "\"%s\" is not %s", v, q->example);
    else if (r == SUP_UNIT_RANGE || *x < (uint64_t)min || *x > (uint64_t)max) {
        q->range(min, max, range, sizeof range);
        snprintf(why, len, "%s is out of range %s", v, range);
    } else {
        return true;
    }
    return false;
}

static int sup_p_quantity(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst,
                          const struct sup_quantity *q)
{
    uint64_t x;
    char why[SUP_MANIFEST_ERR_MAX];
    if (!sup_quantity(q, v, k->min, k->max, &x, why, sizeof why))
        return sup_vfail(pc, k, "%s", why);
    if (q->wide)
        *(uint64_t *)dst = x;
    else
        *(uint32_t *)dst = (uint32_t)x;
    return 0;
}

const char *sup_parse_rate(const char *v, uint64_t *bits, char *why, size_t len)
{
    return sup_quantity(&sup_rate_q, v, SUP_RATE_MIN, SUP_RATE_MAX, bits, why, len) ? NULL : why;
}

int sup_p_rate(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    return sup_p_quantity(pc, k, v, dst, &sup_rate_q);
}

int sup_p_size(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    return sup_p_quantity(pc, k, v, dst, &sup_size_q);
}

int sup_p_duration(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    return sup_p_quantity(pc, k, v, dst, &sup_time_q);
}

/* Split @v at commas into trimmed items; calls @fn on each. An empty item
 * ("csum,,tso4", a trailing comma) is an error, not something to skip. */
static int sup_each_item(struct sup_pctx *pc, const struct sup_key *k, const char *v,
                         int (*fn)(struct sup_pctx *, const struct sup_key *, const char *, void *),
                         void *dst)
{
    char buf[SUP_LINE_MAX + 1];
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

/* "none" was listed: a bit that no offload uses. */
#define SUP_OFFLOAD_NONE_SEEN 0x80000000u

static int sup_offload_item(struct sup_pctx *pc, const struct sup_key *k, const char *item, void *dst)
{
    uint32_t *set = dst;
    for (const struct sup_word *w = sup_offload_words; w->word; w++) {
        if (strcmp(w->word, item) != 0)
            continue;
        if (w->value == 0) {
            /* "none" only alone: seen once, and nothing before or after it */
            if (*set & SUP_OFFLOAD_NONE_SEEN || *set)
                return sup_vfail(pc, k, "none cannot be combined with other offloads");
            *set |= SUP_OFFLOAD_NONE_SEEN;
            return 0;
        }
        if (*set & SUP_OFFLOAD_NONE_SEEN)
            return sup_vfail(pc, k, "none cannot be combined with other offloads");
        if (*set & (uint32_t)w->value)
            return sup_vfail(pc, k, "%s is listed twice", item);
        *set |= (uint32_t)w->value;
        return 0;
    }
    return sup_vfail(pc, k, "\"%s\" is not one of csum, tso4, tso6, uso or none", item);
}

int sup_p_offloads(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint32_t set = 0;
    int r = sup_each_item(pc, k, v, sup_offload_item, &set);
    if (r)
        return r;
    set &= ~SUP_OFFLOAD_NONE_SEEN;
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
        {"dscp", SHP_MATCH_DSCP}, {"proto", SHP_MATCH_PROTO}, {"sport", SHP_MATCH_SPORT},
        {"dport", SHP_MATCH_DPORT}, {"src", SHP_MATCH_SRC},  {"dst", SHP_MATCH_DST},
        {"mark", SHP_MATCH_MARK},   {NULL, 0},
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
        w = &fields[sizeof(fields) / sizeof(fields[0]) - 1];
    }
    if (!w->word)
        return sup_vfail(pc, k, "\"%s\" is not a match term: expected dscp, proto, sport, dport, src, dst or mark",
                         term);
    if (*arg == '\0')
        return sup_vfail(pc, k, "\"%s\" needs a value", term);
    /* src and dst take either family; the IPv6 spelling has its own bit. */
    bool v6 = (w->value == SHP_MATCH_SRC || w->value == SHP_MATCH_DST) && strchr(arg, ':');
    uint32_t bit = (uint32_t)w->value;
    uint32_t bit6 = bit == SHP_MATCH_SRC ? SHP_MATCH_SRC6 : bit == SHP_MATCH_DST ? SHP_MATCH_DST6 : 0;
    if (m->fields & (bit | bit6))
        return sup_vfail(pc, k, "%s is given twice", w->word);
    m->fields |= v6 ? bit6 : bit;
    int64_t x;
    switch (w->value) {
    case SHP_MATCH_DSCP:
        if (sup_int(arg, &x) || x < 0 || x > 63)
            return sup_vfail(pc, k, "\"%s\": expected a DSCP value 0..63", term);
        m->dscp = (uint8_t)x;
        return 0;
    case SHP_MATCH_MARK:
        if (sup_int(arg, &x) || x < 1 || x > UINT32_MAX)
            return sup_vfail(pc, k, "\"%s\": expected a mark 1..4294967295 (a [filter] rule's meta mark set)", term);
        m->mark = (uint32_t)x;
        return 0;
    case SHP_MATCH_PROTO:
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
    case SHP_MATCH_SPORT:
    case SHP_MATCH_DPORT: {
        uint16_t *lo = w->value == SHP_MATCH_SPORT ? &m->sport_lo : &m->dport_lo;
        uint16_t *hi = w->value == SHP_MATCH_SPORT ? &m->sport_hi : &m->dport_hi;
        if (sup_port_range(arg, lo, hi))
            return sup_vfail(pc, k, "\"%s\": expected a port 0..65535 or a range LOW-HIGH", term);
        return 0;
    }
    default: {
        if (v6)
            return sup_match_prefix6(pc, k, term, arg, w->value == SHP_MATCH_SRC ? &m->src6 : &m->dst6);
        struct sup_prefix *p = w->value == SHP_MATCH_SRC ? &m->src : &m->dst;
        if (!sup_parse_prefix(arg, p))
            return sup_vfail(pc, k, "\"%s\": expected an IPv4 or IPv6 prefix", term);
        if (p->addr & ~sup_mask(p->len))
            return sup_vfail(pc, k, "\"%s\": %s has host bits set, did you mean %s?", term, arg,
                             PREFIX(p->addr & sup_mask(p->len), p->len));
        return 0;
    }
    }
}

int sup_p_match(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_match m = {0};
    int r = sup_each_item(pc, k, v, sup_match_term, &m);
    if (r)
        return r;
    if ((m.fields & (SHP_MATCH_SPORT | SHP_MATCH_DPORT)) && (m.fields & SHP_MATCH_PROTO) && m.proto != 6 &&
        m.proto != 17)
        return sup_vfail(pc, k, "sport and dport need proto tcp or udp");
    if ((m.fields & SHP_MATCH_V4) && (m.fields & SHP_MATCH_V6))
        return sup_vfail(pc, k, "src and dst are of different families (IPv4 and IPv6): no packet has both; use two "
                                "classes");
    *(struct sup_match *)dst = m;
    return 0;
}
