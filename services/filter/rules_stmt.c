/* SPDX-License-Identifier: MIT */
/*
 * services/filter/rules_stmt.c: chains and rules of the rule language
 * (rules.c has the lexer, values and sets). A rule is matches then at most
 * one verdict; every error names where and what was expected.
 */
#include "services/filter/rules_lex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct match *add_match(struct lex *l, struct rule *r, int kind)
{
    if (r->nm >= MAX_MATCH) {
        lx_fail(l, "too many matches in one rule (at most %d)", MAX_MATCH);
        return NULL;
    }
    struct match *m = &r->m[r->nm++];
    memset(m, 0, sizeof *m);
    m->kind = (uint8_t)kind;
    m->set = -1;
    return m;
}

/* an implied match (tcp dport implies protocol tcp): once per rule */
static void imply(struct lex *l, struct rule *r, int kind, uint64_t v)
{
    for (unsigned i = 0; i < r->nm; i++)
        if (r->m[i].kind == kind && r->m[i].set < 0 && !r->m[i].neg && r->m[i].a == v && r->m[i].b == v)
            return;
    struct match *m = add_match(l, r, kind);
    if (m)
        m->a = m->b = v;
}

static int port_index(struct lex *l, const char *name)
{
    for (unsigned i = 0; i < l->nports; i++)
        if (!strcmp(l->ports[i].name, name))
            return (int)i;
    return -1;
}

static void parse_ifaces(struct lex *l, struct match *m)
{
    bool list = l->t == T_LBRACE;
    if (list) {
        lx_next(l);
        lx_skip_nl_only(l);
    }
    do {
        if (l->t == T_COMMA) {
            lx_next(l);
            lx_skip_nl_only(l);
        }
        if (l->t != T_WORD && l->t != T_STR) {
            lx_expected(l, "a port name");
            return;
        }
        int p = port_index(l, l->w);
        if (p < 0) {
            lx_fail(l, "unknown port '%s'", l->w);
            return;
        }
        m->a |= 1ull << p;
        lx_next(l);
        lx_skip_nl_only(l);
    } while (list && l->t == T_COMMA);
    if (list)
        lx_expect(l, T_RBRACE);
}

/* [!=] then, after `@`, a named set of the right kind (fam 0: numbers);
 * true when the match was a set reference (taken or failed) */
static bool parse_neg_and_set(struct lex *l, struct match *m, int fam)
{
    if (l->t == T_NE) {
        m->neg = 1;
        lx_next(l);
    }
    if (l->t != T_AT)
        return false;
    lx_next(l);
    int si = l->t == T_WORD ? lx_find_set(l, l->w) : -1;
    if (si < 0) {
        if (l->t == T_WORD)
            lx_fail(l, "unknown set '%s'", l->w);
        else
            lx_expected(l, "a set name");
        return true;
    }
    const struct flt_set *s = &l->r->sets[si];
    if (fam && (s->kind != 0 || s->family != fam)) {
        lx_fail(l, "set '%s' does not hold %s addresses", s->name, fam == 4 ? "IPv4" : "IPv6");
        return true;
    }
    if (!fam && s->kind != 1) {
        lx_fail(l, "set '%s' holds addresses, not numbers", s->name);
        return true;
    }
    m->set = si;
    m->set_is_named = 1;
    lx_next(l);
    return true;
}

/* after `ip saddr`: [!=] prefix | @set | { prefixes } */
static void parse_addr_match(struct lex *l, struct match *m, int fam)
{
    if (parse_neg_and_set(l, m, fam))
        return;
    if (l->t == T_LBRACE) {
        int si = lx_new_set(l, "", 0, fam);
        if (si >= 0 && lx_parse_elements(l, si, 0))
            m->set = si;
        return;
    }
    unsigned plen;
    int got = l->t == T_WORD ? lx_parse_prefix(l->w, m->addr, &plen) : 0;
    if (got != fam) {
        lx_expected(l, fam == 4 ? "an IPv4 address, prefix, @set or { list }" :
                                  "an IPv6 address, prefix, @set or { list }");
        return;
    }
    m->plen = (uint8_t)plen;
    lx_next(l);
}

/* after `tcp dport`, `meta l4proto`, `icmp type`: value, range, @set, {} */
static void parse_num_match(struct lex *l, struct match *m, int what)
{
    if (parse_neg_and_set(l, m, 0))
        return;
    if (l->t == T_LBRACE) {
        int si = lx_new_set(l, "", 1, 0);
        if (si >= 0 && lx_parse_elements(l, si, what))
            m->set = si;
        return;
    }
    unsigned long lo, hi;
    if (lx_parse_numval(l, what, &lo, &hi)) {
        m->a = lo;
        m->b = hi;
    }
}

static uint64_t parse_flag_list(struct lex *l)
{
    static const char *fn[] = { "fin", "syn", "rst", "psh", "ack", "urg", "ecn", "cwr" };
    uint64_t mask = 0;
    bool paren = l->t == T_LPAR;
    if (paren)
        lx_next(l);
    for (;;) {
        unsigned i = 0;
        while (i < 8 && !lx_is_word(l, fn[i]))
            i++;
        if (i == 8) {
            lx_expected(l, "a TCP flag (fin, syn, rst, psh, ack, urg, ecn, cwr)");
            return 0;
        }
        mask |= 1u << i;
        lx_next(l);
        if (l->t != T_PIPE && l->t != T_COMMA)
            break;
        lx_next(l);
    }
    if (paren)
        lx_expect(l, T_RPAR);
    return mask;
}

static void parse_ct_states(struct lex *l, struct match *m)
{
    bool list = l->t == T_LBRACE;
    if (list)
        lx_next(l);
    for (;;) {
        if (lx_is_word(l, "new"))
            m->a |= FLT_CT_NEW;
        else if (lx_is_word(l, "established"))
            m->a |= FLT_CT_EST;
        else if (lx_is_word(l, "related"))
            m->a |= FLT_CT_REL;
        else if (lx_is_word(l, "invalid"))
            m->a |= FLT_CT_INV;
        else if (lx_is_word(l, "untracked"))
            m->a |= FLT_CT_UNTRACKED;
        else {
            lx_expected(l, "a ct state (new, established, related, invalid, untracked)");
            return;
        }
        lx_next(l);
        if (l->t != T_COMMA)
            break;
        lx_next(l);
    }
    if (list)
        lx_expect(l, T_RBRACE);
}

static void parse_limit(struct lex *l, struct rule *r)
{
    struct match *m = add_match(l, r, M_LIMIT);
    unsigned long n;
    if (!m || !lx_expect_word(l, "rate"))
        return;
    if (l->t != T_WORD || !lx_parse_num(l->w, 1000000000ul, &n) || n == 0) {
        lx_expected(l, "a rate (packets per unit, > 0)");
        return;
    }
    lx_next(l);
    if (!lx_expect(l, T_SLASH))
        return;
    uint64_t ms = lx_is_word(l, "second") ? 1000 : lx_is_word(l, "minute") ? 60000 : lx_is_word(l, "hour") ? 3600000 : 0;
    if (!ms) {
        lx_expected(l, "'second', 'minute' or 'hour'");
        return;
    }
    lx_next(l);
    m->a = n;
    m->b = ms;
    m->burst = 5;
    if (lx_accept_word(l, "burst")) {
        if (l->t != T_WORD || !lx_parse_num(l->w, 1000000000ul, &n) || n == 0) {
            lx_expected(l, "a burst (packets, > 0)");
            return;
        }
        m->burst = (uint32_t)n;
        lx_next(l);
        lx_expect_word(l, "packets");
    }
}

/* ADDR, ADDR:PORT, ADDR:LO-HI, [V6]:PORT, :LO-HI (masquerade) */
static void parse_nat_target(struct lex *l, struct rule *r, bool addr_needed)
{
    char buf[96], *port = NULL;
    if (l->t != T_WORD) {
        lx_expected(l, addr_needed ? "an address[:port]" : "':lo-hi'");
        return;
    }
    snprintf(buf, sizeof buf, "%s", l->w);
    char *a = buf;
    if (buf[0] == '[') {
        char *rb = strchr(buf, ']');
        if (!rb || (rb[1] && rb[1] != ':')) {
            lx_expected(l, "[IPv6]:port");
            return;
        }
        *rb = 0;
        a = buf + 1;
        port = rb[1] ? rb + 2 : NULL;
    } else {
        char *c = strchr(buf, ':');
        if (c && !strchr(c + 1, ':')) {
            *c = 0;
            port = c + 1;
        }
    }
    unsigned plen = 0;
    if (addr_needed && (lx_parse_prefix(a, r->nat_addr, &plen) == 0 || plen != 128)) {
        lx_expected(l, "an address[:port] (IPv6 with a port: [addr]:port)");
        return;
    }
    if (!addr_needed && *a) {
        lx_expected(l, "':lo-hi'");
        return;
    }
    if (port) {
        unsigned long lo, hi;
        char *dash = strchr(port, '-');
        if (dash)
            *dash++ = 0;
        if (!lx_parse_num(port, 65535, &lo) || lo == 0 || (dash && (!lx_parse_num(dash, 65535, &hi) || hi < lo))) {
            lx_expected(l, "a port (1..65535) or range lo-hi after ':'");
            return;
        }
        r->nat_has_port = 1;
        r->nat_port_lo = (uint16_t)lo;
        r->nat_port_hi = (uint16_t)(dash ? hi : lo);
    }
    lx_next(l);
}

/* meta mark set N: the packet's mark, which a shaper's class can match
 * (tables/shaper.h); a statement: the rule goes on to its verdict, if any */
static void parse_mark_set(struct lex *l, struct rule *r)
{
    unsigned long n;
    if (!lx_expect_word(l, "set"))
        return;
    if (l->t != T_WORD || !lx_parse_num(l->w, 0xfffffffful, &n)) {
        lx_expected(l, "a mark (0..4294967295)");
        return;
    }
    if (r->set_mark) {
        lx_fail(l, "the rule sets its mark twice");
        return;
    }
    r->set_mark = 1;
    r->mark = (uint32_t)n;
    lx_next(l);
}

static int rule_family(const struct rule *r)
{
    for (unsigned i = 0; i < r->nm; i++)
        if (r->m[i].kind == M_FAMILY)
            return (int)r->m[i].a;
    return 0;
}

static bool parse_verdict(struct lex *l, struct rule *r, enum flt_hook h)
{
    if (lx_accept_word(l, "accept")) {
        r->act = A_ACCEPT;
    } else if (lx_accept_word(l, "drop")) {
        r->act = A_DROP;
    } else if (lx_accept_word(l, "reject")) {
        r->act = A_REJECT;
        if (lx_accept_word(l, "with")) {
            if (lx_accept_word(l, "tcp")) {
                if (lx_expect_word(l, "reset"))
                    r->act = A_REJECT_RST;
            } else if (lx_accept_word(l, "icmp") || lx_accept_word(l, "icmpv6") || lx_accept_word(l, "icmpx")) {
                if (lx_expect_word(l, "type"))
                    lx_expect_word(l, "port-unreachable");
            } else {
                lx_expected(l, "'tcp reset' or 'icmpx type port-unreachable'");
            }
        }
    } else if (lx_is_word(l, "dnat") || lx_is_word(l, "snat")) {
        bool dnat = lx_is_word(l, "dnat");
        if ((dnat && h != FLT_PRE) || (!dnat && h != FLT_POST)) {
            lx_fail(l, "%s belongs in a %s chain", l->w, dnat ? "prerouting" : "postrouting");
            return true;
        }
        lx_next(l);
        int fam = lx_accept_word(l, "ip") ? 4 : lx_accept_word(l, "ip6") ? 6 : 0;
        if (!lx_expect_word(l, "to"))
            return true;
        r->act = dnat ? A_DNAT : A_SNAT;
        unsigned tl = l->tline, tc = l->tcol;
        parse_nat_target(l, r, true);
        int af = r->nat_addr[10] == 0xff && !memcmp(r->nat_addr, "\0\0\0\0\0\0\0\0\0\0", 10) ? 4 : 6;
        int rf = fam ? fam : rule_family(r);
        if (!l->failed && rf && rf != af) {
            l->tline = tl;
            l->tcol = tc;
            lx_fail(l, "an IPv%d address in a rule for IPv%d", af, rf);
        }
    } else if (lx_is_word(l, "masquerade")) {
        if (h != FLT_POST) {
            lx_fail(l, "masquerade belongs in a postrouting chain");
            return true;
        }
        unsigned ml = l->tline, mc = l->tcol;
        lx_next(l);
        r->act = A_MASQ;
        if (lx_accept_word(l, "to"))
            parse_nat_target(l, r, false);
        for (unsigned i = 0; i < r->nm; i++)
            if (r->m[i].kind == M_OIF)
                for (unsigned p = 0; p < l->nports; p++)
                    if ((r->m[i].a >> p & 1) && !l->ports[p].has_v4 && !l->ports[p].has_v6) {
                        l->tline = ml;
                        l->tcol = mc;
                        lx_fail(l, "masquerade on port '%s', which has no address", l->ports[p].name);
                        return true;
                    }
    } else {
        return false;
    }
    return true;
}

static void parse_rule(struct lex *l, struct rule *r, enum flt_hook h)
{
    memset(r, 0, sizeof *r);
    r->line = l->tline;
    while (!l->failed && l->t == T_WORD) {
        struct match *m;
        if (parse_verdict(l, r, h))
            break;
        if (lx_is_word(l, "iif") || lx_is_word(l, "iifname") || lx_is_word(l, "oif") || lx_is_word(l, "oifname")) {
            m = add_match(l, r, l->w[0] == 'i' ? M_IIF : M_OIF);
            lx_next(l);
            if (m)
                parse_ifaces(l, m);
        } else if (lx_is_word(l, "ip") || lx_is_word(l, "ip6")) {
            int fam = l->w[2] == '6' ? 6 : 4;
            lx_next(l);
            imply(l, r, M_FAMILY, (uint64_t)fam);
            if (lx_is_word(l, "saddr") || lx_is_word(l, "daddr")) {
                m = add_match(l, r, l->w[0] == 's' ? M_SADDR : M_DADDR);
                lx_next(l);
                if (m)
                    parse_addr_match(l, m, fam);
            } else if (lx_accept_word(l, fam == 4 ? "protocol" : "nexthdr")) {
                if ((m = add_match(l, r, M_PROTO)))
                    parse_num_match(l, m, M_PROTO);
            } else {
                lx_expected(l, fam == 4 ? "'saddr', 'daddr' or 'protocol'" : "'saddr', 'daddr' or 'nexthdr'");
            }
        } else if (lx_accept_word(l, "meta")) {
            if (lx_accept_word(l, "l4proto")) {
                if ((m = add_match(l, r, M_PROTO)))
                    parse_num_match(l, m, M_PROTO);
            } else if (lx_accept_word(l, "nfproto")) {
                int fam = lx_is_word(l, "ipv4") ? 4 : lx_is_word(l, "ipv6") ? 6 : 0;
                if (!fam)
                    lx_expected(l, "'ipv4' or 'ipv6'");
                else {
                    imply(l, r, M_FAMILY, (uint64_t)fam);
                    lx_next(l);
                }
            } else if (lx_accept_word(l, "mark")) {
                parse_mark_set(l, r);
            } else {
                lx_expected(l, "'l4proto', 'nfproto' or 'mark set'");
            }
        } else if (lx_is_word(l, "tcp") || lx_is_word(l, "udp")) {
            bool tcp = l->w[0] == 't';
            lx_next(l);
            imply(l, r, M_PROTO, tcp ? 6 : 17);
            if (lx_is_word(l, "sport") || lx_is_word(l, "dport")) {
                m = add_match(l, r, l->w[0] == 's' ? M_SPORT : M_DPORT);
                lx_next(l);
                if (m)
                    parse_num_match(l, m, M_DPORT);
            } else if (tcp && lx_accept_word(l, "flags")) {
                if (!(m = add_match(l, r, M_TCPFLAGS)))
                    break;
                if (l->t == T_AMP) {
                    lx_next(l);
                    m->a = parse_flag_list(l);
                    unsigned vl = 0, vc = 0;
                    if (lx_expect(l, T_EQ)) {
                        vl = l->tline;
                        vc = l->tcol;
                        m->b = parse_flag_list(l);
                    }
                    m->plen = 1;
                    if (!l->failed && (m->b & ~m->a)) {
                        l->tline = vl;
                        l->tcol = vc;
                        lx_fail(l, "the flags compared are not all in the mask");
                    }
                } else {
                    m->a = m->b = parse_flag_list(l);
                }
            } else {
                lx_expected(l, tcp ? "'sport', 'dport' or 'flags'" : "'sport' or 'dport'");
            }
        } else if (lx_is_word(l, "icmp") || lx_is_word(l, "icmpv6")) {
            bool v6 = l->w[4] == 'v';
            lx_next(l);
            imply(l, r, M_FAMILY, v6 ? 6 : 4);
            imply(l, r, M_PROTO, v6 ? 58 : 1);
            if (lx_expect_word(l, "type") && (m = add_match(l, r, M_ICMPTYPE)))
                parse_num_match(l, m, v6 ? M_ICMPTYPE + 100 : M_ICMPTYPE);
        } else if (lx_accept_word(l, "ct")) {
            if (lx_expect_word(l, "state") && (m = add_match(l, r, M_CTSTATE)))
                parse_ct_states(l, m);
        } else if (lx_accept_word(l, "limit")) {
            parse_limit(l, r);
        } else if (lx_accept_word(l, "counter")) {
            r->counter = 1;
        } else {
            lx_expected(l, "a match (iif, oif, ip, ip6, meta, tcp, udp, icmp, icmpv6, ct, limit), "
                           "counter or a verdict (accept, drop, reject, dnat, snat, masquerade)");
        }
    }
    if (l->failed)
        return;
    if (l->t != T_NL && l->t != T_SEMI && l->t != T_RBRACE && l->t != T_EOF) {
        lx_expected(l, r->act ? "the end of the rule after its verdict" : "a match, counter or a verdict");
        return;
    }
    if (r->act == A_NONE && !r->counter && !r->set_mark && r->nm == 0)
        lx_expected(l, "a match, counter or a verdict");
}

static const char *hook_names[FLT_NHOOKS] = { "prerouting", "input", "forward", "postrouting" };

static int hook_of(const char *w)
{
    for (int h = 0; h < FLT_NHOOKS; h++)
        if (!strcmp(w, hook_names[h]))
            return h;
    return -1;
}

void lx_parse_chain(struct lex *l, bool seen[FLT_NHOOKS])
{
    if (l->t != T_WORD) {
        lx_expected(l, "a chain name");
        return;
    }
    int h = hook_of(l->w);
    unsigned nl = l->tline, nc = l->tcol;
    lx_next(l);
    if (!lx_expect(l, T_LBRACE))
        return;
    lx_skip_nl(l);
    if (lx_accept_word(l, "type")) {
        if (!lx_accept_word(l, "filter") && !lx_accept_word(l, "nat")) {
            lx_expected(l, "'filter' or 'nat'");
            return;
        }
        if (!lx_expect_word(l, "hook"))
            return;
        h = l->t == T_WORD ? hook_of(l->w) : -1;
        if (h < 0) {
            lx_expected(l, "a hook (prerouting, input, forward, postrouting)");
            return;
        }
        lx_next(l);
        if (lx_accept_word(l, "priority")) {
            if (l->t != T_WORD) {
                lx_expected(l, "a priority");
                return;
            }
            lx_next(l);
        }
        lx_skip_nl(l);
    }
    if (h < 0) {
        l->tline = nl;
        l->tcol = nc;
        lx_fail(l, "expected a chain named prerouting, input, forward or postrouting, or a 'type filter hook "
                   "HOOK' line");
        return;
    }
    if (seen[h]) {
        l->tline = nl;
        l->tcol = nc;
        lx_fail(l, "hook %s already has a chain", hook_names[h]);
        return;
    }
    seen[h] = true;
    struct chain *c = &l->r->c[h];
    while (!l->failed && l->t != T_RBRACE) {
        if (l->t == T_EOF) {
            lx_expected(l, "'}' closing the chain");
            return;
        }
        if (lx_accept_word(l, "policy")) {
            if (lx_accept_word(l, "accept"))
                c->policy = A_ACCEPT;
            else if (lx_accept_word(l, "drop"))
                c->policy = A_DROP;
            else
                lx_expected(l, "'accept' or 'drop'");
        } else {
            if (c->n == c->cap) {
                uint32_t nc2 = c->cap ? c->cap * 2 : 16;
                struct rule *nr = realloc(c->r, nc2 * sizeof *nr);
                if (!nr) {
                    lx_fail(l, "out of memory");
                    return;
                }
                c->r = nr;
                c->cap = nc2;
            }
            parse_rule(l, &c->r[c->n], (enum flt_hook)h);
            if (!l->failed)
                c->n++;
        }
        lx_skip_nl(l);
    }
    lx_expect(l, T_RBRACE);
}
