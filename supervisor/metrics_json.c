/* SPDX-License-Identifier: MIT */
/*
 * supervisor/metrics_json.c: the JSON reader of metrics_json.h. Recursive
 * descent over RFC 8259's grammar, at most MX_JSON_DEPTH levels deep; a
 * string's \u escapes become UTF-8 (a lone surrogate becomes U+FFFD), a
 * number keeps its text, checked against the grammar, beside its value.
 */
#include "supervisor/metrics_json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jp {
    const char *p, *end, *start;
    char *err;
    size_t errlen;
    bool failed;
};

static void jfail(struct jp *j, const char *what)
{
    if (!j->failed)
        snprintf(j->err, j->errlen, "JSON: %s at byte %zu", what, (size_t)(j->p - j->start));
    j->failed = true;
}

static void skip_ws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool lit(struct jp *j, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
        return false;
    j->p += n;
    return true;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static size_t utf8_put(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string at j->p (its opening quote), decoded into a new buffer: an
 * escape never decodes longer than it is written, so the text's length
 * is enough. */
static char *jstring(struct jp *j)
{
    j->p++;
    const char *q = j->p;
    while (q < j->end && *q != '"')
        q += *q == '\\' && q + 1 < j->end ? 2 : 1;
    if (q >= j->end) {
        jfail(j, "unterminated string");
        return NULL;
    }
    char *out = malloc((size_t)(q - j->p) + 1), *o = out;
    if (!out) {
        jfail(j, "out of memory");
        return NULL;
    }
    while (j->p < q) {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) {
            jfail(j, "control character in a string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            *o++ = (char)c;
            j->p++;
            continue;
        }
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        char e = j->p[1];
        j->p += 2;
        const char *simple = e ? strchr(from, e) : NULL;
        if (simple) {
            *o++ = to[simple - from];
            continue;
        }
        int cp = e == 'u' && q - j->p >= 4 ? hex4(j->p) : -1;
        if (cp < 0) {
            jfail(j, "bad escape in a string");
            free(out);
            return NULL;
        }
        j->p += 4;
        uint32_t u = (uint32_t)cp;
        if (u >= 0xd800 && u < 0xdc00 && q - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u') {
            int lo = hex4(j->p + 2);
            if (lo >= 0xdc00 && lo < 0xe000) {
                u = 0x10000 + ((u - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
                j->p += 6;
            }
        }
        if (u >= 0xd800 && u < 0xe000)
            u = 0xfffd;
        o += utf8_put(o, u);
    }
    *o = '\0';
    j->p = q + 1;
    return out;
}

static bool digits(struct jp *j)
{
    const char *s = j->p;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
        j->p++;
    return j->p > s;
}

static bool jnumber(struct jp *j, struct mx_jv *v)
{
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p < j->end && *j->p == '0')
        j->p++;
    else if (!digits(j))
        return false;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (!digits(j))
            return false;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (!digits(j))
            return false;
    }
    v->s = strndup(s, (size_t)(j->p - s));
    if (!v->s)
        return false;
    v->num = strtod(v->s, NULL);
    v->t = MX_JNUM;
    return true;
}

static void jvalue(struct jp *j, struct mx_jv *v, int depth);

/* The elements of an array or the members of an object, after its bracket. */
static void jcontainer(struct jp *j, struct mx_jv *v, int depth, bool obj)
{
    v->t = obj ? MX_JOBJ : MX_JARR;
    j->p++;
    skip_ws(j);
    char close = obj ? '}' : ']';
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return;
    }
    size_t cap = 0;
    for (;;) {
        if (v->n == cap) {
            cap = cap ? cap * 2 : 8;
            struct mx_jv *k = realloc(v->kid, cap * sizeof(*k));
            if (!k) {
                jfail(j, "out of memory");
                return;
            }
            v->kid = k;
        }
        struct mx_jv *e = &v->kid[v->n++];
        *e = (struct mx_jv){0};
        skip_ws(j);
        if (obj) {
            if (j->p >= j->end || *j->p != '"') {
                jfail(j, "expected a member name");
                return;
            }
            if (!(e->key = jstring(j)))
                return;
            skip_ws(j);
            if (j->p >= j->end || *j->p != ':') {
                jfail(j, "expected ':'");
                return;
            }
            j->p++;
        }
        jvalue(j, e, depth + 1);
        if (j->failed)
            return;
        skip_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return;
        }
        jfail(j, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        return;
    }
}

static void jvalue(struct jp *j, struct mx_jv *v, int depth)
{
    skip_ws(j);
    if (depth > MX_JSON_DEPTH) {
        jfail(j, "nested too deep");
        return;
    }
    if (j->p >= j->end) {
        jfail(j, "unexpected end");
        return;
    }
    char c = *j->p;
    if (c == '{' || c == '[') {
        jcontainer(j, v, depth, c == '{');
    } else if (c == '"') {
        v->t = MX_JSTR;
        v->s = jstring(j);
    } else if (lit(j, "true") || lit(j, "false")) {
        v->t = MX_JBOOL;
        v->b = j->p[-1] == 'e' && j->p[-2] == 'u';
    } else if (lit(j, "null")) {
        v->t = MX_JNULL;
    } else if (!jnumber(j, v)) {
        jfail(j, "not a JSON value");
    }
}

static void jfree_kids(struct mx_jv *v)
{
    for (size_t i = 0; i < v->n; i++)
        jfree_kids(&v->kid[i]);
    free(v->kid);
    free(v->key);
    free(v->s);
}

void mx_json_free(struct mx_jv *v)
{
    if (!v)
        return;
    jfree_kids(v);
    free(v);
}

int mx_json_parse(const char *text, size_t len, struct mx_jv **out, char *err, size_t errlen)
{
    struct jp j = {.p = text, .end = text + len, .start = text, .err = err, .errlen = errlen};
    struct mx_jv *v = calloc(1, sizeof(*v));
    *out = NULL;
    if (!v) {
        snprintf(err, errlen, "JSON: out of memory");
        return -1;
    }
    jvalue(&j, v, 0);
    skip_ws(&j);
    if (!j.failed && j.p != j.end)
        jfail(&j, "text after the value");
    if (j.failed) {
        mx_json_free(v);
        return -1;
    }
    *out = v;
    return 0;
}

const struct mx_jv *mx_jget(const struct mx_jv *o, const char *key)
{
    if (!o || o->t != MX_JOBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->kid[i].key, key) == 0)
            return &o->kid[i];
    return NULL;
}

double mx_jnum(const struct mx_jv *o, const char *key, double dflt)
{
    const struct mx_jv *v = mx_jget(o, key);
    return v && v->t == MX_JNUM ? v->num : dflt;
}

const char *mx_jstr(const struct mx_jv *o, const char *key)
{
    const struct mx_jv *v = mx_jget(o, key);
    return v && v->t == MX_JSTR ? v->s : NULL;
}

const struct mx_jv *mx_jfind(const struct mx_jv *a, const char *member, const char *name)
{
    if (!a || a->t != MX_JARR)
        return NULL;
    for (size_t i = 0; i < a->n; i++) {
        const char *s = mx_jstr(&a->kid[i], member);
        if (s && strcmp(s, name) == 0)
            return &a->kid[i];
    }
    return NULL;
}
