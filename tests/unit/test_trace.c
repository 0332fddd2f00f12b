/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_trace.c: the trace ring (ipc/trace.h) in one process:
 *   - the driver's mark: the filter's matches take the ids in order while
 *     they last, every other frame's id is cleared (a recycled buffer
 *     carries no stale one), a spoiled id range marks nothing;
 *   - the stages' records: TX only for traced packets, a drop with its
 *     reason, a batch stamped with its cycles per packet at its end;
 *   - a full ring loses records (counted), never waits;
 *   - the client against a hostile writer: impossible heads, a stage or
 *     verdict out of range, a note without its NUL or with control
 *     characters, a prefix length past the family's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/trace.h"

#define NB 8
#define FS 2048

static struct ipc_meta meta[NB];
static uint8_t frames[NB * FS];
static struct ipc_pool pool = {.meta = meta, .frames = frames, .nbufs = NB, .frame_size = FS};
static struct ipc_cap *cap;

/* A UDP frame to port @dport. */
static void udp_frame(ipc_buf b, uint16_t dport)
{
    uint8_t *f = frames + (size_t)b * FS + 64;
    memset(f, 0, 60);
    f[12] = 0x08; /* IPv4 */
    f[14] = 0x45;
    f[23] = 17; /* UDP */
    f[14 + 20 + 2] = (uint8_t)(dport >> 8);
    f[14 + 20 + 3] = (uint8_t)dport;
    meta[b] = (struct ipc_meta){.next = IPC_BUF_NONE, .off = 64, .len = 60, .flags = 0x7777};
}

static void filter(const char *expr)
{
    pcap_t *p = pcap_open_dead(DLT_EN10MB, 2048);
    struct bpf_program prog;
    assert_non_null(p);
    assert_int_equal(pcap_compile(p, &prog, expr, 1, PCAP_NETMASK_UNKNOWN), 0);
    assert_true(prog.bf_len <= IPC_CAP_BPF_MAX);
    for (unsigned k = 0; k < prog.bf_len; k++)
        cap->tr_prog[k] = (struct ipc_cap_insn){prog.bf_insns[k].code, prog.bf_insns[k].jt, prog.bf_insns[k].jf,
                                                prog.bf_insns[k].k};
    cap->tr_nins = prog.bf_len;
    pcap_freecode(&prog);
    pcap_close(p);
}

static int setup(void **state)
{
    (void)state;
    cap = aligned_alloc(64, (sizeof(*cap) + 63) & ~(size_t)63);
    memset(cap, 0, sizeof(*cap));
    ipc_cap_.cap = cap;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(cap);
    return 0;
}

static void drain(void)
{
    ipc_st_rlx(&cap->tr_tail, ipc_ld_rlx(&cap->tr_head));
}

static void test_trace_off_is_off(void **state)
{
    (void)state;
    assert_false(ipc_trace_on());
    ipc_st_rlx(&cap->on, IPC_CAP_RX);
    assert_false(ipc_trace_on());
    ipc_st_rlx(&cap->on, IPC_CAP_TRACE);
    assert_true(ipc_trace_on());
    assert_true(ipc_cap_on(IPC_CAP_RX | IPC_CAP_TRACE));
    ipc_st_rlx(&cap->on, 0u);
}

static void test_trace_rx_marks_matches(void **state)
{
    (void)state;
    filter("udp port 9");
    cap->tr_next = 100;
    cap->tr_end = 103;
    cap->tr_queue = 2;
    ipc_buf bufs[NB];
    for (unsigned i = 0; i < NB; i++) {
        udp_frame(i, i % 2 ? 9 : 10);
        bufs[i] = i;
    }
    ipc_trace_rx(&pool, bufs, NB, 5);
    /* Ports 9 at 1, 3, 5, 7: three ids, then none left. */
    assert_int_equal(meta[1].flags, 100);
    assert_int_equal(meta[3].flags, 101);
    assert_int_equal(meta[5].flags, 102);
    for (unsigned i = 0; i < NB; i += 2)
        assert_int_equal(meta[i].flags, 0);
    assert_int_equal(meta[7].flags, 0);
    struct ipc_trace_rec r;
    uint64_t sk;
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(ipc_trace_take(cap, &r, &sk), 1);
        assert_int_equal(r.id, 100 + i);
        assert_int_equal(r.stage, IPC_TR_RX);
        assert_int_equal(r.port, 5);
        assert_int_equal(r.queue, 2);
        assert_int_equal(r.len, 60);
        assert_int_equal(r.hdr[23], 17);
    }
    assert_int_equal(ipc_trace_take(cap, &r, &sk), 0);
    /* An id range past the metadata's 16 bits (a root client's spoiling): no mark. */
    cap->tr_next = 0xffff0;
    cap->tr_end = 0x100005;
    udp_frame(1, 9);
    ipc_buf b = 1;
    ipc_trace_rx(&pool, &b, 1, 5);
    assert_int_equal(meta[1].flags, 0);
    assert_int_equal(ipc_trace_take(cap, &r, &sk), 0);
}

static void test_trace_stages(void **state)
{
    (void)state;
    drain();
    udp_frame(0, 9);
    udp_frame(1, 9);
    meta[0].flags = 7;
    meta[1].flags = 0;
    ipc_buf bufs[2] = {0, 1};
    ipc_trace_tx(&pool, bufs, 2, 3);
    struct ipc_trace_rec r;
    uint64_t sk;
    assert_int_equal(ipc_trace_take(cap, &r, &sk), 1);
    assert_int_equal(r.id, 7);
    assert_int_equal(r.stage, IPC_TR_TX);
    assert_int_equal(r.port, 3);
    assert_int_equal(ipc_trace_take(cap, &r, &sk), 0); /* buffer 1 is not traced */
    ipc_trace_drop(&pool, 0, 3, "codel_drops");
    ipc_trace_drop(&pool, 1, 3, "codel_drops");
    assert_int_equal(ipc_trace_take(cap, &r, &sk), 1);
    assert_int_equal(r.stage, IPC_TR_DROP);
    assert_string_equal(r.note, "codel_drops");
    assert_int_equal(ipc_trace_take(cap, &r, &sk), 0);
    /* A batch: held back until its end, then each with the cycles per packet. */
    static struct ipc_trace_batch tb;
    ipc_trace_begin(&tb);
    struct ipc_trace_rec *a = ipc_trace_add(&tb, &pool, 0, IPC_TR_ROUTE);
    assert_non_null(a);
    a->verdict = IPC_TV_FORWARD;
    assert_null(ipc_trace_add(&tb, &pool, NB, IPC_TR_ROUTE)); /* a handle out of range */
    assert_int_equal(ipc_trace_take(cap, &r, &sk), 0);
    ipc_trace_end(&tb, 4);
    assert_int_equal(ipc_trace_take(cap, &r, &sk), 1);
    assert_int_equal(r.stage, IPC_TR_ROUTE);
    assert_int_equal(r.verdict, IPC_TV_FORWARD);
    assert_int_equal(r.id, 7);
    assert_true(r.ts_ns != 0 && r.tsc != 0);
}

static void test_trace_full_ring_loses(void **state)
{
    (void)state;
    drain();
    uint64_t lost = ipc_ld_rlx(&cap->tr_lost);
    meta[0].flags = 9;
    ipc_buf b = 0;
    for (unsigned i = 0; i < IPC_TRACE_SLOTS + 3; i++)
        ipc_trace_tx(&pool, &b, 1, 0);
    assert_int_equal(ipc_ld_rlx(&cap->tr_lost) - lost, 3);
    /* A tail moved past the head: nothing written. */
    uint64_t head = ipc_ld_rlx(&cap->tr_head);
    ipc_st_rlx(&cap->tr_tail, head + 2);
    ipc_trace_tx(&pool, &b, 1, 0);
    assert_int_equal(ipc_ld_rlx(&cap->tr_head), head);
    drain();
}

static void test_trace_hostile_writer(void **state)
{
    (void)state;
    struct ipc_trace_rec r;
    uint64_t sk;
    drain();
    uint64_t t = ipc_ld_rlx(&cap->tr_tail);
    ipc_st_rlx(&cap->tr_head, t + IPC_TRACE_SLOTS + 1);
    assert_int_equal(ipc_trace_take(cap, &r, &sk), -EPROTO);
    assert_int_equal(sk, IPC_TRACE_SLOTS + 1);
    t = ipc_ld_rlx(&cap->tr_tail);
    ipc_st_rlx(&cap->tr_head, t - 1);
    assert_int_equal(ipc_trace_take(cap, &r, &sk), -EPROTO);
    t = ipc_ld_rlx(&cap->tr_tail);
    struct ipc_trace_rec *s = &cap->tr_rec[t & (IPC_TRACE_SLOTS - 1)];
    memset(s, 0xff, sizeof(*s));
    s->note[0] = 'x';
    s->family = 4;
    ipc_st_rlx(&cap->tr_head, t + 1);
    assert_int_equal(ipc_trace_take(cap, &r, &sk), 1);
    assert_int_equal(r.stage, 0);
    assert_int_equal(r.verdict, IPC_TV_NONE);
    assert_int_equal(r.plen, 0);
    assert_int_equal(strlen(r.note), IPC_TRACE_NOTE - 1);
    assert_int_equal(r.note[0], 'x');
    assert_int_equal(r.note[1], '?');
    assert_string_equal(ipc_trace_stage_name(r.stage), "?");
    assert_string_equal(ipc_trace_stage_name(200), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_off_is_off),
        cmocka_unit_test(test_trace_rx_marks_matches),
        cmocka_unit_test(test_trace_stages),
        cmocka_unit_test(test_trace_full_ring_loses),
        cmocka_unit_test(test_trace_hostile_writer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
