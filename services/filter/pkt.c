/* SPDX-License-Identifier: MIT */
/*
 * services/filter/pkt.c: the per-packet path. Parse the frame (bounded by
 * its length at every step), track it once at the first hook it meets,
 * apply the connection's NAT at each hook, run the hook's chain, and
 * confirm a new connection when its first packet leaves (postrouting) or is
 * delivered (input), as Linux confirms at the last hook.
 */
#include "services/filter/flt_int.h"

#include <stdlib.h>
#include <string.h>

struct flt {
    struct ct_table ct;
    struct flt_port ports[FLT_MAX_PORTS];
    unsigned nports;
    struct flt_rules *rules;
    struct flt_stats st;
};

/* p->ct: ref in the low bits, then what the first hook found */
#define CT_REF_MASK 0x0fffffffu
#define CT_UNTRACKED (1u << 28)
#define CT_INVALID (1u << 29)
#define CT_RELATED (1u << 30)
#define CT_REPLY (1u << 31)

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static void map4(uint8_t out[16], const uint8_t *a)
{
    memset(out, 0, 10);
    out[10] = out[11] = 0xff;
    memcpy(out + 12, a, 4);
}

static bool icmp_is_err(int fam, uint8_t type)
{
    if (fam == 4)
        return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
    return type >= 1 && type <= 4;
}

static bool icmp_is_echo(int fam, uint8_t type, bool *req)
{
    uint8_t rq = fam == 4 ? 8 : 128, rp = fam == 4 ? 0 : 129;
    *req = type == rq;
    return type == rq || type == rp;
}

/* IP header at off (bounded by end): family, proto, L4 offset, tuple
 * addresses; ports when the L4 header has them. -1 when malformed. */
static int parse_ip(const uint8_t *d, uint32_t off, uint32_t end, bool inner, struct flt_tuple *t, uint32_t *l4,
                    uint32_t *ipend, bool *frag)
{
    memset(t, 0, sizeof *t);
    *frag = false;
    if (off + 1 > end)
        return -1;
    int ver = d[off] >> 4;
    if (ver == 4) {
        if (off + 20 > end)
            return -1;
        uint32_t ihl = (d[off] & 15u) * 4, tot = rd16(d + off + 2);
        if (ihl < 20 || tot < ihl || off + ihl > end)
            return -1;
        if (!inner && off + tot > end)
            return -1;
        *ipend = off + tot < end ? off + tot : end;
        *frag = (rd16(d + off + 6) & 0x3fff) != 0;
        t->family = 4;
        t->proto = d[off + 9];
        map4(t->src, d + off + 12);
        map4(t->dst, d + off + 16);
        *l4 = off + ihl;
        return 0;
    }
    if (ver != 6 || off + 40 > end)
        return -1;
    uint32_t plen = rd16(d + off + 4);
    if (!inner && off + 40 + plen > end)
        return -1;
    *ipend = off + 40 + plen < end ? off + 40 + plen : end;
    t->family = 6;
    memcpy(t->src, d + off + 8, 16);
    memcpy(t->dst, d + off + 24, 16);
    uint8_t nh = d[off + 6];
    uint32_t p = off + 40;
    for (int k = 0; k < 8; k++) {
        if (nh == 0 || nh == 43 || nh == 60) {
            if (p + 8 > *ipend)
                return -1;
            nh = d[p];
            p += (d[p + 1] + 1u) * 8;
        } else if (nh == 44) {
            *frag = true;
            if (p + 8 > *ipend)
                return -1;
            nh = d[p];
            p += 8;
        } else {
            break;
        }
    }
    if (p > *ipend)
        return -1;
    t->proto = nh;
    *l4 = p;
    return 0;
}

static void l4_ports(const uint8_t *d, uint32_t l4, uint32_t end, struct flt_tuple *t)
{
    if ((t->proto == 6 || t->proto == 17) && l4 + 4 <= end) {
        t->sport = rd16(d + l4);
        t->dport = rd16(d + l4 + 2);
    } else if ((t->proto == 1 || t->proto == 58) && l4 + 8 <= end) {
        bool req;
        if (icmp_is_echo(t->family, d[l4], &req))
            t->sport = t->dport = rd16(d + l4 + 4);
    }
}

int flt_parse(const uint8_t *d, uint32_t len, struct flt_parsed *pp)
{
    memset(pp, 0, sizeof *pp);
    if (len < 14)
        return -1;
    uint32_t off = 14;
    uint16_t et = rd16(d + 12);
    if (et == 0x8100 && len >= 18) {
        et = rd16(d + 16);
        off = 18;
    }
    if (et != 0x0800 && et != 0x86dd)
        return 0;
    pp->l3 = off;
    if (parse_ip(d, off, len, false, &pp->t, &pp->l4, &pp->end, &pp->frag) < 0 ||
        (et == 0x0800) != (pp->t.family == 4))
        return -1;
    pp->family = pp->t.family;
    pp->proto = pp->t.proto;
    if (pp->frag)
        return 0; /* no L4 header to trust, and no reassembly here */
    uint32_t l4 = pp->l4, end = pp->end;
    switch (pp->proto) {
    case 6:
        if (l4 + 20 > end || (d[l4 + 12] >> 4) * 4u < 20 || l4 + (d[l4 + 12] >> 4) * 4u > end)
            return -1;
        pp->tcpflags = d[l4 + 13];
        break;
    case 17:
        if (l4 + 8 > end)
            return -1;
        break;
    case 1:
    case 58:
        if ((pp->proto == 1) != (pp->family == 4) || l4 + 8 > end)
            return -1;
        pp->icmp_type = d[l4];
        pp->icmp_code = d[l4 + 1];
        if (icmp_is_err(pp->family, pp->icmp_type)) {
            bool ifrag;
            if (parse_ip(d, l4 + 8, end, true, &pp->in, &pp->in_l4, &pp->in_end, &ifrag) < 0 ||
                pp->in.family != pp->family)
                return -1;
            pp->in_l3 = l4 + 8;
            pp->icmp_err = true;
            if (!ifrag)
                l4_ports(d, pp->in_l4, pp->in_end, &pp->in);
        }
        break;
    default:
        break;
    }
    l4_ports(d, l4, end, &pp->t);
    return 0;
}

struct flt *flt_new(void *ct_region, const struct flt_port *ports, unsigned nports, struct flt_rules *rules)
{
    if (nports > FLT_MAX_PORTS || (nports && !ports))
        return NULL;
    struct flt *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    if (ct_bind(&f->ct, ct_region) < 0) {
        free(f);
        return NULL;
    }
    if (nports)
        memcpy(f->ports, ports, nports * sizeof *ports);
    f->nports = nports;
    f->rules = rules;
    return f;
}

void flt_free(struct flt *f) { free(f); }
void flt_set_rules(struct flt *f, struct flt_rules *rules) { f->rules = rules; }
const struct flt_stats *flt_get_stats(const struct flt *f) { return &f->st; }

unsigned flt_ct_sweep(struct flt *f, uint64_t now_ms, unsigned budget)
{
    unsigned n = ct_sweep(&f->ct, now_ms, budget);
    f->st.ct_expired += n;
    return n;
}

uint32_t flt_ct_lookup(struct flt *f, const struct flt_tuple *t, uint64_t now_ms)
{
    int dir;
    return ct_find(&f->ct, t, now_ms, &dir);
}

int flt_ct_get(const struct flt *f, uint32_t ref, struct flt_ct_info *out)
{
    struct ct_entry *e = ct_get((struct ct_table *)&f->ct, ref & CT_REF_MASK);
    if (!e)
        return -2;
    out->orig = e->t[0];
    out->reply = e->t[1];
    out->tcp_state = e->tcp_state;
    out->assured = !!(e->flags & CTF_ASSURED);
    out->confirmed = !!(e->flags & CTF_CONFIRMED);
    out->seen_reply = !!(e->flags & CTF_SEEN_REPLY);
    out->expires_ms = e->expires_ms;
    return 0;
}

static uint32_t tcp_paylen(const uint8_t *d, const struct flt_parsed *pp)
{
    return pp->end - pp->l4 - (d[pp->l4 + 12] >> 4) * 4u;
}

/* An ICMP error the router made between the two halves of a connection's
 * NAT (after prerouting, before postrouting: TTL exceeded, fragmentation
 * needed) quotes the packet as it was then: for a source-NATed flow, its
 * original tuple itself, which the inverse lookup cannot find. Linux
 * attaches the quoted packet's connection to such an error (nf_ct_attach);
 * here, for a packet whose first hook is postrouting (the router's own),
 * the quote is looked up as it stands, and the error, going the other way,
 * is related in the opposite direction. Another error stays invalid, as
 * Linux's conntrack finds only the inverse of what a host quotes. */
static uint32_t track_own_error(struct flt *f, const struct flt_parsed *pp, uint64_t now)
{
    int dir = 0;
    uint32_t ref = pp->icmp_err && !pp->frag ? ct_find(&f->ct, &pp->in, now, &dir) : 0;
    return ref ? ref | CT_RELATED | (dir ? 0 : CT_REPLY) : CT_INVALID;
}

/* Track a packet at its first hook: the p->ct word for it. */
static uint32_t track(struct flt *f, const uint8_t *d, const struct flt_parsed *pp, uint64_t now, uint32_t bytes)
{
    int dir = 0;
    if (pp->frag) {
        f->st.reason[FLT_R_FRAGMENT]++;
        return CT_INVALID;
    }
    if (pp->icmp_err) {
        struct flt_tuple q;
        flt_tuple_invert(&q, &pp->in);
        uint32_t ref = ct_find(&f->ct, &q, now, &dir);
        return ref ? ref | CT_RELATED | (dir ? CT_REPLY : 0) : CT_INVALID;
    }
    bool is_icmp = pp->proto == 1 || pp->proto == 58, req = false;
    if (is_icmp && !icmp_is_echo(pp->family, pp->icmp_type, &req))
        return CT_UNTRACKED; /* neighbour discovery, router adverts... */
    uint32_t ref = ct_find(&f->ct, &pp->t, now, &dir);
    struct ct_entry *e = ref ? ct_get(&f->ct, ref) : NULL;
    if (e && pp->proto == 6) {
        bool reopen;
        uint32_t tl = (d[pp->l4 + 12] >> 4) * 4u;
        int r = ct_tcp_track(e, dir, d + pp->l4, tl, tcp_paylen(d, pp), now, &reopen);
        if (reopen) {
            ct_delete(&f->ct, ref);
            e = NULL;
            ref = 0;
        } else if (r) {
            f->st.reason[r]++;
            return CT_INVALID;
        }
    }
    if (!e) {
        if (is_icmp && !req)
            return CT_INVALID; /* an echo reply nobody asked for */
        ref = ct_create(&f->ct, &pp->t, now, &f->st);
        if (!ref) {
            f->st.reason[f->ct.corrupt ? FLT_R_CORRUPT : FLT_R_TABLE_FULL]++;
            return CT_INVALID;
        }
        e = ct_get(&f->ct, ref);
        if (pp->proto == 6) {
            uint32_t tl = (d[pp->l4 + 12] >> 4) * 4u;
            int r = ct_tcp_new(e, d + pp->l4, tl, tcp_paylen(d, pp));
            if (r) {
                ct_delete(&f->ct, ref);
                f->st.reason[r]++;
                return CT_INVALID;
            }
        }
        dir = 0;
    }
    if (dir == 1) {
        if ((e->flags & CTF_SEEN_REPLY) && pp->proto == 17)
            e->flags |= CTF_ASSURED;
        e->flags |= CTF_SEEN_REPLY;
    } else if ((e->flags & CTF_SEEN_REPLY) && pp->proto == 17) {
        e->flags |= CTF_ASSURED;
    }
    e->pkts[dir]++;
    e->bytes[dir] += bytes;
    if (e->flags & CTF_CONFIRMED)
        e->expires_ms = now + ct_timeout(e);
    return ref | (dir ? CT_REPLY : 0);
}

static uint8_t ct_state_of(struct flt *f, uint32_t w)
{
    if (w & CT_UNTRACKED)
        return FLT_CT_UNTRACKED;
    if (w & CT_INVALID)
        return FLT_CT_INV;
    if (w & CT_RELATED)
        return FLT_CT_REL;
    struct ct_entry *e = ct_get(&f->ct, w & CT_REF_MASK);
    if (!e)
        return FLT_CT_INV;
    return ((w & CT_REPLY) || (e->flags & CTF_SEEN_REPLY)) ? FLT_CT_EST : FLT_CT_NEW;
}

/* NAT that an existing mapping asks for at this hook: destination before
 * routing (prerouting), source after it (postrouting, input). */
static void apply_nat(struct flt *f, uint8_t *d, const struct flt_parsed *pp, uint32_t w, enum flt_hook h)
{
    struct ct_entry *e = ct_get(&f->ct, w & CT_REF_MASK);
    if (!e || !(e->flags & (CTF_SNAT | CTF_DNAT)))
        return;
    int dir = !!(w & CT_REPLY);
    if (w & CT_RELATED) {
        if (h == FLT_PRE)
            nat_icmp_error(d, pp, e, dir, false);
        else if (h == FLT_POST || h == FLT_INPUT)
            nat_icmp_error(d, pp, e, dir, true);
        return;
    }
    struct flt_tuple target;
    flt_tuple_invert(&target, &e->t[!dir]);
    if (h == FLT_PRE)
        nat_rewrite(d, pp, &target, false, true);
    else if (h == FLT_POST || h == FLT_INPUT)
        nat_rewrite(d, pp, &target, true, false);
}

static int do_nat_rule(struct flt *f, uint8_t *d, const struct flt_parsed *pp, uint32_t w, const struct rule *r,
                       const struct flt_pkt *p, uint64_t now)
{
    uint32_t ref = w & CT_REF_MASK;
    struct ct_entry *e = ct_get(&f->ct, ref);
    if (!e)
        return 0;
    struct flt_tuple reply = e->t[1];
    if (r->act == A_DNAT) {
        memcpy(reply.src, r->nat_addr, 16);
        if (r->nat_has_port && (pp->proto == 6 || pp->proto == 17))
            reply.sport = r->nat_port_lo;
        ct_rehash_reply(&f->ct, ref, &reply);
        e->flags |= CTF_DNAT;
        struct flt_tuple target;
        flt_tuple_invert(&target, &e->t[1]);
        nat_rewrite(d, pp, &target, false, true);
        return 0;
    }
    uint8_t addr[16];
    uint16_t lo = r->nat_port_lo, hi = r->nat_port_hi;
    if (r->act == A_MASQ) {
        const struct flt_port *o = p->oif < f->nports ? &f->ports[p->oif] : NULL;
        if (!o || (pp->family == 4 && !o->has_v4) || (pp->family == 6 && !o->has_v6))
            return -1;
        if (pp->family == 4)
            map4(addr, o->v4);
        else
            memcpy(addr, o->v6, 16);
        lo = 0;
        hi = 0;
    } else {
        memcpy(addr, r->nat_addr, 16);
        if (!r->nat_has_port)
            lo = hi = 0;
    }
    if ((addr[10] == 0xff && addr[11] == 0xff && !memcmp(addr, "\0\0\0\0\0\0\0\0\0\0", 10)) != (pp->family == 4))
        return -1;
    if (nat_snat(&f->ct, e, addr, lo, hi, now) < 0)
        return -1;
    e->flags |= CTF_SNAT;
    struct flt_tuple target;
    flt_tuple_invert(&target, &e->t[1]);
    nat_rewrite(d, pp, &target, true, false);
    return 0;
}

/* One hook over a packet parsed as @pp_in (NULL: malformed). *@nat_rule:
 * whether a NAT rule rewrote the frame (its parse no longer holds). */
static enum flt_verdict process_parsed(struct flt *f, struct flt_pkt *p, enum flt_hook hook, uint64_t now,
                                       const struct flt_parsed *pp_in, bool *nat_rule)
{
    const struct flt_parsed *pp = pp_in;
    p->reason = FLT_R_NONE;
    *nat_rule = false;
    if (!pp) {
        p->verdict = FLT_DROP;
        p->reason = FLT_R_MALFORMED;
        goto out;
    }
    if (pp->family == 0) {
        p->ctstate = FLT_CT_UNTRACKED;
        p->verdict = FLT_ACCEPT;
        goto out;
    }
    if (p->ct == 0) {
        p->ct = track(f, p->data, pp, now, p->len);
        if (p->ct == CT_INVALID && hook == FLT_POST)
            p->ct = track_own_error(f, pp, now);
        struct ct_entry *te = ct_get(&f->ct, p->ct & CT_REF_MASK);
        p->ctgen = te ? te->gen : 0;
    } else if (!(p->ct & (CT_INVALID | CT_UNTRACKED))) {
        /* between two hooks the entry may have expired or been dropped
         * to make room, and been reused by another connection */
        struct ct_entry *te = ct_get(&f->ct, p->ct & CT_REF_MASK);
        if (!te || te->gen != p->ctgen)
            p->ct = CT_INVALID;
    }
    p->ctstate = ct_state_of(f, p->ct);
    if (f->ct.corrupt) {
        p->verdict = FLT_DROP;
        p->reason = FLT_R_CORRUPT;
        goto out;
    }
    uint32_t ref = p->ct & CT_REF_MASK;
    struct ct_entry *e = (p->ct & (CT_INVALID | CT_UNTRACKED)) ? NULL : ct_get(&f->ct, ref);
    bool fresh = e && !(e->flags & CTF_CONFIRMED) && !(p->ct & (CT_RELATED | CT_REPLY));
    if (!fresh && e)
        apply_nat(f, p->data, pp, p->ct, hook);

    int ri = -1;
    uint8_t act = A_ACCEPT;
    if (f->rules) {
        struct eval_in in = { .pp = pp, .iif = p->iif, .oif = p->oif, .ctstate = p->ctstate,
                              .nat_ok = fresh, .bytes = p->len, .now = now, .mark = &p->mark };
        ri = flt_eval(f->rules, hook, &in);
        act = ri >= 0 ? f->rules->c[hook].r[ri].act : f->rules->c[hook].policy;
    }
    switch (act) {
    case A_SNAT:
    case A_DNAT:
    case A_MASQ:
        *nat_rule = true;
        if (do_nat_rule(f, p->data, pp, p->ct, &f->rules->c[hook].r[ri], p, now) < 0) {
            p->verdict = FLT_DROP;
            p->reason = FLT_R_NAT_PORTS;
        } else {
            p->verdict = FLT_ACCEPT;
        }
        break;
    case A_DROP:
        p->verdict = FLT_DROP;
        p->reason = FLT_R_RULE;
        break;
    case A_REJECT:
    case A_REJECT_RST: {
        const struct flt_port *ip = p->iif < f->nports ? &f->ports[p->iif] : NULL;
        if (flt_build_reject(p, pp, act == A_REJECT_RST, ip) == 0) {
            p->verdict = FLT_REJECT;
        } else {
            p->verdict = FLT_DROP;
            p->reason = FLT_R_RULE;
        }
        break;
    }
    default:
        p->verdict = FLT_ACCEPT;
        break;
    }
    if (fresh && p->verdict != FLT_ACCEPT) {
        ct_delete(&f->ct, ref); /* never confirmed: leaves no trace */
        p->ct = CT_INVALID;
    } else if (fresh && (hook == FLT_POST || hook == FLT_INPUT)) {
        e->flags |= CTF_CONFIRMED;
        e->expires_ms = now + ct_timeout(e);
    }
out:
    f->st.verdict[p->verdict]++;
    f->st.reason[p->reason]++;
    return (enum flt_verdict)p->verdict;
}

enum flt_verdict flt_process(struct flt *f, struct flt_pkt *p, enum flt_hook hook, uint64_t now)
{
    struct flt_parsed pp;
    bool bad = (unsigned)hook >= FLT_NHOOKS || !p->data || flt_parse(p->data, p->len, &pp) < 0, nat_rule;
    return process_parsed(f, p, hook, now, bad ? NULL : &pp, &nat_rule);
}

enum flt_verdict flt_process_out(struct flt *f, struct flt_pkt *p, uint64_t now)
{
    struct flt_parsed pp;
    bool bad = !p->data || flt_parse(p->data, p->len, &pp) < 0, nat_rule;
    enum flt_verdict v = process_parsed(f, p, FLT_FWD, now, bad ? NULL : &pp, &nat_rule);
    if (v != FLT_ACCEPT)
        return v;
    /* Forward rewrites the frame only by a NAT rule's action: otherwise the
     * parse still describes it, and postrouting need not parse it again. */
    if (nat_rule)
        return flt_process(f, p, FLT_POST, now);
    return process_parsed(f, p, FLT_POST, now, &pp, &nat_rule);
}

/* Packets of a burst in chunks: all parsed, their buckets prefetched, then
 * the entries at those buckets' heads (or the entries their ct words
 * name), then each processed in order, as flt_process would. A lookup of a
 * table larger than the caches so waits for one miss a chunk, not two a
 * packet. */
#define CHUNK 16u

unsigned flt_process_many(struct flt *f, struct flt_pkt *p, unsigned n, enum flt_hook hook, uint64_t now,
                          bool (*input)(void *ctx, const struct flt_pkt *p), void *ctx)
{
    unsigned acc = 0;
    if ((unsigned)hook >= FLT_NHOOKS) {
        for (unsigned i = 0; i < n; i++)
            acc += flt_process(f, &p[i], hook, now) == FLT_ACCEPT;
        return acc;
    }
    struct flt_parsed pp[CHUNK];
    uint32_t bucket[CHUNK];
    bool ok[CHUNK], hashed[CHUNK];
    for (unsigned at = 0; at < n; at += CHUNK) {
        unsigned k = n - at < CHUNK ? n - at : CHUNK;
        for (unsigned i = 0; i < k; i++) {
            const struct flt_pkt *q = &p[at + i];
            ok[i] = q->data && flt_parse(q->data, q->len, &pp[i]) == 0;
            hashed[i] = false;
            if (!ok[i] || pp[i].family == 0)
                continue;
            if (q->ct) {
                if (!(q->ct & (CT_INVALID | CT_UNTRACKED)))
                    ct_prefetch_ref(&f->ct, q->ct & CT_REF_MASK);
                continue;
            }
            bool req, icmp = pp[i].proto == 1 || pp[i].proto == 58;
            if (pp[i].frag || pp[i].icmp_err || (icmp && !icmp_is_echo(pp[i].family, pp[i].icmp_type, &req)))
                continue;
            bucket[i] = ct_bucket(&f->ct, &pp[i].t);
            hashed[i] = true;
            ct_prefetch_bucket(&f->ct, bucket[i]);
        }
        for (unsigned i = 0; i < k; i++)
            if (hashed[i])
                ct_prefetch_chain(&f->ct, bucket[i]);
        for (unsigned i = 0; i < k; i++) {
            bool nat_rule;
            struct flt_pkt *q = &p[at + i];
            enum flt_verdict v = process_parsed(f, q, hook, now, ok[i] ? &pp[i] : NULL, &nat_rule);
            if (v == FLT_ACCEPT && input && input(ctx, q))
                v = flt_process(f, q, FLT_INPUT, now);
            acc += v == FLT_ACCEPT;
        }
    }
    return acc;
}

void flt_prefetch_ct(struct flt *f, uint32_t ct)
{
    if (!(ct & (CT_INVALID | CT_UNTRACKED)))
        ct_prefetch_ref(&f->ct, ct & CT_REF_MASK);
}

unsigned flt_process_burst(struct flt *f, struct flt_pkt *p, unsigned n, enum flt_hook hook, uint64_t now)
{
    unsigned acc = flt_process_many(f, p, n, hook, now, NULL, NULL);
    flt_ct_sweep(f, now, 2 * n + 8);
    return acc;
}
