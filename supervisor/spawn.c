/* SPDX-License-Identifier: MIT */
/*
 * supervisor/spawn.c: start one service. fork, then in the child, one step
 * after the other (child_steps): join its cgroup, put the service's fds at
 * their fixed numbers and close every other fd, pin the CPU if asked, drop
 * the capability bounding set, PR_SET_NO_NEW_PRIVS, switch to the service's
 * unprivileged uid and gid (its own, uids.c), clear every capability with
 * libcap, install the kind's seccomp ceiling (ipc/sandbox.h), and exec the
 * binary from the O_PATH fd its trust check opened (trust.c), so the file
 * checked is the file run.
 * A child that fails before exec reports the step and errno through a
 * close-on-exec pipe, so the parent can say why instead of seeing an
 * anonymous exit 111.
 * The instance is the running one or the warm standby (spawn_kinds): the
 * same steps, recorded in the service's fields of that kind. Which binary
 * that is (the manifest's `binary`, else its kind's in the binaries'
 * directory) is decided here too (sup_svc_binary).
 *
 * A new instance must not take the CPU of the services that forward: on a
 * machine of two CPUs its exec, its mapping of the regions and its
 * initialisation would otherwise delay them by tens of milliseconds, more
 * than the queues in front of them hold. Once exec'd it is moved to
 * SCHED_IDLE, and raised to the service's own class (sched) only when it
 * serves: a standby at its promotion, just before its go (the handover is
 * all that runs at the path's priority), a new running instance once it is
 * ready. An idle process may get almost no CPU on a busy machine, so each
 * has a bound (sup_sched_tick) past which it is raised anyway.
 */
#include "supervisor/sup.h"
#include "supervisor/svclog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS(x) ((uint64_t)(x) * 1000000ull)
#define SUP_IDLE_FRESH_MS 200u    /* a new running instance: its own path is down until it is ready */
#define SUP_IDLE_STANDBY_MS 1000u /* a standby: the next death's restart waits on it */

/* What the child needs, copied before the fork. */
struct child {
    const struct sup_svc *v;
    int errfd;   /* the error pipe's write end: moved above the service's fds by child_fds */
    int binfd;   /* the binary, O_PATH: kept just above errfd by child_fds */
    int *src, n; /* src[i] becomes fd i */
    int cg_fd;   /* its cgroup's cgroup.procs, or -1 */
    int32_t cpu, nice;
    bool batch;
    const char *env_standby; /* NULL: not a standby */
    const char *env_binary;
    enum ipc_sandbox_profile profile;
};

/* Join the cgroup whose cgroup.procs is cg_fd, by writing our pid, with no
 * stdio in a forked child. First: nothing of the service runs outside its
 * limit. */
static int child_cgroup(struct child *c)
{
    if (c->cg_fd < 0)
        return 0;
    char buf[16];
    size_t i = sizeof(buf);
    for (unsigned pid = (unsigned)getpid(); pid || i == sizeof(buf); pid /= 10)
        buf[--i] = (char)('0' + pid % 10);
    if (write(c->cg_fd, buf + i, sizeof(buf) - i) < 0)
        return -1;
    close(c->cg_fd);
    return 0;
}

/* Move src[i] to fd i for every i with src[i] >= 0, close everything else
 * above 2 except the error pipe, which moves above the service's range. */
static int child_fds(struct child *c)
{
    int *src = c->src, n = c->n;
    /* First lift every source above the target range, so that no dup2 below
     * overwrites a source that is still to be placed. */
    int lift = n + 16;
    int e = fcntl(c->errfd, F_DUPFD_CLOEXEC, lift);
    int b = fcntl(c->binfd, F_DUPFD_CLOEXEC, lift);
    if (e < 0 || b < 0)
        return -1;
    c->errfd = e;
    for (int i = 0; i < n; i++) {
        if (src[i] < 0)
            continue;
        int t = fcntl(src[i], F_DUPFD, lift);
        if (t < 0)
            return -1;
        src[i] = t;
    }
    for (int i = 0; i < n; i++)
        if (src[i] >= 0 && dup2(src[i], i) < 0)
            return -1;
    /* The sources are placed: the binary's fd may take the slot above the
     * error pipe, whatever was there. */
    if (b != e + 1 && dup3(b, e + 1, O_CLOEXEC) < 0)
        return -1;
    c->binfd = e + 1;
    /* stdout is /dev/null; stderr, and stdin unless it is the log pipe's
     * second read end (svclog.h), were placed above or stay ours. */
    int devnull = open("/dev/null", O_RDWR);
    if (devnull < 0 || (src[0] < 0 && dup2(devnull, 0) < 0) || dup2(devnull, 1) < 0)
        return -1;
    /* Everything above the service's range goes, except the error pipe and
     * the binary, which are close-on-exec. */
    int top = n > 3 ? n : 3;
    for (int fd = top; fd < lift; fd++)
        close(fd);
    if (c->errfd > lift && syscall(SYS_close_range, (unsigned)lift, (unsigned)c->errfd - 1, 0) < 0)
        return -1;
    if (syscall(SYS_close_range, (unsigned)c->binfd + 1, ~0u, 0) < 0)
        return -1;
    /* A hole in the range (a service without a device) must be a closed fd,
     * not a leftover. */
    for (int i = 3; i < n; i++)
        if (src[i] < 0)
            close(i);
    return 0;
}

static int child_cpu(struct child *c)
{
    if (c->cpu < 0)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c->cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set);
}

/* SCHED_BATCH: a woken service waits for the running one to block rather
 * than preempt it, which saves a pair of switches when services that hand
 * packets to each other share a CPU. */
static int child_sched(struct child *c)
{
    struct sched_param sp = {.sched_priority = 0};
    return c->batch ? sched_setscheduler(0, SCHED_BATCH, &sp) : 0;
}

/* The class a service serves in (manifest key sched). */
static int sched_class(const struct sup_svc *v)
{
    return v->m->sched == SUP_SCHED_BATCH ? SCHED_BATCH : SCHED_OTHER;
}

/* Out of SCHED_IDLE needs CAP_SYS_NICE: without it (a supervisor run
 * unprivileged) nothing is lowered, since it could not be raised again. */
bool sup_sched_can_raise(void)
{
    static int known = -1;
    if (known < 0) {
        cap_t c = cap_get_proc();
        cap_flag_value_t on = CAP_CLEAR;
        known = c && cap_get_flag(c, CAP_SYS_NICE, CAP_EFFECTIVE, &on) == 0 && on == CAP_SET;
        if (c)
            cap_free(c);
    }
    return known == 1;
}

/* From the parent once @pid has exec'd: the supervisor waits on the exec
 * (the error pipe), so the steps before it are not slowed. It has one
 * thread then: its pid is all there is to move. */
static bool sched_lower(pid_t pid)
{
    struct sched_param sp = {.sched_priority = 0};
    return sup_sched_can_raise() && sched_setscheduler(pid, SCHED_IDLE, &sp) == 0;
}

/* Threads a service made while idle inherited the class: the kernel's
 * io_uring workers of a TAP driver, say. Each goes up with it. */
static void sched_raise_threads(pid_t pid, int cls)
{
    char path[40];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    struct sched_param sp = {.sched_priority = 0};
    for (struct dirent *e; d && (e = readdir(d));) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid > 0 && tid != pid)
            sched_setscheduler(tid, cls, &sp); /* gone meanwhile: nothing to raise */
    }
    if (d)
        closedir(d);
}

/* The nice value set at spawn is kept across both moves (the kernel keeps
 * a fair task's static priority). */
static void sched_raise_pid(struct sup_svc *v, pid_t pid, const char *what, const char *why)
{
    struct sched_param sp = {.sched_priority = 0};
    if (!sup_sched_can_raise())
        return;
    if (sched_setscheduler(pid, sched_class(v), &sp) < 0) {
        if (errno != ESRCH)
            sup_warn("%s: cannot raise %s pid %d out of SCHED_IDLE: %s", v->name, what, (int)pid, strerror(errno));
        return;
    }
    sched_raise_threads(pid, sched_class(v));
    if (why)
        sup_warn("%s: %s pid %d %s in SCHED_IDLE; raised to %s", v->name, what, (int)pid, why,
                 sched_class(v) == SCHED_BATCH ? "SCHED_BATCH" : "SCHED_OTHER");
}

void sup_sched_raise(struct sup_svc *v, const char *why)
{
    if (!v->idle || v->pid <= 0)
        return;
    v->idle = false;
    sched_raise_pid(v, v->pid, "instance", why);
}

void sup_sched_tick(struct sup *s, uint64_t now)
{
    for (int i = 0; i < s->nsvcs; i++) {
        struct sup_svc *v = &s->svcs[i];
        char why[64];
        if (v->idle && v->pid > 0 && now - v->started_ns >= MS(SUP_IDLE_FRESH_MS)) {
            snprintf(why, sizeof(why), "was not ready within %u ms", SUP_IDLE_FRESH_MS);
            sup_sched_raise(v, why);
        }
        /* An upgrade's standby: raised in time for it to park before the
         * upgrade gives up on it. */
        uint32_t bound = v->upg.phase == SUP_UPG_STANDBY ? v->m->upgrade_timeout_ms / 2 : SUP_IDLE_STANDBY_MS;
        if (v->sb_idle && v->sb_pid > 0 && !v->sb_parked && now - v->sb_spawned_ns >= MS(bound)) {
            snprintf(why, sizeof(why), "was not parked within %u ms", bound);
            v->sb_idle = false;
            sched_raise_pid(v, v->sb_pid, "standby", why);
        }
    }
}

/* Before the capabilities go: a negative value needs CAP_SYS_NICE. */
static int child_nice(struct child *c)
{
    return c->nice ? setpriority(PRIO_PROCESS, 0, c->nice) : 0;
}

/* While still root: empty the bounding set so nothing exec'd later can
 * regain a capability, even through a setuid binary. */
static int child_bounding(struct child *c)
{
    (void)c;
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            return -1;
    return 0;
}

static int child_nnp(struct child *c)
{
    (void)c;
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

static int child_groups(struct child *c)
{
    (void)c;
    return setgroups(0, NULL);
}

static int child_gid(struct child *c)
{
    return setresgid(c->v->gid, c->v->gid, c->v->gid);
}

static int child_uid(struct child *c)
{
    return setresuid(c->v->uid, c->v->uid, c->v->uid);
}

/* setresuid() away from root already cleared the permitted and effective
 * sets; clear all of them explicitly anyway, ambient included, so the
 * result does not rest on a securebits default. */
static int child_caps(struct child *c)
{
    (void)c;
    cap_t none = cap_init();
    if (!none || cap_set_proc(none) < 0)
        return -1;
    cap_free(none);
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -1;
    return 0;
}

/* Last before the exec, with no privilege left: a binary that never calls
 * ipc_svc_open still runs under its kind's ceiling. No stdio from here: a
 * failure goes through the error pipe (write, exit_group: on every list). */
static int child_ceiling(struct child *c)
{
    struct ipc_err err;
    int ret = ipc_sandbox_enter(c->profile, IPC_SANDBOX_CEILING, &err);
    if (ret < 0)
        errno = -ret;
    return ret < 0 ? -1 : 0;
}

/* No PR_SET_PDEATHSIG: a service outlives the supervisor, forwarding on,
 * until a new one adopts it or orphan_grace_ms runs out (its own
 * ipc_svc_orphan_check). Returns only if the exec failed. The binary's path
 * is in the environment: exec'd from an fd, AT_EXECFN is /dev/fd/N, and a
 * test stand-in takes its mode from its name (tests/svc/nulldrv.c). */
static int child_exec(struct child *c)
{
    char *const argv[] = {(char *)c->v->name, NULL};
    char *const envp[] = {"PATH=/usr/bin:/bin", (char *)c->env_binary, (char *)c->env_standby, NULL};
    syscall(SYS_execveat, c->binfd, "", argv, envp, AT_EMPTY_PATH);
    return -1;
}

/* In order; a step returns 0, or -1 with errno set. Its index + 1 is what
 * the error pipe carries (0: none). */
static const struct child_step {
    const char *what;
    int (*run)(struct child *);
} child_steps[] = {
    {"joining its cgroup (cpu_max_pct)", child_cgroup},
    {"placing fds", child_fds},
    {"setting CPU affinity", child_cpu},
    {"setting SCHED_BATCH", child_sched},
    {"setting its nice value", child_nice},
    {"dropping the bounding set", child_bounding},
    {"PR_SET_NO_NEW_PRIVS", child_nnp},
    {"setgroups", child_groups},
    {"setgid", child_gid},
    {"setuid", child_uid},
    {"clearing capabilities", child_caps},
    {"installing its seccomp ceiling", child_ceiling},
    {"exec", child_exec},
};
#define NCHILD_STEPS (int)(sizeof(child_steps) / sizeof(child_steps[0]))

static _Noreturn void child_run(struct child *c)
{
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    /* exec resets handled signals but keeps ignored ones (ours, or the
     * shell's that started us) and the mask. */
    for (int sig = 1; sig < SIGRTMIN; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    for (int i = 0; i < NCHILD_STEPS; i++) {
        if (child_steps[i].run(c) == 0)
            continue;
        int msg[2] = {i + 1, errno};
        ssize_t r = write(c->errfd, msg, sizeof(msg));
        (void)r;
        break;
    }
    _exit(SUP_EXIT_SYSTEM);
}

/* Where an instance of each kind is kept in struct sup_svc: the running one
 * and the warm standby. */
static const struct spawn_kind {
    size_t pid, pidfd, notify_fd, binary, build, started;
} spawn_kinds[2] = {
    {offsetof(struct sup_svc, pid), offsetof(struct sup_svc, pidfd), offsetof(struct sup_svc, notify_fd),
     offsetof(struct sup_svc, run_binary), offsetof(struct sup_svc, run_build), offsetof(struct sup_svc, run_started)},
    {offsetof(struct sup_svc, sb_pid), offsetof(struct sup_svc, sb_pidfd), offsetof(struct sup_svc, sb_notify_fd),
     offsetof(struct sup_svc, sb_binary), offsetof(struct sup_svc, sb_build), offsetof(struct sup_svc, sb_started)},
};
#define KF(v, k, f, type) ((type *)((char *)(v) + spawn_kinds[k].f))

/* An instance, pid @pid exec'd from @binary (build id @build) at @started,
 * recorded as @v's of kind @k. */
static void kind_set(struct sup_svc *v, int k, pid_t pid, int pidfd, int notify_fd, const char *binary,
                     const char *build, time_t started)
{
    *KF(v, k, pid, pid_t) = pid;
    *KF(v, k, pidfd, int) = pidfd;
    *KF(v, k, notify_fd, int) = notify_fd;
    snprintf(KF(v, k, binary, char), sizeof(v->run_binary), "%s", binary);
    snprintf(KF(v, k, build, char), sizeof(v->run_build), "%s", build);
    *KF(v, k, started, time_t) = started;
}

/* A spawn that failed before its fork: close what it made (go[0] is -1 if
 * it is not a standby's; @fd, the cgroup's or the binary's, may be -1). */
static void close_pipes(const int notify[2], const int errp[2], const int go[2], int fd)
{
    const int fds[] = {notify[0], notify[1], errp[0], errp[1], go[0], go[1], fd};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int sup_spawn(struct sup *s, struct sup_svc *v, bool standby, struct ipc_err *err)
{
    sup_shared_repair(s, v);
    /* Walked again at every exec: a directory on the path may have changed
     * hands since the binary was accepted. */
    int binfd;
    struct ipc_err terr;
    int ret = sup_trust_open(v->binary, &binfd, &terr);
    if (ret < 0)
        return ipc_errf(err, ret, "%s: refusing binary %s", v->name, terr.msg);
    int notify[2], errp[2], go[2] = {-1, -1};
    if (pipe2(notify, O_CLOEXEC) < 0) {
        int e = errno;
        close(binfd);
        return ipc_errf(err, -e, "%s: pipe: %s", v->name, strerror(e));
    }
    if (pipe2(errp, O_CLOEXEC) < 0 || (standby && pipe2(go, O_CLOEXEC) < 0)) {
        int e = errno;
        close(binfd);
        close(notify[0]);
        close(notify[1]);
        if (go[0] >= 0) {
            close(errp[0]);
            close(errp[1]);
        }
        return ipc_errf(err, -e, "%s: pipe: %s", v->name, strerror(e));
    }
    int src[SUP_MAX_FDS];
    char env_standby[64] = "", env_binary[sizeof(v->binary) + 32];
    snprintf(env_binary, sizeof(env_binary), "%s=%s", IPC_SVC_BINARY_ENV, v->binary);
    struct child c = {.v = v, .errfd = errp[1], .binfd = binfd, .src = src, .cpu = v->m->cpu, .nice = v->m->nice,
                      .batch = v->m->sched == SUP_SCHED_BATCH, .env_binary = env_binary,
                      .profile = ipc_sandbox_of_kind(v->kind)};
    c.n = sup_svc_fds(s, v, notify[1], src, SUP_MAX_FDS);
    if (standby) {
        snprintf(env_standby, sizeof(env_standby), "%s=%d", IPC_SVC_STANDBY_ENV, c.n);
        c.env_standby = env_standby;
        src[c.n++] = go[0];
    }
    c.cg_fd = sup_cg_enter_fd(s, v, err);
    if (c.cg_fd < -1) {
        close_pipes(notify, errp, go, binfd);
        return c.cg_fd;
    }

    if (!standby)
        ipc_st_rlx(&v->stats->state, IPC_SVC_STARTING);
    /* Its stderr is a pipe the supervisor reads (svclog.c). */
    int log_r = sup_svclog_pipe(&src[2], &src[0]);
    pid_t pid = fork();
    if (pid == 0)
        child_run(&c);
    for (int i = 0; i <= 2; i += 2)
        if (src[i] >= 0)
            close(src[i]);
    if (pid > 0 && log_r >= 0)
        sup_svclog_open(s, v->name, pid, log_r);
    else if (log_r >= 0)
        close(log_r);
    if (pid > 0 && c.cg_fd >= 0)
        close(c.cg_fd);
    if (pid < 0) {
        int e = errno;
        close_pipes(notify, errp, go, c.cg_fd);
        close(binfd);
        return ipc_errf(err, -e, "%s: fork: %s", v->name, strerror(e));
    }
    /* The build id of the file the child exec'd, not of what the path
     * names by now. */
    char build[SUP_BUILD_ID_MAX], self[32];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", binfd);
    sup_build_id(self, build, sizeof(build));
    close(binfd);
    close(notify[1]);
    close(errp[1]);
    if (standby)
        close(go[0]);
    int msg[2];
    ssize_t r = read(errp[0], msg, sizeof(msg));
    close(errp[0]);
    if (r == (ssize_t)sizeof(msg)) {
        close(notify[0]);
        if (standby)
            close(go[1]);
        int st;
        waitpid(pid, &st, 0);
        bool known = msg[0] >= 1 && msg[0] <= NCHILD_STEPS;
        const char *what = known ? child_steps[msg[0] - 1].what : "?";
        return ipc_errf(err, -msg[1], "%s: %s %s: %s", v->name, what,
                        known && child_steps[msg[0] - 1].run == child_exec ? v->binary : "", strerror(msg[1]));
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        int e = errno;
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        close(notify[0]);
        if (standby)
            close(go[1]);
        return ipc_errf(err, -e, "%s: pidfd_open: %s", v->name, strerror(e));
    }
    bool idle = sched_lower(pid);
    kind_set(v, standby, pid, pidfd, notify[0], v->binary, build, time(NULL));
    if (standby) {
        v->sb_go_fd = go[1];
        v->sb_idle = idle;
        v->sb_spawned_ns = sup_now_ns();
    } else {
        v->idle = idle;
    }
    return 0;
}

void sup_standby_spawn(struct sup *s, struct sup_svc *v)
{
    struct ipc_err err;
    if (v->sb_pid > 0 || s->shutting_down)
        return;
    if (sup_spawn(s, v, true, &err) < 0) {
        sup_warn("%s: no standby: %s", v->name, err.msg);
        v->sb_retry_ns = sup_now_ns() + 1000000000ull;
        return;
    }
    if (sup_watch_standby(s, v) < 0)
        sup_err("%s: cannot watch standby pid %d", v->name, (int)v->sb_pid);
}

/*
 * The scheduler state of @pid (/proc/PID/stat's third field), '?' if it is
 * gone. The command name in parentheses may itself hold ')' or spaces: the
 * state follows the last ')'.
 */
char sup_proc_state(pid_t pid)
{
    char path[32], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return '?';
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return '?';
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] ? rp[2] : '?';
}

/* Promote the standby: it becomes the running instance. */
bool sup_standby_activate(struct sup *s, struct sup_svc *v)
{
    if (v->sb_pid <= 0)
        return false;
    /* A standby someone stopped (SIGSTOP) or is tracing would take the go
     * and never report ready: the port would be down until the ready
     * timeout. Start afresh instead, at the cost of an exec. */
    char st = sup_proc_state(v->sb_pid);
    if (st == 'T' || st == 't' || st == 'Z' || st == 'X' || st == '?') {
        sup_warn("%s: standby pid %d is %s; starting a new instance instead", v->name, (int)v->sb_pid,
                 st == 'T' ? "stopped" : st == 't' ? "being traced" : "gone");
        sup_standby_dismiss(s, v);
        return false;
    }
    /* The handover runs at the path's priority. */
    if (v->sb_idle)
        sched_raise_pid(v, v->sb_pid, "standby", NULL);
    v->sb_idle = v->idle = false;
    ssize_t r = write(v->sb_go_fd, "g", 1);
    close(v->sb_go_fd);
    v->sb_go_fd = -1;
    if (r != 1) {
        sup_standby_dismiss(s, v);
        return false;
    }
    /* It runs from now; its exec was earlier. */
    kind_set(v, 0, v->sb_pid, v->sb_pidfd, v->sb_notify_fd, v->sb_binary, v->sb_build, time(NULL));
    v->sb_pid = 0;
    v->sb_pidfd = -1;
    v->sb_notify_fd = -1;
    v->sb_parked = false;
    return true;
}

/* Kill the standby and forget it (shutdown, or it is broken). */
void sup_standby_dismiss(struct sup *s, struct sup_svc *v)
{
    (void)s;
    if (v->sb_pid <= 0)
        return;
    if (v->sb_pidfd >= 0) {
        /* Its exit runs in its own context, and we wait for it: an idle
         * one on a busy machine would hold the supervisor here. */
        if (v->sb_idle)
            sched_raise_pid(v, v->sb_pid, "standby", NULL);
        syscall(SYS_pidfd_send_signal, v->sb_pidfd, SIGKILL, NULL, 0);
        siginfo_t si;
        waitid((idtype_t)P_PIDFD, (id_t)v->sb_pidfd, &si, WEXITED);
        close(v->sb_pidfd);
    }
    if (v->sb_notify_fd >= 0)
        close(v->sb_notify_fd);
    if (v->sb_go_fd >= 0)
        close(v->sb_go_fd);
    v->sb_pid = 0;
    v->sb_pidfd = v->sb_notify_fd = v->sb_go_fd = -1;
    v->sb_parked = v->sb_idle = false;
}

/* ---- which binary a service runs ---- */

static const char *kind_binary(const struct sup *s, const struct sup_service *ms)
{
    switch (ms->kind) {
    case SUP_SVC_ROUTER:
        return "rr-router";
    case SUP_SVC_SHAPER:
        return "rr-shaper";
    case SUP_SVC_ROUTES:
        return "rr-routes";
    case SUP_SVC_FILTER:
        return "rr-filter";
    case SUP_SVC_DRIVER:
        return s->m.ports[ms->port].driver == SUP_DRIVER_TAP ? "rr-tap" : "rr-afxdp";
    case SUP_SVC_CP:
        return "rr-tap";
    }
    return "rr-unknown";
}

void sup_svc_binary(const struct sup *s, struct sup_svc *v)
{
    const char *bin = v->m->binary[0] ? v->m->binary : kind_binary(s, v->m);
    if (bin[0] == '/')
        snprintf(v->binary, sizeof(v->binary), "%s", bin);
    else
        snprintf(v->binary, sizeof(v->binary), "%s/%s", s->bindir, bin);
}

void sup_find_bindir(struct sup *s)
{
    const char *env = getenv("RINGROUTER_BINDIR");
    if (env && env[0]) {
        snprintf(s->bindir, sizeof(s->bindir), "%s", env);
        return;
    }
    char exe[256];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        snprintf(s->bindir, sizeof(s->bindir), ".");
        return;
    }
    exe[n] = 0;
    snprintf(s->bindir, sizeof(s->bindir), "%s", dirname(exe));
}
