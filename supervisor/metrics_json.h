/* SPDX-License-Identifier: MIT */
/*
 * supervisor/metrics_json.h: a small JSON reader for the clients that turn
 * the supervisor's `--json` answers into something else (`metrics`,
 * `exporter`, `top`: supervisor/metrics.c, exporter.c, top.c). The
 * supervisor parses nothing new for them: they ask what `status`, `stats`
 * and `link` already answer, and read it here. The text is bounded (depth,
 * size) and checked against the grammar, so a number's text is a valid
 * number wherever it is copied.
 */
#ifndef SUP_METRICS_JSON_H
#define SUP_METRICS_JSON_H

#include <stdbool.h>
#include <stddef.h>

enum mx_jt { MX_JNULL, MX_JBOOL, MX_JNUM, MX_JSTR, MX_JARR, MX_JOBJ };

struct mx_jv {
    enum mx_jt t;
    char *key;         /* a member of an object: its name; else NULL */
    char *s;           /* MX_JSTR: the string, decoded (UTF-8, NUL-terminated); MX_JNUM: the number's text */
    double num;        /* MX_JNUM */
    bool b;            /* MX_JBOOL */
    struct mx_jv *kid; /* MX_JARR, MX_JOBJ: the elements or members, in order */
    size_t n;
};

#define MX_JSON_DEPTH 32

/**
 * Parse @len bytes of @text (one value, blanks around it allowed) into
 * *@out; 0, or -1 with @err saying where and what is wrong. Free with
 * mx_json_free.
 */
int mx_json_parse(const char *text, size_t len, struct mx_jv **out, char *err, size_t errlen);
void mx_json_free(struct mx_jv *v);

/** Member @key of object @o (NULL if @o is no object or has none). */
const struct mx_jv *mx_jget(const struct mx_jv *o, const char *key);
/** Member @key as a number, @dflt if absent or not a number. */
double mx_jnum(const struct mx_jv *o, const char *key, double dflt);
/** Member @key as a string, NULL if absent or not a string. */
const char *mx_jstr(const struct mx_jv *o, const char *key);
/** Element @name of array @a whose member "name" is @name (NULL if none). */
const struct mx_jv *mx_jfind(const struct mx_jv *a, const char *member, const char *name);

#endif
