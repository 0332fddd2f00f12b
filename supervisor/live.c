/* SPDX-License-Identifier: MIT */
/*
 * supervisor/live.c: a port changed while it runs, as `ip addr` and `ip
 * link set` change a device:
 *
 *   addr show [PORT]                 each port's addresses
 *   addr add PREFIX port NAME        IPv6: one more; IPv4: the port's one
 *                                    address, in place of the one it has
 *   addr del PREFIX port NAME        IPv6 (a port keeps its IPv4 address)
 *   link set PORT mtu N
 *   link set PORT up|down            the device's administrative state
 *
 * An address or MTU change is an edit of the running manifest's text
 * (running.c), checked as `ringrouter check` checks a file, and applied as
 * a reload applies it (reload.c, reload_ports.c): the connected networks
 * move in the FIBs, the router restarts on the new config through its warm
 * standby (the other ports' packets wait in their rings meanwhile), and for
 * an MTU the port's TAP drivers too, once the device has taken it
 * (sup_live_mtu). A change the check refuses (an address on another port's
 * network, an MTU out of range or larger than an AF_XDP frame holds)
 * changes nothing and says which port and why. The answer comes once the
 * new instances are ready, as reload's does. The change lasts until the
 * next reload, which makes the ports what the file says: `ringrouter save`
 * first keeps it.
 */
#include "supervisor/running.h"
#include "supervisor/reload_impl.h"

#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the device ---- */

struct dev_req {
    const char *ifname;
    unsigned mtu; /* 0: the flags instead */
    bool up;
    struct ipc_err *err;
};

static int dev_set(void *arg)
{
    struct dev_req *q = arg;
    int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sk < 0)
        return ipc_errf(q->err, -errno, "socket: %s", strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", q->ifname);
    int ret = 0;
    if (q->mtu) {
        ifr.ifr_mtu = (int)q->mtu;
        if (ioctl(sk, SIOCSIFMTU, &ifr) < 0)
            ret = ipc_errf(q->err, -errno, "%s refuses MTU %u: %s", q->ifname, q->mtu, strerror(errno));
    } else if (ioctl(sk, SIOCGIFFLAGS, &ifr) < 0) {
        ret = ipc_errf(q->err, -errno, "%s: %s", q->ifname, strerror(errno));
    } else {
        ifr.ifr_flags = (short)(q->up ? ifr.ifr_flags | IFF_UP : ifr.ifr_flags & ~IFF_UP);
        if (ioctl(sk, SIOCSIFFLAGS, &ifr) < 0)
            ret = ipc_errf(q->err, -errno, "%s: setting it %s: %s", q->ifname, q->up ? "up" : "down", strerror(errno));
    }
    close(sk);
    return ret;
}

static int port_dev(const struct sup_port *p, unsigned mtu, bool up, struct ipc_err *err)
{
    struct dev_req q = {.ifname = p->ifname, .mtu = mtu, .up = up, .err = err};
    return sup_in_netns(p->netns, dev_set, &q, err);
}

bool sup_live_mtu(struct sup *s, const struct sup_manifest *o, const struct sup_manifest *n, const char *cmd, FILE *f)
{
    (void)s;
    struct ipc_err err;
    for (size_t p = 0; p < n->nports; p++) {
        const struct sup_port *np = &n->ports[p];
        int k = sup_manifest_port(o, np->name);
        if (k < 0 || o->ports[k].mtu == np->mtu || np->driver != SUP_DRIVER_TAP)
            continue;
        if (port_dev(np, np->mtu, true, &err) == 0)
            continue;
        fprintf(f, "%s: port %s: mtu %u: %s; nothing changed\n", cmd, np->name, np->mtu, err.msg);
        /* Those already set go back: nothing changed. */
        for (size_t q = 0; q < p; q++) {
            int j = sup_manifest_port(o, n->ports[q].name);
            if (j >= 0 && o->ports[j].mtu != n->ports[q].mtu && n->ports[q].driver == SUP_DRIVER_TAP &&
                port_dev(&o->ports[j], o->ports[j].mtu, true, &err) < 0)
                sup_warn("%s: port %s: its MTU back to %u: %s", cmd, o->ports[j].name, o->ports[j].mtu, err.msg);
        }
        return false;
    }
    return true;
}

/* ---- the commands ---- */

/* `port NAME` (or iproute2's `dev NAME`) at @argv: the port's index, or -1 said. */
static int port_arg(struct sup *s, const char *cmd, char **argv, int argc, FILE *f)
{
    if (argc != 2 || (strcmp(argv[0], "port") != 0 && strcmp(argv[0], "dev") != 0)) {
        fprintf(f, "%s: expected `port NAME` after the prefix\n", cmd);
        return -1;
    }
    int p = sup_manifest_port(&s->m, argv[1]);
    if (p < 0) {
        fprintf(f, "%s: no port \"%s\"; the ports are:", cmd, argv[1]);
        for (size_t i = 0; i < s->m.nports; i++)
            if (!s->m.ports[i].vacant)
                fprintf(f, " %s", s->m.ports[i].name);
        fprintf(f, "\n");
    }
    return p;
}

/* The running text with @t's edits, checked and applied as a reload: the
 * check's refusal names the port's section and key. */
static bool apply_text(struct sup *s, struct run_text *t, const char *cmd, FILE *f, struct sup_ctl_wait *w)
{
    char *text = sup_text_join(t);
    sup_text_free(t);
    if (!text) {
        fprintf(f, "%s: out of memory; nothing changed\n", cmd);
        return false;
    }
    struct sup_manifest nm;
    struct sup_manifest_err err;
    int ret = sup_manifest_load_string(s->manifest_name, text, &nm, &err);
    free(text);
    if (ret < 0) {
        /* "NAME:LINE: [port a] address: why": the line is the edited text's, not the file's. */
        const char *why = strchr(err.msg, '[');
        fprintf(f, "%s: %s; nothing changed\n", cmd, why ? why : err.msg);
        return false;
    }
    return sup_reload_manifest(s, &nm, cmd, false, f, w);
}

static void addr_show(struct sup *s, int only, FILE *f)
{
    char a[64];
    for (size_t p = 0; p < s->m.nports; p++) {
        if ((only >= 0 && (int)p != only) || s->m.ports[p].vacant)
            continue;
        const struct sup_port *pt = &s->m.ports[p];
        fprintf(f, "%-16s %s/%u", pt->name, sup_ip_str(pt->address.addr, a, sizeof(a)), pt->address.len);
        for (unsigned k = 0; k < pt->naddr6; k++)
            fprintf(f, " %s/%u", sup_addr6_str(pt->addr6[k].addr, a, sizeof(a)), pt->addr6[k].len);
        fprintf(f, "\n");
    }
}

/* The port's address6 lines out, one line with @pt's explicit ones in
 * their place, @add appended and @del left out. */
static int edit_addr6(struct run_text *t, const struct sup_port *pt, const struct sup_prefix6 *add,
                      const struct sup_prefix6 *del)
{
    char list[SUP_ADDR6_MAX * 48 + 64] = "", a[64];
    size_t at = 0;
    unsigned where = 0;
    for (unsigned k = 0; k < pt->naddr6; k++) {
        const struct sup_prefix6 *x = &pt->addr6[k];
        if (!pt->addr6_line[k])
            continue; /* derived from the MAC: no line */
        where = where ? where : pt->addr6_line[k];
        sup_text_drop(t, pt->addr6_line[k]);
        if (del && x->len == del->len && memcmp(x->addr, del->addr, 16) == 0)
            continue;
        at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s/%u", at ? ", " : "",
                               sup_addr6_str(x->addr, a, sizeof(a)), x->len);
    }
    if (add)
        at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s/%u", at ? ", " : "",
                               sup_addr6_str(add->addr, a, sizeof(a)), add->len);
    if (!at)
        return 0;
    if (!where)
        where = pt->src.key_line[SUP_PORT_ADDRESS] ? pt->src.key_line[SUP_PORT_ADDRESS] : pt->src.line;
    return sup_text_add(t, where, "address6 = %s", list);
}

static bool addr_change(struct sup *s, bool add, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    const char *cmd = add ? "addr add" : "addr del";
    if (argc < 1) {
        fprintf(f, "%s: expected PREFIX port NAME\n", cmd);
        return false;
    }
    int p = port_arg(s, cmd, argv + 1, argc - 1, f);
    if (p < 0)
        return false;
    const struct sup_port *pt = &s->m.ports[p];
    bool v6 = strchr(argv[0], ':') != NULL;
    struct sup_prefix a4 = {0};
    struct sup_prefix6 a6 = {0};
    char canon[64] = "", a[64];
    if (v6 ? !sup_parse_prefix6(argv[0], &a6, canon, sizeof(canon)) : !sup_parse_prefix(argv[0], &a4)) {
        if (canon[0])
            fprintf(f, "%s: \"%s\" is not in canonical form (RFC 5952); write %s\n", cmd, argv[0], canon);
        else
            fprintf(f, "%s: \"%s\" is not an %s address with its prefix length (such as %s)\n", cmd, argv[0],
                    v6 ? "IPv6" : "IPv4", v6 ? "2001:db8:1::1/64" : "10.1.0.1/24");
        return false;
    }
    int k6 = -1;
    for (unsigned k = 0; v6 && k < pt->naddr6; k++)
        if (pt->addr6[k].len == a6.len && memcmp(pt->addr6[k].addr, a6.addr, 16) == 0)
            k6 = (int)k;
    bool has4 = !v6 && pt->address.addr == a4.addr && pt->address.len == a4.len;
    if (add && (v6 ? k6 >= 0 : has4)) {
        fprintf(f, "%s: port %s has %s already\n", cmd, pt->name, argv[0]);
        return false;
    }
    if (!add && !v6) {
        fprintf(f, "%s: port %s: %s is %s; a port has one IPv4 address, and `addr add` puts another in its "
                   "place\n", cmd, pt->name, argv[0], has4 ? "its IPv4 address" : "not its address");
        return false;
    }
    if (!add && k6 < 0) {
        fprintf(f, "%s: port %s has no address %s\n", cmd, pt->name, argv[0]);
        return false;
    }
    if (!add && !pt->addr6_line[k6]) {
        fprintf(f, "%s: port %s: %s is its link-local address, derived from its MAC: give address6 a link-local "
                   "one to choose another\n", cmd, pt->name, argv[0]);
        return false;
    }
    struct run_text t;
    int ret = s->m.text ? sup_text_split(&t, s->m.text) : -ENOENT;
    if (ret == 0 && v6)
        ret = edit_addr6(&t, pt, add ? &a6 : NULL, add ? NULL : &a6);
    else if (ret == 0) {
        unsigned kl = pt->src.key_line[SUP_PORT_ADDRESS];
        sup_text_drop(&t, kl);
        ret = sup_text_add(&t, kl ? kl : pt->src.line, "address = %s/%u", sup_ip_str(a4.addr, a, sizeof(a)), a4.len);
    }
    if (ret < 0) {
        if (ret != -ENOENT)
            sup_text_free(&t);
        fprintf(f, "%s: %s; nothing changed\n", cmd,
                ret == -ENOENT ? "the running manifest's text is not kept" : "out of memory");
        return false;
    }
    return apply_text(s, &t, cmd, f, w);
}

bool sup_ctl_addr(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    const char *sub = argc ? argv[0] : "show";
    if (strcmp(sub, "show") == 0) {
        int p = -1;
        if (argc > 2 || (argc == 2 && (p = sup_manifest_port(&s->m, argv[1])) < 0)) {
            fprintf(f, "addr show: %s \"%s\"\n", argc > 2 ? "unexpected argument" : "no port", argv[argc > 2 ? 2 : 1]);
            return false;
        }
        addr_show(s, p, f);
        return true;
    }
    if (strcmp(sub, "add") == 0 || strcmp(sub, "del") == 0)
        return addr_change(s, sub[0] == 'a', argv + 1, argc - 1, f, w);
    fprintf(f, "addr: unknown subcommand \"%s\"; addr takes show, add or del\n", sub);
    return false;
}

bool sup_ctl_link_set(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    const char *cmd = "link set";
    if (argc < 2) {
        fprintf(f, "%s: expected PORT mtu N, PORT up or PORT down\n", cmd);
        return false;
    }
    int p = sup_manifest_port(&s->m, argv[0]);
    if (p < 0) {
        fprintf(f, "%s: no port \"%s\"\n", cmd, argv[0]);
        return false;
    }
    const struct sup_port *pt = &s->m.ports[p];
    struct ipc_err err;
    if ((strcmp(argv[1], "up") == 0 || strcmp(argv[1], "down") == 0) && argc == 2) {
        bool up = argv[1][0] == 'u';
        if (port_dev(pt, 0, up, &err) < 0) {
            fprintf(f, "%s: port %s: %s\n", cmd, pt->name, err.msg);
            return false;
        }
        sup_log("link set: port %s %s (%s)", pt->name, argv[1], pt->ifname);
        fprintf(f, "port %s: %s %s\n", pt->name, pt->ifname, argv[1]);
        return true;
    }
    if (strcmp(argv[1], "mtu") != 0 || argc != 3) {
        fprintf(f, "%s: expected PORT mtu N, PORT up or PORT down\n", cmd);
        return false;
    }
    char *end;
    unsigned long mtu = strtoul(argv[2], &end, 10);
    if (!argv[2][0] || *end || mtu > 65535) {
        fprintf(f, "%s: port %s: mtu \"%s\" is not a number from 68 to 65535\n", cmd, pt->name, argv[2]);
        return false;
    }
    if (mtu == pt->mtu) {
        fprintf(f, "port %s: mtu %lu already\n", pt->name, mtu);
        return true;
    }
    struct run_text t;
    if (!s->m.text || sup_text_split(&t, s->m.text) < 0) {
        if (s->m.text)
            sup_text_free(&t);
        fprintf(f, "%s: the running manifest's text: %s\n", cmd, s->m.text ? "out of memory" : "not kept");
        return false;
    }
    unsigned kl = pt->src.key_line[SUP_PORT_MTU];
    sup_text_drop(&t, kl);
    if (sup_text_add(&t, kl ? kl : pt->src.line, "mtu = %lu", mtu) < 0) {
        sup_text_free(&t);
        fprintf(f, "%s: out of memory\n", cmd);
        return false;
    }
    return apply_text(s, &t, cmd, f, w);
}
