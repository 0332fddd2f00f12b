/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/nulldrv.c: rr-null, a stand-in for a port driver in supervisor
 * tests, like DPDK's null PMD. It "receives" by allocating packets stamped
 * with a magic and its port number and sending them to its output ring, about
 * 64 per millisecond, and "transmits" by taking what arrives on its input
 * rings, checking the stamp of the other port, and freeing it. So traffic
 * flows through whatever stands between two of them, with no device at all.
 *
 * Leak mode, test-only: run under the name rr-null-leak-N (a copy of this
 * binary, named so in the manifest's `binary` key) it also allocates N
 * buffers once ready and keeps them until it exits, cleanly, after SIGTERM:
 * the shutdown census must name it (tests/integ/sup_leak.sh). The name,
 * because the supervisor execs a service with no arguments and a fixed
 * environment; IPC_SVC_BINARY_ENV (else getauxval(AT_EXECFN)) is the path
 * it was exec'd by.
 *
 * Hostile-stats mode, test-only: run as rr-null-evil-stats it fills its stats
 * region's names with what a compromised service could write there (no NUL
 * in 32 bytes, quotes, backslashes, control bytes) and claims more counters
 * and stages than the region holds: the supervisor must bound and clean what
 * it prints (tests/integ/sup_hostile_stats.sh).
 *
 * Hostile-pool mode, test-only: run as rr-null-evil-pool it holds 8 buffers
 * and, once ready, writes what a compromised service could write where the
 * supervisor reads: three of those buffers' owner words name no one (777),
 * its allocation magazine's depot word claims 65535 buffers while the chain
 * loops after three, and its output ring's header says 2^31 slots with a mask
 * of all ones. Then it kills itself, so that the supervisor's reclaim meets
 * it all (tests/integ/sup_hostile_pool.sh).
 *
 * Forbidden-call mode, test-only: run as rr-null-evil-syscall it names one
 * more counter, evil_syscalls, and once ready, if that counter is still 0,
 * bumps it and calls socket(AF_INET): a call no service's seccomp allow-list
 * has (ipc/sandbox.h), made where a compromised service would make it, in
 * its steady state. The filter kills it with SIGSYS; the counter lives on in
 * the stats region, so its successor behaves (tests/integ/sup_seccomp.sh).
 *
 * Forged-log mode, test-only: run as rr-null-evil-log it writes to stderr,
 * once ready, a line the supervisor would write ("ringrouter: census: all
 * 8192 buffers free ..."), escape sequences and a bell, a journal priority,
 * a line of 1,000 bytes and a carriage return before another forgery; then
 * "evil-log: tick N" every 500 ms; and at SIGTERM a last line with no
 * newline. The supervisor must write each only behind the service's name,
 * escaped and cut (tests/integ/guard_log.sh). As rr-null-evil-flood it
 * instead writes 100-byte lines as fast as its stderr takes them, for 3 s
 * after it is ready: the supervisor must bound what it reads.
 *
 * Policy modes, test-only, in place of shell scripts (which the kind's
 * seccomp ceiling leaves nothing to run: no fork, no exec):
 * rr-null-exit-N exits with status N before its set-up
 * (tests/integ/sup_policy.sh); rr-null-never-ready sets up and waits for
 * its stop without ever reporting ready (sup_timeouts.sh); rr-null-crashy,
 * while a file named as its binary plus ".crash" exists, waits 1 s and
 * exits 1 before its set-up, and is rr-null otherwise (sup_cpu_max.sh).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ipc/svc.h"

#define BURST 64
#define STAMP 0x6e756c6c706b7400ull /* "nullpkt" */

static volatile sig_atomic_t stop;

#define LEAK_MAX 1024u

/* N from an exec name ending in "rr-null-leak-N", else 0. */
static const char *exec_name(void)
{
    /* The supervisor execs from an fd: AT_EXECFN is then /dev/fd/N. */
    const char *path = getenv(IPC_SVC_BINARY_ENV);
    if (!path)
        path = (const char *)getauxval(AT_EXECFN);
    const char *base = path ? strrchr(path, '/') : NULL;
    return base ? base + 1 : path;
}

/* The policy modes that end before the set-up (see the top): the exit
 * status, or -1 to go on. */
static int policy_mode(const char *me)
{
    if (me && strncmp(me, "rr-null-exit-", 13) == 0)
        return atoi(me + 13);
    const char *path = getenv(IPC_SVC_BINARY_ENV);
    if (!me || strcmp(me, "rr-null-crashy") != 0 || !path)
        return -1;
    char flag[512];
    struct stat st;
    snprintf(flag, sizeof(flag), "%s.crash", path);
    if (stat(flag, &st) < 0)
        return -1;
    struct timespec one = {.tv_sec = 1};
    ppoll(NULL, 0, &one, NULL);
    return 1;
}

static uint32_t leak_mode(void)
{
    const char *base = exec_name();
    if (!base || strncmp(base, "rr-null-leak-", 13) != 0)
        return 0;
    unsigned long n = strtoul(base + 13, NULL, 10);
    return n > LEAK_MAX ? LEAK_MAX : (uint32_t)n;
}

enum { C_GEN, C_GEN_NOBUF, C_GEN_FULL, C_RX, C_RX_BAD, C_NCTR, C_EVIL = C_NCTR };
static const char *const ctr_names[C_NCTR + 1] = {"gen_pkts",  "gen_drop_nobufs", "gen_drop_ring_full",
                                                  "sink_pkts", "sink_bad_stamp",  "evil_syscalls"};

/* Hostile-pool mode (see the top): spoil, then die as a crash would, with
 * nothing flushed. */
static void evil_pool(struct ipc_svc *svc)
{
    struct ipc_pool *p = &svc->pool;
    ipc_buf held[8];
    if (ipc_pool_alloc(p, held, 8) != 8 || p->mag[0].slot == IPC_BUF_NONE || p->mag[0].cnt < 3) {
        fprintf(stderr, "rr-null: evil-pool mode: the pool is too empty to spoil\n");
        _exit(1);
    }
    for (int i = 0; i < 3; i++)
        ipc_st_rlx(&ipc_pool_meta(p, held[i])->owner, 777);
    ipc_buf head = p->mag[0].head;
    ipc_buf third = ipc_pool_meta(p, ipc_pool_meta(p, head)->link)->link;
    ipc_pool_meta(p, third)->link = head;
    /* The depot word's layout (ipc/pool.h): owner:16, count:16, head:32. */
    ipc_st_rel(&p->depot[p->mag[0].slot].word, ((uint64_t)p->self << 48) | (0xffffull << 32) | head);
    if (svc->n_out) {
        svc->out[0].sh->size = 1u << 31;
        svc->out[0].sh->mask = UINT32_MAX;
    }
    fprintf(stderr, "rr-null: evil-pool mode: owners 777, a depot word of 65535 that loops, a ring of 2^31\n");
    raise(SIGKILL);
}

/* Forged-log mode (see the top). */
static void evil_log_say(const char *what, size_t n)
{
    ssize_t r = write(STDERR_FILENO, what, n);
    (void)r;
}

static void evil_log(void)
{
    static const char forged[] = "ringrouter: census: all 8192 buffers free (0 packets drained from rings)\n"
                                 "\x1b[2J\x1b[31mred\x1b[0m bell\a tab\t e-acute \xc3\xa9 backslash \\x1b\n"
                                 "<3>ringrouter: a journal priority forged\n";
    evil_log_say(forged, sizeof(forged) - 1);
    char line[1001];
    memset(line, 'A', 1000);
    line[1000] = '\n';
    evil_log_say(line, sizeof(line));
    static const char cr[] = "first\rringrouter: after a carriage return\n";
    evil_log_say(cr, sizeof(cr) - 1);
}

static void evil_log_tick(uint64_t *next_ns, unsigned *n)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (now < *next_ns)
        return;
    *next_ns = now + 500000000ull;
    char buf[48];
    int k = snprintf(buf, sizeof(buf), "evil-log: tick %u\n", (*n)++);
    evil_log_say(buf, (size_t)k);
}

/* As many lines as the pipe takes now, for 3 s from @until_ns - 3 s. */
static void evil_flood(uint64_t until_ns, unsigned *n)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec >= until_ns)
        return;
    char line[101];
    memset(line, 'f', sizeof(line) - 1);
    line[100] = '\n';
    for (int i = 0; i < 64; i++) {
        snprintf(line, 16, "flood %08u", (*n)++);
        line[14] = ' ';
        if (write(STDERR_FILENO, line, sizeof(line)) < 0)
            return;
    }
}

int main(void)
{
    struct ipc_svc svc;
    struct ipc_err err;
    ipc_svc_catch_stop(&stop); /* first: ipc_svc_open enters the sandbox */
    const char *me = exec_name();
    int early = policy_mode(me);
    if (early >= 0)
        return early;
    if (ipc_svc_open(&svc, 0, &err) < 0) {
        fprintf(stderr, "rr-null: %s\n", err.msg);
        return 111;
    }
    if (me && strcmp(me, "rr-null-never-ready") == 0) {
        while (!stop)
            ipc_svc_nap_us(&svc, NULL, 0, 1000000);
        ipc_svc_close(&svc);
        return 0;
    }
    bool evil_syscall = me && strcmp(me, "rr-null-evil-syscall") == 0;
    _Atomic uint64_t *ctr = ipc_svc_counters(&svc, ctr_names, evil_syscall ? C_NCTR + 1 : C_NCTR);
    uint16_t port = svc.cfg->port;
    uint64_t seq = 0;
    static ipc_buf leaked[LEAK_MAX];
    uint32_t nleak = leak_mode(), got = 0;
    if (ipc_svc_ready(&svc, &err) < 0) {
        fprintf(stderr, "rr-null: %s\n", err.msg);
        return 111;
    }
    /* Leak mode: hold these until exit, never freed (the supervisor reclaims
     * them after the census has counted them). */
    while (got < nleak) {
        uint32_t n = ipc_pool_alloc(&svc.pool, leaked + got, nleak - got);
        if (!n)
            break;
        got += n;
    }
    if (nleak)
        fprintf(stderr, "rr-null: leak mode: holding %u buffers until exit\n", got);
    if (evil_syscall && ipc_ld_rlx(&ctr[C_EVIL]) == 0) {
        ipc_count(&ctr[C_EVIL], 1); /* first, in the stats region: the successor reads it */
        fprintf(stderr, "rr-null: evil-syscall mode: socket(AF_INET) after ready\n");
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        fprintf(stderr, "rr-null: evil-syscall mode: socket() returned %d: no seccomp filter stopped it\n", fd);
        if (fd >= 0)
            close(fd);
    }
    if (me && strcmp(me, "rr-null-evil-stats") == 0) {
        static const char junk[] = "\"\\\n\x01\x7f\xff{}[],:";
        for (unsigned i = 0; i < IPC_SVC_MAX_CTR; i++)
            for (unsigned k = 0; k < IPC_CTR_NAME; k++)
                svc.stats->ctr_name[i][k] = junk[(i + k) % (sizeof(junk) - 1)];
        for (unsigned i = 0; i < IPC_STAGE_MAX; i++)
            for (unsigned k = 0; k < IPC_STAGE_NAME; k++)
                svc.stats->stage[i].name[k] = junk[(i + k + 3) % (sizeof(junk) - 1)];
        ipc_st_rel(&svc.stats->nctr, UINT32_MAX);
        ipc_st_rel(&svc.stats->nstage, UINT32_MAX);
        fprintf(stderr, "rr-null: evil-stats mode: names without NUL, counts past the region\n");
    }
    if (me && strcmp(me, "rr-null-evil-pool") == 0)
        evil_pool(&svc);
    bool evil_log_on = me && strcmp(me, "rr-null-evil-log") == 0;
    uint64_t evil_log_next = 0;
    unsigned evil_log_n = 0;
    if (evil_log_on)
        evil_log();
    uint64_t flood_until = 0;
    if (me && strcmp(me, "rr-null-evil-flood") == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        flood_until = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 3000000000ull;
    }

    while (!stop) {
        /* Sink first: what comes back frees the buffers we generate with. */
        for (unsigned i = 0; i < svc.n_in; i++) {
            ipc_buf b[BURST];
            uint32_t n;
            while ((n = ipc_ring_recv(&svc.in[i], &svc.pool, b, BURST)) > 0) {
                for (uint32_t k = 0; k < n; k++) {
                    const struct ipc_meta *m = ipc_pool_meta(&svc.pool, b[k]);
                    const uint64_t *d = (const uint64_t *)ipc_pool_data(&svc.pool, b[k]);
                    if (m->len != 64 || d[0] != STAMP || d[1] == port)
                        ipc_count(&ctr[C_RX_BAD], 1);
                }
                ipc_count(&ctr[C_RX], n);
                ipc_pool_free(&svc.pool, b, n);
            }
        }
        if (svc.n_out) {
            ipc_buf b[BURST];
            uint32_t n = ipc_pool_alloc(&svc.pool, b, BURST);
            ipc_count(&ctr[C_GEN_NOBUF], BURST - n);
            for (uint32_t k = 0; k < n; k++) {
                struct ipc_meta *m = ipc_pool_meta(&svc.pool, b[k]);
                uint64_t *d = (uint64_t *)ipc_pool_data(&svc.pool, b[k]);
                m->len = 64;
                m->in_port = port;
                d[0] = STAMP;
                d[1] = port;
                d[2] = seq++;
            }
            uint32_t sent = ipc_ring_enq_burst(&svc.out[0], b, n);
            if (sent)
                ipc_wake_mark(&svc.wake, &svc.out[0]);
            ipc_count(&ctr[C_GEN], sent);
            ipc_count(&ctr[C_GEN_FULL], n - sent);
            ipc_pool_free(&svc.pool, b + sent, n - sent);
        }
        ipc_svc_flush(&svc);
        ipc_svc_beat(&svc);
        if (evil_log_on)
            evil_log_tick(&evil_log_next, &evil_log_n);
        if (flood_until)
            evil_flood(flood_until, &evil_log_n);
        /* Pace the generator: the wait doubles as the 1 ms tick. */
        ipc_svc_wait(&svc, 1);
    }
    if (evil_log_on)
        evil_log_say("evil-log: last words, no newline", 32);
    ipc_svc_close(&svc);
    return 0;
}
