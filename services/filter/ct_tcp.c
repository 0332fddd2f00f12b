/* SPDX-License-Identifier: MIT */
/*
 * services/filter/ct_tcp.c: TCP state and window tracking, with the
 * behaviour of Linux's conntrack defaults (nf_conntrack_tcp_loose = 1,
 * be_liberal = 0): the same states, the same transitions per segment kind
 * and direction, the same four window bounds, the same timeouts. Written
 * from the behaviour, not from its code; docs/filter.md lists where ours
 * is simpler (no retransmission counting, no SACK-block bounds).
 */
#include "services/filter/flt_int.h"

#include <string.h>

enum seg { SEG_SYN, SEG_SYNACK, SEG_FIN, SEG_ACK, SEG_RST, SEG_NONE, SEG_MAX };

#define IV 0xfe /* invalid: the segment does not belong */
#define IG 0xff /* ignored: passes, changes nothing */

#define NO TS_NONE
#define SS TS_SYN_SENT
#define SR TS_SYN_RECV
#define ES TS_ESTABLISHED
#define FW TS_FIN_WAIT
#define CW TS_CLOSE_WAIT
#define LA TS_LAST_ACK
#define TW TS_TIME_WAIT
#define CL TS_CLOSE
#define S2 TS_SYN_SENT2

/* next state [direction][segment][current state]; columns in enum order:
 *                 NO  SS  SR  ES  FW  CW  LA  TW  CL  S2 */
static const uint8_t next_state[2][SEG_MAX][TS_MAX] = {
    { /* from the originator */
        [SEG_SYN] = { SS, SS, IG, IG, IG, IG, IG, SS, SS, S2 },
        [SEG_SYNACK] = { IV, IV, SR, IV, IV, IV, IV, IV, IV, SR },
        [SEG_FIN] = { IV, IV, FW, FW, LA, LA, LA, TW, CL, IV },
        [SEG_ACK] = { ES, IV, ES, ES, CW, CW, TW, TW, CL, IV },
        [SEG_RST] = { IV, CL, CL, CL, CL, CL, CL, CL, CL, CL },
        [SEG_NONE] = { IV, IV, IV, IV, IV, IV, IV, IV, IV, IV },
    },
    { /* from the responder */
        [SEG_SYN] = { IV, S2, IV, IV, IV, IV, IV, SS, IV, S2 },
        [SEG_SYNACK] = { IV, SR, IG, IG, IG, IG, IG, IG, IG, SR },
        [SEG_FIN] = { IV, IV, FW, FW, LA, LA, LA, TW, CL, IV },
        [SEG_ACK] = { IV, IG, SR, ES, CW, CW, TW, TW, CL, IG },
        [SEG_RST] = { IV, CL, CL, CL, CL, CL, CL, CL, CL, CL },
        [SEG_NONE] = { IV, IV, IV, IV, IV, IV, IV, IV, IV, IV },
    },
};

static const uint32_t tcp_timeout_s[TS_MAX] = {
    [TS_NONE] = 10, [TS_SYN_SENT] = 120, [TS_SYN_RECV] = 60, [TS_ESTABLISHED] = 432000,
    [TS_FIN_WAIT] = 120, [TS_CLOSE_WAIT] = 60, [TS_LAST_ACK] = 30, [TS_TIME_WAIT] = 120,
    [TS_CLOSE] = 10, [TS_SYN_SENT2] = 120,
};

#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_ACK 0x10

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }
static bool before(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static bool after(uint32_t a, uint32_t b) { return before(b, a); }

static enum seg seg_kind(uint8_t fl)
{
    if (fl & TH_RST)
        return SEG_RST;
    if (fl & TH_SYN)
        return (fl & TH_ACK) ? SEG_SYNACK : SEG_SYN;
    if (fl & TH_FIN)
        return SEG_FIN;
    if (fl & TH_ACK)
        return SEG_ACK;
    return SEG_NONE;
}

/* the window scale option of a SYN, -1 if absent */
static int opt_wscale(const uint8_t *tcp, uint32_t hlen)
{
    for (uint32_t i = 20; i < hlen;) {
        uint8_t k = tcp[i];
        if (k == 0)
            break;
        if (k == 1) {
            i++;
            continue;
        }
        if (i + 1 >= hlen || tcp[i + 1] < 2 || i + tcp[i + 1] > hlen)
            break;
        if (k == 3 && tcp[i + 1] == 3)
            return tcp[i + 2] > 14 ? 14 : tcp[i + 2];
        i += tcp[i + 1];
    }
    return -1;
}

static void side_init(struct ct_tcp_side *s, const uint8_t *tcp, uint32_t hlen, uint32_t paylen)
{
    uint8_t fl = tcp[13];
    uint32_t seq = rd32(tcp + 4), win = (uint32_t)tcp[14] << 8 | tcp[15];
    uint32_t end = seq + paylen + !!(fl & TH_SYN) + !!(fl & TH_FIN);
    memset(s, 0, sizeof *s);
    if (fl & TH_SYN) {
        int ws = opt_wscale(tcp, hlen);
        s->has_wscale = ws >= 0;
        s->wscale = ws >= 0 ? (uint8_t)ws : 0;
        s->end = s->maxend = end;
        s->maxwin = win ? win : 1;
    } else {
        s->end = end;
        s->maxwin = win ? win : 1;
        s->maxend = end + s->maxwin;
    }
}

int ct_tcp_new(struct ct_entry *e, const uint8_t *tcp, uint32_t tcplen, uint32_t paylen)
{
    enum seg k = seg_kind(tcp[13]);
    uint8_t ns = next_state[0][k][TS_NONE];
    if (ns == IV || ns == IG)
        return FLT_R_TCP_STATE;
    side_init(&e->side[0], tcp, tcplen, paylen);
    if (k != SEG_SYN) {
        /* picked up mid-stream (tcp_loose): neither window is known */
        e->side[0].liberal = e->side[1].liberal = 1;
    }
    e->tcp_state = ns;
    e->last_dir = 0;
    e->last_idx = (uint8_t)k;
    return 0;
}

static bool in_window(struct ct_entry *e, int dir, const uint8_t *tcp, uint32_t hlen, uint32_t paylen)
{
    struct ct_tcp_side *snd = &e->side[dir], *rcv = &e->side[!dir];
    uint8_t fl = tcp[13];
    uint32_t seq = rd32(tcp + 4), ack = rd32(tcp + 8);
    uint32_t win = (uint32_t)tcp[14] << 8 | tcp[15];
    uint32_t end = seq + paylen + !!(fl & TH_SYN) + !!(fl & TH_FIN);

    if (snd->maxwin == 0) {
        /* this side's first segment (the SYN/ACK, or a reply to a
         * picked-up connection): it defines the side */
        side_init(snd, tcp, hlen, paylen);
        if ((fl & TH_SYN) && !(snd->has_wscale && rcv->has_wscale))
            snd->wscale = rcv->wscale = 0;
        if (rcv->maxwin == 0)
            rcv->end = rcv->maxend = ack;
        if (!(fl & TH_ACK))
            return true;
    } else if ((fl & TH_SYN) && dir == 0 && e->tcp_state == TS_SYN_SENT) {
        side_init(snd, tcp, hlen, paylen); /* a retransmitted or new SYN */
        return true;
    }
    if (!(fl & TH_SYN))
        win <<= snd->wscale;
    if (!(fl & TH_ACK))
        ack = rcv->end;
    uint32_t maxack = snd->maxwin > 66000 ? snd->maxwin : 66000;
    bool ok = snd->liberal ||
              (!after(seq, snd->maxend) && !before(end, snd->end - rcv->maxwin) && !after(ack, rcv->end) &&
               !before(ack, rcv->end - maxack));
    if (!ok)
        return false;
    if (!(fl & TH_SYN) && snd->maxwin < win)
        snd->maxwin = win;
    if (after(end, snd->end)) {
        if (rcv->maxwin != 0 && after(end, snd->maxend))
            rcv->maxwin += end - snd->maxend;
        snd->end = end;
    }
    if (fl & TH_ACK) {
        uint32_t lim = ack + (win ? win : 1);
        if (after(lim, rcv->maxend))
            rcv->maxend = lim;
    }
    if (snd->liberal && (fl & TH_ACK) && e->flags & CTF_SEEN_REPLY) {
        /* both sides seen after a pick-up: their windows are now known */
        snd->liberal = 0;
    }
    return true;
}

int ct_tcp_track(struct ct_entry *e, int dir, const uint8_t *tcp, uint32_t tcplen, uint32_t paylen, uint64_t now,
                 bool *reopen)
{
    enum seg k = seg_kind(tcp[13]);
    uint8_t old = e->tcp_state < TS_MAX ? e->tcp_state : TS_CLOSE;
    uint8_t ns = next_state[dir][k][old];
    *reopen = false;
    if (dir == 0 && k == SEG_SYN && (old == TS_TIME_WAIT || old == TS_CLOSE)) {
        /* a new connection on a closed one's ports: the old entry goes */
        *reopen = true;
        return 0;
    }
    if (ns == IV)
        return FLT_R_TCP_STATE;
    if (ns == IG)
        return 0;
    if (k == SEG_SYNACK && dir == 1 && old == TS_SYN_SENT && rd32(tcp + 8) != e->side[0].end)
        return FLT_R_TCP_STATE; /* acks no SYN we saw */
    if (k == SEG_RST && old == TS_SYN_SENT && dir == 1 &&
        (!(tcp[13] & TH_ACK) || rd32(tcp + 8) != e->side[0].end))
        return FLT_R_TCP_STATE;
    if (!in_window(e, dir, tcp, tcplen, paylen))
        return FLT_R_TCP_WINDOW;
    if (old == TS_SYN_RECV && ns == TS_ESTABLISHED && dir == 0)
        e->flags |= CTF_ASSURED; /* the handshake completed */
    else if (ns == TS_ESTABLISHED && (e->flags & CTF_SEEN_REPLY) && e->side[0].liberal == 0 && old == ns)
        e->flags |= CTF_ASSURED;
    e->tcp_state = ns;
    e->last_dir = (uint8_t)dir;
    e->last_idx = (uint8_t)k;
    (void)now;
    return 0;
}

uint64_t ct_timeout(const struct ct_entry *e)
{
    switch (e->t[0].proto) {
    case 6:
        return (uint64_t)tcp_timeout_s[e->tcp_state < TS_MAX ? e->tcp_state : TS_CLOSE] * 1000;
    case 17:
        return (e->flags & CTF_ASSURED) ? 120000 : 30000;
    case 1:
    case 58:
        return 30000;
    default:
        return 600000;
    }
}
