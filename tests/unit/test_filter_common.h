/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_filter_common.h: frames for the filter's unit tests
 * (Ethernet + IPv4/IPv6 + TCP/UDP/ICMP with correct checksums), a checksum
 * verifier that sums every header anew, and a fixture: a table region, two
 * ports (lan 0: 10.0.0.1, fd00::1; wan 1: 203.0.113.1, 2001:db8::1).
 */
#ifndef T_FILTER_COMMON_H
#define T_FILTER_COMMON_H

#include "services/filter/flt.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_PSH 0x08
#define TH_ACK 0x10

struct tpkt {
    int fam;                   /* 4 or 6 */
    uint8_t proto;             /* 6, 17, 1, 58 */
    const char *src, *dst;
    uint16_t sport, dport;     /* ICMP echo: sport = identifier */
    uint8_t flags;             /* TCP */
    uint32_t seq, ack;
    uint16_t win;
    int wscale;                /* TCP SYN option, -1 none */
    uint32_t paylen;
    uint8_t icmp_type, icmp_code;
};

static inline void t_wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void t_wr32(uint8_t *p, uint32_t v)
{
    t_wr16(p, v >> 16);
    t_wr16(p + 2, v);
}
static inline uint16_t t_rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t t_rd32(const uint8_t *p) { return (uint32_t)t_rd16(p) << 16 | t_rd16(p + 2); }

static inline uint32_t t_sum(const uint8_t *p, size_t n, uint32_t s)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (n & 1)
        s += (uint32_t)p[n - 1] << 8;
    return s;
}
static inline uint16_t t_fold(uint32_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

/* L4 checksum over [l4, l4+len): 0 when correct once summed with it */
static inline uint32_t t_pseudo(const uint8_t *ip, int fam, uint8_t proto, uint32_t len)
{
    uint32_t s = fam == 4 ? t_sum(ip + 12, 8, 0) : t_sum(ip + 8, 32, 0);
    return s + proto + (len & 0xffff) + (len >> 16);
}

static inline void t_fill_l4_csum(uint8_t *ip, int fam, uint8_t proto, uint8_t *l4, uint32_t len)
{
    uint32_t off = proto == 6 ? 16 : proto == 17 ? 6 : 2;
    t_wr16(l4 + off, 0);
    uint32_t s = proto == 1 ? 0 : t_pseudo(ip, fam, proto, len);
    uint16_t c = (uint16_t)~t_fold(t_sum(l4, len, s));
    if (proto == 17 && c == 0)
        c = 0xffff;
    t_wr16(l4 + off, c);
}

/* An Ethernet frame for tp in buf; returns its length. */
static inline uint32_t t_build(uint8_t *buf, const struct tpkt *tp)
{
    memset(buf, 0, 14);
    memcpy(buf, "\x02\0\0\0\0\x01", 6);
    memcpy(buf + 6, "\x02\0\0\0\0\x02", 6);
    t_wr16(buf + 12, tp->fam == 4 ? 0x0800 : 0x86dd);
    uint8_t *ip = buf + 14;
    uint32_t iph = tp->fam == 4 ? 20 : 40;
    uint8_t *l4 = ip + iph;
    uint32_t l4len;
    if (tp->proto == 6) {
        uint32_t opt = (tp->flags & TH_SYN) && tp->wscale >= 0 ? 4 : 0;
        memset(l4, 0, 20 + opt);
        t_wr16(l4, tp->sport);
        t_wr16(l4 + 2, tp->dport);
        t_wr32(l4 + 4, tp->seq);
        t_wr32(l4 + 8, tp->ack);
        l4[12] = (uint8_t)(((20 + opt) / 4) << 4);
        l4[13] = tp->flags;
        t_wr16(l4 + 14, tp->win);
        if (opt) {
            l4[20] = 1;
            l4[21] = 3;
            l4[22] = 3;
            l4[23] = (uint8_t)tp->wscale;
        }
        l4len = 20 + opt + tp->paylen;
        memset(l4 + 20 + opt, 'x', tp->paylen);
    } else if (tp->proto == 17) {
        t_wr16(l4, tp->sport);
        t_wr16(l4 + 2, tp->dport);
        l4len = 8 + tp->paylen;
        t_wr16(l4 + 4, l4len);
        memset(l4 + 8, 'u', tp->paylen);
    } else {
        memset(l4, 0, 8);
        l4[0] = tp->icmp_type;
        l4[1] = tp->icmp_code;
        t_wr16(l4 + 4, tp->sport);
        t_wr16(l4 + 6, 1);
        l4len = 8 + tp->paylen;
        memset(l4 + 8, 'i', tp->paylen);
    }
    if (tp->fam == 4) {
        memset(ip, 0, 20);
        ip[0] = 0x45;
        t_wr16(ip + 2, 20 + l4len);
        ip[8] = 64;
        ip[9] = tp->proto;
        inet_pton(AF_INET, tp->src, ip + 12);
        inet_pton(AF_INET, tp->dst, ip + 16);
        t_wr16(ip + 10, (uint16_t)~t_fold(t_sum(ip, 20, 0)));
    } else {
        memset(ip, 0, 40);
        ip[0] = 0x60;
        t_wr16(ip + 4, l4len);
        ip[6] = tp->proto;
        ip[7] = 64;
        inet_pton(AF_INET6, tp->src, ip + 8);
        inet_pton(AF_INET6, tp->dst, ip + 24);
    }
    t_fill_l4_csum(ip, tp->fam, tp->proto, l4, l4len);
    return 14 + iph + l4len;
}

/* An ICMP error (type/code) from `from` to `to` quoting the frame q. */
static inline uint32_t t_build_error(uint8_t *buf, int fam, const char *from, const char *to, uint8_t type,
                                     uint8_t code, const uint8_t *q, uint32_t qlen)
{
    struct tpkt tp = { .fam = fam, .proto = fam == 4 ? 1 : 58, .src = from, .dst = to, .icmp_type = type,
                       .icmp_code = code, .paylen = qlen - 14 };
    uint32_t n = t_build(buf, &tp);
    uint8_t *ip = buf + 14, *l4 = ip + (fam == 4 ? 20 : 40);
    memset(l4 + 4, 0, 4);
    memcpy(l4 + 8, q + 14, qlen - 14);
    t_fill_l4_csum(ip, fam, tp.proto, l4, n - 14 - (fam == 4 ? 20 : 40));
    return n;
}

/* every checksum of the frame, summed anew: true when all are right
 * (the quoted header of an ICMP error too, as far as it is there) */
static inline bool t_csums_ok(const uint8_t *f, uint32_t len)
{
    const uint8_t *ip = f + 14;
    int fam = ip[0] >> 4;
    uint32_t iph = fam == 4 ? (ip[0] & 15u) * 4 : 40;
    uint32_t tot = fam == 4 ? t_rd16(ip + 2) : 40u + t_rd16(ip + 4);
    if (14 + tot > len)
        return false;
    if (fam == 4 && t_fold(t_sum(ip, iph, 0)) != 0xffff)
        return false;
    uint8_t proto = fam == 4 ? ip[9] : ip[6];
    const uint8_t *l4 = ip + iph;
    uint32_t l4len = tot - iph;
    uint32_t s = proto == 1 ? 0 : t_pseudo(ip, fam, proto, l4len);
    if (proto == 17 && fam == 4 && t_rd16(l4 + 6) == 0)
        return true;
    if (t_fold(t_sum(l4, l4len, s)) != 0xffff)
        return false;
    if ((proto == 1 && (l4[0] == 3 || l4[0] == 11)) || (proto == 58 && l4[0] < 5)) {
        const uint8_t *qi = l4 + 8;
        if (fam == 4 && t_fold(t_sum(qi, (qi[0] & 15u) * 4, 0)) != 0xffff)
            return false;
    }
    return true;
}

static inline uint32_t t_icmp_error_inner_sport(const uint8_t *f)
{
    const uint8_t *ip = f + 14;
    int fam = ip[0] >> 4;
    const uint8_t *qi = ip + (fam == 4 ? 20 : 40) + 8;
    const uint8_t *ql4 = qi + (fam == 4 ? (qi[0] & 15u) * 4 : 40);
    return t_rd16(ql4);
}

/* a tuple as the filter keys it (IPv4 v4-mapped) */
static inline void t_tuple(struct flt_tuple *t, int fam, uint8_t proto, const char *src, const char *dst,
                           uint16_t sport, uint16_t dport)
{
    memset(t, 0, sizeof *t);
    t->family = (uint8_t)fam;
    t->proto = proto;
    t->sport = sport;
    t->dport = dport;
    if (fam == 4) {
        t->src[10] = t->src[11] = t->dst[10] = t->dst[11] = 0xff;
        inet_pton(AF_INET, src, t->src + 12);
        inet_pton(AF_INET, dst, t->dst + 12);
    } else {
        inet_pton(AF_INET6, src, t->src);
        inet_pton(AF_INET6, dst, t->dst);
    }
}

/* ---- the fixture ---- */

struct tfix {
    void *region;
    size_t size;
    struct flt_port ports[2];
    struct flt_rules *rules;
    struct flt *f;
    char err[256];
};

static inline void t_ports(struct flt_port p[2])
{
    memset(p, 0, 2 * sizeof *p);
    strcpy(p[0].name, "lan");
    p[0].has_v4 = p[0].has_v6 = 1;
    inet_pton(AF_INET, "10.0.0.1", p[0].v4);
    inet_pton(AF_INET6, "fd00::1", p[0].v6);
    strcpy(p[1].name, "wan");
    p[1].has_v4 = p[1].has_v6 = 1;
    inet_pton(AF_INET, "203.0.113.1", p[1].v4);
    inet_pton(AF_INET6, "2001:db8::1", p[1].v6);
}

/* rules may be NULL: no rules, everything accepted, still tracked */
static inline int t_fix_init(struct tfix *x, uint32_t entries, const char *rules)
{
    memset(x, 0, sizeof *x);
    x->size = flt_ct_region_size(entries);
    x->region = aligned_alloc(64, (x->size + 63) & ~(size_t)63);
    if (!x->region || flt_ct_format(x->region, x->size, entries, 12345) < 0)
        return -1;
    t_ports(x->ports);
    if (rules) {
        x->rules = flt_rules_compile(rules, strlen(rules), x->ports, 2, x->err, sizeof x->err);
        if (!x->rules)
            return -1;
    }
    x->f = flt_new(x->region, x->ports, 2, x->rules);
    return x->f ? 0 : -1;
}

static inline void t_fix_fini(struct tfix *x)
{
    flt_free(x->f);
    flt_rules_free(x->rules);
    free(x->region);
}

/* a forwarded packet's whole path: prerouting, forward, postrouting */
static inline enum flt_verdict t_forward(struct tfix *x, uint8_t *buf, uint32_t *len, uint16_t iif, uint16_t oif,
                                         uint64_t now, uint8_t *ctstate)
{
    struct flt_pkt p = { .data = buf, .len = *len, .cap = 2048, .iif = iif, .oif = oif };
    enum flt_verdict v = flt_process(x->f, &p, FLT_PRE, now);
    if (v == FLT_ACCEPT)
        v = flt_process(x->f, &p, FLT_FWD, now);
    if (v == FLT_ACCEPT)
        v = flt_process(x->f, &p, FLT_POST, now);
    *len = p.len;
    if (ctstate)
        *ctstate = p.ctstate;
    return v;
}

#endif
