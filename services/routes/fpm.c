/* SPDX-License-Identifier: MIT */
/*
 * services/routes/fpm.c: FPM frames from zebra's dplane_fpm_nl to route
 * records (services/routes/fpm.h).
 */
#include "services/routes/fpm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const char *const rr_fpm_ctr_names[RR_FPM_NCTR] = {
    "fpm_connects",   "fpm_frames",    "fpm_bad_frames", "fpm_refused",   "fpm_route_msgs", "fpm_adds",
    "fpm_dels",       "fpm_other_table", "fpm_own_origin", "fpm_not_unicast", "fpm_unsupported", "fpm_malformed",
};
_Static_assert(RR_FPM_NCTR == 12, "a name for each FPM counter");

void rr_fpm_init(struct rr_fpm *f, int lfd, uint32_t table)
{
    f->lfd = lfd;
    f->cfd = -1;
    f->lost = false;
    f->have = 0;
    f->p.table = table;
    f->p.src = RTC_SRC_FPM;
    for (unsigned i = 0; i < RN_NCTR; i++) /* carried on from a predecessor (main.c restored ctr[]) */
        f->p.ctr[i] = f->ctr[FPM_NCTR_ + i];
}

unsigned rr_fpm_pollfds(const struct rr_fpm *f, struct pollfd *fds)
{
    unsigned n = 0;
    if (f->lfd >= 0)
        fds[n++] = (struct pollfd){.fd = f->lfd, .events = POLLIN};
    if (f->cfd >= 0)
        fds[n++] = (struct pollfd){.fd = f->cfd, .events = POLLIN};
    return n;
}

long rr_fpm_frames(struct rr_fpm *f, const uint8_t *buf, size_t len, rn_emit_fn emit, void *arg)
{
    size_t off = 0;
    while (len - off >= RR_FPM_HDR) {
        const uint8_t *h = buf + off;
        size_t flen = (size_t)h[2] << 8 | h[3];
        if (h[0] != 1 || h[1] != 1 || flen < RR_FPM_HDR + 16) { /* a netlink header at least */
            f->ctr[FPM_BAD_FRAMES]++;
            return -1;
        }
        if (len - off < flen)
            break; /* the rest of it is still on its way */
        size_t used;
        unsigned fl = rn_parse(&f->p, h + RR_FPM_HDR, flen - RR_FPM_HDR, emit, arg, &used);
        if (fl & RN_F_BAD) {
            f->ctr[FPM_BAD_FRAMES]++;
            return -1;
        }
        if (used < flen - RR_FPM_HDR) /* no room: this frame again later */
            break;
        f->ctr[FPM_FRAMES]++;
        off += flen;
    }
    return (long)off;
}

static void fpm_close(struct rr_fpm *f)
{
    close(f->cfd);
    f->cfd = -1;
    f->have = 0;
    f->lost = true;
}

bool rr_fpm_pump(struct rr_fpm *f, rn_emit_fn emit, void *arg)
{
    bool moved = false;
    if (f->lfd >= 0) {
        int c;
        while ((c = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
            if (f->cfd >= 0) { /* one zebra at a time */
                close(c);
                f->ctr[FPM_REFUSED]++;
                continue;
            }
            f->cfd = c;
            f->ctr[FPM_CONNECTS]++;
            fprintf(stderr, "rr-routes: FPM: a client connected\n");
            moved = true;
        }
    }
    for (unsigned rounds = 0; f->cfd >= 0 && rounds < 64; rounds++) {
        bool got = false;
        if (f->have < sizeof(f->buf)) {
            ssize_t n = recv(f->cfd, f->buf + f->have, sizeof(f->buf) - f->have, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                fprintf(stderr, "rr-routes: FPM: the client went away (%s); its routes stay for the grace period\n",
                        n == 0 ? "closed" : strerror(errno));
                fpm_close(f);
                moved = true;
                break;
            }
            if (n > 0) {
                f->have += (size_t)n;
                moved = got = true;
            }
        }
        long used = rr_fpm_frames(f, f->buf, f->have, emit, arg);
        if (used < 0) {
            fprintf(stderr, "rr-routes: FPM: a malformed frame; closing the connection (zebra replays its table)\n");
            fpm_close(f);
            moved = true;
            break;
        }
        if (used == 0 && got)
            continue; /* a partial frame: its rest may be there */
        if (used == 0)
            break; /* nothing more to read, or no room in the channel */
        memmove(f->buf, f->buf + used, f->have - (size_t)used);
        f->have -= (size_t)used;
    }
    for (unsigned i = 0; i < RN_NCTR; i++)
        f->ctr[FPM_NCTR_ + i] = f->p.ctr[i];
    return moved;
}
