/* SPDX-License-Identifier: MIT */
/*
 * services/filter/rules_lex.h: the rule language's lexer and value parsers
 * (rules.c), shared with the statement parser (rules_stmt.c).
 */
#ifndef RR_FILTER_RULES_LEX_H
#define RR_FILTER_RULES_LEX_H

#include "services/filter/flt_int.h"

enum tok { T_EOF, T_WORD, T_STR, T_LBRACE, T_RBRACE, T_COMMA, T_SEMI, T_NL, T_AT, T_NE, T_EQ, T_AMP, T_PIPE,
           T_LPAR, T_RPAR, T_SLASH, T_BAD };

struct lex {
    const char *s;
    size_t len, pos;
    unsigned line, col;
    enum tok t;
    char w[96];
    unsigned tline, tcol;
    char *err;
    size_t errlen;
    bool failed;
    struct flt_rules *r;
    const struct flt_port *ports;
    unsigned nports;
};

void lx_next(struct lex *l);
void lx_fail(struct lex *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lx_expected(struct lex *l, const char *what);
bool lx_is_word(struct lex *l, const char *w);
bool lx_accept_word(struct lex *l, const char *w);
bool lx_expect_word(struct lex *l, const char *w);
bool lx_expect(struct lex *l, enum tok t);
void lx_skip_nl(struct lex *l);
void lx_skip_nl_only(struct lex *l);
bool lx_parse_num(const char *w, unsigned long max, unsigned long *out);
int lx_parse_prefix(const char *w, uint8_t a[16], unsigned *plen);
int lx_new_set(struct lex *l, const char *name, int kind, int fam);
bool lx_parse_numval(struct lex *l, int what, unsigned long *lo, unsigned long *hi);
bool lx_parse_elements(struct lex *l, int si, int what);
int lx_find_set(struct lex *l, const char *name);
void lx_parse_chain(struct lex *l, bool seen[FLT_NHOOKS]);

#endif
