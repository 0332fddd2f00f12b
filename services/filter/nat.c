/* SPDX-License-Identifier: MIT */
/*
 * services/filter/nat.c: address and port translation over a parsed frame,
 * with incremental checksum updates (RFC 1624) on the hot path; source
 * port allocation that keeps the flow's port when the mapping is free, as
 * Linux does; ICMP errors whose quoted header is rewritten with the outer
 * one; the frames `reject` answers with (TCP RST, ICMP unreachable).
 */
#include "services/filter/flt_int.h"

#include <string.h>

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}

uint16_t flt_csum(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    uint64_t s = sum;
    size_t i = 0;
    for (; i + 1 < len; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (i < len)
        s += (uint32_t)p[i] << 8;
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

void csum_replace(uint8_t *cs, const uint8_t *old, const uint8_t *new_, size_t n)
{
    uint32_t sum = (uint16_t)~rd16(cs);
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += (uint16_t)~rd16(old + i) + (uint32_t)rd16(new_ + i);
    wr16(cs, (uint16_t)~csum_fold(sum));
}

/* the L4 checksum field that covers the addresses (pseudo-header) and the
 * ports, or NULL: UDP over IPv4 without one, ICMPv4 for addresses */
static uint8_t *l4_csum(uint8_t *d, uint32_t l4, uint32_t end, uint8_t proto, int fam, bool for_addr)
{
    if (proto == 6 && l4 + 18 <= end)
        return d + l4 + 16;
    if (proto == 17 && l4 + 8 <= end)
        return (fam == 4 && rd16(d + l4 + 6) == 0) ? NULL : d + l4 + 6;
    if ((proto == 58 || (proto == 1 && !for_addr)) && l4 + 4 <= end)
        return d + l4 + 2;
    return NULL;
}

static void set_addr(uint8_t *d, uint32_t l3, uint32_t l4, uint32_t end, uint8_t proto, int fam, bool src,
                     const uint8_t a16[16])
{
    uint32_t off = l3 + (fam == 4 ? (src ? 12 : 16) : (src ? 8 : 24));
    uint32_t n = fam == 4 ? 4 : 16;
    const uint8_t *a = fam == 4 ? a16 + 12 : a16;
    if (!memcmp(d + off, a, n))
        return;
    uint8_t *cs = l4 ? l4_csum(d, l4, end, proto, fam, true) : NULL;
    if (cs)
        csum_replace(cs, d + off, a, n);
    if (fam == 4)
        csum_replace(d + l3 + 10, d + off, a, n);
    memcpy(d + off, a, n);
}

static void set_port(uint8_t *d, uint32_t l4, uint32_t end, uint8_t proto, int fam, bool src, uint16_t port)
{
    uint32_t off;
    if (proto == 6 || proto == 17)
        off = l4 + (src ? 0 : 2);
    else if (proto == 1 || proto == 58)
        off = l4 + 4; /* the echo identifier stands for both ports */
    else
        return;
    if (off + 2 > end || rd16(d + off) == port)
        return;
    uint8_t nw[2];
    wr16(nw, port);
    uint8_t *cs = l4_csum(d, l4, end, proto, fam, false);
    if (cs)
        csum_replace(cs, d + off, nw, 2);
    if (proto == 17 && fam == 4 && cs && rd16(cs) == 0)
        wr16(cs, 0xffff);
    memcpy(d + off, nw, 2);
}

void nat_rewrite(uint8_t *d, const struct flt_parsed *pp, const struct flt_tuple *target, bool src, bool dst)
{
    if (pp->frag)
        return;
    if (src) {
        set_addr(d, pp->l3, pp->l4, pp->end, pp->proto, pp->family, true, target->src);
        set_port(d, pp->l4, pp->end, pp->proto, pp->family, true, target->sport);
    }
    if (dst) {
        set_addr(d, pp->l3, pp->l4, pp->end, pp->proto, pp->family, false, target->dst);
        set_port(d, pp->l4, pp->end, pp->proto, pp->family, false, target->dport);
    }
}

static uint32_t pseudo_sum(const uint8_t *d, uint32_t l3, int fam, uint8_t proto, uint32_t l4len)
{
    uint32_t s = fam == 4 ? flt_csum(d + l3 + 12, 8, 0) : flt_csum(d + l3 + 8, 32, 0);
    return s + proto + (l4len & 0xffff) + (l4len >> 16);
}

/* L4 checksum from scratch over [l4, end) */
void flt_fix_l4_full(uint8_t *d, const struct flt_parsed *pp)
{
    uint32_t l4len = pp->end - pp->l4;
    uint8_t *cs = pp->proto == 6 ? d + pp->l4 + 16 : pp->proto == 17 ? d + pp->l4 + 6 : d + pp->l4 + 2;
    wr16(cs, 0);
    uint32_t s = pp->proto == 1 ? 0 : pseudo_sum(d, pp->l3, pp->family, pp->proto, l4len);
    uint16_t c = (uint16_t)~flt_csum(d + pp->l4, l4len, s);
    if (pp->proto == 17 && c == 0)
        c = 0xffff;
    wr16(cs, c);
}

static void ip4_fix(uint8_t *d, uint32_t l3)
{
    wr16(d + l3 + 10, 0);
    wr16(d + l3 + 10, (uint16_t)~flt_csum(d + l3, (d[l3] & 15u) * 4, 0));
}

/* An ICMP error for a translated flow: the outer addresses that are the
 * flow's end points and the whole quoted header become what the host on
 * this side sent or expects. As Linux does, each side at its own hook:
 * before routing (@src_side false) the outer destination and the quoted
 * source, the destination NAT's half, so that the error is routed to the
 * host it is for; after routing (@src_side true) the outer source and the
 * quoted destination, the source NAT's half, so that an error a host
 * behind a masquerade sends leaves from the router's address without
 * having entered the router with it. Errors are rare: the ICMP checksum is
 * summed anew over the message. */
void nat_icmp_error(uint8_t *d, const struct flt_parsed *pp, const struct ct_entry *e, int dir, bool src_side)
{
    const struct flt_tuple *q = &e->t[!dir]; /* the quoted packet, as its sender saw it */
    int fam = pp->family;
    uint32_t n = fam == 4 ? 4 : 16, so = fam == 4 ? 12 : 8, dof = fam == 4 ? 16 : 24;
    const uint8_t *qs = fam == 4 ? q->src + 12 : q->src, *qd = fam == 4 ? q->dst + 12 : q->dst;
    const uint8_t *is = fam == 4 ? pp->in.src + 12 : pp->in.src, *id = fam == 4 ? pp->in.dst + 12 : pp->in.dst;
    if (!src_side && !memcmp(d + pp->l3 + dof, is, n)) /* to the quoted packet's sender */
        memcpy(d + pp->l3 + dof, qs, n);
    if (src_side && !memcmp(d + pp->l3 + so, id, n)) /* from its destination */
        memcpy(d + pp->l3 + so, qd, n);
    if (fam == 4)
        ip4_fix(d, pp->l3);
    /* inner: its L4 checksum first, while the old bytes are still there */
    uint32_t il3 = pp->in_l3, il4 = pp->in_l4, iend = pp->in_end;
    bool ported = pp->in.proto == 6 || pp->in.proto == 17;
    if (!src_side) {
        set_addr(d, il3, il4, iend, pp->in.proto, fam, true, q->src);
        set_port(d, il4, iend, pp->in.proto, fam, true, q->sport);
    } else {
        set_addr(d, il3, il4, iend, pp->in.proto, fam, false, q->dst);
        if (ported)
            set_port(d, il4, iend, pp->in.proto, fam, false, q->dport);
    }
    if (fam == 4 && il3 + 20 <= iend)
        ip4_fix(d, il3);
    flt_fix_l4_full(d, pp);
}

static bool reply_free(struct ct_table *ct, const struct flt_tuple *r, uint32_t self, uint64_t now)
{
    int dir;
    uint32_t ref = ct_find(ct, r, now, &dir);
    return ref == 0 || ref == self;
}

int nat_snat(struct ct_table *ct, struct ct_entry *e, const uint8_t addr[16], uint16_t lo, uint16_t hi, uint64_t now)
{
    uint32_t self = (uint32_t)(e - ct->e) + 1;
    struct flt_tuple r = e->t[1];
    memcpy(r.dst, addr, 16);
    uint8_t proto = e->t[0].proto;
    bool ported = proto == 6 || proto == 17 || proto == 1 || proto == 58;
    uint16_t want = e->t[0].sport;
    if (!ported) {
        if (!reply_free(ct, &r, self, now))
            return -1;
        ct_rehash_reply(ct, self, &r);
        return 0;
    }
    if (lo == 0 && hi == 0) {
        /* Linux's classes: a privileged port stays privileged */
        if (proto == 1 || proto == 58)
            lo = 0, hi = 65535;
        else if (want < 512)
            lo = 1, hi = 511;
        else if (want < 1024)
            lo = 600, hi = 1023;
        else
            lo = 1024, hi = 65535;
    }
    if (want >= lo && want <= hi) {
        r.dport = want;
        if (reply_free(ct, &r, self, now))
            goto found;
    }
    uint32_t span = (uint32_t)hi - lo + 1;
    uint32_t start = (uint32_t)(want * 2654435761u ^ (uint32_t)now) % span;
    for (uint32_t k = 0; k < span && k < 512; k++) {
        r.dport = (uint16_t)(lo + (start + k) % span);
        if (reply_free(ct, &r, self, now))
            goto found;
    }
    return -1;
found:
    if (proto == 1 || proto == 58)
        r.sport = r.dport; /* the echo identifier is both ports */
    ct_rehash_reply(ct, self, &r);
    return 0;
}

/* ---- reject ---- */

static uint32_t build_ip(uint8_t *d, uint32_t l3, int fam, const uint8_t *src16, const uint8_t *dst16, uint8_t proto,
                         uint32_t l4len)
{
    if (fam == 4) {
        memset(d + l3, 0, 20);
        d[l3] = 0x45;
        wr16(d + l3 + 2, (uint16_t)(20 + l4len));
        d[l3 + 6] = 0x40; /* DF */
        d[l3 + 8] = 64;
        d[l3 + 9] = proto;
        memcpy(d + l3 + 12, src16 + 12, 4);
        memcpy(d + l3 + 16, dst16 + 12, 4);
        ip4_fix(d, l3);
        return 20;
    }
    memset(d + l3, 0, 40);
    d[l3] = 0x60;
    wr16(d + l3 + 4, (uint16_t)l4len);
    d[l3 + 6] = proto;
    d[l3 + 7] = 64;
    memcpy(d + l3 + 8, src16, 16);
    memcpy(d + l3 + 24, dst16, 16);
    return 40;
}

int flt_build_reject(struct flt_pkt *p, const struct flt_parsed *pp, bool tcp_reset, const struct flt_port *port)
{
    uint8_t *d = p->data;
    int fam = pp->family;
    if (pp->frag || pp->icmp_err || (pp->proto == 6 && (pp->tcpflags & 0x04)))
        return -1; /* never answer an error or a reset with another */
    if ((fam == 4 && pp->t.dst[12] >= 224) || (fam == 6 && pp->t.dst[0] == 0xff))
        return -1;
    uint8_t mac[6];
    memcpy(mac, d, 6);
    memcpy(d, d + 6, 6);
    memcpy(d + 6, mac, 6);
    struct flt_tuple t = pp->t;
    struct flt_parsed np = { .family = fam, .l3 = pp->l3 };
    if (tcp_reset && pp->proto == 6) {
        if (p->cap < pp->l3 + (fam == 4 ? 20 : 40) + 20)
            return -1;
        const uint8_t *th = d + pp->l4;
        uint32_t seq = (uint32_t)th[4] << 24 | th[5] << 16 | th[6] << 8 | th[7];
        uint32_t ack = (uint32_t)th[8] << 24 | th[9] << 16 | th[10] << 8 | th[11];
        uint32_t seglen = pp->end - pp->l4 - (th[12] >> 4) * 4u + !!(pp->tcpflags & 2) + !!(pp->tcpflags & 1);
        bool had_ack = pp->tcpflags & 0x10;
        uint8_t tcp[20] = { 0 };
        wr16(tcp, t.dport);
        wr16(tcp + 2, t.sport);
        uint32_t s = had_ack ? ack : 0, a = had_ack ? 0 : seq + seglen;
        for (int i = 0; i < 4; i++) {
            tcp[4 + i] = (uint8_t)(s >> (24 - 8 * i));
            tcp[8 + i] = (uint8_t)(a >> (24 - 8 * i));
        }
        tcp[12] = 5 << 4;
        tcp[13] = had_ack ? 0x04 : 0x14;
        np.l4 = pp->l3 + build_ip(d, pp->l3, fam, t.dst, t.src, 6, 20);
        memcpy(d + np.l4, tcp, 20);
        np.proto = 6;
    } else {
        uint32_t iph = fam == 4 ? 20 : 40, maxq = fam == 4 ? 548 : 1232;
        uint32_t q = pp->end - pp->l3;
        if (q > maxq)
            q = maxq;
        /* at least the offender's IP header and 8 bytes, as RFC 792 asks */
        uint32_t minq = pp->l4 - pp->l3 + 8;
        if (minq > pp->end - pp->l3)
            minq = pp->end - pp->l3;
        if (p->cap < pp->l3 + iph + 8 + minq)
            return -1;
        if (pp->l3 + iph + 8 + q > p->cap)
            q = p->cap - pp->l3 - iph - 8;
        memmove(d + pp->l3 + iph + 8, d + pp->l3, q);
        const uint8_t *src = t.dst;
        uint8_t a16[16];
        if (port && fam == 4 && port->has_v4) {
            memset(a16, 0, 10);
            a16[10] = a16[11] = 0xff;
            memcpy(a16 + 12, port->v4, 4);
            src = a16;
        } else if (port && fam == 6 && port->has_v6) {
            src = port->v6;
        }
        uint8_t proto = fam == 4 ? 1 : 58;
        np.l4 = pp->l3 + build_ip(d, pp->l3, fam, src, t.src, proto, 8 + q);
        memset(d + np.l4, 0, 8);
        d[np.l4] = fam == 4 ? 3 : 1;
        d[np.l4 + 1] = fam == 4 ? 3 : 4; /* port unreachable */
        np.proto = proto;
    }
    if (np.proto == 6) {
        np.end = np.l4 + 20;
    } else {
        uint32_t tot = fam == 4 ? rd16(d + pp->l3 + 2) : 40u + rd16(d + pp->l3 + 4);
        np.end = pp->l3 + tot;
    }
    flt_fix_l4_full(d, &np);
    p->len = np.end;
    return 0;
}
