/* SPDX-License-Identifier: MIT */
/*
 * supervisor/up.c: `ringrouter up` and the client commands that talk to a
 * running supervisor (status, stats, restart). `up` validates the whole
 * manifest before creating anything, sets up every shared object, runs the
 * event loop until SIGTERM, SIGINT or SIGHUP, then tears everything down, so
 * that a new `up` right after works.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct sup sup_state; /* large; one per process */

int sup_cmd_up(int argc, char **argv);
int sup_cmd_ctl(const char *cmd, int argc, char **argv);

int sup_cmd_up(int argc, char **argv)
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
    while ((c = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            file = optarg;
            break;
        case 'h':
            printf("usage: ringrouter up [-c FILE]\n");
            return SUP_EXIT_OK;
        default:
            fprintf(stderr, "ringrouter up: unknown option %s (see ringrouter --help)\n", argv[optind - 1]);
            return SUP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ringrouter up: unexpected argument %s (see ringrouter --help)\n", argv[optind]);
        return SUP_EXIT_USAGE;
    }
    if (geteuid() != 0) {
        fprintf(stderr, "ringrouter up: the supervisor must run as root (it creates devices and drops privileges)\n");
        return SUP_EXIT_USAGE;
    }
    struct sup *s = &sup_state;
    struct sup_manifest_err merr;
    int ret = file ? sup_manifest_load_file(file, &s->m, &merr)
                   : sup_manifest_load_string(SUP_DEFAULT_MANIFEST_NAME, sup_default_manifest, &s->m, &merr);
    if (ret < 0) {
        fprintf(stderr, "%s\n", merr.msg);
        return ret == -EINVAL || ret == -ENOENT || ret == -EACCES || ret == -EFBIG ? SUP_EXIT_USAGE : SUP_EXIT_SYSTEM;
    }
    snprintf(s->manifest_name, sizeof(s->manifest_name), "%s", file ? file : SUP_DEFAULT_MANIFEST_NAME);
    struct ipc_err err;
    ret = sup_setup(s, &err);
    if (ret < 0) {
        sup_log("setup: %s", err.msg);
        sup_teardown(s);
        sup_manifest_free(&s->m);
        return ret == -ENOENT || ret == -EPERM ? SUP_EXIT_USAGE : SUP_EXIT_SYSTEM;
    }
    int rc = sup_run(s);
    sup_teardown(s);
    sup_manifest_free(&s->m);
    sup_log("down");
    return rc;
}

int sup_cmd_ctl(const char *cmd, int argc, char **argv)
{
    const char *sock = getenv("RINGROUTER_SOCKET");
    if (!sock || !sock[0])
        sock = "/run/ringrouter/control.sock";
    bool json = false, all = false, stages = false;
    char *req[12];
    int n = 0;
    req[n++] = (char *)cmd;
    /* Options may stand anywhere: `ringrouter route show --json`. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0 || strcmp(a, "-j") == 0) {
            json = true;
        } else if (strcmp(a, "--all") == 0 || strcmp(a, "-a") == 0) {
            all = true;
        } else if (strcmp(a, "--stages") == 0 && strcmp(cmd, "stats") == 0) {
            stages = true;
        } else if (strcmp(a, "--socket") == 0 || strcmp(a, "-S") == 0) {
            if (++i == argc) {
                fprintf(stderr, "ringrouter %s: %s needs a path\n", cmd, a);
                return SUP_EXIT_USAGE;
            }
            sock = argv[i];
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("usage: ringrouter %s ARGS [--json] [-S SOCKET] (see ringrouter --help)\n", cmd);
            return SUP_EXIT_OK;
        } else if (a[0] == '-') {
            fprintf(stderr, "ringrouter %s: unknown option %s (see ringrouter --help)\n", cmd, a);
            return SUP_EXIT_USAGE;
        } else if (n < 10) {
            req[n++] = argv[i];
        } else {
            fprintf(stderr, "ringrouter %s: too many arguments\n", cmd);
            return SUP_EXIT_USAGE;
        }
    }
    bool takes_args = strcmp(cmd, "route") == 0 || strcmp(cmd, "neigh") == 0 || strcmp(cmd, "restart") == 0 ||
                      strcmp(cmd, "shaper") == 0 || strcmp(cmd, "inject") == 0;
    if (!takes_args && n > 1) {
        fprintf(stderr, "ringrouter %s: unexpected argument %s\n", cmd, req[1]);
        return SUP_EXIT_USAGE;
    }
    if (strcmp(cmd, "restart") == 0 && n != 2) {
        fprintf(stderr, "ringrouter restart: name one service (see ringrouter status)\n");
        return SUP_EXIT_USAGE;
    }
    if ((strcmp(cmd, "route") == 0 || strcmp(cmd, "neigh") == 0 || strcmp(cmd, "shaper") == 0) && n == 1)
        req[n++] = "show";
    if (stages)
        req[n++] = "stages";
    if (json)
        req[n++] = "json";
    else if (all && strcmp(cmd, "stats") == 0 && !stages)
        req[n++] = "all";
    return sup_ctl_client(sock, n, req);
}
