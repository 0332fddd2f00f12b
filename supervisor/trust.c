/* SPDX-License-Identifier: MIT */
/*
 * supervisor/trust.c: what the supervisor runs as a service, and what it
 * takes for one.
 *
 * Binary trust, as OpenSSH's StrictModes: a service binary, every directory
 * above it and every symbolic link on the way must be owned by root or by
 * the supervisor's uid, and writable by no one else; otherwise whoever can
 * write there chooses the code the next standby runs with the service's
 * fds. The path is walked from "/" one component at a time, each opened
 * O_PATH | O_NOFOLLOW relative to its checked parent and checked through
 * that fd (fstat), so no component can be swapped between its check and
 * the next step; a symbolic link is followed by reading it, and its target
 * walked the same way. The walk ends in an O_PATH fd of the regular file,
 * which the child execs (execveat AT_EMPTY_PATH): the file checked is the
 * file run. It runs when a binary is accepted (manifest, `upgrade
 * --binary`) and again before every exec (spawn.c).
 *
 * A directory writable by group or others is refused, except a sticky one
 * (S_ISVTX, such as /tmp) itself owned by root or us: there only an entry's
 * owner (or root) may rename or remove it, and the entry below must be ours
 * by the rule above, so no one else can replace it.
 *
 * The check on a new instance (sup_exec_verify) is in /proc/PID/status:
 * NoNewPrivs, the seccomp mode and the number of filters, and in the
 * owner of that file, which the kernel makes root's while the process is
 * not dumpable. A binary that skipped the service contract's set-up
 * (ipc_svc_open, ipc_svc_ready) fails it and is never taken for up.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TRUST_LINKS 40 /* as the kernel's own bound on links in a path */
#define TRUST_DEPTH 64

/* Is @st owned by root or by us, and writable by no one else? Writes why
 * not to @why. */
static bool trust_inode(const struct stat *st, char *why, size_t len)
{
    uid_t me = geteuid();
    if (st->st_uid != 0 && st->st_uid != me) {
        snprintf(why, len, "owned by uid %u, not by root%s", (unsigned)st->st_uid,
                 me ? " or the supervisor's uid" : "");
        return false;
    }
    if (S_ISLNK(st->st_mode))
        return true; /* its mode means nothing; its directory is checked */
    mode_t w = st->st_mode & (S_IWGRP | S_IWOTH);
    if (!w || (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX)))
        return true;
    snprintf(why, len, "writable by %s (mode %04o)",
             w == (S_IWGRP | S_IWOTH) ? "group and others" : w == S_IWGRP ? "group" : "others",
             (unsigned)(st->st_mode & 07777));
    return false;
}

/* Append "/" @name to the shown path @at (trimmed to what fits). */
static void shown_push(char *at, size_t len, const char *name)
{
    size_t n = strlen(at);
    snprintf(at + n, len - n, "%s%s", n == 1 ? "" : "/", name);
}

static void shown_pop(char *at)
{
    char *slash = strrchr(at, '/');
    if (slash)
        slash[slash == at] = '\0';
}

/* Does the file behind the O_PATH @fd start with "#!"? Read through a new
 * open of the same inode (/proc/self/fd), never by its path again. */
static bool is_script(int fd)
{
    char self[32], head[2];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    int r = open(self, O_RDONLY | O_CLOEXEC);
    if (r < 0)
        return false;
    bool yes = pread(r, head, 2, 0) == 2 && head[0] == '#' && head[1] == '!';
    close(r);
    return yes;
}

/* @program: a binary to exec (executable, no script); else a file to read. */
static int trust_open(const char *path, int *fd_out, bool program, struct ipc_err *err)
{
    if (path[0] != '/')
        return ipc_errf(err, -EINVAL, "%s: not an absolute path", path);
    char rest[PATH_MAX], shown[PATH_MAX] = "/", why[96];
    snprintf(rest, sizeof(rest), "%s", path);
    int dirs[TRUST_DEPTH], depth = 0, links = 0, ret = 0;
    struct stat st;
    dirs[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirs[0] < 0 || fstat(dirs[0], &st) < 0)
        return ipc_errf(err, -errno, "%s: /: %s", path, strerror(errno));
    if (!trust_inode(&st, why, sizeof(why))) {
        close(dirs[0]);
        return ipc_errf(err, -EPERM, "%s: / is %s", path, why);
    }
    char *p = rest;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p) {
            ret = ipc_errf(err, -EISDIR, "%s: %s is a directory, not a program", path, shown);
            break;
        }
        char *end = strchr(p, '/');
        char name[NAME_MAX + 1];
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > NAME_MAX) {
            ret = ipc_errf(err, -ENAMETOOLONG, "%s: a component of more than %d bytes", path, NAME_MAX);
            break;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        p += n;
        if (strcmp(name, ".") == 0)
            continue;
        if (strcmp(name, "..") == 0) {
            if (depth > 0) {
                close(dirs[depth--]);
                shown_pop(shown);
            }
            continue;
        }
        int fd = openat(dirs[depth], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        shown_push(shown, sizeof(shown), name);
        if (fd < 0 || fstat(fd, &st) < 0) {
            ret = ipc_errf(err, -errno, "%s: %s: %s", path, shown, strerror(errno));
            if (fd >= 0)
                close(fd);
            break;
        }
        if (!trust_inode(&st, why, sizeof(why))) {
            ret = ipc_errf(err, -EPERM, "%s: %s is %s", path, shown, why);
            close(fd);
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t t = readlinkat(fd, "", target, sizeof(target) - 1);
            close(fd);
            if (t <= 0 || ++links > TRUST_LINKS || (size_t)t + strlen(p) + 1 >= sizeof(rest)) {
                ret = ipc_errf(err, -ELOOP, "%s: %s: %s", path, shown, t <= 0 ? strerror(errno) : "too many links");
                break;
            }
            target[t] = '\0';
            /* The rest of the path follows the link's target. */
            memmove(rest + t, p, strlen(p) + 1);
            memcpy(rest, target, (size_t)t);
            p = rest;
            shown_pop(shown);
            if (target[0] == '/') {
                while (depth > 0)
                    close(dirs[depth--]);
                snprintf(shown, sizeof(shown), "/");
            }
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (depth + 1 >= TRUST_DEPTH) {
                close(fd);
                ret = ipc_errf(err, -ENAMETOOLONG, "%s: more than %d directories deep", path, TRUST_DEPTH);
                break;
            }
            dirs[++depth] = fd;
            continue;
        }
        bool last = !*p;
        if (!S_ISREG(st.st_mode) || !last || (program && !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))) {
            close(fd);
            ret = ipc_errf(err, !last ? -ENOTDIR : -EACCES, "%s: %s is %s", path, shown,
                           !last ? "not a directory" : program ? "not an executable regular file" : "not a regular file");
            break;
        }
        if (program && is_script(fd)) {
            close(fd);
            ret = ipc_errf(err, -ENOEXEC, "%s: %s is %s", path, shown,
                           "a script (#!): under its kind's seccomp ceiling a shell can neither fork nor exec; "
                           "name the program itself");
            break;
        }
        *fd_out = fd;
        break;
    }
    while (depth >= 0)
        close(dirs[depth--]);
    return ret;
}

int sup_trust_open(const char *path, int *fd_out, struct ipc_err *err)
{
    return trust_open(path, fd_out, true, err);
}

int sup_trust_open_file(const char *path, int *fd_out, struct ipc_err *err)
{
    return trust_open(path, fd_out, false, err);
}

int sup_trust_check(const char *path, struct ipc_err *err)
{
    int fd;
    int ret = sup_trust_open(path, &fd, err);
    if (ret == 0)
        close(fd);
    return ret;
}

int sup_trust_service(const struct sup *s, const struct sup_svc *v, struct ipc_err *err)
{
    struct ipc_err why;
    int ret = sup_trust_check(v->binary, &why);
    if (ret == 0)
        return 0;
    unsigned line = v->m->src.key_line[SUP_SERVICE_BINARY];
    if (line)
        return ipc_errf(err, ret, "%s: line %u: [service %s] binary: refused: %s", s->manifest_name, line, v->name,
                        why.msg);
    return ipc_errf(err, ret, "%s: [service %s]: its binary refused: %s", s->manifest_name, v->name, why.msg);
}

bool sup_trust_reload(const struct sup *s, const struct sup_manifest *nm, const char *cmd, FILE *f)
{
    /* A kind's own binary, beside ringrouter, was checked at `up` and is
     * again at each exec; a `binary` key may name a new one. */
    for (size_t i = 0; i < nm->nservices; i++) {
        const struct sup_service *ms = &nm->services[i];
        if (!ms->binary[0])
            continue;
        char path[sizeof(((struct sup_svc *)0)->binary)];
        snprintf(path, sizeof(path), "%s%s%s", ms->binary[0] == '/' ? "" : s->bindir, ms->binary[0] == '/' ? "" : "/",
                 ms->binary);
        struct ipc_err why;
        if (sup_trust_check(path, &why) < 0) {
            fprintf(f, "%s: line %u: [service %s] binary: refused: %s; nothing changed\n", cmd,
                    ms->src.key_line[SUP_SERVICE_BINARY], ms->name, why.msg);
            return false;
        }
    }
    return true;
}

/* The number after "@key:" in /proc status text @buf, or -1. */
static long status_field(const char *buf, const char *key)
{
    size_t n = strlen(key);
    for (const char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (strncmp(l, key, n) == 0 && l[n] == ':')
            return strtol(l + n + 1, NULL, 10);
    return -1;
}

int sup_exec_verify(const struct sup_svc *v, pid_t pid, int pidfd, bool ready, char *why, size_t len)
{
    char path[40], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(why, len, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    /* The pid is still the one we forked: what we read is its status. */
    if (n <= 0 || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
        snprintf(why, len, "it is gone");
        return -1;
    }
    buf[n] = '\0';
    long nnp = status_field(buf, "NoNewPrivs"), mode = status_field(buf, "Seccomp");
    long filters = status_field(buf, "Seccomp_filters");
    /* The ceiling, then the service's start stage, and its run stage once
     * it is ready (ipc/sandbox.h). Builds without the filter install none
     * of them, and check the rest. */
    long want = ready ? 3 : 2;
    why[0] = '\0';
    /* SECCOMP_MODE_DEAD: a filter is killing it (a forbidden call made
     * just after its line); that death, not a refusal, is what to report. */
    if (mode == 3)
        return 0;
    if (nnp != 1)
        snprintf(why, len, "NoNewPrivs %ld, not 1", nnp);
    else if (ipc_sandbox_imposed() && mode != 2)
        snprintf(why, len, "Seccomp %ld, not 2 (no filter)", mode);
    else if (ipc_sandbox_imposed() && filters >= 0 && filters < want)
        snprintf(why, len, "%ld seccomp filters, not %ld (the supervisor's ceiling, the service's %s): it skipped %s",
                 filters, want, ready ? "start and run stages" : "start stage",
                 filters <= 1 ? "ipc_svc_open" : "ipc_svc_ready");
    /* No memory map (no Vm lines): it is exiting, and the kernel shows an
     * exiting task's /proc entries as its own uid's, dumpable or not; its
     * death, which is on its way, is what the supervisor should report. */
    else if (v->uid != 0 && st.st_uid != 0 && strstr(buf, "\nVmSize:"))
        snprintf(why, len, "dumpable (its /proc entries are uid %u's): it skipped ipc_svc_open's PR_SET_DUMPABLE",
                 (unsigned)st.st_uid);
    return why[0] ? -1 : 0;
}

bool sup_exec_refuse(const struct sup_svc *v, pid_t pid, int pidfd, bool ready, const char *binary)
{
    char why[192];
    if (sup_exec_verify(v, pid, pidfd, ready, why, sizeof(why)) == 0)
        return false;
    sup_err("%s: refused %s pid %d, binary %s: %s; killed", v->name, ready ? "instance" : "standby", (int)pid, binary,
            why);
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    return true;
}
