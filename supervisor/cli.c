/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cli.c: what `ringrouter` knows of its own command line: the
 * commands and their subcommands, their help, and how a typed word becomes
 * one of them. As `ip` and `birdc` do, a unique prefix is enough (`ringrouter
 * rou sh` is `route show`); a prefix of two is an error that names both
 * (`"st" is ambiguous: status, stats`) unless one of them begins the other
 * (`ro` is `route`, not `routes`), and a word that is no prefix gets
 * the nearest name when it is within two edits (`did you mean "status"?`).
 * iproute2's `list` and `ls` are `show` (cli_subcommand), and `sh` is
 * `show` as a router's CLI takes it (`sha` is `shaper`). The parsing of
 * the whole line is main.c's.
 */
#include "supervisor/cli.h"

#include <stdio.h>
#include <string.h>

#include "rr_version.h" /* written at every build by tools/version.sh */
#include "supervisor/manifest.h"

#define SUBS(...) ((const char *const[]){__VA_ARGS__, NULL})

static const struct cli_cmd cli_cmds[] = {
    {"check", NULL, NULL, "validate a manifest, or show what a reload would change",
     "usage: ringrouter check [-c FILE]\n"
     "       ringrouter check --diff [-c FILE | -S SOCKET]\n"
     "\n"
     "Parse and validate the manifest FILE (default: the built-in demo manifest),\n"
     "all of it, as `up` would before creating anything, and print \"FILE: ok\", or\n"
     "the first error on stderr as FILE:LINE: [section] key: what is wrong.\n"
     "It does not look at the machine (users, devices, namespaces): `up` does.\n"
     "\n"
     "--diff asks the running supervisor instead: it reads the manifest file it was\n"
     "started with again and prints what `ringrouter reload` would do, one line per\n"
     "change, and each service it would restart and why; nothing is changed. -c,\n"
     "if given, must name that file (it also finds the socket).\n"
     "\n"
     "exit status: 0 valid, 100 invalid or unreadable (--diff: or a change that\n"
     "needs `up` again), 111 no supervisor (--diff).\n"
     "The manifest format: docs/manifest.md.\n"},
    {"up", NULL, NULL, "run the supervisor (as root)",
     "usage: ringrouter up [-c FILE]\n"
     "\n"
     "Run the supervisor: validate the manifest FILE (default: the built-in demo\n"
     "manifest), create the pool, rings, tables and TAP devices, add back the routes\n"
     "`route save` wrote, start every service as a uid of its own, and keep them\n"
     "running (restarting the ones that die or hang) until SIGTERM or SIGINT; then\n"
     "stop them, check that every buffer is back, remove everything (but TAP\n"
     "devices with persist = yes) and exit. SIGHUP reloads FILE (see reload).\n"
     "It logs one line per event on stderr. Must run as root.\n"
     "\n"
     "exit status: 0 clean stop, 100 manifest or setup refused, 101 the shutdown\n"
     "census found a leaked buffer, 111 a failed system call.\n"
     "See docs/supervisor.md.\n"},
    {"status", NULL, NULL, "each service's state, pid, restarts, uptime, last exit",
     "usage: ringrouter status [--json]\n"
     "\n"
     "Each service's state (starting, up, backoff, stopping, down, failed), pid,\n"
     "warm standby (pid, with * while it starts), restarts after a death, planned\n"
     "restarts (restart, upgrade, reload), uptime and last exit; --json adds its\n"
     "uid, gid and kill-to-ready time, and a block on the supervisor itself.\n"
     "\n"
     "exit status: 0, or 3 when a service is failed (the table is printed all the\n"
     "same); 111 no supervisor.\n"},
    {"stats", NULL, NULL, "counters of every service and ring (or of one port's)",
     "usage: ringrouter stats [PORT] [--json] [--all]\n"
     "       ringrouter stats --stages [--json]\n"
     "       ringrouter stats --rate SECONDS [--json] [--all]\n"
     "\n"
     "Every service's named counters, every ring's occupancy and counters, the\n"
     "pool's failure counters, read from shared memory without interrupting\n"
     "anyone. With PORT, only that port's driver instances, shaper, rings and\n"
     "steering program. The text leaves out zero counters unless --all; --json\n"
     "has them all. --stages: CPU cycles per packet in each stage of each service\n"
     "(needs `stages = on` in the manifest's [router]). --rate: every counter a\n"
     "second, from two samples SECONDS apart (0.1 to 3600).\n"
     "Every counter: docs/stats.md.\n"},
    {"link", NULL, NULL, "each port: device, MAC, MTU, state, rx/tx packets, bytes, drops; link set",
     "usage: ringrouter link [PORT] [--json]\n"
     "       ringrouter port [PORT] [--json]\n"
     "       ringrouter link set PORT mtu N\n"
     "       ringrouter link set PORT up|down\n"
     "\n"
     "Each port (or PORT) as `ip -s link` shows a device: its ifname, netns,\n"
     "driver and queues, the router's MAC, MTU and address on it, the worst state\n"
     "of its services, and its packets, bytes and drops both ways, side by side\n"
     "from its drivers (what crossed the device) and from the router (what it\n"
     "took from and gave to the port).\n"
     "link set PORT mtu N changes the port's MTU live: the device's, then the\n"
     "router and the port's TAP drivers restart on it through their warm\n"
     "standbys (the other ports lose nothing). link set PORT up|down sets the\n"
     "device's administrative state.\n"
     "See docs/cli.md, \"Ports\", and docs/operations.md, \"Live port changes\".\n"},
    {"port", "link", NULL, "the same as link", NULL},
    {"addr", NULL, SUBS("show", "add", "del"), "the ports' addresses: show, add, del (live)",
     "usage: ringrouter addr [show] [PORT]\n"
     "       ringrouter addr add PREFIX port NAME\n"
     "       ringrouter addr del PREFIX port NAME\n"
     "\n"
     "PREFIX is an address with its prefix length, IPv4 (10.1.0.1/24) or IPv6\n"
     "(2001:db8:1::1/64); `dev` may stand for `port`, as in `ip addr`.\n"
     "  show  each port's IPv4 address and IPv6 addresses (link-local included)\n"
     "  add   IPv6: one more address; IPv4: the port's one address, in place of\n"
     "        the one it has\n"
     "  del   an IPv6 address (a port keeps its IPv4 one)\n"
     "The change is checked as the manifest is (an address on another port's\n"
     "network is refused, naming both) and applied live: the connected route\n"
     "moves, and the router restarts on it through its warm standby (ARP, ND,\n"
     "Router Advertisements and DAD follow). It lasts until the next reload:\n"
     "`ringrouter save` keeps it. See docs/operations.md, \"Live port changes\".\n"},
    {"show", NULL, SUBS("running"), "the running manifest, with what changed at run time",
     "usage: ringrouter show running\n"
     "\n"
     "The manifest as the router runs it now: the file `up` or the last reload\n"
     "read, with what addr, link set, route, neigh and shaper set changed since,\n"
     "in a form `ringrouter check` accepts and `ringrouter up` runs. Root only.\n"},
    {"save", NULL, NULL, "write the running manifest to a file",
     "usage: ringrouter save [FILE]\n"
     "\n"
     "Write what `show running` prints to FILE (by default the manifest `up` was\n"
     "given), as a router's `write memory` does: atomically (a new file renamed\n"
     "over the old), root's, mode 0644, in a directory only root can change.\n"
     "Root only.\n"},
    {"metrics", NULL, NULL, "everything status, stats and link know, for Prometheus",
     "usage: ringrouter metrics\n"
     "\n"
     "What status, stats, link and stats --stages answer, in Prometheus's text\n"
     "exposition format: base units, _total on counters, the port, ring, service,\n"
     "stage and drop reason in labels. A reader of the control socket's group may\n"
     "run it. The metrics: docs/observability.md.\n"
     "\n"
     "exit status: 0, 111 no supervisor.\n"},
    {"exporter", NULL, NULL, "serve the metrics over HTTP for Prometheus",
     "usage: ringrouter exporter --listen ADDR:PORT [--user USER[:GROUP]]\n"
     "\n"
     "Serve `ringrouter metrics` at http://ADDR:PORT/metrics (ADDR may be\n"
     "[IPv6] or empty for every address), as a process with no privilege: it\n"
     "reads the control socket as a member of its group (by default\n"
     "ringrouter), one connection at a time, a new one for each snapshot, so it\n"
     "finds a restarted supervisor again. Started by root it needs --user: it\n"
     "listens, then becomes USER (with GROUP, by default ringrouter, among its\n"
     "groups) with no capability; without --user it refuses to run as root.\n"
     "A slow or hostile client holds none of it: at most 64 clients, the oldest\n"
     "unfinished request making room for a new one, requests of at most 8 KiB\n"
     "within 3 s. SIGTERM stops it. See docs/observability.md.\n"
     "\n"
     "exit status: 0 stopped, 100 usage (or root without --user), 111 system failure.\n"},
    {"top", NULL, NULL, "a live view: rates per port, service and ring",
     "usage: ringrouter top [--once] [--json]\n"
     "\n"
     "Every second: per port, packets and bits a second each way and drops a\n"
     "second; per service, state, CPU % (from /proc), loops and wake-ups a second,\n"
     "wake-ups per packet and restarts by cause (crash, hang, upgrade, restart);\n"
     "the drops a second by service and reason; per ring, occupancy and full\n"
     "drops a second. Rates are the difference of two snapshots a second apart.\n"
     "--once prints one frame and exits; --json prints each frame as one JSON\n"
     "object on a line. See docs/observability.md.\n"
     "\n"
     "exit status: 0, 111 no supervisor (--once; live, it says so and retries).\n"},
    {"routes", NULL, NULL, "routes from a daemon: the sources, the counts, the refusals",
     "usage: ringrouter routes [--json]\n"
     "\n"
     "The manifest's [routes] sources (a kernel table in the control namespace,\n"
     "FRR's FPM), how many of their routes are in the FIB, refused and in their\n"
     "grace period, and the supervisor's counters: added, replaced, withdrawn,\n"
     "refused by reason, routes installed with several next hops, syncs,\n"
     "sources lost. rr-routes' own counters are in `ringrouter stats`.\n"
     "See docs/routing.md.\n"},
    {"restart", NULL, NULL, "stop a service and start it again",
     "usage: ringrouter restart SERVICE\n"
     "\n"
     "Stop SERVICE (SIGTERM) and start it again on the same rings, through its\n"
     "warm standby; a failed service is tried again. The services are those\n"
     "`ringrouter status` lists. It prints one line and has no --json.\n"},
    {"upgrade", NULL, NULL, "move a service to a new binary under traffic",
     "usage: ringrouter upgrade SERVICE [--binary PATH]\n"
     "       ringrouter upgrade supervisor [--binary PATH]\n"
     "\n"
     "Start PATH (default: the service's binary path, whose file may be new) as\n"
     "SERVICE's standby, check that it was built for the running shared regions\n"
     "(their layout stamp; a mismatch is refused naming both), wait until it is\n"
     "parked, then hand over as `restart` does: the old instance finishes its\n"
     "batch and exits, the new one binds to the same rings. Packets wait in the\n"
     "rings meanwhile. If the new instance ends, or is not ready within the\n"
     "service's upgrade_timeout_ms, the old binary is started again (rolled back)\n"
     "and the exit status is 100. `status` shows each instance's binary, build\n"
     "id and start time.\n"
     "\n"
     "`upgrade supervisor` re-execs the supervisor itself (PATH, default the file it\n"
     "was started from) with the same manifest: the services never stop, and the new\n"
     "image adopts them as a supervisor restarted after a crash does. It answers\n"
     "before the exec. Root only; no --json. See docs/operations.md.\n"},
    {"reload", NULL, NULL, "apply the changed manifest without a restart (also SIGHUP)",
     "usage: ringrouter reload [-c FILE | -S SOCKET]\n"
     "\n"
     "The supervisor reads the manifest file it was started with again, checks it as\n"
     "`check` does, and applies what changed, live: routes (IPv4 and IPv6),\n"
     "neighbours, shaper rates and classes, service options, a port's persist, new\n"
     "TAP ports (after the others: the router restarts to take their rings).\n"
     "Every service that did not change keeps running. A change a service takes\n"
     "only at start (a class added, hang_ms, cpu, ...) restarts that service\n"
     "through its warm standby, and the answer says which and why. Runtime routes\n"
     "(route add) stay unless the manifest now has their prefix. It answers once\n"
     "everything is applied, with one line per change; the log has the same lines.\n"
     "A manifest that does not check, or a change only a new `up` can make (a port\n"
     "removed or changed, a shaper added or removed, [router] pool and users,\n"
     "static IPv6 neighbours), changes nothing. `check --diff` shows what\n"
     "reload would do. -c, if given, must name the file `up` was given.\n"
     "\n"
     "exit status: 0 applied, 100 refused or something not applied (named),\n"
     "111 no supervisor.\n"
     "See docs/operations.md, \"Reload\".\n"},
    {"inject", NULL, NULL, "inject a fault into a service",
     "usage: ringrouter inject SERVICE KIND [ARGS]\n"
     "\n"
     "KIND: kill, stop MS, crash, corrupt-ring, corrupt-meta, double-free,\n"
     "chain-loop, leak N, slow US [MS], exhaust [MS]. The answer says what was\n"
     "done and where. Root only; no --json. See docs/operations.md.\n"},
    {"route", NULL, SUBS("show", "get", "add", "replace", "del", "flush", "save", "load"),
     "the FIB: show, get, add, replace, del, flush, save, load",
     "usage: ringrouter route [show] [PREFIX] [--json]\n"
     "       ringrouter route get ADDRESS [--json]\n"
     "       ringrouter route add PREFIX via GATEWAY [port NAME]\n"
     "       ringrouter route add PREFIX port NAME\n"
     "       ringrouter route add PREFIX via GATEWAY [weight W] via GATEWAY [weight W] ...\n"
     "       ringrouter route replace PREFIX via GATEWAY | PREFIX port NAME\n"
     "       ringrouter route del PREFIX [--force]\n"
     "       ringrouter route flush [port NAME]\n"
     "       ringrouter route save\n"
     "       ringrouter route load FILE|- [--merge]\n"
     "\n"
     "PREFIX is a.b.c.d/len with no host bits, an address (a /32), `default`, or\n"
     "IPv6 (2001:db8:9::/48, an address: a /128). As in `ip route`, `dev` may\n"
     "stand for `port`, and `list` or `ls` for show. Each route has an\n"
     "origin: connected (a port's network; never changed here), manifest (a\n"
     "[route] section; deleted only with --force, until the next start) or\n"
     "runtime (added or replaced since `up`, or saved and loaded back).\n"
     "  show     every route, or exactly PREFIX (none: the header alone)\n"
     "  get      the route a packet to ADDRESS takes: the longest prefix\n"
     "  add      a new route; an existing prefix is refused\n"
     "  replace  a new next hop for PREFIX, or a new route, with no moment of no\n"
     "           route: each FIB entry switches in one atomic store\n"
     "  del      delete a route\n"
     "  flush    back to the manifest's routes (of port NAME): delete every\n"
     "           runtime route, give a replaced or deleted manifest route its\n"
     "           own next hop back; connected routes are never touched\n"
     "  save     write the runtime routes to STATE_DIR/routes, which `up` adds back\n"
     "  load     replace the runtime routes by FILE's (route show's rows or ip\n"
     "           route lines; - for stdin), or add them with --merge; every line\n"
     "           is checked first and an error names its line (docs/routing.md)\n"
     "--json is for show and get. See docs/cli.md, \"Routes\".\n"},
    {"neigh", NULL, SUBS("show", "add", "replace", "del", "flush"), "the neighbour table: show, add, replace, del, flush",
     "usage: ringrouter neigh [show] [ADDRESS] [--json]\n"
     "       ringrouter neigh add ADDRESS mac MAC [port NAME]\n"
     "       ringrouter neigh replace ADDRESS mac MAC [port NAME]\n"
     "       ringrouter neigh del ADDRESS [--force]\n"
     "       ringrouter neigh flush [all]\n"
     "\n"
     "As in `ip neigh`, `lladdr` may stand for `mac`, `dev` for `port`, and\n"
     "`list` or `ls` for show.\n"
     "  show     the neighbour (ARP) table, or the entry of ADDRESS: MAC, port,\n"
     "           state (incomplete, reachable, stale, static), packets waiting\n"
     "  add      a static entry: the router never ARPs for ADDRESS; refused over a\n"
     "           static entry with another MAC or port\n"
     "  replace  a static entry, over whatever is there\n"
     "  del      remove an entry (a manifest [neigh] only with --force)\n"
     "  flush    remove every entry that is not static\n"
     "The router applies the changes (it is the table's writer) and answers\n"
     "within a second; a router that is down applies them when it starts.\n"
     "--json is for show. See docs/cli.md, \"Neighbours\".\n"},
    {"shaper", NULL, SUBS("show", "set"), "the shapers: show, set",
     "usage: ringrouter shaper [show] [PORT] [--json]\n"
     "       ringrouter shaper set PORT [CLASS] rate RATE [ceil RATE]\n"
     "\n"
     "  show  each shaped port's rate, backlog, drops and ECN marks, and per class\n"
     "        its rate, ceil, measured rate, backlog, drops and marks\n"
     "  set   change a running shaper's port or class rates (e.g. 50mbit) without\n"
     "        a restart; the answer comes once the shaper took it\n"
     "--json is for show. See docs/shaper.md.\n"},
    {"filter", NULL, SUBS("show", "reload"), "the stateful filter: its rules and counters, reload",
     "usage: ringrouter filter [show]\n"
     "       ringrouter filter reload\n"
     "\n"
     "  show    each chain's rules, with the packets and bytes each matched\n"
     "  reload  read [filter] rules again; if it compiles, the filter restarts on\n"
     "          it and keeps its connections and NAT mappings; else the error\n"
     "          names the line, and nothing changes\n"
     "See docs/filter.md.\n"},
    {"conntrack", NULL, SUBS("show", "count", "flush"), "the filter's connections: show, count, flush",
     "usage: ringrouter conntrack [show|count|flush]\n"
     "\n"
     "  show   the connections, as conntrack -L lists them: each with its\n"
     "         original and reply tuples (after NAT)\n"
     "  count  how many\n"
     "  flush  drop them all: the filter restarts on an empty table\n"
     "See docs/filter.md.\n"},
    {"capture", NULL, NULL, "copy a port's frames (rx, tx, dropped) to pcapng, filtered as tcpdump does",
     "usage: ringrouter capture PORT [rx|tx|drop|both] [-c N] [-s SNAPLEN] [-S SOCKET] [FILTER]\n"
     "                          -w FILE|-\n"
     "\n"
     "Copy the frames PORT's drivers receive (rx, the default), send (tx), or both,\n"
     "or those the router drops that came in on PORT (drop: the reason is each\n"
     "frame's comment), that match FILTER (a tcpdump expression, compiled by\n"
     "libpcap; at most 40 instructions), to FILE or stdout (-) as pcapng, until N\n"
     "frames (-c), SIGINT or SIGTERM. SNAPLEN: at most 2048 bytes a frame are kept.\n"
     "A reader slower than the traffic loses captures, never packets: the count is\n"
     "printed at the end (\"N captures lost\"). One capture at a time; it ends when\n"
     "the client exits, however it exits. Root only.\n"
     "\n"
     "exit status: 0, 100 a bad port, filter or argument, or a capture already\n"
     "running, 111 a file that cannot be written or no supervisor.\n"
     "See docs/capture.md.\n"},
    {"trace", NULL, NULL, "follow the next N packets that match a filter through every stage",
     "usage: ringrouter trace N [-S SOCKET] [FILTER]\n"
     "\n"
     "Follow the next N packets (1 to 1000) any driver receives that match FILTER (a\n"
     "tcpdump expression, compiled by libpcap; none: every packet) through every\n"
     "stage: the driver's receive (port, queue), the router (its verdict, the FIB\n"
     "prefix, next hop and neighbour state, an ICMP error it sends), the shaper\n"
     "(class, flow queue), a drop and its reason, the driver's transmit. One block\n"
     "per packet, each stage with its time since the receive, the cycles since the\n"
     "stage before, and the router's and shaper's cycles per packet. It ends after\n"
     "N packets, on SIGINT or SIGTERM. One trace at a time; it ends when the client\n"
     "exits, however it exits. Root only.\n"
     "\n"
     "exit status: 0, 100 a bad N, filter or argument, or a trace already running,\n"
     "111 no supervisor, or the supervisor ended the trace.\n"
     "See docs/observability.md, \"Packet trace\".\n"},
    {"help", NULL, NULL, "this list, or a command's help",
     "usage: ringrouter help [COMMAND]\n"
     "       ringrouter COMMAND --help\n"
     "\n"
     "The list of commands, or COMMAND's usage, options and exit status.\n"},
    {"version", NULL, NULL, "the version (also --version)",
     "usage: ringrouter version\n"
     "       ringrouter --version\n"
     "\n"
     "The version and, when it was built from git, `git describe` of the tree.\n"},
};
#define CLI_NCMDS (sizeof(cli_cmds) / sizeof(cli_cmds[0]))

const char *cli_version(void)
{
    return "ringrouter " RR_VERSION;
}

int cli_match(const char *word, const char *const *names, size_t n, const char *what, char *err, size_t len)
{
    int hit = -1, hits = 0;
    size_t wl = strlen(word);
    for (size_t i = 0; i < n; i++)
        if (strcmp(word, names[i]) == 0)
            return (int)i;
    for (size_t i = 0; i < n && wl; i++)
        if (strncmp(word, names[i], wl) == 0) {
            hit = (int)i;
            hits++;
        }
    if (hits == 1)
        return hit;
    /* One hit that begins every other is the one meant: `ro` is `route`,
     * not `routes`, as it was before `routes` came. */
    int shortest = -1;
    for (size_t i = 0; i < n && hits > 1; i++)
        if (strncmp(word, names[i], wl) == 0 && (shortest < 0 || strlen(names[i]) < strlen(names[shortest])))
            shortest = (int)i;
    for (size_t i = 0; i < n && shortest >= 0; i++)
        if (strncmp(word, names[i], wl) == 0 && strncmp(names[i], names[shortest], strlen(names[shortest])) != 0)
            shortest = -1;
    if (shortest >= 0)
        return shortest;
    if (hits > 1) {
        int off = snprintf(err, len, "\"%s\" is ambiguous:", word);
        for (size_t i = 0, k = 0; i < n && off > 0 && (size_t)off < len; i++)
            if (strncmp(word, names[i], wl) == 0)
                off += snprintf(err + off, len - (size_t)off, "%s %s", k++ ? "," : "", names[i]);
        return -1;
    }
    /* The nearest name, if it is near (two edits, one for a word of up to
     * three letters, so that "x" is not taken for "up") and the only one
     * that near. */
    unsigned best = wl > 3 ? 3 : 2, ties = 0;
    int near = -1;
    for (size_t i = 0; i < n; i++) {
        unsigned d = sup_edit_distance(word, names[i]);
        if (d < best) {
            best = d;
            near = (int)i;
            ties = 0;
        } else if (d == best) {
            ties++;
        }
    }
    if (near >= 0 && !ties)
        snprintf(err, len, "unknown %s \"%s\"; did you mean \"%s\"?", what, word, names[near]);
    else
        snprintf(err, len, "unknown %s \"%s\"", what, word);
    return -1;
}

const struct cli_cmd *cli_command(const char *word, char *err, size_t len)
{
    const char *names[CLI_NCMDS];
    for (size_t i = 0; i < CLI_NCMDS; i++)
        names[i] = cli_cmds[i].name;
    if (strcmp(word, "sh") == 0)
        word = "show"; /* else ambiguous with shaper, where a router's user means show */
    int i = cli_match(word, names, CLI_NCMDS, "command", err, len);
    if (i < 0)
        return NULL;
    const struct cli_cmd *c = &cli_cmds[i];
    if (c->alias_of)
        for (size_t k = 0; k < CLI_NCMDS; k++)
            if (strcmp(cli_cmds[k].name, c->alias_of) == 0)
                return &cli_cmds[k];
    return c;
}

const char *cli_subcommand(const struct cli_cmd *c, const char *word, char *err, size_t len)
{
    size_t n = 0;
    while (c->subs && c->subs[n])
        n++;
    /* iproute2's words for show: `ls`, and `list` down to `l` as ip takes it
     * (before `load`: `route l` is ip's list; `lo` and on are load). */
    size_t wl = strlen(word);
    if (c->subs && strcmp(c->subs[0], "show") == 0 && wl && (strcmp(word, "ls") == 0 || strncmp(word, "list", wl) == 0))
        return c->subs[0];
    char what[32];
    snprintf(what, sizeof(what), "%s subcommand", c->name);
    int i = cli_match(word, c->subs, n, what, err, len);
    char tmp[256];
    if (i < 0 && strncmp(err, "\"", 1) == 0) { /* ambiguous: say whose */
        snprintf(tmp, sizeof(tmp), "%s: %s", c->name, err);
        snprintf(err, len, "%s", tmp);
    } else if (i < 0 && !strstr(err, "did you mean")) { /* nothing near: the list */
        int off = snprintf(tmp, sizeof(tmp), "%s; %s takes", err, c->name);
        for (size_t k = 0; k < n && off > 0 && (size_t)off < sizeof(tmp); k++)
            off += snprintf(tmp + off, sizeof(tmp) - (size_t)off, "%s%s", k == 0 ? " " : k + 1 == n ? " or " : ", ",
                            c->subs[k]);
        snprintf(err, len, "%s", tmp);
    }
    return i < 0 ? NULL : c->subs[i];
}

void cli_help(FILE *f, const struct cli_cmd *c)
{
    if (c) {
        fputs(c->help, f);
        return;
    }
    fprintf(f, "usage: ringrouter [OPTIONS] COMMAND [ARGS] [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < CLI_NCMDS; i++)
        if (!cli_cmds[i].alias_of)
            fprintf(f, "  %-9s %s\n", cli_cmds[i].name, cli_cmds[i].summary);
    fprintf(f, "\n"
               "A command or subcommand may be shortened to any unique prefix: `ringrouter\n"
               "ro sh` is `ringrouter route show`. `ringrouter help COMMAND` (or COMMAND\n"
               "--help) says what COMMAND takes.\n"
               "\n"
               "options, before or after the command:\n"
               "  -S, --socket PATH  the control socket (default: -c's run_dir, else\n"
               "                     $RINGROUTER_SOCKET, else /run/ringrouter/control.sock)\n"
               "  -c, --config FILE  the manifest: what check and up read; the other\n"
               "                     commands find the socket in its run_dir\n"
               "  -j, --json         JSON output (status, stats, link, route show|get,\n"
               "                     neigh show, shaper show, top)\n"
               "  -a, --all          stats: the zero counters too\n"
               "      --stages       stats: CPU cycles per packet by stage\n"
               "      --rate SECONDS stats: every counter a second, two samples apart\n"
               "  -f, --force        route del, neigh del: a manifest route or neighbour\n"
               "      --diff         check: what a reload of the running supervisor would do\n"
               "      --listen ADDR:PORT  exporter: where to serve the metrics\n"
               "      --user USER[:GROUP] exporter: who to run as when started by root\n"
               "      --once         top: one frame\n"
               "  -h, --help         this help, or the command's\n"
               "  -V, --version      the version\n"
               "\n"
               "exit status: 0 ok, 3 status found a failed service, 100 usage error or\n"
               "refused request, 101 leaked buffer at shutdown (up), 111 system failure or\n"
               "no supervisor.\n"
               "The manifest format: docs/manifest.md; the commands: docs/cli.md.\n");
}
