/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest_routes.c: the [routes] section's values (a kernel
 * table by number or by name, FPM's listening address) and its checks.
 * Whether the control namespace exists is the machine's business, seen at
 * `up` with the key's line (supervisor/routes_setup.c).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/manifest_impl.h"

/* The tables iproute2 knows by name: its files, then the names it builds in. */
static bool rt_table_named(const char *name, uint32_t *out)
{
    static const char *const files[] = {"/etc/iproute2/rt_tables", "/usr/share/iproute2/rt_tables",
                                        "/usr/lib/iproute2/rt_tables"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        FILE *f = fopen(files[i], "re");
        if (!f)
            continue;
        char line[256];
        bool found = false;
        while (!found && fgets(line, sizeof(line), f)) {
            char word[128];
            unsigned long id;
            if (line[0] == '#' || sscanf(line, "%lu %127s", &id, word) != 2)
                continue;
            if (strcmp(word, name) == 0 && id > 0 && id <= UINT32_MAX) {
                *out = (uint32_t)id;
                found = true;
            }
        }
        fclose(f);
        if (found)
            return true;
    }
    static const struct {
        const char *n;
        uint32_t id;
    } builtin[] = {{"main", 254}, {"default", 253}};
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
        if (strcmp(name, builtin[i].n) == 0) {
            *out = builtin[i].id;
            return true;
        }
    return false;
}

int sup_p_rt_table(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    uint32_t id = 0;
    if (isdigit((unsigned char)v[0])) {
        char *end;
        errno = 0;
        unsigned long n = strtoul(v, &end, 10);
        if (*end || errno || n == 0 || n > UINT32_MAX)
            return sup_vfail(pc, k, "\"%s\" is not a routing table: expected 1 to 4294967295 or a name of "
                                    "/etc/iproute2/rt_tables", v);
        id = (uint32_t)n;
    } else if (!rt_table_named(v, &id)) {
        return sup_vfail(pc, k, "no routing table \"%s\": not a number, and not a name in /etc/iproute2/rt_tables "
                                "(add a line \"100 %s\" there, or give its number)", v, v);
    }
    if (id == 255) /* RT_TABLE_LOCAL */
        return sup_vfail(pc, k, "%s is the kernel's local table (the namespace's own addresses): name the table "
                                "the daemon writes to", v);
    memcpy(dst, &id, sizeof(id));
    return 0;
}

/* "ADDRESS:PORT", or "[IPv6]:PORT". */
int sup_p_fpm_addr(struct sup_pctx *pc, const struct sup_key *k, const char *v, void *dst)
{
    struct sup_routes *r = &pc->m->daemon;
    (void)dst;
    char host[64];
    const char *colon = strrchr(v, ':');
    size_t hl = colon ? (size_t)(colon - v) : 0;
    if (!colon || hl == 0 || hl >= sizeof(host))
        return sup_vfail(pc, k, "\"%s\" is not ADDRESS:PORT (such as 127.0.0.1:2620, or [::1]:2620)", v);
    memcpy(host, v, hl);
    host[hl] = '\0';
    char *h = host;
    if (h[0] == '[' && hl > 2 && h[hl - 1] == ']') {
        h[hl - 1] = '\0';
        h++;
        r->fpm_v6 = true;
    }
    char *end;
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || port == 0 || port > 65535)
        return sup_vfail(pc, k, "\"%s\": the port must be 1 to 65535", v);
    if (inet_pton(r->fpm_v6 ? AF_INET6 : AF_INET, h, r->fpm_addr) != 1)
        return sup_vfail(pc, k, "\"%s\": \"%s\" is not an IP%s address", v, h, r->fpm_v6 ? "v6" : "v4");
    r->fpm = true;
    r->fpm_port = (uint16_t)port;
    return 0;
}

int sup_check_routes(struct sup_pctx *pc)
{
    const struct sup_routes *r = &pc->m->daemon;
    if (!r->src.line)
        return 0;
    if (!r->table && !r->fpm)
        return sup_fail(pc, r->src.line, r->src.section, NULL,
                        "no source: set table (a kernel table to follow) or fpm (ADDRESS:PORT for FRR's FPM), or both");
    return 0;
}
