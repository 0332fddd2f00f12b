/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sandbox_skip.c: test_sandbox must skip (exit 77), not pass,
 * when it could not try what it is there to try, so that CI's no-skip rule
 * (RR_NO_SKIP=1) sees it:
 *  - a build whose services install no seccomp filter: test_sandbox linked
 *    with ipc/sandbox.c built -DRR_NO_SANDBOX (build/bin/nofilter/);
 *  - a kernel without i386 system calls: the plain test_sandbox run under a
 *    seccomp filter of our own that makes every int 0x80 call fail ENOSYS,
 *    as a kernel without IA32 emulation does.
 * Each binary is found beside this one (/proc/self/exe), so the cwd does not
 * matter.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* @rel (e.g. "nofilter/test_sandbox") beside this binary's directory. */
static void t_path(char *out, size_t len, const char *rel)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(n > 0);
    self[n] = '\0';
    /* .../build/bin/tests/test_sandbox_skip -> .../build/bin */
    char *dir = dirname(dirname(self));
    snprintf(out, len, "%s/%s", dir, rel);
    if (access(out, X_OK) != 0)
        fail_msg("%s: %s", out, strerror(errno));
}

/* Run @path (stdout and stderr to /dev/null) with i386 calls failing if
 * @no_i386; returns its wait status. */
static int t_run(const char *path, bool no_i386)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (no_i386) {
            struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_I386, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            };
            struct sock_fprog fp = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
            if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0)
                _exit(120);
        }
        FILE *null = freopen("/dev/null", "w", stdout);
        (void)null;
        dup2(1, 2);
        execl(path, path, (char *)NULL);
        _exit(121);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static void t_expect_skip(const char *path, bool no_i386)
{
    int st = t_run(path, no_i386);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 77)
        fail_msg("%s%s: status %#x (exit %d), expected a skip (exit 77)", path, no_i386 ? " without i386 calls" : "",
                 st, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void test_no_filter_build_skips(void **state)
{
    (void)state;
    char path[PATH_MAX + 64];
    t_path(path, sizeof(path), "nofilter/test_sandbox");
    t_expect_skip(path, false);
}

static void test_no_int80_skips(void **state)
{
    (void)state;
#if defined(__x86_64__)
    char path[PATH_MAX + 64];
    t_path(path, sizeof(path), "tests/test_sandbox");
    t_expect_skip(path, true);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_filter_build_skips),
        cmocka_unit_test(test_no_int80_skips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
