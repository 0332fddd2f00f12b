/* SPDX-License-Identifier: MIT */
/*
 * supervisor/main.c: the `ringrouter` command. It parses argv and dispatches
 * to a subcommand: `check` loads a manifest (supervisor/manifest.c) and
 * reports the first error; `up` runs the supervisor (supervisor/up.c); the
 * control commands talk to a running supervisor over its socket
 * (supervisor/ctl.c). --help lists only what exists, and anything else is an
 * unknown command.
 *
 * Exit codes (s6's convention, STYLE.md §7): 0 ok; 100 for a usage error or
 * an invalid manifest, including a manifest path that does not exist or
 * cannot be read (a mistake in what the user typed); 111 for a system
 * failure that is not the user's doing (out of memory, an I/O error).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/manifest.h"

#define SUP_EXIT_OK 0
#define SUP_EXIT_USAGE 100
#define SUP_EXIT_SYSTEM 111

int sup_cmd_up(int argc, char **argv);
int sup_cmd_ctl(const char *cmd, int argc, char **argv);

static const char sup_usage[] =
    "usage: ringrouter COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  check [-c FILE]        validate a manifest (default: the built-in demo manifest)\n"
    "                         and print \"FILE: ok\", or the first error on stderr\n"
    "  up [-c FILE]           run the supervisor: create the pool, rings and devices,\n"
    "                         start every service and keep them running until\n"
    "                         SIGTERM, SIGINT or SIGHUP (as root)\n"
    "  status [--json]        each service's state, pid, restarts, uptime, last exit\n"
    "  stats [--json] [--all] counters of every service and ring, read from shared\n"
    "                         memory without interrupting the services (the\n"
    "                         human form skips zero counters unless --all)\n"
    "  stats --stages [--json]  CPU cycles per packet in each stage of each service\n"
    "                         (needs stages = on in the manifest's [router])\n"
    "  restart SERVICE        stop SERVICE and start it again\n"
    "  route show [--json]    the FIB: connected networks, manifest and added routes\n"
    "  route add PREFIX via GATEWAY | route add PREFIX port NAME\n"
    "  route del PREFIX       change the running router's FIB, without stopping it\n"
    "  neigh show [--json]    the neighbour (ARP) table\n"
    "  shaper show [PORT] [--json]  each shaped port's classes: rate, ceil, measured\n"
    "                         rate, backlog, drops, ECN marks\n"
    "  shaper set PORT [CLASS] rate RATE [ceil RATE]\n"
    "                         change a running shaper's rates (e.g. 50mbit), no restart\n"
    "  inject SERVICE KIND [ARGS]  inject a fault: kill, stop MS, crash, corrupt-ring,\n"
    "                         corrupt-meta, double-free, chain-loop, leak N,\n"
    "                         slow US [MS], exhaust [MS] (docs/operations.md)\n"
    "\n"
    "options:\n"
    "  -S, --socket PATH      the control socket of status, stats and restart\n"
    "                         (default $RINGROUTER_SOCKET, else /run/ringrouter/control.sock)\n"
    "  -h, --help             show this help\n"
    "\n"
    "exit status: 0 ok, 100 usage or manifest error, 111 system failure.\n"
    "The manifest format is described in docs/manifest.md.\n";

static int sup_usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "ringrouter: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see ringrouter --help)\n");
    return SUP_EXIT_USAGE;
}

/* Errors that name a bad path are the user's to fix: exit 100. */
static int sup_exit_for(int rc)
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

static int sup_cmd_check(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *file = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            file = optarg;
            break;
        case 'h':
            fputs(sup_usage, stdout);
            return SUP_EXIT_OK;
        case ':':
            return sup_usage_error("check: option \"%s\" needs an argument", argv[optind - 1]);
        default:
            return sup_usage_error("check: unknown option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return sup_usage_error("check: unexpected argument \"%s\"", argv[optind]);

    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = file ? sup_manifest_load_file(file, &m, &err)
                  : sup_manifest_load_string(SUP_DEFAULT_MANIFEST_NAME, sup_default_manifest, &m, &err);
    if (rc) {
        fprintf(stderr, "%s\n", err.msg);
        return sup_exit_for(rc);
    }
    printf("%s: ok\n", file ? file : SUP_DEFAULT_MANIFEST_NAME);
    sup_manifest_free(&m);
    return SUP_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return sup_usage_error("%s", "no command given");
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        fputs(sup_usage, stdout);
        return SUP_EXIT_OK;
    }
    if (strcmp(cmd, "check") == 0)
        return sup_cmd_check(argc - 1, argv + 1);
    if (strcmp(cmd, "up") == 0)
        return sup_cmd_up(argc - 1, argv + 1);
    if (strcmp(cmd, "status") == 0 || strcmp(cmd, "stats") == 0 || strcmp(cmd, "restart") == 0 ||
        strcmp(cmd, "route") == 0 || strcmp(cmd, "neigh") == 0 || strcmp(cmd, "shaper") == 0 ||
        strcmp(cmd, "inject") == 0)
        return sup_cmd_ctl(cmd, argc - 1, argv + 1);
    return sup_usage_error("unknown command \"%s\"", cmd);
}
