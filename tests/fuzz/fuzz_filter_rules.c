/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_filter_rules.c: libFuzzer target over the filter's rule
 * language (flt_rules_compile): any input is either compiled or refused
 * with a message naming a line and column; a compiled ruleset is then run
 * over a few fixed packets at every hook and freed.
 */
#include "services/filter/flt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct flt_port ports[2];
    memset(ports, 0, sizeof ports);
    strcpy(ports[0].name, "lan");
    ports[0].has_v4 = 1;
    strcpy(ports[1].name, "wan");
    char err[256];
    struct flt_rules *r = flt_rules_compile((const char *)data, size, ports, 2, err, sizeof err);
    if (!r) {
        if (strncmp(err, "line ", 5) != 0)
            abort(); /* every refusal says where */
        return 0;
    }
    struct flt_parsed pp = { .family = 4, .proto = 6, .tcpflags = 2 };
    pp.t.src[10] = pp.t.src[11] = pp.t.dst[10] = pp.t.dst[11] = 0xff;
    pp.t.src[12] = 10;
    pp.t.dst[12] = 192;
    pp.t.sport = 1234;
    pp.t.dport = 80;
    for (int h = 0; h < FLT_NHOOKS; h++) {
        for (uint8_t st = 1; st <= FLT_CT_UNTRACKED; st <<= 1) {
            struct eval_in in = { .pp = &pp, .iif = 0, .oif = 1, .ctstate = st, .nat_ok = true, .bytes = 60,
                                  .now = st };
            int k = flt_eval(r, (enum flt_hook)h, &in);
            if (k >= (int)flt_rules_count(r, (enum flt_hook)h))
                abort();
        }
    }
    flt_rules_free(r);
    return 0;
}
