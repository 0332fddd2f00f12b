/* SPDX-License-Identifier: MIT */
/*
 * services/shaper/shp.c: token buckets, HTB-like classes, DRR over flow
 * queues with CoDel, overflow from the fattest flow. See shp.h.
 */
#include "services/shaper/shp.h"

#include "ipc/capture.h"
#include "ipc/pkt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define NS 1000000000ll
#define BYTE_COST (8ll * NS) /* one byte in bit-nanoseconds */
#define SHP_FRAME_1500 (PKT_ETH_HLEN + 1500u) /* the largest frame of a 1500-byte MTU: CoDel's first guess */

/* ---- token buckets ---- */

static void bucket_init(struct shp_bucket *b, uint64_t rate, uint64_t burst_bytes, uint64_t now)
{
    b->rate = rate;
    b->cap = (int64_t)burst_bytes * BYTE_COST;
    b->tok = b->cap;
    b->t = now;
}

static void bucket_fill(struct shp_bucket *b, uint64_t now)
{
    if (now <= b->t)
        return;
    uint64_t dt = now - b->t;
    b->t = now;
    if (b->rate == 0) {
        b->tok = b->cap;
        return;
    }
    __int128 t = (__int128)b->tok + (__int128)dt * b->rate;
    b->tok = t > b->cap ? b->cap : (int64_t)t;
}

static void bucket_charge(struct shp_bucket *b, uint64_t wire)
{
    if (b->rate)
        b->tok -= (int64_t)wire * BYTE_COST;
}

/* When the bucket is back to >= 0 tokens (after a fill at b->t). */
static uint64_t bucket_ready(const struct shp_bucket *b)
{
    if (b->tok >= 0 || b->rate == 0)
        return b->t;
    uint64_t need = (uint64_t)-b->tok;
    return b->t + (need + b->rate - 1) / b->rate;
}

/* ---- parsing, classification, ECN ---- */

void shp_parse(const uint8_t *d, uint32_t len, struct shp_pkt *pk)
{
    memset(pk, 0, sizeof(*pk));
    uint32_t off = PKT_ETH_HLEN;
    if (len < off)
        return;
    uint16_t et = pkt_eth_type(d);
    if (et == PKT_ETH_P_VLAN || et == PKT_ETH_P_QINQ) {
        if (len < off + PKT_VLAN_HLEN)
            return;
        et = pkt_get16(d + off + PKT_VLAN_HLEN - 2); /* the tag's inner ethertype */
        off += PKT_VLAN_HLEN;
    }
    if (et == PKT_ETH_P_IPV6 && len >= off + PKT_IP6_HLEN && (d[off] >> 4) == 6) {
        /* IPv6: traffic class, and the upper layer when it follows the
         * fixed header (an extension header is taken as the protocol: no
         * ports then). Addresses fold into src and dst for the flow hash,
         * and are kept whole for classes with IPv6 prefixes. */
        const uint8_t *ip6 = d + off;
        pk->ipv6 = true;
        pk->l3off = off;
        pk->dscp = (uint8_t)((pkt_get32(ip6) >> 22) & 0x3f);
        pk->proto = ip6[PKT_IP6_NXT];
        memcpy(pk->src6, ip6 + PKT_IP6_SRC, 16);
        memcpy(pk->dst6, ip6 + PKT_IP6_DST, 16);
        for (unsigned k = 0; k < 16; k += 4) {
            pk->src = (pk->src ^ pkt_get32(ip6 + PKT_IP6_SRC + k)) * 0x9e3779b1u;
            pk->dst = (pk->dst ^ pkt_get32(ip6 + PKT_IP6_DST + k)) * 0x9e3779b1u;
        }
        uint32_t l4off = off + PKT_IP6_HLEN;
        if ((pk->proto == PKT_IP_PROTO_TCP || pk->proto == PKT_IP_PROTO_UDP) && len >= l4off + PKT_L4_DPORT + 2) {
            pk->sport = pkt_get16(d + l4off + PKT_L4_SPORT);
            pk->dport = pkt_get16(d + l4off + PKT_L4_DPORT);
            if (pk->proto == PKT_IP_PROTO_UDP)
                pk->hdr_end = l4off + PKT_UDP_HLEN;
            else if (len > l4off + PKT_TCP_DOFF)
                pk->hdr_end = l4off + pkt_tcp_hlen(d + l4off);
        }
        return;
    }
    if (et != PKT_ETH_P_IP || len < off + PKT_IP_HLEN)
        return;
    const uint8_t *ip = d + off;
    uint32_t ihl = pkt_ip_hlen(ip);
    if (pkt_ip_version(ip) != 4 || ihl < PKT_IP_HLEN || len < off + ihl)
        return;
    pk->ipv4 = true;
    pk->l3off = off;
    pk->dscp = pkt_ip_dscp(ip);
    pk->proto = ip[PKT_IP_PROTO];
    pk->src = pkt_get32(ip + PKT_IP_SRC);
    pk->dst = pkt_get32(ip + PKT_IP_DST);
    if (pkt_ip_is_later_fragment(ip))
        return; /* no L4 header */
    const uint8_t *l4 = ip + ihl;
    uint32_t l4off = off + ihl;
    if (pkt_ip_has_ports(ip) && len >= l4off + PKT_L4_DPORT + 2) {
        pk->sport = pkt_get16(l4 + PKT_L4_SPORT);
        pk->dport = pkt_get16(l4 + PKT_L4_DPORT);
        if (pk->proto == PKT_IP_PROTO_UDP)
            pk->hdr_end = l4off + PKT_UDP_HLEN;
        else if (len > l4off + PKT_TCP_DOFF)
            pk->hdr_end = l4off + pkt_tcp_hlen(l4);
    }
}

static bool prefix_has(uint32_t net, uint8_t plen, uint32_t a)
{
    if (plen == 0)
        return true;
    uint32_t mask = plen >= 32 ? UINT32_MAX : ~(UINT32_MAX >> plen);
    return (a & mask) == net;
}

/* Is @a (16 bytes, network order) in @net/@plen (no host bits)? */
static bool prefix6_has(const uint8_t *net, uint8_t plen, const uint8_t *a)
{
    unsigned whole = plen / 8u, rest = plen % 8u; /* plen <= 128: shp_init */
    if (memcmp(net, a, whole) != 0)
        return false;
    return rest == 0 || ((a[whole] ^ net[whole]) & (uint8_t)(0xff00u >> rest)) == 0;
}

static bool match_fits(const struct shp_match *m, const struct shp_pkt *pk)
{
    /* A class with prefixes takes their family only; one without takes both. */
    if (m->fields & SHP_MATCH_V4 ? !pk->ipv4 : m->fields & SHP_MATCH_V6 ? !pk->ipv6 : !pk->ipv4 && !pk->ipv6)
        return false;
    if ((m->fields & SHP_MATCH_DSCP) && pk->dscp != m->dscp)
        return false;
    if ((m->fields & SHP_MATCH_MARK) && pk->mark != m->mark)
        return false;
    if ((m->fields & SHP_MATCH_PROTO) && pk->proto != m->proto)
        return false;
    bool l4 = pk->proto == PKT_IP_PROTO_TCP || pk->proto == PKT_IP_PROTO_UDP;
    if ((m->fields & SHP_MATCH_SPORT) && (!l4 || pk->sport < m->sport_lo || pk->sport > m->sport_hi))
        return false;
    if ((m->fields & SHP_MATCH_DPORT) && (!l4 || pk->dport < m->dport_lo || pk->dport > m->dport_hi))
        return false;
    if ((m->fields & SHP_MATCH_SRC) && !prefix_has(m->src, m->src_len, pk->src))
        return false;
    if ((m->fields & SHP_MATCH_DST) && !prefix_has(m->dst, m->dst_len, pk->dst))
        return false;
    if ((m->fields & SHP_MATCH_SRC6) && !prefix6_has(m->src6, m->src_len, pk->src6))
        return false;
    if ((m->fields & SHP_MATCH_DST6) && !prefix6_has(m->dst6, m->dst_len, pk->dst6))
        return false;
    return true;
}

uint32_t shp_classify(const struct shp *s, const struct shp_pkt *pk)
{
    for (uint32_t c = 0; c < s->nclasses; c++)
        if (c != s->default_class && s->cls[c].match.fields && match_fits(&s->cls[c].match, pk))
            return c;
    return s->default_class;
}

bool shp_ecn_mark(uint8_t *ip)
{
    uint8_t ecn = ip[PKT_IP_TOS] & PKT_IP_ECN_MASK;
    if (ecn == 0)
        return false; /* Not-ECT */
    if (ecn == PKT_IP_ECN_CE)
        return true;
    /* The TOS byte shares a 16-bit word with the version and IHL. */
    uint16_t old = pkt_get16(ip + PKT_IP_VIHL);
    ip[PKT_IP_TOS] |= PKT_IP_ECN_CE;
    uint16_t hc = pkt_get16(ip + PKT_IP_CSUM);
    pkt_put16(ip + PKT_IP_CSUM, pkt_csum_update16(hc, old, pkt_get16(ip + PKT_IP_VIHL)));
    return true;
}

/* IPv6's ECN bits are the traffic class's low two, bits 20-21 of the
 * first word; no header checksum to mend. */
bool shp_ecn_mark6(uint8_t *ip6)
{
    uint32_t w = pkt_get32(ip6);
    uint32_t ecn = (w >> 20) & 3u;
    if (ecn == 0)
        return false; /* Not-ECT */
    pkt_put32(ip6, w | (3u << 20));
    return true;
}

uint64_t shp_wire_bytes(const struct shp *s, const struct ipc_meta *m, const struct shp_pkt *pk)
{
    uint64_t len = pkt_total_len(m);
    if (m->vnet.gso_type != 0 && m->vnet.gso_size != 0) {
        uint64_t hdr = pk->hdr_end ? pk->hdr_end : m->vnet.hdr_len;
        if (hdr && hdr < len) {
            uint64_t pay = len - hdr;
            uint64_t nseg = (pay + m->vnet.gso_size - 1) / m->vnet.gso_size;
            return pay + nseg * (hdr + s->overhead);
        }
    }
    return len + s->overhead;
}

static uint32_t flow_hash(const struct shp_pkt *pk)
{
    uint64_t h = (uint64_t)pk->src * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)pk->dst * 0xc2b2ae3d27d4eb4full;
    h ^= ((uint64_t)pk->sport << 24 | (uint64_t)pk->dport << 8 | pk->proto) * 0x165667b19e3779f9ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (uint32_t)h;
}

uint32_t shp_flow_of(const struct shp_pkt *pk, uint32_t cls)
{
    return cls * SHP_FLOWS + (pk->ipv4 || pk->ipv6 ? flow_hash(pk) % SHP_FLOWS : 0);
}

/* ---- set-up ---- */

void shp_cfg_default(struct shp_cfg *cfg, uint64_t rate, uint32_t burst)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->rate = rate;
    cfg->burst = burst;
    cfg->overhead = 24;
    cfg->ecn = 1;
    cfg->nclasses = 1;
    cfg->default_class = 0;
    snprintf(cfg->classes[0].name, SHP_NAME_MAX, "default");
    cfg->classes[0].rate = rate;
    cfg->classes[0].ceil = rate;
    cfg->classes[0].prio = 4;
}

static void flow_reset(struct shp_flow *f, uint8_t cls)
{
    memset(f, 0, sizeof(*f));
    f->head = f->tail = SHP_NONE;
    f->next = SHP_NONE;
    f->cls = cls;
}

int shp_init(struct shp *s, struct ipc_pool *pool, const struct shp_cfg *cfg, uint64_t now, struct ipc_err *err)
{
    if (cfg->nclasses == 0 || cfg->nclasses > SHP_MAX_CLASSES || cfg->default_class >= cfg->nclasses)
        return ipc_errf(err, -EINVAL, "shaper config: %u classes, default %u", cfg->nclasses, cfg->default_class);
    if (cfg->burst == 0)
        return ipc_errf(err, -EINVAL, "shaper config: burst 0");
    for (uint32_t c = 0; c < cfg->nclasses; c++) {
        const struct shp_match *m = &cfg->classes[c].match;
        unsigned max = m->fields & SHP_MATCH_V6 ? 128 : 32;
        if (((m->fields & SHP_MATCH_V4) && (m->fields & SHP_MATCH_V6)) || m->src_len > max || m->dst_len > max)
            return ipc_errf(err, -EINVAL, "shaper config: class %u: prefixes of both families, or longer than %u",
                            c, max);
    }
    memset(s, 0, sizeof(*s));
    s->pool = pool;
    s->nclasses = cfg->nclasses;
    s->default_class = cfg->default_class;
    s->overhead = cfg->overhead;
    s->quantum = cfg->quantum ? cfg->quantum : SHP_DEF_QUANTUM;
    s->limit_pkts = cfg->limit_pkts ? cfg->limit_pkts : SHP_DEF_LIMIT_PKTS;
    s->limit_bytes = cfg->limit_bytes ? cfg->limit_bytes : SHP_DEF_LIMIT_BYTES;
    s->target_ns = (uint64_t)(cfg->target_us ? cfg->target_us : SHP_DEF_TARGET_US) * 1000u;
    s->interval_ns = (uint64_t)(cfg->interval_us ? cfg->interval_us : SHP_DEF_INTERVAL_US) * 1000u;
    s->ecn = cfg->ecn != 0;
    s->maxpacket = SHP_FRAME_1500;
    bucket_init(&s->port, cfg->rate, cfg->burst, now);
    for (uint32_t c = 0; c < s->nclasses; c++) {
        const struct shp_cfg_class *cc = &cfg->classes[c];
        struct shp_class *k = &s->cls[c];
        memcpy(k->name, cc->name, SHP_NAME_MAX);
        k->name[SHP_NAME_MAX - 1] = 0;
        k->match = cc->match;
        k->prio = cc->prio;
        uint64_t ceil = cc->ceil ? cc->ceil : cfg->rate;
        uint64_t rate = cc->rate ? cc->rate : ceil;
        bucket_init(&k->rate, rate, cfg->burst, now);
        bucket_init(&k->ceil, ceil, cfg->burst, now);
        k->act_head = k->act_tail = SHP_NONE;
        k->new_head = k->new_tail = SHP_NONE;
        k->c[SHP_C_RATE] = rate;
        k->c[SHP_C_CEIL] = ceil;
        k->win_start = now;
    }
    for (uint32_t i = 0; i < SHP_NFLOWS; i++)
        flow_reset(&s->flow[i], (uint8_t)(i / SHP_FLOWS));
    return 0;
}

int shp_set_rate(struct shp *s, int cls, uint64_t rate, uint64_t ceil, uint64_t now)
{
    if (cls < 0) {
        if (!rate)
            return -EINVAL;
        bucket_fill(&s->port, now);
        uint64_t old = s->port.rate;
        s->port.rate = rate;
        /* Ceils (and rates) that were the port's rate follow it, so that a
         * port with one class, or classes left at the default ceil, can use
         * the new rate whole; rates above the new port rate come down to it. */
        for (uint32_t c = 0; c < s->nclasses; c++) {
            struct shp_class *k = &s->cls[c];
            uint64_t r = k->rate.rate, ce = k->ceil.rate;
            if (ce == old || ce > rate)
                ce = rate;
            if (r == old || r > rate)
                r = rate;
            shp_set_rate(s, (int)c, r, ce, now);
        }
        return 0;
    }
    if ((uint32_t)cls >= s->nclasses)
        return -EINVAL;
    struct shp_class *k = &s->cls[cls];
    uint64_t r = rate ? rate : k->rate.rate;
    uint64_t c = ceil ? ceil : k->ceil.rate;
    if (c < r) {
        if (ceil)
            return -EINVAL;
        c = r; /* raising the rate above the ceil raises the ceil */
    }
    bucket_fill(&k->rate, now);
    bucket_fill(&k->ceil, now);
    k->rate.rate = r;
    k->ceil.rate = c;
    k->c[SHP_C_RATE] = r;
    k->c[SHP_C_CEIL] = c;
    return 0;
}

int shp_class_find(const struct shp *s, const char *name)
{
    for (uint32_t c = 0; c < s->nclasses; c++)
        if (strncmp(s->cls[c].name, name, SHP_NAME_MAX) == 0)
            return (int)c;
    return -1;
}

/* ---- queues ---- */

static void drop_flush(struct shp *s)
{
    if (s->ndrop) {
        ipc_pool_free(s->pool, s->drop, s->ndrop);
        s->ndrop = 0;
    }
}

/* @why: the counter's name, for `ringrouter capture PORT drop` and `ringrouter trace`. */
static void drop_buf(struct shp *s, ipc_buf b, const char *why)
{
    if (ipc_cap_on(IPC_CAP_DROP | IPC_CAP_TRACE))
        ipc_cap_drop(s->pool, b, ipc_cap_.port, why);
    if (s->ndrop == SHP_DROP_BATCH)
        drop_flush(s);
    s->drop[s->ndrop++] = b;
}

static void flow_push(struct shp *s, struct shp_flow *f, ipc_buf b, uint64_t wire)
{
    struct ipc_meta *m = ipc_pool_meta(s->pool, b);
    m->user[1] = SHP_NONE;
    if (f->tail == SHP_NONE)
        f->head = b;
    else
        ipc_pool_meta(s->pool, f->tail)->user[1] = b;
    f->tail = b;
    f->pkts++;
    f->bytes += wire;
    struct shp_class *k = &s->cls[f->cls];
    k->pkts++;
    k->bytes += wire;
    s->pkts++;
    s->bytes += wire;
}

static ipc_buf flow_pop(struct shp *s, struct shp_flow *f)
{
    ipc_buf b = f->head;
    if (b == SHP_NONE)
        return b;
    struct ipc_meta *m = ipc_pool_meta(s->pool, b);
    f->head = (uint32_t)m->user[1];
    if (f->head == SHP_NONE)
        f->tail = SHP_NONE;
    uint64_t wire = m->user[2];
    f->pkts--;
    f->bytes -= wire;
    struct shp_class *k = &s->cls[f->cls];
    k->pkts--;
    k->bytes -= wire;
    s->pkts--;
    s->bytes -= wire;
    return b;
}

static void list_push(struct shp *s, uint32_t *head, uint32_t *tail, uint32_t fi)
{
    s->flow[fi].next = SHP_NONE;
    if (*tail == SHP_NONE)
        *head = fi;
    else
        s->flow[*tail].next = fi;
    *tail = fi;
}

static uint32_t list_pop(struct shp *s, uint32_t *head, uint32_t *tail)
{
    uint32_t fi = *head;
    *head = s->flow[fi].next;
    if (*head == SHP_NONE)
        *tail = SHP_NONE;
    s->flow[fi].next = SHP_NONE;
    return fi;
}

/* A flow that was idle joins the new list with a fresh quantum. */
static void activate(struct shp *s, uint32_t fi)
{
    struct shp_flow *f = &s->flow[fi];
    if (f->active)
        return;
    struct shp_class *k = &s->cls[f->cls];
    f->active = true;
    f->deficit = s->quantum;
    k->nactive++;
    list_push(s, &k->new_head, &k->new_tail, fi);
}

/* Overflow: drop from the head of the fattest flow. */
static void drop_fattest(struct shp *s)
{
    uint32_t best = SHP_NONE;
    uint64_t most = 0;
    for (uint32_t i = 0; i < s->nclasses * SHP_FLOWS; i++)
        if (s->flow[i].bytes > most) {
            most = s->flow[i].bytes;
            best = i;
        }
    if (best == SHP_NONE)
        return;
    ipc_buf b = flow_pop(s, &s->flow[best]);
    drop_buf(s, b, shp_pctr_names[SHP_P_OVERFLOW_DROPS]);
    s->cls[s->flow[best].cls].c[SHP_C_DROPS]++;
    s->p[SHP_P_OVERFLOW_DROPS]++;
}

void shp_enqueue(struct shp *s, const ipc_buf *bufs, uint32_t n, uint64_t now)
{
    for (uint32_t i = 0; i < n; i++) {
        ipc_buf b = bufs[i];
        struct ipc_meta *m = ipc_pool_meta(s->pool, b);
        struct shp_pkt pk;
        shp_parse(ipc_pool_data(s->pool, b), m->len, &pk);
        pk.mark = m->mark; /* before the mark becomes the flow index below */
        uint32_t c = shp_classify(s, &pk);
        uint32_t fi = shp_flow_of(&pk, c);
        uint64_t wire = shp_wire_bytes(s, m, &pk);
        m->user[0] = now;
        m->user[2] = wire;
        m->mark = fi;
        if (wire > s->maxpacket)
            s->maxpacket = wire > UINT32_MAX ? UINT32_MAX : (uint32_t)wire;
        flow_push(s, &s->flow[fi], b, wire);
        activate(s, fi);
        s->p[SHP_P_ENQ_PKTS]++;
        while (s->pkts > s->limit_pkts || s->bytes > s->limit_bytes)
            drop_fattest(s);
    }
    drop_flush(s);
}

/* ---- CoDel (RFC 8289), per flow, on dequeue ---- */

static uint64_t isqrt64(uint64_t x)
{
    uint64_t r = 0, bit = 1ull << 62;
    while (bit > x)
        bit >>= 2;
    while (bit) {
        if (x >= r + bit) {
            x -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

static uint64_t control_law(const struct shp *s, uint64_t t, uint32_t count)
{
    /* interval / sqrt(count) = interval * 2^16 / sqrt(count * 2^32) */
    uint64_t q = isqrt64((uint64_t)count << 32);
    return t + (s->interval_ns << 16) / (q ? q : 1);
}

static bool should_drop(struct shp *s, struct shp_flow *f, ipc_buf b, uint64_t now)
{
    struct ipc_meta *m = ipc_pool_meta(s->pool, b);
    uint64_t sojourn = now > m->user[0] ? now - m->user[0] : 0;
    /* f->bytes no longer counts b: what is left behind it */
    /* The target is at least 1.5 times a DRR round of the largest packets
     * (CAKE raises it to 1.5 MTU times): a 64 KB GSO packet alone is 5 ms on
     * the wire at 100 Mbit/s, and with N flows backlogged a packet waits N of
     * them before its turn; no AQM can make that shorter. At most the interval. */
    uint64_t target = s->target_ns;
    if (s->port.rate) {
        uint32_t n = s->cls[f->cls].nactive ? s->cls[f->cls].nactive : 1;
        uint64_t tx = (uint64_t)s->maxpacket * 8u * 1500000000ull / s->port.rate * n;
        if (tx > s->interval_ns)
            tx = s->interval_ns;
        if (tx > target)
            target = tx;
    }
    if (sojourn < target || f->bytes + m->user[2] <= s->maxpacket) {
        f->codel.first_above = 0;
        return false;
    }
    if (f->codel.first_above == 0) {
        f->codel.first_above = now + s->interval_ns;
        return false;
    }
    return now >= f->codel.first_above;
}

/* CoDel's verdict on @b: true: mark it and send it; false: it was dropped. */
static bool drop_or_mark(struct shp *s, struct shp_flow *f, ipc_buf b)
{
    struct shp_class *k = &s->cls[f->cls];
    if (s->ecn) {
        struct ipc_meta *m = ipc_pool_meta(s->pool, b);
        struct shp_pkt pk;
        uint8_t *d = ipc_pool_data(s->pool, b);
        shp_parse(d, m->len, &pk);
        if ((pk.ipv4 && shp_ecn_mark(d + pk.l3off)) || (pk.ipv6 && shp_ecn_mark6(d + pk.l3off))) {
            k->c[SHP_C_MARKS]++;
            s->p[SHP_P_MARKS]++;
            return true;
        }
    }
    drop_buf(s, b, shp_pctr_names[SHP_P_CODEL_DROPS]);
    k->c[SHP_C_DROPS]++;
    s->p[SHP_P_CODEL_DROPS]++;
    return false;
}

static ipc_buf codel_dequeue(struct shp *s, struct shp_flow *f, uint64_t now)
{
    struct shp_codel *cd = &f->codel;
    ipc_buf b = flow_pop(s, f);
    if (b == SHP_NONE) {
        cd->dropping = false;
        return b;
    }
    bool ok = should_drop(s, f, b, now);
    if (cd->dropping) {
        if (!ok) {
            cd->dropping = false;
        } else {
            while (now >= cd->drop_next && cd->dropping) {
                cd->count++;
                if (drop_or_mark(s, f, b)) {
                    cd->drop_next = control_law(s, cd->drop_next, cd->count);
                    return b;
                }
                b = flow_pop(s, f);
                if (b == SHP_NONE) {
                    cd->dropping = false;
                    return b;
                }
                if (!should_drop(s, f, b, now))
                    cd->dropping = false;
                else
                    cd->drop_next = control_law(s, cd->drop_next, cd->count);
            }
        }
    } else if (ok) {
        bool marked = drop_or_mark(s, f, b);
        cd->dropping = true;
        uint32_t delta = cd->count - cd->lastcount;
        cd->count = (delta > 1 && now - cd->drop_next < 16 * s->interval_ns) ? delta : 1;
        cd->drop_next = control_law(s, now, cd->count);
        cd->lastcount = cd->count;
        if (!marked) {
            b = flow_pop(s, f);
            if (b != SHP_NONE)
                (void)should_drop(s, f, b, now); /* keeps first_above current */
        }
    }
    return b;
}

/* ---- scheduling ---- */

/*
 * A class's next packet: DRR over its active flows, the new list (flows that
 * were idle) before the old one, as fq_codel does; SHP_NONE when it has none.
 */
static ipc_buf class_dequeue(struct shp *s, struct shp_class *k, uint64_t now)
{
    for (;;) {
        bool from_new = k->new_head != SHP_NONE;
        uint32_t *head = from_new ? &k->new_head : &k->act_head;
        uint32_t *tail = from_new ? &k->new_tail : &k->act_tail;
        if (*head == SHP_NONE)
            return SHP_NONE;
        uint32_t fi = *head;
        struct shp_flow *f = &s->flow[fi];
        if (f->deficit <= 0) { /* its quantum is spent: to the back of the old list with a new one */
            f->deficit += s->quantum;
            list_pop(s, head, tail);
            list_push(s, &k->act_head, &k->act_tail, fi);
            continue;
        }
        ipc_buf b = codel_dequeue(s, f, now);
        if (b == SHP_NONE) {
            list_pop(s, head, tail);
            if (from_new && k->act_head != SHP_NONE) {
                /* an emptied new flow goes to the old list once, so that a
                 * stream of new flows cannot starve the old ones */
                list_push(s, &k->act_head, &k->act_tail, fi);
            } else {
                f->active = false;
                k->nactive--;
            }
            continue;
        }
        f->deficit -= (int64_t)ipc_pool_meta(s->pool, b)->user[2];
        return b;
    }
}

/* Pick the class to serve: under its rate first (round robin), else borrowing, lowest prio first. */
static int pick_class(struct shp *s, bool *green)
{
    int best = -1;
    for (uint32_t j = 0; j < s->nclasses; j++) {
        uint32_t c = (s->rr + j) % s->nclasses;
        struct shp_class *k = &s->cls[c];
        if (k->pkts && k->rate.tok >= 0 && k->ceil.tok >= 0) {
            *green = true;
            return (int)c;
        }
    }
    for (uint32_t j = 0; j < s->nclasses; j++) {
        uint32_t c = (s->rr + j) % s->nclasses;
        struct shp_class *k = &s->cls[c];
        if (k->pkts && k->ceil.tok >= 0 && (best < 0 || k->prio < s->cls[best].prio))
            best = (int)c;
    }
    *green = false;
    return best;
}

static void fill_all(struct shp *s, uint64_t now)
{
    bucket_fill(&s->port, now);
    for (uint32_t c = 0; c < s->nclasses; c++) {
        bucket_fill(&s->cls[c].rate, now);
        bucket_fill(&s->cls[c].ceil, now);
    }
}

uint32_t shp_dequeue(struct shp *s, uint64_t now, ipc_buf *out, uint32_t max)
{
    uint32_t n = 0;
    fill_all(s, now);
    while (n < max && s->pkts && s->port.tok >= 0) {
        bool green;
        int c = pick_class(s, &green);
        if (c < 0)
            break;
        struct shp_class *k = &s->cls[c];
        ipc_buf b = class_dequeue(s, k, now);
        if (b == SHP_NONE)
            continue; /* CoDel dropped what the class had: look again */
        uint64_t wire = ipc_pool_meta(s->pool, b)->user[2];
        bucket_charge(&s->port, wire);
        bucket_charge(&k->ceil, wire);
        if (green)
            bucket_charge(&k->rate, wire);
        s->rr = ((uint32_t)c + 1) % s->nclasses;
        k->c[SHP_C_TX_PKTS]++;
        k->c[SHP_C_TX_BYTES] += wire;
        k->win_bytes += wire;
        s->p[SHP_P_TX_PKTS]++;
        s->p[SHP_P_TX_BYTES] += wire;
        out[n++] = b;
    }
    drop_flush(s);
    for (uint32_t c = 0; c < s->nclasses; c++) {
        struct shp_class *k = &s->cls[c];
        k->c[SHP_C_BACKLOG] = k->pkts;
        if (now - k->win_start >= (uint64_t)NS) {
            k->c[SHP_C_BPS] = k->win_bytes * 8u * (uint64_t)NS / (now - k->win_start);
            k->win_bytes = 0;
            k->win_start = now;
        }
    }
    s->p[SHP_P_BACKLOG] = s->pkts;
    s->p[SHP_P_BACKLOG_BYTES] = s->bytes;
    return n;
}

uint64_t shp_next_ns(struct shp *s, uint64_t now)
{
    if (s->pkts == 0)
        return UINT64_MAX;
    fill_all(s, now);
    uint64_t cls_ready = UINT64_MAX;
    for (uint32_t c = 0; c < s->nclasses; c++) {
        struct shp_class *k = &s->cls[c];
        if (!k->pkts)
            continue;
        uint64_t r = bucket_ready(&k->ceil); /* a class may send (borrowing) once its ceil allows */
        if (r < cls_ready)
            cls_ready = r;
    }
    uint64_t t = bucket_ready(&s->port);
    if (cls_ready > t)
        t = cls_ready;
    return t < now ? now : t;
}

void shp_purge(struct shp *s)
{
    for (uint32_t i = 0; i < SHP_NFLOWS; i++) {
        struct shp_flow *f = &s->flow[i];
        ipc_buf b;
        while ((b = flow_pop(s, f)) != SHP_NONE)
            drop_buf(s, b, "shaper_purge");
        uint8_t c = f->cls;
        flow_reset(f, c);
    }
    for (uint32_t c = 0; c < s->nclasses; c++) {
        s->cls[c].act_head = s->cls[c].act_tail = SHP_NONE;
        s->cls[c].new_head = s->cls[c].new_tail = SHP_NONE;
        s->cls[c].nactive = 0;
    }
    drop_flush(s);
}

uint32_t shp_drain(struct shp *s, ipc_buf *out, uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < SHP_NFLOWS && n < max; i++) {
        struct shp_flow *f = &s->flow[i];
        ipc_buf b;
        while (n < max && (b = flow_pop(s, f)) != SHP_NONE)
            out[n++] = b;
    }
    if (s->pkts == 0) /* every list now holds only empty flows: forget them */
        for (uint32_t c = 0; c < s->nclasses; c++) {
            struct shp_class *k = &s->cls[c];
            k->act_head = k->act_tail = k->new_head = k->new_tail = SHP_NONE;
            k->nactive = 0;
            for (uint32_t j = 0; j < SHP_FLOWS; j++) {
                struct shp_flow *f = &s->flow[c * SHP_FLOWS + j];
                f->active = false;
                f->next = SHP_NONE;
            }
        }
    return n;
}
