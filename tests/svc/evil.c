/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/evil.c: rr-evil, a hostile service for tests/integ/isolation.sh.
 * It stands where a driver stands (a port's service, with the fds a driver
 * gets: the config blob, the pool, its stats region, its rings to and from
 * the router, the wake eventfds) and does what a compromised driver would:
 * signal, trace and open its peers, write what it may only read, scribble on
 * everything it may write, publish forged handles and hostile chains, and
 * make system calls no driver needs.
 *
 * Started, it behaves until SIGUSR1 (from the test, which is root), then
 * makes one attack after another, 150 ms apart, and says on stderr (the
 * supervisor's log) what it tried and what happened:
 *
 *   rr-evil: step N NAME: trying
 *   rr-evil: step N NAME: contained: WHY
 *   rr-evil: step N NAME: BREACH: WHAT
 *
 * An attack that the sandbox answers by killing it (seccomp) ends the
 * process after "trying"; the supervisor logs the death and restarts it.
 * The next incarnation goes on at the next step: the step number lives in
 * its own stats region (counter 0), which outlives it. After the last step
 * it says "rr-evil: all N attacks made" and then behaves, freeing what it
 * receives, so that the shutdown census can come out clean.
 *
 * The attacks work only on what the process holds: no path, address or pid
 * is passed in. Peers are found the way an intruder would, in /proc.
 */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/svc.h"

#define BURST 64
#define PEERS_MAX 64

static volatile sig_atomic_t stop, go;

static void on_go(int sig)
{
    (void)sig;
    go = 1;
}
static struct ipc_svc svc;
static unsigned step_no;
static const char *step_name;

/* ---- reporting ---- */

static void trying(unsigned n, const char *name)
{
    step_no = n;
    step_name = name;
    fprintf(stderr, "rr-evil: step %u %s: trying\n", n, name);
}

static void contained(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void contained(const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rr-evil: step %u %s: contained: %s\n", step_no, step_name, why);
}

static void breach(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void breach(const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rr-evil: step %u %s: BREACH: %s\n", step_no, step_name, what);
}

/* ---- peers, found in /proc ---- */

static pid_t peers[PEERS_MAX];
static unsigned npeers;

/* Our supervisor and every other process it started: the services and
 * their standbys, but not us nor our own standby (this program too). Other
 * supervisors' processes are left alone: a test must not touch them. */
static void find_peers(void)
{
    pid_t self = getpid(), sup = getppid();
    npeers = 0;
    peers[npeers++] = sup;
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && npeers < PEERS_MAX) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        /* "PID (COMM) STATE PPID ...": COMM may hold spaces and parens. */
        char *rp = strrchr(buf, ')');
        char st;
        long ppid;
        if (!rp || sscanf(rp + 1, " %c %ld", &st, &ppid) != 2 || ppid != sup)
            continue;
        if (strstr(buf, "(rr-evil)"))
            continue;
        peers[npeers++] = (pid_t)pid;
    }
    closedir(d);
}

/* ---- the attacks ---- */

static void atk_signal_peers(void)
{
    find_peers();
    if (!npeers)
        return contained("no peer process could be found in /proc");
    unsigned hit = 0;
    for (unsigned i = 0; i < npeers; i++)
        if (kill(peers[i], 0) == 0) {
            breach("may signal pid %d (kill -0 succeeded)", (int)peers[i]);
            hit++;
        }
    if (!hit)
        contained("kill -0 of each of %u peers failed", npeers);
}

static void atk_ptrace_peers(void)
{
    find_peers();
    unsigned hit = 0;
    for (unsigned i = 0; i < npeers; i++) {
        if (ptrace(PTRACE_ATTACH, peers[i], NULL, NULL) == 0) {
            breach("attached to pid %d", (int)peers[i]);
            waitpid(peers[i], NULL, __WALL);
            ptrace(PTRACE_DETACH, peers[i], NULL, NULL);
            hit++;
        }
    }
    if (!hit)
        contained("PTRACE_ATTACH to each of %u peers failed", npeers);
}

static void atk_proc_fds(void)
{
    find_peers();
    unsigned tried = 0, hit = 0;
    for (unsigned i = 0; i < npeers; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/mem", (int)peers[i]);
        int fd = open(path, O_RDWR);
        tried++;
        if (fd >= 0) {
            breach("opened %s", path);
            close(fd);
            hit++;
        }
        for (int n = 0; n < 64; n++) {
            snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)peers[i], n);
            fd = open(path, O_RDWR);
            tried++;
            if (fd >= 0) {
                breach("opened %s read-write", path);
                close(fd);
                hit++;
            }
        }
    }
    if (!hit)
        contained("%u opens of peers' /proc/PID/mem and fd/N failed", tried);
}

static void atk_config_write(void)
{
    /* The blob the supervisor wrote for us: mapping it writable, writing it,
     * or growing it would let us rewrite our own orders. */
    unsigned hit = 0;
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, IPC_SVC_CONFIG_FD, 0);
    if (p != MAP_FAILED) {
        breach("mapped the config blob writable");
        munmap(p, 4096);
        hit++;
    }
    char junk[16] = "evil";
    if (pwrite(IPC_SVC_CONFIG_FD, junk, sizeof junk, 64) >= 0) {
        breach("wrote the config blob");
        hit++;
    }
    if (fcntl(IPC_SVC_CONFIG_FD, F_GET_SEALS) >= 0 && ftruncate(IPC_SVC_CONFIG_FD, 1 << 20) == 0) {
        breach("grew the config blob");
        hit++;
    }
    if (!hit)
        contained("mmap writable, pwrite and ftruncate of the config blob failed");
}

static void atk_supervisor(void)
{
    pid_t sup = getppid();
    if (kill(sup, SIGKILL) == 0)
        return breach("SIGKILL to the supervisor (pid %d) was accepted", (int)sup);
    contained("SIGKILL to the supervisor (pid %d): %s", (int)sup, strerror(errno));
}

/* Hostile handles on our output ring: out of range, a buffer we do not
 * own (the first one owned by someone else) and a free one, which the
 * router must drop and count; then one of ours with no bytes in it, which
 * is a packet like any other (ours to publish) and the router's once taken. */
static void atk_forged_handles(void)
{
    if (!svc.n_out)
        return contained("no output ring to forge on");
    uint32_t other = IPC_BUF_NONE, freeb = IPC_BUF_NONE;
    for (uint32_t b = 0; b < svc.pool.nbufs; b++) {
        uint16_t o = ipc_pool_owner(&svc.pool, b);
        if (o == IPC_OWNER_FREE && freeb == IPC_BUF_NONE)
            freeb = b;
        else if (o != IPC_OWNER_FREE && o != svc.pool.self && other == IPC_BUF_NONE)
            other = b;
    }
    ipc_buf mine;
    uint32_t got = ipc_pool_alloc(&svc.pool, &mine, 1);
    uint32_t forged[] = {svc.pool.nbufs, 0xfffffff0u, other, freeb, got ? mine : IPC_BUF_NONE};
    struct ipc_ring_prod *p = &svc.out[0];
    uint32_t idx, n = ipc_ring_reserve(p, sizeof forged / sizeof forged[0], &idx);
    for (uint32_t i = 0; i < n; i++)
        *ipc_ring_prod_slot(p, idx + i) = forged[i];
    ipc_ring_submit(p, n);
    ipc_wake_mark(&svc.wake, p);
    ipc_svc_flush(&svc);
    contained("published %u forged handles (out of range, another's %u, free %u, ours %u of no bytes)", n, other, freeb,
              got ? mine : IPC_BUF_NONE);
    /* Ours is freed only if the ring had no room for it. Once published it
     * is the router's to take and free: freeing it here as well races the
     * router's take, and when the router has freed it between our owner
     * check and our stores, it ends on two free lists (a damage
     * docs/security.md accepts, which the census would count as lost and
     * duplicated, not a forged handle). */
    if (got && n < sizeof forged / sizeof forged[0])
        ipc_pool_free(&svc.pool, &mine, 1);
}

/* Chains the router must refuse before it follows them: a loop, a link out
 * of range, a frame length past the frame, a packet length that lies. */
static void atk_hostile_chains(void)
{
    if (!svc.n_out)
        return contained("no output ring");
    ipc_buf b[8];
    uint32_t n = ipc_pool_alloc(&svc.pool, b, 8);
    if (n < 8) {
        ipc_pool_free(&svc.pool, b, n);
        return contained("the pool had no 8 buffers for us");
    }
    for (int i = 0; i < 8; i++) {
        struct ipc_meta *m = ipc_pool_meta(&svc.pool, b[i]);
        m->off = IPC_HEADROOM;
        m->len = 60;
        m->next = IPC_BUF_NONE;
        m->pkt_len = 60;
        m->in_port = svc.cfg->port;
    }
    ipc_pool_meta(&svc.pool, b[0])->next = b[1]; /* a loop: b0 -> b1 -> b0 */
    ipc_pool_meta(&svc.pool, b[1])->next = b[0];
    ipc_pool_meta(&svc.pool, b[0])->pkt_len = 120;
    ipc_pool_meta(&svc.pool, b[2])->next = svc.pool.nbufs + 7; /* out of range */
    ipc_pool_meta(&svc.pool, b[2])->pkt_len = 120;
    ipc_pool_meta(&svc.pool, b[3])->len = 0xffff; /* past the frame */
    ipc_pool_meta(&svc.pool, b[3])->pkt_len = 0xffff;
    ipc_pool_meta(&svc.pool, b[4])->pkt_len = 60000; /* lies */
    ipc_pool_meta(&svc.pool, b[5])->off = 0xfff0;
    ipc_buf send[] = {b[0], b[2], b[3], b[4], b[5]};
    uint32_t sent = ipc_ring_enq_burst(&svc.out[0], send, 5);
    ipc_wake_mark(&svc.wake, &svc.out[0]);
    ipc_svc_flush(&svc);
    /* What was not published is still ours; b1 went with the loop, b6 and b7
     * were spare. */
    for (uint32_t i = sent; i < 5; i++) {
        ipc_pool_meta(&svc.pool, send[i])->next = IPC_BUF_NONE;
        ipc_pool_free(&svc.pool, &send[i], 1);
    }
    ipc_pool_free(&svc.pool, b + 6, 2);
    contained("published %u hostile chains (a loop, a link out of range, bad lengths and offsets)", sent);
}

static void atk_ring_headers(void)
{
    /* Our rings' shared headers: geometry, owners and indices. Peers keep
     * their own copy of the geometry; the supervisor repairs the header from
     * its copy when it reclaims after our death. */
    for (unsigned i = 0; i < svc.n_in; i++) {
        struct ipc_ring_shared *sh = svc.in[i].sh;
        sh->size = 0xffffffffu;
        sh->mask = 0x7fffffffu;
        sh->prod_owner = 0xfff;
        sh->cons_owner = 0;
    }
    for (unsigned i = 0; i < svc.n_out; i++) {
        struct ipc_ring_shared *sh = svc.out[i].sh;
        sh->size = 3;
        sh->mask = 0xffff0000u;
        sh->id = 0xffffffffu;
        sh->prod_owner = 0;
        sh->cons_owner = 0xfff;
    }
    contained("scribbled the geometry and owners of %u rings; dying now so the supervisor must reclaim through them",
              svc.n_in + svc.n_out);
    fflush(stderr);
    /* Die holding buffers, with the headers scribbled: the reclaim is the
     * supervisor's to get right. */
    ipc_buf b[16];
    ipc_pool_alloc(&svc.pool, b, 16);
    _exit(3);
}

static void atk_stats(void)
{
    static const char junk[] = "\"\\\n\x01\x7f\xff{}[],:";
    for (unsigned i = 1; i < IPC_SVC_MAX_CTR; i++)
        for (unsigned k = 0; k < IPC_CTR_NAME; k++)
            svc.stats->ctr_name[i][k] = junk[(i + k) % (sizeof(junk) - 1)];
    ipc_st_rel(&svc.stats->nctr, UINT32_MAX);
    ipc_st_rel(&svc.stats->nstage, UINT32_MAX);
    ipc_st_rel(&svc.stats->pid, 1); /* not ours: init's */
    contained("stats names without NUL, counts past the region, pid 1 claimed");
}

static void atk_pool_header(void)
{
    /* Every process keeps its own copy of the pool's geometry from attach;
     * a new process attaching must refuse a header that lies. */
    struct ipc_pool_hdr *h = svc.pool.hdr;
    h->nbufs = 0xffffffffu;
    h->frame_size = 17;
    h->meta_off = 0xfffffffffff0ull;
    h->depot_off = 3;
    contained("scribbled the pool header's geometry");
}

/* System calls that no driver makes. Each is its own step: the first that
 * the filter answers ends the process. */
static void atk_socket(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd >= 0) {
        close(fd);
        return breach("socket(AF_INET) succeeded");
    }
    contained("socket(AF_INET): %s", strerror(errno));
}

static void atk_exec(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "echo 'rr-evil: step %u %s: BREACH: a shell ran' >&2", step_no, step_name);
    char *argv[] = {"sh", "-c", cmd, NULL};
    execv("/bin/sh", argv);
    contained("execv(/bin/sh): %s", strerror(errno));
}

static void atk_fork(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    if (p > 0) {
        waitpid(p, NULL, 0);
        return breach("fork succeeded");
    }
    contained("fork: %s", strerror(errno));
}

static void atk_open_file(void)
{
    int fd = open("/etc/passwd", O_RDONLY);
    if (fd >= 0) {
        close(fd);
        return breach("opened /etc/passwd");
    }
    contained("open(/etc/passwd): %s", strerror(errno));
}

static const struct {
    const char *name;
    void (*fn)(void);
} attacks[] = {
    {"signal-peers", atk_signal_peers},
    {"ptrace-peers", atk_ptrace_peers},
    {"proc-fds", atk_proc_fds},
    {"kill-supervisor", atk_supervisor},
    {"config-write", atk_config_write},
    {"forged-handles", atk_forged_handles},
    {"hostile-chains", atk_hostile_chains},
    {"stats", atk_stats},
    {"ring-headers", atk_ring_headers},
    {"pool-header", atk_pool_header},
    {"socket", atk_socket},
    {"fork", atk_fork},
    {"open-file", atk_open_file},
    {"exec", atk_exec},
};
#define NATTACKS (sizeof attacks / sizeof attacks[0])

static const char *const ctr_names[] = {"evil_step", "evil_rx"};

int main(void)
{
    struct ipc_err err;
    ipc_svc_catch_stop(&stop); /* first: ipc_svc_open enters the sandbox */
    /* The handler before the sandbox, whose filters have no rt_sigaction. */
    signal(SIGUSR1, on_go);
    if (ipc_svc_open(&svc, 0, &err) < 0) {
        fprintf(stderr, "rr-evil: %s\n", err.msg);
        return 111;
    }
    /* Counter 0 still holds the step our predecessor reached. */
    uint64_t next = ipc_ld_rlx(&svc.stats->ctr[0]);
    _Atomic uint64_t *ctr = ipc_svc_counters(&svc, ctr_names, 2);
    /* Under the run-stage filter from here, as a real service would be. */
    if (ipc_svc_ready(&svc, &err) < 0) {
        fprintf(stderr, "rr-evil: %s\n", err.msg);
        return 111;
    }
    /* The first incarnation waits for the test's SIGUSR1, so that the
     * attacks run under the test's traffic; the next ones go on at once. */
    if (next == 0) {
        while (!go && !stop) {
            ipc_svc_beat(&svc);
            ipc_svc_wait(&svc, 10);
        }
    }
    for (; next < NATTACKS && !stop; next++) {
        /* Recorded before the attempt: an attempt that kills us is not made
         * again by our successor. */
        ipc_st_rlx(&ctr[0], next + 1);
        trying((unsigned)next + 1, attacks[next].name);
        attacks[next].fn();
        ipc_svc_beat(&svc);
        /* Spread over a few seconds of the test's traffic. */
        struct timespec gap = {0, 150 * 1000 * 1000};
        nanosleep(&gap, NULL);
    }
    if (next == NATTACKS && ipc_ld_rlx(&ctr[0]) == NATTACKS) {
        fprintf(stderr, "rr-evil: all %zu attacks made\n", NATTACKS);
        ipc_st_rlx(&ctr[0], NATTACKS + 1); /* said once */
    }
    while (!stop) {
        for (unsigned i = 0; i < svc.n_in; i++) {
            ipc_buf b[BURST];
            uint32_t n;
            while ((n = ipc_ring_recv(&svc.in[i], &svc.pool, b, BURST)) > 0) {
                ipc_count(&ctr[1], n);
                ipc_pool_free(&svc.pool, b, n);
            }
        }
        ipc_svc_flush(&svc);
        ipc_svc_beat(&svc);
        ipc_svc_wait(&svc, 10);
    }
    ipc_svc_close(&svc);
    return 0;
}
