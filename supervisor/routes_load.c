/* SPDX-License-Identifier: MIT */
/*
 * supervisor/routes_load.c: `ringrouter route load FILE|- [--merge]`, a
 * whole set of runtime routes, IPv4 and IPv6, at once (docs/routing.md,
 * "route load"). Every line is read and checked before anything changes: an error
 * names its line, and the FIB is left as it was. Then the FIB moves to the
 * new set (each entry switching in one atomic store, as `route replace`
 * does), with one generation switch and one reclaim at its end: without
 * --merge the runtime routes the file does not name are deleted (a
 * replaced manifest route gets its own next hop back, as `route flush`
 * does), with --merge they stay. All of it a slice at a time between the
 * event loop's other work (the job, below).
 *
 * A line's forms, one next hop or several, and its checks are
 * routes_load_parse.c's. An IPv6 route's runtime record is made as it goes
 * in: the list of runtime IPv6 routes is searched linearly, so IPv6 loads
 * are meant for thousands of routes, not a full table.
 *
 * The client hands the text over in a memfd of its own (ctl.c,
 * routes_index.c), read here through /proc: a regular file in memory,
 * which no read can block on.
 */
#include "supervisor/routes_load.h"
#include "supervisor/route6.h"
#include "supervisor/route_multi.h"
#include "supervisor/routes.h"
#include "supervisor/sup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* A FIB change, retried while the FIB's retired groups are still held by a reader. */
static int load_fib(struct sup *s, uint32_t addr, unsigned len, const struct fib_nh *nh)
{
    int ret;
    for (int tries = 0; (ret = nh ? fib_replace(&s->fib, addr, len, nh) : fib_del(&s->fib, addr, len)) == -EAGAIN &&
                        tries < 2000;
         tries++) {
        fib_reclaim(&s->fib);
        usleep(50);
    }
    return ret;
}

static const struct sup_route *manifest_rt(const struct sup *s, uint32_t addr, unsigned len)
{
    for (size_t i = 0; i < s->m.nroutes; i++)
        if (!s->m.routes[i].v6 && s->m.routes[i].prefix.addr == addr && s->m.routes[i].prefix.len == len)
            return &s->m.routes[i];
    return NULL;
}

/*
 * The load is a job that the event loop runs a slice at a time
 * (LOAD_SLICE_NS a turn, from sup_routes_tick), so that `status`, the
 * services' pulse and the health checks go on between slices however long
 * the file is: read and check every line (PARSE: nothing has changed
 * yet), delete the runtime routes the file does not name (DROP4, DROP6;
 * not with --merge), write the file's routes (APPLY), make the list of
 * runtime routes (LIST, one pass of copies) and its index, built beside
 * the one in use and swapped in whole (INDEX). Whatever the FIB writes
 * retire waits for one generation switch at the end of APPLY
 * (fib_gen_defer). Until the answer, `route add|replace|del|flush|load`
 * are refused (sup_route_load_busy): the job owns the runtime list.
 *
 * Memory: one job at a time. It holds, per route of the file, a struct
 * sup_load_route (and a struct sup_mp for a line of several next hops) and
 * two to four slots of its `seen` map (sizeof(struct sup_rte) each), then
 * the new index beside the old; and it takes at most as many routes as
 * the two FIBs hold (their max_prefixes), so that is the bound, whatever
 * the file's size.
 */
#define LOAD_SLICE_NS 4000000ull
#define LOAD_POLL_KEY 0x7201u /* our eventfd's epoll key type: the loop's switch skips it */
#define LOAD_SKIPPED 0xffu    /* a route's len once a daemon took its prefix meanwhile */
#define LOAD_UNMAP (8u << 20)

enum { LD_PARSE, LD_DROP4, LD_DROP6, LD_APPLY, LD_LIST, LD_INDEX, LD_DONE };

struct load_job {
    int phase;
    bool merge, ok;
    FILE *in;
    int wake_fd;
    char *line;
    size_t llen;
    unsigned lineno;
    struct sup_load_route *rs;
    size_t n, cap, i, max;
    size_t parsed; /* rs[0..parsed) may hold a group (mp) that is theirs to free; n is less after a failed APPLY */
    struct sup_rtmap seen, index;
    uint8_t *drop; /* per runtime IPv4 row: it leaves the list (DROP4) */
    size_t nrows;  /* the runtime IPv4 rows DROP4 walks */
    unsigned added, changed, same, deleted, daemon;
    uint64_t gen0, gens, t0, last_end, gap_max, slice_max;
    unsigned slices;
    int slice_max_phase; /* where the longest slice began */
    struct {
        uint8_t *p;
        size_t len;
    } grave[4]; /* maps to unmap, LOAD_UNMAP bytes a slice: tens of MB at once take tens of ms */
    unsigned ngrave;
    bool swapped; /* the new index is in place */
    bool listed;  /* LIST kept the rows that stay */
    size_t keep;  /* LIST: the rows kept so far */
    uint64_t cpu_max;    /* the most CPU a slice took: the rest of its length was the machine's */
    FILE *out; /* the answer, into text */
    char *text;
    size_t len;
};

static struct load_job *job;

static void load_wake(void)
{
    uint64_t one = 1;
    if (job->wake_fd >= 0 && write(job->wake_fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: it is readable already */
    }
}

/* Map @m's tables to be unmapped a slice at a time (load_dig); @m empty. */
static void load_bury(struct load_job *j, struct sup_rtmap *m)
{
    struct sup_rte *t[2] = {m->e, m->old};
    size_t n[2] = {m->cap, m->old_cap};
    for (int i = 0; i < 2; i++) {
        if (!t[i])
            continue;
        if (j->ngrave == sizeof(j->grave) / sizeof(j->grave[0])) {
            munmap(t[i], n[i] * sizeof(struct sup_rte));
            continue;
        }
        j->grave[j->ngrave].p = (uint8_t *)t[i];
        j->grave[j->ngrave++].len = n[i] * sizeof(struct sup_rte);
    }
    memset(m, 0, sizeof(*m));
}

/* Unmap LOAD_UNMAP bytes of what is buried; true when nothing is left. */
static bool load_dig(struct load_job *j)
{
    if (!j->ngrave)
        return true;
    size_t k = j->ngrave - 1, len = j->grave[k].len < LOAD_UNMAP ? j->grave[k].len : LOAD_UNMAP;
    munmap(j->grave[k].p + j->grave[k].len - len, len);
    j->grave[k].len -= len;
    j->ngrave -= j->grave[k].len == 0;
    return false;
}

static bool load_time(unsigned k, uint64_t until)
{
    return (k & 63) == 63 && sup_now_ns() >= until;
}

/* PARSE: true when every line is read (or one failed: !ok). */
static bool load_parse(struct sup *s, struct load_job *j, uint64_t until)
{
    for (unsigned k = 0;; k++) {
        if (load_time(k, until))
            return false;
        if (getline(&j->line, &j->llen, j->in) < 0)
            return true;
        j->lineno++;
        char e[240];
        struct sup_load_route r;
        int kind = sup_route_load_line(s, j->line, &r, e, sizeof(e));
        if (kind < 0) {
            fprintf(j->out, "route load: line %u: %s; nothing changed\n", j->lineno, e);
            j->ok = false;
            return true;
        }
        if (kind == 0)
            continue;
        uint8_t d[16];
        int fam = r.v6 ? AF_INET6 : AF_INET;
        if (r.v6)
            memcpy(d, r.addr6, 16);
        else
            sup_rt_key4(r.addr, d);
        struct sup_rte *x = sup_rtmap_find(&j->seen, (uint8_t)fam, d, r.len);
        if (x) {
            char b[INET6_ADDRSTRLEN];
            fprintf(j->out, "route load: line %u: %s/%u again (first on line %u); nothing changed\n", j->lineno,
                    r.v6 ? sup_addr6_str(r.addr6, b, sizeof(b)) : sup_ip_str(r.addr, b, sizeof(b)), r.len, x->epoch);
            goto refused;
        }
        if (j->n == j->max) {
            fprintf(j->out, "route load: line %u: more than %zu routes, what the FIBs hold; nothing changed\n",
                    j->lineno, j->max);
            goto refused;
        }
        if (!(x = sup_rtmap_insert(&j->seen, (uint8_t)fam, d, r.len))) {
            fprintf(j->out, "route load: out of memory\n");
            goto refused;
        }
        x->epoch = j->lineno;
        if (j->n == j->cap) {
            size_t c = j->cap ? j->cap * 2 : 1024;
            struct sup_load_route *nr = realloc(j->rs, c * sizeof(*nr));
            if (!nr) {
                fprintf(j->out, "route load: out of memory\n");
                goto refused;
            }
            j->rs = nr;
            j->cap = c;
        }
        j->rs[j->n++] = r;
        j->parsed = j->n;
        continue;
    refused:
        sup_mp_free(r.mp); /* not in rs: nothing else would free it */
        j->ok = false;
        return true;
    }
}

/* After a refused line: the groups of the rows read, a slice at a time
 * (a file of a million groups is a million frees); true when all are. */
static bool load_unown(struct load_job *j, uint64_t until)
{
    for (unsigned k = 0; j->i < j->parsed; j->i++, k++) {
        if (load_time(k, until))
            return false;
        sup_mp_free(j->rs[j->i].mp);
        j->rs[j->i].mp = NULL;
    }
    j->parsed = 0;
    return true;
}

/* DROP4: each runtime IPv4 row the file names leaves the list (the file's
 * now); without --merge, so does every other, and its FIB entry goes (a
 * manifest route gets its own next hop back). */
static bool load_drop4(struct sup *s, struct load_job *j, uint64_t until)
{
    for (unsigned k = 0; j->i < j->nrows; j->i++, k++) {
        if (load_time(k, until))
            return false;
        const struct sup_rt_route *o = &s->rt_routes[j->i];
        uint8_t d[16];
        sup_rt_key4(o->addr, d);
        if (sup_rtmap_find(&j->seen, AF_INET, d, o->len)) {
            j->drop[j->i] = 1;
            continue;
        }
        if (j->merge)
            continue;
        const struct sup_route *mr = manifest_rt(s, o->addr, o->len);
        struct fib_nh mnh;
        if (mr)
            mnh = (struct fib_nh){.gw = mr->direct ? 0 : mr->via, .port = (uint16_t)mr->port};
        int ret = mr && mr->nnh ? sup_mroute_put(s, mr) : load_fib(s, o->addr, o->len, mr ? &mnh : NULL);
        if (ret < 0 && ret != -ENOENT) {
            char b[24];
            sup_err("route load: %s/%u: %s", sup_ip_str(o->addr, b, sizeof(b)), o->len, strerror(-ret));
        }
        j->drop[j->i] = 1;
        j->deleted++;
    }
    return true;
}

/* DROP6: without --merge, the runtime IPv6 routes the file does not name,
 * downwards (a drop moves the last row into its place). */
static bool load_drop6(struct sup *s, struct load_job *j, uint64_t until)
{
    for (unsigned k = 0; j->i > 0 && !j->merge; k++) {
        if (load_time(k, until))
            return false;
        const struct sup_rt_route6 o = s->rt6_routes[--j->i];
        if (sup_rtmap_find(&j->seen, AF_INET6, o.addr, o.len))
            continue;
        int ret = sup_route6_drop(s, o.addr, o.len);
        if (ret < 0) {
            char b[INET6_ADDRSTRLEN];
            sup_err("route load: %s/%u: %s", sup_addr6_str(o.addr, b, sizeof(b)), o.len, strerror(-ret));
        }
        j->deleted++;
    }
    return true;
}

/* One route of the file into the FIB: 0, or -errno. A prefix a daemon
 * took since its line was checked stays the daemon's. */
static int load_apply_one(struct sup *s, struct load_job *j, struct sup_load_route *r)
{
    uint8_t d[16];
    if (r->v6)
        memcpy(d, r->addr6, 16);
    else
        sup_rt_key4(r->addr, d);
    if (sup_routes_has(s, r->v6 ? AF_INET6 : AF_INET, d, r->len)) {
        r->len = LOAD_SKIPPED;
        j->daemon++;
        return 0;
    }
    if (r->v6 || r->mp) {
        bool had;
        struct sup_mp_line ml = {.v6 = r->v6, .addr = r->addr, .len = r->len, .mp = r->mp};
        memcpy(ml.addr6, r->addr6, 16);
        int ret = r->mp ? sup_route_mp_load_set(s, &ml, &had) : sup_route6_load_set(s, r->addr6, r->len, &r->nh6, &had);
        if (ret < 0)
            return ret;
        j->same += ret == 0;
        j->changed += ret == 1 && had;
        j->added += ret == 1 && !had;
        return 0;
    }
    struct fib_nh cur;
    bool had = fib_get(&s->fib, r->addr, r->len, &cur) == 0;
    /* A group's header is {gw = its index, port 0}: group 0 would pass for `P port <port 0>` */
    if (had && !(cur.flags & FIB_NH_F_GROUP) && cur.gw == r->nh.gw && cur.port == r->nh.port) {
        j->same++;
        return 0;
    }
    int ret = load_fib(s, r->addr, r->len, &r->nh);
    if (ret < 0)
        return ret;
    if (had)
        j->changed++;
    else
        j->added++;
    return 0;
}

static bool load_apply(struct sup *s, struct load_job *j, uint64_t until)
{
    for (unsigned k = 0; j->i < j->n; j->i++, k++) {
        if (load_time(k, until))
            return false;
        const struct sup_load_route *r = &j->rs[j->i];
        int ret = load_apply_one(s, j, &j->rs[j->i]);
        if (ret < 0) {
            char b[INET6_ADDRSTRLEN];
            fprintf(j->out, "route load: %s/%u: %s; %zu of %zu routes loaded\n",
                    r->v6 ? sup_addr6_str(r->addr6, b, sizeof(b)) : sup_ip_str(r->addr, b, sizeof(b)), r->len,
                    strerror(-ret), j->i, j->n);
            j->n = j->i; /* what is in the FIB is what we keep */
            j->ok = false;
            break;
        }
    }
    return true;
}

/* LIST: the rows that stay, then the file's IPv4 routes (the IPv6 ones are
 * recorded as they go in: sup_route6_load_set, sup_route_mp_load_set), a
 * slice at a time: the rows kept move down (j->i read, j->keep written),
 * then the file's are added after them (j->i in the file), each IPv4
 * group handed to the list, the others' freed. */
static bool load_list(struct sup *s, struct load_job *j, uint64_t until)
{
    unsigned k = 0;
    for (; !j->listed && j->i < s->n_rt_routes; j->i++, k++) {
        if (load_time(k, until))
            return false;
        if (j->i < j->nrows && j->drop[j->i]) {
            sup_mp_free(s->rt_routes[j->i].mp);
            continue;
        }
        s->rt_routes[j->keep++] = s->rt_routes[j->i];
    }
    if (!j->listed) {
        size_t add = j->n; /* at most: the IPv6 ones and those a daemon took are not added */
        s->n_rt_routes = j->keep;
        j->listed = true;
        j->i = 0;
        if (j->keep + add > s->cap_rt_routes) {
            struct sup_rt_route *nr = realloc(s->rt_routes, (j->keep + add) * sizeof(*nr));
            if (!nr) {
                fprintf(j->out, "route load: out of memory keeping the list of runtime routes\n");
                j->ok = false;
                j->i = j->n;
                return true;
            }
            s->rt_routes = nr;
            s->cap_rt_routes = j->keep + add;
        }
    }
    for (; j->i < j->parsed; j->i++, k++) { /* past j->n after a failed APPLY: only their groups to free */
        if (load_time(k, until))
            return false;
        struct sup_load_route *r = &j->rs[j->i];
        if (j->i < j->n && !r->v6 && r->len != LOAD_SKIPPED) {
            s->rt_routes[s->n_rt_routes++] =
                (struct sup_rt_route){.addr = r->addr, .len = r->len, .nh = r->nh, .mp = r->mp};
            r->mp = NULL; /* the list's now */
        }
        sup_mp_free(r->mp); /* an IPv6 group's record has its own copy (rt6_set) */
        r->mp = NULL;
    }
    j->parsed = 0;
    return true;
}

/* INDEX: the new list's index beside the old one, then swapped in. */
static bool load_index(struct sup *s, struct load_job *j, uint64_t until)
{
    for (unsigned k = 0; j->i < s->n_rt_routes; j->i++, k++) {
        if (load_time(k, until))
            return false;
        uint8_t d[16];
        sup_rt_key4(s->rt_routes[j->i].addr, d);
        struct sup_rte *e = sup_rtmap_insert(&j->index, AF_INET, d, s->rt_routes[j->i].len);
        if (!e) { /* the old index stays: rt_find checks each row it names */
            sup_err("route load: out of memory indexing the runtime routes");
            return true;
        }
        e->epoch = (uint32_t)j->i;
    }
    if (!j->swapped) {
        sup_rt_index_swap(&j->index);
        load_bury(j, &j->index); /* the index before */
        j->swapped = true;
    }
    return true;
}

static uint64_t fib_gen_now(struct sup *s)
{
    struct fib_stats st;
    fib_get_stats(&s->fib, &st);
    return st.gen;
}

/* The job's end: its memory back, the answer written, and the log line. */
static void load_end(struct load_job *j)
{
    if (j->in)
        fclose(j->in);
    j->in = NULL;
    free(j->line);
    for (size_t i = 0; i < j->parsed; i++) /* only when memory ran out after PARSE: LIST and load_unown free them */
        sup_mp_free(j->rs[i].mp);
    free(j->rs);
    free(j->drop);
    j->line = NULL;
    j->rs = NULL;
    j->drop = NULL;
    sup_rtmap_free(&j->seen);
    sup_rtmap_free(&j->index);
    while (!load_dig(j))
        ;
    if (j->phase > LD_PARSE) {
        sup_log("route load%s: %zu routes: %u added, %u changed, %u unchanged, %u deleted; %u slices in %.1f s, "
                "the longest %.1f ms (from %s; %.1f ms of CPU at most), the loop's longest turn between two %.1f ms; "
                "%llu FIB generation switches",
                j->merge ? " --merge" : "", j->n, j->added, j->changed, j->same, j->deleted, j->slices + 1,
                (double)(sup_now_ns() - j->t0) / 1e9, (double)j->slice_max / 1e6,
                (const char *const[]){"parse", "drop", "drop6", "apply", "list", "index", "end"}[j->slice_max_phase],
                (double)j->cpu_max / 1e6,
                (double)j->gap_max / 1e6,
                (unsigned long long)j->gens);
        if (j->ok)
            fprintf(j->out, "loaded %zu routes%s: %u added, %u changed, %u unchanged, %u deleted\n", j->n,
                    j->merge ? " (merge)" : "", j->added, j->changed, j->same, j->deleted);
        if (j->daemon)
            fprintf(j->out, "%u of them a daemon took meanwhile: they stay the daemon's\n", j->daemon);
    }
    j->phase = LD_DONE;
}

/* A slice of the job: phases follow each other while its time lasts. */
static void load_step(struct sup *s)
{
    struct load_job *j = job;
    uint64_t t = sup_now_ns(), until = t + LOAD_SLICE_NS;
    int phase0 = j->phase;
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    if (j->last_end && t - j->last_end > j->gap_max)
        j->gap_max = t - j->last_end;
    fib_gen_defer(&s->fib, true);
    fib6_gen_defer(&s->fib6, true);
    for (bool more = true; more && j->phase != LD_DONE;) {
        switch (j->phase) {
        case LD_PARSE:
            if (j->ok && !(more = load_parse(s, j, until)))
                break;
            if (!j->ok) {
                if ((more = load_unown(j, until)))
                    load_end(j);
                break;
            }
            fclose(j->in);
            j->in = NULL;
            j->phase = LD_DROP4;
            j->i = 0;
            j->nrows = s->n_rt_routes;
            j->gen0 = fib_gen_now(s);
            if (!(j->drop = calloc(j->nrows + 1, 1))) {
                fprintf(j->out, "route load: out of memory; nothing changed\n");
                j->ok = false;
                j->phase = LD_PARSE;
                load_end(j);
            }
            break;
        case LD_DROP4:
            if ((more = load_drop4(s, j, until))) {
                j->phase = LD_DROP6;
                j->i = s->n_rt6_routes;
            }
            break;
        case LD_DROP6:
            if ((more = load_drop6(s, j, until))) {
                j->phase = LD_APPLY;
                j->i = 0;
            }
            break;
        case LD_APPLY:
            if (!(more = load_apply(s, j, until)))
                break;
            /* The load's one switch, for all that it retired. */
            fib_gen_commit(&s->fib, &s->fib6);
            fib_reclaim(&s->fib);
            fib6_reclaim(&s->fib6);
            j->gens = fib_gen_now(s) - j->gen0;
            j->phase = LD_LIST;
            j->i = j->keep = 0;
            break;
        case LD_LIST:
            if ((more = load_list(s, j, until))) {
                j->phase = LD_INDEX;
                j->i = 0;
            }
            break;
        case LD_INDEX:
            if (j->seen.cap)
                load_bury(j, &j->seen);
            if (!load_dig(j)) {
                more = false;
                break;
            }
            if ((more = load_index(s, j, until)) && load_dig(j))
                load_end(j);
            else
                more = false;
            break;
        }
    }
    fib_gen_defer(&s->fib, false);
    fib6_gen_defer(&s->fib6, false);
    j->last_end = sup_now_ns();
    j->slices++;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    uint64_t cpu = (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec));
    if (cpu > j->cpu_max)
        j->cpu_max = cpu;
    if (j->last_end - t > j->slice_max) {
        j->slice_max = j->last_end - t;
        j->slice_max_phase = phase0;
    }
}

/* The answer, into @f; the job gone. */
static bool load_take(FILE *f)
{
    fclose(job->out);
    fwrite(job->text, 1, job->len, f);
    bool ok = job->ok;
    if (job->wake_fd >= 0)
        close(job->wake_fd); /* out of the loop's epoll set with it */
    free(job->text);
    free(job);
    job = NULL;
    return ok;
}

bool sup_route_load(struct sup *s, char **argv, int argc, FILE *f, struct sup_ctl_wait *w)
{
    bool merge = argc == 2 && strcmp(argv[1], "merge") == 0;
    if (argc < 1 || argc > 2 || (argc == 2 && !merge)) {
        fprintf(f, "route load: usage: route load FILE|- [--merge]\n");
        return false;
    }
    if (job) {
        fprintf(f, "route load: another route load is under way; try again once it has answered\n");
        return false;
    }
    int fd = open(argv[0], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        fprintf(f, "route load: the routes' memfd (%s): %s\n", argv[0], fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return false;
    }
    FILE *in = fdopen(fd, "r");
    struct load_job *j = in ? calloc(1, sizeof(*j)) : NULL;
    if (j && !(j->out = open_memstream(&j->text, &j->len))) {
        free(j);
        j = NULL;
    }
    if (!j) {
        fprintf(f, "route load: %s\n", strerror(errno));
        if (in)
            fclose(in);
        else
            close(fd);
        return false;
    }
    j->in = in;
    j->merge = merge;
    j->ok = true;
    j->t0 = sup_now_ns();
    j->max = (size_t)s->fib.m.lim.max_prefixes + s->fib6.m.lim.max_prefixes;
    j->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)LOAD_POLL_KEY << 32};
    if (j->wake_fd >= 0 && (!w || epoll_ctl(s->ep_fd, EPOLL_CTL_ADD, j->wake_fd, &ev) < 0)) {
        close(j->wake_fd); /* the loop's timer drives it then */
        j->wake_fd = -1;
    }
    job = j;
    if (!w) { /* no connection to answer later: the whole load now */
        while (job->phase != LD_DONE)
            load_step(s);
        return load_take(f);
    }
    *w = (struct sup_ctl_wait){.pending = true, .kind = SUP_WAIT_ROUTE_LOAD};
    load_wake();
    return true;
}

void sup_route_load_tick(struct sup *s)
{
    if (!job)
        return;
    uint64_t v;
    if (job->wake_fd >= 0 && read(job->wake_fd, &v, sizeof(v)) < 0) {
        /* EAGAIN: the timer brought us */
    }
    if (job->phase == LD_DONE)
        return; /* the answer waits for its connection's turn (sup_ctl_tick) */
    load_step(s);
    load_wake(); /* more to do, or the answer to give */
}

bool sup_route_load_poll(struct sup *s, struct sup_ctl_wait *w, FILE *f, bool *ok)
{
    (void)s;
    if (job && job->phase != LD_DONE)
        return false;
    w->pending = false;
    if (!job) {
        fprintf(f, "route load: its state is gone\n");
        *ok = false;
        return true;
    }
    *ok = load_take(f);
    return true;
}

bool sup_route_load_busy(const char *sub, FILE *f)
{
    static const char *const reads[] = {"show", "json", "get", "save"};
    if (!job || job->phase == LD_DONE)
        return false;
    for (size_t i = 0; sub && i < sizeof(reads) / sizeof(reads[0]); i++)
        if (strcmp(sub, reads[i]) == 0)
            return false;
    if (f)
        fprintf(f, "route %s: a route load is under way; try again once it has answered\n", sub ? sub : "");
    return true;
}
