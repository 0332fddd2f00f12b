/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cgroup.c: [service] cpu_max_pct, a ceiling on the CPU time one
 * service may take, enforced by the kernel's CPU bandwidth controller.
 *
 * Why: nice and CFS give a service its share of a CPU whatever it does with
 * it, so a service that spins (hostile, buggy, or `inject slow`) takes a
 * whole CPU from the services beside it; on a small machine their queues
 * overflow while it spins. A quota bounds what a spinner can take, and a
 * service that stays under it never notices.
 *
 * Where: the hierarchy that has the cpu controller, cgroup v2 if it is
 * there (cpu.max) or else v1's "cpu" (cpu.cfs_quota_us), in
 * ringrouter/INSTANCE/SERVICE, INSTANCE being run_dir with '/' as '-': two
 * routers on one host do not share, a supervisor that adopts (adopt.c)
 * finds the same ones. The period is 10 ms, so that a throttled service
 * waits at most 10 ms minus its quota, not a default 100 ms period's worth.
 * The child joins its cgroup itself, before its exec (spawn.c), through a
 * cgroup.procs fd the supervisor opened for it: nothing of the service runs
 * outside its limit.
 *
 * A service that restarts in a loop (its second death in a row or more,
 * until it is stable again: policy.c) execs and starts over and over; that
 * CPU is its own fault's, so it is charged to it: [router]
 * restart_cpu_max_pct (25 by default) is its quota meanwhile, if lower
 * than its own. sup_cg_tick follows the service in and out of the loop. A
 * service without a limit of its own is moved into its cgroup only for
 * the loop, and back to the supervisor's own cgroup after: in a cgroup of
 * its own a task competes as the group does, whose weight is a nice-0
 * task's whatever its nice, and a SCHED_IDLE standby alone in it would
 * compete at that weight too. Where no cpu controller can be had, only
 * the default is lost, with a warning.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define CG_PERIOD_US 10000u
#define CG_UNKNOWN UINT32_MAX /* cg_quota before we wrote it: an adopted service's */

static char cg_home[600]; /* the supervisor's own cgroup in that hierarchy, for the way back */
static bool cg_failed;    /* no cgroup for the default: said once */

static bool cg_v2_has_cpu(const char *point)
{
    char path[300], ctl[256] = "";
    snprintf(path, sizeof(path), "%s/cgroup.controllers", point);
    FILE *c = fopen(path, "re");
    if (!c)
        return false;
    bool has = fgets(ctl, sizeof(ctl), c) != NULL, cpu = false;
    fclose(c);
    for (char *save = NULL, *w = has ? strtok_r(ctl, " \n", &save) : NULL; w; w = strtok_r(NULL, " \n", &save))
        cpu |= strcmp(w, "cpu") == 0;
    return cpu;
}

/* Find the hierarchy with the cpu controller from /proc/self/mountinfo:
 * @mnt its mount point, @v2 whether it is cgroup v2. 0, or -ENOENT. */
static int cg_find_cpu(char *mnt, size_t len, bool *v2)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -errno;
    char line[1024];
    int ret = -ENOENT;
    while (ret < 0 && fgets(line, sizeof(line), f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
        char point[200], fstype[32], superopts[512];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %199s", point) != 1 ||
            sscanf(dash + 3, "%31s %*s %511s", fstype, superopts) != 2)
            continue;
        if (strcmp(fstype, "cgroup2") == 0) {
            if (cg_v2_has_cpu(point)) {
                *v2 = true;
                ret = 0;
            }
        } else if (strcmp(fstype, "cgroup") == 0) {
            for (char *save = NULL, *w = strtok_r(superopts, ",", &save); w; w = strtok_r(NULL, ",", &save))
                if (strcmp(w, "cpu") == 0) {
                    *v2 = false;
                    ret = 0;
                }
        }
        if (ret == 0)
            snprintf(mnt, len, "%s", point);
    }
    fclose(f);
    return ret;
}

static int cg_write(const char *dir, const char *file, const char *val, struct ipc_err *err, const char *who)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return ipc_errf(err, -errno, "%s: cpu_max_pct: %s: %s", who, path, strerror(errno));
    ssize_t n = write(fd, val, strlen(val));
    int e = n < 0 ? errno : 0;
    close(fd);
    if (e)
        return ipc_errf(err, -e, "%s: cpu_max_pct: writing \"%s\" to %s: %s", who, val, path, strerror(e));
    return 0;
}

static int cg_mkdir(const char *path, struct ipc_err *err, const char *who)
{
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return ipc_errf(err, -errno, "%s: cpu_max_pct: mkdir %s: %s%s", who, path, strerror(errno),
                        errno == EROFS ? " (under systemd: ProtectControlGroups=no, see docs/operations.md)" : "");
    return 0;
}

/* No hierarchy with the cpu controller in our mount namespace (`ip netns
 * exec` mounts a new /sys, without /sys/fs/cgroup): mount one of our own on
 * run_dir/cgroup, the same hierarchy as the host's (v2, or v1's cpu, alone
 * or with cpuacct), and s->cg_mnt says to unmount it at the end. */
static int cg_mount(struct sup *s, char *mnt, size_t len)
{
    sup_run_path(s, "cgroup", s->cg_mnt, sizeof(s->cg_mnt)); /* through run_dir's fd (rundir.c) */
    if (mkdir(s->cg_mnt, 0700) < 0 && errno != EEXIST)
        goto fail;
    if (mount("cgroup2", s->cg_mnt, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0) {
        if (cg_v2_has_cpu(s->cg_mnt)) {
            s->cg_v2 = true;
            snprintf(mnt, len, "%s", s->cg_mnt);
            return 0;
        }
        umount2(s->cg_mnt, MNT_DETACH);
    }
    if (mount("cgroup", s->cg_mnt, "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC, "cpu") == 0 ||
        mount("cgroup", s->cg_mnt, "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC, "cpu,cpuacct") == 0) {
        s->cg_v2 = false;
        snprintf(mnt, len, "%s", s->cg_mnt);
        return 0;
    }
fail:;
    int e = errno;
    rmdir(s->cg_mnt);
    s->cg_mnt[0] = '\0';
    return -e;
}

/* s->cg_dir: the instance's directory, made once; its parents pass the cpu
 * controller down (v2; v1 has no such switch). */
static int cg_instance(struct sup *s, struct ipc_err *err, const char *who)
{
    if (s->cg_dir[0])
        return 0;
    char mnt[256], inst[SUP_PATH_MAX + 1];
    int ret = cg_find_cpu(mnt, sizeof(mnt), &s->cg_v2);
    if (ret < 0 && (ret = cg_mount(s, mnt, sizeof(mnt))) < 0)
        return ipc_errf(err, ret, "%s: cpu_max_pct: no cgroup hierarchy with the cpu controller is mounted, and "
                        "mounting one on %s/cgroup failed: %s", who, s->m.router.run_dir, strerror(-ret));
    snprintf(inst, sizeof(inst), "%s", s->m.router.run_dir + (s->m.router.run_dir[0] == '/'));
    for (char *p = inst; *p; p++)
        if (*p == '/')
            *p = '-';
    char top[300], dir[sizeof(s->cg_dir)];
    snprintf(top, sizeof(top), "%s/ringrouter", mnt);
    snprintf(dir, sizeof(dir), "%s/%s", top, inst);
    if ((ret = cg_mkdir(top, err, who)) < 0 || (ret = cg_mkdir(dir, err, who)) < 0)
        return ret;
    if (s->cg_v2 && ((ret = cg_write(mnt, "cgroup.subtree_control", "+cpu", err, who)) < 0 ||
                     (ret = cg_write(top, "cgroup.subtree_control", "+cpu", err, who)) < 0 ||
                     (ret = cg_write(dir, "cgroup.subtree_control", "+cpu", err, who)) < 0))
        return ret;
    snprintf(s->cg_dir, sizeof(s->cg_dir), "%s", dir);
    /* Ours: "0::PATH" (v2), or the v1 line whose controllers hold cpu. */
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[512];
    snprintf(cg_home, sizeof(cg_home), "%s", mnt);
    while (f && fgets(line, sizeof(line), f)) {
        char *c = strchr(line, ':'), *p = c ? strchr(c + 1, ':') : NULL;
        if (!p)
            continue;
        *c = *p++ = '\0';
        p[strcspn(p, "\n")] = '\0';
        bool cpu = false;
        for (char *save = NULL, *w = strtok_r(c + 1, ",", &save); w; w = strtok_r(NULL, ",", &save))
            cpu |= strcmp(w, "cpu") == 0;
        if (s->cg_v2 ? strcmp(line, "0") == 0 && !c[1] : cpu)
            snprintf(cg_home, sizeof(cg_home), "%s%s", mnt, strcmp(p, "/") == 0 ? "" : p);
    }
    if (f)
        fclose(f);
    return 0;
}

/* The % of a CPU @v may take now (0: no limit): its own cpu_max_pct, or
 * restart_cpu_max_pct while it restarts in a loop, if that is lower. */
static uint32_t cg_want(const struct sup *s, const struct sup_svc *v)
{
    uint32_t own = v->m->cpu_max_pct, loop = s->m.router.restart_cpu_max_pct;
    return loop && v->consecutive >= 2 && (!own || loop < own) ? loop : own;
}

/* Write @pct (0: no limit) as @dir's quota. */
static int cg_quota(const struct sup *s, const char *dir, uint32_t pct, struct ipc_err *err, const char *who)
{
    char val[64];
    uint64_t quota = (uint64_t)pct * CG_PERIOD_US / 100u;
    if (s->cg_v2) {
        if (pct)
            snprintf(val, sizeof(val), "%llu %u", (unsigned long long)quota, CG_PERIOD_US);
        else
            snprintf(val, sizeof(val), "max %u", CG_PERIOD_US);
        return cg_write(dir, "cpu.max", val, err, who);
    }
    /* The period first: the kernel checks the quota against it. */
    int ret;
    snprintf(val, sizeof(val), "%u", CG_PERIOD_US);
    if ((ret = cg_write(dir, "cpu.cfs_quota_us", "-1", err, who)) == 0 &&
        (ret = cg_write(dir, "cpu.cfs_period_us", val, err, who)) == 0 && pct) {
        snprintf(val, sizeof(val), "%llu", (unsigned long long)quota);
        ret = cg_write(dir, "cpu.cfs_quota_us", val, err, who);
    }
    return ret;
}

int sup_cg_init(struct sup *s, struct ipc_err *err)
{
    const char *own = NULL;
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        /* Adopted, it may be in its cgroup from a loop under the supervisor
         * that is gone: the first tick puts it right. */
        v->cg_quota = v->m->cpu_max_pct || s->adopt ? CG_UNKNOWN : 0;
        if (!own && v->m->cpu_max_pct)
            own = v->name;
    }
    if (own)
        return cg_instance(s, err, own);
    struct ipc_err e;
    if (s->adopt && s->m.router.restart_cpu_max_pct)
        cg_instance(s, &e, "router"); /* none: nothing of ours to put right */
    return 0; /* else made when a service first restarts in a loop (sup_cg_tick) */
}

/* The group's weight, @nice's: a task in a cgroup of its own competes with
 * its group's weight, not its own (the kernel's sched_prio_to_weight). */
static int cg_weight(const struct sup *s, const char *dir, int32_t nice, struct ipc_err *err, const char *who)
{
    static const unsigned w[40] = {88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
                                   9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
                                   1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
                                   110,   87,    70,    56,    45,    36,    29,    23,    18,    15};
    char val[16];
    nice = nice < -20 ? -20 : nice > 19 ? 19 : nice;
    if (s->cg_v2) {
        snprintf(val, sizeof(val), "%d", (int)nice);
        return cg_write(dir, "cpu.weight.nice", val, err, who);
    }
    snprintf(val, sizeof(val), "%u", w[nice + 20]);
    return cg_write(dir, "cpu.shares", val, err, who);
}

/* Move @pid into @dir (its cgroup.procs); gone meanwhile is not an error. */
static void cg_move(const char *dir, pid_t pid, const char *who)
{
    char path[700], val[16];
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    snprintf(val, sizeof(val), "%d", (int)pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || (write(fd, val, strlen(val)) < 0 && errno != ESRCH))
        sup_warn("%s: cannot move pid %d to %s: %s", who, (int)pid, path, strerror(errno));
    if (fd >= 0)
        close(fd);
}

int sup_cg_enter_fd(struct sup *s, struct sup_svc *v, struct ipc_err *err)
{
    /* Without a limit of its own, it has a cgroup only in a restart loop
     * (its home is the supervisor's), if one could be had. */
    uint32_t want = cg_want(s, v);
    if (!v->m->cpu_max_pct && (!want || !s->cg_dir[0]))
        return -1;
    int ret = cg_instance(s, err, v->name);
    if (ret < 0)
        return ret;
    char dir[sizeof(s->cg_dir) + SUP_SERVICE_MAX + 2];
    snprintf(dir, sizeof(dir), "%s/%s", s->cg_dir, v->name);
    if ((ret = cg_mkdir(dir, err, v->name)) < 0)
        return ret;
    if ((ret = cg_weight(s, dir, v->m->nice, err, v->name)) < 0 || (ret = cg_quota(s, dir, want, err, v->name)) < 0)
        return ret;
    v->cg_quota = want;
    char path[sizeof(dir) + 16];
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return ipc_errf(err, -errno, "%s: cpu_max_pct: %s: %s", v->name, path, strerror(errno));
    return fd;
}

int sup_cg_throttled(const struct sup *s, const struct sup_svc *v, uint64_t *periods, uint64_t *us)
{
    if (!s->cg_dir[0] || !v->m->cpu_max_pct)
        return -ENOENT;
    char path[sizeof(s->cg_dir) + SUP_SERVICE_MAX + 16], key[64];
    snprintf(path, sizeof(path), "%s/%s/cpu.stat", s->cg_dir, v->name);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    unsigned long long val;
    *periods = *us = 0;
    while (fscanf(f, "%63s %llu", key, &val) == 2) {
        if (strcmp(key, "nr_throttled") == 0)
            *periods = val;
        else if (strcmp(key, "throttled_usec") == 0)
            *us = val;
        else if (strcmp(key, "throttled_time") == 0) /* v1: ns */
            *us = val / 1000u;
    }
    fclose(f);
    return 0;
}

void sup_cg_tick(struct sup *s)
{
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        uint32_t want = cg_want(s, v), was = v->cg_quota;
        if (want == was)
            continue;
        if (was == CG_UNKNOWN && !want && !s->cg_dir[0]) {
            v->cg_quota = 0;
            continue;
        }
        v->cg_quota = want; /* also when it fails: tried once, said once */
        struct ipc_err err;
        if (want && !s->cg_dir[0] && cg_instance(s, &err, v->name) < 0) {
            if (!cg_failed)
                sup_warn("restart_cpu_max_pct: %s; a service restarting in a loop is not held to a quota", err.msg);
            cg_failed = true;
            continue;
        }
        char dir[sizeof(s->cg_dir) + SUP_SERVICE_MAX + 2];
        snprintf(dir, sizeof(dir), "%s/%s", s->cg_dir, v->name);
        bool own = v->m->cpu_max_pct != 0;
        int ret = !own && want ? cg_mkdir(dir, &err, v->name) : 0;
        if (ret == 0 && !own && want)
            ret = cg_weight(s, dir, v->m->nice, &err, v->name);
        if (ret == 0)
            ret = cg_quota(s, dir, want, &err, v->name);
        if (ret == -ENOENT)
            continue; /* no cgroup of its own, and none needed */
        if (ret < 0) {
            sup_warn("%s", err.msg);
            continue;
        }
        /* Without a limit of its own, it is in its cgroup just for the loop. */
        pid_t pids[2] = {v->pid, v->sb_pid};
        for (int k = 0; k < 2 && !own; k++)
            if (pids[k] > 0)
                cg_move(want ? dir : cg_home, pids[k], v->name);
        if (want && want != v->m->cpu_max_pct)
            sup_warn("%s: restarting in a loop: at most %u %% of a CPU until it is stable (restart_cpu_max_pct)",
                     v->name, want);
        else if (was != CG_UNKNOWN)
            sup_log("%s: stable again: %s", v->name, own ? "its own cpu_max_pct" : "out of its cgroup");
    }
}

void sup_cg_remove(struct sup *s)
{
    if (!s->cg_dir[0])
        return;
    char path[sizeof(s->cg_dir) + SUP_SERVICE_MAX + 2];
    for (int i = 0; i < s->nsvcs; i++) {
        snprintf(path, sizeof(path), "%s/%s", s->cg_dir, s->svcs[i].name);
        rmdir(path); /* ENOENT: it had no limit */
    }
    rmdir(s->cg_dir);
    /* The parent, unless another instance still has its directory there. */
    char *slash = strrchr(s->cg_dir, '/');
    if (slash) {
        *slash = '\0';
        rmdir(s->cg_dir);
    }
    s->cg_dir[0] = '\0';
    if (s->cg_mnt[0]) {
        umount2(s->cg_mnt, MNT_DETACH);
        rmdir(s->cg_mnt);
        s->cg_mnt[0] = '\0';
    }
}
