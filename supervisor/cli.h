/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cli.h: the command line of `ringrouter` (supervisor/main.c):
 * its commands and subcommands, how a word the user typed is resolved to
 * one (an exact name, a unique prefix, else an error that lists the
 * candidates or suggests the nearest name), and the help of each command
 * (supervisor/cli.c).
 */
#ifndef SUP_CLI_H
#define SUP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cli_cmd {
    const char *name;
    const char *alias_of;    /* the command this word also names (`port` is `link`), or NULL */
    const char *const *subs; /* its subcommands, NULL-terminated; NULL: none */
    const char *summary;     /* one line for the list of commands */
    const char *help;        /* `ringrouter help NAME`: usage, what it does, options, output, exit */
};

/**
 * The command @word names: exactly, as an alias, or as the unique prefix
 * of one command. NULL with the reason in @err (ambiguous: the candidates;
 * unknown: the nearest name when one is close).
 */
const struct cli_cmd *cli_command(const char *word, char *err, size_t len);

/** The same for a subcommand of @c ("route sh" is "route show"). */
const char *cli_subcommand(const struct cli_cmd *c, const char *word, char *err, size_t len);

/**
 * One of @names (@n of them) for @word, for options and the like: exact,
 * else the unique prefix; -1 with @err set as above, @what naming the kind
 * of word ("command", "option").
 */
int cli_match(const char *word, const char *const *names, size_t n, const char *what, char *err, size_t len);

/** `ringrouter --help` (@c NULL) or `ringrouter help COMMAND`. */
void cli_help(FILE *f, const struct cli_cmd *c);

/** "ringrouter VERSION (git DESCRIBE)", as the build baked it in. */
const char *cli_version(void);

#endif
