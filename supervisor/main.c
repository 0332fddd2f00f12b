/* SPDX-License-Identifier: MIT */
/*
 * supervisor/main.c: the `ringrouter` command. It parses the whole line
 * first, options anywhere (before or after the command: `ringrouter -S
 * SOCK status` and `ringrouter status -S SOCK` are one request), resolves
 * the command and subcommand (unique prefixes, supervisor/cli.c), and
 * dispatches: `check` loads a manifest (supervisor/manifest.c) and reports
 * the first error (`check --diff` asks the running supervisor what a
 * reload would change, as `reload` asks it to change it); `up` runs the supervisor (supervisor/up.c); the control
 * commands send one request line to a running supervisor (supervisor/ctl.c),
 * whose own checks of the words are the last word on them.
 *
 * Exit codes (s6's convention, STYLE.md §7): 0 ok; 3 `status` found a failed
 * service; 100 for a usage error or an invalid manifest, including a
 * manifest path that does not exist or cannot be read (a mistake in what
 * the user typed); 111 for a system failure that is not the user's doing
 * (out of memory, an I/O error, no supervisor to talk to).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/capture.h"
#include "supervisor/trace.h"
#include "supervisor/cli.h"
#include "supervisor/filter.h"
#include "supervisor/manifest.h"
#include "supervisor/metrics.h"
#include "supervisor/vlan.h"

#define SUP_EXIT_OK 0
#define SUP_EXIT_USAGE 100
#define SUP_EXIT_SYSTEM 111
#define CLI_POS_MAX 64 /* `route add PREFIX via G weight W via G weight W ...` (route_multi.h) */

int sup_cmd_up(const char *file);
int sup_ctl_client(const char *sock, int argc, char **argv);

/* The command line, options taken out wherever they stood. */
struct cli_line {
    const char *socket, *config, *binary, *listen, *user, *rate;
    bool json, all, stages, force, help, version, diff, once, merge;
    const char *pos[CLI_POS_MAX];
    int npos;
};

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "ringrouter: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see ringrouter --help)\n");
    return SUP_EXIT_USAGE;
}

static const char *const cli_long[] = {"--socket", "--config", "--json", "--all", "--stages", "--force", "--help",
                                       "--version", "--diff", "--binary", "--listen", "--user", "--once", "--merge",
                                       "--rate"};
enum { L_SOCKET, L_CONFIG, L_JSON, L_ALL, L_STAGES, L_FORCE, L_HELP, L_VERSION, L_DIFF, L_BINARY, L_LISTEN, L_USER,
       L_ONCE, L_MERGE, L_RATE, L_N };
/* The options that take a value. */
#define L_VALUED(w)                                                                                                    \
    ((w) == L_SOCKET || (w) == L_CONFIG || (w) == L_BINARY || (w) == L_LISTEN || (w) == L_USER || (w) == L_RATE)

/* Parse argv into @l. Returns 0, or an exit code after saying what is wrong. */
static int cli_parse(int argc, char **argv, struct cli_line *l)
{
    *l = (struct cli_line){0};
    bool opts = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int which = -1;
        const char *val = NULL;
        if (opts && strcmp(a, "--") == 0) {
            opts = false;
            continue;
        }
        if (opts && a[0] == '-' && a[1] == '-') {
            char name[32], err[160];
            const char *eq = strchr(a, '=');
            snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a) : 31, a);
            which = cli_match(name, cli_long, L_N, "option", err, sizeof(err));
            if (which < 0) {
                fprintf(stderr, "ringrouter: %s (see ringrouter --help)\n", err);
                return SUP_EXIT_USAGE;
            }
            if (eq && !L_VALUED(which))
                return usage_error("option \"%s\" takes no value", name);
            val = eq ? eq + 1 : NULL;
        } else if (opts && a[0] == '-' && a[1] && !a[2]) {
            static const char shorts[] = "Scja\0fhV"; /* by L_* (no short --stages, --diff) */
            const char *p = a[1] ? memchr(shorts, a[1], sizeof(shorts) - 1) : NULL;
            if (!p && (a[1] == '4' || a[1] == '6')) /* ip's: each address names its family here */
                return usage_error("%s is not needed: the address family follows from the address or prefix", a);
            if (!p)
                return usage_error("unknown option \"%s\"", a);
            which = (int)(p - shorts);
        } else if (opts && a[0] == '-' && a[1]) {
            return usage_error("unknown option \"%s\"", a);
        } else {
            if (l->npos == CLI_POS_MAX)
                return usage_error("too many arguments (from \"%s\" on)", a);
            l->pos[l->npos++] = a;
            continue;
        }
        if (L_VALUED(which)) {
            if (!val) {
                if (i + 1 == argc)
                    return usage_error("option \"%s\" needs an argument", a);
                val = argv[++i];
            }
            const char **to[] = {[L_SOCKET] = &l->socket, [L_CONFIG] = &l->config, [L_BINARY] = &l->binary,
                                 [L_LISTEN] = &l->listen, [L_USER] = &l->user, [L_RATE] = &l->rate};
            *to[which] = val;
        }
        l->json |= which == L_JSON;
        l->all |= which == L_ALL;
        l->stages |= which == L_STAGES;
        l->force |= which == L_FORCE;
        l->help |= which == L_HELP;
        l->version |= which == L_VERSION;
        l->diff |= which == L_DIFF;
        l->once |= which == L_ONCE;
        l->merge |= which == L_MERGE;
    }
    return 0;
}

/* Errors that name a bad path are the user's to fix: exit 100. */
static int exit_for(int rc)
{
    switch (-rc) {
    case 0:
        return SUP_EXIT_OK;
    case EINVAL:
    case ENOENT:
    case ENOTDIR:
    case EISDIR:
    case EACCES:
    case EPERM:
    case ELOOP:
    case ENAMETOOLONG:
    case EFBIG:
        return SUP_EXIT_USAGE;
    default:
        return SUP_EXIT_SYSTEM;
    }
}

static int load(const char *file, struct sup_manifest *m)
{
    struct sup_manifest_err err;
    int rc = file ? sup_manifest_load_file(file, m, &err)
                  : sup_manifest_load_string(SUP_DEFAULT_MANIFEST_NAME, sup_default_manifest, m, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    return rc;
}

static int cmd_check(const char *file)
{
    struct sup_manifest m;
    int rc = load(file, &m);
    if (rc)
        return exit_for(rc);
    if (sup_filter_check(&m, file ? file : SUP_DEFAULT_MANIFEST_NAME, stderr) < 0) { /* filter_setup.c */
        sup_manifest_free(&m);
        return exit_for(-EINVAL);
    }
    /* What only the machine can say: a VLAN parent's device (vlan.c). */
    char msg[SUP_MANIFEST_ERR_MAX];
    if ((rc = sup_vlan_check_devices(&m, file ? file : SUP_DEFAULT_MANIFEST_NAME, msg, sizeof msg)) < 0) {
        fprintf(stderr, "%s\n", msg);
        sup_manifest_free(&m);
        return exit_for(rc);
    }
    printf("%s: ok\n", file ? file : SUP_DEFAULT_MANIFEST_NAME);
    sup_manifest_free(&m);
    return SUP_EXIT_OK;
}

/* Options that @cmd does not take: named, never ignored. The control
 * commands' words (--json of `route add`, ...) are the supervisor's to
 * judge, with the same messages for every client. */
static int refuse_options(const char *cmd, const struct cli_line *l)
{
    bool check_diff = strcmp(cmd, "check") == 0 && l->diff; /* asks the running supervisor */
    bool local = (strcmp(cmd, "check") == 0 && !l->diff) || strcmp(cmd, "up") == 0 || strcmp(cmd, "help") == 0 ||
                 strcmp(cmd, "version") == 0;
    const char *bad = (local || check_diff || strcmp(cmd, "reload") == 0) && l->json ? "--json"
                      : local && l->socket ? "--socket" : NULL;
    if (!bad && l->diff && strcmp(cmd, "check") != 0)
        bad = "--diff";
    if (!bad && strcmp(cmd, "stats") != 0)
        bad = l->all ? "--all" : l->stages ? "--stages" : l->rate ? "--rate" : NULL;
    if (!bad && (strcmp(cmd, "inject") == 0 || strcmp(cmd, "upgrade") == 0) && l->json)
        bad = "--json"; /* restart's is the supervisor's to refuse (ctl.c), as before */
    if (!bad && strcmp(cmd, "route") != 0 && strcmp(cmd, "neigh") != 0 && l->force)
        bad = "--force";
    if (!bad && strcmp(cmd, "route") != 0 && l->merge)
        bad = "--merge"; /* route load's */
    if (!bad && strcmp(cmd, "upgrade") != 0 && l->binary)
        bad = "--binary";
    if (!bad && (strcmp(cmd, "help") == 0 || strcmp(cmd, "version") == 0) && l->config)
        bad = "--config";
    /* metrics, exporter, top (supervisor/metrics.h) */
    if (!bad && strcmp(cmd, "exporter") != 0)
        bad = l->listen ? "--listen" : l->user ? "--user" : NULL;
    if (!bad && strcmp(cmd, "top") != 0 && l->once)
        bad = "--once";
    if (!bad && (strcmp(cmd, "metrics") == 0 || strcmp(cmd, "exporter") == 0) && l->json)
        bad = "--json";
    if (!bad)
        return 0;
    fprintf(stderr, "ringrouter %s: %s is not one of its options (see ringrouter help %s)\n", cmd, bad, cmd);
    return SUP_EXIT_USAGE;
}

/* Where the supervisor listens: -S, else -c's run_dir, else
 * $RINGROUTER_SOCKET, else the default run_dir's. */
static int find_socket(const struct cli_line *l, char *buf, size_t len)
{
    if (l->socket) {
        snprintf(buf, len, "%s", l->socket);
        return 0;
    }
    if (l->config) {
        struct sup_manifest m;
        int rc = load(l->config, &m);
        if (rc)
            return exit_for(rc);
        snprintf(buf, len, "%s/control.sock", m.router.run_dir);
        sup_manifest_free(&m);
        return 0;
    }
    const char *env = getenv("RINGROUTER_SOCKET");
    snprintf(buf, len, "%s", env && env[0] ? env : "/run/ringrouter/control.sock");
    return 0;
}

/*
 * `reload` and `check --diff`: the request "reload [diff] [manifest PATH]".
 * With -c, PATH is that file resolved, which the supervisor compares with
 * the one it runs: reload always reads the file `up` was given.
 */
static int cmd_reload(const struct cli_line *l, bool diff)
{
    const char *cmd = diff ? "check --diff" : "reload";
    if (l->npos > 1) {
        fprintf(stderr, "ringrouter %s: unexpected argument \"%s\" (the manifest is the one `up` was given; -c "
                        "names it)\n", cmd, l->pos[1]);
        return SUP_EXIT_USAGE;
    }
    char *req[4];
    int n = 0;
    req[n++] = "reload";
    if (diff)
        req[n++] = "diff";
    char abs[PATH_MAX];
    if (l->config) {
        if (!realpath(l->config, abs)) {
            fprintf(stderr, "ringrouter %s: %s: %s\n", cmd, l->config, strerror(errno));
            return SUP_EXIT_USAGE;
        }
        if (strpbrk(abs, " \t\r\n")) {
            fprintf(stderr, "ringrouter %s: %s: a path with blanks cannot go in a request; name the socket with -S "
                            "instead of -c\n", cmd, abs);
            return SUP_EXIT_USAGE;
        }
        req[n++] = "manifest";
        req[n++] = abs;
    }
    char sock[256];
    int rc = find_socket(l, sock, sizeof(sock));
    if (rc)
        return rc;
    return sup_ctl_client(sock, n, req);
}

/*
 * A control command as the request line the supervisor reads: the command,
 * its subcommand, the positional words, then the flag words (`port NAME`
 * for stats and link's PORT, so that no port name can pass for a flag).
 */
static int cmd_ctl(const struct cli_cmd *c, const struct cli_line *l)
{
    char *req[CLI_POS_MAX + 8];
    int n = 0;
    char err[256];
    req[n++] = (char *)c->name;
    int first = 1;
    if (c->subs) {
        const char *sub = c->subs[0]; /* show */
        if (l->npos > 1) {
            sub = cli_subcommand(c, l->pos[1], err, sizeof(err));
            if (!sub) {
                fprintf(stderr, "ringrouter: %s (see ringrouter help %s)\n", err, c->name);
                return SUP_EXIT_USAGE;
            }
            first = 2;
        }
        req[n++] = (char *)sub;
    } else if (strcmp(c->name, "link") == 0 && l->npos > 1 && strcmp(l->pos[1], "set") == 0) {
        /* link set PORT ...: the words as they are (supervisor/live.c) */
    } else if ((strcmp(c->name, "stats") == 0 || strcmp(c->name, "link") == 0) && l->npos > 1) {
        if (l->npos > 2) {
            fprintf(stderr, "ringrouter %s: unexpected argument \"%s\" (name one port)\n", c->name, l->pos[2]);
            return SUP_EXIT_USAGE;
        }
        req[n++] = "port";
    } else if (strcmp(c->name, "status") == 0 && l->npos > 1) {
        fprintf(stderr, "ringrouter status: unexpected argument \"%s\"\n", l->pos[1]);
        return SUP_EXIT_USAGE;
    } else if (strcmp(c->name, "restart") == 0 && l->npos != 2) {
        fprintf(stderr, "ringrouter restart: name one service (see ringrouter status)\n");
        return SUP_EXIT_USAGE;
    }
    char abs[PATH_MAX + 2];
    for (int i = first; i < l->npos; i++)
        req[n++] = (char *)l->pos[i];
    /* save FILE: the supervisor writes where the client meant, not in its own cwd */
    if (strcmp(c->name, "save") == 0 && l->npos == 2 && l->pos[1][0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)) || snprintf(abs, sizeof(abs), "%s/%s", cwd, l->pos[1]) >= (int)sizeof(abs)) {
            fprintf(stderr, "ringrouter save: %s: cannot make it an absolute path\n", l->pos[1]);
            return SUP_EXIT_USAGE;
        }
        req[n - 1] = abs;
    }
    if (l->stages)
        req[n++] = "stages";
    if (l->force)
        req[n++] = "force";
    if (l->merge)
        req[n++] = "merge";
    if (l->binary) {
        req[n++] = "--binary";
        req[n++] = (char *)l->binary;
    }
    if (l->all)
        req[n++] = "all";
    if (l->json)
        req[n++] = "json";
    char sock[256];
    int rc = find_socket(l, sock, sizeof(sock));
    if (rc)
        return rc;
    return sup_ctl_client(sock, n, req);
}

int main(int argc, char **argv)
{
    /* capture has options of its own (-c N, -s, -w, a filter of many words): tcpdump's, not ours. */
    char cerr[256];
    const struct cli_cmd *cc = argc > 1 && argv[1][0] != '-' ? cli_command(argv[1], cerr, sizeof(cerr)) : NULL;
    if (cc && strcmp(cc->name, "capture") == 0)
        return sup_capture_main(argc - 1, argv + 1);
    if (cc && strcmp(cc->name, "trace") == 0) /* the same: a filter of many words */
        return sup_trace_main(argc - 1, argv + 1);
    struct cli_line l;
    int rc = cli_parse(argc, argv, &l);
    if (rc)
        return rc;
    char err[256];
    const struct cli_cmd *c = NULL;
    if (l.npos > 0 && !(c = cli_command(l.pos[0], err, sizeof(err)))) {
        fprintf(stderr, "ringrouter: %s (see ringrouter --help)\n", err);
        return SUP_EXIT_USAGE;
    }
    if (l.version && !l.help) {
        puts(cli_version());
        return SUP_EXIT_OK;
    }
    if (!c && l.help) {
        cli_help(stdout, NULL);
        return SUP_EXIT_OK;
    }
    if (!c)
        return usage_error("%s", "no command given");
    if (strcmp(c->name, "help") == 0 || l.help) {
        /* help: the list; help CMD, CMD --help: CMD's; help --help: help's */
        const struct cli_cmd *about = c;
        if (strcmp(c->name, "help") == 0 && l.npos > 1) {
            if (!(about = cli_command(l.pos[1], err, sizeof(err)))) {
                fprintf(stderr, "ringrouter: %s (see ringrouter --help)\n", err);
                return SUP_EXIT_USAGE;
            }
        } else if (strcmp(c->name, "help") == 0 && !l.help) {
            about = NULL;
        }
        cli_help(stdout, about);
        return SUP_EXIT_OK;
    }
    if ((rc = refuse_options(c->name, &l)))
        return rc;
    if (strcmp(c->name, "version") == 0) {
        if (l.npos > 1)
            return usage_error("version: unexpected argument \"%s\"", l.pos[1]);
        puts(cli_version());
        return SUP_EXIT_OK;
    }
    if (strcmp(c->name, "reload") == 0 || (strcmp(c->name, "check") == 0 && l.diff))
        return cmd_reload(&l, l.diff);
    if (strcmp(c->name, "metrics") == 0 || strcmp(c->name, "exporter") == 0 || strcmp(c->name, "top") == 0) {
        if (l.npos > 1) {
            fprintf(stderr, "ringrouter %s: unexpected argument \"%s\"\n", c->name, l.pos[1]);
            return SUP_EXIT_USAGE;
        }
        char sock[256];
        if ((rc = find_socket(&l, sock, sizeof(sock))))
            return rc;
        return c->name[0] == 'm' ? sup_cmd_metrics(sock)
               : c->name[0] == 'e' ? sup_cmd_exporter(sock, l.listen, l.user)
                                   : sup_cmd_top(sock, l.json, l.once);
    }
    if (strcmp(c->name, "stats") == 0 && l.rate) {
        if (l.npos > 1 || l.stages) {
            fprintf(stderr, "ringrouter stats: --rate takes %s: every counter, two samples apart\n",
                    l.stages ? "no --stages" : "no PORT");
            return SUP_EXIT_USAGE;
        }
        char sock[256];
        if ((rc = find_socket(&l, sock, sizeof(sock))))
            return rc;
        return sup_cmd_stats_rate(sock, l.rate, l.json, l.all);
    }
    if (strcmp(c->name, "check") == 0 || strcmp(c->name, "up") == 0) {
        if (l.npos > 1) {
            fprintf(stderr, "ringrouter %s: unexpected argument \"%s\" (the manifest is -c FILE)\n", c->name,
                    l.pos[1]);
            return SUP_EXIT_USAGE;
        }
        return strcmp(c->name, "check") == 0 ? cmd_check(l.config) : sup_cmd_up(l.config);
    }
    return cmd_ctl(c, &l);
}
