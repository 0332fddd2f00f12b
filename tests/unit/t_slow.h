/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/t_slow.h: what the FIB tests share beside their tables: T_SLOW,
 * 1 under a sanitizer (the big tables' tests then take fewer rounds), and
 * the xorshift source each draws its random prefixes from.
 */
#ifndef T_SLOW_H
#define T_SLOW_H

#include <stdint.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define T_SLOW 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define T_SLOW 1
#endif
#endif
#ifndef T_SLOW
#define T_SLOW 0
#endif

static inline uint64_t t_rand64(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#endif
