/* SPDX-License-Identifier: MIT */
/*
 * supervisor/up.c: `ringrouter up` and the client commands that talk to a
 * running supervisor (status, stats, restart). `up` validates the whole
 * manifest before creating anything, sets up every shared object, runs the
 * event loop until SIGTERM or SIGINT, then tears everything down, so that a
 * new `up` right after works.
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
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"all", no_argument, NULL, 'a'},
        {"socket", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *sock = getenv("RINGROUTER_SOCKET");
    char def[128];
    if (!sock || !sock[0]) {
        snprintf(def, sizeof(def), "/run/ringrouter/control.sock");
        sock = def;
    }
    bool json = false, all = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+jaS:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'a':
            all = true;
            break;
        case 'S':
            sock = optarg;
            break;
        case 'h':
            printf("usage: ringrouter %s [--json]%s [-S SOCKET]%s\n", cmd, strcmp(cmd, "stats") == 0 ? " [--all]" : "",
                   strcmp(cmd, "restart") == 0 ? " SERVICE" : "");
            return SUP_EXIT_OK;
        default:
            fprintf(stderr, "ringrouter %s: unknown option %s (see ringrouter --help)\n", cmd, argv[optind - 1]);
            return SUP_EXIT_USAGE;
        }
    }
    char *req[4];
    int n = 0;
    req[n++] = (char *)cmd;
    if (strcmp(cmd, "restart") == 0) {
        if (optind + 1 != argc) {
            fprintf(stderr, "ringrouter restart: name one service (see ringrouter status)\n");
            return SUP_EXIT_USAGE;
        }
        req[n++] = argv[optind];
    } else if (optind < argc) {
        fprintf(stderr, "ringrouter %s: unexpected argument %s\n", cmd, argv[optind]);
        return SUP_EXIT_USAGE;
    }
    if (json)
        req[n++] = "json";
    else if (all && strcmp(cmd, "stats") == 0)
        req[n++] = "all";
    return sup_ctl_client(sock, n, req);
}
