/* SPDX-License-Identifier: MIT */
/*
 * supervisor/running_text.c: a manifest's text line by line, with lines
 * dropped and lines added, and joined again (supervisor/running.h):
 * what `show running` and `addr` edit, so that everything they do not
 * change stays as the operator wrote it.
 */
#include "supervisor/running.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int sup_text_split(struct run_text *t, const char *text)
{
    memset(t, 0, sizeof(*t));
    size_t n = 1;
    for (const char *c = text; *c; c++)
        n += *c == '\n';
    t->line = calloc(n, sizeof(*t->line));
    t->drop = calloc(n + 1, sizeof(*t->drop));
    if (!t->line || !t->drop)
        return -ENOMEM;
    for (const char *c = text; *c;) {
        size_t l = strcspn(c, "\n");
        if (!(t->line[t->n++] = strndup(c, l)))
            return -ENOMEM;
        c += l + (c[l] == '\n');
    }
    return 0;
}

void sup_text_drop(struct run_text *t, unsigned line)
{
    if (line >= 1 && line <= t->n)
        t->drop[line - 1] = true;
}

int sup_text_add(struct run_text *t, unsigned after, const char *fmt, ...)
{
    if (t->nadd == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        struct run_add *a = realloc(t->add, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        t->add = a;
        t->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&t->add[t->nadd].text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    t->add[t->nadd++].after = after > t->n ? (unsigned)t->n : after;
    return 0;
}

static bool is_header(const char *l)
{
    l += strspn(l, " \t");
    return *l == '[';
}

unsigned sup_text_section_end(const struct run_text *t, unsigned header)
{
    unsigned l = header;
    while (l < t->n && !is_header(t->line[l]))
        l++;
    return l;
}

void sup_text_drop_section(struct run_text *t, unsigned header)
{
    if (!header)
        return;
    unsigned end = sup_text_section_end(t, header);
    for (unsigned l = header; l <= end; l++)
        sup_text_drop(t, l);
}

char *sup_text_join(const struct run_text *t)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    for (size_t l = 0; l <= t->n; l++) {
        if (l && !t->drop[l - 1])
            fprintf(f, "%s\n", t->line[l - 1]);
        for (size_t k = 0; k < t->nadd; k++)
            if (t->add[k].after == l)
                fprintf(f, "%s\n", t->add[k].text);
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

void sup_text_free(struct run_text *t)
{
    for (size_t l = 0; l < t->n; l++)
        free(t->line[l]);
    for (size_t k = 0; k < t->nadd; k++)
        free(t->add[k].text);
    free(t->line);
    free(t->drop);
    free(t->add);
    memset(t, 0, sizeof(*t));
}
