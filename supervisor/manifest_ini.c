/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest_ini.c: the INI reader. It owns the syntax of a
 * manifest, and only that: lines and their numbers, a UTF-8 BOM and CRLF
 * ends, comments (a line starting with ';' or '#', and ';' after a blank),
 * the line length limit, control characters, section headers split into
 * blank-separated words, and "key = value" (or "key: value") split and
 * trimmed. What the words and keys mean is the schema's
 * (manifest_schema.c). It replaces libinih, which we once fed through a
 * reader callback that already did all of this: the library was left to
 * split at '=' and trim, while its build-time and global settings (inline
 * comments, continuation lines, line length, line numbers in the handler)
 * could only get in the way of the errors we promise.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/manifest_impl.h"

/* The longest section header between its brackets, before its blanks are
 * folded: room for the valid ones (SUP_SECTION_MAX) with generous blanks. */
#define SUP_HEADER_MAX 127

/* A header line "[ ... ]" (comments already gone): split it into words and
 * hand them to the schema, normalised with single blanks. */
static int sup_header(struct sup_pctx *pc, const char *b, const char *e)
{
    char buf[SUP_HEADER_MAX + 1], sec[SUP_SECTION_MAX + 16];
    char *words[4] = {0};
    size_t nw = 0;
    const char *close = memchr(b, ']', (size_t)(e - b));
    if (!close)
        return sup_fail(pc, pc->line, NULL, NULL, "syntax error: \"[\" without a closing \"]\"");
    if (close != e - 1)
        return sup_fail(pc, pc->line, NULL, NULL, "syntax error: text after \"]\"");
    size_t n = (size_t)(close - b - 1);
    if (n > SUP_HEADER_MAX)
        return sup_fail(pc, pc->line, NULL, NULL, "section header is longer than %d characters", SUP_HEADER_MAX);
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
    return sup_section(pc, words, nw, sec, sl);
}

/* "key = value" or "key: value" at [b, e), trimmed at both ends already. */
static int sup_pair(struct sup_pctx *pc, const char *b, const char *e)
{
    char line[SUP_LINE_MAX + 1];
    const char *eq = b;
    while (eq < e && *eq != '=' && *eq != ':')
        eq++;
    if (eq == e)
        return sup_fail(pc, pc->line, NULL, NULL,
                        "syntax error: expected \"key = value\", \"[section]\" or a comment");
    if (eq == b)
        return sup_fail(pc, pc->line, NULL, NULL, "syntax error: no key before \"%c\"", *eq);
    if (!pc->cur)
        return sup_fail(pc, pc->line, NULL, NULL, "\"%.*s\" is outside any section", (int)(e - b), b);
    size_t n = (size_t)(e - b), at = (size_t)(eq - b);
    memcpy(line, b, n);
    line[n] = '\0';
    char *name = line, *value = line + at + 1, *ne = line + at;
    *ne = '\0';
    while (ne > name && isspace((unsigned char)ne[-1]))
        *--ne = '\0';
    while (isspace((unsigned char)*value))
        value++;
    return sup_set_key(pc, name, value);
}

/* One line at [l, l + len), without its '\n'. */
static int sup_line(struct sup_pctx *pc, const char *l, size_t len)
{
    const char *b = l, *e = l + len;
    if (pc->line == 1 && len >= 3 && memcmp(b, "\xef\xbb\xbf", 3) == 0)
        b += 3;
    while (b < e && isspace((unsigned char)*b))
        b++;
    if (b < e && (*b == ';' || *b == '#')) {
        e = b;
    } else {
        /* An inline comment starts at a ';' after a blank, so that a ';'
         * inside a value ("1500;x") is an error rather than a cut. */
        for (const char *p = b + 1; p < e; p++) {
            if (*p == ';' && isspace((unsigned char)p[-1])) {
                e = p;
                break;
            }
        }
    }
    while (e > b && isspace((unsigned char)e[-1]))
        e--;
    for (const char *p = b; p < e; p++)
        if (iscntrl((unsigned char)*p) && *p != '\t')
            return sup_fail(pc, pc->line, NULL, NULL, "syntax error: control character 0x%02x", (unsigned char)*p);
    if ((size_t)(e - b) > SUP_LINE_MAX)
        return sup_fail(pc, pc->line, NULL, NULL, "line is longer than %d characters", SUP_LINE_MAX);
    if (b == e)
        return 0;
    if (*b == '[')
        return sup_header(pc, b, e);
    return sup_pair(pc, b, e);
}

int sup_ini_read(struct sup_pctx *pc)
{
    while (!pc->rc && *pc->pos) {
        const char *l = pc->pos, *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        pc->pos = nl ? nl + 1 : l + len;
        pc->line++;
        sup_line(pc, l, len);
    }
    return pc->rc;
}
