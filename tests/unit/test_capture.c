/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_capture.c: the capture region (ipc/capture.h) and the
 * pcapng writer (supervisor/pcapng.h), in one process:
 *   - the ring: in order, wrap-around, a full ring losing captures (counted)
 *     and never blocking, a reader's spoiled tail;
 *   - the client against a hostile writer: impossible heads, lengths past
 *     the slot, a reason without its NUL or with control characters;
 *   - the cBPF interpreter against libpcap's own bpf_filter() on the same
 *     programs and frames, and the checker's refusals;
 *   - the pcapng blocks, walked back, and read by tcpdump -r when present.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/capture.h"
#include "supervisor/pcapng.h"

#define NB 8
#define FS 2048

static struct ipc_meta meta[NB];
static uint8_t frames[NB * FS];
static struct ipc_pool pool = {.meta = meta, .frames = frames, .nbufs = NB, .frame_size = FS};
static struct ipc_cap *cap;

static int setup(void **state)
{
    (void)state;
    cap = aligned_alloc(64, (sizeof(*cap) + 63) & ~(size_t)63);
    memset(cap, 0, sizeof(*cap));
    cap->snaplen = IPC_CAP_SNAP_MAX;
    cap->port = IPC_PORT_NONE;
    ipc_cap_.cap = cap;
    memset(meta, 0, sizeof(meta));
    for (unsigned i = 0; i < NB; i++)
        meta[i] = (struct ipc_meta){.next = IPC_BUF_NONE, .off = 64, .len = 60};
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(cap);
    return 0;
}

static void stamp(ipc_buf b, uint32_t v)
{
    memcpy(frames + (size_t)b * FS + 64, &v, 4);
}

static uint32_t rec_val(const struct ipc_cap_rec *r)
{
    uint32_t v;
    memcpy(&v, r->data, 4);
    return v;
}

static void test_cap_off_is_off(void **state)
{
    (void)state;
    assert_false(ipc_cap_on(IPC_CAP_RX));
    ipc_st_rlx(&cap->on, IPC_CAP_RX);
    assert_true(ipc_cap_on(IPC_CAP_RX));
    assert_false(ipc_cap_on(IPC_CAP_TX | IPC_CAP_DROP));
}

static void test_cap_ring_wraps(void **state)
{
    (void)state;
    struct ipc_cap_rec r;
    uint64_t sk;
    for (uint32_t i = 0; i < 3 * IPC_CAP_SLOTS + 7; i++) {
        ipc_buf b = i % NB;
        stamp(b, i);
        ipc_cap_frames(&pool, &b, 1, IPC_CAP_RX, 3);
        assert_int_equal(ipc_cap_take(cap, &r, &sk), 1);
        assert_int_equal(rec_val(&r), i);
        assert_int_equal(r.caplen, 60);
        assert_int_equal(r.wirelen, 60);
        assert_int_equal(r.port, 3);
        assert_int_equal(r.dir, IPC_CAP_RX);
    }
    assert_int_equal(ipc_cap_take(cap, &r, &sk), 0);
    assert_int_equal(ipc_ld_rlx(&cap->lost), 0);
}

static void test_cap_full_ring_loses_captures(void **state)
{
    (void)state;
    struct ipc_cap_rec r;
    uint64_t sk;
    for (uint32_t i = 0; i < IPC_CAP_SLOTS + 10; i++) {
        ipc_buf b = i % NB;
        stamp(b, i);
        ipc_cap_frames(&pool, &b, 1, IPC_CAP_RX, 0);
    }
    assert_int_equal(ipc_ld_rlx(&cap->lost), 10);
    for (uint32_t i = 0; i < IPC_CAP_SLOTS; i++) {
        assert_int_equal(ipc_cap_take(cap, &r, &sk), 1);
        assert_int_equal(rec_val(&r), i); /* the oldest kept, the newest lost */
    }
    assert_int_equal(ipc_cap_take(cap, &r, &sk), 0);
    /* A tail the reader moved past the head: the service writes nothing. */
    ipc_st_rlx(&cap->tail, ipc_ld_rlx(&cap->head) + 5);
    uint64_t head = ipc_ld_rlx(&cap->head);
    ipc_buf b = 0;
    ipc_cap_frames(&pool, &b, 1, IPC_CAP_RX, 0);
    assert_int_equal(ipc_ld_rlx(&cap->head), head);
    assert_int_equal(ipc_ld_rlx(&cap->lost), 11);
    ipc_st_rlx(&cap->tail, head);
}

static void test_cap_snaplen_and_chain(void **state)
{
    (void)state;
    struct ipc_cap_rec r;
    uint64_t sk;
    meta[0] = (struct ipc_meta){.next = 1, .pkt_len = 3000, .off = 0, .len = 2000};
    meta[1] = (struct ipc_meta){.next = IPC_BUF_NONE, .off = 0, .len = 1000};
    memset(frames, 0xaa, 2000);
    memset(frames + FS, 0xbb, 1000);
    ipc_buf b = 0;
    ipc_cap_frames(&pool, &b, 1, IPC_CAP_TX, 1);
    assert_int_equal(ipc_cap_take(cap, &r, &sk), 1);
    assert_int_equal(r.caplen, IPC_CAP_SNAP_MAX);
    assert_int_equal(r.wirelen, 3000);
    assert_int_equal(r.data[1999], 0xaa);
    assert_int_equal(r.data[2000], 0xbb);
    cap->snaplen = 100;
    ipc_cap_frames(&pool, &b, 1, IPC_CAP_TX, 1);
    assert_int_equal(ipc_cap_take(cap, &r, &sk), 1);
    assert_int_equal(r.caplen, 100);
    /* A frame whose offset and length leave it: not copied past it. */
    meta[2] = (struct ipc_meta){.next = IPC_BUF_NONE, .off = FS - 10, .len = 100};
    b = 2;
    cap->snaplen = 0;
    ipc_cap_frames(&pool, &b, 1, IPC_CAP_TX, 1);
    if (ipc_cap_take(cap, &r, &sk) == 1)
        assert_int_equal(r.caplen, 0);
}

static void test_cap_hostile_writer(void **state)
{
    (void)state;
    struct ipc_cap_rec r;
    uint64_t sk;
    uint64_t t = ipc_ld_rlx(&cap->tail);
    /* Further ahead than the ring holds. */
    ipc_st_rlx(&cap->head, t + IPC_CAP_SLOTS + 5);
    assert_int_equal(ipc_cap_take(cap, &r, &sk), -EPROTO);
    assert_int_equal(sk, IPC_CAP_SLOTS + 5);
    assert_int_equal(ipc_ld_rlx(&cap->tail), t + IPC_CAP_SLOTS + 5);
    /* Behind the tail. */
    t = ipc_ld_rlx(&cap->tail);
    ipc_st_rlx(&cap->head, t - 1);
    assert_int_equal(ipc_cap_take(cap, &r, &sk), -EPROTO);
    assert_int_equal(ipc_ld_rlx(&cap->tail), t - 1);
    /* A slot with lengths past itself and a reason of junk. */
    t = ipc_ld_rlx(&cap->tail);
    struct ipc_cap_slot *s = &cap->slot[t & (IPC_CAP_SLOTS - 1)];
    s->caplen = 0xffffffffu;
    s->wirelen = 3;
    memset(s->reason, '\n', sizeof(s->reason));
    s->reason[0] = 'x';
    ipc_st_rlx(&cap->head, t + 1);
    assert_int_equal(ipc_cap_take(cap, &r, &sk), 1);
    assert_int_equal(r.caplen, IPC_CAP_SNAP_MAX);
    assert_true(r.wirelen >= r.caplen);
    assert_int_equal(strlen(r.reason), IPC_CAP_REASON - 1);
    assert_int_equal(r.reason[0], 'x');
    assert_int_equal(r.reason[1], '?');
}

static void test_cap_drop_reason_and_port(void **state)
{
    (void)state;
    struct ipc_cap_rec r;
    uint64_t sk;
    ipc_st_rlx(&cap->on, IPC_CAP_DROP);
    cap->port = 1;
    ipc_cap_drop(&pool, 3, 0, "drop_ttl_exceeded"); /* another port's: not taken */
    assert_int_equal(ipc_cap_take(cap, &r, &sk), 0);
    ipc_cap_drop(&pool, 3, 1, "drop_ttl_exceeded");
    assert_int_equal(ipc_cap_take(cap, &r, &sk), 1);
    assert_string_equal(r.reason, "drop_ttl_exceeded");
    assert_int_equal(r.dir, IPC_CAP_DROP);
}

/* ---- cBPF: ours against libpcap's ---- */

static size_t frame_udp(uint8_t *f, uint16_t dport, uint8_t proto, uint16_t ethertype)
{
    memset(f, 0, 64);
    f[12] = (uint8_t)(ethertype >> 8);
    f[13] = (uint8_t)ethertype;
    uint8_t *ip = f + 14;
    ip[0] = 0x45;
    ip[3] = 46;
    ip[8] = 64;
    ip[9] = proto;
    ip[12] = 10, ip[13] = 1, ip[14] = 2, ip[15] = 3;
    ip[16] = 10, ip[17] = 9, ip[18] = 8, ip[19] = 7;
    ip[22] = (uint8_t)(dport >> 8);
    ip[23] = (uint8_t)dport;
    return 60;
}

static void test_cap_bpf_matches_libpcap(void **state)
{
    (void)state;
    static const char *const filters[] = {"udp port 9", "icmp", "host 10.1.2.3 and udp", "ip[8] < 2",
                                          "udp and not port 53", "ether proto 0x86dd", "len > 100",
                                          "net 10.9.0.0/16", "tcp or udp dst portrange 5-10"};
    pcap_t *p = pcap_open_dead(DLT_EN10MB, 65535);
    assert_non_null(p);
    uint8_t f[64];
    struct {
        uint16_t port;
        uint8_t proto;
        uint16_t et;
    } cases[] = {{9, 17, 0x0800}, {53, 17, 0x0800}, {9, 6, 0x0800}, {0, 1, 0x0800}, {9, 17, 0x86dd}, {7, 17, 0x0806}};
    unsigned agreed = 0;
    for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
        struct bpf_program prog;
        assert_int_equal(pcap_compile(p, &prog, filters[i], 1, PCAP_NETMASK_UNKNOWN), 0);
        struct ipc_cap_insn ins[IPC_CAP_BPF_MAX];
        assert_true(prog.bf_len <= IPC_CAP_BPF_MAX);
        for (unsigned k = 0; k < prog.bf_len; k++)
            ins[k] = (struct ipc_cap_insn){prog.bf_insns[k].code, prog.bf_insns[k].jt, prog.bf_insns[k].jf,
                                           prog.bf_insns[k].k};
        struct ipc_err err;
        assert_int_equal(ipc_cap_bpf_check(ins, prog.bf_len, &err), 0);
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
            size_t len = frame_udp(f, cases[c].port, cases[c].proto, cases[c].et);
            for (uint32_t cut = 14; cut <= len; cut += 23) { /* short captures too: loads past the end */
                uint32_t theirs = bpf_filter(prog.bf_insns, f, (u_int)len, cut);
                uint32_t ours = ipc_cap_bpf_run(ins, prog.bf_len, f, cut, (uint32_t)len);
                if (!!theirs != !!ours)
                    fail_msg("\"%s\" case %zu cut %u: libpcap %u, ours %u", filters[i], c, cut, theirs, ours);
                agreed++;
            }
        }
        pcap_freecode(&prog);
    }
    pcap_close(p);
    assert_true(agreed > 100);
}

static void test_cap_bpf_check_refuses(void **state)
{
    (void)state;
    struct ipc_err err;
    const struct ipc_cap_insn ret = {0x06, 0, 0, 65535};
    struct ipc_cap_insn prog[IPC_CAP_BPF_MAX + 1];
    for (unsigned i = 0; i <= IPC_CAP_BPF_MAX; i++)
        prog[i] = ret;
    assert_int_equal(ipc_cap_bpf_check(prog, 1, &err), 0);
    assert_int_equal(ipc_cap_bpf_check(prog, 0, &err), -EINVAL);
    assert_int_equal(ipc_cap_bpf_check(prog, IPC_CAP_BPF_MAX + 1, &err), -EINVAL);
    /* jeq past the end */
    prog[0] = (struct ipc_cap_insn){0x15, 0, 1, 9};
    assert_int_equal(ipc_cap_bpf_check(prog, 2, &err), -EINVAL);
    assert_int_equal(ipc_cap_bpf_check(prog, 3, &err), 0);
    /* ja past the end */
    prog[0] = (struct ipc_cap_insn){0x05, 0, 0, 5};
    assert_int_equal(ipc_cap_bpf_check(prog, 3, &err), -EINVAL);
    /* scratch 16 */
    prog[0] = (struct ipc_cap_insn){0x02, 0, 0, 16};
    assert_int_equal(ipc_cap_bpf_check(prog, 2, &err), -EINVAL);
    /* a constant division by zero */
    prog[0] = (struct ipc_cap_insn){0x34, 0, 0, 0};
    assert_int_equal(ipc_cap_bpf_check(prog, 2, &err), -EINVAL);
    /* no return at the end */
    prog[0] = ret;
    prog[1] = (struct ipc_cap_insn){0x00, 0, 0, 1};
    assert_int_equal(ipc_cap_bpf_check(prog, 2, &err), -EINVAL);
    /* The interpreter alone, on what the checker refuses: no match, no harm. */
    uint8_t f[60] = {0};
    prog[0] = (struct ipc_cap_insn){0x05, 0, 0, 0xffffffffu};
    assert_int_equal(ipc_cap_bpf_run(prog, 2, f, sizeof(f), sizeof(f)), 0);
    prog[0] = (struct ipc_cap_insn){0x20, 0, 0, 0xfffffffeu}; /* ld [k] past the frame */
    prog[1] = (struct ipc_cap_insn){0x16, 0, 0, 0};           /* ret a */
    assert_int_equal(ipc_cap_bpf_run(prog, 2, f, sizeof(f), sizeof(f)), 0);
    prog[0] = (struct ipc_cap_insn){0x01, 0, 0, 0xfffffff0u}; /* ldx #k */
    prog[1] = (struct ipc_cap_insn){0x40, 0, 0, 0x20};        /* ld [x + k]: wraps */
    prog[2] = (struct ipc_cap_insn){0x16, 0, 0, 0};
    assert_int_equal(ipc_cap_bpf_run(prog, 3, f, sizeof(f), sizeof(f)), 0);
}

/* ---- pcapng ---- */

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void test_pcapng_blocks(void **state)
{
    (void)state;
    char path[] = "/tmp/test_capture_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w+");
    uint8_t pkt[64];
    frame_udp(pkt, 9, 17, 0x0800);
    pkt[60] = 0;
    assert_int_equal(pcapng_shb(f), 0);
    assert_int_equal(pcapng_idb(f, "a", 2048), 0);
    assert_int_equal(pcapng_epb(f, 0, 1700000000123456789ull, pkt, 61, 61, PCAPNG_DIR_IN, NULL), 0);
    assert_int_equal(pcapng_epb(f, 0, 1700000000123456790ull, pkt, 42, 61, PCAPNG_DIR_NONE, "drop_ttl_exceeded"), 0);
    assert_int_equal(fflush(f), 0);
    long size = ftell(f);
    uint8_t *buf = malloc((size_t)size);
    rewind(f);
    assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
    static const uint32_t want[] = {0x0a0d0d0a, 1, 6, 6};
    long off = 0;
    unsigned nb = 0;
    while (off < size) {
        uint32_t len = rd32(buf + off + 4);
        assert_true(len % 4 == 0 && len >= 12 && off + len <= size);
        assert_int_equal(rd32(buf + off + len - 4), len);
        assert_true(nb < 4);
        assert_int_equal(rd32(buf + off), want[nb]);
        if (nb == 3) {
            assert_int_equal(rd32(buf + off + 20), 42);
            assert_non_null(memmem(buf + off, len, "drop_ttl_exceeded", 17));
        }
        off += len;
        nb++;
    }
    assert_int_equal(nb, 4);
    free(buf);
    fclose(f);
    if (access("/usr/bin/tcpdump", X_OK) == 0 || access("/usr/sbin/tcpdump", X_OK) == 0) {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "tcpdump -nn -r %s 2>/dev/null | grep -c '10.1.2.3' | grep -qx 2", path);
        assert_int_equal(system(cmd), 0);
    }
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_off_is_off),
        cmocka_unit_test(test_cap_ring_wraps),
        cmocka_unit_test(test_cap_full_ring_loses_captures),
        cmocka_unit_test(test_cap_snaplen_and_chain),
        cmocka_unit_test(test_cap_hostile_writer),
        cmocka_unit_test(test_cap_drop_reason_and_port),
        cmocka_unit_test(test_cap_bpf_matches_libpcap),
        cmocka_unit_test(test_cap_bpf_check_refuses),
        cmocka_unit_test(test_pcapng_blocks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
