/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/evil_zone.c: rr-evil-zone, a compromised driver for
 * tests/integ/iso_zones.sh (issue 44, attack 1: read and rewrite another
 * port's packets). It stands in a driver's place with a driver's fds,
 * takes and frees what the router sends it, and meanwhile scans every
 * frame of the pool it was given for a marker that another port's flow
 * carries (ZONE_MARKER, the payload the test's ping repeats), and rewrites
 * each one it finds. Every second it says on stderr (the supervisor's log):
 *
 *   rr-evil-zone: scans N: marker found F times, rewritten W
 *
 * With a zone of its own, the pool it maps holds its own port's frames
 * only: F stays 0. In the zone all ports share, it finds the other ports'
 * frames (docs/security.md, "Trust zones").
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ipc/svc.h"

#define BURST 64
#define ZONE_MARKER "RRZONE-MARK-0044" /* 16 bytes: ping -p takes up to 16 */
#define ZONE_FORGED "XXXXXXXXXXXXXXXX"
#define SCAN_US 50000
#define SAY_NS 1000000000ull

static volatile sig_atomic_t stop;

/* One pass over the whole frame area: count each marker, and spoil it. */
static void scan(const struct ipc_pool *pool, uint64_t *found, uint64_t *rewritten)
{
    const size_t mlen = sizeof(ZONE_MARKER) - 1;
    uint8_t *p = pool->frames, *end = pool->frames + (size_t)pool->nbufs * pool->frame_size;
    while (p < end) {
        uint8_t *hit = memmem(p, (size_t)(end - p), ZONE_MARKER, mlen);
        if (!hit)
            break;
        (*found)++;
        memcpy(hit, ZONE_FORGED, mlen);
        (*rewritten)++;
        p = hit + mlen;
    }
}

int main(void)
{
    struct ipc_svc svc;
    struct ipc_err err;
    ipc_svc_catch_stop(&stop);
    if (ipc_svc_open(&svc, 0, &err) < 0) {
        fprintf(stderr, "rr-evil-zone: %s\n", err.msg);
        return 111;
    }
    if (ipc_svc_ready(&svc, &err) < 0) {
        fprintf(stderr, "rr-evil-zone: %s\n", err.msg);
        return 111;
    }
    fprintf(stderr, "rr-evil-zone: scanning a pool of %u frames of %u bytes (zone %u)\n", svc.pool.nbufs,
            svc.pool.frame_size, svc.cfg->zone);
    uint64_t found = 0, rewritten = 0, scans = 0, said = ipc_svc_now_ns();
    while (!stop && !svc.orphan_stop) {
        for (unsigned i = 0; i < svc.n_in; i++) {
            ipc_buf b[BURST];
            uint32_t n;
            while ((n = ipc_ring_recv(&svc.in[i], &svc.pool, b, BURST)) > 0)
                ipc_pool_free(&svc.pool, b, n);
        }
        scan(&svc.pool, &found, &rewritten);
        scans++;
        uint64_t now = ipc_svc_now_ns();
        if (now - said >= SAY_NS) {
            fprintf(stderr, "rr-evil-zone: scans %llu: marker found %llu times, rewritten %llu\n",
                    (unsigned long long)scans, (unsigned long long)found, (unsigned long long)rewritten);
            said = now;
        }
        ipc_svc_beat(&svc);
        ipc_svc_flush(&svc);
        ipc_svc_wait_us(&svc, SCAN_US);
    }
    ipc_pool_flush(&svc.pool);
    ipc_svc_close(&svc);
    return 0;
}
