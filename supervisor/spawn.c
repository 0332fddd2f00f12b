/* SPDX-License-Identifier: MIT */
/*
 * supervisor/spawn.c: start one service. fork, then in the child: put the
 * service's fds at their fixed numbers and close every other fd, pin the CPU
 * if asked, drop the capability bounding set, PR_SET_NO_NEW_PRIVS, switch to
 * the service's unprivileged uid and gid (its own, uids.c), clear every
 * capability with libcap, and exec.
 * A child that fails before exec reports errno through a close-on-exec pipe,
 * so the parent can say why instead of seeing an anonymous exit 111.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum child_step {
    STEP_CGROUP = 1,
    STEP_FDS,
    STEP_CPU,
    STEP_SCHED,
    STEP_NICE,
    STEP_BOUNDING,
    STEP_NNP,
    STEP_GROUPS,
    STEP_GID,
    STEP_UID,
    STEP_CAPS,
    STEP_EXEC
};

static const char *step_name(int step)
{
    static const char *const names[] = {"?", "joining its cgroup (cpu_max_pct)", "placing fds", "setting CPU affinity", "setting SCHED_BATCH",
                                        "setting its nice value", "dropping the bounding set",
                                        "PR_SET_NO_NEW_PRIVS", "setgroups", "setgid", "setuid",
                                        "clearing capabilities", "exec"};
    return step > 0 && step <= STEP_EXEC ? names[step] : names[0];
}

static void child_fail(int errfd, int step)
{
    int msg[2] = {step, errno};
    ssize_t r = write(errfd, msg, sizeof(msg));
    (void)r;
    _exit(SUP_EXIT_SYSTEM);
}

/* Join the cgroup whose cgroup.procs is @fd, by writing our pid, with no
 * stdio in a forked child. */
static void join_cgroup_or_fail(int fd, int errfd)
{
    char buf[16];
    size_t i = sizeof(buf);
    for (unsigned pid = (unsigned)getpid(); pid || i == sizeof(buf); pid /= 10)
        buf[--i] = (char)('0' + pid % 10);
    if (write(fd, buf + i, sizeof(buf) - i) < 0)
        child_fail(errfd, STEP_CGROUP);
    close(fd);
}

static void drop_caps_or_fail(int errfd)
{
    /* While still root: empty the bounding set so nothing exec'd later can
     * regain a capability, even through a setuid binary. */
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            child_fail(errfd, STEP_BOUNDING);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        child_fail(errfd, STEP_NNP);
}

static void become_user_or_fail(int errfd, uid_t uid, gid_t gid)
{
    if (setgroups(0, NULL) < 0)
        child_fail(errfd, STEP_GROUPS);
    if (setresgid(gid, gid, gid) < 0)
        child_fail(errfd, STEP_GID);
    if (setresuid(uid, uid, uid) < 0)
        child_fail(errfd, STEP_UID);
    /* setresuid() away from root already cleared the permitted and effective
     * sets; clear all of them explicitly anyway, ambient included, so the
     * result does not rest on a securebits default. */
    cap_t none = cap_init();
    if (!none || cap_set_proc(none) < 0)
        child_fail(errfd, STEP_CAPS);
    cap_free(none);
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        child_fail(errfd, STEP_CAPS);
}

/* Move @src[i] to fd i for every i with src[i] >= 0, close everything else
 * above 2 except @errfd, which moves above the service's range. */
static void place_fds_or_fail(int *src, int n, int *errfd)
{
    /* First lift every source above the target range, so that no dup2 below
     * overwrites a source that is still to be placed. */
    int lift = n + 16;
    int e = fcntl(*errfd, F_DUPFD_CLOEXEC, lift);
    if (e < 0)
        child_fail(*errfd, STEP_FDS);
    *errfd = e;
    for (int i = 0; i < n; i++) {
        if (src[i] < 0)
            continue;
        int t = fcntl(src[i], F_DUPFD, lift);
        if (t < 0)
            child_fail(*errfd, STEP_FDS);
        src[i] = t;
    }
    for (int i = 0; i < n; i++) {
        if (src[i] < 0)
            continue;
        if (dup2(src[i], i) < 0)
            child_fail(*errfd, STEP_FDS);
    }
    int devnull = open("/dev/null", O_RDWR);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
        child_fail(*errfd, STEP_FDS);
    /* Everything above the service's range goes, except the error pipe,
     * which is close-on-exec. */
    int top = n > 3 ? n : 3;
    for (int fd = top; fd < lift; fd++)
        close(fd);
    if (*errfd > lift && syscall(SYS_close_range, (unsigned)lift, (unsigned)*errfd - 1, 0) < 0)
        child_fail(*errfd, STEP_FDS);
    if (syscall(SYS_close_range, (unsigned)*errfd + 1, ~0u, 0) < 0)
        child_fail(*errfd, STEP_FDS);
    /* A hole in the range (a service without a device) must be a closed fd,
     * not a leftover. */
    for (int i = 3; i < n; i++)
        if (src[i] < 0)
            close(i);
}

/* A spawn that failed before its fork: close what it made (go[0] is -1 if
 * it is not a standby's). */
static void close_pipes(const int notify[2], const int errp[2], const int go[2], int cg_fd)
{
    const int fds[] = {notify[0], notify[1], errp[0], errp[1], go[0], go[1], cg_fd};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int sup_spawn(struct sup *s, struct sup_svc *v, bool standby, struct ipc_err *err)
{
    sup_shared_repair(s, v);
    int notify[2], errp[2], go[2] = {-1, -1};
    if (pipe2(notify, O_CLOEXEC) < 0)
        return ipc_errf(err, -errno, "%s: pipe: %s", v->name, strerror(errno));
    if (pipe2(errp, O_CLOEXEC) < 0 || (standby && pipe2(go, O_CLOEXEC) < 0)) {
        int e = errno;
        close(notify[0]);
        close(notify[1]);
        if (go[0] >= 0) {
            close(errp[0]);
            close(errp[1]);
        }
        return ipc_errf(err, -e, "%s: pipe: %s", v->name, strerror(e));
    }
    int src[SUP_MAX_FDS];
    int n = sup_svc_fds(s, v, notify[1], src, SUP_MAX_FDS);
    char env_standby[64] = "";
    if (standby) {
        snprintf(env_standby, sizeof(env_standby), "%s=%d", IPC_SVC_STANDBY_ENV, n);
        src[n++] = go[0];
    }
    int32_t cpu = v->m->cpu, nice = v->m->nice;
    bool batch = v->m->sched == SUP_SCHED_BATCH;
    int cg_fd = sup_cg_enter_fd(s, v, err);
    if (cg_fd < -1) {
        close_pipes(notify, errp, go, -1);
        return cg_fd;
    }

    if (!standby)
        ipc_st_rlx(&v->stats->state, IPC_SVC_STARTING);
    pid_t pid = fork();
    if (pid > 0 && cg_fd >= 0)
        close(cg_fd);
    if (pid < 0) {
        int e = errno;
        close_pipes(notify, errp, go, cg_fd);
        return ipc_errf(err, -e, "%s: fork: %s", v->name, strerror(e));
    }
    if (pid == 0) {
        int errfd = errp[1];
        sigset_t all;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        /* exec resets handled signals but keeps ignored ones (ours, or the
         * shell's that started us) and the mask. */
        for (int sig = 1; sig < SIGRTMIN; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                signal(sig, SIG_DFL);
        /* First: nothing of the service runs outside its limit. */
        if (cg_fd >= 0)
            join_cgroup_or_fail(cg_fd, errfd);
        place_fds_or_fail(src, n, &errfd);
        if (cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            if (sched_setaffinity(0, sizeof(set), &set) < 0)
                child_fail(errfd, STEP_CPU);
        }
        /* SCHED_BATCH: a woken service waits for the running one to block
         * rather than preempt it, which saves a pair of switches when
         * services that hand packets to each other share a CPU. */
        if (batch) {
            struct sched_param sp = {.sched_priority = 0};
            if (sched_setscheduler(0, SCHED_BATCH, &sp) < 0)
                child_fail(errfd, STEP_SCHED);
        }
        /* Before the capabilities go: a negative value needs CAP_SYS_NICE. */
        if (nice && setpriority(PRIO_PROCESS, 0, nice) < 0)
            child_fail(errfd, STEP_NICE);
        drop_caps_or_fail(errfd);
        become_user_or_fail(errfd, v->uid, v->gid);
        /* No PR_SET_PDEATHSIG: a service outlives the supervisor, forwarding
         * on, until a new one adopts it or orphan_grace_ms runs out (its
         * own ipc_svc_orphan_check). */
        char *const argv[] = {v->name, NULL};
        char *const envp[] = {"PATH=/usr/bin:/bin", standby ? env_standby : NULL, NULL};
        execve(v->binary, argv, envp);
        child_fail(errfd, STEP_EXEC);
    }
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
        return ipc_errf(err, -msg[1], "%s: %s %s: %s", v->name, step_name(msg[0]),
                        msg[0] == STEP_EXEC ? v->binary : "", strerror(msg[1]));
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
    if (standby) {
        v->sb_pid = pid;
        v->sb_pidfd = pidfd;
        v->sb_notify_fd = notify[0];
        v->sb_go_fd = go[1];
        snprintf(v->sb_binary, sizeof(v->sb_binary), "%s", v->binary);
        sup_build_id(v->binary, v->sb_build, sizeof(v->sb_build));
        v->sb_started = time(NULL);
    } else {
        v->pid = pid;
        v->pidfd = pidfd;
        v->notify_fd = notify[0];
        snprintf(v->run_binary, sizeof(v->run_binary), "%s", v->binary);
        sup_build_id(v->binary, v->run_build, sizeof(v->run_build));
        v->run_started = time(NULL);
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

/* Promote the standby: it becomes the running instance. */
/*
 * The scheduler state of @pid (/proc/PID/stat's third field), '?' if it is
 * gone. The command name in parentheses may itself hold ')' or spaces: the
 * state follows the last ')'.
 */
static char proc_state(pid_t pid)
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

bool sup_standby_activate(struct sup *s, struct sup_svc *v)
{
    if (v->sb_pid <= 0)
        return false;
    /* A standby someone stopped (SIGSTOP) or is tracing would take the go
     * and never report ready: the port would be down until the ready
     * timeout. Start afresh instead, at the cost of an exec. */
    char st = proc_state(v->sb_pid);
    if (st == 'T' || st == 't' || st == 'Z' || st == 'X' || st == '?') {
        sup_warn("%s: standby pid %d is %s; starting a new instance instead", v->name, (int)v->sb_pid,
                 st == 'T' ? "stopped" : st == 't' ? "being traced" : "gone");
        sup_standby_dismiss(s, v);
        return false;
    }
    ssize_t r = write(v->sb_go_fd, "g", 1);
    close(v->sb_go_fd);
    v->sb_go_fd = -1;
    if (r != 1) {
        sup_standby_dismiss(s, v);
        return false;
    }
    v->pid = v->sb_pid;
    v->pidfd = v->sb_pidfd;
    v->notify_fd = v->sb_notify_fd;
    memcpy(v->run_binary, v->sb_binary, sizeof(v->run_binary));
    memcpy(v->run_build, v->sb_build, sizeof(v->run_build));
    v->run_started = time(NULL); /* it runs from now; its exec was earlier */
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
    v->sb_parked = false;
}
