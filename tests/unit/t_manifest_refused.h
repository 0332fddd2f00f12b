/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/t_manifest_refused.h: a table of manifests that must be
 * refused, each with the beginning of its error, and the check of it, for
 * the tests of one part of the manifest (VLAN ports, driver groups). The
 * includer brings cmocka and supervisor/manifest.h.
 */
#ifndef RR_TESTS_T_MANIFEST_REFUSED_H
#define RR_TESTS_T_MANIFEST_REFUSED_H

#include <errno.h>
#include <string.h>

struct t_bad {
    const char *text;
    const char *error; /* the message's beginning */
};

/* Every case refused with EINVAL and its message; each miss printed. */
static inline void t_manifest_refused(const struct t_bad *cases, size_t n)
{
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        struct sup_manifest m;
        struct sup_manifest_err err;
        int rc = sup_manifest_load_string("t.ini", cases[i].text, &m, &err);
        if (rc != -EINVAL || strncmp(err.msg, cases[i].error, strlen(cases[i].error)) != 0) {
            print_error("case %zu: rc %d\n  want: %s...\n  got:  %s\n", i, rc, cases[i].error, err.msg);
            failed++;
        }
        sup_manifest_free(&m);
    }
    assert_int_equal(failed, 0);
}

#endif
