/* SPDX-License-Identifier: MIT */
/*
 * services/routes/rn.c: rtnetlink route messages to route records
 * (services/routes/rn.h). libmnl walks the messages and attributes; every
 * length is checked against what encloses it before anything is read, and
 * a message must be consistent whole (its attributes fill it exactly, each
 * of the size its type has) before it emits a record.
 */
#include "services/routes/rn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>

const char *const rn_ctr_names[RN_NCTR] = {
    [RN_MSGS] = "nl_route_msgs",         [RN_ADDS] = "nl_adds",
    [RN_DELS] = "nl_dels",               [RN_OTHER_TABLE] = "nl_other_table",
    [RN_OWN_ORIGIN] = "nl_own_origin",   [RN_NOT_UNICAST] = "nl_not_unicast",
    [RN_UNSUPPORTED] = "nl_unsupported", [RN_MALFORMED] = "nl_malformed",
};

/* The attributes of one route message we use, checked. */
struct rn_attrs {
    const struct nlattr *dst, *gw, *oif, *table, *mp, *nhid, *via;
};

/* Each attribute in [@base, @base + @len), as libmnl's
 * mnl_attr_for_each_payload walks them, with the types spelt out. */
#define RN_EACH_ATTR(a, base, len)                                                                                  \
    for (const struct nlattr *a = (const struct nlattr *)(base);                                                   \
         mnl_attr_ok(a, (int)((const char *)(base) + (len) - (const char *)a)); a = mnl_attr_next(a))

/* Walk the attributes in [@p, @p + @len): each whole, and nothing left over
 * but alignment. False: malformed. */
static bool rn_attrs_ok(const void *p, size_t len)
{
    const struct nlattr *a = p;
    int left = (int)len;
    while (left >= (int)sizeof(struct nlattr)) {
        if (!mnl_attr_ok(a, left))
            return false;
        int step = (int)MNL_ALIGN(a->nla_len);
        if (step > left)
            step = left; /* the last attribute's padding may be cut */
        left -= step;
        a = (const struct nlattr *)((const char *)a + step);
    }
    return left == 0;
}

static bool rn_size_is(const struct nlattr *a, size_t want)
{
    return !a || mnl_attr_get_payload_len(a) == want;
}

/* The route message's attributes, each of its type's size. */
static bool rn_collect(const struct nlmsghdr *nlh, const struct rtmsg *rtm, struct rn_attrs *at)
{
    size_t off = MNL_ALIGN(sizeof(struct rtmsg));
    size_t plen = mnl_nlmsg_get_payload_len(nlh);
    if (plen < off)
        return false;
    const char *p = (const char *)mnl_nlmsg_get_payload(nlh) + off;
    if (!rn_attrs_ok(p, plen - off))
        return false;
    memset(at, 0, sizeof(*at));
    RN_EACH_ATTR(a, p, plen - off) {
        switch (mnl_attr_get_type(a)) {
        case RTA_DST: at->dst = a; break;
        case RTA_GATEWAY: at->gw = a; break;
        case RTA_OIF: at->oif = a; break;
        case RTA_TABLE: at->table = a; break;
        case RTA_MULTIPATH: at->mp = a; break;
        case RTA_NH_ID: at->nhid = a; break;
        case RTA_VIA: at->via = a; break;
        default: break;
        }
    }
    size_t alen = rtm->rtm_family == AF_INET ? 4 : 16;
    return rn_size_is(at->dst, alen) && rn_size_is(at->gw, alen) && rn_size_is(at->oif, 4) &&
           rn_size_is(at->table, 4) && rn_size_is(at->nhid, 4);
}

/* RTA_MULTIPATH's next hops into @r. -1 malformed, 0 unsupported, 1 done. */
static int rn_multipath(const struct nlattr *mp, size_t alen, struct rtc_rec *r)
{
    const char *p = mnl_attr_get_payload(mp);
    int left = (int)mnl_attr_get_payload_len(mp);
    while (left > 0) {
        const struct rtnexthop *nh = (const struct rtnexthop *)p;
        if (left < (int)sizeof(*nh) || nh->rtnh_len < sizeof(*nh) || nh->rtnh_len > left)
            return -1;
        size_t inner = nh->rtnh_len - RTNH_ALIGN(sizeof(*nh));
        if (nh->rtnh_len < RTNH_ALIGN(sizeof(*nh)) || !rn_attrs_ok(RTNH_DATA(nh), inner))
            return -1;
        if (r->nnh >= RTC_NH_MAX)
            return 0;
        struct rtc_nh *o = &r->nh[r->nnh++];
        o->ifindex = (uint32_t)nh->rtnh_ifindex;
        o->weight = (uint8_t)(nh->rtnh_hops + 1u > 255u ? 255u : nh->rtnh_hops + 1u);
        RN_EACH_ATTR(a, RTNH_DATA(nh), inner) {
            uint16_t t = mnl_attr_get_type(a);
            if (t == RTA_GATEWAY) {
                if (mnl_attr_get_payload_len(a) != alen)
                    return -1;
                memcpy(o->gw, mnl_attr_get_payload(a), alen);
            } else if (t == RTA_VIA) {
                return 0;
            }
        }
        int step = (int)RTNH_ALIGN(nh->rtnh_len);
        if (step > left)
            step = left;
        left -= step;
        p += step;
    }
    return r->nnh ? 1 : -1;
}

enum { RN_SKIP, RN_EMIT, RN_BAD };

/* A whole message at @nlh within @left bytes. libmnl's mnl_nlmsg_ok
 * compares (int)nlmsg_len, so a length past 2^31 passes it and
 * mnl_nlmsg_next then steps 4 GB away (found by tests/fuzz/fuzz_routes.c):
 * the length is compared unsigned here. */
static bool rn_msg_ok(const struct nlmsghdr *nlh, int left)
{
    return left >= (int)sizeof(*nlh) && nlh->nlmsg_len >= sizeof(*nlh) && nlh->nlmsg_len <= (uint32_t)left;
}

/* One RTM_NEWROUTE / RTM_DELROUTE into @r. */
static int rn_route(struct rn_parser *ps, const struct nlmsghdr *nlh, struct rtc_rec *r)
{
    if (mnl_nlmsg_get_payload_len(nlh) < sizeof(struct rtmsg))
        return RN_BAD;
    const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
    if (rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6)
        return RN_SKIP; /* MPLS, ...: not ours */
    unsigned maxlen = rtm->rtm_family == AF_INET ? 32 : 128;
    size_t alen = rtm->rtm_family == AF_INET ? 4 : 16;
    struct rn_attrs at;
    if (rtm->rtm_dst_len > maxlen || !rn_collect(nlh, rtm, &at))
        return RN_BAD;
    uint32_t table = at.table ? mnl_attr_get_u32(at.table) : rtm->rtm_table;
    ps->ctr[RN_MSGS]++;
    if (ps->table && table != ps->table) {
        ps->ctr[RN_OTHER_TABLE]++;
        return RN_SKIP;
    }
    memset(r, 0, sizeof(*r));
    r->family = rtm->rtm_family;
    r->plen = rtm->rtm_dst_len;
    r->proto = rtm->rtm_protocol;
    r->src = ps->src;
    if (at.dst)
        memcpy(r->dst, mnl_attr_get_payload(at.dst), alen);
    if (nlh->nlmsg_type == RTM_DELROUTE) {
        r->op = RTC_DEL;
        return RN_EMIT;
    }
    if (rtm->rtm_protocol == RTPROT_KERNEL) {
        ps->ctr[RN_OWN_ORIGIN]++;
        return RN_SKIP;
    }
    if (rtm->rtm_type != RTN_UNICAST) {
        ps->ctr[RN_NOT_UNICAST]++;
        return RN_SKIP;
    }
    if (at.nhid || at.via) {
        ps->ctr[RN_UNSUPPORTED]++;
        return RN_SKIP;
    }
    r->op = RTC_ADD;
    if (at.mp) {
        int m = rn_multipath(at.mp, alen, r);
        if (m < 0)
            return RN_BAD;
        if (m == 0) {
            ps->ctr[RN_UNSUPPORTED]++;
            return RN_SKIP;
        }
        return RN_EMIT;
    }
    r->nnh = 1;
    r->nh[0].weight = 1;
    if (at.gw)
        memcpy(r->nh[0].gw, mnl_attr_get_payload(at.gw), alen);
    if (at.oif)
        r->nh[0].ifindex = mnl_attr_get_u32(at.oif);
    return RN_EMIT;
}

unsigned rn_parse(struct rn_parser *p, const void *buf, size_t len, rn_emit_fn emit, void *arg, size_t *used)
{
    /* Netlink's headers are read in place, which needs them 4-byte
     * aligned; an FPM frame can start anywhere in its stream (its length
     * is the peer's to choose), so a misaligned one is parsed from a copy. */
    static _Alignas(8) uint8_t aligned[RN_ALIGNED_MAX];
    if ((uintptr_t)buf & 3) {
        if (len > sizeof(aligned))
            len = sizeof(aligned); /* the rest on the next call: *used says where */
        memcpy(aligned, buf, len);
        buf = aligned;
    }
    unsigned flags = 0;
    const struct nlmsghdr *nlh = buf;
    int left = len > INT32_MAX ? INT32_MAX : (int)len;
    const char *start = buf;
    if (used)
        *used = len;
    while (left > 0) {
        if (!rn_msg_ok(nlh, left)) {
            p->ctr[RN_MALFORMED]++;
            return flags | RN_F_BAD; /* a truncated tail: the rest cannot be framed */
        }
        if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
            flags |= RN_F_INTR;
        switch (nlh->nlmsg_type) {
        case NLMSG_DONE:
            flags |= RN_F_DONE;
            break;
        case NLMSG_ERROR:
            p->ctr[RN_MALFORMED]++;
            flags |= RN_F_BAD;
            break;
        case RTM_NEWROUTE:
        case RTM_DELROUTE: {
            struct rtc_rec r;
            int k = rn_route(p, nlh, &r);
            if (k == RN_BAD) {
                p->ctr[RN_MALFORMED]++;
                flags |= RN_F_BAD;
            } else if (k == RN_EMIT) {
                if (emit(arg, &r) < 0) {
                    if (used)
                        *used = (size_t)((const char *)nlh - start);
                    p->ctr[RN_MSGS]--; /* read again later */
                    return flags;
                }
                p->ctr[r.op == RTC_ADD ? RN_ADDS : RN_DELS]++;
            }
            break;
        }
        default:
            break; /* NLMSG_NOOP, other families' messages */
        }
        nlh = mnl_nlmsg_next(nlh, &left);
    }
    return flags;
}
