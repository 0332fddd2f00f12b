/* SPDX-License-Identifier: MIT */
/*
 * services/filter/rules.c: the rule language's parser, an nftables-like
 * subset (docs/filter.md has the grammar): named sets, one chain per hook,
 * one rule per line (or per `;`), matches then a verdict. Errors say the
 * line, the column, what was expected and what was found; nothing of a
 * ruleset that fails is kept.
 */
#include "services/filter/rules_lex.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *tokname(enum tok t)
{
    static const char *n[] = { "end of input", "word", "string", "'{'", "'}'", "','", "';'", "end of line",
                               "'@'", "'!='", "'='", "'&'", "'|'", "'('", "')'", "'/'", "bad character" };
    return n[t];
}

void lx_fail(struct lex *l, const char *fmt, ...)
{
    if (l->failed)
        return;
    l->failed = true;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (l->err && l->errlen)
        snprintf(l->err, l->errlen, "line %u, column %u: %s", l->tline, l->tcol, msg);
}

void lx_expected(struct lex *l, const char *what)
{
    if (l->t == T_WORD || l->t == T_STR)
        lx_fail(l, "expected %s, got '%s'", what, l->w);
    else
        lx_fail(l, "expected %s, got %s", what, tokname(l->t));
}

static bool wordch(char c) { return isalnum((unsigned char)c) || strchr("._:-[]", c); }

void lx_next(struct lex *l)
{
    if (l->failed) {
        l->t = T_EOF;
        return;
    }
    for (;;) {
        while (l->pos < l->len && (l->s[l->pos] == ' ' || l->s[l->pos] == '\t' || l->s[l->pos] == '\r')) {
            l->pos++;
            l->col++;
        }
        if (l->pos < l->len && l->s[l->pos] == '#') {
            while (l->pos < l->len && l->s[l->pos] != '\n')
                l->pos++;
            continue;
        }
        if (l->pos + 1 < l->len && l->s[l->pos] == '\\' && l->s[l->pos + 1] == '\n') {
            l->pos += 2; /* a continued line */
            l->line++;
            l->col = 1;
            continue;
        }
        break;
    }
    l->tline = l->line;
    l->tcol = l->col;
    l->w[0] = 0;
    if (l->pos >= l->len || l->s[l->pos] == 0) {
        l->t = T_EOF;
        return;
    }
    char c = l->s[l->pos];
    size_t start = l->pos;
    if (c == '\n') {
        l->pos++;
        l->line++;
        l->col = 1;
        l->t = T_NL;
        return;
    }
    if (c == '"') {
        size_t i = l->pos + 1;
        while (i < l->len && l->s[i] != '"' && l->s[i] != '\n')
            i++;
        if (i >= l->len || l->s[i] != '"' || i - l->pos - 1 >= sizeof l->w) {
            l->t = T_BAD;
            lx_fail(l, "unterminated or overlong string");
            return;
        }
        memcpy(l->w, l->s + l->pos + 1, i - l->pos - 1);
        l->w[i - l->pos - 1] = 0;
        l->col += (unsigned)(i + 1 - l->pos);
        l->pos = i + 1;
        l->t = T_STR;
        return;
    }
    if (wordch(c)) {
        size_t i = l->pos;
        while (i < l->len && wordch(l->s[i]))
            i++;
        /* a prefix length belongs to its address: 10.0.0.0/8 */
        if (i + 1 < l->len && l->s[i] == '/' && isdigit((unsigned char)l->s[i + 1])) {
            i++;
            while (i < l->len && isdigit((unsigned char)l->s[i]))
                i++;
        }
        if (i - l->pos >= sizeof l->w) {
            l->t = T_BAD;
            lx_fail(l, "word too long");
            return;
        }
        memcpy(l->w, l->s + l->pos, i - l->pos);
        l->w[i - l->pos] = 0;
        l->col += (unsigned)(i - l->pos);
        l->pos = i;
        l->t = T_WORD;
        return;
    }
    l->pos++;
    l->col++;
    switch (c) {
    case '{': l->t = T_LBRACE; break;
    case '}': l->t = T_RBRACE; break;
    case ',': l->t = T_COMMA; break;
    case ';': l->t = T_SEMI; break;
    case '@': l->t = T_AT; break;
    case '&': l->t = T_AMP; break;
    case '|': l->t = T_PIPE; break;
    case '(': l->t = T_LPAR; break;
    case ')': l->t = T_RPAR; break;
    case '/': l->t = T_SLASH; break;
    case '=':
        if (l->pos < l->len && l->s[l->pos] == '=') {
            l->pos++;
            l->col++;
        }
        l->t = T_EQ;
        break;
    case '!':
        if (l->pos < l->len && l->s[l->pos] == '=') {
            l->pos++;
            l->col++;
            l->t = T_NE;
            break;
        }
        /* fall through */
    default:
        l->t = T_BAD;
        l->w[0] = c;
        l->w[1] = 0;
        (void)start;
        lx_fail(l, "unexpected character '%c'", c);
    }
}

bool lx_is_word(struct lex *l, const char *w) { return l->t == T_WORD && !strcmp(l->w, w); }

bool lx_accept_word(struct lex *l, const char *w)
{
    if (!lx_is_word(l, w))
        return false;
    lx_next(l);
    return true;
}

bool lx_expect_word(struct lex *l, const char *w)
{
    if (lx_accept_word(l, w))
        return true;
    char what[64];
    snprintf(what, sizeof what, "'%s'", w);
    lx_expected(l, what);
    return false;
}

bool lx_expect(struct lex *l, enum tok t)
{
    if (l->t == t) {
        lx_next(l);
        return true;
    }
    lx_expected(l, tokname(t));
    return false;
}

void lx_skip_nl(struct lex *l)
{
    while (l->t == T_NL || l->t == T_SEMI)
        lx_next(l);
}

/* braces span lines: newlines inside a { } list are not rule ends */
void lx_skip_nl_only(struct lex *l)
{
    while (l->t == T_NL)
        lx_next(l);
}

/* ---- values ---- */

bool lx_parse_num(const char *w, unsigned long max, unsigned long *out)
{
    char *end;
    if (!isdigit((unsigned char)w[0]))
        return false;
    unsigned long v = strtoul(w, &end, 10);
    if (*end || v > max)
        return false;
    *out = v;
    return true;
}

/* an address with an optional /len: family 4 or 6, 0 when not one */
int lx_parse_prefix(const char *w, uint8_t a[16], unsigned *plen)
{
    char buf[96];
    snprintf(buf, sizeof buf, "%s", w);
    char *sl = strchr(buf, '/');
    unsigned long pl = 0;
    if (sl)
        *sl++ = 0;
    uint8_t v4[4];
    int fam = 0;
    if (inet_pton(AF_INET, buf, v4) == 1) {
        memset(a, 0, 10);
        a[10] = a[11] = 0xff;
        memcpy(a + 12, v4, 4);
        fam = 4;
    } else if (inet_pton(AF_INET6, buf, a) == 1) {
        fam = 6;
    } else {
        return 0;
    }
    if (sl && !lx_parse_num(sl, fam == 4 ? 32 : 128, &pl))
        return 0;
    *plen = sl ? (unsigned)pl + (fam == 4 ? 96 : 0) : 128;
    return fam;
}

int lx_new_set(struct lex *l, const char *name, int kind, int fam)
{
    struct flt_rules *r = l->r;
    struct flt_set *ns = realloc(r->sets, (r->nsets + 1) * sizeof *ns);
    if (!ns) {
        lx_fail(l, "out of memory");
        return -1;
    }
    r->sets = ns;
    struct flt_set *s = &r->sets[r->nsets];
    memset(s, 0, sizeof *s);
    size_t nl = strnlen(name, sizeof s->name - 1);
    memcpy(s->name, name, nl);
    s->name[nl] = 0;
    s->kind = kind;
    s->family = fam;
    if (kind == 1 && !(s->bits = calloc(1, 8192))) {
        lx_fail(l, "out of memory");
        return -1;
    }
    return (int)r->nsets++;
}

static const struct { const char *n; int v; } icmp_names[] = {
    { "echo-reply", 0 }, { "destination-unreachable", 3 }, { "source-quench", 4 }, { "redirect", 5 },
    { "echo-request", 8 }, { "router-advertisement", 9 }, { "router-solicitation", 10 }, { "time-exceeded", 11 },
    { "parameter-problem", 12 }, { "timestamp-request", 13 }, { "timestamp-reply", 14 },
};
static const struct { const char *n; int v; } icmp6_names[] = {
    { "destination-unreachable", 1 }, { "packet-too-big", 2 }, { "time-exceeded", 3 }, { "parameter-problem", 4 },
    { "echo-request", 128 }, { "echo-reply", 129 }, { "nd-router-solicit", 133 }, { "nd-router-advert", 134 },
    { "nd-neighbor-solicit", 135 }, { "nd-neighbor-advert", 136 }, { "nd-redirect", 137 },
};

/* one number-like element: a port or range, a protocol, an ICMP type */
bool lx_parse_numval(struct lex *l, int what, unsigned long *lo, unsigned long *hi)
{
    if (l->t != T_WORD) {
        lx_expected(l, what == M_PROTO ? "a protocol" : what == M_ICMPTYPE ? "an ICMP type" : "a port or range");
        return false;
    }
    const char *w = l->w;
    if (what == M_PROTO) {
        static const struct { const char *n; int v; } pn[] = { { "tcp", 6 }, { "udp", 17 }, { "icmp", 1 },
                                                                 { "icmpv6", 58 }, { "ipv6-icmp", 58 },
                                                                 { "gre", 47 }, { "esp", 50 }, { "sctp", 132 } };
        for (size_t i = 0; i < sizeof pn / sizeof pn[0]; i++)
            if (!strcmp(w, pn[i].n)) {
                *lo = *hi = (unsigned long)pn[i].v;
                lx_next(l);
                return true;
            }
        if (lx_parse_num(w, 255, lo)) {
            *hi = *lo;
            lx_next(l);
            return true;
        }
        lx_expected(l, "a protocol (tcp, udp, icmp, icmpv6, or 0..255)");
        return false;
    }
    if (what == M_ICMPTYPE || what == M_ICMPTYPE + 100) {
        bool v6 = what != M_ICMPTYPE;
        size_t n = v6 ? sizeof icmp6_names / sizeof icmp6_names[0] : sizeof icmp_names / sizeof icmp_names[0];
        for (size_t i = 0; i < n; i++)
            if (!strcmp(w, v6 ? icmp6_names[i].n : icmp_names[i].n)) {
                *lo = *hi = (unsigned long)(v6 ? icmp6_names[i].v : icmp_names[i].v);
                lx_next(l);
                return true;
            }
        if (lx_parse_num(w, 255, lo)) {
            *hi = *lo;
            lx_next(l);
            return true;
        }
        lx_expected(l, v6 ? "an ICMPv6 type (echo-request, ...)" : "an ICMP type (echo-request, ...)");
        return false;
    }
    char buf[96];
    snprintf(buf, sizeof buf, "%s", w);
    char *dash = strchr(buf, '-');
    if (dash)
        *dash++ = 0;
    if (!lx_parse_num(buf, 65535, lo) || (dash && (!lx_parse_num(dash, 65535, hi) || *hi < *lo))) {
        lx_expected(l, "a port (0..65535) or range (lo-hi)");
        return false;
    }
    if (!dash)
        *hi = *lo;
    lx_next(l);
    return true;
}

static void set_bits(struct flt_set *s, unsigned long lo, unsigned long hi)
{
    for (unsigned long v = lo; v <= hi; v++)
        s->bits[v >> 3] |= (uint8_t)(1u << (v & 7));
}

/* { elem, elem } into set si; what: a match kind or -4/-6 for addresses */
bool lx_parse_elements(struct lex *l, int si, int what)
{
    if (!lx_expect(l, T_LBRACE))
        return false;
    lx_skip_nl_only(l);
    while (!l->failed && l->t != T_RBRACE) {
        struct flt_set *s = &l->r->sets[si];
        if (s->kind == 0) {
            uint8_t a[16], lo[16], hi[16];
            unsigned plen;
            int fam = l->t == T_WORD ? lx_parse_prefix(l->w, a, &plen) : 0;
            if (fam == 0 || (s->family && fam != s->family)) {
                lx_expected(l, s->family == 6 ? "an IPv6 address or prefix" : s->family == 4 ?
                                                "an IPv4 address or prefix" : "an address or prefix");
                return false;
            }
            s->family = fam;
            flt_prefix_range(a, plen, lo, hi);
            if (flt_set_add_range(s, lo, hi) < 0) {
                lx_fail(l, "out of memory");
                return false;
            }
            lx_next(l);
        } else {
            unsigned long lo, hi;
            if (!lx_parse_numval(l, what, &lo, &hi))
                return false;
            set_bits(s, lo, hi);
        }
        lx_skip_nl_only(l);
        if (l->t == T_COMMA) {
            lx_next(l);
            lx_skip_nl_only(l);
        } else if (l->t != T_RBRACE) {
            lx_expected(l, "',' or '}'");
            return false;
        }
    }
    return lx_expect(l, T_RBRACE);
}

int lx_find_set(struct lex *l, const char *name)
{
    for (uint32_t i = 0; i < l->r->nsets; i++)
        if (l->r->sets[i].name[0] && !strcmp(l->r->sets[i].name, name))
            return (int)i;
    return -1;
}

/* set NAME { type T; [flags interval;] elements = { ... } } */
static void parse_set(struct lex *l)
{
    if (l->t != T_WORD) {
        lx_expected(l, "a set name");
        return;
    }
    if (lx_find_set(l, l->w) >= 0) {
        lx_fail(l, "set '%s' is defined twice", l->w);
        return;
    }
    if (strlen(l->w) >= 32) {
        lx_fail(l, "set name '%s' is longer than 31 characters", l->w);
        return;
    }
    char name[32];
    memcpy(name, l->w, strlen(l->w) + 1);
    lx_next(l);
    if (!lx_expect(l, T_LBRACE))
        return;
    lx_skip_nl(l);
    if (!lx_expect_word(l, "type"))
        return;
    int kind, fam = 0, what = M_DPORT;
    if (lx_is_word(l, "ipv4_addr"))
        kind = 0, fam = 4;
    else if (lx_is_word(l, "ipv6_addr"))
        kind = 0, fam = 6;
    else if (lx_is_word(l, "inet_service"))
        kind = 1;
    else if (lx_is_word(l, "inet_proto"))
        kind = 1, what = M_PROTO;
    else {
        lx_expected(l, "a set type (ipv4_addr, ipv6_addr, inet_service, inet_proto)");
        return;
    }
    lx_next(l);
    lx_skip_nl(l);
    int si = lx_new_set(l, name, kind, fam);
    if (si < 0)
        return;
    if (lx_accept_word(l, "flags")) {
        if (!lx_expect_word(l, "interval"))
            return;
        lx_skip_nl(l);
    }
    if (lx_accept_word(l, "elements")) {
        if (!lx_expect(l, T_EQ))
            return;
        if (!lx_parse_elements(l, si, what))
            return;
        lx_skip_nl(l);
    }
    lx_expect(l, T_RBRACE);
}

struct flt_rules *flt_rules_compile(const char *text, size_t len, const struct flt_port *ports, unsigned nports,
                                    char *err, size_t errlen)
{
    struct lex l = { .s = text, .len = len, .line = 1, .col = 1, .err = err, .errlen = errlen, .ports = ports,
                     .nports = nports };
    if (err && errlen)
        err[0] = 0;
    l.r = calloc(1, sizeof *l.r);
    if (!l.r)
        return NULL;
    l.r->nports = nports;
    bool seen[FLT_NHOOKS] = { false };
    for (int h = 0; h < FLT_NHOOKS; h++)
        l.r->c[h].policy = A_ACCEPT;
    lx_next(&l);
    lx_skip_nl(&l);
    while (!l.failed && l.t != T_EOF) {
        if (lx_accept_word(&l, "set"))
            parse_set(&l);
        else if (lx_accept_word(&l, "chain"))
            lx_parse_chain(&l, seen);
        else
            lx_expected(&l, "'set' or 'chain'");
        lx_skip_nl(&l);
    }
    if (!l.failed && flt_rules_finish(l.r) < 0)
        lx_fail(&l, "out of memory");
    if (l.failed) {
        flt_rules_free(l.r);
        return NULL;
    }
    return l.r;
}

void flt_rules_free(struct flt_rules *r)
{
    if (!r)
        return;
    for (int h = 0; h < FLT_NHOOKS; h++) {
        struct chain *c = &r->c[h];
        for (uint32_t i = 0; i < c->nmaps; i++) {
            free(c->maps[i].keys_hi);
            free(c->maps[i].keys_lo);
            free(c->maps[i].rule);
        }
        free(c->maps);
        free(c->map_at);
        free(c->r);
    }
    for (uint32_t i = 0; i < r->nsets; i++) {
        free(r->sets[i].ranges);
        free(r->sets[i].bits);
    }
    free(r->sets);
    free(r);
}
