/* SPDX-License-Identifier: MIT */
/*
 * bench/switch.c: what one hop between two of ringrouter's processes costs
 * on this machine, against the same hop between threads. A hop is what a
 * service does to hand a batch on when both sides share a CPU: an eventfd
 * write, the wake-up, the switch, the read on the other side. A ring of K
 * members on one CPU passes a token round: each member blocks in read() on
 * its eventfd and writes the next member's. Members are processes (P: each
 * its own address space, as ringrouter's services) or threads (T: one
 * address space, the baseline).
 *
 * Why it exists: on a guest whose hypervisor shadows the page tables, a
 * switch to another address space can cost much more once more of them take
 * turns on a CPU than the hypervisor keeps page-table roots for (with page
 * table isolation every process has two). ringrouter's AF_XDP path puts
 * three processes on the dut's CPU; bench/forward's one-process forwarder
 * puts one. This measures the difference directly.
 *
 * Usage: bench_switch [-c CPU] [-n ROUNDS] [-r RUNS] [MEMBERS...]
 * (MEMBERS: strings of P and T, the first always P, the measuring process;
 * PTT is three threads of one process; default PT PTT PP PPT PPP PPPP).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SW_MAX_MEMBERS 16
#define SW_MAX_RUNS 15

struct sw_ring {
    int efd[SW_MAX_MEMBERS];
    unsigned n;
    unsigned rounds;
};

struct sw_member {
    struct sw_ring *ring;
    unsigned k;
};

static uint64_t sw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sw_die(const char *what)
{
    fprintf(stderr, "bench_switch: %s: %s\n", what, strerror(errno));
    exit(111);
}

static void sw_pass(int fd)
{
    uint64_t one = 1;
    if (write(fd, &one, sizeof(one)) != sizeof(one))
        sw_die("eventfd write");
}

static void sw_take(int fd)
{
    uint64_t v;
    if (read(fd, &v, sizeof(v)) != sizeof(v))
        sw_die("eventfd read");
}

/* Member k > 0: take the token, hand it to k + 1 (the last to member 0). */
static void *sw_member_run(void *arg)
{
    const struct sw_member *m = arg;
    const struct sw_ring *r = m->ring;
    for (unsigned i = 0; i < r->rounds; i++) {
        sw_take(r->efd[m->k]);
        sw_pass(r->efd[(m->k + 1) % r->n]);
    }
    return NULL;
}

/* One run of a ring: ns per hop, from member 0's clock over every round. */
static double sw_run(const char *members, unsigned rounds)
{
    struct sw_ring r = {.n = (unsigned)strlen(members), .rounds = rounds};
    struct sw_member m[SW_MAX_MEMBERS];
    pthread_t th[SW_MAX_MEMBERS];
    pid_t pid[SW_MAX_MEMBERS] = {0};
    pid_t parent = getpid();
    for (unsigned k = 0; k < r.n; k++) {
        r.efd[k] = eventfd(0, 0);
        if (r.efd[k] < 0)
            sw_die("eventfd");
    }
    for (unsigned k = 1; k < r.n; k++) {
        m[k] = (struct sw_member){.ring = &r, .k = k};
        if (members[k] == 'P') {
            pid[k] = fork();
            if (pid[k] < 0)
                sw_die("fork");
            if (pid[k] == 0) {
                /* A parent that dies mid-run (a later fork failed) leaves no
                 * member blocked in read() for ever. */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                    _exit(111);
                sw_member_run(&m[k]);
                _exit(0);
            }
        } else if ((errno = pthread_create(&th[k], NULL, sw_member_run, &m[k])) != 0) {
            sw_die("pthread_create");
        }
    }
    /* A first round out of the clock: every member has run once. */
    sw_pass(r.efd[1 % r.n]);
    sw_take(r.efd[0]);
    uint64_t t0 = sw_now_ns();
    for (unsigned i = 1; i < rounds; i++) {
        sw_pass(r.efd[1 % r.n]);
        sw_take(r.efd[0]);
    }
    uint64_t dt = sw_now_ns() - t0;
    for (unsigned k = 1; k < r.n; k++) {
        if (members[k] == 'P') {
            int st;
            if (waitpid(pid[k], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "bench_switch: member %u of %s failed\n", k, members);
                exit(111);
            }
        } else {
            pthread_join(th[k], NULL);
        }
    }
    for (unsigned k = 0; k < r.n; k++)
        close(r.efd[k]);
    return (double)dt / ((double)(rounds - 1) * r.n);
}

/* The bare cost of entering the kernel: with page table isolation, two
 * page-table switches. */
static double sw_syscall_ns(void)
{
    const unsigned n = 200000;
    uint64_t t0 = sw_now_ns();
    for (unsigned i = 0; i < n; i++)
        syscall(SYS_getppid);
    return (double)(sw_now_ns() - t0) / n;
}

static int sw_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct sw_stat {
    double med, min, max;
};

static struct sw_stat sw_stat_of(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), sw_cmp);
    return (struct sw_stat){.med = v[n / 2], .min = v[0], .max = v[n - 1]};
}

static const char *sw_kind(const char *members)
{
    unsigned p = 0, n = (unsigned)strlen(members);
    for (unsigned k = 0; k < n; k++)
        p += members[k] == 'P';
    static char buf[64];
    if (p == n)
        snprintf(buf, sizeof(buf), "%u processes", n);
    else if (p == 1)
        snprintf(buf, sizeof(buf), "%u threads of one process", n);
    else
        snprintf(buf, sizeof(buf), "%u address spaces, %u members", p, n);
    return buf;
}

static unsigned sw_uint_arg(const char *s, const char *what, unsigned lo, unsigned hi)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "bench_switch: %s: \"%s\" is not a number %u..%u\n", what, s, lo, hi);
        exit(100);
    }
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    unsigned cpu = 1, rounds = 50000, runs = 3;
    int opt;
    while ((opt = getopt(argc, argv, "c:n:r:")) != -1) {
        switch (opt) {
        case 'c':
            cpu = sw_uint_arg(optarg, "-c (CPU)", 0, CPU_SETSIZE - 1);
            break;
        case 'n':
            rounds = sw_uint_arg(optarg, "-n (rounds)", 100, 100000000);
            break;
        case 'r':
            runs = sw_uint_arg(optarg, "-r (runs)", 1, SW_MAX_RUNS);
            break;
        default:
            fprintf(stderr, "usage: bench_switch [-c CPU] [-n ROUNDS] [-r RUNS] [MEMBERS...]\n");
            return 100;
        }
    }
    static const char *const defaults[] = {"PT", "PTT", "PP", "PPT", "PPP", "PPPP"};
    const char *const *sets = defaults;
    unsigned nsets = sizeof(defaults) / sizeof(defaults[0]);
    if (optind < argc) {
        sets = (const char *const *)&argv[optind];
        nsets = (unsigned)(argc - optind);
    }
    for (unsigned s = 0; s < nsets; s++) {
        size_t len = strlen(sets[s]);
        if (len < 2 || len > SW_MAX_MEMBERS || sets[s][0] != 'P' || strspn(sets[s], "PT") != len) {
            fprintf(stderr,
                    "bench_switch: members \"%s\": 2..%d of P (process) and T (thread), "
                    "starting with P (the measuring process)\n",
                    sets[s], SW_MAX_MEMBERS);
            return 100;
        }
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) < 0)
        sw_die("sched_setaffinity (-c)");

    double sys[SW_MAX_RUNS];
    for (unsigned i = 0; i < runs; i++)
        sys[i] = sw_syscall_ns();
    struct sw_stat st_sys = sw_stat_of(sys, runs);
    printf("bench/switch: one hop = eventfd write, wake-up, switch, eventfd read; all members on CPU %u\n", cpu);
    printf("median and min - max of %u runs of %u rounds\n\n", runs, rounds);
    printf("%-34s %10s %22s\n", "ring", "us/hop", "min - max");
    printf("%-34s %10.3f %10.3f - %9.3f\n", "a system call (getppid)", st_sys.med / 1000, st_sys.min / 1000,
           st_sys.max / 1000);

    double med[SW_MAX_MEMBERS * 4] = {0};
    for (unsigned s = 0; s < nsets; s++) {
        double v[SW_MAX_RUNS];
        for (unsigned i = 0; i < runs; i++)
            v[i] = sw_run(sets[s], rounds);
        struct sw_stat st = sw_stat_of(v, runs);
        if (s < sizeof(med) / sizeof(med[0]))
            med[s] = st.med;
        char label[80];
        snprintf(label, sizeof(label), "%s (%s)", sets[s], sw_kind(sets[s]));
        printf("%-34s %10.3f %10.3f - %9.3f\n", label, st.med / 1000, st.min / 1000, st.max / 1000);
    }
    printf("\nsyscall_ns %.0f\n", st_sys.med);
    if (sets == defaults) {
        /* defaults: PT PTT PP PPT PPP PPPP */
        printf("hop_proc2_vs_thread2 %.3f\n", med[2] / med[0]);
        printf("hop_proc3_vs_thread3 %.3f\n", med[4] / med[1]);
        printf("hop_proc3_vs_proc2 %.3f\n", med[4] / med[2]);
    }
    return 0;
}
