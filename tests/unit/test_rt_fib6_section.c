/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_fib6_section.c: a reader holds the IPv6 FIB in one
 * read section per batch, and nothing the batch follows is reused under it
 * (the IPv6 twin of test_rt_fib_section.c; the router has no IPv6 batch yet,
 * so the reader here is a batch's FIB part alone).
 *
 * A writer thread adds, replaces and deletes routes from /32 to /128 as fast
 * as it can, with few groups and next-hop slots, so that groups fold back,
 * retire and are reused, and next hops likewise, all the time. The writer's
 * half is compiled into this file with FIB6_ON_NEW_LIFE defined: every time
 * a group or a next-hop slot is taken for a new life, before anything is
 * written to it, its life counter here goes up.
 *
 * A reader thread runs batches: open the section; walk each destination's
 * chain by hand, taking every group it passes and the next hop it ends on
 * with their life counters; look the burst up (fib6_lookup_burst) and check
 * that every answer is a whole next hop of a prefix covering its address
 * (next hops are a pure function of their prefix, tests/unit/t_fib6.h, so a
 * torn or stale one shows); then follow the taken links again and check
 * that their lives and the next hops' words did not change; then close the
 * section. A changed life means the writer reused a group or next hop that
 * the batch still held.
 *
 * Built plain, ASan and TSan (tests/build.ninja). Runs for about two
 * seconds, five at most, and must see reuse happen while it ran.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "tables/fib6_write.h"

#define T_GROUPS 40u /* fewer than the candidates want at once: every group is recycled */
#define T_NH 24u     /* fewer than the distinct next hops: slots are recycled too */
#define T_BURST 32u
#define T_NONE UINT32_MAX
#define T_MIN_NS 2000000000ull
#define T_MAX_NS 5000000000ull
#define T_MIN_BATCHES 100u
#define T_MIN_REUSE 100u

static _Atomic uint32_t t_life_grp[T_GROUPS], t_life_nh[T_NH];
static _Atomic uint64_t t_new_lives;

static void t_new_life(bool tbl8, uint32_t idx)
{
    _Atomic uint32_t *life = tbl8 ? &t_life_grp[idx] : &t_life_nh[idx];
    /* Release: a reader that finds the new link (acquire) sees the new life. */
    atomic_fetch_add_explicit(life, 1, memory_order_release);
    atomic_fetch_add_explicit(&t_new_lives, 1, memory_order_relaxed);
}

#define FIB6_ON_NEW_LIFE(tbl8, idx) t_new_life((tbl8), (idx))
#include "../../tables/fib6_write.c"

#include "t_fib6.h"

static uint64_t t_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Destinations: under 2001:db8::/32 (a route that never goes), in a few /48s
 * and /64s, so that chains share groups and fold back often. */
static struct t6 t_dst(uint64_t *s)
{
    uint64_t hi = 0x20010db800000000ull | (t_rand64(s) % 2) << 24 | (t_rand64(s) % 3) << 16 | (t_rand64(s) % 2);
    return (struct t6){hi, t_rand64(s) % 2 ? (t_rand64(s) % 4) << 60 : t_rand64(s) % 3};
}

static const unsigned t_cand_len[] = {40, 48, 56, 64, 96, 127, 128};
#define T_NCAND (sizeof(t_cand_len) / sizeof(t_cand_len[0]))

struct t_sec {
    struct t_fib6 *f;
    _Atomic int stop;
    /* writer */
    uint64_t ops, again, full;
    int werr;
    /* reader */
    _Atomic uint64_t batches;
    uint64_t followed, answers;
    _Atomic int bad;
    char why[240];
};

static void *t_writer(void *arg)
{
    struct t_sec *x = arg;
    struct fib6 *w = &x->f->w;
    uint64_t s = t_seed() ^ 0x5eed;
    while (!atomic_load(&x->stop)) {
        unsigned len = t_cand_len[t_rand64(&s) % T_NCAND];
        struct t6 a = t6_mask(t_dst(&s), len);
        struct fib6_nh nh = t6_nh_of(a, len, t_rand64(&s) % 3, 0);
        int ret = t_add(w, a, len, &nh);
        if (ret == -EEXIST)
            ret = t_rand64(&s) % 3 ? t_del(w, a, len) : t_replace(w, a, len, &nh);
        if (ret == -EAGAIN)
            x->again++;
        else if (ret == -ENOSPC)
            x->full++;
        else if (ret != 0 && !x->werr)
            x->werr = ret;
        x->ops++;
    }
    return NULL;
}

/* The links a batch took before its lookups and follows again at its end. */
struct t_link {
    struct t6 a;
    unsigned ng;
    uint32_t grp[13], grp_life[13];
    uint32_t nh, nh_life; /* T_NONE: no route */
    uint64_t nh_w[3];
};

static void t_take(const struct fib6 *fib, struct t6 a, struct t_link *l)
{
    uint8_t b[16];
    t6_bytes(a, b);
    l->a = a;
    l->ng = 0;
    l->nh = T_NONE;
    uint32_t e = ipc_ld_acq(&fib->m.tbl24[fib6_idx24(b)]); /* R1 */
    for (unsigned i = 3; (e & FIB6_E_EXT) && i < 16; i++) {
        uint32_t g = e & FIB6_E_IDX;
        l->grp[l->ng] = g;
        l->grp_life[l->ng++] = atomic_load_explicit(&t_life_grp[g], memory_order_acquire);
        e = ipc_ld_acq(&fib->m.tbl8[(size_t)g << 8 | b[i]]);
    }
    if (fib6_result(e) != FIB6_MISS) {
        l->nh = fib6_result(e);
        l->nh_life = atomic_load_explicit(&t_life_nh[l->nh], memory_order_acquire);
        for (unsigned k = 0; k < 3; k++)
            l->nh_w[k] = ipc_ld_rlx(&fib->m.nh[(size_t)l->nh * FIB6_NH_WORDS + k]);
    }
}

/* Follow @l again: false (and why) if what it names started a new life meanwhile. */
static bool t_follow(const struct fib6 *fib, const struct t_link *l, char *why, size_t n)
{
    char s[64];
    for (unsigned k = 0; k < l->ng; k++) {
        uint32_t life = atomic_load_explicit(&t_life_grp[l->grp[k]], memory_order_acquire);
        if (life != l->grp_life[k]) {
            snprintf(why, n, "%s: group %u (level %u) was reused under the batch (life %u -> %u)",
                     t6_str(l->a, s, sizeof(s)), l->grp[k], k + 1, l->grp_life[k], life);
            return false;
        }
    }
    if (l->nh != T_NONE) {
        uint32_t life = atomic_load_explicit(&t_life_nh[l->nh], memory_order_acquire);
        bool same = life == l->nh_life;
        for (unsigned k = 0; k < 3; k++)
            same = same && ipc_ld_rlx(&fib->m.nh[(size_t)l->nh * FIB6_NH_WORDS + k]) == l->nh_w[k];
        if (!same) {
            snprintf(why, n, "%s: next hop %u was reused under the batch (life %u -> %u)", t6_str(l->a, s, sizeof(s)),
                     l->nh, l->nh_life, life);
            return false;
        }
    }
    return true;
}

/* Is @got the next hop of some prefix covering @a (the /32 or a candidate, any salt)? */
static bool t_answer_ok(struct t6 a, const struct fib6_nh *got)
{
    struct fib6_nh base = t6_nh_of(t6_mask(a, 32), 32, 0, 0);
    if (t6_nh_eq(got, &base))
        return true;
    for (unsigned k = 0; k < T_NCAND; k++)
        for (uint64_t salt = 0; salt < 3; salt++) {
            struct fib6_nh c = t6_nh_of(t6_mask(a, t_cand_len[k]), t_cand_len[k], salt, 0);
            if (t6_nh_eq(got, &c))
                return true;
        }
    return false;
}

static void *t_reader(void *arg)
{
    struct t_sec *x = arg;
    struct fib6 *fib = &x->f->r;
    uint64_t s = 0xfeed;
    struct t_link link[T_BURST];
    uint8_t b[T_BURST][16];
    uint32_t out[T_BURST];
    char str[64];
    while (!atomic_load(&x->stop) && !atomic_load(&x->bad)) {
        fib6_read_begin(fib);
        for (unsigned i = 0; i < T_BURST; i++) {
            struct t6 a = t_dst(&s);
            t6_bytes(a, b[i]);
            t_take(fib, a, &link[i]);
        }
        fib6_lookup_burst(fib, (const uint8_t(*)[16])b, out, T_BURST);
        for (unsigned i = 0; i < T_BURST; i++, x->answers++) {
            struct fib6_nh got = {.port = 0};
            if (out[i] != FIB6_MISS)
                got = fib6_nh_at(fib, out[i]);
            if (out[i] == FIB6_MISS || !t_answer_ok(link[i].a, &got)) {
                snprintf(x->why, sizeof(x->why), "%s -> nh %u (port %u, %s): no covering prefix routes there",
                         t6_str(link[i].a, str, sizeof(str)), out[i], got.port,
                         t6_nh_sane(&got) ? "a whole next hop" : "torn");
                atomic_store(&x->bad, 1);
                break;
            }
        }
        /* The rest of a batch: the links stay held until the section ends. */
        for (unsigned i = 0; i < T_BURST && !atomic_load(&x->bad); i++, x->followed++)
            if (!t_follow(fib, &link[i], x->why, sizeof(x->why)))
                atomic_store(&x->bad, 1);
        fib6_read_end(fib);
        atomic_fetch_add(&x->batches, 1);
    }
    return NULL;
}

static void test_rt_fib6_section_covers_batch(void **state)
{
    struct t_fib6 *f = t_fib6_new(4096, T_GROUPS, T_NH);
    struct t6 base = {0x20010db800000000ull, 0};
    struct fib6_nh bnh = t6_nh_of(base, 32, 0, 0);
    assert_int_equal(t_add(&f->w, base, 32, &bnh), 0);
    struct t_sec x = {.f = f};
    pthread_t wt, rt;
    assert_int_equal(pthread_create(&wt, NULL, t_writer, &x), 0);
    assert_int_equal(pthread_create(&rt, NULL, t_reader, &x), 0);
    /* Until the reader fails, or it has run long enough with reuse going on
     * (counted from its first batch: reuse before that tests nothing). */
    uint64_t t0 = t_now_ns(), el = 0, lives0 = 0;
    bool started = false;
    struct timespec poll = {.tv_sec = 0, .tv_nsec = 1000000};
    while (!atomic_load(&x.bad) && el < T_MAX_NS) {
        if (!started && atomic_load(&x.batches) > 0) {
            lives0 = atomic_load(&t_new_lives);
            started = true;
        }
        if (started && el >= T_MIN_NS && atomic_load(&x.batches) >= T_MIN_BATCHES &&
            atomic_load(&t_new_lives) - lives0 >= T_MIN_REUSE)
            break;
        nanosleep(&poll, NULL);
        el = t_now_ns() - t0;
    }
    atomic_store(&x.stop, 1);
    pthread_join(rt, NULL);
    pthread_join(wt, NULL);
    uint64_t lives = started ? atomic_load(&t_new_lives) - lives0 : 0;
    struct fib_stats st;
    fib6_get_stats(&f->w, &st);
    print_message("%.2f s: %llu batches, %llu answers checked, %llu links followed; writer %llu updates (%llu -EAGAIN, "
                  "%llu -ENOSPC), %llu groups and next hops reused while the reader ran; now %u prefixes, %u groups\n",
                  (double)(t_now_ns() - t0) / 1e9, (unsigned long long)atomic_load(&x.batches),
                  (unsigned long long)x.answers, (unsigned long long)x.followed, (unsigned long long)x.ops,
                  (unsigned long long)x.again, (unsigned long long)x.full, (unsigned long long)lives, st.prefixes,
                  st.tbl8_used);
    if (atomic_load(&x.bad))
        fail_msg("in batch %llu: %s", (unsigned long long)atomic_load(&x.batches) + 1, x.why);
    if (x.werr)
        fail_msg("writer: unexpected %d", x.werr);
    assert_int_equal(st.corrupt, 0);
    assert_true(atomic_load(&x.batches) >= T_MIN_BATCHES);
    assert_true(lives >= T_MIN_REUSE);
    t_fib6_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rt_fib6_section_covers_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
