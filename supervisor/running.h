/* SPDX-License-Identifier: MIT */
/*
 * supervisor/running.h: the running manifest as text. `show running` and
 * `save` (supervisor/running.c) print it with the changes made at run time;
 * `addr` and `link set` (supervisor/live.c) edit it and apply it as a
 * reload does. Both work on the text `up` or the last reload read, line by
 * line, so that what they do not change (comments, keys, order) stays as
 * the operator wrote it.
 */
#ifndef SUP_RUNNING_H
#define SUP_RUNNING_H

#include <stdbool.h>
#include <stdio.h>

#include "supervisor/sup.h"

/* A text's lines (1-based, as the manifest's errors number them), with
 * lines to drop and lines to add after a given one (0: before the first). */
struct run_text {
    char **line;
    size_t n;
    bool *drop;
    struct run_add {
        unsigned after;
        char *text;
    } *add;
    size_t nadd, cap;
};

/* Split @text into @t; -ENOMEM. */
int sup_text_split(struct run_text *t, const char *text);
/* Line @line out (0 or past the end: nothing). */
void sup_text_drop(struct run_text *t, unsigned line);
/* A line after line @after (lines added after one line keep their order); -ENOMEM. */
int sup_text_add(struct run_text *t, unsigned after, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The last line of the section whose header is line @header. */
unsigned sup_text_section_end(const struct run_text *t, unsigned header);
/* A section out: its header and every line up to the next. */
void sup_text_drop_section(struct run_text *t, unsigned header);
/* The text again, with the drops and additions; NULL on -ENOMEM. */
char *sup_text_join(const struct run_text *t);
void sup_text_free(struct run_text *t);

/* The running manifest with the runtime changes (routes, neighbours,
 * shaper rates), malloc'd; NULL with the reason on @f, after "@cmd: ". */
char *sup_running_text(struct sup *s, const char *cmd, FILE *f);
/* `show running` */
bool sup_ctl_show(struct sup *s, char **argv, int argc, FILE *f);
/* `save [FILE]`: the running manifest into FILE (default: the one `up`
 * was given), atomically, root's, mode 0644. */
bool sup_ctl_save(struct sup *s, char **argv, int argc, FILE *f);

/* supervisor/live.c */

/* `addr show [PORT]`, `addr add|del PREFIX port NAME` */
bool sup_ctl_addr(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w);
/* `link set PORT mtu N | up | down` */
bool sup_ctl_link_set(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w);

#endif
