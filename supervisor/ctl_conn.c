/* SPDX-License-Identifier: MIT */
/*
 * supervisor/ctl_conn.c: the control socket's connections. The supervisor
 * has one blocking point, its event loop (loop.c), and a client must never
 * hold it: every connection is non-blocking and lives in a slot of its own
 * (struct sup_ctl_conn), read and written as epoll says it is ready, and
 * closed at its deadline however slowly it trickles bytes. An answer is
 * "OK\n", "ERR\n" or "FAILED\n" (status with a failed service), then the
 * text. The states:
 *
 *   READ   collecting the request line (at most SUP_CTL_REQ_MAX - 1 bytes)
 *   WAIT   a `shaper set`, a neighbour command or an `inject` waiting for
 *          the service's answer (inject.c; each checked each tick), or a
 *          `reload` for the changes it applies (reload.c)
 *   WRITE  sending the answer
 *
 * A client past the open connections it may have is told the supervisor is
 * busy and closed at once. Root (and the supervisor's own uid) may take any
 * of the SUP_CTL_CONNS slots; everyone else (control_group's readers)
 * shares SUP_CTL_CONNS_SHARED of them, at most SUP_CTL_CONNS_PER_UID per
 * uid. So readers who hold every slot they may, trickling a byte at a time
 * and reconnecting as each deadline closes them, still leave root's slots
 * free, and root's `route add` is answered. Who a client is comes from the
 * kernel (SO_PEERCRED) at accept, before it sends a byte. The deadline is
 * the whole exchange's, from the accept, not an idle time that each byte
 * would renew: a trickle does not extend it. The requests themselves are
 * ctl.c's.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "supervisor/filter.h"
#include "supervisor/inject.h"
#include "supervisor/reload.h"
#include "supervisor/routes.h"
#include "supervisor/shaper_ctl.h"

/* The answer phase's own deadline: a client that stops reading is dropped. */
#define CTL_WRITE_NS 2000000000ull

/* What a client sent past its request is read and dropped before the close:
 * a Unix socket closed with unread bytes resets the connection, and the
 * client would lose its answer. Bounded: the rest is the client's problem. */
static void conn_drain(int fd)
{
    char junk[1024];
    for (int i = 0; i < 16 && recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
        ;
}

static void conn_close(struct sup *s, struct sup_ctl_conn *c)
{
    if (c->out)
        fclose(c->out);
    free(c->body);
    epoll_ctl(s->ep_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    *c = (struct sup_ctl_conn){.st = SUP_CONN_FREE, .fd = -1};
}

/* Send what the socket takes now; close once the whole answer is out. */
static void conn_write(struct sup *s, struct sup_ctl_conn *c)
{
    while (c->off < c->len) {
        ssize_t w = send(c->fd, c->body + c->off, c->len - c->off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return; /* EPOLLOUT brings us back */
        if (w <= 0)
            break; /* the client went away: nothing more to say */
        c->off += (size_t)w;
    }
    conn_drain(c->fd);
    conn_close(s, c);
}

/* The answer is complete: "OK\n" or "ERR\n", then the text, from now on. */
static void conn_answer(struct sup *s, struct sup_ctl_conn *c, enum sup_answer ans)
{
    fclose(c->out);
    c->out = NULL;
    const char *head = ans == SUP_ANS_OK ? "OK\n" : ans == SUP_ANS_FAILED ? "FAILED\n" : "ERR\n";
    size_t hl = strlen(head);
    char *all = malloc(hl + c->len + 1);
    if (!all) {
        conn_close(s, c);
        return;
    }
    memcpy(all, head, hl);
    memcpy(all + hl, c->body, c->len);
    free(c->body);
    c->body = all;
    c->len += hl;
    c->off = 0;
    c->st = SUP_CONN_WRITE;
    c->deadline_ns = sup_now_ns() + CTL_WRITE_NS;
    struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = SUP_POLL_KEY(SUP_POLL_CONN, c - s->conns)};
    epoll_ctl(s->ep_fd, EPOLL_CTL_MOD, c->fd, &ev);
    conn_write(s, c);
}

static void conn_request(struct sup *s, struct sup_ctl_conn *c, bool too_long)
{
    c->out = open_memstream(&c->body, &c->len);
    if (!c->out) {
        conn_close(s, c);
        return;
    }
    c->req[c->have] = '\0';
    enum sup_answer ans;
    if (too_long) {
        fprintf(c->out, "request: longer than %u bytes\n", SUP_CTL_REQ_MAX - 1);
        ans = SUP_ANS_ERR;
    } else if (c->peer_uid != 0 && !c->read_only) {
        /* The socket's mode keeps such a client out already; this holds if
         * someone loosens it. */
        fprintf(c->out, "permission denied: uid %u is not root and not in the control socket's group\n",
                (unsigned)c->peer_uid);
        ans = SUP_ANS_ERR;
    } else {
        s->ctl_iwait = &c->iwait; /* where `inject` leaves its wait */
        ans = sup_ctl_handle(s, c->req, c->out, &c->wait, c->read_only);
        s->ctl_iwait = NULL;
    }
    if (c->wait.pending || c->iwait.pending) {
        c->st = SUP_CONN_WAIT;
        struct epoll_event ev = {.events = 0, .data.u64 = SUP_POLL_KEY(SUP_POLL_CONN, c - s->conns)};
        epoll_ctl(s->ep_fd, EPOLL_CTL_MOD, c->fd, &ev);
        return;
    }
    fflush(c->out);
    conn_answer(s, c, ans);
}

/* Read what has arrived; answer once the line is whole (or the client has
 * said all it will say, or the line is too long). */
static void conn_read(struct sup *s, struct sup_ctl_conn *c)
{
    for (;;) {
        if (c->have == SUP_CTL_REQ_MAX - 1) {
            conn_request(s, c, true);
            return;
        }
        ssize_t n = recv(c->fd, c->req + c->have, SUP_CTL_REQ_MAX - 1 - c->have, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0) {
            conn_close(s, c);
            return;
        }
        if (n == 0) { /* the client shut its side: what it sent is the request */
            conn_request(s, c, false);
            return;
        }
        bool line = memchr(c->req + c->have, '\n', (size_t)n) != NULL;
        c->have += (uint32_t)n;
        if (line) {
            conn_request(s, c, false);
            return;
        }
    }
}

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13; older C libraries lack the name */
#endif

/* Who is asking: root may do everything; a member of control_group (by its
 * gid or a supplementary group) may only read; anyone else nothing. Asked
 * of the kernel at accept, not of anything the client says. */
static void conn_peer(const struct sup *s, struct sup_ctl_conn *c)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);
    c->peer_uid = (uid_t)-1;
    c->read_only = false;
    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return;
    c->peer_uid = cr.uid;
    if (cr.uid == 0 || s->ctl_gid == (gid_t)-1)
        return;
    bool member = cr.gid == s->ctl_gid;
    gid_t groups[256];
    len = sizeof(groups);
    if (!member && getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
        for (size_t i = 0; i < len / sizeof(gid_t) && !member; i++)
            member = groups[i] == s->ctl_gid;
    c->read_only = member;
}

/* Root, or the uid we run as: the slots kept free of everyone else. */
static bool conn_privileged(const struct sup_ctl_conn *c)
{
    return c->peer_uid == 0 || c->peer_uid == geteuid();
}

/* May the client @c (not yet in a slot) have one more connection? */
static bool conn_may_open(const struct sup *s, const struct sup_ctl_conn *c)
{
    if (conn_privileged(c))
        return true;
    unsigned shared = 0, same = 0;
    for (int i = 0; i < SUP_CTL_CONNS; i++) {
        const struct sup_ctl_conn *o = &s->conns[i];
        if (o->st == SUP_CONN_FREE || conn_privileged(o))
            continue;
        shared++;
        same += o->peer_uid == c->peer_uid;
    }
    return shared < SUP_CTL_CONNS_SHARED && same < SUP_CTL_CONNS_PER_UID;
}

void sup_ctl_accept(struct sup *s)
{
    for (;;) {
        int fd = accept4(s->ctl_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        struct sup_ctl_conn *c = NULL;
        for (int i = 0; i < SUP_CTL_CONNS && !c; i++)
            if (s->conns[i].st == SUP_CONN_FREE)
                c = &s->conns[i];
        struct sup_ctl_conn peer = {.fd = fd};
        conn_peer(s, &peer);
        if (!c || !conn_may_open(s, &peer)) {
            static const char busy[] = "ERR\nbusy: " "too many control connections are open; try again\n";
            ssize_t w = send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
            (void)w;
            close(fd);
            continue;
        }
        *c = (struct sup_ctl_conn){.st = SUP_CONN_READ, .fd = fd, .deadline_ns = sup_now_ns() + SUP_CTL_DEADLINE_NS,
                                   .peer_uid = peer.peer_uid, .read_only = peer.read_only};
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SUP_POLL_KEY(SUP_POLL_CONN, c - s->conns)};
        if (epoll_ctl(s->ep_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            c->st = SUP_CONN_FREE;
            c->fd = -1;
            continue;
        }
        conn_read(s, c); /* the request is often there already */
    }
}

void sup_ctl_io(struct sup *s, unsigned idx)
{
    struct sup_ctl_conn *c = &s->conns[idx];
    if (c->st == SUP_CONN_READ)
        conn_read(s, c);
    else if (c->st == SUP_CONN_WRITE)
        conn_write(s, c);
}

void sup_ctl_tick(struct sup *s, uint64_t now)
{
    for (int i = 0; i < SUP_CTL_CONNS; i++) {
        struct sup_ctl_conn *c = &s->conns[i];
        if (c->st == SUP_CONN_WAIT) {
            bool ok;
            bool done = c->iwait.pending                  ? sup_inject_poll(s, &c->iwait, now, c->out, &ok)
                        : c->wait.kind == SUP_WAIT_NEIGH   ? sup_neigh_poll(s, &c->wait, now, c->out, &ok)
                        : c->wait.kind == SUP_WAIT_UPGRADE ? sup_upgrade_poll(s, &c->wait, now, c->out, &ok)
                        : c->wait.kind == SUP_WAIT_RELOAD  ? sup_reload_poll(s, &c->wait, c->out, &ok)
                        : c->wait.kind == SUP_WAIT_ROUTE_LOAD ? sup_route_load_poll(s, &c->wait, c->out, &ok)
                        : c->wait.kind == SUP_WAIT_FILTER  ? sup_filter_poll(s, &c->wait, now, c->out, &ok)
                                                           : sup_shaper_set_poll(s, &c->wait, now, c->out, &ok);
            if (done) {
                fflush(c->out);
                conn_answer(s, c, ok ? SUP_ANS_OK : SUP_ANS_ERR);
            }
        } else if (c->st != SUP_CONN_FREE && now >= c->deadline_ns) {
            conn_close(s, c); /* too slow to ask, or to read its answer */
        }
    }
}

bool sup_ctl_idle(const struct sup *s)
{
    for (int i = 0; i < SUP_CTL_CONNS; i++)
        if (s->conns[i].st == SUP_CONN_WAIT || s->conns[i].st == SUP_CONN_WRITE)
            return false;
    return true;
}

void sup_ctl_close_all(struct sup *s)
{
    for (int i = 0; i < SUP_CTL_CONNS; i++)
        if (s->conns[i].st != SUP_CONN_FREE)
            conn_close(s, &s->conns[i]);
}
