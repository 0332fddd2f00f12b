/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sandbox.c: the services' seccomp filters (ipc/sandbox.c),
 * each case in a forked child that installs a profile's stages and makes
 * one call: what the loop needs passes (write, read, the wait, the exit);
 * a call off the list kills the child with SIGSYS (socket, openat, execve,
 * ptrace); the argument checks hold (mmap with PROT_EXEC, tgkill of another
 * process or with another signal, getsockopt outside SOL_XDP), while
 * abort() still ends in SIGABRT; START-only calls die under RUN; x32 and
 * i386 (int 0x80) calls die whatever their number. The supervisor's
 * ceiling alone lets a dynamically linked binary be exec'd (execveat from
 * an O_PATH fd) and load, and kills socket, fork, opens for writing,
 * execve, ptrace, signals to others and any prctl but PR_SET_DUMPABLE 0. Plain build only: a
 * sanitizer or --no-sandbox build installs no filter (ipc/sandbox.h), and
 * the run skips (77), as it does where int 0x80 cannot be tried.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/sandbox.h"
#include "ipc/wake.h"

typedef void (*t_action)(void);

/* Why a part of the filter went untried: the whole run then skips (exit 77),
 * so that CI's no-skip rule sees it, rather than passing on what it did try. */
static const char *t_skipped;

enum { T_CEIL = 1, T_START = 2, T_RUN = 4 };

/* Fork; in the child install @profile's stages in @stages (T_*), in the
 * order the supervisor and the service do, then do @act and exit 0.
 * Returns the child's wait status. */
static int t_child_at(enum ipc_sandbox_profile profile, int stages, t_action act)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct ipc_err err;
        if ((stages & T_CEIL) && ipc_sandbox_enter(profile, IPC_SANDBOX_CEILING, &err) < 0)
            _exit(99);
        if ((stages & T_START) && ipc_sandbox_enter(profile, IPC_SANDBOX_START, &err) < 0)
            _exit(100);
        if ((stages & T_RUN) && ipc_sandbox_enter(profile, IPC_SANDBOX_RUN, &err) < 0)
            _exit(101);
        act();
        syscall(SYS_exit_group, 0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

/* START, and RUN too if @run. */
static int t_child(enum ipc_sandbox_profile profile, bool run, t_action act)
{
    return t_child_at(profile, T_START | (run ? T_RUN : 0), act);
}

static void t_expect_ok(enum ipc_sandbox_profile profile, bool run, t_action act, const char *what)
{
    int st = t_child(profile, run, act);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%s (%s, %s): status %#x, expected exit 0", what, ipc_sandbox_name(profile), run ? "run" : "start",
                 st);
}

static void t_expect_sig(enum ipc_sandbox_profile profile, bool run, t_action act, int sig, const char *what)
{
    int st = t_child(profile, run, act);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != sig)
        fail_msg("%s (%s, %s): status %#x, expected death by signal %d", what, ipc_sandbox_name(profile),
                 run ? "run" : "start", st, sig);
}

/* ---- the actions, each run in a filtered child ---- */

static void a_none(void)
{
}

/* An eventfd made before the filter, as the supervisor makes a service's. */
static int t_efd = -1;

/* What ipc_svc_wait and ipc_wake_flush do, the clock's fallback, a log line. */
static void a_wake(void)
{
    uint64_t one = 1, v;
    if (write(t_efd, &one, sizeof(one)) != sizeof(one))
        _exit(2);
    /* The library's own waits, not a poll of ours: what they call is what
     * the filter must let through. */
    if (ipc_wake_block(t_efd, 1000) != 1)
        _exit(3);
    if (write(t_efd, &one, sizeof(one)) != sizeof(one) || ipc_wake_block_us(t_efd, 50) != 1)
        _exit(4);
    if (ipc_wake_block_us(t_efd, 50) != 0 || read(t_efd, &v, sizeof(v)) >= 0)
        _exit(7); /* nothing written: a timeout, and the eventfd is reset */
    struct timespec ts;
    if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) < 0)
        _exit(5);
    if (write(2, "", 0) < 0)
        _exit(6);
}

static void a_memory(void)
{
    void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        _exit(2);
    memset(m, 1, 1 << 20);
    if (munmap(m, 1 << 20) < 0)
        _exit(3);
    void *big = malloc(8 << 20); /* mmap'd by malloc */
    void *small = malloc(100);   /* the heap: brk */
    if (!big || !small)
        _exit(4);
    free(big);
    free(small);
}

static void a_socket(void)
{
    socket(AF_INET, SOCK_DGRAM, 0);
}

static void a_openat(void)
{
    open("/etc/passwd", O_RDONLY);
}

static void a_execve(void)
{
    char *const argv[] = {"/bin/true", NULL};
    execve("/bin/true", argv, argv + 1);
}

static void a_ptrace(void)
{
    syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0);
}

static void a_mmap_exec(void)
{
    mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/* ---- under the ceiling alone: what a binary that skipped the set-up may do ---- */

static void a_loader(void)
{
    int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
    char b[64];
    if (fd < 0 || pread(fd, b, sizeof(b), 0) < 0 || close(fd) < 0)
        _exit(2);
    void *m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, 4096, PROT_READ) < 0)
        _exit(3);
    if (syscall(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        _exit(4);
}

/* The supervisor's exec: this test binary again, dynamically linked, from an
 * O_PATH fd; main() exits at once under T_REEXEC. */
#define T_REEXEC "--exit-at-once"
static void a_execveat(void)
{
    int fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
    char *const argv[] = {"test_sandbox", T_REEXEC, NULL};
    syscall(SYS_execveat, fd, "", argv, argv + 2, AT_EMPTY_PATH);
    _exit(2);
}

static void a_fork(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
}

static void a_open_write(void)
{
    open("/dev/null", O_WRONLY);
}

static void a_open_creat(void)
{
    open("/nonexistent-dir/x", O_RDONLY | O_CREAT, 0600);
}

static void a_kill_parent(void)
{
    kill(getppid(), 0);
}

static void a_dump_on(void)
{
    syscall(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0);
}

static void a_prctl_other(void)
{
    syscall(SYS_prctl, PR_SET_NAME, (unsigned long)"x", 0, 0, 0);
}

static void a_abort(void)
{
    abort();
}

static void a_tgkill_other(void)
{
    syscall(SYS_tgkill, getppid(), getppid(), SIGABRT);
}

static void a_tgkill_self_kill(void)
{
    syscall(SYS_tgkill, getpid(), getpid(), SIGTERM);
}

static void a_fstat(void)
{
    struct stat st;
    if (fstat(2, &st) < 0)
        _exit(2);
}

static void a_fcntl(void)
{
    if (fcntl(2, F_GETFL) < 0)
        _exit(2);
}

static void a_io_uring_setup(void)
{
    struct {
        uint32_t w[30];
    } params;
    memset(&params, 0, sizeof(params));
    long fd = syscall(__NR_io_uring_setup, 4, &params);
    if (fd < 0 && errno != ENOSYS && errno != EPERM)
        _exit(2);
}

static void a_getsockopt_socket_level(void)
{
    int v;
    socklen_t l = sizeof(v);
    getsockopt(t_efd, SOL_SOCKET, SO_TYPE, &v, &l);
}

static void a_getsockopt_xdp(void)
{
    int v;
    socklen_t l = sizeof(v);
    getsockopt(t_efd, 283 /* SOL_XDP */, 7 /* XDP_STATISTICS */, &v, &l); /* ENOTSOCK: allowed, failing */
}

static void a_sched_yield(void)
{
    sched_yield();
}

#if defined(__x86_64__)
static void a_x32(void)
{
    syscall(0x40000000 | __NR_getpid);
}

static long t_int80_getpid(void)
{
    long r;
    __asm__ __volatile__("int $0x80" : "=a"(r) : "a"(20L /* i386 getpid */) : "memory");
    return r;
}

static void a_i386(void)
{
    t_int80_getpid();
}
#endif

/* ---- the tests ---- */

static void test_sandbox_loop_calls_pass(void **state)
{
    (void)state;
    t_efd = eventfd(0, EFD_NONBLOCK);
    assert_true(t_efd >= 0);
    for (int p = IPC_SANDBOX_ROUTER; p < IPC_SANDBOX_NPROFILES; p++) {
        t_expect_ok((enum ipc_sandbox_profile)p, false, a_none, "exit_group");
        t_expect_ok((enum ipc_sandbox_profile)p, true, a_none, "exit_group");
        t_expect_ok((enum ipc_sandbox_profile)p, true, a_memory, "mmap, munmap, malloc, free");
        if (p != IPC_SANDBOX_TAP && p != IPC_SANDBOX_AFXDP)
            t_expect_ok((enum ipc_sandbox_profile)p, true, a_wake, "eventfd write, ppoll, read; clock_gettime");
    }
    t_expect_ok(IPC_SANDBOX_AFXDP, true, a_getsockopt_xdp, "getsockopt(SOL_XDP)");
    t_expect_ok(IPC_SANDBOX_AFXDP, true, a_sched_yield, "sched_yield");
    close(t_efd);
}

static void test_sandbox_escapes_die(void **state)
{
    (void)state;
    static const t_action act[] = {a_socket,    a_openat,       a_execve,          a_ptrace,
                                   a_mmap_exec, a_tgkill_other, a_tgkill_self_kill};
    static const char *const what[] = {
        "socket", "openat", "execve", "ptrace", "mmap(PROT_EXEC)", "tgkill(parent, SIGABRT)", "tgkill(self, SIGTERM)"};
    for (int p = IPC_SANDBOX_ROUTER; p < IPC_SANDBOX_NPROFILES; p++)
        for (unsigned i = 0; i < sizeof(act) / sizeof(act[0]); i++) {
            t_expect_sig((enum ipc_sandbox_profile)p, false, act[i], SIGSYS, what[i]);
            t_expect_sig((enum ipc_sandbox_profile)p, true, act[i], SIGSYS, what[i]);
        }
    t_efd = eventfd(0, EFD_NONBLOCK);
    t_expect_sig(IPC_SANDBOX_AFXDP, true, a_getsockopt_socket_level, SIGSYS, "getsockopt(SOL_SOCKET)");
    t_expect_sig(IPC_SANDBOX_ROUTER, true, a_getsockopt_xdp, SIGSYS, "getsockopt in the router");
    t_expect_sig(IPC_SANDBOX_ROUTER, true, a_sched_yield, SIGSYS, "sched_yield in the router");
    close(t_efd);
}

static void test_sandbox_abort_stays_abort(void **state)
{
    (void)state;
    for (int p = IPC_SANDBOX_ROUTER; p < IPC_SANDBOX_NPROFILES; p++)
        t_expect_sig((enum ipc_sandbox_profile)p, true, a_abort, SIGABRT, "abort()");
}

static void test_sandbox_start_calls_end_at_run(void **state)
{
    (void)state;
    for (int p = IPC_SANDBOX_ROUTER; p < IPC_SANDBOX_NPROFILES; p++) {
        t_expect_ok((enum ipc_sandbox_profile)p, false, a_fstat, "fstat");
        t_expect_sig((enum ipc_sandbox_profile)p, true, a_fstat, SIGSYS, "fstat");
    }
    t_expect_ok(IPC_SANDBOX_TAP, false, a_fcntl, "fcntl");
    t_expect_sig(IPC_SANDBOX_TAP, true, a_fcntl, SIGSYS, "fcntl");
    t_expect_sig(IPC_SANDBOX_ROUTER, false, a_fcntl, SIGSYS, "fcntl in the router");
    t_expect_ok(IPC_SANDBOX_TAP, false, a_io_uring_setup, "io_uring_setup");
    t_expect_sig(IPC_SANDBOX_TAP, true, a_io_uring_setup, SIGSYS, "io_uring_setup");
    t_expect_sig(IPC_SANDBOX_ROUTER, false, a_io_uring_setup, SIGSYS, "io_uring_setup in the router");
}

static void test_sandbox_other_abis_die(void **state)
{
    (void)state;
#if defined(__x86_64__)
    for (int p = IPC_SANDBOX_ROUTER; p < IPC_SANDBOX_NPROFILES; p++)
        t_expect_sig((enum ipc_sandbox_profile)p, false, a_x32, SIGSYS, "x32 getpid");
    /* int 0x80 only where the kernel runs i386 code at all. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(t_int80_getpid() == (long)getpid() ? 0 : 1);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        t_expect_sig(IPC_SANDBOX_ROUTER, true, a_i386, SIGSYS, "i386 getpid (int 0x80)");
    else
        t_skipped = "no i386 system calls on this kernel: int 0x80 not tried under the filter";
#else
    t_skipped = "not x86_64: no x32 or i386 calls tried under the filter";
#endif
}

static void test_sandbox_ceiling_lets_a_binary_start(void **state)
{
    (void)state;
    t_efd = eventfd(0, EFD_NONBLOCK);
    assert_true(t_efd >= 0);
    for (int p = IPC_SANDBOX_ROUTER; p < IPC_SANDBOX_NPROFILES; p++) {
        enum ipc_sandbox_profile pr = (enum ipc_sandbox_profile)p;
        int st = t_child_at(pr, T_CEIL, a_loader);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("the loader's calls under the %s ceiling: status %#x", ipc_sandbox_name(pr), st);
        st = t_child_at(pr, T_CEIL, a_execveat);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("execveat of a dynamic binary under the %s ceiling: status %#x", ipc_sandbox_name(pr), st);
        /* Every stage narrows it: the loop works under all three. */
        st = t_child_at(pr, T_CEIL | T_START | T_RUN, a_memory);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("malloc under the %s ceiling and both stages: status %#x", ipc_sandbox_name(pr), st);
        st = t_child_at(pr, T_CEIL | T_START | T_RUN, a_wake);
        if (p != IPC_SANDBOX_TAP && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
            fail_msg("the wait under the %s ceiling and both stages: status %#x", ipc_sandbox_name(pr), st);
    }
    close(t_efd);
}

static void test_sandbox_ceiling_escapes_die(void **state)
{
    (void)state;
    static const t_action act[] = {a_socket,      a_fork,        a_open_write, a_open_creat, a_execve,
                                   a_ptrace,      a_kill_parent, a_tgkill_other, a_dump_on, a_prctl_other};
    static const char *const what[] = {"socket",   "fork",  "open(O_WRONLY)", "open(O_CREAT)",        "execve",
                                       "ptrace",   "kill(parent)", "tgkill(parent, SIGABRT)", "PR_SET_DUMPABLE 1",
                                       "PR_SET_NAME"};
    for (int p = IPC_SANDBOX_ROUTER; p < IPC_SANDBOX_NPROFILES; p++)
        for (unsigned i = 0; i < sizeof(act) / sizeof(act[0]); i++) {
            int st = t_child_at((enum ipc_sandbox_profile)p, T_CEIL, act[i]);
            if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
                fail_msg("%s under the %s ceiling: status %#x, expected SIGSYS", what[i],
                         ipc_sandbox_name((enum ipc_sandbox_profile)p), st);
        }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], T_REEXEC) == 0)
        return 0;
    if (!ipc_sandbox_enabled()) {
        print_message("skip: this build installs no seccomp filter (sanitizer or --no-sandbox)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sandbox_loop_calls_pass),
        cmocka_unit_test(test_sandbox_escapes_die),
        cmocka_unit_test(test_sandbox_abort_stays_abort),
        cmocka_unit_test(test_sandbox_start_calls_end_at_run),
        cmocka_unit_test(test_sandbox_other_abis_die),
        cmocka_unit_test(test_sandbox_ceiling_lets_a_binary_start),
        cmocka_unit_test(test_sandbox_ceiling_escapes_die),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed == 0 && t_skipped) {
        print_message("skip: %s\n", t_skipped);
        return 77;
    }
    return failed;
}
