/* SPDX-License-Identifier: MIT */
/*
 * ipc/capture.c: the capture region's two ends (capture.h): the service's
 * filter and copy, the client's checked take, and the classic BPF
 * interpreter and checker.
 *
 * Why an interpreter of our own rather than libpcap's bpf_filter(): the
 * services link no libpcap (one shared library less in a sandboxed process
 * that starts by the thousand in tests), and ours is a page we can bound:
 * forward jumps only, so at most nins steps, every load checked against the
 * frame. The supervisor checks the program first (ipc_cap_bpf_check); the
 * interpreter checks again as it runs, since a root client's mapping can
 * write the program too.
 */
#include "capture.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "trace.h"

/* Never on: what a service without a region looks at. */
static struct ipc_cap cap_off_block;
struct ipc_cap_local ipc_cap_ = {.cap = &cap_off_block, .port = 0xffff};

int ipc_cap_attach(int fd, uint16_t port, struct ipc_err *err)
{
    void *base;
    int ret = ipc_shm_attach_fixed(fd, IPC_SHM_CAPTURE, IPC_CAP_VERSION, sizeof(struct ipc_cap), &base, err);
    if (ret < 0)
        return ret;
    ipc_cap_.cap = base;
    ipc_cap_.port = port;
    return 0;
}

/* ---- classic BPF ------------------------------------------------------- */

/* The opcode fields (linux/filter.h). */
#define C_CLASS(c) ((c) & 0x07)
#define C_SIZE(c) ((c) & 0x18)
#define C_MODE(c) ((c) & 0xe0)
#define C_OP(c) ((c) & 0xf0)
#define C_SRC(c) ((c) & 0x08)
enum { LD = 0, LDX = 1, ST = 2, STX = 3, ALU = 4, JMP = 5, RET = 6, MISC = 7 };
enum { W = 0x00, H = 0x08, B = 0x10 };
enum { IMM = 0x00, ABS = 0x20, IND = 0x40, MEM = 0x60, LEN = 0x80, MSH = 0xa0 };
enum { ADD = 0x00, SUB = 0x10, MUL = 0x20, DIV = 0x30, OR = 0x40, AND = 0x50, LSH = 0x60, RSH = 0x70, NEG = 0x80,
       MOD = 0x90, XOR = 0xa0 };
enum { JA = 0x00, JEQ = 0x10, JGT = 0x20, JGE = 0x30, JSET = 0x40 };
enum { K = 0x00, X = 0x08 };
#define RVAL_A 0x10
#define SCRATCH 16

static bool alu(uint16_t op, uint32_t *a, uint32_t v)
{
    switch (op) {
    case ADD: *a += v; return true;
    case SUB: *a -= v; return true;
    case MUL: *a *= v; return true;
    case DIV: if (!v) return false; *a /= v; return true;
    case MOD: if (!v) return false; *a %= v; return true;
    case OR: *a |= v; return true;
    case AND: *a &= v; return true;
    case XOR: *a ^= v; return true;
    case LSH: *a = v < 32 ? *a << v : 0; return true;
    case RSH: *a = v < 32 ? *a >> v : 0; return true;
    case NEG: *a = (uint32_t)-(int32_t)*a; return true;
    }
    return false;
}

/* Big-endian loads, bounded by the frame: false past its end. */
static inline bool ld32(const uint8_t *p, uint32_t len, uint32_t off, uint32_t *v)
{
    if (off >= len || len - off < 4)
        return false;
    *v = (uint32_t)p[off] << 24 | (uint32_t)p[off + 1] << 16 | (uint32_t)p[off + 2] << 8 | p[off + 3];
    return true;
}

static inline bool ld16(const uint8_t *p, uint32_t len, uint32_t off, uint32_t *v)
{
    if (off >= len || len - off < 2)
        return false;
    *v = (uint32_t)p[off] << 8 | p[off + 1];
    return true;
}

static inline bool ld8(const uint8_t *p, uint32_t len, uint32_t off, uint32_t *v)
{
    if (off >= len)
        return false;
    *v = p[off];
    return true;
}

/* One switch on the whole opcode, as libpcap's bpf_filter: one indirect
 * jump an instruction. Anything not listed (the checker's refusals) ends
 * the program with no match. */
uint32_t ipc_cap_bpf_run(const struct ipc_cap_insn *prog, uint32_t n, const uint8_t *pkt, uint32_t len,
                         uint32_t wirelen)
{
    uint32_t a = 0, x = 0, mem[SCRATCH] = {0}, t;
    if (n > IPC_CAP_BPF_MAX)
        return 0;
    for (uint32_t pc = 0; pc < n; pc++) {
        const struct ipc_cap_insn *i = &prog[pc];
        uint32_t k = i->k, left = n - pc - 1;
        switch (i->code) {
        case RET | K: return k;
        case RET | RVAL_A: return a;
        case RET | X: return x;
        case LD | W | ABS: if (!ld32(pkt, len, k, &a)) return 0; break;
        case LD | H | ABS: if (!ld16(pkt, len, k, &a)) return 0; break;
        case LD | B | ABS: if (!ld8(pkt, len, k, &a)) return 0; break;
        case LD | W | IND: if (x + k < x || !ld32(pkt, len, x + k, &a)) return 0; break;
        case LD | H | IND: if (x + k < x || !ld16(pkt, len, x + k, &a)) return 0; break;
        case LD | B | IND: if (x + k < x || !ld8(pkt, len, x + k, &a)) return 0; break;
        case LD | W | LEN: a = wirelen; break;
        case LDX | W | LEN: x = wirelen; break;
        case LD | IMM: a = k; break;
        case LDX | IMM: x = k; break;
        case LD | MEM: if (k >= SCRATCH) return 0; a = mem[k]; break;
        case LDX | MEM: if (k >= SCRATCH) return 0; x = mem[k]; break;
        case LDX | B | MSH: if (!ld8(pkt, len, k, &t)) return 0; x = (t & 0xf) << 2; break;
        case ST: if (k >= SCRATCH) return 0; mem[k] = a; break;
        case STX: if (k >= SCRATCH) return 0; mem[k] = x; break;
        case JMP | JA: if (k >= left) return 0; pc += k; break;
        case JMP | JEQ | K: t = a == k ? i->jt : i->jf; if (t >= left) return 0; pc += t; break;
        case JMP | JGT | K: t = a > k ? i->jt : i->jf; if (t >= left) return 0; pc += t; break;
        case JMP | JGE | K: t = a >= k ? i->jt : i->jf; if (t >= left) return 0; pc += t; break;
        case JMP | JSET | K: t = (a & k) ? i->jt : i->jf; if (t >= left) return 0; pc += t; break;
        case JMP | JEQ | X: t = a == x ? i->jt : i->jf; if (t >= left) return 0; pc += t; break;
        case JMP | JGT | X: t = a > x ? i->jt : i->jf; if (t >= left) return 0; pc += t; break;
        case JMP | JGE | X: t = a >= x ? i->jt : i->jf; if (t >= left) return 0; pc += t; break;
        case JMP | JSET | X: t = (a & x) ? i->jt : i->jf; if (t >= left) return 0; pc += t; break;
        case MISC | 0x00: x = a; break; /* TAX */
        case MISC | 0x80: a = x; break; /* TXA */
        default:
            if (C_CLASS(i->code) != ALU || !alu(C_OP(i->code), &a, C_SRC(i->code) == X ? x : k))
                return 0;
            break;
        }
    }
    return 0;
}

int ipc_cap_bpf_check(const struct ipc_cap_insn *prog, uint32_t n, struct ipc_err *err)
{
    if (n == 0 || n > IPC_CAP_BPF_MAX)
        return ipc_errf(err, -EINVAL, "filter: %u instructions (1 to %u)", n, IPC_CAP_BPF_MAX);
    for (uint32_t pc = 0; pc < n; pc++) {
        const struct ipc_cap_insn *i = &prog[pc];
        uint16_t c = i->code;
        uint32_t left = n - pc - 1;
        bool ok = true;
        switch (C_CLASS(c)) {
        case LD:
            ok = C_MODE(c) == IMM || C_MODE(c) == LEN || C_MODE(c) == ABS || C_MODE(c) == IND ||
                 (C_MODE(c) == MEM && i->k < SCRATCH);
            ok = ok && C_SIZE(c) != 0x18;
            break;
        case LDX:
            ok = C_MODE(c) == IMM || C_MODE(c) == LEN || C_MODE(c) == MSH || (C_MODE(c) == MEM && i->k < SCRATCH);
            break;
        case ST:
        case STX:
            ok = i->k < SCRATCH;
            break;
        case ALU:
            ok = C_OP(c) <= XOR && !((C_OP(c) == DIV || C_OP(c) == MOD) && C_SRC(c) == K && i->k == 0);
            break;
        case JMP:
            if (C_OP(c) == JA)
                ok = i->k < left;
            else
                ok = C_OP(c) <= JSET && i->jt < left && i->jf < left;
            break;
        case RET:
        case MISC:
            break;
        }
        if (!ok)
            return ipc_errf(err, -EINVAL, "filter: instruction %u (code 0x%x, k %u) is refused", pc, c, i->k);
    }
    if (C_CLASS(prog[n - 1].code) != RET)
        return ipc_errf(err, -EINVAL, "filter: does not end in a return");
    return 0;
}

/* ---- the service's end --------------------------------------------------- */

/* Copy up to @max bytes of the packet at @b (a chain, bounded) into @dst. */
static uint32_t copy_pkt(const struct ipc_pool *pool, ipc_buf b, uint8_t *dst, uint32_t max, uint32_t *wire)
{
    uint32_t got = 0;
    const struct ipc_meta *hm = ipc_pool_meta(pool, b);
    *wire = hm->next == IPC_BUF_NONE ? hm->len : hm->pkt_len;
    for (unsigned k = 0; b < pool->nbufs && k < IPC_CHAIN_MAX && got < max; k++) {
        const struct ipc_meta *m = ipc_pool_meta(pool, b);
        uint32_t len = m->len;
        if ((uint32_t)m->off + len > pool->frame_size)
            break;
        if (len > max - got)
            len = max - got;
        memcpy(dst + got, ipc_pool_data(pool, b), len);
        got += len;
        b = m->next;
    }
    return got;
}

static void put(struct ipc_pool *pool, ipc_buf b, unsigned dir, uint16_t port, const char *why, bool filtered)
{
    struct ipc_cap *c = ipc_cap_.cap;
    if (b >= pool->nbufs || (dir == IPC_CAP_DROP && c->port != IPC_PORT_NONE && c->port != port))
        return;
    uint32_t nins = c->nins;
    if (filtered && nins) {
        const struct ipc_meta *m = ipc_pool_meta(pool, b);
        uint32_t wire = m->next == IPC_BUF_NONE ? m->len : m->pkt_len;
        if ((uint32_t)m->off + m->len > pool->frame_size)
            return;
        /* The head frame: every header a filter looks at is there. */
        if (!ipc_cap_bpf_run(c->prog, nins, ipc_pool_data(pool, b), m->len, wire))
            return;
    }
    uint64_t head = ipc_ld_rlx(&c->head), tail = ipc_ld_acq(&c->tail);
    if (head - tail >= IPC_CAP_SLOTS) { /* full, or a tail the reader spoiled: lose the capture */
        ipc_count(&c->lost, 1);
        return;
    }
    struct ipc_cap_slot *s = &c->slot[head & (IPC_CAP_SLOTS - 1)];
    uint32_t snap = c->snaplen;
    if (snap == 0 || snap > IPC_CAP_SNAP_MAX)
        snap = IPC_CAP_SNAP_MAX;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->ts_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    s->caplen = copy_pkt(pool, b, s->data, snap, &s->wirelen);
    s->port = port;
    s->dir = (uint8_t)dir;
    memset(s->reason, 0, sizeof(s->reason));
    if (why)
        strncpy(s->reason, why, sizeof(s->reason) - 1);
    ipc_st_rel(&c->head, head + 1);
}

void ipc_cap_frames(struct ipc_pool *pool, const ipc_buf *bufs, uint32_t n, unsigned dir, uint16_t port)
{
    for (uint32_t i = 0; i < n; i++)
        put(pool, bufs[i], dir, port, NULL, true);
}

void ipc_cap_drop(struct ipc_pool *pool, ipc_buf b, uint16_t port, const char *why)
{
    unsigned on = ipc_ld_rlx(&ipc_cap_.cap->on);
    if (on & IPC_CAP_TRACE)
        ipc_trace_drop(pool, b, port, why);
    if (on & IPC_CAP_DROP)
        put(pool, b, IPC_CAP_DROP, port, why, true);
}

/* ---- the client's end ---------------------------------------------------- */

int ipc_cap_take(struct ipc_cap *c, struct ipc_cap_rec *r, uint64_t *skipped)
{
    uint64_t tail = ipc_ld_rlx(&c->tail), head = ipc_ld_acq(&c->head);
    *skipped = 0;
    if (head == tail)
        return 0;
    if (head - tail > IPC_CAP_SLOTS) {
        /* Behind our tail, or further ahead than the ring holds: no slot
         * between is to be believed. */
        *skipped = head - tail > IPC_CAP_SLOTS * 16ull ? 0 : head - tail;
        ipc_st_rel(&c->tail, head);
        return -EPROTO;
    }
    const struct ipc_cap_slot *s = &c->slot[tail & (IPC_CAP_SLOTS - 1)];
    r->ts_ns = s->ts_ns;
    r->caplen = s->caplen;
    r->wirelen = s->wirelen;
    r->port = s->port;
    r->dir = s->dir;
    if (r->caplen > IPC_CAP_SNAP_MAX)
        r->caplen = IPC_CAP_SNAP_MAX;
    if (r->wirelen < r->caplen)
        r->wirelen = r->caplen;
    memcpy(r->data, s->data, r->caplen);
    memcpy(r->reason, s->reason, sizeof(r->reason));
    r->reason[sizeof(r->reason) - 1] = '\0';
    for (char *p = r->reason; *p; p++)
        if (*p < 0x21 || *p > 0x7e)
            *p = '?';
    ipc_st_rel(&c->tail, tail + 1);
    return 1;
}
