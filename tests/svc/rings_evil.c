/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/rings_evil.c: rr-rings-evil, a hostile service in a driver's
 * place for tests/integ/iso_rings.sh and iso_hoard.sh (issue 44, attacks 7
 * to 9). It gets the fds a driver gets, behaves until SIGUSR1 from the test,
 * then makes the attack its port's name picks, until the supervisor kills it:
 *
 *   port lc*   lies as a consumer: first rewrites the owner words of buffers
 *              in flight to another driver's id (that driver never held
 *              them), then moves cons of its input ring far past prod and
 *              keeps it there, taking nothing;
 *   port lp*   lies as a producer: moves prod of its output ring 2^31 past
 *              cons and keeps it there;
 *   port hog*  hoards: allocates every buffer it can get, never frees, and
 *              writes its own id into the owner word of every buffer in
 *              flight (held by another service or in a ring).
 *
 * It says on stderr what it did ("rr-rings-evil: ..."). Only the first
 * instance attacks: counter 0 of its stats region, which outlives it, says
 * it was done, and its successors behave (free what they receive), so that
 * the test sees the other ports recover and the shutdown census is about
 * what the attack left.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ipc/svc.h"

#define BURST 64

static volatile sig_atomic_t stop, go;
static struct ipc_svc svc;

static void on_go(int sig)
{
    (void)sig;
    go = 1;
}

/* The sandbox has no nanosleep: a sleep on our eventfd, as every service's. */
static void nap_ms(int ms)
{
    ipc_svc_wait(&svc, ms);
}

/* Another driver's owner id: a service id on some buffer that is neither
 * ours nor our input ring's producer's (the router's). */
static uint16_t victim_id(uint16_t router)
{
    for (uint32_t b = 0; b < svc.pool.nbufs; b++) {
        uint16_t o = ipc_pool_owner(&svc.pool, b);
        if (o >= IPC_OWNER_SERVICE_MIN && o <= IPC_OWNER_SERVICE_MAX && o != svc.pool.self && o != router)
            return o;
    }
    return 0;
}

static void lie_cons(void)
{
    if (!svc.n_in)
        return;
    struct ipc_ring_cons *c = &svc.in[0];
    uint16_t router = c->sh->prod_owner, victim = victim_id(router);
    unsigned rewritten = 0;
    for (uint32_t b = 0; b < svc.pool.nbufs && victim && rewritten < 200; b++) {
        uint16_t o = ipc_pool_owner(&svc.pool, b);
        if (o >= IPC_OWNER_SERVICE_MIN && o <= IPC_OWNER_SERVICE_MAX && o != svc.pool.self && o != victim) {
            ipc_st_rlx(&svc.pool.meta[b].owner, victim);
            rewritten++;
        }
    }
    fprintf(stderr, "rr-rings-evil: rewrote the owner words of %u buffers in flight to owner %u; moving cons of %.40s "
            "past prod\n", rewritten, victim, c->sh->shm.name);
    while (!stop) {
        ipc_st_rel(&c->sh->cons, ipc_ld_acq(&c->sh->prod) + 0x40000000u);
        ipc_svc_beat(&svc);
        nap_ms(1);
    }
}

static void lie_prod(void)
{
    if (!svc.n_out)
        return;
    struct ipc_ring_shared *sh = svc.out[0].sh;
    fprintf(stderr, "rr-rings-evil: moving prod of %.40s 2^31 past cons\n", sh->shm.name);
    while (!stop) {
        ipc_st_rel(&sh->prod, ipc_ld_acq(&sh->cons) + 0x80000000u);
        ipc_wake_one(&svc.out[0]);
        ipc_svc_beat(&svc);
        nap_ms(1);
    }
}

static void hoard(void)
{
    fprintf(stderr, "rr-rings-evil: hoarding the pool and stealing owner words in flight\n");
    uint64_t got = 0, stolen = 0;
    bool said = false;
    while (!stop) {
        ipc_buf b[BURST];
        uint32_t n;
        while ((n = ipc_pool_alloc(&svc.pool, b, BURST)) > 0)
            got += n;
        /* Not FREE: a free buffer sits on a magazine, which is the depot's
         * to check. Kernel-lent ones are a driver's and the kernel's. */
        for (uint32_t i = 0; i < svc.pool.nbufs; i++) {
            uint16_t o = ipc_pool_owner(&svc.pool, i);
            if (o != IPC_OWNER_FREE && o != svc.pool.self && o <= IPC_OWNER_SERVICE_MAX) {
                ipc_st_rlx(&svc.pool.meta[i].owner, svc.pool.self);
                stolen++;
            }
        }
        if (!said && got) {
            fprintf(stderr, "rr-rings-evil: holding %llu buffers, %llu owner words stolen so far\n",
                    (unsigned long long)got, (unsigned long long)stolen);
            said = true;
        }
        ipc_svc_beat(&svc);
        nap_ms(2);
    }
}

/* One pass of a driver that behaves: take what the router sends, free it. */
static void behave(_Atomic uint64_t *rx)
{
    for (unsigned i = 0; i < svc.n_in; i++) {
        ipc_buf b[BURST];
        uint32_t n;
        while ((n = ipc_ring_recv(&svc.in[i], &svc.pool, b, BURST)) > 0) {
            ipc_count(rx, n);
            ipc_pool_free(&svc.pool, b, n);
        }
    }
    ipc_svc_flush(&svc);
    ipc_svc_beat(&svc);
    ipc_svc_wait(&svc, 10);
}

static const char *const ctr_names[] = {"evil_done", "evil_rx"};

int main(void)
{
    struct ipc_err err;
    ipc_svc_catch_stop(&stop);
    signal(SIGUSR1, on_go); /* before the sandbox, which has no rt_sigaction */
    if (ipc_svc_open(&svc, 0, &err) < 0) {
        fprintf(stderr, "rr-rings-evil: %s\n", err.msg);
        return 111;
    }
    uint64_t done = ipc_ld_rlx(&svc.stats->ctr[0]);
    _Atomic uint64_t *ctr = ipc_svc_counters(&svc, ctr_names, 2);
    if (ipc_svc_ready(&svc, &err) < 0) {
        fprintf(stderr, "rr-rings-evil: %s\n", err.msg);
        return 111;
    }
    const char *port = svc.cfg->port < svc.cfg->nports ? svc.cfg->ports[svc.cfg->port].name : "";
    void (*attack)(void) = !strncmp(port, "lc", 2) ? lie_cons : !strncmp(port, "lp", 2) ? lie_prod
                           : !strncmp(port, "hog", 3) ? hoard : NULL;
    while (!done && attack && !stop) {
        if (go) {
            ipc_st_rlx(&ctr[0], 1); /* before the attack: the supervisor kills us in it */
            attack();
            break;
        }
        behave(&ctr[1]); /* until told */
    }
    while (!stop)
        behave(&ctr[1]);
    ipc_svc_close(&svc);
    return 0;
}
