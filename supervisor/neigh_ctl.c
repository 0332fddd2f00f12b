/* SPDX-License-Identifier: MIT */
/*
 * supervisor/neigh_ctl.c: the control socket's neighbour commands.
 *
 *   neigh show [ADDRESS] [json]
 *   neigh add ADDRESS mac MAC [port NAME]      a static entry
 *   neigh replace ADDRESS mac MAC [port NAME]  the same, over a static one
 *   neigh del ADDRESS [force]
 *   neigh flush [all]                          every IPv4 entry that is not static
 *
 * iproute2's `lladdr MAC` and `dev NAME` are taken for `mac MAC` and `port NAME`.
 *
 * ADDRESS is IPv4 or IPv6 (it has a ':'); an IPv6 one goes to the IPv6
 * table through the same mailbox (NEIGH_OP_*6), and a link-local one needs
 * `port NAME`: it is on every link.
 *
 * Once the router runs it is the table's only writer, so a change goes
 * through the command mailbox in the table's first page (tables/neigh.h):
 * write the command, bump seq, wake the router, and let the connection wait
 * for its ack (sup_neigh_poll, from the event loop's tick) while the loop
 * goes on, as `shaper set` does. A router that is down takes the command
 * when it starts. The router can write the whole region, so its ack,
 * result and count are taken only as what they can be; the seq is our own
 * copy (sup.neigh_seq). `neigh show` reads the entries under their
 * sequence locks with one budget of retries for the whole table.
 */
#include "supervisor/sup.h"
#include "supervisor/route6.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *neigh_state(uint8_t st)
{
    switch (st) {
    case NEIGH_INCOMPLETE:
        return "incomplete";
    case NEIGH_REACHABLE:
        return "reachable";
    case NEIGH_STALE:
        return "stale";
    case NEIGH_STATIC:
        return "static";
    }
    return "?";
}

static const char *mac_str(const uint8_t *m, char *buf, size_t len)
{
    snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return buf;
}

/* An IPv6 ADDRESS argument of @cmd: canonical (RFC 5952), as the manifest's. */
static bool parse_addr6(const char *cmd, const char *arg, uint8_t ip6[16], FILE *f)
{
    char canon[64] = "";
    if (sup_parse_addr6(arg, ip6, canon, sizeof(canon)))
        return true;
    if (canon[0])
        fprintf(f, "%s: \"%s\" is not in canonical form (RFC 5952); write %s\n", cmd, arg, canon);
    else
        fprintf(f, "%s: \"%s\" is not an IPv6 address\n", cmd, arg);
    return false;
}

static bool parse_mac(const char *cmd, const char *arg, uint8_t mac[6], FILE *f)
{
    static const uint8_t zero[6];
    if (!sup_parse_mac(arg, mac)) {
        fprintf(f, "%s: mac \"%s\" is not a MAC address (xx:xx:xx:xx:xx:xx)\n", cmd, arg);
        return false;
    }
    if ((mac[0] & 1) || memcmp(mac, zero, 6) == 0) {
        fprintf(f, "%s: mac %s is not a unicast MAC address\n", cmd, arg);
        return false;
    }
    return true;
}

static bool neigh_show(struct sup *s, char **argv, int argc, FILE *f)
{
    bool json = false, filter = false, v6 = false;
    uint32_t want = 0;
    uint8_t want6[16];
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "json") == 0) {
            json = true;
        } else if (!filter && strcmp(argv[i], "force") != 0) {
            v6 = strchr(argv[i], ':') != NULL;
            if (v6 ? !parse_addr6("neigh show", argv[i], want6, f) : !sup_parse_addr(argv[i], &want)) {
                if (!v6)
                    fprintf(f, "neigh show: \"%s\" is not an IPv4 or IPv6 address\n", argv[i]);
                return false;
            }
            filter = true;
        } else {
            fprintf(f, "neigh show: unexpected argument \"%s\"\n", strcmp(argv[i], "force") ? argv[i] : "--force");
            return false;
        }
    }
    char b1[24], mac[24];
    if (json) {
        sup_json_begin(f);
        fprintf(f, "\"neighbours\":[");
    }
    else if (!v6)
        fprintf(f, "%-16s %-18s %-8s %-11s %s\n", "ADDRESS", "MAC", "PORT", "STATE", "QUEUED");
    unsigned shown = 0, busy = 0;
    uint32_t budget = NEIGH_READ_BUDGET;
    for (uint32_t i = 0; i <= s->neigh.mask && !v6; i++) {
        struct neigh_entry e;
        int r = neigh_read(&s->neigh, i, &e, &budget);
        busy += r == -EBUSY;
        if (r <= 0 || (filter && e.ip != want))
            continue;
        mac_str(e.mac, mac, sizeof(mac));
        /* The port and state are the router's words: shown only as what they can be. */
        const char *port = e.port < s->m.nports ? s->m.ports[e.port].name : "?";
        if (json) {
            fprintf(f, "%s{\"address\":\"%s\",\"mac\":\"%s\",\"port\":", shown ? "," : "",
                    sup_ip_str(e.ip, b1, sizeof(b1)), mac);
            sup_json_str(f, port);
            fprintf(f, ",\"state\":\"%s\",\"queued_packets\":%u}", neigh_state(e.state), e.qlen);
        } else {
            fprintf(f, "%-16s %-18s %-8s %-11s %u\n", sup_ip_str(e.ip, b1, sizeof(b1)),
                    e.state == NEIGH_INCOMPLETE ? "-" : mac, port, neigh_state(e.state), e.qlen);
        }
        shown++;
    }
    if (json)
        fprintf(f, "],\"busy\":%u", busy);
    else if (busy)
        fprintf(f, "(%u entries were being rewritten by the router and are not shown)\n", busy);
    if (!filter || v6)
        sup_neigh6_show(s, v6 ? want6 : NULL, json, f); /* route6.c: the IPv6 table */
    if (json)
        fprintf(f, "}\n");
    return true;
}

static struct sup_svc *router_of(struct sup *s)
{
    for (int i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].kind == IPC_SVC_ROUTER)
            return &s->svcs[i];
    return NULL;
}

/* A mailbox word that cannot be: logged with its offset, counted. */
static void mbox_corrupt(struct sup *s, const char *word, size_t off, uint64_t val, const char *why)
{
    s->shm_corrupt++;
    sup_warn("neighbour table: mailbox %s at offset %#zx is %llu, %s; not trusted", word, off, (unsigned long long)val,
             why);
}

#define MBOX_OFF(field) (offsetof(struct neigh_shared, cmd) + offsetof(struct neigh_mbox, field))

/* Hand the command to the router; @what is the answer once it is taken. */
static bool neigh_send(struct sup *s, const char *cmd, enum neigh_op op, uint32_t ip, const uint8_t *ip6, int port,
                       const uint8_t *mac, const char *what, const char *done, FILE *f, struct sup_ctl_wait *w)
{
    struct sup_svc *v = router_of(s);
    if (!v) {
        fprintf(f, "%s: no router\n", cmd);
        return false;
    }
    struct neigh_mbox *mb = &s->neigh.sh->cmd;
    uint64_t seq = s->neigh_seq, mseq = ipc_ld_rlx(&mb->seq), ack = ipc_ld_acq(&mb->ack);
    if (mseq != seq)
        mbox_corrupt(s, "seq", MBOX_OFF(seq), mseq, "not the last command the supervisor wrote");
    if (seq && ack == seq - 1) {
        fprintf(f, "%s: the router has not taken the previous neighbour change yet; try again\n", cmd);
        return false;
    }
    if (ack != seq) /* neither taken nor pending: no answer to wait for */
        mbox_corrupt(s, "ack", MBOX_OFF(ack), ack, "neither the last command nor the one before");
    static const uint8_t zero[6];
    ipc_st_rlx(&mb->op, op);
    ipc_st_rlx(&mb->ip, ip);
    ipc_st_rlx(&mb->port, port >= 0 ? (uint64_t)port : 0);
    ipc_st_rlx(&mb->mac, neigh_mac_pack(mac ? mac : zero));
    uint64_t w6[2] = {0, 0};
    if (ip6)
        neigh_ip6_pack(ip6, w6);
    ipc_st_rlx(&mb->ip6[0], w6[0]);
    ipc_st_rlx(&mb->ip6[1], w6[1]);
    s->neigh_seq = seq + 1;
    ipc_st_rel(&mb->seq, seq + 1);
    uint64_t one = 1;
    if (write(v->wake_fd, &one, sizeof(one)) < 0) {
        /* it wakes on its own within hang_ms / 4 */
    }
    sup_log("%s", what);
    if (v->state != SUP_ST_UP) {
        fprintf(f, "%s is %s: the change applies when it starts\n", v->name, sup_state_name(v->state));
        return true;
    }
    *w = (struct sup_ctl_wait){.pending = true, .kind = SUP_WAIT_NEIGH, .svc = (int)(v - s->svcs), .seq = seq + 1,
                               .deadline_ns = sup_now_ns() + SUP_SHAPER_ANSWER_NS, .op = (int)op};
    snprintf(w->what, sizeof(w->what), "%s", done);
    if (ip6)
        sup_addr6_str(ip6, w->arg, sizeof(w->arg));
    else
        sup_ip_str(ip, w->arg, sizeof(w->arg));
    return true;
}

/* The IPv6 half of neigh_cmd_add: the port is the one whose global
 * networks hold ADDRESS, or the one named for a link-local address. */
static bool neigh6_cmd_add(struct sup *s, const char *cmd, char **argv, int argc, bool replace, FILE *f,
                           struct sup_ctl_wait *w)
{
    uint8_t ip6[16], mac[6];
    if (!parse_addr6(cmd, argv[0], ip6, f))
        return false;
    int given = argc == 5 ? sup_manifest_port(&s->m, argv[4]) : -1;
    if (argc == 5 && given < 0) {
        fprintf(f, "%s: no port \"%s\"\n", cmd, argv[4]);
        return false;
    }
    const char *martian = sup_martian6(ip6);
    if (martian) {
        fprintf(f, "%s: %s is %s\n", cmd, argv[0], martian);
        return false;
    }
    int p = sup_ll6(ip6) ? given : sup_port_for6(&s->m, ip6);
    if (p < 0) {
        if (sup_ll6(ip6))
            fprintf(f, "%s: %s is link-local: add port NAME to say which link it is on\n", cmd, argv[0]);
        else
            fprintf(f, "%s: %s is on none of the ports' IPv6 networks\n", cmd, argv[0]);
        return false;
    }
    if (given >= 0 && given != p) {
        fprintf(f, "%s: %s is on port %s's network, not port %s's\n", cmd, argv[0], s->m.ports[p].name, argv[4]);
        return false;
    }
    char why[200];
    if (sup_gateway6_why(&s->m, ip6, p, why, sizeof(why))) {
        fprintf(f, "%s: %s\n", cmd, why);
        return false;
    }
    if (!parse_mac(cmd, argv[2], mac, f))
        return false;
    return sup_neigh6_cmd(s, replace ? NEIGH_OP_REPLACE6 : NEIGH_OP_ADD6, ip6, p, mac, f, w);
}

/* `neigh add|replace ADDRESS mac MAC [port NAME]` (@argv from ADDRESS on). */
static bool neigh_cmd_add(struct sup *s, char **argv, int argc, bool replace, FILE *f, struct sup_ctl_wait *w)
{
    const char *cmd = replace ? "neigh replace" : "neigh add";
    if (argc < 3 || strcmp(argv[1], "mac") != 0 || (argc > 3 && argc != 5) ||
        (argc == 5 && strcmp(argv[3], "port") != 0)) {
        if (argc > 3 && strcmp(argv[argc - 1], "json") == 0)
            fprintf(f, "%s: --json is only for neigh show\n", cmd);
        else
            fprintf(f, "%s: expected ADDRESS mac MAC [port NAME]\n", cmd);
        return false;
    }
    if (strchr(argv[0], ':'))
        return neigh6_cmd_add(s, cmd, argv, argc, replace, f, w);
    uint32_t ip;
    if (!sup_parse_addr(argv[0], &ip)) {
        fprintf(f, "%s: \"%s\" is not an IPv4 or IPv6 address\n", cmd, argv[0]);
        return false;
    }
    int p = sup_port_of_addr(s, ip);
    if (p < 0) {
        fprintf(f, "%s: %s is on none of the ports' networks\n", cmd, argv[0]);
        return false;
    }
    char why[160];
    if (sup_gateway_why(&s->m, ip, p, why, sizeof(why))) {
        fprintf(f, "%s: %s\n", cmd, why);
        return false;
    }
    uint8_t mac[6];
    if (!parse_mac(cmd, argv[2], mac, f))
        return false;
    if (argc == 5) {
        int given = sup_manifest_port(&s->m, argv[4]);
        if (given < 0) {
            fprintf(f, "%s: no port \"%s\"\n", cmd, argv[4]);
            return false;
        }
        if (given != p) {
            fprintf(f, "%s: %s is on port %s's network, not port %s's\n", cmd, argv[0], s->m.ports[p].name,
                    argv[4]);
            return false;
        }
    }
    return sup_neigh_cmd(s, replace ? NEIGH_OP_REPLACE : NEIGH_OP_ADD, ip, p, mac, f, w);
}

bool sup_neigh_cmd(struct sup *s, int op, uint32_t ip, int port, const uint8_t *mac, FILE *f, struct sup_ctl_wait *w)
{
    char what[96], done[96], b1[24], b2[24];
    sup_ip_str(ip, b1, sizeof(b1));
    if (op == NEIGH_OP_DEL) {
        snprintf(what, sizeof(what), "neigh del %s", b1);
        snprintf(done, sizeof(done), "deleted %s", b1);
        return neigh_send(s, "neigh del", NEIGH_OP_DEL, ip, NULL, -1, NULL, what, done, f, w);
    }
    const char *cmd = op == NEIGH_OP_REPLACE ? "neigh replace" : "neigh add";
    mac_str(mac, b2, sizeof(b2));
    snprintf(done, sizeof(done), "%s %s mac %s port %s", op == NEIGH_OP_REPLACE ? "replaced" : "added", b1, b2,
             s->m.ports[port].name);
    snprintf(what, sizeof(what), "%s %s mac %s port %s", cmd, b1, b2, s->m.ports[port].name);
    return neigh_send(s, cmd, (enum neigh_op)op, ip, NULL, port, mac, what, done, f, w);
}

bool sup_neigh6_cmd(struct sup *s, int op, const uint8_t *ip6, int port, const uint8_t *mac, FILE *f,
                    struct sup_ctl_wait *w)
{
    char what[128], done[128], b1[INET6_ADDRSTRLEN], b2[24];
    sup_addr6_str(ip6, b1, sizeof(b1));
    if (op == NEIGH_OP_DEL6) {
        snprintf(what, sizeof(what), "neigh del %s", b1);
        snprintf(done, sizeof(done), "deleted %s", b1);
        return neigh_send(s, "neigh del", NEIGH_OP_DEL6, 0, ip6, -1, NULL, what, done, f, w);
    }
    const char *cmd = op == NEIGH_OP_REPLACE6 ? "neigh replace" : "neigh add";
    mac_str(mac, b2, sizeof(b2));
    snprintf(done, sizeof(done), "%s %s mac %s port %s", op == NEIGH_OP_REPLACE6 ? "replaced" : "added", b1, b2,
             s->m.ports[port].name);
    snprintf(what, sizeof(what), "%s %s mac %s port %s", cmd, b1, b2, s->m.ports[port].name);
    return neigh_send(s, cmd, (enum neigh_op)op, 0, ip6, port, mac, what, done, f, w);
}

static bool neigh_cmd_del(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    bool force = argc >= 2 && strcmp(argv[1], "force") == 0;
    if (argc < 1 || argc > (force ? 2 : 1)) {
        if (argc > 1 && strcmp(argv[argc - 1], "json") == 0)
            fprintf(f, "neigh del: --json is only for neigh show\n");
        else if (argc > 1)
            fprintf(f, "neigh del: unexpected argument \"%s\"\n", argv[force ? 2 : 1]);
        else
            fprintf(f, "neigh del: expected ADDRESS\n");
        return false;
    }
    uint32_t ip = 0;
    uint8_t ip6[16];
    bool v6 = strchr(argv[0], ':') != NULL;
    if (v6 ? !parse_addr6("neigh del", argv[0], ip6, f) : !sup_parse_addr(argv[0], &ip)) {
        if (!v6)
            fprintf(f, "neigh del: \"%s\" is not an IPv4 or IPv6 address\n", argv[0]);
        return false;
    }
    for (size_t i = 0; i < s->m.nneighs && !force; i++) {
        const struct sup_neigh *n = &s->m.neighs[i];
        if (n->v6 == v6 && (v6 ? memcmp(n->addr6, ip6, 16) == 0 : n->addr == ip)) {
            fprintf(f, "neigh del: %s is the manifest's [%s] (line %u); with --force it is deleted until the next "
                       "start\n", argv[0], s->m.neighs[i].src.section, s->m.neighs[i].src.line);
            return false;
        }
    }
    if (v6)
        return sup_neigh6_cmd(s, NEIGH_OP_DEL6, ip6, -1, NULL, f, w);
    return sup_neigh_cmd(s, NEIGH_OP_DEL, ip, -1, NULL, f, w);
}

bool sup_neigh_poll(struct sup *s, struct sup_ctl_wait *w, uint64_t now, FILE *f, bool *ok)
{
    const struct sup_svc *v = &s->svcs[w->svc];
    struct neigh_mbox *mb = &s->neigh.sh->cmd;
    *ok = true;
    uint64_t ack = ipc_ld_acq(&mb->ack);
    const char *cmd = w->op == NEIGH_OP_ADD || w->op == NEIGH_OP_ADD6           ? "neigh add"
                      : w->op == NEIGH_OP_REPLACE || w->op == NEIGH_OP_REPLACE6 ? "neigh replace"
                      : w->op == NEIGH_OP_DEL || w->op == NEIGH_OP_DEL6         ? "neigh del"
                                                                                : "neigh flush";
    if (ack == w->seq) {
        /* result and count are the router's words: taken only as what they can be */
        uint64_t r = ipc_ld_rlx(&mb->result), n = ipc_ld_rlx(&mb->count);
        uint64_t nmax = w->op == NEIGH_OP_FLUSH ? (uint64_t)s->neigh.mask + 1 : NEIGH_QMAX;
        if (r >= 4096) {
            mbox_corrupt(s, "result", MBOX_OFF(result), r, "not an errno");
            fprintf(f, "%s: the router answered with result %llu, which is not an error number\n", cmd,
                    (unsigned long long)r);
            *ok = false;
        } else if (r == EEXIST) {
            fprintf(f, "%s: %s is a static neighbour with another MAC or port; neigh replace changes it\n", cmd,
                    w->arg);
            *ok = false;
        } else if (r == ENOENT) {
            fprintf(f, "%s: no neighbour %s\n", cmd, w->arg);
            *ok = false;
        } else if (r == ENOSPC) {
            fprintf(f, "%s: the neighbour table is full\n", cmd);
            *ok = false;
        } else if (r) {
            fprintf(f, "%s: the router refused it: %s\n", cmd, strerror((int)r));
            *ok = false;
        } else if (n > nmax) {
            mbox_corrupt(s, "count", MBOX_OFF(count), n, "more than there can be");
            fprintf(f, "%s: done, but the router answered with a corrupt count (%llu)\n", cmd, (unsigned long long)n);
        } else if (w->op == NEIGH_OP_FLUSH) {
            fprintf(f, "flushed %llu neighbour%s\n", (unsigned long long)n, n == 1 ? "" : "s");
        } else if (r == EAFNOSUPPORT) {
            fprintf(f, "%s: the router runs without its IPv6 tables\n", cmd);
            *ok = false;
        } else if ((w->op == NEIGH_OP_DEL || w->op == NEIGH_OP_DEL6) && n) {
            fprintf(f, "%s (%llu packets that waited for it dropped)\n", w->what, (unsigned long long)n);
        } else {
            fprintf(f, "%s\n", w->what);
        }
    } else if (ack != w->seq - 1) {
        mbox_corrupt(s, "ack", MBOX_OFF(ack), ack, "neither the command sent nor the one before");
        fprintf(f, "%s: the router answered with a corrupt mailbox (ack %llu for command %llu)\n", cmd,
                (unsigned long long)ack, (unsigned long long)w->seq);
        *ok = false;
    } else if (now >= w->deadline_ns) {
        fprintf(f, "%s has not answered within %llu ms; the change applies when it does\n", v->name,
                (unsigned long long)(SUP_SHAPER_ANSWER_NS / 1000000));
    } else {
        return false;
    }
    w->pending = false;
    return true;
}

bool sup_ctl_neigh(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    sup_iproute_words(argv, argc); /* lladdr MAC, dev NAME */
    if (argc == 0 || strcmp(argv[0], "show") == 0)
        return neigh_show(s, argv + (argc ? 1 : 0), argc ? argc - 1 : 0, f);
    if (strcmp(argv[0], "json") == 0)
        return neigh_show(s, argv, argc, f);
    if (strcmp(argv[0], "add") == 0)
        return neigh_cmd_add(s, argv + 1, argc - 1, false, f, w);
    if (strcmp(argv[0], "replace") == 0)
        return neigh_cmd_add(s, argv + 1, argc - 1, true, f, w);
    if (strcmp(argv[0], "del") == 0)
        return neigh_cmd_del(s, argv + 1, argc - 1, f, w);
    if (strcmp(argv[0], "flush") == 0) {
        /* `all`, as `ip neigh flush all`: what that flushes too, every entry but the permanent ones. */
        int all = argc > 1 && strcmp(argv[1], "all") == 0;
        if (argc > 1 + all) {
            fprintf(f, "neigh flush: unexpected argument \"%s\"\n", strcmp(argv[1 + all], "json") == 0 ? "--json"
                                                                  : strcmp(argv[1 + all], "force") == 0 ? "--force"
                                                                                                        : argv[1 + all]);
            return false;
        }
        return neigh_send(s, "neigh flush", NEIGH_OP_FLUSH, 0, NULL, -1, NULL, "neigh flush", "flushed", f, w);
    }
    fprintf(f, "neigh: unknown subcommand \"%s\"; expected add, replace, del, flush or show\n", argv[0]);
    return false;
}
