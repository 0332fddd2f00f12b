/* SPDX-License-Identifier: MIT */
/*
 * supervisor/sched_self.c: the supervisor's own CPU while services forward
 * around it (issue 43). spawn.c keeps a new service instance off the
 * path's CPU; this does the same for a new supervisor and for its long
 * set-up work.
 *
 * A supervisor that adopts running services (`up` after a kill, or the
 * re-exec of `upgrade supervisor`) maps every region, checks it, rebuilds
 * the FIBs and spawns a standby for each service before it serves, all
 * while the services forward without it: on a machine of two CPUs that
 * work would take the CPU of the drivers in front of the shortest queues.
 * So it runs its set-up in SCHED_IDLE and goes back to the class it was
 * started in when its event loop begins (the handover of the router to
 * the new FIBs runs from there, at the path's priority). Its pulse, which
 * the services read against orphan_grace_ms, is still until then: a
 * thread left in the original class raises the supervisor anyway after a
 * quarter of orphan_grace_ms (at most SUP_SELF_IDLE_MS: the control socket
 * waits too), and the log says so.
 *
 * sup_pace: between slices of a long loop (the FIB rebuild of an adoption)
 * the supervisor naps briefly while a service is runnable, so that a
 * raised set-up does not hold a CPU for whole scheduler slices.
 *
 * sup_old_fibs_tick: the old FIBs an adoption read are freed in an idle
 * thread of ours, not in the exit of the router that read them last.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SUP_SELF_IDLE_MS 2000u       /* the longest an adoption stays idle */
#define SUP_PACE_SLICE_NS 1000000ull  /* work this long between two looks */
#define SUP_PACE_NAP_NS 200000l       /* then nap this long, if a service waits */
#define SUP_PACE_MAX_NS 50000000ull   /* at most this much napping per loop */

static struct {
    bool on;
    pthread_t th;
    int efd;            /* written when the set-up is done: the bound's thread ends */
    pid_t tid;          /* the supervisor's main thread */
    int policy;         /* the class it was started in */
    struct sched_param param;
    uint32_t bound_ms;
    uint64_t since_ns;
    atomic_bool raised; /* by the bound */
} self = {.efd = -1};

static void *bound_main(void *arg)
{
    (void)arg;
    struct pollfd p = {.fd = self.efd, .events = POLLIN};
    int r;
    while ((r = poll(&p, 1, (int)self.bound_ms)) < 0 && errno == EINTR)
        ;
    if (r == 0 && sched_setscheduler(self.tid, self.policy, &self.param) == 0) {
        atomic_store(&self.raised, true);
        sup_warn("supervisor: set-up not done within %u ms in SCHED_IDLE; raised to %s", self.bound_ms,
                 self.policy == SCHED_BATCH ? "SCHED_BATCH" : "SCHED_OTHER");
    }
    return NULL;
}

void sup_self_idle(struct sup *s)
{
    if (self.on || !sup_sched_can_raise())
        return;
    self.policy = sched_getscheduler(0);
    if (self.policy < 0 || sched_getparam(0, &self.param) < 0 || (self.policy != SCHED_OTHER && self.policy != SCHED_BATCH))
        return; /* a real-time supervisor was put there on purpose */
    self.tid = (pid_t)syscall(SYS_gettid);
    self.bound_ms = s->m.router.orphan_grace_ms / 4;
    if (self.bound_ms > SUP_SELF_IDLE_MS || !self.bound_ms)
        self.bound_ms = SUP_SELF_IDLE_MS;
    atomic_store(&self.raised, false);
    if ((self.efd = eventfd(0, EFD_CLOEXEC)) < 0)
        return;
    /* Made before the lowering: a new thread inherits its creator's class. */
    if (pthread_create(&self.th, NULL, bound_main, NULL) != 0) {
        close(self.efd);
        self.efd = -1;
        return;
    }
    self.on = true;
    self.since_ns = sup_now_ns();
    struct sched_param sp = {.sched_priority = 0};
    if (sched_setscheduler(0, SCHED_IDLE, &sp) < 0) {
        sup_warn("supervisor: cannot set up in SCHED_IDLE: %s", strerror(errno));
        sup_self_serve(s);
        return;
    }
    sup_log("supervisor: adopting in SCHED_IDLE until it serves (at most %u ms)", self.bound_ms);
}

void sup_self_serve(struct sup *s)
{
    (void)s;
    if (!self.on)
        return;
    self.on = false;
    uint64_t one = 1;
    if (write(self.efd, &one, sizeof(one)) != sizeof(one))
        sup_warn("supervisor: cannot end the set-up's bound: %s", strerror(errno));
    pthread_join(self.th, NULL);
    close(self.efd);
    self.efd = -1;
    if (sched_setscheduler(0, self.policy, &self.param) < 0)
        sup_warn("supervisor: cannot leave SCHED_IDLE: %s", strerror(errno));
    else if (!atomic_load(&self.raised))
        sup_log("supervisor: set-up done in %.1f ms in SCHED_IDLE; serving", (double)(sup_now_ns() - self.since_ns) / 1e6);
}

/* Does one of the services wait for a CPU, or use one? */
static bool svc_runnable(const struct sup_pace *p)
{
    for (int i = 0; i < p->npid; i++)
        if (p->pid[i] > 0 && sup_proc_state(p->pid[i]) == 'R')
            return true;
    return false;
}

void sup_pace(struct sup_pace *p)
{
    if (++p->n % 64)
        return;
    uint64_t now = sup_now_ns();
    if (!p->slice_ns) {
        p->slice_ns = now;
        return;
    }
    if (now - p->slice_ns < SUP_PACE_SLICE_NS || p->napped_ns >= SUP_PACE_MAX_NS)
        return;
    if (svc_runnable(p)) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = SUP_PACE_NAP_NS};
        nanosleep(&ts, NULL);
        uint64_t after = sup_now_ns();
        p->napped_ns += after - now;
        p->naps++;
        now = after;
    }
    p->slice_ns = now;
}

/*
 * The old FIBs an adoption held (adopt.c): their last close frees every
 * page of them, tens of MB, which takes the closing thread tens of ms of
 * CPU. A thread of its own in SCHED_IDLE does it, so it takes only a CPU
 * that nothing on the path wants; the loop goes on meanwhile.
 */
static void *old_fibs_main(void *arg)
{
    int *fd = arg;
    struct sched_param sp = {.sched_priority = 0};
    (void)sched_setscheduler(0, SCHED_IDLE, &sp); /* this thread only: a tid's class */
    for (int i = 0; i < 2; i++)
        if (fd[i] >= 0)
            close(fd[i]); /* the pages go on our way back from it */
    free(fd);
    return NULL;
}

void sup_old_fibs_tick(struct sup *s)
{
    if (!s->n_old_fibs)
        return;
    bool gone = s->shutting_down;
    for (int i = 0; i < s->nsvcs && !gone; i++)
        if (s->svcs[i].kind == IPC_SVC_ROUTER)
            gone = s->svcs[i].pid != s->old_fib_reader || sup_proc_state(s->old_fib_reader) == '?';
    if (!gone)
        return;
    int n = s->n_old_fibs;
    s->n_old_fibs = 0;
    int *fd = malloc(2 * sizeof(int));
    pthread_t th;
    pthread_attr_t at;
    bool threaded = fd && pthread_attr_init(&at) == 0;
    if (threaded) {
        fd[0] = s->old_fib_fd[0];
        fd[1] = n > 1 ? s->old_fib_fd[1] : -1;
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        threaded = pthread_create(&th, &at, old_fibs_main, fd) == 0;
        pthread_attr_destroy(&at);
    }
    if (!threaded) { /* no thread: close them here, on the loop */
        free(fd);
        for (int i = 0; i < n; i++)
            close(s->old_fib_fd[i]);
    }
    sup_log("adoption: the old FIBs let go (the router that read them is gone)%s", threaded ? "" : ", on the loop");
}
