/* SPDX-License-Identifier: MIT */
/*
 * supervisor/up.c: `ringrouter up` (its command line is main.c's). It
 * validates the whole manifest before creating anything, sets up every
 * shared object, runs the event loop until SIGTERM or SIGINT (SIGHUP
 * reloads the manifest: reload.c), then tears everything down, so that a
 * new `up` right after works.
 */
#include "supervisor/sup.h"
#include "supervisor/adopt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct sup sup_state; /* large; one per process */

int sup_cmd_up(const char *file);

int sup_cmd_up(const char *file)
{
    if (geteuid() != 0) {
        fprintf(stderr, "ringrouter up: the supervisor must run as root (it creates devices and drops privileges)\n");
        return SUP_EXIT_USAGE;
    }
    struct sup *s = &sup_state;
    struct sup_manifest_err merr;
    int ret = file ? sup_manifest_load_file(file, &s->m, &merr)
                   : sup_manifest_load_string(SUP_DEFAULT_MANIFEST_NAME, sup_default_manifest, &s->m, &merr);
    if (ret < 0) {
        char mark[4];
        /* As `check` prints it; under systemd, marked and prefixed as every log line. */
        if (*sup_log_prio(3, mark))
            sup_err("%s", merr.msg);
        else
            fprintf(stderr, "%s\n", merr.msg);
        return ret == -EINVAL || ret == -ENOENT || ret == -EACCES || ret == -EFBIG ? SUP_EXIT_USAGE : SUP_EXIT_SYSTEM;
    }
    snprintf(s->manifest_name, sizeof(s->manifest_name), "%s", file ? file : SUP_DEFAULT_MANIFEST_NAME);
    /* What `reload` reads again: the path as given, made absolute but not
     * resolved, so that a symbolic link moved to a new version is followed. */
    char cwd[2048];
    if (file && file[0] != '/' && getcwd(cwd, sizeof(cwd)))
        snprintf(s->manifest_path, sizeof(s->manifest_path), "%s/%s", cwd, file);
    else if (file)
        snprintf(s->manifest_path, sizeof(s->manifest_path), "%s", file);
    struct ipc_err err;
    if ((ret = sup_ctl_probe(s, &err)) < 0) {
        if (ret == -EADDRINUSE)
            sup_err("%s", err.msg);
        else
            sup_err("setup: %s", err.msg);
        sup_manifest_free(&s->m);
        return ret == -EADDRINUSE ? SUP_EXIT_SYSTEM : SUP_EXIT_USAGE;
    }
    /* Services a supervisor left running (it died, or re-exec'd into us):
     * adopt them rather than start new ones (adopt.c). */
    if (sup_adopt_begin(s, &err) < 0)
        sup_warn("%s", err.msg);
    if (s->adopt)
        sup_self_idle(s); /* they forward meanwhile: our set-up takes no CPU of theirs (sched_self.c) */
    ret = sup_setup(s, &err);
    if (ret < 0)
        sup_self_serve(s); /* starting afresh, or failing: nothing forwards to protect */
    if (ret < 0 && s->adopt) {
        sup_err("adoption: %s; ending the running services and starting afresh", err.msg);
        sup_adopt_fail(s);
        sup_teardown(s);
        ret = sup_setup(s, &err);
    }
    if (ret < 0) {
        sup_err("setup: %s", err.msg);
        sup_teardown(s);
        sup_manifest_free(&s->m);
        return ret == -ENOENT || ret == -EPERM ? SUP_EXIT_USAGE : SUP_EXIT_SYSTEM;
    }
    if (s->adopt)
        sup_adopt_commit(s);
    int rc = sup_run(s);
    sup_teardown(s);
    sup_manifest_free(&s->m);
    sup_log("down");
    return rc;
}
