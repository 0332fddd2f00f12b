/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/t_reader.h: for the FIB tests that race a reader thread
 * against the writer. The writer starts once the reader has looked up its
 * first batch: on a loaded machine a new thread can first run after all of
 * a test's updates are done, and the test then races nothing (a run beside
 * heavy tests failed so, with "0 lookups checked"). Include after
 * <cmocka.h>.
 */
#ifndef T_READER_H
#define T_READER_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/** Wait (10 s at most) until the reader has published a count of lookups. */
static inline void t_wait_reader(_Atomic uint64_t *checked)
{
    for (unsigned i = 0; i < 10000 && atomic_load(checked) == 0; i++)
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    assert_true(atomic_load(checked) > 0);
}

#endif
