/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rt_fib_section.c: the router reads the FIB in one read
 * section per batch, and nothing the batch follows is reused under it.
 *
 * A writer thread deletes and re-adds routes (/24 to /32) as fast as it can,
 * with few tbl8 groups and next-hop slots, so that groups fold back, retire
 * and are reused, and next hops likewise, all the time. The writer's half is
 * compiled into this file with FIB_ON_NEW_LIFE defined: every time a group
 * or a next-hop slot is taken for a new life, before anything is written to
 * it, its life counter here goes up.
 *
 * A reader thread runs the router loop's batch (services/router/main.c's
 * rt_run): open the section, take the links the batch will follow (the
 * group and next hop of each destination) with their life counters, run
 * rt_input_burst() on real frames to those destinations, the neighbour tick
 * and the flush, then follow the links again and check that their lives did
 * not change, then close the section. A changed life means the writer reused
 * a group or next hop that the batch still held: the reader slot did not
 * protect the whole batch (as when a callee closed the section early).
 *
 * Built plain, ASan and TSan (services/router/build.ninja). Runs for about
 * two seconds, five at most, and must see reuse happen while it ran.
 */
#include <pthread.h>
#include <time.h>

#include "test_rt_common.h"

#define T_GROUPS 8u /* fewer than the /24s that want one: every group is recycled */
#define T_NH 12u    /* fewer than the distinct next hops: slots are recycled too */
#define T_SLASH24 12u
#define T_GWS 8u /* gateways per egress port, each a static neighbour */
#define T_EGRESS 2u
#define T_BURST RT_BURST
#define T_NONE UINT32_MAX
#define T_TICK_NS 1000000u /* virtual time per batch */
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

#define FIB_ON_NEW_LIFE(tbl8, idx) t_new_life((tbl8), (idx))
#include "../../tables/fib_write.c"

static uint64_t t_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The routes: 100.64.s.0/24 for s < T_SLASH24, each with three deeper candidates. */
static uint32_t t_cand_addr(unsigned s, unsigned k, unsigned *len)
{
    static const struct {
        unsigned len, off;
    } deep[] = {{24, 0}, {25, 128}, {28, 16}, {32, 7}};
    *len = deep[k].len;
    return T_IP(100, 64, s, deep[k].off);
}
#define T_NCAND_PER 4u

static struct fib_nh t_cand_nh(uint32_t addr, unsigned len)
{
    uint32_t h = (addr >> 4) * 0x9e3779b1u ^ len * 0x85ebca6bu;
    h ^= h >> 15;
    uint16_t port = (uint16_t)(1 + (h >> 8) % T_EGRESS);
    struct fib_nh nh = {.gw = T_IP(10, port, 0, 10 + h % T_GWS), .port = port};
    return nh;
}

struct t_sec {
    struct t_rt *t;
    _Atomic int stop;
    /* writer */
    uint64_t ops, again, full;
    int werr;
    /* reader */
    _Atomic uint64_t batches;
    uint64_t followed;
    _Atomic int bad;
    char why[200];
};

static void *t_writer(void *arg)
{
    struct t_sec *x = arg;
    struct fib *w = &x->t->fibw;
    uint64_t s = 0x5eed;
    while (!atomic_load(&x->stop)) {
        unsigned len, k = (unsigned)(t_rand64(&s) % T_NCAND_PER);
        uint32_t addr = t_cand_addr((unsigned)(t_rand64(&s) % T_SLASH24), k, &len);
        struct fib_nh nh = t_cand_nh(addr, len);
        int ret = fib_add(w, addr, len, &nh);
        if (ret == -EEXIST)
            ret = fib_del(w, addr, len);
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

/* A link the batch took before its burst and follows again after the tick. */
struct t_link {
    uint32_t addr;
    uint32_t grp, grp_life; /* T_NONE: the /24 has no group */
    uint32_t nh, nh_life;   /* T_NONE: no route */
    uint64_t nh_val;
};

static void t_take(const struct fib *fib, uint32_t addr, struct t_link *l)
{
    l->addr = addr;
    l->grp = l->nh = T_NONE;
    uint32_t e = ipc_ld_acq(&fib->m.tbl24[addr >> 8]); /* R1 */
    if (e & FIB_E_EXT) {
        l->grp = e & FIB_E_IDX;
        l->grp_life = atomic_load_explicit(&t_life_grp[l->grp], memory_order_acquire);
        e = ipc_ld_acq(&fib->m.tbl8[(size_t)l->grp << 8 | (addr & 0xff)]);
    }
    if (e & FIB_E_VALID) {
        l->nh = e & FIB_E_IDX;
        l->nh_life = atomic_load_explicit(&t_life_nh[l->nh], memory_order_acquire);
        l->nh_val = ipc_ld_rlx(&fib->m.nh[l->nh]);
    }
}

/* Follow @l again: false (and why) if what it names started a new life meanwhile. */
static bool t_follow(const struct fib *fib, const struct t_link *l, char *why, size_t n)
{
    if (l->grp != T_NONE) {
        uint32_t life = atomic_load_explicit(&t_life_grp[l->grp], memory_order_acquire);
        uint32_t e = ipc_ld_acq(&fib->m.tbl8[(size_t)l->grp << 8 | (l->addr & 0xff)]);
        if (life != l->grp_life) {
            snprintf(why, n, "%08x: tbl8 group %u was reused under the batch (life %u -> %u; entry now %08x)",
                     l->addr, l->grp, l->grp_life, life, e);
            return false;
        }
    }
    if (l->nh != T_NONE) {
        uint32_t life = atomic_load_explicit(&t_life_nh[l->nh], memory_order_acquire);
        uint64_t v = ipc_ld_rlx(&fib->m.nh[l->nh]);
        if (life != l->nh_life || v != l->nh_val) {
            snprintf(why, n, "%08x: next hop %u was reused under the batch (life %u -> %u, %016llx -> %016llx)",
                     l->addr, l->nh, l->nh_life, life, (unsigned long long)l->nh_val, (unsigned long long)v);
            return false;
        }
    }
    return true;
}

static void *t_reader(void *arg)
{
    struct t_sec *x = arg;
    struct t_rt *t = x->t;
    struct fib *fib = &t->fibr;
    uint64_t s = 0xfeed, now = T_TICK_NS;
    while (!atomic_load(&x->stop) && !atomic_load(&x->bad)) {
        ipc_buf in[T_BURST];
        struct t_link link[T_BURST];
        if (ipc_pool_alloc(&t->pool, in, T_BURST) != T_BURST) {
            snprintf(x->why, sizeof(x->why), "pool empty: the router kept buffers");
            atomic_store(&x->bad, 1);
            break;
        }
        /* The loop's batch, as rt_run has it: one section around all of it. */
        fib_read_begin(fib);
        for (unsigned i = 0; i < T_BURST; i++) {
            uint32_t dst = T_IP(100, 64, t_rand64(&s) % T_SLASH24, t_rand64(&s) & 0xff);
            t_take(fib, dst, &link[i]);
            t_frame_fill(t, in[i], 0, T_IP(10, 0, 0, 2), dst, 17, 64, 18, 0);
        }
        rt_input_burst(&t->ctx, in, T_BURST, now, &t->tx);
        rt_neigh_tick(&t->ctx, now, &t->tx);
        t_tx_free(t); /* the flush: what the burst and the tick emitted leaves */
        for (unsigned i = 0; i < T_BURST; i++, x->followed++)
            if (!t_follow(fib, &link[i], x->why, sizeof(x->why))) {
                atomic_store(&x->bad, 1);
                break;
            }
        fib_read_end(fib);
        now += T_TICK_NS;
        atomic_fetch_add(&x->batches, 1);
    }
    return NULL;
}

static int t_setup(void **state)
{
    struct fib_params p = {.max_prefixes = 4096, .tbl8_groups = T_GROUPS, .max_nh = T_NH};
    t_rt_setup_fib(state, &p);
    struct t_rt *t = *state;
    for (uint16_t port = 1; port <= T_EGRESS; port++)
        for (unsigned g = 0; g < T_GWS; g++) {
            uint8_t mac[6] = {0x02, 0xcc, 0, 0, (uint8_t)port, (uint8_t)g};
            assert_int_equal(neigh_add_static(&t->neigh, T_IP(10, port, 0, 10 + g), mac, port), 0);
        }
    /* A covering route that never goes, so that every destination routes. */
    struct fib_nh base = t_cand_nh(T_IP(100, 64, 0, 0), 16);
    assert_int_equal(fib_add(&t->fibw, T_IP(100, 64, 0, 0), 16, &base), 0);
    return 0;
}

static void test_rt_fib_section_covers_batch(void **state)
{
    struct t_rt *t = *state;
    struct t_sec x = {.t = t};
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
    print_message("%.2f s: %llu batches, %llu links followed; writer %llu updates (%llu -EAGAIN, %llu -ENOSPC), "
                  "%llu groups and next hops reused while the reader ran\n",
                  (double)(t_now_ns() - t0) / 1e9, (unsigned long long)atomic_load(&x.batches),
                  (unsigned long long)x.followed, (unsigned long long)x.ops, (unsigned long long)x.again,
                  (unsigned long long)x.full, (unsigned long long)lives);
    if (atomic_load(&x.bad))
        fail_msg("in batch %llu: %s", (unsigned long long)atomic_load(&x.batches) + 1, x.why);
    if (x.werr)
        fail_msg("writer: unexpected %d", x.werr);
    assert_true(atomic_load(&x.batches) >= T_MIN_BATCHES);
    assert_true(lives >= T_MIN_REUSE);
    assert_true(t->ctr.c[RT_CTR_FORWARDED] > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rt_fib_section_covers_batch, t_setup, t_rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
