/* SPDX-License-Identifier: MIT */
/*
 * supervisor/filter_manifest.c: the checks of [filter] that need the whole
 * manifest: what the filter's place on the path asks of the ports. The
 * ruleset itself is compiled against the ports by filter_check.c, at
 * `check` and `up` (it links the rule compiler; the manifest loader does not).
 *
 * The filter sits on the filtered ports' paths (docs/filter.md): their
 * drivers feed it, it feeds the router, and the router's packets for them,
 * and for any port the packets that came in by one of them, go through it
 * to the port's first driver. So:
 *   - its rings fit a service;
 *   - the ports share one pool (trust zones would need one filter each);
 *   - a shaped port's shaper comes after the filter's egress (Linux's
 *     forward and postrouting hooks, then the egress qdisc): the filter
 *     feeds it, and a class's `match = mark N` takes what a rule marked;
 *     without a [filter], such a match could never hold and is refused;
 *   - TAP ports take no offloads: the filter reads and rewrites whole
 *     frames with complete checksums, never a 64 KB GSO chain. Ports that
 *     do not name offloads get none; a port that asks for some is refused.
 *
 * Also here, for the same reason (no process around it, so a unit test
 * takes it alone): the supervisor's check of the connection table's header
 * (filter_setup.c calls it before each new instance of the filter).
 */
#include <string.h>

#include "ipc/svc.h"
#include "tables/shaper.h"
#include "tables/filter.h"
#include "supervisor/filter.h"
#include "supervisor/manifest_impl.h"

#define KLINE(o, key) ((o)->src.key_line[key])

int sup_p_filter_ports(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_filter_ports *fp = dst;
    memset(fp, 0, sizeof(*fp));
    const char *p = v;
    while (*p) {
        size_t skip = strspn(p, ", \t"), n = strcspn(p + skip, ", \t");
        p += skip;
        if (!n)
            break;
        bool good = n <= SUP_NAME_MAX;
        for (size_t i = 0; good && i < n; i++)
            good = sup_c_ident((unsigned char)p[i]);
        if (!good)
            return sup_vfail(pc, k, "\"%.*s\" is not a port name", (int)n, p);
        for (unsigned i = 0; i < fp->n; i++)
            if (strlen(fp->name[i]) == n && strncmp(fp->name[i], p, n) == 0)
                return sup_vfail(pc, k, "port %.*s named twice", (int)n, p);
        if (fp->n == SUP_PORTS_MAX)
            return sup_vfail(pc, k, "more than %d ports", SUP_PORTS_MAX);
        memcpy(fp->name[fp->n], p, n);
        fp->name[fp->n++][n] = 0;
        p += n;
    }
    if (!fp->n)
        return sup_vfail(pc, k, "expected port names, such as \"wan\" or \"wan, dmz\"");
    return 0;
}

int sup_check_filter(struct sup_pctx *pc)
{
    struct sup_manifest *m = pc->m;
    struct sup_filter *f = &m->filter;
    for (size_t i = 0; !f->src.line && i < m->nclasses; i++) /* only the filter's rules set a mark */
        if (m->classes[i].match.fields & SHP_MATCH_MARK)
            return sup_fail(pc, KLINE(&m->classes[i], SUP_CLASS_MATCH), m->classes[i].src.section, "match",
                            "mark: only a [filter] rule's `meta mark set` gives a packet one, and there is no "
                            "[filter]");
    if (!f->src.line)
        return 0;
    if (sup_missing(pc, &sup_sections[SUP_SEC_FILTER], &f->src))
        return pc->rc;
    f->port_mask = f->ports.n ? 0 : (uint32_t)((1ull << m->nports) - 1);
    for (unsigned i = 0; i < f->ports.n; i++) {
        int pi = sup_manifest_port(m, f->ports.name[i]);
        if (pi < 0)
            return sup_fail(pc, KLINE(f, SUP_FILTER_PORTS), f->src.section, "ports", "no port \"%s\"",
                            f->ports.name[i]);
        f->port_mask |= 1u << pi;
    }
    size_t rings = 0;
    for (size_t p = 0; p < m->nports; p++) {
        struct sup_port *pt = &m->ports[p];
        /* a filtered port: in by each queue, out by the first; any other: out only */
        rings += f->port_mask >> p & 1 ? (pt->queues ? pt->queues : 1) + 1 : 1; /* a TAP port's queues: 1 */
        if (pt->zone != 0)
            return sup_fail(pc, KLINE(pt, SUP_PORT_ZONE), pt->src.section, "zone",
                            "trust zones and [filter] (line %u): the filter takes one pool", f->src.line);
        if (pt->driver == SUP_DRIVER_TAP && pt->offloads) {
            if (KLINE(pt, SUP_PORT_OFFLOADS))
                return sup_fail(pc, KLINE(pt, SUP_PORT_OFFLOADS), pt->src.section, "offloads",
                                "with [filter] (line %u), none: the filter takes whole frames with their checksums",
                                f->src.line);
            pt->offloads = 0;
        }
    }
    if (rings > IPC_SVC_MAX_RINGS)
        return sup_fail(pc, f->src.line, f->src.section, NULL,
                        "%zu rings into the filter (each filtered port's queues plus one, one for any other port); "
                        "it takes at most %d", rings, IPC_SVC_MAX_RINGS);
    return 0;
}

const char *sup_filter_head_check(const void *head, size_t len, uint32_t entries, uint64_t size)
{
    struct tbl_flt_ct_head h;
    if (len < sizeof(h))
        return "the region is smaller than its header";
    memcpy(&h, head, sizeof(h)); /* one copy: the filter may be writing it */
    static const struct tbl_flt_ct_head zero;
    if (memcmp(&h, &zero, sizeof(h)) == 0)
        return NULL; /* never formatted */
    uint32_t nb = 1;
    while (nb < entries && nb < (1u << 30))
        nb <<= 1;
    if (h.magic != TBL_FLT_CT_MAGIC)
        return "bad magic";
    if (h.version != TBL_FLT_CT_VERSION || h.hdr_size != TBL_FLT_CT_HDR_SIZE)
        return "another version or header size";
    if (h.nentries != entries || h.nbuckets != nb)
        return "entries or buckets other than made";
    if (h.total_size != size)
        return "a size other than made";
    uint64_t off = ((uint64_t)TBL_FLT_CT_HDR_SIZE + (uint64_t)nb * 4 + 63) & ~(uint64_t)63;
    if (h.entry_size == 0 || off + (uint64_t)h.entry_size * entries != size)
        return "an entry size that does not fill the region";
    return NULL;
}
