/* SPDX-License-Identifier: MIT */
/*
 * supervisor/uids.c: who the services run as, settled at `up` before
 * anything is created. By default each service has a uid of its own,
 * [router] uids' FIRST + its index in the manifest's service table (also its
 * gid, with no supplementary group), so that no service can signal, ptrace
 * or prlimit another: the kernel allows those only between processes of one
 * uid. Those uids have no passwd entry (as systemd's DynamicUser), so this
 * file makes sure that they are no one else's on this machine: no user or
 * group of the range (enumerated, and each uid in use asked for by number,
 * for databases that do not enumerate), no user namespace delegation over
 * it (/etc/subuid, /etc/subgid), and each uid in use mapped in our own user
 * namespace, or setuid would fail in every child. The manifest has already
 * checked the range itself (manifest_value.c) and that it holds every
 * service (manifest_check.c).
 *
 * With [router] user, every service runs as that one user instead: the old,
 * weaker way, resolved here too.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Refuse the range: "FILE:LINE: [router] uids: ..." (FILE: [router] uids
 * FIRST-LAST, the default: ... when the manifest leaves it out). */
static int uids_refuse(const struct sup *s, struct ipc_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int uids_refuse(const struct sup *s, struct ipc_err *err, const char *fmt, ...)
{
    const struct sup_router *r = &s->m.router;
    unsigned line = r->src.key_line[SUP_ROUTER_UIDS];
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (line)
        return ipc_errf(err, -EPERM, "%s:%u: [router] uids: %s", s->manifest_name, line, msg);
    return ipc_errf(err, -EPERM, "%s: [router] uids %u-%u, the default: %s", s->manifest_name, r->uids.first,
                    r->uids.last, msg);
}

/*
 * Is every id of [lo, hi] mapped in this process's user namespace (@path,
 * /proc/self/uid_map or gid_map: "INSIDE OUTSIDE COUNT" lines)? The first
 * one that is not goes to *@miss. A map that cannot be read is taken for the
 * initial namespace's, which maps everything.
 */
static bool ids_mapped(const char *path, uint32_t lo, uint32_t hi, uint32_t *miss)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    unsigned long long in, out, n;
    uint64_t next = lo; /* the lowest id not yet seen mapped */
    bool progress = true;
    /* Ranges may come in any order: sweep until one pass adds nothing. */
    while (next <= hi && progress) {
        progress = false;
        rewind(f);
        while (fscanf(f, "%llu %llu %llu", &in, &out, &n) == 3) {
            if (in <= next && next < in + n) {
                next = in + n;
                progress = true;
            }
        }
    }
    fclose(f);
    if (next <= hi) {
        *miss = (uint32_t)next;
        return false;
    }
    return true;
}

/*
 * /etc/subuid or /etc/subgid ("OWNER:START:COUNT" lines): a range delegated
 * to OWNER's user namespaces that meets [lo, hi]; its processes there could
 * run as our services' uids. Returns the line number (0: none) and fills
 * @owner, @start and @count.
 */
static unsigned sub_overlap(const char *path, uint32_t lo, uint32_t hi, char *owner, size_t olen,
                            unsigned long long *start, unsigned long long *count)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char line[512];
    unsigned no = 0, hit = 0;
    while (!hit && fgets(line, sizeof(line), f)) {
        no++;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || sscanf(c2 + 1, "%llu", count) != 1 || sscanf(c1 + 1, "%llu", start) != 1 || *count == 0)
            continue;
        if (*start <= hi && *start + *count - 1 >= lo) {
            *c1 = '\0';
            snprintf(owner, olen, "%.*s", (int)(olen - 1), line);
            hit = no;
        }
    }
    fclose(f);
    return hit;
}

/* Each service's own uid: the range must be no one else's (see the top). */
static int uids_check(struct sup *s, struct ipc_err *err)
{
    const struct sup_router *r = &s->m.router;
    uint32_t lo = r->uids.first, hi = r->uids.last;
    /* The uids in use: one per service, from FIRST (manifest_check.c). */
    uint32_t used_hi = lo + (uint32_t)s->m.nservices - 1;
    uint32_t miss;
    if (!ids_mapped("/proc/self/uid_map", lo, used_hi, &miss))
        return uids_refuse(s, err, "uid %u is not mapped in this user namespace (/proc/self/uid_map)", miss);
    if (!ids_mapped("/proc/self/gid_map", lo, used_hi, &miss))
        return uids_refuse(s, err, "gid %u is not mapped in this user namespace (/proc/self/gid_map)", miss);

    /* A user of the range may own files, or run processes, that a service
     * of its uid could then touch. */
    /* The entry is copied before endpwent/endgrent, which may free it. */
    char name[33] = "";
    uint32_t id = 0;
    const struct passwd *pw;
    setpwent();
    while ((pw = getpwent()))
        if (pw->pw_uid >= lo && pw->pw_uid <= hi) {
            id = pw->pw_uid;
            snprintf(name, sizeof(name), "%s", pw->pw_name);
            break;
        }
    endpwent();
    for (uint32_t u = lo; !name[0] && u <= used_hi; u++)
        if ((pw = getpwuid(u))) {
            id = u;
            snprintf(name, sizeof(name), "%s", pw->pw_name);
        }
    if (name[0])
        return uids_refuse(s, err, "uid %u is user \"%s\" (passwd); the services' uids must be no one else's", id,
                           name);
    const struct group *gr;
    setgrent();
    while ((gr = getgrent()))
        if (gr->gr_gid >= lo && gr->gr_gid <= hi) {
            id = gr->gr_gid;
            snprintf(name, sizeof(name), "%s", gr->gr_name);
            break;
        }
    endgrent();
    for (uint32_t g = lo; !name[0] && g <= used_hi; g++)
        if ((gr = getgrgid(g))) {
            id = g;
            snprintf(name, sizeof(name), "%s", gr->gr_name);
        }
    if (name[0])
        return uids_refuse(s, err, "gid %u is group \"%s\"; the services' gids (their uids) must be no one else's", id,
                           name);

    static const char *const subs[] = {"/etc/subuid", "/etc/subgid"};
    for (int i = 0; i < 2; i++) {
        char owner[33];
        unsigned long long start, count;
        unsigned line = sub_overlap(subs[i], lo, hi, owner, sizeof(owner), &start, &count);
        if (line)
            return uids_refuse(s, err, "%s line %u gives %llu-%llu to the user namespaces of \"%s\"", subs[i], line,
                               start, start + count - 1, owner);
    }
    return 0;
}

/* [router] user: every service runs as that user (and group). */
static int user_resolve(struct sup *s, struct ipc_err *err)
{
    struct passwd *pw = getpwnam(s->m.router.user);
    if (!pw)
        return ipc_errf(err, -ENOENT, "%s: [router] user: no user \"%s\" on this system", s->manifest_name,
                        s->m.router.user);
    s->uid = pw->pw_uid;
    s->gid = pw->pw_gid;
    if (s->m.router.group[0]) {
        struct group *gr = getgrnam(s->m.router.group);
        if (!gr)
            return ipc_errf(err, -ENOENT, "%s: [router] group: no group \"%s\" on this system", s->manifest_name,
                            s->m.router.group);
        s->gid = gr->gr_gid;
    }
    if (s->uid == 0)
        return ipc_errf(err, -EPERM, "%s: [router] user: services must not run as root", s->manifest_name);
    return 0;
}

int sup_ids_resolve(struct sup *s, struct ipc_err *err)
{
    return s->m.router.user[0] ? user_resolve(s, err) : uids_check(s, err);
}

void sup_svc_ids(const struct sup *s, struct sup_svc *v)
{
    if (s->m.router.user[0]) {
        v->uid = s->uid;
        v->gid = s->gid;
    } else {
        v->uid = v->m->uid;
        v->gid = v->m->uid;
    }
}

void sup_ids_log(const struct sup *s)
{
    const struct sup_router *r = &s->m.router;
    if (r->user[0]) {
        sup_notice("every service runs as user %s (uid %u, gid %u): they share a uid, so each can signal the others; "
                   "[router] uids gives each its own",
                   r->user, (unsigned)s->uid, (unsigned)s->gid);
        return;
    }
    for (int i = 0; i < s->nsvcs; i++)
        sup_log("%s: runs as uid %u, gid %u, its own", s->svcs[i].name, (unsigned)s->svcs[i].uid,
                (unsigned)s->svcs[i].gid);
}
