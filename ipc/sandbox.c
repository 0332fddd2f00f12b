/* SPDX-License-Identifier: MIT */
/*
 * ipc/sandbox.c: the services' seccomp filters (ipc/sandbox.h), written as
 * classic BPF from one table of rules: which call, at which stage, for which
 * kinds, with which argument check. The table is the allow-list;
 * docs/security.md explains each entry.
 *
 * The program, for one profile and stage:
 *
 *     A = arch;  A != OUR_ARCH          -> KILL    (i386 int 0x80, ...)
 *     A = nr;    A >= X32 bit (x86_64)  -> KILL    (x32 calls, nr -1)
 *     for each rule:  A == nr ? [argument checks ->] ALLOW : next rule
 *     KILL
 *
 * Every rule's block ends in a return, so the accumulator holds the call
 * number whenever a rule's test runs. The call-only rules are what the
 * kernel's seccomp action cache (Linux 5.11+) proves constant: those calls
 * (io_uring_enter, poll, read, write, ...) skip the filter altogether; the
 * three with argument checks run it.
 */
#include "sandbox.h"
#include "svc.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(__ILP32__)
#define SBX_AUDIT_ARCH AUDIT_ARCH_X86_64
#define SBX_X32_BIT 0x40000000u /* __X32_SYSCALL_BIT: same arch, other ABI */
#elif defined(__aarch64__)
#define SBX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
/* Another architecture needs its audit arch here and its calls checked. */
#error "ipc/sandbox.c: the seccomp allow-lists are written for x86_64 and aarch64 only"
#endif

#ifndef SOL_XDP
#define SOL_XDP 283
#endif

/* An open that could write or create: O_TMPFILE without its O_DIRECTORY bit. */
#define SBX_OPEN_WRITES ((uint32_t)(O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | (O_TMPFILE & ~O_DIRECTORY)))

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(RR_NO_SANDBOX)
#define SBX_ENABLED 0
#else
#define SBX_ENABLED 1
#endif
/* The ceiling goes on in the supervisor's child, whose build may be a
 * sanitizer's (build/bin/asan/ringrouter) while the services' is not: only
 * --no-sandbox, a build of both, leaves it off. */
#ifdef RR_NO_SANDBOX
#define SBX_CEILING 0
#else
#define SBX_CEILING 1
#endif

enum {
    K_ROUTER = 1u << IPC_SANDBOX_ROUTER,
    K_SHAPER = 1u << IPC_SANDBOX_SHAPER,
    K_TAP = 1u << IPC_SANDBOX_TAP,
    K_AFXDP = 1u << IPC_SANDBOX_AFXDP,
    K_ROUTES = 1u << IPC_SANDBOX_ROUTES,
    K_STANDIN = 1u << IPC_SANDBOX_STANDIN,
    K_FILTER = 1u << IPC_SANDBOX_FILTER,
    K_WAKE = K_ROUTER | K_SHAPER | K_ROUTES | K_STANDIN | K_FILTER, /* sleep in ipc_svc_wait (rr-routes: its own ppoll) */
    K_ALL = K_ROUTER | K_SHAPER | K_TAP | K_AFXDP | K_ROUTES | K_STANDIN | K_FILTER,
};
_Static_assert(IPC_SANDBOX_NPROFILES <= 8, "kinds are a byte");

/* S_CEIL: the ceiling's own rules, beyond every START rule (ipc/sandbox.h). */
enum { S_START = 1, S_RUN = 2, S_BOTH = S_START | S_RUN, S_CEIL = 4 };

enum sbx_check {
    ARG_ANY,
    ARG_NO_EXEC,    /* mmap: arg 2 (prot) without PROT_EXEC */
    ARG_SELF_ABORT, /* tgkill: arg 0 (tgid) is us, arg 2 is SIGABRT: abort() */
    ARG_SOL_XDP,    /* getsockopt: arg 1 (level) is SOL_XDP */
    ARG_READ_ONLY,  /* openat: arg 2 (flags) opens for reading, creates nothing */
    ARG_NO_DUMP,    /* prctl: PR_SET_DUMPABLE to 0, nothing else */
};

struct sbx_rule {
    int nr;
    uint8_t stages;
    uint8_t kinds;
    uint8_t check;
};

/*
 * The allow-lists. A call appears once per stage and kind: the first rule
 * that matches a profile and stage wins, later ones for the same call are
 * skipped. The loops' own calls come first (the order the filter tests them
 * in). docs/security.md has the why of each line.
 */
static const struct sbx_rule sbx_rules[] = {
    /* The loops. */
    {__NR_io_uring_enter, S_BOTH, K_TAP, ARG_ANY},   /* TAP: every read, write, poll and wait */
    {__NR_ppoll, S_BOTH, K_WAKE | K_AFXDP, ARG_ANY}, /* sleep on our eventfd (AF_XDP: and the XSK; the TX kick) */
    {__NR_read, S_BOTH, K_WAKE | K_AFXDP, ARG_ANY},  /* reset our eventfd after a wake-up */
    {__NR_write, S_BOTH, K_ALL, ARG_ANY},            /* eventfd wake-ups; lines on stderr */
    {__NR_recvfrom, S_BOTH, K_AFXDP, ARG_ANY},       /* busy poll, fill-ring kick */
    {__NR_getsockopt, S_BOTH, K_AFXDP, ARG_SOL_XDP}, /* XDP_STATISTICS; XDP_MMAP_OFFSETS at start */
    {__NR_sched_yield, S_BOTH, K_AFXDP, ARG_ANY},    /* let a consumer on our CPU run after a wake-up */
    {__NR_recvmmsg, S_BOTH, K_ROUTES, ARG_ANY}, /* netlink messages, 64 a call */
    {__NR_recvfrom, S_BOTH, K_ROUTES, ARG_ANY}, /* FPM bytes */
    {__NR_sendto, S_BOTH, K_ROUTES, ARG_ANY},   /* the netlink dump request (its socket reaches the kernel only) */
    {__NR_accept4, S_BOTH, K_ROUTES, ARG_ANY},  /* zebra's FPM connection, on the socket the supervisor listens on */
    {__NR_clock_gettime, S_BOTH, K_ALL, ARG_ANY},    /* the vDSO's fallback */
    /* Signals: SIGTERM's handler returns; a stopped and continued wait restarts. */
    {__NR_rt_sigreturn, S_BOTH, K_ALL, ARG_ANY},
    {__NR_restart_syscall, S_BOTH, K_ALL, ARG_ANY},
    {__NR_rt_sigprocmask, S_BOTH, K_ALL, ARG_ANY}, /* abort() */
    /* Memory: malloc, free, and the exit path's unmapping. */
    {__NR_mmap, S_BOTH, K_ALL, ARG_NO_EXEC},
    {__NR_munmap, S_BOTH, K_ALL, ARG_ANY},
    {__NR_brk, S_BOTH, K_ALL, ARG_ANY},
    {__NR_getrandom, S_BOTH, K_ALL, ARG_ANY}, /* glibc malloc's first call seeds its tcache key */
    /* The end: exit, or abort() on a broken invariant (gettid, getpid, tgkill(self, SIGABRT)). */
    {__NR_close, S_BOTH, K_ALL, ARG_ANY},
    {__NR_getpid, S_BOTH, K_ALL, ARG_ANY},
    {__NR_gettid, S_BOTH, K_ALL, ARG_ANY},
    {__NR_tgkill, S_BOTH, K_ALL, ARG_SELF_ABORT},
    {__NR_exit_group, S_BOTH, K_ALL, ARG_ANY},
    /* Start only: map the regions, wait as a standby, set up. */
    {__NR_read, S_START, K_ALL, ARG_ANY}, /* the standby's go pipe */
#ifdef __NR_newfstatat
    {__NR_newfstatat, S_START, K_ALL, ARG_ANY}, /* a region's size (glibc's fstat) */
#endif
#ifdef __NR_fstat
    {__NR_fstat, S_START, K_ALL, ARG_ANY},
#endif
    {__NR_seccomp, S_START, K_ALL, ARG_ANY},      /* the RUN stage (a filter only ever narrows) */
    {__NR_fcntl, S_START, K_TAP, ARG_ANY},        /* clear O_NONBLOCK on the TAP fd */
    {__NR_io_uring_setup, S_START, K_TAP, ARG_ANY},
    {__NR_io_uring_register, S_START, K_TAP, ARG_ANY}, /* restrictions, then enable */
    /*
     * The ceiling only, ahead of the START rules above (its own mmap wins):
     * the supervisor's exec and the dynamic loader, then the little a
     * service does before ipc_svc_open narrows it (strace -f of each kind's
     * start; docs/security.md, "The ceiling").
     */
    {__NR_execveat, S_CEIL, K_ALL, ARG_ANY}, /* the supervisor's child, from the binary's O_PATH fd */
    {__NR_mmap, S_CEIL, K_ALL, ARG_ANY},     /* the loader maps the libraries' text PROT_EXEC */
    {__NR_mprotect, S_CEIL, K_ALL, ARG_ANY}, /* RELRO */
    {__NR_openat, S_CEIL, K_ALL, ARG_READ_ONLY}, /* ld.so.cache, the libraries */
    {__NR_pread64, S_CEIL, K_ALL, ARG_ANY},      /* ELF headers */
#ifdef __NR_access
    {__NR_access, S_CEIL, K_ALL, ARG_ANY}, /* /etc/ld.so.preload */
#endif
    {__NR_faccessat, S_CEIL, K_ALL, ARG_ANY},
#ifdef __NR_arch_prctl
    {__NR_arch_prctl, S_CEIL, K_ALL, ARG_ANY}, /* the thread pointer */
#endif
    {__NR_set_tid_address, S_CEIL, K_ALL, ARG_ANY},
    {__NR_set_robust_list, S_CEIL, K_ALL, ARG_ANY},
#ifdef __NR_rseq
    {__NR_rseq, S_CEIL, K_ALL, ARG_ANY},
#endif
    {__NR_prlimit64, S_CEIL, K_ALL, ARG_ANY},      /* glibc reads RLIMIT_STACK */
    {__NR_rt_sigaction, S_CEIL, K_ALL, ARG_ANY},   /* ipc_svc_open ignores SIGPIPE */
    {__NR_signalfd4, S_CEIL, K_ALL, ARG_ANY},      /* ipc_svc_catch_stop */
    {__NR_prctl, S_CEIL, K_ALL, ARG_NO_DUMP},      /* ipc_svc_open: not dumpable */
};

#define SBX_MAX_INSNS 256u
#define SBX_NRULES (sizeof(sbx_rules) / sizeof(sbx_rules[0]))

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SBX_ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8u * (i)))
#else
#define SBX_ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8u * (i) + 4u))
#endif

struct sbx_prog {
    struct sock_filter ins[SBX_MAX_INSNS];
    unsigned n;
    bool overflow;
};

static void op(struct sbx_prog *p, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf)
{
    if (p->n >= SBX_MAX_INSNS) {
        p->overflow = true;
        return;
    }
    p->ins[p->n++] = (struct sock_filter){.code = code, .jt = jt, .jf = jf, .k = k};
}

static void load(struct sbx_prog *p, uint32_t off)
{
    op(p, BPF_LD | BPF_W | BPF_ABS, off, 0, 0);
}

static void ret(struct sbx_prog *p, uint32_t action)
{
    op(p, BPF_RET | BPF_K, action, 0, 0);
}

/*
 * The argument checks compare the low 32 bits: each checked argument is an
 * int (prot, a pid, a signal, a level), which the kernel truncates to those
 * bits itself.
 */
/* Kill unless argument @i has none of @bits. */
static void arg_none_of(struct sbx_prog *p, unsigned i, uint32_t bits)
{
    load(p, SBX_ARG_LO(i));
    op(p, BPF_JMP | BPF_JSET | BPF_K, bits, 0, 1);
    ret(p, SECCOMP_RET_KILL_PROCESS);
}

/* Kill unless argument @i is @x and argument @j is @y. */
static void arg_pair(struct sbx_prog *p, unsigned i, uint32_t x, unsigned j, uint32_t y)
{
    load(p, SBX_ARG_LO(i));
    op(p, BPF_JMP | BPF_JEQ | BPF_K, x, 0, 2);
    load(p, SBX_ARG_LO(j));
    op(p, BPF_JMP | BPF_JEQ | BPF_K, y, 1, 0);
    ret(p, SECCOMP_RET_KILL_PROCESS);
}

static void arg_block(struct sbx_prog *p, enum sbx_check check, uint32_t pid)
{
    switch (check) {
    case ARG_NO_EXEC:
        arg_none_of(p, 2, PROT_EXEC);
        break;
    case ARG_SELF_ABORT:
        arg_pair(p, 0, pid, 2, SIGABRT);
        break;
    case ARG_SOL_XDP:
        load(p, SBX_ARG_LO(1));
        op(p, BPF_JMP | BPF_JEQ | BPF_K, SOL_XDP, 1, 0);
        ret(p, SECCOMP_RET_KILL_PROCESS);
        break;
    case ARG_READ_ONLY:
        arg_none_of(p, 2, SBX_OPEN_WRITES);
        break;
    case ARG_NO_DUMP:
        arg_pair(p, 0, PR_SET_DUMPABLE, 1, 0);
        break;
    default:
        break;
    }
    ret(p, SECCOMP_RET_ALLOW);
}

/* Does rule @r belong to the program of kind bit @kind at @stage? The
 * ceiling of a kind is its START list and the stand-ins' (a test puts one
 * in any service's place), plus the S_CEIL rules. */
static bool sbx_takes(const struct sbx_rule *r, uint8_t kind, enum ipc_sandbox_stage stage)
{
    switch (stage) {
    case IPC_SANDBOX_START:
        return (r->kinds & kind) && (r->stages & S_START);
    case IPC_SANDBOX_RUN:
        return (r->kinds & kind) && (r->stages & S_RUN);
    default:
        return (r->kinds & (kind | K_STANDIN)) && (r->stages & (S_START | S_CEIL));
    }
}

static void sbx_build(struct sbx_prog *p, enum ipc_sandbox_profile profile, enum ipc_sandbox_stage stage, uint32_t pid)
{
    uint8_t kind = (uint8_t)(1u << profile);
    p->n = 0;
    p->overflow = false;
    load(p, (uint32_t)offsetof(struct seccomp_data, arch));
    op(p, BPF_JMP | BPF_JEQ | BPF_K, SBX_AUDIT_ARCH, 1, 0);
    ret(p, SECCOMP_RET_KILL_PROCESS);
    load(p, (uint32_t)offsetof(struct seccomp_data, nr));
#ifdef SBX_X32_BIT
    op(p, BPF_JMP | BPF_JGE | BPF_K, SBX_X32_BIT, 0, 1);
    ret(p, SECCOMP_RET_KILL_PROCESS);
#endif
    int seen[SBX_NRULES];
    unsigned nseen = 0;
    /* The ceiling's own rules first: the first rule of a call wins. */
    for (unsigned k = 0; k < 2 * SBX_NRULES; k++) {
        const struct sbx_rule *r = &sbx_rules[k % SBX_NRULES];
        if ((k < SBX_NRULES) != (r->stages == S_CEIL) || !sbx_takes(r, kind, stage))
            continue;
        bool dup = false;
        for (unsigned j = 0; j < nseen && !dup; j++)
            dup = seen[j] == r->nr;
        if (dup)
            continue;
        seen[nseen++] = r->nr;
        unsigned at = p->n;
        op(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)r->nr, 0, 0);
        arg_block(p, (enum sbx_check)r->check, pid);
        if (at < p->n) /* skip the block when the number differs */
            p->ins[at].jf = (uint8_t)(p->n - at - 1);
    }
    ret(p, SECCOMP_RET_KILL_PROCESS);
}

bool ipc_sandbox_enabled(void)
{
    return SBX_ENABLED;
}

bool ipc_sandbox_imposed(void)
{
    return SBX_CEILING;
}

enum ipc_sandbox_profile ipc_sandbox_of_kind(uint32_t kind)
{
    switch (kind) {
    case IPC_SVC_ROUTER:
        return IPC_SANDBOX_ROUTER;
    case IPC_SVC_SHAPER:
        return IPC_SANDBOX_SHAPER;
    case IPC_SVC_TAP:
        return IPC_SANDBOX_TAP;
    case IPC_SVC_AFXDP:
        return IPC_SANDBOX_AFXDP;
    case IPC_SVC_ROUTES:
        return IPC_SANDBOX_ROUTES;
    case IPC_SVC_FILTER:
        return IPC_SANDBOX_FILTER;
    default:
        return IPC_SANDBOX_STANDIN;
    }
}

const char *ipc_sandbox_name(enum ipc_sandbox_profile profile)
{
    static const char *const names[IPC_SANDBOX_NPROFILES] = {"router", "shaper", "tap", "afxdp", "routes", "stand-in",
                                                                     "filter"};
    return (unsigned)profile < IPC_SANDBOX_NPROFILES ? names[profile] : "?";
}

static long sbx_seccomp(struct sock_fprog *fp)
{
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, fp);
}

int ipc_sandbox_enter(enum ipc_sandbox_profile profile, enum ipc_sandbox_stage stage, struct ipc_err *err)
{
    if (stage == IPC_SANDBOX_CEILING ? !SBX_CEILING : !SBX_ENABLED)
        return 0;
    if ((unsigned)profile >= IPC_SANDBOX_NPROFILES)
        return ipc_errf(err, -EINVAL, "seccomp: no allow-list for profile %d", (int)profile);
    const char *what = stage == IPC_SANDBOX_START ? "start" : stage == IPC_SANDBOX_RUN ? "run" : "ceiling";
    struct sbx_prog p;
    sbx_build(&p, profile, stage, (uint32_t)getpid());
    if (p.overflow)
        return ipc_errf(err, -E2BIG, "seccomp: the %s filter of %s needs more than %u instructions", what,
                        ipc_sandbox_name(profile), SBX_MAX_INSNS);
    struct sock_fprog fp = {.len = (unsigned short)p.n, .filter = p.ins};
    if (sbx_seccomp(&fp) == 0)
        return 0;
    /* EACCES: no PR_SET_NO_NEW_PRIVS and no CAP_SYS_ADMIN (the supervisor
     * sets the first before exec; an unprivileged test harness may not).
     * Any process may set it, and a filtered one has it or the capability
     * already, so this prctl never runs under a filter. */
    if (errno == EACCES && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && sbx_seccomp(&fp) == 0)
        return 0;
    int e = errno;
    return ipc_errf(err, -e, "seccomp: installing the %s filter of %s (%u instructions): %s", what,
                    ipc_sandbox_name(profile), p.n, strerror(e));
}
