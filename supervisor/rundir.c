/* SPDX-License-Identifier: MIT */
/*
 * supervisor/rundir.c: run_dir and state_dir, walked from "/" and opened
 * once. Whoever can change the path to run_dir can make the supervisor, as
 * root, write its state file, its control socket or its routes where they
 * choose, and remove what it finds there at shutdown; and can put a socket
 * of their own where `ringrouter` clients (as root) look, and answer their
 * `route add` with OK. So every directory from "/" down must be a real
 * directory (no symbolic link), owned by root or by the supervisor's uid,
 * and writable by no one else. One exception: a directory owned by root
 * with the sticky bit (/tmp), where others may write but can neither rename
 * nor remove an entry that is not theirs, so the one below it cannot be
 * swapped; that one must then be ours.
 * The directory itself must be the supervisor's (made 0700 if missing), not
 * writable by group or others. An existing one that is not is refused, not
 * repaired: it may hold someone else's files.
 *
 * Each step is an openat(O_DIRECTORY | O_NOFOLLOW) below the one before, and
 * what the walk ends on is kept open (s->run_fd, s->state_fd): every later
 * file operation there (the state file, adopt.c; the socket, ctl.c; the
 * saved routes, route.c; the NAPI state, xsk_napi.c; the cgroup mount,
 * cgroup.c) is relative to that fd, with openat, renameat, unlinkat, or
 * through "/proc/self/fd/N/NAME" where the call takes only a path (bind,
 * connect, mount), so a component swapped after `up` redirects nothing.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Can anyone but root and us rename or replace what is in @st? */
static const char *dir_unsafe(const struct stat *st, char *why, size_t len)
{
    uid_t me = geteuid();
    if (st->st_uid != 0 && st->st_uid != me) {
        snprintf(why, len, "owned by uid %u: every directory above it must be root's or this supervisor's (uid %u)",
                 (unsigned)st->st_uid, (unsigned)me);
        return why;
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_uid == 0 && (st->st_mode & S_ISVTX))) {
        snprintf(why, len, "mode %04o lets others write to it (at most 0755, or root's and sticky as /tmp)",
                 (unsigned)(st->st_mode & 07777));
        return why;
    }
    return NULL;
}

/* The directory run_dir (or state_dir) names, itself: ours alone. */
static int dir_own(const char *dir, const char *key, const struct stat *st, struct ipc_err *err)
{
    if (st->st_uid != geteuid())
        return ipc_errf(err, -EPERM, "%s %s: owned by uid %u, not by this supervisor (uid %u)", key, dir,
                        (unsigned)st->st_uid, (unsigned)geteuid());
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return ipc_errf(err, -EPERM, "%s %s: mode %04o lets others write to it (at most 0755)", key, dir,
                        (unsigned)(st->st_mode & 07777));
    return 0;
}

/*
 * Open @dir (@key names it in errors) from "/", a component at a time,
 * making the last one 0700 if it is missing: its fd (>= 3, close-on-exec),
 * or -errno with @err naming the component and what is wrong with it.
 */
static int dir_walk(const char *dir, const char *key, struct ipc_err *err)
{
    if (dir[0] != '/')
        return ipc_errf(err, -EINVAL, "%s %s: not an absolute path", key, dir);
    char why[160], at[SUP_PATH_MAX + 2] = "";
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return ipc_errf(err, -errno, "%s %s: /: %s", key, dir, strerror(errno));
    if (dir_unsafe(&st, why, sizeof(why))) {
        close(fd);
        return ipc_errf(err, -EPERM, "%s %s: /: %s", key, dir, why);
    }
    const char *p = dir;
    size_t atlen = 0;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, "/");
        char name[SUP_PATH_MAX + 1];
        snprintf(name, sizeof(name), "%.*s", (int)n, p);
        p += n;
        while (*p == '/')
            p++;
        bool last = !*p;
        atlen += (size_t)snprintf(at + atlen, sizeof(at) - atlen, "/%s", name);
        if (strcmp(name, "..") == 0 || strcmp(name, ".") == 0) {
            close(fd);
            return ipc_errf(err, -EINVAL, "%s %s: \"%s\" in the path: name the directory itself", key, dir, name);
        }
        if (last && mkdirat(fd, name, 0700) < 0 && errno != EEXIST) {
            int e = errno;
            close(fd);
            return ipc_errf(err, -e, "%s %s: %s", key, dir, strerror(e));
        }
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        struct stat lst;
        bool link = next < 0 && fstatat(fd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode);
        close(fd);
        if (next < 0 && link && last)
            return ipc_errf(err, -EPERM, "%s %s: a symbolic link; it must be a directory of its own", key, dir);
        if (next < 0 && link)
            return ipc_errf(err, -EPERM, "%s %s: %s is a symbolic link; every directory on the path must be a real one",
                            key, dir, at);
        if (next < 0)
            return ipc_errf(err, -e, "%s %s: %s: %s", key, dir, at, strerror(e));
        fd = next;
        if (fstat(fd, &st) < 0) {
            e = errno;
            close(fd);
            return ipc_errf(err, -e, "%s %s: %s: %s", key, dir, at, strerror(e));
        }
        int ret = last ? dir_own(dir, key, &st, err) : 0;
        if (!last && dir_unsafe(&st, why, sizeof(why)))
            ret = ipc_errf(err, -EPERM, "%s %s: %s: %s", key, dir, at, why);
        if (ret < 0) {
            close(fd);
            return ret;
        }
    }
    /* Never 0-2, so 0 in struct sup means "not open yet". */
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    return hi >= 0 ? hi : ipc_errf(err, -e, "%s %s: %s", key, dir, strerror(e));
}

int sup_run_dir(struct sup *s, struct ipc_err *err)
{
    if (s->run_fd <= 0) {
        int fd = dir_walk(s->m.router.run_dir, "run_dir", err);
        if (fd < 0)
            return fd;
        s->run_fd = fd;
    }
    if (s->m.router.state_dir[0] && s->state_fd <= 0) {
        int fd = dir_walk(s->m.router.state_dir, "state_dir", err);
        if (fd < 0)
            return fd;
        s->state_fd = fd;
    }
    return 0;
}

int sup_state_fd(const struct sup *s)
{
    return s->m.router.state_dir[0] ? s->state_fd : s->run_fd;
}

void sup_run_path(const struct sup *s, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "/proc/self/fd/%d/%s", s->run_fd, name);
}
