/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_running_text.c: the line editor under `show running`,
 * `addr` and `link set` (supervisor/running_text.c): lines dropped, lines
 * added after a given one (in their order, after a dropped one: in its
 * place), a section's end and a section dropped whole, and what is not
 * touched kept byte for byte, comments and blank lines included.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "supervisor/running.h"

#define M                                                                                                        \
    "# edge\n"               /* 1 */                                                                              \
    "[port a]\n"             /* 2 */                                                                              \
    "driver = tap\n"         /* 3 */                                                                              \
    "address = 10.1.0.1/24\n" /* 4 */                                                                             \
    "\n"                     /* 5 */                                                                              \
    "[route 10.9.0.0/16]\n"  /* 6 */                                                                              \
    "via = 10.1.0.2\n"       /* 7 */                                                                              \
    "\n"                     /* 8 */                                                                              \
    "  [neigh 10.1.0.9]\n"   /* 9 */                                                                              \
    "mac = 02:00:00:00:00:09\n" /* 10 */

static char *edit(void (*fn)(struct run_text *))
{
    struct run_text t;
    assert_int_equal(sup_text_split(&t, M), 0);
    assert_int_equal(t.n, 10);
    fn(&t);
    char *out = sup_text_join(&t);
    assert_non_null(out);
    sup_text_free(&t);
    return out;
}

static void none(struct run_text *t)
{
    (void)t;
}

static void replace_key(struct run_text *t)
{
    sup_text_drop(t, 4);
    assert_int_equal(sup_text_add(t, 4, "address = %s", "10.1.0.1/25"), 0);
    assert_int_equal(sup_text_add(t, 2, "mtu = %u", 1400u), 0);
    assert_int_equal(sup_text_add(t, 2, "address6 = 2001:db8::1/64"), 0);
}

static void sections(struct run_text *t)
{
    assert_int_equal(sup_text_section_end(t, 2), 5);
    assert_int_equal(sup_text_section_end(t, 6), 8);
    assert_int_equal(sup_text_section_end(t, 9), 10); /* a header after blanks, and the last section */
    sup_text_drop_section(t, 6);
    sup_text_drop_section(t, 0); /* no section: nothing */
    assert_int_equal(sup_text_add(t, (unsigned)t->n, "\n[route 10.8.0.0/16]\nvia = 10.1.0.3"), 0);
    assert_int_equal(sup_text_add(t, 0, "# show running"), 0);
    sup_text_drop(t, 11); /* past the end: nothing */
}

static void test_running_text(void **state)
{
    (void)state;
    char *out = edit(none);
    assert_string_equal(out, M);
    free(out);
    out = edit(replace_key);
    assert_string_equal(out, "# edge\n[port a]\nmtu = 1400\naddress6 = 2001:db8::1/64\ndriver = tap\n"
                             "address = 10.1.0.1/25\n\n[route 10.9.0.0/16]\nvia = 10.1.0.2\n\n"
                             "  [neigh 10.1.0.9]\nmac = 02:00:00:00:00:09\n");
    free(out);
    out = edit(sections);
    assert_string_equal(out, "# show running\n# edge\n[port a]\ndriver = tap\naddress = 10.1.0.1/24\n\n"
                             "  [neigh 10.1.0.9]\nmac = 02:00:00:00:00:09\n\n[route 10.8.0.0/16]\nvia = 10.1.0.3\n");
    free(out);
    /* A text without a last newline gets one; an empty text stays empty. */
    struct run_text t;
    assert_int_equal(sup_text_split(&t, "[port a]\ndriver = tap"), 0);
    assert_int_equal(t.n, 2);
    out = sup_text_join(&t);
    assert_string_equal(out, "[port a]\ndriver = tap\n");
    free(out);
    sup_text_free(&t);
    assert_int_equal(sup_text_split(&t, ""), 0);
    out = sup_text_join(&t);
    assert_string_equal(out, "");
    free(out);
    sup_text_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_running_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
