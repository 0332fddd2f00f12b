/* SPDX-License-Identifier: MIT */
/*
 * supervisor/upgrade.c: `ringrouter upgrade SERVICE [--binary PATH]`.
 *
 * A restart (policy.c) already hands a service over at a batch boundary: the
 * running instance is asked to stop (SIGTERM), finishes its batch, publishes
 * and exits; its warm standby, exec'd and mapped, is told to go and binds
 * to the same rings, where whatever arrived meanwhile waits. An upgrade is
 * that restart with a standby exec'd from another binary:
 *
 *   1. check PATH: absolute, a regular executable file, and carrying our
 *      layout stamp (tables/layout.h), else refuse naming both stamps;
 *   2. dismiss the standby, spawn one from PATH (phase STANDBY) and wait
 *      until it is parked: it has opened every region and checked every
 *      version, so a binary that cannot run here fails now, while the old
 *      instance still forwards (a standby that ends puts the old binary back);
 *   3. restart: the old instance stops, the new one goes (phase HANDOVER);
 *   4. answer once the new one is ready. If it dies first, or is not ready
 *      within the service's upgrade_timeout_ms, the old binary is put back
 *      and started (rolled back), and the answer says so.
 * The whole time the request waits in its connection (ctl_conn.c), polled
 * each tick; the event loop never blocks on it.
 */
#include "supervisor/sup.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tables/layout.h"

#define MS(x) ((uint64_t)(x) * 1000000ull)
#define UPG_BINARY_MAX (256u << 20) /* a service binary is a few MB; more is not one */

/* The whole file at @path, or NULL with errno set. */
static char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > UPG_BINARY_MAX) {
        int e = errno ? errno : EFBIG;
        close(fd);
        errno = e;
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t have = 0;
    while (buf && have < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + have, (size_t)st.st_size - have);
        if (n <= 0) {
            free(buf);
            buf = NULL;
            errno = n < 0 ? errno : EIO;
            break;
        }
        have += (size_t)n;
    }
    close(fd);
    if (buf) {
        buf[have] = '\0';
        *len = have;
    }
    return buf;
}

/* The layout stamp in @buf, copied to @out; false if there is none. */
static bool find_stamp(const char *buf, size_t len, char *out, size_t size)
{
    const size_t tag = sizeof(TBL_LAYOUT_TAG) - 1;
    /* The tag alone is a string of its own in a binary that looks for
     * stamps (the supervisor's): the stamp is an occurrence followed by
     * versions. */
    for (const char *p = buf, *end = buf + len; (p = memmem(p, (size_t)(end - p), TBL_LAYOUT_TAG, tag)); p += tag) {
        size_t n = strnlen(p, (size_t)(end - p));
        if (n > tag) {
            snprintf(out, size, "%.*s", (int)n, p);
            return true;
        }
    }
    return false;
}

/* The ELF build id (NT_GNU_BUILD_ID) of the 64-bit ELF in @buf. The offsets
 * come from the file: each is checked against its length first. */
static void elf_build_id(const char *buf, size_t len, char *hex, size_t size)
{
    hex[0] = '\0';
    const Elf64_Ehdr *eh = (const void *)buf;
    if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > len ||
        (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
        return;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, buf + eh->e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_NOTE || ph.p_offset > len || ph.p_filesz > len - ph.p_offset)
            continue;
        size_t off = ph.p_offset, end = ph.p_offset + ph.p_filesz;
        while (end - off >= sizeof(Elf64_Nhdr)) {
            Elf64_Nhdr nh;
            memcpy(&nh, buf + off, sizeof(nh));
            size_t name = off + sizeof(nh), desc = name + ((nh.n_namesz + 3u) & ~3u);
            size_t next = desc + ((nh.n_descsz + 3u) & ~3u);
            if (nh.n_namesz > end || nh.n_descsz > end || next > end || next <= off)
                break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(buf + name, "GNU", 4) == 0) {
                size_t k = 0;
                for (uint32_t j = 0; j < nh.n_descsz && k + 3 <= size; j++, k += 2)
                    snprintf(hex + k, 3, "%02x", (unsigned char)buf[desc + j]);
                return;
            }
            off = next;
        }
    }
}

void sup_build_id(const char *path, char *hex, size_t size)
{
    size_t len;
    char *buf = read_file(path, &len);
    hex[0] = '\0';
    if (!buf)
        return;
    elf_build_id(buf, len, hex, size);
    free(buf);
}

/* A build id as `status` and the answers show it: its first 12 digits. */
static const char *short_id(const char *id)
{
    static char out[2][16];
    static int k;
    k ^= 1;
    snprintf(out[k], sizeof(out[k]), "%.12s", id[0] ? id : "none");
    return out[k];
}

/* Is @path a binary we may start? Writes why not to @f. */
static bool check_binary(const char *svc, const char *path, FILE *f)
{
    if (path[0] != '/') {
        fprintf(f, "upgrade %s: --binary %s: give an absolute path (the supervisor resolves nothing)\n", svc, path);
        return false;
    }
    /* Who could write the file or a directory above it could change what
     * the next standby runs (supervisor/trust.c); checked again at every
     * exec. The stamp is read from the file checked. */
    struct ipc_err err;
    int fd;
    if (sup_trust_open(path, &fd, &err) < 0) {
        fprintf(f, "upgrade %s: --binary refused: %s\n", svc, err.msg);
        return false;
    }
    char self[32];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    size_t len;
    char *buf = read_file(self, &len);
    close(fd);
    if (!buf) {
        fprintf(f, "upgrade %s: --binary %s: %s\n", svc, path, strerror(errno));
        return false;
    }
    char stamp[512];
    bool has = find_stamp(buf, len, stamp, sizeof(stamp));
    free(buf);
    if (!has) {
        fprintf(f, "upgrade %s: --binary %s carries no layout stamp: it is not a ringrouter service\n", svc, path);
        return false;
    }
    if (strcmp(stamp, tbl_layout_stamp) != 0) {
        fprintf(f,
                "upgrade %s: --binary %s was built for another layout of the shared regions; refused.\n"
                "  that binary:   %s\n  these regions: %s\n",
                svc, path, stamp + sizeof(TBL_LAYOUT_TAG) - 1, tbl_layout_stamp + sizeof(TBL_LAYOUT_TAG) - 1);
        return false;
    }
    return true;
}

/*
 * `upgrade supervisor [--binary PATH]`: answered at once, then the loop
 * re-execs PATH (default: the file we were exec'd from, which may be new)
 * once no answer is pending (adopt.c, sup_reexec). The services never stop:
 * the new image adopts them as a restarted supervisor would.
 */
static bool upgrade_self(struct sup *s, const char *path, FILE *f)
{
    char self[300];
    if (!path) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0 || n >= (ssize_t)sizeof(self) - 1) {
            fprintf(f, "upgrade supervisor: cannot read /proc/self/exe: %s\n", n < 0 ? strerror(errno) : "too long");
            return false;
        }
        self[n] = '\0';
        /* a replaced file: readlink says "PATH (deleted)"; PATH is the new one */
        const char *del = " (deleted)";
        size_t ln = strlen(self), ld = strlen(del);
        if (ln > ld && strcmp(self + ln - ld, del) == 0)
            self[ln - ld] = '\0';
        path = self;
    }
    if (strlen(path) >= sizeof(s->upgrade_self_binary)) {
        fprintf(f, "upgrade supervisor: --binary: a path of at most %zu bytes\n", sizeof(s->upgrade_self_binary) - 1);
        return false;
    }
    if (s->upgrade_self || s->reload || s->shutting_down) {
        fprintf(f, "upgrade supervisor: the supervisor is %s; try again\n",
                s->upgrade_self ? "already being upgraded" : s->reload ? "reloading" : "stopping");
        return false;
    }
    if (!check_binary("supervisor", path, f))
        return false;
    char build[SUP_BUILD_ID_MAX];
    sup_build_id(path, build, sizeof(build));
    snprintf(s->upgrade_self_binary, sizeof(s->upgrade_self_binary), "%s", path);
    s->upgrade_self = true;
    sup_log("supervisor: upgrade requested: re-exec'ing %s", path);
    fprintf(f, "supervisor: pid %d re-execs %s (build id %s); the services forward on and it adopts them "
               "(`ringrouter status` answers again once it has)\n",
            (int)getpid(), path, build[0] ? build : "none");
    return true;
}

bool sup_ctl_upgrade(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    const char *name = NULL, *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--binary") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else if (argv[i][0] == '-' || name) {
            fprintf(f, "upgrade: %s%s is not one of its arguments (upgrade SERVICE [--binary PATH])\n", argv[i],
                    strcmp(argv[i], "--binary") == 0 ? " without a PATH" : "");
            return false;
        } else {
            name = argv[i];
        }
    }
    struct sup_svc *v = NULL;
    for (int i = 0; name && i < s->nsvcs; i++)
        if (strcmp(s->svcs[i].name, name) == 0)
            v = &s->svcs[i];
    if (!v && name && strcmp(name, "supervisor") == 0)
        return upgrade_self(s, path, f);
    if (!v) {
        fprintf(f, "upgrade: no service \"%s\"; the services are:", name ? name : "");
        for (int i = 0; i < s->nsvcs; i++)
            fprintf(f, " %s", s->svcs[i].name);
        fprintf(f, "\n");
        return false;
    }
    if (v->upg.phase != SUP_UPG_NONE) {
        fprintf(f, "upgrade %s: an upgrade of it is already under way\n", v->name);
        return false;
    }
    if (v->state != SUP_ST_UP) {
        fprintf(f, "upgrade %s: it is %s; only a service that is up is upgraded (`ringrouter restart` starts it)\n",
                v->name, sup_state_name(v->state));
        return false;
    }
    if (!path)
        path = v->binary; /* the same path: the file there may be new */
    if (strlen(path) >= sizeof(v->binary)) {
        fprintf(f, "upgrade %s: --binary: a path of at most %zu bytes\n", v->name, sizeof(v->binary) - 1);
        return false;
    }
    if (!check_binary(v->name, path, f))
        return false;

    struct sup_upgrade *u = &v->upg;
    *u = (struct sup_upgrade){.phase = SUP_UPG_STANDBY, .old_pid = v->pid, .t0_ns = sup_now_ns()};
    snprintf(u->old_binary, sizeof(u->old_binary), "%s", v->run_binary[0] ? v->run_binary : v->binary);
    snprintf(u->old_build, sizeof(u->old_build), "%s", v->run_build);
    u->deadline_ns = u->t0_ns + MS(v->m->upgrade_timeout_ms);
    sup_log("%s: upgrade requested: %s -> %s", v->name, u->old_binary, path);
    sup_standby_dismiss(s, v);
    memmove(v->binary, path, strlen(path) + 1);
    u->sb_deaths = v->sb_deaths;
    sup_standby_spawn(s, v);
    u->spawned_ns = sup_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    u->t0_real_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - (int64_t)((u->spawned_ns - u->t0_ns) / 1000);
    *w = (struct sup_ctl_wait){.pending = true, .kind = SUP_WAIT_UPGRADE, .svc = (int)(v - s->svcs),
                               .deadline_ns = u->deadline_ns};
    return true;
}

/* Put the old binary back; the next start (or standby) uses it. */
static void roll_back(struct sup *s, struct sup_svc *v, const char *why)
{
    struct sup_upgrade *u = &v->upg;
    memcpy(v->binary, u->old_binary, sizeof(v->binary));
    if (why != u->why)
        snprintf(u->why, sizeof(u->why), "%.*s", (int)sizeof(u->why) - 1, why);
    u->rolled_back = true;
    sup_warn("%s: upgrade rolled back to %s: %s", v->name, u->old_binary, why);
    (void)s;
}

void sup_upgrade_died(struct sup *s, struct sup_svc *v)
{
    if (v->upg.phase != SUP_UPG_HANDOVER || v->upg.rolled_back)
        return;
    char why[160];
    snprintf(why, sizeof(why), "the new instance (pid %d) %.96s before it was ready", (int)v->upg.new_pid,
             v->last_exit[0] ? v->last_exit : "ended");
    roll_back(s, v, why);
}

static void finish(struct sup_svc *v, struct sup_ctl_wait *w)
{
    v->upg.phase = SUP_UPG_NONE;
    w->pending = false;
}

bool sup_upgrade_poll(struct sup *s, struct sup_ctl_wait *w, uint64_t now, FILE *f, bool *ok)
{
    struct sup_svc *v = &s->svcs[w->svc];
    struct sup_upgrade *u = &v->upg;
    *ok = false;
    if (u->phase == SUP_UPG_STANDBY) {
        if (v->sb_deaths != u->sb_deaths || (v->sb_pid <= 0 && !v->sb_parked)) {
            /* The new binary could not even park: nothing was handed over. */
            fprintf(f, "upgrade %s: the new binary %s %s before it was ready to take over; %s (pid %d) goes on "
                       "running %s (its words are in the supervisor's log)\n",
                    v->name, v->binary, v->sb_exit[0] ? v->sb_exit : "ended", v->name, (int)v->pid,
                    u->old_binary);
            roll_back(s, v, "the new standby ended");
            sup_standby_dismiss(s, v);
            sup_standby_spawn(s, v);
            finish(v, w);
            return true;
        }
        if (now >= u->deadline_ns) {
            fprintf(f, "upgrade %s: the new binary %s was not ready to take over within %u ms "
                       "(upgrade_timeout_ms); %s goes on running %s\n",
                    v->name, v->binary, v->m->upgrade_timeout_ms, v->name, u->old_binary);
            roll_back(s, v, "the new standby was not parked in time");
            sup_standby_dismiss(s, v);
            sup_standby_spawn(s, v);
            finish(v, w);
            return true;
        }
        if (!v->sb_parked || v->state != SUP_ST_UP)
            return false;
        /* Parked: every region opened, every version checked. Hand over. */
        u->why[0] = '\0';
        u->handover_ns = now;
        u->new_pid = v->sb_pid;
        u->phase = SUP_UPG_HANDOVER;
        u->deadline_ns = now + MS(v->m->upgrade_timeout_ms);
        sup_event(s, v, SUP_EV_RESTART, 0);
        return false;
    }
    if (u->rolled_back) {
        if (v->state != SUP_ST_UP && now < u->deadline_ns + MS(5000))
            return false; /* the answer says where the old binary is: wait for it */
        fprintf(f, "upgrade %s: rolled back: %s; %s runs %s again (pid %d, %s)\n", v->name, u->why, v->name,
                u->old_binary, (int)v->pid, sup_state_name(v->state));
        finish(v, w);
        return true;
    }
    if (v->state == SUP_ST_UP && v->pid == u->new_pid) {
        double blackout_ms = (double)(v->ready_ns - u->handover_ns) / 1e6;
        sup_log("%s: upgraded: pid %d (build %s) -> pid %d (build %s) in %.1f ms", v->name, (int)u->old_pid,
                short_id(u->old_build), (int)v->pid, short_id(v->run_build), blackout_ms);
        /* Each step's end, from the request: where a lost datagram fell
         * (bench/upgrade). The old instance stopped when its successor was
         * told to go (policy.c, act_stopped). */
        sup_log("%s: upgrade steps from %lld.%06lld: standby exec'd +%.1f, parked +%.1f, old stopped +%.1f, "
                "new ready +%.1f ms", v->name, (long long)(u->t0_real_us / 1000000), (long long)(u->t0_real_us % 1000000),
                (double)(u->spawned_ns - u->t0_ns) / 1e6, (double)(u->handover_ns - u->t0_ns) / 1e6,
                (double)(v->died_ns - u->t0_ns) / 1e6, (double)(v->ready_ns - u->t0_ns) / 1e6);
        fprintf(f, "upgraded %s: pid %d %s (build %s) -> pid %d %s (build %s); handover %.1f ms\n", v->name,
                (int)u->old_pid, u->old_binary, short_id(u->old_build), (int)v->pid, v->run_binary,
                short_id(v->run_build), blackout_ms);
        *ok = true;
        finish(v, w);
        return true;
    }
    if (now >= u->deadline_ns) {
        char why[140];
        snprintf(why, sizeof(why), "the new instance (pid %d) was not ready within %u ms (upgrade_timeout_ms)",
                 (int)u->new_pid, v->m->upgrade_timeout_ms);
        roll_back(s, v, why);
        /* Its death restarts the service from the old binary (policy.c). */
        if (v->pid == u->new_pid && v->pidfd >= 0)
            syscall(SYS_pidfd_send_signal, v->pidfd, SIGKILL, NULL, 0);
        return false;
    }
    return false;
}
